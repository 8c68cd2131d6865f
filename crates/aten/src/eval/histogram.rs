//! `histc` and `histogram` (with a bin count, or by a tensor of edges) of a constant ([`crate::histogram`]).

use super::tensor::{Tensor, Values};
use super::Args;
use crate::histogram;
use crate::program::Argument;

pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    let result = match op {
        "histc.default" => histc(a),
        "histogram.bin_ct" => bin_count(a),
        "histogram.bins_tensor" => by_edges(a),
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
    let weights = weights(a, values.len())?;
    let density = a.bool("density")?;
    let (hist, edges) = histogram::histogram(&values, weights.as_deref(), bins, range, density)?;
    Ok(vec![
        Tensor::f32(vec![bins], hist)?,
        Tensor::f32(vec![bins + 1], edges)?,
    ])
}

/// `weight`'s entries, when given, as many as the input's `count`.
fn weights(a: &Args<'_>, count: usize) -> Result<Option<Vec<f32>>, String> {
    if !a.is_given("weight") {
        return Ok(None);
    }
    let w = floats(a, "weight")?;
    if w.len() != count {
        return Err("histogram's weight has another shape than its input".into());
    }
    Ok(Some(w))
}

fn by_edges(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let values = floats(a, "self")?;
    let edges = floats(a, "bins")?;
    if a.tensor("bins")?.rank() != 1 {
        return Err("histogram by edges that are not a 1-D tensor".into());
    }
    let weights = weights(a, values.len())?;
    let hist =
        histogram::histogram_by_edges(&values, weights.as_deref(), &edges, a.bool("density")?)?;
    let bins = hist.len() as u64;
    Ok(vec![
        Tensor::f32(vec![bins], hist)?,
        Tensor::f32(vec![bins + 1], edges)?,
    ])
}
