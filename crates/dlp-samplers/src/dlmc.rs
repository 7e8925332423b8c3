//! `dlmc` and `dlmcf`: discrete Langevin Monte Carlo (Sun, Dai, Dai, Zhou & Schuurmans,
//! "Discrete Langevin Sampler via Wasserstein Gradient Flow", AISTATS 2023, arXiv:2206.14897),
//! binary and spin targets.
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
//! Not implemented: categorical and ordinal domains (`start` returns
//! `SamplerError::Unsupported`; the code's categorical version uses a per-state interpolation
//! rather than the exact K-state matrix exponential), the adaptive τ schedule.

use crate::proposal::{accept_prob, mh_accept};
use crate::registry::{SamplerName, SamplerParams};
use dlp_core::math::log_sigmoid;
use dlp_core::{Batch, ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, StepInfo, Target, Transition};
use rand::RngExt;

/// log(1 − e^{−a}) for a ≥ 0 (−∞ at 0), stable at both ends.
#[inline]
fn log1mexp(a: f64) -> f64 {
    if a <= std::f64::consts::LN_2 { (-(-a).exp_m1()).ln() } else { (-(-a).exp()).ln_1p() }
}

/// log(e^a + e^b).
#[inline]
fn logaddexp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY { m } else { m + ((a - m).exp() + (b - m).exp()).ln() }
}

/// Per-coordinate flip laws of the DLMC proposal at `x` with gradient `grad` and time `h`:
/// `log_p[i]` = log p_i, `log_keep[i]` = log(1 − p_i) (module docs). `step` and the exact
/// kernel both call it.
pub fn flip_log_probs(h: f64, x: &[u32], grad: &[f64], log_p: &mut [f64], log_keep: &mut [f64]) {
    for i in 0..x.len() {
        let delta = (1.0 - 2.0 * x[i] as f64) * grad[i];
        let total_rate = (0.5 * delta).exp() + (-0.5 * delta).exp();
        let log_nu = log_sigmoid(delta);
        log_p[i] = log_nu + log1mexp(h * total_rate);
        log_keep[i] = logaddexp(log_sigmoid(-delta), log_nu - h * total_rate);
    }
}

/// log q(y|x) from the flip laws at x.
#[inline]
pub fn log_prob(x: &[u32], y: &[u32], log_p: &[f64], log_keep: &[f64]) -> f64 {
    (0..x.len()).map(|i| if x[i] != y[i] { log_p[i] } else { log_keep[i] }).sum()
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
        if !space.is_binary_like() {
            return Err(SamplerError::Unsupported {
                sampler: self.name(),
                message: format!(
                    "domain {:?}: {} is implemented for binary and spin spaces only",
                    space.kind, self.name
                ),
            });
        }
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let d = space.d;
        let n = x0.len() / d;
        if n == 0 {
            return Err(SamplerError::BadInitialState("no chains".into()));
        }
        let mut c = DlmcChains {
            target,
            h: self.h,
            mh: self.mh,
            n,
            d,
            x: x0.to_vec(),
            f: vec![0.0; n],
            grad: vec![0.0; n * d],
            log_p: vec![0.0; n * d],
            log_keep: vec![0.0; n * d],
            y: vec![0; n * d],
            n_prop: vec![0; n],
            batch_x: vec![0; n * d],
            batch_f: vec![0.0; n],
            batch_g: vec![0.0; n * d],
            y_log_p: vec![0.0; d],
            y_log_keep: vec![0.0; d],
        };
        target.log_density_grad_batch(&c.x, &mut c.f, &mut c.grad);
        for j in 0..n {
            let r = j * d..(j + 1) * d;
            flip_log_probs(self.h, &c.x[r.clone()], &c.grad[r.clone()], &mut c.log_p[r.clone()], &mut c.log_keep[r]);
        }
        Ok(Box::new(c))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for Dlmc {
    /// DLMCF: every y with q(y|x). DLMC: y ≠ x with q(y|x)·min(1, e^A), x with the rest.
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Vec<Transition> {
        let space = target.space();
        let d = space.d;
        let mut grad = vec![0.0; d];
        let f_x = target.log_density_grad(x, &mut grad);
        let (mut lp, mut lk) = (vec![0.0; d], vec![0.0; d]);
        flip_log_probs(self.h, x, &grad, &mut lp, &mut lk);
        let (mut gy, mut lpy, mut lky) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
        let mut row = Vec::new();
        let mut stay = 0.0;
        crate::dlp::for_each_state(space, |y| {
            let fwd = log_prob(x, y, &lp, &lk);
            let q = fwd.exp();
            if y == x {
                stay += q;
            } else if !self.mh {
                if q > 0.0 {
                    row.push((y.to_vec(), q));
                }
            } else if q > 0.0 {
                let f_y = target.log_density_grad(y, &mut gy);
                flip_log_probs(self.h, y, &gy, &mut lpy, &mut lky);
                let rev = log_prob(y, x, &lpy, &lky);
                let a = accept_prob(crate::dlp::log_accept_ratio(f_x, f_y, fwd, rev));
                if q * a > 0.0 {
                    row.push((y.to_vec(), q * a));
                }
                stay += q * (1.0 - a);
            }
        });
        if stay > 0.0 {
            row.push((x.to_vec(), stay));
        }
        row
    }
}

/// Running DLMC/DLMCF chains: positions, f, ∇f and the flip laws per chain, plus scratch.
struct DlmcChains<'t> {
    target: &'t dyn Target,
    h: f64,
    mh: bool,
    n: usize,
    d: usize,
    x: Vec<u32>,
    f: Vec<f64>,
    grad: Vec<f64>,
    log_p: Vec<f64>,
    log_keep: Vec<f64>,
    y: Vec<u32>,
    n_prop: Vec<u32>,
    batch_x: Vec<u32>,
    batch_f: Vec<f64>,
    batch_g: Vec<f64>,
    y_log_p: Vec<f64>,
    y_log_keep: Vec<f64>,
}

impl Chains for DlmcChains<'_> {
    fn n_chains(&self) -> usize {
        self.n
    }

    fn positions(&self) -> &[u32] {
        &self.x
    }

    fn log_densities(&self) -> Option<&[f64]> {
        Some(&self.f)
    }

    /// Per chain: d uniforms (flip i iff u_i < p_i), then (DLMC, if something flipped) one
    /// uniform for the MH test. Proposals equal to x are not evaluated (A = 0, no draw).
    // Chain j indexes several flat buffers at once; an index loop is clearer than zips.
    #[allow(clippy::needless_range_loop)]
    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], _batch: Batch<'_>) -> Result<(), EvalError> {
        let d = self.d;
        let mut m = 0;
        for j in 0..self.n {
            let r = j * d..(j + 1) * d;
            let (x, y, lp) = (&self.x[r.clone()], &mut self.y[r.clone()], &self.log_p[r]);
            let mut k = 0;
            for i in 0..d {
                let u: f64 = rngs[j].random();
                let flip = u < lp[i].exp();
                y[i] = x[i] ^ flip as u32;
                k += flip as u32;
            }
            self.n_prop[j] = k;
            if k > 0 {
                self.batch_x[m * d..(m + 1) * d].copy_from_slice(y);
                m += 1;
            }
        }
        if m > 0 {
            self.target.evaluate(
                &self.batch_x[..m * d],
                Batch::Full,
                &mut self.batch_f[..m],
                Some(&mut self.batch_g[..m * d]),
            )?;
        }
        let mut b = 0;
        for j in 0..self.n {
            let k = self.n_prop[j];
            if k == 0 {
                info[j] = StepInfo::stayed();
                continue;
            }
            let r = j * d..(j + 1) * d;
            let y = &self.batch_x[b * d..(b + 1) * d];
            let g_y = &self.batch_g[b * d..(b + 1) * d];
            let f_y = self.batch_f[b];
            b += 1;
            flip_log_probs(self.h, y, g_y, &mut self.y_log_p, &mut self.y_log_keep);
            let (accepted, p_acc) = if self.mh {
                let x = &self.x[r.clone()];
                let fwd = log_prob(x, y, &self.log_p[r.clone()], &self.log_keep[r.clone()]);
                let rev = log_prob(y, x, &self.y_log_p, &self.y_log_keep);
                mh_accept(crate::dlp::log_accept_ratio(self.f[j], f_y, fwd, rev), &mut rngs[j])
            } else {
                (true, 1.0)
            };
            if accepted {
                self.x[r.clone()].copy_from_slice(y);
                self.f[j] = f_y;
                self.grad[r.clone()].copy_from_slice(g_y);
                self.log_p[r.clone()].copy_from_slice(&self.y_log_p);
                self.log_keep[r].copy_from_slice(&self.y_log_keep);
            }
            info[j] = StepInfo::evaluated(accepted, p_acc, k);
        }
        Ok(())
    }
}

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
        let rows = Dlmc::new(false, 0.5).unwrap().transition_row(&q, &[0, 1, 0], 0);
        assert!((rows.iter().map(|r| r.1).sum::<f64>() - 1.0).abs() < 1e-14);
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        empirical_check(&Dlmc::new(true, 0.5).unwrap(), &q, &[1, 0, 1], 20_000, 17);
        empirical_check(&Dlmc::new(false, 0.9).unwrap(), &q, &[0, 0, 1], 20_000, 18);
    }

    #[test]
    fn bad_parameters_and_categorical_targets_are_refused() {
        assert!(Dlmc::new(true, 0.0).is_err());
        assert!(Dlmc::new(false, f64::NAN).is_err());
        let e = Dlmc::new(true, 0.5).unwrap().start(&PairwiseCategorical::spec_small(), &[0, 0]).err().unwrap();
        assert!(matches!(e, SamplerError::Unsupported { .. }), "{e}");
    }
}
