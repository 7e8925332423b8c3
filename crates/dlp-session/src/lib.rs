//! One sampling session for every front end (`dlp sample`, Python's `dlp_mcmc.sample`, the
//! sampler setup of `dlp infill`): the sampler is resolved once against the registry
//! (`dlp_samplers::registry`), its step size adapted when asked or when it adapts by default
//! (`dlp_samplers::adapt`), the fixed-α kernel built, the chains run (`dlp_core::run_chains`)
//! and watched by observer pieces ([`Progress`], [`Trace`], [`Tallies`]) that a front end
//! composes as a tuple. Front ends keep only what is theirs: argument parsing, files, arrays.
//!
//! Errors are [`Error`]: one line, bad input or an internal (device) failure, which `dlp`
//! turns into exit codes 2 and 1 and Python into `ValueError` and `RuntimeError`. Messages
//! name parameters as the front end spells them ([`Spelling`]: `--burn-in` or `burn_in`).

pub mod discs;
mod observe;

pub use observe::{Progress, Tallies, Trace};

use dlp_core::io::one_line;
use dlp_core::{Observer, RunOptions, RunOutput, Sampler, SamplerError, Space, Target, run_chains_until_interrupted};
use dlp_samplers::SamplerParams;
use dlp_samplers::adapt::{AdaptOptions, DEFAULT_WINDOW, adapt_step_size, default_target_accept};
use std::fmt;
use std::sync::Arc;

/// Why a front end's request failed (`gof.md` §10.5): the `dlp` binary's `CliError`.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// Bad input or impossible parameters (`dlp`: exit 2). The text is what follows `error: `.
    Input(String),
    /// A bug or an unexpected system failure (`dlp`: exit 1).
    Internal(String),
}

impl Error {
    /// Bad-input error from anything printable.
    pub fn input(message: impl fmt::Display) -> Self {
        Error::Input(message.to_string())
    }

    /// Internal error from anything printable.
    pub fn internal(message: impl fmt::Display) -> Self {
        Error::Internal(message.to_string())
    }

    /// The error that ends a run: a failed device (out of memory, lost device) is a system
    /// failure; everything else a sampler reports is about the input.
    pub fn from_run(e: SamplerError) -> Self {
        match e {
            SamplerError::Eval(dlp_core::EvalError::Device { .. }) => Error::Internal(e.to_string()),
            other => Error::Input(other.to_string()),
        }
    }

    /// The process exit code of `dlp` for this error: 2 for bad input, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_) => 2,
            Error::Internal(_) => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(m) => write!(f, "{}", one_line(m)),
            Error::Internal(m) => write!(f, "internal error: {}", one_line(m)),
        }
    }
}

impl std::error::Error for Error {}

/// How a front end names parameters in its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// Command-line flags: `--burn-in`.
    Flags,
    /// Keyword arguments: `burn_in`.
    Keywords,
}

impl Spelling {
    /// The front end's name of parameter `param` (given in snake case).
    pub fn name(self, param: &str) -> String {
        match self {
            Spelling::Flags => format!("--{}", param.replace('_', "-")),
            Spelling::Keywords => param.to_string(),
        }
    }
}

/// The step size a front end asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepSize {
    /// None given: adapted when the sampler adapts (a Metropolis-adjusted sampler with a step
    /// size, e.g. dmala), else none (`dlp sample` and `dlp infill` without `--step-size`).
    Default,
    /// Adapt it during the warm-up (`auto`); refused for samplers that cannot adapt.
    Auto,
    /// This α.
    Fixed(f64),
    /// None and no adaptation (Python's `step_size=None`, for samplers without one).
    Without,
}

/// What a front end asks to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Registry name of the sampler (`dmala`, `gwg`, `acs-dmala-8`, …).
    pub sampler: String,
    /// The step size.
    pub step_size: StepSize,
    /// Smallest step size α_min of the cyclical samplers.
    pub step_size_min: Option<f64>,
    /// Diagonal preconditioner of pdula/pdmala.
    pub preconditioner: Option<Vec<f64>>,
    /// Minibatch size of stochastic-gradient samplers.
    pub batch_size: Option<usize>,
    /// Inverse-temperature ladder of replica exchange (`pt-<K>:<inner>`; adapted when none).
    pub ladder: Option<Vec<f64>>,
    /// Independent chains.
    pub chains: usize,
    /// Steps per chain, the adaptation's warm-up included.
    pub steps: usize,
    /// Steps discarded from the trace; with adaptation, the warm-up (default: half of `steps`).
    pub burn_in: Option<usize>,
    /// Keep every `thin`-th step after the burn-in in the trace.
    pub thin: usize,
    /// Target mean acceptance of the adaptation (default: the sampler's,
    /// `dlp_samplers::adapt::default_target_accept`).
    pub target_accept: Option<f64>,
    /// Show a progress bar on stderr ([`progress_bar`]).
    pub progress: bool,
}

impl Request {
    /// The checks that need no model, in the order every front end reports them.
    pub fn check(&self, spelling: Spelling) -> Result<(), Error> {
        let name = |p: &str| spelling.name(p);
        let positive = |p: &str, a: f64| {
            if a.is_finite() && a > 0.0 {
                Ok(())
            } else {
                Err(Error::Input(format!("{} must be a finite number > 0, got {a}", name(p))))
            }
        };
        if let StepSize::Fixed(a) = self.step_size {
            positive("step_size", a)?;
        }
        if let Some(a) = self.step_size_min {
            positive("step_size_min", a)?;
        }
        if let Some(t) = self.target_accept
            && !(t > 0.0 && t < 1.0)
        {
            return Err(Error::Input(format!("{} must be in (0, 1), got {t}", name("target_accept"))));
        }
        let at_least_1 = |p: &str| Err(Error::Input(format!("{} must be at least 1", name(p))));
        if self.chains == 0 {
            return at_least_1("chains");
        }
        if self.thin == 0 {
            return at_least_1("thin");
        }
        if self.batch_size == Some(0) {
            return at_least_1("batch_size");
        }
        Ok(())
    }

    /// The sampler parameters before adaptation (no step size when it is to be adapted).
    fn params(&self) -> SamplerParams {
        SamplerParams {
            step_size: match self.step_size {
                StepSize::Fixed(a) => Some(a),
                _ => None,
            },
            preconditioner: self.preconditioner.clone(),
            batch_size: self.batch_size,
            step_size_min: self.step_size_min,
            ladder: self.ladder.clone(),
        }
    }
}

/// The warm-up a session runs before the kept steps.
#[derive(Clone, Debug, PartialEq)]
struct WarmupPlan {
    steps: usize,
    target_accept: f64,
    /// Steps per adaptation window.
    window: usize,
}

/// Builds the kept run's kernel from the request's sampler name and the (adapted) parameters,
/// when it is not the registry's host sampler: `dlp sample --device` passes
/// `dlp_device::device_samplers::DeviceSampler` bound to its device and seed, so that the
/// same name runs as device chains (this crate stays free of candle).
pub type Builder = Arc<dyn Fn(&str, &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> + Send + Sync>;

/// A [`Builder`] with a `Debug` that does not print the closure.
#[derive(Clone)]
struct Kernels(Builder);

impl fmt::Debug for Kernels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Kernels(..)")
    }
}

/// A request resolved against the registry: whether and how long it adapts, and sampler
/// parameters that build (checked before any work).
#[derive(Clone, Debug)]
pub struct Session {
    request: Request,
    params: SamplerParams,
    warmup: Option<WarmupPlan>,
    kernels: Option<Kernels>,
}

/// What the warm-up chose (`dlp_samplers::adapt::Adapted`, plus what it was asked).
#[derive(Clone, Debug, PartialEq)]
pub struct Adaptation {
    /// The frozen step size ᾱ (α_max of cyclical DMALA; `None` when the sampler takes none).
    pub step_size: Option<f64>,
    /// The frozen α_min of cyclical DMALA.
    pub step_size_min: Option<f64>,
    /// The frozen ladder of replica exchange.
    pub ladder: Option<Vec<f64>>,
    /// Mean acceptance probability of the last window.
    pub last_accept: f64,
    /// Steps the warm-up ran (whole windows).
    pub steps: usize,
    /// The target acceptance it adapted toward.
    pub target_accept: f64,
}

/// The chains after the warm-up (or at their start without one) and the step sizes to build
/// the kept run's kernel with.
#[derive(Clone, Debug, PartialEq)]
pub struct Warmed {
    /// Positions of the chains, `chains × d`.
    pub positions: Vec<u32>,
    /// The step size of the kept run (adapted or given).
    pub step_size: Option<f64>,
    /// α_min of the kept run (adapted or given).
    pub step_size_min: Option<f64>,
    /// The ladder of the kept run (adapted or given; replica exchange only).
    pub ladder: Option<Vec<f64>>,
    /// Steps already run by the warm-up (0 without adaptation).
    pub warmup_steps: usize,
    /// The adaptation's result, when it ran.
    pub adaptation: Option<Adaptation>,
}

/// What the kept run's observers are told when they are made: where trace steps start and
/// count from, and the session's progress bar.
pub struct Stage {
    /// Warm-up steps run before (trace steps count from the chains' start).
    pub warmup_steps: usize,
    /// Trace steps are kept after this step: the request's burn-in, else the warm-up.
    pub burn_in: usize,
    /// Keep every `thin`-th step.
    pub thin: usize,
    bar: indicatif::ProgressBar,
}

impl Stage {
    /// The progress piece of a task of `n` chains (advancing the session's bar).
    pub fn progress(&self, n: usize) -> Progress {
        Progress::new(self.bar.clone(), n)
    }

    /// The trace piece of a task of `n` chains (the request's burn-in and thinning).
    pub fn trace(&self, n: usize) -> Trace {
        Trace::new(n, self.burn_in, self.thin, self.warmup_steps)
    }
}

/// What a session's run hands back.
pub struct Ran<O> {
    /// The runner's output: observers in chain order and final states.
    pub output: RunOutput<O>,
    /// The kernel's name.
    pub name: String,
    /// The step size used (adapted or given).
    pub step_size: Option<f64>,
    /// α_min used (adapted or given).
    pub step_size_min: Option<f64>,
    /// The ladder used (adapted or given; replica exchange only).
    pub ladder: Option<Vec<f64>>,
    /// Warm-up steps run before the kept ones.
    pub warmup_steps: usize,
    /// Steps of the kept run (`steps` − warm-up), as requested; `output.stopped` says how
    /// many ran when an interrupt stopped it.
    pub steps: usize,
    /// The adaptation's result, when it ran.
    pub adaptation: Option<Adaptation>,
}

impl Session {
    /// Resolves `request` (already [`Request::check`]ed) on `target`: decides once whether
    /// the step size adapts (`auto`, or none given to a sampler that adapts), checks the
    /// warm-up length, and that the sampler can adapt or builds with these parameters, so
    /// that parameter errors come before any work.
    pub fn resolve(request: Request, spelling: Spelling, target: &dyn Target) -> Result<Session, Error> {
        let adapts_by_default =
            || dlp_samplers::registry::find(&request.sampler).is_some_and(|(spec, _)| spec.adapts_step_size());
        let adapt = match request.step_size {
            StepSize::Auto => true,
            StepSize::Default => adapts_by_default(),
            StepSize::Fixed(_) | StepSize::Without => false,
        };
        let params = request.params();
        let mut warmup = None;
        if adapt {
            let steps = request.burn_in.unwrap_or(request.steps / 2);
            if steps == 0 || steps > request.steps {
                return Err(Error::Input(format!(
                    "step-size adaptation needs 1 ≤ {} ≤ {} warm-up steps, got {steps} of {}",
                    spelling.name("burn_in"),
                    spelling.name("steps"),
                    request.steps
                )));
            }
            if !adapts_by_default() {
                // The adaptation's own check gives the message (unknown name, or no step
                // size), before it touches the chains.
                let opts = AdaptOptions { warmup: steps, ..Default::default() };
                let err = adapt_step_size(&request.sampler, &params, target, &[], &opts, &RunOptions::default()).err();
                return Err(Error::from_run(
                    err.unwrap_or_else(|| SamplerError::UnknownSampler(request.sampler.clone(), String::new())),
                ));
            }
            let target_accept = request.target_accept.unwrap_or_else(|| default_target_accept(&request.sampler));
            warmup = Some(WarmupPlan { steps, target_accept, window: steps.min(DEFAULT_WINDOW) });
        } else {
            dlp_samplers::build_sampler(&request.sampler, &params).map_err(Error::input)?;
        }
        Ok(Session { request, params, warmup, kernels: None })
    }

    /// The session with its kept run's kernel built by `builder` instead of the registry's
    /// host sampler (device chains, [`Builder`]); the warm-up, when the session adapts, still
    /// runs the host sampler on the target (the same law), and the kept run starts from its
    /// chains with the adapted step size. Checks that `builder` accepts the request before
    /// any work (with a stand-in step size of 1 when the step size is still to be adapted).
    pub fn with_builder(mut self, builder: Builder) -> Result<Session, Error> {
        let mut params = self.params.clone();
        if self.adapts() {
            params.step_size = Some(1.0);
        }
        builder(&self.request.sampler, &params).map_err(Error::input)?;
        self.kernels = Some(Kernels(builder));
        Ok(self)
    }

    /// The session with adaptation windows of `window` steps (at least 1, at most the
    /// warm-up) instead of the default min(warm-up, 100): a caller that reproduces a protocol
    /// with its own window (the DISCS cells: a tenth of the burn-in).
    pub fn with_window(mut self, window: usize) -> Session {
        if let Some(plan) = &mut self.warmup {
            plan.window = window.clamp(1, plan.steps);
        }
        self
    }

    /// The request.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// Whether the step size is adapted before the kept run.
    pub fn adapts(&self) -> bool {
        self.warmup.is_some()
    }

    /// Runs the warm-up from `x0` when the session adapts (else hands `x0` back with the
    /// given step sizes). Seeds and threads come from `options`, as in the kept run.
    pub fn warm_up(&self, target: &dyn Target, x0: Vec<u32>, options: &RunOptions) -> Result<Warmed, SamplerError> {
        let Some(plan) = &self.warmup else {
            return Ok(Warmed {
                positions: x0,
                step_size: self.params.step_size,
                step_size_min: self.params.step_size_min,
                ladder: self.params.ladder.clone(),
                warmup_steps: 0,
                adaptation: None,
            });
        };
        let opts = AdaptOptions {
            warmup: plan.steps,
            target_accept: plan.target_accept,
            window: plan.window,
            ..Default::default()
        };
        let a = adapt_step_size(&self.request.sampler, &self.params, target, &x0, &opts, options)?;
        let steps = a.windows * opts.window;
        Ok(Warmed {
            step_size: a.step_size.or(self.params.step_size),
            step_size_min: a.step_size_min.or(self.params.step_size_min),
            ladder: a.ladder.clone().or_else(|| self.params.ladder.clone()),
            warmup_steps: steps,
            adaptation: Some(Adaptation {
                step_size: a.step_size,
                step_size_min: a.step_size_min,
                ladder: a.ladder,
                last_accept: a.last_accept,
                steps,
                target_accept: plan.target_accept,
            }),
            positions: a.positions,
        })
    }

    /// The kept run's kernel: the sampler with the warm-up's (or the given) step sizes.
    pub fn build(&self, warmed: &Warmed) -> Result<Box<dyn Sampler>, SamplerError> {
        let params = SamplerParams {
            step_size: warmed.step_size,
            step_size_min: warmed.step_size_min,
            ladder: warmed.ladder.clone(),
            ..self.params.clone()
        };
        match &self.kernels {
            Some(Kernels(build)) => build(&self.request.sampler, &params),
            None => dlp_samplers::build_sampler(&self.request.sampler, &params),
        }
    }

    /// The whole session: warm-up ([`Session::warm_up`]; `adapted` is told its result before
    /// the kept run starts), build, then the kept `steps` − warm-up steps from the warmed
    /// chains, each task watched by `make(stage, first_chain, n)`. With the request's
    /// `progress`, a bar `"<kernel> ×<chains>"` counts the kept chain-steps and is cleared
    /// at the end. The target's interrupt ([`dlp_core::capability::Interrupt`]) fails the
    /// warm-up but stops the kept run with what ran (`output.stopped`, see
    /// [`run_chains_until_interrupted`]).
    pub fn run<O, F>(
        &self,
        target: &dyn Target,
        x0: Vec<u32>,
        options: &RunOptions,
        adapted: impl FnOnce(&Adaptation),
        make: F,
    ) -> Result<Ran<O>, SamplerError>
    where
        O: Observer,
        F: Fn(&Stage, usize, usize) -> O + Sync,
    {
        let warmed = self.warm_up(target, x0, options)?;
        if let Some(a) = &warmed.adaptation {
            adapted(a);
        }
        let kernel = self.build(&warmed)?;
        let chains = self.request.chains;
        let steps = self.request.steps - warmed.warmup_steps;
        let bar =
            progress_bar((chains * steps) as u64, &format!("{} ×{chains}", kernel.name()), !self.request.progress);
        let stage = Stage {
            warmup_steps: warmed.warmup_steps,
            burn_in: self.request.burn_in.unwrap_or(warmed.warmup_steps),
            thin: self.request.thin,
            bar,
        };
        let output =
            run_chains_until_interrupted(kernel.as_ref(), target, &warmed.positions, steps, options, |first, n| {
                make(&stage, first, n)
            })?;
        stage.bar.finish_and_clear();
        Ok(Ran {
            output,
            name: kernel.name(),
            step_size: warmed.step_size,
            step_size_min: warmed.step_size_min,
            ladder: warmed.ladder.clone(),
            warmup_steps: warmed.warmup_steps,
            steps,
            adaptation: warmed.adaptation,
        })
    }
}

/// The initial batch of `dlp sample` and Python's `dlp_mcmc.sample`, `chains × d` indices: every
/// coordinate uniform over its values from setup stream 0 of `seed` when `random`, else every
/// coordinate at its first value (−1 for spin, 0 for binary).
pub fn initial_states(space: &Space, chains: usize, random: bool, seed: u64) -> Vec<u32> {
    use rand::RngExt;
    if !random {
        return vec![0; chains * space.d];
    }
    let mut rng = dlp_core::setup_rng(seed);
    let k = space.k() as u32;
    (0..chains * space.d).map(|_| rng.random_range(0..k)).collect()
}

/// A progress bar on stderr counting `len` units ([`dlp_core::progress::bar`]: plain log lines
/// every minute when stderr is not a terminal); hidden with `quiet`.
pub fn progress_bar(len: u64, message: &str, quiet: bool) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    dlp_core::progress::bar(len, message)
}
