//! [`DeviceDlp`]: DULA and DMALA on any binary tensor target whose f and ∇f a candle graph
//! computes on the device ([`DeviceEnergy`]: [`TensorRbm`](dlp_tensor::TensorRbm),
//! [`TensorBnn`](dlp_tensor::TensorBnn), [`ResNetEbm`](dlp_tensor::ebm::ResNetEbm)), with the chains,
//! their caches and their random numbers kept on a candle [`Device`] (a CUDA GPU with the
//! `cuda` feature; on the CPU the same algorithm runs through each kernel's Rust twin).
//!
//! **Per step** (n chains, d bits): the model's graph is the only non-fused work.
//!
//! | sampler | launches per step |
//! |---|---|
//! | `dmala` | propose → [f, ∇f of Y: the model's forward and backward] → accept: **2 + the graph's** |
//! | `dula`  | propose → [f, ∇f of Y]: **1 + the graph's** |
//!
//! * `propose` is `dlp_rbm_propose` of `kernels/rbm.cu`, unchanged, with a zero bias: per site
//!   the flip logit ℓ = ½ g (1 − 2x) − 1/(2α) from the cached g = ∇f(x), flip iff u < σ(ℓ);
//!   it writes Y and per chain log q(y|x) = Σ_{flipped} ℓ − Σ_i softplus(ℓ).
//! * [`DeviceEnergy::energy_grad`] of Y: f(y) (n) and G(y) = ∇f(y) (n × d), f32, by the
//!   model's own candle graph and autograd (for the RBM two products and ~40 elementwise
//!   ops; for the ResNet its convolutions).
//! * `accept` (DMALA) is `dlp_rbm_accept`, unchanged, with a zero bias and f(y) in the place
//!   of the RBM's Σ softplus: it computes the reverse logits from G(y), log q(x|y), the log
//!   ratio A = (f(y) − f(x)) + (log q(x|y) − log q(y|x)), accepts iff ln u < A, and overwrites
//!   the accepted rows of X, G and f(x) in place and counts them. With the zero bias the RBM
//!   kernels compute exactly the generic step (g + 0 = g and 0 + f(y) = f(y) in f32), so no
//!   second copy of their maths is kept: the kernels, their launches and their CPU twins are
//!   those of [`crate::device_rbm`].
//! * DULA takes Y and G(y) as the new X and G (no accept launch).
//!
//! State between steps, all on the device: X (n × d, f32 bits), G = ∇f(X) (n × d), for
//! DMALA also f(X) (n) and the accepted counts (n, u32); the step counter lives on the host.
//! Nothing crosses to the host during a step: the model receives the proposal as a device
//! tensor and returns device tensors (checked each step: shape, dtype F32, device).
//!
//! **Random numbers** are [`crate::device_rbm`]'s: chain j of a run seeded s draws from
//! Philox4x32-10 keyed by [`key_of_seed`]`(s)` with counter `[index, purpose, step, j]`,
//! site i from word i mod 4 of block i / 4 of [`PURPOSE_FLIP`], DMALA's MH uniform from
//! block 0 of [`PURPOSE_MH`]. So `DeviceDlp` on a [`TensorRbm`](dlp_tensor::TensorRbm) draws the
//! proposals of [`DeviceRbm`](crate::device_rbm::DeviceRbm) on the same RBM from the same
//! streams; its f and ∇f come from candle's autograd instead of the RBM's folded products
//! and differ from them by f32 rounding, so the two paths agree except at a near tie (a
//! uniform within ~10⁻⁶ of its probability; tested on the CPU, where they agreed on every
//! chain and step tried). A chain's numbers depend on (seed, j) only; its path too, as long
//! as the model evaluates each row independently of the others (the three models here do).
//!
//! **Reproducibility.** A GPU run is reproducible run to run for a seed as far as the model's
//! graph is deterministic on that GPU (the two kernels are; cuBLAS is for fixed shapes on one
//! GPU; a graph that accumulated with atomics would not be). It is *not* bit-identical to the
//! CPU twin: the graph and CUDA's `expf`/`log1pf`
//! round differently, so a flip or MH test within ~10⁻⁶ of its threshold can go either way,
//! after which the paths separate (they agree in law). f is f32: on a model with f ≈ 10³ the
//! log ratio carries an error of ~10⁻⁴ (see [`crate::device_rbm`]).

use crate::device_chains::{DeviceChains, accepted_counts, bits_of};
use crate::device_rbm::{chain_count, cpu_accept, cpu_propose, half_inv_step_size};
use crate::philox::key_of_seed;
use candle_core::{DType, Device, Tensor};
use dlp_tensor::{DeviceEnergy, Error, build_error, device_name};
use std::sync::Arc;

pub use crate::device_rbm::{PURPOSE_FLIP, PURPOSE_MH};

/// Which sampler a [`DeviceDlp`] runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DlpKind {
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
}

/// DULA or DMALA chains on a [`DeviceEnergy`], living on its device (see the module doc).
pub struct DeviceDlp {
    energy: Arc<dyn DeviceEnergy>,
    kind: DlpKind,
    n: usize,
    d: usize,
    key: [u32; 2],
    /// 1/(2α) in f32 (0 for α = +∞).
    half_inv_alpha: f32,
    steps: u64,
    state: State,
}

enum State {
    Cpu(CpuState),
    /// Boxed: the CUDA state is large and the CPU build should not pay for it.
    #[cfg(feature = "cuda")]
    Cuda(Box<gpu::GpuState>),
}

/// The CPU twin's state, as on the device: X, G = ∇f(X), f(X) (DMALA) and the counts.
struct CpuState {
    x: Vec<f32>,
    g: Vec<f32>,
    f: Vec<f32>,
    count: Vec<u32>,
    /// The zero bias the RBM kernels' twins read.
    zeros: Vec<f32>,
}

/// Why the outputs `f`, `g` of `energy_grad` on n × d states do not fit, if they do not:
/// f32 tensors of shapes (n) and (n, d) on the energy's device are needed (a model that breaks
/// this would corrupt the in-place kernels).
fn misfit(energy: &dyn DeviceEnergy, n: usize, d: usize, f: &Tensor, g: &Tensor) -> Option<String> {
    let dev = energy.device();
    [("f", f, &[n][..]), ("∇f", g, &[n, d][..])].into_iter().find_map(|(name, t, shape)| {
        (t.dims() != shape || t.dtype() != DType::F32 || !t.device().same_device(dev)).then(|| {
            format!(
                "the model's energy_grad returned {name} of shape {:?}, {:?} on {}; expected {shape:?}, F32 on {}",
                t.dims(),
                t.dtype(),
                device_name(t.device()),
                device_name(dev)
            )
        })
    })
}

/// `energy.energy_grad(x)`, its outputs checked by [`misfit`] and detached.
fn checked_energy_grad(energy: &dyn DeviceEnergy, x: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
    let (n, d) = x.dims2()?;
    let (f, g) = energy.energy_grad(x)?;
    if let Some(why) = misfit(energy, n, d, &f, &g) {
        candle_core::bail!("{why}");
    }
    Ok((f.detach(), g.detach()))
}

impl DeviceDlp {
    /// Chains of `kind` on `energy` started at `x0` (n × d bits, n ≥ 1) on the model's device,
    /// with the Philox streams of `seed`. Errors: [`Error::Param`] for α ≤ 0 or NaN, a model
    /// whose space is not binary or spin, an `x0` whose length is not a positive multiple of d
    /// or with a value > 1, a model on a device other than the CPU or CUDA, or one whose
    /// `energy_grad` returns tensors of the wrong shape, dtype or device; [`Error::Device`]
    /// when candle fails to upload or evaluate.
    pub fn new(energy: Arc<dyn DeviceEnergy>, kind: DlpKind, x0: &[u32], seed: u64) -> Result<Self, Error> {
        let (DlpKind::Dula { alpha } | DlpKind::Dmala { alpha }) = kind;
        let half_inv_alpha = half_inv_step_size(alpha)?;
        let space = energy.space();
        let d = space.d;
        if space.values.len() != 2 || space.grad_len() != d || d == 0 {
            return Err(Error::Param(format!(
                "the device DLP samplers need a binary (or spin) target with d ≥ 1, found a {:?} space with {} values per site and d = {d}",
                space.kind,
                space.values.len()
            )));
        }
        let n = chain_count(x0, d)?;
        let device = energy.device().clone();
        let x0f: Vec<f32> = x0.iter().map(|&v| v as f32).collect();
        // The start-up evaluation: a model whose outputs do not fit is a parameter error, a
        // failing device a device error.
        let start = |x: &Tensor| {
            let (f, g) = energy.energy_grad(x).map_err(|e| build_error(&device, e))?;
            match misfit(energy.as_ref(), n, d, &f, &g) {
                Some(why) => Err(Error::Param(why)),
                None => Ok((f.detach(), g.detach())),
            }
        };
        let state = match &device {
            Device::Cpu => {
                let x = Tensor::from_slice(&x0f, (n, d), &device).map_err(|e| build_error(&device, e))?;
                let (f, g) = start(&x)?;
                let host =
                    |t: Tensor| t.flatten_all().and_then(|t| t.to_vec1::<f32>()).map_err(|e| build_error(&device, e));
                State::Cpu(CpuState { x: x0f, g: host(g)?, f: host(f)?, count: vec![0; n], zeros: vec![0.0; d] })
            }
            #[cfg(feature = "cuda")]
            Device::Cuda(dev) => State::Cuda(Box::new(gpu::GpuState::new(dev, kind, &x0f, n, d, start)?)),
            #[allow(unreachable_patterns)]
            other => {
                return Err(Error::Param(format!(
                    "the model is on device {}, which the device DLP samplers do not support (use cpu or cuda:N)",
                    device_name(other)
                )));
            }
        };
        Ok(DeviceDlp { energy, kind, n, d, key: key_of_seed(seed), half_inv_alpha, steps: 0, state })
    }

    /// The sampler these chains run.
    pub fn kind(&self) -> DlpKind {
        self.kind
    }

    /// The device the chains live on (the model's).
    pub fn device(&self) -> &Device {
        self.energy.device()
    }

    /// The model the chains sample.
    pub fn energy(&self) -> &Arc<dyn DeviceEnergy> {
        &self.energy
    }
}

impl CpuState {
    /// One step of every chain of the CPU twin.
    fn step(
        &mut self,
        energy: &dyn DeviceEnergy,
        kind: DlpKind,
        hia: f32,
        key: [u32; 2],
        step: u32,
    ) -> candle_core::Result<()> {
        let (n, d) = (self.count.len(), self.zeros.len());
        let (y, logq) = cpu_propose(&self.x, &self.g, &self.zeros, hia, key, step);
        let (fy, gy) = checked_energy_grad(energy, &Tensor::from_slice(&y, (n, d), &Device::Cpu)?)?;
        let (fy, gy) = (fy.to_vec1::<f32>()?, gy.flatten_all()?.to_vec1::<f32>()?);
        if let DlpKind::Dula { .. } = kind {
            self.x = y;
            self.g = gy;
            self.f = fy;
            return Ok(());
        }
        // dlp_rbm_accept with a zero bias and f(y) in the place of Σ softplus: its
        // f(y) = Σ 0·y + fy[j] = fy[j].
        let (x, g, f, count) = (&mut self.x, &mut self.g, &mut self.f, &mut self.count);
        cpu_accept(x, g, f, count, &y, &gy, &fy, &logq, &self.zeros, hia, key, step);
        Ok(())
    }
}

impl DeviceChains for DeviceDlp {
    fn name(&self) -> String {
        match self.kind {
            DlpKind::Dula { .. } => "dula".into(),
            DlpKind::Dmala { .. } => "dmala".into(),
        }
    }

    fn n_chains(&self) -> usize {
        self.n
    }

    fn dim(&self) -> usize {
        self.d
    }

    fn step(&mut self) -> candle_core::Result<()> {
        let step = self.steps as u32;
        match &mut self.state {
            State::Cpu(st) => st.step(self.energy.as_ref(), self.kind, self.half_inv_alpha, self.key, step)?,
            #[cfg(feature = "cuda")]
            State::Cuda(st) => st.step(self.energy.as_ref(), self.half_inv_alpha, self.key, step)?,
        }
        self.steps += 1;
        Ok(())
    }

    fn sync(&self) -> candle_core::Result<()> {
        self.energy.device().synchronize()
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
        accepted_counts(matches!(self.kind, DlpKind::Dmala { .. }), self.steps, self.n, || match &self.state {
            State::Cpu(st) => Ok(st.count.clone()),
            #[cfg(feature = "cuda")]
            State::Cuda(st) => st.counts(),
        })
    }

    fn steps_taken(&self) -> u64 {
        self.steps
    }
}

#[cfg(feature = "cuda")]
mod gpu {
    //! The CUDA side: `dlp_rbm_propose` and `dlp_rbm_accept` of `kernels/rbm.cu` (zero bias)
    //! on candle's stream around the model's graph, launched by the RBM samplers' own
    //! wrappers (`device_rbm::gpu::launch_propose`, `launch_accept`). Fresh per-step buffers (Y, log q) are
    //! allocated on the stream and wrapped as tensors for the model; kernels only write
    //! buffers they own (`&mut CudaSlice`) or fresh ones.

    use super::{DeviceEnergy, DlpKind, checked_energy_grad};
    use crate::device_rbm::gpu::{MODULE, launch_accept, launch_propose};
    use crate::kernels::{cuda_func, cuda_slice as slice, cuda_tensor as tensor};
    use candle_core::cuda_backend::CudaDevice;
    use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaSlice, CudaStream};
    use candle_core::{Result, Tensor};
    use dlp_tensor::Error;
    use std::sync::Arc;

    // One value per run, replaced in place at most once per step: the size difference of the
    // variants costs nothing worth a box.
    #[allow(clippy::large_enum_variant)]
    enum Chains {
        /// DMALA: X, G, f(x), counts, updated in place by the accept kernel.
        Dmala { x: CudaSlice<f32>, g: CudaSlice<f32>, f: CudaSlice<f32>, count: CudaSlice<u32> },
        /// DULA: X and G, replaced every step by the proposal and its gradient.
        Dula { x: Tensor, g: Tensor },
    }

    pub(super) struct GpuState {
        dev: CudaDevice,
        stream: Arc<CudaStream>,
        n: usize,
        d: usize,
        zeros: CudaSlice<f32>,
        propose: CudaFunction,
        accept: CudaFunction,
        chains: Chains,
    }

    /// `t` itself when its storage can be handed to a kernel as is, else a packed copy (the
    /// model's outputs may be views).
    fn packed(t: Tensor) -> Result<Tensor> {
        if t.is_contiguous() && t.layout().start_offset() == 0 { Ok(t) } else { t.force_contiguous() }
    }

    /// A device copy of a packed f32 tensor's buffer.
    fn copy_of(dev: &CudaDevice, t: &Tensor) -> Result<CudaSlice<f32>> {
        let t = packed(t.clone())?;
        let (guard, layout) = t.storage_and_layout();
        let src = slice(&guard, layout)?;
        // SAFETY: fully written by the copy.
        let mut dst = unsafe { dev.alloc::<f32>(t.elem_count())? };
        dev.memcpy_dtod(src, &mut dst)?;
        Ok(dst)
    }

    impl GpuState {
        pub(super) fn new(
            dev: &CudaDevice,
            kind: DlpKind,
            x0: &[f32],
            n: usize,
            d: usize,
            start: impl Fn(&Tensor) -> std::result::Result<(Tensor, Tensor), Error>,
        ) -> std::result::Result<Self, Error> {
            let be = |e| dlp_tensor::build_error(&candle_core::Device::Cuda(dev.clone()), e);
            let ptx = crate::dlp_ptx!("rbm");
            let func = |name: &str| cuda_func(dev, MODULE, ptx, name).map_err(be);
            let x = tensor(dev.clone_htod(x0).map_err(be)?, dev, (n, d));
            let (f, g) = start(&x)?;
            let chains = match kind {
                DlpKind::Dmala { .. } => Chains::Dmala {
                    x: dev.clone_htod(x0).map_err(be)?,
                    g: copy_of(dev, &g).map_err(be)?,
                    f: copy_of(dev, &f).map_err(be)?,
                    count: dev.alloc_zeros::<u32>(n).map_err(be)?,
                },
                DlpKind::Dula { .. } => Chains::Dula { x, g: packed(g).map_err(be)? },
            };
            Ok(GpuState {
                dev: dev.clone(),
                stream: dev.cuda_stream(),
                n,
                d,
                zeros: dev.alloc_zeros::<f32>(d).map_err(be)?,
                propose: func("dlp_rbm_propose")?,
                accept: func("dlp_rbm_accept")?,
                chains,
            })
        }

        /// `propose` from rows x with gradient g (zero bias): the proposal Y and log q(y|x).
        fn propose(
            &self,
            x: &CudaSlice<f32>,
            g: &CudaSlice<f32>,
            half_inv_alpha: f32,
            key: [u32; 2],
            step: u32,
        ) -> Result<(Tensor, CudaSlice<f32>)> {
            let nd = (self.n, self.d);
            launch_propose(&self.dev, &self.stream, &self.propose, nd, x, g, &self.zeros, half_inv_alpha, key, step)
        }

        pub(super) fn step(
            &mut self,
            energy: &dyn DeviceEnergy,
            half_inv_alpha: f32,
            key: [u32; 2],
            step: u32,
        ) -> Result<()> {
            match &self.chains {
                Chains::Dula { x, g } => {
                    let (y, _) = {
                        let (xg, xl) = x.storage_and_layout();
                        let (gg, gl) = g.storage_and_layout();
                        self.propose(slice(&xg, xl)?, slice(&gg, gl)?, half_inv_alpha, key, step)?
                    };
                    let (_, gy) = checked_energy_grad(energy, &y)?;
                    self.chains = Chains::Dula { x: y, g: packed(gy)? };
                    Ok(())
                }
                Chains::Dmala { x, g, .. } => {
                    let (y, logq) = self.propose(x, g, half_inv_alpha, key, step)?;
                    let (fy, gy) = checked_energy_grad(energy, &y)?;
                    let (fy, gy) = (packed(fy)?, packed(gy)?);
                    let nd = (self.n, self.d);
                    let (yg, yl) = y.storage_and_layout();
                    let (gg, gl) = gy.storage_and_layout();
                    let (fg, fl) = fy.storage_and_layout();
                    let (y_sl, gy_sl, fy_sl) = (slice(&yg, yl)?, slice(&gg, gl)?, slice(&fg, fl)?);
                    let Chains::Dmala { x, g, f, count } = &mut self.chains else { unreachable!("matched above") };
                    let (stream, func, zeros, hia) = (&self.stream, &self.accept, &self.zeros, half_inv_alpha);
                    // f(y) goes where the RBM kernel takes Σ softplus: with the zero bias its
                    // f(y) = Σ 0·y + sp is f(y) exactly.
                    launch_accept(stream, func, nd, x, g, f, count, y_sl, gy_sl, fy_sl, &logq, zeros, hia, key, step)
                }
            }
        }

        pub(super) fn positions(&self) -> Result<Vec<f32>> {
            match &self.chains {
                Chains::Dmala { x, .. } => self.dev.clone_dtoh(x),
                Chains::Dula { x, .. } => x.flatten_all()?.to_vec1::<f32>(),
            }
        }

        pub(super) fn counts(&self) -> Result<Vec<u32>> {
            match &self.chains {
                Chains::Dmala { count, .. } => self.dev.clone_dtoh(count),
                Chains::Dula { .. } => candle_core::bail!("device DLP: only DMALA keeps accepted counts"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device_rbm::{mh_log_ratio_row, propose_row};
    use dlp_core::TargetExt;
    use dlp_core::{DomainKind, Target};
    use dlp_models::{BnnModel, Rbm};
    use dlp_samplers::dlp::DlpProposal;
    use dlp_tensor::{TensorBnn, TensorRbm};
    use rand::{RngExt, SeedableRng};

    /// One DMALA step of every chain from `x0` on `energy`, against f64 references from the
    /// CPU model `target`'s own f and ∇f and the host DLP proposal of dlp-samplers: the cached
    /// f(x) and ∇f(x), every site's flip logit (its probability is σ of it), log q(y|x), f(y)
    /// and the MH log ratio, each to `tol` absolute.
    fn check_one_step(energy: Arc<dyn DeviceEnergy>, target: &dyn Target, alpha: f64, x0: &[u32], tol: f64) {
        let chains = DeviceDlp::new(energy.clone(), DlpKind::Dmala { alpha }, x0, 5).unwrap();
        let st = match &chains.state {
            State::Cpu(st) => st,
            #[allow(unreachable_patterns)]
            _ => panic!("a CPU state"),
        };
        let (hia, key) = (chains.half_inv_alpha, chains.key);
        let d = target.space().d;
        let n = x0.len() / d;
        let (mut f, mut g) = (vec![0.0; n], vec![0.0; n * d]);
        target.log_density_grad_batch(x0, &mut f, &mut g).unwrap();
        let proposal = DlpProposal::new(alpha, None).unwrap();
        let space = target.space().clone();
        let (mut logits, mut lognorm) = (vec![0.0; d], vec![0.0; d]);
        for j in 0..n {
            let row = j * d..(j + 1) * d;
            let (x, xf, gf) = (&x0[row.clone()], &st.x[row.clone()], &st.g[row.clone()]);
            assert!((st.f[j] as f64 - f[j]).abs() < tol, "f(x): {} vs {}", st.f[j], f[j]);
            let log_z = proposal.logits(&space, x, &g[row.clone()], &mut logits, &mut lognorm);
            for i in 0..d {
                assert!((gf[i] as f64 - g[j * d + i]).abs() < tol, "∇f_{i}: {} vs {}", gf[i], g[j * d + i]);
                // The propose kernel's flip logit from the cached gradient, restated.
                let l = 0.5 * gf[i] * (1.0 - 2.0 * xf[i]) - hia;
                assert!((l as f64 - logits[i]).abs() < tol, "logit {i}: {l} vs {}", logits[i]);
            }
            let mut yf = vec![0f32; d];
            let logq = propose_row(xf, gf, &st.zeros, hia, key, j as u32, 0, &mut yf);
            let y: Vec<u32> = yf.iter().map(|&v| v as u32).collect();
            assert!(y != x, "chain {j}: the proposal flipped nothing, the ratio check is vacuous");
            let logq_ref = proposal.log_prob(&space, x, &y, &logits, log_z);
            assert!((logq as f64 - logq_ref).abs() < tol, "log q(y|x): {logq} vs {logq_ref}");
            let (fy, gy) = energy.energy_grad(&Tensor::from_slice(&yf, (1, d), &Device::Cpu).unwrap()).unwrap();
            let (fy, gy) = (fy.to_vec1::<f32>().unwrap()[0], gy.flatten_all().unwrap().to_vec1::<f32>().unwrap());
            let (fy, ratio) = mh_log_ratio_row(xf, &yf, &gy, fy, st.f[j], logq, &st.zeros, hia);
            let (mut fy_ref, mut gy_ref) = ([0.0], vec![0.0; d]);
            target.log_density_grad_batch(&y, &mut fy_ref, &mut gy_ref).unwrap();
            let (mut logits_y, mut lognorm_y) = (vec![0.0; d], vec![0.0; d]);
            let log_z_y = proposal.logits(&space, &y, &gy_ref, &mut logits_y, &mut lognorm_y);
            let ratio_ref = fy_ref[0] - f[j] + proposal.log_prob(&space, &y, x, &logits_y, log_z_y) - logq_ref;
            assert!((fy as f64 - fy_ref[0]).abs() < tol, "f(y): {fy} vs {}", fy_ref[0]);
            assert!((ratio as f64 - ratio_ref).abs() < tol, "log A: {ratio} vs {ratio_ref}");
        }
    }

    fn bits(len: usize, seed: u64) -> Vec<u32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..len).map(|_| rng.random_range(0..2u32)).collect()
    }

    /// A spin RBM (37 × 11) and a BNN (p = 4, H = 6, d = 37; the f64 CPU model's hand-derived
    /// ∇f against candle's autograd in f32, and in f64 rounded to f32): f32 tolerance 1e−4 on
    /// quantities of size ≲ 30.
    #[test]
    fn one_step_numbers_match_an_f64_reference() {
        let (d, m, n) = (37, 11, 6);
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let mut draw = |k: usize, s: f64| (0..k).map(|_| s * (rng.random::<f64>() * 2.0 - 1.0)).collect::<Vec<_>>();
        let rbm = Rbm::new(DomainKind::Spin, d, m, draw(d * m, 0.6), draw(d, 1.0), draw(m, 1.0)).unwrap();
        let energy = Arc::new(TensorRbm::from_rbm(&rbm, &Device::Cpu).unwrap());
        check_one_step(energy, &rbm, 0.4, &bits(n * d, 12), 1e-4);

        let x: Vec<f64> = draw(23 * 4, 2.0);
        let y: Vec<f64> = draw(23, 1.0).into_iter().map(|v| f64::from(v > 0.0)).collect();
        let bnn = BnnModel::new(37, 4, 6, 20.0, x, y).unwrap();
        for dtype in [DType::F32, DType::F64] {
            let energy = Arc::new(TensorBnn::from_bnn(&bnn, &Device::Cpu, dtype).unwrap());
            check_one_step(energy, &bnn, 0.4, &bits(n * 37, 13), 1e-4);
        }
    }
}
