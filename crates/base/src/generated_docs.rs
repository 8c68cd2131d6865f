//! The check shared by every document generated from the code's own tables (the op list,
//! ATC's parser model): the committed file must equal what the code generates now.

/// Asserts that `docs/<name>` holds `generated`; with `CKPT_BLESS` set, writes it instead.
/// `test` is the test's name, for the regeneration command in the failure message.
pub fn assert_current(name: &str, generated: &str, test: &str) {
    // This crate sits in `crates/base` of the workspace whose `docs/` is meant.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    if std::env::var_os("CKPT_BLESS").is_some() {
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/{name} is stale; regenerate it with `CKPT_BLESS=1 cargo test --release --workspace --lib {test}`"
    );
}
