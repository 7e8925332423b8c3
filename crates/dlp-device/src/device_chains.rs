//! Device-resident chains: samplers whose states, caches and random numbers stay on a candle
//! [`Device`](candle_core::Device) between steps (a CUDA GPU with the `cuda` feature, or the
//! CPU, where the same algorithm runs through each kernel's CPU twin).
//!
//! They do not go through `dlp_core::run_chains`: the runner keeps states on the host in
//! `u32` rows and hands each chain its host ChaCha stream, which is exactly the traffic a GPU
//! step must avoid. Instead each chain `j` of a run seeded with `s` draws from the Philox
//! stream `(key_of_seed(s), j)` ([`crate::philox`]), so its path depends on `(s, j)` alone:
//! not on the number of chains, nor on the device. A GPU run is reproducible run to run for a
//! seed; it is not bit-identical to the host samplers of `dlp-samplers` (other streams), and it
//! agrees with the CPU twin to the extent that both compute the same floating-point values
//! (exactly, for the integer lattice kernels).

/// One batch of chains living on a device, moved by one sampler.
pub trait DeviceChains: Send {
    /// The sampler's name as `dlp bench` reports it (`dula`, `dmala`, `bg-1`).
    fn name(&self) -> String;
    /// Number of chains.
    fn n_chains(&self) -> usize;
    /// Dimension d of one state.
    fn dim(&self) -> usize;
    /// Moves every chain one step (kernels are queued; [`Self::sync`] waits for them).
    fn step(&mut self) -> candle_core::Result<()>;
    /// Waits until the device has finished every queued step (for timing).
    fn sync(&self) -> candle_core::Result<()>;
    /// The current states, `n_chains × dim` index rows (bits 0/1; for spins 0 = −1, 1 = +1),
    /// copied to the host.
    fn positions(&self) -> candle_core::Result<Vec<u32>>;
    /// Accepted proposals per chain since the start (a sampler without an MH test counts every
    /// step).
    fn accepted(&self) -> candle_core::Result<Vec<u64>>;
    /// Steps taken since the start.
    fn steps_taken(&self) -> u64;
    /// Per chain, the MH acceptance probability min(1, e^A) and the number of coordinates the
    /// proposal would change, of the last step, where the backend keeps them at no cost (the
    /// lattice CPU twin's DMALA); `None` elsewhere, and for samplers without an MH test.
    /// `dlp_device::device_samplers` turns them into `StepInfo`s.
    fn last_proposals(&self) -> Option<Vec<(f64, u32)>> {
        None
    }
}

/// The f32 0/1 state matrix of the f32 device chains as index rows (what
/// [`DeviceChains::positions`] returns).
pub(crate) fn bits_of(x: Vec<f32>) -> Vec<u32> {
    x.into_iter().map(|v| (v != 0.0) as u32).collect()
}

/// [`DeviceChains::accepted`] of chains that keep u32 counts of accepted MH proposals, or, for a
/// sampler without an MH test (`mh` false), every step taken by each of the `n` chains; the
/// counts are read (from the device) only when they are needed.
pub(crate) fn accepted_counts(
    mh: bool,
    steps: u64,
    n: usize,
    counts: impl FnOnce() -> candle_core::Result<Vec<u32>>,
) -> candle_core::Result<Vec<u64>> {
    if !mh {
        return Ok(vec![steps; n]);
    }
    Ok(counts()?.into_iter().map(u64::from).collect())
}
