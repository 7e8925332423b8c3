//! Paper 001 (Yokoi, Otsuka, Sato, *On Transformations in Stochastic Gradient MCMC*) §§3–5,
//! Figs. 1–2: the nine 1-D toy targets (Beta, Gamma, truncated N(0, 1)), the three samplers
//! (mirror, Itô, CoRV from `dlp_samplers::bounded`), histogram-vs-pdf RMSE and the step-size
//! search of Fig. 1, and the exact oracles of spec §3.2: the stationary law of the CoRV chain at
//! a finite step by a banded transfer operator (item 4), and its first-order bias coefficient
//! c₁ = Cov_π(h, ¼U′² − ½U″) by quadrature (item 3).

use anyhow::{Result, anyhow};
use dlp_core::rng::derive_seed;
use dlp_core::transform::{Affine, Transform};
use dlp_core::{Batch, BoxSpace, ContinuousTarget, EvalError, Observer, States, StepContext, StepInfo, run_continuous};
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

    /// E[θ] (closed form).
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

    /// The histogram / pdf window: the support clipped to [−10, 10] [C].
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

/// The 100 equispaced evaluation points of the window, ends dropped [C].
pub fn grid(toy: Toy) -> Vec<f64> {
    let (a, b) = toy.window();
    (1..=100).map(|i| a + (b - a) * i as f64 / 101.0).collect()
}

/// Histogram density (200 bins over the window, normalised by all samples) at the grid points,
/// and its RMSE against the pdf there (spec §3.1 [R]: a histogram instead of the public code's
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

/// The CoRV proxy's potential derivative U′(φ) = −(F′(φ)·∇log π_θ(F(φ)) + f″/f′(φ)).
fn proxy_du(toy: Toy, tr: &Affine, phi: f64) -> f64 {
    let theta = tr.forward(phi);
    -(tr.dforward(phi) * toy.log_density_grad(theta).1 + tr.dlog_jac(phi))
}

/// log π(φ) = log π_θ(F(φ)) + log F′(φ), up to a constant.
fn proxy_log_density(toy: Toy, tr: &Affine, phi: f64) -> f64 {
    toy.log_density_grad(tr.forward(phi)).0 + tr.log_jac(phi)
}

/// The φ-interval holding all but ~e^{−40} of the proxy's mass (scanned on [−400, 400] in steps
/// of 0.1, one step of margin), inside the contiguous stretch around the mode where θ = F(φ)
/// is still strictly inside its support in f64 (sigmoid rounds to 1 beyond φ ≈ 37: for
/// Beta(2, 0.5) that cuts a relative mass of e^{−18.5} ≈ 1e−8 from the right tail).
fn proxy_window(toy: Toy, tr: &Affine) -> (f64, f64) {
    let xs: Vec<f64> = (0..=8000).map(|i| -400.0 + 0.1 * i as f64).collect();
    let (lo, hi) = toy.support();
    let ls: Vec<f64> = xs
        .iter()
        .map(|&p| {
            let th = tr.forward(p);
            if th > lo && th < hi { proxy_log_density(toy, tr, p) } else { f64::NAN }
        })
        .collect();
    let mode = (0..xs.len()).filter(|&i| ls[i].is_finite()).max_by(|&i, &j| ls[i].total_cmp(&ls[j])).unwrap_or(0);
    let m = ls[mode];
    let (mut a, mut b) = (mode, mode);
    while a > 0 && ls[a - 1].is_finite() && ls[a] > m - 40.0 {
        a -= 1;
    }
    while b + 1 < xs.len() && ls[b + 1].is_finite() && ls[b] > m - 40.0 {
        b += 1;
    }
    (xs[a], xs[b])
}

/// First-order bias coefficients (spec §3.2 item 3): E_ε[h] − E[h] = ε·c₁ + O(ε²) with
/// c₁ = Cov_π(h, ¼U′² − ½U″) in the proxy variable, for h(θ) = θ and θ²; trapezoid quadrature
/// on 40,000 points of the proxy window, U″ by a central difference of U′.
pub fn first_order(toy: Toy) -> (f64, f64) {
    let tr = toy.transform();
    let (a, b) = proxy_window(toy, &tr);
    let n = 40_000;
    let h = (b - a) / n as f64;
    let pts: Vec<f64> = (0..=n).map(|i| a + h * i as f64).collect();
    let ls: Vec<f64> = pts.iter().map(|&p| proxy_log_density(toy, &tr, p)).collect();
    let m = ls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (mut z, mut e1, mut e2, mut eg, mut e1g, mut e2g) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (&p, &l) in pts.iter().zip(&ls) {
        let w = (l - m).exp();
        let du = proxy_du(toy, &tr, p);
        let d = 1e-5 * p.abs().max(1.0);
        let d2u = (proxy_du(toy, &tr, p + d) - proxy_du(toy, &tr, p - d)) / (2.0 * d);
        let g = 0.25 * du * du - 0.5 * d2u;
        if !(w * g).is_finite() {
            continue;
        }
        let th = tr.forward(p);
        z += w;
        e1 += w * th;
        e2 += w * th * th;
        eg += w * g;
        e1g += w * th * g;
        e2g += w * th * th * g;
    }
    ((e1g - e1 * eg / z) / z, (e2g - e2 * eg / z) / z)
}

/// The stationary E_ε[θ] and E_ε[θ²] of the CoRV chain at step ε (spec §3.2 item 4): cells of
/// width h = √(2ε)/12 over the proxy window; row k of the transfer matrix is the cell mass of
/// N(x_k − εU′(x_k), 2ε − h²/12) (the −h²/12 undoes the rounding to cell centres), mass beyond
/// the band or the window folded onto the end cells; π solved by the GTH state reduction
/// (Grassmann, Taksar & Heyman 1985), which only adds non-negative terms and keeps the band.
pub fn corv_oracle(toy: Toy, eps: f64) -> (f64, f64) {
    let tr = toy.transform();
    let (a, b) = proxy_window(toy, &tr);
    let h = (2.0 * eps).sqrt() / 12.0;
    let n = ((b - a) / h).ceil() as usize + 1;
    let xs: Vec<f64> = (0..n).map(|k| a + h * k as f64).collect();
    let sd = (2.0 * eps - h * h / 12.0).sqrt();
    let means: Vec<f64> = xs.iter().map(|&x| x - eps * proxy_du(toy, &tr, x)).collect();
    let drift = xs.iter().zip(&means).map(|(x, m)| (m - x).abs()).fold(0.0, f64::max);
    let bw = ((drift + 9.0 * sd) / h).ceil() as usize + 1;
    let w = 2 * bw + 1;
    let normal = Normal::standard();
    // p[k][c] = P(k → k − bw + c), c ∈ 0..w.
    let mut p = vec![0.0; n * w];
    for k in 0..n {
        let lo_c = k.saturating_sub(bw);
        let hi_c = (k + bw).min(n - 1);
        for c in lo_c..=hi_c {
            let left = if c == lo_c { f64::NEG_INFINITY } else { (xs[c] - 0.5 * h - means[k]) / sd };
            let right = if c == hi_c { f64::INFINITY } else { (xs[c] + 0.5 * h - means[k]) / sd };
            // Upper-tail difference where both ends are right of the mean (no cancellation).
            let mass =
                if left > 0.0 { normal.sf(left) - normal.sf(right) } else { normal.cdf(right) - normal.cdf(left) };
            p[k * w + c + bw - k] = mass.max(0.0);
        }
    }
    let at = |p: &Vec<f64>, i: usize, j: usize| -> f64 { if i.abs_diff(j) > bw { 0.0 } else { p[i * w + j + bw - i] } };
    // GTH: eliminate states n−1, …, 1; s_k = Σ_{j<k} P[k][j].
    let mut s = vec![0.0; n];
    for k in (1..n).rev() {
        let lo = k.saturating_sub(bw);
        let sk: f64 = (lo..k).map(|j| at(&p, k, j)).sum();
        s[k] = sk;
        if sk <= 0.0 {
            continue;
        }
        for i in lo..k {
            let pik = at(&p, i, k);
            if pik == 0.0 {
                continue;
            }
            for j in lo..k {
                let pkj = at(&p, k, j);
                if pkj != 0.0 && i.abs_diff(j) <= bw {
                    p[i * w + j + bw - i] += pik * pkj / sk;
                }
            }
        }
    }
    let mut pi = vec![0.0; n];
    pi[0] = 1.0;
    for k in 1..n {
        let lo = k.saturating_sub(bw);
        let num: f64 = (lo..k).map(|i| pi[i] * at(&p, i, k)).sum();
        pi[k] = if s[k] > 0.0 { num / s[k] } else { 0.0 };
    }
    let z: f64 = pi.iter().sum();
    let (mut m1, mut m2) = (0.0, 0.0);
    for (x, q) in xs.iter().zip(&pi) {
        let th = tr.forward(*x);
        m1 += q * th;
        m2 += q * th * th;
    }
    (m1 / z, m2 / z)
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

    /// The transfer-operator oracle against spec §3.2 item 4 (computed there independently with
    /// h = 0.005, to 7 digits): Gamma(0.5, 0.5) with softplus at ε = 0.1, and Beta(2, 0.5) with
    /// sigmoid, whose mean is exactly 0.8 at any ε (item 1). Tolerance 2e−6: both grids are
    /// O(h²)-accurate and ours is coarser (h = √(2ε)/12 = 0.037).
    #[test]
    fn corv_oracle_matches_the_spec_table() {
        let (m1, m2) = corv_oracle(Toy::Gamma(0.5, 0.5), 0.1);
        assert!((m1 - 0.2514401).abs() < 2e-6 && (m2 - 0.1928501).abs() < 2e-6, "{m1} {m2}");
        let (m1, _) = corv_oracle(Toy::Beta(2.0, 0.5), 0.1);
        assert!((m1 - 0.8).abs() < 2e-6, "{m1}");
    }

    /// c₁ of spec §3.2 item 3's table (6 digits) by our quadrature.
    #[test]
    fn first_order_coefficients_match_the_spec_table() {
        let rows = [
            (Toy::Beta(2.0, 2.0), 0.0, 0.0171429),
            (Toy::Beta(2.0, 0.5), 0.0, 0.00742115),
            (Toy::Gamma(0.5, 0.5), 0.0140364, 0.0519062),
            (Toy::Gamma(2.0, 2.0), 0.11228, 1.31652),
            (Toy::TruncNormal(-5.0, 0.0), 0.0259285, 0.179155),
        ];
        for (t, c1, c2) in rows {
            let (a, b) = first_order(t);
            assert!((a - c1).abs() < 1e-5 * c1.abs().max(1.0) * 10.0, "{} c1 {a} vs {c1}", t.name());
            assert!((b - c2).abs() < 1e-4 * c2.abs().max(0.01), "{} c2 {b} vs {c2}", t.name());
        }
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
