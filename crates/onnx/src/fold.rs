//! Folding an eval-mode BatchNorm into the convolution before it.
//!
//! `bn(conv(x)) = γ·(w∗x + b − μ)/√(σ² + ε) + β`, so with `s = γ/√(σ² + ε)`:
//! `w' = w·s` (per output channel) and `b' = (b − μ)·s + β`. Computed in f64, rounded once.

use super::OnnxError;

/// An eval-mode BatchNorm's parameters, each one value per channel.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchNorm {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
    pub running_mean: Vec<f32>,
    pub running_var: Vec<f32>,
    pub eps: f64,
}

/// A convolution's folded weight (same layout as the input, `[O, …]`) and bias `[O]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Folded {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

/// Folds `bn` into a conv with `out_channels` outputs, weight `weight` (row-major, output
/// channel first) and optional `bias`.
pub fn fold(
    weight: &[f32],
    bias: Option<&[f32]>,
    out_channels: usize,
    bn: &BatchNorm,
) -> Result<Folded, OnnxError> {
    let scale = scales(bn, out_channels, weight.len(), bias.map(<[f32]>::len))?;
    let per_out = weight.len() / out_channels;
    let folded_weight = weight
        .chunks(per_out)
        .zip(&scale)
        .flat_map(|(row, &s)| row.iter().map(move |&w| (f64::from(w) * s) as f32))
        .collect();
    Ok(Folded {
        weight: folded_weight,
        bias: folded_bias(bias, bn, &scale),
    })
}

/// The per-output-channel factors `s = γ/√(σ² + ε)` that fold `bn` into a conv with
/// `out_channels` outputs, `weights` weight values and a bias of `bias` values if any;
/// an error when the sizes do not agree. The weight is folded by multiplying each output
/// channel's values by its factor in f64 and rounding once
/// ([`Transform::ScaleRows`](super::store::Transform::ScaleRows)).
pub fn scales(
    bn: &BatchNorm,
    out_channels: usize,
    weights: usize,
    bias: Option<usize>,
) -> Result<Vec<f64>, OnnxError> {
    let per_channel = [&bn.weight, &bn.bias, &bn.running_mean, &bn.running_var];
    let consistent = out_channels > 0
        && weights.is_multiple_of(out_channels)
        && per_channel.iter().all(|p| p.len() == out_channels)
        && bias.is_none_or(|b| b == out_channels);
    if !consistent {
        return Err(OnnxError::Shape {
            what: format!(
                "cannot fold a BatchNorm of {} channels into a conv of {out_channels} outputs",
                bn.weight.len()
            ),
        });
    }
    Ok((0..out_channels)
        .map(|c| f64::from(bn.weight[c]) / (f64::from(bn.running_var[c]) + bn.eps).sqrt())
        .collect())
}

/// The folded bias `(b − μ)·s + β` for the factors `scale` of [`scales`].
pub fn folded_bias(bias: Option<&[f32]>, bn: &BatchNorm, scale: &[f64]) -> Vec<f32> {
    (0..scale.len())
        .map(|c| {
            let b = bias.map_or(0.0, |b| f64::from(b[c]));
            ((b - f64::from(bn.running_mean[c])) * scale[c] + f64::from(bn.bias[c])) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_per_output_channel() {
        let bn = BatchNorm {
            weight: vec![2.0, 1.0],
            bias: vec![0.5, -1.0],
            running_mean: vec![1.0, 0.0],
            running_var: vec![3.0, 0.0],
            eps: 1.0,
        };
        // Two outputs of two weights each; scale = 2/√4 = 1 and 1/√1 = 1.
        let folded = fold(&[1.0, 2.0, 3.0, 4.0], Some(&[1.0, 1.0]), 2, &bn).unwrap();
        assert_eq!(folded.weight, vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(folded.bias, vec![0.5, 0.0]);
        let bn = BatchNorm {
            weight: vec![4.0, 1.0],
            eps: 1.0,
            ..bn
        };
        let folded = fold(&[1.0, 2.0, 3.0, 4.0], None, 2, &bn).unwrap();
        assert_eq!(folded.weight, vec![2.0, 4.0, 3.0, 4.0]);
        assert_eq!(folded.bias, vec![-1.5, -1.0]);
        assert!(fold(&[1.0; 3], None, 2, &bn).is_err());
    }
}
