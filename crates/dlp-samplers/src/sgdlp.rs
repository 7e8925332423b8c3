//! Stochastic-gradient DULA (`sg-dula`; paper 000 §6 "With Stochastic Gradients", Thm 6.1,
//! App. I.5; spec `reproduction.md` §1.10).
//!
//! The DLP proposal of [`crate::dlp`] with ∇f(x) replaced by the unbiased minibatch estimate
//! ĝ(x) = (N/B) Σ_{n∈batch} ∇ℓ_n(x) + ∇log p0(x) of a [`DataTarget`], and no MH step (the
//! paper uses stochastic gradients with DULA only; a minibatch MH test would compare f on
//! different batches, pitfall P10). Each chain draws a fresh batch of B distinct items
//! uniformly (partial Fisher–Yates on its own permutation buffer, from its own stream) at
//! every step; with B = N the batch is the whole data set in order and no draws are made,
//! so `sg-dula` with B = N is exactly `dula`.
//!
//! Not implemented: the BNN code's "mean over the batch times a constant" energy scaling
//! (§3.6; that belongs to the model's `grad_estimate`), a preconditioner, DMALA.

use crate::dlp::{DlpProposal, MAX_EXACT_STATES, for_each_state};
use crate::registry::{SamplerName, SamplerParams};
use dlp_core::{ChainRng, Chains, DataTarget, ExactKernel, Sampler, SamplerError, Space, StepInfo, Target, Transition};
use rand::RngExt;

/// Stochastic-gradient DULA: step size α and minibatch size B.
#[derive(Clone, Debug)]
pub struct SgDula {
    proposal: DlpProposal,
    batch_size: usize,
}

const NAME: &str = "sg-dula";

fn bad(message: String) -> SamplerError {
    SamplerError::BadParameter { sampler: NAME.to_string(), message }
}

impl SgDula {
    /// SG-DULA with step size α (> 0, finite or +∞) and minibatch size B ≥ 1 (B ≤ N is
    /// checked at start, when N is known).
    pub fn new(alpha: f64, batch_size: usize) -> Result<Self, SamplerError> {
        if batch_size == 0 {
            return Err(bad("batch_size (B) must be ≥ 1, got 0".into()));
        }
        Ok(SgDula { proposal: DlpProposal::new(alpha, None).map_err(bad)?, batch_size })
    }

    /// The proposal (α).
    pub fn proposal(&self) -> &DlpProposal {
        &self.proposal
    }

    /// The minibatch size B.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn data_target<'t>(&self, target: &'t dyn Target) -> Result<&'t dyn DataTarget, SamplerError> {
        let data = target.as_data_target().ok_or_else(|| SamplerError::Unsupported {
            sampler: NAME.into(),
            message: "the model is not a sum over data items (it has no minibatch gradients)".into(),
        })?;
        let n = data.n_data();
        if self.batch_size > n {
            return Err(bad(format!("batch_size (B) must be ≤ N = {n} data items, got {}", self.batch_size)));
        }
        Ok(data)
    }

    /// Starts the concrete chains (what [`Sampler::start`] boxes).
    pub fn start_chains<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<SgChains<'t>, SamplerError> {
        let data = self.data_target(target)?;
        let space = target.space();
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        self.proposal.check_space(space).map_err(bad)?;
        let (d, w, gl) = (space.d, DlpProposal::logit_width(space), space.grad_len());
        let n = x0.len() / d;
        if n == 0 {
            return Err(SamplerError::BadInitialState("no chains".into()));
        }
        let n_data = data.n_data();
        Ok(SgChains {
            data,
            proposal: self.proposal.clone(),
            batch_size: self.batch_size,
            n,
            n_data,
            x: x0.to_vec(),
            perm: (0..n).flat_map(|_| 0..n_data).collect(),
            y: vec![0; d],
            grad: vec![0.0; gl],
            logits: vec![0.0; d * w],
            lognorm: vec![0.0; d],
        })
    }
}

/// Registry constructor for `sg-dula` (needs `step_size` and `batch_size`).
pub fn construct(name: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
    debug_assert_eq!(name.stem, NAME);
    let alpha = params.step_size.ok_or_else(|| bad("step_size (α) is required (--step-size, {0,1} units)".into()))?;
    let b = params.batch_size.ok_or_else(|| bad("batch_size (B, 1 ≤ B ≤ N) is required".into()))?;
    if params.preconditioner.is_some() {
        return Err(bad("sg-dula takes no preconditioner".into()));
    }
    Ok(Box::new(SgDula::new(alpha, b)?))
}

/// Draws B distinct items of 0..N uniformly: a partial Fisher–Yates shuffle of `perm`
/// (a permutation of 0..N, kept between calls) whose first B entries are returned. B = N
/// takes no draws and returns the items in order, so the full-batch case reproduces `dula`.
pub fn draw_batch<'a>(perm: &'a mut [usize], b: usize, rng: &mut ChainRng) -> &'a [usize] {
    let n = perm.len();
    if b == n {
        for (i, p) in perm.iter_mut().enumerate() {
            *p = i;
        }
        return perm;
    }
    for j in 0..b {
        let r = rng.random_range(j..n);
        perm.swap(j, r);
    }
    &perm[..b]
}

/// The stochastic-gradient proposal at `x` for one minibatch: ĝ from
/// [`DataTarget::grad_estimate`] into `grad`, then the DLP logits of
/// [`DlpProposal::logits`] from ĝ (returns log Z_α under ĝ). `step` calls exactly this.
#[allow(clippy::too_many_arguments)]
pub fn stochastic_logits(
    proposal: &DlpProposal,
    data: &dyn DataTarget,
    x: &[u32],
    batch: &[usize],
    grad: &mut [f64],
    logits: &mut [f64],
    lognorm: &mut [f64],
) -> f64 {
    data.grad_estimate(x, batch, grad);
    proposal.logits(data.space(), x, grad, logits, lognorm)
}

impl Sampler for SgDula {
    fn name(&self) -> String {
        NAME.into()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        Ok(Box::new(self.start_chains(target, x0)?))
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

/// Calls `visit` with every B-subset of 0..N in lexicographic order.
fn for_each_subset(n: usize, b: usize, mut visit: impl FnMut(&[usize])) {
    let mut idx: Vec<usize> = (0..b).collect();
    loop {
        visit(&idx);
        // Advance the rightmost index that can still move.
        let Some(i) = (0..b).rev().find(|&i| idx[i] < n - b + i) else { return };
        idx[i] += 1;
        for j in i + 1..b {
            idx[j] = idx[j - 1] + 1;
        }
    }
}

fn n_subsets(n: usize, b: usize) -> f64 {
    (0..b).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

impl ExactKernel for SgDula {
    /// The law of one fresh step from `x`: the DULA row under ĝ, averaged over the C(N, B)
    /// equally likely minibatches. Panics unless the target is a data target, on more than
    /// [`MAX_EXACT_STATES`] candidate states, or more than 10^5 minibatches.
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Vec<Transition> {
        let data = self.data_target(target).unwrap_or_else(|e| panic!("{e}"));
        let space: &Space = target.space();
        let (n_data, b) = (data.n_data(), self.batch_size);
        let n_batches = n_subsets(n_data, b);
        assert!(n_batches <= 1e5, "sg-dula exact row: C({n_data}, {b}) minibatches is too many");
        let n_states = space.n_states().filter(|&s| s <= MAX_EXACT_STATES).expect("exact rows need a small space");
        let w = DlpProposal::logit_width(space);
        let (mut grad, mut logits, mut lognorm) =
            (vec![0.0; space.grad_len()], vec![0.0; space.d * w], vec![0.0; space.d]);
        let mut probs = vec![0.0; n_states as usize];
        for_each_subset(n_data, b, |batch| {
            let log_z = stochastic_logits(&self.proposal, data, x, batch, &mut grad, &mut logits, &mut lognorm);
            let mut s = 0;
            for_each_state(space, |y| {
                probs[s] += self.proposal.log_prob(space, x, y, &logits, log_z).exp() / n_batches;
                s += 1;
            });
        });
        let mut y = vec![0u32; space.d];
        let mut row = Vec::new();
        for (s, &p) in probs.iter().enumerate() {
            if p > 0.0 {
                space.state_of_index(s as u64, &mut y);
                row.push((y.clone(), p));
            }
        }
        row
    }
}

/// Running SG-DULA chains: positions, one permutation buffer of 0..N per chain (for the
/// minibatch draws), and per-step scratch for ĝ and the logits.
pub struct SgChains<'t> {
    data: &'t dyn DataTarget,
    proposal: DlpProposal,
    batch_size: usize,
    n: usize,
    n_data: usize,
    x: Vec<u32>,
    perm: Vec<usize>,
    y: Vec<u32>,
    grad: Vec<f64>,
    logits: Vec<f64>,
    lognorm: Vec<f64>,
}

impl Chains for SgChains<'_> {
    fn n_chains(&self) -> usize {
        self.n
    }

    fn positions(&self) -> &[u32] {
        &self.x
    }

    /// Per chain: the minibatch draws (none if B = N), then d uniforms for the proposal.
    /// One minibatch gradient per step is counted as one gradient evaluation (it costs B/N
    /// of a full one); f is never evaluated.
    fn step(&mut self, rngs: &mut [ChainRng], info: &mut [StepInfo]) {
        let data = self.data;
        let space = data.space();
        let d = space.d;
        for j in 0..self.n {
            let perm = &mut self.perm[j * self.n_data..(j + 1) * self.n_data];
            let batch = draw_batch(perm, self.batch_size, &mut rngs[j]);
            let x = &mut self.x[j * d..(j + 1) * d];
            stochastic_logits(&self.proposal, data, x, batch, &mut self.grad, &mut self.logits, &mut self.lognorm);
            let k = self.proposal.draw(space, x, &self.logits, &self.lognorm, &mut rngs[j], &mut self.y);
            x.copy_from_slice(&self.y);
            info[j] = StepInfo {
                accepted: true,
                accept_prob: 1.0,
                n_proposed: k,
                n_changed: k,
                density_evals: 0,
                grad_evals: 1,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dlp::DlpSampler;
    use crate::dlp::tests::{assert_close, matrix};
    use crate::registry::build_sampler;
    use dlp_core::testing::Quadratic;
    use dlp_core::{chain_rng, chain_rngs};

    /// f(x) = Σ_n ℓ_n(x) + pᵀx on {0,1}^d with ℓ_n(x) = a_nᵀx + c_n x_0 x_1 (the product only
    /// if d ≥ 2), so that minibatch gradients genuinely depend on the batch and on x.
    struct DataQuad {
        space: Space,
        a: Vec<Vec<f64>>,
        c: Vec<f64>,
        p: Vec<f64>,
    }

    impl DataQuad {
        fn new(a: Vec<Vec<f64>>, c: Vec<f64>, p: Vec<f64>) -> Self {
            DataQuad { space: Space::binary(p.len()), a, c, p }
        }
        /// scale · Σ_{n∈items} ∇ℓ_n(x) + ∇log p0 (the full gradient is scale 1, all items).
        fn grad_sum(&self, x: &[u32], items: &[usize], scale: f64, g: &mut [f64]) {
            let d = self.space.d;
            let mut s = vec![0.0; d];
            for &n in items {
                for (si, ai) in s.iter_mut().zip(&self.a[n]) {
                    *si += ai;
                }
                if d >= 2 {
                    s[0] += self.c[n] * x[1] as f64;
                    s[1] += self.c[n] * x[0] as f64;
                }
            }
            for i in 0..d {
                g[i] = scale * s[i] + self.p[i];
            }
        }
    }

    impl Target for DataQuad {
        fn space(&self) -> &Space {
            &self.space
        }
        fn log_density_batch(&self, xs: &[u32], out: &mut [f64]) {
            let d = self.space.d;
            for (x, o) in xs.chunks(d).zip(out) {
                let v: Vec<f64> = x.iter().map(|&c| c as f64).collect();
                let mut f: f64 = (0..d).map(|i| self.p[i] * v[i]).sum();
                for n in 0..self.a.len() {
                    f += (0..d).map(|i| self.a[n][i] * v[i]).sum::<f64>();
                    if d >= 2 {
                        f += self.c[n] * v[0] * v[1];
                    }
                }
                *o = f;
            }
        }
        fn log_density_grad_batch(&self, xs: &[u32], f: &mut [f64], g: &mut [f64]) {
            let d = self.space.d;
            self.log_density_batch(xs, f);
            let all: Vec<usize> = (0..self.a.len()).collect();
            for (x, gr) in xs.chunks(d).zip(g.chunks_mut(d)) {
                self.grad_sum(x, &all, 1.0, gr);
            }
        }
        fn as_data_target(&self) -> Option<&dyn DataTarget> {
            Some(self)
        }
    }

    impl DataTarget for DataQuad {
        fn n_data(&self) -> usize {
            self.a.len()
        }
        fn grad_estimate(&self, x: &[u32], batch: &[usize], grad: &mut [f64]) {
            self.grad_sum(x, batch, self.a.len() as f64 / batch.len() as f64, grad);
        }
    }

    fn three_items() -> DataQuad {
        DataQuad::new(
            vec![vec![0.9, -0.4, 0.3], vec![-0.6, 0.8, -0.2], vec![0.2, 0.1, 0.7]],
            vec![0.5, -1.2, 0.4],
            vec![0.1, -0.3, 0.2],
        )
    }

    #[test]
    fn theorem_6_1_example_matches_spec_4_8() {
        // g = 0.5, ĝ = g ± 1 equiprobable: N = 2 items, B = 1, ∇ℓ = (0.75, −0.25), so
        // ĝ = 2∇ℓ_n ∈ {1.5, −0.5}; α = 0.5 ≤ 1/L with L = 1.5.
        let t = DataQuad::new(vec![vec![0.75], vec![-0.25]], vec![0.0, 0.0], vec![0.0]);
        let prop = DlpProposal::new(0.5, None).unwrap();
        let bound = (0.5f64 * (1.5 - 1.0 / 0.5)).exp(); // √V · exp((L − 1/α)/2), V = 1
        assert!((bound - 0.7788007831).abs() < 1e-10);
        for (x, want) in [(0u32, 0.2151233603), (1, 0.1727741028)] {
            let (mut g, mut l, mut n) = ([0.0], [0.0], [0.0]);
            t.log_density_grad(&[x], &mut g);
            assert!((g[0] - 0.5).abs() < 1e-15);
            let z = prop.logits(t.space(), &[x], &g, &mut l, &mut n);
            let q = prop.log_prob(t.space(), &[x], &[1 - x], &l, z).exp();
            let mut e = 0.0;
            for batch in [[0usize], [1]] {
                let zh = stochastic_logits(&prop, &t, &[x], &batch, &mut g, &mut l, &mut n);
                let qh = prop.log_prob(t.space(), &[x], &[1 - x], &l, zh).exp();
                e += 0.5 * 2.0 * (qh - q).abs();
            }
            assert!((e - want).abs() < 1e-10, "x = {x}: {e} vs {want}");
            assert!(e <= bound);
        }
    }

    #[test]
    fn full_batch_sg_dula_is_dula() {
        let t = three_items();
        let sg = SgDula::new(0.4, 3).unwrap();
        let dula = DlpSampler::dula(0.4).unwrap();
        let x0 = [0u32, 0, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0];
        let mut a = sg.start_chains(&t, &x0).unwrap();
        let mut b = dula.start_chains(&t, &x0).unwrap();
        let (mut ra, mut rb) = (chain_rngs(9, 0, 5), chain_rngs(9, 0, 5));
        let (mut ia, mut ib) = (vec![StepInfo::default(); 5], vec![StepInfo::default(); 5]);
        let mut moves = 0;
        for _ in 0..300 {
            a.step(&mut ra, &mut ia);
            b.step(&mut rb, &mut ib);
            assert_eq!(a.positions(), b.positions());
            for (p, q) in ia.iter().zip(&ib) {
                assert_eq!(p.n_changed, q.n_changed);
                moves += p.n_changed;
            }
        }
        assert!(moves > 100, "the chains must actually move ({moves})");
        for row in matrix(&sg, &t).iter().zip(matrix(&dula, &t).iter()) {
            assert_close(row.0, row.1, 1e-15, "B = N row");
        }
    }

    /// One step of m = 20,000 chains from `x0` against the exact minibatch-averaged row, each
    /// cell within 5 standard errors: 5.7e-7 two-sided per cell under the normal
    /// approximation (m·p ≥ 100 for every cell here), ≤ 8 cells × 2 cases < 1e-4 overall.
    #[test]
    fn minibatch_step_agrees_with_transition_row() {
        let t = three_items();
        for (b, x0, seed) in [(1, [0u32, 1, 0], 21u64), (2, [1, 1, 0], 22)] {
            let sg = SgDula::new(0.6, b).unwrap();
            let m = 20_000;
            let start: Vec<u32> = x0.iter().copied().cycle().take(3 * m).collect();
            let mut c = sg.start_chains(&t, &start).unwrap();
            let mut rngs = chain_rngs(seed, 0, m);
            let mut info = vec![StepInfo::default(); m];
            c.step(&mut rngs, &mut info);
            let row = sg.transition_row(&t, &x0, 0);
            let full = DlpSampler::dula(0.6).unwrap().transition_row(&t, &x0, 0);
            let gap: f64 = row.iter().zip(&full).map(|(r, f)| (r.1 - f.1).abs()).sum();
            assert!(gap > 0.05, "minibatches must change the law here ({gap})");
            assert!((row.iter().map(|r| r.1).sum::<f64>() - 1.0).abs() < 1e-12);
            for (y, p) in &row {
                assert!(*p >= 0.005, "premise of the error rate: m·p ≥ 100 ({y:?}: {p})");
                let hits = c.positions().chunks(3).filter(|r| r == y).count() as f64 / m as f64;
                let se = (p * (1.0 - p) / m as f64).sqrt();
                assert!((hits - p).abs() < 5.0 * se, "B = {b}, {x0:?} → {y:?}: {hits} vs {p}");
            }
        }
    }

    #[test]
    fn batches_are_distinct_items() {
        let mut perm: Vec<usize> = (0..7).collect();
        let mut rng = chain_rng(4, 0);
        let mut seen = [0usize; 7];
        for _ in 0..2000 {
            let b = draw_batch(&mut perm, 3, &mut rng).to_vec();
            assert!(b.iter().all(|&i| i < 7));
            assert!(b[0] != b[1] && b[0] != b[2] && b[1] != b[2]);
            for i in b {
                seen[i] += 1;
            }
        }
        // Each item is in a batch w.p. 3/7: 857 of 2000 expected, sd ≈ 22; 8 sd is far.
        assert!(seen.iter().all(|&s| (s as f64 - 6000.0 / 7.0).abs() < 180.0), "{seen:?}");
    }

    #[test]
    fn chains_started_together_or_apart_agree() {
        let t = three_items();
        let sg = SgDula::new(0.5, 2).unwrap();
        let x0 = [0u32, 0, 0, 1, 1, 1, 0, 1, 0];
        let mut all = sg.start_chains(&t, &x0).unwrap();
        let mut rngs = chain_rngs(13, 0, 3);
        let mut info = vec![StepInfo::default(); 3];
        let mut single: Vec<_> = (0..3).map(|j| sg.start_chains(&t, &x0[3 * j..3 * j + 3]).unwrap()).collect();
        let mut srng: Vec<_> = (0..3).map(|j| vec![chain_rng(13, j)]).collect();
        let mut sinfo = [StepInfo::default()];
        for _ in 0..100 {
            all.step(&mut rngs, &mut info);
            for j in 0..3 {
                single[j].step(&mut srng[j], &mut sinfo);
                assert_eq!(single[j].positions(), &all.positions()[3 * j..3 * j + 3]);
                assert_eq!(sinfo[0], info[j]);
            }
        }
    }

    #[test]
    fn parameters_are_checked() {
        let p = |step: Option<f64>, b: Option<usize>, h: Option<Vec<f64>>| SamplerParams {
            step_size: step,
            preconditioner: h,
            batch_size: b,
        };
        let msg = |e: SamplerError| match e {
            SamplerError::BadParameter { message, .. } => message,
            other => panic!("expected BadParameter, got {other:?}"),
        };
        assert!(msg(build_sampler("sg-dula", &p(Some(0.1), None, None)).err().unwrap()).contains("batch_size"));
        assert!(msg(build_sampler("sg-dula", &p(Some(0.1), Some(0), None)).err().unwrap()).contains("got 0"));
        assert!(msg(build_sampler("sg-dula", &p(None, Some(1), None)).err().unwrap()).contains("step_size"));
        assert!(msg(build_sampler("sg-dula", &p(Some(f64::NAN), Some(1), None)).err().unwrap()).contains("NaN"));
        assert!(
            msg(build_sampler("sg-dula", &p(Some(0.1), Some(1), Some(vec![1.0]))).err().unwrap())
                .contains("preconditioner")
        );
        let s = build_sampler("sg-dula", &p(Some(0.1), Some(4), None)).unwrap();
        assert_eq!(s.name(), "sg-dula");
        let t = three_items();
        let m = msg(s.start(&t, &[0, 0, 0]).err().unwrap());
        assert!(m.contains("N = 3") && m.contains("got 4"), "{m}");
        let q = Quadratic::spec_tiny();
        assert!(matches!(s.start(&q, &[0, 0, 0]).err().unwrap(), SamplerError::Unsupported { .. }));
    }
}
