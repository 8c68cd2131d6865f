//! What `ckpt inspect` reports about a `.pt2` archive, typed: [`Pt2Report`] (the program's
//! shape: ops, inputs, symbols; and its stored tensors). Serializing one with serde gives
//! exactly the JSON of `ckpt inspect --json FILE.pt2`: fields in the order declared here;
//! [`render_text`] is the text view.

use std::collections::BTreeMap;

use serde::Serialize;

use ckpt_aten::program::{symbol_name, Argument, InputSpec, SymInt};
use ckpt_import::pt2::Pt2Archive;

/// Everything `ckpt inspect` says about a `.pt2` archive.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pt2Report {
    /// The file, as given.
    pub file: String,
    /// Always `pt2`.
    pub format: &'static str,
    /// `archive` (torch 2.6 on) or `flat` (older).
    pub layout: &'static str,
    /// The program's schema version (`8.20`).
    pub schema: String,
    /// The archive's folder name (`model`); empty in the flat layout.
    pub archive_name: String,
    /// Records in the zip.
    pub records: usize,
    /// The torch that exported it, when the program records it (2.5 on).
    pub torch_version: Option<String>,
    /// Program nodes.
    pub nodes: usize,
    /// Node count per op (`aten.conv2d.default`), without the `torch.ops.` prefix.
    pub ops: BTreeMap<String, u64>,
    /// The user inputs, in order.
    pub inputs: Vec<InputReport>,
    /// Graph outputs.
    pub outputs: usize,
    /// Inputs that are the module's state, counted by kind (`parameters`, `buffers`,
    /// `constants`, or the signature's own name for another kind).
    pub state: BTreeMap<String, u64>,
    /// Stored tensors.
    pub tensors: u64,
    /// Their bytes (saturating; a tensor whose record is missing counts 0).
    pub bytes: u64,
    /// Stored tensor count per dtype.
    pub dtypes: BTreeMap<&'static str, u64>,
    /// The program's dynamic sizes with the range torch.export declared for each.
    pub symbols: BTreeMap<String, SymbolRange>,
}

/// A user input: a tensor with its sizes, or another kind of argument.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InputReport {
    /// A tensor input.
    Tensor {
        /// Its name in the graph.
        name: String,
        /// Its sizes; a dynamic one by its symbol (`s77`).
        sizes: Vec<Size>,
    },
    /// Any other argument, by its kind (`as_int`).
    Other {
        /// The argument's kind.
        kind: String,
    },
}

/// One size of an input: fixed, or a symbol.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Size {
    /// A fixed size.
    Fixed(i64),
    /// A dynamic size, by its symbol.
    Symbol(String),
}

/// The sizes torch.export declared for a symbol (`None`: unbounded).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SymbolRange {
    /// The smallest size.
    pub min: Option<i64>,
    /// The largest size.
    pub max: Option<i64>,
}

/// The report for `archive`, opened from `file`.
pub fn summary(file: &str, archive: &Pt2Archive) -> Pt2Report {
    let module = &archive.program.graph_module;
    let graph = &module.graph;
    let mut ops: BTreeMap<String, u64> = BTreeMap::new();
    for node in &graph.nodes {
        let op = node
            .target
            .strip_prefix("torch.ops.")
            .unwrap_or(&node.target);
        *ops.entry(op.to_owned()).or_default() += 1;
    }
    let mut state: BTreeMap<String, u64> = BTreeMap::new();
    let mut inputs = Vec::new();
    for spec in &module.signature.input_specs {
        let kind = match spec {
            InputSpec::Parameter { .. } => "parameters",
            InputSpec::Buffer { .. } => "buffers",
            InputSpec::TensorConstant { .. } => "constants",
            InputSpec::UserInput(arg) => {
                inputs.push(user_input(arg, archive));
                continue;
            }
            InputSpec::Other(kind) => kind,
        };
        *state.entry(kind.to_owned()).or_default() += 1;
    }
    let mut dtypes: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut bytes = 0u64;
    let mut tensors = 0u64;
    for (_, stored) in archive.stored_tensors() {
        tensors += 1;
        if let Some(t) = stored {
            *dtypes.entry(t.layout.dtype.name()).or_default() += 1;
            let size = t.layout.dtype.element_size() as u64;
            bytes = bytes.saturating_add(t.layout.numel().unwrap_or(0).saturating_mul(size));
        }
    }
    let symbols = archive
        .program
        .range_constraints
        .iter()
        .map(|(name, r)| {
            let range = SymbolRange {
                min: r.min_val,
                max: r.max_val,
            };
            (name.clone(), range)
        })
        .collect();
    Pt2Report {
        file: file.to_owned(),
        format: "pt2",
        layout: archive.layout.name(),
        schema: archive.schema.to_string(),
        archive_name: archive.archive_name().to_owned(),
        records: archive.records(),
        torch_version: archive.program.torch_version.clone(),
        nodes: graph.nodes.len(),
        ops,
        inputs,
        outputs: graph.outputs.len(),
        state,
        tensors,
        bytes,
        dtypes,
        symbols,
    }
}

/// A user input's report; symbolic sizes by their symbol (`s77`).
fn user_input(arg: &Argument, archive: &Pt2Archive) -> InputReport {
    let Some(name) = arg.tensor_name() else {
        return InputReport::Other {
            kind: arg.kind().to_owned(),
        };
    };
    let sizes = archive
        .program
        .graph_module
        .graph
        .tensor_values
        .get(name)
        .map(|meta| {
            meta.sizes
                .iter()
                .map(|s| match s {
                    SymInt::Int(n) => Size::Fixed(*n),
                    SymInt::Expr(e) | SymInt::Name(e) => Size::Symbol(symbol_name(e).to_owned()),
                })
                .collect()
        })
        .unwrap_or_default();
    InputReport::Tensor {
        name: name.to_owned(),
        sizes,
    }
}

/// `pt2 (archive `model`, schema 8.20, torch 2.13.0)`, or for the flat layout
/// `pt2 (flat layout, schema 1)` (torch wrote its version into the program from 2.5 on).
fn format_line(report: &Pt2Report) -> String {
    let mut parts = vec![match report.layout {
        "flat" => "flat layout".to_owned(),
        _ => format!("archive `{}`", report.archive_name),
    }];
    parts.push(format!("schema {}", report.schema));
    parts.extend(report.torch_version.as_ref().map(|t| format!("torch {t}")));
    format!("pt2 ({})", parts.join(", "))
}

/// `k n, k n` of a count table.
fn counts<K: std::fmt::Display>(table: &BTreeMap<K, u64>) -> String {
    table
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value as its compact JSON (an input's sizes, the symbols table).
fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The text view of a [`Pt2Report`].
pub fn render_text(report: &Pt2Report) -> String {
    let inputs: Vec<String> = report
        .inputs
        .iter()
        .map(|input| match input {
            InputReport::Tensor { name, sizes } => format!("{name} {}", json(sizes)),
            InputReport::Other { kind } => kind.clone(),
        })
        .collect();
    let symbols = if report.symbols.is_empty() {
        "none (every size was traced in)".to_owned()
    } else {
        json(&report.symbols)
    };
    let lines = [
        ("file", report.file.clone()),
        ("format", format_line(report)),
        ("inputs", inputs.join(", ")),
        ("outputs", report.outputs.to_string()),
        ("symbols", symbols),
        ("state", counts(&report.state)),
        (
            "tensors",
            format!("{} ({} bytes)", report.tensors, report.bytes),
        ),
        ("dtypes", counts(&report.dtypes)),
        ("nodes", report.nodes.to_string()),
        ("ops", counts(&report.ops)),
    ];
    lines
        .iter()
        .map(|(label, value)| format!("{label:<15} {value}\n"))
        .collect()
}
