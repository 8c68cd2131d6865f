//! `nonzero_static` of a constant ([`crate::nonzero`]).

use super::tensor::Tensor;
use super::Args;
use crate::nonzero;

pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    if op != "nonzero_static.default" {
        return None;
    }
    Some((|| {
        let x = a.tensor("self")?;
        let size = u64::try_from(a.int("size")?)
            .map_err(|_| "nonzero_static with a negative size".to_string())?;
        let nonzero: Vec<bool> = x.to_f32().iter().map(|&v| v != 0.0).collect();
        let rows = nonzero::nonzero_static(x.dims(), &nonzero, size, a.int("fill_value")?);
        Ok(vec![Tensor::i64(vec![size, x.rank() as u64], rows)?])
    })())
}
