//! Runs `fig1a`, `fig1b`, `fig2` and `fig7` with `--quick` and checks their files and key
//! numbers against the spec (`reproduction.md` §4.6, §4.7, §4.9), never against our own output.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Runs `bin --quick --seed 1 --out <dir> extra…` and returns its summary.json.
fn run(bin: &str, out: &Path, extra: &[&str]) -> Value {
    let o = Command::new(bin).args(["--quick", "--seed", "1", "--out"]).arg(out).args(extra).output().unwrap();
    assert!(o.status.success(), "{bin} failed: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// Every file is there, and nothing else (no temporaries left behind).
fn assert_files(dir: &Path, files: &[&str]) {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    let mut want: Vec<String> = files.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(names, want);
    let png = std::fs::read(dir.join(files.iter().find(|f| f.ends_with(".png")).unwrap())).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
}

/// `ours` equals a spec value printed with `digits` significant digits, to half a unit in
/// its last digit (≤ 1e-6 absolute for every table used here).
fn matches_printed(ours: f64, spec: f64, digits: i32) -> bool {
    let unit = 10f64.powi(spec.abs().log10().floor() as i32 - digits + 1);
    (ours - spec).abs() <= 0.5 * unit + 1e-12
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn fig1a_matches_spec_4_7() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(env!("CARGO_BIN_EXE_fig1a"), dir.path(), &[]);
    assert_files(dir.path(), &["bias.csv", "summary.json", "fig1a.svg", "fig1a.png", "meta.json"]);
    // Spec §4.7: log Z and E_π[s_i] of the 3×3 lattice.
    let l3 = &s["lattices"][0];
    assert_eq!(l3["side"], 3);
    assert!((num(&l3["log_z"]) - 7.1153733652).abs() < 1e-9);
    assert!((num(&l3["mean_s"]) - 0.4650843054).abs() < 1e-9);
    // Spec §4.7 table (α, ‖π_α − π‖₁ to 6 significant digits, E_{π_α}[s_i] to 8 decimals).
    let spec = [
        (0.05, 8.4885e-5, 5, 0.46505119),
        (0.1, 1.25055e-2, 6, 0.46020517),
        (0.2, 1.41961e-1, 6, 0.41029339),
        (0.4, 4.16807e-1, 6, 0.30983958),
        (0.8, 6.31654e-1, 6, 0.23298402),
        (1.6, 7.41585e-1, 6, 0.19285384),
    ];
    let table = s["table_3x3"].as_array().unwrap();
    assert_eq!(table.len(), spec.len());
    for (row, (alpha, l1, digits, mean)) in table.iter().zip(spec) {
        assert_eq!(num(&row["alpha"]), alpha);
        assert!(matches_printed(num(&row["l1"]), l1, digits), "α = {alpha}: {} vs {l1}", row["l1"]);
        assert!(
            matches_printed(num(&row["l1_matrix"]), l1, digits),
            "α = {alpha}: matrix {} vs {l1}",
            row["l1_matrix"]
        );
        assert!((num(&row["tv"]) - 0.5 * l1).abs() <= 0.5e-6);
        assert!((num(&row["mean_s"]) - mean).abs() <= 0.5e-8 + 1e-12, "α = {alpha}: {} vs {mean}", row["mean_s"]);
    }
    // The matrix and the closed form (two computations) agree where the solve is well
    // conditioned; the bounds of §4.8 hold.
    assert!(num(&s["max_l1_matrix_vs_closed_form_alpha_ge_0.05"]) < 1e-10);
    assert_eq!(s["bounds_hold"], true);
    assert!(
        std::fs::read_to_string(dir.path().join("bias.csv")).unwrap().starts_with("lattice,alpha,l1,tv,l1_matrix,")
    );
}

#[test]
fn fig1b_matches_spec_4_6() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(env!("CARGO_BIN_EXE_fig1b"), dir.path(), &[]);
    assert_files(
        dir.path(),
        &["bias.csv", "counterexample.csv", "summary.json", "fig1b.svg", "fig1b.png", "meta.json"],
    );
    // Spec §4.6, printed to 6 decimals.
    let spec = [
        (0.5, 0.0, 0.018800),
        (0.5, 0.25, 0.031746),
        (0.5, 0.5, 0.045230),
        (0.5, 1.0, 0.089855),
        (0.5, 2.0, 0.159873),
        (1.0, 0.0, 0.042661),
        (1.0, 0.25, 0.064363),
        (1.0, 0.5, 0.090194),
        (1.0, 1.0, 0.186551),
        (1.0, 2.0, 0.387893),
    ];
    let table = s["table"].as_array().unwrap();
    assert_eq!(table.len(), spec.len());
    for (row, (alpha, a, l1)) in table.iter().zip(spec) {
        assert_eq!((num(&row["alpha"]), num(&row["a"])), (alpha, a));
        assert!((num(&row["l1"]) - l1).abs() <= 0.5e-6 + 1e-12, "α = {alpha}, a = {a}: {} vs {l1}", row["l1"]);
    }
    // At a = 0 the target is log-quadratic: the matrix law is the closed form (§4.2).
    for c in s["closed_form_at_a_0"].as_array().unwrap() {
        assert!(num(&c["l1_matrix_vs_closed_form"]) < 1e-12, "{c}");
    }
    // Counterexample: the law is the spec's vector (8 decimals) for every a.
    let spec_law = [0.11151539, 0.15009233, 0.15869978, 0.15938500, 0.15869978, 0.15009233, 0.11151539];
    let rows = s["counterexample"]["rows"].as_array().unwrap();
    assert!(rows.len() >= 5);
    for r in rows {
        for (p, q) in r["law"].as_array().unwrap().iter().zip(spec_law) {
            assert!((num(p) - q).abs() <= 0.5e-8 + 1e-12, "a = {}: {p} vs {q}", r["a"]);
        }
    }
}

#[test]
fn fig2_quick_moves_agree_with_spec_4_9() {
    let dir = tempfile::tempdir().unwrap();
    let s = run(env!("CARGO_BIN_EXE_fig2"), dir.path(), &[]);
    assert_files(dir.path(), &["moves.csv", "ess.csv", "summary.json", "fig2.svg", "fig2.png", "meta.json"]);
    // Spec §4.9 (400 chains × 2,500 steps, ±0.02). The quick run has 40 chains × 200 steps
    // after 100 burn-in: 8,000 chain-steps with integrated autocorrelation ≲ 3 give standard
    // errors ≈ 0.5/√2700 ≈ 0.01 for acceptance and ≈ 2/√2700 ≈ 0.04 for flip counts. The
    // tolerances (0.07 and 0.35) are ≥ 5 such errors plus the spec's ±0.02, so a correct
    // sampler fails with probability far below 1e-3 over the 17 comparisons.
    #[allow(clippy::approx_constant)] // 3.14 and 3.17 are measured move counts, not π.
    let dmala = [
        (0.1, 0.999, 0.14, 0.14),
        (0.2, 0.937, 1.53, 1.39),
        (0.4, 0.688, 4.43, 2.96),
        (0.6, 0.539, 6.04, 3.17),
        (0.8, 0.461, 6.97, 3.14),
    ];
    let configs = s["left"]["configs"].as_array().unwrap();
    let find = |fam: &str, p: f64| configs.iter().find(|c| c["family"] == fam && num(&c["parameter"]) == p).unwrap();
    for (alpha, acc, prop, moved) in dmala {
        let c = find("dmala", alpha);
        assert!((num(&c["acceptance"]) - acc).abs() < 0.07, "dmala α = {alpha}: {c}");
        assert!((num(&c["proposed_flips"]) - prop).abs() < 0.35, "dmala α = {alpha}: {c}");
        assert!((num(&c["accepted_move"]) - moved).abs() < 0.35, "dmala α = {alpha}: {c}");
    }
    for (k, acc) in [(1.0, 0.955), (2.0, 0.863), (4.0, 0.659), (6.0, 0.494)] {
        let c = find("gwg", k);
        assert!((num(&c["acceptance"]) - acc).abs() < 0.07, "gwg-{k}: {c}");
        // GWG-k proposes at most k distinct flips (draws with replacement).
        assert!(num(&c["proposed_flips"]) <= k + 1e-12);
    }
    let samplers = s["right"]["samplers"].as_array().unwrap();
    let names: Vec<&str> = samplers.iter().map(|x| x["sampler"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["bg-1", "hb-10-1", "gwg", "dmala(0.4)", "lb", "rmala(0.014)", "pas-3", "dlmc(1)", "acs-dmala(3)"]
    );
    for x in samplers {
        for key in ["ess_tfp", "ess_bulk"] {
            let m = num(&x[key]["median"]);
            // Chain 0 keeps 1,800 of 2,000 steps; ESS is positive and, for these mixing
            // samplers, below a few times the draw count.
            assert!(m > 1.0 && m < 10_000.0, "{} {key}: {m}", x["sampler"]);
        }
    }
    let ess = std::fs::read_to_string(dir.path().join("ess.csv")).unwrap();
    assert_eq!(ess.lines().count(), 1 + 9 * 25);
}

#[test]
fn fig7_truth_matches_spec_4_7_on_3x3() {
    // On the 3×3 lattice at σ_c = 0.1, fig7's one-pass truth must give spec §4.7's E_π[s_i]
    // and DULA's E_{π_α}[s_i] at α = 0.2 (its own Z_α formula, not dlp-exact's).
    let dir = tempfile::tempdir().unwrap();
    let s = run(
        env!("CARGO_BIN_EXE_fig7"),
        dir.path(),
        &["--side", "3", "--sigmas", "0.1,0.3", "--budget", "0.02", "--chains", "4"],
    );
    assert_files(dir.path(), &["final.csv", "curves.csv", "summary.json", "fig7.svg", "fig7.png", "meta.json"]);
    let t = &s["truth"][0];
    assert_eq!(num(&t["sigma"]), 0.1);
    assert!((num(&t["mean_s"]) - 0.4650843054).abs() < 1e-9, "{t}");
    assert!((num(&t["dula_mean_s"]) - 0.41029339).abs() <= 0.5e-8 + 1e-12, "{t}");
    let cells = s["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2 * 7);
    for c in cells {
        assert!(num(&c["steps"]) >= 10.0 && num(&c["final_log_rmse"]).is_finite(), "{c}");
    }
}
