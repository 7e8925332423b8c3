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
//! ([`conv2d_input_grad`]), ∂W exactly as candle's own backward computes it. A convolution's
//! value on the CPU is also computed here, tracked or not ([`conv2d_cpu`]: im2col blocks and
//! one GEMM each, where candle's `conv2d_tiled` multiplies many small tiles). Other devices
//! take candle's plain ops.
//!
//! Written by hand because candle has no switch for either; the sums are candle's own, in
//! another order (values agree with candle's to rounding: tests).

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Storage, Tensor};
use std::ops::Range;

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

/// Column entries per im2col block (4 MiB of f32): a block's columns and GEMM output stay
/// below glibc's largest mmap threshold, so the buffers are reused from the heap rather than
/// mapped and page-faulted afresh on every call, while the GEMM stays wide (≥ 1,700 columns on
/// the Table 1 ResNet).
const BLOCK_ENTRIES: usize = 1 << 20;

/// y = conv2d(x, W) (dilation 1, one group) on the CPU: for each block of images, their
/// column matrix ([`Cols::gather`], (C·kh·kw) × (images·ho·wo)) and one GEMM W · cols, whose
/// (out × images·ho·wo) result is copied into the [N, out, ho, wo] output. candle 0.11's CPU
/// conv2d (`conv2d_tiled`) builds columns tile by tile and multiplies them in many small GEMMs:
/// 1.6–2× slower on the Table 1 ResNet (`examples/ebm_bench.rs`, `paper/table1.md`).
fn conv2d_cpu(x: &Tensor, w: &Tensor, stride: usize, padding: usize) -> candle_core::Result<Tensor> {
    conv2d_cpu_blocks(x, w, stride, padding, BLOCK_ENTRIES)
}

/// [`conv2d_cpu`] with `block` column entries per block (tests use small blocks).
fn conv2d_cpu_blocks(
    x: &Tensor,
    w: &Tensor,
    stride: usize,
    padding: usize,
    block: usize,
) -> candle_core::Result<Tensor> {
    let (n, geometry) = Cols::of(x, w, stride, padding)?;
    match x.dtype() {
        DType::F32 => geometry.forward::<f32>(x, w, n, block),
        DType::F64 => geometry.forward::<f64>(x, w, n, block),
        dt => candle_core::bail!("conv2d: dtype {dt:?} is not supported (f32 or f64)"),
    }
}

/// ∂x of y = conv2d(x, W) (dilation 1, one group) given ∂y: per block of images, the column
/// gradient Wᵀ · ∂y ((C·kh·kw) × (images·ho·wo), one GEMM) added back onto the input pixels
/// each column entry was read from ([`Cols::scatter`]). candle 0.11's CPU `conv_transpose2d`
/// (what its own Conv2D backward calls) is a direct loop of short dot products, several times
/// slower; this is the same sum in GEMM form.
fn conv2d_input_grad(
    x: &Tensor,
    w: &Tensor,
    grad: &Tensor,
    stride: usize,
    padding: usize,
) -> candle_core::Result<Tensor> {
    let (n, geometry) = Cols::of(x, w, stride, padding)?;
    if grad.dims() != [n, w.dim(0)?, geometry.ho, geometry.wo] {
        candle_core::bail!(
            "conv2d input gradient: shapes {:?}, {:?}, {:?} do not agree",
            x.dims(),
            w.dims(),
            grad.dims()
        );
    }
    match grad.dtype() {
        DType::F32 => geometry.input_grad::<f32>(w, grad, n, BLOCK_ENTRIES),
        DType::F64 => geometry.input_grad::<f64>(w, grad, n, BLOCK_ENTRIES),
        dt => candle_core::bail!("conv2d input gradient: dtype {dt:?} is not supported (f32 or f64)"),
    }
}

/// `f` of the elements of `t` in row-major order: its own CPU buffer when `t` is contiguous
/// (no copy: these tensors are up to tens of MB per layer), else a contiguous copy's.
fn with_slice<T: candle_core::WithDType, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> candle_core::Result<R> {
    let t = t.contiguous()?;
    let (storage, layout) = t.storage_and_layout();
    let n = layout.shape().elem_count();
    match (&*storage, layout.contiguous_offsets()) {
        (Storage::Cpu(c), Some((start, end))) if end - start == n => Ok(f(&T::cpu_storage_as_slice(c)?[start..end])),
        _ => candle_core::bail!("conv2d: expected a CPU tensor"),
    }
}

/// The geometry of an im2col / col2im: input c × h × w, kernel kh × kw, output ho × wo. A
/// block's column matrix has one row per kernel entry (c, ky, kx) and one column per output
/// pixel (image, oy, ox), so that a row is, for each image and output row, a run of input
/// pixels along x (contiguous at stride 1).
struct Cols {
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

impl Cols {
    /// The batch size and geometry of conv2d(x, W), or an error naming the shapes.
    fn of(x: &Tensor, w: &Tensor, stride: usize, padding: usize) -> candle_core::Result<(usize, Cols)> {
        let (n, c, h, wd) = x.dims4()?;
        let (_, c2, kh, kw) = w.dims4()?;
        if c != c2 || stride == 0 || h + 2 * padding < kh || wd + 2 * padding < kw {
            candle_core::bail!(
                "conv2d: input {:?} and kernel {:?} with stride {stride}, padding {padding} do not fit",
                x.dims(),
                w.dims()
            );
        }
        let (ho, wo) = ((h + 2 * padding - kh) / stride + 1, (wd + 2 * padding - kw) / stride + 1);
        Ok((n, Cols { c, h, w: wd, kh, kw, ho, wo, stride, padding }))
    }

    /// Column entries per image: (c·kh·kw) rows × (ho·wo) output pixels.
    fn per_image(&self) -> usize {
        self.c * self.kh * self.kw * self.ho * self.wo
    }

    /// The output columns ox whose kernel column kx reads inside the image, and the input x of
    /// the first: ox·stride + kx − padding ∈ [0, w).
    fn ox_range(&self, kx: usize) -> (std::ops::Range<usize>, usize) {
        let lo = self.padding.saturating_sub(kx).div_ceil(self.stride);
        let hi = (self.w + self.padding).saturating_sub(kx).div_ceil(self.stride).min(self.wo);
        (lo..hi.max(lo), (lo * self.stride + kx).saturating_sub(self.padding))
    }

    /// Calls `run(row, image, oy, input row y, ox range, first input x)` for every run of
    /// in-image reads of a block of `nb` images, in a fixed order (row-major over the column
    /// matrix).
    #[inline(always)]
    fn for_each_run(
        &self,
        row: usize,
        nb: usize,
        mut run: impl FnMut(usize, usize, usize, std::ops::Range<usize>, usize),
    ) {
        let (ky, kx) = ((row / self.kw) % self.kh, row % self.kw);
        let (oxs, x0) = self.ox_range(kx);
        for b in 0..nb {
            for oy in 0..self.ho {
                // Output rows whose kernel row reads padding contribute zeros.
                if let Some(y) = (oy * self.stride + ky).checked_sub(self.padding).filter(|&y| y < self.h) {
                    run(b, oy, y, oxs.clone(), x0);
                }
            }
        }
    }

    /// The column matrix ((c·kh·kw) × (nb·ho·wo)) of the `nb` images `x` (each c × h × w),
    /// zeros where the kernel reads padding; rows in parallel.
    fn gather<T: candle_core::WithDType>(&self, x: &[T], nb: usize) -> Vec<T> {
        use rayon::prelude::*;
        let (p, plane, img) = (self.ho * self.wo, self.h * self.w, self.c * self.h * self.w);
        let mut cols = vec![T::from_f64(0.0); self.per_image() * nb];
        cols.par_chunks_mut((nb * p).max(1)).enumerate().for_each(|(row, out)| {
            let ci = row / (self.kh * self.kw);
            self.for_each_run(row, nb, |b, oy, y, oxs, x0| {
                let src = &x[b * img + ci * plane + y * self.w..][..self.w];
                let dst = &mut out[b * p + oy * self.wo..][..self.wo];
                if self.stride == 1 {
                    dst[oxs.clone()].copy_from_slice(&src[x0..x0 + oxs.len()]);
                } else {
                    for (d, s) in dst[oxs].iter_mut().zip(src[x0..].iter().step_by(self.stride)) {
                        *d = *s;
                    }
                }
            });
        });
        cols
    }

    /// Adds the column matrix ((c·kh·kw) × (nb·ho·wo)) back onto the `nb` images `dx`: each
    /// image by one task, in a fixed order, so the result does not depend on the thread count.
    fn scatter<T: candle_core::WithDType>(&self, cols: &[T], nb: usize, dx: &mut [T]) {
        use rayon::prelude::*;
        let (p, plane, img, rows) =
            (self.ho * self.wo, self.h * self.w, self.c * self.h * self.w, self.c * self.kh * self.kw);
        dx.par_chunks_mut(img.max(1)).take(nb).enumerate().for_each(|(b, dx)| {
            for row in 0..rows {
                let ci = row / (self.kh * self.kw);
                let src = &cols[row * nb * p + b * p..][..p];
                self.for_each_run(row, 1, |_, oy, y, oxs, x0| {
                    let dst = &mut dx[ci * plane + y * self.w..][..self.w];
                    let src = &src[oy * self.wo..][..self.wo][oxs];
                    if self.stride == 1 {
                        for (d, s) in dst[x0..x0 + src.len()].iter_mut().zip(src) {
                            *d += *s;
                        }
                    } else {
                        for (d, s) in dst[x0..].iter_mut().step_by(self.stride).zip(src) {
                            *d += *s;
                        }
                    }
                });
            }
        });
    }

    /// Output channels, column-matrix rows (c·kh·kw), output pixels and input entries per
    /// image of a convolution by `w`.
    fn sizes(&self, w: &Tensor) -> candle_core::Result<(usize, usize, usize, usize)> {
        Ok((w.dim(0)?, self.c * self.kh * self.kw, self.ho * self.wo, self.c * self.h * self.w))
    }

    /// Images per block of at most `block` column entries (at least one).
    fn images_per_block(&self, n: usize, block: usize) -> usize {
        (block / self.per_image().max(1)).clamp(1, n.max(1))
    }

    /// conv2d(x, W) of the `n` images x, `block` column entries at a time.
    fn forward<T: candle_core::WithDType>(
        &self,
        x: &Tensor,
        w: &Tensor,
        n: usize,
        block: usize,
    ) -> candle_core::Result<Tensor> {
        let (o, k, p, img) = self.sizes(w)?;
        // Contiguous once: each block below reads its images from x's own buffer.
        let (x, wm, dev) = (x.contiguous()?, w.reshape((o, k))?, x.device());
        let nb = self.images_per_block(n, block);
        let mut out = Vec::with_capacity(n * o * p);
        for i0 in (0..n).step_by(nb) {
            let m = nb.min(n - i0);
            let cols = with_slice(&x, |xs: &[T]| self.gather(&xs[i0 * img..(i0 + m) * img], m))?;
            let y = wm.matmul(&Tensor::from_vec(cols, (k, m * p), dev)?)?; // out × (m·ho·wo)
            with_slice(&y, |y: &[T]| {
                for b in 0..m {
                    for oc in 0..o {
                        out.extend_from_slice(&y[(oc * m + b) * p..][..p]);
                    }
                }
            })?;
        }
        Tensor::from_vec(out, (n, o, self.ho, self.wo), dev)
    }

    /// ∂x given ∂y (`grad`, [n, out, ho, wo]), `block` column entries at a time.
    fn input_grad<T: candle_core::WithDType>(
        &self,
        w: &Tensor,
        grad: &Tensor,
        n: usize,
        block: usize,
    ) -> candle_core::Result<Tensor> {
        let (o, k, p, img) = self.sizes(w)?;
        let (grad, wt, dev) = (grad.contiguous()?, w.reshape((o, k))?.t()?, grad.device());
        let nb = self.images_per_block(n, block);
        let mut dx = vec![T::from_f64(0.0); n * img];
        for i0 in (0..n).step_by(nb) {
            let m = nb.min(n - i0);
            // ∂y of the block as out × (m·ho·wo).
            let dy = with_slice(&grad, |dys: &[T]| {
                let mut dy = Vec::with_capacity(o * m * p);
                for oc in 0..o {
                    for b in 0..m {
                        dy.extend_from_slice(&dys[((i0 + b) * o + oc) * p..][..p]);
                    }
                }
                dy
            })?;
            let cols = wt.matmul(&Tensor::from_vec(dy, (o, m * p), dev)?)?;
            with_slice(&cols, |cols: &[T]| self.scatter(cols, m, &mut dx[i0 * img..(i0 + m) * img]))?;
        }
        Tensor::from_vec(dx, (n, self.c, self.h, self.w), dev)
    }
}

/// `f32_` or `f64_` applied to every element of a contiguous f32/f64 CPU tensor (the forward
/// of the one-pass elementwise ops here and in `bert`), split over candle's CPU workers as
/// candle's own elementwise ops are ([`par_map`]).
pub(crate) fn map_cpu(
    storage: &CpuStorage,
    layout: &Layout,
    f32_: impl Fn(f32) -> f32 + Sync,
    f64_: impl Fn(f64) -> f64 + Sync,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let [r] = equal_ranges([layout])?;
    let out = match storage {
        CpuStorage::F32(v) => CpuStorage::F32(par_map(&v[r], f32_)),
        CpuStorage::F64(v) => CpuStorage::F64(par_map(&v[r], f64_)),
        _ => candle_core::bail!("elementwise op: f32 or f64 only"),
    };
    Ok((out, layout.shape().clone()))
}

/// `f32_` or `f64_` applied to the pairs of elements of two contiguous CPU tensors of the same
/// shape and dtype (f32 or f64); the result has the first one's shape. Split as [`map_cpu`].
pub(crate) fn map2_cpu(
    (s1, l1): (&CpuStorage, &Layout),
    (s2, l2): (&CpuStorage, &Layout),
    f32_: impl Fn(f32, f32) -> f32 + Sync,
    f64_: impl Fn(f64, f64) -> f64 + Sync,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let [r1, r2] = equal_ranges([l1, l2])?;
    let out = match (s1, s2) {
        (CpuStorage::F32(x), CpuStorage::F32(y)) => CpuStorage::F32(par_map2(&x[r1], &y[r2], f32_)),
        (CpuStorage::F64(x), CpuStorage::F64(y)) => CpuStorage::F64(par_map2(&x[r1], &y[r2], f64_)),
        _ => candle_core::bail!("elementwise op: f32 or f64 only, both alike"),
    };
    Ok((out, l1.shape().clone()))
}

/// `f32_` or `f64_` applied to the triples of elements of three contiguous CPU tensors of the
/// same shape and dtype (f32 or f64); the result has the first one's shape. Split as
/// [`map_cpu`]. (A derivative times the incoming gradient in one pass: one full-size tensor
/// fewer per activation in a backward pass.)
pub(crate) fn map3_cpu(
    (s1, l1): (&CpuStorage, &Layout),
    (s2, l2): (&CpuStorage, &Layout),
    (s3, l3): (&CpuStorage, &Layout),
    f32_: impl Fn(f32, f32, f32) -> f32 + Sync,
    f64_: impl Fn(f64, f64, f64) -> f64 + Sync,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let [r1, r2, r3] = equal_ranges([l1, l2, l3])?;
    let out = match (s1, s2, s3) {
        (CpuStorage::F32(x), CpuStorage::F32(y), CpuStorage::F32(z)) => {
            CpuStorage::F32(par_map3(&x[r1], &y[r2], &z[r3], f32_))
        }
        (CpuStorage::F64(x), CpuStorage::F64(y), CpuStorage::F64(z)) => {
            CpuStorage::F64(par_map3(&x[r1], &y[r2], &z[r3], f64_))
        }
        _ => candle_core::bail!("elementwise op: f32 or f64 only, all alike"),
    };
    Ok((out, l1.shape().clone()))
}

/// The element ranges of contiguous layouts holding equally many elements (the inputs of one
/// elementwise op), or the error saying which condition failed.
fn equal_ranges<const K: usize>(layouts: [&Layout; K]) -> candle_core::Result<[Range<usize>; K]> {
    let mut ranges: [Range<usize>; K] = std::array::from_fn(|_| 0..0);
    for (r, l) in ranges.iter_mut().zip(layouts) {
        let Some((a, b)) = l.contiguous_offsets() else {
            candle_core::bail!("elementwise op: contiguous inputs are needed");
        };
        *r = a..b;
    }
    if ranges.iter().any(|r| r.len() != ranges[0].len()) {
        let counts: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
        candle_core::bail!("elementwise op: inputs of {counts:?} elements");
    }
    Ok(ranges)
}

/// `f` of every triple (x_i, y_i, z_i) (equal lengths), in order, split by [`par_chunks`].
fn par_map3<T: Copy + Default + Send + Sync>(x: &[T], y: &[T], z: &[T], f: impl Fn(T, T, T) -> T + Sync) -> Vec<T> {
    par_chunks(x.len(), |r, out| {
        for (((o, &a), &b), &c) in out.iter_mut().zip(&x[r.clone()]).zip(&y[r.clone()]).zip(&z[r]) {
            *o = f(a, b, c);
        }
    })
}

/// `f` of every element of `x`, in order, split by [`par_chunks`].
fn par_map<T: Copy + Sync, U: Copy + Default + Send + Sync>(x: &[T], f: impl Fn(T) -> U + Sync) -> Vec<U> {
    par_chunks(x.len(), |r, out| {
        for (o, &v) in out.iter_mut().zip(&x[r]) {
            *o = f(v);
        }
    })
}

/// `f` of every pair (x_i, y_i) (equal lengths), in order, split by [`par_chunks`].
fn par_map2<T: Copy + Sync, U: Copy + Default + Send + Sync>(x: &[T], y: &[T], f: impl Fn(T, T) -> U + Sync) -> Vec<U> {
    par_chunks(x.len(), |r, out| {
        for ((o, &a), &b) in out.iter_mut().zip(&x[r.clone()]).zip(&y[r]) {
            *o = f(a, b);
        }
    })
}

/// Below this many elements the work runs on the calling thread (candle's `PAR_ELEMWISE_MIN`).
const PAR_MIN: usize = 64 * 1024;
/// Elements per unit of work handed to a worker (candle's `PAR_ELEMWISE_CHUNK`).
const PAR_CHUNK: usize = 16 * 1024;

/// A vector of `n` outputs whose consecutive ranges `r` are filled by `fill(r, &mut out[r])`,
/// over candle's CPU worker pool (`candle_core::utils::barrier_pool`, the pool and chunk sizes
/// candle's own elementwise ops use, so `CANDLE_NUM_THREADS` and
/// `one_candle_thread_per_chain` govern it alike). Each output must depend on its own inputs
/// only; then the values do not depend on the split (test
/// `parallel_maps_equal_the_serial_ones`). Hand-written because candle's parallel unary map is
/// private to its CPU backend; GELU's erf in `bert` ran on one core of two without it.
pub(crate) fn par_chunks<U: Copy + Default + Send + Sync>(
    n: usize,
    fill: impl Fn(Range<usize>, &mut [U]) + Sync,
) -> Vec<U> {
    let mut out = vec![U::default(); n];
    if n < PAR_MIN {
        fill(0..n, &mut out);
        return out;
    }
    // The address as an integer: a raw pointer is not `Sync`; each unit takes a range of its own.
    let base = out.as_mut_ptr() as usize;
    candle_core::utils::barrier_pool().execute_chunked(n.div_ceil(PAR_CHUNK), |units| {
        for unit in units {
            let r = unit * PAR_CHUNK..n.min((unit + 1) * PAR_CHUNK);
            // SAFETY: r lies inside the initialised `out`, which outlives this call
            // (`execute_chunked` returns when every unit has run), and the units' ranges are
            // disjoint, so no two threads hold the same elements.
            let part = unsafe { std::slice::from_raw_parts_mut((base as *mut U).add(r.start), r.len()) };
            fill(r, part);
        }
    });
    out
}

/// Swish(z) = z·σ(z) as one CPU op with a one-pass backward ∂z = ∂y·σ(z)·(1 + z·(1 − σ(z))).
/// The value is candle's `z * candle_nn::ops::sigmoid(z)` to the bit (same formula,
/// σ = 1/(e^−z + 1)); that pair's backward builds several full-size tensors per activation,
/// a visible share of the ResNet energy's input gradient.
struct Swish;

/// ∂y·σ(z)·(1 + z·(1 − σ(z))) from z and ∂y: the derivative of z·σ(z) times the incoming
/// gradient in one pass (the same roundings as the derivative followed by candle's `mul`; no
/// backward of its own).
struct SwishDerivative;

impl candle_core::CustomOp1 for Swish {
    fn name(&self) -> &'static str {
        "swish"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        map_cpu(s, l, |v| v * ((-v).exp() + 1.0).recip(), |v| v * ((-v).exp() + 1.0).recip())
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        Ok(Some(arg.contiguous()?.apply_op2_no_bwd(&grad.contiguous()?, &SwishDerivative)?))
    }
}

impl CustomOp2 for SwishDerivative {
    fn name(&self) -> &'static str {
        "swish-derivative"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        macro_rules! derivative {
            ($v:expr) => {{
                let sig = ((-$v).exp() + 1.0).recip();
                sig * (1.0 + $v * (1.0 - sig))
            }};
        }
        map2_cpu((s1, l1), (s2, l2), |v: f32, g| derivative!(v) * g, |v: f64, g| derivative!(v) * g)
    }
}

/// Swish(z) = z·σ(z): the fused [`Swish`] op on the CPU, candle's elementary ops (which
/// backpropagate, `bert.md` §1) elsewhere.
pub(crate) fn swish(z: &Tensor) -> candle_core::Result<Tensor> {
    if z.device().is_cpu() { z.contiguous()?.apply_op1(Swish) } else { z * candle_nn::ops::sigmoid(z)? }
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
    if custom(x, w) {
        let y = x.detach().matmul(&w.detach().t()?)?;
        return layer_node(x, w, y, Kind::Linear, b);
    }
    add_bias(x.matmul(&w.t()?)?, b)
}

/// The [`Layer`] node of x and W whose value is `y` (the layer's output, computed graph-free
/// by the caller) plus the bias `b`. A bias outside the graph (a checkpoint's) is added
/// graph-free, inside the node's value: the same sum in the same order, but candle's backward
/// of a `broadcast_add` would fill and add an [N, out] gradient for the untracked bias and one
/// more for its other operand (page faults of AntiBERTy's energy gradient −31%, the Table 1
/// ResNet's gradient 8–11% faster; `paper/performance.md`). A tracked bias (training) stays a
/// graph node after the layer's.
fn layer_node(x: &Tensor, w: &Tensor, y: Tensor, kind: Kind, b: Option<&Tensor>) -> candle_core::Result<Tensor> {
    let (y, tracked) = match b {
        Some(c) if !c.track_op() => (y.broadcast_add(c)?, None),
        b => (y, b),
    };
    add_bias(x.apply_op2(w, Layer { y: y.contiguous()?, kind })?, tracked)
}

/// y + b broadcast over y's leading dimensions; y when there is no bias.
fn add_bias(y: Tensor, b: Option<&Tensor>) -> candle_core::Result<Tensor> {
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
    // [1, out, 1, 1], so that it broadcasts over images and pixels (a reshape keeps a tracked
    // bias tracked and an untracked one untracked).
    let b = b.map(|b| b.reshape((1, (), 1, 1))).transpose()?;
    if custom(x, w) {
        let y = conv2d_cpu(&x.detach(), &w.detach(), stride, padding)?;
        return layer_node(x, w, y, Kind::Conv2d { padding, stride }, b.as_ref());
    }
    let y = if x.device().is_cpu() { conv2d_cpu(x, w, stride, padding)? } else { x.conv2d(w, padding, stride, 1, 1)? };
    add_bias(y, b.as_ref())
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

    /// The split maps write every element once, in its place: inputs past `PAR_MIN` with a
    /// ragged last chunk and a nonzero start offset (a narrowed tensor), against the serial
    /// map bit for bit, f32 and f64, one and two inputs. (A unit writing the wrong range, or
    /// the offset dropped, changes most values: the fill repeats only every 1,000 elements.)
    #[test]
    fn parallel_maps_equal_the_serial_ones() {
        let n = PAR_MIN + 3 * PAR_CHUNK + 7;
        let whole = tensor(n + 5, &[n + 5], 3);
        let y = tensor(n, &[n], 11);
        for dtype in [DType::F32, DType::F64] {
            let x = whole.to_dtype(dtype).unwrap().narrow(0, 5, n).unwrap();
            let y = y.to_dtype(dtype).unwrap();
            let (sx, lx) = x.storage_and_layout();
            let (sy, ly) = y.storage_and_layout();
            let (Storage::Cpu(sx), Storage::Cpu(sy)) = (&*sx, &*sy) else { unreachable!() };
            assert_eq!(lx.contiguous_offsets(), Some((5, n + 5)));
            let (one, _) = map_cpu(sx, lx, |v| v.exp() - v, |v| v.exp() - v).unwrap();
            let (two, _) = map2_cpu((sx, lx), (sy, ly), |a, b| a * 3.0 + b, |a, b| a * 3.0 + b).unwrap();
            let xs = x.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap();
            let ys = y.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap();
            match (one, two) {
                (CpuStorage::F32(one), CpuStorage::F32(two)) => {
                    assert_eq!(one.len(), n);
                    assert_eq!(two.len(), n);
                    for i in 0..n {
                        let (a, b) = (xs[i] as f32, ys[i] as f32);
                        assert_eq!(one[i].to_bits(), (a.exp() - a).to_bits(), "f32 map at {i}");
                        assert_eq!(two[i].to_bits(), (a * 3.0 + b).to_bits(), "f32 map2 at {i}");
                    }
                }
                (CpuStorage::F64(one), CpuStorage::F64(two)) => {
                    assert_eq!(one.len(), n);
                    assert_eq!(two.len(), n);
                    for i in 0..n {
                        let (a, b) = (xs[i], ys[i]);
                        assert_eq!(one[i].to_bits(), (a.exp() - a).to_bits(), "f64 map at {i}");
                        assert_eq!(two[i].to_bits(), (a * 3.0 + b).to_bits(), "f64 map2 at {i}");
                    }
                }
                _ => panic!("dtype changed"),
            }
        }
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
            assert!(max_diff(&plain, &fast) < 1e-12, "values, {what}");
            let g = loss(&fast, &mix).backward().unwrap();
            for (t, name) in [(x.as_tensor(), "input"), (w.as_tensor(), "kernel")] {
                let d = max_diff(g_plain.get(t).unwrap(), g.get(t).unwrap());
                assert!(d < 1e-12, "{name} gradients differ by {d}, {what}");
            }
            // One image per im2col block (the ResNet's layers run in several blocks).
            let (n, geometry) = Cols::of(x.as_tensor(), w.as_tensor(), stride, padding).unwrap();
            let blocked = conv2d_cpu_blocks(&x.detach(), &w.detach(), stride, padding, 1).unwrap();
            let blocked = blocked.broadcast_add(&b.reshape((1, 4, 1, 1)).unwrap()).unwrap();
            assert!(max_diff(&plain, &blocked) < 1e-12, "values in blocks, {what}");
            let dy = tensor(plain.elem_count(), plain.dims(), 13);
            let whole = geometry.input_grad::<f64>(&w.detach(), &dy, n, usize::MAX).unwrap();
            let blocks = geometry.input_grad::<f64>(&w.detach(), &dy, n, 1).unwrap();
            assert!(max_diff(&whole, &blocks) < 1e-12, "input gradient in blocks, {what}");
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

    /// The fused Swish has the elementary ops' value to the bit and their gradient to
    /// rounding, in f64 and f32, also where e^−z overflows or underflows.
    #[test]
    fn fused_swish_matches_the_elementary_ops() {
        let mut v: Vec<f64> = tensor(64, &[64], 11).to_vec1::<f64>().unwrap().iter().map(|x| 8.0 * x).collect();
        v.extend([0.0, -0.0, 30.0, -30.0, 700.0, -700.0, 800.0, -800.0]);
        let n = v.len();
        let mix = tensor(n, &[n], 6);
        for dtype in [DType::F64, DType::F32] {
            let z = Var::from_tensor(&Tensor::from_vec(v.clone(), n, &Device::Cpu).unwrap().to_dtype(dtype).unwrap())
                .unwrap();
            let plain = (z.as_tensor() * candle_nn::ops::sigmoid(z.as_tensor()).unwrap()).unwrap();
            let fused = swish(z.as_tensor()).unwrap();
            let bits = |t: &Tensor| t.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap();
            assert_eq!(bits(&plain), bits(&fused), "{dtype:?} values");
            let up = |t: &Tensor| loss(&t.to_dtype(DType::F64).unwrap(), &mix).backward().unwrap();
            let (g_plain, g_fused) = (up(&plain), up(&fused));
            let (a, b) = (bits(g_plain.get(z.as_tensor()).unwrap()), bits(g_fused.get(z.as_tensor()).unwrap()));
            let tol = if dtype == DType::F64 { 1e-15 } else { 1e-6 };
            for (i, (a, b)) in a.iter().zip(&b).enumerate() {
                assert!(b.is_finite() && (a - b).abs() <= tol * (1.0 + a.abs()), "{dtype:?} z = {}: {a} vs {b}", v[i]);
            }
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
        // A trainable bias stays in the graph (an untracked one, above, is added inside the
        // layer's value) and gets the plain graph's gradient.
        let bv = Var::from_tensor(&b).unwrap();
        let plain = x.as_tensor().matmul(&w.as_tensor().t().unwrap()).unwrap().broadcast_add(bv.as_tensor()).unwrap();
        let g_plain = loss(&plain, &mix).backward().unwrap();
        let fast = linear(x.as_tensor(), w.as_tensor(), Some(bv.as_tensor())).unwrap();
        assert_eq!(max_diff(&plain, &fast), 0.0);
        let g = loss(&fast, &mix).backward().unwrap();
        for t in [x.as_tensor(), w.as_tensor(), bv.as_tensor()] {
            assert!(max_diff(g_plain.get(t).unwrap(), g.get(t).unwrap()) < 1e-12);
        }
    }
}
