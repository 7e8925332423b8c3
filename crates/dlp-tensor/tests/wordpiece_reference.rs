//! WordPiece tokenisation against Hugging Face's pure-Python `BertTokenizer` (an implementation
//! independent of the `tokenizers` crate that `Vocab` uses): the ids of
//! `tests/fixtures/wordpiece.json`, written by `scripts/wordpiece_fixture.py`, for accented,
//! upper-case, CJK, control-character, Unicode-punctuation and unknown-word lines over an
//! uncased and a cased vocabulary. Where the reference has `[UNK]`, `Vocab` must refuse the line
//! (dlp never conditions on `[UNK]`) and name the first unknown word.

use dlp_tensor::bert::{Piece, Vocab};
use serde_json::Value;

#[test]
fn wordpiece_ids_equal_the_python_bert_tokenizer() {
    let doc: Value = serde_json::from_str(include_str!("fixtures/wordpiece.json")).unwrap();
    let mut checked = (0, 0);
    for v in doc["vocabularies"].as_array().unwrap() {
        let tokens: Vec<String> = v["tokens"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().into()).collect();
        let vocab = Vocab::from_tokens(tokens).unwrap();
        let unk = vocab.unk().unwrap();
        for case in v["cases"].as_array().unwrap() {
            let line = case["line"].as_str().unwrap();
            let want: Vec<u32> = case["ids"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as u32).collect();
            let got = vocab.encode(line);
            let name = v["name"].as_str().unwrap();
            if want.contains(&unk) {
                let e = got.expect_err(&format!("{name}: {line:?} has [UNK] in the reference")).to_string();
                assert!(e.contains("unknown token"), "{name}: {line:?}: {e}");
                checked.1 += 1;
            } else {
                let got = got.unwrap_or_else(|e| panic!("{name}: {line:?}: {e}"));
                let got: Vec<u32> = got.iter().map(|p| if let Piece::Token(t) = p { *t } else { u32::MAX }).collect();
                assert_eq!(got, want, "{name}: {line:?}");
                checked.0 += 1;
            }
        }
    }
    // Both kinds of case occur (a fixture regenerated into all-[UNK] would test nothing).
    assert!(checked.0 >= 20 && checked.1 >= 10, "{checked:?}");
}

/// The error names the unknown word as written and its column.
#[test]
fn an_unknown_word_is_named_with_its_column() {
    let doc: Value = serde_json::from_str(include_str!("fixtures/wordpiece.json")).unwrap();
    let tokens: Vec<String> =
        doc["vocabularies"][0]["tokens"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().into()).collect();
    let vocab = Vocab::from_tokens(tokens).unwrap();
    let e = vocab.encode("the whale [MASK] the kraken").unwrap_err().to_string();
    assert!(e.contains("\"kraken\" at character 22"), "{e}");
    let e = vocab.encode("ahab's ship").unwrap_err().to_string();
    assert!(e.contains("\"s\" at character 6"), "{e}");
    let e = vocab.encode("the 🐋 sea").unwrap_err().to_string();
    assert!(e.contains("\"🐋\" at character 5"), "{e}");
}
