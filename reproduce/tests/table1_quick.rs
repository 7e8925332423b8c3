//! `table1 --quick` end to end (synthetic stand-in digits, a 4-channel network): the files,
//! the paper's values beside ours, an interrupted run resumed from its checkpoints giving the
//! uninterrupted run's numbers, and bad flags refused with one line and no output.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn table1(out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_table1"))
        .args(["--quick", "--seed", "3", "--datasets", "dynamic", "--samplers", "dmala@0.2", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// The CSV's rows without the columns named in `skip` (wall-clock seconds differ between runs).
fn rows_without(path: &Path, skip: &[&str]) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            l.split(',').zip(&header).filter(|(_, h)| !skip.contains(h)).map(|(v, _)| v.to_string()).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn table1_quick_writes_its_files_and_resumes_exactly() {
    let straight = tempfile::tempdir().unwrap();
    let o = table1(straight.path(), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "curves.csv",
        "evals.csv",
        "ais.csv",
        "ais_weights.csv",
        "summary.json",
        "table1.svg",
        "table1.png",
        "meta.json",
    ] {
        assert!(straight.path().join(f).is_file(), "missing {f}");
    }
    assert_eq!(&std::fs::read(straight.path().join("fig9_dynamic_dmala.png")).unwrap()[..4], b"\x89PNG");
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(straight.path().join("summary.json")).unwrap()).unwrap();
    let row = &s["rows"][0];
    assert_eq!(row["paper"].as_f64(), Some(-79.54), "Table 1, dynamic MNIST, DMALA");
    for k in ["test_ll", "log_z", "log_z_std_err", "test_mean_log_p"] {
        assert!(row[k].as_f64().is_some_and(f64::is_finite), "{k}: {}", row[k]);
    }
    let test_ll = row["test_ll"].as_f64().unwrap();
    let parts = row["test_mean_log_p"].as_f64().unwrap() - row["log_z"].as_f64().unwrap();
    assert!((test_ll - parts).abs() < 1e-9, "test LL = mean log p̃ − log Ẑ");
    // The per-chain log-weights are the ones log Ẑ was made of: log Ẑ = logsumexp(log w) − log n.
    let log_w: Vec<f64> = rows_without(&straight.path().join("ais_weights.csv"), &[])
        .iter()
        .map(|r| r.last().unwrap().parse().unwrap())
        .collect();
    assert!(log_w.len() >= 2, "one log-weight per chain: {log_w:?}");
    let top = log_w.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = top + log_w.iter().map(|w| (w - top).exp()).sum::<f64>().ln();
    assert!((lse - (log_w.len() as f64).ln() - row["log_z"].as_f64().unwrap()).abs() < 1e-9);
    let ais = std::fs::read_to_string(straight.path().join("ais.csv")).unwrap();
    let (head, row1) = (ais.lines().next().unwrap(), ais.lines().nth(1).unwrap());
    let col = head.split(',').position(|h| h == "ais_accept").expect("an ais_accept column");
    let accept: f64 = row1.split(',').nth(col).unwrap().parse().unwrap();
    assert!(accept > 0.0 && accept <= 1.0, "a mean acceptance probability: {accept}");
    assert_eq!(rows_without(&straight.path().join("curves.csv"), &[]).len(), 4, "one row per iteration");
    assert_eq!(rows_without(&straight.path().join("evals.csv"), &[]).len(), 2, "validation AIS at 2 and 4");

    // Stop after 2 iterations, resume to 4: the same curves, evaluations and final AIS.
    let resumed = tempfile::tempdir().unwrap();
    let o = table1(resumed.path(), &["--iterations", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = table1(resumed.path(), &["--resume"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("resumed at iteration 2"));
    for (f, skip) in [("curves.csv", &["seconds"][..]), ("evals.csv", &[]), ("ais.csv", &[]), ("ais_weights.csv", &[])]
    {
        let (a, b) = (rows_without(&straight.path().join(f), skip), rows_without(&resumed.path().join(f), skip));
        // Rows before the interruption come back through the run's history JSON, read with
        // serde_json's `float_roundtrip` (exact; its default parser moved last bits): equal.
        assert_eq!(a, b, "{f}");
    }
}

/// Two data sets × two samplers: `summary.json` has one row per cell, each with its own data
/// set's paper value (the summary once kept only the first data set's rows).
#[test]
fn the_summary_has_a_row_for_every_data_set_and_sampler() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_table1"))
        .args(["--quick", "--iterations", "1", "--datasets", "static,dynamic", "--samplers", "dmala@0.2,dula@0.1"])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    let rows: Vec<(String, String, f64)> = s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (r["dataset"].as_str().unwrap().into(), r["sampler"].as_str().unwrap().into(), r["paper"].as_f64().unwrap())
        })
        .collect();
    let want = [
        ("static", "dmala(0.2)", -79.46),
        ("static", "dula(0.1)", -80.71),
        ("dynamic", "dmala(0.2)", -79.54),
        ("dynamic", "dula(0.1)", -81.29),
    ];
    assert_eq!(rows.len(), want.len(), "{rows:?}");
    for ((d, s, p), (wd, ws, wp)) in rows.iter().zip(want) {
        assert_eq!((d.as_str(), s.as_str(), *p), (wd, ws, wp));
    }
}

#[test]
fn table1_takes_any_ais_kernel_with_its_step_size() {
    let dir = tempfile::tempdir().unwrap();
    let o = table1(dir.path(), &["--ais-sampler", "dmala@0.2", "--iterations", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["ais_kernel"], "dmala@0.2");
    assert!(s["rows"][0]["log_z"].as_f64().is_some_and(f64::is_finite));
}

#[test]
fn the_validation_ais_kernel_is_chosen_apart_from_training_and_kept_on_resume() {
    let (own, gwg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = table1(own.path(), &["--iterations", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = table1(gwg.path(), &["--iterations", "2", "--val-ais-sampler", "gwg"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Training never sees the validation kernel: the same curves. The validation estimates
    // come from another kernel (GWG-1 instead of the training DMALA): other numbers.
    let curves = |d: &Path| rows_without(&d.join("curves.csv"), &["seconds"]);
    assert_eq!(curves(own.path()), curves(gwg.path()));
    let log_z = |d: &Path| rows_without(&d.join("evals.csv"), &[]).iter().map(|r| r[4].clone()).collect::<Vec<_>>();
    let (a, b) = (log_z(own.path()), log_z(gwg.path()));
    assert_eq!(a.len(), 1);
    assert_ne!(a, b, "the validation AIS ran the training sampler either way");
    let kernel = |d: &Path| -> Value {
        serde_json::from_str::<Value>(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap()
            ["val_ais_kernel"]
            .clone()
    };
    assert_eq!(kernel(own.path()), "the training sampler");
    assert_eq!(kernel(gwg.path()), "gwg");
    // Resuming with another validation kernel would mix two kinds of estimate in one
    // selection: refused with one line; with the same kernel it continues.
    let o = table1(gwg.path(), &["--resume"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("error: --resume: ") && err.contains("--val-ais-sampler"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let o = table1(gwg.path(), &["--resume", "--val-ais-sampler", "gwg"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(log_z(gwg.path()).len(), 2);
}

#[test]
fn table1_refuses_bad_flags_with_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for bad in [
        &["--scale", "gpu"][..],
        &["--datasets", "omniglot"],
        &["--samplers", "nope"],
        &["--final-ais", "10"],
        &["--device", "tpu"],
        &["--steps", "0"],
        &["--lr", "0"],
        &["--ais-sampler", "dmala@x"],
        &["--ais-sampler", "gwg,dmala"],
        &["--val-ais-sampler", "nope"],
        &["--val-ais-sampler", "dula,gwg"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_table1")).args(bad).arg("--out").arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1, "{bad:?}: {err}");
        assert!(!out.exists(), "{bad:?} left output");
    }
}
