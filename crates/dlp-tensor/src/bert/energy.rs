//! The one-pass infilling energy (main paper App. I.6): put the candidate tokens θ into the
//! masked slots M, run BERT once on the whole sequence, and score
//! f(θ) = Σ_{i∈M} log softmax(logits_i)\[θ_i\].
//!
//! As a function of the one-hot matrix X of the sequence, f = Σ_{i∈M} Σ_v X_iv · logp_iv(X),
//! so ∂f/∂X_jv = [j∈M]·logp_jv (the selector) + (∂f/∂E_j)·W_word\[v\] (the network, through the
//! embeddings E = X·W_word). [`BertMlm::energy_grad`] computes the second term by autograd
//! with respect to the looked-up embeddings and applies the chain rule by hand (cheaper than a
//! Var on X, which multiplies a [B·S, V] one-hot by the word embeddings);
//! [`BertMlm::energy_onehot`] is the direct one-hot path, kept to check it (tests: equal, and
//! both equal to central finite differences).

use super::BertMlm;
use crate::{Error, TensorCommon, TensorModel};
use candle_core::{D, DType, Tensor, Var};
use dlp_core::Space;
use std::sync::Arc;

impl BertMlm {
    /// log softmax of the logits at the masked rows, [B·|M|, V], from the embeddings [B, S, H].
    fn masked_logp(&self, e: &Tensor, masked: &[usize]) -> candle_core::Result<Tensor> {
        // The encoder and the head only on the masked rows: the energy needs no other logits.
        let rows = self.hidden_at(e, Some(masked))?;
        candle_nn::ops::log_softmax(&self.head(&rows)?, D::Minus1)
    }

    /// f of every row of `ids` ([B, S] u32) with the masked positions `masked`, shape \[B\].
    pub fn energy(&self, ids: &Tensor, masked: &[usize]) -> Result<Tensor, Error> {
        let run = || -> candle_core::Result<Tensor> {
            let (b, s) = ids.dims2()?;
            let logp = self.masked_logp(&self.embed(ids)?, masked)?;
            let tok = ids.flatten_all()?.index_select(&self.rows_at(b, s, masked)?, 0)?;
            logp.gather(&tok.unsqueeze(1)?, 1)?.reshape((b, masked.len()))?.sum(1)
        };
        run().map_err(|e| self.err(e))
    }

    /// f (\[B\]) and ∂f/∂X at the masked rows ([B, |M|, V]) of every row of `ids`: autograd with
    /// respect to the looked-up embeddings and the chain rule through E = X·W_word by hand.
    pub fn energy_grad(&self, ids: &Tensor, masked: &[usize]) -> Result<(Tensor, Tensor), Error> {
        let run = || -> candle_core::Result<(Tensor, Tensor)> {
            let (b, s) = ids.dims2()?;
            let m = masked.len();
            let e = Var::from_tensor(&self.embed(ids)?.detach())?;
            let logp = self.masked_logp(e.as_tensor(), masked)?;
            let rows = self.rows_at(b, s, masked)?;
            let tok = ids.flatten_all()?.index_select(&rows, 0)?;
            let f = logp.gather(&tok.unsqueeze(1)?, 1)?.reshape((b, m))?.sum(1)?;
            let grads = f.sum_all()?.backward()?;
            let ge = grads.get(e.as_tensor()).ok_or_else(|| {
                candle_core::Error::Msg("no gradient reached the embeddings (an op without backward pass)".into())
            })?;
            let h = self.cfg.hidden_size;
            let ge = ge.reshape((b * s, h))?.index_select(&rows, 0)?;
            let g = (logp.detach() + ge.matmul(&self.word.t()?)?)?;
            Ok((f.detach(), g.reshape((b, m, self.cfg.vocab_size))?))
        };
        run().map_err(|e| self.err(e))
    }

    /// f (\[B\]) of soft or hard one-hot inputs `x` ([B, S, V], the model's dtype) at the masked
    /// positions, f = Σ_{i∈M} Σ_v x_iv · logp_iv(x): the direct one-hot path, differentiable
    /// with respect to `x` (make it a `Var`). A reference for [`BertMlm::energy_grad`].
    pub fn energy_onehot(&self, x: &Tensor, masked: &[usize]) -> Result<Tensor, Error> {
        let run = || -> candle_core::Result<Tensor> {
            let (b, s, v) = x.dims3()?;
            let e = x.reshape((b * s, v))?.matmul(&self.word)?.reshape((b, s, self.cfg.hidden_size))?;
            let logp = self.masked_logp(&e, masked)?;
            let xm = x.reshape((b * s, v))?.index_select(&self.rows_at(b, s, masked)?, 0)?;
            (xm * logp)?.reshape((b, masked.len() * v))?.sum(1)
        };
        run().map_err(|e| self.err(e))
    }
}

/// The infilling problem of one sequence as a categorical [`dlp_core::Target`]: d = |M| variables
/// (the masked slots, in order), K = the allowed tokens (category k ↔ token id `allowed[k]`;
/// special tokens are never allowed), f = the one-pass energy of the filled sequence, ∇f with
/// respect to the d × K one-hot (the columns `allowed` of ∂f/∂X at the masked rows). All rows
/// of a batch go through BERT together.
#[derive(Debug)]
pub struct InfillTarget {
    model: Arc<BertMlm>,
    common: TensorCommon,
    base: Vec<u32>,
    masked: Vec<usize>,
    allowed: Vec<u32>,
    allowed_t: Tensor,
}

impl InfillTarget {
    /// The target for the sequence `ids` (token ids, the whole input: `[CLS] … [SEP]` if the
    /// model expects them; the masked slots may hold anything, usually `[MASK]`), the masked
    /// positions `masked` (distinct, inside the sequence) and the allowed tokens `allowed`
    /// (distinct ids below V; at least 2).
    pub fn new(model: Arc<BertMlm>, ids: Vec<u32>, masked: Vec<usize>, allowed: Vec<u32>) -> Result<Self, Error> {
        let cfg = model.config();
        let bad = |m: String| Err(Error::Param(m));
        if masked.is_empty() {
            return bad("the sequence has no masked position".into());
        }
        if ids.len() > cfg.max_position_embeddings {
            return bad(format!(
                "the sequence has {} tokens, more than max_position_embeddings = {}",
                ids.len(),
                cfg.max_position_embeddings
            ));
        }
        let mut seen = vec![false; ids.len()];
        for &i in &masked {
            if i >= ids.len() || std::mem::replace(&mut seen[i], true) {
                return bad(format!("masked position {i} is repeated or outside the {} tokens", ids.len()));
            }
        }
        if let Some(&t) = ids.iter().chain(&allowed).find(|&&t| t as usize >= cfg.vocab_size) {
            return bad(format!("token id {t} is not below vocab_size = {}", cfg.vocab_size));
        }
        if allowed.len() < 2 {
            return bad(format!("at least 2 allowed tokens are needed, found {}", allowed.len()));
        }
        let mut sorted = allowed.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return bad("the allowed tokens repeat".into());
        }
        let dev = model.device().clone();
        let allowed_t =
            Tensor::from_vec(allowed.clone(), allowed.len(), &dev).map_err(|e| crate::build_error(&dev, e))?;
        Ok(InfillTarget {
            common: TensorCommon::new(Space::categorical(masked.len(), allowed.len()), &dev),
            model,
            base: ids,
            masked,
            allowed,
            allowed_t,
        })
    }

    /// The target of one input line (see [`Vocab::masked_sequence`]) with every non-special
    /// token allowed.
    pub fn for_line(model: Arc<BertMlm>, vocab: &super::Vocab, line: &str) -> Result<Self, Error> {
        let (ids, masked) = vocab.masked_sequence(line)?;
        Self::new(model, ids, masked, vocab.allowed())
    }

    /// The model.
    pub fn model(&self) -> &Arc<BertMlm> {
        &self.model
    }

    /// The masked positions.
    pub fn masked(&self) -> &[usize] {
        &self.masked
    }

    /// The allowed tokens (category k ↔ `allowed()[k]`).
    pub fn allowed(&self) -> &[u32] {
        &self.allowed
    }

    /// The input sequence (token ids) as given.
    pub fn base(&self) -> &[u32] {
        &self.base
    }

    /// The whole sequence's token ids for the state `state` (d category indices).
    pub fn fill_ids(&self, state: &[u32]) -> Vec<u32> {
        let mut ids = self.base.clone();
        for (&i, &c) in self.masked.iter().zip(state) {
            ids[i] = self.allowed[c as usize];
        }
        ids
    }

    /// The category index of the token `id`, if allowed.
    pub fn category_of(&self, id: u32) -> Option<u32> {
        self.allowed.iter().position(|&a| a == id).map(|k| k as u32)
    }

    /// The one-pass energies of whole sequences `fills` (token ids, each as long as the input;
    /// the tokens at the masked positions are scored whatever they are).
    pub fn energies(&self, fills: &[Vec<u32>]) -> Result<Vec<f64>, Error> {
        if fills.is_empty() {
            return Ok(Vec::new());
        }
        let s = self.base.len();
        if let Some(f) = fills.iter().find(|f| f.len() != s) {
            return Err(Error::Param(format!("a fill has {} tokens where the input has {s}", f.len())));
        }
        let flat: Vec<u32> = fills.concat();
        let dev = self.model.device();
        let ids = Tensor::from_vec(flat, (fills.len(), s), dev).map_err(|e| crate::build_error(dev, e))?;
        let f = self.model.energy(&ids, &self.masked)?;
        let mut out = vec![0.0; fills.len()];
        copy_out(&f, &mut out).map_err(|e| crate::build_error(dev, e))?;
        Ok(out)
    }

    /// The [n, S] id tensor of n states.
    fn ids_of(&self, xs: &[u32], n: usize) -> candle_core::Result<Tensor> {
        let d = self.masked.len();
        let mut flat = Vec::with_capacity(n * self.base.len());
        for r in 0..n {
            flat.extend(self.fill_ids(&xs[r * d..(r + 1) * d]));
        }
        Tensor::from_vec(flat, (n, self.base.len()), self.model.device())
    }
}

impl TensorModel for InfillTarget {
    fn common(&self) -> &TensorCommon {
        &self.common
    }

    fn evaluate_full(&self, xs: &[u32], log_density: &mut [f64], grad: Option<&mut [f64]>) -> candle_core::Result<()> {
        let n = log_density.len();
        let k = self.allowed.len();
        if let Some(&c) = xs.iter().find(|&&c| c as usize >= k) {
            candle_core::bail!("category {c} is outside the {k} allowed tokens");
        }
        let ids = self.ids_of(xs, n)?;
        let msg = |e: Error| candle_core::Error::Msg(e.to_string());
        match grad {
            None => copy_out(&self.model.energy(&ids, &self.masked).map_err(msg)?, log_density),
            Some(g) => {
                let (f, gx) = self.model.energy_grad(&ids, &self.masked).map_err(msg)?;
                copy_out(&f, log_density)?;
                let ga = gx.index_select(&self.allowed_t, 2)?;
                copy_out(&ga, g)
            }
        }
    }
}

crate::tensor_target!(InfillTarget);

/// Copies a float tensor into `out` through f64 (exact for f32, and f64 models keep their
/// digits: the exact tests compare to 1e-10), checking the count.
fn copy_out(t: &Tensor, out: &mut [f64]) -> candle_core::Result<()> {
    let v = t.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?;
    if v.len() != out.len() {
        candle_core::bail!("the model produced {} values where {} were expected", v.len(), out.len());
    }
    out.copy_from_slice(&v);
    Ok(())
}
