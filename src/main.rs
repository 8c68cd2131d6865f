//! The `ckpt` binary: the command line ([`cli`]), over the library's public API.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
