//! `dlp exact` end to end: spec §4.3's tiny model written as a model file (DULA's bias and
//! DMALA's exactness, numbers from the spec) and the error rows (one `error:` line, exit 2,
//! nothing on stdout, no output file).

use std::path::PathBuf;
use std::process::{Command, Output};

/// Spec §4.3: f(x) = xᵀWx + bᵀx on {0,1}³. The model file's ℓ = bᵀx + Σ_{i<j} J_ij x_i x_j
/// counts each pair once, so J = 2W (W_12 = 0.8, W_13 = −0.6, W_23 = 0.5).
const TINY: &str = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 3, "domain": "binary",
 "J": [[0.0, 1.6, -1.2], [1.6, 0.0, 1.0], [-1.2, 1.0, 0.0]],
 "b": [0.3, -0.7, 0.25]}"#;

/// A 4×4 spin lattice: 2^16 states, above the 2^12 limit of dense matrices.
const BIG: &str = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 16, "domain": "spin",
 "lattice": {"shape": [4, 4], "periodic": true, "coupling": 0.2}}"#;

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tiny.json"), TINY).unwrap();
        std::fs::write(dir.path().join("big.json"), BIG).unwrap();
        Case { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["exact".to_string()];
        if !args.contains(&"--model") {
            all.extend(["--model".into(), self.path("tiny.json").display().to_string()]);
        }
        all.extend(args.iter().map(|s| s.to_string()));
        Command::new(env!("CARGO_BIN_EXE_dlp")).args(&all).output().unwrap()
    }
}

fn report(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn numbers(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

#[test]
fn dula_bias_and_dmala_exactness_match_spec_4_3() {
    let case = Case::new();
    let r = report(&case.run(&["--sampler", "dula", "--step-size", "0.5"]));
    assert_eq!(r["schema"], "dlp.exact.report.v2");
    assert_eq!(r["n_states"], 8);
    // Spec §4.3: ‖π_α − π‖₁ = 0.1926361355, so TV is half of it; π_α itself.
    let tv = r["total_variation"].as_f64().unwrap();
    assert!((2.0 * tv - 0.1926361355).abs() < 1e-9, "TV = {tv}");
    let pi_a = [0.0809512813, 0.0952750009, 0.0790964137, 0.1321463263, 0.1094669988, 0.0812631920, 0.2049611045];
    for (a, b) in numbers(&r["stationary"]).iter().zip(pi_a) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
    let pi = [0.0757792291, 0.0973024562, 0.0376308515, 0.1313445775, 0.1022912598, 0.0395602265, 0.2515959009];
    for (a, b) in numbers(&r["target"]).iter().zip(pi) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
    // DULA does not leave π invariant.
    assert!(r["target_residual"].as_f64().unwrap() > 1e-3);
    assert_eq!(r["states"][6], serde_json::json!([1, 1, 0]));

    // DULA is reversible for its own law π_α here (log-quadratic target), so its mixing rates
    // come from the symmetric path.
    let m = &r["mixing"];
    assert_eq!(r["mixing_kernel"], "P: one step");
    assert_eq!(m["reversible"], true, "{m}");
    let (gap, abs_gap, slem) =
        (m["gap"].as_f64().unwrap(), m["abs_gap"].as_f64().unwrap(), m["slem"].as_f64().unwrap());
    assert!(gap > 0.0 && gap <= 2.0 && abs_gap > 0.0 && abs_gap <= gap + 1e-15, "{m}");
    assert!((slem - (1.0 - abs_gap)).abs() < 1e-15, "{m}");
    assert!((m["relaxation_time"].as_f64().unwrap() - 1.0 / abs_gap).abs() < 1e-12, "{m}");

    let r = report(&case.run(&["--sampler", "dmala", "--step-size", "0.5"]));
    assert!(r["total_variation"].as_f64().unwrap() < 1e-12, "{r}");
    assert!(r["target_residual"].as_f64().unwrap() < 1e-14);
    assert!(r["detailed_balance_residual"].as_f64().unwrap() < 1e-15);
    assert_eq!(r["mixing"]["reversible"], true, "{r}");
}

#[test]
fn systematic_scan_mixing_is_that_of_one_sweep() {
    let case = Case::new();
    let r = report(&case.run(&["--sampler", "gibbs-sweep"]));
    assert_eq!(r["n_phases"], 3);
    let kernel = r["mixing_kernel"].as_str().unwrap();
    assert!(kernel.contains("one sweep") && kernel.contains("3 phase"), "{kernel}");
    // The product of the phases is not reversible: SLEM from the complex spectrum, no gap.
    let m = &r["mixing"];
    assert_eq!(m["reversible"], false, "{m}");
    assert!(m["gap"].is_null() && m["abs_gap"].is_null(), "{m}");
    let slem = m["slem"].as_f64().unwrap();
    assert!(slem > 0.0 && slem < 1.0, "{m}");
    assert!((m["relaxation_time"].as_f64().unwrap() - 1.0 / (1.0 - slem)).abs() < 1e-12, "{m}");
}

#[test]
fn output_file_is_written_atomically() {
    let case = Case::new();
    let path = case.path("report.json");
    let out = case.run(&[
        "--sampler",
        "pdmala",
        "--step-size",
        "0.5",
        "--preconditioner",
        "0.5,1,2",
        "--output",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(r["total_variation"].as_f64().unwrap() < 1e-12);
    assert_eq!(std::fs::read_dir(case.dir.path()).unwrap().count(), 3, "stray temporary files");
}

#[test]
fn bad_input_is_one_error_line_and_exit_2() {
    let case = Case::new();
    let out_path = case.path("r.json");
    let out_flag = out_path.to_str().unwrap();
    let big = case.path("big.json");
    let rows: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--sampler", "no-such", "--step-size", "0.5"], "no-such"),
        (vec!["--sampler", "dula", "--step-size", "-1"], "--step-size"),
        (vec!["--sampler", "dula", "--step-size", "0.5", "--model", "/no/such.json"], "/no/such.json"),
        (vec!["--sampler", "dula", "--step-size", "0.5", "--model", big.to_str().unwrap()], "4096"),
        (vec!["--sampler", "pdula", "--step-size", "0.5", "--preconditioner", "1,2"], "--preconditioner"),
        (vec!["--sampler", "dula", "--step-size", "0.5", "--output", "/no/such/dir/r.json"], "--output"),
        (vec!["--step-size", "0.5"], "--sampler"),
        // Refused by the sampler's own start (r < d depends on the model), not row by row.
        (vec!["--sampler", "rwm", "--step-size", "50"], "must be below d"),
    ];
    for (args, needle) in rows {
        let mut args = args;
        if !args.contains(&"--output") {
            args.extend(["--output", out_flag]);
        }
        let out = case.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
        assert!(stderr.starts_with("error: ") && stderr.contains(needle), "{args:?}: {stderr:?} lacks {needle:?}");
        assert!(!out_path.exists(), "{args:?}: output created");
    }
}

/// The 4-spin chain with a strong field on which `pas-2` sampled the wrong law.
const FIELD4: &str = r#"{"schema":"dlp.model.v1","kind":"ising","d":4,"domain":"spin","J":[[0,0.2,0,0],[0.2,0,0.2,0],[0,0.2,0,0.2],[0,0,0.2,0]],"b":[1.5,1.5,1.5,1.5]}"#;

/// A 5-spin ring without field: its two parity classes carry equal mass, where a solve of the
/// singular system once printed a "stationary" vector with entries from −21.6 to +17.6.
const RING5: &str = r#"{"schema":"dlp.model.v1","kind":"ising","d":5,"domain":"spin","J":[[0,0.3,0,0,0.3],[0.3,0,0.3,0,0],[0,0.3,0,0.3,0],[0,0,0.3,0,0.3],[0.3,0,0,0.3,0]],"b":[0,0,0,0,0]}"#;

#[test]
fn reducible_pas_gets_per_class_laws_and_no_total_variation() {
    let case = Case::new();
    std::fs::write(case.path("field4.json"), FIELD4).unwrap();
    std::fs::write(case.path("ring5.json"), RING5).unwrap();
    let model = |name: &str| case.path(name).display().to_string();
    let out = case.run(&["--model", &model("field4.json"), "--sampler", "pas-2"]);
    let r = report(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("warning: pas-2 on this model is reducible: 2 closed classes (parity)"), "{stderr}");
    assert!(stderr.contains("pas-2 flips an even number") && stderr.lines().count() == 1, "{stderr}");
    assert_eq!(r["ergodicity"]["verdict"], "reducible: 2 closed classes (parity)", "{r}");
    assert_eq!(r["ergodicity"]["irreducible"], false);
    assert!(r.get("stationary").is_none() && r.get("total_variation").is_none(), "{r}");
    assert!(r["mixing"]["undefined"].as_str().unwrap().contains("2 closed classes"), "{r}");
    let classes = r["ergodicity"]["closed_classes"].as_array().unwrap();
    assert_eq!(classes.len(), 2);
    for c in classes {
        let law = numbers(&c["stationary"]);
        assert!(law.iter().all(|p| (0.0..=1.0).contains(p)) && (law.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(c["total_variation_to_conditioned_target"].as_f64().unwrap() < 1e-12, "{c}");
    }
    // pas-4 on 4 sites only swaps a state and its complement.
    let r = report(&case.run(&["--model", &model("field4.json"), "--sampler", "pas-4"]));
    assert_eq!(r["ergodicity"]["verdict"], "reducible: 8 closed classes of 2 states each", "{r}");
    // The mixture `pas` is irreducible and exact.
    let out = case.run(&["--model", &model("field4.json"), "--sampler", "pas", "--step-size", "2"]);
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = report(&out);
    assert_eq!(r["ergodicity"]["verdict"], "irreducible and aperiodic");
    assert!(r["total_variation"].as_f64().unwrap() < 1e-10, "{r}");
    assert!(r["mixing"]["slem"].as_f64().unwrap() < 1.0, "{r}");
    // `dlp sample` warns too (the registry flags pas-2 on bits), and still runs.
    let out = Command::new(env!("CARGO_BIN_EXE_dlp"))
        .args(["sample", "--model", &model("field4.json"), "--sampler", "pas-2", "--chains", "4", "--steps", "3"])
        .args(["--out", &model("s.csv")])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.starts_with("warning: pas-2 flips an even number"), "{stderr}");
    // Equal-mass classes: still no stationary vector, and every class law is a law.
    let r = report(&case.run(&["--model", &model("ring5.json"), "--sampler", "pas-2"]));
    assert!(r.get("stationary").is_none(), "{r}");
    for c in r["ergodicity"]["closed_classes"].as_array().unwrap() {
        assert!(numbers(&c["stationary"]).iter().all(|p| (0.0..=1.0).contains(p)), "{c}");
        assert!((c["target_mass"].as_f64().unwrap() - 0.5).abs() < 1e-12, "{c}");
    }
}
