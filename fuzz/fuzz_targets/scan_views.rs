//! Differential: the scanner's and the loader's views of the same bytes (tar with PAX and GNU
//! headers, legacy streams, zips) must name the same pickles and globals
//! (`security::agreement`). A disagreement is a scanner bypass: it panics with the reason.
#![no_main]

#[path = "scratch.rs"]
mod scratch;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((_dir, input)) = scratch::input_file(data, "in") else {
        return;
    };
    let Ok(file) = std::fs::File::open(&input) else {
        return;
    };
    if let Some(why) = ckpt::security::agreement::disagreement(&input, &file) {
        panic!("scan and loader disagree: {why}");
    }
});
