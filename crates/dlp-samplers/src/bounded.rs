//! Stochastic-gradient Langevin samplers on bounded coordinates (paper 001: Yokoi, Otsuka, Sato,
//! *On Transformations in Stochastic Gradient MCMC*): the mirror trick (§3), the Itô form
//! (§4, eq. 10), the change of random variable CoRV (§5, eq. 16), and SGRLD with the diagonal
//! metric G⁻¹ = diag(θ − lo) for half-lines (the NMF baseline of §6.1). Any
//! [`ContinuousTarget`] on a [`BoxSpace`] can use them; real coordinates get plain SGLD.
//!
//! Conventions of paper 001 (not those of `sgld` in [`crate::continuous`]): with ĝ = ∇f̂(θ) =
//! −Û′_θ (the target's minibatch gradient, plus N(0, s²) noise when `grad_noise_sd` = s > 0,
//! the paper's emulated stochastic gradient of Fig. 1), step ε_t from a [`StepSchedule`] and
//! η ~ N(0, 1) per coordinate, θ = F(φ) = lo + scale·f(φ) the coordinate's [`Affine`] transform:
//!
//! | sampler | update |
//! |---|---|
//! | `sgld-mirror` | θ ← reflect(θ + εĝ + √(2ε)η) into (lo + δ, hi − δ), δ = 1e−14·width (a uniform draw if still outside) |
//! | `sgld-ito` | φ ← φ + ε(g′(θ)ĝ + g″(θ)) + √(2ε)g′(θ)η, g = F⁻¹; optional clamp of φ to [−c, c] |
//! | `corv-sgld` | φ ← φ + ε(F′(φ)ĝ + f″(φ)/f′(φ)) + √(2ε)η |
//! | `sgrld` | θ ← lo + \|θ − lo + ε((θ − lo)ĝ + 1) + √(2ε(θ − lo))η\| |
//!
//! Guard \[R\]: a move whose θ = F(φ) is not strictly inside the box (f rounded to an end, or φ
//! not finite — e.g. the exp transform's super-linear drift at a large step) is refused for
//! that coordinate and reported as a rejection in [`StepInfo`], so the chain never leaves the
//! open box; CoRV with a small step essentially never hits it. Itô has no guard when unclamped:
//! its blow-up near a boundary (Theorem 1) is what the toy figures show.

use dlp_core::transform::{Affine, Transform};
use dlp_core::{
    Batch, BoxSpace, ChainRng, Chains, ContinuousSampler, ContinuousTarget, EvalError, SamplerError, StepInfo,
};
use rand::RngExt;
use rand_distr::StandardNormal;

/// Step sizes ε_t of step t = 0, 1, …
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepSchedule {
    /// ε_t = ε (every experiment of paper 001).
    Constant(f64),
    /// ε_t = a(b + t)^(−γ) (polynomial decay, Welling & Teh 2011).
    Poly {
        /// Scale a > 0.
        a: f64,
        /// Offset b ≥ 0 (b > 0 when γ > 0, so that ε_0 is finite).
        b: f64,
        /// Decay exponent γ ∈ [0, 1].
        gamma: f64,
    },
}

impl StepSchedule {
    /// ε_t.
    #[inline]
    pub fn at(&self, t: usize) -> f64 {
        match *self {
            StepSchedule::Constant(e) => e,
            StepSchedule::Poly { a, b, gamma } => a * (b + t as f64).powf(-gamma),
        }
    }

    fn check(&self) -> Result<(), String> {
        match *self {
            StepSchedule::Constant(e) if e.is_finite() && e > 0.0 => Ok(()),
            StepSchedule::Constant(e) => Err(format!("step_size (ε) must be a finite number > 0, got {e}")),
            StepSchedule::Poly { a, b, gamma } => {
                let ok = a.is_finite() && a > 0.0 && b.is_finite() && b >= 0.0 && (0.0..=1.0).contains(&gamma);
                if !ok || (b == 0.0 && gamma > 0.0) {
                    return Err(format!(
                        "polynomial schedule a(b + t)^(−γ) needs a > 0, b ≥ 0 (b > 0 if γ > 0), γ ∈ [0, 1]; got a = {a}, b = {b}, γ = {gamma}"
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Which update of paper 001 (see the module table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// SGLD in θ with reflection at the ends (§3).
    Mirror,
    /// SGLD of the SDE moved to φ by Itô's formula (eq. 10); `clamp` = Some(c) keeps φ in
    /// [−c, c] after each step, as the authors' public code does (c = 10).
    Ito {
        /// Optional bound on |φ|.
        clamp: Option<f64>,
    },
    /// Langevin on the proxy φ with the log-Jacobian added (eq. 16).
    Corv,
    /// Riemannian SGLD with G⁻¹ = diag(θ − lo), reflected at lo; half-lines only.
    Sgrld,
}

/// A configured bounded-coordinate SGLD sampler (mirror, Itô, CoRV or SGRLD).
#[derive(Clone, Debug, PartialEq)]
pub struct BoundedSgld {
    method: Method,
    schedule: StepSchedule,
    unit: Transform,
    half: Transform,
    grad_noise_sd: f64,
    batch: Option<usize>,
}

impl BoundedSgld {
    /// `method` with step schedule `schedule`, transforms sigmoid (intervals) and softplus
    /// (half-lines), exact gradients, full data; an error naming a bad schedule.
    pub fn new(method: Method, schedule: StepSchedule) -> Result<Self, SamplerError> {
        let s = BoundedSgld {
            method,
            schedule,
            unit: Transform::Sigmoid,
            half: Transform::Softplus,
            grad_noise_sd: 0.0,
            batch: None,
        };
        schedule.check().map_err(|m| s.bad(m))?;
        if let Method::Ito { clamp: Some(c) } = method
            && !(c.is_finite() && c > 0.0)
        {
            return Err(s.bad(format!("Itô clamp must be a finite number > 0, got {c}")));
        }
        Ok(s)
    }

    /// Uses `unit` on bounded intervals (sigmoid, arctan, softsign) and `half` on half-lines
    /// (exp, softplus, icll); checked against each coordinate at `start`.
    pub fn with_transforms(mut self, unit: Transform, half: Transform) -> Self {
        self.unit = unit;
        self.half = half;
        self
    }

    /// Adds N(0, sd²) noise to every gradient coordinate (paper 001 Fig. 1's emulated
    /// stochastic gradient); sd = 0 turns it off.
    pub fn with_grad_noise(mut self, sd: f64) -> Result<Self, SamplerError> {
        if !(sd.is_finite() && sd >= 0.0) {
            return Err(self.bad(format!("grad_noise_sd must be a finite number ≥ 0, got {sd}")));
        }
        self.grad_noise_sd = sd;
        Ok(self)
    }

    /// Minibatches of `b` data items per step (the runner draws them; the target scales).
    pub fn with_batch(mut self, b: Option<usize>) -> Self {
        self.batch = b;
        self
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    fn bad(&self, message: String) -> SamplerError {
        SamplerError::BadParameter { sampler: self.name(), message }
    }

    /// The transform of each coordinate, or the first coordinate it does not fit.
    fn transforms(&self, space: &BoxSpace) -> Result<Vec<Affine>, SamplerError> {
        (0..space.d)
            .map(|i| {
                let (lo, hi) = (space.lower[i], space.upper[i]);
                if self.method == Method::Sgrld && !(lo.is_finite() && hi == f64::INFINITY) {
                    return Err(format!("coordinate {i}: sgrld needs a half-line (lo, ∞), got ({lo}, {hi})"));
                }
                Affine::onto(lo, hi, self.unit, self.half).map_err(|m| format!("coordinate {i}: {m}"))
            })
            .collect::<Result<_, _>>()
            .map_err(|message| SamplerError::Unsupported { sampler: self.name(), message })
    }
}

/// Registry constructor: `name` ∈ {sgld-mirror, sgld-ito, corv-sgld, sgrld} with a constant step
/// (`--step-size`) and optional minibatch (`--batch-size`); sigmoid / softplus transforms, Itô
/// unclamped.
pub fn build(name: &str, step: Option<f64>, batch: Option<usize>) -> Result<Box<dyn ContinuousSampler>, SamplerError> {
    let method = match name {
        "sgld-mirror" => Method::Mirror,
        "sgld-ito" => Method::Ito { clamp: None },
        "corv-sgld" => Method::Corv,
        "sgrld" => Method::Sgrld,
        _ => return Err(SamplerError::UnknownSampler(name.into(), "sgld-mirror, sgld-ito, corv-sgld, sgrld".into())),
    };
    let Some(e) = step else {
        return Err(SamplerError::BadParameter {
            sampler: name.into(),
            message: "step_size (ε) is required (--step-size)".into(),
        });
    };
    Ok(Box::new(BoundedSgld::new(method, StepSchedule::Constant(e))?.with_batch(batch)))
}

impl ContinuousSampler for BoundedSgld {
    fn name(&self) -> String {
        match self.method {
            Method::Mirror => "sgld-mirror".into(),
            Method::Ito { .. } => "sgld-ito".into(),
            Method::Corv => "corv-sgld".into(),
            Method::Sgrld => "sgrld".into(),
        }
    }

    fn start<'t>(
        &self,
        target: &'t dyn ContinuousTarget,
        x0: &[f64],
    ) -> Result<Box<dyn Chains<f64> + 't>, SamplerError> {
        let space = target.space();
        let tr = self.transforms(space)?;
        let d = space.d;
        let n = x0.len() / d;
        let phi: Vec<f64> = x0.iter().enumerate().map(|(p, &x)| tr[p % d].inverse(x)).collect();
        if let Some(p) = phi.iter().position(|v| !v.is_finite()) {
            return Err(SamplerError::BadInitialState(format!(
                "chain {}, coordinate {}: {} maps to a non-finite proxy under {}",
                p / d,
                p % d,
                x0[p],
                tr[p % d].base.name()
            )));
        }
        let jac = phi.iter().enumerate().map(|(p, &v)| tr_jac(&tr[p % d], v)).collect();
        let mut runs = Vec::new();
        let mut a = 0;
        for i in 1..=d {
            if i == d || tr[i] != tr[a] {
                runs.push((a, i));
                a = i;
            }
        }
        Ok(Box::new(BoundedChains {
            runs,
            target,
            s: self.clone(),
            tr,
            d,
            x: x0.to_vec(),
            jac,
            phi,
            f: vec![0.0; n],
            g: vec![0.0; n * d],
            t: 0,
        }))
    }

    fn minibatch(&self) -> Option<usize> {
        self.batch
    }
}

/// Running chains: θ (reported), φ = F⁻¹(θ) (Itô, CoRV), the step counter for the schedule.
struct BoundedChains<'t> {
    target: &'t dyn ContinuousTarget,
    s: BoundedSgld,
    tr: Vec<Affine>,
    d: usize,
    x: Vec<f64>,
    phi: Vec<f64>,
    f: Vec<f64>,
    g: Vec<f64>,
    t: usize,
    /// (F′(φ), f″/f′(φ)) of each coordinate, kept from the step that produced φ (CoRV).
    jac: Vec<(f64, f64)>,
    /// Maximal ranges [a, b) of coordinates sharing one transform (CoRV transforms a block of
    /// such coordinates in one slice call).
    runs: Vec<(usize, usize)>,
}

/// (F′(φ), f″/f′(φ)).
fn tr_jac(tr: &Affine, phi: f64) -> (f64, f64) {
    let (_, d, l) = tr.forward_jac(phi);
    (d, l)
}

/// Coordinates per CoRV block: the block's φ, θ, F′ and f″/f′ (8 KiB) stay in L1.
const CORV_BLOCK: usize = 256;

impl BoundedChains<'_> {
    /// One CoRV step of chain `j`, returning how many coordinates moved. Per block of one
    /// transform's coordinates: the normals are drawn in the per-coordinate order (gradient
    /// noise, then η, coordinate by coordinate) with y = φ + ε(F′ĝ + f″/f′) + √(2ε)η as they
    /// come, then (θ, F′, f″/f′) at y for the whole block by the vectorised slice kernel
    /// (`Affine::forward_jac_slice`, bit-identical to the scalar form), then the guard. The
    /// kernel and the move are those of the per-coordinate form; it is ~2× cheaper because the
    /// transform no longer waits on libm's scalar `exp` (`benches/bounded_nmf.rs`).
    fn corv_chain(&mut self, j: usize, eps: f64, noise: f64, rng: &mut ChainRng) -> u32 {
        let (mut y, mut th) = ([0.0; CORV_BLOCK], [0.0; CORV_BLOCK]);
        let (mut dy, mut ly) = ([0.0; CORV_BLOCK], [0.0; CORV_BLOCK]);
        let sd = (2.0 * eps).sqrt();
        let base = j * self.d;
        let mut moved = 0;
        for &(a, b) in &self.runs {
            let tr = self.tr[a];
            let (lo, hi) = self.s.lo_hi(&tr);
            for start in (a..b).step_by(CORV_BLOCK) {
                let n = (b - start).min(CORV_BLOCK);
                for (k, yk) in y[..n].iter_mut().enumerate() {
                    let p = base + start + k;
                    let mut grad = self.g[p];
                    if noise > 0.0 {
                        let z: f64 = rng.sample(StandardNormal);
                        grad += noise * z;
                    }
                    let eta: f64 = rng.sample(StandardNormal);
                    let (dp, lp) = self.jac[p];
                    *yk = self.phi[p] + eps * (dp * grad + lp) + sd * eta;
                }
                tr.forward_jac_slice(&y[..n], &mut th[..n], &mut dy[..n], &mut ly[..n]);
                for k in 0..n {
                    if y[k].is_finite() && th[k] > lo && th[k] < hi {
                        let p = base + start + k;
                        self.x[p] = th[k];
                        self.phi[p] = y[k];
                        self.jac[p] = (dy[k], ly[k]);
                        moved += 1;
                    }
                }
            }
        }
        moved
    }

    /// One step of chain `j` coordinate by coordinate (mirror, Itô, SGRLD), returning how many
    /// coordinates moved.
    fn coordinate_chain(&mut self, j: usize, eps: f64, noise: f64, rng: &mut ChainRng) -> u32 {
        let mut moved = 0;
        for p in j * self.d..(j + 1) * self.d {
            let mut grad = self.g[p];
            if noise > 0.0 {
                let z: f64 = rng.sample(StandardNormal);
                grad += noise * z;
            }
            if let Some((theta, phi, jac)) = self.update(p, eps, grad, rng) {
                self.jac[p] = jac;
                self.x[p] = theta;
                self.phi[p] = phi;
                moved += 1;
            }
        }
        moved
    }

    /// One coordinate's move; `None` when it would leave the open interval (the guard).
    #[inline]
    fn update(&self, p: usize, eps: f64, grad: f64, rng: &mut ChainRng) -> Option<(f64, f64, (f64, f64))> {
        let tr = &self.tr[p % self.d];
        let (lo, hi) = self.s.lo_hi(tr);
        let sd = (2.0 * eps).sqrt();
        let eta: f64 = rng.sample(StandardNormal);
        let (theta, phi) = (self.x[p], self.phi[p]);
        let (new_theta, new_phi, jac) = match self.s.method {
            Method::Mirror => {
                let y = theta + eps * grad + sd * eta;
                let t = reflect(y, lo, hi, rng);
                (t, t, (1.0, 0.0))
            }
            Method::Sgrld => {
                let r = theta - lo;
                let y = lo + (r + eps * (r * grad + 1.0) + (2.0 * eps * r).sqrt() * eta).abs();
                (y, y, (1.0, 0.0))
            }
            Method::Ito { clamp } => {
                // g′(θ) = 1/F′(φ), g″(θ) = −(f″/f′)(φ)/F′(φ)² at φ = g(θ).
                let dg = 1.0 / tr.dforward(phi);
                let d2g = -tr.dlog_jac(phi) * dg * dg;
                let mut y = phi + eps * (dg * grad + d2g) + sd * dg * eta;
                if let Some(c) = clamp {
                    y = y.clamp(-c, c);
                }
                // Unguarded by design (module doc): report whatever θ the step gives.
                return Some((tr.forward(y), y, (1.0, 0.0)));
            }
            Method::Corv => unreachable!("CoRV steps a block at a time (BoundedChains::corv_chain)"),
        };
        (new_phi.is_finite() && new_theta > lo && new_theta < hi).then_some((new_theta, new_phi, jac))
    }
}

impl BoundedSgld {
    /// (lo, hi) of a coordinate from its transform.
    #[inline]
    fn lo_hi(&self, tr: &Affine) -> (f64, f64) {
        match tr.base.range() {
            dlp_core::transform::Range::Real => (f64::NEG_INFINITY, f64::INFINITY),
            dlp_core::transform::Range::Unit => (tr.lo, tr.lo + tr.scale),
            dlp_core::transform::Range::Positive => (tr.lo, f64::INFINITY),
        }
    }
}

/// Reflects y once at each finite end, into (lo + δ, hi − δ) with δ = 1e−14·(hi − lo) for
/// intervals (the authors' code [C]); a uniform draw on the interval when one reflection is not
/// enough (an overshoot wider than the interval). Half-lines: |y − lo|, nudged off lo itself.
fn reflect(y: f64, lo: f64, hi: f64, rng: &mut ChainRng) -> f64 {
    if !lo.is_finite() {
        return y;
    }
    if !hi.is_finite() {
        let r = lo + (y - lo).abs();
        return if r > lo { r } else { lo + f64::MIN_POSITIVE.max(lo.abs() * f64::EPSILON) };
    }
    let delta = 1e-14 * (hi - lo);
    let (a, b) = (lo + delta, hi - delta);
    let mut t = y;
    if t < a {
        t = 2.0 * a - t;
    }
    if t > b {
        t = 2.0 * b - t;
    }
    if t < a || t > b {
        let u: f64 = rng.random();
        t = a + (b - a) * u;
    }
    t
}

impl Chains<f64> for BoundedChains<'_> {
    fn n_chains(&self) -> usize {
        self.f.len()
    }

    fn positions(&self) -> &[f64] {
        &self.x
    }

    /// One evaluation of ĝ for all chains on the step's batch; then per chain and coordinate:
    /// (gradient noise: one normal, when s > 0), one normal η, (mirror: a uniform when one
    /// reflection is not enough).
    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], batch: Batch<'_>) -> Result<(), EvalError> {
        let d = self.d;
        let items = batch.n_items(self.target.n_data());
        self.target.evaluate(&self.x, batch, &mut self.f, Some(&mut self.g))?;
        let eps = self.s.schedule.at(self.t);
        self.t += 1;
        let noise = self.s.grad_noise_sd;
        for (j, rng) in rngs.iter_mut().enumerate() {
            let moved = match self.s.method {
                Method::Corv => self.corv_chain(j, eps, noise, rng),
                _ => self.coordinate_chain(j, eps, noise, rng),
            };
            info[j] = StepInfo {
                accepted: moved == d as u32,
                accept_prob: if moved == d as u32 { 1.0 } else { 0.0 },
                n_proposed: d as u32,
                n_changed: moved,
                density_evals: 0,
                grad_evals: 1,
                data_evals: items,
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
