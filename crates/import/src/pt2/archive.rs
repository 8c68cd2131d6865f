//! Opening a `.pt2` archive and reading its weights.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::OnceLock;

use serde::Deserialize;

use super::flat;
use super::generations::{read_program, SchemaVersion};
use super::Pt2Error;
use ckpt_aten::inline::inline_higher_order;
use ckpt_aten::program::{ExportedProgram, SymInt, TensorMeta};
use ckpt_formats::torch::checkpoint::MappedBytes;
use ckpt_formats::torch::contiguous::{increment, is_contiguous};
use ckpt_formats::torch::dtype::DType;
use ckpt_formats::torch::pt2_layout::{open_layout, Layout};
use ckpt_formats::torch::read_tensor::{decode, decode_integer, ByteOrder, MappedTensor};
use ckpt_formats::torch::zip_read::TorchZip;

/// The largest JSON record we parse (the program, the weight configs). A resnet152
/// program is about 2 MiB; this leaves room for very large graphs.
pub const MAX_JSON_BYTES: u64 = 256 << 20;
/// The largest deflated weight record we inflate into memory (torch writes them stored).
const MAX_DEFLATED_WEIGHT: u64 = 1 << 30;

const PROGRAM: &str = "models/model.json";
const WEIGHTS_CONFIG: &str = "data/weights/model_weights_config.json";
const CONSTANTS_CONFIG: &str = "data/constants/model_constants_config.json";
/// The `torch.save` archives torch 2.8 wrote the weights and constants into.
const WEIGHTS_PICKLED: &str = "data/weights/model.pt";
const CONSTANTS_PICKLED: &str = "data/constants/model.pt";

/// A stored tensor's view of its record, checked against the record's size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorLayout {
    /// Element type.
    pub dtype: DType,
    /// Sizes.
    pub sizes: Vec<u64>,
    /// Element strides, one per size.
    pub strides: Vec<u64>,
    /// Offset in elements.
    pub offset: u64,
}

impl TensorLayout {
    /// Number of elements, `None` on overflow.
    pub fn numel(&self) -> Option<u64> {
        self.sizes.iter().try_fold(1u64, |n, &s| n.checked_mul(s))
    }

    /// One past the last element the view touches (0 when empty), `None` on overflow.
    fn extent(&self) -> Option<u64> {
        if self.numel()? == 0 {
            return Some(0);
        }
        self.sizes
            .iter()
            .zip(&self.strides)
            .try_fold(self.offset.checked_add(1)?, |end, (&size, &stride)| {
                end.checked_add((size - 1).checked_mul(stride)?)
            })
    }
}

/// Where a tensor's bytes are: a record (relative name) and a layout that fits in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredTensor {
    /// The record's name inside its archive folder: `data/weights/weight_0` (archive
    /// layout), `data/0` of the nested `torch.save` archive (flat layout).
    pub record: String,
    /// The view of the record it is.
    pub layout: TensorLayout,
}

/// An opened `.pt2` archive of either layout and any known schema version.
///
/// Invariant: every entry of `tensors` names an existing record of one of `sources` with
/// at least `extent × element size` bytes, so reads never run past a record.
pub struct Pt2Archive {
    /// The archive itself, then (flat layout) the nested archives its tensors are in.
    sources: Vec<Source>,
    /// The serialized program in the current schema, higher-order ops inlined.
    pub program: ExportedProgram,
    /// The layout the archive was written in.
    pub layout: Layout,
    /// The schema version its program was written in (mapped onto the current one).
    pub schema: SchemaVersion,
    /// FQN (`layer1.0.conv1.weight`, or a constant's name) → its bytes.
    tensors: HashMap<String, Stored>,
    /// The archive file mapped read-only, made on first use ([`Pt2Archive::map_tensor`]);
    /// `None` inside when it cannot be mapped. Every source is in this one file.
    mapped: OnceLock<Option<MappedBytes>>,
}

/// A zip tensors are read from, with its byte order.
struct Source {
    zip: TorchZip,
    order: ByteOrder,
}

/// A tensor entry: raw bytes we can read (in `sources[source]`), or a pickled tensor
/// subclass or object we refuse on use.
#[derive(Clone, Debug)]
enum Stored {
    Raw { source: usize, tensor: StoredTensor },
    Pickled { record: String },
}

/// One `*_config.json` entry (`{"config": {fqn: entry}}`).
#[derive(Deserialize)]
struct ConfigEntry {
    path_name: String,
    #[serde(default)]
    use_pickle: bool,
    tensor_meta: TensorMeta,
}

#[derive(Deserialize)]
struct Config {
    config: HashMap<String, ConfigEntry>,
}

impl Pt2Archive {
    /// Opens `path`, parses the program and the weight/constant configs, and checks every
    /// stored tensor against its record.
    pub fn open(path: &Path) -> Result<Pt2Archive, Pt2Error> {
        Pt2Archive::from_file(File::open(path)?)
    }

    /// [`Pt2Archive::open`] of an open file (a file a command has already scanned: the
    /// same bytes, not the path again).
    pub fn from_file(file: File) -> Result<Pt2Archive, Pt2Error> {
        match open_layout(file)? {
            Some((zip, Layout::Archive)) => Pt2Archive::archive_layout(zip),
            Some((zip, Layout::Flat)) => Pt2Archive::flat_layout(zip),
            None => Err(Pt2Error::Record {
                record: "archive_format".into(),
                what: format!(
                    "missing or not `pt2`, and no `{}` and `{}` at the zip root: this is not a torch.export archive",
                    flat::VERSION,
                    flat::PROGRAM
                ),
            }),
        }
    }

    /// The program of `record`, in the current schema, higher-order ops inlined.
    fn program(
        zip: &mut TorchZip,
        record: &str,
    ) -> Result<(ExportedProgram, SchemaVersion), Pt2Error> {
        let bad = |what: String| Pt2Error::Record {
            record: record.to_owned(),
            what,
        };
        let bytes = zip.read_small(record, MAX_JSON_BYTES)?;
        let (mut program, schema) = read_program(&bytes).map_err(bad)?;
        inline_higher_order(&mut program.graph_module.graph).map_err(bad)?;
        Ok((program, schema))
    }

    /// The archive layout: raw weight records described by JSON configs, or (torch 2.8,
    /// read first by torch's loader when present) `torch.save` archives of the weights
    /// and constants stored as records.
    fn archive_layout(mut zip: TorchZip) -> Result<Pt2Archive, Pt2Error> {
        let (program, schema) = Pt2Archive::program(&mut zip, PROGRAM)?;
        let order = byte_order(&mut zip)?;
        let mut archive = Pt2Archive {
            sources: vec![Source { zip, order }],
            program,
            layout: Layout::Archive,
            schema,
            tensors: HashMap::new(),
            mapped: OnceLock::new(),
        };
        for (pickled, config, folder) in [
            (WEIGHTS_PICKLED, WEIGHTS_CONFIG, "data/weights"),
            (CONSTANTS_PICKLED, CONSTANTS_CONFIG, "data/constants"),
        ] {
            if archive.sources[0].zip.has(pickled) {
                archive.add_nested(pickled)?;
            } else if archive.sources[0].zip.has(config) {
                archive.add_config(config, folder)?;
            }
        }
        Ok(archive)
    }

    /// The flat layout ([`flat`]): the program beside `torch.save` archives of the state
    /// dict and the constants, each read in place.
    fn flat_layout(mut zip: TorchZip) -> Result<Pt2Archive, Pt2Error> {
        let text = zip.read_small(flat::VERSION, 64)?;
        let text = String::from_utf8_lossy(&text);
        let recorded = SchemaVersion::parse(&text).ok_or_else(|| Pt2Error::Record {
            record: flat::VERSION.into(),
            what: format!("holds {:?}, not a schema version", text.trim()),
        })?;
        let (program, schema) = Pt2Archive::program(&mut zip, flat::PROGRAM)?;
        if recorded.major != schema.major {
            return Err(Pt2Error::Record {
                record: flat::VERSION.into(),
                what: format!(
                    "says schema {recorded}, but `{}` is schema {schema}",
                    flat::PROGRAM
                ),
            });
        }
        let mut archive = Pt2Archive {
            sources: vec![Source {
                zip,
                order: ByteOrder::Little,
            }],
            program,
            layout: Layout::Flat,
            schema,
            tensors: HashMap::new(),
            mapped: OnceLock::new(),
        };
        for names in [flat::STATE_DICT, flat::CONSTANTS] {
            if let Some(record) = flat::find(&archive.sources[0].zip, &names) {
                archive.add_nested(record)?;
            }
        }
        Ok(archive)
    }

    /// The tensors of a payload config (`{"config": {fqn: entry}}`) over raw records in
    /// `folder`, each checked against its record.
    fn add_config(&mut self, config_name: &str, folder: &str) -> Result<(), Pt2Error> {
        let zip = &mut self.sources[0].zip;
        let config: Config = read_json(zip, config_name)?;
        for (fqn, entry) in config.config {
            let record = format!("{folder}/{}", entry.path_name);
            let stored = if entry.use_pickle {
                Stored::Pickled { record }
            } else {
                let layout = layout(&fqn, &entry.tensor_meta)?;
                check_fits(zip, &fqn, &record, &layout)?;
                Stored::Raw {
                    source: 0,
                    tensor: StoredTensor { record, layout },
                }
            };
            self.tensors.insert(fqn, stored);
        }
        Ok(())
    }

    /// The tensors of the `torch.save` archive stored as `record`, read in place: its
    /// pickled mapping by the non-executing reader, each tensor checked against its record.
    fn add_nested(&mut self, record: &str) -> Result<(), Pt2Error> {
        let mut nested = self.sources[0]
            .zip
            .open_nested(record)
            .map_err(|e| Pt2Error::Record {
                record: record.to_owned(),
                what: format!("not a torch.save archive that can be read in place: {e}"),
            })?;
        let order = byte_order(&mut nested)?;
        for (name, tensor) in flat::pickled_tensors(&mut nested, record)? {
            let stored = match tensor {
                Some((inner, layout)) => {
                    check_fits(&nested, &name, &inner, &layout)?;
                    Stored::Raw {
                        source: self.sources.len(),
                        tensor: StoredTensor {
                            record: inner,
                            layout,
                        },
                    }
                }
                None => Stored::Pickled {
                    record: record.to_owned(),
                },
            };
            self.tensors.insert(name, stored);
        }
        self.sources.push(Source { zip: nested, order });
        Ok(())
    }

    /// The archive folder name (`model` for `model.pt2`); empty for the flat layout.
    pub fn archive_name(&self) -> &str {
        self.sources[0].zip.prefix()
    }

    /// Number of records in the zip (the nested archives of the flat layout count one each).
    pub fn records(&self) -> usize {
        self.sources[0].zip.len()
    }

    /// Every stored tensor by FQN: its layout, or `None` for a pickled tensor subclass.
    pub fn stored_tensors(&self) -> impl Iterator<Item = (&str, Option<&StoredTensor>)> {
        self.tensors.iter().map(|(fqn, stored)| {
            let raw = match stored {
                Stored::Raw { tensor, .. } => Some(tensor),
                Stored::Pickled { .. } => None,
            };
            (fqn.as_str(), raw)
        })
    }

    /// The stored tensor named `fqn` (a parameter, buffer or constant name), and the
    /// source it is in.
    fn stored(&self, fqn: &str) -> Result<(usize, &StoredTensor), Pt2Error> {
        match self.tensors.get(fqn) {
            Some(Stored::Raw { source, tensor }) => Ok((*source, tensor)),
            Some(Stored::Pickled { record }) => Err(Pt2Error::Tensor {
                name: fqn.to_owned(),
                what: format!(
                    "stored as a pickled tensor subclass or object in `{record}`, which is not read"
                ),
            }),
            None => Err(Pt2Error::Tensor {
                name: fqn.to_owned(),
                what: "not among the archive's weights and constants".into(),
            }),
        }
    }

    /// The stored tensor named `fqn` (a parameter, buffer or constant name).
    pub fn tensor(&self, fqn: &str) -> Result<&StoredTensor, Pt2Error> {
        Ok(self.stored(fqn)?.1)
    }

    /// Float tensor `fqn` as a view of the mapped archive, read without copying it into
    /// memory, when its record is stored as it is and the file can be mapped; `None`
    /// otherwise (read it with [`Pt2Archive::read_f32`]), and for an overlapping view (a
    /// zero stride), which [`Pt2Archive::read_f32`] refuses.
    pub fn map_tensor(&self, fqn: &str) -> Option<MappedTensor> {
        let (source, tensor) = self.stored(fqn).ok()?;
        let layout = &tensor.layout;
        let float = matches!(
            layout.dtype,
            DType::Float32 | DType::Float16 | DType::BFloat16 | DType::Float64
        );
        let (numel, extent) = (layout.numel()?, layout.extent()?);
        if !float || numel == 0 || numel > extent - layout.offset {
            return None;
        }
        let Source { zip, order } = &self.sources[source];
        let info = zip.record(&tensor.record).ok().filter(|i| i.stored)?;
        let whole = self
            .mapped
            .get_or_init(|| MappedBytes::whole_file(self.sources[0].zip.file()))
            .as_ref()?;
        let size = layout.dtype.element_size() as u64;
        // `check_fits` proved the view's bytes lie in the record; nested records' offsets
        // are offsets in the file.
        let bytes = whole.range(
            info.data_offset + layout.offset * size,
            (extent - layout.offset) * size,
        )?;
        Some(MappedTensor::new(
            bytes,
            layout.dtype,
            *order,
            layout.sizes.clone(),
            layout.strides.clone(),
            usize::try_from(numel).ok()?,
        ))
    }

    /// Tensor `fqn`'s values in row-major order as `f32` (from float32, float16, bfloat16
    /// or float64, rounded to nearest; from int64 or int32, such as an index constant,
    /// exact below 2^24). Reads only the bytes the view spans; views with
    /// more elements than they span (zero strides) are refused, so the result is never
    /// larger than the record.
    pub fn read_f32(&mut self, fqn: &str) -> Result<Vec<f32>, Pt2Error> {
        self.read_values(fqn, decode, |dtype| {
            matches!(
                dtype,
                DType::Float32
                    | DType::Float16
                    | DType::BFloat16
                    | DType::Float64
                    | DType::Int64
                    | DType::Int32
            )
        })
    }

    /// Integer tensor `fqn`'s values ([`DType::is_integer`]: an index buffer) in row-major
    /// order, exact; read as [`Pt2Archive::read_f32`] reads.
    pub fn read_i64(&mut self, fqn: &str) -> Result<Vec<i64>, Pt2Error> {
        self.read_values(fqn, decode_integer, DType::is_integer)
    }

    /// Tensor `fqn`'s elements in row-major order, each decoded by `decode`; its dtype must
    /// be one `readable` accepts.
    fn read_values<T>(
        &mut self,
        fqn: &str,
        decode: fn(&[u8], DType, ByteOrder) -> T,
        readable: fn(DType) -> bool,
    ) -> Result<Vec<T>, Pt2Error> {
        let (source, tensor) = self.stored(fqn)?;
        let tensor = tensor.clone();
        let order = self.sources[source].order;
        let layout = &tensor.layout;
        let bad = |what: String| Pt2Error::Tensor {
            name: fqn.to_owned(),
            what,
        };
        if !readable(layout.dtype) {
            return Err(bad(format!("{} cannot be read here", layout.dtype.name())));
        }
        let size = layout.dtype.element_size() as u64;
        // `check_fits` proved these products fit in the record, hence in u64 and memory bounds.
        let (Some(numel), Some(extent)) = (layout.numel(), layout.extent()) else {
            return Err(bad("its size overflows".into()));
        };
        if numel == 0 {
            return Ok(Vec::new());
        }
        // An overlapping view (a zero stride) could claim far more elements than its record
        // holds; refusing it keeps every allocation below the record's size.
        if numel > extent - layout.offset {
            return Err(bad(format!(
                "an overlapping view of {numel} elements over {} stored ones is not read",
                extent - layout.offset
            )));
        }
        let first = layout.offset * size;
        let bytes = self.read_range(
            source,
            &tensor.record,
            first,
            (extent - layout.offset) * size,
        )?;
        let element = |index: u64| {
            let at = (index * size) as usize;
            decode(&bytes[at..at + size as usize], layout.dtype, order)
        };
        let count = usize::try_from(numel).map_err(|_| bad("too large".into()))?;
        let mut values = Vec::with_capacity(count);
        if is_contiguous(&layout.sizes, &layout.strides) {
            values.extend((0..numel).map(element));
        } else {
            let mut index = vec![0u64; layout.sizes.len()];
            for _ in 0..numel {
                let at: u64 = index.iter().zip(&layout.strides).map(|(i, s)| i * s).sum();
                values.push(element(at));
                increment(&mut index, &layout.sizes);
            }
        }
        Ok(values)
    }

    /// `len` bytes of `record` of `sources[source]` from byte `from`; the range was
    /// checked by [`check_fits`].
    fn read_range(
        &mut self,
        source: usize,
        record: &str,
        from: u64,
        len: u64,
    ) -> Result<Vec<u8>, Pt2Error> {
        let zip = &mut self.sources[source].zip;
        let info = zip.record(record)?;
        let size = usize::try_from(len).map_err(|_| Pt2Error::Record {
            record: record.to_owned(),
            what: "too large for this platform".into(),
        })?;
        if info.stored {
            let (reader, _) = zip.stored_reader(record)?;
            let mut buffer = vec![0u8; size];
            reader
                .get_ref()
                .read_exact_at(&mut buffer, info.data_offset + from)?;
            Ok(buffer)
        } else {
            let all = zip.read_small(record, MAX_DEFLATED_WEIGHT)?;
            let start = usize::try_from(from).unwrap_or(usize::MAX);
            all.get(start..start.saturating_add(size))
                .map(<[u8]>::to_vec)
                .ok_or_else(|| Pt2Error::Record {
                    record: record.to_owned(),
                    what: format!("holds {} bytes, fewer than its tensor needs", all.len()),
                })
        }
    }
}

fn read_json<T: serde::de::DeserializeOwned>(
    zip: &mut TorchZip,
    record: &str,
) -> Result<T, Pt2Error> {
    let bytes = zip.read_small(record, MAX_JSON_BYTES)?;
    serde_json::from_slice(&bytes).map_err(|e| Pt2Error::Record {
        record: record.to_owned(),
        what: format!("not a config this reader understands: {e}"),
    })
}

/// A torch archive's `byteorder` record (`little` when absent, as torch reads it).
fn byte_order(zip: &mut TorchZip) -> Result<ByteOrder, Pt2Error> {
    Ok(match zip.has("byteorder") {
        true if zip.read_small("byteorder", 64)?.trim_ascii() == b"big" => ByteOrder::Big,
        _ => ByteOrder::Little,
    })
}

/// The export schema's `ScalarType` numbers (not c10's), `torch/_export/serde/schema.py`.
pub fn schema_dtype(code: i64) -> Option<DType> {
    Some(match code {
        1 => DType::UInt8,
        2 => DType::Int8,
        3 => DType::Int16,
        4 => DType::Int32,
        5 => DType::Int64,
        6 => DType::Float16,
        7 => DType::Float32,
        8 => DType::Float64,
        9 => DType::Complex32,
        10 => DType::Complex64,
        11 => DType::Complex128,
        12 => DType::Bool,
        13 => DType::BFloat16,
        28 => DType::UInt16,
        29 => DType::Float8E4M3Fn,
        30 => DType::Float8E5M2,
        31 => DType::Float8E4M3Fnuz,
        32 => DType::Float8E5M2Fnuz,
        33 => DType::Float8E8M0Fnu,
        34 => DType::UInt32,
        35 => DType::UInt64,
        _ => return None,
    })
}

/// A stored tensor's layout: every size, stride and the offset must be literal and
/// non-negative, and the dtype known.
fn layout(fqn: &str, meta: &TensorMeta) -> Result<TensorLayout, Pt2Error> {
    let bad = |what: String| Pt2Error::Tensor {
        name: fqn.to_owned(),
        what,
    };
    let dtype = schema_dtype(meta.dtype)
        .ok_or_else(|| bad(format!("unknown export dtype number {}", meta.dtype)))?;
    let literal = |what: &str, v: &SymInt| match v {
        SymInt::Int(n) => u64::try_from(*n).map_err(|_| bad(format!("negative {what} {n}"))),
        other => Err(bad(format!("symbolic {what} {other:?} in a stored tensor"))),
    };
    let sizes = meta
        .sizes
        .iter()
        .map(|s| literal("size", s))
        .collect::<Result<Vec<_>, _>>()?;
    let strides = meta
        .strides
        .iter()
        .map(|s| literal("stride", s))
        .collect::<Result<Vec<_>, _>>()?;
    if strides.len() != sizes.len() {
        return Err(bad(format!(
            "{} strides for {} sizes",
            strides.len(),
            sizes.len()
        )));
    }
    Ok(TensorLayout {
        dtype,
        sizes,
        strides,
        offset: literal("storage offset", &meta.storage_offset)?,
    })
}

/// The record exists and holds every byte the layout spans.
fn check_fits(
    zip: &TorchZip,
    fqn: &str,
    record: &str,
    layout: &TensorLayout,
) -> Result<(), Pt2Error> {
    let info = zip.record(record).map_err(|_| Pt2Error::Tensor {
        name: fqn.to_owned(),
        what: format!("its record `{record}` is missing"),
    })?;
    let needed = layout
        .extent()
        .and_then(|e| e.checked_mul(layout.dtype.element_size() as u64));
    match needed {
        Some(needed) if needed <= info.size => Ok(()),
        _ => Err(Pt2Error::Tensor {
            name: fqn.to_owned(),
            what: format!(
                "sizes {:?}, strides {:?}, offset {} need more than the {} bytes of `{record}`",
                layout.sizes, layout.strides, layout.offset, info.size
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(json: &str) -> TensorMeta {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn layouts_are_literal_and_checked() {
        let m = meta(
            r#"{"dtype": 7, "sizes": [{"as_int": 2}, {"as_int": 3}], "strides": [{"as_int": 1}, {"as_int": 2}], "storage_offset": {"as_int": 1}}"#,
        );
        let l = layout("w", &m).unwrap();
        assert_eq!(l.dtype, DType::Float32);
        // Last element at 1 + 1·1 + 2·2 = 6, so 7 elements are spanned.
        assert_eq!(l.extent(), Some(7));
        let m = meta(r#"{"dtype": 99, "sizes": [], "strides": []}"#);
        assert!(layout("w", &m)
            .unwrap_err()
            .to_string()
            .contains("dtype number 99"));
        let m = meta(
            r#"{"dtype": 7, "sizes": [{"as_expr": {"expr_str": "s0"}}], "strides": [{"as_int": 1}]}"#,
        );
        assert!(layout("w", &m)
            .unwrap_err()
            .to_string()
            .contains("symbolic size"));
        let m = meta(r#"{"dtype": 7, "sizes": [{"as_int": 0}], "strides": [{"as_int": 1}]}"#);
        assert_eq!(layout("w", &m).unwrap().extent(), Some(0));
    }

    #[test]
    fn zero_strides_span_one_element() {
        let l = TensorLayout {
            dtype: DType::Float32,
            sizes: vec![1 << 40],
            strides: vec![0],
            offset: 0,
        };
        assert_eq!(l.extent(), Some(1));
        assert_eq!(l.numel(), Some(1 << 40));
    }

    #[test]
    fn overflowing_layouts_have_no_extent() {
        let l = TensorLayout {
            dtype: DType::Float32,
            sizes: vec![u64::MAX, 2],
            strides: vec![u64::MAX, 1],
            offset: 0,
        };
        assert_eq!(l.extent(), None);
        assert_eq!(l.numel(), None);
    }

    #[test]
    fn schema_dtypes_are_not_c10_numbers() {
        assert_eq!(schema_dtype(7), Some(DType::Float32));
        assert_eq!(schema_dtype(5), Some(DType::Int64));
        assert_eq!(schema_dtype(13), Some(DType::BFloat16));
        assert_eq!(schema_dtype(0), None);
    }
}
