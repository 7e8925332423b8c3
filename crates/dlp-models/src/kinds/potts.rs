//! `kind: potts`: [`PottsModel`] on a categorical space, couplings as for ising, fields `h`
//! (d × K, zero when absent).

use crate::error::ModelError;
use crate::fields::{couplings, matrix};
use crate::model::{LoadedModel, Model, ModelKind, insert_couplings, rows};
use crate::potts::PottsModel;
use dlp_core::{DomainKind, Space, Target};
use serde_json::{Map, Value};

/// The registration of `kind: potts`.
pub static KIND: ModelKind = ModelKind {
    name: "potts",
    keys: &["J", "edges", "lattice", "h"],
    default_domain: DomainKind::Categorical,
    domains: &[DomainKind::Categorical],
    parse,
    doc: "couplings as for ising; fields `h` (d × K)",
};

fn parse(obj: &Map<String, Value>, space: &Space) -> Result<Model, ModelError> {
    let (d, k) = (space.d, space.k());
    let couplings = couplings(obj, d)?;
    let h = match obj.get("h") {
        Some(x) => matrix(x, "h", (d, &format!("d = {d}")), Some((k, &format!("K = {k}"))))?.0,
        None => vec![0.0; d * k],
    };
    Ok(Model::new(PottsModel::new(space.clone(), couplings, h)?))
}

impl LoadedModel for PottsModel {
    fn kind(&self) -> &'static ModelKind {
        &KIND
    }

    fn write_params(&self, o: &mut Map<String, Value>) {
        insert_couplings(o, self.couplings());
        o.insert("h".into(), rows(self.h(), self.space().k()));
    }
}
