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
    /// (kept per chain so that merged sums do not depend on how chains were split in tasks).
    pub squared_errors: Vec<f64>,
    /// Seconds the task had spent inside `step` so far.
    pub step_seconds: f64,
}

/// Observer of one task for the Ising-type experiments (spec §3.2): running means of the
/// user values over steps 0..t against a truth vector every `every` steps, acceptance and
/// changed-coordinate counts, and (if the task holds chain 0) every state of chain 0.
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
        }
    }

    fn add(&mut self, positions: &[u32]) {
        let space = self.space;
        self.means.add(positions, |c| space.value(c) as f64);
    }

    fn checkpoint(&mut self, step: usize, step_seconds: f64) {
        let d = self.space.d;
        let means: Vec<f64> = self.means.means().collect();
        let truth = self.truth;
        let squared_errors =
            means.chunks(d).map(|m| RunningMean { count: 1, sums: m.to_vec() }.squared_error_sum(truth)).collect();
        self.checkpoints.push(Checkpoint { step, squared_errors, step_seconds });
    }
}

impl Observer for MeanErrorObserver<'_> {
    fn start(&mut self, _first_chain: usize, positions: &[u32]) {
        self.add(positions);
        self.checkpoint(0, 0.0);
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
            self.checkpoint(ctx.step, ctx.step_seconds);
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

/// Merges the tasks' checkpoints into one curve (all tasks checkpoint at the same steps).
pub fn merge_curves(observers: &[MeanErrorObserver<'_>], n_chains: usize, d: usize) -> Vec<CurvePoint> {
    let Some(first) = observers.first() else { return Vec::new() };
    (0..first.checkpoints.len())
        .map(|k| {
            // Summed chain by chain in global order: identical for any task split.
            let sse = observers.iter().flat_map(|o| o.checkpoints[k].squared_errors.iter()).fold(0.0, |a, b| a + b);
            let secs: f64 = observers.iter().map(|o| o.checkpoints[k].step_seconds).sum();
            CurvePoint {
                step: first.checkpoints[k].step,
                log_rmse: log_rmse(sse, n_chains * d),
                seconds: secs / n_chains as f64,
            }
        })
        .collect()
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
