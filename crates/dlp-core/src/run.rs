//! The parallel chain runner.
//!
//! Chains are split into tasks of consecutive chains; each task owns its [`Chains`], the
//! streams of its chains and an [`Observer`], and the tasks run in parallel on rayon.
//! Chain `j` always draws from `chain_rng(seed, j)` and targets evaluate rows
//! independently, so the output is bit-identical for any thread count and task size.
//! A sampler whose step couples its chains ([`Coupling::Joint`], interacting particles) runs
//! as one task. A sampler that reads minibatches gets, at step t, the B items drawn from
//! `minibatch_rng(seed, t)` — the same for every task, so shared by all chains of the step.
//! Discrete (`u32`) and continuous (`f64`) samplers share this one runner: [`run_chains`] and
//! [`crate::continuous::run_continuous`] are thin front ends over [`run_tasks`].

use crate::error::EvalError;
use crate::rng::{ChainRng, chain_rngs, minibatch_rng};
use crate::sampler::{Chains, Coupling, Sampler, SamplerError, StepInfo};
use crate::target::{Batch, Target};
use rayon::prelude::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// How to run a set of chains.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Master seed; chain j uses stream j + 1 of it.
    pub seed: u64,
    /// Worker threads (0 = rayon's global pool, normally one per core).
    pub threads: usize,
    /// Chains per parallel task (0 = split evenly over the threads). Does not change results.
    pub chains_per_task: usize,
}

/// Where a task is when its observer is called.
#[derive(Clone, Copy, Debug)]
pub struct StepContext {
    /// Steps completed so far (1 after the first step).
    pub step: usize,
    /// Global index of the task's first chain.
    pub first_chain: usize,
    /// Seconds this task has spent inside `step` so far (sampler time, excluding observers).
    pub step_seconds: f64,
}

/// Watches one task's chains; one observer per task, merged by the caller afterwards.
/// `X` is the state element (`u32` discrete, `f64` continuous).
pub trait Observer<X = u32>: Send {
    /// Called once with the initial states before the first step.
    fn start(&mut self, first_chain: usize, positions: &[X]) {
        let _ = (first_chain, positions);
    }
    /// Called after every step with the task's states and step records.
    fn observe(&mut self, ctx: &StepContext, states: States<'_, X>, info: &[StepInfo]);
}

/// The task's current states, handed to [`Observer::observe`] unconverted: fast paths that
/// keep their own layout (the lattice DULA grids) build `n × d` positions only when an
/// observer asks, so observers that look at states every k-th step, or never, do not pay
/// for the conversion on the other steps.
pub struct States<'a, X = u32>(&'a dyn Chains<X>);

impl<X> Clone for States<'_, X> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<X> Copy for States<'_, X> {}

impl<'a, X> States<'a, X> {
    /// Positions of the task's chains, `n × d` row-major.
    pub fn positions(&self) -> &'a [X] {
        self.0.positions()
    }

    /// Cached log-densities of the task's chains, when the sampler keeps them.
    pub fn log_densities(&self) -> Option<&'a [f64]> {
        self.0.log_densities()
    }
}

/// An observer that records nothing.
impl<X> Observer<X> for () {
    fn observe(&mut self, _: &StepContext, _: States<'_, X>, _: &[StepInfo]) {}
}

/// An optional observer: `None` records nothing (a piece a front end turns on by a flag).
impl<X, O: Observer<X>> Observer<X> for Option<O> {
    fn start(&mut self, first_chain: usize, positions: &[X]) {
        if let Some(o) = self {
            o.start(first_chain, positions);
        }
    }
    fn observe(&mut self, ctx: &StepContext, states: States<'_, X>, info: &[StepInfo]) {
        if let Some(o) = self {
            o.observe(ctx, states, info);
        }
    }
}

/// Tuples of observers are observers: each piece sees every call, in order, so front ends
/// compose library pieces (a progress bar, a trace, tallies) instead of writing one observer
/// per front end.
macro_rules! tuple_observer {
    ($($name:ident . $i:tt),+) => {
        impl<X, $($name: Observer<X>),+> Observer<X> for ($($name,)+) {
            fn start(&mut self, first_chain: usize, positions: &[X]) {
                $(self.$i.start(first_chain, positions);)+
            }
            fn observe(&mut self, ctx: &StepContext, states: States<'_, X>, info: &[StepInfo]) {
                $(self.$i.observe(ctx, states, info);)+
            }
        }
    };
}
tuple_observer!(A.0);
tuple_observer!(A.0, B.1);
tuple_observer!(A.0, B.1, C.2);
tuple_observer!(A.0, B.1, C.2, D.3);

/// What a run returns.
pub struct RunOutput<O, X = u32> {
    /// The observers, in chain order.
    pub observers: Vec<O>,
    /// Final states of all chains, `n × d` row-major.
    pub final_states: Vec<X>,
    /// Seconds each task spent inside `step`.
    pub task_step_seconds: Vec<f64>,
    /// Wall-clock seconds of the whole parallel run.
    pub wall_seconds: f64,
    /// `Some` when an interrupt stopped the run early ([`run_chains_until_interrupted`]):
    /// the states and observers are then those after its first `steps` steps.
    pub stopped: Option<Stopped>,
}

/// How an interrupt ([`crate::capability::Interrupt`]) ends a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnInterrupt {
    /// The run fails with the interrupt's error ([`run_chains`]).
    Fail,
    /// The run stops with what ran ([`run_chains_until_interrupted`]).
    Stop,
}

/// Where an interrupted run stopped ([`RunOutput::stopped`]).
#[derive(Clone, Debug)]
pub struct Stopped {
    /// The steps every chain completed: the first `steps` steps of the uninterrupted run.
    pub steps: usize,
    /// The interrupt's error.
    pub reason: EvalError,
}

struct Task<'t, O, X> {
    first_chain: usize,
    chains: Box<dyn Chains<X> + 't>,
    rngs: Vec<ChainRng>,
    info: Vec<StepInfo>,
    observer: O,
    step_seconds: f64,
    /// The minibatch of the current step (buffer reused between steps).
    perm: Vec<usize>,
    /// Steps completed.
    done: usize,
}

/// What the runner needs to know of a sampler, whatever its state type.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// The sampler's name, for errors.
    pub name: String,
    /// Whether the chains may be split into tasks.
    pub coupling: Coupling,
    /// `Some((B, N))` when every step reads a minibatch of B of the target's N items.
    pub minibatch: Option<(usize, usize)>,
}

impl RunPlan {
    /// The plan of a discrete sampler on `target` (checks that a minibatch sampler meets a
    /// data model and that B ≤ N).
    pub fn of(sampler: &dyn Sampler, target: &dyn Target) -> Result<Self, SamplerError> {
        Self::new(sampler.name(), sampler.coupling(), sampler.minibatch(), target.capabilities().n_data)
    }

    /// The plan from its parts; `n_data` is the target's N, if it has data terms.
    pub fn new(
        name: String,
        coupling: Coupling,
        batch: Option<usize>,
        n_data: Option<usize>,
    ) -> Result<Self, SamplerError> {
        let minibatch = match (batch, n_data) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(SamplerError::Unsupported {
                    sampler: name,
                    message: "the model is not a sum over data items (it has no minibatch gradients)".into(),
                });
            }
            (Some(b), Some(n)) if b == 0 || b > n => {
                return Err(SamplerError::BadParameter {
                    sampler: name,
                    message: format!("batch_size (B) must be ≥ 1 and ≤ N = {n} data items, got {b}"),
                });
            }
            (Some(b), Some(n)) => Some((b, n)),
        };
        Ok(RunPlan { name, coupling, minibatch })
    }
}

/// Draws B distinct items of 0..N uniformly for step `step` into `items` (reused between
/// steps), from [`minibatch_rng`] — so the batch depends on `(seed, step)` only — with
/// `rand::seq::index::sample` (O(B) for B ≪ N, where a shuffle of 0..N would cost O(N) per
/// step). B = N takes no draws and gives the items in order, so a full-batch stochastic
/// sampler equals its exact parent.
pub fn draw_minibatch(seed: u64, step: usize, b: usize, items: &mut Vec<usize>, n: usize) -> &[usize] {
    items.clear();
    if b >= n {
        items.extend(0..n);
    } else {
        items.extend(rand::seq::index::sample(&mut minibatch_rng(seed, step), n, b));
    }
    items
}

/// Runs `x0.len() / d` chains of `sampler` on `target` for `steps` steps.
/// `make_observer(first_chain, n_chains)` builds each task's observer.
pub fn run_chains<O, F>(
    sampler: &dyn Sampler,
    target: &dyn Target,
    x0: &[u32],
    steps: usize,
    options: &RunOptions,
    make_observer: F,
) -> Result<RunOutput<O>, SamplerError>
where
    O: Observer,
    F: Fn(usize, usize) -> O + Sync,
{
    target.space().check_states(x0).map_err(SamplerError::BadInitialState)?;
    let plan = RunPlan::of(sampler, target)?;
    let start = |x: &[u32]| sampler.start(target, x);
    let interrupt = target.capabilities().interrupt;
    let check = || interrupt.and_then(|i| i.interrupted());
    run_tasks(&plan, target.space().d, x0, steps, options, &start, &check, OnInterrupt::Fail, make_observer)
}

/// As [`run_chains`], except that an interrupt stops the run instead of failing it: each
/// task stops after the step it is in, the tasks behind the furthest one then run up to its
/// step S (without polling), and the output holds every chain after S steps with
/// [`RunOutput::stopped`] set, so it equals the first S steps of the uninterrupted run
/// (observers included). An evaluation error still fails the run.
pub fn run_chains_until_interrupted<O, F>(
    sampler: &dyn Sampler,
    target: &dyn Target,
    x0: &[u32],
    steps: usize,
    options: &RunOptions,
    make_observer: F,
) -> Result<RunOutput<O>, SamplerError>
where
    O: Observer,
    F: Fn(usize, usize) -> O + Sync,
{
    target.space().check_states(x0).map_err(SamplerError::BadInitialState)?;
    let plan = RunPlan::of(sampler, target)?;
    let start = |x: &[u32]| sampler.start(target, x);
    let interrupt = target.capabilities().interrupt;
    let check = || interrupt.and_then(|i| i.interrupted());
    run_tasks(&plan, target.space().d, x0, steps, options, &start, &check, OnInterrupt::Stop, make_observer)
}

/// The runner shared by every state type: splits the chains into tasks (one task for
/// [`Coupling::Joint`]), runs them on rayon, draws each step's minibatch, and stops at the
/// first evaluation error. `start` starts the chains of one task; `check`, polled after every
/// step, returns an interrupt ([`crate::capability::Interrupt`]), which fails the run or stops
/// it with what ran (`on_interrupt`; see [`run_chains_until_interrupted`]).
// The start callback's type is spelled out (not aliased) so that its lifetimes stay those the
// two front ends infer.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn run_tasks<'t, X, O, F>(
    plan: &RunPlan,
    d: usize,
    x0: &[X],
    steps: usize,
    options: &RunOptions,
    start: &(dyn Fn(&[X]) -> Result<Box<dyn Chains<X> + 't>, SamplerError> + Sync),
    check: &(dyn Fn() -> Option<EvalError> + Sync),
    on_interrupt: OnInterrupt,
    make_observer: F,
) -> Result<RunOutput<O, X>, SamplerError>
where
    X: Copy + Send + Sync,
    O: Observer<X>,
    F: Fn(usize, usize) -> O + Sync,
{
    let n = x0.len() / d.max(1);
    if n == 0 {
        return Err(SamplerError::BadInitialState("no chains".into()));
    }
    let threads = if options.threads == 0 { rayon::current_num_threads() } else { options.threads };
    let per_task = match plan.coupling {
        Coupling::Joint => n,
        Coupling::Independent if options.chains_per_task == 0 => n.div_ceil(threads),
        Coupling::Independent => options.chains_per_task,
    };
    let mut tasks = Vec::new();
    for first in (0..n).step_by(per_task) {
        let m = per_task.min(n - first);
        let chains = start(&x0[first * d..(first + m) * d])?;
        let mut observer = make_observer(first, m);
        observer.start(first, chains.positions());
        tasks.push(Task {
            first_chain: first,
            chains,
            rngs: chain_rngs(options.seed, first, m),
            info: vec![StepInfo::default(); m],
            observer,
            step_seconds: 0.0,
            perm: Vec::new(),
            done: 0,
        });
    }
    let seed = options.seed;
    // Set by the first task that fails, so that the others stop at their next step instead of
    // running to the end of a run whose output will be discarded.
    let failed = AtomicBool::new(false);
    // With `OnInterrupt::Stop`: set by the first task that sees the interrupt (`reason` holds
    // it); every task then stops after its current step.
    let stopping = AtomicBool::new(false);
    let reason: Mutex<Option<EvalError>> = Mutex::new(None);
    // Runs `task` up to step `until`, polling the interrupt after each step when `poll`.
    let advance = |task: &mut Task<'_, O, X>, until: usize, poll: bool| -> Result<(), SamplerError> {
        while task.done < until {
            if failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            if poll && stopping.load(Ordering::Relaxed) {
                return Ok(());
            }
            let step = task.done + 1;
            let t0 = Instant::now();
            let batch = match plan.minibatch {
                None => Batch::Full,
                Some((b, n_data)) => Batch::Items(draw_minibatch(seed, step, b, &mut task.perm, n_data)),
            };
            if let Err(e) = task.chains.try_step(&mut task.rngs, &mut task.info, batch) {
                failed.store(true, Ordering::Relaxed);
                return Err(SamplerError::Eval(e));
            }
            task.step_seconds += t0.elapsed().as_secs_f64();
            task.done = step;
            let ctx = StepContext { step, first_chain: task.first_chain, step_seconds: task.step_seconds };
            task.observer.observe(&ctx, States(task.chains.as_ref()), &task.info);
            if !poll {
                continue;
            }
            if let Some(e) = check() {
                if on_interrupt == OnInterrupt::Fail {
                    failed.store(true, Ordering::Relaxed);
                    return Err(SamplerError::Eval(e));
                }
                if let Ok(mut r) = reason.lock() {
                    r.get_or_insert(e);
                }
                stopping.store(true, Ordering::Relaxed);
                return Ok(());
            }
        }
        Ok(())
    };
    // The first pass polls the interrupt. The tasks run unsynchronised, so after an interrupt
    // (Stop) they stand at different steps: a second pass brings every task to the furthest,
    // S, so that all chains end after the same S steps.
    let run_all = |tasks: &mut Vec<Task<'_, O, X>>| -> Result<(), SamplerError> {
        tasks.par_iter_mut().try_for_each(|task| advance(task, steps, true))?;
        if stopping.load(Ordering::Relaxed) {
            let s = tasks.iter().map(|t| t.done).max().unwrap_or(0);
            tasks.par_iter_mut().try_for_each(|task| advance(task, s, false))?;
        }
        Ok(())
    };
    let t0 = Instant::now();
    if options.threads == 0 {
        run_all(&mut tasks)?;
    } else {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(options.threads)
            .build()
            .map_err(|e| SamplerError::BadParameter { sampler: plan.name.clone(), message: e.to_string() })?;
        pool.install(|| run_all(&mut tasks))?;
    }
    let wall_seconds = t0.elapsed().as_secs_f64();
    let done = tasks.iter().map(|t| t.done).max().unwrap_or(0);
    let mut final_states = Vec::with_capacity(x0.len());
    let mut observers = Vec::with_capacity(tasks.len());
    let mut task_step_seconds = Vec::with_capacity(tasks.len());
    for task in tasks {
        final_states.extend_from_slice(task.chains.positions());
        observers.push(task.observer);
        task_step_seconds.push(task.step_seconds);
    }
    let stopped = reason.into_inner().ok().flatten().map(|reason| Stopped { steps: done, reason });
    Ok(RunOutput { observers, final_states, task_step_seconds, wall_seconds, stopped })
}
