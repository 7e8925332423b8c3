//! Observers of `dlp_core::run_chains` used by the experiments, and what is computed from
//! them afterwards (merged error curves, chain-0 series).

use dlp_core::stats::{RunningMean, log_rmse};
use dlp_core::{Observer, Space, States, StepContext, StepInfo};
use serde::Serialize;

/// What a [`MeanErrorObserver`] recorded at one checkpoint of one task.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// Steps done (0 = the initial states).
    pub step: usize,
    /// Σ over coordinates of (running mean − truth)², one entry per chain of the task
    /// (kept per chain so that merged sums do not depend on how chains were split in tasks);
    /// empty in ensemble mode.
    pub squared_errors: Vec<f64>,
    /// Each chain's estimate of E_π, `n_chains × d`: its running mean, or in ensemble mode the
    /// particle's current value (their average over all chains is the pooled estimate,
    /// [`merge_pooled`]).
    pub estimates: Vec<f64>,
    /// Seconds the task had spent inside `step` so far.
    pub step_seconds: f64,
}

/// Observer of one task for the Ising-type experiments (spec §3.2): running means of the
/// user values over steps 0..t against a truth vector every `every` steps, acceptance and
/// changed-coordinate counts, and (if the task holds chain 0) every state of chain 0. In
/// [`MeanErrorObserver::ensemble`] mode the estimate is instead the mean over all chains
/// of their current states (interacting particles, whose estimator is the particle average).
pub struct MeanErrorObserver<'a> {
    space: &'a Space,
    truth: &'a [f64],
    every: usize,
    last: usize,
    means: RunningMean,
    /// Checkpoints in step order.
    pub checkpoints: Vec<Checkpoint>,
    /// States of chain 0 after each step (steps 1..), `steps × d`; empty for other tasks.
    pub chain0: Vec<u32>,
    record_chain0: bool,
    /// Accepted proposals over all chains and steps.
    pub accepted: u64,
    /// Σ of `n_changed` over all chains and steps.
    pub changed: u64,
    /// Σ of `grad_evals` over all chains and steps.
    pub grad_evals: u64,
    /// Chain-steps observed.
    pub chain_steps: u64,
    /// Total seconds inside `step` at the end.
    pub step_seconds: f64,
    bar: indicatif::ProgressBar,
    pending: u64,
    ensemble: bool,
}

impl<'a> MeanErrorObserver<'a> {
    /// Observer for a task of `n_chains` chains starting at global chain `first_chain`, of a
    /// run of `last` steps; `bar` counts chain-steps.
    pub fn new(
        space: &'a Space,
        truth: &'a [f64],
        every: usize,
        last: usize,
        (first_chain, n_chains): (usize, usize),
        bar: indicatif::ProgressBar,
    ) -> Self {
        MeanErrorObserver {
            space,
            truth,
            every: every.max(1),
            last,
            means: RunningMean::new(n_chains * space.d),
            checkpoints: Vec::new(),
            chain0: Vec::new(),
            record_chain0: first_chain == 0,
            accepted: 0,
            changed: 0,
            grad_evals: 0,
            chain_steps: 0,
            step_seconds: 0.0,
            bar,
            pending: 0,
            ensemble: false,
        }
    }

    /// Estimates E_π by the mean over all chains of their current states at each checkpoint
    /// (no running means), as for particles that move jointly (GF-SVGD): a particle's running
    /// mean over iterations converges to its own final value, not to E_π, while the particle
    /// average is the method's estimator. [`merge_curves`] then gives that average's error.
    pub fn ensemble(mut self) -> Self {
        self.ensemble = true;
        self
    }

    fn add(&mut self, positions: &[u32]) {
        if self.ensemble {
            return; // no running means: the estimate is the current particle average
        }
        let space = self.space;
        self.means.add(positions, |c| space.value(c) as f64);
    }

    fn checkpoint(&mut self, step: usize, step_seconds: f64, positions: &[u32]) {
        let d = self.space.d;
        let truth = self.truth;
        let (squared_errors, estimates) = if self.ensemble {
            let space = self.space;
            (Vec::new(), positions.iter().map(|&c| space.value(c) as f64).collect())
        } else {
            let means: Vec<f64> = self.means.means().collect();
            let errors =
                means.chunks(d).map(|m| RunningMean { count: 1, sums: m.to_vec() }.squared_error_sum(truth)).collect();
            (errors, means)
        };
        self.checkpoints.push(Checkpoint { step, squared_errors, estimates, step_seconds });
    }
}

impl Observer for MeanErrorObserver<'_> {
    fn start(&mut self, _first_chain: usize, positions: &[u32]) {
        self.add(positions);
        self.checkpoint(0, 0.0, positions);
    }

    fn observe(&mut self, ctx: &StepContext, states: States<'_>, info: &[StepInfo]) {
        let positions = states.positions();
        self.add(positions);
        for i in info {
            self.accepted += i.accepted as u64;
            self.changed += i.n_changed as u64;
            self.grad_evals += u64::from(i.grad_evals);
        }
        self.chain_steps += info.len() as u64;
        self.step_seconds = ctx.step_seconds;
        if self.record_chain0 {
            self.chain0.extend_from_slice(&positions[..self.space.d]);
        }
        if ctx.step.is_multiple_of(self.every) || ctx.step == self.last {
            self.checkpoint(ctx.step, ctx.step_seconds, positions);
        }
        self.pending += info.len() as u64;
        if self.pending >= 8192 || ctx.step == self.last {
            self.bar.inc(self.pending);
            self.pending = 0;
        }
    }
}

/// One point of a merged error curve.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CurvePoint {
    /// Steps done.
    pub step: usize,
    /// log RMSE over all chains × coordinates.
    pub log_rmse: f64,
    /// Sampler seconds per chain: time inside `step` summed over tasks, over the chain count.
    pub seconds: f64,
}

/// Merges the tasks' checkpoints into one curve (all tasks checkpoint at the same steps): the
/// RMSE over chains × coordinates of each chain's running mean, or in ensemble mode the
/// [`merge_pooled`] curve (the particle average's error over coordinates).
pub fn merge_curves(observers: &[MeanErrorObserver<'_>], n_chains: usize, d: usize) -> Vec<CurvePoint> {
    let Some(first) = observers.first() else { return Vec::new() };
    if first.ensemble {
        return merge_pooled(observers, n_chains, d);
    }
    (0..first.checkpoints.len())
        .map(|k| {
            // Summed chain by chain in global order: identical for any task split.
            let sse = observers.iter().flat_map(|o| o.checkpoints[k].squared_errors.iter()).fold(0.0, |a, b| a + b);
            point(observers, k, log_rmse(sse, n_chains * d), n_chains)
        })
        .collect()
}

/// The error curve of the pooled estimate: at each checkpoint the average over all `n_chains`
/// chains of their estimates (running means; in ensemble mode current particle values), its
/// log RMSE over the `d` coordinates. For Markov chains this is the estimator that uses all
/// chains' draws, the like-for-like comparison with a particle method's average.
pub fn merge_pooled(observers: &[MeanErrorObserver<'_>], n_chains: usize, d: usize) -> Vec<CurvePoint> {
    let Some(first) = observers.first() else { return Vec::new() };
    (0..first.checkpoints.len())
        .map(|k| {
            // Summed chain by chain in global order: identical for any task split.
            let mut pooled = vec![0.0; d];
            for row in observers.iter().flat_map(|o| o.checkpoints[k].estimates.chunks(d)) {
                pooled.iter_mut().zip(row).for_each(|(p, v)| *p += v);
            }
            let sse: f64 = pooled.iter().zip(first.truth).map(|(p, t)| (p / n_chains as f64 - t).powi(2)).sum();
            point(observers, k, log_rmse(sse, d), n_chains)
        })
        .collect()
}

/// Checkpoint `k` of the merged curve: its step, `log_rmse`, and the sampler seconds per chain.
fn point(observers: &[MeanErrorObserver<'_>], k: usize, log_rmse: f64, n_chains: usize) -> CurvePoint {
    let secs: f64 = observers.iter().map(|o| o.checkpoints[k].step_seconds).sum();
    CurvePoint { step: observers[0].checkpoints[k].step, log_rmse, seconds: secs / n_chains as f64 }
}

/// Chain 0's user values per coordinate after dropping the first `burn_in` fraction of the
/// steps a [`MeanErrorObserver`] run recorded (spec §3.2: ESS of chain 0, 10% burn-in): `d`
/// series of equal length, ready for `stats::ess_tfp` or `diagnostics::ess_bulk`.
pub fn chain0_series(observers: &[MeanErrorObserver<'_>], space: &Space, burn_in: f64) -> Vec<Vec<f64>> {
    let d = space.d;
    let chain0 = observers.iter().find(|o| o.record_chain0).map_or(&[][..], |o| &o.chain0[..]);
    let steps = chain0.len() / d;
    let burn = (burn_in * steps as f64) as usize;
    (0..d).map(|i| (burn..steps).map(|t| space.value(chain0[t * d + i]) as f64).collect()).collect()
}

/// Move counts of the steps after a burn-in (Fig. 2 left): acceptance, proposed and accepted
/// flips, and the spin sum.
pub struct MoveStats {
    burn: usize,
    /// Chain-steps after the burn-in.
    pub chain_steps: u64,
    /// Accepted proposals.
    pub accepted: u64,
    /// Σ of `n_proposed`.
    pub proposed: u64,
    /// Σ of `n_changed` (the accepted Hamming move).
    pub changed: u64,
    /// Σ of the spins 2x − 1 of every chain and step after burn-in (sanity: E\[s\] ≈ 0.483).
    pub spin_sum: f64,
}

impl MoveStats {
    /// Counts steps `burn + 1 ..` only.
    pub fn new(burn: usize) -> Self {
        MoveStats { burn, chain_steps: 0, accepted: 0, proposed: 0, changed: 0, spin_sum: 0.0 }
    }
}

impl Observer for MoveStats {
    fn observe(&mut self, ctx: &StepContext, states: States<'_>, info: &[StepInfo]) {
        if ctx.step <= self.burn {
            return;
        }
        let positions = states.positions();
        self.chain_steps += info.len() as u64;
        for i in info {
            self.accepted += u64::from(i.accepted);
            self.proposed += u64::from(i.n_proposed);
            self.changed += u64::from(i.n_changed);
        }
        self.spin_sum += positions.iter().map(|&c| 2.0 * c as f64 - 1.0).sum::<f64>();
    }
}

/// Keeps a task's states every `every` steps (and the initial ones), with the task's sampler
/// seconds at each, plus acceptance-probability and changed-coordinate sums (Fig. 4).
pub struct Snapshots {
    every: usize,
    /// States of the task's chains at steps 0, every, 2·every, …
    pub states: Vec<Vec<u32>>,
    /// Seconds inside `step` at each snapshot.
    pub seconds: Vec<f64>,
    /// Σ of the acceptance probabilities.
    pub accept: f64,
    /// Σ of `n_changed`.
    pub changed: f64,
    /// Chain-steps observed.
    pub count: u64,
}

impl Snapshots {
    /// Snapshots every `every` steps.
    pub fn new(every: usize) -> Self {
        Snapshots { every, states: Vec::new(), seconds: Vec::new(), accept: 0.0, changed: 0.0, count: 0 }
    }
}

impl Observer for Snapshots {
    fn start(&mut self, _: usize, positions: &[u32]) {
        self.states.push(positions.to_vec());
        self.seconds.push(0.0);
    }

    fn observe(&mut self, ctx: &StepContext, states: States<'_>, info: &[StepInfo]) {
        for i in info {
            self.accept += i.accept_prob;
            self.changed += i.n_changed as f64;
            self.count += 1;
        }
        if ctx.step.is_multiple_of(self.every) {
            self.states.push(states.positions().to_vec());
            self.seconds.push(ctx.step_seconds);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::{RunOptions, Target, run_chains};
    use dlp_models::IsingModel;

    /// Every state of its task after every step (step 0 = the start), for an independent
    /// recomputation of the curves.
    #[derive(Default)]
    struct Record {
        first_chain: usize,
        states: Vec<Vec<u32>>,
    }

    impl Observer for Record {
        fn start(&mut self, first_chain: usize, positions: &[u32]) {
            self.first_chain = first_chain;
            self.states.push(positions.to_vec());
        }
        fn observe(&mut self, _: &StepContext, states: States<'_>, _: &[StepInfo]) {
            self.states.push(states.positions().to_vec());
        }
    }

    const STEPS: usize = 20;
    const EVERY: usize = 5;
    const TRUTH: [f64; 9] = [0.5, 0.4, 0.3, 0.2, 0.1, 0.0, -0.1, -0.2, -0.3];

    /// Runs `name` with 6 chains in tasks of `per_task` chains (0: the runner's split); the
    /// observers, `n × d` spins per recorded step in global chain order.
    fn run<'a>(
        model: &'a IsingModel,
        name: &str,
        per_task: usize,
        ensemble: bool,
    ) -> (Vec<MeanErrorObserver<'a>>, Vec<Vec<f64>>) {
        let space = model.space();
        let sampler = crate::parse_samplers(name).unwrap()[0].build().unwrap();
        let x0: Vec<u32> = (0..6 * 9).map(|i| u32::from(i % 3 == 0)).collect();
        let options = RunOptions { seed: 7, threads: 2, chains_per_task: per_task };
        let out = run_chains(sampler.as_ref(), model, &x0, STEPS, &options, |first, n| {
            let o = MeanErrorObserver::new(space, &TRUTH, EVERY, STEPS, (first, n), indicatif::ProgressBar::hidden());
            (if ensemble { o.ensemble() } else { o }, Record::default())
        })
        .unwrap();
        let (obs, mut records): (Vec<_>, Vec<_>) = out.observers.into_iter().unzip();
        records.sort_by_key(|r| r.first_chain);
        let spins = (0..=STEPS)
            .map(|t| records.iter().flat_map(|r| r.states[t].iter().map(|&c| space.value(c) as f64)).collect())
            .collect();
        (obs, spins)
    }

    fn log_rmse_of(sse: f64, count: usize) -> f64 {
        0.5 * (sse / count as f64).ln()
    }

    #[test]
    fn ensemble_mode_is_the_error_of_the_current_particle_average() {
        let model = IsingModel::paper_lattice(3, 0.1, 0.2);
        let (obs, spins) = run(&model, "gf-svgd", 0, true);
        let curve = merge_curves(&obs, 6, 9);
        assert_eq!(curve.iter().map(|p| p.step).collect::<Vec<_>>(), [0, 5, 10, 15, 20]);
        assert!(spins[STEPS] != spins[0], "the particles did not move: the test would not tell the modes apart");
        for p in &curve {
            let s = &spins[p.step];
            let sse: f64 = (0..9).map(|i| ((0..6).map(|c| s[c * 9 + i]).sum::<f64>() / 6.0 - TRUTH[i]).powi(2)).sum();
            assert!((p.log_rmse - log_rmse_of(sse, 9)).abs() < 1e-12, "step {}: {} vs {}", p.step, p.log_rmse, sse);
        }
        assert_eq!(
            merge_pooled(&obs, 6, 9).iter().map(|p| p.log_rmse).collect::<Vec<_>>(),
            curve.iter().map(|p| p.log_rmse).collect::<Vec<_>>()
        );
    }

    #[test]
    fn chain_mode_per_chain_and_pooled_curves_match_the_running_means() {
        let model = IsingModel::paper_lattice(3, 0.1, 0.2);
        let (obs, spins) = run(&model, "dmala@0.4", 2, false);
        assert_eq!(obs.len(), 3, "three tasks of two chains");
        let per_chain = merge_curves(&obs, 6, 9);
        let pooled = merge_pooled(&obs, 6, 9);
        for (p, q) in per_chain.iter().zip(&pooled) {
            // Running means over steps 0..=t of each chain and coordinate.
            let mean = |k: usize| (0..=p.step).map(|t| spins[t][k]).sum::<f64>() / (p.step + 1) as f64;
            let sse: f64 = (0..6 * 9).map(|k| (mean(k) - TRUTH[k % 9]).powi(2)).sum();
            assert!((p.log_rmse - log_rmse_of(sse, 54)).abs() < 1e-12, "per chain, step {}", p.step);
            let sse: f64 =
                (0..9).map(|i| ((0..6).map(|c| mean(c * 9 + i)).sum::<f64>() / 6.0 - TRUTH[i]).powi(2)).sum();
            assert!((q.log_rmse - log_rmse_of(sse, 9)).abs() < 1e-12, "pooled, step {}", q.step);
            assert_eq!(p.step, q.step);
        }
        // The same chains split differently give the same curves to the last bit.
        let (one, _) = run(&model, "dmala@0.4", 6, false);
        let bits = |c: Vec<CurvePoint>| c.iter().map(|p| p.log_rmse.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(merge_pooled(&one, 6, 9)), bits(pooled));
        assert_eq!(bits(merge_curves(&one, 6, 9)), bits(per_chain));
    }
}
