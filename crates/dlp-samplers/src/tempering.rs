//! `pt-<K>:<inner>`: parallel tempering (replica exchange) around any registry sampler whose
//! chains can be moved (every sampler on the one MH kernel, [`crate::mh`]).
//!
//! Swendsen & Wang, "Replica Monte Carlo simulation of spin glasses", PRL 1986; Geyer,
//! "Markov chain Monte Carlo maximum likelihood", 1991. The ladder adaptation toward equal
//! swap rates follows the idea of Vousden, Farr & Mandel, "Dynamic temperature selection for
//! parallel tempering in Markov chain Monte Carlo simulations", MNRAS 2016 (their Eq. 15
//! moves log temperature gaps by the difference of neighbouring swap rates), here with the
//! hottest β fixed and run only in the warm-up.
//!
//! Each user chain j carries K replicas x₁ … x_K, replica k targeting π_k ∝ exp(β_k f) with
//! 1 = β₁ > β₂ > … > β_K > 0 (`--ladder`; default β_k = 2^{−(k−1)}). One step:
//!
//! 1. every replica takes one step of the inner sampler on γ_k = β_k f
//!    ([`crate::ais::Tempered`] without a base), replica k of chain j drawing from its own
//!    stream, derived once from chain j's stream at the first step;
//! 2. with probability ½ the even pairs (1,2), (3,4), … and otherwise the odd pairs (2,3),
//!    (4,5), … each propose to exchange their states (one uniform from chain j's stream picks
//!    the set; the pairs are disjoint, so their tests are independent); the exchange of
//!    replicas k and k+1 is accepted with min(1, exp((β_k − β_{k+1})(f(x_{k+1}) − f(x_k)))),
//!    one uniform each, in order of k (the "stochastic even–odd" scheme of Syed, Bouchard-Côté,
//!    Deligiannidis & Doucet, JRSS-B 2022, §2).
//!
//! Exactness on the product space: step 1 is the product of the inner kernels, each
//! π_k-invariant, so it leaves Π_k π_k invariant; each exchange is a Metropolis move of the
//! symmetric proposal "swap k and k+1" on Π_k π_k, and the choice of the pair set does not
//! depend on the state, so step 2 is a mixture of products of Π_k π_k-reversible kernels. The
//! cold replica's marginal is π. [`Tempering::product_row`] gives the exact law of one step on
//! the product space with the functions the step uses; `crates/dlp-exact/tests/tempering.rs`
//! checks it against an independent construction (inner reference matrices, Kronecker
//! product, swap matrix) and checks that Π_k π_k is the unique stationary law
//! (irreducible, aperiodic). The row has no [`ExactKernel`] on the model's own space: the
//! cold replica alone is not a Markov chain.
//!
//! Ladder adaptation ([`Tempering::adapt`], `dlp sample`'s warm-up when `--ladder` is not
//! given): with β₁ = 1 and β_K fixed, the gaps g_k = ln β_k − ln β_{k+1} move as
//! ln g_k += (a_k − ā)/√(w + 1) after window w (a_k the pair's mean swap acceptance, ā their
//! mean), rescaled to their fixed sum; pairs that swap often get wider gaps. The kept run uses
//! the last window's ladder, frozen, so the kept samples come from one fixed kernel. An inner
//! step size the inner sampler needs and the request does not give is adapted first, at
//! β = 1, by the inner sampler's own rule (the first half of the warm-up; the ladder gets the
//! rest).
//!
//! Cost per step: K inner steps, plus one evaluation (with gradient when the inner sampler
//! uses gradients) per replica state moved by an exchange, counted in the step's record;
//! f(x_k) comes from the replicas' cached β_k f (evaluated when the inner chains keep none).

use crate::ais::Tempered;
use crate::dual_averaging::{ADAPT, AdaptOptions, Adapted};
use crate::proposal::{accept_prob, mh_accept};
use crate::spec::{Build, Inner, Wrapper};
use crate::spec::{LADDER, NO_DEFAULTS, NO_TESTS, STEP_SIZE_OPTIONAL, SamplerName, SamplerParams, SamplerSpec};
use crate::tune::adapt_inner;
use dlp_core::rng::derive_seed;
use dlp_core::{
    Batch, ChainRng, Chains, EvalError, RunOptions, Sampler, SamplerError, Space, StepInfo, Target, TargetExt,
    Transition, chain_rng, chain_rngs,
};
use rand::RngExt;
use std::collections::BTreeMap;

/// Seed label of the ladder adaptation's windows (`derive_seed(seed, [ADAPT, LADDER_WINDOWS, w])`).
const LADDER_WINDOWS: u64 = 0x1add;

/// Replica exchange of K copies of an inner sampler along an inverse-temperature ladder.
pub struct Tempering {
    inner_name: String,
    inner: Box<dyn Sampler>,
    ladder: Vec<f64>,
}

/// The default ladder of K replicas: β_k = 2^{−(k−1)}.
pub fn default_ladder(k: usize) -> Vec<f64> {
    (0..k).map(|i| 0.5f64.powi(i as i32)).collect()
}

impl Tempering {
    /// `inner` (built with `params`) on `ladder` (1 = β₁ > … > β_K > 0, K ≥ 2).
    pub fn new(inner: &Inner, params: &SamplerParams, ladder: Vec<f64>) -> Result<Self, SamplerError> {
        let bad = |message: String| SamplerError::BadParameter {
            sampler: format!("pt-{}:{}", ladder.len(), inner.name),
            message,
        };
        if ladder.len() < 2 {
            return Err(bad(format!("needs at least 2 replicas, got {}", ladder.len())));
        }
        if ladder[0] != 1.0 {
            return Err(bad(format!("--ladder must start at β = 1 (the target itself), got {}", ladder[0])));
        }
        if let Some(w) = ladder.windows(2).find(|w| !(w[1] > 0.0 && w[1] < w[0])) {
            return Err(bad(format!(
                "--ladder must decrease strictly and stay above 0 (inverse temperatures), got {} after {}",
                w[1], w[0]
            )));
        }
        if inner.spec.wraps() {
            return Err(bad("a wrapper cannot wrap another wrapper".into()));
        }
        if inner.spec.needs_data || inner.spec.particles {
            return Err(bad(format!(
                "cannot wrap {}: it needs a data model or moves interacting particles",
                inner.name
            )));
        }
        let inner_params = SamplerParams { ladder: None, ..params.clone() };
        let sampler = inner.build(&inner_params)?;
        Ok(Tempering { inner_name: inner.name.clone(), inner: sampler, ladder })
    }

    /// Registry constructor for `pt-<K>:<inner>`: `--ladder` (K values) or the default.
    pub fn build(name: &SamplerName, params: &SamplerParams, inner: &Inner) -> Result<Box<dyn Sampler>, SamplerError> {
        let k = name.numbers[0];
        let ladder = params.ladder.clone().unwrap_or_else(|| default_ladder(k));
        if ladder.len() != k {
            return Err(SamplerError::BadParameter {
                sampler: format!("pt-{k}:{}", inner.name),
                message: format!("--ladder has {} values but the name asks for {k} replicas", ladder.len()),
            });
        }
        Ok(Box::new(Tempering::new(inner, params, ladder)?))
    }

    /// The ladder β₁ … β_K.
    pub fn ladder(&self) -> &[f64] {
        &self.ladder
    }

    fn targets<'t>(&self, target: &'t dyn Target) -> Vec<Tempered<'t>> {
        self.ladder.iter().map(|&beta| Tempered { inner: target, base: None, beta }).collect()
    }

    /// Chains whose replica k starts at the rows of `xs[k]` (each n × d).
    pub fn start_replicas<'t>(
        &self,
        target: &'t dyn Target,
        xs: &[Vec<u32>],
    ) -> Result<TemperingChains<'t>, SamplerError> {
        let d = target.space().d;
        let n = xs[0].len() / d;
        let replicas = Replicas::try_new(self.targets(target), |targets| {
            targets.iter().zip(xs).map(|(t, x)| self.inner.start(t, x)).collect::<Result<Vec<_>, _>>()
        })?;
        let mut chains = TemperingChains {
            target,
            ladder: self.ladder.clone(),
            replicas,
            n,
            d,
            streams: Vec::new(),
            info: vec![vec![StepInfo::default(); n]; self.ladder.len()],
            swaps: vec![(0.0, 0); self.ladder.len() - 1],
        };
        let movable = chains.replicas.with_dependent_mut(|_, r| r[0].set_states(&[], &[]).is_some());
        if !movable {
            return Err(SamplerError::BadParameter {
                sampler: self.name(),
                message: format!(
                    "{}'s chains cannot exchange states (samplers on the MH kernel and generic Gibbs can)",
                    self.inner_name
                ),
            });
        }
        Ok(chains)
    }

    /// The exact law of one step from the product state `xs` (K × d: replica k's state at
    /// k·d..(k+1)·d), phase `phase` of the inner sampler: the product of the inner kernels'
    /// rows on the tempered targets, then the exchange step, by the functions `step` uses.
    pub fn product_row(&self, target: &dyn Target, xs: &[u32], phase: usize) -> Result<Vec<Transition>, EvalError> {
        let d = target.space().d;
        let exact = self.inner.exact().expect("every registry sampler that can be wrapped has exact rows");
        let mut law: Vec<Transition> = vec![(Vec::new(), 1.0)];
        for (k, t) in self.targets(target).iter().enumerate() {
            let row = exact.transition_row(t, &xs[k * d..(k + 1) * d], phase)?;
            law = law
                .iter()
                .flat_map(|(z, p)| row.iter().map(move |(y, q)| ([z.as_slice(), y].concat(), p * q)))
                .collect();
        }
        let mut out: BTreeMap<Vec<u32>, f64> = BTreeMap::new();
        for (z, p) in law {
            let f = z.chunks(d).map(|x| target.log_density(x)).collect::<Result<Vec<f64>, _>>()?;
            for first in [0, 1] {
                // The pairs of this set, each exchanged or not: 2^pairs outcomes.
                let pairs: Vec<usize> = (first..self.ladder.len() - 1).step_by(2).collect();
                let probs: Vec<f64> = pairs.iter().map(|&k| accept_prob(self.swap_log_ratio(&f, k))).collect();
                for outcome in 0..1usize << pairs.len() {
                    let mut y = z.clone();
                    let mut q = 0.5 * p;
                    for (b, (&k, &a)) in pairs.iter().zip(&probs).enumerate() {
                        if outcome >> b & 1 == 1 {
                            q *= a;
                            swap_rows(&mut y, d, k);
                        } else {
                            q *= 1.0 - a;
                        }
                    }
                    if q > 0.0 {
                        *out.entry(y).or_insert(0.0) += q;
                    }
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    /// log of the exchange ratio of replicas k and k+1 with f (at β = 1) of every replica.
    fn swap_log_ratio(&self, f: &[f64], k: usize) -> f64 {
        (self.ladder[k] - self.ladder[k + 1]) * (f[k + 1] - f[k])
    }

    /// The row's warm-up tuner: the inner step size when the inner sampler adapts one and the
    /// request gives none (first half of the warm-up, by the inner sampler's own rule toward
    /// its own target acceptance), then the ladder toward equal swap rates (the module doc)
    /// unless the request gives one (then those windows only warm the chains up).
    /// All replicas start at `x0`; the chains run in one batch, so the result does not depend
    /// on `run.threads`.
    pub fn adapt(
        name: &SamplerName,
        params: &SamplerParams,
        inner: &Inner,
        target: &dyn Target,
        x0: &[u32],
        opts: &AdaptOptions,
        run: &RunOptions,
    ) -> Result<Adapted, SamplerError> {
        let k = name.numbers[0];
        let inner_adapts = inner.spec.adapts_step_size();
        let mut params = params.clone();
        let mut x = x0.to_vec();
        // Whole windows, as every adaptation counts them: the inner step size gets half (at
        // least one), the ladder the rest (none with a one-window warm-up: the default ladder).
        let total_windows = (opts.warmup / opts.window).max(1);
        let mut step_windows = 0;
        let mut last_accept = f64::NAN;
        if inner_adapts && params.step_size.is_none() {
            let half = AdaptOptions {
                warmup: (total_windows / 2).max(1) * opts.window,
                target_accept: inner.spec.target_accept,
                ..opts.clone()
            };
            let a = adapt_inner(inner, &params, target, &x, &half, run)?;
            params.step_size = a.step_size;
            params.step_size_min = a.step_size_min.or(params.step_size_min);
            x = a.positions;
            step_windows = a.windows;
            last_accept = a.last_accept;
        }
        // A given ladder stays as given: its windows only warm the chains up.
        let adapt_ladder = params.ladder.is_none();
        let mut ladder = params.ladder.clone().unwrap_or_else(|| default_ladder(k));
        let total = -ladder[k - 1].ln();
        let mut gaps: Vec<f64> = ladder.windows(2).map(|w| w[0].ln() - w[1].ln()).collect();
        let windows = total_windows - step_windows;
        let mut xs = vec![x.clone(); k];
        for w in 0..windows {
            let pt = Tempering::new(inner, &params, ladder.clone())?;
            let mut chains = pt.start_replicas(target, &xs)?;
            let n = chains.n_chains();
            let mut rngs = chain_rngs(derive_seed(run.seed, &[ADAPT, LADDER_WINDOWS, w as u64]), 0, n);
            let mut info = vec![StepInfo::default(); n];
            let mut accept = 0.0;
            for _ in 0..opts.window {
                chains.try_step(&mut rngs, &mut info, Batch::Full).map_err(SamplerError::Eval)?;
                accept += info.iter().map(|i| i.accept_prob).sum::<f64>();
            }
            last_accept = accept / (n * opts.window) as f64;
            xs = chains.replica_positions();
            if !adapt_ladder {
                continue;
            }
            let rates = chains.swap_rates();
            let mean = rates.iter().sum::<f64>() / rates.len() as f64;
            let gain = 1.0 / ((w + 1) as f64).sqrt();
            for (g, a) in gaps.iter_mut().zip(&rates) {
                *g *= (gain * (a - mean)).exp();
            }
            let scale = total / gaps.iter().sum::<f64>();
            gaps.iter_mut().for_each(|g| *g *= scale);
            ladder = std::iter::once(1.0)
                .chain(gaps.iter().scan(0.0, |s, g| {
                    *s += g;
                    Some((-*s).exp())
                }))
                .collect();
            ladder[k - 1] = (-total).exp();
        }
        Ok(Adapted {
            step_size: params.step_size,
            step_size_min: params.step_size_min,
            ladder: (adapt_ladder && windows > 0).then_some(ladder),
            positions: xs.swap_remove(0),
            last_accept,
            windows: step_windows + windows,
        })
    }
}

/// Exchanges rows k and k+1 (each d long) of `y`.
fn swap_rows(y: &mut [u32], d: usize, k: usize) {
    let (a, b) = y[k * d..(k + 2) * d].split_at_mut(d);
    a.swap_with_slice(b);
}

/// The replicas' chains, each borrowing its tempered target.
type ReplicaChains<'a> = Vec<Box<dyn Chains + 'a>>;

// The chains of replica k borrow replica k's tempered target, which the running chains must
// own (a `Sampler::start` returns chains that outlive the call): a self-referential pair, kept
// safe by the `self_cell` crate rather than by hand-written unsafe code.
self_cell::self_cell!(
    struct Replicas<'t> {
        owner: Vec<Tempered<'t>>,
        #[covariant]
        dependent: ReplicaChains,
    }
);

/// Running replica-exchange chains: K replicas per chain, the cold one's states exposed.
pub struct TemperingChains<'t> {
    target: &'t dyn Target,
    ladder: Vec<f64>,
    replicas: Replicas<'t>,
    n: usize,
    d: usize,
    /// Per replica k ≥ 1, per chain, its stream (derived at the first step); replica 1 uses
    /// the chain's own stream.
    streams: Vec<Vec<ChainRng>>,
    info: Vec<Vec<StepInfo>>,
    /// Per adjacent pair: summed acceptance probability and attempts.
    swaps: Vec<(f64, u64)>,
}

impl TemperingChains<'_> {
    /// Mean swap acceptance probability of each adjacent pair since the start (0 for a pair
    /// never tried).
    pub fn swap_rates(&self) -> Vec<f64> {
        self.swaps.iter().map(|&(s, n)| if n == 0 { 0.0 } else { s / n as f64 }).collect()
    }

    /// Every replica's states (K × (n × d)).
    pub fn replica_positions(&self) -> Vec<Vec<u32>> {
        self.replicas.borrow_dependent().iter().map(|c| c.positions().to_vec()).collect()
    }

    /// f (at β = 1) of every replica's states, K × n: the replicas' cached β_k f divided by
    /// β_k, or evaluated where the inner chains keep none.
    fn energies(&self) -> Result<Vec<Vec<f64>>, EvalError> {
        let target = self.target;
        self.replicas
            .borrow_dependent()
            .iter()
            .zip(&self.ladder)
            .map(|(c, &beta)| match c.log_densities() {
                Some(lf) => Ok(lf.iter().map(|v| v / beta).collect()),
                None => {
                    let mut f = vec![0.0; self.n];
                    target.evaluate(c.positions(), Batch::Full, &mut f, None)?;
                    Ok(f)
                }
            })
            .collect()
    }
}

impl Chains for TemperingChains<'_> {
    fn n_chains(&self) -> usize {
        self.n
    }

    /// The cold replica's states.
    fn positions(&self) -> &[u32] {
        self.replicas.borrow_dependent()[0].positions()
    }

    /// f of the cold replica's states (β₁ = 1), when its chains keep it.
    fn log_densities(&self) -> Option<&[f64]> {
        self.replicas.borrow_dependent()[0].log_densities()
    }

    /// The record of chain j: the cold replica's move (its acceptance and proposal), with
    /// `n_changed` the coordinates its state changed by in all (move and exchange), and the
    /// evaluations of all replicas plus those of the exchanged states.
    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], batch: Batch<'_>) -> Result<(), EvalError> {
        let (n, d, kk) = (self.n, self.d, self.ladder.len());
        if self.streams.is_empty() {
            let seeds: Vec<u64> = rngs.iter_mut().map(|r| r.random()).collect();
            self.streams = (1..kk).map(|k| seeds.iter().map(|&s| chain_rng(s, k)).collect()).collect();
        }
        let before = self.positions().to_vec();
        let (streams, rep_info) = (&mut self.streams, &mut self.info);
        self.replicas.with_dependent_mut(|_, reps| -> Result<(), EvalError> {
            for (k, chains) in reps.iter_mut().enumerate() {
                let rng = if k == 0 { &mut *rngs } else { &mut streams[k - 1][..] };
                chains.try_step(rng, &mut rep_info[k], batch)?;
            }
            Ok(())
        })?;
        let f = self.energies()?;
        // Per chain, which replica's state each rung holds after the exchanges (a permutation
        // of 0..K); only the rungs whose state changed are copied and moved.
        let mut moved: Vec<Vec<usize>> = vec![Vec::new(); kk];
        let mut xs: Vec<Vec<u32>> = vec![Vec::new(); kk];
        let (mut fj, mut from) = (vec![0.0; kk], vec![0usize; kk]);
        let uses_gradients = self.info.iter().flatten().any(|i| i.grad_evals > 0);
        let reps = self.replicas.borrow_dependent();
        for j in 0..n {
            let first = if rngs[j].random::<f64>() < 0.5 { 0 } else { 1 };
            for k in 0..kk {
                (fj[k], from[k]) = (f[k][j], k);
            }
            for k in (first..kk - 1).step_by(2) {
                let log_ratio = (self.ladder[k] - self.ladder[k + 1]) * (fj[k + 1] - fj[k]);
                let (accepted, p) = mh_accept(log_ratio, &mut rngs[j]);
                self.swaps[k].0 += p;
                self.swaps[k].1 += 1;
                if accepted {
                    fj.swap(k, k + 1);
                    from.swap(k, k + 1);
                }
            }
            for k in (0..kk).filter(|&k| from[k] != k) {
                moved[k].push(j);
                xs[k].extend_from_slice(&reps[from[k]].positions()[j * d..(j + 1) * d]);
            }
        }
        self.replicas.with_dependent_mut(|_, reps| -> Result<(), EvalError> {
            for (k, chains) in reps.iter_mut().enumerate() {
                // `start_replicas` refused chains that cannot be moved.
                chains.set_states(&moved[k], &xs[k]).unwrap_or(Ok(()))?;
            }
            Ok(())
        })?;
        let after = self.positions();
        for j in 0..n {
            let cold = self.info[0][j];
            let moves = (0..kk).filter(|&k| moved[k].binary_search(&j).is_ok()).count() as u32;
            let changed = before[j * d..(j + 1) * d].iter().zip(&after[j * d..(j + 1) * d]).filter(|(a, b)| a != b);
            info[j] = StepInfo {
                n_changed: changed.count() as u32,
                density_evals: self.info.iter().map(|r| r[j].density_evals).sum::<u32>() + moves,
                grad_evals: self.info.iter().map(|r| r[j].grad_evals).sum::<u32>() + moves * uses_gradients as u32,
                ..cold
            };
        }
        Ok(())
    }
}

impl Sampler for Tempering {
    fn name(&self) -> String {
        format!("pt-{}:{}", self.ladder.len(), self.inner_name)
    }

    /// Every replica starts at the rows of `x0`.
    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        target.space().check_states(x0).map_err(SamplerError::BadInitialState)?;
        let xs = vec![x0.to_vec(); self.ladder.len()];
        Ok(Box::new(self.start_replicas(target, &xs)?))
    }
}

/// The product space of K replicas of `space` (K·d coordinates of its kind), on which the
/// exact suite indexes [`Tempering::product_row`]'s states.
pub fn product_space(space: &Space, k: usize) -> Space {
    Space { d: space.d * k, ..space.clone() }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `pt-<K>:<inner>`.
pub const PT: SamplerSpec = SamplerSpec {
    stem: "pt",
    counts: &[1],
    numbers: &["K"],
    params: &[STEP_SIZE_OPTIONAL, LADDER],
    build: Build::Wrapper(Wrapper { build: Tempering::build, adapt: Tempering::adapt }),
    doc: "parallel tempering: K replicas of the sampler named after the colon (`pt-4:gwg`) at inverse \
          temperatures `--ladder` (default 1, ½, ¼, …; adapted toward equal swap rates in `dlp sample`'s \
          warm-up), stochastic even–odd exchanges; `--step-size` goes to the inner sampler",
    paper: "baseline (Swendsen & Wang 1986; Geyer 1991)",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: crate::spec::ergodic_everywhere,
    target_accept: crate::dual_averaging::MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec {
        names: &["pt-2:dmala", "pt-3:rwm", "pt-2:gibbs", "pt-2:gwg", "pt-2:lb"],
        step_size: Some(0.75),
        ..NO_TESTS
    },
    defaults: NO_DEFAULTS,
};

use crate::spec::TestSpec;

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};
    use std::collections::HashMap;

    /// `name` as an inner sampler, resolved from the rows these tests wrap (the registry's
    /// resolution is tested in `registry.rs`, which lists this module).
    pub(crate) fn inner(name: &str) -> Inner {
        let parsed = SamplerName::parse(name);
        let rows: [&'static SamplerSpec; 7] = [
            &crate::dlmc::DLMC,
            &crate::locally_balanced::LB,
            &crate::gwg::GWG,
            &crate::rwm::RWM,
            &crate::dlp::DMALA,
            &crate::gibbs::GIBBS,
            &crate::block_gibbs::BG,
        ];
        let spec = rows.into_iter().find(|s| s.stem == parsed.stem).expect("a row these tests wrap");
        Inner { name: name.to_string(), spec, parsed }
    }

    fn pt(name: &str, step: Option<f64>, ladder: &[f64]) -> Tempering {
        Tempering::new(&inner(name), &SamplerParams { step_size: step, ..Default::default() }, ladder.to_vec()).unwrap()
    }

    /// One step of `n` chains all at the product state `xs` against the exact row: every
    /// reachable product state within 5 standard errors (a normal tail of 5.7e-7 per state;
    /// with ≤ 729 states the test fails by chance with probability < 1e-3), nothing outside.
    fn step_follows_product_row(pt: &Tempering, t: &dyn Target, xs: &[u32], n: usize, seed: u64) {
        let d = t.space().d;
        let k = pt.ladder().len();
        let per_replica: Vec<Vec<u32>> = xs.chunks(d).map(|x| x.repeat(n)).collect();
        let mut chains = pt.start_replicas(t, &per_replica).unwrap();
        let mut rngs = chain_rngs(seed, 0, n);
        let mut info = vec![StepInfo::default(); n];
        chains.step(&mut rngs, &mut info);
        let reps = chains.replica_positions();
        let mut counts: HashMap<Vec<u32>, usize> = HashMap::new();
        for j in 0..n {
            let z: Vec<u32> = (0..k).flat_map(|r| reps[r][j * d..(j + 1) * d].to_vec()).collect();
            *counts.entry(z).or_insert(0) += 1;
        }
        let row = pt.product_row(t, xs, 0).unwrap();
        assert!((row.iter().map(|r| r.1).sum::<f64>() - 1.0).abs() < 1e-12);
        for (z, p) in &row {
            let emp = counts.remove(z).unwrap_or(0) as f64 / n as f64;
            let se = (p * (1.0 - p) / n as f64).sqrt();
            assert!((emp - p).abs() <= 5.0 * se + 3.0 / n as f64, "{}: {z:?}: empirical {emp}, exact {p}", pt.name());
        }
        assert!(counts.is_empty(), "{}: states outside the exact row: {counts:?}", pt.name());
        // The replicas' caches hold β_k f of their (possibly exchanged) states.
        let f = chains.energies().unwrap();
        for (r, fr) in f.iter().enumerate() {
            for (y, fy) in reps[r].chunks(d).zip(fr) {
                assert!((t.log_density(y).unwrap() - fy).abs() < 1e-10, "replica {r}: stale f at {y:?}");
            }
        }
    }

    #[test]
    fn step_follows_the_product_row() {
        let q = Quadratic::spec_tiny();
        step_follows_product_row(&pt("dlmc", Some(0.8), &[1.0, 0.4]), &q, &[1, 0, 1, 0, 1, 1], 40_000, 3);
        step_follows_product_row(&pt("lb", None, &[1.0, 0.4]), &q, &[0, 1, 1, 1, 0, 0], 40_000, 7);
        step_follows_product_row(&pt("gwg", None, &[1.0, 0.3]), &q, &[1, 1, 0, 0, 0, 1], 40_000, 8);
        step_follows_product_row(&pt("rwm", Some(0.75), &[1.0, 0.5, 0.2]), &q, &[0, 0, 1, 1, 1, 0, 0, 1, 0], 40_000, 4);
        let cat = PairwiseCategorical::spec_small();
        step_follows_product_row(&pt("dmala", Some(0.6), &[1.0, 0.3]), &cat, &[1, 2, 0, 0], 40_000, 5);
        step_follows_product_row(&pt("gibbs", None, &[1.0, 0.5, 0.2]), &cat, &[1, 2, 0, 0, 2, 2], 40_000, 6);
    }

    #[test]
    fn ladder_adaptation_equalises_swap_rates_and_freezes() {
        // A 6-site chain model with strong couplings: swap rates differ much along the
        // default ladder. Adaptation must bring the pairs' rates closer together, keep the
        // ends, and give the same result for any thread count.
        let (d, c) = (6usize, 1.2);
        let mut w = vec![0.0; d * d];
        for i in 0..d - 1 {
            w[i * d + i + 1] = c;
        }
        let q = Quadratic::new(Space::binary(d), w, vec![-0.5 * c; d]);
        let name = SamplerName::parse("pt-4:rwm");
        let opts = AdaptOptions { warmup: 2000, window: 100, ..AdaptOptions::default() };
        let run = |threads| RunOptions { seed: 9, threads, chains_per_task: 0 };
        let x0 = vec![0u32; 16 * d];
        let params = SamplerParams { step_size: Some(1.0), ..Default::default() };
        let rwm = inner("rwm");
        let a = Tempering::adapt(&name, &params, &rwm, &q, &x0, &opts, &run(1)).unwrap();
        let b = Tempering::adapt(&name, &params, &rwm, &q, &x0, &opts, &run(2)).unwrap();
        assert_eq!(a, b);
        let ladder = a.ladder.clone().unwrap();
        assert_eq!(ladder[0], 1.0);
        assert!((ladder[3] - 0.125).abs() < 1e-12, "{ladder:?}");
        assert!(ladder.windows(2).all(|w| w[1] < w[0]), "{ladder:?}");
        assert_eq!(a.step_size, Some(1.0), "a given inner step size is kept");
        let given = SamplerParams { ladder: Some(vec![1.0, 0.7, 0.3, 0.125]), ..params.clone() };
        let g = Tempering::adapt(&name, &given, &rwm, &q, &x0, &opts, &run(1)).unwrap();
        assert_eq!(g.ladder, None, "a given ladder is not adapted (the session keeps it)");
        assert_eq!(g.windows, 20);
        // Swap rates measured on fresh runs of the default and the adapted ladder.
        let spread = |ladder: Vec<f64>| {
            let pt = Tempering::new(&rwm, &params, ladder).unwrap();
            let mut ch = pt.start_replicas(&q, &vec![x0.clone(); 4]).unwrap();
            let mut rngs = chain_rngs(77, 0, 16);
            let mut info = vec![StepInfo::default(); 16];
            for _ in 0..2000 {
                ch.step(&mut rngs, &mut info);
            }
            let r = ch.swap_rates();
            r.iter().cloned().fold(f64::MIN, f64::max) - r.iter().cloned().fold(f64::MAX, f64::min)
        };
        let (before, after) = (spread(default_ladder(4)), spread(ladder.clone()));
        assert!(after < before, "swap-rate spread {before} → {after} with {ladder:?}");
    }
}
