//! The parallel chain runner.
//!
//! Chains are split into tasks of consecutive chains; each task owns its [`Chains`], the
//! streams of its chains and an [`Observer`], and the tasks run in parallel on rayon.
//! Chain `j` always draws from `chain_rng(seed, j)` and targets evaluate rows
//! independently, so the output is bit-identical for any thread count and task size.

use crate::rng::{ChainRng, chain_rngs};
use crate::sampler::{Chains, Sampler, SamplerError, StepInfo};
use crate::target::Target;
use rayon::prelude::*;
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
pub trait Observer: Send {
    /// Called once with the initial states before the first step.
    fn start(&mut self, first_chain: usize, positions: &[u32]) {
        let _ = (first_chain, positions);
    }
    /// Called after every step with the task's states and step records.
    fn observe(&mut self, ctx: &StepContext, states: States<'_>, info: &[StepInfo]);
}

/// The task's current states, handed to [`Observer::observe`] unconverted: fast paths that
/// keep their own layout (the lattice DULA grids) build `n × d` positions only when an
/// observer asks, so observers that look at states every k-th step, or never, do not pay
/// for the conversion on the other steps.
#[derive(Clone, Copy)]
pub struct States<'a>(&'a dyn Chains);

impl<'a> States<'a> {
    /// Positions of the task's chains, `n × d` row-major.
    pub fn positions(&self) -> &'a [u32] {
        self.0.positions()
    }
}

/// An observer that records nothing.
impl Observer for () {
    fn observe(&mut self, _: &StepContext, _: States<'_>, _: &[StepInfo]) {}
}

/// What a run returns.
pub struct RunOutput<O> {
    /// The observers, in chain order.
    pub observers: Vec<O>,
    /// Final states of all chains, `n × d` row-major.
    pub final_states: Vec<u32>,
    /// Seconds each task spent inside `step`.
    pub task_step_seconds: Vec<f64>,
    /// Wall-clock seconds of the whole parallel run.
    pub wall_seconds: f64,
}

struct Task<'t, O> {
    first_chain: usize,
    chains: Box<dyn Chains + 't>,
    rngs: Vec<ChainRng>,
    info: Vec<StepInfo>,
    observer: O,
    step_seconds: f64,
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
    let d = target.space().d;
    target.space().check_states(x0).map_err(SamplerError::BadInitialState)?;
    let n = x0.len() / d;
    if n == 0 {
        return Err(SamplerError::BadInitialState("no chains".into()));
    }
    let threads = if options.threads == 0 { rayon::current_num_threads() } else { options.threads };
    let per_task = if options.chains_per_task == 0 { n.div_ceil(threads) } else { options.chains_per_task };
    let mut tasks = Vec::new();
    for first in (0..n).step_by(per_task) {
        let m = per_task.min(n - first);
        let chains = sampler.start(target, &x0[first * d..(first + m) * d])?;
        let mut observer = make_observer(first, m);
        observer.start(first, chains.positions());
        tasks.push(Task {
            first_chain: first,
            chains,
            rngs: chain_rngs(options.seed, first, m),
            info: vec![StepInfo::default(); m],
            observer,
            step_seconds: 0.0,
        });
    }
    let run_all = |tasks: &mut Vec<Task<'_, O>>| {
        tasks.par_iter_mut().for_each(|task| {
            for step in 1..=steps {
                let t0 = Instant::now();
                task.chains.step(&mut task.rngs, &mut task.info);
                task.step_seconds += t0.elapsed().as_secs_f64();
                let ctx = StepContext { step, first_chain: task.first_chain, step_seconds: task.step_seconds };
                task.observer.observe(&ctx, States(task.chains.as_ref()), &task.info);
            }
        })
    };
    let t0 = Instant::now();
    if options.threads == 0 {
        run_all(&mut tasks);
    } else {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(options.threads)
            .build()
            .map_err(|e| SamplerError::BadParameter { sampler: sampler.name(), message: e.to_string() })?;
        pool.install(|| run_all(&mut tasks));
    }
    let wall_seconds = t0.elapsed().as_secs_f64();
    let mut final_states = Vec::with_capacity(x0.len());
    let mut observers = Vec::with_capacity(tasks.len());
    let mut task_step_seconds = Vec::with_capacity(tasks.len());
    for task in tasks {
        final_states.extend_from_slice(task.chains.positions());
        observers.push(task.observer);
        task_step_seconds.push(task.step_seconds);
    }
    Ok(RunOutput { observers, final_states, task_step_seconds, wall_seconds })
}
