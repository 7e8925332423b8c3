//! `gf-svgd`: gradient-free Stein variational gradient descent on a discrete target (Han, Ding,
//! Liu, Liu, AISTATS 2020, paper 004 §§2–3, Alg. 1; transforms spec §6).
//!
//! The discrete target p_* is lifted to the piecewise density p_c(x) ∝ p₀(x) p_*(Γ(x)) on ℝ^d by
//! the even partition of a product base p₀ ([`dlp_core::lift`], shared with GF-KSD). n particles
//! move together along
//!
//! φ(x_i) = Σ_j w̄_j [k(x_j, x_i) ∇log ρ(x_j) + ∇_{x_j} k(x_j, x_i)],
//!
//! where ρ is a differentiable surrogate (ρ = p₀, or the relaxed model for ±1 targets), w̄ the
//! self-normalised importance weights ρ/p_c = exp(L(x_j) − ℓ(Γ(x_j))) (or the rank weights of
//! 004 App. B), and k(x, y) = exp(−‖x − y‖²/h) the RBF kernel with a median bandwidth. (Alg. 1
//! writes ∇ρ; it is ∇log ρ.) The discrete output is z_i = Γ(x_i). Nothing is random after the
//! start: the particles follow a deterministic flow.
//!
//! In the registry (`dlp sample --sampler gf-svgd`) **chains are particles**: `--chains N` is the
//! particle count n, the N particles interact through φ at every step (one joint task,
//! [`Coupling::Joint`]), and the output rows are the N particles mapped back by Γ. A start row
//! c is lifted to an exact draw from p₀ restricted to its bin, F⁻¹((c + u)/K), with u drawn from
//! the chain's own stream on the first step (otherwise equal start rows would coincide and never
//! separate: the kernel's repulsion between identical points is 0).
//!
//! The O(n²d) direction is hand-written because it is the method itself: squared distances of
//! the upper triangle (rows in parallel), the median by selection, then for each particle
//! φ_i = Σ_j k_ij A_j + (2/h) c_i x_i with A_j = w̄_j (s_j − (2/h) x_j) and c_i = Σ_j w̄_j k_ij
//! (rows in parallel, each summed in a fixed order, so the result does not depend on the thread
//! count; one allocation-free inner loop over d that the compiler vectorises).

use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::spec::Build;
use crate::spec::{
    NO_DEFAULTS, NO_TESTS, PLAIN, Param, ParamSpec, SamplerName, SamplerParams, SamplerSpec, TestSpec,
    ergodic_everywhere,
};
use dlp_core::lift::{Base, Partition, Relaxation, Surrogate, surrogate_scores_into};
use dlp_core::optim::Adam;
use dlp_core::{Batch, ChainRng, Chains, Coupling, EvalError, Sampler, SamplerError, StepInfo, Target};
use rand::RngExt;
use rayon::prelude::*;

/// How the RBF width follows the particles (spec §6 item 6), both written as k = exp(−r²/h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BandwidthConvention {
    /// 004 App. E: h = med²/(2 log(n + 1)), med² the median of ‖x_i − x_j‖² over pairs i < j
    /// (mean of the two middle values for an even count); h = 1 if med² = 0.
    Han2020,
    /// The original SVGD code (Liu & Wang 2016): exp(−r²/(2h̃²)) with h̃² = ½ median / log(n + 1)
    /// over the full n × n matrix including its zero diagonal, i.e. h = median/log(n + 1).
    SvgdRef,
}

/// Which weights enter the direction (spec §6 item 5 and "Rank weights").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weighting {
    /// w̄_j ∝ ρ(x_j)/p_c(x_j), normalised in log space (004 Alg. 1).
    Importance,
    /// γ_j = 1/H(μ_j), H(t) = (1/n)#{l : μ_l ≥ t}, normalised (004 App. B, used for the BNN):
    /// the largest ratio gets n, the smallest 1, ties share the larger count.
    Rank,
}

/// The particle update (spec §6 item 8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Optimizer {
    /// x ← x + ε φ (ascent).
    Plain {
        /// ε.
        step: f64,
    },
    /// Adam (Kingma & Ba 2015, bias-corrected, PyTorch's form) fed the gradient −φ.
    Adam {
        /// Learning rate.
        lr: f64,
        /// β₁.
        beta1: f64,
        /// β₂.
        beta2: f64,
        /// ε of the denominator.
        eps: f64,
    },
}

impl Optimizer {
    /// Adam with (0.9, 0.999, 1e−8) and learning rate `lr`.
    pub fn adam(lr: f64) -> Optimizer {
        Optimizer::Adam { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8 }
    }

    /// The paper's preset, 004 App. E: Adam with learning rate 1e−4 "for all experiments". Kept
    /// by name only: at 1e−4 particles move ≤ ~0.05 per coordinate in 500 iterations (spec §6
    /// item 8), so it is not the default.
    pub fn paper() -> Optimizer {
        Optimizer::adam(1e-4)
    }

    /// The update with its state for `n` coordinates (Adam's moments at zero): what
    /// [`Update::ascend`] moves. Shared by the particles of [`GfSvgd`] and the binarised-network
    /// ensembles of `dlp_papers::binnet`.
    pub fn start(&self, n: usize) -> Update {
        match *self {
            Optimizer::Plain { step } => Update::Plain { step },
            Optimizer::Adam { lr, beta1, beta2, eps } => Update::Adam(Adam::with_constants(n, lr, beta1, beta2, eps)),
        }
    }

    /// Our default [spec §6 item 8, R]: plain ε = 0.5 for d ≤ 5, Adam with lr 0.1 otherwise;
    /// `step` replaces ε or lr when given.
    pub fn default_for(d: usize, step: Option<f64>) -> Optimizer {
        if d <= 5 { Optimizer::Plain { step: step.unwrap_or(0.5) } } else { Optimizer::adam(step.unwrap_or(0.1)) }
    }
}

/// An [`Optimizer`] with its state ([`Optimizer::start`]).
#[derive(Clone, Debug)]
pub enum Update {
    /// x ← x + ε φ.
    Plain {
        /// ε.
        step: f64,
    },
    /// Adam fed the gradient −φ ([`dlp_core::optim::Adam::ascend`]).
    Adam(Adam),
}

impl Update {
    /// One ascent step of `x` along `phi` (same length as the `n` it was started with).
    pub fn ascend(&mut self, x: &mut [f64], phi: &[f64]) {
        match self {
            Update::Plain { step } => {
                for (x, p) in x.iter_mut().zip(phi) {
                    *x += *step * p;
                }
            }
            Update::Adam(adam) => adam.ascend(x, phi),
        }
    }
}

/// Which surrogate ρ a run uses; the relaxed one is built from the target's Ising or RBM view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurrogateKind {
    /// ρ = p₀ (any domain).
    Base,
    /// ρ ∝ p₀ exp(ℓ̃(σ̃(x))) (binary/spin targets with an Ising or RBM capability).
    Relaxed,
}

/// A GF-SVGD configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct GfSvgdConfig {
    /// The base p₀ (N(0, 1) per coordinate by default).
    pub base: Base,
    /// The surrogate ρ.
    pub surrogate: SurrogateKind,
    /// Importance or rank weights.
    pub weighting: Weighting,
    /// The bandwidth convention.
    pub bandwidth: BandwidthConvention,
    /// The update; `None` = [`Optimizer::default_for`] the target's d.
    pub optimizer: Option<Optimizer>,
}

impl Default for GfSvgdConfig {
    fn default() -> Self {
        GfSvgdConfig {
            base: Base::Gaussian,
            surrogate: SurrogateKind::Base,
            weighting: Weighting::Importance,
            bandwidth: BandwidthConvention::Han2020,
            optimizer: None,
        }
    }
}

/// What one iteration saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepStats {
    /// The bandwidth h of exp(−r²/h).
    pub bandwidth: f64,
    /// Effective sample size of the weights, (Σw̄)²/Σw̄², in [1, n].
    pub ess: f64,
}

/// Fills `sq` (n × n) with ‖x_i − x_j‖² and returns the bandwidth h of exp(−r²/h) under `conv`.
pub fn bandwidth(x: &[f64], d: usize, conv: BandwidthConvention, sq: &mut Vec<f64>) -> f64 {
    let n = x.len().checked_div(d).unwrap_or(0);
    sq.clear();
    sq.resize(n * n, 0.0);
    // Upper triangle by rows in parallel, then mirrored: each pair's distance is computed once.
    sq.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, row)| {
        let xi = &x[i * d..(i + 1) * d];
        for (j, out) in row.iter_mut().enumerate().skip(i + 1) {
            let xj = &x[j * d..(j + 1) * d];
            *out = xi.iter().zip(xj).map(|(a, b)| (a - b) * (a - b)).sum();
        }
    });
    for i in 0..n {
        for j in 0..i {
            sq[i * n + j] = sq[j * n + i];
        }
    }
    let ln = ((n + 1) as f64).ln();
    let h = match conv {
        BandwidthConvention::Han2020 => {
            let mut upper: Vec<f64> =
                (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).map(|(i, j)| sq[i * n + j]).collect();
            dlp_core::stats::median_in_place(&mut upper).map(|m| m / (2.0 * ln))
        }
        BandwidthConvention::SvgdRef => dlp_core::stats::median_in_place(&mut sq.clone()).map(|m| m / ln),
    };
    match h {
        Some(h) if h > 0.0 => h,
        _ => 1.0,
    }
}

/// The direction φ (n × d) from squared distances `sq` (n × n, from [`bandwidth`]), bandwidth
/// h, particles `x`, surrogate scores `s` and normalised weights `w` (Σ w = 1). Spec §6 item 7.
pub fn direction(x: &[f64], d: usize, sq: &[f64], h: f64, s: &[f64], w: &[f64], phi: &mut [f64]) {
    let n = w.len();
    let c2 = 2.0 / h;
    // A_j = w̄_j (s_j − (2/h) x_j): one n × d buffer per iteration, none per pair.
    let a: Vec<f64> = x.iter().zip(s).enumerate().map(|(p, (xv, sv))| w[p / d] * (sv - c2 * xv)).collect();
    phi.par_chunks_mut(d).enumerate().for_each(|(i, row)| {
        row.fill(0.0);
        let mut c = 0.0;
        for j in 0..n {
            let k = (-sq[i * n + j] / h).exp();
            c += w[j] * k;
            for (o, av) in row.iter_mut().zip(&a[j * d..(j + 1) * d]) {
                *o += k * av;
            }
        }
        for (o, xv) in row.iter_mut().zip(&x[i * d..(i + 1) * d]) {
            *o += c2 * c * xv;
        }
    });
}

/// Normalised weights from log-ratios log(ρ/p_c) (length n) into `w`; returns the ESS.
pub fn weights(log_ratio: &[f64], weighting: Weighting, w: &mut [f64]) -> f64 {
    let n = log_ratio.len();
    match weighting {
        Weighting::Importance => {
            let mx = log_ratio.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for (o, l) in w.iter_mut().zip(log_ratio) {
                *o = (l - mx).exp();
            }
        }
        Weighting::Rank => {
            // #{l : μ_l ≥ μ_j} by one sort: descending order, ties counted to their last position.
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| log_ratio[b].total_cmp(&log_ratio[a]));
            let mut p = 0;
            while p < n {
                let mut q = p;
                while q + 1 < n && log_ratio[order[q + 1]] == log_ratio[order[p]] {
                    q += 1;
                }
                for &j in &order[p..=q] {
                    w[j] = n as f64 / (q + 1) as f64;
                }
                p = q + 1;
            }
        }
    }
    let sum: f64 = w.iter().sum();
    for o in w.iter_mut() {
        *o /= sum;
    }
    1.0 / w.iter().map(|v| v * v).sum::<f64>()
}

/// n × d particles with independent N(mean, 1) coordinates, particle j drawn from chain j's
/// stream of `seed` (the spec's inits: N(0, 1) for the toys, N(−2, 1) for the Ising grid).
pub fn normal_particles(n: usize, d: usize, mean: f64, seed: u64) -> Vec<f64> {
    let mut x = Vec::with_capacity(n * d);
    for j in 0..n {
        let mut rng = dlp_core::chain_rng(seed, j);
        x.extend((0..d).map(|_| mean + rng.sample::<f64, _>(rand_distr::StandardNormal)));
    }
    x
}

/// n GF-SVGD particles on a discrete target, with their optimiser state and scratch buffers.
pub struct GfSvgd {
    weighting: Weighting,
    conv: BandwidthConvention,
    update: Update,
    partition: Partition,
    surrogate: Surrogate,
    d: usize,
    x: Vec<f64>,
    z: Vec<u32>,
    s: Vec<f64>,
    big_l: Vec<f64>,
    ell: Vec<f64>,
    w: Vec<f64>,
    sq: Vec<f64>,
    phi: Vec<f64>,
}

impl GfSvgd {
    /// Particles at the continuous positions `x0` (n × d) for `target`; fails when the relaxed
    /// surrogate is asked of a target without an Ising/RBM view on two values.
    pub fn new(config: &GfSvgdConfig, target: &dyn Target, x0: Vec<f64>) -> Result<GfSvgd, SamplerError> {
        let space = target.space();
        let d = space.d;
        if d == 0 || !x0.len().is_multiple_of(d) || x0.is_empty() {
            return Err(SamplerError::BadInitialState(format!("{} values do not form rows of d = {d}", x0.len())));
        }
        let name = if config.surrogate == SurrogateKind::Relaxed { "gf-svgd-relaxed" } else { "gf-svgd" };
        let unsupported = |message: String| SamplerError::Unsupported { sampler: name.into(), message };
        if let Some(v) = x0.iter().find(|v| !v.is_finite()) {
            return Err(SamplerError::BadInitialState(format!("particle coordinate {v} is not finite")));
        }
        let surrogate = match config.surrogate {
            SurrogateKind::Base => Surrogate::Gaussian,
            SurrogateKind::Relaxed => match Relaxation::from_capabilities(&target.capabilities()) {
                Some(r) if space.k() == 2 && r.fits(d) => Surrogate::Relaxed(r),
                _ => return Err(unsupported("the relaxed surrogate needs a binary/spin Ising or RBM model".into())),
            },
        };
        let optimizer = config.optimizer.unwrap_or(Optimizer::default_for(d, None));
        match optimizer {
            Optimizer::Plain { step: e } | Optimizer::Adam { lr: e, .. } if !(e.is_finite() && e > 0.0) => {
                return Err(SamplerError::BadParameter {
                    sampler: name.into(),
                    message: format!("step size must be a finite number > 0, got {e}"),
                });
            }
            _ => {}
        }
        let n = x0.len() / d;
        let partition = Partition::new(config.base.clone(), space.k());
        let mut z = vec![0; n * d];
        partition.bins(&x0, &mut z);
        Ok(GfSvgd {
            weighting: config.weighting,
            conv: config.bandwidth,
            update: optimizer.start(n * d),
            partition,
            surrogate,
            d,
            x: x0,
            z,
            s: vec![0.0; n * d],
            big_l: vec![0.0; n],
            ell: vec![0.0; n],
            w: vec![0.0; n],
            sq: Vec::new(),
            phi: vec![0.0; n * d],
        })
    }

    /// Moves the particles to `x` (n × d, the same n) and recomputes Γ(x); the optimiser state
    /// is kept (it is zero before the first step).
    pub fn set_particles(&mut self, x: Vec<f64>) {
        assert_eq!(x.len(), self.x.len(), "set_particles keeps the particle count");
        self.x = x;
        self.partition.bins(&self.x, &mut self.z);
    }

    /// The continuous positions x (n × d).
    pub fn particles(&self) -> &[f64] {
        &self.x
    }

    /// The discrete states Γ(x) (n × d value indices).
    pub fn states(&self) -> &[u32] {
        &self.z
    }

    /// The direction φ of the last [`GfSvgd::compute_direction`] or step (n × d).
    pub fn last_direction(&self) -> &[f64] {
        &self.phi
    }

    /// The self-normalised weights of the last direction (length n).
    pub fn last_weights(&self) -> &[f64] {
        &self.w
    }

    /// φ at the current particles, without moving them.
    pub fn compute_direction(&mut self, target: &dyn Target) -> Result<StepStats, EvalError> {
        let d = self.d;
        target.evaluate(&self.z, Batch::Full, &mut self.ell, None)?;
        surrogate_scores_into(&self.partition.base, &self.surrogate, &self.x, d, &mut self.s, &mut self.big_l);
        // log(ρ/p_c) = L(x) − ℓ(Γ(x)): p₀ cancels (spec §6 item 5). self.big_l holds it after this.
        for (l, e) in self.big_l.iter_mut().zip(&self.ell) {
            *l -= e;
        }
        let ess = weights(&self.big_l, self.weighting, &mut self.w);
        let h = bandwidth(&self.x, d, self.conv, &mut self.sq);
        direction(&self.x, d, &self.sq, h, &self.s, &self.w, &mut self.phi);
        Ok(StepStats { bandwidth: h, ess })
    }

    /// One iteration: φ, the update, then Γ; returns the stats and the number of coordinates
    /// whose value changed, per particle (into `changed`, length n).
    pub fn step(&mut self, target: &dyn Target, changed: &mut [u32]) -> Result<StepStats, EvalError> {
        let stats = self.compute_direction(target)?;
        self.update.ascend(&mut self.x, &self.phi);
        for ((zrow, xrow), ch) in self.z.chunks_mut(self.d).zip(self.x.chunks(self.d)).zip(changed.iter_mut()) {
            *ch = 0;
            for (z, &x) in zrow.iter_mut().zip(xrow) {
                let b = self.partition.bin(x);
                *ch += (b != *z) as u32;
                *z = b;
            }
        }
        Ok(stats)
    }
}

/// The registry sampler: `gf-svgd` (ρ = p₀) and `gf-svgd-relaxed` (relaxed surrogate).
#[derive(Clone, Debug)]
pub struct GfSvgdSampler {
    config: GfSvgdConfig,
    step: Option<f64>,
}

impl GfSvgdSampler {
    /// A sampler with `config`; `step` overrides the default ε / learning rate.
    pub fn new(config: GfSvgdConfig, step: Option<f64>) -> GfSvgdSampler {
        GfSvgdSampler { config, step }
    }

    /// Registry constructor: `--step-size` (optional) is ε of the plain update (d ≤ 5) or Adam's
    /// learning rate (d > 5).
    pub fn build(name: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        if let Some(e) = params.step_size
            && !(e.is_finite() && e > 0.0)
        {
            return Err(SamplerError::BadParameter {
                sampler: name.stem.clone(),
                message: format!("step_size must be a finite number > 0, got {e}"),
            });
        }
        let surrogate = if name.stem == "gf-svgd-relaxed" { SurrogateKind::Relaxed } else { SurrogateKind::Base };
        Ok(Box::new(GfSvgdSampler::new(GfSvgdConfig { surrogate, ..GfSvgdConfig::default() }, params.step_size)))
    }
}

impl Sampler for GfSvgdSampler {
    fn name(&self) -> String {
        match self.config.surrogate {
            SurrogateKind::Base => "gf-svgd".into(),
            SurrogateKind::Relaxed => "gf-svgd-relaxed".into(),
        }
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let mut config = self.config.clone();
        config.optimizer = Some(config.optimizer.unwrap_or(Optimizer::default_for(space.d, self.step)));
        // The configuration is checked against the target now (a bad surrogate fails at start);
        // the particles are placed on the first step, from the chain streams.
        let n = x0.len() / space.d.max(1);
        let particles = GfSvgd::new(&config, target, vec![0.0; x0.len()])?;
        Ok(Box::new(GfSvgdChains { target, z0: x0.to_vec(), particles, placed: false, changed: vec![0; n] }))
    }

    fn coupling(&self) -> Coupling {
        Coupling::Joint
    }
}

struct GfSvgdChains<'t> {
    target: &'t dyn Target,
    z0: Vec<u32>,
    particles: GfSvgd,
    placed: bool,
    changed: Vec<u32>,
}

impl Chains for GfSvgdChains<'_> {
    fn n_chains(&self) -> usize {
        self.changed.len()
    }

    fn positions(&self) -> &[u32] {
        if self.placed { self.particles.states() } else { &self.z0 }
    }

    /// The first step lifts start row j with d uniforms from chain j's stream; no step draws
    /// anything after that.
    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], _batch: Batch<'_>) -> Result<(), EvalError> {
        if !self.placed {
            let d = self.particles.d;
            let mut x = vec![0.0; self.z0.len()];
            for (j, rng) in rngs.iter_mut().enumerate() {
                for (xp, &c) in x[j * d..(j + 1) * d].iter_mut().zip(&self.z0[j * d..(j + 1) * d]) {
                    let u = loop {
                        let u: f64 = rng.random();
                        if u > 0.0 {
                            break u;
                        }
                    };
                    *xp = self.particles.partition.lift_one(c, u);
                }
            }
            self.particles.set_particles(x);
            self.placed = true;
        }
        self.particles.step(self.target, &mut self.changed)?;
        let d = self.particles.d as u32;
        for (i, ch) in info.iter_mut().zip(&self.changed) {
            *i = StepInfo { n_proposed: d, n_changed: *ch, density_evals: 1, ..StepInfo::stayed() };
        }
        Ok(())
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `gf-svgd`.
pub const GF_SVGD: SamplerSpec = SamplerSpec {
    stem: "gf-svgd",
    counts: PLAIN,
    numbers: &[],
    params: &[ParamSpec { param: Param::StepSize, required: false }],
    build: Build::Plain(GfSvgdSampler::build),
    doc: "gradient-free SVGD on the even-partition lift of N(0, I), ρ = p₀, importance weights: \
          chains are interacting particles (`--chains` = particle count n); `--step-size` is ε \
          of plain steps (d ≤ 5, default 0.5) or Adam's rate (default 0.1)",
    paper: "Han et al. 2020 (AISTATS), Alg. 1",
    exact: false,
    needs_data: false,
    particles: true,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["gf-svgd"], step_size: Some(0.5), ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

/// The registry row of `gf-svgd-relaxed`.
pub const GF_SVGD_RELAXED: SamplerSpec = SamplerSpec {
    stem: "gf-svgd-relaxed",
    counts: PLAIN,
    numbers: &[],
    params: &[ParamSpec { param: Param::StepSize, required: false }],
    build: Build::Plain(GfSvgdSampler::build),
    doc: "`gf-svgd` with the relaxed surrogate ρ ∝ p₀ exp(ℓ̃(tanh(x/2))) of binary/spin Ising \
          and RBM models",
    paper: "Han et al. 2020 (AISTATS), eq. 21",
    exact: false,
    needs_data: false,
    particles: true,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["gf-svgd-relaxed"], step_size: Some(0.5), ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests;
