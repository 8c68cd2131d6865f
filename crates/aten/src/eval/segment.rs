//! `segment_reduce` of a constant by constant lengths or offsets
//! ([`crate::segment`]).

use super::tensor::Tensor;
use super::Args;
use crate::segment::{self, Given, Reduce, Segments};

pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    match op {
        "segment_reduce.default" => Some(segment_reduce(a)),
        _ => None,
    }
}

/// How the segments are given: the lengths or the offsets (torch takes either).
pub(super) fn given(a: &Args<'_>) -> Result<(Given, Tensor), String> {
    match (a.is_given("lengths"), a.is_given("offsets")) {
        (true, false) => Ok((Given::Lengths, a.tensor("lengths")?)),
        (false, true) => Ok((Given::Offsets, a.tensor("offsets")?)),
        _ => Err("segment_reduce needs either lengths or offsets".into()),
    }
}

fn segment_reduce(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    if a.is_given("indices") {
        return Err("segment_reduce by indices (torch does not implement it)".into());
    }
    let data = a.tensor("data")?;
    let how = Reduce::named(&a.string("reduce")?)?;
    let (given, table) = given(a)?;
    let axis = segment::axis(a.int("axis")?, data.rank(), table.rank())?;
    let dims = data.dims();
    let segments = Segments::new(given, table.dims(), &table.to_i64()?, dims, axis)?;
    let inner = dims[axis + 1..].iter().product::<u64>() as usize;
    let values = segment::reduce(
        &data.to_f32(),
        &segments,
        inner,
        how,
        a.optional_number("initial")?,
    );
    let mut out = dims.to_vec();
    out[axis] = segments.count as u64;
    Ok(vec![Tensor::f32(out, values)?])
}
