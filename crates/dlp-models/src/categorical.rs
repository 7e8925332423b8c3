//! Factorised categorical model: ℓ(c) = Σ_i log π_i\[c_i\] (`gof.md` §2).
//!
//! Gradient with respect to the one-hot matrix of the linear extension Σ_{i,k} E_ik log π_i\[k\]:
//! G_i\[k\] = log π_i\[k\]. It is exact for every single-coordinate change.

use crate::error::{ModelError, check_finite};
use crate::potts::check_categorical_space;
use dlp_core::math::logsumexp;
use dlp_core::{RowTarget, Space};

/// Independent coordinates with per-coordinate class probabilities.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoricalModel {
    space: Space,
    log_probs: Vec<f64>,
}

impl CategoricalModel {
    /// From probabilities (row-major d × K): entries > 0, each row summing to 1 within 1e-9.
    pub fn from_probs(space: Space, probs: Vec<f64>) -> Result<Self, ModelError> {
        check_categorical_space(&space, "categorical")?;
        let (d, k) = (space.d, space.k());
        if probs.len() != d * k {
            return Err(ModelError::param(format!("probs must be d × K = {d} × {k}, found {} entries", probs.len())));
        }
        for (i, row) in probs.chunks_exact(k).enumerate() {
            for (j, &p) in row.iter().enumerate() {
                if !p.is_finite() {
                    return Err(ModelError::param(format!("probs[{i}][{j}] is not a finite number: {p}")));
                }
                if p <= 0.0 {
                    return Err(ModelError::param(format!("probs[{i}][{j}] = {p} must be > 0")));
                }
            }
            let s: f64 = row.iter().sum();
            if (s - 1.0).abs() > 1e-9 {
                return Err(ModelError::param(format!("probs[{i}] sums to {s}, not 1 (tolerance 1e-9)")));
            }
        }
        let log_probs = probs.iter().map(|p| p.ln()).collect();
        Ok(CategoricalModel { space, log_probs })
    }

    /// From finite logits (row-major d × K); each row is normalised by log-sum-exp.
    pub fn from_logits(space: Space, logits: Vec<f64>) -> Result<Self, ModelError> {
        check_categorical_space(&space, "categorical")?;
        let (d, k) = (space.d, space.k());
        if logits.len() != d * k {
            return Err(ModelError::param(format!("logits must be d × K = {d} × {k}, found {} entries", logits.len())));
        }
        check_finite("logits", &logits)?;
        let mut log_probs = logits;
        for row in log_probs.chunks_exact_mut(k) {
            let lse = logsumexp(row);
            for v in row.iter_mut() {
                *v -= lse;
            }
        }
        Ok(CategoricalModel { space, log_probs })
    }

    /// Number of coordinates.
    pub fn d(&self) -> usize {
        self.space.d
    }

    /// Number of classes.
    pub fn k(&self) -> usize {
        self.space.k()
    }

    /// log π, row-major d × K (rows normalised).
    pub fn log_probs(&self) -> &[f64] {
        &self.log_probs
    }

    fn f(&self, x: &[u32]) -> f64 {
        let k = self.k();
        x.iter().enumerate().map(|(i, &c)| self.log_probs[i * k + c as usize]).sum()
    }
}

impl RowTarget for CategoricalModel {
    fn row_space(&self) -> &Space {
        &self.space
    }

    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.f(x)
    }

    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        g.copy_from_slice(&self.log_probs);
        self.f(x)
    }

    fn row_capabilities(&self) -> dlp_core::Capabilities<'_> {
        dlp_core::Capabilities { conditionals: Some(self), ..dlp_core::Capabilities::default() }
    }
}

/// Independent coordinates: a conditional is one row of the table.
impl dlp_core::capability::Conditionals for CategoricalModel {
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), dlp_core::EvalError> {
        let k = self.k();
        let row = &self.log_probs[i * k..(i + 1) * k];
        let cur = row[x[i] as usize];
        for (o, &l) in out.iter_mut().zip(row) {
            *o = l - cur;
        }
        out[x[i] as usize] = 0.0;
        Ok(())
    }
}
