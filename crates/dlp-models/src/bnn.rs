//! Binary Bayesian neural network (paper 000 §7.4 and App. I.5, Tables 2 and 4; the official code's
//! `bayesian_nn` energy, spec `reproduction.md` §3.6): a data model over binary weights.
//!
//! θ ∈ {0,1}^d is read as w = 2θ − 1 ∈ {−1,+1}^d in the flat layout [W1 (row-major p×H), b1,
//! W2, b2], d = (p+2)H + 1, and predicts ŷ(x) = σ(tanh(x W1 + b1)·W2 + b2). The log-density
//! (negative energy) of a batch β of B items is
//!
//! f̂(θ) = −τ · mean_{n∈β} (ŷ(x_n) − y_n)²,
//!
//! with τ = 100 and no prior term, as the official code (the paper's tempered likelihood). On
//! the whole data set this is f = Σ_n ℓ_n with ℓ_n = −(τ/N)(ŷ_n − y_n)², and a uniform batch
//! mean is the unbiased (N/B)Σ estimate of §1.10, so `n_data` is `Some(N)`.
//!
//! The gradient is hand-derived (two layers need no autodiff): with A = X_β W1 + b1,
//! Hh = tanh A, z = Hh W2 + b2, δ_n = −(2τ/B)(ŷ_n − y_n) ŷ_n(1 − ŷ_n),
//! ∂f/∂W2 = Hhᵀδ, ∂f/∂b2 = Σδ, Δ = (δ W2ᵀ) ⊙ (1 − Hh²), ∂f/∂W1 = X_βᵀΔ, ∂f/∂b1 = Σ_n Δ_n,
//! and ∂f/∂θ = 2 ∂f/∂w. Each chain costs two matrix products (forward X·W1, backward XᵀΔ),
//! computed with ndarray's `general_mat_mul` (matrixmultiply), the same kernel for every
//! chain, so rows never interact and results do not depend on how chains are split.

use crate::error::{ModelError, check_finite};
use crate::file::{err, matrix, number, show, vector};
use crate::model::{LoadedModel, Model, ModelKind, rows};
use dlp_core::math::sigmoid;
use dlp_core::{Batch, DomainKind, EvalError, Space, Target};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The official code's τ (the energy's temperature factor).
pub const DEFAULT_TAU: f64 = 100.0;

/// The registration of `kind: bnn`: `hidden` (H, required), `tau` (default 100), and either
/// `x` (N × p) with `y` (N targets) inline or `data`, a CSV file beside the model file whose
/// rows are the p features then the target.
pub static KIND: ModelKind = ModelKind {
    name: "bnn",
    keys: &["hidden", "tau", "x", "y", "data"],
    default_domain: DomainKind::Binary,
    domains: &[DomainKind::Binary],
    parse,
    doc: "a data model: binary Bayesian neural network σ(tanh(x W1 + b1)·W2 + b2) with w = 2θ − 1, d = (p+2)·`hidden` + 1; `tau` (default 100), features `x` (N × p) and targets `y`, or `data` (a CSV beside the model file: features then target per row); runs every sampler, `sg-dula`/`sg-dmala` on minibatches",
};

fn parse(obj: &Map<String, Value>, space: &Space) -> Result<Model, ModelError> {
    let hidden = match obj.get("hidden") {
        None => return err("missing key \"hidden\" (the number of hidden units H)"),
        Some(v) => match v.as_u64() {
            Some(h) if h >= 1 => h as usize,
            _ => return err(format!("hidden must be an integer >= 1, found {}", show(v))),
        },
    };
    let tau = match obj.get("tau") {
        None => DEFAULT_TAU,
        Some(v) => number(v, "tau")?,
    };
    let (x, y, p) = match obj.get("data") {
        Some(data) => {
            if let Some(k) = ["x", "y"].iter().find(|k| obj.contains_key(**k)) {
                return err(format!("key \"{k}\" conflicts with \"data\" (give x and y inline or a data file)"));
            }
            let n = data.as_array().map_or(0, Vec::len);
            if n == 0 && data.is_array() {
                return err("data is empty: the model needs at least one data item");
            }
            let (m, cols) = matrix(data, "data", (n, "rows"), None)?;
            if cols < 2 {
                return err(format!("data rows need p >= 1 features and a target, found {cols} columns"));
            }
            let n = m.len() / cols;
            let mut x = Vec::with_capacity(n * (cols - 1));
            let mut y = Vec::with_capacity(n);
            for row in m.chunks_exact(cols) {
                x.extend_from_slice(&row[..cols - 1]);
                y.push(row[cols - 1]);
            }
            (x, y, cols - 1)
        }
        None => {
            let Some(yv) = obj.get("y") else {
                return err("missing key \"y\" (the N targets) or \"data\" (a CSV file of features then target)");
            };
            let y = vector(yv, "y", None)?;
            if y.is_empty() {
                return err("y is empty: the model needs at least one data item");
            }
            let Some(xv) = obj.get("x") else {
                return err("missing key \"x\" (the features, N × p)");
            };
            let (x, p) = matrix(xv, "x", (y.len(), &format!("y has N = {} targets", y.len())), None)?;
            (x, y, p)
        }
    };
    Ok(Model::new(BnnModel::new(space.d, p, hidden, tau, x, y)?))
}

impl LoadedModel for BnnModel {
    fn kind(&self) -> &'static ModelKind {
        &KIND
    }

    fn write_params(&self, o: &mut Map<String, Value>) {
        o.insert("hidden".into(), json!(self.h));
        o.insert("tau".into(), json!(self.tau));
        o.insert("x".into(), rows(&self.x, self.p));
        o.insert("y".into(), json!(self.y));
    }
}

/// Binary Bayesian neural network with one tanh hidden layer (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct BnnModel {
    space: Space,
    p: usize,
    h: usize,
    tau: f64,
    /// Features, N × p row-major.
    x: Vec<f64>,
    /// Targets.
    y: Vec<f64>,
}

impl BnnModel {
    /// The network with `p` features and `hidden` units (so `d` must be (p+2)·hidden + 1),
    /// temperature `tau`, features `x` (N × p row-major) and targets `y`.
    pub fn new(d: usize, p: usize, hidden: usize, tau: f64, x: Vec<f64>, y: Vec<f64>) -> Result<Self, ModelError> {
        let n = y.len();
        if n == 0 {
            return Err(ModelError::param("the data is empty: the model needs at least one data item"));
        }
        if hidden == 0 {
            return Err(ModelError::param("hidden must be an integer >= 1, found 0"));
        }
        if p == 0 {
            return Err(ModelError::param("the features have p = 0 columns; the model needs p >= 1"));
        }
        if x.len() != n * p {
            return Err(ModelError::param(format!("x must be N × p = {n} × {p}, found {} entries", x.len())));
        }
        let want = (p + 2) * hidden + 1;
        if d != want {
            return Err(ModelError::param(format!(
                "d = {d} but a bnn with p = {p} features and hidden = {hidden} has d = (p+2)·hidden + 1 = {want}"
            )));
        }
        if !(tau.is_finite() && tau > 0.0) {
            return Err(ModelError::param(format!("tau must be a finite number > 0, found {tau}")));
        }
        check_finite("x", &x)?;
        check_finite("y", &y)?;
        Ok(BnnModel { space: Space::binary(d), p, h: hidden, tau, x, y })
    }

    /// Number of data items N.
    pub fn n(&self) -> usize {
        self.y.len()
    }

    /// Number of features p.
    pub fn p(&self) -> usize {
        self.p
    }

    /// Number of hidden units H.
    pub fn hidden(&self) -> usize {
        self.h
    }

    /// The temperature τ.
    pub fn tau(&self) -> f64 {
        self.tau
    }

    /// Features, N × p row-major.
    pub fn features(&self) -> &[f64] {
        &self.x
    }

    /// Targets.
    pub fn targets(&self) -> &[f64] {
        &self.y
    }

    /// Predictions ŷ of the network with bits `theta` (length d) for the features `x`
    /// (rows of p), into `out` (one per row): the metrics of Tables 2 and 4 need them on
    /// held-out data.
    pub fn predict(&self, theta: &[u32], x: &[f64], out: &mut [f64]) {
        let (p, h) = (self.p, self.h);
        let xv = ArrayView2::from_shape((out.len(), p), x).expect("rows of p features");
        let mut a = Array2::<f64>::zeros((out.len(), h));
        self.forward(theta, xv, &mut a, out);
    }

    /// Forward pass of one network: `a` ← tanh(X W1 + b1) (B × H), `yhat` ← ŷ.
    #[inline(always)]
    fn forward(&self, theta: &[u32], xb: ArrayView2<f64>, a: &mut Array2<f64>, yhat: &mut [f64]) {
        let (p, h) = (self.p, self.h);
        let w = |i: usize| 2.0 * theta[i] as f64 - 1.0;
        let w1 = Array2::from_shape_fn((p, h), |(i, j)| w(i * h + j));
        let b1: Vec<f64> = (0..h).map(|j| w(p * h + j)).collect();
        let w2: Vec<f64> = (0..h).map(|j| w(p * h + h + j)).collect();
        let b2 = w(p * h + 2 * h);
        // A = X W1 + b1: the bias rows first, then the product added onto them.
        for mut row in a.rows_mut() {
            row.as_slice_mut().expect("standard layout").copy_from_slice(&b1);
        }
        general_mat_mul(1.0, &xb, &w1, 1.0, a);
        // One flat pass over all N·H entries, so the tanh loop vectorises.
        tanh_slice(a.as_slice_mut().expect("standard layout"));
        for (row, yh) in a.rows().into_iter().zip(yhat.iter_mut()) {
            let z = b2 + row.iter().zip(&w2).map(|(v, w)| v * w).sum::<f64>();
            *yh = sigmoid(z);
        }
    }

    /// f̂ (and ∇f̂) of every row of `xs` over `items` (`None`: all, read in place), compiled
    /// for the widest vector unit the CPU has (as [`tanh_slice`]; bit-identical results).
    fn eval_items(&self, xs: &[u32], items: Option<&[usize]>, f: &mut [f64], grad: Option<&mut [f64]>) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked just above).
                return unsafe { self.eval_items_avx512(xs, items, f, grad) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked just above).
                return unsafe { self.eval_items_avx2(xs, items, f, grad) };
            }
        }
        self.eval_items_impl(xs, items, f, grad)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn eval_items_avx512(&self, xs: &[u32], items: Option<&[usize]>, f: &mut [f64], g: Option<&mut [f64]>) {
        self.eval_items_impl(xs, items, f, g)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn eval_items_avx2(&self, xs: &[u32], items: Option<&[usize]>, f: &mut [f64], g: Option<&mut [f64]>) {
        self.eval_items_impl(xs, items, f, g)
    }

    #[inline(always)]
    fn eval_items_impl(&self, xs: &[u32], items: Option<&[usize]>, f: &mut [f64], mut grad: Option<&mut [f64]>) {
        let (d, p, h) = (self.space.d, self.p, self.h);
        let all = ArrayView2::from_shape((self.n(), p), &self.x).expect("N × p by construction");
        let gathered = items.map(|it| Array2::from_shape_fn((it.len(), p), |(t, i)| self.x[it[t] * p + i]));
        let xb = gathered.as_ref().map_or(all, |g| g.view());
        let yb: Cow<[f64]> = match items {
            Some(it) => Cow::Owned(it.iter().map(|&t| self.y[t]).collect()),
            None => Cow::Borrowed(&self.y),
        };
        let nb = yb.len();
        let mut a = Array2::<f64>::zeros((nb, h));
        let mut yhat = vec![0.0; nb];
        let scale = self.tau / nb as f64;
        for (r, fr) in f.iter_mut().enumerate() {
            let theta = &xs[r * d..(r + 1) * d];
            self.forward(theta, xb, &mut a, &mut yhat);
            *fr = -scale * yhat.iter().zip(yb.iter()).map(|(q, t)| (q - t) * (q - t)).sum::<f64>();
            let Some(g) = grad.as_deref_mut() else { continue };
            let g = &mut g[r * d..(r + 1) * d];
            // ∂f/∂z_n, then the output layer's gradient (w.r.t. w; ×2 for θ below).
            let delta: Vec<f64> =
                yhat.iter().zip(yb.iter()).map(|(q, t)| -2.0 * scale * (q - t) * q * (1.0 - q)).collect();
            let (gw1, rest) = g.split_at_mut(p * h);
            let (gb1, rest) = rest.split_at_mut(h);
            let (gw2, gb2) = rest.split_at_mut(h);
            gb1.fill(0.0);
            gw2.fill(0.0);
            gb2[0] = 2.0 * delta.iter().sum::<f64>();
            // Δ = (δ W2ᵀ) ⊙ (1 − Hh²), overwriting Hh row by row after its use in ∂f/∂W2.
            let w2: Vec<f64> = theta[p * h + h..p * h + 2 * h].iter().map(|&t| 2.0 * t as f64 - 1.0).collect();
            for (mut row, &dn) in a.rows_mut().into_iter().zip(&delta) {
                for (((v, w2j), g2), g1) in row.iter_mut().zip(&w2).zip(gw2.iter_mut()).zip(gb1.iter_mut()) {
                    let hv = *v;
                    *g2 += 2.0 * dn * hv;
                    *v = dn * w2j * (1.0 - hv * hv);
                    *g1 += 2.0 * *v;
                }
            }
            let mut gw1v = ArrayViewMut2::from_shape((p, h), gw1).expect("p × H block");
            general_mat_mul(2.0, &xb.t(), &a, 0.0, &mut gw1v);
        }
    }
}

/// tanh(x) = sign(x)·(1 − e)/(1 + e) with e = exp(−2|x|), the exponential computed inline
/// ([`exp_nonpositive`]) so that the loop over N·H entries vectorises. Hand-written because
/// the forward pass is dominated by N·H·chains tanh calls: libm's `tanh` measured 26 ns per
/// call here, the same form through libm's `exp` 5.7 ns; the unit tests compare with libm.
#[inline(always)]
fn tanh(x: f64) -> f64 {
    let e = exp_nonpositive(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

/// tanh of every entry, with the widest vector unit the CPU has (AVX-512 or AVX2, detected at
/// run time, else the baseline build). The arithmetic is the same in every path (Rust does
/// not contract a·b + c into FMAs), so results are bit-identical whichever runs.
fn tanh_slice(v: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { tanh_slice_avx512(v) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { tanh_slice_avx2(v) };
        }
    }
    v.iter_mut().for_each(|x| *x = tanh(*x));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tanh_slice_avx512(v: &mut [f64]) {
    v.iter_mut().for_each(|x| *x = tanh(*x));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn tanh_slice_avx2(v: &mut [f64]) {
    v.iter_mut().for_each(|x| *x = tanh(*x));
}

/// exp(y) for y ≤ 0 without a libm call: y = k ln 2 + r (Cody–Waite, |r| ≤ ln 2 / 2), a
/// degree-12 Taylor polynomial for e^r (truncation < 2e−16 relative) and 2^k built in the
/// exponent bits; k is read from the bits of y·log₂e + 1.5·2⁵² (round to nearest), so every
/// step is plain arithmetic that SIMD units run. Below −708, e^y < 2.3e−308 and it returns
/// e^−708 (tanh is then ±1 to the last bit either way).
#[inline(always)]
fn exp_nonpositive(y: f64) -> f64 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 · 2^52
    // fdlibm's split of ln 2: LN2_HI's low 21 bits are zero, so k·LN2_HI is exact for |k| < 2^21.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    let y = y.max(-708.0);
    let t = y * std::f64::consts::LOG2_E + MAGIC;
    let k = t - MAGIC;
    let r = (y - k * LN2_HI) - k * LN2_LO;
    let mut p = 1.0 / 479_001_600.0; // 1/12!
    for c in [
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + c;
    }
    let ki = (t.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64);
    p * f64::from_bits(((ki + 1023) << 52) as u64)
}

impl Target for BnnModel {
    fn space(&self) -> &Space {
        &self.space
    }

    fn log_density_batch(&self, xs: &[u32], out: &mut [f64]) {
        self.eval_items(xs, None, out, None);
    }

    fn log_density_grad_batch(&self, xs: &[u32], log_density: &mut [f64], grad: &mut [f64]) {
        self.eval_items(xs, None, log_density, Some(grad));
    }

    fn n_data(&self) -> Option<usize> {
        Some(self.n())
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        match batch {
            Batch::Full => self.eval_items(xs, None, log_density, grad),
            Batch::Items(items) => {
                if let Some(&index) = items.iter().find(|&&i| i >= self.n()) {
                    return Err(EvalError::BadItem { index, n_data: self.n() });
                }
                self.eval_items(xs, Some(items), log_density, grad);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    /// A small network on seeded random data: p = 3, H = 2 (d = 11), N = 7.
    fn small(tau: f64) -> BnnModel {
        let mut rng = dlp_core::setup_rng(7);
        let x: Vec<f64> = (0..21).map(|_| rng.random_range(-1.5..1.5)).collect();
        let y: Vec<f64> = (0..7).map(|n| (n % 2) as f64).collect();
        BnnModel::new(11, 3, 2, tau, x, y).unwrap()
    }

    /// The energy written out directly from the formula (loops, no matrices) at real w.
    fn by_formula(m: &BnnModel, w: &[f64], items: &[usize]) -> f64 {
        let (p, h) = (m.p, m.h);
        let mut s = 0.0;
        for &n in items {
            let mut z = w[p * h + 2 * h];
            for j in 0..h {
                let a: f64 = w[p * h + j] + (0..p).map(|i| m.x[n * p + i] * w[i * h + j]).sum::<f64>();
                z += a.tanh() * w[p * h + h + j];
            }
            let q = 1.0 / (1.0 + (-z).exp());
            s += (q - m.y[n]) * (q - m.y[n]);
        }
        -m.tau * s / items.len() as f64
    }

    #[test]
    fn values_match_the_formula_and_the_gradient_matches_finite_differences() {
        let m = small(100.0);
        let mut rng = dlp_core::setup_rng(11);
        let all: Vec<usize> = (0..m.n()).collect();
        for _ in 0..5 {
            let theta: Vec<u32> = (0..11).map(|_| rng.random_range(0..2)).collect();
            let (mut f, mut g) = ([0.0], vec![0.0; 11]);
            m.log_density_grad_batch(&theta, &mut f, &mut g);
            let w: Vec<f64> = theta.iter().map(|&t| 2.0 * t as f64 - 1.0).collect();
            assert!((f[0] - by_formula(&m, &w, &all)).abs() < 1e-10, "{} vs formula", f[0]);
            // Central differences in θ (w moves by 2h), error O(h²) ≈ 1e-8 relative.
            let h = 1e-5;
            for i in 0..11 {
                let (mut up, mut dn) = (w.clone(), w.clone());
                up[i] += 2.0 * h;
                dn[i] -= 2.0 * h;
                let fd = (by_formula(&m, &up, &all) - by_formula(&m, &dn, &all)) / (2.0 * h);
                assert!((fd - g[i]).abs() < 1e-6 * (1.0 + g[i].abs()), "coordinate {i}: fd {fd} vs {}", g[i]);
            }
        }
    }

    #[test]
    fn the_minibatch_estimate_averaged_over_all_batches_is_the_full_value_and_gradient() {
        let m = small(100.0);
        let theta = [1u32, 0, 0, 1, 1, 1, 0, 1, 0, 0, 1];
        let (mut f, mut g) = ([0.0], vec![0.0; 11]);
        m.log_density_grad_batch(&theta, &mut f, &mut g);
        for b in 1..=m.n() {
            // Every b-subset of the 7 items, enumerated by bit masks.
            let (mut fm, mut gm, mut count) = (0.0, vec![0.0; 11], 0.0);
            for mask in 0u32..1 << m.n() {
                if mask.count_ones() as usize != b {
                    continue;
                }
                let items: Vec<usize> = (0..m.n()).filter(|&n| mask >> n & 1 == 1).collect();
                let (mut fb, mut gb) = ([0.0], vec![0.0; 11]);
                m.evaluate(&theta, Batch::Items(&items), &mut fb, Some(&mut gb)).unwrap();
                let w: Vec<f64> = theta.iter().map(|&t| 2.0 * t as f64 - 1.0).collect();
                assert!((fb[0] - by_formula(&m, &w, &items)).abs() < 1e-10);
                fm += fb[0];
                gm.iter_mut().zip(&gb).for_each(|(a, v)| *a += v);
                count += 1.0;
            }
            assert!((fm / count - f[0]).abs() < 1e-10, "B = {b}: mean {} vs {}", fm / count, f[0]);
            for i in 0..11 {
                assert!((gm[i] / count - g[i]).abs() < 1e-10, "B = {b}, coordinate {i}");
            }
        }
        let e = m.evaluate(&theta, Batch::Items(&[7]), &mut f, None).unwrap_err();
        assert_eq!(e, EvalError::BadItem { index: 7, n_data: 7 });
    }

    #[test]
    fn the_inline_tanh_and_exp_agree_with_libm() {
        let (mut worst_t, mut worst_e) = (0.0f64, 0.0f64);
        for i in 0..200_001 {
            let x = -40.0 + 80.0 * i as f64 / 200_000.0;
            worst_t = worst_t.max((tanh(x) - x.tanh()).abs());
            let y = -x.abs() * 18.0; // down to −720, below the clamp
            let e = y.exp();
            worst_e = worst_e.max(if e > 1e-300 { (exp_nonpositive(y) - e).abs() / e } else { exp_nonpositive(y) });
        }
        assert!(worst_t < 1e-15, "tanh error {worst_t:e}");
        assert!(worst_e < 1e-14, "exp relative error {worst_e:e}");
        // Absolute, not relative, accuracy near 0 (1 − e cancels), which is what sums of tanh need.
        assert_eq!((tanh(0.0), tanh(800.0), tanh(-800.0)), (0.0, 1.0, -1.0));
        assert!((tanh(1e-10) - 1e-10).abs() < 1e-16);
    }

    #[test]
    fn predictions_are_the_forward_pass() {
        let m = small(1.0);
        let theta = [0u32, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0];
        let mut yhat = vec![0.0; 7];
        m.predict(&theta, &m.x, &mut yhat);
        // f = −τ mean (ŷ − y)² with τ = 1.
        let mse = yhat.iter().zip(&m.y).map(|(q, t)| (q - t) * (q - t)).sum::<f64>() / 7.0;
        assert!((m.log_density(&theta) + mse).abs() < 1e-12);
    }

    #[test]
    fn bad_parameters_are_one_line_errors() {
        let e = |r: Result<BnnModel, ModelError>| r.err().unwrap().to_string();
        let x = vec![0.0; 6];
        assert_eq!(
            e(BnnModel::new(10, 3, 2, 1.0, x.clone(), vec![0.0; 2])),
            "d = 10 but a bnn with p = 3 features and hidden = 2 has d = (p+2)·hidden + 1 = 11"
        );
        assert!(e(BnnModel::new(1, 3, 0, 1.0, x.clone(), vec![0.0; 2])).contains("hidden must be"));
        assert!(e(BnnModel::new(11, 3, 2, 1.0, vec![], vec![])).contains("empty"));
        assert!(e(BnnModel::new(11, 3, 2, 0.0, x.clone(), vec![0.0; 2])).contains("tau"));
        assert!(e(BnnModel::new(11, 3, 2, 1.0, x.clone(), vec![0.0, f64::NAN])).contains("y[1]"));
        let mut bad = x;
        bad[4] = f64::INFINITY;
        assert!(e(BnnModel::new(11, 3, 2, 1.0, bad, vec![0.0; 2])).contains("x[4]"));
    }

    #[test]
    fn the_model_file_round_trips_reads_a_data_file_and_names_bad_keys() {
        use crate::file::{Format, load_model, parse_model_str};
        let text = r#"{"schema": "dlp.model.v1", "kind": "bnn", "d": 7, "hidden": 2, "tau": 5,
            "x": [[0.5], [-1.0], [2.0]], "y": [1, 0, 1]}"#;
        let m = parse_model_str(text, Format::Json, "m.json").unwrap();
        let b = m.downcast_ref::<BnnModel>().unwrap();
        assert_eq!((b.p(), b.hidden(), b.tau(), b.n()), (1, 2, 5.0, 3));
        assert_eq!(parse_model_str(&m.to_json(), Format::Json, "m.json").unwrap(), m);
        let bad = |from: &str, to: &str| {
            parse_model_str(&text.replace(from, to), Format::Json, "m.json").unwrap_err().to_string()
        };
        assert_eq!(bad("[1, 0, 1]", "[1, 0]"), "m.json: x has 3 rows but y has N = 2 targets");
        assert_eq!(bad("[-1.0]", "[-1.0, 2]"), "m.json: x[1] has 2 entries but x[0] has 1");
        assert_eq!(bad(r#""hidden": 2"#, r#""hidden": 0"#), "m.json: hidden must be an integer >= 1, found 0");
        assert_eq!(bad("[1, 0, 1]", "[]"), "m.json: y is empty: the model needs at least one data item");
        assert_eq!(bad(r#""tau": 5"#, r#""tau": "a""#), "m.json: tau must be a number, found \"a\"");
        assert!(bad(r#""d": 7"#, r#""d": 7, "domain": "spin""#).contains("not supported by the bnn model"));
        assert!(bad(r#""tau": 5"#, r#""tau": 5, "data": [[1, 2]]"#).contains("conflicts with \"data\""));

        // A data file beside the model file: features then target per row (header allowed).
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.csv"), "x0,y\n0.5,1\n-1.0,0\n2.0,1\n").unwrap();
        let with_file = r#"{"schema": "dlp.model.v1", "kind": "bnn", "d": 7, "hidden": 2, "tau": 5, "data": "d.csv"}"#;
        std::fs::write(dir.path().join("m.json"), with_file).unwrap();
        assert_eq!(load_model(&dir.path().join("m.json")).unwrap(), m);
        std::fs::write(dir.path().join("d.csv"), "x0,y\n0.5,1\n-1.0,nan\n").unwrap();
        let e = load_model(&dir.path().join("m.json")).unwrap_err().to_string();
        assert!(e.ends_with("d.csv:3:2: not a finite number: \"nan\""), "{e}");
        std::fs::write(dir.path().join("d.csv"), "").unwrap();
        let e = load_model(&dir.path().join("m.json")).unwrap_err().to_string();
        assert!(e.contains("m.json: data file: ") && e.contains("empty"), "{e}");
        assert!(
            parse_model_str(with_file, Format::Json, "m.json")
                .unwrap_err()
                .to_string()
                .contains("give the rows inline")
        );
    }
}
