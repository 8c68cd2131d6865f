//! The inlined calls as an aten program in torch.export's form
//! (`ckpt_aten::program::ExportedProgram`), for the shared ONNX lowering.
//!
//! Each `torch.<op>(…)` becomes a node `torch.ops.aten.<overload>` with its arguments
//! named by the aten schema (`super::ops`); `torch._convolution` becomes `conv{1,2,3}d` or
//! `conv_transpose{1,2,3}d` once the arguments those do not carry are checked. Scalar calls
//! (`torch.size`, `ops.prim.NumToTensor`, `int`, arithmetic on sizes) are evaluated here: a
//! size of a per-sample dimension is a constant, the size of dimension 0 is the batch, and
//! the batch times a constant (`bsz * num_heads`) stays that. Every tensor value gets its
//! shape (`super::shape`) with the batch as the symbol [`BATCH`], so the program has a
//! dynamic batch; a `view`/`reshape` size list that leads with the traced batch size is
//! rewritten to follow it when the rest of the list is the per-sample size; any other size
//! list (the batch folded, `x.view(-1, d)`, or moved, `q.view(L, bsz * heads, d)`) gets the
//! aten evaluator's sizes as below, or is refused, naming the op and its line.
//!
//! An op without a rule here, or whose rule does not take its operands, gets its sizes
//! from the aten evaluator run on stand-ins at batch 1 and 2: the batch may then land on
//! any dimension, times a constant, as in a `.pt2` program (the lowering's batch model);
//! `arange` over the batch is recorded as such (each sample's index), and a 0-d constant
//! read as a number (`annotate(number, stride)`) becomes an `item` node the lowering reads
//! as that literal.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use serde_json::Value as Json;

use ckpt_aten::eval::{self, Tensor, Values};
use ckpt_aten::program::{
    Argument, ExportedProgram, Graph, GraphModule, InputSpec, ModuleCallEntry, ModuleCallSignature,
    NamedArgument, Node, OutputSpec, Signature, SymInt, TensorMeta,
};
use ckpt_formats::torch::dtype::DType;
use ckpt_formats::torch::tensor::TensorRef;

use super::archive::{constant_fqn, Constant, ScriptArchive};
use super::dtypes;
use super::given::{GivenInput, GivenSize};
use super::inline::{
    inline, Call, Operand, Returned, Site, ValueId, ANNOTATE_NUMBER, LIST_UNPACK, SCRIPTED_CALL,
};
use ckpt_aten::schema::{self, Schema};

use super::ops;
use super::ScriptError;
use ckpt_aten::shape::{self, Dims};

/// The symbol the converted program uses for the batch.
pub const BATCH: &str = "Symbol('batch', positive=True, integer=True)";

/// The program and where its stored tensors are.
pub struct Converted {
    /// The aten program.
    pub program: ExportedProgram,
    /// FQN → the tensor in `data.pkl`, for every parameter/buffer the program reads.
    pub tensors: HashMap<String, TensorRef>,
    /// The example's batch size, when `traced_inputs.pkl` records it.
    pub traced_batch: Option<u64>,
}

/// What a value is during conversion.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Activation {
        name: String,
        shape: Vec<u64>,
    },
    Stored {
        name: String,
        dims: Vec<u64>,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    None,
    /// The batch size times a positive constant: `torch.size(x, 0)` is the batch (1),
    /// `bsz * num_heads` the batch times the heads, the size of a dimension the batch is
    /// folded into (`Mul(Integer(k), batch)` in torch.export's form) the batch times `k`.
    /// Size lists read it (a view to `[bsz * heads, L, d]` folds the batch as torch.export
    /// records it); any other argument refuses it.
    Batch(u64),
    List(Vec<Val>),
    /// A tensor whose batch is not its first dimension: an RNN's initial state made by
    /// `torch.zeros([layers, batch, hidden])`, or its final states. It has no per-sample
    /// shape, so only the RNN that takes it whole reads it.
    Moved {
        name: String,
    },
    /// A number read back from a constant (`annotate(number, stride)` of a 0-d buffer):
    /// the output of an `item` node, known at export.
    Number {
        name: String,
        integer: bool,
    },
}

/// An output's sizes and export dtype, as the aten evaluator gives them.
enum Evaluated {
    /// Per-sample sizes, behind the batch.
    PerSample(Vec<u64>, i64),
    /// Sizes with the batch, times a constant, on one dimension other than the first
    /// (torch.export's form: `Mul(Integer(k), batch)`), or folded into the first.
    Moved(Vec<SymInt>, i64),
    /// Sizes that do not change with the batch.
    Constant(Vec<u64>, i64),
}

/// `node` with the batch in its size lists set to `batch`, and every number read from a
/// constant ([`Val::Number`]) set to `fill`.
fn at_batch(node: &Node, batch: u64, fill: u8) -> Node {
    let mut node = node.clone();
    for input in &mut node.inputs {
        match &input.arg {
            Argument::SymFloat(_) => input.arg = Argument::Float(f64::from(fill)),
            Argument::SymInt(SymInt::Name(_)) => input.arg = Argument::Int(i64::from(fill)),
            Argument::SymInt(size @ SymInt::Expr(_)) => {
                if let Some(n) = size_at(size, batch) {
                    input.arg = Argument::Int(n as i64)
                }
            }
            _ => {}
        }
        if let Argument::SymInts(sizes) = &input.arg {
            if let Some(ints) = sizes
                .iter()
                .map(|s| match s {
                    SymInt::Int(i) => Some(*i),
                    expr @ SymInt::Expr(_) => size_at(expr, batch).map(|n| n as i64),
                    SymInt::Name(_) => None,
                })
                .collect()
            {
                input.arg = Argument::Ints(ints);
            }
        }
    }
    node
}

/// A call's arguments by schema name, in schema order (keyword arguments last).
type Named = Vec<(&'static str, Val)>;

impl Val {
    /// Whether the value is a tensor (computed or stored).
    /// The value as the choice of a call's overload sees it ([`ops::lookup`]).
    fn passed(&self) -> ops::Passed {
        match self {
            Val::Activation { .. } | Val::Stored { .. } | Val::Moved { .. } => ops::Passed::Tensor,
            Val::Int(_) | Val::Batch(_) | Val::Number { integer: true, .. } => ops::Passed::Int,
            Val::Float(_) | Val::Number { integer: false, .. } => ops::Passed::Float,
            Val::Bool(_) => ops::Passed::Bool,
            Val::Str(_) => ops::Passed::Str,
            Val::None => ops::Passed::None,
            Val::List(items) => ops::Passed::List(items.iter().map(Val::passed).collect()),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Val::Activation { .. } => "a tensor",
            Val::Stored { .. } => "a parameter",
            Val::Int(_) => "an int",
            Val::Float(_) => "a float",
            Val::Bool(_) => "a bool",
            Val::Str(_) => "a string",
            Val::None => "None",
            Val::Batch(1) => "the batch size",
            Val::Batch(_) => "the batch size times a constant",
            Val::List(_) => "a list",
            Val::Moved { .. } => "a tensor whose batch is not its first dimension",
            Val::Number { .. } => "a number read from a constant",
        }
    }
}

struct Converter<'a> {
    archive: &'a ScriptArchive,
    tensors: &'a HashMap<String, TensorRef>,
    values: HashMap<ValueId, Val>,
    nodes: Vec<Node>,
    tensor_values: HashMap<String, TensorMeta>,
    stored_specs: Vec<InputSpec>,
    stored_seen: HashSet<String>,
    /// The names of the int64 constants: index buffers and what is computed from them.
    integers: HashSet<String>,
    traced_batch: Option<u64>,
    /// The values whose call was refused, each with the refusal: an error only where an
    /// output needs one (a trace records what the model computed and did not use, which
    /// torch.export drops).
    failed: HashMap<ValueId, Rc<ScriptError>>,
}

/// Inlines `archive`'s `forward` and converts it. `given` input shapes are required when
/// the archive has no `traced_inputs.pkl`, and must match it otherwise.
pub fn convert(
    archive: &mut ScriptArchive,
    given: &[GivenInput],
) -> Result<Converted, ScriptError> {
    convert_at(archive, given, &HashMap::new())
}

/// [`convert`] with each dynamic dimension of `given` at its size in `values` (every one
/// must have one).
pub fn convert_at(
    archive: &mut ScriptArchive,
    given: &[GivenInput],
    values: &HashMap<String, u64>,
) -> Result<Converted, ScriptError> {
    // The code first: a scripted model is refused for that, whatever its inputs.
    let inlined = inline(archive)?;
    let (shapes, traced_batch) = inputs(archive, given, values, &inlined.params)?;
    let mut c = Converter {
        archive,
        tensors: &inlined.tensors,
        values: HashMap::new(),
        nodes: Vec::new(),
        tensor_values: HashMap::new(),
        stored_specs: Vec::new(),
        stored_seen: HashSet::new(),
        integers: HashSet::new(),
        traced_batch,
        failed: HashMap::new(),
    };
    // Graph inputs are named after the forward's parameters (the ONNX names of a
    // multi-input model); stored tensors are `p_<fqn>` and node outputs `<op>_<n>`.
    let mut input_names = Vec::with_capacity(shapes.len());
    for ((id, param), (shape, dtype)) in inlined.inputs.iter().zip(&inlined.params).zip(shapes) {
        c.tensor_values.insert(param.clone(), meta(&shape, dtype));
        c.values.insert(
            *id,
            Val::Activation {
                name: param.clone(),
                shape,
            },
        );
        input_names.push(param.clone());
    }
    for call in &inlined.calls {
        c.step(call)?;
    }
    let returned = inlined.output.as_ref().map_err(|what| {
        ScriptError::archive(format!(
            "`forward` returns {what}; only a tensor, or a tuple or dict of tensors, is exported"
        ))
    })?;
    let (operands, out_spec): (Vec<&Operand>, Option<String>) = match returned {
        Returned::One(op) => (vec![op], None),
        Returned::Tuple(ops) => (ops.iter().collect(), None),
        Returned::Dict(entries) => {
            let keys: Vec<String> = entries.iter().map(|(k, _)| k.clone()).collect();
            (
                entries.iter().map(|(_, op)| op).collect(),
                Some(dict_spec(&keys)),
            )
        }
    };
    let mut outputs = Vec::with_capacity(operands.len());
    for op in operands {
        if let Some(refused) = operand_values(op).find_map(|id| c.failed.remove(&id)) {
            return Err(
                Rc::try_unwrap(refused).unwrap_or_else(|e| ScriptError::archive(e.to_string()))
            );
        }
        match c.operand(op, None)? {
            // The lowering places a batch moved or folded, or refuses it naming the op.
            Val::Activation { name, .. } | Val::Moved { name } => {
                outputs.push(Argument::Tensor(name))
            }
            other => {
                return Err(ScriptError::archive(format!(
                    "`forward` returns {}; only computed tensors can be exported",
                    other.kind()
                )))
            }
        }
    }
    // Every parameter's sizes are recorded, as torch.export records them, for the passes
    // and the expansions of compound ops that read operand sizes from the program alone.
    for spec in &c.stored_specs {
        let InputSpec::Parameter { arg, fqn } = spec else {
            continue;
        };
        let Some(tensor) = inlined.tensors.get(fqn) else {
            continue;
        };
        // Parameters of a dtype the import does not compute in are left out.
        let Some(dtype) = dtypes::of_input(tensor.dtype) else {
            continue;
        };
        let sizes = tensor
            .shape
            .iter()
            .map(|&d| SymInt::Int(d as i64))
            .collect();
        c.tensor_values
            .entry(arg.clone())
            .or_insert_with(|| typed_meta(sizes, dtype));
    }
    let mut input_specs = c.stored_specs;
    input_specs.extend(
        input_names
            .iter()
            .map(|n| InputSpec::UserInput(Argument::Tensor(n.clone()))),
    );
    let program = ExportedProgram {
        graph_module: GraphModule {
            graph: Graph {
                inputs: input_names.into_iter().map(Argument::Tensor).collect(),
                outputs: outputs.clone(),
                nodes: c.nodes,
                tensor_values: c.tensor_values,
                sym_int_values: HashMap::new(),
            },
            signature: Signature {
                input_specs,
                output_specs: outputs.into_iter().map(OutputSpec::UserOutput).collect(),
            },
            module_call_graph: out_spec
                .map(|out_spec| ModuleCallEntry {
                    fqn: String::new(),
                    signature: Some(ModuleCallSignature { out_spec }),
                })
                .into_iter()
                .collect(),
        },
        range_constraints: HashMap::new(),
        torch_version: None,
    };
    Ok(Converted {
        program,
        tensors: inlined.tensors,
        traced_batch,
    })
}

/// Each input's per-sample shape and export dtype number, and the traced batch size.
type Inputs = (Vec<(Vec<u64>, i64)>, Option<u64>);

/// The `given` shapes by parameter of `forward` (`params`), each at most once.
fn given_by_param<'g>(
    given: &'g [GivenInput],
    params: &[String],
) -> Result<Vec<Option<&'g GivenInput>>, ScriptError> {
    let mut by_param = vec![None; params.len()];
    for g in given {
        let index = match (&g.name, params) {
            (Some(name), _) => params.iter().position(|p| p == name).ok_or_else(|| {
                ScriptError::archive(format!(
                    "--input-shape names `{name}`, but `forward` takes {}",
                    params.join(", ")
                ))
            })?,
            (None, [_]) => 0,
            (None, _) => {
                return Err(ScriptError::archive(format!(
                    "--input-shape gives one input's shape, but the model takes several ({}); write NAME:DIMS[:DTYPE] for each",
                    params.join(", ")
                )))
            }
        };
        if by_param[index].replace(g).is_some() {
            return Err(ScriptError::archive(format!(
                "--input-shape gives `{}` twice",
                params[index]
            )));
        }
    }
    Ok(by_param)
}

/// A traced input's dtype and shape (whole, or per sample).
type TracedInput = (DType, Vec<u64>);

/// The traced inputs' dtypes and per-sample shapes, and their common batch size.
fn traced(traced: &[TracedInput]) -> Result<(Vec<TracedInput>, u64), ScriptError> {
    let mut inputs = Vec::with_capacity(traced.len());
    let mut batch = None;
    for (dtype, full) in traced {
        let Some((&b, per_sample)) = full.split_first().filter(|(&b, _)| b > 0) else {
            return Err(ScriptError::archive(format!(
                "the traced input's shape {full:?} has no batch dimension"
            )));
        };
        if batch.is_some_and(|first| first != b) {
            return Err(ScriptError::archive(format!(
                "the traced inputs have different first dimensions ({:?}); every input must carry the batch first",
                traced.iter().map(|(_, s)| s.first()).collect::<Vec<_>>()
            )));
        }
        batch = Some(b);
        inputs.push((*dtype, per_sample.to_vec()));
    }
    let batch = batch.ok_or_else(|| ScriptError::archive("`traced_inputs.pkl` is empty"))?;
    Ok((inputs, batch))
}

/// Each input's per-sample shape and dtype, and the traced batch size: from
/// `traced_inputs.pkl` (every input with the same batch first), which `given` may repeat
/// but not change (traced code has the example's sizes baked in); else from `given`, which
/// must then name every input.
fn inputs(
    archive: &ScriptArchive,
    given: &[GivenInput],
    values: &HashMap<String, u64>,
    params: &[String],
) -> Result<Inputs, ScriptError> {
    let by_param = given_by_param(given, params)?;
    let (recorded, batch) = match archive.traced_inputs.as_deref() {
        Some(t) if t.len() == params.len() => {
            let (inputs, batch) = traced(t)?;
            (inputs.into_iter().map(Some).collect(), Some(batch))
        }
        Some(t) => {
            return Err(ScriptError::archive(format!(
                "`traced_inputs.pkl` records {} inputs, but `forward` takes {}",
                t.len(),
                params.len()
            )))
        }
        None => (vec![None; params.len()], None),
    };
    let mut inputs = Vec::with_capacity(params.len());
    for ((param, recorded), given) in params.iter().zip(recorded).zip(by_param) {
        let (dtype, shape) = match (recorded, given) {
            (Some((dtype, shape)), Some(g)) => {
                if !g.fits(&shape) || g.dtype.is_some_and(|d| d != dtype) {
                    return Err(ScriptError::archive(format!(
                        "--input-shape {}{} for `{param}` differs from the traced input's per-sample shape {shape:?} ({}); traced code has sizes of the example baked in, so trace the model again at the shape wanted, or name the dimensions that vary (`ids:seq<=512:int64`)",
                        shown(&g.shape),
                        g.dtype.map_or(String::new(), |d| format!(" {}", d.name())),
                        dtype.name()
                    )));
                }
                (dtype, g.at(values)?)
            }
            (Some(recorded), None) => recorded,
            (None, Some(g)) => (g.dtype.unwrap_or(DType::Float32), g.at(values)?),
            (None, None) if params.len() == 1 => {
                return Err(ScriptError::archive(
                    "the archive has no `traced_inputs.pkl` (traced with `_store_inputs=False`?), so the input shape is unknown: pass --input-shape C,H,W (or NAME:DIMS:DTYPE, e.g. ids:128:int64)",
                ))
            }
            (None, None) => {
                return Err(ScriptError::archive(format!(
                    "the archive has no `traced_inputs.pkl`, so the shape of `{param}` is unknown; pass --input-shape {param}:DIMS[:DTYPE] for each of {}",
                    params.join(", ")
                )))
            }
        };
        let number = dtypes::of_input(dtype).ok_or_else(|| {
            ScriptError::archive(format!(
                "the input `{param}` is {}; only float32, int64, int32 and bool inputs are exported",
                dtype.name()
            ))
        })?;
        shape::check(&shape)
            .map_err(|e| ScriptError::archive(format!("the input `{param}`: {e}")))?;
        inputs.push((shape, number));
    }
    Ok((inputs, batch))
}

/// Given sizes as `--input-shape` writes them (`[seq<=512, 768]`).
fn shown(sizes: &[GivenSize]) -> String {
    let each: Vec<String> = sizes
        .iter()
        .map(|size| match size {
            GivenSize::Fixed(n) => n.to_string(),
            GivenSize::Dynamic { symbol, max: None } => symbol.clone(),
            GivenSize::Dynamic {
                symbol,
                max: Some(max),
            } => format!("{symbol}<={max}"),
        })
        .collect();
    format!("[{}]", each.join(", "))
}

/// The ops whose result is a constant computed from their arguments (no batch), which the
/// lowering folds.
const FACTORIES: [&str; 5] = ["arange", "zeros", "ones", "full", "scalar_tensor"];

/// The export dtype of a factory's result (`name` one of [`FACTORIES`]), as torch infers
/// it: the `dtype` given, else int64 for an `arange` of integers and a `full` of an
/// integer, bool for a `full` of a bool, float32 otherwise.
fn factory_dtype(node: &Node, name: &str) -> i64 {
    let arg = |n: &str| node.inputs.iter().find(|a| a.name == n).map(|a| &a.arg);
    if let Some(Argument::ScalarType(t)) = arg("dtype") {
        return *t;
    }
    let int = |n: &str| matches!(arg(n), None | Some(Argument::Int(_) | Argument::SymInt(_)));
    match name {
        "arange" if int("start") && int("end") && int("step") => dtypes::INT64,
        "full" => match arg("fill_value") {
            Some(Argument::Int(_)) => dtypes::INT64,
            Some(Argument::Bool(_)) => dtypes::BOOL,
            _ => dtypes::FLOAT32,
        },
        _ => dtypes::FLOAT32,
    }
}

/// Whether `named` computes from constants alone: some tensor operand, every one a
/// parameter or a constant computed from them, and no size that is the batch.
fn constants_only(named: &[(&str, Val)]) -> bool {
    fn kinds(v: &Val, stored: &mut bool) -> bool {
        match v {
            Val::Stored { .. } => {
                *stored = true;
                true
            }
            Val::Activation { .. } | Val::Moved { .. } | Val::Batch(_) => false,
            Val::List(items) => items.iter().all(|i| kinds(i, stored)),
            _ => true,
        }
    }
    let mut stored = false;
    named.iter().all(|(_, v)| kinds(v, &mut stored)) && stored
}

/// A TorchScript dtype (c10's `ScalarType` number) as the export schema numbers it.
fn dtype(val: &Val) -> Result<Argument, String> {
    // c10: uint8 0, int8 1, int16 2, int32 3, int64 4, float16 5, float32 6, float64 7,
    // bool 11, bfloat16 15; the export schema: uint8 1 … float64 8, bool 12, bfloat16 13.
    match val {
        Val::None => Ok(Argument::None),
        Val::Int(t @ 0..=7) => Ok(Argument::ScalarType(t + 1)),
        Val::Int(11) => Ok(Argument::ScalarType(12)),
        Val::Int(15) => Ok(Argument::ScalarType(13)),
        other => Err(format!("dtype {other:?} is not one this import knows")),
    }
}

/// The batch times `count` as a size, in torch.export's form.
fn batch_times(count: u64) -> SymInt {
    if count == 1 {
        SymInt::Expr(BATCH.into())
    } else {
        SymInt::Expr(format!("Mul(Integer({count}), {BATCH})"))
    }
}

/// The constant an expression [`batch_times`] wrote multiplies the batch by; `None` for
/// any other expression.
fn batch_factor(expr: &str) -> Option<u64> {
    if expr == BATCH {
        return Some(1);
    }
    expr.strip_prefix("Mul(Integer(")
        .and_then(|rest| rest.strip_suffix(&format!("), {BATCH})")))
        .and_then(|count| count.parse::<u64>().ok())
        .filter(|&count| count > 0)
}

/// Size `size` (the batch as [`batch_times`] writes it) at batch `batch`; `None` for a
/// size in another form.
fn size_at(size: &SymInt, batch: u64) -> Option<u64> {
    match size {
        SymInt::Int(n) => u64::try_from(*n).ok(),
        SymInt::Expr(e) => batch_factor(e)?.checked_mul(batch),
        SymInt::Name(_) => None,
    }
}

/// `sizes` at batch `batch` ([`size_at`]).
fn sizes_at(sizes: &[SymInt], batch: u64) -> Option<Vec<u64>> {
    sizes.iter().map(|s| size_at(s, batch)).collect()
}

/// The batch times `k`, times `n` (`bsz * num_heads`): a size only while `n` is positive.
fn scaled_batch(k: u64, n: i64) -> Result<Val, String> {
    u64::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .and_then(|n| k.checked_mul(n))
        .map(Val::Batch)
        .ok_or_else(|| format!("the batch size times {k} is multiplied by {n}"))
}

/// The batch times `k`, divided by `d` with rounding: the batch times `k / d` when `d`
/// divides `k`; otherwise the quotient is no multiple of the batch and is refused.
fn divided_batch(k: u64, d: i64) -> Result<Val, String> {
    u64::try_from(d)
        .ok()
        .filter(|&d| d > 0 && k.is_multiple_of(d))
        .map(|d| Val::Batch(k / d))
        .ok_or_else(|| {
            format!("the batch size times {k} is divided by {d}, which is no multiple of the batch")
        })
}

/// The batch times `k` divided by the batch times `m`, rounded down: `k / m` whatever the
/// batch (`k·B / (m·B)`), a number.
fn batch_quotient(k: u64, m: u64) -> Result<Val, String> {
    (k / m.max(1))
        .try_into()
        .ok()
        .filter(|_| m > 0)
        .map(Val::Int)
        .ok_or_else(|| format!("the batch size times {k} is divided by the batch size times {m}"))
}

/// A factory's size list when it holds the batch (`torch.zeros([layers, batch, hidden])`),
/// as sizes in the export schema's form; `None` for fixed sizes.
fn batch_sized(named: &[(&str, Val)]) -> Option<Vec<SymInt>> {
    let (_, Val::List(items)) = named.iter().find(|(name, _)| *name == "size")? else {
        return None;
    };
    if !items.iter().any(|v| matches!(v, Val::Batch(_))) {
        return None;
    }
    items
        .iter()
        .map(|v| match v {
            Val::Batch(k) => Some(batch_times(*k)),
            Val::Int(i) => Some(SymInt::Int(*i)),
            _ => None,
        })
        .collect()
}

/// A tensor of export dtype `dtype` and `sizes` (with the batch where it is, if anywhere).
fn typed_meta(sizes: Vec<SymInt>, dtype: i64) -> TensorMeta {
    TensorMeta {
        dtype,
        sizes,
        strides: Vec::new(),
        storage_offset: SymInt::Int(0),
    }
}

/// A float32 tensor of `sizes` (with the batch where it is, if anywhere).
fn float_meta(sizes: Vec<SymInt>) -> TensorMeta {
    typed_meta(sizes, dtypes::FLOAT32)
}

/// A tensor of export dtype `dtype` and per-sample `shape` with the batch first.
fn meta(shape: &[u64], dtype: i64) -> TensorMeta {
    typed_meta(
        std::iter::once(SymInt::Expr(BATCH.into()))
            .chain(shape.iter().map(|&d| SymInt::Int(d as i64)))
            .collect(),
        dtype,
    )
}

/// An error at `site`: the innermost file and line, then the module calls leading there.
fn at(site: &Site, call: &str, what: impl Into<String>) -> ScriptError {
    let mut what = format!("{}\n  call: {call}", what.into());
    let frames = site.frames();
    for (i, frame) in frames.iter().rev().enumerate().skip(1) {
        let module = if frame.path.is_empty() {
            "the top module".to_owned()
        } else {
            format!("`{}`", frame.path)
        };
        what.push_str(&format!(
            "\n  {} `{}` line {} ({module}, {}.{})",
            if i == 1 { "called from" } else { "       from" },
            frame.file,
            frame.line,
            frame.class,
            frame.method
        ));
    }
    match frames.last() {
        Some(here) => {
            if !here.path.is_empty() {
                what = format!("in module `{}` ({}): {what}", here.path, here.class);
            }
            ScriptError::at(&here.file, here.line, what)
        }
        None => ScriptError::archive(what),
    }
}

/// `torch.op(as_tensor, as_ints, …)`: the call as written, with argument kinds.
fn written(call: &Call) -> String {
    let kind = |o: &Operand| match o {
        Operand::Value(_) => "value",
        Operand::Stored(_) => "parameter",
        Operand::Constant(_) => "constant",
        Operand::Int(_) => "int",
        Operand::Float(_) => "float",
        Operand::Bool(_) => "bool",
        Operand::Str(_) => "str",
        Operand::None => "None",
        Operand::List(_) => "list",
    };
    let mut parts: Vec<String> = call.args.iter().map(|a| kind(a).to_owned()).collect();
    parts.extend(call.kwargs.iter().map(|(k, v)| format!("{k}={}", kind(v))));
    format!("{}({})", call.op, parts.join(", "))
}

/// Node metadata in torch.export's form, so the lowering's errors say where a node is.
fn metadata(site: &Site) -> HashMap<String, Json> {
    let frames = site.frames();
    let trace: Vec<String> = frames
        .iter()
        .rev()
        .map(|f| {
            let module = if f.path.is_empty() {
                String::new()
            } else {
                format!(" (module {})", f.path)
            };
            format!(
                "File \"{}\", line {}, in {}{module}",
                f.file, f.line, f.method
            )
        })
        .collect();
    let stack: Vec<String> = frames
        .iter()
        .map(|f| {
            format!(
                "L__self__{},{},{}",
                f.path.replace('.', "_"),
                f.path,
                f.class
            )
        })
        .collect();
    HashMap::from([
        ("stack_trace".to_owned(), Json::String(trace.join("\n"))),
        ("nn_module_stack".to_owned(), Json::String(stack.join(";"))),
    ])
}

/// The values `op` reads (itself, or the items of a list).
fn operand_values(op: &Operand) -> Box<dyn Iterator<Item = ValueId> + '_> {
    match op {
        Operand::Value(id) => Box::new(std::iter::once(*id)),
        Operand::List(items) => Box::new(items.iter().flat_map(operand_values)),
        _ => Box::new(std::iter::empty()),
    }
}

/// Whether `call` changes its first argument (`relu_`, `mul_`; not `__and__`).
fn changes_first(call: &Call) -> bool {
    let name = call.op.rsplit('.').next().unwrap_or(&call.op);
    name.ends_with('_') && !name.starts_with("__")
}

impl Converter<'_> {
    /// Converts `call`, or records its output as refused when it reads a refused value or
    /// its own conversion fails: a value no output needs never blocks a model. An op that
    /// changes its argument in place is refused at once (what reads the changed value is
    /// not followed).
    fn step(&mut self, call: &Call) -> Result<(), ScriptError> {
        let reads = call
            .args
            .iter()
            .chain(call.kwargs.iter().map(|(_, v)| v))
            .flat_map(operand_values);
        let refused = match reads
            .into_iter()
            .find_map(|id| self.failed.get(&id).cloned())
        {
            Some(refused) => refused,
            None if call.op == SCRIPTED_CALL => {
                let function = match call.args.first() {
                    Some(Operand::Str(f)) => f.trim_start_matches("__torch__."),
                    _ => "a function",
                };
                Rc::new(at(
                    &call.site,
                    function,
                    format!(
                        "`{function}` is a scripted function (compiled by torch.jit.script, so its loops and branches were kept rather than traced), which is not exported; call plain Python code from the traced model, or export it with torch.export"
                    ),
                ))
            }
            None => match self.call(call) {
                Ok(()) => return Ok(()),
                Err(e) => Rc::new(e),
            },
        };
        if changes_first(call) {
            return Err(
                Rc::try_unwrap(refused).unwrap_or_else(|e| ScriptError::archive(e.to_string()))
            );
        }
        self.failed.insert(call.output, refused);
        Ok(())
    }

    fn operand(&mut self, op: &Operand, site: Option<(&Site, &str)>) -> Result<Val, ScriptError> {
        let fail = |what: String| match site {
            Some((site, call)) => at(site, call, what),
            None => ScriptError::archive(what),
        };
        Ok(match op {
            Operand::Value(id) => self
                .values
                .get(id)
                .cloned()
                .ok_or_else(|| fail("a value is used before it is computed".into()))?,
            Operand::Stored(fqn) => {
                let tensor = self
                    .tensors
                    .get(fqn)
                    .ok_or_else(|| fail(format!("parameter `{fqn}` is not in `data.pkl`")))?;
                let name = format!("p_{fqn}");
                if tensor.dtype.is_integer() {
                    self.integers.insert(name.clone());
                }
                if self.stored_seen.insert(fqn.clone()) {
                    self.stored_specs.push(InputSpec::Parameter {
                        arg: name.clone(),
                        fqn: fqn.clone(),
                    });
                }
                Val::Stored {
                    name,
                    dims: tensor.shape.clone(),
                }
            }
            Operand::Constant(i) => match self.archive.constants.get(*i) {
                Some(Constant::Int(v)) => Val::Int(*v),
                Some(Constant::Float(v)) => Val::Float(*v),
                Some(Constant::Tensor(t)) => {
                    // A graph input the program reads as a lifted tensor constant; its
                    // values come from the archive's constants ([`constant_fqn`]).
                    let fqn = constant_fqn(*i);
                    let name = format!("c_{fqn}");
                    if t.dtype.is_integer() {
                        self.integers.insert(name.clone());
                    }
                    if self.stored_seen.insert(fqn.clone()) {
                        self.stored_specs.push(InputSpec::TensorConstant {
                            arg: name.clone(),
                            fqn,
                        });
                    }
                    Val::Stored {
                        name,
                        dims: t.shape.clone(),
                    }
                }
                Some(Constant::Other(what)) => {
                    return Err(fail(format!(
                        "`CONSTANTS.c{i}` is {what}; only scalar constants are exported"
                    )))
                }
                None => return Err(fail(format!("`CONSTANTS.c{i}` is not in `constants.pkl`"))),
            },
            Operand::Int(i) => Val::Int(*i),
            Operand::Float(f) => Val::Float(*f),
            Operand::Bool(b) => Val::Bool(*b),
            Operand::Str(s) => Val::Str(s.clone()),
            Operand::None => Val::None,
            Operand::List(items) => Val::List(
                items
                    .iter()
                    .map(|i| self.operand(i, site))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    fn call(&mut self, call: &Call) -> Result<(), ScriptError> {
        let shown = written(call);
        let fail = |what: String| at(&call.site, &shown, what);
        let mut args = call
            .args
            .iter()
            .map(|a| self.operand(a, Some((&call.site, &shown))))
            .collect::<Result<Vec<_>, _>>()?;
        let mut kwargs = call
            .kwargs
            .iter()
            .map(|(k, a)| Ok((k.clone(), self.operand(a, Some((&call.site, &shown)))?)))
            .collect::<Result<Vec<_>, ScriptError>>()?;
        let mut op = call.op.as_str();
        if op == "torch.to" {
            to_dtype_call(&mut args, &mut kwargs).map_err(&fail)?;
            if let Some(number) = converted_number(&args, &kwargs).map_err(&fail)? {
                self.values.insert(call.output, number);
                return Ok(());
            }
        }
        if op == "torch.index_put_" || op == "torch.index_put" {
            op = self.masked_put(op, &mut args, &mut kwargs).map_err(&fail)?;
        }
        if op == "torch.floor_divide"
            && !matches!(
                args[..],
                [Val::Int(_) | Val::Batch(_), Val::Int(_)] | [Val::Batch(_), Val::Batch(_)]
            )
        {
            // torch._refs.floor_divide: `div(a, b, rounding_mode="floor")` (integer sizes
            // divided alone stay sizes, [`Converter::scalar`]; a float size, timm's
            // `pad_w // 2` of a ceil, is computed as a number).
            op = "torch.div";
            kwargs.push(("rounding_mode".to_owned(), Val::Str("floor".to_owned())));
        }
        if op == "torch._convolution_mode" {
            // A convolution padded "same" or "valid" (`aten::_convolution_mode`, what
            // `conv{1,2,3}d.padding` calls): that overload, by the input's spatial rank.
            op = match args.first().and_then(|x| self.rank(x)) {
                Some(3) => "torch.conv1d",
                Some(5) => "torch.conv3d",
                _ => "torch.conv2d",
            };
        }
        if call.op == LIST_UNPACK {
            let item = unpack(&args).map_err(&fail)?;
            self.values.insert(call.output, item);
            return Ok(());
        }
        if call.op == ANNOTATE_NUMBER {
            let value = self.number(call, &args).map_err(&fail)?;
            self.values.insert(call.output, value);
            return Ok(());
        }
        if let Some(value) = self.scalar(&call.op, &args, &kwargs).map_err(&fail)? {
            // In-place size arithmetic (einops' `torch.mul_(size, n)`) changes its operand.
            if let (true, Some(Operand::Value(changed))) =
                (call.op.ends_with('_'), call.args.first())
            {
                self.values.insert(*changed, value.clone());
            }
            self.values.insert(call.output, value);
            return Ok(());
        }
        let passed: Vec<ops::Passed> = args.iter().map(Val::passed).collect();
        let keywords: Vec<(&str, ops::Passed)> = kwargs
            .iter()
            .map(|(k, v)| (k.as_str(), v.passed()))
            .collect();
        let schema = op
            .strip_prefix("torch.")
            .and_then(|name| ops::lookup(name, &passed, &keywords))
            .ok_or_else(|| fail(unread_call(op, &passed, &keywords)))?;
        // An alias (`torch.concat`) or copy is read as the op it names, with the same
        // arguments, as torch.export records it.
        let schema = schema::lookup(schema::canonical(schema.target)).unwrap_or(schema);
        let mut named = name_args(schema, args, kwargs).map_err(&fail)?;
        let numbers = Node {
            inputs: node_inputs(schema, &named).map_err(&fail)?,
            ..traced_node(schema.target, call, String::new())
        };
        if let Some(number) = numbers_only(&numbers).map_err(&fail)? {
            self.values.insert(call.output, number);
            return Ok(());
        }
        self.number_as_tensor(&mut named, schema, call);
        let output = format!(
            "{}_{}",
            schema.name().trim_start_matches('_').trim_end_matches('_'),
            call.output.0
        );
        let constant_op = constants_only(&named) && eval::is_evaluated(schema.target);
        let mut refused_view = None;
        // The factor of the batch on the operands' first dimension, which the output's
        // first dimension keeps (a view's is its size list's).
        let mut lead = self.lead_factor(&named);
        let (overload, named, shape) = match schema.name() {
            "_convolution" => {
                let rank = self.rank_of(&named, "input");
                let (overload, named) = convolution(named, rank).map_err(&fail)?;
                (overload, named, None)
            }
            "arange" => {
                let (overload, named) = arange(named);
                (overload, named, None)
            }
            "view" | "reshape" if !constant_op => match self.reshape(&named) {
                Ok((named, factor, shape)) => {
                    lead = Some(factor);
                    (schema.target, named, Some(shape))
                }
                // Not the batch first and one sample after it: the aten evaluator's sizes
                // say where the batch goes (folded into a dimension, `x.view(-1, d)`, or
                // moved, `q.view(L, bsz * heads, d)`), else this refusal.
                Err(e) => {
                    refused_view = Some(e);
                    (schema.target, named, None)
                }
            },
            _ => (schema.target, named, None),
        };
        let mut node = Node {
            inputs: node_inputs(schema, &named).map_err(&fail)?,
            ..traced_node(overload, call, output.clone())
        };
        let list = shape::split::pieces_of(&node, overload).is_some();
        if list && !constant_op {
            let dims = |n: &str| self.dims_at(n, &named, lead);
            let shapes = match shape::split::infer_pieces(&node, overload, &dims) {
                Ok(shapes) => shapes,
                // A tensor whose batch is not first (the stacked q, k, v of attention): the
                // aten evaluator's sizes, as for any op without a rule of its own.
                Err(e) => {
                    let outputs = self
                        .evaluated_outputs(&node, &named)
                        .map_err(|_| fail(format!("{e} ({})", schema.signature())))?;
                    self.record_evaluated(node, &output, outputs, call.output, None, true);
                    return Ok(());
                }
            };
            let mut names = Vec::with_capacity(shapes.len());
            let mut items = Vec::with_capacity(shapes.len());
            for (k, shape) in shapes.into_iter().enumerate() {
                shape::check(&shape).map_err(&fail)?;
                let name = format!("{output}_{k}");
                let dtype = self.dtype_of_arg(&named, "self");
                names.push(name.clone());
                items.push(self.computed(&name, lead.unwrap_or(1), shape, dtype));
            }
            node.outputs = vec![Argument::Tensors(names)];
            self.values.insert(call.output, Val::List(items));
            self.nodes.push(node);
            return Ok(());
        }
        if schema.name() == "arange" && named.iter().any(|(_, v)| *v == Val::Batch(1)) {
            let dtype = match named.iter().find(|(n, _)| *n == "dtype") {
                Some((_, Val::Int(6))) => dtypes::FLOAT32,
                Some((_, Val::None)) | None => dtypes::INT64,
                Some((_, other)) => {
                    return Err(fail(format!(
                        "`arange` over the batch of dtype {other:?}; only int64 and float32 are exported"
                    )))
                }
            };
            self.tensor_values.insert(output.clone(), meta(&[], dtype));
            self.values.insert(
                call.output,
                Val::Activation {
                    name: output,
                    shape: Vec::new(),
                },
            );
            self.nodes.push(node);
            return Ok(());
        }
        if let Some(sizes) = FACTORIES
            .contains(&schema.name())
            .then(|| batch_sized(&named))
            .flatten()
        {
            let dtype = factory_dtype(&node, schema.name());
            self.tensor_values
                .insert(output.clone(), typed_meta(sizes, dtype));
            self.values.insert(call.output, Val::Moved { name: output });
            self.nodes.push(node);
            return Ok(());
        }
        let constant = if FACTORIES.contains(&schema.name()) {
            let dims = shape::factory(&node, overload).map_err(&fail)?;
            Some((dims, factory_dtype(&node, schema.name())))
        } else if schema.name() == "embedding" {
            constant_lookup(&named).map(|dims| (dims, dtypes::FLOAT32))
        } else {
            None
        };
        if let Some((dims, dtype)) = constant {
            if dtypes::is_integer(dtype) {
                self.integers.insert(output.clone());
            }
            self.tensor_values.insert(
                output.clone(),
                typed_meta(dims.iter().map(|&d| SymInt::Int(d as i64)).collect(), dtype),
            );
            self.values
                .insert(call.output, Val::Stored { name: output, dims });
            self.nodes.push(node);
            return Ok(());
        }
        if let Some(refused) = refused_view {
            let outputs = self
                .evaluated_outputs(&node, &named)
                .map_err(|_| fail(refused))?;
            self.record_evaluated(node, &output, outputs, call.output, None, false);
            return Ok(());
        }
        if shape.is_none()
            && (constant_op
                || !ops::shaped(schema.target)
                || ops::PADDED_BY_NAME.contains(&overload))
        {
            let outputs = self.evaluated_outputs(&node, &named).map_err(|e| {
                fail(format!(
                    "the output sizes of {} are not derived: {e}",
                    schema.signature()
                ))
            })?;
            let changed = in_place(schema, call);
            self.record_evaluated(node, &output, outputs, call.output, changed, list);
            return Ok(());
        }
        let shape = match shape {
            Some(s) => s,
            None => {
                let dims = |n: &str| self.dims_at(n, &named, lead);
                match shape::infer(&node, overload, &dims) {
                    Ok(shape) => shape,
                    // The aten evaluator's sizes where this import's own rule has none
                    // for these operands (a constant mask and'ed with a per-sample one).
                    Err(e) => match self.evaluated_outputs(&node, &named) {
                        Ok(outputs) => {
                            let changed = in_place(schema, call);
                            self.record_evaluated(
                                node,
                                &output,
                                outputs,
                                call.output,
                                changed,
                                list,
                            );
                            return Ok(());
                        }
                        Err(evaluated) => {
                            return Err(fail(format!(
                                "{e}, and evaluated on stand-ins, {evaluated} ({})",
                                schema.signature()
                            )))
                        }
                    },
                }
            }
        };
        shape::check(&shape).map_err(&fail)?;
        let dtype = dtypes::infer(&node, overload, &|n| {
            self.tensor_values.get(n).map(|m| m.dtype)
        });
        if schema.target == ops::TOPK {
            // The values and their indices, of one shape.
            let indices = format!("{output}_indices");
            let lead = lead.unwrap_or(1);
            let items = vec![
                self.computed(&output, lead, shape.clone(), dtype),
                self.computed(&indices, lead, shape, dtypes::INT64),
            ];
            node.outputs.push(Argument::Tensor(indices));
            self.values.insert(call.output, Val::List(items));
            self.nodes.push(node);
            return Ok(());
        }
        let value = self.computed(&output, lead.unwrap_or(1), shape, dtype);
        if schema.target == ops::MULTI_HEAD_ATTENTION {
            // Its second output, the attention weights, is None with `need_weights=False`.
            let weights = named
                .iter()
                .find(|(name, _)| *name == "need_weights")
                .map(|(_, v)| v);
            if !matches!(weights, Some(Val::Bool(false))) {
                return Err(fail(
                    "the attention weights (need_weights=True) are not exported; call nn.MultiheadAttention with need_weights=False".into(),
                ));
            }
            node.outputs.push(Argument::None);
            self.values
                .insert(call.output, Val::List(vec![value, Val::None]));
            self.nodes.push(node);
            return Ok(());
        }
        if [ops::LSTM, ops::GRU, ops::RNN_TANH, ops::RNN_RELU].contains(&schema.target) {
            // The final states follow the output: (layers · directions, batch, hidden).
            let dims = |n: &str| self.dims_at(n, &named, lead);
            let [stacked, hidden] = shape::recurrent::states(&node, &dims)
                .map_err(|e| fail(format!("{e} ({})", schema.signature())))?;
            let mut items = vec![value];
            for k in 1..=if schema.target == ops::LSTM { 2 } else { 1 } {
                let name = format!("{output}_state_{k}");
                let sizes = vec![
                    SymInt::Int(stacked as i64),
                    batch_times(lead.unwrap_or(1)),
                    SymInt::Int(hidden as i64),
                ];
                self.tensor_values.insert(name.clone(), float_meta(sizes));
                node.outputs.push(Argument::Tensor(name.clone()));
                items.push(Val::Moved { name });
            }
            self.values.insert(call.output, Val::List(items));
            self.nodes.push(node);
            return Ok(());
        }
        // An in-place op changes its first argument: later reads of it see the result.
        if let Some(changed) = in_place(schema, call) {
            self.values.insert(changed, value.clone());
        }
        self.values.insert(call.output, value);
        self.nodes.push(node);
        Ok(())
    }

    /// A number given as `self` or `src` (a size made a tensor by `ops.prim.NumToTensor`, a
    /// 0-d tensor constant, both read as numbers here) where `schema` takes a tensor (every
    /// `self` or `src` typed `Tensor`) made the 0-d tensor it is:
    /// a `scalar_tensor` node (int64 for an integer, float32 for a float, bool for a bool).
    /// BEiT writes a size into its relative position index with `copy_(view, n)`.
    /// Called once [`numbers_only`] has declined the call: an op on numbers alone whose
    /// result is a number (`(7 - H % 7) % 7` on sizes) never gets here, but one whose result
    /// is a tensor (kornia's `unsqueeze(factor, 0)`) does, and its number becomes a tensor.
    fn number_as_tensor(&mut self, named: &mut Named, schema: &Schema, call: &Call) {
        for (arg, value) in named.iter_mut() {
            let tensor_only = ["self", "src"].contains(arg)
                && schema
                    .arguments()
                    .any(|a| a.name == *arg && a.ty == "Tensor");
            let (literal, dtype) = match value {
                Val::Int(i) if tensor_only => (Argument::Int(*i), dtypes::INT64),
                Val::Float(f) if tensor_only => (Argument::Float(*f), dtypes::FLOAT32),
                Val::Bool(b) if tensor_only => (Argument::Bool(*b), dtypes::BOOL),
                _ => continue,
            };
            let name = format!("scalar_tensor_{}_{arg}", call.output.0);
            self.nodes.push(Node {
                target: "torch.ops.aten.scalar_tensor.default".into(),
                inputs: vec![
                    NamedArgument {
                        name: "s".into(),
                        arg: literal,
                    },
                    NamedArgument {
                        name: "dtype".into(),
                        arg: Argument::ScalarType(dtype),
                    },
                ],
                outputs: vec![Argument::Tensor(name.clone())],
                metadata: metadata(&call.site),
                name: Some(name.clone()),
            });
            if dtypes::is_integer(dtype) {
                self.integers.insert(name.clone());
            }
            self.tensor_values
                .insert(name.clone(), typed_meta(Vec::new(), dtype));
            *value = Val::Stored {
                name,
                dims: Vec::new(),
            };
        }
    }

    /// `torch.index_put_(x, [mask], v)` (`x[mask] = v`) with one bool mask of `x`'s rank and
    /// one value, not accumulated, as the `masked_fill_` it computes (`masked_fill` for
    /// `index_put`): torch's `index_put_` reads a bool index as the positions where it holds
    /// (`nonzero`), so each element of `x` there becomes `v` (cast to `x`'s dtype) and every
    /// other keeps its value, which is `masked_fill(x, mask, v)`. Integer positions, a mask
    /// of fewer dimensions than `x` (whole rows put), a value that is not a number or a 0-d
    /// constant, and an accumulation are refused.
    fn masked_put(
        &self,
        op: &str,
        args: &mut Vec<Val>,
        kwargs: &mut Vec<(String, Val)>,
    ) -> Result<&'static str, String> {
        let accumulate = args.get(3).or_else(|| {
            kwargs
                .iter()
                .find(|(k, _)| k == "accumulate")
                .map(|(_, v)| v)
        });
        if !matches!(accumulate, None | Some(Val::Bool(false))) {
            return Err(format!(
                "`{op}` accumulating (`x[i] += v`); only a put (`x[mask] = v`) is exported"
            ));
        }
        let (Some(x), Some(Val::List(indices)), Some(value)) =
            (args.first(), args.get(1), args.get(2))
        else {
            return Err(format!(
                "`{op}` without a tensor, a list of indices and a value"
            ));
        };
        let mask = match &indices[..] {
            [mask] if self.dtype_of(mask) == Some(dtypes::BOOL) => mask.clone(),
            _ => {
                return Err(format!(
                    "`{op}` by integer positions or several indices; only a put by one bool mask (`x[mask] = v`) is exported"
                ))
            }
        };
        if self.rank(&mask).is_none() || self.rank(&mask) != self.rank(x) {
            return Err(format!(
                "`{op}` by a bool mask of rank {:?} into a tensor of rank {:?}; only a mask of the tensor's own sizes is exported",
                self.rank(&mask),
                self.rank(x)
            ));
        }
        let single = match value {
            Val::Int(_) | Val::Float(_) | Val::Bool(_) => true,
            Val::Stored { dims, .. } => dims.is_empty(),
            _ => false,
        };
        if !single {
            return Err(format!(
                "`{op}` of {}; only a number or a 0-d constant put at every masked position is exported",
                value.kind()
            ));
        }
        *args = vec![x.clone(), mask, value.clone()];
        kwargs.clear();
        Ok(if op.ends_with('_') {
            "torch.masked_fill_"
        } else {
            "torch.masked_fill"
        })
    }

    /// The export dtype of tensor `value` where it is known: a computed tensor's, a
    /// constant's, a parameter's or buffer's.
    fn dtype_of(&self, value: &Val) -> Option<i64> {
        let (Val::Activation { name, .. } | Val::Moved { name } | Val::Stored { name, .. }) = value
        else {
            return None;
        };
        self.tensor_values.get(name).map(|m| m.dtype).or_else(|| {
            let fqn = name.strip_prefix("p_")?;
            dtypes::of_input(self.tensors.get(fqn)?.dtype)
        })
    }

    /// The rank (batch included) of argument `arg` among `named` when it is a tensor.
    fn rank_of(&self, named: &[(&str, Val)], arg: &str) -> Option<usize> {
        self.rank(named.iter().find(|(n, _)| *n == arg).map(|(_, v)| v)?)
    }

    /// The rank (batch included) of `value` when it is a tensor: computed (with the batch
    /// first or elsewhere), or a constant (xcit's Fourier position encoding, convolved
    /// before it meets the batch).
    fn rank(&self, value: &Val) -> Option<usize> {
        match value {
            Val::Activation { shape, .. } => Some(shape.len() + 1),
            Val::Moved { name } => self.tensor_values.get(name).map(|m| m.sizes.len()),
            Val::Stored { dims, .. } => Some(dims.len()),
            _ => None,
        }
    }

    /// The export dtype of argument `arg` among `named` (float32 unless it is a computed
    /// tensor of another type).
    fn dtype_of_arg(&self, named: &[(&str, Val)], arg: &str) -> i64 {
        named
            .iter()
            .find_map(|(n, v)| match v {
                Val::Activation { name, .. } | Val::Moved { name } if *n == arg => {
                    self.tensor_values.get(name).map(|m| m.dtype)
                }
                _ => None,
            })
            .unwrap_or(dtypes::FLOAT32)
    }

    /// The sizes and export dtype of each output of `node`, an op without a rule of its own
    /// in [`shape`], from the aten evaluator ([`eval::evaluate`]) run on stand-ins of its
    /// operands: zeros and ones of each activation's sizes at batch 1, zeros at batch 2 (the
    /// batch in a size list follows), stored tensors at their sizes. An output whose sizes
    /// change with the stand-ins' values is refused (its sizes depend on data); one whose
    /// first dimension follows the batch is an activation, one that does not change with the
    /// batch a constant-sized value, any other refused.
    fn evaluated_outputs(
        &self,
        node: &Node,
        named: &[(&str, Val)],
    ) -> Result<Vec<Evaluated>, String> {
        let run = |batch: u64, fill: u8| -> Result<Vec<Tensor>, String> {
            let node = at_batch(node, batch, fill);
            let mut inputs = HashMap::new();
            for input in &node.inputs {
                for name in input.arg.tensor_names() {
                    let (dims, integer) = match self.dims(name, named) {
                        Some(Dims::PerSample(shape)) => (
                            std::iter::once(batch).chain(shape).collect::<Vec<_>>(),
                            self.tensor_values
                                .get(name)
                                .is_some_and(|m| dtypes::is_integer(m.dtype)),
                        ),
                        Some(Dims::Stored(dims)) => (dims, self.integers.contains(name)),
                        // A tensor whose batch is elsewhere: the sizes it was recorded with.
                        None => match self.tensor_values.get(name) {
                            Some(m) => (
                                sizes_at(&m.sizes, batch)
                                    .ok_or_else(|| format!("`{name}` has sizes {:?}", m.sizes))?,
                                dtypes::is_integer(m.dtype),
                            ),
                            None => return Err(format!("`{name}` has no known sizes")),
                        },
                    };
                    let count = eval::element_count(&dims)? as usize;
                    let tensor = if integer {
                        Tensor::i64(dims, vec![i64::from(fill); count])
                    } else {
                        Tensor::f32(dims, vec![f32::from(fill); count])
                    }?;
                    inputs.insert(name.to_owned(), tensor);
                }
            }
            eval::evaluate(&node, &|name| inputs.get(name).cloned())
        };
        let zeros = run(1, 0)?;
        // Ones may index out of range where zeros do not (`mask[arange(B), ids]` at batch
        // 1); then the sizes are the zeros' (an op whose sizes follow its operands' values,
        // `nonzero`, is not lowered, and the lowering checks each value against them).
        let ones = run(1, 1).unwrap_or_else(|_| zeros.clone());
        let doubled = run(2, 0)?;
        let inferred = dtypes::infer(
            node,
            node.target.trim_start_matches("torch.ops.aten."),
            &|n| self.tensor_values.get(n).map(|m| m.dtype),
        );
        let mut outputs = Vec::with_capacity(zeros.len());
        for (k, ((one, other), two)) in zeros.iter().zip(&ones).zip(&doubled).enumerate() {
            let (d1, d2) = (one.dims(), two.dims());
            if d1 != other.dims() {
                return Err(format!(
                    "the sizes of output {k} depend on the values of its operands"
                ));
            }
            let integer = matches!(one.values(), Values::I64(_));
            let dtype = match (k, integer) {
                // The evaluator holds truth values as numbers of either kind.
                (0, _) if inferred == dtypes::BOOL || dtypes::is_integer(inferred) == integer => {
                    inferred
                }
                (_, true) => dtypes::INT64,
                (_, false) => dtypes::FLOAT32,
            };
            outputs.push(if d1 == d2 {
                Evaluated::Constant(d1.to_vec(), dtype)
            } else if d1.first() == Some(&1) && d2.first() == Some(&2) && d1[1..] == d2[1..] {
                Evaluated::PerSample(d1[1..].to_vec(), dtype)
            } else {
                // The batch once, times a constant, on any dimension (the lowering's model).
                let changed: Vec<usize> = (0..d1.len().min(d2.len()))
                    .filter(|&a| d1[a] != d2[a])
                    .collect();
                match changed[..] {
                    [a] if d1.len() == d2.len() && d1[a] > 0 && d2[a] == 2 * d1[a] => {
                        let sizes = (0..d1.len())
                            .map(|i| {
                                if i == a {
                                    batch_times(d1[a])
                                } else {
                                    SymInt::Int(d1[i] as i64)
                                }
                            })
                            .collect();
                        Evaluated::Moved(sizes, dtype)
                    }
                    // `q @ k.transpose(-1, -2)` of [B, N] rows: [B, B], each sample
                    // paired with every other.
                    [_, _, ..]
                        if d1.len() == d2.len()
                            && changed.iter().all(|&a| d1[a] > 0 && d2[a] == 2 * d1[a]) =>
                    {
                        return Err(format!(
                            "output {k} has sizes {d1:?} at batch 1 and {d2:?} at batch 2: the batch on {} dimensions pairs each sample with the others, which mixes samples",
                            changed.len()
                        ))
                    }
                    _ => {
                        return Err(format!(
                            "output {k} has sizes {d1:?} at batch 1 and {d2:?} at batch 2, which do not follow the batch on one dimension"
                        ))
                    }
                }
            });
        }
        Ok(outputs)
    }

    /// Records `node` (outputs named after `output`) with its `evaluated` outputs as value
    /// `id`, and as value `changed` too for an in-place op. A `list` op (one that returns a
    /// list of tensors, [`shape::split::pieces_of`]) has them as one output, as torch.export
    /// records it.
    fn record_evaluated(
        &mut self,
        mut node: Node,
        output: &str,
        evaluated: Vec<Evaluated>,
        id: ValueId,
        changed: Option<ValueId>,
        list: bool,
    ) {
        let several = list || evaluated.len() != 1;
        let mut items = Vec::with_capacity(evaluated.len());
        node.outputs.clear();
        for (k, out) in evaluated.into_iter().enumerate() {
            let name = if several {
                format!("{output}_{k}")
            } else {
                output.to_owned()
            };
            let value = match out {
                Evaluated::PerSample(shape, dtype) => {
                    self.tensor_values.insert(name.clone(), meta(&shape, dtype));
                    Val::Activation {
                        name: name.clone(),
                        shape,
                    }
                }
                Evaluated::Moved(sizes, dtype) => {
                    self.tensor_values
                        .insert(name.clone(), typed_meta(sizes, dtype));
                    Val::Moved { name: name.clone() }
                }
                Evaluated::Constant(dims, dtype) => {
                    if dtypes::is_integer(dtype) {
                        self.integers.insert(name.clone());
                    }
                    self.tensor_values.insert(
                        name.clone(),
                        typed_meta(dims.iter().map(|&d| SymInt::Int(d as i64)).collect(), dtype),
                    );
                    Val::Stored {
                        name: name.clone(),
                        dims,
                    }
                }
            };
            node.outputs.push(Argument::Tensor(name));
            items.push(value);
        }
        if list {
            let names = node.outputs.iter().filter_map(Argument::tensor_name);
            node.outputs = vec![Argument::Tensors(names.map(str::to_owned).collect())];
        }
        let value = match <[Val; 1]>::try_from(items) {
            Ok([one]) if !list => one,
            Ok(one) => Val::List(one.into()),
            Err(items) => Val::List(items),
        };
        if let Some(changed) = changed {
            self.values.insert(changed, value.clone());
        }
        self.values.insert(id, value);
        self.nodes.push(node);
    }

    /// The shape of tensor value `name` among `named`'s arguments.
    fn dims(&self, name: &str, named: &[(&str, Val)]) -> Option<Dims> {
        fn find(name: &str, v: &Val) -> Option<Dims> {
            match v {
                Val::Activation { name: n, shape } if n == name => {
                    Some(Dims::PerSample(shape.clone()))
                }
                Val::Stored { name: n, dims } if n == name => Some(Dims::Stored(dims.clone())),
                Val::List(items) => items.iter().find_map(|i| find(name, i)),
                _ => None,
            }
        }
        named.iter().find_map(|(_, v)| find(name, v))
    }

    /// A value read as a number ([`ANNOTATE_NUMBER`]): a one-element constant becomes an
    /// `item` node, whose output the lowering reads as the literal; anything else stays
    /// itself (as before the conversion: a tensor where torch reads a number broadcasts as
    /// one).
    fn number(&mut self, call: &Call, args: &[Val]) -> Result<Val, String> {
        match args {
            [Val::Stored { name, dims }] if dims.iter().product::<u64>() == 1 => {
                let integer = self.integers.contains(name);
                let output = format!("item_{}", call.output.0);
                let out = if integer {
                    Argument::SymInt(SymInt::Name(output.clone()))
                } else {
                    Argument::SymFloat(output.clone())
                };
                self.nodes.push(Node {
                    target: "torch.ops.aten.item.default".into(),
                    inputs: vec![NamedArgument {
                        name: "self".into(),
                        arg: Argument::Tensor(name.clone()),
                    }],
                    outputs: vec![out],
                    metadata: metadata(&call.site),
                    name: Some(output.clone()),
                });
                Ok(Val::Number {
                    name: output,
                    integer,
                })
            }
            [other] => Ok(other.clone()),
            _ => Err("`annotate` of several values".into()),
        }
    }

    /// `torch.size`, `torch.numel`, `ops.prim.NumToTensor`, `int`/`float`: evaluated, no
    /// node. `None` for any other op.
    fn scalar(
        &self,
        op: &str,
        args: &[Val],
        kwargs: &[(String, Val)],
    ) -> Result<Option<Val>, String> {
        // Size arithmetic, in place too (einops multiplies sizes with `mul_`).
        let arithmetic = match op {
            "torch.mul_" | "torch.add_" | "torch.sub_" => &op[..op.len() - 1],
            _ => op,
        };
        if let ("torch.mul" | "torch.add" | "torch.sub", [Val::Int(a), Val::Int(b)]) =
            (arithmetic, args)
        {
            return integer_arithmetic(arithmetic, *a, *b).map(Some);
        }
        // `bsz * num_heads`: the batch times a constant, which size lists read.
        if let ("torch.mul", [Val::Batch(k), Val::Int(n)] | [Val::Int(n), Val::Batch(k)]) =
            (arithmetic, args)
        {
            return scaled_batch(*k, *n).map(Some);
        }
        if let ("torch.device", [Val::Str(device)]) = (op, args) {
            return Ok(Some(Val::Str(device.clone())));
        }
        // A size divided with rounding (`embed_dim // num_heads` in traced attention).
        if let ("torch.div", [a, Val::Int(b)], [(key, Val::Str(mode))]) = (op, args, kwargs) {
            if key == "rounding_mode" && *b > 0 && (mode == "trunc" || mode == "floor") {
                match a {
                    Val::Int(a) if mode == "trunc" => return Ok(Some(Val::Int(a / b))),
                    Val::Int(a) => return Ok(Some(Val::Int(a.div_euclid(*b)))),
                    Val::Batch(k) => return divided_batch(*k, *b).map(Some),
                    _ => {}
                }
            }
        }
        // The batch times `k` over the batch times `m` (gcvit's windows per image, `B_ //
        // B`): `k / m` at every batch, floored as both rounding modes floor a positive.
        if let ("torch.div" | "torch.floor_divide", [Val::Batch(k), Val::Batch(m)]) = (op, args) {
            let rounded = op == "torch.floor_divide"
                || matches!(kwargs, [(key, Val::Str(mode))]
                    if key == "rounding_mode" && (mode == "trunc" || mode == "floor"));
            if rounded {
                return batch_quotient(*k, *m).map(Some);
            }
        }
        let sizes_divided = op == "torch.floor_divide"
            && matches!(args, [Val::Int(_) | Val::Batch(_), Val::Int(_)]);
        if !sizes_divided
            && !matches!(
                op,
                "torch.size" | "torch.numel" | "ops.prim.NumToTensor" | "int" | "float"
            )
        {
            return Ok(None);
        }
        if !kwargs.is_empty() {
            return Err(format!("`{op}` with keyword arguments"));
        }
        Ok(Some(match (op, args) {
            ("torch.size", [Val::Activation { shape, .. }, Val::Int(dim)]) => {
                let rank = shape.len() as i64 + 1;
                match if *dim < 0 { dim + rank } else { *dim } {
                    0 => Val::Batch(1),
                    d if (1..rank).contains(&d) => Val::Int(shape[d as usize - 1] as i64),
                    _ => return Err(format!("dimension {dim} is out of range for rank {rank}")),
                }
            }
            // A parameter, buffer or constant has no batch: every size is a number.
            ("torch.size", [Val::Stored { dims, .. }, Val::Int(dim)]) => {
                let rank = dims.len() as i64;
                match if *dim < 0 { dim + rank } else { *dim } {
                    d if (0..rank).contains(&d) => Val::Int(dims[d as usize] as i64),
                    _ => return Err(format!("dimension {dim} is out of range for rank {rank}")),
                }
            }
            // A tensor whose batch is elsewhere: a fixed size, or the batch itself.
            ("torch.size", [Val::Moved { name }, Val::Int(dim)]) => {
                let sizes = self
                    .tensor_values
                    .get(name)
                    .map_or(&[][..], |m| &m.sizes[..]);
                let rank = sizes.len() as i64;
                let d = if *dim < 0 { dim + rank } else { *dim };
                match usize::try_from(d).ok().and_then(|d| sizes.get(d)) {
                    Some(SymInt::Int(n)) => Val::Int(*n),
                    Some(SymInt::Expr(e)) => match batch_factor(e) {
                        Some(k) => Val::Batch(k),
                        None => return Err(format!("dimension {dim} has size {e}")),
                    },
                    Some(other) => return Err(format!("dimension {dim} has size {other:?}")),
                    None => return Err(format!("dimension {dim} is out of range for rank {rank}")),
                }
            }
            ("torch.size", [Val::Stored { dims, .. }]) => {
                Val::List(dims.iter().map(|&d| Val::Int(d as i64)).collect())
            }
            ("torch.size", [Val::Activation { shape, .. }]) => Val::List(
                std::iter::once(Val::Batch(1))
                    .chain(shape.iter().map(|&d| Val::Int(d as i64)))
                    .collect(),
            ),
            // The entry count: the batch times the per-sample count, or a fixed count.
            ("torch.numel", [Val::Activation { shape, .. }]) => {
                scaled_batch(1, shape.iter().product::<u64>() as i64)?
            }
            ("torch.numel", [Val::Stored { dims, .. }]) => {
                Val::Int(dims.iter().product::<u64>() as i64)
            }
            ("ops.prim.NumToTensor" | "int", [v @ (Val::Int(_) | Val::Batch(_))]) => v.clone(),
            ("ops.prim.NumToTensor" | "float", [v @ Val::Float(_)]) => v.clone(),
            ("float", [Val::Int(i)]) => Val::Float(*i as f64),
            // A channel count divided into groups (ShuffleNet's channel shuffle).
            ("torch.floor_divide", [Val::Int(a), Val::Int(b)]) if *b > 0 => {
                Val::Int(a.div_euclid(*b))
            }
            ("torch.floor_divide", [Val::Batch(k), Val::Int(d)]) => divided_batch(*k, *d)?,
            // `int()` of a 0-d float tensor truncates toward zero (`aten::Int.Tensor`).
            ("int", [Val::Float(f)]) if f.abs() < 9.0e15 => Val::Int(f.trunc() as i64),
            _ => {
                let kinds: Vec<&str> = args.iter().map(Val::kind).collect();
                return Err(format!("`{op}` of ({}) is not supported", kinds.join(", ")));
            }
        }))
    }

    /// `view`/`reshape`: the size list with its first entry following the batch (times the
    /// constant returned, [`folded_view`]), and the sizes after the first dimension.
    fn reshape(&self, named: &Named) -> Result<(Named, u64, Vec<u64>), String> {
        let mut named = named.clone();
        let (Some((_, input)), Some((key, Val::List(sizes)))) = (named.first(), named.get(1))
        else {
            return Err(
                "view/reshape of something other than a computed tensor by a size list".into(),
            );
        };
        let key = *key;
        let (lead, rest) = match input {
            Val::Activation { shape, .. } => match batch_following(shape, sizes, self.traced_batch)
            {
                Ok(rest) => (1, rest),
                Err(e) => folded_view(1, shape.iter().product(), sizes).map_err(|_| e)?,
            },
            Val::Moved { name } => {
                let (k, rest) = self.folded_rest(name).ok_or_else(|| {
                    format!("view/reshape of `{name}`, whose batch is not on its first dimension")
                })?;
                folded_view(k, rest.iter().product(), sizes)?
            }
            _ => {
                return Err(
                    "view/reshape of something other than a computed tensor by a size list".into(),
                )
            }
        };
        let list = std::iter::once(Val::Batch(lead))
            .chain(rest.iter().map(|&d| Val::Int(d as i64)))
            .collect();
        named[1] = (key, Val::List(list));
        Ok((named, lead, rest))
    }

    /// The factor `k` and the other sizes of a tensor whose first dimension is the batch
    /// times `k` and whose others are fixed (the batch folded with the windows, `[B·nW, ws,
    /// ws, C]`); `None` for any other.
    fn folded_rest(&self, name: &str) -> Option<(u64, Vec<u64>)> {
        let sizes = &self.tensor_values.get(name)?.sizes;
        let (SymInt::Expr(first), rest) = sizes.split_first()? else {
            return None;
        };
        let rest = rest
            .iter()
            .map(|s| match s {
                SymInt::Int(n) => u64::try_from(*n).ok(),
                _ => None,
            })
            .collect::<Option<Vec<u64>>>()?;
        Some((batch_factor(first)?, rest))
    }

    /// The factor of the batch on the first dimension that every computed tensor among
    /// `named` has: 1 for an activation, `k` for a tensor with the batch times `k` first
    /// ([`Self::folded_rest`]). Each op with a rule in [`shape`] keeps its operands' first
    /// dimension, so its rule applies with that dimension as the batch. `None` without such
    /// a tensor, or with two factors. A tensor whose batch is on another dimension has no
    /// per-sample shape, so a rule that reads it refuses; only one that never reads its
    /// sizes takes it (an RNN's initial state, whose zeros the lowering checks).
    fn lead_factor(&self, named: &[(&str, Val)]) -> Option<u64> {
        fn visit(c: &Converter<'_>, v: &Val, lead: &mut Option<Option<u64>>) {
            let k = match v {
                Val::Activation { .. } => Some(1),
                Val::Moved { name } => match c.folded_rest(name) {
                    Some((k, _)) => Some(k),
                    None => return,
                },
                Val::List(items) => return items.iter().for_each(|i| visit(c, i, lead)),
                _ => return,
            };
            *lead = match *lead {
                None => Some(k),
                Some(seen) if seen == k => Some(seen),
                Some(_) => Some(None),
            };
        }
        let mut lead = None;
        named.iter().for_each(|(_, v)| visit(self, v, &mut lead));
        lead.flatten()
    }

    /// The shape of tensor value `name` among `named`'s arguments, a tensor with the batch
    /// times `lead` first taken per sample as an activation is.
    fn dims_at(&self, name: &str, named: &[(&str, Val)], lead: Option<u64>) -> Option<Dims> {
        self.dims(name, named).or_else(|| {
            lead?;
            named
                .iter()
                .any(|(_, v)| holds(v, name))
                .then(|| self.folded_rest(name))
                .flatten()
                .map(|(_, rest)| Dims::PerSample(rest))
        })
    }

    /// The value of a computed tensor `name` of `dtype` whose first dimension is the batch
    /// times `lead`, with `shape` after it.
    fn computed(&mut self, name: &str, lead: u64, shape: Vec<u64>, dtype: i64) -> Val {
        if lead == 1 {
            self.tensor_values
                .insert(name.to_owned(), meta(&shape, dtype));
            return Val::Activation {
                name: name.to_owned(),
                shape,
            };
        }
        let sizes = std::iter::once(batch_times(lead))
            .chain(shape.iter().map(|&d| SymInt::Int(d as i64)))
            .collect();
        self.tensor_values
            .insert(name.to_owned(), typed_meta(sizes, dtype));
        Val::Moved {
            name: name.to_owned(),
        }
    }
}

/// Whether `v` is, or lists, the tensor value `name`.
fn holds(v: &Val, name: &str) -> bool {
    match v {
        Val::Moved { name: n } | Val::Activation { name: n, .. } | Val::Stored { name: n, .. } => {
            n == name
        }
        Val::List(items) => items.iter().any(|i| holds(i, name)),
        _ => false,
    }
}

/// The value an in-place op (`relu_`, not `__and__`) changes: its first argument.
fn in_place(schema: &Schema, call: &Call) -> Option<ValueId> {
    let name = schema.name();
    match (
        name.ends_with('_') && !name.starts_with("__"),
        call.args.first(),
    ) {
        (true, Some(Operand::Value(changed))) => Some(*changed),
        _ => None,
    }
}

/// The aten node of a traced call to `target` with output `output` (inputs left to fill).
fn traced_node(target: &str, call: &Call, output: String) -> Node {
    Node {
        target: format!("torch.ops.aten.{target}"),
        inputs: Vec::new(),
        outputs: vec![Argument::Tensor(output.clone())],
        metadata: metadata(&call.site),
        name: Some(output),
    }
}

/// The aten node inputs of a traced call's `named` arguments, read by `schema`.
fn node_inputs(schema: &Schema, named: &[(&str, Val)]) -> Result<Vec<NamedArgument>, String> {
    named
        .iter()
        .map(|(name, val)| {
            let arg = if *name == "dtype" {
                dtype(val)
            } else if schema.name() == "arange" && *val == Val::Batch(1) {
                // `arange(B)`: each sample's index, which the lowering follows.
                Ok(Argument::SymInt(SymInt::Expr(BATCH.into())))
            } else {
                argument(val)
            }
            .map_err(|e| format!("argument `{name}` of {}: {e}", schema.signature()))?;
            Ok(NamedArgument {
                name: (*name).to_owned(),
                arg,
            })
        })
        .collect()
}

/// The number an element-wise op computes from numbers alone (`(7 - H % 7) % 7` on sizes
/// a trace turned into 0-d tensors with `NumToTensor`), by the aten evaluator: its first
/// operand as the 0-d tensor torch holds (int64 for an int, float32 for a float), the
/// others as the numbers they are, so the result has torch's promoted type. `None` when
/// the node reads a tensor, its `self` is not a number, or the result is not one number;
/// an error when the evaluator refuses the op (`remainder` by zero).
fn numbers_only(node: &Node) -> Result<Option<Val>, String> {
    const NUMBER: &str = "number";
    let target = node.target.trim_start_matches("torch.ops.aten.");
    let numbers = |a: &NamedArgument| {
        matches!(
            a.arg,
            Argument::Int(_)
                | Argument::Float(_)
                | Argument::Bool(_)
                | Argument::None
                // A mode (`rounding_mode="floor"`).
                | Argument::String(_)
        )
    };
    if !eval::is_evaluated(target) || !node.inputs.iter().all(numbers) {
        return Ok(None);
    }
    let (tensor, dtype) = match node.inputs.first().map(|a| (a.name.as_str(), &a.arg)) {
        Some(("self", Argument::Int(i))) => (Tensor::i64(Vec::new(), vec![*i])?, dtypes::INT64),
        Some(("self", Argument::Float(f))) => {
            (Tensor::f32(Vec::new(), vec![*f as f32])?, dtypes::FLOAT32)
        }
        _ => return Ok(None),
    };
    let mut node = node.clone();
    node.inputs[0].arg = Argument::Tensor(NUMBER.into());
    // A truth value (a comparison of sizes) stays a tensor: numbers here are ints and floats.
    if dtypes::infer(&node, target, &|_| Some(dtype)) == dtypes::BOOL {
        return Ok(None);
    }
    let outputs = eval::evaluate(&node, &|name| (name == NUMBER).then(|| tensor.clone()))?;
    Ok(match outputs.as_slice() {
        [out] if out.dims().is_empty() => match out.values() {
            Values::I64(v) => v.first().map(|&i| Val::Int(i)),
            Values::F32(v) => v.first().map(|&f| Val::Float(f64::from(f))),
        },
        _ => None,
    })
}

/// Arithmetic on traced sizes (`h * 8 * w` for a view's size list), evaluated.
fn integer_arithmetic(op: &str, a: i64, b: i64) -> Result<Val, String> {
    let result = match op {
        "torch.mul" => a.checked_mul(b),
        "torch.add" => a.checked_add(b),
        _ => a.checked_sub(b),
    };
    result
        .map(Val::Int)
        .ok_or_else(|| format!("`{op}({a}, {b})` overflows"))
}

/// The per-sample shape a view/reshape of per-sample `input` to `sizes` gives, when its
/// first size follows the batch: the batch itself, `-1` with the rest covering one sample,
/// or the traced batch size with the rest (possibly with one `-1`) covering one sample.
fn batch_following(
    input: &[u64],
    sizes: &[Val],
    traced_batch: Option<u64>,
) -> Result<Vec<u64>, String> {
    let sample: u64 = input.iter().product();
    let show = |sizes: &[Val]| {
        let items: Vec<String> = sizes
            .iter()
            .map(|s| match s {
                Val::Int(i) => i.to_string(),
                Val::Batch(1) => "batch".into(),
                Val::Batch(k) => format!("batch*{k}"),
                other => other.kind().into(),
            })
            .collect();
        format!("[{}]", items.join(", "))
    };
    let Some((first, rest)) = sizes.split_first() else {
        return Err("reshape to a scalar drops the batch".into());
    };
    let mut rest_ints = Vec::with_capacity(rest.len());
    for s in rest {
        match s {
            Val::Int(i) if *i >= -1 => rest_ints.push(*i),
            other => {
                return Err(format!(
                    "size list {} has {} after its first entry",
                    show(sizes),
                    other.kind()
                ))
            }
        }
    }
    let holes = rest_ints.iter().filter(|&&d| d == -1).count();
    let known = rest_ints
        .iter()
        .filter(|&&d| d != -1)
        .try_fold(1u64, |n, &d| n.checked_mul(d as u64))
        .ok_or_else(|| format!("size list {} overflows", show(sizes)))?;
    let resolved = |hole: u64| -> Vec<u64> {
        rest_ints
            .iter()
            .map(|&d| if d == -1 { hole } else { d as u64 })
            .collect()
    };
    let per_sample = match holes {
        0 if known == sample => Some(resolved(0)),
        1 if known > 0 && sample.is_multiple_of(known) => Some(resolved(sample / known)),
        _ => None,
    };
    let leads = match first {
        Val::Batch(1) => true,
        Val::Int(-1) => holes == 0,
        Val::Int(n) => match traced_batch {
            Some(b) => *n >= 0 && *n as u64 == b,
            None => holes == 0,
        },
        _ => false,
    };
    match (leads, per_sample) {
        (true, Some(shape)) => Ok(shape),
        _ => Err(format!(
            "size list {} does not keep the batch{} as its first dimension with one sample's {sample} elements after it, so the graph would only work at one batch size; write x.view(x.size(0), …) or x.flatten(1) in the model",
            show(sizes),
            traced_batch.map_or(String::new(), |b| format!(" (traced at {b})"))
        )),
    }
}

/// A view/reshape of a tensor whose first dimension is the batch times `k` and whose
/// other dimensions hold `sample` elements, to `sizes`: the factor `k'` the output's first
/// dimension has and the sizes after it, when the list leads with the batch times `k'`
/// (the rest fixed, at most one `-1`) or with `-1` (the rest fixed). Both hold at every
/// batch `B`, since `B·k·sample = B·k'·rest` (Swin's and SAM2's windows folded into the
/// batch, `x.view(-1, ws, ws, C)`, and back, `x.view(B, H, W, -1)`): row-major, sample `b`
/// is rows `b·k'` to `b·k' + k' − 1`.
fn folded_view(k: u64, sample: u64, sizes: &[Val]) -> Result<(u64, Vec<u64>), String> {
    let total = k
        .checked_mul(sample)
        .ok_or("the per-sample element count overflows")?;
    let Some((first, rest)) = sizes.split_first() else {
        return Err("reshape to a scalar drops the batch".into());
    };
    let rest: Vec<i64> = rest
        .iter()
        .map(|v| match v {
            Val::Int(i) if *i >= -1 => Ok(*i),
            other => Err(format!(
                "a size list holds {} after its first entry",
                other.kind()
            )),
        })
        .collect::<Result<_, _>>()?;
    let holes = rest.iter().filter(|&&d| d == -1).count();
    let known = rest
        .iter()
        .filter(|&&d| d != -1)
        .try_fold(1u64, |n, &d| n.checked_mul(d as u64))
        .ok_or("the size list overflows")?;
    let fixed = |hole: u64| {
        rest.iter()
            .map(move |&d| if d == -1 { hole } else { d as u64 })
    };
    let lead = match first {
        Val::Batch(lead) if *lead > 0 => *lead,
        Val::Int(-1) if holes == 0 && known > 0 && total.is_multiple_of(known) => total / known,
        _ => 0,
    };
    let per = (lead > 0 && total.is_multiple_of(lead)).then(|| total / lead);
    match (per, holes) {
        (Some(per), 0) if lead > 0 && known == per => Ok((lead, fixed(0).collect())),
        (Some(per), 1) if known > 0 && per.is_multiple_of(known) => {
            Ok((lead, fixed(per / known).collect()))
        }
        _ => Err(format!(
            "the size list does not lead with the batch (times a constant) over {total} elements per sample"
        )),
    }
}

/// Item `i` of an `n`-item list an op returned: `args` is `[list, i, n]` (see
/// [`LIST_UNPACK`]); the list must have exactly `n` items.
fn unpack(args: &[Val]) -> Result<Val, String> {
    match args {
        [Val::List(items), Val::Int(i), Val::Int(n)] if items.len() as i64 == *n => {
            usize::try_from(*i)
                .ok()
                .and_then(|i| items.get(i))
                .cloned()
                .ok_or_else(|| format!("item {i} of a list of {n}"))
        }
        [Val::List(items), _, Val::Int(n)] => Err(format!(
            "a list of {} values is unpacked into {n} names",
            items.len()
        )),
        [other, ..] => Err(format!("{} is unpacked into several names", other.kind())),
        [] => Err("nothing is unpacked".into()),
    }
}

/// The output spec of a flat dict of tensors with `keys`, as `treespec_dumps` writes it
/// (so the ONNX outputs are named after the keys, as for a `.pt2` program).
fn dict_spec(keys: &[String]) -> String {
    let leaf = serde_json::json!({"type": null, "context": null, "children_spec": []});
    let context = Json::from(keys.to_vec()).to_string();
    let tree = serde_json::json!({
        "type": "builtins.dict",
        "context": context,
        "children_spec": vec![leaf; keys.len()],
    });
    serde_json::json!([1, tree]).to_string()
}

/// Positional and keyword arguments matched to `schema`'s names.
fn name_args(schema: &Schema, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> Result<Named, String> {
    if args.len() > schema.args.len() {
        return Err(format!(
            "{} positional arguments given to {}",
            args.len(),
            schema.signature()
        ));
    }
    let mut named: Named = schema.args.iter().map(|a| a.name).zip(args).collect();
    for (key, val) in kwargs {
        let name = schema
            .arguments()
            .map(|a| a.name)
            .find(|n| *n == key)
            .ok_or_else(|| {
                format!(
                    "unknown keyword argument `{key}` for {}",
                    schema.signature()
                )
            })?;
        if named.iter().any(|(n, _)| *n == name) {
            return Err(format!("argument `{key}` given twice"));
        }
        named.push((name, val));
    }
    Ok(named)
}

/// Why no row of the schema table reads a call of `op` with these values: no op of that
/// name (the import reads the ops of the ONNX op reference), or none of its overloads takes
/// their types (each is named with torch's declaration).
fn unread_call(op: &str, passed: &[ops::Passed], keywords: &[(&str, ops::Passed)]) -> String {
    let name = op.strip_prefix("torch.").unwrap_or(op);
    let rows = ops::overloads(name);
    if rows.is_empty() {
        return format!(
            "`{op}` is not supported by the TorchScript import (it reads {} torch ops, listed in the ONNX op reference, onnx-ops.md)",
            ops::name_count()
        );
    }
    let given: Vec<String> = passed
        .iter()
        .map(ops::Passed::describe)
        .chain(
            keywords
                .iter()
                .map(|(k, v)| format!("{k}={}", v.describe())),
        )
        .collect();
    let declared: Vec<String> = rows.iter().map(|s| s.declaration()).collect();
    format!(
        "`{op}` called with ({}): no overload of it takes these arguments ({})",
        given.join(", "),
        declared.join("; ")
    )
}

/// `torch.to(x, device, dtype, …)` (the `to.device` overload) and `torch.to(x, dtype=…,
/// layout=…, device=…, pin_memory=…)` (`to.dtype_layout`) as the `to.dtype` call they are
/// in an export: the device (every tensor is on the CPU), a strided layout and pinning
/// change no value. Another layout is refused.
fn to_dtype_call(args: &mut Vec<Val>, kwargs: &mut Vec<(String, Val)>) -> Result<(), String> {
    if matches!(args.get(1), Some(Val::Str(_))) {
        args.remove(1);
    }
    let mut error = None;
    kwargs.retain(|(key, val)| match (key.as_str(), val) {
        ("device", _) | ("pin_memory", Val::None | Val::Bool(false)) => false,
        // torch.strided is layout 0 in traced code.
        ("layout", Val::None | Val::Int(0)) => false,
        ("layout", other) => {
            error = Some(format!(
                "a tensor layout other than strided ({})",
                other.kind()
            ));
            false
        }
        _ => true,
    });
    error.map_or(Ok(()), Err)
}

/// `torch.to(n, dtype)` (after [`to_dtype_call`]) of a number: a size made a tensor
/// (`ops.prim.NumToTensor`), a 0-d tensor constant, or arithmetic on them, which this
/// import holds as numbers (`torch.tensor(0.2)` in kornia, DeBERTa's attention scale,
/// `int(sqrt(n - 1))` in DINOv2's position grid, MobileViT's patch counts): the number the
/// 0-d tensor of that dtype holds, converted by the aten evaluator's `to.dtype` (torch's
/// conversion: truncation toward zero, wrapping to the width, rounding to float16), so
/// later size arithmetic reads it; an op that needs it as a tensor makes it one
/// ([`Converter::number_as_tensor`]). `non_blocking`, `copy` and `memory_format` change no
/// value of a new 0-d tensor. `None` when `n` is not a number or no dtype is given.
fn converted_number(args: &[Val], kwargs: &[(String, Val)]) -> Result<Option<Val>, String> {
    const NUMBER: &str = "number";
    let tensor = match args.first() {
        Some(Val::Int(i)) => Tensor::i64(Vec::new(), vec![*i])?,
        Some(Val::Bool(b)) => Tensor::i64(Vec::new(), vec![i64::from(*b)])?,
        Some(Val::Float(f)) => Tensor::f32(Vec::new(), vec![*f as f32])?,
        _ => return Ok(None),
    };
    let code = match (args.get(1), kwargs.iter().find(|(k, _)| k == "dtype")) {
        (Some(d @ Val::Int(_)), None) | (None, Some((_, d @ Val::Int(_)))) => d,
        _ => return Ok(None),
    };
    let Argument::ScalarType(export) = dtype(code)? else {
        return Ok(None);
    };
    let node = Node {
        target: "torch.ops.aten.to.dtype".into(),
        inputs: vec![
            NamedArgument {
                name: "self".into(),
                arg: Argument::Tensor(NUMBER.into()),
            },
            NamedArgument {
                name: "dtype".into(),
                arg: Argument::ScalarType(export),
            },
        ],
        outputs: Vec::new(),
        metadata: HashMap::new(),
        name: None,
    };
    let outputs = eval::evaluate(&node, &|name| (name == NUMBER).then(|| tensor.clone()))?;
    let out = match outputs.as_slice() {
        [out] => eval::recorded(out, export)?,
        _ => return Err("`to` gave several values".into()),
    };
    Ok(match out.values() {
        Values::I64(v) if export == dtypes::BOOL => v.first().map(|&b| Val::Bool(b != 0)),
        Values::I64(v) => v.first().map(|&i| Val::Int(i)),
        Values::F32(v) => v.first().map(|&f| Val::Float(f64::from(f))),
    })
}

/// The sizes of an embedding of constant ids (`positions(torch.arange(L))`), which the
/// lowering looks up at export; `None` when the ids are computed.
fn constant_lookup(named: &[(&str, Val)]) -> Option<Vec<u64>> {
    let get = |arg: &str| named.iter().find(|(n, _)| *n == arg).map(|(_, v)| v);
    match (get("weight"), get("indices")) {
        (Some(Val::Stored { dims: table, .. }), Some(Val::Stored { dims: ids, .. })) => {
            let width = *table.get(1)?;
            Some(ids.iter().copied().chain([width]).collect())
        }
        _ => None,
    }
}

/// `torch.arange(end)`, `(start, end)` or `(start, end, step)`: the overload for the
/// number of positional numbers given (named `start`, `end`, `step` in order), with a lone
/// number renamed `end`.
fn arange(mut named: Named) -> (&'static str, Named) {
    let numbers = named
        .iter()
        .filter(|(n, _)| matches!(*n, "start" | "end" | "step"))
        .count();
    match numbers {
        1 => {
            for (name, _) in named.iter_mut().filter(|(n, _)| *n == "start") {
                *name = "end";
            }
            ("arange.default", named)
        }
        2 => ("arange.start", named),
        _ => ("arange.start_step", named),
    }
}

/// `_convolution` as `conv{1,2,3}d` / `conv_transpose{1,2,3}d` by the input's rank
/// (`rank`, batch included; `None` when the input is no computed tensor): the performance
/// flags (`benchmark`, `deterministic`, `cudnn_enabled`, `allow_tf32`) do not change the
/// result; a non-transposed convolution must have no output padding.
fn convolution(named: Named, rank: Option<usize>) -> Result<(&'static str, Named), String> {
    let get = |name: &str| {
        named
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    };
    let transposed = match get("transposed") {
        Some(Val::Bool(b)) => b,
        _ => return Err("`transposed` is not a bool".into()),
    };
    // The spatial rank: the input's, less the batch and the channels.
    let rank = rank
        .ok_or("the convolution's input is not a tensor")?
        .saturating_sub(2);
    let keep: &[&str] = if transposed {
        &[
            "input",
            "weight",
            "bias",
            "stride",
            "padding",
            "output_padding",
            "groups",
            "dilation",
        ]
    } else {
        match get("output_padding") {
            Some(Val::List(p)) if p.iter().all(|v| *v == Val::Int(0)) => {}
            None => {}
            _ => return Err("a non-transposed convolution with output padding".into()),
        }
        &[
            "input", "weight", "bias", "stride", "padding", "dilation", "groups",
        ]
    };
    let overload = match (transposed, rank) {
        (false, 1) => "conv1d.default",
        (false, 2) => "conv2d.default",
        (false, 3) => "conv3d.default",
        (true, 1) => "conv_transpose1d.default",
        (true, 2) => "conv_transpose2d.input",
        (true, 3) => "conv_transpose3d.input",
        _ => {
            return Err(format!(
                "a {rank}-D convolution; only 1-D, 2-D and 3-D convolutions are exported"
            ))
        }
    };
    let kept = keep
        .iter()
        .filter_map(|k| get(k).map(|v| (*k, v)))
        .collect();
    Ok((overload, kept))
}

/// A value as a program argument.
fn argument(val: &Val) -> Result<Argument, String> {
    Ok(match val {
        Val::Activation { name, .. } | Val::Stored { name, .. } | Val::Moved { name } => {
            Argument::Tensor(name.clone())
        }
        Val::Number {
            name,
            integer: true,
        } => Argument::SymInt(SymInt::Name(name.clone())),
        Val::Number { name, .. } => Argument::SymFloat(name.clone()),
        Val::Int(i) => Argument::Int(*i),
        Val::Float(f) => Argument::Float(*f),
        Val::Bool(b) => Argument::Bool(*b),
        Val::Str(s) => Argument::String(s.clone()),
        Val::None => Argument::None,
        Val::Batch(_) => {
            return Err(format!(
                "the batch size is used as a value (size arithmetic such as `bsz * num_heads`); only view/reshape may lead with it; {}",
                shape::MOVED_BATCH_HINT
            ))
        }
        Val::List(items) => list(items)?,
    })
}

fn list(items: &[Val]) -> Result<Argument, String> {
    if items.iter().any(|v| matches!(v, Val::Batch(_))) {
        return items
            .iter()
            .map(|v| match v {
                Val::Batch(k) => Ok(batch_times(*k)),
                Val::Int(i) => Ok(SymInt::Int(*i)),
                other => Err(format!("a size list holds {}", other.kind())),
            })
            .collect::<Result<_, _>>()
            .map(Argument::SymInts);
    }
    let all = |f: fn(&Val) -> bool| items.iter().all(f);
    Ok(if items.is_empty() || all(|v| matches!(v, Val::Int(_))) {
        Argument::Ints(
            items
                .iter()
                .filter_map(|v| if let Val::Int(i) = v { Some(*i) } else { None })
                .collect(),
        )
    } else if all(|v| matches!(v, Val::Int(_) | Val::Float(_))) {
        Argument::Floats(
            items
                .iter()
                .filter_map(|v| match v {
                    Val::Int(i) => Some(*i as f64),
                    Val::Float(f) => Some(*f),
                    _ => None,
                })
                .collect(),
        )
    } else if all(|v| matches!(v, Val::Bool(_))) {
        Argument::Bools(
            items
                .iter()
                .filter_map(|v| if let Val::Bool(b) = v { Some(*b) } else { None })
                .collect(),
        )
    } else if all(|v| {
        matches!(
            v,
            Val::Activation { .. } | Val::Stored { .. } | Val::Moved { .. }
        )
    }) {
        Argument::Tensors(
            items
                .iter()
                .filter_map(|v| match v {
                    Val::Activation { name, .. }
                    | Val::Stored { name, .. }
                    | Val::Moved { name } => Some(name.clone()),
                    _ => None,
                })
                .collect(),
        )
    } else if all(|v| {
        matches!(
            v,
            Val::Activation { .. } | Val::Stored { .. } | Val::Moved { .. } | Val::None
        )
    }) {
        // `Tensor?[]` (`index`'s indices, `x[:, idx]` as `[None, idx]`), as torch.export
        // writes it.
        Argument::OptionalTensors(
            items
                .iter()
                .map(|v| match v {
                    Val::Activation { name, .. }
                    | Val::Stored { name, .. }
                    | Val::Moved { name } => Some(name.clone()),
                    _ => None,
                })
                .collect(),
        )
    } else {
        let kinds: Vec<&str> = items.iter().map(Val::kind).collect();
        return Err(format!("a list of mixed kinds ({})", kinds.join(", ")));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Vec<Val> {
        v.iter().map(|&i| Val::Int(i)).collect()
    }

    #[test]
    fn a_call_no_row_reads_is_named_with_the_overloads_it_has() {
        use ops::Passed::{Str, Tensor};
        let unknown = unread_call("torch.frobnicate", &[Tensor], &[]);
        assert!(
            unknown.contains("`torch.frobnicate` is not supported"),
            "{unknown}"
        );
        assert!(
            unknown.contains("onnx-ops.md") && unknown.len() < 200,
            "{unknown}"
        );
        let untyped = unread_call("torch.hsplit", &[Tensor, Str], &[("x", Tensor)]);
        assert!(
            untyped.contains("called with (Tensor, str, x=Tensor)")
                && untyped.contains("hsplit.int(Tensor self, int sections)"),
            "{untyped}"
        );
    }

    #[test]
    fn traced_batch_sizes_follow_the_batch() {
        // x.view(2, 512) traced at batch 2 on a [512, 1, 1] input.
        assert_eq!(
            batch_following(&[512, 1, 1], &ints(&[2, 512]), Some(2)),
            Ok(vec![512])
        );
        assert_eq!(
            batch_following(&[512, 1, 1], &ints(&[2, -1]), Some(2)),
            Ok(vec![512])
        );
        assert_eq!(
            batch_following(&[4, 6, 6], &ints(&[-1, 144]), Some(2)),
            Ok(vec![144])
        );
        assert_eq!(
            batch_following(&[4, 6, 6], &ints(&[2, 4, 36]), None),
            Ok(vec![4, 36])
        );
        let mut with_batch = vec![Val::Batch(1)];
        with_batch.extend(ints(&[-1]));
        assert_eq!(
            batch_following(&[4, 6, 6], &with_batch, Some(2)),
            Ok(vec![144])
        );
        // Folding the batch into the features, or a batch size not the traced one.
        let err = batch_following(&[4, 6, 6], &ints(&[1, -1]), Some(2)).unwrap_err();
        assert!(
            err.contains("size list [1, -1]") && err.contains("traced at 2"),
            "{err}"
        );
        assert!(batch_following(&[4, 6, 6], &ints(&[-1, 72]), Some(2)).is_err());
        assert!(batch_following(&[4, 6, 6], &ints(&[2, -1]), None).is_err());
        assert!(batch_following(&[4, 6, 6], &ints(&[4, 72]), Some(2)).is_err());
    }

    #[test]
    fn views_keep_the_batch_times_a_constant_first() {
        // Windows folded into the batch: [B, 8, 8, 3] → [-1, 4, 4, 3] is [4·B, 4, 4, 3].
        assert_eq!(
            folded_view(1, 8 * 8 * 3, &ints(&[-1, 4, 4, 3])),
            Ok((4, vec![4, 4, 3]))
        );
        // And back: [4·B, 16, 3] viewed as [B, 8, 8, -1].
        let mut back = vec![Val::Batch(1)];
        back.extend(ints(&[8, 8, -1]));
        assert_eq!(folded_view(4, 16 * 3, &back), Ok((1, vec![8, 8, 3])));
        // The batch times 4 kept, the rest re-split with a hole.
        let mut kept = vec![Val::Batch(4)];
        kept.extend(ints(&[16, 3, 1, -1]));
        assert_eq!(folded_view(4, 16 * 3, &kept), Ok((4, vec![16, 3, 1, 1])));
        // A quotient that is no whole number of rows per sample, a fixed first size (the
        // traced batch baked in), a hole beside -1 first: refused.
        let mut uneven = vec![Val::Batch(3)];
        uneven.extend(ints(&[-1]));
        assert!(folded_view(1, 8, &uneven).is_err());
        assert!(folded_view(1, 8, &ints(&[-1, 3])).is_err());
        assert!(folded_view(1, 8, &ints(&[2, 4])).is_err());
        assert!(folded_view(1, 8, &ints(&[-1, -1])).is_err());
        assert!(folded_view(1, 8, &[]).is_err());
        assert!(folded_view(1, 0, &ints(&[-1, 4])).is_err());
    }

    #[test]
    fn convolution_becomes_conv_or_transposed_by_rank() {
        let act = Val::Activation {
            name: "x".into(),
            shape: vec![3, 8, 8],
        };
        let base = |transposed: bool, out_pad: i64| {
            vec![
                ("input", act.clone()),
                (
                    "weight",
                    Val::Stored {
                        name: "w".into(),
                        dims: vec![4, 3, 3, 3],
                    },
                ),
                ("bias", Val::None),
                ("stride", Val::List(ints(&[1, 1]))),
                ("padding", Val::List(ints(&[1, 1]))),
                ("dilation", Val::List(ints(&[1, 1]))),
                ("transposed", Val::Bool(transposed)),
                ("output_padding", Val::List(ints(&[out_pad, out_pad]))),
                ("groups", Val::Int(1)),
                ("benchmark", Val::Bool(false)),
            ]
        };
        let (overload, kept) = convolution(base(false, 0), Some(4)).unwrap();
        assert_eq!(overload, "conv2d.default");
        let names: Vec<&str> = kept.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            ["input", "weight", "bias", "stride", "padding", "dilation", "groups"]
        );
        assert!(convolution(base(false, 1), Some(4))
            .unwrap_err()
            .contains("output padding"));
        assert_eq!(
            convolution(base(true, 1), Some(4)).unwrap().0,
            "conv_transpose2d.input"
        );
        assert!(convolution(base(false, 0), None)
            .unwrap_err()
            .contains("not a tensor"));
        // The input's rank picks the 1-D and 3-D overloads.
        for (shape, plain, transposed) in [
            (vec![3, 8], "conv1d.default", "conv_transpose1d.default"),
            (vec![3, 8, 8, 8], "conv3d.default", "conv_transpose3d.input"),
        ] {
            let with_input = |t: bool| {
                let mut named = base(t, 0);
                named[0].1 = Val::Activation {
                    name: "x".into(),
                    shape: shape.clone(),
                };
                named
            };
            let rank = Some(shape.len() + 1);
            assert_eq!(convolution(with_input(false), rank).unwrap().0, plain);
            assert_eq!(convolution(with_input(true), rank).unwrap().0, transposed);
        }
    }

    #[test]
    fn lists_an_op_returned_unpack_by_count() {
        let list = Val::List(vec![Val::Int(4), Val::Int(5)]);
        assert_eq!(
            unpack(&[list.clone(), Val::Int(1), Val::Int(2)]),
            Ok(Val::Int(5))
        );
        assert!(unpack(&[list, Val::Int(0), Val::Int(3)])
            .unwrap_err()
            .contains("a list of 2 values is unpacked into 3 names"));
        assert!(unpack(&[Val::Int(1), Val::Int(0), Val::Int(2)]).is_err());
        let spec = dict_spec(&["out".to_owned(), "aux".to_owned()]);
        let parsed: Json = serde_json::from_str(&spec).unwrap();
        assert_eq!(parsed[1]["type"], "builtins.dict");
        assert_eq!(parsed[1]["context"], r#"["out","aux"]"#);
        assert_eq!(parsed[1]["children_spec"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn arange_overload_follows_the_positional_count() {
        let named = |n: usize| -> Named {
            ["start", "end", "step"]
                .into_iter()
                .take(n)
                .map(|k| (k, Val::Int(4)))
                .chain([("dtype", Val::None)])
                .collect()
        };
        let (overload, args) = arange(named(1));
        assert_eq!(overload, "arange.default");
        assert_eq!(args[0].0, "end");
        assert_eq!(arange(named(2)).0, "arange.start");
        assert_eq!(arange(named(3)).0, "arange.start_step");
        assert_eq!(dtype(&Val::Int(6)), Ok(Argument::ScalarType(7)));
        assert_eq!(dtype(&Val::Int(4)), Ok(Argument::ScalarType(5)));
        assert!(dtype(&Val::Int(99)).is_err());
        assert_eq!(integer_arithmetic("torch.mul", 32, 8), Ok(Val::Int(256)));
        assert!(integer_arithmetic("torch.mul", i64::MAX, 2).is_err());
    }

    #[test]
    fn lists_become_typed_arguments() {
        assert_eq!(list(&[]), Ok(Argument::Ints(vec![])));
        assert_eq!(
            list(&[Val::Float(2.0), Val::Int(2)]),
            Ok(Argument::Floats(vec![2.0, 2.0]))
        );
        assert_eq!(
            list(&[Val::Batch(1), Val::Int(4)]),
            Ok(Argument::SymInts(vec![
                SymInt::Expr(BATCH.into()),
                SymInt::Int(4)
            ]))
        );
        assert!(list(&[Val::Int(1), Val::Str("a".into())])
            .unwrap_err()
            .contains("mixed"));
        // `x[:, idx]`'s indices: None for the dimensions taken whole.
        let idx = Val::Stored {
            name: "idx".into(),
            dims: vec![4],
        };
        assert_eq!(
            list(&[Val::None, idx]),
            Ok(Argument::OptionalTensors(vec![None, Some("idx".into())]))
        );
        assert!(argument(&Val::Batch(1)).is_err());
    }

    #[test]
    fn a_number_converted_by_to_stays_a_number_of_that_dtype() {
        let dtype = |code: i64| vec![("dtype".to_owned(), Val::Int(code))];
        let to = |n: Val, code: i64| converted_number(&[n], &dtype(code));
        // float32, int32 (truncated toward zero, as DINOv2's `int(sqrt(n))`), bool.
        assert_eq!(to(Val::Int(4), 6), Ok(Some(Val::Float(4.0))));
        assert_eq!(to(Val::Float(3.87), 3), Ok(Some(Val::Int(3))));
        assert_eq!(to(Val::Float(-2.7), 4), Ok(Some(Val::Int(-2))));
        assert_eq!(to(Val::Int(2), 11), Ok(Some(Val::Bool(true))));
        assert_eq!(to(Val::Int(300), 0), Ok(Some(Val::Int(44))));
        assert_eq!(
            to(Val::Float(0.1), 6),
            Ok(Some(Val::Float(f64::from(0.1f32))))
        );
        assert_eq!(
            converted_number(&[Val::Float(0.2), Val::Int(6), Val::Bool(false)], &[]),
            Ok(Some(Val::Float(f64::from(0.2f32))))
        );
        // A tensor's conversion, or one without a dtype, stays `to`.
        let tensor = Val::Activation {
            name: "x".into(),
            shape: vec![2],
        };
        assert_eq!(converted_number(&[tensor, Val::Int(6)], &[]), Ok(None));
        assert_eq!(converted_number(&[Val::Int(4)], &[]), Ok(None));
    }

    #[test]
    fn size_arithmetic_keeps_the_batch_times_a_constant() {
        assert_eq!(scaled_batch(1, 8), Ok(Val::Batch(8)));
        assert_eq!(scaled_batch(8, 4), Ok(Val::Batch(32)));
        assert!(scaled_batch(1, 0).is_err());
        assert!(scaled_batch(1, -2).is_err());
        assert!(scaled_batch(u64::MAX, 2).is_err());
        assert_eq!(divided_batch(8, 4), Ok(Val::Batch(2)));
        assert_eq!(divided_batch(8, 8), Ok(Val::Batch(1)));
        let err = divided_batch(8, 3).unwrap_err();
        assert!(err.contains("no multiple of the batch"), "{err}");
        assert!(divided_batch(8, 0).is_err());
        // Windows per image: the batch of windows over the batch of images.
        assert_eq!(batch_quotient(49, 1), Ok(Val::Int(49)));
        assert_eq!(batch_quotient(8, 4), Ok(Val::Int(2)));
        assert_eq!(batch_quotient(7, 2), Ok(Val::Int(3)));
        assert!(batch_quotient(7, 0).is_err());
        for k in [1, 2, 40] {
            let SymInt::Expr(e) = batch_times(k) else {
                panic!("batch_times({k}) is no expression")
            };
            assert_eq!(batch_factor(&e), Some(k));
        }
        assert_eq!(batch_factor("Mul(Integer(0), batch)"), None);
        assert_eq!(batch_factor("s0"), None);
        // In a size list, the batch times a constant is that expression.
        assert_eq!(
            list(&[Val::Int(5), Val::Batch(4), Val::Int(2)]),
            Ok(Argument::SymInts(vec![
                SymInt::Int(5),
                batch_times(4),
                SymInt::Int(2)
            ]))
        );
        assert!(argument(&Val::Batch(4)).is_err());
    }

    #[test]
    fn a_batch_on_any_dimension_is_resolved_at_each_size() {
        let sizes = [SymInt::Int(4), batch_times(16), SymInt::Expr(BATCH.into())];
        assert_eq!(sizes_at(&sizes, 3), Some(vec![4, 48, 3]));
        assert_eq!(batch_times(1), SymInt::Expr(BATCH.into()));
        assert_eq!(sizes_at(&[SymInt::Name("s".into())], 3), None);
    }

    #[test]
    fn factories_take_torchs_inferred_dtype() {
        let node = |args: &str| -> Node {
            serde_json::from_str(&format!(
                r#"{{"target": "t", "outputs": [], "inputs": [{args}]}}"#
            ))
            .unwrap()
        };
        let end = |arg: &str| node(&format!(r#"{{"name": "end", "arg": {arg}}}"#));
        assert_eq!(
            factory_dtype(&end(r#"{"as_int": 4}"#), "arange"),
            dtypes::INT64
        );
        assert_eq!(
            factory_dtype(&end(r#"{"as_float": 4.0}"#), "arange"),
            dtypes::FLOAT32
        );
        let fill = |arg: &str| node(&format!(r#"{{"name": "fill_value", "arg": {arg}}}"#));
        assert_eq!(
            factory_dtype(&fill(r#"{"as_int": 1}"#), "full"),
            dtypes::INT64
        );
        assert_eq!(
            factory_dtype(&fill(r#"{"as_bool": true}"#), "full"),
            dtypes::BOOL
        );
        assert_eq!(
            factory_dtype(&fill(r#"{"as_float": 1.5}"#), "full"),
            dtypes::FLOAT32
        );
        let typed = node(r#"{"name": "dtype", "arg": {"as_scalar_type": 5}}"#);
        assert_eq!(factory_dtype(&typed, "ones"), dtypes::INT64);
    }

    #[test]
    fn ops_on_numbers_alone_are_evaluated_at_torchs_types() {
        let node = |target: &str, a: Argument, b: Argument, other: &str| Node {
            target: format!("torch.ops.aten.{target}"),
            inputs: vec![
                NamedArgument {
                    name: "self".into(),
                    arg: a,
                },
                NamedArgument {
                    name: other.into(),
                    arg: b,
                },
            ],
            outputs: Vec::new(),
            metadata: HashMap::new(),
            name: None,
        };
        let number = |target: &str, a: Argument, b: Argument| {
            numbers_only(&node(target, a, b, "other")).unwrap()
        };
        use Argument::{Float, Int};
        // Python's remainder takes the divisor's sign; `/` of ints is a float.
        assert_eq!(
            number("remainder.Scalar", Int(-3), Int(7)),
            Some(Val::Int(4))
        );
        assert_eq!(number("rsub.Scalar", Int(3), Int(7)), Some(Val::Int(4)));
        assert_eq!(number("div.Tensor", Int(3), Int(2)), Some(Val::Float(1.5)));
        assert_eq!(
            number("mul.Tensor", Float(0.5), Int(3)),
            Some(Val::Float(1.5))
        );
        // A comparison stays a tensor; a tensor operand is not a number.
        assert_eq!(number("gt.Scalar", Int(3), Int(2)), None);
        let tensor = Argument::Tensor("x".into());
        assert_eq!(number("remainder.Scalar", tensor, Int(7)), None);
        assert!(numbers_only(&node("remainder.Scalar", Int(3), Int(0), "other")).is_err());
    }

    #[test]
    fn the_batch_in_a_size_list_is_set_for_evaluation() {
        let node: Node = serde_json::from_str(&format!(
            r#"{{"target": "torch.ops.aten.expand.default", "outputs": [], "inputs": [
                {{"name": "self", "arg": {{"as_tensor": {{"name": "token"}}}}}},
                {{"name": "size", "arg": {{"as_sym_ints": [{{"as_expr": {{"expr_str": "{BATCH}"}}}}, {{"as_int": -1}}]}}}}]}}"#
        ))
        .unwrap();
        let at_three = at_batch(&node, 3, 0);
        assert_eq!(at_three.inputs[1].arg, Argument::Ints(vec![3, -1]));
        assert_eq!(at_three.inputs[0].arg, node.inputs[0].arg);
        // The batch times a constant (`q.view(L, bsz * heads, d)`) is set to its value.
        let mut folded = node.clone();
        folded.inputs[1].arg = Argument::SymInts(vec![SymInt::Int(5), batch_times(4)]);
        assert_eq!(
            at_batch(&folded, 3, 0).inputs[1].arg,
            Argument::Ints(vec![5, 12])
        );
    }
}
