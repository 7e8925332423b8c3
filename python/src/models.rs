//! The model constructors from arrays (`dlp_mcmc.Model.ising`, …): numpy arrays (or anything
//! numpy converts to float64) go straight into the model types of dlp-models, whose
//! constructors are the one place that checks them (the same checks and messages as a model
//! file's, without the file name). No JSON is written or parsed on the way.

use crate::{Inner, PyModel, count, count_opt, value_error};
use dlp_core::{BatchScaling, DomainKind, Space};
use dlp_models::{
    BnnModel, CategoricalModel, Couplings, IsingModel, LogisticModel, Model, PottsModel, Rbm, TableModel,
};
use numpy::{AllowTypeChange, PyArrayLikeDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// A float64 array argument (lists and integer arrays are converted by numpy).
pub type Floats<'py> = PyArrayLikeDyn<'py, f64, AllowTypeChange>;

/// The entries of `a` (row-major) and its shape, which must have `ndim` dimensions.
fn array(a: &Floats<'_>, name: &str, ndim: usize) -> PyResult<(Vec<usize>, Vec<f64>)> {
    let shape = a.shape().to_vec();
    if shape.len() != ndim {
        return Err(value_error(format!("{name} must have {ndim} dimensions, got shape {}", show_shape(&shape))));
    }
    Ok((shape, a.as_array().iter().copied().collect()))
}

/// A shape as Python prints it: `(3,)`, `(2, 3)`.
fn show_shape(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// `spin` or `binary`, the domains of the bit models.
fn bit_domain(domain: &str) -> PyResult<DomainKind> {
    match domain {
        "spin" => Ok(DomainKind::Spin),
        "binary" => Ok(DomainKind::Binary),
        o => Err(value_error(format!("domain must be spin or binary, got {o:?}"))),
    }
}

/// Wraps a built model (or its construction error, as a `ValueError`).
fn model(m: Result<Model, dlp_models::ModelError>) -> PyResult<PyModel> {
    Ok(PyModel { inner: Inner::Loaded(m.map_err(value_error)?) })
}

/// Ising model: symmetric `J` (d × d, zero diagonal), field `b` (d; zero when None).
#[pyfunction]
#[pyo3(signature = (j, b=None, domain="spin"))]
pub fn ising(j: Floats<'_>, b: Option<Floats<'_>>, domain: &str) -> PyResult<PyModel> {
    let domain = bit_domain(domain)?;
    let (shape, j) = array(&j, "J", 2)?;
    let d = shape[0];
    let b = match b {
        Some(b) => array(&b, "b", 1)?.1,
        None => vec![0.0; d],
    };
    model(IsingModel::from_dense(d, &j, b, domain).map(Model::new))
}

/// Potts model: couplings `J` (d × d, symmetric, zero diagonal) and fields `h` (d × K).
#[pyfunction]
pub fn potts(j: Floats<'_>, h: Floats<'_>) -> PyResult<PyModel> {
    let (hs, h) = array(&h, "h", 2)?;
    let (js, j) = array(&j, "J", 2)?;
    if js[0] != hs[0] {
        return Err(value_error(format!("J is {} but h has d = {} rows", show_shape(&js), hs[0])));
    }
    let couplings = Couplings::from_dense(hs[0], &j).map_err(value_error)?;
    model(PottsModel::new(Space::categorical(hs[0], hs[1]), couplings, h).map(Model::new))
}

/// RBM marginal over the visible units: `W` (d × M), visible bias `b` (d), hidden bias `c` (M).
#[pyfunction]
#[pyo3(signature = (w, b, c, domain="binary"))]
pub fn rbm(w: Floats<'_>, b: Floats<'_>, c: Floats<'_>, domain: &str) -> PyResult<PyModel> {
    let domain = bit_domain(domain)?;
    let (shape, w) = array(&w, "W", 2)?;
    let b = array(&b, "b", 1)?.1;
    let c = array(&c, "c", 1)?.1;
    model(Rbm::new(domain, shape[0], shape[1], w, b, c).map(Model::new))
}

/// Independent categorical coordinates from `probs` or `logits` (d × K), exactly one given.
#[pyfunction]
#[pyo3(signature = (probs=None, logits=None))]
pub fn categorical(probs: Option<Floats<'_>>, logits: Option<Floats<'_>>) -> PyResult<PyModel> {
    let (name, a) = match (probs, logits) {
        (Some(p), None) => ("probs", p),
        (None, Some(l)) => ("logits", l),
        _ => return Err(value_error("give exactly one of probs and logits")),
    };
    let (shape, v) = array(&a, name, 2)?;
    let space = Space::categorical(shape[0], shape[1]);
    let m =
        if name == "probs" { CategoricalModel::from_probs(space, v) } else { CategoricalModel::from_logits(space, v) };
    model(m.map(Model::new))
}

/// The explicit `log_prob` of all K^d states (first coordinate most significant) on
/// `domain` (binary, spin, or categorical with `k` values).
#[pyfunction]
#[pyo3(signature = (log_prob, d, domain="binary", k=None))]
pub fn table(
    log_prob: Floats<'_>,
    d: &Bound<'_, PyAny>,
    domain: &str,
    k: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyModel> {
    let d = count(d, "d", 1)? as usize;
    let k = count_opt(k, "K", 2)?.map(|k| k as usize);
    let space = match (domain, k) {
        ("categorical", Some(k)) => Space::categorical(d, k),
        ("categorical", None) => return Err(value_error("domain \"categorical\" needs K (values per coordinate)")),
        (_, Some(_)) => return Err(value_error(format!("K is for categorical tables, not {domain}"))),
        (o, None) => match bit_domain(o) {
            Ok(DomainKind::Spin) => Space::spin(d),
            Ok(_) => Space::binary(d),
            Err(_) => {
                return Err(value_error(format!("domain must be spin, binary or categorical, got {o:?}")));
            }
        },
    };
    let v = array(&log_prob, "log_prob", 1)?.1;
    model(TableModel::new(space, v).map(Model::new))
}

/// Logistic regression with discrete weights: features `X` (N × d), labels `y` (0/1),
/// field `b` (d; zero when None); minibatch gradients scaled N/B (`scaling="sum"`) or
/// c/B (`scaling="mean_times"`, with `c`).
#[pyfunction]
#[pyo3(signature = (x, y, b=None, domain="spin", scaling="sum", c=None))]
pub fn logistic(
    x: Floats<'_>,
    y: Floats<'_>,
    b: Option<Floats<'_>>,
    domain: &str,
    scaling: &str,
    c: Option<f64>,
) -> PyResult<PyModel> {
    let domain = bit_domain(domain)?;
    let (shape, a) = array(&x, "X", 2)?;
    let d = shape[1];
    let y = array(&y, "y", 1)?.1;
    let b = match b {
        Some(b) => array(&b, "b", 1)?.1,
        None => vec![0.0; d],
    };
    let scaling = match (scaling, c) {
        ("sum", None) => BatchScaling::Sum,
        ("mean_times", Some(c)) => BatchScaling::MeanTimes { c },
        ("mean_times", None) => return Err(value_error("scaling \"mean_times\" needs c")),
        ("sum", Some(_)) => return Err(value_error("c only goes with scaling \"mean_times\"")),
        (o, _) => return Err(value_error(format!("scaling must be \"sum\" or \"mean_times\", got {o:?}"))),
    };
    model(LogisticModel::new(domain, d, a, y, b, scaling).map(Model::new))
}

/// Binary Bayesian neural network: features `x` (N × p), targets `y` (N), `hidden`
/// units, prior temperature `tau`; d = (p + 2)·hidden + 1.
#[pyfunction]
#[pyo3(signature = (x, y, hidden, tau=100.0))]
pub fn bnn(x: Floats<'_>, y: Floats<'_>, hidden: &Bound<'_, PyAny>, tau: f64) -> PyResult<PyModel> {
    let hidden = count(hidden, "hidden", 1)? as usize;
    let (shape, x) = array(&x, "x", 2)?;
    let y = array(&y, "y", 1)?.1;
    let p = shape[1];
    let d = (p + 2) * hidden + 1;
    model(BnnModel::new(d, p, hidden, tau, x, y).map(Model::new))
}
