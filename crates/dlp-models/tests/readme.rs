//! The README's model table is generated from the model-kind registry (`kinds::KINDS`): this
//! fails when the block between `<!-- models:begin -->` and `<!-- models:end -->` differs.
//! Regenerate with `DLP_UPDATE_README=1 cargo test -p dlp-models --test readme`.

use std::path::PathBuf;

#[test]
fn readme_model_table_is_the_generated_one() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let regenerate = "DLP_UPDATE_README=1 cargo test -p dlp-models --test readme";
    dlp_core::testing::check_readme_block(&path, "models", &dlp_models::kinds::markdown_table(), regenerate);
}
