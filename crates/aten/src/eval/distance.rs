//! `cdist` and `pdist` of constants ([`crate::distance`]): each pair of rows' norm
//! of differences, in float32, as torch's CPU kernels compute them directly.

use super::tensor::{broadcast, Tensor};
use super::Args;
use crate::distance::{self, NanInMax, Norm};

pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    let result = match op {
        "cdist.default" | "_cdist_forward.default" => cdist(a),
        "pdist.default" | "_pdist_forward.default" => pdist(a),
        _ => return None,
    };
    Some(result.map(|t| vec![t]))
}

/// `cdist(x1 [..., P, M], x2 [..., R, M])`: `[..., P, R]`, the leading sizes broadcast.
fn cdist(a: &Args<'_>) -> Result<Tensor, String> {
    let (x1, x2) = (a.tensor("x1")?, a.tensor("x2")?);
    let norm = Norm::of_p("cdist", a.number("p")?)?;
    let mode = a.optional_int("compute_mode")?.unwrap_or(0);
    let (&[.., p, m], &[.., r, m2]) = (x1.dims(), x2.dims()) else {
        return Err(format!(
            "cdist of {:?} and {:?}: torch needs two tensors of rank 2 or more",
            x1.dims(),
            x2.dims()
        ));
    };
    if m != m2 {
        return Err(format!(
            "cdist of rows of {m} and of {m2} entries: torch needs the same"
        ));
    }
    distance::cdist_directly(norm, mode, p, r)?;
    let (lead1, lead2) = (&x1.dims()[..x1.rank() - 2], &x2.dims()[..x2.rank() - 2]);
    let lead = broadcast(&[lead1, lead2])?;
    let full = |t: &Tensor, rows: u64| {
        let mut dims = lead.clone();
        dims.extend([rows, m]);
        t.expand(&dims).map(|t| t.to_f32())
    };
    let (v1, v2) = (full(&x1, p)?, full(&x2, r)?);
    let (p, r, m) = (p as usize, r as usize, m as usize);
    let matrices: usize = lead.iter().product::<u64>() as usize;
    let mut out = Vec::with_capacity(matrices * p * r);
    for k in 0..matrices {
        for i in 0..p {
            let a = &v1[(k * p + i) * m..][..m];
            for j in 0..r {
                let b = &v2[(k * r + j) * m..][..m];
                out.push(norm.distance(a.iter().zip(b).map(|(x, y)| x - y), NanInMax::Skipped));
            }
        }
    }
    let mut dims = lead;
    dims.extend([p as u64, r as u64]);
    Tensor::f32(dims, out)
}

/// `pdist(x [N, M])`: `[N(N−1)/2]`, the pairs in [`distance::pairs`]' order.
fn pdist(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let norm = Norm::of_p("pdist", a.number("p")?)?;
    let &[n, m] = x.dims() else {
        return Err(format!("pdist of {:?}: torch takes a 2-D tensor", x.dims()));
    };
    let values = x.to_f32();
    let m = m as usize;
    let row = |i: u64| &values[i as usize * m..][..m];
    let out: Vec<f32> = distance::pairs(n)
        .map(|(i, j)| {
            let diffs = row(i).iter().zip(row(j)).map(|(x, y)| x - y);
            norm.distance(diffs, NanInMax::Kept)
        })
        .collect();
    Tensor::f32(vec![out.len() as u64], out)
}
