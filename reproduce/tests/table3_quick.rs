//! `table3 --quick` end to end (an untrained tiny random BERT: a plumbing check): the files,
//! the paper's Table 3 beside ours, the kept generations per sequence, identical output for
//! the same seed, and bad flags refused with one line and no output.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn table3(out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_table3"))
        .args(["--quick", "--seed", "5", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn table3_quick_writes_its_files_with_the_paper_beside_ours() {
    let dir = tempfile::tempdir().unwrap();
    let o = table3(dir.path(), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["generations.csv", "metrics.csv", "summary.json", "table3.svg", "table3.png", "meta.json"] {
        assert!(dir.path().join(f).is_file(), "missing {f}");
    }
    let s: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    let rows = s["models"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "gibbs, gwg, dula, dmala");
    // The pilot's α goes to DULA and DMALA; Gibbs and GWG have none.
    let alpha = s["models"][0]["alpha"].as_f64().unwrap();
    assert_eq!(rows[2]["alpha"].as_f64(), Some(alpha));
    assert_eq!(rows[3]["alpha"].as_f64(), Some(alpha));
    assert!(rows[0]["alpha"].is_null());
    // An α at the edge of the pilot's grid is flagged (summary and one warning line): the
    // criterion may still rise past it.
    let tried: Vec<f64> = s["models"][0]["pilot"].as_array().unwrap().iter().map(|p| p[0].as_f64().unwrap()).collect();
    let edge = alpha == tried.iter().copied().fold(f64::INFINITY, f64::min)
        || alpha == tried.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(s["models"][0]["alpha_at_grid_edge"].as_bool(), Some(edge));
    let warned = String::from_utf8_lossy(&o.stderr).contains("is at the edge of the grid (--alpha-grid)");
    assert_eq!(warned, edge, "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rows[3]["paper"][0]["values"][0].as_f64(), Some(72.59), "BERT-base DMALA Self-BLEU");
    for r in rows {
        let b = r["ours"]["self_bleu"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&b), "Self-BLEU {b}");
        let rec = r["ours"]["recovery"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&rec), "recovery {rec}");
    }
    assert_eq!(rows[0]["acceptance"].as_f64(), Some(1.0), "Wang & Cho's scan has no rejection");
    // 2 sequences × top 2 × 4 samplers generations, best first by f within each sequence.
    let gens = std::fs::read_to_string(dir.path().join("generations.csv")).unwrap();
    let lines: Vec<Vec<&str>> = gens.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(lines.len(), 16);
    for pair in lines.chunks(2) {
        let (a, b) = (pair[0][4].parse::<f64>().unwrap(), pair[1][4].parse::<f64>().unwrap());
        assert!(a >= b, "ranked by f: {a} then {b}");
        assert_eq!(pair[0][5].len(), 16, "16 residues, no specials: {}", pair[0][5]);
    }
    // Same seed, same generations.
    let again = tempfile::tempdir().unwrap();
    assert!(table3(again.path(), &[]).status.success());
    assert_eq!(gens, std::fs::read_to_string(again.path().join("generations.csv")).unwrap());
}

#[test]
fn table3_refuses_bad_flags_with_one_line_and_no_output() {
    for extra in [&["--top", "30"][..], &["--samplers", "nosuch"], &["--models", "bert-huge"], &["--alpha-grid=0,-1"]] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let o = Command::new(env!("CARGO_BIN_EXE_table3")).args(extra).arg("--out").arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(!out.exists(), "{extra:?} wrote output");
    }
}

#[test]
fn an_interrupted_table3_resumes_from_its_cells() {
    let dir = tempfile::tempdir().unwrap();
    assert!(table3(dir.path(), &[]).status.success());
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    let (gens, metrics) = (read("generations.csv"), read("metrics.csv"));
    // Pilot: 5 α × 2 sequences; then 4 samplers × 2 sequences. "Interrupt" by removing a
    // pilot cell and the last sampler's last sequence.
    let cells = dir.path().join("cells");
    assert_eq!(std::fs::read_dir(&cells).unwrap().count(), 18);
    for k in ["quick_pilot_dmala___0.3_seq2.json", "quick_dmala___10_seq2.json"] {
        std::fs::remove_file(cells.join(k)).unwrap();
    }
    let o = table3(dir.path(), &["--resume"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read("generations.csv"), gens, "a resumed run writes the uninterrupted run's generations");
    assert_eq!(read("metrics.csv"), metrics);
    let meta: Value = serde_json::from_str(&read("meta.json")).unwrap();
    assert_eq!(meta["resumed_cells"], 16);
    // Another protocol in the same directory: refused in one line.
    let o = table3(dir.path(), &["--resume", "--steps", "4"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.starts_with("error: --resume: ") && e.lines().count() == 1, "{e}");
}
