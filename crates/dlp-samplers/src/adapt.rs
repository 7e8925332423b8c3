//! Warm-up step-size adaptation: dual averaging of log α toward a target acceptance rate
//! (Nesterov 2009, in the form of Hoffman & Gelman 2014, Alg. 5 — the scheme Stan and BlackJAX
//! use), for Metropolis-adjusted samplers with a step size (`dmala`, `pdmala`, `dmala-f32`, …).
//!
//! The warm-up runs in windows of `window` steps. Each window is an ordinary run of the sampler
//! built with the window's α (so the chains, caches and fast paths are the fixed-α ones),
//! seeded by `derive_seed(seed, [ADAPT, w])`; after it the mean acceptance probability over
//! all chains and steps of the window updates log α. Chains restart from their positions with
//! the new α (re-computing their caches, one gradient per chain per window: with the default
//! window of [`DEFAULT_WINDOW`] = 100 steps that is ≤ 1% of the warm-up's gradient
//! evaluations, and ≤ 5% of its time on the lattice fast path). The mean is summed
//! per chain and then over chains in chain order, so α — and everything after it — is the same
//! for any thread count. After the warm-up α is frozen at the averaged iterate ᾱ: the samples
//! the caller keeps come from the fixed-α kernel (`build_sampler(name, α)`), which is the
//! sampler the exact suite checks.
//!
//! Not adapted: unadjusted samplers (DULA: acceptance is always 1), preconditioners, or one α
//! per chain (one α for all chains keeps them one kernel).

use crate::registry::{SamplerParams, build_sampler};
use dlp_core::rng::derive_seed;
use dlp_core::{Observer, RunOptions, SamplerError, States, StepContext, StepInfo, Target, run_chains};

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
        AdaptOptions { warmup: 1000, target_accept: 0.574, window: DEFAULT_WINDOW, initial: 0.5 }
    }
}

/// What the warm-up chose.
#[derive(Clone, Debug, PartialEq)]
pub struct Adapted {
    /// The frozen step size ᾱ (α_max for cyclical DMALA).
    pub step_size: f64,
    /// The frozen α_min of cyclical DMALA (`None` for other samplers).
    pub step_size_min: Option<f64>,
    /// Positions of the chains after the warm-up (`n × d`).
    pub positions: Vec<u32>,
    /// Mean acceptance probability of the last window.
    pub last_accept: f64,
    /// Windows run.
    pub windows: usize,
}

/// Hoffman & Gelman's dual averaging state (γ = 0.05, t₀ = 10, κ = 0.75).
#[derive(Clone, Debug)]
struct DualAveraging {
    mu: f64,
    h_bar: f64,
    log_x: f64,
    log_x_bar: f64,
    t: f64,
}

impl DualAveraging {
    fn new(initial: f64) -> Self {
        DualAveraging { mu: (10.0 * initial).ln(), h_bar: 0.0, log_x: initial.ln(), log_x_bar: 0.0, t: 0.0 }
    }

    /// One update with observed acceptance `accept` toward `target`; returns the next α.
    fn update(&mut self, accept: f64, target: f64) -> f64 {
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

    fn averaged(&self) -> f64 {
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

/// Adapts the step size of sampler `name` (with `params`' other parameters) on `target` from
/// the chains at `x0`. Refuses samplers without a step size or without an MH test. Cyclical
/// DMALA (`acs-dmala`) tunes its α_min and α_max instead ([`adapt_acs`]).
pub fn adapt_step_size(
    name: &str,
    params: &SamplerParams,
    target: &dyn Target,
    x0: &[u32],
    opts: &AdaptOptions,
    run: &RunOptions,
) -> Result<Adapted, SamplerError> {
    let bad = |message: String| SamplerError::BadParameter { sampler: name.to_string(), message };
    let (spec, parsed) = crate::registry::find(name)
        .ok_or_else(|| SamplerError::UnknownSampler(name.into(), crate::registry::sampler_names().join(", ")))?;
    if !spec.adapts_step_size() {
        return Err(bad(
            "step-size adaptation needs a Metropolis-adjusted sampler with a step size (e.g. dmala)".into()
        ));
    }
    if !(opts.target_accept > 0.0 && opts.target_accept < 1.0) {
        return Err(bad(format!("target acceptance must be in (0, 1), got {}", opts.target_accept)));
    }
    if opts.window == 0 || opts.warmup == 0 || !(opts.initial.is_finite() && opts.initial > 0.0) {
        return Err(bad("adaptation needs warm-up steps, a window ≥ 1 and an initial step size > 0".into()));
    }
    if parsed.stem == "acs-dmala" {
        return adapt_acs(params, target, x0, opts, run);
    }
    let windows = (opts.warmup / opts.window).max(1);
    let build = |alpha: f64| build_sampler(name, &SamplerParams { step_size: Some(alpha), ..params.clone() });
    let (step_size, positions, last_accept) = dual_average(&build, target, x0, 0..windows, opts, run)?;
    Ok(Adapted { step_size, step_size_min: None, positions, last_accept, windows })
}

/// The default target acceptance of `name`'s adaptation: 0.5 for cyclical DMALA (the
/// official ACS scripts' `a_s_cut`, used for both α_min and α_max), else 0.574 (module doc).
pub fn default_target_accept(name: &str) -> f64 {
    match crate::registry::find(name) {
        Some((_, parsed)) if parsed.stem == "acs-dmala" => 0.5,
        _ => 0.574,
    }
}

/// Automatic tuning of cyclical DMALA ([`crate::acs`]): the first half of the warm-up's
/// windows adapts α_min for plain DMALA (β = ½), the second half α_max for DMALA with the
/// gradient weighted by β_max, both toward `opts.target_accept`. Both are then capped at 5
/// and α_max is raised to α_min if smaller. 5 is where the official code's α_max search
/// starts (`init_big_step` in `rbm_sample.py`), which it only ever shrinks: on weakly coupled
/// models the β_max proposal keeps its acceptance above target at any α, and dual averaging
/// would grow α without bound. With α_max = α_min the cycle is plain DMALA at α_min.
pub fn adapt_acs(
    params: &SamplerParams,
    target: &dyn Target,
    x0: &[u32],
    opts: &AdaptOptions,
    run: &RunOptions,
) -> Result<Adapted, SamplerError> {
    use crate::dlp::{DlpProposal, DlpSampler};
    let windows = (opts.warmup / opts.window).max(2);
    let half = windows / 2;
    let phase = |beta: f64| {
        move |alpha: f64| -> Result<Box<dyn dlp_core::Sampler>, SamplerError> {
            let p = DlpProposal::new(alpha, params.preconditioner.clone())
                .and_then(|p| p.with_balance(beta))
                .map_err(|message| SamplerError::BadParameter { sampler: "acs-dmala".into(), message })?;
            Ok(Box::new(DlpSampler::new("acs-dmala", true, p)))
        }
    };
    let (alpha_min, x, _) = dual_average(&phase(0.5), target, x0, 0..half, opts, run)?;
    let (alpha_max, positions, last_accept) =
        dual_average(&phase(crate::acs::DEFAULT_BETA_MAX), target, &x, half..windows, opts, run)?;
    let alpha_min = alpha_min.min(crate::acs::ALPHA_MAX_CAP);
    let alpha_max = alpha_max.min(crate::acs::ALPHA_MAX_CAP).max(alpha_min);
    Ok(Adapted { step_size: alpha_max, step_size_min: Some(alpha_min), positions, last_accept, windows })
}

/// Dual averaging of the step size of `build(α)` over the adaptation windows `windows`
/// (their indices label the seeds); returns the averaged ᾱ, the final positions and the mean
/// acceptance of the last window.
fn dual_average(
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
    use dlp_core::testing::Quadratic;

    /// A 5×5 periodic Ising model in the fig3 setup (σ = 0.1 per edge, b = 0.2, spin), written
    /// as the quadratic f(x) = xᵀWx + bᵀx on bits.
    fn ising_5x5() -> Quadratic {
        let (l, d) = (5usize, 25usize);
        let (sigma, field) = (0.1, 0.2);
        // f(s) = σ Σ_{edges} 2 s_i s_j + b Σ s_i with s = 2x − 1, expanded on bits: each edge
        // contributes 2σ(4 x_i x_j − 2x_i − 2x_j + 1) — the constant drops out of π, and xᵀWx counts
        // W_ij once.
        let mut w = vec![0.0; d * d];
        let mut b = vec![2.0 * field; d];
        for r in 0..l {
            for c in 0..l {
                let i = r * l + c;
                for j in [((r + 1) % l) * l + c, r * l + (c + 1) % l] {
                    w[i * d + j] += 8.0 * sigma;
                    b[i] -= 4.0 * sigma;
                    b[j] -= 4.0 * sigma;
                }
            }
        }
        Quadratic::new(dlp_core::Space::binary(d), w, b)
    }

    struct Accepts(f64, usize);
    impl Observer for Accepts {
        fn observe(&mut self, _: &StepContext, _: States<'_>, info: &[StepInfo]) {
            self.0 += info.iter().map(|i| i.accept_prob).sum::<f64>();
            self.1 += info.len();
        }
    }

    /// Adapted DMALA on the fig3-type model: then a fixed-α run's mean acceptance lies in
    /// 0.5–0.65 (the criterion). Deterministic given the seeds (no false-failure rate:
    /// 32 chains × 2,000 steps average out the acceptance to ±0.01 here, well inside the band).
    #[test]
    fn dmala_adapts_into_the_target_band_and_is_thread_independent() {
        let t = ising_5x5();
        let x0 = vec![0u32; 32 * 25];
        let opts = AdaptOptions { warmup: 1500, ..AdaptOptions::default() };
        let run = |threads| {
            let r = RunOptions { seed: 3, threads, chains_per_task: 0 };
            adapt_step_size("dmala", &SamplerParams::default(), &t, &x0, &opts, &r).unwrap()
        };
        let a = run(1);
        assert_eq!(a, run(2), "adaptation must not depend on the thread count");
        assert_eq!(a.windows, 1500 / DEFAULT_WINDOW);
        let fixed =
            build_sampler("dmala", &SamplerParams { step_size: Some(a.step_size), ..Default::default() }).unwrap();
        let o = RunOptions { seed: 4, threads: 2, chains_per_task: 0 };
        let out = run_chains(fixed.as_ref(), &t, &a.positions, 2000, &o, |_, _| Accepts(0.0, 0)).unwrap();
        let acc =
            out.observers.iter().map(|o| o.0).sum::<f64>() / out.observers.iter().map(|o| o.1).sum::<usize>() as f64;
        assert!((0.5..=0.65).contains(&acc), "α = {}: acceptance {acc}", a.step_size);
        // The band is not met by accident: a step size ten times larger misses it.
        let big = build_sampler("dmala", &SamplerParams { step_size: Some(10.0 * a.step_size), ..Default::default() })
            .unwrap();
        let out = run_chains(big.as_ref(), &t, &a.positions, 500, &o, |_, _| Accepts(0.0, 0)).unwrap();
        let acc_big =
            out.observers.iter().map(|o| o.0).sum::<f64>() / out.observers.iter().map(|o| o.1).sum::<usize>() as f64;
        assert!(acc_big < 0.5, "10 α: acceptance {acc_big}");
    }

    /// Cyclical DMALA's tuning on the fig3-type model: thread-independent, α_min ≤ α_max ≤ 5,
    /// and plain DMALA at the tuned α_min accepts near the ACS target 0.5 (band 0.4–0.6;
    /// deterministic given the seeds, and 32 chains × 2,000 steps pin the mean acceptance to
    /// about ±0.01, so the band is not at the edge of the noise).
    #[test]
    fn acs_tunes_alpha_min_and_alpha_max() {
        let t = ising_5x5();
        let x0 = vec![0u32; 32 * 25];
        let opts =
            AdaptOptions { warmup: 1600, target_accept: default_target_accept("acs-dmala"), ..Default::default() };
        assert_eq!(opts.target_accept, 0.5);
        let run = |threads| {
            let r = RunOptions { seed: 5, threads, chains_per_task: 0 };
            adapt_step_size("acs-dmala", &SamplerParams::default(), &t, &x0, &opts, &r).unwrap()
        };
        let a = run(1);
        assert_eq!(a, run(2), "adaptation must not depend on the thread count");
        let alpha_min = a.step_size_min.expect("acs reports α_min");
        assert!(alpha_min <= a.step_size && a.step_size <= crate::acs::ALPHA_MAX_CAP, "{a:?}");
        let fixed =
            build_sampler("dmala", &SamplerParams { step_size: Some(alpha_min), ..Default::default() }).unwrap();
        let o = RunOptions { seed: 6, threads: 2, chains_per_task: 0 };
        let out = run_chains(fixed.as_ref(), &t, &a.positions, 2000, &o, |_, _| Accepts(0.0, 0)).unwrap();
        let acc =
            out.observers.iter().map(|o| o.0).sum::<f64>() / out.observers.iter().map(|o| o.1).sum::<usize>() as f64;
        assert!((0.4..=0.6).contains(&acc), "α_min = {alpha_min}: acceptance {acc}");
        // The tuned values build the sampler the exact suite checks.
        let p = SamplerParams { step_size: Some(a.step_size), step_size_min: Some(alpha_min), ..Default::default() };
        assert!(build_sampler("acs-dmala", &p).is_ok());
    }

    #[test]
    fn dual_averaging_moves_alpha_the_right_way() {
        // Acceptance above the target makes α grow; below makes it shrink.
        let mut up = DualAveraging::new(0.5);
        let mut down = DualAveraging::new(0.5);
        let (a_up, a_down) = (up.update(0.95, 0.574), down.update(0.1, 0.574));
        assert!(a_up > a_down);
        assert!(a_up > 0.5 && a_down < 5.0);
    }

    #[test]
    fn unadjusted_and_stepless_samplers_are_refused() {
        let t = Quadratic::spec_tiny();
        let r = RunOptions::default();
        for name in ["dula", "gibbs", "sg-dmala", "nope"] {
            assert!(
                adapt_step_size(name, &SamplerParams::default(), &t, &[0, 0, 0], &AdaptOptions::default(), &r).is_err(),
                "{name}"
            );
        }
    }
}
