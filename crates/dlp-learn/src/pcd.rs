//! Learning a dense Ising coupling matrix by persistent contrastive divergence
//! (`reproduction.md` §3.4, Fig. 5, pitfall P14).
//!
//! Model f_G(s) = sᵀ G s = sᵀ J s with J = (G + Gᵀ)/2, diag(G) = 0 after every step.
//! Loss per iteration: −[mean_data f(x) − mean_buffer f(x̃)] + λ₁ Σ|J|, whose gradient with
//! respect to G is −(mean_data s sᵀ − mean_buffer s sᵀ) + λ₁ sign(J) (∂Σ|J|/∂G_ab =
//! ½ sign J_ab + ½ sign J_ba = sign J_ab, with sign 0 = 0 as PyTorch).
//!
//! Every iteration the sampler is restarted on the buffer with the new J, as the official
//! code recomputes f and ∇f at each call; so that a systematic-scan sampler (`gibbs-sweep`,
//! the paper's Gibbs-1, one site per step, P6) continues where it stopped instead of
//! revisiting sites 0..K−1, iteration t presents the model with its coordinates rotated by
//! (t·K) mod D. Coordinate-exchangeable samplers (DLP, GWG, random-scan Gibbs) have the same
//! law under any rotation, so the rotation is applied to every sampler.

use crate::rbm::iteration_seed;
use crate::{LearnError, bad};
use dlp_core::capability::Conditionals;
use dlp_core::draw::standard_normal;
use dlp_core::optim::Adam;
use dlp_core::rng::{ChainRng, chain_rng, setup_rng};
use dlp_core::{Batch, Capabilities, EvalError, RunOptions, Sampler, Space, Target, run_chains};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};
use rand::RngExt;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use std::time::Instant;

/// f(s) = sᵀ J s on {−1,+1}^d (a spin space: the state index is the bit x = (s+1)/2) with a
/// dense J, used as given (pass a symmetric J). Gradient with respect to the bit:
/// ∂f/∂x = 2 ∂f/∂s = 2 (J + Jᵀ) s, i.e. 4 J s for symmetric J. Rows are computed
/// independently (one matrix product per batch, whose entries do not depend on the other
/// rows).
#[derive(Clone, Debug)]
pub struct DenseIsing {
    space: Space,
    j: Vec<f64>,
    jsym: Vec<f64>,
}

impl DenseIsing {
    /// The model with coupling matrix `j` (d × d row-major).
    pub fn new(d: usize, j: Vec<f64>) -> DenseIsing {
        assert_eq!(j.len(), d * d, "J must be d × d");
        let jsym = (0..d * d).map(|k| j[k] + j[(k % d) * d + k / d]).collect();
        DenseIsing { space: Space::spin(d), j, jsym }
    }

    /// The coupling matrix.
    pub fn j(&self) -> &[f64] {
        &self.j
    }

    /// S·(J + Jᵀ) for the rows of `xs` (n × d bits → n × d).
    fn field(&self, xs: &[u32], n: usize) -> (Array2<f64>, Array2<f64>) {
        let d = self.space.d;
        let s = Array2::from_shape_fn((n, d), |(r, i)| 2.0 * xs[r * d + i] as f64 - 1.0);
        let js = ArrayView2::from_shape((d, d), &self.jsym).expect("d × d");
        let mut out = Array2::zeros((n, d));
        general_mat_mul(1.0, &s, &js, 0.0, &mut out);
        (s, out)
    }

    /// ((J + Jᵀ) s)_i for one state.
    fn field_at(&self, x: &[u32], i: usize) -> f64 {
        let d = self.space.d;
        self.jsym[i * d..(i + 1) * d].iter().zip(x).map(|(&a, &b)| if b == 1 { a } else { -a }).sum()
    }
}

impl Target for DenseIsing {
    fn space(&self) -> &Space {
        &self.space
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        if !batch.is_full() {
            return Err(EvalError::NoData);
        }
        let (s, h) = self.field(xs, log_density.len());
        // sᵀJs = ½ sᵀ(J + Jᵀ)s.
        for (r, o) in log_density.iter_mut().enumerate() {
            *o = 0.5 * s.row(r).dot(&h.row(r));
        }
        if let Some(grad) = grad {
            for (g, &v) in grad.iter_mut().zip(h.iter()) {
                *g = 2.0 * v;
            }
        }
        Ok(())
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities { conditionals: Some(self), ..Capabilities::default() }
    }
}

/// One flip is O(d) from the local field.
impl Conditionals for DenseIsing {
    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) -> Result<(), EvalError> {
        // Flipping s_i changes the terms with exactly one index i: Δ = −2 s_i Σ_{j≠i}
        // (J_ij + J_ji) s_j; the diagonal term J_ii s_i² does not change.
        let d = self.space.d;
        let si = 2.0 * x[i] as f64 - 1.0;
        let h = self.field_at(x, i) - self.jsym[i * d + i] * si;
        out[x[i] as usize] = 0.0;
        out[1 - x[i] as usize] = -2.0 * si * h;
        Ok(())
    }
}

/// J = σ·A of the L × L periodic lattice (A the 0/1 adjacency), d × d with d = L².
pub fn lattice_couplings(l: usize, sigma: f64) -> Vec<f64> {
    let d = l * l;
    let mut j = vec![0.0; d * d];
    for i in 0..d {
        for nb in lattice_neighbours(l, i) {
            j[i * d + nb] = sigma;
        }
    }
    j
}

fn lattice_neighbours(l: usize, i: usize) -> [usize; 4] {
    let (r, c) = (i / l, i % l);
    [((r + l - 1) % l) * l + c, ((r + 1) % l) * l + c, r * l + (c + l - 1) % l, r * l + (c + 1) % l]
}

/// `n` samples of f(s) = sᵀ(σA)s on the L × L periodic lattice (b = 0), each the end of its
/// own chain of `steps` single-site systematic-scan Gibbs steps (step t updates site t mod d)
/// from Bernoulli(0.5) (§3.4, P14: 10^6 steps, 2,000 samples). Sample j uses
/// `chain_rng(seed, j)`. Runs in parallel on rayon's current pool. Returns n × d bits.
pub fn lattice_gibbs_data(l: usize, sigma: f64, n: usize, steps: usize, seed: u64) -> Result<Vec<u32>, LearnError> {
    if l < 3 {
        return Err(bad("lattice side", l, "must be at least 3 (periodic neighbours must differ)"));
    }
    let d = l * l;
    let nbs: Vec<[usize; 4]> = (0..d).map(|i| lattice_neighbours(l, i)).collect();
    // P(s_i = +1 | rest) = σ(4σ n_i), n_i ∈ {−4, −2, 0, 2, 4} the neighbour sum.
    let p_up: Vec<f64> = (0..5).map(|k| dlp_core::math::sigmoid(4.0 * sigma * (2.0 * k as f64 - 4.0))).collect();
    let mut out = vec![0u32; n * d];
    out.par_chunks_mut(d).enumerate().for_each(|(j, x)| {
        let mut rng: ChainRng = chain_rng(seed, j);
        for v in x.iter_mut() {
            *v = u32::from(rng.random::<f64>() < 0.5);
        }
        for t in 0..steps {
            let i = t % d;
            let ups: u32 = nbs[i].iter().map(|&k| x[k]).sum();
            x[i] = u32::from(rng.random::<f64>() < p_up[ups as usize]);
        }
    });
    Ok(out)
}

/// PCD settings (defaults: §3.4).
#[derive(Clone, Debug, serde::Serialize)]
pub struct PcdConfig {
    /// Iterations (10,000).
    pub iters: usize,
    /// Sampler steps on the whole buffer per iteration (100).
    pub k: usize,
    /// Data batch size (256; the last incomplete batch of an epoch is dropped).
    pub batch: usize,
    /// Persistent chains (256).
    pub buffer: usize,
    /// Adam learning rate (1e-3).
    pub lr: f64,
    /// L1 weight λ₁ on Σ|J| (0.01).
    pub l1: f64,
    /// Standard deviation of the initial G (0.01).
    pub init_std: f64,
    /// Record the RMSE every this many iterations (1,000), and at 0 and the end.
    pub record_every: usize,
}

impl Default for PcdConfig {
    fn default() -> Self {
        PcdConfig {
            iters: 10_000,
            k: 100,
            batch: 256,
            buffer: 256,
            lr: 1e-3,
            l1: 0.01,
            init_std: 0.01,
            record_every: 1000,
        }
    }
}

/// One point of a learning curve.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PcdRecord {
    /// Iterations done.
    pub iter: usize,
    /// Wall seconds of the training loop so far (sampling, gradients, Adam; not recording).
    pub seconds: f64,
    /// Seconds inside the sampler so far.
    pub sampler_seconds: f64,
    /// RMSE over all d² entries between J_true and J = (G + Gᵀ)/2.
    pub rmse: f64,
    /// Mean acceptance probability of the last iteration's steps (1 for Gibbs).
    pub accept: f64,
}

/// sqrt(mean over the d² entries of (a − b)²).
pub fn rmse(a: &[f64], b: &[f64]) -> f64 {
    (a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() / a.len() as f64).sqrt()
}

fn symmetrise(g: &[f64], d: usize) -> Vec<f64> {
    (0..d * d).map(|k| 0.5 * (g[k] + g[(k % d) * d + k / d])).collect()
}

/// Σ_rows s sᵀ / n for the rows of `xs` (n × d bits), d × d.
fn second_moment(xs: &[u32], d: usize) -> Array2<f64> {
    let n = xs.len() / d;
    let s = Array2::from_shape_fn((n, d), |(r, i)| 2.0 * xs[r * d + i] as f64 - 1.0);
    let mut out = Array2::zeros((d, d));
    general_mat_mul(1.0 / n as f64, &s.t(), &s, 0.0, &mut out);
    out
}

/// Learns J from the binary rows of `data` (n × d) by PCD with `sampler`, seeded with
/// `seed`; `on_record` receives the learning curve as it grows. Returns the curve and the
/// final J = (G + Gᵀ)/2.
pub fn learn_pcd(
    sampler: &dyn Sampler,
    data: &[u32],
    d: usize,
    j_true: &[f64],
    cfg: &PcdConfig,
    seed: u64,
    mut on_record: impl FnMut(&PcdRecord),
) -> Result<(Vec<PcdRecord>, Vec<f64>), LearnError> {
    let n = data.len() / d.max(1);
    if cfg.batch == 0 || cfg.batch > n {
        return Err(bad("batch", cfg.batch, &format!("must be in 1..={n} (the data rows)")));
    }
    if cfg.buffer == 0 {
        return Err(bad("buffer", cfg.buffer, "must be at least 1"));
    }
    if cfg.record_every == 0 {
        return Err(bad("record_every", cfg.record_every, "must be at least 1"));
    }
    let mut rng = setup_rng(seed);
    let mut g: Vec<f64> = (0..d * d).map(|_| cfg.init_std * standard_normal(&mut rng)).collect();
    for i in 0..d {
        g[i * d + i] = 0.0;
    }
    let mut buffer: Vec<u32> = (0..cfg.buffer * d).map(|_| u32::from(rng.random::<f64>() < 0.5)).collect();
    let mut order: Vec<usize> = (0..n).collect();
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut adam = Adam::new(d * d, cfg.lr);
    let mut records = Vec::new();
    let (mut seconds, mut sampler_seconds) = (0.0, 0.0);
    let mut record = |iter, seconds, sampler_seconds, accept, g: &[f64], records: &mut Vec<PcdRecord>| {
        let r = PcdRecord { iter, seconds, sampler_seconds, rmse: rmse(j_true, &symmetrise(g, d)), accept };
        on_record(&r);
        records.push(r);
    };
    record(0, 0.0, 0.0, 1.0, &g, &mut records);
    let mut rot_x = vec![0u32; cfg.buffer * d];
    for t in 0..cfg.iters {
        let t0 = Instant::now();
        let j = symmetrise(&g, d);
        let rot = (t * cfg.k) % d;
        let jr: Vec<f64> = (0..d * d).map(|k| j[((k / d + rot) % d) * d + (k % d + rot) % d]).collect();
        let target = DenseIsing::new(d, jr);
        for (dst, src) in rot_x.chunks_exact_mut(d).zip(buffer.chunks_exact(d)) {
            for (a, v) in dst.iter_mut().enumerate() {
                *v = src[(a + rot) % d];
            }
        }
        let opts = RunOptions { seed: iteration_seed(seed, t as u64), threads: 0, chains_per_task: 0 };
        let ts = Instant::now();
        let out = run_chains(sampler, &target, &rot_x, cfg.k, &opts, |_, _| AcceptMean::default())?;
        sampler_seconds += ts.elapsed().as_secs_f64();
        let (sum, cnt) = out.observers.iter().fold((0.0, 0usize), |(s, c), o| (s + o.sum, c + o.count));
        let accept = if cnt > 0 { sum / cnt as f64 } else { 1.0 };
        for (dst, src) in buffer.chunks_exact_mut(d).zip(out.final_states.chunks_exact(d)) {
            for (a, &v) in src.iter().enumerate() {
                dst[(a + rot) % d] = v;
            }
        }
        if batches.is_empty() {
            order.shuffle(&mut rng);
            batches = order.chunks_exact(cfg.batch).rev().map(|c| c.to_vec()).collect();
        }
        let idx = batches.pop().expect("at least one batch");
        let xb: Vec<u32> = idx.iter().flat_map(|&r| data[r * d..(r + 1) * d].iter().copied()).collect();
        let md = second_moment(&xb, d);
        let mb = second_moment(&buffer, d);
        let grad: Vec<f64> = (0..d * d)
            .map(|k| {
                let (a, b) = (k / d, k % d);
                let sign = if j[k] > 0.0 {
                    1.0
                } else if j[k] < 0.0 {
                    -1.0
                } else {
                    0.0
                };
                -(md[[a, b]] - mb[[a, b]]) + cfg.l1 * sign
            })
            .collect();
        adam.step(&mut g, &grad);
        for i in 0..d {
            g[i * d + i] = 0.0;
        }
        seconds += t0.elapsed().as_secs_f64();
        let done = t + 1;
        if done % cfg.record_every == 0 || done == cfg.iters {
            record(done, seconds, sampler_seconds, accept, &g, &mut records);
        }
    }
    Ok((records, symmetrise(&g, d)))
}

/// Mean acceptance probability over the steps a task observed.
#[derive(Default)]
struct AcceptMean {
    sum: f64,
    count: usize,
}

impl dlp_core::Observer for AcceptMean {
    fn observe(&mut self, _: &dlp_core::StepContext, _: dlp_core::States<'_>, info: &[dlp_core::StepInfo]) {
        for i in info {
            self.sum += i.accept_prob;
            self.count += 1;
        }
    }
}
