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
//! done in blocks of 256 data rows so that nothing N × H is stored: the forward product fused
//! with tanh and the output sum (hand-written, K = p is small), the backward one with
//! ndarray's `general_mat_mul` (matrixmultiply). The same code runs for every chain, so rows
//! never interact and results do not depend on how chains are split. [`Precision::F32`]
//! runs the products and tanh in f32 (the official code's arithmetic) at about half the cost.

use crate::error::{ModelError, check_finite};
use crate::fields::{err, matrix, number, show, vector};
use crate::model::{LoadedModel, Model, ModelKind, rows};
use dlp_core::math::sigmoid;
use dlp_core::{Batch, DomainKind, EvalError, Space, Target};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2, LinalgScalar};
use serde_json::{Map, Value, json};
use std::borrow::Cow;

mod sites;

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

/// The arithmetic of the network's evaluation ([`BnnModel::with_precision`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// float64 throughout: f and ∇f to ~1e−15 relative (the default, and what the exact suite
    /// and the finite-difference tests check).
    #[default]
    F64,
    /// float32 features, weights, matrix products, tanh and hidden-layer passes — the official
    /// code's arithmetic (torch float32), at twice the SIMD width — with ŷ, the loss and every
    /// sum over the data in float64. f differs from the F64 value by at most 1e−4 (measured
    /// 4.4e−7 on COMPAS, `paper/table2.md`).
    F32,
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
    /// The evaluation's arithmetic.
    precision: Precision,
    /// The features rounded to f32 (filled only for [`Precision::F32`]).
    x32: Vec<f32>,
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
            return Err(ModelError::param("x, the features, has p = 0 columns; the model needs p >= 1"));
        }
        if x.len() != n * p {
            return Err(ModelError::param(format!("x must be N × p = {n} × {p}, found {} entries", x.len())));
        }
        // Checked: `hidden` comes from the file and may be any u64.
        let want = (p + 2).checked_mul(hidden).and_then(|w| w.checked_add(1));
        if want != Some(d) {
            let want = want.map_or("more than any d".to_string(), |w| w.to_string());
            return Err(ModelError::param(format!(
                "d = {d} but a bnn with p = {p} features and hidden = {hidden} has d = (p+2)·hidden + 1 = {want}"
            )));
        }
        if !(tau.is_finite() && tau > 0.0) {
            return Err(ModelError::param(format!("tau must be a finite number > 0, found {tau}")));
        }
        check_finite("x", &x)?;
        check_finite("y", &y)?;
        Ok(BnnModel { space: Space::binary(d), p, h: hidden, tau, x, y, precision: Precision::F64, x32: Vec::new() })
    }

    /// The same network evaluated in `precision` (f32 halves the cost; see [`Precision`]).
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self.x32 = match precision {
            Precision::F64 => Vec::new(),
            Precision::F32 => self.x.iter().map(|&v| v as f32).collect(),
        };
        self
    }

    /// The evaluation's arithmetic.
    pub fn precision(&self) -> Precision {
        self.precision
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
    /// (rows of p), into `out` (one per row), in the model's precision: the metrics of Tables
    /// 2 and 4 need them on held-out data.
    pub fn predict(&self, theta: &[u32], x: &[f64], out: &mut [f64]) {
        assert_eq!(x.len(), out.len() * self.p, "predict: x must hold one row of p features per output");
        match self.precision {
            Precision::F64 => self.predict_simd::<f64>(theta, x, out),
            Precision::F32 => self.predict_simd::<f32>(theta, x, out),
        }
    }

    /// [`Self::predict_impl`] compiled for the widest vector unit the CPU has (as [`Self::eval_simd`]).
    fn predict_simd<T: Real>(&self, theta: &[u32], x: &[f64], out: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked just above).
                return unsafe { self.predict_avx512::<T>(theta, x, out) };
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                // SAFETY: the CPU has AVX2 and FMA (checked just above).
                return unsafe { self.predict_avx2::<T>(theta, x, out) };
            }
        }
        self.predict_impl::<T>(theta, x, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn predict_avx512<T: Real>(&self, theta: &[u32], x: &[f64], out: &mut [f64]) {
        self.predict_impl::<T>(theta, x, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn predict_avx2<T: Real>(&self, theta: &[u32], x: &[f64], out: &mut [f64]) {
        self.predict_impl::<T>(theta, x, out)
    }

    #[inline(always)]
    fn predict_impl<T: Real>(&self, theta: &[u32], x: &[f64], out: &mut [f64]) {
        let xt: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
        let mut k = Kernel::<T>::new(self.p, self.h, out.len());
        k.load(theta);
        for (xblk, q) in xt.chunks(ROWS * self.p).zip(out.chunks_mut(ROWS)) {
            k.forward_block(xblk);
            q.iter_mut().zip(&k.z).for_each(|(q, &z)| *q = sigmoid(z));
        }
    }

    /// f̂ (and ∇f̂) of every row of `xs` over `items` (`None`: all, read in place), in the
    /// model's precision, compiled for the widest vector unit the CPU has.
    fn eval_items(&self, xs: &[u32], items: Option<&[usize]>, f: &mut [f64], grad: Option<&mut [f64]>) {
        match self.precision {
            Precision::F64 => self.eval_simd::<f64>(xs, items, f, grad),
            Precision::F32 => self.eval_simd::<f32>(xs, items, f, grad),
        }
    }

    /// [`Self::eval_impl`] compiled for AVX-512 or AVX2 + FMA when the CPU has it (detected at
    /// run time), else the baseline build: the tanh and row loops then vectorise at the full
    /// width. The arithmetic is the same in every path (`mul_add` is one correctly rounded
    /// operation everywhere; the baseline build calls libm's `fma`, slowly), so results are
    /// bit-identical whichever runs.
    fn eval_simd<T: Real>(&self, xs: &[u32], items: Option<&[usize]>, f: &mut [f64], g: Option<&mut [f64]>) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked just above).
                return unsafe { self.eval_avx512::<T>(xs, items, f, g) };
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                // SAFETY: the CPU has AVX2 and FMA (checked just above).
                return unsafe { self.eval_avx2::<T>(xs, items, f, g) };
            }
        }
        self.eval_impl::<T>(xs, items, f, g)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn eval_avx512<T: Real>(&self, xs: &[u32], items: Option<&[usize]>, f: &mut [f64], g: Option<&mut [f64]>) {
        self.eval_impl::<T>(xs, items, f, g)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn eval_avx2<T: Real>(&self, xs: &[u32], items: Option<&[usize]>, f: &mut [f64], g: Option<&mut [f64]>) {
        self.eval_impl::<T>(xs, items, f, g)
    }

    /// One chain after another, each in blocks of [`ROWS`] data rows: the fused forward pass
    /// ([`Kernel::forward_block`]), one pass per row for ŷ, the loss, δ and
    /// Δ = δ w2 ⊙ (1 − h²) overwriting h in place while the row is in L1, then the backward
    /// product XᵀΔ of the block (matrixmultiply, K = ROWS). Nothing N × H is ever stored.
    #[inline(always)]
    fn eval_impl<T: Real>(&self, xs: &[u32], items: Option<&[usize]>, f: &mut [f64], mut grad: Option<&mut [f64]>) {
        let (d, p, h) = (self.space.d, self.p, self.h);
        let data = T::features(self);
        let gathered: Option<Vec<T>> =
            items.map(|it| it.iter().flat_map(|&t| &data[t * p..(t + 1) * p]).copied().collect());
        let xb: &[T] = gathered.as_deref().unwrap_or(data);
        let yb: Cow<[f64]> = match items {
            Some(it) => Cow::Owned(it.iter().map(|&t| self.y[t]).collect()),
            None => Cow::Borrowed(&self.y),
        };
        let nb = yb.len();
        let scale = self.tau / nb as f64;
        let mut k = Kernel::<T>::new(p, h, nb);
        let hp = k.b1.len() * L;
        // Sums over the data in f64; per block in T ([T; L] lanes vectorise, 256 terms).
        let (mut gw1, mut gb1, mut gw2) = (vec![0.0; p * hp], vec![0.0; hp], vec![0.0; hp]);
        let (mut bb1, mut bw2) = (vec![[T::zero(); L]; hp / L], vec![[T::zero(); L]; hp / L]);
        // XᵀΔ of one block (p × padded H).
        let mut gw1_blk = Array2::<T>::zeros((p, hp));
        for (r, fr) in f.iter_mut().enumerate() {
            let theta = &xs[r * d..(r + 1) * d];
            k.load(theta);
            let want_grad = grad.is_some();
            if want_grad {
                gw1.fill(0.0);
                gb1.fill(0.0);
                gw2.fill(0.0);
            }
            let (mut loss, mut gb2) = (0.0, 0.0);
            for (xblk, yblk) in xb.chunks(ROWS * p).zip(yb.chunks(ROWS)) {
                k.forward_block(xblk);
                let nr = yblk.len();
                if want_grad {
                    bb1.iter_mut().chain(bw2.iter_mut()).for_each(|v| *v = [T::zero(); L]);
                }
                for ((row, &t), &zn) in k.a.chunks_exact_mut(hp / L).zip(yblk).zip(&k.z) {
                    let q = sigmoid(zn);
                    loss += (q - t) * (q - t);
                    if !want_grad {
                        continue;
                    }
                    // ∂f/∂z_n, then the output layer's gradient (w.r.t. w; ×2 for θ below).
                    let dn = -2.0 * scale * (q - t) * q * (1.0 - q);
                    gb2 += dn;
                    if dn.abs() < T::NEGLIGIBLE {
                        // A saturated output (|z| ≳ 60): its Δ row would be subnormal in
                        // T, and subnormal operands cost the FMAs and the GEMM a microcode
                        // assist each (measured: the f32 gradient 2–3× slower on COMPAS-
                        // shaped networks). Its contribution, ≤ NEGLIGIBLE·|w2|·|x| per entry,
                        // is dropped; the row's h must not reach the backward product.
                        row.fill([T::zero(); L]);
                        continue;
                    }
                    let dt = T::of(dn);
                    for (((v, w2), g2), g1) in row.iter_mut().zip(&k.w2).zip(bw2.iter_mut()).zip(bb1.iter_mut()) {
                        for l in 0..L {
                            let hv = v[l];
                            g2[l] = dt.mul_add(hv, g2[l]);
                            v[l] = dt * w2[l] * (T::one() - hv * hv);
                            g1[l] = g1[l] + v[l];
                        }
                    }
                }
                if want_grad {
                    let xv = ArrayView2::from_shape((nr, p), xblk).expect("rows of p");
                    let av = ArrayView2::from_shape((nr, hp), &k.a.as_flattened()[..nr * hp]).expect("rows of hp");
                    general_mat_mul(T::one(), &xv.t(), &av, T::zero(), &mut gw1_blk);
                    let blk = gw1_blk.as_slice().expect("standard layout");
                    gw1.iter_mut().zip(blk).for_each(|(g, v)| *g += v.get());
                    gb1.iter_mut().zip(bb1.as_flattened()).for_each(|(g, v)| *g += v.get());
                    // bw2 holds Σ δ_n h_n with δ rounded to T; gw2 wants f64 δ: the
                    // rounding is ≤ 6e−8 relative (F32) and exact (F64).
                    gw2.iter_mut().zip(bw2.as_flattened()).for_each(|(g, v)| *g += v.get());
                }
            }
            *fr = -scale * loss;
            let Some(g) = grad.as_deref_mut() else { continue };
            let g = &mut g[r * d..(r + 1) * d];
            let (g1, rest) = g.split_at_mut(p * h);
            let (gbias1, rest) = rest.split_at_mut(h);
            let (g2, gbias2) = rest.split_at_mut(h);
            for (o, src) in g1.chunks_exact_mut(h).zip(gw1.chunks_exact(hp)) {
                o.iter_mut().zip(src).for_each(|(o, v)| *o = 2.0 * v);
            }
            gbias1.iter_mut().zip(&gb1).for_each(|(o, v)| *o = 2.0 * v);
            g2.iter_mut().zip(&gw2).for_each(|(o, v)| *o = 2.0 * v);
            gbias2[0] = 2.0 * gb2;
        }
    }
}

/// Rows per block: the block's activations (ROWS × H, 200 KB at H = 100 in f64) stay in the
/// L2 cache between the forward product, the fused row passes and the backward product,
/// instead of an N × H array (3.9 MB on COMPAS) making three trips through memory per chain.
const ROWS: usize = 256;

/// The float type of an evaluation ([`Precision`]): f64, or f32 for the products, tanh and
/// row passes.
trait Real: LinalgScalar + Send + Sync {
    /// From f64 (rounded for f32).
    fn of(v: f64) -> Self;
    /// To f64 (exact).
    fn get(self) -> f64;
    /// self·a + b with one rounding (an FMA instruction in the AVX paths).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// tanh, branch-free so that loops over it vectorise.
    fn tanh_v(self) -> Self;
    /// The model's features in this type (N × p).
    fn features(m: &BnnModel) -> &[Self];
    /// |∂f/∂z_n| below which a data row is left out of ∇f: 0 in f64 (exact); 2⁻⁸⁰ ≈ 8e−25
    /// in f32, so that δ·w2·(1 − h²) ≥ 2⁻⁸⁰·2⁻²³ stays a normal f32 (≥ 2⁻¹²⁶) with a margin
    /// for |x| ≥ 2⁻²⁰. Dropping such rows moves ∇f by ≤ N·2⁻⁸⁰·max|x| (≤ 1e−18 on Adult),
    /// eleven orders below the f32 rounding the path already has.
    const NEGLIGIBLE: f64;
}

impl Real for f64 {
    const NEGLIGIBLE: f64 = 0.0;
    #[inline(always)]
    fn of(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn get(self) -> f64 {
        self
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        f64::mul_add(self, a, b)
    }
    #[inline(always)]
    fn tanh_v(self) -> Self {
        tanh(self)
    }
    fn features(m: &BnnModel) -> &[Self] {
        &m.x
    }
}

impl Real for f32 {
    const NEGLIGIBLE: f64 = 8.271806125530277e-25; // 2⁻⁸⁰
    #[inline(always)]
    fn of(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn get(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        f32::mul_add(self, a, b)
    }
    #[inline(always)]
    fn tanh_v(self) -> Self {
        tanh32(self)
    }
    fn features(m: &BnnModel) -> &[Self] {
        &m.x32
    }
}

/// Lanes of the fused forward pass: 16 f32 (one AVX-512 register) or 16 f64 (two).
const L: usize = 16;

/// One network's weights as T (w = 2θ − 1), the hidden units padded to a multiple of [`L`]
/// with zero weights (a padded unit has h = tanh 0 = 0, w2 = 0 and Δ = 0, so it changes
/// nothing and the loops have no tails), W1 packed by runs of L units: `w1[c·p + i]` holds
/// W1[i, cL..cL+L]. Plus the block buffers.
struct Kernel<T> {
    p: usize,
    h: usize,
    w1: Vec<[T; L]>,
    b1: Vec<[T; L]>,
    w2: Vec<[T; L]>,
    b2: f64,
    /// min(ROWS, N) rows of H/L runs: the block's activations h, then Δ.
    a: Vec<[T; L]>,
    /// The block's output pre-activations z.
    z: Vec<f64>,
}

impl<T: Real> Kernel<T> {
    fn new(p: usize, h: usize, n: usize) -> Self {
        let (c, rows) = (h.div_ceil(L), ROWS.min(n));
        let zero = [T::zero(); L];
        Kernel {
            p,
            h,
            w1: vec![zero; c * p],
            b1: vec![zero; c],
            w2: vec![zero; c],
            b2: 0.0,
            a: vec![zero; rows * c],
            z: vec![0.0; rows],
        }
    }

    /// The weights of the network with bits `theta`.
    #[inline(always)]
    fn load(&mut self, theta: &[u32]) {
        let (p, h) = (self.p, self.h);
        let w = |t: u32| T::of(2.0 * t as f64 - 1.0);
        for j in 0..h {
            let (c, l) = (j / L, j % L);
            for i in 0..p {
                self.w1[c * p + i][l] = w(theta[i * h + j]);
            }
            self.b1[c][l] = w(theta[p * h + j]);
            self.w2[c][l] = w(theta[p * h + h + j]);
        }
        self.b2 = 2.0 * theta[p * h + 2 * h] as f64 - 1.0;
    }

    /// The forward pass of a block of rows (`xblk`: rows of p features), fused: for each row
    /// and each run of L hidden units, b1 + Σ_i x_i W1[i, ·] in registers, tanh, stored in
    /// `a` (the backward pass needs it), and Σ_j h_j w2_j; `z` ← b2 + that sum. Hand-written
    /// because K = p is 13 on COMPAS: a GEMM call spends more on packing and on loading and
    /// storing its output than on 13 products, and the tanh and the output sum would be two
    /// more passes over memory.
    #[inline(always)]
    fn forward_block(&mut self, xblk: &[T]) {
        let (p, c) = (self.p, self.b1.len());
        let nr = xblk.len() / p;
        let mut r = 0;
        while r + ROW_GROUP <= nr {
            self.products::<ROW_GROUP>(xblk, r);
            r += ROW_GROUP;
        }
        for r in r..nr {
            self.products::<1>(xblk, r);
        }
        // Then tanh and the output sum, row by row (in L1).
        for (arow, zn) in self.a.chunks_exact_mut(c).zip(self.z.iter_mut()).take(nr) {
            let mut zacc = [T::zero(); L];
            for (v, w2) in arow.iter_mut().zip(&self.w2) {
                for l in 0..L {
                    v[l] = v[l].tanh_v();
                    zacc[l] = v[l].mul_add(w2[l], zacc[l]);
                }
            }
            *zn = self.b2 + zacc.iter().map(|v| v.get()).sum::<f64>();
        }
    }

    /// b1 + Σ_i x_i W1[i, ·] for the R rows from `r0`, one run of L units at a time: the R
    /// accumulators are independent chains of FMAs that share each loaded W1 run (one
    /// accumulator alone waits on the FMA latency at every step of its p-long chain). The
    /// sum's order is the same for every R, so the result does not depend on the grouping.
    #[inline(always)]
    fn products<const R: usize>(&mut self, xblk: &[T], r0: usize) {
        let c = self.b1.len();
        let mut cc = 0;
        while cc + 2 <= c {
            self.runs::<R, 2>(xblk, r0, cc);
            cc += 2;
        }
        if cc < c {
            self.runs::<R, 1>(xblk, r0, cc);
        }
    }

    /// [`Self::products`] for the runs `c0..c0 + C`: R·C accumulators, each x_i broadcast
    /// once for the C runs and each W1 run loaded once for the R rows.
    #[inline(always)]
    fn runs<const R: usize, const C: usize>(&mut self, xblk: &[T], r0: usize, c0: usize) {
        let (p, c) = (self.p, self.b1.len());
        let xr: [&[T]; R] = std::array::from_fn(|k| &xblk[(r0 + k) * p..(r0 + k + 1) * p]);
        let w: [&[[T; L]]; C] = std::array::from_fn(|j| &self.w1[(c0 + j) * p..(c0 + j + 1) * p]);
        let mut acc: [[[T; L]; C]; R] = [std::array::from_fn(|j| self.b1[c0 + j]); R];
        for i in 0..p {
            let wi: [[T; L]; C] = std::array::from_fn(|j| w[j][i]);
            for (a, x) in acc.iter_mut().zip(&xr) {
                let xi = x[i];
                for (aj, wj) in a.iter_mut().zip(&wi) {
                    for l in 0..L {
                        aj[l] = xi.mul_add(wj[l], aj[l]);
                    }
                }
            }
        }
        for (k, a) in acc.into_iter().enumerate() {
            for (j, aj) in a.into_iter().enumerate() {
                self.a[(r0 + k) * c + c0 + j] = aj;
            }
        }
    }
}

/// Rows whose forward products [`Kernel::products`] computes together.
const ROW_GROUP: usize = 4;

/// tanh(x) = sign(x)·(1 − e)/(1 + e) with e = exp(−2|x|), the exponential computed inline
/// ([`exp_nonpositive`]) so that the loop over N·H entries vectorises. Hand-written because
/// the forward pass is dominated by N·H·chains tanh calls: libm's `tanh` measured 26 ns per
/// call here, the same form through libm's `exp` 5.7 ns; the unit tests compare with libm.
#[inline(always)]
fn tanh(x: f64) -> f64 {
    let e = exp_nonpositive(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

/// tanh in f32: the odd minimax rational approximation x·P(x²)/Q(x²) (degrees 13/6) of
/// Eigen's float `tanh` (`generic_fast_tanh_float`), on x clamped to ±7.9053 where it reaches
/// 1 in f32. Eight FMAs and a division with no exponent-bit work: about half the operations of
/// the exp-based form [`tanh`] uses, and this loop is most of the forward pass. Absolute error
/// vs f64 tanh ≤ 3e−7 over the whole line (unit test; f32's own rounding near 1 is 6e−8), and
/// relative accuracy near 0 as well (within 1e−6 of x for tiny x).
#[inline(always)]
#[allow(clippy::excessive_precision)] // the coefficients as published, rounded by the compiler
fn tanh32(x: f32) -> f32 {
    const CLAMP: f32 = 7.905_311;
    let x = x.clamp(-CLAMP, CLAMP);
    let x2 = x * x;
    let mut num: f32 = -2.760_768_5e-16;
    for c in [2.000_187_9e-13, -8.604_671_5e-11, 5.122_297e-8, 1.485_722_4e-5, 6.372_619_3e-4, 4.893_524_6e-3] {
        num = num.mul_add(x2, c);
    }
    let mut den: f32 = 1.198_258_4e-6;
    for c in [1.185_347_1e-4, 2.268_434_6e-3, 4.893_525_2e-3] {
        den = den.mul_add(x2, c);
    }
    x * num / den
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
    let t = y.mul_add(std::f64::consts::LOG2_E, MAGIC);
    let k = t - MAGIC;
    let r = k.mul_add(-LN2_LO, k.mul_add(-LN2_HI, y));
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
        p = p.mul_add(r, c);
    }
    let ki = (t.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64);
    p * f64::from_bits(((ki + 1023) << 52) as u64)
}

impl Target for BnnModel {
    fn space(&self) -> &Space {
        &self.space
    }

    fn capabilities(&self) -> dlp_core::Capabilities<'_> {
        dlp_core::Capabilities { n_data: Some(self.n()), site_updates: Some(self), ..dlp_core::Capabilities::default() }
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
    use dlp_core::TargetExt;
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
            m.log_density_grad_batch(&theta, &mut f, &mut g).unwrap();
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
        m.log_density_grad_batch(&theta, &mut f, &mut g).unwrap();
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

    /// A network larger than one block with a partial last block and H not a multiple of
    /// the lane count: p = 5, H = 20 (padded to 32), N = 600 (blocks of 256, 256, 88).
    fn blocked() -> BnnModel {
        let mut rng = dlp_core::setup_rng(5);
        let x: Vec<f64> = (0..3000).map(|_| rng.random_range(-2.0..2.0)).collect();
        let y: Vec<f64> = (0..600).map(|_| rng.random_range(0..2) as f64).collect();
        BnnModel::new(141, 5, 20, 100.0, x, y).unwrap()
    }

    #[test]
    fn blocks_and_padded_lanes_give_the_formula_and_its_gradient() {
        let m = blocked();
        let mut rng = dlp_core::setup_rng(3);
        let all: Vec<usize> = (0..m.n()).collect();
        let xs: Vec<u32> = (0..3 * 141).map(|_| rng.random_range(0..2)).collect();
        let (mut f, mut g) = (vec![0.0; 3], vec![0.0; 3 * 141]);
        m.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
        for c in 0..3 {
            let w: Vec<f64> = xs[c * 141..(c + 1) * 141].iter().map(|&t| 2.0 * t as f64 - 1.0).collect();
            let want = by_formula(&m, &w, &all);
            assert!((f[c] - want).abs() < 1e-10 * want.abs(), "chain {c}: {} vs formula {want}", f[c]);
            // Every coordinate against central differences (error O(h²), ~1e−8 relative).
            let h = 1e-5;
            for i in 0..141 {
                let (mut up, mut dn) = (w.clone(), w.clone());
                up[i] += 2.0 * h;
                dn[i] -= 2.0 * h;
                let fd = (by_formula(&m, &up, &all) - by_formula(&m, &dn, &all)) / (2.0 * h);
                let gi = g[c * 141 + i];
                assert!((fd - gi).abs() < 1e-6 * (1.0 + gi.abs()), "chain {c}, coordinate {i}: fd {fd} vs {gi}");
            }
            // A chain evaluated alone gives the same bits as in the batch (rows never interact).
            let (mut f1, mut g1) = ([0.0], vec![0.0; 141]);
            m.log_density_grad_batch(&xs[c * 141..(c + 1) * 141], &mut f1, &mut g1).unwrap();
            assert_eq!(f1[0].to_bits(), f[c].to_bits());
            assert!(g1.iter().zip(&g[c * 141..]).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
        // Predictions cross blocks too: f = −τ mean (ŷ − y)².
        let mut q = vec![0.0; 600];
        m.predict(&xs[..141], m.features(), &mut q);
        let mse = q.iter().zip(m.targets()).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / 600.0;
        assert!((f[0] + 100.0 * mse).abs() < 1e-10 * f[0].abs());
    }

    #[test]
    fn the_f32_evaluation_is_the_f64_one_to_its_stated_accuracy() {
        let m = blocked();
        let m32 = m.clone().with_precision(Precision::F32);
        assert_eq!(m32.precision(), Precision::F32);
        let mut rng = dlp_core::setup_rng(4);
        let xs: Vec<u32> = (0..8 * 141).map(|_| rng.random_range(0..2)).collect();
        let (mut f, mut g) = (vec![0.0; 8], vec![0.0; 8 * 141]);
        let (mut f32v, mut g32) = (vec![0.0; 8], vec![0.0; 8 * 141]);
        m.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
        m32.log_density_grad_batch(&xs, &mut f32v, &mut g32).unwrap();
        // f32 rounding (6e−8 relative) through p + H + 1 terms: measured |Δf| = 4.4e−7 here
        // and |Δ∇f| = 1.5e−6; deterministic, and the bound leaves a factor ≥ 60.
        let ef = f.iter().zip(&f32v).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let eg = g.iter().zip(&g32).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(ef < 1e-4 && eg < 1e-4, "f32 vs f64: |Δf| {ef:e}, |Δ∇f| {eg:e}");
        assert!(ef > 0.0, "the f32 path was not taken");
        // Minibatches and predictions take the same path.
        let items = [3usize, 599, 256, 255, 0];
        let (mut fb, mut fb32) = ([0.0], [0.0]);
        m.evaluate(&xs[..141], Batch::Items(&items), &mut fb, None).unwrap();
        m32.evaluate(&xs[..141], Batch::Items(&items), &mut fb32, None).unwrap();
        assert!((fb[0] - fb32[0]).abs() < 1e-4);
        let (mut q, mut q32) = (vec![0.0; 600], vec![0.0; 600]);
        m.predict(&xs[..141], m.features(), &mut q);
        m32.predict(&xs[..141], m.features(), &mut q32);
        assert!(q.iter().zip(&q32).all(|(a, b)| (a - b).abs() < 1e-5));
    }

    #[test]
    fn saturated_rows_left_out_of_the_f32_gradient_move_it_by_nothing_measurable() {
        // H = 100, θ all ones (w = +1): every hidden unit is tanh(x₁ + x₂ + 1) and
        // z = 1 + 100·tanh(x₁ + x₂ + 1), so rows with |x₁ + x₂ + 1| ≳ 0.7 have |z| > 60 and
        // |∂f/∂z| < 2⁻⁸⁰ (left out in f32), rows near x₁ + x₂ = −1 do not. If a left-out
        // row's activations reached the backward product (they hold h ≈ ±1, not Δ), ∇f for
        // W1 would move by ~Σ|x| ≈ 100, not by 1e−6.
        let n = 300;
        let x: Vec<f64> = (0..n).flat_map(|r| [-3.0 + 6.0 * r as f64 / n as f64, -0.5]).collect();
        let y: Vec<f64> = (0..n).map(|r| (r % 3 == 0) as u8 as f64).collect();
        let (p, h) = (2, 100);
        let d = (p + 2) * h + 1;
        let m = BnnModel::new(d, p, h, 100.0, x, y).unwrap();
        let m32 = m.clone().with_precision(Precision::F32);
        let theta = vec![1u32; d];
        let mut q = vec![0.0; n];
        m.predict(&theta, m.features(), &mut q);
        let saturated = q.iter().filter(|&&q| q * (1.0 - q) < 1e-26).count();
        assert!(saturated > n / 2 && saturated < n - 10, "{saturated} of {n} rows saturated");
        let (mut f, mut g, mut f32v, mut g32) = ([0.0], vec![0.0; d], [0.0], vec![0.0; d]);
        m.log_density_grad_batch(&theta, &mut f, &mut g).unwrap();
        m32.log_density_grad_batch(&theta, &mut f32v, &mut g32).unwrap();
        let eg = g.iter().zip(&g32).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let gmax = g.iter().map(|v| v.abs()).fold(0.0, f64::max);
        assert!(gmax > 0.01, "the unsaturated rows give a gradient ({gmax})");
        assert!(eg < 1e-4 && (f[0] - f32v[0]).abs() < 1e-4, "f32 vs f64: |Δ∇f| {eg:e}");
    }

    #[test]
    fn the_f32_tanh_is_within_3e_7_of_tanh_everywhere_and_nan_free() {
        let mut worst = 0.0f64;
        for i in 0..400_001 {
            let x = -100.0 + 200.0 * i as f64 / 400_000.0;
            let t = tanh32(x as f32);
            assert!(t.is_finite() && t.abs() <= 1.0, "tanh32({x}) = {t}");
            worst = worst.max((t as f64 - (x as f32 as f64).tanh()).abs());
        }
        assert!(worst < 3e-7, "tanh32 error {worst:e}");
        for x in [0.0f32, -0.0, 1e-30, -1e-30, 1e-8, 10.5, -10.5, 87.0, 800.0, -800.0, f32::MAX, f32::MIN] {
            let t = tanh32(x);
            assert!(
                (t as f64 - (x as f64).tanh()).abs() < 3e-7 * (1.0 + (x as f64).abs().min(1.0)),
                "tanh32({x}) = {t}"
            );
        }
        // Relative accuracy near 0 too (the rational form has no 1 − e to cancel).
        assert_eq!(tanh32(0.0), 0.0);
        assert!((tanh32(1e-30) / 1e-30 - 1.0).abs() < 1e-6 && (tanh32(-1e-8) / -1e-8 - 1.0).abs() < 1e-6);
    }

    #[test]
    fn predictions_are_the_forward_pass() {
        let m = small(1.0);
        let theta = [0u32, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0];
        let mut yhat = vec![0.0; 7];
        m.predict(&theta, &m.x, &mut yhat);
        // f = −τ mean (ŷ − y)² with τ = 1.
        let mse = yhat.iter().zip(&m.y).map(|(q, t)| (q - t) * (q - t)).sum::<f64>() / 7.0;
        assert!((m.log_density(&theta).unwrap() + mse).abs() < 1e-12);
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
