//! Hand-built zip archives, canonical or not, shared by the loader's tests and the
//! scanner's (which judge the same hostile layouts).

use std::io::{Cursor, Seek, Write};

use super::{read_directory, Directory};
use crate::torch::zip_read::ZipError;

/// The external attribute bit a DOS directory carries.
pub const DOS_DIRECTORY: u32 = super::DOS_DIRECTORY;

/// The little-endian `u64` at `at`.
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    super::u64_at(b, at)
}

pub const BENIGN: &[u8] = b"\x80\x02}q\x00.";
pub const EVIL: &[u8] = b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.";

/// One record as a raw zip writer lays it out.
pub struct Rec {
    pub name: Vec<u8>,
    pub data: Vec<u8>,
    pub offset: u64,
}

/// Local headers and data of `records`, stored, plain sizes.
pub fn locals(records: &[(&str, &[u8])]) -> (Vec<u8>, Vec<Rec>) {
    let mut out = Vec::new();
    let mut recs = Vec::new();
    for (name, data) in records {
        let offset = out.len() as u64;
        out.extend_from_slice(b"PK\x03\x04");
        out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        recs.push(Rec {
            name: name.as_bytes().to_vec(),
            data: data.to_vec(),
            offset,
        });
    }
    (out, recs)
}

/// A central-directory entry with the given 32-bit fields and extra data.
pub fn central_with(rec: &Rec, sizes32: u32, extra: &[u8], external: u32) -> Vec<u8> {
    let mut c = Vec::new();
    c.extend_from_slice(b"PK\x01\x02");
    c.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    c.extend_from_slice(&crc32fast::hash(&rec.data).to_le_bytes());
    c.extend_from_slice(&sizes32.to_le_bytes());
    c.extend_from_slice(&sizes32.to_le_bytes());
    c.extend_from_slice(&(rec.name.len() as u16).to_le_bytes());
    c.extend_from_slice(&(extra.len() as u16).to_le_bytes());
    c.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    c.extend_from_slice(&external.to_le_bytes());
    c.extend_from_slice(&(rec.offset as u32).to_le_bytes());
    c.extend_from_slice(&rec.name);
    c.extend_from_slice(extra);
    c
}

pub fn central(recs: &[Rec]) -> Vec<u8> {
    recs.iter()
        .flat_map(|r| central_with(r, r.data.len() as u32, &[], 0))
        .collect()
}

pub fn eocd(entries: u16, size: u32, offset: u32, comment: u16) -> Vec<u8> {
    let mut e = b"PK\x05\x06\0\0\0\0".to_vec();
    e.extend_from_slice(&entries.to_le_bytes());
    e.extend_from_slice(&entries.to_le_bytes());
    e.extend_from_slice(&size.to_le_bytes());
    e.extend_from_slice(&offset.to_le_bytes());
    e.extend_from_slice(&comment.to_le_bytes());
    e
}

pub fn zip64_end(record_size: u64, entries: u64, size: u64, offset: u64) -> Vec<u8> {
    let mut z = b"PK\x06\x06".to_vec();
    z.extend_from_slice(&record_size.to_le_bytes());
    z.extend_from_slice(&[45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    for v in [entries, entries, size, offset] {
        z.extend_from_slice(&v.to_le_bytes());
    }
    z
}

pub fn locator(record_at: u64) -> Vec<u8> {
    let mut l = b"PK\x06\x07\0\0\0\0".to_vec();
    l.extend_from_slice(&record_at.to_le_bytes());
    l.extend_from_slice(&1u32.to_le_bytes());
    l
}

/// A canonical archive of `records` (no zip64), as Python's zipfile would lay it out.
pub fn plain(records: &[(&str, &[u8])]) -> Vec<u8> {
    let (mut out, recs) = locals(records);
    let cd = central(&recs);
    let at = out.len() as u32;
    out.extend_from_slice(&cd);
    out.extend_from_slice(&eocd(recs.len() as u16, cd.len() as u32, at, 0));
    out
}

pub fn file_with(bytes: &[u8]) -> std::fs::File {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(bytes).unwrap();
    f.rewind().unwrap();
    f
}

pub fn directory(bytes: &[u8]) -> Result<Directory, ZipError> {
    read_directory(&mut Cursor::new(bytes), bytes.len() as u64)
}
