//! `dlp-sweep` end to end on `fig3 --quick` runs (a fraction of a second each): the local
//! engine, resume, the gather's numbers against the runs' own files, bad descriptions, failing
//! tasks, and the Slurm engine on a private one-node cluster (`scripts/slurm-up.sh`), whose
//! runs and gathered table must equal the local engine's.

use dlp_core::testing::require::Requirement;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// 2 samplers × 2 seeds of a small fig3.
const SWEEP: &[&str] =
    &["fig3", "--seeds", "0..2", "--quick", "--chains", "4", "--steps", "400", "--samplers", "dmala@0.4,gwg"];

fn sweep(results: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dlp-sweep"))
        .arg("run")
        .args(SWEEP)
        .arg("--results")
        .arg(results)
        .args(extra)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The run directories under `results/fig3`, sorted.
fn runs(results: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(results.join("fig3"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "sweeps")
        .collect();
    v.sort();
    v
}

/// `curves.csv` without the timing column (`seconds`, the last): what a seed fixes.
fn curves(run: &Path) -> String {
    let t = std::fs::read_to_string(run.join("curves.csv")).unwrap();
    t.lines().map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n").collect()
}

fn gather_dir(results: &Path) -> PathBuf {
    let sweeps: Vec<PathBuf> =
        std::fs::read_dir(results.join("fig3/sweeps")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(sweeps.len(), 1, "{sweeps:?}");
    sweeps[0].join("gather")
}

/// The gathered tidy table without its timing column.
fn gathered(results: &Path) -> String {
    curves(&gather_dir(results))
}

#[test]
fn local_sweep_runs_every_task_gathers_them_and_resumes_only_the_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().join("results");
    let out = sweep(&res, &["--jobs", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("4 tasks, 0 done, 4 to run"), "{}", text(&out));
    let runs0 = runs(&res);
    let names: Vec<String> = runs0.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(
        names[0].starts_with("samplers-dmala@0.4_seed-0_") && names[3].starts_with("samplers-gwg_seed-1_"),
        "{names:?}"
    );
    for r in &runs0 {
        for f in ["curves.csv", "summary.json", "meta.json", "fig3.svg", "sweep-task.json"] {
            assert!(r.join(f).is_file(), "{} lacks {f}", r.display());
        }
    }

    // The gathered table is the runs' rows with run_id, seed and the axis in front; the
    // summary's mean and sd are those of the two seeds' values, recomputed here from the runs.
    let g = gather_dir(&res);
    for f in ["curves.csv", "curves_summary.csv", "curves.svg", "curves.png", "summary.json", "meta.json"] {
        assert!(g.join(f).is_file(), "gather lacks {f}");
    }
    let tidy = std::fs::read_to_string(g.join("curves.csv")).unwrap();
    assert!(tidy.starts_with("run_id,seed,samplers,sampler,step,log_rmse,seconds\n"), "{tidy}");
    let rows_per_run = std::fs::read_to_string(runs0[0].join("curves.csv")).unwrap().lines().count() - 1;
    assert_eq!(tidy.lines().count() - 1, 4 * rows_per_run);
    let last = |run: &Path| -> f64 {
        let t = std::fs::read_to_string(run.join("curves.csv")).unwrap();
        t.lines().last().unwrap().split(',').nth(2).unwrap().parse().unwrap()
    };
    let (a, b) = (last(&runs0[0]), last(&runs0[1]));
    let summary = std::fs::read_to_string(g.join("curves_summary.csv")).unwrap();
    assert!(summary.starts_with("samplers,sampler,step,measure,n,mean,std,min,median,max\n"), "{summary}");
    let row = summary.lines().find(|l| l.starts_with("dmala@0.4,dmala(0.4),400,log_rmse,")).unwrap();
    let f: Vec<f64> = row.split(',').skip(4).map(|x| x.parse().unwrap()).collect();
    assert_eq!(f[0], 2.0);
    assert!((f[1] - (a + b) / 2.0).abs() < 1e-12, "{row} vs {a}, {b}");
    assert!((f[2] - (a - b).abs() / 2f64.sqrt()).abs() < 1e-12, "{row} vs {a}, {b}");
    let svg = std::fs::read_to_string(g.join("curves.svg")).unwrap();
    assert!(svg.contains("mean ± 1 sd over 2 seeds") && svg.contains("<polygon"), "no bands in the gathered figure");
    let gsum: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(g.join("summary.json")).unwrap()).unwrap();
    assert_eq!((gsum["tasks"].as_u64(), gsum["complete"].as_u64()), (Some(4), Some(4)));
    assert_eq!(gsum["files"]["curves.csv"]["key_columns"], serde_json::json!(["sampler", "step"]));

    // A crash half-way: two runs gone, one of them with a half-written directory left over.
    let before = curves(&runs0[3]);
    let kept = std::fs::metadata(runs0[0].join("sweep-task.json")).unwrap().modified().unwrap();
    std::fs::remove_dir_all(&runs0[1]).unwrap();
    std::fs::remove_dir_all(&runs0[3]).unwrap();
    let stale = runs0[3].with_extension("tmp");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("curves.csv"), "half").unwrap();
    let out = sweep(&res, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("4 tasks, 2 done, 2 to run"), "{}", text(&out));
    assert_eq!(runs(&res), runs0, "the rerun left other directories than the first run");
    assert_eq!(std::fs::metadata(runs0[0].join("sweep-task.json")).unwrap().modified().unwrap(), kept);
    assert_eq!(curves(&runs0[3]), before, "a rerun with the same seed gave other numbers");
    // Nothing left to do: a third run only gathers.
    let out = sweep(&res, &[]);
    assert!(text(&out).contains("4 tasks, 4 done, 0 to run"), "{}", text(&out));
}

#[test]
fn bad_sweep_descriptions_fail_with_one_line_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().join("results");
    for (extra, msg) in [
        (&["--stepz", "3"][..], "error: fig3 has no flag --stepz"),
        (&["--seeds", "3..3"], "error: --seeds 3..3: no seeds"),
        (&["--seeds", "5..2"], "error: --seeds 5..2: the range is reversed (5 > 2)"),
        (&["--seed", "1"], "error: --seed is set by the sweep"),
        (&["--steps", "100,,200"], "error: --steps 100,,200: an empty value in the list"),
    ] {
        let out = sweep(&res, extra);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
        assert!(err.starts_with(msg), "{extra:?}: {err}");
        assert!(!res.exists(), "{extra:?} wrote {}", res.display());
    }
}

#[test]
fn a_failing_task_is_reported_with_its_log_and_leaves_no_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().join("results");
    let out = sweep(&res, &["--samplers", "dmala@0.4,nosuch"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: 2 of 4 tasks failed"), "{err}");
    let line = err.lines().find(|l| l.contains("task 2 samplers-nosuch_seed-0_")).unwrap();
    assert!(line.contains("unknown sampler \"nosuch\""), "{line}");
    let log = PathBuf::from(line.rsplit_once("; log ").unwrap().1);
    assert!(std::fs::read_to_string(&log).unwrap().contains("unknown sampler"));
    let names: Vec<String> = runs(&res).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("samplers-dmala@0.4_seed-")), "{names:?}");
}

#[test]
fn shipped_sweep_files_expand_against_their_binaries() {
    let dir = tempfile::tempdir().unwrap();
    let files = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps")).unwrap();
    let mut n = 0;
    for f in files.map(|e| e.unwrap().path()) {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let out = Command::new(env!("CARGO_BIN_EXE_dlp-sweep"))
            .args(["run", &name, "--dry-run", "--config"])
            .arg(&f)
            .arg("--results")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {}", f.display(), text(&out));
        assert!(text(&out).contains(" tasks, 0 done, "), "{}", text(&out));
        n += 1;
    }
    assert!(n >= 1);
}

/// A stand-in binary (bash) with the `--seed`/`--out` contract: writes `t.csv` (x = seed,
/// y = seed²) into `--out`, then, for seeds ≥ 1 and unless FAKE_FAST is set, sleeps a minute,
/// so that a sweep over it can be killed at a known point.
const FAKE: &str = r#"#!/bin/bash
if [ "$1" = --sweep-list-flags ]; then printf 'out value\nseed value\n'; exit 0; fi
while [ $# -gt 0 ]; do case $1 in --seed) seed=$2; shift 2;; --out) out=$2; shift 2;; *) shift;; esac; done
mkdir -p "$out"; printf 'x,y\n%s,%s\n' "$seed" "$((seed * seed))" > "$out/t.csv"
if [ "$seed" -ge 1 ] && [ -z "${FAKE_FAST:-}" ]; then sleep 60; fi
"#;

/// Kills a process group when dropped: the test's deliberate crash, and the clean-up if the
/// test fails before it.
struct KillGroup(u32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.0)]).status();
    }
}

#[test]
fn a_sweep_killed_half_way_reruns_only_the_unfinished_tasks() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake");
    std::fs::write(&fake, FAKE).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let res = dir.path().join("results");
    let sweep = |fast: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_dlp-sweep"));
        c.args(["run", "fake", "--seeds", "0..4", "--jobs", "1", "--bin"]).arg(&fake).arg("--results").arg(&res);
        if fast {
            c.env("FAKE_FAST", "1");
        }
        c
    };
    // Its own process group, so that killing it takes the running task and its binary along,
    // as Ctrl-C or a node failure would.
    let mut child = sweep(false).process_group(0).stdout(std::process::Stdio::null()).spawn().unwrap();
    let group = KillGroup(child.id());
    let runs_of = |pat: &str| {
        std::fs::read_dir(res.join("fake")).map_or(vec![], |d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.contains(pat)).collect()
        })
    };
    let start = std::time::Instant::now();
    while runs_of("seed-1_").iter().all(|n| !n.ends_with(".tmp")) {
        assert!(start.elapsed().as_secs() < 60, "task 1 never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(group);
    child.wait().unwrap();
    let seed0 = runs_of("seed-0_");
    assert_eq!(seed0.len(), 1, "{seed0:?}");
    let seed0 = res.join("fake").join(&seed0[0]);
    let kept = std::fs::metadata(seed0.join("sweep-task.json")).unwrap().modified().unwrap();
    assert!(runs_of("seed-1_")[0].ends_with(".tmp"), "the killed run has no final directory");

    let out = sweep(true).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("fake: 4 tasks, 1 done, 3 to run"), "{}", text(&out));
    let all = runs_of("seed-");
    assert_eq!(all.len(), 4, "{all:?}");
    assert!(all.iter().all(|n| !n.ends_with(".tmp")), "{all:?}");
    assert_eq!(std::fs::metadata(seed0.join("sweep-task.json")).unwrap().modified().unwrap(), kept);
    let g = std::fs::read_dir(res.join("fake/sweeps")).unwrap().next().unwrap().unwrap().path().join("gather");
    let tidy = std::fs::read_to_string(g.join("t.csv")).unwrap();
    let ys: Vec<&str> = tidy.lines().skip(1).map(|l| l.rsplit(',').next().unwrap()).collect();
    assert_eq!(ys, ["0", "1", "4", "9"]);
}

/// Stops the private cluster whatever happens to the test, and keeps its directory (daemon
/// logs, sweep logs) when the test failed.
struct Cluster {
    dir: Option<tempfile::TempDir>,
    conf_dir: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let down = scripts().join("slurm-down.sh");
        let _ = Command::new("bash").env("PATH", sbin_path()).arg(down).arg(&self.conf_dir).status();
        if std::thread::panicking()
            && let Some(dir) = self.dir.take()
        {
            eprintln!("kept {} for its logs", dir.keep().display());
        }
    }
}

/// PATH plus /usr/sbin and /sbin, where Debian puts the Slurm daemons (an ordinary user's
/// PATH lacks them).
fn sbin_path() -> String {
    format!("{}:/usr/sbin:/sbin", std::env::var("PATH").unwrap_or_default())
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts")
}

#[test]
fn slurm_sweep_on_a_one_node_cluster_equals_the_local_sweep() {
    let have = |c: &str| {
        let out = Command::new("sh").env("PATH", sbin_path()).args(["-c", &format!("command -v {c}")]).output();
        out.is_ok_and(|o| o.status.success())
    };
    let missing: Vec<&str> =
        ["slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo"].into_iter().filter(|c| !have(c)).collect();
    // Required under DLP_REQUIRE_SLURM, CI or DLP_REQUIRE_ALL (dlp_core::testing::require).
    let slurm = Requirement::new(
        format!("Slurm ({} not on PATH)", missing.join(", ")),
        "apt-get install slurmctld slurmd slurm-client",
    )
    .switch("DLP_REQUIRE_SLURM");
    if !slurm.met(missing.is_empty()) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let cluster = dir.join("cluster");
    let up = Command::new("bash").env("PATH", sbin_path()).arg(scripts().join("slurm-up.sh")).arg(&cluster).output();
    let up = up.unwrap();
    let _guard = Cluster { dir: Some(tmp), conf_dir: cluster.clone() };
    // Exit 77: the daemons cannot bind loopback on this host (its hostname resolves elsewhere).
    // No package fixes that, so only DLP_REQUIRE_SLURM makes it a failure (`.ci/run` sets it
    // where the hostname is loopback); elsewhere, CI included, it is a skip that `.ci/run`
    // counts and prints.
    let host = Requirement::new(
        format!("a host where the one-node cluster can start ({})", String::from_utf8_lossy(&up.stderr).trim()),
        "map the hostname to 127.0.0.1 in /etc/hosts",
    )
    .own_switch_only("DLP_REQUIRE_SLURM");
    if !host.met(up.status.code() != Some(77)) {
        return;
    }
    assert!(
        up.status.success(),
        "slurm-up failed: {}; logs in {}",
        String::from_utf8_lossy(&up.stderr),
        cluster.display()
    );
    let conf = String::from_utf8_lossy(&up.stdout).trim().to_string();
    let slurm = |res: &Path, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_dlp-sweep"))
            .env("SLURM_CONF", &conf)
            .arg("run")
            .args(SWEEP)
            .args(["--engine", "slurm", "--deadline", "90", "--results"])
            .arg(res)
            .args(extra)
            .output()
            .unwrap()
    };

    // A partition Slurm does not have: refused by sbatch --test-only, nothing written.
    let bad = dir.join("bad");
    let out = slurm(&bad, &["--partition", "nope"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: sbatch refused the job:") && err.lines().count() == 1, "{err}");
    assert!(!bad.exists());

    let (s, l) = (dir.join("slurm"), dir.join("local"));
    let out = slurm(&s, &["--jobs", "2"]);
    let keep = || format!("{}; cluster logs in {}", text(&out), cluster.display());
    assert!(out.status.success(), "{}", keep());
    let script = std::fs::read_to_string(gather_dir(&s).with_file_name("sweep.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --array=0-3%2\n"), "{script}");
    let local = sweep(&l, &[]);
    assert!(local.status.success(), "{}", text(&local));
    let (rs, rl) = (runs(&s), runs(&l));
    let names = |v: &[PathBuf]| v.iter().map(|p| p.file_name().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(names(&rs), names(&rl));
    assert_eq!(rs.len(), 4);
    for (a, b) in rs.iter().zip(&rl) {
        assert_eq!(curves(a), curves(b), "{} differs between the engines", a.display());
    }
    assert_eq!(gathered(&s), gathered(&l));
    let logs = gather_dir(&s).with_file_name("logs");
    let n_logs = std::fs::read_dir(&logs).unwrap().count();
    assert_eq!(n_logs, 5, "4 task logs and the gather job's in {}", logs.display());
    // Packed: 3 runs per array task, so 2 array tasks; the same runs and table.
    let packed = dir.join("packed");
    let out = slurm(&packed, &["--per-task", "3"]);
    assert!(out.status.success(), "{}; cluster logs in {}", text(&out), cluster.display());
    let script = std::fs::read_to_string(gather_dir(&packed).with_file_name("sweep.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --array=0-1\n") && script.contains("tasks=(0 1 2 3)\n"), "{script}");
    let rp = runs(&packed);
    assert_eq!(names(&rp), names(&rl));
    for (a, b) in rp.iter().zip(&rl) {
        assert_eq!(curves(a), curves(b), "{} differs between packed Slurm and local", a.display());
    }
    assert_eq!(gathered(&packed), gathered(&l));
    let state = Command::new("sinfo").env("SLURM_CONF", &conf).args(["-h", "-o", "%T"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&state.stdout).trim(), "idle");
}
