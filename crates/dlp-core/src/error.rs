//! The error of an evaluation, in a leaf module: both the target trait ([`crate::target`]) and
//! the capabilities it offers ([`crate::capability`]) return it, and neither imports the other
//! for it.

/// An evaluation that could not be done. Ends the run with this line (CLI: exit 1 for a
/// device failure, 2 for a request the model cannot serve).
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum EvalError {
    /// A minibatch was asked of a model that has no data terms.
    #[error("the model is not a sum over data items (it has no minibatch estimates)")]
    NoData,
    /// A minibatch item index is out of range.
    #[error("minibatch item {index} is outside 0..{n_data}")]
    BadItem {
        /// The offending index.
        index: usize,
        /// N.
        n_data: usize,
    },
    /// The device that evaluates the model failed (out of memory, lost device, kernel error).
    #[error("device error on {device}: {message}")]
    Device {
        /// The device, e.g. `cpu` or `cuda:0`.
        device: String,
        /// What the device library said.
        message: String,
    },
}
