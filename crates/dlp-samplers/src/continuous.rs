//! Samplers for continuous, possibly bounded coordinates ([`dlp_core::continuous`]): they use
//! the same per-chain streams, minibatch stream, runner, observers and diagnostics as the
//! discrete samplers. One file, since the three share the Langevin drift and the target
//! plumbing; each is one registry row in [`REGISTRY`].
//!
//! | name | what | exact for π |
//! |---|---|---|
//! | `mala` | Metropolis-adjusted Langevin (Roberts & Tweedie 1996): y = x + (ε/2)∇f(x) + √ε ξ, MH test; a proposal outside the box has f = −∞ and is rejected, so bounded boxes are handled exactly | yes |
//! | `sgld` | stochastic-gradient Langevin dynamics (Welling & Teh 2011): x' = x + (ε/2)ĝ(x) + √ε ξ on the step's minibatch, no MH step; unbounded spaces only | no (O(ε) bias) |
//! | `svgd` | Stein variational gradient descent (Liu & Wang 2016), RBF kernel with the median bandwidth: all particles move together ([`Coupling::Joint`]), deterministic given the start | no (finite-particle bias) |
//!
//! | `sgld-mirror`, `sgld-ito`, `corv-sgld`, `sgrld` | SGLD on bounded coordinates of paper 001 (mirror, Itô, change of variable, Riemannian), in [`crate::bounded`] | no (O(ε) bias) |
//!
//! The gradient-free SVGD of paper 004 on discrete targets is `crate::gf_svgd`.

use dlp_core::{
    Batch, BoxSpace, ChainRng, Chains, ContinuousSampler, ContinuousTarget, Coupling, EvalError, SamplerError, StepInfo,
};
use rand::RngExt;
use rand_distr::StandardNormal;

/// Parameters of the continuous samplers (`--step-size`, `--batch-size`).
#[derive(Clone, Debug, Default)]
pub struct ContinuousParams {
    /// Step size ε (> 0).
    pub step_size: Option<f64>,
    /// Minibatch size B (`sgld`, `svgd`); `None` = full data.
    pub batch_size: Option<usize>,
}

/// Constructor of one continuous sampler.
pub type ContinuousConstructor = fn(&ContinuousParams) -> Result<Box<dyn ContinuousSampler>, SamplerError>;

/// Every continuous sampler: (name, one-line doc, constructor). One line per sampler.
pub const REGISTRY: &[(&str, &str, ContinuousConstructor)] = &[
    ("mala", "Metropolis-adjusted Langevin; exact, bounded boxes by rejection", |p| Langevin::build("mala", p)),
    ("sgld", "stochastic-gradient Langevin dynamics (--batch-size), unbounded spaces", |p| Langevin::build("sgld", p)),
    ("svgd", "Stein variational gradient descent, RBF kernel, median bandwidth (particles)", Svgd::build),
    ("sgld-mirror", "SGLD reflected at the box's ends (paper 001 §3); ε in 001's convention", |p| {
        crate::bounded::build("sgld-mirror", p.step_size, p.batch_size)
    }),
    ("sgld-ito", "SGLD of the Itô-transformed SDE (paper 001 eq. 10), sigmoid / softplus", |p| {
        crate::bounded::build("sgld-ito", p.step_size, p.batch_size)
    }),
    ("corv-sgld", "change-of-variable SGLD (paper 001 eq. 16), sigmoid / softplus", |p| {
        crate::bounded::build("corv-sgld", p.step_size, p.batch_size)
    }),
    ("sgrld", "Riemannian SGLD, G⁻¹ = diag(θ − lo), reflected (half-lines)", |p| {
        crate::bounded::build("sgrld", p.step_size, p.batch_size)
    }),
];

/// Builds the continuous sampler called `name`.
pub fn build_continuous_sampler(
    name: &str,
    params: &ContinuousParams,
) -> Result<Box<dyn ContinuousSampler>, SamplerError> {
    match REGISTRY.iter().find(|r| r.0 == name) {
        Some(r) => (r.2)(params),
        None => {
            Err(SamplerError::UnknownSampler(name.into(), REGISTRY.iter().map(|r| r.0).collect::<Vec<_>>().join(", ")))
        }
    }
}

fn step_size(name: &str, p: &ContinuousParams) -> Result<f64, SamplerError> {
    match p.step_size {
        Some(e) if e.is_finite() && e > 0.0 => Ok(e),
        Some(e) => Err(SamplerError::BadParameter {
            sampler: name.into(),
            message: format!("step_size (ε) must be a finite number > 0, got {e}"),
        }),
        None => Err(SamplerError::BadParameter {
            sampler: name.into(),
            message: "step_size (ε) is required (--step-size)".into(),
        }),
    }
}

fn unbounded(name: &str, space: &BoxSpace) -> Result<(), SamplerError> {
    if space.is_bounded() {
        return Err(SamplerError::Unsupported {
            sampler: name.into(),
            message: "the space has bounded coordinates; use mala, or corv-sgld / sgld-mirror (paper 001)".into(),
        });
    }
    Ok(())
}

/// `mala` (MH) and `sgld` (no MH, minibatches).
#[derive(Clone, Debug)]
pub struct Langevin {
    eps: f64,
    mh: bool,
    batch: Option<usize>,
}

impl Langevin {
    fn build(name: &str, p: &ContinuousParams) -> Result<Box<dyn ContinuousSampler>, SamplerError> {
        let eps = step_size(name, p)?;
        let mh = name == "mala";
        if mh && p.batch_size.is_some() {
            return Err(SamplerError::BadParameter {
                sampler: name.into(),
                message: "mala is exact and takes no minibatch (use sgld)".into(),
            });
        }
        Ok(Box::new(Langevin { eps, mh, batch: p.batch_size }))
    }

    /// log q(to | from) up to the constant shared by both directions: −|to − from − (ε/2)g|²/(2ε).
    fn log_q(&self, to: &[f64], from: &[f64], g_from: &[f64]) -> f64 {
        let h = 0.5 * self.eps;
        -to.iter().zip(from).zip(g_from).map(|((t, f), g)| (t - f - h * g).powi(2)).sum::<f64>() / (2.0 * self.eps)
    }
}

impl ContinuousSampler for Langevin {
    fn name(&self) -> String {
        if self.mh { "mala" } else { "sgld" }.into()
    }

    fn start<'t>(
        &self,
        target: &'t dyn ContinuousTarget,
        x0: &[f64],
    ) -> Result<Box<dyn Chains<f64> + 't>, SamplerError> {
        if !self.mh {
            unbounded("sgld", target.space())?;
        }
        let d = target.space().d;
        let n = x0.len() / d;
        let mut c = LangevinChains {
            target,
            s: self.clone(),
            d,
            x: x0.to_vec(),
            f: vec![0.0; n],
            g: vec![0.0; n * d],
            y: vec![0.0; n * d],
            fy: vec![0.0; n],
            gy: vec![0.0; n * d],
        };
        if self.mh {
            target.evaluate(&c.x, Batch::Full, &mut c.f, Some(&mut c.g))?;
        }
        Ok(Box::new(c))
    }

    fn minibatch(&self) -> Option<usize> {
        self.batch
    }
}

/// Running Langevin chains; MALA caches f and ∇f of the current states.
struct LangevinChains<'t> {
    target: &'t dyn ContinuousTarget,
    s: Langevin,
    d: usize,
    x: Vec<f64>,
    f: Vec<f64>,
    g: Vec<f64>,
    y: Vec<f64>,
    fy: Vec<f64>,
    gy: Vec<f64>,
}

impl Chains<f64> for LangevinChains<'_> {
    fn n_chains(&self) -> usize {
        self.f.len()
    }

    fn positions(&self) -> &[f64] {
        &self.x
    }

    fn log_densities(&self) -> Option<&[f64]> {
        self.s.mh.then_some(&self.f[..])
    }

    /// Per chain: d standard normals, then (MALA) one uniform for the MH test. SGLD reads ĝ
    /// on the step's batch (one call for all chains); MALA evaluates the proposals (one call).
    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], batch: Batch<'_>) -> Result<(), EvalError> {
        let (d, eps) = (self.d, self.s.eps);
        let items = batch.n_items(self.target.n_data());
        if !self.s.mh {
            self.target.evaluate(&self.x, batch, &mut self.f, Some(&mut self.g))?;
        }
        let sd = eps.sqrt();
        for (j, rng) in rngs.iter_mut().enumerate() {
            for i in j * d..(j + 1) * d {
                let xi: f64 = rng.sample(StandardNormal);
                self.y[i] = self.x[i] + 0.5 * eps * self.g[i] + sd * xi;
            }
        }
        if !self.s.mh {
            self.x.copy_from_slice(&self.y);
            info.fill(StepInfo { grad_evals: 1, data_evals: items, ..StepInfo::stayed() });
            return Ok(());
        }
        let space = self.target.space();
        // Proposals outside the box are rejected whatever f the model returns there.
        self.target.evaluate(&self.y, Batch::Full, &mut self.fy, Some(&mut self.gy))?;
        for (j, rng) in rngs.iter_mut().enumerate() {
            let r = j * d..(j + 1) * d;
            let inside = space.contains(&self.y[r.clone()]);
            let log_a = if inside && self.fy[j].is_finite() {
                (self.fy[j] - self.f[j]) + self.s.log_q(&self.x[r.clone()], &self.y[r.clone()], &self.gy[r.clone()])
                    - self.s.log_q(&self.y[r.clone()], &self.x[r.clone()], &self.g[r.clone()])
            } else {
                f64::NEG_INFINITY
            };
            let u: f64 = rng.random();
            let accepted = u.ln() < log_a;
            if accepted {
                self.x[r.clone()].copy_from_slice(&self.y[r.clone()]);
                self.g[r.clone()].copy_from_slice(&self.gy[r]);
                self.f[j] = self.fy[j];
            }
            info[j] = StepInfo {
                accepted,
                accept_prob: log_a.min(0.0).exp(),
                n_proposed: d as u32,
                n_changed: if accepted { d as u32 } else { 0 },
                density_evals: 1,
                grad_evals: 1,
                data_evals: items,
            };
        }
        Ok(())
    }
}

/// `svgd`: x_i ← x_i + ε φ(x_i), φ(x) = (1/n) Σ_j [k(x_j, x) ∇f(x_j) + ∇_{x_j} k(x_j, x)],
/// k(a, b) = exp(−|a − b|²/h), h = med²/ln(n + 1) (the median of the pairwise squared
/// distances, Liu & Wang 2016 §5). Deterministic: it draws nothing from the chain streams.
#[derive(Clone, Debug)]
pub struct Svgd {
    eps: f64,
    batch: Option<usize>,
}

impl Svgd {
    fn build(p: &ContinuousParams) -> Result<Box<dyn ContinuousSampler>, SamplerError> {
        Ok(Box::new(Svgd { eps: step_size("svgd", p)?, batch: p.batch_size }))
    }
}

impl ContinuousSampler for Svgd {
    fn name(&self) -> String {
        "svgd".into()
    }

    fn start<'t>(
        &self,
        target: &'t dyn ContinuousTarget,
        x0: &[f64],
    ) -> Result<Box<dyn Chains<f64> + 't>, SamplerError> {
        unbounded("svgd", target.space())?;
        let d = target.space().d;
        let n = x0.len() / d;
        Ok(Box::new(SvgdParticles {
            target,
            eps: self.eps,
            d,
            x: x0.to_vec(),
            f: vec![0.0; n],
            g: vec![0.0; n * d],
            phi: vec![0.0; n * d],
            kern: Vec::with_capacity(n * n),
        }))
    }

    fn coupling(&self) -> Coupling {
        Coupling::Joint
    }

    fn minibatch(&self) -> Option<usize> {
        self.batch
    }
}

struct SvgdParticles<'t> {
    target: &'t dyn ContinuousTarget,
    eps: f64,
    d: usize,
    x: Vec<f64>,
    f: Vec<f64>,
    g: Vec<f64>,
    phi: Vec<f64>,
    /// Pairwise squared distances, then kernel values, n × n (scratch reused between steps).
    kern: Vec<f64>,
}

impl Chains<f64> for SvgdParticles<'_> {
    fn n_chains(&self) -> usize {
        self.f.len()
    }

    fn positions(&self) -> &[f64] {
        &self.x
    }

    fn try_step(&mut self, _rngs: &mut [ChainRng], info: &mut [StepInfo], batch: Batch<'_>) -> Result<(), EvalError> {
        let (n, d) = (self.f.len(), self.d);
        self.target.evaluate(&self.x, batch, &mut self.f, Some(&mut self.g))?;
        let x = &self.x;
        // Each pair's kernel value once: k(x_a, x_b) = exp(−|x_a − x_b|²/h) is symmetric.
        let sq = |a: usize, b: usize| (0..d).map(|i| (x[a * d + i] - x[b * d + i]).powi(2)).sum::<f64>();
        self.kern.clear();
        self.kern.extend((0..n * n).map(|ab| sq(ab / n, ab % n)));
        let mut upper: Vec<f64> =
            (0..n).flat_map(|a| (a + 1..n).map(move |b| a * n + b)).map(|ab| self.kern[ab]).collect();
        let h = if upper.is_empty() {
            1.0
        } else {
            let mid = upper.len() / 2;
            let med = *upper.select_nth_unstable_by(mid, f64::total_cmp).1;
            if med > 0.0 { med / ((n + 1) as f64).ln() } else { 1.0 }
        };
        for k in &mut self.kern {
            *k = (-*k / h).exp();
        }
        self.phi.fill(0.0);
        for a in 0..n {
            for b in 0..n {
                let k = self.kern[a * n + b];
                for i in 0..d {
                    // k(x_b, x_a) ∇f(x_b) + ∇_{x_b} k(x_b, x_a), ∇_{x_b} k = −2 (x_b − x_a) k / h.
                    self.phi[a * d + i] += k * self.g[b * d + i] - 2.0 * (x[b * d + i] - x[a * d + i]) * k / h;
                }
            }
        }
        let items = batch.n_items(self.target.n_data());
        for (xi, p) in self.x.iter_mut().zip(&self.phi) {
            *xi += self.eps * p / n as f64;
        }
        info.fill(StepInfo {
            n_proposed: d as u32,
            n_changed: d as u32,
            grad_evals: 1,
            data_evals: items,
            ..StepInfo::stayed()
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests;
