//! Transforms θ = f(φ) from an unbounded proxy φ ∈ ℝ onto a bounded coordinate: the family of
//! Yokoi et al., *On Transformations in Stochastic Gradient MCMC* (paper 001, Table 1), used by
//! the mirror / Itô / CoRV samplers of `dlp_samplers::bounded` and by any model that keeps a
//! bounded parameter behind a transform (the binary network's weights in (−1, 1)).
//!
//! It lives in the core, not in `dlp-samplers`, because it is pure scalar maths with no
//! dependency and both samplers and models need it (a model crate must not depend on the
//! samplers). Every function acts on one coordinate; [`Affine`] moves a (0, 1)-valued or
//! (0, ∞)-valued transform onto (lo, hi) or (lo, ∞).
//!
//! Stable forms (paper 001 gives only the naive ones): each function is written so that it
//! neither overflows nor cancels for |φ| up to 700 and θ within 1e−12 of a boundary — sign-split
//! sigmoid and softplus, `atan(−1/φ)` for the arctan's left tail, the softsign's two halves as
//! quotients, log-space Jacobians, and for ICLL the exponential integral E₁ (hand-written below:
//! no crate in the workspace's set offers E₁ or Γ(0, x); `statrs`' incomplete gamma needs a > 0).

use std::f64::consts::{LN_2, PI};

mod lanes;

/// Euler's constant γ.
pub const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// One transform of paper 001's Table 1 (plus the identity), on its natural range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transform {
    /// θ = φ on ℝ (CoRV with it is plain SGLD).
    Identity,
    /// θ = σ(φ) = 1/(1 + e^{−φ}) onto (0, 1).
    Sigmoid,
    /// θ = atan(φ)/π + ½ onto (0, 1).
    Arctan,
    /// θ = φ/(2(1 + |φ|)) + ½ onto (0, 1); C¹ but not C² at φ = 0.
    Softsign,
    /// θ = e^φ onto (0, ∞); f′ is unbounded (not Assumption 2 of 001).
    Exp,
    /// θ = log(1 + e^φ) onto (0, ∞).
    Softplus,
    /// θ = ∫_{−∞}^φ (1 − exp(−e^t)) dt = φ + γ + E₁(e^φ) onto (0, ∞): the integral of the
    /// complementary log-log link.
    Icll,
}

/// Where a transform maps ℝ: the three ranges of Table 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    /// ℝ.
    Real,
    /// (0, 1).
    Unit,
    /// (0, ∞).
    Positive,
}

impl Transform {
    /// Every transform, in Table 1's order after the identity.
    pub const ALL: [Transform; 7] = [
        Transform::Identity,
        Transform::Sigmoid,
        Transform::Arctan,
        Transform::Softsign,
        Transform::Exp,
        Transform::Softplus,
        Transform::Icll,
    ];

    /// The name used on command lines and in result files.
    pub fn name(self) -> &'static str {
        match self {
            Transform::Identity => "identity",
            Transform::Sigmoid => "sigmoid",
            Transform::Arctan => "arctan",
            Transform::Softsign => "softsign",
            Transform::Exp => "exp",
            Transform::Softplus => "softplus",
            Transform::Icll => "icll",
        }
    }

    /// The transform called `name`, or a line listing the names.
    pub fn parse(name: &str) -> Result<Transform, String> {
        Transform::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| {
            format!("unknown transform {name:?} (have: {})", Transform::ALL.map(Transform::name).join(", "))
        })
    }

    /// The range of f.
    pub fn range(self) -> Range {
        match self {
            Transform::Identity => Range::Real,
            Transform::Sigmoid | Transform::Arctan | Transform::Softsign => Range::Unit,
            Transform::Exp | Transform::Softplus | Transform::Icll => Range::Positive,
        }
    }

    /// θ = f(φ).
    pub fn forward(self, phi: f64) -> f64 {
        match self {
            Transform::Identity => phi,
            Transform::Sigmoid => crate::math::sigmoid(phi),
            // atan(φ)/π + ½ cancels for φ ≪ 0; there atan(φ) + π/2 = atan(−1/φ).
            Transform::Arctan => {
                if phi < -1.0 {
                    (-1.0 / phi).atan() / PI
                } else {
                    phi.atan() / PI + 0.5
                }
            }
            // The two halves as single quotients: no cancellation in ½ + (small negative).
            Transform::Softsign => {
                if phi < 0.0 {
                    0.5 / (1.0 - phi)
                } else {
                    1.0 - 0.5 / (1.0 + phi)
                }
            }
            Transform::Exp => phi.exp(),
            Transform::Softplus => crate::math::softplus(phi),
            Transform::Icll => icll(phi),
        }
    }

    /// φ = g(θ) = f⁻¹(θ); ±∞ at the ends of the range.
    pub fn inverse(self, theta: f64) -> f64 {
        match self {
            Transform::Identity => theta,
            // log θ − log(1 − θ): ln_1p(−θ) is exact near θ → 1 (1 − θ is exact there).
            Transform::Sigmoid => theta.ln() - (-theta).ln_1p(),
            // tan(π(θ − ½)) loses the small distance to either end; use the cotangent there.
            Transform::Arctan => {
                if theta < 0.25 {
                    -1.0 / (PI * theta).tan()
                } else if theta > 0.75 {
                    1.0 / (PI * (1.0 - theta)).tan()
                } else {
                    (PI * (theta - 0.5)).tan()
                }
            }
            Transform::Softsign => {
                if theta < 0.5 {
                    1.0 - 0.5 / theta
                } else {
                    0.5 / (1.0 - theta) - 1.0
                }
            }
            Transform::Exp => theta.ln(),
            // log(expm1(θ)); for large θ, θ + log(−expm1(−θ)) avoids overflow.
            Transform::Softplus => {
                if theta > 20.0 {
                    theta + (-(-theta).exp_m1()).ln()
                } else {
                    theta.exp_m1().ln()
                }
            }
            Transform::Icll => icll_inverse(theta),
        }
    }

    /// f′(φ) ≥ 0.
    pub fn dforward(self, phi: f64) -> f64 {
        match self {
            Transform::Identity => 1.0,
            Transform::Sigmoid => crate::math::sigmoid(phi) * crate::math::sigmoid(-phi),
            Transform::Arctan => {
                if phi.abs() > 1.0 {
                    // 1/(π(1 + φ²)) without overflowing φ².
                    let r = 1.0 / phi;
                    r * r / (PI * (1.0 + r * r))
                } else {
                    1.0 / (PI * (1.0 + phi * phi))
                }
            }
            Transform::Softsign => 0.5 / (1.0 + phi.abs()).powi(2),
            Transform::Exp => phi.exp(),
            Transform::Softplus => crate::math::sigmoid(phi),
            // 1 − exp(−e^φ) = −expm1(−u): exact for small u.
            Transform::Icll => -(-phi.exp()).exp_m1(),
        }
    }

    /// log f′(φ), finite wherever φ is (log space: f′ itself underflows at |φ| ≈ 700).
    pub fn log_jac(self, phi: f64) -> f64 {
        use crate::math::softplus;
        match self {
            Transform::Identity => 0.0,
            Transform::Sigmoid => -softplus(phi) - softplus(-phi),
            Transform::Arctan => {
                if phi.abs() > 1.0 {
                    -PI.ln() - 2.0 * phi.abs().ln() - (1.0 / (phi * phi)).ln_1p()
                } else {
                    -PI.ln() - (phi * phi).ln_1p()
                }
            }
            Transform::Softsign => -LN_2 - 2.0 * phi.abs().ln_1p(),
            Transform::Exp => phi,
            Transform::Softplus => -softplus(-phi),
            Transform::Icll => {
                let u = phi.exp();
                if u < 1e-8 {
                    // log(u − u²/2 + …) = φ + log(1 − u/2 + …): e^φ underflows before φ does.
                    phi - 0.5 * u
                } else {
                    (-(-u).exp_m1()).ln()
                }
            }
        }
    }

    /// d/dφ log f′(φ) = f″(φ)/f′(φ) (the CoRV drift's Jacobian term).
    pub fn dlog_jac(self, phi: f64) -> f64 {
        match self {
            Transform::Identity => 0.0,
            // 1 − 2σ(φ) = −tanh(φ/2): no cancellation near φ = 0, ±1 at the tails.
            Transform::Sigmoid => -(0.5 * phi).tanh(),
            Transform::Arctan => {
                if phi.abs() > 1.0 {
                    -2.0 / (phi + 1.0 / phi)
                } else {
                    -2.0 * phi / (1.0 + phi * phi)
                }
            }
            // Jumps from +2 to −2 at 0 (softsign is not C²); 0 there is the average.
            Transform::Softsign => {
                if phi == 0.0 {
                    0.0
                } else {
                    -2.0 * phi.signum() / (1.0 + phi.abs())
                }
            }
            Transform::Exp => 1.0,
            Transform::Softplus => crate::math::sigmoid(-phi),
            Transform::Icll => {
                let u = phi.exp();
                if u < 1e-8 {
                    1.0 - 0.5 * u
                } else if u > 745.0 {
                    // u/expm1(u) ≈ u e^{−u} underflows (and ∞/∞ would be NaN).
                    0.0
                } else {
                    u / u.exp_m1()
                }
            }
        }
    }
}

impl Transform {
    /// (f(φ), f′(φ), f″(φ)/f′(φ)) together: what one CoRV step needs per coordinate. Sigmoid,
    /// softplus and exp share one exponential between the three, computed by the vectorisable
    /// kernels of [`Transform::forward_jac_slice`] (a CoRV step on 2·10⁵ coordinates is
    /// dominated by this, not by the gradient), so this and the slice form are bit-identical;
    /// the others call the three functions. Equal to the separate functions up to rounding
    /// (tested).
    #[inline]
    pub fn forward_jac(self, phi: f64) -> (f64, f64, f64) {
        match self {
            Transform::Sigmoid => lanes::sigmoid_jac(phi),
            Transform::Softplus => lanes::softplus_jac(phi),
            Transform::Exp => lanes::exp_jac(phi),
            Transform::Icll if ICLL_FUSED.contains(&phi) => lanes::icll_jac(phi),
            t => (t.forward(phi), t.dforward(phi), t.dlog_jac(phi)),
        }
    }
}

impl Transform {
    /// [`Transform::forward_jac`] over a slice, into `f`, `d`, `l` (each at least `phi.len()`
    /// long), moved onto (lo, lo + scale) as [`Affine::forward_jac`] does: the CoRV update of
    /// many coordinates sharing one transform. Sigmoid, softplus and exp run one branch-free
    /// loop compiled for AVX-512, AVX2 and baseline x86-64, the widest the CPU has chosen at
    /// run time, as does ICLL on [−18, 6.6); every width gives
    /// the scalar function's bits exactly (tested). Other transforms, and ICLL outside that
    /// range, take the scalar function.
    pub fn forward_jac_slice(self, lo: f64, scale: f64, phi: &[f64], f: &mut [f64], d: &mut [f64], l: &mut [f64]) {
        self.forward_jac_slice_at(lanes::Width::Best, lo, scale, phi, f, d, l)
    }

    /// [`Transform::forward_jac_slice`] at a chosen compiled width (the tests compare them).
    #[allow(clippy::too_many_arguments)] // the slice form's arguments and the width
    fn forward_jac_slice_at(
        self,
        width: lanes::Width,
        lo: f64,
        scale: f64,
        phi: &[f64],
        f: &mut [f64],
        d: &mut [f64],
        l: &mut [f64],
    ) {
        let n = phi.len();
        assert!(f.len() >= n && d.len() >= n && l.len() >= n, "output slices shorter than φ");
        let kernel = match self {
            Transform::Sigmoid => Some(lanes::Map::Sigmoid),
            Transform::Softplus => Some(lanes::Map::Softplus),
            Transform::Exp => Some(lanes::Map::Exp),
            Transform::Icll => Some(lanes::Map::Icll),
            _ => None,
        };
        if let Some(map) = kernel {
            lanes::fill_slices(map, width, lo, scale, phi, f, d, l);
        }
        // The scalar form where no kernel applies: every φ of a transform without one, and the
        // ICLL φ outside the fused range (as `forward_jac` does).
        if kernel.is_none() || self == Transform::Icll {
            for (i, &p) in phi.iter().enumerate() {
                if kernel.is_none() || !ICLL_FUSED.contains(&p) {
                    let (a, b, c) = self.forward_jac(p);
                    (f[i], d[i], l[i]) = (lo + scale * a, scale * b, c);
                }
            }
        }
    }
}

/// The φ on which ICLL's (f, f′, f″/f′) take the fused form of `lanes::icll_jac`; outside,
/// the separate methods' forms apply (u = e^φ < 1e−8, u > 745).
const ICLL_FUSED: std::ops::Range<f64> = -18.0..6.6;

/// ICLL f(φ) by the two polynomial forms of `lanes::icll` (u·G(u) below u = 4, φ + γ +
/// e^{−u}·w·S(w) from there; within 5.3e−16 relative of 50-digit values, checked against
/// [`icll_exact`] on a dense grid in the tests), from u = e^φ, and e^{−u} and 1/u where used.
/// The series and continued fraction of `icll_exact` cost 20–100 iterations per call, which
/// made CoRV with ICLL ~10× slower per NMF iteration than with exp.
fn icll(phi: f64) -> f64 {
    let u = lanes::exp(phi);
    // Below the switch the small-u form is selected and e^{−u}, 1/u are unused: one scalar
    // exponential and a division saved per call (Itô calls this per coordinate and step).
    let (e, w) = if u < lanes::ICLL_SPLIT { (0.0, 0.0) } else { (lanes::exp(-u), 1.0 / u) };
    lanes::icll(phi, u, e, w)
}

/// ICLL f(φ) = φ + γ + E₁(u), u = e^φ, summed directly. For u ≤ 1 the series of E₁ makes
/// −γ − ln u cancel exactly, leaving Σ_{k≥1} (−1)^{k+1} u^k/(k·k!) (alternating, terms
/// decreasing): no cancellation at φ → −∞, where f ≈ u − u²/4.
fn icll_exact(phi: f64) -> f64 {
    let u = phi.exp();
    if u < 1e-8 {
        return u - 0.25 * u * u;
    }
    if u <= 1.0 {
        let (mut sum, mut term) = (0.0, 1.0);
        for k in 1..60 {
            term *= u / k as f64; // u^k / k!
            let t = term / k as f64;
            sum += if k % 2 == 1 { t } else { -t };
            if t < 1e-17 * sum.abs() {
                break;
            }
        }
        return sum;
    }
    phi + EULER_GAMMA + e1_cf(u)
}

/// E₁(x) for x > 1 by the modified Lentz continued fraction
/// E₁(x) = e^{−x} · 1/(x + 1 − 1²/(x + 3 − 2²/(x + 5 − …))) (Numerical Recipes §6.3);
/// 0 once e^{−x} underflows.
fn e1_cf(x: f64) -> f64 {
    if x > 745.0 {
        return 0.0;
    }
    let tiny = 1e-300;
    let mut b = x + 1.0;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..1000 {
        let a = -((i * i) as f64);
        b += 2.0;
        d = 1.0 / (a * d + b);
        c = b + a / c;
        let del = c * d;
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h * (-x).exp()
}

/// E₁(x) = ∫_x^∞ e^{−t}/t dt for x > 0 (series below 1, continued fraction above).
pub fn exp_integral_e1(x: f64) -> f64 {
    if x <= 1.0 {
        // E₁(x) = −γ − ln x + Σ (−1)^{k+1} x^k/(k·k!), the same sum as `icll_exact` at u = x.
        -EULER_GAMMA - x.ln() + icll_exact(x.ln())
    } else {
        e1_cf(x)
    }
}

/// ICLL⁻¹(θ): Newton on f(φ) − θ from log θ (θ < 1) or θ − γ (θ ≥ 1), kept inside a bisection
/// bracket [lo, hi] (f is convex and increasing with f′ ∈ (0, 1)), until the residual is below
/// half an ulp of θ or the step is a few ulp of φ (the spec's 1e−14·max(1, |φ|) leaves a
/// relative error |Δφ| ≈ 2e−13 in θ at φ ≈ −18).
fn icll_inverse(theta: f64) -> f64 {
    if theta.is_nan() || theta < 0.0 {
        return f64::NAN;
    }
    if theta == 0.0 {
        return f64::NEG_INFINITY;
    }
    if theta == f64::INFINITY {
        return f64::INFINITY;
    }
    if theta < 1e-8 {
        // f = u − u²/4 + O(u³): u = 2(1 − √(1 − θ)) to relative 1e−16, so φ = ln u.
        return (2.0 * theta / (1.0 + (1.0 - theta).sqrt())).ln();
    }
    // f(φ) ≤ e^φ and f(φ) ≥ φ + γ give the bracket [θ − γ, ln θ] ∩ …: f(ln θ) ≤ θ and
    // f(θ − γ) ≥ θ, so φ* ∈ [ln θ, max(ln θ, θ − γ)] — widened a little for rounding.
    let (mut lo, mut hi) = (theta.ln() - 1e-9, (theta - EULER_GAMMA).max(theta.ln()) + 1e-9 + 1e-12 * theta);
    let mut phi = if theta < 1.0 { theta.ln() } else { theta - EULER_GAMMA };
    for _ in 0..200 {
        let r = icll(phi) - theta;
        if r.abs() <= 0.5 * f64::EPSILON * theta {
            break;
        }
        if r > 0.0 {
            hi = hi.min(phi);
        } else {
            lo = lo.max(phi);
        }
        let d = Transform::Icll.dforward(phi);
        let mut next = phi - r / d;
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        let step = (next - phi).abs();
        phi = next;
        if step <= 4.0 * f64::EPSILON * phi.abs().max(1.0) || hi - lo < 1e-15 * phi.abs().max(1.0) {
            break;
        }
    }
    phi
}

/// θ = lo + scale·f(φ): a Table 1 transform moved onto (lo, hi) (scale = hi − lo, for (0, 1)
/// transforms) or (lo, ∞) (scale = 1, for (0, ∞) transforms); the identity on ℝ.
/// f″/f′ is unchanged by the move; f′ gains the factor `scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Affine {
    /// The transform of Table 1.
    pub base: Transform,
    /// Lower end of the coordinate's interval (0 for the identity).
    pub lo: f64,
    /// Width of the interval (1 for half-lines and the identity).
    pub scale: f64,
}

impl Affine {
    /// The transform onto the interval (lo, hi), using `unit` for bounded intervals and `half`
    /// for half-lines (lo, ∞), the identity on ℝ; an error line when the transform's range
    /// does not fit or the interval is (−∞, hi) (no increasing map of Table 1 onto it).
    pub fn onto(lo: f64, hi: f64, unit: Transform, half: Transform) -> Result<Affine, String> {
        if lo.partial_cmp(&hi) != Some(std::cmp::Ordering::Less) {
            return Err(format!("interval ({lo}, {hi}) is empty"));
        }
        match (lo.is_finite(), hi.is_finite()) {
            (true, true) if unit.range() == Range::Unit => Ok(Affine { base: unit, lo, scale: hi - lo }),
            (true, true) => Err(format!("transform {} does not map onto (0, 1), needed for ({lo}, {hi})", unit.name())),
            (true, false) if half.range() == Range::Positive => Ok(Affine { base: half, lo, scale: 1.0 }),
            (true, false) => Err(format!("transform {} does not map onto (0, ∞), needed for ({lo}, ∞)", half.name())),
            (false, false) => Ok(Affine { base: Transform::Identity, lo: 0.0, scale: 1.0 }),
            (false, true) => Err(format!("interval (−∞, {hi}): only lower-bounded half-lines are supported")),
        }
    }

    /// θ = lo + scale·f(φ).
    #[inline]
    pub fn forward(&self, phi: f64) -> f64 {
        self.lo + self.scale * self.base.forward(phi)
    }

    /// φ = g((θ − lo)/scale).
    #[inline]
    pub fn inverse(&self, theta: f64) -> f64 {
        self.base.inverse((theta - self.lo) / self.scale)
    }

    /// dθ/dφ = scale·f′(φ).
    #[inline]
    pub fn dforward(&self, phi: f64) -> f64 {
        self.scale * self.base.dforward(phi)
    }

    /// log dθ/dφ = log scale + log f′(φ).
    #[inline]
    pub fn log_jac(&self, phi: f64) -> f64 {
        self.scale.ln() + self.base.log_jac(phi)
    }

    /// f″(φ)/f′(φ) (scale-free).
    #[inline]
    pub fn dlog_jac(&self, phi: f64) -> f64 {
        self.base.dlog_jac(phi)
    }

    /// (θ, dθ/dφ, f″/f′) at φ in one call ([`Transform::forward_jac`]).
    #[inline]
    pub fn forward_jac(&self, phi: f64) -> (f64, f64, f64) {
        let (f, d, l) = self.base.forward_jac(phi);
        (self.lo + self.scale * f, self.scale * d, l)
    }

    /// [`Affine::forward_jac`] over a slice ([`Transform::forward_jac_slice`]): bit-identical to
    /// the scalar call on each element.
    pub fn forward_jac_slice(&self, phi: &[f64], f: &mut [f64], d: &mut [f64], l: &mut [f64]) {
        self.base.forward_jac_slice(self.lo, self.scale, phi, f, d, l)
    }
}

#[cfg(test)]
mod tests;
