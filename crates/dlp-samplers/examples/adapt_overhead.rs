//! The warm-up adaptation's overhead on a shared machine. Adaptation runs the warm-up as
//! W / `DEFAULT_WINDOW` fixed-α runs restarted from the previous positions; what it adds to
//! a plain warm-up is the restarts (`run_chains` set-up and `start`: caches, one gradient per
//! chain) and the acceptance observer. Timed interleaved over R rounds and compared by their
//! minima (the least-disturbed run of each; contention only adds time): `single` (one run of
//! W steps with the observer) and `restarts` (W / window runs of zero steps, i.e. the set-up
//! alone). Comparing a windowed run with a single one instead would mix in the cost of
//! different trajectories (another acceptance history, another phase pattern for ACS).
//! `cargo run --release -p dlp-samplers --example adapt_overhead -- [R]`.

use dlp_core::{Observer, RunOptions, States, StepContext, StepInfo, run_chains, setup_rng};
use dlp_models::IsingModel;
use dlp_samplers::adapt::DEFAULT_WINDOW;
use dlp_samplers::{SamplerParams, build_sampler};
use rand::RngExt;
use std::time::Instant;

struct Sums(Vec<f64>);

impl Observer for Sums {
    fn observe(&mut self, _: &StepContext, _: States<'_>, info: &[StepInfo]) {
        for (s, i) in self.0.iter_mut().zip(info) {
            *s += i.accept_prob;
        }
    }
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(30);
    const W: usize = 1000;
    let m = IsingModel::paper_lattice(25, 0.1, 0.2);
    let chains = 16;
    let mut rng = setup_rng(0);
    let x0: Vec<u32> = (0..625 * chains).map(|_| u32::from(rng.random::<f64>() < 0.6)).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let run = RunOptions { seed: 1, threads: 0, chains_per_task: 0 };
    for (name, alpha) in [("dmala", 0.4), ("acs-dmala-20", 3.0), ("dlmc", 1.0)] {
        let s = build_sampler(name, &SamplerParams { step_size: Some(alpha), ..Default::default() }).unwrap();
        let (mut single, mut restarts) = (f64::INFINITY, f64::INFINITY);
        pool.install(|| {
            for _ in 0..rounds {
                let t = Instant::now();
                run_chains(s.as_ref(), &m, &x0, W, &run, |_, n| Sums(vec![0.0; n])).unwrap();
                single = single.min(t.elapsed().as_secs_f64());
                let t = Instant::now();
                for _ in 0..W / DEFAULT_WINDOW {
                    run_chains(s.as_ref(), &m, &x0, 0, &run, |_, n| Sums(vec![0.0; n])).unwrap();
                }
                restarts = restarts.min(t.elapsed().as_secs_f64());
            }
        });
        println!(
            "{name:14} single {:.3} ms  restarts {:.3} ms  overhead {:.1}%  (min of {rounds}, W = {W}, window {DEFAULT_WINDOW})",
            single * 1e3,
            restarts * 1e3,
            restarts / single * 100.0
        );
    }
}
