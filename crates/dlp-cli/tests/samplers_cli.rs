//! `dlp samplers` and the `--sampler` help come from the registry: every registered form is
//! listed, and `--markdown` prints exactly the table the README test compares with.

use std::process::Command;

fn dlp(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dlp")).args(args).output().expect("run dlp");
    assert!(out.status.success(), "dlp {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn samplers_markdown_is_the_registry_table() {
    assert_eq!(dlp(&["samplers", "--markdown"]), dlp_samplers::registry::markdown_table());
}

#[test]
fn listing_and_help_name_every_registered_form() {
    let listing = dlp(&["samplers"]);
    let help = dlp(&["sample", "--help"]);
    let exact_help = dlp(&["exact", "--help"]);
    for spec in dlp_samplers::registry::REGISTRY {
        for form in spec.forms() {
            assert!(listing.contains(&form), "dlp samplers lacks {form}");
            assert!(help.contains(&form), "dlp sample --help lacks {form}");
            assert!(exact_help.contains(&form), "dlp exact --help lacks {form}");
        }
    }
}
