//! Cyclical DLP with automatic scheduling (`acs-dmala`, `acs-dula`): Pynadath, Bhattacharya,
//! Hariharan & Zhang, "Gradient-based Discrete Sampling with Automatic Cyclical Scheduling",
//! NeurIPS 2024 (arXiv 2402.17699), and the official code `patrickpynadath1/
//! automatic_cyclical_sampling`, `samplers/acs_samplers.py` (re-stated here, not copied).
//!
//! * **Kernel of a step.** Step t runs phase k = t mod s of a cycle of s steps. Phase k is one
//!   DLP step (DMALA or DULA, [`crate::dlp`]) whose proposal weights the gradient by a
//!   balancing parameter β_k instead of ½ and uses step size α_k:
//!   q_i(v|x) ∝ exp(β_k g_i (v − x_i) − (v − x_i)²/(2α_k)) (`DlpProposal::with_balance`).
//!   Each phase of `acs-dmala` is Metropolis-adjusted, so every phase leaves π invariant and
//!   so does the cycle; the exact suite checks each phase's matrix (`n_phases` = s).
//! * **Schedule** (code: `calc_stepsizes`, `calc_balancing_constants`, `min_lr_cutoff`):
//!   α_k = α_max · (cos(πk/s) + 1)/2 and β_k = ½ + (β_max − ½)(cos(πk/s) + 1)/2, so a cycle
//!   starts with a large exploratory step (α_max, β_max) and cools down to local steps; a
//!   phase whose α_k falls below α_min runs at (α_min, ½) instead.
//! * **Automatic tuning** ([`adapt_acs`]): the paper tunes α_min (with β = ½)
//!   and α_max (with β = β_max) during burn-in so that each reaches a target acceptance
//!   rate (the code's `a_s_cut`, 0.5 in its scripts). dlp tunes both by the same dual
//!   averaging it uses for DMALA's α (the code uses its own multiplicative search), each
//!   over half of the warm-up, then freezes them. The code's greedy search of the β
//!   schedule (`estimate_opt_bal`) is not reproduced: β follows the cosine schedule above.
//!
//! Defaults (from the official code, not the paper's text): β_max = 0.95 (`tuning_alg`'s
//! `init_big_bal`), α_min = 0.2 with MH and 0.1 without (`min_lr_cutoff`), capped at α_max.
//! The cycle length s is the name's number (`acs-dmala-20`); without one it is 40, the
//! official RBM runs' ⌈10,000 iterations / 250 cycles⌉ (the code derives it from both).
//! Binary, spin, categorical and ordinal spaces, as DLP.

use crate::dlp::{DlpChains, DlpProposal, DlpSampler};
use crate::dual_averaging::{AdaptOptions, Adapted, MALA_TARGET_ACCEPT, dual_average};
use crate::fast::ising::IsingDlpChains;
use crate::spec::Build;
use crate::spec::{
    NO_TESTS, STEP_SIZE, STEP_SIZE_MIN, SamplerName, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere,
};
use dlp_core::{
    Batch, ChainRng, Chains, EvalError, ExactKernel, RunOptions, Sampler, SamplerError, StepInfo, Target, Transition,
};

/// Default cycle length s: the official RBM runs' ⌈10,000 steps / 250 cycles⌉.
pub const DEFAULT_CYCLE: usize = 40;
/// Largest α_max the warm-up tuning chooses (the official code's `init_big_step`).
pub const ALPHA_MAX_CAP: f64 = 5.0;
/// Default β_max (the official code's `init_big_bal`).
pub const DEFAULT_BETA_MAX: f64 = 0.95;

/// Default α_min: the official code's `min_lr_cutoff` (0.2 with MH, 0.1 without), capped at
/// α_max so that a small α_max gives a constant schedule rather than an increasing one.
pub fn default_alpha_min(mh: bool, alpha_max: f64) -> f64 {
    let cutoff: f64 = if mh { 0.2 } else { 0.1 };
    cutoff.min(alpha_max)
}

/// The cyclical schedule: s phases of (α_k, β_k).
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// (α_k, β_k) for k = 0..s.
    pub phases: Vec<(f64, f64)>,
}

impl Schedule {
    /// The cosine schedule of s phases from (α_max, β_max) down to α_min (β = ½ there).
    pub fn cosine(s: usize, alpha_max: f64, alpha_min: f64, beta_max: f64) -> Result<Self, String> {
        if s == 0 {
            return Err("cycle length s must be at least 1".into());
        }
        if !(alpha_max.is_finite() && alpha_max > 0.0) {
            return Err(format!("α_max (--step-size) must be finite and > 0, got {alpha_max}"));
        }
        if !(alpha_min.is_finite() && alpha_min > 0.0 && alpha_min <= alpha_max) {
            return Err(format!("α_min (--step-size-min) must be in (0, α_max = {alpha_max}], got {alpha_min}"));
        }
        if !(0.5..=1.0).contains(&beta_max) {
            return Err(format!("β_max must be in [0.5, 1], got {beta_max}"));
        }
        let phases = (0..s)
            .map(|k| {
                let c = ((std::f64::consts::PI * k as f64 / s as f64).cos() + 1.0) / 2.0;
                let alpha = alpha_max * c;
                if alpha < alpha_min { (alpha_min, 0.5) } else { (alpha, 0.5 + (beta_max - 0.5) * c) }
            })
            .collect();
        Ok(Schedule { phases })
    }

    /// Number of phases s.
    pub fn len(&self) -> usize {
        self.phases.len()
    }

    /// Never true: a schedule has at least one phase.
    pub fn is_empty(&self) -> bool {
        self.phases.is_empty()
    }
}

/// `acs-dmala` / `acs-dula`: DLP steps following a [`Schedule`].
#[derive(Clone, Debug)]
pub struct Acs {
    name: String,
    mh: bool,
    proposals: Vec<DlpProposal>,
    schedule: Schedule,
}

impl Acs {
    /// Cyclical DMALA (`mh`) or DULA over `schedule`.
    pub fn new(name: &str, mh: bool, schedule: Schedule) -> Result<Self, SamplerError> {
        let proposals = schedule
            .phases
            .iter()
            .map(|&(a, b)| DlpProposal::new(a, None).and_then(|p| p.with_balance(b)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| bad(name, m))?;
        Ok(Acs { name: name.to_string(), mh, proposals, schedule })
    }

    /// The schedule it runs.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// Registry constructor: `acs-dmala[-<s>]`, `acs-dula[-<s>]` with `--step-size` = α_max and
    /// optional `--step-size-min` = α_min.
    pub fn build(name: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        let mh = match name.stem.as_str() {
            "acs-dmala" => true,
            "acs-dula" => false,
            s => return Err(SamplerError::UnknownSampler(s.into(), "acs-dmala, acs-dula".into())),
        };
        let stem = name.stem.as_str();
        let s = name.numbers.first().copied().unwrap_or(DEFAULT_CYCLE);
        let alpha_max = params
            .step_size
            .ok_or_else(|| bad(stem, "α_max is required (--step-size, {0,1} units, or auto)".into()))?;
        let alpha_min = params.step_size_min.unwrap_or_else(|| default_alpha_min(mh, alpha_max));
        let schedule = Schedule::cosine(s, alpha_max, alpha_min, DEFAULT_BETA_MAX).map_err(|m| bad(stem, m))?;
        let full = if name.numbers.is_empty() { stem.to_string() } else { format!("{stem}-{s}") };
        Ok(Box::new(Acs::new(&full, mh, schedule)?))
    }

    fn phase_sampler(&self, phase: usize) -> DlpSampler {
        DlpSampler::new(&self.name, self.mh, self.proposals[phase % self.proposals.len()].clone())
    }
}

fn bad(sampler: &str, message: String) -> SamplerError {
    SamplerError::BadParameter { sampler: sampler.to_string(), message }
}

impl Sampler for Acs {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        // Uniform lattice Ising models: the lattice DLP kernel, its class tables re-set per
        // phase (the same kernels, `fast::ising`); everything else: the generic DLP chains.
        let inner = match crate::fast::ising::qualifying_model(target) {
            Some(m) => {
                let p = &self.proposals[0];
                let mut c = IsingDlpChains::from_view(target.space(), &m, p.half_inv_step(0), self.mh, x0)?;
                c.set_proposal(p.half_inv_step(0), p.balance());
                Inner::Lattice(Box::new(c))
            }
            None => Inner::Generic(Box::new(self.phase_sampler(0).start_chains(target, x0)?)),
        };
        Ok(Box::new(AcsChains { inner, proposals: self.proposals.clone(), t: 0 }))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for Acs {
    fn n_phases(&self, _target: &dyn Target) -> usize {
        self.proposals.len()
    }

    /// Phase k's DLP kernel with (α_k, β_k): the very rows `DlpSampler` computes.
    fn transition_row(&self, target: &dyn Target, x: &[u32], phase: usize) -> Result<Vec<Transition>, EvalError> {
        self.phase_sampler(phase).transition_row(target, x, 0)
    }
}

/// The DLP chains a cyclical run steps.
enum Inner<'t> {
    Generic(Box<DlpChains<'t>>),
    Lattice(Box<IsingDlpChains>),
}

impl Inner<'_> {
    fn chains(&self) -> &dyn Chains {
        match self {
            Inner::Generic(c) => c.as_ref(),
            Inner::Lattice(c) => c.as_ref(),
        }
    }

    fn set_proposal(&mut self, p: &DlpProposal) {
        match self {
            Inner::Generic(c) => c.set_proposal(p.clone()),
            Inner::Lattice(c) => c.set_proposal(p.half_inv_step(0), p.balance()),
        }
    }
}

/// Running cyclical chains: the DLP chains and the step count t (phase t mod s).
struct AcsChains<'t> {
    inner: Inner<'t>,
    proposals: Vec<DlpProposal>,
    t: usize,
}

impl Chains for AcsChains<'_> {
    fn n_chains(&self) -> usize {
        self.inner.chains().n_chains()
    }

    fn positions(&self) -> &[u32] {
        self.inner.chains().positions()
    }

    fn log_densities(&self) -> Option<&[f64]> {
        self.inner.chains().log_densities()
    }

    /// Switches the proposal to this step's phase (recomputing the cached logits, or the
    /// lattice's class tables, when (α, β) changes; the clipped tail of a cycle repeats one
    /// phase), then one DLP step. The uniforms drawn are DLP's.
    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], batch: Batch<'_>) -> Result<(), EvalError> {
        let s = self.proposals.len();
        let (k, prev) = (self.t % s, (self.t + s - 1) % s);
        if self.t > 0 && self.proposals[k] != self.proposals[prev] {
            self.inner.set_proposal(&self.proposals[k]);
        }
        self.t += 1;
        match &mut self.inner {
            Inner::Generic(c) => c.try_step(rngs, info, batch),
            Inner::Lattice(c) => c.try_step(rngs, info, batch),
        }
    }
}

/// Automatic tuning of cyclical DMALA ([`crate::acs`]): the first half of the warm-up's
/// windows adapts α_min for plain DMALA (β = ½), the second half α_max for DMALA with the
/// gradient weighted by β_max, both toward `opts.target_accept`. Both are then capped at 5
/// and α_max is raised to α_min if smaller. 5 is where the official code's α_max search
/// starts (`init_big_step` in `rbm_sample.py`), which it only ever shrinks: on weakly coupled
/// models the β_max proposal keeps its acceptance above target at any α, and dual averaging
/// would grow α without bound. With α_max = α_min the cycle is plain DMALA at α_min.
pub fn adapt_acs(
    _name: &SamplerName,
    params: &SamplerParams,
    target: &dyn Target,
    x0: &[u32],
    opts: &AdaptOptions,
    run: &RunOptions,
) -> Result<Adapted, SamplerError> {
    let windows = (opts.warmup / opts.window).max(2);
    let half = windows / 2;
    let phase = |beta: f64| {
        move |alpha: f64| -> Result<Box<dyn dlp_core::Sampler>, SamplerError> {
            let p = DlpProposal::new(alpha, params.preconditioner.clone())
                .and_then(|p| p.with_balance(beta))
                .map_err(|message| SamplerError::BadParameter { sampler: "acs-dmala".into(), message })?;
            Ok(Box::new(DlpSampler::new("acs-dmala", true, p)))
        }
    };
    let (alpha_min, x, _) = dual_average(&phase(0.5), target, x0, 0..half, opts, run)?;
    let (alpha_max, positions, last_accept) =
        dual_average(&phase(DEFAULT_BETA_MAX), target, &x, half..windows, opts, run)?;
    let alpha_min = alpha_min.min(ALPHA_MAX_CAP);
    let alpha_max = alpha_max.min(ALPHA_MAX_CAP).max(alpha_min);
    Ok(Adapted {
        step_size: Some(alpha_max),
        step_size_min: Some(alpha_min),
        ladder: None,
        positions,
        last_accept,
        windows,
    })
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `acs-dmala` (`acs-dmala-<…>`).
pub const ACS_DMALA: SamplerSpec = SamplerSpec {
    stem: "acs-dmala",
    counts: &[0, 1],
    numbers: &["s"],
    params: &[STEP_SIZE, STEP_SIZE_MIN],
    build: Build::Plain(Acs::build),
    doc: "cyclical DMALA: cycles of s steps (default 40) from (α_max = --step-size, β_max = 0.95) \
          down to α_min, gradient weight β (balancing parameter) on a cosine schedule; \
          `--step-size auto` tunes α_min and α_max in warm-up",
    paper: "Pynadath et al. 2024 (NeurIPS; official `acs_samplers.py`)",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    // The official ACS scripts' `a_s_cut`, used for both α_min and α_max.
    target_accept: 0.5,
    adapt: Some(adapt_acs),
    tests: TestSpec { names: &["acs-dmala-4"], step_size: Some(2.0), ..NO_TESTS },
    defaults: crate::spec::Defaults { ising: Some(3.0), rbm: Some(0.5), ..crate::spec::NO_DEFAULTS },
};

/// The registry row of `acs-dula` (`acs-dula-<…>`).
pub const ACS_DULA: SamplerSpec = SamplerSpec {
    stem: "acs-dula",
    counts: &[0, 1],
    numbers: &["s"],
    params: &[STEP_SIZE, STEP_SIZE_MIN],
    build: Build::Plain(Acs::build),
    doc: "cyclical DULA (the schedule of `acs-dmala`, no MH test)",
    paper: "Pynadath et al. 2024 (NeurIPS; official `acs_samplers.py`)",
    exact: false,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["acs-dula-3"], step_size: Some(2.0), ..NO_TESTS },
    defaults: crate::spec::Defaults { ising: Some(3.0), rbm: Some(0.5), ..crate::spec::NO_DEFAULTS },
};

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::testing::Quadratic;

    #[test]
    fn cosine_schedule_matches_the_formulas() {
        let s = Schedule::cosine(4, 2.0, 0.2, 0.95).unwrap();
        let c = |k: f64| ((std::f64::consts::PI * k / 4.0).cos() + 1.0) / 2.0;
        for (k, &(a, b)) in s.phases.iter().enumerate() {
            assert!((a - 2.0 * c(k as f64)).abs() < 1e-15);
            assert!((b - (0.5 + 0.45 * c(k as f64))).abs() < 1e-15);
        }
        assert_eq!(s.phases[0], (2.0, 0.95));
        // Clipping: α_k below α_min runs at (α_min, ½).
        let s = Schedule::cosine(10, 1.0, 0.5, 0.95).unwrap();
        assert!(s.phases.iter().all(|&(a, _)| a >= 0.5));
        assert_eq!(*s.phases.last().unwrap(), (0.5, 0.5));
        assert!(Schedule::cosine(0, 1.0, 0.5, 0.9).is_err());
        assert!(Schedule::cosine(3, 1.0, 2.0, 0.9).is_err());
        assert!(Schedule::cosine(3, 1.0, 0.5, 1.5).is_err());
    }

    #[test]
    fn chains_run_phase_t_mod_s() {
        // A chain of the cyclical sampler equals, step by step, chains of the phase samplers
        // driven from the same streams: the schedule's bookkeeping (which phase when, and
        // the logits recomputed at a phase change) is what the exact suite's per-phase
        // matrices assume.
        let t = Quadratic::spec_tiny();
        let acs = Acs::new("acs-dmala", true, Schedule::cosine(3, 1.5, 0.2, 0.9).unwrap()).unwrap();
        let x0 = vec![0u32, 1, 0, 1, 1, 0];
        let mut a = acs.start(&t, &x0).unwrap();
        let mut rngs_a: Vec<ChainRng> = (0..2).map(|j| dlp_core::chain_rng(7, j)).collect();
        let mut rngs_b = rngs_a.clone();
        let mut x = x0.clone();
        let mut info = vec![StepInfo::stayed(); 2];
        for step in 0..9 {
            a.step(&mut rngs_a, &mut info);
            let mut b = acs.phase_sampler(step % 3).start_chains(&t, &x).unwrap();
            b.step(&mut rngs_b, &mut info);
            x = b.positions().to_vec();
            assert_eq!(a.positions(), &x[..], "step {step}");
        }
    }
}
