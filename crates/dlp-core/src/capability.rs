//! Capabilities: what a model offers samplers beyond f and ∇f.
//!
//! A sampler with a specialised path (lattice DLP, the RBM's cached pre-activations, RBM block
//! Gibbs) looks the capability up in [`crate::Target::capabilities`] at `start` and falls
//! back to its generic path when it is absent. Capabilities are plain views defined here, so
//! samplers need no concrete model type and `dlp-samplers` does not depend on `dlp-models`.

use std::marker::PhantomData;

/// The capabilities one target declares; every field is optional.
#[derive(Clone, Copy, Debug, Default)]
pub struct Capabilities<'a> {
    _model: PhantomData<&'a ()>,
}
