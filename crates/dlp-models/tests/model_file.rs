//! Model files: §10.3 validation with the §10.5 error lines, JSON/TOML equivalence, and the
//! worked examples of gof.md §8 and reproduction.md §4.1 (expected numbers from the specs).

use dlp_core::TargetExt;
use dlp_core::{DomainKind, Space, Target};
use dlp_models::{Format, IsingModel, Model, Rbm, load_model, parse_model_str};
use std::path::{Path, PathBuf};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/examples")
}

fn json_err(text: &str) -> String {
    parse_model_str(text, Format::Json, "model.json").unwrap_err().to_string()
}

fn toml_err(text: &str) -> String {
    parse_model_str(text, Format::Toml, "model.toml").unwrap_err().to_string()
}

/// Spin indices from ±1 values.
fn spins(s: &[i64]) -> Vec<u32> {
    s.iter().map(|&v| u32::from(v == 1)).collect()
}

#[test]
fn asymmetric_j_gives_the_spec_line() {
    // gof.md §10.5: `model.json: J is not symmetric: J[0][3] = 0.2, J[3][0] = 0.1`.
    let text = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 4,
        "J": [[0, 0, 0, 0.2], [0, 0, 0, 0], [0, 0, 0, 0], [0.1, 0, 0, 0]]}"#;
    assert_eq!(json_err(text), "model.json: J is not symmetric: J[0][3] = 0.2, J[3][0] = 0.1");
    // Within 1e-12 is symmetric.
    let ok = r#"{"schema": "dlp.model.v1", "kind": "ising", "d": 2, "J": [[0, 0.3], [0.3000000000000005, 0]]}"#;
    assert!(parse_model_str(ok, Format::Json, "m.json").is_ok());
}

#[test]
fn every_validation_rule_has_a_one_line_message() {
    let base = r#""schema": "dlp.model.v1""#;
    let cases: Vec<(String, &str)> = vec![
        (r#"{"kind": "ising", "d": 2}"#.into(), "model.json: missing key \"schema\" (must be \"dlp.model.v1\")"),
        (
            r#"{"schema": "dlp.model.v2", "kind": "ising", "d": 2}"#.into(),
            "model.json: schema must be \"dlp.model.v1\", found \"dlp.model.v2\"",
        ),
        (format!(r#"{{{base}, "kind": "ising", "d": 2, "colour": 1}}"#), "model.json: unknown key \"colour\""),
        (
            format!(r#"{{{base}, "kind": "ising", "d": 2, "W": [[1], [2]]}}"#),
            "model.json: key \"W\" does not belong to a ising model",
        ),
        (format!(r#"{{{base}, "kind": "ising", "d": 0}}"#), "model.json: d must be an integer >= 1, found 0"),
        (
            format!(r#"{{{base}, "kind": "ising", "d": 2, "domain": "categorical", "K": 2}}"#),
            "model.json: domain \"categorical\" is not supported by the ising model (use spin or binary)",
        ),
        (
            format!(r#"{{{base}, "kind": "potts", "d": 2, "domain": "spin"}}"#),
            "model.json: domain \"spin\" is not supported by the potts model (use categorical)",
        ),
        (
            format!(r#"{{{base}, "kind": "potts", "d": 2}}"#),
            "model.json: missing key \"K\" (required for the categorical domain)",
        ),
        (
            format!(r#"{{{base}, "kind": "ising", "d": 2, "values": [0, 1]}}"#),
            "model.json: values is only allowed with the categorical domain, not spin",
        ),
        (
            format!(r#"{{{base}, "kind": "potts", "d": 2, "K": 3, "values": [0, 5, 0]}}"#),
            "model.json: values[2] = 0 repeats values[0]",
        ),
        (format!(r#"{{{base}, "kind": "ising", "d": 3, "b": [1, 2]}}"#), "model.json: b has length 2 but d = 3"),
        (
            format!(r#"{{{base}, "kind": "ising", "d": 2, "J": [[0, 1], [1]]}}"#),
            "model.json: J[1] has 1 entries but d = 2",
        ),
        (
            format!(r#"{{{base}, "kind": "ising", "d": 2, "J": [[0.5, 1], [1, 0]]}}"#),
            "model.json: J has a nonzero diagonal: J[0][0] = 0.5",
        ),
        (
            format!(r#"{{{base}, "kind": "ising", "d": 3, "edges": [[1, 0, 0.5]]}}"#),
            "model.json: edges[0]: need 0 <= i < j < d (d = 3), found [1, 0]",
        ),
        (
            format!(r#"{{{base}, "kind": "ising", "d": 3, "edges": [[0, 3, 0.5]]}}"#),
            "model.json: edges[0]: need 0 <= i < j < d (d = 3), found [0, 3]",
        ),
        (
            format!(r#"{{{base}, "kind": "ising", "d": 3, "edges": [[0, 1, 0.5], [1, 2, 1], [0, 1, 2]]}}"#),
            "model.json: edges[2]: pair (0, 1) appears twice (first at edges[0])",
        ),
        (
            format!(
                r#"{{{base}, "kind": "ising", "d": 10, "lattice": {{"shape": [3, 3], "periodic": true, "coupling": 0.2}}}}"#
            ),
            "model.json: lattice shape [3, 3] has 9 sites but d = 10",
        ),
        (
            format!(r#"{{{base}, "kind": "ising", "d": 2, "J": [[0, 1], [1, 0]], "edges": []}}"#),
            "model.json: give at most one of J, edges and lattice (found J and edges)",
        ),
        (
            format!(r#"{{{base}, "kind": "categorical", "d": 2, "K": 2, "probs": [[0.5, 0.5], [0.6, 0.3]]}}"#),
            "model.json: probs[1] sums to 0.8999999999999999, not 1 (tolerance 1e-9)",
        ),
        (
            format!(r#"{{{base}, "kind": "categorical", "d": 1, "K": 2, "probs": [[1.0, 0.0]]}}"#),
            "model.json: probs[0][1] = 0 must be > 0",
        ),
        (
            format!(r#"{{{base}, "kind": "categorical", "d": 1, "K": 2, "probs": [[1, 0]], "logits": [[0, 0]]}}"#),
            "model.json: give exactly one of probs and logits, not both",
        ),
        (
            format!(r#"{{{base}, "kind": "table", "d": 25, "domain": "binary", "log_prob": []}}"#),
            "model.json: table has K^d = 2^25 entries, more than 2^24 = 16777216",
        ),
        (
            format!(r#"{{{base}, "kind": "table", "d": 2, "domain": "binary", "log_prob": [0, 1, 2]}}"#),
            "model.json: log_prob has length 3 but K^d = 2^2 = 4",
        ),
        (
            format!(r#"{{{base}, "kind": "rbm", "d": 2, "W": [[1, 2], [3]]}}"#),
            "model.json: W[1] has 1 entries but W[0] has 2",
        ),
        (
            format!(r#"{{{base}, "kind": "rbm", "d": 2, "W": [[1], [3]], "c": [0, 0]}}"#),
            "model.json: c has length 2 but W has M = 1 columns",
        ),
        (
            format!(r#"{{{base}, "kind": "rbm", "d": 2, "W": [[1], [3]], "b": [0, "x"]}}"#),
            "model.json: b[1] must be a number, found \"x\"",
        ),
        (
            format!(r#"{{{base}, "kind": "rbm", "d": 2, "W": [[1], [3]], "domain": "categorical", "K": 3}}"#),
            "model.json: domain \"categorical\" is not supported by the rbm model (use spin or binary)",
        ),
        (format!(r#"{{{base}, "kind": "ising", "d": 2, "b": [1e400, 0]}}"#), "model.json:1:63: number out of range"),
        (
            "{\"schema\": \"dlp.model.v1\",\n \"kind\": \"ising\" \"d\": 2}".into(),
            "model.json:2:18: expected `,` or `}`",
        ),
    ];
    // serde_json places a number error at the token's last character (column 63 above).
    for (text, want) in cases {
        assert_eq!(json_err(&text), want, "for {text}");
    }
    // The known kinds are the registered ones ("ising, potts, rbm, categorical, table or
    // logistic" today), so a new kind needs no edit here.
    assert_eq!(
        json_err(&format!(r#"{{{base}, "kind": "boltzmann", "d": 2}}"#)),
        format!("model.json: unknown kind \"boltzmann\" (expected {})", dlp_models::kinds::names_list())
    );
    assert!(dlp_models::kinds::names_list().starts_with("ising, potts, rbm, categorical, table"));
}

#[test]
fn toml_errors_name_the_position_and_non_finite_numbers() {
    assert_eq!(
        toml_err("schema = \"dlp.model.v1\"\nkind = \"ising\"\nd = 2\nb = [nan, 0.0]\n"),
        "model.toml: b[0] is not a finite number: NaN"
    );
    let e = toml_err("schema = \"dlp.model.v1\"\nkind = = 3\n");
    assert!(e.starts_with("model.toml:2:"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
}

#[test]
fn json_and_toml_twins_give_the_same_model() {
    let j = load_model(&examples().join("ising-4x4.json")).unwrap();
    let t = load_model(&examples().join("ising-4x4.toml")).unwrap();
    assert_eq!(j, t);
    assert_eq!(j.kind_name(), "ising");
    assert_eq!(j.space().d, 16);
}

#[test]
fn every_example_file_loads_and_round_trips_through_to_json() {
    for name in ["ising-4x4.json", "ising-4x4.toml", "ising-3.json", "potts-3.json", "rbm-small.json"] {
        let m = load_model(&examples().join(name)).unwrap();
        let back = parse_model_str(&m.to_json(), Format::Json, "back.json").unwrap();
        assert_eq!(m, back, "{name}");
    }
}

#[test]
fn paper_lattice_equals_file_form_and_spec_4_1_extremes() {
    // reproduction.md §4.1: σ = 0.1, b = 0.2 → f(all +1) = 15, f(all −1) = 5 (50 edges, 25 sites).
    let from_code = IsingModel::paper_lattice(5, 0.1, 0.2);
    let text = format!(
        r#"{{"schema": "dlp.model.v1", "kind": "ising", "d": 25,
            "lattice": {{"shape": [5, 5], "periodic": true, "coupling": 0.2}}, "b": {:?}}}"#,
        vec![0.2; 25]
    );
    let from_file = parse_model_str(&text, Format::Json, "m.json").unwrap();
    assert_eq!(Model::from(from_code.clone()), from_file);
    assert_eq!(from_code.couplings().n_pairs(), 50);
    assert!((from_code.log_density(&[1; 25]).unwrap() - 15.0).abs() < 1e-12);
    assert!((from_code.log_density(&[0; 25]).unwrap() - 5.0).abs() < 1e-12);
    // f(s) = sᵀJs + bᵀs with J = σA written out densely, on a few states.
    let l = 5;
    let mut dense = vec![0.0; 625];
    for r in 0..l {
        for c in 0..l {
            let i = r * l + c;
            for j in [((r + 1) % l) * l + c, r * l + (c + 1) % l] {
                dense[i * 25 + j] = 0.1;
                dense[j * 25 + i] = 0.1;
            }
        }
    }
    for seed in 0..20u64 {
        let x: Vec<u32> = (0..25).map(|i| ((seed * 7919 + i * 104729) % 3 % 2) as u32).collect();
        let s: Vec<f64> = x.iter().map(|&c| 2.0 * c as f64 - 1.0).collect();
        let mut f = 0.2 * s.iter().sum::<f64>();
        for i in 0..25 {
            for j in 0..25 {
                f += s[i] * dense[i * 25 + j] * s[j];
            }
        }
        assert!((from_file.log_density(&x).unwrap() - f).abs() < 1e-12);
    }
}

#[test]
fn small_periodic_lattices_count_each_pair_once() {
    // L = 2 periodic: both neighbours along an axis are the same site → 4 distinct pairs.
    let c = dlp_models::Couplings::lattice(&[2, 2], true, 1.0).unwrap();
    assert_eq!(c.pairs().iter().map(|p| (p.0, p.1)).collect::<Vec<_>>(), vec![(0, 1), (0, 2), (1, 3), (2, 3)]);
    // Ring of 3: 3 pairs; open chain of 3: 2; a length-1 axis adds nothing.
    assert_eq!(dlp_models::Couplings::lattice(&[3], true, 1.0).unwrap().n_pairs(), 3);
    assert_eq!(dlp_models::Couplings::lattice(&[3], false, 1.0).unwrap().n_pairs(), 2);
    assert_eq!(dlp_models::Couplings::lattice(&[1, 4], true, 1.0).unwrap().n_pairs(), 4);
    assert_eq!(dlp_models::Couplings::lattice(&[4, 4], false, 1.0).unwrap().n_pairs(), 24);
}

#[test]
fn gof_8_1_ising_log_densities() {
    let m = load_model(&examples().join("ising-3.json")).unwrap();
    let xs = [[1, 1, 1], [-1, 1, -1], [1, -1, -1], [-1, -1, 1], [1, 1, -1]];
    let want = [0.6, -1.6, 0.0, 1.0, 0.2];
    for (x, w) in xs.iter().zip(want) {
        assert!((m.log_density(&spins(x)).unwrap() - w).abs() < 1e-12, "{x:?}");
    }
}

#[test]
fn gof_8_2_potts_log_densities() {
    let m = load_model(&examples().join("potts-3.json")).unwrap();
    let xs = [[0, 0, 1], [2, 1, 1], [1, 1, 0], [0, 2, 2], [2, 0, 1]];
    let want = [0.9, -0.3, 1.3, -0.3, -0.1];
    for (x, w) in xs.iter().zip(want) {
        assert!((m.log_density(x).unwrap() - w).abs() < 1e-12, "{x:?}");
    }
}

#[test]
fn gof_8_3_rbm_log_densities_and_downcast_through_model() {
    let m = load_model(&examples().join("rbm-small.json")).unwrap();
    let xs: Vec<u32> = vec![1, 0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1];
    let want = [1.18540511391, 1.16722416474, 1.37428671483, 1.42843222865, 1.27221585356];
    let mut f = [0.0; 5];
    m.log_density_batch(&xs, &mut f).unwrap();
    for (a, b) in f.iter().zip(want) {
        assert!((a - b).abs() < 1e-10, "{a} vs {b}");
    }
    let target: &dyn Target = &m;
    let view = target.capabilities().rbm.expect("the RBM capability, forwarded by Model");
    assert_eq!((view.d, view.m, view.spin), (3, 2, false));
    assert_eq!(view.w, &[0.5, -1.0, 0.3, 0.8, -0.6, 0.2]);
    // The typed accessor of a loaded model: only the concrete type of its kind matches.
    let rbm = m.downcast_ref::<Rbm>().expect("downcast to Rbm through Model");
    assert_eq!((rbm.w(), rbm.b(), rbm.c()), (view.w, view.b, view.c));
    assert!(m.downcast_ref::<dlp_models::IsingModel>().is_none());
    assert_eq!(m.kind_name(), "rbm");
}

#[test]
fn categorical_values_and_table_files() {
    let text = r#"{"schema": "dlp.model.v1", "kind": "categorical", "d": 2, "K": 3, "values": [5, -2, 7],
        "logits": [[0.0, 0.9, 0.4], [1.8, 1.1, 0.0]]}"#;
    let m = parse_model_str(text, Format::Json, "c.json").unwrap();
    assert_eq!(m.space(), &Space { d: 2, kind: DomainKind::Categorical, values: vec![5, -2, 7] });
    let z0 = (1.0f64 + 0.9f64.exp() + 0.4f64.exp()).ln();
    let z1 = (1.8f64.exp() + 1.1f64.exp() + 1.0).ln();
    assert!((m.log_density(&[1, 0]).unwrap() - (0.9 - z0 + 1.8 - z1)).abs() < 1e-12);
    let t = r#"schema = "dlp.model.v1"
kind = "table"
d = 2
domain = "spin"
log_prob = [0.0, -1.2, 0.4, 2.0]
"#;
    let m = parse_model_str(t, Format::Toml, "t.toml").unwrap();
    // index = 2 c_0 + c_1: (s0, s1) = (+1, −1) → index 2.
    assert_eq!(m.log_density(&[1, 0]).unwrap(), 0.4);
    assert_eq!(m.kind_name(), "table");
}

#[test]
fn unknown_extension_and_missing_file() {
    let e = load_model(Path::new("model.yaml")).unwrap_err().to_string();
    assert_eq!(e, "model.yaml: unknown model file extension (expected .json or .toml)");
    let e = load_model(Path::new("/nonexistent/m.json")).unwrap_err().to_string();
    assert!(e.starts_with("/nonexistent/m.json: cannot read file: "), "{e}");
}

#[test]
fn model_wrapper_forwards_cheap_flip_deltas() {
    let ising = dlp_models::IsingModel::paper_lattice(3, 0.1, 0.2);
    let model = dlp_models::Model::from(ising.clone());
    let x = [1, 0, 1, 1, 0, 0, 1, 0, 1];
    for i in 0..9 {
        let direct = ising.cheap_flip_delta(&x, i).expect("lattice Ising has cheap flips");
        assert_eq!(model.cheap_flip_delta(&x, i), Some(direct));
        let mut y = x;
        y[i] = 1 - y[i];
        assert!((direct - (model.log_density(&y).unwrap() - model.log_density(&x).unwrap())).abs() < 1e-12);
    }
}
