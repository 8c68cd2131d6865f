//! The gradients of normalisations with respect to their input, as torch's decompositions
//! compute them: `native_layer_norm_backward` and `native_group_norm_backward`. The
//! gradients of the weight and bias sum over every sample, so a backward node (these and
//! `convolution_backward`) whose `output_mask` asks for one that is read is refused.

use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::program::{Argument, Node};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, OrShape};

/// The gradients a backward node's `output_mask` asks for (input, weight, bias).
pub(super) fn output_mask(args: &Args<'_>) -> Result<[bool; 3], OnnxError> {
    match args.get("output_mask") {
        Some(Argument::Bools(mask)) => <[bool; 3]>::try_from(mask.as_slice())
            .map_err(|_| arg_error(format!("output_mask {mask:?} (torch takes 3 flags)"))),
        other => Err(arg_error(format!(
            "output_mask is {}",
            other.map_or("missing", Argument::kind)
        ))),
    }
}

impl Lowering<'_, '_> {
    /// Refuses the weight and bias gradients (outputs 1 and 2) of backward node `node`
    /// when its `output_mask` asks for them and they are read: each sums over every
    /// sample. Unread or not asked for, they are marked not computed.
    pub(super) fn refuse_parameter_grads(
        &mut self,
        node: &Node,
        op: &str,
        mask: [bool; 3],
    ) -> Result<(), OnnxError> {
        for (k, what) in [(1, "weight"), (2, "bias")] {
            let read = node
                .outputs
                .get(k)
                .and_then(Argument::tensor_name)
                .is_some_and(|name| !self.readers_of(name).is_empty());
            if mask[k] && read {
                return Err(arg_error(format!(
                    "{op}'s gradient of the {what} (output {k}) sums over every sample, which mixes samples; only the input's gradient is exported (output_mask [True, False, False])"
                )));
            }
        }
        self.unproduced_from(node, 1);
        Ok(())
    }

    /// `native_layer_norm_backward`'s gradient of the input, by torch's decomposition
    /// (`native_layer_norm_backward` in `torch/_decomp/decompositions.py`): with
    /// `x̂ = (x − mean)·rstd`, `g = grad_out·weight` (or `grad_out`) and `N` the number of
    /// normalised entries, `rstd/N · (N·g − Σg − x̂·Σ(g·x̂))`, the sums over the
    /// normalised axes.
    pub(super) fn layer_norm_backward(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let op = "native_layer_norm_backward";
        let mask = output_mask(args)?;
        self.refuse_parameter_grads(node, op, mask)?;
        if !mask[0] {
            self.unproduced_output(node, 0);
            return Ok(());
        }
        let (t, x, axes) = self.trailing_norm_input(args, op, scope)?;
        let read = |l: &mut Self, name: &str| -> Result<_, OnnxError> {
            let v = l.tensor(args.tensor(name).or_shape()?)?;
            l.rows_input(&v, scope)
        };
        let grad = read(self, "grad_out")?;
        let mean = read(self, "mean")?;
        let rstd = read(self, "rstd")?;
        if grad.shape() != x.shape() {
            return Err(arg_error(format!(
                "{op} of a gradient of per-sample {:?} for an input of {:?}",
                grad.shape(),
                x.shape()
            )));
        }
        let n: u64 = axes.iter().map(|&a| x.shape()[a]).product();
        let act = Operand::Activation;
        let bin = |l: &mut Self, o: &'static str, a: Operand<'_>, b: Operand<'_>| {
            emit::binary(&mut l.g, o, scope, a, b)
        };
        let centred = bin(self, "Sub", act(&x), act(&mean))?;
        let x_hat = bin(self, "Mul", act(&centred), act(&rstd))?;
        let g = match args.optional_tensor("weight").or_shape()? {
            Some(w) => {
                let w = self.weight(&self.constant(w)?)?;
                bin(self, "Mul", act(&grad), Operand::Constant(&w))?
            }
            None => grad,
        };
        let count = self.g.constant_scalar(&format!("{scope}.count"), n as f32);
        let a = bin(self, "Mul", act(&g), Operand::Constant(&count))?;
        let b = self.g.reduce("ReduceSum", scope, &g, &axes, true)?;
        let c1 = bin(self, "Mul", act(&g), act(&x_hat))?;
        let c2 = self.g.reduce("ReduceSum", scope, &c1, &axes, true)?;
        let c3 = bin(self, "Mul", act(&x_hat), act(&c2))?;
        let inner = bin(self, "Sub", act(&a), act(&b))?;
        let inner = bin(self, "Sub", act(&inner), act(&c3))?;
        let scale = bin(self, "Div", act(&rstd), Operand::Constant(&count))?;
        let d = bin(self, "Mul", act(&scale), act(&inner))?;
        let d = self.rows_result(&t, d, scope)?;
        self.bind_tensor(node, 0, d)
    }

    /// `native_group_norm_backward`'s gradient of the input, by torch's decomposition
    /// (`native_group_norm_backward` in `torch/_decomp/decompositions.py`), per sample
    /// with the input `[C, …]` seen as `[G, C/G, H·W]` and `mean`, `rstd` `[G]`:
    /// `ds`, `db` the sums of `grad·x` and `grad` over each channel, `ds_val`, `db_val`
    /// their sums over each group weighted by `γ`, `s = 1/(H·W·C/G)`,
    /// `c2 = (db_val·mean − ds_val)·rstd³·s`, `c3 = −c2·mean − db_val·rstd·s`, and the
    /// gradient `grad·rstd·γ + x·c2 + c3`. `N` (the batch) is not read.
    pub(super) fn group_norm_backward(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let op = "native_group_norm_backward";
        let mask = output_mask(args)?;
        self.refuse_parameter_grads(node, op, mask)?;
        if !mask[0] {
            self.unproduced_output(node, 0);
            return Ok(());
        }
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let grad = self.activation(args.tensor("grad_out").or_shape()?)?;
        let mean = self.activation(args.tensor("mean").or_shape()?)?;
        let rstd = self.activation(args.tensor("rstd").or_shape()?)?;
        let groups = u64::try_from(args.int("group").or_shape()?).unwrap_or(0);
        let channels = x.shape().first().copied().unwrap_or(0);
        let per_group_stats = [groups];
        if groups == 0
            || channels % groups != 0
            || grad.shape() != x.shape()
            || mean.shape() != per_group_stats
            || rstd.shape() != per_group_stats
        {
            return Err(arg_error(format!(
                "{op} of a gradient of per-sample {:?} for an input of {:?} in {groups} groups, with statistics of {:?}",
                grad.shape(),
                x.shape(),
                mean.shape()
            )));
        }
        let cpg = channels / groups;
        let hw: u64 = x.shape()[1..].iter().product();
        let grouped = [groups, cpg, hw];
        let go = self.g.reshape(scope, &grad, &grouped)?;
        let xg = self.g.reshape(scope, &x, &grouped)?;
        let mean = self.g.reshape(scope, &mean, &[groups, 1, 1])?;
        let rstd = self.g.reshape(scope, &rstd, &[groups, 1, 1])?;
        let act = Operand::Activation;
        let bin = |l: &mut Self, o: &'static str, a: Operand<'_>, b: Operand<'_>| {
            emit::binary(&mut l.g, o, scope, a, b)
        };
        let gx = bin(self, "Mul", act(&go), act(&xg))?;
        let ds = self.g.reduce("ReduceSum", scope, &gx, &[2], true)?;
        let db = self.g.reduce("ReduceSum", scope, &go, &[2], true)?;
        let gamma = match args.optional_tensor("weight").or_shape()? {
            Some(_) => {
                Some(self.affine(args, "weight", node.label(), vec![groups, cpg, 1], 1.0)?)
            }
            None => None,
        };
        let (ds, db, c1) = match &gamma {
            Some(gamma) => {
                let ds = bin(self, "Mul", act(&ds), Operand::Constant(gamma))?;
                let db = bin(self, "Mul", act(&db), Operand::Constant(gamma))?;
                let c1 = bin(self, "Mul", act(&rstd), Operand::Constant(gamma))?;
                (ds, db, c1)
            }
            None => (ds, db, rstd.clone()),
        };
        let ds_val = self.g.reduce("ReduceSum", scope, &ds, &[1], true)?;
        let db_val = self.g.reduce("ReduceSum", scope, &db, &[1], true)?;
        let s = self
            .g
            .constant_scalar(&format!("{scope}.s"), (1.0 / (hw * cpg) as f64) as f32);
        let c2 = bin(self, "Mul", act(&db_val), act(&mean))?;
        let c2 = bin(self, "Sub", act(&c2), act(&ds_val))?;
        let c2 = bin(self, "Mul", act(&c2), act(&rstd))?;
        let c2 = bin(self, "Mul", act(&c2), act(&rstd))?;
        let c2 = bin(self, "Mul", act(&c2), act(&rstd))?;
        let c2 = bin(self, "Mul", act(&c2), Operand::Constant(&s))?;
        let neg = self.g.unary("Neg", scope, &c2, vec![]);
        let c3 = bin(self, "Mul", act(&neg), act(&mean))?;
        let c3b = bin(self, "Mul", act(&db_val), act(&rstd))?;
        let c3b = bin(self, "Mul", act(&c3b), Operand::Constant(&s))?;
        let c3 = bin(self, "Sub", act(&c3), act(&c3b))?;
        let d = bin(self, "Mul", act(&go), act(&c1))?;
        let e = bin(self, "Mul", act(&xg), act(&c2))?;
        let d = bin(self, "Add", act(&d), act(&e))?;
        let d = bin(self, "Add", act(&d), act(&c3))?;
        let d = self.g.reshape(scope, &d, x.shape())?;
        self.bind(node, 0, d)
    }
}
