//! The README's CoRV-SGLD example is a cut of `examples/corv_bounded.rs` (which cargo builds
//! with the tests): every `use`/`let` statement of the README block, whitespace and trailing
//! comments aside, must occur in the example, so the README cannot drift from compiled code.

use std::path::PathBuf;

#[test]
fn readme_corv_snippet_is_taken_from_the_compiled_example() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/corv_bounded.rs")).unwrap();
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let code: String = example.lines().map(|l| l.split(" //").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let code = squash(&code);
    let start = readme.find("### Your own bounded-parameter model with CoRV-SGLD").expect("README section");
    let block = &readme[start..];
    let block = &block[block.find("```rust\n").expect("rust block") + 8..];
    let block = &block[..block.find("```").unwrap()];
    // Statements may span lines: join the block and split on `;`.
    let joined: String = block.lines().map(|l| l.split(" //").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let mut checked = 0;
    for stmt in joined.split(';') {
        let s = squash(stmt);
        if s.starts_with("use") || s.starts_with("let") {
            let s = s.replace("{..}", "");
            assert!(code.contains(&s), "README statement not in examples/corv_bounded.rs: {stmt}");
            checked += 1;
        }
    }
    assert!(checked >= 7, "only {checked} statements found");
}
