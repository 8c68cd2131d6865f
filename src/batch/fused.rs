//! A safetensors output written, and hashed, in one pass that also hashes the input.
//!
//! The manifest needs SHA-256 of every input (the whole file) and of every output. Done
//! separately, that is three passes over the bytes: one to hash the input, one to copy the
//! tensors, one to hash the output. Here the writer copies each tensor in 1 MiB pieces
//! read from the input, hashes each piece as it writes it, and reads the input from its start
//! in pieces of the same size alongside, hashing the two streams together
//! ([`update_pair`]). The input is read to its end, optimizer state and pickle included,
//! although the output needs only part of it: the manifest's input hash is the whole file's
//! (what `sha256sum` gives, what resume compares, what `{sha8}` names), so the bytes the step
//! does not use are read once, for the hash, and nothing is read twice except the tensors the
//! output holds (once as part of the input, once to be written, both from the page cache).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::sha256::{update_pair, Sha256};
use crate::safetensors::{Piece, Prepared, SafetensorsError};
use crate::torch::contiguous::copy_contiguous;
use crate::torch::Checkpoint;

/// Bytes read and written per step.
const PIECE: usize = 1 << 20;

/// The input being hashed alongside an output.
pub struct InputHash<'a> {
    /// The input file, read from its start.
    pub file: &'a File,
    /// Its size when the pass started.
    pub size: u64,
    /// Called with the size of each piece of the input hashed.
    pub on_read: &'a dyn Fn(u64),
}

/// What [`write`] hashed.
pub struct Hashed {
    /// SHA-256 (hex) and size of the output.
    pub output: (String, u64),
    /// SHA-256 (hex) and size of the input, when it was hashed here.
    pub input: Option<(String, u64)>,
}

/// Writes `prepared` (planned from `ckpt`) to a new file at `path`, hashing what it writes,
/// and `input` (when given) in the same pass. The file is created, never replaced: `path` is
/// in a staging folder the caller owns and removes on error; the caller fsyncs it before
/// renaming it into place.
pub fn write(
    ckpt: &mut Checkpoint,
    prepared: &Prepared,
    path: &Path,
    mut input: Option<InputHash<'_>>,
) -> Result<Hashed, SafetensorsError> {
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
        &mut input,
        &mut in_buf,
        &mut buf,
    );
    // Kept for this thread's next output: a fresh megabyte per file costs page faults and
    // zeroing, several percent of a run over many small files.
    BUFFERS.with(|b| b.replace((in_buf, buf)));
    written
}

thread_local! {
    /// The two piece buffers of [`write`], reused by the thread's next call.
    static BUFFERS: std::cell::Cell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// The body of [`write`], with its buffers.
fn copy(
    ckpt: &mut Checkpoint,
    prepared: &Prepared,
    out: &mut File,
    source: &File,
    input: &mut Option<InputHash<'_>>,
    in_buf: &mut [u8],
    buf: &mut [u8],
) -> Result<Hashed, SafetensorsError> {
    let mut out_hash = Sha256::new();
    let mut in_hash = Sha256::new();
    let mut in_pos = 0u64;

    // Hashes the next `want` bytes of the input together with `piece` of the output.
    let mut step = |input: &mut Option<InputHash<'_>>,
                    in_hash: &mut Sha256,
                    in_pos: &mut u64,
                    out_hash: &mut Sha256,
                    piece: &[u8]|
     -> io::Result<()> {
        let Some(inp) = input.as_ref() else {
            out_hash.update(piece);
            return Ok(());
        };
        let n = (inp.size - *in_pos).min(piece.len() as u64) as usize;
        read_input(inp, &mut in_buf[..n], *in_pos)?;
        *in_pos += n as u64;
        (inp.on_read)(n as u64);
        update_pair(in_hash, &in_buf[..n], out_hash, piece);
        Ok(())
    };

    step(
        input,
        &mut in_hash,
        &mut in_pos,
        &mut out_hash,
        &prepared.head,
    )?;
    out.write_all(&prepared.head)?;
    for piece in &prepared.pieces {
        match piece {
            Piece::InFile { offset, len } => {
                let mut done = 0u64;
                while done < *len {
                    let n = (*len - done).min(PIECE as u64) as usize;
                    source.read_exact_at(&mut buf[..n], offset + done)?;
                    step(input, &mut in_hash, &mut in_pos, &mut out_hash, &buf[..n])?;
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
    // The rest of the input: what the output does not hold.
    let input = match input.take() {
        Some(inp) => {
            while in_pos < inp.size {
                let n = (inp.size - in_pos).min(PIECE as u64) as usize;
                read_input(&inp, &mut buf[..n], in_pos)?;
                in_hash.update(&buf[..n]);
                in_pos += n as u64;
                (inp.on_read)(n as u64);
            }
            if inp.file.metadata()?.len() != inp.size {
                return Err(io::Error::other("the input changed size while it was read").into());
            }
            Some((in_hash.finish_hex(), inp.size))
        }
        None => None,
    };
    let size = out_hash.len();
    Ok(Hashed {
        output: (out_hash.finish_hex(), size),
        input,
    })
}

fn read_input(input: &InputHash<'_>, buf: &mut [u8], at: u64) -> io::Result<()> {
    input.file.read_exact_at(buf, at).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            io::Error::other("the input changed size while it was read")
        } else {
            e
        }
    })
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
