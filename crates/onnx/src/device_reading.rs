//! The device reading of an ONNX model: the same model with each node replaced by ONNX
//! nodes that compute what ATC's parser turns it into, from the rows of [`super::cann`]
//! (the table `atc-check` and `docs/atc.md` read). Run in any ONNX runtime, it gives what
//! the `.om` would compute, so it can be compared with the model's reference (torch).
//!
//! What is read differently: attributes the plugin ignores are set to the device's value
//! (or dropped), inputs it does not pass on are dropped, int32 outputs are cast, and each
//! [`Rule`] is written out: `ArgMax`/`ArgMin` with `keepdims=1` reduce and put the axis back
//! at 1, `Softmax`/`LogSoftmax` normalize over the device's one axis, an `AveragePool` on
//! the AI CPU pads with counted zeros and pools VALID without `ceil_mode`, and `Resize`
//! samples where ResizeNearestNeighborV2/ResizeBilinearV2 do (a `Gather` by the constant
//! source indices, or a `MatMul` by the constant interpolation matrix, per axis). A node the
//! parser rejects, or whose device meaning ONNX cannot express here (a `Resize` whose
//! input height and width are not declared), is an error naming the node: a reading is
//! never partial.

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;

use super::atc_check::{
    attribute, check, device_source, int_attr, ints_attr, on_ai_cpu, str_attr, value_of, Context,
    Finding, Level,
};
use super::cann::{self, Generation, Rule, Treatment, Value};
use super::proto::{
    attribute_proto::AttributeType, tensor_proto::DataType, type_proto, AttributeProto, ModelProto,
    NodeProto, TensorProto,
};

/// A model's device reading and what it reads differently.
#[derive(Debug)]
pub struct Reading {
    /// The model with every node replaced by its device reading.
    pub model: ModelProto,
    /// The nodes read differently, in graph order.
    pub changed: Vec<Change>,
}

/// One node read differently from its ONNX meaning (or re-expressed in the device's form).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The node's name.
    pub node: String,
    /// Its op type.
    pub op: String,
    /// How the device reads it, for users.
    pub reading: String,
}

/// Why a model has no device reading.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadingError {
    /// ATC stops on the model (the first rejection `atc-check` finds).
    Rejected(Finding),
    /// A node whose device meaning this reading cannot write in ONNX.
    Unexpressed {
        /// The node's name.
        node: String,
        /// Its op type.
        op: String,
        /// What cannot be written.
        why: String,
    },
}

impl fmt::Display for ReadingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadingError::Rejected(finding) => {
                write!(f, "no device reading: ATC rejects the model: {finding}")
            }
            ReadingError::Unexpressed { node, op, why } => write!(
                f,
                "no device reading: {node} ({op}): its device meaning is not expressed: {why}"
            ),
        }
    }
}

/// The device reading of `model` under generation `cann` of the parser.
pub fn read(model: &ModelProto, cann: &'static Generation) -> Result<Reading, ReadingError> {
    let report = check(model, cann);
    if let Some(finding) = report.findings.iter().find(|f| f.level == Level::Reject) {
        return Err(ReadingError::Rejected(finding.clone()));
    }
    let mut out = model.clone();
    let Some(graph) = model.graph.as_ref() else {
        return Ok(Reading {
            model: out,
            changed: Vec::new(),
        });
    };
    let cx = Context::of(graph);
    let mut emit = Emit {
        opset: report.opset.unwrap_or(0),
        taken: graph
            .node
            .iter()
            .flat_map(|n| n.input.iter().chain(&n.output))
            .chain(graph.initializer.iter().filter_map(|t| t.name.as_ref()))
            .chain(graph.input.iter().filter_map(|v| v.name.as_ref()))
            .cloned()
            .collect(),
        nodes: Vec::new(),
        initializers: Vec::new(),
        int32: HashSet::new(),
    };
    let graph_outputs: HashSet<&str> = graph
        .output
        .iter()
        .filter_map(|o| o.name.as_deref())
        .collect();
    let mut changed = Vec::new();
    let mut touched: HashSet<String> = HashSet::new();
    let mut replaced_inputs: HashSet<String> = HashSet::new();
    for (k, node) in graph.node.iter().enumerate() {
        let label = node
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("node {k}"));
        let op = node.op_type.clone().unwrap_or_default();
        let start = emit.nodes.len();
        match read_node(node, &label, &cx, &graph_outputs, &mut emit) {
            Ok(what) if what.is_empty() => emit.nodes.push(node.clone()),
            Ok(what) => {
                touched.extend(node.output.iter().cloned());
                replaced_inputs.extend(node.input.iter().cloned());
                changed.push(Change {
                    node: label,
                    op,
                    reading: what.join("; "),
                });
            }
            Err(why) => {
                return Err(ReadingError::Unexpressed {
                    node: label,
                    op,
                    why,
                })
            }
        }
        debug_assert!(emit.nodes.len() > start);
    }
    if let Some(g) = out.graph.as_mut() {
        g.node = std::mem::take(&mut emit.nodes);
        g.initializer.append(&mut emit.initializers);
        // Constants only a replaced node read (a Resize's scales) go with it.
        let used: HashSet<&str> = g
            .node
            .iter()
            .flat_map(|n| &n.input)
            .chain(
                g.input
                    .iter()
                    .chain(&g.output)
                    .filter_map(|v| v.name.as_ref()),
            )
            .map(String::as_str)
            .collect();
        let kept: Vec<TensorProto> = std::mem::take(&mut g.initializer)
            .into_iter()
            .filter(|t| {
                t.name
                    .as_deref()
                    .is_some_and(|n| used.contains(n) || !replaced_inputs.contains(n))
            })
            .collect();
        g.initializer = kept;
        g.value_info
            .retain(|v| !v.name.as_ref().is_some_and(|n| touched.contains(n)));
        for o in &mut g.output {
            let Some(name) = o.name.as_deref().filter(|n| touched.contains(*n)) else {
                continue;
            };
            let int32 = emit.int32.contains(name);
            if let Some(type_proto::Value::TensorType(t)) =
                o.r#type.as_mut().and_then(|t| t.value.as_mut())
            {
                t.shape = None;
                if int32 {
                    t.elem_type = Some(DataType::Int32 as i32);
                }
            }
        }
    }
    Ok(Reading {
        model: out,
        changed,
    })
}

/// The nodes and constants a reading writes, with fresh names.
struct Emit {
    opset: i64,
    taken: HashSet<String>,
    nodes: Vec<NodeProto>,
    initializers: Vec<TensorProto>,
    /// Graph outputs that come out int32.
    int32: HashSet<String>,
}

impl Emit {
    fn fresh(&mut self, label: &str) -> String {
        let mut k = self.taken.len();
        loop {
            let name = format!("{label}/device{k}");
            if self.taken.insert(name.clone()) {
                return name;
            }
            k += 1;
        }
    }

    fn ints(&mut self, label: &str, dims: Vec<i64>, values: Vec<i64>) -> String {
        self.initializer(
            label,
            TensorProto {
                dims,
                data_type: Some(DataType::Int64 as i32),
                int64_data: values,
                ..Default::default()
            },
        )
    }

    fn floats(&mut self, label: &str, dims: Vec<i64>, values: Vec<f32>) -> String {
        self.initializer(
            label,
            TensorProto {
                dims,
                data_type: Some(DataType::Float as i32),
                float_data: values,
                ..Default::default()
            },
        )
    }

    /// Initializer `tensor` added under a fresh name from `label`, which it returns.
    fn initializer(&mut self, label: &str, tensor: TensorProto) -> String {
        let name = self.fresh(label);
        self.initializers.push(TensorProto {
            name: Some(name.clone()),
            ..tensor
        });
        name
    }

    /// A node `op(inputs) → output` with `attributes`.
    fn node(
        &mut self,
        label: &str,
        op: &str,
        inputs: Vec<String>,
        output: String,
        attributes: Vec<AttributeProto>,
    ) {
        let name = self.fresh(label);
        self.nodes.push(NodeProto {
            name: Some(name),
            op_type: Some(op.into()),
            input: inputs,
            output: vec![output],
            attribute: attributes,
            ..Default::default()
        });
    }
}

fn int_attribute(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        i: Some(i),
        r#type: Some(AttributeType::Int as i32),
        ..Default::default()
    }
}

fn ints_attribute(name: &str, v: Vec<i64>) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        ints: v,
        r#type: Some(AttributeType::Ints as i32),
        ..Default::default()
    }
}

/// Sets (or, for `None`, removes) attribute `name` of `node`.
fn set_attribute(node: &mut NodeProto, name: &str, value: Option<AttributeProto>) {
    node.attribute.retain(|a| a.name.as_deref() != Some(name));
    node.attribute.extend(value);
}

fn show(v: Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Absent => "unset".into(),
    }
}

/// Reads one node into `emit`: what it reads differently (empty: the node as it is, nothing
/// emitted), or why its device meaning cannot be written.
fn read_node(
    node: &NodeProto,
    label: &str,
    cx: &Context<'_>,
    graph_outputs: &HashSet<&str>,
    emit: &mut Emit,
) -> Result<Vec<String>, String> {
    let Some(plugin) = node.op_type.as_deref().and_then(cann::plugin) else {
        return Ok(Vec::new());
    };
    let mut n = node.clone();
    let mut what = Vec::new();
    for attr in plugin.attributes {
        let Treatment::Ignored { onnx, device } = attr.treatment else {
            continue;
        };
        let value = attribute(node, attr.name).map_or(onnx, value_of);
        if value == device {
            continue;
        }
        let set = match device {
            _ if device == onnx => None,
            Value::Int(i) => Some(int_attribute(attr.name, i)),
            Value::Float(f) => Some(AttributeProto {
                name: Some(attr.name.into()),
                f: Some(f),
                r#type: Some(AttributeType::Float as i32),
                ..Default::default()
            }),
            Value::Absent => None,
        };
        set_attribute(&mut n, attr.name, set);
        what.push(format!(
            "{} = {} read as {}",
            attr.name,
            show(value),
            show(device)
        ));
    }
    for &k in plugin.dropped_inputs {
        if let Some(input) = n.input.get_mut(k).filter(|i| !i.is_empty()) {
            what.push(format!("input {k} (`{input}`) dropped"));
            input.clear();
        }
    }
    while n.input.last().is_some_and(String::is_empty) {
        n.input.pop();
    }
    let mut nodes = match plugin.rule {
        Some(Rule::KeptAxisAtOne) => kept_axis(n, label, cx, emit, &mut what)?,
        Some(Rule::AvgPoolAiCpu) => avg_pool(n, label, emit, &mut what),
        Some(Rule::SoftmaxOneAxis) => softmax(n, label, cx, emit, &mut what)?,
        Some(Rule::Resize) => resize(n, label, cx, emit, &mut what)?,
        None => vec![n],
    };
    for &k in plugin.int32_outputs {
        let Some(output) = node.output.get(k).filter(|o| !o.is_empty()) else {
            continue;
        };
        let raw = emit.fresh(label);
        for m in &mut nodes {
            for o in m.output.iter_mut().filter(|o| *o == output) {
                o.clone_from(&raw);
            }
        }
        let cast = |to: DataType| vec![int_attribute("to", to as i64)];
        let start = emit.nodes.len();
        if graph_outputs.contains(output.as_str()) {
            emit.node(
                label,
                "Cast",
                vec![raw],
                output.clone(),
                cast(DataType::Int32),
            );
            emit.int32.insert(output.clone());
        } else {
            let narrow = emit.fresh(label);
            emit.node(
                label,
                "Cast",
                vec![raw],
                narrow.clone(),
                cast(DataType::Int32),
            );
            emit.node(
                label,
                "Cast",
                vec![narrow],
                output.clone(),
                cast(DataType::Int64),
            );
        }
        let casts: Vec<NodeProto> = emit.nodes.drain(start..).collect();
        nodes.extend(casts);
        what.push(format!("output {k} as int32 (Cast)"));
    }
    if !what.is_empty() {
        emit.nodes.append(&mut nodes);
    }
    Ok(what)
}

/// `Unsqueeze(x, [axis]) → output`, by attribute or (opset 13 on) by input.
fn unsqueeze(emit: &mut Emit, label: &str, x: String, axis: i64, output: String) {
    if emit.opset >= 13 {
        let axes = emit.ints(label, vec![1], vec![axis]);
        emit.node(label, "Unsqueeze", vec![x, axes], output, vec![]);
    } else {
        let attrs = vec![ints_attribute("axes", vec![axis])];
        emit.node(label, "Unsqueeze", vec![x], output, attrs);
    }
}

/// Moves the nodes `emit` holds from `start` on out of it (they belong to one node's
/// reading, which `read_node` appends whole).
fn take_from(emit: &mut Emit, start: usize) -> Vec<NodeProto> {
    emit.nodes.drain(start..).collect()
}

/// [`Rule::KeptAxisAtOne`]: `keepdims=1` reduces and puts the axis back at position 1.
fn kept_axis(
    mut n: NodeProto,
    label: &str,
    cx: &Context<'_>,
    emit: &mut Emit,
    what: &mut Vec<String>,
) -> Result<Vec<NodeProto>, String> {
    if int_attr(&n, "keepdims").unwrap_or(1) == 0 {
        return Ok(vec![n]);
    }
    let axis = int_attr(&n, "axis").unwrap_or(0);
    let rank = n.input.first().and_then(|x| cx.rank(x));
    let normal = if axis >= 0 {
        Some(axis)
    } else {
        rank.map(|r| axis + r as i64)
    };
    if normal == Some(1) {
        return Ok(vec![n]);
    }
    if rank == Some(1) {
        return Err("keepdims=1 of a 1-D input: the device expands a scalar at axis 1".into());
    }
    let Some(output) = n.output.first().cloned() else {
        return Ok(vec![n]);
    };
    let start = emit.nodes.len();
    let reduced = emit.fresh(label);
    set_attribute(&mut n, "keepdims", Some(int_attribute("keepdims", 0)));
    n.output[0].clone_from(&reduced);
    emit.nodes.push(n);
    unsqueeze(emit, label, reduced, 1, output);
    what.push(format!(
        "keepdims=1 on axis {axis}: reduced, the axis put back at position 1"
    ));
    Ok(take_from(emit, start))
}

/// [`Rule::AvgPoolAiCpu`]: on the AI CPU, zero padding counted, VALID, no `ceil_mode`.
fn avg_pool(n: NodeProto, label: &str, emit: &mut Emit, what: &mut Vec<String>) -> Vec<NodeProto> {
    if !on_ai_cpu(&n) {
        return vec![n];
    }
    let kernel = ints_attr(&n, "kernel_shape").unwrap_or_default();
    let d = kernel.len();
    let strides = ints_attr(&n, "strides").unwrap_or_else(|| vec![1; d]);
    let pads = ints_attr(&n, "pads")
        .filter(|p| p.len() == 2 * d)
        .unwrap_or_else(|| vec![0; 2 * d]);
    let (Some(x), Some(output)) = (n.input.first().cloned(), n.output.first().cloned()) else {
        return vec![n];
    };
    let start = emit.nodes.len();
    let pooled_input = if pads.iter().any(|&p| p != 0) {
        // Every axis of an N, C, spatial… input: nothing before the spatial axes.
        let mut full = vec![0, 0];
        full.extend_from_slice(&pads[..d]);
        full.extend([0, 0]);
        full.extend_from_slice(&pads[d..]);
        let padded = emit.fresh(label);
        if emit.opset >= 11 {
            let p = emit.ints(label, vec![full.len() as i64], full);
            emit.node(label, "Pad", vec![x, p], padded.clone(), vec![]);
        } else {
            emit.node(
                label,
                "Pad",
                vec![x],
                padded.clone(),
                vec![ints_attribute("pads", full)],
            );
        }
        padded
    } else {
        x
    };
    let attrs = vec![
        ints_attribute("kernel_shape", kernel.clone()),
        ints_attribute("strides", strides.clone()),
    ];
    emit.node(label, "AveragePool", vec![pooled_input], output, attrs);
    what.push(format!(
        "on the AI CPU (kernel {kernel:?}, strides {strides:?}): zero padding {pads:?} counted, VALID, no ceil_mode"
    ));
    take_from(emit, start)
}

/// [`Rule::SoftmaxOneAxis`]: normalized over the device's one axis.
fn softmax(
    mut n: NodeProto,
    label: &str,
    cx: &Context<'_>,
    emit: &mut Emit,
    what: &mut Vec<String>,
) -> Result<Vec<NodeProto>, String> {
    let op = n.op_type.clone().unwrap_or_default();
    let opset = emit.opset;
    let onnx_default = if opset >= 13 { -1 } else { 1 };
    let set = int_attr(&n, "axis");
    let onnx_axis = set.unwrap_or(onnx_default);
    let device_axis = match (set, op.as_str()) {
        (Some(a), _) => a,
        (None, "LogSoftmax") => -1,
        (None, _) => onnx_default,
    };
    let rank = n.input.first().and_then(|x| cx.rank(x)).map(|r| r as i64);
    let Some(r) = rank else {
        // From opset 13 ONNX reads one axis too; before, the last axis alone is one axis.
        return if opset >= 13 && onnx_axis == device_axis || onnx_axis == -1 && device_axis == -1 {
            Ok(vec![n])
        } else {
            Err(format!("axis {device_axis} of an input of undeclared rank"))
        };
    };
    let normal = |a: i64| if a < 0 { a + r } else { a };
    let (onnx, device) = (normal(onnx_axis), normal(device_axis));
    let same = onnx == device && (opset >= 13 || onnx == r - 1);
    if same {
        return Ok(vec![n]);
    }
    what.push(format!("normalized over axis {device} alone"));
    if opset >= 13 || device == r - 1 {
        set_attribute(&mut n, "axis", Some(int_attribute("axis", device)));
        return Ok(vec![n]);
    }
    let (Some(x), Some(output)) = (n.input.first().cloned(), n.output.first().cloned()) else {
        return Ok(vec![n]);
    };
    let mut perm: Vec<i64> = (0..r).collect();
    perm.swap(device as usize, (r - 1) as usize);
    let start = emit.nodes.len();
    let moved = emit.fresh(label);
    let perm_attr = || vec![ints_attribute("perm", perm.clone())];
    emit.node(label, "Transpose", vec![x], moved.clone(), perm_attr());
    let normalized = emit.fresh(label);
    n.input[0] = moved;
    n.output[0].clone_from(&normalized);
    set_attribute(&mut n, "axis", Some(int_attribute("axis", -1)));
    emit.nodes.push(n);
    emit.node(label, "Transpose", vec![normalized], output, perm_attr());
    Ok(take_from(emit, start))
}

/// [`Rule::Resize`]: each of height and width sampled where the device samples, by constant
/// source indices (nearest) or a constant interpolation matrix (linear).
fn resize(
    n: NodeProto,
    label: &str,
    cx: &Context<'_>,
    emit: &mut Emit,
    what: &mut Vec<String>,
) -> Result<Vec<NodeProto>, String> {
    if emit.opset < 11 {
        return Err("Resize before opset 11 is not modelled".into());
    }
    let mode = str_attr(&n, "mode").unwrap_or_else(|| "nearest".into());
    let nearest = mode == "nearest";
    let coords =
        str_attr(&n, "coordinate_transformation_mode").unwrap_or_else(|| "half_pixel".into());
    let (Some(x), Some(output)) = (n.input.first().cloned(), n.output.first().cloned()) else {
        return Ok(vec![n]);
    };
    let input: Vec<Option<i64>> = cx.shape(&x).map(<[_]>::to_vec).unwrap_or_default();
    let (Some(&Some(h)), Some(&Some(w)), 4) = (input.get(2), input.get(3), input.len()) else {
        return Err(format!(
            "the height and width of `{x}` are not declared (run ONNX shape inference first)"
        ));
    };
    if !nearest && cx.elem(&x) != Some(DataType::Float as i32) {
        return Err(format!("linear resize of `{x}`, not declared float32"));
    }
    let scales = n
        .input
        .get(2)
        .filter(|s| !s.is_empty())
        .and_then(|s| cx.floats(s));
    let sizes = n
        .input
        .get(3)
        .filter(|s| !s.is_empty())
        .and_then(|s| cx.ints(s));
    let out: Vec<i64> = match (&scales, &sizes) {
        (Some(s), _) if s.len() == 4 => vec![(h as f32 * s[2]) as i64, (w as f32 * s[3]) as i64],
        (_, Some(s)) if s.len() == 4 => s[2..].to_vec(),
        _ => return Err("neither constant scales nor sizes of rank 4".into()),
    };
    if out.iter().any(|&o| o < 1) {
        return Err(format!("output size {out:?}"));
    }
    let (ho, wo) = (out[0], out[1]);
    let start = emit.nodes.len();
    let mut current = x;
    let axes: Vec<(i64, i64, i64)> = [(2, h, ho), (3, w, wo)]
        .into_iter()
        .filter(|&(_, a, b)| a != b)
        .collect();
    for (k, &(axis, n_in, n_out)) in axes.iter().enumerate() {
        let target = if k + 1 == axes.len() {
            output.clone()
        } else {
            emit.fresh(label)
        };
        let sources = (0..n_out).map(|dst| device_source(nearest, &coords, n_in, n_out, dst));
        if nearest {
            let indices = emit.ints(label, vec![n_out], sources.map(|s| s as i64).collect());
            let attrs = vec![int_attribute("axis", axis)];
            emit.node(
                label,
                "Gather",
                vec![current, indices],
                target.clone(),
                attrs,
            );
        } else {
            // Row `dst` of the (n_out × n_in) matrix holds the two taps' weights.
            let mut m = vec![0f32; (n_out * n_in) as usize];
            for (dst, c) in sources.enumerate() {
                let lo = c.floor();
                let hi = (lo + 1.0).min((n_in - 1) as f32);
                let frac = c - lo;
                let row = dst * n_in as usize;
                m[row + lo as usize] += 1.0 - frac;
                m[row + hi as usize] += frac;
            }
            let inputs = if axis == 2 {
                let m = emit.floats(label, vec![n_out, n_in], m);
                vec![m, current]
            } else {
                let mut t = vec![0f32; m.len()];
                for (i, v) in m.iter().enumerate() {
                    let (dst, src) = (i / n_in as usize, i % n_in as usize);
                    t[src * n_out as usize + dst] = *v;
                }
                let t = emit.floats(label, vec![n_in, n_out], t);
                vec![current, t]
            };
            emit.node(label, "MatMul", inputs, target.clone(), vec![]);
        }
        current = target;
    }
    if axes.is_empty() {
        return Ok(vec![n]);
    }
    what.push(format!(
        "{} with align_corners={}, half_pixel_centers={}: {h}×{w} → {ho}×{wo}, sampled as the device samples ({} per axis)",
        if nearest { "ResizeNearestNeighborV2" } else { "ResizeBilinearV2" },
        coords == "align_corners",
        coords == "pytorch_half_pixel",
        if nearest { "Gather by source index" } else { "MatMul by interpolation matrix" },
    ));
    Ok(take_from(emit, start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atc_check::tests::{int, ints, levels, model, node, string};

    fn reading(m: &ModelProto) -> Reading {
        read(m, &cann::GENERATIONS[0]).unwrap()
    }

    fn ops(r: &Reading) -> Vec<String> {
        let g = r.model.graph.as_ref().unwrap();
        g.node.iter().map(|n| n.op_type.clone().unwrap()).collect()
    }

    fn attr_of<'a>(r: &'a Reading, op: &str, name: &str) -> Option<&'a AttributeProto> {
        let g = r.model.graph.as_ref().unwrap();
        let n = g.node.iter().find(|n| n.op_type.as_deref() == Some(op))?;
        attribute(n, name)
    }

    /// Every node `atc-check` says changes meaning is read differently, and a model it
    /// passes without notes is its own reading.
    fn agrees_with_the_check(m: &ModelProto) -> Reading {
        let r = reading(m);
        let changes = levels(m)
            .iter()
            .any(|(level, _)| *level == Level::ChangesMeaning);
        if changes {
            assert!(!r.changed.is_empty(), "{:?}", levels(m));
        }
        if levels(m).is_empty() {
            assert!(r.changed.is_empty(), "{:?}", r.changed);
            assert_eq!(&r.model, m);
        }
        r
    }

    #[test]
    fn ignored_attributes_take_the_devices_value_and_dropped_inputs_go() {
        let alpha = AttributeProto {
            name: Some("alpha".into()),
            f: Some(2.0),
            r#type: Some(AttributeType::Float as i32),
            ..Default::default()
        };
        let r = agrees_with_the_check(&model(
            node("Gemm", &["x", "x"], vec![alpha, int("transB", 1)]),
            &[0, 4],
            &[0, 4],
            11,
        ));
        assert!(attr_of(&r, "Gemm", "alpha").is_none());
        assert!(attr_of(&r, "Gemm", "transB").is_some());
        assert!(r.changed[0].reading.contains("alpha = 2 read as 1"));
        let r = agrees_with_the_check(&model(node("GRU", &["x"], vec![]), &[0, 4], &[0, 4], 11));
        assert_eq!(
            attr_of(&r, "GRU", "linear_before_reset").unwrap().i,
            Some(1)
        );
        let clip = AttributeProto {
            name: Some("clip".into()),
            f: Some(3.0),
            r#type: Some(AttributeType::Float as i32),
            ..Default::default()
        };
        let lstm = node(
            "LSTM",
            &["x", "w", "r", "", "", "", "", "p"],
            vec![clip, int("input_forget", 1)],
        );
        let r = agrees_with_the_check(&model(lstm, &[0, 4], &[0, 4], 11));
        let g = r.model.graph.as_ref().unwrap();
        assert_eq!(g.node[0].input, ["x", "w", "r"]);
        assert!(g.node[0].attribute.is_empty(), "{:?}", g.node[0].attribute);
    }

    #[test]
    fn kept_arg_axes_reduce_and_come_back_at_1_and_arg_min_is_int32() {
        let argmax = |axis| node("ArgMax", &["x"], vec![int("axis", axis)]);
        let r = agrees_with_the_check(&model(argmax(1), &[0, 3, 5, 7], &[0, 1, 5, 7], 11));
        assert!(r.changed.is_empty());
        let r = agrees_with_the_check(&model(argmax(-1), &[0, 3, 5, 7], &[0, 3, 5, 1], 11));
        assert_eq!(ops(&r), ["ArgMax", "Unsqueeze"]);
        assert_eq!(attr_of(&r, "ArgMax", "keepdims").unwrap().i, Some(0));
        assert_eq!(attr_of(&r, "Unsqueeze", "axes").unwrap().ints, [1]);
        // The declared output shape is the ONNX one: dropped.
        let g = r.model.graph.as_ref().unwrap();
        let Some(type_proto::Value::TensorType(t)) = &g.output[0].r#type.as_ref().unwrap().value
        else {
            panic!()
        };
        assert!(t.shape.is_none());
        // Opset 13: the axes as an input.
        let r = reading(&model(argmax(2), &[0, 3, 5, 7], &[0, 3, 1, 7], 13));
        assert_eq!(r.model.graph.as_ref().unwrap().node[1].input.len(), 2);
        let argmin = node("ArgMin", &["x"], vec![int("axis", 1)]);
        let r = agrees_with_the_check(&model(argmin, &[0, 3, 5], &[0, 1, 5], 11));
        assert_eq!(ops(&r), ["ArgMin", "Cast"]);
        let g = r.model.graph.as_ref().unwrap();
        let Some(type_proto::Value::TensorType(t)) = &g.output[0].r#type.as_ref().unwrap().value
        else {
            panic!()
        };
        assert_eq!(t.elem_type, Some(DataType::Int32 as i32));
        let err = read(&model(argmax(0), &[7], &[1], 11), &cann::GENERATIONS[0]).unwrap_err();
        assert!(err.to_string().contains("/ArgMax (ArgMax)"), "{err}");
    }

    #[test]
    fn ai_cpu_average_pools_pad_with_counted_zeros_and_pool_valid() {
        let pool = |kernel: i64, pad: i64| {
            let attrs = vec![
                ints("kernel_shape", &[kernel, kernel]),
                ints("pads", &[pad, pad, pad + 1, pad + 1]),
                int("count_include_pad", 0),
                int("ceil_mode", 1),
            ];
            model(
                node("AveragePool", &["x"], attrs),
                &[0, 2, 40, 40],
                &[0, 2, 30, 30],
                11,
            )
        };
        let r = agrees_with_the_check(&pool(16, 2));
        assert_eq!(ops(&r), ["Pad", "AveragePool"]);
        let g = r.model.graph.as_ref().unwrap();
        let pads = g.initializer.iter().find(|t| t.dims == [8]).unwrap();
        assert_eq!(pads.int64_data, [0, 0, 2, 2, 0, 0, 3, 3]);
        assert!(attr_of(&r, "AveragePool", "pads").is_none());
        assert!(attr_of(&r, "AveragePool", "ceil_mode").is_none());
        // The AI Core pool is ONNX's.
        assert!(agrees_with_the_check(&pool(15, 2)).changed.is_empty());
    }

    #[test]
    fn softmax_axes_are_the_devices_one_axis() {
        let log = node("LogSoftmax", &["x"], vec![]);
        let r = agrees_with_the_check(&model(log.clone(), &[0, 3, 5], &[0, 3, 5], 11));
        assert_eq!(attr_of(&r, "LogSoftmax", "axis").unwrap().i, Some(2));
        // 2-D: ONNX's axis 1 is the device's −1.
        assert!(reading(&model(log.clone(), &[0, 3], &[0, 3], 11))
            .changed
            .is_empty());
        assert!(reading(&model(log, &[0, 3, 5], &[0, 3, 5], 13))
            .changed
            .is_empty());
        let soft = node("Softmax", &["x"], vec![int("axis", 1)]);
        let r = reading(&model(soft, &[0, 3, 5], &[0, 3, 5], 11));
        assert_eq!(ops(&r), ["Transpose", "Softmax", "Transpose"]);
        assert_eq!(attr_of(&r, "Transpose", "perm").unwrap().ints, [0, 2, 1]);
        let err = read(
            &model(node("LogSoftmax", &["z"], vec![]), &[0, 3], &[0, 3], 11),
            &cann::GENERATIONS[0],
        )
        .unwrap_err();
        assert!(err.to_string().contains("undeclared rank"), "{err}");
    }

    #[test]
    fn resize_samples_where_the_device_samples() {
        let resize = |mode: &str, coords: &str, input: &[i64], output: &[i64], s: &str| {
            let attrs = vec![
                string("mode", mode),
                string("coordinate_transformation_mode", coords),
            ];
            model(node("Resize", &["x", "", s], attrs), input, output, 11)
        };
        // scales 3: 4 → 12, the device's ⌊dst · 4/12⌋.
        let m = resize(
            "nearest",
            "asymmetric",
            &[0, 3, 4, 4],
            &[0, 3, 12, 12],
            "scales3",
        );
        let r = agrees_with_the_check(&m);
        assert_eq!(ops(&r), ["Gather", "Gather"]);
        let g = r.model.graph.as_ref().unwrap();
        let rows: Vec<i64> = (0..12).map(|d| d / 3).collect();
        assert_eq!(
            g.initializer
                .iter()
                .find(|t| t.dims == [12])
                .unwrap()
                .int64_data,
            rows
        );
        // The unused scales went with the Resize.
        assert!(g
            .initializer
            .iter()
            .all(|t| t.name.as_deref() != Some("scales3")));
        // Linear: one MatMul per axis whose rows are the two taps' weights, summing to 1.
        let m = resize(
            "linear",
            "half_pixel",
            &[0, 3, 4, 4],
            &[0, 3, 8, 8],
            "scales",
        );
        let r = agrees_with_the_check(&m);
        assert_eq!(ops(&r), ["MatMul", "MatMul"]);
        let g = r.model.graph.as_ref().unwrap();
        let left = g.initializer.iter().find(|t| t.dims == [8, 4]).unwrap();
        for row in left.float_data.chunks(4) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
        // half_pixel is the legacy grid on the device: output 1 reads 0.5.
        assert_eq!(&left.float_data[4..8], &[0.5, 0.5, 0.0, 0.0]);
        let err = read(
            &resize(
                "nearest",
                "asymmetric",
                &[0, 3, 0, 4],
                &[0, 3, 8, 8],
                "scales",
            ),
            &cann::GENERATIONS[0],
        )
        .unwrap_err();
        assert!(
            matches!(&err, ReadingError::Unexpressed { op, why, .. } if op == "Resize" && why.contains("not declared")),
            "{err}"
        );
    }

    #[test]
    fn a_model_atc_rejects_has_no_reading() {
        let m = model(node("HardSwish", &["x"], vec![]), &[0, 4], &[0, 4], 11);
        let err = read(&m, &cann::GENERATIONS[0]).unwrap_err();
        assert!(matches!(err, ReadingError::Rejected(_)), "{err}");
        assert!(err.to_string().contains("E16002"));
    }
}
