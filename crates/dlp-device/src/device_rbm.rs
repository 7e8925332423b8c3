//! [`DeviceRbm`]: DULA, DMALA, RBM block Gibbs and single-site Gibbs on a Bernoulli RBM with
//! the chains, their caches and their random numbers kept on a candle [`Device`] (a CUDA GPU with the `cuda`
//! feature; on the CPU the same algorithm runs through each kernel's Rust twin).
//!
//! **Model.** f(x) = b·u + Σ_k softplus(c_k + Σ_i W_ik u_i) with u = x (binary) or u = 2x − 1
//! (spin) — [`dlp_models::Rbm`]'s convention. Spin visibles are folded into a binary RBM on
//! the bits once, on the host: W̃ = sW, b̃ = sb, c̃ = c − \[spin\] Σ_i W_i (s = 2 for spin, 1
//! for binary), so that f(x) = b̃·x + Σ_k softplus(c̃_k + (W̃ᵀx)_k) + const and ∇_x f = b̃ + W̃ σ(a)
//! (the DLP convention: gradients with respect to the bit). Everything on the device is f32.
//!
//! **Per-step work** (n chains, d visibles, M hiddens; `[gemm]` is candle's `matmul`: cuBLAS on
//! CUDA, candle's CPU gemm on the CPU; the rest are the fused kernels of `kernels/rbm.cu`, one
//! block of 256 threads per chain):
//!
//! | sampler | launches per step |
//! |---|---|
//! | `dmala` | propose → [gemm Y·W̃] → hidden → [gemm S·W̃ᵀ] → accept: **5** |
//! | `dula`  | propose → [gemm Y·W̃] → hidden → [gemm S·W̃ᵀ]: **4** |
//! | `block-gibbs` | [gemm X·W̃] → bernoulli(h) → [gemm H·W̃ᵀ] → bernoulli(x): **4** |
//! | `gibbs` | gibbs_site: **1** (plus [gemm X·W̃] and two copies every d steps) |
//!
//! * `propose`: per site g = G + b̃, the flip logit ℓ = ½ g (1 − 2x) − 1/(2α), flip iff
//!   u < σ(ℓ); writes Y and, per chain, log q(y|x) = Σ_{flipped} ℓ − Σ_i softplus(ℓ).
//! * `hidden`: S = σ(A + c̃) and per chain Σ_k softplus(A_k + c̃_k) (= f(y) − b̃·y).
//! * `accept` (DMALA): reverse logits at y, log q(x|y), f(y) = b̃·y + Σ softplus, the log ratio
//!   A = (f(y) − f(x)) + (log q(x|y) − log q(y|x)), accept iff ln u < A, then the rows x, G and
//!   f(x) of accepted chains are overwritten with y's in place and the count incremented.
//! * `bernoulli`: out = [u < σ(A + bias)] for the hidden (bias c̃) or visible (bias b̃) layer.
//! * `gibbs_site`: per chain a uniformly drawn site i, its flip log-odds
//!   Δ = b̃_i δ + Σ_k [softplus(a_k + c̃_k + W̃_ik δ) − softplus(a_k + c̃_k)] (δ = 1 − 2x_i) from
//!   the cached a = W̃ᵀx, flip iff u < σ(Δ), and then a += δ W̃_i in place: O(M) per chain.
//!   a is recomputed from the states every d steps so that f32 rounding cannot accumulate.
//!
//! State between steps: X (n × d), and for DLP the raw gradient product G = σ(a)W̃ᵀ (n × d)
//! at x, for DMALA also f(x) (n) and the accepted counts (n, u32), for single-site Gibbs
//! A = XW̃ (n × M); the step counter lives on the host. Bytes moved per DMALA step, beyond the
//! two products' reads of W̃ (2·d·M·4): about 10 n·d + 4 n·M f32 values are read or written
//! (propose: X, G, Y; accept: X, Y, GY and the accepted rows of X, G; the products' Y, GY, A,
//! S; hidden: A, S), ≈ 40 MB at n = 1000, d = 784, M = 500 — microseconds at HBM bandwidth;
//! at these sizes a step is bounded by the two products and by launch latency, which is why
//! the elementwise work is fused into three kernels instead of candle's ~40 ops. A `gibbs`
//! step reads one row of W̃ and a per chain (2 n·M floats): launch latency alone.
//!
//! **Random numbers.** Chain j of a run seeded s draws from Philox4x32-10 keyed by
//! [`key_of_seed`]`(s)` ([`crate::philox`]) with counter `[index, purpose, step, j]`: site i
//! of a layer uses word i mod 4 of block index i / 4 of its purpose ([`PURPOSE_FLIP`],
//! [`PURPOSE_HIDDEN`], [`PURPOSE_VISIBLE`]); DMALA's MH uniform is words 0 and 1 (high, low)
//! of block 0 of [`PURPOSE_MH`], a 53-bit uniform u ∈ (0, 1) compared as ln u < A in f64
//! (A itself is f32); single-site Gibbs takes block 0 of [`PURPOSE_SITE`]: words 0 and 1 give
//! the site ⌊u₆₄ d / 2⁶⁴⌋ ([`site_of`]), word 2 the flip uniform. A site's uniform is the word's top 24 bits, (w ≫ 8)/2²⁴, compared with
//! the f32 probability: the realised flip and Bernoulli probabilities are the f32 values
//! σ(ℓ) rounded up to a multiple of 2⁻²⁴ (an error ≤ 6·10⁻⁸ per site). The step index is
//! the low 32 bits of the step count. A chain's random numbers depend on (seed, j) only,
//! never on the number of chains or the device's thread count (the kernels' thread count is
//! a constant and each chain's sums are formed in one fixed order, which the CPU twin
//! reproduces), and so does its path on the CPU (tested). On a GPU, cuBLAS may pick another
//! algorithm for another number of rows, which changes the products' rounding: a path can
//! then differ at a near tie (a uniform within ~10⁻⁶ of its probability), not otherwise.
//!
//! **Reproducibility.** A GPU run is reproducible run to run for a seed (the kernels are
//! deterministic and so is cuBLAS on one GPU for fixed shapes). It is *not* bit-identical to the
//! CPU twin: the products round differently (cuBLAS vs candle's CPU gemm) and CUDA's `expf` and
//! `log1pf` differ from Rust's by an ulp or two, so a flip whose uniform lies within ~10⁻⁶ of
//! its probability can go either way, after which the two paths separate (they agree in law);
//! nvcc's fused multiply-adds add rounding differences of the same size. The kernels' source
//! itself, compiled for the host (`tests/emu/cuda_shim.hpp`: the C library's `expf`/`log1pf`,
//! no contraction) and launched as the CUDA backend launches it, reproduces the twin bit for
//! bit (tests/device_rbm.rs, tests/device_dlp.rs). Nor is it the host samplers' path (`dlp-samplers`: ChaCha streams, f64 arithmetic).
//! Because f and the sums are f32, DMALA's log ratio carries an error of order 10⁻⁴ on a
//! 784 × 500 RBM (f ≈ 10³, where an f32 ulp is 6·10⁻⁵; measured ≤ 1.2·10⁻⁴ against f64 by the
//! unit tests): acceptance probabilities are off by that relative amount, as in the official
//! f32 PyTorch code.
//!
//! **Names.** `block-gibbs` is the RBM's alternating block Gibbs sweep (h ~ p(h|x), then
//! x ~ p(x|h): all d visibles per step), the `block-gibbs` row of the sampler registry — not
//! `bg-1`, which there (and in the official code) redraws one site per step. `gibbs` is
//! random-scan single-site Gibbs (the registry's `gibbs`): the same per-step work as `bg-1`,
//! whose sites follow a shuffled order instead of independent uniform draws (the official
//! code evaluates f at both values of the site with two full products; here the cached a
//! makes that O(M)).

use crate::device_chains::{DeviceChains, accepted_counts, bits_of};
use crate::philox::{counter, key_of_seed, philox4x32_10, u01_of_u64, u64_of};
use candle_core::{Device, Tensor};
use dlp_models::Rbm;
use dlp_tensor::{Error, build_error, device_name};
use rayon::prelude::*;

/// Threads per block of the kernels (one block per chain); the CPU twin's reduction order
/// follows it, so it is part of a chain's definition, not a tuning knob.
pub const THREADS: usize = 256;
/// Philox purpose of the DLP flip uniforms.
pub const PURPOSE_FLIP: u32 = 1;
/// Philox purpose of DMALA's MH uniform.
pub const PURPOSE_MH: u32 = 2;
/// Philox purpose of block Gibbs' hidden-unit uniforms.
pub const PURPOSE_HIDDEN: u32 = 3;
/// Philox purpose of block Gibbs' visible-unit uniforms.
pub const PURPOSE_VISIBLE: u32 = 4;
/// Philox purpose of single-site Gibbs' site and flip uniforms.
pub const PURPOSE_SITE: u32 = 5;
/// The step index of DMALA's set-up pass (which accepts unconditionally and never reads its
/// uniform); real steps count from 0.
const INIT_STEP: u32 = u32::MAX;

/// Which sampler a [`DeviceRbm`] runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RbmSampler {
    /// DULA: the DLP proposal accepted every step (step size α > 0, +∞ allowed).
    Dula {
        /// Step size α ({0,1} units).
        alpha: f64,
    },
    /// DMALA: the DLP proposal with the MH test (step size α > 0, +∞ allowed).
    Dmala {
        /// Step size α ({0,1} units).
        alpha: f64,
    },
    /// RBM block Gibbs: h ~ p(h|x), then x ~ p(x|h).
    BlockGibbs,
    /// Random-scan single-site Gibbs: one uniformly drawn visible unit per chain and step,
    /// redrawn from its conditional (the registry's `gibbs`; the per-step cost of `bg-1`).
    Gibbs,
}

/// The uniform of one site: the top 24 bits of its Philox word, exactly, in [0, 1).
#[inline]
pub fn site_uniform(word: u32) -> f32 {
    (word >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// 1/(2α) in f32 for the DLP step size α (0 for α = +∞); [`Error::Param`] unless α > 0.
pub(crate) fn half_inv_step_size(alpha: f64) -> Result<f32, Error> {
    if alpha.is_nan() || alpha <= 0.0 {
        return Err(Error::Param(format!(
            "step_size (α) must be > 0 (finite, or +inf for the App. D ablation), got {alpha}"
        )));
    }
    Ok((0.5 / alpha) as f32)
}

/// The number n of chains in the starting states `x0` (n × d bits); [`Error::Param`] for a
/// length that is not a positive multiple of d (d ≥ 1), a value > 1, or n or d beyond the
/// kernels' index range.
pub(crate) fn chain_count(x0: &[u32], d: usize) -> Result<usize, Error> {
    if x0.is_empty() || !x0.len().is_multiple_of(d) {
        return Err(Error::Param(format!("x0 must hold n × d bits with n ≥ 1 and d = {d}, found {} values", x0.len())));
    }
    if let Some((i, v)) = x0.iter().enumerate().find(|(_, v)| **v > 1) {
        return Err(Error::Param(format!("x0[{i}] = {v}: states are bits (0 or 1)")));
    }
    let n = x0.len() / d;
    if n > i32::MAX as usize || d > i32::MAX as usize {
        return Err(Error::Param(format!("{n} chains of d = {d} exceed the kernels' index range")));
    }
    Ok(n)
}

/// Chains of one sampler on one RBM, living on a device (see the module doc).
pub struct DeviceRbm {
    k: Consts,
    steps: u64,
    device: Device,
    state: State,
}

/// What does not change between steps: the sampler, the sizes, the key and the folded RBM.
struct Consts {
    sampler: RbmSampler,
    n: usize,
    d: usize,
    m: usize,
    key: [u32; 2],
    /// 1/(2α) in f32 (0 for block Gibbs and α = +∞).
    half_inv_alpha: f32,
    /// W̃ (d × M) and W̃ᵀ (M × d, contiguous), f32 on the device.
    w: Tensor,
    wt: Tensor,
    /// W̃ (d × M), b̃ and c̃ on the host (the CPU twin reads them; the GPU state keeps its own
    /// copies).
    w_host: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

// One value per set of chains, so the size gap between the variants (the CUDA one holds
// device handles) costs nothing worth a box.
#[cfg_attr(feature = "cuda", allow(clippy::large_enum_variant))]
enum State {
    Cpu(CpuState),
    #[cfg(feature = "cuda")]
    Cuda(gpu::GpuState),
}

/// The CPU twin's state: X, G (DLP), f(x) and counts (DMALA), A = XW̃ (single-site Gibbs),
/// all as on the device.
struct CpuState {
    x: Vec<f32>,
    g: Vec<f32>,
    a: Vec<f32>,
    f: Vec<f32>,
    count: Vec<u32>,
}

impl DeviceRbm {
    /// Chains of `sampler` on `rbm` started at `x0` (n × d bits, n ≥ 1) on `device`, with the
    /// Philox streams of `seed`. Errors: [`Error::Param`] for α ≤ 0 or NaN, an `x0` whose
    /// length is not a positive multiple of d or with a value > 1, a device other than the CPU
    /// or CUDA; [`Error::Device`] when candle fails to upload or evaluate.
    pub fn new(rbm: &Rbm, sampler: RbmSampler, x0: &[u32], seed: u64, device: &Device) -> Result<Self, Error> {
        let (d, m) = (rbm.d(), rbm.m());
        let half_inv_alpha = match sampler {
            RbmSampler::Dula { alpha } | RbmSampler::Dmala { alpha } => half_inv_step_size(alpha)?,
            RbmSampler::BlockGibbs | RbmSampler::Gibbs => 0.0,
        };
        let n = chain_count(x0, d)?;
        if m > i32::MAX as usize {
            return Err(Error::Param(format!("M = {m} exceeds the kernels' index range")));
        }
        // Fold spins into a binary RBM on the bits (module doc), in f64 before rounding.
        let s = rbm.value_scale();
        let w: Vec<f32> = rbm.w().iter().map(|&v| (s * v) as f32).collect();
        let mut wt = vec![0f32; d * m];
        for i in 0..d {
            for k in 0..m {
                wt[k * d + i] = w[i * m + k];
            }
        }
        let b: Vec<f32> = rbm.b().iter().map(|&v| (s * v) as f32).collect();
        let c: Vec<f32> = (0..m)
            .map(|k| {
                let shift: f64 = if rbm.is_spin() { (0..d).map(|i| rbm.w()[i * m + k]).sum() } else { 0.0 };
                (rbm.c()[k] - shift) as f32
            })
            .collect();
        let up =
            |v: &[f32], shape: (usize, usize)| Tensor::from_slice(v, shape, device).map_err(|e| build_error(device, e));
        let (w_host, w, wt) = (w.clone(), up(&w, (d, m))?, up(&wt, (m, d))?);
        let x0f: Vec<f32> = x0.iter().map(|&v| v as f32).collect();
        let state = match device {
            Device::Cpu => {
                State::Cpu(CpuState { x: x0f, g: Vec::new(), a: Vec::new(), f: Vec::new(), count: vec![0; n] })
            }
            #[cfg(feature = "cuda")]
            Device::Cuda(dev) => {
                State::Cuda(gpu::GpuState::new(dev, sampler, &x0f, n, d, &b, &c).map_err(|e| build_error(device, e))?)
            }
            #[allow(unreachable_patterns)]
            other => {
                return Err(Error::Param(format!(
                    "device {} is not supported by the device RBM samplers (use cpu or cuda:N)",
                    device_name(other)
                )));
            }
        };
        let k = Consts { sampler, n, d, m, key: key_of_seed(seed), half_inv_alpha, w, wt, w_host, b, c };
        let mut state = state;
        match &mut state {
            State::Cpu(st) => k.start_cpu(st),
            #[cfg(feature = "cuda")]
            State::Cuda(st) => st.start(&k.w, &k.wt, k.half_inv_alpha, k.key),
        }
        .map_err(|e| build_error(device, e))?;
        Ok(DeviceRbm { k, steps: 0, device: device.clone(), state })
    }

    /// The sampler these chains run.
    pub fn sampler(&self) -> RbmSampler {
        self.k.sampler
    }

    /// The device the chains live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Number of hidden units M.
    pub fn hidden(&self) -> usize {
        self.k.m
    }
}

impl Consts {
    /// Fills the caches of the starting states: G for DULA; G, f and the counts for DMALA (by
    /// the accept pass with an unconditional acceptance, so that f and G of every state come
    /// from the same code).
    fn start_cpu(&self, st: &mut CpuState) -> candle_core::Result<()> {
        let (n, d, m) = (self.n, self.d, self.m);
        match self.sampler {
            RbmSampler::BlockGibbs => Ok(()),
            RbmSampler::Gibbs => {
                st.a = cpu_product(&st.x, n, d, &self.w)?;
                Ok(())
            }
            RbmSampler::Dula { .. } => {
                let (g, _) = cpu_gradient(&st.x, n, d, m, &self.w, &self.wt, &self.c)?;
                st.g = g;
                Ok(())
            }
            RbmSampler::Dmala { .. } => {
                st.g = vec![0.0; n * d];
                st.f = vec![f32::NEG_INFINITY; n];
                let y = st.x.clone();
                let (gy, sp) = cpu_gradient(&y, n, d, m, &self.w, &self.wt, &self.c)?;
                let logq = vec![f32::NEG_INFINITY; n];
                let (x, g, f, count) = (&mut st.x, &mut st.g, &mut st.f, &mut st.count);
                cpu_accept(x, g, f, count, &y, &gy, &sp, &logq, &self.b, self.half_inv_alpha, self.key, INIT_STEP);
                st.count.fill(0);
                Ok(())
            }
        }
    }

    /// One step of every chain of the CPU twin.
    fn step_cpu(&self, st: &mut CpuState, step: u32) -> candle_core::Result<()> {
        let (n, d, m, hia, key) = (self.n, self.d, self.m, self.half_inv_alpha, self.key);
        match self.sampler {
            RbmSampler::Dula { .. } | RbmSampler::Dmala { .. } => {
                let (y, logq) = cpu_propose(&st.x, &st.g, &self.b, hia, key, step);
                let (gy, sp) = cpu_gradient(&y, n, d, m, &self.w, &self.wt, &self.c)?;
                if let RbmSampler::Dmala { .. } = self.sampler {
                    let (x, g, f, count) = (&mut st.x, &mut st.g, &mut st.f, &mut st.count);
                    cpu_accept(x, g, f, count, &y, &gy, &sp, &logq, &self.b, hia, key, step);
                } else {
                    st.x = y;
                    st.g = gy;
                }
            }
            RbmSampler::BlockGibbs => {
                let a = cpu_product(&st.x, n, d, &self.w)?;
                let mut h = vec![0f32; n * m];
                h.par_chunks_mut(m).enumerate().for_each(|(j, hr)| {
                    bernoulli_row(&a[j * m..(j + 1) * m], &self.c, key, j as u32, step, PURPOSE_HIDDEN, hr);
                });
                let v = cpu_product(&h, n, m, &self.wt)?;
                st.x.par_chunks_mut(d).enumerate().for_each(|(j, xr)| {
                    bernoulli_row(&v[j * d..(j + 1) * d], &self.b, key, j as u32, step, PURPOSE_VISIBLE, xr);
                });
            }
            RbmSampler::Gibbs => {
                if refreshes(step, d) {
                    st.a = cpu_product(&st.x, n, d, &self.w)?;
                }
                st.x.par_chunks_mut(d).zip(st.a.par_chunks_mut(m)).enumerate().for_each(|(j, (xr, ar))| {
                    gibbs_site_row(xr, ar, &self.w_host, &self.b, &self.c, key, j as u32, step);
                });
            }
        }
        Ok(())
    }
}

impl DeviceChains for DeviceRbm {
    fn name(&self) -> String {
        match self.k.sampler {
            RbmSampler::Dula { .. } => "dula".into(),
            RbmSampler::Dmala { .. } => "dmala".into(),
            RbmSampler::BlockGibbs => "block-gibbs".into(),
            RbmSampler::Gibbs => "gibbs".into(),
        }
    }

    fn n_chains(&self) -> usize {
        self.k.n
    }

    fn dim(&self) -> usize {
        self.k.d
    }

    fn step(&mut self) -> candle_core::Result<()> {
        let (k, step) = (&self.k, self.steps as u32);
        match &mut self.state {
            State::Cpu(st) => k.step_cpu(st, step)?,
            #[cfg(feature = "cuda")]
            State::Cuda(st) => st.step(&k.w, &k.wt, k.half_inv_alpha, k.key, step)?,
        }
        self.steps += 1;
        Ok(())
    }

    fn sync(&self) -> candle_core::Result<()> {
        self.device.synchronize()
    }

    fn positions(&self) -> candle_core::Result<Vec<u32>> {
        let x = match &self.state {
            State::Cpu(st) => st.x.clone(),
            #[cfg(feature = "cuda")]
            State::Cuda(st) => st.positions()?,
        };
        Ok(bits_of(x))
    }

    fn accepted(&self) -> candle_core::Result<Vec<u64>> {
        accepted_counts(matches!(self.k.sampler, RbmSampler::Dmala { .. }), self.steps, self.k.n, || {
            match &self.state {
                State::Cpu(st) => Ok(st.count.clone()),
                #[cfg(feature = "cuda")]
                State::Cuda(st) => st.counts(),
            }
        })
    }

    fn steps_taken(&self) -> u64 {
        self.steps
    }
}

// ---------------------------------------------------------------------------------------------
// The CPU twins of kernels/rbm.cu: the same formulas in f32, the same Philox counters and the
// same summation order (thread (i / 4) mod THREADS adds its elements in order; then the
// shuffle tree of `block_sum`).

/// A per-chain sum in the kernels' order: `partial[t]` is thread t's running sum.
struct BlockSum {
    partial: [f32; THREADS],
}

impl BlockSum {
    fn new() -> Self {
        BlockSum { partial: [0.0; THREADS] }
    }

    /// Adds element i's term to the partial sum of the thread that owns it.
    #[inline]
    fn add(&mut self, i: usize, v: f32) {
        let t = (i >> 2) % THREADS;
        self.partial[t] += v;
    }

    /// `dlp_block_sum`: a shuffle-down tree (offsets 16 … 1) in each warp of 32, then the same
    /// tree over the warp sums padded with zeros to 32 lanes.
    fn total(&self) -> f32 {
        fn tree(v: &mut [f32; 32]) -> f32 {
            for off in [16, 8, 4, 2, 1] {
                for l in 0..off {
                    v[l] += v[l + off];
                }
            }
            v[0]
        }
        let mut warps = [0f32; 32];
        for (w, sum) in warps.iter_mut().enumerate().take(THREADS / 32) {
            let mut v = [0f32; 32];
            v.copy_from_slice(&self.partial[32 * w..32 * (w + 1)]);
            *sum = tree(&mut v);
        }
        tree(&mut warps)
    }
}

/// σ(l) from e = exp(−|l|) (`dlp_sigmoid_e`).
#[inline]
fn sigmoid_e(l: f32, e: f32) -> f32 {
    if l >= 0.0 { 1.0 / (1.0 + e) } else { e / (1.0 + e) }
}

/// softplus(l) from e = exp(−|l|) (`dlp_softplus_e`).
#[inline]
fn softplus_e(l: f32, e: f32) -> f32 {
    l.max(0.0) + e.ln_1p()
}

/// The flip logit ℓ = ½ g (1 − 2x) − 1/(2α) of a site with gradient g (b̃ included) at bit x.
#[inline]
fn flip_logit(g: f32, x: f32, half_inv_alpha: f32) -> f32 {
    0.5 * g * (1.0 - 2.0 * x) - half_inv_alpha
}

/// The Philox block of `index` of `purpose` at `step` of `chain`.
#[inline]
fn block(key: [u32; 2], chain: u32, step: u32, purpose: u32, index: u32) -> [u32; 4] {
    philox4x32_10(counter(chain, step, purpose, index), key)
}

/// Calls `site(i, word)` for every site i < `len`, in increasing order, with its Philox word of
/// `purpose` at `step` of `chain`: word i mod 4 of block i / 4 (as the kernels read them).
#[inline]
fn for_each_site_word(
    len: usize,
    key: [u32; 2],
    chain: u32,
    step: u32,
    purpose: u32,
    mut site: impl FnMut(usize, u32),
) {
    for q in 0..len.div_ceil(4) {
        let r = block(key, chain, step, purpose, q as u32);
        for (k, &word) in r.iter().enumerate().take(len - 4 * q) {
            site(4 * q + k, word);
        }
    }
}

/// `dlp_rbm_propose` for one chain: draws the proposal row `y` from x and the raw gradient
/// product `g`; returns log q(y|x).
#[allow(clippy::too_many_arguments)]
pub(crate) fn propose_row(
    x: &[f32],
    g: &[f32],
    b: &[f32],
    half_inv_alpha: f32,
    key: [u32; 2],
    chain: u32,
    step: u32,
    y: &mut [f32],
) -> f32 {
    let mut sum = BlockSum::new();
    for_each_site_word(x.len(), key, chain, step, PURPOSE_FLIP, |i, word| {
        let l = flip_logit(g[i] + b[i], x[i], half_inv_alpha);
        let e = (-l.abs()).exp();
        let flip = site_uniform(word) < sigmoid_e(l, e);
        y[i] = if flip { 1.0 - x[i] } else { x[i] };
        sum.add(i, (if flip { l } else { 0.0 }) - softplus_e(l, e));
    });
    sum.total()
}

/// `dlp_rbm_hidden` for one chain: s = σ(a + c), returns Σ_k softplus(a_k + c_k).
// `pub` (hidden) for tests/device_rbm.rs, which compares the kernel, run on the host, with it.
#[doc(hidden)]
pub fn hidden_row(a: &[f32], c: &[f32], s: &mut [f32]) -> f32 {
    let mut sum = BlockSum::new();
    for (i, (&ai, &ci)) in a.iter().zip(c).enumerate() {
        let v = ai + ci;
        let e = (-v.abs()).exp();
        s[i] = sigmoid_e(v, e);
        sum.add(i, softplus_e(v, e));
    }
    sum.total()
}

/// The log ratio of `dlp_rbm_accept` for one chain: f(y) and
/// A = (f(y) − f(x)) + (log q(x|y) − log q(y|x)), from y, its raw gradient product `gy`, its
/// Σ softplus `sp`, f(x) and log q(y|x).
#[allow(clippy::too_many_arguments)]
pub(crate) fn mh_log_ratio_row(
    x: &[f32],
    y: &[f32],
    gy: &[f32],
    sp: f32,
    fx: f32,
    logq_fwd: f32,
    b: &[f32],
    half_inv_alpha: f32,
) -> (f32, f32) {
    let (mut q, mut lin) = (BlockSum::new(), BlockSum::new());
    for i in 0..x.len() {
        let l = flip_logit(gy[i] + b[i], y[i], half_inv_alpha);
        let e = (-l.abs()).exp();
        q.add(i, (if y[i] != x[i] { l } else { 0.0 }) - softplus_e(l, e));
        lin.add(i, b[i] * y[i]);
    }
    let fy = lin.total() + sp;
    (fy, (fy - fx) + (q.total() - logq_fwd))
}

/// DMALA's MH uniform of `chain` at `step` (53 bits; the test is ln u < A in f64).
pub fn mh_uniform(key: [u32; 2], chain: u32, step: u32) -> f64 {
    let r = block(key, chain, step, PURPOSE_MH, 0);
    u01_of_u64(u64_of(r[0], r[1]))
}

/// `dlp_rbm_propose` over all chains: the proposal rows Y (n × d) and log q(y|x) (n) from the
/// rows `x` and their raw gradient products `g` (n × d each) with the bias `b` (d).
// `pub` (hidden) for tests/device_rbm.rs, which compares the kernel, run on the host, with it.
#[doc(hidden)]
pub fn cpu_propose(
    x: &[f32],
    g: &[f32],
    b: &[f32],
    half_inv_alpha: f32,
    key: [u32; 2],
    step: u32,
) -> (Vec<f32>, Vec<f32>) {
    let d = b.len();
    let mut y = vec![0f32; x.len()];
    let mut logq = vec![0f32; x.len() / d];
    y.par_chunks_mut(d).zip(logq.par_iter_mut()).enumerate().for_each(|(j, (yr, lq))| {
        let row = j * d..(j + 1) * d;
        *lq = propose_row(&x[row.clone()], &g[row], b, half_inv_alpha, key, j as u32, step, yr);
    });
    (y, logq)
}

/// `dlp_rbm_accept` over all chains, in place on the rows `x`, `g` (n × d), f(x) `f` and the
/// counts (n), from the proposal rows `y`, their raw gradient products `gy`, their Σ softplus
/// `sp`, log q(y|x) and the bias `b` (d).
#[allow(clippy::too_many_arguments)]
// `pub` (hidden) for tests/device_rbm.rs, which compares the kernel, run on the host, with it.
#[doc(hidden)]
pub fn cpu_accept(
    x: &mut [f32],
    g: &mut [f32],
    f: &mut [f32],
    count: &mut [u32],
    y: &[f32],
    gy: &[f32],
    sp: &[f32],
    logq: &[f32],
    b: &[f32],
    half_inv_alpha: f32,
    key: [u32; 2],
    step: u32,
) {
    let d = b.len();
    x.par_chunks_mut(d).zip(g.par_chunks_mut(d)).zip(f.par_iter_mut().zip(count.par_iter_mut())).enumerate().for_each(
        |(j, ((xr, gr), (fx, count)))| {
            let row = j * d..(j + 1) * d;
            let (yr, gyr) = (&y[row.clone()], &gy[row]);
            let (fy, ratio) = mh_log_ratio_row(xr, yr, gyr, sp[j], *fx, logq[j], b, half_inv_alpha);
            if mh_uniform(key, j as u32, step).ln() < ratio as f64 {
                xr.copy_from_slice(yr);
                gr.copy_from_slice(gyr);
                *fx = fy;
                *count += 1;
            }
        },
    );
}

/// `dlp_rbm_bernoulli` for one chain: out_i = [u_i < σ(a_i + bias_i)].
// `pub` (hidden) for tests/device_rbm.rs, which compares the kernel, run on the host, with it.
#[doc(hidden)]
pub fn bernoulli_row(a: &[f32], bias: &[f32], key: [u32; 2], chain: u32, step: u32, purpose: u32, out: &mut [f32]) {
    for_each_site_word(a.len(), key, chain, step, purpose, |i, word| {
        let v = a[i] + bias[i];
        let e = (-v.abs()).exp();
        out[i] = if site_uniform(word) < sigmoid_e(v, e) { 1.0 } else { 0.0 };
    });
}

/// True when single-site Gibbs recomputes its cached products A = XW̃ from the states before
/// step `step` (every d steps, so that the f32 rounding of the in-place updates cannot
/// accumulate; the CPU twin and the GPU follow the same schedule).
fn refreshes(step: u32, d: usize) -> bool {
    step > 0 && (step as usize).is_multiple_of(d)
}

/// The site of a single-site Gibbs step: ⌊u · d / 2⁶⁴⌋ for the 64-bit uniform u (bias
/// ≤ d/2⁶⁴, far below any f32 probability's resolution).
#[inline]
pub fn site_of(u: u64, d: usize) -> usize {
    ((u as u128 * d as u128) >> 64) as usize
}

/// `dlp_rbm_gibbs_site` for one chain: x (d) and its cached products a = xW̃ (M) in place.
#[allow(clippy::too_many_arguments)]
// `pub` (hidden) for tests/device_rbm.rs, which compares the kernel, run on the host, with it.
#[doc(hidden)]
pub fn gibbs_site_row(
    x: &mut [f32],
    a: &mut [f32],
    w: &[f32],
    b: &[f32],
    c: &[f32],
    key: [u32; 2],
    chain: u32,
    step: u32,
) {
    let (d, m) = (x.len(), a.len());
    let r = block(key, chain, step, PURPOSE_SITE, 0);
    let i = site_of(u64_of(r[0], r[1]), d);
    let delta = 1.0 - 2.0 * x[i];
    let wi = &w[i * m..(i + 1) * m];
    let mut sum = BlockSum::new();
    for k in 0..m {
        let v0 = a[k] + c[k];
        let v1 = v0 + wi[k] * delta;
        sum.add(k, softplus_e(v1, (-v1.abs()).exp()) - softplus_e(v0, (-v0.abs()).exp()));
    }
    let log_odds = b[i] * delta + sum.total();
    if site_uniform(r[2]) < sigmoid_e(log_odds, (-log_odds.abs()).exp()) {
        for (ak, wk) in a.iter_mut().zip(wi) {
            *ak += wk * delta;
        }
        x[i] = 1.0 - x[i];
    }
}

/// rows (n × k) times `w` (k × ·) by candle's CPU gemm, row-major out.
fn cpu_product(rows: &[f32], n: usize, k: usize, w: &Tensor) -> candle_core::Result<Vec<f32>> {
    Tensor::from_slice(rows, (n, k), &Device::Cpu)?.matmul(w)?.flatten_all()?.to_vec1::<f32>()
}

/// The raw gradient product σ(XW̃ + c̃)W̃ᵀ of the rows `x` and their Σ softplus.
fn cpu_gradient(
    x: &[f32],
    n: usize,
    d: usize,
    m: usize,
    w: &Tensor,
    wt: &Tensor,
    c: &[f32],
) -> candle_core::Result<(Vec<f32>, Vec<f32>)> {
    let a = cpu_product(x, n, d, w)?;
    let mut s = vec![0f32; n * m];
    let mut sp = vec![0f32; n];
    s.par_chunks_mut(m).zip(sp.par_iter_mut()).enumerate().for_each(|(j, (sr, spj))| {
        *spj = hidden_row(&a[j * m..(j + 1) * m], c, sr);
    });
    Ok((cpu_product(&s, n, m, wt)?, sp))
}

#[cfg(feature = "cuda")]
pub(crate) mod gpu {
    //! The CUDA side: the same steps as the CPU twin, each elementwise stage one launch of a
    //! `kernels/rbm.cu` kernel on candle's stream, the products candle's cuBLAS `matmul`.
    //! Fresh per-step buffers (Y, S, H, …) are allocated on the stream (stream-ordered, cheap)
    //! and wrapped as tensors for the products; kernels only ever write buffers they own
    //! (`&mut CudaSlice`) or fresh ones. The launches of `dlp_rbm_propose` and
    //! `dlp_rbm_accept` ([`launch_propose`], [`launch_accept`]) also serve
    //! [`crate::device_dlp`] (with a zero bias).

    use super::{INIT_STEP, PURPOSE_HIDDEN, PURPOSE_VISIBLE, RbmSampler, THREADS, refreshes};
    use crate::kernels::{cuda_func, cuda_slice as slice, cuda_tensor as tensor, launch_config};
    use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaSlice, CudaStream, PushKernelArg};
    use candle_core::cuda_backend::{CudaDevice, WrapErr};
    use candle_core::{Result, Tensor};
    use std::sync::Arc;

    /// The module name under which `kernels/rbm.cu` is loaded.
    pub(crate) const MODULE: &str = "dlp_rbm";

    /// Launches `dlp_rbm_propose` on `stream` for n chains of d sites: from the rows `x` with
    /// raw gradient products `g` (n × d each) and the bias `b` (d), the proposal Y (a fresh
    /// n × d tensor on `dev`) and log q(y|x) (a fresh buffer of n).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_propose(
        dev: &CudaDevice,
        stream: &CudaStream,
        propose: &CudaFunction,
        (n, d): (usize, usize),
        x: &CudaSlice<f32>,
        g: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        half_inv_alpha: f32,
        key: [u32; 2],
        step: u32,
    ) -> Result<(Tensor, CudaSlice<f32>)> {
        // SAFETY (both): fully written by the kernel.
        let mut y = unsafe { dev.alloc::<f32>(n * d)? };
        let mut logq = unsafe { dev.alloc::<f32>(n)? };
        let d32 = d as u32;
        {
            let mut args = stream.launch_builder(propose);
            args.arg(x).arg(g).arg(b).arg(&mut y).arg(&mut logq);
            args.arg(&d32).arg(&half_inv_alpha).arg(&key[0]).arg(&key[1]).arg(&step);
            // SAFETY: argument list of `dlp_rbm_propose`; x, g, y hold n × d floats, b d, logq n;
            // one block per chain.
            unsafe { args.launch(launch_config(n as u32, THREADS as u32)) }.w()?;
        }
        Ok((tensor(y, dev, (n, d)), logq))
    }

    /// Launches `dlp_rbm_accept` (DMALA's MH test and selection) on `stream` for n chains of d
    /// sites: in place on the rows `x`, `g` (n × d), f(x) `fx` and the counts (n), from the
    /// proposal rows `y`, their raw gradient products `gy` (n × d), their Σ softplus `sp`,
    /// log q(y|x) `logq_fwd` (n) and the bias `b` (d).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_accept(
        stream: &CudaStream,
        accept: &CudaFunction,
        (n, d): (usize, usize),
        x: &mut CudaSlice<f32>,
        g: &mut CudaSlice<f32>,
        fx: &mut CudaSlice<f32>,
        count: &mut CudaSlice<u32>,
        y: &CudaSlice<f32>,
        gy: &CudaSlice<f32>,
        sp: &CudaSlice<f32>,
        logq_fwd: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        half_inv_alpha: f32,
        key: [u32; 2],
        step: u32,
    ) -> Result<()> {
        let d32 = d as u32;
        let mut args = stream.launch_builder(accept);
        args.arg(x).arg(g).arg(fx).arg(count).arg(y).arg(gy).arg(sp).arg(logq_fwd).arg(b);
        args.arg(&d32).arg(&half_inv_alpha).arg(&key[0]).arg(&key[1]).arg(&step);
        // SAFETY: argument list of `dlp_rbm_accept`; row buffers (x, g, y, gy) n × d floats,
        // per-chain ones (fx, count, sp, logq_fwd) n, b d; one block per chain.
        unsafe { args.launch(launch_config(n as u32, THREADS as u32)) }.w()?;
        Ok(())
    }

    /// The chains' device state, by sampler.
    enum Chains {
        /// DMALA: X, G, f(x), counts, all updated in place by the accept kernel.
        Dmala { x: CudaSlice<f32>, g: CudaSlice<f32>, f: CudaSlice<f32>, count: CudaSlice<u32> },
        /// DULA: X and G, replaced every step by the proposal and its product.
        Dula { x: Tensor, g: Tensor },
        /// Block Gibbs: X, replaced every step.
        Gibbs { x: Tensor },
        /// Single-site Gibbs: X and A = XW̃, updated in place.
        Site { x: CudaSlice<f32>, a: CudaSlice<f32> },
    }

    pub(super) struct GpuState {
        dev: CudaDevice,
        stream: Arc<CudaStream>,
        n: usize,
        d: usize,
        m: usize,
        b: CudaSlice<f32>,
        c: CudaSlice<f32>,
        propose: CudaFunction,
        hidden: CudaFunction,
        accept: CudaFunction,
        bernoulli: CudaFunction,
        gibbs_site: CudaFunction,
        chains: Chains,
    }

    impl GpuState {
        pub(super) fn new(
            dev: &CudaDevice,
            sampler: RbmSampler,
            x0: &[f32],
            n: usize,
            d: usize,
            b: &[f32],
            c: &[f32],
        ) -> Result<Self> {
            let ptx = crate::dlp_ptx!("rbm");
            let func = |name: &str| cuda_func(dev, MODULE, ptx, name);
            let chains = match sampler {
                RbmSampler::Dmala { .. } => Chains::Dmala {
                    x: dev.clone_htod(x0)?,
                    g: dev.alloc_zeros::<f32>(n * d)?,
                    f: dev.clone_htod(&vec![f32::NEG_INFINITY; n])?,
                    count: dev.alloc_zeros::<u32>(n)?,
                },
                RbmSampler::Dula { .. } => {
                    let x = tensor(dev.clone_htod(x0)?, dev, (n, d));
                    Chains::Dula { g: x.zeros_like()?, x }
                }
                RbmSampler::BlockGibbs => Chains::Gibbs { x: tensor(dev.clone_htod(x0)?, dev, (n, d)) },
                RbmSampler::Gibbs => Chains::Site { x: dev.clone_htod(x0)?, a: dev.alloc_zeros::<f32>(n * c.len())? },
            };
            Ok(GpuState {
                dev: dev.clone(),
                stream: dev.cuda_stream(),
                n,
                d,
                m: c.len(),
                b: dev.clone_htod(b)?,
                c: dev.clone_htod(c)?,
                propose: func("dlp_rbm_propose")?,
                hidden: func("dlp_rbm_hidden")?,
                accept: func("dlp_rbm_accept")?,
                bernoulli: func("dlp_rbm_bernoulli")?,
                gibbs_site: func("dlp_rbm_gibbs_site")?,
                chains,
            })
        }

        fn cfg(&self) -> candle_core::cuda_backend::cudarc::driver::LaunchConfig {
            launch_config(self.n as u32, THREADS as u32)
        }

        /// σ(YW̃ + c̃)W̃ᵀ of the rows `y` and their Σ softplus: gemm, `hidden`, gemm.
        fn gradient(&self, y: &Tensor, w: &Tensor, wt: &Tensor) -> Result<(Tensor, CudaSlice<f32>)> {
            let a = y.matmul(w)?;
            let (n, m) = (self.n, self.m);
            // SAFETY (both allocations): every element is written by the kernel below.
            let mut s = unsafe { self.dev.alloc::<f32>(n * m)? };
            let mut sp = unsafe { self.dev.alloc::<f32>(n)? };
            {
                let (guard, layout) = a.storage_and_layout();
                let a_sl = slice(&guard, layout)?;
                let m32 = m as u32;
                let mut args = self.stream.launch_builder(&self.hidden);
                args.arg(a_sl).arg(&self.c).arg(&mut s).arg(&mut sp).arg(&m32);
                // SAFETY: argument types and counts match `dlp_rbm_hidden`; buffers hold n × M
                // (a, s), M (c) and n (sp) floats; one block per chain.
                unsafe { args.launch(self.cfg()) }.w()?;
            }
            let gy = tensor(s, &self.dev, (n, m)).matmul(wt)?;
            Ok((gy, sp))
        }

        /// `propose` from rows x with raw gradient product g: the proposal Y and log q(y|x).
        fn propose(
            &self,
            x: &CudaSlice<f32>,
            g: &CudaSlice<f32>,
            half_inv_alpha: f32,
            key: [u32; 2],
            step: u32,
        ) -> Result<(Tensor, CudaSlice<f32>)> {
            let nd = (self.n, self.d);
            launch_propose(&self.dev, &self.stream, &self.propose, nd, x, g, &self.b, half_inv_alpha, key, step)
        }

        /// `accept` (DMALA): the MH test of proposal `y` and selection into the state.
        #[allow(clippy::too_many_arguments)]
        fn accept(
            &mut self,
            y: &Tensor,
            gy: &Tensor,
            sp: &CudaSlice<f32>,
            logq: &CudaSlice<f32>,
            half_inv_alpha: f32,
            key: [u32; 2],
            step: u32,
        ) -> Result<()> {
            let nd = (self.n, self.d);
            let Chains::Dmala { x, g, f, count } = &mut self.chains else {
                candle_core::bail!("device RBM: accept on a sampler without an MH test")
            };
            let (yg, yl) = y.storage_and_layout();
            let (gg, gl) = gy.storage_and_layout();
            let (y_sl, gy_sl) = (slice(&yg, yl)?, slice(&gg, gl)?);
            let (stream, func, b) = (&self.stream, &self.accept, &self.b);
            launch_accept(stream, func, nd, x, g, f, count, y_sl, gy_sl, sp, logq, b, half_inv_alpha, key, step)
        }

        /// `bernoulli` over one layer: [u < σ(a + bias)], width `w` per chain.
        fn bernoulli(
            &self,
            a: &Tensor,
            bias: &CudaSlice<f32>,
            key: [u32; 2],
            step: u32,
            purpose: u32,
        ) -> Result<Tensor> {
            let (n, w) = a.dims2()?;
            // SAFETY: fully written by the kernel.
            let mut out = unsafe { self.dev.alloc::<f32>(n * w)? };
            {
                let (guard, layout) = a.storage_and_layout();
                let a_sl = slice(&guard, layout)?;
                let w32 = w as u32;
                let mut args = self.stream.launch_builder(&self.bernoulli);
                args.arg(a_sl).arg(bias).arg(&mut out).arg(&w32).arg(&key[0]).arg(&key[1]).arg(&step).arg(&purpose);
                // SAFETY: argument list of `dlp_rbm_bernoulli`; a and out hold n × w floats.
                unsafe { args.launch(self.cfg()) }.w()?;
            }
            Ok(tensor(out, &self.dev, (n, w)))
        }

        /// Single-site Gibbs: A = XW̃ recomputed from the states (one gemm and two copies).
        fn refresh(&mut self, w: &Tensor) -> Result<()> {
            let (n, d) = (self.n, self.d);
            let Chains::Site { x, a } = &mut self.chains else {
                candle_core::bail!("device RBM: refresh of a sampler without cached products")
            };
            // SAFETY: fully written by the copy.
            let mut xc = unsafe { self.dev.alloc::<f32>(n * d)? };
            self.dev.memcpy_dtod(x, &mut xc)?;
            let product = tensor(xc, &self.dev, (n, d)).matmul(w)?;
            let (guard, layout) = product.storage_and_layout();
            self.dev.memcpy_dtod(slice(&guard, layout)?, a)?;
            Ok(())
        }

        pub(super) fn start(&mut self, w: &Tensor, wt: &Tensor, half_inv_alpha: f32, key: [u32; 2]) -> Result<()> {
            match &self.chains {
                Chains::Gibbs { .. } => Ok(()),
                Chains::Site { .. } => self.refresh(w),
                Chains::Dula { x, .. } => {
                    let (g, _) = self.gradient(x, w, wt)?;
                    if let Chains::Dula { g: old, .. } = &mut self.chains {
                        *old = g;
                    }
                    Ok(())
                }
                Chains::Dmala { x, .. } => {
                    // The accept pass with f(x) = log q = −∞ accepts every chain (module doc).
                    let y = tensor(
                        self.dev.clone_dtoh(x).and_then(|v| self.dev.clone_htod(&v))?,
                        &self.dev,
                        (self.n, self.d),
                    );
                    let (gy, sp) = self.gradient(&y, w, wt)?;
                    let logq = self.dev.clone_htod(&vec![f32::NEG_INFINITY; self.n])?;
                    self.accept(&y, &gy, &sp, &logq, half_inv_alpha, key, INIT_STEP)?;
                    let zeros = self.dev.alloc_zeros::<u32>(self.n)?;
                    if let Chains::Dmala { count, .. } = &mut self.chains {
                        *count = zeros;
                    }
                    Ok(())
                }
            }
        }

        pub(super) fn step(
            &mut self,
            w: &Tensor,
            wt: &Tensor,
            half_inv_alpha: f32,
            key: [u32; 2],
            step: u32,
        ) -> Result<()> {
            match &self.chains {
                Chains::Dmala { x, g, .. } => {
                    let (y, logq) = self.propose(x, g, half_inv_alpha, key, step)?;
                    let (gy, sp) = self.gradient(&y, w, wt)?;
                    self.accept(&y, &gy, &sp, &logq, half_inv_alpha, key, step)
                }
                Chains::Dula { x, g } => {
                    let (y, _) = {
                        let (xg, xl) = x.storage_and_layout();
                        let (gg, gl) = g.storage_and_layout();
                        self.propose(slice(&xg, xl)?, slice(&gg, gl)?, half_inv_alpha, key, step)?
                    };
                    let (gy, _) = self.gradient(&y, w, wt)?;
                    self.chains = Chains::Dula { x: y, g: gy };
                    Ok(())
                }
                Chains::Site { .. } => {
                    if refreshes(step, self.d) {
                        self.refresh(w)?;
                    }
                    let cfg = self.cfg();
                    let (d32, m32) = (self.d as u32, self.m as u32);
                    let (wg, wl) = w.storage_and_layout();
                    let w_sl = slice(&wg, wl)?;
                    let Chains::Site { x, a } = &mut self.chains else { unreachable!("matched above") };
                    let mut args = self.stream.launch_builder(&self.gibbs_site);
                    args.arg(x).arg(a).arg(w_sl).arg(&self.b).arg(&self.c).arg(&d32).arg(&m32);
                    args.arg(&key[0]).arg(&key[1]).arg(&step);
                    // SAFETY: argument list of `dlp_rbm_gibbs_site`; x n × d, a n × M, w d × M
                    // (W̃, contiguous), b d, c M floats.
                    unsafe { args.launch(cfg) }.w()?;
                    Ok(())
                }
                Chains::Gibbs { x } => {
                    let a = x.matmul(w)?;
                    let h = self.bernoulli(&a, &self.c, key, step, PURPOSE_HIDDEN)?;
                    let v = h.matmul(wt)?;
                    let x = self.bernoulli(&v, &self.b, key, step, PURPOSE_VISIBLE)?;
                    self.chains = Chains::Gibbs { x };
                    Ok(())
                }
            }
        }

        pub(super) fn positions(&self) -> Result<Vec<f32>> {
            match &self.chains {
                Chains::Dmala { x, .. } | Chains::Site { x, .. } => self.dev.clone_dtoh(x),
                Chains::Dula { x, .. } | Chains::Gibbs { x } => x.flatten_all()?.to_vec1::<f32>(),
            }
        }

        pub(super) fn counts(&self) -> Result<Vec<u32>> {
            match &self.chains {
                Chains::Dmala { count, .. } => self.dev.clone_dtoh(count),
                _ => candle_core::bail!("device RBM: only DMALA keeps accepted counts"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::TargetExt;
    use dlp_core::{DomainKind, Target};
    use dlp_samplers::dlp::DlpProposal;
    use rand::{RngExt, SeedableRng};

    fn random_rbm(domain: DomainKind, d: usize, m: usize, seed: u64) -> Rbm {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut draw = |n: usize, s: f64| (0..n).map(|_| s * (rng.random::<f64>() * 2.0 - 1.0)).collect::<Vec<_>>();
        let (w, b, c) = (draw(d * m, 0.6), draw(d, 1.0), draw(m, 1.0));
        Rbm::new(domain, d, m, w, b, c).unwrap()
    }

    /// The kernels' summation order adds the same numbers as a plain sum: agreement to f32
    /// rounding of a sum of 1,000 terms of size ≤ 1 (|error| ≤ ~1000 · 2⁻²⁴ in the worst case).
    #[test]
    fn block_sum_is_a_sum() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let v: Vec<f32> = (0..1000).map(|_| rng.random::<f32>() - 0.5).collect();
        let mut s = BlockSum::new();
        for (i, &x) in v.iter().enumerate() {
            s.add(i, x);
        }
        let exact: f64 = v.iter().map(|&x| x as f64).sum();
        assert!((s.total() as f64 - exact).abs() < 1e-4, "{} vs {exact}", s.total());
    }

    /// Checks one DMALA step of `n` chains from `x0` on `rbm` against f64 references computed
    /// from `dlp_models::Rbm`'s own f and ∇f and the host DLP proposal of `dlp-samplers`: f(x)
    /// and ∇f(x) from the start-up pass, the flips of the proposal (each decided by the f64
    /// flip probability, except uniforms within 1e−5 of it), log q(y|x), f(y) and the MH log
    /// ratio, each to `tol` absolute.
    fn check_one_step(rbm: &Rbm, alpha: f64, x0: &[u32], tol: f64) {
        let (d, m) = (rbm.d(), rbm.m());
        let n = x0.len() / d;
        let chains = DeviceRbm::new(rbm, RbmSampler::Dmala { alpha }, x0, 5, &Device::Cpu).unwrap();
        let st = match &chains.state {
            State::Cpu(st) => st,
            #[allow(unreachable_patterns)]
            _ => panic!("a CPU state"),
        };
        let k = &chains.k;
        // The spin fold drops the constant −Σ b_i (module doc).
        let shift: f64 = if rbm.is_spin() { -rbm.b().iter().sum::<f64>() } else { 0.0 };
        let (mut f, mut g) = (vec![0.0; n], vec![0.0; n * d]);
        rbm.log_density_grad_batch(x0, &mut f, &mut g).unwrap();
        let proposal = DlpProposal::new(alpha, None).unwrap();
        let space = rbm.space().clone();
        let (mut logits, mut lognorm) = (vec![0.0; d], vec![0.0; d]);
        let mut checked_flips = 0;
        for j in 0..n {
            let row = j * d..(j + 1) * d;
            let (x, xf) = (&x0[row.clone()], &st.x[row.clone()]);
            assert!((st.f[j] as f64 + shift - f[j]).abs() < tol, "f(x): {} vs {}", st.f[j], f[j]);
            for i in 0..d {
                let gi = st.g[j * d + i] + k.b[i];
                assert!((gi as f64 - g[j * d + i]).abs() < tol, "∇f_{i}: {gi} vs {}", g[j * d + i]);
            }
            // The proposal, drawn by the twin of the propose kernel.
            let mut yf = vec![0f32; d];
            let logq = propose_row(xf, &st.g[row.clone()], &k.b, k.half_inv_alpha, k.key, j as u32, 0, &mut yf);
            let y: Vec<u32> = yf.iter().map(|&v| v as u32).collect();
            let log_z = proposal.logits(&space, x, &g[row.clone()], &mut logits, &mut lognorm);
            for i in 0..d {
                let word = block(k.key, j as u32, 0, PURPOSE_FLIP, (i / 4) as u32)[i % 4];
                let (u, p) = ((word >> 8) as f64 / 16_777_216.0, dlp_core::math::sigmoid(logits[i]));
                if (u - p).abs() > 1e-5 {
                    assert_eq!(y[i] != x[i], u < p, "chain {j} site {i}: u {u} p {p}");
                    checked_flips += 1;
                }
            }
            let logq_ref = proposal.log_prob(&space, x, &y, &logits, log_z);
            assert!((logq as f64 - logq_ref).abs() < tol, "log q(y|x): {logq} vs {logq_ref}");
            // The MH log ratio of the accept kernel's twin.
            let (gy, sp) = cpu_gradient(&yf, 1, d, m, &k.w, &k.wt, &k.c).unwrap();
            let (fy, ratio) = mh_log_ratio_row(xf, &yf, &gy, sp[0], st.f[j], logq, &k.b, k.half_inv_alpha);
            let (mut fy_ref, mut gy_ref) = ([0.0], vec![0.0; d]);
            rbm.log_density_grad_batch(&y, &mut fy_ref, &mut gy_ref).unwrap();
            let (mut logits_y, mut lognorm_y) = (vec![0.0; d], vec![0.0; d]);
            let log_z_y = proposal.logits(&space, &y, &gy_ref, &mut logits_y, &mut lognorm_y);
            let ratio_ref = fy_ref[0] - f[j] + proposal.log_prob(&space, &y, x, &logits_y, log_z_y) - logq_ref;
            assert!((fy as f64 + shift - fy_ref[0]).abs() < tol, "f(y): {fy} vs {}", fy_ref[0]);
            assert!((ratio as f64 - ratio_ref).abs() < tol, "log A: {ratio} vs {ratio_ref}");
            assert!(y != x, "chain {j}: the proposal flipped nothing, the ratio check is vacuous");
        }
        assert!(checked_flips > n * d * 9 / 10, "{checked_flips} flips checked");
    }

    /// Small RBMs, binary and spin: f32 tolerance 1e−4 on quantities of size ≲ 30.
    #[test]
    fn one_step_numbers_match_an_f64_reference() {
        for (domain, seed) in [(DomainKind::Binary, 1u64), (DomainKind::Spin, 2)] {
            let (d, m, n) = (37, 11, 6);
            let rbm = random_rbm(domain, d, m, seed);
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed + 10);
            let x0: Vec<u32> = (0..n * d).map(|_| rng.random_range(0..2u32)).collect();
            check_one_step(&rbm, 0.4, &x0, 1e-4);
        }
    }

    /// At the benchmark's size (784 × 500, W ~ N(0, 0.05), b, c ~ N(0, 1)) f is ~10³, where
    /// one f32 ulp is 6e−5: f, log q and the log ratio agree with f64 to 1e−3 (measured: the
    /// log ratio errs by ≤ 1.2e−4, f by ≤ 7e−5, at α = 0.2 and 1).
    #[test]
    fn f32_error_at_the_benchmark_size() {
        let (d, m, n) = (784, 500, 3);
        let mut rng = rand::rngs::StdRng::seed_from_u64(0);
        let mut normal = |k: usize, sd: f64| {
            (0..k).map(|_| sd * rng.sample::<f64, _>(rand_distr::StandardNormal)).collect::<Vec<_>>()
        };
        let (w, b, c) = (normal(d * m, 0.05f64.sqrt()), normal(d, 1.0), normal(m, 1.0));
        let rbm = Rbm::new(DomainKind::Binary, d, m, w, b, c).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let x0: Vec<u32> = (0..n * d).map(|_| rng.random_range(0..2u32)).collect();
        for alpha in [0.2, 1.0] {
            check_one_step(&rbm, alpha, &x0, 1e-3);
        }
    }

    /// The twin of the Bernoulli kernel draws each unit with its f32 probability: on random
    /// pre-activations, out_i = [u_i < σ(a_i + bias_i)] with σ in f64 (near ties excepted).
    #[test]
    fn bernoulli_draws_follow_their_probabilities() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let w = 203;
        let a: Vec<f32> = (0..w).map(|_| rng.random::<f32>() * 16.0 - 8.0).collect();
        let bias: Vec<f32> = (0..w).map(|_| rng.random::<f32>() - 0.5).collect();
        let key = key_of_seed(9);
        let mut out = vec![0f32; w];
        bernoulli_row(&a, &bias, key, 3, 7, PURPOSE_VISIBLE, &mut out);
        let mut checked = 0;
        for i in 0..w {
            let word = philox4x32_10(counter(3, 7, PURPOSE_VISIBLE, (i / 4) as u32), key)[i % 4];
            let u = (word >> 8) as f64 / 16_777_216.0;
            let p = dlp_core::math::sigmoid((a[i] + bias[i]) as f64);
            if (u - p).abs() > 1e-5 {
                assert_eq!(out[i] == 1.0, u < p, "unit {i}");
                checked += 1;
            }
        }
        assert!(checked > w * 9 / 10);
    }
}
