//! Enumerates the paper's L×L Ising (default 5×5, σ = 0.1, b = 0.2; spec §4.1) and prints
//! log Z, E[s_0] and the wall time: `cargo run -p dlp-exact --release --example enumerate_ising [L]`.

use dlp_exact::{DulaLaw, EnumOptions, enumerate};
use std::time::Instant;

fn main() {
    let l: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let t = dlp_models::IsingModel::paper_lattice(l, 0.1, 0.2);
    let opts = EnumOptions { pair_moments: false, keep_probs: false };
    let t0 = Instant::now();
    let e = enumerate(&t, &opts).expect("enumeration");
    println!("log Z = {:.12}, E[s_0] = {:.12} ({:.2} s)", e.log_z, e.mean_value[0], t0.elapsed().as_secs_f64());
    let t0 = Instant::now();
    let e = enumerate(&DulaLaw::new(&t, 0.2, None), &opts).expect("enumeration");
    println!("DULA α = 0.2: E[s_0] = {:.12} ({:.2} s)", e.mean_value[0], t0.elapsed().as_secs_f64());
}
