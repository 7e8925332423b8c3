//! The Slurm engine: an `sbatch` job array of `dlp-sweep task` (only the missing indices),
//! checked with `sbatch --test-only` before anything is submitted, plus a gather job that
//! depends on it; then a wait with a deadline and a per-task report from the files on disk
//! (not from job states: `/work/shared/specs/slurm.md`, "Verify by outputs on disk").

use super::Sweep;
use super::local::Failure;
use anyhow::{Context, Result, anyhow, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Slurm settings of a sweep (passed through to `sbatch`).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// At most this many array tasks at once (`--array=…%N`; 0: no cap).
    pub parallel: usize,
    /// Sweep tasks per array task (1: the array indices are the task indices). Slurm starts a
    /// wave of array tasks about once a second (`/work/shared/specs/slurm.md`, Timings), so
    /// runs of a second or less are better packed several to an array task.
    pub per_task: usize,
    /// `--cpus-per-task`; also the task's `RAYON_NUM_THREADS`.
    pub cpus_per_task: usize,
    /// `--time` of each task (Slurm's syntax, e.g. `30:00`).
    pub time: Option<String>,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// Further `sbatch` options, verbatim (`--qos=normal`, `--mem=4G`).
    pub extra: Vec<String>,
    /// How long to wait for the array and the gather job.
    pub deadline: Duration,
}

/// `0-3,7,9-12`: the indices as Slurm array ranges.
pub fn array_ranges(indices: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < indices.len() {
        let start = indices[k];
        while k + 1 < indices.len() && indices[k + 1] == indices[k] + 1 {
            k += 1;
        }
        parts.push(if indices[k] == start { start.to_string() } else { format!("{start}-{}", indices[k]) });
        k += 1;
    }
    parts.join(",")
}

fn quote(s: &str) -> Result<String> {
    Ok(shlex::try_quote(s).map_err(|e| anyhow!("cannot quote {s:?} for the shell: {e}"))?.into_owned())
}

fn common_options(opts: &Options) -> Vec<String> {
    let mut v = Vec::new();
    v.extend(opts.partition.iter().map(|p| format!("--partition={p}")));
    v.extend(opts.account.iter().map(|a| format!("--account={a}")));
    v.extend(opts.time.iter().map(|t| format!("--time={t}")));
    v.extend(opts.extra.iter().cloned());
    v
}

/// The array script: `#SBATCH` lines, then `exec <exe> task <sweep-dir> $SLURM_ARRAY_TASK_ID`
/// with absolute paths (no cargo inside tasks). `#SBATCH` lines are comments to bash, so
/// `SLURM_ARRAY_TASK_ID=3 bash sweep.sbatch` runs task 3 here. With `per_task` = k > 1, array
/// task j runs the tasks at positions jk … jk + k − 1 of `todo` one after the other (listed in
/// the script), and fails if any of them failed.
pub fn script(sweep: &Sweep, todo: &[usize], opts: &Options, exe: &Path) -> Result<String> {
    let logs = sweep.dir().join("logs");
    let k = opts.per_task.max(1);
    let array = if k == 1 { array_ranges(todo) } else { format!("0-{}", todo.len().div_ceil(k).saturating_sub(1)) };
    let mut lines = vec![
        "#!/bin/bash".to_string(),
        format!("# dlp sweep {} {}: {} of {} tasks", sweep.name, sweep.id, todo.len(), sweep.tasks.len()),
        format!("#SBATCH --job-name=dlp-{}", sweep.name),
        match opts.parallel {
            0 => format!("#SBATCH --array={array}"),
            n => format!("#SBATCH --array={array}%{n}"),
        },
        format!("#SBATCH --cpus-per-task={}", opts.cpus_per_task.max(1)),
        format!("#SBATCH --output={}", logs.join("%A_%a.out").display()),
    ];
    lines.extend(common_options(opts).into_iter().map(|o| format!("#SBATCH {o}")));
    lines.push("export RAYON_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}".into());
    let (exe, dir) = (quote(&exe.to_string_lossy())?, quote(&sweep.dir().to_string_lossy())?);
    if k == 1 {
        lines.push(format!("exec {exe} task {dir} \"$SLURM_ARRAY_TASK_ID\""));
    } else {
        let list: Vec<String> = todo.iter().map(usize::to_string).collect();
        lines.push(format!("tasks=({})", list.join(" ")));
        lines.push("rc=0".into());
        lines.push(format!("for i in \"${{tasks[@]:$((SLURM_ARRAY_TASK_ID * {k})):{k}}}\"; do"));
        lines.push(format!("    {exe} task {dir} \"$i\" || rc=1"));
        lines.push("done".into());
        lines.push("exit $rc".into());
    }
    Ok(lines.join("\n") + "\n")
}

fn sbatch(args: &[String]) -> Result<String> {
    let out = Command::new("sbatch").args(args).output().context("cannot run sbatch (is Slurm installed?)")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let line = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim();
        bail!("sbatch refused the job: {line}");
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Asks Slurm whether it would accept the array (`sbatch --test-only`: partition, account,
/// time limit, array size), submitting nothing and writing nothing under the results.
pub fn check(sweep: &Sweep, todo: &[usize], opts: &Options, exe: &Path) -> Result<()> {
    // `#SBATCH --output=…` lines are split at blanks, and quoting there is not portable.
    if sweep.dir().to_string_lossy().contains(char::is_whitespace) {
        bail!("--engine slurm needs a results path without blanks, not {}", sweep.runs_dir.display());
    }
    let mut tmp = tempfile::Builder::new().suffix(".sbatch").tempfile().context("cannot create a temporary file")?;
    std::io::Write::write_all(&mut tmp, script(sweep, todo, opts, exe)?.as_bytes())?;
    sbatch(&["--test-only".to_string(), tmp.path().to_string_lossy().into_owned()])?;
    Ok(())
}

/// Writes `<sweep-dir>/sweep.sbatch`.
pub fn write_script(sweep: &Sweep, todo: &[usize], opts: &Options, exe: &Path) -> Result<PathBuf> {
    let path = sweep.dir().join("sweep.sbatch");
    crate::atomic_write(&path, script(sweep, todo, opts, exe)?.as_bytes())?;
    Ok(path)
}

/// Job ids of a submitted sweep.
#[derive(Debug, Clone)]
pub struct Submitted {
    /// The array job (none when every task was already done).
    pub array: Option<String>,
    /// The gather job.
    pub gather: String,
}

/// Submits the array (if `todo` is not empty) and the gather job, which runs only if every
/// task succeeded (`afterok`; `--kill-on-invalid-dep=yes`, else a failed task would leave it
/// pending forever).
pub fn submit(sweep: &Sweep, script: &Path, todo: &[usize], opts: &Options, exe: &Path) -> Result<Submitted> {
    let id = |s: String| s.split(';').next().unwrap_or_default().to_string();
    let array =
        if todo.is_empty() { None } else { Some(id(sbatch(&["--parsable".into(), script.to_string_lossy().into()])?)) };
    let mut args = vec![
        "--parsable".to_string(),
        format!("--job-name=dlp-{}-gather", sweep.name),
        format!("--output={}", sweep.dir().join("logs").join("gather_%j.out").display()),
    ];
    if let Some(a) = &array {
        args.extend([format!("--dependency=afterok:{a}"), "--kill-on-invalid-dep=yes".into()]);
    }
    args.extend(common_options(opts));
    args.push(format!(
        "--wrap=exec {} gather {}",
        quote(&exe.to_string_lossy())?,
        quote(&sweep.dir().to_string_lossy())?
    ));
    let gather = id(sbatch(&args)?);
    Ok(Submitted { array, gather })
}

/// Whether Slurm still lists any of `jobs` (pending or running). `squeue` fails with
/// "Invalid job id" once every job has left the controller's memory: finished. Any other
/// failure (a busy controller timing out) is retried for a minute before it is an error, so
/// that running tasks are not reported as failed.
fn queued(jobs: &[&str]) -> Result<bool> {
    let mut last = String::new();
    for attempt in 0..30 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_secs(2));
        }
        let out = Command::new("squeue")
            .args(["-h", "-o", "%i", "-j", &jobs.join(",")])
            .output()
            .context("cannot run squeue")?;
        if out.status.success() {
            return Ok(!String::from_utf8_lossy(&out.stdout).trim().is_empty());
        }
        last = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if last.contains("Invalid job id") {
            return Ok(false);
        }
    }
    bail!("squeue keeps failing: {last}")
}

/// Waits until the jobs have left the queue (progress: finished run directories on disk), or
/// fails at the deadline, leaving the jobs running.
pub fn wait(sweep: &Sweep, jobs: &Submitted, todo: &[usize], deadline: Duration) -> Result<()> {
    let ids: Vec<&str> = jobs.array.iter().map(String::as_str).chain([jobs.gather.as_str()]).collect();
    let bar =
        indicatif::ProgressBar::with_draw_target(Some(todo.len() as u64), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg:>12} [{elapsed_precise}] {wide_bar} {pos}/{len}") {
        bar.set_style(style);
    }
    bar.set_message(format!("slurm {}", ids.join(",")));
    let start = Instant::now();
    while queued(&ids)? {
        bar.set_position(todo.iter().filter(|&&i| sweep.run_dir(i).is_dir()).count() as u64);
        if start.elapsed() > deadline {
            bar.abandon();
            bail!(
                "jobs {} still queued after {} s; they keep running: `squeue -j {}`, then rerun the sweep to gather",
                ids.join(","),
                deadline.as_secs(),
                ids.join(",")
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    bar.finish_and_clear();
    Ok(())
}

/// The tasks of `todo` without a finished run directory, with their Slurm log
/// (`logs/<array-id>_<j>.out`, j the array index that ran them) and that array task's state
/// (`squeue -t all`, while Slurm remembers the job).
pub fn failures(sweep: &Sweep, jobs: &Submitted, todo: &[usize], per_task: usize) -> Vec<Failure> {
    let Some(array) = &jobs.array else { return vec![] };
    let states = Command::new("squeue")
        .args(["-h", "-t", "all", "-o", "%K %T", "-j", array])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let k = per_task.max(1);
    todo.iter()
        .enumerate()
        .filter(|&(_, &i)| !sweep.run_dir(i).is_dir())
        .map(|(p, &i)| {
            let j = if k == 1 { i } else { p / k };
            let state = states
                .lines()
                .find_map(|l| l.split_once(' ').filter(|(a, _)| *a == j.to_string()).map(|(_, s)| s.to_string()))
                .unwrap_or_else(|| "no run directory".into());
            Failure {
                index: i,
                run_id: sweep.tasks[i].run_id.clone(),
                log: sweep.dir().join("logs").join(format!("{array}_{j}.out")),
                what: state,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_scripts_run_consecutive_slices_of_the_missing_tasks() {
        let d = super::super::spec::Description { seeds: (0..6).collect(), ..Default::default() };
        let sweep = Sweep::new("fig3", Path::new("/b/fig3"), Path::new("/r"), d).unwrap();
        let opts = Options { per_task: 2, cpus_per_task: 1, ..Default::default() };
        let s = script(&sweep, &[1, 2, 4, 5, 0], &opts, Path::new("/b/dlp-sweep")).unwrap();
        assert!(s.contains("#SBATCH --array=0-2\n"), "{s}");
        let body = format!(
            "tasks=(1 2 4 5 0)\nrc=0\nfor i in \"${{tasks[@]:$((SLURM_ARRAY_TASK_ID * 2)):2}}\"; do\n    /b/dlp-sweep task /r/fig3/sweeps/{} \"$i\" || rc=1\ndone\nexit $rc\n",
            sweep.id
        );
        assert!(s.ends_with(&body), "{s}");
        // Bash runs the slice the script names: array task 2 gets position 4 alone.
        let out = Command::new("bash")
            .args(["-c", "tasks=(1 2 4 5 0); SLURM_ARRAY_TASK_ID=2; echo ${tasks[@]:$((SLURM_ARRAY_TASK_ID * 2)):2}"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n");
    }

    #[test]
    fn indices_become_slurm_ranges() {
        assert_eq!(array_ranges(&[0, 1, 2, 3, 7, 9, 10, 11, 12]), "0-3,7,9-12");
        assert_eq!(array_ranges(&[5]), "5");
        assert_eq!(array_ranges(&[]), "");
    }

    #[test]
    fn the_script_runs_the_task_command_with_absolute_paths() {
        let d = super::super::spec::Description { seeds: vec![0, 1, 2], ..Default::default() };
        let sweep = Sweep::new("fig3", Path::new("/opt/bin/fig3"), Path::new("/r s"), d).unwrap();
        let opts = Options {
            parallel: 2,
            cpus_per_task: 4,
            partition: Some("gpu".into()),
            account: Some("lab".into()),
            time: Some("10:00".into()),
            ..Default::default()
        };
        let s = script(&sweep, &[0, 2], &opts, Path::new("/opt/bin/dlp-sweep")).unwrap();
        assert!(s.contains("#SBATCH --array=0,2%2\n#SBATCH --cpus-per-task=4\n"), "{s}");
        assert!(s.contains("#SBATCH --partition=gpu\n#SBATCH --account=lab\n#SBATCH --time=10:00\n"), "{s}");
        let dir = format!("'/r s/fig3/sweeps/{}'", sweep.id);
        assert!(s.ends_with(&format!("exec /opt/bin/dlp-sweep task {dir} \"$SLURM_ARRAY_TASK_ID\"\n")), "{s}");
    }
}
