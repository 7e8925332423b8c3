//! `dlmc` and `dlmcf`: discrete Langevin Monte Carlo (Sun, Dai, Dai, Zhou & Schuurmans,
//! "Discrete Langevin Sampler via Wasserstein Gradient Flow", AISTATS 2023, arXiv:2206.14897),
//! binary, spin and categorical targets.
//!
//! The proposal (the paper's DLMC, "a factorized estimate of the transition matrix"):
//! simulate for time h the continuous-time Markov jump process whose jump rates are the locally balanced weights g(π(y)/π(x)) of the first-order Taylor
//! approximation of f = log π at the current state x, with balancing function g(t) = √t. On
//! {0,1}^d the approximation log π(y) − log π(x) ≈ ∇f(x)ᵀ(y − x) factorises over coordinates,
//! so each coordinate runs its own two-state chain independently. With
//! δ_i = (1 − 2x_i) ∂_i f(x) (the linearised change of f when bit i flips), coordinate i jumps
//! away from x_i at rate r_away = √(e^{δ_i}) = e^{δ_i/2} and back at rate r_back = e^{−δ_i/2}
//! (the gradient stays frozen at x for the whole interval). The two-state chain started at x_i
//! is away after time h with probability
//!
//! p_i = r_away/(r_away + r_back) · (1 − e^{−h (r_away + r_back)}) = σ(δ_i)(1 − e^{−2h cosh(δ_i/2)}),
//!
//! the (1,2) entry of exp(hQ), Q = [[−r_away, r_away], [r_back, −r_back]]. The coordinates
//! flip independently with these probabilities: q(y|x) = Π_{i flipped} p_i Π_{i kept} (1 − p_i).
//! `dlmc` then accepts with min(1, e^A), A = f(y) − f(x) + log q(x|y) − log q(y|x), the reverse
//! law built from ∇f(y) for the same flip set; `dlmcf` accepts every proposal (the
//! unadjusted sampler, biased for h > 0).
//!
//! The paper's section and equation numbers are not cited: its full text was not at hand
//! (its abstract was). Which details come from the official code (google-research/discs,
//! `discs/samplers/dlmc.py`, `BinaryDLMC.get_dist_at` with `solver='interpolate'`, the default): the closed form
//! σ(δ)(1 − exp(−τ w/σ(δ))) with w = g(e^δ) (= p_i above, since w/σ(δ) = 2 cosh(δ/2) for
//! g = √·), the √ balancing function (`balancing_fn_type='SQRT'`), and the MH correction with the
//! reverse flip probabilities at y. Not taken from the code: its adaptive time τ (the code tunes
//! log τ towards an acceptance rate of 0.574, starting from τ = n/Σ_i w_i with n = 3); here the
//! time h is fixed and given by `--step-size`, so `dlmc` is a fixed Markov kernel (exact for π).
//! Spin targets are sampled on the bit x = (s + 1)/2 with ∂f/∂x, as the DLP samplers do.
//!
//! Logs are stable: log p_i = log σ(δ_i) + log(1 − e^{−h R_i}) with R_i = 2 cosh(δ_i/2), and
//! log(1 − p_i) = logaddexp(log σ(−δ_i), log σ(δ_i) − h R_i).
//!
//! Categorical spaces (one-hot gradient G, d × K): the same linearisation gives coordinate i
//! its own K-state chain with rates a → b of √(e^{G_{i,b} − G_{i,a}}) = e^{(G_{i,b} − G_{i,a})/2}
//! (the gradient frozen at x), Q_i = rates with −(row sums) on the diagonal; the coordinate moves
//! from c = x_i to v with probability exp(hQ_i)\[c\]\[v\]. Here exp(hQ_i) is computed exactly
//! (scaling and squaring with a 20-term Taylor series, rows kept stochastic,
//! [`generator_expm`]), K×K per coordinate. This
//! departs from the official code, whose `CategoricalDLMC` uses the per-state interpolation
//! ν_v(1 − exp(−τ w_v/ν_v)) (ν = softmax of the first-order differences) and renormalises;
//! both leave π invariant under the MH step, but their `dlmcf` laws differ.
//!
//! Not implemented: ordinal domains (`start` returns `SamplerError::Unsupported`), the
//! adaptive τ schedule.

use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::mh::{Caching, MhChains, Proposal, exact_row};
use crate::proposal::inverse_cdf;
use crate::spec::Build;
use crate::spec::{NO_TESTS, PLAIN, STEP_SIZE, SamplerName, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere};
use dlp_core::TargetExt;
use dlp_core::{ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, Space, Target, Transition};
use rand::RngExt;

pub mod flip;
pub use flip::{flip_log_probs, log_prob};

/// exp(A) of the K×K matrix `a` (row-major): scaling and squaring, A/2^s with ‖A/2^s‖∞ ≤ ½,
/// then a 20-term Taylor series (remainder < 1e−25 relative) squared s times. A non-finite
/// entry gives a NaN matrix.
pub fn expm(a: &[f64], k: usize) -> Vec<f64> {
    scaled_exp(a, k, false)
}

/// exp(A) of a K×K generator `a` (off-diagonal entries ≥ 0, rows summing to 0), a stochastic
/// matrix: [`expm`]'s scaling and squaring with every row clamped at 0 and rescaled to sum 1
/// after the series and after each squaring. Plain squaring turns a row sum's rounding error
/// 1 + ε into (1 + ε)^(2^s), and s grows with log₂(h‖Q‖): at h ≈ 3e14, where warm-up drove
/// `dlmc` on a categorical task whose acceptance stays 1 at every h, the rows summed far from
/// 1 and the law drawn from was not the law scored, so the chain was biased.
pub fn generator_expm(a: &[f64], k: usize) -> Vec<f64> {
    scaled_exp(a, k, true)
}

/// Scaling and squaring; `stochastic`: renormalise the rows after each stage.
fn scaled_exp(a: &[f64], k: usize, stochastic: bool) -> Vec<f64> {
    let renormalise = |m: &mut [f64]| {
        if stochastic {
            for row in m.chunks_mut(k) {
                row.iter_mut().for_each(|v| *v = v.max(0.0));
                let total: f64 = row.iter().sum();
                row.iter_mut().for_each(|v| *v /= total);
            }
        }
    };
    let norm = (0..k).map(|r| a[r * k..(r + 1) * k].iter().map(|v| v.abs()).sum::<f64>()).fold(0.0, f64::max);
    if !norm.is_finite() {
        return vec![f64::NAN; k * k];
    }
    let (mut s, mut scale) = (0u32, 1.0);
    while norm * scale > 0.5 {
        scale *= 0.5;
        s += 1;
    }
    let b: Vec<f64> = a.iter().map(|v| v * scale).collect();
    let matmul = |x: &[f64], y: &[f64]| -> Vec<f64> {
        let mut out = vec![0.0; k * k];
        for r in 0..k {
            for m in 0..k {
                let xv = x[r * k + m];
                for c in 0..k {
                    out[r * k + c] += xv * y[m * k + c];
                }
            }
        }
        out
    };
    let mut result = vec![0.0; k * k];
    for r in 0..k {
        result[r * k + r] = 1.0;
    }
    let mut term = result.clone();
    for j in 1..=20 {
        term = matmul(&term, &b);
        term.iter_mut().for_each(|v| *v /= j as f64);
        result.iter_mut().zip(&term).for_each(|(r, t)| *r += t);
    }
    renormalise(&mut result);
    for _ in 0..s {
        result = matmul(&result, &result);
        renormalise(&mut result);
    }
    result
}

/// The law of the next value of one categorical coordinate at value `c`, from its gradient row
/// `g` (length K) and time `h`: `out[v]` = log exp(hQ)\[c\]\[v\] with Q's off-diagonal rates
/// e^{(g_b − g_a)/2} (module docs); entries that rounding left ≤ 0 get −∞.
pub fn categorical_log_law(h: f64, g: &[f64], c: usize, out: &mut [f64]) {
    let k = g.len();
    let mut a = vec![0.0; k * k];
    for r in 0..k {
        let mut total = 0.0;
        for b in (0..k).filter(|&b| b != r) {
            let rate = (0.5 * (g[b] - g[r])).exp();
            a[r * k + b] = h * rate;
            total += rate;
        }
        a[r * k + r] = -h * total;
    }
    let e = generator_expm(&a, k);
    for (v, o) in out.iter_mut().enumerate() {
        let p = e[c * k + v];
        *o = if p > 0.0 {
            p.ln()
        } else if p.is_nan() {
            f64::NAN
        } else {
            f64::NEG_INFINITY
        };
    }
}

/// Proposal entries per coordinate: 1 (binary/spin: `log_p`, `log_keep`) or K (categorical:
/// `log_p` holds the d × K log-laws, `log_keep` is unused).
fn width(space: &Space) -> usize {
    if space.is_binary_like() { 1 } else { space.k() }
}

/// The proposal at `x` from `grad` (binary: [`flip_log_probs`]; categorical:
/// [`categorical_log_law`] per coordinate). `step` and the exact kernel both call it.
pub fn proposal_laws(h: f64, space: &Space, x: &[u32], grad: &[f64], log_p: &mut [f64], log_keep: &mut [f64]) {
    if space.is_binary_like() {
        flip_log_probs(h, x, grad, log_p, log_keep);
    } else {
        let k = space.k();
        for i in 0..space.d {
            categorical_log_law(h, &grad[i * k..(i + 1) * k], x[i] as usize, &mut log_p[i * k..(i + 1) * k]);
        }
    }
}

/// log q(y|x) from the laws at x, any supported space.
#[inline]
pub fn space_log_prob(space: &Space, x: &[u32], y: &[u32], log_p: &[f64], log_keep: &[f64]) -> f64 {
    if space.is_binary_like() {
        log_prob(x, y, log_p, log_keep)
    } else {
        let k = space.k();
        y.iter().enumerate().map(|(i, &v)| log_p[i * k + v as usize]).sum()
    }
}

/// DLMC (`mh`) or DLMCF (unadjusted) with time h.
#[derive(Clone, Debug, PartialEq)]
pub struct Dlmc {
    name: String,
    h: f64,
    mh: bool,
}

impl Dlmc {
    /// `dlmc` (`mh = true`) or `dlmcf` with time `h` (finite, > 0).
    pub fn new(mh: bool, h: f64) -> Result<Self, SamplerError> {
        let name = if mh { "dlmc" } else { "dlmcf" }.to_string();
        if !(h.is_finite() && h > 0.0) {
            return Err(SamplerError::BadParameter {
                sampler: name,
                message: format!("step_size (time h) must be finite and > 0, got {h}"),
            });
        }
        Ok(Dlmc { name, h, mh })
    }

    /// Registry constructor for `dlmc` and `dlmcf`.
    pub fn build(name: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        let mh = name.stem == "dlmc";
        let h = params.step_size.ok_or_else(|| SamplerError::BadParameter {
            sampler: name.stem.clone(),
            message: "step_size (time h) is required (--step-size)".into(),
        })?;
        Ok(Box::new(Dlmc::new(mh, h)?))
    }
}

impl Sampler for Dlmc {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        if space.kind == dlp_core::DomainKind::Ordinal {
            return Err(SamplerError::Unsupported {
                sampler: self.name(),
                message: format!(
                    "domain {:?}: {} is implemented for binary, spin and categorical spaces only",
                    space.kind, self.name
                ),
            });
        }
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        // Uniform lattice Ising models: the lattice kernel with DLMC's per-class flip
        // probabilities (the same kernel, `fast::ising`).
        if let Some(m) = crate::fast::ising::qualifying_model(target) {
            return Ok(Box::new(crate::fast::ising::IsingDlpChains::dlmc(space, &m, self.h, self.mh, x0)?));
        }
        if x0.len() < space.d {
            return Err(SamplerError::BadInitialState("no chains".into()));
        }
        Ok(Box::new(MhChains::on_target(target, DlmcProposal { h: self.h }, self.mh, Caching::Keep, x0)?))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for Dlmc {
    /// DLMCF: every y with q(y|x). DLMC: y ≠ x with q(y|x)·min(1, e^A), x with the rest.
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        exact_row(&DlmcProposal { h: self.h }, self.mh, target.space(), x, |y, g| target.log_density_grad(y, g))
    }
}

/// The DLMC proposal with time h (the [`crate::mh::Proposal`] of `dlmc`/`dlmcf`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DlmcProposal {
    /// Time h.
    pub h: f64,
}

/// What a DLMC chain caches of its state: the proposal laws [`proposal_laws`] writes.
#[derive(Clone, Debug)]
pub struct DlmcCache {
    /// Binary/spin: log p_i (flip); categorical: the d × K log-laws.
    pub log_p: Vec<f64>,
    /// Binary/spin: log(1 − p_i) (keep); categorical: empty.
    pub log_keep: Vec<f64>,
}

impl Proposal for DlmcProposal {
    type Cache = DlmcCache;

    fn new_cache(&self, space: &Space) -> DlmcCache {
        let keep = if space.is_binary_like() { space.d } else { 0 };
        DlmcCache { log_p: vec![0.0; space.d * width(space)], log_keep: vec![0.0; keep] }
    }

    fn prepare(&self, space: &Space, x: &[u32], grad: &[f64], c: &mut DlmcCache) {
        proposal_laws(self.h, space, x, grad, &mut c.log_p, &mut c.log_keep);
    }

    /// d uniforms (binary: flip i iff u_i < p_i; categorical: inverse CDF of coordinate i's
    /// law).
    fn draw(&mut self, space: &Space, x: &[u32], c: &DlmcCache, rng: &mut ChainRng, y: &mut [u32]) -> u32 {
        let (d, w) = (space.d, width(space));
        let lp = &c.log_p;
        let mut k = 0;
        for i in 0..d {
            let u: f64 = rng.random();
            if w == 1 {
                let flip = u < lp[i].exp();
                y[i] = x[i] ^ flip as u32;
            } else {
                let law = lp[i * w..(i + 1) * w].iter().map(|l| l.exp());
                // Rounding left u ≥ 0 after the whole row: the last value with positive mass.
                y[i] = inverse_cdf(law.clone(), u)
                    .unwrap_or_else(|| law.clone().rposition(|p| p > 0.0).unwrap_or(x[i] as usize))
                    as u32;
            }
            k += (y[i] != x[i]) as u32;
        }
        k
    }

    fn log_prob(&self, space: &Space, from: &[u32], to: &[u32], c: &DlmcCache) -> f64 {
        space_log_prob(space, from, to, &c.log_p, &c.log_keep)
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `dlmc`.
pub const DLMC: SamplerSpec = SamplerSpec {
    stem: "dlmc",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(Dlmc::build),
    doc: "discrete Langevin Monte Carlo: per-coordinate jump process (√ locally balanced \
          rates of the linearised f) run for time h, Metropolis-adjusted; binary/spin/categorical",
    paper: "Sun et al. 2023 (AISTATS; DISCS `dlmc.py`)",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["dlmc"], step_size: Some(0.5), ..NO_TESTS },
    defaults: crate::spec::Defaults { ising: Some(1.0), rbm: Some(0.01), ..crate::spec::NO_DEFAULTS },
};

/// The registry row of `dlmcf`.
pub const DLMCF: SamplerSpec = SamplerSpec {
    stem: "dlmcf",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(Dlmc::build),
    doc: "DLMC without the MH correction (unadjusted); binary/spin/categorical",
    paper: "Sun et al. 2023 (AISTATS; DISCS `dlmc.py`)",
    exact: false,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["dlmcf"], step_size: Some(0.5), ..NO_TESTS },
    defaults: crate::spec::Defaults { ising: Some(1.0), rbm: Some(0.01), ..crate::spec::NO_DEFAULTS },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    #[test]
    fn flip_probability_is_the_two_state_ctmc_formula() {
        // δ = 0.8 at x_i = 0: rates e^{0.4} away, e^{−0.4} back.
        let (h, g) = (0.7f64, 0.8f64);
        let (a, b) = ((0.4f64).exp(), (-0.4f64).exp());
        let expect = a / (a + b) * (1.0 - (-h * (a + b)).exp());
        let (mut lp, mut lk) = ([0.0; 2], [0.0; 2]);
        flip_log_probs(h, &[0, 1], &[g, -g], &mut lp, &mut lk);
        for i in 0..2 {
            assert!((lp[i].exp() - expect).abs() < 1e-15, "{} vs {expect}", lp[i].exp());
            assert!((lk[i].exp() - (1.0 - expect)).abs() < 1e-15);
        }
        // Extreme gradients and times stay finite where they should.
        flip_log_probs(1e-9, &[0, 0], &[800.0, -800.0], &mut lp, &mut lk);
        assert!(lp.iter().chain(&lk).all(|v| !v.is_nan()), "{lp:?} {lk:?}");
        assert!((lk[1]).abs() < 1e-12);
    }

    #[test]
    fn dlmc_is_exact_and_dlmcf_is_a_kernel() {
        let q = Quadratic::spec_tiny();
        check_exact(&Dlmc::new(true, 0.5).unwrap(), &q, true);
        let mut q2 = Quadratic::spec_tiny();
        q2.w[4] = -0.9;
        check_exact(&Dlmc::new(true, 1.3).unwrap(), &q2, true);
        let rows = Dlmc::new(false, 0.5).unwrap().transition_row(&q, &[0, 1, 0], 0).unwrap();
        assert!((rows.iter().map(|r| r.1).sum::<f64>() - 1.0).abs() < 1e-14);
    }

    #[test]
    fn categorical_law_is_the_matrix_exponential() {
        // K = 2: the two-state closed form; K = 4: rows of exp(hQ) sum to 1, and the
        // K = 2 law of a binary coordinate equals the flip law with δ = g_1 − g_0.
        let (h, g) = (0.7, [0.3, 1.1]);
        let mut out = [0.0; 2];
        categorical_log_law(h, &g, 0, &mut out);
        let (mut lp, mut lk) = ([0.0], [0.0]);
        flip_log_probs(h, &[0], &[g[1] - g[0]], &mut lp, &mut lk);
        assert!((out[1].exp() - lp[0].exp()).abs() < 1e-15 && (out[0].exp() - lk[0].exp()).abs() < 1e-15);
        let g4 = [0.5, -2.0, 3.0, 0.1];
        for c in 0..4 {
            let mut law = [0.0; 4];
            categorical_log_law(2.5, &g4, c, &mut law);
            assert!((law.iter().map(|l| l.exp()).sum::<f64>() - 1.0).abs() < 1e-13, "{law:?}");
        }
        // Long times: the law tends to the CTMC's stationary law softmax(g) from every start
        // (detailed balance: π_a e^{(g_b − g_a)/2} = π_b e^{(g_a − g_b)/2}), rows sum to 1.
        // Without row renormalisation the squarings (about 50 at h = 1e14) amplify the
        // rounding of the row sums exponentially (the bias `dlmc` showed after a long warm-up).
        let z: f64 = g4.iter().map(|v| v.exp()).sum();
        for h in [50.0, 1e6, 1e14, 3e14, 1e300] {
            for c in 0..4 {
                let mut law = [0.0; 4];
                categorical_log_law(h, &g4, c, &mut law);
                for (l, v) in law.iter().zip(&g4) {
                    assert!((l.exp() - v.exp() / z).abs() < 1e-12, "h = {h}, c = {c}: {law:?}");
                }
            }
        }
        // exp of a diagonal matrix.
        let e = expm(&[1.0, 0.0, 0.0, -30.0], 2);
        assert!((e[0] / 1f64.exp() - 1.0).abs() < 1e-13 && (e[3] / (-30f64).exp() - 1.0).abs() < 1e-12 && e[1] == 0.0);
    }

    #[test]
    fn categorical_dlmc_is_exact() {
        let t = PairwiseCategorical::spec_small();
        check_exact(&Dlmc::new(true, 0.5).unwrap(), &t, true);
        check_exact(&Dlmc::new(true, 3.0).unwrap(), &t, true);
        empirical_check(&Dlmc::new(true, 0.8).unwrap(), &t, &[1, 2], 20_000, 19);
        empirical_check(&Dlmc::new(false, 0.8).unwrap(), &t, &[0, 1], 20_000, 20);
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        empirical_check(&Dlmc::new(true, 0.5).unwrap(), &q, &[1, 0, 1], 20_000, 17);
        empirical_check(&Dlmc::new(false, 0.9).unwrap(), &q, &[0, 0, 1], 20_000, 18);
    }

    #[test]
    fn bad_parameters_and_ordinal_targets_are_refused() {
        assert!(Dlmc::new(true, 0.0).is_err());
        assert!(Dlmc::new(false, f64::NAN).is_err());
        let ord = Quadratic::new(dlp_core::Space::ordinal(1, vec![0, 1, 3]), vec![0.0], vec![0.2]);
        let e = Dlmc::new(true, 0.5).unwrap().start(&ord, &[0]).err().unwrap();
        assert!(matches!(e, SamplerError::Unsupported { .. }), "{e}");
    }
}
