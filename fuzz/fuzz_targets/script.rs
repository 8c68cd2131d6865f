//! `to-onnx` on TorchScript archives from arbitrary bytes: the archive, its module objects,
//! the inliner, the conversion to an aten program and its lowering. Seeded with the traced
//! archives of fixtures/script/.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

use ckpt::onnx::program::ProgramOptions;
use ckpt::onnx::script::export_script;

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
    let input = scratch.path().join("in.pt");
    let Ok(mut file) = std::fs::File::create(&input) else {
        return;
    };
    if file.write_all(data).is_err() {
        return;
    }
    let out = scratch.path().join("out.onnx");
    let _ = export_script(&input, None, &ProgramOptions::default(), &out);
});
