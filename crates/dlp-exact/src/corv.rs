//! Exact references for the change-of-variables Langevin samplers of `dlp_samplers::bounded` on
//! a 1-D target with a bounded or half-bounded support (paper 001, Yokoi et al., spec §3.2):
//!
//! * [`CorvProxy::first_order`]: the first-order bias coefficient c₁ of E_ε\[h\] − E\[h\] =
//!   ε·c₁ + O(ε²) by quadrature (spec §3.2 item 3);
//! * [`CorvProxy::stationary_moments`]: the stationary E_ε\[θ\], E_ε\[θ²\] of the CoRV chain at a
//!   finite step ε by a banded transfer operator solved with GTH (spec §3.2 item 4).
//!
//! Both work on the proxy variable φ with θ = F(φ), the sampler's transform; its density is
//! π(φ) ∝ π_θ(F(φ))·F′(φ) and the CoRV chain is plain Langevin on it. They are written from the
//! spec, independent of the samplers' arithmetic. Not an enumeration like the rest of the crate,
//! but the same role: ground truth that a sampler's output is compared with (001-fig1/fig2).

use crate::gth::stationary_gth_banded;
use dlp_core::transform::Affine;
use statrs::distribution::{ContinuousCDF, Normal};

/// A 1-D target seen through the transform of a CoRV sampler.
pub struct CorvProxy<'a> {
    log_density_grad: &'a dyn Fn(f64) -> (f64, f64),
    support: (f64, f64),
    transform: Affine,
}

impl<'a> CorvProxy<'a> {
    /// The target on `support` = (lo, hi) (hi may be +∞, both may be infinite) with
    /// `log_density_grad(θ)` = (log π_θ(θ) up to a constant, its derivative), called only
    /// strictly inside the support, seen through `transform` (which maps ℝ onto the support).
    pub fn new(support: (f64, f64), transform: Affine, log_density_grad: &'a dyn Fn(f64) -> (f64, f64)) -> Self {
        CorvProxy { log_density_grad, support, transform }
    }

    /// The proxy's potential derivative U′(φ) = −(F′(φ)·∇log π_θ(F(φ)) + f″/f′(φ)).
    fn du(&self, phi: f64) -> f64 {
        let tr = &self.transform;
        let theta = tr.forward(phi);
        -(tr.dforward(phi) * (self.log_density_grad)(theta).1 + tr.dlog_jac(phi))
    }

    /// log π(φ) = log π_θ(F(φ)) + log F′(φ), up to a constant.
    fn log_density(&self, phi: f64) -> f64 {
        let tr = &self.transform;
        (self.log_density_grad)(tr.forward(phi)).0 + tr.log_jac(phi)
    }

    /// The φ-interval holding all but ~e^{−40} of the proxy's mass (scanned on [−400, 400] in
    /// steps of 0.1, one step of margin), inside the contiguous stretch around the mode where
    /// θ = F(φ) is still strictly inside its support in f64 (sigmoid rounds to 1 beyond
    /// φ ≈ 37: for Beta(2, 0.5) that cuts a relative mass of e^{−18.5} ≈ 1e−8 from the right
    /// tail).
    pub fn window(&self) -> (f64, f64) {
        let xs: Vec<f64> = (0..=8000).map(|i| -400.0 + 0.1 * i as f64).collect();
        let (lo, hi) = self.support;
        let ls: Vec<f64> = xs
            .iter()
            .map(|&p| {
                let th = self.transform.forward(p);
                if th > lo && th < hi { self.log_density(p) } else { f64::NAN }
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

    /// First-order bias coefficients (spec §3.2 item 3): E_ε\[h\] − E\[h\] = ε·c₁ + O(ε²) with
    /// c₁ = Cov_π(h, ¼U′² − ½U″) in the proxy variable, for h(θ) = θ and θ²; trapezoid
    /// quadrature on 40,000 points of [`Self::window`], U″ by a central difference of U′.
    pub fn first_order(&self) -> (f64, f64) {
        let (a, b) = self.window();
        let n = 40_000;
        let h = (b - a) / n as f64;
        let pts: Vec<f64> = (0..=n).map(|i| a + h * i as f64).collect();
        let ls: Vec<f64> = pts.iter().map(|&p| self.log_density(p)).collect();
        let m = ls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (mut z, mut e1, mut e2, mut eg, mut e1g, mut e2g) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        for (&p, &l) in pts.iter().zip(&ls) {
            let w = (l - m).exp();
            let du = self.du(p);
            let d = 1e-5 * p.abs().max(1.0);
            let d2u = (self.du(p + d) - self.du(p - d)) / (2.0 * d);
            let g = 0.25 * du * du - 0.5 * d2u;
            if !(w * g).is_finite() {
                continue;
            }
            let th = self.transform.forward(p);
            z += w;
            e1 += w * th;
            e2 += w * th * th;
            eg += w * g;
            e1g += w * th * g;
            e2g += w * th * th * g;
        }
        ((e1g - e1 * eg / z) / z, (e2g - e2 * eg / z) / z)
    }

    /// The stationary E_ε\[θ\] and E_ε\[θ²\] of the CoRV chain φ′ = φ − εU′(φ) + √(2ε)·ξ at step
    /// ε (spec §3.2 item 4): cells of width h = √(2ε)/12 over [`Self::window`]; row k of the
    /// transfer matrix is the cell mass of N(x_k − εU′(x_k), 2ε − h²/12) (the −h²/12 undoes
    /// the rounding to cell centres), mass beyond the band or the window folded onto the end
    /// cells; π solved by GTH state reduction (subtraction-free), keeping the band.
    pub fn stationary_moments(&self, eps: f64) -> (f64, f64) {
        let (a, b) = self.window();
        let h = (2.0 * eps).sqrt() / 12.0;
        let n = ((b - a) / h).ceil() as usize + 1;
        let xs: Vec<f64> = (0..n).map(|k| a + h * k as f64).collect();
        let sd = (2.0 * eps - h * h / 12.0).sqrt();
        let means: Vec<f64> = xs.iter().map(|&x| x - eps * self.du(x)).collect();
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
        let pi = stationary_gth_banded(&mut p, n, bw);
        let z: f64 = pi.iter().sum();
        let (mut m1, mut m2) = (0.0, 0.0);
        for (x, q) in xs.iter().zip(&pi) {
            let th = self.transform.forward(*x);
            m1 += q * th;
            m2 += q * th * th;
        }
        (m1 / z, m2 / z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::transform::Transform;
    use statrs::distribution::{Beta, Continuous, Gamma};

    fn affine(lo: f64, hi: f64) -> Affine {
        Affine::onto(lo, hi, Transform::Sigmoid, Transform::Softplus).unwrap()
    }

    /// N(0, 1) on ℝ (identity transform): the chain is the AR(1) θ′ = (1 − ε)θ + √(2ε)ξ, whose
    /// stationary law is N(0, 2ε/(1 − (1 − ε)²)) = N(0, 1/(1 − ε/2)) exactly; so
    /// E_ε[θ²] − 1 = ε/2 + O(ε²) and c₁ = (Cov(θ, θ²/4), Cov(θ², θ²/4)) = (0, ½).
    #[test]
    fn gaussian_closed_forms() {
        let f = |x: f64| (-0.5 * x * x, -x);
        let proxy = CorvProxy::new((f64::NEG_INFINITY, f64::INFINITY), affine(f64::NEG_INFINITY, f64::INFINITY), &f);
        let (c1, c2) = proxy.first_order();
        assert!(c1.abs() < 1e-9 && (c2 - 0.5).abs() < 1e-6, "{c1} {c2}");
        for eps in [0.01, 0.1, 0.5] {
            let (m1, m2) = proxy.stationary_moments(eps);
            let want = 1.0 / (1.0 - 0.5 * eps);
            assert!(m1.abs() < 1e-9 && (m2 - want).abs() < 1e-6 * want, "ε {eps}: {m1} {m2} vs {want}");
        }
    }

    /// Quadrature against an independent brute-force integral: E[θ] under Beta(2, 2) seen
    /// through the sigmoid (the proxy's weights must integrate θ under π_θ, whatever F is),
    /// and c₁'s definition evaluated with statrs' density on a fine θ-grid for Gamma(2, 1),
    /// whose softplus proxy has U′ from the chain rule: an error in U′, U″ or the Jacobian
    /// moves c₁ by far more than the tolerance.
    #[test]
    fn first_order_matches_a_brute_force_sum_in_theta() {
        // Gamma(2, scale 1): log π = ln θ − θ; θ = softplus(φ), F′ = sigmoid(φ).
        let f = |x: f64| (x.ln() - x, 1.0 / x - 1.0);
        let proxy = CorvProxy::new((0.0, f64::INFINITY), affine(0.0, f64::INFINITY), &f);
        let (c1, c2) = proxy.first_order();
        // Brute force on a φ grid with a closed-form U′ and U″ of the softplus proxy:
        // log π(φ) = ln θ − θ + ln σ(φ), U′ = −(σ(φ)(1/θ − 1) + 1 − σ(φ)).
        let d = Gamma::new(2.0, 1.0).unwrap();
        let sig = |p: f64| 1.0 / (1.0 + (-p).exp());
        let du = |p: f64| {
            let (th, s) = ((1.0 + p.exp()).ln(), sig(p));
            -(s * (1.0 / th - 1.0) + 1.0 - s)
        };
        let (n, lo, hi) = (400_000, -30.0, 40.0);
        let step = (hi - lo) / n as f64;
        let (mut z, mut e1, mut e2, mut eg, mut e1g, mut e2g) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        for i in 0..=n {
            let p: f64 = lo + step * i as f64;
            let th = (1.0 + p.exp()).ln();
            let w = d.pdf(th) * sig(p);
            let d2u = (du(p + 1e-4) - du(p - 1e-4)) / 2e-4;
            let g = 0.25 * du(p).powi(2) - 0.5 * d2u;
            z += w;
            e1 += w * th;
            e2 += w * th * th;
            eg += w * g;
            e1g += w * th * g;
            e2g += w * th * th * g;
        }
        let (b1, b2) = ((e1g - e1 * eg / z) / z, (e2g - e2 * eg / z) / z);
        assert!((e1 / z - 2.0).abs() < 1e-6, "brute-force mean {}", e1 / z);
        assert!((c1 - b1).abs() < 1e-5 && (c2 - b2).abs() < 1e-4, "{c1} {c2} vs {b1} {b2}");
        // Beta(2, 2) through the sigmoid.
        let b = Beta::new(2.0, 2.0).unwrap();
        let f = |x: f64| (b.ln_pdf(x), 1.0 / x - 1.0 / (1.0 - x));
        let proxy = CorvProxy::new((0.0, 1.0), affine(0.0, 1.0), &f);
        let (c1, _) = proxy.first_order();
        // Symmetric about ½ (U′ odd about φ = 0 for the sigmoid), so Cov(θ, g) = 0.
        assert!(c1.abs() < 1e-7, "{c1}");
    }

    /// The values of spec §3.2 item 4 (computed there independently with h = 0.005, to 7
    /// digits): Gamma(0.5, 0.5) with softplus at ε = 0.1, and Beta(2, 0.5) with sigmoid, whose
    /// mean is exactly 0.8 at any ε (item 1). Tolerance 2e−6: both grids are O(h²)-accurate and
    /// ours is coarser (h = √(2ε)/12 = 0.037).
    #[test]
    fn stationary_moments_match_the_spec_table() {
        let gamma = |x: f64| (-0.5 * x.ln() - x / 0.5, -0.5 / x - 1.0 / 0.5);
        let (m1, m2) = CorvProxy::new((0.0, f64::INFINITY), affine(0.0, f64::INFINITY), &gamma).stationary_moments(0.1);
        assert!((m1 - 0.2514401).abs() < 2e-6 && (m2 - 0.1928501).abs() < 2e-6, "{m1} {m2}");
        let beta = |x: f64| (x.ln() - 0.5 * (-x).ln_1p(), 1.0 / x + 0.5 / (1.0 - x));
        let (m1, _) = CorvProxy::new((0.0, 1.0), affine(0.0, 1.0), &beta).stationary_moments(0.1);
        assert!((m1 - 0.8).abs() < 2e-6, "{m1}");
    }

    /// c₁ of spec §3.2 item 3's table (6 digits) for five of paper 001's toys.
    #[test]
    fn first_order_coefficients_match_the_spec_table() {
        let beta = |a: f64, b: f64| {
            move |x: f64| ((a - 1.0) * x.ln() + (b - 1.0) * (-x).ln_1p(), (a - 1.0) / x - (b - 1.0) / (1.0 - x))
        };
        let gamma = |k: f64, s: f64| move |x: f64| ((k - 1.0) * x.ln() - x / s, (k - 1.0) / x - 1.0 / s);
        let normal = |x: f64| (-0.5 * x * x, -x);
        let (b22, b205, g55, g22) = (beta(2.0, 2.0), beta(2.0, 0.5), gamma(0.5, 0.5), gamma(2.0, 2.0));
        let unit = (0.0, 1.0);
        let half = (0.0, f64::INFINITY);
        // (name, support, log density and derivative, c₁ of θ, c₁ of θ²).
        type Row<'a> = (&'a str, (f64, f64), &'a dyn Fn(f64) -> (f64, f64), f64, f64);
        let rows: [Row<'_>; 5] = [
            ("Beta(2, 2)", unit, &b22, 0.0, 0.0171429),
            ("Beta(2, 0.5)", unit, &b205, 0.0, 0.00742115),
            ("Gamma(0.5, 0.5)", half, &g55, 0.0140364, 0.0519062),
            ("Gamma(2, 2)", half, &g22, 0.11228, 1.31652),
            ("TN(-5, 0)", (-5.0, 0.0), &normal, 0.0259285, 0.179155),
        ];
        for (name, (lo, hi), f, c1, c2) in rows {
            let (a, b) = CorvProxy::new((lo, hi), affine(lo, hi), f).first_order();
            assert!((a - c1).abs() < 1e-4 * c1.abs().max(1.0), "{name} c1 {a} vs {c1}");
            assert!((b - c2).abs() < 1e-4 * c2.abs().max(0.01), "{name} c2 {b} vs {c2}");
        }
    }
}
