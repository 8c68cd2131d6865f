//! `security::scan_file` and the rewrite decision on arbitrary file bytes.
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
    let scan = ckpt::security::scan_file(file.path());
    let _ = ckpt::security::render::to_json(&scan);
    let _ = ckpt::security::policy::decide(&scan, ckpt::security::Policy::SafeOnly);
});
