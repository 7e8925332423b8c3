//! `dlp sample`: run chains of a named sampler on a model file; write the final state of
//! every chain (the samples grammar of `gof.md` §10.2, so `dlp gof` reads it back) and,
//! optionally, every kept state with its chain and step.

use dlp_cli::{CliError, ModelSamplerArgs, atomic_write, check_writable, io_reason, progress_bar};
use dlp_core::{Observer, RunOptions, Space, States, StepContext, StepInfo, run_chains};
use dlp_samplers::adapt::{AdaptOptions, adapt_step_size, default_target_accept};
use std::fmt::Write as _;
use std::path::PathBuf;

/// How the chains start.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// Every coordinate uniform over its values, drawn from setup stream 0 of `--seed`.
    Random,
    /// Every coordinate at the first value of its value list (−1 for spin, 0 for binary).
    Zeros,
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
    /// Target mean acceptance probability of the step-size adaptation (default 0.574, the
    /// optimal MALA rate; 0.5 for acs-dmala, the official ACS scripts' value).
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
    /// Output file for every kept state (columns chain,step,x0,x1,…).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Checks the numeric arguments that do not need the model.
fn check_args(args: &Args) -> Result<(), CliError> {
    args.run.check_step_size()?;
    if let Some(t) = args.target_accept
        && !(t > 0.0 && t < 1.0)
    {
        return Err(CliError::input(format!("--target-accept must be in (0, 1), got {t}")));
    }
    if args.chains == 0 {
        return Err(CliError::input("--chains must be at least 1"));
    }
    if args.thin == 0 {
        return Err(CliError::input("--thin must be at least 1"));
    }
    if args.batch_size == Some(0) {
        return Err(CliError::input("--batch-size must be at least 1"));
    }
    if args.trace.as_ref() == Some(&args.out) {
        return Err(CliError::input("--trace and --out name the same file"));
    }
    Ok(())
}

/// One task's view: advances the progress bar and keeps the traced states.
struct SampleObserver {
    bar: indicatif::ProgressBar,
    n_chains: usize,
    pending: u64,
    keep: Option<(usize, usize)>,
    /// Steps run before this run (the warm-up), so trace steps count from the chains' start.
    offset: usize,
    kept_steps: Vec<usize>,
    kept_states: Vec<u32>,
}

impl Observer for SampleObserver {
    fn observe(&mut self, ctx: &StepContext, states: States<'_>, _info: &[StepInfo]) {
        // The bar is shared by all tasks; batching increments keeps it off the hot path.
        self.pending += self.n_chains as u64;
        if self.pending >= 4096 {
            self.bar.inc(self.pending);
            self.pending = 0;
        }
        let step = ctx.step + self.offset;
        if let Some((burn_in, thin)) = self.keep
            && step > burn_in
            && (step - burn_in).is_multiple_of(thin)
        {
            self.kept_steps.push(step);
            self.kept_states.extend_from_slice(states.positions());
        }
    }
}

/// Runs `dlp sample`.
pub fn run(args: Args) -> Result<(), CliError> {
    check_args(&args)?;
    let adapt = args.run.adapts();
    let model = dlp_models::load_model(&args.run.model).map_err(CliError::input)?;
    check_writable("--out", &args.out)?;
    if let Some(trace) = &args.trace {
        check_writable("--trace", trace)?;
    }
    let target: &dyn dlp_core::Target = &model;
    let space = target.space().clone();
    dlp_cli::warn_if_not_ergodic(&args.run.sampler, &space);
    let d = space.d;
    let mut x0 = dlp_cli::initial_states(&space, args.chains, args.init == Init::Random, args.seed);
    let options = RunOptions { seed: args.seed, threads: args.threads, chains_per_task: 0 };
    // Warm-up adaptation: α adapts over the burn-in, then the kept run uses the frozen α.
    let (mut alpha, mut alpha_min, mut warm) = (None, None, 0);
    let mut adapted_note = String::new();
    if adapt {
        let warmup = args.burn_in.unwrap_or(args.steps / 2);
        if warmup == 0 || warmup > args.steps {
            return Err(CliError::input(format!(
                "step-size adaptation needs 1 ≤ --burn-in ≤ --steps warm-up steps, got {warmup} of {}",
                args.steps
            )));
        }
        let target_accept = args.target_accept.unwrap_or_else(|| default_target_accept(&args.run.sampler));
        let opts = AdaptOptions {
            warmup,
            target_accept,
            window: warmup.min(dlp_samplers::adapt::DEFAULT_WINDOW),
            ..Default::default()
        };
        let params = args.run.params(None, args.batch_size);
        let a =
            adapt_step_size(&args.run.sampler, &params, target, &x0, &opts, &options).map_err(CliError::from_run)?;
        warm = a.windows * opts.window;
        if !args.quiet {
            let min = a.step_size_min.map(|m| format!(", α_min {m:.6}")).unwrap_or_default();
            eprintln!(
                "{}: step size adapted to {:.6}{min} over {warm} warm-up steps (mean acceptance {:.3} in the last window, target {target_accept})",
                args.run.sampler, a.step_size, a.last_accept
            );
        }
        alpha = Some(a.step_size);
        alpha_min = a.step_size_min;
        let min = a.step_size_min.map(|m| format!(" --step-size-min {m}")).unwrap_or_default();
        adapted_note = format!(
            " --step-size {}{min} (adapted over {warm} warm-up steps toward acceptance {target_accept}; last window {:.4})",
            a.step_size, a.last_accept
        );
        x0 = a.positions;
    }
    let mut params = args.run.params(alpha, args.batch_size);
    params.step_size_min = alpha_min.or(params.step_size_min);
    if !adapt {
        let min = params.step_size_min.map(|m| format!(" --step-size-min {m}")).unwrap_or_default();
        adapted_note = params.step_size.map(|a| format!(" --step-size {a}{min}")).unwrap_or_default();
    }
    let sampler = dlp_samplers::build_sampler(&args.run.sampler, &params).map_err(CliError::input)?;
    let steps = args.steps - warm;
    let bar = progress_bar((args.chains * steps) as u64, &format!("{} ×{}", sampler.name(), args.chains), args.quiet);
    let keep = args.trace.as_ref().map(|_| (args.burn_in.unwrap_or(warm), args.thin));
    let output = run_chains(sampler.as_ref(), target, &x0, steps, &options, |_, n| SampleObserver {
        bar: bar.clone(),
        n_chains: n,
        pending: 0,
        keep,
        offset: warm,
        kept_steps: Vec::new(),
        kept_states: Vec::new(),
    })
    .map_err(CliError::from_run)?;
    bar.finish_and_clear();

    if let Some(trace) = &args.trace {
        let text = trace_csv(&space, &output.observers);
        atomic_write(trace, text.as_bytes())
            .map_err(|e| CliError::Input(format!("--trace {}: cannot write: {}", trace.display(), io_reason(&e))))?;
    }
    debug_assert_eq!(output.final_states.len(), args.chains * d);
    // Provenance as a `#` comment line (the samples grammar skips it), so that the adapted
    // step size travels with the samples it produced.
    let text = format!(
        "# dlp sample --sampler {}{adapted_note} --chains {} --steps {} --seed {}\n{}",
        args.run.sampler,
        args.chains,
        args.steps,
        args.seed,
        dlp_models::format_samples(&space, &output.final_states, true)
    );
    if let Err(e) = atomic_write(&args.out, text.as_bytes()) {
        // No partial output: the trace goes too if the final states cannot be written.
        if let Some(trace) = &args.trace {
            let _ = std::fs::remove_file(trace);
        }
        return Err(CliError::Input(format!("--out {}: cannot write: {}", args.out.display(), io_reason(&e))));
    }
    Ok(())
}

/// The trace as CSV: header `chain,step,x0,…`, rows ordered by chain then step, user values.
fn trace_csv(space: &Space, observers: &[SampleObserver]) -> String {
    let d = space.d;
    let mut out = String::from("chain,step");
    for i in 0..d {
        let _ = write!(out, ",x{i}");
    }
    out.push('\n');
    let mut chain = 0;
    for obs in observers {
        for j in 0..obs.n_chains {
            for (k, step) in obs.kept_steps.iter().enumerate() {
                let row = &obs.kept_states[(k * obs.n_chains + j) * d..(k * obs.n_chains + j + 1) * d];
                let _ = write!(out, "{chain},{step}");
                for &c in row {
                    let _ = write!(out, ",{}", space.value(c));
                }
                out.push('\n');
            }
            chain += 1;
        }
    }
    out
}
