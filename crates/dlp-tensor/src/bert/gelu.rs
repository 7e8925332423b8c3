//! GELU's f32 forward, x·Φ(x) = (erf(x/√2) + 1)·0.5·x, over a slice, bit for bit what candle's
//! `gelu_erf` computes element by element (its `erf_f32` is the `libm` crate's `erff`, FreeBSD's
//! `s_erff.c`, whose large-|x| branch calls `libm`'s `expf`, `e_expf.c`).
//!
//! Why by hand: that scalar, branchy `erff` was 18% of AntiBERTy's energy + gradient in a
//! 1-thread profile after the matrix products got AVX-512 (`paper/performance.md`). Here every
//! branch of `erff` and `expf` is computed for each element and the right one selected, so a
//! loop over a slice vectorises; blocks without an |x| ≥ 1.25 skip the `expf` branch. The
//! operations and their order are fdlibm's, written without fused multiply-adds, so each
//! element rounds exactly as the scalar code does at any vector width: values are unchanged
//! (tests compare against `erf_f32` on every 613th f32 bit pattern and the branch edges, and
//! an ignored test on all 2³² of them), and so is every sampler's path.

// fdlibm's constants, kept as printed there so that they can be checked against it.
#![allow(clippy::excessive_precision, clippy::unreadable_literal)]

const ERX: f32 = 8.4506291151e-01;
const EFX8: f32 = 1.0270333290e+00;
const PP0: f32 = 1.2837916613e-01;
const PP1: f32 = -3.2504209876e-01;
const PP2: f32 = -2.8481749818e-02;
const PP3: f32 = -5.7702702470e-03;
const PP4: f32 = -2.3763017452e-05;
const QQ1: f32 = 3.9791721106e-01;
const QQ2: f32 = 6.5022252500e-02;
const QQ3: f32 = 5.0813062117e-03;
const QQ4: f32 = 1.3249473704e-04;
const QQ5: f32 = -3.9602282413e-06;
const PA0: f32 = -2.3621185683e-03;
const PA1: f32 = 4.1485610604e-01;
const PA2: f32 = -3.7220788002e-01;
const PA3: f32 = 3.1834661961e-01;
const PA4: f32 = -1.1089469492e-01;
const PA5: f32 = 3.5478305072e-02;
const PA6: f32 = -2.1663755178e-03;
const QA1: f32 = 1.0642088205e-01;
const QA2: f32 = 5.4039794207e-01;
const QA3: f32 = 7.1828655899e-02;
const QA4: f32 = 1.2617121637e-01;
const QA5: f32 = 1.3637083583e-02;
const QA6: f32 = 1.1984500103e-02;
const RA0: f32 = -9.8649440333e-03;
const RA1: f32 = -6.9385856390e-01;
const RA2: f32 = -1.0558626175e+01;
const RA3: f32 = -6.2375331879e+01;
const RA4: f32 = -1.6239666748e+02;
const RA5: f32 = -1.8460508728e+02;
const RA6: f32 = -8.1287437439e+01;
const RA7: f32 = -9.8143291473e+00;
const SA1: f32 = 1.9651271820e+01;
const SA2: f32 = 1.3765776062e+02;
const SA3: f32 = 4.3456588745e+02;
const SA4: f32 = 6.4538726807e+02;
const SA5: f32 = 4.2900814819e+02;
const SA6: f32 = 1.0863500214e+02;
const SA7: f32 = 6.5702495575e+00;
const SA8: f32 = -6.0424413532e-02;
const RB0: f32 = -9.8649431020e-03;
const RB1: f32 = -7.9928326607e-01;
const RB2: f32 = -1.7757955551e+01;
const RB3: f32 = -1.6063638306e+02;
const RB4: f32 = -6.3756646729e+02;
const RB5: f32 = -1.0250950928e+03;
const RB6: f32 = -4.8351919556e+02;
const SB1: f32 = 3.0338060379e+01;
const SB2: f32 = 3.2579251099e+02;
const SB3: f32 = 1.5367296143e+03;
const SB4: f32 = 3.1998581543e+03;
const SB5: f32 = 2.5530502930e+03;
const SB6: f32 = 4.7452853394e+02;
const SB7: f32 = -2.2440952301e+01;

// e_expf.c's.
const LN2_HI: f32 = 6.9314575195e-01;
const LN2_LO: f32 = 1.4286067653e-06;
const INV_LN2: f32 = 1.4426950216e+00;
const P1: f32 = 1.6666625440e-1;
const P2: f32 = -2.7667332906e-3;

/// `libm::expf(x)` for −88 < x < 88, the only arguments `erf_lane` passes (there
/// −z² − 0.5625 ≥ −36.6 and the correction term is within (−1, 1)), where none of `expf`'s
/// overflow, underflow or NaN branches is taken and `scalbnf(y, k)` is the exact product y·2ᵏ.
#[inline(always)]
fn expf_lane(x: f32) -> f32 {
    let hx = x.to_bits() & 0x7fff_ffff;
    let neg = x.to_bits() >> 31 != 0;
    // |x| > 1.5 ln 2: k = trunc(x/ln 2 ± 1/2); (0.5 ln 2, 1.5 ln 2]: k = ±1; below: k = 0.
    let half = if neg { -0.5 } else { 0.5 };
    let k_far = (INV_LN2 * x + half) as i32;
    let k_near = if neg { -1 } else { 1 };
    let reduce = hx > 0x3eb1_7218;
    let k = if !reduce {
        0
    } else if hx > 0x3f85_1592 {
        k_far
    } else {
        k_near
    };
    let kf = k as f32;
    let hi_r = x - kf * LN2_HI;
    let lo_r = kf * LN2_LO;
    let (hi, lo, xr) = if reduce { (hi_r, lo_r, hi_r - lo_r) } else { (x, 0.0, x) };
    let xx = xr * xr;
    let c = xr - xx * (P1 + xx * P2);
    let y = 1. + (xr * c / (2. - c) - lo + hi);
    // 2ᵏ, exact; k is clamped only so that unselected lanes make no invalid bit pattern.
    let scale = f32::from_bits(((k.clamp(-126, 127) + 0x7f) as u32) << 23);
    let tiny = hx <= 0x3900_0000; // |x| ≤ 2⁻¹⁴: expf returns 1 + x
    if tiny { 1. + x } else { y * scale }
}

/// The terms erfc(|x|) of `s_erff.c`'s `erfc2` for 1.25 ≤ |x| < 6, as its code computes them.
#[inline(always)]
fn erfc2_lane(ax: f32) -> f32 {
    let s = 1.0 / (ax * ax);
    let near = ax.to_bits() < 0x4036_db6d; // |x| < 1/0.35
    let ra = RA0 + s * (RA1 + s * (RA2 + s * (RA3 + s * (RA4 + s * (RA5 + s * (RA6 + s * RA7))))));
    let sa = 1.0 + s * (SA1 + s * (SA2 + s * (SA3 + s * (SA4 + s * (SA5 + s * (SA6 + s * (SA7 + s * SA8)))))));
    let rb = RB0 + s * (RB1 + s * (RB2 + s * (RB3 + s * (RB4 + s * (RB5 + s * RB6)))));
    let sb = 1.0 + s * (SB1 + s * (SB2 + s * (SB3 + s * (SB4 + s * (SB5 + s * (SB6 + s * SB7))))));
    let (r, big_s) = if near { (ra, sa) } else { (rb, sb) };
    let z = f32::from_bits(ax.to_bits() & 0xffff_e000);
    expf_lane(-z * z - 0.5625) * expf_lane((z - ax) * (z + ax) + r / big_s) / ax
}

/// `libm::erff(x)`, bit for bit, branch-free; `WIDE` adds the 1.25 ≤ |x| < 6 branch (without
/// it such inputs give a wrong value: callers pass `WIDE = false` only for blocks free of them).
#[inline(always)]
fn erf_lane<const WIDE: bool>(x: f32) -> f32 {
    let ix = x.to_bits() & 0x7fff_ffff;
    let neg = x.to_bits() >> 31 != 0;
    let ax = f32::from_bits(ix);
    // |x| < 0.84375: x + x·r/s; [0.84375, 1.25): 1 − (1 − erx − p/q); one division for both.
    let z = x * x;
    let r = PP0 + z * (PP1 + z * (PP2 + z * (PP3 + z * PP4)));
    let s = 1.0 + z * (QQ1 + z * (QQ2 + z * (QQ3 + z * (QQ4 + z * QQ5))));
    let t = ax - 1.0;
    let p = PA0 + t * (PA1 + t * (PA2 + t * (PA3 + t * (PA4 + t * (PA5 + t * PA6)))));
    let q = 1.0 + t * (QA1 + t * (QA2 + t * (QA3 + t * (QA4 + t * (QA5 + t * QA6)))));
    let small = ix < 0x3f58_0000;
    let ratio = if small { r / s } else { p / q };
    let y_small = x + x * ratio;
    let y_tiny = 0.125 * (8.0 * x + EFX8 * x);
    let y_mid = 1.0 - (1.0 - ERX - ratio);
    let y_far = if WIDE { 1.0 - erfc2_lane(ax) } else { f32::NAN };
    let y_sat = 1.0 - f32::from_bits(0x0380_0000); // 1 − 2⁻¹²⁰
    let y = if ix < 0x3fa0_0000 {
        y_mid
    } else if ix < 0x40c0_0000 {
        y_far
    } else {
        y_sat
    };
    let signed = if neg { -y } else { y };
    let special = 1.0 - 2.0 * (neg as u32 as f32) + 1.0 / x; // NaN → NaN, ±∞ → ±1
    if ix >= 0x7f80_0000 {
        special
    } else if ix < 0x3180_0000 {
        y_tiny
    } else if small {
        y_small
    } else {
        signed
    }
}

/// Elements per block: a block with an |x/√2| ≥ 1.25 takes the `expf` branch for all of them.
const BLOCK: usize = 64;

/// out[i] = (erf(x[i]/√2) + 1)·0.5·x[i], candle's `gelu_erf` formula (lengths equal).
#[inline(always)]
fn gelu_slice_generic(x: &[f32], out: &mut [f32]) {
    for (xs, os) in x.chunks(BLOCK).zip(out.chunks_mut(BLOCK)) {
        // Inputs are scaled first, as candle does: erf's argument is v·(1/√2).
        let wide = xs.iter().any(|&v| (v * std::f32::consts::FRAC_1_SQRT_2).abs() >= 1.25);
        if wide {
            for (o, &v) in os.iter_mut().zip(xs) {
                *o = (erf_lane::<true>(v * std::f32::consts::FRAC_1_SQRT_2) + 1.) * 0.5 * v;
            }
        } else {
            for (o, &v) in os.iter_mut().zip(xs) {
                *o = (erf_lane::<false>(v * std::f32::consts::FRAC_1_SQRT_2) + 1.) * 0.5 * v;
            }
        }
    }
}

/// erf over a slice (the tests' entry to `erf_lane`, at the dispatched width).
#[cfg(test)]
#[inline(always)]
fn erf_slice_generic(x: &[f32], out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = erf_lane::<true>(v);
    }
}

/// Which loop runs: the widest the CPU has, or the baseline build (tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    /// AVX-512F, AVX2 or baseline, the widest available.
    Best,
    /// The baseline build (SSE2 on x86-64): only the tests force it.
    #[cfg_attr(not(test), allow(dead_code))]
    Baseline,
}

macro_rules! dispatched {
    ($(#[$doc:meta])* $name:ident, $generic:ident, $avx512:ident, $avx2:ident) => {
        #[doc = concat!("[`", stringify!($generic), "`] compiled for AVX-512F.")]
        ///
        /// # Safety
        /// The CPU must support AVX-512F (checked by the caller).
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        unsafe fn $avx512(x: &[f32], out: &mut [f32]) {
            $generic(x, out)
        }

        #[doc = concat!("[`", stringify!($generic), "`] compiled for AVX2.")]
        ///
        /// # Safety
        /// The CPU must support AVX2 (checked by the caller).
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $avx2(x: &[f32], out: &mut [f32]) {
            $generic(x, out)
        }

        $(#[$doc])*
        pub(crate) fn $name(x: &[f32], out: &mut [f32], width: Width) {
            assert_eq!(x.len(), out.len(), "input and output lengths differ");
            #[cfg(target_arch = "x86_64")]
            if width == Width::Best {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the feature was just detected.
                    return unsafe { $avx512(x, out) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the feature was just detected.
                    return unsafe { $avx2(x, out) };
                }
            }
            let _ = width;
            $generic(x, out)
        }
    };
}

dispatched!(
    /// GELU (erf form) of every element of `x` into `out`, bit for bit candle's `gelu_erf`.
    gelu_slice,
    gelu_slice_generic,
    gelu_avx512,
    gelu_avx2
);
#[cfg(test)]
dispatched!(
    /// `libm::erff` of every element of `x` into `out`, bit for bit.
    erf_slice,
    erf_slice_generic,
    erf_avx512,
    erf_avx2
);

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::cpu::erf::erf_f32;

    /// Inputs at and next to every branch edge of `erff` and `expf` (both signs), the
    /// special values, and every `step`-th bit pattern.
    fn inputs(step: u32) -> Vec<f32> {
        let mut bits: Vec<u32> = (0..=u32::MAX / step).map(|i| i * step).collect();
        for edge in [0u32, 0x3180_0000, 0x3f58_0000, 0x3fa0_0000, 0x4036_db6d, 0x40c0_0000, 0x7f80_0000, 0x3f35_04f3] {
            for d in 0..5u32 {
                for b in [edge.wrapping_add(d), edge.wrapping_sub(d)] {
                    bits.extend([b & 0x7fff_ffff, (b & 0x7fff_ffff) | 0x8000_0000]);
                }
            }
        }
        bits.extend([1, 0x8000_0001, 0x007f_ffff, 0x7fc0_0000, 0xffc0_0000, 0x7f7f_ffff, 0xff7f_ffff]);
        bits.into_iter().map(f32::from_bits).collect()
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    fn check_erf(x: &[f32]) {
        for width in [Width::Best, Width::Baseline] {
            let mut out = vec![0.0; x.len()];
            erf_slice(x, &mut out, width);
            for (&v, &o) in x.iter().zip(&out) {
                assert!(
                    same(o, erf_f32(v)),
                    "erf({v:e} = {:#010x}) at {width:?}: {o:e} vs libm {:e}",
                    v.to_bits(),
                    erf_f32(v)
                );
            }
        }
    }

    /// erf equals libm's `erff` bit for bit at the branch edges, the special values and
    /// 7 million bit patterns spread over the whole f32 line, at the dispatched and the
    /// baseline width. (A constant off by one ulp, or an operation reordered, changes
    /// thousands of these values.)
    #[test]
    fn erf_is_libms_erff_bit_for_bit() {
        check_erf(&inputs(613));
    }

    /// All 2³² inputs (3.5 CPU-minutes in release here: `cargo test --release -p dlp-tensor --lib
    /// -- --ignored erf_on_every_f32`).
    #[test]
    #[ignore = "exhaustive: 3.5 CPU-minutes in release here"]
    fn erf_on_every_f32() {
        let chunk = 1u64 << 24;
        let mut start = 0u64;
        while start < 1u64 << 32 {
            let x: Vec<f32> = (start..start + chunk).map(|b| f32::from_bits(b as u32)).collect();
            check_erf(&x);
            start += chunk;
        }
    }

    /// GELU equals candle's `gelu_erf` element by element (its formula with libm's `erff`),
    /// on blocks that take the narrow path, the wide path and a mix, and on the bit-pattern
    /// sweep; a ragged last block included.
    #[test]
    fn gelu_is_candles_gelu_erf_bit_for_bit() {
        let narrow: Vec<f32> = (0..200).map(|i| (i as f32 - 100.0) * 0.017).collect();
        let wide: Vec<f32> = (0..200).map(|i| (i as f32 - 100.0) * 0.09).collect();
        let mut x = [narrow, wide, inputs(104_729)].concat();
        x.push(1.8);
        for width in [Width::Best, Width::Baseline] {
            let mut out = vec![0.0; x.len()];
            gelu_slice(&x, &mut out, width);
            for (&v, &o) in x.iter().zip(&out) {
                let want = (erf_f32(v * std::f32::consts::FRAC_1_SQRT_2) + 1.) * 0.5 * v;
                assert!(same(o, want), "gelu({v:e}) at {width:?}: {o:e} vs {want:e}");
            }
        }
    }
}
