//! [`TensorBnn`]: the binary Bayesian neural network of [`dlp_models::BnnModel`] (paper 000
//! §7.4, Tables 2 and 4) evaluated by candle, f32 or f64, on the CPU or a CUDA device.
//!
//! θ ∈ {0,1}^d, w = 2θ − 1 in the flat layout [W1 (p × H), b1, W2, b2]; for a batch β of B data
//! rows f̂(θ) = −τ · mean_{n∈β} (ŷ_n − y_n)², ŷ = σ(tanh(X W1 + b1) W2 + b2). All n chains run
//! in one graph: the bits are an (n, d) variable, W1 its (n, p, H) view, A = X W1 one batched
//! matrix product (n, B, H) (X broadcast over chains), then tanh, the (n, B, 1) output product
//! and the per-chain mean. σ(z) is written 0.5·(1 + tanh(z/2)): 1/(1 + e^{−z}) overflows e^{−z}
//! in f32 for z < −88 (|z| reaches H + 1) and its backward pass then gives 0·∞ = NaN.
//!
//! **∇f is candle's autograd** of Σ_chains f̂ through the bit variable (the factor 2 of w = 2θ − 1
//! comes out of `backward`), not the hand-derived formula of the CPU model: the two derivations
//! are independent and the tests hold them equal (f64: 1e−10). Every op used (affine, narrow,
//! reshape, matmul, broadcast add/sub, tanh, sqr, sum) has a backward pass in candle-core; a
//! missing gradient is an error ([`crate::input_grad`]), never a silent zero.
//!
//! Chains are evaluated in groups of at most 2²⁴ / (B·H) (at least one) so that the (n, B, H)
//! activations and their autograd copies stay within a few hundred MB (H = 500 on COMPAS with
//! 50 chains would otherwise hold ~1 GB per f64 intermediate).

use crate::{Error, TensorCommon, TensorModel, build_error, copy_out, input_grad};
use candle_core::{DType, Device, Tensor, Var};
use dlp_core::Space;
use dlp_models::BnnModel;

/// Elements of one chain group's (n, B, H) activation tensor (see the module doc).
const GROUP_ELEMENTS: usize = 1 << 24;

/// The binary BNN whose f and ∇f are computed by candle (see the module doc).
#[derive(Debug)]
pub struct TensorBnn {
    common: TensorCommon,
    device: Device,
    dtype: DType,
    p: usize,
    h: usize,
    tau: f64,
    /// Features, N × p, on the device.
    x: Tensor,
    /// Targets, N, on the device.
    y: Tensor,
    /// Budget of a chain group's (n, B, H) elements ([`GROUP_ELEMENTS`]; smaller in tests).
    group_elements: usize,
}

impl TensorBnn {
    /// The network and data of `model` uploaded to `device` as `dtype` (F32 or F64).
    pub fn from_bnn(model: &BnnModel, device: &Device, dtype: DType) -> Result<Self, Error> {
        if !matches!(dtype, DType::F32 | DType::F64) {
            return Err(Error::Param(format!("dtype must be f32 or f64, found {dtype:?}")));
        }
        let (n, p) = (model.n(), model.p());
        let upload = |v: &[f64], shape: &[usize]| {
            Tensor::from_vec(v.to_vec(), shape, device)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(|e| build_error(device, e))
        };
        Ok(TensorBnn {
            common: TensorCommon::new(Space::binary(dlp_core::Target::space(model).d), device),
            device: device.clone(),
            dtype,
            p,
            h: model.hidden(),
            tau: model.tau(),
            x: upload(model.features(), &[n, p])?,
            y: upload(model.targets(), &[n])?,
            group_elements: GROUP_ELEMENTS,
        })
    }

    /// The device the data live on and the model is evaluated on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The tensors' dtype (F32 or F64).
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// f̂ of every row of the bit matrix `bits` (n × d) on the data rows `xb` (B × p) with
    /// targets `yb` (B): shape (n).
    fn forward(&self, bits: &Tensor, xb: &Tensor, yb: &Tensor) -> candle_core::Result<Tensor> {
        let (p, h) = (self.p, self.h);
        let n = bits.dim(0)?;
        let nb = xb.dim(0)?;
        let w = bits.affine(2.0, -1.0)?;
        let w1 = w.narrow(1, 0, p * h)?.reshape((n, p, h))?;
        let b1 = w.narrow(1, p * h, h)?.reshape((n, 1, h))?;
        let w2 = w.narrow(1, p * h + h, h)?.reshape((n, h, 1))?;
        let b2 = w.narrow(1, p * h + 2 * h, 1)?.reshape((n, 1, 1))?;
        let hidden = xb.broadcast_matmul(&w1)?.broadcast_add(&b1)?.tanh()?;
        let z = hidden.matmul(&w2)?.broadcast_add(&b2)?;
        let yhat = z.affine(0.5, 0.0)?.tanh()?.affine(0.5, 0.5)?;
        let err = yhat.broadcast_sub(&yb.reshape((1, nb, 1))?)?;
        err.sqr()?.sum((1, 2))?.affine(-self.tau / nb as f64, 0.0)
    }

    /// f̂ (and ∇f̂) of the rows of `xs` on the data rows `xb`, `yb`, in chain groups.
    fn eval(
        &self,
        xs: &[u32],
        xb: &Tensor,
        yb: &Tensor,
        f: &mut [f64],
        mut grad: Option<&mut [f64]>,
    ) -> candle_core::Result<()> {
        let d = self.common.space.d;
        let group = (self.group_elements / (xb.dim(0)? * self.h)).max(1);
        for (g, fg) in f.chunks_mut(group).enumerate() {
            let rows = fg.len();
            let chunk = &xs[g * group * d..(g * group + rows) * d];
            // One host → device upload of the states per call (device-resident chains: later work).
            let bits = Tensor::from_vec(chunk.iter().map(|&v| v as f32).collect(), (rows, d), &self.device)?
                .to_dtype(self.dtype)?;
            match grad.as_deref_mut() {
                None => copy_out(&self.forward(&bits, xb, yb)?, fg)?,
                Some(gr) => {
                    let x = Var::from_tensor(&bits)?;
                    let out = self.forward(x.as_tensor(), xb, yb)?;
                    copy_out(&out, fg)?;
                    copy_out(&input_grad(&out, &x)?, &mut gr[g * group * d..(g * group + rows) * d])?;
                }
            }
        }
        Ok(())
    }
}

impl TensorModel for TensorBnn {
    fn common(&self) -> &TensorCommon {
        &self.common
    }

    fn evaluate_full(&self, xs: &[u32], log_density: &mut [f64], grad: Option<&mut [f64]>) -> candle_core::Result<()> {
        self.eval(xs, &self.x, &self.y, log_density, grad)
    }

    fn data_items(&self) -> Option<usize> {
        Some(self.y.dim(0).expect("targets are a vector"))
    }

    fn evaluate_items(
        &self,
        xs: &[u32],
        items: &[usize],
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> candle_core::Result<()> {
        if items.is_empty() {
            return Err(candle_core::Error::Msg("an empty minibatch".into()));
        }
        let idx = Tensor::from_vec(items.iter().map(|&i| i as u32).collect::<Vec<u32>>(), items.len(), &self.device)?;
        let (xb, yb) = (self.x.index_select(&idx, 0)?, self.y.index_select(&idx, 0)?);
        self.eval(xs, &xb, &yb, log_density, grad)
    }
}

crate::tensor_target!(TensorBnn);

impl crate::DeviceEnergy for TensorBnn {
    fn device(&self) -> &Device {
        &self.device
    }

    fn space(&self) -> &Space {
        &self.common.space
    }

    /// f and ∇f on the full data by the graph of `evaluate_full`, in the same chain groups;
    /// an f64 model computes in f64 and rounds its outputs to f32.
    fn energy_grad(&self, x: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        let n = x.dim(0)?;
        let group = (self.group_elements / (self.x.dim(0)? * self.h)).max(1);
        let (mut fs, mut gs) = (Vec::new(), Vec::new());
        for start in (0..n).step_by(group) {
            let bits = Var::from_tensor(&x.narrow(0, start, group.min(n - start))?.to_dtype(self.dtype)?)?;
            let f = self.forward(bits.as_tensor(), &self.x, &self.y)?;
            gs.push(input_grad(&f, &bits)?.to_dtype(DType::F32)?);
            fs.push(f.detach().to_dtype(DType::F32)?);
        }
        Ok((Tensor::cat(&fs, 0)?, Tensor::cat(&gs, 0)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::TargetExt;
    use dlp_core::{Batch, EvalError, Target};
    use dlp_models::bnn::Precision;
    use rand::RngExt;

    /// A seeded random network: p = 4, H = 6 (d = 37), N = 23.
    fn cpu_model() -> BnnModel {
        let mut rng = dlp_core::setup_rng(21);
        let x: Vec<f64> = (0..23 * 4).map(|_| rng.random_range(-2.0..2.0)).collect();
        let y: Vec<f64> = (0..23).map(|_| rng.random_range(0..2) as f64).collect();
        BnnModel::new(37, 4, 6, 100.0, x, y).unwrap()
    }

    fn states(n: usize, d: usize, seed: u64) -> Vec<u32> {
        let mut rng = dlp_core::setup_rng(seed);
        (0..n * d).map(|_| rng.random_range(0..2)).collect()
    }

    fn max_diff(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
    }

    #[test]
    fn f64_values_and_autograd_gradients_equal_the_cpu_model_for_every_chain() {
        let cpu = cpu_model();
        let t = TensorBnn::from_bnn(&cpu, &Device::Cpu, DType::F64).unwrap();
        let xs = states(9, 37, 5);
        let (mut f, mut g) = (vec![0.0; 9], vec![0.0; 9 * 37]);
        let (mut fc, mut gc) = (vec![0.0; 9], vec![0.0; 9 * 37]);
        t.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
        cpu.log_density_grad_batch(&xs, &mut fc, &mut gc).unwrap();
        // Both are f64 with sums in different orders: agreement to rounding, ~1e−13.
        assert!(max_diff(&f, &fc) < 1e-10, "f: {}", max_diff(&f, &fc));
        for c in 0..9 {
            let (a, b) = (&g[c * 37..(c + 1) * 37], &gc[c * 37..(c + 1) * 37]);
            assert!(max_diff(a, b) < 1e-10, "chain {c}: ∇f differs by {}", max_diff(a, b));
            assert!(b.iter().any(|v| v.abs() > 1e-3), "chain {c}: a vanishing gradient proves nothing");
        }
        let mut f_only = vec![0.0; 9];
        t.log_density_batch(&xs, &mut f_only).unwrap();
        assert!(max_diff(&f_only, &fc) < 1e-10);
    }

    #[test]
    fn f64_minibatches_equal_the_cpu_model_and_bad_items_are_errors() {
        let cpu = cpu_model();
        let t = TensorBnn::from_bnn(&cpu, &Device::Cpu, DType::F64).unwrap();
        assert_eq!(dlp_core::TargetExt::n_data(&t), Some(23));
        let xs = states(4, 37, 6);
        for items in [vec![0usize], vec![22, 3, 3, 7], (0..23).rev().collect()] {
            let (mut f, mut g) = (vec![0.0; 4], vec![0.0; 4 * 37]);
            let (mut fc, mut gc) = (vec![0.0; 4], vec![0.0; 4 * 37]);
            t.evaluate(&xs, Batch::Items(&items), &mut f, Some(&mut g)).unwrap();
            cpu.evaluate(&xs, Batch::Items(&items), &mut fc, Some(&mut gc)).unwrap();
            assert!(max_diff(&f, &fc) < 1e-10 && max_diff(&g, &gc) < 1e-10, "items {items:?}");
        }
        let mut f = vec![0.0; 4];
        let e = t.evaluate(&xs, Batch::Items(&[1, 23]), &mut f, None).unwrap_err();
        assert_eq!(e, EvalError::BadItem { index: 23, n_data: 23 });
    }

    #[test]
    fn f32_agrees_with_the_f32_cpu_model() {
        let cpu = cpu_model().with_precision(Precision::F32);
        let t = TensorBnn::from_bnn(&cpu, &Device::Cpu, DType::F32).unwrap();
        assert_eq!(t.dtype(), DType::F32);
        let xs = states(7, 37, 8);
        let (mut f, mut g) = (vec![0.0; 7], vec![0.0; 7 * 37]);
        let (mut fc, mut gc) = (vec![0.0; 7], vec![0.0; 7 * 37]);
        t.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
        cpu.log_density_grad_batch(&xs, &mut fc, &mut gc).unwrap();
        // Two f32 evaluations with different sum orders and tanh formulas: measured
        // |Δf| = 5.3e−6 and |Δ∇f| = 4.8e−6 here (|f| ~ 50); the bound leaves a factor ≥ 18.
        // Deterministic.
        let (ef, eg) = (max_diff(&f, &fc), max_diff(&g, &gc));
        assert!(ef < 1e-4 && eg < 1e-4, "|Δf| {ef:e}, |Δ∇f| {eg:e}");
    }

    #[test]
    fn chain_groups_give_the_values_and_gradients_of_one_group() {
        let cpu = cpu_model();
        let mut t = TensorBnn::from_bnn(&cpu, &Device::Cpu, DType::F64).unwrap();
        let xs = states(5, 37, 9);
        let (mut f, mut g) = (vec![0.0; 5], vec![0.0; 5 * 37]);
        t.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
        // B·H = 138 elements per chain: a budget of 300 makes groups of 2, 2 and 1 chains.
        t.group_elements = 300;
        let (mut f2, mut g2) = (vec![0.0; 5], vec![0.0; 5 * 37]);
        t.log_density_grad_batch(&xs, &mut f2, &mut g2).unwrap();
        assert!(max_diff(&f, &f2) < 1e-12 && max_diff(&g, &g2) < 1e-12);
    }

    #[test]
    fn non_float_dtypes_are_refused() {
        let e = TensorBnn::from_bnn(&cpu_model(), &Device::Cpu, DType::U32).unwrap_err();
        assert!(e.to_string().contains("dtype must be f32 or f64"), "{e}");
    }
}
