//! `torch::open` (zip, legacy stream, tar) and the inspect report on arbitrary file bytes.
#![no_main]

#[path = "scratch.rs"]
mod scratch;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((_dir, input)) = scratch::input_file(data, "in") else {
        return;
    };
    if let Ok(ckpt) = ckpt::torch::open(&input) {
        let scan = ckpt::security::scan_file(&input, &ckpt::security::AllowList::default());
        let _ = ckpt::report::inspect(&ckpt, &scan);
    }
});
