//! Type-I calibration (spec §9.2) on exact samples (enumeration) from the spec's two models:
//! a 10-spin Ising cycle (J = 0.3 on ring edges, b_i = 0.1·(−1)^i) and a 3-state Potts
//! 6-cycle (J = 0.5 on ring edges, h_i[k] = 0.2·((i+k) mod 3)).
//!
//! The default run is small (R = 40); the R = 500 version of every row of the spec's table is
//! `#[ignore]`d for `just test-stat`.

mod common;
use common::*;
use dlp_core::{Space, Target};
use dlp_gof::reference::{draws_from_probabilities, enumerate_probabilities};
use dlp_gof::*;

fn ring(d: usize, w: f64) -> Vec<f64> {
    let mut j = vec![0.0; d * d];
    for i in 0..d {
        let l = (i + 1) % d;
        j[i * d + l] = w;
        j[l * d + i] = w;
    }
    j
}

fn ising_cycle() -> FnTarget {
    ising(Space::spin(10), ring(10, 0.3), (0..10).map(|i| if i % 2 == 0 { 0.1 } else { -0.1 }).collect())
}

fn potts_cycle() -> FnTarget {
    let h = (0..6).flat_map(|i| (0..3).map(move |k| 0.2 * ((i + k) % 3) as f64)).collect();
    potts(6, 3, ring(6, 0.5), h)
}

#[derive(Clone, Copy, Debug)]
enum Test {
    Kdsd(Statistic, Bootstrap),
    Gfksd(bool),
    Mmd,
    KdsdWrongShift,
}

/// Rejections at α = 0.05 among `reps` replications of n = 100 exact samples, B replicates.
fn rejections(t: &FnTarget, test: Test, reps: usize, b: usize) -> usize {
    let probs = enumerate_probabilities(t, 1 << 20).unwrap().unwrap();
    let sp = t.space().clone();
    let d = sp.d;
    let mut count = 0;
    for r in 0..reps {
        // Samples use seed 10⁶ + r; the test's streams use seed r (distinct families anyway).
        let xs = draws_from_probabilities(&sp, &probs, 100, 1_000_000 + r as u64);
        let null = |s, bt| NullTest { statistic: s, bootstrap: bt, reps: b, seed: r as u64 };
        let p = match test {
            Test::Kdsd(s, bt) => {
                kdsd_test(t, &xs, &KdsdOptions { kernel: BaseKernel::default(), null: null(s, bt) })
                    .unwrap()
                    .null
                    .p_value
            }
            Test::Gfksd(relaxed) => {
                let surrogate = if relaxed {
                    Surrogate::Relaxed(Relaxation::Ising {
                        values: (-1.0, 1.0),
                        j: ring(10, 0.3),
                        b: (0..10).map(|i| if i % 2 == 0 { 0.1 } else { -0.1 }).collect(),
                    })
                } else {
                    Surrogate::Gaussian
                };
                let opts = GfksdOptions {
                    surrogate,
                    bandwidth: Bandwidth::Median,
                    null: null(Statistic::U, Bootstrap::Multinomial),
                    jitter: None,
                };
                gfksd_test(t, &xs, &opts).unwrap().null.p_value
            }
            Test::Mmd => {
                let ys = draws_from_probabilities(&sp, &probs, 100, 2_000_000 + r as u64);
                mmd::mmd_test(
                    &sp,
                    &xs,
                    &ys,
                    &MmdOptions { scale: 1.0, statistic: Statistic::U, reps: b, seed: r as u64 },
                )
                .unwrap()
                .p_value
            }
            Test::KdsdWrongShift => {
                let full: Vec<f64> = (0..100)
                    .flat_map(|a| (0..100).map(move |c| (a, c)))
                    .map(|(a, c)| naive_stein(t, 1.0, &xs[a * d..(a + 1) * d], &xs[c * d..(c + 1) * d], true))
                    .collect();
                let m = KernelMatrix::from_dense(100, full);
                null(Statistic::U, Bootstrap::Multinomial).run(&m).unwrap().p_value
            }
        };
        if p <= 0.05 {
            count += 1;
        }
    }
    count
}

#[test]
fn small_type_one_check() {
    // R = 40 at a true rate ≤ 0.06 (the spec's measurements are 0.042–0.062): P(X ≥ 9) for
    // X ~ Bin(40, 0.06) is about 8e-4, so the bound "at most 8 rejections" fails falsely with
    // probability < 1e-3 per model. The fwd-for-bwd bug (rate 0.26) exceeds it with
    // probability ~0.8, so the Potts line also guards §7.1 statistically.
    let ising = ising_cycle();
    let potts = potts_cycle();
    let a = rejections(&ising, Test::Kdsd(Statistic::U, Bootstrap::Multinomial), 40, 200);
    let b = rejections(&potts, Test::Kdsd(Statistic::U, Bootstrap::Multinomial), 40, 200);
    let c = rejections(&ising, Test::Mmd, 40, 200);
    assert!(a <= 8 && b <= 8 && c <= 8, "rejections out of 40: ising kdsd {a}, potts kdsd {b}, ising mmd {c}");
}

#[test]
#[ignore = "statistical calibration, R = 500 per row (just test-stat)"]
fn type_one_table_of_section_9_2() {
    // Spec §9.2: with a false-failure budget of 1e-3 per test, accept 11..42 of R = 500.
    let ising = ising_cycle();
    let potts = potts_cycle();
    let rows: Vec<(&str, &FnTarget, Test)> = vec![
        ("KDSD U multinomial", &ising, Test::Kdsd(Statistic::U, Bootstrap::Multinomial)),
        ("KDSD U Rademacher", &ising, Test::Kdsd(Statistic::U, Bootstrap::Rademacher)),
        ("KDSD V Rademacher", &ising, Test::Kdsd(Statistic::V, Bootstrap::Rademacher)),
        ("GF-KSD gaussian", &ising, Test::Gfksd(false)),
        ("GF-KSD relaxed", &ising, Test::Gfksd(true)),
        ("MMD_u exact reference", &ising, Test::Mmd),
        ("Potts KDSD U", &potts, Test::Kdsd(Statistic::U, Bootstrap::Multinomial)),
        ("Potts GF-KSD gaussian", &potts, Test::Gfksd(false)),
    ];
    let mut report = Vec::new();
    for (name, t, test) in rows {
        let k = rejections(t, test, 500, 500);
        report.push(format!("{name}: {k}/500"));
        assert!((11..=42).contains(&k), "{name}: {k} rejections of 500; report so far {report:?}");
    }
    // The bug row must be clearly miscalibrated (spec: 0.258, i.e. ~129 of 500).
    let k = rejections(&potts, Test::KdsdWrongShift, 500, 500);
    assert!(k > 42, "fwd-for-bwd variant: only {k} rejections of 500");
    eprintln!("{report:?}, bug {k}/500");
}

/// An 8-visible, 6-hidden binary RBM with N(0, s²) weights and biases (`Mix` seed 41): at
/// s = 1 the README's case where the bootstraps over-reject at n = 100.
fn coupled_rbm(s: f64) -> FnTarget {
    let mut g = Mix(41);
    let (d, m) = (8, 6);
    let w = (0..d * m).map(|_| s * g.normal()).collect();
    let b = (0..d).map(|_| s * g.normal()).collect();
    let c = (0..m).map(|_| s * g.normal()).collect();
    rbm(Space::binary(d), w, b, c)
}

/// KDSD's U-statistic of `xs` against `t` (exp-Hamming, λ = 1).
fn kdsd_u(t: &FnTarget, xs: &[u32]) -> Result<f64, GofError> {
    let null = NullTest { statistic: Statistic::U, bootstrap: Bootstrap::Multinomial, reps: 1, seed: 0 };
    Ok(kdsd_test(t, xs, &KdsdOptions { kernel: BaseKernel::default(), null })?.null.statistic)
}

/// Rejections at α = 0.05 of the model null (B = 39 data sets of exact draws per test) among
/// `r` data sets of n = 100 exact draws from `data`, tested against `model`.
fn model_null_rejections(model: &FnTarget, data: &FnTarget, r: usize) -> usize {
    let probs = enumerate_probabilities(data, 1 << 20).unwrap().unwrap();
    (0..r)
        .filter(|&i| {
            let xs = draws_from_probabilities(data.space(), &probs, 100, 3_000_000 + i as u64);
            let t = kdsd_u(model, &xs).unwrap();
            let reps =
                model_replicates(model, 100, 39, i as u64, ModelDraws::Exact, |ys, _| kdsd_u(model, ys)).unwrap();
            p_value(t, &reps) <= 0.05
        })
        .count()
}

#[test]
fn the_model_null_holds_its_level_on_a_strongly_coupled_rbm_and_has_power() {
    // Under H0 the observed statistic and the 39 replicates are exchangeable, so
    // P(p ≤ 0.05) = P(at most 1 replicate ≥ T) = 2/40 = 0.05 exactly (ties have probability
    // 0): rejections X ~ Bin(200, 0.05), and 2 ≤ X ≤ 21 fails falsely with probability
    // P(X ≤ 1) + P(X ≥ 22) = 4.0e−4 + 4.8e−4 < 1e−3. Replicates drawn from anything but the
    // model (or the observed data reused) break the lower or the upper bound. Measured at
    // this seed: 15 of 200, where the multinomial bootstrap (B = 200) rejected 24 of 200.
    let t = coupled_rbm(1.0);
    let m = model_null_rejections(&t, &t, 200);
    assert!((2..=21).contains(&m), "model null under H0: {m} of 200 rejections");
    // Power against the same construction at s = 0.7 (measured 41 of 50, the bootstrap 34):
    // with a true power ≥ 0.7, P(X < 20) for X ~ Bin(50, 0.7) is about 1e−5.
    let m = model_null_rejections(&t, &coupled_rbm(0.7), 50);
    assert!(m >= 20, "model null against s = 0.7: {m} of 50 rejections");
}
