//! Eigenvalues of transition matrices: dense solvers from faer and, for chains too large for
//! a dense non-symmetric solve, the second-largest eigenvalue modulus by restarted Arnoldi.
//!
//! * [`symmetric_eigenvalues`]: faer's blocked tridiagonalisation and tridiagonal QR
//!   (eigenvalues only).
//! * [`general_eigenvalues`]: faer's blocked Hessenberg reduction and multishift real Schur
//!   QR with aggressive early deflation (eigenvalues only). nalgebra's `complex_eigenvalues`
//!   (unblocked, deflation at machine ε) iterates without limit and did not return in 300 s
//!   on a 1024-state DULA matrix (`examples/eigen_times.rs`, kind `dula-bnn`; faer: ~1 s);
//!   faer stops after at most 30·max(n, 10) QR iterations.
//! * [`slem_iterative`]: SLEM = max |λ| over the spectrum of P without the Perron root, from
//!   O(n²) matrix–vector products instead of an O(n³) dense solve.
//!
//! Everything runs on one thread (`Par::Seq`): results do not depend on the thread count and
//! measured times are one-core times. The dense solvers return `Result<_, String>` because
//! faer's can fail (non-finite input, QR iteration limit); nothing here panics on bad input.

//!
//! faer is behind the crate's default feature `spectrum`: a build without it (the light
//! reproductions, which only enumerate) compiles no dense eigensolver, and these functions
//! then return an error saying so.

use nalgebra::{Complex, DMatrix};
use serde::{Deserialize, Serialize};

/// Eigenvalues of a symmetric matrix (only its lower triangle need be read), in decreasing
/// order.
///
/// Errors when `s` is not square, when its lower triangle has a NaN or infinite entry, or
/// when faer's tridiagonal QR does not converge.
pub fn symmetric_eigenvalues(s: &DMatrix<f64>) -> Result<Vec<f64>, String> {
    let n = s.nrows();
    if s.ncols() != n {
        return Err(format!("symmetric eigenvalues: the matrix is {n} × {}, not square", s.ncols()));
    }
    // faer does not check finiteness here; a NaN would only surface as an iteration limit.
    for j in 0..n {
        for i in j..n {
            if !s[(i, j)].is_finite() {
                return Err(format!("symmetric eigenvalues: entry ({i}, {j}) is {}", s[(i, j)]));
            }
        }
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut ev = dense::self_adjoint(s.as_slice(), n)?;
    ev.sort_by(|a, b| b.total_cmp(a));
    Ok(ev)
}

/// The complex eigenvalues of a general real square matrix, in decreasing order of modulus
/// (ties: larger real part, then larger imaginary part first, so a conjugate pair comes as
/// a + bi, a − bi).
///
/// Errors when `p` is not square, has a NaN or infinite entry, or when faer's Schur QR
/// did not converge (detected from the eigenvalues' first two power sums, see below).
pub fn general_eigenvalues(p: &DMatrix<f64>) -> Result<Vec<Complex<f64>>, String> {
    let n = p.nrows();
    if p.ncols() != n {
        return Err(format!("general eigenvalues: the matrix is {n} × {}, not square", p.ncols()));
    }
    eigenvalues_of(p.as_slice(), n)
}

/// [`general_eigenvalues`] of an n × n column-major matrix (also used on the small Arnoldi
/// matrices).
fn eigenvalues_of(a: &[f64], n: usize) -> Result<Vec<Complex<f64>>, String> {
    if let Some(k) = a.iter().position(|v| !v.is_finite()) {
        return Err(format!("general eigenvalues: entry ({}, {}) is {}", k % n, k / n, a[k]));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let (re, im) = dense::real_schur(a, n)?;
    let mut ev: Vec<Complex<f64>> = re.iter().zip(&im).map(|(&r, &i)| Complex::new(r, i)).collect();
    check_power_sums(a, n, &ev)?;
    sort_by_modulus(&mut ev);
    Ok(ev)
}

/// Decreasing modulus, then decreasing real part, then decreasing imaginary part; total
/// order, so the result does not depend on the solver's output order.
fn sort_by_modulus(ev: &mut [Complex<f64>]) {
    ev.sort_by(|a, b| b.norm().total_cmp(&a.norm()).then(b.re.total_cmp(&a.re)).then(b.im.total_cmp(&a.im)));
}

/// faer 0.24's `evd_real` discards the convergence flag of its multishift QR (an iteration
/// limit of 30·n sweeps), so a non-converged run would return stale eigenvalues as if they
/// were good. The first two power sums of the spectrum are backward stable: Σλ = tr A and
/// Σλ² = tr A² up to O(n^{3/2}·ε·‖A‖_F^k) for any computed Schur form, however ill-conditioned
/// the individual eigenvalues; an eigenvalue left unconverged breaks them at O(‖A‖).
fn check_power_sums(a: &[f64], n: usize, ev: &[Complex<f64>]) -> Result<(), String> {
    let a = |i: usize, j: usize| a[i + j * n];
    let mut trace = 0.0;
    let mut trace_sq = 0.0;
    let mut frob_sq = 0.0;
    for j in 0..n {
        trace += a(j, j);
        for i in 0..n {
            trace_sq += a(i, j) * a(j, i);
            frob_sq += a(i, j) * a(i, j);
        }
    }
    let frob = frob_sq.sqrt();
    let s1: f64 = ev.iter().map(|z| z.re).sum();
    let s2: f64 = ev.iter().map(|z| z.re * z.re - z.im * z.im).sum();
    let slack = 1e3 * (n as f64).powf(1.5) * f64::EPSILON;
    let (e1, e2) = ((s1 - trace).abs(), (s2 - trace_sq).abs());
    if ev.iter().all(|z| z.re.is_finite() && z.im.is_finite()) && e1 <= slack * frob && e2 <= slack * frob_sq {
        Ok(())
    } else {
        Err(format!(
            "general eigenvalues of a {n} × {n} matrix: the Schur QR did not converge \
             (|Σλ − tr A| = {e1:.3e}, |Σλ² − tr A²| = {e2:.3e}, ‖A‖_F = {frob:.3e})"
        ))
    }
}

/// What the iterative method found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlemEstimate {
    /// |θ| for the Ritz value θ of largest modulus of the deflated operator (I − 1πᵀ)P (=
    /// P − 1πᵀ for a stationary π): the second-largest eigenvalue modulus once `converged`. NaN when the input was invalid
    /// (shapes, non-finite entries) or no product was allowed.
    pub slem: f64,
    /// Bound on ‖(I − 1πᵀ)Px − θx‖₂ for the unit Ritz vector x (absolute; ‖P‖ is O(1) for a
    /// stochastic matrix): the Arnoldi residual plus the perturbations the restarts made.
    /// For a non-normal P the eigenvalue error can exceed it by the eigenvalue's condition
    /// number.
    pub residual: f64,
    /// Whether `residual` went below the requested tolerance.
    pub converged: bool,
    /// Matrix–vector products with P spent.
    pub matvecs: usize,
}

/// Krylov dimension of [`slem_iterative`]: each restart cycle adds up to this many vectors.
/// 60 vectors of n doubles are 2 MB at 4096 states, and the 60 × 60 projected eigenproblem
/// solved every 10 products (~5·10⁶ flops) is small beside 10 dense products at n ≥ 1024.
const KRYLOV_DIM: usize = 60;

/// Ritz values (by modulus) whose invariant subspace a restart keeps (thick restart).
const KEEP: usize = 20;

/// Products between convergence checks inside a cycle, so a fast case stops early.
const CHECK_EVERY: usize = 10;

/// Second-largest eigenvalue modulus of a row-stochastic P whose unique stationary law is `pi`
/// (P irreducible): the spectral radius of the deflated operator P − 1·πᵀ, by thick-restarted
/// Arnoldi. Stops when the Ritz residual ([`SlemEstimate::residual`]) is below `tol` or after
/// `max_matvecs` products with P, whichever comes first; `converged` says which. Runs on one
/// thread.
///
/// Method: Arnoldi on right vectors with x ↦ (I − 1πᵀ)Px, which is (P − 1πᵀ)x for a
/// stationary π and keeps the basis in {x : πᵀx = 0}, where the operator has exactly P's
/// eigenvalues other than the Perron root (simple when P is irreducible) — for any π with
/// Σπ = 1, so an inexact π does not bias the result. Classical Gram–Schmidt applied twice
/// keeps the basis orthonormal to rounding, so the Arnoldi residual is the true one. 60
/// vectors per cycle; the thick restart (Morgan 1996; Wu & Simon 2000; equivalent to
/// implicitly restarted Arnoldi with exact shifts, as in ARPACK) keeps an orthonormal basis of
/// the Ritz vectors of the 20 largest-modulus Ritz values (real and imaginary parts of a
/// complex pair) and the last Arnoldi vector, so the slow directions are not rebuilt from
/// scratch every cycle as after a single-vector restart. Convergence is checked every 10
/// products. The start vector is a fixed pseudo-random vector (splitmix64 of
/// the index), so the result is reproducible. `pi` is normalised to sum 1 here. A P with at
/// most a quarter of its entries non-zero is multiplied in compressed form.
///
/// n ≤ 1: no eigenvalue besides the Perron root; returns slem 0, converged, 0 products. With
/// n ≤ 61 states the Krylov space fills the (n−1)-dimensional subspace in one cycle and the
/// answer is the exact spectrum. Invalid input (shapes, non-finite entries, π summing to ≤ 0)
/// returns slem NaN, residual ∞, not converged, 0 products.
pub fn slem_iterative(p: &DMatrix<f64>, pi: &[f64], tol: f64, max_matvecs: usize) -> SlemEstimate {
    arnoldi_slem(p, pi, tol, max_matvecs, KRYLOV_DIM, KEEP)
}

/// P as a matrix–vector product: dense columns, or compressed columns when at most a quarter
/// of the entries are non-zero (single-site kernels and banded chains have O(n) or O(n·w)),
/// which cuts the product from n² to nnz multiply–adds. Both add the same non-zero terms in
/// the same order (the dense loop only adds zeros besides), so the result is the same.
enum Operator<'a> {
    Dense(&'a [f64]),
    Sparse { col_start: Vec<usize>, row: Vec<usize>, val: Vec<f64> },
}

impl Operator<'_> {
    fn new(p: &DMatrix<f64>) -> Operator<'_> {
        let n = p.nrows();
        let data = p.as_slice();
        let nnz = data.iter().filter(|&&v| v != 0.0).count();
        if nnz * 4 > n * n {
            return Operator::Dense(data);
        }
        let mut col_start = Vec::with_capacity(n + 1);
        let (mut row, mut val) = (Vec::with_capacity(nnz), Vec::with_capacity(nnz));
        col_start.push(0);
        for col in data.chunks_exact(n) {
            for (i, &v) in col.iter().enumerate() {
                if v != 0.0 {
                    row.push(i);
                    val.push(v);
                }
            }
            col_start.push(row.len());
        }
        Operator::Sparse { col_start, row, val }
    }

    /// y = P x.
    fn apply(&self, x: &[f64], y: &mut [f64]) {
        y.fill(0.0);
        match self {
            Operator::Dense(data) => {
                let n = x.len();
                for (col, &xj) in data.chunks_exact(n).zip(x) {
                    if xj != 0.0 {
                        for (yi, &pij) in y.iter_mut().zip(col) {
                            *yi += pij * xj;
                        }
                    }
                }
            }
            Operator::Sparse { col_start, row, val } => {
                for (j, &xj) in x.iter().enumerate() {
                    if xj != 0.0 {
                        for k in col_start[j]..col_start[j + 1] {
                            y[row[k]] += val[k] * xj;
                        }
                    }
                }
            }
        }
    }
}

/// y = (I − 1πᵀ) P x: P x, then its π-mean subtracted from every entry. For a stationary π
/// this is (P − 1πᵀ) x (πᵀP = πᵀ). Subtracting the mean of Px rather than of x keeps y in
/// {πᵀy = 0} even when π is only approximately stationary, and on that subspace
/// (I − 1πᵀ)P has exactly P's eigenvalues other than 1 for any π with Σπ = 1 (it is P acting
/// on the quotient by the Perron vector 1), so an inexact π costs no accuracy.
fn apply_deflated(op: &Operator<'_>, pi: &[f64], x: &[f64], y: &mut [f64]) {
    op.apply(x, y);
    project_out_perron(pi, y);
}

/// x − (πᵀx)·1: the projection along the Perron vector 1 onto {πᵀx = 0} (Σπ = 1).
fn project_out_perron(pi: &[f64], x: &mut [f64]) {
    let mean: f64 = pi.iter().zip(x.iter()).map(|(a, b)| a * b).sum();
    x.iter_mut().for_each(|v| *v -= mean);
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// A fixed pseudo-random number in [−½, ½) from an index (splitmix64), for a reproducible
/// start vector that no structured eigenvector is orthogonal to.
fn splitmix(i: u64) -> f64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

fn invalid_estimate() -> SlemEstimate {
    SlemEstimate { slem: f64::NAN, residual: f64::INFINITY, converged: false, matvecs: 0 }
}

/// The Ritz values (eigenvalues of the k × k projected matrix, in [`general_eigenvalues`]'
/// order, so the largest modulus first), a unit eigenvector y for the first one θ, and
/// ‖H_k y − θy‖₂ (the inverse iteration's rounding).
struct Ritz {
    ev: Vec<Complex<f64>>,
    y: Vec<Complex<f64>>,
    small_residual: f64,
}

/// [`Ritz`] of the k × k column-major `hk`; `None` if its eigenproblem failed.
fn top_ritz(hk: &[f64], k: usize) -> Option<Ritz> {
    let ev = eigenvalues_of(&hk[..k * k], k).ok()?;
    let y = eigenvector(hk, k, ev[0]);
    let small_residual = (0..k)
        .map(|i| {
            let hy: Complex<f64> = (0..k).map(|j| y[j] * hk[i + j * k]).sum();
            (hy - ev[0] * y[i]).norm_sqr()
        })
        .sum::<f64>()
        .sqrt();
    Some(Ritz { ev, y, small_residual })
}

/// A unit eigenvector of the k × k real matrix `h` for its (computed) eigenvalue θ, by two
/// steps of inverse iteration with complex LU and partial pivoting. θ is exact to rounding, so
/// H − θI is singular to rounding and one solve already lands on the eigenvector; a zero
/// pivot is replaced by ε‖H‖_F, the usual guard. Phase: the largest entry is real positive,
/// so the vector of a real θ comes out real.
fn eigenvector(h: &[f64], k: usize, theta: Complex<f64>) -> Vec<Complex<f64>> {
    let scale = h.iter().map(|v| v * v).sum::<f64>().sqrt().max(f64::MIN_POSITIVE);
    let tiny = f64::EPSILON * scale;
    // LU of A = H − θI, row-major for the elimination, with the row permutation in `perm`.
    let mut a: Vec<Complex<f64>> = (0..k * k).map(|t| Complex::new(h[(t / k) + (t % k) * k], 0.0)).collect();
    for i in 0..k {
        a[i * k + i] -= theta;
    }
    let mut perm: Vec<usize> = (0..k).collect();
    for c in 0..k {
        let piv = (c..k).max_by(|&r, &s| a[r * k + c].norm().total_cmp(&a[s * k + c].norm())).unwrap_or(c);
        if piv != c {
            for t in 0..k {
                a.swap(c * k + t, piv * k + t);
            }
            perm.swap(c, piv);
        }
        if a[c * k + c].norm() < tiny {
            a[c * k + c] = Complex::new(tiny, 0.0);
        }
        let d = a[c * k + c];
        for r in c + 1..k {
            let f = a[r * k + c] / d;
            a[r * k + c] = f;
            for t in c + 1..k {
                let u = a[c * k + t];
                a[r * k + t] -= f * u;
            }
        }
    }
    let solve = |b: &[Complex<f64>]| -> Vec<Complex<f64>> {
        let mut x: Vec<Complex<f64>> = perm.iter().map(|&r| b[r]).collect();
        for r in 0..k {
            for t in 0..r {
                let l = a[r * k + t];
                let xt = x[t];
                x[r] -= l * xt;
            }
        }
        for r in (0..k).rev() {
            for t in r + 1..k {
                let u = a[r * k + t];
                let xt = x[t];
                x[r] -= u * xt;
            }
            x[r] /= a[r * k + r];
        }
        let nrm = x.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
        x.iter().map(|z| z / nrm).collect()
    };
    let b: Vec<Complex<f64>> = (0..k).map(|i| Complex::new(1.0 + splitmix(i as u64 + 7919), 0.0)).collect();
    let mut y = solve(&solve(&b));
    if let Some(big) = y.iter().copied().max_by(|a, b| a.norm().total_cmp(&b.norm()))
        && big.norm() > 0.0
    {
        let phase = big.conj() / big.norm();
        y.iter_mut().for_each(|z| *z *= phase);
    }
    y
}

/// Orthonormalises the columns (each of length k) by modified Gram–Schmidt applied twice,
/// dropping a column that is dependent on the previous ones to 1e-8 (its contribution would
/// be rounding amplified by up to 1e8 in the restart relation).
fn orthonormalise(cols: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = Vec::with_capacity(cols.len());
    for mut c in cols {
        let before = norm(&c);
        for _ in 0..2 {
            for q in &out {
                let d = dot(q, &c);
                c.iter_mut().zip(q).for_each(|(ci, qi)| *ci -= d * qi);
            }
        }
        let after = norm(&c);
        if before > 0.0 && after > 1e-8 * before {
            c.iter_mut().for_each(|v| *v /= after);
            out.push(c);
        }
    }
    out
}

/// [`slem_iterative`] with the Krylov dimension `m` and the number of Ritz values `keep`
/// kept at a restart as parameters (tests use small ones to exercise restarts).
fn arnoldi_slem(p: &DMatrix<f64>, pi: &[f64], tol: f64, max_matvecs: usize, m: usize, keep: usize) -> SlemEstimate {
    let n = p.nrows();
    if p.ncols() != n || pi.len() != n || p.iter().any(|v| !v.is_finite()) || pi.iter().any(|v| !v.is_finite()) {
        return invalid_estimate();
    }
    if n <= 1 {
        return SlemEstimate { slem: 0.0, residual: 0.0, converged: true, matvecs: 0 };
    }
    let total: f64 = pi.iter().sum();
    if total.is_nan() || total <= 0.0 {
        return invalid_estimate();
    }
    let pi: Vec<f64> = pi.iter().map(|v| v / total).collect();
    let op = Operator::new(p);

    // The Krylov space lives in the (n−1)-dimensional subspace {πᵀx = 0}: at n − 1 vectors it
    // is all of it and the Ritz values are the eigenvalues.
    let m = m.max(2).min(n - 1);
    let keep = keep.min(m / 2).max(1);
    // Basis V (column j at v[j n..]), and the (m+1) × m projected matrix H with
    // B V_k = V_{k+1} H[..k+1, ..k], B = (I − 1πᵀ)P (column-major, leading dimension m + 1).
    let ld = m + 1;
    let mut v = vec![0.0; n * (m + 1)];
    let mut h = vec![0.0; ld * m];
    let mut w = vec![0.0; n];
    let mut coef = vec![0.0; m + 1];

    let start = |v: &mut [f64]| {
        let x = &mut v[..n];
        x.iter_mut().enumerate().for_each(|(i, xi)| *xi = splitmix(i as u64));
        project_out_perron(&pi, x);
        let s = norm(x);
        x.iter_mut().for_each(|xi| *xi /= s);
    };
    start(&mut v);
    let mut k = 0; // columns of H filled; v_0..v_k are valid
    let mut drift = 0.0; // Σ ‖H Y − Y G‖_F over thick restarts (see below)
    let mut matvecs = 0;
    let mut estimate = invalid_estimate();

    // Ritz value of largest modulus of H[..k, ..k], its residual bound and vector.
    let evaluate = |h: &[f64], k: usize, drift: f64| -> Option<(Ritz, f64)> {
        let hk: Vec<f64> = (0..k * k).map(|t| h[(t % k) + (t / k) * ld]).collect();
        let ritz = top_ritz(&hk, k)?;
        // ‖B V_k y − θ V_k y‖ = ‖V_k (H_k y − θ y) + v_k (h_k·y)‖, h_k the last row of H.
        let last: Complex<f64> = (0..k).map(|j| ritz.y[j] * h[k + j * ld]).sum();
        let res = ritz.small_residual.hypot(last.norm()) + drift;
        Some((ritz, res))
    };

    loop {
        // Extend the Arnoldi relation to m columns (fewer at a breakdown, a check that
        // converged, or the end of the budget).
        let mut invariant = false;
        while k < m && matvecs < max_matvecs {
            let (basis, rest) = v.split_at_mut((k + 1) * n);
            apply_deflated(&op, &pi, &basis[k * n..], &mut w);
            matvecs += 1;
            let before = norm(&w);
            // Classical Gram–Schmidt twice ("twice is enough", Giraud et al. 2005): keeps V
            // orthonormal to rounding, on which the residual formula relies.
            coef[..=k].fill(0.0);
            for _ in 0..2 {
                for (j, q) in basis.chunks_exact(n).enumerate() {
                    let d = dot(q, &w);
                    coef[j] += d;
                    w.iter_mut().zip(q).for_each(|(wi, qi)| *wi -= d * qi);
                }
            }
            // The Gram–Schmidt coefficients compound the rounding-level Perron components of
            // earlier vectors (measured: ×2.4 a step on a 20-state lazy cycle, 2e-10 by step
            // 19, which left the residual stuck at 7e-11), so they are removed from every new
            // vector; that moves w off V's orthogonal complement by only ε·‖Vᵀ1‖.
            project_out_perron(&pi, &mut w);
            let beta = norm(&w);
            h[k * ld..k * ld + k + 1].copy_from_slice(&coef[..=k]);
            h[k * ld + k + 1] = beta;
            k += 1;
            if beta <= 1e-12 * before || beta == 0.0 {
                // An invariant subspace: the Ritz values are eigenvalues (to β).
                invariant = true;
                break;
            }
            rest[..n].iter_mut().zip(&w).for_each(|(vi, wi)| *vi = wi / beta);
            if k % CHECK_EVERY == 0
                && k < m
                && let Some((ritz, res)) = evaluate(&h, k, drift)
                && res < tol
            {
                return SlemEstimate { slem: ritz.ev[0].norm(), residual: res, converged: true, matvecs };
            }
        }
        if k == 0 {
            return estimate; // no product allowed
        }
        let Some((ritz, res)) = evaluate(&h, k, drift) else {
            return estimate; // the small eigenproblem failed: keep the last estimate
        };
        estimate = SlemEstimate { slem: ritz.ev[0].norm(), residual: res, converged: res < tol, matvecs };
        if estimate.converged || invariant || k == n - 1 || matvecs >= max_matvecs {
            return estimate;
        }

        // Thick restart. Y = orthonormal basis (k × q) of the Ritz vectors of the `keep`
        // largest-modulus Ritz values (a conjugate pair is kept whole, as its real and
        // imaginary parts). With G = Yᵀ H_k Y and W = V_k Y,
        //   B W = W G + v_k (h_kᵀ Y) + V_k (H_k Y − Y G),
        // so [W, v_k] with projected matrix [G; h_kᵀ Y] continues an Arnoldi relation for B
        // up to the last term, which is rounding in the Ritz vectors (Y spans an invariant
        // subspace of H_k up to it); its norm is added to the residual bound (`drift`).
        let hk: Vec<f64> = (0..k * k).map(|t| h[(t % k) + (t / k) * ld]).collect();
        let mut sel = keep.min(ritz.ev.len());
        if sel < ritz.ev.len() && ritz.ev[sel - 1].im > 0.0 {
            sel += 1; // the conjugate partner follows
        }
        let mut cols: Vec<Vec<f64>> = Vec::new();
        for (t, &theta) in ritz.ev[..sel].iter().enumerate() {
            if theta.im < 0.0 && t > 0 && ritz.ev[t - 1].im > 0.0 {
                continue; // partner of the previous one: same real span
            }
            let y = if t == 0 { ritz.y.clone() } else { eigenvector(&hk, k, theta) };
            cols.push(y.iter().map(|z| z.re).collect());
            if theta.im != 0.0 {
                cols.push(y.iter().map(|z| z.im).collect());
            }
        }
        let y = orthonormalise(cols);
        let q = y.len();
        // G = Yᵀ H_k Y, c = h_kᵀ Y, and the drift ‖H_k Y − Y G‖_F.
        let hy: Vec<Vec<f64>> =
            y.iter().map(|yc| (0..k).map(|i| (0..k).map(|j| hk[i + j * k] * yc[j]).sum()).collect()).collect();
        let g: Vec<Vec<f64>> = hy.iter().map(|hyc| y.iter().map(|yr| dot(yr, hyc)).collect()).collect();
        let mut e2 = 0.0;
        for (c, hyc) in hy.iter().enumerate() {
            for i in 0..k {
                let ygi: f64 = (0..q).map(|r| y[r][i] * g[c][r]).sum();
                e2 += (hyc[i] - ygi).powi(2);
            }
        }
        let restart_drift = drift + e2.sqrt();
        if q == 0 || q >= k || restart_drift > 0.1 * tol {
            // Start afresh from the top Ritz vector (real span), with an exact relation.
            let z: Vec<f64> = ritz.y.iter().map(|c| c.re + c.im).collect();
            let mut x = vec![0.0; n];
            for (j, zj) in z.iter().enumerate() {
                x.iter_mut().zip(&v[j * n..(j + 1) * n]).for_each(|(xi, vj)| *xi += zj * vj);
            }
            project_out_perron(&pi, &mut x);
            let s = norm(&x);
            if s > 0.0 && s.is_finite() {
                x.iter_mut().for_each(|xi| *xi /= s);
                v[..n].copy_from_slice(&x);
            } else {
                start(&mut v);
            }
            h.fill(0.0);
            k = 0;
            drift = 0.0;
            continue;
        }
        let c: Vec<f64> = y.iter().map(|yc| (0..k).map(|j| h[k + j * ld] * yc[j]).sum()).collect();
        // W = V_k Y, then v_q = v_k (orthogonal to V_k, hence to W).
        let mut wmat = vec![0.0; n * q];
        for (r, yc) in y.iter().enumerate() {
            let dst = &mut wmat[r * n..(r + 1) * n];
            for (j, &yj) in yc.iter().enumerate() {
                dst.iter_mut().zip(&v[j * n..(j + 1) * n]).for_each(|(d, vj)| *d += yj * vj);
            }
        }
        v.copy_within(k * n..(k + 1) * n, q * n);
        v[..q * n].copy_from_slice(&wmat);
        h.fill(0.0);
        for col in 0..q {
            for row in 0..q {
                h[row + col * ld] = g[col][row];
            }
            h[q + col * ld] = c[col];
        }
        k = q;
        drift = restart_drift;
    }
}

/// The two dense solves, from faer (feature `spectrum`): eigenvalues only, one thread.
#[cfg(feature = "spectrum")]
mod dense {
    use faer::diag::Diag;
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::evd::{self, ComputeEigenvectors, EvdParams, SelfAdjointEvdParams};
    use faer::{MatRef, Par, Spec};

    /// Eigenvalues (unsorted) of the symmetric n × n column-major `s` (lower triangle read).
    pub(super) fn self_adjoint(s: &[f64], n: usize) -> Result<Vec<f64>, String> {
        let a = MatRef::from_column_major_slice(s, n, n);
        let mut w = Diag::<f64>::zeros(n);
        let params: Spec<SelfAdjointEvdParams, f64> = Default::default();
        let mut buf =
            MemBuffer::new(evd::self_adjoint_evd_scratch::<f64>(n, ComputeEigenvectors::No, Par::Seq, params));
        evd::self_adjoint_evd(a, w.as_mut(), None, Par::Seq, MemStack::new(&mut buf), params)
            .map_err(|e| format!("symmetric eigenvalues of a {n} × {n} matrix: faer failed ({e:?})"))?;
        Ok(w.column_vector().iter().copied().collect())
    }

    /// Real and imaginary parts of the eigenvalues (unsorted) of the n × n column-major `a`.
    pub(super) fn real_schur(a: &[f64], n: usize) -> Result<(Vec<f64>, Vec<f64>), String> {
        let a = MatRef::from_column_major_slice(a, n, n);
        let mut re = Diag::<f64>::zeros(n);
        let mut im = Diag::<f64>::zeros(n);
        let params: Spec<EvdParams, f64> = Default::default();
        let req = evd::evd_scratch::<f64>(n, ComputeEigenvectors::No, ComputeEigenvectors::No, Par::Seq, params);
        let mut buf = MemBuffer::new(req);
        evd::evd_real(a, re.as_mut(), im.as_mut(), None, None, Par::Seq, MemStack::new(&mut buf), params)
            .map_err(|e| format!("general eigenvalues of a {n} × {n} matrix: faer failed ({e:?})"))?;
        Ok((re.column_vector().iter().copied().collect(), im.column_vector().iter().copied().collect()))
    }
}

/// Without feature `spectrum` there is no dense eigensolver: both solves are errors.
#[cfg(not(feature = "spectrum"))]
mod dense {
    const WITHOUT: &str = "eigenvalues: dlp-exact was built without its `spectrum` feature (faer)";

    /// Always an error: no solver in this build.
    pub(super) fn self_adjoint(_: &[f64], _: usize) -> Result<Vec<f64>, String> {
        Err(WITHOUT.into())
    }

    /// Always an error: no solver in this build.
    pub(super) fn real_schur(_: &[f64], _: usize) -> Result<(Vec<f64>, Vec<f64>), String> {
        Err(WITHOUT.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    /// Deterministic uniform numbers in [0, 1) for test matrices (fixed seed per test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Greedy nearest matching of two multisets of complex numbers; the largest distance.
    fn multiset_distance(a: &[Complex<f64>], b: &[Complex<f64>]) -> f64 {
        assert_eq!(a.len(), b.len());
        let mut used = vec![false; b.len()];
        let mut worst: f64 = 0.0;
        for x in a {
            let (j, d) = b
                .iter()
                .enumerate()
                .filter(|(j, _)| !used[*j])
                .map(|(j, y)| (j, (x - y).norm()))
                .min_by(|s, t| s.1.total_cmp(&t.1))
                .unwrap();
            used[j] = true;
            worst = worst.max(d);
        }
        worst
    }

    fn two_state(a: f64, b: f64) -> DMatrix<f64> {
        DMatrix::from_row_slice(2, 2, &[1.0 - a, a, b, 1.0 - b])
    }

    /// S = D^{1/2} P D^{−1/2} for a reversible P with law π.
    fn symmetrised(p: &DMatrix<f64>, pi: &[f64]) -> DMatrix<f64> {
        let n = p.nrows();
        DMatrix::from_fn(n, n, |i, j| p[(i, j)] * (pi[i] / pi[j]).sqrt())
    }

    /// The stationary law, by the crate's GTH.
    fn law(p: &DMatrix<f64>) -> Vec<f64> {
        crate::matrix::stationary(p).unwrap()
    }

    /// The dense answer: max |λ| over the spectrum without the eigenvalue nearest 1.
    fn dense_slem(p: &DMatrix<f64>) -> f64 {
        let mut ev = general_eigenvalues(p).unwrap();
        let k = (0..ev.len()).min_by(|&a, &b| (ev[a] - 1.0).norm().total_cmp(&(ev[b] - 1.0).norm())).unwrap();
        ev.remove(k);
        ev.iter().map(|z| z.norm()).fold(0.0, f64::max)
    }

    #[test]
    fn two_state_chain_has_eigenvalues_one_and_one_minus_a_minus_b() {
        let (a, b) = (0.3, 0.45);
        let p = two_state(a, b);
        let ev = general_eigenvalues(&p).unwrap();
        assert!((ev[0] - Complex::new(1.0, 0.0)).norm() < 1e-14, "{ev:?}");
        assert!((ev[1] - Complex::new(1.0 - a - b, 0.0)).norm() < 1e-14, "{ev:?}");
        let pi = [b / (a + b), a / (a + b)];
        let ev = symmetric_eigenvalues(&symmetrised(&p, &pi)).unwrap();
        assert!((ev[0] - 1.0).abs() < 1e-14 && (ev[1] - (1.0 - a - b)).abs() < 1e-14, "{ev:?}");
    }

    #[test]
    fn lazy_three_cycle_has_eigenvalues_one_minus_q_plus_q_omega_k() {
        let q = 0.4;
        let p = DMatrix::from_fn(3, 3, |i, j| {
            if i == j {
                1.0 - q
            } else if j == (i + 1) % 3 {
                q
            } else {
                0.0
            }
        });
        let expected: Vec<Complex<f64>> = (0..3)
            .map(|k| Complex::new(1.0 - q, 0.0) + q * Complex::from_polar(1.0, 2.0 * PI * k as f64 / 3.0))
            .collect();
        let ev = general_eigenvalues(&p).unwrap();
        assert!(multiset_distance(&ev, &expected) < 1e-14, "{ev:?}");
        // Order: 1 first, then the pair with positive imaginary part first.
        assert!((ev[0] - 1.0).norm() < 1e-14 && ev[1].im > 0.0 && ev[2].im < 0.0, "{ev:?}");
    }

    #[test]
    fn kronecker_product_has_products_of_eigenvalues() {
        let (a1, b1, a2, b2) = (0.2, 0.5, 0.7, 0.1);
        let (p1, p2) = (two_state(a1, b1), two_state(a2, b2));
        let (m1, m2) = (1.0 - a1 - b1, 1.0 - a2 - b2);
        let mut expected = vec![1.0, m1, m2, m1 * m2];
        expected.sort_by(|x, y| y.total_cmp(x));
        let ev = general_eigenvalues(&p1.kronecker(&p2)).unwrap();
        let expected_c: Vec<Complex<f64>> = expected.iter().map(|&x| Complex::new(x, 0.0)).collect();
        assert!(multiset_distance(&ev, &expected_c) < 1e-14, "{ev:?}");
        let s1 = symmetrised(&p1, &[b1 / (a1 + b1), a1 / (a1 + b1)]);
        let s2 = symmetrised(&p2, &[b2 / (a2 + b2), a2 / (a2 + b2)]);
        let ev = symmetric_eigenvalues(&s1.kronecker(&s2)).unwrap();
        for (x, y) in ev.iter().zip(&expected) {
            assert!((x - y).abs() < 1e-14, "{ev:?} vs {expected:?}");
        }
    }

    #[test]
    fn symmetric_agrees_with_nalgebra_and_reads_only_the_lower_triangle() {
        let mut rng = Lcg(11);
        let n = 50;
        let mut s = DMatrix::zeros(n, n);
        for j in 0..n {
            for i in j..n {
                let v = rng.next() - 0.5;
                s[(i, j)] = v;
                s[(j, i)] = v;
            }
        }
        let mut reference: Vec<f64> = s.symmetric_eigenvalues().iter().copied().collect();
        reference.sort_by(|a, b| b.total_cmp(a));
        let ev = symmetric_eigenvalues(&s).unwrap();
        let worst = ev.iter().zip(&reference).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-10, "max difference {worst}");
        assert!(ev.windows(2).all(|w| w[0] >= w[1]));
        // Garbage (even NaN) above the diagonal changes nothing.
        for j in 1..n {
            for i in 0..j {
                s[(i, j)] = if (i + j) % 2 == 0 { f64::NAN } else { 1e3 };
            }
        }
        assert_eq!(symmetric_eigenvalues(&s).unwrap(), ev);
    }

    #[test]
    fn general_agrees_with_nalgebra_on_a_random_matrix() {
        let mut rng = Lcg(12);
        let n = 50;
        let a = DMatrix::from_fn(n, n, |_, _| rng.next() - 0.5);
        let reference: Vec<Complex<f64>> = a.complex_eigenvalues().iter().copied().collect();
        let ev = general_eigenvalues(&a).unwrap();
        assert_eq!(ev.len(), n);
        assert!(ev.iter().any(|z| z.im != 0.0), "a random matrix has complex eigenvalues");
        let d = multiset_distance(&ev, &reference);
        assert!(d < 1e-10, "multisets differ by {d}");
        assert!(ev.windows(2).all(|w| w[0].norm() >= w[1].norm()));
    }

    #[test]
    fn degenerate_sizes_and_bad_input() {
        assert_eq!(symmetric_eigenvalues(&DMatrix::zeros(0, 0)).unwrap(), Vec::<f64>::new());
        assert_eq!(general_eigenvalues(&DMatrix::zeros(0, 0)).unwrap(), Vec::<Complex<f64>>::new());
        let one = DMatrix::from_element(1, 1, 0.25);
        assert_eq!(symmetric_eigenvalues(&one).unwrap(), vec![0.25]);
        assert_eq!(general_eigenvalues(&one).unwrap(), vec![Complex::new(0.25, 0.0)]);
        assert!(general_eigenvalues(&DMatrix::zeros(2, 3)).is_err());
        assert!(symmetric_eigenvalues(&DMatrix::zeros(3, 2)).is_err());
        let mut p = two_state(0.1, 0.2);
        p[(0, 1)] = f64::NAN;
        assert!(general_eigenvalues(&p).unwrap_err().contains("(0, 1)"));
        p[(0, 1)] = 0.1;
        p[(1, 0)] = f64::INFINITY;
        assert!(symmetric_eigenvalues(&p).is_err());
        let e = slem_iterative(&p, &[0.5, 0.5], 1e-10, 100);
        assert!(e.slem.is_nan() && !e.converged && e.matvecs == 0);
        for n in [0, 1] {
            let e = slem_iterative(&DMatrix::from_element(n, n, 1.0), &vec![1.0; n], 1e-10, 100);
            assert_eq!(e, SlemEstimate { slem: 0.0, residual: 0.0, converged: true, matvecs: 0 });
        }
    }

    /// A random non-reversible chain on 300 states in three clusters: from cluster c the chain
    /// stays with probability 0.8 and moves to cluster c + 1 (mod 3) with 0.15, random weights
    /// inside; the cyclic drift between clusters gives a complex pair well above the bulk.
    fn clustered_chain(seed: u64) -> DMatrix<f64> {
        let n = 300;
        let mut rng = Lcg(seed);
        let cluster = |i: usize| i * 3 / n;
        let mut p = DMatrix::from_fn(n, n, |i, j| {
            let (ci, cj) = (cluster(i), cluster(j));
            let w = if ci == cj {
                0.8
            } else if cj == (ci + 1) % 3 {
                0.15
            } else {
                0.05
            };
            w * rng.next()
        });
        for i in 0..n {
            let s: f64 = p.row(i).sum();
            p.row_mut(i).iter_mut().for_each(|v| *v /= s);
        }
        p
    }

    #[test]
    fn slem_of_a_random_non_reversible_chain_matches_the_dense_spectrum() {
        let p = clustered_chain(5);
        let pi = law(&p);
        let exact = dense_slem(&p);
        let e = slem_iterative(&p, &pi, 1e-11, 5000);
        assert!(e.converged && (e.slem - exact).abs() < 1e-8, "{e:?} vs {exact}");
        assert!(e.residual < 1e-11 && e.matvecs <= 5000);
        // Small cycles force many thick restarts; the answer must not change.
        let e = arnoldi_slem(&p, &pi, 1e-11, 5000, 8, 3);
        assert!(e.converged && (e.slem - exact).abs() < 1e-8, "{e:?} vs {exact}");
        // A law that is not stationary (uniform; π varies by ~20% here) deflates the same
        // spectrum: the operator is (I − 1πᵀ)P on {πᵀx = 0}.
        assert!(pi.iter().any(|&v| (v * 300.0 - 1.0).abs() > 0.05));
        let e = slem_iterative(&p, &[1.0; 300], 1e-11, 5000);
        assert!(e.converged && (e.slem - exact).abs() < 1e-8, "uniform π: {e:?} vs {exact}");
    }

    #[test]
    fn slem_of_a_lazy_cycle_finds_the_complex_pair() {
        // Eigenvalues 1 − q + q e^{2πik/n}; SLEM = |1 − q + q e^{2πi/n}|, a conjugate pair.
        for (n, q, m, keep) in [(20, 0.3, KRYLOV_DIM, KEEP), (64, 0.3, KRYLOV_DIM, KEEP), (40, 0.5, 16, 6)] {
            let p = DMatrix::from_fn(n, n, |i, j| {
                if i == j {
                    1.0 - q
                } else if j == (i + 1) % n {
                    q
                } else {
                    0.0
                }
            });
            let exact = (Complex::new(1.0 - q, 0.0) + q * Complex::from_polar(1.0, 2.0 * PI / n as f64)).norm();
            assert!((dense_slem(&p) - exact).abs() < 1e-12);
            let e = arnoldi_slem(&p, &vec![1.0 / n as f64; n], 1e-12, 20_000, m, keep);
            assert!(e.converged && (e.slem - exact).abs() < 1e-8, "n = {n}, m = {m}: {e:?} vs {exact}");
        }
    }

    #[test]
    fn slem_of_a_reversible_chain_matches_the_symmetric_spectrum() {
        // P = W / rowsum(W) with symmetric W: reversible with π ∝ rowsum(W). Blocks 0 and 1
        // mostly exchange (an eigenvalue near −1), block 2 is nearly closed (one near +1).
        let n = 240;
        let mut rng = Lcg(9);
        let c = [[0.02, 1.0, 0.03], [1.0, 0.02, 0.03], [0.03, 0.03, 1.0]];
        let mut w = DMatrix::zeros(n, n);
        for i in 0..n {
            for j in 0..=i {
                let v = c[i * 3 / n][j * 3 / n] * rng.next();
                w[(i, j)] = v;
                w[(j, i)] = v;
            }
        }
        let sums: Vec<f64> = (0..n).map(|i| w.row(i).sum()).collect();
        let total: f64 = sums.iter().sum();
        let pi: Vec<f64> = sums.iter().map(|s| s / total).collect();
        let p = DMatrix::from_fn(n, n, |i, j| w[(i, j)] / sums[i]);
        let ev = symmetric_eigenvalues(&symmetrised(&p, &pi)).unwrap();
        assert!((ev[0] - 1.0).abs() < 1e-12);
        let exact = ev[1].abs().max(ev[n - 1].abs());
        assert!((dense_slem(&p) - exact).abs() < 1e-10);
        let e = slem_iterative(&p, &pi, 1e-11, 5000);
        assert!(e.converged && (e.slem - exact).abs() < 1e-8, "{e:?} vs {exact} (λ₂ {}, λ_min {})", ev[1], ev[n - 1]);
    }

    #[test]
    fn slem_stops_at_the_product_budget() {
        let p = clustered_chain(6);
        let pi = law(&p);
        let e = arnoldi_slem(&p, &pi, 0.0, 25, 8, 3);
        assert!(!e.converged && e.matvecs == 25 && e.slem.is_finite(), "{e:?}");
        let e = slem_iterative(&p, &pi, 1e-10, 0);
        assert!(!e.converged && e.matvecs == 0 && e.slem.is_nan(), "{e:?}");
    }
}
