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
