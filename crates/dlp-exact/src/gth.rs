//! The stationary law of an irreducible chain by GTH (subtraction-free), blocked for cache.
//! A leaf: [`crate::matrix`] (the unique law) and [`crate::ergodic`] (one law per closed
//! class) both call it.

use crate::ExactError;
use nalgebra::DMatrix;
use rayon::prelude::*;

/// Pivots per block of [`stationary_gth`]'s censoring loop: 16 pivot rows of 4096 doubles
/// (512 KiB) stay in cache while the lower rows stream past.
const GTH_BLOCK: usize = 64;

/// One censoring step of GTH on `row` (a row above pivot `piv`): its entry at the pivot
/// divided by the pivot's off-diagonal sum `s`, then that multiple of the pivot row `row_p`
/// (its first `piv` entries) added.
fn gth_update(row: &mut [f64], piv: usize, s: f64, row_p: &[f64]) {
    row[piv] /= s;
    let c = row[piv];
    if c != 0.0 {
        axpy(c, row_p, &mut row[..piv]);
    }
}

/// x += c·y. The baseline x86-64 build vectorises this two doubles wide; where the CPU has
/// AVX2 the same loop compiled for it runs four wide. Rust never fuses the multiply and the
/// add (no FMA contraction), so both give the same bits.
fn axpy(c: f64, y: &[f64], x: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked just above).
        unsafe { axpy_avx2(c, y, x) };
        return;
    }
    axpy_plain(c, y, x);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn axpy_avx2(c: f64, y: &[f64], x: &mut [f64]) {
    axpy_plain(c, y, x);
}

#[inline(always)]
fn axpy_plain(c: f64, y: &[f64], x: &mut [f64]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += c * b;
    }
}

/// The stationary law by the Grassmann–Taksar–Heyman algorithm (Grassmann, Taksar & Heyman
/// 1985; Stewart, *Introduction to the Numerical Solution of Markov Chains*, §2.7): censor
/// the chain to states 0..k for k = n−1 down to 1, each step replacing the diagonal
/// complement 1 − P_kk by the row sum Σ_{j<k} P_kj, so no subtraction ever happens and every
/// entry keeps full relative accuracy — unlike LU on Pᵀ − I, whose diagonal 1 − P_kk cancels
/// when flip probabilities are below ~e^−20. Then π is rebuilt by back-substitution and
/// normalised. Written by hand: nalgebra has no GTH and it is 30 lines. Rows of each
/// reduction step are updated in parallel; every entry is computed the same way for any
/// thread count. Errors (`NoUniqueStationary`) if some censored state has Σ_{j<k} P_kj = 0.
pub fn stationary_gth(p: &DMatrix<f64>) -> Result<Vec<f64>, ExactError> {
    let n = p.nrows();
    assert_eq!(n, p.ncols(), "transition matrix must be square");
    if n == 0 {
        return Err(ExactError::NoUniqueStationary("an empty matrix".into()));
    }
    // Row-major copy: the rank-one update below runs along rows.
    let mut a: Vec<f64> = (0..n * n).map(|t| p[(t / n, t % n)]).collect();
    // Pivots are taken in blocks of GTH_BLOCK (k, k − 1, …, lo): first the block's own rows,
    // one pivot after another, then every lower row takes the whole block's updates in one
    // visit, reading the block's pivot rows from cache instead of sweeping the k × k leading
    // block from memory once per pivot (the unblocked loop was memory-bound: ≈ 1 multiply-add
    // per ns at 2048 states). Each entry sees the same operations in the same order as in the
    // unblocked loop, so the law is bit-identical.
    let mut k = n - 1;
    while k >= 1 {
        let lo = k.saturating_sub(GTH_BLOCK - 1).max(1);
        let mut sums = [0.0; GTH_BLOCK];
        for piv in (lo..=k).rev() {
            let (top, rest) = a.split_at_mut(piv * n);
            let row_p = &rest[..piv];
            let s: f64 = row_p.iter().sum();
            if !(s > 0.0 && s.is_finite()) {
                return Err(ExactError::NoUniqueStationary(format!(
                    "GTH: state {piv} cannot reach a lower-numbered state"
                )));
            }
            sums[piv - lo] = s;
            for row in top[lo * n..].chunks_mut(n) {
                gth_update(row, piv, s, row_p);
            }
        }
        let (top, rest) = a.split_at_mut(lo * n);
        let pivots = &rest[..(k - lo + 1) * n];
        let apply = |row: &mut [f64]| {
            for piv in (lo..=k).rev() {
                let start = (piv - lo) * n;
                gth_update(row, piv, sums[piv - lo], &pivots[start..start + piv]);
            }
        };
        if lo >= 256 {
            top.par_chunks_mut(n).for_each(apply);
        } else {
            top.chunks_mut(n).for_each(apply);
        }
        k = lo - 1;
    }
    let mut pi = vec![0.0; n];
    pi[0] = 1.0;
    for k in 1..n {
        pi[k] = (0..k).map(|i| pi[i] * a[i * n + k]).sum();
    }
    let total: f64 = pi.iter().sum();
    if !(total.is_finite() && total > 0.0) {
        return Err(ExactError::NoUniqueStationary("GTH: the unnormalised law sums to zero".into()));
    }
    pi.iter_mut().for_each(|v| *v /= total);
    Ok(pi)
}

/// GTH on a banded transition matrix, in its band storage: `p` holds n rows of w = 2·bw + 1
/// entries, `p[k·w + c]` = P(k → k − bw + c) (entries outside 0..n are zero), and is
/// overwritten by the reduction. Returns the stationary law *unnormalised* (π₀ = 1; divide by
/// its sum). Censoring state k only touches states within bw of it, so the band is kept and the
/// cost is O(n·bw²) instead of O(n³) (the CoRV transfer operators of [`crate::corv`] have
/// ~10⁴ cells and bands of ~10²). A state that cannot reach a lower-numbered one gets π = 0
/// (the dense [`stationary_gth`] errors instead): the transfer operators' far cells can
/// underflow to that, and they carry no mass.
pub fn stationary_gth_banded(p: &mut [f64], n: usize, bw: usize) -> Vec<f64> {
    let w = 2 * bw + 1;
    assert_eq!(p.len(), n * w, "band storage must hold n rows of 2·bw + 1 entries");
    let at = |p: &[f64], i: usize, j: usize| -> f64 { if i.abs_diff(j) > bw { 0.0 } else { p[i * w + j + bw - i] } };
    // Eliminate states n−1, …, 1; s_k = Σ_{j<k} P[k][j].
    let mut s = vec![0.0; n];
    for k in (1..n).rev() {
        let lo = k.saturating_sub(bw);
        let sk: f64 = (lo..k).map(|j| at(p, k, j)).sum();
        s[k] = sk;
        if sk <= 0.0 {
            continue;
        }
        for i in lo..k {
            let pik = at(p, i, k);
            if pik == 0.0 {
                continue;
            }
            for j in lo..k {
                let pkj = at(p, k, j);
                if pkj != 0.0 && i.abs_diff(j) <= bw {
                    p[i * w + j + bw - i] += pik * pkj / sk;
                }
            }
        }
    }
    let mut pi = vec![0.0; n];
    if n == 0 {
        return pi;
    }
    pi[0] = 1.0;
    for k in 1..n {
        let lo = k.saturating_sub(bw);
        let num: f64 = (lo..k).map(|i| pi[i] * at(p, i, k)).sum();
        pi[k] = if s[k] > 0.0 { num / s[k] } else { 0.0 };
    }
    pi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_gth_is_bit_identical_to_the_unblocked_loop() {
        // The unblocked censoring loop as it stood before blocking, written out here.
        fn unblocked(p: &DMatrix<f64>) -> Vec<f64> {
            let n = p.nrows();
            let mut a: Vec<f64> = (0..n * n).map(|t| p[(t / n, t % n)]).collect();
            for k in (1..n).rev() {
                let (top, rest) = a.split_at_mut(k * n);
                let row_k = &rest[..k];
                let s: f64 = row_k.iter().sum();
                for row in top.chunks_mut(n) {
                    gth_update(row, k, s, row_k);
                }
            }
            let mut pi = vec![0.0; n];
            pi[0] = 1.0;
            for k in 1..n {
                pi[k] = (0..k).map(|i| pi[i] * a[i * n + k]).sum();
            }
            let total: f64 = pi.iter().sum();
            pi.iter().map(|v| v / total).collect()
        }
        for n in [1, 2, 15, 16, 17, 40, 300] {
            let raw = DMatrix::from_fn(n, n, |i, j| ((i * 37 + j * 11) % 17) as f64 + if i == j { 30.0 } else { 0.5 });
            let p = DMatrix::from_fn(n, n, |i, j| raw[(i, j)] / raw.row(i).sum());
            assert_eq!(stationary_gth(&p).unwrap(), unblocked(&p), "n = {n}");
        }
    }

    /// The banded solver against the dense one on a random banded chain (different arithmetic,
    /// same law to rounding), and on a birth–death chain against its closed form
    /// π_k ∝ Π_{j<k} up_j / down_{j+1}.
    #[test]
    fn banded_gth_matches_the_dense_solver_and_a_birth_death_closed_form() {
        let (n, bw) = (40, 3);
        let w = 2 * bw + 1;
        let mut band = vec![0.0; n * w];
        let mut dense = DMatrix::zeros(n, n);
        let mut u = 0x2545_f491_4f6c_dd1du64;
        for k in 0..n {
            let cols: Vec<usize> = (k.saturating_sub(bw)..=(k + bw).min(n - 1)).collect();
            let mut row: Vec<f64> = cols
                .iter()
                .map(|_| {
                    u ^= u << 13;
                    u ^= u >> 7;
                    u ^= u << 17;
                    0.05 + (u >> 11) as f64 / (1u64 << 53) as f64
                })
                .collect();
            let t: f64 = row.iter().sum();
            row.iter_mut().for_each(|v| *v /= t);
            for (&c, &v) in cols.iter().zip(&row) {
                band[k * w + c + bw - k] = v;
                dense[(k, c)] = v;
            }
        }
        let mut pi = stationary_gth_banded(&mut band, n, bw);
        let z: f64 = pi.iter().sum();
        pi.iter_mut().for_each(|v| *v /= z);
        let want = stationary_gth(&dense).unwrap();
        let err = pi.iter().zip(&want).map(|(a, b)| (a - b).abs() / b).fold(0.0, f64::max);
        assert!(err < 1e-12, "relative error {err}");
        // Birth–death: up 0.3, down 0.5 (0.2 at the ends' missing side folded into staying).
        let n = 12;
        let mut band = vec![0.0; n * 3];
        for k in 0..n {
            let (up, down) = (if k + 1 < n { 0.3 } else { 0.0 }, if k > 0 { 0.5 } else { 0.0 });
            band[k * 3] = down;
            band[k * 3 + 1] = 1.0 - up - down;
            band[k * 3 + 2] = up;
        }
        let pi = stationary_gth_banded(&mut band, n, 1);
        for k in 0..n {
            assert!((pi[k] - 0.6f64.powi(k as i32)).abs() < 1e-14, "state {k}: {}", pi[k]);
        }
    }
}
