//! `kind: table`: [`TableModel`], an explicit `log_prob` for each of the K^d states, on any
//! domain (categorical by default).

use crate::error::ModelError;
use crate::fields::{err, vector};
use crate::model::{LoadedModel, Model, ModelKind};
use crate::table::TableModel;
use dlp_core::{DomainKind, Space};
use serde_json::{Map, Value, json};

/// The registration of `kind: table`.
pub static KIND: ModelKind = ModelKind {
    name: "table",
    keys: &["log_prob"],
    default_domain: DomainKind::Categorical,
    domains: &[DomainKind::Spin, DomainKind::Binary, DomainKind::Categorical],
    parse,
    doc: "explicit `log_prob` for all K^d states (K^d ≤ 2²⁴)",
};

fn parse(obj: &Map<String, Value>, space: &Space) -> Result<Model, ModelError> {
    let Some(lp) = obj.get("log_prob") else {
        return err("missing key \"log_prob\" (K^d numbers)");
    };
    // Check the size before reading the list so a huge d fails with the size message.
    TableModel::check_size(space)?;
    let lp = vector(lp, "log_prob", None)?;
    Ok(Model::new(TableModel::new(space.clone(), lp)?))
}

impl LoadedModel for TableModel {
    fn kind(&self) -> &'static ModelKind {
        &KIND
    }

    fn write_params(&self, o: &mut Map<String, Value>) {
        o.insert("log_prob".into(), json!(self.log_prob()));
    }
}
