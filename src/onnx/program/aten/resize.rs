//! Nearest and bilinear upsampling as ONNX `Resize`.

use crate::onnx::OnnxError;
use crate::torch::pt2::schema::{Argument, Node};

use super::super::args::Args;
use super::super::emit::{self, Interpolation};
use super::super::lower::Lowering;
use super::{arg_error, reject_extra, OrShape};

impl<'p> Lowering<'p, '_> {
    /// `upsample_nearest2d` (`align_corners` = `None`) and `upsample_bilinear2d`.
    pub(super) fn upsample(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        align_corners: Option<bool>,
    ) -> Result<(), OnnxError> {
        reject_extra(
            args,
            &[
                "input",
                "output_size",
                "align_corners",
                "scale_factors",
                "scales_h",
                "scales_w",
            ],
        )?;
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let out_name = self.output_name(node, 0)?;
        let recorded = self.recorded_shape(out_name)?;
        let &[_, out_h, out_w] = recorded.as_slice() else {
            return Err(arg_error(format!("upsampling to per-sample {recorded:?}")));
        };
        // Scale factors that do not give whole output sizes would make torch's source
        // index use the factor, not out/in; only exact factors are exported.
        let &[_, h, w] = x.shape() else {
            return Err(arg_error(format!(
                "upsampling a per-sample {:?} input",
                x.shape()
            )));
        };
        let factors: Vec<f64> = match args.optional_floats("scale_factors").or_shape()? {
            Some(f) => f.to_vec(),
            None => ["scales_h", "scales_w"]
                .iter()
                .filter_map(|k| match args.get(k) {
                    Some(Argument::Float(f)) => Some(*f),
                    _ => None,
                })
                .collect(),
        };
        let exact = factors.is_empty()
            || (factors.len() == 2
                && factors[0] * h as f64 == out_h as f64
                && factors[1] * w as f64 == out_w as f64);
        if !exact {
            return Err(arg_error(format!(
                "scale factors {factors:?} on {h}×{w} do not give whole sizes ({out_h}×{out_w}); pass size= instead"
            )));
        }
        let mode = match align_corners {
            None => Interpolation::Nearest,
            Some(true) => Interpolation::BilinearAlignCorners,
            Some(false) => Interpolation::BilinearHalfPixel,
        };
        let y = emit::resize(&mut self.g, scope, node.label(), &x, [out_h, out_w], mode)?;
        self.bind(node, 0, y)
    }
}
