//! `dlp_mcmc._dlp`: the Rust half of the `dlp_mcmc` Python package (distribution `dlp-mcmc`) (PyO3, abi3). It wraps the crates —
//! models and model files (dlp-models), the sampler registry (dlp-samplers), the runner
//! (dlp-core), the goodness-of-fit tests (dlp-gof) and the exact report (dlp-exact) — and
//! re-implements none of them; the Python half (`python/dlp_mcmc/`) checks argument types, turns
//! arrays into the shapes expected here and wraps results in classes.
//!
//! Every error crosses the boundary as a Python exception with one line: bad input is a
//! `ValueError` whose text is what `dlp` prints after `error: `; a Rust panic becomes PyO3's
//! `PanicException` rather than an abort.

mod callback;
mod gof;
mod logz;
mod models;
mod run;

use callback::CallbackTarget;
use dlp_core::{DomainKind, Space, Target};
use dlp_session::Error as CliError;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Arc;

/// A CLI error as the Python exception of the same line: bad input is a `ValueError`, an
/// internal failure a `RuntimeError`.
pub(crate) fn py_err(e: CliError) -> PyErr {
    match e {
        CliError::Input(_) => PyValueError::new_err(e.to_string()),
        CliError::Internal(_) => pyo3::exceptions::PyRuntimeError::new_err(e.to_string()),
    }
}

/// A `ValueError` with `message` on one line.
pub(crate) fn value_error(message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(dlp_core::io::one_line(&message.to_string()))
}

/// A count or seed argument as an unsigned integer: a Python int (or numpy integer; not a
/// bool) from `minimum` to 2^64 − 1, else a `TypeError`/`ValueError` naming `name`. The one
/// place integers cross into Rust, so that no `OverflowError` escapes.
pub(crate) fn count(v: &Bound<'_, PyAny>, name: &str, minimum: u64) -> PyResult<u64> {
    let type_error = || {
        let t = v.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        pyo3::exceptions::PyTypeError::new_err(format!("{name} must be an integer, got {t}"))
    };
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(type_error());
    }
    let i = v.call_method0("__index__").map_err(|_| type_error())?;
    let i: i128 = match i.extract() {
        Ok(i) => i,
        Err(_) => return Err(value_error(format!("{name} must be at most {}, got {i}", u64::MAX))),
    };
    if i < i128::from(minimum) {
        return Err(value_error(format!("{name} must be at least {minimum}, got {i}")));
    }
    u64::try_from(i).map_err(|_| value_error(format!("{name} must be at most {}, got {i}", u64::MAX)))
}

/// [`count`] of an optional argument (None stays None).
pub(crate) fn count_opt(v: Option<&Bound<'_, PyAny>>, name: &str, minimum: u64) -> PyResult<Option<u64>> {
    v.filter(|v| !v.is_none()).map(|v| count(v, name, minimum)).transpose()
}

/// Raises a callback model's exception, if one of its calls failed.
pub(crate) fn raise_callback_error(model: &PyModel) -> PyResult<()> {
    match model.callback().and_then(|c| c.take_py_error()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// What a Python `Model` holds: a model of a registered kind (from a file or a constructor),
/// or a user's batched callback.
#[derive(Clone)]
pub(crate) enum Inner {
    /// A model of a registered kind.
    Loaded(dlp_models::Model),
    /// A Python callable giving f and ∇f of a batch.
    Callback(Arc<CallbackTarget>),
}

/// A discrete target distribution π(x) ∝ exp f(x).
#[pyclass(module = "dlp_mcmc._dlp", name = "Model", frozen, subclass)]
#[derive(Clone)]
pub struct PyModel {
    pub(crate) inner: Inner,
}

impl PyModel {
    /// The model as the core's target trait object.
    pub(crate) fn target(&self) -> &dyn Target {
        match &self.inner {
            Inner::Loaded(m) => m.as_target(),
            Inner::Callback(c) => c.as_ref(),
        }
    }

    /// The callback target, if this is a callback model.
    pub(crate) fn callback(&self) -> Option<&CallbackTarget> {
        match &self.inner {
            Inner::Callback(c) => Some(c),
            Inner::Loaded(_) => None,
        }
    }
}

/// The domain name of a space kind, as model files spell it.
fn domain_name(kind: DomainKind) -> &'static str {
    match kind {
        DomainKind::Spin => "spin",
        DomainKind::Binary => "binary",
        DomainKind::Categorical => "categorical",
        DomainKind::Ordinal => "ordinal",
    }
}

/// Rows of user values (`n × d`) as state indices, naming the first value outside the
/// domain as `what[row, column]`.
pub(crate) fn to_indices(space: &Space, values: &PyReadonlyArray2<'_, i64>, what: &str) -> PyResult<Vec<u32>> {
    let view = values.as_array();
    let (n, d) = view.dim();
    if d != space.d {
        return Err(value_error(format!("{what} has {d} columns, the model has d = {} coordinates", space.d)));
    }
    let mut out = Vec::with_capacity(n * d);
    for ((i, j), &v) in view.indexed_iter() {
        match space.index_of_value(v) {
            Some(c) => out.push(c),
            None => {
                return Err(value_error(format!(
                    "{what}[{i}, {j}] = {v} is outside the {} domain {:?}",
                    domain_name(space.kind),
                    space.values
                )));
            }
        }
    }
    Ok(out)
}

/// State indices as an `n × d` array of user values.
pub(crate) fn to_values<'py>(py: Python<'py>, space: &Space, xs: &[u32]) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let d = space.d;
    let vals: Vec<i64> = xs.iter().map(|&c| space.value(c)).collect();
    PyArray1::from_vec(py, vals).reshape([xs.len() / d.max(1), d])
}

#[pymethods]
impl PyModel {
    /// Loads a `dlp.model.v1` file (JSON or TOML, every registered kind).
    #[staticmethod]
    fn from_file(path: std::path::PathBuf) -> PyResult<Self> {
        let m = dlp_models::load_model(&path).map_err(|e| py_err(CliError::input(e)))?;
        Ok(PyModel { inner: Inner::Loaded(m) })
    }

    /// Parses model-file JSON text; `name` stands for the file in error messages.
    #[staticmethod]
    fn from_json(text: &str, name: &str) -> PyResult<Self> {
        let m = dlp_models::parse_model_str(text, dlp_models::Format::Json, name)
            .map_err(|e| py_err(CliError::input(e)))?;
        Ok(PyModel { inner: Inner::Loaded(m) })
    }

    /// A model whose f and ∇f come from `func(x)` on a whole batch (see `dlp_mcmc.Model.from_callable`).
    #[staticmethod]
    #[pyo3(signature = (d, domain, func, k=None))]
    fn from_callable(d: usize, domain: &str, func: Py<PyAny>, k: Option<usize>) -> PyResult<Self> {
        if d == 0 {
            return Err(value_error("d must be at least 1"));
        }
        let space = match (domain, k) {
            ("spin", None) => Space::spin(d),
            ("binary", None) => Space::binary(d),
            ("categorical", Some(k)) if k >= 2 => Space::categorical(d, k),
            ("categorical", Some(k)) => return Err(value_error(format!("k must be at least 2, got {k}"))),
            ("categorical", None) => return Err(value_error("domain \"categorical\" needs k (values per coordinate)")),
            ("spin" | "binary", Some(_)) => {
                return Err(value_error(format!("k is for categorical models, not {domain}")));
            }
            (o, _) => return Err(value_error(format!("domain must be spin, binary or categorical, got {o:?}"))),
        };
        Ok(PyModel { inner: Inner::Callback(Arc::new(CallbackTarget::new(space, func))) })
    }

    /// Number of coordinates d.
    #[getter]
    fn d(&self) -> usize {
        self.target().space().d
    }

    /// The domain: spin, binary, categorical or ordinal.
    #[getter]
    fn domain(&self) -> &'static str {
        domain_name(self.target().space().kind)
    }

    /// The values a coordinate takes, in index order.
    #[getter]
    fn values(&self) -> Vec<i64> {
        self.target().space().values.clone()
    }

    /// The model kind (`ising`, …, or `callable`).
    #[getter]
    fn kind(&self) -> &'static str {
        match &self.inner {
            Inner::Loaded(m) => m.kind_name(),
            Inner::Callback(_) => "callable",
        }
    }

    /// The model as `dlp.model.v1` JSON text (not for callback models).
    fn to_json(&self) -> PyResult<String> {
        match &self.inner {
            Inner::Loaded(m) => Ok(m.to_json()),
            Inner::Callback(_) => Err(value_error("a callback model has no model-file form")),
        }
    }

    /// f(x) for every row of `x` (`n × d` values).
    fn log_density<'py>(&self, py: Python<'py>, x: PyReadonlyArray2<'py, i64>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (f, _) = self.evaluate(py, &x, false)?;
        Ok(PyArray1::from_vec(py, f))
    }

    /// f(x) and ∇f(x) for every row of `x`, the gradient in the samplers' coordinates (the
    /// bit x ∈ {0,1} for binary and spin, the one-hot matrix for categorical, the value for
    /// ordinal): `(n,)` and `(n, d)` or `(n, d, K)`.
    fn log_density_grad<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, i64>,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyAny>)> {
        let (f, g) = self.evaluate(py, &x, true)?;
        let space = self.target().space();
        let n = f.len();
        let g = PyArray1::from_vec(py, g);
        let g = if space.kind == DomainKind::Categorical {
            g.reshape([n, space.d, space.k()])?.into_any()
        } else {
            g.reshape([n, space.d])?.into_any()
        };
        Ok((PyArray1::from_vec(py, f), g))
    }

    fn __repr__(&self) -> String {
        let s = self.target().space();
        format!("Model(kind={:?}, d={}, domain={:?})", self.kind(), s.d, domain_name(s.kind))
    }
}

impl PyModel {
    /// f (and ∇f) of a batch of user values, through the fallible oracle so that a failing
    /// callback raises instead of returning NaN.
    fn evaluate(&self, py: Python<'_>, x: &PyReadonlyArray2<'_, i64>, grad: bool) -> PyResult<(Vec<f64>, Vec<f64>)> {
        let target = self.target();
        let space = target.space();
        let xs = to_indices(space, x, "x")?;
        let n = xs.len() / space.d;
        let mut f = vec![0.0; n];
        let mut g = vec![0.0; if grad { n * space.grad_len() } else { 0 }];
        let r = py.detach(|| target.evaluate(&xs, dlp_core::Batch::Full, &mut f, grad.then_some(g.as_mut_slice())));
        raise_callback_error(self)?;
        r.map_err(value_error)?;
        Ok((f, g))
    }
}

/// Every registered sampler name form (`dula`, `pas-<R>`, …).
#[pyfunction]
fn sampler_names() -> Vec<String> {
    dlp_samplers::registry::sampler_names()
}

/// Bulk ESS (rank-normalised, split chains) of `draws` (chains × draws).
#[pyfunction]
fn ess_bulk(draws: PyReadonlyArray2<'_, f64>) -> PyResult<f64> {
    let (c, _) = draws.as_array().dim();
    let flat: Vec<f64> = draws.as_array().iter().copied().collect();
    dlp_core::diagnostics::ess_bulk(&flat, c).map_err(value_error)
}

/// Rank-normalised split R-hat of `draws` (chains × draws).
#[pyfunction]
fn rhat(draws: PyReadonlyArray2<'_, f64>) -> PyResult<f64> {
    let (c, _) = draws.as_array().dim();
    let flat: Vec<f64> = draws.as_array().iter().copied().collect();
    dlp_core::diagnostics::rhat_rank(&flat, c).map_err(value_error)
}

/// `dlp exact`'s report (the fields of `dlp.exact.report.v2`) of `sampler` on `model`, as
/// Python objects (dicts, lists, floats; no JSON text in between).
#[pyfunction]
#[pyo3(signature = (model, sampler, step_size=None, preconditioner=None))]
fn exact<'py>(
    py: Python<'py>,
    model: &PyModel,
    sampler: &str,
    step_size: Option<f64>,
    preconditioner: Option<Vec<f64>>,
) -> PyResult<Bound<'py, PyAny>> {
    run::check_step_size(step_size)?;
    let params =
        dlp_samplers::SamplerParams { step_size, preconditioner: preconditioner.clone(), ..Default::default() };
    let s = dlp_samplers::build_sampler(sampler, &params).map_err(value_error)?;
    let target = model.target();
    let space = target.space();
    if let Some(h) = &preconditioner
        && h.len() != space.d
    {
        return Err(value_error(format!(
            "preconditioner has {} entries, the model has d = {} coordinates",
            h.len(),
            space.d
        )));
    }
    let exact_error = |e: dlp_exact::ExactError| match e {
        dlp_exact::ExactError::BadRow { .. } => pyo3::exceptions::PyRuntimeError::new_err(e.to_string()),
        _ => value_error(e),
    };
    dlp_exact::enumerate::checked_n_states(space, dlp_exact::matrix::MAX_MATRIX_STATES, "dlp_mcmc.exact")
        .map_err(exact_error)?;
    let report = py.detach(|| dlp_exact::exact_report(target, s.as_ref()));
    raise_callback_error(model)?;
    let report = report.map_err(exact_error)?;
    Ok(pythonize::pythonize(py, &report)?)
}

/// The parameters sampler `name` takes, as `(keyword, required)` pairs (the registry's
/// `SamplerSpec::params`); None for a name the registry does not know.
#[pyfunction]
fn sampler_params(name: &str) -> Option<Vec<(String, bool)>> {
    let (spec, _) = dlp_samplers::registry::find(name)?;
    Some(spec.params.iter().map(|p| (run::keyword(p.param).to_string(), p.required)).collect())
}

/// The extension module.
#[pymodule]
fn _dlp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyModel>()?;
    m.add_function(wrap_pyfunction!(sampler_names, m)?)?;
    m.add_function(wrap_pyfunction!(ess_bulk, m)?)?;
    m.add_function(wrap_pyfunction!(rhat, m)?)?;
    m.add_function(wrap_pyfunction!(exact, m)?)?;
    m.add_function(wrap_pyfunction!(sampler_params, m)?)?;
    m.add_function(wrap_pyfunction!(logz::logz, m)?)?;
    m.add_function(wrap_pyfunction!(models::ising, m)?)?;
    m.add_function(wrap_pyfunction!(models::potts, m)?)?;
    m.add_function(wrap_pyfunction!(models::rbm, m)?)?;
    m.add_function(wrap_pyfunction!(models::categorical, m)?)?;
    m.add_function(wrap_pyfunction!(models::table, m)?)?;
    m.add_function(wrap_pyfunction!(models::logistic, m)?)?;
    m.add_function(wrap_pyfunction!(models::bnn, m)?)?;
    m.add_function(wrap_pyfunction!(run::sample, m)?)?;
    m.add_function(wrap_pyfunction!(gof::kdsd, m)?)?;
    m.add_function(wrap_pyfunction!(gof::gfksd, m)?)?;
    m.add_function(wrap_pyfunction!(gof::mmd, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
