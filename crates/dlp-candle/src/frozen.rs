//! Layers with frozen weights whose backward pass gives the **input** gradient only.
//!
//! Samplers need ∇ₓf, never the gradient of the weights. candle's backward for `matmul` and
//! `conv2d` computes both operands' gradients whatever is tracked (0.11's `backprop.rs`: the
//! kernel gradient of a convolution is a second convolution as large as the forward), so a
//! sampler step through a checkpoint's layers pays for a weight gradient it throws away. When
//! the weights are plain tensors (a checkpoint, or the detached copies a sampler uses) on the
//! CPU and the input is part of a graph, these functions compute the layer graph-free and
//! return it through [`InputGradOnly`], a custom op whose forward hands back that value and
//! whose backward is the input gradient alone. Trainable weights (`Var`s), other devices and
//! graph-free inputs take candle's plain op, so training is unchanged.
//!
//! Written by hand because candle has no "no weight gradient" switch. The linear layer's
//! backward is candle's own product; the convolution's is the same sum as candle's
//! `conv_transpose2d` written as one GEMM plus a col2im (see [`conv2d_input_grad`]).

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Storage, Tensor};

/// The backward of a frozen layer: how the output gradient maps to the input gradient.
enum Back {
    /// y = x·Wᵀ: ∂x = ∂y·W.
    Linear { w: Tensor },
    /// y = conv2d(x, W): ∂x = conv_transpose2d(∂y, W), candle's own input gradient.
    Conv2d { w: Tensor, padding: usize, stride: usize },
}

/// A layer output already computed graph-free (`y`), attached to the input `x` with an
/// input-gradient-only backward.
struct InputGradOnly {
    y: Tensor,
    back: Back,
}

impl CustomOp1 for InputGradOnly {
    fn name(&self) -> &'static str {
        "input-grad-only"
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let (storage, layout) = self.y.storage_and_layout();
        let n = layout.shape().elem_count();
        match (&*storage, layout.contiguous_offsets()) {
            (Storage::Cpu(c), Some((0, end))) if end == n => Ok((c.clone(), layout.shape().clone())),
            _ => candle_core::bail!("input-grad-only: the layer output is not a contiguous CPU tensor"),
        }
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        match &self.back {
            Back::Linear { w } => Ok(Some(grad.matmul(w)?)),
            Back::Conv2d { w, padding, stride } => Ok(Some(conv2d_input_grad(arg, w, grad, *stride, *padding)?)),
        }
    }
}

/// ∂x of y = conv2d(x, W) (dilation 1, one group) given ∂y, as one GEMM and a col2im:
/// cols[n, p, (c, ky, kx)] = Σ_o ∂y[n, o, p]·W[o, c, ky, kx], then each column entry is added to
/// the input pixel it was read from. candle 0.11's CPU `conv_transpose2d` (what its own Conv2D
/// backward calls) is a direct loop of short dot products, several times slower than its
/// im2col-GEMM forward; this is the same sum in GEMM form.
fn conv2d_input_grad(
    x: &Tensor,
    w: &Tensor,
    grad: &Tensor,
    stride: usize,
    padding: usize,
) -> candle_core::Result<Tensor> {
    let (n, c, h, wd) = x.dims4()?;
    let (o, c2, kh, kw) = w.dims4()?;
    let (n2, o2, ho, wo) = grad.dims4()?;
    if c != c2 || o != o2 || n != n2 {
        candle_core::bail!(
            "conv2d input gradient: shapes {:?}, {:?}, {:?} do not agree",
            x.dims(),
            w.dims(),
            grad.dims()
        );
    }
    let k = c * kh * kw;
    let cols = grad.reshape((n, o, ho * wo))?.transpose(1, 2)?.contiguous()?.reshape((n * ho * wo, o))?;
    let cols = cols.matmul(&w.reshape((o, k))?)?; // (n·ho·wo) × (c·kh·kw)
    let geometry = Col2Im { c, h, w: wd, kh, kw, ho, wo, stride, padding };
    let dx = match cols.dtype() {
        DType::F32 => {
            Tensor::from_vec(geometry.run(&cols.flatten_all()?.to_vec1::<f32>()?, n), (n, c, h, wd), x.device())?
        }
        DType::F64 => {
            Tensor::from_vec(geometry.run(&cols.flatten_all()?.to_vec1::<f64>()?, n), (n, c, h, wd), x.device())?
        }
        dt => candle_core::bail!("conv2d input gradient: dtype {dt:?} is not supported (f32 or f64)"),
    };
    Ok(dx)
}

/// The geometry of a col2im: input c × h × w, kernel kh × kw, output ho × wo.
struct Col2Im {
    c: usize,
    h: usize,
    w: usize,
    kh: usize,
    kw: usize,
    ho: usize,
    wo: usize,
    stride: usize,
    padding: usize,
}

impl Col2Im {
    /// Adds the column matrix (n·ho·wo rows of c·kh·kw) back onto n images of c × h × w. Each
    /// image is summed by one thread in a fixed order, so the result does not depend on the
    /// thread count.
    fn run<T: Copy + Default + std::ops::AddAssign + Send + Sync>(&self, cols: &[T], n: usize) -> Vec<T> {
        use rayon::prelude::*;
        let (img, k, rows) = (self.c * self.h * self.w, self.c * self.kh * self.kw, self.ho * self.wo);
        let mut dx = vec![T::default(); n * img];
        dx.par_chunks_mut(img.max(1)).zip(cols.par_chunks(rows * k).take(n)).for_each(|(dx, cols)| {
            for oy in 0..self.ho {
                for ox in 0..self.wo {
                    let row = &cols[(oy * self.wo + ox) * k..][..k];
                    for ci in 0..self.c {
                        for ky in 0..self.kh {
                            // Input row read by this output row and kernel row (padding may
                            // put it outside the image: those reads were zeros).
                            let Some(y) = (oy * self.stride + ky).checked_sub(self.padding).filter(|&y| y < self.h)
                            else {
                                continue;
                            };
                            for kx in 0..self.kw {
                                let Some(xx) =
                                    (ox * self.stride + kx).checked_sub(self.padding).filter(|&v| v < self.w)
                                else {
                                    continue;
                                };
                                dx[(ci * self.h + y) * self.w + xx] += row[(ci * self.kh + ky) * self.kw + kx];
                            }
                        }
                    }
                }
            }
        });
        dx
    }
}

/// Whether a layer with weight `w` and bias `b` on input `x` takes the frozen path.
fn frozen(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> bool {
    x.track_op() && !w.is_variable() && x.device().is_cpu() && !b.is_some_and(Tensor::is_variable)
}

/// `y` plus the (already broadcastable) bias `b`, then attached to `x` when `frozen`.
fn finish(
    x: &Tensor,
    y: Tensor,
    b: Option<Tensor>,
    frozen: bool,
    back: impl FnOnce() -> Back,
) -> candle_core::Result<Tensor> {
    let y = match b {
        Some(b) => y.broadcast_add(&b)?,
        None => y,
    };
    if frozen { x.apply_op1(InputGradOnly { y: y.contiguous()?, back: back() }) } else { Ok(y) }
}

/// x·Wᵀ (+ b) for x of shape [N, in] and W of shape [out, in]; the frozen path when W (and b)
/// are plain CPU tensors and x is in a graph (on AntiBERTy this takes energy + gradient from
/// ≈ 3.3× to ≈ 2.3× a forward, `examples/bert_bench.rs`).
pub(crate) fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> candle_core::Result<Tensor> {
    let frozen = frozen(x, w, b);
    // `t()` each call, not a stored transposed copy: a trainable Var is updated in place.
    let y = if frozen { x.detach() } else { x.clone() }.matmul(&w.t()?)?;
    finish(x, y, b.cloned(), frozen, || Back::Linear { w: w.clone() })
}

/// conv2d(x, W) (+ b per output channel) for x of shape [N, C, H, W] and W of shape
/// [out, C, kh, kw], dilation 1, one group; the frozen path under the same conditions as
/// [`linear`].
pub(crate) fn conv2d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    stride: usize,
    padding: usize,
) -> candle_core::Result<Tensor> {
    let frozen = frozen(x, w, b);
    let y = if frozen { x.detach() } else { x.clone() }.conv2d(w, padding, stride, 1, 1)?;
    let b = b.map(|b| b.reshape((1, (), 1, 1))).transpose()?;
    finish(x, y, b, frozen, || Back::Conv2d { w: w.clone(), padding, stride })
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device, Var};

    fn tensor(n: usize, shape: &[usize], seed: u64) -> Tensor {
        // A fixed, irregular fill (no RNG needed): distinct values of both signs.
        let v: Vec<f64> = (0..n).map(|i| (((i as u64 * 2654435761 + seed) % 1000) as f64 / 500.0) - 1.0).collect();
        Tensor::from_vec(v, shape, &Device::Cpu).unwrap()
    }

    /// The frozen path's value and input gradient equal candle's plain op's (which also
    /// computes the weight gradient), for every stride/padding the ResNet uses and an odd
    /// input size (so the output padding of the transposed convolution matters).
    #[test]
    fn frozen_conv_matches_candles_conv_gradient() {
        for (stride, padding, k, h) in [(1, 1, 3, 7), (2, 1, 3, 7), (2, 0, 1, 7), (2, 1, 3, 8), (1, 0, 1, 5)] {
            let x = Var::from_tensor(&tensor(2 * 3 * h * h, &[2, 3, h, h], 1)).unwrap();
            let w = tensor(4 * 3 * k * k, &[4, 3, k, k], 7);
            let b = tensor(4, &[4], 3);
            let mix = tensor(2 * 4 * 16 * 16, &[2 * 4 * 16 * 16], 5);
            let loss = |y: &Tensor| -> Tensor {
                // A non-uniform weighting of the outputs, so every output gradient differs.
                let flat = y.flatten_all().unwrap();
                (flat.clone() * mix.narrow(0, 0, flat.dim(0).unwrap()).unwrap()).unwrap().sum_all().unwrap()
            };
            let plain = x.as_tensor().conv2d(&w, padding, stride, 1, 1).unwrap();
            let plain = plain.broadcast_add(&b.reshape((1, 4, 1, 1)).unwrap()).unwrap();
            let fast = conv2d(x.as_tensor(), &w, Some(&b), stride, padding).unwrap();
            assert!(fast.track_op(), "the frozen output must stay in the graph");
            let diff = (plain.clone() - fast.clone()).unwrap().abs().unwrap().max_all().unwrap();
            assert_eq!(diff.to_scalar::<f64>().unwrap(), 0.0, "values, stride {stride} padding {padding}");
            let g_plain = loss(&plain).backward().unwrap().get(x.as_tensor()).unwrap().clone();
            let g_fast = loss(&fast).backward().unwrap().get(x.as_tensor()).unwrap().clone();
            let d = (g_plain - g_fast).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
            assert!(d < 1e-12, "input gradients differ by {d}, stride {stride} padding {padding} h {h}");
        }
    }

    #[test]
    fn frozen_linear_matches_candles_matmul_gradient() {
        let x = Var::from_tensor(&tensor(5 * 6, &[5, 6], 2)).unwrap();
        let w = tensor(4 * 6, &[4, 6], 9);
        let plain = x.as_tensor().matmul(&w.t().unwrap()).unwrap();
        let fast = linear(x.as_tensor(), &w, None).unwrap();
        let mix = tensor(20, &[5, 4], 4);
        let g =
            |y: &Tensor| (y * &mix).unwrap().sum_all().unwrap().backward().unwrap().get(x.as_tensor()).unwrap().clone();
        let d = (g(&plain) - g(&fast)).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap();
        assert!(d < 1e-12, "input gradients differ by {d}");
    }

    /// Trainable weights keep candle's op, so they still get a gradient.
    #[test]
    fn variable_weights_take_the_plain_path() {
        let x = Var::from_tensor(&tensor(2 * 2 * 5 * 5, &[2, 2, 5, 5], 1)).unwrap();
        let w = Var::from_tensor(&tensor(3 * 2 * 9, &[3, 2, 3, 3], 2)).unwrap();
        let y = conv2d(x.as_tensor(), w.as_tensor(), None, 1, 1).unwrap();
        let grads = y.sum_all().unwrap().backward().unwrap();
        assert!(grads.get(w.as_tensor()).is_some(), "the kernel lost its gradient");
        assert!(grads.get(x.as_tensor()).is_some());
        assert_eq!(y.dtype(), DType::F64);
    }
}
