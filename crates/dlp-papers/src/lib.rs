//! dlp-papers: models that exist for one paper's reproduction only, kept out of the general
//! crates (the binaries that run them are `reproduce/src/bin/*`).
//!
//! * [`binary_nn`]: paper 001 §6.2's Bayesian binary neural network, a continuous target on
//!   (−1, 1)^d with a minibatch gradient by candle's autograd and its binarised prediction
//!   (`001-bnn`).
//! * [`ksd`]: KDSD's Stein kernel on real-valued one-hot inputs, differentiable through relaxed
//!   samples (on hard ones the statistic of `dlp_gof::kdsd`), and [`mixture`]: the KSD-trained
//!   product and semi-implicit mixture models of paper 003 with their reference target
//!   (`003-mixture`).
//! * [`binnet`]: paper 004's ensembles of binarised MLPs by GF-SVGD and the straight-through
//!   and bagging baselines of its Fig. 6 (`004-fig6`; plain Rust, no tensors).
//!
//! General-purpose pieces these build on stay in their crates: tensor targets and errors in
//! `dlp-tensor`, the tensor Adam in `dlp-learn` (feature `tensor`), GF-SVGD in `dlp-samplers`.

#![warn(missing_docs)]

pub mod binary_nn;
pub mod binnet;
pub mod ksd;
pub mod mixture;
