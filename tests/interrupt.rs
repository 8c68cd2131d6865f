//! Interrupts with real signals while an output is being written: the temporary output is
//! removed, one line is printed, and the exit status is 128 + the signal (130 for Ctrl-C).
//! A partial left by a writer that could not clean up (`kill -9`) is removed by the next
//! command writing in the same folder.

#[path = "common/synth.rs"]
mod synth;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ckpt::pickle;

/// A 192 MiB float32 checkpoint, written once for every test: large enough that converting
/// it takes long enough to be interrupted mid-write.
fn big_input() -> &'static Path {
    static INPUT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = INPUT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.pth");
        let numel: i64 = 48 << 20;
        let (graph, root) = synth::tensor_graph(numel, 0, &[numel], &[1]);
        let storage = vec![0u8; (numel * 4) as usize];
        synth::write_zip(
            &path,
            &pickle::write(&graph, root).expect("pickle"),
            &storage,
        );
        (dir, path)
    });
    path
}

fn ckpt(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ckpt runs")
}

/// Names in `dir` that start with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until a name starting with `prefix` appears in `dir` (the output is being
/// written), sends `signal`, and returns the exit status and stderr.
fn interrupt_when_writing(
    mut child: Child,
    dir: &Path,
    prefix: &str,
    signal: i32,
) -> (Option<i32>, String) {
    let start = Instant::now();
    while named(dir, prefix).is_empty() {
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("ckpt finished ({status}) before it could be interrupted");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no {prefix}* appeared"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill only sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ctrl_c_kill_and_hangup_during_a_conversion_leave_nothing_and_exit_128_plus_the_signal() {
    for (signal, status) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("half.pth");
        let input = big_input().to_str().expect("utf-8");
        let out_s = out.to_str().expect("utf-8");
        let child = ckpt(&["convert", input, "--dtype", "float16", "-o", out_s]);
        let (code, stderr) = interrupt_when_writing(child, dir.path(), ".ckpt-", signal);
        assert_eq!(code, Some(status), "signal {signal}: {stderr}");
        assert_eq!(stderr, "ckpt: interrupted; nothing written\n");
        let left: Vec<_> = named(dir.path(), "");
        assert!(left.is_empty(), "signal {signal} left {left:?}");
    }
}

#[test]
fn ctrl_c_while_a_folder_output_is_written_removes_the_partial_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sharded");
    let input = big_input().to_str().expect("utf-8");
    let child = ckpt(&[
        "shard",
        input,
        "-o",
        out.to_str().expect("utf-8"),
        "--ranks",
        "2",
    ]);
    let (code, stderr) = interrupt_when_writing(child, dir.path(), ".ckpt-", libc::SIGINT);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        named(dir.path(), "").is_empty(),
        "{:?}",
        named(dir.path(), "")
    );
}

#[test]
fn ctrl_c_during_a_batch_removes_its_staging_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("in")).expect("mkdir");
    std::fs::hard_link(big_input(), dir.path().join("in/big.pth"))
        .or_else(|_| std::fs::copy(big_input(), dir.path().join("in/big.pth")).map(|_| ()))
        .expect("input");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[[job]]\ninputs = [\"in/\"]\noutput_dir = \"out\"\nname = \"{stem}\"\nsteps = [{ dtype = \"float16\" }, \"to-safetensors\"]\n",
    )
    .expect("plan");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let child = ckpt(&["batch", plan.to_str().expect("utf-8"), "-q"]);
    let (code, stderr) = interrupt_when_writing(child, &out, ".ckpt-staging-", libc::SIGINT);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("interrupted;"), "{stderr}");
    assert!(named(&out, "").is_empty(), "{:?}", named(&out, ""));
}

#[test]
fn a_partial_left_by_a_killed_writer_is_removed_by_the_next_write_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("half.pth");
    let input = big_input().to_str().expect("utf-8");
    let out_s = out.to_str().expect("utf-8");
    let child = ckpt(&["convert", input, "--dtype", "float16", "-o", out_s]);
    let (code, _) = interrupt_when_writing(child, dir.path(), ".ckpt-", libc::SIGKILL);
    assert_eq!(code, None, "killed by a signal");
    assert_eq!(
        named(dir.path(), ".ckpt-").len(),
        1,
        "kill -9 leaves its partial"
    );
    let small = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/zip_train_ckpt.pth");
    let next = dir.path().join("next.pth");
    let done = Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .args(["convert", small.to_str().expect("utf-8"), "-o"])
        .arg(&next)
        .output()
        .expect("ckpt runs");
    assert!(done.status.success());
    assert_eq!(named(dir.path(), ""), ["next.pth"]);
}
