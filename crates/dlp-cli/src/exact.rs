//! `dlp exact`: the exact check of one sampler on one small model. Builds the sampler's
//! one-cycle transition matrix from its exact kernel, finds its class structure (`ergodicity`:
//! irreducible, aperiodic, the closed classes with their target mass and law), solves for the
//! stationary law (GTH per closed class, accurate even when P ≈ I) and reports it beside the
//! target π as JSON (`dlp_exact::exact_report`, schema `dlp.exact.report.v2`): TV to π when
//! the law is unique — for a reducible chain no `stationary` or `total_variation` at all, but
//! each class's law and the limit from a uniform start —, ‖πP − π‖∞ and the detailed-balance
//! residual, and the matrix's mixing rates (`mixing`: spectral gap, absolute gap, SLEM,
//! relaxation time, or `undefined` with the reason for a reducible or periodic chain;
//! `mixing_kernel` says whether that is one step or one sweep of a several-phase kernel).
//! A chain that is not irreducible and aperiodic also gets one `warning:` line on stderr.
//! Spaces above `dlp_exact::matrix::MAX_MATRIX_STATES` states are refused (exit 2) before
//! any work.

use dlp_cli::{CliError, ModelSamplerArgs, atomic_write, check_writable, io_reason};
use dlp_exact::ExactError;
use std::path::PathBuf;

/// The `schema` field of the report.
pub const SCHEMA: &str = "dlp.exact.report.v2";

/// Arguments of `dlp exact`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model and sampler.
    #[command(flatten)]
    pub run: ModelSamplerArgs,
    /// Write the report here (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Exact-suite errors: a refused or reducible input is the user's (exit 2); a malformed
/// transition row is a sampler bug (exit 1).
fn exact_error(e: ExactError) -> CliError {
    match e {
        ExactError::BadRow { .. } => CliError::internal(e),
        _ => CliError::input(e),
    }
}

/// Runs `dlp exact`.
pub fn run(args: Args) -> Result<(), CliError> {
    args.run.check_step_size()?;
    if dlp_samplers::registry::find(&args.run.sampler).is_some_and(|(spec, _)| spec.wraps()) {
        return Err(CliError::Input(format!(
            "{}: a wrapper's kernel lives on the product space of its replicas, not on the model's own \
             states, which dlp exact checks; the exact suite checks it there (crates/dlp-exact/tests/tempering.rs)",
            args.run.sampler
        )));
    }
    let (sampler, model) = args.run.load(None)?;
    if let Some(out) = &args.output {
        check_writable("--output", out)?;
    }
    let target: &dyn dlp_core::Target = &model;
    let space = target.space();
    if let Some(h) = &args.run.preconditioner
        && h.len() != space.d
    {
        return Err(CliError::Input(format!(
            "--preconditioner has {} entries, the model has d = {} coordinates",
            h.len(),
            space.d
        )));
    }
    // Refuse large spaces before building anything (the error names the limit).
    dlp_exact::enumerate::checked_n_states(space, dlp_exact::matrix::MAX_MATRIX_STATES, "dlp exact")
        .map_err(exact_error)?;
    let report = dlp_exact::exact_report(target, sampler.as_ref()).map_err(exact_error)?;
    let erg = &report.ergodicity;
    if !(erg.unique_stationary_law && erg.aperiodic) {
        let what = if erg.unique_stationary_law {
            "its law is unique but the chain does not converge to it".to_string()
        } else {
            "no unique stationary law; the report gives each closed class's law and the limit from a uniform start"
                .to_string()
        };
        // The registry's reason, where the row flags this model, says why.
        let why = dlp_samplers::registry::not_ergodic_on(&args.run.sampler, space)
            .map_or(String::new(), |w| format!(" ({})", dlp_cli::one_line(&w)));
        eprintln!("warning: {} on this model is {}: {what}{why}", report.sampler, erg.verdict);
    }
    let mut json = serde_json::to_value(&report).map_err(CliError::internal)?;
    if let Some(obj) = json.as_object_mut() {
        obj.insert("schema".into(), SCHEMA.into());
        obj.insert("model".into(), args.run.model.display().to_string().into());
    }
    let mut text = serde_json::to_string_pretty(&json).map_err(CliError::internal)?;
    text.push('\n');
    match &args.output {
        Some(out) => atomic_write(out, text.as_bytes())
            .map_err(|e| CliError::Input(format!("--output {}: cannot write: {}", out.display(), io_reason(&e)))),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
