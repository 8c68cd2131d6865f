//! A safetensors output written, and hashed, in one pass that also hashes the input.
//!
//! The manifest needs SHA-256 of every input (the whole file) and of every output. Done
//! separately, that is three passes over the bytes: one to hash the input, one to copy the
//! tensors, one to hash the output. Here the writer copies each tensor in 1 MiB pieces
//! read from the input, hashes each piece as it writes it, and reads the input from its start
//! in pieces of the same size alongside, hashing the two streams together
//! ([`update_pair`]). The input is hashed to its end, optimizer state and pickle included,
//! although the output needs only part of it: the manifest's input hash is the whole file's
//! (what `sha256sum` gives, what resume compares, what `{sha8}` names), so the bytes the step
//! does not use are read once, for the hash, and nothing is read twice except the tensors the
//! output holds (once as part of the input, once to be written, both from the page cache).
//!
//! The input usually holds more than the output (optimizer state, buffers left out), so the
//! writer runs out of output bytes to pair the input with. What is left of the input is an
//! [`InputRest`], which the caller finishes with another input's rest ([`finish_pair`]) so that
//! those bytes are hashed two streams at a time as well, or alone ([`InputRest::finish`]).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::sha256::{update_pair, Sha256};
use crate::safetensors::{Piece, Prepared, SafetensorsError};
use ckpt_formats::torch::contiguous::copy_contiguous;
use ckpt_formats::torch::Checkpoint;

/// Bytes read and written per step.
const PIECE: usize = 1 << 20;

/// The input being hashed alongside an output.
pub struct InputHash<'a> {
    /// The input file, read from its start.
    pub file: File,
    /// Called with the size of each piece of the input hashed.
    pub on_read: &'a dyn Fn(u64),
}

/// What [`write`] hashed.
pub struct Hashed {
    /// SHA-256 (hex) and size of the output.
    pub output: (String, u64),
    /// The input, hashed from its start as far as the output went, when it was given.
    pub input: Option<InputRest>,
}

/// An input file hashed from its start up to `pos`; the rest is still to be read and hashed.
/// Its size is the one it had when hashing started: a file that is not that size when it is
/// finished fails, as it changed while it was read.
pub struct InputRest {
    file: File,
    size: u64,
    pos: u64,
    hash: Sha256,
}

impl InputRest {
    /// `file`, nothing of it hashed yet.
    pub fn start(file: File) -> io::Result<InputRest> {
        Ok(InputRest {
            size: file.metadata()?.len(),
            file,
            pos: 0,
            hash: Sha256::new(),
        })
    }

    /// Hashes the rest alone; returns the whole file's SHA-256 (hex) and size. `on_read` is
    /// called with the size of each piece read.
    pub fn finish(mut self, on_read: &dyn Fn(u64)) -> io::Result<(String, u64)> {
        let (mut buf, other) = BUFFERS.with(|b| b.take());
        buf.resize(PIECE, 0);
        let hashed = loop {
            match self.next_piece(&mut buf, on_read) {
                Ok([]) => break self.digest(),
                Ok(piece) => self.hash.update(piece),
                Err(e) => break Err(e),
            }
        };
        BUFFERS.with(|b| b.replace((buf, other)));
        hashed
    }

    /// Reads the next piece of the rest into `buf` (empty at the end).
    fn next_piece<'b>(&mut self, buf: &'b mut [u8], on_read: &dyn Fn(u64)) -> io::Result<&'b [u8]> {
        let n = (self.size - self.pos).min(buf.len() as u64) as usize;
        let piece = &mut buf[..n];
        read_at(&self.file, piece, self.pos)?;
        self.pos += n as u64;
        on_read(n as u64);
        Ok(piece)
    }

    /// The digest, once everything was hashed.
    fn digest(self) -> io::Result<(String, u64)> {
        if self.file.metadata()?.len() != self.size {
            return Err(changed_size());
        }
        Ok((self.hash.finish_hex(), self.size))
    }
}

/// Finishes two inputs' rests together, the two streams side by side ([`update_pair`]);
/// returns each input's SHA-256 (hex) and size, as [`InputRest::finish`] would. A read that
/// fails fails its own input only.
pub fn finish_pair(
    mut a: InputRest,
    on_read_a: &dyn Fn(u64),
    mut b: InputRest,
    on_read_b: &dyn Fn(u64),
) -> [io::Result<(String, u64)>; 2] {
    let (mut buf_a, mut buf_b) = BUFFERS.with(|b| b.take());
    buf_a.resize(PIECE, 0);
    buf_b.resize(PIECE, 0);
    let (mut failed_a, mut failed_b) = (None, None);
    loop {
        let piece_a = next_or_fail(&mut a, &mut buf_a, on_read_a, &mut failed_a);
        let piece_b = next_or_fail(&mut b, &mut buf_b, on_read_b, &mut failed_b);
        if piece_a.is_empty() && piece_b.is_empty() {
            break;
        }
        update_pair(&mut a.hash, piece_a, &mut b.hash, piece_b);
    }
    BUFFERS.with(|b| b.replace((buf_a, buf_b)));
    let result = |rest: InputRest, failed: Option<io::Error>| match failed {
        Some(e) => Err(e),
        None => rest.digest(),
    };
    [result(a, failed_a), result(b, failed_b)]
}

/// The next piece of `rest`, or nothing once it is finished or `failed` holds its error.
fn next_or_fail<'b>(
    rest: &mut InputRest,
    buf: &'b mut [u8],
    on_read: &dyn Fn(u64),
    failed: &mut Option<io::Error>,
) -> &'b [u8] {
    if failed.is_some() {
        return &[];
    }
    match rest.next_piece(buf, on_read) {
        Ok(piece) => piece,
        Err(e) => {
            *failed = Some(e);
            &[]
        }
    }
}

/// Writes `prepared` (planned from `ckpt`) to a new file at `path`, hashing what it writes,
/// and `input` (when given) alongside, as far as the output goes. The file is created, never
/// replaced: `path` is in a staging folder the caller owns and removes on error; the caller
/// fsyncs it before renaming it into place.
pub fn write(
    ckpt: &mut Checkpoint,
    prepared: &Prepared,
    path: &Path,
    input: Option<InputHash<'_>>,
) -> Result<Hashed, SafetensorsError> {
    let mut input = match input {
        Some(InputHash { file, on_read }) => Some((InputRest::start(file)?, on_read)),
        None => None,
    };
    let mut out = File::options().write(true).create_new(true).open(path)?;
    let source = ckpt.source_file().try_clone()?;
    let (mut in_buf, mut buf) = BUFFERS.with(|b| b.take());
    in_buf.resize(PIECE, 0);
    buf.resize(PIECE, 0);
    let written = copy(
        ckpt,
        prepared,
        &mut out,
        &source,
        input.as_mut(),
        &mut in_buf,
        &mut buf,
    );
    // Kept for this thread's next output: a fresh megabyte per file costs page faults and
    // zeroing, several percent of a run over many small files.
    BUFFERS.with(|b| b.replace((in_buf, buf)));
    Ok(Hashed {
        output: written?,
        input: input.map(|(rest, _)| rest),
    })
}

thread_local! {
    /// The two piece buffers of [`write`] and of finishing rests, reused by the thread's next
    /// call.
    static BUFFERS: std::cell::Cell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// The body of [`write`], with its buffers; returns the output's SHA-256 (hex) and size.
fn copy(
    ckpt: &mut Checkpoint,
    prepared: &Prepared,
    out: &mut File,
    source: &File,
    mut input: Option<&mut (InputRest, &dyn Fn(u64))>,
    in_buf: &mut [u8],
    buf: &mut [u8],
) -> Result<(String, u64), SafetensorsError> {
    let mut out_hash = Sha256::new();
    // Hashes `piece` of the output together with as much of the input.
    let mut step = |out_hash: &mut Sha256, piece: &[u8]| -> io::Result<()> {
        match input.as_mut() {
            Some((rest, on_read)) => {
                let next = rest.next_piece(&mut in_buf[..piece.len()], *on_read)?;
                update_pair(&mut rest.hash, next, out_hash, piece);
            }
            None => out_hash.update(piece),
        }
        Ok(())
    };

    step(&mut out_hash, &prepared.head)?;
    out.write_all(&prepared.head)?;
    for piece in &prepared.pieces {
        match piece {
            Piece::InFile { offset, len } => {
                let mut done = 0u64;
                while done < *len {
                    let n = (*len - done).min(PIECE as u64) as usize;
                    source.read_exact_at(&mut buf[..n], offset + done)?;
                    step(&mut out_hash, &buf[..n])?;
                    out.write_all(&buf[..n])?;
                    done += n as u64;
                }
            }
            Piece::Tensor(tensor) => {
                let mut sink = HashingWriter {
                    out: &mut *out,
                    hash: &mut out_hash,
                };
                copy_contiguous(ckpt, tensor, &mut sink)?;
            }
        }
    }
    let size = out_hash.len();
    Ok((out_hash.finish_hex(), size))
}

/// Fills `buf` from `file` at `at`; a file that ends first changed size while it was read.
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
    file.read_exact_at(buf, at).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            changed_size()
        } else {
            e
        }
    })
}

fn changed_size() -> io::Error {
    io::Error::other("the input changed size while it was read")
}

/// Writes to `out` and hashes what it writes.
struct HashingWriter<'a> {
    out: &'a mut File,
    hash: &'a mut Sha256,
}

impl Write for HashingWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = self.out.write(data)?;
        self.hash.update(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    /// A file of `len` distinct bytes, and its SHA-256 (hex).
    fn file_of(dir: &Path, name: &str, len: usize, seed: u8) -> (File, String) {
        let bytes: Vec<u8> = (0..len)
            .map(|i| (i as u8).wrapping_mul(seed) ^ (i >> 9) as u8)
            .collect();
        let path = dir.join(name);
        std::fs::write(&path, &bytes).expect("write");
        let hex = super::super::manifest::hex(&sha2::Sha256::digest(&bytes));
        (File::open(&path).expect("open"), hex)
    }

    /// `file` hashed from its start to `pos` (as `write` leaves it).
    fn rest_at(file: File, pos: usize) -> InputRest {
        let mut rest = InputRest::start(file).expect("start");
        let mut buf = vec![0u8; pos];
        let piece = rest.next_piece(&mut buf, &|_| {}).expect("read");
        rest.hash.update(piece);
        rest
    }

    #[test]
    fn rests_finished_together_or_alone_give_the_whole_files_digests() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Sizes and positions out of block and piece step with each other.
        for (len_a, pos_a, len_b, pos_b) in [
            (3 * PIECE + 17, 1000, PIECE / 2, 0),
            (100, 100, 2 * PIECE + 63, 65),
            (0, 0, 5, 2),
        ] {
            let (fa, ha) = file_of(dir.path(), "a", len_a, 7);
            let (fb, hb) = file_of(dir.path(), "b", len_b, 13);
            let read = std::cell::Cell::new(0u64);
            let [a, b] = finish_pair(
                rest_at(fa.try_clone().expect("dup"), pos_a),
                &|n| read.set(read.get() + n),
                rest_at(fb, pos_b),
                &|_| {},
            );
            assert_eq!(a.expect("a"), (ha.clone(), len_a as u64));
            assert_eq!(b.expect("b"), (hb, len_b as u64));
            assert_eq!(read.get(), (len_a - pos_a) as u64, "the rest is read once");
            let alone = rest_at(fa, pos_a).finish(&|_| {}).expect("alone");
            assert_eq!(alone, (ha, len_a as u64));
        }
    }

    #[test]
    fn an_input_that_shrinks_before_its_rest_is_hashed_fails_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (fa, _) = file_of(dir.path(), "a", 2 * PIECE, 3);
        let (fb, hb) = file_of(dir.path(), "b", PIECE + 9, 5);
        let (a, b) = (rest_at(fa, 10), rest_at(fb, 10));
        File::options()
            .write(true)
            .open(dir.path().join("a"))
            .and_then(|f| f.set_len(PIECE as u64))
            .expect("truncate");
        let [a, b] = finish_pair(a, &|_| {}, b, &|_| {});
        let error = a.expect_err("a shrank").to_string();
        assert!(error.contains("changed size"), "{error}");
        assert_eq!(b.expect("b"), (hb, (PIECE + 9) as u64));
    }
}
