//! Path auxiliary samplers: `pas-<R>`, R distinct single-site flips per step, and `pas`, a
//! fixed mixture of ⌊r⌋ and ⌊r⌋ + 1 flips around a mean path length r (adapted in warm-up),
//! each proposed along an auxiliary path and corrected by Metropolis–Hastings on
//! (state, path).
//!
//! Sun, Dai, Li, Schuurmans & Zhou, "Path Auxiliary Proposal for MCMC in Discrete Space",
//! ICLR 2022 (§4: the path auxiliary proposal with the first-order, locally balanced
//! weights of the start state; the acceptance scores the auxiliary path, not the state
//! pair). The concrete recipe follows the authors' public implementation in
//! google-research/discs (`discs/samplers/path_auxiliary.py`, `PAFSNoReplacement` with a
//! fixed number of flips and `approx_with_grad`, plus `noreplacement_sampling_renormalize`
//! in `discs/common/math_util.py`); the details taken from the code rather than the paper
//! text are marked (code). Binary and spin spaces only.
//!
//! One step from x (bits x_i ∈ {0,1}, g = ∇f(x) with respect to the bit):
//!
//! 1. site logits λ_i(x) = ½ (1 − 2x_i) g_i(x) — the first-order estimate of
//!    f(x^{(i)}) − f(x), √-balanced; site law q_x(i) = softmax(λ(x))_i;
//! 2. path i_1, …, i_R: R distinct sites drawn one after another **without replacement**
//!    from q_x (code: `multinomial(…, replacement=False)`), every draw with the weights of
//!    the start state x; with R' = min(R, d) draws on a d < R model (code: the adaptive
//!    radius is clipped to d). Its probability is
//!    Q_x(i_1..i_R) = Π_r q_x(i_r) / (1 − Σ_{s<r} q_x(i_s));
//! 3. y = x with the R sites flipped; the reverse path from y is the same sites in reverse
//!    order, drawn with the weights of y: Q_y(i_R..i_1) (code: `jnp.flip` of the trajectory);
//! 4. accept y with min(1, exp A), A = f(y) − f(x) + log Q_y(i_R..i_1) − log Q_x(i_1..i_R).
//!
//! Exactness: (x, path) ↦ (y, reversed path) is an involution (flipping the same R sites of
//! y gives x back), and A is the MH ratio of that deterministic move on the extended space
//! (state, path) with path law Q_x, so every path keeps detailed balance with respect to π
//! and so does the state kernel, which sums over all R! · C(d, R) ordered paths
//! ([`ExactKernel::transition_row`] does exactly that, with the functions `step` uses).
//!
//! Irreducibility (a property of the fixed-length recipe, the code's included): an accepted
//! move flips exactly R' sites, so an even R' never changes the parity of the number of ones
//! (the chain stays in the parity class it starts in) and R' = d only ever proposes the
//! complement. π-invariance holds for every R; ergodicity on {0,1}^d needs R' odd and
//! R' < d (then R'-sets generate every flip set), or R' = 1. `pas-<R>` is kept for comparison
//! with the published fixed-length runs, and its registry row flags those spaces
//! ([`Pas::not_ergodic_on`]): the CLI warns there, and the exact suite checks both that the
//! flagged chains are reducible and that the unflagged ones are irreducible and aperiodic.
//!
//! `pas` (mean path length r, given as `--step-size`): each step first draws its length, L₂ =
//! L₁ + 1 with probability θ and L₁ otherwise, where r is clamped to [1, d], L₁ = min(⌊r⌋,
//! d − 1) and θ = r − L₁ clamped to [0.05, 0.95] (so an integer r still puts 5% on the other
//! length); then it is the fixed-length step above with that length. The length is drawn
//! independently of the state, so the kernel is the mixture (1 − θ)·P_{L₁} + θ·P_{L₂} of two
//! π-reversible kernels, itself π-reversible. It is irreducible on {0,1}^d for d ≥ 2: flipping
//! an L₂-set S ∪ {i} and then the L₁-set S flips site i alone, every such move has positive
//! probability (positive site weights, positive acceptance where π > 0), and single flips
//! connect the hypercube. The adaptive part follows Sun, Dai & Schuurmans, "Optimal Scaling for
//! Locally Balanced Proposals in Discrete Spaces" (NeurIPS 2022), which tunes the path length
//! toward acceptance 0.574; here `dlp sample`'s warm-up does that by dual averaging of log r
//! (`crate::adapt`) and then freezes r, so the kept samples come from this one fixed kernel,
//! which is what the exact suite checks. (DISCS rounds an adapted real radius to one integer
//! per step, so a fixed even radius there keeps the parity trap.)
//!
//! `pas` is not that paper's adaptive locally balanced sampler: the authors' `albp` weighs
//! sites by the *exact* flip differences (Zanella's √ balancing of π(x^{(i)})/π(x)), where
//! `pas` uses the gradient's first-order estimate (DISCS's `approx_with_grad`, the ICLR
//! paper's PAFS); that sampler is `alb` ([`crate::alb`]), the same path machinery
//! (`PasProposal`) with exact weights.
//!
//! The ordered no-replacement probabilities are evaluated as ratios of the unnormalised
//! weights w_i = exp(λ_i − max λ): Q_x = Π_r w_{i_r} / S_r with S_r the sum of the weights of
//! the sites not yet drawn. S_r is read off a sum tree over the weights whose drawn leaves are
//! zeroed ([`SumTrees`]): every internal node is recomputed from its children, so S_r is a
//! sum of the remaining weights (no 1 − Σ cancellation), and a path costs O(d + R log d)
//! instead of the O(R·d) of summing afresh. The draw and the forward probability share one
//! tree, and a draw consumes one uniform per site exactly as an inverse-CDF scan does.
//!
//! On the brief's with-replacement reading: drawing the R sites with replacement from q_x and
//! flipping their union, scored by Π_r q_y(i_r) / Π_r q_x(i_r), is exactly `gwg-<R>`
//! (`gwg.rs`); PAS as the authors run it draws without replacement, so every accepted move
//! changes exactly R' coordinates.
//!
//! Cost: one gradient and one log-density evaluation per step (f and ∇f of the current state
//! are cached and reused after acceptance), O(d + R log d) for the path and its two
//! probabilities (two tree fills and R descents and updates in each). On a sparse Ising model
//! the chains keep local fields and a sum tree instead ([`crate::fast::gwg_ising`]): O(R ·
//! (degree + 1) · log d) per step, the same kernel.
//!
//! Not supported (`SamplerError::Unsupported` at `start`): categorical and ordinal spaces
//! (the code's categorical variant also draws a class per site; not implemented here).

use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::fast::sum_tree::SumTrees;
use crate::mh::{Caching, MhChains, MoveProposal};
use crate::proposal::accept_prob;
use crate::spec::Build;
use crate::spec::{
    NO_DEFAULTS, NO_TESTS, PLAIN, STEP_SIZE, SamplerName, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere,
};
use dlp_core::TargetExt;
use dlp_core::{
    ChainRng, Chains, DomainKind, EvalError, ExactKernel, Sampler, SamplerError, Space, Target, Transition,
};
use rand::RngExt;
use std::collections::BTreeMap;

/// How many sites a PAS step flips.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PathLength {
    /// Exactly R (min(R, d) on a d-site model): `pas-<R>`.
    Fixed(usize),
    /// Mean r: ⌊r⌋ or ⌊r⌋ + 1 flips, both with probability ≥ [`MIN_LENGTH_WEIGHT`] (module
    /// doc): `pas --step-size r`.
    Mean(f64),
}

/// The smallest probability either length of `pas`'s mixture gets, so that both parities are
/// always proposed.
pub const MIN_LENGTH_WEIGHT: f64 = 0.05;

/// The path auxiliary sampler.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pas {
    /// Sites flipped per proposal.
    pub length: PathLength,
}

impl Pas {
    /// Fixed length `r ≥ 1` (`pas-<R>`).
    pub fn new(r: usize) -> Result<Self, SamplerError> {
        if r == 0 {
            return Err(SamplerError::BadParameter {
                sampler: "pas-0".into(),
                message: "path length R = 0; R must be at least 1".into(),
            });
        }
        Ok(Pas { length: PathLength::Fixed(r) })
    }

    /// Mean length `r` (finite, > 0; clamped to [1, d] on a d-site model) (`pas`).
    pub fn with_mean(r: f64) -> Result<Self, SamplerError> {
        if !(r.is_finite() && r > 0.0) {
            return Err(SamplerError::BadParameter {
                sampler: "pas".into(),
                message: format!("mean path length r = {r} (--step-size); r must be a finite number > 0"),
            });
        }
        Ok(Pas { length: PathLength::Mean(r) })
    }

    /// Registry constructor for `pas-<R>` and `pas` (whose `--step-size` is the mean length r).
    pub fn build(name: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        match name.numbers.first() {
            Some(&r) => Ok(Box::new(Pas::new(r)?)),
            None => {
                let r = params.step_size.ok_or_else(|| SamplerError::BadParameter {
                    sampler: "pas".into(),
                    message: "needs --step-size r, the mean path length (dlp sample adapts it when none is given)"
                        .into(),
                })?;
                Ok(Box::new(Pas::with_mean(r)?))
            }
        }
    }

    /// (L₁, L₂, θ) on a d-site model: L₂ flips with probability θ, else L₁ (L₁ = L₂, θ = 0 for
    /// a fixed length).
    pub fn lengths(&self, d: usize) -> (usize, usize, f64) {
        match self.length {
            PathLength::Fixed(r) => (r.min(d), r.min(d), 0.0),
            PathLength::Mean(_) if d <= 1 => (1, 1, 0.0),
            PathLength::Mean(r) => {
                let r = r.clamp(1.0, d as f64);
                let lo = (r.floor() as usize).min(d - 1);
                let theta = (r - lo as f64).clamp(MIN_LENGTH_WEIGHT, 1.0 - MIN_LENGTH_WEIGHT);
                (lo, lo + 1, theta)
            }
        }
    }

    /// The registry's [`crate::registry::NotErgodicOn`] for `pas-<R>` on binary and spin spaces
    /// (others are refused at start): R' = min(R, d) = d ≥ 2 only ever proposes the complement,
    /// and an even R' keeps the parity of the number of ones (module doc). `pas` has neither trap.
    pub fn not_ergodic_on(name: &SamplerName, space: &Space) -> Option<String> {
        let &r = name.numbers.first()?;
        let d = space.d;
        if !space.is_binary_like() || d < 2 {
            return None;
        }
        let len = r.min(d);
        if len == d {
            Some(format!(
                "pas-{r} flips all {d} sites of this model at every step (R ≥ d), so the chain only moves between a \
                 state and its complement: reducible; use `pas`"
            ))
        } else if len % 2 == 0 {
            Some(format!(
                "pas-{r} flips an even number of sites at every step, so the parity of the number of ones never \
                 changes: two closed classes, and the samples depend on the start; use `pas` or an odd R"
            ))
        } else {
            None
        }
    }

    fn check(&self, space: &Space) -> Result<(), SamplerError> {
        match space.kind {
            DomainKind::Binary | DomainKind::Spin => Ok(()),
            DomainKind::Categorical | DomainKind::Ordinal => Err(SamplerError::Unsupported {
                sampler: self.name(),
                message: "only binary and spin spaces are supported (categorical, ordinal are not)".into(),
            }),
        }
    }
}

/// Site weights of the path proposal at `x` from the gradient `grad` (one entry per bit),
/// into `logit` and `w` (length d): logit_i = ½ (1 − 2x_i) g_i − max_j(…), w_i = exp(logit_i).
pub fn site_weights(x: &[u32], grad: &[f64], logit: &mut [f64], w: &mut [f64]) {
    for ((l, &c), &g) in logit.iter_mut().zip(x).zip(grad) {
        *l = 0.5 * (1.0 - 2.0 * c as f64) * g;
    }
    let m = logit.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m.is_finite() {
        logit.iter_mut().for_each(|l| *l -= m);
    }
    for (w, &l) in w.iter_mut().zip(logit.iter()) {
        *w = l.exp();
    }
}

/// log of the probability that sequential draws without replacement from the weights `w`
/// (log-weights `logit`) give the sites of `path` in the order given:
/// Σ_r logit_{i_r} − ln S_r, S_r = Σ of w over the sites not among i_1..i_{r−1}, read off
/// `tree` (one tree of d leaves, scratch: filled with `w` here, drawn leaves zeroed).
pub fn path_log_prob(logit: &[f64], w: &[f64], path: impl Iterator<Item = usize>, tree: &mut SumTrees) -> f64 {
    tree.fill(0, w);
    let mut lp = 0.0;
    for i in path {
        lp += logit[i] - tree.total(0).ln();
        tree.set(0, i, 0.0);
    }
    lp
}

/// PAS's log acceptance ratio for the path `path` from x to y (y = x with the path's sites
/// flipped): f(y) − f(x) + log Q_y(reversed path) − log Q_x(path).
#[allow(clippy::too_many_arguments)]
pub fn log_accept_ratio(
    f_x: f64,
    f_y: f64,
    logit_x: &[f64],
    w_x: &[f64],
    logit_y: &[f64],
    w_y: &[f64],
    path: &[usize],
    tree: &mut SumTrees,
) -> f64 {
    let fwd = path_log_prob(logit_x, w_x, path.iter().copied(), tree);
    let rev = path_log_prob(logit_y, w_y, path.iter().rev().copied(), tree);
    f_y - f_x + rev - fwd
}

/// Draws `path.len()` distinct sites one after another from the weights `w` (the drawn
/// ones removed; one uniform each) and returns the path's log probability, with the same
/// tree arithmetic as [`path_log_prob`] (so the same bits).
fn draw_path(logit: &[f64], w: &[f64], path: &mut [usize], tree: &mut SumTrees, rng: &mut ChainRng) -> f64 {
    tree.fill(0, w);
    let mut lp = 0.0;
    for slot in path.iter_mut() {
        let total = tree.total(0);
        let i = tree.draw(0, rng.random::<f64>());
        *slot = i;
        lp += logit[i] - total.ln();
        tree.set(0, i, 0.0);
    }
    lp
}

/// y = x with the sites of `path` flipped.
pub(crate) fn flip(x: &[u32], path: &[usize], y: &mut [u32]) {
    y.copy_from_slice(x);
    for &i in path {
        y[i] = 1 - y[i];
    }
}

impl Sampler for Pas {
    fn name(&self) -> String {
        match self.length {
            PathLength::Fixed(r) => format!("pas-{r}"),
            PathLength::Mean(_) => "pas".into(),
        }
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        self.check(space)?;
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        if let Some(m) = crate::fast::gwg_ising::qualifying_model(target) {
            // One density and one gradient evaluation per step, as the generic path counts.
            return Ok(Box::new(crate::fast::gwg_ising::GwgIsingChains::path(&m, self.lengths(space.d), (1, 1), x0)?));
        }
        let proposal = PasProposal::new(self.lengths(space.d), space.d, site_weights);
        Ok(Box::new(MhChains::on_target(target, proposal, true, Caching::Keep, x0)?))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for Pas {
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        mixture_row(self, target, x, &|y, g| target.log_density_grad(y, g), site_weights)
    }
}

/// The transition row from `x` of the path kernel with `paths`' lengths, a state's f and local
/// information from `local` (f returned, the row written) and its site weights from
/// `weights`: every ordered path of both lengths, with the functions the step uses.
pub(crate) fn mixture_row(
    paths: &Pas,
    target: &dyn Target,
    x: &[u32],
    local: &LocalInfo<'_>,
    weights: SiteWeights,
) -> Result<Vec<Transition>, EvalError> {
    let (lo, hi, theta) = paths.lengths(target.space().d);
    let mut row = fixed_length_row(target, x, lo, 1.0 - theta, local, weights)?;
    if hi != lo {
        for (y, p) in fixed_length_row(target, x, hi, theta, local, weights)? {
            *row.entry(y).or_insert(0.0) += p;
        }
    }
    Ok(crate::gibbs::finish_row(row))
}

/// `weight` times the transition row from `x` of the step with paths of `len` flips: every
/// ordered path, with the functions `step` uses.
fn fixed_length_row(
    target: &dyn Target,
    x: &[u32],
    len: usize,
    weight: f64,
    local: &LocalInfo<'_>,
    weights: SiteWeights,
) -> Result<BTreeMap<Vec<u32>, f64>, EvalError> {
    let d = target.space().d;
    let eval = |y: &[u32]| {
        let mut g = vec![0.0; d];
        let f = local(y, &mut g)?;
        let (mut l, mut w) = (vec![0.0; d], vec![0.0; d]);
        weights(y, &g, &mut l, &mut w);
        Ok::<_, EvalError>((f, l, w))
    };
    let (f_x, logit_x, w_x) = eval(x)?;
    let mut cache: BTreeMap<Vec<u32>, (f64, Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut row: BTreeMap<Vec<u32>, f64> = BTreeMap::new();
    let mut tree = SumTrees::new(1, d);
    let mut stay = 1.0;
    let mut y = vec![0; d];
    // Every ordered path of `len` distinct sites, as a base-d counter skipping repeats.
    let mut path = vec![0usize; len];
    loop {
        let distinct = (1..len).all(|r| !path[..r].contains(&path[r]));
        if distinct && path.iter().all(|&i| w_x[i] > 0.0) {
            let q = path_log_prob(&logit_x, &w_x, path.iter().copied(), &mut tree).exp();
            flip(x, &path, &mut y);
            if !cache.contains_key(&y) {
                cache.insert(y.clone(), eval(&y)?);
            }
            let (f_y, logit_y, w_y) = &cache[&y];
            let a = log_accept_ratio(f_x, *f_y, &logit_x, &w_x, logit_y, w_y, &path, &mut tree);
            let p = q * accept_prob(a);
            *row.entry(y.clone()).or_insert(0.0) += weight * p;
            stay -= p;
        }
        let mut pos = 0;
        while pos < len {
            path[pos] += 1;
            if path[pos] < d {
                break;
            }
            path[pos] = 0;
            pos += 1;
        }
        if pos == len {
            break;
        }
    }
    *row.entry(x.to_vec()).or_insert(0.0) += weight * stay.max(0.0);
    Ok(row)
}

/// Site log-weights and weights of a state from its local information (x, row, logit, w):
/// [`site_weights`] (first-order) or `alb`'s exact ones.
pub(crate) type SiteWeights = fn(&[u32], &[f64], &mut [f64], &mut [f64]);

/// A state's f (returned) and local information (written): ∇f, or the flip differences.
pub(crate) type LocalInfo<'a> = dyn Fn(&[u32], &mut [f64]) -> Result<f64, dlp_core::EvalError> + 'a;

/// The path proposal for the one MH kernel ([`MhChains`]): a length, then a path of that
/// many distinct sites from x's weights; the move record is the path, whose reverse under y's
/// weights the test scores ([`log_accept_ratio`]). PAS weighs sites by the first-order
/// estimate ([`site_weights`]); `alb` ([`crate::alb`]) by the exact flip differences.
pub(crate) struct PasProposal {
    /// Flips per proposal: `hi` with probability `theta`, else `lo` (`Pas::lengths`).
    lo: usize,
    hi: usize,
    theta: f64,
    /// Site log-weights and weights of a state from its local information (x, row, logit, w).
    weights: SiteWeights,
    /// The path's sum tree over the d site weights (scratch of [`draw_path`] and
    /// [`path_log_prob`]).
    tree: SumTrees,
}

impl PasProposal {
    /// Paths of `lengths` ([`Pas::lengths`]) on d sites, sites weighed by `weights`.
    pub(crate) fn new((lo, hi, theta): (usize, usize, f64), d: usize, weights: SiteWeights) -> Self {
        PasProposal { lo, hi, theta, weights, tree: SumTrees::new(1, d) }
    }
}

/// What a path-proposal chain keeps of its state: the site log-weights and weights.
pub(crate) struct PasCache {
    logit: Vec<f64>,
    w: Vec<f64>,
}

/// A drawn path: its first `len` entries, and its log probability under x's weights.
pub(crate) struct PasPath {
    len: usize,
    sites: Vec<usize>,
    log_q: f64,
}

impl MoveProposal for PasProposal {
    type Cache = PasCache;
    type Move = PasPath;

    fn new_cache(&self, space: &Space) -> PasCache {
        PasCache { logit: vec![0.0; space.d], w: vec![0.0; space.d] }
    }

    fn new_move(&self, _: &Space) -> PasPath {
        PasPath { len: self.lo, sites: vec![0; self.hi], log_q: 0.0 }
    }

    fn prepare(&self, _: &Space, x: &[u32], grad: &[f64], c: &mut PasCache) {
        (self.weights)(x, grad, &mut c.logit, &mut c.w);
    }

    /// A fixed length draws no length (its streams stay those of `pas-<R>` before `pas`).
    fn draw(&mut self, _: &Space, x: &[u32], c: &PasCache, rng: &mut ChainRng, y: &mut [u32], mv: &mut PasPath) -> u32 {
        mv.len = if self.hi != self.lo && rng.random::<f64>() < self.theta { self.hi } else { self.lo };
        let path = &mut mv.sites[..mv.len];
        mv.log_q = draw_path(&c.logit, &c.w, path, &mut self.tree, rng);
        flip(x, path, y);
        mv.len as u32
    }

    fn log_accept_ratio(
        &mut self,
        _: &Space,
        _x: &[u32],
        _y: &[u32],
        mv: &PasPath,
        f_x: f64,
        f_y: f64,
        _cx: &PasCache,
        cy: &PasCache,
    ) -> f64 {
        // The forward probability came with the draw (the same bits as `path_log_prob`'s).
        let rev = path_log_prob(&cy.logit, &cy.w, mv.sites[..mv.len].iter().rev().copied(), &mut self.tree);
        f_y - f_x + rev - mv.log_q
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `pas`.
pub const PAS: SamplerSpec = SamplerSpec {
    stem: "pas",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE],
    build: Build::Plain(Pas::build),
    doc: "path auxiliary sampler with a mean path length r (`--step-size`, adapted toward \
          acceptance 0.574 in `dlp sample`'s warm-up): each step flips ⌊r⌋ or ⌊r⌋ + 1 distinct sites \
          (both with probability ≥ 5%, so both parities: irreducible), drawn without replacement from \
          the first-order √-balanced weights of the start state, MH on the path; binary/spin",
    paper: "Sun et al. 2022 (ICLR), §4; adaptive length as Sun et al. 2022 (NeurIPS)",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["pas"], step_size: Some(2.5), ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

/// The registry row of `pas` (`pas-<…>`).
pub const PAS_R: SamplerSpec = SamplerSpec {
    stem: "pas",
    counts: &[1],
    numbers: &["R"],
    params: &[],
    build: Build::Plain(Pas::build),
    doc: "path auxiliary sampler with exactly R flips per step (the published runs' fixed length); \
          reducible for even R (parity kept) and for R ≥ d (complements only): use `pas` there",
    paper: "Sun et al. 2022 (ICLR), §4",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: Pas::not_ergodic_on,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["pas-1", "pas-2", "pas-3"], ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use crate::gwg::Gwg;
    use dlp_core::StepInfo;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    #[test]
    fn pas_preserves_pi_exactly() {
        for r in 1..=4 {
            check_exact(&Pas::new(r).unwrap(), &Quadratic::spec_tiny(), true);
            check_exact(&Pas::new(r).unwrap(), &spin_tiny(), true);
        }
    }

    #[test]
    fn pas1_equals_gwg1() {
        // One flip: the no-replacement path law is the site law, so PAS-1 is GWG-1.
        for t in [Quadratic::spec_tiny(), spin_tiny()] {
            let a = matrix(&Pas::new(1).unwrap(), &t, 0);
            let b = matrix(&Gwg::new(1).unwrap(), &t, 0);
            for (ra, rb) in a.iter().zip(&b) {
                for (pa, pb) in ra.iter().zip(rb) {
                    assert!((pa - pb).abs() < 1e-12, "{pa} vs {pb}");
                }
            }
        }
    }

    #[test]
    fn mean_length_is_a_mixture_of_two_fixed_lengths() {
        let (lo, hi) = (Pas::new(1).unwrap(), Pas::new(2).unwrap());
        let mix = Pas::with_mean(1.3).unwrap();
        assert_eq!(mix.lengths(3), (1, 2, 0.30000000000000004));
        for t in [Quadratic::spec_tiny(), spin_tiny()] {
            check_exact(&mix, &t, true);
            let (a, b, m) = (matrix(&lo, &t, 0), matrix(&hi, &t, 0), matrix(&mix, &t, 0));
            for ((ra, rb), rm) in a.iter().zip(&b).zip(&m) {
                for ((pa, pb), pm) in ra.iter().zip(rb).zip(rm) {
                    assert!((0.7 * pa + 0.3 * pb - pm).abs() < 1e-12, "{pa} {pb} {pm}");
                }
            }
        }
        let info = empirical_check(&mix, &Quadratic::spec_tiny(), &[0, 1, 0], 20_000, 41);
        let twos = info.iter().filter(|i| i.n_proposed == 2).count() as f64 / info.len() as f64;
        // P(2 flips) = 0.3: 20,000 draws, s.d. 0.0032, so ±0.02 is over 6 s.d. (p < 1e-9).
        assert!((twos - 0.3).abs() < 0.02, "{twos}");
    }

    #[test]
    fn lengths_clamp_and_keep_both_parities() {
        let l = |r: f64, d: usize| Pas::with_mean(r).unwrap().lengths(d);
        assert_eq!(l(0.2, 5), (1, 2, MIN_LENGTH_WEIGHT));
        assert_eq!(l(2.0, 5), (2, 3, MIN_LENGTH_WEIGHT));
        assert_eq!(l(2.99, 5), (2, 3, 1.0 - MIN_LENGTH_WEIGHT));
        assert_eq!(l(9.0, 4), (3, 4, 1.0 - MIN_LENGTH_WEIGHT));
        assert_eq!(l(3.0, 1), (1, 1, 0.0));
        assert_eq!(Pas::new(6).unwrap().lengths(4), (4, 4, 0.0));
        assert!(Pas::with_mean(f64::NAN).is_err() && Pas::with_mean(0.0).is_err());
        assert_eq!(Pas::with_mean(1.5).unwrap().name(), "pas");
    }

    #[test]
    fn fixed_lengths_flag_their_traps() {
        let flag = |r: usize, space: Space| Pas::not_ergodic_on(&SamplerName::parse(&format!("pas-{r}")), &space);
        assert!(flag(2, Space::spin(4)).unwrap().contains("parity"));
        assert!(flag(4, Space::binary(6)).unwrap().contains("parity"));
        assert!(flag(3, Space::binary(3)).unwrap().contains("complement"));
        assert!(flag(5, Space::binary(2)).unwrap().contains("complement"));
        assert_eq!(flag(1, Space::binary(4)), None);
        assert_eq!(flag(3, Space::spin(5)), None);
        assert_eq!(flag(1, Space::binary(1)), None);
        assert_eq!(Pas::not_ergodic_on(&SamplerName::parse("pas"), &Space::binary(4)), None);
    }

    #[test]
    fn path_probability_matches_hand_computation() {
        // Weights (1, 2, 5): path (2, 0) has probability 5/8 · 1/3.
        let w = [1.0f64, 2.0, 5.0];
        let logit: Vec<f64> = w.iter().map(|v| v.ln()).collect();
        let mut tree = SumTrees::new(1, 3);
        let lp = path_log_prob(&logit, &w, [2, 0].into_iter(), &mut tree);
        assert!((lp.exp() - 5.0 / 8.0 / 3.0).abs() < 1e-15);
        // The tree is refilled on every call: a second path is scored from the full weights.
        let lp = path_log_prob(&logit, &w, [1].into_iter(), &mut tree);
        assert!((lp.exp() - 2.0 / 8.0).abs() < 1e-15);
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        for r in [2, 3] {
            let info = empirical_check(&Pas::new(r).unwrap(), &q, &[0, 1, 0], 20_000, 31 + r as u64);
            assert!(info.iter().all(|i| i.grad_evals == 1 && i.density_evals == 1 && i.n_proposed as usize == r));
        }
        empirical_check(&Pas::new(2).unwrap(), &spin_tiny(), &[1, 1, 0], 20_000, 36);
    }

    #[test]
    fn cached_state_survives_many_steps() {
        let q = Quadratic::spec_tiny();
        let mut ch = Pas::new(2).unwrap().start(&q, &[0, 0, 0, 1, 1, 1]).unwrap();
        let mut rngs = dlp_core::chain_rngs(5, 0, 2);
        let mut info = [StepInfo::default(); 2];
        for _ in 0..200 {
            ch.step(&mut rngs, &mut info);
        }
        for (y, f) in ch.positions().chunks(3).zip(ch.log_densities().unwrap()) {
            assert_eq!(q.log_density(y).unwrap(), *f);
        }
    }

    #[test]
    fn bad_parameters_and_spaces_are_named() {
        let e = Pas::new(0).unwrap_err();
        assert!(e.to_string().contains("R = 0"), "{e}");
        let e = Pas::new(2).unwrap().start(&PairwiseCategorical::spec_small(), &[0, 0]).err().unwrap();
        assert!(matches!(e, SamplerError::Unsupported { .. }), "{e}");
        let ord = Quadratic::new(Space::ordinal(1, vec![0, 1, 2]), vec![0.0], vec![0.0]);
        let e = Pas::new(1).unwrap().start(&ord, &[0]).err().unwrap();
        assert!(matches!(e, SamplerError::Unsupported { .. }));
    }
}
