//! Copying and hashing byte ranges of files: the one place every writer that moves storage
//! bytes file to file (zip records, safetensors, consolidated DCP tensors) goes through.
//!
//! [`copy_range`] uses [`std::io::copy`] from a `Take<&File>`: on Linux, when the output is
//! a file too, std copies inside the kernel (`copy_file_range`, falling back to `sendfile`
//! or `splice`, and to a read/write loop through a buffer when the kernel refuses, or when
//! the output is not a file).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;

/// Bytes read per call by [`crc_of_range`].
pub const HASH_BLOCK: usize = 1 << 20;

/// Copies `len` bytes at `offset` of `file` to `out` at its cursor (moving `file`'s cursor).
/// A file that ends before them is an `UnexpectedEof` error.
pub fn copy_range(file: &File, offset: u64, len: u64, out: &mut impl Write) -> io::Result<()> {
    let mut source = file;
    source.seek(SeekFrom::Start(offset))?;
    let copied = io::copy(&mut source.take(len), out)?;
    if copied != len {
        return Err(short(copied, len));
    }
    Ok(())
}

/// CRC-32 of `len` bytes at `offset` of `file`, read with `pread` in blocks of `buf`'s size
/// (which must not be empty), so memory stays at one block.
pub fn crc_of_range(file: &File, offset: u64, len: u64, buf: &mut [u8]) -> io::Result<u32> {
    let mut hasher = crc32fast::Hasher::new();
    let mut done = 0u64;
    while done < len {
        let n = usize::try_from(len - done)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "crc_of_range: empty buffer",
            ));
        }
        let at = offset
            .checked_add(done)
            .ok_or_else(|| io::Error::other("file offset overflows u64"))?;
        file.read_exact_at(&mut buf[..n], at)
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => short(done, len),
                _ => e,
            })?;
        hasher.update(&buf[..n]);
        done += n as u64;
    }
    Ok(hasher.finalize())
}

fn short(copied: u64, len: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "a source file ended after {copied} of {len} bytes (was it truncated while being read?)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_and_hashes_ranges_and_reports_short_files() {
        let mut file = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
        file.write_all(&bytes).unwrap();
        let mut out = Vec::new();
        copy_range(&file, 100, 5000, &mut out).unwrap();
        assert_eq!(out, &bytes[100..5100]);
        let mut buf = [0u8; 777];
        assert_eq!(
            crc_of_range(&file, 100, 5000, &mut buf).unwrap(),
            crc32fast::hash(&bytes[100..5100])
        );
        let err = copy_range(&file, 9000, 2000, &mut out).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let err = crc_of_range(&file, 9000, 2000, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
