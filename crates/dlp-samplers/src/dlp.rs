//! The discrete Langevin proposal (DLP) and its two samplers, DULA and DMALA, with optional
//! diagonal preconditioning (paper 000, Zhang, Liu & Liu 2022).
//!
//! * Proposal (paper eq. 3, Algorithm 1; spec `reproduction.md` §1.3): from x with gradient
//!   g = ∇f(x), every coordinate moves independently,
//!   q_i(v|x) = softmax_{v∈X_i}[ ½ g_i (v − x_i) − (v − x_i)² / (2 α h_i) ],
//!   where h ≡ 1 without a preconditioner (paper §6 "With Preconditioners", App. H, spec §1.9).
//! * Binary and spin (Algorithm 2 of App. A, spec §1.4–1.5): one flip logit per coordinate,
//!   ℓ_i = ½ g_i (1 − 2x_i) − 1/(2 α h_i), flip with probability σ(ℓ_i). Spin models are
//!   sampled on the bit x = (s + 1)/2 with ∂f/∂x, so α is always in {0,1} units (pitfall P1);
//!   the ½ is the code's `temp = 2` and is applied once (pitfall P2).
//! * Categorical (App. B, spec §1.6): logits ½(G_{i,k} − G_{i,c_i}) − [k ≠ c_i]/(α h_i) over the
//!   one-hot gradient G.
//! * Ordinal (spec §1.7): §1.3 literally over the whole value list (`Space::coordinate`).
//! * DULA accepts every proposal; DMALA (Algorithm 1 with the MH step, spec §1.8) accepts
//!   with min(1, e^A), A = f(x') − f(x) + log q(x|x') − log q(x'|x), the reverse term using the
//!   logits at x' for the same move (pitfall P4).
//! * α = +∞ is allowed: it is the App. D ablation (no distance term, spec §1.11).
//!
//! The chains cache x, f(x), ∇f(x), the forward logits, the per-coordinate log-normalisers
//! log Z_i(x) and log Z_α(x) = Σ_i log Z_i(x), so that one step evaluates the model once, at
//! the proposal, for all chains of a task in one `log_density_grad_batch` call (chains whose
//! proposal is "stay" are not evaluated). Logs are stable (log-sigmoid form, pitfall P5).
//!
//! Not implemented: windows for infinite integer domains (App. C; every value of the finite
//! value list is a candidate), adaptive step sizes, minibatch DMALA (pitfall P10; see
//! [`crate::sgdlp`] for stochastic-gradient DULA).

use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::mh::{Caching, MhChains, Proposal, exact_row};
use crate::spec::Build;
use crate::spec::{
    NO_TESTS, PLAIN, PRECONDITIONER, STEP_SIZE, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere,
};
use dlp_core::TargetExt;
use dlp_core::{ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, Space, Target, Transition};
pub use proposal::{DlpProposal, MAX_EXACT_STATES, log_accept_ratio};

/// DULA or DMALA, with or without a diagonal preconditioner (`dula`, `dmala`, `pdula`,
/// `pdmala`). Variants are parameters of this one type.
#[derive(Clone, Debug)]
pub struct DlpSampler {
    name: String,
    proposal: DlpProposal,
    mh: bool,
}

impl DlpSampler {
    /// A DLP sampler: `mh` = DMALA (Metropolis–Hastings step) or DULA; `name` is what
    /// [`Sampler::name`] reports.
    pub fn new(name: &str, mh: bool, proposal: DlpProposal) -> Self {
        DlpSampler { name: name.to_string(), proposal, mh }
    }

    /// DULA with step size α (no preconditioner).
    pub fn dula(alpha: f64) -> Result<Self, SamplerError> {
        let p = DlpProposal::new(alpha, None).map_err(|m| bad("dula", m))?;
        Ok(Self::new("dula", false, p))
    }

    /// DMALA with step size α (no preconditioner).
    pub fn dmala(alpha: f64) -> Result<Self, SamplerError> {
        let p = DlpProposal::new(alpha, None).map_err(|m| bad("dmala", m))?;
        Ok(Self::new("dmala", true, p))
    }

    /// The proposal (α, h).
    pub fn proposal(&self) -> &DlpProposal {
        &self.proposal
    }

    /// True for DMALA (with MH step), false for DULA.
    pub fn is_metropolised(&self) -> bool {
        self.mh
    }

    /// Starts the concrete chains (what [`Sampler::start`] boxes).
    pub fn start_chains<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<DlpChains<'t>, SamplerError> {
        let space = target.space();
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        self.proposal.check_space(space).map_err(|m| bad(&self.name, m))?;
        if x0.len() < space.d {
            return Err(SamplerError::BadInitialState("no chains".into()));
        }
        MhChains::on_target(target, self.proposal.clone(), self.mh, Caching::Keep, x0)
    }
}

fn bad(sampler: &str, message: String) -> SamplerError {
    SamplerError::BadParameter { sampler: sampler.to_string(), message }
}

/// The constructor of the six DLP rows below, each passing its own name and variant: the MH
/// test (DMALA), a diagonal preconditioner, a single-precision proposal gradient.
fn construct(
    stem: &'static str,
    mh: bool,
    preconditioned: bool,
    f32_gradient: bool,
    params: &SamplerParams,
) -> Result<Box<dyn Sampler>, SamplerError> {
    let alpha =
        params.step_size.ok_or_else(|| bad(stem, "step_size (α) is required (--step-size, {0,1} units)".into()))?;
    let precond = match (preconditioned, &params.preconditioner) {
        (true, None) => {
            return Err(bad(stem, "preconditioner (h, one value > 0 per coordinate) is required".into()));
        }
        (false, Some(_)) => {
            let plain = stem.trim_end_matches("-f32");
            return Err(bad(stem, format!("{stem} takes no preconditioner; use p{plain} for preconditioned DLP")));
        }
        (_, p) => p.clone(),
    };
    let p = DlpProposal::new(alpha, precond).map_err(|m| bad(stem, m))?;
    let p = if f32_gradient { p.single_precision_gradient() } else { p };
    Ok(Box::new(DlpSampler::new(stem, mh, p)))
}

impl Sampler for DlpSampler {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        // Specialised kernels (same Markov kernel) when the model qualifies: `crate::fast`.
        if let Some(chains) = crate::fast::dlp_fast_path(&self.proposal, self.mh, target, x0)? {
            return Ok(chains);
        }
        Ok(Box::new(self.start_chains(target, x0)?))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for DlpSampler {
    /// DULA: every y with probability q(y|x) (product over coordinates). DMALA: y ≠ x with
    /// q(y|x)·min(1, e^A), and x with the rest, q(x|x) + Σ_{y≠x} q(y|x)(1 − min(1, e^A)).
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        exact_row(&self.proposal, self.mh, target.space(), x, |y, g| target.log_density_grad(y, g))
    }
}

/// What a DLP chain caches of its state: the forward logits (d·[`DlpProposal::logit_width`]),
/// the per-coordinate log-normalisers log Z_i(x) and log Z_α(x) = Σ_i log Z_i(x).
#[derive(Clone, Debug)]
pub struct DlpCache {
    /// Logits per coordinate, as [`DlpProposal::logits`] writes them.
    pub logits: Vec<f64>,
    /// log Z_i(x), one per coordinate.
    pub lognorm: Vec<f64>,
    /// log Z_α(x) (spec §4.2).
    pub log_z: f64,
}

impl Proposal for DlpProposal {
    type Cache = DlpCache;

    fn new_cache(&self, space: &Space) -> DlpCache {
        let (d, w) = (space.d, DlpProposal::logit_width(space));
        DlpCache { logits: vec![0.0; d * w], lognorm: vec![0.0; d], log_z: 0.0 }
    }

    fn prepare(&self, space: &Space, x: &[u32], grad: &[f64], c: &mut DlpCache) {
        c.log_z = self.logits(space, x, grad, &mut c.logits, &mut c.lognorm);
    }

    /// d uniforms, one per coordinate ([`DlpProposal::draw`]).
    fn draw(&mut self, space: &Space, x: &[u32], c: &DlpCache, rng: &mut ChainRng, y: &mut [u32]) -> u32 {
        DlpProposal::draw(self, space, x, &c.logits, &c.lognorm, rng, y)
    }

    fn log_prob(&self, space: &Space, from: &[u32], to: &[u32], c: &DlpCache) -> f64 {
        DlpProposal::log_prob(self, space, from, to, &c.logits, c.log_z)
    }
}

/// Running DULA/DMALA chains (the one MH kernel, [`crate::mh`]): positions, f, ∇f and the
/// [`DlpCache`] per chain. One step evaluates the model once, at the proposals that move,
/// for all chains of a task in one batched call.
pub type DlpChains<'t> = MhChains<'t, DlpProposal>;

pub mod proposal;
#[cfg(test)]
pub(crate) mod tests;

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `dula`.
pub const DULA: SamplerSpec = SamplerSpec {
    stem: "dula",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(|_, params| construct("dula", false, false, false, params)),
    doc: "discrete Langevin proposal, unadjusted (DULA)",
    paper: "Zhang et al. 2022, Alg. 1",
    exact: false,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["dula"], step_size: Some(0.4), ..NO_TESTS },
    defaults: crate::spec::Defaults {
        device: Some(crate::spec::DeviceKernel::Dula),
        ising: Some(0.2),
        rbm: Some(0.1),
        bnn: Some(0.1),
    },
};

/// The registry row of `dmala`.
pub const DMALA: SamplerSpec = SamplerSpec {
    stem: "dmala",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(|_, params| construct("dmala", true, false, false, params)),
    doc: "discrete Langevin proposal, Metropolis-adjusted (DMALA)",
    paper: "Zhang et al. 2022, Alg. 1",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["dmala"], step_size: Some(0.6), ..NO_TESTS },
    defaults: crate::spec::Defaults {
        device: Some(crate::spec::DeviceKernel::Dmala),
        ising: Some(0.4),
        rbm: Some(0.2),
        bnn: Some(0.1),
    },
};

/// The registry row of `pdula`.
pub const PDULA: SamplerSpec = SamplerSpec {
    stem: "pdula",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE, PRECONDITIONER],
    build: Build::Plain(|_, params| construct("pdula", false, true, false, params)),
    doc: "preconditioned DULA (diagonal h)",
    paper: "Zhang et al. 2022, §6 / App. H",
    exact: false,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["pdula"], step_size: Some(0.4), ..NO_TESTS },
    defaults: crate::spec::NO_DEFAULTS,
};

/// The registry row of `pdmala`.
pub const PDMALA: SamplerSpec = SamplerSpec {
    stem: "pdmala",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE, PRECONDITIONER],
    build: Build::Plain(|_, params| construct("pdmala", true, true, false, params)),
    doc: "preconditioned DMALA (diagonal h)",
    paper: "Zhang et al. 2022, §6 / App. H",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["pdmala"], step_size: Some(0.6), ..NO_TESTS },
    defaults: crate::spec::NO_DEFAULTS,
};

/// The registry row of `dula-f32`.
pub const DULA_F32: SamplerSpec = SamplerSpec {
    stem: "dula-f32",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(|_, params| construct("dula-f32", false, false, true, params)),
    doc: "DULA whose proposal reads the gradient at single precision; on RBMs the gradient \
          product then runs in f32, ≈2× faster per step at 784×500 (`paper/performance.md`)",
    paper: "as `dula`",
    exact: false,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["dula-f32"], step_size: Some(0.4), ..NO_TESTS },
    defaults: crate::spec::Defaults { ising: Some(0.2), rbm: Some(0.1), bnn: Some(0.1), ..crate::spec::NO_DEFAULTS },
};

/// The registry row of `dmala-f32`.
pub const DMALA_F32: SamplerSpec = SamplerSpec {
    stem: "dmala-f32",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(|_, params| construct("dmala-f32", true, false, true, params)),
    doc: "DMALA with the single-precision proposal gradient (f and the MH test stay f64, so it \
          is still exact for π)",
    paper: "as `dmala`",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["dmala-f32"], step_size: Some(0.6), ..NO_TESTS },
    defaults: crate::spec::Defaults { ising: Some(0.4), rbm: Some(0.2), bnn: Some(0.1), ..crate::spec::NO_DEFAULTS },
};
