//! `dlp_mcmc.sample`: the runner (`dlp_core::run_chains`) on a model, with the GIL released while
//! Rust runs and Ctrl-C honoured.
//!
//! The run goes on a scoped thread while the calling (normally the main) thread waits for it
//! without the GIL, waking every 50 ms to let Python run its signal handlers: Python only
//! runs them on the main thread, so a run that held that thread in Rust could not be
//! interrupted. A pending KeyboardInterrupt sets a flag that the [`Guarded`] target reports
//! as an evaluation error and as its interrupt capability, which the runner polls after every
//! step; the run stops there and
//! the exception is re-raised. A Python callback model runs as one task on one thread, so its
//! function is called once per sampler step with every chain (and never from two threads).

use crate::{PyModel, py_err, to_indices, to_values, value_error};
use dlp_core::capability::Interrupt;
use dlp_core::{Batch, Capabilities, EvalError, RunOptions, SamplerError, Space, Target};
use dlp_session::{Error as CliError, Progress, Ran, Request, Session, Spelling, StepSize, Tallies, Trace};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// `step_size`, if given, must be finite and > 0 (the CLI's `--step-size` rule).
pub fn check_step_size(step_size: Option<f64>) -> PyResult<()> {
    match step_size {
        Some(a) if !(a.is_finite() && a > 0.0) => {
            Err(value_error(format!("step_size must be a finite number > 0, got {a}")))
        }
        _ => Ok(()),
    }
}

/// A target that forwards everything to `inner` and reports an interrupt as an evaluation
/// error: from `evaluate`, and as its [`Interrupt`] capability, which the runner polls after
/// every step (fast paths may never call `evaluate` inside a step), so the run stops at the
/// end of the current step.
struct Guarded<'a> {
    inner: &'a dyn Target,
    stop: Stop<'a>,
}

/// The interrupt flag set by the waiting thread.
struct Stop<'a>(&'a AtomicBool);

impl Interrupt for Stop<'_> {
    fn interrupted(&self) -> Option<EvalError> {
        self.0
            .load(Ordering::Relaxed)
            .then(|| EvalError::Device { device: "python".into(), message: "interrupted".into() })
    }
}

impl Target for Guarded<'_> {
    fn space(&self) -> &Space {
        self.inner.space()
    }
    fn evaluate(&self, xs: &[u32], batch: Batch<'_>, f: &mut [f64], grad: Option<&mut [f64]>) -> Result<(), EvalError> {
        if let Some(e) = self.stop.interrupted() {
            return Err(e);
        }
        self.inner.evaluate(xs, batch, f, grad)
    }
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities { interrupt: Some(&self.stop), ..self.inner.capabilities() }
    }
}

/// One task's observers: the progress bar, the tallies and, with `keep_trace`, the trace.
type Record = (Progress, Tallies, Option<Trace>);

/// Runs `chains` chains of `sampler` for `steps` steps (see `dlp_mcmc.sample`). With `adapt` the
/// step size adapts first over `burn_in` warm-up steps (half of `steps` when 0), as `dlp
/// sample --step-size auto` does (`dlp_samplers::adapt`). Returns a dict of numpy arrays:
/// `final` (chains × d values), `trace` (kept × chains × d, or None), `trace_steps`,
/// `accept_rate` and `accept_prob` (per chain, mean over the steps after the warm-up),
/// `changed` (per chain, mean coordinates changed per step), and the step sizes used.
#[pyfunction]
#[pyo3(signature = (model, sampler, *, step_size, step_size_min, preconditioner, batch_size, chains, steps, burn_in, thin, seed, threads, init, random_init, keep_trace, progress=false, adapt=false, target_accept=None))]
#[allow(clippy::too_many_arguments)]
pub fn sample<'py>(
    py: Python<'py>,
    model: &PyModel,
    sampler: &str,
    step_size: Option<f64>,
    step_size_min: Option<f64>,
    preconditioner: Option<Vec<f64>>,
    batch_size: Option<usize>,
    chains: usize,
    steps: usize,
    burn_in: usize,
    thin: usize,
    seed: u64,
    threads: usize,
    init: Option<PyReadonlyArray2<'py, i64>>,
    random_init: bool,
    keep_trace: bool,
    progress: bool,
    adapt: bool,
    target_accept: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let request = Request {
        sampler: sampler.to_string(),
        step_size: match (adapt, step_size) {
            (true, _) => StepSize::Auto,
            (false, Some(a)) => StepSize::Fixed(a),
            // Python's `step_size=None` means "none" (for samplers without one), not "adapt".
            (false, None) => StepSize::Without,
        },
        step_size_min,
        preconditioner,
        batch_size,
        chains,
        steps,
        burn_in: (burn_in > 0).then_some(burn_in),
        thin,
        target_accept,
        progress,
    };
    request.check(Spelling::Keywords).map_err(py_err)?;
    let target = model.target();
    let space = target.space().clone();
    if let Some(h) = &request.preconditioner
        && h.len() != space.d
    {
        return Err(value_error(format!(
            "preconditioner has {} entries, the model has d = {} coordinates",
            h.len(),
            space.d
        )));
    }
    // Parameter errors before any work (the session checks that the sampler builds or adapts).
    let session = Session::resolve(request, Spelling::Keywords, target).map_err(py_err)?;
    // As the CLI: a sampler the registry flags as not irreducible and aperiodic here gets a
    // Python warning (RuntimeWarning) naming why.
    if let Some(why) = dlp_samplers::registry::not_ergodic_on(sampler, &space) {
        PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &std::ffi::CString::new(why)?, 1)?;
    }
    let x0 = match &init {
        Some(a) => {
            let x0 = to_indices(&space, a, "init")?;
            if x0.len() != chains * space.d {
                return Err(value_error(format!("init has {} rows, expected chains = {chains}", x0.len() / space.d)));
            }
            x0
        }
        None => dlp_session::initial_states(&space, chains, random_init, seed),
    };
    let callback = model.callback().is_some();
    // A callback model: one task on one thread, so one call per step for the whole batch.
    let options = if callback {
        RunOptions { seed, threads: 1, chains_per_task: chains }
    } else {
        RunOptions { seed, threads, chains_per_task: 0 }
    };
    let stop = AtomicBool::new(false);
    let guarded = Guarded { inner: target, stop: Stop(&stop) };
    // The session: adaptation (as `dlp sample`), the fixed-α kernel, the kept run.
    let go = || -> Result<Ran<Record>, SamplerError> {
        session.run(
            &guarded,
            x0.clone(),
            &options,
            |_| {},
            |stage, _, n| (stage.progress(n), Tallies::new(n), keep_trace.then(|| stage.trace(n))),
        )
    };
    let (result, interrupt) = py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let go = &go;
            s.spawn(move || {
                let _ = tx.send(go());
            });
            let mut interrupt: Option<PyErr> = None;
            loop {
                match rx.recv_timeout(Duration::from_millis(50)) {
                    Ok(r) => return (Some(r), interrupt),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if interrupt.is_none()
                            && let Err(e) = Python::attach(|py| py.check_signals())
                        {
                            interrupt = Some(e);
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    // The run thread panicked; the scope re-raises its panic.
                    Err(mpsc::RecvTimeoutError::Disconnected) => return (None, interrupt),
                }
            }
        })
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    if let Some(c) = model.callback()
        && let Some(e) = c.take_py_error()
    {
        return Err(e);
    }
    let ran = match result {
        Some(r) => r.map_err(|e| py_err(CliError::from_run(e)))?,
        None => return Err(pyo3::exceptions::PyRuntimeError::new_err("internal error: the sampling thread failed")),
    };
    let (output, steps) = (&ran.output, ran.steps);
    let d = space.d;
    let out = PyDict::new(py);
    out.set_item("final", to_values(py, &space, &output.final_states)?)?;
    let per_step = |v: Vec<f64>| PyArray1::from_vec(py, v.into_iter().map(|x| x / steps.max(1) as f64).collect());
    let mut acc = Vec::with_capacity(chains);
    let mut prob = Vec::with_capacity(chains);
    let mut changed = Vec::with_capacity(chains);
    for (_, t, _) in &output.observers {
        acc.extend(t.accepted.iter().map(|&a| a as f64));
        prob.extend_from_slice(&t.accept_prob);
        changed.extend(t.changed.iter().map(|&c| c as f64));
    }
    out.set_item("accept_rate", per_step(acc))?;
    out.set_item("accept_prob", per_step(prob))?;
    out.set_item("changed", per_step(changed))?;
    let traces: Vec<&Trace> = output.observers.iter().filter_map(|(_, _, t)| t.as_ref()).collect();
    if keep_trace {
        // Each task kept (steps × its chains × d); interleave into (steps × all chains × d).
        let kept_steps = traces.first().map_or(&[][..], |t| t.steps());
        let mut trace = Vec::with_capacity(kept_steps.len() * chains * d);
        for k in 0..kept_steps.len() {
            for t in &traces {
                trace.extend_from_slice(t.at(k));
            }
        }
        let values = to_values(py, &space, &trace)?;
        out.set_item("trace", values.reshape([kept_steps.len(), chains, d])?)?;
        let kept_steps: Vec<i64> = kept_steps.iter().map(|&s| s as i64).collect();
        out.set_item("trace_steps", PyArray1::from_vec(py, kept_steps))?;
    } else {
        out.set_item("trace", py.None())?;
        out.set_item("trace_steps", py.None())?;
    }
    out.set_item("sampler", &ran.name)?;
    out.set_item("step_size", ran.step_size)?;
    out.set_item("step_size_min", ran.step_size_min)?;
    out.set_item("warmup_steps", ran.warmup_steps)?;
    Ok(out)
}
