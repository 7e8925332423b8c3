//! `dlp discs` end to end: the exported task (model, initial and reference states), our cells,
//! a peer's hand-written trace scored by DISCS's ESS (a value worked by hand), and the error
//! rows (one `error:` line, exit 2, no output file).

use serde_json::Value;
use std::process::{Command, Output};

fn dlp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dlp")).arg("discs").args(args).output().unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn export_writes_the_task_model_and_states() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.json");
    let o = dlp(&["--task", "discs:potts-small", "--chains", "3", "--seed", "5", "--export", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["schema"], "dlp.discs-task.v1");
    assert_eq!(v["task"], "potts-small");
    let (d, k) = (v["d"].as_u64().unwrap() as usize, v["K"].as_u64().unwrap());
    assert_eq!(v["model"]["kind"], "potts");
    assert_eq!(v["model"]["d"].as_u64().unwrap() as usize, d);
    let x0 = v["x0"].as_array().unwrap();
    assert_eq!(x0.len(), 3);
    for row in x0.iter().chain(std::iter::once(&v["reference"])) {
        let row = row.as_array().unwrap();
        assert_eq!(row.len(), d);
        assert!(row.iter().all(|c| c.as_u64().unwrap() < k));
    }
    // The same seed gives the same states; another seed other states.
    let again = dir.path().join("u.json");
    let other = dir.path().join("w.json");
    assert!(
        dlp(&["--task", "potts-small", "--chains", "3", "--seed", "5", "--export", again.to_str().unwrap()])
            .status
            .success()
    );
    assert!(
        dlp(&["--task", "potts-small", "--chains", "3", "--seed", "6", "--export", other.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(&again).unwrap());
    assert_ne!(std::fs::read(&file).unwrap(), std::fs::read(&other).unwrap());
}

#[test]
fn ours_and_a_peer_trace_are_scored_by_one_estimator() {
    let dir = tempfile::tempdir().unwrap();
    // 2 chains × 8 steps: burn-in 4, kept 4; the trace [1,1,0,0 | 2,2,2,2] has TFP ESS 8/3 and
    // (constant) 1 by hand (dlp_core::stats tests), mean 11/6, population std 5/6.
    let trace: Vec<u8> = [1i32, 1, 0, 0, 2, 2, 2, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.path().join("t.i32"), trace).unwrap();
    let peer = dir.path().join("peer.jsonl");
    std::fs::write(
        &peer,
        "{\"impl\":\"jax-discs\",\"task\":\"ising-small\",\"sampler\":\"gwg\",\"chains\":2,\"kept\":4,\"seconds\":0.5,\"num_ll_calls\":32,\"trace\":\"t.i32\"}\n",
    )
    .unwrap();
    let out = dir.path().join("out.jsonl");
    let o = dlp(&[
        "--task",
        "ising-small",
        "--samplers",
        "dmala,gwg",
        "--chains",
        "2",
        "--steps",
        "8",
        "--peer",
        peer.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let recs: Vec<Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 3);
    for r in &recs[..2] {
        assert_eq!(r["impl"], "rust");
        assert_eq!((r["burn"].as_u64(), r["kept"].as_u64()), (Some(4), Some(4)));
        let ess = r["ess"].as_f64().unwrap();
        assert!(ess > 0.0 && ess <= 4.0, "{r}");
        assert!(r["evals_per_chain"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert_eq!(recs[0]["adapted"], true, "dmala adapts its step size in the burn-in");
    let p = &recs[2];
    let close = |k: &str, v: f64| assert!((p[k].as_f64().unwrap() - v).abs() < 1e-12, "{k}: {p}");
    close("ess", 11.0 / 6.0);
    close("ess_std", 5.0 / 6.0);
    close("ess_per_second", 11.0 / 6.0 / 0.5);
    close("ess_per_eval", 11.0 / 6.0 / (32.0 * 0.5));
    close("stat_mean", 10.0 / 8.0);
}

#[test]
fn bad_input_is_one_line_exit_2_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let short = dir.path().join("short.jsonl");
    std::fs::write(dir.path().join("s.i32"), [0u8; 12]).unwrap();
    std::fs::write(
        &short,
        "{\"impl\":\"jax-discs\",\"chains\":2,\"kept\":4,\"seconds\":1,\"num_ll_calls\":4,\"trace\":\"s.i32\"}\n",
    )
    .unwrap();
    let o = out.to_str().unwrap();
    for (args, needle) in [
        (vec!["--task", "nope", "--out", o], "unknown DISCS task"),
        (vec!["--task", "ising-small", "--steps", "6", "--out", o], "at least 4 kept steps"),
        (vec!["--task", "ising-small", "--chains", "0", "--out", o], "--chains"),
        (vec!["--task", "ising-small", "--samplers", "dmala,frob", "--out", o], "unknown sampler \"frob\""),
        (
            vec![
                "--task",
                "ising-small",
                "--chains",
                "2",
                "--steps",
                "8",
                "--peer",
                short.to_str().unwrap(),
                "--out",
                o,
            ],
            "expected 32",
        ),
        (vec!["--task", "ising-small", "--peer", "/nonexistent/p.jsonl", "--out", o], "--peer /nonexistent/p.jsonl"),
    ] {
        let r = dlp(&args);
        let e = err(&r);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.starts_with("error: ") && e.contains(needle), "{args:?}: {e}");
        assert!(r.stdout.is_empty() && !out.exists(), "{args:?}");
    }
}
