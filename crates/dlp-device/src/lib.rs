//! dlp-device: device-resident chains. Samplers whose states, caches and random numbers stay
//! on a candle [`Device`](candle_core::Device) between steps, with the crate's own CUDA
//! kernels (`kernels/*.cu`, compiled to PTX by `build.rs` under the `cuda` feature) and a CPU
//! twin of each kernel in Rust for the CPU device and the tests.
//!
//! * [`device_chains`]: the [`DeviceChains`](device_chains::DeviceChains) trait every
//!   device sampler implements.
//! * [`device_lattice`]: DULA / DMALA on a periodic Ising lattice (`kernels/lattice.cu`).
//! * [`device_rbm`]: DULA, DMALA and block Gibbs on a Bernoulli RBM (cuBLAS products and fused
//!   kernels, `kernels/rbm.cu`).
//! * [`device_dlp`]: DULA and DMALA on any binary tensor target of `dlp-tensor` whose f and ∇f
//!   its candle graph computes on the device ([`dlp_tensor::DeviceEnergy`]).
//! * [`device_samplers`]: the one place that opens device chains for a registry row and a
//!   model, and [`DeviceSampler`](device_samplers::DeviceSampler), which makes them a
//!   `dlp_core::Sampler`.
//! * [`philox`]: the Philox4x32-10 counter-based generator every kernel draws from.
//!
//! The tensor targets themselves live in `dlp-tensor`. The `cuda` feature is compiled only on
//! request (it needs `nvcc`: `just build-cuda`, `just gpu-bundle`) and is never built or
//! tested in CI; `tests/cuda.rs` holds every check that needs a GPU (the kernels here, and
//! the tensor targets of `dlp-tensor` and `dlp-papers` on `cuda:0`), in one test binary.

#![warn(missing_docs)]

pub mod device_chains;
pub mod device_dlp;
pub mod device_lattice;
pub mod device_rbm;
pub mod device_samplers;
mod kernels;
pub mod philox;
