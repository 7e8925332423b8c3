//! `dlp gof`: goodness-of-fit tests of a samples file against a model file (KDSD, GF-KSD,
//! MMD), the command and file contract of `gof.md` §10.
//!
//! Files are read only through dlp-models (the one model-file and samples grammar); the
//! statistics are dlp-gof's. Order of checks: parameters, output place, model, samples,
//! reference, jitter; the first problem found is the one reported (§10.5).

use dlp_cli::{CliError, atomic_write, check_writable};
use dlp_core::{DomainKind, Space, Target};
use dlp_gof::bootstrap::check_reps_alpha;
use dlp_gof::reference::{MAX_EXACT_STATES, exact_draws, gibbs_draws};
use dlp_gof::{
    Bandwidth, BaseKernel, Bootstrap, GfksdOptions, GofError, KdsdOptions, MmdOptions, ModelDraws, NullTest, Statistic,
    Surrogate, gfksd_test, kdsd_test, mmd_test,
};
use dlp_models::{Delimiter, SamplesError, load_model, read_real_matrix, read_samples};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Smallest sample the CLI accepts (§10.2).
const MIN_ROWS: usize = 10;

/// Which test to run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestKind {
    /// Kernelized discrete Stein discrepancy (Yang et al. 2018).
    Kdsd,
    /// Gradient-free KSD on a continuous lift (Han et al. 2020).
    Gfksd,
    /// Squared MMD with a permutation test.
    Mmd,
}

/// Base kernel of KDSD.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelArg {
    /// exp(−λ H/d), strictly positive definite (default).
    ExpHamming,
    /// 1 − H/d: PSD only, so the discrepancy can vanish for a wrong model.
    HammingLinear,
}

/// Output format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The `dlp.gof.result.v1` JSON document.
    Json,
    /// One human-readable line on stdout (the JSON still goes to `--output` when given).
    Text,
}

/// Arguments of `dlp gof` (`gof.md` §10.1).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Test: kdsd, gfksd or mmd.
    #[arg(long, value_enum)]
    pub test: TestKind,
    /// Samples file (one sample per row, values in the model's value list).
    #[arg(long, value_name = "FILE")]
    pub samples: PathBuf,
    /// Model file (`dlp.model.v1`, JSON or TOML). Required for kdsd, gfksd and mmd without
    /// `--reference`.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<PathBuf>,
    /// u (unbiased, default) or v (biased).
    #[arg(long, value_name = "u|v")]
    pub statistic: Option<String>,
    /// multinomial (default with u), rademacher (default with v), or model: the statistic of
    /// --reps fresh data sets of n draws from the model (exact when K^d ≤ 2^20, else Gibbs with
    /// --burnin), a Monte Carlo test of exact level at every n (the bootstraps are calibrated
    /// only for large n); mmd always permutes.
    #[arg(long, value_name = "multinomial|rademacher|model")]
    pub bootstrap: Option<String>,
    /// Bootstrap replicates (permutations for mmd).
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    pub reps: i64,
    /// Level of the test.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub alpha: f64,
    /// Seed of every random stream (replicates, jitter, reference draws).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// λ of the exp-Hamming kernel exp(−λ H/d) (kdsd, mmd).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_name = "LAMBDA")]
    pub kernel_scale: f64,
    /// KDSD base kernel.
    #[arg(long, value_enum, default_value_t = KernelArg::ExpHamming)]
    pub kernel: KernelArg,
    /// GF-KSD surrogate: gaussian (default) or relaxed (ising/rbm models).
    #[arg(long, value_name = "gaussian|relaxed")]
    pub surrogate: Option<String>,
    /// GF-KSD RBF bandwidth: median (default) or a positive number.
    #[arg(long, value_name = "median|H", allow_negative_numbers = true)]
    pub bandwidth: Option<String>,
    /// GF-KSD jitter file (n × d reals in (0,1)) instead of drawing it from the seed.
    #[arg(long, value_name = "FILE")]
    pub jitter: Option<PathBuf>,
    /// MMD: second sample to compare with.
    #[arg(long, value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// MMD: number of reference draws from the model (default n).
    #[arg(long, value_name = "M", allow_negative_numbers = true)]
    pub model_samples: Option<i64>,
    /// MMD and --bootstrap model: Gibbs sweeps when the model is too large to draw exactly.
    #[arg(long, default_value_t = 1000, value_name = "SWEEPS")]
    pub burnin: usize,
    /// auto, comma, tab or whitespace.
    #[arg(long, default_value = "auto")]
    pub delimiter: String,
    /// Result file (written atomically); stdout when absent.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// json (default) or text.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
}

/// Parameters after validation.
struct Plan {
    statistic: Statistic,
    /// The bootstrap, or for `--bootstrap model` the default one of the statistic (its
    /// single replicate is unused).
    bootstrap: Bootstrap,
    /// `--bootstrap model`.
    model_null: bool,
    reps: usize,
    delimiter: Delimiter,
    surrogate_relaxed: bool,
    bandwidth: Bandwidth,
}

/// Checks the options. A value the user typed is shown escaped (`escape_debug`): it may hold a
/// line break or a terminal escape sequence, and the message is one plain line.
fn plan(args: &Args) -> Result<Plan, CliError> {
    let statistic = match args.statistic.as_deref() {
        None | Some("u") => Statistic::U,
        Some("v") => Statistic::V,
        Some(o) => return Err(CliError::input(format!("--statistic must be u or v, got \"{}\"", o.escape_debug()))),
    };
    let model_null = args.bootstrap.as_deref() == Some("model");
    let bootstrap = match args.bootstrap.as_deref() {
        None | Some("model") if statistic == Statistic::V => Bootstrap::Rademacher,
        None | Some("multinomial") | Some("model") => Bootstrap::Multinomial,
        Some("rademacher") => Bootstrap::Rademacher,
        Some(o) => {
            return Err(CliError::input(format!(
                "--bootstrap must be multinomial, rademacher or model, got \"{}\"",
                o.escape_debug()
            )));
        }
    };
    if model_null && args.test == TestKind::Mmd {
        return Err(CliError::input("--bootstrap model is for kdsd and gfksd; mmd always permutes"));
    }
    if args.test != TestKind::Mmd && bootstrap == Bootstrap::Multinomial && statistic == Statistic::V {
        return Err(CliError::input(GofError::MultinomialNeedsU));
    }
    let reps = if args.reps < 1 { 0 } else { args.reps as usize };
    check_reps_alpha(reps, args.alpha).map_err(CliError::input)?;
    if !(args.kernel_scale > 0.0 && args.kernel_scale.is_finite()) {
        return Err(CliError::input(format!("--kernel-scale must be a positive number, got {}", args.kernel_scale)));
    }
    let delimiter: Delimiter =
        args.delimiter.parse().map_err(|e: String| CliError::input(format!("--delimiter: {e}")))?;
    let surrogate_relaxed = match args.surrogate.as_deref() {
        None | Some("gaussian") => false,
        Some("relaxed") => true,
        Some(o) => {
            return Err(CliError::input(format!(
                "--surrogate must be gaussian or relaxed, got \"{}\"",
                o.escape_debug()
            )));
        }
    };
    let bandwidth = match args.bandwidth.as_deref() {
        None | Some("median") => Bandwidth::Median,
        Some(s) => match s.parse::<f64>() {
            Ok(h) if h > 0.0 && h.is_finite() => Bandwidth::Fixed(h),
            _ => {
                return Err(CliError::input(format!(
                    "--bandwidth must be median or a positive number, got \"{}\"",
                    s.escape_debug()
                )));
            }
        },
    };
    if args.test == TestKind::Mmd {
        if args.reference.is_some() && args.model_samples.is_some() {
            return Err(CliError::input("--reference and --model-samples cannot be used together"));
        }
        if let Some(m) = args.model_samples
            && m < 2
        {
            return Err(CliError::input(format!("--model-samples must be at least 2, got {m}")));
        }
        if args.reference.is_none() && args.model.is_none() {
            return Err(CliError::input("--test mmd needs --model (to draw reference samples) or --reference FILE"));
        }
    } else if args.model.is_none() {
        let name = if args.test == TestKind::Kdsd { "kdsd" } else { "gfksd" };
        return Err(CliError::input(format!("--test {name} needs --model")));
    }
    Ok(Plan { statistic, bootstrap, model_null, reps, delimiter, surrogate_relaxed, bandwidth })
}

fn samples_error(e: SamplesError) -> CliError {
    match e {
        SamplesError::Io { file, message } => CliError::Input(format!(
            "{file}: cannot read file: {}",
            message.split(" (os error").next().unwrap_or(&message)
        )),
        other => CliError::input(other),
    }
}

/// Reads a samples file against `space`, requiring at least [`MIN_ROWS`] rows.
fn read_rows(path: &Path, space: &Space, kind: &str, delim: Delimiter) -> Result<Vec<u32>, CliError> {
    let s = read_samples(path, space, kind, delim).map_err(samples_error)?;
    s.require_rows(path, MIN_ROWS).map_err(samples_error)?;
    Ok(s.indices)
}

/// MMD without a model: the value list is whatever integers the files hold (MMD's kernel only
/// compares values for equality). Discovered through the one samples parser: each
/// "outside the domain" answer adds that value, a wrong-d answer fixes d.
fn infer_space(paths: &[&Path], delim: Delimiter) -> Result<Space, CliError> {
    let mut space = Space { d: 1, kind: DomainKind::Categorical, values: Vec::new() };
    for path in paths {
        for _ in 0..100_000 {
            match read_samples(path, &space, "samples", delim) {
                Ok(_) => break,
                Err(SamplesError::WrongD { found, .. }) if space.values.is_empty() || *path == paths[0] => {
                    space.d = found
                }
                Err(SamplesError::OutsideDomain { value, line, column, file, .. }) => match value.parse::<i64>() {
                    Ok(v) if !space.values.contains(&v) => space.values.push(v),
                    _ => return Err(CliError::Input(format!("{file}:{line}:{column}: not an integer: \"{value}\""))),
                },
                Err(e) => return Err(samples_error(e)),
            }
        }
    }
    Ok(space)
}

fn sha256_of(path: &Path) -> Result<String, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::Input(format!("{}: cannot read file: {}", path.display(), dlp_cli::io_reason(&e))))?;
    Ok(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

/// Maps a statistics error to an exit-2 line; a score overflow names the model file.
fn gof_error(e: GofError, model_path: Option<&Path>) -> CliError {
    match (&e, model_path) {
        (GofError::ScoreOverflow { .. }, Some(p)) => CliError::Input(format!("{}: {e}", p.display())),
        (GofError::Shape(_), _) => CliError::internal(e),
        _ => CliError::input(e),
    }
}

/// Runs `dlp gof`.
pub fn run(args: Args) -> Result<(), CliError> {
    let p = plan(&args)?;
    if let Some(out) = &args.output {
        check_writable("--output", out)?;
    }
    let model = match &args.model {
        Some(path) => Some(load_model(path).map_err(CliError::input)?),
        None => None,
    };
    let target: Option<&dyn Target> = model.as_ref().map(|m| m.as_target());
    let kind = model.as_ref().map(|m| m.kind_name()).unwrap_or("samples");
    if args.test == TestKind::Gfksd
        && p.surrogate_relaxed
        && model.as_ref().and_then(|m| dlp_gof::relaxation_of(m.as_target())).is_none()
    {
        return Err(CliError::input(GofError::RelaxedNeedsBinary));
    }
    let space = match target {
        Some(t) => t.space().clone(),
        None => {
            let mut paths = vec![args.samples.as_path()];
            paths.extend(args.reference.as_deref());
            infer_space(&paths, p.delimiter)?
        }
    };
    let xs = read_rows(&args.samples, &space, kind, p.delimiter)?;
    let n = xs.len() / space.d;
    let gof_null = dlp_gof::GofNull {
        bootstrap: p.bootstrap,
        reps: p.reps,
        seed: args.seed,
        model: p.model_null.then(|| ModelDraws::for_space(&space, args.burnin)),
    };
    let null = gof_null.test(p.statistic);
    let mut warnings: Vec<String> = Vec::new();
    let mut doc = json!({
        "schema": "dlp.gof.result.v1",
        "test": match args.test { TestKind::Kdsd => "kdsd", TestKind::Gfksd => "gfksd", TestKind::Mmd => "mmd" },
        "statistic_kind": p.statistic.name(),
        "alpha": args.alpha,
        "n": n,
        "d": space.d,
        "seed": args.seed,
        "model": match (&model, &args.model) {
            (Some(m), Some(path)) => json!({"kind": m.kind_name(), "d": m.space().d, "path": path.display().to_string()}),
            _ => Value::Null,
        },
        "samples": {"path": args.samples.display().to_string(), "sha256": sha256_of(&args.samples)?},
        "dlp_version": env!("CARGO_PKG_VERSION"),
    });
    let (statistic, p_value) = match args.test {
        TestKind::Kdsd => {
            let kernel = match args.kernel {
                KernelArg::ExpHamming => BaseKernel::ExpHamming { scale: args.kernel_scale },
                KernelArg::HammingLinear => {
                    warnings.push("hamming_linear kernel is not strictly positive definite: the discrepancy can vanish for a wrong model".into());
                    BaseKernel::HammingLinear
                }
            };
            let t = target.expect("checked in plan");
            let out =
                kdsd_test(t, &xs, &KdsdOptions { kernel, null }).map_err(|e| gof_error(e, args.model.as_deref()))?;
            let mut k = json!({"name": kernel.name()});
            if let BaseKernel::ExpHamming { scale } = kernel {
                k["scale"] = json!(scale);
            }
            doc["kernel"] = k;
            let pv = gof_null.p_value(t, n, &out.null, &mut doc, &mut warnings, |ys, seed| {
                Ok(kdsd_test(t, ys, &KdsdOptions { kernel, null: NullTest { seed, ..null } })?.null.statistic)
            });
            (out.null.statistic, pv.map_err(|e| gof_error(e, args.model.as_deref()))?)
        }
        TestKind::Gfksd => {
            let t = target.expect("checked in plan");
            let jitter = match &args.jitter {
                Some(path) => {
                    let m = read_real_matrix(path, Some(space.d), p.delimiter).map_err(samples_error)?;
                    if m.n != n {
                        return Err(CliError::Input(format!(
                            "{}: jitter has {} rows but {} has {n} samples",
                            path.display(),
                            m.n,
                            args.samples.display()
                        )));
                    }
                    Some(m.values)
                }
                None => None,
            };
            let surrogate = if p.surrogate_relaxed {
                Surrogate::Relaxed(
                    model.as_ref().and_then(|m| dlp_gof::relaxation_of(m.as_target())).expect("checked above"),
                )
            } else {
                Surrogate::Gaussian
            };
            let from_file = jitter.is_some();
            let opts = GfksdOptions { surrogate, bandwidth: p.bandwidth, null, jitter };
            // Replicate data sets draw their own jitter from their own seed.
            let fresh = GfksdOptions { jitter: None, ..opts.clone() };
            let out = gfksd_test(t, &xs, &opts).map_err(|e| gof_error(e, args.model.as_deref()))?;
            if out.ess < n as f64 / 10.0 {
                warnings.push(format!(
                    "importance weights are degenerate: ESS = {:.1} of n = {n} (< n/10); the test has little power",
                    out.ess
                ));
            }
            doc["surrogate"] = json!(opts.surrogate.name());
            doc["kernel"] = json!({"name": "rbf", "bandwidth": out.bandwidth,
                "bandwidth_rule": if p.bandwidth == Bandwidth::Median { "median" } else { "fixed" }});
            doc["weights_ess"] = json!(out.ess);
            doc["jitter"] = json!(if from_file { "file" } else { "rng" });
            let pv = gof_null.p_value(t, n, &out.null, &mut doc, &mut warnings, |ys, seed| {
                let o = GfksdOptions { null: NullTest { seed, ..null }, ..fresh.clone() };
                Ok(gfksd_test(t, ys, &o)?.null.statistic)
            });
            (out.null.statistic, pv.map_err(|e| gof_error(e, args.model.as_deref()))?)
        }
        TestKind::Mmd => {
            let (ys, reference) = match &args.reference {
                Some(path) => {
                    let ys = read_rows(path, &space, kind, p.delimiter)?;
                    (ys, json!({"source": "file", "path": path.display().to_string(), "sha256": sha256_of(path)?}))
                }
                None => {
                    let t = target.expect("checked in plan");
                    let m = args.model_samples.map_or(n, |m| m as usize);
                    let exact = space.n_states().is_some_and(|s| s <= MAX_EXACT_STATES);
                    if exact {
                        let ys = exact_draws(t, m, args.seed).map_err(|e| gof_error(e, args.model.as_deref()))?;
                        (ys, json!({"source": "model_sampler", "sampler": "exact", "burnin": Value::Null}))
                    } else {
                        warnings.push(format!(
                            "reference drawn by {} single-site Gibbs sweeps (the space is too large to draw exactly); calibration is only guaranteed with exact draws",
                            args.burnin
                        ));
                        let ys = gibbs_draws(t, m, args.burnin, args.seed)
                            .map_err(|e| gof_error(e.into(), args.model.as_deref()))?;
                        (ys, json!({"source": "model_sampler", "sampler": "gibbs", "burnin": args.burnin}))
                    }
                }
            };
            let opts = MmdOptions { scale: args.kernel_scale, statistic: p.statistic, reps: p.reps, seed: args.seed };
            let out = mmd_test(&space, &xs, &ys, &opts).map_err(|e| gof_error(e, args.model.as_deref()))?;
            doc["m"] = json!(out.m);
            doc["reference"] = reference;
            doc["kernel"] = json!({"name": "exp_hamming", "scale": args.kernel_scale});
            doc["bootstrap"] = json!({"method": "permutation", "reps": p.reps});
            (out.statistic, out.p_value)
        }
    };
    if !statistic.is_finite() {
        return Err(CliError::internal(format!("the statistic is not finite ({statistic})")));
    }
    doc["statistic"] = json!(statistic);
    doc["p_value"] = json!(p_value);
    doc["reject"] = json!(p_value <= args.alpha);
    doc["warnings"] = json!(warnings);
    let text = serde_json::to_string_pretty(&doc).map_err(CliError::internal)? + "\n";
    if let Some(out) = &args.output {
        atomic_write(out, text.as_bytes()).map_err(|e| {
            CliError::Input(format!("--output {}: cannot write there: {}", out.display(), dlp_cli::io_reason(&e)))
        })?;
    }
    match args.format {
        Format::Json if args.output.is_none() => print!("{text}"),
        Format::Json => {}
        Format::Text => println!(
            "{} {}={:.6e} p={:.4} alpha={} {} (n={n}, d={})",
            doc["test"].as_str().unwrap_or(""),
            p.statistic.name(),
            statistic,
            p_value,
            args.alpha,
            if p_value <= args.alpha { "reject" } else { "do not reject" },
            space.d
        ),
    }
    Ok(())
}

#[cfg(test)]
#[path = "gof_fuzz.rs"]
mod fuzz;
