//! `kind: categorical`: [`CategoricalModel`], independent coordinates given by exactly one of
//! `probs` or `logits` (d × K); written back as normalised `logits`.

use crate::categorical::CategoricalModel;
use crate::error::ModelError;
use crate::fields::{err, matrix};
use crate::model::{LoadedModel, Model, ModelKind, rows};
use dlp_core::{DomainKind, Space, Target};
use serde_json::{Map, Value};

/// The registration of `kind: categorical`.
pub static KIND: ModelKind = ModelKind {
    name: "categorical",
    keys: &["probs", "logits"],
    default_domain: DomainKind::Categorical,
    domains: &[DomainKind::Categorical],
    parse,
    doc: "independent coordinates, `probs` or `logits`",
};

fn parse(obj: &Map<String, Value>, space: &Space) -> Result<Model, ModelError> {
    let (d, k) = (space.d, space.k());
    let (d_desc, k_desc) = (format!("d = {d}"), format!("K = {k}"));
    match (obj.get("probs"), obj.get("logits")) {
        (Some(_), Some(_)) => err("give exactly one of probs and logits, not both"),
        (None, None) => err("missing key \"probs\" or \"logits\""),
        (Some(p), None) => {
            let (p, _) = matrix(p, "probs", (d, &d_desc), Some((k, &k_desc)))?;
            Ok(Model::new(CategoricalModel::from_probs(space.clone(), p)?))
        }
        (None, Some(l)) => {
            let (l, _) = matrix(l, "logits", (d, &d_desc), Some((k, &k_desc)))?;
            Ok(Model::new(CategoricalModel::from_logits(space.clone(), l)?))
        }
    }
}

impl LoadedModel for CategoricalModel {
    fn kind(&self) -> &'static ModelKind {
        &KIND
    }

    fn write_params(&self, o: &mut Map<String, Value>) {
        o.insert("logits".into(), rows(self.log_probs(), self.space().k()));
    }
}
