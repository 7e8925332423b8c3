//! `table2` and `table4` with `--quick` (a synthetic stand-in, seconds): every file, the
//! tidy curve CSV's shape, the summary's rows, and the same numbers at 1 and 2 threads.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn run(bin: &str, out: &Path, extra: &[&str]) -> Value {
    let o = Command::new(bin).args(["--quick", "--seed", "3", "--out"]).arg(out).args(extra).output().unwrap();
    assert!(o.status.success(), "{bin} failed: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

fn check(bin: &str, name: &str, columns: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let s = run(bin, &a, &["--threads", "1"]);
    let mut files: Vec<String> =
        std::fs::read_dir(&a).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    let want = [
        "cells",
        "curves.csv",
        "meta.json",
        "summary.json",
        "table.md",
        &format!("{name}.png"),
        &format!("{name}.svg"),
    ];
    let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(files, want);
    let rows = s["rows"].as_array().unwrap();
    let got: Vec<&str> = rows.iter().map(|r| r["column"].as_str().unwrap()).collect();
    assert_eq!(got, columns);
    for r in rows {
        assert_eq!(r["stand_in"], true);
        let (ll, rmse) = (r["train_ll"].as_f64().unwrap(), r["test_rmse"].as_f64().unwrap());
        // −MSE of predictions in (0, 1) against 0/1 labels lies in (−1, 0); RMSE in (0, 1).
        assert!(ll < 0.0 && ll > -1.0 && rmse > 0.0 && rmse < 1.0, "{r}");
    }
    // 2 seeds × columns × (40 / 5 + 1) checkpoints, plus the header.
    let csv = std::fs::read_to_string(a.join("curves.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * columns.len() * 9);
    assert!(std::fs::read_to_string(a.join("table.md")).unwrap().contains("synthetic stand-in"));
    let t = run(bin, &b, &["--threads", "2"]);
    for (x, y) in rows.iter().zip(t["rows"].as_array().unwrap()) {
        assert_eq!((&x["train_ll"], &x["test_rmse"]), (&y["train_ll"], &y["test_rmse"]));
    }
}

#[test]
fn table2_quick_writes_every_file_and_is_thread_independent() {
    check(env!("CARGO_BIN_EXE_table2"), "table2", &["gibbs", "gwg", "dula α=0.1", "dmala α=0.1"]);
}

#[test]
fn table4_quick_writes_every_file_and_is_thread_independent() {
    check(env!("CARGO_BIN_EXE_table4"), "table4", &["B=10", "B=50", "full"]);
}

#[test]
fn table4_can_leave_out_the_full_batch_column() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(env!("CARGO_BIN_EXE_table4"), &dir.path().join("a"), &["--no-full"]);
    let got: Vec<&str> = s["rows"].as_array().unwrap().iter().map(|r| r["column"].as_str().unwrap()).collect();
    assert_eq!(got, ["B=10", "B=50"]);
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("a/meta.json")).unwrap()).unwrap();
    assert_eq!(meta["config"]["full_batch_column"], false, "{meta}");
}

#[test]
fn an_interrupted_table_resumes_from_its_cells() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_table2");
    let a = dir.path().join("a");
    let full = run(bin, &a, &[]);
    let cells = a.join("cells");
    // 4 columns × 2 seeds; "interrupt" by removing two cells (one seed of DMALA and of Gibbs).
    assert_eq!(std::fs::read_dir(&cells).unwrap().count(), 8);
    for k in ["synthetic_dmala_0.1__full_s4.json", "synthetic_gibbs_full_s3.json"] {
        std::fs::remove_file(cells.join(k)).unwrap();
    }
    let resumed = run(bin, &a, &["--resume"]);
    // Equal in every number but the recomputed cells' timings.
    let untimed = |s: &serde_json::Value| {
        let mut rows = s["rows"].clone();
        rows.as_array_mut().unwrap().iter_mut().for_each(|r| r["sampler_seconds_mean"] = serde_json::Value::Null);
        rows
    };
    assert_eq!(untimed(&resumed), untimed(&full), "a resumed table equals the uninterrupted one");
    let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(a.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["resumed_cells"], 6);
    // The cells are what a resumed run reads: a changed final point shows in the summary.
    let path = cells.join("synthetic_gwg_full_s3.json");
    let mut cell: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let points = cell["value"].as_array_mut().unwrap();
    let last = points.len() - 1;
    points[last]["train_ll"] = serde_json::json!(-0.5);
    std::fs::write(&path, cell.to_string()).unwrap();
    let edited = run(bin, &a, &["--resume"]);
    let gwg = |s: &serde_json::Value| s["rows"][1]["train_ll"].as_f64().unwrap();
    assert_ne!(gwg(&edited), gwg(&full));
    // Other arguments in the same directory: one error line, exit 2, nothing rewritten.
    let before = std::fs::read_to_string(a.join("summary.json")).unwrap();
    let o = Command::new(bin)
        .args(["--quick", "--seed", "3", "--steps", "20", "--resume", "--out"])
        .arg(&a)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.starts_with("error: --resume: ") && e.contains("\"steps\":40") && e.lines().count() == 1, "{e}");
    assert_eq!(std::fs::read_to_string(a.join("summary.json")).unwrap(), before);
}

#[test]
fn bad_arguments_are_one_error_line() {
    let o = Command::new(env!("CARGO_BIN_EXE_table4")).args(["--quick", "--batch-sizes", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.starts_with("error: --batch-sizes: 0 is not in 1..=300") && e.lines().count() == 1, "{e}");
    let o = Command::new(env!("CARGO_BIN_EXE_table2")).args(["--datasets", "mnist"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown data set \"mnist\""));
    // The flags both tables share (`bnn::TableArgs`) are checked alike, before any output.
    let dir = tempfile::tempdir().unwrap();
    for (bin, flag) in [(env!("CARGO_BIN_EXE_table2"), "--hidden"), (env!("CARGO_BIN_EXE_table4"), "--every")] {
        let out = dir.path().join(flag);
        let o = Command::new(bin).args(["--quick", flag, "0", "--out"]).arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bin} {flag} 0");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.starts_with("error: --hidden, --chains, --steps, --every, --seeds must be positive")
                && e.lines().count() == 1,
            "{e}"
        );
        assert!(!out.exists(), "{bin} {flag} 0 wrote {}", out.display());
    }
}

#[test]
fn table2_on_candle_gives_the_native_curves_and_bad_backends_are_one_line() {
    // f64 on both paths: f and ∇f agree to ~1e−13 (dlp-tensor's TensorBnn tests), so every
    // accept/reject and every proposal is the same unless a uniform draw falls within ~1e−12
    // of a threshold: with ~1e5 draws here a chance below 1e−6 (and the seed is fixed).
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_table2");
    let a = run(bin, &dir.path().join("a"), &["--precision", "f64"]);
    let b = run(bin, &dir.path().join("b"), &["--precision", "f64", "--device", "cpu"]);
    assert_eq!((a["backend"].as_str(), b["backend"].as_str()), (Some("native"), Some("candle cpu")));
    assert_eq!(a["precision"], "f64");
    for (x, y) in a["rows"].as_array().unwrap().iter().zip(b["rows"].as_array().unwrap()) {
        for k in ["train_ll", "test_rmse"] {
            let (u, v) = (x[k].as_f64().unwrap(), y[k].as_f64().unwrap());
            assert!((u - v).abs() < 1e-9, "{} {k}: native {u} vs candle {v}", x["column"]);
        }
    }
    for (flag, value, want) in [
        ("--device", "tpu", "error: --device: unknown device \"tpu\""),
        ("--precision", "f16", "error: --precision: \"f16\" is not f32 or f64"),
    ] {
        let o = Command::new(bin).args(["--quick", flag, value]).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.starts_with(want) && e.lines().count() == 1, "{e}");
    }
}
