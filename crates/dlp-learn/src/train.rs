//! What the two tensor trainers of this crate share ([`crate::bert_train`]: the stand-in MLM;
//! [`crate::ebm_train`]: the deep EBM by PCD): their error type, one Adam(W) update whose
//! moments the caller owns, and the atomic safetensors write of their checkpoints.
//!
//! [`Adam`] is the one Adam of the workspace on tensors (the trainers here and paper 003's
//! `dlp_papers::mixture` models); parameters held as `f64` slices use `dlp_core::optim::Adam`, the
//! same update in the same operation order except that the learning rate multiplies the step
//! last here (`(m̂ / (√v̂ + ε)) · lr`, first there), so neither can serve the other's seeded
//! results bit for bit. It is written out (a few tensor lines) rather than `candle_nn::AdamW`
//! because a checkpoint must hold the moment estimates, which candle-nn keeps private, and
//! because AdamW multiplies by 1/(1 − βᵗ) where this divides by (1 − βᵗ) (another last bit of
//! every published seeded run); with the moments saved and every step's randomness derived
//! from the step number, a resumed run equals an uninterrupted one (each trainer tests it).

use candle_core::{Device, Tensor, Var};
use std::collections::HashMap;
use std::path::Path;

/// Errors of training and checkpoints, each one line.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A bad setting or input (names the value).
    #[error("{0}")]
    Param(String),
    /// candle failed.
    #[error("candle: {0}")]
    Candle(String),
    /// The sampler failed (construction or evaluation).
    #[error("sampler: {0}")]
    Sampler(String),
    /// A parameter got no gradient from the loss (an op on the way detaches).
    #[error("parameter {0} received no gradient from the training loss")]
    NoGradient(String),
    /// A checkpoint could not be written or read, or belongs to another run.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl From<candle_core::Error> for TrainError {
    fn from(e: candle_core::Error) -> Self {
        TrainError::Candle(dlp_tensor::candle_message(&e))
    }
}

impl From<dlp_tensor::Error> for TrainError {
    fn from(e: dlp_tensor::Error) -> Self {
        TrainError::Param(e.to_string())
    }
}

/// Adam's constants: β₁, β₂, ε (the usual 0.9, 0.999, 1e-8 in [`Adam::default`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Adam {
    /// First-moment decay β₁.
    pub beta1: f64,
    /// Second-moment decay β₂.
    pub beta2: f64,
    /// ε added to the root of the second moment.
    pub eps: f64,
}

impl Default for Adam {
    fn default() -> Self {
        Adam { beta1: 0.9, beta2: 0.999, eps: 1e-8 }
    }
}

impl Adam {
    /// One Adam step of `var` from its gradient `grad` at step `t` (0-based), learning rate
    /// `lr` and decoupled weight decay `weight_decay` (AdamW; 0 for Adam), updating the
    /// moments `m`, `v` in place. The gradient is detached first: its graph reaches the
    /// parameters, and moments built on it would chain every step's graph to the next
    /// (memory without bound over a long run).
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &self,
        var: &Var,
        grad: &Tensor,
        m: &mut Tensor,
        v: &mut Tensor,
        t: usize,
        lr: f64,
        weight_decay: f64,
    ) -> candle_core::Result<()> {
        let g = grad.detach();
        let k = t as i32 + 1;
        let (c1, c2) = (1.0 - self.beta1.powi(k), 1.0 - self.beta2.powi(k));
        *m = ((&*m * self.beta1)? + (&g * (1.0 - self.beta1))?)?;
        *v = ((&*v * self.beta2)? + (g.sqr()? * (1.0 - self.beta2))?)?;
        let update = ((&*m / c1)? / ((&*v / c2)?.sqrt()? + self.eps)?)?;
        let w = var.as_tensor().detach();
        let w = if weight_decay == 0.0 { w } else { (w * (1.0 - lr * weight_decay))? };
        var.set(&(w - (update * lr)?)?)?;
        Ok(())
    }
}

/// Writes `map` as safetensors to `path` atomically ([`dlp_core::io::atomic_write`]: a
/// temporary file, synced, renamed over `path`, so an interruption, even a SIGKILL inside the
/// write, leaves the previous file intact); tensors are copied to the CPU first.
pub fn save_safetensors_atomic(path: &Path, map: &HashMap<String, Tensor>) -> Result<(), TrainError> {
    let fail = |m: String| TrainError::Checkpoint { path: path.display().to_string(), message: m };
    let cpu: HashMap<String, Tensor> =
        map.iter().map(|(k, t)| Ok((k.clone(), t.to_device(&Device::Cpu)?))).collect::<Result<_, TrainError>>()?;
    // The bytes candle_core::safetensors::save would write (it calls serialize_to_file).
    let bytes = safetensors::tensor::serialize(&cpu, None).map_err(|e| fail(e.to_string()))?;
    dlp_core::io::atomic_write(path, &bytes).map_err(|e| fail(e.to_string()))
}
