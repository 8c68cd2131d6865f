//! Byte sources the scanner reads: a file, a window of one (a stored record), an inflated
//! record held in memory. Every read is bounded by the source's length.

use std::io::{self, Read, Seek, SeekFrom};

/// Anything the scanner can read at an offset.
pub trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

/// `len` bytes of `inner` from `start`, seen as a stream of its own (offset 0 = `start`).
/// Invariant: `pos <= len`; nothing outside `[start, start + len)` is read.
pub struct Window<'a> {
    inner: &'a mut dyn ReadSeek,
    start: u64,
    len: u64,
    pos: u64,
}

impl<'a> Window<'a> {
    pub fn new(inner: &'a mut dyn ReadSeek, start: u64, len: u64) -> Self {
        Window {
            inner,
            start,
            len,
            pos: 0,
        }
    }
}

impl Read for Window<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len - self.pos;
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        if n == 0 {
            return Ok(0);
        }
        self.inner.seek(SeekFrom::Start(self.start + self.pos))?;
        let got = self.inner.read(&mut buf[..n])?;
        self.pos += got as u64;
        Ok(got)
    }
}

impl Seek for Window<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match target {
            Some(t) if t <= self.len => {
                self.pos = t;
                Ok(t)
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek outside the record",
            )),
        }
    }
}

/// Reads up to `limit` bytes from `r` (fewer if it ends first).
pub fn read_up_to(r: &mut dyn Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(usize::try_from(limit.min(1 << 20)).unwrap_or(0));
    r.take(limit).read_to_end(&mut out)?;
    Ok(out)
}

/// Reads `len` bytes at `offset` of `r`; `len` is checked by the caller against the source.
pub fn read_at(r: &mut dyn ReadSeek, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    r.seek(SeekFrom::Start(offset))?;
    let out = read_up_to(r, len)?;
    if (out.len() as u64) < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the file ends early",
        ));
    }
    Ok(out)
}
