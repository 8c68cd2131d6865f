//! Walking the program: binding graph inputs (stored tensors by FQN, the user input as the
//! graph input), lowering each node in order ([`super::aten`]), checking each result's shape
//! against the one torch recorded, and finishing with the user outputs, named as
//! [`super::outputs`] decides.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::elem::{self, ElemType};
use crate::graph::{GraphBuilder, Model, Value, Weight};
use crate::store::{Deferred, Transform};
use crate::{Batch, Extent, OnnxError, Opset};
use ckpt_aten::alias::Aliases;
use ckpt_aten::args::Args;
use ckpt_aten::bags;
use ckpt_aten::eval;
use ckpt_aten::program::ExportedProgram;
use ckpt_aten::program::{
    Argument, Graph, InputSpec, Node, OutputSpec, Signature, SymInt, TensorMeta,
};

use super::alias::View;
use super::batch::{show, BatchDim};
use super::emit;
use super::located;
use super::outputs;
use super::tensor::{self, Placement, Rows, Size, Tensor};
use super::{OutputShape, TensorSource};

/// What a program value name stands for during lowering.
#[derive(Clone, Debug)]
pub(super) enum Bound {
    /// An activation: an ONNX value with the batch on one of its axes.
    Activation(Tensor),
    /// A stored tensor (parameter, buffer, lifted constant) by FQN; an initializer is
    /// written the first time an op uses it.
    Stored(String),
    /// A tensor the export computed from constants alone (`arange`, a reshaped or
    /// standardised parameter, [`super::fold`]), of the dtype torch recorded for it: written
    /// as an initializer where an op uses it, named after `label`.
    Folded { tensor: eval::Tensor, label: String },
    /// A symbolic integer equal to the batch times a constant (`sym_size(x, 0)` is 1·N;
    /// `sym_size(x, 0) * heads`, or the size of a dimension the batch is folded into, is
    /// k·N). Only size lists read it: a view follows torch's recorded output sizes.
    BatchTimes(u64),
    /// A number torch reads back from a constant (`item()` of a stored stride): known at
    /// export, so an argument naming it is that literal ([`Lowering::with_known_numbers`]).
    Number(f64),
    /// A tensor with the same values for every sample: a constant expanded over the batch
    /// (`class_token.expand(n, -1, -1)`), a factory sized by it (`zeros(n, h, w)`), or
    /// anything computed from those and constants alone. torch's value is `tensor`
    /// repeated along `axis`, where `tensor` has size 1 (so it broadcasts against an
    /// activation exactly as torch's value does). It is folded like a constant; where an
    /// op needs it as an activation it is made from a sibling activation (see
    /// `expanded_like`). Invariant: `tensor.dims()[axis] == 1`.
    Uniform {
        tensor: eval::Tensor,
        axis: usize,
        label: String,
    },
    /// `arange` over the batch (`torch.arange(x.shape[0])`) and its views: torch's value at
    /// every position is the position's coordinate on dimension `axis`, the sample's own
    /// index. No ONNX value holds it; an index list that indexes the batch with it is a
    /// per-sample gather ([`super::aten`]'s `sample_index`). `dims` are torch's sizes with
    /// 1 on `axis`. Invariant: `dims[axis] == 1`.
    SampleIndex { dims: Vec<u64>, axis: usize },
    /// An output the lowering does not produce (max-pool indices, BN's saved statistics).
    Unproduced { by: String },
    /// An empty slice (`q[:, :, :0]` before the rotary part when a model has no prefix
    /// tokens): a cat leaves it out; any other reader is refused.
    Empty,
}

/// A constant an op reads: a stored tensor by FQN, or a tensor the export folded, by the
/// program value it is bound to and its label (the module that computed it, then the
/// value: `stem.reshape_as`). Both are written as an initializer once, where first used.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Constant {
    Stored(String),
    Folded { value: String, label: String },
}

/// The FQN, or the folded value's label: initializers derived from it are named after it.
impl fmt::Display for Constant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Constant::Stored(name) | Constant::Folded { label: name, .. } => f.write_str(name),
        }
    }
}

/// The state of one lowering. Invariant: every name in `values` was bound by an input spec
/// or by a node earlier in the program's order.
pub(super) struct Lowering<'p, 'a> {
    pub graph: &'p Graph,
    pub tensors: &'a mut dyn TensorSource,
    pub g: GraphBuilder,
    pub batch: BatchDim,
    pub fold_bn: bool,
    pub(super) values: HashMap<String, Bound>,
    /// Folded values that are views of other folded values (a write into one reaches
    /// the others, [`super::alias`]).
    pub(super) views: HashMap<String, View>,
    weights: HashMap<Constant, Weight>,
    /// 2-D constants written transposed (`<weight>.transposed`, a linear's MatMul weight).
    transposed: HashMap<Constant, Weight>,
    /// A convolution's weight and bias with a BatchNorm folded in, by (weight, bias, the
    /// BatchNorm's running mean): written once however many calls fold the same pair (one
    /// conv-and-norm block applied in a loop, as doctr's VIPTR applies its projection).
    pub(super) fused: HashMap<(Constant, Option<Constant>, Constant), (Weight, Weight)>,
    /// Value name → indices of the nodes that read it (graph outputs count as `usize::MAX`).
    readers: HashMap<String, Vec<usize>>,
    /// Which values share memory, for in-place ops.
    aliases: Aliases,
    /// Nodes already lowered as part of an earlier one (a BatchNorm folded into its Conv).
    pub absorbed: HashSet<usize>,
    /// The rows of the activations the current node read through [`Lowering::activation`]
    /// (the batch's factor, or a static tensor's first size), which its
    /// [`Lowering::bind`] results keep.
    rows: Cell<Option<Rows>>,
    /// The first graph input (batch first, factor 1): an activation a value the same for
    /// every sample can be made from when no other one is at hand (`Lowering::zeros`).
    pub carrier: Value,
    /// [`Bound::Uniform`] values, and in a static export [`Bound::Folded`] ones, that an op
    /// needed as activations, made from the carrier ([`Lowering::materialize`]); the
    /// binding itself stays, so ops that read the values themselves still fold them.
    materialized: HashMap<String, Tensor>,
    /// The uniform or (static) folded value the current node's row last asked for as an
    /// activation before it was made one ([`Lowering::tensor`]).
    asked_as_activation: RefCell<Option<String>>,
    /// torch's record of values the program does not hold (the values between the nodes a
    /// compound op was written as, [`ckpt_aten::expand`]) or holds with sizes torch could
    /// not know when it traced (the pieces of a split at a constant tensor's positions),
    /// read before the program's.
    pub(super) expanded: HashMap<String, TensorMeta>,
    /// The index of the program node being lowered (the steps of a compound op are
    /// lowered as parts of it).
    pub(super) at: usize,
}

/// The result of lowering: the model and what its input and outputs look like.
pub struct Lowered {
    pub model: Model,
    /// The graph inputs in the program's order: ONNX name and per-sample shape.
    pub inputs: Vec<(String, Vec<u64>)>,
    /// Each output's ONNX name, batch dimension (none in a static export) and per-sample
    /// shape, in the program's order.
    pub outputs: Vec<OutputShape>,
    /// The batch as the archive declared it.
    pub batch: BatchDim,
}

/// What the lowering is asked to produce.
pub struct Target<'o> {
    pub opset: Opset,
    pub batch: Batch,
    /// The ONNX name of a single-input model's input (`None`: `input`); a model with
    /// several inputs names them after the program's inputs (the forward's parameters).
    pub input_name: Option<&'o str>,
    pub output_name: &'o str,
    pub fold_bn: bool,
}

/// Lowers `program`, whose stored tensors `tensors` provides, to an ONNX model.
pub fn lower(
    program: &ExportedProgram,
    tensors: &mut dyn TensorSource,
    target: &Target<'_>,
) -> Result<Lowered, OnnxError> {
    let module = &program.graph_module;
    // `F.embedding_bag` of 2-D ids: one bag per row.
    let rows = bags::one_bag_per_row(&module.graph).map_err(located::program)?;
    let graph = rows.as_ref().unwrap_or(&module.graph);
    check_outputs(&module.signature)?;
    let (user_inputs, stored) = split_inputs(&module.signature)?;
    let names = input_names(&user_inputs, target.input_name)?;
    let mut g = GraphBuilder::new(target.opset, target.batch.clone());
    let mut values: HashMap<String, Bound> = stored
        .into_iter()
        .map(|(arg, fqn)| (arg, Bound::Stored(fqn)))
        .collect();
    // The first input fixes the batch; every other one must carry the same.
    let first = user_inputs.first().ok_or_else(|| {
        located::program(
            "the program takes no tensor input; only models with tensor inputs are exported",
        )
    })?;
    let batch = match target.batch {
        Batch::Static => BatchDim::Static,
        Batch::Dynamic(_) | Batch::Fixed(_) => BatchDim::of_input(input_sizes(graph, first)?.0)
            .map_err(|e| located::program(format!("the input `{first}`: {e}")))?,
    };
    let mut inputs = Vec::with_capacity(user_inputs.len());
    let mut carrier = None;
    for (arg, name) in user_inputs.iter().zip(names) {
        let (sizes, elem) = input_sizes(graph, arg)?;
        let shape = batch
            .per_sample(sizes)
            .map_err(|e| located::program(format!("the input `{arg}`: {e}")))?;
        let value = g.typed_input(&name, shape.clone(), elem)?;
        carrier.get_or_insert_with(|| value.clone());
        let input = match batch {
            BatchDim::Static => Tensor::fixed(value),
            BatchDim::Symbol(_) | BatchDim::Traced(_) => Tensor::rows(value, 1),
        };
        values.insert(arg.clone(), Bound::Activation(input));
        inputs.push((name, shape));
    }
    let mut lowering = Lowering {
        graph,
        tensors,
        g,
        batch: batch.clone(),
        fold_bn: target.fold_bn,
        values,
        views: HashMap::new(),
        weights: HashMap::new(),
        transposed: HashMap::new(),
        fused: HashMap::new(),
        readers: readers(graph),
        aliases: Aliases::of(graph),
        absorbed: HashSet::new(),
        rows: Cell::new(None),
        carrier: carrier.ok_or_else(|| located::program("the program takes no tensor input"))?,
        materialized: HashMap::new(),
        asked_as_activation: RefCell::new(None),
        expanded: HashMap::new(),
        at: 0,
    };
    let live = live_nodes(graph);
    // An op refused for good is named before any other refusal on its way.
    let refused = graph
        .nodes
        .iter()
        .enumerate()
        .filter(|(index, _)| live[*index])
        .find_map(|(index, node)| super::aten::refused_for_good(node, index));
    if let Some(e) = refused {
        return Err(e);
    }
    for (index, node) in graph.nodes.iter().enumerate() {
        if lowering.absorbed.contains(&index) || !live[index] {
            continue;
        }
        lowering.node(index, node).map_err(|e| match e {
            OnnxError::Program { .. } => e,
            other => located::at(node, index, other),
        })?;
    }
    let values = lowering.outputs(first)?;
    let written: Vec<bool> = graph.outputs.iter().map(|o| *o != Argument::None).collect();
    let names = outputs::names(module.out_spec(), &written, target.output_name);
    let outputs = values
        .iter()
        .zip(&names)
        .map(|((value, axis), name)| OutputShape {
            name: name.clone(),
            batch_axis: *axis,
            sizes: Extent::all_fixed(value.shape()),
        })
        .collect();
    // A static output's axis is not read: the builder inserts no batch.
    let named: Vec<(Value, String, usize)> = values
        .into_iter()
        .zip(names)
        .map(|((value, axis), name)| (value, name, axis.unwrap_or(0)))
        .collect();
    let model = lowering
        .g
        .finish_placed(&named)
        .map_err(|e| located::program(format!("the program's outputs: {e}")))?;
    Ok(Lowered {
        model,
        inputs,
        outputs,
        batch,
    })
}

/// The sizes of the program's user inputs, in order.
pub fn user_input_sizes(program: &ExportedProgram) -> Result<Vec<&[SymInt]>, OnnxError> {
    let module = &program.graph_module;
    let (user, _) = split_inputs(&module.signature)?;
    user.iter()
        .map(|arg| Ok(input_sizes(&module.graph, arg)?.0))
        .collect()
}

/// Every output must be a user output (no buffer mutations: the model was in eval mode).
fn check_outputs(signature: &Signature) -> Result<(), OnnxError> {
    match signature
        .output_specs
        .iter()
        .find_map(|spec| match spec {
            OutputSpec::Other(kind) => Some(kind),
            OutputSpec::UserOutput(_) => None,
        }) {
        Some(kind) => Err(located::program(format!(
            "the program has a `{kind}` output; export the model in eval mode (`model.eval()`) so that it changes no buffer"
        ))),
        None => Ok(()),
    }
}

/// The tensor user inputs in order, and (graph input name, FQN) for every stored input.
type Inputs = (Vec<String>, Vec<(String, String)>);

fn split_inputs(signature: &Signature) -> Result<Inputs, OnnxError> {
    let mut user = Vec::new();
    let mut stored = Vec::new();
    for spec in &signature.input_specs {
        match spec {
            InputSpec::Parameter { arg, fqn }
            | InputSpec::Buffer { arg, fqn }
            | InputSpec::TensorConstant { arg, fqn } => stored.push((arg.clone(), fqn.clone())),
            InputSpec::UserInput(Argument::Tensor(name)) => user.push(name.clone()),
            InputSpec::UserInput(other) => {
                return Err(located::program(format!(
                    "the program takes a non-tensor input ({}); only tensor inputs are exported",
                    other.kind()
                )))
            }
            InputSpec::Other(kind) => {
                return Err(located::program(format!(
                    "the program has a `{kind}` input, which the ONNX export does not handle"
                )))
            }
        }
    }
    Ok((user, stored))
}

/// The ONNX input names: `given` (default `input`) for a single input; the program's own
/// input names (the forward's parameter names) for several, where `given` is refused
/// because it could name only one of them.
fn input_names(user: &[String], given: Option<&str>) -> Result<Vec<String>, OnnxError> {
    match (user, given) {
        ([_], given) => Ok(vec![given.unwrap_or("input").to_owned()]),
        (several, Some(given)) if several.len() > 1 => Err(OnnxError::Option {
            what: format!(
                "--input-name {given} names a single input, but the model takes {} ({}); its ONNX inputs are named after the forward's parameters",
                several.len(),
                several.join(", ")
            ),
        }),
        (several, _) => Ok(several.to_vec()),
    }
}

/// The recorded sizes and element type of user input `arg`.
fn input_sizes<'g>(graph: &'g Graph, arg: &str) -> Result<(&'g [SymInt], ElemType), OnnxError> {
    let meta = graph.tensor_values.get(arg).ok_or_else(|| {
        located::program(format!("the program has no metadata for its input `{arg}`"))
    })?;
    let elem = ElemType::from_export(meta.dtype).ok_or_else(|| {
        located::program(format!(
            "the input `{arg}` is {}; only float32, int64, int32 and bool inputs are exported",
            elem::export_name(meta.dtype)
        ))
    })?;
    Ok((&meta.sizes, elem))
}

/// The names argument `arg` reads: tensors and symbolic sizes (`sym_size_int_2`).
fn names_read(arg: &Argument) -> Vec<&str> {
    match arg {
        Argument::SymInt(SymInt::Name(name)) | Argument::SymFloat(name) => vec![name],
        Argument::SymInts(sizes) => sizes
            .iter()
            .filter_map(|s| match s {
                SymInt::Name(name) => Some(name.as_str()),
                _ => None,
            })
            .collect(),
        other => other.tensor_names(),
    }
}

/// Whether each node's results reach a graph output. A node whose results nothing live
/// reads (the `arange(batch)` a mask builder makes and never uses) is not lowered, so it
/// cannot stop an export. In-place ops (`copy_`, `add_`) stay live: they change a tensor
/// other nodes read.
fn live_nodes(graph: &Graph) -> Vec<bool> {
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        for output in &node.outputs {
            for name in names_read(output) {
                producer.insert(name, index);
            }
        }
    }
    let mut live = vec![false; graph.nodes.len()];
    let mut todo: Vec<usize> = graph
        .outputs
        .iter()
        .flat_map(names_read)
        .filter_map(|name| producer.get(name).copied())
        .collect();
    for (index, node) in graph.nodes.iter().enumerate() {
        let op = node.target.rsplit_once('.').map_or("", |(head, _)| head);
        if op.ends_with('_') && !op.ends_with("__") {
            todo.push(index);
        }
    }
    while let Some(index) = todo.pop() {
        if std::mem::replace(&mut live[index], true) {
            continue;
        }
        for input in &graph.nodes[index].inputs {
            todo.extend(
                names_read(&input.arg)
                    .into_iter()
                    .filter_map(|name| producer.get(name).copied()),
            );
        }
    }
    live
}

/// `sizes` without its sizes of 1: two shapes equal so hold their entries in one order.
fn without_ones(sizes: &[Size]) -> Vec<Size> {
    sizes
        .iter()
        .filter(|s| **s != Size::fixed(1))
        .copied()
        .collect()
}

/// `value`, the activation `name` is read as, if it is float32.
fn float32_only(name: &str, value: Value) -> Result<Value, OnnxError> {
    match value.elem() {
        ElemType::Float32 => Ok(value),
        other => Err(OnnxError::Shape {
            what: format!(
                "`{name}` holds {other} values; this op is exported on float32 tensors only (convert it with `.float()` in the model)"
            ),
        }),
    }
}

fn readers(graph: &Graph) -> HashMap<String, Vec<usize>> {
    let mut readers: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        for input in &node.inputs {
            for name in input.arg.tensor_names() {
                readers.entry(name.to_owned()).or_default().push(index);
            }
        }
    }
    for output in &graph.outputs {
        if let Some(name) = output.tensor_name() {
            readers.entry(name.to_owned()).or_default().push(usize::MAX);
        }
    }
    readers
}

impl Lowering<'_, '_> {
    fn bound(&self, name: &str) -> Result<&Bound, OnnxError> {
        self.values.get(name).ok_or_else(|| OnnxError::Shape {
            what: format!("value `{name}` is used before it is computed"),
        })
    }

    /// Value `name` as an activation of any element type, whatever its layout.
    pub fn tensor(&self, name: &str) -> Result<Tensor, OnnxError> {
        match self.bound(name)? {
            Bound::Activation(t) => Ok(t.clone()),
            Bound::Stored(fqn) => Err(OnnxError::Shape {
                what: format!("the stored tensor `{fqn}` is used where an activation (a value with the batch) is expected, by an op the export does not evaluate on constants"),
            }),
            Bound::Folded { tensor: t, .. } => match self.materialized.get(name) {
                Some(t) => Ok(t.clone()),
                None if self.batch == BatchDim::Static => {
                    // A static export has no batch: the constant is a value like any other.
                    self.asked_as_activation.replace(Some(name.to_owned()));
                    Err(OnnxError::Shape {
                        what: format!("`{name}` is a constant {:?} computed from constants alone, used as an activation", t.dims()),
                    })
                }
                None => Err(OnnxError::Shape {
                    what: format!("`{name}` is a constant {:?} computed from constants alone, used where an activation (a value with the batch) is expected, by an op the export does not evaluate on constants", t.dims()),
                }),
            },
            Bound::BatchTimes(_) => Err(OnnxError::Shape {
                what: format!("the batch size `{name}` is used as a tensor"),
            }),
            Bound::Number(v) => Err(OnnxError::Shape {
                what: format!("the number `{name}` ({v}) is used as a tensor"),
            }),
            Bound::Uniform { label, .. } => match self.materialized.get(name) {
                Some(t) => Ok(t.clone()),
                None => {
                    self.asked_as_activation.replace(Some(name.to_owned()));
                    Err(OnnxError::Shape {
                        what: format!("`{name}` ({label}) has the same values for every sample (a constant expanded over the batch, or a factory sized by it); it is exported where it meets an activation (arithmetic, where, cat), not as this op's input"),
                    })
                }
            },
            Bound::SampleIndex { .. } => Err(OnnxError::Shape {
                what: format!("`{name}` is `arange` over the batch (each sample's own index); it is exported only as the index of the batch dimension in an indexing (`x[torch.arange(B), idx]`), views of it included"),
            }),
            Bound::Unproduced { by } => Err(OnnxError::Shape {
                what: format!("`{name}` is an output of {by} that the ONNX export does not compute"),
            }),
            Bound::Empty => Err(OnnxError::Shape {
                what: format!("`{name}` is an empty slice; only a cat is exported on it (it leaves it out)"),
            }),
        }
    }

    /// Value `name` as a float32 activation whose batch is on its first dimension (see
    /// [`Lowering::any_activation`]): the operand of every op written for float tensors
    /// only, so that an integer or bool tensor reaching one is an error naming it rather
    /// than an ONNX file whose types do not check.
    pub fn activation(&mut self, name: &str) -> Result<Value, OnnxError> {
        float32_only(name, self.any_activation(name)?)
    }

    /// Value `name`, of any element type, as an activation whose batch is on its first
    /// dimension, possibly folded (`k·N` rows: Swin's windows, LeViT's tokens): for ops
    /// that work on each row alike (convolutions, pooling, normalisations, per-sample
    /// axes, comparisons, indices). The values an op binds with [`Lowering::bind`] get the
    /// same rows, so every activation a node reads this way must have the same factor.
    ///
    /// In a static export the rows are the first size (the ONNX value is the same, seen
    /// without it); a 0-d tensor, which has none, is read lifted
    /// ([`Lowering::lifted_any_activation`]).
    pub fn any_activation(&mut self, name: &str) -> Result<Value, OnnxError> {
        let t = self.tensor(name)?;
        if t.placement() == Placement::Static && (t.sizes().is_empty() || self.is_lifted()) {
            // A 0-d tensor has no rows: it is read lifted, as its one-entry view; and once
            // a node reads lifted ([`Lowering::lift_to`]), it reads every tensor so.
            return self.lifted_any_activation(name);
        }
        let Some((rows, value)) = t.as_rows() else {
            return Err(OnnxError::Shape {
                what: match t.batch_axis() {
                    Some(axis) => format!(
                        "`{name}` has sizes {} with the batch on dimension {axis}; this op is exported only with the batch on the first dimension (permute it back first)",
                        tensor::show(&t.sizes()),
                    ),
                    None => format!(
                        "`{name}` is a scalar; this op is exported on tensors of at least one dimension"
                    ),
                },
            });
        };
        match self.rows.get() {
            Some(k) if k != rows => Err(OnnxError::Shape {
                what: match (k, rows) {
                    (Rows::Batch(_), Rows::Batch(_)) => format!(
                        "it combines activations with {} and {} rows; that mixes samples",
                        tensor::show(&[k.size()]),
                        tensor::show(&[rows.size()])
                    ),
                    _ => format!(
                        "it combines activations with {} and {} rows; this op is exported only on tensors of the same first size",
                        tensor::show(&[k.size()]),
                        tensor::show(&[rows.size()])
                    ),
                },
            }),
            _ => {
                self.rows.set(Some(rows));
                Ok(value)
            }
        }
    }

    /// Value `name` as a constant: stored, or folded by the export.
    pub fn constant(&self, name: &str) -> Result<Constant, OnnxError> {
        match self.bound(name)? {
            Bound::Stored(fqn) => Ok(Constant::Stored(fqn.clone())),
            Bound::Folded { label, .. } | Bound::Uniform { label, .. } => Ok(Constant::Folded {
                value: name.to_owned(),
                label: label.clone(),
            }),
            _ => Err(OnnxError::Shape {
                what: format!("`{name}` must be a parameter, buffer or constant, but it is computed by the graph"),
            }),
        }
    }

    /// Value `name`'s values for one sample, batch dimension and label, if it has the same
    /// values for every sample ([`Bound::Uniform`]).
    pub fn uniform(&self, name: &str) -> Option<(eval::Tensor, usize, String)> {
        match self.values.get(name) {
            Some(Bound::Uniform {
                tensor,
                axis,
                label,
            }) => Some((tensor.clone(), *axis, label.clone())),
            _ => None,
        }
    }

    /// Whether uniform or folded value `name` was made an activation.
    pub fn is_materialized(&self, name: &str) -> bool {
        self.materialized.contains_key(name)
    }

    /// Records `t` as the activation uniform or folded value `name` reads as
    /// ([`Lowering::tensor`]).
    pub fn remember_materialized(&mut self, name: &str, t: Tensor) {
        self.materialized.insert(name.to_owned(), t);
    }

    /// The uniform or folded value the current row asked for as an activation before it
    /// was made one, cleared.
    pub fn take_asked_as_activation(&self) -> Option<String> {
        self.asked_as_activation.take()
    }

    /// Folded value `name` of a static export as a static activation (see
    /// [`Lowering::folded_output`]), or `None` when it is no folded value.
    pub fn materialize_folded(&mut self, name: &str) -> Result<Option<Tensor>, OnnxError> {
        let tensor = match self.values.get(name) {
            Some(Bound::Folded { tensor, .. }) if self.batch == BatchDim::Static => tensor.clone(),
            _ => return Ok(None),
        };
        self.folded_output(name, &tensor).map(Some)
    }

    /// The dimension that carries the batch of value `name`, if it has the same values
    /// for every sample ([`Bound::Uniform`]).
    pub fn uniform_axis(&self, name: &str) -> Option<usize> {
        match self.values.get(name) {
            Some(Bound::Uniform { axis, .. }) => Some(*axis),
            _ => None,
        }
    }

    /// Torch's sizes (1 on the batch) and the batch dimension of value `name`, if it is
    /// `arange` over the batch or a view of it ([`Bound::SampleIndex`]).
    pub fn sample_index(&self, name: &str) -> Option<(&[u64], usize)> {
        match self.values.get(name) {
            Some(Bound::SampleIndex { dims, axis }) => Some((dims, *axis)),
            _ => None,
        }
    }

    /// Binds output 0 of `node` to `arange` over the batch laid out as torch recorded it
    /// ([`Bound::SampleIndex`]): an integer tensor with the batch, once and unfolded, on
    /// one dimension. The caller vouches that the value at every position is its
    /// coordinate on that dimension.
    pub fn bind_sample_index(&mut self, node: &Node) -> Result<(), OnnxError> {
        let name = self.output_name(node, 0)?;
        let elem = self.recorded_elem(name)?;
        if !matches!(elem, ElemType::Int64 | ElemType::Int32) {
            return Err(OnnxError::Shape {
                what: format!(
                    "`{name}` holds each sample's index as {elem}; only int64 and int32 indices are exported"
                ),
            });
        }
        let sizes = self.recorded_name_sizes(name)?;
        let batch: Vec<usize> = (0..sizes.len()).filter(|&a| sizes[a].batch).collect();
        let [axis] = batch[..] else {
            return Err(OnnxError::Shape {
                what: format!(
                    "`{name}`, computed from `arange` over the batch, has sizes {}; only views that keep the batch once are exported",
                    tensor::show(&sizes)
                ),
            });
        };
        if sizes[axis].count != 1 {
            return Err(OnnxError::Shape {
                what: format!(
                    "`{name}`, computed from `arange` over the batch, has sizes {}, the batch folded",
                    tensor::show(&sizes)
                ),
            });
        }
        let dims = sizes
            .iter()
            .map(|s| if s.batch { 1 } else { s.count })
            .collect();
        self.values
            .insert(name.to_owned(), Bound::SampleIndex { dims, axis });
        Ok(())
    }

    /// Whether value `name` is an empty slice ([`Bound::Empty`]).
    pub fn is_empty_slice(&self, name: &str) -> bool {
        matches!(self.values.get(name), Some(Bound::Empty))
    }

    /// Binds output 0 of `node` to an empty slice.
    pub fn bind_empty(&mut self, node: &Node) -> Result<(), OnnxError> {
        let name = self.output_name(node, 0)?;
        self.values.insert(name.to_owned(), Bound::Empty);
        Ok(())
    }

    /// Whether value `name` is a constant: stored, folded by the export, or the same for
    /// every sample (a constant with size 1 on its batch dimension).
    pub fn is_constant(&self, name: &str) -> bool {
        matches!(
            self.values.get(name),
            Some(Bound::Stored(_) | Bound::Folded { .. } | Bound::Uniform { .. })
        )
    }

    /// Constant `name`'s values in their own dtype (a stored tensor is read).
    pub fn constant_tensor(&mut self, name: &str) -> Result<eval::Tensor, OnnxError> {
        match self.constant(name)? {
            Constant::Stored(fqn) => self.tensors.read_tensor(&fqn),
            Constant::Folded { value, .. } => self.folded(&value).cloned(),
        }
    }

    /// Constant `name`'s sizes and values as float32 (an int64 constant converted).
    pub fn constant_values(&mut self, name: &str) -> Result<(Vec<u64>, Vec<f32>), OnnxError> {
        let t = self.constant_tensor(name)?;
        Ok((t.dims().to_vec(), t.to_f32()))
    }

    /// Binds output `k` of `node` to float32 values of sizes `dims` the export computed
    /// (see [`Lowering::bind_folded`]).
    pub fn bind_folded_f32(
        &mut self,
        node: &Node,
        k: usize,
        dims: Vec<u64>,
        values: Vec<f32>,
    ) -> Result<(), OnnxError> {
        let tensor = eval::Tensor::f32(dims, values).map_err(|what| OnnxError::Shape { what })?;
        self.bind_folded(node, k, tensor)
    }

    /// Constant `name` as an initializer of element type `elem` (a comparison's or an
    /// integer op's operand): integer values exactly, any non-zero as `true` for bool;
    /// refused where a value is not exact in `elem` (a fraction as int64).
    pub fn constant_weight_as(&mut self, name: &str, elem: ElemType) -> Result<Weight, OnnxError> {
        let c = self.constant_tensor(name)?;
        let values = Self::initializer_values(&c, elem);
        self.g
            .typed_constant(name, c.dims().to_vec(), &values, elem)
    }

    /// `c`'s values for an initializer of element type `elem`: integers exactly, any
    /// non-zero as `true` for bool, floats as float32 gives them.
    pub fn initializer_values(c: &eval::Tensor, elem: ElemType) -> Vec<f64> {
        match (elem, c.to_i64()) {
            (ElemType::Bool, _) => c
                .to_f32()
                .iter()
                .map(|&v| f64::from(u8::from(v != 0.0)))
                .collect(),
            (_, Ok(v)) => v.into_iter().map(|v| v as f64).collect(),
            (_, Err(_)) => c.to_f32().into_iter().map(f64::from).collect(),
        }
    }

    /// Constant `name` as an initializer (written once).
    pub fn constant_weight(&mut self, name: &str) -> Result<Weight, OnnxError> {
        let c = self.constant(name)?;
        self.weight(&c)
    }

    /// Binds output `k` of `node` to a constant the export computed, after checking its
    /// sizes against the ones torch recorded (a constant has no batch) and giving it the
    /// recorded dtype (int64 for an index, float32 for a float type).
    pub fn bind_folded(
        &mut self,
        node: &Node,
        k: usize,
        tensor: eval::Tensor,
    ) -> Result<(), OnnxError> {
        let name = self.output_name(node, k)?;
        self.bind_folded_as(node, name, tensor)
    }

    /// Binds value `name`, an output of `node`, to `tensor` (see [`Lowering::bind_folded`]).
    pub fn bind_folded_as(
        &mut self,
        node: &Node,
        name: &str,
        tensor: eval::Tensor,
    ) -> Result<(), OnnxError> {
        let recorded = self.meta(name)?;
        let same = recorded.sizes.len() == tensor.rank()
            && recorded
                .sizes
                .iter()
                .zip(tensor.dims())
                .all(|(r, &d)| *r == SymInt::Int(d as i64));
        if !same {
            return Err(OnnxError::Shape {
                what: format!(
                    "the export folds `{name}` to a constant of shape {:?}, torch recorded {}",
                    tensor.dims(),
                    show(&recorded.sizes)
                ),
            });
        }
        let (typed, label) = self.typed_and_labelled(node, name, tensor)?;
        self.values.insert(
            name.to_owned(),
            Bound::Folded {
                tensor: typed,
                label,
            },
        );
        Ok(())
    }

    /// `tensor`, computed at export for value `name` of `node`, in the dtype torch recorded
    /// ([`eval::recorded`]: held as int64 or float32, with that dtype's values), and the label its initializer
    /// is named after (the module that computed it, then the value).
    fn typed_and_labelled(
        &self,
        node: &Node,
        name: &str,
        tensor: eval::Tensor,
    ) -> Result<(eval::Tensor, String), OnnxError> {
        let typed =
            eval::recorded(&tensor, self.meta(name)?.dtype).map_err(|e| OnnxError::Shape {
                what: format!("the export folds `{name}`: {e}"),
            })?;
        let label =
            located::module_path(node).map_or_else(|| name.to_owned(), |m| format!("{m}.{name}"));
        Ok((typed, label))
    }

    /// Whether a symbolic-int value is the batch.
    pub fn is_batch_symbol(&self, name: &str) -> bool {
        self.batch_times(name) == Some(1)
    }

    /// The constant a symbolic-int value multiplies the batch by, if it is one.
    pub fn batch_times(&self, name: &str) -> Option<u64> {
        match self.values.get(name) {
            Some(Bound::BatchTimes(k)) => Some(*k),
            _ => None,
        }
    }

    /// The folded tensor `name` is bound to.
    fn folded(&self, name: &str) -> Result<&eval::Tensor, OnnxError> {
        match self.bound(name)? {
            Bound::Folded { tensor, .. } | Bound::Uniform { tensor, .. } => Ok(tensor),
            _ => Err(OnnxError::Shape {
                what: format!("`{name}` is not a folded constant"),
            }),
        }
    }

    /// Constant `c`'s sizes.
    pub fn constant_dims(&self, c: &Constant) -> Result<Vec<u64>, OnnxError> {
        match c {
            Constant::Stored(fqn) => self.tensors.dims(fqn),
            Constant::Folded { value, .. } => Ok(self.folded(value)?.dims().to_vec()),
        }
    }

    /// Constant `c`'s values as `f32`.
    pub fn read(&mut self, c: &Constant) -> Result<Vec<f32>, OnnxError> {
        match c {
            Constant::Stored(fqn) => self.tensors.read_f32(fqn),
            Constant::Folded { value, .. } => Ok(self.folded(value)?.to_f32()),
        }
    }

    /// Constant `c` as a float32 initializer, written once: a stored tensor under its FQN,
    /// a folded one under a fresh name based on its label.
    pub fn weight(&mut self, c: &Constant) -> Result<Weight, OnnxError> {
        if let Some(w) = self.weights.get(c) {
            return Ok(w.clone());
        }
        let dims = self.constant_dims(c)?;
        let w = match c {
            Constant::Stored(fqn) => match self.deferred(c, Transform::Copy) {
                Some(bytes) => self.g.deferred_weight(fqn, dims, bytes)?,
                None => {
                    let values = self.read(c)?;
                    self.g.weight(fqn, dims, &values)?
                }
            },
            Constant::Folded { label, .. } => {
                let values = self.read(c)?;
                self.g.folded(label, dims, &values)?
            }
        };
        self.weights.insert(c.clone(), w.clone());
        Ok(w)
    }

    /// 2-D constant `c` (`[n, k]`) as a `[k, n]` float32 initializer
    /// (`<weight>.transposed`), written once however many ops read it.
    pub fn transposed_weight(&mut self, c: &Constant) -> Result<Weight, OnnxError> {
        if let Some(w) = self.transposed.get(c) {
            return Ok(w.clone());
        }
        let &[n, k] = self.constant_dims(c)?.as_slice() else {
            return Err(OnnxError::Shape {
                what: format!("`{c}` is not a 2-D linear weight"),
            });
        };
        let name = format!("{c}.transposed");
        let transpose = Transform::Transpose {
            rows: n as usize,
            cols: k as usize,
            scale: None,
        };
        let w = match self.deferred(c, transpose) {
            Some(bytes) => self.g.deferred_weight(&name, vec![k, n], bytes)?,
            None => {
                let values = self.read(c)?;
                let transposed =
                    super::aten::transpose_2d(&values, n, k).ok_or_else(|| OnnxError::Shape {
                        what: format!("`{c}` does not hold {n}×{k} values"),
                    })?;
                self.g.weight(&name, vec![k, n], &transposed)?
            }
        };
        self.transposed.insert(c.clone(), w.clone());
        Ok(w)
    }

    /// Stored constant `c` through `transform`, computed from the mapped input as the file
    /// is written, when the source maps it (`None` for a folded constant).
    pub fn deferred(&self, c: &Constant, transform: Transform) -> Option<Deferred> {
        match c {
            Constant::Stored(fqn) => Deferred::new(self.tensors.mapped(fqn)?, transform),
            Constant::Folded { .. } => None,
        }
    }

    /// The nodes reading value `name` (`usize::MAX` for a graph output).
    pub fn readers_of(&self, name: &str) -> &[usize] {
        self.readers.get(name).map_or(&[], Vec::as_slice)
    }

    /// Output `k` of `node` as a value name.
    pub fn output_name<'n>(&self, node: &'n Node, k: usize) -> Result<&'n str, OnnxError> {
        node.outputs
            .get(k)
            .and_then(Argument::tensor_name)
            .ok_or_else(|| OnnxError::Shape {
                what: format!("output {k} is not a tensor"),
            })
    }

    /// torch's record of tensor value `name`.
    pub(super) fn meta(&self, name: &str) -> Result<&TensorMeta, OnnxError> {
        self.expanded
            .get(name)
            .or_else(|| self.graph.tensor_values.get(name))
            .ok_or_else(|| OnnxError::Shape {
                what: format!("the program has no metadata for `{name}`"),
            })
    }

    /// torch's record of tensor value `name`, whose element type must be one the export
    /// handles.
    fn typed_meta(&self, name: &str) -> Result<(&TensorMeta, ElemType), OnnxError> {
        let meta = self.meta(name)?;
        let elem = ElemType::from_export(meta.dtype).ok_or_else(|| OnnxError::Shape {
            what: format!(
                "`{name}` is {}: {}; only float32, int64, int32 and bool tensors are exported",
                elem::export_name(meta.dtype),
                elem::not_exported_because(meta.dtype)
            ),
        })?;
        Ok((meta, elem))
    }

    /// The element type torch recorded for tensor value `name`.
    pub fn recorded_elem(&self, name: &str) -> Result<ElemType, OnnxError> {
        Ok(self.typed_meta(name)?.1)
    }

    /// The shape of a row torch recorded for tensor value `name`, whose batch (possibly
    /// folded) must be its first dimension; also checks that its element type is one the
    /// export handles.
    /// In a static export, the first size is the rows.
    pub fn recorded_shape(&self, name: &str) -> Result<Vec<u64>, OnnxError> {
        let sizes = self.recorded_name_sizes(name)?;
        let rows = |first: &Size| first.batch || self.batch == BatchDim::Static;
        match sizes.split_first() {
            Some((first, rest)) if rows(first) => Ok(rest.iter().map(|s| s.count).collect()),
            _ => Err(OnnxError::Shape {
                what: format!(
                    "its output `{name}` has sizes {}, without the batch first",
                    tensor::show(&sizes)
                ),
            }),
        }
    }

    /// torch's recorded sizes of tensor value `name`, in terms of the batch.
    pub fn recorded_name_sizes(&self, name: &str) -> Result<Vec<Size>, OnnxError> {
        let (meta, _) = self.typed_meta(name)?;
        self.batch.sizes(&meta.sizes).map_err(|e| OnnxError::Shape {
            what: format!("its output `{name}`: {e}"),
        })
    }

    /// Binds output `k` of `node` to `value`, after checking `value`'s shape against the
    /// one torch recorded (so a lowering bug is an error, never a wrong graph).
    /// `value`'s rows are those of the activations the node read ([`Lowering::activation`]).
    /// A lifted result ([`Lowering::lifted_activation`]) loses its added row.
    pub fn bind(&mut self, node: &Node, k: usize, value: Value) -> Result<(), OnnxError> {
        let rows = self.rows.get().ok_or_else(|| OnnxError::Shape {
            what: "it computes an activation without reading one".into(),
        })?;
        let t = match rows {
            Rows::Lifted { scalar: false, .. } => {
                let name = self.output_name(node, k)?;
                self.unlift(value, name)?
            }
            Rows::Lifted { scalar: true, .. } => {
                let name = self.output_name(node, k)?;
                let t = self.unlift(value, name)?;
                let recorded = self.recorded_name_sizes(name)?;
                if without_ones(&t.sizes()) == without_ones(&recorded) {
                    t.reshaped(&mut self.g, name, &recorded)?
                } else {
                    t
                }
            }
            Rows::Batch(_) | Rows::Static(_) => Tensor::from_rows(rows, value),
        };
        self.bind_tensor(node, k, t)
    }

    /// Value `name` as a float32 activation for an op written for rows that is to work
    /// along any torch dimension: in a static export, the tensor lifted under one added
    /// row ([`Rows::Lifted`]: a Reshape to `[1, sizes…]`, seen without that row, so torch
    /// dimension `d` is per-sample axis `d`); otherwise [`Lowering::activation`].
    pub fn lifted_activation(&mut self, name: &str) -> Result<Value, OnnxError> {
        let value = self.lifted_any_activation(name)?;
        float32_only(name, value)
    }

    /// [`Lowering::lifted_activation`] of any element type (see
    /// [`Lowering::any_activation`]). A 0-d tensor is lifted as its one-entry 1-d view, as
    /// torch's kernels see it ([`Rows::Lifted`]'s `scalar`).
    pub fn lifted_any_activation(&mut self, name: &str) -> Result<Value, OnnxError> {
        let t = self.tensor(name)?;
        if t.placement() != Placement::Static {
            return self.any_activation(name);
        }
        let (scalar, rank) = match self.rows.get() {
            None => (false, 0),
            Some(Rows::Lifted { scalar, rank }) => (scalar, rank),
            Some(Rows::Batch(_) | Rows::Static(_)) => {
                return Err(OnnxError::Shape {
                    what: format!("`{name}` is read both lifted and by rows"),
                })
            }
        };
        let scope = format!("{name}.lifted");
        let (value, of_scalar) = if t.sizes().is_empty() && rank == 0 {
            let view = t.reshaped(&mut self.g, &scope, &[Size::fixed(1)])?;
            (self.lift(&view, &scope)?, true)
        } else {
            (self.lift_padded(&t, rank, &scope)?, false)
        };
        self.rows.set(Some(Rows::Lifted {
            scalar: scalar || of_scalar,
            rank,
        }));
        Ok(value)
    }

    /// Starts a node: no activation read yet ([`Lowering::rows_read`]).
    pub fn start_node(&self) {
        self.rows.set(None);
    }

    /// Makes the current node read every static activation lifted with at least `rank`
    /// per-sample axes ([`Rows::Lifted`]'s `rank`), before it reads any: for an
    /// element-wise op whose constant operand has more dimensions than an activation's
    /// rows, so that the constant broadcasts within the one row as torch broadcasts it
    /// with the whole tensor (a constant with more rows than the activation widens it).
    pub fn lift_to(&mut self, rank: usize) -> Result<(), OnnxError> {
        if self.rows.get().is_some() {
            return Err(OnnxError::Shape {
                what: "it is lifted after it read an activation".into(),
            });
        }
        self.rows.set(Some(Rows::Lifted {
            scalar: false,
            rank,
        }));
        Ok(())
    }

    /// The rows of the activations the current node read ([`Lowering::any_activation`]).
    pub fn rows_read(&self) -> Result<Rows, OnnxError> {
        self.rows.get().ok_or_else(|| OnnxError::Shape {
            what: "it computes an activation without reading one".into(),
        })
    }

    /// The rows of activation `t` ([`Tensor::as_rows`]), which must have its batch (or,
    /// static, a dimension) first.
    pub fn rows_of(&self, t: &Tensor) -> Result<Rows, OnnxError> {
        t.as_rows()
            .map(|(rows, _)| rows)
            .ok_or_else(|| OnnxError::Shape {
                what: format!(
                    "its input has sizes {}; this op is exported only with the batch first",
                    tensor::show(&t.sizes())
                ),
            })
    }

    /// Static activation `t` lifted under one added row (see [`Rows::Lifted`]): the
    /// ONNX value `[1, sizes…]`, seen without that row.
    pub fn lift(&mut self, t: &Tensor, scope: &str) -> Result<Value, OnnxError> {
        self.lift_padded(t, 0, scope)
    }

    /// [`Lowering::lift`] of `t` with sizes of 1 in front of its own up to `rank`
    /// per-sample axes: the ONNX value `[1, 1…, sizes…]`, seen without its first axis.
    fn lift_padded(&mut self, t: &Tensor, rank: usize, scope: &str) -> Result<Value, OnnxError> {
        let mut sizes = vec![Size::fixed(1); 1 + rank.saturating_sub(t.rank())];
        sizes.extend(t.sizes());
        let lifted = t.clone().reshaped(&mut self.g, scope, &sizes)?;
        lifted
            .value()
            .without_first()
            .map(|(_, value)| value)
            .ok_or_else(|| OnnxError::Shape {
                what: "a lifted tensor has no row".into(),
            })
    }

    /// The value an op written for rows reads `t` as, so that every per-sample axis of
    /// its result is a torch dimension of `t` from the second on (a batch first) or from
    /// the first (a static tensor, [`Lowering::lift`]ed); [`Lowering::rows_result`] makes
    /// the result an activation again.
    pub fn rows_input(&mut self, t: &Tensor, scope: &str) -> Result<Value, OnnxError> {
        match t.placement() {
            Placement::Static => self.lift(t, scope),
            Placement::Batch { .. } => Ok(t.value().clone()),
        }
    }

    /// The result `y` of an op on [`Lowering::rows_input`] of `t`, with `t`'s layout.
    pub fn rows_result(&mut self, t: &Tensor, y: Value, scope: &str) -> Result<Tensor, OnnxError> {
        match t.placement() {
            Placement::Static => self.unlift(y, scope),
            Placement::Batch { .. } => t.with_value(y),
        }
    }

    /// The inverse of [`Lowering::lift`]: lifted `value` as a static activation.
    pub fn unlift(&mut self, value: Value, scope: &str) -> Result<Tensor, OnnxError> {
        let sizes: Vec<Size> = value.shape().iter().map(|&d| Size::fixed(d)).collect();
        Tensor::from_rows(
            Rows::Lifted {
                scalar: false,
                rank: 0,
            },
            value,
        )
        .reshaped(&mut self.g, scope, &sizes)
    }

    /// Whether the current node read its activations lifted
    /// ([`Lowering::lifted_activation`]): their per-sample axes are then torch's own.
    pub fn is_lifted(&self) -> bool {
        matches!(self.rows.get(), Some(Rows::Lifted { .. }))
    }

    /// Binds output `k` of `node` to `t`, after checking its sizes, batch axis and factor
    /// included, against the ones torch recorded.
    pub fn bind_tensor(&mut self, node: &Node, k: usize, t: Tensor) -> Result<(), OnnxError> {
        let name = self.output_name(node, k)?;
        self.bind_name(name, t)
    }

    /// Binds the pieces of a node returning a list of tensors (`split`, `chunk`) to
    /// `values`, after checking their count and shapes against torch's record.
    pub fn bind_list(&mut self, node: &Node, values: Vec<Tensor>) -> Result<(), OnnxError> {
        let [Argument::Tensors(names)] = node.outputs.as_slice() else {
            return Err(OnnxError::Shape {
                what: "its output is not a list of tensors".into(),
            });
        };
        if names.len() != values.len() {
            return Err(OnnxError::Shape {
                what: format!(
                    "the export computes {} pieces, torch recorded {}",
                    values.len(),
                    names.len()
                ),
            });
        }
        for (name, value) in names.iter().zip(values) {
            self.bind_name(name, value)?;
        }
        Ok(())
    }

    /// Binds value `name` (an output of the node being lowered) to activation `t`, whose
    /// element type and sizes must be the ones torch recorded.
    pub fn bind_name(&mut self, name: &str, t: Tensor) -> Result<(), OnnxError> {
        let elem = self.recorded_elem(name)?;
        if t.value().elem() != elem {
            return Err(OnnxError::Shape {
                what: format!(
                    "the export computes a {} tensor for `{name}`, torch recorded {elem}",
                    t.value().elem()
                ),
            });
        }
        let recorded = self.recorded_name_sizes(name)?;
        if recorded != t.sizes() {
            return Err(OnnxError::Shape {
                what: format!(
                    "the export computes sizes {} for `{name}`, torch recorded {}",
                    tensor::show(&t.sizes()),
                    tensor::show(&recorded)
                ),
            });
        }
        self.values.insert(name.to_owned(), Bound::Activation(t));
        Ok(())
    }

    /// torch's recorded sizes of output `k` of `node`, in terms of the batch.
    pub fn recorded_sizes(&self, node: &Node, k: usize) -> Result<Vec<Size>, OnnxError> {
        self.recorded_name_sizes(self.output_name(node, k)?)
    }

    /// Binds output `k` of `node` to `tensor` repeated over the batch ([`Bound::Uniform`]):
    /// torch's record must have the batch (once, possibly a multiple of it) where `tensor`
    /// has size 1, and `tensor`'s sizes elsewhere.
    pub fn bind_uniform(
        &mut self,
        node: &Node,
        k: usize,
        tensor: eval::Tensor,
    ) -> Result<(), OnnxError> {
        let name = self.output_name(node, k)?;
        self.bind_uniform_as(node, name, tensor)
    }

    /// Binds output `k` of `node` to `tensor`, computed at export: repeated over the batch
    /// when `uniform` ([`Lowering::bind_uniform`]; the value the same for every sample),
    /// else a constant ([`Lowering::bind_folded`]).
    pub fn bind_computed(
        &mut self,
        node: &Node,
        k: usize,
        tensor: eval::Tensor,
        uniform: bool,
    ) -> Result<(), OnnxError> {
        if uniform {
            self.bind_uniform(node, k, tensor)
        } else {
            self.bind_folded(node, k, tensor)
        }
    }

    /// Binds value `name`, an output of `node`, to `tensor` repeated over the batch (see
    /// [`Lowering::bind_uniform`]).
    pub fn bind_uniform_as(
        &mut self,
        node: &Node,
        name: &str,
        tensor: eval::Tensor,
    ) -> Result<(), OnnxError> {
        let recorded = self.recorded_name_sizes(name)?;
        let Some(axis) = Self::uniform_fit(&recorded, &tensor) else {
            return Err(OnnxError::Shape {
                what: format!(
                    "the export computes `{name}` per sample as {:?}, torch recorded {}; only results that keep the batch once, as a dimension of size 1 per sample, are the same for every sample",
                    tensor.dims(),
                    tensor::show(&recorded)
                ),
            });
        };
        let (typed, label) = self.typed_and_labelled(node, name, tensor)?;
        self.values.insert(
            name.to_owned(),
            Bound::Uniform {
                tensor: typed,
                axis,
                label,
            },
        );
        Ok(())
    }

    /// Whether value `name`, computed per sample as `tensor`, can be bound as the same for
    /// every sample ([`Lowering::bind_uniform_as`]).
    pub fn fits_uniform(&self, name: &str, tensor: &eval::Tensor) -> bool {
        self.recorded_name_sizes(name)
            .is_ok_and(|recorded| Self::uniform_fit(&recorded, tensor).is_some())
    }

    /// The batch dimension of a value torch recorded as `recorded` and the export computed
    /// per sample as `tensor`, when the record has the batch on one dimension where
    /// `tensor` has size 1 and `tensor`'s sizes elsewhere.
    fn uniform_fit(recorded: &[Size], tensor: &eval::Tensor) -> Option<usize> {
        let mut batch_axes = (0..recorded.len()).filter(|&a| recorded[a].batch);
        let (Some(axis), None) = (batch_axes.next(), batch_axes.next()) else {
            return None;
        };
        let fits = recorded.len() == tensor.rank()
            && recorded
                .iter()
                .zip(tensor.dims())
                .all(|(r, &d)| if r.batch { d == 1 } else { r.count == d });
        fits.then_some(axis)
    }

    /// Binds `node`'s symbolic output (an int or a float) to the number `value`.
    pub fn bind_number(&mut self, node: &Node, value: f64) -> Result<(), OnnxError> {
        match node.outputs.as_slice() {
            [Argument::SymInt(ckpt_aten::program::SymInt::Name(name)) | Argument::SymFloat(name)] =>
            {
                self.values.insert(name.clone(), Bound::Number(value));
                Ok(())
            }
            _ => Err(OnnxError::Shape {
                what: "its output is not one named symbolic number".into(),
            }),
        }
    }

    /// `node` with every argument naming a known number ([`Bound::Number`]) replaced by
    /// that literal (an int where torch has a symbolic int), or `None` when it names none.
    pub fn with_known_numbers(&self, node: &Node) -> Option<Node> {
        let known = |name: &str| match self.values.get(name) {
            Some(Bound::Number(v)) => Some(*v),
            _ => None,
        };
        let literal = |arg: &Argument| -> Option<Argument> {
            match arg {
                Argument::SymFloat(name) => known(name).map(Argument::Float),
                Argument::SymInt(SymInt::Name(name)) => {
                    known(name).map(|v| Argument::Int(v as i64))
                }
                Argument::SymInts(sizes) => {
                    let mut any = false;
                    let sizes = sizes
                        .iter()
                        .map(|s| match s {
                            SymInt::Name(name) => known(name).map_or_else(
                                || s.clone(),
                                |v| {
                                    any = true;
                                    SymInt::Int(v as i64)
                                },
                            ),
                            other => other.clone(),
                        })
                        .collect();
                    any.then_some(Argument::SymInts(sizes))
                }
                _ => None,
            }
        };
        let mut changed = node.clone();
        let mut any = false;
        for input in &mut changed.inputs {
            if let Some(arg) = literal(&input.arg) {
                input.arg = arg;
                any = true;
            }
        }
        any.then_some(changed)
    }

    /// Binds a symbolic-int output to the batch times `count`.
    pub fn bind_batch_times(&mut self, node: &Node, count: u64) -> Result<(), OnnxError> {
        match node.outputs.first() {
            Some(Argument::SymInt(ckpt_aten::program::SymInt::Name(name))) => {
                self.values.insert(name.clone(), Bound::BatchTimes(count));
                Ok(())
            }
            _ => Err(OnnxError::Shape {
                what: "its output is not a named symbolic integer".into(),
            }),
        }
    }

    /// Marks every output of `node` from `k` on as not computed.
    pub fn unproduced_from(&mut self, node: &Node, k: usize) {
        for k in k..node.outputs.len() {
            self.unproduced_output(node, k);
        }
    }

    /// Marks output `k` of `node` as not computed.
    pub fn unproduced_output(&mut self, node: &Node, k: usize) {
        if let Some(name) = node.outputs.get(k).and_then(Argument::tensor_name) {
            self.values.insert(
                name.to_owned(),
                Bound::Unproduced {
                    by: format!("`{}` ({})", node.label(), node.target),
                },
            );
        }
    }

    /// After in-place op `target` (aten name ending in `_`: `relu_`, `add_`, `div_`), its
    /// `self` argument holds the result as well, and so does every name read later that is
    /// the same whole tensor ([`Aliases::changed_with`]), so a later reader of any of them
    /// sees it.
    pub fn rebind_changed_input(&mut self, node: &Node, target: &str) -> Result<(), OnnxError> {
        let op = target.rsplit_once('.').map_or(target, |(head, _)| head);
        // A copy's lowering writes through the views to their tensor itself, and refuses
        // a view read afterwards that would keep the old values (`copy_into_activation`).
        if !op.ends_with('_') || op.ends_with("__") || target == super::alias::COPY {
            return Ok(());
        }
        let Some(Argument::Tensor(changed)) = Args(node).get("self") else {
            return Ok(());
        };
        // A change of part of an activation (`y[:, 0].fill_(1)`, `y[:, 1:3].mul_(2)`) is a
        // write into that activation.
        if self.writes_into_activation(changed, self.at) {
            let output = self.output_name(node, 0)?.to_owned();
            if matches!(self.bound(&output)?, Bound::Uniform { .. })
                && !self.is_materialized(&output)
            {
                self.materialize(&output, &Self::scope(node))?;
            }
            let result = self.tensor(&output)?;
            return self.write_into_activation(node, changed, result);
        }
        let result = self.bound(self.output_name(node, 0)?)?.clone();
        let same = self
            .aliases
            .changed_with(changed, self.at)
            .map_err(|what| OnnxError::Shape { what })?;
        for name in same {
            self.values.insert(name, result.clone());
        }
        self.values.insert(changed.clone(), result);
        Ok(())
    }

    /// The ONNX scope of `node`: its module path (`layer1.0.conv1`), else its name.
    pub fn scope(node: &Node) -> String {
        located::module_path(node)
            .unwrap_or_else(|| node.label())
            .to_owned()
    }

    /// Output `name`, the same values for every sample (`zeros_like(x)`, a constant
    /// expanded over the batch): `tensor` (size 1 on `axis`) chosen by a constant-true
    /// `Where` against one element of each sample of user input `first`, reshaped to put
    /// its batch on `axis`, so the batch follows the input while no value of it (not
    /// even a NaN) reaches the output, and no op reads the batch size.
    fn uniform_output(
        &mut self,
        name: &str,
        tensor: &eval::Tensor,
        axis: usize,
        first: &str,
    ) -> Result<Tensor, OnnxError> {
        let scope = name;
        let input = self.tensor(first)?;
        if input.placement() != (Placement::Batch { axis: 0, factor: 1 }) {
            return Err(OnnxError::Shape {
                what: format!("the input `{first}` does not keep its batch first"),
            });
        }
        let mut one = input.value().clone();
        for a in 0..one.shape().len() {
            if one.shape()[a] != 1 {
                one = self.g.slice(scope, &one, a, 0..1)?;
            }
        }
        let rank = tensor.rank();
        let mut sizes = vec![Size::fixed(1); rank];
        let batch = sizes.get_mut(axis).ok_or_else(|| OnnxError::Shape {
            what: format!("`{name}` has no dimension {axis}"),
        })?;
        *batch = Size::batch(1);
        let per_sample = vec![1; one.shape().len()];
        let one = self.g.reshape(scope, &one, &per_sample)?;
        let placed = Tensor::rows(one, 1).reshaped(&mut self.g, scope, &sizes)?;
        let mut shape = tensor.dims().to_vec();
        shape.remove(axis);
        let y = self.picked_constant(name, tensor, placed.value(), shape)?;
        let y = placed.with_value(y)?;
        let recorded = self.recorded_name_sizes(name)?;
        if recorded != y.sizes() {
            return Err(OnnxError::Shape {
                what: format!(
                    "the export computes sizes {} for `{name}`, torch recorded {}",
                    tensor::show(&y.sizes()),
                    tensor::show(&recorded)
                ),
            });
        }
        Ok(y)
    }

    /// The static program output `name`, a constant torch computed without reading the
    /// input (`x.new_zeros(2, 3)`, `torch.full_like(x, v)` of a static input), as a value
    /// of the graph: `Where(true, constant, c)`, `c` one element of the carrier (the first
    /// graph input) cast to the output's type, whose value is never taken (so an infinite
    /// or NaN input changes nothing, as `x·0` would). An ONNX output must be computed from
    /// the graph's inputs for ATC; an input with an empty dimension is left to the ATC
    /// check, which refuses it.
    fn folded_output(&mut self, name: &str, tensor: &eval::Tensor) -> Result<Tensor, OnnxError> {
        let scope = name;
        let rank = tensor.rank();
        let mut one = Tensor::fixed(self.carrier.clone());
        if one.value().shape().contains(&0) {
            return Err(OnnxError::Shape {
                what: format!(
                    "`{name}` is a constant computed without the input, which has no element to carry it (its sizes {:?} hold a 0; ATC compiles no empty tensor)",
                    one.value().shape()
                ),
            });
        }
        for axis in 0..one.rank() {
            if one.value().shape()[axis] > 1 {
                one = one.sliced(&mut self.g, scope, name, axis, 0..1)?;
            }
        }
        let one = one.reshaped(&mut self.g, scope, &vec![Size::fixed(1); rank])?;
        let y = self.picked_constant(name, tensor, one.value(), tensor.dims().to_vec())?;
        Ok(Tensor::fixed(y))
    }

    /// Output `name`'s constant `tensor` as `Where(true, tensor, c)` at the type torch
    /// recorded, `c` the value `carrier` (one element of the input, per sample or not)
    /// cast to that type, whose value is never taken; `shape` is the result's per-sample
    /// shape. onnxruntime has no bool `Where`: a bool constant is picked as int32 and cast.
    fn picked_constant(
        &mut self,
        name: &str,
        tensor: &eval::Tensor,
        carrier: &Value,
        shape: Vec<u64>,
    ) -> Result<Value, OnnxError> {
        let scope = name;
        let elem = self.recorded_elem(name)?;
        let picked_elem = if elem == ElemType::Bool {
            ElemType::Int32
        } else {
            elem
        };
        let picked = emit::cast(&mut self.g, scope, carrier, picked_elem);
        let values: Vec<f64> = match tensor.values() {
            eval::Values::I64(v) => v.iter().map(|&i| i as f64).collect(),
            _ => tensor.to_f32().iter().map(|&v| f64::from(v)).collect(),
        };
        let constant = self.g.typed_constant(
            &format!("{name}.value"),
            tensor.dims().to_vec(),
            &values,
            picked_elem,
        )?;
        let always = self.g.typed_constant(
            &format!("{name}.always"),
            vec![1; tensor.rank()],
            &[1.0],
            ElemType::Bool,
        )?;
        let y = emit::typed(
            &mut self.g,
            "Where",
            scope,
            [always.name(), constant.name(), picked.name()],
            &shape,
            picked_elem,
        );
        Ok(emit::cast(&mut self.g, scope, &y, elem))
    }

    /// The program's outputs but its `None`s (at least one), each with the dimension that carries its
    /// batch: torch's layout is kept (`x.unsqueeze(0)` of a `[N, 4, 5]` input is `[1, N, 4,
    /// 5]`, its batch on dimension 1); an output whose batch is folded into a dimension
    /// (`4·N`) is refused, as no `dim_param` names a multiple of the batch. A static
    /// export's outputs have no batch dimension.
    fn outputs(&mut self, first: &str) -> Result<Vec<(Value, Option<usize>)>, OnnxError> {
        let graph = self.graph;
        if graph.outputs.iter().all(|o| *o == Argument::None) {
            return Err(located::program("the program returns no tensor"));
        }
        let mut values = Vec::with_capacity(graph.outputs.len());
        for (k, output) in graph.outputs.iter().enumerate() {
            if *output == Argument::None {
                // No ONNX value stands for `None`: left out, as `torch.onnx` leaves it.
                continue;
            }
            let name = output.tensor_name().ok_or_else(|| {
                located::program(format!(
                    "the program's output {k} is {}; only tensor outputs are exported",
                    output.kind()
                ))
            })?;
            let at = |e: OnnxError| located::program(format!("the program's output `{name}`: {e}"));
            let t = match self.values.get(name) {
                Some(Bound::Uniform { tensor, axis, .. }) => {
                    let (tensor, axis) = (tensor.clone(), *axis);
                    self.uniform_output(name, &tensor, axis, first)
                        .map_err(at)?
                }
                Some(Bound::Folded { tensor, .. }) if self.batch == BatchDim::Static => {
                    let tensor = tensor.clone();
                    self.folded_output(name, &tensor).map_err(at)?
                }
                Some(Bound::Folded { tensor, .. }) => {
                    return Err(at(OnnxError::Shape {
                        what: format!(
                            "`{name}` is a constant {:?} that does not depend on the input, so it has no batch dimension; every output of a file with a dynamic batch carries the batch (export the program at a fixed batch and convert it with `--batch static`)",
                            tensor.dims()
                        ),
                    }))
                }
                _ => self.tensor(name).map_err(at)?,
            };
            let axis = match t.placement() {
                Placement::Batch { axis, factor: 1 } => Some(axis),
                Placement::Batch { .. } => {
                    return Err(at(OnnxError::Shape {
                        what: format!(
                            "its sizes {} fold the batch into a dimension; return it with the batch alone on one dimension",
                            tensor::show(&t.sizes())
                        ),
                    }))
                }
                Placement::Static => None,
            };
            values.push((t.value().clone(), axis));
        }
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(json: &str) -> Signature {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn inputs_split_into_stored_tensors_and_user_inputs() {
        let sig = signature(
            r#"{"input_specs": [
                {"parameter": {"arg": {"name": "p_w"}, "parameter_name": "conv.weight"}},
                {"buffer": {"arg": {"name": "b_m"}, "buffer_name": "bn.running_mean", "persistent": true}},
                {"tensor_constant": {"arg": {"name": "c_k"}, "tensor_constant_name": "k"}},
                {"user_input": {"arg": {"as_tensor": {"name": "x"}}}}],
               "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": "y"}}}}]}"#,
        );
        let (user, stored) = split_inputs(&sig).unwrap();
        assert_eq!(user, ["x"]);
        assert_eq!(
            stored,
            vec![
                ("p_w".to_owned(), "conv.weight".to_owned()),
                ("b_m".to_owned(), "bn.running_mean".to_owned()),
                ("c_k".to_owned(), "k".to_owned()),
            ]
        );
        assert!(check_outputs(&sig).is_ok());
    }

    #[test]
    fn other_signatures_are_refused_with_the_reason() {
        let two = signature(
            r#"{"input_specs": [{"user_input": {"arg": {"as_tensor": {"name": "a"}}}},
                                {"user_input": {"arg": {"as_tensor": {"name": "b"}}}}]}"#,
        );
        let (user, _) = split_inputs(&two).unwrap();
        assert_eq!(input_names(&user, None).unwrap(), ["a", "b"]);
        assert_eq!(input_names(&user[..1], Some("img")).unwrap(), ["img"]);
        assert_eq!(input_names(&user[..1], None).unwrap(), ["input"]);
        let err = input_names(&user, Some("img")).unwrap_err().to_string();
        assert!(err.contains("takes 2 (a, b)"), "{err}");
        let scalar = signature(r#"{"input_specs": [{"user_input": {"arg": {"as_int": 3}}}]}"#);
        assert!(split_inputs(&scalar)
            .unwrap_err()
            .to_string()
            .contains("as_int"));
        let custom = signature(r#"{"input_specs": [{"custom_obj": {"arg": {"name": "o"}}}]}"#);
        assert!(split_inputs(&custom)
            .unwrap_err()
            .to_string()
            .contains("`custom_obj`"));
        let training = signature(
            r#"{"input_specs": [], "output_specs": [
                {"buffer_mutation": {"arg": {"as_tensor": {"name": "m"}}, "buffer_name": "bn.running_mean"}}]}"#,
        );
        let err = check_outputs(&training).unwrap_err().to_string();
        assert!(
            err.contains("`buffer_mutation`") && err.contains("model.eval()"),
            "{err}"
        );
    }
}
