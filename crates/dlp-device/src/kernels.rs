//! The crate's own CUDA kernels (`kernels/*.cu`, compiled to PTX by `build.rs` under the
//! `cuda` feature) and how a device-resident sampler reaches them. Every kernel has a CPU twin
//! in Rust that computes the same function (same Philox streams, same integer thresholds), so
//! the CPU device runs — and the test suite checks — exactly what the GPU is asked to run.

/// The PTX of `kernels/<stem>.cu` (only with the `cuda` feature).
#[cfg(feature = "cuda")]
#[macro_export]
#[doc(hidden)]
macro_rules! dlp_ptx {
    ($stem:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/", $stem, ".ptx"))
    };
}

/// Kernel `name` of the PTX module `module` (its source `ptx`) on the CUDA device `dev`,
/// loaded once per device and module (candle caches custom modules by name). Launch it with
/// `dev.cuda_stream().launch_builder(&func)` (candle's own `CudaFunc` wrapper is not
/// nameable outside candle: its module is private).
#[cfg(feature = "cuda")]
pub(crate) fn cuda_func(
    dev: &candle_core::CudaDevice,
    module: &str,
    ptx: &'static str,
    name: &str,
) -> candle_core::Result<candle_core::cuda_backend::cudarc::driver::CudaFunction> {
    Ok(dev.get_or_load_custom_func(name, module, ptx)?.into_cuda_function())
}

/// A launch configuration of `blocks` blocks of `threads` threads and no dynamic shared memory.
#[cfg(feature = "cuda")]
pub(crate) fn launch_config(blocks: u32, threads: u32) -> candle_core::cuda_backend::cudarc::driver::LaunchConfig {
    candle_core::cuda_backend::cudarc::driver::LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The f32 slice behind a contiguous, offset-0 tensor on a CUDA device (what a kernel is
/// handed).
#[cfg(feature = "cuda")]
pub(crate) fn cuda_slice<'a>(
    storage: &'a candle_core::Storage,
    layout: &candle_core::Layout,
) -> candle_core::Result<&'a candle_core::cuda_backend::cudarc::driver::CudaSlice<f32>> {
    match storage {
        candle_core::Storage::Cuda(s) if layout.is_contiguous() && layout.start_offset() == 0 => {
            s.as_cuda_slice::<f32>()
        }
        _ => candle_core::bail!("device chains: expected a contiguous f32 CUDA tensor"),
    }
}

/// A device buffer of f32 wrapped as an (n × w) tensor on `dev`, without a copy or a
/// gradient.
#[cfg(feature = "cuda")]
pub(crate) fn cuda_tensor(
    slice: candle_core::cuda_backend::cudarc::driver::CudaSlice<f32>,
    dev: &candle_core::CudaDevice,
    shape: (usize, usize),
) -> candle_core::Tensor {
    let storage =
        candle_core::Storage::Cuda(candle_core::cuda_backend::CudaStorage::wrap_cuda_slice(slice, dev.clone()));
    candle_core::Tensor::from_storage(storage, shape, candle_core::op::BackpropOp::none(), false)
}
