//! `torch::open` (zip, legacy stream, tar) and the inspect report on arbitrary file bytes.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    };
    let Ok(mut file) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    if file.write_all(data).is_err() {
        return;
    }
    if let Ok(ckpt) = ckpt::torch::open(file.path()) {
        let _ = ckpt::report::inspect(&ckpt);
    }
});
