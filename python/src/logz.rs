//! `dlp_mcmc.logz`: the log partition function log Z = log Σ_x exp f(x), exactly by
//! enumeration (`method="exact"`, at most 2^24 states, `dlp_exact::enumerate`) or by annealed
//! importance sampling (`method="ais"`, `dlp_samplers::ais` from the uniform base), with the
//! checks and defaults of `dlp logz` spelled as keywords.

use crate::{PyModel, count_opt, py_err, value_error};
use dlp_samplers::ais::{AisOptions, ProductBase, run_ais};
use dlp_session::Error as CliError;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Largest space `method="exact"` enumerates (2^24 states, as `dlp logz`).
const MAX_EXACT_STATES: u64 = 1 << 24;

/// log Z of `model` (see the module doc). Returns a dict: `method`, `log_z`, `std_err`, and
/// for AIS `chains`, `temperatures`, `sampler`, `seed`, `ess`, `mean_accept` and `log_weights`
/// (one per chain); for exact `n_states`.
#[pyfunction]
#[pyo3(signature = (model, method, *, chains=None, temperatures=None, sampler=None, step_size=None, seed=None, threads=None))]
#[allow(clippy::too_many_arguments)]
pub fn logz<'py>(
    py: Python<'py>,
    model: &PyModel,
    method: &str,
    chains: Option<&Bound<'py, PyAny>>,
    temperatures: Option<&Bound<'py, PyAny>>,
    sampler: Option<String>,
    step_size: Option<f64>,
    seed: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let chains = count_opt(chains, "chains", 0)?.map(|c| c as usize);
    let temperatures = count_opt(temperatures, "temperatures", 0)?.map(|c| c as usize);
    let seed = count_opt(seed, "seed", 0)?;
    let threads = count_opt(threads, "threads", 0)?.map(|c| c as usize);
    let target = model.target();
    let out = PyDict::new(py);
    out.set_item("method", method)?;
    match method {
        "exact" => {
            let given = [
                ("chains", chains.is_some()),
                ("temperatures", temperatures.is_some()),
                ("sampler", sampler.is_some()),
                ("step_size", step_size.is_some()),
                ("seed", seed.is_some()),
                ("threads", threads.is_some()),
            ];
            if let Some((name, _)) = given.iter().find(|(_, g)| *g) {
                return Err(value_error(format!("{name} applies to method \"ais\" only")));
            }
            let n_states = dlp_exact::enumerate::checked_n_states(
                target.space(),
                MAX_EXACT_STATES,
                "dlp_mcmc.logz(method=\"exact\")",
            )
            .map_err(|e| value_error(format!("{e}; use method=\"ais\"")))?;
            let options = dlp_exact::EnumOptions { pair_moments: false, keep_probs: false };
            let e = py.detach(|| dlp_exact::enumerate(target, &options));
            crate::raise_callback_error(model)?;
            out.set_item("log_z", e.map_err(value_error)?.log_z)?;
            out.set_item("std_err", 0.0)?;
            out.set_item("n_states", n_states)?;
        }
        "ais" => {
            let chains = chains.unwrap_or(100);
            if chains < 2 {
                return Err(value_error(format!(
                    "chains must be at least 2 (the standard error needs a spread), got {chains}"
                )));
            }
            let temperatures = temperatures.unwrap_or(1000);
            if temperatures == 0 {
                return Err(value_error("temperatures must be at least 1"));
            }
            crate::run::check_step_size(step_size)?;
            let name = sampler.unwrap_or_else(|| "gwg".into());
            match dlp_samplers::registry::find(&name) {
                Some((spec, _)) if spec.needs_data => {
                    return Err(value_error(format!(
                        "sampler {name} reads minibatches; AIS needs exact transitions (e.g. gwg, dmala, gibbs)"
                    )));
                }
                Some((spec, _)) if spec.particles => {
                    return Err(value_error(format!(
                        "sampler {name} moves interacting particles; AIS needs a Markov transition per chain (e.g. gwg, dmala)"
                    )));
                }
                _ => {}
            }
            let params = dlp_samplers::SamplerParams { step_size, ..Default::default() };
            let s = dlp_samplers::build_sampler(&name, &params).map_err(value_error)?;
            let base = ProductBase::uniform(target.space());
            let seed = seed.unwrap_or(0);
            // A callback model is called with every chain at once, from one thread.
            let threads = if model.callback().is_some() { 1 } else { threads.unwrap_or(0) };
            let opts = AisOptions { chains, temperatures, seed, threads };
            let est = py.detach(|| run_ais(target, &base, s.as_ref(), &opts, &mut |_| {}));
            crate::raise_callback_error(model)?;
            let est = est.map_err(|e| py_err(CliError::from_run(e)))?;
            out.set_item("log_z", est.log_z)?;
            out.set_item("std_err", est.std_err)?;
            out.set_item("chains", chains)?;
            out.set_item("temperatures", temperatures)?;
            out.set_item("sampler", s.name())?;
            out.set_item("seed", seed)?;
            out.set_item("ess", est.ess)?;
            out.set_item("mean_accept", est.mean_accept)?;
            out.set_item("log_weights", PyArray1::from_vec(py, est.log_weights))?;
        }
        o => return Err(value_error(format!("method must be \"exact\" or \"ais\", got {o:?}"))),
    }
    Ok(out)
}
