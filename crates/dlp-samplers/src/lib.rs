//! dlp-samplers: every sampler of dlp, one file each, chosen by name through [`registry`].
//!
//! The families, their names, flags, exactness and papers are the rows of
//! [`registry::REGISTRY`] (`dlp samplers` prints them); each row's constructor names its file.
//!
//! Shared pieces (log-space MH test, flip logits, categorical draws) live in [`proposal`].
//! Adding a sampler: one file implementing `dlp_core::Sampler` (+ `ExactKernel`) that declares
//! its [`registry::SamplerSpec`] row(s) as `pub const`, its `mod` line here, and one line per
//! row in [`registry::REGISTRY`]; the exact suite's coverage test then asks for its reference
//! transcription in `dlp_exact::reference` (ARCHITECTURE.md, "Adding things → A sampler").

pub mod acs;
pub mod adapt;
pub mod ais;
pub mod alb;
pub mod block_gibbs;
pub mod bounded;
pub mod continuous;
pub mod dlmc;
pub mod dlp;
pub mod dual_averaging;
pub mod fast;
pub mod gf_svgd;
pub mod gibbs;
pub mod gwg;
pub mod hamming_ball;
pub mod locally_balanced;
pub mod mh;
pub mod pas;
pub mod proposal;
pub mod registry;
pub mod rmala;
pub mod rw;
pub mod rwm;
pub mod sgdlp;
pub mod spec;
pub mod tempering;
pub mod tune;

pub use registry::{SamplerParams, SamplerSpec, build_sampler, sampler_names};
