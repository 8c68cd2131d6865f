//! `.pt2` (torch.export) archives on arbitrary bytes: `Pt2Archive::open` (zip, model.json,
//! weight configs, every tensor checked against its record), then `to-onnx`'s lowering of
//! the aten graph. Seeded with the torch-written archives in fixtures/pt2/ (stored zips, so
//! mutations land in the JSON program and the configs).
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

use ckpt::onnx::program::{export_program, ProgramOptions};
use ckpt::torch::pt2::Pt2Archive;

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
    let input = scratch.path().join("in.pt2");
    let Ok(mut file) = std::fs::File::create(&input) else {
        return;
    };
    if file.write_all(data).is_err() {
        return;
    }
    let Ok(mut archive) = Pt2Archive::open(&input) else {
        return;
    };
    let out = scratch.path().join("out.onnx");
    let _ = export_program(&mut archive, &ProgramOptions::default(), &out);
});
