//! Philox4x32-10, the counter-based generator of the device-resident samplers
//! ([Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011]; the generator
//! cuRAND and PyTorch use on GPUs).
//!
//! **Why hand-written, and twice.** A device kernel draws its random numbers where it uses
//! them: thread (chain, site) computes its own block from `(key, counter)` without any shared
//! generator state. The CUDA kernels (`kernels/philox.cuh`) and their CPU twins in this crate
//! must compute the *same* function so that the CPU device reproduces a GPU run and the exact
//! tests of the CPU twin speak for the kernel; so the round function is written here and in
//! the header side by side (about twenty lines each) and pinned by Random123's known-answer
//! vectors (the tests below). A crate would give the Rust half only.
//!
//! **Streams.** One run is keyed by its seed ([`key_of_seed`]); a block's counter is
//! `[index, purpose, step, chain]` ([`counter`]): chain `j`'s numbers depend on
//! `(seed, j, step, purpose, index)` only, never on the number of chains, how they are
//! batched or which device runs them — the device counterpart of `dlp_core::chain_rng`.
//! `purpose` separates the uses within a step (proposal bits, tie-break bits, the MH uniform,
//! hidden units …): each sampler lists its purposes as constants.

/// Philox's round multipliers and Weyl key increments (Random123 `philox.h`).
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The Philox4x32 block with 10 rounds: four 32-bit outputs of counter `ctr` under `key`.
#[inline]
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (ctr, key);
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p0 = (M0 as u64) * (c[0] as u64);
        let p1 = (M1 as u64) * (c[2] as u64);
        c = [((p1 >> 32) as u32) ^ c[1] ^ k[0], p1 as u32, ((p0 >> 32) as u32) ^ c[3] ^ k[1], p0 as u32];
    }
    c
}

/// The Philox key of a run seeded with `seed`: `derive_seed(seed, [label])` split into two
/// words, so the device streams of a seed are unrelated to its host ChaCha streams.
pub fn key_of_seed(seed: u64) -> [u32; 2] {
    /// Label of the device streams in [`dlp_core::rng::derive_seed`] ("philox" in ASCII).
    const LABEL: u64 = 0x7068_696c_6f78;
    let k = dlp_core::rng::derive_seed(seed, &[LABEL]);
    [k as u32, (k >> 32) as u32]
}

/// The counter of block `index` of `purpose` at `step` of chain `chain`.
#[inline]
pub fn counter(chain: u32, step: u32, purpose: u32, index: u32) -> [u32; 4] {
    [index, purpose, step, chain]
}

/// A 64-bit uniform integer from two words of a block (`hi` first).
#[inline]
pub fn u64_of(hi: u32, lo: u32) -> u64 {
    (hi as u64) << 32 | lo as u64
}

/// A uniform in (0, 1) from a 64-bit integer: (⌊r/2¹²⌋ + ½)/2⁵², never 0 or 1 (so its log is
/// finite). 52 random bits, not 53: ⌊r/2¹¹⌋ + ½ would need 54 significant bits and round up to
/// 2⁵³ (a uniform of exactly 1) at the top. The CUDA header's `dlp_u01_of_u64` is the same
/// formula.
#[inline]
pub fn u01_of_u64(r: u64) -> f64 {
    ((r >> 12) as f64 + 0.5) * (1.0 / 4_503_599_627_370_496.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123 `tests/kat_vectors`, the three `philox4x32 10` lines (counter, key, result).
    #[test]
    fn known_answers() {
        let cases = [
            ([0u32; 4], [0u32; 2], [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]),
            ([u32::MAX; 4], [u32::MAX; 2], [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]),
            (
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0],
                [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
            ),
        ];
        for (ctr, key, want) in cases {
            assert_eq!(philox4x32_10(ctr, key), want, "ctr {ctr:08x?} key {key:08x?}");
        }
    }

    /// Distinct seeds, chains, steps and purposes give distinct blocks, and the uniforms lie
    /// strictly inside (0, 1).
    #[test]
    fn streams_are_distinct_and_uniforms_open() {
        let a = philox4x32_10(counter(0, 0, 0, 0), key_of_seed(0));
        for other in [
            philox4x32_10(counter(1, 0, 0, 0), key_of_seed(0)),
            philox4x32_10(counter(0, 1, 0, 0), key_of_seed(0)),
            philox4x32_10(counter(0, 0, 1, 0), key_of_seed(0)),
            philox4x32_10(counter(0, 0, 0, 1), key_of_seed(0)),
            philox4x32_10(counter(0, 0, 0, 0), key_of_seed(1)),
        ] {
            assert_ne!(a, other);
        }
        assert!(u01_of_u64(0) > 0.0 && u01_of_u64(u64::MAX) < 1.0);
        assert_eq!(u01_of_u64(u64::MAX), 1.0 - 0.5 / 4_503_599_627_370_496.0);
        assert_eq!(u01_of_u64(0), 0.5 / 4_503_599_627_370_496.0);
    }
}
