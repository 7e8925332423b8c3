//! `dlp sample --sampler gf-svgd` end to end: on the shipped spin Ising and Potts example files
//! it writes one row per particle (`--chains` is the particle count) in the samples format,
//! identical for 1 and 2 threads; the relaxed surrogate on a Potts model is one `error:` line,
//! exit 2, and no output file. (Marginals against exact enumeration: dlp-exact/tests/gf_svgd.rs.)

use std::path::Path;
use std::process::{Command, Output};

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/examples").join(name).display().to_string()
}

fn sample(model: &str, sampler: &str, out: &Path, threads: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dlp"))
        .args(["sample", "--model", &example(model), "--sampler", sampler, "--chains", "30", "--steps", "40"])
        .args(["--seed", "4", "--threads", threads, "--quiet", "--out"])
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn gf_svgd_writes_one_row_per_particle_for_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    for (model, values) in [("ising-4x4.json", &["-1", "1"][..]), ("potts-3.json", &["0", "1", "2"][..])] {
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        let out = sample(model, "gf-svgd", &a, "1");
        assert!(out.status.success(), "{model}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(sample(model, "gf-svgd", &b, "2").status.success());
        let text = std::fs::read_to_string(&a).unwrap();
        assert_eq!(text, std::fs::read_to_string(&b).unwrap(), "{model}: 1 vs 2 threads");
        let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.starts_with('x')).collect();
        assert_eq!(rows.len(), 30, "{model}: one row per particle");
        assert!(rows.iter().all(|r| r.split(',').all(|v| values.contains(&v))), "{model}: {rows:?}");
    }
}

#[test]
fn relaxed_surrogate_on_a_potts_model_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("out.csv");
    let out = sample("potts-3.json", "gf-svgd-relaxed", &out_file, "1");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains("relaxed surrogate"), "{err}");
    assert!(!out_file.exists());
}
