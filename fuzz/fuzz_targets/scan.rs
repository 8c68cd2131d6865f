//! `security::scan_file` and the rewrite decision on arbitrary file bytes.
#![no_main]

#[path = "scratch.rs"]
mod scratch;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((_dir, input)) = scratch::input_file(data, "in") else {
        return;
    };
    let scan = ckpt::security::scan_file(&input, &ckpt::security::AllowList::default());
    let _ = ckpt::security::render::to_json(&scan);
    let _ = ckpt::security::policy::decide(&scan, ckpt::security::Policy::SafeOnly);
});
