//! `dlp samplers`: the registered samplers, one line each (forms, flags, exactness, what),
//! or with `--markdown` the README's sampler table, both generated from
//! `dlp_samplers::registry::REGISTRY`.

use dlp_cli::CliError;

/// Arguments of `dlp samplers`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the README's markdown table (name, what, flags, exact for π, paper) instead.
    #[arg(long)]
    markdown: bool,
}

/// Prints the listing.
pub fn run(args: Args) -> Result<(), CliError> {
    let text =
        if args.markdown { dlp_samplers::registry::markdown_table() } else { dlp_samplers::registry::text_table() };
    print!("{text}");
    Ok(())
}
