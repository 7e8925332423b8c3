//! One task of a sweep: run the binary into `<run-id>.tmp/`, then rename it to `<run-id>/`.
//! The same function runs under both engines (`dlp-sweep task <sweep-dir> <i>`).

use super::Sweep;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Name of the record a task adds to its run directory.
pub const RECORD: &str = "sweep-task.json";

/// What a finished run records about how it was made: compared on every rerun, so a run
/// directory is reused only for exactly the same binary arguments.
#[derive(Debug, Serialize, Deserialize)]
pub struct Record {
    /// Binary name.
    pub name: String,
    /// Run id (the directory name).
    pub run_id: String,
    /// Arguments the binary ran with (without `--out`).
    pub args: Vec<String>,
    /// Seed.
    pub seed: u64,
    /// Axis values.
    pub config: Vec<(String, String)>,
    /// Sweep that made it (another sweep asking for the same run reuses it).
    pub sweep_id: String,
    /// Wall-clock seconds of the binary.
    pub wall_seconds: f64,
}

/// Whether task `i` has a finished run directory; an error if that directory was made by
/// other arguments or lacks its record (a directory this layer did not write).
pub fn is_done(sweep: &Sweep, i: usize) -> Result<bool> {
    let dir = sweep.run_dir(i);
    if !dir.exists() {
        return Ok(false);
    }
    let path = dir.join(RECORD);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("{} exists but has no {RECORD}: not a sweep run; move it away", dir.display()))?;
    let record: Record = serde_json::from_str(&text).with_context(|| format!("{}: unreadable", path.display()))?;
    if record.args != sweep.tasks[i].args {
        bail!("{} was made with other arguments ({}); move it away", dir.display(), record.args.join(" "));
    }
    Ok(true)
}

/// Outcome of [`run_task`].
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The run directory already existed.
    Skipped,
    /// The binary ran and its directory is in place.
    Ran,
}

/// The temporary directory of task `i`'s run.
pub fn tmp_dir(sweep: &Sweep, i: usize) -> PathBuf {
    sweep.runs_dir.join(format!("{}.tmp", sweep.tasks[i].run_id))
}

/// Runs task `i`: skips it if finished, else runs the binary with `--out <run-id>.tmp` (its
/// output goes to this process's stdout and stderr, i.e. the task's log), adds the record and
/// renames the directory. A failed binary leaves no directory behind.
pub fn run_task(sweep: &Sweep, i: usize) -> Result<Outcome> {
    if i >= sweep.tasks.len() {
        bail!("task {i}: the sweep has {} tasks (0 to {})", sweep.tasks.len(), sweep.tasks.len().saturating_sub(1));
    }
    if is_done(sweep, i)? {
        println!("task {i}: {} already done, skipped", sweep.tasks[i].run_id);
        return Ok(Outcome::Skipped);
    }
    let task = &sweep.tasks[i];
    let (tmp, dir) = (tmp_dir(sweep, i), sweep.run_dir(i));
    // A leftover from an attempt that was killed: start again from nothing.
    remove_dir(&tmp)?;
    println!("task {i}: {} {} --out {}", sweep.bin.display(), task.args.join(" "), tmp.display());
    let started = Instant::now();
    let status = std::process::Command::new(&sweep.bin)
        .args(&task.args)
        .arg("--out")
        .arg(&tmp)
        .status()
        .with_context(|| format!("cannot run {}", sweep.bin.display()));
    let finished = status.and_then(|status| {
        if !status.success() {
            bail!("task {i} ({}): {} failed ({status})", task.run_id, sweep.name);
        }
        let record = Record {
            name: sweep.name.clone(),
            run_id: task.run_id.clone(),
            args: task.args.clone(),
            seed: task.seed,
            config: task.config.clone(),
            sweep_id: sweep.id.clone(),
            wall_seconds: started.elapsed().as_secs_f64(),
        };
        let mut json = serde_json::to_string_pretty(&record)?;
        json.push('\n');
        crate::atomic_write(&tmp.join(RECORD), json.as_bytes())?;
        std::fs::rename(&tmp, &dir).with_context(|| format!("cannot rename {} to {}", tmp.display(), dir.display()))
    });
    if let Err(e) = finished {
        let _ = remove_dir(&tmp);
        return Err(e);
    }
    println!("task {i}: wrote {} in {:.1} s", dir.display(), started.elapsed().as_secs_f64());
    Ok(Outcome::Ran)
}

fn remove_dir(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}
