//! Times `dlp_exact::spectrum` on stochastic matrices of 1024, 2048 and 4096 states for the
//! README's dependency notes. A measurement, not a test; run it on one core:
//! `RAYON_NUM_THREADS=1 taskset -c 0 cargo run --release -p dlp-exact --example eigen_times --
//! [N ...] [--general-max N] [--tol T] [--budget M] [--kinds gibbs,sweep,banded] [--band W]
//! [--nalgebra]`.
//!
//! Three kernels per N (a binary model with d = log2 N sites, random fields h_i ~ U(−½, ½)
//! and couplings J_ij ~ U(−0.6, 0.6), π(x) ∝ exp(Σ h_i s_i + Σ_{i<j} J_ij s_i s_j), s = 2x − 1):
//! * `gibbs`: random-scan Gibbs, P = (1/d) Σ_i K_i (reversible; d + 1 non-zeros a row);
//! * `sweep`: systematic-scan Gibbs, P = K_1 K_2 ⋯ K_d (non-reversible, dense);
//! * `banded`: a random non-reversible stochastic matrix with support |i − j| ≤ W (16) and
//!   weights U(½, 3/2) (π by GTH);
//! * `dula-bnn` (N = 1024 only, not in the default list): DULA (α = 0.3) on a binary BNN
//!   with p = 1 input, H = 3 hidden units (d = 10) and 9 data points, the kind of dense
//!   non-reversible matrix on which nalgebra's Schur did not finish in 600 s.
//!
//! For each: `symmetric_eigenvalues` of D^{1/2} P D^{−1/2} (gibbs only), `general_eigenvalues`
//! of P (N ≤ --general-max), and `slem_iterative`, with its products and its distance to the
//! dense SLEM (symmetric for gibbs, general otherwise). Matrix construction is not timed.
//! `--nalgebra` adds nalgebra's solvers (what `dlp_exact::matrix` used) for N ≤ 2048.

use dlp_exact::spectrum::{general_eigenvalues, slem_iterative, symmetric_eigenvalues};
use nalgebra::DMatrix;
use rand::RngExt;
use std::io::Write;
use std::time::Instant;

/// Conditional probabilities P(x_i = 1 | x_−i) for every state x (row-major n × d) and the
/// normalised law π of the random binary model on d sites.
fn binary_model(d: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = dlp_core::setup_rng(seed);
    let h: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
    let mut j = vec![0.0; d * d];
    for a in 0..d {
        for b in 0..a {
            let v = 1.2 * (rng.random::<f64>() - 0.5);
            j[a * d + b] = v;
            j[b * d + a] = v;
        }
    }
    let n = 1usize << d;
    let spin = |x: usize, i: usize| if x >> i & 1 == 1 { 1.0 } else { -1.0 };
    let mut p1 = vec![0.0; n * d];
    let mut logpi = vec![0.0; n];
    for x in 0..n {
        let mut lp = 0.0;
        for a in 0..d {
            let field: f64 = h[a] + (0..d).filter(|&b| b != a).map(|b| j[a * d + b] * spin(x, b)).sum::<f64>();
            // log-odds of s_a = +1 against −1 is 2·field.
            p1[x * d + a] = 1.0 / (1.0 + (-2.0 * field).exp());
            lp += spin(x, a) * (h[a] + 0.5 * (field - h[a]));
        }
        logpi[x] = lp;
    }
    let top = logpi.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = logpi.iter().map(|l| (l - top).exp()).collect();
    let z: f64 = w.iter().sum();
    (p1, w.iter().map(|v| v / z).collect())
}

/// Random-scan Gibbs: from x pick a site uniformly and redraw it from its conditional.
fn random_scan(d: usize, p1: &[f64]) -> DMatrix<f64> {
    let n = 1usize << d;
    let mut p = DMatrix::zeros(n, n);
    for x in 0..n {
        for i in 0..d {
            let q = p1[x * d + i];
            p[(x, x | 1 << i)] += q / d as f64;
            p[(x, x & !(1 << i))] += (1.0 - q) / d as f64;
        }
    }
    p
}

/// Systematic scan: row x is the law after redrawing sites 0, 1, …, d − 1 in turn from x.
fn sweep(d: usize, p1: &[f64]) -> DMatrix<f64> {
    let n = 1usize << d;
    let mut p = DMatrix::zeros(n, n);
    let mut dist = vec![0.0; n];
    for x in 0..n {
        dist.fill(0.0);
        dist[x] = 1.0;
        for i in 0..d {
            for y in (0..n).filter(|y| y >> i & 1 == 0) {
                let y1 = y | 1 << i;
                let t = dist[y] + dist[y1];
                if t != 0.0 {
                    // The conditional of site i does not depend on x_i: same for y and y1.
                    let q = p1[y * d + i];
                    dist[y1] = t * q;
                    dist[y] = t * (1.0 - q);
                }
            }
        }
        for (y, &v) in dist.iter().enumerate() {
            p[(x, y)] = v;
        }
    }
    p
}

/// Random stochastic matrix with support |i − j| ≤ w.
fn banded(n: usize, w: usize, seed: u64) -> DMatrix<f64> {
    let mut rng = dlp_core::setup_rng(seed);
    let mut p = DMatrix::zeros(n, n);
    for i in 0..n {
        let (lo, hi) = (i.saturating_sub(w), (i + w).min(n - 1));
        let row: Vec<f64> = (lo..=hi).map(|_| 0.5 + rng.random::<f64>()).collect();
        let s: f64 = row.iter().sum();
        for (k, v) in row.iter().enumerate() {
            p[(i, lo + k)] = v / s;
        }
    }
    p
}

/// DULA's transition matrix (α = 0.3) on a 1024-state binary BNN, data from a fixed LCG.
fn dula_bnn() -> DMatrix<f64> {
    let mut s = 12345u64;
    let mut u = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let (p, h, n) = (1, 3, 9);
    let x: Vec<f64> = (0..n * p).map(|_| 3.0 * u() - 1.5).collect();
    let y: Vec<f64> = (0..n).map(|_| (u() < 0.5) as u32 as f64).collect();
    let model = dlp_models::BnnModel::new((p + 2) * h + 1, p, h, 4.0, x, y).expect("model");
    let params = dlp_samplers::SamplerParams { step_size: Some(0.3), ..Default::default() };
    let sampler = dlp_samplers::build_sampler("dula", &params).expect("sampler");
    dlp_exact::matrix::kernel_matrix(&model, sampler.as_ref(), 0).expect("kernel")
}

/// Max |λ| over a spectrum without its eigenvalue nearest 1.
fn slem_of(mut ev: Vec<nalgebra::Complex<f64>>) -> f64 {
    if let Some(k) = (0..ev.len()).min_by(|&a, &b| (ev[a] - 1.0).norm().total_cmp(&(ev[b] - 1.0).norm())) {
        ev.remove(k);
    }
    ev.iter().map(|z| z.norm()).fold(0.0, f64::max)
}

fn row(n: usize, kind: &str, method: &str, secs: f64, matvecs: &str, slem: f64, note: &str) {
    println!("{n:>5}  {kind:<7} {method:<10} {secs:>9.3}  {matvecs:>8}  {slem:.12}  {note}");
    std::io::stdout().flush().ok();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|k| args.get(k + 1)).cloned();
    let general_max: usize = flag("--general-max").and_then(|v| v.parse().ok()).unwrap_or(4096);
    let tol: f64 = flag("--tol").and_then(|v| v.parse().ok()).unwrap_or(1e-10);
    let budget: usize = flag("--budget").and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let kinds = flag("--kinds").unwrap_or_else(|| "gibbs,sweep,banded".into());
    let with_nalgebra = args.iter().any(|a| a == "--nalgebra");
    let band: usize = flag("--band").and_then(|v| v.parse().ok()).unwrap_or(16);
    let mut sizes: Vec<usize> = Vec::new();
    let mut skip = false;
    for a in &args {
        if skip {
            skip = false;
        } else if a.starts_with("--") {
            skip = a != "--nalgebra";
        } else if let Ok(n) = a.parse() {
            sizes.push(n);
        }
    }
    if sizes.is_empty() {
        sizes = vec![1024, 2048, 4096];
    }
    println!("    n  kind    method       seconds   matvecs  slem            note");
    for &n in &sizes {
        assert!(n.is_power_of_two() && n >= 4, "N must be a power of two");
        let d = n.trailing_zeros() as usize;
        let (p1, pi_model) = binary_model(d, 2026);
        for kind in kinds.split(',') {
            let (p, pi) = match kind {
                "gibbs" => (random_scan(d, &p1), pi_model.clone()),
                "sweep" => (sweep(d, &p1), pi_model.clone()),
                "banded" => {
                    let p = banded(n, band, 7);
                    let pi = dlp_exact::matrix::stationary_gth(&p).expect("irreducible");
                    (p, pi)
                }
                "dula-bnn" if n == 1024 => {
                    let p = dula_bnn();
                    let pi = dlp_exact::matrix::stationary(&p).expect("irreducible");
                    (p, pi)
                }
                "dula-bnn" => continue,
                other => panic!("unknown kind {other}"),
            };
            let mut dense: Option<f64> = None;
            if kind == "gibbs" {
                let r: Vec<f64> = pi.iter().map(|v| v.sqrt()).collect();
                let s = DMatrix::from_fn(n, n, |i, j| p[(i, j)] * r[i] / r[j]);
                let t = Instant::now();
                let ev = symmetric_eigenvalues(&s).expect("symmetric eigenvalues");
                let secs = t.elapsed().as_secs_f64();
                let slem = ev[1].abs().max(ev[n - 1].abs());
                row(n, kind, "symmetric", secs, "-", slem, &format!("λ₁ − 1 = {:.1e}", ev[0] - 1.0));
                dense = Some(slem);
                if with_nalgebra && n <= 2048 {
                    let t = Instant::now();
                    let mut ev: Vec<f64> = s.symmetric_eigenvalues().iter().copied().collect();
                    let secs = t.elapsed().as_secs_f64();
                    ev.sort_by(|a, b| b.total_cmp(a));
                    let sl = ev[1].abs().max(ev[n - 1].abs());
                    row(n, kind, "nalg-sym", secs, "-", sl, &format!("|Δ faer| = {:.1e}", (sl - slem).abs()));
                }
            }
            if n <= general_max {
                let t = Instant::now();
                let ev = general_eigenvalues(&p);
                let secs = t.elapsed().as_secs_f64();
                match ev {
                    Ok(ev) => {
                        let slem = slem_of(ev);
                        let note = dense.map_or(String::new(), |s| format!("|Δ symmetric| = {:.1e}", (slem - s).abs()));
                        row(n, kind, "general", secs, "-", slem, &note);
                        dense.get_or_insert(slem);
                    }
                    Err(e) => row(n, kind, "general", secs, "-", f64::NAN, &e),
                }
            }
            if with_nalgebra && n <= 2048 {
                let t = Instant::now();
                let sl = slem_of(p.complex_eigenvalues().iter().copied().collect());
                let secs = t.elapsed().as_secs_f64();
                let note = dense.map_or(String::new(), |s| format!("|Δ faer| = {:.1e}", (sl - s).abs()));
                row(n, kind, "nalg-gen", secs, "-", sl, &note);
            }
            let t = Instant::now();
            let e = slem_iterative(&p, &pi, tol, budget);
            let secs = t.elapsed().as_secs_f64();
            let note = format!(
                "residual {:.1e}, {}{}",
                e.residual,
                if e.converged { "converged" } else { "NOT converged" },
                dense.map_or(String::new(), |s| format!(", |Δ dense| = {:.1e}", (e.slem - s).abs()))
            );
            row(n, kind, "iterative", secs, &e.matvecs.to_string(), e.slem, &note);
        }
    }
}
