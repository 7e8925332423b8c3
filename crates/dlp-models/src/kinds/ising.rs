//! `kind: ising`: [`IsingModel`] on spins (default) or bits, couplings by `J`, `edges` or
//! `lattice`, field `b` (zero when absent).

use crate::error::ModelError;
use crate::fields::{couplings, vector};
use crate::ising::IsingModel;
use crate::model::{LoadedModel, Model, ModelKind, insert_couplings};
use dlp_core::{DomainKind, Space};
use serde_json::{Map, Value, json};

/// The registration of `kind: ising`.
pub static KIND: ModelKind = ModelKind {
    name: "ising",
    keys: &["J", "edges", "lattice", "b"],
    default_domain: DomainKind::Spin,
    domains: &[DomainKind::Spin, DomainKind::Binary],
    parse,
    doc: "couplings by `J`, `edges` or `lattice`; bias `b`",
};

fn parse(obj: &Map<String, Value>, space: &Space) -> Result<Model, ModelError> {
    let d = space.d;
    let couplings = couplings(obj, d)?;
    let b = match obj.get("b") {
        Some(x) => vector(x, "b", Some((d, &format!("d = {d}"))))?,
        None => vec![0.0; d],
    };
    Ok(Model::new(IsingModel::new(space.kind, couplings, b)?))
}

impl LoadedModel for IsingModel {
    fn kind(&self) -> &'static ModelKind {
        &KIND
    }

    fn write_params(&self, o: &mut Map<String, Value>) {
        insert_couplings(o, self.couplings());
        o.insert("b".into(), json!(self.fields()));
    }
}
