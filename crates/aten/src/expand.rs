//! Compound ops written as the aten ops torch's own definition computes them by: the
//! recurrent cells (`RNN.cpp`'s `SimpleCell`, `GRUCell`, `LSTMCell`), a ReLU RNN layer
//! unrolled along its sequence (`torch._decomp`'s `rnn_relu_input`), `bilinear`
//! (`Linear.cpp`), `linalg_cross` (`torch._refs.linalg.cross`), `block_diag`
//! (`TensorShape.cpp`), `_softmax_backward_data` and `native_dropout_backward`
//! (`torch._decomp.decompositions`), the trapezoid rule over sample points
//! (`Integration.cpp`), `isin` (`torch._decomp`'s `isin_default`), the masked index ops
//! `_unsafe_masked_index` and its accumulating put (`TensorAdvancedIndexing.cpp`), `embedding_renorm_`
//! and `embedding_bag` (`Embedding.cpp`, `EmbeddingBag.cpp`), and `embedding` of a table
//! the program computes (a pick of its rows).
//!
//! [`expand`] turns one such node into nodes of ops the lowering and the evaluator already
//! compute, each new value with the sizes and dtype torch would record for it: the node's
//! own outputs keep their names (and their recorded metadata), the values between are
//! named under the node's label (`gru_cell.sigmoid_4`). The lowering lowers the nodes one
//! by one, so a part whose operands are all constants (a weight's relayout, the spacing of
//! constant sample points) is folded at export, and a step that would mix samples is
//! refused by the op that takes it, naming the expansion's step.

use super::args::Args;
use super::dim::Dim;
use super::program::{Argument, NamedArgument, Node, SymInt, TensorMeta};

/// The ops [`expand`] writes as others (targets without `torch.ops.aten.`).
pub const EXPANDED: &[&str] = &[
    "_softmax_backward_data.default",
    "_unsafe_masked_index.default",
    "_unsafe_masked_index_put_accumulate.default",
    "bilinear.default",
    "block_diag.default",
    "cross.default",
    "cumulative_trapezoid.x",
    "embedding_bag.default",
    "embedding_bag.padding_idx",
    "embedding_renorm.default",
    "embedding_renorm_.default",
    "gru_cell.default",
    "isin.Tensor_Tensor",
    "linalg_cross.default",
    "lstm_cell.default",
    "native_dropout_backward.default",
    "rnn_relu.input",
    "rnn_relu_cell.default",
    "rnn_tanh_cell.default",
    "trapezoid.x",
    "trapz.x",
];

/// The export schema's dtype number of bool.
const BOOL: i64 = 12;

/// The export schema's dtype number of int64.
const LONG: i64 = 5;

/// One node written as others: `nodes` in order, and the metadata of every value they make
/// but the expanded node's own outputs.
#[derive(Debug, Default)]
pub struct Expansion {
    pub nodes: Vec<Node>,
    pub values: Vec<(String, TensorMeta)>,
}

/// `node` (one of [`EXPANDED`]) as the ops torch computes it by. `meta` gives torch's
/// record of a value the node reads (its sizes and dtype). Errors are plain text; the
/// caller adds where the node is.
pub fn expand(node: &Node, meta: &dyn Fn(&str) -> Option<TensorMeta>) -> Result<Expansion, String> {
    let target = node
        .target
        .strip_prefix("torch.ops.aten.")
        .unwrap_or(&node.target);
    let mut w = Writer {
        node,
        meta,
        out: Expansion::default(),
    };
    let args = Args(node);
    match target {
        "rnn_tanh_cell.default" => w.simple_cell(&args, "tanh.default")?,
        "rnn_relu_cell.default" => w.simple_cell(&args, "relu.default")?,
        "rnn_relu.input" => w.rnn_relu(&args)?,
        "gru_cell.default" => w.gru_cell(&args)?,
        "lstm_cell.default" => w.lstm_cell(&args)?,
        "bilinear.default" => w.bilinear(&args)?,
        "cross.default" | "linalg_cross.default" => w.cross(&args, target)?,
        "block_diag.default" => w.block_diag(&args)?,
        "_softmax_backward_data.default" => w.softmax_backward(&args)?,
        "native_dropout_backward.default" => w.dropout_backward(&args)?,
        "trapz.x" | "trapezoid.x" => w.trapezoid(&args, false)?,
        "cumulative_trapezoid.x" => w.trapezoid(&args, true)?,
        "isin.Tensor_Tensor" => w.isin(&args)?,
        "_unsafe_masked_index.default" => w.masked_index(&args)?,
        "_unsafe_masked_index_put_accumulate.default" => w.masked_index_put(&args)?,
        "embedding_renorm.default" | "embedding_renorm_.default" => w.embedding_renorm(&args)?,
        "embedding_bag.default" | "embedding_bag.padding_idx" => w.embedding_bag(&args)?,
        "embedding.default" => w.embedding_by_index(&args)?,
        other => return Err(format!("{other} is not written as other ops")),
    }
    Ok(w.out)
}

/// `node`, an `embedding_bag` of ids flattened from the 2-D `ids` (`[rows, length]`, one
/// bag per row; its `per_sample_weights`, if any, already the 2-D tensor too), as the ops
/// torch computes it by: the lookup of `ids` and a reduction over each row ([`crate::bags`]
/// finds such nodes).
pub fn embedding_bag_rows(
    node: &Node,
    ids: &str,
    meta: &dyn Fn(&str) -> Option<TensorMeta>,
) -> Result<Expansion, String> {
    let mut w = Writer {
        node,
        meta,
        out: Expansion::default(),
    };
    w.embedding_bag_rows(&Args(node), ids)?;
    Ok(w.out)
}

/// A value's sizes and dtype, as the writer tracks them.
#[derive(Clone, Debug)]
struct Value {
    name: String,
    sizes: Vec<SymInt>,
    dtype: i64,
}

impl Value {
    fn rank(&self) -> usize {
        self.sizes.len()
    }

    /// The fixed size of dimension `axis` (a size holding a symbol is refused, naming
    /// `what` needs it).
    fn fixed(&self, axis: usize, what: &str) -> Result<i64, String> {
        match self.sizes.get(axis) {
            Some(SymInt::Int(n)) => Ok(*n),
            _ => Err(format!(
                "{what} reads dimension {axis} of `{}`, whose size is not fixed (the batch)",
                self.name
            )),
        }
    }
}

impl Value {
    /// The fixed size of dimension `axis`; a size that is not fixed is the batch, and an
    /// op that `what` (picks entries along `axis` by their place) would mix samples.
    fn fixed_along(&self, axis: usize, what: &str) -> Result<i64, String> {
        match self.sizes.get(axis) {
            Some(SymInt::Int(n)) => Ok(*n),
            _ => Err(format!(
                "{what} along dimension {axis} of `{}`, the batch, which mixes samples; only ops that treat each sample alike are exported",
                self.name
            )),
        }
    }
}

/// The expansion under way.
struct Writer<'n> {
    node: &'n Node,
    meta: &'n dyn Fn(&str) -> Option<TensorMeta>,
    out: Expansion,
}

/// A tensor argument of a new node.
fn t(v: &Value) -> Argument {
    Argument::Tensor(v.name.clone())
}

/// A size list argument: ints when every size is fixed (as torch.export writes it).
fn size_list(sizes: &[SymInt]) -> Argument {
    let ints: Option<Vec<i64>> = sizes
        .iter()
        .map(|s| match s {
            SymInt::Int(n) => Some(*n),
            _ => None,
        })
        .collect();
    ints.map_or_else(|| Argument::SymInts(sizes.to_vec()), Argument::Ints)
}

/// `a` and `b` broadcast together, as torch's `infer_size` does.
fn broadcast(a: &[SymInt], b: &[SymInt]) -> Vec<SymInt> {
    let rank = a.len().max(b.len());
    let at = |s: &[SymInt], i: usize| -> SymInt {
        (i + s.len())
            .checked_sub(rank)
            .and_then(|k| s.get(k).cloned())
            .unwrap_or(SymInt::Int(1))
    };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (SymInt::Int(1), other) => other,
            (one, _) => one,
        })
        .collect()
}

/// The axis `dim` names in a tensor of rank `rank`.
fn axis(dim: i64, rank: usize) -> Result<usize, String> {
    Ok(Dim::wrap(dim, rank)?.view_axis())
}

impl Writer<'_> {
    /// The value `name` the node reads.
    fn input(&self, name: &str) -> Result<Value, String> {
        let meta = (self.meta)(name).ok_or_else(|| format!("no sizes recorded for `{name}`"))?;
        Ok(Value {
            name: name.to_owned(),
            sizes: meta.sizes,
            dtype: meta.dtype,
        })
    }

    /// The node's output `k`.
    fn output(&self, k: usize) -> Result<Value, String> {
        let name = self
            .node
            .outputs
            .iter()
            .flat_map(Argument::tensor_names)
            .nth(k)
            .ok_or_else(|| format!("output {k} is not a tensor"))?;
        self.input(name)
    }

    /// Appends a call of `op` making a value of `sizes` and `dtype` (or, with `into`, the
    /// node's own output `into`).
    fn emit(
        &mut self,
        op: &str,
        inputs: Vec<(&str, Argument)>,
        sizes: Vec<SymInt>,
        dtype: i64,
        into: Option<&Value>,
    ) -> Value {
        let value = match into {
            Some(out) => out.clone(),
            None => {
                let short = op.split('.').next().unwrap_or(op);
                let name = format!("{}.{short}_{}", self.node.label(), self.out.nodes.len());
                self.out.values.push((
                    name.clone(),
                    TensorMeta {
                        dtype,
                        sizes: sizes.clone(),
                        strides: Vec::new(),
                        storage_offset: SymInt::Int(0),
                    },
                ));
                Value { name, sizes, dtype }
            }
        };
        self.out.nodes.push(Node {
            target: format!("torch.ops.aten.{op}"),
            inputs: inputs
                .into_iter()
                .map(|(name, arg)| NamedArgument {
                    name: name.to_owned(),
                    arg,
                })
                .collect(),
            outputs: vec![t(&value)],
            metadata: self.node.metadata.clone(),
            name: Some(value.name.clone()),
        });
        value
    }

    /// An element-wise op of `a` and `b` (`add.Tensor`, `mul.Tensor`, …).
    fn binary(&mut self, op: &str, a: &Value, b: &Value, into: Option<&Value>) -> Value {
        let sizes = broadcast(&a.sizes, &b.sizes);
        self.emit(
            op,
            vec![("self", t(a)), ("other", t(b))],
            sizes,
            a.dtype,
            into,
        )
    }

    /// An element-wise op of `a` alone (`sigmoid.default`, …).
    fn unary(&mut self, op: &str, a: &Value, into: Option<&Value>) -> Value {
        self.emit(op, vec![("self", t(a))], a.sizes.clone(), a.dtype, into)
    }

    /// `a` times number `x` (`mul.Scalar`) or divided by it (`div.Scalar`).
    fn scalar(&mut self, op: &str, a: &Value, x: f64, into: Option<&Value>) -> Value {
        self.emit(
            op,
            vec![("self", t(a)), ("other", Argument::Float(x))],
            a.sizes.clone(),
            a.dtype,
            into,
        )
    }

    /// `linear(x, weight, bias)`: `x` `[…, in]` times the transpose of `weight` `[out, in]`.
    fn linear(&mut self, x: &Value, weight: &Value, bias: Option<&str>) -> Result<Value, String> {
        let mut sizes = x.sizes.clone();
        let rows = weight.sizes.first().cloned().ok_or("the weight is 0-d")?;
        sizes.pop();
        sizes.push(rows);
        let bias = bias.map_or(Argument::None, |b| Argument::Tensor(b.to_owned()));
        Ok(self.emit(
            "linear.default",
            vec![("input", t(x)), ("weight", t(weight)), ("bias", bias)],
            sizes,
            x.dtype,
            None,
        ))
    }

    /// `x.slice(axis, start, end)` with fixed bounds inside the dimension.
    fn slice(&mut self, x: &Value, axis: usize, start: i64, end: i64) -> Value {
        let mut sizes = x.sizes.clone();
        sizes[axis] = SymInt::Int(end - start);
        self.emit(
            "slice.Tensor",
            vec![
                ("self", t(x)),
                ("dim", Argument::Int(axis as i64)),
                ("start", Argument::Int(start)),
                ("end", Argument::Int(end)),
            ],
            sizes,
            x.dtype,
            None,
        )
    }

    /// `x.view(sizes)`.
    fn view(&mut self, x: &Value, sizes: Vec<SymInt>) -> Value {
        self.emit(
            "view.default",
            vec![("self", t(x)), ("size", size_list(&sizes))],
            sizes,
            x.dtype,
            None,
        )
    }

    /// `x.to(dtype)` when `x` is of another dtype, else `x`.
    fn cast(&mut self, x: &Value, dtype: i64, into: Option<&Value>) -> Value {
        if x.dtype == dtype && into.is_none() {
            return x.clone();
        }
        self.emit(
            "_to_copy.default",
            vec![("self", t(x)), ("dtype", Argument::ScalarType(dtype))],
            x.sizes.clone(),
            dtype,
            into,
        )
    }

    /// The gates of a cell: `linear(input, w_ih, b_ih)` and `linear(hx, w_hh, b_hh)`
    /// (`CellParams::linear_ih`, `linear_hh`).
    fn cell_gates(&mut self, args: &Args<'_>, hx: &Value) -> Result<(Value, Value), String> {
        let input = self.input(args.tensor("input")?)?;
        let w_ih = self.input(args.tensor("w_ih")?)?;
        let w_hh = self.input(args.tensor("w_hh")?)?;
        let ih = self.linear(&input, &w_ih, args.optional_tensor("b_ih")?)?;
        let hh = self.linear(hx, &w_hh, args.optional_tensor("b_hh")?)?;
        Ok((ih, hh))
    }

    /// Gate block `k` of `g` gates along the last dimension of `gates` (`unsafe_chunk(g, 1)`).
    fn chunk(&mut self, gates: &Value, k: i64, g: i64) -> Result<Value, String> {
        let axis = gates.rank().checked_sub(1).ok_or("the gates are 0-d")?;
        let size = gates.fixed(axis, "a cell's gates")? / g;
        Ok(self.slice(gates, axis, k * size, (k + 1) * size))
    }

    /// `rnn_tanh_cell`/`rnn_relu_cell`: `SimpleCell`, `nonlinearity(linear_hh(hx) +
    /// linear_ih(input))`.
    fn simple_cell(&mut self, args: &Args<'_>, nonlinearity: &str) -> Result<(), String> {
        let hx = self.input(args.tensor("hx")?)?;
        let (ih, hh) = self.cell_gates(args, &hx)?;
        let sum = self.binary("add.Tensor", &hh, &ih, None);
        let out = self.output(0)?;
        self.unary(nonlinearity, &sum, Some(&out));
        Ok(())
    }

    /// `rnn_relu.input(input, hx, params, has_biases, num_layers, dropout, train,
    /// bidirectional, batch_first)` as `torch._decomp`'s `rnn_relu_input` computes it: per
    /// layer and direction the sequence projected once (`linear(x, w_ih, b_ih)`), then step
    /// by step `h = relu(linear(h, w_hh, b_hh) + x_t)` from the layer's initial state (a
    /// reverse direction from the last step), the states concatenated along the sequence
    /// in its order, the directions along the features; the final states stacked. ONNX's
    /// `RNN` is not in ATC's operator list, so the layer is unrolled: the sequence's length
    /// must be fixed. Dropout between layers (training mode) is refused.
    fn rnn_relu(&mut self, args: &Args<'_>) -> Result<(), String> {
        if args.bool("train")? {
            return Err("the recurrent layer is in training mode (dropout between layers); export the model after `model.eval()`".into());
        }
        let time = usize::from(args.bool("batch_first")?);
        let layers = usize::try_from(args.int("num_layers")?)
            .ok()
            .filter(|&l| l > 0)
            .ok_or("num_layers is not positive")?;
        let directions = if args.bool("bidirectional")? { 2 } else { 1 };
        let per_direction = if args.bool("has_biases")? { 4 } else { 2 };
        let params = args.tensors("params")?;
        if params.len() != layers * directions * per_direction {
            return Err(format!(
                "it has {} weights, expected {} for {layers} layer(s) of {directions} direction(s)",
                params.len(),
                layers * directions * per_direction
            ));
        }
        let mut input = self.input(args.tensor("input")?)?;
        if input.rank() != 3 {
            return Err(format!(
                "its input has {} dimensions; only a batched sequence (3 dimensions) is unrolled",
                input.rank()
            ));
        }
        let steps = input.fixed(time, "an unrolled recurrent layer")?;
        let hx = self.input(args.tensor("hx")?)?;
        let out = self.output(0)?;
        let mut finals = Vec::with_capacity(layers * directions);
        for layer in 0..layers {
            let last = layer + 1 == layers;
            let mut outputs = Vec::with_capacity(directions);
            for direction in 0..directions {
                let k = layer * directions + direction;
                let weights = &params[k * per_direction..(k + 1) * per_direction];
                let w_hh = self.input(&weights[1])?;
                let b_hh = weights.get(3).map(String::as_str);
                let projected = self.linear(
                    &input,
                    &self.input(&weights[0])?,
                    weights.get(2).map(String::as_str),
                )?;
                let mut h = self.select(&hx, 0, k as i64);
                let mut states = vec![None; steps as usize];
                // The reverse direction runs from the last step.
                for step in (0..steps).map(|s| if direction == 0 { s } else { steps - 1 - s }) {
                    let x_t = self.select(&projected, time, step);
                    let hh = self.linear(&h, &w_hh, b_hh)?;
                    let sum = self.binary("add.Tensor", &hh, &x_t, None);
                    h = self.unary("relu.default", &sum, None);
                    states[step as usize] = Some(self.unsqueeze(&h, time));
                }
                let states: Vec<Value> = states.into_iter().flatten().collect();
                let into = (last && directions == 1).then_some(&out);
                outputs.push(self.cat(&states, time, into)?);
                finals.push(h);
            }
            input = match outputs.as_slice() {
                [one] => one.clone(),
                both => self.cat(both, 2, last.then_some(&out))?,
            };
        }
        if let Ok(h_n) = self.output(1) {
            let names = finals.iter().map(|h| h.name.clone()).collect();
            self.emit(
                "stack.default",
                vec![
                    ("tensors", Argument::Tensors(names)),
                    ("dim", Argument::Int(0)),
                ],
                h_n.sizes.clone(),
                h_n.dtype,
                Some(&h_n),
            );
        }
        Ok(())
    }

    /// `x.select(axis, index)`.
    fn select(&mut self, x: &Value, axis: usize, index: i64) -> Value {
        let mut sizes = x.sizes.clone();
        sizes.remove(axis);
        self.emit(
            "select.int",
            vec![
                ("self", t(x)),
                ("dim", Argument::Int(axis as i64)),
                ("index", Argument::Int(index)),
            ],
            sizes,
            x.dtype,
            None,
        )
    }

    /// `x.unsqueeze(axis)`.
    fn unsqueeze(&mut self, x: &Value, axis: usize) -> Value {
        let mut sizes = x.sizes.clone();
        sizes.insert(axis, SymInt::Int(1));
        self.emit(
            "unsqueeze.default",
            vec![("self", t(x)), ("dim", Argument::Int(axis as i64))],
            sizes,
            x.dtype,
            None,
        )
    }

    /// `cat(values, axis)`, or into `into` (whose sizes it keeps): the values alike but
    /// along `axis`, fixed there when the sizes are worked out.
    fn cat(
        &mut self,
        values: &[Value],
        axis: usize,
        into: Option<&Value>,
    ) -> Result<Value, String> {
        let first = values.first().ok_or("nothing to concatenate")?;
        let mut sizes = first.sizes.clone();
        if into.is_none() {
            sizes[axis] = SymInt::Int(
                values
                    .iter()
                    .map(|v| v.fixed(axis, "a concatenation"))
                    .sum::<Result<i64, String>>()?,
            );
        }
        let names = values.iter().map(|v| v.name.clone()).collect();
        Ok(self.emit(
            "cat.default",
            vec![
                ("tensors", Argument::Tensors(names)),
                ("dim", Argument::Int(axis as i64)),
            ],
            sizes,
            first.dtype,
            into,
        ))
    }

    /// `gru_cell`: `GRUCell`, gates r, z, n; `r = σ(h_r + i_r)`, `z = σ(h_z + i_z)`,
    /// `n = tanh(i_n + h_n·r)`, `h' = (h − n)·z + n`.
    fn gru_cell(&mut self, args: &Args<'_>) -> Result<(), String> {
        let hx = self.input(args.tensor("hx")?)?;
        let (ih, hh) = self.cell_gates(args, &hx)?;
        let mut i = Vec::new();
        let mut h = Vec::new();
        for k in 0..3 {
            i.push(self.chunk(&ih, k, 3)?);
            h.push(self.chunk(&hh, k, 3)?);
        }
        let r = self.binary("add.Tensor", &h[0], &i[0], None);
        let r = self.unary("sigmoid.default", &r, None);
        let z = self.binary("add.Tensor", &h[1], &i[1], None);
        let z = self.unary("sigmoid.default", &z, None);
        let hn = self.binary("mul.Tensor", &h[2], &r, None);
        let n = self.binary("add.Tensor", &i[2], &hn, None);
        let n = self.unary("tanh.default", &n, None);
        let d = self.binary("sub.Tensor", &hx, &n, None);
        let d = self.binary("mul.Tensor", &d, &z, None);
        let out = self.output(0)?;
        self.binary("add.Tensor", &d, &n, Some(&out));
        Ok(())
    }

    /// `lstm_cell`: `LSTMCell`, gates i, f, g, o of `linear_hh(h) + linear_ih(input)`;
    /// `c' = σ(f)·c + σ(i)·tanh(g)`, `h' = σ(o)·tanh(c')`.
    fn lstm_cell(&mut self, args: &Args<'_>) -> Result<(), String> {
        let [h, c] = args.tensors("hx")? else {
            return Err("argument `hx` is not the two states (h, c)".into());
        };
        let (h, c) = (self.input(h)?, self.input(c)?);
        let (ih, hh) = self.cell_gates(args, &h)?;
        let gates = self.binary("add.Tensor", &hh, &ih, None);
        let mut g = Vec::new();
        for (k, op) in ["sigmoid", "sigmoid", "tanh", "sigmoid"].iter().enumerate() {
            let block = self.chunk(&gates, k as i64, 4)?;
            g.push(self.unary(&format!("{op}.default"), &block, None));
        }
        let (hy, cy) = (self.output(0)?, self.output(1)?);
        let fc = self.binary("mul.Tensor", &g[1], &c, None);
        let ig = self.binary("mul.Tensor", &g[0], &g[2], None);
        let cy = self.binary("add.Tensor", &fc, &ig, Some(&cy));
        let tc = self.unary("tanh.default", &cy, None);
        self.binary("mul.Tensor", &g[3], &tc, Some(&hy));
        Ok(())
    }

    /// `bilinear(x1, x2, W, b)`: `y[…, o] = Σ_ij x1[…, i]·W[o, i, j]·x2[…, j] + b[o]`,
    /// as `x1` times `W` laid out `[in1, out·in2]`, viewed `[…, out, in2]`, times `x2`
    /// and summed over `in2`.
    fn bilinear(&mut self, args: &Args<'_>) -> Result<(), String> {
        let x1 = self.input(args.tensor("input1")?)?;
        let x2 = self.input(args.tensor("input2")?)?;
        let w = self.input(args.tensor("weight")?)?;
        let [o, i, j] = [0, 1, 2].map(|k| w.fixed(k, "bilinear"));
        let (o, i, j) = (o?, i?, j?);
        let moved = self.emit(
            "permute.default",
            vec![("self", t(&w)), ("dims", Argument::Ints(vec![1, 0, 2]))],
            vec![SymInt::Int(i), SymInt::Int(o), SymInt::Int(j)],
            w.dtype,
            None,
        );
        let matrix = self.emit(
            "reshape.default",
            vec![
                ("self", t(&moved)),
                ("shape", Argument::Ints(vec![i, o * j])),
            ],
            vec![SymInt::Int(i), SymInt::Int(o * j)],
            w.dtype,
            None,
        );
        let lead = &x1.sizes[..x1.rank().checked_sub(1).ok_or("`input1` is 0-d")?];
        let mut sizes = lead.to_vec();
        sizes.push(SymInt::Int(o * j));
        let product = self.emit(
            "matmul.default",
            vec![("self", t(&x1)), ("other", t(&matrix))],
            sizes,
            x1.dtype,
            None,
        );
        let mut sizes = lead.to_vec();
        sizes.extend([SymInt::Int(o), SymInt::Int(j)]);
        let product = self.view(&product, sizes);
        let at = x2.rank().checked_sub(1).ok_or("`input2` is 0-d")?;
        let mut sizes = x2.sizes.clone();
        sizes.insert(at, SymInt::Int(1));
        let x2 = self.emit(
            "unsqueeze.default",
            vec![("self", t(&x2)), ("dim", Argument::Int(at as i64))],
            sizes,
            x2.dtype,
            None,
        );
        let terms = self.binary("mul.Tensor", &product, &x2, None);
        let last = terms.rank() - 1;
        let mut sizes = terms.sizes.clone();
        sizes.pop();
        let out = self.output(0)?;
        let bias = args.optional_tensor("bias")?;
        let into = bias.is_none().then_some(&out);
        let sum = self.emit(
            "sum.dim_IntList",
            vec![
                ("self", t(&terms)),
                ("dim", Argument::Ints(vec![last as i64])),
            ],
            sizes,
            terms.dtype,
            into,
        );
        if let Some(bias) = bias {
            let bias = self.input(bias)?;
            self.binary("add.Tensor", &sum, &bias, Some(&out));
        }
        Ok(())
    }

    /// `cross`/`linalg_cross(a, b, dim)`: `a[(k+1)%3]·b[(k+2)%3] − a[(k+2)%3]·b[(k+1)%3]`,
    /// the index shifts as rolls along `dim` (`cross` without a `dim`: the first
    /// dimension of size 3).
    fn cross(&mut self, args: &Args<'_>, target: &str) -> Result<(), String> {
        let a = self.input(args.tensor("self")?)?;
        let b = self.input(args.tensor("other")?)?;
        let out = self.output(0)?;
        let dim = match (target, args.optional_int("dim")?) {
            ("cross.default", None) => out
                .sizes
                .iter()
                .position(|s| *s == SymInt::Int(3))
                .ok_or("no dimension of size 3 to take the cross product along")?,
            (_, dim) => axis(dim.unwrap_or(-1), out.rank())?,
        };
        let roll = |w: &mut Self, x: &Value, shift: i64| {
            w.emit(
                "roll.default",
                vec![
                    ("self", t(x)),
                    ("shifts", Argument::Ints(vec![shift])),
                    ("dims", Argument::Ints(vec![dim as i64])),
                ],
                x.sizes.clone(),
                x.dtype,
                None,
            )
        };
        // `roll(x, -1)` reads `x[(k+1)%3]` at `k`, `roll(x, 1)` reads `x[(k+2)%3]`.
        let (a1, a2) = (roll(self, &a, -1), roll(self, &a, 1));
        let (b1, b2) = (roll(self, &b, -1), roll(self, &b, 1));
        let left = self.binary("mul.Tensor", &a1, &b2, None);
        let right = self.binary("mul.Tensor", &a2, &b1, None);
        self.binary("sub.Tensor", &left, &right, Some(&out));
        Ok(())
    }

    /// `block_diag(tensors)`: each tensor made 2-D (`[1, 1]` of a 0-d one, `[1, n]` of a
    /// 1-D one), padded with zero columns to its place, the rows concatenated.
    fn block_diag(&mut self, args: &Args<'_>) -> Result<(), String> {
        let out = self.output(0)?;
        let total = out.fixed(1, "block_diag")?;
        let mut blocks = Vec::new();
        let mut left = 0;
        for name in args.tensors("tensors")? {
            let x = self.input(name)?;
            let x = match x.rank() {
                0 => self.view(&x, vec![SymInt::Int(1); 2]),
                1 => {
                    let sizes = vec![SymInt::Int(1), x.sizes[0].clone()];
                    self.view(&x, sizes)
                }
                2 => x,
                rank => return Err(format!("`{name}` has {rank} dimensions, not at most 2")),
            };
            let x = self.cast(&x, out.dtype, None);
            let columns = x.fixed(1, "block_diag")?;
            let right = total - left - columns;
            let sizes = vec![x.sizes[0].clone(), SymInt::Int(total)];
            blocks.push(self.emit(
                "constant_pad_nd.default",
                vec![("self", t(&x)), ("pad", Argument::Ints(vec![left, right]))],
                sizes,
                x.dtype,
                None,
            ));
            left += columns;
        }
        self.cat(&blocks, 0, Some(&out))?;
        Ok(())
    }

    /// `_softmax_backward_data(g, y, dim, dtype)`: `g·y − y·Σ_dim(g·y)`, cast to `dtype`.
    fn softmax_backward(&mut self, args: &Args<'_>) -> Result<(), String> {
        let g = self.input(args.tensor("grad_output")?)?;
        let y = self.input(args.tensor("output")?)?;
        let out = self.output(0)?;
        let at = axis(args.int("dim")?, g.rank())?;
        let gy = self.binary("mul.Tensor", &g, &y, None);
        let mut sizes = gy.sizes.clone();
        if let Some(size) = sizes.get_mut(at) {
            *size = SymInt::Int(1);
        }
        let sum = self.emit(
            "sum.dim_IntList",
            vec![
                ("self", t(&gy)),
                ("dim", Argument::Ints(vec![at as i64])),
                ("keepdim", Argument::Bool(true)),
            ],
            sizes,
            gy.dtype,
            None,
        );
        let ys = self.binary("mul.Tensor", &y, &sum, None);
        let cast = gy.dtype != out.dtype;
        let grad = self.binary("sub.Tensor", &gy, &ys, (!cast).then_some(&out));
        if cast {
            self.cast(&grad, out.dtype, Some(&out));
        }
        Ok(())
    }

    /// `native_dropout_backward(g, mask, scale)`: `g·(mask.type_as(g)·scale)`.
    fn dropout_backward(&mut self, args: &Args<'_>) -> Result<(), String> {
        let g = self.input(args.tensor("grad_output")?)?;
        let mask = self.input(args.tensor("mask")?)?;
        let mask = self.cast(&mask, g.dtype, None);
        let scaled = self.scalar("mul.Scalar", &mask, args.float("scale")?, None);
        let out = self.output(0)?;
        self.binary("mul.Tensor", &g, &scaled, Some(&out));
        Ok(())
    }

    /// `trapezoid`/`trapz(y, x, dim)`: `Σ_dim((y[:-1] + y[1:])·dx) / 2` with
    /// `dx = x[1:] − x[:-1]` (a 1-D `x` viewed along `dim`, a shorter one with 1s in
    /// front); `cumulative_trapezoid`: the running sum, `cumsum((y[:-1] + y[1:])·dx) / 2`.
    fn trapezoid(&mut self, args: &Args<'_>, cumulative: bool) -> Result<(), String> {
        let y = self.input(args.tensor("y")?)?;
        let x = self.input(args.tensor("x")?)?;
        let at = axis(args.int("dim")?, y.rank())?;
        let n = y.fixed(at, "the trapezoid rule")?;
        if n == 0 {
            return Err("it integrates over no sample points".into());
        }
        let x = if x.rank() == 1 {
            let mut sizes = vec![SymInt::Int(1); y.rank()];
            sizes[at] = x.sizes[0].clone();
            self.view(&x, sizes)
        } else if x.rank() < y.rank() {
            let mut sizes = vec![SymInt::Int(1); y.rank() - x.rank()];
            sizes.extend(x.sizes.iter().cloned());
            self.view(&x, sizes)
        } else {
            x
        };
        let m = x.fixed(at, "the trapezoid rule")?;
        let x_left = self.slice(&x, at, 0, m - 1);
        let x_right = self.slice(&x, at, 1, m);
        let dx = self.binary("sub.Tensor", &x_right, &x_left, None);
        let left = self.slice(&y, at, 0, n - 1);
        let right = self.slice(&y, at, 1, n);
        let sum = self.binary("add.Tensor", &left, &right, None);
        let areas = self.binary("mul.Tensor", &sum, &dx, None);
        let total = if cumulative {
            self.emit(
                "cumsum.default",
                vec![("self", t(&areas)), ("dim", Argument::Int(at as i64))],
                areas.sizes.clone(),
                areas.dtype,
                None,
            )
        } else {
            let mut sizes = areas.sizes.clone();
            sizes.remove(at);
            self.emit(
                "sum.dim_IntList",
                vec![
                    ("self", t(&areas)),
                    ("dim", Argument::Ints(vec![at as i64])),
                ],
                sizes,
                areas.dtype,
                None,
            )
        };
        let out = self.output(0)?;
        self.scalar("div.Scalar", &total, 2.0, Some(&out));
        Ok(())
    }

    /// `isin(elements, test_elements, invert)`: `(elements[…, None] ==
    /// test_elements.flatten()).any(-1)`, negated by `invert` (`isin_default`; the
    /// sorting path torch takes for many test elements answers the same).
    fn isin(&mut self, args: &Args<'_>) -> Result<(), String> {
        let elements = self.input(args.tensor("elements")?)?;
        let test = self.input(args.tensor("test_elements")?)?;
        let count = (0..test.rank())
            .map(|k| test.fixed(k, "isin"))
            .product::<Result<i64, String>>()?;
        let flat = self.view(&test, vec![SymInt::Int(count)]);
        let mut sizes = elements.sizes.clone();
        sizes.push(SymInt::Int(1));
        let column = self.view(&elements, sizes);
        let sizes = broadcast(&column.sizes, &flat.sizes);
        let equal = self.emit(
            "eq.Tensor",
            vec![("self", t(&column)), ("other", t(&flat))],
            sizes,
            BOOL,
            None,
        );
        let out = self.output(0)?;
        let invert = args.bool("invert")?;
        let any = self.emit(
            "any.dim",
            vec![
                ("self", t(&equal)),
                ("dim", Argument::Int(elements.rank() as i64)),
            ],
            elements.sizes.clone(),
            BOOL,
            (!invert).then_some(&out),
        );
        if invert {
            self.unary("logical_not.default", &any, Some(&out));
        }
        Ok(())
    }

    /// A call of `op` with `inputs` making a value of `sizes` and `dtype` (or `into`).
    fn call(
        &mut self,
        op: &str,
        inputs: Vec<(&str, Argument)>,
        sizes: &[SymInt],
        dtype: i64,
        into: Option<&Value>,
    ) -> Value {
        self.emit(op, inputs, sizes.to_vec(), dtype, into)
    }

    /// Each index of `indices` clamped into the dimension it indexes, from minus its size
    /// (negative positions count from the end) to its size less one, as ATen's kernels of
    /// the masked index ops clamp them (`torch._decomp` clamps from 0, assuming no
    /// negative index; torch eager, the reference, wraps them). An index into a dimension
    /// whose size is not fixed (the batch) is refused: it picks samples by their place.
    fn clamped(
        &mut self,
        x: &Value,
        indices: &[Option<&str>],
    ) -> Result<Vec<Option<String>>, String> {
        let mut clamped = Vec::with_capacity(indices.len());
        for (dim, index) in indices.iter().enumerate() {
            let Some(index) = index else {
                clamped.push(None);
                continue;
            };
            let size = x.fixed_along(dim, "it indexes")?;
            let index = self.input(index)?;
            let value = self.call(
                "clamp.default",
                vec![
                    ("self", t(&index)),
                    ("min", Argument::Int(-size)),
                    ("max", Argument::Int(size - 1)),
                ],
                &index.sizes,
                index.dtype,
                None,
            );
            clamped.push(Some(value.name));
        }
        Ok(clamped)
    }

    /// `logical_not(mask)`.
    fn not(&mut self, mask: &Value) -> Value {
        self.call(
            "logical_not.default",
            vec![("self", t(mask))],
            &mask.sizes,
            BOOL,
            None,
        )
    }

    /// `_unsafe_masked_index(self, mask, indices, fill)` as ATen's kernel computes it: each
    /// index clamped into its dimension, `self[indices]`, `fill` where `mask` is false.
    fn masked_index(&mut self, args: &Args<'_>) -> Result<(), String> {
        let x = self.input(args.tensor("self")?)?;
        let mask = self.input(args.tensor("mask")?)?;
        let indices = self.clamped(&x, &args.optional_tensors("indices")?)?;
        let fill = args.get("fill").cloned().ok_or("no `fill`")?;
        let out = self.output(0)?;
        let picked = self.call(
            "index.Tensor",
            vec![
                ("self", t(&x)),
                ("indices", Argument::OptionalTensors(indices)),
            ],
            &out.sizes,
            x.dtype,
            None,
        );
        let hidden = self.not(&mask);
        self.call(
            "masked_fill.Scalar",
            vec![("self", t(&picked)), ("mask", t(&hidden)), ("value", fill)],
            &out.sizes,
            out.dtype,
            Some(&out),
        );
        Ok(())
    }

    /// `_unsafe_masked_index_put_accumulate(self, mask, indices, values)` as ATen's kernel
    /// computes it: each index clamped into its dimension, the values zero where `mask` is
    /// false, added into `self` at the indices.
    fn masked_index_put(&mut self, args: &Args<'_>) -> Result<(), String> {
        let x = self.input(args.tensor("self")?)?;
        let mask = self.input(args.tensor("mask")?)?;
        let values = self.input(args.tensor("values")?)?;
        let indices = self.clamped(&x, &args.optional_tensors("indices")?)?;
        let hidden = self.not(&mask);
        let kept = self.call(
            "masked_fill.Scalar",
            vec![
                ("self", t(&values)),
                ("mask", t(&hidden)),
                ("value", Argument::Int(0)),
            ],
            &broadcast(&values.sizes, &mask.sizes),
            values.dtype,
            None,
        );
        let out = self.output(0)?;
        self.call(
            "index_put.default",
            vec![
                ("self", t(&x)),
                ("indices", Argument::OptionalTensors(indices)),
                ("values", t(&kept)),
                ("accumulate", Argument::Bool(true)),
            ],
            &out.sizes,
            out.dtype,
            Some(&out),
        );
        Ok(())
    }

    /// `arange(end)` of int64.
    fn positions(&mut self, end: i64) -> Value {
        self.call(
            "arange.default",
            vec![
                ("end", Argument::Int(end)),
                ("dtype", Argument::ScalarType(LONG)),
            ],
            &[SymInt::Int(end)],
            LONG,
            None,
        )
    }

    /// `embedding_renorm_(self, indices, max_norm, norm_type)` as ATen's kernel computes
    /// it: each row of the table `self` that `indices` names whose `norm_type`-norm exceeds
    /// `max_norm` is scaled by `max_norm / (norm + 1e-7)`, which is `renorm` along dimension
    /// 0; the other rows are kept. The rows named are those equal to some index (`eq`
    /// against every row number, `any`).
    fn embedding_renorm(&mut self, args: &Args<'_>) -> Result<(), String> {
        let table = self.input(args.tensor("self")?)?;
        let ids = self.input(args.tensor("indices")?)?;
        let max_norm = args.float("max_norm")?;
        let norm_type = args.float("norm_type")?;
        if table.rank() != 2 {
            return Err(format!("the table `{}` is not 2-D", table.name));
        }
        let what = "it rescales the rows its indices name";
        let rows = table.fixed_along(0, what)?;
        let count = (0..ids.rank())
            .map(|k| ids.fixed_along(k, what))
            .product::<Result<i64, String>>()?;
        let flat = self.view(&ids, vec![SymInt::Int(1), SymInt::Int(count)]);
        let numbers = self.positions(rows);
        let column = self.view(&numbers, vec![SymInt::Int(rows), SymInt::Int(1)]);
        let pairs = [SymInt::Int(rows), SymInt::Int(count)];
        let hits = self.call(
            "eq.Tensor",
            vec![("self", t(&column)), ("other", t(&flat))],
            &pairs,
            BOOL,
            None,
        );
        let one = [SymInt::Int(rows), SymInt::Int(1)];
        let named = self.call(
            "any.dim",
            vec![
                ("self", t(&hits)),
                ("dim", Argument::Int(1)),
                ("keepdim", Argument::Bool(true)),
            ],
            &one,
            BOOL,
            None,
        );
        // The rows named, renormalized as `renorm` does every slice along dimension 0.
        let renormed = self.call(
            "renorm.default",
            vec![
                ("self", t(&table)),
                ("p", Argument::Float(norm_type)),
                ("dim", Argument::Int(0)),
                ("maxnorm", Argument::Float(max_norm)),
            ],
            &table.sizes,
            table.dtype,
            None,
        );
        let out = self.output(0)?;
        self.call(
            "where.self",
            vec![
                ("condition", t(&named)),
                ("self", t(&renormed)),
                ("other", t(&table)),
            ],
            &out.sizes,
            out.dtype,
            Some(&out),
        );
        Ok(())
    }

    /// `embedding_bag(weight, indices, offsets, …, mode, per_sample_weights,
    /// include_last_offset, padding_idx)` of 1-D `indices` cut into bags by `offsets`, as
    /// ATen's kernel defines it: bag `b` holds the entries from `offsets[b]` up to the next
    /// offset, the last bag to the end (with `include_last_offset`, the last offset ends it:
    /// torch requires it to be the number of indices, and its max and mean kernels read to
    /// the end when it is not),
    /// the entries equal to `padding_idx` (negative: counted from the table's end) left
    /// out; each bag's rows of `weight` summed (times `per_sample_weights`), averaged, or
    /// their maximum, an empty bag zeros. Which bag an entry is in is the count of offsets
    /// at or below its position, less one, so constant offsets are folded at export. 2-D
    /// ids, one bag per row, are [`embedding_bag_rows`] (found by [`crate::bags`]).
    fn embedding_bag(&mut self, args: &Args<'_>) -> Result<(), String> {
        let ids = self.input(args.tensor("indices")?)?;
        let offsets = self.input(args.tensor("offsets")?)?;
        if ids.rank() != 1 || offsets.rank() != 1 {
            return Err("its indices and offsets are not 1-D".into());
        }
        let what = "it cuts its indices into bags by offsets";
        let count = ids.fixed_along(0, what)?;
        let cuts = offsets.fixed_along(0, what)?;
        // With `include_last_offset` the last offset closes the last bag: torch's contract
        // is that it equals the number of indices, so the bags start at the others.
        let bags = cuts - i64::from(args.bool_or("include_last_offset", false)?);
        let starts = if bags < cuts {
            self.slice(&offsets, 0, 0, bags)
        } else {
            offsets
        };
        let numbers = self.positions(count);
        let column = self.view(&numbers, vec![SymInt::Int(count), SymInt::Int(1)]);
        let row = self.view(&starts, vec![SymInt::Int(1), SymInt::Int(bags)]);
        let started = self.call(
            "ge.Tensor",
            vec![("self", t(&column)), ("other", t(&row))],
            &[SymInt::Int(count), SymInt::Int(bags)],
            BOOL,
            None,
        );
        let counted = self.call(
            "sum.dim_IntList",
            vec![("self", t(&started)), ("dim", Argument::Ints(vec![1]))],
            &[SymInt::Int(count)],
            LONG,
            None,
        );
        let bag_of = self.call(
            "sub.Scalar",
            vec![("self", t(&counted)), ("other", Argument::Int(1))],
            &[SymInt::Int(count)],
            LONG,
            None,
        );
        let bag_row = self.view(&bag_of, vec![SymInt::Int(1), SymInt::Int(count)]);
        let bag_numbers = self.positions(bags);
        let bag_column = self.view(&bag_numbers, vec![SymInt::Int(bags), SymInt::Int(1)]);
        let member = self.call(
            "eq.Tensor",
            vec![("self", t(&bag_column)), ("other", t(&bag_row))],
            &[SymInt::Int(bags), SymInt::Int(count)],
            BOOL,
            None,
        );
        let ids_row = self.view(&ids, vec![SymInt::Int(1), SymInt::Int(count)]);
        self.reduce_bags(args, &ids_row, Some(member))
    }

    /// `embedding(weight, indices)` of a table the program computes: `weight[indices]`,
    /// the rows picked along its first dimension (`index.Tensor`, whose lowering refuses a
    /// pick along the batch). [`EXPANDED`] leaves `embedding` out: a stored table is the
    /// lowering's own `Gather`.
    fn embedding_by_index(&mut self, args: &Args<'_>) -> Result<(), String> {
        let table = self.input(args.tensor("weight")?)?;
        let ids = args.tensor("indices")?;
        let out = self.output(0)?;
        self.call(
            "index.Tensor",
            vec![
                ("self", t(&table)),
                (
                    "indices",
                    Argument::OptionalTensors(vec![Some(ids.to_owned())]),
                ),
            ],
            &out.sizes,
            out.dtype,
            Some(&out),
        );
        Ok(())
    }

    /// `embedding_bag` of 2-D `ids` `[rows, length]`, one bag per row (what
    /// `F.embedding_bag` computes for 2-D input, which it passes to the op flattened with
    /// offsets every `length` entries; [`crate::bags`] finds that and writes this): `args` are the
    /// op's, `ids` and `per_sample_weights` the 2-D tensors before flattening.
    fn embedding_bag_rows(&mut self, args: &Args<'_>, ids: &str) -> Result<(), String> {
        let ids = self.input(ids)?;
        if ids.rank() != 2 {
            return Err(format!("the ids `{}` are not 2-D", ids.name));
        }
        self.reduce_bags(args, &ids, None)
    }

    /// Each bag's reduction: `ids` `[bags or 1, length]` looked up in `weight`, entry
    /// `(b, i)` in bag `b` where `member` is true (every entry of row `b` without it) and
    /// `ids` is not `padding_idx`; `per_sample_weights` read in `ids`' sizes.
    fn reduce_bags(
        &mut self,
        args: &Args<'_>,
        ids: &Value,
        member: Option<Value>,
    ) -> Result<(), String> {
        let weight = self.input(args.tensor("weight")?)?;
        let width = weight
            .sizes
            .get(1)
            .cloned()
            .filter(|_| weight.rank() == 2)
            .ok_or("the table is not 2-D")?;
        let out = self.output(0)?;
        let bags = out.sizes.first().cloned().ok_or("the result is 0-d")?;
        let length = ids.sizes.get(1).cloned().ok_or("the ids are not 2-D")?;
        let mut looked_up_sizes = ids.sizes.clone();
        looked_up_sizes.push(width.clone());
        let looked_up = self.call(
            "embedding.default",
            vec![("weight", t(&weight)), ("indices", t(ids))],
            &looked_up_sizes,
            weight.dtype,
            None,
        );
        // A negative padding id counts from the end of the table (`maybe_wrap_dim`).
        let padding = match args.optional_int("padding_idx")? {
            Some(p) if p < 0 => Some(p + weight.fixed_along(0, "its padding id counts rows")?),
            p => p,
        };
        let kept = padding.map(|p| {
            self.call(
                "ne.Scalar",
                vec![("self", t(ids)), ("other", Argument::Int(p))],
                &ids.sizes,
                BOOL,
                None,
            )
        });
        let present = match (member, kept) {
            (Some(m), Some(k)) => Some(self.binary("logical_and.default", &m, &k, None)),
            (m, k) => m.or(k),
        };
        let in_bags = |s: &mut Self, v: &Value| {
            let mut sizes = v.sizes.clone();
            sizes.push(SymInt::Int(1));
            s.call(
                "unsqueeze.default",
                vec![("self", t(v)), ("dim", Argument::Int(-1))],
                &sizes,
                v.dtype,
                None,
            )
        };
        let mode = args.int("mode")?;
        if mode == 2 {
            let picked = match &present {
                Some(p) => {
                    let p3 = in_bags(self, p);
                    let sizes = broadcast(&p3.sizes, &looked_up.sizes);
                    self.call(
                        "where.ScalarOther",
                        vec![
                            ("condition", t(&p3)),
                            ("self", t(&looked_up)),
                            ("other", Argument::Float(f64::NEG_INFINITY)),
                        ],
                        &sizes,
                        weight.dtype,
                        None,
                    )
                }
                None => looked_up,
            };
            let most = self.call(
                "amax.default",
                vec![("self", t(&picked)), ("dim", Argument::Ints(vec![1]))],
                &out.sizes,
                out.dtype,
                present.is_none().then_some(&out),
            );
            // Every bag holds every entry of its row: no bag is empty.
            let Some(p) = present else {
                return Ok(());
            };
            let filled = self.call(
                "any.dim",
                vec![
                    ("self", t(&p)),
                    ("dim", Argument::Int(1)),
                    ("keepdim", Argument::Bool(true)),
                ],
                &[bags.clone(), SymInt::Int(1)],
                BOOL,
                None,
            );
            self.call(
                "where.ScalarOther",
                vec![
                    ("condition", t(&filled)),
                    ("self", t(&most)),
                    ("other", Argument::Float(0.0)),
                ],
                &out.sizes,
                out.dtype,
                Some(&out),
            );
            return Ok(());
        }
        if mode != 0 && mode != 1 {
            return Err(format!("mode {mode} is not sum (0), mean (1) or max (2)"));
        }
        // Entries outside a bag are left out by `where`, not multiplied by 0: a row of the
        // table may hold an infinity or NaN, which torch never reads for that bag.
        let mut terms = looked_up;
        if let Some(scales) = args.optional_tensor("per_sample_weights")? {
            let scales = self.input(scales)?;
            let scales = in_bags(self, &scales);
            terms = self.binary("mul.Tensor", &terms, &scales, None);
        }
        if let Some(p) = &present {
            let p3 = in_bags(self, p);
            let sizes = broadcast(&p3.sizes, &terms.sizes);
            terms = self.call(
                "where.ScalarOther",
                vec![
                    ("condition", t(&p3)),
                    ("self", t(&terms)),
                    ("other", Argument::Float(0.0)),
                ],
                &sizes,
                weight.dtype,
                None,
            );
        }
        let sum_into = (mode == 0).then_some(&out);
        let sum = self.call(
            "sum.dim_IntList",
            vec![("self", t(&terms)), ("dim", Argument::Ints(vec![1]))],
            &out.sizes,
            out.dtype,
            sum_into,
        );
        if mode == 0 {
            return Ok(());
        }
        let Some(p) = present else {
            let SymInt::Int(n) = length else {
                return Err("the bags' length is not fixed".into());
            };
            self.scalar("div.Scalar", &sum, n as f64, Some(&out));
            return Ok(());
        };
        let entries = self.cast(&p, weight.dtype, None);
        let sizes = [bags.clone(), SymInt::Int(1)];
        let counted = self.call(
            "sum.dim_IntList",
            vec![
                ("self", t(&entries)),
                ("dim", Argument::Ints(vec![1])),
                ("keepdim", Argument::Bool(true)),
            ],
            &sizes,
            weight.dtype,
            None,
        );
        let at_least_one = self.call(
            "clamp_min.default",
            vec![("self", t(&counted)), ("min", Argument::Float(1.0))],
            &sizes,
            weight.dtype,
            None,
        );
        self.binary("div.Tensor", &sum, &at_least_one, Some(&out));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn node(target: &str, inputs: &str, outputs: &[&str]) -> Node {
        let outputs: Vec<String> = outputs
            .iter()
            .map(|o| format!(r#"{{"as_tensor": {{"name": "{o}"}}}}"#))
            .collect();
        serde_json::from_str(&format!(
            r#"{{"target": "torch.ops.aten.{target}", "name": "cell", "inputs": [{inputs}],
                "outputs": [{}]}}"#,
            outputs.join(", ")
        ))
        .unwrap()
    }

    fn tensor(name: &str, value: &str) -> String {
        format!(r#"{{"name": "{name}", "arg": {{"as_tensor": {{"name": "{value}"}}}}}}"#)
    }

    fn metas(sizes: &[(&str, &[i64])]) -> HashMap<String, TensorMeta> {
        sizes
            .iter()
            .map(|(name, sizes)| {
                let meta = TensorMeta {
                    dtype: 7,
                    sizes: sizes.iter().map(|&n| SymInt::Int(n)).collect(),
                    strides: Vec::new(),
                    storage_offset: SymInt::Int(0),
                };
                ((*name).to_owned(), meta)
            })
            .collect()
    }

    fn ops(e: &Expansion) -> Vec<&str> {
        e.nodes
            .iter()
            .map(|n| n.target.trim_start_matches("torch.ops.aten."))
            .collect()
    }

    #[test]
    fn every_expanded_op_has_a_schema_row() {
        for target in EXPANDED {
            assert!(super::super::schema::lookup(target).is_some(), "{target}");
        }
    }

    #[test]
    fn a_gru_cell_is_its_gates_as_torch_computes_them() {
        let inputs = [
            tensor("input", "x"),
            tensor("hx", "h"),
            tensor("w_ih", "wi"),
            tensor("w_hh", "wh"),
        ]
        .join(", ");
        let cell = node("gru_cell.default", &inputs, &["y"]);
        let known = metas(&[
            ("x", &[2, 10]),
            ("h", &[2, 5]),
            ("wi", &[15, 10]),
            ("wh", &[15, 5]),
            ("y", &[2, 5]),
        ]);
        let e = expand(&cell, &|name| known.get(name).cloned()).unwrap();
        assert_eq!(ops(&e)[..2], ["linear.default", "linear.default"]);
        assert_eq!(ops(&e).iter().filter(|o| **o == "slice.Tensor").count(), 6);
        let last = e.nodes.last().unwrap();
        assert_eq!(last.target, "torch.ops.aten.add.Tensor");
        assert_eq!(last.outputs[0].tensor_name(), Some("y"));
        // Every value between is named under the node and has sizes; the output keeps its.
        assert!(e.values.iter().all(|(name, _)| name.starts_with("cell.")));
        assert!(e.values.iter().all(|(name, _)| name != "y"));
        let gate = e
            .values
            .iter()
            .find(|(name, _)| name.starts_with("cell.slice"))
            .unwrap();
        assert_eq!(gate.1.sizes, [SymInt::Int(2), SymInt::Int(5)]);
    }

    #[test]
    fn an_lstm_cell_makes_both_states() {
        let inputs = [
            tensor("input", "x"),
            r#"{"name": "hx", "arg": {"as_tensors": [{"name": "h"}, {"name": "c"}]}}"#.into(),
            tensor("w_ih", "wi"),
            tensor("w_hh", "wh"),
        ]
        .join(", ");
        let cell = node("lstm_cell.default", &inputs, &["hy", "cy"]);
        let known = metas(&[
            ("x", &[1, 3]),
            ("h", &[1, 2]),
            ("c", &[1, 2]),
            ("wi", &[8, 3]),
            ("wh", &[8, 2]),
            ("hy", &[1, 2]),
            ("cy", &[1, 2]),
        ]);
        let e = expand(&cell, &|name| known.get(name).cloned()).unwrap();
        let made: Vec<&str> = e
            .nodes
            .iter()
            .filter_map(|n| n.outputs[0].tensor_name())
            .collect();
        assert!(made.contains(&"hy") && made.contains(&"cy"));
        assert_eq!(e.nodes.last().unwrap().outputs[0].tensor_name(), Some("hy"));
    }

    #[test]
    fn sizes_broadcast_from_the_right() {
        let s = |v: &[i64]| v.iter().map(|&n| SymInt::Int(n)).collect::<Vec<_>>();
        assert_eq!(broadcast(&s(&[2, 1, 4]), &s(&[3, 1])), s(&[2, 3, 4]));
        assert_eq!(broadcast(&s(&[5]), &s(&[])), s(&[5]));
    }

    #[test]
    fn the_trapezoid_rule_needs_a_fixed_integration_axis() {
        let inputs = [tensor("y", "y"), tensor("x", "x")].join(", ");
        let rule = node("trapz.x", &inputs, &["out"]);
        let mut known = metas(&[("x", &[3]), ("out", &[])]);
        known.insert(
            "y".into(),
            TensorMeta {
                dtype: 7,
                sizes: vec![SymInt::Expr("s0".into())],
                strides: Vec::new(),
                storage_offset: SymInt::Int(0),
            },
        );
        let err = expand(&rule, &|name| known.get(name).cloned()).unwrap_err();
        assert!(err.contains("not fixed"), "{err}");
    }
}
