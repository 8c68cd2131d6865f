//! `torch.gradient` at scalar spacings as torch computes it (`ReduceOps.cpp`,
//! `gradient_helper_float`): along each dimension asked for, central differences
//! `(x[2:] − x[:-2]) / h / 2` inside, and at the two ends one-sided differences of first
//! order, `(x₁ − x₀) / h` and `(xₙ₋₁ − xₙ₋₂) / h`, or of second order,
//! `(−1.5·x₀ + 2·x₁ − 0.5·x₂) / h` and `(0.5·xₙ₋₃ − 2·xₙ₋₂ + 1.5·xₙ₋₁) / h`; each in the
//! input's float type, `h` a double scalar. At coordinates (`gradient_helper`: a 1-D
//! tensor of sample points per dimension) the differences are weighted by the spacings
//! around each entry ([`stencil`]). The evaluator and the lowering both follow this plan.

use crate::args::Args;
use crate::program::{Argument, Node};

/// The gradient ops at scalar spacings.
pub const OPS: [&str; 3] = [
    "gradient.scalarint",
    "gradient.scalarrayint",
    "gradient.scalarrayarray",
];

/// The gradient ops at coordinates: one 1-D tensor of sample points per dimension.
pub const COORDINATE_OPS: [&str; 2] = ["gradient.tensorarray", "gradient.tensorarrayint"];

/// One output of `torch.gradient`: the dimension it differentiates along and its spacing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Direction {
    pub dim: usize,
    pub spacing: f64,
}

/// What `node` (one of [`OPS`]) computes of a tensor of sizes `sizes`: one [`Direction`]
/// per output, and the order of the one-sided differences at the ends (1 or 2); or why
/// torch refuses it (`pre_check_gradient`).
pub fn plan(node: &Node, sizes: &[u64]) -> Result<(Vec<Direction>, u64), String> {
    let args = Args(node);
    let (dims, edge_order) = directions(node, sizes)?;
    let spacings: Vec<f64> = match args.get("spacing") {
        None | Some(Argument::None) => vec![1.0; dims.len()],
        Some(Argument::Int(h)) => vec![*h as f64; dims.len()],
        Some(Argument::Float(h)) => vec![*h; dims.len()],
        Some(Argument::Ints(h)) => h.iter().map(|&h| h as f64).collect(),
        Some(Argument::Floats(h)) => h.clone(),
        Some(other) => return Err(format!("argument `spacing` is {}", other.kind())),
    };
    if spacings.len() != dims.len() {
        return Err(format!(
            "gradient with {} spacings for {} dimensions",
            spacings.len(),
            dims.len()
        ));
    }
    let directions = dims
        .into_iter()
        .zip(spacings)
        .map(|(dim, spacing)| Direction { dim, spacing })
        .collect();
    Ok((directions, edge_order))
}

/// The dimensions `node` (of [`OPS`] or [`COORDINATE_OPS`]) differentiates a tensor of
/// sizes `sizes` along, in order, and its edge order; or why torch refuses it
/// (`pre_check_gradient`).
pub fn directions(node: &Node, sizes: &[u64]) -> Result<(Vec<usize>, u64), String> {
    let args = Args(node);
    let rank = sizes.len();
    let edge_order = args.int("edge_order")?;
    let edge_order = match edge_order {
        1 | 2 => edge_order as u64,
        other => {
            return Err(format!(
                "gradient with edge_order = {other} (torch takes 1 or 2)"
            ))
        }
    };
    let wrap = |d: i64| -> Result<usize, String> {
        let r = rank as i64;
        let a = if d < 0 { d + r } else { d };
        usize::try_from(a)
            .ok()
            .filter(|&a| a < rank)
            .ok_or_else(|| format!("gradient along dimension {d} of a rank-{rank} tensor"))
    };
    let dims: Vec<usize> = match args.get("dim") {
        None | Some(Argument::None) => (0..rank).collect(),
        Some(Argument::Int(d)) => vec![wrap(*d)?],
        Some(Argument::Ints(d)) => d.iter().map(|&d| wrap(d)).collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("argument `dim` is {}", other.kind())),
    };
    if let Some(&d) = dims.iter().find(|&&d| sizes[d] < edge_order + 1) {
        return Err(format!(
            "gradient along dimension {d} of {} entries (torch needs edge_order + 1 = {})",
            sizes[d],
            edge_order + 1
        ));
    }
    Ok((dims, edge_order))
}

/// `gradient_helper`'s weights along one dimension at float32 sample points: at each
/// interior entry `k` the weights `a`, `b`, `c` of entries `k − 1`, `k`, `k + 1`, from
/// the spacings `dx₁` before and `dx₂` after it, `a = −dx₂ / (dx₁·(dx₁ + dx₂))`,
/// `b = (dx₂ − dx₁) / (dx₁·dx₂)`, `c = dx₁ / (dx₂·(dx₁ + dx₂))`; and the ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Stencil {
    pub interior: [Vec<f32>; 3],
    pub ends: Ends,
}

/// The ends of a [`Stencil`].
#[derive(Clone, Debug, PartialEq)]
pub enum Ends {
    /// First order: `(x₁ − x₀) / first` and `(xₙ₋₁ − xₙ₋₂) / last`, the outer spacings.
    First { first: f32, last: f32 },
    /// Second order: the weights of the first three entries and of the last three.
    Second { start: [f32; 3], end: [f32; 3] },
}

/// The [`Stencil`] at sample points `points` (one per entry, at least `edge_order + 1`),
/// each weight computed in float32 in torch's order of operations.
pub fn stencil(points: &[f32], edge_order: u64) -> Stencil {
    let dx: Vec<f32> = points.windows(2).map(|w| w[1] - w[0]).collect();
    let mut interior = [Vec::new(), Vec::new(), Vec::new()];
    for w in dx.windows(2) {
        let (d1, d2) = (w[0], w[1]);
        interior[0].push(-d2 / (d1 * (d1 + d2)));
        interior[1].push((d2 - d1) / (d1 * d2));
        interior[2].push(d1 / (d2 * (d1 + d2)));
    }
    let n = dx.len();
    let ends = if edge_order == 1 {
        Ends::First {
            first: dx[0],
            last: dx[n - 1],
        }
    } else {
        let (d0, d1) = (dx[0], dx[1]);
        let (dl, dp) = (dx[n - 1], dx[n - 2]);
        Ends::Second {
            start: [
                -(2.0 * d0 + d1) / (d0 * (d0 + d1)),
                (d0 + d1) / (d0 * d1),
                -d0 / (d1 * (d0 + d1)),
            ],
            end: [
                dl / (dp * (dl + dp)),
                -(dl + dp) / (dl * dp),
                (2.0 * dl + dp) / (dl * (dl + dp)),
            ],
        }
    };
    Stencil { interior, ends }
}

/// The weights of the first, second and third entries in a one-sided difference of
/// `edge_order` at the start (`at_end`: of the last three entries, in order, at the end),
/// before the division by the spacing.
pub fn edge_weights(edge_order: u64, at_end: bool) -> &'static [f32] {
    match (edge_order, at_end) {
        (1, _) => &[-1.0, 1.0],
        (_, false) => &[-1.5, 2.0, -0.5],
        (_, true) => &[0.5, -2.0, 1.5],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_sample_points_weigh_as_central_differences() {
        let s = stencil(&[0.0, 2.0, 4.0, 6.0], 2);
        assert_eq!(s.interior[0], [-0.25, -0.25]);
        assert_eq!(s.interior[1], [0.0, 0.0]);
        assert_eq!(s.interior[2], [0.25, 0.25]);
        assert_eq!(
            s.ends,
            Ends::Second {
                start: [-0.75, 1.0, -0.25],
                end: [0.25, -1.0, 0.75]
            }
        );
        let s = stencil(&[0.0, 1.0, 3.0], 1);
        assert_eq!(
            s.ends,
            Ends::First {
                first: 1.0,
                last: 2.0
            }
        );
    }
}
