//! One minibatch evaluation of paper 001's binary neural network (`BinaryNet`, 784–50–10,
//! B = 100 of N = 56,000 MNIST-sized rows; synthetic pixel values, the cost does not depend on
//! them), the unit of `just reproduce 001-bnn`'s steps: candle's NLL gradient, the Beta prior
//! (log density and gradient) and the whole `evaluate`, each the best of REPS calls, ROUNDS
//! rounds. One JSON line per round.
//!
//! `cargo run --release -p dlp-papers --example binary_nn_bench [-- REPS ROUNDS]`; candle's CPU
//! backend uses `RAYON_NUM_THREADS` threads (1 is what one chain of the runner gets).

use dlp_core::{Batch, ContinuousTarget};
use dlp_papers::binary_nn::BinaryNet;
use dlp_tensor::candle_core::{DType, Device};

// The benchmark helper of dlp-tensor's examples, one copy.
#[path = "../../dlp-tensor/examples/common/mod.rs"]
mod common;
use common::best_ms;

fn main() {
    let arg = |i: usize, default: usize| std::env::args().nth(i).and_then(|s| s.parse().ok()).unwrap_or(default);
    let (reps, rounds) = (arg(1, 200), arg(2, 3));
    let (n, p) = (56_000usize, 784usize);
    let images: Vec<f32> = (0..n * p).map(|i| (i.wrapping_mul(2_654_435_761) % 255) as f32 / 255.0).collect();
    let labels: Vec<u8> = (0..n).map(|i| (i % 10) as u8).collect();
    let net = BinaryNet::new(&images, &labels, &[784, 50, 10], (0.5, 0.5), &Device::Cpu, DType::F32)
        .expect("a valid network");
    let d = net.n_weights();
    let w: Vec<f64> = (0..d).map(|i| (i * 7_919 % 1_000) as f64 / 1_000.0 * 1.6 - 0.8).collect();
    let items: Vec<usize> = (0..100).map(|i| i * 97).collect();
    let (mut g, mut lp) = (vec![0.0; d], [0.0]);
    for round in 0..rounds {
        let nll = best_ms(reps, || {
            std::hint::black_box(net.nll_grad(&w, Some(&items)).expect("candle"));
        });
        let prior = best_ms(reps, || {
            std::hint::black_box(net.log_prior_add_grad(&w, Some(&mut g)));
        });
        let eval = best_ms(reps, || net.evaluate(&w, Batch::Items(&items), &mut lp, Some(&mut g)).expect("evaluate"));
        println!(
            "{{\"round\": {round}, \"d\": {d}, \"batch\": 100, \"nll_grad_ms\": {nll:.3}, \"prior_ms\": {prior:.3}, \"evaluate_ms\": {eval:.3}}}"
        );
    }
}
