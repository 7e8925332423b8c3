//! DMALA on a tensor RBM: the exact transition matrix equals the CPU RBM's, and the parallel
//! runner gives the same chains for any thread count (rows are evaluated independently).

use dlp_core::TargetExt;
use dlp_core::{DomainKind, Observer, RunOptions, States, StepContext, StepInfo, Target, run_chains, setup_rng};
use dlp_exact::matrix::{kernel_matrix, max_abs_diff};
use dlp_models::Rbm;
use dlp_samplers::{SamplerParams, build_sampler};
use dlp_tensor::{Device, TensorRbm};
use rand::RngExt;

fn random_rbm(domain: DomainKind, d: usize, m: usize, seed: u64) -> Rbm {
    let mut rng = setup_rng(seed);
    let mut draw = |n: usize, s: f64| (0..n).map(|_| rng.random_range(-s..s)).collect::<Vec<f64>>();
    let (w, b, c) = (draw(d * m, 1.0), draw(d, 0.5), draw(m, 0.5));
    Rbm::new(domain, d, m, w, b, c).unwrap()
}

fn dmala() -> Box<dyn dlp_core::Sampler> {
    build_sampler("dmala", &SamplerParams { step_size: Some(0.5), ..Default::default() }).unwrap()
}

#[test]
fn dmala_kernel_matrix_of_the_tensor_rbm_equals_the_cpu_rbms() {
    for (domain, seed) in [(DomainKind::Binary, 11), (DomainKind::Spin, 12)] {
        let cpu = random_rbm(domain, 6, 4, seed);
        let dev = TensorRbm::from_rbm(&cpu, &Device::Cpu).unwrap();
        let sampler = dmala();
        let p_cpu = kernel_matrix(&cpu, sampler.as_ref(), 0).unwrap();
        let p_dev = kernel_matrix(&dev, sampler.as_ref(), 0).unwrap();
        assert_eq!(p_dev.shape(), (64, 64));
        let diff = max_abs_diff(&p_cpu, &p_dev);
        println!("{domain:?}: max |P_tensor − P_cpu| = {diff:.2e}");
        assert!(diff <= 1e-5, "{domain:?}: max abs diff {diff:e}");
        // Not trivially equal: the kernel moves (off-diagonal mass) and is far from uniform.
        let off_diag: f64 = (0..64).map(|i| 1.0 - p_dev[(i, i)]).sum::<f64>() / 64.0;
        assert!(off_diag > 0.05, "mean move probability {off_diag}");
    }
}

/// Records, per step, the task's positions and cached log-densities and the accepted moves.
#[derive(Default)]
struct Trace {
    steps: Vec<(Vec<u32>, Vec<f64>)>,
    changed: u64,
}

impl Observer for Trace {
    fn observe(&mut self, _: &StepContext, states: States<'_>, info: &[StepInfo]) {
        let f = states.log_densities().expect("dmala caches f").to_vec();
        self.steps.push((states.positions().to_vec(), f));
        self.changed += info.iter().map(|i| u64::from(i.n_changed)).sum::<u64>();
    }
}

/// Positions and f of all chains at every step (tasks concatenated in chain order), final
/// states and the number of changed coordinates.
#[allow(clippy::type_complexity)]
fn run(
    target: &dyn Target,
    x0: &[u32],
    steps: usize,
    threads: usize,
    per_task: usize,
) -> (Vec<(Vec<u32>, Vec<f64>)>, Vec<u32>, u64) {
    let opts = RunOptions { seed: 2024, threads, chains_per_task: per_task };
    let out = run_chains(dmala().as_ref(), target, x0, steps, &opts, |_, _| Trace::default()).unwrap();
    let mut all = vec![(Vec::new(), Vec::new()); steps];
    for obs in &out.observers {
        for (t, (x, f)) in obs.steps.iter().enumerate() {
            all[t].0.extend_from_slice(x);
            all[t].1.extend_from_slice(f);
        }
    }
    let changed = out.observers.iter().map(|o| o.changed).sum();
    (all, out.final_states, changed)
}

#[test]
fn run_chains_on_the_tensor_rbm_is_identical_for_one_and_two_threads_and_moves() {
    let (d, n, steps) = (6, 16, 300);
    let cpu = random_rbm(DomainKind::Binary, d, 4, 21);
    let dev = TensorRbm::from_rbm(&cpu, &Device::Cpu).unwrap();
    let mut rng = setup_rng(22);
    let x0: Vec<u32> = (0..n * d).map(|_| rng.random_range(0..2u32)).collect();

    let (trace1, final1, changed1) = run(&dev, &x0, steps, 1, 0);
    let (trace2, final2, changed2) = run(&dev, &x0, steps, 2, 0);
    // Uneven tasks of 3 chains: batches of other sizes must give the same rows, bit for bit.
    let (trace3, final3, _) = run(&dev, &x0, steps, 2, 3);
    assert_eq!(final1, final2);
    assert_eq!(final1, final3);
    assert!(trace1 == trace2, "per-step positions and f differ between 1 and 2 threads");
    assert!(trace1 == trace3, "per-step positions and f differ with 3 chains per task");
    assert_eq!(changed1, changed2);

    // The chains move: many accepted flips, and the final states are not the initial ones.
    println!("coordinates changed over {steps} steps of {n} chains: {changed1}");
    assert!(changed1 > (n * steps / 10) as u64, "only {changed1} coordinates changed");
    assert_ne!(final1, x0);
    // Every visited state's cached f is the CPU model's f (f32 on the device).
    for (x, f) in trace1.iter().step_by(37) {
        let mut f_cpu = vec![0.0; n];
        cpu.log_density_batch(x, &mut f_cpu).unwrap();
        for (a, b) in f.iter().zip(&f_cpu) {
            assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
}
