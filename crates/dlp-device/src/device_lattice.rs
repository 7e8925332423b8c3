//! DULA and DMALA on a periodic R × C Ising lattice (one coupling w, one field b, spin or
//! binary, R, C ≥ 3) as device-resident chains ([`DeviceChains`]): the CUDA kernels of
//! `kernels/lattice.cu` on a GPU, their CPU twin (this file) on [`Device::Cpu`].
//!
//! **The Markov kernel** is the one of `dlp_samplers::fast::ising` (and of the generic
//! `dlp_samplers::dlp` with step α and gradient weight ½): site i's flip logit
//! ℓ = ½ g_i (1 − 2x_i) − 1/(2α) depends only on its class k = 5·x_i + up_i (up_i = number of
//! its four neighbours whose bit is 1), so the host tabulates, per class and in f64 by the
//! fast path's formula, the flip threshold T_k = ⌊σ(ℓ_k)·2⁶⁴⌋
//! ([`dlp_samplers::fast::Threshold`]) and softplus(ℓ_k). A site flips iff a 64-bit uniform
//! is below T_k, so the realised flip probability is exactly T_k/2⁶⁴, as on the CPU fast path.
//!
//! **Random numbers** (Philox4x32-10, [`crate::philox`]; chain j, step t = number of steps
//! taken before, mod 2³²; sites s = r·C + c row-major):
//! * purpose [`PURPOSE_PROPOSE`], index ⌊s/8⌋: one block = 4 words = 8 draws of 16 bits; site
//!   s takes bits 16·(q mod 2) … of word ⌊q/2⌋, q = s mod 8 (one Philox call per 8 sites);
//! * purpose [`PURPOSE_TIE`], index s: only when the 16-bit draw equals the top 16 bits of T
//!   (probability 2⁻¹⁶): 48 more bits, `u64_of(w0, w1) >> 16`, against T's low 48 bits;
//! * purpose [`PURPOSE_MH`], index 0 (DMALA): the MH uniform `u01_of_u64(u64_of(w0, w1))`;
//!   accept iff ln u < A.
//!
//! **DMALA's ratio** from integer class statistics (the module doc of
//! `dlp_samplers::fast::ising` derives it): with H the cached class histogram at x, H' the
//! one at the proposal y and sb = Σ over flipped sites of (s·Σu)(class at y) − (s·Σu)(class at
//! x) (s = 1 − 2x, Σu the neighbours' sum of u), A = ½w·ΔE₂ + b·ΔM
//! − Σ_k (H'_k − H_k) softplus(ℓ_k) + ½c (b·Σ_k (H'_k − H_k) s_k + w·sb) (c = 2 spin, 1
//! binary; E₂, M the integer statistics Σ_i u_i Σ_{j~i} u_j and Σ_i u_i), evaluated in f64 in a
//! fixed order without fused multiply-adds on both sides ([`DeviceLattice::log_accept_ratio`]
//! runs the twin's code). A proposal that moves nothing stays and counts as accepted (as
//! `StepInfo::stayed` does).
//!
//! **State.** Per chain two byte buffers (current, proposal) and a parity byte: a step writes
//! the proposal into the other buffer, and DMALA's acceptance flips the parity (no copy);
//! DULA flips every chain, so its current buffer is the per-chain parity (always 0) XOR the
//! step's parity. DMALA keeps H and the accepted count per chain.
//!
//! **The CUDA side** (`kernels/lattice.cu`, three kernels, each the twin of a function here):
//! * `dlp_lattice_propose` ([`propose_chain`]): a block of 128 threads owns 1,024 consecutive
//!   sites of one chain; it copies them (one aligned 64-bit load per thread) plus one row
//!   above and below (wrapped) into shared memory, and the ten thresholds too; each thread
//!   computes the classes of its 8 sites at once as the bytes of a 64-bit word (SWAR: the
//!   rows above and below and the left/right shifts of its own 8 bytes, added lane by lane,
//!   fixed up where a row wraps), then makes the 8 flip decisions from one Philox block (its 8
//!   sites = that block's 8 draws) by integer comparison with the class's threshold in shared
//!   memory and writes its 8 bytes with one 64-bit store. Per spin-step: ≈ (1,024 + 2C)/1,024
//!   bytes read (≈ 1.2 at C = 100, coalesced, L2-resident) + 1 byte written, 1/8 Philox call
//!   (+ 2⁻¹⁶ for ties) and ≈ 27 instructions in all;
//! * `dlp_lattice_stats` ([`stats_chain`], DMALA): the same blocking over x and y; the
//!   classes at y by the same SWAR code (at x only for groups with a flip), class counts of a
//!   thread packed in one 64-bit register (6 bits per class), the flips by `__popcll`,
//!   reduced by warp `__reduce_add_sync` and shared atomics into 12 counters per chain (H',
//!   sb, flips): ≈ 2.4 bytes read and ≈ 25 instructions per spin, no random numbers;
//! * `dlp_lattice_accept` (`accept_chain`, DMALA): one thread per chain: A in f64
//!   (`__dmul_rn`/`__dadd_rn`, so no contraction), the MH uniform, parity/H/count updates, and
//!   it zeroes the counters for the next step.
//!
//!   Expected cost on an H100 at L = 100 and 1,024 chains (10⁷ spins a step): the spins
//!   (2 × 10 MB) stay in the 50 MB L2, so a step is bound by instruction issue (≈ 10¹²
//!   warp-instructions a second): DULA ≈ 27 instructions per spin → ≈ 1e-3 ns per spin-step;
//!   DMALA ≈ 52 plus a per-chain kernel → ≈ 2e-3 ns. These are estimates: the kernels compile
//!   (nvcc 13, ptxas sm_90: no spills; 40 registers for the proposal, 32 for the statistics,
//!   40 for the acceptance kernel) and the CUDA source, compiled for the host under a CUDA
//!   shim (`tests/emu/cuda_shim.hpp`, `lattice_emu.cpp`), reproduces the twin bit for bit, but they have not
//!   run on a GPU; `tests/cuda.rs` holds the GPU-vs-twin test for a GPU machine.
//!
//! The one value the two sides may not share bit for bit is ln u (CUDA's `log` is within one
//! ulp of the correctly rounded result Rust's libm gives), so a DMALA decision could differ
//! when ln u and A are within an ulp of each other — probability ~1e-16 per proposal.

use crate::device_chains::DeviceChains;
use crate::philox::{counter, key_of_seed, philox4x32_10, u01_of_u64, u64_of};
use candle_core::Device;
use dlp_core::Target;
use dlp_core::math::{sigmoid, softplus};
use dlp_samplers::fast::Threshold;
use dlp_tensor::Error;
use rayon::prelude::*;

/// Number of site classes on the 2-D torus: bit × number of up neighbours (0..=4).
pub const CLASSES: usize = 10;
/// Philox purpose of the 16-bit proposal draws (index ⌊s/8⌋).
pub const PURPOSE_PROPOSE: u32 = 0;
/// Philox purpose of the 48-bit tie-break draws (index s).
pub const PURPOSE_TIE: u32 = 1;
/// Philox purpose of DMALA's MH uniform (index 0).
pub const PURPOSE_MH: u32 = 2;
/// Per-chain DMALA counters of a proposal: H'[0..10], sb (two's complement), flips.
const STATS: usize = CLASSES + 2;
const LOW48: u64 = (1 << 48) - 1;
/// Sites per thread (one Philox block) and per CUDA block (128 threads); the kernel's
/// `DLP_LAT_THREADS` and `DLP_LAT_SEG` must agree.
#[cfg(feature = "cuda")]
const THREADS: u32 = 128;
#[cfg(feature = "cuda")]
const SEG: usize = 1024;
/// The CUDA kernels keep 2·(1,024 + 2C) bytes in shared memory (DMALA's statistics pass).
pub const MAX_GPU_COLS: usize = 8192;

/// The sampler a [`DeviceLattice`] runs: DLP with step size α, without (DULA) or with
/// (DMALA) the MH test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LatticeSampler {
    /// DULA with step size α.
    Dula {
        /// Step size α > 0.
        alpha: f64,
    },
    /// DMALA with step size α.
    Dmala {
        /// Step size α > 0.
        alpha: f64,
    },
}

impl LatticeSampler {
    fn alpha(self) -> f64 {
        match self {
            LatticeSampler::Dula { alpha } | LatticeSampler::Dmala { alpha } => alpha,
        }
    }
}

/// The integer statistics of class k: (e2, m, s, snb) = (u·Σu, u, 1 − 2x, s·Σu) of a site
/// with bit x = k / 5 and up = k mod 5 of its 4 neighbours at 1 (the kernel's `class_ints`).
pub fn class_ints(k: usize, spin: bool) -> (i64, i64, i64, i64) {
    let (x, up) = ((k / 5) as i64, (k % 5) as i64);
    let (u, nsum) = if spin { (2 * x - 1, 2 * up - 4) } else { (x, up) };
    let s = 1 - 2 * x;
    (u * nsum, u, s, s * nsum)
}

/// DULA / DMALA chains on a periodic Ising lattice, resident on a device (module doc).
pub struct DeviceLattice {
    rows: usize,
    cols: usize,
    n: usize,
    mh: bool,
    spin: bool,
    w: f64,
    b: f64,
    key: [u32; 2],
    thr: [u64; CLASSES],
    softplus: [f64; CLASSES],
    steps: u64,
    device: Device,
    backend: Backend,
}

// One value per set of chains, so the size gap between the variants (the CUDA one holds
// device handles) costs nothing worth a box.
#[cfg_attr(feature = "cuda", allow(clippy::large_enum_variant))]
enum Backend {
    Cpu(CpuChains),
    #[cfg(feature = "cuda")]
    Cuda(cuda::CudaChains),
}

/// The CPU twin's state: the byte buffers (2 × n × d; chain j's buffer p at (p·n + j)·d),
/// per-chain parity, DMALA's class histograms (n × 10) and accepted counts.
struct CpuChains {
    spins: Vec<u8>,
    parity: Vec<u8>,
    hist: Vec<u32>,
    accepted: Vec<u64>,
    /// DMALA: per chain, min(1, e^A) and the flips of the last step's proposal
    /// ([`DeviceChains::last_proposals`]).
    last: Vec<(f64, u32)>,
}

impl DeviceLattice {
    /// Chains of `kind` on `target` (a periodic R × C lattice Ising model, R, C ≥ 3, one
    /// coupling and one field, spin or binary, seen through its Ising capability) started at
    /// the rows of `x0` (n × d bits), drawing from the Philox streams of `seed`, on `device`
    /// (the CPU twin, or a CUDA GPU with the `cuda` feature).
    pub fn new(
        target: &dyn Target,
        kind: LatticeSampler,
        x0: &[u32],
        seed: u64,
        device: &Device,
    ) -> Result<Self, Error> {
        let alpha = kind.alpha();
        if !(alpha > 0.0 && alpha.is_finite()) {
            return Err(Error::Param(format!("the lattice kernel needs a finite step size alpha > 0, got {alpha}")));
        }
        let not_lattice = || {
            Error::Param(
                "the device lattice kernel needs an Ising model on a periodic 2-D lattice (both sides >= 3) \
                 with one coupling and one field"
                    .into(),
            )
        };
        let view = dlp_samplers::fast::ising::qualifying_model(target).ok_or_else(not_lattice)?;
        let spec = view.lattice.ok_or_else(not_lattice)?;
        if !spec.periodic || spec.shape.len() != 2 {
            return Err(not_lattice());
        }
        let (rows, cols) = (spec.shape[0], spec.shape[1]);
        if rows < 3 || cols < 3 {
            return Err(Error::Param(format!(
                "the device lattice kernel needs both sides >= 3, got a {rows} x {cols} lattice"
            )));
        }
        let d = rows * cols;
        if d > u32::MAX as usize / 2 {
            return Err(Error::Param(format!("lattice of {d} sites is too large for 32-bit site indices")));
        }
        if x0.is_empty() || !x0.len().is_multiple_of(d) {
            return Err(Error::Param(format!("x0 has length {} but must hold n >= 1 rows of d = {d} sites", x0.len())));
        }
        if let Some(v) = x0.iter().find(|&&v| v > 1) {
            return Err(Error::Param(format!("x0 holds the value {v}; states are bits 0/1")));
        }
        let n = x0.len() / d;
        if n > u32::MAX as usize {
            return Err(Error::Param(format!("{n} chains do not fit 32-bit chain indices")));
        }
        let (w, b, spin) = (spec.coupling, view.fields[0], view.spin);
        let (mut thr, mut sp) = ([0u64; CLASSES], [0f64; CLASSES]);
        let half_inv_step = 0.5 / alpha;
        for k in 0..CLASSES {
            // The fast path's formula (fast/ising.rs): g = c·(b + w·Σu), ℓ = ½ g (1 − 2x) − 1/(2α).
            let (x, up) = (k / 5, (k % 5) as i64);
            let nsum = if spin { 2 * up - 4 } else { up };
            let g = if spin { 2.0 } else { 1.0 } * (b + w * nsum as f64);
            let l = 0.5 * (g * (1.0 - 2.0 * x as f64)) - half_inv_step;
            thr[k] = Threshold::of_probability(sigmoid(l)).bits();
            sp[k] = softplus(l);
        }
        let mh = matches!(kind, LatticeSampler::Dmala { .. });
        let mut lat = DeviceLattice {
            rows,
            cols,
            n,
            mh,
            spin,
            w,
            b,
            key: key_of_seed(seed),
            thr,
            softplus: sp,
            steps: 0,
            device: device.clone(),
            backend: Backend::Cpu(CpuChains {
                spins: Vec::new(),
                parity: Vec::new(),
                hist: Vec::new(),
                accepted: Vec::new(),
                last: Vec::new(),
            }),
        };
        let spins: Vec<u8> = x0.iter().map(|&v| v as u8).collect();
        let hist: Vec<u32> = if mh { spins.chunks(d).flat_map(|x| lat.histogram(x)).collect() } else { Vec::new() };
        lat.backend = match device {
            Device::Cpu => {
                let mut all = spins;
                all.resize(2 * n * d, 0);
                Backend::Cpu(CpuChains { spins: all, parity: vec![0; n], hist, accepted: vec![0; n], last: Vec::new() })
            }
            #[cfg(feature = "cuda")]
            Device::Cuda(dev) => {
                if cols > MAX_GPU_COLS {
                    return Err(Error::Param(format!(
                        "the CUDA lattice kernel handles at most {MAX_GPU_COLS} columns, got {cols}"
                    )));
                }
                Backend::Cuda(
                    cuda::CudaChains::new(dev, &lat, &spins, &hist).map_err(|e| Error::Device {
                        device: dlp_tensor::device_name(device),
                        message: e.to_string(),
                    })?,
                )
            }
            _ => {
                return Err(Error::Param(format!(
                    "the device lattice kernel runs on the CPU or a CUDA device, not {}",
                    dlp_tensor::device_name(device)
                )));
            }
        };
        Ok(lat)
    }

    /// Number of sites d = R·C.
    fn d(&self) -> usize {
        self.rows * self.cols
    }

    /// The flip thresholds T_k = ⌊p_k·2⁶⁴⌋ of the ten classes (class k = 5·bit + up).
    pub fn thresholds(&self) -> [u64; CLASSES] {
        self.thr
    }

    /// softplus(ℓ_k) of the ten classes: the log normaliser log(1 + e^ℓ) of a site's proposal
    /// (DMALA's ratio uses them).
    pub fn log_normalisers(&self) -> [f64; CLASSES] {
        self.softplus
    }

    /// The flip probability T/2⁶⁴ the kernel realises at every site of the state `x` (bits,
    /// length d), for tests against the CPU fast path and the generic DLP logits.
    pub fn flip_probabilities(&self, x: &[u32]) -> Vec<f64> {
        let g: Vec<u8> = x.iter().map(|&v| v as u8).collect();
        (0..self.d())
            .map(|s| {
                let t = self.thr[self.class_of(&g, s)];
                Threshold { hi: (t >> 48) as u16, lo: t & LOW48 }.probability()
            })
            .collect()
    }

    /// The DMALA log acceptance ratio A of the move x → y (bits, length d) as a step computes
    /// it: the histogram at x, the proposal statistics of [`stats_chain`] and the step's `ratio`.
    pub fn log_accept_ratio(&self, x: &[u32], y: &[u32]) -> f64 {
        let gx: Vec<u8> = x.iter().map(|&v| v as u8).collect();
        let gy: Vec<u8> = y.iter().map(|&v| v as u8).collect();
        let st = stats_chain(&gx, &gy, self.rows, self.cols, self.spin);
        self.ratio(&self.histogram(&gx), &st)
    }

    /// The class (5·bit + number of up neighbours) of site s of the state `g` (bytes).
    fn class_of(&self, g: &[u8], s: usize) -> usize {
        class_at(g, self.rows, self.cols, s)
    }

    /// The class histogram of the state `g` (bytes, length d).
    fn histogram(&self, g: &[u8]) -> [u32; CLASSES] {
        let mut h = [0u32; CLASSES];
        for s in 0..self.d() {
            h[self.class_of(g, s)] += 1;
        }
        h
    }

    /// A from the histogram `h` at x and the proposal's counters `st` (H', sb, flips); the
    /// kernel's `dlp_lattice_ratio` evaluates the same expression in the same order.
    fn ratio(&self, h: &[u32], st: &[u32; STATS]) -> f64 {
        let (mut de2, mut dm, mut sa) = (0i64, 0i64, 0i64);
        let mut lq = 0.0f64;
        for k in 0..CLASSES {
            let dh = st[k] as i64 - h[k] as i64;
            let (e2, m, s, _) = class_ints(k, self.spin);
            de2 += dh * e2;
            dm += dh * m;
            sa += dh * s;
            if dh != 0 {
                lq -= dh as f64 * self.softplus[k];
            }
        }
        let sb = st[CLASSES] as i32 as i64;
        // β·c with β = ½: 1 spin, ½ binary.
        let half_c = if self.spin { 1.0 } else { 0.5 };
        lq += half_c * (self.b * sa as f64 + self.w * sb as f64);
        let df = 0.5 * self.w * de2 as f64 + self.b * dm as f64;
        df + lq
    }
}

/// The class (5·bit + up neighbours) of site s of the R × C torus state `g` (bytes).
fn class_at(g: &[u8], rows: usize, cols: usize, s: usize) -> usize {
    let (r, c) = (s / cols, s % cols);
    let up = if r == 0 { s + (rows - 1) * cols } else { s - cols };
    let down = if r == rows - 1 { c } else { s + cols };
    let left = if c == 0 { s + cols - 1 } else { s - 1 };
    let right = if c == cols - 1 { s + 1 - cols } else { s + 1 };
    5 * g[s] as usize + (g[up] + g[down] + g[left] + g[right]) as usize
}

/// The two-stage decision u < T/2⁶⁴ for the 64-bit uniform u = r16·2⁴⁸ + r48 (r16 < 2¹⁶,
/// r48 < 2⁴⁸), with r48 drawn only on a tie (the closure).
#[inline]
pub fn decide(r16: u32, t: u64, r48: impl FnOnce() -> u64) -> bool {
    let hi = (t >> 48) as u32;
    if r16 != hi {
        return r16 < hi;
    }
    r48() < (t & LOW48)
}

/// The proposal of chain `chain` at step `step` from `x` into `y` (both R·C bytes): the twin
/// of the kernel `dlp_lattice_propose`.
#[allow(clippy::too_many_arguments)]
pub fn propose_chain(
    x: &[u8],
    y: &mut [u8],
    rows: usize,
    cols: usize,
    thr: &[u64; CLASSES],
    key: [u32; 2],
    chain: u32,
    step: u32,
) {
    let d = rows * cols;
    for g in 0..d.div_ceil(8) {
        let blk = philox4x32_10(counter(chain, step, PURPOSE_PROPOSE, g as u32), key);
        for q in 0..8.min(d - 8 * g) {
            let s = 8 * g + q;
            let k = class_at(x, rows, cols, s);
            let r16 = (blk[q / 2] >> (16 * (q & 1))) & 0xffff;
            let flip = decide(r16, thr[k], || {
                let t = philox4x32_10(counter(chain, step, PURPOSE_TIE, s as u32), key);
                u64_of(t[0], t[1]) >> 16
            });
            y[s] = x[s] ^ flip as u8;
        }
    }
}

/// DMALA's counters of the proposal y from x (both R·C bytes): the class histogram H' at y,
/// sb = Σ over flipped sites of (s·Σu)(class at y) − (s·Σu)(class at x) as a two's-complement
/// u32, and the number of flips — the twin of the kernel `dlp_lattice_stats`.
pub fn stats_chain(x: &[u8], y: &[u8], rows: usize, cols: usize, spin: bool) -> [u32; STATS] {
    let mut st = [0u32; STATS];
    for s in 0..rows * cols {
        let ky = class_at(y, rows, cols, s);
        st[ky] += 1;
        if x[s] != y[s] {
            let kx = class_at(x, rows, cols, s);
            let sb = class_ints(ky, spin).3 - class_ints(kx, spin).3;
            st[CLASSES] = st[CLASSES].wrapping_add(sb as i32 as u32);
            st[CLASSES + 1] += 1;
        }
    }
    st
}

/// DMALA's decision for one chain from its counters `st`: the twin of the kernel
/// `dlp_lattice_accept`. Returns whether the chain moves to the proposal (a proposal that
/// flips nothing stays and counts as accepted), whether it was accepted, and min(1, e^A).
fn accept_chain(lat: &DeviceLattice, h: &mut [u32], st: &[u32; STATS], chain: u32, step: u32) -> (bool, bool, f64) {
    if st[CLASSES + 1] == 0 {
        return (false, true, 1.0);
    }
    let a = lat.ratio(h, st);
    let blk = philox4x32_10(counter(chain, step, PURPOSE_MH, 0), lat.key);
    let u = u01_of_u64(u64_of(blk[0], blk[1]));
    let accept = u.ln() < a;
    if accept {
        h.copy_from_slice(&st[..CLASSES]);
    }
    (accept, accept, a.exp().min(1.0))
}

/// One chain's step on the CPU twin: its new parity, accepted increment, class histogram and
/// (min(1, e^A), flips) of its proposal.
type ChainStep = (u8, u64, [u32; CLASSES], (f64, u32));

impl DeviceLattice {
    /// One step of the CPU twin: every chain independently (rayon over chains; a chain's
    /// numbers depend on (seed, chain, step) only, so the thread count does not matter).
    fn step_cpu(&mut self) {
        let (rows, cols, d, n) = (self.rows, self.cols, self.rows * self.cols, self.n);
        let step = self.steps as u32;
        let gpar = if self.mh { 0 } else { (self.steps & 1) as u8 };
        let mut spins = std::mem::take(&mut self.cpu_mut().spins);
        let (b0, b1) = spins.split_at_mut(n * d);
        let lat = &*self;
        // Per-chain results (new parity, accepted increment, new histogram) are computed in
        // parallel and applied afterwards, so the closure borrows `self` immutably.
        let results: Vec<ChainStep> = b0
            .par_chunks_mut(d)
            .zip(b1.par_chunks_mut(d))
            .enumerate()
            .map(|(j, (c0, c1))| {
                let (par, hist) = lat.cpu_chain_view(j);
                let (x, y): (&[u8], &mut [u8]) = if par ^ gpar == 0 { (c0, c1) } else { (c1, c0) };
                propose_chain(x, y, rows, cols, &lat.thr, lat.key, j as u32, step);
                let mut h = hist;
                if !lat.mh {
                    return (par, 1, h, (1.0, 0));
                }
                let st = stats_chain(x, y, rows, cols, lat.spin);
                let (moved, accepted, prob) = accept_chain(lat, &mut h, &st, j as u32, step);
                (par ^ moved as u8, accepted as u64, h, (prob, st[CLASSES + 1]))
            })
            .collect();
        let mh = self.mh;
        let cpu = self.cpu_mut();
        cpu.spins = spins;
        cpu.last.clear();
        for (j, (par, acc, h, last)) in results.into_iter().enumerate() {
            if mh {
                cpu.last.push(last);
            }
            cpu.parity[j] = par;
            cpu.accepted[j] += acc;
            if mh {
                cpu.hist[j * CLASSES..(j + 1) * CLASSES].copy_from_slice(&h);
            }
        }
    }

    /// The CPU twin's state (only called on the CPU backend).
    fn cpu(&self) -> &CpuChains {
        match &self.backend {
            Backend::Cpu(c) => c,
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => unreachable!("CPU twin state asked of a CUDA backend"),
        }
    }

    fn cpu_mut(&mut self) -> &mut CpuChains {
        match &mut self.backend {
            Backend::Cpu(c) => c,
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => unreachable!("CPU twin state asked of a CUDA backend"),
        }
    }

    /// Chain j's parity and histogram on the CPU backend.
    fn cpu_chain_view(&self, j: usize) -> (u8, [u32; CLASSES]) {
        let cpu = self.cpu();
        let mut h = [0u32; CLASSES];
        if self.mh {
            h.copy_from_slice(&cpu.hist[j * CLASSES..(j + 1) * CLASSES]);
        }
        (cpu.parity[j], h)
    }

    /// The parity of the step about to be taken that selects DULA's current buffer.
    fn global_parity(&self) -> u8 {
        if self.mh { 0 } else { (self.steps & 1) as u8 }
    }

    /// Whether the chains' cached class histograms (DMALA) equal a recomputation from their
    /// states (a test hook; always true for DULA).
    pub fn histograms_consistent(&self) -> candle_core::Result<bool> {
        if !self.mh {
            return Ok(true);
        }
        let pos = self.positions()?;
        let hist = match &self.backend {
            Backend::Cpu(cpu) => cpu.hist.clone(),
            #[cfg(feature = "cuda")]
            Backend::Cuda(c) => c.histograms()?,
        };
        let d = self.d();
        Ok(pos.chunks(d).enumerate().all(|(j, x)| {
            let g: Vec<u8> = x.iter().map(|&v| v as u8).collect();
            self.histogram(&g)[..] == hist[j * CLASSES..(j + 1) * CLASSES]
        }))
    }
}

impl DeviceChains for DeviceLattice {
    fn name(&self) -> String {
        if self.mh { "dmala" } else { "dula" }.to_string()
    }

    fn n_chains(&self) -> usize {
        self.n
    }

    fn dim(&self) -> usize {
        self.d()
    }

    fn step(&mut self) -> candle_core::Result<()> {
        match &mut self.backend {
            Backend::Cpu(_) => self.step_cpu(),
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => cuda::step(self)?,
        }
        self.steps += 1;
        Ok(())
    }

    fn sync(&self) -> candle_core::Result<()> {
        self.device.synchronize()
    }

    fn positions(&self) -> candle_core::Result<Vec<u32>> {
        let (n, d, gpar) = (self.n, self.d(), self.global_parity());
        let (spins, parity, stride) = match &self.backend {
            Backend::Cpu(cpu) => (std::borrow::Cow::Borrowed(&cpu.spins[..]), cpu.parity.clone(), d),
            #[cfg(feature = "cuda")]
            Backend::Cuda(c) => {
                let (s, p) = c.download()?;
                (std::borrow::Cow::Owned(s), p, c.stride)
            }
        };
        let mut out = Vec::with_capacity(n * d);
        for (j, &p) in parity.iter().enumerate() {
            let buf = (p ^ gpar) as usize;
            let start = (buf * n + j) * stride;
            out.extend(spins[start..start + d].iter().map(|&v| v as u32));
        }
        Ok(out)
    }

    fn accepted(&self) -> candle_core::Result<Vec<u64>> {
        if !self.mh {
            return Ok(vec![self.steps; self.n]);
        }
        match &self.backend {
            Backend::Cpu(cpu) => Ok(cpu.accepted.clone()),
            #[cfg(feature = "cuda")]
            Backend::Cuda(c) => c.accepted(),
        }
    }

    fn steps_taken(&self) -> u64 {
        self.steps
    }

    fn last_proposals(&self) -> Option<Vec<(f64, u32)>> {
        match &self.backend {
            Backend::Cpu(cpu) if self.mh && self.steps > 0 => Some(cpu.last.clone()),
            _ => None,
        }
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    //! The CUDA backend: buffers on the device's stream and the three kernels of
    //! `kernels/lattice.cu` (see the parent module's doc).

    use super::{CLASSES, DeviceLattice, SEG, STATS, THREADS};
    use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
    use candle_core::cuda_backend::{CudaDevice, WrapErr};
    use std::sync::Arc;

    const MODULE: &str = "dlp_lattice";

    /// Device buffers: spins (2 × n × stride bytes; chain j's buffer p at (p·n + j)·stride,
    /// stride = d rounded up to 16 so that every chain's 8-site groups are 8-byte aligned),
    /// parity (n), thresholds (10), softplus (10), DMALA's histograms (n × 10), counters
    /// (n × 12) and accepted counts (n).
    pub(super) struct CudaChains {
        dev: CudaDevice,
        stream: Arc<CudaStream>,
        spins: CudaSlice<u8>,
        parity: CudaSlice<u8>,
        thr: CudaSlice<u64>,
        softplus: CudaSlice<f64>,
        hist: CudaSlice<u32>,
        stats: CudaSlice<u32>,
        accepted: CudaSlice<u64>,
        pub(super) stride: usize,
        propose: CudaFunction,
        stats_fn: CudaFunction,
        accept: CudaFunction,
    }

    impl CudaChains {
        pub(super) fn new(dev: &CudaDevice, lat: &DeviceLattice, x0: &[u8], hist: &[u32]) -> candle_core::Result<Self> {
            let (n, d) = (lat.n, lat.d());
            let stride = d.next_multiple_of(16);
            let mut host = vec![0u8; 2 * n * stride];
            for (j, x) in x0.chunks(d).enumerate() {
                host[j * stride..j * stride + d].copy_from_slice(x);
            }
            let ptx = crate::dlp_ptx!("lattice");
            let func = |name: &str| crate::kernels::cuda_func(dev, MODULE, ptx, name);
            let nh = if lat.mh { n } else { 1 };
            let hist = if lat.mh { dev.clone_htod(hist)? } else { dev.alloc_zeros::<u32>(CLASSES)? };
            Ok(CudaChains {
                spins: dev.clone_htod(&host)?,
                parity: dev.alloc_zeros::<u8>(n)?,
                thr: dev.clone_htod(&lat.thr[..])?,
                softplus: dev.clone_htod(&lat.softplus[..])?,
                hist,
                stats: dev.alloc_zeros::<u32>(nh * STATS)?,
                accepted: dev.alloc_zeros::<u64>(nh)?,
                stride,
                propose: func("dlp_lattice_propose")?,
                stats_fn: func("dlp_lattice_stats")?,
                accept: func("dlp_lattice_accept")?,
                stream: dev.cuda_stream(),
                dev: dev.clone(),
            })
        }

        /// The spin buffers and parities, copied to the host.
        pub(super) fn download(&self) -> candle_core::Result<(Vec<u8>, Vec<u8>)> {
            Ok((self.dev.clone_dtoh(&self.spins)?, self.dev.clone_dtoh(&self.parity)?))
        }

        pub(super) fn accepted(&self) -> candle_core::Result<Vec<u64>> {
            self.dev.clone_dtoh(&self.accepted)
        }

        pub(super) fn histograms(&self) -> candle_core::Result<Vec<u32>> {
            self.dev.clone_dtoh(&self.hist)
        }
    }

    /// One step: the proposal kernel, then (DMALA) the statistics and acceptance kernels,
    /// queued on the device's stream.
    pub(super) fn step(lat: &mut DeviceLattice) -> candle_core::Result<()> {
        let (rows, cols, n) = (lat.rows as u32, lat.cols as u32, lat.n as u32);
        let d = lat.rows * lat.cols;
        let segs = d.div_ceil(SEG) as u32;
        let (k0, k1) = (lat.key[0], lat.key[1]);
        let step = lat.steps as u32;
        let gpar = lat.global_parity() as u32;
        let spin = lat.spin as u32;
        let (w, b) = (lat.w, lat.b);
        let mh = lat.mh;
        let super::Backend::Cuda(c) = &mut lat.backend else { unreachable!("CUDA backend") };
        let stride = c.stride as u32;
        let blocks = n.checked_mul(segs).ok_or_else(|| candle_core::Error::Msg("too many lattice blocks".into()))?;
        // The kernel's `dlp_lat_window`: the segment, a row above and below, 8-byte
        // alignment of the segment and slack for 64-bit reads past its last group.
        let window = ((SEG + 2 * lat.cols + 32) as u32).next_multiple_of(16);
        let cfg = |shared: u32| LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: shared,
        };
        {
            let mut bld = c.stream.launch_builder(&c.propose);
            bld.arg(&mut c.spins);
            bld.arg(&c.parity);
            bld.arg(&gpar);
            bld.arg(&c.thr);
            bld.arg(&k0);
            bld.arg(&k1);
            bld.arg(&step);
            bld.arg(&rows);
            bld.arg(&cols);
            bld.arg(&n);
            bld.arg(&stride);
            bld.arg(&segs);
            // SAFETY: the argument list matches `dlp_lattice_propose`'s signature, and the
            // buffers have the lengths it indexes (2·n·stride, n, 10).
            unsafe { bld.launch(cfg(window)) }.w()?;
        }
        if !mh {
            return Ok(());
        }
        {
            let mut bld = c.stream.launch_builder(&c.stats_fn);
            bld.arg(&c.spins);
            bld.arg(&c.parity);
            bld.arg(&mut c.stats);
            bld.arg(&spin);
            bld.arg(&rows);
            bld.arg(&cols);
            bld.arg(&n);
            bld.arg(&stride);
            bld.arg(&segs);
            // SAFETY: matches `dlp_lattice_stats` (spins 2·n·stride, parity n, stats n·12).
            unsafe { bld.launch(cfg(2 * window)) }.w()?;
        }
        {
            let mut bld = c.stream.launch_builder(&c.accept);
            bld.arg(&mut c.parity);
            bld.arg(&mut c.hist);
            bld.arg(&mut c.stats);
            bld.arg(&mut c.accepted);
            bld.arg(&c.softplus);
            bld.arg(&w);
            bld.arg(&b);
            bld.arg(&spin);
            bld.arg(&k0);
            bld.arg(&k1);
            bld.arg(&step);
            bld.arg(&n);
            let acfg =
                LaunchConfig { grid_dim: (n.div_ceil(THREADS), 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: matches `dlp_lattice_accept` (parity n, hist n·10, stats n·12, accepted n,
            // softplus 10).
            unsafe { bld.launch(acfg) }.w()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-stage test realises u < T for the 64-bit uniform u = r16·2⁴⁸ + r48, the
    /// single comparison written independently here, on ties and around them.
    #[test]
    fn two_stage_decision_is_one_64_bit_comparison() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state
        };
        for i in 0..20_000 {
            let t = next();
            // Every fourth case forces a tie on the top 16 bits.
            let r16 = if i % 4 == 0 { (t >> 48) as u32 } else { (next() >> 48) as u32 };
            let r48 = next() & LOW48;
            let u = ((r16 as u64) << 48) | r48;
            assert_eq!(decide(r16, t, || r48), u < t, "t={t:#x} r16={r16:#x} r48={r48:#x}");
        }
        assert!(!decide(0, 0, || 0));
        assert!(decide(0xffff, u64::MAX, || LOW48 - 1));
        assert!(!decide(0xffff, u64::MAX, || LOW48));
    }

    /// Class numbering on the 3 × 3 torus by hand: the centre of a plus sign has 4 up
    /// neighbours, a corner of the same state 2 (it wraps to two arms).
    #[test]
    fn classes_count_wrapped_neighbours() {
        let g = [0u8, 1, 0, 1, 1, 1, 0, 1, 0];
        assert_eq!(class_at(&g, 3, 3, 4), 5 + 4);
        // Site 0: up = site 6 (0), down = 3 (1), left = 2 (0), right = 1 (1).
        assert_eq!(class_at(&g, 3, 3, 0), 2);
        // Site 1: up = 7 (1), down = 4 (1), left = 0 (0), right = 2 (0).
        assert_eq!(class_at(&g, 3, 3, 1), 5 + 2);
    }
}
