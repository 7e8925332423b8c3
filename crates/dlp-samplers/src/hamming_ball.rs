//! `hb-<L>-<r>`: the Hamming-ball sampler (Titsias & Yau 2017) on blocks of L coordinates.
//!
//! Spec `reproduction.md` §2, row `hb-L-r` (`hb-10-1` in the paper's plots). Blocks come
//! from the per-chain permutation schedule of `bg-<k>` ([`BlockSchedule`]: a random
//! permutation consumed L at a time, reshuffled when exhausted, last block of a pass shorter;
//! each chain has its own permutation, where the code shares one across chains — same law per
//! chain). Within the block B, with H_r(x) = {y : y = x outside B, y differs from x in at most
//! r coordinates of B} (including x itself):
//! 1. draw an auxiliary u uniformly from H_r(x);
//! 2. draw x_new ∈ H_r(u) with probability ∝ exp f(x_new).
//!
//! All balls have the same size Σ_{j ≤ r} C(|B|, j)(K − 1)^j, so (u, x) ↦ (u, x_new) is a
//! Gibbs step on the joint π(x)·Unif(u ∈ H_r(x)) and the kernel is π-reversible for every
//! block. Any finite domain works (the ball of a categorical coordinate lets it take any
//! other class); for binary targets this is the code's sampler. [`ExactKernel::transition_row`]
//! averages the first step over the schedule (the first block is a uniform L-subset).
//!
//! Not on the one MH kernel ([`crate::mh`]): the step has no Metropolis–Hastings test and no
//! proposal density to score; its second draw needs the densities of the whole ball around
//! u, evaluated inside the draw (a Gibbs step on the auxiliary joint).
//!
//! Cost: |H_r(u)| log-density evaluations per step (11 for hb-10-1 on binary targets, §1.12),
//! in one batch call; the chosen candidate's f becomes the cached log-density.

use crate::block_gibbs::{BlockSchedule, MAX_CANDIDATES, first_blocks};
use crate::dual_averaging::MALA_TARGET_ACCEPT;
#[cfg(doc)]
use crate::proposal::sample_logits;
use crate::proposal::sample_weights;
use crate::spec::Build;
use crate::spec::{NO_DEFAULTS, NO_TESTS, SamplerName, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere};
use dlp_core::Deltas;
use dlp_core::TargetExt;
use dlp_core::math::softmax_in_place;
use dlp_core::{Batch, ChainRng, Chains, EvalError, ExactKernel, Sampler, SamplerError, StepInfo, Target, Transition};
use rand::RngExt;
use std::collections::BTreeMap;

/// Hamming-ball sampler with block size `l` and radius `r`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HammingBall {
    /// Block size L (≥ r).
    pub l: usize,
    /// Radius r (≥ 1).
    pub r: usize,
}

impl HammingBall {
    /// Checks 1 ≤ r ≤ L.
    pub fn new(l: usize, r: usize) -> Result<Self, SamplerError> {
        let bad = |message: String| Err(SamplerError::BadParameter { sampler: format!("hb-{l}-{r}"), message });
        if r == 0 {
            return bad("radius r = 0; r must be at least 1".into());
        }
        if l < r {
            return bad(format!("block size L = {l} is smaller than the radius r = {r}"));
        }
        Ok(HammingBall { l, r })
    }

    /// Registry constructor for `hb-<L>-<r>`.
    pub fn build(name: &SamplerName, _: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
        Ok(Box::new(HammingBall::new(name.numbers[0], name.numbers[1])?))
    }
}

/// |H_r| for a block of `b` coordinates with `k` values each: Σ_{j ≤ min(r, b)} C(b, j)(k − 1)^j
/// (None on overflow).
pub fn ball_size(b: usize, r: usize, k: usize) -> Option<usize> {
    let mut total: usize = 1; // j = 0: the centre
    let mut choose: usize = 1; // C(b, j)
    let mut pow: usize = 1; // (k − 1)^j
    for j in 1..=r.min(b) {
        choose = choose.checked_mul(b - j + 1)? / j;
        pow = pow.checked_mul(k - 1)?;
        total = total.checked_add(choose.checked_mul(pow)?)?;
    }
    Some(total)
}

/// Writes every state of H_r(center) within `block` to `out` (rows of length d, `center`
/// first), for `k` values per coordinate.
pub fn hamming_ball(k: usize, center: &[u32], block: &[usize], r: usize, out: &mut Vec<u32>) {
    fn rec(k: usize, center: &[u32], block: &[usize], start: usize, left: usize, y: &mut [u32], out: &mut Vec<u32>) {
        out.extend_from_slice(y);
        if left == 0 {
            return;
        }
        for p in start..block.len() {
            let i = block[p];
            for v in (0..k as u32).filter(|&v| v != center[i]) {
                y[i] = v;
                rec(k, center, block, p + 1, left - 1, y, out);
            }
            y[i] = center[i];
        }
    }
    out.clear();
    let mut y = center.to_vec();
    rec(k, center, block, 0, r, &mut y, out);
}

/// Radius 1: log-densities of H_1(u) within `block`, in [`hamming_ball`]'s order (u, then
/// for each block coordinate i every v ≠ u_i), as f(u) + [`Deltas::coordinate_deltas`]. The
/// models answer a delta in O(neighbours) where `log_density_batch` costs O(d) per row, so
/// this replaces |H_1| full evaluations (75% of an hb-10-1 step on the 5×5 Ising).
fn radius1_log_weights(
    deltas: &Deltas<'_>,
    u: &[u32],
    f_u: f64,
    block: &[usize],
    delta: &mut [f64],
    out: &mut Vec<f64>,
) -> Result<(), EvalError> {
    out.clear();
    out.push(f_u);
    for &i in block {
        deltas.coordinate_deltas(u, i, delta)?;
        let c = u[i] as usize;
        out.extend(delta.iter().enumerate().filter(|&(v, _)| v != c).map(|(_, &dv)| f_u + dv));
    }
    Ok(())
}

/// The move of entry `a` of a radius-1 ball around `center` (order of [`hamming_ball`]):
/// None for the centre, else (coordinate, new value).
fn radius1_move(k: usize, center: &[u32], block: &[usize], a: usize) -> Option<(usize, u32)> {
    let a = a.checked_sub(1)?;
    let i = block[a / (k - 1)];
    let q = (a % (k - 1)) as u32;
    Some((i, if q < center[i] { q } else { q + 1 }))
}

/// Draws an index ∝ exp(`logw`) with one exponential per entry (`w` is scratch). The weights
/// and scan are those of [`sample_logits`]; what differs is the rounding fallback, the last
/// positive weight (this sampler's convention) rather than the last finite logit, which is
/// why it calls [`sample_weights`] on its own exponentials.
fn sample_log_weights(logw: &[f64], w: &mut Vec<f64>, rng: &mut ChainRng) -> usize {
    let m = logw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    w.clear();
    w.extend(logw.iter().map(|&l| (l - m).exp()));
    let total: f64 = w.iter().sum();
    sample_weights(w, total, rng)
}

impl Sampler for HammingBall {
    fn name(&self) -> String {
        format!("hb-{}-{}", self.l, self.r)
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        let space = target.space();
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        let size = ball_size(self.l.min(space.d), self.r, space.k());
        if size.is_none_or(|s| s > MAX_CANDIDATES) {
            return Err(SamplerError::BadParameter {
                sampler: self.name(),
                message: format!(
                    "L = {}, r = {} with {} values per coordinate gives more than {MAX_CANDIDATES} ball states",
                    self.l,
                    self.r,
                    space.k()
                ),
            });
        }
        let d = space.d;
        let n = x0.len() / d;
        let mut f = vec![0.0; n];
        target.log_density_batch(x0, &mut f)?;
        Ok(Box::new(HbChains {
            target,
            deltas: Deltas::of(target),
            hb: *self,
            x: x0.to_vec(),
            f,
            schedules: vec![BlockSchedule::new(d); n],
            ball: Vec::new(),
            u: vec![0; d],
            delta: vec![0.0; space.k()],
            logw: Vec::new(),
            w: Vec::new(),
        }))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

impl ExactKernel for HammingBall {
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        let space = target.space();
        let (d, k) = (space.d, space.k());
        let blocks = first_blocks(d, self.l);
        let (mut us, mut ys) = (Vec::new(), Vec::new());
        let mut row = BTreeMap::new();
        for block in &blocks {
            hamming_ball(k, x, block, self.r, &mut us);
            let pu = 1.0 / (blocks.len() * (us.len() / d)) as f64;
            let mut delta = vec![0.0; k];
            for u in us.chunks(d) {
                hamming_ball(k, u, block, self.r, &mut ys);
                let mut w = vec![0.0; ys.len() / d];
                if self.r == 1 {
                    let f_u = target.log_density(u)?;
                    radius1_log_weights(&Deltas::of(target), u, f_u, block, &mut delta, &mut w)?;
                } else {
                    target.log_density_batch(&ys, &mut w)?;
                }
                softmax_in_place(&mut w);
                for (y, p) in ys.chunks(d).zip(&w) {
                    *row.entry(y.to_vec()).or_insert(0.0) += pu * p;
                }
            }
        }
        Ok(crate::gibbs::finish_row(row))
    }
}

struct HbChains<'t> {
    target: &'t dyn Target,
    /// The target's conditionals, looked up once.
    deltas: Deltas<'t>,
    hb: HammingBall,
    x: Vec<u32>,
    f: Vec<f64>,
    schedules: Vec<BlockSchedule>,
    ball: Vec<u32>,
    u: Vec<u32>,
    delta: Vec<f64>,
    logw: Vec<f64>,
    w: Vec<f64>,
}

impl Chains for HbChains<'_> {
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
        let space = self.target.space();
        let (d, k) = (space.d, space.k());
        for j in 0..self.f.len() {
            let rng = &mut rngs[j];
            let x = &mut self.x[j * d..(j + 1) * d];
            let block = self.schedules[j].next_block(self.hb.l, rng);
            let (changed, m) = if self.hb.r == 1 {
                // Radius 1 without materialising the balls: u = x with at most one move, the
                // candidates around u are scored by coordinate deltas, and f of the chosen
                // state is f(x) plus the deltas along the way (as bg-1 keeps it).
                let m = 1 + block.len() * (k - 1);
                let a = rng.random_range(0..m);
                let mut f_u = self.f[j];
                // (coordinate, value in x) of the at most two coordinates the step touches.
                let mut touched = [(usize::MAX, 0u32); 2];
                if let Some((i, v)) = radius1_move(k, x, block, a) {
                    self.deltas.coordinate_deltas(x, i, &mut self.delta)?;
                    f_u += self.delta[v as usize];
                    touched[0] = (i, x[i]);
                    x[i] = v;
                }
                radius1_log_weights(&self.deltas, x, f_u, block, &mut self.delta, &mut self.logw)?;
                let c = sample_log_weights(&self.logw, &mut self.w, rng);
                if let Some((i, v)) = radius1_move(k, x, block, c) {
                    if touched[0].0 != i {
                        touched[1] = (i, x[i]);
                    }
                    x[i] = v;
                }
                self.f[j] = self.logw[c];
                let changed = touched.iter().filter(|&&(i, old)| i != usize::MAX && x[i] != old).count() as u32;
                (changed, m)
            } else {
                hamming_ball(k, x, block, self.hb.r, &mut self.ball);
                let a = rng.random_range(0..self.ball.len() / d);
                self.u.copy_from_slice(&self.ball[a * d..(a + 1) * d]);
                hamming_ball(k, &self.u, block, self.hb.r, &mut self.ball);
                let m = self.ball.len() / d;
                self.logw.resize(m, 0.0);
                self.target.log_density_batch(&self.ball, &mut self.logw)?;
                let c = sample_log_weights(&self.logw, &mut self.w, rng);
                let y = &self.ball[c * d..(c + 1) * d];
                let changed = x.iter().zip(y).filter(|(a, b)| a != b).count() as u32;
                x.copy_from_slice(y);
                self.f[j] = self.logw[c];
                (changed, m)
            };
            info[j] = StepInfo {
                accepted: true,
                accept_prob: 1.0,
                n_proposed: changed,
                n_changed: changed,
                density_evals: m as u32,
                grad_evals: 0,
                data_evals: 0,
            };
        }
        Ok(())
    }
}

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `hb` (`hb-<…>`).
pub const HB: SamplerSpec = SamplerSpec {
    stem: "hb",
    counts: &[2],
    numbers: &["L", "r"],
    params: &[],
    build: Build::Plain(HammingBall::build),
    doc: "Hamming-ball sampler, blocks of L, radius r (`hb-10-1`)",
    paper: "Titsias & Yau 2017",
    exact: true,
    needs_data: false,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["hb-2-1", "hb-3-2"], schedule_memory: true, ..NO_TESTS },
    defaults: NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gibbs::testkit::*;
    use dlp_core::testing::{PairwiseCategorical, Quadratic};

    #[test]
    fn ball_sizes_and_contents() {
        assert_eq!(ball_size(10, 1, 2), Some(11));
        assert_eq!(ball_size(4, 2, 3), Some(1 + 4 * 2 + 6 * 4));
        assert_eq!(ball_size(2, 5, 2), Some(4));
        let mut out = Vec::new();
        hamming_ball(2, &[0, 1, 0, 1], &[3, 1, 2], 1, &mut out);
        assert_eq!(out, vec![0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1]);
        hamming_ball(3, &[0, 1, 2, 0], &[0, 2, 3], 2, &mut out);
        assert_eq!(out.len() / 4, ball_size(3, 2, 3).unwrap());
        let mut rows: Vec<&[u32]> = out.chunks(4).collect();
        rows.sort();
        rows.dedup();
        assert_eq!(rows.len(), 1 + 3 * 2 + 3 * 4, "ball states must be distinct");
    }

    #[test]
    fn hamming_ball_is_reversible() {
        let q = Quadratic::spec_tiny();
        check_spec_pi(&q, &SPEC_TINY_PI);
        let c = PairwiseCategorical::spec_small();
        check_spec_pi(&c, &SPEC_SMALL_PI);
        for (l, r) in [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (5, 1)] {
            check_exact(&HammingBall::new(l, r).unwrap(), &q, true);
            check_exact(&HammingBall::new(l, r).unwrap(), &c, true);
        }
    }

    #[test]
    fn hb_1_1_is_random_scan_gibbs_on_binary_targets() {
        // With a 1-coordinate block and r = 1 both balls are the whole pair {x, x^{(i)}}, so the
        // second draw is the exact conditional of that site.
        let q = Quadratic::spec_tiny();
        let a = matrix(&HammingBall::new(1, 1).unwrap(), &q, 0);
        let b = matrix(&crate::gibbs::Gibbs { scan: crate::gibbs::Scan::Random }, &q, 0);
        for (ra, rb) in a.iter().zip(&b) {
            for (pa, pb) in ra.iter().zip(rb) {
                assert!((pa - pb).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn step_follows_transition_row() {
        let q = Quadratic::spec_tiny();
        let info = empirical_check(&HammingBall::new(2, 1).unwrap(), &q, &[1, 1, 0], 20_000, 61);
        assert!(info.iter().all(|i| i.density_evals == 3 && i.n_changed <= 2));
        let info =
            empirical_check(&HammingBall::new(2, 1).unwrap(), &PairwiseCategorical::spec_small(), &[2, 0], 20_000, 62);
        assert!(info.iter().all(|i| i.density_evals == 5));
    }

    #[test]
    fn radius_two_and_long_runs_keep_f() {
        // r = 2 takes the materialised-ball branch; same 5σ row check as above (≤ 20 states,
        // 5.7e−7 each: < 1e−4).
        let c = PairwiseCategorical::spec_small();
        let info = empirical_check(&HammingBall::new(2, 2).unwrap(), &c, &[1, 2], 40_000, 63);
        assert!(info.iter().all(|i| i.density_evals == 9));
        // Radius 1 keeps f as f(x) + deltas: it must stay the model's f over a long run.
        let q = Quadratic::spec_tiny();
        let mut ch = HammingBall::new(2, 1).unwrap().start(&q, &[0, 1, 0, 1, 1, 1]).unwrap();
        let mut rngs = dlp_core::chain_rngs(4, 0, 2);
        let mut info = [StepInfo::default(); 2];
        for _ in 0..2000 {
            ch.step(&mut rngs, &mut info);
            for (y, f) in ch.positions().chunks(3).zip(ch.log_densities().unwrap()) {
                assert!((q.log_density(y).unwrap() - f).abs() < 1e-10);
            }
            for (i, y) in info.iter().zip(ch.positions().chunks(3)) {
                // d = 3, L = 2: a pass is a block of 2 (ball of 3) then a block of 1 (ball of 2).
                assert!(i.n_changed <= 2 && matches!(i.density_evals, 2 | 3), "{i:?} at {y:?}");
            }
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = HammingBall::new(3, 0).unwrap_err();
        assert!(e.to_string().contains("r = 0"), "{e}");
        let e = HammingBall::new(1, 2).unwrap_err();
        assert!(e.to_string().contains("L = 1") && e.to_string().contains("r = 2"), "{e}");
    }
}
