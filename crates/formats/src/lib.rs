//! The formats layer of ckpt: [`torch`] the containers PyTorch saves and the meaning of their
//! object graph (zip, legacy and tar files, DCP and DeepSpeed folders, safetensors), read and
//! written; [`transform`] the pure graph → graph steps a rewrite runs. The importers of
//! users' models (`.pt2`, TorchScript) build on this layer, in their own crate.

#![warn(missing_docs)]

pub mod torch;
pub mod transform;
