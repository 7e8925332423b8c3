//! The Bayesian binary neural network of paper 001 (Yokoi, Otsuka, Sato) §6.2 and App. E,
//! as a [`ContinuousTarget`] whose minibatch gradient comes from candle's autograd.
//!
//! A feed-forward ReLU classifier without biases, layer sizes `layers` (the paper's
//! "three-layer" net with 50 hidden units is 784–50–10; 784–50–50–10 is the deeper variant of
//! the spec), softmax cross-entropy likelihood. Every weight w ∈ (−1, 1) is a continuous
//! coordinate with the Beta(α, β) prior moved to (−1, 1) (App. E, eq. 63), so the state space
//! is the box (−1, 1)^d and the samplers of `dlp_samplers::bounded` (CoRV with an affine
//! sigmoid / arctan / softsign, or SGLD with mirroring) run on it unchanged. On a minibatch S of
//! the N training items
//!
//! f̂(w) = −(N/|S|) Σ_{k∈S} NLL_k(w) + (α−1) log(1+w) + (β−1) log(1−w)   (summed over weights),
//!
//! so U′ = −∇f̂ = (N/|S|)·∂NLL/∂w − (α−1)/(1+w) + (β−1)/(1−w) (spec §5). The prior's constant
//! −log(2^{α+β−1}B(α, β)) per weight is dropped (samplers need only differences and gradients).
//!
//! Prediction binarises the weights (sign, with sign(0) = +1, App. E) and returns the
//! network's log-softmax rows; the Bayesian predictive mean over samples is the caller's.
//!
//! Autograd: the weights are one candle [`Var`] (all layers concatenated, row-major `in × out`
//! per layer); the log-softmax is written from primitive ops (`max` detached for stability,
//! `exp`, `sum_keepdim`, `log`) because some fused candle ops silently detach gradients
//! (shared spec bert.md §1) — the tests check every weight gets a gradient and compare it with
//! central finite differences in f64.

use candle_core::{D, DType, Device, Tensor, Var};
use dlp_core::{Batch, BoxSpace, ContinuousTarget, EvalError};
use dlp_tensor::{Error, build_error, candle_message, device_name};

/// The binary network's data, architecture and prior on a candle device (see the module doc).
#[derive(Debug)]
pub struct BinaryNet {
    space: BoxSpace,
    layers: Vec<usize>,
    alpha: f64,
    beta: f64,
    device: Device,
    device_name: String,
    dtype: DType,
    /// Training images, N × layers[0], `dtype`.
    images: Tensor,
    /// One-hot training labels, N × classes, `dtype`.
    onehot: Tensor,
    n: usize,
}

/// A held-out set (validation or test) uploaded once for repeated predictions.
#[derive(Debug)]
pub struct EvalSet {
    /// Images, n × layers[0].
    images: Tensor,
    /// Labels.
    pub labels: Vec<u8>,
}

impl EvalSet {
    /// Number of items.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

impl BinaryNet {
    /// The network with sizes `layers` (input, hidden…, classes; at least two entries, all ≥ 1)
    /// on the training set (`images`: N × `layers[0]` row-major, already scaled, e.g. pixels/255;
    /// `labels` < classes), prior Beta(α, β) on (−1, 1), tensors of type `dtype` (F32 for runs,
    /// F64 for the gradient tests) on `device`.
    pub fn new(
        images: &[f32],
        labels: &[u8],
        layers: &[usize],
        (alpha, beta): (f64, f64),
        device: &Device,
        dtype: DType,
    ) -> Result<Self, Error> {
        if layers.len() < 2 || layers.contains(&0) {
            return Err(Error::Param(format!("layers must be ≥ 2 sizes, each ≥ 1, got {layers:?}")));
        }
        if !(alpha.is_finite() && alpha > 0.0 && beta.is_finite() && beta > 0.0) {
            return Err(Error::Param(format!("prior Beta(α, β) needs α, β > 0, got α = {alpha}, β = {beta}")));
        }
        let n = labels.len();
        if n == 0 {
            return Err(Error::Param("no training items".into()));
        }
        let images = Self::upload_images(images, n, layers[0], device, dtype)?;
        let onehot = Self::upload_onehot(labels, layers[layers.len() - 1], device, dtype)?;
        let d = layers.windows(2).map(|w| w[0] * w[1]).sum();
        let space = BoxSpace::uniform(d, -1.0, 1.0).expect("−1 < 1");
        Ok(BinaryNet {
            space,
            layers: layers.to_vec(),
            alpha,
            beta,
            device: device.clone(),
            device_name: device_name(device),
            dtype,
            images,
            onehot,
            n,
        })
    }

    fn upload_images(images: &[f32], n: usize, p: usize, device: &Device, dtype: DType) -> Result<Tensor, Error> {
        if images.len() != n * p {
            return Err(Error::Param(format!(
                "images hold {} values, expected {n} items × {p} inputs = {}",
                images.len(),
                n * p
            )));
        }
        if let Some(i) = images.iter().position(|v| !v.is_finite()) {
            return Err(Error::Param(format!("image value {} at item {} is not finite", images[i], i / p)));
        }
        Tensor::from_vec(images.to_vec(), (n, p), device)
            .and_then(|t| t.to_dtype(dtype))
            .map_err(|e| build_error(device, e))
    }

    fn upload_onehot(labels: &[u8], classes: usize, device: &Device, dtype: DType) -> Result<Tensor, Error> {
        if let Some(i) = labels.iter().position(|&l| l as usize >= classes) {
            return Err(Error::Param(format!("label {} at item {i} is not below the {classes} classes", labels[i])));
        }
        let mut v = vec![0f32; labels.len() * classes];
        for (i, &l) in labels.iter().enumerate() {
            v[i * classes + l as usize] = 1.0;
        }
        Tensor::from_vec(v, (labels.len(), classes), device)
            .and_then(|t| t.to_dtype(dtype))
            .map_err(|e| build_error(device, e))
    }

    /// A held-out set on this network's device (same checks as [`BinaryNet::new`]).
    pub fn eval_set(&self, images: &[f32], labels: &[u8]) -> Result<EvalSet, Error> {
        let classes = self.classes();
        if let Some(i) = labels.iter().position(|&l| l as usize >= classes) {
            return Err(Error::Param(format!("label {} at item {i} is not below the {classes} classes", labels[i])));
        }
        let images = Self::upload_images(images, labels.len(), self.layers[0], &self.device, self.dtype)?;
        Ok(EvalSet { images, labels: labels.to_vec() })
    }

    /// Number of weights d.
    pub fn n_weights(&self) -> usize {
        self.space.d
    }

    /// Number of classes (the last layer's size).
    pub fn classes(&self) -> usize {
        self.layers[self.layers.len() - 1]
    }

    /// Layer sizes.
    pub fn layers(&self) -> &[usize] {
        &self.layers
    }

    /// Logits of the rows of `x` under the flat weight tensor `w` (d): ReLU between layers.
    fn logits(&self, w: &Tensor, x: &Tensor) -> candle_core::Result<Tensor> {
        let mut h = x.clone();
        let mut off = 0;
        let last = self.layers.len() - 2;
        for (l, s) in self.layers.windows(2).enumerate() {
            let wl = w.narrow(0, off, s[0] * s[1])?.reshape((s[0], s[1]))?;
            off += s[0] * s[1];
            h = h.matmul(&wl)?;
            if l < last {
                h = h.relu()?;
            }
        }
        Ok(h)
    }

    /// Row-wise log-softmax from primitive ops (every one backprops; the max is a constant
    /// shift, detached, which leaves the value and the gradient unchanged).
    fn log_softmax(z: &Tensor) -> candle_core::Result<Tensor> {
        let m = z.max_keepdim(D::Minus1)?.detach();
        let s = z.broadcast_sub(&m)?;
        let lse = s.exp()?.sum_keepdim(D::Minus1)?.log()?;
        s.broadcast_sub(&lse)
    }

    fn weights(&self, w: &[f64]) -> candle_core::Result<Tensor> {
        Tensor::from_vec(w.to_vec(), w.len(), &self.device)?.to_dtype(self.dtype)
    }

    /// Σ_{k ∈ items} NLL_k(w) and its gradient ∂/∂w (length d) by candle autograd;
    /// `items` = None is the whole training set. Indices must be < N (checked by `evaluate`).
    pub fn nll_grad(&self, w: &[f64], items: Option<&[usize]>) -> candle_core::Result<(f64, Vec<f64>)> {
        let var = Var::from_tensor(&self.weights(w)?)?;
        let (x, y) = match items {
            None => (self.images.clone(), self.onehot.clone()),
            Some(items) => {
                let ids: Vec<u32> = items.iter().map(|&k| k as u32).collect();
                let ids = Tensor::from_vec(ids, items.len(), &self.device)?;
                (self.images.index_select(&ids, 0)?, self.onehot.index_select(&ids, 0)?)
            }
        };
        let logp = Self::log_softmax(&self.logits(var.as_tensor(), &x)?)?;
        let nll = logp.mul(&y)?.sum_all()?.neg()?;
        let grads = nll.backward()?;
        // A missing gradient would mean an op detached the graph: an error, never zeros.
        let g = grads
            .get(var.as_tensor())
            .ok_or_else(|| candle_core::Error::Msg("no gradient reached the weights (a detached op)".into()))?;
        let g: Vec<f64> = g.to_dtype(DType::F64)?.to_vec1()?;
        let v = nll.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        Ok((v, g))
    }

    /// log prior (up to its constant) of `w` and, into `grad`, its gradient added to what is there;
    /// −∞ when a weight is outside (−1, 1).
    pub fn log_prior_add_grad(&self, w: &[f64], grad: Option<&mut [f64]>) -> f64 {
        let (a1, b1) = (self.alpha - 1.0, self.beta - 1.0);
        if !w.iter().all(|&x| x > -1.0 && x < 1.0) {
            return f64::NEG_INFINITY;
        }
        // A symmetric prior (the runs' α = β) takes one logarithm per weight, (α−1)·ln(1 − x²),
        // instead of two: the two libm log1p calls were a third of a minibatch step of the
        // 784–50–10 net. 1 − x² = (1 + x)(1 − x) exactly up to x²'s rounding, which log1p
        // keeps relative, so this agrees with the two-log sum to a few ulp (tested).
        let lp: f64 = if a1 == b1 {
            w.iter().map(|&x| a1 * (-x * x).ln_1p()).sum()
        } else {
            w.iter().map(|&x| a1 * x.ln_1p() + b1 * (-x).ln_1p()).sum()
        };
        if let Some(g) = grad {
            for (g, &x) in g.iter_mut().zip(w) {
                *g += a1 / (1.0 + x) - b1 / (1.0 - x);
            }
        }
        lp
    }

    /// Log-softmax rows (n × classes, row-major) of the network with weights sign(w)
    /// (sign(0) = +1) on `set`, in chunks of `chunk` items to bound memory.
    pub fn predict_binarised(&self, w: &[f64], set: &EvalSet, chunk: usize) -> candle_core::Result<Vec<f64>> {
        let signs: Vec<f64> = w.iter().map(|&x| if x >= 0.0 { 1.0 } else { -1.0 }).collect();
        self.predict(&signs, set, chunk)
    }

    /// Log-softmax rows of the network with weights `w` as given (continuous) on `set`.
    pub fn predict(&self, w: &[f64], set: &EvalSet, chunk: usize) -> candle_core::Result<Vec<f64>> {
        let wt = self.weights(w)?;
        let (n, chunk) = (set.len(), chunk.max(1));
        let mut out = Vec::with_capacity(n * self.classes());
        let mut start = 0;
        while start < n {
            let len = chunk.min(n - start);
            let x = set.images.narrow(0, start, len)?;
            let lp = Self::log_softmax(&self.logits(&wt, &x)?)?;
            out.extend(lp.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?);
            start += len;
        }
        Ok(out)
    }

    /// The device name (`cpu`, `cuda:0`).
    pub fn device_name(&self) -> &str {
        &self.device_name
    }
}

impl ContinuousTarget for BinaryNet {
    fn space(&self) -> &BoxSpace {
        &self.space
    }

    fn n_data(&self) -> Option<usize> {
        Some(self.n)
    }

    /// One autograd pass per row of `xs` on the step's batch; a candle failure is
    /// [`EvalError::Device`].
    fn evaluate(
        &self,
        xs: &[f64],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        let d = self.space.d;
        let items = match batch {
            Batch::Full => None,
            Batch::Items(b) => {
                if let Some(&bad) = b.iter().find(|&&k| k >= self.n) {
                    return Err(EvalError::BadItem { index: bad, n_data: self.n });
                }
                Some(b)
            }
        };
        let scale = self.n as f64 / items.map_or(self.n, |b| b.len().max(1)) as f64;
        let mut grad = grad;
        for (c, w) in xs.chunks(d).enumerate() {
            let (nll, g) = self
                .nll_grad(w, items)
                .map_err(|e| EvalError::Device { device: self.device_name.clone(), message: candle_message(&e) })?;
            let mut out = grad.as_deref_mut().map(|gr| &mut gr[c * d..(c + 1) * d]);
            if let Some(o) = out.as_deref_mut() {
                for (o, g) in o.iter_mut().zip(&g) {
                    *o = -scale * g;
                }
            }
            log_density[c] = -scale * nll + self.log_prior_add_grad(w, out);
        }
        Ok(())
    }
}

/// Running Bayesian predictive mean of softmax outputs, kept in log space (log Σ_t p_t per item
/// and class) so that a binarised network's underflowing probabilities stay exact.
#[derive(Clone, Debug)]
pub struct Predictive {
    classes: usize,
    log_sum: Vec<f64>,
    samples: usize,
}

impl Predictive {
    /// An empty mean over `items` × `classes`.
    pub fn new(items: usize, classes: usize) -> Self {
        Predictive { classes, log_sum: vec![f64::NEG_INFINITY; items * classes], samples: 0 }
    }

    /// Adds one sample's log-softmax rows.
    pub fn add(&mut self, log_probs: &[f64]) {
        assert_eq!(log_probs.len(), self.log_sum.len(), "one row per item");
        for (s, &l) in self.log_sum.iter_mut().zip(log_probs) {
            let m = s.max(l);
            if m > f64::NEG_INFINITY {
                *s = m + ((*s - m).exp() + (l - m).exp()).ln();
            }
        }
        self.samples += 1;
    }

    /// (mean cross-entropy −log p̄(y), accuracy of argmax p̄) of the predictive mean on `labels`.
    pub fn scores(&self, labels: &[u8]) -> (f64, f64) {
        let k = self.classes;
        let log_t = (self.samples.max(1) as f64).ln();
        let (mut ce, mut hits) = (0.0, 0usize);
        for (row, &y) in self.log_sum.chunks(k).zip(labels) {
            ce -= row[y as usize] - log_t;
            let arg = (0..k).fold(0, |b, j| if row[j] > row[b] { j } else { b });
            hits += usize::from(arg == y as usize);
        }
        let n = labels.len().max(1) as f64;
        (ce / n, hits as f64 / n)
    }
}

#[cfg(test)]
mod tests;
