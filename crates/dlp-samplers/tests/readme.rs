//! The README's sampler table is generated from the registry: this fails when the table
//! between `<!-- samplers:begin -->` and `<!-- samplers:end -->` in README.md differs from
//! `registry::markdown_table()`, and prints the expected table. Regenerate with
//! `DLP_UPDATE_README=1 cargo test -p dlp-samplers --test readme` (rewrites that block), or
//! paste the output of `cargo run -p dlp-cli -- samplers --markdown`.

use dlp_samplers::registry::markdown_table;
use std::path::PathBuf;

const BEGIN: &str = "<!-- samplers:begin -->\n";
const END: &str = "<!-- samplers:end -->";

#[test]
fn readme_sampler_table_is_the_generated_one() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md at the workspace root");
    let start = readme.find(BEGIN).expect("README.md has no `<!-- samplers:begin -->` line") + BEGIN.len();
    let end =
        start + readme[start..].find(END).expect("README.md has no `<!-- samplers:end -->` after the begin marker");
    let expected = markdown_table();
    if readme[start..end] == expected {
        return;
    }
    if std::env::var_os("DLP_UPDATE_README").is_some() {
        let updated = format!("{}{expected}{}", &readme[..start], &readme[end..]);
        dlp_core::io::atomic_write(&path, updated.as_bytes()).expect("rewrite README.md");
        return;
    }
    panic!(
        "README.md's sampler table is not the one generated from dlp_samplers::registry::REGISTRY.\n\
         Regenerate it with `DLP_UPDATE_README=1 cargo test -p dlp-samplers --test readme`; expected:\n\n{expected}"
    );
}
