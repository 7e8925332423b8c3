//! The DLP proposal q_α(·|x) (spec §1.5, §4.2) and the DMALA acceptance ratio: the maths
//! that the generic chains ([`crate::dlp`]), the cyclical schedule ([`crate::acs`]) and the
//! specialised lattice and RBM kernels ([`crate::fast`]) share. A leaf: it imports no sampler.

use crate::proposal::inverse_cdf;
use dlp_core::math::{logsumexp, sigmoid, softplus};
use dlp_core::{ChainRng, Space};
use rand::RngExt;

/// Largest number of candidate states an exact transition row enumerates (K^d).
pub const MAX_EXACT_STATES: u64 = 1 << 20;

/// The DLP proposal q_α(·|x) of one configuration: step size α and optional diagonal
/// preconditioner h. All its functions work on one state; `step` and the exact kernel both
/// call them, so the exact suite checks the arithmetic the chains run.
///
/// Logit layout for one state (`logits`, length d·[`DlpProposal::logit_width`]):
/// binary/spin: one flip logit ℓ_i per coordinate (the "stay" logit is 0);
/// categorical/ordinal: K logits per coordinate, row-major, the current index having logit 0.
/// `lognorm` (length d) holds log Z_i(x); their sum is log Z_α(x) (spec §4.2).
#[derive(Clone, Debug, PartialEq)]
pub struct DlpProposal {
    alpha: f64,
    precond: Option<Vec<f64>>,
    /// Read the gradient at single precision (`dula-f32`, `dmala-f32`): see
    /// [`DlpProposal::single_precision_gradient`].
    f32_gradient: bool,
    /// Weight β of the gradient term (½ in the paper; the balancing parameter of cyclical
    /// DLP, [`crate::acs`]): see [`DlpProposal::with_balance`].
    balance: f64,
}

impl DlpProposal {
    /// Checks α (> 0, finite or +∞) and every h_i (finite, > 0); the message names the
    /// offending parameter and value.
    pub fn new(alpha: f64, precond: Option<Vec<f64>>) -> Result<Self, String> {
        if alpha.is_nan() || alpha <= 0.0 {
            return Err(format!("step_size (α) must be > 0 (finite, or +inf for the App. D ablation), got {alpha}"));
        }
        if let Some(h) = &precond
            && let Some((i, v)) = h.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v > 0.0))
        {
            return Err(format!("preconditioner[{i}] must be finite and > 0, got {v}"));
        }
        Ok(DlpProposal { alpha, precond, f32_gradient: false, balance: 0.5 })
    }

    /// The same proposal with the gradient term weighted by β instead of ½:
    /// q_i(v|x) ∝ exp(β g_i (v − x_i) − (v − x_i)²/(2αh_i)). β = ½ is the locally balanced DLP
    /// of the paper; Pynadath et al. (2024, §4) move β toward 1 for large α, where the
    /// proposal then approaches the target's own first-order conditional (the "balancing
    /// parameter" of cyclical DLP). Any β keeps DMALA exact (the MH test uses the same q both
    /// ways); β must lie in (0, 1].
    pub fn with_balance(mut self, beta: f64) -> Result<Self, String> {
        if !(beta > 0.0 && beta <= 1.0) {
            return Err(format!("balancing parameter β must be in (0, 1], got {beta}"));
        }
        self.balance = beta;
        Ok(self)
    }

    /// The weight β of the gradient term (½ unless [`DlpProposal::with_balance`] set it).
    pub fn balance(&self) -> f64 {
        self.balance
    }

    /// The same proposal computed from the gradient rounded to single precision,
    /// g̃_i = (g_i as f32) as f64 (`dula-f32`, `dmala-f32`). The proposal is then a
    /// deterministic function of the state as before, so DMALA's MH test (in f64, with
    /// q̃ both ways) still leaves π exactly invariant; DULA's biased law moves by O(1e−7)
    /// relative. Why it exists: it lets a model compute its gradient product in f32 (the RBM
    /// fast path does, three times faster here, as the PyTorch reference does).
    pub fn single_precision_gradient(mut self) -> Self {
        self.f32_gradient = true;
        self
    }

    /// True when the proposal reads the gradient at single precision.
    pub fn has_f32_gradient(&self) -> bool {
        self.f32_gradient
    }

    /// The gradient entry as the proposal reads it (rounded to f32 for the `-f32` variants).
    #[inline]
    pub fn gradient_entry(&self, g: f64) -> f64 {
        if self.f32_gradient { g as f32 as f64 } else { g }
    }

    /// The step size α ({0,1} units for binary and spin spaces).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The diagonal preconditioner h, if any.
    pub fn precond(&self) -> Option<&[f64]> {
        self.precond.as_deref()
    }

    /// Checks that the preconditioner (if any) has one entry per coordinate of `space`.
    pub fn check_space(&self, space: &Space) -> Result<(), String> {
        match &self.precond {
            Some(h) if h.len() != space.d => {
                Err(format!("preconditioner has {} entries but the model has d = {} coordinates", h.len(), space.d))
            }
            _ => Ok(()),
        }
    }

    /// Logits per coordinate: 1 (flip logit) for binary/spin, K otherwise.
    pub fn logit_width(space: &Space) -> usize {
        if space.is_binary_like() { 1 } else { space.k() }
    }

    /// 1/(2 α h_i): the distance penalty per unit squared move in coordinate i (0 for α = ∞).
    #[inline]
    pub fn half_inv_step(&self, i: usize) -> f64 {
        match &self.precond {
            None => 0.5 / self.alpha,
            Some(h) => 0.5 / (self.alpha * h[i]),
        }
    }

    /// Forward logits at `x` from the gradient `grad` (length `space.grad_len()`), into
    /// `logits` (d·width) and `lognorm` (d, log Z_i(x)); returns log Z_α(x) = Σ_i log Z_i(x).
    pub fn logits(&self, space: &Space, x: &[u32], grad: &[f64], logits: &mut [f64], lognorm: &mut [f64]) -> f64 {
        let d = space.d;
        let mut log_z = 0.0;
        if space.is_binary_like() {
            for i in 0..d {
                // (1 − 2x_i) is the signed change of a flip; ½ g_i times it is half the
                // first-order change of f (the paper's ½ = β, applied once: pitfall P2).
                let r = 1.0 - 2.0 * x[i] as f64;
                let l = self.balance * self.gradient_entry(grad[i]) * r - self.half_inv_step(i);
                logits[i] = l;
                let z = softplus(l);
                lognorm[i] = z;
                log_z += z;
            }
            return log_z;
        }
        let k = space.k();
        let categorical = space.kind == dlp_core::DomainKind::Categorical;
        for i in 0..d {
            let c = x[i] as usize;
            let pen = self.half_inv_step(i);
            let row = &mut logits[i * k..(i + 1) * k];
            if categorical {
                // One-hot: ½ Gᵀ(e_v − e_c) and ‖e_v − e_c‖²/(2αh) = 1/(αh) for v ≠ c.
                let gc = self.gradient_entry(grad[i * k + c]);
                for (v, l) in row.iter_mut().enumerate() {
                    *l = if v == c {
                        0.0
                    } else {
                        self.balance * (self.gradient_entry(grad[i * k + v]) - gc) - 2.0 * pen
                    };
                }
            } else {
                let xc = space.coordinate(c as u32);
                for (v, l) in row.iter_mut().enumerate() {
                    let dv = space.coordinate(v as u32) - xc;
                    *l = if v == c { 0.0 } else { self.balance * self.gradient_entry(grad[i]) * dv - dv * dv * pen };
                }
            }
            let z = logsumexp(row);
            lognorm[i] = z;
            log_z += z;
        }
        log_z
    }

    /// log q(y|x) from the logits at `x` (as written by [`DlpProposal::logits`]) and
    /// `log_z` = log Z_α(x): Σ_i logit_i(y_i) − log Z_α(x). For binary spaces the move is
    /// the flip set {i : y_i ≠ x_i}, so the reverse probability of DMALA is
    /// `log_prob(space, y, x, logits_at_y, log_z_at_y)` (pitfall P4).
    #[inline]
    pub fn log_prob(&self, space: &Space, x: &[u32], y: &[u32], logits: &[f64], log_z: f64) -> f64 {
        let mut s = 0.0;
        if space.is_binary_like() {
            for i in 0..space.d {
                if x[i] != y[i] {
                    s += logits[i];
                }
            }
        } else {
            let k = space.k();
            for (i, &v) in y.iter().enumerate() {
                s += logits[i * k + v as usize];
            }
        }
        s - log_z
    }

    /// Draws y ~ q(·|x) into `y` using one uniform per coordinate from `rng` (binary: flip
    /// iff u_i < σ(ℓ_i); otherwise inverse CDF of softmax(logits_i)); returns the number
    /// of coordinates that changed.
    #[inline]
    pub fn draw(
        &self,
        space: &Space,
        x: &[u32],
        logits: &[f64],
        lognorm: &[f64],
        rng: &mut ChainRng,
        y: &mut [u32],
    ) -> u32 {
        let mut changed = 0;
        if space.is_binary_like() {
            for i in 0..space.d {
                let u: f64 = rng.random();
                let flip = u < sigmoid(logits[i]);
                y[i] = x[i] ^ flip as u32;
                changed += flip as u32;
            }
            return changed;
        }
        let k = space.k();
        for i in 0..space.d {
            let row = &logits[i * k..(i + 1) * k];
            let lse = lognorm[i];
            // The row is normalised by log Z_i, so the scan starts from U itself.
            let u: f64 = rng.random();
            let weights = row.iter().map(|&l| (l - lse).exp());
            // Rounding left u ≥ 0 after the whole row: take the last value with positive mass
            // (the current one if none has: a NaN row stays).
            let v = inverse_cdf(weights.clone(), u)
                .unwrap_or_else(|| weights.clone().rposition(|w| w > 0.0).unwrap_or(x[i] as usize));
            y[i] = v as u32;
            changed += (y[i] != x[i]) as u32;
        }
        changed
    }
}

/// The DMALA log acceptance ratio A = f(y) − f(x) + log q(x|y) − log q(y|x) (spec §1.8).
/// A NaN (non-finite f(y)) makes [`mh_accept`] reject.
#[inline]
pub fn log_accept_ratio(f_x: f64, f_y: f64, log_q_fwd: f64, log_q_rev: f64) -> f64 {
    (f_y - f_x) + (log_q_rev - log_q_fwd)
}

/// Calls `visit(y)` for every state of `space` (first coordinate most significant), reusing
/// one buffer; panics if there are more than [`MAX_EXACT_STATES`] (an exact row is only
/// meant for small spaces).
pub(crate) fn for_each_state(space: &Space, mut visit: impl FnMut(&[u32])) {
    let n = space.n_states().filter(|&n| n <= MAX_EXACT_STATES).unwrap_or_else(|| {
        panic!("exact DLP rows enumerate K^d candidates; K = {}, d = {} is too large", space.k(), space.d)
    });
    let mut y = vec![0u32; space.d];
    for s in 0..n {
        space.state_of_index(s, &mut y);
        visit(&y);
    }
}
