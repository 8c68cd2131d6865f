//! The loader and the scanner judged together on hand-built zip archives: each ambiguous
//! layout is built around a benign and a malicious `data.pkl` and must be refused by the
//! loader and called an evasion by the scanner.

use std::path::Path;

use super::{scan_open, AllowList, Severity, Status};
use ckpt_formats::torch::zip_dir::testing::{
    central, central_with, directory, eocd, file_with, locals, locator, plain, u64_at, zip64_end,
    BENIGN, DOS_DIRECTORY, EVIL,
};
use ckpt_formats::torch::zip_read::{TorchZip, ZipError};
use ckpt_formats::torch::zip_write::TorchZipWriter;

/// The loader refuses `bytes` as ambiguous and the scanner calls it an evasion
/// (dangerous), with a message that says what is ambiguous.
fn assert_refused(bytes: &[u8], what: &str) {
    let err = TorchZip::open(file_with(bytes)).unwrap_err();
    assert!(matches!(&err, ZipError::Ambiguous(_)), "{err}");
    let message = err.to_string();
    assert!(message.contains(what), "{message}");
    assert!(message.contains("miniz"), "{message}");
    assert_eq!(message.lines().count(), 1);
    let scan = scan_open(Path::new("x.pth"), &file_with(bytes), &AllowList::default());
    assert_eq!(scan.status(), Status::Dangerous, "{:?}", scan.issues);
    assert!(
        scan.issues
            .iter()
            .any(|i| i.severity == Severity::Evasion && i.message.contains(what)),
        "{:?}",
        scan.issues
    );
}

#[test]
fn zip64_locator_before_a_plain_end_record_is_refused() {
    // The classic end record lists a benign directory, the zip64 one (which torch's
    // reader prefers) an evil one over another `data.pkl`.
    let (mut out, recs) = locals(&[("archive/data.pkl", BENIGN), ("archive/data.pkl", EVIL)]);
    let benign = central(&recs[..1]);
    let evil = central(&recs[1..]);
    let benign_at = out.len() as u64;
    out.extend_from_slice(&benign);
    let evil_at = out.len() as u64;
    out.extend_from_slice(&evil);
    let record_at = out.len() as u64;
    out.extend_from_slice(&zip64_end(44, 1, evil.len() as u64, evil_at));
    out.extend_from_slice(&locator(record_at));
    out.extend_from_slice(&eocd(1, benign.len() as u32, benign_at as u32, 0));
    let err = directory(&out).unwrap_err().to_string();
    assert!(err.contains("disagrees"), "{err}");
    assert_refused(&out, "torch's reader uses the zip64 one");
}

#[test]
fn a_locator_pointing_at_no_zip64_record_is_refused() {
    let mut bytes = plain(&[("archive/data.pkl", BENIGN)]);
    let end = bytes.split_off(bytes.len() - 22);
    bytes.extend_from_slice(&locator(0));
    bytes.extend_from_slice(&end);
    assert_refused(&bytes, "points at no zip64 end record");
}

#[test]
fn a_comment_length_past_the_end_of_the_file_is_refused() {
    let mut bytes = plain(&[("archive/data.pkl", BENIGN)]);
    let n = bytes.len();
    bytes[n - 2..].copy_from_slice(&100u16.to_le_bytes());
    assert_refused(&bytes, "declares a 100-byte comment but 0 bytes follow it");
}

#[test]
fn a_second_end_record_after_the_first_is_refused() {
    // The first end record's comment holds a second end record (and its directory):
    // readers that honour the comment length take the first, torch's the last.
    let (mut out, recs) = locals(&[("archive/data.pkl", BENIGN), ("archive/data.pkl", EVIL)]);
    let benign = central(&recs[..1]);
    let evil = central(&recs[1..]);
    let benign_at = out.len() as u32;
    out.extend_from_slice(&benign);
    let tail_len = (evil.len() + 22) as u16;
    out.extend_from_slice(&eocd(1, benign.len() as u32, benign_at, tail_len));
    let evil_at = out.len() as u32;
    out.extend_from_slice(&evil);
    out.extend_from_slice(&eocd(1, evil.len() as u32, evil_at, 0));
    // torch's reader takes the evil directory, complete and canonical on its own terms.
    assert_refused(&out, "has a comment reaching the end of the file");
}

#[test]
fn a_directory_after_its_end_record_is_refused() {
    let (mut out, recs) = locals(&[("archive/data.pkl", EVIL)]);
    let cd = central(&recs);
    let end_at = out.len() as u32;
    out.extend_from_slice(&eocd(1, cd.len() as u32, end_at + 22, cd.len() as u16));
    out.extend_from_slice(&cd);
    assert_refused(&out, "not where the end records begin");
}

#[test]
fn a_zip64_record_whose_size_field_is_off_is_refused() {
    let mut w = TorchZipWriter::new(Vec::new(), "archive", 64);
    w.add_bytes("data.pkl", BENIGN).unwrap();
    let bytes = w.finish().unwrap();
    let record = bytes.len() - 22 - 20 - 56;
    assert_eq!(&bytes[record..record + 4], b"PK\x06\x06");
    let mut b = bytes.clone();
    b[record + 4..record + 12].copy_from_slice(&52u64.to_le_bytes());
    assert_refused(&b, "declares a size of 52 bytes, not 44");
    // The directory size it declares, one byte off the classic record's.
    let mut b = bytes.clone();
    let size = u64_at(&bytes, record + 40);
    b[record + 40..record + 48].copy_from_slice(&(size + 1).to_le_bytes());
    assert_refused(&b, "disagrees with the zip64 end record's");
}

#[test]
fn two_zip64_extra_fields_on_one_entry_are_refused() {
    let (mut out, recs) = locals(&[("archive/data.pkl", EVIL)]);
    let n = EVIL.len() as u64;
    let mut extra = Vec::new();
    for sizes in [[n, n], [1, 1]] {
        extra.extend_from_slice(&[1, 0, 16, 0]);
        for v in sizes {
            extra.extend_from_slice(&v.to_le_bytes());
        }
    }
    let cd = central_with(&recs[0], u32::MAX, &extra, 0);
    let at = out.len() as u32;
    out.extend_from_slice(&cd);
    out.extend_from_slice(&eocd(1, cd.len() as u32, at, 0));
    // torch's reader takes the first field.
    let err = directory(&out).unwrap_err().to_string();
    assert!(err.contains("2 zip64"), "{err}");
    assert_refused(&out, "it has 2 zip64 extra fields");
    // One field, but holding a value its header does not defer to it.
    let mut extra = vec![1, 0, 24, 0];
    for v in [n, n, 0] {
        extra.extend_from_slice(&v.to_le_bytes());
    }
    let (mut out, recs) = locals(&[("archive/data.pkl", EVIL)]);
    let cd = central_with(&recs[0], u32::MAX, &extra, 0);
    let at = out.len() as u32;
    out.extend_from_slice(&cd);
    out.extend_from_slice(&eocd(1, cd.len() as u32, at, 0));
    assert_refused(&out, "holds 24 bytes where its header defers 2 values");
    // An entry with one well-formed field is read with its 64-bit sizes.
    let (mut out, recs) = locals(&[("archive/data.pkl", BENIGN)]);
    let mut extra = vec![1, 0, 16, 0];
    for v in [BENIGN.len() as u64; 2] {
        extra.extend_from_slice(&v.to_le_bytes());
    }
    let cd = central_with(&recs[0], u32::MAX, &extra, 0);
    let at = out.len() as u32;
    out.extend_from_slice(&cd);
    out.extend_from_slice(&eocd(1, cd.len() as u32, at, 0));
    let dir = directory(&out).unwrap();
    assert_eq!(dir.entries[0].size, BENIGN.len() as u64);
    assert!(TorchZip::open(file_with(&out)).is_ok());
}

#[test]
fn names_equal_ignoring_case_are_refused() {
    let bytes = plain(&[("archive/data.pkl", BENIGN), ("archive/DATA.pkl", EVIL)]);
    assert_refused(&bytes, "differ only in letter case");
    let bytes = plain(&[("archive/data.pkl", BENIGN), ("archive/data.pkl", EVIL)]);
    assert_refused(&bytes, "the name appears twice");
}

#[test]
fn names_with_nul_and_records_marked_as_directories_are_refused() {
    let bytes = plain(&[("archive/data.pkl", BENIGN), ("archive/x.pkl\0y", EVIL)]);
    assert_refused(&bytes, "NUL byte");
    let (mut out, recs) = locals(&[("archive/data.pkl", EVIL)]);
    let cd = central_with(&recs[0], EVIL.len() as u32, &[], DOS_DIRECTORY);
    let at = out.len() as u32;
    out.extend_from_slice(&cd);
    out.extend_from_slice(&eocd(1, cd.len() as u32, at, 0));
    assert_refused(&out, "takes it for a directory");
}

#[test]
fn the_torchscript_rule_is_an_exact_constants_pkl_in_the_folder() {
    let script = plain(&[("m/data.pkl", BENIGN), ("m/constants.pkl", BENIGN)]);
    assert!(directory(&script).unwrap().is_torchscript());
    for name in [
        "m/sub/constants.pkl",
        "m/CONSTANTS.pkl",
        "m/constants.pkl/",
        "m/xconstants.pkl",
    ] {
        let other = plain(&[("m/data.pkl", BENIGN), (name, b"")]);
        let dir = directory(&other);
        assert!(dir.as_ref().map_or(true, |d| !d.is_torchscript()), "{name}");
    }
    // The scanner judges `__torch__` names as torch would: only inside TorchScript.
    let unpickled = b"\x80\x02c__torch__\nNet\nq\x00)\x81q\x01.";
    for (name, format, status) in [
        ("m/constants.pkl", "torchscript", Status::Clean),
        ("m/sub/constants.pkl", "zip", Status::Unknown),
    ] {
        let bytes = plain(&[("m/data.pkl", unpickled), (name, BENIGN)]);
        let scan = scan_open(Path::new("s.pt"), &file_with(&bytes), &AllowList::default());
        assert_eq!((scan.format, scan.status()), (format, status), "{name}");
        let zip = TorchZip::open(file_with(&bytes)).unwrap();
        assert_eq!(zip.is_torchscript(), format == "torchscript");
    }
}
