//! What `ckpt inspect DIR` reports about a sharded checkpoint folder, typed: [`DcpReport`]
//! (a `torch.distributed.checkpoint` folder, from `.metadata` alone) and [`DeepSpeedReport`]
//! (a DeepSpeed ZeRO folder: the state dict `consolidate` would write, read from the pickles
//! alone). Serializing one with serde gives exactly the JSON of `ckpt inspect --json DIR`:
//! fields in the order declared here; [`render_dcp`] and [`render_deepspeed`] are the text
//! views.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use ckpt_formats::torch::dcp::deepspeed::layout::{Layout, Role};
use ckpt_formats::torch::dcp::{deepspeed, EntryKind, Folder};
use ckpt_formats::torch::DType;

/// Everything `ckpt inspect` says about a DCP folder.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DcpReport {
    /// The folder, as given.
    pub folder: String,
    /// Always `dcp`.
    pub format: &'static str,
    /// The metadata's format version, when recorded.
    pub version: Option<String>,
    /// The ranks that wrote files.
    pub ranks: Vec<u64>,
    /// Every file the metadata names, with its size (`None`: missing).
    pub files: Vec<FileReport>,
    /// Tensor entries.
    pub tensors: u64,
    /// Non-tensor entries.
    pub values: u64,
    /// Chunks over all tensors.
    pub chunks: u64,
    /// Bytes of all tensors (saturating).
    pub bytes: u64,
    /// Tensor count per dtype.
    pub dtypes: BTreeMap<&'static str, u64>,
    /// Every entry, in metadata order.
    pub entries: Vec<DcpEntry>,
    /// Every layout problem ([`Folder::problems`]).
    pub problems: Vec<String>,
    /// The scan status of `.metadata`.
    pub scan: String,
}

/// One file of a DCP folder.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FileReport {
    /// Its name in the folder.
    pub name: String,
    /// Its size, or `None` when it is missing.
    pub bytes: Option<u64>,
}

/// One entry of a DCP folder; serialized as one object: `key`, `kind` (`value` or `tensor`),
/// then a tensor's fields.
#[derive(Clone, Debug, PartialEq)]
pub enum DcpEntry {
    /// A non-tensor value.
    Value {
        /// Its dotted key.
        key: String,
    },
    /// A tensor and its chunks.
    Tensor {
        /// Its dotted key.
        key: String,
        /// Its dtype.
        dtype: &'static str,
        /// Its shape.
        shape: Vec<u64>,
        /// Its bytes (`None` when the size overflows).
        bytes: Option<u64>,
        /// Its chunks, in metadata order.
        chunks: Vec<ChunkReport>,
    },
}

impl Serialize for DcpEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            DcpEntry::Value { key } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("key", key)?;
                map.serialize_entry("kind", "value")?;
                map.end()
            }
            DcpEntry::Tensor {
                key,
                dtype,
                shape,
                bytes,
                chunks,
            } => {
                let mut map = serializer.serialize_map(Some(6))?;
                map.serialize_entry("key", key)?;
                map.serialize_entry("kind", "tensor")?;
                map.serialize_entry("dtype", dtype)?;
                map.serialize_entry("shape", shape)?;
                map.serialize_entry("bytes", bytes)?;
                map.serialize_entry("chunks", chunks)?;
                map.end()
            }
        }
    }
}

/// One chunk of a DCP tensor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChunkReport {
    /// Its offsets in the tensor.
    pub offsets: Vec<u64>,
    /// Its sizes.
    pub sizes: Vec<u64>,
    /// The file storing it, when the metadata says.
    pub file: Option<String>,
}

/// Bytes of a tensor of `dtype` and `shape`, `None` on overflow.
fn nbytes(dtype: DType, shape: &[u64]) -> Option<u64> {
    shape
        .iter()
        .try_fold(dtype.element_size() as u64, |n, &s| n.checked_mul(s))
}

/// The report on `folder`; `scan` is the `.metadata` scan status.
pub fn dcp(folder: &Folder, scan: &str) -> DcpReport {
    let mut report = DcpReport {
        folder: folder.dir.display().to_string(),
        format: "dcp",
        version: folder.metadata.version.clone(),
        ranks: folder.ranks(),
        files: folder
            .files
            .iter()
            .map(|(name, bytes)| FileReport {
                name: name.clone(),
                bytes: *bytes,
            })
            .collect(),
        tensors: 0,
        values: 0,
        chunks: 0,
        bytes: 0,
        dtypes: BTreeMap::new(),
        entries: Vec::new(),
        problems: folder.problems().iter().map(ToString::to_string).collect(),
        scan: scan.to_owned(),
    };
    for entry in &folder.metadata.entries {
        match &entry.kind {
            EntryKind::Bytes => {
                report.values += 1;
                report.entries.push(DcpEntry::Value {
                    key: entry.fqn.clone(),
                });
            }
            EntryKind::Tensor {
                dtype,
                size,
                chunks,
            } => {
                report.tensors += 1;
                report.chunks += chunks.len() as u64;
                *report.dtypes.entry(dtype.name()).or_default() += 1;
                let bytes = nbytes(*dtype, size);
                report.bytes = report.bytes.saturating_add(bytes.unwrap_or(u64::MAX));
                let chunks = chunks
                    .iter()
                    .map(|c| ChunkReport {
                        offsets: c.offsets.clone(),
                        sizes: c.sizes.clone(),
                        file: folder
                            .metadata
                            .storage
                            .get(&(entry.fqn.clone(), Some(c.offsets.clone())))
                            .map(|i| i.relative_path.clone()),
                    })
                    .collect();
                report.entries.push(DcpEntry::Tensor {
                    key: entry.fqn.clone(),
                    dtype: dtype.name(),
                    shape: size.clone(),
                    bytes,
                    chunks,
                });
            }
        }
    }
    report
}

/// Everything `ckpt inspect` says about a DeepSpeed ZeRO folder.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeepSpeedReport {
    /// The tag folder.
    pub folder: String,
    /// Always `deepspeed`.
    pub format: &'static str,
    /// The ZeRO stage.
    pub zero_stage: u64,
    /// The data-parallel world size.
    pub world_size: u64,
    /// The DeepSpeed version that saved it, when recorded.
    pub ds_version: Option<String>,
    /// The model and optimizer states files, in the order DeepSpeed reads them.
    pub files: Vec<String>,
    /// Tensors of the consolidated state dict.
    pub tensors: usize,
    /// Tied names over all tensors.
    pub tied: usize,
    /// Pieces over all tensors.
    pub pieces: u64,
    /// Bytes of all tensors (saturating).
    pub bytes: u64,
    /// Tensor count per dtype.
    pub dtypes: BTreeMap<&'static str, u64>,
    /// Every tensor, in output order.
    pub entries: Vec<DeepSpeedEntry>,
    /// The worst scan status of the folder's files.
    pub scan: String,
}

/// One tensor of a DeepSpeed folder's consolidated state dict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeepSpeedEntry {
    /// Its name.
    pub key: String,
    /// `buffer`, `frozen` or `trained`.
    pub role: &'static str,
    /// Its dtype in the output.
    pub dtype: &'static str,
    /// The dtype it is stored in when that differs (a buffer widened to float32).
    pub stored_dtype: Option<&'static str>,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its bytes (`None` when the size overflows).
    pub bytes: Option<u64>,
    /// The file of each piece.
    pub pieces: Vec<String>,
    /// Its tied names.
    pub aliases: Vec<String>,
}

/// The report on `folder`, whose `layout` was read; `scan` is the worst scan status of its
/// files.
pub fn deepspeed(folder: &deepspeed::Folder, layout: &Layout, scan: &str) -> DeepSpeedReport {
    let mut dtypes: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut pieces, mut bytes) = (0u64, 0u64);
    let mut entries = Vec::new();
    for t in &layout.tensors {
        *dtypes.entry(t.dtype.name()).or_default() += 1;
        pieces += t.pieces.len() as u64;
        let nbytes = nbytes(t.dtype, &t.shape);
        bytes = bytes.saturating_add(nbytes.unwrap_or(u64::MAX));
        entries.push(DeepSpeedEntry {
            key: t.name.clone(),
            role: match t.role {
                Role::Buffer => "buffer",
                Role::Frozen => "frozen",
                Role::Trained => "trained",
            },
            dtype: t.dtype.name(),
            stored_dtype: t.stored.map(DType::name),
            shape: t.shape.clone(),
            bytes: nbytes,
            pieces: t.pieces.iter().map(|p| p.file.clone()).collect(),
            aliases: t.aliases.clone(),
        });
    }
    DeepSpeedReport {
        folder: folder.dir.display().to_string(),
        format: "deepspeed",
        zero_stage: layout.stage,
        world_size: layout.world,
        ds_version: layout.ds_version.clone(),
        files: folder
            .model
            .iter()
            .chain(&folder.optim)
            .map(|(n, _)| n.clone())
            .collect(),
        tensors: layout.tensors.len(),
        tied: layout.tensors.iter().map(|t| t.aliases.len()).sum(),
        pieces,
        bytes,
        dtypes,
        entries,
        scan: scan.to_owned(),
    }
}

/// One `label value` line of a text view.
fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "{label:<15} {value}");
}

/// A shape as the JSON array it is in the report (`[12,5]`).
fn shape(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("[{}]", dims.join(","))
}

/// Counts per dtype, `float32 5, int64 1`.
fn dtypes(dtypes: &BTreeMap<&str, u64>) -> String {
    let parts: Vec<String> = dtypes.iter().map(|(k, v)| format!("{k} {v}")).collect();
    parts.join(", ")
}

/// The text view of a [`DcpReport`].
pub fn render_dcp(report: &DcpReport) -> String {
    let mut out = String::new();
    line(&mut out, "folder", &report.folder);
    let version = report.version.as_deref().unwrap_or("-");
    line(&mut out, "format", format!("dcp (version {version})"));
    let ranks: Vec<String> = report.ranks.iter().map(ToString::to_string).collect();
    line(
        &mut out,
        "ranks",
        format!("{} ({})", ranks.len(), ranks.join(", ")),
    );
    line(
        &mut out,
        "tensors",
        format!(
            "{} in {} chunks, {} bytes",
            report.tensors, report.chunks, report.bytes
        ),
    );
    line(&mut out, "values", report.values);
    line(&mut out, "dtypes", dtypes(&report.dtypes));
    line(&mut out, "scan", &report.scan);
    let problems = &report.problems;
    if problems.is_empty() {
        line(&mut out, "problems", "none");
    } else {
        line(&mut out, "problems", problems.len());
    }
    for p in problems {
        let _ = writeln!(out, "  {p}");
    }
    out.push('\n');
    for e in &report.entries {
        match e {
            DcpEntry::Value { key } => {
                let _ = writeln!(out, "  {key}  value");
            }
            DcpEntry::Tensor {
                key,
                dtype,
                shape: size,
                chunks,
                ..
            } => {
                let n = chunks.len();
                let _ = writeln!(
                    out,
                    "  {key}  {dtype} {}  {n} chunk{}",
                    shape(size),
                    if n == 1 { "" } else { "s" }
                );
            }
        }
    }
    out
}

/// The text view of a [`DeepSpeedReport`].
pub fn render_deepspeed(report: &DeepSpeedReport) -> String {
    let mut out = String::new();
    line(&mut out, "folder", &report.folder);
    line(
        &mut out,
        "format",
        format!(
            "DeepSpeed ZeRO-{} (DeepSpeed {})",
            report.zero_stage,
            report.ds_version.as_deref().unwrap_or("-")
        ),
    );
    line(&mut out, "ranks", report.world_size);
    line(&mut out, "files", report.files.len());
    let tied = report.tied;
    line(
        &mut out,
        "tensors",
        format!(
            "{} ({tied} tied name{}) in {} pieces, {} bytes",
            report.tensors,
            if tied == 1 { "" } else { "s" },
            report.pieces,
            report.bytes
        ),
    );
    line(&mut out, "dtypes", dtypes(&report.dtypes));
    line(&mut out, "scan", &report.scan);
    out.push('\n');
    for e in &report.entries {
        let pieces = e.pieces.len();
        // A buffer stored in another floating type is written widened, as float32.
        let dtype = match e.stored_dtype {
            Some(stored) => format!("{} (stored {stored})", e.dtype),
            None => e.dtype.to_owned(),
        };
        let _ = writeln!(
            out,
            "  {}  {dtype} {}  {}  {pieces} piece{}{}",
            e.key,
            shape(&e.shape),
            e.role,
            if pieces == 1 { "" } else { "s" },
            if e.aliases.is_empty() {
                String::new()
            } else {
                format!("  (also {})", e.aliases.join(", "))
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::path::Path;

    use super::*;
    use ckpt_formats::torch::dcp::METADATA_FILE;

    fn fixture() -> Folder {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dcp/fsdp2_2ranks");
        let metadata = File::open(dir.join(METADATA_FILE)).unwrap();
        Folder::open(&dir, metadata).unwrap()
    }

    #[test]
    fn dcp_json_keeps_the_documented_field_order_and_kind_after_key() {
        let json = serde_json::to_string(&dcp(&fixture(), "clean")).unwrap();
        let at = |k: &str| json.find(&format!("\"{k}\":")).unwrap();
        let order = [
            "folder", "format", "version", "ranks", "files", "tensors", "values",
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{json}");
        assert!(
            json.contains(
                r#"{"key":"model.steps","kind":"tensor","dtype":"int64","shape":[4],"bytes":32,"#
            ),
            "{json}"
        );
        assert!(json.ends_with(r#""problems":[],"scan":"clean"}"#), "{json}");
    }

    #[test]
    fn dcp_text_lists_totals_then_each_entry_with_its_chunks() {
        let text = render_dcp(&dcp(&fixture(), "clean"));
        assert!(text.contains("\nranks           2 (0, 1)\n"), "{text}");
        assert!(text.contains("\nproblems        none\n"), "{text}");
        assert!(
            text.contains("\n  model.a.weight  float32 [12,5]  2 chunks\n"),
            "{text}"
        );
    }
}
