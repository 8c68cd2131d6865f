//! The scatter family by constant positions: `scatter` (of a source or a value),
//! `scatter_add`, `scatter_reduce` (every `reduce`, `include_self` both ways), `index_put`
//! (`accumulate` both ways), `select_scatter`, `slice_scatter`, `diagonal_scatter`,
//! `masked_scatter`, `index_add`, `index_copy`, `index_fill`, `index_reduce`, `put` and
//! `max_unpool2d`/`3d` (a write into zeros); and the gathers
//! `take` and `take_along_dim` by constant positions, read as a round of the same reads.
//!
//! Their writes are a [`Plan`] built at export from the constant index, mask or bounds
//! ([`ckpt_aten::scatter`], which the evaluator folds alike). The graph has no
//! ScatterElements or ScatterND: opset 11's have no `reduction` (opset 16), and their result
//! is undefined where an index repeats. Instead `self` and the source are flattened per
//! sample, and round `k` reads for every position the `k`-th entry written there (a
//! constant list of source positions: a GatherElements of the one row of a static export,
//! Slices of runs of consecutive entries with a batch, an initializer of a constant
//! source) and folds it in where the position has one (`Where` on a constant mask): a plain write replaces, a reduction applies Add, Mul, Max or Min in
//! torch's order, so a float sum rounds as torch's CPU kernel does. A plain `scatter` or
//! `index_put` whose index repeats a position is refused, as torch leaves its result
//! undefined.
//!
//! With a dynamic batch the plan is one sample's: the op must not work along the batch and
//! its positions must be the same for every sample (an index expanded over the batch); a
//! `masked_scatter` with a batch is refused, as it takes the source's entries in order over
//! the whole tensor, so a sample's values depend on how many entries the samples before it
//! masked.

use crate::elem::ElemType;
use crate::graph::{Attr, Value, Weight};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::eval;
use ckpt_aten::program::{Argument, Node};
use ckpt_aten::scatter::{self, Combine, Plan};

use super::super::emit;
use super::super::lower::Lowering;
use super::super::tensor::{self, Placement};
use super::{arg_error, OrShape};

/// The most entries written to one position (a round of reads and folds each).
const MAX_ROUNDS: usize = 64;

/// The most Slices a round reads a batched source in.
const MAX_RUNS: usize = 256;

/// How `index_put` and `put` fold their writes: with `accumulate`, summed into `self`;
/// else each replacing the entry.
fn accumulated(args: &Args<'_>) -> Result<Combine, OnnxError> {
    Ok(if args.bool("accumulate").or_shape()? {
        Combine::Sum
    } else {
        Combine::Replace
    })
}

/// Round `k`'s source positions, one per position of the result: the `k`-th entry written
/// there, and where none is, the one after the previous position's (any of the source's
/// `count` entries would do, as the round leaves that position alone; this one extends a
/// run of consecutive entries).
fn filled(plan: &Plan, k: usize, count: usize) -> Vec<i64> {
    let mut positions = Vec::with_capacity(plan.writes.len());
    let mut previous: Option<i64> = None;
    for w in &plan.writes {
        let p = match w.get(k) {
            Some(&s) => s as i64,
            None => previous.map_or(0, |p| (p + 1) % count.max(1) as i64),
        };
        positions.push(p);
        previous = Some(p);
    }
    positions
}

/// What a scatter writes.
enum Source<'a> {
    /// A tensor argument (an activation with `self`'s rows, or a constant).
    Tensor(&'a str),
    /// `index_add`'s source times its `alpha` (other than 1).
    Scaled(&'a str, f64),
    /// `scatter.value`'s number.
    Number(f64),
}

/// The source of the folds, flattened: an activation's rows, a constant's values (at the
/// result's element type), or a number.
enum Flat {
    Rows(Value),
    Values(Vec<f64>),
    Number(Weight),
}

impl Lowering<'_, '_> {
    /// `scatter.src`, `scatter.value`, `scatter.reduce`, `scatter.value_reduce`,
    /// `scatter_add` and `scatter_reduce` by a constant index along a per-sample dimension.
    pub(super) fn scatter(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = node
            .target
            .strip_prefix("torch.ops.aten.")
            .unwrap_or(&node.target);
        let (source, combine, include_self) = match target {
            "scatter.value" => (
                Source::Number(args.number("value").or_shape()?),
                Combine::Replace,
                true,
            ),
            "scatter.src" => (
                Source::Tensor(args.tensor("src").or_shape()?),
                Combine::Replace,
                true,
            ),
            "scatter_add.default" => (
                Source::Tensor(args.tensor("src").or_shape()?),
                Combine::Sum,
                true,
            ),
            "scatter.reduce" | "scatter.value_reduce" => {
                let reduce = match args.get("reduce") {
                    Some(Argument::String(r)) => Combine::of_scatter(r).map_err(arg_error)?,
                    _ => return Err(arg_error("scatter without `reduce`".into())),
                };
                let source = if target == "scatter.reduce" {
                    Source::Tensor(args.tensor("src").or_shape()?)
                } else {
                    Source::Number(args.number("value").or_shape()?)
                };
                (source, reduce, true)
            }
            _ => {
                let reduce = match args.get("reduce") {
                    Some(Argument::String(r)) => Combine::of_reduce(r).map_err(arg_error)?,
                    _ => return Err(arg_error("scatter_reduce without `reduce`".into())),
                };
                (
                    Source::Tensor(args.tensor("src").or_shape()?),
                    reduce,
                    args.bool("include_self").or_shape()?,
                )
            }
        };
        let name = args.tensor("self").or_shape()?;
        let x = self.tensor(name)?;
        let dim = self.per_row_dim(name, args.int("dim").or_shape()?, "scatter")?;
        let index_name = args.tensor("index").or_shape()?;
        let index = match x.placement() {
            Placement::Static => self.constant_index(index_name)?,
            Placement::Batch { axis, .. } => self.uniform_index(index_name, axis)?,
        };
        let values = index.to_i64().map_err(arg_error)?;
        let number = matches!(source, Source::Number(_));
        let plan_of = |own: &[u64], src: &[u64]| {
            let src = if number { index.dims() } else { src };
            Plan::scatter(own, dim, index.dims(), &values, src)
        };
        self.write_plan(node, scope, name, source, plan_of, combine, include_self)
    }

    /// `select_scatter(self, src, dim, index)` on a per-sample dimension.
    pub(super) fn select_scatter(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        let dim = self.per_row_dim(name, args.int("dim").or_shape()?, "select_scatter")?;
        let index = args.int("index").or_shape()?;
        self.write_src(node, args, scope, name, |own, src| {
            scatter::select_scatter(own, src, dim, index)
        })
    }

    /// `diagonal_scatter(self, src, offset, dim1, dim2)` over two per-sample dimensions.
    pub(super) fn diagonal_scatter(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        let op = "diagonal_scatter";
        let dim1 = self.per_row_dim(name, args.int("dim1").or_shape()?, op)?;
        let dim2 = self.per_row_dim(name, args.int("dim2").or_shape()?, op)?;
        let offset = args.int("offset").or_shape()?;
        self.write_src(node, args, scope, name, |own, src| {
            scatter::diagonal_scatter(own, src, offset, dim1, dim2)
        })
    }

    /// `slice_scatter(self, src, dim, start, end, step)` on a per-sample dimension.
    pub(super) fn slice_scatter(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        let dim = self.per_row_dim(name, args.int("dim").or_shape()?, "slice_scatter")?;
        let (start, end) = (
            args.optional_int("start").or_shape()?,
            args.optional_int("end").or_shape()?,
        );
        let step = args.int("step").or_shape()?;
        self.write_src(node, args, scope, name, |own, src| {
            scatter::slice_scatter(own, src, dim, start, end, step)
        })
    }

    /// `index_put(self, indices, values, accumulate)` by constant integer index tensors on
    /// adjacent dimensions; with a batch (first), the first index must be `None`.
    pub(super) fn index_put(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        let x = self.tensor(name)?;
        let given = args.optional_tensors("indices").or_shape()?;
        let mut indices = Vec::with_capacity(given.len());
        for (d, index) in given.iter().enumerate() {
            let Some(index) = index else {
                indices.push(None);
                continue;
            };
            if x.batch_axis() == Some(d) {
                return Err(tensor::mixes_samples("index_put", d, &x.sizes()));
            }
            self.known_positions(index)?;
            if self.recorded_elem(index)? == ElemType::Bool {
                return Err(arg_error(format!(
                    "index_put by the bool mask `{index}` is not exported; only integer index tensors are"
                )));
            }
            indices.push(Some(self.constant_tensor(index)?));
        }
        match x.batch_axis() {
            None => {}
            Some(0) => {
                indices.remove(0);
            }
            Some(_) => {
                return Err(arg_error(format!(
                    "index_put into `{name}` {} is exported only with the batch first",
                    tensor::show(&x.sizes())
                )))
            }
        }
        let combine = accumulated(args)?;
        let source = Source::Tensor(args.tensor("values").or_shape()?);
        let plan_of = |own: &[u64], src: &[u64]| scatter::index_put(own, &indices, src);
        self.write_plan(node, scope, name, source, plan_of, combine, true)
    }

    /// `masked_scatter(self, mask, source)` by a constant mask, in a static export.
    pub(super) fn masked_scatter(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        let x = self.tensor(name)?;
        if x.placement() != Placement::Static {
            return Err(arg_error(format!(
                "masked_scatter into `{name}` {}: it takes the source's entries in row-major order over the whole tensor, the batch included, so a sample's values depend on how many entries the samples before it masked; that mixes samples (export with --batch static)",
                tensor::show(&x.sizes())
            )));
        }
        let mask_name = args.tensor("mask").or_shape()?;
        let mask = self.constant_index(mask_name)?;
        let truth: Vec<bool> = mask.to_f32().iter().map(|&m| m != 0.0).collect();
        let source = Source::Tensor(args.tensor("source").or_shape()?);
        let plan_of =
            |own: &[u64], src: &[u64]| Plan::masked_scatter(own, mask.dims(), &truth, src);
        self.write_plan(node, scope, name, source, plan_of, Combine::Replace, true)
    }

    /// `index_add`, `index_copy`, `index_reduce` and `index_fill` by a constant 1-D index
    /// along a per-sample dimension.
    pub(super) fn index_along(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = node
            .target
            .strip_prefix("torch.ops.aten.")
            .unwrap_or(&node.target);
        let op = target.split('.').next().unwrap_or(target);
        let name = args.tensor("self").or_shape()?;
        let dim = self.per_row_dim(name, args.int("dim").or_shape()?, op)?;
        let index_name = args.tensor("index").or_shape()?;
        let index = self.constant_index(index_name)?;
        if index.rank() > 1 {
            return Err(arg_error(format!(
                "{op} by the index `{index_name}` of sizes {:?}; torch takes a 1-D one",
                index.dims()
            )));
        }
        let at = index.to_i64().map_err(arg_error)?;
        let along = |own: &[u64], src: &[u64]| scatter::index_along(own, dim, &at, src);
        let fill = |own: &[u64], _: &[u64]| scatter::index_fill(own, dim, &at);
        let source = || args.tensor("source").or_shape();
        match target {
            "index_fill.int_Scalar" | "index_fill.int_Tensor" => {
                let value = match args.get("value") {
                    Some(Argument::Tensor(v)) => self.constant_number(v, op)?,
                    _ => args.number("value").or_shape()?,
                };
                let source = Source::Number(value);
                self.write_plan(node, scope, name, source, fill, Combine::Replace, true)
            }
            "index_copy.default" => {
                let source = Source::Tensor(source()?);
                self.write_plan(node, scope, name, source, along, Combine::Replace, true)
            }
            "index_add.default" => {
                let alpha = args.float("alpha").or_shape()?;
                let source = if alpha == 1.0 {
                    Source::Tensor(source()?)
                } else {
                    Source::Scaled(source()?, alpha)
                };
                self.write_plan(node, scope, name, source, along, Combine::Sum, true)
            }
            _ => {
                let reduce = match args.get("reduce") {
                    Some(Argument::String(r)) => scatter::index_reduce(r).map_err(arg_error)?,
                    _ => return Err(arg_error("index_reduce without `reduce`".into())),
                };
                let include_self = args.bool("include_self").or_shape()?;
                let source = Source::Tensor(source()?);
                self.write_plan(node, scope, name, source, along, reduce, include_self)
            }
        }
    }

    /// `put(self, index, source, accumulate)` by a constant index, in a static export.
    pub(super) fn put(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        self.whole_tensor(name, "put", "writes")?;
        let index_name = args.tensor("index").or_shape()?;
        let index = self
            .constant_index(index_name)?
            .to_i64()
            .map_err(arg_error)?;
        let combine = accumulated(args)?;
        let source = Source::Tensor(args.tensor("source").or_shape()?);
        let plan_of = |own: &[u64], src: &[u64]| scatter::put(own, &index, src);
        self.write_plan(node, scope, name, source, plan_of, combine, true)
    }

    /// `take(self, index)` and `take_along_dim(self, indices, dim)` by constant positions,
    /// in a static export: `self` flattened and read at the flat positions of the result's
    /// entries ([`scatter::taken`], the evaluator's rule).
    pub(super) fn take(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let along = node.target.ends_with("take_along_dim.default");
        let (op, index_arg) = if along {
            ("take_along_dim", "indices")
        } else {
            ("take", "index")
        };
        let name = args.tensor("self").or_shape()?;
        let x = self.tensor(name)?;
        let dim = if along {
            args.optional_int("dim").or_shape()?
        } else {
            None
        };
        let index_name = args.tensor(index_arg).or_shape()?;
        // With a batch, the positions are one sample's: along a per-sample `dim`, by
        // indices expanded over the batch.
        let (dim, index) = match (dim, x.placement()) {
            (Some(dim), Placement::Batch { axis, .. }) => (
                Some(self.per_row_dim(name, dim, op)?),
                self.uniform_index(index_name, axis)?,
            ),
            _ => {
                self.whole_tensor(name, op, "reads")?;
                (dim, self.constant_index(index_name)?)
            }
        };
        let own = self.lifted_any_activation(name)?;
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        if own.elem() != elem {
            return Err(arg_error(format!(
                "`{name}` is {} but torch records a {elem} result",
                own.elem()
            )));
        }
        let own_dims = own.shape().to_vec();
        let positions = match dim {
            Some(dim) if along => scatter::along_dim_positions(&own_dims, &index, dim),
            _ => scatter::taken(&own_dims, &index, along),
        }
        .map_err(arg_error)?;
        let picks = positions.to_i64().map_err(arg_error)?;
        if picks.is_empty() {
            return Err(arg_error(format!(
                "{op} by the empty index `{index_name}` has a dimension of size 0 (an empty tensor), which ATC does not compile"
            )));
        }
        let m: u64 = own_dims.iter().product();
        let flat = self.flattened(scope, own, m)?;
        let k = picks.len() as u64;
        let y = self.gathered(scope, &flat, &picks, k)?;
        let y = if positions.dims() == [k] {
            y
        } else {
            self.g.reshape(scope, &y, positions.dims())?
        };
        self.bind(node, 0, y)
    }

    /// `max_unpool2d(self, indices, output_size)` and `max_unpool3d` by constant indices:
    /// each plane of `self` read at the positions its entries are written to
    /// ([`scatter::max_unpool`], the evaluator's plan) and 0 where none is. With a batch
    /// (first), the indices must be the same for every sample; indices that repeat a position
    /// are refused, as torch leaves which entry is kept undefined.
    pub(super) fn max_unpool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let spatial = if node.target.ends_with("max_unpool3d.default") {
            3
        } else {
            2
        };
        let name = args.tensor("self").or_shape()?;
        let x = self.tensor(name)?;
        let index_name = args.tensor("indices").or_shape()?;
        let index = match x.placement() {
            Placement::Static => self.constant_index(index_name)?,
            Placement::Batch { axis: 0, .. } => self.uniform_index(index_name, 0)?,
            Placement::Batch { .. } => {
                return Err(arg_error(format!(
                    "max_unpool of `{name}` {} is exported only with the batch first",
                    tensor::show(&x.sizes())
                )))
            }
        };
        let size = args.sizes("output_size", spatial).or_shape()?;
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        let own = self.lifted_any_activation(name)?;
        if own.elem() != elem {
            return Err(arg_error(format!(
                "`{name}` is {} but torch records a {elem} result",
                own.elem()
            )));
        }
        let own_dims = own.shape().to_vec();
        let values = index.to_i64().map_err(arg_error)?;
        let plan = scatter::max_unpool(&own_dims, &values, &size).map_err(arg_error)?;
        if plan.repeated().is_some() {
            return Err(arg_error(scatter::UNPOOL_REPEATED.into()));
        }
        if plan.most_writes() == 0 {
            return Err(arg_error(format!(
                "max_unpool of `{name}` {}, which has no entries (torch refuses an empty plane)",
                tensor::show(&x.sizes())
            )));
        }
        let n = own_dims.iter().product();
        let flat = Flat::Rows(self.flattened(scope, own, n)?);
        let entries = self.round(scope, &flat, &plan, 0, elem)?;
        let zero = self.g.typed_scalar(&format!("{scope}.zero"), 0.0, elem)?;
        let has: Vec<bool> = plan.writes.iter().map(|w| !w.is_empty()).collect();
        let y = self.where_written(scope, &has, &entries, zero.name(), elem)?;
        let mut out_dims = own_dims[..own_dims.len() - spatial].to_vec();
        out_dims.extend(&size);
        let y = self.g.reshape(scope, &y, &out_dims)?;
        self.bind(node, 0, y)
    }

    /// Refuses `op` on `name` when the tensor carries a batch: it `verb` the tensor
    /// flattened, the batch included, so each sample's result depends on its position in
    /// the batch.
    fn whole_tensor(&self, name: &str, op: &str, verb: &str) -> Result<(), OnnxError> {
        let x = self.tensor(name)?;
        if x.placement() == Placement::Static {
            return Ok(());
        }
        Err(arg_error(format!(
            "{op} {verb} `{name}` {} at positions of the whole tensor flattened, the batch included, so a sample's entries depend on its place in the batch; that mixes samples (export with --batch static)",
            tensor::show(&x.sizes())
        )))
    }

    /// The value of the 0-d constant `name` (`index_fill`'s value tensor).
    fn constant_number(&mut self, name: &str, op: &str) -> Result<f64, OnnxError> {
        if !self.is_constant(name) {
            return Err(arg_error(format!(
                "{op} by the computed value `{name}`; only a constant value is exported"
            )));
        }
        let value = self.constant_tensor(name)?;
        match (value.rank(), value.to_f32().as_slice()) {
            (0, &[v]) => Ok(match value.to_i64() {
                Ok(i) if matches!(value.values(), eval::Values::I64(_)) => i[0] as f64,
                _ => f64::from(v),
            }),
            _ => Err(arg_error(format!(
                "{op} by the value `{name}` of sizes {:?}; torch takes a 0-d one",
                value.dims()
            ))),
        }
    }

    /// The constant index (or mask) `name` ([`Lowering::known_positions`]).
    fn constant_index(&mut self, name: &str) -> Result<eval::Tensor, OnnxError> {
        self.known_positions(name)?;
        self.constant_tensor(name)
    }

    /// Refuses a computed index (or mask): the positions must be known at export.
    fn known_positions(&self, name: &str) -> Result<(), OnnxError> {
        if self.is_constant(name) {
            return Ok(());
        }
        Err(arg_error(format!(
            "the positions `{name}` are computed by the graph; the scatter family is exported by constant positions only (opset 11's ScatterElements and ScatterND have no reduction, and their result is undefined where an index repeats)"
        )))
    }

    /// One sample's index of a scatter into a tensor whose batch is on dimension `batch`:
    /// a constant expanded over the batch on that dimension, seen without it.
    fn uniform_index(&self, name: &str, batch: usize) -> Result<eval::Tensor, OnnxError> {
        self.known_positions(name)?;
        match self.uniform(name) {
            Some((t, axis, _)) if axis == batch => {
                let mut dims: Vec<i64> = t.dims().iter().map(|&d| d as i64).collect();
                dims.remove(axis);
                t.reshape(&dims).map_err(arg_error)
            }
            _ => Err(arg_error(format!(
                "the constant index `{name}` has fixed rows along the batch dimension while the batch varies: it writes sample by sample, which treats samples differently; export with --batch static"
            ))),
        }
    }

    /// Torch dimension `dim` of `name` as a dimension of the sizes the plan is built over:
    /// one sample's (refused along the batch, which mixes samples), or a static tensor's.
    fn per_row_dim(&self, name: &str, dim: i64, op: &str) -> Result<i64, OnnxError> {
        let x = self.tensor(name)?;
        let at = tensor::dim(dim, x.rank())?.view_axis();
        Ok(match x.placement() {
            Placement::Static => at as i64,
            Placement::Batch { .. } => x.sample_axis(at, op)? as i64,
        })
    }

    /// `select_scatter`, `diagonal_scatter`, `slice_scatter`: `self` (activation `name`)
    /// with argument `src` written over it where `plan_of` says ([`Lowering::write_plan`]).
    fn write_src(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        name: &str,
        plan_of: impl FnOnce(&[u64], &[u64]) -> Result<Plan, String>,
    ) -> Result<(), OnnxError> {
        let source = Source::Tensor(args.tensor("src").or_shape()?);
        self.write_plan(node, scope, name, source, plan_of, Combine::Replace, true)
    }

    /// `self` (activation `name`) with the writes of `source` that `plan_of` lists (given
    /// the sizes of one row of `self` and of the source), folded by `combine`.
    #[allow(clippy::too_many_arguments)]
    fn write_plan(
        &mut self,
        node: &Node,
        scope: &str,
        name: &str,
        source: Source<'_>,
        plan_of: impl FnOnce(&[u64], &[u64]) -> Result<Plan, String>,
        combine: Combine,
        include_self: bool,
    ) -> Result<(), OnnxError> {
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        if combine == Combine::Mean && elem != ElemType::Float32 {
            return Err(arg_error(format!(
                "scatter_reduce's mean of {elem} entries (torch rounds it down) is not exported"
            )));
        }
        if elem == ElemType::Bool && combine != Combine::Replace {
            return Err(arg_error(
                "a reducing scatter of bool entries is not exported".into(),
            ));
        }
        let own = self.lifted_any_activation(name)?;
        if own.elem() != elem {
            return Err(arg_error(format!(
                "`{name}` is {} but torch records a {elem} result",
                own.elem()
            )));
        }
        let own_dims = own.shape().to_vec();
        let written_once = matches!(source, Source::Number(_));
        let (src, src_dims) = self.flat_source(scope, name, source, elem)?;
        let plan = plan_of(&own_dims, &src_dims).map_err(arg_error)?;
        if combine == Combine::Replace && !written_once && plan.repeated().is_some() {
            return Err(arg_error(format!(
                "its positions write to one position more than once: {}",
                scatter::REPEATED
            )));
        }
        let rounds = plan.most_writes();
        if rounds > MAX_ROUNDS {
            return Err(arg_error(format!(
                "its positions write {rounds} entries to one position; the export folds at most {MAX_ROUNDS} (a round of reads and folds each)"
            )));
        }
        let m = plan.writes.len() as u64;
        let mut acc = self.flattened(scope, own, m)?;
        for k in 0..rounds {
            let has: Vec<bool> = plan.writes.iter().map(|w| w.len() > k).collect();
            let entries = self.round(scope, &src, &plan, k, elem)?;
            let first_alone = k == 0 && !include_self;
            let sums = matches!(combine, Combine::Sum | Combine::Mean);
            let start = if first_alone && sums {
                // torch writes the sum's 0 where `self` is left out (a sum of −0.0 is +0.0).
                let zero = self.g.typed_scalar(&format!("{scope}.zero"), 0.0, elem)?;
                self.where_written(scope, &has, zero.name(), acc.name(), elem)?
            } else {
                acc.clone()
            };
            let folded = if combine == Combine::Replace || (first_alone && !sums) {
                entries
            } else {
                self.scatter_reduced(scope, combine, &start, &entries, elem)?
                    .name()
                    .to_owned()
            };
            acc = self.where_written(scope, &has, &folded, start.name(), elem)?;
        }
        if combine == Combine::Mean {
            let counts: Vec<f64> = plan
                .writes
                .iter()
                .map(|w| (w.len() + usize::from(include_self)).max(1) as f64)
                .collect();
            let counts =
                self.g
                    .typed_constant(&format!("{scope}.counts"), vec![m], &counts, elem)?;
            acc = emit::single(self.g.node(
                "Div",
                scope,
                vec![acc.name().to_owned(), counts.name().to_owned()],
                vec![],
                vec![vec![m]],
            ));
        }
        let y = if own_dims == [m] {
            acc
        } else {
            self.g.reshape(scope, &acc, &own_dims)?
        };
        self.bind(node, 0, y)
    }

    /// Entry `v` of a constant source times `index_add`'s `alpha`, at element type `elem`
    /// (float32 products rounded to float32, integers multiplied as int64).
    fn scaled_entry(v: f64, alpha: f64, elem: ElemType) -> f64 {
        if elem.is_integer() {
            (v as i64).wrapping_mul(alpha as i64) as f64
        } else {
            f64::from(v as f32 * alpha as f32)
        }
    }

    /// Constant source `s` of a scatter into `name`: as it is, or, when it has the rank of
    /// `name` which carries a batch, seen without its size-1 dimension there (the same
    /// source for every sample); one with more entries there is refused, as each sample
    /// would take entries of its own by its position in the batch.
    fn per_sample_constant(&mut self, name: &str, s: &str) -> Result<eval::Tensor, OnnxError> {
        let c = self.constant_tensor(s)?;
        let x = self.tensor(name)?;
        let Some(batch) = x.batch_axis().filter(|_| c.rank() == x.rank()) else {
            return Ok(c);
        };
        if let Some(why) = tensor::constant_meets_batch("the scatter", s, c.dims(), &x.sizes()) {
            return Err(arg_error(why));
        }
        let mut dims: Vec<i64> = c.dims().iter().map(|&d| d as i64).collect();
        dims.remove(batch);
        c.reshape(&dims).map_err(arg_error)
    }

    /// Rows `v` as one flat row of `m` entries.
    fn flattened(&mut self, scope: &str, v: Value, m: u64) -> Result<Value, OnnxError> {
        if v.shape() == [m] {
            return Ok(v);
        }
        self.g.reshape(scope, &v, &[m])
    }

    /// The source flattened, and the sizes of one row of it.
    fn flat_source(
        &mut self,
        scope: &str,
        name: &str,
        source: Source<'_>,
        elem: ElemType,
    ) -> Result<(Flat, Vec<u64>), OnnxError> {
        Ok(match source {
            Source::Number(v) => {
                let number = self.g.typed_scalar(&format!("{scope}.value"), v, elem)?;
                (Flat::Number(number), Vec::new())
            }
            Source::Scaled(s, alpha) => {
                let (flat, dims) = self.flat_source(scope, name, Source::Tensor(s), elem)?;
                let flat = match flat {
                    Flat::Values(values) => Flat::Values(
                        values
                            .iter()
                            .map(|&v| Self::scaled_entry(v, alpha, elem))
                            .collect(),
                    ),
                    Flat::Rows(v) => {
                        let factor = self
                            .g
                            .typed_scalar(&format!("{scope}.alpha"), alpha, elem)?;
                        let n = v.shape().to_vec();
                        Flat::Rows(emit::single(self.g.node(
                            "Mul",
                            scope,
                            vec![v.name().to_owned(), factor.name().to_owned()],
                            vec![],
                            vec![n],
                        )))
                    }
                    Flat::Number(w) => Flat::Number(w),
                };
                (flat, dims)
            }
            Source::Tensor(s) if self.is_constant(s) => {
                // With a batch, the plan is one sample's: a constant that reached the batch
                // dimension would have a dimension more than the plan's sizes of one
                // sample take (torch's source has `self`'s rank for `scatter` and
                // `slice_scatter`, the view's for `select_scatter`), so the plan refuses it;
                // `index_put`'s values of lower rank are the same for every sample.
                let c = self.per_sample_constant(name, s)?;
                let values = Self::initializer_values(&c, elem);
                (Flat::Values(values), c.dims().to_vec())
            }
            Source::Tensor(s) => {
                let v = self.lifted_any_activation(s)?;
                if v.elem() != elem {
                    return Err(arg_error(format!(
                        "the source `{s}` is {} but `{name}` is {elem}; torch's scatter ops take one element type",
                        v.elem()
                    )));
                }
                let dims = v.shape().to_vec();
                let flat = self.flattened(scope, v, dims.iter().product())?;
                (Flat::Rows(flat), dims)
            }
        })
    }

    /// Round `k`'s entries, one per position of the result (the name of a value or a
    /// constant): the `k`-th entry of the source written there (any entry where none is).
    fn round(
        &mut self,
        scope: &str,
        src: &Flat,
        plan: &Plan,
        k: usize,
        elem: ElemType,
    ) -> Result<String, OnnxError> {
        let m = plan.writes.len() as u64;
        Ok(match src {
            Flat::Number(w) => w.name().to_owned(),
            Flat::Values(values) => {
                let picked = filled(plan, k, values.len())
                    .into_iter()
                    .map(|p| values.get(p as usize).copied())
                    .collect::<Option<Vec<f64>>>()
                    .ok_or_else(|| arg_error("a source position beyond the source".into()))?;
                self.g
                    .typed_constant(&format!("{scope}.entries"), vec![m], &picked, elem)?
                    .name()
                    .to_owned()
            }
            Flat::Rows(v) => {
                let positions = filled(plan, k, v.shape()[0] as usize);
                self.gathered(scope, v, &positions, m)?.name().to_owned()
            }
        })
    }

    /// Flat rows `v` at `positions`, one per entry of the result: in a static export (one
    /// lifted row) a GatherElements by a constant `[1, m]` index; with a batch (whose rows
    /// no constant index can match without Expand, which ATC refuses) a Slice per run of
    /// consecutive positions, concatenated, at most [`MAX_RUNS`] of them.
    fn gathered(
        &mut self,
        scope: &str,
        v: &Value,
        positions: &[i64],
        m: u64,
    ) -> Result<Value, OnnxError> {
        if self.is_lifted() {
            let index = self.g.typed_constant(
                &format!("{scope}.positions"),
                vec![1, m],
                &positions.iter().map(|&p| p as f64).collect::<Vec<_>>(),
                ElemType::Int64,
            )?;
            return Ok(emit::single(self.g.node(
                "GatherElements",
                scope,
                vec![v.name().to_owned(), index.name().to_owned()],
                vec![("axis", Attr::Int(1))],
                vec![vec![m]],
            )));
        }
        let runs = super::index::runs(positions, v.shape()[0]).map_err(arg_error)?;
        if runs.len() > MAX_RUNS {
            return Err(arg_error(format!(
                "its positions read the source in {} runs of consecutive entries per sample; with a batch the export writes a Slice per run, at most {MAX_RUNS}",
                runs.len()
            )));
        }
        self.take_values(scope, v, 0, positions)
    }

    /// `Where(has, written, kept)`: `written` at the positions `has` marks (a constant
    /// mask, left out when it marks all), `kept` elsewhere.
    fn where_written(
        &mut self,
        scope: &str,
        has: &[bool],
        written: &str,
        kept: &str,
        elem: ElemType,
    ) -> Result<Value, OnnxError> {
        let m = has.len() as u64;
        let mask: Vec<f64> = has.iter().map(|&h| f64::from(u8::from(h))).collect();
        let mask =
            self.g
                .typed_constant(&format!("{scope}.written"), vec![m], &mask, ElemType::Bool)?;
        let inputs = vec![mask.name().to_owned(), written.to_owned(), kept.to_owned()];
        Ok(emit::single(self.g.typed_node(
            "Where",
            scope,
            inputs,
            vec![],
            vec![(vec![m], elem)],
        )))
    }

    /// `acc` combined with `entries` by a reduction, element by element: Add, Mul, and
    /// Max/Min (NaN-propagating) for floats; an integer extreme by Less and Where (opset
    /// 11's Max and Min take floats only).
    fn scatter_reduced(
        &mut self,
        scope: &str,
        combine: Combine,
        acc: &Value,
        entries: &str,
        elem: ElemType,
    ) -> Result<Value, OnnxError> {
        let m = acc.shape().to_vec();
        let pair = vec![acc.name().to_owned(), entries.to_owned()];
        let op = match (combine, elem) {
            (Combine::Sum | Combine::Mean, _) => "Add",
            (Combine::Prod, _) => "Mul",
            (Combine::Amax, ElemType::Float32) => "Max",
            (Combine::Amin, ElemType::Float32) => "Min",
            (Combine::Amax | Combine::Amin, _) => {
                let (a, b) = if combine == Combine::Amax {
                    (acc.name().to_owned(), entries.to_owned())
                } else {
                    (entries.to_owned(), acc.name().to_owned())
                };
                // amax: acc < entry picks the entry; amin: entry < acc does.
                let less = emit::single(self.g.typed_node(
                    "Less",
                    scope,
                    vec![a, b],
                    vec![],
                    vec![(m.clone(), ElemType::Bool)],
                ));
                return Ok(emit::single(self.g.typed_node(
                    "Where",
                    scope,
                    vec![
                        less.name().to_owned(),
                        entries.to_owned(),
                        acc.name().to_owned(),
                    ],
                    vec![],
                    vec![(m, elem)],
                )));
            }
            (Combine::Replace, _) => {
                return Err(arg_error("a plain write is not a reduction".into()))
            }
        };
        Ok(emit::single(self.g.node(op, scope, pair, vec![], vec![m])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritten_positions_extend_the_previous_run_within_the_source() {
        let plan = Plan {
            writes: vec![vec![4], vec![], vec![], vec![1, 2], vec![]],
        };
        // Round 0: 4, then 5 → wraps to 0 for a source of 5, 1, then 1, 2.
        assert_eq!(filled(&plan, 0, 5), vec![4, 0, 1, 1, 2]);
        // Round 1: only position 3 has a second entry.
        assert_eq!(filled(&plan, 1, 5), vec![0, 1, 2, 2, 3]);
    }
}
