//! AntiBERTy (`just data antiberty`: the PyPI wheel antiberty==0.1.3, MIT) loads from its
//! `pytorch_model.bin` and predicts masked residues of a heavy chain (the check of the project's
//! BERT notes §9: residues 2, 7, 10, 21 of EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMS are Q, G, L, C).
//! `.ci/run` fetches the weights (`just data antiberty`: a PyPI wheel, 104 MB, about 10 s);
//! elsewhere a missing cache is a skip note, and a failure under `CI` or `DLP_REQUIRE_ALL=1`
//! (`dlp_core::testing::require`).

use candle_core::{D, Device, IndexOp, Tensor};
use dlp_core::testing::require::Requirement;
use dlp_tensor::bert::{BertMlm, Piece};
use std::path::PathBuf;

#[test]
fn antiberty_predicts_masked_residues() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/cache/antiberty");
    if !Requirement::new("the AntiBERTy weights in data/cache/antiberty/", "just data antiberty")
        .path(dir.join("pytorch_model.bin"))
    {
        return;
    }
    let (model, vocab) = BertMlm::load(&dir, &Device::Cpu).unwrap();
    assert_eq!(vocab.len(), 25);
    assert_eq!(vocab.allowed().len(), 20, "20 amino acids, the 5 specials excluded");
    let pieces = vocab.wrap(vocab.encode("EV_LVES_GG_VQPGGSLRLS_AASGFTFSSYAMS").unwrap());
    let masked: Vec<usize> = pieces.iter().enumerate().filter(|(_, p)| **p == Piece::Mask).map(|(i, _)| i).collect();
    assert_eq!(masked, [3, 8, 11, 22], "0-based residues 2, 7, 10, 21 after [CLS]");
    let ids: Vec<u32> = pieces.iter().map(|p| if let Piece::Token(t) = p { *t } else { vocab.mask() }).collect();
    let s = ids.len();
    let logits = model.logits_from_ids(&Tensor::from_vec(ids, (1, s), &Device::Cpu).unwrap()).unwrap();
    let allowed = Tensor::from_vec(vocab.allowed(), 20, &Device::Cpu).unwrap();
    let mut got = String::new();
    for &i in &masked {
        let row = logits.i((0, i)).unwrap().index_select(&allowed, 0).unwrap();
        let k = row.argmax(D::Minus1).unwrap().to_scalar::<u32>().unwrap();
        got.push_str(vocab.token(vocab.allowed()[k as usize]).unwrap());
    }
    assert_eq!(got, "QGLC");
}
