//! `rmala`: relaxed MALA, the continuous-relaxation baseline of Grathwohl, Swersky, Hashemi,
//! Duvenaud & Maddison, "Oops I Took A Gradient" (ICML 2021), §5 (as issue 44 cites it), which
//! the DLP paper (Zhang et al. 2022, §7.1, Fig. 3) runs on the Ising model as "RMALA". The
//! recipe is the GWG release's `RelaxedMALA` (`samplers_old.py`, wgrathwohl/GWG_release at
//! 6441499): Langevin moves of a continuous z with the MH test against the thresholded target.
//!
//! The augmented target on z ∈ ℝ^d, for a binary or spin model π(x) ∝ exp f(x):
//!
//! p(z) ∝ N(z; 0, I) · exp f(Γ(z)),  Γ(z)_i = 1[z_i > 0] (value index 1: 1 for binary, +1 spin).
//!
//! Its x-marginal is exactly π: the orthant {Γ(z) = x} has N(0, I)-mass 2^{−d} for every x, so
//! P(Γ(z) = x) ∝ 2^{−d} exp f(x). Any p-invariant kernel on z therefore reports an
//! x-chain whose stationary law is π, which is why the row is `exact` although no transition
//! matrix on x exists (Γ(z_t) alone is not a Markov chain: the next x depends on where in its
//! orthant z sits).
//!
//! One step from z with step size ε = `--step-size` (proposal variance 2ε, the release's
//! `step_std = (2 step_size)^½`):
//!
//! 1. z' = z + ε s(z) + √(2ε) ξ, ξ ~ N(0, I) (d normals from the chain's stream), where s is the
//!    gradient of the sigmoid surrogate log ρ(z) = log N(z; 0, I) + ℓ̃(Γ̃(z)),
//!    Γ̃(z)_i = v₀ + (v₁ − v₀) σ(z_i) ((v₀, v₁) the two values; tanh(z/2) for spins):
//!    s(z) = −z + (v₁ − v₀) σ'(z) ⊙ ∇ℓ̃(Γ̃(z)). ℓ̃ is the model's own continuous extension,
//!    read from its Ising or RBM view (ℓ̃(v) = bᵀv + ½ vᵀJv; bᵀv + Σ_k softplus(c_k + (Wᵀv)_k)),
//!    as the release evaluates its RBM at `sigmoid` inputs. A model without such a view has no
//!    extension to evaluate at soft points, so there s uses the target's own gradient at the
//!    hard point, ∂f/∂x (bit units) at Γ(z), through the same chain rule:
//!    s(z) = −z + σ'(z) ⊙ ∇f(Γ(z)) — our stand-in (a "straight-through" surrogate; any
//!    deterministic drift keeps the MH test exact, only efficiency changes).
//! 2. log A = [f(Γ(z')) − ½‖z'‖²] − [f(Γ(z)) − ½‖z‖²] + log q(z | z') − log q(z' | z), with
//!    log q(b | a) = −‖b − a − ε s(a)‖² / (4ε) (the constants cancel), accepted with
//!    min(1, e^A) by one uniform (the release's `accept_dist="target"`).
//!
//! Surrogate temperature: σ(z), i.e. τ = 1 in σ(z/τ) — our choice, the one `gf-svgd-relaxed`
//! uses (`dlp_core::lift::Surrogate::Relaxed`). The release has τ = 10 in `RelaxedMALA`
//! (`sigmoid(0.1 x)`) and τ = 0.1 in the MALA runs of `svgd_sample.py`; τ changes only the
//! drift, never the law. Step size: the release starts at ε = 1/d and moves it by
//! ε += 0.02 (acceptance − 0.57) ε; here `dlp sample`'s warm-up adapts ε by the crate's dual
//! averaging toward the row's target acceptance 0.57 (the release's value), also from ε = 1/d
//! ([`Rmala::adapt`]), and freezes it.
//!
//! **Where the continuous state lives.** `Chains` reports discrete rows, so the chains hold z
//! (n × d) privately, beside x = Γ(z), f(x), the drift s(z) and, without a view, ∇f(x), and
//! report x through [`Chains::positions`] — the way GF-SVGD keeps its continuous particles and
//! parallel tempering its replicas inside their chains. A chain is started (and moved by
//! [`Chains::set_states`], e.g. by replica exchange or an adaptation window's restart) from an
//! x only; its z is then drawn from p(z | x) = N(0, I) restricted to the orthant of x
//! (|N(0, 1)| with the sign of x_i), from the chain's own stream at its next step. That
//! conditional does not depend on f, so this refresh is an exact Gibbs move of z given x under
//! every target (tempered ones included): restarting from x never biases the chain. Keeping z
//! out of the runner's state type means every discrete observer, trace and front end runs
//! `rmala` unchanged; the price is that z is not observable from outside.
//!
//! Exact suite: "exact on an augmented continuous space; checked statistically". There is no
//! matrix on x to compare ([`crate::spec::SamplerSpec::augmented`] keeps the row out of the
//! matrix suite); `crates/dlp-exact/tests/rmala.rs` checks the step's ratio and drift against an
//! independent transcription (`dlp_exact::reference::rmala`) and the reported x-law of seeded
//! independent chains against enumeration (G-tests).
//!
//! Cost per step: one drift (O(|edges|) on an Ising view, O(dM) on an RBM, else the target's
//! gradient with the evaluation), one evaluation of f at Γ(z') when it differs from x (the
//! moving chains in one batch), d normals and one uniform.

use crate::dual_averaging::{AdaptOptions, Adapted, dual_average};
use crate::proposal::mh_accept;
use crate::spec::{
    Build, NO_DEFAULTS, NO_TESTS, PLAIN, STEP_SIZE, SamplerName, SamplerParams, SamplerSpec, TestSpec,
    ergodic_everywhere,
};
use dlp_core::capability::{IsingView, RbmView};
use dlp_core::math::sigmoid;
use dlp_core::{Batch, ChainRng, Chains, EvalError, RunOptions, Sampler, SamplerError, StepInfo, Target};
use rand::RngExt;

/// The release's target acceptance (`RelaxedMALA.update_step_size`: `ar - .57`).
pub const RMALA_TARGET_ACCEPT: f64 = 0.57;

/// Relaxed MALA with step size ε (proposal variance 2ε).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rmala {
    /// ε.
    pub step: f64,
}

impl Rmala {
    /// ε finite and > 0.
    pub fn new(step: f64) -> Result<Rmala, SamplerError> {
        if !(step.is_finite() && step > 0.0) {
            return Err(SamplerError::BadParameter {
                sampler: "rmala".into(),
                message: format!("--step-size ε = {step}: the Langevin step must be a finite number > 0"),
            });
        }
        Ok(Rmala { step })
    }

    /// Registry constructor (`--step-size` is ε).
    pub fn build(_: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        let step = params.step_size.ok_or_else(|| SamplerError::BadParameter {
            sampler: "rmala".into(),
            message: "needs --step-size ε, the Langevin step (dlp sample adapts it when none is given)".into(),
        })?;
        Ok(Box::new(Rmala::new(step)?))
    }

    /// The row's warm-up tuner: the crate's dual averaging of ε toward the target acceptance
    /// (0.57 by default), started where the release starts, ε = 1/d, instead of the shared
    /// default α₀ = 0.5: ε scales like 1/d (0.0136–0.0155 adapted on fig3's 25-site lattice,
    /// `paper/fig3.md`), and α₀ also sets the point μ = log(10 α₀) that dual averaging shrinks
    /// toward, so a start 36 times too large costs the first windows of every warm-up.
    pub fn adapt(
        _name: &SamplerName,
        _params: &SamplerParams,
        target: &dyn Target,
        x0: &[u32],
        opts: &AdaptOptions,
        run: &RunOptions,
    ) -> Result<Adapted, SamplerError> {
        let opts = AdaptOptions { initial: 1.0 / target.space().d.max(1) as f64, ..opts.clone() };
        let windows = (opts.warmup / opts.window).max(1);
        let build = |e: f64| -> Result<Box<dyn Sampler>, SamplerError> { Ok(Box::new(Rmala::new(e)?)) };
        let (step, positions, last_accept) = dual_average(&build, target, x0, 0..windows, &opts, run)?;
        Ok(Adapted { step_size: Some(step), step_size_min: None, ladder: None, positions, last_accept, windows })
    }
}

/// Where the drift's model gradient comes from.
#[derive(Clone, Copy, Debug)]
pub enum Drift<'t> {
    /// ∇ℓ̃ at the soft values Γ̃(z) of an Ising view (ℓ̃(v) = bᵀv + ½ vᵀJv).
    Ising(IsingView<'t>),
    /// ∇ℓ̃ at the soft values Γ̃(z) of an RBM view.
    Rbm(RbmView<'t>),
    /// ∂f/∂x at Γ(z), from the target's evaluation (our stand-in for models without a view).
    StraightThrough,
}

impl<'t> Drift<'t> {
    /// The relaxed drift when `target` has an Ising or RBM view, else the straight-through one.
    pub fn of(target: &'t dyn Target) -> Drift<'t> {
        let caps = target.capabilities();
        match (caps.ising, caps.rbm) {
            (Some(v), _) => Drift::Ising(v),
            (None, Some(r)) => Drift::Rbm(r),
            _ => Drift::StraightThrough,
        }
    }

    /// Whether the drift needs ∇f at Γ(z) from the target.
    pub fn needs_target_gradient(&self) -> bool {
        matches!(self, Drift::StraightThrough)
    }

    /// s(z) = −z + (v₁ − v₀) σ'(z) ⊙ ∇ℓ̃(Γ̃(z)) into `out` (length d); `grad_x` is ∂f/∂x at Γ(z)
    /// (bit units, used by [`Drift::StraightThrough`] only); `soft` is scratch of length d.
    pub fn drift(&self, z: &[f64], grad_x: &[f64], soft: &mut [f64], out: &mut [f64]) {
        let d = z.len();
        // (v₀, v₁): the two values the relaxation interpolates; bit units for straight-through.
        let spin = match self {
            Drift::Ising(v) => v.spin,
            Drift::Rbm(r) => r.spin,
            Drift::StraightThrough => false,
        };
        let (v0, width) = if spin { (-1.0, 2.0) } else { (0.0, 1.0) };
        for (v, &zi) in soft.iter_mut().zip(z) {
            *v = v0 + width * sigmoid(zi);
        }
        match self {
            Drift::Ising(view) => {
                for (i, o) in out.iter_mut().enumerate() {
                    let edges = view.offsets[i]..view.offsets[i + 1];
                    let pairs = view.neighbours[edges.clone()].iter().zip(&view.weights[edges]);
                    *o = view.fields[i] + pairs.map(|(&j, &w)| w * soft[j as usize]).sum::<f64>();
                }
            }
            Drift::Rbm(r) => {
                out.copy_from_slice(r.b);
                for k in 0..r.m {
                    let a = r.c[k] + (0..d).map(|i| r.w[i * r.m + k] * soft[i]).sum::<f64>();
                    let h = sigmoid(a);
                    for (i, o) in out.iter_mut().enumerate() {
                        *o += r.w[i * r.m + k] * h;
                    }
                }
            }
            Drift::StraightThrough => out.copy_from_slice(grad_x),
        }
        for (o, &zi) in out.iter_mut().zip(z) {
            let sg = sigmoid(zi);
            *o = -zi + width * sg * (1.0 - sg) * *o;
        }
    }
}

/// Γ(z): value index 1 where z > 0, else 0.
#[inline]
pub fn threshold(z: f64) -> u32 {
    u32::from(z > 0.0)
}

/// log q(to | from) up to its constant: −‖to − from − ε s(from)‖² / (4ε).
pub fn log_q(step: f64, from: &[f64], drift_from: &[f64], to: &[f64]) -> f64 {
    let ss: f64 = to.iter().zip(from).zip(drift_from).map(|((t, f), s)| (t - f - step * s).powi(2)).sum();
    -ss / (4.0 * step)
}

/// The log MH ratio of the move z → z' (with f at Γ(z), Γ(z') and the drifts at both): the
/// step's test, written once.
pub fn log_accept_ratio(
    step: f64,
    (z, f, s): (&[f64], f64, &[f64]),
    (z_new, f_new, s_new): (&[f64], f64, &[f64]),
) -> f64 {
    let half_sq = |v: &[f64]| 0.5 * v.iter().map(|a| a * a).sum::<f64>();
    (f_new - half_sq(z_new)) - (f - half_sq(z)) + log_q(step, z_new, s_new, z) - log_q(step, z, s, z_new)
}

impl Sampler for Rmala {
    fn name(&self) -> String {
        "rmala".into()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        Ok(Box::new(self.chains(target, x0)?))
    }
}

impl Rmala {
    /// The chains of [`Sampler::start`], concretely typed.
    fn chains<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<RmalaChains<'t>, SamplerError> {
        let space = target.space();
        if space.k() != 2 {
            return Err(SamplerError::Unsupported {
                sampler: self.name(),
                message: format!(
                    "relaxed MALA thresholds z > 0 into two values; this model has {} values per coordinate \
                     (binary and spin models only)",
                    space.k()
                ),
            });
        }
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let d = space.d;
        let n = x0.len().checked_div(d).unwrap_or(0);
        let drift = Drift::of(target);
        let mut f = vec![0.0; n];
        let mut g = vec![0.0; if drift.needs_target_gradient() { n * d } else { 0 }];
        target.evaluate(x0, Batch::Full, &mut f, drift.needs_target_gradient().then_some(&mut g[..]))?;
        let n_grad = g.len();
        Ok(RmalaChains {
            target,
            step: self.step,
            drift,
            d,
            z: vec![0.0; n * d],
            x: x0.to_vec(),
            f,
            g,
            s: vec![0.0; n * d],
            relift: vec![true; n],
            z_new: vec![0.0; n * d],
            x_new: vec![0; n * d],
            s_new: vec![0.0; n * d],
            moved: vec![0; n],
            rows: Vec::with_capacity(n * d),
            f_rows: vec![0.0; n],
            g_rows: vec![0.0; n_grad],
            soft: vec![0.0; d],
        })
    }
}

/// n relaxed-MALA chains: z (hidden), x = Γ(z) (reported), f(x), the drift s(z) and, for the
/// straight-through drift, ∇f(x); plus per-step scratch.
struct RmalaChains<'t> {
    target: &'t dyn Target,
    step: f64,
    drift: Drift<'t>,
    d: usize,
    z: Vec<f64>,
    x: Vec<u32>,
    f: Vec<f64>,
    g: Vec<f64>,
    s: Vec<f64>,
    /// Chains whose z must be drawn from p(z | x) before their next move (start, set_states).
    relift: Vec<bool>,
    z_new: Vec<f64>,
    x_new: Vec<u32>,
    s_new: Vec<f64>,
    /// Coordinates where Γ(z') differs from x, per chain.
    moved: Vec<u32>,
    /// Γ(z') of the chains with `moved > 0`, packed for one batched evaluation.
    rows: Vec<u32>,
    f_rows: Vec<f64>,
    g_rows: Vec<f64>,
    soft: Vec<f64>,
}

impl RmalaChains<'_> {
    /// z_j ~ N(0, I) restricted to the orthant of x_j: |ξ| with the sign of x (ξ ≠ 0 redrawn,
    /// since Γ(0) = 0 would put a draw for x_i = 1 in the wrong orthant), then its drift.
    fn relift(&mut self, j: usize, rng: &mut ChainRng) {
        let d = self.d;
        for i in 0..d {
            let a = loop {
                let xi: f64 = rng.sample(rand_distr::StandardNormal);
                if xi != 0.0 {
                    break xi.abs();
                }
            };
            self.z[j * d + i] = if self.x[j * d + i] == 1 { a } else { -a };
        }
        let g = if self.g.is_empty() { &[][..] } else { &self.g[j * d..(j + 1) * d] };
        self.drift.drift(&self.z[j * d..(j + 1) * d], g, &mut self.soft, &mut self.s[j * d..(j + 1) * d]);
        self.relift[j] = false;
    }
}

impl Chains for RmalaChains<'_> {
    fn n_chains(&self) -> usize {
        self.f.len()
    }

    fn positions(&self) -> &[u32] {
        &self.x
    }

    fn log_densities(&self) -> Option<&[f64]> {
        Some(&self.f)
    }

    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], _batch: Batch<'_>) -> Result<(), EvalError> {
        let (d, eps) = (self.d, self.step);
        let noise = (2.0 * eps).sqrt();
        // Proposals: z' = z + ε s(z) + √(2ε) ξ and x' = Γ(z'); the moving ones packed.
        self.rows.clear();
        for (j, rng) in rngs.iter_mut().enumerate() {
            if self.relift[j] {
                self.relift(j, rng);
            }
            let mut moved = 0;
            for i in j * d..(j + 1) * d {
                let xi: f64 = rng.sample(rand_distr::StandardNormal);
                let zn = self.z[i] + eps * self.s[i] + noise * xi;
                self.z_new[i] = zn;
                self.x_new[i] = threshold(zn);
                moved += u32::from(self.x_new[i] != self.x[i]);
            }
            self.moved[j] = moved;
            if moved > 0 {
                self.rows.extend_from_slice(&self.x_new[j * d..(j + 1) * d]);
            }
        }
        let m = self.rows.len() / d.max(1);
        if m > 0 {
            let grad = if self.drift.needs_target_gradient() { Some(&mut self.g_rows[..m * d]) } else { None };
            self.target.evaluate(&self.rows, Batch::Full, &mut self.f_rows[..m], grad)?;
        }
        // Per chain: the drift at z', the MH test against p, the move.
        let mut r = 0;
        for (j, rng) in rngs.iter_mut().enumerate() {
            let span = j * d..(j + 1) * d;
            let evaluated = self.moved[j] > 0;
            let (f_new, g_new) = if evaluated {
                let g = if self.g.is_empty() { &[][..] } else { &self.g_rows[r * d..(r + 1) * d] };
                (self.f_rows[r], g)
            } else {
                (self.f[j], if self.g.is_empty() { &[][..] } else { &self.g[span.clone()] })
            };
            self.drift.drift(&self.z_new[span.clone()], g_new, &mut self.soft, &mut self.s_new[span.clone()]);
            let log_a = log_accept_ratio(
                eps,
                (&self.z[span.clone()], self.f[j], &self.s[span.clone()]),
                (&self.z_new[span.clone()], f_new, &self.s_new[span.clone()]),
            );
            let (accepted, p) = mh_accept(log_a, rng);
            if accepted {
                if !self.g.is_empty() && evaluated {
                    self.g[span.clone()].copy_from_slice(&self.g_rows[r * d..(r + 1) * d]);
                }
                self.z[span.clone()].copy_from_slice(&self.z_new[span.clone()]);
                self.x[span.clone()].copy_from_slice(&self.x_new[span.clone()]);
                self.s[span.clone()].copy_from_slice(&self.s_new[span]);
                self.f[j] = f_new;
            }
            let k = self.moved[j];
            info[j] = StepInfo {
                accepted,
                accept_prob: p,
                n_proposed: k,
                n_changed: if accepted { k } else { 0 },
                density_evals: u32::from(evaluated),
                // One drift per step: the relaxed model's gradient at Γ̃(z'), or ∇f with the
                // evaluation (none when Γ(z') = x: ∇f(x) is cached).
                grad_evals: if self.drift.needs_target_gradient() { u32::from(evaluated) } else { 1 },
                data_evals: 0,
            };
            r += usize::from(evaluated);
        }
        Ok(())
    }

    /// Chain `rows[k]` moves to the k-th row of `xs`: f (and ∇f) are evaluated there, and its z is
    /// drawn afresh from p(z | x) at its next step (exact for any target, see the module doc).
    fn set_states(&mut self, rows: &[usize], xs: &[u32]) -> Option<Result<(), EvalError>> {
        let d = self.d;
        let mut f = vec![0.0; rows.len()];
        let mut g = vec![0.0; if self.g.is_empty() { 0 } else { xs.len() }];
        let grad = (!self.g.is_empty()).then_some(&mut g[..]);
        if let Err(e) = self.target.evaluate(xs, Batch::Full, &mut f, grad) {
            return Some(Err(e));
        }
        for (k, &j) in rows.iter().enumerate() {
            self.x[j * d..(j + 1) * d].copy_from_slice(&xs[k * d..(k + 1) * d]);
            self.f[j] = f[k];
            if !g.is_empty() {
                self.g[j * d..(j + 1) * d].copy_from_slice(&g[k * d..(k + 1) * d]);
            }
            self.relift[j] = true;
        }
        Some(Ok(()))
    }
}

// ---- registry row (this module's name, parameters, defaults and tests) ----

/// The registry row of `rmala`.
pub const RMALA: SamplerSpec = SamplerSpec {
    stem: "rmala",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(Rmala::build),
    doc: "relaxed MALA (continuous-relaxation baseline): MALA on z ∈ ℝ^d with the sigmoid-surrogate \
          gradient, MH against N(z; 0, I)·exp f(1[z > 0]); reports x = 1[z > 0] (exact x-law); binary/spin; \
          `--step-size` is ε (variance 2ε), adapted toward acceptance 0.57",
    paper: "Grathwohl et al. 2021, §5 (GWG release `RelaxedMALA`)",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: true,
    not_ergodic_on: ergodic_everywhere,
    target_accept: RMALA_TARGET_ACCEPT,
    adapt: Some(Rmala::adapt),
    tests: TestSpec { names: &["rmala"], step_size: Some(0.2), ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::lift::Relaxation;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};
    use dlp_core::{DomainKind, Space, TargetExt, chain_rngs};
    use dlp_models::{IsingModel, Rbm};

    fn ising(domain: DomainKind) -> IsingModel {
        let j = [0.0, 0.5, -0.3, 0.2, 0.5, 0.0, 0.4, 0.0, -0.3, 0.4, 0.0, -0.6, 0.2, 0.0, -0.6, 0.0];
        IsingModel::from_dense(4, &j, vec![0.1, -0.2, 0.3, 0.05], domain).unwrap()
    }

    fn rbm(domain: DomainKind) -> Rbm {
        let w = vec![0.5, -1.0, 0.3, 0.8, -0.6, 0.2, 0.7, -0.1];
        Rbm::new(domain, 4, 2, w, vec![0.1, -0.3, 0.2, 0.0], vec![0.0, -0.5]).unwrap()
    }

    fn zs(seed: u64, n: usize) -> Vec<f64> {
        let mut rng = dlp_core::chain_rng(seed, 0);
        (0..n).map(|_| 1.5 * rng.sample::<f64, _>(rand_distr::StandardNormal)).collect()
    }

    /// The drift on an Ising or RBM view equals −z + (v₁ − v₀) σ'(z) ∇ℓ̃(Γ̃(z)) with ℓ̃ from
    /// `dlp_core::lift::Relaxation` (the extension GF-KSD and `gf-svgd-relaxed` use, dense J).
    #[test]
    fn relaxed_drift_is_the_lift_relaxations_chain_rule() {
        let models: Vec<Box<dyn Target>> = vec![
            Box::new(ising(DomainKind::Spin)),
            Box::new(ising(DomainKind::Binary)),
            Box::new(rbm(DomainKind::Spin)),
            Box::new(rbm(DomainKind::Binary)),
        ];
        for (m, t) in models.iter().enumerate() {
            let rel = Relaxation::from_capabilities(&t.capabilities()).unwrap();
            let drift = Drift::of(t.as_ref());
            assert!(!drift.needs_target_gradient());
            let (v0, v1) = rel.values();
            for k in 0..5 {
                let z = zs(10 * m as u64 + k, 4);
                let (mut soft, mut s) = (vec![0.0; 4], vec![0.0; 4]);
                drift.drift(&z, &[], &mut soft, &mut s);
                let v: Vec<f64> = z.iter().map(|&t| v0 + (v1 - v0) * sigmoid(t)).collect();
                let mut g = vec![0.0; 4];
                rel.log_density_grad(&v, &mut g);
                for i in 0..4 {
                    let sg = sigmoid(z[i]);
                    let want = -z[i] + (v1 - v0) * sg * (1.0 - sg) * g[i];
                    assert!((s[i] - want).abs() < 1e-13, "model {m}: {} vs {want}", s[i]);
                }
            }
        }
    }

    /// Without a view the drift uses ∂f/∂x at Γ(z) (bit units), here a quadratic's gradient.
    #[test]
    fn straight_through_drift_uses_the_target_gradient() {
        let q = Quadratic::spec_tiny();
        let drift = Drift::of(&q);
        assert!(drift.needs_target_gradient());
        let z = [0.7, -1.2, 0.1];
        let x: Vec<u32> = z.iter().map(|&v| threshold(v)).collect();
        assert_eq!(x, [1, 0, 1]);
        let mut g = vec![0.0; 3];
        q.log_density_grad(&x, &mut g).unwrap();
        let (mut soft, mut s) = (vec![0.0; 3], vec![0.0; 3]);
        drift.drift(&z, &g, &mut soft, &mut s);
        for i in 0..3 {
            let sg = sigmoid(z[i]);
            assert!((s[i] - (-z[i] + sg * (1.0 - sg) * g[i])).abs() < 1e-15);
        }
    }

    /// The ratio is antisymmetric (the reverse move's ratio is its negative) and equals the
    /// log of p(z')q(z|z') / (p(z)q(z'|z)) written with full normal densities.
    #[test]
    fn log_ratio_is_antisymmetric_and_the_full_density_ratio() {
        let (z, zn) = (zs(1, 4), zs(2, 4));
        let (s, sn) = (zs(3, 4), zs(4, 4));
        let eps = 0.3;
        let a = log_accept_ratio(eps, (&z, 0.4, &s), (&zn, -0.2, &sn));
        let b = log_accept_ratio(eps, (&zn, -0.2, &sn), (&z, 0.4, &s));
        assert!((a + b).abs() < 1e-12, "{a} {b}");
        let ln_n =
            |u: f64, m: f64, var: f64| -(u - m).powi(2) / (2.0 * var) - 0.5 * (2.0 * std::f64::consts::PI * var).ln();
        let lp = |z: &[f64], f: f64| f + z.iter().map(|&v| ln_n(v, 0.0, 1.0)).sum::<f64>();
        let lq = |to: &[f64], from: &[f64], s: &[f64]| -> f64 {
            to.iter().zip(from).zip(s).map(|((&t, &f), &g)| ln_n(t, f + eps * g, 2.0 * eps)).sum()
        };
        let want = lp(&zn, -0.2) + lq(&z, &zn, &sn) - lp(&z, 0.4) - lq(&zn, &z, &s);
        assert!((a - want).abs() < 1e-12, "{a} vs {want}");
    }

    /// After many steps every chain's reported x is Γ(z), f and the drift are those of its
    /// state, and the records count what happened.
    #[test]
    fn cached_state_stays_consistent() {
        for t in [Box::new(ising(DomainKind::Spin)) as Box<dyn Target>, Box::new(Quadratic::spec_tiny())] {
            let d = t.space().d;
            let x0 = vec![0u32; 3 * d];
            let mut ch = Rmala { step: 0.4 }.chains(t.as_ref(), &x0).unwrap();
            let mut rngs = chain_rngs(7, 0, 3);
            let mut info = [StepInfo::default(); 3];
            let (mut accepted, mut moved) = (0, 0);
            for _ in 0..300 {
                ch.step(&mut rngs, &mut info);
                for i in &info {
                    assert!(i.n_changed == if i.accepted { i.n_proposed } else { 0 });
                    assert!((0.0..=1.0).contains(&i.accept_prob));
                    assert_eq!(i.density_evals, u32::from(i.n_proposed > 0));
                    accepted += u32::from(i.accepted);
                    moved += i.n_changed;
                }
            }
            assert!(accepted > 300 && moved > 100, "{accepted} accepted, {moved} flips");
            for j in 0..3 {
                let (z, x) = (&ch.z[j * d..(j + 1) * d], &ch.x[j * d..(j + 1) * d]);
                assert!(z.iter().zip(x).all(|(&v, &c)| threshold(v) == c), "{z:?} {x:?}");
                assert_eq!(ch.f[j], t.log_density(x).unwrap());
                let mut g = vec![0.0; d];
                t.log_density_grad(x, &mut g).unwrap();
                let (mut soft, mut s) = (vec![0.0; d], vec![0.0; d]);
                ch.drift.drift(z, &g, &mut soft, &mut s);
                assert_eq!(&ch.s[j * d..(j + 1) * d], &s[..]);
            }
        }
    }

    /// A moved chain keeps its new x, its f is re-evaluated and its z is drawn in the orthant of
    /// x at the next step (before the proposal).
    #[test]
    fn set_states_moves_x_and_relifts_z() {
        let t = ising(DomainKind::Binary);
        let mut ch = Rmala { step: 0.4 }.chains(&t, &[0; 8]).unwrap();
        let mut rngs = chain_rngs(3, 0, 2);
        let mut info = [StepInfo::default(); 2];
        ch.step(&mut rngs, &mut info);
        let y = [1, 1, 0, 1];
        ch.set_states(&[1], &y).unwrap().unwrap();
        assert_eq!(&ch.positions()[4..], &y);
        assert_eq!(ch.log_densities().unwrap()[1], t.log_density(&y).unwrap());
        assert!(ch.relift[1] && !ch.relift[0]);
        ch.relift(1, &mut rngs[1]);
        assert!(ch.z[4..].iter().zip(&y).all(|(&v, &c)| threshold(v) == c));
    }

    #[test]
    fn bad_parameters_and_models_are_named() {
        for e in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = Rmala::new(e).unwrap_err().to_string();
            assert!(err.contains("--step-size") && !err.contains('\n'), "{err}");
        }
        assert!(Rmala::build(&SamplerName::parse("rmala"), &SamplerParams::default()).is_err());
        let err = Rmala { step: 0.2 }.start(&PairwiseCategorical::spec_small(), &[0, 1]).err().unwrap();
        assert!(matches!(err, SamplerError::Unsupported { .. }) && err.to_string().contains("3 values"), "{err}");
        assert!(
            Rmala { step: 0.2 }.start(&Quadratic::new(Space::binary(2), vec![0.0; 4], vec![0.0; 2]), &[0, 2]).is_err()
        );
    }

    /// `dlp sample`'s warm-up adapts ε toward the row's 0.57 on a 5 × 5 periodic Ising model
    /// (the fig3 lattice), independently of the thread count; a fixed-ε run then accepts
    /// 0.47–0.67 (32 chains × 1,000 steps: the mean acceptance is pinned to about ±0.02, so
    /// the band is not at the edge of the noise; deterministic given the seeds).
    #[test]
    fn step_size_adapts_toward_the_release_target() {
        let t = IsingModel::paper_lattice(5, 0.1, 0.2);
        let x0 = vec![0u32; 32 * 25];
        let opts = crate::adapt::AdaptOptions {
            warmup: 1000,
            target_accept: crate::adapt::default_target_accept("rmala"),
            ..Default::default()
        };
        assert_eq!(opts.target_accept, 0.57);
        let run = |threads| {
            let r = RunOptions { seed: 3, threads, chains_per_task: 0 };
            crate::adapt::adapt_step_size("rmala", &SamplerParams::default(), &t, &x0, &opts, &r).unwrap()
        };
        let a = run(1);
        assert_eq!(a, run(2));
        let fixed = Rmala::new(a.step_size.unwrap()).unwrap();
        let mut ch = fixed.chains(&t, &a.positions).unwrap();
        let mut rngs = chain_rngs(5, 0, 32);
        let mut info = vec![StepInfo::default(); 32];
        let mut acc = 0.0;
        for _ in 0..1000 {
            ch.step(&mut rngs, &mut info);
            acc += info.iter().map(|i| i.accept_prob).sum::<f64>();
        }
        let acc = acc / 32_000.0;
        assert!((0.47..=0.67).contains(&acc), "ε = {:?}: acceptance {acc}", a.step_size);
    }
}
