//! Opening a TorchScript archive: its module objects and tensors (`data.pkl`, through
//! [`ckpt_formats::torch::open`]), the example input's shape (`traced_inputs.pkl`), its scalar
//! constants (`constants.pkl`) and, on demand, the code records that define its classes.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::rc::Rc;

use ckpt_formats::torch::checkpoint::{self, Checkpoint, Format};
use ckpt_formats::torch::dtype::DType;
use ckpt_formats::torch::read_tensor::{decode, decode_integer, view_values, ByteOrder};
use ckpt_formats::torch::tensor::{scan, TensorRef};
use ckpt_formats::torch::zip_read::TorchZip;
use ckpt_pickle::{self as pickle, Value};

use super::parse::{parse, ClassDef, Source};
use super::ScriptError;

/// The largest code record parsed (resnet152's largest is a few KiB).
const MAX_RECORD_BYTES: u64 = 16 << 20;
/// The most code bytes parsed from one archive.
const MAX_CODE_BYTES: u64 = 256 << 20;
/// The longest class name accepted (mangled torchvision names are under 100 bytes).
const MAX_QUALNAME: usize = 1024;
/// The largest `traced_inputs.pkl` / `constants.pkl` decoded.
const MAX_SIDE_PICKLE: u64 = 64 << 20;
/// Largest record of one non-scalar tensor constant read into memory.
const MAX_CONSTANT_BYTES: u64 = 16 << 20;

/// A traced tensor constant (`CONSTANTS.c<i>`): scalars are read, anything else is kept
/// only as a description for the error that refuses it.
#[derive(Clone, Debug, PartialEq)]
pub enum Constant {
    Int(i64),
    Float(f64),
    /// A tensor with at least one dimension (a traced `torch.tensor([8., 16., 32.])`).
    Tensor(ConstantTensor),
    Other(String),
}

/// A non-scalar tensor of `constants.pkl`, decoded in row-major order.
///
/// Invariant: the values hold exactly the product of `shape` elements.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantTensor {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub values: ConstantValues,
}

/// A constant tensor's values: floating-point types as `f32` (what the export computes
/// in), integer and boolean types exactly.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstantValues {
    Float(Vec<f32>),
    Int(Vec<i64>),
}

/// An opened TorchScript archive.
///
/// Invariant: `ckpt` is the archive's `data.pkl` with every storage checked against its
/// record ([`ckpt_formats::torch::open`]); code records are parsed at most once each.
pub struct ScriptArchive {
    /// The module objects (`data.pkl`) and their storages.
    pub ckpt: Checkpoint,
    zip: TorchZip,
    /// Parsed code records by record name.
    sources: HashMap<String, Rc<Source>>,
    code_bytes: u64,
    /// The example inputs (dtype and full shape, batch first), from `traced_inputs.pkl`.
    pub traced_inputs: Option<Vec<(DType, Vec<u64>)>>,
    /// `constants.pkl`, in order.
    pub constants: Vec<Constant>,
}

/// The name a program gives the non-scalar tensor constant at `index` of `constants.pkl`
/// (what TorchScript code spells `CONSTANTS.c<index>`).
pub fn constant_fqn(index: usize) -> String {
    format!("CONSTANTS.c{index}")
}

/// The non-scalar tensor constant of `constants` named `fqn` ([`constant_fqn`]), if any.
pub fn constant_tensor<'c>(constants: &'c [Constant], fqn: &str) -> Option<&'c ConstantTensor> {
    let index: usize = fqn.strip_prefix("CONSTANTS.c")?.parse().ok()?;
    match constants.get(index)? {
        Constant::Tensor(t) if constant_fqn(index) == fqn => Some(t),
        _ => None,
    }
}

/// Whether `file` is a TorchScript archive by torch's own rule, the one the scanner judges
/// it by: a zip that `torch.load` hands to `torch.jit.load`, because a record named exactly
/// `constants.pkl` sits directly in its archive folder.
pub fn is_torchscript(file: &File) -> Result<bool, ScriptError> {
    let mut head = [0u8; 4];
    if file.read_at(&mut head, 0)? < 4 || head != *b"PK\x03\x04" {
        return Ok(false);
    }
    Ok(TorchZip::open(file.try_clone()?)?.is_torchscript())
}

/// A class found in the code: its record name and definition.
pub struct Class {
    pub file: String,
    source: Rc<Source>,
    index: usize,
}

impl Class {
    pub fn def(&self) -> &ClassDef {
        // `index` was found in `source.classes` by `ScriptArchive::class`.
        &self.source.classes[self.index]
    }
}

impl ScriptArchive {
    /// Opens the TorchScript archive at `path`: its objects, constants and the traced input's shape; code records are parsed when first read.
    pub fn open(path: &Path) -> Result<ScriptArchive, ScriptError> {
        ScriptArchive::from_file(path, File::open(path)?)
    }

    /// [`ScriptArchive::open`] of `file`, opened from `path` (a file a command has already
    /// scanned: the same bytes, not the path again).
    pub fn from_file(path: &Path, file: File) -> Result<ScriptArchive, ScriptError> {
        let ckpt = checkpoint::open_file(path, file.try_clone()?)?;
        if ckpt.format != Format::TorchScript {
            return Err(ScriptError::archive(
                "not a TorchScript archive (no `constants.pkl` record)",
            ));
        }
        let mut zip = TorchZip::open(file)?;
        let traced_inputs = if zip.has("traced_inputs.pkl") {
            let bytes = zip.read_small("traced_inputs.pkl", MAX_SIDE_PICKLE)?;
            let p = pickle::read(&bytes)?;
            Some(
                scan(&p.graph, p.root)?
                    .tensors
                    .into_iter()
                    .map(|t| (t.dtype, t.shape))
                    .collect(),
            )
        } else {
            None
        };
        let constants = if zip.has("constants.pkl") {
            read_constants(&mut zip, big_endian(&ckpt))?
        } else {
            Vec::new()
        };
        Ok(ScriptArchive {
            ckpt,
            zip,
            sources: HashMap::new(),
            code_bytes: 0,
            traced_inputs,
            constants,
        })
    }

    /// The class with qualified name `qualname` (`__torch__.torch.nn.modules.conv.Conv2d`),
    /// from the record `code/__torch__/torch/nn/modules/conv.py`.
    pub fn class(&mut self, qualname: &str) -> Result<Class, ScriptError> {
        let (module, name) = qualname.rsplit_once('.').unwrap_or(("", qualname));
        let parts_ok = qualname.len() <= MAX_QUALNAME
            && !module.is_empty()
            && module
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()));
        if !parts_ok {
            return Err(ScriptError::archive(format!(
                "module class `{qualname}` is not a TorchScript class name"
            )));
        }
        let file = format!("code/{}.py", module.replace('.', "/"));
        let source = match self.sources.get(&file) {
            Some(s) => s.clone(),
            None => {
                let source = Rc::new(self.parse_record(&file)?);
                self.sources.insert(file.clone(), source.clone());
                source
            }
        };
        let index = source
            .classes
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| {
                ScriptError::archive(format!("`{file}` does not define class `{name}`"))
            })?;
        Ok(Class {
            file,
            source,
            index,
        })
    }

    fn parse_record(&mut self, file: &str) -> Result<Source, ScriptError> {
        if !self.zip.has(file) {
            return Err(ScriptError::archive(format!(
                "the archive has no code record `{file}`"
            )));
        }
        let bytes = self.zip.read_small(file, MAX_RECORD_BYTES)?;
        self.code_bytes += bytes.len() as u64;
        if self.code_bytes > MAX_CODE_BYTES {
            return Err(ScriptError::archive(format!(
                "the code records add up to more than {} MiB",
                MAX_CODE_BYTES >> 20
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| ScriptError::archive(format!("`{file}` is not UTF-8 text")))?;
        parse(file, &text)
    }

    /// The tensor built by pickle node `node` of `data.pkl`, if it is one.
    pub fn tensor_at(&self, node: pickle::NodeId) -> Option<&TensorRef> {
        self.ckpt.scan.tensor_at(node)
    }
}

fn big_endian(ckpt: &Checkpoint) -> bool {
    ckpt.zip.as_ref().and_then(|m| m.byteorder.as_deref()) == Some("big")
}

/// `constants.pkl`: a tuple of tensors. Zero-dimensional float64/float32/int64 tensors
/// (what the tracer makes of Python scalars in arithmetic) are read from `constants/<key>`.
fn read_constants(zip: &mut TorchZip, big: bool) -> Result<Vec<Constant>, ScriptError> {
    let bytes = zip.read_small("constants.pkl", MAX_SIDE_PICKLE)?;
    let p = pickle::read(&bytes)?;
    let found = scan(&p.graph, p.root)?;
    let items = match p.graph.get(p.root) {
        Value::Tuple(items) => items.clone(),
        other => {
            return Err(ScriptError::archive(format!(
                "`constants.pkl` holds a {}, not a tuple",
                other.kind()
            )))
        }
    };
    items
        .iter()
        .map(|&item| match found.tensor_at(item) {
            Some(t) if t.shape.is_empty() => scalar(zip, t, big),
            Some(t) => tensor(zip, t, big),
            None => Ok(Constant::Other(format!("a {}", p.graph.get(item).kind()))),
        })
        .collect()
}

/// A non-scalar constant from its `constants/<key>` record (at most [`MAX_CONSTANT_BYTES`]).
fn tensor(zip: &mut TorchZip, t: &TensorRef, big: bool) -> Result<Constant, ScriptError> {
    let record = format!("constants/{}", t.storage.key);
    let bytes = zip.read_small(&record, MAX_CONSTANT_BYTES)?;
    let order = if big {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    let start = usize::try_from(t.offset)
        .ok()
        .and_then(|o| o.checked_mul(t.dtype.element_size()))
        .and_then(|s| bytes.get(s..));
    let values = match t.dtype {
        DType::Float32 | DType::Float64 | DType::Float16 | DType::BFloat16 => start
            .and_then(|b| view_values(b, t, order, decode))
            .map(ConstantValues::Float),
        d if d.is_integer() => start
            .and_then(|b| view_values(b, t, order, decode_integer))
            .map(ConstantValues::Int),
        other => {
            return Ok(Constant::Other(format!(
                "a {} tensor of shape {:?}",
                other.name(),
                t.shape
            )))
        }
    };
    let values = values.ok_or_else(|| {
        ScriptError::archive(format!(
            "`{record}` is too short for its constant of shape {:?}",
            t.shape
        ))
    })?;
    Ok(Constant::Tensor(ConstantTensor {
        dtype: t.dtype,
        shape: t.shape.clone(),
        values,
    }))
}

fn scalar(zip: &mut TorchZip, t: &TensorRef, big: bool) -> Result<Constant, ScriptError> {
    let size = t.dtype.element_size();
    let record = format!("constants/{}", t.storage.key);
    let bytes = zip.read_small(&record, 1 << 20)?;
    let start = usize::try_from(t.offset)
        .ok()
        .and_then(|o| o.checked_mul(size));
    let Some(raw) = start.and_then(|s| bytes.get(s..s + size)) else {
        return Err(ScriptError::archive(format!(
            "`{record}` is too short for its scalar constant"
        )));
    };
    let mut b = [0u8; 8];
    b[..size.min(8)].copy_from_slice(&raw[..size.min(8)]);
    if big {
        b[..size.min(8)].reverse();
    }
    Ok(match t.dtype {
        DType::Float64 => Constant::Float(f64::from_le_bytes(b)),
        DType::Float32 => Constant::Float(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        DType::Int64 => Constant::Int(i64::from_le_bytes(b)),
        other => Constant::Other(format!("a {} scalar", other.name())),
    })
}
