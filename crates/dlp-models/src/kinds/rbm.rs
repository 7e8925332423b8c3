//! `kind: rbm`: [`Rbm`] with binary (default) or spin visibles, weights `W` (d × M, required),
//! visible bias `b` and hidden bias `c` (zero when absent).

use crate::error::ModelError;
use crate::fields::{err, matrix, vector};
use crate::model::{LoadedModel, Model, ModelKind, rows};
use crate::rbm::Rbm;
use dlp_core::{DomainKind, Space};
use serde_json::{Map, Value, json};

/// The registration of `kind: rbm`.
pub static KIND: ModelKind = ModelKind {
    name: "rbm",
    keys: &["W", "b", "c"],
    default_domain: DomainKind::Binary,
    domains: &[DomainKind::Spin, DomainKind::Binary],
    parse,
    doc: "`W` (d × M), `b`, `c`",
};

fn parse(obj: &Map<String, Value>, space: &Space) -> Result<Model, ModelError> {
    let d = space.d;
    let d_desc = format!("d = {d}");
    let Some(wv) = obj.get("W") else {
        return err("missing key \"W\" (the rbm weights, d × M)");
    };
    let (w, m) = matrix(wv, "W", (d, &d_desc), None)?;
    if m == 0 {
        return err("W must have at least one column (M >= 1)");
    }
    let b = match obj.get("b") {
        Some(x) => vector(x, "b", Some((d, &d_desc)))?,
        None => vec![0.0; d],
    };
    let c = match obj.get("c") {
        Some(x) => vector(x, "c", Some((m, &format!("W has M = {m} columns"))))?,
        None => vec![0.0; m],
    };
    Ok(Model::new(Rbm::new(space.kind, d, m, w, b, c)?))
}

impl LoadedModel for Rbm {
    fn kind(&self) -> &'static ModelKind {
        &KIND
    }

    fn write_params(&self, o: &mut Map<String, Value>) {
        o.insert("W".into(), rows(self.w(), self.m()));
        o.insert("b".into(), json!(self.b()));
        o.insert("c".into(), json!(self.c()));
    }
}
