//! Streams a tensor's bytes in row-major order from its chunks, wherever they are.
//!
//! A chunk's bytes are C-contiguous for the chunk's own shape. Seen from the whole tensor,
//! they fall into *runs*: the chunk's innermost axes that span the tensor fully, plus the
//! first axis that does not, are contiguous in both; every outer index of the chunk starts
//! one run (a row-sharded chunk is one run, a column-sharded one a run per row). Runs of one
//! chunk come in the chunk's own byte order, so each chunk is read forwards; the reader
//! merges the chunks' next runs by destination offset. Memory: one small state per chunk and
//! the caller's buffer, whatever the tensor's size.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, IoSliceMut, Read};
use std::os::unix::fs::FileExt;

use super::metadata::ChunkBox;

/// Where one chunk's bytes are: a file and the offset of its first element; the CRC-32 of
/// all its bytes when known.
#[derive(Clone, Copy, Debug)]
pub struct ChunkSource<'a> {
    pub file: &'a File,
    pub offset: u64,
    pub crc32: Option<u32>,
}

/// One chunk's walk over its runs.
struct Walk<'a> {
    source: ChunkSource<'a>,
    /// The chunk's size on the axes before the run axis (its outer index space).
    outer: Vec<u64>,
    /// The chunk's offset on those axes, and on the run axis.
    origin: Vec<u64>,
    /// The run's length in bytes.
    run_bytes: u64,
    /// Runs in the chunk.
    runs: u64,
    /// The next run.
    next: u64,
}

/// Reads a tensor of `size` (row-major, `element` bytes per element) from chunks that tile it
/// exactly (checked by [`super::tiling::tile`] beforehand; a gap or overlap found while
/// reading is an `InvalidData` error, never wrong bytes).
pub struct GatherReader<'a> {
    walks: Vec<Walk<'a>>,
    /// Byte strides of the tensor's axes.
    strides: Vec<u64>,
    /// `(destination offset of the chunk's next run, chunk)`.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The run being copied: chunk, file offset, bytes left.
    current: Option<(usize, u64, u64)>,
    /// Destination bytes produced so far, and the tensor's total.
    position: u64,
    total: u64,
    /// An error met after some bytes of a read were filled, returned by the next read.
    pending: Option<io::Error>,
}

impl<'a> GatherReader<'a> {
    /// `chunks` pairs each chunk's box with its bytes. Sizes must be checked (no overflow)
    /// by the caller: every chunk inside `size`, `size`'s byte count fits `u64`.
    pub fn new(size: &[u64], element: u64, chunks: Vec<(ChunkBox, ChunkSource<'a>)>) -> Self {
        let mut strides = vec![element; size.len()];
        for d in (0..size.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * size[d + 1];
        }
        let total = size.iter().product::<u64>() * element;
        let mut walks = Vec::with_capacity(chunks.len());
        for (chunk, source) in chunks {
            // The run axis: the first axis after which every axis spans the tensor.
            let mut axis = size.len().saturating_sub(1);
            while axis > 0 && chunk.sizes[axis] == size[axis] {
                axis -= 1;
            }
            let inner: u64 = chunk.sizes[axis..].iter().product();
            let outer = chunk.sizes[..axis].to_vec();
            let runs = if inner == 0 {
                0
            } else {
                outer.iter().product()
            };
            walks.push(Walk {
                source,
                outer,
                origin: chunk.offsets.clone(),
                run_bytes: inner * element,
                runs,
                next: 0,
            });
        }
        let mut reader = GatherReader {
            walks,
            strides,
            heap: BinaryHeap::new(),
            current: None,
            position: 0,
            total,
            pending: None,
        };
        for i in 0..reader.walks.len() {
            reader.push_next(i);
        }
        reader
    }

    /// Total bytes the reader yields.
    #[allow(
        clippy::len_without_is_empty,
        reason = "a tensor's reader, never asked whether it is empty"
    )]
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Where the tensor's first byte would be in the shard files if its largest chunk that is
    /// one run of at least `direct_from` bytes were copied from its own offset: that chunk's
    /// file offset minus its offset in the tensor, modulo 64 KiB (the largest granule a zip
    /// record is placed at; see `TorchZipWriter::add_pieces`). `None` when no chunk is.
    pub fn placement(&self, direct_from: u64) -> Option<u64> {
        const GRANULE: u64 = 1 << 16;
        let walk = self
            .walks
            .iter()
            .filter(|w| w.runs == 1 && w.run_bytes >= direct_from)
            .max_by_key(|w| w.run_bytes)?;
        let dest = walk
            .origin
            .iter()
            .zip(&self.strides)
            .fold(0u64, |sum, (o, s)| sum.wrapping_add(o.wrapping_mul(*s)));
        Some((walk.source.offset % GRANULE + GRANULE - dest % GRANULE) % GRANULE)
    }

    /// Queues chunk `i`'s next run by its destination offset.
    fn push_next(&mut self, i: usize) {
        let walk = &self.walks[i];
        if walk.next >= walk.runs {
            return;
        }
        // Unravel the run index over the outer axes, then add the chunk's origin.
        let mut rest = walk.next;
        let mut dest = 0u64;
        for d in (0..walk.outer.len()).rev() {
            let index = rest % walk.outer[d];
            rest /= walk.outer[d];
            dest += (walk.origin[d] + index) * self.strides[d];
        }
        if let Some(&o) = walk.origin.get(walk.outer.len()) {
            dest += o * self.strides[walk.outer.len()];
        }
        self.heap.push(Reverse((dest, i)));
    }
}

/// The most buffers one `preadv` takes (Linux's `IOV_MAX`).
const MAX_PARTS: usize = 1024;

/// Reads `parts`, which lie back to back in `file` from the first one's offset on, with as
/// few vectored reads as the kernel allows.
fn read_parts(file: &File, parts: &mut [(usize, u64, &mut [u8])]) -> io::Result<()> {
    let Some(&(_, mut at, _)) = parts.first() else {
        return Ok(());
    };
    // The part being read and how much of it is done.
    let (mut index, mut done) = (0, 0);
    while index < parts.len() {
        let mut slices: Vec<IoSliceMut> = parts[index..]
            .iter_mut()
            .take(MAX_PARTS)
            .enumerate()
            .map(|(k, part)| IoSliceMut::new(&mut part.2[if k == 0 { done } else { 0 }..]))
            .collect();
        let mut n = rustix::io::preadv(file, &mut slices, at).map_err(io::Error::from)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a chunk's file ended early (was it truncated while being read?)",
            ));
        }
        at += n as u64;
        while n > 0 {
            let left = parts[index].2.len() - done;
            if n < left {
                done += n;
                n = 0;
            } else {
                n -= left;
                index += 1;
                done = 0;
            }
        }
    }
    Ok(())
}

fn broken(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Fills as much of each buffer as the tensor has left, run after run, so a tensor of many
/// short runs (a column-sharded chunk is one run per row) costs its reader few calls.
impl Read for GatherReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let mut filled = 0;
        while filled < buf.len() {
            match self.read_run(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if filled > 0 => {
                    self.pending = Some(e);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }
}

/// One step of [`GatherReader::step`]: what to copy next, in destination order.
#[derive(Debug)]
pub enum Step<'a> {
    /// The tensor is complete.
    End,
    /// A whole run of `len` bytes at `offset` in `file`, for the caller to copy straight from
    /// the file (for example `copy_file_range`, which `io::copy` uses between files), with
    /// its CRC-32 when the run is its whole chunk and the chunk's is known.
    Direct {
        file: &'a File,
        offset: u64,
        len: u64,
        crc32: Option<u32>,
    },
    /// The first `n` bytes of the caller's buffer: runs shorter than the direct threshold.
    Buffered(usize),
}

impl<'a> GatherReader<'a> {
    /// The next part of the tensor: a whole run of at least `direct_from` bytes as a file
    /// range ([`Step::Direct`]), or shorter runs read into `buf`, up to the next such run or
    /// the buffer's end ([`Step::Buffered`]). `u64::MAX` reads everything into `buf`, as
    /// [`Read`] does. Interleaved runs (column-sharded chunks) are short and buffered; a
    /// row-sharded chunk is one long run, copied without passing through this process.
    pub fn step(&mut self, buf: &mut [u8], direct_from: u64) -> io::Result<Step<'a>> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        if self.position >= self.total {
            return Ok(Step::End);
        }
        if self.next_run_is_direct(direct_from) {
            let (chunk, at, len) = self.begin_run()?;
            self.current = None;
            self.position += len;
            let walk = &self.walks[chunk];
            return Ok(Step::Direct {
                file: walk.source.file,
                offset: at,
                len,
                crc32: walk.source.crc32.filter(|_| walk.runs == 1),
            });
        }
        Ok(Step::Buffered(self.fill(buf, direct_from)?))
    }

    /// Fills `buf` with the runs before the next one of at least `direct_from` bytes, in
    /// destination order: a run in progress is finished first, then the whole runs that fit
    /// are planned and each chunk's share read with vectored reads (the rows of a
    /// column-sharded chunk lie back to back in its file, so all of them that land in this
    /// buffer take one `preadv`, where reading them one by one took a call per row); a last
    /// run that does not fit is read in part and finished by the next call.
    fn fill(&mut self, buf: &mut [u8], direct_from: u64) -> io::Result<usize> {
        let mut filled = self.finish_run(buf, 0)?;
        let mut planned: Vec<(usize, u64, usize)> = Vec::new();
        let mut end = filled;
        while end < buf.len() && self.position < self.total && !self.next_run_is_direct(direct_from)
        {
            let (chunk, at, len) = self.begin_run()?;
            let room = (buf.len() - end) as u64;
            if len > room {
                self.current = Some((chunk, at, len));
                break;
            }
            self.current = None;
            self.position += len;
            planned.push((chunk, at, len as usize));
            end += len as usize;
        }
        let mut parts = Vec::with_capacity(planned.len());
        let mut rest = &mut buf[filled..end];
        for (chunk, at, len) in planned {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            parts.push((chunk, at, head));
            rest = tail;
        }
        parts.sort_by_key(|(chunk, at, _)| (*chunk, *at));
        for group in parts.chunk_by_mut(|a, b| a.0 == b.0 && a.1 + a.2.len() as u64 == b.1) {
            read_parts(self.walks[group[0].0].source.file, group)?;
        }
        filled = end;
        self.finish_run(buf, filled)
    }

    /// Reads the run in progress, if any, into `buf[filled..]` until it ends or the buffer
    /// is full; the new fill level.
    fn finish_run(&mut self, buf: &mut [u8], mut filled: usize) -> io::Result<usize> {
        while filled < buf.len() && self.current.is_some_and(|run| run.2 > 0) {
            filled += self.read_run(&mut buf[filled..])?;
        }
        Ok(filled)
    }

    /// Whether no run is in progress and the next one has at least `direct_from` bytes.
    fn next_run_is_direct(&self, direct_from: u64) -> bool {
        let in_progress = self.current.is_some_and(|run| run.2 > 0);
        !in_progress
            && self
                .heap
                .peek()
                .is_some_and(|Reverse((_, i))| self.walks[*i].run_bytes >= direct_from)
    }

    /// Starts the next run in destination order: `(chunk, file offset, bytes)`.
    fn begin_run(&mut self) -> io::Result<(usize, u64, u64)> {
        let Some(Reverse((dest, i))) = self.heap.pop() else {
            return Err(broken(format!(
                "the chunks end at byte {} of {}",
                self.position, self.total
            )));
        };
        if dest != self.position {
            return Err(broken(format!(
                "the chunks do not tile the tensor (byte {} expected, {dest} next)",
                self.position
            )));
        }
        let walk = &mut self.walks[i];
        let at = walk.source.offset + walk.next * walk.run_bytes;
        walk.next += 1;
        let run = (i, at, walk.run_bytes);
        self.push_next(i);
        Ok(run)
    }

    /// Reads from one run (the current one, or the next in destination order): at most its
    /// bytes left. 0 only for an empty `buf` or at the end of the tensor.
    fn read_run(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.position >= self.total {
            return Ok(0);
        }
        let (chunk, at, left) = match self.current {
            Some(run) if run.2 > 0 => run,
            _ => self.begin_run()?,
        };
        let want = (buf.len() as u64).min(left) as usize;
        let n = self.walks[chunk]
            .source
            .file
            .read_at(&mut buf[..want], at)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a chunk's file ended early (was it truncated while being read?)",
            ));
        }
        self.current = Some((chunk, at + n as u64, left - n as u64));
        self.position += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn boxed(offsets: &[u64], sizes: &[u64]) -> ChunkBox {
        ChunkBox {
            offsets: offsets.to_vec(),
            sizes: sizes.to_vec(),
        }
    }

    /// A 3×4 u8 tensor 0..12 split into a left 3×1 column and a right 3×3 block, stored
    /// back to back in one file, gathers back in order; so does a row split.
    #[test]
    fn columns_and_rows_gather_in_order() {
        let mut file = tempfile::tempfile().unwrap();
        // Left column: 0, 4, 8. Right block: 1 2 3 / 5 6 7 / 9 10 11.
        file.write_all(&[0, 4, 8, 1, 2, 3, 5, 6, 7, 9, 10, 11])
            .unwrap();
        let chunks = vec![
            (
                boxed(&[0, 1], &[3, 3]),
                ChunkSource {
                    file: &file,
                    offset: 3,
                    crc32: None,
                },
            ),
            (
                boxed(&[0, 0], &[3, 1]),
                ChunkSource {
                    file: &file,
                    offset: 0,
                    crc32: None,
                },
            ),
        ];
        let mut out = [0u8; 16];
        let mut reader = GatherReader::new(&[3, 4], 1, chunks);
        assert_eq!(reader.read(&mut out).unwrap(), 12, "six runs in one read");
        assert_eq!(out[..12], (0..12).collect::<Vec<u8>>());
        assert_eq!(reader.read(&mut out).unwrap(), 0);

        let rows = vec![
            (
                boxed(&[1, 0], &[2, 4]),
                ChunkSource {
                    file: &file,
                    offset: 4,
                    crc32: None,
                },
            ),
            (
                boxed(&[0, 0], &[1, 4]),
                ChunkSource {
                    file: &file,
                    offset: 0,
                    crc32: None,
                },
            ),
        ];
        let mut out = Vec::new();
        GatherReader::new(&[3, 4], 1, rows)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, vec![0, 4, 8, 1, 2, 3, 5, 6, 7, 9, 10, 11]);
    }

    /// Rows of 4 bytes or more come back as file ranges; a column chunk's 1-byte runs are
    /// read into the buffer, stopping before the next long run; together, the tensor in order.
    #[test]
    fn long_runs_are_file_ranges_and_short_ones_buffered() {
        let mut file = tempfile::tempfile().unwrap();
        // A 4×4 tensor 0..16: rows 0–1 one chunk at 0, rows 2–3 split into a 2×1 left column
        // (8, 12) at 8 and a 2×3 right block (9 10 11 / 13 14 15) at 10.
        file.write_all(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 9, 10, 11, 13, 14, 15])
            .unwrap();
        let source = |offset| ChunkSource {
            file: &file,
            offset,
            crc32: None,
        };
        let chunks = vec![
            (boxed(&[2, 1], &[2, 3]), source(10)),
            (boxed(&[0, 0], &[2, 4]), source(0)),
            (boxed(&[2, 0], &[2, 1]), source(8)),
        ];
        let mut reader = GatherReader::new(&[4, 4], 1, chunks);
        let mut out = Vec::new();
        let mut buf = [0u8; 16];
        loop {
            match reader.step(&mut buf, 4).unwrap() {
                Step::End => break,
                Step::Direct {
                    file, offset, len, ..
                } => {
                    assert_eq!((offset, len), (0, 8), "rows 0–1 are one run");
                    let mut run = vec![0; len as usize];
                    file.read_exact_at(&mut run, offset).unwrap();
                    out.extend(run);
                }
                Step::Buffered(n) => {
                    assert_eq!(n, 8, "rows 2–3: four runs of 1 and 3 bytes in one step");
                    out.extend(&buf[..n]);
                }
            }
        }
        assert_eq!(out, (0..16).collect::<Vec<u8>>());
    }

    /// A chunk's CRC-32 goes with a direct run only when the run is the whole chunk; the
    /// placement is that of the largest one-run chunk, relative to the tensor's start.
    #[test]
    fn direct_runs_carry_their_chunks_crc_and_placement() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[0u8; 64]).unwrap();
        let source = |offset, crc32| ChunkSource {
            file: &file,
            offset,
            crc32,
        };
        // 4×4 u8: rows 0–2 one chunk at 40 (one run of 12), row 3 in two 1×2 chunks.
        let chunks = vec![
            (boxed(&[3, 0], &[1, 2]), source(0, Some(1))),
            (boxed(&[0, 0], &[3, 4]), source(40, Some(7))),
            (boxed(&[3, 2], &[1, 2]), source(2, Some(9))),
        ];
        let mut reader = GatherReader::new(&[4, 4], 1, chunks.clone());
        assert_eq!(reader.placement(4), Some(40));
        assert_eq!(reader.placement(13), None);
        let mut buf = [0u8; 16];
        let mut crcs = Vec::new();
        loop {
            match reader.step(&mut buf, 2).unwrap() {
                Step::End => break,
                Step::Direct { len, crc32, .. } => crcs.push((len, crc32)),
                Step::Buffered(n) => panic!("{n} bytes buffered"),
            }
        }
        assert_eq!(crcs, [(12, Some(7)), (2, Some(1)), (2, Some(9))]);
        // A column chunk's runs are not the whole chunk: no CRC-32 with them.
        let columns = vec![
            (boxed(&[0, 0], &[4, 2]), source(0, Some(3))),
            (boxed(&[0, 2], &[4, 2]), source(8, Some(4))),
        ];
        let mut reader = GatherReader::new(&[4, 4], 1, columns);
        assert_eq!(reader.placement(1), None);
        while let Step::Direct { crc32, .. } = reader.step(&mut buf, 2).unwrap() {
            assert_eq!(crc32, None);
        }
        // The placement wraps modulo 64 KiB when the chunk sits before its tensor offset.
        let rows = vec![
            (boxed(&[0, 0], &[1, 4]), source(0, None)),
            (boxed(&[1, 0], &[3, 4]), source(0, None)),
        ];
        let reader = GatherReader::new(&[4, 4], 1, rows);
        assert_eq!(reader.placement(4), Some(65536 - 4));
    }

    /// Two column chunks of 2 500 one-byte rows: each buffer of a step takes many rows of
    /// both (more than one vectored read holds), and a buffer of an odd size splits a row's
    /// run between two steps; the tensor still comes back in order. A file cut short is an
    /// error, not zeros.
    #[test]
    fn column_rows_are_read_in_vectored_batches() {
        const ROWS: usize = 2500;
        let mut file = tempfile::tempfile().unwrap();
        let value = |row: usize, col: usize| (row * 2 + col) as u8;
        let left: Vec<u8> = (0..ROWS).map(|r| value(r, 0)).collect();
        let right: Vec<u8> = (0..ROWS).flat_map(|r| [value(r, 1), value(r, 2)]).collect();
        file.write_all(&left).unwrap();
        file.write_all(&right).unwrap();
        let source = |offset| ChunkSource {
            file: &file,
            offset,
            crc32: None,
        };
        let chunks = || {
            vec![
                (boxed(&[0, 0], &[ROWS as u64, 1]), source(0)),
                (boxed(&[0, 1], &[ROWS as u64, 2]), source(ROWS as u64)),
            ]
        };
        let expected: Vec<u8> = (0..ROWS)
            .flat_map(|r| [value(r, 0), value(r, 1), value(r, 2)])
            .collect();
        for size in [4096, 3001, 2] {
            let mut reader = GatherReader::new(&[ROWS as u64, 3], 1, chunks());
            let mut buf = vec![0u8; size];
            let mut out: Vec<u8> = Vec::new();
            loop {
                match reader.step(&mut buf, u64::MAX).unwrap() {
                    Step::End => break,
                    Step::Buffered(n) => out.extend(&buf[..n]),
                    Step::Direct { .. } => panic!("no run is direct"),
                }
            }
            assert_eq!(out, expected, "buffer of {size}");
        }
        file.set_len(ROWS as u64 + 10).unwrap();
        let mut reader = GatherReader::new(&[ROWS as u64, 3], 1, chunks());
        let mut buf = vec![0u8; 4096];
        let err = reader.step(&mut buf, u64::MAX).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn scalars_and_gaps() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[7, 0, 0, 0]).unwrap();
        let scalar = vec![(
            boxed(&[], &[]),
            ChunkSource {
                file: &file,
                offset: 0,
                crc32: None,
            },
        )];
        let mut out = Vec::new();
        GatherReader::new(&[], 4, scalar)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, vec![7, 0, 0, 0]);

        let gap = vec![(
            boxed(&[1], &[1]),
            ChunkSource {
                file: &file,
                offset: 0,
                crc32: None,
            },
        )];
        let mut out = Vec::new();
        let err = GatherReader::new(&[2], 1, gap)
            .read_to_end(&mut out)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
