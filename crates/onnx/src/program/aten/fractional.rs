//! `fractional_max_pool2d`/`3d` by constant `random_samples`: the windows are computed at
//! export ([`ckpt_aten::fractional::Windows`], torch's `generate_intervals`) and each
//! plane pooled over its own, one spatial axis at a time, the last first, as the adaptive
//! max scan does ([`Lowering::adaptive_max_scan`]): a window is a product of intervals, so
//! the first maximum in row-major order is the first along the outer axes of the first
//! along the inner ones, and the last NaN likewise. A step of an axis reads every window's
//! `q`-th point with GatherElements by a constant index (the planes' windows differ, so no
//! Slice is shared), and takes it where it is greater or NaN ([`Lowering::scan_step`]).
//!
//! The samples hold one row per sample, so a dynamic batch is refused: each sample pools
//! windows of its own, which a batch of any size cannot hold. Samples torch draws itself
//! (`rand`) are refused where they are drawn.

use crate::elem::ElemType;
use crate::graph::{Attr, Value};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::fractional::Windows;
use ckpt_aten::program::{Argument, Node};

use super::super::emit;
use super::super::lower::Lowering;
use super::super::tensor::{self, Placement};
use super::{arg_error, OrShape};

/// The index of step `q` of the scan of spatial axis `axis` (of `rank`) over a value of
/// shape `shape` (`[planes, spatial…]`, that axis already `out` long): every window's `q`-th
/// point along the axis, `start + q`, for each plane.
fn step_index(w: &Windows, shape: &[u64], axis: usize, q: u64) -> Vec<f64> {
    let count: u64 = shape.iter().product();
    let inner: u64 = shape[axis + 2..].iter().product();
    let out = shape[axis + 1];
    let per_plane: u64 = shape[1..].iter().product();
    (0..count)
        .map(|flat| {
            let plane = (flat / per_plane) as usize;
            let j = ((flat / inner) % out) as usize;
            (w.starts[plane][axis][j] + q) as f64
        })
        .collect()
}

impl Lowering<'_, '_> {
    /// `fractional_max_pool2d`/`3d(self, kernel_size, output_size, random_samples)` over
    /// `rank` spatial axes, batched or not, in a static export.
    pub(super) fn fractional_max_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        rank: usize,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        let samples = args.tensor("random_samples").or_shape()?;
        if !self.is_constant(samples) {
            return Err(arg_error(format!(
                "fractional max pooling by the random samples `{samples}`, which the graph computes; its windows are computed at export from constant samples only (a buffer passed as `_random_samples`)"
            )));
        }
        let t = self.tensor(name)?;
        if t.placement() != Placement::Static {
            return Err(arg_error(format!(
                "fractional max pooling of `{name}` {} by the constant random samples `{samples}`, which hold each sample's own windows: a dynamic batch cannot keep them apart; export with --batch static",
                tensor::show(&t.sizes())
            )));
        }
        let samples = self.constant_tensor(samples)?;
        let kernel = args.sizes("kernel_size", rank).or_shape()?;
        let out = args.sizes("output_size", rank).or_shape()?;
        // Lifted: the ONNX value `[1, sizes…]`, seen without that row.
        let x = self.lifted_activation(name)?;
        let shape = x.shape().to_vec();
        if shape.len() != rank + 1 && shape.len() != rank + 2 {
            return Err(arg_error(format!(
                "fractional max pooling of {shape:?} over {rank} spatial axes"
            )));
        }
        let split = shape.len() - rank;
        let planes: u64 = shape[..split].iter().product();
        let windows = Windows::new(planes, &shape[split..], &kernel, &out, &samples.to_f32())
            .map_err(arg_error)?;
        let mut planar = vec![planes];
        planar.extend(&shape[split..]);
        let x = self.g.reshape(scope, &x, &planar)?;
        let indexed = node
            .outputs
            .get(1)
            .and_then(Argument::tensor_name)
            .is_some_and(|name| !self.readers_of(name).is_empty());
        let mut value = x.clone();
        let mut index = if indexed {
            Some(self.spatial_positions(scope, &x)?)
        } else {
            None
        };
        for axis in (0..rank).rev() {
            let mut mapped = value.shape().to_vec();
            mapped[axis + 1] = out[axis];
            let mut best: Option<(Value, Option<Value>)> = None;
            for q in 0..kernel[axis] {
                let mut lifted = vec![1];
                lifted.extend(&mapped);
                let at = self.g.typed_constant(
                    &format!("{scope}.window"),
                    lifted,
                    &step_index(&windows, &mapped, axis, q),
                    ElemType::Int64,
                )?;
                let gather = |l: &mut Self, v: &Value, elem| {
                    emit::single(l.g.typed_node(
                        "GatherElements",
                        scope,
                        vec![v.name().to_owned(), at.name().to_owned()],
                        vec![("axis", Attr::Int(axis as i64 + 2))],
                        vec![(mapped.clone(), elem)],
                    ))
                };
                let v = gather(self, &value, ElemType::Float32);
                let i = index.as_ref().map(|i| gather(self, i, ElemType::Int64));
                best = Some(match (best, i) {
                    (None, i) => (v, i),
                    (Some((b, Some(b_at))), Some(i)) => {
                        self.scan_step(scope, &b, &v, Some((&i, &b_at)))
                    }
                    (Some((b, _)), _) => self.scan_step(scope, &b, &v, None),
                });
            }
            let Some((v, i)) = best else {
                return Err(arg_error(format!(
                    "fractional max pooling by the kernel {kernel:?}, which has a size of 0"
                )));
            };
            (value, index) = (v, i);
        }
        let mut dims = shape[..split].to_vec();
        dims.extend(&out);
        let y = self.g.reshape(scope, &value, &dims)?;
        self.bind(node, 0, y)?;
        match index {
            Some(index) => {
                let indices = self.g.reshape(scope, &index, &dims)?;
                self.bind(node, 1, indices)
            }
            None => {
                self.unproduced_from(node, 1);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_read_each_planes_own_window_starts() {
        // Two planes 1×5, windows of 2 to 2 outputs along the last axis.
        let w = Windows {
            sizes: vec![1, 5],
            kernel: vec![1, 2],
            out: vec![1, 2],
            starts: vec![vec![vec![0], vec![0, 3]], vec![vec![0], vec![1, 3]]],
        };
        assert_eq!(step_index(&w, &[2, 1, 2], 1, 0), [0.0, 3.0, 1.0, 3.0]);
        assert_eq!(step_index(&w, &[2, 1, 2], 1, 1), [1.0, 4.0, 2.0, 4.0]);
        // The first axis, after the last is pooled: one window start per plane.
        assert_eq!(step_index(&w, &[2, 1, 2], 0, 0), [0.0; 4]);
    }
}
