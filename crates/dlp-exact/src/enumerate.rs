//! Exhaustive enumeration of a target's space: log Z, marginals, moments, E_π\[h\], and the
//! full probability vector for spaces up to [`MAX_PROBS`] states.
//!
//! States are visited in [`Space::state_of_index`] order (first coordinate most
//! significant) in fixed blocks of [`BLOCK`] states. Each block is evaluated with one
//! `log_density_batch` call and summarised relative to its own maximum; the block summaries
//! are then combined sequentially in block order. Block boundaries and the combination order
//! do not depend on the number of threads, so every number is bit-identical for any rayon
//! pool size.
//!
//! Fast path: on binary/spin spaces whose target computes one flip cheaply
//! ([`TargetExt::cheap_flip_delta`], the lattice Ising), each block is walked in Gray-code order
//! and f is updated by single-flip differences, re-evaluated exactly at every block start
//! ([`gray_code_applies`]). Results then differ from [`enumerate_plain`] by rounding only
//! (~1e-13), and are still bit-identical for any thread count.

use crate::ExactError;
use dlp_core::TargetExt;
use dlp_core::{Space, Target};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// States per parallel block (a few thousand: large enough for matrix-product models,
/// small enough to balance two cores on 2^20 states).
pub const BLOCK: usize = 4096;

/// Largest space whose probability vector [`enumerate`] keeps (2^22 states, 32 MiB).
pub const MAX_PROBS: u64 = 1 << 22;

/// Largest space [`enumerate`] agrees to visit (2^34 states; 2^25 takes seconds in release).
pub const MAX_STATES: u64 = 1 << 34;

/// A function of a state (index vector) whose expectation under π is wanted.
pub type StateFn<'a> = dyn Fn(&[u32]) -> f64 + Sync + 'a;

/// What [`enumerate`] computes besides log Z, marginals and E_π\[f\].
#[derive(Clone, Debug)]
pub struct EnumOptions {
    /// Also compute E_π[v_i v_j] for all pairs (d² work per state).
    pub pair_moments: bool,
    /// Keep the probability vector (only honoured when the space has ≤ [`MAX_PROBS`] states).
    pub keep_probs: bool,
}

impl Default for EnumOptions {
    fn default() -> Self {
        EnumOptions { pair_moments: false, keep_probs: true }
    }
}

/// The exact facts of π ∝ exp(f) on an enumerable space.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Enumeration {
    /// |V|^d.
    pub n_states: u64,
    /// Number of coordinates.
    pub d: usize,
    /// Values per coordinate.
    pub k: usize,
    /// log Z = log Σ_x exp f(x).
    pub log_z: f64,
    /// P(x_i = index v), d × K row-major.
    pub marginals: Vec<f64>,
    /// E_π of each coordinate's user value (−1/+1 for spin, the value list otherwise).
    pub mean_value: Vec<f64>,
    /// E_π\[f\].
    pub mean_log_density: f64,
    /// E_π[v_i v_j] of the user values, d × d row-major, if asked for.
    pub pair_moments: Option<Vec<f64>>,
    /// π(x) for every state in index order, if asked for and the space is small enough.
    pub probs: Option<Vec<f64>>,
    /// E_π\[h_m\] for the extra functions passed to [`enumerate_with`], in order.
    pub expectations: Vec<f64>,
}

/// Sums of one block, relative to the block's maximum log-density `max`.
struct BlockSums {
    max: f64,
    total: f64,
    marg: Vec<f64>,
    f_sum: f64,
    pairs: Vec<f64>,
    extra: Vec<f64>,
    log_densities: Vec<f64>,
}

/// Number of states of `space`, or an error if it exceeds `limit`.
pub fn checked_n_states(space: &Space, limit: u64, what: &'static str) -> Result<u64, ExactError> {
    match space.n_states() {
        Some(n) if n <= limit => Ok(n),
        n => Err(ExactError::TooManyStates {
            what,
            n_states: n.map_or_else(|| format!("{}^{}", space.k(), space.d), |n| n.to_string()),
            limit,
        }),
    }
}

/// Writes states `first .. first + count` (index order) into `out` (count × d), decoding
/// the first and then counting like an odometer, last coordinate fastest.
pub fn fill_states(space: &Space, first: u64, count: usize, out: &mut Vec<u32>) {
    let d = space.d;
    let k = space.k() as u32;
    out.clear();
    out.resize(count * d, 0);
    if count == 0 {
        return;
    }
    space.state_of_index(first, &mut out[..d]);
    for s in 1..count {
        let (prev, cur) = out[(s - 1) * d..(s + 1) * d].split_at_mut(d);
        cur.copy_from_slice(prev);
        for c in cur.iter_mut().rev() {
            *c += 1;
            if *c < k {
                break;
            }
            *c = 0;
        }
    }
}

/// All states of `space` in index order, `n × d` row-major (at most `limit` states).
pub fn all_states(space: &Space, limit: u64) -> Result<Vec<u32>, ExactError> {
    let n = checked_n_states(space, limit, "all_states")?;
    let mut out = Vec::new();
    fill_states(space, 0, n as usize, &mut out);
    Ok(out)
}

/// log Z, marginals, E_π\[value\], E_π\[f\] (and optionally pair moments and π itself).
pub fn enumerate(target: &dyn Target, options: &EnumOptions) -> Result<Enumeration, ExactError> {
    enumerate_with(target, options, &[])
}

/// [`enumerate`] plus E_π\[h\] for each `h` in `fns`.
pub fn enumerate_with(
    target: &dyn Target,
    options: &EnumOptions,
    fns: &[&StateFn<'_>],
) -> Result<Enumeration, ExactError> {
    enumerate_impl(target, options, fns, gray_code_applies(target))
}

fn enumerate_impl(
    target: &dyn Target,
    options: &EnumOptions,
    fns: &[&StateFn<'_>],
    gray: bool,
) -> Result<Enumeration, ExactError> {
    let space = target.space();
    let n = checked_n_states(space, MAX_STATES, "enumerate")?;
    let (d, k) = (space.d, space.k());
    let keep = options.keep_probs && n <= MAX_PROBS;
    let n_blocks = n.div_ceil(BLOCK as u64);
    let values: Vec<f64> = space.values.iter().map(|&v| v as f64).collect();

    let ctx = BlockCtx { target, space, options, fns, keep, values: &values };
    let blocks: Vec<BlockSums> = (0..n_blocks)
        .into_par_iter()
        .map(|b| {
            let first = b * BLOCK as u64;
            let count = (n - first).min(BLOCK as u64) as usize;
            if gray && let Some(s) = ctx.gray_block(first, count) {
                return Ok(s);
            }
            ctx.plain_block(first, count)
        })
        .collect::<Result<_, _>>()?;

    let max = blocks.iter().map(|b| b.max).fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return Err(ExactError::ZeroMass);
    }
    let mut total = 0.0;
    let mut marg = vec![0.0; d * k];
    let mut f_sum = 0.0;
    let mut pairs = vec![0.0; if options.pair_moments { d * d } else { 0 }];
    let mut extra = vec![0.0; fns.len()];
    for b in &blocks {
        if b.max == f64::NEG_INFINITY {
            continue;
        }
        let scale = (b.max - max).exp();
        total += scale * b.total;
        f_sum += scale * b.f_sum;
        for (a, x) in marg.iter_mut().zip(&b.marg) {
            *a += scale * x;
        }
        for (a, x) in pairs.iter_mut().zip(&b.pairs) {
            *a += scale * x;
        }
        for (a, x) in extra.iter_mut().zip(&b.extra) {
            *a += scale * x;
        }
    }
    let log_z = max + total.ln();
    for a in marg.iter_mut().chain(pairs.iter_mut()).chain(extra.iter_mut()) {
        *a /= total;
    }
    for i in 0..pairs.len() / d.max(1) {
        for j in 0..i {
            pairs[i * d + j] = pairs[j * d + i];
        }
    }
    let mean_value = (0..d).map(|i| (0..k).map(|c| marg[i * k + c] * values[c]).sum()).collect();
    let probs = keep.then(|| blocks.iter().flat_map(|b| b.log_densities.iter().map(|&f| (f - log_z).exp())).collect());
    Ok(Enumeration {
        n_states: n,
        d,
        k,
        log_z,
        marginals: marg,
        mean_value,
        mean_log_density: f_sum / total,
        pair_moments: options.pair_moments.then_some(pairs),
        probs,
        expectations: extra,
    })
}

/// Whether [`enumerate`] walks blocks in Gray-code order: binary/spin spaces whose target
/// computes one flip in O(degree) ([`TargetExt::cheap_flip_delta`]). Then consecutive states
/// differ in one coordinate and f is updated by one flip difference instead of evaluated
/// afresh (the 5×5 Ising's f costs ~50 pair terms, a flip 4).
pub fn gray_code_applies(target: &dyn Target) -> bool {
    let space = target.space();
    space.is_binary_like() && space.d > 0 && target.cheap_flip_delta(&vec![0; space.d], 0).is_some()
}

/// What every block of one enumeration shares.
struct BlockCtx<'a> {
    target: &'a dyn Target,
    space: &'a Space,
    options: &'a EnumOptions,
    fns: &'a [&'a StateFn<'a>],
    keep: bool,
    values: &'a [f64],
}

impl BlockCtx<'_> {
    /// Empty sums relative to `max`.
    fn sums(&self, max: f64, log_densities: Vec<f64>) -> BlockSums {
        let (d, k) = (self.space.d, self.space.k());
        BlockSums {
            max,
            total: 0.0,
            marg: vec![0.0; d * k],
            f_sum: 0.0,
            pairs: if self.options.pair_moments { vec![0.0; d * d] } else { Vec::new() },
            extra: vec![0.0; self.fns.len()],
            log_densities: if self.keep { log_densities } else { Vec::new() },
        }
    }

    /// Adds state `x` with log-density `fx` to `s`; `v` is scratch of length d.
    fn add(&self, s: &mut BlockSums, x: &[u32], fx: f64, v: &mut [f64]) {
        let (d, k) = (self.space.d, self.space.k());
        let w = (fx - s.max).exp();
        if w == 0.0 {
            return;
        }
        s.total += w;
        s.f_sum += w * fx;
        for (i, &c) in x.iter().enumerate() {
            s.marg[i * k + c as usize] += w;
        }
        if self.options.pair_moments {
            for (vi, &c) in v.iter_mut().zip(x) {
                *vi = self.values[c as usize];
            }
            // Upper triangle only; mirrored after the reduction.
            for i in 0..d {
                let wi = w * v[i];
                for j in i..d {
                    s.pairs[i * d + j] += wi * v[j];
                }
            }
        }
        for (e, h) in s.extra.iter_mut().zip(self.fns) {
            *e += w * h(x);
        }
    }

    /// States `first .. first + count` in index order, one `log_density_batch` call.
    fn plain_block(&self, first: u64, count: usize) -> Result<BlockSums, ExactError> {
        let d = self.space.d;
        let mut xs = Vec::new();
        fill_states(self.space, first, count, &mut xs);
        let mut f = vec![0.0; count];
        self.target.log_density_batch(&xs, &mut f)?;
        if let Some(p) = f.iter().position(|v| v.is_nan() || *v == f64::INFINITY) {
            return Err(ExactError::BadLogDensity { state: first + p as u64, value: f[p] });
        }
        let max = f.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut s = self.sums(max, f.clone());
        if max == f64::NEG_INFINITY {
            return Ok(s);
        }
        let mut v = vec![0.0; d];
        for (x, &fx) in xs.chunks_exact(d).zip(&f) {
            self.add(&mut s, x, fx, &mut v);
        }
        Ok(s)
    }

    /// The same block in Gray-code order of its low log2(count) coordinates: state t of the
    /// walk is index first + (t ^ t >> 1), and step t flips coordinate d − 1 − tz(t). f is
    /// evaluated exactly at the block's first state and then updated by flip differences, so
    /// rounding accumulates over at most [`BLOCK`] − 1 additions (~1e-13 on the 5×5 Ising).
    /// Returns `None` (use [`Self::plain_block`]) if some f is not finite: −∞ + δ is NaN.
    fn gray_block(&self, first: u64, count: usize) -> Option<BlockSums> {
        let d = self.space.d;
        // Binary spaces have 2^d states and BLOCK is a power of two, so every block is a
        // power of two long and starts with its low log2(count) bits clear.
        debug_assert!(count.is_power_of_two() && first.is_multiple_of(count as u64));
        let mut x0 = vec![0u32; d];
        self.space.state_of_index(first, &mut x0);
        let mut x = x0.clone();
        let mut f = vec![0.0; count];
        // An error makes the caller take the plain block, which reports it.
        let mut fx = self.target.log_density(&x).ok()?;
        f[0] = fx;
        for t in 1..count {
            let i = d - 1 - t.trailing_zeros() as usize;
            fx += self.target.cheap_flip_delta(&x, i)?;
            x[i] ^= 1;
            f[t] = fx;
        }
        if f.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let max = f.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let log_densities = if self.keep {
            let mut ld = vec![0.0; count];
            for (t, &ft) in f.iter().enumerate() {
                ld[t ^ (t >> 1)] = ft;
            }
            ld
        } else {
            Vec::new()
        };
        let mut s = self.sums(max, log_densities);
        let mut v = vec![0.0; d];
        x.copy_from_slice(&x0);
        self.add(&mut s, &x, f[0], &mut v);
        for t in 1..count {
            x[d - 1 - t.trailing_zeros() as usize] ^= 1;
            self.add(&mut s, &x, f[t], &mut v);
        }
        Some(s)
    }
}

/// [`enumerate_with`] with every block evaluated state by state in index order (no
/// Gray-code walk): the reference the fast path is tested and benchmarked against.
pub fn enumerate_plain(
    target: &dyn Target,
    options: &EnumOptions,
    fns: &[&StateFn<'_>],
) -> Result<Enumeration, ExactError> {
    enumerate_impl(target, options, fns, false)
}

/// f(x) for every state in index order (at most [`MAX_PROBS`] states).
pub fn log_densities(target: &dyn Target) -> Result<Vec<f64>, ExactError> {
    let space = target.space();
    let n = checked_n_states(space, MAX_PROBS, "log_densities")?;
    let n_blocks = n.div_ceil(BLOCK as u64);
    let parts: Vec<Vec<f64>> = (0..n_blocks)
        .into_par_iter()
        .map(|b| {
            let first = b * BLOCK as u64;
            let count = (n - first).min(BLOCK as u64) as usize;
            let mut xs = Vec::new();
            fill_states(space, first, count, &mut xs);
            let mut f = vec![0.0; count];
            target.log_density_batch(&xs, &mut f)?;
            Ok(f)
        })
        .collect::<Result<_, ExactError>>()?;
    Ok(parts.concat())
}

/// π(x) for every state in index order (at most [`MAX_PROBS`] states).
pub fn probabilities(target: &dyn Target) -> Result<Vec<f64>, ExactError> {
    let e = enumerate(target, &EnumOptions { pair_moments: false, keep_probs: true })?;
    e.probs.ok_or(ExactError::TooManyStates {
        what: "probabilities",
        n_states: e.n_states.to_string(),
        limit: MAX_PROBS,
    })
}

/// E_π\[h\] for one function `h`.
pub fn expectation(target: &dyn Target, h: &StateFn<'_>) -> Result<f64, ExactError> {
    let e = enumerate_with(target, &EnumOptions { pair_moments: false, keep_probs: false }, &[h])?;
    Ok(e.expectations[0])
}

/// E_π\[h\] and Var_π\[h\] of one statistic (e.g. DISCS's distance to a reference state: the
/// ground truth of its chains' means and of the variance in its ESS), in one enumeration.
pub fn mean_variance(target: &dyn Target, h: &StateFn<'_>) -> Result<(f64, f64), ExactError> {
    let square = |x: &[u32]| h(x).powi(2);
    let e = enumerate_with(target, &EnumOptions { pair_moments: false, keep_probs: false }, &[h, &square])?;
    let (m, m2) = (e.expectations[0], e.expectations[1]);
    Ok((m, (m2 - m * m).max(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn odometer_matches_state_of_index() {
        let s = Space::categorical(4, 3);
        let mut xs = Vec::new();
        fill_states(&s, 7, 40, &mut xs);
        let mut x = [0u32; 4];
        for r in 0..40 {
            s.state_of_index(7 + r as u64, &mut x);
            assert_eq!(&xs[r * 4..r * 4 + 4], &x);
        }
    }

    #[test]
    fn spec_4_3_tiny_model() {
        // Expected numbers are spec §4.3 (computed independently with numpy/C).
        let t = Quadratic::spec_tiny();
        let e = enumerate(&t, &EnumOptions { pair_moments: true, keep_probs: true }).unwrap();
        let pi = dlp_core::testing::SPEC_TINY_PI;
        for (p, q) in e.probs.as_ref().unwrap().iter().zip(pi) {
            assert!(close(*p, q, 1e-10), "{p} vs {q}");
        }
        for (m, q) in e.mean_value.iter().zip([0.6579428857, 0.6850668284, 0.5327027588]) {
            assert!(close(*m, q, 1e-10), "{m} vs {q}");
        }
        // For bits E[x_i x_i] = E[x_i].
        let pm = e.pair_moments.unwrap();
        for i in 0..3 {
            assert!(close(pm[i * 3 + i], e.mean_value[i], 1e-14));
        }
        // Σ π f by hand from the spec's f and π.
        let f = [0.0, 0.25, -0.7, 0.55, 0.3, -0.65, 1.2, 1.25];
        let ef: f64 = f.iter().zip(pi).map(|(a, b)| a * b).sum();
        assert!(close(e.mean_log_density, ef, 1e-9));
        let z: f64 = f.iter().map(|v: &f64| v.exp()).sum();
        assert!(close(e.log_z, z.ln(), 1e-14));
    }

    #[test]
    fn spec_4_5_categorical() {
        let t = PairwiseCategorical::spec_small();
        let e = enumerate(&t, &EnumOptions::default()).unwrap();
        let pi = dlp_core::testing::SPEC_SMALL_PI;
        for (p, q) in e.probs.unwrap().iter().zip(pi) {
            assert!(close(*p, q, 1e-10), "{p} vs {q}");
        }
        let m0: f64 = pi[..3].iter().sum();
        assert!(close(e.marginals[0], m0, 1e-10));
    }

    #[test]
    fn extra_functions_and_huge_log_densities_are_stable() {
        // f shifted by 1000: exp overflows naively; log Z must shift by exactly 1000.
        let mut t = Quadratic::spec_tiny();
        let base = enumerate(&t, &EnumOptions::default()).unwrap();
        t.b.iter_mut().for_each(|b| *b += 1000.0);
        let shifted = enumerate(&t, &EnumOptions::default()).unwrap();
        assert!(shifted.log_z.is_finite());
        let h = |x: &[u32]| (x[0] * x[2]) as f64;
        let e = expectation(&Quadratic::spec_tiny(), &h).unwrap();
        let p = base.probs.unwrap();
        assert!(close(e, p[5] + p[7], 1e-14));
    }

    #[test]
    #[cfg(feature = "matrices")]
    fn dula_law_gray_code_path_matches_plain_path() {
        // DULA's closed-form law on a 4×4 torus (spin and binary), walked by flip deltas of
        // f + log Z_α, against whole-state evaluation. A wrong set of changed log-terms (e.g.
        // forgetting coordinate i itself) moves log Z and the means by ≫ 1e−10.
        for t in [
            dlp_models::IsingModel::paper_lattice(4, 0.3, 0.2),
            dlp_models::IsingModel::lattice(&[4, 4], true, 0.6, vec![-0.3; 16], dlp_core::DomainKind::Binary).unwrap(),
        ] {
            for alpha in [0.15, 0.6] {
                let law = crate::DulaLaw::new(&t, alpha, None);
                assert!(gray_code_applies(&law));
                let opts = EnumOptions { pair_moments: true, keep_probs: false };
                let (fast, plain) = (enumerate(&law, &opts).unwrap(), enumerate_plain(&law, &opts, &[]).unwrap());
                let mut worst = (fast.log_z - plain.log_z).abs();
                for (a, b) in fast.mean_value.iter().zip(&plain.mean_value) {
                    worst = worst.max((a - b).abs());
                }
                for (a, b) in fast.pair_moments.unwrap().iter().zip(plain.pair_moments.as_ref().unwrap()) {
                    worst = worst.max((a - b).abs());
                }
                assert!(worst < 1e-10, "α = {alpha}: largest difference {worst}");
            }
        }
    }

    #[test]
    fn gray_code_path_matches_plain_path_on_4x4_lattice() {
        // 2^16 states = 16 blocks: the walk, the block starts and the index-order probability
        // vector are all exercised. Drift over ≤ 4095 flip updates is ~1e-13 ≪ 1e-10.
        let t = dlp_models::IsingModel::paper_lattice(4, 0.1, 0.2);
        assert!(gray_code_applies(&t));
        assert!(!gray_code_applies(&Quadratic::spec_tiny()));
        let opts = EnumOptions { pair_moments: true, keep_probs: true };
        let h = |x: &[u32]| if x[0] == x[5] { 1.0 } else { -1.0 };
        let fast = enumerate_with(&t, &opts, &[&h]).unwrap();
        let plain = enumerate_plain(&t, &opts, &[&h]).unwrap();
        let all = |e: &Enumeration| {
            let mut v = vec![e.log_z, e.mean_log_density];
            for part in [&e.marginals, &e.mean_value, e.pair_moments.as_ref().unwrap(), e.probs.as_ref().unwrap()] {
                v.extend_from_slice(part);
            }
            v.extend_from_slice(&e.expectations);
            v
        };
        let (a, b) = (all(&fast), all(&plain));
        assert_eq!(a.len(), b.len());
        let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-10, "largest difference {worst}");
        // The probability vector is in index order: π(x) ∝ exp f(x) state by state.
        let p = fast.probs.unwrap();
        let mut x = vec![0u32; 16];
        for s in [0u64, 1, 4095, 4096, 40_000, 65_535] {
            t.space().state_of_index(s, &mut x);
            assert!((p[s as usize] - (t.log_density(&x).unwrap() - fast.log_z).exp()).abs() < 1e-12);
        }
        // Thread-count independence of the fast path, bit for bit.
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let serial = one.install(|| enumerate_with(&t, &opts, &[&h]).unwrap());
        assert_eq!(all(&serial), a);
    }

    /// Before/after on the Fig. 3 model (prints times; speed is not asserted):
    /// `cargo test -p dlp-exact --release --lib -- --ignored --nocapture gray_vs_plain`.
    #[test]
    #[ignore = "2^25-state timing print, release: just test-stat"]
    fn gray_vs_plain_5x5_timing() {
        let t = dlp_models::IsingModel::paper_lattice(5, 0.1, 0.2);
        let opts = EnumOptions { pair_moments: false, keep_probs: false };
        let clock = std::time::Instant::now();
        let plain = enumerate_plain(&t, &opts, &[]).unwrap();
        let t_plain = clock.elapsed().as_secs_f64();
        let clock = std::time::Instant::now();
        let fast = enumerate(&t, &opts).unwrap();
        let t_fast = clock.elapsed().as_secs_f64();
        eprintln!("5x5 Ising, 2^25 states: plain {t_plain:.2} s, Gray {t_fast:.2} s");
        eprintln!("log Z plain {:.13} Gray {:.13}", plain.log_z, fast.log_z);
        assert!((fast.log_z - 19.674085761341).abs() < 1e-10 && (plain.log_z - fast.log_z).abs() < 1e-10);
        assert!(fast.mean_value.iter().all(|m| (m - 0.482969842236).abs() < 1e-10));
        assert!((fast.mean_log_density - 6.102519822965).abs() < 1e-10);
    }

    #[test]
    fn too_large_spaces_are_refused() {
        let t = Quadratic::new(Space::binary(40), vec![0.0; 1600], vec![0.0; 40]);
        assert!(matches!(enumerate(&t, &EnumOptions::default()), Err(ExactError::TooManyStates { .. })));
        assert!(matches!(log_densities(&t), Err(ExactError::TooManyStates { .. })));
    }
}
