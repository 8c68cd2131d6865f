//! Matrix products: `matmul`, `bmm` and `baddbmm`. The batch must be one of the leading
//! dimensions the product batches over (on the same dimension of both operands, the same
//! number of times), so the ONNX MatMul is exact; a product over the batch dimension mixes
//! samples. Leading dimensions must agree: torch's broadcasting of them is not exported.

use crate::onnx::OnnxError;
use crate::torch::pt2::schema::Node;

use super::super::args::Args;
use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::{self, Tensor};
use super::{arg_error, reject_extra, OrShape};

impl<'p> Lowering<'p, '_> {
    /// `matmul(self, other)`: two activations of one rank (at least 3), or an activation
    /// (at least 2-D, the batch not last) times a constant `[K, N]` matrix.
    pub(super) fn matmul(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "other"])?;
        let a = self.tensor(args.tensor("self").or_shape()?)?;
        let other = args.tensor("other").or_shape()?;
        let y = if self.is_constant(other) {
            let w = self.weight(&self.constant(other)?)?;
            if a.rank() < 2 {
                return Err(arg_error(format!(
                    "matmul of {} by `{}`: a vector is not exported",
                    tensor::show(&a.sizes()),
                    w.name()
                )));
            }
            a.sample_axis(a.rank() - 1, "matmul")?;
            let y = self.g.matmul(scope, a.value(), &w)?;
            a.with_value(y)?
        } else {
            let b = self.tensor(other)?;
            self.product(&a, &b, scope)?
        };
        self.bind_tensor(node, 0, y)
    }

    /// `bmm(self, mat2)`: `[N, n, m] × [N, m, p]`.
    pub(super) fn bmm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "mat2"])?;
        let a = self.tensor(args.tensor("self").or_shape()?)?;
        let b = self.tensor(args.tensor("mat2").or_shape()?)?;
        let y = self.product(&a, &b, scope)?;
        self.bind_tensor(node, 0, y)
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
        let a = self.tensor(args.tensor("batch1").or_shape()?)?;
        let b = self.tensor(args.tensor("batch2").or_shape()?)?;
        let beta = args.float_or("beta", 1.0).or_shape()? as f32;
        let alpha = args.float_or("alpha", 1.0).or_shape()? as f32;
        let mut y = self.product(&a, &b, scope)?;
        if alpha != 1.0 {
            let c = self.g.constant_scalar(&format!("{scope}.alpha"), alpha);
            y = y.with_constant(&mut self.g, scope, "Mul", &c, false)?;
        }
        if beta == 0.0 {
            return self.bind_tensor(node, 0, y);
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
            y.with_constant(&mut self.g, scope, "Add", &c, false)?
        } else {
            let mut s = self.tensor(input)?;
            if !s.same_batch(&y) {
                return Err(arg_error(format!(
                    "baddbmm adds {} to a product of {}",
                    tensor::show(&s.sizes()),
                    tensor::show(&y.sizes())
                )));
            }
            if beta != 1.0 {
                let c = self.g.constant_scalar(&format!("{scope}.beta"), beta);
                s = s.with_constant(&mut self.g, scope, "Mul", &c, false)?;
            }
            let sum = emit::binary(
                &mut self.g,
                "Add",
                scope,
                Operand::Activation(s.value()),
                Operand::Activation(y.value()),
            )?;
            y.with_value(sum)?
        };
        self.bind_tensor(node, 0, y)
    }

    /// `a × b` over the last two dimensions; the leading ones, the batch among them,
    /// must be equal.
    fn product(&mut self, a: &Tensor, b: &Tensor, scope: &str) -> Result<Tensor, OnnxError> {
        if a.rank() < 3 || !a.same_batch(b) {
            return Err(arg_error(format!(
                "matrix product of {} and {}: equal ranks of at least 3 with the batch on the same dimension are exported",
                tensor::show(&a.sizes()),
                tensor::show(&b.sizes())
            )));
        }
        a.sample_axis(a.rank() - 1, "matmul")?;
        a.sample_axis(a.rank() - 2, "matmul")?;
        let y = self.g.matmul_activations(scope, a.value(), b.value())?;
        a.with_value(y)
    }
}
