//! Milliseconds per step of the device-resident RBM samplers (`dlp_device::device_rbm`) on a
//! random 784 × 500 RBM drawn as the official `rbm_sample.py` does without data (W ~ N(0, 0.05),
//! b, c ~ N(0, 1)), at 100 and 1,000 chains: DMALA (α = 0.2), DULA (α = 0.1), block Gibbs and
//! single-site Gibbs (`gibbs`, the per-step work of `bg-1`), the step sizes of `bench/peer`.
//! Each configuration runs WARM steps, synchronises, then times STEPS steps and a final
//! `sync`; one JSON line each.
//!
//! `cargo run --release -p dlp-device --example device_rbm_bench [-- DEVICE STEPS WARM]`
//! (DEVICE `cpu` by default; `cuda:0` in a build with `--features cuda`).

use dlp_core::DomainKind;
use dlp_device::device_chains::DeviceChains;
use dlp_device::device_rbm::{DeviceRbm, RbmSampler};
use dlp_models::Rbm;
use dlp_tensor::{device, device_name};
use rand::{RngExt, SeedableRng};
use std::time::Instant;

/// n draws from N(0, sd²).
fn normals(n: usize, sd: f64, rng: &mut rand::rngs::StdRng) -> Vec<f64> {
    (0..n).map(|_| sd * rng.sample::<f64, _>(rand_distr::StandardNormal)).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dev = device(args.first().map_or("cpu", String::as_str)).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let arg = |i: usize, default: usize| args.get(i).map_or(default, |s| s.parse().expect("an integer"));
    let (steps, warm) = (arg(1, 50), arg(2, 10));
    let (d, m) = (784, 500);
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let w = normals(d * m, 0.05f64.sqrt(), &mut rng);
    let (b, c) = (normals(d, 1.0, &mut rng), normals(m, 1.0, &mut rng));
    let rbm = Rbm::new(DomainKind::Binary, d, m, w, b, c).expect("a valid RBM");
    for chains in [100, 1000] {
        let x0: Vec<u32> = (0..chains * d).map(|_| rng.random_range(0..2u32)).collect();
        for sampler in [
            RbmSampler::Dmala { alpha: 0.2 },
            RbmSampler::Dula { alpha: 0.1 },
            RbmSampler::BlockGibbs,
            RbmSampler::Gibbs,
        ] {
            let mut run = DeviceRbm::new(&rbm, sampler, &x0, 0, &dev).unwrap_or_else(|e| {
                eprintln!("error: {e}");
                std::process::exit(1)
            });
            let step = |run: &mut DeviceRbm, k: usize| {
                for _ in 0..k {
                    run.step().expect("a step");
                }
                run.sync().expect("sync");
            };
            step(&mut run, warm);
            let t = Instant::now();
            step(&mut run, steps);
            let ms = t.elapsed().as_secs_f64() * 1e3 / steps as f64;
            let acc: u64 = run.accepted().expect("counts").iter().sum();
            let rate = acc as f64 / (chains as f64 * run.steps_taken() as f64);
            println!(
                "{{\"impl\":\"dlp-device\",\"device\":\"{}\",\"sampler\":\"{}\",\"model\":\"rbm\",\"dims\":{d},\"hidden\":{m},\"chains\":{chains},\"steps\":{steps},\"ms_per_step\":{ms:.4},\"accept_rate\":{rate:.4}}}",
                device_name(&dev),
                run.name()
            );
        }
    }
}
