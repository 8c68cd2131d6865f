//! Ops along one torch dimension of a tensor that may be 0-d. torch wraps dimension 0 (or
//! −1) of a 0-d tensor ([`Dim::OfScalar`]) and its kernels compute along it on the
//! tensor's one-entry 1-d view; the lowering writes the same view, works along its axis 0
//! as along any other, and gives the result torch's recorded sizes.

use crate::OnnxError;
use ckpt_aten::dim::Dim;
use ckpt_aten::program::Node;

use super::super::lower::Lowering;
use super::super::tensor::{Size, Tensor};

impl Lowering<'_, '_> {
    /// `t` as an op along `dim` computes on it: `t` itself, or for [`Dim::OfScalar`] its
    /// one-entry 1-d view (a Reshape to `[1]`); the op works along `dim.view_axis()` of it
    /// and binds its result with [`Lowering::bind_along`].
    pub(super) fn view_along(
        &mut self,
        t: Tensor,
        dim: Dim,
        scope: &str,
    ) -> Result<Tensor, OnnxError> {
        match dim {
            Dim::Axis(_) => Ok(t),
            Dim::OfScalar => t.reshaped(&mut self.g, scope, &[Size::fixed(1)]),
        }
    }

    /// Binds output `k` of `node` to `y`, computed on [`Lowering::view_along`]: along a
    /// 0-d tensor's view, `y` (one entry) is reshaped to torch's recorded sizes (`[]` for
    /// a softmax or a running sum, `[1]` for an unfold's one window), a Reshape that
    /// refuses any other element count.
    pub(super) fn bind_along(
        &mut self,
        node: &Node,
        k: usize,
        dim: Dim,
        y: Tensor,
    ) -> Result<(), OnnxError> {
        let y = match dim {
            Dim::Axis(_) => y,
            Dim::OfScalar => {
                let name = self.output_name(node, k)?;
                let recorded = self.recorded_name_sizes(name)?;
                y.reshaped(&mut self.g, name, &recorded)?
            }
        };
        self.bind_tensor(node, k, y)
    }
}
