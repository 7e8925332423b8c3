//! Infilling runs: the chains of one sequence from BERT's all-masked argmax fill, moved by a
//! registry sampler on the [`InfillTarget`] or by Wang & Cho's site updates, and the distinct final
//! fills ranked by the one-pass energy (the paper's "top K by f", App. I.6). Shared by
//! `dlp infill` and the Table 3 reproduction; the front ends build the sampler (this crate
//! does not depend on the sampler registry).

use super::Vocab;
use super::energy::InfillTarget;
use super::gibbs::gibbs_site;
use crate::Error;
use dlp_core::{Observer, RunOptions, Sampler, States, StepContext, StepInfo, chain_rngs, run_chains};

/// What one infilling run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct InfillRun {
    /// Final states of the chains, chains × |M| categories.
    pub states: Vec<u32>,
    /// Mean acceptance probability over all chain-steps (1 for Wang & Cho).
    pub acceptance: f64,
    /// Mean number of masked tokens changed per chain at each step (length = steps).
    pub changed_per_step: Vec<f64>,
}

/// One ranked fill.
#[derive(Debug, Clone, PartialEq)]
pub struct Fill {
    /// Token ids at the masked positions.
    pub tokens: Vec<u32>,
    /// The whole sequence's token ids.
    pub ids: Vec<u32>,
    /// Its one-pass energy f.
    pub energy: f64,
}

/// Sums accept probabilities and changed tokens per step; calls `progress` with the chains
/// it has seen step.
struct Tally<'a> {
    accept: f64,
    n: usize,
    changed: Vec<f64>,
    progress: &'a (dyn Fn(usize) + Sync),
}

impl Observer for Tally<'_> {
    fn observe(&mut self, ctx: &StepContext, _: States<'_>, info: &[StepInfo]) {
        self.accept += info.iter().map(|i| i.accept_prob).sum::<f64>();
        self.n += info.len();
        if self.changed.len() < ctx.step {
            self.changed.resize(ctx.step, 0.0);
        }
        self.changed[ctx.step - 1] += info.iter().map(|i| f64::from(i.n_changed)).sum::<f64>();
        (self.progress)(info.len());
    }
}

/// Runs `chains` chains of `steps` steps on `target`, all starting from BERT's argmax fill
/// with every masked slot `[MASK]` ([`InfillTarget::argmax_init`]): `sampler` when given (any
/// categorical registry sampler), Wang & Cho's site update when `None` (one masked slot per
/// step, in turn). Chain j draws from stream j + 1
/// of `seed`; the chains run as one batch (one BERT call per evaluation for all chains).
/// `progress` is told how many chain-steps were done, as they are done.
pub fn sample_infill(
    target: &InfillTarget,
    vocab: &Vocab,
    sampler: Option<&dyn Sampler>,
    chains: usize,
    steps: usize,
    seed: u64,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<InfillRun, Error> {
    let x0 = start_states(target, vocab, chains)?;
    sample_infill_from(target, vocab, sampler, x0, chains, steps, seed, progress)
}

/// The chains' common start: BERT's argmax fill with every masked slot `[MASK]`
/// ([`InfillTarget::argmax_init`]), repeated for `chains` chains (chains × |M|).
pub fn start_states(target: &InfillTarget, vocab: &Vocab, chains: usize) -> Result<Vec<u32>, Error> {
    let d = target.masked().len();
    let init = target.argmax_init(vocab.mask())?;
    Ok(init.iter().copied().cycle().take(chains * d).collect())
}

/// [`sample_infill`] from given states `x0` (chains × |M|): the front ends that adapt a step
/// size first ([`start_states`], a warm-up, then the kept steps from where it left the chains).
#[allow(clippy::too_many_arguments)]
pub fn sample_infill_from(
    target: &InfillTarget,
    vocab: &Vocab,
    sampler: Option<&dyn Sampler>,
    x0: Vec<u32>,
    chains: usize,
    steps: usize,
    seed: u64,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<InfillRun, Error> {
    let d = target.masked().len();
    let c = chains.max(1) as f64;
    match sampler {
        Some(s) => {
            // One task: the whole batch of chains goes through BERT together.
            let opts = RunOptions { seed, threads: 1, chains_per_task: chains.max(1) };
            let make = |_, _| Tally { accept: 0.0, n: 0, changed: vec![0.0; steps], progress };
            let out = run_chains(s, target, &x0, steps, &opts, make).map_err(|e| match e {
                dlp_core::SamplerError::Eval(dlp_core::EvalError::Device { device, message }) => {
                    Error::Device { device, message }
                }
                other => Error::Param(other.to_string()),
            })?;
            let (mut accept, mut n, mut changed) = (0.0, 0, vec![0.0; steps]);
            for o in &out.observers {
                accept += o.accept;
                n += o.n;
                for (a, b) in changed.iter_mut().zip(&o.changed) {
                    *a += b;
                }
            }
            Ok(InfillRun {
                states: out.final_states,
                acceptance: if n > 0 { accept / n as f64 } else { f64::NAN },
                changed_per_step: changed.into_iter().map(|x| x / c).collect(),
            })
        }
        None => {
            // One step = one site (slot t mod |M|, a systematic scan): one BERT call per step
            // and at most one token changed, the budget of GWG's step; the paper does not say
            // how far Gibbs moves per step, and a whole scan per step would cost |M| calls.
            let mut xs = x0;
            let mut rngs = chain_rngs(seed, 0, chains);
            let mut changed = Vec::with_capacity(steps);
            for t in 0..steps {
                let j = t % d;
                let before: Vec<u32> = xs.iter().skip(j).step_by(d).copied().collect();
                gibbs_site(target, &mut xs, &mut rngs, j, vocab.mask())?;
                let moved = xs.iter().skip(j).step_by(d).zip(&before).filter(|(a, b)| a != b).count();
                changed.push(moved as f64 / c);
                progress(chains);
            }
            Ok(InfillRun { states: xs, acceptance: 1.0, changed_per_step: changed })
        }
    }
}

/// The distinct fills among `states` (chains × |M|), best first by one-pass energy (ties by
/// token ids), at most `k` of them.
pub fn top_fills(target: &InfillTarget, states: &[u32], k: usize) -> Result<Vec<Fill>, Error> {
    let d = target.masked().len();
    let mut distinct: Vec<Vec<u32>> = states.chunks_exact(d).map(<[u32]>::to_vec).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let ids: Vec<Vec<u32>> = distinct.iter().map(|x| target.fill_ids(x)).collect();
    let energies = target.energies(&ids)?;
    let mut fills: Vec<Fill> = ids
        .into_iter()
        .zip(energies)
        .map(|(ids, energy)| Fill { tokens: target.masked().iter().map(|&i| ids[i]).collect(), ids, energy })
        .collect();
    fills.sort_by(|a, b| b.energy.total_cmp(&a.energy).then_with(|| a.tokens.cmp(&b.tokens)));
    fills.truncate(k);
    Ok(fills)
}
