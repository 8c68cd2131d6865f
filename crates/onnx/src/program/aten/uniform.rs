//! Values the same for every sample ([`Bound::Uniform`](super::super::lower)) made
//! activations where an op needs one: a constant expanded over the batch and then viewed
//! with the batch folded into another dimension (Swin's shifted-window mask
//! `mask.expand(B, …).reshape(-1, 1, L, L)`, WavLM's position bias
//! `bias.repeat(B, 1, 1, 1).view(B·H, L, L)`). Most ops read uniform values themselves and
//! fold them; a row that asks for one as an activation gets it made from the carrier (the
//! first graph input, whose values it never reads) and is lowered again. So does, in a
//! static export (where no axis is the batch), a constant folded from constants alone
//! that an op without an evaluation reads as an activation.

use crate::OnnxError;
use ckpt_aten::program::Node;

use super::super::lower::Lowering;
use super::registry::Lower;
use ckpt_aten::args::Args;

impl<'p> Lowering<'p, '_> {
    /// Lowers `node` through `row`. When the row asks for a uniform value (or, static, a
    /// folded one) as an activation before writing anything, the value is made one
    /// ([`Lowering::materialize`]) and the row runs again; a row that fails after writing
    /// nodes fails as it is, so no node without readers is left behind.
    pub(super) fn lower_row(
        &mut self,
        node: &Node,
        row: Lower,
        scope: &str,
    ) -> Result<(), OnnxError> {
        loop {
            self.take_asked_as_activation();
            let written = self.g.written();
            let error = match row(self, node, &Args(node), scope) {
                Ok(()) => return Ok(()),
                Err(error) => error,
            };
            match self.take_asked_as_activation() {
                Some(name) if self.g.written() == written && !self.is_materialized(&name) => {
                    self.materialize(&name, scope)?;
                }
                _ => return Err(error),
            }
        }
    }

    /// Makes uniform value `name`, or a static export's folded value, an activation.
    pub(in crate::program) fn materialize(
        &mut self,
        name: &str,
        scope: &str,
    ) -> Result<(), OnnxError> {
        match self.materialize_folded(name)? {
            Some(t) => {
                self.remember_materialized(name, t);
                Ok(())
            }
            None => self.materialize_uniform(name, scope),
        }
    }

    /// Makes uniform value `name` an activation: its values for one sample as a constant,
    /// laid over the batch by [`Lowering::over_batch`]. Every sample's part is the constant, as
    /// torch's expanded value is; where torch records a multiple `f·N` there, each
    /// sample's part is the constant's `f` copies, batch outermost (torch's order).
    fn materialize_uniform(&mut self, name: &str, scope: &str) -> Result<(), OnnxError> {
        let Some((tensor, axis, label)) = self.uniform(name) else {
            return Err(OnnxError::Shape {
                what: format!("`{name}` is not a value the same for every sample"),
            });
        };
        let elem = self.recorded_elem(name)?;
        let factor = self.recorded_name_sizes(name)?[axis].count;
        // One sample's part: the constant's rows `factor` times along `axis`.
        let mut dims = tensor.dims().to_vec();
        dims[axis] = factor;
        let block = Self::initializer_values(&tensor, elem);
        let inner: usize = tensor.dims()[axis + 1..].iter().product::<u64>() as usize;
        let values: Vec<f64> = block
            .chunks(inner.max(1))
            .flat_map(|row| std::iter::repeat_n(row, factor as usize).flatten().copied())
            .collect();
        let constant =
            self.g
                .typed_constant(&format!("{label}.per_sample"), dims.clone(), &values, elem)?;
        let t = self.over_batch(scope, &constant, &dims, axis, elem)?;
        self.remember_materialized(name, t);
        Ok(())
    }
}
