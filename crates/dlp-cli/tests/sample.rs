//! `dlp sample` end to end: the error rows of `gof.md` §10.5 that apply to sampling (one
//! `error:` line, exit 2, nothing on stdout, no output file) and a happy path whose output
//! is read back with the samples grammar.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A 4×4 periodic spin Ising model file (`gof.md` §10.3), written by hand here.
const ISING: &str = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 16, "domain": "spin",
 "lattice": {"shape": [4, 4], "periodic": true, "coupling": 0.2},
 "b": [0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]}"#;

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m.json"), ISING).unwrap();
        Case { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `dlp sample --model m.json --out out.csv …` with a default sampler and sizes that
    /// `args` may override (clap takes the last occurrence of a flag only for some flags, so
    /// the defaults are added only when absent).
    fn sample(&self, args: &[&str]) -> Output {
        let mut all: Vec<String> = vec!["sample".into()];
        let has = |flag: &str| args.contains(&flag);
        if !has("--model") {
            all.extend(["--model".into(), self.path("m.json").display().to_string()]);
        }
        if !has("--out") {
            all.extend(["--out".into(), self.path("out.csv").display().to_string()]);
        }
        for (flag, value) in [("--sampler", "dmala"), ("--step-size", "0.4"), ("--chains", "12"), ("--steps", "50")] {
            if !has(flag) {
                all.extend([flag.into(), value.into()]);
            }
        }
        all.extend(args.iter().map(|s| s.to_string()));
        Command::new(env!("CARGO_BIN_EXE_dlp")).args(&all).output().unwrap()
    }
}

/// Exit 2, nothing on stdout, exactly one stderr line `error: …` containing `needle`, no out.csv.
fn assert_input_error(case: &Case, out: &Output, needle: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(out.stdout.is_empty(), "stdout: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr:?}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains(needle), "{stderr:?} lacks {needle:?}");
    assert!(!case.path("out.csv").exists(), "output file created");
    stderr
}

/// The data rows (header first), without the leading `#` provenance comment.
fn read_rows(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().filter(|l| !l.starts_with('#')).map(|l| l.split(',').map(str::to_string).collect()).collect()
}

#[test]
fn final_states_are_written_and_read_back_with_the_samples_grammar() {
    let case = Case::new();
    let trace = case.path("trace.csv");
    let out = case.sample(&["--seed", "5", "--burn-in", "10", "--thin", "5", "--trace", trace.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());

    let text = std::fs::read_to_string(case.path("out.csv")).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        "# dlp sample --sampler dmala --step-size 0.4 --chains 12 --steps 50 --seed 5",
        "the provenance comment names the run"
    );
    let rows = read_rows(&case.path("out.csv"));
    let header: Vec<String> = (0..16).map(|i| format!("x{i}")).collect();
    assert_eq!(rows[0], header);
    assert_eq!(rows.len(), 1 + 12);
    assert!(rows[1..].iter().flatten().all(|v| v == "-1" || v == "1"));

    // The models crate reads it back as 12 spin states.
    let model = dlp_models::load_model(&case.path("m.json")).unwrap();
    let space = dlp_core::Target::space(&model).clone();
    let samples =
        dlp_models::read_samples(&case.path("out.csv"), &space, "ising", dlp_models::Delimiter::Auto).unwrap();
    assert_eq!((samples.n, samples.d), (12, 16));

    // Trace: steps 15, 20, …, 50 (8 kept) for each of the 12 chains, chain-major, and its
    // last state of each chain is the final state.
    let t = read_rows(&trace);
    assert_eq!(t[0][..2], ["chain".to_string(), "step".to_string()]);
    assert_eq!(t.len(), 1 + 12 * 8);
    let steps: Vec<&str> = t[1..9].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(steps, ["15", "20", "25", "30", "35", "40", "45", "50"]);
    for chain in 0..12 {
        let last = &t[1 + chain * 8 + 7];
        assert_eq!(last[0], chain.to_string());
        assert_eq!(last[2..], rows[1 + chain][..]);
    }
}

#[test]
fn output_does_not_depend_on_threads_and_follows_the_seed() {
    let case = Case::new();
    let run = |threads: &str, seed: &str, name: &str| {
        let p = case.path(name);
        let out = case.sample(&["--threads", threads, "--seed", seed, "--out", p.to_str().unwrap(), "--init", "zeros"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::read(p).unwrap()
    };
    let a = run("1", "9", "a.csv");
    assert_eq!(a, run("2", "9", "b.csv"));
    assert_ne!(a, run("2", "10", "c.csv"));
}

#[test]
fn unknown_sampler_lists_the_known_ones() {
    let case = Case::new();
    let out = case.sample(&["--sampler", "nope"]);
    let line = assert_input_error(&case, &out, "unknown sampler \"nope\"");
    for known in ["dmala", "dula", "lb"] {
        assert!(line.contains(known), "{line}");
    }
}

#[test]
fn bad_step_sizes_are_rejected() {
    let case = Case::new();
    for bad in ["0", "-0.5", "NaN", "inf"] {
        let out = case.sample(&["--step-size", bad]);
        assert_input_error(&case, &out, "--step-size must be a finite number > 0");
    }
}

#[test]
fn zero_chains_and_zero_thin_are_rejected() {
    let case = Case::new();
    assert_input_error(&case, &case.sample(&["--chains", "0"]), "--chains must be at least 1");
    assert_input_error(&case, &case.sample(&["--thin", "0"]), "--thin must be at least 1");
}

#[test]
fn model_file_errors_are_printed_verbatim() {
    let case = Case::new();
    std::fs::write(case.path("bad.json"), "{\"schema\": \"dlp.model.v1\",\n \"kind\": ising}\n").unwrap();
    std::fs::write(
        case.path("asym.json"),
        r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 2, "J": [[0, 0.2], [0.1, 0]]}"#,
    )
    .unwrap();
    for name in ["bad.json", "asym.json", "missing.json"] {
        let path = case.path(name);
        let expected = dlp_models::load_model(&path).unwrap_err().to_string();
        let out = case.sample(&["--model", path.to_str().unwrap()]);
        let line = assert_input_error(&case, &out, name);
        assert_eq!(line.trim_end(), format!("error: {expected}"));
    }
}

#[test]
fn unwritable_output_is_an_input_error_before_sampling() {
    let case = Case::new();
    let out = case.sample(&["--out", "/nonexistent-dir/sub/out.csv"]);
    assert_input_error(&case, &out, "--out /nonexistent-dir/sub/out.csv");
    let trace = case.path("no/such/trace.csv");
    let out = case.sample(&["--trace", trace.to_str().unwrap()]);
    assert_input_error(&case, &out, "--trace");
}

#[test]
fn argument_errors_are_one_line_and_help_is_not_an_error() {
    let case = Case::new();
    let out = Command::new(env!("CARGO_BIN_EXE_dlp")).args(["sample", "--sampler", "dmala"]).output().unwrap();
    assert_input_error(&case, &out, "--model");
    let out = Command::new(env!("CARGO_BIN_EXE_dlp")).args(["sample", "--chains", "many"]).output().unwrap();
    assert_input_error(&case, &out, "many");
    let out = Command::new(env!("CARGO_BIN_EXE_dlp")).args(["sample", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--step-size"));
}

/// The shipped data-model example, relative to this crate.
fn logistic_example() -> String {
    format!("{}/../../data/examples/logistic-spin.json", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn stochastic_gradient_samplers_run_on_the_shipped_data_model() {
    let case = Case::new();
    for sampler in ["sg-dula", "sg-dmala"] {
        let run = |threads: &str, name: &str| {
            let p = case.path(name);
            let args = [
                "--model",
                &logistic_example(),
                "--sampler",
                sampler,
                "--step-size",
                "0.3",
                "--batch-size",
                "20",
                "--chains",
                "16",
                "--steps",
                "200",
                "--threads",
                threads,
                "--out",
                p.to_str().unwrap(),
            ];
            let out = case.sample(&args);
            assert!(out.status.success(), "{sampler}: {}", String::from_utf8_lossy(&out.stderr));
            std::fs::read_to_string(p).unwrap()
        };
        let one = run("1", &format!("{sampler}-1.csv"));
        assert_eq!(one, run("2", &format!("{sampler}-2.csv")), "{sampler}: minibatches are shared, not per thread");
        let rows: Vec<&str> = one.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rows.len(), 1 + 16);
        assert!(rows[1..].iter().all(|r| r.split(',').all(|v| v == "-1" || v == "1")), "{sampler}");
    }
}

#[test]
fn stochastic_gradient_samplers_need_a_data_model_and_a_batch_size() {
    let case = Case::new();
    let out = case.sample(&["--sampler", "sg-dula", "--batch-size", "4"]);
    assert_input_error(&case, &out, "not a sum over data items");
    let out = case.sample(&["--model", &logistic_example(), "--sampler", "sg-dula", "--batch-size", "500"]);
    assert_input_error(&case, &out, "N = 200");
}

#[test]
fn dmala_adapts_its_step_size_by_default_and_reports_it() {
    let case = Case::new();
    let model = case.path("m.json");
    let run = |threads: &str, name: &str, step: Option<&str>| {
        let out_path = case.path(name);
        let mut args = vec!["sample", "--model", model.to_str().unwrap(), "--sampler", "dmala"];
        if let Some(s) = step {
            args.extend(["--step-size", s]);
        }
        args.extend(["--chains", "8", "--steps", "400", "--burn-in", "200", "--threads", threads, "--out"]);
        args.push(out_path.to_str().unwrap());
        let out = Command::new(env!("CARGO_BIN_EXE_dlp")).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        (std::fs::read(out_path).unwrap(), stderr)
    };
    let (a, msg) = run("1", "a.csv", None);
    assert!(msg.contains("dmala: step size adapted to") && msg.contains("over 200 warm-up steps"), "{msg}");
    let alpha: f64 = msg.split("adapted to ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!(alpha > 0.0 && alpha.is_finite(), "{msg}");
    let (b, msg2) = run("2", "b.csv", Some("auto"));
    assert_eq!(a, b, "adaptation and sampling do not depend on threads");
    assert_eq!(msg, msg2);
    // The samples file carries the adapted α in its provenance comment.
    let first = String::from_utf8(a).unwrap().lines().next().unwrap().to_string();
    let written: f64 = first.split("--step-size ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!((written - alpha).abs() < 1e-6 && first.contains("adapted over 200 warm-up steps"), "{first}");
}

#[test]
fn cyclical_dmala_tunes_both_step_sizes_by_default() {
    let case = Case::new();
    let out = case.sample(&["--sampler", "acs-dmala-8", "--step-size", "auto", "--steps", "400", "--burn-in", "200"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("acs-dmala-8: step size adapted to") && stderr.contains("α_min"), "{stderr}");
    assert!(stderr.contains("target 0.5)"), "ACS's own default target: {stderr}");
    let text = std::fs::read_to_string(case.path("out.csv")).unwrap();
    let first = text.lines().next().unwrap();
    let value =
        |flag: &str| -> f64 { first.split(flag).nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap() };
    let (max, min) = (value("--step-size "), value("--step-size-min "));
    assert!(0.0 < min && min <= max && max <= 5.0, "{first}");
    assert_eq!(read_rows(&case.path("out.csv")).len(), 1 + 12);
}

#[test]
fn parallel_tempering_adapts_its_inner_step_size_and_ladder_and_records_both() {
    let case = Case::new();
    let out = case.sample(&["--sampler", "pt-3:dmala", "--step-size", "auto", "--steps", "400", "--burn-in", "200"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("pt-3:dmala: step size adapted to") && stderr.contains("ladder adapted to 1.0000,"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(case.path("out.csv")).unwrap();
    let first = text.lines().next().unwrap();
    let ladder: Vec<f64> = first
        .split("--ladder ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(ladder.len(), 3, "{first}");
    assert!(ladder[0] == 1.0 && ladder[1] < 1.0 && ladder[1] > ladder[2], "{first}");
    assert!((ladder[2] - 0.25).abs() < 1e-12, "the hottest β stays fixed: {first}");
    assert_eq!(read_rows(&case.path("out.csv")).len(), 1 + 12);
    // A given step size and ladder: no adaptation, both recorded.
    let out = case.sample(&["--sampler", "pt-2:dmala", "--ladder", "1,0.4"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(case.path("out.csv")).unwrap();
    assert!(text.lines().next().unwrap().contains("--step-size 0.4 --ladder 1,0.4 --chains"), "{text}");
    std::fs::remove_file(case.path("out.csv")).unwrap();
    let out = case.sample(&["--sampler", "pt-2:dmala", "--ladder", "1,0.5,0.25"]);
    assert_input_error(&case, &out, "--ladder has 3 values but the name asks for 2 replicas");
    let out = case.sample(&["--sampler", "pt-2:dmala", "--ladder", "1,1.5"]);
    assert_input_error(&case, &out, "decrease strictly");
    let out = case.sample(&["--sampler", "pt-2:bg-2"]);
    assert_input_error(&case, &out, "cannot exchange states");
    let out = Command::new(env!("CARGO_BIN_EXE_dlp"))
        .args([
            "exact",
            "--model",
            case.path("m.json").to_str().unwrap(),
            "--sampler",
            "pt-2:dmala",
            "--step-size",
            "0.4",
        ])
        .output()
        .unwrap();
    assert_input_error(&case, &out, "product space of its replicas");
}

#[test]
fn auto_step_size_is_refused_where_it_cannot_adapt() {
    let case = Case::new();
    let out = case.sample(&["--sampler", "dula", "--step-size", "auto", "--burn-in", "10"]);
    assert_input_error(&case, &out, "needs a Metropolis-adjusted sampler");
    let out = case.sample(&["--step-size", "auto", "--target-accept", "1.5"]);
    assert_input_error(&case, &out, "--target-accept must be in (0, 1)");
    let out = case.sample(&["--step-size", "auto", "--burn-in", "500"]);
    assert_input_error(&case, &out, "warm-up steps");
}

/// Without a terminal (here stderr is a pipe) indicatif draws nothing; a long run then logs
/// plain progress lines every `DLP_PROGRESS_SECS` (60 s by default), and the output is the same.
#[test]
fn a_run_without_a_terminal_logs_progress_lines() {
    let case = Case::new();
    let run = |secs: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dlp"));
        cmd.args(["sample", "--model"]).arg(case.path("m.json")).args(["--out"]).arg(case.path("p.csv"));
        cmd.args(["--sampler", "gibbs", "--chains", "400", "--steps", "40000", "--seed", "3"]);
        let out = cmd.env("DLP_PROGRESS_SECS", secs).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stderr).unwrap(), std::fs::read_to_string(case.path("p.csv")).unwrap())
    };
    let (logged, samples) = run("0.05");
    let lines: Vec<&str> = logged.lines().filter(|l| l.starts_with("gibbs ×400: ")).collect();
    // The run takes well over 0.05 s (16 M chain-steps; ≈ 0.8 s in a debug build), so there is
    // at least one line.
    assert!(!lines.is_empty(), "no progress line in {logged:?}");
    assert!(lines.iter().all(|l| l.contains("/16000000 (") && l.contains("elapsed")), "{lines:?}");
    let (quiet, same) = run("3600");
    assert!(!quiet.contains("gibbs ×400: "), "{quiet:?}");
    assert_eq!(samples, same);
}

/// `--format cmdstan`: one CmdStan CSV per chain (`<stem>_<chain>.csv`, chains from 1) whose
/// states are the CSV trace's of the same run, lp__ is f of the row's state (the model's own
/// density, evaluated here), accept_stat__ a probability, with CmdStan's comment blocks.
#[test]
fn cmdstan_traces_hold_the_csv_traces_states_with_lp_and_accept_stat() {
    let case = Case::new();
    let run = |trace: &str, format: &str| {
        let t = case.path(trace);
        let out = case.sample(&[
            "--chains",
            "3",
            "--steps",
            "40",
            "--burn-in",
            "10",
            "--seed",
            "5",
            "--format",
            format,
            "--trace",
            t.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    run("t.csv", "csv");
    run("c.csv", "cmdstan");
    assert!(!case.path("c.csv").exists(), "the cmdstan layout writes one file per chain only");
    let csv = read_rows(&case.path("t.csv"));
    let model = dlp_models::load_model(&case.path("m.json")).unwrap();
    use dlp_core::TargetExt;
    for chain in 1..=3usize {
        let path = case.path(&format!("c_{chain}.csv"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# model = dlp_ising\n") && text.contains("#   seed = 5\n"), "{text}");
        assert!(text.contains("Elapsed Time"), "{text}");
        let rows = read_rows(&path);
        let header: Vec<String> = ["lp__", "accept_stat__"].iter().map(|s| s.to_string()).collect();
        assert_eq!(rows[0][..2], header[..]);
        assert_eq!(rows[0][2..], (1..=16).map(|i| format!("x.{i}")).collect::<Vec<_>>()[..]);
        let mine: Vec<&Vec<String>> = csv[1..].iter().filter(|r| r[0] == (chain - 1).to_string()).collect();
        assert_eq!(rows.len() - 1, mine.len(), "chain {chain}: kept steps");
        assert_eq!(mine.len(), 30);
        for (row, t) in rows[1..].iter().zip(&mine) {
            assert_eq!(row[2..], t[2..], "chain {chain}: the same states as the CSV trace");
            let spins: Vec<u32> = row[2..].iter().map(|v| (v == "1") as u32).collect();
            let lp: f64 = row[0].parse().unwrap();
            assert_eq!(lp, model.log_density(&spins).unwrap(), "lp__ is f of the state");
            let a: f64 = row[1].parse().unwrap();
            assert!((0.0..=1.0).contains(&a), "{a}");
        }
    }
}
