//! `ckpt atc-check`: any ONNX model read against the model of CANN's ONNX parser
//! ([`super::cann`]), node by node: what ATC refuses, what it converts into something that
//! computes other values or shapes, and notes. No CANN install is needed; the verdicts are
//! only as good as the table (2022 plugin sources; see `docs/atc.md` for its limits).

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::Serialize;

use super::cann::{self, Generation, Rule, Treatment, Value};
use super::proto::{
    attribute_proto::AttributeType, tensor_proto::DataType,
    tensor_shape_proto::dimension::Value as Dim, type_proto, AttributeProto, GraphProto,
    ModelProto, NodeProto, TensorProto,
};

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// ATC stops with an error.
    Reject,
    /// ATC converts it, but the `.om` computes other values or shapes than ONNX says.
    ChangesMeaning,
    /// Worth knowing; not a failure.
    Note,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Reject => "REJECT",
            Level::ChangesMeaning => "CHANGES MEANING",
            Level::Note => "note",
        })
    }
}

/// One finding: about a node (its name and op type) or, with both empty, the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// How bad it is.
    pub level: Level,
    /// The node's name (empty for the model).
    pub node: String,
    /// The node's op type (empty for the model).
    pub op: String,
    /// What ATC does with it, for users.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op.is_empty() {
            write!(f, "{}: model: {}", self.level, self.message)
        } else {
            write!(
                f,
                "{}: {} ({}): {}",
                self.level, self.node, self.op, self.message
            )
        }
    }
}

/// Every finding on a model, models first, then in node order.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The CANN generation whose parser the model was read against.
    pub cann: &'static str,
    /// The plugin sources the operator rules were read from.
    pub source: String,
    /// The model's default-domain opset, if it declares one.
    pub opset: Option<i64>,
    /// How many nodes the graph has.
    pub nodes: usize,
    /// The findings, model first, then in node order.
    pub findings: Vec<Finding>,
    /// Op types of the model whose plugin the table has not read: checked for
    /// registration only.
    pub unmodelled: Vec<String>,
}

impl Report {
    /// Whether ATC converts the model with its meaning: no rejection, no changed meaning.
    pub fn passes(&self) -> bool {
        self.findings.iter().all(|f| f.level == Level::Note)
    }
}

/// Ops that compute shapes at run time or branch: ATC folds them only when every shape is
/// static, so a model with a dynamic batch compiled into profiles may fail on them.
const RUNTIME_SHAPE_OPS: [&str; 7] = [
    "Shape",
    "ConstantOfShape",
    "Expand",
    "NonZero",
    "Loop",
    "If",
    "Identity",
];

/// What the checks know about the graph's values.
pub(super) struct Context<'m> {
    /// Initializers and `Constant` outputs.
    constants: HashMap<&'m str, Option<&'m TensorProto>>,
    /// Declared shapes (graph inputs, outputs, value_info); `None` for an unknown extent.
    shapes: HashMap<&'m str, Vec<Option<i64>>>,
    /// Declared element types (`TensorProto.DataType` numbers).
    elems: HashMap<&'m str, i32>,
}

impl<'m> Context<'m> {
    /// What `graph` declares: its constants and the shapes and element types of its values.
    pub(super) fn of(graph: &'m GraphProto) -> Self {
        let mut context = Context {
            constants: graph
                .initializer
                .iter()
                .filter_map(|t| t.name.as_deref().map(|n| (n, Some(t))))
                .collect(),
            shapes: HashMap::new(),
            elems: HashMap::new(),
        };
        for info in graph
            .input
            .iter()
            .chain(&graph.output)
            .chain(&graph.value_info)
        {
            let Some(name) = info.name.as_deref() else {
                continue;
            };
            let Some(type_proto::Value::TensorType(t)) =
                info.r#type.as_ref().and_then(|t| t.value.as_ref())
            else {
                continue;
            };
            if let Some(elem) = t.elem_type {
                context.elems.insert(name, elem);
            }
            if let Some(shape) = &t.shape {
                let dims = shape
                    .dim
                    .iter()
                    .map(|d| match d.value {
                        Some(Dim::DimValue(n)) if n > 0 => Some(n),
                        _ => None,
                    })
                    .collect();
                context.shapes.insert(name, dims);
            }
        }
        for t in &graph.initializer {
            if let (Some(name), Some(elem)) = (t.name.as_deref(), t.data_type) {
                context.elems.insert(name, elem);
            }
        }
        for node in &graph.node {
            if node.op_type.as_deref() == Some("Constant") {
                let value = node
                    .attribute
                    .iter()
                    .find(|a| a.name.as_deref() == Some("value"))
                    .and_then(|a| a.t.as_ref());
                for output in &node.output {
                    context.constants.insert(output, value);
                }
            }
        }
        context
    }
}

impl Context<'_> {
    pub(super) fn shape(&self, name: &str) -> Option<&[Option<i64>]> {
        self.shapes.get(name).map(Vec::as_slice)
    }

    pub(super) fn rank(&self, name: &str) -> Option<usize> {
        self.shape(name).map(<[_]>::len)
    }

    pub(super) fn elem(&self, name: &str) -> Option<i32> {
        self.elems.get(name).copied()
    }

    /// The values of an int64 constant.
    pub(super) fn ints(&self, name: &str) -> Option<Vec<i64>> {
        let tensor = (*self.constants.get(name)?)?;
        if tensor.data_type != Some(DataType::Int64 as i32) {
            return None;
        }
        if !tensor.int64_data.is_empty() {
            return Some(tensor.int64_data.clone());
        }
        let raw = tensor.raw_data.as_ref()?;
        Some(
            raw.chunks_exact(8)
                .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect(),
        )
    }

    pub(super) fn floats(&self, name: &str) -> Option<Vec<f32>> {
        let tensor = (*self.constants.get(name)?)?;
        if tensor.data_type != Some(DataType::Float as i32) {
            return None;
        }
        if !tensor.float_data.is_empty() {
            return Some(tensor.float_data.clone());
        }
        let raw = tensor.raw_data.as_ref()?;
        Some(
            raw.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        )
    }
}

/// Checks `model` against generation `cann` of the parser.
pub fn check(model: &ModelProto, cann: &'static Generation) -> Report {
    let mut findings = Vec::new();
    let mut model_finding = |level, message: String| {
        findings.push(Finding {
            level,
            node: String::new(),
            op: String::new(),
            message,
        })
    };
    let defaults: Vec<i64> = model
        .opset_import
        .iter()
        .filter(|o| matches!(o.domain.as_deref(), None | Some("") | Some("ai.onnx")))
        .map(|o| o.version.unwrap_or(0))
        .collect();
    let opset = match defaults.as_slice() {
        [one] if model.opset_import.len() == 1 => Some(*one),
        _ => {
            model_finding(
                Level::Reject,
                format!(
                    "{} opset imports; ATC takes exactly one, in the default domain (E16005)",
                    model.opset_import.len()
                ),
            );
            defaults.first().copied()
        }
    };
    if let Some(v) = opset.filter(|v| !cann.opsets.contains(v)) {
        model_finding(
            Level::Reject,
            format!(
                "opset {v} is not one CANN {} takes ({:?}; {})",
                cann.name, cann.opsets, cann.evidence
            ),
        );
    }
    let Some(graph) = model.graph.as_ref() else {
        model_finding(Level::Reject, "the model has no graph (E16001)".into());
        return Report {
            cann: cann.name,
            source: cann::source(),
            opset,
            nodes: 0,
            findings,
            unmodelled: Vec::new(),
        };
    };
    if graph.input.is_empty() || graph.output.is_empty() {
        model_finding(
            Level::Reject,
            "the graph needs an input and an output (E16001)".into(),
        );
    }
    let context = Context::of(graph);
    let opset = opset.unwrap_or(0);
    for (k, node) in graph.node.iter().enumerate() {
        let mut found = Vec::new();
        check_node(node, opset, &context, &mut found);
        let name = node
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("node {k}"));
        let op = node.op_type.clone().unwrap_or_default();
        findings.extend(found.into_iter().map(|(level, message)| Finding {
            level,
            node: name.clone(),
            op: op.clone(),
            message,
        }));
    }
    let mut seen = HashSet::new();
    let unmodelled = graph
        .node
        .iter()
        .filter_map(|n| n.op_type.clone())
        .filter(|op| op != "Constant" && cann::plugin(op).is_none() && seen.insert(op.clone()))
        .collect();
    Report {
        cann: cann.name,
        source: cann::source(),
        opset: Some(opset),
        nodes: graph.node.len(),
        findings,
        unmodelled,
    }
}

type Found = Vec<(Level, String)>;

pub(super) fn attribute<'n>(node: &'n NodeProto, name: &str) -> Option<&'n AttributeProto> {
    node.attribute
        .iter()
        .find(|a| a.name.as_deref() == Some(name))
}

pub(super) fn int_attr(node: &NodeProto, name: &str) -> Option<i64> {
    attribute(node, name).and_then(|a| a.i)
}

pub(super) fn ints_attr(node: &NodeProto, name: &str) -> Option<Vec<i64>> {
    attribute(node, name).map(|a| a.ints.clone())
}

pub(super) fn str_attr(node: &NodeProto, name: &str) -> Option<String> {
    attribute(node, name).and_then(|a| {
        a.s.as_ref()
            .map(|s| String::from_utf8_lossy(s).into_owned())
    })
}

/// An attribute's value as the table compares it.
pub(super) fn value_of(a: &AttributeProto) -> Value {
    match a.r#type.and_then(|t| AttributeType::try_from(t).ok()) {
        Some(AttributeType::Int) => Value::Int(a.i.unwrap_or(0)),
        Some(AttributeType::Float) => Value::Float(a.f.unwrap_or(0.0)),
        _ => Value::Absent,
    }
}

fn show(v: Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Absent => "unset".into(),
    }
}

fn check_node(node: &NodeProto, opset: i64, cx: &Context<'_>, found: &mut Found) {
    let op = node.op_type.as_deref().unwrap_or("");
    if !matches!(node.domain.as_deref(), None | Some("") | Some("ai.onnx")) {
        found.push((
            Level::Reject,
            format!(
                "domain `{}`: ATC parses the default domain only",
                node.domain.as_deref().unwrap_or("")
            ),
        ));
        return;
    }
    // The parser maps `Constant` to a constant itself (no plugin).
    if op != "Constant" && !cann::registered(op).contains(&opset) {
        found.push((
            Level::Reject,
            format!("no parser registered for ai.onnx::{opset}::{op} (E16002)"),
        ));
        return;
    }
    if RUNTIME_SHAPE_OPS.contains(&op) {
        found.push((Level::Note, "computes shapes or control flow at run time: ATC folds it only when every shape is static (not with --dynamic_batch_size profiles)".into()));
    }
    let Some(plugin) = cann::plugin(op) else {
        return;
    };
    for attr in plugin.attributes {
        let set = attribute(node, attr.name);
        match attr.treatment {
            Treatment::Read => {}
            Treatment::Refused { allowed } => {
                if let Some(value) = set.map(value_of).filter(|v| *v != allowed) {
                    found.push((
                        Level::Reject,
                        format!(
                            "{} = {} is refused by the parser (only {})",
                            attr.name,
                            show(value),
                            show(allowed)
                        ),
                    ));
                }
            }
            Treatment::Ignored { onnx, device } => {
                let value = set.map_or(onnx, value_of);
                if value != device {
                    found.push((
                        Level::ChangesMeaning,
                        format!(
                            "{} = {} is not read; the device computes as if it were {}",
                            attr.name,
                            show(value),
                            show(device)
                        ),
                    ));
                }
            }
        }
    }
    for &k in plugin.constant_inputs {
        if let Some(input) = node.input.get(k).filter(|i| !i.is_empty()) {
            if !cx.constants.contains_key(input.as_str()) {
                found.push((
                    Level::Reject,
                    format!("input {k} (`{input}`) must be a constant (an initializer)"),
                ));
            }
        }
    }
    for &k in plugin.dropped_inputs {
        if let Some(input) = node.input.get(k).filter(|i| !i.is_empty()) {
            found.push((
                Level::ChangesMeaning,
                format!("input {k} (`{input}`) is not passed on; the device computes without it"),
            ));
        }
    }
    for &k in plugin.int32_outputs {
        if node.output.get(k).is_some_and(|o| !o.is_empty()) {
            found.push((
                Level::Note,
                format!("output {k} comes out int32, not int64"),
            ));
        }
    }
    match plugin.rule {
        Some(Rule::Resize) => resize(node, opset, cx, found),
        Some(Rule::KeptAxisAtOne) => kept_axis(node, cx, found),
        Some(Rule::AvgPoolAiCpu) => avg_pool(node, cx, found),
        Some(Rule::SoftmaxOneAxis) => softmax(node, op, opset, cx, found),
        None => {}
    }
}

/// `ArgMax`/`ArgMin`: the kept axis comes back at position 1.
fn kept_axis(node: &NodeProto, cx: &Context<'_>, found: &mut Found) {
    if int_attr(node, "keepdims").unwrap_or(1) == 0 {
        return;
    }
    let axis = int_attr(node, "axis").unwrap_or(0);
    let rank = node.input.first().and_then(|x| cx.rank(x));
    let axis = match (axis, rank) {
        (a, _) if a >= 0 => Some(a),
        (a, Some(r)) => Some(a + r as i64),
        _ => None,
    };
    match axis {
        Some(1) => {}
        Some(a) => found.push((
            Level::ChangesMeaning,
            format!("keepdims=1 on axis {a}: the parser re-inserts the reduced axis at position 1 (another output shape); reduce with keepdims=0 and Reshape"),
        )),
        None => found.push((
            Level::Note,
            "keepdims=1 on a negative axis of unknown rank: the parser re-inserts the reduced axis at position 1".into(),
        )),
    }
}

/// Whether an `AveragePool` runs on the AI CPU ([`Rule::AvgPoolAiCpu`]): a 1-D or 2-D
/// kernel of more than 255 elements or a stride above 63.
pub(super) fn on_ai_cpu(node: &NodeProto) -> bool {
    let kernel = ints_attr(node, "kernel_shape").unwrap_or_default();
    let strides = ints_attr(node, "strides").unwrap_or_default();
    let elements: i64 = kernel.iter().product();
    kernel.len() <= 2
        && (elements > cann::AI_CPU_KERNEL_ELEMENTS
            || strides.iter().any(|&s| s > cann::AI_CPU_STRIDE))
}

/// `AveragePool` on the AI CPU path.
fn avg_pool(node: &NodeProto, cx: &Context<'_>, found: &mut Found) {
    if !on_ai_cpu(node) {
        return;
    }
    let kernel = ints_attr(node, "kernel_shape").unwrap_or_default();
    let strides = ints_attr(node, "strides").unwrap_or_else(|| vec![1; kernel.len()]);
    let elements: i64 = kernel.iter().product();
    let pads = ints_attr(node, "pads").unwrap_or_default();
    let mut why = Vec::new();
    if int_attr(node, "count_include_pad").unwrap_or(0) == 0 && pads.iter().any(|&p| p != 0) {
        why.push("its zero padding is always counted (count_include_pad=0 ignored)".to_owned());
    }
    if !matches!(
        str_attr(node, "auto_pad").as_deref(),
        None | Some("NOTSET") | Some("VALID")
    ) {
        why.push("auto_pad is ignored (VALID)".to_owned());
    }
    if int_attr(node, "ceil_mode").unwrap_or(0) == 1 {
        let input = node.input.first().and_then(|x| cx.shape(x));
        let same = input.is_some_and(|shape| {
            let spatial = &shape[shape.len().saturating_sub(kernel.len())..];
            spatial.iter().enumerate().all(|(k, n)| {
                let Some(n) = n else { return false };
                let stride = strides.get(k).copied().unwrap_or(1);
                let padded =
                    n + pads.get(k).unwrap_or(&0) + pads.get(k + kernel.len()).unwrap_or(&0);
                (padded - kernel[k]) % stride == 0
            })
        });
        if !same {
            why.push("ceil_mode=1 is ignored (floor output sizes)".to_owned());
        }
    }
    if !why.is_empty() {
        found.push((
            Level::ChangesMeaning,
            format!(
                "kernel of {elements} elements, strides {strides:?}: runs on the AI CPU, where {}",
                why.join("; ")
            ),
        ));
    }
}

/// `Softmax`/`LogSoftmax` over one axis.
fn softmax(node: &NodeProto, op: &str, opset: i64, cx: &Context<'_>, found: &mut Found) {
    let rank = node
        .input
        .first()
        .and_then(|x| cx.rank(x))
        .map(|r| r as i64);
    let onnx_default = if opset >= 13 { -1 } else { 1 };
    let set = int_attr(node, "axis");
    let onnx_axis = set.unwrap_or(onnx_default);
    let device_axis = match (set, op) {
        (Some(a), _) => a,
        (None, "LogSoftmax") => -1,
        (None, _) => onnx_default,
    };
    let normal = |a: i64| rank.map(|r| if a < 0 { a + r } else { a });
    let (Some(onnx), Some(device), Some(r)) = (normal(onnx_axis), normal(device_axis), rank) else {
        if set.is_none() && op == "LogSoftmax" && opset < 13 {
            found.push((
                Level::Note,
                "axis not set: the parser uses −1, ONNX 1; equal only for 2-D inputs".into(),
            ));
        }
        return;
    };
    if onnx != device {
        found.push((
            Level::ChangesMeaning,
            format!("axis not set: the parser uses axis {device}, ONNX axis {onnx}"),
        ));
    } else if opset < 13 && onnx != r - 1 {
        let level = if op == "LogSoftmax" {
            Level::ChangesMeaning
        } else {
            Level::Note
        };
        found.push((
            level,
            format!("opset {opset} normalizes over axes {onnx}.. flattened; the device over axis {onnx} alone"),
        ));
    }
}

/// `Resize` as `ResizeNearestNeighborV2`/`ResizeBilinearV2` (see [`Rule::Resize`]).
fn resize(node: &NodeProto, opset: i64, cx: &Context<'_>, found: &mut Found) {
    let mode = str_attr(node, "mode").unwrap_or_else(|| "nearest".into());
    if mode != "nearest" && mode != "linear" {
        found.push((
            Level::Reject,
            format!("mode `{mode}`: the parser builds only nearest and linear resizes"),
        ));
        return;
    }
    if opset < 11 {
        return;
    }
    let coords =
        str_attr(node, "coordinate_transformation_mode").unwrap_or_else(|| "half_pixel".into());
    let nearest_mode =
        str_attr(node, "nearest_mode").unwrap_or_else(|| "round_prefer_floor".into());
    let input = node.input.first().and_then(|x| cx.shape(x));
    let output = node.output.first().and_then(|y| cx.shape(y));
    let scales = node
        .input
        .get(2)
        .filter(|s| !s.is_empty())
        .and_then(|s| cx.floats(s));
    let (Some(input), Some(output)) = (input, output) else {
        // Without shapes: linear on another grid than the device's is known to differ
        // wherever a size changes.
        let same_grid = matches!(
            coords.as_str(),
            "pytorch_half_pixel" | "align_corners" | "asymmetric"
        );
        let (level, what) = if mode == "linear" && !same_grid {
            (
                Level::ChangesMeaning,
                "the device resamples on the legacy grid dst·in/out wherever a size changes",
            )
        } else {
            (
                Level::Note,
                "shapes unknown, so the device's sampling was not compared",
            )
        };
        found.push((level, format!("{mode} `{coords}`: {what}")));
        return;
    };
    if input.len() != 4 || output.len() != 4 {
        found.push((
            Level::Reject,
            "the parser resizes 4-D NCHW inputs only".into(),
        ));
        return;
    }
    for axis in 2..4 {
        let (Some(n_in), Some(n_out)) = (input[axis], output[axis]) else {
            continue;
        };
        let scale = scales.as_ref().and_then(|s| s.get(axis).copied());
        if let Some(s) = scale {
            let sized = (n_in as f32 * s) as i64;
            if sized != n_out {
                found.push((
                    Level::ChangesMeaning,
                    format!("axis {axis}: ⌊{n_in} · {s}⌋ = {sized}, the declared size is {n_out}"),
                ));
                continue;
            }
        }
        let s = scale.unwrap_or(n_out as f32 / n_in as f32);
        if let Some(dst) = first_difference(&mode, &coords, &nearest_mode, n_in, n_out, s) {
            found.push((
                Level::ChangesMeaning,
                format!("axis {axis} ({n_in} → {n_out}), {mode} `{coords}`{}: output {dst} reads another place on the device (ResizeNearestNeighborV2/ResizeBilinearV2 with align_corners={}, half_pixel_centers={})",
                    if mode == "nearest" { format!(" `{nearest_mode}`") } else { String::new() },
                    coords == "align_corners", coords == "pytorch_half_pixel"),
            ));
        }
    }
}

/// The first output index where ONNX's `Resize` and the device's reading of it sample
/// differently (nearest: another index; linear: coordinates more than 1e-3 apart).
fn first_difference(
    mode: &str,
    coords: &str,
    nearest_mode: &str,
    n_in: i64,
    n_out: i64,
    scale: f32,
) -> Option<i64> {
    let (fin, fout) = (n_in as f32, n_out as f32);
    let onnx_coord = |x: f32| -> f32 {
        match coords {
            "half_pixel" => (x + 0.5) / scale - 0.5,
            "pytorch_half_pixel" if n_out > 1 => (x + 0.5) / scale - 0.5,
            "pytorch_half_pixel" => 0.0,
            "align_corners" if n_out > 1 => x * (fin - 1.0) / (fout - 1.0),
            "align_corners" => 0.0,
            "tf_half_pixel_for_nn" => (x + 0.5) / scale,
            _ => x / scale,
        }
    };
    let last = (n_in - 1) as f32;
    (0..n_out).find(|&dst| {
        let x = dst as f32;
        let device = device_source(mode == "nearest", coords, n_in, n_out, dst);
        if mode == "nearest" {
            let onnx = onnx_coord(x);
            let picked = match nearest_mode {
                "floor" => onnx.floor(),
                "ceil" => onnx.ceil(),
                "round_prefer_ceil" => (onnx + 0.5).floor(),
                _ => (onnx - 0.5).ceil(),
            };
            picked.clamp(0.0, last) != device
        } else {
            (onnx_coord(x).clamp(0.0, last) - device).abs() > 1e-3
        }
    })
}

/// Where output `dst` of an axis resized from `n_in` to `n_out` reads on the device
/// ([`Rule::Resize`]): ResizeNearestNeighborV2/ResizeBilinearV2 with `align_corners` for
/// the `align_corners` mode and half-pixel centres for `pytorch_half_pixel`, the ratio
/// `in/out` (or `(in−1)/(out−1)` with corners) in f32. Nearest: the source index;
/// linear: the source coordinate; both clamped to the input.
pub(super) fn device_source(nearest: bool, coords: &str, n_in: i64, n_out: i64, dst: i64) -> f32 {
    let (fin, fout, x) = (n_in as f32, n_out as f32, dst as f32);
    let align = coords == "align_corners";
    let half = coords == "pytorch_half_pixel";
    let ratio = if align && n_out > 1 {
        (fin - 1.0) / (fout - 1.0)
    } else {
        fin / fout
    };
    let at = if nearest && align {
        (x * ratio).round()
    } else if nearest && half {
        ((x + 0.5) * ratio).floor()
    } else if nearest {
        (x * ratio).floor()
    } else if half {
        (x + 0.5) * ratio - 0.5
    } else {
        x * ratio
    };
    at.clamp(0.0, (n_in - 1) as f32)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::proto::{
        tensor_shape_proto::Dimension, type_proto::Tensor, GraphProto, OperatorSetIdProto,
        TensorShapeProto, TypeProto, ValueInfoProto,
    };

    pub(crate) fn info(name: &str, dims: &[i64]) -> ValueInfoProto {
        let dim = dims
            .iter()
            .map(|&d| Dimension {
                value: Some(if d > 0 {
                    Dim::DimValue(d)
                } else {
                    Dim::DimParam("batch".into())
                }),
                ..Default::default()
            })
            .collect();
        ValueInfoProto {
            name: Some(name.into()),
            r#type: Some(TypeProto {
                value: Some(type_proto::Value::TensorType(Tensor {
                    elem_type: Some(1),
                    shape: Some(TensorShapeProto { dim }),
                })),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    pub(crate) fn int(name: &str, i: i64) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            i: Some(i),
            r#type: Some(AttributeType::Int as i32),
            ..Default::default()
        }
    }

    pub(crate) fn ints(name: &str, v: &[i64]) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            ints: v.to_vec(),
            r#type: Some(AttributeType::Ints as i32),
            ..Default::default()
        }
    }

    pub(crate) fn string(name: &str, s: &str) -> AttributeProto {
        AttributeProto {
            name: Some(name.into()),
            s: Some(s.as_bytes().to_vec()),
            r#type: Some(AttributeType::String as i32),
            ..Default::default()
        }
    }

    pub(crate) fn node(op: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
        NodeProto {
            name: Some(format!("/{op}")),
            op_type: Some(op.into()),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec!["y".into()],
            attribute: attrs,
            ..Default::default()
        }
    }

    fn scales(name: &str, values: &[f32]) -> TensorProto {
        TensorProto {
            name: Some(name.into()),
            dims: vec![values.len() as i64],
            data_type: Some(DataType::Float as i32),
            float_data: values.to_vec(),
            ..Default::default()
        }
    }

    /// One node from `x` (shape `input`) to `y` (shape `output`) at `opset`.
    pub(crate) fn model(n: NodeProto, input: &[i64], output: &[i64], opset: i64) -> ModelProto {
        ModelProto {
            opset_import: vec![OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(opset),
            }],
            graph: Some(GraphProto {
                node: vec![n],
                input: vec![info("x", input)],
                output: vec![info("y", output)],
                initializer: vec![
                    scales("scales", &[1.0, 1.0, 2.0, 2.0]),
                    scales("scales3", &[1.0, 1.0, 3.0, 3.0]),
                ],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    pub(crate) fn levels(m: &ModelProto) -> Vec<(Level, String)> {
        check(m, &cann::GENERATIONS[0])
            .findings
            .into_iter()
            .map(|f| (f.level, f.message))
            .collect()
    }

    #[test]
    fn kept_arg_axes_other_than_1_change_meaning() {
        let on = |axis, keep| {
            let n = node(
                "ArgMax",
                &["x"],
                vec![int("axis", axis), int("keepdims", keep)],
            );
            levels(&model(n, &[0, 3, 5, 7], &[0, 3, 1, 7], 11))
        };
        assert!(on(1, 1).is_empty());
        assert!(on(2, 0).is_empty());
        let found = on(2, 1);
        assert_eq!(found[0].0, Level::ChangesMeaning, "{found:?}");
        assert!(found[0].1.contains("position 1"));
        // −3 of a rank-4 input is axis 1.
        assert!(on(-3, 1).is_empty());
        let n = node("ArgMax", &["x"], vec![int("select_last_index", 1)]);
        let found = levels(&model(n, &[0, 3], &[0, 1], 11));
        assert!(found
            .iter()
            .any(|(l, m)| *l == Level::Reject && m.contains("select_last_index")));
    }

    #[test]
    fn resize_modes_are_read_as_the_parser_reads_them() {
        let resize = |mode: &str, coords: &str, input: &[i64], output: &[i64]| {
            let attrs = vec![
                string("mode", mode),
                string("coordinate_transformation_mode", coords),
            ];
            levels(&model(
                node("Resize", &["x", "", "scales"], attrs),
                input,
                output,
                11,
            ))
        };
        let up = ([0, 3, 4, 4], [0, 3, 8, 8]);
        assert!(resize("linear", "pytorch_half_pixel", &up.0, &up.1).is_empty());
        assert!(resize("linear", "align_corners", &up.0, &up.1).is_empty());
        // half_pixel: the legacy grid on the device.
        let found = resize("linear", "half_pixel", &up.0, &up.1);
        assert_eq!(found[0].0, Level::ChangesMeaning, "{found:?}");
        let found = resize("cubic", "pytorch_half_pixel", &up.0, &up.1);
        assert_eq!(found[0].0, Level::Reject);
        // nearest_mode is never read: the default round_prefer_floor of asymmetric reads
        // sample 1 for output 2 of 4 → 12 (2/3 rounds up), the device's floor sample 0.
        let mut attrs = vec![
            string("mode", "nearest"),
            string("coordinate_transformation_mode", "asymmetric"),
        ];
        let three = ([0, 3, 4, 4], [0, 3, 12, 12]);
        let n = node("Resize", &["x", "", "scales3"], attrs.clone());
        let found = levels(&model(n, &three.0, &three.1, 11));
        assert_eq!(found[0].0, Level::ChangesMeaning, "{found:?}");
        attrs.push(string("nearest_mode", "floor"));
        let n = node("Resize", &["x", "", "scales3"], attrs);
        assert!(levels(&model(n, &three.0, &three.1, 11)).is_empty());
        // Scales computed at run time.
        let n = node(
            "Resize",
            &["x", "", "computed"],
            vec![string("mode", "linear")],
        );
        let found = levels(&model(n, &up.0, &up.1, 11));
        assert!(found
            .iter()
            .any(|(l, m)| *l == Level::Reject && m.contains("constant")));
    }

    #[test]
    fn big_average_pools_change_meaning_only_where_the_ai_cpu_differs() {
        let pool = |pad, include, ceil| {
            let attrs = vec![
                ints("kernel_shape", &[16, 16]),
                ints("pads", &[pad; 4]),
                int("count_include_pad", include),
                int("ceil_mode", ceil),
            ];
            levels(&model(
                node("AveragePool", &["x"], attrs),
                &[0, 2, 40, 40],
                &[0, 2, 29, 29],
                11,
            ))
        };
        assert!(pool(2, 1, 0).is_empty());
        assert!(pool(0, 0, 0).is_empty());
        assert_eq!(pool(2, 0, 0)[0].0, Level::ChangesMeaning);
        // 40 + 4 − 16 = 28: ceil adds no window at stride 1.
        assert!(pool(2, 1, 1).is_empty());
    }

    #[test]
    fn ignored_attributes_and_model_rules() {
        let gemm = node(
            "Gemm",
            &["x", "w"],
            vec![AttributeProto {
                name: Some("alpha".into()),
                f: Some(2.0),
                r#type: Some(AttributeType::Float as i32),
                ..Default::default()
            }],
        );
        let found = levels(&model(gemm, &[0, 4], &[0, 4], 11));
        assert!(found[0].1.contains("alpha = 2"), "{found:?}");
        // GRU without linear_before_reset: ONNX's 0, the device's 1.
        let found = levels(&model(node("GRU", &["x"], vec![]), &[0, 4], &[0, 4], 11));
        assert_eq!(found[0].0, Level::ChangesMeaning);
        // No parser for HardSwish at opset 11; opset 17 is not 2022's but is 8.3's.
        let m = model(node("HardSwish", &["x"], vec![]), &[0, 4], &[0, 4], 11);
        assert!(levels(&m)[0].1.contains("E16002"));
        let mut m = model(node("Relu", &["x"], vec![]), &[0, 4], &[0, 4], 17);
        assert!(!check(&m, &cann::GENERATIONS[0]).passes());
        let later = cann::generation("8.3").unwrap();
        assert!(check(&m, later)
            .findings
            .iter()
            .all(|f| !f.message.contains("opset 17")));
        m.opset_import.push(OperatorSetIdProto {
            domain: Some("com.microsoft".into()),
            version: Some(1),
        });
        assert!(levels(&m).iter().any(|(_, msg)| msg.contains("E16005")));
        let report = check(
            &model(node("Relu", &["x"], vec![]), &[0, 4], &[0, 4], 11),
            &cann::GENERATIONS[0],
        );
        assert!(report.passes());
        assert_eq!(report.unmodelled, ["Relu"]);
    }
}
