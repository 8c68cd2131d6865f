//! The ONNX form of torch's ported decompositions ([`ckpt_aten::decompose`]): each
//! function of a rule is one ONNX node, on its activations' layout wherever their batch is,
//! or by rows beside constants and before a loss's reduction; subexpressions of constants
//! alone are computed at export by the rule's own arithmetic.

use crate::elem::ElemType;
use crate::graph::{GraphBuilder, Value};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::decompose::{self, Expr, LossReduction, Relayout};
use ckpt_aten::eval;
use ckpt_aten::program::{Argument, Node};

use super::super::emit;
use super::super::lower::Lowering;
use super::pointwise::{operand, Elementwise};
use super::registry::aten_name;
use super::series::{Graph, Term};
use super::{arg_error, OrShape};
use ckpt_aten::series::Algebra;

/// A tensor argument of a rule in the graph: an activation, or a constant's values.
enum Leaf {
    Activation(Value),
    Constant(eval::Tensor),
}

/// `expr` in `graph`, each tensor argument as `leaves` gives it by name, numbers read from
/// `node`; a subexpression of numbers and constants alone is computed at export by the
/// rule's own arithmetic ([`Expr::evaluate`], rounded to float32 after each function),
/// and a constant tensor is written as an initializer every sample shares.
fn emit_expr(
    graph: &mut Graph<'_>,
    node: &Node,
    leaves: &[(&str, Leaf)],
    expr: &Expr,
) -> Result<Term, String> {
    let leaf = |name: &str| leaves.iter().find(|(n, _)| *n == name).map(|(_, l)| l);
    let names = expr.tensors();
    let constant = names
        .iter()
        .all(|name| matches!(leaf(name), Some(Leaf::Constant(_))));
    if constant && !names.is_empty() {
        let value = expr.evaluate(node, &|name| match leaf(name) {
            Some(Leaf::Constant(t)) => Ok(t.clone()),
            _ => Err(format!("`{name}` is not a constant")),
        })?;
        return shared(graph, &value, expr.is_bool());
    }
    let Expr::F(f, operands) = expr else {
        return Ok(match (expr, expr.number(node)?) {
            (_, Some(v)) => Term::Number(f64::from(v)),
            (Expr::Tensor(name), None) => match leaf(name) {
                Some(Leaf::Activation(v)) => Term::Value(v.clone()),
                _ => return Err(format!("tensor argument `{name}` is not read")),
            },
            _ => return Err("a leaf without a value".into()),
        });
    };
    let mut terms = Vec::with_capacity(operands.len());
    for (k, e) in operands.iter().enumerate() {
        let term = emit_expr(graph, node, leaves, e)?;
        // A condition known at export writes the branch it chooses alone.
        if let (decompose::Fn::Where, 0, Term::Number(c), [_, a, b]) = (f, k, &term, operands) {
            return emit_expr(graph, node, leaves, if *c != 0.0 { a } else { b });
        }
        terms.push(term);
    }
    let refs: Vec<&Term> = terms.iter().collect();
    Ok(match graph.apply(*f, &refs)? {
        Term::Number(v) => Term::Number(f64::from(v as f32)),
        value => value,
    })
}

/// Rule `expr` of `leaves` written in `g` under `scope`: the activation it computes (a
/// rule whose result is one number everywhere is refused: it is not an activation).
fn emit_rule(
    g: &mut GraphBuilder,
    scope: &str,
    node: &Node,
    leaves: &[(&str, Leaf)],
    expr: &Expr,
) -> Result<Value, OnnxError> {
    let mut graph = Graph::new(g, scope);
    match emit_expr(&mut graph, node, leaves, expr).or_shape()? {
        Term::Value(y) => Ok(y),
        Term::Number(_) => Err(arg_error(format!(
            "{} gives the same number everywhere, which is not an activation",
            aten_name(node)
        ))),
    }
}

/// Constant `value` in the graph: a number when it has no dimension, else an initializer
/// (bool when `bool`) every sample shares.
pub(super) fn shared(
    graph: &mut Graph<'_>,
    value: &eval::Tensor,
    bool: bool,
) -> Result<Term, String> {
    let values: Vec<f64> = value.to_f32().into_iter().map(f64::from).collect();
    if let ([], [number]) = (value.dims(), values.as_slice()) {
        return Ok(Term::Number(*number));
    }
    let elem = if bool {
        ElemType::Bool
    } else {
        ElemType::Float32
    };
    let hint = format!("{}.constant", graph.scope());
    graph
        .g
        .shared_constant(&hint, value.dims().to_vec(), &values, elem)
        .map(Term::Value)
        .map_err(|e| e.to_string())
}

impl Lowering<'_, '_> {
    /// An op with a ported decomposition: its rule's functions of its tensor arguments;
    /// the result's element type must be the one torch recorded. Activations of one
    /// layout are written as they are, wherever their batch is; with a constant among
    /// them, or a reduction over every entry, they are read by rows
    /// ([`Lowering::activation`], float32), broadcast as torch broadcasts them
    /// ([`Lowering::lift_for_constants`]).
    pub(super) fn decomposed(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = aten_name(node);
        let Some(rule) = decompose::pointwise(target) else {
            return Err(arg_error(format!("{target} has no ported decomposition")));
        };
        let want = if rule.expr.is_bool() {
            ElemType::Bool
        } else {
            ElemType::Float32
        };
        let recorded = self.recorded_elem(self.output_name(node, 0)?)?;
        if recorded != want {
            return Err(arg_error(format!(
                "{target} gives {want} by {}, but torch recorded {recorded}",
                rule.port
            )));
        }
        // An optional tensor that is not given is read by no branch the rule writes.
        let names: Vec<&str> = rule
            .expr
            .tensors()
            .into_iter()
            .filter(|name| decompose::given(node, name))
            .collect();
        let inputs = names
            .iter()
            .map(|name| args.tensor(name).or_shape())
            .collect::<Result<Vec<_>, _>>()?;
        let reduces = rule.reduces && LossReduction::of(node).or_shape()? != LossReduction::None;
        if reduces || inputs.iter().any(|t| self.is_constant(t)) {
            return self.decomposed_by_rows(node, args, scope, rule, &names);
        }
        // Activations alone, of one layout: the rule on their values, wherever the batch is.
        let xs = inputs
            .iter()
            .map(|t| self.tensor(t))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(first) = xs.first() else {
            return Err(arg_error(format!("{target} reads no tensor")));
        };
        if let Some(other) = xs.iter().find(|x| !x.same_batch(first)) {
            return Err(arg_error(format!(
                "{target} of {} and {}: the batch must be on the same dimension of both, the same number of times",
                super::super::tensor::show(&first.sizes()),
                super::super::tensor::show(&other.sizes())
            )));
        }
        // torch computes these ops in float32 (an integer or bool tensor promoted).
        let leaves: Vec<(&str, Leaf)> = names
            .iter()
            .zip(&xs)
            .map(|(&name, x)| {
                let v = emit::cast(&mut self.g, scope, x.value(), ElemType::Float32);
                (name, Leaf::Activation(v))
            })
            .collect();
        let y = emit_rule(&mut self.g, scope, node, &leaves, &rule.expr)?;
        self.bind_tensor(node, 0, first.with_value(y)?)
    }

    /// [`Lowering::decomposed`] of a rule of tensor arguments `names` (those given), read
    /// by rows: some of them constants, or a loss reduced over every entry.
    fn decomposed_by_rows(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        rule: &decompose::Pointwise,
        names: &[&str],
    ) -> Result<(), OnnxError> {
        let target = aten_name(node);
        let reduction = match rule.reduces {
            true => LossReduction::of(node).or_shape()?,
            false => LossReduction::None,
        };
        let operands = names
            .iter()
            .map(|name| operand(args, name))
            .collect::<Result<Vec<_>, _>>()?;
        self.lift_for_constants(&operands)?;
        let mut leaves = Vec::with_capacity(names.len());
        for (&name, e) in names.iter().zip(&operands) {
            let Elementwise::Tensor(t) = *e else {
                return Err(arg_error(format!("argument `{name}` is not a tensor")));
            };
            leaves.push(if self.is_constant(t) {
                Leaf::Constant(self.constant_tensor(t)?)
            } else {
                let x = match reduction {
                    LossReduction::None => self.any_activation(t)?,
                    // A reduction over every entry: a static export's tensors are read lifted.
                    _ => self.lifted_any_activation(t)?,
                };
                // torch computes these ops in float32 (an integer or bool tensor promoted).
                Leaf::Activation(emit::cast(&mut self.g, scope, &x, ElemType::Float32))
            });
        }
        // A constant meets the activations per sample: its leading 1 where they have the
        // batch is left out (a `[1, S, D]` table beside `[N, S, D]`); one that would meet
        // the batch itself is refused, naming it.
        let first = leaves.iter().find_map(|leaf| match leaf {
            Leaf::Activation(v) => Some(v.clone()),
            Leaf::Constant(_) => None,
        });
        let Some(first) = first else {
            return Err(arg_error(format!(
                "{target} of constants alone is folded, not emitted"
            )));
        };
        let rows = first.shape().len();
        for (leaf, e) in leaves.iter_mut().zip(&operands) {
            let (Leaf::Constant(c), Elementwise::Tensor(t)) = (&*leaf, e) else {
                continue;
            };
            match c.dims() {
                dims if dims.len() <= rows => {}
                [1, per_sample @ ..] if per_sample.len() == rows => {
                    let dims: Vec<i64> = per_sample.iter().map(|&d| d as i64).collect();
                    *leaf = Leaf::Constant(c.reshape(&dims).or_shape()?);
                }
                dims => return Err(emit::constant_unbroadcast(target, scope, &first, t, dims)),
            }
        }
        let leaves: Vec<(&str, Leaf)> = names.iter().copied().zip(leaves).collect();
        let y = emit_rule(&mut self.g, scope, node, &leaves, &rule.expr)?;
        let op = match reduction {
            LossReduction::None => return self.bind(node, 0, y),
            LossReduction::Mean => "ReduceMean",
            LossReduction::Sum => "ReduceSum",
        };
        // Every entry, which under a dynamic batch is refused as mixing samples.
        let axes = super::reduce::reduction_axes(args, &y, self.is_lifted())?;
        let y = self.g.reduce(op, scope, &y, &axes, false)?;
        self.bind(node, 0, y)
    }
}

/// Float32 1.0 where `x ≠ 0` (NaN included, as torch's `x != 0`), 0.0 elsewhere.
pub(super) fn nonzero_flags(g: &mut GraphBuilder, scope: &str, x: &Value) -> Value {
    let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
    let shape = x.shape().to_vec();
    let equal = emit::typed(
        g,
        "Equal",
        scope,
        [x.name(), zero.name()],
        &shape,
        ElemType::Bool,
    );
    let nonzero = emit::typed(g, "Not", scope, [equal.name()], &shape, ElemType::Bool);
    emit::cast(g, scope, &nonzero, ElemType::Float32)
}

/// Bool `a op b` (`Greater`, `Equal`) of a float32 value and a number.
fn holds(g: &mut GraphBuilder, scope: &str, op: &'static str, a: &Value, b: f32) -> Value {
    let b = g.constant_scalar(&format!("{scope}.bound"), b);
    emit::single(g.typed_node(
        op,
        scope,
        vec![a.name().to_owned(), b.name().to_owned()],
        vec![],
        vec![(a.shape().to_vec(), ElemType::Bool)],
    ))
}

/// Which of torch's reductions over `dim` of a float32 input [`Lowering::reduced`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reduced {
    /// `all` (whole, `.dim`, `.dims`): every element nonzero (`torch._refs.all`: not any of `x == 0`).
    All,
    /// `any` (whole, `.dim`, `.dims`) (`torch._refs.any`: a sum of `x != 0` above zero).
    Any,
    /// `count_nonzero` (`torch._refs.count_nonzero`: the sum of `x != 0` as int64).
    CountNonzero,
    /// `logsumexp` (`torch._refs.logsumexp`: `log Σ exp(x − m) + m`, `m` the maximum with
    /// ±inf replaced by 0).
    LogSumExp,
    /// `nansum` (`torch._refs.nansum`: the sum with NaN as 0).
    NanSum,
    /// `nanmean` (`torch._refs.nanmean`: `nansum` over the count of non-NaN entries, NaN
    /// where there is none).
    NanMean,
}

impl Lowering<'_, '_> {
    /// A ported reduction ([`Reduced`]) of float32 argument `self` over the per-sample
    /// axes `dim` names, the batch first.
    pub(super) fn reduced(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        how: Reduced,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        // Only whether each entry is zero counts for these: a bool or integer tensor is read
        // as float32 (every nonzero integer stays nonzero).
        let x = if matches!(how, Reduced::All | Reduced::Any | Reduced::CountNonzero) {
            let x = self.lifted_any_activation(input)?;
            emit::cast(&mut self.g, scope, &x, ElemType::Float32)
        } else {
            self.lifted_activation(input)?
        };
        let axes = super::reduce::reduction_axes(args, &x, self.is_lifted())?;
        let keep = args.bool_or("keepdim", false).or_shape()?;
        if !matches!(args.get("dtype"), None | Some(Argument::None)) {
            return Err(arg_error(format!("{how:?} with a dtype is not exported")));
        }
        let g = &mut self.g;
        let y = match how {
            Reduced::NanSum | Reduced::NanMean => {
                let shape = x.shape().to_vec();
                let nan = emit::typed(g, "IsNaN", scope, [x.name()], &shape, ElemType::Bool);
                let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
                let kept = emit::typed(
                    g,
                    "Where",
                    scope,
                    [nan.name(), zero.name(), x.name()],
                    &shape,
                    ElemType::Float32,
                );
                let sum = g.reduce("ReduceSum", scope, &kept, &axes, keep)?;
                if how == Reduced::NanSum {
                    sum
                } else {
                    let present =
                        emit::typed(g, "Not", scope, [nan.name()], &shape, ElemType::Bool);
                    let present = emit::cast(g, scope, &present, ElemType::Float32);
                    let count = g.reduce("ReduceSum", scope, &present, &axes, keep)?;
                    g.div(scope, &sum, &count)?
                }
            }
            Reduced::All | Reduced::Any | Reduced::CountNonzero => {
                let flags = nonzero_flags(g, scope, &x);
                let count = g.reduce("ReduceSum", scope, &flags, &axes, keep)?;
                match how {
                    Reduced::All => {
                        let n: u64 = axes.iter().map(|&a| x.shape()[a]).product();
                        holds(g, scope, "Equal", &count, n as f32)
                    }
                    Reduced::Any => holds(g, scope, "Greater", &count, 0.0),
                    _ => emit::cast(g, scope, &count, ElemType::Int64),
                }
            }
            Reduced::LogSumExp => {
                let most = g.reduce("ReduceMax", scope, &x, &axes, true)?;
                let size = g.unary("Abs", scope, &most, vec![]);
                let infinite = holds(g, scope, "Equal", &size, f32::INFINITY);
                let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
                let shift = emit::typed(
                    g,
                    "Where",
                    scope,
                    [infinite.name(), zero.name(), most.name()],
                    most.shape(),
                    ElemType::Float32,
                );
                let centred = g.sub(scope, &x, &shift)?;
                let exp = g.unary("Exp", scope, &centred, vec![]);
                let sum = g.reduce("ReduceSum", scope, &exp, &axes, keep)?;
                let log = g.unary("Log", scope, &sum, vec![]);
                let shift = if keep {
                    shift
                } else {
                    g.reshape(scope, &shift, log.shape())?
                };
                g.add(scope, &log, &shift)?
            }
        };
        let recorded = self.recorded_elem(self.output_name(node, 0)?)?;
        if recorded != y.elem() {
            return Err(arg_error(format!(
                "{how:?} gives {}, but torch recorded {recorded}",
                y.elem()
            )));
        }
        self.bind(node, 0, y)
    }
}

impl Lowering<'_, '_> {
    /// A layout op torch decomposes into flips and permutations
    /// ([`decompose::relayout`]): each step on argument `self`, wherever its batch is (a
    /// flip never along it).
    pub(super) fn relaid(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = aten_name(node);
        let mut x = self.tensor(args.tensor("self").or_shape()?)?;
        let steps = decompose::relayout(node, target, x.rank())
            .ok_or_else(|| arg_error(format!("{target} is not a layout op")))?
            .or_shape()?;
        for step in steps {
            x = match step {
                Relayout::Flip(axes) => self.flipped(&x, &axes, scope)?,
                Relayout::Permute(order) => x.transposed(&mut self.g, scope, &order)?,
            };
        }
        self.bind_tensor(node, 0, x)
    }
}

impl Lowering<'_, '_> {
    /// `_safe_softmax(self, dim)` (torch's `safe_softmax` decomposition): the softmax, with
    /// 0 along every row of `dim` whose values are all −inf
    /// ([`GraphBuilder::zero_fully_masked`]), the batch first.
    pub(super) fn safe_softmax(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        self.same_dtype(node, args, "_safe_softmax")?;
        let input = args.tensor("self").or_shape()?;
        let x = self.activation(input)?;
        let rank = x.shape().len() + 1;
        let dim = args.int("dim").or_shape()?;
        let axis = super::per_sample_axis(dim, rank)?;
        // ONNX's Softmax over the last axis, as `softmax` is lowered (exact at every opset).
        let soft = self.tensor(input)?.softmax(
            &mut self.g,
            scope,
            "Softmax",
            super::super::tensor::axis(dim, rank)?,
        )?;
        // Seen by rows, as `x` is (a static tensor's first size left out of its shape).
        let (_, soft) = soft
            .as_rows()
            .ok_or_else(|| arg_error("_safe_softmax of a tensor without its batch first".into()))?;
        let y = self.g.zero_fully_masked(scope, &x, axis, &soft)?;
        self.bind(node, 0, y)
    }

    /// `adaptive_max_pool1d/2d/3d`, batched or not, over torch's windows
    /// ([`Lowering::adaptive_max`]); when its indices (output 1) are read, both by torch's
    /// scan ([`Lowering::adaptive_max_scan`]).
    pub(super) fn adaptive_max_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        rank: usize,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let out = args.sizes("output_size", rank).or_shape()?;
        let (x, unbatched) = self.lift_unbatched(scope, x, rank)?;
        match x.shape().split_first() {
            Some((_, sizes)) if sizes.len() == rank && out.len() == rank => {}
            _ => {
                return Err(arg_error(format!(
                    "adaptive max pooling to {out:?} of per-sample {:?} (an N×C input with {rank} spatial axes is exported)",
                    x.shape()
                )))
            }
        };
        if out.contains(&0) {
            return Err(arg_error(format!(
                "adaptive max pooling to {out:?}, an empty map"
            )));
        }
        let indexed = node
            .outputs
            .get(1)
            .and_then(Argument::tensor_name)
            .is_some_and(|name| !self.readers_of(name).is_empty());
        if indexed {
            let (y, indices) = self.adaptive_max_scan(scope, &x, &out)?;
            for (k, v) in [y, indices].into_iter().enumerate() {
                let v = self.unlift_unbatched(scope, v, unbatched)?;
                self.bind(node, k, v)?;
            }
            return Ok(());
        }
        let y = self.adaptive_max(scope, &x, &out)?;
        // onnxruntime's MaxPool starts from the lowest finite float, so a window of −inf
        // alone gives −3.4e38 there: such windows (no value other than −inf, NaN counting
        // as other) are set to −inf, torch's maximum.
        let g = &mut self.g;
        let minus_infinity = holds(g, scope, "Equal", &x, f32::NEG_INFINITY);
        let other = emit::typed(
            g,
            "Not",
            scope,
            [minus_infinity.name()],
            x.shape(),
            ElemType::Bool,
        );
        let other = emit::cast(g, scope, &other, ElemType::Float32);
        let other = self.adaptive_max(scope, &other, &out)?;
        let g = &mut self.g;
        let only_minus_infinity = holds(g, scope, "Equal", &other, 0.0);
        let low = g.constant_scalar(&format!("{scope}.low"), f32::NEG_INFINITY);
        let mut y = emit::typed(
            g,
            "Where",
            scope,
            [only_minus_infinity.name(), low.name(), y.name()],
            y.shape(),
            ElemType::Float32,
        );
        if unbatched {
            y = self.g.reshape(scope, &y, &out)?;
        }
        self.bind(node, 0, y)?;
        self.unproduced_from(node, 1);
        Ok(())
    }

    /// The maximum of `x` `[C, spatial…]` over torch's adaptive windows to `out` (output `j`
    /// of an axis of `n` covers inputs `⌊j·n/out⌋ .. ⌈(j+1)·n/out⌉`): one MaxPool when every
    /// output size divides the input's (the windows are then its), else one spatial axis at
    /// a time, a Slice and a MaxPool over each window along that axis, then a Concat (the
    /// maximum over a box is the maximum over each axis in turn).
    fn adaptive_max(&mut self, scope: &str, x: &Value, out: &[u64]) -> Result<Value, OnnxError> {
        let rank = out.len();
        let sizes = x.shape()[1..].to_vec();
        let pool = |kernel: Vec<u64>| crate::ops::PoolNd {
            stride: kernel.clone(),
            kernel,
            pad: vec![0; rank],
            ceil: false,
        };
        if sizes.iter().zip(out).all(|(&i, &o)| i % o == 0) {
            let kernel = sizes.iter().zip(out).map(|(&i, &o)| i / o).collect();
            return self.g.max_pool_nd(scope, x, &pool(kernel));
        }
        let mut y = x.clone();
        for (k, &size) in out.iter().enumerate() {
            let axis = k + 1;
            let n = y.shape()[axis];
            if n == size {
                continue;
            }
            let mut pieces = Vec::with_capacity(size as usize);
            for j in 0..size {
                let (start, end) = (j * n / size, ((j + 1) * n).div_ceil(size));
                let window = self.g.slice(scope, &y, axis, start..end)?;
                let mut kernel = vec![1; rank];
                kernel[k] = end - start;
                pieces.push(self.g.max_pool_nd(scope, &window, &pool(kernel))?);
            }
            let refs: Vec<&Value> = pieces.iter().collect();
            y = self.g.concat(scope, &refs, axis)?;
        }
        Ok(y)
    }

    /// `sum_to_size(self, size)` (ATen's `sum_to`): a sum keeping the axes where `size` has 1
    /// and `self` does not, and over the leading axes `size` lacks, viewed as `size`
    /// ([`ckpt_aten::eval::sum_to_size_axes`]). Under a dynamic batch it is refused: a
    /// size list torch.export keeps has no symbolic size, so the batch is summed or moved.
    pub(super) fn sum_to_size(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let t = self.tensor(args.tensor("self").or_shape()?)?;
        let size = args
            .optional_ints("size")
            .or_shape()?
            .ok_or_else(|| arg_error("sum_to_size without a size list".into()))?;
        if t.placement() != super::super::tensor::Placement::Static {
            return Err(arg_error(format!(
                "sum_to_size of {} to {size:?} sums over the batch or moves it; only sums within each sample are exported",
                super::super::tensor::show(&t.sizes())
            )));
        }
        let counts: Vec<u64> = t.sizes().iter().map(|s| s.count).collect();
        let axes = ckpt_aten::eval::sum_to_size_axes(&counts, size).or_shape()?;
        if axes.is_empty() {
            return self.bind_tensor(node, 0, t);
        }
        let x = self.lift(&t, scope)?;
        let summed = self.g.reduce("ReduceSum", scope, &x, &axes, true)?;
        let y = self.unlift(summed, scope)?;
        let recorded = self.recorded_sizes(node, 0)?;
        let y = y.reshaped(&mut self.g, scope, &recorded)?;
        self.bind_tensor(node, 0, y)
    }

    /// `var_mean`/`std_mean` (`root`): the variance (or deviation) as `var`/`std`, and the
    /// mean over the same axes (`torch._refs.var_mean`), NaN where the variance is, as
    /// torch's kernel gives it.
    pub(super) fn variance_mean(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        root: bool,
    ) -> Result<(), OnnxError> {
        self.variance(node, args, scope, root)?;
        let deviation = self.lifted_activation(self.output_name(node, 0)?)?;
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let axes = super::reduce::reduction_axes(args, &x, self.is_lifted())?;
        let keep = args.bool_or("keepdim", false).or_shape()?;
        let mean = self.g.reduce_mean(scope, &x, &axes, keep)?;
        // torch's kernel (Welford's) gives a NaN mean wherever the variance is NaN (an
        // infinite value among the reduced ones), where `mean` alone gives ±inf.
        let undefined = emit::typed(
            &mut self.g,
            "IsNaN",
            scope,
            [deviation.name()],
            deviation.shape(),
            ElemType::Bool,
        );
        let nan = self.g.constant_scalar(&format!("{scope}.nan"), f32::NAN);
        let mean = emit::typed(
            &mut self.g,
            "Where",
            scope,
            [undefined.name(), nan.name(), mean.name()],
            mean.shape(),
            ElemType::Float32,
        );
        self.bind(node, 1, mean)
    }
}

impl Lowering<'_, '_> {
    /// `fill.Scalar(self, value)` (`torch._refs.fill`: `full_like(self, value)`): the same
    /// value for every sample, a bool `value` as 1 or 0.
    pub(super) fn fill_like(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        let value = match args.get("value") {
            Some(ckpt_aten::program::Argument::Bool(b)) => f64::from(u8::from(*b)),
            _ => args.number("value").or_shape()?,
        };
        self.like(node, args, Some(value))
    }

    /// `fill_.Tensor`: `self` filled with the one value of a constant tensor (`y[:, 0] =
    /// 5.0` records the number as a lifted 0-d tensor); a value computed per sample is
    /// refused.
    pub(super) fn fill_by_tensor(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        let name = args.tensor("value").or_shape()?;
        if !self.is_constant(name) {
            return Err(arg_error(format!(
                "`fill_` by `{name}`, which is computed per sample: only a constant value is exported"
            )));
        }
        let value = match self.constant_tensor(name)?.values() {
            eval::Values::I64(v) if v.len() == 1 => v[0] as f64,
            eval::Values::F32(v) if v.len() == 1 => f64::from(v[0]),
            _ => {
                return Err(arg_error(format!(
                    "`fill_` by `{name}`, which is not one value"
                )))
            }
        };
        self.like(node, args, Some(value))
    }
}
