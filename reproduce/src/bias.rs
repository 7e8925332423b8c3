//! Exact DULA bias (Figs. 1a and 1b, spec `reproduction.md` §3.1, §4.2, §4.6–§4.8):
//! stationary laws from exact transition matrices and from the closed form π_α ∝ π·Z_α,
//! Theorem 5.1's bounds and the rate fit, and the two figures.

use crate::SamplerSpec;
use crate::plot::{Figure, Panel, Series};
use anyhow::Result;
use dlp_core::Target;
use dlp_core::testing::{Curve1d, Curve1dFamily};
use dlp_exact::enumerate::all_states;
use dlp_exact::matrix::l1_distance;
use dlp_exact::{dula_closed_form, kernel_matrix, probabilities, stationarity_residual, stationary, thm51_bounds};
use dlp_models::IsingModel;
use serde_json::{Value, json};

/// DULA's exact stationary law on `target` at step size `alpha` (transition matrix from its
/// exact kernel, linear solve) and the solve's residual ‖π_α P − π_α‖∞.
pub fn dula_law(target: &dyn Target, alpha: f64) -> Result<(Vec<f64>, f64)> {
    let sampler = SamplerSpec::new("dula", Some(alpha)).build()?;
    let p = kernel_matrix(target, sampler.as_ref(), 0)?;
    let law = stationary(&p)?;
    let res = stationarity_residual(&law, &p);
    Ok((law, res))
}

/// One (lattice, α) result of Fig. 1a.
pub struct BiasPoint {
    /// Lattice side.
    pub side: usize,
    /// Step size ({0,1} units).
    pub alpha: f64,
    /// ‖π_α − π‖₁ with π_α from the closed form.
    pub l1: f64,
    /// ‖π_α − π‖₁ with π_α from the transition matrix (3×3 only).
    pub l1_matrix: Option<f64>,
    /// ‖matrix stationary − closed form‖₁ (3×3 only).
    pub matrix_vs_closed: Option<f64>,
    /// ‖π_α P − π_α‖∞ of the solved law (3×3 only).
    pub solve_residual: Option<f64>,
    /// E_{π_α}\[s_i\] (all sites agree by symmetry).
    pub mean_s: f64,
    /// Theorem 5.1's bound 2(Ẑ − 1).
    pub hat_z_bound: f64,
    /// Theorem 5.1's eigenvalue bound, where it applies.
    pub eigen_bound: Option<f64>,
    /// Theorem 5.1's binary bound, where it applies.
    pub binary_bound: Option<f64>,
}

/// Fig. 1a on the periodic `side`×`side` Ising model `paper_lattice(side, sigma, bias)`: a
/// description of the lattice (log Z, E_π\[s_i\], method) and one point per α. The closed form
/// is exact because the Ising f is quadratic in the bits; on 3×3 the transition matrix and
/// its stationary solve are computed too, as a cross-check (4×4 would need 2^32 entries).
pub fn lattice_bias(side: usize, sigma: f64, bias: f64, alphas: &[f64]) -> Result<(Value, Vec<BiasPoint>)> {
    let model = IsingModel::paper_lattice(side, sigma, bias);
    let target: &dyn Target = &model;
    let space = target.space();
    let d = space.d;
    let pi = probabilities(target)?;
    let states = all_states(space, 1 << 22)?;
    // Mean spin over sites of each state, for E[s_i] (all sites agree by symmetry).
    let mean_s_of: Vec<f64> =
        states.chunks(d).map(|x| x.iter().map(|&c| space.value(c) as f64).sum::<f64>() / d as f64).collect();
    let expect = |p: &[f64]| p.iter().zip(&mean_s_of).map(|(a, b)| a * b).sum::<f64>();
    let log_z = dlp_exact::enumerate(target, &Default::default())?.log_z;
    let lattice = json!({"side": side, "d": d, "states": pi.len(), "log_z": log_z, "mean_s": expect(&pi),
        "method": if side == 3 { "transition matrix + stationary solve, checked against the closed form" } else { "closed form π_α ∝ π·Z_α (§4.2)" }});
    // W in bit coordinates: f = Σ_pairs J s_i s_j + …, s = 2x − 1, so xᵀWx with W_ij = 2J.
    let mut w = vec![0.0; d * d];
    for (i, j, jij) in model.couplings().pairs() {
        w[i * d + j] = 2.0 * jij;
        w[j * d + i] = 2.0 * jij;
    }
    let mut points = Vec::with_capacity(alphas.len());
    for &alpha in alphas {
        let closed = dula_closed_form(target, alpha, None)?;
        let (l1_matrix, matrix_vs_closed, solve_residual) = if side == 3 {
            let (law, res) = dula_law(target, alpha)?;
            (Some(l1_distance(&law, &pi)), Some(l1_distance(&law, &closed)), Some(res))
        } else {
            (None, None, None)
        };
        let b = thm51_bounds(target, &w, alpha)?;
        points.push(BiasPoint {
            side,
            alpha,
            l1: l1_distance(&closed, &pi),
            l1_matrix,
            matrix_vs_closed,
            solve_residual,
            mean_s: expect(&closed),
            hat_z_bound: b.hat_z_bound,
            eigen_bound: b.eigen_bound,
            binary_bound: b.binary_bound,
        });
    }
    Ok((lattice, points))
}

/// Whether every point's bias is within its Theorem 5.1 bounds (relative slack 1e-9).
pub fn bounds_hold(points: &[BiasPoint]) -> bool {
    points.iter().all(|p| {
        p.l1 <= p.hat_z_bound * (1.0 + 1e-9)
            && p.eigen_bound.is_none_or(|b| p.l1 <= b * (1.0 + 1e-9))
            && p.binary_bound.is_none_or(|b| p.l1 <= b * (1.0 + 1e-9))
    })
}

/// Thm 5.1's rate: ln ‖π_α − π‖₁ ≈ c − κ/(2α) for small α with κ = 1; the least-squares κ
/// over the α ≤ 0.05 points of lattice `side`.
pub fn rate_fit(points: &[BiasPoint], side: usize) -> Value {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.side == side && p.alpha <= 0.05 + 1e-12)
        .map(|p| (-0.5 / p.alpha, p.l1.ln()))
        .collect();
    json!({"side": side, "points": pts.len(), "kappa": dlp_core::stats::least_squares_slope(&pts)})
}

/// Fig. 1a: log10 of the bias and the bounds against log10 α, one panel per lattice (largest
/// first). Bounds above 10 are not drawn (the L1 distance never exceeds 2).
pub fn fig1a_figure(points: &[BiasPoint], max_side: usize) -> Figure {
    let curve = |side: usize, label: &str, f: &dyn Fn(&BiasPoint) -> Option<f64>| Series {
        label: label.to_string(),
        points: points
            .iter()
            .filter(|p| p.side == side)
            .filter_map(|p| Some((p.alpha.log10(), f(p).filter(|v| *v <= 10.0)?.log10())))
            .collect(),
    };
    let labels =
        ["‖π_α − π‖₁", "TV", "L1 from matrix", "bound 2(Ẑ−1)", "bound e^{-λmin/2}…", "bound (1+e^{(G−1/α)/2})^D−1"];
    let panel = |side: usize| {
        let series = vec![
            curve(side, labels[0], &|p| Some(p.l1)),
            curve(side, labels[1], &|p| Some(0.5 * p.l1)),
            curve(side, labels[2], &|p| p.l1_matrix.filter(|_| p.alpha >= 0.05)),
            curve(side, labels[3], &|p| Some(p.hat_z_bound)),
            curve(side, labels[4], &|p| p.eigen_bound),
            curve(side, labels[5], &|p| p.binary_bound),
        ];
        let title = format!("{side}x{side} periodic Ising, σ=0.1, b=0.2");
        Panel::lines(title, "log10 α ({0,1} units)", "log10 distance", series, vec![])
    };
    Figure {
        caption: "Fig. 1a: exact DULA bias vs step size, with Theorem 5.1 bounds".into(),
        labels: labels.iter().map(|s| s.to_string()).collect(),
        panels: (3..=max_side).rev().map(panel).collect(),
    }
}

/// One (α, a) point of Fig. 1b left: DULA's ‖π_α − π‖₁ on U_a = −θ²/4 + a·sin θ.
#[derive(Clone, Copy, Debug)]
pub struct SinPoint {
    /// Step size.
    pub alpha: f64,
    /// Distance a from log-quadratic.
    pub a: f64,
    /// ‖π_α − π‖₁ from the transition matrix.
    pub l1: f64,
}

/// One a of Fig. 1b's counterexample U = a·cos(πθ) at α = 1.
pub struct CosRow {
    /// Amplitude.
    pub a: f64,
    /// ‖π_α − π‖₁.
    pub l1: f64,
    /// ‖π_α − spec law‖₁.
    pub to_spec: f64,
    /// DULA's stationary law.
    pub law: Vec<f64>,
    /// The target π.
    pub pi: Vec<f64>,
}

/// What Fig. 1b computes: the sin family's bias, the counterexample, the largest solve
/// residual, and the matrix-vs-closed-form gap at a = 0 (log-quadratic, so they must agree).
pub struct Fig1b {
    /// Points in (α, a) order.
    pub bias: Vec<SinPoint>,
    /// Counterexample rows in a order.
    pub cos_rows: Vec<CosRow>,
    /// Largest ‖π_α P − π_α‖∞ of all solves.
    pub worst_residual: f64,
    /// `{"alpha", "l1_matrix_vs_closed_form"}` at a = 0, per α.
    pub closed_form_gap_at_zero: Vec<Value>,
}

/// Fig. 1b by exact 7×7 transition matrices: every (α, a) of the sin family, and the cos
/// counterexample at α = 1 compared with `spec_law` (spec §4.6).
pub fn fig1b(alphas: &[f64], a_values: &[f64], spec_law: &[f64]) -> Result<Fig1b> {
    let mut out =
        Fig1b { bias: Vec::new(), cos_rows: Vec::new(), worst_residual: 0.0, closed_form_gap_at_zero: Vec::new() };
    for &alpha in alphas {
        for &a in a_values {
            let toy = Curve1d::new(Curve1dFamily::Sin, a);
            let pi = probabilities(&toy)?;
            let (law, res) = dula_law(&toy, alpha)?;
            out.worst_residual = out.worst_residual.max(res);
            if a == 0.0 {
                let gap = l1_distance(&law, &dula_closed_form(&toy, alpha, None)?);
                out.closed_form_gap_at_zero.push(json!({"alpha": alpha, "l1_matrix_vs_closed_form": gap}));
            }
            out.bias.push(SinPoint { alpha, a, l1: l1_distance(&law, &pi) });
        }
    }
    for &a in a_values {
        let toy = Curve1d::new(Curve1dFamily::Cos, a);
        let pi = probabilities(&toy)?;
        let (law, res) = dula_law(&toy, 1.0)?;
        out.worst_residual = out.worst_residual.max(res);
        out.cos_rows.push(CosRow { a, l1: l1_distance(&law, &pi), to_spec: l1_distance(&law, spec_law), law, pi });
    }
    Ok(out)
}

/// Fig. 1b. Left: bias against a for each α. Right: the counterexample's bias against a
/// (DULA's law stays put while π moves).
pub fn fig1b_figure(alphas: &[f64], bias: &[SinPoint], cos_rows: &[CosRow]) -> Figure {
    let labels: Vec<String> = alphas.iter().map(|a| format!("DULA α = {a}")).collect();
    let series = labels
        .iter()
        .zip(alphas)
        .map(|(l, &alpha)| Series {
            label: l.clone(),
            points: bias.iter().filter(|r| r.alpha == alpha).map(|r| (r.a, r.l1)).collect(),
        })
        .collect();
    let cos =
        Series { label: labels[labels.len() - 1].clone(), points: cos_rows.iter().map(|r| (r.a, r.l1)).collect() };
    Figure {
        caption: "Fig. 1b: exact DULA bias on 1-d targets near log-quadratic".into(),
        labels: labels.clone(),
        panels: vec![
            Panel::lines(
                "U_a = −θ²/4 + a sin θ on {−3..3}",
                "a (distance from log-quadratic)",
                "‖π_α − π‖₁",
                series,
                vec![],
            ),
            Panel::lines("counterexample U = a cos(πθ) (∇U = 0 on Z)", "a", "‖π_α − π‖₁", vec![cos], vec![]),
        ],
    }
}
