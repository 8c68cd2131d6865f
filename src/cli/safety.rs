//! `--allow-unknown-globals`, shared by every command that reads pickles to rewrite,
//! export or check them, and the safety check it feeds.

use std::path::Path;

use clap::Args as ClapArgs;

use ckpt::security::{check_rewrite, Policy};

use super::Failure;

/// What a command accepts from its input's pickles.
#[derive(ClapArgs, Debug, Clone, Copy, Default)]
pub struct SafetyArgs {
    /// Proceed even if the input names globals that are not on torch's weights_only
    /// allow-list (e.g. `argparse.Namespace`, pickled `torch.nn` modules). They are kept as
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

    /// Refuses `input` before anything is written: first a file that is not a PyTorch
    /// checkpoint at all, then what the safety scan finds (see
    /// [`ckpt::security::check_rewrite`]).
    pub fn check(&self, input: &Path) -> Result<(), Failure> {
        ckpt::torch::recognise(input).map_err(|e| Failure::about(input, e))?;
        check_rewrite(input, self.policy())
            .map(|_| ())
            .map_err(|e| Failure::about(input, e))
    }
}
