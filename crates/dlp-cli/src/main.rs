//! `dlp`: sample discrete models, test goodness of fit, run exact checks.
//!
//! Each subcommand is one variant of [`Command`] plus one module `src/<name>.rs` exposing
//! `Args` (clap) and `run(args) -> Result<(), CliError>`. Adding one: `mod name;`, a variant
//! `Name(name::Args)` and its arm in [`dispatch`].
//!
//! Exit codes (`gof.md` §10.5): 0 success, 2 bad input (one `error: …` line on stderr,
//! nothing on stdout, no output file), 1 internal error. `main` never panics outward: a
//! panic is reported as one `error: internal error: …` line and exit 1.

mod bench;
mod discs;
mod exact;
mod gof;
mod infill;
mod logz;
mod sample;
mod samplers;

use clap::{Parser, Subcommand};
use dlp_cli::{CliError, clap_error_text, one_line};
use std::process::ExitCode;

/// Discrete samplers with gradients, goodness of fit, paper reproduction.
#[derive(Parser, Debug)]
#[command(name = "dlp", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands, one module each.
#[derive(Subcommand, Debug)]
enum Command {
    /// Time samplers on the Ising lattice and the RBM; JSON lines in the peer harness's schema.
    Bench(bench::Args),
    /// DISCS's protocol on one of its tasks: our samplers' ESS of the distance to a reference
    /// state, and a peer's traces scored the same way (`just bench-peer-discs`); JSON lines.
    Discs(discs::Args),
    /// Exact check of a sampler on a small model: stationary law, TV to π, residuals (JSON).
    Exact(exact::Args),
    /// Goodness-of-fit test of a samples file against a model (kdsd, gfksd, mmd).
    Gof(gof::Args),
    /// Fill masked positions of sequences with a BERT masked LM (Gibbs, GWG, DULA, DMALA), or
    /// score fills (`--score`): JSON lines.
    Infill(infill::Args),
    /// log Z of a model file: exact by enumeration, or by annealed importance sampling (JSON).
    Logz(logz::Args),
    /// Run chains of a sampler on a model file and write final states (and optionally a trace).
    Sample(sample::Args),
    /// List the registered samplers: names, flags, exact for π, what (`--markdown`: README table).
    Samplers(samplers::Args),
}

/// Runs the chosen subcommand.
fn dispatch(command: Command) -> Result<(), CliError> {
    match command {
        Command::Bench(args) => bench::run(args),
        Command::Discs(args) => discs::run(args),
        Command::Exact(args) => exact::run(args),
        Command::Gof(args) => gof::run(args),
        Command::Infill(args) => infill::run(args),
        Command::Logz(args) => logz::run(args),
        Command::Sample(args) => sample::run(args),
        Command::Samplers(args) => samplers::run(args),
    }
}

fn main() -> ExitCode {
    dlp_tensor::keep_freed_buffers();
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("error: internal error: {}{place}", one_line(&message));
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    match std::panic::catch_unwind(|| dispatch(cli.command)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
        // The panic hook already printed the one line.
        Err(_) => ExitCode::from(1),
    }
}

/// Help and version go to stdout with exit 0; every parse error is one `error:` line, exit 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            print!("{}", e.render());
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!("error: missing subcommand (see `dlp --help`)");
            ExitCode::from(2)
        }
        _ => {
            eprintln!("error: {}", clap_error_text(&e.render().to_string()));
            ExitCode::from(2)
        }
    }
}
