//! Benchmark (not a test): f and ∇_x f of the ResNet energy (`dlp_tensor::ebm`) for a batch of
//! binary images on the CPU, one JSON line per configuration (median of the timed calls).
//!
//! `RAYON_NUM_THREADS=1 cargo run --release -p dlp-tensor --example ebm_bench [-- channels batch reps]`
//! (candle's CPU kernels take their thread count from `RAYON_NUM_THREADS`). Defaults: the
//! paper's ResNet-64 on 28 × 28, batch 100, 5 timed calls after one warm-up.
//!
//! With `EBM_BENCH_DUMP=FILE` it also writes the network's parameters, μ, the batch and our f
//! and ∇_x f (f64) to FILE as safetensors, so that another implementation of the same
//! network (`scripts/ebm_peer.py`, PyTorch) can check its values against ours before it is
//! timed.

use dlp_core::TargetExt;
use dlp_core::rng::setup_rng;
use dlp_tensor::Device;
use dlp_tensor::candle_core::{self as candle_core, DType, Tensor, utils::get_num_threads};
use dlp_tensor::ebm::{ResNetConfig, ResNetEbm};
use rand::RngExt;
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("integer arguments")).collect();
    let channels = args.first().copied().unwrap_or(64);
    let batch = args.get(1).copied().unwrap_or(100);
    let reps = args.get(2).copied().unwrap_or(5).max(1);
    // As the binaries that sample and train this model do (`table1`, `dlp`).
    dlp_tensor::keep_freed_buffers();
    let cfg = ResNetConfig { channels, ..ResNetConfig::paper() };
    let d = cfg.d();
    let model = ResNetEbm::new(cfg, &vec![0.13; d], DType::F32, &Device::Cpu, &mut setup_rng(0)).expect("model");
    let mut rng = setup_rng(1);
    let xs: Vec<u32> = (0..batch * d).map(|_| u32::from(rng.random::<f64>() < 0.13)).collect();
    let (mut f, mut g) = (vec![0.0; batch], vec![0.0; batch * d]);
    let mut time = |grad: bool| {
        let mut ms = Vec::new();
        for r in 0..=reps {
            let t = Instant::now();
            if grad {
                model.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
            } else {
                model.log_density_batch(&xs, &mut f).unwrap();
            }
            if r > 0 {
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        ms.sort_by(f64::total_cmp);
        ms[ms.len() / 2]
    };
    let (fwd, both) = (time(false), time(true));
    if let Ok(path) = std::env::var("EBM_BENCH_DUMP") {
        // f and g hold the last timed energy + gradient call's values, of this batch.
        let dev = &Device::Cpu;
        let mut out = model.params();
        let bits: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
        out.insert("x".into(), Tensor::from_vec(bits, (batch, d), dev).expect("x"));
        out.insert("mu".into(), Tensor::from_vec(model.mu().to_vec(), d, dev).expect("mu"));
        out.insert("f".into(), Tensor::from_vec(f.clone(), batch, dev).expect("f"));
        out.insert("grad".into(), Tensor::from_vec(g.clone(), (batch, d), dev).expect("grad"));
        candle_core::safetensors::save(&out, &path).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    println!(
        "{{\"bench\":\"resnet_ebm\",\"device\":\"cpu\",\"threads\":{},\"channels\":{channels},\"batch\":{batch},\"reps\":{reps},\"energy_ms\":{fwd:.1},\"energy_grad_ms\":{both:.1}}}",
        get_num_threads()
    );
}
