//! dlp-samplers: every sampler of dlp, one file each, chosen by name through [`registry`].
//!
//! | name | file | what |
//! |---|---|---|
//! | `dula`, `dmala`, `pdula`, `pdmala` | `dlp.rs` | discrete Langevin proposal (paper 000 Alg. 1), binary/spin, categorical, ordinal |
//! | `sg-dula` | `sgdlp.rs` | stochastic-gradient DULA (paper 000 §6) |
//! | `gibbs`, `gibbs-sweep` | `gibbs.rs` | single-site Gibbs, random scan / systematic scan |
//! | `block-gibbs` | `block_gibbs.rs` | RBM alternating block Gibbs |
//! | `bg-<k>` | `block_gibbs.rs` | Gibbs on random blocks of k coordinates |
//! | `hb-<L>-<r>` | `hamming_ball.rs` | Hamming-ball sampler |
//! | `gwg`, `gwg-<k>` | `gwg.rs` | Gibbs-with-gradients, one or k flips |
//! | `lb` | `locally_balanced.rs` | exact locally balanced one-flip proposal |
//!
//! Shared pieces (log-space MH test, flip logits, categorical draws) live in [`proposal`].
//! Adding a sampler: one file implementing `dlp_core::Sampler` (+ `ExactKernel`) and one
//! line in [`registry::REGISTRY`].

pub mod block_gibbs;
pub mod continuous;
pub mod dlp;
pub mod fast;
pub mod gibbs;
pub mod gwg;
pub mod hamming_ball;
pub mod locally_balanced;
pub mod proposal;
pub mod registry;
pub mod sgdlp;

pub use registry::{SamplerParams, build_sampler, sampler_names};
