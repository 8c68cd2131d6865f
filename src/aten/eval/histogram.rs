//! `histc` of a constant ([`crate::aten::histogram`]).

use super::tensor::{Tensor, Values};
use super::Args;
use crate::aten::histogram;

pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    if op != "histc.default" {
        return None;
    }
    Some((|| {
        let x = a.tensor("self")?;
        let Values::F32(values) = x.values() else {
            return Err("histc of an integer tensor: torch counts floating-point ones".into());
        };
        let bins = histogram::check_bins(a.int("bins")?)?;
        let counts = histogram::histc(values, bins, a.number("min")?, a.number("max")?)?;
        Ok(vec![Tensor::f32(vec![bins], counts)?])
    })())
}
