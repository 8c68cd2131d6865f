//! The `ckpt` binary: the command line lives in the library ([`ckpt::cli`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    ckpt::cli::main()
}
