//! Kill-and-resume tests: every resumable run (`table2 --resume`, `table4 --resume`, `fig5
//! --resume`, `table1 --resume`'s training checkpoints, `train-mlm --resume` and a local
//! `dlp-sweep run`) is run once uninterrupted, then again in the same directory under SIGKILL
//! (to its whole process group): first inside a seeded checkpoint write, then at a seeded time
//! during the work, and (the runs of a second or less) once more inside a write and at a time;
//! after each kill the same command is rerun, and the final files must equal the uninterrupted
//! run's byte for byte, apart from the fields each test names (wall-clock times and the count
//! of what a resumed process read back).
//!
//! How a kill lands inside a write: `dlp_core::io::atomic_write`'s test hook
//! ([`dlp_core::io::STALL_WRITE_ENV`]) makes the N-th matching write of a process write half
//! its bytes to the temporary file, create a marker file and stall; the test sees the marker and
//! kills the process group. A writer that wrote in place, or a resume that read a half-written
//! checkpoint or kept rows past its checkpoint, fails here (the torn file is unreadable, or
//! the files differ).
//!
//! The kill points are drawn from a fixed seed per run: which write is hit is deterministic;
//! a timed kill comes a seeded fraction (5–30 %) of the uninterrupted run's work time after
//! the run's first output line (where it lands in the work depends on the machine's load; what
//! is checked does not). Each test also checks that its kills landed.

use dlp_core::io::{STALL_WRITE_ENV, STALL_WRITE_MATCH_ENV};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// SplitMix64: the seeded kill points (no dependency on a generator's version).
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        dlp_core::testing::splitmix64(&mut self.0)
    }
    /// Uniform in `lo..=hi`.
    fn int(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
    /// Uniform in `[lo, hi)`.
    fn frac(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One resumable command and what its comparison leaves out.
struct Job<'a> {
    /// The binary.
    program: &'a str,
    /// Its arguments, the same for every run (including `--resume`, a no-op on an empty
    /// directory, so that recorded command lines agree); `{dir}` stands for `dir`.
    args: Vec<String>,
    /// The output directory (`--out` or `--results`): every run writes here, the
    /// uninterrupted run's files are moved to `<dir>.ref` first, so recorded paths agree.
    dir: PathBuf,
    /// The checkpoint files a kill inside a write aims at (a substring of their paths).
    stall_match: &'a str,
    /// The first kill stalls in the N-th such write of the run from nothing, N seeded in
    /// this range (early enough that most of the work is still ahead).
    stall_writes: std::ops::RangeInclusive<usize>,
    /// Two more kills (a write, a time) before the last resume: for the runs that take a
    /// second or less in a debug build.
    more_cycles: bool,
    /// Seed of the kill points.
    seed: u64,
    /// Keys left out of every JSON file, wherever they are (wall time and resume bookkeeping).
    json_keys: &'a [&'a str],
    /// Columns left out of every CSV file (wall time).
    csv_columns: &'a [&'a str],
    /// Rows left out of every CSV file: those whose column (first) holds the value (second),
    /// e.g. a tidy summary's rows of a wall-time measure.
    csv_rows: &'a [(&'a str, &'a str)],
    /// File or directory names left out entirely, wherever they are.
    skip: &'a [&'a str],
}

/// What the kill cycles did, for the checks that they did something.
#[derive(Debug, Default)]
struct Kills {
    /// Kills that landed inside a hooked checkpoint write.
    in_write: usize,
    /// Timed kills that landed before the process finished.
    timed: usize,
    /// Runs that finished before their timed kill.
    finished_early: usize,
}

fn command(job: &Job, log: &Path) -> Command {
    let mut cmd = Command::new(job.program);
    cmd.args(job.args.iter().map(|a| a.replace("{dir}", &job.dir.to_string_lossy())));
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    cmd.stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log);
    // Its own process group: the kill reaches the sweep's task processes too, as a cancelled
    // job or a killed terminal would.
    cmd.process_group(0);
    cmd
}

/// SIGKILL to the child's whole process group, then reap it. True if the signal killed it
/// (false: it had exited successfully just before).
fn kill(child: &mut Child, log: &Path) -> bool {
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill(2) on the process group this test created (pgid = the child's pid, which
    // stays reserved until the wait below reaps it).
    let rc = unsafe { libc::kill(-pid, libc::SIGKILL) };
    assert_eq!(rc, 0, "kill(-{pid}, SIGKILL) failed");
    let status = child.wait().unwrap();
    // Grandchildren (a sweep's tasks) die with the group; give the kernel a moment to take
    // them down before the next run reads the directory they wrote to.
    std::thread::sleep(Duration::from_millis(50));
    match std::os::unix::process::ExitStatusExt::signal(&status) {
        Some(libc::SIGKILL) => true,
        _ => {
            assert!(status.success(), "failed ({status}):\n{}", log_text(log));
            false
        }
    }
}

fn log_text(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// The log's length: a run's first output line (every binary prints one when its work
/// starts, after loading data) shows as growth (Rust's stdout is line-buffered).
fn log_len(log: &Path) -> u64 {
    std::fs::metadata(log).map_or(0, |m| m.len())
}

/// Runs `job` to completion; returns the seconds from its first output line to its end (its
/// work, without the start-up).
fn run_through(job: &Job, log: &Path) -> f64 {
    let before = log_len(log);
    let mut child = command(job, log).spawn().unwrap();
    let mut first = None;
    loop {
        if first.is_none() && log_len(log) > before {
            first = Some(Instant::now());
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{} failed ({status}):\n{}", job.program, log_text(log));
            return first.map_or(0.0, |t| t.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// One run under a kill inside its `n`-th hooked write. True if the kill landed (false: the
/// run made fewer such writes and finished).
fn kill_in_write(job: &Job, n: usize, log: &Path) -> bool {
    let marker = job.dir.with_extension("stalled");
    let _ = std::fs::remove_file(&marker);
    let mut cmd = command(job, log);
    cmd.env(STALL_WRITE_ENV, format!("{n}:{}", marker.display())).env(STALL_WRITE_MATCH_ENV, job.stall_match);
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if marker.exists() {
            assert!(kill(&mut child, log), "a stalled write exited");
            let target = std::fs::read_to_string(&marker).unwrap_or_default();
            assert!(target.contains(job.stall_match), "stalled in {target}");
            eprintln!("killed inside write {n} of {target}");
            std::fs::remove_file(&marker).unwrap();
            return true;
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{} failed ({status}):\n{}", job.program, log_text(log));
            return false;
        }
        assert!(Instant::now() < deadline, "{}: no stall and no exit in 300 s", job.program);
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// One run killed `delay` seconds after its first output line. True if the kill landed
/// (false: it finished first).
fn kill_after(job: &Job, delay: f64, log: &Path) -> bool {
    let before = log_len(log);
    let mut child = command(job, log).spawn().unwrap();
    let mut deadline = None;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{} failed ({status}):\n{}", job.program, log_text(log));
            return false;
        }
        if deadline.is_none() && log_len(log) > before {
            deadline = Some(Instant::now() + Duration::from_secs_f64(delay));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return kill(&mut child, log);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The uninterrupted run, then kill/resume cycles, then the comparison. Returns what the
/// cycles did.
fn check(job: &Job) -> Kills {
    let log = job.dir.with_extension("log");
    let reference = job.dir.with_extension("ref");
    let work = run_through(job, &log);
    std::fs::rename(&job.dir, &reference).unwrap();

    let mut draws = Draws(job.seed);
    let mut kills = Kills::default();
    let timed = |draws: &mut Draws, kills: &mut Kills| {
        // A seeded fraction of the uninterrupted run's work (after its first output line). At
        // most 0.12 of it: the resumed run redoes only part of the work, and on a shared machine
        // its speed can double between the two runs (a kill at 0.3 once came after the end).
        if kill_after(job, work * draws.frac(0.02, 0.12), &log) {
            kills.timed += 1;
        } else {
            kills.finished_early += 1;
        }
    };
    // 1. Inside the N-th checkpoint write of the run from nothing (N seeded; few enough
    //    that most of the work is still ahead).
    if kill_in_write(job, draws.int(*job.stall_writes.start(), *job.stall_writes.end()), &log) {
        kills.in_write += 1;
    }
    // 2. At a seeded time during the resumed run's work.
    timed(&mut draws, &mut kills);
    // 3. (Cheap runs) inside the next resumed run's first checkpoint write, and at a time again.
    if job.more_cycles {
        if kill_in_write(job, 1, &log) {
            kills.in_write += 1;
        }
        timed(&mut draws, &mut kills);
    }
    // 4. Resume to the end.
    run_through(job, &log);

    compare_trees(job, &reference, &job.dir);
    eprintln!("{}: uninterrupted work {work:.1} s; {kills:?}", job.program);
    kills
}

/// Every file below `root`, relative and `/`-separated, sorted; a killed atomic write's
/// orphaned temporary file (`.tmp…`, `.<name>.<pid>.tmp.<ext>`) is left out: it is never read,
/// and the file it would have replaced is whole.
fn files(root: &Path, skip: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if rel.split('/').any(|c| skip.contains(&c)) {
                continue;
            }
            if name.starts_with(".tmp") || (name.starts_with('.') && name.contains(".tmp.")) {
                continue;
            }
            if p.is_dir() { stack.push(p) } else { out.push(rel) }
        }
    }
    out.sort();
    out
}

/// `v` without the keys in `keys`, at any depth.
fn strip(v: &mut Value, keys: &[&str]) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !keys.contains(&k.as_str()));
            m.values_mut().for_each(|x| strip(x, keys));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| strip(x, keys)),
        _ => {}
    }
}

/// A CSV text without the columns named in `columns` and the rows `rows` name (plain CSV:
/// our writers quote nothing that holds a comma in these files).
fn strip_csv(text: &str, columns: &[&str], rows: &[(&str, &str)]) -> String {
    let mut lines = text.lines();
    let Some(head) = lines.next() else { return String::new() };
    let names: Vec<&str> = head.split(',').collect();
    let dropped = |l: &str| l.split(',').zip(&names).any(|(v, h)| rows.iter().any(|(col, val)| col == h && *val == v));
    std::iter::once(head)
        .chain(lines.filter(|l| !dropped(l)))
        .map(|l| {
            l.split(',').zip(&names).filter(|(_, h)| !columns.contains(h)).map(|(v, _)| v).collect::<Vec<_>>().join(",")
                + "\n"
        })
        .collect()
}

/// The same files, equal byte for byte, or (JSON, CSV) equal after leaving out the named keys
/// and columns.
fn compare_trees(job: &Job, want: &Path, got: &Path) {
    let (a, b) = (files(want, job.skip), files(got, job.skip));
    assert_eq!(a, b, "the resumed run's files differ from the uninterrupted run's");
    assert!(!a.is_empty());
    for rel in &a {
        let (x, y) = (std::fs::read(want.join(rel)).unwrap(), std::fs::read(got.join(rel)).unwrap());
        if x == y {
            continue;
        }
        let (sx, sy) = (String::from_utf8_lossy(&x), String::from_utf8_lossy(&y));
        if rel.ends_with(".json") {
            let (mut vx, mut vy): (Value, Value) = (
                serde_json::from_str(&sx).unwrap_or_else(|e| panic!("{rel} (uninterrupted): {e}")),
                serde_json::from_str(&sy).unwrap_or_else(|e| panic!("{rel} (resumed): {e}")),
            );
            strip(&mut vx, job.json_keys);
            strip(&mut vy, job.json_keys);
            assert_eq!(vx.to_string(), vy.to_string(), "{rel} differs beyond {:?}", job.json_keys);
        } else if rel.ends_with(".csv") {
            assert_eq!(
                strip_csv(&sx, job.csv_columns, job.csv_rows),
                strip_csv(&sy, job.csv_columns, job.csv_rows),
                "{rel} differs beyond the columns {:?} and rows {:?}",
                job.csv_columns,
                job.csv_rows
            );
        } else {
            panic!("{rel} differs between the uninterrupted and the resumed run ({} vs {} bytes)", x.len(), y.len());
        }
    }
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// `meta.json`'s wall time and start time, and its count of cells read back (a resumed
/// process reads some, by design).
const META_KEYS: [&str; 3] = ["wall_seconds", "started_unix", "resumed_cells"];

/// table2/table4: cells (one per data set × column × seed) hold each checkpoint's sampler
/// seconds (`seconds`), which `curves.csv` (`sampler_seconds`) and `summary.json`
/// (`sampler_seconds_mean`) carry on; a kill lands in a cell's write.
fn bnn_table(program: &str, seed: u64) {
    let root = tempfile::tempdir().unwrap();
    let keys = [&META_KEYS[..], &["seconds", "sampler_seconds_mean"]].concat();
    let job = Job {
        program,
        args: args(&["--quick", "--seed", "3", "--threads", "1", "--resume", "--out", "{dir}"]),
        dir: root.path().join("run"),
        stall_match: "/cells/",
        stall_writes: 1..=2,
        more_cycles: true,
        seed,
        json_keys: &keys,
        csv_columns: &["sampler_seconds"],
        csv_rows: &[],
        skip: &[],
    };
    let kills = check(&job);
    assert!(kills.in_write >= 1 && kills.timed >= 1, "{kills:?}");
}

#[test]
fn table2_killed_and_resumed_equals_the_uninterrupted_run() {
    bnn_table(env!("CARGO_BIN_EXE_table2"), 0x7AB2);
}

#[test]
fn table4_killed_and_resumed_equals_the_uninterrupted_run() {
    bnn_table(env!("CARGO_BIN_EXE_table4"), 0x7AB4);
}

/// fig5: panels a/b with two samplers, one cell per (sampler, K) run; the records carry the
/// run's wall time (`seconds`, `sampler_seconds`, in curves.csv and summary.json), and panel b's
/// axis is that time, so the figure is left out.
#[test]
fn fig5_killed_and_resumed_equals_the_uninterrupted_run() {
    let root = tempfile::tempdir().unwrap();
    let keys = [&META_KEYS[..], &["seconds", "sampler_seconds", "data_seconds"]].concat();
    let job = Job {
        program: env!("CARGO_BIN_EXE_fig5"),
        args: args(&[
            "--quick",
            "--seed",
            "3",
            "--skip-c",
            "--samplers",
            "gwg,dmala@0.2",
            "--resume",
            "--out",
            "{dir}",
        ]),
        dir: root.path().join("run"),
        stall_match: "/cells/",
        stall_writes: 1..=2,
        more_cycles: true,
        seed: 0x7AB5,
        json_keys: &keys,
        csv_columns: &["seconds", "sampler_seconds"],
        csv_rows: &[],
        skip: &["fig5.svg", "fig5.png"],
    };
    let kills = check(&job);
    assert!(kills.in_write >= 1 && kills.timed >= 1, "{kills:?}");
}

/// table1: one (data set, sampler) cell of 4 iterations, validated and checkpointed every 2
/// (about 3 s of start-up and 3 s of work in a debug build). Each validation writes, under
/// `checkpoints/`, the kept best model (it improves at both), the history JSON, then the
/// trainer's checkpoint; the first kill lands in write 5 or 6 (iteration 4's history or
/// checkpoint): the run resumes from iteration 2's checkpoint, with the history a step ahead
/// of it when the kill hit the checkpoint. Wall time: `seconds`
/// (curves.csv, the history JSON), `train_seconds` and `final_ais_seconds` (summary.json).
#[test]
fn table1_killed_and_resumed_equals_the_uninterrupted_run() {
    let root = tempfile::tempdir().unwrap();
    let keys = [&META_KEYS[..], &["seconds", "train_seconds", "final_ais_seconds"]].concat();
    let job = Job {
        program: env!("CARGO_BIN_EXE_table1"),
        args: args(&[
            "--quick",
            "--seed",
            "3",
            "--datasets",
            "dynamic",
            "--samplers",
            "dmala@0.2",
            "--resume",
            "--out",
            "{dir}",
        ]),
        dir: root.path().join("run"),
        stall_match: "/checkpoints/",
        stall_writes: 5..=6,
        more_cycles: false,
        seed: 0x7AB3,
        json_keys: &keys,
        csv_columns: &["seconds"],
        csv_rows: &[],
        skip: &[],
    };
    let kills = check(&job);
    assert!(kills.in_write >= 1 && kills.timed >= 1, "{kills:?}");
}

/// train-mlm: 8 steps (about 0.4 s each in a debug build) checkpointed every 2, held-out loss
/// every 4. Each checkpoint writes the loss history, then `checkpoint.safetensors`; the first
/// kill lands in write 3 or 4 (step 4's history or checkpoint): the run resumes from step 2,
/// with the history ahead of the checkpoint when the kill hit the checkpoint.
/// Left out: `summary.json`'s `seconds`, `seconds_per_step` (wall time) and `resumed_from`
/// (the step this process started at).
#[test]
fn train_mlm_killed_and_resumed_equals_the_uninterrupted_run() {
    let root = tempfile::tempdir().unwrap();
    let keys = [&META_KEYS[..], &["seconds", "seconds_per_step", "resumed_from"]].concat();
    let job = Job {
        program: env!("CARGO_BIN_EXE_train-mlm"),
        args: args(&[
            "--quick",
            "--seed",
            "1",
            "--steps",
            "8",
            "--eval-every",
            "4",
            "--checkpoint-every",
            "2",
            "--resume",
            "--out",
            "{dir}",
        ]),
        dir: root.path().join("run"),
        stall_match: "/model/",
        stall_writes: 3..=4,
        more_cycles: false,
        seed: 0x71A1,
        json_keys: &keys,
        csv_columns: &[],
        csv_rows: &[],
        skip: &[],
    };
    let kills = check(&job);
    assert!(kills.in_write >= 1 && kills.timed >= 1, "{kills:?}");
}

/// A local sweep (table4 --quick --no-full, 2 batch sizes × 2 seeds, 2 tasks at a time, each
/// a fraction of a second): the whole process group (the sweep and its task processes) is
/// killed, once inside a task's commit (the write of `sweep-task.json`, just before
/// `<run-id>.tmp/` is renamed into place). Left out, besides table4's own wall-time fields:
/// the logs (console output with timings), `sweep-task.json`'s `wall_seconds`, the gather's
/// `rows..sampler_seconds_mean` statistics and `sampler_seconds` rows of its tidy summary, and
/// its figure `curves.{svg,png}`, one of whose panels plots the sampler seconds.
#[test]
fn a_local_sweep_killed_and_rerun_equals_the_uninterrupted_one() {
    let root = tempfile::tempdir().unwrap();
    let keys = [&META_KEYS[..], &["seconds", "sampler_seconds_mean", "rows..sampler_seconds_mean"]].concat();
    let job = Job {
        program: env!("CARGO_BIN_EXE_dlp-sweep"),
        args: args(&[
            "run",
            "table4",
            "--seeds",
            "0..2",
            "--quick",
            "--no-full",
            "--batch-sizes",
            "10,50",
            "--jobs",
            "2",
            "--results",
            "{dir}",
        ]),
        dir: root.path().join("results"),
        stall_match: "sweep-task.json",
        stall_writes: 1..=1,
        more_cycles: true,
        seed: 0x5EE9,
        json_keys: &keys,
        csv_columns: &["sampler_seconds"],
        csv_rows: &[("measure", "sampler_seconds")],
        skip: &["logs", "curves.svg", "curves.png"],
    };
    let kills = check(&job);
    assert!(kills.in_write >= 1 && kills.timed >= 1, "{kills:?}");
}
