//! Fuzzing `dlp gof`'s options in process: random argument lists (every flag, values from
//! edge cases: empty, negative, huge, non-finite, unicode, control characters) through clap
//! and [`plan`](super::plan). Properties: no panic, each list within a time bound, and every
//! rejection one line without control characters that names a flag (`--…`) or, from clap, an
//! argument. The end-to-end cases (exit code 2, one `error:` line, no output file) are in
//! `tests/fuzz_cli.rs`. `just fuzz` runs it with `DLP_FUZZ_CASES`.

use super::{Args, plan};
use clap::Parser;
use dlp_core::testing::fuzz::{self, Target, one_line_naming};

/// `dlp gof`'s arguments alone, as the binary's parser sees them.
#[derive(Parser, Debug)]
struct GofOnly {
    #[command(flatten)]
    args: Args,
}

const FLAGS: [&str; 19] = [
    "--test",
    "--samples",
    "--model",
    "--statistic",
    "--bootstrap",
    "--reps",
    "--alpha",
    "--seed",
    "--kernel-scale",
    "--kernel",
    "--surrogate",
    "--bandwidth",
    "--jitter",
    "--reference",
    "--model-samples",
    "--burnin",
    "--delimiter",
    "--output",
    "--format",
];

const VALUES: [&str; 40] = [
    "kdsd",
    "gfksd",
    "mmd",
    "u",
    "v",
    "w",
    "multinomial",
    "rademacher",
    "model",
    "gaussian",
    "relaxed",
    "median",
    "exp-hamming",
    "hamming-linear",
    "json",
    "text",
    "auto",
    "comma",
    "tab",
    "whitespace",
    "",
    "0",
    "1",
    "-1",
    "0.05",
    "1.5",
    "-0.5",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "99999999999999999999",
    "-9223372036854775808",
    "m.json",
    "s.csv",
    "x\ny",
    "\u{1b}[31mred",
    "\u{0}",
    "é",
    "--",
];

/// splitmix64: the argument lists from `DLP_FUZZ_SEED` (fixed when unset). A plain generator
/// rather than proptest, whose features would change the binary's dependency build.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        dlp_core::testing::splitmix64(&mut self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Up to 8 flags with values (`--flag value` or `--flag=value`), after the required ones half
/// of the time.
fn argv(g: &mut Gen) -> Vec<String> {
    let mut v = vec!["dlp-gof".to_string()];
    if g.below(2) == 0 {
        v.extend(["--test", "kdsd", "--samples", "s.csv", "--model", "m.json"].map(String::from));
    }
    for _ in 0..g.below(9) {
        let (f, value) = (FLAGS[g.below(FLAGS.len())], VALUES[g.below(VALUES.len())]);
        if g.below(2) == 0 {
            v.push(format!("{f}={value}"));
        } else {
            v.push(f.to_string());
            v.push(value.to_string());
        }
    }
    v
}

/// One argument list: parsed and planned, or rejected with one line naming a flag.
fn check(argv: &[String]) -> Result<(), String> {
    match GofOnly::try_parse_from(argv) {
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                return Ok(());
            }
            let text = dlp_cli::clap_error_text(&e.render().to_string());
            one_line_naming(&text, &["--", "argument", "value", "'"])
        }
        Ok(g) => match plan(&g.args) {
            Ok(_) => Ok(()),
            Err(e) => {
                let shown = e.to_string();
                one_line_naming(&shown, &["--"])?;
                if e.exit_code() != 2 {
                    return Err(format!("an option error must exit 2: {shown}"));
                }
                Ok(())
            }
        },
    }
}

#[test]
fn fuzz_gof_options() {
    let seed = std::env::var("DLP_FUZZ_SEED").ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(20261202);
    let mut g = Gen(seed);
    let t = Target::new("gof-options");
    for i in 0..fuzz::cases(1500) {
        let a = argv(&mut g);
        let r = t.run(&a, || std::panic::catch_unwind(|| check(&a)));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("fuzz gof-options: input {i}: {e}\ninput: {a:?}"),
            Err(_) => panic!("fuzz gof-options: input {i} panicked (message above)\ninput: {a:?}"),
        }
    }
}

/// The option values the fuzzer found printed raw (a line break or an escape sequence in the
/// message), pinned.
#[test]
fn option_values_are_shown_escaped() {
    let plan_err = |extra: &[&str]| {
        let mut argv = vec!["dlp-gof", "--test", "kdsd", "--samples", "s.csv", "--model", "m.json"];
        argv.extend(extra);
        plan(&GofOnly::try_parse_from(argv).expect("parses").args).err().expect("rejected").to_string()
    };
    assert_eq!(plan_err(&["--statistic", "x\ny"]), r#"--statistic must be u or v, got "x\ny""#);
    assert_eq!(
        plan_err(&["--bandwidth", "\u{1b}[31m"]),
        r#"--bandwidth must be median or a positive number, got "\u{1b}[31m""#
    );
    assert_eq!(
        plan_err(&["--delimiter", "\u{0}"]),
        r#"--delimiter: unknown delimiter "\0" (expected auto, comma, tab or whitespace)"#
    );
}
