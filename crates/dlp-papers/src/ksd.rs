//! The discrete Stein kernel of KDSD on **real-valued one-hot inputs**, in candle, so that a
//! squared-KSD loss can be differentiated through relaxed (Gumbel-softmax) samples — the
//! training objective of the KSD-fitted mixtures of paper 003 (spec `transforms-and-svgd.md`
//! §8) — while on hard one-hot inputs it is exactly the statistic `dlp gof --test kdsd`
//! computes (`dlp_gof::kdsd`; test `hard_inputs_give_the_gof_crates_matrix`).
//!
//! Inputs: y, n × D × L rows on the simplex (hard samples are one-hot), and scores s, n × D,
//! in the GOF crate's convention s_i(x) = 1 − p(fwd_i x)/p(x) (the blog's p(fwd)/p − 1 is −s;
//! the kernel below is `gof.md` §3.2's with that sign). The base kernel is Gaussian on the
//! flattened one-hots, k(x, x′) = exp(−‖x − x′‖²/σ²); on hard inputs ‖x − x′‖² = 2H, so it is
//! the GOF crate's exp-Hamming kernel exp(−λH/D) with λ = 2D/σ². The backward shift of
//! coordinate i is the cyclic permutation of its L entries (bwd(e_c) = e_{c−1}); a permutation
//! of both arguments keeps ‖x − x′‖, so k(bwd_i x, bwd_i x′) = k(x, x′), and
//!
//! κ(x, x′) = k Σ_i s_i(x)s_i(x′) − Σ_i s_i(x) b_i − Σ_i s_i(x′) a_i + Σ_i (a_i + b_i),
//! a_i = k − k(bwd_i x, x′), b_i = k − k(x, bwd_i x′),
//!
//! where shifting coordinate i changes ‖x − x′‖² by 2(x_i·x′_i − bwd(x_i)·x′_i), so every
//! shifted kernel value is k times one exponential of per-coordinate inner products: the
//! n × n × D tensors of x_i·x′_i and bwd(x_i)·x′_i (two batched matrix products) give the whole
//! n × n matrix without materialising shifted samples.

use candle_core::{D, Result, Tensor};

/// A base kernel of the squared distance t = ‖x − x′‖² between flattened one-hots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BaseKernel {
    /// exp(−t/σ²): the blog's stated kernel (on hard inputs, the GOF crate's exp-Hamming).
    Gaussian {
        /// σ².
        sigma2: f64,
    },
    /// exp(−exp(−t)/σ²): what the reference notebook's pairwise kernel for the mixture's
    /// incomplete estimator computes (a bug, spec §8 caveat (i)), kept for
    /// `003-mixture --notebook-compat`.
    NotebookDoubleExp {
        /// σ².
        sigma2: f64,
    },
}

impl BaseKernel {
    fn apply(&self, t: &Tensor) -> Result<Tensor> {
        match *self {
            BaseKernel::Gaussian { sigma2 } => (t / -sigma2)?.exp(),
            BaseKernel::NotebookDoubleExp { sigma2 } => (t.neg()?.exp()? / -sigma2)?.exp(),
        }
    }
}

/// The n × n Stein-kernel matrix κ(y_a, y_b) of relaxed one-hot samples `y` (n × D × L) with
/// scores `s` (n × D), Gaussian base kernel of bandwidth σ² = `sigma2` (see the module doc).
pub fn stein_matrix(y: &Tensor, s: &Tensor, sigma2: f64) -> Result<Tensor> {
    stein_matrix_with(y, s, BaseKernel::Gaussian { sigma2 })
}

/// [`stein_matrix`] with any [`BaseKernel`] of the squared distance.
pub fn stein_matrix_with(y: &Tensor, s: &Tensor, kernel: BaseKernel) -> Result<Tensor> {
    let (n, d, l) = y.dims3()?;
    let flat = y.reshape((n, d * l))?;
    // ‖y_a − y_b‖² = |y_a|² + |y_b|² − 2 y_a·y_b.
    let sq = flat.sqr()?.sum_keepdim(1)?; // n × 1
    let gram = flat.matmul(&flat.t()?)?;
    let dist = sq.broadcast_add(&sq.t()?)?.sub(&(gram * 2.0)?)?;
    let k = kernel.apply(&dist)?; // n × n
    // Per-coordinate inner products, D × n × n: g[i,a,b] = y_ai·y_bi, gb[i,a,b] = bwd(y_ai)·y_bi.
    let yd = y.transpose(0, 1)?.contiguous()?; // D × n × L
    let bwd = Tensor::cat(&[&yd.narrow(2, 1, l - 1)?, &yd.narrow(2, 0, 1)?], 2)?; // bwd(e_c) = e_{c−1}
    let yt = yd.transpose(1, 2)?.contiguous()?; // D × L × n
    let g = yd.matmul(&yt)?;
    let gb = bwd.matmul(&yt)?;
    // Shifting coordinate i of y_a moves the squared distance by 2(g − gb)[i,a,b]; shifting it
    // in y_b by 2(g − gb)[i,b,a] (bwd(y_b)·y_a = gb[i,b,a]).
    let shifted = |delta: &Tensor| kernel.apply(&dist.unsqueeze(0)?.broadcast_add(&(delta * 2.0)?)?);
    let a = k.unsqueeze(0)?.broadcast_sub(&shifted(&g.sub(&gb)?)?)?;
    let gbt = gb.transpose(1, 2)?;
    let b = k.unsqueeze(0)?.broadcast_sub(&shifted(&g.sub(&gbt)?)?)?;
    // Σ_i s_i(y_a) s_i(y_b), Σ_i s_i(y_a) b_i, Σ_i s_i(y_b) a_i, Σ_i (a_i + b_i).
    let st = s.t()?.contiguous()?; // D × n
    let dot = s.matmul(&s.t()?)?;
    let sa_b = (b.broadcast_mul(&st.unsqueeze(2)?)?).sum(0)?;
    let sb_a = (a.broadcast_mul(&st.unsqueeze(1)?)?).sum(0)?;
    let ab = (a + b)?.sum(0)?;
    (k.mul(&dot)? - sa_b)?.sub(&sb_a)?.add(&ab)
}

/// The incomplete U-statistic: the mean of κ over the given index pairs (a, b), a ≠ b
/// (the notebook's mixture estimator draws B of them uniformly).
pub fn ksd2_incomplete(y: &Tensor, s: &Tensor, kernel: BaseKernel, pairs: &[(usize, usize)]) -> Result<Tensor> {
    let m = stein_matrix_with(y, s, kernel)?;
    let n = m.dim(0)?;
    let idx: Vec<u32> = pairs.iter().map(|&(a, b)| (a * n + b) as u32).collect();
    let idx = Tensor::from_vec(idx, pairs.len(), m.device())?;
    m.flatten_all()?.index_select(&idx, 0)?.mean_all()
}

/// The U-statistic of squared KSD: the mean of κ over ordered pairs a ≠ b (Gaussian kernel).
pub fn ksd2_u(y: &Tensor, s: &Tensor, sigma2: f64) -> Result<Tensor> {
    ksd2_u_with(y, s, BaseKernel::Gaussian { sigma2 })
}

/// [`ksd2_u`] with any [`BaseKernel`].
pub fn ksd2_u_with(y: &Tensor, s: &Tensor, kernel: BaseKernel) -> Result<Tensor> {
    let m = stein_matrix_with(y, s, kernel)?;
    let n = m.dim(0)?;
    let eye = Tensor::eye(n, m.dtype(), m.device())?;
    let diag = m.mul(&eye)?.sum_all()?;
    (m.sum_all()? - diag)? / (n as f64 * (n as f64 - 1.0))
}

/// The V-statistic (or, with `weights` q(x) over an enumeration, the population value
/// Σ q(x)q(x′)κ(x, x′)): wᵀ κ w for weights `w` (n).
pub fn ksd2_weighted(y: &Tensor, s: &Tensor, sigma2: f64, w: &Tensor) -> Result<Tensor> {
    let m = stein_matrix(y, s, sigma2)?;
    let w = w.unsqueeze(D::Minus1)?;
    w.t()?.matmul(&m)?.matmul(&w)?.squeeze(0)?.squeeze(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;
    use rand::{RngExt, SeedableRng};

    fn one_hot(xs: &[u32], d: usize, l: usize) -> Tensor {
        let mut v = vec![0f64; xs.len() * l];
        for (p, &c) in xs.iter().enumerate() {
            v[p * l + c as usize] = 1.0;
        }
        Tensor::from_vec(v, (xs.len() / d, d, l), &Device::Cpu).unwrap()
    }

    #[test]
    fn hard_inputs_give_the_gof_crates_matrix() {
        // On hard one-hot inputs with any scores, κ equals dlp_gof's exp-Hamming Stein kernel
        // at λ = 2D/σ², entry by entry (f64 on both sides).
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for (d, l) in [(4usize, 3usize), (6, 2), (3, 4)] {
            let n = 9;
            let xs: Vec<u32> = (0..n * d).map(|_| rng.random_range(0..l as u32)).collect();
            let s: Vec<f64> = (0..n * d).map(|_| rng.random_range(-2.0..1.0)).collect();
            let sigma2 = 1.7 * d as f64;
            let m =
                stein_matrix(&one_hot(&xs, d, l), &Tensor::from_vec(s.clone(), (n, d), &Device::Cpu).unwrap(), sigma2)
                    .unwrap()
                    .to_vec2::<f64>()
                    .unwrap();
            let kernel = dlp_gof::kdsd::BaseKernel::ExpHamming { scale: 2.0 * d as f64 / sigma2 };
            for a in 0..n {
                for b in 0..n {
                    let want = dlp_gof::kdsd::stein_kernel(
                        &kernel,
                        l,
                        &xs[a * d..(a + 1) * d],
                        &xs[b * d..(b + 1) * d],
                        &s[a * d..(a + 1) * d],
                        &s[b * d..(b + 1) * d],
                    );
                    assert!((m[a][b] - want).abs() < 1e-12, "D={d} L={l} ({a},{b}): {} vs {want}", m[a][b]);
                }
            }
        }
    }

    /// Every state of a d-coordinate, L-class space, first coordinate most significant.
    fn all_states(d: usize, l: usize) -> Vec<u32> {
        let space = dlp_core::Space::categorical(d, l);
        let mut out = vec![0u32; space.n_states().unwrap() as usize * d];
        for (s, row) in out.chunks_mut(d).enumerate() {
            space.state_of_index(s as u64, row);
        }
        out
    }

    #[test]
    fn population_ksd2_of_a_product_model_is_zero_at_the_target_only() {
        // Exact test (spec §8): on {0..L−1}^D enumerated, Σ q(x)q(x′)κ(x, x′) with the target's
        // own scores is 0 for q = p (a product of categoricals) and positive for q ≠ p; and
        // the U-statistic over the enumeration's states equals its definition.
        let (d, l) = (3usize, 3usize);
        let logits: Vec<f64> = vec![0.3, -0.8, 0.1, 1.2, 0.0, -0.4, -0.6, 0.5, 0.9];
        let states = all_states(d, l);
        let n = states.len() / d;
        let logp = |x: &[u32]| -> f64 { (0..d).map(|i| logits[i * l + x[i] as usize]).sum() };
        // s_i(x) = 1 − p(fwd_i x)/p(x), fwd(c) = c + 1 mod L.
        let mut s = vec![0f64; n * d];
        for (row, x) in states.chunks(d).enumerate() {
            for i in 0..d {
                let mut f = x.to_vec();
                f[i] = (f[i] + 1) % l as u32;
                s[row * d + i] = 1.0 - (logp(&f) - logp(x)).exp();
            }
        }
        let z: f64 = states.chunks(d).map(|x| logp(x).exp()).sum();
        let p: Vec<f64> = states.chunks(d).map(|x| logp(x).exp() / z).collect();
        let y = one_hot(&states, d, l);
        let st = Tensor::from_vec(s, (n, d), &Device::Cpu).unwrap();
        let pop = |w: &[f64]| {
            let w = Tensor::from_vec(w.to_vec(), n, &Device::Cpu).unwrap();
            ksd2_weighted(&y, &st, d as f64, &w).unwrap().to_scalar::<f64>().unwrap()
        };
        assert!(pop(&p).abs() < 1e-12, "q = p: {}", pop(&p));
        let uniform = vec![1.0 / n as f64; n];
        assert!(pop(&uniform) > 1e-3, "q uniform: {}", pop(&uniform));
        // U over the n states = (Σ_ab κ − Σ_a κ_aa)/(n(n−1)).
        let m = stein_matrix(&y, &st, d as f64).unwrap().to_vec2::<f64>().unwrap();
        let total: f64 = m.iter().flatten().sum();
        let diag: f64 = (0..n).map(|a| m[a][a]).sum();
        let u = ksd2_u(&y, &st, d as f64).unwrap().to_scalar::<f64>().unwrap();
        assert!((u - (total - diag) / (n * (n - 1)) as f64).abs() < 1e-12);
    }

    #[test]
    fn the_u_statistic_backpropagates_to_relaxed_inputs() {
        // candle's autograd through the whole statistic (shifts, batched products, exp) equals
        // central finite differences on relaxed inputs, so a KSD² loss can train through
        // Gumbel-softmax samples; the scores are held fixed here.
        let (n, d, l) = (5usize, 3usize, 3usize);
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        let raw: Vec<f64> = (0..n * d * l).map(|_| rng.random_range(0.05..1.0)).collect();
        let s: Vec<f64> = (0..n * d).map(|_| rng.random_range(-1.5..0.9)).collect();
        let st = Tensor::from_vec(s, (n, d), &Device::Cpu).unwrap();
        let loss = |v: &[f64]| {
            let y = Tensor::from_vec(v.to_vec(), (n, d, l), &Device::Cpu).unwrap();
            ksd2_u(&y, &st, 2.0).unwrap().to_scalar::<f64>().unwrap()
        };
        let var =
            candle_core::Var::from_tensor(&Tensor::from_vec(raw.clone(), (n, d, l), &Device::Cpu).unwrap()).unwrap();
        let grads = ksd2_u(var.as_tensor(), &st, 2.0).unwrap().backward().unwrap();
        let g = grads
            .get(var.as_tensor())
            .expect("a gradient reaches the input")
            .flatten_all()
            .unwrap()
            .to_vec1::<f64>()
            .unwrap();
        for idx in [0, 7, 19, n * d * l - 1] {
            let (mut up, mut dn) = (raw.clone(), raw.clone());
            up[idx] += 1e-6;
            dn[idx] -= 1e-6;
            let fd = (loss(&up) - loss(&dn)) / 2e-6;
            assert!((g[idx] - fd).abs() < 1e-6 * (1.0 + fd.abs()), "entry {idx}: autograd {} vs {fd}", g[idx]);
        }
    }

    #[test]
    fn any_distance_kernel_matches_a_naive_evaluation_and_incomplete_over_all_pairs_is_u() {
        // κ for the notebook's double-exponential kernel on relaxed inputs, against the
        // definition with explicitly shifted vectors (bwd_i rolls coordinate i's L entries);
        // and the incomplete statistic over every ordered pair a ≠ b equals the U-statistic.
        let (n, d, l) = (4usize, 3usize, 3usize);
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        let raw: Vec<f64> = (0..n * d * l).map(|_| rng.random_range(0.0..1.0)).collect();
        let s: Vec<f64> = (0..n * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let kernel = BaseKernel::NotebookDoubleExp { sigma2: 1.3 };
        let f = |t: f64| (-(-t).exp() / 1.3).exp();
        let row = |a: usize| raw[a * d * l..(a + 1) * d * l].to_vec();
        let bwd = |v: &[f64], i: usize| {
            let mut w = v.to_vec();
            for c in 0..l {
                w[i * l + c] = v[i * l + (c + 1) % l];
            }
            w
        };
        let k = |u: &[f64], v: &[f64]| f(u.iter().zip(v).map(|(p, q)| (p - q) * (p - q)).sum());
        let y = Tensor::from_vec(raw.clone(), (n, d, l), &Device::Cpu).unwrap();
        let st = Tensor::from_vec(s.clone(), (n, d), &Device::Cpu).unwrap();
        let m = stein_matrix_with(&y, &st, kernel).unwrap().to_vec2::<f64>().unwrap();
        for a in 0..n {
            for b in 0..n {
                let (x, z) = (row(a), row(b));
                let k0 = k(&x, &z);
                let mut want = 0.0;
                for i in 0..d {
                    let (ai, bi) = (k0 - k(&bwd(&x, i), &z), k0 - k(&x, &bwd(&z, i)));
                    want += k0 * s[a * d + i] * s[b * d + i] - s[a * d + i] * bi - s[b * d + i] * ai + ai + bi;
                    // The identity the fast form relies on: a common shift keeps the distance.
                    assert!((k(&bwd(&x, i), &bwd(&z, i)) - k0).abs() < 1e-14);
                }
                assert!((m[a][b] - want).abs() < 1e-12, "({a},{b}): {} vs {want}", m[a][b]);
            }
        }
        let pairs: Vec<(usize, usize)> =
            (0..n).flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b))).collect();
        let inc = ksd2_incomplete(&y, &st, kernel, &pairs).unwrap().to_scalar::<f64>().unwrap();
        let u = ksd2_u_with(&y, &st, kernel).unwrap().to_scalar::<f64>().unwrap();
        assert!((inc - u).abs() < 1e-12, "{inc} vs {u}");
    }
}
