//! One batched gradient evaluation (what a full-batch DMALA step costs) of a COMPAS-sized BNN
//! (N = 4,887, p = 13, 50 chains; synthetic stand-in features, the cost does not depend on
//! their values) at H = 100 and H = 500: candle's `TensorBnn` (f32 and f64, autograd) against
//! the native CPU kernel of `dlp_models::BnnModel` (f32 and f64), best of REPS, plus each
//! tensor path's largest |f − f_native| at the same precision. One JSON line per
//! (H, backend, precision).
//!
//! `cargo run --release -p dlp-tensor --example bnn_bench [-- DEVICE REPS]` (DEVICE `cpu`
//! by default; `cuda:0` in a build with `--features cuda`). The native kernel runs on one
//! thread (the sampler runner parallelises over chain groups); candle's CPU backend uses
//! `RAYON_NUM_THREADS` threads: set it to 1 for a like-for-like CPU comparison.

use dlp_core::TargetExt;
use dlp_models::BnnModel;
use dlp_models::bnn::Precision;
use dlp_tensor::candle_core::DType;
use dlp_tensor::{TensorBnn, device, device_name};

mod common;
use common::best_ms;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dev = device(args.first().map_or("cpu", String::as_str)).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let reps: usize = args.get(1).map_or(3, |s| s.parse().expect("REPS is an integer"));
    let (n, p, chains) = (4887, 13, 50);
    let x: Vec<f64> = (0..n * p).map(|i| ((i * 7919 % 1000) as f64 / 500.0) - 1.0).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
    for h in [100, 500] {
        let d = (p + 2) * h + 1;
        let xs: Vec<u32> = (0..chains * d).map(|i| ((i * 2654435761usize) >> 7 & 1) as u32).collect();
        for (precision, dtype) in [(Precision::F64, DType::F64), (Precision::F32, DType::F32)] {
            let native =
                BnnModel::new(d, p, h, 100.0, x.clone(), y.clone()).expect("valid shapes").with_precision(precision);
            let tensor = TensorBnn::from_bnn(&native, &dev, dtype).expect("upload");
            let (mut f, mut g) = (vec![0.0; chains], vec![0.0; chains * d]);
            let (mut ft, mut gt) = (vec![0.0; chains], vec![0.0; chains * d]);
            let ms_native = best_ms(reps, || native.log_density_grad_batch(&xs, &mut f, &mut g).unwrap());
            if let Err(e) = tensor.log_density_grad_batch(&xs, &mut ft, &mut gt) {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
            let ms_tensor = best_ms(reps, || tensor.log_density_grad_batch(&xs, &mut ft, &mut gt).unwrap());
            let f_err = f.iter().zip(&ft).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            let prec = format!("{precision:?}").to_lowercase();
            println!(
                "{{\"hidden\": {h}, \"dims\": {d}, \"n\": {n}, \"chains\": {chains}, \"precision\": \"{prec}\", \"native_ms\": {ms_native:.1}, \"candle_ms\": {ms_tensor:.1}, \"candle_device\": \"{}\", \"candle_over_native\": {:.2}, \"max_abs_f_diff\": {f_err:.2e}}}",
                device_name(&dev),
                ms_tensor / ms_native
            );
        }
    }
}
