//! Initializer bytes for one export: held in memory up to a budget, then appended to an
//! unnamed spill file (in the output's folder), so that an export's memory is bounded by the
//! budget plus the largest tensor whatever the model's size. The writer copies them out in
//! the order the graph lists them.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes held in memory before initializers start going to the spill file.
pub const DEFAULT_MEMORY_BUDGET: u64 = 64 << 20;

/// Chunk size when copying spilled bytes out.
const COPY_CHUNK: usize = 1 << 20;

/// Where one initializer's bytes are.
#[derive(Debug, PartialEq, Eq)]
pub enum Bytes {
    Memory(Vec<u8>),
    /// `len` bytes at `offset` in the store's spill file.
    Spilled {
        offset: u64,
        len: u64,
    },
}

impl Bytes {
    pub fn len(&self) -> u64 {
        match self {
            Bytes::Memory(bytes) => bytes.len() as u64,
            Bytes::Spilled { len, .. } => *len,
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

    /// Writes `bytes` (handed out by this store) to `out`.
    pub fn write_to(&self, bytes: &Bytes, out: &mut impl Write) -> io::Result<()> {
        let (offset, len) = match bytes {
            Bytes::Memory(bytes) => return out.write_all(bytes),
            Bytes::Spilled { offset, len } => (*offset, *len),
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
    fn a_range_outside_the_spill_file_is_an_error() {
        let store = WeightStore::new(0, None);
        let bogus = Bytes::Spilled { offset: 0, len: 4 };
        assert!(store.write_to(&bogus, &mut Vec::new()).is_err());
    }
}
