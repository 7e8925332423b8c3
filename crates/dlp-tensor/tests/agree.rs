//! The tensor targets compute the same f and ∇f as the CPU models (f32 on the device vs f64 on
//! the host: within 1e-5, relative to the size of the value when it exceeds 1).

use dlp_core::TargetExt;
use dlp_core::{Batch, DomainKind, EvalError, Space, Target, setup_rng};
use dlp_models::{Couplings, PottsModel, Rbm};
use dlp_tensor::{Device, TensorPotts, TensorRbm};
mod common;

use common::{max_rel_diff, random_states, uniform};
use rand::RngExt;

const TOL: f64 = 1e-5;

/// f and ∇f of `xs` through the batch methods, `evaluate`, and one state at a time, against
/// the CPU model; returns the largest relative difference of f and of ∇f.
fn compare(cpu: &dyn Target, dev: &dyn Target, xs: &[u32]) -> (f64, f64) {
    let (d, gl) = (cpu.space().d, cpu.space().grad_len());
    let n = xs.len() / d;
    let (mut f0, mut g0) = (vec![0.0; n], vec![0.0; n * gl]);
    cpu.log_density_grad_batch(xs, &mut f0, &mut g0).unwrap();

    let (mut f1, mut g1) = (vec![0.0; n], vec![0.0; n * gl]);
    dev.log_density_grad_batch(xs, &mut f1, &mut g1).unwrap();
    let (mut f2, mut g2) = (vec![0.0; n], vec![0.0; n * gl]);
    dev.evaluate(xs, Batch::Full, &mut f2, Some(&mut g2)).expect("cpu evaluation succeeds");
    assert_eq!((&f1, &g1), (&f2, &g2), "evaluate and the batch method agree exactly");
    let mut f3 = vec![0.0; n];
    dev.log_density_batch(xs, &mut f3).unwrap();
    assert_eq!(f1, f3, "f without the gradient pass is the same");
    // One state at a time (the exact-kernel path).
    let mut g_one = vec![0.0; gl];
    for (r, x) in xs.chunks_exact(d).enumerate() {
        let f = dev.log_density_grad(x, &mut g_one).unwrap();
        assert!((f - f0[r]).abs() <= TOL * f0[r].abs().max(1.0), "row {r}: f {f} vs {}", f0[r]);
        assert!(max_rel_diff(&g_one, &g0[r * gl..(r + 1) * gl]) <= TOL, "row {r}: single-state gradient");
    }
    assert!(g1.iter().any(|&g| g != 0.0), "the gradient is not trivially zero");
    (max_rel_diff(&f1, &f0), max_rel_diff(&g1, &g0))
}

fn random_rbm(domain: DomainKind, d: usize, m: usize, seed: u64) -> Rbm {
    let mut rng = setup_rng(seed);
    let w = uniform(&mut rng, d * m, 1.5);
    let b = uniform(&mut rng, d, 1.0);
    let c = uniform(&mut rng, m, 1.0);
    Rbm::new(domain, d, m, w, b, c).unwrap()
}

fn check_rbm(domain: DomainKind) {
    for (seed, d, m) in [(1, 6, 4), (2, 20, 13), (3, 50, 30)] {
        let cpu = random_rbm(domain, d, m, seed);
        let dev = TensorRbm::from_rbm(&cpu, &Device::Cpu).unwrap();
        assert_eq!(dev.space(), cpu.space());
        let xs = random_states(seed + 100, 64, d, 2);
        let (df, dg) = compare(&cpu, &dev, &xs);
        println!("rbm {domain:?} d={d} M={m}: max rel diff f {df:.2e}, grad {dg:.2e}");
        assert!(df <= TOL && dg <= TOL, "{domain:?} d={d}: f {df:e}, grad {dg:e}");
    }
}

#[test]
fn tensor_rbm_binary_matches_the_cpu_rbm() {
    check_rbm(DomainKind::Binary);
}

#[test]
fn tensor_rbm_spin_matches_the_cpu_rbm() {
    check_rbm(DomainKind::Spin);
}

#[test]
fn tensor_rbm_softplus_is_stable_for_large_preactivations() {
    // |a| up to ~400: a naive log(1 + e^a) overflows f32 at a ≈ 88.
    let (d, m) = (8, 5);
    let mut rng = setup_rng(9);
    let w = uniform(&mut rng, d * m, 50.0);
    let cpu = Rbm::new(DomainKind::Spin, d, m, w, uniform(&mut rng, d, 1.0), uniform(&mut rng, m, 1.0)).unwrap();
    let dev = TensorRbm::from_rbm(&cpu, &Device::Cpu).unwrap();
    let xs = random_states(10, 32, d, 2);
    let (df, dg) = compare(&cpu, &dev, &xs);
    println!("rbm large: max rel diff f {df:.2e}, grad {dg:.2e}");
    assert!(df <= TOL && dg <= TOL, "f {df:e}, grad {dg:e}");
}

fn random_potts(d: usize, k: usize, sparse: bool, seed: u64) -> PottsModel {
    let mut rng = setup_rng(seed);
    let couplings = if sparse {
        // A ring plus a few random chords.
        let mut edges: Vec<(usize, usize, f64)> =
            (0..d).map(|i| (i.min((i + 1) % d), i.max((i + 1) % d), rng.random_range(-1.0..1.0))).collect();
        edges.push((0, d / 2, 0.7));
        edges.push((1, d - 2, -1.3));
        Couplings::from_edges(d, &edges).unwrap()
    } else {
        let mut j = vec![0.0; d * d];
        for r in 0..d {
            for c in r + 1..d {
                let w = rng.random_range(-1.0..1.0);
                j[r * d + c] = w;
                j[c * d + r] = w;
            }
        }
        Couplings::from_dense(d, &j).unwrap()
    };
    let h = uniform(&mut rng, d * k, 2.0);
    PottsModel::new(Space::categorical(d, k), couplings, h).unwrap()
}

#[test]
fn tensor_potts_matches_the_cpu_potts_k3() {
    for (seed, d, sparse) in [(1, 5, false), (2, 12, true), (3, 30, false), (4, 40, true)] {
        let cpu = random_potts(d, 3, sparse, seed);
        let dev = TensorPotts::from_potts(&cpu, &Device::Cpu).unwrap();
        assert_eq!(dev.space(), cpu.space());
        let xs = random_states(seed + 100, 64, d, 3);
        let (df, dg) = compare(&cpu, &dev, &xs);
        println!("potts K=3 d={d} sparse={sparse}: max rel diff f {df:.2e}, grad {dg:.2e}");
        assert!(df <= TOL && dg <= TOL, "d={d}: f {df:e}, grad {dg:e}");
    }
}

#[test]
fn tensor_potts_from_tensors_checks_symmetry_and_shapes() {
    let dev = Device::Cpu;
    let t = |v: Vec<f32>, s: (usize, usize)| candle_core::Tensor::from_vec(v, s, &dev).unwrap();
    let h = || t(vec![0.0; 6], (2, 3));
    let ok = TensorPotts::from_tensors(Space::categorical(2, 3), t(vec![0.0, 1.0, 1.0, 0.0], (2, 2)), h());
    assert!(ok.is_ok());
    let asym = TensorPotts::from_tensors(Space::categorical(2, 3), t(vec![0.0, 1.0, 0.5, 0.0], (2, 2)), h());
    assert!(asym.unwrap_err().to_string().contains("not symmetric"));
    let diag = TensorPotts::from_tensors(Space::categorical(2, 3), t(vec![1.0, 0.0, 0.0, 0.0], (2, 2)), h());
    assert!(diag.unwrap_err().to_string().contains("diagonal"));
    let shape = TensorPotts::from_tensors(Space::categorical(2, 3), t(vec![0.0; 4], (2, 2)), t(vec![0.0; 4], (2, 2)));
    assert!(shape.unwrap_err().to_string().contains("h must have shape [2, 3]"));
    let binary = TensorPotts::from_tensors(Space::binary(2), t(vec![0.0; 4], (2, 2)), h());
    assert!(binary.is_err());
}

#[test]
fn minibatches_and_empty_batches() {
    let cpu = random_potts(4, 3, false, 5);
    let dev = TensorPotts::from_potts(&cpu, &Device::Cpu).unwrap();
    let mut f = [0.0; 1];
    assert_eq!(dev.evaluate(&[0, 1, 2, 0], Batch::Items(&[0]), &mut f, None), Err(EvalError::NoData));
    assert_eq!(dev.n_data(), None);
    dev.evaluate(&[], Batch::Full, &mut [], Some(&mut [])).unwrap();
    let rbm = TensorRbm::from_rbm(&random_rbm(DomainKind::Binary, 3, 2, 6), &Device::Cpu).unwrap();
    assert_eq!(rbm.evaluate(&[0, 1, 1], Batch::Items(&[0]), &mut f, None), Err(EvalError::NoData));
    rbm.evaluate(&[], Batch::Full, &mut [], None).unwrap();
}
