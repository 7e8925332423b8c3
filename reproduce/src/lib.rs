//! Shared plumbing and maths of the reproduction binaries (`src/bin/<name>.rs`).
//!
//! A binary is config → loop over crate calls → files: it parses `Args` (flattening
//! [`CommonArgs`]), calls [`Run::start`], runs samplers through `dlp_core::run_chains` or the
//! experiment functions here, and writes CSV/JSON/figures through [`Run`]. What is not
//! configuration lives in the modules:
//!
//! * [`args`]: common flags, `main`, sampler and value lists;
//! * [`results`], [`csv_out`], `meta`: the results directory, atomic CSV/JSON writes, `meta.json`;
//! * [`grid`]: tuning grids and whether a choice was at their edge;
//! * [`plot`]: every figure (the only module that uses plotters);
//! * [`observe`], [`report`]: observers of `run_chains`, curves, summary pieces;
//! * [`corv`] (paper 001 Figs. 1–2: bounded toys, exact CoRV oracles),
//! * [`bnn`] (Tables 2 and 4: binary Bayesian neural networks),
//! * [`ebm`] (Table 1 / Fig. 9: ResNet deep EBMs by PCD, AIS evaluation, checkpoints),
//! * [`discs`] (DISCS's benchmark: every registry sampler on its classical tasks),
//! * [`bias`] (Figs. 1a/1b), [`ising`] (Figs. 2, 3, 7), [`rbm`] (Fig. 4), [`pcd`] (Fig. 5),
//!   [`gof_power`], [`gf_svgd`] (paper 004's Figs. 1–3, 7): each experiment's maths and its claims;
//! * [`sweep`]: seeds × flag values of any binary, locally or as a Slurm array (`dlp-sweep`).

pub mod args;
#[cfg(feature = "matrices")]
pub mod bias;
#[cfg(feature = "tensor")]
pub mod bnn;
#[cfg(feature = "matrices")]
pub mod corv;
#[cfg(feature = "tensor")]
pub mod corv_bnn;
pub mod csv_out;
pub mod discs;
#[cfg(feature = "tensor")]
pub mod ebm;
#[cfg(feature = "plain")]
pub mod gf_svgd;
#[cfg(feature = "plain")]
pub mod gof_power;
pub mod grid;
#[cfg(feature = "tensor")]
pub mod infill;
pub mod ising;
mod meta;
pub mod nmf;
pub mod observe;
#[cfg(feature = "plain")]
pub mod pcd;
pub mod plot;
#[cfg(feature = "plain")]
pub mod rbm;
pub mod report;
pub mod results;
pub mod sweep;

#[cfg(feature = "tensor")]
pub use args::main_with_chain_graphs;
pub use args::{CommonArgs, SamplerSpec, main_with, one_sampler, parse_list, parse_samplers};
pub use dlp_core::io::atomic_write;
pub use meta::locked_version;
pub use observe::{Checkpoint, CurvePoint, MeanErrorObserver, chain0_series, merge_curves, merge_pooled};
pub use plot::{BoxStats, Figure, Panel, RefLine, Series, register_fonts, short_number};
pub use results::Run;

/// Run options for one chain run inside a caller's parallel loop (a grid of chains): threads 0
/// puts it on the caller's pool. A pool of its own made the waiting caller thread steal the
/// grid's next chains, so every chain of a grid ran at once.
pub fn on_caller_pool(seed: u64) -> dlp_core::RunOptions {
    dlp_core::RunOptions { seed, threads: 0, chains_per_task: 0 }
}
