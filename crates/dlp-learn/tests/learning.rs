//! Exact checks of the learning code on enumerable models: the CD loss gradient against a
//! finite-difference gradient of the exact log-likelihood, block Gibbs against the exact law,
//! and the PCD target's gradient and flip deltas against finite differences / direct sums.

use dlp_core::TargetExt;
use dlp_core::rng::chain_rngs;
use dlp_learn::pcd::{DenseIsing, lattice_couplings};
use dlp_learn::rbm::{RbmParams, cd_loss_grad};

fn tiny_rbm() -> RbmParams {
    // d = 4, M = 2, parameters chosen by hand (no symmetry, moderate size).
    RbmParams {
        d: 4,
        m: 2,
        w: vec![0.8, -0.3, -0.5, 0.9, 0.2, 0.4, -1.1, -0.6],
        b: vec![0.1, -0.4, 0.3, 0.0],
        c: vec![-0.2, 0.5],
    }
}

/// log Z from the joint energy bᵀv + cᵀh + vᵀWh summed over all (v, h) — written from the
/// RBM's definition, independently of the code's marginal (softplus) form.
fn log_z_joint(p: &RbmParams) -> f64 {
    let mut z = 0.0;
    for v in 0..1u32 << p.d {
        for h in 0..1u32 << p.m {
            let vb = |i: usize| ((v >> i) & 1) as f64;
            let hb = |j: usize| ((h >> j) & 1) as f64;
            let mut e = 0.0;
            for i in 0..p.d {
                e += p.b[i] * vb(i);
                for j in 0..p.m {
                    e += vb(i) * p.w[i * p.m + j] * hb(j);
                }
            }
            for j in 0..p.m {
                e += p.c[j] * hb(j);
            }
            z += e.exp();
        }
    }
    z.ln()
}

fn log_marginal_joint(p: &RbmParams, v: &[u32]) -> f64 {
    // log Σ_h exp(energy(v, h)), again from the joint.
    let mut s = 0.0;
    for h in 0..1u32 << p.m {
        let mut e: f64 = (0..p.d).map(|i| p.b[i] * v[i] as f64).sum();
        for j in 0..p.m {
            let hb = ((h >> j) & 1) as f64;
            e += hb * (p.c[j] + (0..p.d).map(|i| v[i] as f64 * p.w[i * p.m + j]).sum::<f64>());
        }
        s += e.exp();
    }
    s.ln()
}

fn all_states(d: usize) -> Vec<u32> {
    (0..1u32 << d).flat_map(|s| (0..d).map(move |i| (s >> i) & 1)).collect()
}

#[test]
fn cd_gradient_with_exact_model_samples_is_the_exact_log_likelihood_gradient() {
    let p = tiny_rbm();
    let data = vec![1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0];
    // Exact model law π(v) ∝ exp ℓ(v) over the 16 states, from the joint form.
    let states = all_states(p.d);
    let lz = log_z_joint(&p);
    let pi: Vec<f64> = states.chunks(p.d).map(|v| (log_marginal_joint(&p, v) - lz).exp()).collect();
    assert!((pi.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    // The CD loss gradient with the samples replaced by the exact law (weights π) is the
    // expectation of CD's gradient under exact sampling: grad_model − grad_data.
    let gd = p.grad_mean(&data);
    let gm = p.grad_weighted(&states, &pi);
    // Negative mean log-likelihood L(θ) = −mean ℓ(data) + log Z, differentiated numerically.
    let nll = |q: &RbmParams| -> f64 {
        -data.chunks(q.d).map(|v| log_marginal_joint(q, v)).sum::<f64>() / 3.0 + log_z_joint(q)
    };
    let h = 1e-6;
    let fd = |set: &dyn Fn(&mut RbmParams, f64)| {
        let (mut a, mut b) = (p.clone(), p.clone());
        set(&mut a, h);
        set(&mut b, -h);
        (nll(&a) - nll(&b)) / (2.0 * h)
    };
    for k in 0..p.w.len() {
        let want = fd(&|q: &mut RbmParams, e| q.w[k] += e);
        assert!((gm.w[k] - gd.w[k] - want).abs() < 1e-8, "W[{k}]: {} vs {want}", gm.w[k] - gd.w[k]);
    }
    for i in 0..p.d {
        let want = fd(&|q: &mut RbmParams, e| q.b[i] += e);
        assert!((gm.b[i] - gd.b[i] - want).abs() < 1e-8, "b[{i}]");
    }
    for j in 0..p.m {
        let want = fd(&|q: &mut RbmParams, e| q.c[j] += e);
        assert!((gm.c[j] - gd.c[j] - want).abs() < 1e-8, "c[{j}]");
    }
    // And cd_loss_grad is that difference for equally weighted samples.
    let samples = vec![0, 1, 1, 0, 1, 1, 1, 1];
    let g = cd_loss_grad(&p, &data, &samples);
    let gs = p.grad_mean(&samples);
    assert!((g.w[3] - (gs.w[3] - gd.w[3])).abs() < 1e-15);
    // ℓ from the code agrees with the joint marginal up to the same constant for all v.
    let mut l = vec![0.0; 16];
    p.log_density_batch(&states, &mut l);
    for (v, lv) in states.chunks(p.d).zip(&l) {
        assert!((lv - log_marginal_joint(&p, v)).abs() < 1e-12);
    }
}

#[test]
fn block_gibbs_reaches_the_exact_law() {
    // 20,000 independent chains, 30 sweeps from all-zeros. Each state's frequency has sd
    // ≤ sqrt(p(1−p)/n) ≤ 0.0035; a 5-sd bound fails by chance with prob < 16 · 6e-7 ≈ 1e-5
    // (30 sweeps of a 4×2 RBM with |W| ≤ 1.1 are far past mixing).
    let p = tiny_rbm();
    let n = 20_000;
    let mut v = vec![0u32; n * p.d];
    let mut rngs = chain_rngs(11, 0, n);
    p.gibbs_par(&mut v, 30, &mut rngs, 3);
    let lz = log_z_joint(&p);
    let mut counts = [0usize; 16];
    for row in v.chunks(p.d) {
        counts[row.iter().enumerate().map(|(i, &b)| (b as usize) << i).sum::<usize>()] += 1;
    }
    for (s, &c) in counts.iter().enumerate() {
        let state: Vec<u32> = (0..p.d).map(|i| ((s >> i) & 1) as u32).collect();
        let pi = (log_marginal_joint(&p, &state) - lz).exp();
        let sd = (pi * (1.0 - pi) / n as f64).sqrt();
        assert!((c as f64 / n as f64 - pi).abs() < 5.0 * sd, "state {s}: {} vs {pi}", c as f64 / n as f64);
    }
    // Batching does not change the chains (per-chain streams, row-independent products).
    let mut a = vec![0u32; 40 * p.d];
    let mut b = a.clone();
    p.gibbs_par(&mut a, 5, &mut chain_rngs(3, 0, 40), 1);
    p.gibbs_par(&mut b, 5, &mut chain_rngs(3, 0, 40), 7);
    assert_eq!(a, b);
}

fn dense_target() -> DenseIsing {
    // A non-symmetric J with a non-zero diagonal, so that the symmetrisation and the
    // diagonal handling are exercised.
    let d = 5;
    let j: Vec<f64> = (0..d * d).map(|k| ((k * 37 % 11) as f64 - 5.0) / 7.0).collect();
    DenseIsing::new(d, j)
}

fn f_direct(j: &[f64], s: &[f64]) -> f64 {
    let d = s.len();
    (0..d).flat_map(|a| (0..d).map(move |b| (a, b))).map(|(a, b)| s[a] * j[a * d + b] * s[b]).sum()
}

#[test]
fn dense_ising_gradient_matches_finite_differences_and_flip_deltas_match_direct_sums() {
    let t = dense_target();
    let d = 5;
    let xs: Vec<u32> = all_states(d);
    let n = xs.len() / d;
    let (mut f, mut g) = (vec![0.0; n], vec![0.0; n * d]);
    t.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
    let mut f2 = vec![0.0; n];
    t.log_density_batch(&xs, &mut f2).unwrap();
    for (r, x) in xs.chunks(d).enumerate() {
        // f(x) = sᵀJs with s = 2x − 1, extended to real x by the same polynomial.
        let fx = |xr: &[f64]| f_direct(t.j(), &xr.iter().map(|&v| 2.0 * v - 1.0).collect::<Vec<_>>());
        let xr: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        assert!((f[r] - fx(&xr)).abs() < 1e-12 && (f2[r] - f[r]).abs() < 1e-12);
        for i in 0..d {
            let (mut up, mut dn) = (xr.clone(), xr.clone());
            up[i] += 1e-5;
            dn[i] -= 1e-5;
            let want = (fx(&up) - fx(&dn)) / 2e-5;
            assert!((g[r * d + i] - want).abs() < 1e-7, "row {r} coord {i}: {} vs {want}", g[r * d + i]);
        }
        let mut deltas = vec![0.0; d];
        t.flip_deltas(x, &mut deltas).unwrap();
        for i in 0..d {
            let mut y = x.to_vec();
            y[i] = 1 - y[i];
            let want = t.log_density(&y).unwrap() - t.log_density(x).unwrap();
            assert!((deltas[i] - want).abs() < 1e-12, "flip {i}");
        }
    }
    // Rows are independent: one row at a time gives the same bits as the whole batch.
    for (r, x) in xs.chunks(d).enumerate() {
        let mut gr = vec![0.0; d];
        let fr = t.log_density_grad(x, &mut gr).unwrap();
        assert_eq!(fr, f[r]);
        assert_eq!(gr, g[r * d..(r + 1) * d]);
    }
}

#[test]
fn lattice_couplings_give_the_paper_ising_energy() {
    // f = sᵀ(σA)s = 2σ Σ_edges s_i s_j (P3): all-up 3×3 periodic lattice has 18 edges.
    let j = lattice_couplings(3, 0.25);
    let t = DenseIsing::new(9, j);
    assert!((t.log_density(&[1; 9]).unwrap() - 2.0 * 0.25 * 18.0).abs() < 1e-12);
    let mut x = [1u32; 9];
    x[4] = 0;
    // One site down flips its 4 edges: 2σ(18 − 8).
    assert!((t.log_density(&x).unwrap() - 2.0 * 0.25 * 10.0).abs() < 1e-12);
}
