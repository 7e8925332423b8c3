//! Annealed importance sampling (AIS, Neal 2001) for log Z of π ∝ exp(f): the evaluation of
//! the deep EBMs of the main paper (§7.3, Table 1; `reproduction.md` §3.5), and `dlp logz`.
//!
//! The path is log γ_β(x) = β f(x) + (1 − β) log q(x) from a normalised product base q
//! ([`ProductBase`]: Bernoulli(μ) for the EBMs, uniform otherwise) to the target, with
//! β_k = k / K for k = 0..K (linear schedule, K = `temperatures`). Each chain starts at a draw
//! of q; at every k ≥ 1 its log-weight gains (β_k − β_{k−1}) (f(x) − log q(x)) at its current
//! state x, then one transition of the chosen sampler, invariant for γ_{β_k}, moves it. Since q
//! is normalised (log Z_q = 0), Ẑ = mean_j w_j is unbiased for Z and log Ẑ = logsumexp(log w)
//! − log n.
//!
//! The tempered densities are a [`Target`] wrapper ([`Tempered`]) that offers no
//! capabilities, so a sampler's fast path (which would read the untempered RBM or Ising
//! parameters) never runs on it; every sampler runs its generic kernel on γ_β.

use dlp_core::TargetExt;
use dlp_core::capability::Conditionals;
use dlp_core::draw::sample_weights;
use dlp_core::math::logsumexp;
use dlp_core::rng::{ChainRng, chain_rngs};
use dlp_core::{Batch, Capabilities, Coupling, DomainKind, EvalError, Sampler, SamplerError, Space, StepInfo, Target};
use rayon::prelude::*;

/// Tolerance on Σ_v q_i(v) = 1 for [`ProductBase::from_log_probs`].
const NORMALISATION_TOL: f64 = 1e-9;

fn base_error(message: impl Into<String>) -> SamplerError {
    SamplerError::BadParameter { sampler: "ais".into(), message: message.into() }
}

/// Product base distribution q(x) = Π_i q_i(x_i) over a Space (log-probabilities per
/// coordinate and value).
#[derive(Clone, Debug, PartialEq)]
pub struct ProductBase {
    space: Space,
    /// log q_i(v), d × K row-major.
    log_probs: Vec<f64>,
    /// q_i(v), d × K row-major (for the draws).
    probs: Vec<f64>,
    /// ∂ log q / ∂(sampler coordinate) at a state with x_i = v, d × K row-major (for binary
    /// and spin spaces the same for both v; categorical spaces use `log_probs` itself, the
    /// gradient with respect to the one-hot matrix).
    slope: Vec<f64>,
}

impl ProductBase {
    /// Bernoulli(μ) on {0,1}^d: q_i(1) = μ_i ∈ (0, 1). Also serves spin spaces of the same d
    /// (index 1, the value +1, has probability μ_i).
    pub fn bernoulli(mu: &[f64]) -> Result<Self, SamplerError> {
        if let Some((i, m)) = mu.iter().enumerate().find(|(_, m)| !(**m > 0.0 && **m < 1.0)) {
            return Err(base_error(format!("Bernoulli base: mu[{i}] = {m} must lie strictly between 0 and 1")));
        }
        let log_probs = mu.iter().flat_map(|&m| [(-m).ln_1p(), m.ln()]).collect();
        Self::from_log_probs(&Space::binary(mu.len()), log_probs)
    }

    /// The uniform distribution on any discrete space: q_i(v) = 1/K.
    pub fn uniform(space: &Space) -> Self {
        let k = space.k();
        let log_probs = vec![-(k as f64).ln(); space.d * k];
        Self::build(space.clone(), log_probs)
    }

    /// q_i(v) = exp(log_probs[i K + v]) (d × K row-major); every entry finite and each row
    /// summing to 1 (to 1e-9).
    pub fn from_log_probs(space: &Space, log_probs: Vec<f64>) -> Result<Self, SamplerError> {
        let (d, k) = (space.d, space.k());
        if d == 0 {
            return Err(base_error("base distribution: the space has no coordinates (d = 0)"));
        }
        if log_probs.len() != d * k {
            return Err(base_error(format!(
                "base distribution: log_probs must be d × K = {d} × {k}, found {} entries",
                log_probs.len()
            )));
        }
        if let Some(p) = log_probs.iter().position(|l| !l.is_finite()) {
            return Err(base_error(format!(
                "base distribution: log q_{}({}) = {} must be finite (q must cover every state)",
                p / k,
                p % k,
                log_probs[p]
            )));
        }
        for (i, row) in log_probs.chunks(k).enumerate() {
            let total: f64 = row.iter().map(|l| l.exp()).sum();
            if (total - 1.0).abs() > NORMALISATION_TOL {
                return Err(base_error(format!(
                    "base distribution: q_{i} sums to {total}, not 1 (log_probs must be normalised per coordinate)"
                )));
            }
        }
        Ok(Self::build(space.clone(), log_probs))
    }

    fn build(space: Space, log_probs: Vec<f64>) -> Self {
        let k = space.k();
        let probs = log_probs.iter().map(|l| l.exp()).collect();
        let mut slope = vec![0.0; log_probs.len()];
        for (row, out) in log_probs.chunks(k).zip(slope.chunks_mut(k)) {
            match space.kind {
                DomainKind::Binary | DomainKind::Spin => out.fill(row[1] - row[0]),
                DomainKind::Categorical => out.copy_from_slice(row),
                // log q_i is known only at the values: the samplers' proposals see the slope of
                // its piecewise-linear interpolation (central differences inside, one-sided at
                // the ends). Any extension gives a valid Metropolis–Hastings kernel, since the
                // accept step uses the exact γ_β.
                DomainKind::Ordinal => {
                    let at = |v: usize| space.values[v] as f64;
                    for (v, o) in out.iter_mut().enumerate() {
                        let (lo, hi) = (v.saturating_sub(1), (v + 1).min(k - 1));
                        *o = (row[hi] - row[lo]) / (at(hi) - at(lo));
                    }
                }
            }
        }
        ProductBase { space, log_probs, probs, slope }
    }

    /// The space q lives on.
    pub fn space(&self) -> &Space {
        &self.space
    }

    /// log q_i(v), d × K row-major.
    pub fn log_probs(&self) -> &[f64] {
        &self.log_probs
    }

    /// log q(x) for every row of `xs` (`xs.len() == out.len() * d`).
    pub fn log_prob_batch(&self, xs: &[u32], out: &mut [f64]) {
        let (d, k) = (self.space.d, self.space.k());
        for (x, o) in xs.chunks(d).zip(out.iter_mut()) {
            *o = x.iter().enumerate().map(|(i, &v)| self.log_probs[i * k + v as usize]).sum();
        }
    }

    /// One draw of q into `x` (length d): one uniform per coordinate, inverse CDF.
    pub fn sample(&self, rng: &mut ChainRng, x: &mut [u32]) {
        let k = self.space.k();
        for (c, p) in x.iter_mut().zip(self.probs.chunks(k)) {
            *c = sample_weights(p, 1.0, rng) as u32;
        }
    }

    /// log q_i(v) − log q_i(x_i) for every v, into `out` (length K).
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) {
        let k = self.space.k();
        let row = &self.log_probs[i * k..(i + 1) * k];
        let here = row[x[i] as usize];
        for (o, l) in out.iter_mut().zip(row) {
            *o = l - here;
        }
    }

    /// Adds `scale` · ∇ log q(x) to one state's gradient row (length `grad_len`).
    fn add_grad(&self, x: &[u32], scale: f64, grad: &mut [f64]) {
        let k = self.space.k();
        if self.space.kind == DomainKind::Categorical {
            for (g, s) in grad.iter_mut().zip(&self.slope) {
                *g += scale * s;
            }
        } else {
            for (i, (g, &v)) in grad.iter_mut().zip(x).enumerate() {
                *g += scale * self.slope[i * k + v as usize];
            }
        }
    }

    fn matches(&self, space: &Space) -> bool {
        let kinds = self.space.kind == space.kind || (self.space.is_binary_like() && space.is_binary_like());
        kinds && self.space.d == space.d && self.space.values.len() == space.values.len()
    }
}

/// γ_β = β f + (1 − β) log q as a [`Target`]: the intermediate distributions of AIS, and
/// without a base (`base: None`, γ_β = β f) the replicas of replica exchange
/// ([`crate::tempering`]). Its only capability is its conditionals (the inner target's and the
/// base's, combined), so samplers take their generic kernels (a fast path would see the
/// untempered model's parameters), and it has no minibatches.
pub struct Tempered<'a> {
    /// The target f.
    pub inner: &'a dyn Target,
    /// The base q (`None`: no base term).
    pub base: Option<&'a ProductBase>,
    /// β ∈ [0, 1].
    pub beta: f64,
}

impl Tempered<'_> {
    /// Turns f (and ∇f) of a batch into γ_β (and ∇γ_β), in place.
    fn temper(&self, xs: &[u32], f: &mut [f64], grad: Option<&mut [f64]>) {
        let d = self.inner.space().d;
        match self.base {
            Some(base) => {
                let mut lq = vec![0.0; f.len()];
                base.log_prob_batch(xs, &mut lq);
                for (fv, l) in f.iter_mut().zip(&lq) {
                    *fv = self.beta * *fv + (1.0 - self.beta) * l;
                }
            }
            None => f.iter_mut().for_each(|fv| *fv *= self.beta),
        }
        if let Some(grad) = grad {
            let w = self.inner.space().grad_len();
            for (x, g) in xs.chunks(d).zip(grad.chunks_mut(w)) {
                g.iter_mut().for_each(|v| *v *= self.beta);
                if let Some(base) = self.base {
                    base.add_grad(x, 1.0 - self.beta, g);
                }
            }
        }
    }

    /// β·v plus (1 − β) times the base's difference `base_delta` (none without a base).
    fn mix(&self, v: f64, base_delta: impl FnOnce(&ProductBase) -> f64) -> f64 {
        match self.base {
            Some(base) => self.beta * v + (1.0 - self.beta) * base_delta(base),
            None => self.beta * v,
        }
    }
}

impl Target for Tempered<'_> {
    fn space(&self) -> &Space {
        self.inner.space()
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        mut grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        if !batch.is_full() {
            return Err(EvalError::NoData);
        }
        self.inner.evaluate(xs, Batch::Full, log_density, grad.as_deref_mut())?;
        self.temper(xs, log_density, grad);
        Ok(())
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities { conditionals: Some(self), ..Capabilities::default() }
    }
}

/// γ_β's differences: β times the inner target's (its conditionals or evaluated ones) plus
/// (1 − β) times the base's.
impl Conditionals for Tempered<'_> {
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError> {
        self.inner.coordinate_deltas(x, i, out)?;
        let mut lq = vec![0.0; out.len()];
        if let Some(base) = self.base {
            base.coordinate_deltas(x, i, &mut lq);
        }
        for (o, l) in out.iter_mut().zip(&lq) {
            *o = self.mix(*o, |_| *l);
        }
        out[x[i] as usize] = 0.0;
        Ok(())
    }

    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
        self.inner.flip_deltas(x, out)?;
        let mut two = [0.0; 2];
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.mix(*o, |base| {
                base.coordinate_deltas(x, i, &mut two);
                two[1 - x[i] as usize]
            });
        }
        Ok(())
    }

    fn cheap_flip_delta(&self, x: &[u32], i: usize) -> Option<f64> {
        let mut two = [0.0; 2];
        self.inner.cheap_flip_delta(x, i).map(|v| {
            self.mix(v, |base| {
                base.coordinate_deltas(x, i, &mut two);
                two[1 - x[i] as usize]
            })
        })
    }
}

/// How to run AIS.
#[derive(Clone, Debug)]
pub struct AisOptions {
    /// Independent chains n (≥ 2: the standard error needs a spread).
    pub chains: usize,
    /// Number K of annealing steps (transitions per chain), β_k = k / K.
    pub temperatures: usize,
    /// Master seed: chain j draws its base state and every transition from `chain_rng(seed, j)`.
    pub seed: u64,
    /// Worker threads. 1: all chains in one batched `Chains` (the setting for a device target,
    /// which evaluates every chain in one call); 0: rayon's global pool; T > 1: chains split
    /// into T tasks. The result is identical for every value.
    pub threads: usize,
}

/// What [`run_ais`] returns.
#[derive(Clone, Debug)]
pub struct AisEstimate {
    /// log Ẑ = logsumexp(log w) − log n.
    pub log_z: f64,
    /// Standard error of log Ẑ by the delta method on the mean of the weights:
    /// sd(w) / (mean(w) √n), with the sample standard deviation (n − 1) over chains. Valid when
    /// the weights' variance is finite and well estimated (ESS not tiny); with few effective
    /// chains it understates the error, and log Ẑ is biased low (Jensen) by about se²/2.
    pub std_err: f64,
    /// log w of every chain, in chain order.
    pub log_weights: Vec<f64>,
    /// Effective sample size of the weights, (Σ w)² / Σ w², in [1, n].
    pub ess: f64,
    /// Mean acceptance probability over chains and temperatures.
    pub mean_accept: f64,
    /// The chains' states after the last transition (at β = 1), chains × d.
    pub final_states: Vec<u32>,
    /// n.
    pub chains: usize,
    /// K.
    pub temperatures: usize,
}

/// One task's consecutive chains and their running weights.
struct AisTask {
    rngs: Vec<ChainRng>,
    x: Vec<u32>,
    log_w: Vec<f64>,
    /// Σ over temperatures of each chain's acceptance probability.
    accept: Vec<f64>,
    info: Vec<StepInfo>,
    f: Vec<f64>,
    lq: Vec<f64>,
}

impl AisTask {
    /// The weight update at β and one transition of `sampler` targeting γ_β.
    ///
    /// `Chains` cache f and ∇f of a fixed target, so the chains are restarted at every
    /// temperature (`sampler.start` on γ_β at the current states). That start costs one
    /// evaluation of f and ∇f per chain and temperature, which any correct scheme pays too
    /// (γ_β and its gradient at x change with β), and it is what the official AIS code
    /// does (the sampler evaluates the tempered model at x on every step). The weight then
    /// needs no further evaluation: a sampler that caches γ_β(x) gives
    /// f − log q = (γ_β − log q) / β (β > 0); one that does not gets an f-only evaluation.
    /// Measured (`benches/ais.rs`, RBM 100 × 50, 64 chains, K = 100, one thread on the shared
    /// 2-core machine): AIS takes 1.5× (GWG) and 1.3× (DMALA) the time of K plain steps of the
    /// same generic kernel.
    fn advance(
        &mut self,
        target: &dyn Target,
        base: &ProductBase,
        sampler: &dyn Sampler,
        beta_prev: f64,
        beta: f64,
    ) -> Result<(), SamplerError> {
        let tempered = Tempered { inner: target, base: Some(base), beta };
        let mut chains = sampler.start(&tempered, &self.x)?;
        base.log_prob_batch(&self.x, &mut self.lq);
        let gap = beta - beta_prev;
        match chains.log_densities() {
            Some(g) => {
                for ((w, g), l) in self.log_w.iter_mut().zip(g).zip(&self.lq) {
                    *w += gap * ((g - l) / beta);
                }
            }
            None => {
                target.evaluate(&self.x, Batch::Full, &mut self.f, None)?;
                for ((w, f), l) in self.log_w.iter_mut().zip(&self.f).zip(&self.lq) {
                    *w += gap * (f - l);
                }
            }
        }
        chains.try_step(&mut self.rngs, &mut self.info, Batch::Full)?;
        for (a, i) in self.accept.iter_mut().zip(&self.info) {
            *a += i.accept_prob;
        }
        self.x.copy_from_slice(chains.positions());
        Ok(())
    }
}

/// log Z of exp(f) where f = target's log-density (unnormalised), by annealing from `base`
/// along log γ_β = β f + (1−β) log q, β linear on `[0, 1]` with `temperatures` steps, one
/// transition of `sampler` per β. `progress(k)` is called after temperature k (1..=K) on the
/// calling thread. Deterministic in `opts.seed` for any `opts.threads`.
pub fn run_ais(
    target: &dyn Target,
    base: &ProductBase,
    sampler: &dyn Sampler,
    opts: &AisOptions,
    progress: &mut dyn FnMut(usize),
) -> Result<AisEstimate, SamplerError> {
    let space = target.space();
    let (n, n_temps) = (opts.chains, opts.temperatures);
    if n < 2 {
        return Err(base_error(format!("chains must be at least 2 (the standard error needs a spread), got {n}")));
    }
    if n_temps == 0 {
        return Err(base_error("temperatures must be at least 1, got 0"));
    }
    if !base.matches(space) {
        return Err(base_error(format!(
            "the base distribution lives on {:?} d = {} K = {}, the model on {:?} d = {} K = {}",
            base.space.kind,
            base.space.d,
            base.space.k(),
            space.kind,
            space.d,
            space.k()
        )));
    }
    let unsupported = |message: &str| SamplerError::Unsupported { sampler: sampler.name(), message: message.into() };
    if sampler.minibatch().is_some() {
        return Err(unsupported("AIS needs exact transitions; a stochastic-gradient sampler reads minibatches"));
    }
    if sampler.coupling() == Coupling::Joint {
        return Err(unsupported("AIS needs a Markov transition per chain; this sampler couples its particles"));
    }
    let d = space.d;
    let threads = match opts.threads {
        0 => rayon::current_num_threads(),
        t => t,
    };
    let per_task = n.div_ceil(threads);
    let mut tasks: Vec<AisTask> = (0..n)
        .step_by(per_task)
        .map(|first| {
            let m = per_task.min(n - first);
            let mut rngs = chain_rngs(opts.seed, first, m);
            let mut x = vec![0u32; m * d];
            for (row, rng) in x.chunks_mut(d).zip(rngs.iter_mut()) {
                base.sample(rng, row);
            }
            AisTask {
                rngs,
                x,
                log_w: vec![0.0; m],
                accept: vec![0.0; m],
                info: vec![StepInfo::default(); m],
                f: vec![0.0; m],
                lq: vec![0.0; m],
            }
        })
        .collect();
    let pool = if opts.threads > 1 {
        Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(opts.threads)
                .build()
                .map_err(|e| base_error(format!("cannot start {} threads: {e}", opts.threads)))?,
        )
    } else {
        None
    };
    for k in 1..=n_temps {
        let (beta_prev, beta) = ((k - 1) as f64 / n_temps as f64, k as f64 / n_temps as f64);
        let step = |tasks: &mut Vec<AisTask>| {
            tasks.par_iter_mut().try_for_each(|t| t.advance(target, base, sampler, beta_prev, beta))
        };
        match (&pool, tasks.len()) {
            (_, 1) => tasks[0].advance(target, base, sampler, beta_prev, beta)?,
            (Some(pool), _) => pool.install(|| step(&mut tasks))?,
            (None, _) => step(&mut tasks)?,
        }
        progress(k);
    }
    let mut log_weights = Vec::with_capacity(n);
    let mut final_states = Vec::with_capacity(n * d);
    let mut accept = Vec::with_capacity(n);
    for t in &tasks {
        log_weights.extend_from_slice(&t.log_w);
        final_states.extend_from_slice(&t.x);
        accept.extend_from_slice(&t.accept);
    }
    if let Some(j) = log_weights.iter().position(|w| w.is_nan()) {
        return Err(base_error(format!("chain {j} has a NaN log-weight (the model's log-density is NaN on its path)")));
    }
    let (log_z, std_err, ess) = weight_summary(&log_weights);
    Ok(AisEstimate {
        log_z,
        std_err,
        log_weights,
        ess,
        // Summed in chain order, so that the result does not depend on the task split.
        mean_accept: accept.iter().sum::<f64>() / (n * n_temps) as f64,
        final_states,
        chains: n,
        temperatures: n_temps,
    })
}

/// (log mean w, delta-method standard error of it, ESS) of n ≥ 2 log-weights.
pub fn weight_summary(log_w: &[f64]) -> (f64, f64, f64) {
    let n = log_w.len() as f64;
    let log_z = logsumexp(log_w) - n.ln();
    let m = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return (log_z, f64::NAN, f64::NAN);
    }
    // Weights relative to the largest: the ratios below do not depend on the scale.
    let w: Vec<f64> = log_w.iter().map(|l| (l - m).exp()).collect();
    let sum: f64 = w.iter().sum();
    let mean = sum / n;
    let var = w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let std_err = var.sqrt() / (mean * n.sqrt());
    let ess = sum * sum / w.iter().map(|v| v * v).sum::<f64>();
    (log_z, std_err, ess)
}
