//! Sweeps: one reproduction binary over seeds × flag values, on this machine or as a Slurm
//! job array, resumable, with a gather step (tidy CSV, mean ± sd per configuration, figure
//! with bands).
//!
//! Layout, for `dlp-sweep run fig3 --seeds 0..8 …`:
//!
//! * `results/fig3/<run-id>/`: one run (the binary's own files plus `sweep-task.json`),
//!   written as `<run-id>.tmp/` and renamed when the binary succeeded, so a directory under
//!   its final name is complete and a rerun skips it ([`task`]);
//! * `results/fig3/sweeps/<sweep-id>/`: `sweep.json` (binary, results directory, tasks),
//!   `tasks.tsv`, `logs/`, `sweep.sbatch` (Slurm), `gather/` ([`gather`]).
//!
//! Both engines ([`local`], [`slurm`]) run the same command per task,
//! `dlp-sweep task <sweep-dir> <index>`. The sweep layer knows a binary only by its flags
//! (clap's own list, [`spec::FLAGS_ARG`]) and by the `--seed`/`--out` contract of every reproduction binary.
//!
//! Only [`spec`] (the flag list every binary prints for the sweep, [`spec::FLAGS_ARG`]) is built
//! without feature `sweep` (on by default; `just sweep` asks for it): the rest is ~1,350 lines
//! that `just reproduce fig3` does not need.

#[cfg(feature = "sweep")]
pub mod cli;
#[cfg(feature = "sweep")]
pub mod gather;
#[cfg(feature = "sweep")]
pub mod local;
#[cfg(feature = "sweep")]
mod plan;
#[cfg(feature = "sweep")]
pub mod slurm;
pub mod spec;
#[cfg(feature = "sweep")]
pub mod task;

#[cfg(feature = "sweep")]
pub use plan::{Request, Sweep, locate_binary};
