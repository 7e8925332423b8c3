//! The mechanics of warm-up adaptation ([`crate::adapt`]): the options, the result, Hoffman &
//! Gelman's dual averaging and the windowed runs it drives. A leaf below every sampler module
//! (cyclical DMALA's own tuner, [`crate::acs`], uses it too) and below the registry.

use dlp_core::rng::derive_seed;
use dlp_core::{Observer, RunOptions, SamplerError, States, StepContext, StepInfo, Target, run_chains};

/// The default target acceptance of step-size adaptation: the optimal MALA rate of Roberts &
/// Rosenthal 1998, which the DLP paper's DMALA runs also sit near.
pub const MALA_TARGET_ACCEPT: f64 = 0.574;

/// Seed label of the adaptation windows (`derive_seed(seed, [ADAPT, window])`).
pub const ADAPT: u64 = 0x0ada;

/// Steps per adaptation window. Each window restarts the chains (`run_chains` set-up and
/// `start`: one gradient per chain and the fast paths' caches, about three steps' cost on the
/// lattice kernel: measured by `cargo run --release -p dlp-samplers --example adapt_overhead`),
/// so 100 keeps the overhead within 5% of the warm-up (2.9% there; 5.8% at 50), while a
/// 2,000-step warm-up still gets 20 dual-averaging updates.
pub const DEFAULT_WINDOW: usize = 100;

/// How to adapt.
#[derive(Clone, Debug)]
pub struct AdaptOptions {
    /// Warm-up steps in all (rounded down to whole windows, at least one window).
    pub warmup: usize,
    /// Target mean acceptance probability δ (0.574 for DMALA: the optimal MALA rate of Roberts
    /// & Rosenthal 1998, which the DLP paper's DMALA runs also sit near).
    pub target_accept: f64,
    /// Steps per window.
    pub window: usize,
    /// The first α (μ = log(10 α₀) is the point dual averaging shrinks toward).
    pub initial: f64,
}

impl Default for AdaptOptions {
    fn default() -> Self {
        AdaptOptions { warmup: 1000, target_accept: MALA_TARGET_ACCEPT, window: DEFAULT_WINDOW, initial: 0.5 }
    }
}

/// What the warm-up chose.
#[derive(Clone, Debug, PartialEq)]
pub struct Adapted {
    /// The frozen step size ᾱ (α_max for cyclical DMALA; `None` when the family adapts
    /// something else and its sampler takes no step size: replica exchange around `gwg`).
    pub step_size: Option<f64>,
    /// The frozen α_min of cyclical DMALA (`None` for other samplers).
    pub step_size_min: Option<f64>,
    /// The frozen inverse-temperature ladder of replica exchange (`None` for other samplers).
    pub ladder: Option<Vec<f64>>,
    /// Positions of the chains after the warm-up (`n × d`).
    pub positions: Vec<u32>,
    /// Mean acceptance probability of the last window.
    pub last_accept: f64,
    /// Windows run.
    pub windows: usize,
}

/// Hoffman & Gelman's dual averaging state (γ = 0.05, t₀ = 10, κ = 0.75).
#[derive(Clone, Debug)]
pub(crate) struct DualAveraging {
    mu: f64,
    h_bar: f64,
    log_x: f64,
    log_x_bar: f64,
    t: f64,
}

impl DualAveraging {
    pub(crate) fn new(initial: f64) -> Self {
        DualAveraging { mu: (10.0 * initial).ln(), h_bar: 0.0, log_x: initial.ln(), log_x_bar: 0.0, t: 0.0 }
    }

    /// One update with observed acceptance `accept` toward `target`; returns the next α.
    pub(crate) fn update(&mut self, accept: f64, target: f64) -> f64 {
        const GAMMA: f64 = 0.05;
        const T0: f64 = 10.0;
        const KAPPA: f64 = 0.75;
        self.t += 1.0;
        let w = 1.0 / (self.t + T0);
        self.h_bar = (1.0 - w) * self.h_bar + w * (target - accept);
        self.log_x = self.mu - self.t.sqrt() / GAMMA * self.h_bar;
        let eta = self.t.powf(-KAPPA);
        self.log_x_bar = eta * self.log_x + (1.0 - eta) * self.log_x_bar;
        self.log_x.exp()
    }

    pub(crate) fn averaged(&self) -> f64 {
        self.log_x_bar.exp()
    }
}

/// Per-chain sums of the acceptance probability over a window (summed per chain, so that the
/// total does not depend on how chains are split into tasks).
struct AcceptSums(Vec<f64>);

impl Observer for AcceptSums {
    fn observe(&mut self, _: &StepContext, _: States<'_>, info: &[StepInfo]) {
        for (s, i) in self.0.iter_mut().zip(info) {
            *s += i.accept_prob;
        }
    }
}

/// Dual averaging of the step size of `build(α)` over the adaptation windows `windows`
/// (their indices label the seeds); returns the averaged ᾱ, the final positions and the mean
/// acceptance of the last window.
pub(crate) fn dual_average(
    build: &(dyn Fn(f64) -> Result<Box<dyn dlp_core::Sampler>, SamplerError> + Sync),
    target: &dyn Target,
    x0: &[u32],
    windows: std::ops::Range<usize>,
    opts: &AdaptOptions,
    run: &RunOptions,
) -> Result<(f64, Vec<u32>, f64), SamplerError> {
    // One thread pool for all windows: `run_chains` with `threads = T` builds a pool per call,
    // which at windows of tens of steps costs more than the steps themselves on small models.
    // Inside the pool, `threads = 0` splits the chains over its T threads exactly as
    // `threads = T` does, so the result is the same.
    let windowed = |run: &RunOptions| -> Result<(f64, Vec<u32>, f64), SamplerError> {
        let mut da = DualAveraging::new(opts.initial);
        let mut alpha = opts.initial;
        let mut x = x0.to_vec();
        let mut last_accept = f64::NAN;
        for w in windows.clone() {
            let sampler = build(alpha)?;
            let options = RunOptions { seed: derive_seed(run.seed, &[ADAPT, w as u64]), ..run.clone() };
            let out = run_chains(sampler.as_ref(), target, &x, opts.window, &options, |_, n| AcceptSums(vec![0.0; n]))?;
            let per_chain: Vec<f64> = out.observers.iter().flat_map(|o| o.0.iter().copied()).collect();
            last_accept = per_chain.iter().sum::<f64>() / (per_chain.len() * opts.window) as f64;
            alpha = da.update(last_accept, opts.target_accept);
            x = out.final_states;
        }
        Ok((da.averaged(), x, last_accept))
    };
    if run.threads == 0 {
        return windowed(run);
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(run.threads).build().map_err(|e| {
        SamplerError::BadParameter { sampler: "adaptation".into(), message: format!("thread pool: {e}") }
    })?;
    pool.install(|| windowed(&RunOptions { threads: 0, ..run.clone() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dual_averaging_moves_alpha_the_right_way() {
        // Acceptance above the target makes α grow; below makes it shrink.
        let mut up = DualAveraging::new(0.5);
        let mut down = DualAveraging::new(0.5);
        let (a_up, a_down) = (up.update(0.95, 0.574), down.update(0.1, 0.574));
        assert!(a_up > a_down);
        assert!(a_up > 0.5 && a_down < 5.0);
    }
}
