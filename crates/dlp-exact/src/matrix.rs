//! Dense transition matrices of samplers, stationary laws, residuals and distances, the DULA
//! closed form π_α ∝ π·Z_α (spec §4.2) and Theorem 5.1's bias bounds in testable form (§4.8).
//!
//! Matrices are indexed by [`Space::index_of_state`] (first coordinate most significant).
//! Rows are built in parallel from the sampler's [`dlp_core::ExactKernel`]; each row is
//! computed independently, so matrices do not depend on the thread count.

use crate::ExactError;
use crate::enumerate::{all_states, checked_n_states, log_densities};
use dlp_core::TargetExt;
use dlp_core::capability::Conditionals;
use dlp_core::target::evaluated_coordinate_deltas;
use dlp_core::{Batch, Capabilities, DomainKind, EvalError, Sampler, Space, Target};
use nalgebra::{Complex, DMatrix, DVector, SymmetricEigen};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Largest space whose dense transition matrix is built (2^12 states, 128 MiB).
pub const MAX_MATRIX_STATES: u64 = 1 << 12;

/// A transition row must sum to 1 within this tolerance (the kernels sum ≤ 2^12 terms).
pub const ROW_SUM_TOL: f64 = 1e-9;

/// The matrix of phase `phase` of `sampler`'s exact kernel on `target`.
/// Errors if the sampler has no exact kernel, the space is too large or a row is not a
/// probability law over valid, distinct states.
pub fn kernel_matrix(target: &dyn Target, sampler: &dyn Sampler, phase: usize) -> Result<DMatrix<f64>, ExactError> {
    let space = target.space();
    let n = checked_n_states(space, MAX_MATRIX_STATES, "kernel_matrix")? as usize;
    if sampler.exact().is_none() {
        return Err(ExactError::NoExactKernel(sampler.name()));
    }
    let states = all_states(space, MAX_MATRIX_STATES)?;
    // One chain started at the first state: the sampler refuses here, with its own message,
    // what it refuses to run on this model (a parameter bound that depends on d, a domain it
    // does not support), instead of the rows failing one by one.
    sampler.start(target, &states[..space.d]).map_err(ExactError::Refused)?;
    let d = space.d;
    let rows: Vec<Vec<f64>> = (0..n)
        .into_par_iter()
        .map(|s| {
            // `ExactKernel` is not `Sync`; the sampler is, so each worker asks it afresh.
            let kernel = sampler.exact().expect("checked above");
            let x = &states[s * d..(s + 1) * d];
            let mut row = vec![0.0; n];
            let mut seen = vec![false; n];
            let mut sum = 0.0;
            for (y, p) in kernel.transition_row(target, x, phase)? {
                let bad = |why: String| ExactError::BadRow { sampler: sampler.name(), state: s, phase, why };
                if y.len() != d || space.check_states(&y).is_err() {
                    return Err(bad(format!("invalid next state {y:?}")));
                }
                let t = space.index_of_state(&y) as usize;
                if seen[t] {
                    return Err(bad(format!("state {y:?} listed twice")));
                }
                if !(p.is_finite() && p >= 0.0) {
                    return Err(bad(format!("probability {p} of {y:?}")));
                }
                seen[t] = true;
                row[t] = p;
                sum += p;
            }
            if (sum - 1.0).abs() > ROW_SUM_TOL {
                return Err(ExactError::BadRow {
                    sampler: sampler.name(),
                    state: s,
                    phase,
                    why: format!("probabilities sum to {sum}"),
                });
            }
            Ok(row)
        })
        .collect::<Result<_, _>>()?;
    Ok(DMatrix::from_fn(n, n, |i, j| rows[i][j]))
}

/// Number of phases of `sampler`'s exact kernel on `target`.
pub fn n_phases(target: &dyn Target, sampler: &dyn Sampler) -> Result<usize, ExactError> {
    sampler.exact().map(|k| k.n_phases(target)).ok_or_else(|| ExactError::NoExactKernel(sampler.name()))
}

/// The one-cycle kernel P_0 P_1 ⋯ P_{m−1} (m = number of phases; a systematic scan's sweep).
/// Its stationary law is the law the chain visits at multiples of m steps.
pub fn cycle_matrix(target: &dyn Target, sampler: &dyn Sampler) -> Result<DMatrix<f64>, ExactError> {
    let m = n_phases(target, sampler)?;
    let mut p = kernel_matrix(target, sampler, 0)?;
    for phase in 1..m {
        p = product(&p, &kernel_matrix(target, sampler, phase)?);
    }
    Ok(p)
}

/// a·b, through b's nonzeros when it is sparse (a systematic scan's single-site phases have k
/// entries per row): the dense product costs n³ = 6.9·10¹⁰ multiply-adds per phase at the
/// 2¹² states `dlp exact` accepts, the sparse one n·nnz(b). Column j of the product is
/// Σ_r b[r, j]·a[:, r], one column axpy per nonzero (columns are contiguous in nalgebra).
fn product(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let nnz = b.iter().filter(|v| **v != 0.0).count();
    if nnz * 8 > b.len() {
        return a * b;
    }
    let mut c = DMatrix::zeros(a.nrows(), b.ncols());
    for j in 0..b.ncols() {
        for r in 0..b.nrows() {
            let v = b[(r, j)];
            if v != 0.0 {
                c.column_mut(j).axpy(v, &a.column(r), 1.0);
            }
        }
    }
    c
}

/// The unique stationary law of a transition matrix: the support graph's closed classes first
/// ([`crate::ergodic::classes`]); with exactly one, GTH ([`stationary_gth`], subtraction-free,
/// accurate even when P ≈ I) on that class's block, zero on transient states. Errors
/// (`NoUniqueStationary`, naming the classes) when there are several closed classes: then
/// every mixture of their laws is stationary, and no single solve is divided by a singular
/// system.
pub fn stationary(p: &DMatrix<f64>) -> Result<Vec<f64>, ExactError> {
    let classes = crate::ergodic::classes(p);
    if !classes.unique_law() {
        return Err(ExactError::NoUniqueStationary(format!(
            "{} closed classes (a reducible chain)",
            classes.closed.len()
        )));
    }
    let class = &classes.closed[0];
    let law = stationary_gth(&DMatrix::from_fn(class.len(), class.len(), |i, j| p[(class[i], class[j])]))?;
    let mut pi = vec![0.0; p.nrows()];
    for (&s, q) in class.iter().zip(law) {
        pi[s] = q;
    }
    Ok(pi)
}

pub use crate::gth::stationary_gth;

/// The stationary law by LU: solves π(P − I) = 0 with Σπ = 1
/// (nalgebra, partial pivoting) on Pᵀ − I with its last row replaced by ones, then one step of
/// iterative refinement. Loses accuracy when P ≈ I (use [`stationary_gth`] there). Errors if
/// the system is singular (no unique stationary law).
pub fn stationary_lu(p: &DMatrix<f64>) -> Result<Vec<f64>, ExactError> {
    let n = p.nrows();
    let mut a = p.transpose() - DMatrix::identity(n, n);
    a.row_mut(n - 1).fill(1.0);
    let mut b = DVector::zeros(n);
    b[n - 1] = 1.0;
    let lu = a.clone().lu();
    let mut pi = lu.solve(&b).ok_or_else(|| ExactError::NoUniqueStationary("LU: singular system".into()))?;
    let r = &b - &a * &pi;
    if let Some(delta) = lu.solve(&r) {
        pi += delta;
    }
    if pi.iter().any(|v| !v.is_finite()) {
        return Err(ExactError::NoUniqueStationary("LU: non-finite solution".into()));
    }
    Ok(pi.iter().copied().collect())
}

/// ‖πP − π‖∞.
pub fn stationarity_residual(pi: &[f64], p: &DMatrix<f64>) -> f64 {
    let n = pi.len();
    (0..n).map(|j| ((0..n).map(|i| pi[i] * p[(i, j)]).sum::<f64>() - pi[j]).abs()).fold(0.0, f64::max)
}

/// max_{x,y} |π(x)P(x,y) − π(y)P(y,x)| (0 for a π-reversible kernel).
pub fn detailed_balance_residual(pi: &[f64], p: &DMatrix<f64>) -> f64 {
    let n = pi.len();
    let mut worst: f64 = 0.0;
    for i in 0..n {
        for j in i + 1..n {
            worst = worst.max((pi[i] * p[(i, j)] - pi[j] * p[(j, i)]).abs());
        }
    }
    worst
}

/// Detailed-balance residuals below this count as reversible in [`mixing`].
pub const REVERSIBLE_TOL: f64 = 1e-10;

/// Largest non-reversible matrix whose spectrum [`mixing`] takes from a dense solve (faer's
/// blocked Hessenberg–Schur, [`crate::spectrum::general_eigenvalues`]); larger ones get their
/// SLEM from restarted Arnoldi ([`crate::spectrum::slem_iterative`]). One core: 0.6–1.5 s at
/// 1024 states, 6–8 s at 2048 (README "Dependency notes"), so 1024 keeps `dlp exact` well
/// under 10 s; Arnoldi took under 1 s up to 4096.
pub const MAX_GENERAL_EIGEN_STATES: usize = 1024;

/// Largest reversible matrix whose spectrum [`mixing`] takes from a dense symmetric solve
/// ([`crate::spectrum::symmetric_eigenvalues`]: one core, 0.2 s at 1024 states, 2.3 s at
/// 2048, 20 s at 4096); larger ones, as non-reversible ones, by restarted Arnoldi.
pub const MAX_SYMMETRIC_EIGEN_STATES: usize = 2048;

/// Ritz residual at which [`mixing`]'s iterative path stops.
pub const ITERATIVE_TOL: f64 = 1e-10;

/// Products with P after which [`mixing`]'s iterative path stops, converged or not (a bound,
/// so `dlp exact` always finishes: 5,000 products of a 4096-state matrix are ≈ 8·10¹⁰
/// multiply-adds).
pub const ITERATIVE_MAX_PRODUCTS: usize = 5000;

/// Exact mixing rates of a transition matrix P with stationary law π (see [`mixing`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mixing {
    /// Whether P is π-reversible (detailed-balance residual below [`REVERSIBLE_TOL`] and
    /// π > 0 everywhere); then the spectrum is real and came from the symmetrised matrix.
    pub reversible: bool,
    /// Spectral gap 1 − λ₂ (λ₂ the second-largest eigenvalue); reversible kernels with a dense
    /// spectrum only.
    pub gap: Option<f64>,
    /// Absolute spectral gap 1 − max(|λ₂|, |λ_min|); reversible kernels only.
    pub abs_gap: Option<f64>,
    /// Second-largest eigenvalue modulus: the largest |λ| over the spectrum without the
    /// eigenvalue 1 of π (for a reversible kernel max(|λ₂|, |λ_min|) = 1 − `abs_gap`).
    pub slem: Option<f64>,
    /// Relaxation time 1/(1 − slem) (= 1/`abs_gap` when reversible); `None` when
    /// slem ≥ 1 (a periodic or reducible chain does not relax) or slem is `None`.
    pub relaxation_time: Option<f64>,
    /// How the spectrum was computed: "dense symmetric", "dense general", or the iterative
    /// method with its products, residual and whether it converged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Why the rates are undefined (a reducible or periodic chain: [`exact_report`] says so
    /// instead of printing numbers that describe no convergence); absent when they are defined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undefined: Option<String>,
}

impl Mixing {
    /// No rates, with the reason.
    pub fn undefined(why: String) -> Mixing {
        Mixing {
            reversible: false,
            gap: None,
            abs_gap: None,
            slem: None,
            relaxation_time: None,
            method: None,
            undefined: Some(why),
        }
    }
}

/// The eigenvalues of the symmetrised matrix S = D^{1/2} P D^{−1/2}, D = diag π, in
/// decreasing order. S is similar to P, and symmetric exactly when P is π-reversible
/// (π(x)P(x,y) = π(y)P(y,x)); it is symmetrised as ½(S + Sᵀ) against rounding and solved by
/// [`crate::spectrum::symmetric_eigenvalues`] (eigenvalues only). Requires π > 0.
pub fn symmetrised_eigenvalues(p: &DMatrix<f64>, pi: &[f64]) -> Result<Vec<f64>, ExactError> {
    let n = p.nrows();
    assert_eq!((n, n), (p.ncols(), pi.len()), "P must be n × n and π of length n");
    let r: Vec<f64> = pi.iter().map(|v| v.sqrt()).collect();
    let s = DMatrix::from_fn(n, n, |i, j| 0.5 * (r[i] * p[(i, j)] / r[j] + r[j] * p[(j, i)] / r[i]));
    crate::spectrum::symmetric_eigenvalues(&s).map_err(ExactError::Eigen)
}

/// The (complex) eigenvalues of a general square matrix in decreasing order of modulus
/// ([`crate::spectrum::general_eigenvalues`]).
pub fn general_eigenvalues(p: &DMatrix<f64>) -> Result<Vec<Complex<f64>>, ExactError> {
    crate::spectrum::general_eigenvalues(p).map_err(ExactError::Eigen)
}

/// Mixing rates of the transition matrix `p` with stationary law `pi` (the chain's own law —
/// for a biased sampler such as DULA its π_α, not the target). The chain must have a unique
/// law and be aperiodic ([`exact_report`] checks that first).
///
/// Reversible kernels (detailed-balance residual < [`REVERSIBLE_TOL`], π > 0) up to
/// [`MAX_SYMMETRIC_EIGEN_STATES`]: the real spectrum 1 = λ₁ ≥ λ₂ ≥ … ≥ λ_min of
/// [`symmetrised_eigenvalues`] gives `gap` = 1 − λ₂, `abs_gap` = 1 − max(|λ₂|, |λ_min|),
/// `slem` = 1 − `abs_gap` and `relaxation_time` = 1/`abs_gap`. Other kernels up to
/// [`MAX_GENERAL_EIGEN_STATES`]: the spectrum of [`general_eigenvalues`] without the eigenvalue
/// nearest 1 (the Perron root) gives `slem` = max |λ| and `relaxation_time` = 1/(1 − slem);
/// `gap` and `abs_gap` are `None` (the real-part gap of a non-normal matrix does not bound the
/// mixing time). Larger matrices: `slem` from restarted Arnoldi on P − 1πᵀ, bounded by
/// [`ITERATIVE_MAX_PRODUCTS`] products (`method` says whether it converged). A failed
/// eigensolve gives [`Mixing::undefined`] with the solver's message.
pub fn mixing(p: &DMatrix<f64>, pi: &[f64]) -> Mixing {
    let n = p.nrows();
    let reversible = pi.iter().all(|&v| v > 0.0) && detailed_balance_residual(pi, p) < REVERSIBLE_TOL;
    let rates = if reversible && n <= MAX_SYMMETRIC_EIGEN_STATES {
        mixing_reversible(p, pi)
    } else if !reversible && n <= MAX_GENERAL_EIGEN_STATES {
        mixing_general(p)
    } else {
        Ok(mixing_iterative(p, pi, reversible))
    };
    rates.unwrap_or_else(|e| Mixing::undefined(e.to_string()))
}

/// [`mixing`]'s symmetric path, whatever the residual (the caller vouches for reversibility).
pub fn mixing_reversible(p: &DMatrix<f64>, pi: &[f64]) -> Result<Mixing, ExactError> {
    let ev = symmetrised_eigenvalues(p, pi)?;
    let (l2, lmin) = match ev.len() {
        0 | 1 => (0.0, 0.0),
        n => (ev[1], ev[n - 1]),
    };
    let slem = l2.abs().max(lmin.abs());
    let abs_gap = 1.0 - slem;
    Ok(Mixing {
        reversible: true,
        gap: Some(1.0 - l2),
        abs_gap: Some(abs_gap),
        slem: Some(slem),
        relaxation_time: (abs_gap > 0.0).then(|| 1.0 / abs_gap),
        method: Some("dense symmetric".into()),
        undefined: None,
    })
}

/// [`mixing`]'s general path: `slem` from the complex spectrum, `gap`/`abs_gap` `None`.
pub fn mixing_general(p: &DMatrix<f64>) -> Result<Mixing, ExactError> {
    let mut ev = general_eigenvalues(p)?;
    // Drop the Perron root: the eigenvalue nearest 1.
    if let Some(k) = (0..ev.len()).min_by(|&a, &b| (ev[a] - 1.0).norm().total_cmp(&(ev[b] - 1.0).norm())) {
        ev.remove(k);
    }
    let slem = ev.iter().map(|z| z.norm()).fold(0.0, f64::max);
    Ok(Mixing {
        reversible: false,
        gap: None,
        abs_gap: None,
        slem: Some(slem),
        relaxation_time: (slem < 1.0).then(|| 1.0 / (1.0 - slem)),
        method: Some("dense general".into()),
        undefined: None,
    })
}

/// [`mixing`]'s iterative path: `slem` by restarted Arnoldi, `abs_gap` = 1 − slem for a
/// reversible kernel; at most [`ITERATIVE_MAX_PRODUCTS`] products.
pub fn mixing_iterative(p: &DMatrix<f64>, pi: &[f64], reversible: bool) -> Mixing {
    let est = crate::spectrum::slem_iterative(p, pi, ITERATIVE_TOL, ITERATIVE_MAX_PRODUCTS);
    let method = format!(
        "restarted Arnoldi on P − 1πᵀ: {} products, Ritz residual {:.1e}{}",
        est.matvecs,
        est.residual,
        if est.converged { "" } else { " (not converged: the SLEM is an estimate)" }
    );
    let slem = est.slem.is_finite().then_some(est.slem);
    Mixing {
        reversible,
        gap: None,
        abs_gap: slem.filter(|_| reversible).map(|s| 1.0 - s),
        slem,
        relaxation_time: slem.filter(|&s| s < 1.0).map(|s| 1.0 / (1.0 - s)),
        method: Some(method),
        undefined: None,
    }
}

/// Largest entrywise difference of two matrices of the same shape.
pub fn max_abs_diff(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    assert_eq!(a.shape(), b.shape(), "matrix shapes differ");
    a.iter().zip(b.iter()).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

pub use dlp_core::stats::{l1_distance, total_variation};

/// Per-coordinate step sizes α·h_i (h ≡ 1 without a preconditioner).
fn step_sizes(d: usize, alpha: f64, precond: Option<&[f64]>) -> Vec<f64> {
    (0..d).map(|i| alpha * precond.map_or(1.0, |h| h[i])).collect()
}

/// log Z_α(x) = Σ_i log Σ_{v∈X_i} exp(½ g_i(x)(v − x_i) − (v − x_i)²/(2αh_i)) for every
/// state in index order (spec §1.3; one-hot form for categorical spaces, §1.6:
/// ½(G_{i,k} − G_{i,c_i}) − [k ≠ c_i]/(αh_i)). Written from the spec, independent of the
/// samplers' arithmetic (plain exp/ln, max-shifted sums).
pub fn dlp_log_normalisers(target: &dyn Target, alpha: f64, precond: Option<&[f64]>) -> Result<Vec<f64>, ExactError> {
    let space = target.space();
    let states = all_states(space, crate::enumerate::MAX_PROBS)?;
    let d = space.d;
    let a = step_sizes(d, alpha, precond);
    let out = states
        .par_chunks(d)
        .map(|x| {
            let mut g = vec![0.0; space.grad_len()];
            target.log_density_grad(x, &mut g)?;
            Ok(log_z_alpha(space, x, &g, &a))
        })
        .collect::<Result<_, ExactError>>()?;
    Ok(out)
}

/// log Z_α(x) from the gradient `g` at x and per-coordinate step sizes `a` (α·h_i).
fn log_z_alpha(space: &Space, x: &[u32], g: &[f64], a: &[f64]) -> f64 {
    let (k, w) = (space.k(), space.grad_width());
    let mut log_z = 0.0;
    for i in 0..space.d {
        let c = x[i] as usize;
        if space.is_binary_like() {
            // Z_i = 1 + e^ℓ with the flip logit ℓ = ½ g_i (1 − 2x_i) − 1/(2α h_i) (spec §1.4).
            log_z += binary_log_z_term(g[i], x[i], a[i]);
            continue;
        }
        let logit = |v: usize| {
            if space.kind == DomainKind::Categorical {
                let moved = if v == c { 0.0 } else { 1.0 };
                0.5 * (g[i * w + v] - g[i * w + c]) - moved / a[i]
            } else {
                let delta = space.coordinate(v as u32) - space.coordinate(c as u32);
                0.5 * g[i] * delta - delta * delta / (2.0 * a[i])
            }
        };
        // Two passes (max, then shifted sum) instead of a buffer: this runs 2^25 × d times
        // when enumerating π_α of the 5×5 Ising.
        let m = (0..k).map(logit).fold(f64::NEG_INFINITY, f64::max);
        log_z += m + (0..k).map(|v| (logit(v) - m).exp()).sum::<f64>().ln();
    }
    log_z
}

/// The target whose density is DULA's closed-form law, f(x) + log Z_α(x) (spec §4.2), so
/// that [`crate::enumerate()`] gives E_{π_α}[·] on spaces too large for a matrix (the 5×5
/// Ising's DULA plateau, spec §4.2 table). Not differentiable: its gradient is NaN.
pub struct DulaLaw<'t> {
    /// The target π.
    pub target: &'t dyn Target,
    /// Per-coordinate step sizes α·h_i.
    pub step_sizes: Vec<f64>,
}

impl<'t> DulaLaw<'t> {
    /// DULA with step size α and optional preconditioner h on `target`.
    pub fn new(target: &'t dyn Target, alpha: f64, precond: Option<&[f64]>) -> Self {
        DulaLaw { target, step_sizes: step_sizes(target.space().d, alpha, precond) }
    }
}

impl Target for DulaLaw<'_> {
    fn space(&self) -> &Space {
        self.target.space()
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        out: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        if !batch.is_full() {
            return Err(EvalError::NoData);
        }
        let space = self.target.space();
        let gl = space.grad_len();
        let mut g = vec![0.0; out.len() * gl];
        self.target.log_density_grad_batch(xs, out, &mut g)?;
        for ((x, o), gx) in xs.chunks(space.d).zip(out.iter_mut()).zip(g.chunks(gl)) {
            *o += log_z_alpha(space, x, gx, &self.step_sizes);
        }
        if let Some(grad) = grad {
            grad.fill(f64::NAN);
        }
        Ok(())
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities { conditionals: Some(self), ..Capabilities::default() }
    }
}

/// Coordinate differences by evaluation; only the cheap flips are DULA's own.
impl Conditionals for DulaLaw<'_> {
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError> {
        evaluated_coordinate_deltas(self, x, i, out)
    }

    /// Binary spaces over a target with cheap flips (the lattice Ising): Δf plus the change
    /// of log Z_α, recomputed only for the coordinates whose flip logit changed (i and the
    /// coordinates whose gradient entry changed, i.e. i's neighbours). This lets
    /// [`crate::enumerate()`] walk π_α in Gray-code order: two sparse gradients and about
    /// 2·(degree + 1) log-terms per state instead of a batch gradient and d log-terms (the
    /// 2²⁵-state law of the 5×5 Ising took ~88 s per α that way).
    fn cheap_flip_delta(&self, x: &[u32], i: usize) -> Option<f64> {
        let space = self.target.space();
        if !space.is_binary_like() {
            return None;
        }
        let df = self.target.cheap_flip_delta(x, i)?;
        let d = space.d;
        FLIP_SCRATCH.with_borrow_mut(|(y, gx, gy)| {
            y.clear();
            y.extend_from_slice(x);
            y[i] ^= 1;
            gx.resize(d, 0.0);
            gy.resize(d, 0.0);
            // A failure falls back to the caller's plain evaluation, which reports it.
            self.target.log_density_grad(x, gx).ok()?;
            self.target.log_density_grad(y, gy).ok()?;
            let mut dz = 0.0;
            for j in 0..d {
                if j == i || gx[j] != gy[j] {
                    let a = self.step_sizes[j];
                    dz += binary_log_z_term(gy[j], y[j], a) - binary_log_z_term(gx[j], x[j], a);
                }
            }
            Some(df + dz)
        })
    }
}

thread_local! {
    /// Flipped state and the two gradients of [`DulaLaw`]'s flip delta (called 2^d times by
    /// enumeration, in parallel).
    static FLIP_SCRATCH: std::cell::RefCell<(Vec<u32>, Vec<f64>, Vec<f64>)> = const {
        std::cell::RefCell::new((Vec::new(), Vec::new(), Vec::new()))
    };
}

/// log Z_i = softplus(ℓ) of a binary coordinate with bit `c`, gradient entry `g` and step
/// size `a`: the flip logit ℓ = ½ g (1 − 2c) − 1/(2a) (spec §1.4).
fn binary_log_z_term(g: f64, c: u32, a: f64) -> f64 {
    let l = 0.5 * g * (1.0 - 2.0 * c as f64) - 0.5 / a;
    l.max(0.0) + (-l.abs()).exp().ln_1p()
}

/// The DULA stationary law π_α ∝ exp(f)·Z_α (spec §4.2). Exact when f is log-quadratic in
/// the sampler coordinates and the gradient is that of the quadratic (any diagonal);
/// otherwise only a reference point (it is not DULA's law).
pub fn dula_closed_form(target: &dyn Target, alpha: f64, precond: Option<&[f64]>) -> Result<Vec<f64>, ExactError> {
    let f = log_densities(target)?;
    let lz = dlp_log_normalisers(target, alpha, precond)?;
    Ok(normalise_log(&f.iter().zip(&lz).map(|(a, b)| a + b).collect::<Vec<_>>()))
}

/// exp(v − logsumexp(v)).
fn normalise_log(v: &[f64]) -> Vec<f64> {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = v.iter().map(|x| (x - m).exp()).sum();
    v.iter().map(|x| (x - m).exp() / s).collect()
}

/// Theorem 5.1 in testable form (spec §4.8 items 2–4) for a log-quadratic target
/// f(x) = xᵀWx + bᵀx on an integer-valued domain (binary, spin-as-bits, ordinal).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Thm51Bounds {
    /// ‖π_α − π‖₁ from the closed form.
    pub bias_l1: f64,
    /// Item 2: 2(Ẑ − 1), Ẑ = Σ_x π(x) Z_α(x).
    pub hat_z_bound: f64,
    /// λ_min of the symmetric part of W.
    pub lambda_min: f64,
    /// Item 3 (only when 1/α + λ_min ≥ 0):
    /// (2/Z) e^{−λ_min/2} e^{−1/(2α)} Σ_{x≠x'} e^{½(f(x)+f(x'))}.
    pub eigen_bound: Option<f64>,
    /// Item 4 (binary/spin only): (1 + e^{(G − 1/α)/2})^D − 1, G = max_{x,i} |g_i(x)|.
    pub binary_bound: Option<f64>,
}

/// Computes [`Thm51Bounds`] for `target` with W given in the sampler coordinates (d × d
/// row-major; only its symmetric part matters).
///
/// Assumptions, checked here: the domain is integer-valued and not categorical (so a move
/// δ ≠ 0 has ‖δ‖² ≥ 1); `target`'s f is xᵀWx + bᵀx with gradient (W + Wᵀ)x + b — the caller
/// vouches for that (e.g. `dlp_core::testing::Quadratic`). Proofs (π_α = π·Z_α/Ẑ, Z_α ≥ 1
/// because "stay" contributes e⁰ per coordinate):
/// 2. Σπ|Z_α/Ẑ − 1| ≤ Σπ(|Z_α − 1| + |Ẑ − 1|)/Ẑ = 2(Ẑ − 1)/Ẑ ≤ 2(Ẑ − 1).
/// 3. Ẑ − 1 = (1/Z)Σ_{x≠x'} exp(½(f+f') − ½δᵀWδ − ‖δ‖²/(2α)) and
///    −½δᵀWδ − ‖δ‖²/(2α) ≤ −½‖δ‖²(λ_min + 1/α) ≤ −½(λ_min + 1/α) when λ_min + 1/α ≥ 0.
/// 4. Z_i ≤ 1 + e^{(G − 1/α)/2} =: B^{1/D}, so Z_α/Ẑ ∈ [1/B, B] and |Z_α/Ẑ − 1| ≤ B − 1.
pub fn thm51_bounds(target: &dyn Target, w: &[f64], alpha: f64) -> Result<Thm51Bounds, ExactError> {
    let space = target.space();
    let d = space.d;
    if space.kind == DomainKind::Categorical {
        return Err(ExactError::Assumption("Theorem 5.1 bounds: categorical (one-hot) domains are not covered".into()));
    }
    if w.len() != d * d {
        return Err(ExactError::Assumption(format!("W has {} entries, expected d² = {}", w.len(), d * d)));
    }
    let f = log_densities(target)?;
    let pi = normalise_log(&f);
    let lz = dlp_log_normalisers(target, alpha, None)?;
    let pi_a = normalise_log(&f.iter().zip(&lz).map(|(a, b)| a + b).collect::<Vec<_>>());
    let hat_z: f64 = pi.iter().zip(&lz).map(|(p, l)| p * l.exp()).sum();
    let wsym = DMatrix::from_fn(d, d, |i, j| 0.5 * (w[i * d + j] + w[j * d + i]));
    let lambda_min = SymmetricEigen::new(wsym).eigenvalues.iter().copied().fold(f64::INFINITY, f64::min);
    let eigen_bound = (1.0 / alpha + lambda_min >= 0.0).then(|| {
        let m = f.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let half: f64 = f.iter().map(|x| (0.5 * (x - m)).exp()).sum();
        let full: f64 = f.iter().map(|x| (x - m).exp()).sum();
        2.0 * (-0.5 * lambda_min - 0.5 / alpha).exp() * (half * half - full) / full
    });
    let binary_bound = if space.is_binary_like() {
        let states = all_states(space, crate::enumerate::MAX_PROBS)?;
        let mut g = vec![0.0; d];
        let mut big_g: f64 = 0.0;
        for x in states.chunks(d) {
            target.log_density_grad(x, &mut g)?;
            big_g = g.iter().fold(big_g, |m, v| m.max(v.abs()));
        }
        Some((1.0 + (0.5 * (big_g - 1.0 / alpha)).exp()).powi(d as i32) - 1.0)
    } else {
        None
    };
    Ok(Thm51Bounds {
        bias_l1: l1_distance(&pi_a, &pi),
        hat_z_bound: 2.0 * (hat_z - 1.0),
        lambda_min,
        eigen_bound,
        binary_bound,
    })
}

/// What `dlp exact` reports for one sampler on one model.
///
/// The chain's class structure comes first ([`ExactReport::ergodicity`]); `stationary` and
/// `total_variation` are present only when the stationary law is unique (one closed class).
/// Otherwise each closed class carries its own law, and `uniform_start_limit` is the law a
/// chain started uniformly at random tends to (what `dlp sample` draws from by default) — a
/// start-dependent limit, not a property of the kernel.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExactReport {
    /// The sampler's name.
    pub sampler: String,
    /// Number of states.
    pub n_states: usize,
    /// Phases of the kernel (the law below is that of the one-cycle kernel).
    pub n_phases: usize,
    /// The states in index order, as user values (−1/+1 for spin).
    pub states: Vec<Vec<i64>>,
    /// The target π.
    pub target: Vec<f64>,
    /// Irreducibility, aperiodicity, the closed classes and their laws.
    pub ergodicity: crate::ergodic::Ergodicity,
    /// The sampler's stationary law (of the one-cycle kernel), when it is unique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stationary: Option<Vec<f64>>,
    /// Total variation between the stationary law and π, when the law is unique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_variation: Option<f64>,
    /// When the law is not unique: the limit of a chain started uniformly at random (Cesàro
    /// limit for periodic classes), Σ_c P(end in c)·law_c.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uniform_start_limit: Option<Vec<f64>>,
    /// Total variation between [`ExactReport::uniform_start_limit`] and π.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uniform_start_total_variation: Option<f64>,
    /// ‖πP − π‖∞ with π the target (≈ 1e−16 for an exact sampler).
    pub target_residual: f64,
    /// max over the closed classes of ‖π̂P − π̂‖∞, π̂ the class's solved law (embedded):
    /// the accuracy of the solves.
    pub solve_residual: f64,
    /// max |π(x)P(x,y) − π(y)P(y,x)| with π the target (0 for a π-reversible kernel).
    pub detailed_balance_residual: f64,
    /// Which matrix [`ExactReport::mixing`] describes: the one-step kernel, or for a
    /// kernel of several phases (a systematic scan) the product of the phase matrices.
    pub mixing_kernel: String,
    /// Spectral gap, absolute gap, SLEM and relaxation time of that matrix with respect to
    /// its own stationary law ([`mixing`]); undefined, with the reason, for a chain without a
    /// unique law or with a period.
    pub mixing: Mixing,
}

/// Builds the one-cycle matrix of `sampler` on `target`, finds its class structure, solves
/// each closed class for its law, compares with π where the law is unique and computes the
/// matrix's [`Mixing`] rates where they are defined.
pub fn exact_report(target: &dyn Target, sampler: &dyn Sampler) -> Result<ExactReport, ExactError> {
    let space: &Space = target.space();
    let p = cycle_matrix(target, sampler)?;
    let pi = crate::enumerate::probabilities(target)?;
    let n = pi.len();
    let classes = crate::ergodic::classes(&p);
    let laws = crate::ergodic::class_laws(&p, &classes)?;
    let ergodicity = crate::ergodic::ergodicity(space, &p, &pi, &classes, &laws);
    let embedded = |c: usize| {
        let mut v = vec![0.0; n];
        for (&s, q) in classes.closed[c].iter().zip(&laws[c]) {
            v[s] = *q;
        }
        v
    };
    let solve_residual = (0..laws.len()).map(|c| stationarity_residual(&embedded(c), &p)).fold(0.0, f64::max);
    let stationary = classes.unique_law().then(|| embedded(0));
    let limit = if classes.unique_law() { None } else { crate::ergodic::uniform_start_limit(n, &ergodicity) };
    let states = all_states(space, MAX_MATRIX_STATES)?;
    let m = n_phases(target, sampler)?;
    let mixing_kernel = if m == 1 {
        "P: one step".to_string()
    } else {
        format!("P_0 P_1 ⋯ P_{}: one sweep, the product of the {m} phase matrices", m - 1)
    };
    let mixing = match &stationary {
        Some(law) if classes.aperiodic() => mixing(&p, law),
        Some(_) => Mixing::undefined(format!(
            "the chain is periodic (period {}): it does not converge, so it has no relaxation time and its \
             spectrum has |λ| = 1 besides the Perron root",
            classes.periods[0]
        )),
        None => Mixing::undefined(format!(
            "the chain has {} closed classes: the eigenvalue 1 is repeated, so there is no spectral gap and the \
             limit depends on the start",
            classes.closed.len()
        )),
    };
    Ok(ExactReport {
        sampler: sampler.name(),
        n_states: n,
        n_phases: m,
        states: states.chunks(space.d).map(|x| x.iter().map(|&c| space.value(c)).collect()).collect(),
        total_variation: stationary.as_ref().map(|law| total_variation(law, &pi)),
        uniform_start_total_variation: limit.as_ref().map(|l| total_variation(l, &pi)),
        uniform_start_limit: limit,
        target_residual: stationarity_residual(&pi, &p),
        solve_residual,
        detailed_balance_residual: detailed_balance_residual(&pi, &p),
        mixing_kernel,
        mixing,
        ergodicity,
        stationary,
        target: pi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    #[test]
    fn stationary_solves_a_two_state_chain() {
        let p = DMatrix::from_row_slice(2, 2, &[0.9, 0.1, 0.3, 0.7]);
        let pi = stationary(&p).unwrap();
        assert!((pi[0] - 0.75).abs() < 1e-15 && (pi[1] - 0.25).abs() < 1e-15);
        assert!(stationarity_residual(&pi, &p) < 1e-15);
        assert!(detailed_balance_residual(&pi, &p) < 1e-15);
        let reducible = DMatrix::identity(2, 2);
        assert!(stationary(&reducible).is_err());
    }

    fn dula(alpha: f64) -> Box<dyn Sampler> {
        let params = dlp_samplers::SamplerParams { step_size: Some(alpha), ..Default::default() };
        dlp_samplers::build_sampler("dula", &params).unwrap()
    }

    #[test]
    fn gth_solves_spec_4_3_matrices() {
        let t = Quadratic::spec_tiny();
        // DULA row (0,0,0) from spec §4.3, then the stationary law π_α.
        let p = kernel_matrix(&t, dula(0.5).as_ref(), 0).unwrap();
        let row = [0.3926572360, 0.1636838884, 0.1017925642, 0.0424334539, 0.1678275658, 0.0699609380, 0.0435076619];
        for (j, q) in row.iter().enumerate() {
            assert!((p[(0, j)] - q).abs() < 1e-9);
        }
        let pi_a = dlp_core::testing::SPEC_TINY_DULA_PI;
        for solve in [stationary_gth, stationary_lu, stationary] {
            let law = solve(&p).unwrap();
            assert!(law.iter().zip(pi_a).all(|(a, b)| (a - b).abs() < 1e-10), "{law:?}");
            assert!((l1_distance(&law, &crate::probabilities(&t).unwrap()) - 0.1926361355).abs() < 1e-9);
        }
        // DMALA is exact: its stationary law is π of spec §4.3.
        let params = dlp_samplers::SamplerParams { step_size: Some(0.5), ..Default::default() };
        let dmala = dlp_samplers::build_sampler("dmala", &params).unwrap();
        let law = stationary_gth(&kernel_matrix(&t, dmala.as_ref(), 0).unwrap()).unwrap();
        let pi = dlp_core::testing::SPEC_TINY_PI;
        assert!(law.iter().zip(pi).all(|(a, b)| (a - b).abs() < 1e-10), "{law:?}");
        // Reducible: two closed classes.
        let two = DMatrix::from_row_slice(3, 3, &[0.5, 0.5, 0.0, 0.5, 0.5, 0.0, 0.0, 0.0, 1.0]);
        assert!(stationary_gth(&two).is_err() && stationary(&two).is_err());
    }

    #[test]
    fn gth_is_accurate_when_p_is_nearly_identity() {
        // 3×3 Ising DULA at α = 0.02: flip probabilities ~e^−25, so P ≈ I to 1e−11 and LU on
        // Pᵀ − I cancels; GTH must still match the closed form π_α ∝ π·Z_α (spec §4.2).
        let t = dlp_models::IsingModel::paper_lattice(3, 0.1, 0.2);
        for alpha in [0.02, 0.05] {
            let p = kernel_matrix(&t, dula(alpha).as_ref(), 0).unwrap();
            let closed = dula_closed_form(&t, alpha, None).unwrap();
            let gth = stationary_gth(&p).unwrap();
            let err = l1_distance(&gth, &closed);
            assert!(err < 1e-12, "α = {alpha}: ‖GTH − closed form‖₁ = {err:e}");
            let lu = l1_distance(&stationary_lu(&p).unwrap(), &closed);
            eprintln!("α = {alpha}: GTH error {err:e}, LU error {lu:e}");
        }
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() < tol
    }

    #[test]
    fn mixing_of_a_two_state_chain_has_lambda_2_equal_to_1_minus_a_minus_b() {
        // P = [[1−a, a], [b, 1−b]]: eigenvalues 1 and 1 − a − b, π = (b, a)/(a + b).
        for (a, b) in [(0.3, 0.1), (0.9, 0.8), (0.05, 0.02)] {
            let p = DMatrix::from_row_slice(2, 2, &[1.0 - a, a, b, 1.0 - b]);
            let pi = [b / (a + b), a / (a + b)];
            let l2: f64 = 1.0 - a - b;
            let m = mixing(&p, &pi);
            assert!(m.reversible, "{m:?}");
            assert!(close(m.gap.unwrap(), a + b, 1e-14), "{m:?}");
            assert!(close(m.abs_gap.unwrap(), 1.0 - l2.abs(), 1e-14), "{m:?}");
            assert!(close(m.slem.unwrap(), l2.abs(), 1e-14), "{m:?}");
            assert!(close(m.relaxation_time.unwrap(), 1.0 / (1.0 - l2.abs()), 1e-10), "{m:?}");
            let g = mixing_general(&p).unwrap();
            assert!(!g.reversible && g.gap.is_none() && close(g.slem.unwrap(), l2.abs(), 1e-14), "{g:?}");
        }
    }

    #[test]
    fn mixing_of_a_three_cycle_uses_the_complex_spectrum() {
        // Lazy 3-cycle P = (1 − q)I + qC (C: 0 → 1 → 2 → 0): π uniform, not reversible,
        // eigenvalues 1 − q + q·ω^k with ω = e^{2πi/3}; |λ|² = (1 − 3q/2)² + 3q²/4.
        let pi = [1.0 / 3.0; 3];
        for q in [0.5, 0.2, 0.9] {
            let p = DMatrix::from_fn(3, 3, |i, j| {
                if i == j {
                    1.0 - q
                } else if j == (i + 1) % 3 {
                    q
                } else {
                    0.0
                }
            });
            let ev = general_eigenvalues(&p).unwrap();
            assert!(close(ev[0].re, 1.0, 1e-14) && close(ev[0].im, 0.0, 1e-14), "{ev:?}");
            let (re, im) = (1.0 - 1.5 * q, q * 3f64.sqrt() / 2.0);
            for z in &ev[1..] {
                assert!(close(z.re, re, 1e-14) && close(z.im.abs(), im, 1e-14), "q = {q}: {ev:?}");
            }
            assert!(ev[1].im * ev[2].im < 0.0, "a conjugate pair: {ev:?}");
            let m = mixing(&p, &pi);
            let slem = (re * re + im * im).sqrt();
            assert!(!m.reversible && m.gap.is_none() && m.abs_gap.is_none(), "{m:?}");
            assert!(close(m.slem.unwrap(), slem, 1e-14), "q = {q}: {m:?}");
            assert!(close(m.relaxation_time.unwrap(), 1.0 / (1.0 - slem), 1e-12), "{m:?}");
        }
        // The pure cycle (q = 1) is periodic: |ω| = 1, no relaxation.
        let c = DMatrix::from_row_slice(3, 3, &[0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
        let m = mixing(&c, &pi);
        assert!(close(m.slem.unwrap(), 1.0, 1e-14) && m.relaxation_time.is_none(), "{m:?}");
    }

    #[test]
    fn the_iterative_path_agrees_with_the_dense_ones() {
        // Non-reversible: a random stochastic matrix with a banded support of width 7.
        let n = 300;
        let raw = DMatrix::from_fn(n, n, |i, j| {
            let d = (j + n - i) % n;
            if d <= 6 { 1.0 + ((i * 31 + j * 17) % 13) as f64 } else { 0.0 }
        });
        let p = DMatrix::from_fn(n, n, |i, j| raw[(i, j)] / raw.row(i).sum());
        let pi = stationary(&p).unwrap();
        let dense = mixing_general(&p).unwrap();
        let it = mixing_iterative(&p, &pi, false);
        assert!(close(dense.slem.unwrap(), it.slem.unwrap(), 1e-8), "{dense:?} vs {it:?}");
        assert!(it.method.as_ref().unwrap().starts_with("restarted Arnoldi"), "{it:?}");
        assert!(!it.method.as_ref().unwrap().contains("not converged"), "{it:?}");
        // Reversible: random-scan Gibbs on 8 coupled bits.
        let w: Vec<f64> =
            (0..64).map(|k| if k / 8 == k % 8 { 0.0 } else { 0.4 * ((k * 7 % 11) as f64 - 5.0) / 5.0 }).collect();
        let t = Quadratic::new(Space::binary(8), w, vec![0.1; 8]);
        let gibbs = dlp_samplers::build_sampler("gibbs", &Default::default()).unwrap();
        let p = cycle_matrix(&t, gibbs.as_ref()).unwrap();
        let pi = crate::probabilities(&t).unwrap();
        let (sym, it) = (mixing_reversible(&p, &pi).unwrap(), mixing_iterative(&p, &pi, true));
        assert!(
            close(sym.slem.unwrap(), it.slem.unwrap(), 1e-8) && close(sym.abs_gap.unwrap(), it.abs_gap.unwrap(), 1e-8)
        );
    }

    /// P_1 ⊗ P_2 ⊗ ⋯ for the first coordinate most significant (as `index_of_state`).
    fn kron(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
        a.kronecker(b)
    }

    #[test]
    fn random_scan_on_independent_coordinates_has_gap_min_over_d() {
        // Random-scan Gibbs on d independent bits: each coordinate's kernel resamples from its
        // marginal (rank one, eigenvalues 1, 0), so P = (1/d)Σ_i I ⊗ ⋯ ⊗ Π_i ⊗ ⋯ ⊗ I has
        // eigenvalues 1 − k/d, k = 0..d, with multiplicity C(d, k): gap = abs gap = 1/d.
        let d = 3;
        let t = Quadratic::new(Space::binary(d), vec![0.0; d * d], vec![0.4, -1.1, 0.7]);
        let gibbs = dlp_samplers::build_sampler("gibbs", &Default::default()).unwrap();
        let p = cycle_matrix(&t, gibbs.as_ref()).unwrap();
        let pi = crate::probabilities(&t).unwrap();
        let m = mixing(&p, &pi);
        assert!(m.reversible, "{m:?}");
        assert!(close(m.gap.unwrap(), 1.0 / 3.0, 1e-12) && close(m.abs_gap.unwrap(), 1.0 / 3.0, 1e-12), "{m:?}");
        assert!(close(m.relaxation_time.unwrap(), 3.0, 1e-10), "{m:?}");
        let ev = symmetrised_eigenvalues(&p, &pi).unwrap();
        let expect = [1.0, 2.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.0];
        assert!(ev.iter().zip(expect).all(|(a, b)| close(*a, b, 1e-12)), "{ev:?}");

        // Product chain of lazy two-state kernels K_i (λ = 1 − a_i − b_i): random scan has
        // eigenvalues (1/d)Σ_i μ_i, μ_i ∈ {1, 1 − a_i − b_i}, so gap = min_i (a_i + b_i) / d.
        let ab = [(0.1, 0.2), (0.05, 0.1), (0.3, 0.25)];
        let ks: Vec<DMatrix<f64>> =
            ab.iter().map(|&(a, b)| DMatrix::from_row_slice(2, 2, &[1.0 - a, a, b, 1.0 - b])).collect();
        let eye = DMatrix::<f64>::identity(2, 2);
        let mut p = DMatrix::zeros(8, 8);
        for i in 0..d {
            let f = |j: usize| if j == i { ks[j].clone() } else { eye.clone() };
            p += kron(&kron(&f(0), &f(1)), &f(2)) / d as f64;
        }
        let pis: Vec<[f64; 2]> = ab.iter().map(|&(a, b)| [b / (a + b), a / (a + b)]).collect();
        let pi: Vec<f64> = (0..8).map(|s| (0..d).map(|i| pis[i][(s >> (d - 1 - i)) & 1]).product()).collect();
        let m = mixing(&p, &pi);
        let gap = ab.iter().map(|(a, b)| a + b).fold(f64::INFINITY, f64::min) / d as f64;
        assert!(m.reversible && close(m.gap.unwrap(), gap, 1e-14), "{m:?} vs {gap}");
        // All μ_i > 0, so λ_min > 0 and the absolute gap is the gap.
        assert!(close(m.abs_gap.unwrap(), gap, 1e-14) && close(m.relaxation_time.unwrap(), 1.0 / gap, 1e-10));
    }

    #[test]
    fn symmetric_and_general_paths_agree_on_reversible_kernels() {
        let t = Quadratic::spec_tiny();
        let params = dlp_samplers::SamplerParams { step_size: Some(0.5), ..Default::default() };
        // 32 states (the general path is slow in debug builds).
        let w: Vec<f64> =
            (0..25).map(|k| if k / 5 == k % 5 { 0.0 } else { 0.3 * ((k / 5 + k % 5) as f64).sin() }).collect();
        let five = Quadratic::new(Space::binary(5), w, vec![0.2, -0.4, 0.1, 0.6, -0.3]);
        let cat = PairwiseCategorical::spec_small();
        let mut cases: Vec<(DMatrix<f64>, Vec<f64>)> = vec![];
        let none = dlp_samplers::SamplerParams::default();
        for (target, name, params) in [
            (&t as &dyn Target, "dmala", &params),
            (&t, "gibbs", &none),
            (&t, "lb", &none),
            (&five, "dmala", &params),
            (&cat, "gibbs", &none),
        ] {
            let s = dlp_samplers::build_sampler(name, params).unwrap();
            let p = cycle_matrix(target, s.as_ref()).unwrap();
            cases.push((p, crate::probabilities(target).unwrap()));
        }
        // DULA is reversible for its own law π_α on a log-quadratic target (spec §4.2).
        let p = kernel_matrix(&t, dula(0.5).as_ref(), 0).unwrap();
        cases.push((p, dula_closed_form(&t, 0.5, None).unwrap()));
        for (k, (p, pi)) in cases.iter().enumerate() {
            let sym = mixing(p, pi);
            assert!(sym.reversible, "case {k}: {sym:?}");
            let general = mixing_general(p).unwrap();
            assert!(close(sym.slem.unwrap(), general.slem.unwrap(), 1e-10), "case {k}: {sym:?} vs {general:?}");
            let ev = general_eigenvalues(p).unwrap();
            assert!(ev.iter().all(|z| z.im.abs() < 1e-10), "case {k}: complex eigenvalues {ev:?}");
            let mut re: Vec<f64> = ev.iter().map(|z| z.re).collect();
            re.sort_by(|a, b| b.total_cmp(a));
            let s = symmetrised_eigenvalues(p, pi).unwrap();
            let worst = re.iter().zip(&s).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(worst < 1e-10, "case {k}: spectra differ by {worst:e}");
        }
        // A systematic sweep (product of reversible phases) is not reversible.
        let sweep = dlp_samplers::build_sampler("gibbs-sweep", &none).unwrap();
        let p = cycle_matrix(&t, sweep.as_ref()).unwrap();
        let m = mixing(&p, &stationary(&p).unwrap());
        assert!(!m.reversible && m.slem.unwrap() < 1.0, "{m:?}");
    }

    #[test]
    fn sparse_product_equals_the_dense_one() {
        let a = DMatrix::from_fn(16, 16, |i, j| ((i * 7 + j * 3) % 11) as f64 / 11.0);
        let b = DMatrix::from_fn(16, 16, |i, j| if j == i || j == (i + 5) % 16 { 0.5 } else { 0.0 });
        assert!(max_abs_diff(&product(&a, &b), &(&a * &b)) < 1e-15);
        let dense = DMatrix::from_fn(16, 16, |i, j| 1.0 / (1.0 + (i + j) as f64));
        assert!(max_abs_diff(&product(&a, &dense), &(&a * &dense)) < 1e-15);
    }

    #[test]
    fn exact_report_names_the_mixing_kernel() {
        let t = Quadratic::spec_tiny();
        let sweep = dlp_samplers::build_sampler("gibbs-sweep", &Default::default()).unwrap();
        let r = exact_report(&t, sweep.as_ref()).unwrap();
        assert_eq!(r.n_phases, 3);
        assert!(r.mixing_kernel.contains("one sweep") && r.mixing_kernel.contains("3 phase"), "{}", r.mixing_kernel);
        assert_eq!(r.mixing, mixing(&cycle_matrix(&t, sweep.as_ref()).unwrap(), r.stationary.as_ref().unwrap()));
        let r = exact_report(&t, dula(0.5).as_ref()).unwrap();
        assert_eq!(r.mixing_kernel, "P: one step");
        assert!(r.mixing.reversible && r.mixing.gap.unwrap() > 0.0, "{:?}", r.mixing);
    }

    #[test]
    fn closed_form_matches_spec_4_3_and_4_5() {
        let t = Quadratic::spec_tiny();
        let lz = dlp_log_normalisers(&t, 0.5, None).unwrap();
        let z = [
            2.5467504694,
            2.3343609472,
            5.0110137897,
            2.3985887757,
            2.5512765352,
            4.8972013268,
            1.9421409364,
            1.9544894384,
        ];
        for (a, b) in lz.iter().zip(z) {
            assert!((a.exp() - b).abs() < 1e-9);
        }
        let pa = dula_closed_form(&t, 0.5, None).unwrap();
        let expect = dlp_core::testing::SPEC_TINY_DULA_PI;
        for (a, b) in pa.iter().zip(expect) {
            assert!((a - b).abs() < 1e-9);
        }
        let pre = dula_closed_form(&t, 0.5, Some(&[0.5, 1.0, 2.0])).unwrap();
        let expect = [0.07943297, 0.09874922, 0.07031317, 0.11641384, 0.10573862, 0.07879958, 0.22600887, 0.22454374];
        for (a, b) in pre.iter().zip(expect) {
            assert!((a - b).abs() < 1e-8);
        }
        let c = PairwiseCategorical::spec_small();
        let pa = dula_closed_form(&c, 1.0, None).unwrap();
        let expect = dlp_core::testing::SPEC_SMALL_DULA_PI;
        for (a, b) in pa.iter().zip(expect) {
            assert!((a - b).abs() < 1e-9);
        }
    }

    #[test]
    fn thm51_bounds_match_spec_4_8() {
        let t = Quadratic::spec_tiny();
        let b = thm51_bounds(&t, &t.w, 0.1).unwrap();
        assert!((b.lambda_min + 1.2752971669).abs() < 1e-9);
        assert!((b.bias_l1 - 4.3153e-3).abs() < 1e-7, "{b:?}");
        assert!((b.hat_z_bound - 3.637e-2).abs() < 1e-5, "{b:?}");
        assert!((b.eigen_bound.unwrap() - 1.574e-1).abs() < 1e-4, "{b:?}");
        assert!((b.binary_bound.unwrap() - 5.318e-2).abs() < 1e-5, "{b:?}");
        let b = thm51_bounds(&t, &t.w, 0.05).unwrap();
        assert!((b.bias_l1 - 2.9192e-5).abs() < 1e-8, "{b:?}");
        assert!((b.hat_z_bound - 2.435e-4).abs() < 1e-7, "{b:?}");
        assert!((b.eigen_bound.unwrap() - 1.060e-3).abs() < 1e-6, "{b:?}");
        assert!((b.binary_bound.unwrap() - 3.522e-4).abs() < 1e-7, "{b:?}");
    }
}
