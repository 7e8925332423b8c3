//! Fast MMD² between two sets of binary states with the kernel k(x, y) = exp(−H(x, y)/D), as the
//! biased V-statistic mean K_xx + mean K_yy − 2 mean K_xy with the diagonals included
//! (`reproduction.md` §3.3, pitfall P12). States are packed into 64-bit words so that a
//! Hamming distance is a few popcounts; this is what makes the every-10-steps metric of
//! Fig. 4 cheap next to the samplers. It is the same statistic as [`crate::mmd::mmd_statistic`]
//! (V form, scale 1) on binary data, without building the kernel matrix.

/// Rows of a binary `n × d` batch packed into `ceil(d/64)` words each.
#[derive(Clone, Debug)]
struct Packed {
    words: usize,
    bits: Vec<u64>,
}

impl Packed {
    fn new(xs: &[u32], d: usize) -> Packed {
        let words = d.div_ceil(64);
        let n = xs.len() / d;
        let mut bits = vec![0u64; n * words];
        for (r, row) in xs.chunks_exact(d).enumerate() {
            for (i, &b) in row.iter().enumerate() {
                if b != 0 {
                    bits[r * words + i / 64] |= 1 << (i % 64);
                }
            }
        }
        Packed { words, bits }
    }

    fn n(&self) -> usize {
        self.bits.len() / self.words.max(1)
    }

    fn row(&self, r: usize) -> &[u64] {
        &self.bits[r * self.words..(r + 1) * self.words]
    }
}

fn mean_kernel(a: &Packed, b: &Packed, d: usize) -> f64 {
    // exp(−h/D) for every possible h, so the double loop does no exp.
    let table: Vec<f64> = (0..=d).map(|h| (-(h as f64) / d as f64).exp()).collect();
    let mut s = 0.0;
    for i in 0..a.n() {
        let ra = a.row(i);
        for j in 0..b.n() {
            let h: u32 = ra.iter().zip(b.row(j)).map(|(x, y)| (x ^ y).count_ones()).sum();
            s += table[h as usize];
        }
    }
    s / (a.n() * b.n()) as f64
}

/// MMD² (V-statistic, kernel exp(−Hamming/D)) between the rows of `xs` and of `ys`
/// (binary `n × d` and `m × d` batches of 0/1 indices).
pub fn mmd2_hamming_v(xs: &[u32], ys: &[u32], d: usize) -> f64 {
    MmdReference::new(ys, d).mmd2(xs)
}

/// A fixed reference set with its mean K_yy computed once, for repeated MMD² evaluations.
#[derive(Clone, Debug)]
pub struct MmdReference {
    d: usize,
    ys: Packed,
    kyy: f64,
}

impl MmdReference {
    /// Packs the reference rows `ys` (`m × d`) and computes their mean kernel.
    pub fn new(ys: &[u32], d: usize) -> MmdReference {
        let ys = Packed::new(ys, d);
        let kyy = mean_kernel(&ys, &ys, d);
        MmdReference { d, ys, kyy }
    }

    /// MMD² between the rows of `xs` and the reference set.
    pub fn mmd2(&self, xs: &[u32]) -> f64 {
        let xs = Packed::new(xs, self.d);
        mean_kernel(&xs, &xs, self.d) + self.kyy - 2.0 * mean_kernel(&xs, &self.ys, self.d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_hand_computation() {
        // d = 2, X = {00}, Y = {00, 11}: K_xx = 1, K_yy = (1 + e^{-1} + e^{-1} + 1)/4,
        // K_xy = (1 + e^{-1})/2 → MMD² = 1 + (1 + e^{-1})/2 − (1 + e^{-1}) = (1 − e^{-1})/2.
        let v = mmd2_hamming_v(&[0, 0], &[0, 0, 1, 1], 2);
        let e = (-1f64).exp();
        assert!((v - (1.0 - e) / 2.0).abs() < 1e-15, "{v}");
        // Identical sets give 0; a 70-bit state exercises the second word.
        let mut x = vec![0u32; 140];
        x[69] = 1;
        x[70 + 3] = 1;
        assert!(mmd2_hamming_v(&x, &x, 70).abs() < 1e-15);
        let y = vec![0u32; 70];
        // X = {e_69, e_3}, Y = {0}: K_xx = (1 + 1 + 2e^{-2/70})/4, K_xy = e^{-1/70}.
        let want = (2.0 + 2.0 * (-2.0f64 / 70.0).exp()) / 4.0 + 1.0 - 2.0 * (-1.0f64 / 70.0).exp();
        assert!((mmd2_hamming_v(&x, &y, 70) - want).abs() < 1e-15);
    }

    #[test]
    fn agrees_with_the_kernel_matrix_statistic() {
        use dlp_core::Space;
        use rand::RngExt;
        let mut rng = dlp_core::chain_rng(3, 0);
        let d = 100;
        let xs: Vec<u32> = (0..30 * d).map(|_| rng.random_range(0..2u32)).collect();
        let ys: Vec<u32> = (0..40 * d).map(|_| u32::from(rng.random::<f64>() < 0.3)).collect();
        let matrix = crate::mmd::mmd_statistic(&Space::binary(d), &xs, &ys, 1.0, crate::Statistic::V).unwrap();
        assert!((mmd2_hamming_v(&xs, &ys, d) - matrix).abs() < 1e-12);
    }
}
