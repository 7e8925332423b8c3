//! What the benchmark examples share.

use std::time::Instant;

/// The shortest of `reps` timed calls of `f`, in milliseconds (the least disturbed by other
/// work on a shared machine).
pub fn best_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}
