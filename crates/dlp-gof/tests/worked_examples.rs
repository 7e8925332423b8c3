//! Every number of spec §8 (gof.md), to 1e-10 relative (the spec gives 12 digits).

use dlp_core::TargetExt;
mod common;
use common::*;
use dlp_core::{Space, Target};
use dlp_gof::bootstrap::{multinomial_replicate, rademacher_replicate};
use dlp_gof::gfksd::{lift, median_bandwidth};
use dlp_gof::mmd::mmd_statistic;
use dlp_gof::*;

const TOL: f64 = 1e-10;

fn ising_8_1() -> FnTarget {
    let mut j = vec![0.0; 9];
    for (a, b, w) in [(0, 1, 0.5), (0, 2, -0.3), (1, 2, 0.2)] {
        j[a * 3 + b] = w;
        j[b * 3 + a] = w;
    }
    ising(Space::spin(3), j, vec![0.1, -0.2, 0.3])
}

fn samples_8_1(space: &Space) -> Vec<u32> {
    to_indices(space, &[&[1, 1, 1], &[-1, 1, -1], &[1, -1, -1], &[-1, -1, 1], &[1, 1, -1]])
}

fn null(statistic: Statistic, bootstrap: Bootstrap) -> NullTest {
    NullTest { statistic, bootstrap, reps: 10, seed: 0 }
}

#[test]
fn ising_8_1_log_densities_scores_and_stein_matrix() {
    let t = ising_8_1();
    let xs = samples_8_1(t.space());
    let mut ell = [0.0; 5];
    t.log_density_batch(&xs, &mut ell).unwrap();
    for (g, w) in ell.iter().zip([0.6, -1.6, 0.0, 1.0, 0.2]) {
        assert!((g - w).abs() < 1e-12);
    }
    let s = difference_scores(&t, &xs).unwrap();
    let want = [
        [0.451188363906, 0.632120558829, 0.329679953964],
        [-5.04964746441, -5.04964746441, -3.95303242440],
        [-0.221402758160, -0.221402758160, 0.329679953964],
        [0.753403036058, 0.632120558829, 0.550671035883],
        [0.834701111778, 0.181269246922, -0.491824697641],
    ];
    for a in 0..5 {
        for i in 0..3 {
            close(s[a * 3 + i], want[a][i], TOL, &format!("s_{i}(x_{})", a + 1));
        }
    }
    let m = kdsd_matrix(t.space(), &xs, &s, &BaseKernel::default());
    let upper = [
        (0, 0, 1.61157213912),
        (0, 1, -5.02609497470),
        (0, 2, -0.404815032977),
        (0, 3, 0.324831229073),
        (0, 4, 0.00893528056875),
        (1, 1, 76.2919461510),
        (1, 2, -1.65639404300),
        (1, 3, -6.19413761293),
        (1, 4, -1.34057117853),
        (2, 2, 1.97167448105),
        (2, 3, -0.358574516330),
        (2, 4, -0.134850271203),
        (3, 3, 1.87354215304),
        (3, 4, -0.341287867086),
        (4, 4, 2.37513038843),
    ];
    for (a, b, w) in upper {
        close(m.get(a, b), w, TOL, &format!("kappa_{}{}", a + 1, b + 1));
        close(m.get(b, a), w, TOL, "symmetry");
        // The fast kernel agrees with the literal transcription of §3.2.
        let naive = naive_stein(&t, 1.0, &xs[a * 3..a * 3 + 3], &xs[b * 3..b * 3 + 3], false);
        close(naive, w, TOL, "naive kappa");
    }
}

#[test]
fn ising_8_1_statistics_and_single_replicates() {
    let t = ising_8_1();
    let xs = samples_8_1(t.space());
    let run = |kernel, stat| {
        let boot = if stat == Statistic::U { Bootstrap::Multinomial } else { Bootstrap::Rademacher };
        kdsd_test(&t, &xs, &KdsdOptions { kernel, null: null(stat, boot) }).unwrap()
    };
    let u = run(BaseKernel::default(), Statistic::U);
    close(u.null.statistic, -1.51229589871, TOL, "U");
    close(run(BaseKernel::default(), Statistic::V).null.statistic, 2.15511789354, TOL, "V");
    close(run(BaseKernel::ExpHamming { scale: 2.0 }, Statistic::U).null.statistic, -1.46930608851, TOL, "U lambda=2");
    close(multinomial_replicate(&u.matrix, &[2, 0, 1, 1, 1]), 0.402087597976, TOL, "multinomial T*");
    let eps = [1.0, -1.0, 1.0, 1.0, -1.0];
    close(rademacher_replicate(&u.matrix, &eps, Statistic::U), 1.15646999896, TOL, "Rademacher U T*");
    close(rademacher_replicate(&u.matrix, &eps, Statistic::V), 4.29013061167, TOL, "Rademacher V T*");
}

fn jitter_8_1() -> Vec<f64> {
    vec![0.5, 0.25, 0.75, 0.1, 0.9, 0.5, 0.3, 0.6, 0.2, 0.8, 0.4, 0.05, 0.65, 0.35, 0.95]
}

fn relaxation_8_1() -> Relaxation {
    let mut j = vec![0.0; 9];
    for (a, b, w) in [(0, 1, 0.5), (0, 2, -0.3), (1, 2, 0.2)] {
        j[a * 3 + b] = w;
        j[b * 3 + a] = w;
    }
    Relaxation::Ising { values: (-1.0, 1.0), j, b: vec![0.1, -0.2, 0.3] }
}

fn gf(t: &FnTarget, xs: &[u32], surrogate: Surrogate, bandwidth: Bandwidth, stat: Statistic) -> GfksdOutcome {
    let boot = if stat == Statistic::U { Bootstrap::Multinomial } else { Bootstrap::Rademacher };
    gfksd_test(t, xs, &GfksdOptions { surrogate, bandwidth, null: null(stat, boot), jitter: Some(jitter_8_1()) })
        .unwrap()
}

#[test]
fn gfksd_8_1_lift_weights_and_statistics() {
    let t = ising_8_1();
    let xs = samples_8_1(t.space());
    let lifted = lift(t.space(), &xs, &jitter_8_1());
    let want = [
        0.674489750196,
        0.318639363964,
        1.15034938038,
        -1.64485362695,
        1.64485362695,
        -0.674489750196,
        0.385320466408,
        -0.524400512708,
        -1.28155156554,
        -0.253347103136,
        -0.841621233573,
        0.0627067779432,
        0.934589291073,
        0.453762190170,
        -0.0627067779432,
    ];
    for (i, (g, w)) in lifted.iter().zip(want).enumerate() {
        // Φ⁻¹ accuracy (spec §5.1: about 1e-14 relative; the spec's 12 digits bound us here).
        close(*g, w, 1e-11, &format!("lifted[{i}]"));
    }
    let h1 = Bandwidth::Fixed(1.0);
    let g = gf(&t, &xs, Surrogate::Gaussian, h1, Statistic::U);
    for (a, w) in [0.356906354587, 3.22108466818, 0.650325778672, 0.239241484037, 0.532441714518].iter().enumerate() {
        close(g.weights[a], *w, TOL, "gaussian weight");
    }
    close(g.null.statistic, -0.146001732023, TOL, "gaussian U h=1");
    close(gf(&t, &xs, Surrogate::Gaussian, h1, Statistic::V).null.statistic, 3.72824731017, TOL, "gaussian V h=1");

    close(median_bandwidth(&lifted, 3), 2.21564115509, TOL, "median bandwidth");
    let gm = gf(&t, &xs, Surrogate::Gaussian, Bandwidth::Median, Statistic::U);
    close(gm.bandwidth, 2.21564115509, TOL, "median h in outcome");
    close(gm.null.statistic, -0.575289519049, TOL, "gaussian U median");
    close(
        gf(&t, &xs, Surrogate::Gaussian, Bandwidth::Median, Statistic::V).null.statistic,
        2.30824919665,
        TOL,
        "gaussian V median",
    );

    let r = gf(&t, &xs, Surrogate::Relaxed(relaxation_8_1()), h1, Statistic::U);
    for (a, w) in [0.583929583679, 2.39846146335, 0.861973921605, 0.373060510864, 0.782574520507].iter().enumerate() {
        close(r.weights[a], *w, TOL, "relaxed weight");
    }
    close(r.null.statistic, -0.202459537410, TOL, "relaxed U");
    close(
        gf(&t, &xs, Surrogate::Relaxed(relaxation_8_1()), h1, Statistic::V).null.statistic,
        2.56177220560,
        TOL,
        "relaxed V",
    );
    let ess_want = 5.0f64.powi(2) / g.weights.iter().map(|w| w * w).sum::<f64>();
    close(g.ess, ess_want, 1e-12, "ESS");
}

#[test]
fn mmd_8_1() {
    let sp = Space::spin(3);
    let xs = samples_8_1(&sp);
    let ys = to_indices(&sp, &[&[1, 1, 1], &[1, 1, 1], &[-1, -1, -1], &[1, -1, 1]]);
    close(mmd_statistic(&sp, &xs, &ys, 1.0, Statistic::U).unwrap(), -0.0840305861234, TOL, "MMD2_u");
    close(mmd_statistic(&sp, &xs, &ys, 1.0, Statistic::V).unwrap(), 0.100583282863, TOL, "MMD2_b");
}

fn potts_8_2() -> FnTarget {
    let mut j = vec![0.0; 9];
    for (a, b, w) in [(0, 1, 0.8), (1, 2, -0.4)] {
        j[a * 3 + b] = w;
        j[b * 3 + a] = w;
    }
    potts(3, 3, j, vec![0.1, 0.0, -0.1, 0.0, 0.2, 0.0, 0.3, 0.0, 0.0])
}

#[test]
fn potts_8_2_uses_the_backward_shift() {
    let t = potts_8_2();
    let xs = to_indices(t.space(), &[&[0, 0, 1], &[2, 1, 1], &[1, 1, 0], &[0, 2, 2], &[2, 0, 1]]);
    let s = difference_scores(&t, &xs).unwrap();
    let want = [0.593430340259, 0.632120558829, 0.0, -0.221402758160, -1.71828182846, -0.491824697641];
    for (i, w) in want.iter().enumerate() {
        assert!((s[i] - w).abs() <= 1e-10 * w.abs().max(1e-2), "score {i}: {} vs {w}", s[i]);
    }
    let u = kdsd_test(
        &t,
        &xs,
        &KdsdOptions { kernel: BaseKernel::default(), null: null(Statistic::U, Bootstrap::Multinomial) },
    )
    .unwrap();
    close(u.null.statistic, -0.419480557726, TOL, "Potts U");
    close(u.matrix.v_statistic(), 0.677232663945, TOL, "Potts V");
    // The literal transcription with fwd in place of bwd reproduces the spec's "wrong" numbers,
    // so the right numbers above really discriminate bug §7.1.
    let mut wrong = 0.0;
    let mut diag = 0.0;
    for a in 0..5 {
        for b in 0..5 {
            let v = naive_stein(&t, 1.0, &xs[a * 3..a * 3 + 3], &xs[b * 3..b * 3 + 3], true);
            wrong += v;
            if a == b {
                diag += v;
            }
        }
    }
    close((wrong - diag) / 20.0, -0.455452786419, TOL, "wrong U");
    close(wrong / 25.0, 0.648454880990, TOL, "wrong V");
}

#[test]
fn rbm_8_3() {
    let w = vec![0.5, -1.0, 0.3, 0.8, -0.6, 0.2];
    let t = rbm(Space::binary(3), w, vec![0.1, -0.3, 0.2], vec![0.0, -0.5]);
    let xs = to_indices(t.space(), &[&[1, 0, 1], &[0, 0, 0], &[1, 1, 0], &[0, 1, 1], &[1, 1, 1]]);
    let mut ell = [0.0; 5];
    t.log_density_batch(&xs, &mut ell).unwrap();
    for (g, w) in ell.iter().zip([1.18540511391, 1.16722416474, 1.37428671483, 1.42843222865, 1.27221585356]) {
        close(*g, w, TOL, "RBM ell");
    }
    let s = difference_scores(&t, &xs).unwrap();
    for (i, w) in [-0.00645885003853, -0.0906902357729, -0.0942674547042].iter().enumerate() {
        close(s[i], *w, TOL, "RBM score");
    }
    let u = kdsd_test(
        &t,
        &xs,
        &KdsdOptions { kernel: BaseKernel::default(), null: null(Statistic::U, Bootstrap::Multinomial) },
    )
    .unwrap();
    close(u.null.statistic, -0.339360982245, TOL, "RBM U");
    close(u.matrix.v_statistic(), 0.0842197908380, TOL, "RBM V");
}
