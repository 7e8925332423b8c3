//! `dlp_mcmc.gof`: KDSD, GF-KSD and MMD (dlp-gof) on arrays, returning the fields of `dlp gof`'s
//! `dlp.gof.result.v1` document as a Python dict (without the file paths and checksums an array
//! does not have; no JSON text in between).
//! The options and their checks are `dlp gof`'s (`crates/dlp-cli/src/gof.rs`), with the
//! Python argument names in the messages; the same seed and options give the same statistic
//! and p-value as `dlp gof` on files holding the same rows.

use crate::{PyModel, count, count_opt, raise_callback_error, to_indices, value_error};
use dlp_core::{DomainKind, Space};
use dlp_gof::bootstrap::check_reps_alpha;
use dlp_gof::reference::{MAX_EXACT_STATES, exact_draws, gibbs_draws};
use dlp_gof::{
    Bandwidth, BaseKernel, Bootstrap, GfksdOptions, GofError, KdsdOptions, MmdOptions, ModelDraws, NullTest, Statistic,
    Surrogate, gfksd_test, kdsd_test, mmd_test,
};
use numpy::PyReadonlyArray2;
use pyo3::prelude::*;
use serde_json::{Value, json};

/// Smallest sample `dlp gof` accepts (`gof.md` §10.2).
const MIN_ROWS: usize = 10;

/// The statistic and bootstrap named by the caller, checked as `dlp gof` checks them. For
/// `"model"` (the model null, [`dlp_gof::GofNull`]) the test itself runs one unused
/// replicate of the statistic's default bootstrap, and the second value is true.
fn null_test(
    statistic: &str,
    bootstrap: Option<&str>,
    reps: usize,
    alpha: f64,
    seed: u64,
) -> PyResult<(NullTest, bool)> {
    let statistic = match statistic {
        "u" => Statistic::U,
        "v" => Statistic::V,
        o => return Err(value_error(format!("statistic must be u or v, got {o:?}"))),
    };
    let model_null = bootstrap == Some("model");
    let bootstrap = match bootstrap {
        None | Some("model") if statistic == Statistic::V => Bootstrap::Rademacher,
        None | Some("multinomial") | Some("model") => Bootstrap::Multinomial,
        Some("rademacher") => Bootstrap::Rademacher,
        Some(o) => {
            return Err(value_error(format!("bootstrap must be multinomial, rademacher or model, got {o:?}")));
        }
    };
    check_reps_alpha(reps, alpha).map_err(value_error)?;
    Ok((NullTest { statistic, bootstrap, reps: if model_null { 1 } else { reps }, seed }, model_null))
}

/// Rows of `samples` as indices, at least [`MIN_ROWS`] of them.
fn rows(space: &Space, samples: &PyReadonlyArray2<'_, i64>, what: &str) -> PyResult<Vec<u32>> {
    let xs = to_indices(space, samples, what)?;
    let n = xs.len() / space.d;
    if n < MIN_ROWS {
        return Err(value_error(format!("{what} has {n} rows; at least {MIN_ROWS} are needed")));
    }
    Ok(xs)
}

fn gof_error(e: GofError) -> PyErr {
    match e {
        GofError::Shape(_) => pyo3::exceptions::PyRuntimeError::new_err(format!("internal error: {e}")),
        _ => value_error(e),
    }
}

/// The fields every result has.
fn base(test: &str, null: &NullTest, alpha: f64, n: usize, space: &Space, model: Option<&PyModel>) -> Value {
    let (kind, seed) = (null.statistic.name(), null.seed);
    json!({
        "schema": "dlp.gof.result.v1",
        "test": test,
        "statistic_kind": kind,
        "alpha": alpha,
        "n": n,
        "d": space.d,
        "seed": seed,
        "model": model.map_or(Value::Null, |m| json!({"kind": m.kind(), "d": space.d})),
        "dlp_version": env!("CARGO_PKG_VERSION"),
    })
}

/// Adds the statistic, p-value and decision; returns the document as Python objects (a dict).
fn finish<'py>(
    py: Python<'py>,
    mut doc: Value,
    statistic: f64,
    p_value: f64,
    alpha: f64,
    warnings: Vec<String>,
) -> PyResult<Bound<'py, PyAny>> {
    if !statistic.is_finite() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "internal error: the statistic is not finite ({statistic})"
        )));
    }
    doc["statistic"] = json!(statistic);
    doc["p_value"] = json!(p_value);
    doc["reject"] = json!(p_value <= alpha);
    doc["warnings"] = json!(warnings);
    Ok(pythonize::pythonize(py, &doc)?)
}

/// The p-value of the observed statistic ([`dlp_gof::GofNull::p_value`], as `dlp gof`): the
/// bootstrap's in `observed`, or with `model_null` against the model null (`stat` computes the
/// statistic of a replicate data set and seed; B, its Gibbs sweeps and the sample size n).
/// Records the method in `doc["bootstrap"]`.
#[allow(clippy::too_many_arguments)]
fn null_p_value<F>(
    py: Python<'_>,
    model: &PyModel,
    null: &NullTest,
    model_null: bool,
    (reps, burnin, n): (usize, usize, usize),
    observed: &dlp_gof::bootstrap::NullOutcome,
    doc: &mut Value,
    warnings: &mut Vec<String>,
    stat: F,
) -> PyResult<f64>
where
    F: Fn(&[u32], u64) -> Result<f64, GofError> + Sync + Send,
{
    let target = model.target();
    let gof_null = dlp_gof::GofNull {
        bootstrap: null.bootstrap,
        reps,
        seed: null.seed,
        model: model_null.then(|| ModelDraws::for_space(target.space(), burnin)),
    };
    let pv = py.detach(|| gof_null.p_value(target, n, observed, doc, warnings, stat));
    raise_callback_error(model)?;
    pv.map_err(gof_error)
}

/// KDSD test of `samples` (n × d values) against `model` (`dlp gof --test kdsd`).
#[pyfunction]
#[pyo3(signature = (samples, model, *, statistic, bootstrap, reps, alpha, seed, kernel, kernel_scale, burnin))]
#[allow(clippy::too_many_arguments)]
pub fn kdsd<'py>(
    py: Python<'py>,
    samples: PyReadonlyArray2<'_, i64>,
    model: &PyModel,
    statistic: &str,
    bootstrap: Option<&str>,
    reps: &Bound<'py, PyAny>,
    alpha: f64,
    seed: &Bound<'py, PyAny>,
    kernel: &str,
    kernel_scale: f64,
    burnin: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (reps, seed, burnin) =
        (count(reps, "reps", 0)? as usize, count(seed, "seed", 0)?, count(burnin, "burnin", 0)? as usize);
    let (null, model_null) = null_test(statistic, bootstrap, reps, alpha, seed)?;
    if null.bootstrap == Bootstrap::Multinomial && null.statistic == Statistic::V {
        return Err(value_error(GofError::MultinomialNeedsU));
    }
    if !(kernel_scale > 0.0 && kernel_scale.is_finite()) {
        return Err(value_error(format!("kernel_scale must be a positive number, got {kernel_scale}")));
    }
    let mut warnings = Vec::new();
    let base_kernel = match kernel {
        "exp_hamming" => BaseKernel::ExpHamming { scale: kernel_scale },
        "hamming_linear" => {
            warnings.push(
                "hamming_linear kernel is not strictly positive definite: the discrepancy can vanish for a wrong model"
                    .into(),
            );
            BaseKernel::HammingLinear
        }
        o => return Err(value_error(format!("kernel must be exp_hamming or hamming_linear, got {o:?}"))),
    };
    let target = model.target();
    let space = target.space();
    let xs = rows(space, &samples, "samples")?;
    let out = py.detach(|| kdsd_test(target, &xs, &KdsdOptions { kernel: base_kernel, null }));
    raise_callback_error(model)?;
    let out = out.map_err(gof_error)?;
    let mut doc = base("kdsd", &null, alpha, xs.len() / space.d, space, Some(model));
    let mut k = json!({"name": base_kernel.name()});
    if let BaseKernel::ExpHamming { scale } = base_kernel {
        k["scale"] = json!(scale);
    }
    doc["kernel"] = k;
    let n = xs.len() / space.d;
    let p_value = null_p_value(
        py,
        model,
        &null,
        model_null,
        (reps, burnin, n),
        &out.null,
        &mut doc,
        &mut warnings,
        |ys, seed| {
            Ok(kdsd_test(target, ys, &KdsdOptions { kernel: base_kernel, null: NullTest { seed, ..null } })?
                .null
                .statistic)
        },
    )?;
    finish(py, doc, out.null.statistic, p_value, alpha, warnings)
}

/// GF-KSD test of `samples` against `model` (`dlp gof --test gfksd`); `jitter` (n × d reals
/// in (0, 1)) replaces the seeded jitter.
#[pyfunction]
#[pyo3(signature = (samples, model, *, statistic, bootstrap, reps, alpha, seed, surrogate, bandwidth, jitter, burnin))]
#[allow(clippy::too_many_arguments)]
pub fn gfksd<'py>(
    py: Python<'py>,
    samples: PyReadonlyArray2<'_, i64>,
    model: &PyModel,
    statistic: &str,
    bootstrap: Option<&str>,
    reps: &Bound<'py, PyAny>,
    alpha: f64,
    seed: &Bound<'py, PyAny>,
    surrogate: &str,
    bandwidth: Option<f64>,
    jitter: Option<PyReadonlyArray2<'_, f64>>,
    burnin: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (reps, seed, burnin) =
        (count(reps, "reps", 0)? as usize, count(seed, "seed", 0)?, count(burnin, "burnin", 0)? as usize);
    let (null, model_null) = null_test(statistic, bootstrap, reps, alpha, seed)?;
    if null.bootstrap == Bootstrap::Multinomial && null.statistic == Statistic::V {
        return Err(value_error(GofError::MultinomialNeedsU));
    }
    let bandwidth = match bandwidth {
        None => Bandwidth::Median,
        Some(h) if h > 0.0 && h.is_finite() => Bandwidth::Fixed(h),
        Some(h) => return Err(value_error(format!("bandwidth must be None (median) or a positive number, got {h}"))),
    };
    let surrogate = match (surrogate, &model.inner) {
        ("gaussian", _) => Surrogate::Gaussian,
        ("relaxed", crate::Inner::Loaded(m)) => Surrogate::Relaxed(
            dlp_gof::relaxation_of(m.as_target()).ok_or_else(|| value_error(GofError::RelaxedNeedsBinary))?,
        ),
        ("relaxed", _) => return Err(value_error(GofError::RelaxedNeedsBinary)),
        (o, _) => return Err(value_error(format!("surrogate must be gaussian or relaxed, got {o:?}"))),
    };
    let target = model.target();
    let space = target.space();
    let xs = rows(space, &samples, "samples")?;
    let n = xs.len() / space.d;
    let jitter = match &jitter {
        Some(j) => {
            let (r, c) = j.as_array().dim();
            if (r, c) != (n, space.d) {
                return Err(value_error(format!(
                    "jitter has shape ({r}, {c}), expected ({n}, {}) like samples",
                    space.d
                )));
            }
            if let Some(((i, k), v)) = j.as_array().indexed_iter().find(|(_, v)| !(**v > 0.0 && **v < 1.0)) {
                return Err(value_error(format!("jitter[{i}, {k}] = {v} is not in (0, 1)")));
            }
            Some(j.as_array().iter().copied().collect::<Vec<f64>>())
        }
        None => None,
    };
    let from_file = jitter.is_some();
    let opts = GfksdOptions { surrogate, bandwidth, null, jitter };
    let out = py.detach(|| gfksd_test(target, &xs, &opts));
    raise_callback_error(model)?;
    let out = out.map_err(gof_error)?;
    let mut warnings = Vec::new();
    if out.ess < n as f64 / 10.0 {
        warnings.push(format!(
            "importance weights are degenerate: ESS = {:.1} of n = {n} (< n/10); the test has little power",
            out.ess
        ));
    }
    let mut doc = base("gfksd", &null, alpha, n, space, Some(model));
    doc["surrogate"] = json!(opts.surrogate.name());
    doc["kernel"] = json!({"name": "rbf", "bandwidth": out.bandwidth,
        "bandwidth_rule": if bandwidth == Bandwidth::Median { "median" } else { "fixed" }});
    doc["weights_ess"] = json!(out.ess);
    doc["jitter"] = json!(if from_file { "array" } else { "rng" });
    // Replicate data sets of the model null draw their own jitter from their own seed.
    let fresh = GfksdOptions { jitter: None, ..opts.clone() };
    let p_value = null_p_value(
        py,
        model,
        &null,
        model_null,
        (reps, burnin, n),
        &out.null,
        &mut doc,
        &mut warnings,
        |ys, seed| {
            let o = GfksdOptions { null: NullTest { seed, ..null }, ..fresh.clone() };
            Ok(gfksd_test(target, ys, &o)?.null.statistic)
        },
    )?;
    finish(py, doc, out.null.statistic, p_value, alpha, warnings)
}

/// MMD permutation test of `samples` against `reference` rows, or against draws from `model`
/// (exact when it has at most 2²⁰ states, else `burnin` Gibbs sweeps) (`dlp gof --test mmd`).
#[pyfunction]
#[pyo3(signature = (samples, *, model, reference, values, model_samples, burnin, statistic, reps, alpha, seed, kernel_scale))]
#[allow(clippy::too_many_arguments)]
pub fn mmd<'py>(
    py: Python<'py>,
    samples: PyReadonlyArray2<'_, i64>,
    model: Option<&PyModel>,
    reference: Option<PyReadonlyArray2<'_, i64>>,
    values: Option<Vec<i64>>,
    model_samples: Option<&Bound<'py, PyAny>>,
    burnin: &Bound<'py, PyAny>,
    statistic: &str,
    reps: &Bound<'py, PyAny>,
    alpha: f64,
    seed: &Bound<'py, PyAny>,
    kernel_scale: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let (reps, seed, burnin) =
        (count(reps, "reps", 0)? as usize, count(seed, "seed", 0)?, count(burnin, "burnin", 0)? as usize);
    let (null, _) = null_test(statistic, None, reps, alpha, seed)?;
    if !(kernel_scale > 0.0 && kernel_scale.is_finite()) {
        return Err(value_error(format!("kernel_scale must be a positive number, got {kernel_scale}")));
    }
    if reference.is_some() && model_samples.is_some() {
        return Err(value_error("reference and model_samples cannot be used together"));
    }
    let model_samples = count_opt(model_samples, "model_samples", 2)?.map(|m| m as usize);
    let space = match (model, values) {
        (Some(m), _) => m.target().space().clone(),
        // Without a model the values are those the arrays hold (MMD's kernel only compares
        // values for equality), as `dlp gof` infers them from the files.
        (None, Some(v)) => Space { d: samples.as_array().dim().1, kind: DomainKind::Categorical, values: v },
        (None, None) => return Err(value_error("mmd needs model (to draw reference samples) or reference")),
    };
    let xs = rows(&space, &samples, "samples")?;
    let n = xs.len() / space.d;
    let mut warnings = Vec::new();
    let (ys, reference_doc) = match (&reference, model) {
        (Some(r), _) => (rows(&space, r, "reference")?, json!({"source": "array"})),
        (None, Some(model)) => {
            let t = model.target();
            let m = model_samples.unwrap_or(n);
            if space.n_states().is_some_and(|s| s <= MAX_EXACT_STATES) {
                let ys = py.detach(|| exact_draws(t, m, seed));
                raise_callback_error(model)?;
                (ys.map_err(gof_error)?, json!({"source": "model_sampler", "sampler": "exact", "burnin": Value::Null}))
            } else {
                warnings.push(format!(
                    "reference drawn by {burnin} single-site Gibbs sweeps (the space is too large to draw exactly); calibration is only guaranteed with exact draws"
                ));
                let ys = py.detach(|| gibbs_draws(t, m, burnin, seed));
                raise_callback_error(model)?;
                (
                    ys.map_err(|e| gof_error(e.into()))?,
                    json!({"source": "model_sampler", "sampler": "gibbs", "burnin": burnin}),
                )
            }
        }
        (None, None) => return Err(value_error("mmd needs model (to draw reference samples) or reference")),
    };
    let opts = MmdOptions { scale: kernel_scale, statistic: null.statistic, reps, seed };
    let out = py.detach(|| mmd_test(&space, &xs, &ys, &opts)).map_err(gof_error)?;
    let mut doc = base("mmd", &null, alpha, n, &space, model);
    doc["m"] = json!(out.m);
    doc["reference"] = reference_doc;
    doc["kernel"] = json!({"name": "exp_hamming", "scale": kernel_scale});
    doc["bootstrap"] = json!({"method": "permutation", "reps": reps});
    finish(py, doc, out.statistic, out.p_value, alpha, warnings)
}
