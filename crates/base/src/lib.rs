//! The base layer of ckpt: every output is written through [`atomic_file`] (complete or
//! absent), removed on an interrupt by [`interrupt`], and reported to the command's
//! [`progress`] bar. It uses nothing else of ckpt, so every writer above builds on it.

#![warn(missing_docs)]

pub mod atomic_file;
#[cfg(feature = "testing")]
pub mod generated_docs;
pub mod interrupt;
pub mod progress;
