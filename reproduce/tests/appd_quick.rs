//! `000-appD --quick` end to end (feature `plain` once merged with the split features: it
//! trains an RBM through dlp-learn): its files, the paper's App. D claim as a property of the
//! output (DMALA's acceptance collapses without the distance term, α = ∞), DULA's flips at
//! α = ∞, and a bad flag refused with one line and no output.

mod appendix;

use appendix::{has_files, run, summary};

#[test]
fn app_d_acceptance_collapses_without_the_distance_term() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(env!("CARGO_BIN_EXE_000-appD"), dir.path(), &["--samplers", "dmala@0.2,dmala@inf,dula@0.1,dula@inf"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    has_files(
        dir.path(),
        &["rbm.json", "mmd.csv", "samplers.csv", "summary.json", "000-appD.svg", "000-appD.png", "meta.json"],
    );
    let s = summary(dir.path());
    let row = |name: &str, alpha: &str| {
        let rows = s["samplers"].as_array().unwrap();
        rows.iter()
            .find(|r| r["sampler"] == name && r["step_size"] == alpha)
            .unwrap_or_else(|| panic!("{name}@{alpha}"))
            .clone()
    };
    let acc = |name: &str, alpha: &str| row(name, alpha)["acceptance"].as_f64().unwrap();
    // DMALA at the paper code's α = 0.2 accepts about half (spec §3.3); at α = ∞ almost nothing.
    assert!((0.15..0.9).contains(&acc("dmala", "0.2")), "dmala(0.2) acceptance {}", acc("dmala", "0.2"));
    assert!(acc("dmala", "inf") < 0.01, "dmala(inf) acceptance {}", acc("dmala", "inf"));
    assert_eq!(s["paper_claims"][0]["holds"], true);
    // DULA has no MH step: it accepts every proposal, and at α = ∞ it flips many more pixels.
    assert_eq!(acc("dula", "inf"), 1.0);
    let flips = |a: &str| row("dula", a)["changed_per_step"].as_f64().unwrap();
    assert!(flips("inf") > 10.0 * flips("0.1"), "dula flips {} vs {}", flips("inf"), flips("0.1"));
}

#[test]
fn a_bad_sampler_is_refused_with_one_line_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let o = run(env!("CARGO_BIN_EXE_000-appD"), &out, &["--samplers", "nosuch@0.2"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.trim().lines().count() == 1 && err.starts_with("error:"), "{err}");
    assert!(!out.exists(), "wrote {}", out.display());
}
