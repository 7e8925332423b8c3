//! Specialised kernels ("fast paths") for models whose structure makes a step much cheaper
//! than the generic code, chosen in a sampler's `start()` from the target's
//! [`Target::capabilities`] (plain parameter views of `dlp_core::capability`; the samplers
//! never see a concrete model type).
//!
//! Every fast path is the **same Markov kernel** as the generic sampler it replaces (same
//! proposal law, same acceptance rule, same [`dlp_core::StepInfo`] semantics, same per-chain streams),
//! but it draws its randomness differently, so trajectories differ while laws agree. The
//! tests in `fast/tests.rs` compare each fast path with the exact transition rows of the
//! generic kernel (per-site flip probabilities and acceptance ratios to 1e-12, and one-step
//! empirical rows by a χ² test), and the generic path stays the reference
//! (`paper/performance.md` records what was measured and why it is fast).
//!
//! | fast path | when | file |
//! |---|---|---|
//! | DULA / DMALA on a uniform lattice Ising model, any gradient weight β (so also every phase of `acs-dmala`/`acs-dula`) | Ising capability with a lattice, one coupling, uniform field; no preconditioner | [`ising`] |
//! | DULA / DMALA (any β) on a sparse Ising model with one coupling per site and any fields (DISCS's Ising tasks): per-site class tables, O(d) byte comparisons + O(\|M\|·(degree + 1)) per step | Ising capability, equal couplings in every row, degree ≤ 15; no preconditioner | [`site_ising`] |
//! | `dlmc` / `dlmcf` on a uniform lattice Ising model: the same class machinery with DLMC's per-class flip probabilities (CSR path on every lattice) | as above | [`ising`] |
//! | DULA / DMALA (any β) on any sparse Potts model (DISCS's Potts task): one-hot gradients kept per chain, a per-site move threshold scanned as bytes, O(d) + O(\|M\|·(degree + 1)·K) per step | Potts capability, categorical, finite; no preconditioner | [`dlp_potts`] |
//! | DULA / DMALA on a Bernoulli RBM (cached hidden pre-activations) | RBM capability, no preconditioner | [`rbm`] |
//! | `dula-f32` / `dmala-f32` on a Bernoulli RBM: the gradient product in f32 | RBM capability, no preconditioner | [`rbm`] |
//! | GWG, single-site Gibbs, `bg-1` on a Bernoulli RBM (the same cache) | RBM capability | [`rbm::RbmCache`] |
//! | GWG (`gwg`) on any sparse Potts model: one-hot gradients and a sum tree over the d·K moves, O((degree + 1)·K·log(dK)) per step | Potts capability, fields and couplings bounded | [`gwg_potts`] |
//! | GWG (`gwg`, `gwg-<k>`) and `lb` on any sparse Ising model: local fields and a sum tree of the move weights, O(k·(degree + 1)·log d) per step | Ising capability, fields and couplings bounded (\|λ\| ≤ 300) | [`gwg_ising`] |
//! | `pas`, `pas-<R>` and `alb` on any sparse Ising model: the same local fields and tree, the path drawn and scored without replacement on it, O(R·(degree + 1)·log d) per step | as above | [`gwg_ising`] |
//!
//! Uniforms: a flip decision u < p is made with **two-stage integer comparisons** — a short
//! draw (16 bits; 8 bits in the torus DULA and DMALA kernels) is compared with the top bits of
//! T = ⌊p·2⁶⁴⌋ and only on a tie (probability 2⁻¹⁶, resp. 2⁻⁸) are the remaining 48 (56)
//! bits drawn — so a decision costs 1–2 random bytes on average and the realised flip
//! probability is exactly T/2⁶⁴ (within 2⁻⁶⁴ of p; the generic path's f64 uniform realises p
//! within 2⁻⁵³).
//!
//! [`Generic`] hides the capabilities so that the generic path can be forced (benchmarks
//! and the tests that compare the two paths).

use dlp_core::TargetExt;
pub mod dlp_potts;
pub mod gwg_ising;
pub mod gwg_potts;
pub mod ising;
pub mod rbm;
pub mod site_ising;
pub mod sum_tree;
pub mod vexp;

use dlp_core::capability::Conditionals;
use dlp_core::{Batch, Capabilities, EvalError, Space, Target};

/// Steps between exact recomputations of a chain's cached sums (f, local fields, sum trees,
/// site laws) in the fast paths that update them incrementally: the rounding of the updates
/// cannot accumulate past this many steps, for one O(d) pass per `REFRESH` steps.
pub const REFRESH: u32 = 1024;

/// Per-chain step counts toward [`REFRESH`], one per chain of a fast path.
#[derive(Clone, Debug)]
pub(crate) struct RefreshClock(Vec<u32>);

impl RefreshClock {
    /// Counters for `n` chains, at zero.
    pub(crate) fn new(n: usize) -> Self {
        RefreshClock(vec![0; n])
    }

    /// Counts a step of chain j; true on every [`REFRESH`]-th, when the chain's cache is to be
    /// recomputed from its state (the count restarts).
    #[inline]
    pub(crate) fn due(&mut self, j: usize) -> bool {
        self.0[j] += 1;
        let due = self.0[j] >= REFRESH;
        if due {
            self.0[j] = 0;
        }
        due
    }
}

/// The [`dlp_core::Chains`] impl of a fast path whose chains step one at a time, each on its
/// own stream: `$t` has `n` chains, positions in field `$x` (n × d), the cached f in `f`, and
/// `fn step_chain(&mut self, j: usize, rng: &mut ChainRng) -> StepInfo`, which steps chain j
/// (and refreshes its cache when due).
macro_rules! chains_stepped_one_by_one {
    ($t:ty, $x:ident) => {
        impl dlp_core::Chains for $t {
            fn n_chains(&self) -> usize {
                self.n
            }

            fn positions(&self) -> &[u32] {
                &self.$x
            }

            fn log_densities(&self) -> Option<&[f64]> {
                Some(&self.f)
            }

            fn try_step(
                &mut self,
                rngs: &mut [dlp_core::ChainRng],
                info: &mut [dlp_core::StepInfo],
                _batch: dlp_core::Batch<'_>,
            ) -> Result<(), dlp_core::EvalError> {
                for (j, (rng, info)) in rngs.iter_mut().zip(info.iter_mut()).enumerate().take(self.n) {
                    *info = self.step_chain(j, rng);
                }
                Ok(())
            }
        }
    };
}
pub(crate) use chains_stepped_one_by_one;

/// The flip threshold T = ⌊p·2⁶⁴⌋ (saturating at 2⁶⁴ − 1) split for the two-stage test:
/// flip iff `r16 < hi`, or `r16 == hi` and `r48 < lo`, with r16, r48 uniform 16- and 48-bit
/// integers; the flip probability is then exactly T/2⁶⁴.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Threshold {
    /// Top 16 bits of T.
    pub hi: u16,
    /// Low 48 bits of T.
    pub lo: u64,
}

impl Threshold {
    /// The threshold of probability `p` (clamped to [0, 1]; NaN counts as 0).
    pub fn of_probability(p: f64) -> Self {
        // 2^64 is a power of two, so p·2^64 is exact; `as` truncates (floor) and saturates.
        let t = if p >= 1.0 {
            u64::MAX
        } else if p > 0.0 {
            (p * 18_446_744_073_709_551_616.0) as u64
        } else {
            0
        };
        Threshold { hi: (t >> 48) as u16, lo: t & ((1u64 << 48) - 1) }
    }

    /// T itself.
    pub fn bits(&self) -> u64 {
        (self.hi as u64) << 48 | self.lo
    }

    /// The probability the two-stage test realises, T/2⁶⁴ (as f64).
    pub fn probability(&self) -> f64 {
        self.bits() as f64 / 18_446_744_073_709_551_616.0
    }
}

/// Sites per block of [`block_hits`].
pub const HIT_BLOCK: usize = 32;

/// Bit q set iff `r[q] <= t[q]` (a random byte at or below its site's threshold byte: a flip,
/// or a tie to settle with more bits), for a block of at most [`HIT_BLOCK`] sites. The
/// byte-threshold kernels ([`site_ising`], [`dlp_potts`]) visit only these sites, in site
/// order; the comparison loop has no branch, so it vectorises.
#[inline]
pub fn block_hits(r: &[u8], t: &[u8]) -> u32 {
    debug_assert!(r.len() == t.len() && r.len() <= HIT_BLOCK);
    let mut lanes = [0u8; HIT_BLOCK];
    for ((l, &a), &b) in lanes.iter_mut().zip(r).zip(t) {
        *l = (a <= b) as u8;
    }
    lanes.iter().enumerate().fold(0u32, |m, (q, &l)| m | (l as u32) << q)
}

/// A target that forwards the evaluation, the data terms and the conditionals but no other
/// capability (in particular no parameter view and no cheap flips), so samplers take their
/// generic path on it. Used to time and test the generic kernels against the fast ones.
pub struct Generic<'a>(pub &'a dyn Target);

impl Target for Generic<'_> {
    fn space(&self) -> &Space {
        self.0.space()
    }
    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        self.0.evaluate(xs, batch, log_density, grad)
    }
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities { n_data: self.0.n_data(), conditionals: Some(self), ..Capabilities::default() }
    }
}

/// The inner target's differences (its own conditionals or evaluated ones), without its cheap
/// single flips.
impl Conditionals for Generic<'_> {
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError> {
        self.0.coordinate_deltas(x, i, out)
    }
    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) -> Result<(), EvalError> {
        self.0.flip_deltas(x, out)
    }
}

#[cfg(test)]
mod tests;

/// The DLP fast path for `target`, if there is one: `Ok(None)` means "use the generic
/// chains". Called from [`crate::dlp::DlpSampler`]'s `start`.
pub fn dlp_fast_path<'t>(
    proposal: &crate::dlp::proposal::DlpProposal,
    mh: bool,
    target: &'t dyn Target,
    x0: &[u32],
) -> Result<Option<Box<dyn dlp_core::Chains + 't>>, dlp_core::SamplerError> {
    if proposal.precond().is_some() {
        return Ok(None);
    }
    // The lattice class tables hold the f64 logits; the single-precision variants run the
    // generic chains there (their point is the RBM's f32 gradient product).
    if let Some(m) = ising::qualifying_model(target).filter(|_| !proposal.has_f32_gradient()) {
        let mut chains = ising::IsingDlpChains::from_view(target.space(), &m, proposal.half_inv_step(0), mh, x0)?;
        chains.set_proposal(proposal.half_inv_step(0), proposal.balance());
        return Ok(Some(Box::new(chains)));
    }
    if let Some(m) = site_ising::qualifying_model(target).filter(|_| !proposal.has_f32_gradient()) {
        let mut chains = site_ising::SiteIsingChains::new(&m, mh, x0)?;
        chains.set_proposal(proposal.half_inv_step(0), proposal.balance());
        return Ok(Some(Box::new(chains)));
    }
    if let Some(m) = dlp_potts::qualifying_model(target).filter(|_| !proposal.has_f32_gradient()) {
        let (hinv, beta) = (proposal.half_inv_step(0), proposal.balance());
        return Ok(Some(Box::new(dlp_potts::PottsDlpChains::new(&m, mh, hinv, beta, x0)?)));
    }
    // The RBM kernels hard-code the paper's ½ gradient weight.
    if proposal.balance() != 0.5 {
        return Ok(None);
    }
    if let Some(r) = target.capabilities().rbm {
        return Ok(Some(Box::new(rbm::rbm_chains_from_view(target.space(), r, proposal.clone(), mh, x0)?)));
    }
    Ok(None)
}
