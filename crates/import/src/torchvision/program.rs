//! The aten program a torchvision builder writes: one user input (the image, the batch
//! first as the symbol [`BATCH`]), a placeholder per state-dict tensor read (a parameter
//! under its FQN), and `call_function` nodes of the aten ops torch.export records for the
//! same module in eval mode. Each node's output sizes come from the aten layer's shape
//! rules ([`shape::infer`]), or, for a view, from the sizes the view asks for; the node is
//! refused if they fail, so a builder never writes a program the lowering would size
//! otherwise.

use std::collections::HashMap;

use ckpt_aten::program::{
    Argument, ExportedProgram, Graph, GraphModule, InputSpec, NamedArgument, Node, OutputSpec,
    Signature, SymInt, TensorMeta,
};
use ckpt_aten::shape::{self, Dims};
use serde_json::Value as Json;

use super::TorchvisionError;
use crate::script::convert::BATCH;

/// The export schema's number for float32, the dtype of every value a builder writes.
const FLOAT32: i64 = 7;

/// A tensor of the program: an activation (`shape` per sample, behind the batch) or a
/// stored tensor (`shape` whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    name: String,
    shape: Vec<u64>,
}

impl Value {
    /// An activation's per-sample sizes; a stored tensor's sizes.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    fn arg(&self) -> Argument {
        Argument::Tensor(self.name.clone())
    }
}

/// An activation after a layer; each is the one torch module of that name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// No activation: the layer's output as it is.
    None,
    Relu,
    /// `nn.ReLU6`: `hardtanh(0, 6)`.
    Relu6,
    Hardswish,
    Silu,
    /// Exact `nn.GELU()`.
    Gelu,
    Sigmoid,
    Hardsigmoid,
}

/// A 2-D convolution's hyper-parameters (`nn.Conv2d`'s, symmetric padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2d {
    pub stride: [u64; 2],
    pub pad: [u64; 2],
    pub dilation: [u64; 2],
    pub groups: u64,
}

impl Conv2d {
    /// Stride `s`, padding `p`, no dilation, one group.
    pub fn new(stride: u64, pad: u64) -> Self {
        Conv2d {
            stride: [stride; 2],
            pad: [pad; 2],
            dilation: [1; 2],
            groups: 1,
        }
    }

    /// The same with `groups` groups.
    pub fn groups(self, groups: u64) -> Self {
        Conv2d { groups, ..self }
    }
}

/// A 2-D pooling window (symmetric padding; `ceil` is `nn.MaxPool2d`'s `ceil_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2d {
    pub kernel: [u64; 2],
    pub stride: [u64; 2],
    pub pad: [u64; 2],
    pub ceil: bool,
}

impl Pool2d {
    /// A square window of `kernel`, stride `stride`, padding `pad`, floor mode.
    pub fn new(kernel: u64, stride: u64, pad: u64) -> Self {
        Pool2d {
            kernel: [kernel; 2],
            stride: [stride; 2],
            pad: [pad; 2],
            ceil: false,
        }
    }

    /// The same in ceil mode.
    pub fn ceil_mode(self) -> Self {
        Pool2d { ceil: true, ..self }
    }
}

/// `[u64]` sizes as an aten int list.
fn ints(values: &[u64]) -> Argument {
    Argument::Ints(values.iter().map(|&v| v as i64).collect())
}

/// A view's sizes: the batch, then the per-sample `shape`.
fn batched(shape: &[u64]) -> Argument {
    Argument::SymInts(
        std::iter::once(SymInt::Expr(BATCH.into()))
            .chain(shape.iter().map(|&d| SymInt::Int(d as i64)))
            .collect(),
    )
}

/// A per-sample axis as the full-rank dimension torch names (the batch is dimension 0).
fn dim(axis: usize) -> Argument {
    Argument::Int(axis as i64 + 1)
}

/// The program being written.
#[derive(Default)]
pub struct Builder {
    nodes: Vec<Node>,
    tensor_values: HashMap<String, TensorMeta>,
    dims: HashMap<String, Dims>,
    /// The stored tensors read, by FQN, each placeholder once.
    stored: HashMap<String, Value>,
    specs: Vec<InputSpec>,
    input: Option<String>,
    /// How many nodes of each op were written, for fresh names.
    counts: HashMap<String, usize>,
}

impl Builder {
    /// The image input, `shape` per sample (C, H, W).
    pub fn input(&mut self, shape: Vec<u64>) -> Result<Value, TorchvisionError> {
        shape::check(&shape).map_err(|what| TorchvisionError::Option { what })?;
        let name = "x".to_owned();
        self.record(&name, Dims::PerSample(shape.clone()));
        self.input = Some(name.clone());
        Ok(Value { name, shape })
    }

    /// State-dict tensor `fqn` of sizes `dims` as a parameter of the program.
    pub fn stored(&mut self, fqn: &str, dims: &[u64]) -> Value {
        if let Some(v) = self.stored.get(fqn) {
            return v.clone();
        }
        let name = format!("p_{}", fqn.replace('.', "_"));
        self.record(&name, Dims::Stored(dims.to_vec()));
        self.specs.push(InputSpec::Parameter {
            arg: name.clone(),
            fqn: fqn.to_owned(),
        });
        let value = Value {
            name,
            shape: dims.to_vec(),
        };
        self.stored.insert(fqn.to_owned(), value.clone());
        value
    }

    fn record(&mut self, name: &str, dims: Dims) {
        let sizes = match &dims {
            Dims::PerSample(s) => std::iter::once(SymInt::Expr(BATCH.into()))
                .chain(s.iter().map(|&d| SymInt::Int(d as i64)))
                .collect(),
            Dims::Stored(s) => s.iter().map(|&d| SymInt::Int(d as i64)).collect(),
        };
        self.tensor_values.insert(
            name.to_owned(),
            TensorMeta {
                dtype: FLOAT32,
                sizes,
                strides: Vec::new(),
                storage_offset: SymInt::Int(0),
            },
        );
        self.dims.insert(name.to_owned(), dims);
    }

    /// A node of `op` (`conv2d.default`) in module `scope` with `args` by schema name; its
    /// output not yet named.
    fn node(&mut self, op: &str, scope: &str, args: Vec<(&str, Argument)>) -> Node {
        let stem = op.split('.').next().unwrap_or(op);
        let count = self.counts.entry(stem.to_owned()).or_default();
        let name = match *count {
            0 => stem.to_owned(),
            n => format!("{stem}_{n}"),
        };
        *count += 1;
        let mut metadata = HashMap::new();
        if !scope.is_empty() {
            let stack = format!("L__self__,{scope},torchvision");
            metadata.insert("nn_module_stack".to_owned(), Json::String(stack));
        }
        Node {
            target: format!("torch.ops.aten.{op}"),
            inputs: args
                .into_iter()
                .map(|(name, arg)| NamedArgument {
                    name: name.to_owned(),
                    arg,
                })
                .collect(),
            outputs: vec![Argument::Tensor(name.clone())],
            metadata,
            name: Some(name),
        }
    }

    /// Appends a call of `op`, sized by the aten layer's rule for it.
    pub fn call(
        &mut self,
        op: &str,
        scope: &str,
        args: Vec<(&str, Argument)>,
    ) -> Result<Value, TorchvisionError> {
        let node = self.node(op, scope, args);
        let dims = |n: &str| self.dims.get(n).cloned();
        let shape = shape::infer(&node, op, &dims)
            .and_then(|s| shape::check(&s).map(|()| s))
            .map_err(|e| TorchvisionError::Shape {
                what: format!(
                    "{}: {op}: {e}",
                    if scope.is_empty() { "model" } else { scope }
                ),
            })?;
        Ok(self.push(node, shape))
    }

    /// Appends a view of `op` whose per-sample sizes are `shape`, which the caller has
    /// checked hold as many elements as its input.
    fn view(
        &mut self,
        op: &str,
        scope: &str,
        args: Vec<(&str, Argument)>,
        shape: Vec<u64>,
    ) -> Value {
        let node = self.node(op, scope, args);
        self.push(node, shape)
    }

    fn push(&mut self, node: Node, shape: Vec<u64>) -> Value {
        let name = node.label().to_owned();
        self.record(&name, Dims::PerSample(shape.clone()));
        self.nodes.push(node);
        Value { name, shape }
    }

    /// The program returning `output`.
    pub fn finish(self, output: &Value) -> ExportedProgram {
        let mut specs = self.specs;
        let inputs: Vec<Argument> = self.input.into_iter().map(Argument::Tensor).collect();
        specs.extend(inputs.iter().cloned().map(InputSpec::UserInput));
        ExportedProgram {
            graph_module: GraphModule {
                graph: Graph {
                    inputs,
                    outputs: vec![output.arg()],
                    nodes: self.nodes,
                    tensor_values: self.tensor_values,
                    sym_int_values: HashMap::new(),
                },
                signature: Signature {
                    input_specs: specs,
                    output_specs: vec![OutputSpec::UserOutput(output.arg())],
                },
                module_call_graph: Vec::new(),
            },
            range_constraints: HashMap::new(),
            torch_version: None,
        }
    }

    /// An element-wise op of one operand, which keeps its sizes.
    fn unary(
        &mut self,
        op: &str,
        scope: &str,
        x: &Value,
        mut args: Vec<(&str, Argument)>,
    ) -> Value {
        args.insert(0, ("self", x.arg()));
        self.view(op, scope, args, x.shape.clone())
    }

    /// `act` applied to `x` in module `scope`.
    pub fn activation(&mut self, scope: &str, x: &Value, act: Act) -> Value {
        let (op, args) = match act {
            Act::None => return x.clone(),
            Act::Relu => ("relu.default", Vec::new()),
            Act::Relu6 => (
                "hardtanh.default",
                vec![
                    ("min_val", Argument::Float(0.0)),
                    ("max_val", Argument::Float(6.0)),
                ],
            ),
            Act::Hardswish => ("hardswish.default", Vec::new()),
            Act::Silu => ("silu.default", Vec::new()),
            Act::Gelu => ("gelu.default", Vec::new()),
            Act::Sigmoid => ("sigmoid.default", Vec::new()),
            Act::Hardsigmoid => ("hardsigmoid.default", Vec::new()),
        };
        self.unary(op, scope, x, args)
    }

    /// `nn.ReLU`, the activation most families write.
    pub fn relu(&mut self, scope: &str, x: &Value) -> Value {
        self.activation(scope, x, Act::Relu)
    }

    /// An element-wise op of two operands (`add.Tensor`): `x` and `other`, broadcast.
    fn binary(
        &mut self,
        op: &str,
        scope: &str,
        x: &Value,
        other: Argument,
    ) -> Result<Value, TorchvisionError> {
        self.call(op, scope, vec![("self", x.arg()), ("other", other)])
    }

    /// `a + b` (an activation and an activation or a stored tensor, broadcast).
    pub fn add(&mut self, scope: &str, a: &Value, b: &Value) -> Result<Value, TorchvisionError> {
        self.binary("add.Tensor", scope, a, b.arg())
    }

    /// `a * b` (an activation and an activation or a stored tensor, broadcast).
    pub fn mul(&mut self, scope: &str, a: &Value, b: &Value) -> Result<Value, TorchvisionError> {
        self.binary("mul.Tensor", scope, a, b.arg())
    }

    /// `x * factor + offset` with numbers.
    pub fn affine(
        &mut self,
        scope: &str,
        x: &Value,
        factor: f64,
        offset: f64,
    ) -> Result<Value, TorchvisionError> {
        let y = self.binary("mul.Tensor", scope, x, Argument::Float(factor))?;
        self.binary("add.Tensor", scope, &y, Argument::Float(offset))
    }

    /// `F.conv2d(x, weight, bias)`.
    pub fn conv(
        &mut self,
        scope: &str,
        x: &Value,
        weight: &Value,
        bias: Option<&Value>,
        p: Conv2d,
    ) -> Result<Value, TorchvisionError> {
        let args = vec![
            ("input", x.arg()),
            ("weight", weight.arg()),
            ("bias", bias.map_or(Argument::None, Value::arg)),
            ("stride", ints(&p.stride)),
            ("padding", ints(&p.pad)),
            ("dilation", ints(&p.dilation)),
            ("groups", Argument::Int(p.groups as i64)),
        ];
        self.call("conv2d.default", scope, args)
    }

    /// Eval-mode `F.batch_norm` with the running statistics `[weight, bias, mean, var]`.
    pub fn batch_norm(
        &mut self,
        scope: &str,
        x: &Value,
        [weight, bias, mean, var]: [&Value; 4],
        eps: f64,
    ) -> Result<Value, TorchvisionError> {
        let args = vec![
            ("input", x.arg()),
            ("weight", weight.arg()),
            ("bias", bias.arg()),
            ("running_mean", mean.arg()),
            ("running_var", var.arg()),
            ("training", Argument::Bool(false)),
            ("momentum", Argument::Float(0.1)),
            ("eps", Argument::Float(eps)),
            ("cudnn_enabled", Argument::Bool(true)),
        ];
        self.call("batch_norm.default", scope, args)
    }

    /// `F.linear` over the last axis.
    pub fn linear(
        &mut self,
        scope: &str,
        x: &Value,
        weight: &Value,
        bias: Option<&Value>,
    ) -> Result<Value, TorchvisionError> {
        let args = vec![
            ("input", x.arg()),
            ("weight", weight.arg()),
            ("bias", bias.map_or(Argument::None, Value::arg)),
        ];
        self.call("linear.default", scope, args)
    }

    /// `F.layer_norm` over the last axis.
    pub fn layer_norm(
        &mut self,
        scope: &str,
        x: &Value,
        [weight, bias]: [&Value; 2],
        eps: f64,
    ) -> Result<Value, TorchvisionError> {
        let width = x.shape.last().copied().unwrap_or(0);
        let args = vec![
            ("input", x.arg()),
            ("normalized_shape", ints(&[width])),
            ("weight", weight.arg()),
            ("bias", bias.arg()),
            ("eps", Argument::Float(eps)),
        ];
        self.call("layer_norm.default", scope, args)
    }

    /// `nn.MaxPool2d`.
    pub fn max_pool(
        &mut self,
        scope: &str,
        x: &Value,
        p: Pool2d,
    ) -> Result<Value, TorchvisionError> {
        let args = vec![
            ("self", x.arg()),
            ("kernel_size", ints(&p.kernel)),
            ("stride", ints(&p.stride)),
            ("padding", ints(&p.pad)),
            ("dilation", ints(&[1, 1])),
            ("ceil_mode", Argument::Bool(p.ceil)),
        ];
        self.call("max_pool2d.default", scope, args)
    }

    /// `nn.AvgPool2d` (padding counted, as torch's default).
    pub fn average_pool(
        &mut self,
        scope: &str,
        x: &Value,
        p: Pool2d,
    ) -> Result<Value, TorchvisionError> {
        let args = vec![
            ("self", x.arg()),
            ("kernel_size", ints(&p.kernel)),
            ("stride", ints(&p.stride)),
            ("padding", ints(&p.pad)),
            ("ceil_mode", Argument::Bool(p.ceil)),
        ];
        self.call("avg_pool2d.default", scope, args)
    }

    /// `nn.AdaptiveAvgPool2d(out)`.
    pub fn adaptive_average_pool(
        &mut self,
        scope: &str,
        x: &Value,
        out: [u64; 2],
    ) -> Result<Value, TorchvisionError> {
        let args = vec![("self", x.arg()), ("output_size", ints(&out))];
        self.call("adaptive_avg_pool2d.default", scope, args)
    }

    /// `nn.AdaptiveAvgPool2d(1)`.
    pub fn global_average_pool(
        &mut self,
        scope: &str,
        x: &Value,
    ) -> Result<Value, TorchvisionError> {
        self.adaptive_average_pool(scope, x, [1, 1])
    }

    /// `x.mean([2, 3])` of a C×H×W map: a C vector.
    pub fn mean_spatial(&mut self, scope: &str, x: &Value) -> Result<Value, TorchvisionError> {
        let args = vec![("self", x.arg()), ("dim", ints(&[2, 3]))];
        self.call("mean.dim", scope, args)
    }

    /// `torch.flatten(x, 1)`.
    pub fn flatten(&mut self, scope: &str, x: &Value) -> Result<Value, TorchvisionError> {
        let args = vec![("self", x.arg()), ("start_dim", Argument::Int(1))];
        self.call("flatten.using_ints", scope, args)
    }

    /// `torch.cat` along per-sample `axis`.
    pub fn concat(
        &mut self,
        scope: &str,
        xs: &[&Value],
        axis: usize,
    ) -> Result<Value, TorchvisionError> {
        let names = xs.iter().map(|x| x.name.clone()).collect();
        let args = vec![("tensors", Argument::Tensors(names)), ("dim", dim(axis))];
        self.call("cat.default", scope, args)
    }

    /// `x.view(batch, *shape)`.
    pub fn reshape(
        &mut self,
        scope: &str,
        x: &Value,
        shape: &[u64],
    ) -> Result<Value, TorchvisionError> {
        let count = |s: &[u64]| s.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
        if count(shape) != count(&x.shape) {
            return Err(TorchvisionError::Shape {
                what: format!("{scope}: cannot view per-sample {:?} as {shape:?}", x.shape),
            });
        }
        shape::check(shape).map_err(|what| TorchvisionError::Shape { what })?;
        let args = vec![("self", x.arg()), ("size", batched(shape))];
        Ok(self.view("view.default", scope, args, shape.to_vec()))
    }

    /// `x.permute(0, *[p + 1 for p in perm])`: per-sample axes reordered.
    pub fn permute(
        &mut self,
        scope: &str,
        x: &Value,
        perm: &[usize],
    ) -> Result<Value, TorchvisionError> {
        let dims = std::iter::once(0)
            .chain(perm.iter().map(|&p| p as u64 + 1))
            .collect::<Vec<_>>();
        let args = vec![("self", x.arg()), ("dims", ints(&dims))];
        self.call("permute.default", scope, args)
    }

    /// `x.transpose(a + 1, b + 1)`.
    pub fn transpose(
        &mut self,
        scope: &str,
        x: &Value,
        a: usize,
        b: usize,
    ) -> Result<Value, TorchvisionError> {
        let args = vec![("self", x.arg()), ("dim0", dim(a)), ("dim1", dim(b))];
        self.call("transpose.int", scope, args)
    }

    /// `x.narrow` along per-sample `axis` to `range`.
    pub fn slice(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        range: std::ops::Range<u64>,
    ) -> Result<Value, TorchvisionError> {
        let args = vec![
            ("self", x.arg()),
            ("dim", dim(axis)),
            ("start", Argument::Int(range.start as i64)),
            ("end", Argument::Int(range.end as i64)),
        ];
        self.call("slice.Tensor", scope, args)
    }

    /// `x.chunk(chunks, axis + 1)`: its pieces, as one node with a list of outputs.
    pub fn chunk(
        &mut self,
        scope: &str,
        x: &Value,
        chunks: u64,
        axis: usize,
    ) -> Result<Vec<Value>, TorchvisionError> {
        let op = "chunk.default";
        let args = vec![
            ("self", x.arg()),
            ("chunks", Argument::Int(chunks as i64)),
            ("dim", dim(axis)),
        ];
        let mut node = self.node(op, scope, args);
        let dims = |n: &str| self.dims.get(n).cloned();
        let shapes =
            shape::split::infer_pieces(&node, op, &dims).map_err(|e| TorchvisionError::Shape {
                what: format!("{scope}: {op}: {e}"),
            })?;
        let stem = node.label().to_owned();
        let pieces: Vec<Value> = shapes
            .into_iter()
            .enumerate()
            .map(|(k, shape)| Value {
                name: format!("{stem}_{k}"),
                shape,
            })
            .collect();
        for piece in &pieces {
            self.record(&piece.name, Dims::PerSample(piece.shape.clone()));
        }
        node.outputs = vec![Argument::Tensors(
            pieces.iter().map(|p| p.name.clone()).collect(),
        )];
        self.nodes.push(node);
        Ok(pieces)
    }

    /// `x.select(axis + 1, index)`.
    pub fn select(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        index: u64,
    ) -> Result<Value, TorchvisionError> {
        let args = vec![
            ("self", x.arg()),
            ("dim", dim(axis)),
            ("index", Argument::Int(index as i64)),
        ];
        self.call("select.int", scope, args)
    }

    /// `x.unsqueeze(axis + 1)`.
    pub fn unsqueeze(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
    ) -> Result<Value, TorchvisionError> {
        let args = vec![("self", x.arg()), ("dim", dim(axis))];
        self.call("unsqueeze.default", scope, args)
    }

    /// Stored tensor `t` of sizes `[1, *rest]` expanded over the batch:
    /// `t.expand(batch, -1, …)`.
    pub fn expand_over_batch(&mut self, scope: &str, t: &Value) -> Result<Value, TorchvisionError> {
        let Some((1, rest)) = t.shape.split_first() else {
            return Err(TorchvisionError::Shape {
                what: format!("{scope}: `{}` {:?} does not lead with 1", t.name, t.shape),
            });
        };
        let sizes = std::iter::once(SymInt::Expr(BATCH.into()))
            .chain(rest.iter().map(|_| SymInt::Int(-1)))
            .collect();
        let args = vec![("self", t.arg()), ("size", Argument::SymInts(sizes))];
        Ok(self.view("expand.default", scope, args, rest.to_vec()))
    }

    /// `F.scaled_dot_product_attention(q, k, v)` with torch's default scale.
    pub fn attention(
        &mut self,
        scope: &str,
        [q, k, v]: [&Value; 3],
    ) -> Result<Value, TorchvisionError> {
        let args = vec![("query", q.arg()), ("key", k.arg()), ("value", v.arg())];
        self.call("scaled_dot_product_attention.default", scope, args)
    }

    /// torchvision's `channel_shuffle`: the channels of a C×H×W map in `groups` groups,
    /// interleaved by its view, transpose and view.
    pub fn channel_shuffle(
        &mut self,
        scope: &str,
        x: &Value,
        groups: u64,
    ) -> Result<Value, TorchvisionError> {
        let &[c, h, w] = x.shape.as_slice() else {
            return Err(TorchvisionError::Shape {
                what: format!("{scope}: channel shuffle of per-sample {:?}", x.shape),
            });
        };
        let per_group = c
            .checked_div(groups)
            .filter(|g| g * groups == c)
            .ok_or_else(|| TorchvisionError::Shape {
                what: format!("{scope}: {c} channels do not split into {groups} groups"),
            })?;
        let y = self.reshape(scope, x, &[groups, per_group, h, w])?;
        let y = self.transpose(scope, &y, 0, 1)?;
        self.reshape(scope, &y, &[c, h, w])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(program: &ExportedProgram, name: &str) -> Vec<SymInt> {
        program.graph_module.graph.tensor_values[name].sizes.clone()
    }

    #[test]
    fn each_node_is_sized_by_the_aten_rule_and_parameters_are_read_once_by_fqn() {
        let mut b = Builder::default();
        let x = b.input(vec![3, 8, 8]).unwrap();
        let w = b.stored("conv1.weight", &[4, 3, 3, 3]);
        assert_eq!(b.stored("conv1.weight", &[4, 3, 3, 3]), w);
        let y = b.conv("conv1", &x, &w, None, Conv2d::new(2, 1)).unwrap();
        assert_eq!(y.shape(), [4, 4, 4]);
        let halves = b.chunk("split", &y, 2, 0).unwrap();
        assert_eq!(halves.len(), 2);
        assert_eq!(halves[1].shape(), [2, 4, 4]);
        let z = b.channel_shuffle("shuffle", &y, 2).unwrap();
        let out = b.flatten("", &z).unwrap();
        assert_eq!(out.shape(), [64]);
        let program = b.finish(&out);
        let batch = SymInt::Expr(BATCH.into());
        assert_eq!(sizes(&program, "x")[0], batch);
        assert_eq!(sizes(&program, &out.name), vec![batch, SymInt::Int(64)]);
        let specs = &program.graph_module.signature.input_specs;
        let parameters: Vec<_> = specs
            .iter()
            .filter(|s| matches!(s, InputSpec::Parameter { fqn, .. } if fqn == "conv1.weight"))
            .collect();
        assert_eq!(parameters.len(), 1);
        assert!(matches!(specs.last(), Some(InputSpec::UserInput(_))));
        let conv = &program.graph_module.graph.nodes[0];
        assert_eq!(conv.target, "torch.ops.aten.conv2d.default");
        assert_eq!(
            conv.meta("nn_module_stack"),
            Some("L__self__,conv1,torchvision")
        );
    }

    #[test]
    fn a_node_its_rule_refuses_is_an_error_naming_the_module() {
        let mut b = Builder::default();
        let x = b.input(vec![3, 8, 8]).unwrap();
        let pool = Pool2d::new(3, 2, 0);
        let y = b.max_pool("pool", &x, pool).unwrap();
        let e = b.concat("cat", &[&x, &y], 0).unwrap_err().to_string();
        assert!(e.starts_with("cat: cat.default:"), "{e}");
        let e = b.reshape("view", &x, &[7]).unwrap_err().to_string();
        assert!(e.contains("cannot view"), "{e}");
    }
}
