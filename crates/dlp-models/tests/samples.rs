//! The samples grammar of gof.md §10.2 and the §10.5 error lines.

use dlp_core::Space;
use dlp_models::samples::{format_samples, parse_real_matrix_str, parse_samples_str};
use dlp_models::{Delimiter, read_samples, write_samples};

fn parse(text: &str, space: &Space, kind: &str) -> Result<Vec<u32>, String> {
    parse_samples_str(text, "samples.csv", space, kind, Delimiter::Auto).map(|s| s.indices).map_err(|e| e.to_string())
}

fn row16(vals: &[&str]) -> String {
    vals.join(",")
}

#[test]
fn spec_error_lines() {
    let spin16 = Space::spin(16);
    let good: Vec<&str> = vec!["1"; 16];
    assert_eq!(parse("", &spin16, "ising").unwrap_err(), "samples.csv: no samples (file is empty)");
    assert_eq!(parse("# only a comment\n\n", &spin16, "ising").unwrap_err(), "samples.csv: no samples (file is empty)");
    let header: Vec<String> = (0..16).map(|i| format!("x{i}")).collect();
    assert_eq!(
        parse(&format!("{}\n", header.join(",")), &spin16, "ising").unwrap_err(),
        "samples.csv: no samples (file is empty)"
    );

    // Ragged: line 4 has 15 values (line numbers count every physical line, comments included).
    let text = format!("{}\n# comment\n{}\n{}\n", row16(&good), row16(&good), row16(&good[..15]));
    assert_eq!(
        parse(&text, &spin16, "ising").unwrap_err(),
        "samples.csv:4: expected 16 values (as in the first row), found 15"
    );

    let text = format!("{}\n{}\n", row16(&good[..15]), row16(&good[..15]));
    assert_eq!(
        parse(&text, &spin16, "ising").unwrap_err(),
        "samples.csv: rows have 15 values but the model has d = 16"
    );

    // Value 0 at line 9, column 2 of a spin model.
    let mut bad = good.clone();
    bad[1] = "0";
    let mut lines: Vec<String> = (0..8).map(|_| row16(&good)).collect();
    lines.push(row16(&bad));
    assert_eq!(
        parse(&lines.join("\n"), &spin16, "ising").unwrap_err(),
        "samples.csv:9:2: value 0 is outside the domain {-1, 1} of the ising model"
    );

    let d2 = Space::binary(2);
    let pre = "0,1\n1,1\n0,0\n1,0\n";
    assert_eq!(
        parse(&format!("{pre}NaN,1\n"), &d2, "rbm").unwrap_err(),
        "samples.csv:5:1: not a finite integer: \"NaN\""
    );
    assert_eq!(
        parse(&format!("{pre}inf,1\n"), &d2, "rbm").unwrap_err(),
        "samples.csv:5:1: not a finite integer: \"inf\""
    );
    assert_eq!(parse(&format!("{pre}1,\n"), &d2, "rbm").unwrap_err(), "samples.csv:5:2: not a finite integer: \"\"");
    assert_eq!(
        parse(&format!("{pre}1, NA\n"), &d2, "rbm").unwrap_err(),
        "samples.csv:5:2: not a finite integer: \"NA\""
    );
    assert_eq!(parse(&format!("{pre}1,0.5\n"), &d2, "rbm").unwrap_err(), "samples.csv:5:2: not an integer: \"0.5\"");
    assert_eq!(parse(&format!("{pre}1,one\n"), &d2, "rbm").unwrap_err(), "samples.csv:5:2: not an integer: \"one\"");
    assert_eq!(
        parse(&format!("{pre}1,2\n"), &d2, "rbm").unwrap_err(),
        "samples.csv:5:2: value 2 is outside the domain {0, 1} of the rbm model"
    );
    let s = parse_samples_str("1,0\n0,1\n1,1\n", "samples.csv", &d2, "rbm", Delimiter::Auto).unwrap();
    assert_eq!(
        s.require_rows(std::path::Path::new("samples.csv"), 10).unwrap_err().to_string(),
        "samples.csv: too few samples: 3 (need at least 10)"
    );
    assert!(s.require_rows(std::path::Path::new("samples.csv"), 3).is_ok());
}

#[test]
fn delimiters_headers_comments_and_integral_forms() {
    let spin3 = Space::spin(3);
    let want = vec![1, 0, 1, 0, 0, 1];
    for text in [
        "x0,x1,x2\n1,-1,+1\n-1,-1,1\n",
        "# written by hand\r\n\r\nx0 , x1 ,x2\r\n 1 , -1, +1\r\n-1,-1,1",
        "a\tb\t_c\n1\t-1\t1\n-1 \t -1\t1\n",
        "1 -1 1\n  -1\t-1    1  \n\n",
        "1.0,-1e0,1.00\n-1,-1.0,10e-1\n",
    ] {
        assert_eq!(parse(text, &spin3, "ising").unwrap(), want, "{text:?}");
    }
    // NaN-like first rows are data, not headers.
    assert_eq!(parse("nan,1,1\n", &spin3, "ising").unwrap_err(), "samples.csv:1:1: not a finite integer: \"nan\"");
    // A header must match the rows.
    assert_eq!(
        parse("a,b\n1,1,1\n", &spin3, "ising").unwrap_err(),
        "samples.csv:2: expected 2 values (as in the header), found 3"
    );
    // Explicit delimiters.
    let s = parse_samples_str("1,-1 1\n", "s", &Space::spin(2), "ising", Delimiter::Whitespace);
    assert_eq!(s.unwrap_err().to_string(), "s:1:1: not an integer: \"1,-1\"");
    let s = parse_samples_str("1 -1\t1\n", "s", &Space::spin(2), "ising", Delimiter::Tab);
    assert_eq!(s.unwrap_err().to_string(), "s:1:1: not an integer: \"1 -1\"");
    let s = parse_samples_str("1\t -1 \n", "s", &Space::spin(2), "ising", Delimiter::Tab).unwrap();
    assert_eq!(s.indices, vec![1, 0]);
    // `values` lists: indices are positions in the list.
    let cat = Space { d: 2, kind: dlp_core::DomainKind::Categorical, values: vec![5, -2, 7] };
    assert_eq!(parse("7,5\n-2,7\n", &cat, "categorical").unwrap(), vec![2, 0, 1, 2]);
    assert_eq!(
        parse("7,0\n", &cat, "categorical").unwrap_err(),
        "samples.csv:1:2: value 0 is outside the domain {5, -2, 7} of the categorical model"
    );
}

#[test]
fn written_samples_read_back_unchanged_and_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let space = Space::spin(4);
    let idx = vec![1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1];
    assert_eq!(format_samples(&space, &idx, true), "x0,x1,x2,x3\n1,-1,-1,1\n-1,-1,-1,-1\n1,1,1,1\n");
    let path = dir.path().join("s.csv");
    std::fs::write(&path, "old contents").unwrap();
    write_samples(&path, &space, &idx, true).unwrap();
    let s = read_samples(&path, &space, "ising", Delimiter::Auto).unwrap();
    assert_eq!((s.n, s.d, s.indices), (3, 4, idx.clone()));
    write_samples(&path, &space, &idx, false).unwrap();
    assert_eq!(read_samples(&path, &space, "ising", Delimiter::Comma).unwrap().indices, idx);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left behind");
    let missing = dir.path().join("none.csv");
    let e = read_samples(&missing, &space, "ising", Delimiter::Auto).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}: cannot read file: ", missing.display())), "{e}");
}

#[test]
fn integer_matrices_without_a_model() {
    let m =
        dlp_models::samples::parse_integer_matrix_str("a b\n3 -7\n1.0 +2\n", "m.txt", None, Delimiter::Auto).unwrap();
    assert_eq!((m.n, m.d, m.values), (2, 2, vec![3, -7, 1, 2]));
    let e = dlp_models::samples::parse_integer_matrix_str("3 2.5\n", "m.txt", None, Delimiter::Auto).unwrap_err();
    assert_eq!(e.to_string(), "m.txt:1:2: not an integer: \"2.5\"");
}

#[test]
fn jitter_matrices() {
    let m = parse_real_matrix_str("u0,u1\n0.5,0.25\n0.1,0.9\n", "j.csv", Some(2), Delimiter::Auto).unwrap();
    assert_eq!((m.n, m.d, m.values), (2, 2, vec![0.5, 0.25, 0.1, 0.9]));
    let e = parse_real_matrix_str("0.5,1.0\n", "j.csv", Some(2), Delimiter::Auto).unwrap_err();
    assert_eq!(e.to_string(), "j.csv:1:2: value \"1.0\" is not a number in (0, 1)");
    let e = parse_real_matrix_str("0.5\n", "j.csv", Some(2), Delimiter::Auto).unwrap_err();
    assert_eq!(e.to_string(), "j.csv: rows have 1 values but the model has d = 2");
}
