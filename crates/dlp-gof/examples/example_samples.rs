//! Writes `data/examples/ising-4x4-samples.csv`: 200 exact draws (enumeration of all 2¹⁶
//! states, inverse CDF, seed 2026) from `data/examples/ising-4x4.json`, for the README's
//! `dlp gof` example. Run from the workspace root:
//! `cargo run -p dlp-gof --example example_samples`.

use dlp_gof::exact_draws;
use dlp_models::{load_model, write_samples};
use std::path::Path;

fn main() {
    let model = load_model(Path::new("data/examples/ising-4x4.json")).expect("example model");
    let target = model.as_target();
    let xs = exact_draws(target, 200, 2026).expect("2^16 states enumerate");
    write_samples(Path::new("data/examples/ising-4x4-samples.csv"), target.space(), &xs, true).expect("write samples");
}
