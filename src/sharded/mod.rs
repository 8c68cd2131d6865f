//! Between sharded training checkpoints and single files: [`consolidate()`] writes one state
//! dict from a `torch.distributed.checkpoint` (DCP) folder, [`deepspeed::consolidate`] the
//! fp32 state dict of a DeepSpeed ZeRO folder, both through one writer (`.pth` or
//! safetensors) that streams each tensor's chunks into place with memory for one buffer;
//! [`shard()`] writes one checkpoint as a DCP folder for `N` ranks.
//!
//! These are pipelines over the readers and writers of the layouts in
//! [`ckpt_formats::torch::dcp`] (metadata, items, chunk tiling and gathering); every output is
//! written atomically (a file, or a folder renamed into place).

pub mod consolidate;
pub mod deepspeed;
pub mod shard;
pub mod source;
mod split;

pub use consolidate::{consolidate, OutputKind, Selection, Summary};
pub use shard::{shard, Sharded};
pub use source::Input;
