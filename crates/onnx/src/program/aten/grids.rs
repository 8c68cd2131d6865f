//! `meshgrid` of the 0-d or 1-D tensors a static program computes: each input viewed
//! along its own dimension of the grid and tiled over the others, as the evaluator
//! computes it. Under a dynamic batch a 1-D tensor has no dimension to keep the batch
//! apart on, so it is refused there.

use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::program::{Argument, Node};

use super::super::lower::Lowering;
use super::super::tensor::{self, Placement, Size, Tensor};
use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// Activation `name` if it is a static tensor of at most one dimension.
    fn static_vector(&mut self, op: &str, name: &str) -> Result<Tensor, OnnxError> {
        let t = self.tensor(name)?;
        if t.placement() != Placement::Static || t.rank() > 1 {
            return Err(arg_error(format!(
                "{op} of `{name}` {}: only 0-d or 1-D tensors of a static export (`--batch static`) are exported, as a 1-D tensor has no dimension to keep the batch on",
                tensor::show(&t.sizes())
            )));
        }
        Ok(t)
    }

    /// `meshgrid(tensors, indexing)`: with `indexing='xy'` the first two dimensions of the
    /// grid are swapped (`torch.meshgrid`).
    pub(super) fn meshgrid(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let xy = match args.get("indexing") {
            None | Some(Argument::None) => false,
            Some(Argument::String(mode)) if mode == "ij" => false,
            Some(Argument::String(mode)) if mode == "xy" => true,
            Some(other) => {
                return Err(arg_error(format!(
                    "meshgrid indexing {other:?} (torch takes 'ij' and 'xy')"
                )))
            }
        };
        let mut parts = Vec::new();
        for name in args.tensors("tensors").or_shape()? {
            parts.push(self.static_vector("meshgrid", name)?);
        }
        let mut dims: Vec<u64> = parts
            .iter()
            .map(|t| t.sizes().iter().map(|s| s.count).product())
            .collect();
        let mut axes: Vec<usize> = (0..parts.len()).collect();
        if xy && parts.len() >= 2 {
            dims.swap(0, 1);
            axes.swap(0, 1);
        }
        let mut grids = Vec::with_capacity(parts.len());
        for (t, at) in parts.into_iter().zip(axes) {
            let mut view = vec![Size::fixed(1); dims.len()];
            view[at] = Size::fixed(dims[at]);
            let mut repeats: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
            repeats[at] = 1;
            let mut y = t.reshaped(&mut self.g, scope, &view)?;
            if repeats.iter().any(|&r| r != 1) {
                let counts = self.g.constant_i64(&format!("{scope}.repeats"), &repeats);
                let inputs = vec![y.value().name().to_owned(), counts.name().to_owned()];
                let tiled = self
                    .g
                    .node("Tile", scope, inputs, vec![], vec![dims.clone()])
                    .swap_remove(0);
                y = y.with_value(tiled)?;
            }
            grids.push(y);
        }
        self.bind_list(node, grids)
    }
}
