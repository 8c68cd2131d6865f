//! The adversarial corpus (`fixtures/hostile/`, made by `generate.py`): every case gets
//! exactly the outcome `expected.json` names, within bounded time and memory.
//!
//! Bounds, per run of the `ckpt` binary: the child runs under `prlimit --as=1073741824`
//! (address space capped at 1 GiB: an allocation past it fails, the run aborts, the test
//! fails); its peak resident set is read with `wait4` (must stay under 512 MiB); and it must
//! exit within 5 s (polled; killed and failed after that).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

use ckpt::pickle::{self, Limits, PickleError};
use ckpt::security::{check_rewrite, scan_file, AllowList, Class, Policy, RefuseError, Status};

const TIME_LIMIT: Duration = Duration::from_secs(5);
const ADDRESS_SPACE: u64 = 1 << 30;
const MAX_RSS_KIB: i64 = 512 * 1024;

fn hostile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hostile")
}

fn expected() -> serde_json::Map<String, Json> {
    let text = std::fs::read_to_string(hostile().join("expected.json")).expect("expected.json");
    match serde_json::from_str(&text).expect("expected.json is JSON") {
        Json::Object(map) => map,
        _ => panic!("expected.json is not an object"),
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    max_rss_kib: i64,
}

/// Runs `ckpt ARGS` under the address-space cap, measuring time and peak RSS. The child is
/// reaped by `wait4` (which std's `wait` cannot do: it returns no rusage).
#[allow(clippy::zombie_processes)]
fn run_bounded(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let start = Instant::now();
    let child = Command::new("prlimit")
        .arg(format!("--as={ADDRESS_SPACE}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_ckpt"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("prlimit (util-linux) runs");
    let pid = i32::try_from(child.id()).expect("pid");
    let mut status = 0i32;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our own child, status and usage are valid for writes.
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(done >= 0, "wait4 failed");
        if done == pid {
            break;
        }
        if start.elapsed() > TIME_LIMIT {
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::wait4(pid, &mut status, 0, &mut usage);
            }
            panic!("ckpt {args:?} ran past {TIME_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    Run {
        code,
        stdout: std::fs::read_to_string(out).unwrap_or_default(),
        stderr: std::fs::read_to_string(err).unwrap_or_default(),
        elapsed: start.elapsed(),
        max_rss_kib: usage.ru_maxrss,
    }
}

fn strings(v: &Json) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn class_paths(file: &Json, class: &str) -> Vec<String> {
    let mut paths: Vec<String> = file["pickles"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["globals"].as_array().into_iter().flatten())
        .filter(|g| g["class"] == class)
        .filter_map(|g| g["path"].as_str().map(str::to_owned))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn check_bounds(name: &str, what: &str, run: &Run) {
    assert!(
        run.elapsed < TIME_LIMIT,
        "{name}: {what} took {:?}",
        run.elapsed
    );
    assert!(
        run.max_rss_kib < MAX_RSS_KIB,
        "{name}: {what} peaked at {} KiB",
        run.max_rss_kib
    );
    assert!(
        run.code >= 0 && !run.stderr.contains("panicked"),
        "{name}: {what} crashed ({}): {}",
        run.code,
        run.stderr
    );
}

#[test]
fn every_case_has_its_expected_outcome_within_bounds() {
    let cases = expected();
    assert!(cases.len() >= 40, "corpus has {} cases", cases.len());
    let mut failures = Vec::new();
    for (name, want) in &cases {
        let path = hostile().join(name);
        let path = path.to_str().expect("utf-8 path");

        let scan = run_bounded(&["scan", "--json", path]);
        check_bounds(name, "scan", &scan);
        let json: Json = match serde_json::from_str(&scan.stdout) {
            Ok(j) => j,
            Err(e) => {
                failures.push(format!(
                    "{name}: scan printed no JSON ({e}): {}",
                    scan.stderr
                ));
                continue;
            }
        };
        let file = &json["files"][0];
        let want_exit = want["scan_exit"].as_i64().unwrap_or(-1);
        if i64::from(scan.code) != want_exit || json["exit_code"] != want["scan_exit"] {
            failures.push(format!(
                "{name}: scan exit {} (want {want_exit}); issues {}",
                scan.code, file["issues"]
            ));
        }
        for class in ["dangerous", "unknown"] {
            let got = class_paths(file, class);
            let wanted = strings(&want[class]);
            if got != wanted {
                failures.push(format!("{name}: {class} {got:?}, want {wanted:?}"));
            }
        }

        let open = run_bounded(&["inspect", "--json", path]);
        check_bounds(name, "inspect", &open);
        match want["open_error"].as_str() {
            None if open.code != 0 => {
                failures.push(format!("{name}: inspect failed: {}", open.stderr.trim()))
            }
            None => {
                // inspect reports the globals scan reports, from every pickle.
                let report: Json = serde_json::from_str(&open.stdout).unwrap_or(Json::Null);
                for class in ["dangerous", "unknown"] {
                    let got = strings(&report["scan"][class]);
                    if got != class_paths(file, class) {
                        failures.push(format!("{name}: inspect {class} {got:?} ≠ scan's"));
                    }
                }
            }
            Some(substring) if open.code != 1 || !open.stderr.contains(substring) => {
                failures.push(format!(
                    "{name}: inspect exit {}, stderr {:?}; want exit 1 with {substring:?}",
                    open.code,
                    open.stderr.trim()
                ))
            }
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn several_files_exit_with_the_most_severe_status() {
    let h = hostile();
    let file = |n: &str| h.join(n).to_string_lossy().into_owned();
    let clean = file("benign_namespace.pth");
    let unknown = file("unknown_class.pth");
    let dangerous = file("reduce_os_system.pth");
    let unreadable = file("huge_long.pkl");
    for (files, want) in [
        (vec![clean.clone()], 0),
        (vec![clean.clone(), unknown.clone()], 3),
        (vec![unknown.clone(), dangerous.clone()], 1),
        (vec![dangerous.clone(), unreadable.clone(), clean], 2),
    ] {
        let mut args = vec!["scan"];
        args.extend(files.iter().map(String::as_str));
        let run = run_bounded(&args);
        assert_eq!(run.code, want, "{files:?}: {}", run.stdout);
    }
    let text = run_bounded(&["scan", &dangerous]).stdout;
    assert!(
        text.contains("dangerous") && text.contains("os.system") && text.contains("data.pkl"),
        "{text}"
    );
}

#[test]
fn a_folder_exits_with_its_worst_checkpoint_and_says_what_it_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nested = dir.path().join("runs/7");
    std::fs::create_dir_all(&nested).expect("mkdir");
    let h = hostile();
    std::fs::copy(h.join("benign_namespace.pth"), dir.path().join("a.pth")).expect("copy");
    std::fs::write(dir.path().join("notes.txt"), "lr 3e-4\n").expect("write");
    let root = dir.path().to_str().expect("utf-8");
    let clean = run_bounded(&["scan", root]);
    assert_eq!(clean.code, 0, "{}", clean.stdout);
    assert!(
        clean
            .stdout
            .contains("1 file scanned: 1 clean; 1 other file skipped"),
        "{}",
        clean.stdout
    );
    std::fs::copy(h.join("reduce_os_system.pth"), nested.join("w.bin")).expect("copy");
    let dangerous = run_bounded(&["scan", "--json", root]);
    assert_eq!(dangerous.code, 1, "{}", dangerous.stdout);
    let report: serde_json::Value = serde_json::from_str(&dangerous.stdout).expect("json");
    assert_eq!(report["files"].as_array().map(Vec::len), Some(2));
    assert_eq!(report["skipped"].as_array().map(Vec::len), Some(1));
}

#[test]
fn rewrites_refuse_dangerous_and_unknown_inputs_and_write_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.pth");
    let out_s = out.to_str().expect("utf-8");
    let h = hostile();
    let evil = h.join("nested_zip.pth");
    let unknown = h.join("unknown_class.pth");
    let (evil, unknown) = (
        evil.to_str().expect("path"),
        unknown.to_str().expect("path"),
    );
    let commands: [&[&str]; 5] = [
        &["strip-module"],
        &["remap", "--to", "cpu"],
        &["amp", "--to", "native"],
        &["convert", "--dtype", "float16"],
        &["to-onnx"],
    ];
    for command in commands {
        for (input, allow, want) in [
            (evil, true, "dangerous globals (os.system)"),
            (unknown, false, "--allow-unknown-globals"),
        ] {
            let mut args = command.to_vec();
            args.extend([input, "-o", out_s]);
            if allow {
                args.push("--allow-unknown-globals");
            }
            let run = run_bounded(&args);
            assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
            assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
            assert!(!out.exists(), "{args:?} wrote {out_s}");
        }
    }
}

#[test]
fn rewrites_allowed_to_pass_unknown_globals_keep_them_and_never_scan_clean() {
    let dir = tempfile::tempdir().expect("tempdir");
    let unknown = hostile().join("unknown_class.pth");
    let unknown = unknown.to_str().expect("path");
    let commands: [&[&str]; 3] = [
        &["strip-module"],
        &["remap", "--to", "cpu"],
        &["convert", "--to", "cpu"],
    ];
    for (i, command) in commands.into_iter().enumerate() {
        let out = dir.path().join(format!("out{i}.pth"));
        let out_s = out.to_str().expect("utf-8");
        let mut args = command.to_vec();
        args.extend([unknown, "-o", out_s, "--allow-unknown-globals"]);
        let run = run_bounded(&args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let scan = run_bounded(&["scan", "--json", out_s]);
        let json: Json = serde_json::from_str(&scan.stdout).expect("scan JSON");
        assert_eq!(scan.code, 3, "{args:?}: {}", scan.stdout);
        assert_eq!(
            class_paths(&json["files"][0], "unknown"),
            ["__main__.TrainConfig"],
            "{args:?}"
        );
    }
}

#[test]
fn library_check_matches_the_scan() {
    let h = hostile();
    assert!(matches!(
        check_rewrite(&h.join("stack_global_memo.pth"), Policy::AllowUnknown),
        Err(RefuseError::Dangerous { .. })
    ));
    assert!(matches!(
        check_rewrite(&h.join("local_name_mismatch.pth"), Policy::AllowUnknown),
        Err(RefuseError::Evasion { .. })
    ));
    assert!(matches!(
        check_rewrite(&h.join("unknown_class.pth"), Policy::SafeOnly),
        Err(RefuseError::Unknown { .. })
    ));
    assert!(check_rewrite(&h.join("unknown_class.pth"), Policy::AllowUnknown).is_ok());
    assert!(check_rewrite(&h.join("benign_namespace.pth"), Policy::SafeOnly).is_ok());
    let scan = scan_file(&h.join("proto0_inst.pkl"), &AllowList::default());
    assert_eq!(scan.status(), Status::Dangerous);
    assert_eq!(scan.paths_of(Class::Dangerous), ["os.system"]);
}

// ------------------------------------------------------------------ reader limits

fn read_with(bytes: &[u8], limits: Limits) -> Result<pickle::Pickle, PickleError> {
    pickle::read_with_limits(bytes, limits)
}

fn is_limit(r: Result<pickle::Pickle, PickleError>) -> bool {
    matches!(r, Err(PickleError::Limit { .. }))
}

#[test]
fn node_limit_is_enforced() {
    let bytes = [b"\x80\x02".as_slice(), &[b')'; 100], b"."].concat();
    let limits = Limits {
        max_nodes: 50,
        ..Limits::default()
    };
    assert!(is_limit(read_with(&bytes, limits)));
}

#[test]
fn mark_limit_is_enforced() {
    let bytes = [b"\x80\x02".as_slice(), &[b'('; 100], b"."].concat();
    let limits = Limits {
        max_marks: 50,
        ..Limits::default()
    };
    assert!(is_limit(read_with(&bytes, limits)));
}

#[test]
fn long_limits_are_enforced() {
    let long1 = [b"\x80\x02\x8a\xff".as_slice(), &[1u8; 255], b"."].concat();
    let limits = Limits {
        max_long_bytes: 100,
        ..Limits::default()
    };
    assert!(is_limit(read_with(&long1, limits)));
    let text = [b"L".as_slice(), &[b'9'; 400], b"L\n."].concat();
    assert!(is_limit(read_with(&text, limits)));
    assert!(read_with(&text, Limits::default()).is_ok());
}

/// Fuzz regression (pickle target): a protocol 0 `LONG` of ~12,000 digits passed the digit
/// bound but decoded to more than `max_long_bytes`, so the writer's `LONG4` of it could not
/// be read back.
#[test]
fn decimal_long_obeys_the_byte_limit_so_it_round_trips() {
    let digits = 12_000;
    let bytes = [b"L".as_slice(), &vec![b'9'; digits], b"L\n."].concat();
    assert!(is_limit(read_with(&bytes, Limits::default())));
    let ok = [b"L".as_slice(), &vec![b'9'; 9_000], b"L\n."].concat();
    let first = read_with(&ok, Limits::default()).expect("9000 digits fit 4096 bytes");
    let written = pickle::write(&first.graph, first.root).expect("writes");
    assert!(read_with(&written, Limits::default()).is_ok());
}

/// Fuzz regression (pickle target): a `STACK_GLOBAL` name with a newline was read, then
/// written as a newline-delimited `GLOBAL`, so the rewrite's bytes meant other opcodes (an
/// injection route from an unknown global to anything).
#[test]
fn stack_global_names_with_newlines_are_refused() {
    let bytes = b"\x80\x04\x8c\x02os\x94\x8c\x06spt \nm\x94h\x00h\x01\x93(X\x01\x00\x00\x00xtR.";
    assert!(matches!(
        read_with(bytes, Limits::default()),
        Err(PickleError::Ambiguous { .. })
    ));
}

#[test]
fn lenient_read_keeps_globals_before_the_break_and_popped_ones() {
    // GLOBAL os.system, args, REDUCE, POP, then a bad opcode.
    let bytes = b"\x80\x02cos\nsystem\n(X\x01\x00\x00\x00xtR0\xff";
    let partial = pickle::read_lenient(bytes, Limits::default());
    assert!(partial.end.is_err());
    let names: Vec<String> = partial
        .globals
        .iter()
        .filter_map(|&id| partial.graph.global(id).map(|g| g.to_string()))
        .collect();
    assert_eq!(names, ["os.system"]);
}

#[test]
fn inst_obj_and_memo_stack_global_become_globals() {
    for bytes in [
        b"(S'x'\nios\nsystem\n.".as_slice(),
        b"(cos\nsystem\nS'x'\no.",
        b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94h\x00h\x01\x93).",
    ] {
        let partial = pickle::read_lenient(bytes, Limits::default());
        let names: Vec<String> = partial
            .globals
            .iter()
            .filter_map(|&id| partial.graph.global(id).map(|g| g.to_string()))
            .collect();
        assert_eq!(names, ["os.system"], "{bytes:?}");
    }
}
