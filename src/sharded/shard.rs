//! One checkpoint written as a DCP folder, laid out as FSDP2 (`fully_shard`) on `N` ranks
//! saves it: every tensor with rows split along dim 0 in `torch.chunk` pieces (`split`),
//! rank `r`'s pieces in `__<r>_0.distcp`; 0-d and empty tensors and every non-tensor value
//! stored once, by rank 0. Entries are the input flattened as DCP flattens a state dict
//! ([`super::source`]), so `dcp.load` into the same nesting finds them, and `ckpt consolidate` of the
//! folder gives the input's tensors back.
//!
//! Memory: one piece of one chunk at a time (tensor bytes are streamed from the input into
//! each item). Everything that can be refused is checked before the folder is created, and
//! the folder appears complete or not at all (`atomic_dir`).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::atomic_dir::write_folder_atomically;
use ckpt_formats::torch::dcp::item_write::{write_tensor, write_value};
use ckpt_formats::torch::dcp::metadata::{Entry, EntryKind, Metadata, StorageInfo};
use ckpt_formats::torch::dcp::write_metadata::{self, DCP_VERSION};
use ckpt_formats::torch::dcp::{DcpError, METADATA_FILE};

use super::source::{Input, LeafKind};
use super::split::{chunk, MAX_RANKS};

/// What [`shard`] wrote (`shard --json` prints it, fields in this order, after the output).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Sharded {
    /// Ranks (`__<rank>_0.distcp` files) written.
    pub ranks: u64,
    /// Tensors written.
    pub tensors: usize,
    /// Non-tensor values written.
    pub values: usize,
    /// Tensor chunks written, over all ranks.
    pub chunks: usize,
    /// Tensor bytes written (each element once).
    pub tensor_bytes: u64,
}

/// Bytes buffered per rank file.
const BUFFER: usize = 1 << 20;

/// The file rank `rank` writes, as `FileSystemWriter` names it.
pub fn rank_file(rank: u64) -> String {
    format!("__{rank}_0.distcp")
}

/// Writes `input` to the folder `out` as a DCP checkpoint for `ranks` ranks. An existing
/// non-empty folder is replaced only with `replace`, and only if it holds a DCP checkpoint.
pub fn shard(
    input: &mut Input,
    ranks: u64,
    out: &Path,
    replace: bool,
) -> Result<Sharded, DcpError> {
    if !(1..=MAX_RANKS).contains(&ranks) {
        return Err(DcpError::Request {
            what: format!("--ranks {ranks}: give a number of ranks from 1 to {MAX_RANKS}"),
        });
    }
    let leaves = input.leaves()?;
    if leaves.is_empty() {
        return Err(DcpError::Input {
            what: "the checkpoint holds no entries to shard".into(),
        });
    }
    // Values are pickled before the folder is created, so one that cannot be is refused first.
    let mut values = HashMap::new();
    for leaf in &leaves {
        if let LeafKind::Value(node) = &leaf.kind {
            let pickle = input.value_pickle(*node).map_err(|e| e.about(&leaf.fqn))?;
            values.insert(leaf.fqn.clone(), pickle);
        }
    }
    let mut summary = Sharded {
        ranks,
        values: values.len(),
        ..Sharded::default()
    };
    write_folder_atomically(out, replace, |dir| -> Result<(), DcpError> {
        let mut storage = HashMap::new();
        for rank in 0..ranks {
            let name = rank_file(rank);
            let file = File::create(dir.join(&name))?;
            let mut writer = BufWriter::with_capacity(BUFFER, &file);
            let mut at = 0u64;
            for leaf in &leaves {
                let (key, length) = match &leaf.kind {
                    LeafKind::Tensor(t) => {
                        let Some(piece) = chunk(&t.size, rank, ranks) else {
                            continue;
                        };
                        let start = piece.offsets.first().copied().unwrap_or(0);
                        let rows = piece.sizes.first().copied().unwrap_or(1);
                        let length = input.rows(t, start, rows, |bytes, len| {
                            summary.tensor_bytes += len;
                            write_tensor(&mut writer, t.dtype, &piece.sizes, bytes, len, &leaf.fqn)
                        })?;
                        summary.chunks += 1;
                        ((leaf.fqn.clone(), Some(piece.offsets)), length)
                    }
                    LeafKind::Value(_) if rank == 0 => {
                        let pickle = &values[&leaf.fqn];
                        ((leaf.fqn.clone(), None), write_value(&mut writer, pickle)?)
                    }
                    LeafKind::Value(_) => continue,
                };
                let info = StorageInfo {
                    relative_path: name.clone(),
                    offset: at,
                    length,
                    transforms: Vec::new(),
                };
                storage.insert(key, info);
                at += length;
            }
            writer.flush()?;
            drop(writer);
            file.sync_all()?;
        }
        let entries = leaves
            .iter()
            .map(|leaf| Entry {
                fqn: leaf.fqn.clone(),
                path: leaf.path.clone(),
                kind: match &leaf.kind {
                    LeafKind::Tensor(t) => EntryKind::Tensor {
                        dtype: t.dtype,
                        size: t.size.clone(),
                        chunks: (0..ranks)
                            .filter_map(|r| chunk(&t.size, r, ranks))
                            .collect(),
                    },
                    LeafKind::Value(_) => EntryKind::Bytes,
                },
            })
            .collect();
        let metadata = Metadata {
            entries,
            storage,
            version: Some(DCP_VERSION.into()),
        };
        let bytes = write_metadata::write(&metadata)?;
        let file = File::create(dir.join(METADATA_FILE))?;
        (&file).write_all(&bytes)?;
        file.sync_all()?;
        Ok(())
    })?;
    summary.tensors = leaves
        .iter()
        .filter(|l| matches!(l.kind, LeafKind::Tensor(_)))
        .count();
    Ok(summary)
}
