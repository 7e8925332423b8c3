//! dlp-models: the model zoo and its files.
//!
//! * Models ([`IsingModel`], [`PottsModel`], [`Rbm`], [`CategoricalModel`], [`TableModel`]),
//!   each a [`dlp_core::Target`] with the gradient conventions of `model-file.md`: bits for
//!   binary/spin (∂ℓ/∂bit = 2 ∂ℓ/∂s for spin), the one-hot matrix for categorical kinds.
//! * [`Model`]: any of them, as read from a `dlp.model.v1` file by [`load_model`] /
//!   [`parse_model_str`] (`gof.md` §10.3), written back by [`Model::to_json`]. Each file
//!   `kind` is one module of [`kinds`] registering a [`ModelKind`].
//! * [`FhmmModel`]: DISCS's factorial HMM posterior (kind `fhmm`); [`CatRbm`]: DISCS's
//!   categorical RBM (kind `cat-rbm`); [`discs`]: DISCS's classical
//!   tasks as named generators with fixed seeds, also read by [`load_model`] as `discs:NAME`.
//! * [`samples`]: the samples file grammar of `gof.md` §10.2 (read and atomic write).
//! * [`nmf`]: Bayesian Poisson NMF (paper 001 §6.1), a continuous target on (0, ∞)^((I+J)R)
//!   with minibatches of observed entries and a synthetic data generator.
//!
//! Errors display as the `gof.md` §10.5 lines without the leading `error: `.

pub mod bnn;
pub mod cat_rbm;
pub mod categorical;
pub mod couplings;
pub mod discs;
pub mod error;
pub mod fhmm;
mod fields;
pub mod file;
pub mod ising;
pub mod kinds;
pub mod logistic;
pub mod model;
pub mod nmf;
pub mod potts;
pub mod rbm;
pub mod samples;
pub mod table;

pub use bnn::BnnModel;
pub use cat_rbm::CatRbm;
pub use categorical::CategoricalModel;
pub use couplings::{Couplings, LatticeSpec};
pub use error::ModelError;
pub use fhmm::FhmmModel;
pub use file::{Format, load_model, parse_model_str};
pub use ising::IsingModel;
pub use logistic::LogisticModel;
pub use model::{LoadedModel, MODEL_SCHEMA, Model, ModelKind};
pub use potts::PottsModel;
pub use rbm::Rbm;
pub use samples::{
    Delimiter, IntegerMatrix, RealMatrix, Samples, SamplesError, format_samples, read_integer_matrix, read_real_matrix,
    read_samples, write_samples,
};
pub use table::TableModel;
