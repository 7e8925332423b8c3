//! `001-bnn --quick` (the synthetic stroke digits, a stand-in for MNIST; seconds): every promised
//! file, the tidy curve CSV's shape, the same numbers for 1 and 2 threads, and bad flags as one
//! error line with exit code 2 and no output.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_001-bnn");

fn run(out: &Path, threads: &str) -> Value {
    let o =
        Command::new(BIN).args(["--quick", "--seed", "5", "--threads", threads, "--out"]).arg(out).output().unwrap();
    assert!(o.status.success(), "001-bnn: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn bnn_quick_writes_its_files_and_is_thread_independent() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let s = run(&a, "1");
    run(&b, "2");
    for f in ["curves.csv", "tuning.csv", "summary.json", "meta.json", "001-bnn.svg", "001-bnn.png"] {
        assert!(a.join(f).is_file(), "missing {f}");
    }
    let curves = std::fs::read_to_string(a.join("curves.csv")).unwrap();
    assert_eq!(curves, std::fs::read_to_string(b.join("curves.csv")).unwrap());
    // 4 samplers × 2 step sizes × 2 epochs, plus the header.
    assert_eq!(curves.lines().count(), 1 + 4 * 2 * 2);
    let d = &s["datasets"]["synthetic"];
    assert_eq!(d["stand_in"], true);
    assert_eq!((d["train"].as_u64(), d["validation"].as_u64(), d["test"].as_u64()), (Some(800), Some(100), Some(100)));
    for m in ["corv-sigmoid", "corv-arctan", "corv-softsign", "sgld-mirror"] {
        let r = &d["samplers"][m];
        let (ce, acc) = (r["final_test_ce"].as_f64().unwrap(), r["final_test_accuracy"].as_f64().unwrap());
        // Cross-entropy is positive; accuracy a fraction of the 100 test items.
        assert!(ce > 0.0 && ce.is_finite() && (0.0..=1.0).contains(&acc), "{m}: {r}");
        assert_eq!((acc * 100.0).round(), acc * 100.0);
        // A grid of two brackets nothing: whichever ε is chosen is at its edge, and said so.
        assert_eq!(r["step_size_at_grid_edge"], true, "{m}: {r}");
    }
    assert!(s["paper_claims"]["mirror"].as_str().unwrap().contains("slower"));
}

#[test]
fn an_interrupted_bnn_run_resumes_from_its_chains() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    run(&a, "2");
    let curves = std::fs::read_to_string(a.join("curves.csv")).unwrap();
    // 4 samplers × 2 step sizes, one cell each; "interrupt" by removing two.
    let cells = a.join("cells");
    let mut names: Vec<String> =
        std::fs::read_dir(&cells).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names.len(), 8, "{names:?}");
    for k in &names[3..5] {
        std::fs::remove_file(cells.join(k)).unwrap();
    }
    let o = Command::new(BIN)
        .args(["--quick", "--seed", "5", "--threads", "2", "--resume", "--out"])
        .arg(&a)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(a.join("curves.csv")).unwrap(), curves);
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(a.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["resumed_cells"], 6);
    // The chains' sampling seconds are kept in their cells: a run that reads every chain back
    // reports the same cost, to the bit, though its own wall time is a fraction of a second.
    let cost = |dir: &Path| {
        let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
        summary["datasets"]["synthetic"]["chain_step_seconds"].as_f64().unwrap()
    };
    let before = cost(&a);
    assert!(before > 0.0, "{before}");
    let o = Command::new(BIN).args(["--quick", "--seed", "5", "--resume", "--out"]).arg(&a).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(cost(&a).to_bits(), before.to_bits());
}

#[test]
fn bnn_bad_flags_exit_2_without_output() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [&["--quick", "--samplers", "corv-tanh"][..], &["--quick", "--epochs", "0"], &["--datasets", "cifar"]] {
        let out = dir.path().join("x");
        let o = Command::new(BIN).args(bad).arg("--out").arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error: ") && err.lines().count() == 1, "{bad:?}: {err}");
        assert!(!out.exists());
    }
}
