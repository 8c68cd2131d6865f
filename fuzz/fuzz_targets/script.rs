//! `to-onnx` on TorchScript archives from arbitrary bytes: the archive, its module objects,
//! the inliner, the conversion to an aten program and its lowering. Seeded with the traced
//! archives of fixtures/script/.
#![no_main]

#[path = "scratch.rs"]
mod scratch;

use libfuzzer_sys::fuzz_target;

use ckpt::onnx::program::ProgramOptions;
use ckpt::onnx::script::export_script;
use ckpt::torch::script::ScriptArchive;

fuzz_target!(|data: &[u8]| {
    let Some((dir, input)) = scratch::input_file(data, "in.pt") else {
        return;
    };
    let Ok(mut archive) = ScriptArchive::open(&input) else {
        return;
    };
    let out = dir.path().join("out.onnx");
    let _ = export_script(&mut archive, &[], &ProgramOptions::default(), &out);
});
