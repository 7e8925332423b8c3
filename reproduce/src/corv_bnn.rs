//! Paper 001 §6.2 (App. E): the Bayesian binary neural network of `dlp_papers::binary_nn` on
//! MNIST / Fashion-MNIST, sampled by the bounded samplers of `dlp_samplers::bounded` (CoRV with
//! affine sigmoid / arctan / softsign, SGLD with mirroring at ±1) through the runner with
//! minibatches; every epoch the binarised network's softmax outputs join a running Bayesian
//! predictive mean on the validation and test sets (spec §5 \[R\]).
//!
//! Data (spec §5 \[R\]): the 70,000 images of a data set pooled (train then t10k), shuffled with a
//! fixed seed, split 56,000 / 7,000 / 7,000, pixels / 255. An epoch is ⌈N/B⌉ steps; each step's
//! batch is B distinct items drawn uniformly by the runner (`dlp_core::draw_minibatch`), not a
//! pass over a permutation \[R\].

use anyhow::{Context, Result, anyhow, bail};
use dlp_core::rng::derive_seed;
use dlp_core::transform::Transform;
use dlp_core::{Observer, States, StepContext, StepInfo, run_continuous, setup_rng};
use dlp_data::Mnist;
use dlp_papers::binary_nn::{BinaryNet, EvalSet, Predictive};
use dlp_samplers::bounded::{BoundedSgld, Method, StepSchedule};
use rand::RngExt;
use rand::seq::SliceRandom;

use crate::Run;

/// The compared samplers, in the order of every output.
pub const SAMPLERS: [&str; 4] = ["corv-sigmoid", "corv-arctan", "corv-softsign", "sgld-mirror"];

/// Fixed seed of the 8 : 1 : 1 split (the same split for every `--seed`).
const SPLIT_SEED: u64 = 2019;

/// Images (pixels / 255, n × 784) and labels of one part of the split.
pub struct Part {
    /// Row-major images.
    pub images: Vec<f32>,
    /// Labels 0–9.
    pub labels: Vec<u8>,
}

/// A data set split into training, validation and test parts.
pub struct Split {
    /// Training part (8/10).
    pub train: Part,
    /// Validation part (1/10).
    pub valid: Part,
    /// Test part (1/10).
    pub test: Part,
}

/// Pools `m`'s train and test images, shuffles them with the fixed split seed and splits 8 : 1 : 1.
pub fn split(m: &Mnist) -> Split {
    const P: usize = dlp_data::mnist::PIXELS;
    let images: Vec<&[u8]> = m.train_images.chunks(P).chain(m.test_images.chunks(P)).collect();
    let labels: Vec<u8> = m.train_labels.iter().chain(&m.test_labels).copied().collect();
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.shuffle(&mut setup_rng(SPLIT_SEED));
    let n = order.len();
    let (a, b) = (n * 8 / 10, n * 9 / 10);
    let part = |ids: &[usize]| Part {
        images: ids.iter().flat_map(|&i| images[i].iter().map(|&v| v as f32 / 255.0)).collect(),
        labels: ids.iter().map(|&i| labels[i]).collect(),
    };
    Split { train: part(&order[..a]), valid: part(&order[a..b]), test: part(&order[b..]) }
}

/// Data set `name`: `mnist`, `fashion-mnist` (the caches of `just data …`), or `synthetic`
/// (the stroke digits of `dlp-data`, 1,000 images: a STAND-IN for MNIST, used by `--quick`).
pub fn load(name: &str, seed: u64) -> Result<Mnist> {
    load_digits(name, seed, (1000, 0))
}

/// Data set `name` as [`load`], with `synthetic` = (train, test) stand-in stroke digits
/// (train from stream 1 of `seed`, test from stream 2; no test images when 0). Shared with
/// `004-fig6`.
pub fn load_digits(name: &str, seed: u64, synthetic: (usize, usize)) -> Result<Mnist> {
    let cache = |file: &str| dlp_data::mnist::default_cache_path().with_file_name(file);
    Ok(match name {
        "mnist" => Mnist::load_cache(&cache("mnist.dlpd")).context("MNIST: run `just data mnist`")?,
        "fashion-mnist" => {
            Mnist::load_cache(&cache("fashion-mnist.dlpd")).context("Fashion-MNIST: run `just data fashion-mnist`")?
        }
        "synthetic" => {
            let (train_images, train_labels) = dlp_data::synthetic_digits(synthetic.0, derive_seed(seed, &[1]));
            let (test_images, test_labels) = match synthetic.1 {
                0 => (vec![], vec![]),
                n => dlp_data::synthetic_digits(n, derive_seed(seed, &[2])),
            };
            Mnist { train_images, train_labels, test_images, test_labels }
        }
        other => bail!("--datasets: unknown data set {other:?} (known: mnist, fashion-mnist, synthetic)"),
    })
}

/// Sampler `label` of [`SAMPLERS`] at constant step ε with minibatch B.
pub fn sampler(label: &str, eps: f64, batch: usize) -> Result<BoundedSgld> {
    let (method, unit) = match label {
        "corv-sigmoid" => (Method::Corv, Transform::Sigmoid),
        "corv-arctan" => (Method::Corv, Transform::Arctan),
        "corv-softsign" => (Method::Corv, Transform::Softsign),
        "sgld-mirror" => (Method::Mirror, Transform::Sigmoid),
        _ => bail!("unknown sampler {label} (have: {})", SAMPLERS.join(", ")),
    };
    Ok(BoundedSgld::new(method, StepSchedule::Constant(eps))?
        .with_transforms(unit, Transform::Softplus)
        .with_batch(Some(batch)))
}

/// Initial weights \[R\] (the paper does not say): U(−1/√fan_in, 1/√fan_in) per layer (PyTorch's
/// default linear init), from the setup stream of `seed` — the same start for every sampler.
pub fn init(layers: &[usize], seed: u64) -> Vec<f64> {
    let mut rng = setup_rng(derive_seed(seed, &[11]));
    layers
        .windows(2)
        .flat_map(|w| {
            let a = 1.0 / (w[0] as f64).sqrt();
            (0..w[0] * w[1]).map(|_| a * (2.0 * rng.random::<f64>() - 1.0)).collect::<Vec<_>>()
        })
        .collect()
}

/// Scores of the Bayesian predictive mean after one epoch (non-finite when a chain diverged:
/// kept as such through a resumed run's cells).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct Point {
    /// Epoch (1-based).
    pub epoch: usize,
    /// Validation cross-entropy (nats per item).
    #[serde(with = "crate::results::lenient_f64")]
    pub valid_ce: f64,
    /// Validation accuracy.
    #[serde(with = "crate::results::lenient_f64")]
    pub valid_acc: f64,
    /// Test cross-entropy.
    #[serde(with = "crate::results::lenient_f64")]
    pub test_ce: f64,
    /// Test accuracy.
    #[serde(with = "crate::results::lenient_f64")]
    pub test_acc: f64,
    /// Test accuracy of this epoch's binarised network alone (not averaged).
    #[serde(with = "crate::results::lenient_f64")]
    pub test_acc_single: f64,
}

/// Adds the binarised network of each epoch's last state to the predictive means.
struct EpochObserver<'a> {
    net: &'a BinaryNet,
    sets: [&'a EvalSet; 2],
    means: [Predictive; 2],
    steps_per_epoch: usize,
    curve: Vec<Point>,
    error: Option<String>,
    /// Told of every finished epoch (a progress bar's tick).
    on_epoch: &'a (dyn Fn() + Sync),
}

impl EpochObserver<'_> {
    fn epoch(&mut self, w: &[f64], epoch: usize) -> dlp_tensor::candle_core::Result<()> {
        let mut single = 0.0;
        for (k, set) in self.sets.iter().enumerate() {
            let lp = self.net.predict_binarised(w, set, 2000)?;
            if k == 1 {
                let mut one = Predictive::new(set.len(), self.net.classes());
                one.add(&lp);
                single = one.scores(&set.labels).1;
            }
            self.means[k].add(&lp);
        }
        let (valid_ce, valid_acc) = self.means[0].scores(&self.sets[0].labels);
        let (test_ce, test_acc) = self.means[1].scores(&self.sets[1].labels);
        self.curve.push(Point { epoch, valid_ce, valid_acc, test_ce, test_acc, test_acc_single: single });
        (self.on_epoch)();
        Ok(())
    }
}

impl Observer<f64> for EpochObserver<'_> {
    fn observe(&mut self, ctx: &StepContext, states: States<'_, f64>, _: &[StepInfo]) {
        if ctx.step == 0 || !ctx.step.is_multiple_of(self.steps_per_epoch) || self.error.is_some() {
            return;
        }
        let w = &states.positions()[..self.net.n_weights()];
        if let Err(e) = self.epoch(w, ctx.step / self.steps_per_epoch) {
            self.error = Some(e.to_string());
        }
    }
}

/// The per-epoch curve of one chain (start [`init`], `epochs` × ⌈N/B⌉ steps) and the seconds
/// its sampler steps took; `on_epoch` is called after each epoch (progress).
pub fn run_curve(
    net: &BinaryNet,
    valid: &EvalSet,
    test: &EvalSet,
    s: &BoundedSgld,
    epochs: usize,
    seed: u64,
    on_epoch: &(dyn Fn() + Sync),
) -> Result<(Vec<Point>, f64)> {
    let n = dlp_core::ContinuousTarget::n_data(net).unwrap_or(1);
    let b = dlp_core::ContinuousSampler::minibatch(s).unwrap_or(n).clamp(1, n);
    let steps_per_epoch = n.div_ceil(b);
    let x0 = init(net.layers(), seed);
    let o = crate::on_caller_pool(seed);
    let k = net.classes();
    let out = run_continuous(s, net, &x0, epochs * steps_per_epoch, &o, |_, _| EpochObserver {
        net,
        sets: [valid, test],
        means: [Predictive::new(valid.len(), k), Predictive::new(test.len(), k)],
        steps_per_epoch,
        curve: vec![],
        error: None,
        on_epoch,
    })?;
    let obs = out.observers.into_iter().next().ok_or_else(|| anyhow!("the run returned no observer"))?;
    if let Some(e) = obs.error {
        bail!("prediction failed on {}: {e}", net.device_name());
    }
    Ok((obs.curve, out.task_step_seconds.iter().sum()))
}

/// One chain's per-epoch curve and the seconds its sampler steps took.
pub type Chain = (Vec<Point>, f64);

/// The chains of one data set: for every sampler of `samplers` (labels of [`SAMPLERS`]), one
/// chain per step size of `eps`, all from the same seed (the same start and minibatches), in
/// parallel; `bar` advances by one per chain-epoch. Result `[sampler][step]` = (curve, seconds).
/// Each chain is a cell of `run` ([`Run::cell`]) whose identity is `setup` (data set, network,
/// prior, device: what the caller fixes) with the sampler, ε, batch, epochs and seed, so that
/// `001-bnn --resume` continues a long (paper-scale) run from the chains it finished.
#[allow(clippy::too_many_arguments)]
pub fn run_grid(
    run: &Run,
    setup: &serde_json::Value,
    net: &BinaryNet,
    valid: &EvalSet,
    test: &EvalSet,
    samplers: &[String],
    eps: &[f64],
    batch: usize,
    epochs: usize,
    seed: u64,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<Vec<Chain>>> {
    use rayon::prelude::*;
    let configs: Vec<(usize, usize)> = (0..samplers.len()).flat_map(|m| (0..eps.len()).map(move |e| (m, e))).collect();
    let mut runs: Vec<Chain> = configs
        .par_iter()
        .map(|&(m, e)| {
            let identity = serde_json::json!({"setup": setup, "sampler": samplers[m], "eps": eps[e], "batch": batch,
                "epochs": epochs, "seed": seed});
            let key = format!("{}_{}_eps{:e}", setup["dataset"].as_str().unwrap_or("data"), samplers[m], eps[e]);
            // A computed chain ticks the bar every epoch (a paper-scale chain runs for minutes);
            // one read back from `cells/` ticks all its epochs at once.
            let mut computed = false;
            let r = run.cell(&key, &identity, || {
                computed = true;
                run_curve(net, valid, test, &sampler(&samplers[m], eps[e], batch)?, epochs, seed, &|| bar.inc(1))
            })?;
            if !computed {
                bar.inc(epochs as u64);
            }
            Ok(r)
        })
        .collect::<Result<_>>()?;
    let mut out = vec![];
    for _ in samplers {
        out.push(runs.drain(..eps.len()).collect());
    }
    Ok(out)
}

/// Index of the run with the lowest final validation cross-entropy (the step-size choice; a
/// failed or NaN run sorts last).
pub fn best(runs: &[Chain]) -> usize {
    let v = |i: usize| runs[i].0.last().map_or(f64::NAN, |p| p.valid_ce);
    (0..runs.len()).min_by(|&a, &b| v(a).total_cmp(&v(b))).unwrap_or(0)
}

/// Epochs on data set `name`: `explicit` (`--epochs`) if given, else 2 under `--quick`, the
/// paper's 100 (MNIST) / 300 (Fashion-MNIST, §6.2) under `--paper-scale`, and 15 by default.
pub fn epochs(name: &str, explicit: Option<usize>, quick: bool, paper_scale: bool) -> usize {
    match explicit {
        Some(e) => e,
        None if quick => 2,
        None if paper_scale && name == "fashion-mnist" => 300,
        None if paper_scale => 100,
        None => 15,
    }
}

/// First epoch whose test accuracy is ≥ `threshold`.
pub fn epochs_to(curve: &[Point], threshold: f64) -> Option<usize> {
    curve.iter().find(|p| p.test_acc >= threshold).map(|p| p.epoch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_are_the_flag_then_quick_then_the_papers_then_15() {
        assert_eq!(epochs("fashion-mnist", None, false, true), 300);
        assert_eq!(epochs("mnist", None, false, true), 100);
        assert_eq!(epochs("mnist", None, false, false), 15);
        assert_eq!(epochs("mnist", None, true, true), 2);
        assert_eq!(epochs("fashion-mnist", Some(7), true, true), 7);
    }

    #[test]
    fn the_split_is_8_1_1_of_the_pooled_images_and_fixed() {
        let m = load("synthetic", 0).unwrap();
        let s = split(&m);
        assert_eq!((s.train.labels.len(), s.valid.labels.len(), s.test.labels.len()), (800, 100, 100));
        assert_eq!(s.train.images.len(), 800 * 784);
        assert!(s.train.images.iter().all(|&v| (0.0..=1.0).contains(&v)));
        assert_eq!(split(&m).test.labels, s.test.labels);
        assert!(sampler("corv-tanh", 1e-3, 10).is_err());
        let w = init(&[4, 3, 2], 1);
        assert_eq!(w.len(), 18);
        assert!(w[..12].iter().all(|v| v.abs() < 0.5) && w[12..].iter().all(|v| v.abs() < 1.0 / 3f64.sqrt()));
    }
}
