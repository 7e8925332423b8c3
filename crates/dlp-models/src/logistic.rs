//! Logistic regression with discrete weights: a data model, so stochastic-gradient samplers
//! (`sg-dula`, `sg-dmala`; paper 000 §6) run on it from a model file.
//!
//! Weights w ∈ V^d (spin: w_i ∈ {−1, +1}, a binary-weight classifier; binary: w_i ∈ {0, 1},
//! feature selection). For data (a_n, y_n), n < N, with a_n ∈ ℝ^d and y_n ∈ {0, 1}:
//!
//! f(w) = Σ_n ℓ_n(w) + bᵀw,  ℓ_n(w) = y_n z_n − softplus(z_n),  z_n = a_nᵀw,
//!
//! i.e. the Bernoulli log-likelihood of the labels plus a linear log-prior (field b). The
//! gradient with respect to the bit x (w = x for binary, w = 2x − 1 for spin, s = dw/dx):
//! ∂f/∂x_i = s (Σ_n (y_n − σ(z_n)) a_{n,i} + b_i).
//!
//! A minibatch β of B items gives f̂ = k Σ_{n∈β} ℓ_n + bᵀw and its gradient, with k from the
//! model's [`BatchScaling`]: N/B (the paper's unbiased estimate, the default) or c/B (the
//! official BNN code's "mean times a constant"). A batch of states is evaluated with two
//! matrix products shared by all rows (Z = W A_βᵀ, then G = (Y − σ(Z)) A_β; ndarray →
//! matrixmultiply computes every row with the same kernel, so rows do not interact).

use crate::error::{ModelError, bit_space, check_finite};
use crate::fields::{err, matrix, number, show, vector};
use crate::model::{LoadedModel, Model, ModelKind, rows};
use dlp_core::math::{sigmoid, softplus};
use dlp_core::{Batch, BatchScaling, DomainKind, EvalError, Space, Target};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The registration of `kind: logistic` in the model file: features `X` (N × d, required),
/// labels `y` (N zeros and ones, required), field `b` (zero when absent) and `minibatch`
/// (`{"scaling": "sum"}`, the default, or `{"scaling": "mean_times", "c": C}`).
pub static KIND: ModelKind = ModelKind {
    name: "logistic",
    keys: &["X", "y", "b", "minibatch"],
    default_domain: DomainKind::Spin,
    domains: &[DomainKind::Spin, DomainKind::Binary],
    parse,
    doc: "a data model: features `X` (N × d), labels `y` (0/1), field `b`, `minibatch` scaling (`sum`, the paper's N/B, or `mean_times` with `c`, the official BNN code's); runs `sg-dula`/`sg-dmala`",
};

fn parse(obj: &Map<String, Value>, space: &Space) -> Result<Model, ModelError> {
    let d = space.d;
    let d_desc = format!("d = {d}");
    let Some(yv) = obj.get("y") else {
        return err("missing key \"y\" (the N labels, 0 or 1)");
    };
    let y = vector(yv, "y", None)?;
    let Some(xv) = obj.get("X") else {
        return err("missing key \"X\" (the features, N × d)");
    };
    let (a, _) = matrix(xv, "X", (y.len(), &format!("y has N = {} labels", y.len())), Some((d, &d_desc)))?;
    let b = match obj.get("b") {
        Some(x) => vector(x, "b", Some((d, &d_desc)))?,
        None => vec![0.0; d],
    };
    let scaling = match obj.get("minibatch") {
        None => BatchScaling::Sum,
        Some(Value::Object(m)) => {
            if let Some(k) = m.keys().find(|k| *k != "scaling" && *k != "c") {
                return err(format!("unknown key \"{}\" in minibatch", crate::fields::key_name(k)));
            }
            match (m.get("scaling").and_then(Value::as_str), m.get("c")) {
                (Some("sum"), None) => BatchScaling::Sum,
                (Some("mean_times"), Some(c)) => BatchScaling::MeanTimes { c: number(c, "minibatch.c")? },
                (Some("mean_times"), None) => return err("minibatch.scaling \"mean_times\" needs minibatch.c"),
                (Some("sum"), Some(_)) => return err("minibatch.c only goes with scaling \"mean_times\""),
                _ => {
                    let found = m.get("scaling").map_or("nothing".to_string(), show);
                    return err(format!("minibatch.scaling must be \"sum\" or \"mean_times\", found {found}"));
                }
            }
        }
        Some(other) => return err(format!("minibatch must be an object with a scaling, found {}", show(other))),
    };
    Ok(Model::new(LogisticModel::new(space.kind, d, a, y, b, scaling)?))
}

impl LoadedModel for LogisticModel {
    fn kind(&self) -> &'static ModelKind {
        &KIND
    }

    fn write_params(&self, o: &mut Map<String, Value>) {
        o.insert("X".into(), rows(&self.a, self.space.d));
        o.insert("y".into(), json!(self.y));
        o.insert("b".into(), json!(self.b));
        let mb = match self.scaling {
            BatchScaling::Sum => json!({"scaling": "sum"}),
            BatchScaling::MeanTimes { c } => json!({"scaling": "mean_times", "c": c}),
        };
        o.insert("minibatch".into(), mb);
    }
}

/// Logistic regression with discrete weights (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct LogisticModel {
    space: Space,
    /// Features, N × d row-major.
    a: Vec<f64>,
    /// Labels in {0, 1}.
    y: Vec<f64>,
    /// Linear log-prior on the weights (field), length d.
    b: Vec<f64>,
    scaling: BatchScaling,
}

impl LogisticModel {
    /// The model with weight `domain` (binary or spin), features `a` (N × d row-major),
    /// labels `y` (0 or 1), field `b` (length d) and minibatch scaling.
    pub fn new(
        domain: DomainKind,
        d: usize,
        a: Vec<f64>,
        y: Vec<f64>,
        b: Vec<f64>,
        scaling: BatchScaling,
    ) -> Result<Self, ModelError> {
        let space = bit_space(domain, d, "logistic")?;
        let n = y.len();
        if n == 0 {
            return Err(ModelError::param("y must hold at least one label (N >= 1)"));
        }
        if a.len() != n * d {
            return Err(ModelError::param(format!("X must be N × d = {n} × {d}, found {} entries", a.len())));
        }
        if b.len() != d {
            return Err(ModelError::param(format!("b has length {} but d = {d}", b.len())));
        }
        if let Some(i) = y.iter().position(|&v| v != 0.0 && v != 1.0) {
            return Err(ModelError::param(format!("y[{i}] must be 0 or 1, found {}", y[i])));
        }
        check_finite("X", &a)?;
        check_finite("b", &b)?;
        if let BatchScaling::MeanTimes { c } = scaling
            && !(c.is_finite() && c > 0.0)
        {
            return Err(ModelError::param(format!("minibatch.c must be a finite number > 0, found {c}")));
        }
        Ok(LogisticModel { space, a, y, b, scaling })
    }

    /// Number of data items N.
    pub fn n(&self) -> usize {
        self.y.len()
    }

    /// Features, N × d row-major.
    pub fn features(&self) -> &[f64] {
        &self.a
    }

    /// Labels (0 or 1).
    pub fn labels(&self) -> &[f64] {
        &self.y
    }

    /// The field b.
    pub fn field(&self) -> &[f64] {
        &self.b
    }

    /// The minibatch scaling.
    pub fn scaling(&self) -> BatchScaling {
        self.scaling
    }

    fn ds(&self) -> f64 {
        if self.space.kind == DomainKind::Spin { 2.0 } else { 1.0 }
    }

    /// f̂ (and ∇f̂) of every row of `xs` over the items `items` (`None`: every item, read in
    /// place without gathering a copy of the features) with likelihood factor `k`.
    fn eval_items(&self, xs: &[u32], items: Option<&[usize]>, k: f64, f: &mut [f64], grad: Option<&mut [f64]>) {
        let d = self.space.d;
        let n = f.len();
        // Weights as values (w = x or 2x − 1), and the batch's features and labels.
        let w = Array2::from_shape_fn((n, d), |(r, i)| self.space.value(xs[r * d + i]) as f64);
        let all = ArrayView2::from_shape((self.n(), d), &self.a).expect("N × d by construction");
        let gathered = items.map(|it| Array2::from_shape_fn((it.len(), d), |(t, i)| self.a[it[t] * d + i]));
        let ab = gathered.as_ref().map_or(all, |g| g.view());
        let yb: Cow<[f64]> = match items {
            Some(it) => Cow::Owned(it.iter().map(|&t| self.y[t]).collect()),
            None => Cow::Borrowed(&self.y),
        };
        let nb = yb.len();
        let mut z = Array2::<f64>::zeros((n, nb));
        general_mat_mul(1.0, &w, &ab.t(), 0.0, &mut z);
        for (r, fr) in f.iter_mut().enumerate() {
            let lik: f64 = (0..nb).map(|t| yb[t] * z[(r, t)] - softplus(z[(r, t)])).sum();
            let prior: f64 = (0..d).map(|i| self.b[i] * w[(r, i)]).sum();
            *fr = k * lik + prior;
        }
        if let Some(grad) = grad {
            let resid = Array2::from_shape_fn((n, nb), |(r, t)| k * (yb[t] - sigmoid(z[(r, t)])));
            let mut g = Array2::<f64>::zeros((n, d));
            general_mat_mul(1.0, &resid, &ab, 0.0, &mut g);
            let s = self.ds();
            for r in 0..n {
                for i in 0..d {
                    grad[r * d + i] = s * (g[(r, i)] + self.b[i]);
                }
            }
        }
    }
}

impl Target for LogisticModel {
    fn space(&self) -> &Space {
        &self.space
    }

    fn capabilities(&self) -> dlp_core::Capabilities<'_> {
        dlp_core::Capabilities { n_data: Some(self.n()), ..dlp_core::Capabilities::default() }
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        match batch {
            Batch::Full => self.eval_items(xs, None, 1.0, log_density, grad),
            Batch::Items(items) => {
                if let Some(&index) = items.iter().find(|&&i| i >= self.n()) {
                    return Err(EvalError::BadItem { index, n_data: self.n() });
                }
                let k = self.scaling.factor(self.n(), items.len());
                self.eval_items(xs, Some(items), k, log_density, grad);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlp_core::TargetExt;

    /// Three items, d = 2, spin weights: values checked against a hand expansion of ℓ_n.
    fn tiny(scaling: BatchScaling) -> LogisticModel {
        LogisticModel::new(
            DomainKind::Spin,
            2,
            vec![1.0, 0.5, -0.3, 2.0, 0.7, -1.1],
            vec![1.0, 0.0, 1.0],
            vec![0.2, -0.1],
            scaling,
        )
        .unwrap()
    }

    fn by_hand(m: &LogisticModel, x: &[u32], items: &[usize], k: f64) -> (f64, [f64; 2]) {
        let w: Vec<f64> = x.iter().map(|&c| 2.0 * c as f64 - 1.0).collect();
        let (mut f, mut g) = (0.0, [0.0; 2]);
        for &n in items {
            let a = &m.a[n * 2..n * 2 + 2];
            let z = a[0] * w[0] + a[1] * w[1];
            let p = 1.0 / (1.0 + (-z).exp());
            f += k * (m.y[n] * p.ln() + (1.0 - m.y[n]) * (1.0 - p).ln());
            for (gi, ai) in g.iter_mut().zip(a) {
                *gi += 2.0 * k * (m.y[n] - p) * ai;
            }
        }
        f += m.b[0] * w[0] + m.b[1] * w[1];
        for (gi, bi) in g.iter_mut().zip(&m.b) {
            *gi += 2.0 * bi;
        }
        (f, g)
    }

    #[test]
    fn full_and_minibatch_values_match_a_hand_expansion() {
        for scaling in [BatchScaling::Sum, BatchScaling::MeanTimes { c: 10.0 }] {
            let m = tiny(scaling);
            let xs = [0u32, 1, 1, 1, 1, 0];
            let (mut f, mut g) = ([0.0; 3], [0.0; 6]);
            m.log_density_grad_batch(&xs, &mut f, &mut g).unwrap();
            for r in 0..3 {
                let (fh, gh) = by_hand(&m, &xs[2 * r..2 * r + 2], &[0, 1, 2], 1.0);
                assert!(
                    (f[r] - fh).abs() < 1e-12
                        && (g[2 * r] - gh[0]).abs() < 1e-12
                        && (g[2 * r + 1] - gh[1]).abs() < 1e-12
                );
            }
            let items = [2usize, 0];
            let k = match scaling {
                BatchScaling::Sum => 1.5,
                BatchScaling::MeanTimes { c } => c / 2.0,
            };
            m.evaluate(&xs, Batch::Items(&items), &mut f, Some(&mut g)).unwrap();
            for r in 0..3 {
                let (fh, gh) = by_hand(&m, &xs[2 * r..2 * r + 2], &items, k);
                assert!((f[r] - fh).abs() < 1e-12, "{scaling:?} row {r}: {} vs {fh}", f[r]);
                assert!((g[2 * r] - gh[0]).abs() < 1e-12 && (g[2 * r + 1] - gh[1]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn the_sum_scaling_is_unbiased_over_all_batches() {
        let m = tiny(BatchScaling::Sum);
        let x = [1u32, 0];
        let (mut f, mut g) = ([0.0], [0.0; 2]);
        m.log_density_grad_batch(&x, &mut f, &mut g).unwrap();
        let (mut fm, mut gm) = (0.0, [0.0; 2]);
        let batches = [[0usize, 1], [0, 2], [1, 2]];
        for b in batches {
            let (mut fb, mut gb) = ([0.0], [0.0; 2]);
            m.evaluate(&x, Batch::Items(&b), &mut fb, Some(&mut gb)).unwrap();
            fm += fb[0] / 3.0;
            gm[0] += gb[0] / 3.0;
            gm[1] += gb[1] / 3.0;
        }
        assert!((fm - f[0]).abs() < 1e-12 && (gm[0] - g[0]).abs() < 1e-12 && (gm[1] - g[1]).abs() < 1e-12);
    }

    #[test]
    fn gradient_matches_finite_differences_of_the_bit_extension() {
        // f is a smooth function of the bits through w = 2x − 1: central differences at a
        // state agree with the analytic gradient.
        let m = tiny(BatchScaling::Sum);
        let f_at = |x: [f64; 2]| {
            let w = [2.0 * x[0] - 1.0, 2.0 * x[1] - 1.0];
            let mut f = m.b[0] * w[0] + m.b[1] * w[1];
            for n in 0..3 {
                let z = m.a[2 * n] * w[0] + m.a[2 * n + 1] * w[1];
                f += m.y[n] * z - softplus(z);
            }
            f
        };
        let (mut f, mut g) = ([0.0], [0.0; 2]);
        m.log_density_grad_batch(&[1, 0], &mut f, &mut g).unwrap();
        let h = 1e-6;
        for i in 0..2 {
            let (mut up, mut dn) = ([1.0, 0.0], [1.0, 0.0]);
            up[i] += h;
            dn[i] -= h;
            assert!(((f_at(up) - f_at(dn)) / (2.0 * h) - g[i]).abs() < 1e-6);
        }
    }

    #[test]
    fn bad_parameters_and_items_are_named() {
        let e = |r: Result<LogisticModel, ModelError>| r.err().unwrap().to_string();
        let s = BatchScaling::Sum;
        assert!(
            e(LogisticModel::new(DomainKind::Spin, 2, vec![0.0; 4], vec![1.0, 2.0], vec![0.0; 2], s)).contains("y[1]")
        );
        assert!(
            e(LogisticModel::new(DomainKind::Spin, 2, vec![0.0; 3], vec![1.0, 0.0], vec![0.0; 2], s)).contains("X")
        );
        assert!(
            e(LogisticModel::new(DomainKind::Spin, 2, vec![0.0; 4], vec![1.0, 0.0], vec![0.0; 1], s)).contains("b")
        );
        let bad_c = BatchScaling::MeanTimes { c: -1.0 };
        assert!(
            e(LogisticModel::new(DomainKind::Spin, 2, vec![0.0; 4], vec![1.0, 0.0], vec![0.0; 2], bad_c))
                .contains("minibatch.c")
        );
        let m = tiny(s);
        let err = m.evaluate(&[0, 0], Batch::Items(&[3]), &mut [0.0], None).unwrap_err();
        assert_eq!(err, EvalError::BadItem { index: 3, n_data: 3 });
    }

    #[test]
    fn the_model_file_round_trips_and_names_bad_keys() {
        use crate::file::{Format, parse_model_str};
        let text = r#"{"schema": "dlp.model.v1", "kind": "logistic", "d": 2, "y": [1, 0, 1],
            "X": [[1.0, 0.5], [-0.3, 2.0], [0.7, -1.1]], "b": [0.2, -0.1],
            "minibatch": {"scaling": "mean_times", "c": 10}}"#;
        let m = parse_model_str(text, Format::Json, "m.json").unwrap();
        assert_eq!(m.downcast_ref::<LogisticModel>(), Some(&tiny(BatchScaling::MeanTimes { c: 10.0 })));
        assert_eq!(parse_model_str(&m.to_json(), Format::Json, "m.json").unwrap(), m);
        assert_eq!(m.n_data(), Some(3));
        let bad = |from: &str, to: &str| {
            parse_model_str(&text.replace(from, to), Format::Json, "m.json").unwrap_err().to_string()
        };
        assert_eq!(bad("[1, 0, 1]", "[1, 0]"), "m.json: X has 3 rows but y has N = 2 labels");
        assert_eq!(bad("[0.7, -1.1]", "[0.7]"), "m.json: X[2] has 1 entries but d = 2");
        assert_eq!(bad(r#""c": 10"#, r#""c": 0"#), "m.json: minibatch.c must be a finite number > 0, found 0");
        assert_eq!(
            bad("mean_times", "mean"),
            "m.json: minibatch.scaling must be \"sum\" or \"mean_times\", found \"mean\""
        );
        assert!(
            bad(r#""d": 2"#, r#""d": 2, "domain": "categorical", "K": 3"#)
                .contains("not supported by the logistic model")
        );
    }
}
