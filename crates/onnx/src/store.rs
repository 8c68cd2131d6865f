//! Initializer bytes for one export: held in memory up to a budget, then appended to an
//! unnamed spill file (in the output's folder), so that an export's memory is bounded by the
//! budget plus the largest tensor whatever the model's size. The writer copies them out in
//! the order the graph lists them.
//!
//! A checkpoint's weights need not be held at all: a [`Deferred`] initializer names its
//! tensor in the mapped checkpoint and what to do to it (nothing, BatchNorm folding, a
//! transpose), and the writer computes its bytes when it writes them, or writes the mapped
//! bytes themselves when they are already float32 little endian.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ckpt_formats::torch::read_tensor::MappedTensor;

/// Bytes held in memory before initializers start going to the spill file.
pub const DEFAULT_MEMORY_BUDGET: u64 = 64 << 20;

/// Chunk size when copying spilled bytes out.
const COPY_CHUNK: usize = 1 << 20;

/// Where one initializer's bytes are.
#[derive(Debug, PartialEq)]
pub enum Bytes {
    Memory(Vec<u8>),
    /// `len` bytes at `offset` in the store's spill file.
    Spilled {
        offset: u64,
        len: u64,
    },
    /// Computed from the mapped checkpoint when written.
    Deferred(Deferred),
}

impl Bytes {
    pub fn len(&self) -> u64 {
        match self {
            Bytes::Memory(bytes) => bytes.len() as u64,
            Bytes::Spilled { len, .. } => *len,
            Bytes::Deferred(deferred) => deferred.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The spill file and the memory budget. Invariant: every `Bytes::Spilled` it handed out
/// lies within `0..end` of `spill`.
#[derive(Debug)]
pub struct WeightStore {
    budget: u64,
    held: u64,
    dir: Option<PathBuf>,
    spill: Option<File>,
    end: u64,
}

impl Default for WeightStore {
    fn default() -> Self {
        WeightStore::new(DEFAULT_MEMORY_BUDGET, None)
    }
}

impl WeightStore {
    /// A store holding up to `budget` bytes in memory, spilling the rest to an unnamed file
    /// in `dir` (the system temp folder when `None`).
    pub fn new(budget: u64, dir: Option<&Path>) -> Self {
        WeightStore {
            budget,
            held: 0,
            dir: dir.map(Path::to_path_buf),
            spill: None,
            end: 0,
        }
    }

    /// Keeps `bytes` in memory while the budget allows, else appends them to the spill file.
    pub fn put(&mut self, bytes: Vec<u8>) -> io::Result<Bytes> {
        let len = bytes.len() as u64;
        if self.held.saturating_add(len) <= self.budget {
            self.held += len;
            return Ok(Bytes::Memory(bytes));
        }
        let file = match &mut self.spill {
            Some(file) => file,
            None => {
                let dir = self.dir.clone().unwrap_or_else(std::env::temp_dir);
                self.spill.insert(tempfile::tempfile_in(dir)?)
            }
        };
        file.write_all_at(&bytes, self.end)?;
        let offset = self.end;
        self.end += len;
        Ok(Bytes::Spilled { offset, len })
    }

    /// Writes `bytes` (handed out by this store, or deferred) to `out`.
    pub fn write_to(&self, bytes: &Bytes, out: &mut impl Write) -> io::Result<()> {
        let (offset, len) = match bytes {
            Bytes::Memory(bytes) => return out.write_all(bytes),
            Bytes::Spilled { offset, len } => (*offset, *len),
            Bytes::Deferred(deferred) => {
                let result = match deferred.borrowed() {
                    Some(bytes) => out.write_all(bytes),
                    None => {
                        let mut buffer = Vec::new();
                        deferred.produce(&mut buffer);
                        out.write_all(&buffer)
                    }
                };
                deferred.release();
                return result;
            }
        };
        let file = self
            .spill
            .as_ref()
            .filter(|_| offset.checked_add(len).is_some_and(|end| end <= self.end))
            .ok_or_else(|| io::Error::other("spilled initializer outside the spill file"))?;
        let mut buffer = vec![0u8; COPY_CHUNK.min(len as usize)];
        let mut done = 0u64;
        while done < len {
            let n = COPY_CHUNK.min((len - done) as usize);
            file.read_exact_at(&mut buffer[..n], offset + done)?;
            out.write_all(&buffer[..n])?;
            done += n as u64;
        }
        Ok(())
    }
}

/// What is done to a tensor's float32 values (row-major) to make an initializer's.
#[derive(Clone, Debug, PartialEq)]
pub enum Transform {
    /// Nothing: the values as they are.
    Copy,
    /// Row `r` (along the first axis; the values split into as many equal rows as there are
    /// scales) multiplied by `scale[r]` in f64 and rounded once: BatchNorm folded into the
    /// conv weight before it ([`super::fold`]).
    ScaleRows(Arc<[f64]>),
    /// A `rows × cols` matrix transposed to `cols × rows`, each value multiplied by `scale`
    /// (in f32) when there is one.
    Transpose {
        rows: usize,
        cols: usize,
        scale: Option<f32>,
    },
}

impl Transform {
    /// Whether this transform applies to `numel` values.
    pub fn fits(&self, numel: usize) -> bool {
        match self {
            Transform::Copy => true,
            Transform::ScaleRows(scale) => !scale.is_empty() && numel.is_multiple_of(scale.len()),
            Transform::Transpose { rows, cols, .. } => rows.checked_mul(*cols) == Some(numel),
        }
    }

    /// Applies the transform to `src` (float32 little-endian values it [`fits`](Self::fits))
    /// and writes the result to `out` (resized to the same length).
    pub fn apply(&self, src: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.resize(src.len(), 0);
        let load = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        match self {
            Transform::Copy => out.copy_from_slice(src),
            Transform::ScaleRows(scale) => {
                let row = src.len() / scale.len();
                for ((from, to), &s) in src.chunks(row).zip(out.chunks_mut(row)).zip(scale.iter()) {
                    for (w, o) in from.chunks_exact(4).zip(to.chunks_exact_mut(4)) {
                        o.copy_from_slice(&((f64::from(load(w)) * s) as f32).to_le_bytes());
                    }
                }
            }
            &Transform::Transpose { rows, cols, scale } => {
                // In tiles, so that both sides stay in cache for large matrices; within a
                // tile the writes are sequential and the reads strided (a strided read costs
                // less than a strided write).
                const TILE: usize = 32;
                for c0 in (0..cols).step_by(TILE) {
                    for r0 in (0..rows).step_by(TILE) {
                        for c in c0..(c0 + TILE).min(cols) {
                            let row_end = (r0 + TILE).min(rows);
                            let to = &mut out[(c * rows + r0) * 4..(c * rows + row_end) * 4];
                            for (r, o) in (r0..row_end).zip(to.chunks_exact_mut(4)) {
                                let from = (r * cols + c) * 4;
                                let v = load(&src[from..from + 4]);
                                let v = scale.map_or(v, |s| v * s);
                                o.copy_from_slice(&v.to_le_bytes());
                            }
                        }
                    }
                }
            }
        }
    }
}

/// An initializer's bytes, computed from a tensor of the mapped checkpoint when they are
/// written: float32 little endian, row-major, `transform` applied.
#[derive(Clone, Debug)]
pub struct Deferred {
    source: MappedTensor,
    transform: Transform,
}

impl PartialEq for Deferred {
    fn eq(&self, other: &Deferred) -> bool {
        self.source.same(&other.source) && self.transform == other.transform
    }
}

impl Deferred {
    /// `transform` of `source`'s values; `None` when it does not apply to that many values.
    pub fn new(source: MappedTensor, transform: Transform) -> Option<Deferred> {
        transform
            .fits(source.numel())
            .then_some(Deferred { source, transform })
    }

    /// Bytes it makes: four per value.
    pub fn len(&self) -> u64 {
        self.source.numel() as u64 * 4
    }

    /// The bytes themselves, when they are the checkpoint's as they are (no transform, and
    /// stored as float32 little endian, row-major): write them without a copy.
    pub fn borrowed(&self) -> Option<&[u8]> {
        match self.transform {
            Transform::Copy => self.source.f32_le(),
            _ => None,
        }
    }

    /// Computes the bytes into `out` (its old contents dropped, its allocation reused).
    pub fn produce(&self, out: &mut Vec<u8>) {
        match self.source.f32_le() {
            Some(src) => self.transform.apply(src, out),
            None => {
                let mut decoded = Vec::new();
                self.source.decode_le(&mut decoded);
                self.transform.apply(&decoded, out);
            }
        }
    }

    /// Unmaps the source's pages from this process once it has been read
    /// ([`MappedTensor::release`]).
    pub fn release(&self) {
        self.source.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(store: &WeightStore, b: &Bytes) -> Vec<u8> {
        let mut out = Vec::new();
        store.write_to(b, &mut out).unwrap();
        out
    }

    #[test]
    fn keeps_bytes_in_memory_until_the_budget_then_spills() {
        let mut store = WeightStore::new(10, None);
        let a = store.put(vec![1; 6]).unwrap();
        let b = store.put(vec![2; 6]).unwrap();
        let c = store.put(vec![3; 3]).unwrap();
        assert!(matches!(a, Bytes::Memory(_)));
        assert_eq!(b, Bytes::Spilled { offset: 0, len: 6 });
        // Still fits the budget after the spilled one: memory again.
        assert!(matches!(c, Bytes::Memory(_)));
        assert_eq!(bytes_of(&store, &a), vec![1; 6]);
        assert_eq!(bytes_of(&store, &b), vec![2; 6]);
        assert_eq!(bytes_of(&store, &c), vec![3; 3]);
    }

    #[test]
    fn spilled_bytes_larger_than_a_copy_chunk_come_back_whole() {
        let mut store = WeightStore::new(0, None);
        let big: Vec<u8> = (0..COPY_CHUNK * 2 + 17).map(|i| i as u8).collect();
        let first = store.put(vec![9; 5]).unwrap();
        let second = store.put(big.clone()).unwrap();
        assert_eq!(bytes_of(&store, &first), vec![9; 5]);
        assert_eq!(bytes_of(&store, &second), big);
    }

    #[test]
    fn transforms_scale_rows_and_transpose() {
        let le = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let mut out = Vec::new();
        let src = le(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        Transform::ScaleRows(Arc::from([2.0, 0.5])).apply(&src, &mut out);
        assert_eq!(out, le(&[2.0, 4.0, 6.0, 2.0, 2.5, 3.0]));
        let transpose = |scale| Transform::Transpose {
            rows: 2,
            cols: 3,
            scale,
        };
        transpose(None).apply(&src, &mut out);
        assert_eq!(out, le(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]));
        transpose(Some(0.5)).apply(&src, &mut out);
        assert_eq!(out, le(&[0.5, 2.0, 1.0, 2.5, 1.5, 3.0]));
        // A transpose larger than a tile.
        let (rows, cols) = (37, 70);
        let values: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        Transform::Transpose {
            rows,
            cols,
            scale: None,
        }
        .apply(&le(&values), &mut out);
        let expected: Vec<f32> = (0..cols)
            .flat_map(|c| (0..rows).map(move |r| (r * cols + c) as f32))
            .collect();
        assert_eq!(out, le(&expected));
        assert!(!Transform::ScaleRows(Arc::from([1.0; 4])).fits(6));
        assert!(!transpose(None).fits(5));
    }

    #[test]
    fn a_range_outside_the_spill_file_is_an_error() {
        let store = WeightStore::new(0, None);
        let bogus = Bytes::Spilled { offset: 0, len: 4 };
        assert!(store.write_to(&bogus, &mut Vec::new()).is_err());
    }
}
