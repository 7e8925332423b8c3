//! `dlp sample`: run chains of a named sampler on a model file; write the final state of
//! every chain (the samples grammar of `gof.md` §10.2, so `dlp gof` reads it back) and,
//! optionally, every kept state with its chain and step. With `--device`, the sampler's
//! device-resident chains (`dlp_device::device_samplers`) run instead of the host kernel.

use dlp_cli::{CliError, ModelSamplerArgs, StepSize, atomic_write, check_writable, io_reason};
use dlp_core::{RunOptions, Space};
use dlp_device::device_samplers::DeviceSampler;
use dlp_session::{Request, Session, Spelling, Trace};
use std::path::PathBuf;
use std::sync::Arc;

/// How the chains start.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// Every coordinate uniform over its values, drawn from setup stream 0 of `--seed`.
    Random,
    /// Every coordinate at the first value of its value list (−1 for spin, 0 for binary).
    Zeros,
}

/// How `--trace` is written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// One file, columns chain,step,x0,x1,…
    Csv,
    /// One CmdStan CSV per chain, `<FILE's stem>_<chain>.csv` (chains from 1): columns lp__
    /// (f of the state), accept_stat__ (the step's acceptance probability), x.1, …, x.d, with
    /// the configuration comments of CmdStan's fixed_param sampler (read by CmdStanPy's
    /// `from_csv`, then `arviz.from_cmdstanpy`).
    Cmdstan,
}

/// Arguments of `dlp sample`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model and sampler.
    #[command(flatten)]
    pub run: ModelSamplerArgs,
    /// Minibatch size of stochastic-gradient samplers.
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// Number of independent chains.
    #[arg(long)]
    pub chains: usize,
    /// Steps per chain.
    #[arg(long)]
    pub steps: usize,
    /// Steps discarded from the trace; with step-size adaptation, the warm-up during which α
    /// adapts (default then: half of --steps).
    #[arg(long)]
    pub burn_in: Option<usize>,
    /// Target mean acceptance probability of the step-size adaptation (default: the sampler's
    /// own, 0.574 — the optimal MALA rate — for most; 0.5 for acs-dmala, the official ACS
    /// scripts' value; 0.57 for rmala, the GWG release's; 0.234 for rwm, DISCS's).
    #[arg(long)]
    pub target_accept: Option<f64>,
    /// Keep every T-th step after burn-in in the trace.
    #[arg(long, default_value_t = 1)]
    pub thin: usize,
    /// Master seed: chain j uses stream j+1, the initial states stream 0.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Worker threads (0 = one per core). Results do not depend on it.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Initial states.
    #[arg(long, value_enum, default_value_t = Init::Random)]
    pub init: Init,
    /// Output file for the final states (one row per chain, header x0,x1,…).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Output file for every kept state (columns chain,step,x0,x1,…; see --format).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Layout of --trace: csv, or cmdstan (one CmdStan CSV per chain).
    #[arg(long, value_enum, default_value_t = TraceFormat::Csv)]
    pub format: TraceFormat,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Run the sampler's device-resident chains on this device (`cpu`: candle's CPU backend,
    /// the kernels' CPU twins; `cuda:N` with the `cuda` feature) instead of the host sampler:
    /// the same name, for samplers whose registry row has a device kernel (`dlp samplers`).
    /// Chains then draw from Philox streams of --seed, not the host streams; --threads does
    /// not apply.
    #[arg(long)]
    pub device: Option<String>,
}

/// The session this invocation asks for (`dlp_session`: the same as Python's `dlp_mcmc.sample`).
fn request(args: &Args) -> Request {
    let run = &args.run;
    Request {
        sampler: run.sampler.clone(),
        step_size: match run.step_size {
            None => dlp_session::StepSize::Default,
            Some(StepSize::Auto) => dlp_session::StepSize::Auto,
            Some(StepSize::Fixed(a)) => dlp_session::StepSize::Fixed(a),
        },
        step_size_min: run.step_size_min,
        preconditioner: run.preconditioner.clone(),
        batch_size: args.batch_size,
        ladder: run.ladder.clone(),
        chains: args.chains,
        steps: args.steps,
        burn_in: args.burn_in,
        thin: args.thin,
        target_accept: args.target_accept,
        progress: !args.quiet,
    }
}

/// Runs `dlp sample`.
pub fn run(args: Args) -> Result<(), CliError> {
    let request = request(&args);
    request.check(Spelling::Flags)?;
    if args.trace.as_ref() == Some(&args.out) {
        return Err(CliError::input("--trace and --out name the same file"));
    }
    let model = dlp_models::load_model(&args.run.model).map_err(CliError::input)?;
    check_writable("--out", &args.out)?;
    if let Some(trace) = &args.trace {
        check_writable("--trace", trace)?;
    }
    let target: &dyn dlp_core::Target = &model;
    let space = target.space().clone();
    dlp_cli::warn_if_not_ergodic(&args.run.sampler, &space);
    let mut session = Session::resolve(request, Spelling::Flags, target)?;
    if let Some(name) = &args.device {
        let device = dlp_tensor::device(name).map_err(|e| CliError::input(format!("--device: {e}")))?;
        let seed = args.seed;
        session = session.with_builder(Arc::new(move |sampler, params| {
            DeviceSampler::new(sampler, params, seed, &device).map(|s| Box::new(s) as Box<dyn dlp_core::Sampler>)
        }))?;
    }
    let x0 = dlp_cli::initial_states(&space, args.chains, args.init == Init::Random, args.seed);
    let options = RunOptions { seed: args.seed, threads: args.threads, chains_per_task: 0 };
    let sampler = &args.run.sampler;
    let report = |a: &dlp_session::Adaptation| {
        if !args.quiet {
            let mut what: Vec<String> = Vec::new();
            if let Some(alpha) = a.step_size {
                let min = a.step_size_min.map(|m| format!(", α_min {m:.6}")).unwrap_or_default();
                what.push(format!("step size adapted to {alpha:.6}{min}"));
            }
            if let Some(l) = &a.ladder {
                let l: Vec<String> = l.iter().map(|b| format!("{b:.4}")).collect();
                what.push(format!("ladder adapted to {}", l.join(",")));
            }
            if what.is_empty() {
                what.push("nothing adapted (its parameters are given)".into());
            }
            eprintln!(
                "{sampler}: {} over {} warm-up steps (mean acceptance {:.3} in the last window, target {})",
                what.join(" and "),
                a.steps,
                a.last_accept,
                a.target_accept
            );
        }
    };
    let tracing = args.trace.is_some();
    let started = std::time::Instant::now();
    let ran = session
        .run(target, x0, &options, report, |stage, _, n| (stage.progress(n), tracing.then(|| stage.trace(n))))
        .map_err(CliError::from_run)?;
    // The adapted (or given) parameters travel with the samples they produced.
    let flags = adapted_values(ran.step_size, ran.step_size_min, ran.ladder.as_deref(), " ");
    let adapted_note = match &ran.adaptation {
        Some(a) => format!(
            " {flags} (adapted over {} warm-up steps toward acceptance {}; last window {:.4})",
            a.steps, a.target_accept, a.last_accept
        ),
        None if flags.is_empty() => String::new(),
        None => format!(" {flags}"),
    };

    let mut written: Vec<PathBuf> = Vec::new();
    if let Some(trace) = &args.trace {
        let traces: Vec<&Trace> = ran.output.observers.iter().filter_map(|(_, t)| t.as_ref()).collect();
        let files = match args.format {
            TraceFormat::Csv => vec![(trace.clone(), trace_csv(&space, &traces))],
            TraceFormat::Cmdstan => {
                let header = CmdstanHeader {
                    model: model.kind_name(),
                    sampler,
                    warmup: ran.warmup_steps.max(args.burn_in.unwrap_or(0)),
                    thin: args.thin,
                    seed: args.seed,
                    seconds: started.elapsed().as_secs_f64(),
                };
                cmdstan_csvs(target, &space, &traces, trace, &header).map_err(CliError::from_run)?
            }
        };
        for (path, bytes) in files {
            let bytes =
                bytes.map_err(|e| CliError::internal(format!("--trace {}: cannot format: {e}", path.display())))?;
            if let Err(e) = atomic_write(&path, &bytes) {
                // No partial output: the files written so far go.
                for p in &written {
                    let _ = std::fs::remove_file(p);
                }
                return Err(CliError::Input(format!("--trace {}: cannot write: {}", path.display(), io_reason(&e))));
            }
            written.push(path);
        }
    }
    debug_assert_eq!(ran.output.final_states.len(), args.chains * space.d);
    // Provenance as a `#` comment line (the samples grammar skips it), so that the adapted
    // step size travels with the samples it produced.
    let comment = format!(
        "# dlp sample --sampler {sampler}{adapted_note} --chains {} --steps {} --seed {}\n",
        args.chains, args.steps, args.seed
    );
    let bytes = samples_csv(comment, &space, &ran.output.final_states)
        .map_err(|e| CliError::internal(format!("--out {}: cannot format: {e}", args.out.display())))?;
    if let Err(e) = atomic_write(&args.out, &bytes) {
        // No partial output: the trace goes too if the final states cannot be written.
        for p in &written {
            let _ = std::fs::remove_file(p);
        }
        return Err(CliError::Input(format!("--out {}: cannot write: {}", args.out.display(), io_reason(&e))));
    }
    Ok(())
}

/// A CSV writer into memory, `\n`-terminated (the samples grammar, `gof.md` §10.2); numbers and
/// `x<i>` names never need quoting.
fn csv_writer(prefix: Vec<u8>) -> csv::Writer<Vec<u8>> {
    csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(prefix)
}

/// Writes one row of user values (the space's value of each index) as a record.
fn write_values(w: &mut csv::Writer<Vec<u8>>, space: &Space, row: &[u32], buf: &mut String) -> csv::Result<()> {
    use std::fmt::Write as _;
    for &c in row {
        buf.clear();
        let _ = write!(buf, "{}", space.value(c));
        w.write_field(buf.as_bytes())?;
    }
    Ok(())
}

/// The final states as CSV after the `comment` line: header `x0,x1,…`, one row per chain.
fn samples_csv(comment: String, space: &Space, states: &[u32]) -> csv::Result<Vec<u8>> {
    let mut w = csv_writer(comment.into_bytes());
    w.write_record((0..space.d).map(|i| format!("x{i}")))?;
    let mut buf = String::new();
    for row in states.chunks_exact(space.d.max(1)) {
        write_values(&mut w, space, row, &mut buf)?;
        w.write_record(None::<&[u8]>)?;
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// The trace as CSV: header `chain,step,x0,…`, rows ordered by chain then step, user values.
fn trace_csv(space: &Space, traces: &[&Trace]) -> csv::Result<Vec<u8>> {
    let mut w = csv_writer(Vec::new());
    w.write_record(["chain".to_string(), "step".to_string()].into_iter().chain((0..space.d).map(|i| format!("x{i}"))))?;
    let mut chain = 0usize;
    let mut buf = String::new();
    for t in traces {
        for j in 0..t.chains() {
            for (k, step) in t.steps().iter().enumerate() {
                w.write_field(chain.to_string())?;
                w.write_field(step.to_string())?;
                write_values(&mut w, space, t.state(k, j), &mut buf)?;
                w.write_record(None::<&[u8]>)?;
            }
            chain += 1;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// `--step-size a --step-size-min m --ladder b1,b2` for the parameters that are set, each flag
/// and value joined by `sep`.
fn adapted_values(step: Option<f64>, min: Option<f64>, ladder: Option<&[f64]>, sep: &str) -> String {
    let mut parts = Vec::new();
    if let Some(a) = step {
        parts.push(format!("--step-size{sep}{a}"));
    }
    if let Some(m) = min {
        parts.push(format!("--step-size-min{sep}{m}"));
    }
    if let Some(l) = ladder {
        let l: Vec<String> = l.iter().map(f64::to_string).collect();
        parts.push(format!("--ladder{sep}{}", l.join(",")));
    }
    parts.join(" ")
}

/// A trace file to write: its path and its bytes (or why they could not be formatted).
type TraceFile = (PathBuf, csv::Result<Vec<u8>>);

/// What the configuration comments of a CmdStan CSV say about the run.
struct CmdstanHeader<'a> {
    model: &'a str,
    sampler: &'a str,
    warmup: usize,
    thin: usize,
    seed: u64,
    /// The whole run's wall time (its chains ran together), as each chain's sampling time.
    seconds: f64,
}

/// The trace as one CmdStan CSV per chain (`--format cmdstan`): `<stem>_<chain>.csv` beside
/// `trace`, each with CmdStan's fixed_param configuration comments, the header
/// `lp__,accept_stat__,x.1,…,x.d`, one row per kept step (lp__: f of the state, one batched
/// evaluation of every kept state) and CmdStan's closing timing comments. `num_samples` is
/// the kept steps × `thin`, so that a reader expecting num_samples / thin draws finds them.
fn cmdstan_csvs(
    target: &dyn dlp_core::Target,
    space: &Space,
    traces: &[&Trace],
    trace: &std::path::Path,
    h: &CmdstanHeader<'_>,
) -> Result<Vec<TraceFile>, dlp_core::SamplerError> {
    let stem = trace.file_stem().map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let dir = trace.parent().unwrap_or_else(|| std::path::Path::new(""));
    let mut files = Vec::new();
    let mut chain = 0usize;
    for t in traces {
        let kept = t.steps().len();
        let xs: Vec<u32> = (0..kept).flat_map(|k| t.at(k).iter().copied()).collect();
        let mut lp = vec![0.0; kept * t.chains()];
        target.evaluate(&xs, dlp_core::Batch::Full, &mut lp, None)?;
        for j in 0..t.chains() {
            chain += 1;
            let comments = format!(
                "# model = dlp_{model}\n# method = sample (Default)\n#   sample\n#     num_samples = {samples}\n\
                 #     num_warmup = {warmup}\n#     save_warmup = false\n#     thin = {thin}\n\
                 #     adapt\n#       engaged = false\n#     algorithm = fixed_param\n# id = {chain}\n\
                 # random\n#   seed = {seed}\n# output\n#   file = {stem}_{chain}.csv\n\
                 # dlp sample --sampler {sampler} (lp__: f up to its normalising constant)\n",
                model = h.model,
                samples = kept * h.thin.max(1),
                warmup = h.warmup,
                thin = h.thin,
                seed = h.seed,
                sampler = h.sampler,
            );
            let bytes = (|| {
                let mut w = csv_writer(comments.into_bytes());
                let names = (1..=space.d).map(|i| format!("x.{i}"));
                w.write_record(["lp__".to_string(), "accept_stat__".to_string()].into_iter().chain(names))?;
                let mut buf = String::new();
                for k in 0..kept {
                    w.write_field(format!("{:?}", lp[k * t.chains() + j]))?;
                    w.write_field(format!("{:?}", t.accept_prob_at(k)[j]))?;
                    write_values(&mut w, space, t.state(k, j), &mut buf)?;
                    w.write_record(None::<&[u8]>)?;
                }
                let mut out = w.into_inner().map_err(|e| e.into_error())?;
                let t = h.seconds;
                out.extend_from_slice(
                    format!(
                        "# \n#  Elapsed Time: 0 seconds (Warm-up)\n#                {t} seconds (Sampling)\n\
                         #                {t} seconds (Total)\n# \n"
                    )
                    .as_bytes(),
                );
                Ok(out)
            })();
            files.push((dir.join(format!("{stem}_{chain}.csv")), bytes));
        }
    }
    Ok(files)
}
