//! Multi-head self-attention as ATC takes it at opsets 9–13, shared by
//! `_native_multi_head_attention` and the fused attention kernels of a TorchScript trace
//! (`program::aten::fused_attention`): Q, K and V are MatMuls by the transposed slices of
//! the packed in-projection (the 1/√d scale folded into Q), Reshape/Transpose to heads with
//! constant per-sample shapes, MatMul, Softmax over the last axis, MatMul, and back to
//! tokens. No op reads a shape; the batch stays the leading, implicit axis.

use crate::graph::{GraphBuilder, Value, Weight};
use crate::OnnxError;

/// One projection's transposed weight `[D, D]` (row-major) and bias `[D]`.
pub struct Projection {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

/// Q, K and V from a packed in-projection (`weight` `[3D, D]` and `bias` `[3D]`, row-major,
/// as `nn.MultiheadAttention.in_proj_*`), each transposed for `x · W`; Q (weight and bias)
/// is multiplied by `q_scale`. `None` unless the sizes are exactly `3·d·d` and `3·d`.
pub fn split_in_projection(
    weight: &[f32],
    bias: &[f32],
    d: usize,
    q_scale: f32,
) -> Option<[Projection; 3]> {
    let dd = d.checked_mul(d)?;
    if weight.len() != dd.checked_mul(3)? || bias.len() != d.checked_mul(3)? {
        return None;
    }
    let part = |i: usize, scale: f32| {
        let rows = &weight[i * dd..(i + 1) * dd];
        Projection {
            weight: (0..d)
                .flat_map(|c| (0..d).map(move |r| rows[r * d + c] * scale))
                .collect(),
            bias: bias[i * d..(i + 1) * d].iter().map(|v| v * scale).collect(),
        }
    };
    Some([part(0, q_scale), part(1, 1.0), part(2, 1.0)])
}

/// Attention of tokens `x` (`[S, D]` per sample) over `heads` heads, before the output
/// projection: `q`, `k`, `v` are (transposed weight `[D, D]`, bias `[D]`) with the scale
/// already in `q`. Returns `[S, D]`.
pub fn self_attention(
    g: &mut GraphBuilder,
    scope: &str,
    x: &Value,
    [q, k, v]: [&[Weight; 2]; 3],
    heads: u64,
) -> Result<Value, OnnxError> {
    let &[s, d] = x.shape() else {
        return Err(OnnxError::Shape {
            what: format!(
                "{scope}: attention of per-sample {:?}, expected [tokens, width]",
                x.shape()
            ),
        });
    };
    if heads == 0 || d % heads != 0 {
        return Err(OnnxError::Shape {
            what: format!("{scope}: width {d} does not split into {heads} heads"),
        });
    }
    let head = d / heads;
    let mut project = |part: &str, w: &[Weight; 2]| {
        let scope = format!("{scope}.{part}");
        let y = g.matmul(&scope, x, &w[0])?;
        let y = g.add_constant(&scope, &y, &w[1])?;
        g.reshape(&scope, &y, &[s, heads, head])
    };
    let q = project("q", q)?;
    let k = project("k", k)?;
    let v = project("v", v)?;
    let q = g.transpose(scope, &q, &[1, 0, 2])?;
    let k = g.transpose(scope, &k, &[1, 2, 0])?;
    let v = g.transpose(scope, &v, &[1, 0, 2])?;
    let scores = g.matmul_activations(scope, &q, &k)?;
    let weights = g.softmax(scope, &scores);
    let y = g.matmul_activations(scope, &weights, &v)?;
    let y = g.transpose(scope, &y, &[1, 0, 2])?;
    g.reshape(scope, &y, &[s, d])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_projection_splits_transposes_and_scales_q() {
        // d = 1: rows q, k, v are [2], [3], [4]; biases 5, 6, 7.
        let [q, k, v] = split_in_projection(&[2.0, 3.0, 4.0], &[5.0, 6.0, 7.0], 1, 0.5).unwrap();
        assert_eq!((q.weight, q.bias), (vec![1.0], vec![2.5]));
        assert_eq!((k.weight, k.bias), (vec![3.0], vec![6.0]));
        assert_eq!((v.weight, v.bias), (vec![4.0], vec![7.0]));
        // d = 2: the q block [[1, 2], [3, 4]] is transposed.
        let w: Vec<f32> = (1..=12).map(|i| i as f32).collect();
        let [q, ..] = split_in_projection(&w, &[0.0; 6], 2, 1.0).unwrap();
        assert_eq!(q.weight, vec![1.0, 3.0, 2.0, 4.0]);
        assert!(split_in_projection(&w, &[0.0; 5], 2, 1.0).is_none());
    }
}
