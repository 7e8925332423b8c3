//! Block Gibbs samplers: `bg-<k>` (Gibbs on random blocks of k coordinates) and
//! `block-gibbs` (RBM alternating hidden/visible Gibbs).
//!
//! **`bg-<k>`** — spec `reproduction.md` §2, row `bg-k` (`bg-1` is the paper's Gibbs-1 in
//! the sampling plots). Blocks come from a random permutation of the coordinates consumed k
//! at a time and reshuffled when exhausted (the last block of a pass is shorter when k does
//! not divide d). The block is redrawn from its exact conditional: all K^k settings are
//! enumerated and one is drawn ∝ exp f. The code shares one permutation across all chains;
//! here **each chain draws its own permutation from its own stream** — the law of each
//! chain's path is the same, chains are just not synchronised (and results do not depend on
//! how chains are split over tasks). [`ExactKernel::transition_row`] returns the first-step
//! law averaged over the schedule: the first block of a uniformly random permutation is a
//! uniformly random k-subset, so the row is the average over all k-subsets of the block
//! conditional. Cost: K^k log-density evaluations per step (2^k binary, as in §2); for k = 1
//! one `coordinate_deltas` call (K evaluations), which models answer in O(1) per value.
//!
//! **`block-gibbs`** — spec §2, row "RBM block Gibbs", the ground truth of the RBM
//! experiments (§3.3). Needs a target with the RBM capability
//! ([`dlp_core::capability::RbmView`]: `dlp_models::Rbm`, directly or inside a
//! `dlp_models::Model`). One step draws
//! h ~ Bernoulli(σ(c + Wᵀu)) then the visibles x ~ Bernoulli(σ(s(b + W h))), with u the
//! visible values (0/1, or ±1 for spin visibles) and s = 1 for binary, 2 for spin
//! (P(u_i = +1 | h) = e^{a}/(e^{a} + e^{−a}) = σ(2a)). Both conditionals are one matrix
//! product over all the task's chains ([`RbmView::hidden_preactivations`],
//! [`RbmView::visible_logits_batch`]; every row is computed by the same kernel, so rows do not
//! interact). The hidden pre-activations of the new state are kept for the next step and give
//! f(x) = b·u + Σ_k softplus(a_k) at no extra cost (`density_evals = 1`).

use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::fast::rbm::RbmCache;
use crate::proposal::sample_logits;
use crate::spec::Build;
use crate::spec::{
    Defaults, DeviceKernel, NO_DEFAULTS, NO_TESTS, PLAIN, SamplerName, SamplerParams, SamplerSpec, TestSpec,
    ergodic_everywhere,
};
use dlp_core::Deltas;
use dlp_core::TargetExt;
use dlp_core::capability::RbmView;
use dlp_core::math::{sigmoid, softmax_in_place};
use dlp_core::{Batch, ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, StepInfo, Target, Transition};
use ndarray::Array2;
use rand::RngExt;
use rand::seq::SliceRandom;
use std::collections::BTreeMap;

/// Largest number of candidate states a block or ball step may enumerate.
pub const MAX_CANDIDATES: usize = 1 << 20;

/// A chain's block schedule: a random permutation of 0..d consumed `size` coordinates at a
/// time, reshuffled from the chain's own stream when exhausted (also before the first block).
#[derive(Clone, Debug)]
pub struct BlockSchedule {
    perm: Vec<usize>,
    pos: usize,
}

impl BlockSchedule {
    /// A schedule over `d` coordinates that shuffles at its first use.
    pub fn new(d: usize) -> Self {
        BlockSchedule { perm: (0..d).collect(), pos: d }
    }

    /// The next block of at most `size` coordinates.
    pub fn next_block(&mut self, size: usize, rng: &mut ChainRng) -> &[usize] {
        if self.pos >= self.perm.len() {
            self.perm.shuffle(rng);
            self.pos = 0;
        }
        let start = self.pos;
        self.pos = (start + size).min(self.perm.len());
        &self.perm[start..self.pos]
    }
}

/// Every `size`-subset of 0..d in lexicographic order (all of 0..d when size ≥ d): the
/// equally likely first blocks of a uniformly random permutation.
pub fn first_blocks(d: usize, size: usize) -> Vec<Vec<usize>> {
    let size = size.min(d);
    let mut out = Vec::new();
    let mut cur: Vec<usize> = (0..size).collect();
    loop {
        out.push(cur.clone());
        // Advance the rightmost position that can still move.
        let Some(p) = (0..size).rev().find(|&p| cur[p] < d - size + p) else { return out };
        cur[p] += 1;
        for q in p + 1..size {
            cur[q] = cur[q - 1] + 1;
        }
    }
}

/// The exact conditional of `block` at `x` (whose log-density is `f_x`): `ys` receives every
/// setting of the block (K^|block| rows of length d, x elsewhere) and `logw` their
/// log-densities f(y) of the target of `deltas`. A single coordinate uses
/// [`Deltas::coordinate_deltas`] (f_x + delta). Returns the number of log-density
/// evaluations, or the target's error.
pub fn block_conditional(
    deltas: &Deltas<'_>,
    x: &[u32],
    f_x: f64,
    block: &[usize],
    ys: &mut Vec<u32>,
    logw: &mut Vec<f64>,
) -> Result<u32, EvalError> {
    let target = deltas.target();
    let k = target.space().k();
    let n = k.pow(block.len() as u32);
    ys.clear();
    for r in 0..n {
        ys.extend_from_slice(x);
        let row = ys.len() - x.len();
        let mut code = r;
        for &i in block.iter().rev() {
            ys[row + i] = (code % k) as u32;
            code /= k;
        }
    }
    logw.clear();
    logw.resize(n, 0.0);
    if block.len() == 1 {
        deltas.coordinate_deltas(x, block[0], logw)?;
        logw.iter_mut().for_each(|v| *v += f_x);
    } else {
        target.log_density_batch(ys, logw)?;
    }
    Ok(n as u32)
}

/// Gibbs on random blocks of `k` coordinates (`bg-<k>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockGibbs {
    /// Block size (≥ 1).
    pub k: usize,
}

impl BlockGibbs {
    /// Checks `k ≥ 1`.
    pub fn new(k: usize) -> Result<Self, SamplerError> {
        if k == 0 {
            return Err(SamplerError::BadParameter {
                sampler: "bg-0".into(),
                message: "block size k = 0; k must be at least 1".into(),
            });
        }
        Ok(BlockGibbs { k })
    }

    /// Registry constructor for `bg-<k>`.
    pub fn build(name: &SamplerName, _: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        Ok(Box::new(BlockGibbs::new(name.numbers[0])?))
    }
}

impl Sampler for BlockGibbs {
    fn name(&self) -> String {
        format!("bg-{}", self.k)
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let b = self.k.min(space.d) as u32;
        if space.k().checked_pow(b).is_none_or(|n| n > MAX_CANDIDATES) {
            return Err(SamplerError::BadParameter {
                sampler: self.name(),
                message: format!(
                    "block size k = {} needs {}^{b} candidate states (limit {MAX_CANDIDATES})",
                    self.k,
                    space.k()
                ),
            });
        }
        let d = space.d;
        let n = x0.len() / d;
        let mut f = vec![0.0; n];
        target.log_density_batch(x0, &mut f)?;
        // bg-1 on an RBM: keep each chain's hidden pre-activations (see `RbmCache`).
        let rbm = target.capabilities().rbm.filter(|_| self.k == 1).map(|r| RbmCache::for_site_updates(r, x0));
        Ok(Box::new(BgChains {
            target,
            deltas: Deltas::of(target),
            k: self.k,
            x: x0.to_vec(),
            f,
            schedules: vec![BlockSchedule::new(d); n],
            ys: Vec::new(),
            logw: Vec::new(),
            scratch: Vec::new(),
            rbm,
        }))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for BlockGibbs {
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        let d = target.space().d;
        let blocks = first_blocks(d, self.k);
        let pb = 1.0 / blocks.len() as f64;
        let f_x = target.log_density(x)?;
        let deltas = Deltas::of(target);
        let (mut ys, mut logw) = (Vec::new(), Vec::new());
        let mut row = BTreeMap::new();
        for block in &blocks {
            block_conditional(&deltas, x, f_x, block, &mut ys, &mut logw)?;
            softmax_in_place(&mut logw);
            for (y, p) in ys.chunks(d).zip(&logw) {
                *row.entry(y.to_vec()).or_insert(0.0) += pb * p;
            }
        }
        Ok(crate::gibbs::finish_row(row))
    }
}

struct BgChains<'t> {
    target: &'t dyn Target,
    /// The target's conditionals, looked up once.
    deltas: Deltas<'t>,
    k: usize,
    x: Vec<u32>,
    f: Vec<f64>,
    schedules: Vec<BlockSchedule>,
    ys: Vec<u32>,
    logw: Vec<f64>,
    scratch: Vec<f64>,
    rbm: Option<RbmCache<'t>>,
}

impl Chains for BgChains<'_> {
    fn n_chains(&self) -> usize {
        self.f.len()
    }

    fn positions(&self) -> &[u32] {
        &self.x
    }

    fn log_densities(&self) -> Option<&[f64]> {
        Some(&self.f)
    }

    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], _batch: Batch<'_>) -> Result<(), EvalError> {
        let d = self.target.space().d;
        for j in 0..self.f.len() {
            let x = &mut self.x[j * d..(j + 1) * d];
            let block = self.schedules[j].next_block(self.k, &mut rngs[j]);
            if let Some(cache) = &mut self.rbm {
                let (f, flipped) =
                    cache.site_update(j, x, self.f[j], block[0], &mut self.logw, &mut self.scratch, &mut rngs[j]);
                self.f[j] = f;
                let changed = u32::from(flipped);
                info[j] = StepInfo {
                    accepted: true,
                    accept_prob: 1.0,
                    n_proposed: changed,
                    n_changed: changed,
                    density_evals: 2,
                    grad_evals: 0,
                    data_evals: 0,
                };
                continue;
            }
            let evals = block_conditional(&self.deltas, x, self.f[j], block, &mut self.ys, &mut self.logw)?;
            let r = sample_logits(&self.logw, &mut self.scratch, &mut rngs[j]);
            let y = &self.ys[r * d..(r + 1) * d];
            let changed = x.iter().zip(y).filter(|(a, b)| a != b).count() as u32;
            x.copy_from_slice(y);
            self.f[j] = self.logw[r];
            info[j] = StepInfo {
                accepted: true,
                accept_prob: 1.0,
                n_proposed: changed,
                n_changed: changed,
                density_evals: evals,
                grad_evals: 0,
                data_evals: 0,
            };
        }
        Ok(())
    }
}

/// RBM alternating block Gibbs (`block-gibbs`): h | x, then x | h.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RbmBlockGibbs;

impl RbmBlockGibbs {
    /// Registry constructor for `block-gibbs`.
    pub fn build(_: &SamplerName, _: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        Ok(Box::new(RbmBlockGibbs))
    }

    fn rbm<'t>(&self, target: &'t dyn Target) -> Result<RbmView<'t>, SamplerError> {
        target.capabilities().rbm.ok_or_else(|| SamplerError::Unsupported {
            sampler: self.name(),
            message: format!(
                "the target ({:?} domain, d = {}) is not an RBM; block-gibbs needs an rbm model",
                target.space().kind,
                target.space().d
            ),
        })
    }
}

impl Sampler for RbmBlockGibbs {
    fn name(&self) -> String {
        "block-gibbs".into()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let rbm = self.rbm(target)?;
        target.space().check_states(x0).map_err(SamplerError::BadInitialState)?;
        let a = rbm.hidden_preactivations(x0);
        let f = x0.chunks(rbm.d).zip(a.rows()).map(|(x, ar)| rbm.log_density_from(x, ar.as_slice().unwrap())).collect();
        Ok(Box::new(RbmChains { rbm, x: x0.to_vec(), f, a }))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for RbmBlockGibbs {
    /// Σ_h p(h | x) p(x' | h) over all 2^M hidden vectors and 2^d visible ones (small RBMs
    /// only). Panics if the target is not an RBM.
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        let rbm = self.rbm(target).expect("block-gibbs needs an RBM target");
        let (d, m) = (rbm.d, rbm.m);
        let a = rbm.hidden_preactivations(x);
        let hs = Array2::from_shape_fn((1 << m, m), |(r, k)| ((r >> k) & 1) as f64);
        let l = rbm.visible_logits_batch(&hs);
        let mut row = BTreeMap::new();
        for (h, lr) in hs.rows().into_iter().zip(l.rows()) {
            let ph: f64 =
                h.iter().zip(a.row(0)).map(|(&hk, &ak)| if hk == 1.0 { sigmoid(ak) } else { sigmoid(-ak) }).product();
            for code in 0..1usize << d {
                let y: Vec<u32> = (0..d).map(|i| ((code >> (d - 1 - i)) & 1) as u32).collect();
                let py: f64 =
                    y.iter().zip(lr).map(|(&yi, &li)| if yi == 1 { sigmoid(li) } else { sigmoid(-li) }).product();
                *row.entry(y).or_insert(0.0) += ph * py;
            }
        }
        Ok(crate::gibbs::finish_row(row))
    }
}

struct RbmChains<'t> {
    rbm: RbmView<'t>,
    x: Vec<u32>,
    f: Vec<f64>,
    /// Hidden pre-activations of the current states (n × M).
    a: Array2<f64>,
}

impl Chains for RbmChains<'_> {
    fn n_chains(&self) -> usize {
        self.f.len()
    }

    fn positions(&self) -> &[u32] {
        &self.x
    }

    fn log_densities(&self) -> Option<&[f64]> {
        Some(&self.f)
    }

    fn try_step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo], _batch: Batch<'_>) -> Result<(), EvalError> {
        let (d, m) = (self.rbm.d, self.rbm.m);
        let n = self.f.len();
        let mut h = Array2::<f64>::zeros((n, m));
        for (j, (mut hr, ar)) in h.rows_mut().into_iter().zip(self.a.rows()).enumerate() {
            for (hk, &ak) in hr.iter_mut().zip(ar) {
                *hk = f64::from(u8::from(rngs[j].random::<f64>() < sigmoid(ak)));
            }
        }
        let l = self.rbm.visible_logits_batch(&h);
        let mut changed = vec![0u32; n];
        for (j, lr) in l.rows().into_iter().enumerate() {
            for (xi, &li) in self.x[j * d..(j + 1) * d].iter_mut().zip(lr) {
                let new = u32::from(rngs[j].random::<f64>() < sigmoid(li));
                changed[j] += u32::from(new != *xi);
                *xi = new;
            }
        }
        self.a = self.rbm.hidden_preactivations(&self.x);
        for (j, ar) in self.a.rows().into_iter().enumerate() {
            self.f[j] = self.rbm.log_density_from(&self.x[j * d..(j + 1) * d], ar.as_slice().unwrap());
            info[j] = StepInfo {
                accepted: true,
                accept_prob: 1.0,
                n_proposed: changed[j],
                n_changed: changed[j],
                density_evals: 1,
                grad_evals: 0,
                data_evals: 0,
            };
        }
        Ok(())
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `bg` (`bg-<…>`).
pub const BG: SamplerSpec = SamplerSpec {
    stem: "bg",
    counts: &[1],
    numbers: &["k"],
    params: &[],
    build: Build::Plain(BlockGibbs::build),
    doc: "Gibbs on random blocks of k coordinates (`bg-1` = the paper's Gibbs-1)",
    paper: "baseline",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["bg-1", "bg-2"], schedule_memory: true, ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

/// The registry row of `block-gibbs`.
pub const BLOCK_GIBBS: SamplerSpec = SamplerSpec {
    stem: "block-gibbs",
    counts: PLAIN,
    numbers: &[],
    params: &[],
    build: Build::Plain(RbmBlockGibbs::build),
    doc: "RBM alternating hidden/visible block Gibbs",
    paper: "baseline",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["block-gibbs"], ..NO_TESTS },
    defaults: Defaults { device: Some(DeviceKernel::BlockGibbs), ..NO_DEFAULTS },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};
    use dlp_core::{DomainKind, chain_rngs};
    use dlp_models::{Model, Rbm};

    fn tiny_rbm(domain: DomainKind) -> Rbm {
        Rbm::new(domain, 3, 2, vec![0.9, -0.4, -0.7, 0.5, 0.3, 1.1], vec![0.2, -0.3, 0.1], vec![-0.5, 0.4]).unwrap()
    }

    #[test]
    fn first_blocks_are_all_subsets() {
        assert_eq!(first_blocks(4, 2), vec![vec![0, 1], vec![0, 2], vec![0, 3], vec![1, 2], vec![1, 3], vec![2, 3]]);
        assert_eq!(first_blocks(3, 5), vec![vec![0, 1, 2]]);
        assert_eq!(first_blocks(3, 1).len(), 3);
    }

    #[test]
    fn schedule_visits_every_coordinate_once_per_pass() {
        let mut s = BlockSchedule::new(7);
        let mut rng = chain_rngs(1, 0, 1).pop().unwrap();
        for _ in 0..5 {
            let mut seen = Vec::new();
            for expect in [3, 3, 1] {
                let b = s.next_block(3, &mut rng);
                assert_eq!(b.len(), expect);
                seen.extend_from_slice(b);
            }
            seen.sort();
            assert_eq!(seen, (0..7).collect::<Vec<_>>());
        }
    }

    #[test]
    fn averaged_block_gibbs_is_reversible() {
        let q = Quadratic::spec_tiny();
        check_spec_pi(&q, &SPEC_TINY_PI);
        let c = PairwiseCategorical::spec_small();
        check_spec_pi(&c, &SPEC_SMALL_PI);
        for k in 1..=4 {
            check_exact(&BlockGibbs::new(k).unwrap(), &q, true);
            check_exact(&BlockGibbs::new(k).unwrap(), &c, true);
        }
        // bg-1 averaged over the schedule is random-scan single-site Gibbs.
        let a = matrix(&BlockGibbs::new(1).unwrap(), &q, 0);
        let b = matrix(&crate::gibbs::Gibbs { scan: crate::gibbs::Scan::Random }, &q, 0);
        for (ra, rb) in a.iter().zip(&b) {
            for (pa, pb) in ra.iter().zip(rb) {
                assert!((pa - pb).abs() < 1e-15);
            }
        }
        // A block covering every coordinate draws straight from π.
        let pi = exact_pi(&q);
        for r in matrix(&BlockGibbs::new(3).unwrap(), &q, 0) {
            for (p, e) in r.iter().zip(&pi) {
                assert!((p - e).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn bg_step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        for k in [1, 2] {
            let info = empirical_check(&BlockGibbs::new(k).unwrap(), &q, &[1, 0, 0], 20_000, 40 + k as u64);
            assert!(info.iter().all(|i| i.density_evals == 1 << k));
        }
        empirical_check(&BlockGibbs::new(2).unwrap(), &PairwiseCategorical::spec_small(), &[0, 2], 20_000, 43);
    }

    #[test]
    fn bg_later_steps_use_the_rest_of_the_permutation() {
        // With k = 2 and d = 3, the second block of a pass is the single coordinate the first
        // block left out, so two consecutive steps together touch every coordinate at most once
        // per block and the second step changes at most one coordinate.
        let q = Quadratic::spec_tiny();
        let n = 500;
        let x0: Vec<u32> = (0..n).flat_map(|_| [0, 1, 0]).collect();
        let mut ch = BlockGibbs::new(2).unwrap().start(&q, &x0).unwrap();
        let mut rngs = chain_rngs(9, 0, n);
        let mut info = vec![StepInfo::default(); n];
        ch.step(&mut rngs, &mut info);
        ch.step(&mut rngs, &mut info);
        assert!(info.iter().all(|i| i.density_evals == 2 && i.n_changed <= 1));
        ch.step(&mut rngs, &mut info);
        assert!(info.iter().all(|i| i.density_evals == 4));
    }

    #[test]
    fn rbm_block_gibbs_is_reversible_for_binary_and_spin() {
        for dom in [DomainKind::Binary, DomainKind::Spin] {
            let r = tiny_rbm(dom);
            check_exact(&RbmBlockGibbs, &r, true);
            // Through the Model enum too.
            check_exact(&RbmBlockGibbs, &Model::from(r.clone()), true);
        }
    }

    #[test]
    fn rbm_conditionals_match_hand_computation() {
        // Spin RBM, x = (1,0,1) → u = (+1, −1, +1): a = c + Wᵀu.
        let r = tiny_rbm(DomainKind::Spin);
        let a = r.view().hidden_preactivations(&[1, 0, 1]);
        assert!((a[[0, 0]] - (-0.5 + 0.9 + 0.7 + 0.3)).abs() < 1e-15);
        assert!((a[[0, 1]] - (0.4 - 0.4 - 0.5 + 1.1)).abs() < 1e-15);
        // h = (1, 0): P(u_i = +1 | h) = σ(2(b_i + W_i0)).
        let l = r.view().visible_logits_batch(&Array2::from_shape_vec((1, 2), vec![1.0, 0.0]).unwrap());
        for (i, e) in [0.2 + 0.9, -0.3 - 0.7, 0.1 + 0.3].iter().enumerate() {
            assert!((l[[0, i]] - 2.0 * e).abs() < 1e-15);
        }
    }

    #[test]
    fn rbm_step_follows_transition_row_and_caches_f() {
        for (dom, seed) in [(DomainKind::Binary, 50), (DomainKind::Spin, 51)] {
            let r = tiny_rbm(dom);
            let info = empirical_check(&RbmBlockGibbs, &r, &[0, 1, 1], 20_000, seed);
            assert!(info.iter().all(|i| i.density_evals == 1 && i.accepted));
        }
    }

    #[test]
    fn bg1_rbm_path_follows_the_generic_rows_and_keeps_f() {
        // bg-1 on an RBM takes the cached pre-activation path (`fast::rbm::RbmCache`). One-step rows
        // against the exact rows (built from `Rbm::coordinate_deltas`): ≤ 2 states per row,
        // > 5σ with probability 5.7e−7 each, 6 rows → false-failure rate < 1e−5.
        use crate::fast::rbm::tests::{check_cached_f, random_rbm};
        for (dom, seed) in [(DomainKind::Binary, 80), (DomainKind::Spin, 81)] {
            let r = tiny_rbm(dom);
            for x in [[0, 0, 0], [1, 0, 1], [1, 1, 1]] {
                let info = empirical_check(&BlockGibbs::new(1).unwrap(), &r, &x, 40_000, seed);
                assert!(info.iter().all(|i| i.density_evals == 2 && i.n_changed <= 1));
            }
            // Refreshes every d = 12 steps; f (from the cached a) checked after every step.
            let big = random_rbm(dom, 12, 7, seed);
            let x0: Vec<u32> = (0..6 * 12).map(|i| (i % 4 == 0) as u32).collect();
            assert!(check_cached_f(&BlockGibbs::new(1).unwrap(), &big, &x0, 500) > 300);
        }
    }

    #[test]
    fn rbm_chains_do_not_interact() {
        // Rows of the matrix products must not depend on the batch: chains stepped together
        // and one by one (same streams) must agree bit for bit.
        let r = tiny_rbm(DomainKind::Spin);
        let n = 37;
        let x0: Vec<u32> = (0..n * 3).map(|v| (v % 2) as u32).collect();
        let mut all = RbmBlockGibbs.start(&r, &x0).unwrap();
        let mut rngs = chain_rngs(3, 0, n);
        let mut info = vec![StepInfo::default(); n];
        for _ in 0..20 {
            all.step(&mut rngs, &mut info);
        }
        for j in 0..n {
            let mut one = RbmBlockGibbs.start(&r, &x0[j * 3..(j + 1) * 3]).unwrap();
            let mut rng = chain_rngs(3, j, 1);
            let mut inf = [StepInfo::default()];
            for _ in 0..20 {
                one.step(&mut rng, &mut inf);
            }
            assert_eq!(one.positions(), &all.positions()[j * 3..(j + 1) * 3]);
            assert_eq!(one.log_densities().unwrap()[0], all.log_densities().unwrap()[j]);
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = BlockGibbs::new(0).unwrap_err();
        assert!(e.to_string().contains("k = 0"), "{e}");
        let e = RbmBlockGibbs.start(&Quadratic::spec_tiny(), &[0, 0, 0]).err().unwrap();
        assert!(e.to_string().contains("not an RBM"), "{e}");
        let big = Quadratic::new(dlp_core::Space::binary(30), vec![0.0; 900], vec![0.0; 30]);
        let e = BlockGibbs::new(25).unwrap().start(&big, &[0; 30]).err().unwrap();
        assert!(e.to_string().contains("k = 25"), "{e}");
    }
}
