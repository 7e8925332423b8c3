//! Sampling your own bounded-parameter model with CoRV-SGLD (paper 001, eq. 16).
//!
//! θ = (p, λ): a success probability p ∈ (0, 1) and a rate λ ∈ (0, ∞), N = 2,000 data items
//! (successes out of 10 trials, and a count), priors p ~ Beta(1, 1), λ ~ Gamma(2, rate 1). The
//! posterior is known exactly (Beta and Gamma), so the example prints both.
//!
//! `cargo run --release -p dlp-samplers --example corv_bounded`

use dlp_core::transform::Transform;
use dlp_core::{Batch, BoxSpace, ContinuousTarget, EvalError, RunOptions, run_continuous};
use dlp_samplers::bounded::{BoundedSgld, Method, StepSchedule};

/// The model: implement `space` (the box: (0, 1) × (0, ∞)), `n_data` (for minibatches) and
/// `evaluate` (log density f and its gradient ∇f in θ, for a batch of rows, on a minibatch).
struct Model {
    space: BoxSpace,
    successes: Vec<f64>,
    counts: Vec<f64>,
}

impl ContinuousTarget for Model {
    fn space(&self) -> &BoxSpace {
        &self.space
    }

    fn n_data(&self) -> Option<usize> {
        Some(self.successes.len())
    }

    fn evaluate(&self, xs: &[f64], batch: Batch<'_>, f: &mut [f64], grad: Option<&mut [f64]>) -> Result<(), EvalError> {
        let n = self.successes.len();
        let all: Vec<usize> = (0..n).collect();
        let items = match batch {
            Batch::Full => &all[..],
            Batch::Items(b) => b,
        };
        let scale = n as f64 / items.len() as f64; // the unbiased minibatch estimate (N/B)Σ
        let (s, c): (f64, f64) =
            items.iter().map(|&i| (self.successes[i], self.counts[i])).fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        let trials = 10.0 * items.len() as f64;
        let (s, fails, c, b) = (scale * s, scale * (trials - s), scale * c, scale * items.len() as f64);
        let mut grad = grad;
        for (j, row) in xs.chunks(2).enumerate() {
            let (p, lam) = (row[0], row[1]);
            // Binomial and Poisson log-likelihoods plus the Gamma(2, 1) prior on λ.
            f[j] = s * p.ln() + fails * (-p).ln_1p() + (c + 1.0) * lam.ln() - (b + 1.0) * lam;
            if let Some(g) = grad.as_deref_mut() {
                g[2 * j] = s / p - fails / (1.0 - p);
                g[2 * j + 1] = (c + 1.0) / lam - (b + 1.0);
            }
        }
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Stand-in data, deterministic: successes 0, 1, 2, 3 of 10 in turn, counts 0..8 in turn.
    let n = 2000;
    let successes: Vec<f64> = (0..n).map(|i| (i % 4) as f64).collect();
    let counts: Vec<f64> = (0..n).map(|i| (i % 9) as f64).collect();
    let space = BoxSpace { d: 2, lower: vec![0.0, 0.0], upper: vec![1.0, f64::INFINITY] };
    let model = Model { space, successes, counts };

    // CoRV-SGLD: sigmoid on (0, 1), softplus on (0, ∞); minibatches of 100; ε = 1e-5.
    let sampler = BoundedSgld::new(Method::Corv, StepSchedule::Constant(1e-5))?
        .with_transforms(Transform::Sigmoid, Transform::Softplus)
        .with_batch(Some(100));
    let x0 = [0.5, 1.0].repeat(64); // 64 chains, rows inside the box
    let chains = x0.len() / 2;
    let out = run_continuous(&sampler, &model, &x0, 5000, &RunOptions { seed: 1, ..Default::default() }, |_, _| ())?;

    let mean = |k: usize| out.final_states.iter().skip(k).step_by(2).sum::<f64>() / chains as f64;
    let (s, c): (f64, f64) = (model.successes.iter().sum(), model.counts.iter().sum());
    // Exact posteriors: p ~ Beta(1 + Σs, 1 + Σ(10 − s)), λ ~ Gamma(2 + Σc, rate 1 + N).
    let (a, b) = (1.0 + s, 1.0 + 10.0 * n as f64 - s);
    let (exact_p, sd_p) = (a / (a + b), (a * b / ((a + b).powi(2) * (a + b + 1.0))).sqrt());
    let (shape, rate) = (2.0 + c, 1.0 + n as f64);
    let (exact_lam, sd_lam) = (shape / rate, shape.sqrt() / rate);
    println!("p: mean of {chains} CoRV chains {:.4}; exact posterior mean {exact_p:.4}, sd {sd_p:.4}", mean(0));
    println!("λ: mean of {chains} CoRV chains {:.4}; exact posterior mean {exact_lam:.4}, sd {sd_lam:.4}", mean(1));
    Ok(())
}
