//! Warm-up step-size adaptation: dual averaging of log α toward a target acceptance rate
//! (Nesterov 2009, in the form of Hoffman & Gelman 2014, Alg. 5 — the scheme Stan and BlackJAX
//! use), for Metropolis-adjusted samplers with a step size (`dmala`, `pdmala`, `dmala-f32`, …).
//!
//! The warm-up runs in windows of `window` steps. Each window is an ordinary run of the sampler
//! built with the window's α (so the chains, caches and fast paths are the fixed-α ones),
//! seeded by `derive_seed(seed, [ADAPT, w])`; after it the mean acceptance probability over
//! all chains and steps of the window updates log α. Chains restart from their positions with
//! the new α (re-computing their caches, one gradient per chain per window: with the default
//! window of [`DEFAULT_WINDOW`] = 100 steps that is ≤ 1% of the warm-up's gradient
//! evaluations, and ≤ 5% of its time on the lattice fast path). The mean is summed
//! per chain and then over chains in chain order, so α — and everything after it — is the same
//! for any thread count. After the warm-up α is frozen at the averaged iterate ᾱ: the samples
//! the caller keeps come from the fixed-α kernel (`build_sampler(name, α)`), which is the
//! sampler the exact suite checks.
//!
//! Not adapted: unadjusted samplers (DULA: acceptance is always 1), preconditioners, or one α
//! per chain (one α for all chains keeps them one kernel).

pub use crate::dual_averaging::{ADAPT, AdaptOptions, Adapted, DEFAULT_WINDOW, MALA_TARGET_ACCEPT};
use crate::registry::{SamplerParams, find, inner_of, sampler_names};
use crate::spec::Build;
use dlp_core::{RunOptions, SamplerError, Target};

/// Adapts the step size of sampler `name` (with `params`' other parameters) on `target` from
/// the chains at `x0`. Refuses samplers without a step size or without an MH test. Cyclical
/// DMALA (`acs-dmala`) tunes its α_min and α_max instead (its row's `adapt`, [`crate::acs::adapt_acs`]).
pub fn adapt_step_size(
    name: &str,
    params: &SamplerParams,
    target: &dyn Target,
    x0: &[u32],
    opts: &AdaptOptions,
    run: &RunOptions,
) -> Result<Adapted, SamplerError> {
    let (spec, parsed) =
        find(name).ok_or_else(|| SamplerError::UnknownSampler(name.into(), sampler_names().join(", ")))?;
    crate::tune::check(spec, name, opts)?;
    match spec.build {
        Build::Plain(construct) => crate::tune::adapt_plain(spec, construct, &parsed, params, target, x0, opts, run),
        Build::Wrapper(w) => (w.adapt)(&parsed, params, &inner_of(&parsed)?, target, x0, opts, run),
    }
}

/// The default target acceptance of `name`'s adaptation: its row's
/// [`SamplerSpec::target_accept`](crate::spec::SamplerSpec::target_accept) (0.5 for cyclical
/// DMALA, else [`MALA_TARGET_ACCEPT`]).
pub fn default_target_accept(name: &str) -> f64 {
    match find(name) {
        // A wrapper (`pt-4:rwm`) adapts its inner sampler's step size toward the inner target.
        Some((spec, parsed)) if spec.wraps() => {
            parsed.inner.as_deref().map_or(spec.target_accept, default_target_accept)
        }
        Some((spec, _)) => spec.target_accept,
        None => MALA_TARGET_ACCEPT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::build_sampler;
    use dlp_core::testing::Quadratic;
    use dlp_core::{Observer, States, StepContext, StepInfo, run_chains};

    /// A 5×5 periodic Ising model in the fig3 setup (σ = 0.1 per edge, b = 0.2, spin), written
    /// as the quadratic f(x) = xᵀWx + bᵀx on bits.
    fn ising_5x5() -> Quadratic {
        let (l, d) = (5usize, 25usize);
        let (sigma, field) = (0.1, 0.2);
        // f(s) = σ Σ_{edges} 2 s_i s_j + b Σ s_i with s = 2x − 1, expanded on bits: each edge
        // contributes 2σ(4 x_i x_j − 2x_i − 2x_j + 1) — the constant drops out of π, and xᵀWx counts
        // W_ij once.
        let mut w = vec![0.0; d * d];
        let mut b = vec![2.0 * field; d];
        for r in 0..l {
            for c in 0..l {
                let i = r * l + c;
                for j in [((r + 1) % l) * l + c, r * l + (c + 1) % l] {
                    w[i * d + j] += 8.0 * sigma;
                    b[i] -= 4.0 * sigma;
                    b[j] -= 4.0 * sigma;
                }
            }
        }
        Quadratic::new(dlp_core::Space::binary(d), w, b)
    }

    struct Accepts(f64, usize);
    impl Observer for Accepts {
        fn observe(&mut self, _: &StepContext, _: States<'_>, info: &[StepInfo]) {
            self.0 += info.iter().map(|i| i.accept_prob).sum::<f64>();
            self.1 += info.len();
        }
    }

    /// Adapted DMALA on the fig3-type model: then a fixed-α run's mean acceptance lies in
    /// 0.5–0.65 (the criterion). Deterministic given the seeds (no false-failure rate:
    /// 32 chains × 2,000 steps average out the acceptance to ±0.01 here, well inside the band).
    #[test]
    fn dmala_adapts_into_the_target_band_and_is_thread_independent() {
        let t = ising_5x5();
        let x0 = vec![0u32; 32 * 25];
        let opts = AdaptOptions { warmup: 1500, ..AdaptOptions::default() };
        let run = |threads| {
            let r = RunOptions { seed: 3, threads, chains_per_task: 0 };
            adapt_step_size("dmala", &SamplerParams::default(), &t, &x0, &opts, &r).unwrap()
        };
        let a = run(1);
        assert_eq!(a, run(2), "adaptation must not depend on the thread count");
        assert_eq!(a.windows, 1500 / DEFAULT_WINDOW);
        let fixed = build_sampler("dmala", &SamplerParams { step_size: a.step_size, ..Default::default() }).unwrap();
        let o = RunOptions { seed: 4, threads: 2, chains_per_task: 0 };
        let out = run_chains(fixed.as_ref(), &t, &a.positions, 2000, &o, |_, _| Accepts(0.0, 0)).unwrap();
        let acc =
            out.observers.iter().map(|o| o.0).sum::<f64>() / out.observers.iter().map(|o| o.1).sum::<usize>() as f64;
        assert!((0.5..=0.65).contains(&acc), "α = {:?}: acceptance {acc}", a.step_size);
        // The band is not met by accident: a step size ten times larger misses it.
        let big =
            build_sampler("dmala", &SamplerParams { step_size: a.step_size.map(|s| 10.0 * s), ..Default::default() })
                .unwrap();
        let out = run_chains(big.as_ref(), &t, &a.positions, 500, &o, |_, _| Accepts(0.0, 0)).unwrap();
        let acc_big =
            out.observers.iter().map(|o| o.0).sum::<f64>() / out.observers.iter().map(|o| o.1).sum::<usize>() as f64;
        assert!(acc_big < 0.5, "10 α: acceptance {acc_big}");
    }

    /// Cyclical DMALA's tuning on the fig3-type model: thread-independent, α_min ≤ α_max ≤ 5,
    /// and plain DMALA at the tuned α_min accepts near the ACS target 0.5 (band 0.4–0.6;
    /// deterministic given the seeds, and 32 chains × 2,000 steps pin the mean acceptance to
    /// about ±0.01, so the band is not at the edge of the noise).
    #[test]
    fn acs_tunes_alpha_min_and_alpha_max() {
        let t = ising_5x5();
        let x0 = vec![0u32; 32 * 25];
        let opts =
            AdaptOptions { warmup: 1600, target_accept: default_target_accept("acs-dmala"), ..Default::default() };
        assert_eq!(opts.target_accept, 0.5);
        let run = |threads| {
            let r = RunOptions { seed: 5, threads, chains_per_task: 0 };
            adapt_step_size("acs-dmala", &SamplerParams::default(), &t, &x0, &opts, &r).unwrap()
        };
        let a = run(1);
        assert_eq!(a, run(2), "adaptation must not depend on the thread count");
        let alpha_min = a.step_size_min.expect("acs reports α_min");
        let alpha_max = a.step_size.expect("acs reports α_max");
        assert!(alpha_min <= alpha_max && alpha_max <= crate::acs::ALPHA_MAX_CAP, "{a:?}");
        let fixed =
            build_sampler("dmala", &SamplerParams { step_size: Some(alpha_min), ..Default::default() }).unwrap();
        let o = RunOptions { seed: 6, threads: 2, chains_per_task: 0 };
        let out = run_chains(fixed.as_ref(), &t, &a.positions, 2000, &o, |_, _| Accepts(0.0, 0)).unwrap();
        let acc =
            out.observers.iter().map(|o| o.0).sum::<f64>() / out.observers.iter().map(|o| o.1).sum::<usize>() as f64;
        assert!((0.4..=0.6).contains(&acc), "α_min = {alpha_min}: acceptance {acc}");
        // The tuned values build the sampler the exact suite checks.
        let p = SamplerParams { step_size: a.step_size, step_size_min: Some(alpha_min), ..Default::default() };
        assert!(build_sampler("acs-dmala", &p).is_ok());
    }

    #[test]
    fn unadjusted_and_stepless_samplers_are_refused() {
        let t = Quadratic::spec_tiny();
        let r = RunOptions::default();
        for name in ["dula", "gibbs", "sg-dmala", "nope"] {
            assert!(
                adapt_step_size(name, &SamplerParams::default(), &t, &[0, 0, 0], &AdaptOptions::default(), &r).is_err(),
                "{name}"
            );
        }
    }
}
