//! PyTorch containers and the meaning of their pickles.
//!
//! [`open`] detects the container (zip, legacy stream, TorchScript), decodes the object pickle
//! into a [`Graph`](ckpt_pickle::Graph) and locates every storage's bytes; [`scan`] finds the
//! tensors in a graph; [`save()`] writes a graph back with the storages copied byte for byte.

#[doc(hidden)]
pub mod allowlist;
pub mod amp;
#[doc(hidden)]
pub mod checkpoint;
#[doc(hidden)]
pub mod contiguous;
#[doc(hidden)]
pub mod copy;
pub mod dcp;
#[doc(hidden)]
pub mod dtype;
pub(crate) mod input;
#[doc(hidden)]
pub mod legacy;
pub(crate) mod location;
#[doc(hidden)]
pub mod pt2_layout;
#[doc(hidden)]
pub mod read_tensor;
pub mod safetensors;
#[doc(hidden)]
pub mod save;
#[doc(hidden)]
pub mod state_dict;
#[doc(hidden)]
pub mod tar;
#[doc(hidden)]
pub mod tensor;
#[doc(hidden)]
pub mod zip_dir;
#[doc(hidden)]
pub mod zip_read;
pub mod zip_write;

pub use checkpoint::{open, open_file, recognise, Checkpoint, Format, ZipMeta};
pub use dtype::DType;
pub use input::open_input;
pub use location::{Location, LocationMap, LocationPattern};
pub use save::{save, OutputFormat, StoragePlan};
pub use tensor::{scan, Rebuild, Scan, StorageKey, StorageRef, TensorRef};

/// Why a checkpoint could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TorchError {
    #[error("not a PyTorch checkpoint (unrecognised first bytes)")]
    /// The file is no format torch saves (zip, legacy, tar, TorchScript, `.pt2`).
    NotACheckpoint,
    #[error("is a safetensors file, not a torch.save checkpoint: it holds tensors and no pickle, so there is nothing to rewrite or scan for code (load it with safetensors.torch.load_file; `ckpt shard` takes it as input)")]
    /// The file is safetensors, which only `shard` reads.
    Safetensors,
    #[error("{}", input::open_reason(source))]
    /// The input could not be opened.
    Open {
        /// Why.
        source: std::io::Error,
    },
    #[error("is a folder, not a checkpoint file{}", if *sharded {
        " (a sharded checkpoint: `ckpt consolidate DIR -o OUT.pth` makes one file of it; `ckpt inspect` and `ckpt scan` read it as it is)"
    } else {
        " (`ckpt scan DIR` scans every checkpoint in a folder)"
    })]
    /// A folder was given where a file is read.
    Folder {
        /// Whether it is a DCP or DeepSpeed checkpoint folder.
        sharded: bool,
    },
    #[error("{what}")]
    /// The file claims a format but breaks it.
    Invalid {
        /// What is wrong, and where.
        what: String,
    },
    #[error("{what} is not supported")]
    /// A valid construct ckpt does not handle.
    Unsupported {
        /// What.
        what: String,
    },
    #[error("object graph nests too deeply")]
    /// A walk over the object graph passed its depth bound.
    TooDeep,
    #[error("{what}")]
    /// The output could not be written.
    Output {
        /// Why.
        what: String,
    },
    #[error(transparent)]
    /// A pickle in the file could not be read.
    Pickle(#[from] ckpt_pickle::PickleError),
    #[error(transparent)]
    /// The zip container is malformed or refused.
    Zip(#[from] zip_read::ZipError),
    #[error("I/O error: {0}")]
    /// Reading or writing failed.
    Io(#[from] std::io::Error),
}
