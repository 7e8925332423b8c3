//! Training a categorical RBM ([`dlp_models::CatRbm`], DISCS's `NNCategorical`) by CD-k with
//! Adam: the loss −mean ℓ(data) + mean ℓ(samples) with the samples held fixed, its gradient in
//! the parameters (∂ℓ/∂W_{i,k,j} = 1[x_i = k] σ(a_j), ∂ℓ/∂b_{i,k} = 1[x_i = k], ∂ℓ/∂c_j =
//! σ(a_j)), the negative samples by k block-Gibbs sweeps of the model's own
//! [`CatRbm::block_gibbs`] started at the data batch, each chain on its own seeded stream (so
//! the result does not depend on the thread count).
//!
//! DISCS trains its RBMs by PCD-100 (`discs/learning/rbm/exp_config.py`); CD-k started at the
//! data is what `dlp-learn` trains the binary RBM with (§3.3 of the main paper) and is used here
//! for both, which the DISCS page states.

use crate::rbm::{CdConfig, iteration_seed};
use crate::{LearnError, bad};
use dlp_core::math::sigmoid;
use dlp_core::optim::Adam;
use dlp_core::rng::{chain_rngs, setup_rng};
use dlp_models::CatRbm;
use rand::seq::SliceRandom;
use rayon::prelude::*;

/// Rows per block of the parameter gradient's parallel sum.
const GRAD_BLOCK: usize = 10;

/// A categorical RBM's parameters in [`CatRbm`]'s layout, as the trainer updates them.
#[derive(Clone, Debug, PartialEq)]
pub struct CatRbmParams {
    /// Sites.
    pub d: usize,
    /// Categories per site.
    pub k: usize,
    /// Hidden units.
    pub m: usize,
    /// W, (d·K) × M row-major.
    pub w: Vec<f64>,
    /// Visible biases, d × K row-major.
    pub b: Vec<f64>,
    /// Hidden biases (M).
    pub c: Vec<f64>,
}

impl CatRbmParams {
    /// DISCS's initialisation (`NNCategorical.setup`): W ~ N(0, 1/(d·K + 2)) drawn from `seed`,
    /// b_{i,k} = log(mean of 1[x_i = k] over the data, clipped to [0.01, 0.99]), c = 0.
    pub fn discs_init(data: &[u32], d: usize, k: usize, m: usize, seed: u64) -> CatRbmParams {
        use rand_distr::{Distribution, StandardNormal};
        let n = (data.len() / d).max(1) as f64;
        let mut freq = vec![0.0; d * k];
        for row in data.chunks_exact(d) {
            for (i, &v) in row.iter().enumerate() {
                freq[i * k + v as usize] += 1.0;
            }
        }
        let b = freq.iter().map(|f| (f / n).clamp(0.01, 0.99).ln()).collect();
        let sd = 1.0 / ((d * k + 2) as f64).sqrt();
        let mut rng = setup_rng(seed);
        let w = (0..d * k * m)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                sd * z
            })
            .collect();
        CatRbmParams { d, k, m, w, b, c: vec![0.0; m] }
    }

    /// The model these parameters define.
    pub fn model(&self) -> Result<CatRbm, LearnError> {
        CatRbm::new(self.d, self.k, self.m, self.w.clone(), self.b.clone(), self.c.clone())
            .map_err(|e| bad("parameters", "non-finite", &e.to_string()))
    }

    /// Mean over the rows of `xs` of ∇_θ ℓ, as (W, b, c) in the parameters' layout.
    pub fn grad_mean(&self, model: &CatRbm, xs: &[u32]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (d, k, m) = (self.d, self.k, self.m);
        let zero = || (vec![0.0; d * k * m], vec![0.0; d * k], vec![0.0; m]);
        // Fixed blocks of rows, summed in order: rayon's fold would split by scheduling, and
        // the rounding (so the trained model) would depend on the thread count.
        let parts: Vec<_> = xs
            .par_chunks(d * GRAD_BLOCK)
            .map(|rows| {
                let (mut gw, mut gb, mut gc) = zero();
                let mut a = vec![0.0; m];
                for x in rows.chunks_exact(d) {
                    model.hidden_preactivation(x, &mut a);
                    let s: Vec<f64> = a.iter().map(|&aj| sigmoid(aj)).collect();
                    for (i, &v) in x.iter().enumerate() {
                        let r = i * k + v as usize;
                        gb[r] += 1.0;
                        for (g, sj) in gw[r * m..(r + 1) * m].iter_mut().zip(&s) {
                            *g += sj;
                        }
                    }
                    for (g, sj) in gc.iter_mut().zip(&s) {
                        *g += sj;
                    }
                }
                (gw, gb, gc)
            })
            .collect();
        let (mut gw, mut gb, mut gc) = zero();
        for (x, y, z) in parts {
            gw.iter_mut().zip(&x).for_each(|(p, q)| *p += q);
            gb.iter_mut().zip(&y).for_each(|(p, q)| *p += q);
            gc.iter_mut().zip(&z).for_each(|(p, q)| *p += q);
        }
        let n = (xs.len() / d).max(1) as f64;
        for g in [&mut gw, &mut gb, &mut gc] {
            g.iter_mut().for_each(|v| *v /= n);
        }
        (gw, gb, gc)
    }
}

/// Trains `params` by CD-`cfg.k` with Adam on the rows of `data` (n × d category indices),
/// shuffled every epoch with `seed`; `on_update(done, total)` after each update. Returns the
/// CD loss (mean ℓ(samples) − mean ℓ(data)) of every update.
pub fn train_cat_cd(
    params: &mut CatRbmParams,
    data: &[u32],
    cfg: &CdConfig,
    seed: u64,
    mut on_update: impl FnMut(usize, usize),
) -> Result<Vec<f64>, LearnError> {
    let d = params.d;
    let n = data.len() / d;
    if cfg.batch == 0 || n < cfg.batch {
        return Err(bad("batch", cfg.batch, &format!("must be in 1..={n} (the data rows)")));
    }
    if let Some(v) = data.iter().find(|&&v| v as usize >= params.k) {
        return Err(bad("data", v, &format!("a category index must be below K = {}", params.k)));
    }
    let total = n / cfg.batch * cfg.epochs;
    let (mut adam_w, mut adam_b, mut adam_c) =
        (Adam::new(params.w.len(), cfg.lr), Adam::new(params.b.len(), cfg.lr), Adam::new(params.c.len(), cfg.lr));
    let mut order: Vec<usize> = (0..n).collect();
    let mut shuffle_rng = setup_rng(seed);
    let mut losses = Vec::with_capacity(total);
    for _ in 0..cfg.epochs {
        order.shuffle(&mut shuffle_rng);
        for idx in order.chunks_exact(cfg.batch) {
            let batch: Vec<u32> = idx.iter().flat_map(|&r| data[r * d..(r + 1) * d].iter().copied()).collect();
            let model = params.model()?;
            let mut fantasy = batch.clone();
            let mut rngs = chain_rngs(iteration_seed(seed, losses.len() as u64), 0, cfg.batch);
            fantasy.par_chunks_mut(d).zip(rngs.par_iter_mut()).for_each(|(x, rng)| {
                for _ in 0..cfg.k {
                    model.block_gibbs(x, rng);
                }
            });
            let mean_ell = |xs: &[u32]| {
                use dlp_core::TargetExt;
                xs.chunks_exact(d).map(|x| model.log_density(x).unwrap_or(f64::NAN)).sum::<f64>() / cfg.batch as f64
            };
            losses.push(mean_ell(&fantasy) - mean_ell(&batch));
            let (dw, db, dc) = params.grad_mean(&model, &batch);
            let (mw, mb, mc) = params.grad_mean(&model, &fantasy);
            // Descent on the loss: its gradient is E_samples ∇ℓ − E_data ∇ℓ.
            let diff = |s: Vec<f64>, t: Vec<f64>| s.iter().zip(&t).map(|(s, t)| s - t).collect::<Vec<f64>>();
            adam_w.step(&mut params.w, &diff(mw, dw));
            adam_b.step(&mut params.b, &diff(mb, db));
            adam_c.step(&mut params.c, &diff(mc, dc));
            on_update(losses.len(), total);
        }
    }
    Ok(losses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::TargetExt;

    /// The parameter gradient against central differences of the model's ℓ.
    #[test]
    fn parameter_gradient_matches_finite_differences() {
        let data = vec![0u32, 2, 1, 1, 0, 2, 2, 2, 0];
        let p = CatRbmParams::discs_init(&data, 3, 3, 2, 5);
        let model = p.model().unwrap();
        let (gw, gb, gc) = p.grad_mean(&model, &data);
        let ell = |q: &CatRbmParams| {
            let m = q.model().unwrap();
            data.chunks(3).map(|x| m.log_density(x).unwrap()).sum::<f64>() / 3.0
        };
        let h = 1e-6;
        for (which, len) in [(0, gw.len()), (1, gb.len()), (2, gc.len())] {
            for t in 0..len {
                let bump = |e: f64| {
                    let mut q = p.clone();
                    [&mut q.w, &mut q.b, &mut q.c][which][t] += e;
                    ell(&q)
                };
                let fd = (bump(h) - bump(-h)) / (2.0 * h);
                let g = [&gw, &gb, &gc][which][t];
                assert!((g - fd).abs() < 1e-6, "param {which}[{t}]: {g} vs {fd}");
            }
        }
    }

    /// The gradient's bits do not depend on the thread count (fixed blocks summed in order).
    #[test]
    fn parameter_gradient_is_the_same_for_any_thread_count() {
        let data: Vec<u32> = (0..3 * 257).map(|t| (t * 7 % 5 % 3) as u32).collect();
        let p = CatRbmParams::discs_init(&data, 3, 3, 4, 2);
        let model = p.model().unwrap();
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| p.grad_mean(&model, &data))
        };
        let one = on(1);
        assert_eq!(one, on(2));
        assert_eq!(one, on(5));
    }

    /// Training on data drawn from a known model raises the data's mean log-likelihood under
    /// the normalised model (exact on 27 states) well above the initial model's.
    #[test]
    fn training_raises_the_exact_log_likelihood_of_the_data() {
        let (d, k) = (3usize, 3usize);
        // Data concentrated on two states: a model that learns them must put mass there.
        let data: Vec<u32> = (0..400).flat_map(|r| if r % 3 == 0 { [0, 1, 2] } else { [2, 2, 0] }).collect();
        let mut p = CatRbmParams::discs_init(&data, d, k, 4, 1);
        let exact_ll = |q: &CatRbmParams| {
            let m = q.model().unwrap();
            let all: Vec<f64> = (0..27u32).map(|s| m.log_density(&[s % 3, s / 3 % 3, s / 9]).unwrap()).collect();
            let z = dlp_core::math::logsumexp(&all);
            data.chunks(d).map(|x| m.log_density(x).unwrap() - z).sum::<f64>() / 400.0
        };
        let before = exact_ll(&p);
        let cfg = CdConfig { k: 5, batch: 20, lr: 0.05, epochs: 5 };
        let losses = train_cat_cd(&mut p, &data, &cfg, 3, |_, _| ()).unwrap();
        assert_eq!(losses.len(), 100);
        let after = exact_ll(&p);
        // The data's entropy is 0.64 nats: a good fit approaches −0.64.
        assert!(after > before + 0.5 && after > -1.0, "before {before}, after {after}");
        assert!(train_cat_cd(&mut p, &[0, 3, 1], &CdConfig { batch: 1, ..cfg }, 0, |_, _| ()).is_err());
    }
}
