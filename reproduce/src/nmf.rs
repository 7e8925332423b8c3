//! Paper 001 §6.1 (Bayesian Poisson NMF, App. C) on the MovieLens subset of `data.md` (or a
//! synthetic stand-in): ratings → a random 75 : 12.5 : 12.5 split, the model
//! `dlp_models::nmf::PoissonNmf` on the training entries, samplers of `dlp_samplers::bounded`
//! with minibatches, and the test RMSE of the Bayesian predictive mean (the running average of
//! X̂ at the test entries from iteration 1, spec §4 \[R\]).

use anyhow::{Context, Result, anyhow, bail};
use dlp_core::draw::standard_normal;
use dlp_core::rng::derive_seed;
use dlp_core::transform::Transform;
use dlp_core::{Observer, States, StepContext, StepInfo, run_continuous, setup_rng};
use dlp_models::nmf::PoissonNmf;
use dlp_samplers::bounded::{BoundedSgld, Method, StepSchedule};
use rand::seq::SliceRandom;
use std::path::Path;

/// Ratings as (user index, movie index, rating), indices dense from 0.
pub struct Ratings {
    /// Users I.
    pub users: usize,
    /// Movies J.
    pub movies: usize,
    /// The entries.
    pub entries: Vec<(u32, u32, f64)>,
}

/// Reads `userId,movieId,rating[,…]` with a header line (the export of `just data movielens`);
/// ids are mapped to dense indices in order of first appearance.
pub fn read_ratings(path: &Path) -> Result<Ratings> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_path(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let (mut users, mut movies) = (std::collections::HashMap::new(), std::collections::HashMap::new());
    let mut entries = vec![];
    for record in reader.records() {
        let f = record.with_context(|| format!("cannot read {}", path.display()))?;
        let line = f.position().map_or(0, |p| p.line());
        let bad = || anyhow!("{}:{line}: expected userId,movieId,rating, got {:?}", path.display(), f.as_slice());
        if f.len() < 3 {
            return Err(bad());
        }
        let (u, m): (u64, u64) = (f[0].parse().map_err(|_| bad())?, f[1].parse().map_err(|_| bad())?);
        let r: f64 = f[2].parse().map_err(|_| bad())?;
        if !(r >= 0.0 && r.is_finite()) {
            return Err(bad());
        }
        let nu = users.len();
        let i = *users.entry(u).or_insert(nu) as u32;
        let nm = movies.len();
        let j = *movies.entry(m).or_insert(nm) as u32;
        entries.push((i, j, r));
    }
    if entries.is_empty() {
        bail!("{}: no ratings", path.display());
    }
    Ok(Ratings { users: users.len(), movies: movies.len(), entries })
}

/// A synthetic stand-in with the same shape (named as such in every output).
pub fn synthetic(users: usize, movies: usize, rank: usize, n: usize, seed: u64) -> Result<Ratings> {
    let mut rng = setup_rng(derive_seed(seed, &[7]));
    let (m, _) = PoissonNmf::synthetic(users, movies, rank, n, 3.5, &mut rng).map_err(|e| anyhow!(e))?;
    let entries = (0..m.value.len()).map(|k| (m.row_of[k], m.col_of[k], m.value[k])).collect();
    Ok(Ratings { users, movies, entries })
}

/// The 75 : 12.5 : 12.5 split (train, validation, test), shuffled with `seed`.
pub fn split(r: &Ratings, seed: u64) -> [Vec<(u32, u32, f64)>; 3] {
    let mut e = r.entries.clone();
    e.shuffle(&mut setup_rng(derive_seed(seed, &[8])));
    let (a, b) = (e.len() * 3 / 4, e.len() * 7 / 8);
    [e[..a].to_vec(), e[a..b].to_vec(), e[b..].to_vec()]
}

/// One compared sampler: label and construction at step ε with minibatch B.
pub fn sampler(label: &str, eps: f64, batch: usize) -> Result<BoundedSgld> {
    let (method, half) = match label {
        "corv-exp" => (Method::Corv, Transform::Exp),
        "corv-softplus" => (Method::Corv, Transform::Softplus),
        "corv-icll" => (Method::Corv, Transform::Icll),
        "sgld-mirror" => (Method::Mirror, Transform::Softplus),
        "sgrld" => (Method::Sgrld, Transform::Softplus),
        _ => bail!("unknown sampler {label} (have: corv-exp, corv-softplus, corv-icll, sgld-mirror, sgrld)"),
    };
    Ok(BoundedSgld::new(method, StepSchedule::Constant(eps))?
        .with_transforms(Transform::Sigmoid, half)
        .with_batch(Some(batch)))
}

/// One point of an RMSE curve.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// Iteration.
    pub iter: usize,
    /// Validation RMSE of the predictive mean.
    pub valid: f64,
    /// Test RMSE of the predictive mean.
    pub test: f64,
    /// Test RMSE with predictions clipped to [0.5, 5] (the rating scale).
    pub test_clipped: f64,
}

/// Running mean of X̂ at the validation then test entries; RMSEs every `every` iterations.
struct Predictive<'a> {
    model: &'a PoissonNmf,
    held: Vec<(u32, u32, f64)>,
    n_valid: usize,
    sum: Vec<f64>,
    n: usize,
    every: usize,
    curve: Vec<Point>,
}

impl Observer<f64> for Predictive<'_> {
    fn observe(&mut self, ctx: &StepContext, states: States<'_, f64>, _: &[StepInfo]) {
        let x = &states.positions()[..self.model.dim()];
        for (s, &(i, j, _)) in self.sum.iter_mut().zip(&self.held) {
            *s += self.model.predict(x, i as usize, j as usize);
        }
        self.n += 1;
        if ctx.step.is_multiple_of(self.every) {
            let (mut sv, mut st, mut sc) = (0.0, 0.0, 0.0);
            for (k, (s, &(_, _, v))) in self.sum.iter().zip(&self.held).enumerate() {
                let p = s / self.n as f64;
                if k < self.n_valid {
                    sv += (p - v).powi(2);
                } else {
                    st += (p - v).powi(2);
                    sc += (p.clamp(0.5, 5.0) - v).powi(2);
                }
            }
            let (nv, nt) = (self.n_valid.max(1) as f64, (self.held.len() - self.n_valid).max(1) as f64);
            let (valid, test, test_clipped) = ((sv / nv).sqrt(), (st / nt).sqrt(), (sc / nt).sqrt());
            self.curve.push(Point { iter: ctx.step, valid, test, test_clipped });
        }
    }
}

/// The validation and test RMSE curves of one chain of `iters` iterations, started at
/// √(r̄/R)(1 + 0.1|N(0, 1)|) per entry (spec §4 \[R\]), and the seconds its steps took.
pub fn run_curve(
    model: &PoissonNmf,
    valid: &[(u32, u32, f64)],
    test: &[(u32, u32, f64)],
    s: &BoundedSgld,
    iters: usize,
    every: usize,
    seed: u64,
) -> Result<(Vec<Point>, f64)> {
    let rbar = model.value.iter().sum::<f64>() / model.value.len() as f64;
    let base = (rbar / model.rank as f64).sqrt();
    let mut rng = setup_rng(derive_seed(seed, &[9]));
    // |N(0, 1)|, one draw per entry (the shared formula keeps the published start).
    let x0: Vec<f64> = (0..model.dim()).map(|_| base * (1.0 + 0.1 * standard_normal(&mut rng).abs())).collect();
    let o = crate::on_caller_pool(seed);
    let held: Vec<(u32, u32, f64)> = valid.iter().chain(test).copied().collect();
    let out = run_continuous(s, model, &x0, iters, &o, |_, _| Predictive {
        model,
        sum: vec![0.0; held.len()],
        held: held.clone(),
        n_valid: valid.len(),
        n: 0,
        every,
        curve: vec![],
    })?;
    let secs = out.task_step_seconds.iter().sum();
    Ok((out.observers.into_iter().next().map(|p| p.curve).unwrap_or_default(), secs))
}

/// First iteration of `curve` whose test RMSE is ≤ `threshold`.
pub fn iterations_to(curve: &[Point], threshold: f64) -> Option<usize> {
    curve.iter().find(|c| c.test <= threshold).map(|c| c.iter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratings_are_read_with_dense_ids_and_bad_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        std::fs::write(&p, "userId,movieId,rating,timestamp\n7,31,2.5,1\n7,9,3,2\n2,31,4,3\n").unwrap();
        let r = read_ratings(&p).unwrap();
        assert_eq!((r.users, r.movies), (2, 2));
        assert_eq!(r.entries, vec![(0, 0, 2.5), (0, 1, 3.0), (1, 0, 4.0)]);
        std::fs::write(&p, "userId,movieId,rating\n7,31,x\n").unwrap();
        let e = read_ratings(&p).err().unwrap().to_string();
        assert!(e.contains("r.csv:2"), "{e}");
        // The split keeps every entry once: 75 : 12.5 : 12.5.
        let r = synthetic(5, 6, 2, 80, 1).unwrap();
        let [a, b, c] = split(&r, 3);
        assert_eq!((a.len(), b.len(), c.len()), (60, 10, 10));
    }
}
