//! Seeded random streams: one ChaCha8 stream per chain, derived from `(seed, chain)`.
//!
//! Stream `chain + 1` of the ChaCha8 generator keyed by `seed` belongs to chain `chain`;
//! stream 0 is kept for setup work (initial states, data shuffles). Because a chain's stream
//! depends only on `(seed, chain)`, results do not depend on how chains are spread over
//! threads. `rand::rng()` (unseeded) is never used anywhere in dlp.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The random generator every chain draws from.
pub type ChainRng = ChaCha8Rng;

/// The stream of chain `chain` under `seed`.
pub fn chain_rng(seed: u64, chain: usize) -> ChainRng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(chain as u64 + 1);
    rng
}

/// Streams of chains `first .. first + n` under `seed`.
pub fn chain_rngs(seed: u64, first: usize, n: usize) -> Vec<ChainRng> {
    (first..first + n).map(|c| chain_rng(seed, c)).collect()
}

/// Stream 0 under `seed`: for setup (initial states, permutations of data), never for chains.
pub fn setup_rng(seed: u64) -> ChainRng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(0);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_differ_between_chains_and_repeat_for_the_same_chain() {
        let a: Vec<u64> = (0..4).map(|_| chain_rng(7, 0).next_u64()).collect();
        assert!(a.iter().all(|&v| v == a[0]));
        assert_ne!(chain_rng(7, 0).next_u64(), chain_rng(7, 1).next_u64());
        assert_ne!(chain_rng(7, 0).next_u64(), setup_rng(7).next_u64());
        assert_ne!(chain_rng(7, 0).next_u64(), chain_rng(8, 0).next_u64());
    }
}
