//! Our own pickle engine: a reader that never executes anything, and a protocol 2 writer.
//!
//! Why not `serde_pickle`: it maps pickles onto serde data and cannot represent what torch
//! checkpoints are made of: persistent ids (`BINPERSID`, how every storage is referenced),
//! `GLOBAL`/`REDUCE`/`BUILD` of arbitrary classes (rebuild functions, `OrderedDict` with its
//! `_metadata` state, user classes), and memo sharing (two tensors on one storage). It also
//! cannot write back what it did not understand. Here globals are data ([`Global`]), calls are
//! nodes ([`Object`]), and anything unknown survives a rewrite unchanged.
//!
//! Data flows [`read()`] → [`Graph`] → (transforms) → [`write()`].

#![warn(missing_docs)]

mod number;
mod opcode;
pub mod read;
pub mod value;
pub mod write;

pub use read::{read, read_lenient, read_with_limits, Limits, Partial, Pickle};
pub use value::{Constructor, Global, Graph, NodeId, Object, Value};
pub use write::write;

/// How deep any walk over a graph may go. Real checkpoints nest a few dozen levels at most
/// (a whole pickled module adds about four per submodule level); the bound keeps every
/// recursive walk well inside a default 2 MiB thread stack, even in debug builds.
pub const MAX_DEPTH: usize = 256;

/// Why a pickle could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PickleError {
    #[error("pickle is truncated: {opcode} at byte {offset} runs past the end")]
    /// An opcode's operand runs past the end of the input.
    Truncated {
        /// Byte offset of the opcode.
        offset: usize,
        /// The opcode's name.
        opcode: &'static str,
    },
    #[error("bad pickle opcode 0x{opcode:02x} at byte {offset}")]
    /// A byte that is no opcode of protocols 0–5.
    UnknownOpcode {
        /// The byte.
        opcode: u8,
        /// Its offset.
        offset: usize,
    },
    #[error("malformed pickle: {opcode} at byte {offset}: {problem}")]
    /// An opcode that cannot apply to the stack or memo it finds.
    Malformed {
        /// Byte offset of the opcode.
        offset: usize,
        /// The opcode's name.
        opcode: &'static str,
        /// What is wrong.
        problem: String,
    },
    #[error("unsupported pickle: {opcode} at byte {offset}: {why}")]
    /// A valid opcode this reader deliberately does not support.
    Unsupported {
        /// Byte offset of the opcode.
        offset: usize,
        /// The opcode's name.
        opcode: &'static str,
        /// Why it is not supported.
        why: &'static str,
    },
    #[error("ambiguous pickle (an evasion technique): {opcode} at byte {offset}: {why}")]
    /// A construction CPython's unpickler (the one `torch.load` runs) accepts but no pickler
    /// writes, where a reader could see other values or names than torch, or where torch
    /// would act on something the pickle did not build (monkey-patching a class or module).
    /// A scanner must call the pickle dangerous; a loader refuses it.
    Ambiguous {
        /// Byte offset of the opcode.
        offset: usize,
        /// The opcode's name.
        opcode: &'static str,
        /// What CPython would do, and why no real pickle looks like this.
        why: String,
    },
    #[error("pickle exceeds the limit of {limit} {what} (at byte {offset})")]
    /// A [`Limits`] bound was reached; nothing past it was allocated.
    Limit {
        /// Byte offset where the limit was reached.
        offset: usize,
        /// What was counted.
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    #[error("object graph nests deeper than {limit} levels")]
    /// A walk over the graph went deeper than the depth bound.
    TooDeep {
        /// The bound.
        limit: usize,
    },
    #[error(
        "object graph has a cycle through an immutable value (tuple or constructor arguments)"
    )]
    /// An immutable value contains itself, which no real pickler can produce.
    Cycle,
}
