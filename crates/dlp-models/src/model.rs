//! [`Model`]: any model of the zoo, as loaded from a `dlp.model.v1` file.

use crate::categorical::CategoricalModel;
use crate::couplings::Couplings;
use crate::ising::IsingModel;
use crate::potts::PottsModel;
use crate::rbm::Rbm;
use crate::table::TableModel;
use dlp_core::{Batch, Capabilities, DomainKind, EvalError, Space, Target};
use serde_json::{Value, json};
use std::any::Any;
use std::path::Path;

/// The schema tag of model files.
pub const MODEL_SCHEMA: &str = "dlp.model.v1";

/// One model of any kind. Implements [`Target`] by delegation; [`Target::as_any`] returns the
/// inner concrete model so samplers can downcast to e.g. [`Rbm`] through a `Model`.
#[derive(Clone, Debug, PartialEq)]
pub enum Model {
    /// `kind: ising`.
    Ising(IsingModel),
    /// `kind: potts`.
    Potts(PottsModel),
    /// `kind: rbm`.
    Rbm(Rbm),
    /// `kind: categorical`.
    Categorical(CategoricalModel),
    /// `kind: table`.
    Table(TableModel),
}

macro_rules! delegate {
    ($self:expr, $m:ident => $e:expr) => {
        match $self {
            Model::Ising($m) => $e,
            Model::Potts($m) => $e,
            Model::Rbm($m) => $e,
            Model::Categorical($m) => $e,
            Model::Table($m) => $e,
        }
    };
}

impl Model {
    /// The `kind` string of the model file: "ising", "potts", "rbm", "categorical" or "table".
    pub fn kind_name(&self) -> &'static str {
        match self {
            Model::Ising(_) => "ising",
            Model::Potts(_) => "potts",
            Model::Rbm(_) => "rbm",
            Model::Categorical(_) => "categorical",
            Model::Table(_) => "table",
        }
    }

    /// The model as a `dlp.model.v1` JSON value (lattice couplings keep their lattice form,
    /// others are written as `edges`; categorical models as normalised `logits`).
    pub fn to_json_value(&self) -> Value {
        let space = self.space();
        let mut v = json!({
            "schema": MODEL_SCHEMA,
            "kind": self.kind_name(),
            "d": space.d,
            "domain": domain_name(space.kind),
        });
        let o = v.as_object_mut().expect("object");
        if space.kind == DomainKind::Categorical {
            o.insert("K".into(), json!(space.k()));
            if space.values != (0..space.k() as i64).collect::<Vec<_>>() {
                o.insert("values".into(), json!(space.values));
            }
        }
        let k = space.k();
        match self {
            Model::Ising(m) => {
                insert_couplings(o, m.couplings());
                o.insert("b".into(), json!(m.fields()));
            }
            Model::Potts(m) => {
                insert_couplings(o, m.couplings());
                o.insert("h".into(), rows(m.h(), k));
            }
            Model::Rbm(m) => {
                o.insert("W".into(), rows(m.w(), m.m()));
                o.insert("b".into(), json!(m.b()));
                o.insert("c".into(), json!(m.c()));
            }
            Model::Categorical(m) => {
                o.insert("logits".into(), rows(m.log_probs(), k));
            }
            Model::Table(m) => {
                o.insert("log_prob".into(), json!(m.log_prob()));
            }
        }
        v
    }

    /// The model file text (pretty JSON), which [`crate::parse_model_str`] reads back.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.to_json_value()).expect("model JSON serialises") + "\n"
    }

    /// Writes the model file atomically (temporary file in the same directory, then rename).
    pub fn save_json(&self, path: &Path) -> std::io::Result<()> {
        write_atomic(path, self.to_json().as_bytes())
    }

    /// The inner model as a `&dyn Target`.
    pub fn as_target(&self) -> &dyn Target {
        delegate!(self, m => m)
    }
}

pub(crate) use dlp_core::io::atomic_write as write_atomic;

fn domain_name(kind: DomainKind) -> &'static str {
    match kind {
        DomainKind::Binary => "binary",
        DomainKind::Spin => "spin",
        DomainKind::Categorical => "categorical",
        DomainKind::Ordinal => "ordinal",
    }
}

fn rows(v: &[f64], cols: usize) -> Value {
    Value::Array(v.chunks_exact(cols).map(|r| json!(r)).collect())
}

fn insert_couplings(o: &mut serde_json::Map<String, Value>, c: &Couplings) {
    if let Some(l) = c.lattice_spec() {
        o.insert("lattice".into(), json!({"shape": l.shape, "periodic": l.periodic, "coupling": l.coupling}));
    } else if c.n_pairs() > 0 {
        let edges: Vec<Value> = c.pairs().into_iter().map(|(i, j, w)| json!([i, j, w])).collect();
        o.insert("edges".into(), Value::Array(edges));
    }
}

impl From<IsingModel> for Model {
    fn from(m: IsingModel) -> Self {
        Model::Ising(m)
    }
}
impl From<PottsModel> for Model {
    fn from(m: PottsModel) -> Self {
        Model::Potts(m)
    }
}
impl From<Rbm> for Model {
    fn from(m: Rbm) -> Self {
        Model::Rbm(m)
    }
}
impl From<CategoricalModel> for Model {
    fn from(m: CategoricalModel) -> Self {
        Model::Categorical(m)
    }
}
impl From<TableModel> for Model {
    fn from(m: TableModel) -> Self {
        Model::Table(m)
    }
}

impl Target for Model {
    fn space(&self) -> &Space {
        delegate!(self, m => m.space())
    }

    fn log_density_batch(&self, xs: &[u32], out: &mut [f64]) {
        delegate!(self, m => m.log_density_batch(xs, out))
    }

    fn log_density_grad_batch(&self, xs: &[u32], log_density: &mut [f64], grad: &mut [f64]) {
        delegate!(self, m => m.log_density_grad_batch(xs, log_density, grad))
    }

    fn log_density(&self, x: &[u32]) -> f64 {
        delegate!(self, m => m.log_density(x))
    }

    fn log_density_grad(&self, x: &[u32], grad: &mut [f64]) -> f64 {
        delegate!(self, m => m.log_density_grad(x, grad))
    }

    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) {
        delegate!(self, m => m.coordinate_deltas(x, i, out))
    }

    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) {
        delegate!(self, m => m.flip_deltas(x, out))
    }

    fn cheap_flip_delta(&self, x: &[u32], i: usize) -> Option<f64> {
        delegate!(self, m => m.cheap_flip_delta(x, i))
    }

    fn n_data(&self) -> Option<usize> {
        delegate!(self, m => m.n_data())
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        delegate!(self, m => m.evaluate(xs, batch, log_density, grad))
    }

    fn take_error(&self) -> Option<EvalError> {
        delegate!(self, m => m.take_error())
    }

    fn capabilities(&self) -> Capabilities<'_> {
        delegate!(self, m => m.capabilities())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        delegate!(self, m => m.as_any())
    }
}
