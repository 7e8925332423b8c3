//! A seeded stand-in for MNIST: 28 × 28 grey images of ten stroke "digits".
//!
//! Each class is 2–3 quadratic Bézier strokes fixed by the class (the same for every seed);
//! each image jitters the control points (±1.5 px), shifts the drawing (±2 px) and varies
//! the stroke width, and renders grey levels that fall off linearly with the distance to
//! the stroke. The result has MNIST's shape, a mean pixel of the same order (≈ 0.1–0.2) and
//! class structure, which is all the tests and `--quick` runs need; it is not MNIST.

use dlp_core::rng::setup_rng;
use rand::RngExt;

type Pt = (f64, f64);

fn class_strokes(class: u8) -> Vec<[Pt; 3]> {
    // Seeded per class (not per data set) so that a class looks alike across seeds.
    let mut rng = setup_rng(0xD161_7000 + class as u64);
    let n = 2 + (rng.random::<f64>() < 0.5) as usize;
    (0..n)
        .map(|_| {
            let mut p = || (rng.random_range(6.0..22.0), rng.random_range(5.0..23.0));
            [p(), p(), p()]
        })
        .collect()
}

fn bezier(s: &[Pt; 3], t: f64) -> Pt {
    let u = 1.0 - t;
    (u * u * s[0].0 + 2.0 * u * t * s[1].0 + t * t * s[2].0, u * u * s[0].1 + 2.0 * u * t * s[1].1 + t * t * s[2].1)
}

/// `n` images (`n × 784` grey levels) and their labels (`i mod 10`), from `seed`.
pub fn synthetic_digits(n: usize, seed: u64) -> (Vec<u8>, Vec<u8>) {
    let templates: Vec<Vec<[Pt; 3]>> = (0..10).map(class_strokes).collect();
    let mut rng = setup_rng(seed);
    let mut images = vec![0u8; n * 784];
    let mut labels = Vec::with_capacity(n);
    let mut points = Vec::new();
    for (item, img) in images.chunks_exact_mut(784).enumerate() {
        let class = (item % 10) as u8;
        labels.push(class);
        let (dx, dy) = (rng.random_range(-2.0..2.0), rng.random_range(-2.0..2.0));
        let width: f64 = rng.random_range(1.2..2.2);
        points.clear();
        for s in &templates[class as usize] {
            let mut j = *s;
            for p in j.iter_mut() {
                p.0 += dx + rng.random_range(-1.5..1.5);
                p.1 += dy + rng.random_range(-1.5..1.5);
            }
            points.extend((0..=40).map(|k| bezier(&j, k as f64 / 40.0)));
        }
        for (pix, v) in img.iter_mut().enumerate() {
            let (r, c) = ((pix / 28) as f64, (pix % 28) as f64);
            let dist = points.iter().map(|&(x, y)| (x - c).hypot(y - r)).fold(f64::INFINITY, f64::min);
            *v = (255.0 * (1.0 - dist / (2.0 * width)).clamp(0.0, 1.0)) as u8;
        }
    }
    (images, labels)
}
