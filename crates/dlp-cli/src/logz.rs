//! `dlp logz`: the log partition function log Z = log Σ_x exp f(x) of a model file, exactly by
//! enumeration (`--method exact`, spaces of at most [`MAX_EXACT_STATES`] states) or by annealed
//! importance sampling (`--method ais`, `dlp_samplers::ais`: uniform base q over the model's
//! space, linear β schedule of `--temperatures` steps, one `--sampler` transition per step).
//! Prints one JSON object: method, log_z, std_err (delta method over the chains; 0 for exact),
//! chains, temperatures, sampler, seed, ess, seconds (null where a field does not apply).
//!
//! For a data model (`bnn`, `logistic`) f is the unnormalised log posterior, so log Z is the log
//! evidence. The base is uniform for every kind: a model file says nothing about a better one
//! (the deep EBMs of Table 1 use their Bernoulli base through the library instead).

use dlp_cli::{CliError, progress_bar, sampler_help};
use dlp_core::Target;
use dlp_samplers::ais::{AisOptions, ProductBase, run_ais};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

/// Largest space `--method exact` enumerates (2^24 states: seconds for the model zoo).
pub const MAX_EXACT_STATES: u64 = 1 << 24;

/// How log Z is computed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Enumerate every state (at most 2^24).
    Exact,
    /// Annealed importance sampling from the uniform distribution.
    Ais,
}

/// Arguments of `dlp logz`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model file (`dlp.model.v1`, JSON or TOML).
    #[arg(long, value_name = "FILE")]
    pub model: PathBuf,
    /// `exact` (enumeration) or `ais`.
    #[arg(long, value_enum)]
    pub method: Method,
    /// AIS: independent chains (≥ 2; default 100).
    #[arg(long)]
    pub chains: Option<usize>,
    /// AIS: annealing steps K, β_k = k/K (default 1000).
    #[arg(long)]
    pub temperatures: Option<usize>,
    /// AIS: the transition kernel (default gwg, the official evaluation's kernel).
    #[arg(long, help = sampler_help())]
    pub sampler: Option<String>,
    /// AIS: step size α of samplers that take one (dmala, dula, …).
    #[arg(long, allow_negative_numbers = true)]
    pub step_size: Option<f64>,
    /// AIS: master seed; chain j uses stream j+1 (default 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// AIS: worker threads (0 = one per core; default 0). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs `dlp logz`.
pub fn run(args: Args) -> Result<(), CliError> {
    let out = match args.method {
        Method::Exact => exact(&args)?,
        Method::Ais => ais(&args)?,
    };
    println!("{}", serde_json::to_string(&out).map_err(CliError::internal)?);
    Ok(())
}

fn exact(args: &Args) -> Result<serde_json::Value, CliError> {
    let given = [
        ("--chains", args.chains.is_some()),
        ("--temperatures", args.temperatures.is_some()),
        ("--sampler", args.sampler.is_some()),
        ("--step-size", args.step_size.is_some()),
        ("--seed", args.seed.is_some()),
        ("--threads", args.threads.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        return Err(CliError::Input(format!("{flag} applies to --method ais only")));
    }
    let model = dlp_models::load_model(&args.model).map_err(CliError::input)?;
    let target: &dyn Target = &model;
    let n_states = dlp_exact::enumerate::checked_n_states(target.space(), MAX_EXACT_STATES, "dlp logz --method exact")
        .map_err(|e| CliError::Input(format!("{e}; use --method ais")))?;
    let t0 = Instant::now();
    let options = dlp_exact::EnumOptions { pair_moments: false, keep_probs: false };
    let e = dlp_exact::enumerate(target, &options).map_err(CliError::input)?;
    Ok(json!({
        "method": "exact", "log_z": e.log_z, "std_err": 0.0, "chains": null, "temperatures": null,
        "sampler": null, "seed": null, "ess": null, "seconds": t0.elapsed().as_secs_f64(),
        "n_states": n_states, "model": args.model.display().to_string(),
    }))
}

fn ais(args: &Args) -> Result<serde_json::Value, CliError> {
    let chains = args.chains.unwrap_or(100);
    if chains < 2 {
        return Err(CliError::Input(format!(
            "--chains must be at least 2 (the standard error needs a spread), got {chains}"
        )));
    }
    let temperatures = args.temperatures.unwrap_or(1000);
    if temperatures == 0 {
        return Err(CliError::input("--temperatures must be at least 1"));
    }
    if let Some(a) = args.step_size
        && !(a.is_finite() && a > 0.0)
    {
        return Err(CliError::Input(format!("--step-size must be a finite number > 0, got {a}")));
    }
    let name = args.sampler.clone().unwrap_or_else(|| "gwg".into());
    // Refused by name first: building a stochastic-gradient sampler would ask for a batch size.
    match dlp_samplers::registry::find(&name) {
        Some((spec, _)) if spec.needs_data => {
            return Err(CliError::Input(format!(
                "--sampler {name} reads minibatches; AIS needs exact transitions (e.g. gwg, dmala, gibbs)"
            )));
        }
        Some((spec, _)) if spec.particles => {
            return Err(CliError::Input(format!(
                "--sampler {name} moves interacting particles; AIS needs a Markov transition per chain (e.g. gwg, dmala)"
            )));
        }
        _ => {}
    }
    let params = dlp_samplers::SamplerParams { step_size: args.step_size, ..Default::default() };
    let sampler = dlp_samplers::build_sampler(&name, &params).map_err(CliError::input)?;
    let model = dlp_models::load_model(&args.model).map_err(CliError::input)?;
    let target: &dyn Target = &model;
    let base = ProductBase::uniform(target.space());
    let (seed, threads) = (args.seed.unwrap_or(0), args.threads.unwrap_or(0));
    let opts = AisOptions { chains, temperatures, seed, threads };
    let bar = progress_bar(temperatures as u64, "ais", args.quiet);
    let t0 = Instant::now();
    let est = run_ais(target, &base, sampler.as_ref(), &opts, &mut |k| bar.set_position(k as u64))
        .map_err(CliError::from_run)?;
    bar.finish_and_clear();
    Ok(json!({
        "method": "ais", "log_z": est.log_z, "std_err": est.std_err, "chains": chains,
        "temperatures": temperatures, "sampler": sampler.name(), "seed": seed, "ess": est.ess,
        "seconds": t0.elapsed().as_secs_f64(), "mean_accept": est.mean_accept, "base": "uniform",
        "model": args.model.display().to_string(),
    }))
}
