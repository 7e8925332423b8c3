//! Shared plumbing of the `dlp` binary: the error type that fixes exit codes, one-line error
//! messages, atomic file writes and progress bars. Each subcommand lives in its own module
//! of the binary (`src/<subcommand>.rs`) and returns [`CliError`].

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a subcommand failed; decides the exit code (`gof.md` §10.5).
#[derive(Debug, Clone, PartialEq)]
pub enum CliError {
    /// Bad input or impossible parameters: exit 2. The text is what follows `error: `.
    Input(String),
    /// A bug or an unexpected system failure: exit 1.
    Internal(String),
}

impl CliError {
    /// Bad-input error from anything printable.
    pub fn input(message: impl fmt::Display) -> Self {
        CliError::Input(message.to_string())
    }

    /// Internal error from anything printable.
    pub fn internal(message: impl fmt::Display) -> Self {
        CliError::Internal(message.to_string())
    }

    /// The error that ends a run: a failed device (out of memory, lost device) is a system
    /// failure (exit 1); everything else a sampler reports is about the input (exit 2).
    pub fn from_run(e: dlp_core::SamplerError) -> Self {
        match e {
            dlp_core::SamplerError::Eval(dlp_core::EvalError::Device { .. }) => CliError::Internal(e.to_string()),
            other => CliError::Input(other.to_string()),
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Input(_) => 2,
            CliError::Internal(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input(m) => write!(f, "{}", one_line(m)),
            CliError::Internal(m) => write!(f, "internal error: {}", one_line(m)),
        }
    }
}

/// Joins a multi-line message into one line, so that every failure prints exactly one line.
pub fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

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

    /// Whether the step size is to be adapted: `--step-size auto`, or no `--step-size` for a
    /// Metropolis-adjusted sampler that takes one (the default there).
    pub fn adapts(&self) -> bool {
        match self.step_size {
            Some(StepSize::Auto) => true,
            Some(StepSize::Fixed(_)) => false,
            None => dlp_samplers::registry::find(&self.sampler).is_some_and(|(spec, _)| spec.adapts_step_size()),
        }
    }

    /// The sampler parameters with step size `alpha` (or the fixed `--step-size`).
    pub fn params(&self, alpha: Option<f64>, batch_size: Option<usize>) -> dlp_samplers::SamplerParams {
        let fixed = match self.step_size {
            Some(StepSize::Fixed(a)) => Some(a),
            _ => None,
        };
        dlp_samplers::SamplerParams {
            step_size: alpha.or(fixed),
            preconditioner: self.preconditioner.clone(),
            batch_size,
            step_size_min: self.step_size_min,
        }
    }

    /// The named sampler with these parameters (and `batch_size`), then the model file.
    /// `--step-size auto` is refused here: only `dlp sample` adapts.
    pub fn load(&self, batch_size: Option<usize>) -> Result<(Box<dyn dlp_core::Sampler>, dlp_models::Model), CliError> {
        if self.step_size == Some(StepSize::Auto) {
            return Err(CliError::input("--step-size auto adapts during dlp sample's warm-up; give a number here"));
        }
        let sampler =
            dlp_samplers::build_sampler(&self.sampler, &self.params(None, batch_size)).map_err(CliError::input)?;
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

/// The initial batch of `dlp sample` (and the Python package's `dlp.sample`), `chains × d`
/// indices: every coordinate uniform over its values from setup stream 0 of `seed` when
/// `random`, else every coordinate at its first value (−1 for spin, 0 for binary).
pub fn initial_states(space: &dlp_core::Space, chains: usize, random: bool, seed: u64) -> Vec<u32> {
    use rand::RngExt;
    if !random {
        return vec![0; chains * space.d];
    }
    let mut rng = dlp_core::setup_rng(seed);
    let k = space.k() as u32;
    (0..chains * space.d).map(|_| rng.random_range(0..k)).collect()
}

/// The continuous relaxation of an Ising or RBM model for GF-KSD's `relaxed` surrogate
/// (`None` for other kinds), shared by `dlp gof` and the Python package.
pub fn relaxation_of(model: &dlp_models::Model) -> Option<dlp_gof::Relaxation> {
    use dlp_models::{IsingModel, Rbm};
    if let Some(m) = model.downcast_ref::<IsingModel>() {
        let d = m.d();
        let mut j = vec![0.0; d * d];
        for (a, b, w) in m.couplings().pairs() {
            j[a * d + b] = w;
            j[b * d + a] = w;
        }
        let values = if m.is_spin() { (-1.0, 1.0) } else { (0.0, 1.0) };
        return Some(dlp_gof::Relaxation::Ising { values, j, b: m.fields().to_vec() });
    }
    if let Some(m) = model.downcast_ref::<Rbm>() {
        let values = if m.is_spin() { (-1.0, 1.0) } else { (0.0, 1.0) };
        return Some(dlp_gof::Relaxation::Rbm { values, w: m.w().to_vec(), b: m.b().to_vec(), c: m.c().to_vec() });
    }
    None
}

/// The null distribution of `dlp gof --test kdsd|gfksd` and of the Python package's
/// `dlp.gof.kdsd`/`gfksd`: a bootstrap on the statistic's matrix, or with `model` the model null
/// (`--bootstrap model`: `reps` data sets of n draws from the model,
/// [`dlp_gof::model_replicates`]).
pub struct GofNull {
    /// The bootstrap; with `model`, the statistic's default one (its single replicate unused).
    pub bootstrap: dlp_gof::Bootstrap,
    /// Replicates B (bootstrap draws or model data sets).
    pub reps: usize,
    /// Seed of every stream.
    pub seed: u64,
    /// `Some` for the model null: exact or Gibbs draws.
    pub model: Option<dlp_gof::ModelDraws>,
}

impl GofNull {
    /// The null the test itself runs: the bootstrap, or one replicate of it for the model null.
    pub fn test(&self, statistic: dlp_gof::Statistic) -> dlp_gof::NullTest {
        let reps = if self.model.is_some() { 1 } else { self.reps };
        dlp_gof::NullTest { statistic, bootstrap: self.bootstrap, reps, seed: self.seed }
    }

    /// The p-value of the `observed` test: the bootstrap's, or against the model null's
    /// replicates of `stat` (the statistic of a data set, given a seed for what it draws
    /// itself). Records the method in `doc["bootstrap"]` and warns when the draws are not exact.
    pub fn p_value<F>(
        &self,
        target: &dyn dlp_core::Target,
        n: usize,
        observed: &dlp_gof::bootstrap::NullOutcome,
        doc: &mut serde_json::Value,
        warnings: &mut Vec<String>,
        stat: F,
    ) -> Result<f64, dlp_gof::GofError>
    where
        F: Fn(&[u32], u64) -> Result<f64, dlp_gof::GofError> + Sync,
    {
        let Some(draws) = self.model else {
            doc["bootstrap"] = serde_json::json!({"method": self.bootstrap.name(), "reps": self.reps});
            return Ok(observed.p_value);
        };
        let burnin = match draws {
            dlp_gof::ModelDraws::Exact => serde_json::Value::Null,
            dlp_gof::ModelDraws::Gibbs { burnin } => {
                warnings.push(format!(
                    "model null drawn by {burnin} single-site Gibbs sweeps per chain (the space is too large to draw exactly); its level is exact only with exact draws"
                ));
                serde_json::json!(burnin)
            }
        };
        doc["bootstrap"] =
            serde_json::json!({"method": "model", "reps": self.reps, "sampler": draws.name(), "burnin": burnin});
        let replicates = dlp_gof::model_replicates(target, n, self.reps, self.seed, draws, stat)?;
        Ok(dlp_gof::p_value(observed.statistic, &replicates))
    }
}

/// A progress bar on stderr counting `len` units ([`dlp_core::progress::bar`]: plain log lines
/// every minute when stderr is not a terminal); hidden with `quiet`.
pub fn progress_bar(len: u64, message: &str, quiet: bool) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    dlp_core::progress::bar(len, message)
}

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
