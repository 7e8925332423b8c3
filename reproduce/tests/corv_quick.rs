//! `001-fig1` and `001-fig2` with `--quick`: every promised file is written, the numbers do not
//! depend on `--threads`, and facts that do not come from the sampler under test hold: the
//! exact means of the toys (spec §3.1), the transfer-operator CoRV bias of Gamma(0.5, 0.5) at
//! ε = 0.1 (spec §3.2 item 4: 0.0014401), and the exact zero bias of Beta(2, 0.5) with sigmoid.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn run(bin: &str, out: &Path, threads: &str, extra: &[&str]) -> Value {
    let o = Command::new(bin)
        .args(["--quick", "--seed", "4", "--threads", threads, "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{bin}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

fn files(out: &Path, name: &str, csvs: &[&str]) {
    for f in csvs.iter().map(|c| c.to_string()).chain(["summary.json", "meta.json"].map(String::from)) {
        assert!(out.join(&f).is_file(), "{name}: missing {f}");
    }
    assert!(out.join(format!("{name}.svg")).is_file() && out.join(format!("{name}.png")).is_file());
}

#[test]
fn fig1_quick_writes_its_files_and_is_thread_independent() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let s = run(env!("CARGO_BIN_EXE_001-fig1"), &a, "1", &[]);
    run(env!("CARGO_BIN_EXE_001-fig1"), &b, "2", &[]);
    files(&a, "001-fig1", &["tuning.csv", "density.csv"]);
    for f in ["tuning.csv", "density.csv"] {
        assert_eq!(std::fs::read(a.join(f)).unwrap(), std::fs::read(b.join(f)).unwrap(), "{f}: 1 vs 2 threads");
    }
    let targets = s["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 9);
    assert_eq!(targets[5]["target"], "Gamma(0.5, 0.5)");
    assert!((targets[6]["exact_mean"].as_f64().unwrap() + 2.3731800850).abs() < 1e-9);
    // 9 targets × 3 methods × 7 step sizes.
    let tuning = std::fs::read_to_string(a.join("tuning.csv")).unwrap();
    assert_eq!(tuning.lines().count(), 1 + 9 * 3 * 7);
}

#[test]
fn fig2_quick_states_the_exact_corv_bias() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(env!("CARGO_BIN_EXE_001-fig2"), dir.path(), "2", &[]);
    files(dir.path(), "001-fig2", &["runs.csv", "error.csv"]);
    let points = s["points"].as_array().unwrap();
    assert_eq!(points.len(), 3 * 3 * 3);
    let at = |target: &str, eps: f64| {
        points
            .iter()
            .find(|p| {
                p["target"] == target && p["method"] == "corv" && (p["step_size"].as_f64().unwrap() - eps).abs() < 1e-12
            })
            .unwrap()["corv_exact_bias"]
            .as_f64()
            .unwrap()
    };
    assert!((at("Gamma(0.5, 0.5)", 0.1) - 0.0014401).abs() < 2e-6);
    assert!(at("Beta(2, 0.5)", 0.1).abs() < 1e-6);
    // The first-order coefficient of spec §3.2 item 3.
    assert!((s["targets"][1]["corv_c1"].as_f64().unwrap() - 0.0140364).abs() < 1e-5);
}

#[test]
fn bad_flags_exit_2_without_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let o = Command::new(env!("CARGO_BIN_EXE_001-fig1")).args(["--steps", "3", "--out"]).arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!out.exists());
}

/// `001-nmf --quick` (synthetic stand-in): files, the same numbers for 1 and 2 threads (timings
/// aside), every sampler present; a missing ratings file is one error line and exit 2.
#[test]
fn nmf_quick_writes_its_files_and_is_thread_independent() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let s = run(env!("CARGO_BIN_EXE_001-nmf"), &a, "1", &[]);
    run(env!("CARGO_BIN_EXE_001-nmf"), &b, "2", &[]);
    files(&a, "001-nmf", &["tuning.csv", "curves.csv"]);
    assert_eq!(std::fs::read(a.join("curves.csv")).unwrap(), std::fs::read(b.join("curves.csv")).unwrap());
    assert_eq!(s["data"], "synthetic Poisson-NMF stand-in");
    for m in ["corv-exp", "corv-softplus", "corv-icll", "sgld-mirror", "sgrld"] {
        assert!(s["methods"][m]["final_test_rmse"].as_f64().unwrap().is_finite(), "{m}");
        // `--quick` tries two step sizes, so the chosen one is at the grid's edge.
        assert_eq!(s["methods"][m]["step_size_at_grid_edge"], true, "{m}");
    }
    let out = dir.path().join("c");
    let o = Command::new(env!("CARGO_BIN_EXE_001-nmf"))
        .args(["--data", "/nonexistent.csv", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
    assert!(!out.exists());
}
