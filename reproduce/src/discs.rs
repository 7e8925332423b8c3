//! DISCS's sampling benchmark (google-research/discs; issue 43): every registry sampler on
//! DISCS's classical tasks ([`dlp_models::discs`]), scored by DISCS's ESS of the distance to a
//! random reference state ([`dlp_core::stats::DiscsEss`]) per energy evaluation and per second.
//!
//! One cell = one (task, sampler): uniform random initial states and reference state (DISCS's
//! `get_init_samples`), a burn-in of ⌊L·r⌋ steps — its ten adaptation windows spent adapting
//! the step size, frozen afterwards, for samplers that adapt (DISCS keeps adapting through the
//! kept steps; we keep the kept kernel fixed so that it is the exact suite's kernel) — then the
//! kept steps, whose statistic, evaluations and sampler time are recorded.

use anyhow::Result;
use dlp_core::stats::{DiscsEss, discs_distance};
use dlp_core::{Observer, RunOptions, Space, States, StepContext, StepInfo, Target, run_chains, setup_rng};
use dlp_exact::mean_variance;
use dlp_samplers::SamplerSpec;
use dlp_samplers::adapt::default_target_accept;
use dlp_samplers::registry::{Param, REGISTRY, find};
use dlp_session::{Request, Session, Spelling, StepSize};
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// DISCS's configuration of a family where it has one (`discs/samplers/configs/*.py`):
/// hammingball `block_size = 10` with one flip (hb-10-1), blockgibbs `block_size = 2` (bg-2),
/// path auxiliary `num_flips = 1` (pas-1 for the fixed-length row).
const DISCS_FORMS: [&str; 3] = ["hb-10-1", "bg-2", "pas-1"];

/// The registry's samplers as this benchmark runs them: each row once, under DISCS's
/// configuration of it if there is one, else the row's first test name, else its stem; with
/// the reason when a row cannot run on DISCS's tasks at all.
pub fn samplers() -> Vec<(String, &'static SamplerSpec, Option<String>)> {
    REGISTRY
        .iter()
        .map(|spec| {
            let mine = |n: &&str| find(n).is_some_and(|(s, _)| std::ptr::eq(s, spec));
            let name = DISCS_FORMS
                .iter()
                .copied()
                .find(mine)
                .or(spec.tests.names.first().copied())
                .unwrap_or(spec.stem)
                .to_string();
            let why = if spec.needs_data {
                Some("needs a data model (minibatch gradients); DISCS's tasks have no data terms".to_string())
            } else if spec.requires(Param::Preconditioner) {
                Some("needs a preconditioner vector, which DISCS's tasks do not define".to_string())
            } else if spec.particles {
                Some("interacting particles: no Markov chain for DISCS's per-chain ESS".to_string())
            } else {
                None
            };
            (name, spec, why)
        })
        .collect()
}

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
    /// Mean acceptance probability in the kept steps.
    pub accept: f64,
    /// The step size used (adapted, or the row's test value), if the sampler takes one.
    pub step_size: Option<f64>,
    /// How the step size was chosen.
    pub step_size_source: String,
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
    steps: usize,
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
        self.steps += 1;
    }
}

/// Runs one cell: sampler `name` on `target` with `chains` chains for `burn` + `kept` steps.
/// The sampler is resolved, warmed up and built by the session every front end uses
/// ([`dlp_session::Session`]): samplers that adapt spend the burn-in's ten whole adaptation
/// windows adapting (then what is left of the burn-in with the frozen kernel); the others take
/// the row's test step size, if any. Only the kept steps are timed and recorded.
pub fn run_cell(
    target: &dyn Target,
    name: &str,
    spec: &SamplerSpec,
    (chains, burn, kept): (usize, usize, usize),
    seed: u64,
    threads: usize,
) -> Result<Cell> {
    let space = target.space();
    let (x0, reference) = initial_and_reference(space, chains, seed);
    let opts = RunOptions { seed, threads, chains_per_task: 0 };
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
    request.check(Spelling::Flags)?;
    // Ten adaptation windows over the burn-in (the session's default is 100-step windows).
    let session = Session::resolve(request, Spelling::Flags, target)?.with_window((burn / 10).max(1));
    let warmed = session.warm_up(target, x0, &opts)?;
    let sampler = session.build(&warmed)?;
    let rest = burn - warmed.warmup_steps;
    let x = run_chains(sampler.as_ref(), target, &warmed.positions, rest, &opts, |_, _| ())?.final_states;
    let out = run_chains(sampler.as_ref(), target, &x, kept, &opts, |_, n| StatObserver {
        reference: &reference,
        d: space.d,
        series: vec![Vec::with_capacity(kept); n],
        evals: 0.0,
        accept: 0.0,
        steps: 0,
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
        accept: accept / n,
        step_size: warmed.step_size,
        step_size_source: source,
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

/// The statistic's exact mean and variance on an enumerable task, for the reference state of
/// a cell with `chains` and `seed`.
pub fn exact_statistic(target: &dyn Target, chains: usize, seed: u64) -> Result<(f64, f64)> {
    let (_, reference) = initial_and_reference(target.space(), chains, seed);
    Ok(mean_variance(target, &|x: &[u32]| discs_distance(x, &reference))?)
}

/// A cell's outcome: measured, or why the sampler cannot run on the task (its start error).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Outcome {
    /// It ran.
    Ran(Cell),
    /// It cannot run on this task's space or model; the sampler's own message.
    Skipped(String),
}

/// One cell as an [`Outcome`]: a sampler error (a space it does not handle, a capability the
/// model lacks) becomes a skip with its message; anything else stays an error.
pub fn outcome(
    target: &dyn Target,
    name: &str,
    spec: &SamplerSpec,
    shape: (usize, usize, usize),
    seed: u64,
    threads: usize,
) -> Result<Outcome> {
    match run_cell(target, name, spec, shape, seed, threads) {
        Ok(c) => Ok(Outcome::Ran(c)),
        Err(e) => match e.downcast_ref::<dlp_core::SamplerError>() {
            Some(se) => Ok(Outcome::Skipped(se.to_string())),
            None => Err(e),
        },
    }
}

/// The statistic's z-score against its exact mean: (chain mean − E_π h) / √(Var_π h / (ESS ·
/// chains)), the error in standard errors that DISCS's own ESS implies.
pub fn z_score(cell: &Cell, chains: usize, (mean, var): (f64, f64)) -> f64 {
    (cell.stat_mean - mean) / (var / (cell.ess * chains as f64)).sqrt()
}

/// A task of the run: a generated DISCS task by name, or any `dlp.model.v1` file by path (e.g.
/// an RBM trained here by `fig4`, which writes `rbm.json`): its model, whether it is small
/// enough to enumerate, and a line saying what it is and where it comes from.
pub fn load_task(name: &str) -> Result<(dlp_models::Model, bool, String)> {
    if let Some(t) = dlp_models::discs::find(name) {
        return Ok((t.model()?, t.enumerable, format!("{} [{}]", t.doc, t.source)));
    }
    let path = std::path::Path::new(name);
    if !path.is_file() {
        let names: Vec<&str> = dlp_models::discs::TASKS.iter().map(|t| t.name).collect();
        anyhow::bail!("--tasks: {name:?} is neither a DISCS task ({}) nor a model file", names.join(", "));
    }
    let model = dlp_models::load_model(path)?;
    let small = model.space().n_states().is_some_and(|n| n <= 1 << 16);
    Ok((model, small, format!("model file {name}")))
}
