//! Ensembles of binarised neural networks by GF-SVGD (Han et al., AISTATS 2020, paper 004 §4.4,
//! App. B, Alg. 3; transforms spec §7.4) and the baselines of its Fig. 6: one BNN trained by
//! the straight-through estimator (Hubara et al. 2016) and bagging (BAG).
//!
//! The network is a two-layer MLP `inputs → hidden → classes` with weights and hidden
//! activations in {−1, +1} and no biases (every parameter is binary, as in the paper's BNN).
//! Each layer divides its weight rows by their norm (weight normalisation):
//!
//! a_k = v₁ₖ·x / ‖v₁ₖ‖,  h = act(a),  z_c = s · v₂꜀·h / ‖v₂꜀‖,  p(y | x) = softmax(z)_y,
//!
//! with v = sign(w), act = sign for the binarised net (sign(0) = +1, Γ of the binary even
//! partition, [`dlp_core::lift::Partition`]); its rows have the constant norm √fan-in, so the
//! binarised net is the plain ±1 MLP (sign is scale-free) with logits scaled by s/√hidden.
//! \[R\] The norms stand in for the batch norm of the paper's AlexNet: without them the
//! surrogate, whose weights σ̃(w) = tanh(w/2) have |σ̃| < 0.47 on the clip interval, is a net
//! with logits near 0 and near-linear hidden units, and its gradient does not train the
//! binarised net (we measured 10–24% accuracy, chance 10%, on the synthetic digits). `s`
//! ([`BinMlp::out_scale`]) is a fixed softmax temperature.
//!
//! GF-SVGD (Alg. 3) lifts the binary weights to real w ∈ ℝ^d under the base p₀ = N(0, I):
//! p_c(w; D) ∝ p₀(w) p_*(sign(w); D). The surrogate ρ(w; D) ∝ p₀(w) p̃(σ̃(w); D) replaces
//! every weight by σ̃(w) = tanh(w/2) (004 eq. 21) and every sign activation by σ̃(a). Both
//! likelihoods are scaled to the full data, log p(D) ≈ (N/B) Σ_{b ∈ batch} log p(y_b | x_b), so
//! that the score is that of the posterior, ∇log ρ = −w + (N/B) Σ_b ∇ log p̃. The update is
//! GF-SVGD's direction with the rank weights γ of App. B ([`dlp_samplers::gf_svgd::weights`] with
//! [`Weighting::Rank`], normalised by Ω = Σγ), the Han 2020 median bandwidth, an Adam step
//! ([`dlp_samplers::gf_svgd::Update::ascend`]), then a clip to [−1, 1].
//!
//! Minibatches \[R\]: Alg. 3 draws one batch D_i per particle and computes ρ(w_i; D_i) and
//! p_c(w_i; D_i) once per particle; eq. (22) writes ∇log ρ(w_j; D_i), which would need n²
//! network passes per iteration. We follow Alg. 3's steps: particle j's score and density
//! ratio are evaluated on its own batch D_j (n passes, the cost of n independent nets).
//!
//! The backward passes are hand-written because they are the method's substance (the relaxed
//! surrogate of Alg. 3 and the straight-through estimator) and the net is two matrix products;
//! the matrix products themselves are ndarray's.

use dlp_core::rng::chain_rng;
use dlp_samplers::gf_svgd::{BandwidthConvention, Optimizer, Weighting, bandwidth, direction, weights};
use ndarray::{Array2, ArrayView2, Axis};
use rand::RngExt;
use rayon::prelude::*;

/// σ̃(t) = 2/(1 + e^{−t}) − 1 = tanh(t/2) (004 eq. 21).
pub fn relax(t: f64) -> f64 {
    (0.5 * t).tanh()
}

/// sign(t) with sign(0) = +1.
pub fn sign(t: f64) -> f64 {
    if t >= 0.0 { 1.0 } else { -1.0 }
}

/// A binarised two-layer MLP (no biases). The weight vector is W₁ (hidden × inputs, row-major)
/// followed by W₂ (classes × hidden, row-major).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinMlp {
    /// Input size.
    pub inputs: usize,
    /// Hidden units.
    pub hidden: usize,
    /// Classes.
    pub classes: usize,
    /// Softmax temperature s of the logits z_c = s · v₂꜀·h / ‖v₂꜀‖.
    pub out_scale: f64,
}

/// How the hidden layer and the weights are treated in a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    /// sign(w), sign(a): the binarised network p_*.
    Binary,
    /// σ̃(w), σ̃(a): the surrogate p̃ of Alg. 3.
    Relaxed,
}

/// Activations of one pass over a batch: mapped weights v, their row norms, the unit rows u.
struct Forward {
    v: [Array2<f64>; 2],
    norms: [Vec<f64>; 2],
    u: [Array2<f64>; 2],
    a: Array2<f64>,
    h: Array2<f64>,
    z: Array2<f64>,
}

/// Σ_b log softmax(z_b)_{y_b} and the gradient onehot(y) − softmax(z) of each row (in place).
fn log_lik_rows(z: &mut Array2<f64>, y: &[u8]) -> f64 {
    let mut total = 0.0;
    for (mut row, &label) in z.rows_mut().into_iter().zip(y) {
        let mx = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = mx + row.iter().map(|v| (v - mx).exp()).sum::<f64>().ln();
        total += row[label as usize] - lse;
        row.mapv_inplace(|v| -(v - lse).exp());
        row[label as usize] += 1.0;
    }
    total
}

/// The weight gradient of a normalised layer from the gradient G_u of its unit rows:
/// G_v = G_u / ‖v‖, minus (G_u·u) u / ‖v‖ when the norm follows v (`project`).
fn unnormalise(mut gu: Array2<f64>, u: &Array2<f64>, norms: &[f64], project: bool) -> Array2<f64> {
    for ((mut g, ur), &n) in gu.rows_mut().into_iter().zip(u.rows()).zip(norms) {
        let dot = if project { g.dot(&ur) } else { 0.0 };
        g.zip_mut_with(&ur, |gv, &uv| *gv = (*gv - dot * uv) / n);
    }
    gu
}

impl BinMlp {
    /// A net with softmax temperature 1.
    pub fn new(inputs: usize, hidden: usize, classes: usize) -> BinMlp {
        BinMlp { inputs, hidden, classes, out_scale: 1.0 }
    }

    /// d: the number of weights.
    pub fn n_weights(&self) -> usize {
        self.hidden * self.inputs + self.classes * self.hidden
    }

    fn forward(&self, w: &[f64], x: ArrayView2<f64>, pass: Pass) -> Forward {
        let split = self.hidden * self.inputs;
        let map = |t: f64| if pass == Pass::Binary { sign(t) } else { relax(t) };
        let layer = |rows: usize, cols: usize, ws: &[f64]| {
            let v = Array2::from_shape_vec((rows, cols), ws.iter().map(|&t| map(t)).collect())
                .expect("a layer has rows x cols weights");
            // Binary rows have norm √cols exactly; relaxed rows their own (floored: a row of
            // exact zeros cannot occur from finite w but must not divide by 0).
            let norms: Vec<f64> = match pass {
                Pass::Binary => vec![(cols as f64).sqrt(); rows],
                Pass::Relaxed => v.rows().into_iter().map(|r| r.dot(&r).sqrt().max(1e-300)).collect(),
            };
            let mut u = v.clone();
            for (mut r, n) in u.rows_mut().into_iter().zip(&norms) {
                r /= *n;
            }
            (v, norms, u)
        };
        let (v1, n1, u1) = layer(self.hidden, self.inputs, &w[..split]);
        let (v2, n2, u2) = layer(self.classes, self.hidden, &w[split..]);
        let a = x.dot(&u1.t());
        let h = a.mapv(map);
        let z = h.dot(&u2.t()) * self.out_scale;
        Forward { v: [v1, v2], norms: [n1, n2], u: [u1, u2], a, h, z }
    }

    /// Σ_b log p_*(y_b | x_b) of the binarised net sign(w) on a batch (rows of `x`).
    pub fn log_lik(&self, w: &[f64], x: ArrayView2<f64>, y: &[u8]) -> f64 {
        let mut f = self.forward(w, x, Pass::Binary);
        log_lik_rows(&mut f.z, y)
    }

    /// Back-propagates G_z = ∂/∂z to the mapped weights v (W₁ then W₂, flattened); `gate` is
    /// ∂h/∂a as a function of (a, h); `project` differentiates the row norms too.
    fn backward(
        &self,
        f: &Forward,
        gz: &Array2<f64>,
        x: ArrayView2<f64>,
        gate: impl Fn(f64, f64) -> f64,
        project: bool,
    ) -> Vec<f64> {
        let gu2 = gz.t().dot(&f.h) * self.out_scale;
        let mut ga = gz.dot(&f.u[1]) * self.out_scale;
        ndarray::Zip::from(&mut ga).and(&f.a).and(&f.h).for_each(|g, &a, &h| *g *= gate(a, h));
        let gu1 = ga.t().dot(&x);
        let gv1 = unnormalise(gu1, &f.u[0], &f.norms[0], project);
        let gv2 = unnormalise(gu2, &f.u[1], &f.norms[1], project);
        gv1.iter().chain(gv2.iter()).copied().collect()
    }

    /// Σ_b log p̃(y_b | x_b) of the surrogate (σ̃ on weights and activations, each layer's
    /// rows divided by their norm), writing its gradient with respect to the real weights w
    /// into `grad` (length d).
    pub fn surrogate_log_lik_grad(&self, w: &[f64], x: ArrayView2<f64>, y: &[u8], grad: &mut [f64]) -> f64 {
        let f = self.forward(w, x, Pass::Relaxed);
        let mut gz = f.z.clone();
        let ll = log_lik_rows(&mut gz, y);
        // ∂σ̃(a)/∂a = ½(1 − σ̃(a)²), and the same for each weight.
        let gv = self.backward(&f, &gz, x, |_, h| 0.5 * (1.0 - h * h), true);
        let vs = f.v[0].iter().chain(f.v[1].iter());
        for ((g, gvp), v) in grad.iter_mut().zip(&gv).zip(vs) {
            *g = gvp * 0.5 * (1.0 - v * v);
        }
        ll
    }

    /// The straight-through gradient of Σ_b log p_*(y_b | x_b) (Hubara et al. 2016): the
    /// binarised forward pass; backward, sign(a) passes the gradient where |a| ≤ 1 (the
    /// derivative of hardtanh) and the weight gradient reaches the real latent weights
    /// unchanged (their clip to [−1, 1] keeps the |w| ≤ 1 gate open; binary rows have the
    /// constant norm √fan-in). Returns the binarised log-likelihood; writes the gradient into
    /// `grad`.
    pub fn ste_log_lik_grad(&self, w: &[f64], x: ArrayView2<f64>, y: &[u8], grad: &mut [f64]) -> f64 {
        let f = self.forward(w, x, Pass::Binary);
        let mut gz = f.z.clone();
        let ll = log_lik_rows(&mut gz, y);
        let gv = self.backward(&f, &gz, x, |a, _| if a.abs() <= 1.0 { 1.0 } else { 0.0 }, false);
        grad.copy_from_slice(&gv);
        ll
    }

    /// softmax(z) of the binarised net sign(w) for every row of `x` (rows × classes).
    pub fn predict_proba(&self, w: &[f64], x: ArrayView2<f64>) -> Array2<f64> {
        self.predict_proba_pass(w, x, Pass::Binary)
    }

    /// softmax(z) of the relaxed surrogate net (σ̃ on weights and activations): a diagnostic of
    /// how far the net GF-SVGD trains is from the binarised one that is evaluated.
    pub fn predict_proba_relaxed(&self, w: &[f64], x: ArrayView2<f64>) -> Array2<f64> {
        self.predict_proba_pass(w, x, Pass::Relaxed)
    }

    fn predict_proba_pass(&self, w: &[f64], x: ArrayView2<f64>, pass: Pass) -> Array2<f64> {
        let mut z = self.forward(w, x, pass).z;
        for mut row in z.rows_mut() {
            let mx = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            row.mapv_inplace(|v| (v - mx).exp());
            let s = row.sum();
            row /= s;
        }
        z
    }
}

/// A labelled image set: u8 grey levels, mapped to x = p/255 ∈ [0, 1] when batched (not
/// centred: a ±1 encoding gives every hidden unit the same large background offset, which the
/// near-linear relaxed net ignores and the sign of the binarised net does not).
#[derive(Clone, Copy, Debug)]
pub struct Images<'a> {
    /// n × dim grey levels, row-major.
    pub pixels: &'a [u8],
    /// n labels.
    pub labels: &'a [u8],
    /// Pixels per image.
    pub dim: usize,
}

impl Images<'_> {
    /// Number of items.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The inputs and labels of items `idx`.
    pub fn batch(&self, idx: &[usize]) -> (Array2<f64>, Vec<u8>) {
        let mut x = Array2::zeros((idx.len(), self.dim));
        for (mut row, &i) in x.rows_mut().into_iter().zip(idx) {
            for (o, &p) in row.iter_mut().zip(&self.pixels[i * self.dim..(i + 1) * self.dim]) {
                *o = p as f64 / 255.0;
            }
        }
        (x, idx.iter().map(|&i| self.labels[i]).collect())
    }

    /// Checks the sizes against `net`: the error names what does not fit.
    pub fn check(&self, net: &BinMlp) -> Result<(), String> {
        if self.dim != net.inputs || self.pixels.len() != self.len() * self.dim {
            return Err(format!("{} pixels for {} images of {} inputs", self.pixels.len(), self.len(), net.inputs));
        }
        if let Some(p) = self.labels.iter().position(|&l| l as usize >= net.classes) {
            return Err(format!("label {} of item {p} is not below {} classes", self.labels[p], net.classes));
        }
        Ok(())
    }
}

/// Training settings shared by every method, so that all nets see the same number of examples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrainConfig {
    /// Minibatch size B (drawn with replacement from the net's training items).
    pub batch: usize,
    /// Iterations; each net (or particle) sees B examples per iteration.
    pub steps: usize,
    /// Adam learning rate on the real latent weights.
    pub lr: f64,
}

impl TrainConfig {
    fn check(&self) -> Result<(), String> {
        if self.batch == 0 || self.steps == 0 || !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(format!("batch {} and steps {} must be >= 1 and lr {} > 0", self.batch, self.steps, self.lr));
        }
        Ok(())
    }
}

/// d latent weights drawn uniformly from (−1, 1) [R: Alg. 3 does not state its init; the same
/// for every method].
fn init_weights(rng: &mut dlp_core::ChainRng, d: usize) -> Vec<f64> {
    (0..d).map(|_| rng.random_range(-1.0..1.0)).collect()
}

fn draw_batch(rng: &mut dlp_core::ChainRng, items: &[usize], b: usize) -> Vec<usize> {
    (0..b).map(|_| items[rng.random_range(0..items.len())]).collect()
}

/// n item indices drawn with replacement from 0..n (a bootstrap resample for bagging).
pub fn bootstrap(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = dlp_core::rng::setup_rng(seed);
    (0..n).map(|_| rng.random_range(0..n)).collect()
}

/// One BNN trained by the straight-through estimator on `items` of `data` (the standard
/// BinaryConnect/BNN recipe: real latent weights, sign forward, Adam on the mean
/// log-likelihood, clip to [−1, 1]); draws from chain stream 0 of `seed`. `tick` is called once
/// per iteration. Returns the latent weights (the net is their sign).
pub fn train_ste(
    net: &BinMlp,
    data: &Images,
    items: &[usize],
    cfg: &TrainConfig,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<f64>, String> {
    data.check(net)?;
    cfg.check()?;
    if items.is_empty() {
        return Err("no training items".into());
    }
    let d = net.n_weights();
    let mut rng = chain_rng(seed, 0);
    let mut w = init_weights(&mut rng, d);
    let mut g = vec![0.0; d];
    let mut opt = Optimizer::adam(cfg.lr).start(d);
    for _ in 0..cfg.steps {
        let (x, y) = data.batch(&draw_batch(&mut rng, items, cfg.batch));
        net.ste_log_lik_grad(&w, x.view(), &y, &mut g);
        g.iter_mut().for_each(|v| *v /= cfg.batch as f64);
        opt.ascend(&mut w, &g);
        w.iter_mut().for_each(|v| *v = v.clamp(-1.0, 1.0));
        tick();
    }
    Ok(w)
}

/// What a GF-SVGD ensemble run saw, averaged over iterations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnsembleStats {
    /// Mean bandwidth h.
    pub mean_bandwidth: f64,
    /// Mean kernel value exp(−med²/h) at the median distance (= 1/(n+1)² under Han 2020):
    /// reported with `mean_offdiag_kernel`, the mean k(w_i, w_j) over pairs i ≠ j.
    pub mean_offdiag_kernel: f64,
}

/// Alg. 3: n particles (latent weight vectors, n × d) trained together by GF-SVGD with rank
/// weights on the full training set of `data`. Particle j draws its init and its batches from
/// chain stream j of `seed`; particles are evaluated in parallel, each alone, so the result does
/// not depend on the thread count.
pub fn train_gf_svgd(
    net: &BinMlp,
    data: &Images,
    n: usize,
    cfg: &TrainConfig,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> Result<(Vec<f64>, EnsembleStats), String> {
    data.check(net)?;
    cfg.check()?;
    if n == 0 || data.is_empty() {
        return Err(format!("{n} particles on {} items", data.len()));
    }
    let d = net.n_weights();
    let items: Vec<usize> = (0..data.len()).collect();
    let mut rngs: Vec<_> = (0..n).map(|j| chain_rng(seed, j)).collect();
    let mut x: Vec<f64> = rngs.iter_mut().flat_map(|r| init_weights(r, d)).collect();
    let (mut s, mut phi, mut log_mu, mut gamma, mut sq) =
        (vec![0.0; n * d], vec![0.0; n * d], vec![0.0; n], vec![0.0; n], Vec::new());
    let mut opt = Optimizer::adam(cfg.lr).start(n * d);
    let scale = data.len() as f64 / cfg.batch as f64;
    let (mut sum_h, mut sum_k) = (0.0, 0.0);
    for _ in 0..cfg.steps {
        s.par_chunks_mut(d).zip(log_mu.par_iter_mut()).zip(x.par_chunks(d)).zip(rngs.par_iter_mut()).for_each(
            |(((srow, lm), w), rng)| {
                let (xb, y) = data.batch(&draw_batch(rng, &items, cfg.batch));
                let relaxed = net.surrogate_log_lik_grad(w, xb.view(), &y, srow);
                let binary = net.log_lik(w, xb.view(), &y);
                // log μ_j = log ρ − log p_c: p₀ cancels (App. B).
                *lm = scale * (relaxed - binary);
                for (sv, &wv) in srow.iter_mut().zip(w) {
                    *sv = -wv + scale * *sv;
                }
            },
        );
        weights(&log_mu, Weighting::Rank, &mut gamma);
        let h = bandwidth(&x, d, BandwidthConvention::Han2020, &mut sq);
        direction(&x, d, &sq, h, &s, &gamma, &mut phi);
        opt.ascend(&mut x, &phi);
        x.iter_mut().for_each(|v| *v = v.clamp(-1.0, 1.0));
        sum_h += h;
        if n > 1 {
            let off: f64 = (0..n * n).filter(|p| p / n != p % n).map(|p| (-sq[p] / h).exp()).sum();
            sum_k += off / (n * (n - 1)) as f64;
        }
        tick();
    }
    let steps = cfg.steps as f64;
    Ok((x, EnsembleStats { mean_bandwidth: sum_h / steps, mean_offdiag_kernel: sum_k / steps }))
}

/// Test accuracy of the ensemble that averages the softmax outputs of the binarised nets
/// sign(w) for w in `members` (one member: the net alone). Items in chunks of 1000, in
/// parallel; ties go to the lowest class.
pub fn ensemble_accuracy(net: &BinMlp, members: &[&[f64]], data: &Images) -> f64 {
    accuracy_of(net, members, data, false)
}

/// Test accuracy of the relaxed surrogate net of `w` (see [`BinMlp::predict_proba_relaxed`]).
pub fn surrogate_accuracy(net: &BinMlp, w: &[f64], data: &Images) -> f64 {
    accuracy_of(net, &[w], data, true)
}

fn accuracy_of(net: &BinMlp, members: &[&[f64]], data: &Images, relaxed: bool) -> f64 {
    let idx: Vec<usize> = (0..data.len()).collect();
    let correct: usize = idx
        .par_chunks(1000)
        .map(|chunk| {
            let (x, y) = data.batch(chunk);
            let mut p = Array2::<f64>::zeros((chunk.len(), net.classes));
            for w in members {
                p += &if relaxed { net.predict_proba_relaxed(w, x.view()) } else { net.predict_proba(w, x.view()) };
            }
            p.axis_iter(Axis(0))
                .zip(&y)
                .filter(|(row, label)| {
                    let best = row
                        .iter()
                        .enumerate()
                        .fold((0, f64::NEG_INFINITY), |b, (c, &v)| if v > b.1 { (c, v) } else { b });
                    best.0 == **label as usize
                })
                .count()
        })
        .sum();
    correct as f64 / data.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    fn tiny() -> (BinMlp, Vec<f64>, Array2<f64>, Vec<u8>) {
        let net = BinMlp { inputs: 5, hidden: 4, classes: 3, out_scale: 1.7 };
        let mut rng = chain_rng(7, 0);
        let w: Vec<f64> = (0..net.n_weights()).map(|_| rng.random_range(-1.0..1.0)).collect();
        let x = Array2::from_shape_fn((6, 5), |_| rng.random_range(-1.0..1.0));
        let y = vec![0, 2, 1, 1, 0, 2];
        (net, w, x, y)
    }

    /// The forward pass written as plain loops (independent of the matrix code); rows are
    /// divided by the norm of their mapped weights (√fan-in for ±1 rows).
    fn naive_log_lik(net: &BinMlp, w: &[f64], x: &Array2<f64>, y: &[u8], map: fn(f64) -> f64) -> f64 {
        let (i_n, h_n, c_n) = (net.inputs, net.hidden, net.classes);
        let row = |off: usize, len: usize| -> (Vec<f64>, f64) {
            let v: Vec<f64> = w[off..off + len].iter().map(|&t| map(t)).collect();
            let n = v.iter().map(|t| t * t).sum::<f64>().sqrt();
            (v, n)
        };
        let mut total = 0.0;
        for (b, &label) in y.iter().enumerate() {
            let h: Vec<f64> = (0..h_n)
                .map(|k| {
                    let (v, n) = row(k * i_n, i_n);
                    map((0..i_n).map(|i| v[i] * x[[b, i]]).sum::<f64>() / n)
                })
                .collect();
            let z: Vec<f64> = (0..c_n)
                .map(|c| {
                    let (v, n) = row(h_n * i_n + c * h_n, h_n);
                    net.out_scale * (0..h_n).map(|k| v[k] * h[k]).sum::<f64>() / n
                })
                .collect();
            let lse = z.iter().map(|v| v.exp()).sum::<f64>().ln();
            total += z[label as usize] - lse;
        }
        total
    }

    #[test]
    fn both_passes_match_a_loop_transcription() {
        let (net, w, x, y) = tiny();
        assert!((net.log_lik(&w, x.view(), &y) - naive_log_lik(&net, &w, &x, &y, sign)).abs() < 1e-12);
        let mut g = vec![0.0; net.n_weights()];
        let ll = net.surrogate_log_lik_grad(&w, x.view(), &y, &mut g);
        assert!((ll - naive_log_lik(&net, &w, &x, &y, relax)).abs() < 1e-12);
        assert!((relax(0.7) - (2.0 / (1.0 + (-0.7f64).exp()) - 1.0)).abs() < 1e-15);
        assert_eq!((sign(0.0), sign(-1e-300)), (1.0, -1.0));
        // Softmax rows sum to one, and give back each pass's log-likelihood.
        for (p, want) in [
            (net.predict_proba(&w, x.view()), net.log_lik(&w, x.view(), &y)),
            (net.predict_proba_relaxed(&w, x.view()), ll),
        ] {
            assert!(p.rows().into_iter().all(|r| (r.sum() - 1.0).abs() < 1e-12));
            let got: f64 = y.iter().enumerate().map(|(b, &c)| p[[b, c as usize]].ln()).sum();
            assert!((got - want).abs() < 1e-10, "{got} vs {want}");
        }
    }

    /// The hand-derived surrogate gradient against central differences of the loop transcription
    /// (step 1e-5: truncation ~1e-10, rounding ~1e-11 on values of order 1).
    #[test]
    fn surrogate_gradient_matches_central_differences() {
        let (net, w, x, y) = tiny();
        let mut g = vec![0.0; net.n_weights()];
        net.surrogate_log_lik_grad(&w, x.view(), &y, &mut g);
        for (p, &gp) in g.iter().enumerate() {
            let (mut wp, mut wm) = (w.clone(), w.clone());
            wp[p] += 1e-5;
            wm[p] -= 1e-5;
            let fd = (naive_log_lik(&net, &wp, &x, &y, relax) - naive_log_lik(&net, &wm, &x, &y, relax)) / 2e-5;
            assert!((gp - fd).abs() < 1e-8, "weight {p}: {gp} vs {fd}");
        }
        assert!(g.iter().any(|v| v.abs() > 1e-3), "gradient is not all zero");
    }

    /// STE: the output layer is linear in the binary weights given h, so its straight-through
    /// gradient is the exact derivative with W₂ treated as real at sign(w); the hidden layer's
    /// gradient is gated by |a| ≤ 1, so it vanishes when every pre-activation is beyond 1.
    #[test]
    fn ste_gradient_is_exact_on_the_output_layer_and_gated_on_the_hidden_one() {
        let (net, w, x, y) = tiny();
        let mut g = vec![0.0; net.n_weights()];
        net.ste_log_lik_grad(&w, x.view(), &y, &mut g);
        let split = net.hidden * net.inputs;
        let wb: Vec<f64> = w.iter().map(|&v| sign(v)).collect();
        // Treat the binarised W₂ as real: evaluate with map = identity on W₂ only, via sign on W₁
        // baked in and h = sign(a) (identity on ±1 values leaves them unchanged).
        let f = |w2: &[f64]| {
            let mut full = wb.clone();
            full[split..].copy_from_slice(w2);
            let mut ll = 0.0;
            for (b, &label) in y.iter().enumerate() {
                let h: Vec<f64> = (0..net.hidden)
                    .map(|k| sign((0..net.inputs).map(|i| full[k * net.inputs + i] * x[[b, i]]).sum::<f64>()))
                    .collect();
                let z: Vec<f64> = (0..net.classes)
                    .map(|c| {
                        net.out_scale * (0..net.hidden).map(|k| full[split + c * net.hidden + k] * h[k]).sum::<f64>()
                            / (net.hidden as f64).sqrt()
                    })
                    .collect();
                ll += z[label as usize] - z.iter().map(|v| v.exp()).sum::<f64>().ln();
            }
            ll
        };
        for (p, &gp) in g.iter().enumerate().skip(split) {
            let (mut a, mut b) = (wb[split..].to_vec(), wb[split..].to_vec());
            a[p - split] += 1e-5;
            b[p - split] -= 1e-5;
            let fd = (f(&a) - f(&b)) / 2e-5;
            assert!((gp - fd).abs() < 1e-8, "W2 {p}: {gp} vs {fd}");
        }
        // Inputs scaled so that every |a| > 1: no gradient reaches W₁.
        let big = x.mapv(|v| 40.0 * sign(v));
        net.ste_log_lik_grad(&w, big.view(), &y, &mut g);
        assert!(g[..split].iter().all(|&v| v == 0.0) && g[split..].iter().any(|&v| v != 0.0));
    }

    /// Two Gaussian blobs in 8-d, labels by blob: a separable toy for the trainers.
    fn blobs(n: usize, seed: u64) -> (Vec<u8>, Vec<u8>) {
        let mut rng = chain_rng(seed, 0);
        let mut px = Vec::with_capacity(n * 8);
        let mut labels = Vec::with_capacity(n);
        for i in 0..n {
            let c = (i % 2) as u8;
            labels.push(c);
            for k in 0..8 {
                let centre = if (k % 2 == 0) == (c == 0) { 200.0 } else { 55.0 };
                px.push((centre + rng.random_range(-60.0..60.0f64)).clamp(0.0, 255.0) as u8);
            }
        }
        (px, labels)
    }

    /// Deterministic (fixed seeds, no statistical tolerance: false-failure rate 0): both
    /// trainers learn the separable toy, GF-SVGD's particles stay clipped, and its result is the
    /// same on 1 and 2 threads.
    #[test]
    fn trainers_learn_a_separable_toy_and_do_not_depend_on_threads() {
        let net = BinMlp::new(8, 16, 2);
        let (px, labels) = blobs(400, 3);
        let data = Images { pixels: &px, labels: &labels, dim: 8 };
        let cfg = TrainConfig { batch: 20, steps: 150, lr: 0.05 };
        let items: Vec<usize> = (0..data.len()).collect();
        let ste = train_ste(&net, &data, &items, &cfg, 1, &|| {}).unwrap();
        let acc_ste = ensemble_accuracy(&net, &[&ste], &data);
        assert!(acc_ste > 0.9, "STE accuracy {acc_ste}");
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| train_gf_svgd(&net, &data, 3, &cfg, 2, &|| {}).unwrap())
        };
        let (x1, stats) = run(1);
        let (x2, _) = run(2);
        assert_eq!(x1, x2, "1 vs 2 threads");
        assert!(x1.iter().all(|v| (-1.0..=1.0).contains(v)));
        assert!(stats.mean_bandwidth > 0.0 && stats.mean_offdiag_kernel > 0.0 && stats.mean_offdiag_kernel < 1.0);
        let d = net.n_weights();
        let members: Vec<&[f64]> = x1.chunks(d).collect();
        let acc = ensemble_accuracy(&net, &members, &data);
        assert!(acc > 0.9, "GF-SVGD ensemble accuracy {acc}");
    }

    #[test]
    fn bad_sizes_and_settings_are_refused_with_a_reason() {
        let net = BinMlp::new(8, 4, 2);
        let (px, mut labels) = blobs(10, 1);
        let cfg = TrainConfig { batch: 2, steps: 1, lr: 0.1 };
        labels[3] = 5;
        let data = Images { pixels: &px, labels: &labels, dim: 8 };
        let e = train_gf_svgd(&net, &data, 2, &cfg, 0, &|| {}).unwrap_err();
        assert!(e.contains("label 5 of item 3"), "{e}");
        labels[3] = 1;
        let data = Images { pixels: &px, labels: &labels, dim: 8 };
        let bad = TrainConfig { lr: 0.0, ..cfg };
        assert!(train_ste(&net, &data, &[0, 1], &bad, 0, &|| {}).unwrap_err().contains("lr"));
        let b = bootstrap(10, 4);
        assert!(b.len() == 10 && b.iter().all(|&i| i < 10));
    }
}
