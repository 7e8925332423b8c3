//! Masked-language-model training of a small [`BertMlm`]: the English stand-in of the
//! infilling experiment (`bert.md` §6), a 1.5 M-parameter word-level MLM trained on Moby Dick,
//! a stand-in for BERT (never reported as BERT).
//!
//! Recipe: batches of `batch` windows of `window` tokens, each `[CLS]` + `window − 2`
//! consecutive corpus tokens at a random offset + `[SEP]` (so the infilling code wraps its
//! sentences the same way for this model and for real BERTs); 15 % of the word positions
//! masked (at least one per window), of which 80 % become `[MASK]`, 10 % a random non-special
//! token, 10 % stay; cross-entropy on the masked rows only (the prediction head runs on those
//! rows alone); AdamW (decoupled weight decay 0.01 on every tensor, β = (0.9, 0.999), ε = 1e-8)
//! with the learning rate rising linearly over the warm-up steps and then decaying linearly to
//! `lr_end` at the last step. Initial weights: matrices N(0, 0.02²) from a seeded dlp_core
//! stream (candle's CPU generator is unseeded), LayerNorm gains 1, biases 0, decoder untied.
//!
//! **Exact resumption.** Step t draws its batch from `derive_seed(seed, [STEP, t])`, so no RNG
//! state is saved: a checkpoint ([`MlmTrainer::save_checkpoint`], one safetensors file written
//! atomically) holds the weights, AdamW's moments, the step and the seed, and
//! [`MlmTrainer::resume`] continues the same run (tested: equal to an uninterrupted run).
//! AdamW is [`crate::train::Adam`] (the moments live in the checkpoint).

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{VarBuilder, VarMap};
use dlp_core::rng::{derive_seed, setup_rng};
use dlp_tensor::bert::{BertConfig, BertMlm, HiddenAct, WeightLayout, random_weights};
use rand::RngExt;
use rand::seq::index::sample;
use std::collections::HashMap;
use std::path::Path;

pub use crate::train::TrainError;
use crate::train::{Adam, save_safetensors_atomic};

/// Label of the per-step batch seeds (`derive_seed(seed, [STEP, t])`).
const STEP: u64 = 0x31A;
/// Label of the initial weights' seed.
const INIT: u64 = 0x31B;
/// Number of special tokens at the start of the vocabulary (`[PAD] [UNK] [CLS] [SEP] [MASK]`).
pub const N_SPECIALS: u32 = 5;
/// Ids of `[CLS]`, `[SEP]` and `[MASK]` in the stand-in's vocabulary (BERT's order).
pub const CLS: u32 = 2;
/// Id of `[SEP]`.
pub const SEP: u32 = 3;
/// Id of `[MASK]`.
pub const MASK: u32 = 4;

/// The stand-in's architecture (`bert.md` §6): L = 2, H = 128, 2 heads, I = 512, 64
/// positions, GELU, untied decoder; 1.47 M parameters at V = 4096.
pub fn standin_config(vocab_size: usize) -> BertConfig {
    BertConfig {
        vocab_size,
        hidden_size: 128,
        num_hidden_layers: 2,
        num_attention_heads: 2,
        intermediate_size: 512,
        hidden_act: HiddenAct::Gelu,
        max_position_embeddings: 64,
        type_vocab_size: 2,
        layer_norm_eps: 1e-12,
        tie_word_embeddings: false,
    }
}

/// Hyper-parameters of a training run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlmTrainConfig {
    /// Windows per batch (64).
    pub batch: usize,
    /// Tokens per window, `[CLS]` and `[SEP]` included (32).
    pub window: usize,
    /// Share of word positions masked (0.15).
    pub mask_frac: f64,
    /// Peak learning rate (1e-3).
    pub lr: f64,
    /// Learning rate at the last step (1e-4).
    pub lr_end: f64,
    /// Decoupled weight decay (0.01).
    pub weight_decay: f64,
    /// Linear warm-up steps (50).
    pub warmup: usize,
    /// Total steps (2,500).
    pub steps: usize,
    /// The run's seed.
    pub seed: u64,
}

impl MlmTrainConfig {
    /// The `bert.md` §6 recipe with `steps` steps and seed `seed`.
    pub fn recipe(steps: usize, seed: u64) -> Self {
        MlmTrainConfig {
            batch: 64,
            window: 32,
            mask_frac: 0.15,
            lr: 1e-3,
            lr_end: 1e-4,
            weight_decay: 0.01,
            warmup: 50,
            steps,
            seed,
        }
    }

    /// Learning rate of step t (0-based): lr·(t + 1)/warmup during the warm-up, then linear
    /// from lr to lr_end at step `steps − 1`.
    pub fn lr_at(&self, t: usize) -> f64 {
        if t < self.warmup {
            return self.lr * (t + 1) as f64 / self.warmup as f64;
        }
        let span = self.steps.saturating_sub(1).saturating_sub(self.warmup).max(1) as f64;
        let frac = ((t - self.warmup) as f64 / span).min(1.0);
        self.lr + (self.lr_end - self.lr) * frac
    }

    fn check(&self, cfg: &BertConfig) -> Result<(), TrainError> {
        let bad = |m: String| Err(TrainError::Param(m));
        if self.batch == 0 || self.window < 3 || self.window > cfg.max_position_embeddings {
            return bad(format!(
                "need batch ≥ 1 and 3 ≤ window ≤ max_position_embeddings = {} (batch {}, window {})",
                cfg.max_position_embeddings, self.batch, self.window
            ));
        }
        let ok = self.mask_frac > 0.0 && self.mask_frac <= 1.0 && self.lr > 0.0 && self.lr_end >= 0.0;
        if !ok {
            return bad(format!(
                "need 0 < mask_frac ≤ 1, lr > 0, lr_end ≥ 0 (got {}, {}, {})",
                self.mask_frac, self.lr, self.lr_end
            ));
        }
        if cfg.vocab_size <= N_SPECIALS as usize {
            return bad(format!("vocab_size {} leaves no word after the 5 specials", cfg.vocab_size));
        }
        Ok(())
    }
}

/// One MLM batch: input ids [batch, window], the masked positions (flat row indices into the
/// batch·window rows) and their true tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct MlmBatch {
    /// Input ids, row-major [batch, window], after masking.
    pub ids: Vec<u32>,
    /// Flat indices b·window + s of the masked positions.
    pub rows: Vec<u32>,
    /// The true token of each masked position.
    pub targets: Vec<u32>,
}

/// Draws a batch from the token stream `tokens` (ids of a vocabulary of `vocab_size` with the
/// five specials first) by the recipe of the module doc. Needs `tokens.len() ≥ window − 2`.
pub fn make_batch(tokens: &[u32], vocab_size: usize, tc: &MlmTrainConfig, rng: &mut dlp_core::ChainRng) -> MlmBatch {
    let words = tc.window - 2;
    let n_mask = ((tc.mask_frac * words as f64).round() as usize).clamp(1, words);
    let mut ids = Vec::with_capacity(tc.batch * tc.window);
    let (mut rows, mut targets) = (Vec::new(), Vec::new());
    for b in 0..tc.batch {
        let start = rng.random_range(0..=tokens.len() - words);
        let base = ids.len();
        ids.push(CLS);
        ids.extend_from_slice(&tokens[start..start + words]);
        ids.push(SEP);
        let mut picks = sample(rng, words, n_mask).into_vec();
        picks.sort_unstable();
        for p in picks {
            let pos = base + 1 + p;
            rows.push((b * tc.window + 1 + p) as u32);
            targets.push(ids[pos]);
            let u: f64 = rng.random();
            if u < 0.8 {
                ids[pos] = MASK;
            } else if u < 0.9 {
                ids[pos] = rng.random_range(N_SPECIALS..vocab_size as u32);
            }
        }
    }
    MlmBatch { ids, rows, targets }
}

/// A parameter's name, value and (when resumed) AdamW's two moments.
type NamedParam = (String, Tensor, Option<(Tensor, Tensor)>);

/// The trainable stand-in: the model over a map of `Var`s, AdamW's moments and the step.
pub struct MlmTrainer {
    cfg: BertConfig,
    tc: MlmTrainConfig,
    device: Device,
    model: BertMlm,
    /// (name, parameter, first moment, second moment), sorted by name.
    params: Vec<(String, Var, Tensor, Tensor)>,
    step: usize,
}

impl MlmTrainer {
    /// A fresh model (seeded initial weights, see the module doc), f32 on `device`.
    pub fn new(cfg: &BertConfig, tc: MlmTrainConfig, device: &Device) -> Result<Self, TrainError> {
        tc.check(cfg)?;
        let layout = WeightLayout { gamma_beta: false, tied: false };
        let mut init = random_weights(cfg, 0.02, derive_seed(tc.seed, &[INIT]), layout);
        // random_weights perturbs gains and biases (for tests); the recipe starts them at 1/0.
        for (name, t) in init.iter_mut() {
            if name.ends_with(".bias") {
                *t = t.zeros_like()?;
            } else if name.contains("LayerNorm") {
                *t = t.ones_like()?;
            }
        }
        let params = init.into_iter().map(|(n, t)| (n, t, None)).collect();
        Self::from_tensors(cfg, tc, device, params, 0)
    }

    fn from_tensors(
        cfg: &BertConfig,
        tc: MlmTrainConfig,
        device: &Device,
        tensors: Vec<NamedParam>,
        step: usize,
    ) -> Result<Self, TrainError> {
        let varmap = VarMap::new();
        let mut params = Vec::with_capacity(tensors.len());
        {
            // The lock must be released before a VarBuilder reads the map (it would deadlock).
            let mut data = varmap.data().lock().map_err(|_| TrainError::Param("poisoned VarMap".into()))?;
            for (name, t, moments) in tensors {
                let var = Var::from_tensor(&t.to_dtype(DType::F32)?.to_device(device)?)?;
                let (m, v) = match moments {
                    Some((m, v)) => {
                        (m.to_dtype(DType::F32)?.to_device(device)?, v.to_dtype(DType::F32)?.to_device(device)?)
                    }
                    None => (var.zeros_like()?, var.zeros_like()?),
                };
                data.insert(name.clone(), var.clone());
                params.push((name, var, m, v));
            }
        }
        params.sort_by(|a, b| a.0.cmp(&b.0));
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
        let model = BertMlm::new(cfg, vb)?;
        if varmap.all_vars().len() != params.len() {
            return Err(TrainError::Param(format!(
                "the model has {} tensors, the initial weights {}",
                varmap.all_vars().len(),
                params.len()
            )));
        }
        Ok(MlmTrainer { cfg: cfg.clone(), tc, device: device.clone(), model, params, step })
    }

    /// The model (its weights are the trainer's variables).
    pub fn model(&self) -> &BertMlm {
        &self.model
    }

    /// Steps taken so far.
    pub fn step_count(&self) -> usize {
        self.step
    }

    /// Number of scalar parameters.
    pub fn n_params(&self) -> usize {
        self.params.iter().map(|p| p.1.elem_count()).sum()
    }

    /// Mean cross-entropy over the masked rows of `batch`, as a scalar tensor.
    fn loss(&self, batch: &MlmBatch) -> Result<Tensor, TrainError> {
        let s = self.tc.window;
        let b = batch.ids.len() / s;
        let ids = Tensor::from_vec(batch.ids.clone(), (b, s), &self.device)?;
        let rows = Tensor::from_vec(batch.rows.clone(), batch.rows.len(), &self.device)?;
        let targets = Tensor::from_vec(batch.targets.clone(), batch.targets.len(), &self.device)?;
        let hidden = self.model.hidden(&self.model.embed(&ids)?)?;
        let logits = self.model.head(&hidden.index_select(&rows, 0)?)?;
        Ok(candle_nn::loss::cross_entropy(&logits, &targets)?)
    }

    /// Mean masked cross-entropy of `batch` (no update): the held-out loss.
    pub fn eval_loss(&self, batch: &MlmBatch) -> Result<f64, TrainError> {
        Ok(self.loss(batch)?.to_scalar::<f32>()? as f64)
    }

    /// One AdamW step on step t's batch from `tokens`; returns the batch's loss before the
    /// update. Every parameter must receive a gradient ([`TrainError::NoGradient`] otherwise).
    pub fn train_step(&mut self, tokens: &[u32]) -> Result<f64, TrainError> {
        if tokens.len() < self.tc.window - 2 {
            return Err(TrainError::Param(format!(
                "{} training tokens, fewer than one window of {}",
                tokens.len(),
                self.tc.window - 2
            )));
        }
        let t = self.step;
        let mut rng = setup_rng(derive_seed(self.tc.seed, &[STEP, t as u64]));
        let batch = make_batch(tokens, self.cfg.vocab_size, &self.tc, &mut rng);
        let loss = self.loss(&batch)?;
        let value = loss.to_scalar::<f32>()? as f64;
        let grads = loss.backward()?;
        let lr = self.tc.lr_at(t);
        for (name, var, m, v) in self.params.iter_mut() {
            let g = grads.get(var).ok_or_else(|| TrainError::NoGradient(name.clone()))?;
            Adam::default().step(var, g, m, v, t, lr, self.tc.weight_decay)?;
        }
        self.step += 1;
        Ok(value)
    }

    /// The weights under their checkpoint names (f32), for `model.safetensors`.
    pub fn weights(&self) -> HashMap<String, Tensor> {
        self.params.iter().map(|(n, v, _, _)| (n.clone(), v.as_tensor().clone())).collect()
    }

    /// Writes `model.safetensors` (the weights, `bert.md` §3 names) to `path` atomically.
    pub fn save_weights(&self, path: &Path) -> Result<(), TrainError> {
        save_safetensors_atomic(path, &self.weights())
    }

    /// Writes the checkpoint (weights, moments, step, seed) to `path` atomically.
    pub fn save_checkpoint(&self, path: &Path) -> Result<(), TrainError> {
        let mut map = HashMap::new();
        for (n, v, m, s) in &self.params {
            map.insert(format!("param.{n}"), v.as_tensor().clone());
            map.insert(format!("adam_m.{n}"), m.clone());
            map.insert(format!("adam_v.{n}"), s.clone());
        }
        let meta = [self.step as u32, (self.tc.seed >> 32) as u32, self.tc.seed as u32];
        map.insert("meta.step_seed".into(), Tensor::new(&meta, &Device::Cpu)?);
        save_safetensors_atomic(path, &map)
    }

    /// Continues the run saved at `path` (same config and training config, the seed checked).
    pub fn resume(cfg: &BertConfig, tc: MlmTrainConfig, device: &Device, path: &Path) -> Result<Self, TrainError> {
        tc.check(cfg)?;
        let bad = |m: String| TrainError::Checkpoint { path: path.display().to_string(), message: m };
        let mut map =
            candle_core::safetensors::load(path, &Device::Cpu).map_err(|e| bad(dlp_tensor::candle_message(&e)))?;
        let meta = map.remove("meta.step_seed").ok_or_else(|| bad("no meta.step_seed".into()))?.to_vec1::<u32>()?;
        let seed = ((meta[1] as u64) << 32) | meta[2] as u64;
        if seed != tc.seed {
            return Err(bad(format!("written by a run with seed {seed}, not {}", tc.seed)));
        }
        let names: Vec<String> =
            map.keys().filter_map(|k| k.strip_prefix("param.")).map(String::from).collect::<Vec<_>>();
        let mut tensors = Vec::with_capacity(names.len());
        for n in names {
            let p = map.remove(&format!("param.{n}")).expect("listed");
            let m = map.remove(&format!("adam_m.{n}")).ok_or_else(|| bad(format!("no adam_m.{n}")))?;
            let v = map.remove(&format!("adam_v.{n}")).ok_or_else(|| bad(format!("no adam_v.{n}")))?;
            tensors.push((n, p, Some((m, v))));
        }
        Self::from_tensors(cfg, tc, device, tensors, meta[0] as usize).map_err(|e| bad(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> (BertConfig, MlmTrainConfig) {
        let mut cfg = standin_config(24);
        cfg.hidden_size = 16;
        cfg.intermediate_size = 32;
        cfg.max_position_embeddings = 12;
        let mut tc = MlmTrainConfig::recipe(60, 3);
        tc.batch = 32;
        tc.window = 10;
        tc.warmup = 5;
        tc.lr = 1e-2;
        (cfg, tc)
    }

    /// A seeded i.i.d. stream over the 19 words with Zipf frequencies ∝ 1/k: its entropy is
    /// 2.49 nats against ln 24 = 3.18 for the untrained model, so the loss must fall.
    fn zipf(n: usize) -> Vec<u32> {
        let w: Vec<f64> = (1..=19).map(|k| 1.0 / k as f64).collect();
        let total: f64 = w.iter().sum();
        let mut rng = setup_rng(9);
        (0..n)
            .map(|_| {
                let mut u = rng.random::<f64>() * total;
                let mut k = 0;
                while k < 18 && u >= w[k] {
                    u -= w[k];
                    k += 1;
                }
                5 + k as u32
            })
            .collect()
    }

    #[test]
    fn batches_follow_the_recipe() {
        let (cfg, mut tc) = tiny();
        tc.batch = 200;
        let toks = zipf(500);
        let b = make_batch(&toks, cfg.vocab_size, &tc, &mut setup_rng(1));
        // 15 % of 8 words rounds to 1 per window.
        assert_eq!(b.rows.len(), 200);
        for w in b.ids.chunks(tc.window) {
            assert_eq!((w[0], w[tc.window - 1]), (CLS, SEP));
        }
        let masked = b.rows.iter().filter(|&&r| b.ids[r as usize] == MASK).count() as f64 / 200.0;
        // 80 % [MASK]: binomial(200, 0.8) sd 0.028; ±0.2 is 7 sd (false failure < 1e-11, and the
        // draw is seeded anyway).
        assert!((masked - 0.8).abs() < 0.2, "{masked}");
        assert!(b.targets.iter().all(|&t| t >= N_SPECIALS));
    }

    #[test]
    fn learning_rate_schedule() {
        let tc = MlmTrainConfig::recipe(2500, 0);
        assert!((tc.lr_at(0) - 2e-5).abs() < 1e-15);
        assert!((tc.lr_at(49) - 1e-3).abs() < 1e-15);
        assert!((tc.lr_at(2499) - 1e-4).abs() < 1e-15);
    }

    #[test]
    fn the_stand_in_has_one_and_a_half_million_parameters() {
        let tr = MlmTrainer::new(&standin_config(4096), MlmTrainConfig::recipe(1, 0), &Device::Cpu).unwrap();
        // bert.md §6: 1.47 M.
        assert_eq!(tr.n_params(), 1_474_688);
    }

    /// Loss decreases on a tiny run (deterministic: seeded batches and weights), every tensor
    /// gets a gradient (train_step errors otherwise), and a run resumed from a checkpoint ends
    /// where the uninterrupted run does.
    #[test]
    fn loss_decreases_and_resume_is_exact() {
        let (cfg, tc) = tiny();
        let toks = zipf(400);
        let mut a = MlmTrainer::new(&cfg, tc, &Device::Cpu).unwrap();
        let losses: Vec<f64> = (0..tc.steps).map(|_| a.train_step(&toks).unwrap()).collect();
        let first: f64 = losses[..5].iter().sum::<f64>() / 5.0;
        let last: f64 = losses[tc.steps - 5..].iter().sum::<f64>() / 5.0;
        assert!(first > (24f64).ln() - 0.3, "starts near ln V: {first}");
        assert!(last < first - 0.4, "loss {first} → {last}");

        let ck = std::env::temp_dir().join(format!("dlp-bert-train-{}.safetensors", std::process::id()));
        let mut b = MlmTrainer::new(&cfg, tc, &Device::Cpu).unwrap();
        for _ in 0..17 {
            b.train_step(&toks).unwrap();
        }
        b.save_checkpoint(&ck).unwrap();
        let mut c = MlmTrainer::resume(&cfg, tc, &Device::Cpu, &ck).unwrap();
        assert_eq!(c.step_count(), 17);
        let rest: Vec<f64> = (17..tc.steps).map(|_| c.train_step(&toks).unwrap()).collect();
        assert_eq!(rest, losses[17..].to_vec());
        let (wa, wc) = (a.weights(), c.weights());
        for (n, t) in &wa {
            let d = (t - &wc[n]).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
            assert_eq!(d, 0.0, "{n}");
        }
        let mut wrong = tc;
        wrong.seed = 4;
        assert!(MlmTrainer::resume(&cfg, wrong, &Device::Cpu, &ck).is_err());
        std::fs::remove_file(&ck).unwrap();
    }
}
