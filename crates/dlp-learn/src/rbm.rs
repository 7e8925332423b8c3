//! A Bernoulli RBM as a set of parameters to train: batched block Gibbs through matrix
//! products, the log-likelihood gradient, and CD-k training with Adam as
//! `reproduction.md` §3.3 describes (one epoch, batch 100, CD-10 chains started at the data
//! batch, loss −mean(ℓ(data) − ℓ(CD sample)), Adam lr 1e-3).
//!
//! Notation of the model file (`dlp.model.v1`, kind `rbm`): W is d × M (visible × hidden),
//! b the visible bias, c the hidden bias, ℓ(v) = bᵀv + Σ_j softplus(c_j + (Wᵀv)_j).
//! The paper's W (500 × 784) is our Wᵀ, its b_v our b and its b_h our c.
//!
//! Sampling here is hand-written rather than taken from `dlp-models`' `block-gibbs` sampler
//! because training and the 600-chain ground truth need whole-batch matrix products
//! (ndarray → matrixmultiply) to fit the time budget; the per-chain draw order (all hidden
//! units, then all visible units, from the chain's own stream) makes the result independent
//! of how chains are batched.

use crate::{LearnError, bad};
use dlp_core::math::sigmoid;
use dlp_core::optim::Adam;
use dlp_core::rng::{ChainRng, chain_rngs, derive_seed, setup_rng};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};
use rand::RngExt;
use rand::seq::SliceRandom;
use rayon::prelude::*;

/// Parameters of a Bernoulli RBM with `d` visible and `m` hidden units.
#[derive(Clone, Debug, PartialEq)]
pub struct RbmParams {
    /// Visible units.
    pub d: usize,
    /// Hidden units.
    pub m: usize,
    /// Couplings, d × m row-major.
    pub w: Vec<f64>,
    /// Visible bias (length d).
    pub b: Vec<f64>,
    /// Hidden bias (length m).
    pub c: Vec<f64>,
}

/// Mean gradient of ℓ over a batch, in the layout of [`RbmParams`].
#[derive(Clone, Debug, PartialEq)]
pub struct RbmGrad {
    /// ∂/∂W (d × m).
    pub w: Vec<f64>,
    /// ∂/∂b.
    pub b: Vec<f64>,
    /// ∂/∂c.
    pub c: Vec<f64>,
}

/// CD-k training settings (defaults: the paper's).
#[derive(Clone, Debug)]
pub struct CdConfig {
    /// Block-Gibbs steps per update (10).
    pub k: usize,
    /// Batch size (100); the last incomplete batch of an epoch is dropped.
    pub batch: usize,
    /// Adam learning rate (1e-3).
    pub lr: f64,
    /// Passes over the data (1).
    pub epochs: usize,
}

impl Default for CdConfig {
    fn default() -> Self {
        CdConfig { k: 10, batch: 100, lr: 1e-3, epochs: 1 }
    }
}

fn to_f64(v: &[u32], n: usize, d: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, d), |(r, i)| v[r * d + i] as f64)
}

impl RbmParams {
    /// The paper's initialisation: W ~ U(±1/√d) (PyTorch's default linear layer with fan-in
    /// d), c = 0, b = logit(clamp(pixel mean, 0.01, 0.99)).
    pub fn paper_init(pixel_means: &[f64], m: usize, seed: u64) -> RbmParams {
        let d = pixel_means.len();
        let bound = 1.0 / (d as f64).sqrt();
        let mut rng = setup_rng(seed);
        let w = (0..d * m).map(|_| rng.random_range(-bound..bound)).collect();
        let b = pixel_means
            .iter()
            .map(|&p| {
                let p = p.clamp(0.01, 0.99);
                (p / (1.0 - p)).ln()
            })
            .collect();
        RbmParams { d, m, w, b, c: vec![0.0; m] }
    }

    fn w_view(&self) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((self.d, self.m), &self.w).expect("W is d × m")
    }

    /// Hidden pre-activations c + Wᵀv for every row of `v` (n × d as f64), n × m.
    fn hidden_pre(&self, v: &Array2<f64>) -> Array2<f64> {
        let mut a = Array2::from_shape_fn((v.nrows(), self.m), |(_, j)| self.c[j]);
        general_mat_mul(1.0, v, &self.w_view(), 1.0, &mut a);
        a
    }

    /// ℓ(v) = bᵀv + Σ_j softplus(c_j + (Wᵀv)_j) for every row of `vs` (n × d bits).
    pub fn log_density_batch(&self, vs: &[u32], out: &mut [f64]) {
        let n = out.len();
        let v = to_f64(vs, n, self.d);
        let a = self.hidden_pre(&v);
        for (r, o) in out.iter_mut().enumerate() {
            let vb: f64 = (0..self.d).map(|i| v[[r, i]] * self.b[i]).sum();
            *o = vb + a.row(r).iter().map(|&z| dlp_core::math::softplus(z)).sum::<f64>();
        }
    }

    /// Σ_r `weights[r]` ∇ℓ(v_r) over the rows of `vs` (∇ℓ: W ← v σ(a)ᵀ, b ← v, c ← σ(a)).
    pub fn grad_weighted(&self, vs: &[u32], weights: &[f64]) -> RbmGrad {
        let n = weights.len();
        let v = to_f64(vs, n, self.d);
        let mut s = self.hidden_pre(&v);
        for (r, mut row) in s.rows_mut().into_iter().enumerate() {
            row.mapv_inplace(|z| sigmoid(z) * weights[r]);
        }
        let mut gw = Array2::zeros((self.d, self.m));
        general_mat_mul(1.0, &v.t(), &s, 0.0, &mut gw);
        let b = (0..self.d).map(|i| (0..n).map(|r| v[[r, i]] * weights[r]).sum()).collect();
        let c = (0..self.m).map(|j| s.column(j).sum()).collect();
        RbmGrad { w: gw.into_raw_vec_and_offset().0, b, c }
    }

    /// Mean ∇ℓ over the rows of `vs`.
    pub fn grad_mean(&self, vs: &[u32]) -> RbmGrad {
        let n = vs.len() / self.d;
        self.grad_weighted(vs, &vec![1.0 / n as f64; n])
    }

    /// `steps` block-Gibbs sweeps (h ~ σ(c + Wᵀv), then v ~ σ(b + Wh)) of the chains in the
    /// rows of `v`, in place; row r draws from `rngs[r]` (m uniforms, then d, per sweep).
    pub fn gibbs(&self, v: &mut [u32], steps: usize, rngs: &mut [ChainRng]) {
        let (d, m) = (self.d, self.m);
        let n = rngs.len();
        assert_eq!(v.len(), n * d, "one stream per chain");
        let w = self.w_view();
        let mut vf = to_f64(v, n, d);
        let mut h = Array2::<f64>::zeros((n, m));
        let mut pre_h = Array2::<f64>::zeros((n, m));
        let mut pre_v = Array2::<f64>::zeros((n, d));
        for _ in 0..steps {
            general_mat_mul(1.0, &vf, &w, 0.0, &mut pre_h);
            for (r, rng) in rngs.iter_mut().enumerate() {
                for j in 0..m {
                    let p = sigmoid(pre_h[[r, j]] + self.c[j]);
                    h[[r, j]] = f64::from(rng.random::<f64>() < p);
                }
            }
            general_mat_mul(1.0, &h, &w.t(), 0.0, &mut pre_v);
            for (r, rng) in rngs.iter_mut().enumerate() {
                for i in 0..d {
                    let p = sigmoid(pre_v[[r, i]] + self.b[i]);
                    vf[[r, i]] = f64::from(rng.random::<f64>() < p);
                }
            }
        }
        for (o, &x) in v.iter_mut().zip(vf.iter()) {
            *o = x as u32;
        }
    }

    /// [`RbmParams::gibbs`] split into `tasks` batches of consecutive chains run in parallel
    /// on rayon's current pool (same result for any `tasks`).
    pub fn gibbs_par(&self, v: &mut [u32], steps: usize, rngs: &mut [ChainRng], tasks: usize) {
        let per = rngs.len().div_ceil(tasks.max(1)).max(1);
        v.par_chunks_mut(per * self.d).zip(rngs.par_chunks_mut(per)).for_each(|(vc, rc)| self.gibbs(vc, steps, rc));
    }

    /// The model file (`dlp.model.v1`, kind `rbm`, binary domain) as JSON.
    pub fn to_model_json(&self, name: &str) -> serde_json::Value {
        let w: Vec<&[f64]> = self.w.chunks_exact(self.m).collect();
        serde_json::json!({
            "schema": "dlp.model.v1",
            "kind": "rbm",
            "name": name,
            "d": self.d,
            "domain": "binary",
            "W": w,
            "b": self.b,
            "c": self.c,
        })
    }
}

/// The seed of iteration `t` of a run seeded with `seed` (used for per-iteration chains).
pub fn iteration_seed(seed: u64, t: u64) -> u64 {
    // Distinct, well-spread seeds per update from dlp's one seed-mixing scheme.
    derive_seed(seed, &[t])
}

/// The gradient of the CD loss −mean(ℓ(data)) + mean(ℓ(samples)) (samples held fixed).
pub fn cd_loss_grad(params: &RbmParams, data: &[u32], samples: &[u32]) -> RbmGrad {
    let gd = params.grad_mean(data);
    let gm = params.grad_mean(samples);
    let sub = |a: Vec<f64>, b: Vec<f64>| a.iter().zip(&b).map(|(x, y)| y - x).collect::<Vec<f64>>();
    RbmGrad { w: sub(gd.w, gm.w), b: sub(gd.b, gm.b), c: sub(gd.c, gm.c) }
}

/// Trains `params` by CD-k with Adam on the binary rows of `data` (n × d), shuffling every
/// epoch with `seed`; `on_update(done, total)` is called after each update.
pub fn train_cd(
    params: &mut RbmParams,
    data: &[u32],
    cfg: &CdConfig,
    seed: u64,
    tasks: usize,
    mut on_update: impl FnMut(usize, usize),
) -> Result<(), LearnError> {
    let d = params.d;
    if cfg.batch == 0 || data.len() / d < cfg.batch {
        return Err(bad("batch", cfg.batch, &format!("must be in 1..={} (the data rows)", data.len() / d)));
    }
    let n = data.len() / d;
    let per_epoch = n / cfg.batch;
    let total = per_epoch * cfg.epochs;
    let mut adam_w = Adam::new(params.w.len(), cfg.lr);
    let mut adam_b = Adam::new(params.b.len(), cfg.lr);
    let mut adam_c = Adam::new(params.c.len(), cfg.lr);
    let mut order: Vec<usize> = (0..n).collect();
    let mut shuffle_rng = setup_rng(seed);
    let mut done = 0;
    for _ in 0..cfg.epochs {
        order.shuffle(&mut shuffle_rng);
        for idx in order.chunks_exact(cfg.batch) {
            let batch: Vec<u32> = idx.iter().flat_map(|&r| data[r * d..(r + 1) * d].iter().copied()).collect();
            let mut fantasy = batch.clone();
            let mut rngs = chain_rngs(iteration_seed(seed, done as u64), 0, cfg.batch);
            params.gibbs_par(&mut fantasy, cfg.k, &mut rngs, tasks);
            let g = cd_loss_grad(params, &batch, &fantasy);
            adam_w.step(&mut params.w, &g.w);
            adam_b.step(&mut params.b, &g.b);
            adam_c.step(&mut params.c, &g.c);
            done += 1;
            on_update(done, total);
        }
    }
    Ok(())
}
