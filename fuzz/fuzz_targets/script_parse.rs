//! The TorchScript code reader (tokenizer and parser of `code/__torch__/*.py` records) on
//! arbitrary text, seeded with the code records of fixtures/script/*.pt.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(source) = std::str::from_utf8(data) {
        let _ = ckpt::torch::script::parse::parse("code/__torch__/fuzz.py", source);
    }
});
