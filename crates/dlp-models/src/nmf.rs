//! Bayesian Poisson non-negative matrix factorisation (paper 001 §6.1, App. C; spec
//! `transforms-and-svgd.md` §4): X_ij ~ Poisson((WH)_ij) on the observed entries only,
//! W_ir ~ Exp(λ_W), H_rj ~ Exp(λ_H). A [`ContinuousTarget`] on (0, ∞)^(IR + JR), so any sampler
//! of `dlp_samplers::bounded` (CoRV with exp / softplus / ICLL, mirror SGLD, SGRLD) runs on it,
//! with minibatches of observed entries drawn by the runner.
//!
//! State layout: one row = W (I × R, row-major) then Hᵀ (J × R, row-major), so that both
//! factors of an entry (i, j) are contiguous R-vectors. Log density, with X̂_k = ⟨W_i, H_j⟩ and
//! the minibatch scale c = N/B (1 on full data): f = c·Σ_k (x_k log X̂_k − X̂_k) − λ_W ΣW − λ_H ΣH
//! (the Poisson normaliser log x! is dropped, so half-integer ratings are allowed: a KL-NMF);
//! ∇_{W_i} f = c·Σ_{k: i_k = i} H_{j_k}(x_k/X̂_k − 1) − λ_W, symmetrically for H.

use dlp_core::{Batch, BoxSpace, ContinuousTarget, EvalError};
use rand::RngExt;
use rand_distr::{Distribution, Exp, Poisson};

/// Observed entries and the prior of a Poisson NMF.
#[derive(Clone, Debug)]
pub struct PoissonNmf {
    /// Rows I (users).
    pub rows: usize,
    /// Columns J (items).
    pub cols: usize,
    /// Rank R.
    pub rank: usize,
    /// Row index of each observed entry.
    pub row_of: Vec<u32>,
    /// Column index of each observed entry.
    pub col_of: Vec<u32>,
    /// Value of each observed entry (≥ 0).
    pub value: Vec<f64>,
    /// Prior rate λ_W.
    pub lambda_w: f64,
    /// Prior rate λ_H.
    pub lambda_h: f64,
    space: BoxSpace,
}

impl PoissonNmf {
    /// The model of the entries (row, col, value) of an I × J matrix at rank R with prior rates
    /// λ_W, λ_H; an error line naming the first bad entry or parameter.
    pub fn new(
        rows: usize,
        cols: usize,
        rank: usize,
        entries: &[(u32, u32, f64)],
        lambda_w: f64,
        lambda_h: f64,
    ) -> Result<Self, String> {
        if rows == 0 || cols == 0 || rank == 0 {
            return Err(format!("NMF needs rows, cols and rank ≥ 1, got {rows}, {cols}, {rank}"));
        }
        if !(lambda_w > 0.0 && lambda_h > 0.0 && lambda_w.is_finite() && lambda_h.is_finite()) {
            return Err(format!("prior rates must be finite and > 0, got λ_W = {lambda_w}, λ_H = {lambda_h}"));
        }
        if entries.is_empty() {
            return Err("NMF needs at least one observed entry".into());
        }
        for (k, &(i, j, x)) in entries.iter().enumerate() {
            if i as usize >= rows || j as usize >= cols || !(x >= 0.0 && x.is_finite()) {
                return Err(format!("entry {k}: ({i}, {j}, {x}) is outside {rows} × {cols} or not a finite value ≥ 0"));
            }
        }
        let d = (rows + cols) * rank;
        Ok(PoissonNmf {
            rows,
            cols,
            rank,
            row_of: entries.iter().map(|e| e.0).collect(),
            col_of: entries.iter().map(|e| e.1).collect(),
            value: entries.iter().map(|e| e.2).collect(),
            lambda_w,
            lambda_h,
            space: BoxSpace::uniform(d, 0.0, f64::INFINITY).expect("0 < ∞"),
        })
    }

    /// A synthetic data set (stand-in for tests and benchmarks): W_ir, H_rj ~ Exp(rate) with
    /// rate = √(R/m) (so X̂ has mean ≈ m), `n_obs` entries drawn uniformly with replacement from
    /// the I × J grid, x ~ Poisson(X̂). Returns the model (prior rates 1) and the true (W, Hᵀ) row.
    pub fn synthetic(
        rows: usize,
        cols: usize,
        rank: usize,
        n_obs: usize,
        mean: f64,
        rng: &mut impl rand::Rng,
    ) -> Result<(Self, Vec<f64>), String> {
        let rate = (rank as f64 / mean).sqrt();
        let exp = Exp::new(rate).map_err(|e| e.to_string())?;
        let truth: Vec<f64> = (0..(rows + cols) * rank).map(|_| exp.sample(rng)).collect();
        let entries: Vec<(u32, u32, f64)> = (0..n_obs)
            .map(|_| {
                let (i, j) = (rng.random_range(0..rows), rng.random_range(0..cols));
                let xhat = dot(&truth[i * rank..(i + 1) * rank], &truth[(rows + j) * rank..(rows + j + 1) * rank]);
                let x = if xhat > 0.0 { Poisson::new(xhat).map(|p| p.sample(rng)).unwrap_or(0.0) } else { 0.0 };
                (i as u32, j as u32, x)
            })
            .collect();
        Ok((PoissonNmf::new(rows, cols, rank, &entries, 1.0, 1.0)?, truth))
    }

    /// Number of coordinates (I + J)·R.
    pub fn dim(&self) -> usize {
        self.space.d
    }

    /// X̂ = ⟨W_i, H_j⟩ of a state row.
    #[inline]
    pub fn predict(&self, x: &[f64], i: usize, j: usize) -> f64 {
        let r = self.rank;
        dot(&x[i * r..(i + 1) * r], &x[(self.rows + j) * r..(self.rows + j + 1) * r])
    }
}

#[inline]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl ContinuousTarget for PoissonNmf {
    fn space(&self) -> &BoxSpace {
        &self.space
    }

    fn n_data(&self) -> Option<usize> {
        Some(self.value.len())
    }

    fn evaluate(
        &self,
        xs: &[f64],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        let (d, r, n) = (self.space.d, self.rank, self.value.len());
        let items: Box<dyn Iterator<Item = usize>> = match batch {
            Batch::Full => Box::new(0..n),
            Batch::Items(b) => {
                if let Some(&bad) = b.iter().find(|&&k| k >= n) {
                    return Err(EvalError::BadItem { index: bad, n_data: n });
                }
                Box::new(b.iter().copied())
            }
        };
        let items: Vec<usize> = items.collect();
        let scale = n as f64 / items.len() as f64;
        let wlen = self.rows * r;
        let mut grad = grad;
        for (c, x) in xs.chunks(d).enumerate() {
            let prior = self.lambda_w * x[..wlen].iter().sum::<f64>() + self.lambda_h * x[wlen..].iter().sum::<f64>();
            let mut f = -prior;
            let mut g = grad.as_deref_mut().map(|g| &mut g[c * d..(c + 1) * d]);
            if let Some(g) = g.as_deref_mut() {
                g[..wlen].fill(-self.lambda_w);
                g[wlen..].fill(-self.lambda_h);
            }
            for &k in &items {
                let (i, j) = (self.row_of[k] as usize, self.col_of[k] as usize);
                let (wi, hj) = (i * r, (self.rows + j) * r);
                let xhat = dot(&x[wi..wi + r], &x[hj..hj + r]);
                let v = self.value[k];
                f += scale * (if v > 0.0 { v * xhat.ln() } else { 0.0 } - xhat);
                if let Some(g) = g.as_deref_mut() {
                    let coef = scale * (v / xhat - 1.0);
                    for q in 0..r {
                        let (w, h) = (x[wi + q], x[hj + q]);
                        g[wi + q] += coef * h;
                        g[hj + q] += coef * w;
                    }
                }
            }
            log_density[c] = f;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::setup_rng;

    /// ∇f against central differences of f at every coordinate of a small model, on full data
    /// and on a minibatch (relative 1e−6: f is smooth and the step 1e−6·θ).
    #[test]
    fn gradient_matches_central_differences() {
        let mut rng = setup_rng(3);
        let (m, truth) = PoissonNmf::synthetic(4, 5, 2, 12, 3.0, &mut rng).unwrap();
        let x: Vec<f64> = truth.iter().map(|v| v + 0.2).collect();
        for batch in [Batch::Full, Batch::Items(&[0, 3, 3, 7])] {
            let (mut f, mut g) = ([0.0], vec![0.0; m.dim()]);
            m.evaluate(&x, batch, &mut f, Some(&mut g)).unwrap();
            for p in 0..m.dim() {
                let h = 1e-6 * x[p];
                let (mut y, mut fp, mut fm) = (x.clone(), [0.0], [0.0]);
                y[p] = x[p] + h;
                m.evaluate(&y, batch, &mut fp, None).unwrap();
                y[p] = x[p] - h;
                m.evaluate(&y, batch, &mut fm, None).unwrap();
                let num = (fp[0] - fm[0]) / (2.0 * h);
                assert!((num - g[p]).abs() <= 1e-6 * g[p].abs().max(1.0), "coordinate {p}: {} vs {num}", g[p]);
            }
        }
    }

    /// The minibatch estimate is unbiased: the average of f̂ over the N single-item batches is f.
    #[test]
    fn minibatch_estimate_averages_to_the_full_log_density() {
        let mut rng = setup_rng(4);
        let (m, truth) = PoissonNmf::synthetic(3, 4, 2, 9, 2.0, &mut rng).unwrap();
        let (mut full, mut one) = ([0.0], [0.0]);
        m.evaluate(&truth, Batch::Full, &mut full, None).unwrap();
        let mut avg = 0.0;
        for k in 0..9 {
            m.evaluate(&truth, Batch::Items(&[k]), &mut one, None).unwrap();
            avg += one[0] / 9.0;
        }
        assert!((avg - full[0]).abs() < 1e-10 * full[0].abs(), "{avg} vs {}", full[0]);
    }

    #[test]
    fn bad_entries_and_items_are_refused() {
        assert!(PoissonNmf::new(2, 2, 1, &[(2, 0, 1.0)], 1.0, 1.0).unwrap_err().contains("entry 0"));
        assert!(PoissonNmf::new(2, 2, 1, &[(0, 0, -1.0)], 1.0, 1.0).is_err());
        assert!(PoissonNmf::new(2, 2, 1, &[(0, 0, 1.0)], 0.0, 1.0).is_err());
        let m = PoissonNmf::new(2, 2, 1, &[(0, 0, 1.0)], 1.0, 1.0).unwrap();
        let mut f = [0.0];
        assert!(m.evaluate(&[1.0; 4], Batch::Items(&[1]), &mut f, None).is_err());
    }
}
