//! Times the device lattice kernel (`dlp_device::device_lattice`): DULA and DMALA on the
//! paper's L × L periodic Ising lattice (σ = 0.1, no field), `chains` chains from random
//! starts, on the device named by the first argument; prints ns per spin per step.
//!
//! `cargo run --release -p dlp-device --example lattice_bench -- [cpu|cuda:N] [L] [chains]`
//! (defaults: cpu, 100, 1024; `--features cuda` for a GPU).

use dlp_device::device_chains::DeviceChains;
use dlp_device::device_lattice::{DeviceLattice, LatticeSampler};
use dlp_models::IsingModel;
use rand::RngExt;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let device_name = args.first().map_or("cpu", String::as_str);
    let l: usize = args.get(1).map_or(Ok(100), |s| s.parse())?;
    let chains: usize = args.get(2).map_or(Ok(1024), |s| s.parse())?;
    let device = dlp_tensor::device(device_name)?;
    let model = IsingModel::paper_lattice(l, 0.1, 0.0);
    let d = l * l;
    let mut rng = dlp_core::setup_rng(1);
    let x0: Vec<u32> = (0..chains * d).map(|_| rng.random_range(0..2u32)).collect();
    for kind in [LatticeSampler::Dula { alpha: 0.2 }, LatticeSampler::Dmala { alpha: 0.2 }] {
        let mut lat = DeviceLattice::new(&model, kind, &x0, 7, &device)?;
        // Warm-up (module load, caches), then double the step count until a run takes 0.5 s.
        for _ in 0..3 {
            lat.step()?;
        }
        lat.sync()?;
        let mut steps = 4u64;
        let secs = loop {
            let t0 = Instant::now();
            for _ in 0..steps {
                lat.step()?;
            }
            lat.sync()?;
            let s = t0.elapsed().as_secs_f64();
            if s >= 0.5 || steps >= 1 << 20 {
                break s;
            }
            steps *= 2;
        };
        let ns = secs * 1e9 / (steps as f64 * (chains * d) as f64);
        let acc: u64 = lat.accepted()?.iter().sum();
        let rate = acc as f64 / (lat.steps_taken() as f64 * chains as f64);
        println!(
            "{} on {device_name}: L = {l}, {chains} chains, {steps} steps in {secs:.3} s: \
             {ns:.5} ns per spin per step (acceptance {rate:.3})",
            lat.name()
        );
    }
    Ok(())
}
