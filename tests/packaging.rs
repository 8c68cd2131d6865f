//! What the wheel installs beside the binary (the man page and shell completions under
//! `packaging/wheel-data/data/share/`) is exactly what `ckpt generate` prints, so it cannot
//! drift from the options. After changing an option, regenerate them as [`STALE`] says.

use std::path::Path;
use std::process::Command;

/// How to regenerate the files.
const STALE: &str = "regenerate with: d=packaging/wheel-data/data/share; \
    ckpt generate man > $d/man/man1/ckpt.1; \
    ckpt generate complete-bash > $d/bash-completion/completions/ckpt; \
    ckpt generate complete-zsh > $d/zsh/site-functions/_ckpt; \
    ckpt generate complete-fish > $d/fish/vendor_completions.d/ckpt.fish";

#[test]
fn the_wheels_man_page_and_completions_are_what_the_binary_generates() {
    let share = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/wheel-data/data/share");
    for (what, file) in [
        ("man", "man/man1/ckpt.1"),
        ("complete-bash", "bash-completion/completions/ckpt"),
        ("complete-zsh", "zsh/site-functions/_ckpt"),
        ("complete-fish", "fish/vendor_completions.d/ckpt.fish"),
    ] {
        let generated = Command::new(env!("CARGO_BIN_EXE_ckpt"))
            .args(["generate", what])
            .output()
            .expect("ckpt runs");
        assert!(generated.status.success(), "ckpt generate {what}");
        let committed = std::fs::read(share.join(file)).expect("committed file");
        assert!(
            committed == generated.stdout,
            "{file} is not what `ckpt generate {what}` prints; {STALE}"
        );
    }
}
