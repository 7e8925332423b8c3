//! DISCS's sampling benchmark (google-research/discs; issue 43): every registry sampler on
//! DISCS's classical tasks ([`dlp_models::discs`]), scored by DISCS's ESS of the distance to a
//! random reference state ([`dlp_core::stats::DiscsEss`]) per energy evaluation and per second.
//!
//! One cell = one (task, sampler), run by `dlp_session::discs::run_cell` (shared with `dlp
//! discs`, our side of the JAX peer): uniform random initial states and reference state,
//! a burn-in of ⌊L·r⌋ steps (`dlp_session::discs::ADAPT_WINDOWS` adaptation windows for
//! samplers that adapt, frozen after), then the kept steps, whose statistic, evaluations and sampler time are recorded.

use anyhow::Result;
use dlp_core::stats::discs_distance;
use dlp_core::{RunOptions, Target};
use dlp_exact::mean_variance;
use dlp_samplers::SamplerSpec;
use dlp_samplers::registry::{Param, REGISTRY, find};
pub use dlp_session::discs::{Cell, initial_and_reference};
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
            (name, spec, cannot_run(spec))
        })
        .collect()
}

/// The samplers called `names` (any name the registry resolves, e.g. `pas-3` or `rw-2`),
/// each with the reason it cannot run on DISCS's tasks, if any; an unknown name is an error.
pub fn named_samplers(names: &[String]) -> anyhow::Result<Vec<(String, &'static SamplerSpec, Option<String>)>> {
    names
        .iter()
        .map(|n| {
            let (spec, _) =
                find(n).ok_or_else(|| anyhow::anyhow!("--samplers: no registry sampler is called '{n}'"))?;
            Ok((n.clone(), spec, cannot_run(spec)))
        })
        .collect()
}

/// Why a registry row cannot run on DISCS's tasks at all, if it cannot.
fn cannot_run(spec: &SamplerSpec) -> Option<String> {
    if spec.needs_data {
        Some("needs a data model (minibatch gradients); DISCS's tasks have no data terms".to_string())
    } else if spec.requires(Param::Preconditioner) {
        Some("needs a preconditioner vector, which DISCS's tasks do not define".to_string())
    } else if spec.particles {
        Some("interacting particles: no Markov chain for DISCS's per-chain ESS".to_string())
    } else {
        None
    }
}

/// Runs one cell (`dlp_session::discs::run_cell`) from DISCS's initial states and reference
/// state for `seed`.
pub fn run_cell(
    target: &dyn Target,
    name: &str,
    spec: &SamplerSpec,
    shape: (usize, usize, usize),
    seed: u64,
    threads: usize,
) -> Result<Cell, dlp_core::SamplerError> {
    let (x0, reference) = initial_and_reference(target.space(), shape.0, seed);
    let opts = RunOptions { seed, threads, chains_per_task: 0 };
    dlp_session::discs::run_cell(target, name, spec, shape, (x0, &reference), &opts)
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
        Err(e) => Ok(Outcome::Skipped(e.to_string())),
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
