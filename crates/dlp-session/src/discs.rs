//! One cell of DISCS's sampling benchmark (google-research/discs): a registry sampler on a
//! target, resolved, warmed up and built by this crate's [`Session`], scored by DISCS's ESS of
//! the distance to a reference state ([`dlp_core::stats::DiscsEss`]). Shared by `just reproduce
//! discs` (every sampler on every task) and `dlp discs` (our side of the JAX peer's same run).
//!
//! A cell: uniform random initial states and reference state (DISCS's `get_init_samples`),
//! a burn-in — its [`ADAPT_WINDOWS`] adaptation windows spent adapting the step size toward the row's target
//! acceptance and frozen afterwards, for samplers that adapt (DISCS keeps adapting through the
//! kept steps; we keep the kept kernel fixed so that it is the exact suite's kernel); the rest
//! of the burn-in with the frozen kernel — then the kept steps, whose statistic, evaluations
//! and sampler time are recorded.

use crate::{Request, Session, Spelling, StepSize};
use dlp_core::stats::{DiscsEss, discs_distance};
use dlp_core::{
    Observer, RunOptions, SamplerError, Space, States, StepContext, StepInfo, Target, run_chains, setup_rng,
};
use dlp_samplers::SamplerSpec;
use dlp_samplers::adapt::default_target_accept;
use dlp_samplers::registry::Param;
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// What one (task, sampler) cell measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Cell {
    /// Mean over chains of the per-chain ESS.
    pub ess: f64,
    /// Standard deviation of the per-chain ESS.
    pub ess_std: f64,
    /// Energy evaluations per chain in the kept steps (density + gradient evaluations of one
    /// state, as the sampler's `StepInfo` counts them).
    pub evals_per_chain: f64,
    /// Sampler seconds of the kept steps, all chains (time inside `step`, summed over tasks).
    pub seconds: f64,
    /// Wall seconds of the kept run.
    #[serde(default)]
    pub wall_seconds: f64,
    /// Mean acceptance probability in the kept steps.
    pub accept: f64,
    /// The step size used (adapted, or the row's test value), if the sampler takes one.
    pub step_size: Option<f64>,
    /// How the step size was chosen.
    pub step_size_source: String,
    /// Whether it was adapted in the burn-in.
    #[serde(default)]
    pub adapted: bool,
    /// Mean acceptance probability of the last adaptation window, when there was one: beside
    /// `accept`, it shows whether the chains were still settling when the step froze.
    #[serde(default)]
    pub warmup_accept: Option<f64>,
    /// The kept kernel's name.
    #[serde(default)]
    pub kernel: String,
    /// Mean of the statistic over chains and kept steps.
    pub stat_mean: f64,
}

impl Cell {
    /// ESS per energy evaluation: mean ESS / kept evaluations per chain (DISCS's
    /// `ess / (num_ll_calls · ess_ratio)` at ratio ½ with a constant cost per step).
    pub fn per_eval(&self) -> f64 {
        self.ess / self.evals_per_chain
    }

    /// ESS per second of sampler time for all chains (DISCS: per wall second of its batched step).
    pub fn per_second(&self) -> f64 {
        self.ess / self.seconds
    }
}

/// Records the statistic of every chain at every step, evaluations, acceptance.
struct StatObserver<'a> {
    reference: &'a [u32],
    d: usize,
    series: Vec<Vec<f64>>,
    evals: f64,
    accept: f64,
}

impl Observer for StatObserver<'_> {
    fn observe(&mut self, _: &StepContext, states: States<'_>, info: &[StepInfo]) {
        for (row, s) in states.positions().chunks_exact(self.d).zip(&mut self.series) {
            s.push(discs_distance(row, self.reference));
        }
        for i in info {
            self.evals += f64::from(i.density_evals + i.grad_evals);
            self.accept += i.accept_prob;
        }
    }
}

/// Adaptation windows in a cell's burn-in. Dual averaging moves the step size once per window,
/// so the number of windows, more than the burn-in's length, decides how far a step size can
/// travel from its start: with ten, `alb` and `pas` froze at kept acceptances 0.51–0.77
/// (target 0.574); with forty, 0.54–0.60 on `bernoulli`, `ising`, `fhmm` (800 steps, seed 0).
/// What forty windows do not fix is recorded per cell in `warmup_accept`: `rwm`'s last window
/// sits near its 0.234 but the kept steps fall to 0.13–0.14, since its chains are still
/// settling at the end of a 400-step burn-in (`paper/discs.md`).
pub const ADAPT_WINDOWS: usize = 40;

/// Runs one cell: sampler `name` (its row `spec`) on `target` from the `chains` rows of `x0`
/// for `burn` + `kept` steps, scored against `reference`. Only the kept steps are timed and
/// recorded. A sampler that cannot be configured or cannot run on the target is an `Err` with
/// its own message (the benchmark reports it as a skip).
pub fn run_cell(
    target: &dyn Target,
    name: &str,
    spec: &SamplerSpec,
    (chains, burn, kept): (usize, usize, usize),
    (x0, reference): (Vec<u32>, &[u32]),
    opts: &RunOptions,
) -> Result<Cell, SamplerError> {
    let adapts = spec.adapts_step_size() || spec.adapt.is_some();
    let (step_size, source) = if adapts && burn > 0 {
        (StepSize::Auto, format!("adapted in burn-in toward acceptance {}", default_target_accept(name)))
    } else if let (true, Some(a)) = (spec.takes(Param::StepSize), spec.tests.step_size) {
        (StepSize::Fixed(a), "the row's test value (not tuned)".into())
    } else {
        (StepSize::Without, "none".into())
    };
    let request = Request {
        sampler: name.to_string(),
        step_size,
        step_size_min: None,
        preconditioner: None,
        batch_size: None,
        ladder: None,
        chains,
        steps: burn + kept,
        burn_in: Some(burn),
        thin: 1,
        target_accept: None,
        progress: false,
    };
    let refused = |e: crate::Error| SamplerError::BadParameter { sampler: name.to_string(), message: e.to_string() };
    request.check(Spelling::Flags).map_err(refused)?;
    // ADAPT_WINDOWS adaptation windows over the burn-in (the session's default is 100-step
    // windows, which leave a short burn-in one window).
    let window = (burn / ADAPT_WINDOWS).max(1);
    let session = Session::resolve(request, Spelling::Flags, target).map_err(refused)?.with_window(window);
    let warmed = session.warm_up(target, x0, opts)?;
    let sampler = session.build(&warmed)?;
    let rest = burn - warmed.warmup_steps;
    let x = run_chains(sampler.as_ref(), target, &warmed.positions, rest, opts, |_, _| ())?.final_states;
    let d = target.space().d;
    let out = run_chains(sampler.as_ref(), target, &x, kept, opts, |_, n| StatObserver {
        reference,
        d,
        series: vec![Vec::with_capacity(kept); n],
        evals: 0.0,
        accept: 0.0,
    })?;
    let series: Vec<f64> = out.observers.iter().flat_map(|o| o.series.iter().flatten().copied()).collect();
    let ess = DiscsEss::of(&series, chains);
    let evals: f64 = out.observers.iter().map(|o| o.evals).sum();
    let accept: f64 = out.observers.iter().map(|o| o.accept).sum();
    let n = (chains * kept).max(1) as f64;
    Ok(Cell {
        ess: ess.mean,
        ess_std: ess.std,
        evals_per_chain: evals / chains as f64,
        seconds: out.task_step_seconds.iter().sum(),
        wall_seconds: out.wall_seconds,
        accept: accept / n,
        step_size: warmed.step_size,
        step_size_source: source,
        adapted: session.adapts(),
        warmup_accept: warmed.adaptation.as_ref().map(|a| a.last_accept),
        kernel: sampler.name(),
        stat_mean: series.iter().sum::<f64>() / n,
    })
}

/// DISCS's uniform random initial states (`chains` rows) and reference state, from the setup
/// stream of `seed` (DISCS: `get_init_samples` for both).
pub fn initial_and_reference(space: &Space, chains: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let mut rng = setup_rng(seed);
    let k = space.k() as u32;
    let x0: Vec<u32> = (0..chains * space.d).map(|_| rng.random_range(0..k)).collect();
    let reference: Vec<u32> = (0..space.d).map(|_| rng.random_range(0..k)).collect();
    (x0, reference)
}
