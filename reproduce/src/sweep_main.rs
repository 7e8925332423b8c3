//! `dlp-sweep`: one reproduction binary over seeds × flag values, on this machine
//! (`--engine local`, a bounded pool) or as a Slurm job array (`--engine slurm`), resumable,
//! then gathered (`dlp_reproduce::sweep`). `just sweep <name> …` builds and runs it.
//!
//! `dlp-sweep run fig3 --seeds 0..8 --quick --samplers dmala@0.4,gwg --engine slurm`: flags
//! the sweep does not know go to the binary, checked against its `--help`; a value with
//! commas varies (one run per value). `task` and `gather` are what the engines run.

use anyhow::{Context, Result, bail};
use dlp_reproduce::sweep::cli::{Cmd, Engine, RunArgs, plan, split_run_args};
use dlp_reproduce::sweep::{Sweep, gather, local, slurm, task};
use std::path::Path;
use std::time::Duration;

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

fn run(a: RunArgs, binary_flags: &[String]) -> Result<i32, (anyhow::Error, i32)> {
    let (sweep, todo) = plan(&a, binary_flags).map_err(|e| (e, 2))?;
    let exe = std::env::current_exe().context("cannot find dlp-sweep itself").map_err(|e| (e, 1))?;
    let opts = slurm::Options {
        parallel: a.jobs.unwrap_or(0),
        per_task: a.per_task,
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
            let failures = slurm::failures(sweep, &jobs, todo, opts.per_task);
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
    local::report(&failures, todo.len());
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
