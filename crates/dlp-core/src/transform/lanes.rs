//! Branch-free e^x, e^x − 1 and log1p, and the fused (f, f′, f″/f′) of the sigmoid, softplus,
//! exp and ICLL transforms built on them, written so that a loop over a slice vectorises, and
//! that loop compiled three times (AVX-512, AVX2, baseline x86-64) with the widest chosen at run
//! time.
//!
//! Why by hand: a CoRV step on the NMF model updates 2·10⁵ coordinates with one transform each,
//! and libm's scalar `exp` made that update, not the gradient, the bulk of the step
//! (`benches/bounded_nmf.rs` in dlp-samplers). `wide`'s vector `exp`/`ln_1p` (in the lock file)
//! pick their width when compiled, so on the default x86-64 target they run on SSE2 pairs and
//! measured slower than libm here; `pulp` dispatches at run time but would still need this
//! polynomial written against its vector type. Plain arithmetic without fused multiply-adds
//! rounds identically at every width, so the scalar `Transform::forward_jac` (which calls the
//! same functions) and every dispatched slice kernel give bit-identical results: the CoRV
//! chain does not depend on which CPU runs it (tested).

// fdlibm's constants are kept as printed there (to 21 digits), so they can be checked against it.
#![allow(clippy::excessive_precision)]

/// log₂ e.
const LOG2E: f64 = std::f64::consts::LOG2_E;
/// ln 2 split so that n·LN2_HI is exact for |n| < 2¹¹ (fdlibm's constants).
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-1;
/// ln 2 − LN2_HI.
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;

/// (e^x, e^r − 1, 2ⁿ) for x = n ln 2 + r, |r| ≤ ln 2 / 2, x clamped to [−746, 710]:
/// Cody–Waite reduction; e^r − 1 by its Taylor polynomial of degree 13 (truncation < 4e−18)
/// evaluated by Estrin's scheme (a Horner chain of 13 dependent multiply-adds left the vector
/// units waiting on latency: 1.7× slower here); 2ⁿ as two normal powers of two so that
/// subnormal results come out right.
#[inline(always)]
fn exp_parts(x: f64) -> (f64, f64, f64) {
    let xc = x.clamp(-746.0, 710.0);
    // 1.5·2⁵²: adding it rounds to an integer, kept in the low mantissa bits.
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    let t = xc * LOG2E + SHIFT;
    let n = t - SHIFT;
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    let r2 = r * r;
    let r4 = r2 * r2;
    let r6 = r2 * r4;
    let q1 = 1.0 / 2.0 + r * (1.0 / 6.0);
    let q2 = 1.0 / 24.0 + r * (1.0 / 120.0);
    let q3 = 1.0 / 720.0 + r * (1.0 / 5_040.0);
    let q4 = 1.0 / 40_320.0 + r * (1.0 / 362_880.0);
    let q5 = 1.0 / 3_628_800.0 + r * (1.0 / 39_916_800.0);
    let q6 = 1.0 / 479_001_600.0 + r * (1.0 / 6_227_020_800.0);
    let s1 = q2 + q3 * r2;
    let t1 = (q4 + q5 * r2) + q6 * r4;
    let pm1 = r + r2 * ((q1 + s1 * r2) + t1 * r6);
    // n from the low 12 bits of t's mantissa (2⁵¹ + n there), sign-extended; |n| ≤ 1077. Split
    // n = n1 + n2 so that both 2^n1 and 2^n2 are normal.
    let ni = ((t.to_bits() << 52) as i64) >> 52;
    let n1 = ni >> 1;
    let n2 = ni - n1;
    let (s1, s2) = (f64::from_bits(((n1 + 1023) as u64) << 52), f64::from_bits(((n2 + 1023) as u64) << 52));
    ((1.0 + pm1) * s1 * s2, pm1, s1 * s2)
}

/// e^x to within 1 ulp of libm's (checked against it in the tests), NaN for NaN, 0 below
/// −745.2, ∞ above ln(f64::MAX).
#[inline(always)]
pub(super) fn exp(x: f64) -> f64 {
    exp_from(x, exp_parts(x))
}

/// [`exp`] from `parts = exp_parts(x)` (shared with [`exp_m1_from`] where both are needed).
#[inline(always)]
fn exp_from(x: f64, (y, ..): (f64, f64, f64)) -> f64 {
    if x > 709.782_712_893_384 {
        f64::INFINITY
    } else if x < -745.2 {
        0.0
    } else if x.is_nan() {
        x
    } else {
        y
    }
}

/// e^x − 1 within 2 ulp of libm's `exp_m1` (tested): 2ⁿ(e^r − 1) + (2ⁿ − 1), both terms exact
/// but for e^r − 1's own error and one rounding of the sum (2ⁿ − 1 is exact for the n ≥ −58 that
/// reach it), so no cancellation for small x (n = 0: the polynomial itself) nor for moderate x
/// (where e^x − 1 would lose the bits of e^x below 1).
#[inline(always)]
#[cfg(test)]
pub(super) fn exp_m1(x: f64) -> f64 {
    exp_m1_from(x, exp_parts(x))
}

/// [`exp_m1`] from `parts = exp_parts(x)`.
#[inline(always)]
fn exp_m1_from(x: f64, (y, pm1, s): (f64, f64, f64)) -> f64 {
    if x > 709.782_712_893_384 {
        f64::INFINITY
    } else if x < -40.0 {
        -1.0
    } else if x.is_nan() {
        x
    } else if s < 1e18 {
        s * pm1 + (s - 1.0)
    } else {
        // 2ⁿ may overflow (n = 1024) where e^x itself does not; the −1 is below e^x's ulp.
        y - 1.0
    }
}

/// ICLL's two forms meet at u = e^φ = 4: below, f = u·G(u); from there on, f = φ + γ + E₁(u)
/// with E₁(u) = e^{−u}·w·S(w), w = 1/u (e^{−u} is the kernel's already).
pub(super) const ICLL_SPLIT: f64 = 4.0;

/// G(u) ≈ Ein(u)/u = Σ_{k≥0} (−u)ᵏ/((k + 1)·(k + 1)!) on [0, 4], degree 16: the series
/// economised by a least-squares fit at 400 Chebyshev nodes of [0, 4] against 50-digit mpmath
/// values (`scripts/icll_fit.py`, which also prints S below). Degree 14 left 2e−15 relative error
/// in f at u = 4; 16 leaves 4e−16 (f64 rounding). Relative accuracy holds down to u → 0, where
/// f = u·G(0) = u.
const ICLL_EIN: [f64; 17] = [
    1.0,
    -0.249_999_999_999_999_53,
    0.055_555_555_555_544_31,
    -0.010_416_666_666_559_016,
    0.001_666_666_666_123_420_1,
    -0.000_231_481_479_815_857_88,
    2.834_466_782_829_332_2e-5,
    -3.100_193_652_135_370_5e-6,
    3.061_875_878_276_437e-7,
    -2.755_367_349_470_380_4e-8,
    2.275_411_305_783_054e-9,
    -1.731_013_987_284_796_3e-10,
    1.207_423_694_980_624_3e-11,
    -7.525_516_360_856_79e-13,
    3.917_730_643_513_427e-14,
    -1.479_703_652_826_15e-15,
    2.939_084_192_421_601e-17,
];

/// S(w) ≈ u·e^u·E₁(u) for w = 1/u ∈ (0, 1/4], degree 10: a least-squares fit on w ∈ [1/60, 1/4]
/// weighted by what f can tell apart (an error δ in S moves f by e^{−u}·w·δ, so the weight is
/// 1/(f·u·e^u): tight at u = 4, loose beyond u ≈ 15). Worst relative error of f over
/// u ∈ [4, 800]: 2.6e−16 (E₁ ≤ 0.004 beside f ≥ 1.9 there). S itself is 1 − w + 2w² − … only
/// asymptotically; the fit is not that series.
const ICLL_E1: [f64; 11] = [
    0.999_993_199_261_728_9,
    -0.999_502_147_485_635_8,
    1.983_174_409_933_769,
    -5.648_443_641_609_786,
    18.835_840_921_162_912,
    -61.828_468_569_129_34,
    174.797_836_299_905_98,
    -384.971_037_861_557_93,
    601.210_260_675_146,
    -584.120_156_276_873,
    263.553_485_119_256_2,
];

/// Σ c_k x^k for 17 coefficients by Estrin's scheme (independent pairs, then x², x⁴, x⁸, x¹⁶):
/// a Horner chain of 16 dependent steps waits on latency (see [`exp_parts`]).
#[inline(always)]
fn estrin17(c: &[f64; 17], x: f64) -> f64 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let a: [f64; 8] = std::array::from_fn(|i| c[2 * i] + c[2 * i + 1] * x);
    let b = [a[0] + a[1] * x2, a[2] + a[3] * x2, a[4] + a[5] * x2, a[6] + a[7] * x2];
    let d = [b[0] + b[1] * x4, b[2] + b[3] * x4];
    (d[0] + d[1] * x8) + c[16] * (x8 * x8)
}

/// Σ c_k x^k for 11 coefficients by Estrin's scheme.
#[inline(always)]
fn estrin11(c: &[f64; 11], x: f64) -> f64 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let a: [f64; 5] = std::array::from_fn(|i| c[2 * i] + c[2 * i + 1] * x);
    let b = [a[0] + a[1] * x2, a[2] + a[3] * x2, a[4] + c[10] * x2];
    (b[0] + b[1] * x4) + b[2] * (x4 * x4)
}

/// ICLL f(φ) = Ein(e^φ) = φ + γ + E₁(e^φ) from u = e^φ, e = e^{−u} and w = 1/u, branch-free
/// (both forms on every lane, one selected): u·G(u) below [`ICLL_SPLIT`], (φ + γ) + e·w·S(w)
/// from it. Both polynomials and the selection cost less than the piecewise Chebyshev table
/// this replaced (192 pieces of degree 8, read by nine vector gathers per value: 40% of the
/// fused kernel). Exact at both ends: φ → −∞ gives u·G(0) → 0, and once e^{−u} underflows
/// (u > 745) f is φ + γ, the closed form. NaN for NaN.
#[inline(always)]
pub(super) fn icll(phi: f64, u: f64, e: f64, w: f64) -> f64 {
    let small = u * estrin17(&ICLL_EIN, u);
    let large = (phi + super::EULER_GAMMA) + (e * w) * estrin11(&ICLL_E1, w);
    if u < ICLL_SPLIT { small } else { large }
}

/// ICLL on φ ∈ [−18, 6.6) (`Transform::forward_jac` uses other forms outside): u = e^φ, then
/// e^{−u} and expm1(−u) from one reduction of −u (both without cancellation), f′ = −expm1(−u)
/// and f″/f′ = u e^{−u}/f′ (= u/expm1(u)). One division gives both quotients the kernel needs,
/// r = 1/(u·f′): w = 1/u = f′·r for f's large-u form and f″/f′ = (u·e^{−u})·(u·r) (a vector
/// divide retires no faster per lane than a scalar one, see [`softplus_jac`]). An earlier form
/// took e^{−u} as 1 + expm1(−u), which cancels above u = ln 2, and so needed a third
/// exponential, expm1(u), there. Where e^{−u} underflows (u > ln f64::MAX: f″/f′ < 1e−305)
/// the separate form's u/expm1(u) is u/∞ = 0, and so is this.
#[inline(always)]
pub(super) fn icll_jac(phi: f64) -> (f64, f64, f64) {
    let u = exp(phi);
    let parts = exp_parts(-u);
    let (e, em) = (exp_from(-u, parts), exp_m1_from(-u, parts));
    let d = -em;
    let r = 1.0 / (u * d);
    let l = if u > 709.782_712_893_384 { 0.0 } else { (u * e) * (u * r) };
    (icll(phi, u, e, d * r), d, l)
}

/// fdlibm's `__ieee754_log` polynomial: log(1 + f) − f + f²/2 − s(f²/2 + R) = 0 to 2⁻⁵⁸ for
/// s = f/(2 + f), |s| ≤ 0.1716 (f ∈ [√½ − 1, √2 − 1]); returns R(s²).
#[inline(always)]
fn log_kernel(s: f64) -> f64 {
    const LG1: f64 = 6.666_666_666_666_735_13e-1;
    const LG2: f64 = 3.999_999_999_940_941_908e-1;
    const LG3: f64 = 2.857_142_874_366_239_149e-1;
    const LG4: f64 = 2.222_219_843_214_978_396e-1;
    const LG5: f64 = 1.818_357_216_161_805_012e-1;
    const LG6: f64 = 1.531_383_769_920_937_332e-1;
    const LG7: f64 = 1.479_819_860_511_658_591e-1;
    let z = s * s;
    let w = z * z;
    z * (LG1 + w * (LG3 + w * (LG5 + w * LG7))) + w * (LG2 + w * (LG4 + w * LG6))
}

/// u = 1 + x for x ∈ [0, 1] reduced for [`log_kernel`]: (k, f) with u = 2ᵏ(1 + f), k ∈ {0, 1},
/// f exact (Sterbenz). k is arithmetic, not a select: with selects LLVM left the loop scalar.
#[inline(always)]
fn reduce(u: f64) -> (f64, f64) {
    let k = f64::from(u8::from(u > std::f64::consts::SQRT_2));
    (k, u * (1.0 - 0.5 * k) - 1.0)
}

/// log(1 + x) for x ∈ [0, 1] (what softplus needs: x = e^{−|φ|}), within 1 ulp of libm's
/// (tested): log u of u = 1 + x by fdlibm's kernel, plus the rounding of 1 + x put back as
/// (x − (u − 1))/u. The form [`softplus_jac`] uses shares its divisions with σ; this one is
/// its reference.
#[cfg(test)]
pub(super) fn ln_1p_unit(x: f64) -> f64 {
    let u = 1.0 + x;
    let (k, f) = reduce(u);
    let s = f / (2.0 + f);
    let hfsq = 0.5 * f * f;
    k * LN2_HI + ((f - (hfsq - s * (hfsq + log_kernel(s)))) + (k * LN2_LO + (x - (u - 1.0)) / u))
}

/// (σ(φ), σ(−φ), e^{−|φ|}): both logistic values without cancellation, from one exponential
/// and one division (σ(−|φ|) = e^{−|φ|}·σ(|φ|)).
#[inline(always)]
fn logistic_pair(phi: f64) -> (f64, f64, f64) {
    let e = exp(-phi.abs());
    let big = 1.0 / (1.0 + e);
    let small = e * big;
    if phi >= 0.0 { (big, small, e) } else { (small, big, e) }
}

/// Sigmoid: (σ, σ(1 − σ), 1 − 2σ) with 1 − σ and σ taken from the pair (no cancellation).
#[inline(always)]
pub(super) fn sigmoid_jac(phi: f64) -> (f64, f64, f64) {
    let (s, sm, _) = logistic_pair(phi);
    (s, s * sm, sm - s)
}

/// Softplus: (max(φ, 0) + log1p(e^{−|φ|}), σ(φ), σ(−φ)) with one division for the four
/// quotients 1/u (u = 1 + e^{−|φ|}: σ(|φ|) and log1p's correction) and f/(2 + f) (the log
/// kernel's s): 1/(u(2 + f)) times the other factor. Divisions, not the exponential, bounded
/// this loop (a vector divide retires no faster per lane than a scalar one); each quotient
/// gains at most a rounding or two (within a few ulp of the separate functions, tested).
#[inline(always)]
pub(super) fn softplus_jac(phi: f64) -> (f64, f64, f64) {
    let e = exp(-phi.abs());
    let u = 1.0 + e;
    let (k, f) = reduce(u);
    let den = 2.0 + f;
    let r = 1.0 / (u * den);
    let big = den * r;
    let small = e * big;
    let s = f * (u * r);
    let hfsq = 0.5 * f * f;
    let log1p = k * LN2_HI + ((f - (hfsq - s * (hfsq + log_kernel(s)))) + (k * LN2_LO + (e - (u - 1.0)) * big));
    let (sp, sm) = if phi >= 0.0 { (big, small) } else { (small, big) };
    (phi.max(0.0) + log1p, sp, sm)
}

/// Exp: (e^φ, e^φ, 1).
#[inline(always)]
pub(super) fn exp_jac(phi: f64) -> (f64, f64, f64) {
    let e = exp(phi);
    (e, e, 1.0)
}

/// The maps with a vectorisable kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Map {
    /// [`sigmoid_jac`].
    Sigmoid,
    /// [`softplus_jac`].
    Softplus,
    /// [`exp_jac`].
    Exp,
    /// [`icll_jac`] (on [−18, 6.6); the caller redoes other φ with the scalar forms).
    Icll,
}

/// `map(φ)` elementwise into (θ, dθ/dφ, f″/f′) = (lo + scale·f, scale·f′, f″/f′): the loop every
/// width compiles. The kernel is called directly inside a match on `map` (hoisted out of the
/// loop by the compiler): passed as a generic `Fn`, the softplus kernel was called through a
/// shim LLVM would not inline, and that loop ran scalar at a quarter of the exp loop's speed.
#[inline(always)]
fn fill(map: Map, lo: f64, scale: f64, phi: &[f64], f: &mut [f64], d: &mut [f64], l: &mut [f64]) {
    let n = phi.len();
    let (f, d, l) = (&mut f[..n], &mut d[..n], &mut l[..n]);
    macro_rules! run {
        ($x:ident => $kernel:expr) => {
            for i in 0..n {
                let $x = phi[i];
                let (a, b, c) = $kernel;
                f[i] = lo + scale * a;
                d[i] = scale * b;
                l[i] = c;
            }
        };
    }
    match map {
        Map::Sigmoid => run!(x => sigmoid_jac(x)),
        Map::Softplus => run!(x => softplus_jac(x)),
        Map::Exp => run!(x => exp_jac(x)),
        Map::Icll => run!(x => icll_jac(x)),
    }
}

/// [`fill`] compiled for AVX-512F.
///
/// # Safety
/// The CPU must support AVX-512F (checked by the caller).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fill_avx512(map: Map, lo: f64, scale: f64, phi: &[f64], f: &mut [f64], d: &mut [f64], l: &mut [f64]) {
    fill(map, lo, scale, phi, f, d, l)
}

/// [`fill`] compiled for AVX2.
///
/// # Safety
/// The CPU must support AVX2 (checked by the caller).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fill_avx2(map: Map, lo: f64, scale: f64, phi: &[f64], f: &mut [f64], d: &mut [f64], l: &mut [f64]) {
    fill(map, lo, scale, phi, f, d, l)
}

/// Which compiled width [`fill_slices`] runs: the widest the CPU has, or a forced one (tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Width {
    /// The widest available.
    Best,
    /// The baseline build (SSE2 on x86-64): only the tests force it.
    #[cfg_attr(not(test), allow(dead_code))]
    Baseline,
}

/// [`fill`] at the widest width the CPU offers, or the baseline one (`f`, `d`, `l` at least as
/// long as `phi`: `fill` slices them to its length).
#[allow(clippy::too_many_arguments)] // one map, its width, its affine move, and four slices
pub(super) fn fill_slices(
    map: Map,
    width: Width,
    lo: f64,
    scale: f64,
    phi: &[f64],
    f: &mut [f64],
    d: &mut [f64],
    l: &mut [f64],
) {
    #[cfg(target_arch = "x86_64")]
    if width == Width::Best {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature was just detected.
            return unsafe { fill_avx512(map, lo, scale, phi, f, d, l) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the feature was just detected.
            return unsafe { fill_avx2(map, lo, scale, phi, f, d, l) };
        }
    }
    let _ = width;
    fill(map, lo, scale, phi, f, d, l)
}
