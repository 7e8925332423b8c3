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

use crate::proposal::{accept_prob, inverse_cdf, mh_accept};
use crate::registry::{SamplerName, SamplerParams};
use dlp_core::math::{logsumexp, sigmoid, softplus};
use dlp_core::{
    Batch, ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, Space, StepInfo, Target, Transition,
};
use rand::RngExt;

/// Largest number of candidate states an exact transition row enumerates (K^d).
pub const MAX_EXACT_STATES: u64 = 1 << 20;

/// The DLP proposal q_α(·|x) of one configuration: step size α and optional diagonal
/// preconditioner h. All its functions work on one state; `step` and the exact kernel both
/// call them, so the exact suite checks the arithmetic the chains run.
///
/// Logit layout for one state (`logits`, length d·[`DlpProposal::logit_width`]):
/// binary/spin: one flip logit ℓ_i per coordinate (the "stay" logit is 0);
/// categorical/ordinal: K logits per coordinate, row-major, the current index having logit 0.
/// `lognorm` (length d) holds log Z_i(x); their sum is log Z_α(x) (spec §4.2).
#[derive(Clone, Debug, PartialEq)]
pub struct DlpProposal {
    alpha: f64,
    precond: Option<Vec<f64>>,
    /// Read the gradient at single precision (`dula-f32`, `dmala-f32`): see
    /// [`DlpProposal::single_precision_gradient`].
    f32_gradient: bool,
    /// Weight β of the gradient term (½ in the paper; the balancing parameter of cyclical
    /// DLP, [`crate::acs`]): see [`DlpProposal::with_balance`].
    balance: f64,
}

impl DlpProposal {
    /// Checks α (> 0, finite or +∞) and every h_i (finite, > 0); the message names the
    /// offending parameter and value.
    pub fn new(alpha: f64, precond: Option<Vec<f64>>) -> Result<Self, String> {
        if alpha.is_nan() || alpha <= 0.0 {
            return Err(format!("step_size (α) must be > 0 (finite, or +inf for the App. D ablation), got {alpha}"));
        }
        if let Some(h) = &precond
            && let Some((i, v)) = h.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v > 0.0))
        {
            return Err(format!("preconditioner[{i}] must be finite and > 0, got {v}"));
        }
        Ok(DlpProposal { alpha, precond, f32_gradient: false, balance: 0.5 })
    }

    /// The same proposal with the gradient term weighted by β instead of ½:
    /// q_i(v|x) ∝ exp(β g_i (v − x_i) − (v − x_i)²/(2αh_i)). β = ½ is the locally balanced DLP
    /// of the paper; Pynadath et al. (2024, §4) move β toward 1 for large α, where the
    /// proposal then approaches the target's own first-order conditional (the "balancing
    /// parameter" of cyclical DLP). Any β keeps DMALA exact (the MH test uses the same q both
    /// ways); β must lie in (0, 1].
    pub fn with_balance(mut self, beta: f64) -> Result<Self, String> {
        if !(beta > 0.0 && beta <= 1.0) {
            return Err(format!("balancing parameter β must be in (0, 1], got {beta}"));
        }
        self.balance = beta;
        Ok(self)
    }

    /// The weight β of the gradient term (½ unless [`DlpProposal::with_balance`] set it).
    pub fn balance(&self) -> f64 {
        self.balance
    }

    /// The same proposal computed from the gradient rounded to single precision,
    /// g̃_i = (g_i as f32) as f64 (`dula-f32`, `dmala-f32`). The proposal is then a
    /// deterministic function of the state as before, so DMALA's MH test (in f64, with
    /// q̃ both ways) still leaves π exactly invariant; DULA's biased law moves by O(1e−7)
    /// relative. Why it exists: it lets a model compute its gradient product in f32 (the RBM
    /// fast path does, three times faster here, as the PyTorch reference does).
    pub fn single_precision_gradient(mut self) -> Self {
        self.f32_gradient = true;
        self
    }

    /// True when the proposal reads the gradient at single precision.
    pub fn has_f32_gradient(&self) -> bool {
        self.f32_gradient
    }

    /// The gradient entry as the proposal reads it (rounded to f32 for the `-f32` variants).
    #[inline]
    pub fn gradient_entry(&self, g: f64) -> f64 {
        if self.f32_gradient { g as f32 as f64 } else { g }
    }

    /// The step size α ({0,1} units for binary and spin spaces).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The diagonal preconditioner h, if any.
    pub fn precond(&self) -> Option<&[f64]> {
        self.precond.as_deref()
    }

    /// Checks that the preconditioner (if any) has one entry per coordinate of `space`.
    pub fn check_space(&self, space: &Space) -> Result<(), String> {
        match &self.precond {
            Some(h) if h.len() != space.d => {
                Err(format!("preconditioner has {} entries but the model has d = {} coordinates", h.len(), space.d))
            }
            _ => Ok(()),
        }
    }

    /// Logits per coordinate: 1 (flip logit) for binary/spin, K otherwise.
    pub fn logit_width(space: &Space) -> usize {
        if space.is_binary_like() { 1 } else { space.k() }
    }

    /// 1/(2 α h_i): the distance penalty per unit squared move in coordinate i (0 for α = ∞).
    #[inline]
    pub fn half_inv_step(&self, i: usize) -> f64 {
        match &self.precond {
            None => 0.5 / self.alpha,
            Some(h) => 0.5 / (self.alpha * h[i]),
        }
    }

    /// Forward logits at `x` from the gradient `grad` (length `space.grad_len()`), into
    /// `logits` (d·width) and `lognorm` (d, log Z_i(x)); returns log Z_α(x) = Σ_i log Z_i(x).
    pub fn logits(&self, space: &Space, x: &[u32], grad: &[f64], logits: &mut [f64], lognorm: &mut [f64]) -> f64 {
        let d = space.d;
        let mut log_z = 0.0;
        if space.is_binary_like() {
            for i in 0..d {
                // (1 − 2x_i) is the signed change of a flip; ½ g_i times it is half the
                // first-order change of f (the paper's ½ = β, applied once: pitfall P2).
                let r = 1.0 - 2.0 * x[i] as f64;
                let l = self.balance * self.gradient_entry(grad[i]) * r - self.half_inv_step(i);
                logits[i] = l;
                let z = softplus(l);
                lognorm[i] = z;
                log_z += z;
            }
            return log_z;
        }
        let k = space.k();
        let categorical = space.kind == dlp_core::DomainKind::Categorical;
        for i in 0..d {
            let c = x[i] as usize;
            let pen = self.half_inv_step(i);
            let row = &mut logits[i * k..(i + 1) * k];
            if categorical {
                // One-hot: ½ Gᵀ(e_v − e_c) and ‖e_v − e_c‖²/(2αh) = 1/(αh) for v ≠ c.
                let gc = self.gradient_entry(grad[i * k + c]);
                for (v, l) in row.iter_mut().enumerate() {
                    *l = if v == c {
                        0.0
                    } else {
                        self.balance * (self.gradient_entry(grad[i * k + v]) - gc) - 2.0 * pen
                    };
                }
            } else {
                let xc = space.coordinate(c as u32);
                for (v, l) in row.iter_mut().enumerate() {
                    let dv = space.coordinate(v as u32) - xc;
                    *l = if v == c { 0.0 } else { self.balance * self.gradient_entry(grad[i]) * dv - dv * dv * pen };
                }
            }
            let z = logsumexp(row);
            lognorm[i] = z;
            log_z += z;
        }
        log_z
    }

    /// log q(y|x) from the logits at `x` (as written by [`DlpProposal::logits`]) and
    /// `log_z` = log Z_α(x): Σ_i logit_i(y_i) − log Z_α(x). For binary spaces the move is
    /// the flip set {i : y_i ≠ x_i}, so the reverse probability of DMALA is
    /// `log_prob(space, y, x, logits_at_y, log_z_at_y)` (pitfall P4).
    #[inline]
    pub fn log_prob(&self, space: &Space, x: &[u32], y: &[u32], logits: &[f64], log_z: f64) -> f64 {
        let mut s = 0.0;
        if space.is_binary_like() {
            for i in 0..space.d {
                if x[i] != y[i] {
                    s += logits[i];
                }
            }
        } else {
            let k = space.k();
            for (i, &v) in y.iter().enumerate() {
                s += logits[i * k + v as usize];
            }
        }
        s - log_z
    }

    /// Draws y ~ q(·|x) into `y` using one uniform per coordinate from `rng` (binary: flip
    /// iff u_i < σ(ℓ_i); otherwise inverse CDF of softmax(logits_i)); returns the number
    /// of coordinates that changed.
    #[inline]
    pub fn draw(
        &self,
        space: &Space,
        x: &[u32],
        logits: &[f64],
        lognorm: &[f64],
        rng: &mut ChainRng,
        y: &mut [u32],
    ) -> u32 {
        let mut changed = 0;
        if space.is_binary_like() {
            for i in 0..space.d {
                let u: f64 = rng.random();
                let flip = u < sigmoid(logits[i]);
                y[i] = x[i] ^ flip as u32;
                changed += flip as u32;
            }
            return changed;
        }
        let k = space.k();
        for i in 0..space.d {
            let row = &logits[i * k..(i + 1) * k];
            let lse = lognorm[i];
            // The row is normalised by log Z_i, so the scan starts from U itself.
            let u: f64 = rng.random();
            let weights = row.iter().map(|&l| (l - lse).exp());
            // Rounding left u ≥ 0 after the whole row: take the last value with positive mass
            // (the current one if none has: a NaN row stays).
            let v = inverse_cdf(weights.clone(), u)
                .unwrap_or_else(|| weights.clone().rposition(|w| w > 0.0).unwrap_or(x[i] as usize));
            y[i] = v as u32;
            changed += (y[i] != x[i]) as u32;
        }
        changed
    }
}

/// The DMALA log acceptance ratio A = f(y) − f(x) + log q(x|y) − log q(y|x) (spec §1.8).
/// A NaN (non-finite f(y)) makes [`mh_accept`] reject.
#[inline]
pub fn log_accept_ratio(f_x: f64, f_y: f64, log_q_fwd: f64, log_q_rev: f64) -> f64 {
    (f_y - f_x) + (log_q_rev - log_q_fwd)
}

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

/// Registry constructor for `dula`, `dmala`, `pdula`, `pdmala`, `dula-f32`, `dmala-f32`.
pub fn construct(name: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
    let stem = name.stem.as_str();
    let (mh, preconditioned, f32_gradient) = match stem {
        "dula" => (false, false, false),
        "dmala" => (true, false, false),
        "pdula" => (false, true, false),
        "pdmala" => (true, true, false),
        "dula-f32" => (false, false, true),
        "dmala-f32" => (true, false, true),
        _ => {
            return Err(SamplerError::UnknownSampler(
                stem.to_string(),
                "dula, dmala, pdula, pdmala, dula-f32, dmala-f32".into(),
            ));
        }
    };
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

/// Calls `visit(y)` for every state of `space` (first coordinate most significant), reusing
/// one buffer; panics if there are more than [`MAX_EXACT_STATES`] (an exact row is only
/// meant for small spaces).
pub(crate) fn for_each_state(space: &Space, mut visit: impl FnMut(&[u32])) {
    let n = space.n_states().filter(|&n| n <= MAX_EXACT_STATES).unwrap_or_else(|| {
        panic!("exact DLP rows enumerate K^d candidates; K = {}, d = {} is too large", space.k(), space.d)
    });
    let mut y = vec![0u32; space.d];
    for s in 0..n {
        space.state_of_index(s, &mut y);
        visit(&y);
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

#[cfg(test)]
pub(crate) mod tests;
