//! `--allow-unknown-globals`, shared by every command that reads pickles to rewrite,
//! export or check them, and the safety check it feeds.

use std::path::Path;

use clap::Args as ClapArgs;

use ckpt::security::Checked;
use ckpt::OpenOptions;

use super::Failure;

/// What a command accepts from its input's pickles.
#[derive(ClapArgs, Debug, Clone, Copy, Default)]
pub struct SafetyArgs {
    /// Proceed even if the input names globals that are on no allow-list (e.g. pickled
    /// `torch.nn` modules). They are kept as names, never imported, and stay in the output,
    /// which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system,
    /// eval, …) are always refused.
    #[arg(long)]
    pub allow_unknown_globals: bool,
}

impl SafetyArgs {
    /// The open options these flags select.
    pub fn options(&self) -> OpenOptions {
        OpenOptions {
            allow_unknown_globals: self.allow_unknown_globals,
        }
    }

    /// Opens `input` once, scans it and refuses it before anything is written (see
    /// [`ckpt::open`]). The command reads its input from the returned check
    /// ([`Checked::open`]), never by name again.
    pub fn check(&self, input: &Path) -> Result<Checked, Failure> {
        self.options()
            .check(input)
            .map_err(|e| Failure::about(input, e))
    }
}
