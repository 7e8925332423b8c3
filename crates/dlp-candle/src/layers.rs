//! Linear and 2-d convolution layers whose backward computes only the gradients the graph
//! needs, on the CPU.
//!
//! Samplers need ∇ₓf, never the gradient of the weights; training needs the weights' gradient
//! but not that of the data fed to the first layer. candle 0.11's backward for `matmul` and
//! `conv2d` computes both operands' gradients whatever is tracked (`backprop.rs`: a
//! convolution's kernel gradient is a second convolution as large as the forward), and its CPU
//! input gradient of a convolution, `conv_transpose2d`, is a direct loop of short dot products
//! several times slower than the im2col-GEMM forward. On the CPU, when x or W is part of a
//! graph, these functions compute the layer graph-free and return it through [`Layer`], a
//! custom op whose forward hands back that value and whose backward gives ∂x only when x is
//! tracked and ∂W only when W is: ∂x of a convolution as one GEMM plus a col2im
//! ([`conv2d_input_grad`]), ∂W exactly as candle's own backward computes it. Other devices and
//! graph-free calls take candle's plain op.
//!
//! Written by hand because candle has no switch for either; the sums are candle's own.

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Storage, Tensor};

/// Which layer a [`Layer`] op is, with what its backward needs.
enum Kind {
    /// y = x·Wᵀ, x of shape [N, in], W of shape [out, in].
    Linear,
    /// y = conv2d(x, W), dilation 1, one group.
    Conv2d { padding: usize, stride: usize },
}

/// A layer output already computed graph-free (`y`), attached to its input x and weight W.
struct Layer {
    y: Tensor,
    kind: Kind,
}

impl CustomOp2 for Layer {
    fn name(&self) -> &'static str {
        "dlp-layer"
    }

    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (storage, layout) = self.y.storage_and_layout();
        let n = layout.shape().elem_count();
        match (&*storage, layout.contiguous_offsets()) {
            (Storage::Cpu(c), Some((0, end))) if end == n => Ok((c.clone(), layout.shape().clone())),
            _ => candle_core::bail!("dlp-layer: the layer output is not a contiguous CPU tensor"),
        }
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        // An operand outside the graph (data, a checkpoint's weight) gets no gradient.
        let (need_x, need_w) = (x.track_op(), w.track_op());
        let (x, w) = (x.detach(), w.detach());
        match self.kind {
            Kind::Linear => {
                let dx = need_x.then(|| grad.matmul(&w)).transpose()?;
                let dw = need_w.then(|| grad.t()?.matmul(&x)).transpose()?;
                Ok((dx, dw))
            }
            Kind::Conv2d { padding, stride } => {
                let dx = need_x.then(|| conv2d_input_grad(&x, &w, grad, stride, padding)).transpose()?;
                let dw = need_w.then(|| conv2d_kernel_grad(&x, &w, grad, stride, padding)).transpose()?;
                Ok((dx, dw))
            }
        }
    }
}

/// ∂W of y = conv2d(x, W) given ∂y, exactly as candle 0.11's own Conv2D backward computes it
/// (a convolution of x by ∂y with stride and dilation swapped, cut to the kernel's size).
fn conv2d_kernel_grad(
    x: &Tensor,
    w: &Tensor,
    grad: &Tensor,
    stride: usize,
    padding: usize,
) -> candle_core::Result<Tensor> {
    let g = x.transpose(0, 1)?.conv2d(&grad.transpose(0, 1)?, padding, 1, stride, 1)?.transpose(0, 1)?;
    let (_, _, k0, k1) = w.dims4()?;
    let (_, _, g0, g1) = g.dims4()?;
    if g0 != k0 || g1 != k1 { g.narrow(2, 0, k0)?.narrow(3, 0, k1) } else { Ok(g) }
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

/// Whether the layer takes the [`Layer`] op: on the CPU, with x or W in a graph.
fn custom(x: &Tensor, w: &Tensor) -> bool {
    (x.track_op() || w.track_op()) && x.device().is_cpu()
}

/// x·Wᵀ (+ b) for x of shape [N, in] and W of shape [out, in]. On AntiBERTy's checkpoint
/// weights this takes energy + gradient from ≈ 3.3× to ≈ 2.3× a forward
/// (`examples/bert_bench.rs`).
pub(crate) fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> candle_core::Result<Tensor> {
    // `t()` each call, not a stored transposed copy: a trainable Var is updated in place.
    let y = if custom(x, w) {
        let y = x.detach().matmul(&w.detach().t()?)?.contiguous()?;
        x.apply_op2(w, Layer { y, kind: Kind::Linear })?
    } else {
        x.matmul(&w.t()?)?
    };
    match b {
        Some(b) => y.broadcast_add(b),
        None => Ok(y),
    }
}

/// conv2d(x, W) (+ b per output channel) for x of shape [N, C, H, W] and W of shape
/// [out, C, kh, kw], dilation 1, one group.
pub(crate) fn conv2d(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    stride: usize,
    padding: usize,
) -> candle_core::Result<Tensor> {
    let y = if custom(x, w) {
        let y = x.detach().conv2d(&w.detach(), padding, stride, 1, 1)?.contiguous()?;
        x.apply_op2(w, Layer { y, kind: Kind::Conv2d { padding, stride } })?
    } else {
        x.conv2d(w, padding, stride, 1, 1)?
    };
    match b {
        Some(b) => y.broadcast_add(&b.reshape((1, (), 1, 1))?),
        None => Ok(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    fn tensor(n: usize, shape: &[usize], seed: u64) -> Tensor {
        // A fixed, irregular fill (no RNG needed): distinct values of both signs.
        let v: Vec<f64> = (0..n).map(|i| (((i as u64 * 2654435761 + seed) % 1000) as f64 / 500.0) - 1.0).collect();
        Tensor::from_vec(v, shape, &Device::Cpu).unwrap()
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
        (a - b).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap()
    }

    /// A loss weighting every output differently, so every output gradient differs.
    fn loss(y: &Tensor, mix: &Tensor) -> Tensor {
        let flat = y.flatten_all().unwrap();
        (&flat * mix.narrow(0, 0, flat.dim(0).unwrap()).unwrap()).unwrap().sum_all().unwrap()
    }

    /// Value, input gradient and kernel gradient equal candle's plain op's, for every
    /// stride/padding the ResNet uses and odd and even input sizes (so the cut rows of a
    /// stride-2 convolution matter); with a frozen kernel (sampling) the kernel gets no
    /// gradient, with data input (training's first layer) the input gets none.
    #[test]
    fn conv_matches_candles_conv_and_skips_untracked_operands() {
        let mix = tensor(2 * 4 * 8 * 8, &[2 * 4 * 8 * 8], 5);
        for (stride, padding, k, h) in [(1, 1, 3, 7), (2, 1, 3, 7), (2, 0, 1, 7), (2, 1, 3, 8), (1, 0, 1, 5)] {
            let what = format!("stride {stride} padding {padding} kernel {k} input {h}");
            let x = Var::from_tensor(&tensor(2 * 3 * h * h, &[2, 3, h, h], 1)).unwrap();
            let w = Var::from_tensor(&tensor(4 * 3 * k * k, &[4, 3, k, k], 7)).unwrap();
            let b = tensor(4, &[4], 3);
            let plain = x.as_tensor().conv2d(w.as_tensor(), padding, stride, 1, 1).unwrap();
            let plain = plain.broadcast_add(&b.reshape((1, 4, 1, 1)).unwrap()).unwrap();
            let g_plain = loss(&plain, &mix).backward().unwrap();
            // Both operands tracked.
            let fast = conv2d(x.as_tensor(), w.as_tensor(), Some(&b), stride, padding).unwrap();
            assert_eq!(max_diff(&plain, &fast), 0.0, "values, {what}");
            let g = loss(&fast, &mix).backward().unwrap();
            for (t, name) in [(x.as_tensor(), "input"), (w.as_tensor(), "kernel")] {
                let d = max_diff(g_plain.get(t).unwrap(), g.get(t).unwrap());
                assert!(d < 1e-12, "{name} gradients differ by {d}, {what}");
            }
            // Frozen kernel: the input gradient only.
            let fast = conv2d(x.as_tensor(), &w.as_tensor().detach(), Some(&b), stride, padding).unwrap();
            assert!(fast.track_op(), "the output must stay in the graph, {what}");
            let g = loss(&fast, &mix).backward().unwrap();
            assert!(max_diff(g_plain.get(x.as_tensor()).unwrap(), g.get(x.as_tensor()).unwrap()) < 1e-12, "{what}");
            assert!(g.get(w.as_tensor()).is_none(), "a detached kernel got a gradient, {what}");
            // Data input: the kernel gradient only.
            let fast = conv2d(&x.as_tensor().detach(), w.as_tensor(), Some(&b), stride, padding).unwrap();
            let g = loss(&fast, &mix).backward().unwrap();
            assert!(max_diff(g_plain.get(w.as_tensor()).unwrap(), g.get(w.as_tensor()).unwrap()) < 1e-12, "{what}");
            assert!(g.get(x.as_tensor()).is_none(), "data got a gradient, {what}");
        }
    }

    #[test]
    fn linear_matches_candles_matmul() {
        let x = Var::from_tensor(&tensor(5 * 6, &[5, 6], 2)).unwrap();
        let w = Var::from_tensor(&tensor(4 * 6, &[4, 6], 9)).unwrap();
        let b = tensor(4, &[4], 1);
        let mix = tensor(20, &[20], 4);
        let plain = x.as_tensor().matmul(&w.as_tensor().t().unwrap()).unwrap().broadcast_add(&b).unwrap();
        let g_plain = loss(&plain, &mix).backward().unwrap();
        let fast = linear(x.as_tensor(), w.as_tensor(), Some(&b)).unwrap();
        assert_eq!(max_diff(&plain, &fast), 0.0);
        let g = loss(&fast, &mix).backward().unwrap();
        for t in [x.as_tensor(), w.as_tensor()] {
            assert!(max_diff(g_plain.get(t).unwrap(), g.get(t).unwrap()) < 1e-12);
        }
        let fast = linear(x.as_tensor(), &w.as_tensor().detach(), Some(&b)).unwrap();
        let g = loss(&fast, &mix).backward().unwrap();
        assert!(max_diff(g_plain.get(x.as_tensor()).unwrap(), g.get(x.as_tensor()).unwrap()) < 1e-12);
        assert!(g.get(w.as_tensor()).is_none(), "a detached weight got a gradient");
    }
}
