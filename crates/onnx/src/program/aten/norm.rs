//! `instance_norm` and `group_norm` as ONNX `InstanceNormalization` (which ATC parses at
//! opsets 9–13): group norm reshapes each sample to `[groups, rest]`, normalises each
//! group as one instance, reshapes back and applies the per-channel affine.

use crate::graph::{Attr, Value, Weight};
use crate::OnnxError;
use ckpt_aten::program::Node;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

impl<'p> Lowering<'p, '_> {
    /// Optional affine parameter `name` (`[C]`) as an initializer shaped `dims`, or `fill`.
    pub(super) fn affine(
        &mut self,
        args: &Args<'_>,
        name: &str,
        label: &str,
        dims: Vec<u64>,
        fill: f32,
    ) -> Result<Weight, OnnxError> {
        let count = dims.iter().product::<u64>() as usize;
        let (hint, values) = match args.optional_tensor(name).or_shape()? {
            Some(t) => {
                let fqn = self.constant(t)?;
                let values = self.read(&fqn)?;
                if values.len() != count {
                    return Err(arg_error(format!(
                        "`{fqn}` holds {} values, expected {count}",
                        values.len()
                    )));
                }
                (format!("{fqn}.{label}"), values)
            }
            None => (format!("{label}.{name}"), vec![fill; count]),
        };
        self.g.folded(&hint, dims, &values)
    }

    fn instance_normalization(
        &mut self,
        scope: &str,
        x: &Value,
        scale: &Weight,
        bias: &Weight,
        eps: f32,
    ) -> Value {
        let inputs = vec![
            x.name().to_owned(),
            scale.name().to_owned(),
            bias.name().to_owned(),
        ];
        let attrs = vec![("epsilon", Attr::Float(eps))];
        let shape = x.shape().to_vec();
        let mut out = self
            .g
            .node("InstanceNormalization", scope, inputs, attrs, vec![shape]);
        out.swap_remove(0)
    }

    /// `instance_norm` with the input's own statistics (`InstanceNorm2d`'s default), or
    /// with running statistics (`use_input_stats=False`: `track_running_stats=True` in eval
    /// mode), which normalise as an eval-mode BatchNorm by them.
    pub(super) fn instance_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if !args.bool("use_input_stats").or_shape()? {
            return self.batch_norm(node, args, scope);
        }
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let Some(&channels) = x.shape().first().filter(|_| x.shape().len() >= 2) else {
            return Err(arg_error(format!(
                "instance_norm of per-sample {:?}",
                x.shape()
            )));
        };
        let label = node.label();
        let scale = self.affine(args, "weight", label, vec![channels], 1.0)?;
        let bias = self.affine(args, "bias", label, vec![channels], 0.0)?;
        let eps = args.float("eps").or_shape()? as f32;
        let y = self.instance_normalization(scope, &x, &scale, &bias, eps);
        self.bind(node, 0, y)
    }

    /// `group_norm`: per-sample `[C, …]` as `[G, C/G·…]`, InstanceNormalization, back to
    /// `[C, …]`, then `· weight + bias` per channel.
    pub(super) fn group_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("input").or_shape()?)?;
        // `native_group_norm` names the count `group` (with `N`, `C` and `HxW`, which the
        // tensor's own sizes give) and returns each group's mean and 1/√(variance + ε).
        let native = args.get("num_groups").is_none();
        let groups = args
            .int(if native { "group" } else { "num_groups" })
            .or_shape()?;
        let (Some(&channels), Ok(groups)) = (x.shape().first(), u64::try_from(groups)) else {
            return Err(arg_error(format!(
                "group_norm of per-sample {:?} in {groups} groups",
                x.shape()
            )));
        };
        if groups == 0 || channels % groups != 0 {
            return Err(arg_error(format!(
                "group_norm of per-sample {:?} in {groups} groups",
                x.shape()
            )));
        }
        let numel: u64 = x.shape().iter().product();
        let label = node.label();
        let eps = args.float("eps").or_shape()? as f32;
        let grouped = self.g.reshape(scope, &x, &[groups, numel / groups])?;
        let ones = self.g.folded(
            &format!("{label}.group_scale"),
            vec![groups],
            &vec![1.0; groups as usize],
        )?;
        let zeros = self.g.folded(
            &format!("{label}.group_bias"),
            vec![groups],
            &vec![0.0; groups as usize],
        )?;
        let normed = self.instance_normalization(scope, &grouped, &ones, &zeros, eps);
        if native {
            self.group_statistics(node, scope, &grouped, eps)?;
        }
        let mut y = self.g.reshape(scope, &normed, x.shape())?;
        let per_channel: Vec<u64> = std::iter::once(channels)
            .chain(x.shape()[1..].iter().map(|_| 1))
            .collect();
        for (name, fill, op) in [("weight", 1.0, "Mul"), ("bias", 0.0, "Add")] {
            if args.optional_tensor(name).or_shape()?.is_some() {
                let w = self.affine(args, name, label, per_channel.clone(), fill)?;
                y = emit::binary(
                    &mut self.g,
                    op,
                    scope,
                    Operand::Activation(&y),
                    Operand::Constant(&w),
                )?;
            }
        }
        self.bind(node, 0, y)
    }

    /// `native_group_norm`'s outputs 1 and 2 where the program reads them: each group's
    /// mean and `1 / √(variance + ε)` (biased variance), per sample `[groups]`, from the
    /// input viewed as `[groups, elements]`.
    fn group_statistics(
        &mut self,
        node: &Node,
        scope: &str,
        grouped: &Value,
        eps: f32,
    ) -> Result<(), OnnxError> {
        let wanted = [1, 2].map(|k| self.output_name(node, k).is_ok());
        if wanted == [false, false] {
            return Ok(());
        }
        let g = &mut self.g;
        let mean = g.reduce_mean(scope, grouped, &[1], true)?;
        let centred = g.sub(scope, grouped, &mean)?;
        let squared = g.mul(scope, &centred, &centred)?;
        let variance = g.reduce_mean(scope, &squared, &[1], false)?;
        let eps = g.constant_scalar(&format!("{scope}.eps"), eps);
        let variance = g.add_constant(scope, &variance, &eps)?;
        let deviation = g.sqrt(scope, &variance);
        let rstd = g.unary("Reciprocal", scope, &deviation, vec![]);
        let groups = grouped.shape()[..1].to_vec();
        let mean = g.reshape(scope, &mean, &groups)?;
        for ((k, stat), wanted) in [(1, mean), (2, rstd)].into_iter().zip(wanted) {
            if wanted {
                self.bind(node, k, stat)?;
            }
        }
        Ok(())
    }
}
