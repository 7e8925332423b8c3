//! `relaxation_of` (from the target's Ising or RBM view) gives the relaxation the front ends
//! built from the concrete model types before it moved here: J from the coupling pairs, both
//! triangles, and b; W, b, c of the RBM.

use dlp_gof::{Relaxation, relaxation_of};
use dlp_models::{IsingModel, Rbm};
use std::path::PathBuf;

fn example(name: &str) -> dlp_models::Model {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/examples").join(name);
    dlp_models::load_model(&path).unwrap()
}

/// The former `dlp_cli::relaxation_of`, on the concrete types.
fn by_model_type(model: &dlp_models::Model) -> Option<Relaxation> {
    if let Some(m) = model.downcast_ref::<IsingModel>() {
        let d = m.d();
        let mut j = vec![0.0; d * d];
        for (a, b, w) in m.couplings().pairs() {
            j[a * d + b] = w;
            j[b * d + a] = w;
        }
        let values = if m.is_spin() { (-1.0, 1.0) } else { (0.0, 1.0) };
        return Some(Relaxation::Ising { values, j, b: m.fields().to_vec() });
    }
    if let Some(m) = model.downcast_ref::<Rbm>() {
        let values = if m.is_spin() { (-1.0, 1.0) } else { (0.0, 1.0) };
        return Some(Relaxation::Rbm { values, w: m.w().to_vec(), b: m.b().to_vec(), c: m.c().to_vec() });
    }
    None
}

#[test]
fn the_view_gives_the_relaxation_of_the_model_types() {
    for name in ["ising-4x4.json", "ising-3.json", "rbm-small.json", "potts-3.json", "logistic-spin.json"] {
        let m = example(name);
        let expect = by_model_type(&m);
        assert_eq!(relaxation_of(m.as_target()), expect, "{name}");
        assert_eq!(expect.is_some(), name.starts_with("ising") || name.starts_with("rbm"), "{name}");
    }
}
