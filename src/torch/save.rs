//! Writing a checkpoint: a (transformed) graph plus the source's storage bytes, through a
//! temporary file that is fsynced and renamed into place, so an error or a kill never leaves
//! a partial output.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::pickle::{self, Graph, NodeId, Value};

use super::checkpoint::{Checkpoint, Format};
use super::legacy;
use super::tensor::{scan, Rebuild};
use super::zip_write::{TorchZipWriter, DEFAULT_ALIGNMENT};
use super::TorchError;

/// The container to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// torch ≥ 1.6 zip, laid out as torch 2.13 writes it.
    Zip,
    /// The legacy stream, readable by torch ≤ 1.5.
    Legacy,
}

impl OutputFormat {
    /// The same container as the input (TorchScript archives cannot be rewritten).
    pub fn same_as(format: Format) -> Result<OutputFormat, TorchError> {
        match format {
            Format::Zip => Ok(OutputFormat::Zip),
            Format::Legacy => Ok(OutputFormat::Legacy),
            Format::TorchScript => Err(TorchError::Unsupported {
                what: "rewriting TorchScript archives".into(),
            }),
            Format::Tar => Err(TorchError::Unsupported {
                what: "rewriting the pre-2017 tar format; convert it to zip".into(),
            }),
        }
    }
}

/// Writes `graph` (rooted at `root`) with the storages it references, copied from `source`,
/// to `out`. `graph` must reference only storages `source` holds.
pub fn save(
    source: &mut Checkpoint,
    mut graph: Graph,
    root: NodeId,
    format: OutputFormat,
    out: &Path,
) -> Result<(), TorchError> {
    shape_storage_ids(&mut graph, root, format)?;
    let scan = scan(&graph, root)?;
    // (key, element size) of every storage, in first-encounter order.
    let storages: Vec<(String, u64)> = scan
        .unique_storages()
        .into_iter()
        .map(|s| (s.key.clone(), s.dtype.map_or(1, |d| d.element_size()) as u64))
        .collect();
    for (key, _) in &storages {
        source.storage_bytes(key)?;
    }
    let pickle = pickle::write(&graph, root)?;

    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".ckpt-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(|e| TorchError::Output {
            what: format!("cannot create a temporary file in {}: {e}", dir.display()),
        })?;
    match format {
        OutputFormat::Zip => write_zip(source, &pickle, &storages, out, temp.as_file_mut())?,
        OutputFormat::Legacy => write_legacy(source, &pickle, storages, temp.as_file_mut())?,
    }
    temp.as_file().sync_all()?;
    temp.persist(out).map_err(|e| TorchError::Output {
        what: format!("cannot move the output into place: {}", e.error),
    })?;
    if let Ok(d) = File::open(dir) {
        // Make the rename durable; a failure here does not undo a complete output.
        let _ = d.sync_all();
    }
    Ok(())
}

/// Gives every storage id the field count its container expects: five in a zip
/// `('storage', type, key, location, numel)`, six in the legacy stream (plus `view_metadata`).
/// Refuses what the legacy stream cannot hold.
fn shape_storage_ids(graph: &mut Graph, root: NodeId, format: OutputFormat) -> Result<(), TorchError> {
    let found = scan(graph, root)?;
    if format == OutputFormat::Legacy {
        if let Some(t) = found
            .tensors
            .iter()
            .find(|t| t.rebuild == Rebuild::V3 || !t.dtype.is_legacy())
        {
            return Err(TorchError::Unsupported {
                what: format!(
                    "{} tensors in the legacy format (torch ≤ 1.5 has no such dtype; keep the zip format)",
                    t.dtype
                ),
            });
        }
        if found.storages.iter().any(|s| s.dtype.is_none()) {
            return Err(TorchError::Unsupported {
                what: "untyped storages in the legacy format".into(),
            });
        }
    }
    for storage in &found.storages {
        let Some(items) = graph.tuple(storage.tuple).map(<[NodeId]>::to_vec) else {
            continue;
        };
        match (format, items.len()) {
            (OutputFormat::Zip, 6) => {
                if !matches!(graph.get(items[5]), Value::None) {
                    return Err(TorchError::Unsupported {
                        what: format!(
                            "storage `{}` is a pre-1.0 storage view, which the zip format cannot express",
                            storage.key
                        ),
                    });
                }
                graph.set(storage.tuple, Value::Tuple(items[..5].to_vec()));
            }
            (OutputFormat::Legacy, 5) => {
                let none = graph.add(Value::None);
                let mut six = items;
                six.push(none);
                graph.set(storage.tuple, Value::Tuple(six));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The archive folder torch derives from an output path: the file name cut at its last `.`,
/// or `archive` when that is empty or not ASCII.
fn archive_prefix(out: &Path) -> String {
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = match name.rfind('.') {
        Some(i) => &name[..i],
        None => name,
    };
    if stem.is_empty() || !stem.is_ascii() || stem.contains('/') {
        "archive".to_owned()
    } else {
        stem.to_owned()
    }
}

fn write_zip(
    source: &mut Checkpoint,
    pickle: &[u8],
    storages: &[(String, u64)],
    out: &Path,
    file: &mut File,
) -> Result<(), TorchError> {
    let meta = source.zip.clone().unwrap_or_default();
    let alignment = meta.storage_alignment.unwrap_or(DEFAULT_ALIGNMENT);
    let byteorder = meta.byteorder.unwrap_or_else(|| "little".to_owned());
    let handle = file.try_clone()?;
    let mut writer = TorchZipWriter::new(handle, &archive_prefix(out), alignment);
    writer.add_bytes("data.pkl", pickle)?;
    writer.add_bytes(".format_version", b"1")?;
    writer.add_bytes(".storage_alignment", alignment.to_string().as_bytes())?;
    writer.add_bytes("byteorder", byteorder.as_bytes())?;
    for (key, _) in storages {
        source.copy_storage_to_zip(key, &mut writer, &format!("data/{key}"))?;
    }
    writer.add_bytes("version", b"3\n")?;
    writer.finish()?;
    Ok(())
}

fn write_legacy(
    source: &mut Checkpoint,
    pickle: &[u8],
    mut storages: Vec<(String, u64)>,
    file: &mut File,
) -> Result<(), TorchError> {
    if source.zip.as_ref().and_then(|m| m.byteorder.as_deref()) == Some("big") {
        return Err(TorchError::Unsupported {
            what: "big-endian storages in the legacy format (it is always little-endian)".into(),
        });
    }
    // torch writes the key list `sorted()` and the storages in that order.
    storages.sort();
    let keys: Vec<String> = storages.iter().map(|(k, _)| k.clone()).collect();
    file.write_all(&legacy::preamble())?;
    file.write_all(pickle)?;
    file.write_all(&legacy::key_list_pickle(&keys)?)?;
    for (key, element_size) in &storages {
        let bytes = source.storage_bytes(key)?;
        let count = bytes.legacy_count.unwrap_or(bytes.len / element_size);
        file.write_all(&count.to_le_bytes())?;
        let written = source.copy_storage_to_file(key, file)?;
        if written != count * element_size {
            return Err(TorchError::Invalid {
                what: format!(
                    "storage `{key}` holds {written} bytes, not a whole number of elements"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_prefix_follows_torch() {
        assert_eq!(archive_prefix(Path::new("/x/model.pth.tar")), "model.pth");
        assert_eq!(archive_prefix(Path::new("x.y.z.pt")), "x.y.z");
        assert_eq!(archive_prefix(Path::new("noext")), "noext");
        assert_eq!(archive_prefix(Path::new(".hidden")), "archive");
        assert_eq!(archive_prefix(Path::new("résumé.pth")), "archive");
    }
}
