//! A small typed graph builder: values carry their per-sample shapes, names are unique, and
//! nodes are appended in topological order by construction (a node can only consume values
//! that already exist).

use std::collections::{HashMap, HashSet};

use super::elem::ElemType;
use super::proto::{
    attribute_proto::AttributeType, tensor_proto::DataType, tensor_shape_proto, type_proto,
    AttributeProto, GraphProto, NodeProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use super::store::{Bytes, Deferred, WeightStore};
use super::{Batch, OnnxError, Opset};

/// An activation: a value computed per sample. `shape` leaves out the batch axis, which is
/// always axis 0 of the real tensor and is never reshaped, transposed or split. `elem` is
/// the element type ONNX's type inference gives it (the builder derives it, see
/// [`GraphBuilder::node`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    name: String,
    shape: Vec<u64>,
    elem: ElemType,
}

impl Value {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The per-sample shape (without the batch axis).
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The element type.
    pub fn elem(&self) -> ElemType {
        self.elem
    }

    /// A static tensor's first size and the same ONNX value seen without it, as an
    /// activation whose first axis is the batch is seen (`None` for a scalar).
    pub fn without_first(&self) -> Option<(u64, Value)> {
        let (&first, rest) = self.shape.split_first()?;
        Some((
            first,
            Value {
                shape: rest.to_vec(),
                ..self.clone()
            },
        ))
    }

    /// The inverse of [`Value::without_first`]: this value with first size `first`.
    pub fn with_first(mut self, first: u64) -> Value {
        self.shape.insert(0, first);
        self
    }
}

/// A constant tensor stored as an initializer (no batch axis).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weight {
    name: String,
    dims: Vec<u64>,
}

impl Weight {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dims(&self) -> &[u64] {
        &self.dims
    }
}

/// An initializer: its bytes are raw, fixed width, little endian, C order, in memory or in
/// the model's [`WeightStore`].
#[derive(Debug, PartialEq)]
pub struct Initializer {
    pub name: String,
    pub dims: Vec<u64>,
    pub data_type: DataType,
    pub bytes: Bytes,
}

/// A node attribute. Always written with its `type` set (the checker requires it).
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Int(i64),
    Ints(Vec<i64>),
    Float(f32),
    Str(&'static str),
}

impl Attr {
    pub(crate) fn to_proto(&self, name: &str) -> AttributeProto {
        let mut proto = AttributeProto {
            name: Some(name.to_owned()),
            ..Default::default()
        };
        match self {
            Attr::Int(i) => {
                proto.set_type(AttributeType::Int);
                proto.i = Some(*i);
            }
            Attr::Ints(ints) => {
                proto.set_type(AttributeType::Ints);
                proto.ints.clone_from(ints);
            }
            Attr::Float(f) => {
                proto.set_type(AttributeType::Float);
                proto.f = Some(*f);
            }
            Attr::Str(s) => {
                proto.set_type(AttributeType::String);
                proto.s = Some(s.as_bytes().to_vec());
            }
        }
        proto
    }
}

/// A finished model: the graph without its initializers (which can be large and are written
/// separately, see [`super::write`]), the initializers, and the store holding their bytes.
#[derive(Debug)]
pub struct Model {
    pub opset: Opset,
    pub graph: GraphProto,
    pub initializers: Vec<Initializer>,
    pub store: WeightStore,
    /// For each Reshape shape constant a lowering noted: the full sizes of the tensor it
    /// reshapes, `None` for the batch axis ([`GraphBuilder::note_reshaped`]).
    pub reshaped: HashMap<String, Vec<Option<u64>>>,
}

/// Builds one graph. Invariants: every name (value or initializer) is unique; every node's
/// inputs are produced earlier or are initializers/the graph input (SSA, sorted); `elems`
/// holds the element type of every value and initializer made so far.
#[derive(Debug)]
pub struct GraphBuilder {
    opset: Opset,
    batch: Batch,
    nodes: Vec<NodeProto>,
    initializers: Vec<Initializer>,
    store: WeightStore,
    inputs: Vec<ValueInfoProto>,
    names: HashSet<String>,
    node_names: HashSet<String>,
    counters: HashMap<String, usize>,
    elems: HashMap<String, ElemType>,
    reshaped: HashMap<String, Vec<Option<u64>>>,
}

impl GraphBuilder {
    /// A builder whose weights stay in memory up to the default budget, then spill to the
    /// system temp folder.
    pub fn new(opset: Opset, batch: Batch) -> Self {
        GraphBuilder::with_store(opset, batch, WeightStore::default())
    }

    /// A builder keeping its initializers' bytes in `store`.
    pub fn with_store(opset: Opset, batch: Batch, store: WeightStore) -> Self {
        GraphBuilder {
            opset,
            batch,
            nodes: Vec::new(),
            initializers: Vec::new(),
            store,
            inputs: Vec::new(),
            names: HashSet::new(),
            node_names: HashSet::new(),
            counters: HashMap::new(),
            elems: HashMap::new(),
            reshaped: HashMap::new(),
        }
    }

    pub fn opset(&self) -> Opset {
        self.opset
    }

    /// How many nodes and initializers were written so far: equal counts before and after
    /// a step mean it wrote nothing.
    pub fn written(&self) -> (usize, usize) {
        (self.nodes.len(), self.initializers.len())
    }

    /// Declares a float32 graph input of per-sample shape `shape`.
    #[cfg(test)]
    pub fn input(&mut self, name: &str, shape: Vec<u64>) -> Result<Value, OnnxError> {
        self.typed_input(name, shape, ElemType::Float32)
    }

    /// Declares a graph input of per-sample shape `shape` and element type `elem` (token
    /// ids, attention masks).
    pub fn typed_input(
        &mut self,
        name: &str,
        shape: Vec<u64>,
        elem: ElemType,
    ) -> Result<Value, OnnxError> {
        self.claim(name)?;
        self.inputs
            .push(value_info(name, &self.batch, 0, &shape, elem));
        self.elems.insert(name.to_owned(), elem);
        Ok(Value {
            name: name.to_owned(),
            shape,
            elem,
        })
    }

    /// Adds a float32 initializer named `name` (a state-dict key, or a derived name for
    /// folded weights). `values` must hold exactly the product of `dims`.
    pub fn weight(
        &mut self,
        name: &str,
        dims: Vec<u64>,
        values: &[f32],
    ) -> Result<Weight, OnnxError> {
        let count: u64 = dims.iter().product();
        if count != values.len() as u64 {
            return Err(OnnxError::Shape {
                what: format!(
                    "`{name}`: {} values for shape {dims:?} ({count} expected)",
                    values.len()
                ),
            });
        }
        self.claim(name)?;
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let bytes = self.store.put(raw).map_err(|e| OnnxError::Output {
            what: format!("cannot set aside the weight `{name}`: {e}"),
        })?;
        Ok(self.push_initializer(name, dims, ElemType::Float32, bytes))
    }

    /// Adds a float32 initializer named `name` whose bytes are computed from the mapped
    /// checkpoint when the file is written ([`Deferred`]); `bytes` must make exactly the
    /// product of `dims` values.
    pub fn deferred_weight(
        &mut self,
        name: &str,
        dims: Vec<u64>,
        bytes: Deferred,
    ) -> Result<Weight, OnnxError> {
        let count: u64 = dims.iter().product();
        if count.checked_mul(4) != Some(bytes.len()) {
            return Err(OnnxError::Shape {
                what: format!(
                    "`{name}`: {} values for shape {dims:?} ({count} expected)",
                    bytes.len() / 4
                ),
            });
        }
        self.claim(name)?;
        Ok(self.push_initializer(name, dims, ElemType::Float32, Bytes::Deferred(bytes)))
    }

    /// Adds a float32 constant computed by the export (a folded `arange`) under a fresh name
    /// based on `hint`. `values` must hold exactly the product of `dims`.
    pub fn folded(
        &mut self,
        hint: &str,
        dims: Vec<u64>,
        values: &[f32],
    ) -> Result<Weight, OnnxError> {
        let name = self.fresh(hint);
        self.names.remove(&name);
        self.weight(&name, dims, values)
    }

    /// Adds a 1-D int64 constant (shapes, split sizes) under a fresh name based on `hint`.
    pub fn constant_i64(&mut self, hint: &str, values: &[i64]) -> Weight {
        let name = self.fresh(hint);
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let bytes = Bytes::Memory(raw);
        self.push_initializer(&name, vec![values.len() as u64], ElemType::Int64, bytes)
    }

    /// Adds a float32 scalar constant (Clip bounds from opset 11) under a fresh name.
    pub fn constant_scalar(&mut self, hint: &str, value: f32) -> Weight {
        let name = self.fresh(hint);
        let bytes = Bytes::Memory(value.to_le_bytes().to_vec());
        self.push_initializer(&name, Vec::new(), ElemType::Float32, bytes)
    }

    /// An initializer of sizes `dims` and element type `elem` (refused where a value is
    /// not exact in it), as a value every sample shares: `dims` must have at most the
    /// per-sample rank of the activations it meets, so that broadcasting never aligns it
    /// with the batch.
    pub fn shared_constant(
        &mut self,
        hint: &str,
        dims: Vec<u64>,
        values: &[f64],
        elem: ElemType,
    ) -> Result<Value, OnnxError> {
        let w = self.typed_constant(hint, dims.clone(), values, elem)?;
        Ok(Value {
            name: w.name,
            shape: dims,
            elem,
        })
    }

    /// Adds a 0-d constant of element type `elem` (a comparison's scalar, a fill value)
    /// under a fresh name; refused when `value` is not exact in `elem` (`0.5` as int64).
    pub fn typed_scalar(
        &mut self,
        hint: &str,
        value: f64,
        elem: ElemType,
    ) -> Result<Weight, OnnxError> {
        let raw = elem.encode(value).ok_or_else(|| OnnxError::Shape {
            what: format!("the scalar {value} is not a {elem} value"),
        })?;
        let name = self.fresh(hint);
        Ok(self.push_initializer(&name, Vec::new(), elem, Bytes::Memory(raw)))
    }

    /// Adds a constant of element type `elem` computed by the export (a folded mask, a
    /// comparison's constant operand) under a fresh name based on `hint`. `values` must
    /// hold exactly the product of `dims`, each exact in `elem`.
    pub fn typed_constant(
        &mut self,
        hint: &str,
        dims: Vec<u64>,
        values: &[f64],
        elem: ElemType,
    ) -> Result<Weight, OnnxError> {
        if dims.iter().product::<u64>() != values.len() as u64 {
            return Err(OnnxError::Shape {
                what: format!("`{hint}`: {} values for shape {dims:?}", values.len()),
            });
        }
        let mut raw = Vec::with_capacity(values.len() * 8);
        for &v in values {
            raw.extend(elem.encode(v).ok_or_else(|| OnnxError::Shape {
                what: format!("`{hint}`: the value {v} is not a {elem} value"),
            })?);
        }
        let name = self.fresh(hint);
        Ok(self.push_initializer(&name, dims, elem, Bytes::Memory(raw)))
    }

    /// The element type of a value or initializer made by this builder.
    pub fn elem_of(&self, name: &str) -> Option<ElemType> {
        self.elems.get(name).copied()
    }

    /// Appends a node whose outputs have the element type of its first input, as ONNX
    /// types every op this exporter emits through [`GraphBuilder::node`] (element-wise
    /// ops, layout ops, Gather on its data, Conv, pooling). Ops whose outputs differ (Cast,
    /// comparisons, Where, ArgMax, TopK's indices) use [`GraphBuilder::typed_node`].
    /// `scope` is the module path it comes from (`layer1.0.conv1`); the node is named
    /// `/<scope>/<op>` and its outputs `/<scope>/<op>_output_<k>`, made unique. `outputs`
    /// gives each output's per-sample shape. Empty input names mark absent optional inputs.
    pub fn node(
        &mut self,
        op: &'static str,
        scope: &str,
        inputs: Vec<String>,
        attrs: Vec<(&'static str, Attr)>,
        outputs: Vec<Vec<u64>>,
    ) -> Vec<Value> {
        // A name the builder did not make is caught by the ATC check (an undefined input).
        let elem = inputs
            .first()
            .and_then(|name| self.elem_of(name))
            .unwrap_or(ElemType::Float32);
        let outputs = outputs.into_iter().map(|shape| (shape, elem)).collect();
        self.typed_node(op, scope, inputs, attrs, outputs)
    }

    /// Like [`GraphBuilder::node`], with each output's per-sample shape and element type.
    pub fn typed_node(
        &mut self,
        op: &'static str,
        scope: &str,
        inputs: Vec<String>,
        attrs: Vec<(&'static str, Attr)>,
        outputs: Vec<(Vec<u64>, ElemType)>,
    ) -> Vec<Value> {
        let base = if scope.is_empty() {
            format!("/{op}")
        } else {
            format!("/{}/{op}", scope.replace('.', "/"))
        };
        let mut name = base.clone();
        let mut k = 1;
        while !self.node_names.insert(name.clone()) {
            name = format!("{base}_{k}");
            k += 1;
        }
        let values: Vec<Value> = outputs
            .into_iter()
            .enumerate()
            .map(|(i, (shape, elem))| Value {
                name: self.fresh(&format!("{name}_output_{i}")),
                shape,
                elem,
            })
            .collect();
        for value in &values {
            self.elems.insert(value.name.clone(), value.elem);
        }
        self.nodes.push(NodeProto {
            input: inputs,
            output: values.iter().map(|v| v.name.clone()).collect(),
            name: Some(name),
            op_type: Some(op.to_owned()),
            domain: Some(String::new()),
            attribute: attrs.iter().map(|(n, a)| a.to_proto(n)).collect(),
            ..Default::default()
        });
        values
    }

    /// Finishes the graph with `output` as its only output, renamed to `output_name`.
    #[cfg(test)]
    pub fn finish(self, output: &Value, output_name: &str) -> Result<Model, OnnxError> {
        self.finish_outputs(&[(output.clone(), output_name.to_owned())])
    }

    /// [`GraphBuilder::finish_placed`] with every output's batch on its first dimension.
    #[cfg(test)]
    pub fn finish_outputs(self, outputs: &[(Value, String)]) -> Result<Model, OnnxError> {
        let placed: Vec<(Value, String, usize)> = outputs
            .iter()
            .map(|(value, name)| (value.clone(), name.clone(), 0))
            .collect();
        self.finish_placed(&placed)
    }

    /// Finishes the graph with `outputs` as its outputs, in order, each renamed to the name
    /// beside it and declared with the batch on the dimension beside that (a value's
    /// `shape` leaves the batch out; the batch goes where the output carries it, so an
    /// output keeps torch's layout). ONNX returns a value under one name only, and only a
    /// value a node computes (anything else needs an `Identity`, which ATC refuses): an
    /// output that is a graph input, or a value already returned, is returned as its copy,
    /// a Reshape that keeps every dimension (shape `[0, 0, …]`). Each name must be new to
    /// the graph. A graph breaking ONNX's type constraints ([`super::typing`]) is refused.
    pub fn finish_placed(mut self, outputs: &[(Value, String, usize)]) -> Result<Model, OnnxError> {
        let violations = super::typing::violations(&self.nodes, &self.elems, self.opset);
        if !violations.is_empty() {
            return Err(OnnxError::Typing { violations });
        }
        let mut outputs = outputs.to_vec();
        let mut returned: HashSet<String> = HashSet::new();
        for (value, name, _) in &mut outputs {
            let produced = self.nodes.iter().any(|n| n.output.contains(&value.name));
            if self.narrowed_by_atc(&value.name) {
                // ATC's parser gives this output int32 (its plugin casts it; see
                // `cann::Plugin::int32_outputs`): the graph's own Cast returns the type
                // torch returns.
                *value = self.cast_copy(value, name);
                returned.insert(value.name.clone());
            } else if !produced || !returned.insert(value.name.clone()) {
                *value = self.copy(value, name);
                returned.insert(value.name.clone());
            }
        }
        let mut renames: HashMap<&str, &str> = HashMap::new();
        let mut chosen: HashSet<&str> = HashSet::new();
        for (value, name, _) in &outputs {
            if !chosen.insert(name) || (value.name != *name && self.names.contains(name)) {
                return Err(OnnxError::Option {
                    what: format!("output name `{name}` is already used in the graph"),
                });
            }
            renames.insert(&value.name, name);
        }
        for node in &mut self.nodes {
            for name in node.output.iter_mut().chain(node.input.iter_mut()) {
                if let Some(new) = renames.get(name.as_str()) {
                    (*new).clone_into(name);
                }
            }
        }
        let graph = GraphProto {
            node: self.nodes,
            name: Some("main_graph".to_owned()),
            input: self.inputs,
            output: outputs
                .iter()
                .map(|(value, name, axis)| {
                    value_info(name, &self.batch, *axis, &value.shape, value.elem)
                })
                .collect(),
            ..Default::default()
        };
        Ok(Model {
            opset: self.opset,
            graph,
            initializers: self.initializers,
            store: self.store,
            reshaped: self.reshaped,
        })
    }

    /// A copy of `value` (named after output `name`): a Reshape keeping every dimension in
    /// place, which holds at every batch and every dynamic size (with [`Batch::Static`],
    /// a Reshape to its exact sizes).
    fn copy(&mut self, value: &Value, name: &str) -> Value {
        let sizes: Vec<i64> = match self.batch {
            Batch::Static => value.shape.iter().map(|&d| d as i64).collect(),
            Batch::Dynamic(_) | Batch::Fixed(_) => vec![0; value.shape.len() + 1],
        };
        let shape = self.constant_i64(&format!("{name}.copy"), &sizes);
        let inputs = vec![value.name.clone(), shape.name().to_owned()];
        self.node("Reshape", name, inputs, vec![], vec![value.shape.clone()])
            .swap_remove(0)
    }

    /// Whether `name` is an output ATC's parser turns int32 where ONNX says int64 (TopK's
    /// indices, ArgMax's result: [`super::cann::Plugin::int32_outputs`]).
    fn narrowed_by_atc(&self, name: &str) -> bool {
        self.nodes.iter().any(|n| {
            let op = n.op_type.as_deref().unwrap_or("");
            let narrowed = super::cann::plugin(op).map_or(&[][..], |p| p.int32_outputs);
            n.output
                .iter()
                .position(|o| o == name)
                .is_some_and(|k| narrowed.contains(&k))
        })
    }

    /// A copy of `value` (named after output `name`) through a Cast to its own element
    /// type: on the device, the Cast from the int32 ATC computes.
    fn cast_copy(&mut self, value: &Value, name: &str) -> Value {
        let attrs = vec![("to", Attr::Int(value.elem.data_type() as i64))];
        let outputs = vec![(value.shape.clone(), value.elem)];
        self.typed_node("Cast", name, vec![value.name.clone()], attrs, outputs)
            .swap_remove(0)
    }

    /// Notes that Reshape shape constant `shape` reshapes a tensor of full sizes `sizes`
    /// (`None` for the batch axis), so that a later pass can tell which of its entries copy
    /// the input's dimension in place.
    pub fn note_reshaped(&mut self, shape: &Weight, sizes: Vec<Option<u64>>) {
        self.reshaped.insert(shape.name.clone(), sizes);
    }

    fn push_initializer(
        &mut self,
        name: &str,
        dims: Vec<u64>,
        elem: ElemType,
        bytes: Bytes,
    ) -> Weight {
        self.elems.insert(name.to_owned(), elem);
        self.initializers.push(Initializer {
            name: name.to_owned(),
            dims: dims.clone(),
            data_type: elem.data_type(),
            bytes,
        });
        Weight {
            name: name.to_owned(),
            dims,
        }
    }

    fn claim(&mut self, name: &str) -> Result<(), OnnxError> {
        if name.is_empty() || !self.names.insert(name.to_owned()) {
            return Err(OnnxError::Shape {
                what: format!("the name `{name}` is empty or used twice in the graph"),
            });
        }
        Ok(())
    }

    /// A name not used yet: `hint`, else `hint_1`, `hint_2`, …
    fn fresh(&mut self, hint: &str) -> String {
        let counter = self.counters.entry(hint.to_owned()).or_insert(0);
        loop {
            let name = if *counter == 0 {
                hint.to_owned()
            } else {
                format!("{hint}_{counter}")
            };
            *counter += 1;
            if self.names.insert(name.clone()) {
                return name;
            }
        }
    }
}

/// A tensor `name` of per-sample `shape` with the batch inserted as dimension `batch_axis`
/// (at most `shape.len()`); with [`Batch::Static`], `shape` is the whole shape.
fn value_info(
    name: &str,
    batch: &Batch,
    batch_axis: usize,
    shape: &[u64],
    elem: ElemType,
) -> ValueInfoProto {
    use tensor_shape_proto::{dimension::Value as Dim, Dimension};
    let batch_dim = match batch {
        Batch::Dynamic(param) => Some(Dim::DimParam(param.clone())),
        Batch::Fixed(n) => Some(Dim::DimValue(*n as i64)),
        Batch::Static => None,
    };
    let mut dims: Vec<Dim> = shape.iter().map(|&d| Dim::DimValue(d as i64)).collect();
    if let Some(batch_dim) = batch_dim {
        dims.insert(batch_axis.min(dims.len()), batch_dim);
    }
    let dim = dims
        .into_iter()
        .map(|value| Dimension {
            value: Some(value),
            denotation: None,
        })
        .collect();
    ValueInfoProto {
        name: Some(name.to_owned()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(elem.data_type() as i32),
                shape: Some(TensorShapeProto { dim }),
            })),
            denotation: None,
        }),
        doc_string: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relu(g: &mut GraphBuilder, x: &Value) -> Value {
        let mut out = g.node(
            "Relu",
            "",
            vec![x.name().to_owned()],
            vec![],
            vec![x.shape().to_vec()],
        );
        out.remove(0)
    }

    #[test]
    fn several_outputs_are_renamed_in_order() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("input", vec![2, 3]).unwrap();
        let a = relu(&mut g, &x);
        let b = relu(&mut g, &a);
        let model = g
            .finish_outputs(&[(a, "out".into()), (b, "aux".into())])
            .unwrap();
        let names: Vec<_> = model
            .graph
            .output
            .iter()
            .filter_map(|o| o.name.clone())
            .collect();
        assert_eq!(names, ["out", "aux"]);
        // The second node reads the first output under its new name.
        assert_eq!(model.graph.node[1].input, ["out"]);
    }

    #[test]
    fn element_types_flow_from_inputs_to_outputs() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let ids = g.typed_input("ids", vec![4], ElemType::Int64).unwrap();
        let table = g.weight("table", vec![10, 3], &[0.0; 30]).unwrap();
        // Gather takes its data's type; a comparison is bool; Where takes its branches'.
        let mut rows = g.node(
            "Gather",
            "",
            vec![table.name().into(), ids.name().into()],
            vec![("axis", Attr::Int(0))],
            vec![vec![4, 3]],
        );
        let rows = rows.remove(0);
        assert_eq!(rows.elem(), ElemType::Float32);
        let zero = g.typed_scalar("zero", 0.0, ElemType::Int64).unwrap();
        assert_eq!(g.elem_of(zero.name()), Some(ElemType::Int64));
        let mut is_pad = g.typed_node(
            "Equal",
            "",
            vec![ids.name().into(), zero.name().into()],
            vec![],
            vec![(vec![4], ElemType::Bool)],
        );
        let is_pad = is_pad.remove(0);
        // An op without an element type of its own keeps its input's (ONNX's Abs takes
        // int64; its Relu does not before opset 14).
        let kept = g.node("Abs", "", vec![ids.name().into()], vec![], vec![vec![4]]);
        assert_eq!(kept[0].elem(), ElemType::Int64);
        assert!(g.typed_scalar("half", 0.5, ElemType::Int64).is_err());
        let model = g
            .finish_outputs(&[(rows, "rows".into()), (is_pad, "pad".into())])
            .unwrap();
        let elem = |v: &ValueInfoProto| match v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(type_proto::Value::TensorType(t)) => t.elem_type,
            _ => None,
        };
        assert_eq!(elem(&model.graph.input[0]), Some(DataType::Int64 as i32));
        let outputs: Vec<_> = model.graph.output.iter().map(elem).collect();
        assert_eq!(
            outputs,
            [Some(DataType::Float as i32), Some(DataType::Bool as i32)]
        );
        let zero = model
            .initializers
            .iter()
            .find(|i| i.name == "zero")
            .unwrap();
        assert_eq!(zero.data_type, DataType::Int64);
    }

    #[test]
    fn an_input_or_a_repeated_output_is_returned_as_a_copy() {
        let start = || {
            let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
            let x = g.input("input", vec![2]).unwrap();
            let y = relu(&mut g, &x);
            (g, x, y)
        };
        let ops = |m: &Model| -> Vec<String> {
            m.graph
                .node
                .iter()
                .map(|n| n.op_type.clone().unwrap_or_default())
                .collect()
        };
        let (g, _, y) = start();
        let model = g
            .finish_outputs(&[(y.clone(), "a".into()), (y, "b".into())])
            .unwrap();
        assert_eq!(ops(&model), ["Relu", "Reshape"]);
        let reshape = &model.graph.node[1];
        assert_eq!(reshape.input[0], "a");
        assert_eq!(reshape.output, ["b"]);
        let (g, x, _) = start();
        let model = g.finish(&x, "output").unwrap();
        assert_eq!(ops(&model).last().map(String::as_str), Some("Reshape"));
        assert_eq!(model.graph.node.last().unwrap().input[0], "input");
        let copy = &model.initializers.last().unwrap();
        assert_eq!(copy.dims, [2]);
        let (g, _, y) = start();
        assert!(g
            .finish(&y, "input")
            .unwrap_err()
            .to_string()
            .contains("already used"));
    }

    #[test]
    fn an_output_declares_its_batch_where_it_carries_it() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("input", vec![4, 5]).unwrap();
        let y = relu(&mut g, &x);
        let model = g.finish_placed(&[(y, "y".into(), 1)]).unwrap();
        let dims: Vec<String> = match model.graph.output[0]
            .r#type
            .as_ref()
            .and_then(|t| t.value.as_ref())
        {
            Some(type_proto::Value::TensorType(t)) => t
                .shape
                .as_ref()
                .unwrap()
                .dim
                .iter()
                .map(|d| match &d.value {
                    Some(tensor_shape_proto::dimension::Value::DimParam(p)) => p.clone(),
                    Some(tensor_shape_proto::dimension::Value::DimValue(n)) => n.to_string(),
                    None => "?".into(),
                })
                .collect(),
            _ => Vec::new(),
        };
        assert_eq!(dims, ["4", "batch", "5"]);
    }
}
