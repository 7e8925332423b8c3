//! E_π[s̄] and DULA's E_{π_α}[s̄] (s̄ the site-averaged spin) of an Ising model in one
//! enumeration, the truth of the reproductions' Figs. 3 and 7 (spec §4.1–§4.2).
//!
//! Why beside [`crate::DulaLaw`], which gives E_{π_α} for any target: this is written from
//! spec §4.2 with the model's local fields (log Z_α(x) = Σ_i softplus(ℓ_i), ℓ_i =
//! −s_i·h_i(x) − 1/(2α)), not from the gradient, and reweights π's enumeration by Z_α, so one
//! pass over the 2²⁵ states of the 5×5 lattice gives both means; on the paper's lattice (equal
//! couplings and fields) ℓ_i depends only on s_i and the number of +1 neighbours, so the
//! softplus values come from a table. The two agree to ~1e-14 (tested below), not to the last
//! bit, and the published fig7 truths are this one's.

use crate::{EnumOptions, ExactError, enumerate_with};
use dlp_core::math::softplus;
use dlp_models::IsingModel;

/// (E_π\[s̄\], E_{π_α}\[s̄\]) of `model` and DULA at step size `alpha` (no preconditioner), s̄
/// the mean of the site values (±1 for spins), by one enumeration.
pub fn ising_mean_and_dula_mean(model: &IsingModel, alpha: f64) -> Result<(f64, f64), ExactError> {
    let d = model.d();
    let w = model.neighbour_weights();
    let uniform = w.iter().all(|&v| v == w[0]) && model.fields().iter().all(|&b| b == model.fields()[0]);
    let max_deg = (0..d).map(|i| model.neighbours_of(i).0.len()).max().unwrap_or(0);
    // table[x_i][ups] for the uniform case: h = b + J·(2·ups − deg) for a site of degree deg.
    let table = |deg: usize| -> Vec<[f64; 2]> {
        (0..=deg)
            .map(|ups| {
                let h = model.fields()[0] + w.first().copied().unwrap_or(0.0) * (2.0 * ups as f64 - deg as f64);
                [softplus(h - 0.5 / alpha), softplus(-h - 0.5 / alpha)]
            })
            .collect()
    };
    let tables: Vec<Vec<[f64; 2]>> = (0..=max_deg).map(table).collect();
    let log_z_alpha = |x: &[u32]| -> f64 {
        (0..d)
            .map(|i| {
                if uniform {
                    let ns = model.neighbours_of(i).0;
                    let ups = ns.iter().filter(|&&j| x[j as usize] == 1).count();
                    tables[ns.len()][ups][x[i] as usize]
                } else {
                    softplus(-model.value_of(x[i]) * model.local_field(x, i) - 0.5 / alpha)
                }
            })
            .sum::<f64>()
    };
    let mean = |x: &[u32]| x.iter().map(|&c| model.value_of(c)).sum::<f64>() / d as f64;
    let h_z = |x: &[u32]| log_z_alpha(x).exp();
    let h_zs = |x: &[u32]| log_z_alpha(x).exp() * mean(x);
    let e = enumerate_with(model, &EnumOptions { pair_moments: false, keep_probs: false }, &[&h_z, &h_zs])?;
    let mean_s = e.mean_value.iter().sum::<f64>() / d as f64;
    Ok((mean_s, e.expectations[1] / e.expectations[0]))
}

// Checked against `DulaLaw` (transition matrices' closed form), hence `matrices`.
#[cfg(all(test, feature = "matrices"))]
mod tests {
    use super::*;
    use crate::{DulaLaw, enumerate};
    use dlp_core::DomainKind;

    /// Against the gradient-based [`DulaLaw`] and a plain enumeration of π, on the paper's
    /// lattice (table path) and on a lattice with unequal fields (local-field path), and
    /// E_{π_α} → E_π as α → 0.
    #[test]
    fn agrees_with_the_dula_law_and_plain_enumeration() {
        let opts = EnumOptions { pair_moments: false, keep_probs: false };
        let mut uneven = vec![0.2; 9];
        uneven[4] = -0.7;
        let models = [
            IsingModel::paper_lattice(3, 0.3, 0.2),
            IsingModel::paper_lattice(4, 0.1, 0.2),
            IsingModel::lattice(&[3, 3], true, 0.25, uneven, DomainKind::Spin).unwrap(),
        ];
        for model in &models {
            let d = model.d() as f64;
            let (m, dm) = ising_mean_and_dula_mean(model, 0.2).unwrap();
            let want_m = enumerate(model, &opts).unwrap().mean_value.iter().sum::<f64>() / d;
            let law = DulaLaw::new(model, 0.2, None);
            let want_dm = enumerate(&law, &opts).unwrap().mean_value.iter().sum::<f64>() / d;
            assert!((m - want_m).abs() < 1e-13 && (dm - want_dm).abs() < 1e-12, "{m} {want_m} {dm} {want_dm}");
            // DULA's bias is real at α = 0.2 (spec §4.2: 0.06 on the 5×5 lattice) and vanishes as α → 0.
            assert!((dm - m).abs() > 1e-3, "{dm} {m}");
            let (_, dm0) = ising_mean_and_dula_mean(model, 1e-3).unwrap();
            assert!((dm0 - m).abs() < 1e-9, "{dm0} {m}");
        }
    }
}
