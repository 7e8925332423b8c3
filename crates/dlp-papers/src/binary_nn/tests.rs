use super::*;
use dlp_core::setup_rng;
use rand::RngExt;

/// A tiny data set: `n` items of `p` inputs in [0, 1) and labels < k, from a seeded stream.
fn data(n: usize, p: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<u8>) {
    let mut rng = setup_rng(seed);
    let x = (0..n * p).map(|_| rng.random::<f32>()).collect();
    let y = (0..n).map(|_| rng.random_range(0..k as u32) as u8).collect();
    (x, y)
}

fn weights(d: usize, seed: u64) -> Vec<f64> {
    let mut rng = setup_rng(seed);
    (0..d).map(|_| rng.random_range(-0.9..0.9)).collect()
}

fn f_and_grad(net: &BinaryNet, w: &[f64], batch: Batch<'_>) -> (f64, Vec<f64>) {
    let mut f = [0.0];
    let mut g = vec![0.0; w.len()];
    net.evaluate(w, batch, &mut f, Some(&mut g)).unwrap();
    (f[0], g)
}

/// ∇f̂ by candle autograd (minibatch NLL scaled by N/|S| plus the Beta prior) equals central
/// differences of f̂ in f64 for every weight of a 5–4–3 and a 5–4–4–3 net. Deterministic
/// inputs; the only way to fail besides a wrong gradient is a ReLU kink inside ±h, which for
/// these fixed draws does not happen (a pre-activation would have to lie within ~1e-6 of 0).
#[test]
fn autograd_gradient_matches_central_differences_in_f64() {
    let (x, y) = data(12, 5, 3, 1);
    for layers in [vec![5, 4, 3], vec![5, 4, 4, 3]] {
        let net = BinaryNet::new(&x, &y, &layers, (0.5, 0.7), &Device::Cpu, DType::F64).unwrap();
        let w = weights(net.n_weights(), 2);
        let items = [3usize, 7, 0, 11, 5];
        let (_, g) = f_and_grad(&net, &w, Batch::Items(&items));
        assert!(g.iter().all(|v| v.is_finite()));
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for i in 0..w.len() {
            let (mut wp, mut wm) = (w.clone(), w.clone());
            wp[i] += h;
            wm[i] -= h;
            let fd = (f_and_grad(&net, &wp, Batch::Items(&items)).0 - f_and_grad(&net, &wm, Batch::Items(&items)).0)
                / (2.0 * h);
            worst = worst.max((fd - g[i]).abs() / (1.0 + g[i].abs()));
        }
        assert!(worst < 1e-6, "{layers:?}: worst relative error {worst:e}");
    }
}

/// The candle gradient of Σ NLL equals a hand-written backward pass of the two-layer net
/// (softmax − onehot, ReLU mask, outer products) to 1e-10, and every weight whose unit is
/// active gets a non-zero gradient (no op detached part of the graph).
#[test]
fn autograd_gradient_matches_a_hand_written_two_layer_backward() {
    let (p, hd, k, n) = (6, 5, 4, 9);
    let (x, y) = data(n, p, k, 3);
    let net = BinaryNet::new(&x, &y, &[p, hd, k], (1.0, 1.0), &Device::Cpu, DType::F64).unwrap();
    let w = weights(net.n_weights(), 4);
    let (nll, g) = net.nll_grad(&w, None).unwrap();
    let (w1, w2) = w.split_at(p * hd);
    let (mut g1, mut g2, mut want_nll) = (vec![0.0; p * hd], vec![0.0; hd * k], 0.0);
    for i in 0..n {
        let xi: Vec<f64> = x[i * p..(i + 1) * p].iter().map(|&v| v as f64).collect();
        let a: Vec<f64> = (0..hd).map(|j| (0..p).map(|q| xi[q] * w1[q * hd + j]).sum()).collect();
        let hid: Vec<f64> = a.iter().map(|&v| v.max(0.0)).collect();
        let z: Vec<f64> = (0..k).map(|c| (0..hd).map(|j| hid[j] * w2[j * k + c]).sum()).collect();
        let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + z.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        want_nll += lse - z[y[i] as usize];
        let dz: Vec<f64> = (0..k).map(|c| (z[c] - lse).exp() - f64::from(u8::from(c == y[i] as usize))).collect();
        for j in 0..hd {
            for c in 0..k {
                g2[j * k + c] += hid[j] * dz[c];
            }
            let dh: f64 = if a[j] > 0.0 { (0..k).map(|c| w2[j * k + c] * dz[c]).sum() } else { 0.0 };
            for q in 0..p {
                g1[q * hd + j] += xi[q] * dh;
            }
        }
    }
    assert!((nll - want_nll).abs() < 1e-10, "{nll} vs {want_nll}");
    let want: Vec<f64> = g1.into_iter().chain(g2).collect();
    for (i, (a, b)) in g.iter().zip(&want).enumerate() {
        assert!((a - b).abs() < 1e-10, "weight {i}: {a} vs {b}");
    }
    // Second-layer weights from an active hidden unit always get a gradient (softmax − onehot
    // is never all zero); first-layer weights of a unit active on some item likewise.
    assert!(g[p * hd..].iter().filter(|v| **v != 0.0).count() > hd * k / 2);
    assert!(g[..p * hd].iter().filter(|v| **v != 0.0).count() > p * hd / 2);
}

/// A minibatch of all N items (any order) gives the full-data f̂; a batch of B is scaled by N/B;
/// the f32 network agrees with the f64 one to single precision.
#[test]
fn minibatch_scaling_and_f32_agree_with_the_full_f64_evaluation() {
    let (x, y) = data(10, 5, 3, 5);
    let net = BinaryNet::new(&x, &y, &[5, 4, 3], (0.5, 0.5), &Device::Cpu, DType::F64).unwrap();
    let w = weights(net.n_weights(), 6);
    let all: Vec<usize> = (0..10).rev().collect();
    let (f_full, g_full) = f_and_grad(&net, &w, Batch::Full);
    let (f_all, g_all) = f_and_grad(&net, &w, Batch::Items(&all));
    assert!((f_full - f_all).abs() < 1e-10);
    assert!(g_full.iter().zip(&g_all).all(|(a, b)| (a - b).abs() < 1e-10));
    let (nll2, _) = net.nll_grad(&w, Some(&[2, 4])).unwrap();
    let (f2, _) = f_and_grad(&net, &w, Batch::Items(&[2, 4]));
    let prior = net.log_prior_add_grad(&w, None);
    assert!((f2 - (-5.0 * nll2 + prior)).abs() < 1e-10);
    let n32 = BinaryNet::new(&x, &y, &[5, 4, 3], (0.5, 0.5), &Device::Cpu, DType::F32).unwrap();
    let (f32v, g32) = f_and_grad(&n32, &w, Batch::Full);
    assert!((f32v - f_full).abs() < 1e-5 * (1.0 + f_full.abs()));
    assert!(g32.iter().zip(&g_full).all(|(a, b)| (a - b).abs() < 1e-4 * (1.0 + b.abs())));
}

/// The prior's gradient is (α−1)/(1+w) − (β−1)/(1−w), and outside (−1, 1) f = −∞.
#[test]
fn beta_prior_on_minus_one_one() {
    let (x, y) = data(4, 2, 2, 7);
    let net = BinaryNet::new(&x, &y, &[2, 2], (0.5, 2.0), &Device::Cpu, DType::F64).unwrap();
    let w = [0.3, -0.6, 0.0, 0.9];
    let mut g = [0.0; 4];
    let lp = net.log_prior_add_grad(&w, Some(&mut g));
    let want: f64 = w.iter().map(|&v: &f64| -0.5 * (1.0 + v).ln() + (1.0 - v).ln()).sum();
    assert!((lp - want).abs() < 1e-12);
    for (gi, &v) in g.iter().zip(&w) {
        assert!((gi - (-0.5 / (1.0 + v) - 1.0 / (1.0 - v))).abs() < 1e-12);
    }
    assert_eq!(net.log_prior_add_grad(&[0.0, 1.0, 0.0, 0.0], None), f64::NEG_INFINITY);
    // A symmetric prior (α = β, one log per weight) against the two-log sum, near the
    // boundaries too, and −∞ outside.
    let net = BinaryNet::new(&x, &y, &[2, 2], (0.5, 0.5), &Device::Cpu, DType::F64).unwrap();
    for w in [[0.3, -0.6, 0.0, 0.9], [1e-300, -1e-9, 1.0 - 1e-15, -1.0 + 1e-12]] {
        let want: f64 = w.iter().map(|&v: &f64| -0.5 * (v.ln_1p() + (-v).ln_1p())).sum();
        let lp = net.log_prior_add_grad(&w, None);
        assert!((lp - want).abs() <= 1e-14 * (1.0 + want.abs()), "{w:?}: {lp} vs {want}");
    }
    assert_eq!(net.log_prior_add_grad(&[0.0, 0.2, -1.0, 0.0], None), f64::NEG_INFINITY);
    assert_eq!(net.log_prior_add_grad(&[0.0, f64::NAN, 0.5, 0.0], None), f64::NEG_INFINITY);
}

/// Binarised prediction uses sign(w) with sign(0) = +1, and the predictive mean kept in log
/// space equals the plain mean of probabilities.
#[test]
fn binarised_prediction_and_the_log_space_predictive_mean() {
    let (x, y) = data(6, 3, 2, 8);
    let net = BinaryNet::new(&x, &y, &[3, 2, 2], (0.5, 0.5), &Device::Cpu, DType::F64).unwrap();
    let set = net.eval_set(&x, &y).unwrap();
    let w = [0.0, -0.2, 0.4, -0.0, 0.1, -0.7, 0.2, 0.3, -0.5, 0.6];
    let signs = [1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0];
    assert_eq!(net.predict_binarised(&w, &set, 4).unwrap(), net.predict(&signs, &set, 6).unwrap());
    let (a, b) = (net.predict(&w, &set, 6).unwrap(), net.predict(&signs, &set, 6).unwrap());
    let mut p = Predictive::new(6, 2);
    p.add(&a);
    p.add(&b);
    let (ce, acc) = p.scores(&y);
    let (mut want_ce, mut hits) = (0.0, 0);
    for i in 0..6 {
        let m: Vec<f64> = (0..2).map(|c| (a[i * 2 + c].exp() + b[i * 2 + c].exp()) / 2.0).collect();
        want_ce -= m[y[i] as usize].ln() / 6.0;
        hits += usize::from((m[1] > m[0]) as u8 == y[i]);
    }
    assert!((ce - want_ce).abs() < 1e-12, "{ce} vs {want_ce}");
    assert_eq!(acc, hits as f64 / 6.0);
    // Underflowing probabilities stay finite in log space.
    let mut q = Predictive::new(1, 2);
    q.add(&[-2000.0, 0.0]);
    q.add(&[-3000.0, 0.0]);
    assert!((q.scores(&[0]).0 - (2000.0 + 2f64.ln() - (1.0f64 + (-1000f64).exp()).ln())).abs() < 1e-9);
}

/// Bad input is one error naming what is wrong.
#[test]
fn bad_input_is_a_clear_error() {
    let (x, y) = data(4, 2, 2, 9);
    let dev = Device::Cpu;
    let e = BinaryNet::new(&x, &[0, 1, 5, 0], &[2, 2], (0.5, 0.5), &dev, DType::F32).unwrap_err();
    assert!(e.to_string().contains("label 5 at item 2"), "{e}");
    let e = BinaryNet::new(&x[..7], &y, &[2, 2], (0.5, 0.5), &dev, DType::F32).unwrap_err();
    assert!(e.to_string().contains("expected 4 items × 2 inputs"), "{e}");
    assert!(BinaryNet::new(&x, &y, &[2], (0.5, 0.5), &dev, DType::F32).is_err());
    assert!(BinaryNet::new(&x, &y, &[2, 2], (0.0, 0.5), &dev, DType::F32).is_err());
    let net = BinaryNet::new(&x, &y, &[2, 2], (0.5, 0.5), &dev, DType::F32).unwrap();
    let mut f = [0.0];
    let e = net.evaluate(&[0.1; 4], Batch::Items(&[1, 4]), &mut f, None).unwrap_err();
    assert_eq!(e, EvalError::BadItem { index: 4, n_data: 4 });
}
