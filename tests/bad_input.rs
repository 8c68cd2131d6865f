//! Bad input: every case is a clear error from `open`, never a panic, a hang or an allocation
//! sized by a field nobody checked.

#[path = "common/synth.rs"]
mod synth;

use ckpt::pickle;
use ckpt::torch::{self, TorchError};
use synth::{tensor_graph, write_zip};

fn open_error(pickle: &[u8], storage: &[u8]) -> TorchError {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("bad.pth");
    write_zip(&path, pickle, storage);
    match torch::open(&path) {
        Ok(_) => panic!("a bad checkpoint was accepted"),
        Err(e) => e,
    }
}

#[test]
fn a_well_formed_tensor_is_accepted() {
    let (g, root) = tensor_graph(6, 0, &[2, 3], &[3, 1]);
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("ok.pth");
    write_zip(&path, &pickle::write(&g, root).expect("write"), &[0u8; 24]);
    let ckpt = torch::open(&path).expect("valid");
    assert_eq!(ckpt.scan.tensors[0].shape, vec![2, 3]);
}

#[test]
fn storage_record_shorter_than_declared_is_an_error() {
    let (g, root) = tensor_graph(6, 0, &[2, 3], &[3, 1]);
    let err = open_error(&pickle::write(&g, root).expect("write"), &[0u8; 8]);
    assert!(
        err.to_string().contains("fewer than its tensors need"),
        "{err}"
    );
}

#[test]
fn view_reaching_past_its_storage_is_an_error() {
    let (g, root) = tensor_graph(6, 4, &[2, 3], &[3, 1]);
    let err = open_error(&pickle::write(&g, root).expect("write"), &[0u8; 24]);
    assert!(err.to_string().contains("does not fit"), "{err}");
}

#[test]
fn overflowing_sizes_are_errors_not_wraparounds() {
    let (g, root) = tensor_graph(i64::MAX, 0, &[i64::MAX, 4], &[4, 1]);
    let err = open_error(&pickle::write(&g, root).expect("write"), &[0u8; 24]);
    assert!(err.to_string().contains("overflow"), "{err}");
}

#[test]
fn negative_sizes_are_errors() {
    let (g, root) = tensor_graph(6, 0, &[-2, 3], &[3, 1]);
    let err = open_error(&pickle::write(&g, root).expect("write"), &[0u8; 24]);
    assert!(err.to_string().contains("non-negative"), "{err}");
}

#[test]
fn unknown_opcode_is_an_error_naming_the_offset() {
    let err = open_error(b"\x80\x02\xff.", &[]);
    assert!(
        err.to_string().contains("bad pickle opcode 0xff at byte 2"),
        "{err}"
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    // 100 000 nested lists: `]` then (`]` + APPEND) … built iteratively by the reader.
    let mut bytes = b"\x80\x02".to_vec();
    bytes.extend(std::iter::repeat_n(b']', 100_000));
    bytes.extend(std::iter::repeat_n(b'a', 99_999));
    bytes.push(b'.');
    let err = open_error(&bytes, &[]);
    assert!(err.to_string().contains("nests"), "{err}");
}

#[test]
fn memo_bomb_is_bounded() {
    // One list referenced a million times through the memo: a DAG, not a copy. Reading and
    // scanning it stays linear.
    let mut bytes = b"\x80\x02]q\x00(".to_vec();
    for _ in 0..1_000_000 {
        bytes.extend_from_slice(b"h\x00");
    }
    bytes.extend_from_slice(b"e.");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("memo.pth");
    write_zip(&path, &bytes, &[]);
    let ckpt = torch::open(&path).expect("a shared list is valid");
    let security = ckpt::security::scan_file(&path, &Default::default());
    let report = ckpt::report::inspect(&ckpt, &security).expect("report");
    assert_eq!(report.tensors, 0);
}

#[test]
fn wrong_magic_and_empty_files_are_errors() {
    let dir = tempfile::tempdir().expect("dir");
    for (name, bytes) in [
        ("empty.pth", &b""[..]),
        ("text.pth", b"hello world, not a checkpoint"),
        ("zipish.pth", b"PK\x03\x04 but nothing else"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        assert!(torch::open(&path).is_err(), "{name} accepted");
    }
}

// The command line on mistakes a person makes: each is one line naming what is wrong,
// status 1, found before any work, with no file left behind.

mod cli {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name)
    }

    fn ckpt(args: &[&std::ffi::OsStr]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_ckpt"))
            .args(args)
            .output()
            .expect("run ckpt")
    }

    /// The single stderr line of a run that failed with status 1.
    fn failure(out: &Output) -> String {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        stderr
    }

    fn os(s: &str) -> &std::ffi::OsStr {
        s.as_ref()
    }

    #[test]
    fn a_device_torch_does_not_know_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let out = dir.path().join("out.pth");
        for device in ["gpu", "foo", "cuda?"] {
            let run = ckpt(&[
                os("remap"),
                os("--to"),
                os(device),
                os("-o"),
                out.as_os_str(),
                fixture("cuda3_zip.pth").as_os_str(),
            ]);
            assert_eq!(run.status.code(), Some(2), "clap refuses `{device}`");
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(stderr.contains("not a torch device"), "{stderr}");
            assert!(!out.exists());
        }
    }

    #[test]
    fn a_map_that_matches_no_storage_is_an_error_unless_allowed() {
        let dir = tempfile::tempdir().expect("dir");
        let out = dir.path().join("out.pth");
        let input = fixture("cuda3_zip.pth");
        let refused = ckpt(&[
            os("remap"),
            os("--map"),
            os("cuda:0=cpu"),
            os("-o"),
            out.as_os_str(),
            input.as_os_str(),
        ]);
        let line = failure(&refused);
        assert!(line.contains("matches no storage"), "{line}");
        assert!(line.contains("cuda:3"), "names the locations found: {line}");
        assert!(!out.exists());
        let allowed = ckpt(&[
            os("remap"),
            os("--map"),
            os("cuda:0=cpu"),
            os("--allow-noop"),
            os("-o"),
            out.as_os_str(),
            input.as_os_str(),
        ]);
        assert!(allowed.status.success());
        assert!(out.exists());
    }

    #[test]
    fn a_text_file_is_not_a_checkpoint_for_every_command() {
        let dir = tempfile::tempdir().expect("dir");
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "# my notes\nnot a model\n").expect("write");
        let out = dir.path().join("out");
        for command in [
            &["remap", "--to", "cpu", "-o"][..],
            &["strip-module", "-o"],
            &["convert", "--drop-optimizer", "-o"],
            &["to-safetensors", "-o"],
            &["to-onnx", "-o"],
        ] {
            let mut args: Vec<&std::ffi::OsStr> = command.iter().map(|a| os(a)).collect();
            args.push(out.as_os_str());
            args.push(text.as_os_str());
            let line = failure(&ckpt(&args));
            assert!(
                line.contains("not a PyTorch checkpoint"),
                "{command:?}: {line}"
            );
        }
        let line = failure(&ckpt(&[os("inspect"), text.as_os_str()]));
        assert!(line.contains("not a PyTorch checkpoint"), "{line}");
    }

    #[test]
    fn output_path_problems_are_found_before_the_work_naming_the_users_path() {
        let dir = tempfile::tempdir().expect("dir");
        let input = fixture("cuda3_zip.pth");
        let missing = dir.path().join("no-such-folder").join("out.pth");
        for (out, expected) in [
            (dir.path().to_path_buf(), "is a folder"),
            (missing.clone(), "does not exist"),
        ] {
            let line = failure(&ckpt(&[
                os("remap"),
                os("--to"),
                os("cpu"),
                os("-o"),
                out.as_os_str(),
                input.as_os_str(),
            ]));
            assert!(line.contains(expected), "{line}");
            let named = format!("ckpt: error: {}:", out.display());
            assert!(line.starts_with(&named), "names the output first: {line}");
            assert!(!line.contains(".partial"), "no temporary name: {line}");
            assert!(
                !line.contains("cuda3_zip"),
                "does not blame the input: {line}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn in_place_keeps_the_mode_and_writes_through_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let real = dir.path().join("real.pth");
        std::fs::copy(fixture("cuda3_zip.pth"), &real).expect("copy");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o664)).expect("chmod");
        let link = dir.path().join("link.pth");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let run = ckpt(&[
            os("remap"),
            os("--to"),
            os("cpu"),
            os("--in-place"),
            link.as_os_str(),
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let link_meta = std::fs::symlink_metadata(&link).expect("link");
        assert!(link_meta.file_type().is_symlink(), "the link is kept");
        let mode = std::fs::metadata(&real).expect("real").permissions().mode() & 0o777;
        assert_eq!(mode, 0o664);
        let again = ckpt(&[os("inspect"), os("--json"), real.as_os_str()]);
        assert!(String::from_utf8_lossy(&again.stdout).contains("\"cpu\""));
    }
}
