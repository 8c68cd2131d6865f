//! `to-onnx` (`ckpt::onnx::export`) on arbitrary checkpoint bytes: every architecture's
//! detection, key check, width arithmetic and graph building on fuzzed state dicts, seeded
//! with the narrow torchvision fixtures so that mutations land in their shapes and keys.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

use ckpt::onnx::{export, ExportOptions};

fuzz_target!(|data: &[u8]| {
    // tmpfs: the export's fsync costs nothing there.
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    };
    let Ok(scratch) = tempfile::tempdir_in(dir) else {
        return;
    };
    let input = scratch.path().join("in.pth");
    let Ok(mut file) = std::fs::File::create(&input) else {
        return;
    };
    if file.write_all(data).is_err() {
        return;
    }
    let Ok(mut ckpt) = ckpt::torch::open(&input) else {
        return;
    };
    let options = ExportOptions {
        input: [3, 64, 64],
        ..ExportOptions::default()
    };
    let _ = export(&mut ckpt, &options, &scratch.path().join("out.onnx"));
});
