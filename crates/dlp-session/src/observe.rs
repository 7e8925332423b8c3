//! The observer pieces a session's front ends compose (as tuples, `dlp_core::Observer` is
//! implemented for them): a progress bar advanced in batches, the thinned trace of kept
//! states, and per-chain acceptance and move tallies. Each piece watches one task's chains.

use dlp_core::{Observer, States, StepContext, StepInfo};

/// Advances a progress bar shared by every task by the chain-steps run. Increments are
/// batched (every 4096 chain-steps) to keep the bar's lock off the sampling loop.
pub struct Progress {
    bar: indicatif::ProgressBar,
    n: usize,
    pending: u64,
}

impl Progress {
    /// A piece advancing `bar` by `n` (the task's chains) per step.
    pub fn new(bar: indicatif::ProgressBar, n: usize) -> Self {
        Progress { bar, n, pending: 0 }
    }
}

impl Observer for Progress {
    fn observe(&mut self, _: &StepContext, _: States<'_>, _: &[StepInfo]) {
        self.pending += self.n as u64;
        if self.pending >= 4096 {
            self.bar.inc(self.pending);
            self.pending = 0;
        }
    }
}

/// The thinned trace of one task: the states after step `burn_in` every `thin` steps, with
/// steps counted from the chains' start (a warm-up before this run included, `offset`), and
/// each chain's step record at those steps (accepted, acceptance probability, coordinates
/// changed: ArviZ's sample_stats, CmdStan's `accept_stat__`).
pub struct Trace {
    n: usize,
    burn_in: usize,
    thin: usize,
    offset: usize,
    steps: Vec<usize>,
    states: Vec<u32>,
    accepted: Vec<bool>,
    accept_prob: Vec<f64>,
    changed: Vec<u32>,
}

impl Trace {
    /// A trace of a task of `n` chains keeping step s when s > `burn_in` and s − `burn_in` is
    /// a multiple of `thin` (≥ 1), where s = the run's step + `offset`.
    pub fn new(n: usize, burn_in: usize, thin: usize, offset: usize) -> Self {
        Trace {
            n,
            burn_in,
            thin: thin.max(1),
            offset,
            steps: Vec::new(),
            states: Vec::new(),
            accepted: Vec::new(),
            accept_prob: Vec::new(),
            changed: Vec::new(),
        }
    }

    /// Chains of the task.
    pub fn chains(&self) -> usize {
        self.n
    }

    /// The kept steps, in order.
    pub fn steps(&self) -> &[usize] {
        &self.steps
    }

    /// The states of all the task's chains at the `k`-th kept step (`chains × d`).
    pub fn at(&self, k: usize) -> &[u32] {
        let per = self.states.len() / self.steps.len().max(1);
        &self.states[k * per..(k + 1) * per]
    }

    /// Whether each of the task's chains accepted its proposal at the `k`-th kept step.
    pub fn accepted_at(&self, k: usize) -> &[bool] {
        &self.accepted[k * self.n..(k + 1) * self.n]
    }

    /// Each chain's acceptance probability at the `k`-th kept step.
    pub fn accept_prob_at(&self, k: usize) -> &[f64] {
        &self.accept_prob[k * self.n..(k + 1) * self.n]
    }

    /// The coordinates each chain's `k`-th kept step changed.
    pub fn changed_at(&self, k: usize) -> &[u32] {
        &self.changed[k * self.n..(k + 1) * self.n]
    }

    /// The state of the task's chain `j` at the `k`-th kept step (length d).
    pub fn state(&self, k: usize, j: usize) -> &[u32] {
        let row = self.at(k);
        let d = row.len() / self.n.max(1);
        &row[j * d..(j + 1) * d]
    }
}

impl Observer for Trace {
    fn observe(&mut self, ctx: &StepContext, states: States<'_>, info: &[StepInfo]) {
        let step = ctx.step + self.offset;
        if step > self.burn_in && (step - self.burn_in).is_multiple_of(self.thin) {
            self.steps.push(step);
            self.states.extend_from_slice(states.positions());
            self.accepted.extend(info.iter().map(|s| s.accepted));
            self.accept_prob.extend(info.iter().map(|s| s.accept_prob));
            self.changed.extend(info.iter().map(|s| s.n_changed));
        }
    }
}

/// Per-chain sums over the run: accepted proposals, acceptance probabilities and coordinates
/// changed.
pub struct Tallies {
    /// Accepted proposals per chain.
    pub accepted: Vec<u64>,
    /// Sum of the acceptance probabilities per chain.
    pub accept_prob: Vec<f64>,
    /// Coordinates changed per chain, summed over the steps.
    pub changed: Vec<u64>,
}

impl Tallies {
    /// Zero tallies for a task of `n` chains.
    pub fn new(n: usize) -> Self {
        Tallies { accepted: vec![0; n], accept_prob: vec![0.0; n], changed: vec![0; n] }
    }
}

impl Observer for Tallies {
    fn observe(&mut self, _: &StepContext, _: States<'_>, info: &[StepInfo]) {
        for (j, s) in info.iter().enumerate() {
            self.accepted[j] += u64::from(s.accepted);
            self.accept_prob[j] += s.accept_prob;
            self.changed[j] += u64::from(s.n_changed);
        }
    }
}
