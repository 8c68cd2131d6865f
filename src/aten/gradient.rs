//! `torch.gradient` at scalar spacings as torch computes it (`ReduceOps.cpp`,
//! `gradient_helper_float`): along each dimension asked for, central differences
//! `(x[2:] − x[:-2]) / h / 2` inside, and at the two ends one-sided differences of first
//! order, `(x₁ − x₀) / h` and `(xₙ₋₁ − xₙ₋₂) / h`, or of second order,
//! `(−1.5·x₀ + 2·x₁ − 0.5·x₂) / h` and `(0.5·xₙ₋₃ − 2·xₙ₋₂ + 1.5·xₙ₋₁) / h`; each in the
//! input's float type, `h` a double scalar. The evaluator and the lowering both follow
//! this plan.

use crate::aten::args::Args;
use crate::aten::program::{Argument, Node};

/// The gradient ops at scalar spacings.
pub const OPS: [&str; 3] = [
    "gradient.scalarint",
    "gradient.scalarrayint",
    "gradient.scalarrayarray",
];

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
    if let Some(&d) = dims.iter().find(|&&d| sizes[d] < edge_order + 1) {
        return Err(format!(
            "gradient along dimension {d} of {} entries (torch needs edge_order + 1 = {})",
            sizes[d],
            edge_order + 1
        ));
    }
    let directions = dims
        .into_iter()
        .zip(spacings)
        .map(|(dim, spacing)| Direction { dim, spacing })
        .collect();
    Ok((directions, edge_order))
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
