//! Gibbs-with-Gradients: `gwg` (one move per step) and `gwg-<k>` (k i.i.d. draws, flip the union).
//!
//! Grathwohl et al. 2021 (the GWG release the DLP code forks), as the DLP code runs it —
//! spec `reproduction.md` §2, rows `gwg` and `gwg-k`:
//!
//! * binary/spin: logits λ_i(x) = ½ g_i(x)(1 − 2x_i) (g = ∇f with respect to the bit; the ½
//!   is the locally balanced √ weighting of the first-order estimate of f(x^{(i)}) − f(x));
//! * categorical (the GWG release's convention, *not* the DLP repository's P15 variant that
//!   only subtracts 1 from the current class): one move (i, v) with v ≠ c_i, logits
//!   ½(G_{i,v} − G_{i,c_i}) over all such pairs, G = ∂f/∂(one-hot); (i, c_i) is excluded.
//!
//! One step draws k moves i.i.d. **with replacement** from softmax(λ(x)), applies them
//! (binary: flips the union of the drawn indices, so at most k flips), evaluates f and ∇f
//! at the proposal x', and accepts with log ratio
//! f(x') − f(x) + Σ_j log softmax(λ(x'))_{rev(m_j)} − Σ_j log softmax(λ(x))_{m_j},
//! where rev(i, v) = (i, x_i) is the move back. Spec §2 calls this an approximate MH
//! correction because it scores the ordered draws rather than the union; it is nevertheless
//! an exact MH kernel on the extended space (x, draws): the same draws lead from x' back to
//! x, so detailed balance holds draw by draw (the unit tests confirm πP = π and detailed
//! balance to 1e−12 for k = 1, 2, 3).
//!
//! Cost (pitfall P7): the code evaluates 2 gradients + 2 log-densities per step regardless of
//! k (the paper text claims k gradient evaluations for GWG-k). Here f and ∇f of the current
//! state are cached (the proposal's are reused after acceptance), so a step performs
//! **1 gradient and 1 log-density evaluation regardless of k** (`grad_evals = 1`,
//! `density_evals = 1`; both come from one `log_density_grad_batch` call over the chains).
//!
//! Not implemented: `gwg-<k>` with k > 1 on categorical targets (two draws could move one
//! coordinate to different classes; the code has no such variant), ordinal targets.

use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::fast::rbm::RbmEval;
use crate::fast::vexp::exp_neg_abs;
use crate::mh::{Caching, MhChains, MoveProposal, start_error};
#[cfg(doc)]
use crate::proposal::sample_logits;
use crate::proposal::sample_weights;
use crate::spec::Build;
use crate::spec::{NO_DEFAULTS, NO_TESTS, SamplerName, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere};
use dlp_core::TargetExt;
use dlp_core::math::logsumexp;
use dlp_core::{
    ChainRng, Chains, DomainKind, EvalError, ExactKernel, Sampler, SamplerError, Space, Target, Transition,
};
use std::collections::BTreeMap;

/// Gibbs-with-gradients with `k` i.i.d. move draws per step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gwg {
    /// Number of moves drawn per step (≥ 1).
    pub k: usize,
}

impl Gwg {
    /// Checks `k ≥ 1`.
    pub fn new(k: usize) -> Result<Self, SamplerError> {
        if k == 0 {
            return Err(SamplerError::BadParameter {
                sampler: "gwg-0".into(),
                message: "number of draws k = 0; k must be at least 1".into(),
            });
        }
        Ok(Gwg { k })
    }

    /// Registry constructor for `gwg` and `gwg-<k>`.
    pub fn build(name: &SamplerName, _: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        Ok(Box::new(Gwg::new(name.numbers.first().copied().unwrap_or(1))?))
    }

    fn check(&self, space: &Space) -> Result<(), SamplerError> {
        let unsupported = |message: String| Err(SamplerError::Unsupported { sampler: self.name(), message });
        match space.kind {
            DomainKind::Binary | DomainKind::Spin => Ok(()),
            DomainKind::Categorical if self.k == 1 => Ok(()),
            DomainKind::Categorical => {
                unsupported(format!("k = {} > 1 draws on a categorical model (only gwg = gwg-1 is defined)", self.k))
            }
            DomainKind::Ordinal => unsupported("ordinal domains are not supported (binary, spin, categorical)".into()),
        }
    }
}

/// Number of move slots per coordinate: moves are indexed m = i·K + v (set x_i to v).
fn slots(space: &Space) -> usize {
    space.k()
}

/// Log-probabilities of GWG's moves at `x` from the gradient `grad` (layout of
/// [`TargetExt::log_density_grad`]), into `out` (length d·K, move m = i·K + v sets x_i = v):
/// log softmax of ½ g_i (1 − 2x_i) at v = 1 − x_i for binary/spin, of ½(G_{i,v} − G_{i,c_i})
/// for categorical; the "stay" slots v = x_i get −∞.
pub fn move_log_probs(space: &Space, x: &[u32], grad: &[f64], out: &mut [f64]) {
    let mut weights = vec![0.0; out.len()];
    move_log_probs_and_weights(space, x, grad, out, &mut weights, &mut Vec::new());
}

/// [`move_log_probs`], also writing the unnormalised move weights e^{λ − max λ} to `weights`
/// and returning their sum (`scratch` is reused between calls). The chains keep them so that
/// a step draws its k moves without any exponential (one uniform scaled by the sum, then an
/// inverse-CDF scan). Written for speed because it is most of a GWG step on an RBM (784 × 25):
/// the exponentials go through the vectorised [`exp_neg_abs`] (≤ 2 ulp from libm) over the
/// moves only (on binary spaces the d flip logits are packed first), the maximum and the sum
/// are branch-free multi-lane loops, and nothing is normalised that the draw does not need.
/// The exact kernel ([`Gwg::transition_row`]) calls the same function, so the chains' log
/// probabilities and the exact rows share every bit.
fn move_log_probs_and_weights(
    space: &Space,
    x: &[u32],
    grad: &[f64],
    out: &mut [f64],
    weights: &mut [f64],
    scratch: &mut Vec<f64>,
) -> f64 {
    let k = slots(space);
    let d = x.len();
    if space.kind != DomainKind::Categorical {
        // Binary/spin: the flip logits packed into `v`, their weights into `e`.
        scratch.resize(2 * d, 0.0);
        let (v, e) = scratch.split_at_mut(d);
        for ((vi, &g), &c) in v.iter_mut().zip(grad).zip(x) {
            *vi = 0.5 * g * (1.0 - 2.0 * c as f64);
        }
        let m = lane_max(v);
        if m.is_finite() {
            v.iter_mut().for_each(|l| *l -= m);
            exp_neg_abs(v, e);
            let total = lane_sum(e);
            let log_total = total.ln();
            // Selects rather than computed indices, so the loop has no branch or bounds check.
            let pairs = out.chunks_exact_mut(2).zip(weights.chunks_exact_mut(2));
            for ((((o, wt), &l), &w), &c) in pairs.zip(v.iter()).zip(e.iter()).zip(x) {
                let (lq, up) = (l - log_total, c == 1);
                o[0] = if up { lq } else { f64::NEG_INFINITY };
                o[1] = if up { f64::NEG_INFINITY } else { lq };
                wt[0] = if up { w } else { 0.0 };
                wt[1] = if up { 0.0 } else { w };
            }
            return total;
        }
        for (i, (&l, &c)) in v.iter().zip(x).enumerate() {
            out[2 * i + c as usize] = f64::NEG_INFINITY;
            out[2 * i + 1 - c as usize] = l;
        }
    } else {
        for (i, &c) in x.iter().enumerate() {
            let (o, g) = (&mut out[i * k..(i + 1) * k], &grad[i * k..(i + 1) * k]);
            for v in 0..k {
                o[v] = 0.5 * (g[v] - g[c as usize]);
            }
            o[c as usize] = f64::NEG_INFINITY;
        }
        let m = lane_max(out);
        if m.is_finite() {
            // exp(−∞) is 0 exactly: the stay slots come back as 0 (through libm).
            scratch.clear();
            scratch.extend(out.iter().map(|&l| l - m));
            exp_neg_abs(scratch, weights);
            let total = lane_sum(weights);
            let lse = m + total.ln();
            out.iter_mut().for_each(|v| *v -= lse);
            return total;
        }
    }
    // Degenerate logits (all −∞, or +∞ somewhere): keep the library's conventions.
    let lse = logsumexp(out);
    out.iter_mut().for_each(|v| *v -= lse);
    weights.iter_mut().zip(out.iter()).for_each(|(p, l)| *p = l.exp());
    weights.iter().sum()
}

/// The largest entry (−∞ for none; NaN entries are skipped, as `f64::max` skips them), over
/// four independent lanes so the loop vectorises.
fn lane_max(v: &[f64]) -> f64 {
    let mut m = [f64::NEG_INFINITY; 4];
    let chunks = v.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        for q in 0..4 {
            m[q] = if c[q] > m[q] { c[q] } else { m[q] };
        }
    }
    tail.iter().chain(&m).copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Σ v over four independent lanes (a serial sum is one long dependency chain).
fn lane_sum(v: &[f64]) -> f64 {
    let mut s = [0.0; 4];
    let chunks = v.chunks_exact(4);
    let tail: f64 = chunks.remainder().iter().sum();
    for c in chunks {
        for q in 0..4 {
            s[q] += c[q];
        }
    }
    (s[0] + s[1]) + (s[2] + s[3]) + tail
}

/// Applies the drawn moves to `x` (a copy is written to `y`); returns how many coordinates
/// changed. With replacement, a move drawn twice is applied once (the union of flips).
pub fn apply_moves(k_slots: usize, x: &[u32], draws: &[usize], y: &mut [u32]) -> u32 {
    y.copy_from_slice(x);
    for &m in draws {
        y[m / k_slots] = (m % k_slots) as u32;
    }
    x.iter().zip(y.iter()).filter(|(a, b)| a != b).count() as u32
}

/// Σ_j log q_{x'}(rev(m_j)) where rev(i, v) = (i, x_i) moves back to the old value.
pub fn reverse_log_prob(k_slots: usize, x: &[u32], draws: &[usize], lq_y: &[f64]) -> f64 {
    draws.iter().map(|&m| lq_y[(m / k_slots) * k_slots + x[m / k_slots] as usize]).sum()
}

/// GWG's log acceptance ratio f(x') − f(x) + log q(rev draws | x') − log q(draws | x).
pub fn log_accept_ratio(
    f_x: f64,
    f_y: f64,
    lq_x: &[f64],
    lq_y: &[f64],
    k_slots: usize,
    x: &[u32],
    draws: &[usize],
) -> f64 {
    let fwd: f64 = draws.iter().map(|&m| lq_x[m]).sum();
    f_y - f_x + reverse_log_prob(k_slots, x, draws, lq_y) - fwd
}

impl Sampler for Gwg {
    fn name(&self) -> String {
        if self.k == 1 { "gwg".into() } else { format!("gwg-{}", self.k) }
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        self.check(space)?;
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        // Sparse Ising models: the same kernel in O(k·(degree + 1)·log d) per step. The lattice
        // paths stay specialised rather than becoming proposals of `MhChains`: their per-chain
        // sum trees and local fields are updated in O(degree) per accepted flip, where the
        // generic cache (`prepare`) is rebuilt from ∇f in O(d·K) per proposal.
        if let Some(m) = crate::fast::gwg_ising::qualifying_model(target) {
            return Ok(Box::new(crate::fast::gwg_ising::GwgIsingChains::new(&m, self.k, x0)?));
        }
        // Sparse Potts models (`check` allows only k = 1 on categorical spaces).
        if let Some(m) = crate::fast::gwg_potts::qualifying_model(target) {
            return Ok(Box::new(crate::fast::gwg_potts::GwgPottsChains::new(&m, x0)?));
        }
        let proposal = GwgProposal { k: self.k, ks: slots(space) };
        // GWG on an RBM: evaluate proposals from cached pre-activations (`fast::rbm`).
        if let Some(r) = target.capabilities().rbm {
            let eval = RbmEval::starting_from_target(target, r, x0);
            return Ok(Box::new(MhChains::new(space, proposal, eval, true, Caching::Keep, x0).map_err(start_error)?));
        }
        Ok(Box::new(MhChains::on_target(target, proposal, true, Caching::Keep, x0)?))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for Gwg {
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        let space = target.space();
        let (d, ks) = (space.d, slots(space));
        let eval = |y: &[u32]| {
            let mut g = vec![0.0; space.grad_len()];
            let f = target.log_density_grad(y, &mut g)?;
            let mut lq = vec![0.0; d * ks];
            move_log_probs(space, y, &g, &mut lq);
            Ok::<_, EvalError>((f, lq))
        };
        let (f_x, lq_x) = eval(x)?;
        let moves: Vec<usize> = (0..d * ks).filter(|&m| lq_x[m] > f64::NEG_INFINITY).collect();
        let mut row: BTreeMap<Vec<u32>, f64> = BTreeMap::new();
        let mut cache: BTreeMap<Vec<u32>, (f64, Vec<f64>)> = BTreeMap::new();
        let mut stay = 1.0;
        let mut y = vec![0; d];
        // Every ordered k-tuple of moves, as a base-|moves| counter.
        let mut idx = vec![0usize; self.k];
        loop {
            let draws: Vec<usize> = idx.iter().map(|&a| moves[a]).collect();
            let q: f64 = draws.iter().map(|&m| lq_x[m].exp()).product();
            apply_moves(ks, x, &draws, &mut y);
            if !cache.contains_key(&y) {
                cache.insert(y.clone(), eval(&y)?);
            }
            let (f_y, lq_y) = &cache[&y];
            let a = log_accept_ratio(f_x, *f_y, &lq_x, lq_y, ks, x, &draws);
            let p = q * a.min(0.0).exp();
            *row.entry(y.clone()).or_insert(0.0) += p;
            stay -= p;
            let mut pos = 0;
            while pos < self.k {
                idx[pos] += 1;
                if idx[pos] < moves.len() {
                    break;
                }
                idx[pos] = 0;
                pos += 1;
            }
            if pos == self.k {
                break;
            }
        }
        *row.entry(x.to_vec()).or_insert(0.0) += stay.max(0.0);
        Ok(crate::gibbs::finish_row(row))
    }
}

/// GWG's proposal for the one MH kernel ([`MhChains`]): k i.i.d. moves from x's move law,
/// the union applied; the move record is the ordered draws, which the test scores
/// ([`log_accept_ratio`]), not the state pair.
struct GwgProposal {
    /// Draws per step.
    k: usize,
    /// Move slots per coordinate ([`slots`]).
    ks: usize,
}

/// What a GWG chain keeps of its state: the move log-probabilities and the unnormalised move
/// weights with their sum (the draws scan these, [`move_log_probs_and_weights`]).
struct GwgCache {
    lq: Vec<f64>,
    p: Vec<f64>,
    /// Σ p, by which the draws scale their uniform.
    total: f64,
    scratch: Vec<f64>,
}

impl MoveProposal for GwgProposal {
    type Cache = GwgCache;
    /// The k drawn moves, in order.
    type Move = Vec<usize>;

    fn new_cache(&self, space: &Space) -> GwgCache {
        GwgCache { lq: vec![0.0; space.d * self.ks], p: vec![0.0; space.d * self.ks], total: 0.0, scratch: Vec::new() }
    }

    fn new_move(&self, _space: &Space) -> Vec<usize> {
        vec![0; self.k]
    }

    fn prepare(&self, space: &Space, x: &[u32], grad: &[f64], c: &mut GwgCache) {
        c.total = move_log_probs_and_weights(space, x, grad, &mut c.lq, &mut c.p, &mut c.scratch);
    }

    fn draw(
        &mut self,
        _: &Space,
        x: &[u32],
        c: &GwgCache,
        rng: &mut ChainRng,
        y: &mut [u32],
        mv: &mut Vec<usize>,
    ) -> u32 {
        for m in mv.iter_mut() {
            *m = sample_weights(&c.p, c.total, rng);
        }
        apply_moves(self.ks, x, mv, y)
    }

    fn log_accept_ratio(
        &mut self,
        _: &Space,
        x: &[u32],
        _y: &[u32],
        draws: &Vec<usize>,
        f_x: f64,
        f_y: f64,
        cx: &GwgCache,
        cy: &GwgCache,
    ) -> f64 {
        log_accept_ratio(f_x, f_y, &cx.lq, &cy.lq, self.ks, x, draws)
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `gwg` (`gwg-<…>`).
pub const GWG: SamplerSpec = SamplerSpec {
    stem: "gwg",
    counts: &[0, 1],
    numbers: &["k"],
    params: &[],
    build: Build::Plain(Gwg::build),
    doc: "Gibbs-with-gradients, one flip or up to k (k draws with replacement)",
    paper: "Grathwohl et al. 2021",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["gwg", "gwg-2", "gwg-3"], ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use crate::locally_balanced::LocallyBalanced;
    use dlp_core::StepInfo;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    #[test]
    fn gwg_k_preserves_pi_exactly() {
        let q = Quadratic::spec_tiny();
        check_spec_pi(&q, &SPEC_TINY_PI);
        for k in 1..=3 {
            check_exact(&Gwg::new(k).unwrap(), &q, true);
            check_exact(&Gwg::new(k).unwrap(), &spin_tiny(), true);
        }
        let c = PairwiseCategorical::spec_small();
        check_spec_pi(&c, &SPEC_SMALL_PI);
        check_exact(&Gwg::new(1).unwrap(), &c, true);
    }

    #[test]
    fn gwg1_equals_lb_on_multilinear_targets() {
        // Spec §4.10: with zero diagonal W, f is multilinear in the bits, so ½ g_i (1 − 2x_i)
        // is exactly half the flip difference and GWG-1 is LB-1.
        for t in [Quadratic::spec_tiny(), spin_tiny()] {
            let a = matrix(&Gwg::new(1).unwrap(), &t, 0);
            let b = matrix(&LocallyBalanced, &t, 0);
            for (ra, rb) in a.iter().zip(&b) {
                for (pa, pb) in ra.iter().zip(rb) {
                    assert!((pa - pb).abs() < 1e-12, "{pa} vs {pb}");
                }
            }
        }
        // With a diagonal term the extension is not multilinear and the two kernels differ.
        let mut q = Quadratic::spec_tiny();
        q.w[0] = 0.7;
        let a = matrix(&Gwg::new(1).unwrap(), &q, 0);
        let b = matrix(&LocallyBalanced, &q, 0);
        assert!((a[0][4] - b[0][4]).abs() > 1e-3);
    }

    #[test]
    fn move_probabilities_match_hand_computation() {
        // §4.3 at (0,0,0): g = (0.3, −0.7, 0.25), λ = ½ g, softmax over the three flips.
        let q = Quadratic::spec_tiny();
        let mut g = [0.0; 3];
        q.log_density_grad(&[0, 0, 0], &mut g).unwrap();
        let mut lq = [0.0; 6];
        move_log_probs(q.space(), &[0, 0, 0], &g, &mut lq);
        let w = [0.15f64.exp(), (-0.35f64).exp(), 0.125f64.exp()];
        let z: f64 = w.iter().sum();
        for i in 0..3 {
            assert_eq!(lq[2 * i], f64::NEG_INFINITY);
            assert!((lq[2 * i + 1].exp() - w[i] / z).abs() < 1e-15);
        }
        // Categorical §4.5 at (0,0): G_1 = (1.5, −0.7, 0.4), so logits of moving coordinate 1
        // to class 1, 2 are ½(−2.2), ½(−1.1); G_2 = h2 + Cᵀe1 = (0.8, −0.1, 0.2) → ½(−0.9), ½(−0.6).
        let c = PairwiseCategorical::spec_small();
        let mut g = [0.0; 6];
        c.log_density_grad(&[0, 0], &mut g).unwrap();
        let mut lq = [0.0; 6];
        move_log_probs(c.space(), &[0, 0], &g, &mut lq);
        let l = [-1.1f64, -0.55, -0.45, -0.3];
        let z: f64 = l.iter().map(|v| v.exp()).sum();
        for (m, lv) in [1usize, 2, 4, 5].iter().zip(l) {
            assert!((lq[*m].exp() - lv.exp() / z).abs() < 1e-15);
        }
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        for k in [1, 3] {
            let info = empirical_check(&Gwg::new(k).unwrap(), &q, &[0, 1, 0], 20_000, 21 + k as u64);
            assert!(info.iter().all(|i| i.grad_evals == 1 && i.density_evals == 1 && i.n_proposed as usize <= k));
            assert!(info.iter().all(|i| i.n_proposed >= 1 && (i.accepted == (i.n_changed > 0))));
        }
        empirical_check(&Gwg::new(1).unwrap(), &PairwiseCategorical::spec_small(), &[2, 1], 20_000, 25);
        empirical_check(&Gwg::new(2).unwrap(), &spin_tiny(), &[1, 1, 0], 20_000, 26);
    }

    #[test]
    fn rbm_path_follows_the_generic_rows_and_keeps_f() {
        // The RBM path (cached pre-activations, `fast::rbm::RbmCache`) against the exact rows
        // of the generic kernel: per row ≤ 8 states, each off by > 5σ with probability
        // 5.7e−7, 8 rows → family-wise false-failure rate < 1e−4.
        use crate::fast::rbm::tests::{check_cached_f, check_chains_do_not_interact, random_rbm};
        for (dom, seed) in [(dlp_core::DomainKind::Binary, 70), (dlp_core::DomainKind::Spin, 71)] {
            let r = random_rbm(dom, 3, 2, seed);
            for (k, x) in [(1, [0, 1, 0]), (2, [1, 1, 0])] {
                let info = empirical_check(&Gwg::new(k).unwrap(), &r, &x, 40_000, seed + k as u64);
                assert!(info.iter().all(|i| i.grad_evals == 1 && i.density_evals == 1));
            }
            let big = random_rbm(dom, 12, 7, seed);
            let x0: Vec<u32> = (0..6 * 12).map(|i| (i % 4 == 0) as u32).collect();
            for k in [1, 3] {
                assert!(check_cached_f(&Gwg::new(k).unwrap(), &big, &x0, 700) > 500);
                check_chains_do_not_interact(&Gwg::new(k).unwrap(), &big, &x0, 15);
            }
        }
    }

    #[test]
    fn cached_state_survives_many_steps() {
        let q = Quadratic::spec_tiny();
        let s = Gwg::new(2).unwrap();
        let mut ch = s.start(&q, &[0, 0, 0, 1, 1, 1]).unwrap();
        let mut rngs = dlp_core::chain_rngs(5, 0, 2);
        let mut info = [StepInfo::default(); 2];
        for _ in 0..200 {
            ch.step(&mut rngs, &mut info);
        }
        for (y, f) in ch.positions().chunks(3).zip(ch.log_densities().unwrap()) {
            assert_eq!(q.log_density(y).unwrap(), *f);
        }
    }

    /// Spec §4.9 (reproduce level, so ignored by default; run with `--ignored`): GWG-k on
    /// the 5×5 Ising of §4.1, acceptance k = 1: 0.955, 2: 0.863, 4: 0.659, 6: 0.494 (±0.02).
    /// 200 chains × 2,500 steps after 500 burn-in: the acceptance-probability mean has a
    /// standard error well below 0.005, so a ±0.02 miss is not noise.
    #[test]
    #[ignore = "statistical 200 chains x 3,000 steps: just test-stat"]
    fn gwg_k_acceptance_on_the_5x5_ising() {
        use rand::RngExt;
        let ising = dlp_models::IsingModel::paper_lattice(5, 0.1, 0.2);
        let (n, d) = (200, 25);
        let mut setup = dlp_core::setup_rng(4);
        let p_up = 1.0 / (1.0 + (-0.4f64).exp()); // E[s] = tanh(0.2), the code's start
        let x0: Vec<u32> = (0..n * d).map(|_| u32::from(setup.random::<f64>() < p_up)).collect();
        for (k, expect) in [(1, 0.955), (2, 0.863), (4, 0.659), (6, 0.494)] {
            let mut ch = Gwg::new(k).unwrap().start(&ising, &x0).unwrap();
            let mut rngs = dlp_core::chain_rngs(7, 0, n);
            let mut info = vec![StepInfo::default(); n];
            let mut acc = 0.0;
            for t in 0..3000 {
                ch.step(&mut rngs, &mut info);
                if t >= 500 {
                    acc += info.iter().map(|i| i.accept_prob).sum::<f64>();
                }
            }
            let acc = acc / (2500 * n) as f64;
            eprintln!("gwg-{k}: mean acceptance probability {acc:.4} (spec {expect})");
            assert!((acc - expect).abs() < 0.02, "gwg-{k}: {acc} vs {expect}");
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = Gwg::new(0).unwrap_err();
        assert!(e.to_string().contains("k = 0"), "{e}");
        let e = Gwg::new(2).unwrap().start(&PairwiseCategorical::spec_small(), &[0, 0]).err().unwrap();
        assert!(e.to_string().contains("k = 2"), "{e}");
        let ord = Quadratic::new(Space::ordinal(1, vec![0, 1, 2]), vec![0.0], vec![0.0]);
        let e = Gwg::new(1).unwrap().start(&ord, &[0]).err().unwrap();
        assert!(matches!(e, SamplerError::Unsupported { .. }));
    }
}
