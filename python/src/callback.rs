//! A target whose f and ∇f come from a Python callable called on the whole batch.
//!
//! The callable receives the batch as an `n × d` int64 array of model values (−1/+1 for spin)
//! and returns `(f, grad)`: f of shape `(n,)`, ∇f with respect to those values of shape
//! `(n, d)` (binary, spin) or `(n, d, K)` (categorical, one-hot). The samplers move the bit
//! x = (s + 1)/2 of a spin, so a spin gradient is multiplied by ds/dx = 2 here.
//!
//! The GIL is taken only inside the call. A Python exception or a result of the wrong shape is
//! returned from [`Target::evaluate`] as an [`EvalError`], which stops the run; the Python
//! exception itself is kept (the first one) and the front end raises it as a `ValueError` with
//! the original as its cause.

use dlp_core::{Batch, DomainKind, EvalError, Space, Target};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;
use std::sync::Mutex;

/// The callback model.
pub struct CallbackTarget {
    space: Space,
    func: Py<PyAny>,
    /// The exception of the first failed call, kept for the front end.
    py_error: Mutex<Option<PyErr>>,
}

impl CallbackTarget {
    /// A callback model on `space`.
    pub fn new(space: Space, func: Py<PyAny>) -> Self {
        CallbackTarget { space, func, py_error: Mutex::new(None) }
    }

    /// The Python exception of the last failed call, if any (cleared).
    pub fn take_py_error(&self) -> Option<PyErr> {
        self.py_error.lock().ok()?.take()
    }

    /// Calls the function on `xs` and copies f (and ∇f) out; `Err` holds the one-line message.
    fn call(&self, py: Python<'_>, xs: &[u32], f: &mut [f64], grad: Option<&mut [f64]>) -> Result<(), PyErr> {
        let space = &self.space;
        let (n, d) = (f.len(), space.d);
        let vals: Vec<i64> = xs.iter().map(|&c| space.value(c)).collect();
        let x = PyArray1::from_vec(py, vals).reshape([n, d])?;
        let out = self.func.bind(py).call1((x,)).map_err(|e| {
            // Ctrl-C (or SystemExit) inside the callback is not bad input: it passes through.
            if !e.is_instance_of::<pyo3::exceptions::PyException>(py) {
                return e;
            }
            let msg = format!("log_density_grad raised {}", exception_text(py, &e));
            let err = pyo3::exceptions::PyValueError::new_err(msg);
            err.set_cause(py, Some(e));
            err
        })?;
        let bad = |m: String| pyo3::exceptions::PyValueError::new_err(format!("log_density_grad {m}"));
        let (fo, go): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
            out.extract().map_err(|_| bad("must return a pair (f, grad) of arrays".into()))?;
        let fa: PyReadonlyArrayDyn<'_, f64> = fo
            .extract()
            .map_err(|_| bad(format!("returned f of type {}, expected a float64 array", type_name(&fo))))?;
        if fa.shape() != [n] {
            return Err(bad(format!("returned f of shape {:?}, expected ({n},)", fa.shape())));
        }
        for (o, &v) in f.iter_mut().zip(fa.as_array().iter()) {
            *o = v;
        }
        if let Some(grad) = grad {
            let ga: PyReadonlyArrayDyn<'_, f64> = go
                .extract()
                .map_err(|_| bad(format!("returned grad of type {}, expected a float64 array", type_name(&go))))?;
            let want: Vec<usize> = match space.kind {
                DomainKind::Categorical => vec![n, d, space.k()],
                _ => vec![n, d],
            };
            if ga.shape() != want.as_slice() {
                return Err(bad(format!("returned grad of shape {:?}, expected {:?}", ga.shape(), want)));
            }
            // Samplers differentiate with respect to the bit x; for a spin s = 2x − 1.
            let scale = if space.kind == DomainKind::Spin { 2.0 } else { 1.0 };
            for (o, &v) in grad.iter_mut().zip(ga.as_array().iter()) {
                *o = scale * v;
            }
        }
        Ok(())
    }

    /// Runs the call with the GIL; on failure keeps the exception (the first one) and returns
    /// its one-line message as the error.
    fn call_or_keep(&self, xs: &[u32], f: &mut [f64], grad: Option<&mut [f64]>) -> Result<(), EvalError> {
        let Err(e) = Python::attach(|py| self.call(py, xs, f, grad)) else {
            return Ok(());
        };
        let message =
            Python::attach(|py| e.value(py).str().map(|s| dlp_core::io::one_line(&s.to_string()))).unwrap_or_default();
        if let Ok(mut slot) = self.py_error.lock()
            && slot.is_none()
        {
            *slot = Some(e);
        }
        Err(EvalError::Device { device: "python callback".into(), message })
    }
}

/// `Type: message` of an exception, on one line.
fn exception_text(py: Python<'_>, e: &PyErr) -> String {
    let ty = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "Exception".into());
    let msg = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    dlp_core::io::one_line(&format!("{ty}: {msg}"))
}

/// The Python type name of an object, for messages.
fn type_name(o: &Bound<'_, PyAny>) -> String {
    o.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

impl Target for CallbackTarget {
    fn space(&self) -> &Space {
        &self.space
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        if !batch.is_full() {
            return Err(EvalError::NoData);
        }
        self.call_or_keep(xs, log_density, grad)
    }
}
