//! `.pt2` (torch.export) archives on arbitrary bytes: `Pt2Archive::open` (zip, model.json,
//! weight configs, every tensor checked against its record), then `to-onnx`'s lowering of
//! the aten graph. Seeded with the torch-written archives in fixtures/pt2/ (stored zips, so
//! mutations land in the JSON program and the configs).
#![no_main]

#[path = "scratch.rs"]
mod scratch;

use libfuzzer_sys::fuzz_target;

use ckpt::onnx::program::{export_program, ProgramOptions};
use ckpt::torch::pt2::Pt2Archive;

fuzz_target!(|data: &[u8]| {
    let Some((dir, input)) = scratch::input_file(data, "in.pt2") else {
        return;
    };
    let Ok(mut archive) = Pt2Archive::open(&input) else {
        return;
    };
    let out = dir.path().join("out.onnx");
    let _ = export_program(&mut archive, &ProgramOptions::default(), &out);
});
