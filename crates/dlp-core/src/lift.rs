//! The continuous lift of a discrete space by even partition of a base distribution (Han et
//! al. 2020, paper 004 §3.1; transforms spec §6 items 1–5, gof spec §5): one implementation
//! shared by GF-KSD (`dlp_gof::gfksd`) and GF-SVGD (`dlp_samplers::gf_svgd`).
//!
//! A product base p₀ on ℝ^d is given by its 1-D CDF F and quantile F⁻¹ ([`Base`]). Coordinate
//! i with K values is cut at η_c = F⁻¹(c/K), c = 1..K−1, so every bin has p₀-mass 1/K; the map
//! Γ sends x_i ∈ [η_c, η_{c+1}) to value index c ([`Partition::bin`]). The piecewise target
//! p_c(x) ∝ p₀(x) p_*(Γ(x)) gives bin a exactly the mass p_*(a) (004 Prop. 4). A
//! differentiable surrogate ρ ([`Surrogate`]) supplies the score; importance weights are
//! ρ/p_c = exp(L(x) − ℓ(Γ(x))), with p₀ cancelling.

use crate::math::{sigmoid, softplus};
use crate::space::Space;
use rayon::prelude::*;

/// Φ⁻¹(p) = −√2 erfc⁻¹(2p), via statrs' port of Boost's inverse erfc (about 1e-15 relative).
pub fn normal_quantile(p: f64) -> f64 {
    -std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p)
}

/// Φ(x) = ½ erfc(−x/√2) (accurate in both tails, unlike ½(1 + erf)).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * statrs::function::erf::erfc(-x / std::f64::consts::SQRT_2)
}

/// A product base p₀ = Π_i p₀,ᵢ with identical 1-D factors (spec §6 item 1).
#[derive(Clone, Debug, PartialEq)]
pub enum Base {
    /// N(0, 1) per coordinate (the paper's default).
    Gaussian,
    /// Σ_m π_m N(μ_m, 1) per coordinate (004 §4.2, Fig. 2 (b–d)); weights sum to 1.
    Mixture {
        /// Mixture weights π_m (positive, summing to 1).
        weights: Vec<f64>,
        /// Component means μ_m.
        means: Vec<f64>,
    },
}

impl Base {
    /// A mixture base, checked: equal non-empty lengths, positive finite weights (normalised
    /// here), finite means. The error names what is wrong.
    pub fn mixture(weights: Vec<f64>, means: Vec<f64>) -> Result<Base, String> {
        if weights.is_empty() || weights.len() != means.len() {
            return Err(format!("mixture base: {} weights for {} means", weights.len(), means.len()));
        }
        if let Some(w) = weights.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
            return Err(format!("mixture base: weight {w} is not a positive number"));
        }
        if let Some(m) = means.iter().find(|m| !m.is_finite()) {
            return Err(format!("mixture base: mean {m} is not finite"));
        }
        let s: f64 = weights.iter().sum();
        Ok(Base::Mixture { weights: weights.iter().map(|w| w / s).collect(), means })
    }

    /// F(x).
    pub fn cdf(&self, x: f64) -> f64 {
        match self {
            Base::Gaussian => normal_cdf(x),
            Base::Mixture { weights, means } => weights.iter().zip(means).map(|(w, m)| w * normal_cdf(x - m)).sum(),
        }
    }

    /// F⁻¹(p) for p ∈ (0, 1). The mixture has no closed form: bisection on F, bracketed by the
    /// component quantiles (F is increasing and lies between the extreme components' CDFs),
    /// run to adjacent floats.
    pub fn quantile(&self, p: f64) -> f64 {
        match self {
            Base::Gaussian => normal_quantile(p),
            Base::Mixture { means, .. } => {
                let z = normal_quantile(p);
                let lo_m = means.iter().copied().fold(f64::INFINITY, f64::min);
                let hi_m = means.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let (mut lo, mut hi) = (lo_m + z - 1e-9, hi_m + z + 1e-9);
                for _ in 0..200 {
                    let mid = 0.5 * (lo + hi);
                    if mid <= lo || mid >= hi {
                        break;
                    }
                    if self.cdf(mid) < p {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                0.5 * (lo + hi)
            }
        }
    }

    /// p₀(x) of one coordinate.
    pub fn density(&self, x: f64) -> f64 {
        let phi = |t: f64| (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
        match self {
            Base::Gaussian => phi(x),
            Base::Mixture { weights, means } => weights.iter().zip(means).map(|(w, m)| w * phi(x - m)).sum(),
        }
    }

    /// d/dx log p₀(x) of one coordinate (−x for N(0, 1)).
    pub fn score(&self, x: f64) -> f64 {
        match self {
            Base::Gaussian => -x,
            Base::Mixture { weights, means } => {
                // Responsibilities in log space so that far tails do not divide 0 by 0.
                let logs: Vec<f64> = weights.iter().zip(means).map(|(w, m)| w.ln() - 0.5 * (x - m).powi(2)).collect();
                let mx = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let (mut num, mut den) = (0.0, 0.0);
                for (l, m) in logs.iter().zip(means) {
                    let r = (l - mx).exp();
                    num += r * (m - x);
                    den += r;
                }
                num / den
            }
        }
    }
}

/// The even partition of a base into K bins: the K − 1 cut points η_c = F⁻¹(c/K).
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    /// The base p₀.
    pub base: Base,
    /// Cut points η_1 < … < η_{K−1}.
    pub cuts: Vec<f64>,
}

impl Partition {
    /// The partition of `base` into `k` equal-mass bins.
    pub fn new(base: Base, k: usize) -> Partition {
        let cuts = (1..k).map(|c| base.quantile(c as f64 / k as f64)).collect();
        Partition { base, cuts }
    }

    /// K.
    pub fn k(&self) -> usize {
        self.cuts.len() + 1
    }

    /// Γ(x): the value index c with x ∈ [η_c, η_{c+1}) (η₀ = −∞, η_K = ∞); for K = 2 on
    /// N(0, 1) this is sign with sign(0) = +1.
    #[inline]
    pub fn bin(&self, x: f64) -> u32 {
        self.cuts.partition_point(|&c| c <= x) as u32
    }

    /// Γ of every coordinate of `xs`.
    pub fn bins(&self, xs: &[f64], out: &mut [u32]) {
        for (o, &x) in out.iter_mut().zip(xs) {
            *o = self.bin(x);
        }
    }

    /// An exact draw from p₀ restricted to bin c, from a uniform u ∈ (0, 1): F⁻¹((c + u)/K).
    /// (c + u)/K can round to 1 for u near 1; it is kept below 1 so the point stays finite.
    pub fn lift_one(&self, c: u32, u: f64) -> f64 {
        let p = ((c as f64 + u) / self.k() as f64).clamp(f64::MIN_POSITIVE, 1.0 - f64::EPSILON / 2.0);
        self.base.quantile(p)
    }
}

/// x_{a,i} = Φ⁻¹((c_{a,i} + u_{a,i}) / K): the lift of index rows with jitter u ∈ (0, 1)
/// under the N(0, I) base (gof spec §5.1).
pub fn lift(space: &Space, xs: &[u32], jitter: &[f64]) -> Vec<f64> {
    let k = space.k() as f64;
    xs.iter().zip(jitter).map(|(&c, &u)| normal_quantile((c as f64 + u) / k)).collect()
}

/// A continuous extension ℓ̃ of a binary-valued model (gof spec §5.2), on real values v with the
/// two values (v₀, v₁) of the domain.
#[derive(Clone, Debug, PartialEq)]
pub enum Relaxation {
    /// ℓ̃(v) = bᵀv + ½ vᵀJv, ∇ℓ̃ = b + Jv (J symmetric, zero diagonal, d × d row-major).
    Ising {
        /// (v₀, v₁): (−1, 1) for spin, (0, 1) for binary.
        values: (f64, f64),
        /// J, d × d row-major.
        j: Vec<f64>,
        /// b, length d.
        b: Vec<f64>,
    },
    /// ℓ̃(v) = bᵀv + Σ_k softplus(c_k + Σ_i W_ik v_i), ∇ℓ̃ = b + W σ(c + Wᵀv).
    Rbm {
        /// (v₀, v₁) of the visible units.
        values: (f64, f64),
        /// W, d × M row-major.
        w: Vec<f64>,
        /// b, length d.
        b: Vec<f64>,
        /// c, length M.
        c: Vec<f64>,
    },
}

impl Relaxation {
    /// (v₀, v₁).
    pub fn values(&self) -> (f64, f64) {
        match self {
            Relaxation::Ising { values, .. } | Relaxation::Rbm { values, .. } => *values,
        }
    }

    /// The relaxation of a target's capabilities, when it declares an Ising or RBM view (the
    /// two binary-valued families with a natural polynomial / softplus extension).
    pub fn from_capabilities(caps: &crate::Capabilities<'_>) -> Option<Relaxation> {
        if let Some(v) = caps.ising {
            let d = v.d();
            let mut j = vec![0.0; d * d];
            for i in 0..d {
                for p in v.offsets[i]..v.offsets[i + 1] {
                    j[i * d + v.neighbours[p] as usize] = v.weights[p];
                }
            }
            let values = if v.spin { (-1.0, 1.0) } else { (0.0, 1.0) };
            return Some(Relaxation::Ising { values, j, b: v.fields.to_vec() });
        }
        if let Some(r) = caps.rbm {
            let values = if r.spin { (-1.0, 1.0) } else { (0.0, 1.0) };
            return Some(Relaxation::Rbm { values, w: r.w.to_vec(), b: r.b.to_vec(), c: r.c.to_vec() });
        }
        None
    }

    /// Whether the parameters fit d coordinates.
    pub fn fits(&self, d: usize) -> bool {
        match self {
            Relaxation::Ising { j, b, .. } => j.len() == d * d && b.len() == d,
            Relaxation::Rbm { w, b, c, .. } => b.len() == d && w.len() == d * c.len(),
        }
    }

    /// ℓ̃(v), writing ∇ℓ̃(v) into `grad` (length d).
    pub fn log_density_grad(&self, v: &[f64], grad: &mut [f64]) -> f64 {
        let d = v.len();
        match self {
            Relaxation::Ising { j, b, .. } => {
                let mut f = 0.0;
                for i in 0..d {
                    let jv: f64 = (0..d).map(|l| j[i * d + l] * v[l]).sum();
                    grad[i] = b[i] + jv;
                    f += b[i] * v[i] + 0.5 * v[i] * jv;
                }
                f
            }
            Relaxation::Rbm { w, b, c, .. } => {
                let m = c.len();
                let mut f: f64 = b.iter().zip(v).map(|(bi, vi)| bi * vi).sum();
                grad.copy_from_slice(b);
                for k in 0..m {
                    let t = c[k] + (0..d).map(|i| w[i * m + k] * v[i]).sum::<f64>();
                    f += softplus(t);
                    let sg = sigmoid(t);
                    for i in 0..d {
                        grad[i] += w[i * m + k] * sg;
                    }
                }
                f
            }
        }
    }
}

/// The surrogate ρ (gof spec §5.2, transforms spec §6 item 4).
#[derive(Clone, Debug, PartialEq)]
pub enum Surrogate {
    /// ρ = p₀, s_ρ(x) = ∇log p₀ (−x for N(0, I); any domain).
    Gaussian,
    /// ρ ∝ p₀(x) exp(ℓ̃(Γ̃(x))), Γ̃(x)_i = v₀ + (v₁ − v₀) σ(x_i) (= tanh(x/2) for ±1, 004 eq. 21).
    Relaxed(Relaxation),
}

impl Surrogate {
    /// "gaussian" or "relaxed".
    pub fn name(&self) -> &'static str {
        match self {
            Surrogate::Gaussian => "gaussian",
            Surrogate::Relaxed(_) => "relaxed",
        }
    }
}

/// Surrogate scores s_ρ (n × d) and log-surrogate terms L(x) (length n; 0 for ρ = p₀) of lifted
/// points under the N(0, I) base.
pub fn surrogate_scores(surrogate: &Surrogate, lifted: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let n = lifted.len() / d.max(1);
    let mut s = vec![0.0; n * d];
    let mut l = vec![0.0; n];
    surrogate_scores_into(&Base::Gaussian, surrogate, lifted, d, &mut s, &mut l);
    (s, l)
}

/// [`surrogate_scores`] on any base, into caller buffers (`s`: n × d, `l`: n); rows in
/// parallel, each computed alone, so the result does not depend on the thread count.
pub fn surrogate_scores_into(
    base: &Base,
    surrogate: &Surrogate,
    lifted: &[f64],
    d: usize,
    s: &mut [f64],
    l: &mut [f64],
) {
    if d == 0 {
        return;
    }
    s.par_chunks_mut(d).zip(l.par_iter_mut()).zip(lifted.par_chunks(d)).for_each(|((srow, la), x)| {
        for (si, &xi) in srow.iter_mut().zip(x) {
            *si = base.score(xi);
        }
        match surrogate {
            Surrogate::Gaussian => *la = 0.0,
            Surrogate::Relaxed(rel) => {
                let (v0, v1) = rel.values();
                let sig: Vec<f64> = x.iter().map(|&t| sigmoid(t)).collect();
                let v: Vec<f64> = sig.iter().map(|&g| v0 + (v1 - v0) * g).collect();
                let mut grad = vec![0.0; d];
                *la = rel.log_density_grad(&v, &mut grad);
                for i in 0..d {
                    srow[i] += grad[i] * (v1 - v0) * sig[i] * (1.0 - sig[i]);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cut_points_are_the_spec_values() {
        let p3 = Partition::new(Base::Gaussian, 3);
        assert!((p3.cuts[0] + 0.4307272992954576).abs() < 1e-12 && (p3.cuts[1] - 0.4307272992954576).abs() < 1e-12);
        let p5 = Partition::new(Base::Gaussian, 5);
        let want = [-0.8416212335729143, -0.2533471031357997, 0.2533471031357997, 0.8416212335729143];
        for (c, w) in p5.cuts.iter().zip(want) {
            assert!((c - w).abs() < 1e-12, "{c} vs {w}");
        }
        // Binary: Γ = sign with sign(0) = +1.
        let p2 = Partition::new(Base::Gaussian, 2);
        assert_eq!((p2.bin(-1e-300), p2.bin(0.0), p2.bin(3.0)), (0, 1, 1));
    }

    /// 004 Prop. 4: the p_c-mass of bin a is p₀(bin a) p_*(a) / Σ_b p₀(bin b) p_*(b) = p_*(a),
    /// since every bin has p₀-mass F(η_{a+1}) − F(η_a) = 1/K; checked through F itself.
    #[test]
    fn every_bin_has_base_mass_one_over_k_and_pc_mass_p_star() {
        let p_star = [0.1, 0.2, 0.25, 0.15, 0.3];
        for base in [
            Base::Gaussian,
            Base::mixture(p_star.to_vec(), vec![-2.0, -1.0, 0.0, 1.0, 2.0]).unwrap(),
            Base::mixture(p_star.to_vec(), vec![-8.0, -4.0, 0.0, 4.0, 8.0]).unwrap(),
        ] {
            let part = Partition::new(base.clone(), 5);
            let mut edges = vec![f64::NEG_INFINITY];
            edges.extend(&part.cuts);
            edges.push(f64::INFINITY);
            let mass: Vec<f64> = edges.windows(2).map(|e| base.cdf(e[1]) - base.cdf(e[0])).collect();
            let z: f64 = mass.iter().zip(&p_star).map(|(m, p)| m * p).sum();
            // 1e-10: statrs' erfc and erfc⁻¹ round-trip to about 2e-11.
            for (a, (m, p)) in mass.iter().zip(&p_star).enumerate() {
                assert!((m - 0.2).abs() < 1e-10, "{base:?}: bin {a} has base mass {m}");
                assert!((m * p / z - p).abs() < 1e-10, "{base:?}: bin {a}");
            }
            // Lifted points land in their bin.
            for c in 0..5u32 {
                for u in [1e-9, 0.3, 0.999_999] {
                    assert_eq!(part.bin(part.lift_one(c, u)), c);
                }
            }
        }
    }

    #[test]
    fn mixture_score_is_the_log_density_derivative() {
        let base = Base::mixture(vec![0.3, 0.7], vec![-2.0, 1.5]).unwrap();
        let logp =
            |x: f64| (0.3 * (-0.5 * (x + 2.0f64).powi(2)).exp() + 0.7 * (-0.5 * (x - 1.5f64).powi(2)).exp()).ln();
        for x in [-3.0, -0.4, 0.0, 2.2] {
            let fd = (logp(x + 1e-6) - logp(x - 1e-6)) / 2e-6;
            assert!((base.score(x) - fd).abs() < 1e-6, "{x}");
        }
    }
}
