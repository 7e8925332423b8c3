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
use crate::proposal::{accept_prob, mh_accept};
use crate::spec::{
    NO_TESTS, PLAIN, PRECONDITIONER, STEP_SIZE, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere,
};
use dlp_core::{Batch, ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, StepInfo, Target, Transition};
pub(crate) use proposal::for_each_state;
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
        DlpChains::new(target, self.proposal.clone(), self.mh, x0).map_err(|e| match e {
            StartError::Param(m) => bad(&self.name, m),
            StartError::State(m) => SamplerError::BadInitialState(m),
        })
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
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Vec<Transition> {
        let space = target.space();
        let p = &self.proposal;
        let (d, w) = (space.d, DlpProposal::logit_width(space));
        let mut grad = vec![0.0; space.grad_len()];
        let (mut logits, mut lognorm) = (vec![0.0; d * w], vec![0.0; d]);
        let f_x = target.log_density_grad(x, &mut grad);
        let log_z = p.logits(space, x, &grad, &mut logits, &mut lognorm);
        let (mut gy, mut ly, mut ny) = (vec![0.0; space.grad_len()], vec![0.0; d * w], vec![0.0; d]);
        let mut row = Vec::new();
        let mut stay = 0.0;
        for_each_state(space, |y| {
            let q = p.log_prob(space, x, y, &logits, log_z).exp();
            if y == x {
                stay += q;
            } else if !self.mh {
                if q > 0.0 {
                    row.push((y.to_vec(), q));
                }
            } else if q > 0.0 {
                let f_y = target.log_density_grad(y, &mut gy);
                let log_z_y = p.logits(space, y, &gy, &mut ly, &mut ny);
                let rev = p.log_prob(space, y, x, &ly, log_z_y);
                let a = accept_prob(log_accept_ratio(f_x, f_y, p.log_prob(space, x, y, &logits, log_z), rev));
                if q * a > 0.0 {
                    row.push((y.to_vec(), q * a));
                }
                stay += q * (1.0 - a);
            }
        });
        if stay > 0.0 {
            row.push((x.to_vec(), stay));
        }
        row
    }
}

enum StartError {
    Param(String),
    State(String),
}

/// Running DULA/DMALA chains with their caches (BlackJAX-style state): positions, f, ∇f,
/// forward logits, log Z_i and log Z_α per chain, plus scratch for the proposals.
pub struct DlpChains<'t> {
    target: &'t dyn Target,
    proposal: DlpProposal,
    mh: bool,
    n: usize,
    d: usize,
    /// Logits per coordinate.
    w: usize,
    /// Gradient length per state.
    gl: usize,
    x: Vec<u32>,
    f: Vec<f64>,
    grad: Vec<f64>,
    logits: Vec<f64>,
    lognorm: Vec<f64>,
    log_z: Vec<f64>,
    // Scratch, reused every step (no allocation inside `step`).
    y: Vec<u32>,
    n_prop: Vec<u32>,
    batch_x: Vec<u32>,
    batch_f: Vec<f64>,
    batch_g: Vec<f64>,
    y_logits: Vec<f64>,
    y_lognorm: Vec<f64>,
}

impl<'t> DlpChains<'t> {
    fn new(target: &'t dyn Target, proposal: DlpProposal, mh: bool, x0: &[u32]) -> Result<Self, StartError> {
        let space = target.space();
        space.check_states(x0).map_err(StartError::State)?;
        proposal.check_space(space).map_err(StartError::Param)?;
        let (d, w, gl) = (space.d, DlpProposal::logit_width(space), space.grad_len());
        let n = x0.len() / d;
        if n == 0 {
            return Err(StartError::State("no chains".into()));
        }
        let mut c = DlpChains {
            target,
            proposal,
            mh,
            n,
            d,
            w,
            gl,
            x: x0.to_vec(),
            f: vec![0.0; n],
            grad: vec![0.0; n * gl],
            logits: vec![0.0; n * d * w],
            lognorm: vec![0.0; n * d],
            log_z: vec![0.0; n],
            y: vec![0; n * d],
            n_prop: vec![0; n],
            batch_x: vec![0; n * d],
            batch_f: vec![0.0; n],
            batch_g: vec![0.0; n * gl],
            y_logits: vec![0.0; d * w],
            y_lognorm: vec![0.0; d],
        };
        target.log_density_grad_batch(&c.x, &mut c.f, &mut c.grad);
        for j in 0..n {
            c.log_z[j] = c.proposal.logits(
                space,
                &c.x[j * d..(j + 1) * d],
                &c.grad[j * gl..(j + 1) * gl],
                &mut c.logits[j * d * w..(j + 1) * d * w],
                &mut c.lognorm[j * d..(j + 1) * d],
            );
        }
        Ok(c)
    }

    /// Replaces the proposal (α, β, h) and recomputes the cached logits from the cached
    /// gradients: no model evaluation. Cyclical DLP ([`crate::acs`]) calls it before each step
    /// whose phase changes (α, β).
    pub fn set_proposal(&mut self, proposal: DlpProposal) {
        self.proposal = proposal;
        let space = self.target.space();
        let (d, dw, gl) = (self.d, self.d * self.w, self.gl);
        for j in 0..self.n {
            self.log_z[j] = self.proposal.logits(
                space,
                &self.x[j * d..(j + 1) * d],
                &self.grad[j * gl..(j + 1) * gl],
                &mut self.logits[j * dw..(j + 1) * dw],
                &mut self.lognorm[j * d..(j + 1) * d],
            );
        }
    }

    /// Cached gradients ∇f of the current states, `n × grad_len`.
    pub fn grads(&self) -> &[f64] {
        &self.grad
    }

    /// Cached log Z_α of the current states (log of the proposal normaliser, spec §4.2).
    pub fn log_normalisers(&self) -> &[f64] {
        &self.log_z
    }
}

impl Chains for DlpChains<'_> {
    fn n_chains(&self) -> usize {
        self.n
    }

    fn positions(&self) -> &[u32] {
        &self.x
    }

    fn log_densities(&self) -> Option<&[f64]> {
        Some(&self.f)
    }

    /// Per chain: d uniforms for the proposal, then (DMALA, if the proposal moves) one
    /// uniform for the MH test. Chains whose proposal is x itself are not evaluated: DULA
    /// stays, DMALA accepts with A = 0 without drawing.
    // Chain j indexes several flat buffers at once; an index loop is clearer than zips.
    #[allow(clippy::needless_range_loop)]
    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], _batch: Batch<'_>) -> Result<(), EvalError> {
        let space = self.target.space();
        let (d, w, gl) = (self.d, self.w, self.gl);
        let dw = d * w;
        let mut m = 0;
        for j in 0..self.n {
            let y = &mut self.y[j * d..(j + 1) * d];
            let k = self.proposal.draw(
                space,
                &self.x[j * d..(j + 1) * d],
                &self.logits[j * dw..(j + 1) * dw],
                &self.lognorm[j * d..(j + 1) * d],
                &mut rngs[j],
                y,
            );
            self.n_prop[j] = k;
            if k > 0 {
                self.batch_x[m * d..(m + 1) * d].copy_from_slice(y);
                m += 1;
            }
        }
        if m > 0 {
            self.target.evaluate(
                &self.batch_x[..m * d],
                Batch::Full,
                &mut self.batch_f[..m],
                Some(&mut self.batch_g[..m * gl]),
            )?;
        }
        let mut r = 0;
        for j in 0..self.n {
            let k = self.n_prop[j];
            if k == 0 {
                info[j] = StepInfo::stayed();
                continue;
            }
            let y = &self.batch_x[r * d..(r + 1) * d];
            let f_y = self.batch_f[r];
            let g_y = &self.batch_g[r * gl..(r + 1) * gl];
            r += 1;
            let x = &mut self.x[j * d..(j + 1) * d];
            let (accepted, accept_prob) = if self.mh {
                let log_z_y = self.proposal.logits(space, y, g_y, &mut self.y_logits, &mut self.y_lognorm);
                let fwd = self.proposal.log_prob(space, x, y, &self.logits[j * dw..(j + 1) * dw], self.log_z[j]);
                let rev = self.proposal.log_prob(space, y, x, &self.y_logits, log_z_y);
                let out = mh_accept(log_accept_ratio(self.f[j], f_y, fwd, rev), &mut rngs[j]);
                if out.0 {
                    self.logits[j * dw..(j + 1) * dw].copy_from_slice(&self.y_logits);
                    self.lognorm[j * d..(j + 1) * d].copy_from_slice(&self.y_lognorm);
                    self.log_z[j] = log_z_y;
                }
                out
            } else {
                (true, 1.0)
            };
            if accepted {
                x.copy_from_slice(y);
                self.f[j] = f_y;
                self.grad[j * gl..(j + 1) * gl].copy_from_slice(g_y);
                if !self.mh {
                    self.log_z[j] = self.proposal.logits(
                        space,
                        x,
                        g_y,
                        &mut self.logits[j * dw..(j + 1) * dw],
                        &mut self.lognorm[j * d..(j + 1) * d],
                    );
                }
            }
            info[j] = StepInfo::evaluated(accepted, accept_prob, k);
        }
        Ok(())
    }
}

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
    build: |_, params| construct("dula", false, false, false, params),
    doc: "discrete Langevin proposal, unadjusted (DULA)",
    paper: "Zhang et al. 2022, Alg. 1",
    exact: false,
    needs_data: false,
    particles: false,
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
    build: |_, params| construct("dmala", true, false, false, params),
    doc: "discrete Langevin proposal, Metropolis-adjusted (DMALA)",
    paper: "Zhang et al. 2022, Alg. 1",
    exact: true,
    needs_data: false,
    particles: false,
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
    build: |_, params| construct("pdula", false, true, false, params),
    doc: "preconditioned DULA (diagonal h)",
    paper: "Zhang et al. 2022, §6 / App. H",
    exact: false,
    needs_data: false,
    particles: false,
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
    build: |_, params| construct("pdmala", true, true, false, params),
    doc: "preconditioned DMALA (diagonal h)",
    paper: "Zhang et al. 2022, §6 / App. H",
    exact: true,
    needs_data: false,
    particles: false,
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
    build: |_, params| construct("dula-f32", false, false, true, params),
    doc: "DULA whose proposal reads the gradient at single precision; on RBMs the gradient \
          product then runs in f32, ≈2× faster per step at 784×500 (`paper/performance.md`)",
    paper: "as `dula`",
    exact: false,
    needs_data: false,
    particles: false,
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
    build: |_, params| construct("dmala-f32", true, false, true, params),
    doc: "DMALA with the single-precision proposal gradient (f and the MH test stay f64, so it \
          is still exact for π)",
    paper: "as `dmala`",
    exact: true,
    needs_data: false,
    particles: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["dmala-f32"], step_size: Some(0.6), ..NO_TESTS },
    defaults: crate::spec::Defaults { ising: Some(0.4), rbm: Some(0.2), bnn: Some(0.1), ..crate::spec::NO_DEFAULTS },
};
