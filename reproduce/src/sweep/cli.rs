//! The command line of `dlp-sweep` (`src/sweep_main.rs`): `run`, `task`, `gather`, and the
//! split of `run`'s arguments between the sweep and the binary.

use super::{Request, Sweep};
use anyhow::{Result, bail};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// `dlp-sweep`.
#[derive(Parser)]
#[command(name = "dlp-sweep", about = "Sweep a reproduction binary over seeds and flag values, locally or on Slurm")]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Its subcommands.
#[derive(Subcommand)]
pub enum Cmd {
    /// Run (or resume) a sweep: `run <name> [sweep options] [flags of the binary]`.
    Run(Box<RunArgs>),
    /// Run task <index> of the sweep in <dir> (what both engines execute).
    Task {
        /// The sweep directory.
        dir: PathBuf,
        /// The task index.
        index: usize,
    },
    /// Gather the finished runs of the sweep in <dir> into <dir>/gather/.
    Gather {
        /// The sweep directory.
        dir: PathBuf,
    },
}

/// The options of `run` (the binary's flags are split off first, [`split_run_args`]).
#[derive(clap::Args)]
#[command(args_override_self = true)]
pub struct RunArgs {
    /// Reproduction binary (`fig3`).
    pub name: String,
    /// Seeds: `0..8` (8 excluded), `0..=7` or `1,5,9`.
    #[arg(long)]
    pub seeds: Option<String>,
    /// Sweep file (TOML: `seeds`, `[args]`, `[axes]`, `[gather] keys`); flags given here win.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Key columns of the runs' CSV files for the gather, comma-separated (default: detected).
    #[arg(long)]
    pub keys: Option<String>,
    /// Where the tasks run.
    #[arg(long, value_enum, default_value_t = Engine::Local)]
    pub engine: Engine,
    /// Tasks at once [local default: cores / --cpus-per-task; slurm default: no cap].
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Slurm: runs per array task, one after the other (pack runs of a second or less).
    #[arg(long, default_value_t = 1)]
    pub per_task: usize,
    /// Threads per task (Slurm --cpus-per-task, RAYON_NUM_THREADS of each run).
    #[arg(long, default_value_t = 1)]
    pub cpus_per_task: usize,
    /// Slurm --time per task (e.g. 30:00).
    #[arg(long)]
    pub time: Option<String>,
    /// Slurm --partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Slurm --account.
    #[arg(long)]
    pub account: Option<String>,
    /// Further sbatch option, verbatim (repeatable): --sbatch-arg=--qos=normal.
    #[arg(long, allow_hyphen_values = true)]
    pub sbatch_arg: Vec<String>,
    /// Seconds to wait for the Slurm jobs before giving up (they keep running).
    #[arg(long, default_value_t = 86_400)]
    pub deadline: u64,
    /// Results root: runs go to <results>/<name>/<run-id>/.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// The binary [default: <name> next to dlp-sweep].
    #[arg(long)]
    pub bin: Option<PathBuf>,
    /// Write the task list (and the sbatch script) and stop.
    #[arg(long)]
    pub dry_run: bool,
}

/// `--engine`.
#[derive(ValueEnum, Clone, Copy, PartialEq)]
pub enum Engine {
    /// A pool of processes on this machine.
    Local,
    /// A Slurm job array and a dependent gather job.
    Slurm,
}

/// For `run`, the tokens after the name that are not the sweep's own options are the
/// binary's flags: split them off before clap sees the rest, so both can be mixed freely.
pub fn split_run_args(argv: &[String]) -> (Cli, Vec<String>) {
    if argv.get(1).map(String::as_str) != Some("run") || argv.len() < 3 || argv[2].starts_with('-') {
        return (Cli::parse_from(argv), vec![]);
    }
    let cmd = Cli::command();
    let run = cmd.find_subcommand("run").expect("run subcommand");
    let ours =
        |name: &str| run.get_arguments().find(|a| a.get_long() == Some(name)).map(|a| a.get_action().takes_values());
    let (mut mine, mut theirs) = (argv[..3].to_vec(), Vec::new());
    let mut i = 3;
    while i < argv.len() {
        let tok = &argv[i];
        let name = tok.strip_prefix("--").map(|b| b.split('=').next().unwrap_or(b));
        match name.and_then(ours).or_else(|| (tok == "-h" || tok == "--help").then_some(false)) {
            Some(takes) => {
                mine.push(tok.clone());
                if takes && !tok.contains('=') && i + 1 < argv.len() {
                    i += 1;
                    mine.push(argv[i].clone());
                }
            }
            None => theirs.push(tok.clone()),
        }
        i += 1;
    }
    (Cli::parse_from(mine), theirs)
}

/// Everything up to submission; errors here are bad input (exit 2) and nothing has run.
pub fn plan(a: &RunArgs, binary_flags: &[String]) -> Result<(Sweep, Vec<usize>)> {
    if a.cpus_per_task == 0 || a.per_task == 0 || a.jobs == Some(0) {
        bail!("--cpus-per-task, --per-task and --jobs must be at least 1");
    }
    let (seeds, keys, config) = (a.seeds.as_deref(), a.keys.as_deref(), a.config.as_deref());
    let request = Request { name: &a.name, bin: a.bin.as_deref(), results: &a.results, config, seeds, keys };
    request.plan(binary_flags)
}
