//! The one Metropolis–Hastings kernel of the proposal samplers (BlackJAX's proposal/kernel
//! split): a [`MoveProposal`] says how to draw y from what it caches of (x, its local
//! information: ∇f(x), or `lb`'s exact flip differences) and how to score the draw's move
//! record in the MH test; a state-pair [`Proposal`] (draw y, score log q(y|x) both ways) is
//! its trivial case with no record. An [`Evaluator`] says where f and the local information
//! of the proposals come from; [`MhChains`] is the chain state (x, f(x), that information and
//! the proposal's cache per chain) with the step written once: draw every chain's proposal,
//! evaluate the moving ones in one batch, then per chain the MH test (or, unadjusted,
//! acceptance) and the cache update. [`exact_row`] is a state-pair kernel's exact transition
//! row, for the exact suite (move-record samplers sum their rows over moves with the same
//! functions their proposal calls).
//!
//! Users: DULA/DMALA and their variants ([`crate::dlp`]), DLMC/DLMCF ([`crate::dlmc`]), the
//! cyclical samplers ([`crate::acs`], switching the proposal between steps with
//! [`MhChains::set_proposal`]), SG-DLP ([`crate::sgdlp`], [`Caching::Refresh`]: every step
//! re-evaluates the current states on its minibatch), `rwm` ([`crate::rwm`], values only),
//! the RBM fast path ([`crate::fast::rbm`]: its own evaluator, from cached hidden
//! pre-activations, and its own draw tables), and the move-record samplers: `gwg`/`gwg-<k>`
//! ([`crate::gwg`], the ordered draws; on RBMs with the RBM evaluator), `pas`/`pas-<R>`
//! ([`crate::pas`], the path, scored in reverse with y's weights) and `lb`
//! ([`crate::locally_balanced`], its evaluator the exact flip differences, its ratio
//! log Z(x) − log Z(y)). Not built on it: the lattice fast paths ([`crate::fast::ising`],
//! which steps chains through integer class statistics with no f or ∇f to cache;
//! [`crate::fast::gwg_ising`] / [`crate::fast::gwg_potts`], whose per-chain sum trees update
//! O(degree) leaves per move where this kernel's cache is rebuilt in O(d) per proposal), and
//! the samplers whose step has no MH test (Gibbs, block Gibbs, Hamming ball: a draw from a
//! conditional on an auxiliary ball).

use crate::dlp::proposal::log_accept_ratio;
use crate::proposal::{accept_prob, mh_accept};
use dlp_core::TargetExt;
use dlp_core::{Batch, ChainRng, Chains, EvalError, SamplerError, Space, StepInfo, Target, Transition};

/// A proposal q(y|x) that depends on the current state only through x and what
/// [`Proposal::prepare`] derives from (x, ∇f(x)) into a per-chain cache.
pub trait Proposal: Send {
    /// What a chain keeps of its current state for drawing and scoring (logits, normalisers).
    type Cache: Send;

    /// An unfilled cache for states of `space`.
    fn new_cache(&self, space: &Space) -> Self::Cache;

    /// Fills `cache` for the state `x` with gradient `grad` (`space.grad_len()` entries).
    fn prepare(&self, space: &Space, x: &[u32], grad: &[f64], cache: &mut Self::Cache);

    /// Completes a prepared cache when a chain moves to its state (what only drawing from the
    /// state needs, e.g. the RBM path's draw tables; the default does nothing). Called after
    /// [`Proposal::prepare`] for every cache a chain draws from, never for a rejected proposal.
    fn adopt(&self, _cache: &mut Self::Cache) {}

    /// Draws y ~ q(·|x) into `y` from `x`'s cache; returns how many coordinates differ from
    /// x. `&mut self` lets a proposal keep scratch (no allocation inside a step).
    fn draw(&mut self, space: &Space, x: &[u32], cache: &Self::Cache, rng: &mut ChainRng, y: &mut [u32]) -> u32;

    /// log q(to | from), `cache` being `from`'s.
    fn log_prob(&self, space: &Space, from: &[u32], to: &[u32], cache: &Self::Cache) -> f64;
}

/// What [`MhChains`] steps: a proposal whose MH test scores a draw's *move record* (the
/// ordered draws of `gwg-<k>`, the path of `pas`) rather than the state pair (x, y): on the
/// extended space (state, move) the map (x, m) ↦ (y, reverse of m) is an involution, and
/// the test is that deterministic move's MH ratio. A state-pair [`Proposal`] is the trivial
/// case (the blanket impl below: `Move = ()`, the ratio from [`Proposal::log_prob`] both
/// ways), monomorphised to the same code as before the move record existed.
pub trait MoveProposal: Send {
    /// What a chain keeps of its current state for drawing and scoring.
    type Cache: Send;
    /// What a draw records beyond y for its test (per chain, allocated once).
    type Move: Send;

    /// An unfilled cache for states of `space`.
    fn new_cache(&self, space: &Space) -> Self::Cache;

    /// An empty move record for states of `space`.
    fn new_move(&self, space: &Space) -> Self::Move;

    /// Fills `cache` for the state `x` from its local information `grad` (the evaluator's
    /// [`Evaluator::grad_len`] entries: ∇f, or the exact flip differences of `lb`).
    fn prepare(&self, space: &Space, x: &[u32], grad: &[f64], cache: &mut Self::Cache);

    /// As [`Proposal::adopt`].
    fn adopt(&self, _cache: &mut Self::Cache) {}

    /// Draws y from x's cache into `y`, recording the move in `mv`; returns how many
    /// coordinates differ from x (0: the chain stays without an evaluation).
    fn draw(
        &mut self,
        space: &Space,
        x: &[u32],
        cache: &Self::Cache,
        rng: &mut ChainRng,
        y: &mut [u32],
        mv: &mut Self::Move,
    ) -> u32;

    /// The log MH ratio of the move `mv` from x (f, cache) to y (f, cache). `&mut self` lets
    /// a proposal keep scratch.
    #[allow(clippy::too_many_arguments)]
    fn log_accept_ratio(
        &mut self,
        space: &Space,
        x: &[u32],
        y: &[u32],
        mv: &Self::Move,
        f_x: f64,
        f_y: f64,
        cache_x: &Self::Cache,
        cache_y: &Self::Cache,
    ) -> f64;
}

impl<P: Proposal> MoveProposal for P {
    type Cache = P::Cache;
    type Move = ();

    #[inline]
    fn new_cache(&self, space: &Space) -> P::Cache {
        Proposal::new_cache(self, space)
    }

    #[inline]
    fn new_move(&self, _space: &Space) {}

    #[inline]
    fn prepare(&self, space: &Space, x: &[u32], grad: &[f64], cache: &mut P::Cache) {
        Proposal::prepare(self, space, x, grad, cache)
    }

    #[inline]
    fn adopt(&self, cache: &mut P::Cache) {
        Proposal::adopt(self, cache)
    }

    #[inline]
    fn draw(
        &mut self,
        space: &Space,
        x: &[u32],
        cache: &P::Cache,
        rng: &mut ChainRng,
        y: &mut [u32],
        _: &mut (),
    ) -> u32 {
        Proposal::draw(self, space, x, cache, rng, y)
    }

    /// (f(y) − f(x)) + (log q(x|y) − log q(y|x)), as [`exact_row`] forms it.
    #[inline]
    fn log_accept_ratio(
        &mut self,
        space: &Space,
        x: &[u32],
        y: &[u32],
        _: &(),
        f_x: f64,
        f_y: f64,
        cache_x: &P::Cache,
        cache_y: &P::Cache,
    ) -> f64 {
        let fwd = self.log_prob(space, x, y, cache_x);
        let rev = self.log_prob(space, y, x, cache_y);
        log_accept_ratio(f_x, f_y, fwd, rev)
    }
}

/// Where a step's proposals get f and ∇f: the target's batched oracle ([`TargetEval`]) or a
/// model-specific incremental cache (the RBM path's pre-activations).
pub trait Evaluator: Send {
    /// Gradient entries per state it writes: `space.grad_len()`, or 0 for an evaluator of
    /// values only (gradient-free proposals such as [`crate::rwm`]).
    fn grad_len(&self) -> usize;

    /// f and ∇f of the chains' starting states `x0` (n × d) into `f` and `grad`.
    fn start(&mut self, x0: &[u32], f: &mut [f64], grad: &mut [f64]) -> Result<(), EvalError>;

    /// f̂ and ∇f̂ of the current states on `batch` ([`Caching::Refresh`] only).
    fn current(&mut self, x: &[u32], batch: Batch<'_>, f: &mut [f64], grad: &mut [f64]) -> Result<(), EvalError>;

    /// Stages the proposal `y` of chain `chain` (now at `x`, with f(x) = `f_x` and local
    /// information `grad_x`) as row `row` of the next [`Evaluator::evaluate`].
    fn stage(&mut self, chain: usize, row: usize, x: &[u32], f_x: f64, grad_x: &[f64], y: &[u32]);

    /// f and ∇f of staged rows 0..rows on `batch`.
    fn evaluate(&mut self, rows: usize, batch: Batch<'_>) -> Result<(), EvalError>;

    /// Row `r` of the last evaluation: (state, f, ∇f).
    fn row(&self, r: usize) -> (&[u32], f64, &[f64]);

    /// Chain `chain` moved to the state of row `row` (per-chain caches follow; default: none).
    fn accept(&mut self, _chain: usize, _row: usize) {}

    /// N, the data items of a sum-over-data target (minibatch accounting; default: none).
    fn n_data(&self) -> Option<usize> {
        None
    }

    /// (density, gradient) evaluations one evaluated row counts in [`StepInfo`]: (1, 1), or
    /// (1, 0) for values only; `lb`'s flip differences count d densities.
    fn evals_per_row(&self) -> (u32, u32) {
        (1, (self.grad_len() > 0) as u32)
    }
}

/// The generic evaluator: [`Target::evaluate`] on the packed rows (one call per step), with
/// gradients or (for gradient-free proposals) values only.
pub struct TargetEval<'t> {
    target: &'t dyn Target,
    d: usize,
    gl: usize,
    ys: Vec<u32>,
    f: Vec<f64>,
    g: Vec<f64>,
}

impl<'t> TargetEval<'t> {
    /// f and ∇f, room for `n` rows of `target`'s space.
    pub fn new(target: &'t dyn Target, n: usize) -> Self {
        Self::with_gradients(target, n, true)
    }

    /// f only (no gradient evaluation), room for `n` rows.
    pub fn values_only(target: &'t dyn Target, n: usize) -> Self {
        Self::with_gradients(target, n, false)
    }

    fn with_gradients(target: &'t dyn Target, n: usize, gradients: bool) -> Self {
        let space = target.space();
        let (d, gl) = (space.d, if gradients { space.grad_len() } else { 0 });
        TargetEval { target, d, gl, ys: vec![0; n * d], f: vec![0.0; n], g: vec![0.0; n * gl] }
    }

    fn grad_out<'a>(&self, g: &'a mut [f64]) -> Option<&'a mut [f64]> {
        (self.gl > 0).then_some(g)
    }
}

impl Evaluator for TargetEval<'_> {
    fn grad_len(&self) -> usize {
        self.gl
    }

    fn start(&mut self, x0: &[u32], f: &mut [f64], grad: &mut [f64]) -> Result<(), EvalError> {
        if self.gl == 0 {
            return self.target.evaluate(x0, Batch::Full, f, None);
        }
        self.target.log_density_grad_batch(x0, f, grad)
    }

    fn current(&mut self, x: &[u32], batch: Batch<'_>, f: &mut [f64], grad: &mut [f64]) -> Result<(), EvalError> {
        let grad = self.grad_out(grad);
        self.target.evaluate(x, batch, f, grad)
    }

    fn stage(&mut self, _chain: usize, row: usize, _x: &[u32], _f_x: f64, _grad_x: &[f64], y: &[u32]) {
        self.ys[row * self.d..(row + 1) * self.d].copy_from_slice(y);
    }

    fn evaluate(&mut self, rows: usize, batch: Batch<'_>) -> Result<(), EvalError> {
        let (d, gl) = (self.d, self.gl);
        let g = (gl > 0).then_some(&mut self.g[..rows * gl]);
        self.target.evaluate(&self.ys[..rows * d], batch, &mut self.f[..rows], g)
    }

    fn row(&self, r: usize) -> (&[u32], f64, &[f64]) {
        let (d, gl) = (self.d, self.gl);
        (&self.ys[r * d..(r + 1) * d], self.f[r], &self.g[r * gl..(r + 1) * gl])
    }

    fn n_data(&self) -> Option<usize> {
        self.target.n_data()
    }
}

/// An evaluation error at the chains' start: the target failed (a device error), as it would
/// inside a step, so the run ends with that error.
pub fn start_error(e: EvalError) -> SamplerError {
    SamplerError::Eval(e)
}

/// How long a chain's f(x), ∇f(x) and proposal cache stay valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caching {
    /// Until the chain moves (exact gradients): a step evaluates only the proposals that
    /// move, and an accepted one brings its f, ∇f and cache along.
    Keep,
    /// One step (stochastic gradients, [`crate::sgdlp`]): every step evaluates the current
    /// states on its minibatch first; with the MH test it evaluates every chain's proposal on
    /// the same minibatch (moving or not, as the official code does: one fixed batch shape),
    /// without it none; f and ∇f are never carried over.
    Refresh,
}

/// Running chains of one [`Proposal`] under the MH test (`mh`) or without it (unadjusted):
/// x, f(x), ∇f(x) and the proposal cache per chain, plus scratch (no allocation inside a
/// step).
pub struct MhChains<'t, P: MoveProposal, E: Evaluator = TargetEval<'t>> {
    space: &'t Space,
    proposal: P,
    eval: E,
    mh: bool,
    caching: Caching,
    n: usize,
    /// Gradient entries per state (0: gradient-free).
    gl: usize,
    x: Vec<u32>,
    f: Vec<f64>,
    grad: Vec<f64>,
    caches: Vec<P::Cache>,
    /// Each chain's move record of this step (`()` for state-pair proposals).
    moves: Vec<P::Move>,
    // Scratch.
    y: Vec<u32>,
    y_cache: P::Cache,
    n_prop: Vec<u32>,
}

impl<'t, P: MoveProposal> MhChains<'t, P> {
    /// Chains on `target` started at the rows of `x0` (already checked against the space),
    /// evaluated with [`TargetEval`] (f and ∇f). An evaluation error at the start ends the run
    /// as one inside a step would ([`SamplerError::Eval`]).
    pub fn on_target(
        target: &'t dyn Target,
        proposal: P,
        mh: bool,
        caching: Caching,
        x0: &[u32],
    ) -> Result<Self, SamplerError> {
        let eval = TargetEval::new(target, x0.len() / target.space().d);
        Self::new(target.space(), proposal, eval, mh, caching, x0).map_err(start_error)
    }
}

impl<'t, P: MoveProposal, E: Evaluator> MhChains<'t, P, E> {
    /// Chains started at the rows of `x0` (n × d, at least one row, already checked against
    /// `space`). [`Caching::Keep`] evaluates and prepares them now; [`Caching::Refresh`] at
    /// each step.
    pub fn new(
        space: &'t Space,
        proposal: P,
        mut eval: E,
        mh: bool,
        caching: Caching,
        x0: &[u32],
    ) -> Result<Self, EvalError> {
        let (d, gl) = (space.d, eval.grad_len());
        let n = x0.len() / d;
        let (mut f, mut grad) = (vec![0.0; n], vec![0.0; n * gl]);
        let mut caches: Vec<P::Cache> = (0..n).map(|_| proposal.new_cache(space)).collect();
        if caching == Caching::Keep {
            eval.start(x0, &mut f, &mut grad)?;
            for (j, c) in caches.iter_mut().enumerate() {
                proposal.prepare(space, &x0[j * d..(j + 1) * d], &grad[j * gl..(j + 1) * gl], c);
                proposal.adopt(c);
            }
        }
        let y_cache = proposal.new_cache(space);
        let moves = (0..n).map(|_| proposal.new_move(space)).collect();
        Ok(MhChains {
            space,
            proposal,
            eval,
            mh,
            caching,
            n,
            gl,
            x: x0.to_vec(),
            f,
            grad,
            caches,
            moves,
            y: vec![0; d],
            y_cache,
            n_prop: vec![0; n],
        })
    }

    /// The proposal.
    pub fn proposal(&self) -> &P {
        &self.proposal
    }

    /// Replaces the proposal and re-prepares every chain's cache from its cached ∇f (no model
    /// evaluation). Cyclical DLP ([`crate::acs`]) calls it before each step whose phase
    /// changes (α, β).
    pub fn set_proposal(&mut self, proposal: P) {
        self.proposal = proposal;
        let (d, gl) = (self.space.d, self.gl);
        for (j, c) in self.caches.iter_mut().enumerate() {
            self.proposal.prepare(self.space, &self.x[j * d..(j + 1) * d], &self.grad[j * gl..(j + 1) * gl], c);
            self.proposal.adopt(c);
        }
    }

    /// Cached gradients ∇f of the current states, `n × grad_len`.
    pub fn grads(&self) -> &[f64] {
        &self.grad
    }

    /// Chain `j`'s proposal cache.
    pub fn cache(&self, j: usize) -> &P::Cache {
        &self.caches[j]
    }

    /// [`Chains::set_states`]: chain `rows[r]` to row r of `xs`.
    fn move_to(&mut self, rows: &[usize], xs: &[u32]) -> Result<(), EvalError> {
        let (d, gl) = (self.space.d, self.gl);
        if self.caching == Caching::Refresh {
            for (&j, y) in rows.iter().zip(xs.chunks(d)) {
                self.x[j * d..(j + 1) * d].copy_from_slice(y);
            }
            return Ok(());
        }
        for (r, (&j, y)) in rows.iter().zip(xs.chunks(d)).enumerate() {
            self.eval.stage(j, r, &self.x[j * d..(j + 1) * d], self.f[j], &self.grad[j * gl..(j + 1) * gl], y);
        }
        if rows.is_empty() {
            return Ok(());
        }
        self.eval.evaluate(rows.len(), Batch::Full)?;
        for (r, &j) in rows.iter().enumerate() {
            self.take_row(j, r, false);
        }
        Ok(())
    }

    /// Chain `j` moves to row `r` of the last evaluation: its state, f, ∇f and cache (the
    /// scratch cache already prepared for that row when `prepared`, else prepared here).
    fn take_row(&mut self, j: usize, r: usize, prepared: bool) {
        let (d, gl) = (self.space.d, self.gl);
        let (y, f_y, g_y) = self.eval.row(r);
        self.x[j * d..(j + 1) * d].copy_from_slice(y);
        self.f[j] = f_y;
        self.grad[j * gl..(j + 1) * gl].copy_from_slice(g_y);
        let cache = &mut self.caches[j];
        if prepared {
            std::mem::swap(cache, &mut self.y_cache);
        } else {
            self.proposal.prepare(self.space, y, g_y, cache);
        }
        self.proposal.adopt(cache);
        self.eval.accept(j, r);
    }

    /// One step with the exact gradients ([`Caching::Keep`]).
    // Chain j indexes several flat buffers at once; an index loop is clearer than zips.
    #[allow(clippy::needless_range_loop)]
    fn step_keep(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo]) -> Result<(), EvalError> {
        let space = self.space;
        let (d, gl) = (space.d, self.gl);
        let (density_evals, grad_evals) = self.eval.evals_per_row();
        let mut rows = 0;
        for j in 0..self.n {
            let x = &self.x[j * d..(j + 1) * d];
            let k = self.proposal.draw(space, x, &self.caches[j], &mut rngs[j], &mut self.y, &mut self.moves[j]);
            self.n_prop[j] = k;
            if k > 0 {
                self.eval.stage(j, rows, x, self.f[j], &self.grad[j * gl..(j + 1) * gl], &self.y);
                rows += 1;
            }
        }
        if rows > 0 {
            self.eval.evaluate(rows, Batch::Full)?;
        }
        let mut r = 0;
        for j in 0..self.n {
            let k = self.n_prop[j];
            if k == 0 {
                info[j] = StepInfo::stayed();
                continue;
            }
            let (y, f_y, g_y) = self.eval.row(r);
            let x = &mut self.x[j * d..(j + 1) * d];
            let (accepted, p) = if self.mh {
                self.proposal.prepare(space, y, g_y, &mut self.y_cache);
                let (cx, cy) = (&self.caches[j], &self.y_cache);
                let a = self.proposal.log_accept_ratio(space, x, y, &self.moves[j], self.f[j], f_y, cx, cy);
                mh_accept(a, &mut rngs[j])
            } else {
                (true, 1.0)
            };
            if accepted {
                self.take_row(j, r, self.mh);
            }
            info[j] = StepInfo { density_evals, grad_evals, ..StepInfo::evaluated(accepted, p, k) };
            r += 1;
        }
        Ok(())
    }

    /// One step on the minibatch `batch` ([`Caching::Refresh`]). A minibatch evaluation of n
    /// states counts n density and n gradient evaluations and n·B data items.
    #[allow(clippy::needless_range_loop)]
    fn step_refresh(
        &mut self,
        rngs: &mut [ChainRng],
        info: &mut [StepInfo],
        batch: Batch<'_>,
    ) -> Result<(), EvalError> {
        let space = self.space;
        let (d, gl) = (space.d, self.gl);
        let items = batch.n_items(self.eval.n_data());
        self.eval.current(&self.x, batch, &mut self.f, &mut self.grad)?;
        for j in 0..self.n {
            let (x, cache) = (&self.x[j * d..(j + 1) * d], &mut self.caches[j]);
            self.proposal.prepare(space, x, &self.grad[j * gl..(j + 1) * gl], cache);
            self.proposal.adopt(cache);
            self.n_prop[j] = self.proposal.draw(space, x, cache, &mut rngs[j], &mut self.y, &mut self.moves[j]);
            if self.mh {
                self.eval.stage(j, j, x, self.f[j], &self.grad[j * gl..(j + 1) * gl], &self.y);
            } else {
                // Unadjusted: the move is taken now; nothing about y is needed before the
                // next step evaluates it on its own minibatch.
                self.x[j * d..(j + 1) * d].copy_from_slice(&self.y);
            }
        }
        if self.mh {
            self.eval.evaluate(self.n, batch)?;
        }
        let evals = if self.mh { 2 } else { 1 };
        for j in 0..self.n {
            let k = self.n_prop[j];
            let mut rec = StepInfo {
                accepted: true,
                accept_prob: 1.0,
                n_proposed: k,
                n_changed: k,
                density_evals: evals,
                grad_evals: evals,
                data_evals: evals * items,
            };
            if self.mh && k > 0 {
                let (y, f_y, g_y) = self.eval.row(j);
                let x = &mut self.x[j * d..(j + 1) * d];
                self.proposal.prepare(space, y, g_y, &mut self.y_cache);
                let (cx, cy) = (&self.caches[j], &self.y_cache);
                let a = self.proposal.log_accept_ratio(space, x, y, &self.moves[j], self.f[j], f_y, cx, cy);
                let (accepted, p) = mh_accept(a, &mut rngs[j]);
                rec.accepted = accepted;
                rec.accept_prob = p;
                rec.n_changed = if accepted { k } else { 0 };
                if accepted {
                    x.copy_from_slice(y);
                }
            }
            info[j] = rec;
        }
        Ok(())
    }
}

impl<P: MoveProposal, E: Evaluator> Chains for MhChains<'_, P, E> {
    fn n_chains(&self) -> usize {
        self.n
    }

    fn positions(&self) -> &[u32] {
        &self.x
    }

    /// f of the current states ([`Caching::Keep`]; with stochastic gradients there is none
    /// that stays valid).
    fn log_densities(&self) -> Option<&[f64]> {
        (self.caching == Caching::Keep).then_some(&self.f[..])
    }

    /// One batched evaluation of the new states (none with [`Caching::Refresh`], which keeps
    /// no f), then per moved chain what an accepted proposal brings: f, ∇f and the prepared,
    /// adopted cache.
    fn set_states(&mut self, rows: &[usize], xs: &[u32]) -> Option<Result<(), EvalError>> {
        Some(self.move_to(rows, xs))
    }

    /// [`Caching::Keep`]: per chain the proposal's draw (its uniforms), then one batched
    /// evaluation of the proposals that move (chains whose proposal is x itself are not
    /// evaluated: unadjusted chains stay, MH chains accept with A = 0 without drawing), then
    /// (MH) one uniform per moving chain for the test. [`Caching::Refresh`]: see the variant.
    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], batch: Batch<'_>) -> Result<(), EvalError> {
        match self.caching {
            Caching::Keep => self.step_keep(rngs, info),
            Caching::Refresh => self.step_refresh(rngs, info, batch),
        }
    }
}

/// The exact transition row of the kernel from `x`: unadjusted, every y with q(y|x); with the
/// MH test, y ≠ x with q(y|x)·min(1, e^A) and x with q(x|x) plus the rejected rest. `eval`
/// gives f and ∇f of one state (f returned, ∇f written), so that a minibatch row can pass its
/// batch's estimate. The same [`Proposal`] methods the chains call, over every state.
pub fn exact_row<P: Proposal>(
    proposal: &P,
    mh: bool,
    space: &Space,
    x: &[u32],
    mut eval: impl FnMut(&[u32], &mut [f64]) -> Result<f64, EvalError>,
) -> Result<Vec<Transition>, EvalError> {
    let mut grad = vec![0.0; space.grad_len()];
    let f_x = eval(x, &mut grad)?;
    let mut failed = None;
    let (mut cache, mut y_cache) = (proposal.new_cache(space), proposal.new_cache(space));
    proposal.prepare(space, x, &grad, &mut cache);
    let mut row = Vec::new();
    let mut stay = 0.0;
    crate::dlp::proposal::for_each_state(space, |y| {
        if failed.is_some() {
            return;
        }
        let fwd = proposal.log_prob(space, x, y, &cache);
        let q = fwd.exp();
        if y == x {
            stay += q;
        } else if !mh {
            if q > 0.0 {
                row.push((y.to_vec(), q));
            }
        } else if q > 0.0 {
            let f_y = match eval(y, &mut grad) {
                Ok(f) => f,
                Err(e) => return failed = Some(e),
            };
            proposal.prepare(space, y, &grad, &mut y_cache);
            let rev = proposal.log_prob(space, y, x, &y_cache);
            let a = accept_prob(log_accept_ratio(f_x, f_y, fwd, rev));
            if q * a > 0.0 {
                row.push((y.to_vec(), q * a));
            }
            stay += q * (1.0 - a);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if stay > 0.0 {
        row.push((x.to_vec(), stay));
    }
    Ok(row)
}
