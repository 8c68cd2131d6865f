//! `linalg_matrix_norm` and `linalg_norm` by [`ckpt_aten::matrix_norm`]'s plan: a vector
//! norm (the Frobenius norm among them) as `linalg_vector_norm` lowers it; the orders ±1
//! and ±∞ as an Abs, a ReduceSum along one dimension and a ReduceMax (ReduceMin) along
//! the other, as `torch._refs.linalg.matrix_norm` computes them; the norms of singular
//! values (±2, `'nuc'`) unrolled over the matrices' entries (`linalg`'s lowering).

use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::matrix_norm::{MatrixNorm, Norm, Order};
use ckpt_aten::program::{Argument, NamedArgument, Node};
use ckpt_aten::schema::{self, DefaultValue};

use super::super::lower::Lowering;
use super::{arg_error, row_axis, OrShape};

/// Argument `ord` of `node`: a name (`'fro'`, `'nuc'`), a number, or `None`; absent, its
/// schema default.
fn order(node: &Node, args: &Args<'_>) -> Result<Option<Order>, OnnxError> {
    let missing = || arg_error("argument `ord` is missing".into());
    match args.get("ord") {
        Some(Argument::String(name)) => Order::named(name).map(Some).or_shape(),
        Some(Argument::Float(f)) => Ok(Some(Order::Number(*f))),
        Some(Argument::Int(i)) => Ok(Some(Order::Number(*i as f64))),
        Some(Argument::None) => Ok(None),
        None => match schema::lookup(&node.target).and_then(|s| s.default("ord")) {
            Some(DefaultValue::Str(name)) => Order::named(name).map(Some).or_shape(),
            Some(DefaultValue::None) => Ok(None),
            _ => Err(missing()),
        },
        Some(other) => Err(arg_error(format!(
            "argument `ord` is {}, expected a number or a name",
            other.kind()
        ))),
    }
}

impl Lowering<'_, '_> {
    /// `linalg_matrix_norm(self, ord, dim, keepdim)`.
    pub(super) fn matrix_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let rank = self.tensor(args.tensor("self").or_shape()?)?.rank();
        let ord = order(node, args)?
            .ok_or_else(|| arg_error("a matrix norm needs an order (`ord`)".into()))?;
        let keep = args.bool("keepdim").or_shape()?;
        let plan = MatrixNorm::plan(ord, &args.ints("dim", 2).or_shape()?, rank, keep)
            .map_err(arg_error)?;
        self.norm_by(node, args, scope, Norm::Matrix(plan))
    }

    /// `linalg_norm(self, ord, dim, keepdim)`: a vector or a matrix norm, as
    /// [`Norm::plan`] decides.
    pub(super) fn linalg_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let rank = self.tensor(args.tensor("self").or_shape()?)?.rank();
        let ord = order(node, args)?;
        let keep = args.bool("keepdim").or_shape()?;
        let dim = args.optional_ints("dim").or_shape()?;
        let plan = Norm::plan(ord, dim, rank, keep).map_err(arg_error)?;
        self.norm_by(node, args, scope, plan)
    }

    fn norm_by(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        plan: Norm,
    ) -> Result<(), OnnxError> {
        let (summed, extreme, largest) = match plan {
            Norm::Vector { ord, dim } => {
                let dim = dim.map_or(Argument::None, Argument::Ints);
                return self.as_vector_norm(node, scope, ord, dim);
            }
            Norm::Matrix(MatrixNorm::Frobenius(axes)) => {
                let dim = Argument::Ints(axes.iter().map(|&a| a as i64).collect());
                return self.as_vector_norm(node, scope, 2.0, dim);
            }
            Norm::Matrix(MatrixNorm::Induced {
                summed,
                extreme,
                largest,
            }) => (summed, extreme, largest),
            Norm::Matrix(MatrixNorm::Spectral { norm, dims }) => {
                return self.spectral_norm(node, args, scope, norm, dims)
            }
        };
        self.same_dtype(node, args, "linalg_matrix_norm")?;
        let keep = args.bool("keepdim").or_shape()?;
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let lifted = self.is_lifted();
        let along = row_axis(summed as i64, &x, lifted)?;
        let abs = self.g.unary("Abs", scope, &x, vec![]);
        let sums = self.g.reduce("ReduceSum", scope, &abs, &[along], keep)?;
        let across = row_axis(extreme as i64, &sums, lifted)?;
        let op = if largest { "ReduceMax" } else { "ReduceMin" };
        let y = self.g.reduce(op, scope, &sums, &[across], keep)?;
        self.bind(node, 0, y)
    }

    /// `node` lowered as `linalg_vector_norm(self, ord, dim, keepdim, dtype)` with its own
    /// `self`, `keepdim` and `dtype`.
    fn as_vector_norm(
        &mut self,
        node: &Node,
        scope: &str,
        ord: f64,
        dim: Argument,
    ) -> Result<(), OnnxError> {
        let mut vector = node.clone();
        vector.target = "torch.ops.aten.linalg_vector_norm.default".into();
        vector
            .inputs
            .retain(|a| !matches!(a.name.as_str(), "ord" | "dim"));
        vector.inputs.push(NamedArgument {
            name: "ord".into(),
            arg: Argument::Float(ord),
        });
        vector.inputs.push(NamedArgument {
            name: "dim".into(),
            arg: dim,
        });
        self.vector_norm(&vector, &Args(&vector), scope)
    }
}
