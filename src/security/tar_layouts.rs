//! The loader and the scanner judged together on hand-built tar checkpoints: each layout
//! `tarfile` reads differently across Python versions is refused by the loader and called an
//! evasion by the scanner.

use std::io::Write;

use ckpt_formats::torch::tar::is_tar;
use ckpt_formats::torch::tar::testing::{
    build_tar, check_fixture_facts, fixture, fixture_members, header, parse_bytes, pax,
    set_checksum, storages_end, with_members, TarMember, EVIL, PAX_HEADER_NAME,
};

/// Scans `bytes` as `ckpt scan` does.
fn scan_bytes(bytes: &[u8]) -> super::FileScan {
    let mut file = tempfile::tempfile().expect("temp file");
    file.write_all(bytes).expect("write");
    let allowed = super::AllowList::default();
    super::scan_open(std::path::Path::new("t.tar"), &file, &allowed)
}

/// The file is refused as ambiguous: the scan calls it dangerous through an evasion
/// (never clean, never unreadable), and the loader refuses it.
fn assert_ambiguous(bytes: &[u8], case: &str) -> super::FileScan {
    let scan = scan_bytes(bytes);
    assert_eq!(
        scan.status(),
        super::Status::Dangerous,
        "{case}: {:?}",
        scan.issues
    );
    assert!(
        scan.issues
            .iter()
            .any(|i| i.severity == super::Severity::Evasion),
        "{case}: {:?}",
        scan.issues
    );
    let err = parse_bytes(bytes).expect_err(case).to_string();
    assert!(err.contains("ambiguous"), "{case}: {err}");
    scan
}

#[test]
fn the_layouts_python_writes_are_read() {
    // Python 3's `tar.add` of a temporary file: a PAX header for the float mtime, a long
    // user name; a PAX size for a member past 8 GiB (here any); `hdrcharset=BINARY`.
    let m = fixture_members();
    let tar = build_tar(&[
        (PAX_HEADER_NAME, b'x', pax("mtime", "1483228800.123456")),
        ("sys_info", b'0', b"\x80\x02}q\x00.".to_vec()),
        (
            PAX_HEADER_NAME,
            b'x',
            [
                pax("hdrcharset", "BINARY"),
                pax("uname", "a-user-name-longer-than-32-bytes-x"),
            ]
            .concat(),
        ),
        ("pickle", b'0', m["pickle"].clone()),
        (
            PAX_HEADER_NAME,
            b'x',
            [
                pax("mtime", "1"),
                pax("size", &m["tensors"].len().to_string()),
            ]
            .concat(),
        ),
        ("tensors", b'0', m["tensors"].clone()),
        ("storages", b'0', m["storages"].clone()),
    ]);
    check_fixture_facts(&parse_bytes(&tar).expect("parse"));
    assert_eq!(scan_bytes(&tar).status(), super::Status::Clean);
    // What follows the end-of-archive zero block is never read by `tarfile`.
    let mut tail = fixture();
    tail.extend_from_slice(b"anything at all");
    check_fixture_facts(&parse_bytes(&tail).expect("parse"));
}

#[test]
fn header_precedence_tricks_are_ambiguous() {
    // Each names a payload `pickle` through a header `tarfile` applies; torch 2.13 loads
    // each of them and reaches `os.system`.
    let x = |records: Vec<u8>| (PAX_HEADER_NAME, b'x', records);
    let cases: Vec<(&str, Vec<TarMember>)> = vec![
        (
            "nested PAX",
            vec![
                x(pax("path", "pickle")),
                x(pax("mtime", "1")),
                ("decoy", b'0', EVIL.to_vec()),
            ],
        ),
        (
            "PAX path",
            vec![x(pax("path", "pickle")), ("decoy", b'0', EVIL.to_vec())],
        ),
        (
            "GNU long name with PAX",
            vec![
                x(pax("mtime", "1")),
                ("././@LongLink", b'L', b"pickle\0".to_vec()),
                ("decoy", b'0', EVIL.to_vec()),
            ],
        ),
        (
            "GNU.sparse.name",
            vec![
                x(pax("GNU.sparse.name", "pickle")),
                ("decoy", b'0', EVIL.to_vec()),
            ],
        ),
        (
            "global header",
            vec![("pax_global_header", b'g', pax("path", "pickle"))],
        ),
        (
            "PAX under another name",
            vec![("PaxHeaders/x", b'x', pax("mtime", "1"))],
        ),
    ];
    for (case, extra) in cases {
        let tar = with_members(&extra, b"\x80\x02}.");
        assert_ambiguous(&tar, case);
    }
    // PAX records hidden in the block padding after the declared size: Python 3.11 parses
    // them, later versions stop at the NUL.
    let record = pax("path", "pickle");
    let mut tar = with_members(
        &[x(pax("mtime", "1")), ("decoy", b'0', EVIL.to_vec())],
        b"\x80\x02}.",
    );
    let at = 512 + 512 + 512 + pax("mtime", "1").len();
    tar[at] = 0;
    tar[at + 1..at + 1 + record.len()].copy_from_slice(&record);
    assert_ambiguous(&tar, "PAX padding");
}

#[test]
fn numbers_python_reads_but_torch_never_wrote_are_ambiguous() {
    // `tarfile.nti`: `int(field, 8)` takes a prefix, underscores, a sign, `\x1c`-`\x1f`
    // as whitespace; it rejects what is not ASCII (a no-break space, which Rust's
    // `trim` would strip). All of them are refused.
    let fields: [(&str, std::ops::Range<usize>, &[u8]); 6] = [
        ("0o0", 100..108, b"0o0\0\0\0\0\0"),
        ("0_644", 100..108, b"0_644\0\0\0"),
        ("trailing \\x1c", 100..108, b"0000644\x1c"),
        ("sign", 100..108, b"+0000644"),
        ("no-break space", 100..108, "\u{a0}00644\0".as_bytes()),
        ("base-256 size", 124..136, b"\x80\0\0\0\0\0\0\0\0\0\0\x05"),
    ];
    for (case, range, value) in fields {
        for member in [0, 1] {
            let mut tar = with_members(&[], EVIL);
            let at = member * 1024;
            tar[at + range.start..at + range.end].copy_from_slice(value);
            set_checksum(&mut tar[at..at + 512]);
            assert_ambiguous(&tar, case);
        }
    }
    // A PAX size must be plain decimal (Python's `int()` also reads `1_024`, ` 1024`,
    // full-width digits).
    for size in ["1_024", " 1024", "\u{ff11}\u{ff10}", "+10", ""] {
        let tar = with_members(&[(PAX_HEADER_NAME, b'x', pax("size", size))], b"\x80\x02}.");
        // The PAX header applies to `pickle`, inserted right after it.
        assert_ambiguous(&tar, size);
    }
}

#[test]
fn members_tarfile_would_extract_as_files_are_ambiguous() {
    // torch 2.13 extracts each of these as `pickle` and unpickles it: an unknown type
    // (`Z`) and a contiguous file (`7`) are regular files to `tarfile`, a hard link copies
    // its target, `\0` is a regular file unless the name ends in `/`.
    for typeflag in [b'Z', b'7', b'\0', b'1', b'2', b'5', b'S', b'K', b'X'] {
        let tar = with_members(&[], EVIL);
        let mut tar = tar;
        tar[1024 + 156] = typeflag;
        set_checksum(&mut tar[1024..1536]);
        assert_ambiguous(&tar, &format!("type {}", [typeflag].escape_ascii()));
    }
    // Names torch's writer never used: a directory by trailing slash, a link target, a
    // name `tarfile`'s lookup normalises to `pickle`.
    for name in ["pickle/", "payload", "./pickle", "a/../pickle"] {
        let tar = with_members(&[(name, b'0', EVIL.to_vec())], b"\x80\x02}.");
        assert_ambiguous(&tar, name);
    }
    // A ustar prefix.
    let mut tar = with_members(&[], EVIL);
    tar[1024 + 345] = b'.';
    set_checksum(&mut tar[1024..1536]);
    assert_ambiguous(&tar, "prefix");
}

#[test]
fn duplicate_and_missing_members() {
    let m = fixture_members();
    let members = vec![
        ("pickle", b'0', EVIL.to_vec()),
        ("pickle", b'0', m["pickle"].clone()),
        ("tensors", b'0', m["tensors"].clone()),
        ("storages", b'0', m["storages"].clone()),
    ];
    assert_ambiguous(&build_tar(&members), "two `pickle` members");
    // Without `pickle`: torch raises KeyError after reading the side tables. Unreadable,
    // and the side tables' pickles are still scanned.
    let tar = build_tar(&members[2..]);
    let err = parse_bytes(&tar).expect_err("missing").to_string();
    assert!(err.contains("no `pickle` member"), "{err}");
    let scan = scan_bytes(&tar);
    assert_eq!(scan.status(), super::Status::Unreadable);
    assert_eq!(scan.pickles.len(), 5 + 5);
    // A stray header-sized block after the last member.
    let mut tar = fixture();
    let end = storages_end(&tar);
    tar[end] = b'x';
    assert_ambiguous(&tar, "stray block");
}

#[test]
fn tar_legacy_polyglots_are_ambiguous() {
    // The first block is a header `tarfile` takes, but a number field it rejects: torch
    // falls back to the legacy stream at byte 0, whose first pickle is a payload.
    let mut block = header("x", 0, b'0');
    block[..100].fill(0);
    block[..EVIL.len()].copy_from_slice(EVIL);
    block[100..108].copy_from_slice(b"9999999\0");
    set_checksum(&mut block);
    let mut file = block.to_vec();
    file.resize(2048, 0);
    assert!(is_tar(&file));
    let scan = assert_ambiguous(&file, "polyglot");
    assert!(scan.paths_of(super::Class::Dangerous) == ["os.system"]);
    // A first block `tarfile` rejects outright (its checksum field is not a number) is a
    // legacy stream to both.
    block[148..156].copy_from_slice(b"9999999\0");
    assert!(!is_tar(&block));
}

#[test]
fn side_table_pickles_torch_never_wrote_are_ambiguous() {
    // Python's unpickler reads a FRAME whole: this count's frame runs 8 bytes past its
    // STOP, so torch would read the view list from there. The walk cannot follow it.
    let frame = [8u8 + 3, 0, 0, 0, 0, 0, 0, 0];
    let count = [
        b"\x80\x02\x95".as_slice(),
        &frame,
        b"K\x00.",
        b"\x80\x02].\0\0\0",
    ]
    .concat();
    let storages = [count.as_slice(), b"\x80\x02]."].concat();
    let tar = build_tar(&[
        ("pickle", b'0', b"\x80\x02}.".to_vec()),
        ("tensors", b'0', b"\x80\x02K\x00.".to_vec()),
        ("storages", b'0', storages),
    ]);
    let scan = assert_ambiguous(&tar, "frame");
    // The pickle reader's frame rule or the side table's opcode rule names it.
    assert!(
        scan.issues
            .iter()
            .any(|i| i.message.contains("FRAME") || i.message.contains("0x95")),
        "{:?}",
        scan.issues
    );
    // A text INT Python reads as `int(text, 0)`: not what torch wrote, whether or not
    // this reader reads it.
    let tar = build_tar(&[
        ("pickle", b'0', b"\x80\x02}.".to_vec()),
        ("tensors", b'0', b"I0xb\n.".to_vec()),
        ("storages", b'0', b"\x80\x02K\x00.\x80\x02].".to_vec()),
    ]);
    assert_ambiguous(&tar, "text INT");
    // A member that ends inside a pickle: torch fails too.
    let tar = build_tar(&[
        ("pickle", b'0', b"\x80\x02}.".to_vec()),
        ("tensors", b'0', b"\x80\x02K".to_vec()),
        ("storages", b'0', b"\x80\x02K\x00.\x80\x02].".to_vec()),
    ]);
    assert_eq!(scan_bytes(&tar).status(), super::Status::Unreadable);
}

#[test]
fn every_pickle_of_the_side_tables_is_scanned() {
    let locations: Vec<String> = scan_bytes(&fixture())
        .pickles
        .iter()
        .map(|p| p.location.clone())
        .collect();
    let want: Vec<String> = ["tar:sys_info"]
        .into_iter()
        .map(String::from)
        .chain((1..=5).map(|i| format!("tar:storages#{i}")))
        .chain((1..=5).map(|i| format!("tar:tensors#{i}")))
        .chain(["tar:pickle".to_string()])
        .collect();
    assert_eq!(locations, want);
    // A payload in each later pickle (torch 2.13 reaches every one; the tensor type
    // in a tensor header is unpickled and ignored, so that file loads).
    let call = b"cos\nsystem\nX\x04\x00\x00\x00true\x85R";
    let tuple = |items: &[&[u8]]| [b"\x80\x02(".as_slice(), &items.concat(), b"t."].concat();
    let storage = |key: u8| {
        tuple(&[
            &[b'K', key],
            b"X\x03\x00\x00\x00cpu",
            b"ctorch\nFloatStorage\n",
        ])
    };
    let m = fixture_members();
    let two_storages = |second: Vec<u8>, views: &[u8]| {
        [
            b"\x80\x02K\x02.".to_vec(),
            storage(1),
            1i64.to_le_bytes().to_vec(),
            vec![0; 4],
            second,
            1i64.to_le_bytes().to_vec(),
            vec![0; 4],
            views.to_vec(),
        ]
        .concat()
    };
    let tensor_header = tuple(&[b"K\x0b", b"K\x01", call]);
    let one_tensor = [
        b"\x80\x02K\x01.".to_vec(),
        tensor_header,
        1i32.to_le_bytes().to_vec(),
        vec![0; 4],
        [1i64, 1, 0].iter().flat_map(|v| v.to_le_bytes()).collect(),
    ]
    .concat();
    let benign_views = b"\x80\x02].";
    let cases: Vec<(&str, Vec<u8>, Vec<u8>)> = vec![
        (
            "tar:storages#3",
            two_storages(
                tuple(&[b"K\x02", call, b"ctorch\nFloatStorage\n"]),
                benign_views,
            ),
            m["tensors"].clone(),
        ),
        (
            "tar:storages#4",
            two_storages(storage(2), &[b"\x80\x02]".as_slice(), call, b"a."].concat()),
            m["tensors"].clone(),
        ),
        (
            "tar:storages#1",
            [b"\x80\x02".as_slice(), call, b".", benign_views].concat(),
            m["tensors"].clone(),
        ),
        (
            "tar:tensors#2",
            two_storages(storage(2), benign_views),
            one_tensor.clone(),
        ),
        (
            "tar:tensors#1",
            two_storages(storage(2), benign_views),
            [b"\x80\x02".as_slice(), call, b"."].concat(),
        ),
    ];
    for (location, storages, tensors) in cases {
        let tar = build_tar(&[
            ("pickle", b'0', b"\x80\x02}.".to_vec()),
            ("tensors", b'0', tensors),
            ("storages", b'0', storages),
        ]);
        let scan = scan_bytes(&tar);
        assert_eq!(scan.status(), super::Status::Dangerous, "{location}");
        let found = scan.pickles.iter().find(|p| p.location == location);
        let names: Vec<&str> = found
            .map(|p| p.globals.iter().map(|g| g.path.as_str()).collect())
            .unwrap_or_default();
        assert!(
            names.contains(&"os.system"),
            "{location}: {:?}",
            scan.pickles
        );
    }
}
