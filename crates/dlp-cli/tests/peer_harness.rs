//! The peer harness of `just bench-peer` (bench/peer, scripts/bench_peer.sh,
//! scripts/bench_report.py) without torch: the C floor's and the numpy reference's
//! self-checks, the joiner on both JSON-lines formats (the peer's and `dlp bench`'s) with
//! ratios checked exactly, the paper-page splice, and the bad-argument rows. None needs torch
//! (CI must not install it). `.ci/run` provides what they do need (a C compiler, python3 with
//! numpy); elsewhere a missing tool is a skip note, and a failure under `CI` or
//! `DLP_REQUIRE_ALL=1` (`dlp_core::testing::require`).

use dlp_core::testing::require::Requirement;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Whether `argv` runs and exits 0; if not, a skip or (in CI) a failure naming `what` and the
/// command that installs it.
fn have(argv: &[&str], what: &str, install: &str) -> bool {
    Requirement::new(what, install).command(argv)
}

fn ok(out: &Output) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "exit {:?}:\n{text}", out.status.code());
    text
}

#[test]
fn c_floor_self_check_passes() {
    if !have(&["cc", "--version"], "a C compiler (cc) to build bench/peer/floor_dula.c", "apt-get install gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("floor_dula");
    let src = root().join("bench/peer/floor_dula.c");
    ok(&Command::new("cc").args(["-O2", "-o"]).arg(&exe).arg(&src).arg("-lm").output().unwrap());
    // exp_poly's relative error, identical flips of its two variants, and the realised flip
    // count of one step within 5 sd of its expectation (fixed seed: deterministic; a correct
    // kernel fails that bound with probability ~6e-7).
    let text = ok(&Command::new(&exe).arg("--check").output().unwrap());
    assert!(text.contains("check: OK"), "{text}");
}

#[test]
fn numpy_reference_self_check_passes() {
    let what = "python3 with numpy for bench/peer/np_dlp.py --check";
    if !have(&["python3", "-c", "import numpy"], what, "python3 -m pip install numpy") {
        return;
    }
    // Sparse energy and flip gains equal the dense formula (to float32 rounding); DMALA's
    // mean energy and magnetisation on the 3×3 torus within 5 standard errors of the exact
    // values over 8,192 independent chains (fixed seed, so deterministic; a correct sampler
    // fails either bound with probability ~6e-7, 1.2e-6 for both).
    let out = Command::new("python3").arg(root().join("bench/peer/np_dlp.py")).arg("--check").output().unwrap();
    let text = ok(&out);
    assert!(text.contains("check: OK"), "{text}");
}

/// One record in the peer's schema (`peer_bench.py`, `np_dlp.py`, `floor_dula`).
fn peer_record(imp: &str, sampler: &str, l: usize, chains: usize, seconds: Option<f64>) -> String {
    serde_json::json!({"impl": imp, "sampler": sampler, "model": "ising", "L": l, "sigma": 0.1, "dims": l * l,
        "chains": chains, "threads": 1, "seconds_per_step": seconds, "load1_at_start": 1.5})
    .to_string()
}

#[test]
fn joiner_reads_both_formats_and_gives_same_run_ratios() {
    if !have(&["python3", "--version"], "python3 for scripts/bench_report.py", "apt-get install python3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // dlp's side: a real `dlp bench` run on one tiny configuration.
    let rust = dir.path().join("rust.jsonl");
    let args = ["--L", "5", "--B", "2", "--sigmas", "0.1", "--threads", "1", "--samplers", "dula", "--no-rbm"];
    ok(&Command::new(env!("CARGO_BIN_EXE_dlp"))
        .arg("bench")
        .args(args)
        .args(["--budget", "0.005", "--out"])
        .arg(&rust)
        .output()
        .unwrap());
    let ours: Value = serde_json::from_str(std::fs::read_to_string(&rust).unwrap().trim()).unwrap();
    let s_ours = ours["seconds_per_step"].as_f64().unwrap();
    // The peer's side, hand-written: the official code 4× slower, numpy 2×, the official
    // code on a GPU 8× (`peer_gpu.py`'s impl); one failed record.
    let peer = dir.path().join("peer.jsonl");
    let lines = [
        peer_record("torch-port", "dula", 5, 2, Some(4.0 * s_ours)),
        peer_record("numpy", "dula", 5, 2, Some(2.0 * s_ours)),
        peer_record("torch-port-cuda", "dula", 5, 2, Some(8.0 * s_ours)),
        peer_record("torch-port", "gwg", 5, 2, None),
    ];
    std::fs::write(&peer, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("out");
    let md = dir.path().join("ratios.md");
    ok(&Command::new("python3")
        .arg(root().join("scripts/bench_report.py"))
        .args([&peer, &rust])
        .arg("--out")
        .arg(&out)
        .arg("--markdown")
        .arg(&md)
        .args(["--title", "### test"])
        .output()
        .unwrap());
    let json: Value = serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    let dula = rows.iter().find(|r| r["sampler"] == "dula").expect("a dula row");
    assert_eq!(dula["chains"], 2);
    assert!((dula["rust_over_torch-port"].as_f64().unwrap() - 0.25).abs() < 1e-12, "{dula}");
    assert!((dula["rust_over_numpy"].as_f64().unwrap() - 0.5).abs() < 1e-12, "{dula}");
    for f in ["bench.csv", "ns_per_spin.svg"] {
        assert!(out.join(f).metadata().unwrap().len() > 0, "{f} missing");
    }
    let table = std::fs::read_to_string(&md).unwrap();
    assert!(table.starts_with("### test"), "{table}");
    assert!(table.contains("| dula | ising | 5 | 2 |") && table.contains("| 4x |"), "{table}");
    let gpu = table.split("official, GPU").nth(1).expect("a GPU table");
    assert!(gpu.contains("| 8x |"), "{table}");
    // summarize.py (the per-sampler tables) on the same files, as speed-ups over the CPU port:
    // the GPU record 0.50x, numpy 2.00x, ours 4.00x.
    let sum = ok(&Command::new("python3")
        .arg(root().join("bench/peer/summarize.py"))
        .args([&peer, &rust])
        .args(["--base", "torch-port@1"])
        .output()
        .unwrap());
    assert!(sum.contains("| ising | 5 | 2 | 1.00x | 0.50x | 2.00x | 4.00x |"), "{sum}");
}

#[test]
fn paper_block_is_appended_once_then_replaced() {
    if !have(&["python3", "--version"], "python3 for bench/peer/paper_section.py", "apt-get install python3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.md");
    std::fs::write(&page, "# Performance\n\ntext\n").unwrap();
    let splice = |body: &str| {
        let b = dir.path().join("body.md");
        std::fs::write(&b, body).unwrap();
        Command::new("python3")
            .arg(root().join("bench/peer/paper_section.py"))
            .arg(&page)
            .arg("cpu")
            .arg(&b)
            .output()
            .unwrap()
    };
    ok(&splice("first run\n"));
    ok(&splice("second run\n"));
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.starts_with("# Performance\n\ntext\n"), "{text}");
    assert_eq!(text.matches("<!-- bench-peer:cpu:begin -->").count(), 1, "{text}");
    assert!(text.contains("second run") && !text.contains("first run"), "{text}");
}

#[test]
fn bad_arguments_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    for (script, args) in [
        ("scripts/bench_peer.sh", vec!["--device", "tpu", out.to_str().unwrap()]),
        ("scripts/bench_peer.sh", vec!["--seed", "x", out.to_str().unwrap()]),
        ("scripts/bench_peer.sh", vec!["--frobnicate", out.to_str().unwrap()]),
        ("bench/peer/setup.sh", vec!["--device", "tpu"]),
        ("scripts/bench_peer_discs.sh", vec!["--seed", "x", out.to_str().unwrap()]),
        ("scripts/bench_peer_discs.sh", vec!["--chains", "-3", out.to_str().unwrap()]),
        ("scripts/bench_peer_discs.sh", vec!["--frobnicate", out.to_str().unwrap()]),
    ] {
        let o = Command::new("bash").arg(root().join(script)).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{script} {args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{script} {args:?}: {err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(!out.exists(), "{script} {args:?} wrote {}", out.display());
    }
}
