//! Potts model: ℓ(c) = Σ_i h_i\[c_i\] + Σ_{i<j} J_ij [c_i = c_j] (`gof.md` §2).
//!
//! The gradient is with respect to the d × K one-hot matrix E of the natural extension
//! ℓ(E) = Σ_{i,k} h_ik E_ik + Σ_{i<j} J_ij Σ_k E_ik E_jk, i.e. G_i\[k\] = h_i\[k\] + Σ_j J_ij [c_j = k].
//! That extension is multilinear across coordinates, so moving coordinate i from a to b changes ℓ
//! by exactly G_i\[b\] − G_i\[a\].

use crate::couplings::Couplings;
use crate::error::{ModelError, check_finite};
use dlp_core::{DomainKind, RowTarget, Space};

/// Potts model with sparse couplings (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct PottsModel {
    space: Space,
    couplings: Couplings,
    h: Vec<f64>,
}

impl PottsModel {
    /// Builds the model on a categorical `space` with fields `h` (row-major d × K).
    pub fn new(space: Space, couplings: Couplings, h: Vec<f64>) -> Result<Self, ModelError> {
        check_categorical_space(&space, "potts")?;
        if couplings.d() != space.d {
            return Err(ModelError::param(format!("couplings are on {} sites but d = {}", couplings.d(), space.d)));
        }
        if h.len() != space.d * space.k() {
            return Err(ModelError::param(format!(
                "h must be d × K = {} × {}, found {} entries",
                space.d,
                space.k(),
                h.len()
            )));
        }
        check_finite("h", &h)?;
        Ok(PottsModel { space, couplings, h })
    }

    /// Number of coordinates.
    pub fn d(&self) -> usize {
        self.space.d
    }

    /// Number of classes.
    pub fn k(&self) -> usize {
        self.space.k()
    }

    /// Fields h, row-major d × K.
    pub fn h(&self) -> &[f64] {
        &self.h
    }

    /// The couplings.
    pub fn couplings(&self) -> &Couplings {
        &self.couplings
    }

    /// G_i\[k\] = h_i\[k\] + Σ_j J_ij [c_j = k] for every k, into `out` (length K); O(degree + K).
    #[inline]
    pub fn local_scores(&self, x: &[u32], i: usize, out: &mut [f64]) {
        let k = self.k();
        out.copy_from_slice(&self.h[i * k..(i + 1) * k]);
        let (ns, ws) = self.couplings.neighbours_of(i);
        for (&j, &w) in ns.iter().zip(ws) {
            out[x[j as usize] as usize] += w;
        }
    }

    fn f(&self, x: &[u32]) -> f64 {
        let k = self.k();
        let mut total = 0.0;
        for i in 0..self.d() {
            let (ns, ws) = self.couplings.neighbours_of(i);
            let mut pair = 0.0;
            for (&j, &w) in ns.iter().zip(ws) {
                if j as usize > i && x[j as usize] == x[i] {
                    pair += w;
                }
            }
            total += self.h[i * k + x[i] as usize] + pair;
        }
        total
    }
}

/// Checks that `space` is categorical with K ≥ 2 distinct values and d ≥ 1.
pub(crate) fn check_categorical_space(space: &Space, kind: &str) -> Result<(), ModelError> {
    if space.kind != DomainKind::Categorical {
        return Err(ModelError::param(format!(
            "domain {:?} is not supported by the {kind} model (use categorical)",
            space.kind
        )));
    }
    check_space_values(space)
}

/// d ≥ 1, K ≥ 2, distinct values.
pub(crate) fn check_space_values(space: &Space) -> Result<(), ModelError> {
    if space.d == 0 {
        return Err(ModelError::param("d must be at least 1"));
    }
    if space.k() < 2 {
        return Err(ModelError::param(format!("K must be at least 2, found {}", space.k())));
    }
    // A map of first positions, not a scan of the earlier values: K may be large (a file's
    // `K` up to 2^24), and a scan of the earlier values is quadratic in K.
    let mut first = std::collections::HashMap::with_capacity(space.values.len());
    for (a, &va) in space.values.iter().enumerate() {
        if let Some(b) = first.insert(va, a) {
            return Err(ModelError::param(format!("values[{a}] = {va} repeats values[{b}]")));
        }
    }
    Ok(())
}

impl RowTarget for PottsModel {
    fn row_space(&self) -> &Space {
        &self.space
    }

    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.f(x)
    }

    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        let k = self.k();
        for (i, gi) in g.chunks_exact_mut(k).enumerate() {
            self.local_scores(x, i, gi);
        }
        self.f(x)
    }

    fn row_capabilities(&self) -> dlp_core::Capabilities<'_> {
        let c = &self.couplings;
        let view = dlp_core::capability::PottsView {
            k: self.k(),
            offsets: c.offsets(),
            neighbours: c.neighbours(),
            weights: c.weights(),
            fields: &self.h,
        };
        dlp_core::Capabilities { potts: Some(view), conditionals: Some(self), ..dlp_core::Capabilities::default() }
    }
}

/// A site's conditional is its local scores: O(degree · K).
impl dlp_core::capability::Conditionals for PottsModel {
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), dlp_core::EvalError> {
        self.local_scores(x, i, out);
        let cur = out[x[i] as usize];
        for o in out.iter_mut() {
            *o -= cur;
        }
        out[x[i] as usize] = 0.0;
        Ok(())
    }
}
