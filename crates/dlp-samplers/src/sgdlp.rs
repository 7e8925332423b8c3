//! Stochastic-gradient DLP: `sg-dula` and `sg-dmala` (paper 000 §6 "With Stochastic
//! Gradients", Thm 6.1, App. I.5; spec `reproduction.md` §1.10).
//!
//! The DLP proposal of [`crate::dlp`] with ∇f(x) replaced by the model's minibatch estimate
//! ĝ(x) on the step's batch (under the model's [`dlp_core::BatchScaling`]: the paper's
//! unbiased (N/B)Σ, or the official BNN code's mean times a constant). The batch is drawn by
//! the runner from the minibatch stream of the step ([`dlp_core::run::draw_minibatch`]) and
//! shared by every chain, so all chains' ĝ come from one [`Target::evaluate`] call (one
//! matrix product on a data model). With B = N the batch is every item in order, so
//! `sg-dula` with B = N is exactly `dula`.
//!
//! `sg-dula` has no MH step (the paper uses stochastic gradients with DULA only).
//! `sg-dmala` is the SG variant of DMALA's proposal that the official BNN code runs: the
//! forward and reverse proposals and the MH test all use f̂ and ĝ on the step's one batch.
//! **It is not exact**: a minibatch MH test compares f̂ on one batch, which does not leave π
//! invariant (pitfall P10); the exact suite checks it against its own (inexact) transition
//! matrix, not against π. The official code draws a fresh batch at every call of f, even
//! within one MH step; here the batch is one per step, so that the chains share one product.
//!
//! Not implemented: a preconditioner.

use crate::dlp::proposal::{DlpProposal, MAX_EXACT_STATES};
use crate::dual_averaging::MALA_TARGET_ACCEPT;
use crate::mh::{Caching, MhChains, exact_row};
use crate::spec::Build;
use crate::spec::{
    BATCH_SIZE, PLAIN, STEP_SIZE, SamplerName, SamplerParams, SamplerSpec, TestSpec, ergodic_everywhere,
};
use dlp_core::TargetExt;
use dlp_core::{Batch, Chains, EvalError, ExactKernel, Sampler, SamplerError, Space, Target, Transition};

/// Stochastic-gradient DLP: step size α, minibatch size B, with (`sg-dmala`) or without
/// (`sg-dula`) the minibatch MH test.
#[derive(Clone, Debug)]
pub struct SgDlp {
    proposal: DlpProposal,
    batch_size: usize,
    mh: bool,
}

/// The former name of [`SgDlp`] without MH.
pub type SgDula = SgDlp;

fn bad(name: &str, message: String) -> SamplerError {
    SamplerError::BadParameter { sampler: name.to_string(), message }
}

impl SgDlp {
    /// SG-DULA with step size α (> 0, finite or +∞) and minibatch size B ≥ 1 (B ≤ N is
    /// checked at start, when N is known).
    pub fn new(alpha: f64, batch_size: usize) -> Result<Self, SamplerError> {
        Self::with_mh(alpha, batch_size, false)
    }

    /// SG-DMALA (`mh`) or SG-DULA.
    pub fn with_mh(alpha: f64, batch_size: usize, mh: bool) -> Result<Self, SamplerError> {
        let name = if mh { "sg-dmala" } else { "sg-dula" };
        if batch_size == 0 {
            return Err(bad(name, "batch_size (B) must be ≥ 1, got 0".into()));
        }
        Ok(SgDlp { proposal: DlpProposal::new(alpha, None).map_err(|m| bad(name, m))?, batch_size, mh })
    }

    /// The proposal (α).
    pub fn proposal(&self) -> &DlpProposal {
        &self.proposal
    }

    /// The minibatch size B.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn n_data(&self, target: &dyn Target) -> Result<usize, SamplerError> {
        let n = target.n_data().ok_or_else(|| SamplerError::Unsupported {
            sampler: self.name(),
            message: "the model is not a sum over data items (it has no minibatch gradients)".into(),
        })?;
        if self.batch_size > n {
            return Err(bad(
                &self.name(),
                format!("batch_size (B) must be ≤ N = {n} data items, got {}", self.batch_size),
            ));
        }
        Ok(n)
    }

    /// Starts the concrete chains (what [`Sampler::start`] boxes): the one MH kernel with
    /// [`Caching::Refresh`] (f̂ and ĝ of every chain on each step's batch, one call; then per
    /// chain d uniforms for the proposal; `sg-dmala` then evaluates every proposal on the same
    /// batch, one call, and draws one uniform per moving chain for the MH test).
    pub fn start_chains<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<SgChains<'t>, SamplerError> {
        self.n_data(target)?;
        let space = target.space();
        space.check_states(x0).map_err(SamplerError::BadInitialState)?;
        self.proposal.check_space(space).map_err(|m| bad(&self.name(), m))?;
        if x0.len() < space.d {
            return Err(SamplerError::BadInitialState("no chains".into()));
        }
        MhChains::on_target(target, self.proposal.clone(), self.mh, Caching::Refresh, x0)
    }

    /// The law of one step from `x` on one given batch (what a step does once the runner has
    /// drawn that batch), added with weight `weight` to `probs` (the states of the space in
    /// enumeration order).
    fn row_on_batch(
        &self,
        target: &dyn Target,
        x: &[u32],
        batch: Batch<'_>,
        probs: &mut [f64],
        weight: f64,
    ) -> Result<(), EvalError> {
        let space = target.space();
        let mut f = [0.0];
        // f̂ and ĝ of each state on `batch`.
        let row = exact_row(&self.proposal, self.mh, space, x, |y, g| {
            target.evaluate(y, batch, &mut f, Some(g))?;
            Ok(f[0])
        })?;
        for (y, p) in row {
            probs[space.index_of_state(&y) as usize] += weight * p;
        }
        Ok(())
    }
}

/// Registry constructor for `sg-dula` and `sg-dmala` (need `step_size` and `batch_size`).
pub fn construct(name: &SamplerName, params: &SamplerParams) -> Result<Box<dyn Sampler>, SamplerError> {
    let mh = name.stem == "sg-dmala";
    let stem = if mh { "sg-dmala" } else { "sg-dula" };
    let alpha =
        params.step_size.ok_or_else(|| bad(stem, "step_size (α) is required (--step-size, {0,1} units)".into()))?;
    let b = params.batch_size.ok_or_else(|| bad(stem, "batch_size (B, 1 ≤ B ≤ N) is required".into()))?;
    if params.preconditioner.is_some() {
        return Err(bad(stem, format!("{stem} takes no preconditioner")));
    }
    Ok(Box::new(SgDlp::with_mh(alpha, b, mh)?))
}

impl Sampler for SgDlp {
    fn name(&self) -> String {
        if self.mh { "sg-dmala" } else { "sg-dula" }.into()
    }

    fn start<'t>(&self, target: &'t dyn Target, x0: &[u32]) -> Result<Box<dyn Chains + 't>, SamplerError> {
        Ok(Box::new(self.start_chains(target, x0)?))
    }

    fn minibatch(&self) -> Option<usize> {
        Some(self.batch_size)
    }

    fn exact(&self) -> Option<&dyn ExactKernel> {
        Some(self)
    }
}

/// Calls `visit` with every B-subset of 0..N in lexicographic order.
pub fn for_each_subset(n: usize, b: usize, mut visit: impl FnMut(&[usize])) {
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

impl SgDlp {
    /// The law of one step from `x` given the batch `items`, as `(state, probability)` pairs
    /// (the conditional law the empirical tests compare with).
    pub fn transition_row_on(
        &self,
        target: &dyn Target,
        x: &[u32],
        items: &[usize],
    ) -> Result<Vec<Transition>, EvalError> {
        let space = target.space();
        let n_states = space.n_states().filter(|&s| s <= MAX_EXACT_STATES).expect("exact rows need a small space");
        let mut probs = vec![0.0; n_states as usize];
        self.row_on_batch(target, x, Batch::Items(items), &mut probs, 1.0)?;
        Ok(to_row(space, &probs))
    }
}

fn to_row(space: &Space, probs: &[f64]) -> Vec<Transition> {
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

impl ExactKernel for SgDlp {
    /// The law of one fresh step from `x`: the row on one batch, averaged over the C(N, B)
    /// equally likely batches the runner draws. Panics unless the target has data terms, on
    /// more than [`MAX_EXACT_STATES`] candidate states, or more than 10^5 minibatches.
    fn transition_row(&self, target: &dyn Target, x: &[u32], _phase: usize) -> Result<Vec<Transition>, EvalError> {
        let n_data = self.n_data(target).unwrap_or_else(|e| panic!("{e}"));
        let space: &Space = target.space();
        let b = self.batch_size;
        let n_batches = n_subsets(n_data, b);
        assert!(n_batches <= 1e5, "{} exact row: C({n_data}, {b}) minibatches is too many", self.name());
        let n_states = space.n_states().filter(|&s| s <= MAX_EXACT_STATES).expect("exact rows need a small space");
        let mut probs = vec![0.0; n_states as usize];
        let mut result = Ok(());
        for_each_subset(n_data, b, |batch| {
            if result.is_ok() {
                result = self.row_on_batch(target, x, Batch::Items(batch), &mut probs, 1.0 / n_batches);
            }
        });
        result?;
        Ok(to_row(space, &probs))
    }
}

/// Running SG-DLP chains: the one MH kernel ([`crate::mh`]) with stochastic gradients.
pub type SgChains<'t> = MhChains<'t, DlpProposal>;

// ---- registry rows (this module's names, parameters, defaults and tests) ----

/// The registry row of `sg-dula`.
pub const SG_DULA: SamplerSpec = SamplerSpec {
    stem: "sg-dula",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE, BATCH_SIZE],
    build: Build::Plain(construct),
    doc: "stochastic-gradient DULA on data targets, one minibatch per step shared by all chains",
    paper: "Zhang et al. 2022, §6",
    exact: false,
    needs_data: true,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["sg-dula"], step_size: Some(0.5), batch_size: Some(2), schedule_memory: false },
    defaults: crate::spec::NO_DEFAULTS,
};

/// The registry row of `sg-dmala`.
pub const SG_DMALA: SamplerSpec = SamplerSpec {
    stem: "sg-dmala",
    counts: PLAIN,
    numbers: &[],
    params: &[STEP_SIZE, BATCH_SIZE],
    build: Build::Plain(construct),
    doc: "stochastic-gradient DMALA as the official BNN code runs it: the MH test on the \
          step's minibatch, so not exact for π",
    paper: "Zhang et al. 2022, §6 (official code)",
    exact: false,
    needs_data: true,
    particles: false,
    augmented: false,
    not_ergodic_on: ergodic_everywhere,
    target_accept: MALA_TARGET_ACCEPT,
    adapt: None,
    tests: TestSpec { names: &["sg-dmala"], step_size: Some(0.5), batch_size: Some(2), schedule_memory: false },
    defaults: crate::spec::NO_DEFAULTS,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dlp::DlpSampler;
    use crate::dlp::tests::{assert_close, matrix};
    use crate::registry::build_sampler;
    use dlp_core::testing::Quadratic;
    use dlp_core::{EvalError, StepInfo, chain_rng, chain_rngs};

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

    impl DataQuad {
        fn full(&self, xs: &[u32], out: &mut [f64]) {
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
        fn full_grad(&self, xs: &[u32], f: &mut [f64], g: &mut [f64]) {
            let d = self.space.d;
            self.full(xs, f);
            let all: Vec<usize> = (0..self.a.len()).collect();
            for (x, gr) in xs.chunks(d).zip(g.chunks_mut(d)) {
                self.grad_sum(x, &all, 1.0, gr);
            }
        }
    }

    impl Target for DataQuad {
        fn space(&self) -> &Space {
            &self.space
        }
        fn capabilities(&self) -> dlp_core::Capabilities<'_> {
            dlp_core::Capabilities { n_data: Some(self.a.len()), ..Default::default() }
        }
        /// Minibatch: f̂ = (N/B) Σ_{n∈β} ℓ_n + pᵀx and its gradient (BatchScaling::Sum).
        fn evaluate(
            &self,
            xs: &[u32],
            batch: Batch<'_>,
            f: &mut [f64],
            g: Option<&mut [f64]>,
        ) -> Result<(), EvalError> {
            let Batch::Items(items) = batch else {
                match g {
                    Some(g) => self.full_grad(xs, f, g),
                    None => self.full(xs, f),
                }
                return Ok(());
            };
            let d = self.space.d;
            let scale = self.a.len() as f64 / items.len() as f64;
            for (x, o) in xs.chunks(d).zip(f.iter_mut()) {
                let v: Vec<f64> = x.iter().map(|&c| c as f64).collect();
                let mut sum = 0.0;
                for &n in items {
                    sum += (0..d).map(|i| self.a[n][i] * v[i]).sum::<f64>();
                    if d >= 2 {
                        sum += self.c[n] * v[0] * v[1];
                    }
                }
                *o = scale * sum + (0..d).map(|i| self.p[i] * v[i]).sum::<f64>();
            }
            if let Some(g) = g {
                for (x, gr) in xs.chunks(d).zip(g.chunks_mut(d)) {
                    self.grad_sum(x, items, scale, gr);
                }
            }
            Ok(())
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
            t.log_density_grad(&[x], &mut g).unwrap();
            assert!((g[0] - 0.5).abs() < 1e-15);
            let z = prop.logits(t.space(), &[x], &g, &mut l, &mut n);
            let q = prop.log_prob(t.space(), &[x], &[1 - x], &l, z).exp();
            let mut e = 0.0;
            for batch in [[0usize], [1]] {
                t.evaluate(&[x], Batch::Items(&batch), &mut [0.0], Some(&mut g)).unwrap();
                let zh = prop.logits(t.space(), &[x], &g, &mut l, &mut n);
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
            a.try_step(&mut ra, &mut ia, Batch::Items(&[0, 1, 2])).unwrap();
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

    /// One step of m = 20,000 chains from `x0` on one fixed batch against the exact row on that
    /// batch, for sg-dula and sg-dmala, each cell within 5 standard errors: 5.7e-7 two-sided
    /// per cell under the normal approximation (m·p ≥ 100 for every cell checked), ≤ 8 cells ×
    /// 4 cases < 2e-5 overall. The batch-averaged row (what the runner's uniformly drawn batch
    /// gives) is checked against the independent reference in dlp-exact.
    #[test]
    fn minibatch_step_agrees_with_transition_row() {
        let t = three_items();
        for mh in [false, true] {
            for (items, x0, seed) in [(vec![1usize], [0u32, 1, 0], 21u64), (vec![0, 2], [1, 1, 0], 22)] {
                let sg = SgDlp::with_mh(0.6, items.len(), mh).unwrap();
                let m = 20_000;
                let start: Vec<u32> = x0.iter().copied().cycle().take(3 * m).collect();
                let mut c = sg.start_chains(&t, &start).unwrap();
                let mut rngs = chain_rngs(seed, 0, m);
                let mut info = vec![StepInfo::default(); m];
                c.try_step(&mut rngs, &mut info, Batch::Items(&items)).unwrap();
                assert!(info.iter().all(|i| i.data_evals == items.len() as u32 * if mh { 2 } else { 1 }));
                let row = sg.transition_row_on(&t, &x0, &items).unwrap();
                let full =
                    DlpSampler::new("d", mh, DlpProposal::new(0.6, None).unwrap()).transition_row(&t, &x0, 0).unwrap();
                let gap: f64 = row.iter().zip(&full).map(|(r, f)| (r.1 - f.1).abs()).sum();
                assert!(gap > 0.05, "the minibatch must change the law here ({gap})");
                assert!((row.iter().map(|r| r.1).sum::<f64>() - 1.0).abs() < 1e-12);
                for (y, p) in row.iter().filter(|r| r.1 * m as f64 >= 100.0) {
                    let hits = c.positions().chunks(3).filter(|r| r == y).count() as f64 / m as f64;
                    let se = (p * (1.0 - p) / m as f64).sqrt();
                    assert!((hits - p).abs() < 5.0 * se, "mh {mh}, {items:?}, {x0:?} → {y:?}: {hits} vs {p}");
                }
            }
        }
    }

    #[test]
    fn runner_batches_are_shared_distinct_items_and_thread_independent() {
        let mut perm = Vec::new();
        let mut seen = [0usize; 7];
        for step in 1..=2000 {
            let b = dlp_core::run::draw_minibatch(4, step, 3, &mut perm, 7).to_vec();
            assert!(b.iter().all(|&i| i < 7));
            assert!(b[0] != b[1] && b[0] != b[2] && b[1] != b[2]);
            assert_eq!(
                b,
                dlp_core::run::draw_minibatch(4, step, 3, &mut perm, 7),
                "a batch depends on (seed, step) only"
            );
            for i in b {
                seen[i] += 1;
            }
        }
        // Each item is in a batch w.p. 3/7: 857 of 2000 expected, sd ≈ 22; 8 sd is far.
        assert!(seen.iter().all(|&s| (s as f64 - 6000.0 / 7.0).abs() < 180.0), "{seen:?}");
        let t = three_items();
        let x0: Vec<u32> = (0..21).map(|i| (i % 3 == 1) as u32).collect();
        for name in ["sg-dula", "sg-dmala"] {
            let s =
                build_sampler(name, &SamplerParams { step_size: Some(0.5), batch_size: Some(2), ..Default::default() })
                    .unwrap();
            let run = |threads, chains_per_task| {
                let o = dlp_core::RunOptions { seed: 5, threads, chains_per_task };
                dlp_core::run_chains(s.as_ref(), &t, &x0, 50, &o, |_, _| ()).unwrap().final_states
            };
            let one = run(1, 0);
            assert_eq!(one, run(2, 0), "{name}");
            assert_eq!(one, run(2, 3), "{name}");
            assert_ne!(one, x0, "{name}: the chains must move");
        }
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
        for step in 0..100 {
            let items = [step % 3, (step + 1) % 3];
            all.try_step(&mut rngs, &mut info, Batch::Items(&items)).unwrap();
            for j in 0..3 {
                single[j].try_step(&mut srng[j], &mut sinfo, Batch::Items(&items)).unwrap();
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
            step_size_min: None,
            ladder: None,
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
