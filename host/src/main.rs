use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = engram::cli::Cli::parse();
    // `engram chat` shares the terminal with the person: warnings and errors only.
    let quiet = matches!(cli.command, engram::cli::Command::Chat(_));
    engram::logging::init(cli.log_format, engram::logging::default_filter(quiet));
    engram::cli::run(cli)
}
