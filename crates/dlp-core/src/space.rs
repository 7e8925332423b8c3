//! State spaces: `d` coordinates sharing one ordered value list.

use serde::{Deserialize, Serialize};

/// What kind of values a coordinate takes, which fixes how gradient-based samplers see it
/// (the model-file spec, "How gradient-based samplers see a model").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DomainKind {
    /// {0, 1}; the sampler coordinate is the value.
    Binary,
    /// {−1, +1}, stored as x = (s + 1)/2 ∈ {0, 1}; gradients are with respect to x.
    Spin,
    /// K unordered classes; gradients are with respect to the d × K one-hot matrix.
    Categorical,
    /// K ordered integer values; the sampler coordinate is the value itself.
    Ordinal,
}

/// A product space V^d. A state is an index vector `c` with `c[i] < K`; its value at
/// coordinate `i` is `values[c[i]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Space {
    /// Number of coordinates.
    pub d: usize,
    /// Kind of the coordinates.
    pub kind: DomainKind,
    /// The value list V (length K ≥ 2), in the order that defines the indices.
    pub values: Vec<i64>,
}

impl Space {
    /// {0,1}^d.
    pub fn binary(d: usize) -> Self {
        Space { d, kind: DomainKind::Binary, values: vec![0, 1] }
    }

    /// {−1,+1}^d (index 0 is −1, index 1 is +1).
    pub fn spin(d: usize) -> Self {
        Space { d, kind: DomainKind::Spin, values: vec![-1, 1] }
    }

    /// {0,1}^d or {−1,+1}^d for a binary-like `kind`; `None` for categorical and ordinal kinds
    /// (the models with one weight per bit accept only these two).
    pub fn bits(kind: DomainKind, d: usize) -> Option<Self> {
        match kind {
            DomainKind::Binary => Some(Space::binary(d)),
            DomainKind::Spin => Some(Space::spin(d)),
            DomainKind::Categorical | DomainKind::Ordinal => None,
        }
    }

    /// {0..K−1}^d, unordered classes.
    pub fn categorical(d: usize, k: usize) -> Self {
        Space { d, kind: DomainKind::Categorical, values: (0..k as i64).collect() }
    }

    /// Ordered integer values `values` (strictly increasing) at each of `d` coordinates.
    pub fn ordinal(d: usize, values: Vec<i64>) -> Self {
        Space { d, kind: DomainKind::Ordinal, values }
    }

    /// Number of values per coordinate.
    pub fn k(&self) -> usize {
        self.values.len()
    }

    /// True for binary and spin spaces (K = 2, sampled as bits).
    pub fn is_binary_like(&self) -> bool {
        matches!(self.kind, DomainKind::Binary | DomainKind::Spin)
    }

    /// Gradient entries per coordinate: K for categorical (one-hot), 1 otherwise.
    pub fn grad_width(&self) -> usize {
        match self.kind {
            DomainKind::Categorical => self.k(),
            _ => 1,
        }
    }

    /// Length of one state's gradient: `d * grad_width()`.
    pub fn grad_len(&self) -> usize {
        self.d * self.grad_width()
    }

    /// The coordinate gradient-based samplers move in, for index `c`: the bit for binary and
    /// spin, the value for ordinal, the index for categorical (whose geometry is one-hot).
    #[inline]
    pub fn coordinate(&self, c: u32) -> f64 {
        match self.kind {
            DomainKind::Binary | DomainKind::Spin | DomainKind::Categorical => c as f64,
            DomainKind::Ordinal => self.values[c as usize] as f64,
        }
    }

    /// The user-facing value of index `c` (−1/+1 for spin).
    #[inline]
    pub fn value(&self, c: u32) -> i64 {
        self.values[c as usize]
    }

    /// Index of `value` in the value list, if it is one.
    pub fn index_of_value(&self, value: i64) -> Option<u32> {
        self.values.iter().position(|&v| v == value).map(|p| p as u32)
    }

    /// |V|^d if it fits in a u64.
    pub fn n_states(&self) -> Option<u64> {
        (self.k() as u64).checked_pow(u32::try_from(self.d).ok()?)
    }

    /// The state with enumeration index `index` (first coordinate most significant, as the
    /// `table` model kind orders its entries), written into `out` (length d).
    pub fn state_of_index(&self, mut index: u64, out: &mut [u32]) {
        let k = self.k() as u64;
        for c in out.iter_mut().rev() {
            *c = (index % k) as u32;
            index /= k;
        }
    }

    /// Inverse of [`Space::state_of_index`].
    pub fn index_of_state(&self, x: &[u32]) -> u64 {
        let k = self.k() as u64;
        x.iter().fold(0, |acc, &c| acc * k + c as u64)
    }

    /// Checks that `xs` holds whole states with indices below K; names the first bad entry.
    pub fn check_states(&self, xs: &[u32]) -> Result<(), String> {
        if self.d == 0 || !xs.len().is_multiple_of(self.d) {
            return Err(format!("state buffer of length {} is not a multiple of d = {}", xs.len(), self.d));
        }
        let k = self.k() as u32;
        if let Some(p) = xs.iter().position(|&c| c >= k) {
            return Err(format!(
                "chain {}, coordinate {}: index {} is outside 0..{}",
                p / self.d,
                p % self.d,
                xs[p],
                k
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enumeration_round_trips_with_first_coordinate_most_significant() {
        let s = Space::categorical(3, 3);
        let mut x = [0u32; 3];
        s.state_of_index(5, &mut x);
        assert_eq!(x, [0, 1, 2]);
        assert_eq!(s.index_of_state(&x), 5);
        for i in 0..27 {
            s.state_of_index(i, &mut x);
            assert_eq!(s.index_of_state(&x), i);
        }
        assert_eq!(s.n_states(), Some(27));
    }

    #[test]
    fn spin_indices_are_bits() {
        let s = Space::spin(2);
        assert_eq!(s.value(0), -1);
        assert_eq!(s.value(1), 1);
        assert_eq!(s.coordinate(1), 1.0);
        assert_eq!(s.index_of_value(-1), Some(0));
        assert!(s.check_states(&[0, 1, 1, 2]).is_err());
    }
}
