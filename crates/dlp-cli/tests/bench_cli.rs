//! `dlp bench` end to end on tiny configurations: the JSON-lines records the peer harness
//! joins on (schema fields, thread-count identity), and the error rows (one `error:` line,
//! exit 2, nothing on stdout, no output file).

use serde_json::Value;
use std::process::{Command, Output};

fn dlp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dlp")).arg("bench").args(args).output().unwrap()
}

fn records(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn ising_records_carry_the_join_keys_and_identical_threads() {
    let out = dlp(&[
        "--L",
        "5",
        "--B",
        "3",
        "--sigmas",
        "0.1",
        "--threads",
        "1,2",
        "--samplers",
        "dula,dmala",
        "--no-rbm",
        "--budget",
        "0.01",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&out);
    assert_eq!(recs.len(), 4, "2 samplers × 2 thread counts");
    for r in &recs {
        for key in ["impl", "sampler", "model", "L", "dims", "chains", "sigma", "threads", "seconds_per_step"] {
            assert!(r.get(key).is_some(), "missing {key} in {r}");
        }
        assert_eq!(r["model"], "ising");
        assert_eq!(r["dims"], 25);
        assert!(r["seconds_per_step"].as_f64().unwrap() > 0.0);
        if r["threads"] == 2 {
            assert_eq!(r["identical_to_first_threads"], true, "{r}");
        }
    }
}

#[test]
fn rbm_records_say_how_many_steps_were_burnt_in() {
    let out = dlp(&[
        "--rbm-only",
        "--rbm-chains",
        "2",
        "--rbm-samplers",
        "dmala-f32",
        "--rbm-burn-in",
        "2",
        "--threads",
        "1",
        "--budget",
        "0.01",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&out);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["sampler"], "dmala-f32");
    assert_eq!(recs[0]["burn_in"], 2);
    assert_eq!(recs[0]["dims"], 784);
}

#[test]
fn bnn_records_carry_the_shape() {
    // One thread only: each BNN step is ~0.1 s of CPU (the thread-count identity of the BNN
    // runs is tested by reproduce/tests/bnn_quick.rs on a smaller network).
    let out = dlp(&["--bnn-only", "--bnn-samplers", "dmala", "--threads", "1", "--budget", "0.001"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records(&out);
    assert_eq!(recs.len(), 2, "f32 and f64 by default");
    for (r, precision) in recs.iter().zip(["f32", "f64"]) {
        assert_eq!(
            (r["model"].as_str(), r["dims"].as_u64(), r["chains"].as_u64()),
            (Some("bnn"), Some(1501), Some(50))
        );
        assert_eq!(r["precision"], precision);
        assert!(r["seconds_per_step"].as_f64().unwrap() > 0.0);
    }
}

/// `--device cpu` times the device-resident chains through their CPU twin: lattice DULA and
/// DMALA, RBM DULA/DMALA/gibbs/block-gibbs (the others are skipped with a note), each run
/// reproducible.
#[test]
fn device_records_time_the_device_chains() {
    let out = dlp(&[
        "--device",
        "cpu",
        "--L",
        "5",
        "--B",
        "3",
        "--sigmas",
        "0.1",
        "--samplers",
        "dula,dmala,gwg",
        "--rbm-chains",
        "2",
        "--rbm-samplers",
        "dula,dmala,gibbs,block-gibbs,bg-1",
        "--rbm-burn-in",
        "1",
        "--budget",
        "0.01",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no device path for gwg on the lattice") && err.contains("no device path for bg-1"), "{err}");
    let recs = records(&out);
    let got: Vec<(String, String)> =
        recs.iter().map(|r| (r["model"].as_str().unwrap().into(), r["sampler"].as_str().unwrap().into())).collect();
    let want = [
        ("ising", "dula"),
        ("ising", "dmala"),
        ("rbm", "dula"),
        ("rbm", "dmala"),
        ("rbm", "gibbs"),
        ("rbm", "block-gibbs"),
    ];
    assert_eq!(got, want.map(|(m, s)| (m.to_string(), s.to_string())));
    for r in &recs {
        assert_eq!((r["impl"].as_str(), r["device"].as_str()), (Some("rust-device-cpu"), Some("cpu")), "{r}");
        assert_eq!(r["reproducible"], true, "{r}");
        assert!(r["seconds_per_step"].as_f64().unwrap() > 0.0);
        let acc = r["accept_rate"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&acc), "{r}");
    }
    assert_eq!(recs[0]["chains"], 3);
    assert_eq!(recs[2]["dims"], 784);
}

#[test]
fn bad_input_is_one_error_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.jsonl");
    let file = file.to_str().unwrap();
    for args in [
        vec!["--budget", "0", "--no-rbm", "--out", file],
        vec!["--budget", "nan", "--no-rbm", "--out", file],
        vec!["--samplers", "nope", "--no-rbm", "--out", file],
        vec!["--threads", "0", "--no-rbm", "--out", file],
        vec!["--L", "0", "--no-rbm", "--out", file],
        vec!["--device", "tpu", "--no-rbm", "--out", file],
        // This build has no `cuda` feature (CI never builds it): one clear line, not a panic.
        #[cfg(not(feature = "cuda"))]
        vec!["--device", "cuda:0", "--no-rbm", "--out", file],
    ] {
        let out = dlp(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error:"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!std::path::Path::new(file).exists(), "{args:?} left a file");
    }
}
