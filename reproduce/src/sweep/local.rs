//! The local engine: a bounded pool of `dlp-sweep task` processes with a progress bar.

use super::Sweep;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A task that did not finish, and where its output went.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Task index.
    pub index: usize,
    /// Its run id.
    pub run_id: String,
    /// Its log file.
    pub log: PathBuf,
    /// What happened (exit status, or the task's state in Slurm).
    pub what: String,
}

/// The log file of task `i` under the local engine.
pub fn log_path(sweep: &Sweep, i: usize) -> PathBuf {
    sweep.dir().join("logs").join(format!("local_{i}.out"))
}

/// Runs the tasks `todo` of `sweep`, `jobs` at a time, each as the process
/// `exe task <sweep-dir> <i>` (with `RAYON_NUM_THREADS=cpus`, as a Slurm task gets its
/// `--cpus-per-task`), stdout and stderr to its log. Returns the failures, in task order.
pub fn run(sweep: &Sweep, todo: &[usize], jobs: usize, cpus: usize, exe: &Path) -> Result<Vec<Failure>> {
    let bar =
        indicatif::ProgressBar::with_draw_target(Some(todo.len() as u64), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg:>12} [{elapsed_precise}] {wide_bar} {pos}/{len}") {
        bar.set_style(style);
    }
    bar.set_message(sweep.name.clone());
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, todo.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&i) = todo.get(k) else { break };
                    match run_one(sweep, i, cpus, exe) {
                        Ok(None) => {}
                        Ok(Some(f)) => failures.lock().unwrap_or_else(|e| e.into_inner()).push(f),
                        Err(e) => errors.lock().unwrap_or_else(|e| e.into_inner()).push(e),
                    }
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    if let Some(e) = errors.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().next() {
        return Err(e);
    }
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    failures.sort_by_key(|f| f.index);
    Ok(failures)
}

fn run_one(sweep: &Sweep, i: usize, cpus: usize, exe: &Path) -> Result<Option<Failure>> {
    let log = log_path(sweep, i);
    let out = std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let status = std::process::Command::new(exe)
        .arg("task")
        .arg(sweep.dir())
        .arg(i.to_string())
        .env("RAYON_NUM_THREADS", cpus.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .status()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    Ok((!status.success()).then(|| Failure {
        index: i,
        run_id: sweep.tasks[i].run_id.clone(),
        log,
        what: status.to_string(),
    }))
}

/// Prints the failed tasks on stderr: a count, then per task its run id, what happened, the
/// binary's own `error:` line if its log has one, and the log's path.
pub fn report(failures: &[Failure], of: usize) {
    eprintln!("error: {} of {of} tasks failed (run the same command again to retry only those):", failures.len());
    for f in failures {
        let log = std::fs::read_to_string(&f.log).unwrap_or_default();
        let cause = log.lines().find(|l| l.starts_with("error:")).map(|l| format!(" ({l})")).unwrap_or_default();
        eprintln!("  task {} {}: {}{cause}; log {}", f.index, f.run_id, f.what, f.log.display());
    }
}
