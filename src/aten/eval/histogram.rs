//! `histc` and `histogram` with a bin count of a constant ([`crate::aten::histogram`]).

use super::tensor::{Tensor, Values};
use super::Args;
use crate::aten::histogram;
use crate::aten::program::Argument;

pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    let result = match op {
        "histc.default" => histc(a),
        "histogram.bin_ct" => bin_count(a),
        _ => return None,
    };
    Some(result)
}

/// The float32 entries of tensor argument `name`.
fn floats(a: &Args<'_>, name: &str) -> Result<Vec<f32>, String> {
    match a.tensor(name)?.values() {
        Values::F32(v) => Ok(v.clone()),
        Values::I64(_) => Err(format!(
            "`{name}` is an integer tensor: torch bins floating-point ones"
        )),
    }
}

fn histc(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let values = floats(a, "self")?;
    let bins = histogram::check_bins(a.int("bins")?)?;
    let counts = histogram::histc(&values, bins, a.number("min")?, a.number("max")?)?;
    Ok(vec![Tensor::f32(vec![bins], counts)?])
}

fn bin_count(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let values = floats(a, "self")?;
    let bins = histogram::check_bins(a.int("bins")?)?;
    let range = match a.node_arg("range") {
        None | Some(Argument::None) => None,
        Some(Argument::Floats(r)) if r.len() == 2 => Some((r[0], r[1])),
        Some(other) => return Err(format!("histogram's range is {}", other.kind())),
    };
    let weights = if a.is_given("weight") {
        let w = floats(a, "weight")?;
        if w.len() != values.len() {
            return Err("histogram's weight has another shape than its input".into());
        }
        Some(w)
    } else {
        None
    };
    let density = a.bool("density")?;
    let (hist, edges) = histogram::histogram(&values, weights.as_deref(), bins, range, density)?;
    Ok(vec![
        Tensor::f32(vec![bins], hist)?,
        Tensor::f32(vec![bins + 1], edges)?,
    ])
}
