//! Real antibody sequences for the protein half of the infilling table: human germline
//! V-gene segments (IMGT, as shipped in ANARCI's `germlines.py`, PyPI `anarci`, BSD-3-Clause),
//! written by `just data antibodies` to `data/cache/antibodies.tsv` as
//! `name<TAB>chain<TAB>sequence` with chain `H` (IGHV) or `L` (IGKV / IGLV).
//!
//! They are V segments (framework 1 to the start of CDR3), not whole rearranged variable
//! domains, and AntiBERTy's training set (OAS) descends from these germlines: they are real
//! sequences but not held out from it.

use crate::TextError;
use std::path::{Path, PathBuf};

/// The 20 amino acids of AntiBERTy's vocabulary.
pub const AMINO_ACIDS: &str = "ACDEFGHIKLMNPQRSTVWY";

/// One antibody chain.
#[derive(Clone, Debug, PartialEq)]
pub struct AntibodySeq {
    /// IMGT gene and allele name (`IGHV1-18*01`).
    pub name: String,
    /// `H` (heavy) or `L` (light: kappa or lambda).
    pub chain: char,
    /// One-letter residues, all in [`AMINO_ACIDS`].
    pub sequence: String,
}

/// `data/cache/antibodies.tsv` (or under `$DLP_DATA_CACHE`).
pub fn default_antibody_path() -> PathBuf {
    crate::cache_dir().join("antibodies.tsv")
}

/// Reads `name<TAB>chain<TAB>sequence` lines (a header line starting with `name` is skipped).
pub fn load_antibodies(path: &Path) -> Result<Vec<AntibodySeq>, TextError> {
    let raw = std::fs::read_to_string(path).map_err(|e| TextError::Io {
        path: path.display().to_string(),
        message: format!("{e} (run `just data antibodies`)"),
    })?;
    parse_antibodies(&raw, &path.display().to_string())
}

/// Parses the TSV text of [`load_antibodies`]; `what` names it in errors.
pub fn parse_antibodies(raw: &str, what: &str) -> Result<Vec<AntibodySeq>, TextError> {
    let mut out = Vec::new();
    for (i, line) in raw.lines().enumerate() {
        if line.trim().is_empty() || (i == 0 && line.starts_with("name")) {
            continue;
        }
        let bad = |message: String| TextError::Format { what: format!("{what} line {}", i + 1), message };
        let f: Vec<&str> = line.split('\t').collect();
        let [name, chain, seq] = f[..] else {
            return Err(bad(format!("{} fields, expected name<TAB>chain<TAB>sequence", f.len())));
        };
        let chain = match chain {
            "H" => 'H',
            "L" => 'L',
            other => return Err(bad(format!("chain '{other}', expected H or L"))),
        };
        if let Some(c) = seq.chars().find(|c| !AMINO_ACIDS.contains(*c)) {
            return Err(bad(format!("residue '{c}' is not one of {AMINO_ACIDS}")));
        }
        if seq.is_empty() {
            return Err(bad("empty sequence".into()));
        }
        out.push(AntibodySeq { name: name.to_string(), chain, sequence: seq.to_string() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_with_the_line() {
        let ok = parse_antibodies("name\tchain\tsequence\nIGHV1\tH\tQVQL\nIGKV1\tL\tDIQM\n", "t").unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[1].chain, 'L');
        let e = parse_antibodies("IGHV1\tH\tQVXL\n", "t").unwrap_err().to_string();
        assert!(e.contains("t line 1") && e.contains("'X'"), "{e}");
        let e = parse_antibodies("a\tK\tQV\n", "t").unwrap_err().to_string();
        assert!(e.contains("chain 'K'"), "{e}");
    }
}
