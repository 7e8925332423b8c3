//! Test 6 of the BERT notes: on a random tiny BERT (5 specials + 8 allowed tokens, 3 masked
//! slots: 8³ = 512 states), the registry's DMALA and GWG kernels on the infilling target leave
//! the enumerated law π ∝ exp f invariant, to 1e-10 (exact, no sampling). The transition
//! matrices come from dlp-exact over a table of the target's f and ∇f (computed once, in f64,
//! in one batch: the kernels see nothing else of a target), and DMALA's also equals dlp-exact's
//! independent transcription of the kernel.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use dlp_core::TargetExt;
use dlp_core::chain_rngs;
use dlp_core::{Observer, RowTarget, RunOptions, Space, States, StepContext, StepInfo, Target, run_chains};
use dlp_exact::enumerate::all_states;
use dlp_exact::matrix::{
    detailed_balance_residual, kernel_matrix, max_abs_diff, stationarity_residual, stationary, total_variation,
};
use dlp_samplers::{SamplerParams, build_sampler};
use dlp_tensor::bert::gibbs::{gibbs_scan, gibbs_site};
use dlp_tensor::bert::{BertConfig, BertMlm, HiddenAct, InfillTarget, WeightLayout, random_weights};
use nalgebra::DMatrix;
use std::sync::Arc;

const SPECIALS: u32 = 5;
const WORDS: u32 = 8;

fn tiny_target(dtype: DType) -> InfillTarget {
    let cfg = BertConfig {
        vocab_size: (SPECIALS + WORDS) as usize,
        hidden_size: 8,
        num_hidden_layers: 1,
        num_attention_heads: 2,
        intermediate_size: 16,
        hidden_act: HiddenAct::Gelu,
        max_position_embeddings: 8,
        type_vocab_size: 2,
        layer_norm_eps: 1e-12,
        tie_word_embeddings: true,
    };
    // std 0.5: an energy landscape with a few nats of spread (far from uniform).
    let w = random_weights(&cfg, 0.5, 61, WeightLayout { gamma_beta: false, tied: true });
    let model = BertMlm::new(&cfg, VarBuilder::from_tensors(w, dtype, &Device::Cpu)).unwrap();
    // [CLS] w0 [MASK] w3 [MASK] [MASK] [SEP]
    let ids = vec![2, 5, 4, 8, 4, 4, 3];
    InfillTarget::new(Arc::new(model), ids, vec![2, 4, 5], (SPECIALS..SPECIALS + WORDS).collect()).unwrap()
}

/// f and ∇f of every state, looked up (a CPU target with the infilling target's values).
struct Table {
    space: Space,
    f: Vec<f64>,
    g: Vec<f64>,
}

impl Table {
    fn of(t: &dyn Target) -> (Table, Vec<u32>) {
        let space = t.space().clone();
        let states = all_states(&space, 1 << 12).unwrap();
        let n = states.len() / space.d;
        let (mut f, mut g) = (vec![0.0; n], vec![0.0; n * space.grad_len()]);
        t.log_density_grad_batch(&states, &mut f, &mut g).unwrap();
        (Table { space, f, g }, states)
    }

    fn row(&self, x: &[u32]) -> usize {
        self.space.index_of_state(x) as usize
    }
}

impl RowTarget for Table {
    fn row_space(&self) -> &Space {
        &self.space
    }

    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.f[self.row(x)]
    }

    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        let gl = self.space.grad_len();
        let r = self.row(x);
        g.copy_from_slice(&self.g[r * gl..(r + 1) * gl]);
        self.f[r]
    }
}

#[test]
fn dmala_and_gwg_leave_the_enumerated_infilling_law_invariant() {
    let target = tiny_target(DType::F64);
    assert_eq!(target.space().n_states(), Some(512));
    let (table, states) = Table::of(&target);
    // The table is the target: spot-check single-state evaluation against the batch.
    let mut g1 = vec![0.0; table.space.grad_len()];
    for s in [0usize, 137, 511] {
        let x = &states[s * 3..s * 3 + 3];
        let f1 = target.log_density_grad(x, &mut g1).unwrap();
        assert!((f1 - table.f[s]).abs() < 1e-12);
        assert!(g1.iter().zip(&table.g[s * 24..s * 24 + 24]).all(|(a, b)| (a - b).abs() < 1e-12));
    }
    let spread = table.f.iter().cloned().fold(f64::MIN, f64::max) - table.f.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread > 1.0, "a non-trivial law: f spans {spread} nats");
    let m = table.f.iter().cloned().fold(f64::MIN, f64::max);
    let z: f64 = table.f.iter().map(|f| (f - m).exp()).sum();
    let pi: Vec<f64> = table.f.iter().map(|f| (f - m).exp() / z).collect();

    for (name, alpha) in [("dmala", 0.5), ("dmala", 2.0), ("gwg", 0.0)] {
        let params = SamplerParams { step_size: (alpha > 0.0).then_some(alpha), ..Default::default() };
        let sampler = build_sampler(name, &params).unwrap();
        let p = kernel_matrix(&table, sampler.as_ref(), 0).unwrap();
        let res = stationarity_residual(&pi, &p);
        let db = detailed_balance_residual(&pi, &p);
        let moves: f64 = (0..512).map(|i| pi[i] * (1.0 - p[(i, i)])).sum();
        eprintln!("{name} α={alpha}: |πP − π| = {res:.1e}, detailed balance {db:.1e}, P(move) = {moves:.3}");
        assert!(res <= 1e-10, "{name}: stationarity residual {res:e}");
        assert!(db <= 1e-10, "{name}: detailed balance residual {db:e}");
        assert!(moves > 0.05, "{name}: the kernel moves (π-mean move probability {moves})");
        if name == "dmala" {
            let r = dlp_exact::reference::dlp(&table, alpha, None, true).unwrap();
            let d = max_abs_diff(&p, &r);
            assert!(d <= 1e-12, "DMALA vs the independent reference: {d:e}");
        }
    }
}

/// Counts chain-steps and changed tokens.
#[derive(Default)]
struct Count {
    steps: usize,
    changed: u64,
}

impl Observer for Count {
    fn observe(&mut self, _: &StepContext, _: States<'_>, info: &[StepInfo]) {
        self.steps += info.len();
        self.changed += info.iter().map(|i| u64::from(i.n_changed)).sum::<u64>();
    }
}

/// The registry's categorical samplers run on the (f32) infilling target unchanged, move, and
/// give the same chains for 1 and 2 threads.
#[test]
fn registry_samplers_run_on_the_infilling_target() {
    let target = tiny_target(DType::F32);
    let x0 = vec![0u32; 4 * 3];
    for (name, alpha) in [("dmala", Some(1.0)), ("dula", Some(1.0)), ("gwg", None)] {
        let sampler = build_sampler(name, &SamplerParams { step_size: alpha, ..Default::default() }).unwrap();
        let mut finals = Vec::new();
        for threads in [1, 2] {
            let opts = RunOptions { seed: 7, threads, chains_per_task: 0 };
            let out = run_chains(sampler.as_ref(), &target, &x0, 30, &opts, |_, _| Count::default()).unwrap();
            let changed: u64 = out.observers.iter().map(|o| o.changed).sum();
            assert!(changed > 10, "{name}: only {changed} tokens changed");
            finals.push(out.final_states);
        }
        assert_eq!(finals[0], finals[1], "{name}: thread count changed the chains");
    }
}

const MASK: u32 = 4;

/// Wang & Cho's conditionals are BERT's softmax at the masked slot over the allowed tokens
/// (checked against the full logits, f64, 1e-12); the scan's exact transition matrix
/// K₀K₁K₂ is stochastic, has a stationary law, and that law is not the one-pass law ∝ exp f
/// (documented in the module: the scan is not Gibbs for a known π).
#[test]
fn wang_cho_scan_is_bert_conditionals_and_not_the_one_pass_law() {
    let target = tiny_target(DType::F64);
    let states = all_states(target.space(), 1 << 12).unwrap();
    let (n, d, k) = (512, 3, WORDS as usize);
    let model = target.model().clone();
    let mut site = Vec::new();
    for j in 0..d {
        let p = target.conditionals(&states, j, MASK).unwrap();
        // Independent path: full logits of each masked-at-j sequence, softmax over allowed.
        for s in [0usize, 77, 300, 511] {
            let mut ids = target.fill_ids(&states[s * d..(s + 1) * d]);
            ids[target.masked()[j]] = MASK;
            let t = Tensor::from_vec(ids.clone(), (1, ids.len()), &Device::Cpu).unwrap();
            let l = model.logits_from_ids(&t).unwrap().to_vec3::<f64>().unwrap();
            let row: Vec<f64> = target.allowed().iter().map(|&a| l[0][target.masked()[j]][a as usize]).collect();
            let m = row.iter().cloned().fold(f64::MIN, f64::max);
            let z: f64 = row.iter().map(|v| (v - m).exp()).sum();
            for c in 0..k {
                assert!((p[s * k + c] - (row[c] - m).exp() / z).abs() < 1e-12);
            }
        }
        // K_j: from state s, slot j moves to c with p[s][c].
        let mut kj: DMatrix<f64> = DMatrix::zeros(n, n);
        for s in 0..n {
            let mut y = states[s * d..(s + 1) * d].to_vec();
            for c in 0..k {
                y[j] = c as u32;
                kj[(s, target.space().index_of_state(&y) as usize)] += p[s * k + c];
            }
        }
        site.push(kj);
    }
    let scan: DMatrix<f64> = &site[0] * &site[1] * &site[2];
    for s in 0..n {
        assert!((scan.row(s).sum() - 1.0).abs() < 1e-12);
    }
    let mu = stationary(&scan).unwrap();
    assert!(stationarity_residual(&mu, &scan) < 1e-12);
    let (table, _) = Table::of(&target);
    let m = table.f.iter().cloned().fold(f64::MIN, f64::max);
    let z: f64 = table.f.iter().map(|f| (f - m).exp()).sum();
    let pi: Vec<f64> = table.f.iter().map(|f| (f - m).exp() / z).collect();
    let tv = total_variation(&mu, &pi);
    eprintln!("TV(Wang-Cho scan stationary law, one-pass law) = {tv:.3}");
    assert!(tv > 0.01, "the scan's law is not the one-pass law (TV {tv})");
}

/// The site update draws from the conditional: 20,000 chains from one state, slot 1, against
/// the exact probabilities by Pearson's χ² (7 degrees of freedom; 29.88 is the 1 − 1e-4
/// quantile, so a correct sampler fails with probability 1e-4 for a given seed, and the seed is
/// fixed). Also: a scan changes tokens and is reproducible from the seed.
#[test]
fn wang_cho_site_update_draws_from_the_conditional() {
    let target = tiny_target(DType::F64);
    let n = 20_000;
    let x0 = [3u32, 1, 6];
    let mut xs: Vec<u32> = x0.iter().copied().cycle().take(3 * n).collect();
    let p = target.conditionals(&x0, 1, MASK).unwrap();
    let mut rngs = chain_rngs(5, 0, n);
    gibbs_site(&target, &mut xs, &mut rngs, 1, MASK).unwrap();
    let mut counts = [0f64; WORDS as usize];
    for r in 0..n {
        assert_eq!((xs[3 * r], xs[3 * r + 2]), (3, 6), "only slot 1 moves");
        counts[xs[3 * r + 1] as usize] += 1.0;
    }
    let chi2: f64 = counts.iter().zip(&p).map(|(o, q)| (o - n as f64 * q).powi(2) / (n as f64 * q)).sum();
    assert!(p.iter().all(|&q| n as f64 * q > 5.0), "expected counts large enough for χ²");
    assert!(chi2 < 29.88, "χ² = {chi2}");

    let init = target.argmax_init(MASK).unwrap();
    let run = || {
        let mut xs: Vec<u32> = init.iter().copied().cycle().take(3 * 6).collect();
        let mut rngs = chain_rngs(9, 0, 6);
        let mut changed = 0;
        for _ in 0..5 {
            changed += gibbs_scan(&target, &mut xs, &mut rngs, MASK).unwrap().iter().map(|i| i.n_changed).sum::<u32>();
        }
        (xs, changed)
    };
    let (a, changed) = run();
    assert_eq!(a, run().0);
    assert!(changed > 0);
}
