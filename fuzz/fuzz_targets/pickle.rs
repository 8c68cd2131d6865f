//! The pickle reader on arbitrary bytes; whatever it reads and the writer accepts must read
//! back, and so must a second round. (Bytes need not be identical across rounds: the writer
//! memoizes what the re-read graph shares, e.g. one `_codecs.encode` global.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ckpt::pickle::read_lenient(data, ckpt::pickle::Limits::default());
    let Ok(first) = ckpt::pickle::read(data) else {
        return;
    };
    // The writer may refuse (cycles through tuples, depth): never panic.
    let Ok(bytes) = ckpt::pickle::write(&first.graph, first.root) else {
        return;
    };
    let again = ckpt::pickle::read(&bytes).expect("the writer's output reads back");
    // Writing again may fail cleanly (depth counts can differ across rounds); if it writes,
    // that must read back too.
    if let Ok(rewritten) = ckpt::pickle::write(&again.graph, again.root) {
        ckpt::pickle::read(&rewritten).expect("and reads back again");
    }
});
