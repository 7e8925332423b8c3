//! The n × n matrix H of a quadratic-time statistic, built once and reused by every bootstrap
//! replicate (spec §4: a replicate is a quadratic form, O(n²)).

use rayon::prelude::*;

/// A symmetric n × n matrix stored as its off-diagonal part H⁰ (diagonal set to zero) and its
/// diagonal, since the bootstraps of spec §4 act on H⁰ and U excludes the diagonal.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelMatrix {
    n: usize,
    off: Vec<f64>,
    diag: Vec<f64>,
}

/// Replicates processed together by [`KernelMatrix::quadratic_forms`]: one pass over H serves
/// this many weight vectors (H is streamed from memory B / BLOCK times instead of B times).
pub const BLOCK: usize = 8;

impl KernelMatrix {
    /// Builds H from `entry(a, b)` for a ≤ b (rows in parallel) and mirrors it, so H is exactly
    /// symmetric. `entry` must not depend on evaluation order.
    pub fn from_upper<F>(n: usize, entry: F) -> Self
    where
        F: Fn(usize, usize) -> f64 + Sync,
    {
        let mut off = vec![0.0; n * n];
        off.par_chunks_mut(n.max(1)).enumerate().for_each(|(a, row)| {
            for (b, h) in row.iter_mut().enumerate().skip(a) {
                *h = entry(a, b);
            }
        });
        let mut diag = vec![0.0; n];
        for a in 0..n {
            diag[a] = off[a * n + a];
            off[a * n + a] = 0.0;
            for b in 0..a {
                off[a * n + b] = off[b * n + a];
            }
        }
        KernelMatrix { n, off, diag }
    }

    /// Builds H from a full row-major n × n matrix (symmetry is the caller's business).
    pub fn from_dense(n: usize, mut full: Vec<f64>) -> Self {
        assert_eq!(full.len(), n * n, "matrix is not n × n");
        let diag = (0..n).map(|a| std::mem::replace(&mut full[a * n + a], 0.0)).collect();
        KernelMatrix { n, off: full, diag }
    }

    /// n.
    pub fn n(&self) -> usize {
        self.n
    }

    /// H_ab (diagonal included).
    pub fn get(&self, a: usize, b: usize) -> f64 {
        if a == b { self.diag[a] } else { self.off[a * self.n + b] }
    }

    /// The diagonal H_aa.
    pub fn diag(&self) -> &[f64] {
        &self.diag
    }

    /// Row `a` of H⁰ (zero on the diagonal).
    pub fn off_row(&self, a: usize) -> &[f64] {
        &self.off[a * self.n..(a + 1) * self.n]
    }

    /// Σ_{a≠b} H_ab, summed row by row in a fixed order.
    pub fn off_sum(&self) -> f64 {
        let rows: Vec<f64> = (0..self.n).into_par_iter().map(|a| self.off_row(a).iter().sum::<f64>()).collect();
        rows.iter().sum()
    }

    /// Σ_a H_aa.
    pub fn trace(&self) -> f64 {
        self.diag.iter().sum()
    }

    /// U = Σ_{a≠b} H_ab / (n(n−1)) (spec §3.4); NaN for n < 2.
    pub fn u_statistic(&self) -> f64 {
        let n = self.n as f64;
        self.off_sum() / (n * (n - 1.0))
    }

    /// V = Σ_{a,b} H_ab / n² (spec §3.4).
    pub fn v_statistic(&self) -> f64 {
        let n = self.n as f64;
        (self.off_sum() + self.trace()) / (n * n)
    }

    /// True when every entry is finite.
    pub fn is_finite(&self) -> bool {
        self.off.iter().chain(&self.diag).all(|h| h.is_finite())
    }

    /// First row holding a non-finite entry.
    pub fn first_non_finite_row(&self) -> Option<usize> {
        (0..self.n).find(|&a| !self.diag[a].is_finite() || self.off_row(a).iter().any(|h| !h.is_finite()))
    }

    /// wᵀH⁰w for up to [`BLOCK`] weight vectors at once. `w` holds the vectors interleaved:
    /// entry a of vector r at `w[a * BLOCK + r]` (unused lanes zero). Each result is
    /// Σ_a w_a (Σ_b H⁰_ab w_b) accumulated in a fixed order, so it does not depend on which
    /// other vectors share the block.
    pub fn quadratic_forms(&self, w: &[f64]) -> [f64; BLOCK] {
        let n = self.n;
        assert_eq!(w.len(), n * BLOCK);
        let mut total = [0.0; BLOCK];
        for a in 0..n {
            let row = self.off_row(a);
            // Independent lane accumulators (one per vector) vectorise without reassociating
            // any single vector's sum.
            let mut acc = [0.0; BLOCK];
            for (h, wb) in row.iter().zip(w.chunks_exact(BLOCK)) {
                for r in 0..BLOCK {
                    acc[r] += h * wb[r];
                }
            }
            let wa = &w[a * BLOCK..(a + 1) * BLOCK];
            for r in 0..BLOCK {
                total[r] += wa[r] * acc[r];
            }
        }
        total
    }

    /// wᵀH⁰w for one vector (through the same code path as the blocked replicates).
    pub fn quadratic_form(&self, w: &[f64]) -> f64 {
        assert_eq!(w.len(), self.n);
        let mut block = vec![0.0; self.n * BLOCK];
        for (a, &v) in w.iter().enumerate() {
            block[a * BLOCK] = v;
        }
        self.quadratic_forms(&block)[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quadratic_forms_match_a_plain_double_sum_and_ignore_the_diagonal() {
        let n = 7;
        let m = KernelMatrix::from_upper(n, |a, b| {
            ((a * 31 + b * 17) % 11) as f64 - 5.0 + if a == b { 100.0 } else { 0.0 }
        });
        let mut block = vec![0.0; n * BLOCK];
        for (i, v) in block.iter_mut().enumerate() {
            *v = ((i * 7919) % 13) as f64 / 13.0 - 0.5;
        }
        let q = m.quadratic_forms(&block);
        for r in 0..BLOCK {
            let mut direct = 0.0;
            for a in 0..n {
                for b in 0..n {
                    if a != b {
                        direct += block[a * BLOCK + r] * m.get(a, b) * block[b * BLOCK + r];
                    }
                }
            }
            assert!((q[r] - direct).abs() < 1e-12, "lane {r}: {} vs {direct}", q[r]);
        }
        assert_eq!(m.get(2, 5), m.get(5, 2));
        assert_eq!(m.diag()[3], m.get(3, 3));
    }
}
