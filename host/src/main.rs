use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = engram::cli::Cli::parse();
    engram::logging::init(cli.log_format);
    engram::cli::run(cli)
}
