//! The typed inspect report. Serializing it with serde gives exactly the JSON of
//! `ckpt inspect --json`: fields in the order declared here, absent optional fields left out.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Serialize, Serializer};

use ckpt_formats::transform::PlainKind;

/// Everything `ckpt inspect` says about one checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InspectReport {
    /// The path the checkpoint was opened from, as given.
    pub file: String,
    /// The container: `zip`, `legacy`, `torchscript` or `tar`.
    pub format: String,
    /// The zip records a `torch.save` zip carries (absent for other containers).
    #[serde(flatten)]
    pub archive: Option<ArchiveReport>,
    /// Tensor objects as torch counts them (a sparse tensor is one tensor).
    pub tensors: usize,
    /// Distinct storages.
    pub storages: usize,
    /// Bytes of all storages.
    pub bytes: u64,
    /// Tensor count per dtype (`float32`, …).
    pub dtypes: BTreeMap<String, usize>,
    /// Tensor count per storage location (`cpu`, `cuda:0`, …).
    pub locations: BTreeMap<String, usize>,
    /// Tensors rebuilt by torch_npu's `_rebuild_npu_tensor`.
    pub npu_rebuild_tensors: usize,
    /// Wrapper prefixes (`module.`, `_orig_mod.`, …) found in any state dict.
    pub prefixes: BTreeSet<String>,
    /// Every state dict found, in the order of the walk.
    pub state_dicts: Vec<StateDictReport>,
    /// The AMP loss-scaler state, when there is one.
    pub amp: Option<AmpReport>,
    /// Top-level entries holding a plain number, string, bool, bytes or `None`.
    pub scalars: KeyMap<Scalar>,
    /// A nested summary of the whole object (depth and entries bounded).
    pub keys: StructureNode,
    /// The verdict of the safety scan of the same open file.
    pub scan: ScanVerdict,
    /// Globals (from every pickle in the file) that are on no allow-list.
    pub unsafe_globals: BTreeSet<String>,
    /// The objects that stop `torch.load`'s default `weights_only=True` (torch ≥ 2.6), one
    /// entry per class in the order first met; empty when the object loads that way
    /// (TorchScript archives, which `torch.load` hands to `torch.jit.load`, are not listed).
    pub weights_only_blockers: Vec<BlockerReport>,
}

/// One class of objects that stops a `weights_only=True` load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BlockerReport {
    /// The class or function, as the pickle names it (`argparse.Namespace`).
    pub class: String,
    /// How many such objects there are.
    pub count: usize,
    /// The key paths of the first few (`args`, `cfg/data`; `<root>` for the whole object).
    pub paths: Vec<String>,
    /// What `ckpt convert --plain` makes of them (`namespace`, `numpy-array`, …); `None` when
    /// it cannot make them plain.
    pub plain: Option<PlainKind>,
    /// Why they cannot be made plain, when they cannot.
    pub refused: Option<String>,
}

/// The small records of a `torch.save` zip.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArchiveReport {
    /// The archive's folder name.
    pub archive_name: String,
    /// The `version` record.
    pub version: Option<String>,
    /// The `.format_version` record (torch ≥ 2.7).
    pub format_version: Option<String>,
    /// The `.storage_alignment` record (torch ≥ 2.7).
    pub storage_alignment: Option<u64>,
    /// The `byteorder` record (torch ≥ 2.1).
    pub byteorder: Option<String>,
    /// Number of records in the archive.
    pub records: usize,
}

/// One state dict: a mapping of string keys to tensors.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StateDictReport {
    /// Key path from the top (`state_dict`, `model/ema`); `""` for the whole file, `None`
    /// when it sits inside a list or object.
    pub path: Option<String>,
    /// Tensors in it.
    pub tensors: usize,
    /// Elements of those tensors.
    pub parameters: u64,
    /// Bytes of those tensors' elements.
    pub bytes: u64,
    /// Tensor count per dtype.
    pub dtypes: BTreeMap<String, usize>,
    /// Wrapper prefixes its keys carry.
    pub prefixes: Vec<String>,
}

/// The AMP loss-scaler state and where it is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AmpReport {
    /// `native`, `npu`, `apex` or `disabled`.
    pub kind: String,
    /// Key path to the state, `/`-separated.
    pub path: String,
    /// The values, by kind.
    #[serde(flatten)]
    pub settings: AmpSettings,
}

/// The values of an AMP state, by kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AmpSettings {
    /// A `GradScaler` (native or torch_npu).
    Scaler {
        /// Current loss scale.
        scale: PyFloat,
        /// Factor the scale grows by.
        growth_factor: PyFloat,
        /// Factor the scale backs off by.
        backoff_factor: PyFloat,
        /// Steps between growths.
        growth_interval: i64,
        /// Steps since the last growth or backoff.
        growth_tracker: i64,
        /// torch_npu's `dynamic` flag (npu only).
        #[serde(skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    /// apex's `amp.state_dict()`: one entry per loss scaler.
    Apex {
        /// The loss scalers, in order.
        scalers: Vec<ApexScalerReport>,
    },
    /// A disabled `GradScaler`: no values.
    Disabled {},
}

/// One apex loss scaler.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ApexScalerReport {
    /// `loss_scalerN`.
    pub name: String,
    /// Its loss scale.
    pub loss_scale: PyFloat,
    /// Its unskipped step count.
    pub unskipped: i64,
}

/// What the safety scan concluded.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScanVerdict {
    /// `clean`, `unknown`, `dangerous` or `unreadable`.
    pub status: String,
    /// Dangerous globals, dotted.
    pub dangerous: Vec<String>,
    /// Unknown globals, dotted.
    pub unknown: Vec<String>,
}

/// A float as Python has it; serialized as a JSON number when finite, else as `"nan"`,
/// `"inf"` or `"-inf"` (a JSON `null` would lose the value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PyFloat(pub f64);

impl PyFloat {
    /// Python's spelling of the value (`nan`, `inf`, `-inf`, `0.5`).
    pub fn text(self) -> String {
        let f = self.0;
        if f.is_nan() {
            "nan".into()
        } else if f.is_infinite() {
            if f > 0.0 { "inf" } else { "-inf" }.into()
        } else {
            f.to_string()
        }
    }
}

impl Serialize for PyFloat {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            serializer.serialize_f64(self.0)
        } else {
            serializer.serialize_str(&self.text())
        }
    }
}

/// A plain value, as JSON gives it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Scalar {
    /// An integer that fits 64 bits.
    Int(i64),
    /// An integer beyond 64 bits, as its decimal digits.
    BigInt(String),
    /// A float.
    Float(PyFloat),
    /// A string.
    Str(String),
    /// A bool.
    Bool(bool),
    /// `None` (JSON `null`).
    None,
    /// Bytes, as a Python `b'…'` preview of the first bytes.
    Bytes(String),
}

/// Mapping keys in the order the pickle has them; serialized as a JSON object. A key the
/// pickle repeats keeps its first position and its last value, as a Python dict does.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyMap<V>(Vec<(String, V)>);

impl<V> Default for KeyMap<V> {
    fn default() -> Self {
        KeyMap(Vec::new())
    }
}

impl<V> KeyMap<V> {
    /// Sets `key` to `value`, in place when the key is already there.
    pub fn insert(&mut self, key: String, value: V) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.0.push((key, value)),
        }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<V: Serialize> Serialize for KeyMap<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// One node of the nested summary. Which fields are present depends on `type`:
/// tensors have `dtype` and `shape`; state dicts, other mappings, lists, tuples and sets have
/// `len` (mappings above the depth bound also `keys`); bytes have `len` and `value`; plain
/// values have `value`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StructureNode {
    /// `tensor`, `state_dict`, `bytes`, a Python type name (`int`, `dict`, `list`) or a
    /// class's dotted name.
    #[serde(rename = "type")]
    pub kind: String,
    /// A tensor's dtype.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// A tensor's shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Number of entries or bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub len: Option<usize>,
    /// A mapping's first entries, summarised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeyMap<StructureNode>>,
    /// A plain value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Scalar>,
}

impl StructureNode {
    /// A node of `kind` with no other field.
    pub(crate) fn of(kind: impl Into<String>) -> StructureNode {
        StructureNode {
            kind: kind.into(),
            dtype: None,
            shape: None,
            len: None,
            keys: None,
            value: None,
        }
    }
}
