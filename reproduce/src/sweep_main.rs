//! `dlp-sweep`: one reproduction binary over seeds × flag values, on this machine
//! (`--engine local`, a bounded pool) or as a Slurm job array (`--engine slurm`), resumable,
//! then gathered (`dlp_reproduce::sweep`). `just sweep <name> …` builds and runs it.
//!
//! `dlp-sweep run fig3 --seeds 0..8 --quick --samplers dmala@0.4,gwg --engine slurm`: flags
//! the sweep does not know go to the binary, checked against its `--help`; a value with
//! commas varies (one run per value). `task` and `gather` are what the engines run.

use anyhow::{Context, Result, bail};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use dlp_reproduce::sweep::spec::{BinaryFlags, Description, parse_seeds};
use dlp_reproduce::sweep::{Sweep, gather, local, locate_binary, slurm, task};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Parser)]
#[command(name = "dlp-sweep", about = "Sweep a reproduction binary over seeds and flag values, locally or on Slurm")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run (or resume) a sweep: `run <name> [sweep options] [flags of the binary]`.
    Run(Box<RunArgs>),
    /// Run task <index> of the sweep in <dir> (what both engines execute).
    Task { dir: PathBuf, index: usize },
    /// Gather the finished runs of the sweep in <dir> into <dir>/gather/.
    Gather { dir: PathBuf },
}

#[derive(clap::Args)]
#[command(args_override_self = true)]
struct RunArgs {
    /// Reproduction binary (`fig3`).
    name: String,
    /// Seeds: `0..8` (8 excluded), `0..=7` or `1,5,9`.
    #[arg(long)]
    seeds: Option<String>,
    /// Sweep file (TOML: `seeds`, `[args]`, `[axes]`, `[gather] keys`); flags given here win.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Key columns of the runs' CSV files for the gather, comma-separated (default: detected).
    #[arg(long)]
    keys: Option<String>,
    /// Where the tasks run.
    #[arg(long, value_enum, default_value_t = Engine::Local)]
    engine: Engine,
    /// Tasks at once [local default: cores / --cpus-per-task; slurm default: no cap].
    #[arg(long)]
    jobs: Option<usize>,
    /// Threads per task (Slurm --cpus-per-task, RAYON_NUM_THREADS of each run).
    #[arg(long, default_value_t = 1)]
    cpus_per_task: usize,
    /// Slurm --time per task (e.g. 30:00).
    #[arg(long)]
    time: Option<String>,
    /// Slurm --partition.
    #[arg(long)]
    partition: Option<String>,
    /// Slurm --account.
    #[arg(long)]
    account: Option<String>,
    /// Further sbatch option, verbatim (repeatable): --sbatch-arg=--qos=normal.
    #[arg(long, allow_hyphen_values = true)]
    sbatch_arg: Vec<String>,
    /// Seconds to wait for the Slurm jobs before giving up (they keep running).
    #[arg(long, default_value_t = 86_400)]
    deadline: u64,
    /// Results root: runs go to <results>/<name>/<run-id>/.
    #[arg(long, default_value = "results")]
    results: PathBuf,
    /// The binary [default: <name> next to dlp-sweep].
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Write the task list (and the sbatch script) and stop.
    #[arg(long)]
    dry_run: bool,
}

#[derive(ValueEnum, Clone, Copy, PartialEq)]
enum Engine {
    /// A pool of processes on this machine.
    Local,
    /// A Slurm job array and a dependent gather job.
    Slurm,
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let (cli, binary_flags) = split_run_args(&argv);
    let code = match cli.cmd {
        Cmd::Run(args) => run(*args, &binary_flags),
        Cmd::Task { dir, index } => {
            Sweep::load(&dir).and_then(|s| task::run_task(&s, index)).map(|_| 0).map_err(|e| (e, 1))
        }
        Cmd::Gather { dir } => Sweep::load(&dir).and_then(|s| report_gather(&s)).map(|_| 0).map_err(|e| (e, 1)),
    };
    match code {
        Ok(c) => std::process::exit(c),
        Err((e, c)) => {
            eprintln!("error: {e:#}");
            std::process::exit(c);
        }
    }
}

/// For `run`, the tokens after the name that are not the sweep's own options are the
/// binary's flags: split them off before clap sees the rest, so both can be mixed freely.
fn split_run_args(argv: &[String]) -> (Cli, Vec<String>) {
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
fn plan(a: &RunArgs, binary_flags: &[String]) -> Result<(Sweep, Vec<usize>)> {
    let bin = locate_binary(&a.name, a.bin.as_deref())?;
    let flags = BinaryFlags::of_binary(&bin)?;
    let mut d = match &a.config {
        Some(path) => Description::from_toml(path)?,
        None => Description::default(),
    };
    if let Some(s) = &a.seeds {
        d.seeds = parse_seeds(s)?;
    }
    if let Some(k) = &a.keys {
        d.keys = k.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
    }
    d.add_cli(binary_flags, &flags, &a.name)?;
    d.check(&flags, &a.name)?;
    if a.cpus_per_task == 0 || a.jobs == Some(0) {
        bail!("--cpus-per-task and --jobs must be at least 1");
    }
    let sweep = Sweep::new(&a.name, &bin, &a.results, d)?;
    let todo = sweep.missing()?;
    Ok((sweep, todo))
}

fn run(a: RunArgs, binary_flags: &[String]) -> Result<i32, (anyhow::Error, i32)> {
    let (sweep, todo) = plan(&a, binary_flags).map_err(|e| (e, 2))?;
    let exe = std::env::current_exe().context("cannot find dlp-sweep itself").map_err(|e| (e, 1))?;
    let opts = slurm::Options {
        parallel: a.jobs.unwrap_or(0),
        cpus_per_task: a.cpus_per_task,
        time: a.time.clone(),
        partition: a.partition.clone(),
        account: a.account.clone(),
        extra: a.sbatch_arg.clone(),
        deadline: Duration::from_secs(a.deadline),
    };
    if a.engine == Engine::Slurm && !todo.is_empty() {
        slurm::check(&sweep, &todo, &opts, &exe).map_err(|e| (e, 2))?;
    }
    sweep.write().map_err(|e| (e, 1))?;
    println!(
        "{}: {} tasks, {} done, {} to run; sweep {}",
        sweep.name,
        sweep.tasks.len(),
        sweep.tasks.len() - todo.len(),
        todo.len(),
        sweep.dir().display()
    );
    execute(&a, &sweep, &todo, &opts, &exe).map_err(|e| (e, 1))
}

fn execute(a: &RunArgs, sweep: &Sweep, todo: &[usize], opts: &slurm::Options, exe: &Path) -> Result<i32> {
    let failures = match a.engine {
        Engine::Local if a.dry_run => return Ok(0),
        Engine::Local => {
            let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            let jobs = a.jobs.unwrap_or((cores / a.cpus_per_task).max(1));
            let failures = local::run(sweep, todo, jobs, a.cpus_per_task, exe)?;
            if failures.is_empty() {
                report_gather(sweep)?;
            }
            failures
        }
        Engine::Slurm => {
            let script = slurm::write_script(sweep, todo, opts, exe)?;
            if a.dry_run {
                println!("wrote {} (not submitted)", script.display());
                return Ok(0);
            }
            let jobs = slurm::submit(sweep, &script, todo, opts, exe)?;
            println!("submitted array {} and gather job {}", jobs.array.as_deref().unwrap_or("(none)"), jobs.gather);
            slurm::wait(sweep, &jobs, todo, opts.deadline)?;
            let failures = slurm::failures(sweep, &jobs, todo);
            let gathered = sweep.dir().join("gather").join("summary.json");
            if failures.is_empty() {
                if !gathered.is_file() {
                    bail!(
                        "every task finished but the gather job wrote nothing; see {}",
                        sweep.dir().join("logs").display()
                    );
                }
                println!("gathered into {}", sweep.dir().join("gather").display());
            }
            failures
        }
    };
    if failures.is_empty() {
        return Ok(0);
    }
    eprintln!(
        "error: {} of {} tasks failed (run the same command again to retry only those):",
        failures.len(),
        todo.len()
    );
    for f in &failures {
        // The binary's own error line, if its log has one (the task adds its own after it).
        let log = std::fs::read_to_string(&f.log).unwrap_or_default();
        let cause = log.lines().find(|l| l.starts_with("error:")).map(|l| format!(" ({l})")).unwrap_or_default();
        eprintln!("  task {} {}: {}{cause}; log {}", f.index, f.run_id, f.what, f.log.display());
    }
    Ok(1)
}

fn report_gather(sweep: &Sweep) -> Result<()> {
    let g = gather::gather(sweep)?;
    println!("gathered {} of {} runs into {}", g.complete, sweep.tasks.len(), g.dir.display());
    if !g.missing.is_empty() {
        println!("missing: {}", g.missing.join(" "));
    }
    Ok(())
}
