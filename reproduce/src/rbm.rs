//! Fig. 4 (samplers on an MNIST RBM, spec `reproduction.md` §3.3): the RBM, loaded or trained
//! by CD-k, the block-Gibbs ground truth, and a sampler's MMD² curve against it.

use crate::observe::Snapshots;
use crate::{Run, SamplerSpec};
use anyhow::{Context, Result, bail};
use dlp_core::rng::{chain_rngs, setup_rng};
use dlp_gof::MmdReference;
use dlp_learn::rbm::{CdConfig, RbmParams, train_cd};
use dlp_models::{Rbm, load_model};
use rand::RngExt;
use std::path::Path;

/// The binary RBM with `d` visible units stored at `path` (`dlp.model.v1`, kind `rbm`).
pub fn load_rbm(path: &Path, d: usize) -> Result<RbmParams> {
    let model = load_model(path).with_context(|| format!("--rbm {}", path.display()))?;
    let Some(r) = model.downcast_ref::<Rbm>() else { bail!("--rbm {}: not an rbm model", path.display()) };
    if r.d() != d || r.is_spin() {
        bail!("--rbm {}: need a binary RBM with d = {d}, found d = {}", path.display(), r.d());
    }
    Ok(RbmParams { d, m: r.m(), w: r.w().to_vec(), b: r.b().to_vec(), c: r.c().to_vec() })
}

/// Trains a `d × hidden` RBM on the binary images `bits` by one epoch of CD-`cd_k` with Adam
/// from the paper's initialisation (§3.3), writes it to `rbm.json` and returns it with the
/// training seconds.
pub fn train_rbm(
    run: &Run,
    bits: &[u32],
    means: &[f64],
    hidden: usize,
    cd_k: usize,
    threads: usize,
) -> Result<(RbmParams, f64)> {
    let d = means.len();
    let seed = run.seed();
    let mut p = RbmParams::paper_init(means, hidden, seed);
    let cfg = CdConfig { k: cd_k, ..CdConfig::default() };
    let bar = run.progress((bits.len() / d / cfg.batch) as u64, "CD training");
    let t0 = std::time::Instant::now();
    train_cd(&mut p, bits, &cfg, seed, threads, |done, _| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    let seconds = t0.elapsed().as_secs_f64();
    run.write_json("rbm.json", &p.to_model_json(&format!("fig4 RBM {d}x{hidden}, CD-{} one epoch", cfg.k)))?;
    println!("trained RBM {d}x{hidden} in {seconds:.1}s → {}", run.path("rbm.json").display());
    Ok((p, seconds))
}

/// The block-Gibbs ground truth and the samplers' initial states.
pub struct GroundTruth {
    /// All ground-truth chains' final states; the first `n_ref` rows are the reference set.
    pub states: Vec<u32>,
    /// MMD² reference built from the first `n_ref` rows.
    pub reference: MmdReference,
    /// MMD² of the remaining rows against the reference: the "gt vs gt" floor.
    pub floor: f64,
    /// The samplers' initial states.
    pub x0: Vec<u32>,
    /// Seconds of block Gibbs.
    pub seconds: f64,
}

/// Ground truth by batched block Gibbs: `gt_chains` chains of `gt_steps` steps, and `chains`
/// initial states for the samplers, all started from Bernoulli(pixel means clamped to
/// [0.01, 0.99]) on the setup stream of the run's seed (ground truth first, then the samplers).
pub fn ground_truth(
    run: &Run,
    params: &RbmParams,
    means: &[f64],
    (gt_chains, gt_steps, n_ref): (usize, usize, usize),
    chains: usize,
    threads: usize,
) -> GroundTruth {
    let d = params.d;
    let seed = run.seed();
    let clamped: Vec<f64> = means.iter().map(|p| p.clamp(0.01, 0.99)).collect();
    let mut init_rng = setup_rng(seed);
    let mut bernoulli =
        |n: usize| -> Vec<u32> { (0..n * d).map(|k| u32::from(init_rng.random::<f64>() < clamped[k % d])).collect() };
    let mut gt = bernoulli(gt_chains);
    let x0 = bernoulli(chains);
    let bar = run.progress(gt_steps as u64, "ground truth");
    let t0 = std::time::Instant::now();
    // A fixed salt, not `dlp_core::rng::derive_seed`: it predates that scheme and changing it
    // would change every published Fig. 4 number.
    let mut gt_rngs = chain_rngs(seed ^ 0x6774, 0, gt_chains);
    let chunk = 100;
    for done in (0..gt_steps).step_by(chunk) {
        params.gibbs_par(&mut gt, chunk.min(gt_steps - done), &mut gt_rngs, threads);
        bar.set_position((done + chunk).min(gt_steps) as u64);
    }
    bar.finish_and_clear();
    let seconds = t0.elapsed().as_secs_f64();
    let reference = MmdReference::new(&gt[..n_ref * d], d);
    let floor = reference.mmd2(&gt[n_ref * d..]);
    GroundTruth { states: gt, reference, floor, x0, seconds }
}

/// One point of a sampler's MMD² curve.
#[derive(Clone, Copy, Debug)]
pub struct MmdPoint {
    /// Steps done.
    pub step: usize,
    /// Sampler seconds: the slowest task's time inside `step`.
    pub seconds: f64,
    /// MMD² of all chains' states against the reference.
    pub mmd2: f64,
}

/// MMD² against `reference` at every snapshot of `observers` (all chains, in chain order),
/// snapshots taken every `every` steps.
pub fn mmd_curve(observers: &[Snapshots], reference: &MmdReference, every: usize) -> Vec<MmdPoint> {
    let n_snap = observers.first().map_or(0, |o| o.states.len());
    (0..n_snap)
        .map(|s| {
            let states: Vec<u32> = observers.iter().flat_map(|o| o.states[s].iter().copied()).collect();
            let seconds = observers.iter().map(|o| o.seconds[s]).fold(0.0, f64::max);
            MmdPoint { step: s * every, seconds, mmd2: reference.mmd2(&states) }
        })
        .collect()
}

/// Rows of `mmd.csv` (`sampler,step_size,step,seconds,mmd2,log_mmd2`) for one sampler's curve.
pub fn mmd_rows(spec: &SamplerSpec, curve: &[MmdPoint]) -> Vec<Vec<String>> {
    curve
        .iter()
        .map(|p| {
            vec![
                spec.name.clone(),
                format!("{}", spec.step_size.unwrap_or(f64::NAN)),
                p.step.to_string(),
                format!("{:.6}", p.seconds),
                format!("{:.8e}", p.mmd2),
                format!("{:.6}", p.mmd2.ln()),
            ]
        })
        .collect()
}

/// Where the training images of the MNIST-RBM experiments come from.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum DataSet {
    /// MNIST from `data/cache/mnist.dlpd` (`just data mnist`).
    Mnist,
    /// The seeded synthetic stand-in of `dlp-data` (no download).
    Synthetic,
}

/// The flags the MNIST-RBM experiments (fig4, 000-appD) share: the data, the RBM, the ground
/// truth and the chains per sampler.
#[derive(clap::Args, Debug)]
pub struct RbmArgs {
    /// A trained RBM (dlp.model.v1, kind rbm, binary, d = 784) to reuse instead of training one.
    #[arg(long)]
    pub rbm: Option<std::path::PathBuf>,
    /// Training data [default: mnist (`just data mnist`); --quick: synthetic].
    #[arg(long, value_enum)]
    pub data: Option<DataSet>,
    /// Hidden units [default: 500; --quick: 50].
    #[arg(long)]
    pub hidden: Option<usize>,
    /// Training images used (the first n after binarisation) [default: all; --quick: 2000].
    #[arg(long)]
    pub train_items: Option<usize>,
    /// Ground-truth block-Gibbs chains: the first `--reference` are the reference set, the
    /// rest give the "gt vs gt" floor [default: 600; --quick: 120].
    #[arg(long)]
    pub gt_chains: Option<usize>,
    /// Block-Gibbs steps of the ground truth [default: 10000; --quick: 200].
    #[arg(long)]
    pub gt_steps: Option<usize>,
    /// Reference samples (the first rows of the ground truth) [default: 500; --quick: 100].
    #[arg(long)]
    pub reference: Option<usize>,
    /// Chains per sampler [default: 100; --quick: 20].
    #[arg(long)]
    pub chains: Option<usize>,
}

/// What [`RbmArgs`] resolve to, defaults and `--quick` applied and checked.
#[derive(Clone, Copy, Debug)]
pub struct RbmSizes {
    /// The training data.
    pub data_set: DataSet,
    /// Hidden units.
    pub hidden: usize,
    /// Ground-truth chains.
    pub gt_chains: usize,
    /// Ground-truth steps.
    pub gt_steps: usize,
    /// Reference samples.
    pub n_ref: usize,
    /// Chains per sampler.
    pub chains: usize,
}

impl RbmArgs {
    /// The sizes, or one line naming the flag that is out of range.
    pub fn sizes(&self, c: &crate::CommonArgs) -> Result<RbmSizes> {
        let s = RbmSizes {
            data_set: c.pick(self.data, DataSet::Mnist, DataSet::Synthetic),
            hidden: c.pick(self.hidden, 500, 50),
            gt_chains: c.pick(self.gt_chains, 600, 120),
            gt_steps: c.pick(self.gt_steps, 10_000, 200),
            n_ref: c.pick(self.reference, 500, 100),
            chains: c.pick(self.chains, 100, 20),
        };
        if s.chains < 2 || s.hidden == 0 {
            bail!("need --chains ≥ 2 and --hidden ≥ 1");
        }
        if s.n_ref < 2 || s.gt_chains < s.n_ref + 2 {
            bail!("--gt-chains ({}) must exceed --reference ({}) by at least 2", s.gt_chains, s.n_ref);
        }
        Ok(s)
    }

    /// The binarised training pixels (x > 0.5; the first `--train-items` images) and their
    /// means, d = 784.
    pub fn training_bits(&self, data_set: DataSet, quick: bool, seed: u64) -> Result<(Vec<u32>, Vec<f64>)> {
        let images = match data_set {
            DataSet::Mnist => {
                dlp_data::Mnist::load_default().context("MNIST (use --data synthetic to run without it)")?.train_images
            }
            DataSet::Synthetic => dlp_data::synthetic_digits(if quick { 2_000 } else { 60_000 }, seed).0,
        };
        let (mut bits, d) = (dlp_data::binarize(&images), 784);
        if let Some(n) = self.train_items {
            bits.truncate(n.min(bits.len() / d) * d);
        }
        let means = dlp_data::pixel_means(&bits, d);
        Ok((bits, means))
    }

    /// The RBM: loaded from `--rbm`, or trained here by CD-`cd_k` ([`train_rbm`]) with its
    /// training seconds.
    pub fn rbm_params(
        &self,
        run: &Run,
        (bits, means): (&[u32], &[f64]),
        hidden: usize,
        cd_k: usize,
        threads: usize,
    ) -> Result<(RbmParams, Option<f64>)> {
        match &self.rbm {
            Some(path) => Ok((load_rbm(path, 784)?, None)),
            None => train_rbm(run, bits, means, hidden, cd_k, threads).map(|(p, s)| (p, Some(s))),
        }
    }
}
