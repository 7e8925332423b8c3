//! The kinds of `dlp.model.v1` files, one module each: its [`ModelKind`] registration (keys,
//! domains, parser) and the [`LoadedModel`](crate::LoadedModel) impl of its model type (the
//! writer). Adding a kind is a module here (`mod` line) plus its entry in [`KINDS`]; the
//! loader, the writer and every error message listing the kinds follow from [`KINDS`].

use crate::model::ModelKind;
use dlp_core::DomainKind;

mod categorical;
mod ising;
mod potts;
mod rbm;
mod table;

/// Every model kind a model file can name, in the order error messages list them.
pub static KINDS: &[&ModelKind] = &[
    &ising::KIND,
    &potts::KIND,
    &rbm::KIND,
    &categorical::KIND,
    &table::KIND,
    &crate::logistic::KIND,
    &crate::bnn::KIND,
    &crate::fhmm::KIND,
    &crate::cat_rbm::KIND,
];

/// The registered kind called `name`.
pub fn find(name: &str) -> Option<&'static ModelKind> {
    KINDS.iter().copied().find(|k| k.name == name)
}

/// The kind names as a message lists them: "ising, potts, rbm, categorical or table".
pub fn names_list() -> String {
    let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// The README's model table: one row per registered kind (its domains, the default first,
/// and its keys), kept equal to README.md by `tests/readme.rs`.
pub fn markdown_table() -> String {
    let mut out = String::from("| kind | domain | parameters |\n|---|---|---|\n");
    for k in KINDS {
        let name = |d: DomainKind| match d {
            DomainKind::Spin => "spin",
            DomainKind::Binary => "binary",
            DomainKind::Categorical => "categorical",
            DomainKind::Ordinal => "ordinal",
        };
        let others: Vec<&str> = k.domains.iter().filter(|&&d| d != k.default_domain).map(|&d| name(d)).collect();
        let domain = match others.as_slice() {
            [] => name(k.default_domain).to_string(),
            _ => format!("{} (or {})", name(k.default_domain), others.join(", ")),
        };
        out.push_str(&format!("| `{}` | {domain} | {} |\n", k.name, k.doc));
    }
    out
}

/// Whether `key` is a key of some registered kind (then it is misplaced rather than unknown).
pub fn is_kind_key(key: &str) -> bool {
    KINDS.iter().any(|k| k.keys.contains(&key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_unique_and_domains_cover_their_default() {
        for (i, k) in KINDS.iter().enumerate() {
            assert!(KINDS[..i].iter().all(|o| o.name != k.name), "kind {} registered twice", k.name);
            assert!(k.domains.contains(&k.default_domain), "{}: default domain not supported", k.name);
        }
        // "a, b or c": every kind once, the last after "or" (not pinned, so a new kind
        // needs no edit here).
        let list = names_list();
        let (head, last) = list.rsplit_once(" or ").expect("two or more kinds");
        assert_eq!(last, KINDS[KINDS.len() - 1].name);
        let head: Vec<&str> = head.split(", ").collect();
        assert_eq!(head, KINDS[..KINDS.len() - 1].iter().map(|k| k.name).collect::<Vec<_>>());
    }
}
