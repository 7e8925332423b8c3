//! Full joint table: ℓ(c) = log_prob[Σ_i c_i K^{d−1−i}] (first coordinate most significant).
//!
//! A table defines ℓ only on the lattice, so the gradient needs a choice of continuous
//! extension (spec P9: DULA's limit law depends on it). We use the multilinear extension in the
//! one-hot encoding, f(E) = Σ_y ℓ(y) Π_i E_{i,y_i}, whose partial derivatives at a lattice point
//! are ∂f/∂E_ik = ℓ(x with x_i = k). For binary and spin models the same extension in the bit
//! x_i gives ∂f/∂x_i = ℓ(x_i = 1) − ℓ(x_i = 0). Either way g predicts single-coordinate changes
//! exactly, as for the Ising and Potts models.

use crate::error::ModelError;
use crate::potts::check_space_values;
use dlp_core::{DomainKind, RowTarget, Space};

/// Largest table accepted (`gof.md` §10.3): K^d ≤ 2^24.
pub const MAX_TABLE_SIZE: u64 = 1 << 24;

/// A model given by its full table of unnormalised log-probabilities.
#[derive(Clone, Debug, PartialEq)]
pub struct TableModel {
    space: Space,
    log_prob: Vec<f64>,
}

impl TableModel {
    /// Builds the table model on a binary, spin or categorical `space`; `log_prob` has K^d
    /// finite entries and K^d ≤ 2^24.
    pub fn new(space: Space, log_prob: Vec<f64>) -> Result<Self, ModelError> {
        if space.kind == DomainKind::Ordinal {
            return Err(ModelError::param(
                "domain Ordinal is not supported by the table model (use spin, binary or categorical)",
            ));
        }
        check_space_values(&space)?;
        let size = Self::check_size(&space)?;
        if log_prob.len() as u64 != size {
            return Err(ModelError::param(format!(
                "log_prob has length {} but K^d = {}^{} = {size}",
                log_prob.len(),
                space.k(),
                space.d
            )));
        }
        crate::error::check_finite("log_prob", &log_prob)?;
        Ok(TableModel { space, log_prob })
    }

    /// K^d if it is at most 2^24, else the §10.3 error.
    pub fn check_size(space: &Space) -> Result<u64, ModelError> {
        space.n_states().filter(|&n| n <= MAX_TABLE_SIZE).ok_or_else(|| {
            ModelError::param(format!(
                "table has K^d = {}^{} entries, more than 2^24 = {MAX_TABLE_SIZE}",
                space.k(),
                space.d
            ))
        })
    }

    /// The table, indexed by [`Space::index_of_state`].
    pub fn log_prob(&self) -> &[f64] {
        &self.log_prob
    }

    fn index(&self, x: &[u32]) -> usize {
        self.space.index_of_state(x) as usize
    }
}

impl RowTarget for TableModel {
    fn row_space(&self) -> &Space {
        &self.space
    }

    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.log_prob[self.index(x)]
    }

    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        let d = self.space.d;
        let k = self.space.k();
        let binary = self.space.is_binary_like();
        let idx = self.index(x);
        let mut stride = 1usize;
        for i in (0..d).rev() {
            let base = idx - x[i] as usize * stride;
            if binary {
                g[i] = self.log_prob[base + stride] - self.log_prob[base];
            } else {
                for (v, gv) in g[i * k..(i + 1) * k].iter_mut().enumerate() {
                    *gv = self.log_prob[base + v * stride];
                }
            }
            stride *= k;
        }
        self.log_prob[idx]
    }

    fn row_capabilities(&self) -> dlp_core::Capabilities<'_> {
        dlp_core::Capabilities { conditionals: Some(self), ..dlp_core::Capabilities::default() }
    }
}

/// A conditional is K entries of the table, one stride apart.
impl dlp_core::capability::Conditionals for TableModel {
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), dlp_core::EvalError> {
        let d = self.space.d;
        let k = self.space.k();
        let stride = k.pow((d - 1 - i) as u32);
        let idx = self.index(x);
        let base = idx - x[i] as usize * stride;
        let cur = self.log_prob[idx];
        for (v, o) in out.iter_mut().enumerate() {
            *o = self.log_prob[base + v * stride] - cur;
        }
        out[x[i] as usize] = 0.0;
        Ok(())
    }
}
