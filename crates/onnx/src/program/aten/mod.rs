//! One lowering per aten op that `torch.export.export` (torch 2.13, no decompositions run)
//! writes for users' models. A node naming an argument its op's schema lacks is refused
//! before any lowering runs ([`ckpt_aten::schema::check`]), and every lowering reads or
//! refuses each argument of that schema, so a call it cannot express exactly is an error
//! naming the node, never a silently different graph. Which function lowers which overload
//! is the table in [`registry`].

use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::program::{Argument, Node};

use super::lower::Lowering;

mod along;
mod attention;
mod combine;
mod compare;
mod compound;
mod constant;
mod conv;
mod conv_backward;
mod decompose;
mod diag;
mod distance;
mod division;
mod embedding;
mod expanded;
mod fourier;
mod fractional;
mod frexp;
mod fused_attention;
mod gradient;
mod grid_sample;
mod grids;
mod histogram;
mod index;
mod interpolate;
mod layout;
mod linalg;
mod losses;
mod math;
mod matmul;
mod matrix_norm;
mod multi_head_attention;
mod nonzero;
mod norm;
mod norm_backward;
mod one_hot;
mod order;
mod pad;
mod pointwise;
mod pool;
mod pool_backward;
mod pool_scan;
mod reduce;
mod registry;
mod repeat;
mod resize;
mod rnn;
mod sample_index;
mod scatter;
mod search;
mod segment;
mod select_top;
mod sequence;
mod series;
mod shape_ops;
mod shrink;
mod solve;
mod spaced;
mod split;
mod triangle;
mod uniform;

pub(super) use conv::transpose_2d;
pub(super) use registry::refused_for_good;

fn arg_error(what: String) -> OnnxError {
    OnnxError::Shape { what }
}

/// `Result<T, String>` from [`Args`](ckpt_aten::args::Args) into an (unlocated) export error.
trait OrShape<T> {
    fn or_shape(self) -> Result<T, OnnxError>;
}

impl<T> OrShape<T> for Result<T, String> {
    fn or_shape(self) -> Result<T, OnnxError> {
        self.map_err(arg_error)
    }
}

/// A per-sample axis for full-tensor axis `dim` of a rank-`rank` tensor (batch included);
/// axis 0, the batch, is refused.
fn per_sample_axis(dim: i64, rank: usize) -> Result<usize, OnnxError> {
    let rank = rank as i64;
    let axis = if dim < 0 { dim + rank } else { dim };
    match axis {
        0 => Err(arg_error(format!(
            "it works along dimension {dim}, the batch, which mixes samples; only ops that treat each sample alike are exported"
        ))),
        a if (1..rank).contains(&a) => Ok(a as usize - 1),
        _ => Err(arg_error(format!(
            "dimension {dim} is out of range for a rank-{rank} tensor"
        ))),
    }
}

/// The per-sample axis of torch dimension `dim` of an activation read as `x`: as
/// [`per_sample_axis`] for rows, torch's own when `x` is lifted
/// ([`Lowering::lifted_activation`]: a static tensor, where any dimension may be worked
/// along).
fn row_axis(dim: i64, x: &crate::graph::Value, lifted: bool) -> Result<usize, OnnxError> {
    if lifted {
        super::tensor::axis(dim, x.shape().len())
    } else {
        per_sample_axis(dim, x.shape().len() + 1)
    }
}

impl Lowering<'_, '_> {
    /// The per-sample axis ([`row_axis`]) of argument `dim` of value `x`, an activation
    /// read as this export reads one to work along any dimension
    /// ([`Lowering::lifted_activation`]).
    fn dim_axis(&self, args: &Args<'_>, x: &crate::graph::Value) -> Result<usize, OnnxError> {
        row_axis(args.int("dim").or_shape()?, x, self.is_lifted())
    }

    /// Refuses `op`'s `dtype` argument (and `half_to_float`) unless it keeps the element
    /// type: torch's record of the result has the input's (`softmax(x, dim,
    /// dtype=torch.float32)` of a float32 `x` is plain softmax).
    fn same_dtype(&self, node: &Node, args: &Args<'_>, op: &str) -> Result<(), OnnxError> {
        let asks = !matches!(args.get("dtype"), None | Some(Argument::None))
            || args.bool_or("half_to_float", false).or_shape()?;
        if !asks {
            return Ok(());
        }
        let input = self.tensor(args.tensor("self").or_shape()?)?.value().elem();
        let output = self.recorded_elem(self.output_name(node, 0)?)?;
        if input == output {
            return Ok(());
        }
        Err(arg_error(format!(
            "{op} from {input} to {output} is not exported: it computes in another element type"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_axis_is_refused_and_negative_axes_map() {
        assert!(per_sample_axis(0, 4)
            .unwrap_err()
            .to_string()
            .contains("the batch"));
        assert!(per_sample_axis(-4, 4).is_err());
        assert_eq!(per_sample_axis(1, 4).unwrap(), 0);
        assert_eq!(per_sample_axis(-1, 4).unwrap(), 2);
        assert!(per_sample_axis(4, 4).is_err());
    }
}
