//! A ZeRO folder's fp32 state dict written as a torch zip (`.pth`) or safetensors, through the
//! DCP consolidation writer: each tensor is gathered from its pieces (1-D ranges of flat
//! partitions: chunks of the tensor viewed 1-D) with memory for one buffer.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use ckpt_formats::torch::read_tensor::{decode, ByteOrder};
use ckpt_formats::torch::DType;

use ckpt_formats::torch::dcp::deepspeed::layout::{self, Piece, Tensor};
use ckpt_formats::torch::dcp::deepspeed::Folder;
use ckpt_formats::torch::dcp::metadata::{ChunkBox, PathKey};
use ckpt_formats::torch::dcp::DcpError;

use super::consolidate::{write, ChunkPlace, OutputKind, Selection, Summary, TensorPlan};

/// Elements converted per step when a buffer is widened to float32.
const CONVERT_STEP: u64 = 1 << 16;

/// Writes the consolidated state dict of `folder` to `out` (atomically; nothing is written
/// when any check fails). `selection.model_only` changes nothing (the output is the model's
/// state dict already); `selection.extract` keeps the keys under `PREFIX.`, without it.
pub fn consolidate(
    folder: &Folder,
    selection: &Selection,
    kind: OutputKind,
    out: &Path,
) -> Result<Summary, DcpError> {
    let layout = layout::read(folder)?;
    let mut summary = Summary::default();
    let mut files = HashMap::new();
    for (name, ckpt) in folder.model.iter().chain(&folder.optim) {
        files.insert(name.clone(), ckpt.source_file().try_clone()?);
    }
    let mut plans = Vec::new();
    for tensor in &layout.tensors {
        // The names the selection keeps, the tensor's own first: when only tied names are
        // under the extracted prefix, the first of them is stored with the tensor's bytes.
        let mut kept = Vec::new();
        for name in std::iter::once(&tensor.name).chain(&tensor.aliases) {
            match selected(name, selection) {
                Some(key) => kept.push(key),
                None => summary.dropped.push(name.clone()),
            }
        }
        let mut kept = kept.into_iter();
        let Some(name) = kept.next() else {
            continue;
        };
        let aliases: Vec<Vec<PathKey>> = kept.map(|alias| vec![PathKey::Key(alias)]).collect();
        let pieces = match tensor.stored {
            Some(from) => {
                let spool = widen(tensor, from, &files)?;
                let spooled = format!("{} as float32", tensor.name);
                files.insert(spooled.clone(), spool);
                let len = tensor.pieces.iter().map(|p| p.len).sum();
                vec![Piece {
                    file: spooled,
                    offset: 0,
                    at: 0,
                    len,
                }]
            }
            None => tensor.pieces.clone(),
        };
        summary.chunks += pieces.len();
        plans.push(TensorPlan {
            path: vec![PathKey::Key(name.clone())],
            name,
            dtype: tensor.dtype,
            size: tensor.shape.clone(),
            gather: vec![pieces.iter().map(|p| p.len).sum()],
            chunks: pieces
                .into_iter()
                .map(|p| {
                    let chunk = ChunkBox {
                        offsets: vec![p.at],
                        sizes: vec![p.len],
                    };
                    let place = ChunkPlace {
                        offset: p.offset,
                        crc32: None,
                    };
                    (chunk, p.file, place)
                })
                .collect(),
            aliases,
        });
    }
    if plans.is_empty() {
        let what = match &selection.extract {
            Some(prefix) => format!("--extract {prefix}: no key starts with `{prefix}.`"),
            None => "the checkpoint holds no tensor".into(),
        };
        return Err(DcpError::Request { what });
    }
    summary.tensors = plans.len() + plans.iter().map(|p| p.aliases.len()).sum::<usize>();
    summary.tensor_bytes = write(&plans, &[], &files, kind, out)?;
    Ok(summary)
}

/// The key `name` gets in the output, or `None` when the selection leaves it out.
fn selected(name: &str, selection: &Selection) -> Option<String> {
    match &selection.extract {
        None => Some(name.to_owned()),
        Some(prefix) => name
            .strip_prefix(prefix.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .filter(|rest| !rest.is_empty())
            .map(str::to_owned),
    }
}

/// A buffer stored as `from` (float16, bfloat16 or float64), widened to float32 into an
/// anonymous temporary file, [`CONVERT_STEP`] elements at a time.
fn widen(tensor: &Tensor, from: DType, files: &HashMap<String, File>) -> Result<File, DcpError> {
    let element = from.element_size() as u64;
    let mut spool = tempfile::tempfile()?;
    let mut raw = Vec::new();
    let mut wide = Vec::new();
    for piece in &tensor.pieces {
        let file = files.get(&piece.file).ok_or_else(|| DcpError::DeepSpeed {
            file: piece.file.clone(),
            what: "not opened".into(),
        })?;
        let mut done = 0;
        while done < piece.len {
            let n = (piece.len - done).min(CONVERT_STEP);
            raw.resize((n * element) as usize, 0);
            file.read_exact_at(&mut raw, piece.offset + done * element)?;
            wide.clear();
            for bytes in raw.chunks_exact(element as usize) {
                wide.extend(decode(bytes, from, ByteOrder::Little).to_le_bytes());
            }
            spool.write_all(&wide)?;
            done += n;
        }
    }
    Ok(spool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extract_keeps_keys_under_the_prefix_without_it() {
        let sel = |p: &str| Selection {
            model_only: false,
            extract: Some(p.into()),
        };
        assert_eq!(
            selected("model.a.weight", &sel("model")),
            Some("a.weight".into())
        );
        assert_eq!(selected("modelx.a", &sel("model")), None);
        assert_eq!(selected("model", &sel("model")), None);
        assert_eq!(selected("a", &Selection::default()), Some("a".into()));
    }
}
