//! `cartesian_prod` of 1-D static tensors: each input read at [`ckpt_aten::combine`]'s
//! indices of the product, a Slice per run of consecutive positions. Over a
//! batch (a 1-D tensor whose one dimension is the batch) they pair samples and are refused.

use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::combine;
use ckpt_aten::program::Node;

use super::super::lower::Lowering;
use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// Input `name` as a lifted 1-D activation (its entry count), or why not.
    fn one_dimensional(&mut self, name: &str, op: &str) -> Result<(Value, u64), OnnxError> {
        let x = self.lifted_any_activation(name)?;
        if !self.is_lifted() {
            return Err(arg_error(format!(
                "{op} of a 1-D tensor whose one dimension is the batch pairs samples, which mixes them"
            )));
        }
        match *x.shape() {
            [n] => Ok((x, n)),
            _ => Err(arg_error(format!(
                "{op} of a {}-D tensor (torch needs 1-D)",
                x.shape().len()
            ))),
        }
    }

    /// `x` (lifted 1-D) read at `index`, under per-sample `shape`: a Slice per run of
    /// consecutive positions, concatenated (ATC takes no Gather of a computed tensor).
    fn read_at_indices(
        &mut self,
        scope: &str,
        x: &Value,
        index: &[u64],
        shape: Vec<u64>,
    ) -> Result<Value, OnnxError> {
        if index.is_empty() {
            return Err(arg_error(
                "its result is empty (a dimension of size 0), which ATC does not compile".into(),
            ));
        }
        let positions: Vec<i64> = index.iter().map(|&i| i as i64).collect();
        let taken = self.take_values(scope, x, 0, &positions)?;
        self.g.reshape(scope, &taken, &shape)
    }

    /// `cartesian_prod(tensors)`: one tensor is itself (torch returns it); several are
    /// each read at their indices of the product and put side by side.
    pub(super) fn cartesian_prod(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let names = args.tensors("tensors").or_shape()?;
        let mut inputs = Vec::with_capacity(names.len());
        for name in names {
            inputs.push(self.one_dimensional(name, "cartesian_prod")?);
        }
        if let [(x, _)] = inputs.as_slice() {
            let y = x.clone();
            return self.bind(node, 0, y);
        }
        let sizes: Vec<u64> = inputs.iter().map(|(_, n)| *n).collect();
        let indices = combine::product(&sizes).map_err(arg_error)?;
        let count = indices.first().map_or(0, |i| i.len() as u64);
        let mut columns = Vec::with_capacity(inputs.len());
        for ((x, _), index) in inputs.iter().zip(&indices) {
            columns.push(self.read_at_indices(scope, x, index, vec![count, 1])?);
        }
        let columns: Vec<&Value> = columns.iter().collect();
        let y = self.g.concat(scope, &columns, 1)?;
        self.bind(node, 0, y)
    }
}
