//! The learning experiments end to end at `--quick` scale (synthetic stand-in data, no
//! download), plus checks that need the sampler and GOF crates next to `dlp-learn`.

use dlp_core::Space;
use dlp_gof::mmd2_hamming_v;
use dlp_learn::pcd::{PcdConfig, lattice_couplings, lattice_gibbs_data, learn_pcd};
use dlp_samplers::{SamplerParams, build_sampler};
use std::path::Path;
use std::process::Command;

fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().skip(1).map(|l| l.split(',').map(str::to_string).collect()).collect()
}

#[test]
fn fig4_quick_writes_its_files_and_a_loadable_rbm() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fig4"))
        .args(["--quick", "--threads", "2", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for f in [
        "rbm.json",
        "mmd.csv",
        "summary.json",
        "meta.json",
        "fig4.svg",
        "fig4.png",
        "fig8_ground_truth.png",
        "fig8_dmala.png",
    ] {
        assert!(dir.path().join(f).is_file(), "missing {f}");
    }
    // The trained RBM is a valid model file of the right shape.
    let model = dlp_models::load_model(&dir.path().join("rbm.json")).unwrap();
    let Some(r) = model.downcast_ref::<dlp_models::Rbm>() else { panic!("not an rbm") };
    assert_eq!((r.d(), r.m()), (784, 50));
    // 5 samplers × (100/10 + 1) points, finite MMD² ≥ 0 (V-statistic of a PSD kernel).
    let rows = csv_rows(&dir.path().join("mmd.csv"));
    assert_eq!(rows.len(), 5 * 11);
    for r in &rows {
        let v: f64 = r[4].parse().unwrap();
        assert!(v.is_finite() && v >= -1e-12, "{r:?}");
    }
    // Reusing the saved RBM skips training and gives the same model-dependent numbers.
    let dir2 = tempfile::tempdir().unwrap();
    let out2 = Command::new(env!("CARGO_BIN_EXE_fig4"))
        .args(["--quick", "--samplers", "dula@0.1", "--rbm"])
        .arg(dir.path().join("rbm.json"))
        .arg("--out")
        .arg(dir2.path())
        .output()
        .unwrap();
    assert!(out2.status.success(), "{}", String::from_utf8_lossy(&out2.stderr));
    let a: Vec<_> = rows.iter().filter(|r| r[0] == "dula").map(|r| r[4].clone()).collect();
    let b: Vec<_> = csv_rows(&dir2.path().join("mmd.csv")).iter().map(|r| r[4].clone()).collect();
    assert_eq!(a, b, "the saved model must reproduce the run (up to the 8 printed digits)");
}

#[test]
fn fig4_bad_input_is_one_error_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fig4"))
        .args(["--quick", "--rbm", "/nonexistent/rbm.json", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1, "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_fig4")).args(["--quick", "--samplers", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn fig5_quick_writes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fig5")).args(["--quick", "--out"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for f in ["curves.csv", "final_vs_k.csv", "summary.json", "meta.json", "fig5.svg", "fig5.png"] {
        assert!(dir.path().join(f).is_file(), "missing {f}");
    }
    // Panel c: 3 samplers × 3 values of K.
    assert_eq!(csv_rows(&dir.path().join("final_vs_k.csv")).len(), 9);
}

#[test]
fn mmd_agrees_with_the_gof_crate() {
    // Two independent implementations of MMD²_b with exp(−H/D): dlp-learn's bit-packed one
    // and dlp-gof's Gram-matrix one.
    let d = 70;
    let xs: Vec<u32> = (0..12 * d).map(|k| ((k * 7 + k / 5) % 3 == 0) as u32).collect();
    let ys: Vec<u32> = (0..9 * d).map(|k| ((k * 11 + k / 3) % 4 == 0) as u32).collect();
    let ours = mmd2_hamming_v(&xs, &ys, d);
    let theirs = dlp_gof::mmd::mmd_statistic(&Space::binary(d), &xs, &ys, 1.0, dlp_gof::Statistic::V).unwrap();
    assert!((ours - theirs).abs() < 1e-12, "{ours} vs {theirs}");
}

#[test]
fn pcd_with_systematic_gibbs_learns_a_small_lattice() {
    // 4 × 4 lattice (D = 16), σ_c = 0.1 (disordered phase, where J is well identified; at
    // 0.25 the samples are nearly all aligned); K = 5 < D, so the scan must continue across
    // iterations (coordinate rotation) for every site to be refreshed. After 600 Adam steps
    // at lr 0.01 without L1, the 64 directed lattice entries must average ≈ σ_c and the 176
    // off-lattice ones ≈ 0. Each entry's error is ≈ 0.02–0.03 (2,000 samples, Adam noise ≈ lr),
    // so the averages have sd ≤ 0.005 and the ±0.03 bands are > 5 sd wide.
    let (l, sigma) = (4, 0.1);
    let d = l * l;
    let data = lattice_gibbs_data(l, sigma, 2_000, 20_000, 3).unwrap();
    let j_true = lattice_couplings(l, sigma);
    let cfg =
        PcdConfig { iters: 600, k: 5, batch: 200, buffer: 100, lr: 0.01, l1: 0.0, init_std: 0.01, record_every: 600 };
    let sampler = build_sampler("gibbs-sweep", &SamplerParams::default()).unwrap();
    let (records, j) = learn_pcd(sampler.as_ref(), &data, d, &j_true, &cfg, 5, |_| {}).unwrap();
    let (first, last) = (records[0].rmse, records.last().unwrap().rmse);
    let (mut on, mut n_on, mut off, mut n_off) = (0.0, 0, 0.0, 0);
    for k in 0..d * d {
        if j_true[k] != 0.0 {
            on += j[k];
            n_on += 1;
        } else if k / d != k % d {
            off += j[k];
            n_off += 1;
        }
    }
    let (on, off) = (on / n_on as f64, off / n_off as f64);
    assert!((on - sigma).abs() < 0.03 && off.abs() < 0.03, "lattice mean {on}, off-lattice mean {off}");
    assert!(last < first, "RMSE {first} → {last}");
    // The learned couplings are symmetric with a zero diagonal.
    for a in 0..d {
        assert_eq!(j[a * d + a], 0.0);
        for b in 0..d {
            assert_eq!(j[a * d + b], j[b * d + a]);
        }
    }
}
