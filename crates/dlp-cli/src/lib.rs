//! Shared plumbing of the `dlp` binary: the error type that fixes exit codes (from
//! `dlp-session`, shared with the Python package), one-line error messages, atomic file writes
//! and the model/sampler flags. Each subcommand lives in its own module
//! of the binary (`src/<subcommand>.rs`) and returns [`CliError`].

use std::path::{Path, PathBuf};

/// Why a subcommand failed; decides the exit code (`gof.md` §10.5): bad input exits 2, an
/// internal or device failure 1. The session library's error, shared with the Python package.
pub use dlp_session::Error as CliError;

/// Joins a multi-line message into one line (`dlp_core::io::one_line`).
pub use dlp_core::io::one_line;

/// Turns a clap error's rendering (`error: …\n\n  --model <MODEL>\n\nUsage: …`) into the text
/// of a single `error:` line: the part before the usage block, joined on one line.
pub fn clap_error_text(rendered: &str) -> String {
    let body = rendered.split("\nUsage:").next().unwrap_or(rendered);
    let body = body.split("\nFor more information").next().unwrap_or(body);
    // clap quotes the value the user typed as it is; a terminal escape or NUL in it must not
    // reach the terminal, so control characters left after joining the lines are escaped.
    let text: String = one_line(body)
        .chars()
        .map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() })
        .collect();
    text.strip_prefix("error:").map(str::trim).unwrap_or(&text).to_string()
}

/// The directory a file will be written into (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Checks, before any work is done, that `path` can be written atomically: its directory
/// exists and accepts a temporary file, and `path` is not a directory. The flag name
/// (`--out`) goes into the message.
pub fn check_writable(flag: &str, path: &Path) -> Result<(), CliError> {
    if path.is_dir() {
        return Err(CliError::Input(format!("{flag} {}: is a directory", path.display())));
    }
    let dir = parent_dir(path);
    tempfile::NamedTempFile::new_in(&dir)
        .map(drop)
        .map_err(|e| CliError::Input(format!("{flag} {}: cannot write there: {}", path.display(), io_reason(&e))))
}

pub use dlp_core::io::io_reason;

/// The `--sampler` help, generated from the sampler registry so it lists every family.
pub fn sampler_help() -> String {
    let forms = dlp_samplers::registry::form_list();
    format!("Sampler name: {forms} (`dlp samplers`: what each is and its flags; `dlp exact`: one with an exact kernel)")
}

/// `--step-size`: a number, or `auto` (warm-up adaptation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepSize {
    /// Adapt during the warm-up.
    Auto,
    /// This α.
    Fixed(f64),
}

/// Parses `auto` or a number (checked later, so that a bad number gets the usual message).
fn parse_step_size(s: &str) -> Result<StepSize, String> {
    if s == "auto" {
        return Ok(StepSize::Auto);
    }
    s.parse::<f64>().map(StepSize::Fixed).map_err(|_| format!("expected a number or `auto`, got {s:?}"))
}

/// The model and sampler flags that `dlp sample` and `dlp exact` share.
#[derive(clap::Args, Debug)]
pub struct ModelSamplerArgs {
    /// Model file (`dlp.model.v1`, JSON or TOML).
    #[arg(long, value_name = "FILE")]
    pub model: PathBuf,
    /// Sampler name; the help text lists the registered ones ([`sampler_help`]).
    #[arg(long, help = sampler_help())]
    pub sampler: String,
    /// Step size α of DLP samplers, in {0,1} units for binary and spin models, or `auto`:
    /// adapt it during the warm-up (`dlp sample` only; the default for Metropolis-adjusted
    /// samplers with a step size, e.g. dmala).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_step_size)]
    pub step_size: Option<StepSize>,
    /// Diagonal preconditioner h_1,…,h_d of pdula/pdmala.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_name = "H1,H2,…")]
    pub preconditioner: Option<Vec<f64>>,
    /// Smallest step size α_min of the cyclical samplers (acs-dmala, acs-dula); with
    /// `--step-size auto` it is tuned in the warm-up too.
    #[arg(long, allow_negative_numbers = true)]
    pub step_size_min: Option<f64>,
    /// Inverse temperatures 1 = β₁ > … > β_K > 0 of parallel tempering (`pt-<K>:<inner>`);
    /// `dlp sample` adapts them toward equal swap rates when none are given.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_name = "B1,B2,…")]
    pub ladder: Option<Vec<f64>>,
}

impl ModelSamplerArgs {
    /// `--step-size`, if given, must be finite and > 0.
    pub fn check_step_size(&self) -> Result<(), CliError> {
        match self.step_size {
            Some(StepSize::Fixed(a)) if !(a.is_finite() && a > 0.0) => {
                Err(CliError::Input(format!("--step-size must be a finite number > 0, got {a}")))
            }
            _ => match self.step_size_min {
                Some(a) if !(a.is_finite() && a > 0.0) => {
                    Err(CliError::Input(format!("--step-size-min must be a finite number > 0, got {a}")))
                }
                _ => Ok(()),
            },
        }
    }

    /// The sampler parameters with the fixed `--step-size` (`dlp sample`'s adaptation is
    /// `dlp_session`'s).
    pub fn params(&self, batch_size: Option<usize>) -> dlp_samplers::SamplerParams {
        let fixed = match self.step_size {
            Some(StepSize::Fixed(a)) => Some(a),
            _ => None,
        };
        dlp_samplers::SamplerParams {
            step_size: fixed,
            preconditioner: self.preconditioner.clone(),
            batch_size,
            step_size_min: self.step_size_min,
            ladder: self.ladder.clone(),
        }
    }

    /// The named sampler with these parameters (and `batch_size`), then the model file.
    /// `--step-size auto` is refused here: only `dlp sample` adapts.
    pub fn load(&self, batch_size: Option<usize>) -> Result<(Box<dyn dlp_core::Sampler>, dlp_models::Model), CliError> {
        if self.step_size == Some(StepSize::Auto) {
            return Err(CliError::input("--step-size auto adapts during dlp sample's warm-up; give a number here"));
        }
        let sampler = dlp_samplers::build_sampler(&self.sampler, &self.params(batch_size)).map_err(CliError::input)?;
        let model = dlp_models::load_model(&self.model).map_err(CliError::input)?;
        Ok((sampler, model))
    }
}

pub use dlp_core::io::atomic_write;

/// Prints one `warning:` line on stderr when the registry flags `sampler` as not irreducible
/// and aperiodic on `space` (`dlp_samplers::registry::not_ergodic_on`: e.g. `pas-2` on bits).
pub fn warn_if_not_ergodic(sampler: &str, space: &dlp_core::Space) {
    if let Some(why) = dlp_samplers::registry::not_ergodic_on(sampler, space) {
        eprintln!("warning: {}", one_line(&why));
    }
}

pub use dlp_session::{initial_states, progress_bar};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_failure_exits_1_and_other_run_errors_exit_2() {
        use dlp_core::{EvalError, SamplerError};
        let device =
            SamplerError::Eval(EvalError::Device { device: "cuda:0".into(), message: "out of\nmemory".into() });
        let e = CliError::from_run(device);
        assert_eq!(e.exit_code(), 1);
        assert_eq!(e.to_string(), "internal error: device error on cuda:0: out of memory");
        assert_eq!(CliError::from_run(SamplerError::Eval(EvalError::NoData)).exit_code(), 2);
        let bad = SamplerError::BadParameter { sampler: "sg-dula".into(), message: "batch_size".into() };
        assert_eq!(CliError::from_run(bad).exit_code(), 2);
    }

    #[test]
    fn clap_errors_become_one_line_without_usage() {
        let rendered = "error: the following required arguments were not provided:\n  --model <MODEL>\n\nUsage: dlp sample --model <MODEL>\n\nFor more information, try '--help'.\n";
        assert_eq!(clap_error_text(rendered), "the following required arguments were not provided: --model <MODEL>");
    }

    #[test]
    fn unwritable_places_are_input_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/dir/out.csv");
        let err = check_writable("--out", &missing).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().starts_with("--out "), "{err}");
        assert!(check_writable("--out", dir.path()).is_err());
        assert!(check_writable("--out", &dir.path().join("ok.csv")).is_ok());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
