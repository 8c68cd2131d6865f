//! Compound ops written as the aten ops torch's own definition computes them by: the
//! recurrent cells (`RNN.cpp`'s `SimpleCell`, `GRUCell`, `LSTMCell`), `bilinear`
//! (`Linear.cpp`), `linalg_cross` (`torch._refs.linalg.cross`), `block_diag`
//! (`TensorShape.cpp`), `_softmax_backward_data` and `native_dropout_backward`
//! (`torch._decomp.decompositions`), the trapezoid rule over sample points
//! (`Integration.cpp`) and `isin` (`torch._decomp`'s `isin_default`).
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
    "bilinear.default",
    "block_diag.default",
    "cross.default",
    "cumulative_trapezoid.x",
    "gru_cell.default",
    "isin.Tensor_Tensor",
    "linalg_cross.default",
    "lstm_cell.default",
    "native_dropout_backward.default",
    "rnn_relu_cell.default",
    "rnn_tanh_cell.default",
    "trapezoid.x",
    "trapz.x",
];

/// The export schema's dtype number of bool.
const BOOL: i64 = 12;

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
        other => return Err(format!("{other} is not written as other ops")),
    }
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
        let names = blocks.iter().map(|b| b.name.clone()).collect();
        self.emit(
            "cat.default",
            vec![
                ("tensors", Argument::Tensors(names)),
                ("dim", Argument::Int(0)),
            ],
            out.sizes.clone(),
            out.dtype,
            Some(&out),
        );
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
