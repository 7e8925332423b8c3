//! Restricted Boltzmann machine, visible units marginalised over hidden units in {0,1}:
//! ℓ(x) = Σ_i b_i u_i + Σ_k softplus(c_k + Σ_i W_ik u_i) (`gof.md` §2; paper §3.3), with
//! u the visible value (0/1 for binary, ±1 for spin) and W stored d × M row-major.
//!
//! Gradient with respect to the bit: ∂ℓ/∂x_i = s (b_i + Σ_k W_ik σ(a_k)), a = c + Wᵀu, s = du/dx
//! (1 for binary, 2 for spin). The arithmetic lives on [`RbmView`] (dlp-core), which the model
//! also declares as its capability, so the samplers' RBM paths run the very same code; batches
//! use matrix products whose rows do not interact.

use crate::error::{ModelError, bit_space, check_finite};
use dlp_core::capability::{Conditionals, RbmView};
use dlp_core::math::sigmoid;
use dlp_core::{Batch, Capabilities, DomainKind, EvalError, Space, Target};
use rand::{Rng, RngExt};

/// Bernoulli RBM (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct Rbm {
    space: Space,
    m: usize,
    w: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Rbm {
    /// Builds an RBM with visible `domain` (binary or spin), W (d × M row-major), b (d), c (M).
    pub fn new(
        domain: DomainKind,
        d: usize,
        m: usize,
        w: Vec<f64>,
        b: Vec<f64>,
        c: Vec<f64>,
    ) -> Result<Self, ModelError> {
        let space = bit_space(domain, d, "rbm")?;
        if d == 0 {
            return Err(ModelError::param("d must be at least 1"));
        }
        if m == 0 {
            return Err(ModelError::param("W must have at least one column (M >= 1)"));
        }
        if w.len() != d * m {
            return Err(ModelError::param(format!("W must be d × M = {d} × {m}, found {} entries", w.len())));
        }
        if b.len() != d {
            return Err(ModelError::param(format!("b has length {} but d = {d}", b.len())));
        }
        if c.len() != m {
            return Err(ModelError::param(format!("c has length {} but W has M = {m} columns", c.len())));
        }
        check_finite("W", &w)?;
        check_finite("b", &b)?;
        check_finite("c", &c)?;
        Ok(Rbm { space, m, w, b, c })
    }

    /// Number of visible units.
    pub fn d(&self) -> usize {
        self.space.d
    }

    /// Number of hidden units M.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Weights W, row-major d × M (`w()[i * m + k]` = W_ik).
    pub fn w(&self) -> &[f64] {
        &self.w
    }

    /// Visible biases b (length d).
    pub fn b(&self) -> &[f64] {
        &self.b
    }

    /// Hidden biases c (length M).
    pub fn c(&self) -> &[f64] {
        &self.c
    }

    /// True when the visible units are spins.
    pub fn is_spin(&self) -> bool {
        self.space.kind == DomainKind::Spin
    }

    /// du/dx: 2 for spin, 1 for binary.
    pub fn value_scale(&self) -> f64 {
        self.view().value_scale()
    }

    /// The model as the RBM capability: its parameters, borrowed. Every computation of this
    /// type is a method of the view, shared with the samplers' RBM paths.
    pub fn view(&self) -> RbmView<'_> {
        RbmView { spin: self.is_spin(), d: self.space.d, m: self.m, w: &self.w, b: &self.b, c: &self.c }
    }

    /// a_k = c_k + Σ_i W_ik u_i for the visible bits `x_bits` (length d), into `out` (length M).
    /// P(h_k = 1 | x) = σ(a_k).
    pub fn hidden_preactivation(&self, x_bits: &[u32], out: &mut [f64]) {
        self.view().hidden_preactivation(x_bits, out)
    }

    /// Logit of P(bit_i = 1 | h) for every visible unit, into `out` (length d):
    /// s·(b_i + Σ_k W_ik h_k) with s = 1 for binary and 2 for spin (P(s_i = +1 | h) = σ(2 a_i)).
    pub fn visible_logits(&self, h: &[u32], out: &mut [f64]) {
        self.view().visible_logits(h, out)
    }

    /// Draws h ~ p(h | x) (one uniform per hidden unit, in order k = 0..M) into `h` (length M).
    pub fn sample_hidden<R: Rng + ?Sized>(&self, x_bits: &[u32], rng: &mut R, h: &mut [u32]) {
        let mut a = vec![0.0; self.m];
        self.hidden_preactivation(x_bits, &mut a);
        for (hk, &ak) in h.iter_mut().zip(&a) {
            *hk = u32::from(rng.random::<f64>() < sigmoid(ak));
        }
    }

    /// Draws visible bits x ~ p(x | h) (one uniform per visible unit, in order) into `x`.
    pub fn sample_visible<R: Rng + ?Sized>(&self, h: &[u32], rng: &mut R, x: &mut [u32]) {
        let mut l = vec![0.0; self.d()];
        self.visible_logits(h, &mut l);
        for (xi, &li) in x.iter_mut().zip(&l) {
            *xi = u32::from(rng.random::<f64>() < sigmoid(li));
        }
    }
}

impl Target for Rbm {
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
        match grad {
            None => self.view().log_densities(xs, log_density),
            Some(g) => self.view().log_densities_and_grads(xs, log_density, g),
        }
        Ok(())
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities { rbm: Some(self.view()), conditionals: Some(self), ..Capabilities::default() }
    }
}

/// Flips from the hidden pre-activations: O(d·M) once, then O(M) per flip.
impl Conditionals for Rbm {
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError> {
        // O(d·M) for the pre-activations, then O(M): only the i-th row of W moves them.
        let v = self.view();
        let mut a = vec![0.0; self.m];
        v.hidden_preactivation(x, &mut a);
        out[x[i] as usize] = 0.0;
        out[1 - x[i] as usize] = v.flip_delta(&a, x, i);
        Ok(())
    }

    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
        let v = self.view();
        let mut a = vec![0.0; self.m];
        v.hidden_preactivation(x, &mut a);
        for (i, o) in out.iter_mut().enumerate() {
            *o = v.flip_delta(&a, x, i);
        }
        Ok(())
    }
}
