//! PCD training of the [`ResNetEbm`] with a replay buffer (`reproduction.md` §3.5): a buffer of
//! `buffer` states initialised from Bernoulli(μ) and never re-initialised; every iteration
//! draws `batch` distinct buffer rows, runs `steps` transitions of any [`Sampler`] on them (one
//! batched forward/backward per step for all chains), writes them back, and takes one Adam step
//! on the loss −(mean net(data) − mean net(samples)) (the Bernoulli base term has no
//! parameters), with the learning rate warmed up linearly from 0 and an exponential moving
//! average (EMA) of the parameters.
//!
//! **Exact resumption.** Iteration t draws everything (buffer rows, data rows, dynamic
//! binarisation, the chains' streams) from `derive_seed(seed, [ITERATION, t])`, so no RNG state
//! needs saving: a checkpoint ([`PcdTrainer::save`], safetensors written atomically) holds the
//! parameters, the EMA, Adam's moments, the buffer, the iteration and the run's seed and shape,
//! and [`PcdTrainer::resume`] continues the same run (tested: bitwise equal to an uninterrupted
//! run).
//!
//! Adam is [`crate::train::Adam`] (the moments live in the checkpoint).

use candle_core::{DType, Device, Tensor};
use dlp_core::rng::{chain_rngs, derive_seed, setup_rng};
use dlp_core::{Batch, Sampler, StepInfo};
use dlp_tensor::ebm::{Params, ResNetConfig, ResNetEbm};
use rand::RngExt;
use std::collections::HashMap;
use std::path::Path;

/// Label of the per-iteration seeds (`derive_seed(seed, [ITERATION, t])`).
const ITERATION: u64 = 0xEB0;
/// Label of the buffer's initial draw.
const BUFFER: u64 = 0xEB1;

pub use crate::train::TrainError;
use crate::train::{Adam, save_safetensors_atomic};

/// Hyper-parameters of a PCD run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcdConfig {
    /// Replay-buffer size (paper: 10,000).
    pub buffer: usize,
    /// Data and sample batch size (paper: 100).
    pub batch: usize,
    /// Sampler transitions per iteration (paper: 40).
    pub steps: usize,
    /// Adam learning rate after warm-up (paper: 1e-4).
    pub lr: f64,
    /// Iterations of linear warm-up from 0 (paper: 10,000); 0 = none.
    pub warmup: usize,
    /// EMA decay (paper: 0.999).
    pub ema_decay: f64,
    /// The run's seed.
    pub seed: u64,
}

impl PcdConfig {
    /// Learning rate of iteration t (0-based): lr·min(1, (t + 1)/warmup).
    pub fn lr_at(&self, t: usize) -> f64 {
        if self.warmup == 0 { self.lr } else { self.lr * ((t + 1) as f64 / self.warmup as f64).min(1.0) }
    }
}

/// Training images as pixel probabilities p ∈ [0, 1] (n × d): each batch is binarised as
/// x = \[u < p\] with fresh uniforms, so 0/1 probabilities are a static data set and grey levels
/// a dynamically binarised one.
#[derive(Clone, Debug)]
pub struct TrainData {
    probs: Vec<f32>,
    d: usize,
}

impl TrainData {
    /// `probs` (n × d row-major, values in [0, 1], n ≥ 1).
    pub fn new(probs: Vec<f32>, d: usize) -> Result<Self, TrainError> {
        if d == 0 || probs.is_empty() || !probs.len().is_multiple_of(d) {
            return Err(TrainError::Param(format!(
                "training data must be n × {d} with n ≥ 1, found {} values",
                probs.len()
            )));
        }
        if let Some(i) = probs.iter().position(|p| !(0.0..=1.0).contains(p)) {
            return Err(TrainError::Param(format!("training pixel {i} = {} is not a probability", probs[i])));
        }
        Ok(TrainData { probs, d })
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.probs.len() / self.d
    }

    /// Always false (constructed with n ≥ 1).
    pub fn is_empty(&self) -> bool {
        self.probs.is_empty()
    }
}

/// What one iteration did.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IterRecord {
    /// The iteration just completed (1-based count of optimiser steps).
    pub iteration: usize,
    /// −(mean net(data) − mean net(samples)).
    pub loss: f64,
    /// mean net(data).
    pub f_data: f64,
    /// mean net(samples).
    pub f_samples: f64,
    /// Mean acceptance probability of the sampler's transitions (1 for samplers without MH).
    pub accept: f64,
    /// Learning rate used.
    pub lr: f64,
}

/// A PCD run in progress: model, EMA, Adam moments, replay buffer, iteration.
pub struct PcdTrainer {
    cfg: PcdConfig,
    model: ResNetEbm,
    ema: Vec<Tensor>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    buffer: Vec<u32>,
    iteration: usize,
}

impl PcdTrainer {
    /// A fresh run: the model as given (its initial weights), EMA = those weights, zero Adam
    /// moments, the buffer drawn from Bernoulli(μ).
    pub fn new(model: ResNetEbm, cfg: PcdConfig) -> Result<Self, TrainError> {
        check(&cfg)?;
        let mut rng = setup_rng(derive_seed(cfg.seed, &[BUFFER]));
        let buffer = (0..cfg.buffer)
            .flat_map(|_| model.mu().iter().map(|&m| u32::from(rng.random::<f64>() < m)).collect::<Vec<_>>())
            .collect();
        let ema = model.vars().iter().map(|(_, v)| v.as_tensor().copy()).collect::<Result<Vec<_>, _>>()?;
        let zeros = model.vars().iter().map(|(_, v)| v.as_tensor().zeros_like()).collect::<Result<Vec<_>, _>>()?;
        Ok(PcdTrainer { cfg, model, ema, m: zeros.clone(), v: zeros, buffer, iteration: 0 })
    }

    /// The model being trained.
    pub fn model(&self) -> &ResNetEbm {
        &self.model
    }

    /// Completed iterations.
    pub fn iteration(&self) -> usize {
        self.iteration
    }

    /// The replay buffer (buffer × d bits).
    pub fn buffer(&self) -> &[u32] {
        &self.buffer
    }

    /// The run's configuration.
    pub fn config(&self) -> &PcdConfig {
        &self.cfg
    }

    /// A model with the EMA parameters (the one that is evaluated).
    pub fn ema_model(&self) -> Result<ResNetEbm, TrainError> {
        let names = self.model.vars().into_iter().map(|(n, _)| n);
        let params: HashMap<String, Tensor> = names.zip(self.ema.iter().cloned()).collect();
        let m = &self.model;
        Ok(ResNetEbm::from_params(*m.config(), m.mu(), &params, m.dtype(), m.device())?)
    }

    /// One PCD iteration with `sampler` on `data` (see the module doc).
    pub fn step(&mut self, data: &TrainData, sampler: &dyn Sampler) -> Result<IterRecord, TrainError> {
        let (cfg, d) = (self.cfg, self.model.config().d());
        if data.d != d {
            return Err(TrainError::Param(format!("training images have {} pixels, the model {d}", data.d)));
        }
        if data.len() < cfg.batch {
            return Err(TrainError::Param(format!("{} training images < batch {}", data.len(), cfg.batch)));
        }
        let t = self.iteration;
        let seed = derive_seed(cfg.seed, &[ITERATION, t as u64]);
        let mut rng = setup_rng(seed);
        let rows = rand::seq::index::sample(&mut rng, cfg.buffer, cfg.batch).into_vec();
        let items = rand::seq::index::sample(&mut rng, data.len(), cfg.batch).into_vec();
        let mut xd = Vec::with_capacity(cfg.batch * d);
        for &i in &items {
            xd.extend(data.probs[i * d..(i + 1) * d].iter().map(|&p| u32::from(rng.random::<f32>() < p)));
        }
        let x0: Vec<u32> = rows.iter().flat_map(|&r| self.buffer[r * d..(r + 1) * d].iter().copied()).collect();

        // The sampler's transitions: one batched evaluation of all chains per step.
        let mut chains = sampler.start(&self.model, &x0).map_err(|e| TrainError::Sampler(e.to_string()))?;
        let mut rngs = chain_rngs(seed, 0, cfg.batch);
        let mut info = vec![StepInfo::default(); cfg.batch];
        let mut accept = 0.0;
        for _ in 0..cfg.steps {
            chains.try_step(&mut rngs, &mut info, Batch::Full).map_err(|e| TrainError::Sampler(e.to_string()))?;
            accept += info.iter().map(|i| i.accept_prob).sum::<f64>();
        }
        let xs = chains.positions().to_vec();
        drop(chains);
        for (k, &r) in rows.iter().enumerate() {
            self.buffer[r * d..(r + 1) * d].copy_from_slice(&xs[k * d..(k + 1) * d]);
        }

        // The loss and Adam step on the attached parameters.
        let fd = self.model.net(&self.model.bits_tensor(&xd, cfg.batch)?, Params::Attached)?.mean_all()?;
        let fs = self.model.net(&self.model.bits_tensor(&xs, cfg.batch)?, Params::Attached)?.mean_all()?;
        let loss = (&fs - &fd)?;
        let grads = loss.backward()?;
        let lr = cfg.lr_at(t);
        for (k, (name, var)) in self.model.vars().into_iter().enumerate() {
            let g = grads.get(var.as_tensor()).ok_or_else(|| TrainError::NoGradient(name.clone()))?;
            Adam::default().step(&var, g, &mut self.m[k], &mut self.v[k], t, lr, 0.0)?;
            self.ema[k] = ((&self.ema[k] * cfg.ema_decay)? + (var.as_tensor().detach() * (1.0 - cfg.ema_decay))?)?;
        }
        self.iteration += 1;
        let (f_data, f_samples) = (scalar(&fd)?, scalar(&fs)?);
        Ok(IterRecord {
            iteration: self.iteration,
            loss: f_samples - f_data,
            f_data,
            f_samples,
            accept: if cfg.steps == 0 { 1.0 } else { accept / (cfg.steps * cfg.batch) as f64 },
            lr,
        })
    }

    /// Writes the whole state to `path` (safetensors; a temporary file renamed into place, so
    /// an interruption leaves the previous checkpoint intact).
    pub fn save(&self, path: &Path) -> Result<(), TrainError> {
        let mut map = HashMap::new();
        let names: Vec<String> = self.model.vars().into_iter().map(|(n, _)| n).collect();
        for (k, (name, var)) in self.model.vars().into_iter().enumerate() {
            map.insert(format!("param/{name}"), var.as_tensor().detach());
            map.insert(format!("ema/{name}"), self.ema[k].clone());
            map.insert(format!("adam_m/{}", names[k]), self.m[k].clone());
            map.insert(format!("adam_v/{}", names[k]), self.v[k].clone());
        }
        let dev = Device::Cpu;
        let bits: Vec<u8> = self.buffer.iter().map(|&b| b as u8).collect();
        let d = self.model.config().d();
        map.insert("buffer".into(), Tensor::from_vec(bits, (self.cfg.buffer, d), &dev)?);
        map.insert(
            "meta/ints".into(),
            Tensor::from_vec(
                meta_ints(&self.cfg, self.model.config(), self.iteration)
                    .into_iter()
                    .map(|v| v as i64)
                    .collect::<Vec<_>>(),
                11,
                &dev,
            )?,
        );
        map.insert("meta/floats".into(), Tensor::from_vec(meta_floats(&self.cfg, self.model.mu()), 3 + d, &dev)?);
        save_safetensors_atomic(path, &map)
    }

    /// Continues the run saved at `path`, which must have been written by a run with the same
    /// `cfg`, network shape `config` and μ (else a [`TrainError::Checkpoint`] naming the field).
    pub fn resume(
        path: &Path,
        cfg: PcdConfig,
        config: ResNetConfig,
        mu: &[f64],
        dtype: DType,
        device: &Device,
    ) -> Result<Self, TrainError> {
        check(&cfg)?;
        let ck = |e: String| TrainError::Checkpoint { path: path.display().to_string(), message: e };
        let map = candle_core::safetensors::load(path, device).map_err(|e| ck(dlp_tensor::candle_message(&e)))?;
        let get = |k: &str| map.get(k).cloned().ok_or_else(|| ck(format!("no tensor {k}")));
        let ints: Vec<u64> = get("meta/ints")?.to_vec1::<i64>()?.into_iter().map(|v| v as u64).collect();
        let floats: Vec<f64> = get("meta/floats")?.to_vec1::<f64>()?;
        let iteration = ints.last().copied().unwrap_or(0) as usize;
        if ints.len() != 11 || ints[..10] != meta_ints(&cfg, &config, iteration)[..10] {
            return Err(ck(format!(
                "written by another run (seed, buffer, batch, steps, warm-up, network): found {:?}",
                &ints[..ints.len().min(10)]
            )));
        }
        if floats != meta_floats(&cfg, mu) {
            return Err(ck("written with another learning rate, EMA decay or μ".into()));
        }
        let mut params = HashMap::new();
        for (name, _) in config.param_shapes() {
            params.insert(name.clone(), get(&format!("param/{name}"))?);
        }
        let model = ResNetEbm::from_params(config, mu, &params, dtype, device)?;
        let load = |prefix: &str| -> Result<Vec<Tensor>, TrainError> {
            config.param_shapes().iter().map(|(n, _)| Ok(get(&format!("{prefix}/{n}"))?.to_dtype(dtype)?)).collect()
        };
        let (ema, m, v) = (load("ema")?, load("adam_m")?, load("adam_v")?);
        let buffer: Vec<u32> = get("buffer")?.flatten_all()?.to_vec1::<u8>()?.into_iter().map(u32::from).collect();
        if buffer.len() != cfg.buffer * config.d() {
            return Err(ck(format!("buffer has {} bits, expected {}", buffer.len(), cfg.buffer * config.d())));
        }
        Ok(PcdTrainer { cfg, model, ema, m, v, buffer, iteration })
    }
}

fn check(cfg: &PcdConfig) -> Result<(), TrainError> {
    if cfg.batch == 0 || cfg.buffer < cfg.batch {
        return Err(TrainError::Param(format!(
            "PCD needs 1 ≤ batch ≤ buffer, found batch {} and buffer {}",
            cfg.batch, cfg.buffer
        )));
    }
    if !(cfg.lr.is_finite() && cfg.lr > 0.0 && (0.0..1.0).contains(&cfg.ema_decay)) {
        return Err(TrainError::Param(format!(
            "PCD needs lr > 0 and EMA decay in [0, 1), found lr {} and decay {}",
            cfg.lr, cfg.ema_decay
        )));
    }
    Ok(())
}

fn meta_ints(cfg: &PcdConfig, net: &ResNetConfig, iteration: usize) -> Vec<u64> {
    let c = [cfg.buffer, cfg.batch, cfg.steps, cfg.warmup, net.channels, net.stride2_blocks, net.stride1_blocks];
    let mut v = vec![cfg.seed];
    v.extend(c.iter().map(|&x| x as u64));
    v.extend([net.height as u64, net.width as u64, iteration as u64]);
    v
}

fn meta_floats(cfg: &PcdConfig, mu: &[f64]) -> Vec<f64> {
    let mut v = vec![cfg.lr, cfg.ema_decay, 0.0];
    v.extend_from_slice(mu);
    v
}

fn scalar(t: &Tensor) -> Result<f64, TrainError> {
    Ok(t.to_dtype(DType::F64)?.to_scalar::<f64>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::TargetExt;
    use dlp_core::rng::setup_rng;
    use dlp_samplers::{SamplerParams, build_sampler};

    fn tiny() -> ResNetConfig {
        ResNetConfig { channels: 4, stride2_blocks: 1, stride1_blocks: 1, height: 6, width: 6 }
    }

    fn cfg(seed: u64) -> PcdConfig {
        PcdConfig { buffer: 12, batch: 5, steps: 3, lr: 1e-2, warmup: 3, ema_decay: 0.9, seed }
    }

    fn mu() -> Vec<f64> {
        (0..36).map(|i| 0.1 + 0.8 * (i as f64 / 35.0)).collect()
    }

    fn data() -> TrainData {
        let mut rng = setup_rng(99);
        let p: Vec<f32> = (0..20 * 36).map(|_| rng.random::<f32>()).collect();
        TrainData::new(p, 36).unwrap()
    }

    fn fresh(seed: u64) -> PcdTrainer {
        let m = ResNetEbm::new(tiny(), &mu(), DType::F32, &Device::Cpu, &mut setup_rng(seed)).unwrap();
        PcdTrainer::new(m, cfg(seed)).unwrap()
    }

    fn state(t: &PcdTrainer) -> (Vec<Vec<f32>>, Vec<Vec<f32>>, Vec<u32>) {
        let flat = |x: &Tensor| x.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let params = t.model().vars().iter().map(|(_, v)| flat(v.as_tensor())).collect();
        let ema = t.ema.iter().chain(&t.m).chain(&t.v).map(flat).collect();
        (params, ema, t.buffer().to_vec())
    }

    fn dmala() -> Box<dyn Sampler> {
        build_sampler("dmala", &SamplerParams { step_size: Some(0.2), ..Default::default() }).unwrap()
    }

    #[test]
    fn an_interrupted_and_resumed_run_equals_the_uninterrupted_one_bitwise() {
        let (s, data) = (dmala(), data());
        let mut straight = fresh(5);
        let records: Vec<IterRecord> = (0..4).map(|_| straight.step(&data, s.as_ref()).unwrap()).collect();

        let dir = std::env::temp_dir().join(format!("dlp-ebm-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ck.safetensors");
        let mut first = fresh(5);
        for _ in 0..2 {
            first.step(&data, s.as_ref()).unwrap();
        }
        first.save(&path).unwrap();
        drop(first);
        let mut resumed = PcdTrainer::resume(&path, cfg(5), tiny(), &mu(), DType::F32, &Device::Cpu).unwrap();
        assert_eq!(resumed.iteration(), 2);
        let tail: Vec<IterRecord> = (0..2).map(|_| resumed.step(&data, s.as_ref()).unwrap()).collect();
        assert_eq!(tail, records[2..], "the resumed iterations' records");
        assert!(state(&resumed) == state(&straight), "parameters, EMA, Adam moments and buffer differ after resuming");

        // The run moved: parameters differ from their initial values and rows of the buffer changed.
        let init = fresh(5);
        assert!(state(&init).0 != state(&straight).0 && state(&init).2 != state(&straight).2);
        assert!(records.iter().all(|r| r.loss.is_finite() && r.accept > 0.0 && r.accept <= 1.0));
        for (r, lr) in records.iter().zip([1e-2 / 3.0, 2e-2 / 3.0, 1e-2, 1e-2]) {
            assert!((r.lr - lr).abs() < 1e-15, "warm-up: {} vs {lr}", r.lr);
        }

        // Another run's checkpoint is refused with a line naming the file.
        let e = PcdTrainer::resume(&path, cfg(6), tiny(), &mu(), DType::F32, &Device::Cpu).err().expect("seed differs");
        assert!(e.to_string().starts_with(&format!("checkpoint {}", path.display())), "{e}");
        let e = PcdTrainer::resume(&dir.join("absent"), cfg(5), tiny(), &mu(), DType::F32, &Device::Cpu).err();
        assert!(matches!(e, Some(TrainError::Checkpoint { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_ema_follows_the_parameters_and_the_ema_model_evaluates() {
        let (s, data) = (dmala(), data());
        let mut t = fresh(8);
        let p0 = state(&t).0;
        t.step(&data, s.as_ref()).unwrap();
        let p1 = state(&t).0;
        let e1 = &state(&t).1[..p0.len()];
        // After one step: ema = 0.9·p0 + 0.1·p1, elementwise (f32 arithmetic).
        for ((a, b), e) in p0.iter().zip(&p1).zip(e1) {
            for ((x, y), z) in a.iter().zip(b).zip(e) {
                assert!((0.9 * x + 0.1 * y - z).abs() <= 1e-6 * (1.0 + z.abs()), "{x} {y} {z}");
            }
        }
        let ema = t.ema_model().unwrap();
        let mut f = [0.0; 1];
        ema.log_density_batch(&[1; 36], &mut f).unwrap();
        assert!(f[0].is_finite());
    }

    #[test]
    fn bad_configurations_are_refused() {
        let m = || ResNetEbm::new(tiny(), &mu(), DType::F32, &Device::Cpu, &mut setup_rng(0)).unwrap();
        assert!(PcdTrainer::new(m(), PcdConfig { buffer: 3, ..cfg(0) }).is_err());
        assert!(PcdTrainer::new(m(), PcdConfig { lr: 0.0, ..cfg(0) }).is_err());
        assert!(TrainData::new(vec![0.5; 35], 36).is_err());
        assert!(TrainData::new(vec![1.5; 36], 36).is_err());
        let mut t = PcdTrainer::new(m(), cfg(0)).unwrap();
        let small = TrainData::new(vec![0.5; 36 * 2], 36).unwrap();
        assert!(t.step(&small, dmala().as_ref()).unwrap_err().to_string().contains("< batch 5"));
    }
}
