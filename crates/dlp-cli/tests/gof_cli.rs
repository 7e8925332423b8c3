//! `dlp gof` end to end (gof.md §10): every row of the §10.5 error table, the JSON contract of
//! §10.4, and statistics checked against numbers derived from spec §8 (not from our code).

use std::path::Path;
use std::process::{Command, Output};

const ISING_8_1: &str = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 3, "domain": "spin",
  "edges": [[0, 1, 0.5], [0, 2, -0.3], [1, 2, 0.2]], "b": [0.1, -0.2, 0.3]}"#;
const SAMPLES_8_1: [&str; 5] = ["1,1,1", "-1,1,-1", "1,-1,-1", "-1,-1,1", "1,1,-1"];
const JITTER_8_1: [&str; 5] = ["0.5,0.25,0.75", "0.1,0.9,0.5", "0.3,0.6,0.2", "0.8,0.4,0.05", "0.65,0.35,0.95"];

fn dlp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dlp")).current_dir(dir).arg("gof").args(args).output().expect("run dlp")
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// The §8.1 rows repeated `times` times (the CLI needs n ≥ 10).
fn repeated(rows: &[&str], times: usize) -> String {
    let mut s = String::from("x0,x1,x2\n");
    for _ in 0..times {
        for r in rows {
            s.push_str(r);
            s.push('\n');
        }
    }
    s
}

fn ok_json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "exit {:?}, stderr {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

fn close(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() <= 1e-9 * want.abs(), "{what}: got {got}, want {want}");
}

/// Asserts the §10.5 failure contract: exit 2, one `error:` line equal to `line`, empty
/// stdout, and the `--output` file neither created nor touched.
#[track_caller]
fn fails(dir: &Path, args: &[&str], line: &str) {
    let out_path = dir.join("result.json");
    let _ = std::fs::remove_file(&out_path);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--output", "result.json"]);
    let out = dlp(dir, &all);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "args {args:?}: stderr {stderr}");
    assert!(out.stdout.is_empty(), "stdout not empty");
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert_eq!(stderr.trim_end(), line, "args {args:?}");
    assert!(!out_path.exists(), "an output file was created");
    // An existing output file is left alone.
    std::fs::write(&out_path, "keep").unwrap();
    let again = dlp(dir, &all);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), "keep");
    std::fs::remove_file(&out_path).unwrap();
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, "model.json", ISING_8_1);
    write(p, "samples.csv", &repeated(&SAMPLES_8_1, 2));
    write(p, "jitter.csv", &repeated(&JITTER_8_1, 2).replace("x0,x1,x2\n", ""));
    let lattice = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 16,
      "lattice": {"shape": [4, 4], "periodic": true, "coupling": 0.2}}"#;
    write(p, "m16.json", lattice);
    dir
}

fn spin_rows(n: usize, d: usize) -> String {
    (0..n)
        .map(|a| (0..d).map(|i| if (a * 7 + i * 3) % 5 < 2 { "-1" } else { "1" }).collect::<Vec<_>>().join(",") + "\n")
        .collect()
}

#[test]
fn kdsd_and_gfksd_statistics_match_spec_8_1_on_the_doubled_sample() {
    let dir = setup();
    let p = dir.path();
    // Duplicating every row keeps V and gives U_10 = (50 V_5 + 40 U_5) / 90 (from
    // U_5 = (25 V_5 − tr)/20 and U_10 = (100 V_5 − 2 tr)/90).
    let u10 = |u: f64, v: f64| (50.0 * v + 40.0 * u) / 90.0;
    let j = ok_json(&dlp(p, &["--test", "kdsd", "--samples", "samples.csv", "--model", "model.json", "--reps", "50"]));
    close(j["statistic"].as_f64().unwrap(), u10(-1.51229589871, 2.15511789354), "kdsd U");
    assert_eq!(j["schema"], "dlp.gof.result.v1");
    assert_eq!(j["test"], "kdsd");
    assert_eq!(j["statistic_kind"], "u");
    assert_eq!(j["n"], 10);
    assert_eq!(j["d"], 3);
    assert_eq!(j["bootstrap"]["method"], "multinomial");
    assert_eq!(j["bootstrap"]["reps"], 50);
    assert_eq!(j["kernel"]["name"], "exp_hamming");
    assert_eq!(j["kernel"]["scale"], 1.0);
    assert_eq!(j["model"]["kind"], "ising");
    assert_eq!(j["samples"]["sha256"].as_str().unwrap().len(), 64);
    let p_value = j["p_value"].as_f64().unwrap();
    assert!(p_value > 0.0 && p_value <= 1.0 && (p_value * 51.0 - (p_value * 51.0).round()).abs() < 1e-9);
    assert_eq!(j["reject"].as_bool().unwrap(), p_value <= 0.05);

    let j =
        ok_json(&dlp(p, &["--test", "kdsd", "--samples", "samples.csv", "--model", "model.json", "--statistic", "v"]));
    close(j["statistic"].as_f64().unwrap(), 2.15511789354, "kdsd V");
    assert_eq!(j["bootstrap"]["method"], "rademacher");

    let gf = |extra: &[&str]| {
        let mut a = vec![
            "--test",
            "gfksd",
            "--samples",
            "samples.csv",
            "--model",
            "model.json",
            "--jitter",
            "jitter.csv",
            "--reps",
            "20",
        ];
        a.extend(extra);
        ok_json(&dlp(p, &a))
    };
    let j = gf(&["--bandwidth", "1"]);
    close(j["statistic"].as_f64().unwrap(), u10(-0.146001732023, 3.72824731017), "gfksd gaussian U");
    assert_eq!(j["surrogate"], "gaussian");
    assert_eq!(j["jitter"], "file");
    assert_eq!(j["kernel"]["name"], "rbf");
    assert_eq!(j["kernel"]["bandwidth"], 1.0);
    assert!(j["weights_ess"].as_f64().unwrap() > 1.0);
    let j = gf(&["--bandwidth", "1", "--surrogate", "relaxed", "--statistic", "v"]);
    close(j["statistic"].as_f64().unwrap(), 2.56177220560, "gfksd relaxed V");
    assert_eq!(j["surrogate"], "relaxed");
}

#[test]
fn mmd_against_a_file_and_against_the_model() {
    let dir = setup();
    let p = dir.path();
    // MMD²_b depends only on the two empirical laws, so repeating X twice and Y three times
    // keeps the spec's 0.100583282863.
    write(p, "ref.csv", &repeated(&["1,1,1", "1,1,1", "-1,-1,-1", "1,-1,1"], 3));
    for with_model in [false, true] {
        let mut a = vec![
            "--test",
            "mmd",
            "--samples",
            "samples.csv",
            "--reference",
            "ref.csv",
            "--statistic",
            "v",
            "--reps",
            "30",
        ];
        if with_model {
            a.extend(["--model", "model.json"]);
        }
        let j = ok_json(&dlp(p, &a));
        close(j["statistic"].as_f64().unwrap(), 0.100583282863, "MMD2_b");
        assert_eq!(j["m"], 12);
        assert_eq!(j["reference"]["source"], "file");
        assert_eq!(j["bootstrap"]["method"], "permutation");
    }
    let j = ok_json(&dlp(
        p,
        &[
            "--test",
            "mmd",
            "--samples",
            "samples.csv",
            "--model",
            "model.json",
            "--model-samples",
            "40",
            "--reps",
            "30",
        ],
    ));
    assert_eq!(j["reference"]["source"], "model_sampler");
    assert_eq!(j["reference"]["sampler"], "exact");
    assert_eq!(j["m"], 40);
    // 2^21 states: Gibbs reference.
    let big = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 21, "domain": "binary"}"#;
    write(p, "big.json", big);
    let rows: String =
        (0..12).map(|a| (0..21).map(|i| ((a + i) % 2).to_string()).collect::<Vec<_>>().join(" ") + "\n").collect();
    write(p, "big.txt", &rows);
    let j = ok_json(&dlp(
        p,
        &["--test", "mmd", "--samples", "big.txt", "--model", "big.json", "--burnin", "3", "--reps", "20"],
    ));
    assert_eq!(j["reference"]["sampler"], "gibbs");
    assert_eq!(j["reference"]["burnin"], 3);
    assert_eq!(j["warnings"].as_array().unwrap().len(), 1);
}

#[test]
fn output_file_is_the_stdout_document_and_seeds_repeat() {
    let dir = setup();
    let p = dir.path();
    write(p, "s16.csv", &spin_rows(30, 16));
    let args = ["--test", "kdsd", "--samples", "s16.csv", "--model", "m16.json", "--seed", "7", "--reps", "200"];
    let a = dlp(p, &args);
    let b = dlp(p, &args);
    assert_eq!(a.stdout, b.stdout);
    let mut with_out = args.to_vec();
    with_out.extend(["--output", "r.json"]);
    let c = dlp(p, &with_out);
    assert!(c.status.success() && c.stdout.is_empty());
    assert_eq!(std::fs::read(p.join("r.json")).unwrap(), a.stdout);
    let mut text = args.to_vec();
    text.extend(["--format", "text"]);
    let t = dlp(p, &text);
    assert_eq!(String::from_utf8_lossy(&t.stdout).lines().count(), 1);
}

#[test]
fn every_error_row_of_section_10_5() {
    let dir = setup();
    let p = dir.path();
    let base = |s: &'static str| vec!["--test", "kdsd", "--samples", s, "--model", "m16.json"];
    write(p, "empty.csv", "# only a comment\n\n");
    fails(p, &base("empty.csv"), "error: empty.csv: no samples (file is empty)");
    let mut ragged = spin_rows(12, 16);
    let mut lines: Vec<String> = ragged.lines().map(String::from).collect();
    lines[3] = lines[3].rsplit_once(',').unwrap().0.to_string();
    ragged = lines.join("\n") + "\n";
    write(p, "ragged.csv", &ragged);
    fails(p, &base("ragged.csv"), "error: ragged.csv:4: expected 16 values (as in the first row), found 15");
    write(p, "d15.csv", &spin_rows(12, 15));
    fails(p, &base("d15.csv"), "error: d15.csv: rows have 15 values but the model has d = 16");
    let mut rows: Vec<String> = spin_rows(12, 16).lines().map(String::from).collect();
    rows[8] = format!("1,0,{}", rows[8].splitn(3, ',').nth(2).unwrap());
    write(p, "zero.csv", &(rows.join("\n") + "\n"));
    fails(p, &base("zero.csv"), "error: zero.csv:9:2: value 0 is outside the domain {-1, 1} of the ising model");
    let mut rows: Vec<String> = spin_rows(12, 16).lines().map(String::from).collect();
    rows[4] = format!("NaN,{}", rows[4].split_once(',').unwrap().1);
    write(p, "nan.csv", &(rows.join("\n") + "\n"));
    fails(p, &base("nan.csv"), "error: nan.csv:5:1: not a finite integer: \"NaN\"");
    let mut rows: Vec<String> = spin_rows(12, 16).lines().map(String::from).collect();
    rows[4] = format!("1,0.5,{}", rows[4].splitn(3, ',').nth(2).unwrap());
    write(p, "half.csv", &(rows.join("\n") + "\n"));
    fails(p, &base("half.csv"), "error: half.csv:5:2: not an integer: \"0.5\"");
    write(p, "three.csv", &spin_rows(3, 16));
    fails(p, &base("three.csv"), "error: three.csv: too few samples: 3 (need at least 10)");
    write(p, "s16.csv", &spin_rows(20, 16));
    let mut a = base("s16.csv");
    a.extend(["--statistic", "v", "--bootstrap", "multinomial"]);
    fails(p, &a, "error: --bootstrap multinomial needs --statistic u");
    write(
        p,
        "asym.json",
        r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 4,
      "J": [[0, 0, 0, 0.2], [0, 0, 0, 0], [0, 0, 0, 0], [0.1, 0, 0, 0]]}"#,
    );
    fails(
        p,
        &["--test", "kdsd", "--samples", "s16.csv", "--model", "asym.json"],
        "error: asym.json: J is not symmetric: J[0][3] = 0.2, J[3][0] = 0.1",
    );
    let mut a = base("s16.csv");
    a.extend(["--reps", "0"]);
    fails(p, &a, "error: --reps must be at least 1");
    let mut a = base("s16.csv");
    a.extend(["--alpha", "1.5"]);
    fails(p, &a, "error: --alpha must be in (0, 1)");
    write(p, "potts.json", r#"{"schema": "dlp.model.v1", "kind": "potts", "d": 16, "K": 3}"#);
    let cat: String =
        (0..12).map(|a| (0..16).map(|i| ((a + i) % 3).to_string()).collect::<Vec<_>>().join(",") + "\n").collect();
    write(p, "cat.csv", &cat);
    fails(
        p,
        &["--test", "gfksd", "--samples", "cat.csv", "--model", "potts.json", "--surrogate", "relaxed"],
        "error: --surrogate relaxed needs an ising or rbm model",
    );
    // b = 406 on spins: a −1 coordinate has log-ratio ℓ(fwd x) − ℓ(x) = 2·406 = 812.
    write(
        p,
        "peaked.json",
        &format!(r#"{{"schema": "dlp.model.v1", "kind": "ising", "d": 16, "b": [{}]}}"#, vec!["406"; 16].join(",")),
    );
    let mut rows: Vec<String> = (0..20).map(|_| vec!["1"; 16].join(",")).collect();
    rows[16] = format!("{},-1", vec!["1"; 15].join(","));
    write(p, "peaked.csv", &(rows.join("\n") + "\n"));
    fails(
        p,
        &["--test", "kdsd", "--samples", "peaked.csv", "--model", "peaked.json"],
        "error: peaked.json: score overflow at sample 17 (log-ratio 812)",
    );
    // Also exit 2: unreadable file, jitter of the wrong shape or outside (0,1), and
    // --reference with --model-samples.
    let missing = dlp(p, &base("missing.csv"));
    assert_eq!(missing.status.code(), Some(2));
    let line = String::from_utf8_lossy(&missing.stderr).to_string();
    assert!(line.starts_with("error: missing.csv: ") && line.lines().count() == 1, "{line}");
    let gf = |jitter: &'static str| {
        vec!["--test", "gfksd", "--samples", "samples.csv", "--model", "model.json", "--jitter", jitter]
    };
    write(p, "j_short.csv", &repeated(&JITTER_8_1, 1).replace("x0,x1,x2\n", ""));
    fails(p, &gf("j_short.csv"), "error: j_short.csv: jitter has 5 rows but samples.csv has 10 samples");
    let mut bad = repeated(&JITTER_8_1, 2).replace("x0,x1,x2\n", "");
    bad = bad.replacen("0.6,", "1.5,", 1);
    write(p, "j_bad.csv", &bad);
    fails(p, &gf("j_bad.csv"), "error: j_bad.csv:3:2: value \"1.5\" is not a number in (0, 1)");
    write(p, "j_cols.csv", &"0.5,0.5\n".repeat(10));
    fails(p, &gf("j_cols.csv"), "error: j_cols.csv: rows have 2 values but the model has d = 3");
    write(p, "ref.csv", &repeated(&SAMPLES_8_1, 2));
    fails(
        p,
        &[
            "--test",
            "mmd",
            "--samples",
            "samples.csv",
            "--model",
            "model.json",
            "--reference",
            "ref.csv",
            "--model-samples",
            "20",
        ],
        "error: --reference and --model-samples cannot be used together",
    );
    // Clap's own parse errors are one line too.
    fails(p, &["--test", "ksd", "--samples", "samples.csv"], &{
        let o = dlp(p, &["--test", "ksd", "--samples", "samples.csv"]);
        String::from_utf8_lossy(&o.stderr).trim_end().to_string()
    });
}

#[test]
fn the_model_null_is_the_library_monte_carlo_test_for_any_thread_count() {
    use dlp_gof::{ModelDraws, model_replicates, p_value};
    let dir = setup();
    let p = dir.path();
    let args = ["--test", "kdsd", "--samples", "samples.csv", "--model", "model.json", "--reps", "50"];
    let model_args = [&args[..], &["--bootstrap", "model", "--seed", "7"]].concat();
    let run = |threads: &str| {
        Command::new(env!("CARGO_BIN_EXE_dlp"))
            .current_dir(p)
            .env("RAYON_NUM_THREADS", threads)
            .arg("gof")
            .args(&model_args)
            .output()
            .expect("run dlp")
    };
    let (one, two) = (run("1"), run("2"));
    assert_eq!(one.stdout, two.stdout, "the thread count changed the result");
    let j = ok_json(&one);
    assert_eq!(j["bootstrap"]["method"], "model");
    assert_eq!(j["bootstrap"]["sampler"], "exact");
    assert_eq!(j["bootstrap"]["reps"], 50);
    // The observed statistic is the bootstrap run's; the p-value is the library's Monte Carlo
    // test: 50 data sets of n = 10 exact draws from the model, each one's KDSD U.
    let boot = ok_json(&dlp(p, &args));
    assert_eq!(j["statistic"], boot["statistic"]);
    let model = dlp_models::load_model(&p.join("model.json")).unwrap();
    let t = model.as_target();
    let xs: Vec<u32> = repeated(&SAMPLES_8_1, 2)
        .lines()
        .skip(1)
        .flat_map(|l| l.split(',').map(|v| t.space().index_of_value(v.parse().unwrap()).unwrap()).collect::<Vec<_>>())
        .collect();
    let null = dlp_gof::NullTest {
        statistic: dlp_gof::Statistic::U,
        bootstrap: dlp_gof::Bootstrap::Multinomial,
        reps: 1,
        seed: 0,
    };
    let stat = |ys: &[u32], seed: u64| {
        let opts =
            dlp_gof::KdsdOptions { kernel: dlp_gof::BaseKernel::default(), null: dlp_gof::NullTest { seed, ..null } };
        Ok(dlp_gof::kdsd_test(t, ys, &opts)?.null.statistic)
    };
    let observed = stat(&xs, 0).unwrap();
    close(j["statistic"].as_f64().unwrap(), observed, "observed U");
    let reps = model_replicates(t, 10, 50, 7, ModelDraws::Exact, stat).unwrap();
    // (serde_json reads floats to within an ulp, so compare the count: p·(B + 1).)
    assert_eq!((j["p_value"].as_f64().unwrap() * 51.0).round(), (p_value(observed, &reps) * 51.0).round());
    // GF-KSD takes it too (replicates draw their own jitter); MMD always permutes.
    let g = ok_json(&dlp(
        p,
        &[
            "--test",
            "gfksd",
            "--samples",
            "samples.csv",
            "--model",
            "model.json",
            "--reps",
            "20",
            "--bootstrap",
            "model",
        ],
    ));
    assert_eq!(g["bootstrap"]["method"], "model");
    let pv = g["p_value"].as_f64().unwrap();
    assert!(pv > 0.0 && pv <= 1.0 && (pv * 21.0 - (pv * 21.0).round()).abs() < 1e-9, "p = {pv}");
    fails(
        p,
        &["--test", "mmd", "--samples", "samples.csv", "--model", "model.json", "--bootstrap", "model"],
        "error: --bootstrap model is for kdsd and gfksd; mmd always permutes",
    );
    // A space of 2^25 states is drawn by Gibbs, with a warning.
    write(
        p,
        "m25.json",
        r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 25,
      "lattice": {"shape": [5, 5], "periodic": true, "coupling": 0.2}}"#,
    );
    write(p, "s25.csv", &spin_rows(12, 25));
    let j = ok_json(&dlp(
        p,
        &[
            "--test",
            "kdsd",
            "--samples",
            "s25.csv",
            "--model",
            "m25.json",
            "--reps",
            "5",
            "--bootstrap",
            "model",
            "--burnin",
            "3",
        ],
    ));
    assert_eq!(j["bootstrap"]["sampler"], "gibbs");
    assert_eq!(j["bootstrap"]["burnin"], 3);
    assert!(j["warnings"][0].as_str().unwrap().contains("Gibbs"), "{}", j["warnings"]);
}
