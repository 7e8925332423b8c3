//! Warm-up adaptation of a resolved row: the checks and the dispatch to the row's own tuner or
//! to dual averaging of its step size. Below the registry ([`crate::adapt`] resolves names and
//! calls this), so that a wrapper ([`crate::tempering`]) adapts its inner sampler without
//! importing the registry that lists it.

use crate::dual_averaging::{AdaptOptions, Adapted, dual_average};
use crate::spec::{Build, Inner, SamplerName, SamplerParams, SamplerSpec};
use dlp_core::{RunOptions, SamplerError, Target};

/// The checks every adaptation makes before touching the chains: the row adapts (a step size
/// and an MH test), the target acceptance is a probability, the warm-up is not empty.
pub fn check(spec: &SamplerSpec, name: &str, opts: &AdaptOptions) -> Result<(), SamplerError> {
    let bad = |message: String| SamplerError::BadParameter { sampler: name.to_string(), message };
    if !spec.adapts_step_size() {
        return Err(bad(
            "step-size adaptation needs a Metropolis-adjusted sampler with a step size (e.g. dmala)".into()
        ));
    }
    if !(opts.target_accept > 0.0 && opts.target_accept < 1.0) {
        return Err(bad(format!("target acceptance must be in (0, 1), got {}", opts.target_accept)));
    }
    if opts.window == 0 || opts.warmup == 0 || !(opts.initial.is_finite() && opts.initial > 0.0) {
        return Err(bad("adaptation needs warm-up steps, a window ≥ 1 and an initial step size > 0".into()));
    }
    Ok(())
}

/// Adapts a plain (non-wrapper) row built by `construct`: its own tuner if it has one
/// ([`SamplerSpec::adapt`]), else dual averaging of its step size. [`check`] first.
#[allow(clippy::too_many_arguments)]
pub fn adapt_plain(
    spec: &SamplerSpec,
    construct: crate::spec::Constructor,
    parsed: &SamplerName,
    params: &SamplerParams,
    target: &dyn Target,
    x0: &[u32],
    opts: &AdaptOptions,
    run: &RunOptions,
) -> Result<Adapted, SamplerError> {
    if let Some(tune) = spec.adapt {
        return tune(parsed, params, target, x0, opts, run);
    }
    let windows = (opts.warmup / opts.window).max(1);
    let build = |alpha: f64| construct(parsed, &SamplerParams { step_size: Some(alpha), ..params.clone() });
    let (step_size, positions, last_accept) = dual_average(&build, target, x0, 0..windows, opts, run)?;
    Ok(Adapted { step_size: Some(step_size), step_size_min: None, ladder: None, positions, last_accept, windows })
}

/// Adapts a wrapper's inner sampler (checked; a wrapper inside a wrapper is refused).
pub fn adapt_inner(
    inner: &Inner,
    params: &SamplerParams,
    target: &dyn Target,
    x0: &[u32],
    opts: &AdaptOptions,
    run: &RunOptions,
) -> Result<Adapted, SamplerError> {
    check(inner.spec, &inner.name, opts)?;
    match inner.spec.build {
        Build::Plain(construct) => adapt_plain(inner.spec, construct, &inner.parsed, params, target, x0, opts, run),
        Build::Wrapper(_) => inner.build(params).map(|_| unreachable!("Inner::build refuses wrappers")),
    }
}
