//! Paper 001 (Yokoi, Otsuka, Sato, *On Transformations in Stochastic Gradient MCMC*) §§3–5,
//! Figs. 1–2: the nine 1-D toy targets (Beta, Gamma, truncated N(0, 1)), the three samplers
//! (mirror, Itô, CoRV from `dlp_samplers::bounded`), histogram-vs-pdf RMSE and the step-size
//! search of Fig. 1. The exact oracles of spec §3.2 (the CoRV chain's stationary law at a finite
//! step, item 4, and its first-order bias coefficient c₁, item 3) are `dlp_exact::corv`'s,
//! applied to the toys here.

use anyhow::{Result, anyhow};
use dlp_core::rng::derive_seed;
use dlp_core::transform::{Affine, Transform};
use dlp_core::{Batch, BoxSpace, ContinuousTarget, EvalError, Observer, States, StepContext, StepInfo, run_continuous};
use dlp_exact::corv::CorvProxy;
use dlp_samplers::bounded::{BoundedSgld, Method, StepSchedule};
use statrs::distribution::{Beta, Continuous, ContinuousCDF, Gamma, Normal};

/// One toy target of Fig. 1 [C: the authors' TransformSGLD].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Toy {
    /// Beta(α, β) on (0, 1).
    Beta(f64, f64),
    /// Gamma with shape k and scale s on (0, ∞).
    Gamma(f64, f64),
    /// N(0, 1) truncated to (l, u).
    TruncNormal(f64, f64),
}

/// The nine panels of Fig. 1, in the paper's order.
pub const FIG1: [Toy; 9] = [
    Toy::Beta(2.0, 2.0),
    Toy::Beta(2.0, 0.5),
    Toy::Beta(0.5, 0.5),
    Toy::Gamma(2.0, 2.0),
    Toy::Gamma(2.0, 0.5),
    Toy::Gamma(0.5, 0.5),
    Toy::TruncNormal(-5.0, -2.0),
    Toy::TruncNormal(-5.0, 0.0),
    Toy::TruncNormal(-5.0, 2.0),
];

impl Toy {
    /// A label such as `Beta(2, 0.5)`.
    pub fn name(&self) -> String {
        match *self {
            Toy::Beta(a, b) => format!("Beta({a}, {b})"),
            Toy::Gamma(k, s) => format!("Gamma({k}, {s})"),
            Toy::TruncNormal(l, u) => format!("TN({l}, {u})"),
        }
    }

    /// The support (lo, hi).
    pub fn support(&self) -> (f64, f64) {
        match *self {
            Toy::Beta(..) => (0.0, 1.0),
            Toy::Gamma(..) => (0.0, f64::INFINITY),
            Toy::TruncNormal(l, u) => (l, u),
        }
    }

    /// The start θ₀ of the public code: 0.5, 1, (l + u)/2.
    pub fn init(&self) -> f64 {
        match *self {
            Toy::Beta(..) => 0.5,
            Toy::Gamma(..) => 1.0,
            Toy::TruncNormal(l, u) => 0.5 * (l + u),
        }
    }

    fn tn(l: f64, u: f64) -> (Normal, f64) {
        let n = Normal::standard();
        let z = n.cdf(u) - n.cdf(l);
        (n, z)
    }

    /// The exact density.
    pub fn pdf(&self, x: f64) -> f64 {
        let (lo, hi) = self.support();
        if !(x > lo && x < hi) {
            return 0.0;
        }
        match *self {
            Toy::Beta(a, b) => Beta::new(a, b).map(|d| d.pdf(x)).unwrap_or(f64::NAN),
            Toy::Gamma(k, s) => Gamma::new(k, 1.0 / s).map(|d| d.pdf(x)).unwrap_or(f64::NAN),
            Toy::TruncNormal(l, u) => {
                let (n, z) = Toy::tn(l, u);
                n.pdf(x) / z
            }
        }
    }

    /// E\[θ\] (closed form).
    pub fn mean(&self) -> f64 {
        match *self {
            Toy::Beta(a, b) => a / (a + b),
            Toy::Gamma(k, s) => k * s,
            Toy::TruncNormal(l, u) => {
                let (n, z) = Toy::tn(l, u);
                (n.pdf(l) - n.pdf(u)) / z
            }
        }
    }

    /// log π(θ) up to a constant and its derivative −U′_θ(θ).
    #[inline]
    pub fn log_density_grad(&self, x: f64) -> (f64, f64) {
        match *self {
            Toy::Beta(a, b) => ((a - 1.0) * x.ln() + (b - 1.0) * (-x).ln_1p(), (a - 1.0) / x - (b - 1.0) / (1.0 - x)),
            Toy::Gamma(k, s) => ((k - 1.0) * x.ln() - x / s, (k - 1.0) / x - 1.0 / s),
            Toy::TruncNormal(..) => (-0.5 * x * x, -x),
        }
    }

    /// The CoRV transform of the public code: sigmoid (affine) on intervals, softplus on (0, ∞).
    pub fn transform(&self) -> Affine {
        let (lo, hi) = self.support();
        Affine::onto(lo, hi, Transform::Sigmoid, Transform::Softplus).expect("toy supports fit the transforms")
    }

    /// The histogram / pdf window: the support clipped to [−10, 10] \[C\].
    pub fn window(&self) -> (f64, f64) {
        let (lo, hi) = self.support();
        (lo.max(-10.0), hi.min(10.0))
    }
}

/// A toy as a [`ContinuousTarget`] (one coordinate per row).
pub struct ToyTarget {
    toy: Toy,
    space: BoxSpace,
}

impl ToyTarget {
    /// The target of `toy`.
    pub fn new(toy: Toy) -> Self {
        let (lo, hi) = toy.support();
        ToyTarget { toy, space: BoxSpace { d: 1, lower: vec![lo], upper: vec![hi] } }
    }
}

impl ContinuousTarget for ToyTarget {
    fn space(&self) -> &BoxSpace {
        &self.space
    }

    fn evaluate(&self, xs: &[f64], _: Batch<'_>, f: &mut [f64], grad: Option<&mut [f64]>) -> Result<(), EvalError> {
        let (lo, hi) = self.toy.support();
        let mut grad = grad;
        for (j, &x) in xs.iter().enumerate() {
            let (v, g) = if x > lo && x < hi { self.toy.log_density_grad(x) } else { (f64::NEG_INFINITY, f64::NAN) };
            f[j] = v;
            if let Some(gr) = grad.as_deref_mut() {
                gr[j] = g;
            }
        }
        Ok(())
    }
}

/// The three samplers of Figs. 1–2.
pub const METHODS: [&str; 3] = ["mirror", "ito", "corv"];

/// The sampler `method` (mirror, ito, corv) at constant step ε with gradient noise sd `noise`;
/// Itô clamps φ to [−10, 10] as the authors' code does.
pub fn sampler(method: &str, eps: f64, noise: f64) -> Result<BoundedSgld> {
    let m = match method {
        "mirror" => Method::Mirror,
        "ito" => Method::Ito { clamp: Some(10.0) },
        "corv" => Method::Corv,
        _ => return Err(anyhow!("unknown method {method} (have: mirror, ito, corv)")),
    };
    Ok(BoundedSgld::new(m, StepSchedule::Constant(eps))?
        .with_transforms(Transform::Sigmoid, Transform::Softplus)
        .with_grad_noise(noise)?)
}

/// Keeps every θ after `burn` steps (chain 0 of the task) or only their sum per chain.
struct Keep {
    burn: usize,
    all: bool,
    samples: Vec<f64>,
    sums: Vec<f64>,
    n: usize,
}

impl Observer<f64> for Keep {
    fn observe(&mut self, ctx: &StepContext, states: States<'_, f64>, _: &[StepInfo]) {
        if ctx.step > self.burn {
            let p = states.positions();
            if self.all {
                self.samples.push(p[0]);
            }
            for (s, x) in self.sums.iter_mut().zip(p) {
                *s += x;
            }
            self.n += 1;
        }
    }
}

/// One chain of `steps` steps from θ₀; the θ of every step after `burn`. Seeded by
/// (seed, toy index, method index, step index) so configurations are independent of each other
/// and of the thread count.
pub fn one_chain(toy: Toy, s: &BoundedSgld, steps: usize, burn: usize, seed: u64) -> Result<Vec<f64>> {
    let t = ToyTarget::new(toy);
    let o = crate::on_caller_pool(seed);
    let out = run_continuous(s, &t, &[toy.init()], steps, &o, |_, k| Keep {
        burn,
        all: true,
        samples: Vec::with_capacity(steps - burn.min(steps)),
        sums: vec![0.0; k],
        n: 0,
    })?;
    Ok(out.observers.into_iter().next().map(|k| k.samples).unwrap_or_default())
}

/// Time averages of θ after `burn` steps of `chains` independent chains from θ₀ (one per seed).
pub fn chain_means(toy: Toy, s: &BoundedSgld, chains: usize, steps: usize, burn: usize, seed: u64) -> Result<Vec<f64>> {
    let t = ToyTarget::new(toy);
    let o = crate::on_caller_pool(seed);
    let out = run_continuous(s, &t, &vec![toy.init(); chains], steps, &o, |_, k| Keep {
        burn,
        all: false,
        samples: vec![],
        sums: vec![0.0; k],
        n: 0,
    })?;
    Ok(out.observers.iter().flat_map(|k| k.sums.iter().map(move |s| s / k.n.max(1) as f64)).collect())
}

/// Seed of configuration (toy, method, step index).
pub fn config_seed(seed: u64, toy: usize, method: usize, eps: usize) -> u64 {
    derive_seed(seed, &[1, toy as u64, method as u64, eps as u64])
}

/// The 100 equispaced evaluation points of the window, ends dropped \[C\].
pub fn grid(toy: Toy) -> Vec<f64> {
    let (a, b) = toy.window();
    (1..=100).map(|i| a + (b - a) * i as f64 / 101.0).collect()
}

/// Histogram density (200 bins over the window, normalised by all samples) at the grid points,
/// and its RMSE against the pdf there (spec §3.1 \[R\]: a histogram instead of the public code's
/// average shifted histogram).
pub fn hist_rmse(toy: Toy, samples: &[f64]) -> (f64, Vec<(f64, f64)>) {
    let (a, b) = toy.window();
    let bins = 200;
    let w = (b - a) / bins as f64;
    let mut count = vec![0usize; bins];
    for &x in samples {
        if x >= a && x < b && x.is_finite() {
            count[(((x - a) / w) as usize).min(bins - 1)] += 1;
        }
    }
    let n = samples.len().max(1) as f64;
    let est: Vec<(f64, f64)> =
        grid(toy).into_iter().map(|x| (x, count[(((x - a) / w) as usize).min(bins - 1)] as f64 / (n * w))).collect();
    let mse = est.iter().map(|&(x, e)| (e - toy.pdf(x)).powi(2)).sum::<f64>() / est.len() as f64;
    (mse.sqrt(), est)
}

/// The toy seen through its CoRV transform, for the exact oracles of `dlp_exact::corv`.
fn with_proxy<R>(toy: Toy, f: impl FnOnce(&CorvProxy<'_>) -> R) -> R {
    let density = |x: f64| toy.log_density_grad(x);
    f(&CorvProxy::new(toy.support(), toy.transform(), &density))
}

/// First-order bias coefficients c₁ of E_ε\[θ\] and E_ε\[θ²\] (spec §3.2 item 3), by
/// `dlp_exact::corv`'s quadrature.
pub fn first_order(toy: Toy) -> (f64, f64) {
    with_proxy(toy, |p| p.first_order())
}

/// The stationary E_ε\[θ\] and E_ε\[θ²\] of the CoRV chain at step ε (spec §3.2 item 4), by
/// `dlp_exact::corv`'s banded transfer operator.
pub fn corv_oracle(toy: Toy, eps: f64) -> (f64, f64) {
    with_proxy(toy, |p| p.stationary_moments(eps))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Closed-form means of spec §3.1's table (10 digits).
    #[test]
    fn toy_means_match_the_spec_table() {
        let want = [0.5, 0.8, 0.5, 4.0, 1.0, 0.25, -2.3731800850, -0.7978820448, -0.0552463576];
        for (t, w) in FIG1.iter().zip(want) {
            assert!((t.mean() - w).abs() < 1e-9, "{}: {} vs {w}", t.name(), t.mean());
        }
    }

    /// The toys reach `dlp_exact::corv` with their own densities and transforms: c₁ of
    /// Beta(2, 2) is 0 by symmetry and its c₂ is spec §3.2 item 3's 0.0171429; Beta(2, 0.5)'s
    /// stationary mean is exactly 0.8 at any ε (item 1). The oracles' own checks (closed forms,
    /// brute force, the spec's tables) are in dlp-exact.
    #[test]
    fn the_toys_oracles_match_the_spec() {
        let (c1, c2) = first_order(Toy::Beta(2.0, 2.0));
        assert!(c1.abs() < 1e-7 && (c2 - 0.0171429).abs() < 1e-6, "{c1} {c2}");
        let (m1, _) = corv_oracle(Toy::Beta(2.0, 0.5), 0.1);
        assert!((m1 - 0.8).abs() < 2e-6, "{m1}");
    }

    /// The histogram of exact draws has a small RMSE; a point mass has a large one.
    #[test]
    fn histogram_rmse_separates_good_from_bad_samples() {
        let t = Toy::Beta(2.0, 2.0);
        // Quantiles of Beta(2, 2) at (i + ½)/n: a deterministic, exactly distributed sample.
        let d = Beta::new(2.0, 2.0).unwrap();
        let xs: Vec<f64> = (0..100_000).map(|i| d.inverse_cdf((i as f64 + 0.5) / 1e5)).collect();
        let (good, _) = hist_rmse(t, &xs);
        let (bad, _) = hist_rmse(t, &vec![0.5; 1000]);
        assert!(good < 0.02 && bad > 1.0, "{good} {bad}");
    }
}
