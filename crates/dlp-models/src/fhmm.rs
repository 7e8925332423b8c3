//! Factorial hidden Markov model posterior (DISCS's `fhmm`, google-research/discs
//! `discs/models/fhmm.py`, `BinaryFHMM`): K independent binary Markov chains of length L,
//! x ∈ {0,1}^{L×K} (site l·K + k), observed through one Gaussian per time step,
//!
//! ℓ(x) = Σ_k log Bern(x_{0k}; α) + Σ_{l≥1} Σ_k [c_{lk} log(1 − β) + (1 − c_{lk}) log β]
//!        − Σ_l (y_l − Σ_k x_{lk} w_k − b)² / (2σ²),
//!
//! with c_{lk} = x_{l−1,k} XOR x_{lk} written, as DISCS does, c = a + b − 2ab (a chain stays
//! put with probability β). This is the log posterior of x given y up to a constant.
//!
//! Gradient: DISCS differentiates the same formula on real x (autodiff), so
//! ∂ℓ/∂x_{lk} = [l = 0] log(α/(1 − α)) + D (\[l > 0\](1 − 2x_{l−1,k}) + [l < L−1](1 − 2x_{l+1,k}))
//! plus r_l w_k / σ², with D = log((1 − β)/β) and r_l = y_l − Σ_k x_{lk} w_k − b. ℓ is linear
//! in each bit except for the squared residual, so flipping x_{lk} (δ = 1 − 2x_{lk}) changes ℓ
//! by exactly g δ − w_k²/(2σ²): the conditionals use that, O(K) per site.

use crate::error::{ModelError, check_finite};
use crate::fields::{err, number, vector};
use crate::model::{LoadedModel, Model, ModelKind};
use dlp_core::capability::Conditionals;
use dlp_core::{Capabilities, DomainKind, EvalError, RowTarget, Space};
use rand::{Rng, RngExt};
use rand_distr::{Distribution, StandardNormal};
use serde_json::{Map, Value, json};

/// The binary FHMM posterior (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct FhmmModel {
    space: Space,
    l: usize,
    w: Vec<f64>,
    b: f64,
    y: Vec<f64>,
    sigma: f64,
    alpha: f64,
    beta: f64,
}

impl FhmmModel {
    /// The posterior for observations `y` (length L) with weights `w` (length K), offset `b`,
    /// noise `sigma` > 0, initial probability `alpha` and stay probability `beta`, both in (0, 1).
    pub fn new(y: Vec<f64>, w: Vec<f64>, b: f64, sigma: f64, alpha: f64, beta: f64) -> Result<Self, ModelError> {
        let (l, k) = (y.len(), w.len());
        if l == 0 || k == 0 {
            return Err(ModelError::param(format!("fhmm needs L >= 1 and K >= 1, found L = {l}, K = {k}")));
        }
        check_finite("y", &y)?;
        check_finite("w", &w)?;
        check_finite("b", &[b])?;
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(ModelError::param(format!("sigma must be a positive number, found {sigma}")));
        }
        for (name, p) in [("alpha", alpha), ("beta", beta)] {
            if !(p > 0.0 && p < 1.0) {
                return Err(ModelError::param(format!("{name} must lie in (0, 1), found {p}")));
            }
        }
        Ok(FhmmModel { space: Space::binary(l * k), l, w, b, y, sigma, alpha, beta })
    }

    /// DISCS's generator (`BinaryFHMM.make_init_params`): x drawn from the prior (x_{0k} ~
    /// Bern(α), then each chain keeps its value with probability β), w ~ N(0, 1)^K,
    /// b ~ N(0, 1), y_l = x_l·w + b + σ ε_l; returns the posterior given that y and the x drawn.
    pub fn generate<R: Rng + ?Sized>(
        l: usize,
        k: usize,
        sigma: f64,
        alpha: f64,
        beta: f64,
        rng: &mut R,
    ) -> Result<(Self, Vec<u32>), ModelError> {
        let mut x = vec![0u32; l * k];
        for i in 0..l {
            for j in 0..k {
                let p = if i == 0 {
                    alpha
                } else if x[(i - 1) * k + j] == 1 {
                    beta
                } else {
                    1.0 - beta
                };
                x[i * k + j] = u32::from(rng.random::<f64>() < p);
            }
        }
        let mut normal = || -> f64 { StandardNormal.sample(rng) };
        let w: Vec<f64> = (0..k).map(|_| normal()).collect();
        let b = normal();
        let y: Vec<f64> =
            (0..l).map(|i| sigma * normal() + (0..k).map(|j| x[i * k + j] as f64 * w[j]).sum::<f64>() + b).collect();
        Ok((Self::new(y, w, b, sigma, alpha, beta)?, x))
    }

    /// Chain length L (time steps).
    pub fn len_l(&self) -> usize {
        self.l
    }

    /// Number of chains K.
    pub fn n_chains(&self) -> usize {
        self.w.len()
    }

    fn residual(&self, x: &[u32], i: usize) -> f64 {
        let k = self.w.len();
        self.y[i] - self.b - x[i * k..(i + 1) * k].iter().zip(&self.w).map(|(&v, w)| v as f64 * w).sum::<f64>()
    }

    fn log_stay_ratio(&self) -> f64 {
        ((1.0 - self.beta) / self.beta).ln()
    }

    /// ∂ℓ/∂x at site (i, j) given that time step's residual `r`.
    fn grad_at(&self, x: &[u32], i: usize, j: usize, r: f64) -> f64 {
        let k = self.w.len();
        let d = self.log_stay_ratio();
        let mut g = r * self.w[j] / (self.sigma * self.sigma);
        if i == 0 {
            g += (self.alpha / (1.0 - self.alpha)).ln();
        } else {
            g += d * (1.0 - 2.0 * x[(i - 1) * k + j] as f64);
        }
        if i + 1 < self.l {
            g += d * (1.0 - 2.0 * x[(i + 1) * k + j] as f64);
        }
        g
    }

    /// ℓ(x with site s flipped) − ℓ(x), given the residual `r` of the site's time step.
    fn flip_with(&self, x: &[u32], s: usize, r: f64) -> f64 {
        let k = self.w.len();
        let (i, j) = (s / k, s % k);
        let delta = 1.0 - 2.0 * x[s] as f64;
        self.grad_at(x, i, j, r) * delta - self.w[j] * self.w[j] / (2.0 * self.sigma * self.sigma)
    }

    fn f(&self, x: &[u32]) -> f64 {
        let k = self.w.len();
        let (la, l1a) = (self.alpha.ln(), (1.0 - self.alpha).ln());
        let (lb, l1b) = (self.beta.ln(), (1.0 - self.beta).ln());
        let mut total = 0.0;
        for &v in &x[..k] {
            total += if v == 1 { la } else { l1a };
        }
        for s in k..x.len() {
            total += if x[s] != x[s - k] { l1b } else { lb };
        }
        let two_var = 2.0 * self.sigma * self.sigma;
        total - (0..self.l).map(|i| self.residual(x, i).powi(2)).sum::<f64>() / two_var
    }
}

impl RowTarget for FhmmModel {
    fn row_space(&self) -> &Space {
        &self.space
    }

    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.f(x)
    }

    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        let k = self.w.len();
        for i in 0..self.l {
            let r = self.residual(x, i);
            for j in 0..k {
                g[i * k + j] = self.grad_at(x, i, j, r);
            }
        }
        self.f(x)
    }

    fn row_capabilities(&self) -> Capabilities<'_> {
        Capabilities { conditionals: Some(self), ..Capabilities::default() }
    }
}

/// One flip costs O(K) (its time step's residual) instead of a whole evaluation.
impl Conditionals for FhmmModel {
    fn coordinate_deltas(&self, x: &[u32], s: usize, out: &mut [f64]) -> Result<(), EvalError> {
        let r = self.residual(x, s / self.w.len());
        out[x[s] as usize] = 0.0;
        out[1 - x[s] as usize] = self.flip_with(x, s, r);
        Ok(())
    }

    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
        let k = self.w.len();
        for i in 0..self.l {
            let r = self.residual(x, i);
            for (s, o) in out.iter_mut().enumerate().skip(i * k).take(k) {
                *o = self.flip_with(x, s, r);
            }
        }
        Ok(())
    }
}

/// The registration of `kind: fhmm`.
pub static KIND: ModelKind = ModelKind {
    name: "fhmm",
    keys: &["y", "w", "b", "sigma", "alpha", "beta"],
    default_domain: DomainKind::Binary,
    domains: &[DomainKind::Binary],
    parse,
    doc: "observations `y` (L), weights `w` (K, d = L·K), `b`, `sigma`, `alpha`, `beta`",
};

fn parse(obj: &Map<String, Value>, space: &Space) -> Result<Model, ModelError> {
    let get = |key: &str| obj.get(key).ok_or_else(|| ModelError::param(format!("missing key \"{key}\" (fhmm)")));
    let y = vector(get("y")?, "y", None)?;
    let w = vector(get("w")?, "w", None)?;
    if y.len() * w.len() != space.d {
        return err(format!(
            "d = {} but y (L = {}) and w (K = {}) give L·K = {}",
            space.d,
            y.len(),
            w.len(),
            y.len() * w.len()
        ));
    }
    let scalar = |key: &str| number(get(key)?, key);
    let model = FhmmModel::new(y, w, scalar("b")?, scalar("sigma")?, scalar("alpha")?, scalar("beta")?)?;
    Ok(Model::new(model))
}

impl LoadedModel for FhmmModel {
    fn kind(&self) -> &'static ModelKind {
        &KIND
    }

    fn write_params(&self, o: &mut Map<String, Value>) {
        o.insert("y".into(), json!(self.y));
        o.insert("w".into(), json!(self.w));
        for (key, v) in [("b", self.b), ("sigma", self.sigma), ("alpha", self.alpha), ("beta", self.beta)] {
            o.insert(key.into(), json!(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::TargetExt;

    fn small() -> FhmmModel {
        FhmmModel::new(vec![0.3, -1.2, 2.0], vec![1.5, -0.7], 0.4, 2.0, 0.1, 0.8).unwrap()
    }

    /// ℓ written out term by term for L = 3, K = 2, independently of `f`.
    fn by_hand(m: &FhmmModel, x: &[u32]) -> f64 {
        let bern = |v: u32, p: f64| if v == 1 { p.ln() } else { (1.0 - p).ln() };
        let mut t = bern(x[0], 0.1) + bern(x[1], 0.1);
        for s in 2..6 {
            // Changing state has probability 1 − β = 0.2.
            t += bern(u32::from(x[s] != x[s - 2]), 0.2);
        }
        for i in 0..3 {
            let mean = x[2 * i] as f64 * 1.5 - x[2 * i + 1] as f64 * 0.7 + 0.4;
            t -= (m.y[i] - mean).powi(2) / 8.0;
        }
        t
    }

    #[test]
    fn density_gradient_and_flips_agree_with_independent_computations() {
        let m = small();
        let mut x = vec![0u32; 6];
        let mut g = vec![0.0; 6];
        let mut flips = vec![0.0; 6];
        for idx in 0..64u32 {
            for (s, v) in x.iter_mut().enumerate() {
                *v = (idx >> s) & 1;
            }
            let f = m.log_density(&x).unwrap();
            assert!((f - by_hand(&m, &x)).abs() < 1e-12, "{idx}: {f}");
            m.log_density_grad(&x, &mut g).unwrap();
            Conditionals::flip_deltas(&m, &x, &mut flips).unwrap();
            for s in 0..6 {
                // ℓ is a polynomial of degree 2 in each x_s, so the central difference of the
                // real extension equals ∂ℓ/∂x_s up to rounding.
                let h = 1e-4;
                let real = |t: f64| {
                    let mut v: Vec<f64> = x.iter().map(|&b| b as f64).collect();
                    v[s] += t;
                    real_extension(&m, &v)
                };
                let fd = (real(h) - real(-h)) / (2.0 * h);
                assert!((g[s] - fd).abs() < 1e-6, "site {s} at {idx}: {} vs {fd}", g[s]);
                let mut y = x.clone();
                y[s] = 1 - y[s];
                let exact = m.log_density(&y).unwrap() - f;
                assert!((flips[s] - exact).abs() < 1e-12, "flip {s} at {idx}");
            }
        }
    }

    /// DISCS's formula on real x (c = a + b − 2ab), the function its autodiff differentiates.
    fn real_extension(m: &FhmmModel, x: &[f64]) -> f64 {
        let k = m.w.len();
        let mut t = 0.0;
        for &v in &x[..k] {
            t += v * m.alpha.ln() + (1.0 - v) * (1.0 - m.alpha).ln();
        }
        for s in k..x.len() {
            let c = x[s - k] + x[s] - 2.0 * x[s - k] * x[s];
            t += c * (1.0 - m.beta).ln() + (1.0 - c) * m.beta.ln();
        }
        for i in 0..m.l {
            let mean: f64 = (0..k).map(|j| x[i * k + j] * m.w[j]).sum::<f64>() + m.b;
            t -= (m.y[i] - mean).powi(2) / (2.0 * m.sigma * m.sigma);
        }
        t
    }

    #[test]
    fn the_model_file_round_trips_and_bad_parameters_are_named() {
        let m = Model::new(small());
        let back = crate::parse_model_str(&m.to_json(), crate::Format::Json, "f.json").unwrap();
        assert_eq!(back, m);
        let e = FhmmModel::new(vec![1.0], vec![1.0], 0.0, 1.0, 1.0, 0.5).unwrap_err();
        assert!(e.to_string().contains("alpha must lie in (0, 1)"), "{e}");
        let text = r#"{"schema": "dlp.model.v1", "kind": "fhmm", "d": 5, "y": [1, 2], "w": [1, 2],
            "b": 0, "sigma": 1, "alpha": 0.1, "beta": 0.8}"#;
        let e = crate::parse_model_str(text, crate::Format::Json, "f.json").unwrap_err();
        assert!(e.to_string().contains("d = 5 but y (L = 2) and w (K = 2) give L·K = 4"), "{e}");
    }
}
