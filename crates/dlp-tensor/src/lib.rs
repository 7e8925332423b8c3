//! dlp-tensor: tensor-backed targets and the layers they are built from. The log-density f and
//! its input gradient ∇f are computed by [candle](https://github.com/huggingface/candle) on a
//! [`Device`] (the CPU by default, a CUDA GPU with the `cuda` cargo feature), for the whole
//! batch of chains in one call.
//!
//! * [`TensorRbm`]: Bernoulli RBM with binary or spin visibles (the convention of
//!   [`dlp_models::Rbm`]; for spin the gradient is with respect to the bit x = (s + 1)/2).
//! * [`TensorPotts`]: Potts model (the convention of [`dlp_models::PottsModel`]: gradient with
//!   respect to the d × K one-hot matrix), couplings held as a dense d × d tensor.
//! * [`TensorBnn`]: the binary Bayesian neural network of [`dlp_models::BnnModel`] (Tables 2
//!   and 4), f32 or f64, all chains in one batched graph, minibatches on the device.
//! * [`ebm`]: the deep ResNet energy-based model on binary images (Table 4).
//! * [`bert`]: a BERT masked language model as an infilling target: checkpoint loading, the
//!   WordPiece vocabulary, the energy of a masked line and its Gibbs sampler.
//! * [`device`]: `"cpu"` or `"cuda:N"` → a candle [`Device`].
//! * [`DeviceEnergy`]: what the device-resident DULA / DMALA of `dlp-device` need of a model
//!   (its f and ∇f as device tensors); [`TensorRbm`], [`TensorBnn`] and
//!   [`ResNetEbm`](ebm::ResNetEbm) provide it.
//!
//! Related crates: `dlp-device` holds the device-resident chains and their CUDA kernels,
//! `dlp-learn` (feature `tensor`) the trainers of these models, `dlp-papers` the models that
//! exist for one paper's reproduction.
//!
//! **Gradients come from candle's autograd**, not from hand-derived formulas: the f32 input
//! tensor (the bits, or the one-hot matrix for Potts) is a [`candle_core::Var`], f is summed
//! over the batch and `backward` gives every row's ∇f (rows do not interact, so the sum's
//! gradient is each row's own). This is the path that BERT, deep-EBM and BNN targets take.
//! Tensors are f32; results are converted to f64 on the way out, so they agree with the f64
//! CPU models to about 1e-6 relative, not bit for bit.
//!
//! **Fallible oracle.** [`Target::evaluate`](dlp_core::Target::evaluate) is implemented natively:
//! a candle error (out of memory, lost device, a shape error) becomes
//! [`EvalError::Device`] instead of a panic, and
//! [`Batch::Items`] is [`EvalError::NoData`]
//! (these models have no data terms). Every convenience of [`dlp_core::TargetExt`] goes through
//! `evaluate` and returns its error, which samplers pass on, so a failing device stops the run
//! with one line.
//!
//! **Two ways to sample a tensor target.** Through the [`dlp_core::Target`] oracle above, any
//! registered sampler runs unchanged, but each evaluation uploads the `u32` rows and downloads
//! f and ∇f (states live on the host). The device-resident chains of `dlp-device` keep states,
//! caches and random numbers on the device and fuse a step's elementwise work into a few
//! custom kernels.
//!
//! The `cuda` feature is compiled only on request (it needs the CUDA toolkit: `just
//! build-cuda`, `just gpu-bundle`) and is never built or tested in CI; `dlp-device`'s
//! `tests/cuda.rs` holds every check that needs a GPU, these targets' included.

#![warn(missing_docs)]

pub mod bert;
mod bnn;
pub mod ebm;
mod layers;
mod potts;
mod rbm;

pub use bnn::TensorBnn;
pub use candle_core;

pub use candle_core::Device;
/// Moved to dlp-core so that runs without tensors share it; re-exported for the tensor code.
pub use dlp_core::memory::keep_freed_buffers;
pub use potts::TensorPotts;
pub use rbm::TensorRbm;

use candle_core::{DeviceLocation, Tensor};
use dlp_core::{Batch, EvalError, Space};

/// A binary target whose f and ∇f (with respect to the bits) a candle graph computes on a
/// device from a device tensor of states: what `dlp-device`'s `DeviceDlp` needs of a model.
/// Defined here, beside the models that implement it, so that the device chains depend on
/// the targets and not the other way round.
pub trait DeviceEnergy: Send + Sync {
    /// The device the model's parameters live on and its graph runs on.
    fn device(&self) -> &Device;
    /// The state space (binary, or spin with gradients with respect to the bit).
    fn space(&self) -> &Space;
    /// f (n) and ∇f with respect to the bits (n × d), f32 on the device, for the f32 0/1
    /// state matrix `x` (n × d) on the device. Rows must be evaluated independently.
    fn energy_grad(&self, x: &Tensor) -> candle_core::Result<(Tensor, Tensor)>;
}

/// Errors building a tensor target or choosing a device.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum Error {
    /// The device name is neither `cpu` nor `cuda:N`.
    #[error("unknown device {0:?} (use \"cpu\" or \"cuda:N\")")]
    UnknownDevice(String),
    /// A CUDA device was asked of a build without the `cuda` feature.
    #[error(
        "device {0:?} needs the `cuda` feature of dlp-tensor, which this build does not have (rebuild with `--features dlp-tensor/cuda` on a machine with the CUDA toolkit)"
    )]
    CudaNotBuilt(String),
    /// Model parameters that do not fit together.
    #[error("bad parameters: {0}")]
    Param(String),
    /// A checkpoint (config, vocabulary, weights) that cannot be read or does not fit together.
    #[error("bad checkpoint: {0}")]
    Checkpoint(String),
    /// candle failed while the parameters were uploaded or the device was opened.
    #[error("device error on {device}: {message}")]
    Device {
        /// The device, e.g. `cpu` or `cuda:0`.
        device: String,
        /// What candle said.
        message: String,
    },
}

/// Makes candle's own CPU worker pool single-threaded for this process, unless the user set
/// `CANDLE_NUM_THREADS`: for programs whose sampler runner already runs one small graph per
/// chain on each of its threads (`001-bnn`, `table2`/`table4 --device`). candle 0.11 keeps one
/// process-wide pool of `CANDLE_NUM_THREADS − 1` spinning workers (default: one per core)
/// behind a lock, so two chains' elementwise ops queued for it and its workers spun on the
/// cores the chains needed: with it, `001-bnn` (two chains on 2 cores) used 7.0–8.0 s of CPU
/// for 6.7–7.9 s wall, without it 4.8–5.0 s for 4.1–4.3 s, the same numbers to the last digit
/// (elementwise results do not depend on the split). Matrix products keep `RAYON_NUM_THREADS`.
///
/// Call it first thing in `main`, before any thread starts or candle runs: the pool is made
/// at candle's first CPU op and reads the variable then.
pub fn one_candle_thread_per_chain() {
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        // SAFETY: called before the program starts any thread (see above), so no other thread
        // reads or writes the environment concurrently.
        unsafe { std::env::set_var("CANDLE_NUM_THREADS", "1") };
    }
}

/// The device named `name`: `"cpu"`, or `"cuda:N"` (`"cuda"` = `"cuda:0"`) when dlp-tensor is
/// built with the `cuda` feature; otherwise a CUDA name is [`Error::CudaNotBuilt`].
pub fn device(name: &str) -> Result<Device, Error> {
    let name = name.trim();
    if name == "cpu" {
        return Ok(Device::Cpu);
    }
    let ordinal = match name.strip_prefix("cuda") {
        Some("") => 0,
        Some(rest) => rest
            .strip_prefix(':')
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| Error::UnknownDevice(name.to_string()))?,
        None => return Err(Error::UnknownDevice(name.to_string())),
    };
    cuda_device(name, ordinal)
}

#[cfg(feature = "cuda")]
fn cuda_device(name: &str, ordinal: usize) -> Result<Device, Error> {
    Device::new_cuda(ordinal).map_err(|e| Error::Device { device: name.to_string(), message: candle_message(&e) })
}

#[cfg(not(feature = "cuda"))]
fn cuda_device(name: &str, _ordinal: usize) -> Result<Device, Error> {
    Err(Error::CudaNotBuilt(name.to_string()))
}

/// The name of `device` as [`device`] accepts it (`cpu`, `cuda:0`; `metal:N` for completeness).
pub fn device_name(device: &Device) -> String {
    match device.location() {
        DeviceLocation::Cpu => "cpu".to_string(),
        DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
    }
}

/// What every [`TensorModel`] keeps for the shared plumbing: its state space and its device's
/// name (for error messages).
#[derive(Debug)]
pub struct TensorCommon {
    pub(crate) space: Space,
    pub(crate) device_name: String,
}

impl TensorCommon {
    /// The plumbing of a model on `space` whose tensors live on `device`.
    pub fn new(space: Space, device: &Device) -> Self {
        TensorCommon { space, device_name: device_name(device) }
    }
}

/// What a tensor model writes: its [`TensorCommon`] and one candle graph
/// for f (and ∇f) of a whole batch. [`tensor_target!`](crate::tensor_target) then implements
/// [`dlp_core::Target`] for it (the fallible `evaluate` with its buffer and minibatch checks,
/// the data terms), so every tensor model shares one copy of that plumbing. A macro and not a
/// blanket impl, because `Target` is another crate's trait.
pub trait TensorModel: Send + Sync {
    /// The space and device name the model keeps for this plumbing.
    fn common(&self) -> &TensorCommon;
    /// The state space (named apart from `Target::space` so the two never clash in scope).
    fn model_space(&self) -> &Space {
        &self.common().space
    }
    /// The device's name, for error messages (`cpu`, `cuda:0`).
    fn device_name(&self) -> &str {
        &self.common().device_name
    }
    /// f of the `n = log_density.len()` rows of `xs` (and ∇f into `grad`, `n × grad_len`),
    /// on the full data. Called with `n ≥ 1` and buffers of the right lengths.
    fn evaluate_full(&self, xs: &[u32], log_density: &mut [f64], grad: Option<&mut [f64]>) -> candle_core::Result<()>;
    /// `Some(N)` when f is a sum over N data items and minibatches are allowed
    /// ([`dlp_core::Capabilities::n_data`]); `None` (the default) refuses them with
    /// [`EvalError::NoData`].
    fn data_items(&self) -> Option<usize> {
        None
    }
    /// f̂ (and ∇f̂) on the data items `items` (each `< N`, checked by the caller); called only
    /// when [`Self::data_items`] is `Some`.
    fn evaluate_items(
        &self,
        _xs: &[u32],
        _items: &[usize],
        _log_density: &mut [f64],
        _grad: Option<&mut [f64]>,
    ) -> candle_core::Result<()> {
        Err(candle_core::Error::Msg("this tensor model has no data items".into()))
    }
}

/// [`dlp_core::Target::evaluate`] of a tensor model: checks the buffers, refuses minibatches
/// unless the model has data items ([`EvalError::NoData`]; an item out of range is
/// [`EvalError::BadItem`]) and turns candle errors into [`EvalError::Device`].
pub fn evaluate_model<M: TensorModel + ?Sized>(
    model: &M,
    xs: &[u32],
    batch: Batch<'_>,
    log_density: &mut [f64],
    grad: Option<&mut [f64]>,
) -> Result<(), EvalError> {
    let items = match (batch, model.data_items()) {
        (Batch::Full, _) => None,
        (Batch::Items(_), None) => return Err(EvalError::NoData),
        (Batch::Items(items), Some(n_data)) => match items.iter().find(|&&i| i >= n_data) {
            Some(&index) => return Err(EvalError::BadItem { index, n_data }),
            None => Some(items),
        },
    };
    let (n, d, gl) = (log_density.len(), model.model_space().d, model.model_space().grad_len());
    assert_eq!(xs.len(), n * d, "xs must hold n × d = {n} × {d} indices");
    if let Some(g) = &grad {
        assert_eq!(g.len(), n * gl, "grad must hold n × grad_len = {n} × {gl} entries");
    }
    if n == 0 {
        return Ok(());
    }
    match items {
        None => model.evaluate_full(xs, log_density, grad),
        Some(items) => model.evaluate_items(xs, items, log_density, grad),
    }
    .map_err(|e| device_error(model.device_name(), e))
}

/// Implements [`dlp_core::Target`] for a [`TensorModel`].
#[macro_export]
macro_rules! tensor_target {
    ($t:ty) => {
        impl dlp_core::Target for $t {
            fn space(&self) -> &dlp_core::Space {
                $crate::TensorModel::model_space(self)
            }

            /// f (and ∇f) of the whole batch in one candle graph; candle errors are
            /// `EvalError::Device`, minibatches `EvalError::NoData` unless the model has data.
            fn evaluate(
                &self,
                xs: &[u32],
                batch: dlp_core::Batch<'_>,
                log_density: &mut [f64],
                grad: Option<&mut [f64]>,
            ) -> Result<(), dlp_core::EvalError> {
                $crate::evaluate_model(self, xs, batch, log_density, grad)
            }

            fn capabilities(&self) -> dlp_core::Capabilities<'_> {
                dlp_core::Capabilities { n_data: $crate::TensorModel::data_items(self), ..Default::default() }
            }
        }
    };
}

/// Turns a candle error on `device` into the oracle's error.
pub(crate) fn device_error(device: &str, e: candle_core::Error) -> EvalError {
    EvalError::Device { device: device.to_string(), message: candle_message(&e) }
}

/// Turns a candle error on `device` into a construction error (also for the device chains
/// and the paper models built on these targets).
pub fn build_error(device: &Device, e: candle_core::Error) -> Error {
    Error::Device { device: device_name(device), message: candle_message(&e) }
}

/// candle's message on one line, without the backtrace candle appends when `RUST_BACKTRACE`
/// is set (the runner reports the error as one line). Public for the crates that report candle
/// errors of their own (trainers, device chains, paper models).
pub fn candle_message(e: &candle_core::Error) -> String {
    use candle_core::Error as E;
    let msg = match e {
        E::WithBacktrace { inner, .. } => return candle_message(inner),
        E::Context { inner, context } => format!("{context}: {}", candle_message(inner)),
        E::WithPath { inner, path } => format!("{}: {}", path.display(), candle_message(inner)),
        other => other.to_string(),
    };
    // One line: the lines joined, and any other control character escaped (serde quotes a
    // damaged file's bytes, e.g. a DEL in a safetensors dtype, into its message raw).
    let joined = msg.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ");
    joined.chars().map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() }).collect()
}

/// Copies a float tensor's values (any shape, row-major) into `out` as f64, checking the count
/// (through f64, which is exact for f32 and keeps f64 models' digits).
pub(crate) fn copy_out(t: &candle_core::Tensor, out: &mut [f64]) -> candle_core::Result<()> {
    let v = t.flatten_all()?.to_dtype(candle_core::DType::F64)?.to_vec1::<f64>()?;
    if v.len() != out.len() {
        return Err(candle_core::Error::Msg(format!(
            "the model produced {} values where {} were expected",
            v.len(),
            out.len()
        )));
    }
    out.copy_from_slice(&v);
    Ok(())
}

/// Backpropagates Σ_rows f from `f` and returns the gradient of the input variable `x`;
/// an error when no gradient reaches it (an op on the way has no backward pass, as candle-nn's
/// fused LayerNorm).
pub(crate) fn input_grad(f: &candle_core::Tensor, x: &candle_core::Var) -> candle_core::Result<candle_core::Tensor> {
    let grads = f.sum_all()?.backward()?;
    grads.get(x.as_tensor()).cloned().ok_or_else(|| {
        candle_core::Error::Msg("no gradient reached the input (an op on the way has no backward pass)".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_parse() {
        assert!(matches!(device("cpu"), Ok(Device::Cpu)));
        assert!(matches!(device(" cpu "), Ok(Device::Cpu)));
        assert_eq!(device_name(&Device::Cpu), "cpu");
        for bad in ["tpu", "cuda:", "cuda:x", "cuda0", "cpu:0", ""] {
            assert_eq!(device(bad).err(), Some(Error::UnknownDevice(bad.trim().to_string())), "{bad:?}");
        }
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_without_the_feature_is_a_clear_error() {
        for name in ["cuda", "cuda:0", "cuda:3"] {
            let e = device(name).expect_err("no cuda feature");
            assert_eq!(e, Error::CudaNotBuilt(name.to_string()));
            assert!(e.to_string().contains("`cuda` feature"), "{e}");
        }
    }
}
