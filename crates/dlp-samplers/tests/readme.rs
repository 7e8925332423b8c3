//! The README's sampler table is generated from the registry: this fails when the table
//! between `<!-- samplers:begin -->` and `<!-- samplers:end -->` in README.md differs from
//! `registry::markdown_table()`, and prints the expected table. Regenerate with
//! `DLP_UPDATE_README=1 cargo test -p dlp-samplers --test readme` (rewrites that block), or
//! paste the output of `cargo run -p dlp-cli -- samplers --markdown`.

use dlp_samplers::registry::markdown_table;
use std::path::PathBuf;

#[test]
fn readme_sampler_table_is_the_generated_one() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let regenerate = "DLP_UPDATE_README=1 cargo test -p dlp-samplers --test readme";
    dlp_core::testing::check_readme_block(&path, "samplers", &markdown_table(), regenerate);
}
