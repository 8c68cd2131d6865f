//! Matrix products: `matmul`, `bmm` and `baddbmm` on batch-first activations (the batch is
//! the leading dimension torch batches over, so a per-sample MatMul is exact). Leading
//! dimensions must agree: torch's broadcasting of them is not exported.

use crate::onnx::graph::Value;
use crate::onnx::OnnxError;
use crate::torch::pt2::schema::Node;

use super::super::args::Args;
use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, reject_extra, OrShape};

impl<'p> Lowering<'p, '_> {
    /// `matmul(self, other)`: two activations of one per-sample rank (at least 2), or an
    /// activation times a constant `[K, N]` matrix.
    pub(super) fn matmul(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "other"])?;
        let a = self.activation(args.tensor("self").or_shape()?)?;
        let other = args.tensor("other").or_shape()?;
        let y = if self.is_constant(other) {
            let w = self.weight(&self.constant(other)?)?;
            if a.shape().len() < 2 {
                return Err(arg_error(format!(
                    "matmul of per-sample {:?} by `{}`: a per-sample vector is not exported",
                    a.shape(),
                    w.name()
                )));
            }
            self.g.matmul(scope, &a, &w)?
        } else {
            let b = self.activation(other)?;
            self.product(&a, &b, scope)?
        };
        self.bind(node, 0, y)
    }

    /// `bmm(self, mat2)`: `[N, n, m] × [N, m, p]`.
    pub(super) fn bmm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "mat2"])?;
        let a = self.activation(args.tensor("self").or_shape()?)?;
        let b = self.activation(args.tensor("mat2").or_shape()?)?;
        let y = self.product(&a, &b, scope)?;
        self.bind(node, 0, y)
    }

    /// `baddbmm(self, batch1, batch2, beta, alpha)`: `beta · self + alpha · (batch1 ×
    /// batch2)`; `self` is an activation or a constant that broadcasts to the product
    /// without the batch; with `beta = 0` it is not read (as in torch).
    pub(super) fn baddbmm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "batch1", "batch2", "beta", "alpha"])?;
        let a = self.activation(args.tensor("batch1").or_shape()?)?;
        let b = self.activation(args.tensor("batch2").or_shape()?)?;
        let beta = args.float_or("beta", 1.0).or_shape()? as f32;
        let alpha = args.float_or("alpha", 1.0).or_shape()? as f32;
        let mut y = self.product(&a, &b, scope)?;
        if alpha != 1.0 {
            let c = self.g.constant_scalar(&format!("{scope}.alpha"), alpha);
            y = self.g.mul_constant(scope, &y, &c)?;
        }
        if beta == 0.0 {
            return self.bind(node, 0, y);
        }
        let input = args.tensor("self").or_shape()?;
        let y = if self.is_constant(input) {
            let mut c = self.weight(&self.constant(input)?)?;
            if beta != 1.0 {
                let values: Vec<f32> = self.read(&self.constant(input)?)?;
                let scaled: Vec<f32> = values.iter().map(|v| v * beta).collect();
                c = self
                    .g
                    .weight(&format!("{}.beta", c.name()), c.dims().to_vec(), &scaled)?;
            }
            emit::binary(
                &mut self.g,
                "Add",
                scope,
                Operand::Activation(&y),
                Operand::Constant(&c),
            )?
        } else {
            let mut s = self.activation(input)?;
            if beta != 1.0 {
                let c = self.g.constant_scalar(&format!("{scope}.beta"), beta);
                s = self.g.mul_constant(scope, &s, &c)?;
            }
            emit::binary(
                &mut self.g,
                "Add",
                scope,
                Operand::Activation(&s),
                Operand::Activation(&y),
            )?
        };
        self.bind(node, 0, y)
    }

    /// `a × b` over the last two axes; leading axes must be equal.
    fn product(&mut self, a: &Value, b: &Value, scope: &str) -> Result<Value, OnnxError> {
        if a.shape().len() < 2 || b.shape().len() != a.shape().len() {
            return Err(arg_error(format!(
                "matrix product of per-sample {:?} and {:?}: equal ranks of at least 2 per sample are exported",
                a.shape(),
                b.shape()
            )));
        }
        self.g.matmul_activations(scope, a, b)
    }
}
