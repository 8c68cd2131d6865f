//! `ckpt generate WHAT`: shell completions and the man page, printed from the same clap
//! definition `--help` is drawn from, so they can never disagree with the binary.

use std::io::{self, Write};

use clap::{Args as ClapArgs, CommandFactory, ValueEnum};
use clap_complete::Shell;

use super::{Cli, Failure};

/// What to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum What {
    /// Completions for bash (`/usr/share/bash-completion/completions/ckpt`, or
    /// `~/.local/share/bash-completion/completions/ckpt`).
    CompleteBash,
    /// Completions for zsh (a file named `_ckpt` in a folder on `$fpath`).
    CompleteZsh,
    /// Completions for fish (`~/.config/fish/completions/ckpt.fish`).
    CompleteFish,
    /// The man page, roff (`man1/ckpt.1` under a folder on `$MANPATH`).
    Man,
}

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// complete-bash, complete-zsh, complete-fish or man.
    #[arg(value_enum)]
    what: What,
}

/// Writes what `args` asks for to stdout.
pub fn run(args: Args) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    write(args.what, &mut out)
        .and_then(|()| out.flush())
        .map_err(|e| Failure {
            file: None,
            message: format!("cannot write to standard output: {e}"),
        })
}

/// Writes the completions or man page `what` to `out`.
pub fn write(what: What, out: &mut dyn Write) -> io::Result<()> {
    let mut command = Cli::command();
    let shell = match what {
        What::CompleteBash => Shell::Bash,
        What::CompleteZsh => Shell::Zsh,
        What::CompleteFish => Shell::Fish,
        What::Man => return clap_mangen::Man::new(command).render(out),
    };
    clap_complete::generate(shell, &mut command, "ckpt", out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(what: What) -> String {
        let mut bytes = Vec::new();
        write(what, &mut bytes).expect("generate");
        String::from_utf8(bytes).expect("utf-8")
    }

    #[test]
    fn completions_know_every_subcommand_and_its_flags() {
        let bash = text(What::CompleteBash);
        for word in [
            "to-onnx",
            "consolidate",
            "--allow-unknown-globals",
            "--shard",
        ] {
            assert!(bash.contains(word), "bash completions lack {word}");
        }
        assert!(text(What::CompleteZsh).contains("#compdef ckpt"));
        assert!(text(What::CompleteFish).contains("complete -c ckpt"));
    }

    #[test]
    fn the_man_page_is_roff_with_every_subcommand() {
        let man = text(What::Man);
        assert!(
            man.starts_with(".ie") || man.contains(".TH ckpt"),
            "{}",
            &man[..80]
        );
        for command in ["scan", "to\\-onnx", "batch"] {
            assert!(man.contains(command), "man page lacks {command}");
        }
    }
}
