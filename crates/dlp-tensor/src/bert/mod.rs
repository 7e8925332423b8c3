//! A BERT masked language model on candle whose every op backpropagates, its one-pass infilling
//! energy and the samplers' target over the masked slots (main paper §7.5 / App. I.6, Table 3).
//!
//! Why a forward of our own and not candle-transformers' `BertForMaskedLM`: candle-nn's fused
//! `LayerNorm` (and `softmax_last_dim`) silently detach gradients and have no f64 kernel, so an
//! MLM loss through candle-transformers reaches only 2 of its 43 tensors and never the input
//! (measured in the project's BERT notes). The forward here uses only ops that backprop
//! (hand-written LayerNorm, `ops::softmax`, plain matmuls), reaches every weight and the
//! input embeddings, runs in f32 or f64, and agrees with candle-transformers to ~1e-6 (tests).
//!
//! * [`BertConfig`], [`BertMlm`]: config.json and the network (`bert.embeddings.*`,
//!   `bert.encoder.layer.N.*`, `cls.predictions.*`; LayerNorm `weight`/`bias` or `gamma`/`beta`;
//!   decoder weight tied to the word embeddings when absent; decoder bias from
//!   `cls.predictions.bias` when `cls.predictions.decoder.bias` is absent).
//! * [`Vocab`]: vocab.txt, the special tokens, and tokenisation of input lines.
//! * [`energy`]: the one-pass energy f(θ) = Σ_{i∈M} log softmax(logits_i)\[θ_i\] and its exact
//!   gradient with respect to the one-hot of the masked slots; [`InfillTarget`], the
//!   categorical target the registry's samplers run on; [`gibbs`], Wang & Cho's per-position
//!   resampling; [`infill`], whole runs (argmax start, chains, top-K fills by f).
//!
//! Padding is not supported: every sequence of a batch has the same length (infilling runs
//! the chains of one sentence together), positions are 0..S and the token type is 0.

pub mod energy;
mod gelu;
pub mod gibbs;
pub mod infill;
mod vocab;

pub use energy::InfillTarget;
pub use vocab::{Piece, Vocab, VocabKind};

use crate::Error;
use crate::layers::{linear, map_cpu, map3_cpu, par_chunks};
use candle_core::{D, DType, Device, Tensor};
use candle_nn::{Init, VarBuilder};
use std::collections::HashMap;
use std::path::Path;

/// The hidden activation (`hidden_act` of config.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenAct {
    /// The exact GELU x·Φ(x) (Hugging Face `"gelu"`).
    Gelu,
    /// The tanh approximation (`"gelu_new"`, `"gelu_approximate"`, `"gelu_pytorch_tanh"`).
    #[serde(alias = "gelu_new", alias = "gelu_pytorch_tanh")]
    GeluApproximate,
    /// max(0, x).
    Relu,
}

/// The BERT hyper-parameters read from a Hugging Face `config.json` (unknown keys ignored).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
pub struct BertConfig {
    /// Number of tokens V (rows of the word embeddings and of the decoder).
    pub vocab_size: usize,
    /// Hidden width H.
    pub hidden_size: usize,
    /// Number of encoder layers L.
    pub num_hidden_layers: usize,
    /// Attention heads per layer (H must be a multiple).
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Activation of the feed-forward layer and of the prediction head.
    pub hidden_act: HiddenAct,
    /// Longest sequence the position embeddings cover.
    pub max_position_embeddings: usize,
    /// Rows of the token-type embeddings (type 0 is always used).
    pub type_vocab_size: usize,
    /// LayerNorm ε (1e-12 for BERT).
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    /// Whether a fresh (trainable) model ties its decoder to the word embeddings; a checkpoint
    /// that has `cls.predictions.decoder.weight` uses it whatever this says.
    #[serde(default = "default_tie")]
    pub tie_word_embeddings: bool,
}

fn default_eps() -> f64 {
    1e-12
}

fn default_tie() -> bool {
    true
}

impl BertConfig {
    /// Reads and checks a `config.json`.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        // serde quotes the file's text (an unknown `hidden_act`), which may hold a line break
        // or an escape sequence: control characters are escaped so the message is one line.
        let plain = |e: serde_json::Error| -> String {
            e.to_string()
                .chars()
                .map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() })
                .collect()
        };
        let cfg: BertConfig =
            serde_json::from_str(text).map_err(|e| Error::Checkpoint(format!("config.json: {}", plain(e))))?;
        cfg.check()?;
        Ok(cfg)
    }

    /// The dimension checks a forward relies on.
    pub fn check(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Checkpoint(format!("config.json: {m}")));
        if self.vocab_size == 0 || self.hidden_size == 0 || self.num_attention_heads == 0 {
            return bad("vocab_size, hidden_size and num_attention_heads must be positive".into());
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.type_vocab_size == 0 || self.max_position_embeddings == 0 {
            return bad("type_vocab_size and max_position_embeddings must be positive".into());
        }
        Ok(())
    }
}

/// y = x·Wᵀ + b for x of shape [N, in] (W is [out, in] as stored by PyTorch).
#[derive(Debug, Clone)]
struct Linear {
    w: Tensor,
    b: Tensor,
}

impl Linear {
    fn new(vb: &VarBuilder, out: usize, inp: usize) -> candle_core::Result<Self> {
        let std = 0.02;
        let w = vb.get_with_hints((out, inp), "weight", Init::Randn { mean: 0.0, stdev: std })?;
        let b = vb.get_with_hints(out, "bias", Init::Const(0.0))?;
        Ok(Linear { w, b })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        linear(x, &self.w, Some(&self.b))
    }
}

/// LayerNorm written from elementary ops: candle-nn's fused one has no backward pass (it
/// silently detaches) and no f64 kernel.
#[derive(Debug, Clone)]
struct LayerNorm {
    g: Tensor,
    b: Tensor,
    eps: f64,
}

impl LayerNorm {
    /// `weight`/`bias`, or the older `gamma`/`beta` names when the checkpoint has them.
    fn new(vb: &VarBuilder, h: usize, eps: f64) -> candle_core::Result<Self> {
        let (gn, bn) = if vb.contains_tensor("gamma") { ("gamma", "beta") } else { ("weight", "bias") };
        let g = vb.get_with_hints(h, gn, Init::Const(1.0))?;
        let b = vb.get_with_hints(h, bn, Init::Const(0.0))?;
        Ok(LayerNorm { g, b, eps })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        if x.device().is_cpu() && x.is_contiguous() && !self.g.is_variable() && !self.b.is_variable() {
            let (g, b) = (self.g.to_dtype(DType::F64)?.to_vec1()?, self.b.to_dtype(DType::F64)?.to_vec1()?);
            return x.apply_op1(FusedLayerNorm { g, b, eps: self.eps });
        }
        let mean = x.mean_keepdim(D::Minus1)?;
        let xc = x.broadcast_sub(&mean)?;
        let var = xc.sqr()?.mean_keepdim(D::Minus1)?;
        let xn = xc.broadcast_div(&(var + self.eps)?.sqrt()?)?;
        xn.broadcast_mul(&self.g)?.broadcast_add(&self.b)
    }
}

#[derive(Debug, Clone)]
struct Layer {
    q: Linear,
    k: Linear,
    v: Linear,
    attn_out: Linear,
    attn_ln: LayerNorm,
    inter: Linear,
    out: Linear,
    out_ln: LayerNorm,
}

/// BERT with its masked-language-model head (see the module doc for the names it reads).
#[derive(Debug, Clone)]
pub struct BertMlm {
    cfg: BertConfig,
    word: Tensor,
    pos: Tensor,
    typ: Tensor,
    emb_ln: LayerNorm,
    layers: Vec<Layer>,
    head_dense: Linear,
    head_ln: LayerNorm,
    /// Decoder weight [V, H] (the word embeddings when tied).
    dec_w: Tensor,
    dec_b: Tensor,
}

impl BertMlm {
    /// The network from `vb` (root = the checkpoint's root: `bert.*`, `cls.*`), in `vb`'s dtype
    /// and on its device. Works with `VarBuilder::from_varmap` (a fresh trainable model: weights
    /// N(0, 0.02) from candle's unseeded generator unless the map already holds them, LayerNorm
    /// 1/0, biases 0) as well as with files and tensor maps.
    pub fn new(cfg: &BertConfig, vb: VarBuilder) -> Result<Self, Error> {
        cfg.check()?;
        Self::build(cfg, &vb).map_err(|e| Error::Checkpoint(crate::candle_message(&e)))
    }

    fn build(cfg: &BertConfig, vb: &VarBuilder) -> candle_core::Result<Self> {
        let (h, v, eps) = (cfg.hidden_size, cfg.vocab_size, cfg.layer_norm_eps);
        let randn = Init::Randn { mean: 0.0, stdev: 0.02 };
        let emb = vb.pp("bert").pp("embeddings");
        let word = emb.pp("word_embeddings").get_with_hints((v, h), "weight", randn)?;
        let pos = emb.pp("position_embeddings").get_with_hints((cfg.max_position_embeddings, h), "weight", randn)?;
        let typ = emb.pp("token_type_embeddings").get_with_hints((cfg.type_vocab_size, h), "weight", randn)?;
        let emb_ln = LayerNorm::new(&emb.pp("LayerNorm"), h, eps)?;
        let enc = vb.pp("bert").pp("encoder").pp("layer");
        // Capped: the count comes from config.json and may be any u64 (a capacity overflow
        // otherwise); a checkpoint with fewer layers fails at the first missing tensor.
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers.min(1024));
        for l in 0..cfg.num_hidden_layers {
            let lv = enc.pp(l);
            let att = lv.pp("attention");
            let sa = att.pp("self");
            layers.push(Layer {
                q: Linear::new(&sa.pp("query"), h, h)?,
                k: Linear::new(&sa.pp("key"), h, h)?,
                v: Linear::new(&sa.pp("value"), h, h)?,
                attn_out: Linear::new(&att.pp("output").pp("dense"), h, h)?,
                attn_ln: LayerNorm::new(&att.pp("output").pp("LayerNorm"), h, eps)?,
                inter: Linear::new(&lv.pp("intermediate").pp("dense"), cfg.intermediate_size, h)?,
                out: Linear::new(&lv.pp("output").pp("dense"), h, cfg.intermediate_size)?,
                out_ln: LayerNorm::new(&lv.pp("output").pp("LayerNorm"), h, eps)?,
            });
        }
        let pred = vb.pp("cls").pp("predictions");
        let tr = pred.pp("transform");
        let head_dense = Linear::new(&tr.pp("dense"), h, h)?;
        let head_ln = LayerNorm::new(&tr.pp("LayerNorm"), h, eps)?;
        let dec = pred.pp("decoder");
        let dec_w = if dec.contains_tensor("weight") || !cfg.tie_word_embeddings {
            dec.get_with_hints((v, h), "weight", randn)?
        } else {
            word.clone()
        };
        let dec_b = if !dec.contains_tensor("bias") && pred.contains_tensor("bias") {
            pred.get(v, "bias")?
        } else {
            dec.get_with_hints(v, "bias", Init::Const(0.0))?
        };
        Ok(BertMlm { cfg: cfg.clone(), word, pos, typ, emb_ln, layers, head_dense, head_ln, dec_w, dec_b })
    }

    /// The model of a checkpoint directory: `config.json`, `vocab.txt` and `model.safetensors`
    /// (preferred) or `pytorch_model.bin`, as f32 on `device`. Errors name the file and the
    /// tensor (missing, or of the wrong shape for the config).
    pub fn load(dir: &Path, device: &Device) -> Result<(Self, Vocab), Error> {
        Self::load_dtype(dir, DType::F32, device)
    }

    /// [`BertMlm::load`] in `dtype` (F32 or F64).
    pub fn load_dtype(dir: &Path, dtype: DType, device: &Device) -> Result<(Self, Vocab), Error> {
        let read = |name: &str| {
            let p = dir.join(name);
            std::fs::read_to_string(&p).map_err(|e| Error::Checkpoint(format!("{}: {e}", p.display())))
        };
        let cfg = BertConfig::from_json(&read("config.json")?).map_err(|e| at(&dir.join("config.json"), e))?;
        let vocab = Vocab::from_text(&read("vocab.txt")?).map_err(|e| at(&dir.join("vocab.txt"), e))?;
        if vocab.len() != cfg.vocab_size {
            return Err(Error::Checkpoint(format!(
                "{} has {} tokens but config.json says vocab_size = {}",
                dir.join("vocab.txt").display(),
                vocab.len(),
                cfg.vocab_size
            )));
        }
        let (st, pth) = (dir.join("model.safetensors"), dir.join("pytorch_model.bin"));
        let (file, vb) = if st.exists() {
            // SAFETY: the file is mapped read-only; it must not change while the model is built
            // (the weights are copied out of the mapping by `to_dtype`/`to_device`).
            let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&st], dtype, device) };
            (st, vb)
        } else if pth.exists() {
            let vb = VarBuilder::from_pth(&pth, dtype, device);
            (pth, vb)
        } else {
            return Err(Error::Checkpoint(format!(
                "{} has neither model.safetensors nor pytorch_model.bin",
                dir.display()
            )));
        };
        let vb = vb.map_err(|e| Error::Checkpoint(format!("{}: {}", file.display(), crate::candle_message(&e))))?;
        let model = Self::new(&cfg, vb).map_err(|e| at(&file, e))?;
        Ok((model, vocab))
    }

    /// The configuration.
    pub fn config(&self) -> &BertConfig {
        &self.cfg
    }

    /// The word embeddings [V, H].
    pub fn word_embeddings(&self) -> &Tensor {
        &self.word
    }

    /// The device the weights live on.
    pub fn device(&self) -> &Device {
        self.word.device()
    }

    /// The weights' dtype.
    pub fn dtype(&self) -> DType {
        self.word.dtype()
    }

    /// The word embeddings of `ids` ([B, S] u32) → [B, S, H].
    pub fn embed(&self, ids: &Tensor) -> candle_core::Result<Tensor> {
        let (b, s) = ids.dims2()?;
        self.word.index_select(&ids.flatten_all()?, 0)?.reshape((b, s, self.cfg.hidden_size))
    }

    /// Logits [B, S, V] of `ids` ([B, S] u32); differentiable with respect to every weight.
    pub fn logits_from_ids(&self, ids: &Tensor) -> Result<Tensor, Error> {
        let e = self.embed(ids).map_err(|e| self.err(e))?;
        self.logits_from_embeddings(&e)
    }

    /// Logits [B, S, V] from the word embeddings `e` ([B, S, H]; position and type embeddings
    /// are added here), differentiable with respect to `e` and every weight.
    pub fn logits_from_embeddings(&self, e: &Tensor) -> Result<Tensor, Error> {
        let run = || -> candle_core::Result<Tensor> {
            let (b, s, _) = e.dims3()?;
            let x = self.hidden(e)?;
            self.head(&x)?.reshape((b, s, self.cfg.vocab_size))
        };
        run().map_err(|e| self.err(e))
    }

    fn err(&self, e: candle_core::Error) -> Error {
        crate::build_error(self.device(), e)
    }

    /// The encoder's output [B·S, H] from the word embeddings [B, S, H] (public for the MLM
    /// trainer, `dlp_learn::bert_train`).
    pub fn hidden(&self, e: &Tensor) -> candle_core::Result<Tensor> {
        self.hidden_at(e, None)
    }

    /// Indices b·S + i of the rows at positions `at` of every sequence of a [B, S] batch
    /// (sequence-major), as a u32 tensor.
    fn rows_at(&self, b: usize, s: usize, at: &[usize]) -> candle_core::Result<Tensor> {
        let rows: Vec<u32> = (0..b).flat_map(|r| at.iter().map(move |&i| (r * s + i) as u32)).collect();
        Tensor::from_vec(rows, b * at.len(), self.device())
    }

    /// The encoder's output from the word embeddings [B, S, H]: every row ([B·S, H]) when `at`
    /// is `None`, else only the rows at positions `at` of each sequence ([B·|at|, H],
    /// sequence-major: the rows [`BertMlm::rows_at`] names), the same values as selecting them
    /// from the whole output. The last layer computes only those rows: its keys and values
    /// still come from every position, but its queries, attention, output projection,
    /// feed-forward block and LayerNorms from the kept rows alone, since no other row of the
    /// last layer reaches them. The infilling energy and the Gibbs conditionals need only the
    /// masked rows (a quarter of a protein sequence; one row for a Gibbs conditional), so this
    /// saves most of one layer of the forward and of its backward.
    pub(crate) fn hidden_at(&self, e: &Tensor, at: Option<&[usize]>) -> candle_core::Result<Tensor> {
        let (b, s, h) = e.dims3()?;
        if s > self.cfg.max_position_embeddings {
            candle_core::bail!(
                "a sequence of {s} tokens is longer than max_position_embeddings = {}",
                self.cfg.max_position_embeddings
            );
        }
        if let Some(&i) = at.and_then(|at| at.iter().find(|&&i| i >= s)) {
            candle_core::bail!("position {i} is outside a sequence of {s} tokens");
        }
        let nh = self.cfg.num_attention_heads;
        let dh = h / nh;
        let x = e.broadcast_add(&self.pos.narrow(0, 0, s)?)?.broadcast_add(&self.typ.get(0)?)?;
        let mut x = self.emb_ln.forward(&x)?.reshape((b * s, h))?;
        let scale = 1.0 / (dh as f64).sqrt();
        let heads = |t: Tensor, m: usize| t.reshape((b, m, nh, dh))?.transpose(1, 2)?.contiguous();
        let last = self.layers.len().saturating_sub(1);
        for (n, l) in self.layers.iter().enumerate() {
            // The query rows: the kept ones in the last layer, every row before it.
            let (xq, m) = match at {
                Some(at) if n == last => (x.index_select(&self.rows_at(b, s, at)?, 0)?, at.len()),
                _ => (x.clone(), s),
            };
            let q = heads(l.q.forward(&xq)?, m)?;
            let k = heads(l.k.forward(&x)?, s)?;
            let v = heads(l.v.forward(&x)?, s)?;
            let scores = (q.matmul(&k.t()?)? * scale)?;
            let p = candle_nn::ops::softmax(&scores, D::Minus1)?;
            let ctx = p.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((b * m, h))?;
            let a = l.attn_ln.forward(&(l.attn_out.forward(&ctx)? + &xq)?)?;
            let i = self.act(&l.inter.forward(&a)?)?;
            x = l.out_ln.forward(&(l.out.forward(&i)? + &a)?)?;
        }
        match at {
            // No layer to cut (a 0-layer config): select from the embeddings' output.
            Some(at) if self.layers.is_empty() => x.index_select(&self.rows_at(b, s, at)?, 0),
            _ => Ok(x),
        }
    }

    /// The prediction head on hidden rows [N, H] → logits [N, V] (public for the MLM trainer).
    pub fn head(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let t = self.head_ln.forward(&self.act(&self.head_dense.forward(x)?)?)?;
        linear(&t, &self.dec_w, Some(&self.dec_b))
    }

    fn act(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match self.cfg.hidden_act {
            HiddenAct::Gelu if x.device().is_cpu() && x.is_contiguous() => x.apply_op1(GeluErf),
            HiddenAct::Gelu => x.gelu_erf(),
            HiddenAct::GeluApproximate => x.gelu(),
            HiddenAct::Relu => x.relu(),
        }
    }
}

/// How [`random_weights`] names and shares its tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeightLayout {
    /// LayerNorm `gamma`/`beta` (older pytorch-pretrained-BERT) instead of `weight`/`bias`.
    pub gamma_beta: bool,
    /// No `cls.predictions.decoder.weight` (tied to the word embeddings) and the output bias
    /// stored as `cls.predictions.bias` (the Hugging Face layout of a tied checkpoint).
    pub tied: bool,
}

/// Seeded random BERT weights under the checkpoint names: matrices N(0, std²) and, unlike a
/// fresh model, LayerNorm gains 1 + N(0, std²) and biases N(0, std²) so that tests exercise
/// every tensor. f64 on the CPU. For tests, benchmarks and for seeding a trainable `VarMap`.
pub fn random_weights(cfg: &BertConfig, std: f64, seed: u64, layout: WeightLayout) -> HashMap<String, Tensor> {
    // (name, shape, mean) of every tensor, in a fixed order so that a seed fixes the weights.
    let mut specs: Vec<(String, Vec<usize>, f64)> = Vec::new();
    let (h, v, i) = (cfg.hidden_size, cfg.vocab_size, cfg.intermediate_size);
    let (gn, bn) = if layout.gamma_beta { ("gamma", "beta") } else { ("weight", "bias") };
    let ln = |specs: &mut Vec<(String, Vec<usize>, f64)>, p: &str| {
        specs.push((format!("{p}.{gn}"), vec![h], 1.0));
        specs.push((format!("{p}.{bn}"), vec![h], 0.0));
    };
    let lin = |specs: &mut Vec<(String, Vec<usize>, f64)>, p: &str, o: usize, n: usize| {
        specs.push((format!("{p}.weight"), vec![o, n], 0.0));
        specs.push((format!("{p}.bias"), vec![o], 0.0));
    };
    let e = "bert.embeddings";
    specs.push((format!("{e}.word_embeddings.weight"), vec![v, h], 0.0));
    specs.push((format!("{e}.position_embeddings.weight"), vec![cfg.max_position_embeddings, h], 0.0));
    specs.push((format!("{e}.token_type_embeddings.weight"), vec![cfg.type_vocab_size, h], 0.0));
    ln(&mut specs, &format!("{e}.LayerNorm"));
    for l in 0..cfg.num_hidden_layers {
        let p = format!("bert.encoder.layer.{l}");
        for m in ["query", "key", "value"] {
            lin(&mut specs, &format!("{p}.attention.self.{m}"), h, h);
        }
        lin(&mut specs, &format!("{p}.attention.output.dense"), h, h);
        ln(&mut specs, &format!("{p}.attention.output.LayerNorm"));
        lin(&mut specs, &format!("{p}.intermediate.dense"), i, h);
        lin(&mut specs, &format!("{p}.output.dense"), h, i);
        ln(&mut specs, &format!("{p}.output.LayerNorm"));
    }
    lin(&mut specs, "cls.predictions.transform.dense", h, h);
    ln(&mut specs, "cls.predictions.transform.LayerNorm");
    if layout.tied {
        specs.push(("cls.predictions.bias".into(), vec![v], 0.0));
    } else {
        lin(&mut specs, "cls.predictions.decoder", v, h);
    }
    let mut rng = dlp_core::rng::setup_rng(seed);
    specs
        .into_iter()
        .map(|(name, shape, mean)| {
            let n: usize = shape.iter().product();
            let vals: Vec<f64> = (0..n).map(|_| mean + std * dlp_core::draw::standard_normal(&mut rng)).collect();
            (name, Tensor::from_vec(vals, shape, &Device::Cpu).expect("the shape matches the values"))
        })
        .collect()
}

/// The exact GELU x·Φ(x) as one CPU op with a one-pass backward grad·(Φ(x) + x·φ(x)). Same
/// values as candle's `gelu_erf`, whose backward builds ~12 elementwise tensors (and uses
/// 6-digit constants); on the intermediate layer ([tokens, 4H]) that was a visible share of
/// the energy gradient's cost.
struct GeluErf;

/// ∂y·(Φ(x) + x·φ(x)), the derivative of x·Φ(x) times the incoming gradient, elementwise from
/// x, x·Φ(x) and ∂y in one pass (the same roundings as the derivative followed by candle's
/// `mul`; no backward of its own).
struct GeluErfDerivative;

impl candle_core::CustomOp1 for GeluErf {
    fn name(&self) -> &'static str {
        "gelu-erf"
    }

    fn cpu_fwd(
        &self,
        s: &candle_core::CpuStorage,
        l: &candle_core::Layout,
    ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        use candle_core::cpu::erf::erf_f64;
        // The formulas of candle's `gelu_erf`, so that values are identical: f32 (the
        // checkpoints' dtype) by the vectorised `gelu::gelu_slice`, equal to it bit for bit.
        if let candle_core::CpuStorage::F32(v) = s {
            let Some((a, b)) = l.contiguous_offsets() else {
                candle_core::bail!("gelu-erf: a contiguous input is needed");
            };
            let v = &v[a..b];
            let out = par_chunks(v.len(), |r, out| gelu::gelu_slice(&v[r], out, gelu::Width::Best));
            return Ok((candle_core::CpuStorage::F32(out), l.shape().clone()));
        }
        map_cpu(
            s,
            l,
            |_| unreachable!("f32 takes the slice path above"),
            |v| (erf_f64(v * std::f64::consts::FRAC_1_SQRT_2) + 1.) * 0.5 * v,
        )
    }

    fn bwd(&self, arg: &Tensor, res: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        Ok(Some(arg.contiguous()?.apply_op3_no_bwd(&res.contiguous()?, &grad.contiguous()?, &GeluErfDerivative)?))
    }
}

impl candle_core::CustomOp3 for GeluErfDerivative {
    fn name(&self) -> &'static str {
        "gelu-erf-derivative"
    }

    /// ∂y·(Φ(x) + x·φ(x)) from x, the forward's y = x·Φ(x) and ∂y: Φ(x) = y / x, so the
    /// backward evaluates no erf (candle's scalar erf was ≈ 9% of the energy gradient's time).
    /// Where x is 0 or subnormal (y / x loses its digits) Φ is evaluated directly.
    fn cpu_fwd(
        &self,
        s1: &candle_core::CpuStorage,
        l1: &candle_core::Layout,
        s2: &candle_core::CpuStorage,
        l2: &candle_core::Layout,
        s3: &candle_core::CpuStorage,
        l3: &candle_core::Layout,
    ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        use candle_core::cpu::erf::{erf_f32, erf_f64};
        macro_rules! derivative {
            ($t:ident, $erf:ident, $inv_sqrt_2pi:expr) => {
                |v: $t, y: $t, g: $t| {
                    let phi = if v.is_normal() { y / v } else { 0.5 * (1. + $erf(v * std::$t::consts::FRAC_1_SQRT_2)) };
                    (phi + v * $inv_sqrt_2pi * (-0.5 * v * v).exp()) * g
                }
            };
        }
        map3_cpu(
            (s1, l1),
            (s2, l2),
            (s3, l3),
            derivative!(f32, erf_f32, 0.398_942_3),
            derivative!(f64, erf_f64, 0.398_942_280_401_432_7),
        )
    }
}

/// LayerNorm with frozen gain and bias (a checkpoint's) as one CPU op over rows of the last
/// dimension, computed in f64, with the input gradient in one pass:
/// ∂x = (1/σ)·(gγ − mean(gγ) − x̂·mean(gγ·x̂)). The elementary-op LayerNorm (kept for
/// trainable weights and other devices) builds ~25 tensors in its backward pass.
struct FusedLayerNorm {
    g: Vec<f64>,
    b: Vec<f64>,
    eps: f64,
}

/// Rows of a contiguous f32/f64 tensor as f64, and a function turning f64 rows back.
fn rows_f64(s: &candle_core::CpuStorage, l: &candle_core::Layout) -> candle_core::Result<Vec<f64>> {
    use candle_core::CpuStorage as C;
    let Some((a, b)) = l.contiguous_offsets() else {
        candle_core::bail!("layer norm: a contiguous input is needed");
    };
    Ok(match s {
        C::F32(v) => v[a..b].iter().map(|&x| f64::from(x)).collect(),
        C::F64(v) => v[a..b].to_vec(),
        _ => candle_core::bail!("layer norm: f32 or f64 only"),
    })
}

fn back_to(like: &candle_core::CpuStorage, v: Vec<f64>) -> candle_core::CpuStorage {
    match like {
        candle_core::CpuStorage::F32(_) => candle_core::CpuStorage::F32(v.into_iter().map(|x| x as f32).collect()),
        _ => candle_core::CpuStorage::F64(v),
    }
}

impl FusedLayerNorm {
    /// x̂ and 1/σ of one row.
    fn normalise(&self, row: &[f64], xhat: &mut [f64]) -> f64 {
        let h = row.len() as f64;
        let mean = row.iter().sum::<f64>() / h;
        let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / h;
        let inv = 1.0 / (var + self.eps).sqrt();
        for (o, x) in xhat.iter_mut().zip(row) {
            *o = (x - mean) * inv;
        }
        inv
    }
}

impl candle_core::CustomOp1 for FusedLayerNorm {
    fn name(&self) -> &'static str {
        "fused-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s: &candle_core::CpuStorage,
        l: &candle_core::Layout,
    ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        let x = rows_f64(s, l)?;
        let h = self.g.len();
        let mut y = vec![0.0; x.len()];
        for (row, out) in x.chunks_exact(h).zip(y.chunks_exact_mut(h)) {
            self.normalise(row, out);
            for ((o, g), b) in out.iter_mut().zip(&self.g).zip(&self.b) {
                *o = *o * g + b;
            }
        }
        Ok((back_to(s, y), l.shape().clone()))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let back = LayerNormInputGrad { ln: FusedLayerNorm { g: self.g.clone(), b: self.b.clone(), eps: self.eps } };
        Ok(Some(arg.contiguous()?.apply_op2_no_bwd(&grad.contiguous()?, &back)?))
    }
}

/// ∂x of [`FusedLayerNorm`] from (x, ∂y).
struct LayerNormInputGrad {
    ln: FusedLayerNorm,
}

impl candle_core::CustomOp2 for LayerNormInputGrad {
    fn name(&self) -> &'static str {
        "fused-layer-norm-backward"
    }

    fn cpu_fwd(
        &self,
        s1: &candle_core::CpuStorage,
        l1: &candle_core::Layout,
        s2: &candle_core::CpuStorage,
        l2: &candle_core::Layout,
    ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        let (x, dy) = (rows_f64(s1, l1)?, rows_f64(s2, l2)?);
        let h = self.ln.g.len();
        let mut dx = vec![0.0; x.len()];
        let mut xhat = vec![0.0; h];
        let mut gg = vec![0.0; h];
        for ((row, d), out) in x.chunks_exact(h).zip(dy.chunks_exact(h)).zip(dx.chunks_exact_mut(h)) {
            let inv = self.ln.normalise(row, &mut xhat);
            for ((o, a), g) in gg.iter_mut().zip(d).zip(&self.ln.g) {
                *o = a * g;
            }
            let m1 = gg.iter().sum::<f64>() / h as f64;
            let m2 = gg.iter().zip(&xhat).map(|(a, b)| a * b).sum::<f64>() / h as f64;
            for ((o, a), xh) in out.iter_mut().zip(&gg).zip(&xhat) {
                *o = inv * (a - m1 - xh * m2);
            }
        }
        Ok((back_to(s1, dx), l1.shape().clone()))
    }
}

/// `e` as a checkpoint error at `path`: its message after the path, once — without a second
/// "bad checkpoint:" or a repeated file name (the readers' own messages start with the name).
fn at(path: &Path, e: Error) -> Error {
    let m = match e {
        Error::Checkpoint(m) => m,
        other => other.to_string(),
    };
    let name = path.file_name().map(|n| format!("{}: ", n.to_string_lossy())).unwrap_or_default();
    let m = m.strip_prefix(&name).unwrap_or(&m);
    Error::Checkpoint(format!("{}: {m}", path.display()))
}
