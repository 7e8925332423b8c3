//! [`Model`]: any model of the zoo, as loaded from a `dlp.model.v1` file, and [`ModelKind`],
//! the registration of one `kind` of that file.
//!
//! A kind is one module of [`crate::kinds`] (its [`ModelKind`] and the [`LoadedModel`] impl of
//! its model type) plus one line in that module's kinds table; the loader ([`crate::file`])
//! and the writer ([`Model::to_json`]) know nothing kind-specific.

use crate::couplings::Couplings;
use crate::error::ModelError;
use dlp_core::{Batch, Capabilities, DomainKind, EvalError, Space, Target};
use serde_json::{Map, Value, json};
use std::any::Any;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// The schema tag of model files.
pub const MODEL_SCHEMA: &str = "dlp.model.v1";

/// Parser of one kind: builds the model from the file's object, whose keys, `d`, `domain`,
/// `K` and `values` the loader has already validated into `space`.
pub type ParseFn = fn(&Map<String, Value>, &Space) -> Result<Model, ModelError>;

/// One `kind` of the `dlp.model.v1` file: everything the loader needs to read it. The writer
/// half is [`LoadedModel::write_params`] of the model type, which names its kind through
/// [`LoadedModel::kind`].
#[derive(Debug)]
pub struct ModelKind {
    /// The `kind` string (`"ising"`).
    pub name: &'static str,
    /// The keys of this kind besides the common ones (`schema`, `kind`, `d`, `domain`, `K`,
    /// `values`, `name`); a key of another kind is reported as not belonging to this one.
    pub keys: &'static [&'static str],
    /// The domain when the file gives none.
    pub default_domain: DomainKind,
    /// The domains this kind accepts, in the order the error message lists them.
    pub domains: &'static [DomainKind],
    /// Builds the model from the validated file object and its space.
    pub parse: ParseFn,
}

/// Type-erased access to a loaded model's concrete type, for [`Model::downcast_ref`] and
/// [`Model`]'s equality. Implemented for every `Any + PartialEq` type; never by hand.
pub trait ModelAny {
    /// The model as `&dyn Any`.
    fn as_any_model(&self) -> &dyn Any;
    /// Whether `other` is a model of the same type and equal to this one.
    fn eq_model(&self, other: &dyn Any) -> bool;
}

impl<T: Any + PartialEq> ModelAny for T {
    fn as_any_model(&self) -> &dyn Any {
        self
    }

    fn eq_model(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<T>() == Some(self)
    }
}

/// A model type that a [`Model`] can hold: a [`Target`] that knows its file kind and writes
/// its own parameters.
pub trait LoadedModel: Target + ModelAny + fmt::Debug {
    /// The registration of this model's `kind`.
    fn kind(&self) -> &'static ModelKind;

    /// Inserts the kind-specific keys into the file object (the common keys `schema`,
    /// `kind`, `d`, `domain`, `K`, `values` are already there); what it writes,
    /// [`ModelKind::parse`] must read back to an equal model.
    fn write_params(&self, o: &mut Map<String, Value>);
}

/// One model of any registered kind (cheap to clone: the model is shared). Implements
/// [`Target`] by delegation; [`Model::downcast_ref`] gives the concrete model.
#[derive(Clone)]
pub struct Model(Arc<dyn LoadedModel>);

impl Model {
    /// Wraps a model of a registered kind.
    pub fn new(model: impl LoadedModel + 'static) -> Model {
        Model(Arc::new(model))
    }

    /// The registration of this model's kind.
    pub fn kind(&self) -> &'static ModelKind {
        self.0.kind()
    }

    /// The `kind` string of the model file ("ising", "rbm", …).
    pub fn kind_name(&self) -> &'static str {
        self.0.kind().name
    }

    /// The concrete model, if it is a `T`.
    pub fn downcast_ref<T: LoadedModel + 'static>(&self) -> Option<&T> {
        self.0.as_any_model().downcast_ref::<T>()
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
        self.0.write_params(o);
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

    /// The inner model as a `&dyn Target` (one dispatch instead of two through `Model`).
    pub fn as_target(&self) -> &dyn Target {
        &*self.0
    }
}

impl<T: LoadedModel + 'static> From<T> for Model {
    fn from(m: T) -> Self {
        Model::new(m)
    }
}

impl PartialEq for Model {
    fn eq(&self, other: &Model) -> bool {
        self.0.eq_model(other.0.as_any_model())
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Model").field(&self.0).finish()
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

/// A row-major matrix as a list of rows of `cols` numbers.
pub(crate) fn rows(v: &[f64], cols: usize) -> Value {
    Value::Array(v.chunks_exact(cols).map(|r| json!(r)).collect())
}

/// Couplings as the file writes them: `lattice` when built from one, else `edges` (none
/// when there are no pairs).
pub(crate) fn insert_couplings(o: &mut Map<String, Value>, c: &Couplings) {
    if let Some(l) = c.lattice_spec() {
        o.insert("lattice".into(), json!({"shape": l.shape, "periodic": l.periodic, "coupling": l.coupling}));
    } else if c.n_pairs() > 0 {
        let edges: Vec<Value> = c.pairs().into_iter().map(|(i, j, w)| json!([i, j, w])).collect();
        o.insert("edges".into(), Value::Array(edges));
    }
}

// Every `Target` method is forwarded (not just the required ones), so a model's overrides
// (cheap flips, minibatches, capabilities) are not lost behind the wrapper.
impl Target for Model {
    fn space(&self) -> &Space {
        self.0.space()
    }

    fn log_density_batch(&self, xs: &[u32], out: &mut [f64]) {
        self.0.log_density_batch(xs, out)
    }

    fn log_density_grad_batch(&self, xs: &[u32], log_density: &mut [f64], grad: &mut [f64]) {
        self.0.log_density_grad_batch(xs, log_density, grad)
    }

    fn log_density(&self, x: &[u32]) -> f64 {
        self.0.log_density(x)
    }

    fn log_density_grad(&self, x: &[u32], grad: &mut [f64]) -> f64 {
        self.0.log_density_grad(x, grad)
    }

    fn coordinate_deltas(&self, x: &[u32], i: usize, out: &mut [f64]) {
        self.0.coordinate_deltas(x, i, out)
    }

    fn flip_deltas(&self, x: &[u32], out: &mut [f64]) {
        self.0.flip_deltas(x, out)
    }

    fn cheap_flip_delta(&self, x: &[u32], i: usize) -> Option<f64> {
        self.0.cheap_flip_delta(x, i)
    }

    fn n_data(&self) -> Option<usize> {
        self.0.n_data()
    }

    fn evaluate(
        &self,
        xs: &[u32],
        batch: Batch<'_>,
        log_density: &mut [f64],
        grad: Option<&mut [f64]>,
    ) -> Result<(), EvalError> {
        self.0.evaluate(xs, batch, log_density, grad)
    }

    fn take_error(&self) -> Option<EvalError> {
        self.0.take_error()
    }

    fn capabilities(&self) -> Capabilities<'_> {
        self.0.capabilities()
    }
}
