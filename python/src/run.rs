//! `dlp_mcmc.sample`: the runner (`dlp_core::run_chains`) on a model, with the GIL released while
//! Rust runs and Ctrl-C honoured.
//!
//! The run goes on a scoped thread while the calling (normally the main) thread waits for it
//! without the GIL, waking every 50 ms to let Python run its signal handlers: Python only
//! runs them on the main thread, so a run that held that thread in Rust could not be
//! interrupted. A pending KeyboardInterrupt sets a flag that the [`Guarded`] target reports
//! as its interrupt capability, which the runner polls after every step: the step-size
//! warm-up then fails (nothing to return), while the kept run stops with what ran, every chain
//! after the same number of steps (`dlp_core::run_chains_until_interrupted`), which is
//! returned beside the exception for the Python layer to raise with (`SamplingInterrupted`).
//! A Python callback model runs as one task on one thread, so its
//! function is called once per sampler step with every chain (and never from two threads).

use crate::{PyModel, count, count_opt, py_err, to_indices, to_values, value_error};
use dlp_core::capability::Interrupt;
use dlp_core::{Batch, Capabilities, EvalError, RunOptions, SamplerError, Space, Target};
use dlp_core::{Observer, States, StepContext, StepInfo};
use dlp_samplers::spec::Param;
use dlp_session::{Error as CliError, Ran, Request, Session, Spelling, StepSize, Tallies, Trace};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray2};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// A target that forwards everything to `inner` and reports an interrupt as its [`Interrupt`]
/// capability, which the runner polls after every step, so the run stops at the end of the
/// current step. (`evaluate` does not fail on it: a step cut short would be an evaluation error,
/// which loses the kept run's partial result.)
struct Guarded<'a> {
    inner: &'a dyn Target,
    stop: Stop<'a>,
}

/// The device and message of the interrupt's error, by which a warm-up that failed on it is
/// told from one that failed on its own.
const INTERRUPT_DEVICE: &str = "python";
/// See [`INTERRUPT_DEVICE`].
const INTERRUPTED: &str = "interrupted";

/// The interrupt flag set by the waiting thread.
struct Stop<'a>(&'a AtomicBool);

impl Interrupt for Stop<'_> {
    fn interrupted(&self) -> Option<EvalError> {
        self.0
            .load(Ordering::Relaxed)
            .then(|| EvalError::Device { device: INTERRUPT_DEVICE.into(), message: INTERRUPTED.into() })
    }
}

impl Target for Guarded<'_> {
    fn space(&self) -> &Space {
        self.inner.space()
    }
    fn evaluate(&self, xs: &[u32], batch: Batch<'_>, f: &mut [f64], grad: Option<&mut [f64]>) -> Result<(), EvalError> {
        self.inner.evaluate(xs, batch, f, grad)
    }
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities { interrupt: Some(&self.stop), ..self.inner.capabilities() }
    }
}

/// One task's observers: the step counter, the tallies and, with `keep_trace`, the trace.
type Record<'a> = (Count<'a>, Tallies, Option<Trace>);

/// Counts the chain-steps run (`n` per step of a task of `n` chains) into a counter shared by
/// every task, which the waiting thread reads for the Python progress bar.
struct Count<'a>(&'a AtomicU64, u64);

impl Observer for Count<'_> {
    fn observe(&mut self, _: &StepContext, _: States<'_>, _: &[StepInfo]) {
        self.0.fetch_add(self.1, Ordering::Relaxed);
    }
}

/// How often the waiting thread wakes: to let Python run its signal handlers (Ctrl-C) and to
/// report progress, so the progress callback runs at most 20 times a second.
const TICK: Duration = Duration::from_millis(50);

/// The keyword that sets `param` in `dlp_mcmc.sample(..., **options)`.
pub fn keyword(param: Param) -> &'static str {
    match param {
        Param::StepSize => "step_size",
        Param::Preconditioner => "preconditioner",
        Param::BatchSize => "batch_size",
        Param::StepSizeMin => "step_size_min",
        Param::Ladder => "ladder",
    }
}

/// Every sampler option keyword, in the order messages list them.
const OPTIONS: [Param; 5] =
    [Param::StepSize, Param::StepSizeMin, Param::Preconditioner, Param::BatchSize, Param::Ladder];

/// The sampler options of `dlp_mcmc.sample` (`**options`), checked against the registry's
/// parameters of `sampler`: each keyword must be one the sampler takes (`target_accept` with
/// a step size; None counts as not given). An unknown sampler name is left to the session, whose message is
/// the CLI's.
fn sampler_options(sampler: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Request> {
    let mut request = Request {
        sampler: sampler.to_string(),
        step_size: StepSize::Default,
        step_size_min: None,
        preconditioner: None,
        batch_size: None,
        ladder: None,
        chains: 1,
        steps: 0,
        burn_in: None,
        thin: 1,
        target_accept: None,
        progress: false,
    };
    let Some(options) = options else { return Ok(request) };
    let takes: Option<Vec<&str>> =
        dlp_samplers::registry::find(sampler).map(|(spec, _)| spec.params.iter().map(|p| keyword(p.param)).collect());
    for (key, value) in options.iter() {
        let key: String = key.extract()?;
        if let Some(takes) = &takes {
            // An option given as None is an option not given.
            if value.is_none() && !takes.contains(&key.as_str()) {
                continue;
            }
            let known = OPTIONS.iter().any(|&p| keyword(p) == key) || key == "target_accept";
            let allowed = takes.contains(&key.as_str()) || (key == "target_accept" && takes.contains(&"step_size"));
            if !allowed {
                let list = if takes.is_empty() {
                    "no options".to_string()
                } else {
                    let mut t: Vec<&str> = takes.clone();
                    if t.contains(&"step_size") {
                        t.push("target_accept");
                    }
                    t.join(", ")
                };
                let what = if known { "sampler option" } else { "unknown sampler option" };
                return Err(value_error(format!("{what} {key} does not apply to {sampler} (it takes {list})")));
            }
        }
        let number = |v: &Bound<'_, PyAny>| -> PyResult<f64> {
            if v.is_instance_of::<pyo3::types::PyBool>() {
                return Err(PyTypeError::new_err(format!("{key} must be a number, got bool")));
            }
            v.extract::<f64>()
                .map_err(|_| PyTypeError::new_err(format!("{key} must be a number, got {}", type_name(v))))
        };
        match key.as_str() {
            "step_size" => {
                request.step_size = if value.is_none() {
                    StepSize::Without
                } else if let Ok(s) = value.extract::<String>() {
                    if s != "auto" {
                        return Err(value_error(format!("step_size must be a number, None or \"auto\", got {s:?}")));
                    }
                    StepSize::Auto
                } else {
                    StepSize::Fixed(number(&value)?)
                }
            }
            "step_size_min" => request.step_size_min = Some(number(&value)?),
            "target_accept" => request.target_accept = Some(number(&value)?),
            "preconditioner" => {
                let h: Vec<f64> = value.extract().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "preconditioner must be a sequence of numbers, got {}",
                        type_name(&value)
                    ))
                })?;
                request.preconditioner = Some(h);
            }
            "ladder" => {
                let l: Vec<f64> = value.extract().map_err(|_| {
                    PyTypeError::new_err(format!("ladder must be a sequence of numbers, got {}", type_name(&value)))
                })?;
                request.ladder = Some(l);
            }
            "batch_size" => {
                if value.is_instance_of::<pyo3::types::PyBool>() || value.extract::<i64>().is_err() {
                    return Err(PyTypeError::new_err(format!(
                        "batch_size must be an integer, got {}",
                        type_name(&value)
                    )));
                }
                let b: i64 = value.extract()?;
                request.batch_size = Some(
                    usize::try_from(b).map_err(|_| value_error(format!("batch_size must be at least 1, got {b}")))?,
                );
            }
            _ => return Err(value_error(format!("unknown sampler option {key}"))),
        }
    }
    Ok(request)
}

/// The Python type name of `v`, for messages.
fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// Runs `chains` chains of `sampler` for `steps` steps (see `dlp_mcmc.sample`); `options` are
/// the sampler's (`step_size`, …, checked by [`sampler_options`]). With `step_size="auto"`
/// (or none given to a sampler that adapts, as `dlp sample`) the step size adapts first over
/// `burn_in` warm-up steps (half of `steps` when 0). Returns a dict of numpy arrays:
/// `final` (chains × d values), `trace` (kept × chains × d, or None), `trace_steps`,
/// `accept_rate` and `accept_prob` (per chain, mean over the steps after the warm-up),
/// `changed` (per chain, mean coordinates changed per step), the step sizes used, `steps`
/// (kept-run steps completed) and `interrupted`. After Ctrl-C it returns instead of raising:
/// the dict also holds `interrupt` (the KeyboardInterrupt) and `interrupt_message`, and only
/// those two when the interrupt came during the warm-up; the Python layer raises.
#[pyfunction]
#[pyo3(signature = (model, sampler, *, chains, steps, burn_in, thin, seed, threads=None, init=None, random_init=true, keep_trace=false, progress=None, options=None))]
#[allow(clippy::too_many_arguments)]
pub fn sample<'py>(
    py: Python<'py>,
    model: &PyModel,
    sampler: &str,
    chains: &Bound<'py, PyAny>,
    steps: &Bound<'py, PyAny>,
    burn_in: &Bound<'py, PyAny>,
    thin: &Bound<'py, PyAny>,
    seed: &Bound<'py, PyAny>,
    threads: Option<&Bound<'py, PyAny>>,
    init: Option<PyReadonlyArray2<'py, i64>>,
    random_init: bool,
    keep_trace: bool,
    progress: Option<Py<PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let usize_of =
        |v: u64, name: &str| usize::try_from(v).map_err(|_| value_error(format!("{name} is too large: {v}")));
    let chains = usize_of(count(chains, "chains", 0)?, "chains")?;
    let steps = usize_of(count(steps, "steps", 0)?, "steps")?;
    let burn_in = usize_of(count(burn_in, "burn_in", 0)?, "burn_in")?;
    let thin = usize_of(count(thin, "thin", 0)?, "thin")?;
    let seed = count(seed, "seed", 0)?;
    let threads = usize_of(count_opt(threads, "threads", 1)?.unwrap_or(0), "threads")?;
    let request = Request {
        chains,
        steps,
        burn_in: (burn_in > 0).then_some(burn_in),
        thin,
        ..sampler_options(sampler, options)?
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
    let done = AtomicU64::new(0);
    let go = || -> Result<Ran<Record<'_>>, SamplerError> {
        session.run(
            &guarded,
            x0.clone(),
            &options,
            // The warm-up has no observers: its chain-steps count at once when it ends.
            |a| {
                done.fetch_add((chains * a.steps) as u64, Ordering::Relaxed);
            },
            |stage, _, n| (Count(&done, n as u64), Tallies::new(n), keep_trace.then(|| stage.trace(n))),
        )
    };
    // Tells the progress callback the chain-steps run so far. Its exceptions are ignored,
    // except KeyboardInterrupt and the like: Python runs a pending Ctrl-C handler inside the
    // callback's code, so the interrupt can surface there instead of in `check_signals`.
    let report = |py: Python<'_>| -> PyResult<()> {
        if let Some(p) = &progress
            && let Err(e) = p.bind(py).call1((done.load(Ordering::Relaxed),))
            && !e.is_instance_of::<pyo3::exceptions::PyException>(py)
        {
            return Err(e);
        }
        Ok(())
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
                match rx.recv_timeout(TICK) {
                    Ok(r) => return (Some(r), interrupt),
                    Err(mpsc::RecvTimeoutError::Timeout) => Python::attach(|py| {
                        if let Err(e) = report(py).and_then(|_| py.check_signals())
                            && interrupt.is_none()
                        {
                            interrupt = Some(e);
                            stop.store(true, Ordering::Relaxed);
                        }
                    }),
                    // The run thread panicked; the scope re-raises its panic.
                    Err(mpsc::RecvTimeoutError::Disconnected) => return (None, interrupt),
                }
            }
        })
    });
    let last = report(py);
    let interrupt = interrupt.or(last.err());
    // An exception other than KeyboardInterrupt from a signal handler is raised as it is.
    let interrupt = match interrupt {
        Some(e) if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => return Err(e),
        i => i,
    };
    let ran = match (result, &interrupt) {
        (Some(Ok(r)), _) => Some(r),
        // Ctrl-C in the warm-up, which fails on it (the kept run stops instead): nothing to keep.
        (Some(Err(SamplerError::Eval(EvalError::Device { device, message }))), Some(_))
            if device == INTERRUPT_DEVICE && message == INTERRUPTED =>
        {
            None
        }
        (Some(Err(e)), _) => {
            crate::raise_callback_error(model)?;
            return Err(py_err(CliError::from_run(e)));
        }
        (None, _) => {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("internal error: the sampling thread failed"));
        }
    };
    let out = PyDict::new(py);
    let Some(ran) = ran else {
        let Some(e) = interrupt else { unreachable!("no run without an interrupt") };
        // A callback's exception kept from the cut-short warm-up is dropped with it.
        let _ = crate::raise_callback_error(model);
        out.set_item("interrupt", e.value(py))?;
        out.set_item(
            "interrupt_message",
            "sampling interrupted during the step-size warm-up; nothing is kept before the warm-up ends \
             (.partial is None)",
        )?;
        return Ok(out);
    };
    crate::raise_callback_error(model)?;
    // The steps of the kept run that every chain completed (all of them unless interrupted).
    let kept = ran.output.stopped.as_ref().map_or(ran.steps, |s| s.steps);
    if let Some(e) = interrupt {
        out.set_item("interrupt", e.value(py))?;
        out.set_item(
            "interrupt_message",
            format!(
                "sampling interrupted after {} of {steps} steps (every chain; {} of them warm-up); \
                 the exception's .partial holds the result of those steps",
                ran.warmup_steps + kept,
                ran.warmup_steps
            ),
        )?;
    }
    out.set_item("steps", kept)?;
    out.set_item("interrupted", ran.output.stopped.is_some())?;
    let (output, steps) = (&ran.output, kept);
    let d = space.d;
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
    let stats = ["step_accepted", "step_accept_prob", "step_changed"];
    if keep_trace {
        // Each task kept (steps × its chains × d); interleave into (steps × all chains × d).
        let kept_steps = traces.first().map_or(&[][..], |t| t.steps());
        let n = kept_steps.len();
        let mut trace = Vec::with_capacity(n * chains * d);
        let (mut accepted, mut prob, mut changed) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..n {
            for t in &traces {
                trace.extend_from_slice(t.at(k));
                accepted.extend_from_slice(t.accepted_at(k));
                prob.extend_from_slice(t.accept_prob_at(k));
                changed.extend(t.changed_at(k).iter().map(|&c| i64::from(c)));
            }
        }
        let values = to_values(py, &space, &trace)?;
        out.set_item("trace", values.reshape([n, chains, d])?)?;
        let kept_steps: Vec<i64> = kept_steps.iter().map(|&s| s as i64).collect();
        out.set_item("trace_steps", PyArray1::from_vec(py, kept_steps))?;
        out.set_item(stats[0], PyArray1::from_vec(py, accepted).reshape([n, chains])?)?;
        out.set_item(stats[1], PyArray1::from_vec(py, prob).reshape([n, chains])?)?;
        out.set_item(stats[2], PyArray1::from_vec(py, changed).reshape([n, chains])?)?;
    } else {
        for key in ["trace", "trace_steps"].iter().chain(&stats) {
            out.set_item(*key, py.None())?;
        }
    }
    out.set_item("sampler", &ran.name)?;
    out.set_item("step_size", ran.step_size)?;
    out.set_item("step_size_min", ran.step_size_min)?;
    out.set_item("ladder", ran.ladder.clone())?;
    out.set_item("warmup_steps", ran.warmup_steps)?;
    Ok(out)
}
