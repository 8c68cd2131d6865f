//! `to-onnx` (`ckpt::onnx::export`) on arbitrary checkpoint bytes: every architecture's
//! detection, key check, width arithmetic and graph building on fuzzed state dicts, seeded
//! with the narrow torchvision fixtures so that mutations land in their shapes and keys.
#![no_main]

#[path = "scratch.rs"]
mod scratch;

use libfuzzer_sys::fuzz_target;

use ckpt::onnx::{export, ExportOptions};

fuzz_target!(|data: &[u8]| {
    let Some((dir, input)) = scratch::input_file(data, "in.pth") else {
        return;
    };
    let Ok(mut ckpt) = ckpt::torch::open(&input) else {
        return;
    };
    let options = ExportOptions {
        input: [3, 64, 64],
        ..ExportOptions::default()
    };
    let _ = export(&mut ckpt, &options, &dir.path().join("out.onnx"));
});
