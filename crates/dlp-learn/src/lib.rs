//! dlp-learn: learning with dlp samplers, and the metrics of the learning experiments.
//!
//! * [`rbm`]: a Bernoulli RBM's parameters, batched block Gibbs through matrix products, and
//!   CD-k training exactly as §3.3 (the RBM whose samples Fig. 4 compares).
//! * [`cat_rbm`]: CD-k training of a categorical RBM (DISCS's categorical RBM tasks).
//! * [`pcd`]: the dense spin-quadratic [`pcd::DenseIsing`] target whose coupling matrix
//!   changes every iteration, data from a lattice Ising by systematic-scan Gibbs, and
//!   persistent contrastive divergence driven by any [`dlp_core::Sampler`] (§3.4, Fig. 5).
//!
//! With the `tensor` feature (candle, through `dlp-tensor`), the trainers of the tensor
//! models; without it this crate links no candle, so its light users stay light:
//!
//! * [`train`]: what the tensor trainers share: their error, the tensor Adam(W) update, the
//!   atomic safetensors checkpoint write.
//! * [`ebm_train`]: the deep ResNet EBM trained by PCD (Table 4's model).
//! * [`bert_train`]: the stand-in masked language model of the infilling experiment.

#[cfg(feature = "tensor")]
pub mod bert_train;
pub mod cat_rbm;
#[cfg(feature = "tensor")]
pub mod ebm_train;
pub mod pcd;
pub mod rbm;
#[cfg(feature = "tensor")]
pub mod train;

/// Errors of the learning code; each names the parameter and its value.
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    /// A configuration value is out of range.
    #[error("{name} = {value}: {message}")]
    BadParameter {
        /// The parameter.
        name: &'static str,
        /// Its value, printed.
        value: String,
        /// What is wrong.
        message: String,
    },
    /// The sampler refused the target or the states.
    #[error("sampler: {0}")]
    Sampler(#[from] dlp_core::SamplerError),
    /// Writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

pub(crate) fn bad(name: &'static str, value: impl std::fmt::Display, message: &str) -> LearnError {
    LearnError::BadParameter { name, value: value.to_string(), message: message.to_string() }
}
