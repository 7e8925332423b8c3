//! Small reference targets written for clarity, used by every crate's tests (and the exact
//! suite). They are obviously correct transcriptions of their formulas, not fast.

use crate::space::{DomainKind, Space};
use crate::target::RowTarget;
use std::path::Path;

pub mod fuzz;
pub mod require;

/// f(x) = xᵀ W x + bᵀ x on the sampler coordinates (bits for binary/spin, values for
/// ordinal), W any d × d matrix (the diagonal counts, spec pitfall P9), with
/// ∇f = (W + Wᵀ) x + b. Spec §4.3 and §4.6 are instances.
#[derive(Clone, Debug)]
pub struct Quadratic {
    space: Space,
    /// W, d × d row-major.
    pub w: Vec<f64>,
    /// b, length d.
    pub b: Vec<f64>,
}

impl Quadratic {
    /// Builds the target; panics on shape mismatch or a categorical space (test helper).
    pub fn new(space: Space, w: Vec<f64>, b: Vec<f64>) -> Self {
        assert_ne!(space.kind, DomainKind::Categorical, "use PairwiseCategorical");
        assert_eq!(w.len(), space.d * space.d);
        assert_eq!(b.len(), space.d);
        Quadratic { space, w, b }
    }

    /// The 3-variable binary model of spec §4.3.
    pub fn spec_tiny() -> Self {
        Quadratic::new(Space::binary(3), vec![0.0, 0.8, -0.6, 0.8, 0.0, 0.5, -0.6, 0.5, 0.0], vec![0.3, -0.7, 0.25])
    }

    fn coords(&self, x: &[u32]) -> Vec<f64> {
        x.iter().map(|&c| self.space.coordinate(c)).collect()
    }

    fn f(&self, v: &[f64]) -> f64 {
        let d = self.space.d;
        let mut f = 0.0;
        for i in 0..d {
            f += self.b[i] * v[i];
            for j in 0..d {
                f += v[i] * self.w[i * d + j] * v[j];
            }
        }
        f
    }
}

impl RowTarget for Quadratic {
    fn row_space(&self) -> &Space {
        &self.space
    }

    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.f(&self.coords(x))
    }

    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        let d = self.space.d;
        let v = self.coords(x);
        for (i, gi) in g.iter_mut().enumerate() {
            *gi = self.b[i] + (0..d).map(|j| (self.w[i * d + j] + self.w[j * d + i]) * v[j]).sum::<f64>();
        }
        self.f(&v)
    }
}

/// f(c) = Σ_i h_i\[c_i\] + Σ_{i<j} C_ij[c_i, c_j] on a categorical space, differentiated with
/// respect to the one-hot matrix: ∂f/∂e_i\[k\] = h_i\[k\] + Σ_{j≠i} C_ij[k, c_j]. f is linear in
/// each one-hot block, so this is the natural (multilinear) extension. Spec §4.5 is an
/// instance.
#[derive(Clone, Debug)]
pub struct PairwiseCategorical {
    space: Space,
    /// h, d × K row-major.
    pub h: Vec<f64>,
    /// C_ij[k, l] for i < j, stored at ((i·d + j)·K + k)·K + l; entries with i ≥ j are unused.
    pub c: Vec<f64>,
}

impl PairwiseCategorical {
    /// Builds the target from `h` (d × K) and pair tables; panics on shape mismatch.
    pub fn new(d: usize, k: usize, h: Vec<f64>, pairs: &[(usize, usize, Vec<f64>)]) -> Self {
        assert_eq!(h.len(), d * k);
        let mut c = vec![0.0; d * d * k * k];
        for (i, j, t) in pairs {
            assert!(i < j && *j < d && t.len() == k * k);
            c[(i * d + j) * k * k..(i * d + j + 1) * k * k].copy_from_slice(t);
        }
        PairwiseCategorical { space: Space::categorical(d, k), h, c }
    }

    /// The 2-coordinate, 3-class model of spec §4.5.
    pub fn spec_small() -> Self {
        PairwiseCategorical::new(
            2,
            3,
            vec![0.5, -0.3, 0.1, -0.2, 0.4, 0.0],
            &[(0, 1, vec![1.0, -0.5, 0.2, -0.4, 0.6, 0.0, 0.3, 0.0, -0.8])],
        )
    }

    fn pair(&self, i: usize, j: usize, ci: u32, cj: u32) -> f64 {
        let (d, k) = (self.space.d, self.space.k());
        if i < j {
            self.c[((i * d + j) * k + ci as usize) * k + cj as usize]
        } else {
            self.c[((j * d + i) * k + cj as usize) * k + ci as usize]
        }
    }

    fn f(&self, x: &[u32]) -> f64 {
        let (d, k) = (self.space.d, self.space.k());
        let mut f = 0.0;
        for i in 0..d {
            f += self.h[i * k + x[i] as usize];
            for j in i + 1..d {
                f += self.pair(i, j, x[i], x[j]);
            }
        }
        f
    }
}

impl RowTarget for PairwiseCategorical {
    fn row_space(&self) -> &Space {
        &self.space
    }

    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.f(x)
    }

    fn row_log_density_grad(&self, row: &[u32], g: &mut [f64]) -> f64 {
        let (d, k) = (self.space.d, self.space.k());
        for i in 0..d {
            for v in 0..k {
                let mut gi = self.h[i * k + v];
                for j in (0..d).filter(|&j| j != i) {
                    gi += self.pair(i, j, v as u32, row[j]);
                }
                g[i * k + v] = gi;
            }
        }
        self.f(row)
    }
}

/// The two 1-d families of spec §4.6 (Fig. 1b), on Θ = {−3, …, 3}.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Curve1dFamily {
    /// U_a(θ) = −θ²/4 + a·sin θ: log-quadratic at a = 0, its gradient −θ/2 + a·cos θ departs
    /// from linear in proportion to a.
    Sin,
    /// U_a(θ) = a·cos(πθ): the gradient −aπ·sin(πθ) vanishes at every integer, so DLP sees
    /// the same (flat) target for every a (spec §4.6's counterexample).
    Cos,
}

/// π ∝ exp(U_a) on one ordinal coordinate with values −3..3, the extension's gradient being
/// U_a's analytic derivative (not a difference of neighbouring states): the targets of
/// Fig. 1b, whose point is how DULA's bias follows that gradient.
#[derive(Clone, Debug)]
pub struct Curve1d {
    space: Space,
    family: Curve1dFamily,
    a: f64,
}

impl Curve1d {
    /// U_a of `family` on {−3, …, 3}.
    pub fn new(family: Curve1dFamily, a: f64) -> Self {
        Curve1d { space: Space::ordinal(1, (-3..=3).collect()), family, a }
    }

    fn u(&self, t: f64) -> f64 {
        match self.family {
            Curve1dFamily::Sin => -t * t / 4.0 + self.a * t.sin(),
            Curve1dFamily::Cos => self.a * (std::f64::consts::PI * t).cos(),
        }
    }

    fn du(&self, t: f64) -> f64 {
        match self.family {
            Curve1dFamily::Sin => -t / 2.0 + self.a * t.cos(),
            Curve1dFamily::Cos => -self.a * std::f64::consts::PI * (std::f64::consts::PI * t).sin(),
        }
    }
}

impl RowTarget for Curve1d {
    fn row_space(&self) -> &Space {
        &self.space
    }

    fn row_log_density(&self, x: &[u32]) -> f64 {
        self.u(self.space.value(x[0]) as f64)
    }

    fn row_log_density_grad(&self, x: &[u32], g: &mut [f64]) -> f64 {
        let t = self.space.value(x[0]) as f64;
        g[0] = self.du(t);
        self.u(t)
    }
}

/// π of spec §4.3's tiny model ([`Quadratic::spec_tiny`]), states in index order.
pub const SPEC_TINY_PI: [f64; 8] =
    [0.0757792291, 0.0973024562, 0.0376308515, 0.1313445775, 0.1022912598, 0.0395602265, 0.2515959009, 0.2644954985];

/// DULA's stationary law on spec §4.3's tiny model at α = 0.5 (biased; ‖π_α − π‖₁ = 0.1926361355).
pub const SPEC_TINY_DULA_PI: [f64; 8] =
    [0.0809512813, 0.0952750009, 0.0790964137, 0.1321463263, 0.1094669988, 0.0812631920, 0.2049611045, 0.2168396824];

/// π of spec §4.5's 2 × 3 categorical model ([`PairwiseCategorical::spec_small`]).
pub const SPEC_SMALL_PI: [f64; 9] = [
    0.2677786307,
    0.1088706668,
    0.1469600284,
    0.0296707180,
    0.1469600284,
    0.0540635731,
    0.0891357630,
    0.1203206947,
    0.0362398968,
];

/// DULA's stationary law on spec §4.5's model at α = 1 (‖π_α − π‖₁ = 0.2425788737).
pub const SPEC_SMALL_DULA_PI: [f64; 9] = [
    0.1922859965,
    0.1413208480,
    0.1337278830,
    0.0672630122,
    0.1201493110,
    0.0691840020,
    0.0978285845,
    0.1145667549,
    0.0636736080,
];

/// DULA's bias ‖π_α − π‖₁ on spec §4.3's tiny model as a function of α (spec §4.3, computed
/// there independently); monotone and → 0 as α → 0.
pub const SPEC_TINY_DULA_L1_VS_ALPHA: [(f64, f64); 8] = [
    (0.05, 2.9192e-5),
    (0.1, 4.3153e-3),
    (0.2, 5.0374e-2),
    (0.3, 1.0914e-1),
    (0.5, 1.9264e-1),
    (1.0, 2.8331e-1),
    (2.0, 3.3784e-1),
    (5.0, 3.7254e-1),
];

/// Checks that the block of `readme` between `<!-- {name}:begin -->` and `<!-- {name}:end -->`
/// is `expected` (a table generated from a registry), for the tests that keep README.md
/// equal to the code. With the environment variable `DLP_UPDATE_README` set it rewrites the
/// block instead (atomically). Panics with the expected text otherwise.
pub fn check_readme_block(readme: &Path, name: &str, expected: &str, regenerate: &str) {
    let (begin, end) = (format!("<!-- {name}:begin -->\n"), format!("<!-- {name}:end -->"));
    let text = std::fs::read_to_string(readme).expect("README.md at the workspace root");
    let start = text.find(&begin).unwrap_or_else(|| panic!("README.md has no `{begin}` line")) + begin.len();
    let stop = start + text[start..].find(&end).unwrap_or_else(|| panic!("README.md has no `{end}` after `{begin}`"));
    if text[start..stop] == *expected {
        return;
    }
    if std::env::var_os("DLP_UPDATE_README").is_some() {
        let updated = format!("{}{expected}{}", &text[..start], &text[stop..]);
        crate::io::atomic_write(readme, updated.as_bytes()).expect("rewrite README.md");
        return;
    }
    panic!(
        "README.md's {name} table is not the generated one. Regenerate it with `{regenerate}`; expected:\n\n{expected}"
    );
}

/// One step of SplitMix64 (Steele, Lea & Flood 2014) on `state`: the seeded draws of the fuzz
/// and kill-and-resume tests, whose sequences must not change with a generator crate's version.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Target;
    use crate::target::TargetExt;

    #[test]
    fn spec_tiny_log_densities_match_spec_4_3() {
        let t = Quadratic::spec_tiny();
        let expect = [0.0, 0.25, -0.7, 0.55, 0.3, -0.65, 1.2, 1.25];
        let mut x = [0u32; 3];
        for (s, e) in expect.iter().enumerate() {
            t.space().state_of_index(s as u64, &mut x);
            assert!((t.log_density(&x).unwrap() - e).abs() < 1e-12, "state {s}");
        }
        let mut g = [0.0; 3];
        t.log_density_grad(&[1, 1, 0], &mut g).unwrap();
        assert!((g[0] - 1.9).abs() < 1e-12 && (g[1] - 0.9).abs() < 1e-12 && (g[2] - 0.05).abs() < 1e-12);
    }

    #[test]
    fn spec_small_categorical_matches_spec_4_5() {
        let t = PairwiseCategorical::spec_small();
        let expect = [1.3, 0.4, 0.7, -0.9, 0.7, -0.3, 0.2, 0.5, -0.7];
        let mut x = [0u32; 2];
        for (s, e) in expect.iter().enumerate() {
            t.space().state_of_index(s as u64, &mut x);
            assert!((t.log_density(&x).unwrap() - e).abs() < 1e-12, "state {s}");
        }
        // Gradient w.r.t. e1 at (0,0) is h1 + C e2 = (1.5, -0.7, 0.4).
        let mut g = [0.0; 6];
        t.log_density_grad(&[0, 0], &mut g).unwrap();
        assert!((g[0] - 1.5).abs() < 1e-12 && (g[1] + 0.7).abs() < 1e-12 && (g[2] - 0.4).abs() < 1e-12);
    }

    #[test]
    fn default_coordinate_deltas_agree_with_direct_differences() {
        let t = Quadratic::spec_tiny();
        let mut out = [0.0; 3];
        t.flip_deltas(&[0, 1, 0], &mut out).unwrap();
        let f0 = t.log_density(&[0, 1, 0]).unwrap();
        for (i, y) in [[1, 1, 0], [0, 0, 0], [0, 1, 1]].iter().enumerate() {
            assert!((out[i] - (t.log_density(y).unwrap() - f0)).abs() < 1e-12);
        }
    }

    #[test]
    fn curve1d_is_the_spec_4_6_family() {
        // θ = 2 is value index 5 of {−3..3}.
        let mut g = [0.0];
        let sin = Curve1d::new(Curve1dFamily::Sin, 0.5);
        let f = sin.log_density_grad(&[5], &mut g).unwrap();
        assert!((f - (-1.0 + 0.5 * 2f64.sin())).abs() < 1e-15 && (g[0] - (-1.0 + 0.5 * 2f64.cos())).abs() < 1e-15);
        let cos = Curve1d::new(Curve1dFamily::Cos, 2.0);
        let f = cos.log_density_grad(&[5], &mut g).unwrap();
        assert!((f - 2.0).abs() < 1e-12 && g[0].abs() < 1e-12);
    }
}
