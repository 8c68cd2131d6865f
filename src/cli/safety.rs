//! `--allow-unknown-globals`, shared by every rewriting command, and the check it feeds.

use std::path::Path;

use clap::Args as ClapArgs;

use ckpt::security::{check_rewrite, Policy};

use super::Failure;

/// What a rewriting command accepts from its input's pickles.
#[derive(ClapArgs, Debug, Clone, Copy, Default)]
pub struct SafetyArgs {
    /// Rewrite even if the input names globals that are not on torch's weights_only
    /// allow-list (e.g. `argparse.Namespace`, pickled `torch.nn` modules). They are copied as
    /// names, never imported. Dangerous globals (os.system, eval, …) are always refused.
    #[arg(long)]
    pub allow_unknown_globals: bool,
}

impl SafetyArgs {
    /// The policy these flags select.
    pub fn policy(&self) -> Policy {
        if self.allow_unknown_globals {
            Policy::AllowUnknown
        } else {
            Policy::SafeOnly
        }
    }

    /// Scans `input` and refuses it before anything is written (see
    /// [`ckpt::security::check_rewrite`]).
    pub fn check(&self, input: &Path) -> Result<(), Failure> {
        check_rewrite(input, self.policy())
            .map(|_| ())
            .map_err(|e| Failure::about(input, e))
    }
}
