//! Exact checks of spec §9.1 on enumerable models (no randomness in what is tested).

mod common;
use common::*;
use dlp_core::TargetExt;
use dlp_core::{Space, Target};
use dlp_gof::gfksd::{Relaxation, rbf_stein_kernel, surrogate_scores};
use dlp_gof::mmd::mmd_statistic;
use dlp_gof::*;

fn all_states(space: &Space) -> Vec<u32> {
    let n = space.n_states().unwrap() as usize;
    let mut xs = vec![0u32; n * space.d];
    for (s, row) in xs.chunks_mut(space.d).enumerate() {
        space.state_of_index(s as u64, row);
    }
    xs
}

fn probs(t: &dyn Target, xs: &[u32]) -> Vec<f64> {
    let mut l = vec![0.0; xs.len() / t.space().d];
    t.log_density_batch(xs, &mut l).unwrap();
    let m = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = l.iter().map(|v| (v - m).exp()).sum();
    l.iter().map(|v| (v - m).exp() / z).collect()
}

fn sym(mix: &mut Mix, d: usize, scale: f64) -> Vec<f64> {
    let mut j = vec![0.0; d * d];
    for a in 0..d {
        for b in a + 1..d {
            let w = scale * mix.normal();
            j[a * d + b] = w;
            j[b * d + a] = w;
        }
    }
    j
}

/// Random small models of every kind, K = 2, 3, 4, 5, with at most 4096 states.
fn zoo() -> Vec<(String, FnTarget)> {
    let mut mix = Mix(11);
    let mut v: Vec<(String, FnTarget)> = Vec::new();
    let d = 4;
    let (j, b) = (sym(&mut mix, d, 0.6), (0..d).map(|_| 0.5 * mix.normal()).collect());
    v.push(("ising spin".into(), ising(Space::spin(d), j, b)));
    let (j, b) = (sym(&mut mix, 5, 0.6), (0..5).map(|_| 0.5 * mix.normal()).collect());
    v.push(("ising binary".into(), ising(Space::binary(5), j, b)));
    for (d, k) in [(3, 3), (3, 4), (2, 5), (4, 3)] {
        let j = sym(&mut mix, d, 0.8);
        let h = (0..d * k).map(|_| 0.5 * mix.normal()).collect();
        v.push((format!("potts K={k}"), potts(d, k, j, h)));
    }
    let w = (0..8).map(|_| mix.normal()).collect();
    v.push(("rbm".into(), rbm(Space::binary(4), w, (0..4).map(|_| mix.normal()).collect(), vec![0.3, -0.2])));
    // Independent categorical with its own value list (order defines the cyclic shift).
    let logits: Vec<f64> = (0..9).map(|_| mix.normal()).collect();
    let sp = Space { d: 3, kind: dlp_core::DomainKind::Categorical, values: vec![5, -2, 7] };
    let sp2 = sp.clone();
    v.push((
        "categorical".into(),
        FnTarget {
            space: sp,
            f: Box::new(move |x| {
                (0..3).map(|i| logits[i * 3 + sp2.index_of_value(x[i] as i64).unwrap() as usize]).sum()
            }),
        },
    ));
    let sp = Space::categorical(3, 4);
    let lp = (0..64).map(|_| 1.5 * mix.normal()).collect();
    v.push(("table".into(), table(sp, lp)));
    v
}

#[test]
fn stein_identity_symmetry_psd_and_discrepancy_on_every_small_model() {
    for (name, t) in zoo() {
        let sp = t.space().clone();
        let xs = all_states(&sp);
        let n = xs.len() / sp.d;
        let p = probs(&t, &xs);
        let s = difference_scores(&t, &xs).unwrap();
        let m = kdsd_matrix(&sp, &xs, &s, &BaseKernel::default());
        let max = (0..n).flat_map(|a| (0..n).map(move |b| (a, b))).map(|(a, b)| m.get(a, b).abs()).fold(0.0, f64::max);
        let mut worst_wrong: f64 = 0.0;
        for y in 0..n {
            let e: f64 = (0..n).map(|x| p[x] * m.get(x, y)).sum();
            assert!(e.abs() <= 1e-12 * max, "{name}: sum_x p(x) kappa(x, y={y}) = {e}");
            if sp.k() > 2 {
                let wrong: f64 = (0..n)
                    .map(|x| {
                        p[x] * naive_stein(&t, 1.0, &xs[x * sp.d..(x + 1) * sp.d], &xs[y * sp.d..(y + 1) * sp.d], true)
                    })
                    .sum();
                worst_wrong = worst_wrong.max(wrong.abs());
            }
        }
        if sp.k() > 2 {
            assert!(worst_wrong > 1e-3, "{name}: the fwd-for-bwd variant should break the Stein identity");
        }
        // The fast kernel equals the literal transcription on a spread of pairs.
        for a in (0..n).step_by(7) {
            for b in (0..n).step_by(5) {
                let naive = naive_stein(&t, 1.0, &xs[a * sp.d..(a + 1) * sp.d], &xs[b * sp.d..(b + 1) * sp.d], false);
                assert!((naive - m.get(a, b)).abs() <= 1e-12 * max, "{name}: fast vs naive at ({a},{b})");
            }
        }
        let full = nalgebra::DMatrix::from_fn(n, n, |a, b| m.get(a, b));
        assert_eq!(full, full.transpose(), "{name}: kappa not symmetric");
        let eig = nalgebra::SymmetricEigen::new(full).eigenvalues;
        let (lo, hi) = (eig.min(), eig.max());
        assert!(lo >= -1e-10 * hi, "{name}: smallest eigenvalue {lo}, largest {hi}");

        let disc = |q: &[f64]| -> f64 { (0..n).map(|a| (0..n).map(|b| q[a] * q[b] * m.get(a, b)).sum::<f64>()).sum() };
        assert!(disc(&p).abs() <= 1e-12 * max, "{name}: D(p||p) = {}", disc(&p));
        let mut mix = Mix(5);
        for _ in 0..3 {
            let mut q: Vec<f64> = (0..n).map(|_| mix.unif() + 0.05).collect();
            let z: f64 = q.iter().sum();
            q.iter_mut().for_each(|v| *v /= z);
            assert!(disc(&q) > 1e-6, "{name}: D(q||p) = {} for q != p", disc(&q));
        }

        // Adding a constant to the log-density changes nothing.
        let shifted = FnTarget { space: sp.clone(), f: Box::new(move |x| (t.f)(x) + 123.25) };
        let s2 = difference_scores(&shifted, &xs).unwrap();
        let m2 = kdsd_matrix(&sp, &xs, &s2, &BaseKernel::default());
        for a in 0..n {
            for b in 0..n {
                assert!((m.get(a, b) - m2.get(a, b)).abs() <= 1e-12 * max, "{name}: shift changed kappa");
            }
        }
    }
}

#[test]
fn hamming_linear_kernel_also_satisfies_the_stein_identity() {
    let (name, t) = zoo().into_iter().nth(3).unwrap();
    let sp = t.space().clone();
    let xs = all_states(&sp);
    let n = xs.len() / sp.d;
    let p = probs(&t, &xs);
    let s = difference_scores(&t, &xs).unwrap();
    let m = kdsd_matrix(&sp, &xs, &s, &BaseKernel::HammingLinear);
    for y in 0..n {
        let e: f64 = (0..n).map(|x| p[x] * m.get(x, y)).sum();
        assert!(e.abs() < 1e-12 * 100.0, "{name}: {e}");
    }
}

#[test]
fn u_statistic_is_unbiased_over_all_samples_of_size_three() {
    // 9-state Potts: every ordered triple (729) weighted by q(x1)q(x2)q(x3).
    let t = potts(2, 3, vec![0.0, 0.7, 0.7, 0.0], vec![0.2, -0.1, 0.4, 0.0, 0.3, -0.5]);
    let sp = t.space().clone();
    let xs = all_states(&sp);
    let n = 9;
    let q = [0.05, 0.2, 0.1, 0.15, 0.05, 0.1, 0.1, 0.05, 0.2];
    let s = difference_scores(&t, &xs).unwrap();
    let m = kdsd_matrix(&sp, &xs, &s, &BaseKernel::default());
    let pop: f64 = (0..n)
        .map(|a| {
            (0..n)
                .map(|b| q[a] * q[b] * naive_stein(&t, 1.0, &xs[a * 2..a * 2 + 2], &xs[b * 2..b * 2 + 2], false))
                .sum::<f64>()
        })
        .sum();
    let mut expect_u = 0.0;
    let mut expect_v = 0.0;
    for a in 0..n {
        for b in 0..n {
            for c in 0..n {
                let sample: Vec<u32> = [a, b, c].iter().flat_map(|&i| xs[i * 2..i * 2 + 2].to_vec()).collect();
                let sc = difference_scores(&t, &sample).unwrap();
                let mm = kdsd_matrix(&sp, &sample, &sc, &BaseKernel::default());
                let w = q[a] * q[b] * q[c];
                expect_u += w * mm.u_statistic();
                expect_v += w * mm.v_statistic();
                assert!(mm.v_statistic() >= -1e-12);
                let u_from_v = (9.0 * mm.v_statistic() - mm.trace()) / 6.0;
                assert!((u_from_v - mm.u_statistic()).abs() < 1e-12);
            }
        }
    }
    assert!((expect_u - pop).abs() < 1e-12, "E U = {expect_u}, D = {pop}");
    assert!(pop > 1e-3, "q should differ from p");
    assert!((expect_v - pop).abs() > 1e-3, "V is biased (sanity check that the test can fail)");
    let _ = m;
}

#[test]
fn v_statistics_are_nonnegative_on_random_samples() {
    let mut mix = Mix(99);
    let (_, t) = zoo().into_iter().nth(2).unwrap();
    let sp = t.space().clone();
    for _ in 0..20 {
        let xs: Vec<u32> = (0..15 * sp.d).map(|_| (mix.next() % sp.k() as u64) as u32).collect();
        let ys: Vec<u32> = (0..7 * sp.d).map(|_| (mix.next() % sp.k() as u64) as u32).collect();
        let s = difference_scores(&t, &xs).unwrap();
        assert!(kdsd_matrix(&sp, &xs, &s, &BaseKernel::default()).v_statistic() >= -1e-12);
        assert!(mmd_statistic(&sp, &xs, &ys, 1.0, Statistic::V).unwrap() >= -1e-12);
    }
}

/// ∫ ρ(x) κ_ρ(x, y) dx over ℝ (d = 1) by the trapezoid rule on [−14, 14].
fn quadrature(surrogate: &Surrogate, log_rho: &dyn Fn(f64) -> f64, y: f64, h: f64) -> (f64, f64) {
    let step = 1e-3;
    let npts = (28.0 / step) as usize + 1;
    let pts: Vec<f64> = (0..npts).map(|i| -14.0 + i as f64 * step).collect();
    let (s, _) = surrogate_scores(surrogate, &pts, 1);
    let (sy, _) = surrogate_scores(surrogate, &[y], 1);
    let (mut num, mut z, mut scale) = (0.0, 0.0, 0.0f64);
    for (i, &x) in pts.iter().enumerate() {
        let w = if i == 0 || i == npts - 1 { 0.5 } else { 1.0 };
        let r = log_rho(x).exp();
        let k = rbf_stein_kernel(&[x], &[y], &[s[i]], &sy, h);
        num += w * r * k;
        z += w * r;
        scale = scale.max((r * k).abs());
    }
    (num / z, scale)
}

#[test]
fn gfksd_stein_kernel_integrates_to_zero_under_both_surrogates() {
    let relaxed = Surrogate::Relaxed(Relaxation::Ising { values: (-1.0, 1.0), j: vec![0.0], b: vec![1.3] });
    let rbm = Surrogate::Relaxed(Relaxation::Rbm {
        values: (0.0, 1.0),
        w: vec![1.5, -2.0],
        b: vec![0.4],
        c: vec![-0.3, 0.5],
    });
    let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
    let sp = |t: f64| (1.0 + t.exp()).ln();
    type LogRho = Box<dyn Fn(f64) -> f64>;
    let cases: Vec<(&str, Surrogate, LogRho)> = vec![
        ("gaussian", Surrogate::Gaussian, Box::new(|x: f64| -0.5 * x * x)),
        ("relaxed ising", relaxed, Box::new(move |x: f64| -0.5 * x * x + 1.3 * (2.0 * sig(x) - 1.0))),
        (
            "relaxed rbm",
            rbm,
            Box::new(move |x: f64| -0.5 * x * x + 0.4 * sig(x) + sp(-0.3 + 1.5 * sig(x)) + sp(0.5 - 2.0 * sig(x))),
        ),
    ];
    for (name, s, lr) in &cases {
        for (y, h) in [(0.3, 1.0), (-1.7, 0.6), (2.5, 2.0)] {
            let (v, scale) = quadrature(s, lr.as_ref(), y, h);
            assert!(v.abs() < 1e-9 * scale.max(1.0), "{name}: integral {v} at y = {y}, h = {h}");
        }
    }
    // The check can fail: a wrong score (the negated one) does not integrate to zero.
    let pts: Vec<f64> = (0..28001).map(|i| -14.0 + i as f64 * 1e-3).collect();
    let bad: f64 =
        pts.iter().map(|&x| (-0.5 * x * x).exp() * rbf_stein_kernel(&[x], &[0.3], &[x], &[-0.3], 1.0)).sum::<f64>();
    assert!(bad.abs() > 1e-3);
}

#[test]
fn gfksd_is_invariant_to_a_constant_in_the_log_density() {
    let t = ising(Space::spin(3), vec![0.0, 0.4, 0.0, 0.4, 0.0, -0.2, 0.0, -0.2, 0.0], vec![0.1, 0.0, -0.3]);
    let mut mix = Mix(4);
    let xs: Vec<u32> = (0..60).map(|_| (mix.next() % 2) as u32).collect();
    let opts = GfksdOptions {
        surrogate: Surrogate::Gaussian,
        bandwidth: Bandwidth::Median,
        null: NullTest { statistic: Statistic::U, bootstrap: Bootstrap::Multinomial, reps: 200, seed: 3 },
        jitter: None,
    };
    let a = gfksd_test(&t, &xs, &opts).unwrap();
    let shifted = FnTarget { space: t.space.clone(), f: Box::new(move |x| (t.f)(x) - 40.0) };
    let b = gfksd_test(&shifted, &xs, &opts).unwrap();
    assert!((a.null.statistic - b.null.statistic).abs() < 1e-12 * a.null.statistic.abs().max(1e-3));
    assert_eq!(a.null.p_value, b.null.p_value);
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let t = potts(4, 3, vec![0.0; 16], (0..12).map(|i| 0.1 * i as f64).collect());
    let mut mix = Mix(8);
    let xs: Vec<u32> = (0..4 * 40).map(|_| (mix.next() % 3) as u32).collect();
    let ys: Vec<u32> = (0..4 * 30).map(|_| (mix.next() % 3) as u32).collect();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let null = NullTest { statistic: Statistic::U, bootstrap: Bootstrap::Multinomial, reps: 37, seed: 9 };
            let k = kdsd_test(&t, &xs, &KdsdOptions { kernel: BaseKernel::default(), null }).unwrap().null;
            let g = gfksd_test(
                &t,
                &xs,
                &GfksdOptions { surrogate: Surrogate::Gaussian, bandwidth: Bandwidth::Median, null, jitter: None },
            )
            .unwrap()
            .null;
            let m = mmd::mmd_test(
                t.space(),
                &xs,
                &ys,
                &MmdOptions { scale: 1.0, statistic: Statistic::U, reps: 37, seed: 9 },
            )
            .unwrap();
            let e = exact_draws(&t, 50, 9).unwrap();
            let gb = gibbs_draws(&t, 20, 5, 9).unwrap();
            (k, g, m.replicates, e, gb)
        })
    };
    assert_eq!(run(1), run(2));
}

#[test]
fn exact_draws_follow_the_enumerated_law() {
    let t = potts(2, 3, vec![0.0, 0.9, 0.9, 0.0], vec![0.5, -0.1, 0.0, 0.0, 0.3, -0.5]);
    let xs = all_states(t.space());
    let p = probs(&t, &xs);
    let m = 20000;
    let draws = exact_draws(&t, m, 1).unwrap();
    let gibbs = gibbs_draws(&t, 4000, 10, 2).unwrap();
    for (label, ds, mm) in [("exact", &draws, m), ("gibbs", &gibbs, 4000)] {
        let mut counts = [0usize; 9];
        for row in ds.chunks(2) {
            counts[t.space().index_of_state(row) as usize] += 1;
        }
        for s in 0..9 {
            // 5 standard deviations per cell: false-failure rate < 18 × 6e-7 for both samplers.
            let sd = (p[s] * (1.0 - p[s]) / mm as f64).sqrt();
            let f = counts[s] as f64 / mm as f64;
            assert!((f - p[s]).abs() < 5.0 * sd, "{label}: state {s}: {f} vs {}", p[s]);
        }
    }
}
