//! CSV text of the results files, through the `csv` crate (RFC 4180 quoting only where a field
//! needs it, `\n` line ends, every row as long as the header).

use anyhow::{Result, anyhow};

/// `header` and `rows` as CSV bytes. A row whose length differs from the header's is an error
/// (a column shifted by a missing field would otherwise pass unnoticed).
pub fn csv_bytes(header: &[&str], rows: &[Vec<String>]) -> Result<Vec<u8>> {
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    w.write_record(header)?;
    for row in rows {
        w.write_record(row)?;
    }
    w.into_inner().map_err(|e| anyhow!("csv: {}", e.error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        let rows = vec![vec!["a".to_string(), "b,c".into(), "d\"e".into()], vec!["".into(), "1e-5".into(), "x".into()]];
        let text = String::from_utf8(csv_bytes(&["h1", "h2", "h3"], &rows).unwrap()).unwrap();
        assert_eq!(text, "h1,h2,h3\na,\"b,c\",\"d\"\"e\"\n,1e-5,x\n");
    }

    #[test]
    fn ragged_rows_are_refused() {
        assert!(csv_bytes(&["a", "b"], &[vec!["1".to_string()]]).is_err());
    }
}
