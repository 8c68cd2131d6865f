//! Ops that work along one axis or a group of trailing axes of a constant: log-softmax,
//! arg-extremes and `max.dim`/`min.dim` (first index on ties, NaN wins as in torch),
//! `topk`, `kthvalue`, `sort` and `argsort`, `cummax`/`cummin`, `searchsorted`, `bucketize`, `renorm`, `cartesian_prod`, the order statistics (`median`, `quantile` and their NaN-skipping forms, by
//! [`order`]'s plan), `msort`, `logcumsumexp`, the trapezoid rule, `gradient`, `diff`,
//! `roll`, `unfold`, the normalisations (layer, group, instance, RMS, and BatchNorm with
//! running statistics), and the matrix norms torch computes without singular values.

use super::tensor::{axis, element_count, Reduction, Tensor};
use super::Args;
use crate::combine;
use crate::dim::Dim;
use crate::fourier;
use crate::gradient;
use crate::linalg;
use crate::matrix_norm::{MatrixNorm, Norm, Order};
use crate::order;
use crate::program::Argument;
use crate::search;
use crate::series::Scalar;
use crate::spectrum;

/// `x` viewed as `[outer, n, inner]` around axis `at`.
fn around(x: &Tensor, at: usize) -> (usize, usize, usize) {
    let outer: u64 = x.dims()[..at].iter().product();
    let inner: u64 = x.dims()[at + 1..].iter().product();
    (outer as usize, x.dims()[at] as usize, inner as usize)
}

/// The extreme of each run along `at` and its first index (NaN counts as the extreme).
fn extreme(x: &Tensor, at: usize, largest: bool) -> Result<(Vec<f32>, Vec<i64>), String> {
    let (outer, n, inner) = around(x, at);
    if n == 0 {
        return Err("an arg-extreme over an empty axis".into());
    }
    let v = x.to_f32();
    let mut values = Vec::with_capacity(outer * inner);
    let mut indices = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for q in 0..inner {
            let (mut best, mut best_at) = (v[o * n * inner + q], 0usize);
            for i in 1..n {
                if best.is_nan() {
                    break;
                }
                let c = v[(o * n + i) * inner + q];
                if c.is_nan() || (largest && c > best) || (!largest && c < best) {
                    best = c;
                    best_at = i;
                }
            }
            values.push(best);
            indices.push(best_at as i64);
        }
    }
    Ok((values, indices))
}

/// The sizes of `x` with axis `at` kept as 1 or removed.
fn reduced_dims(x: &Tensor, at: usize, keep: bool) -> Vec<u64> {
    let mut dims = x.dims().to_vec();
    if keep {
        dims[at] = 1;
    } else {
        dims.remove(at);
    }
    dims
}

/// `argmax`/`argmin` (no `dim`: over the flattened tensor), `max.dim`/`min.dim`.
fn arg_extreme(op: &str, a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let s = a.tensor("self")?;
    let largest = op.starts_with("argmax") || op.starts_with("max");
    let keep = a.bool("keepdim")?;
    let (x, at, dims) = match a.optional_int("dim")? {
        Some(d) => {
            let at = Dim::wrap(d, s.rank())?.view_axis();
            if s.rank() == 0 {
                (s.reshape(&[1])?, 0, Vec::new())
            } else {
                (s.clone(), at, reduced_dims(&s, at, keep))
            }
        }
        None => {
            let dims = if keep { vec![1; s.rank()] } else { Vec::new() };
            (s.reshape(&[-1])?, 0, dims)
        }
    };
    let (values, indices) = extreme(&x, at, largest)?;
    let index = Tensor::i64(dims.clone(), indices)?;
    if op.starts_with("arg") {
        return Ok(vec![index]);
    }
    // An integer tensor's extreme keeps its type.
    let values = Tensor::f32(dims, values)?.cast(matches!(x.values(), super::Values::I64(_)))?;
    Ok(vec![values, index])
}

/// torch's sort order of two values: NaN above every number and equal to NaN, `-0.0` equal
/// to `0.0`; `descending` reverses it (NaN first).
fn sort_order(a: f32, b: f32, descending: bool) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let ascending = match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    };
    if descending {
        ascending.reverse()
    } else {
        ascending
    }
}

/// `topk`: the `k` largest (or smallest) along `dim`, sorted, with their indices; tied
/// values among those kept (or at the cut) are refused.
fn topk(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    let at = Dim::wrap(a.int("dim")?, x.rank())?.view_axis();
    let largest = a.bool("largest")?;
    let k = usize::try_from(a.int("k")?).map_err(|_| "a negative k")?;
    let x = if x.rank() == 0 { x.reshape(&[1])? } else { x };
    let (outer, n, inner) = around(&x, at);
    if k > n {
        return Err(format!("topk of {k} from {n}"));
    }
    let v = x.to_f32();
    let mut dims = x.dims().to_vec();
    dims[at] = k as u64;
    let count = element_count(&dims)? as usize;
    let (mut values, mut indices) = (vec![0f32; count], vec![0i64; count]);
    for o in 0..outer {
        for q in 0..inner {
            let mut order: Vec<usize> = (0..n).collect();
            let key = |i: usize| v[(o * n + i) * inner + q];
            let compare = |p: usize, r: usize| sort_order(key(p), key(r), largest);
            order.sort_by(|&p, &r| compare(p, r));
            // torch leaves the order of tied values' indices unspecified.
            let kept = &order[..(k + 1).min(n)];
            if kept.windows(2).any(|w| compare(w[0], w[1]).is_eq()) {
                return Err(
                    "topk of tied values: torch's order of their indices is unspecified".into(),
                );
            }
            for (j, &i) in order.iter().take(k).enumerate() {
                values[(o * k + j) * inner + q] = key(i);
                indices[(o * k + j) * inner + q] = i as i64;
            }
        }
    }
    let values =
        Tensor::f32(dims.clone(), values)?.cast(matches!(x.values(), super::Values::I64(_)))?;
    Ok(vec![values, Tensor::i64(dims, indices)?])
}

/// Whether a sort asks for stability (`stable=True`; `sort.stable` takes `None` as no).
fn stable(a: &Args<'_>) -> Result<bool, String> {
    match a.node_arg("stable") {
        None | Some(Argument::None) => Ok(false),
        Some(Argument::Bool(b)) => Ok(*b),
        Some(other) => Err(format!("argument `stable` is {}", other.kind())),
    }
}

/// `sort` (and `argsort`, its indices) along `dim`: the values in torch's sort order (NaN
/// above every number: last ascending, first descending) and their indices, ties in their
/// input order as torch's stable sort keeps them; tied values without `stable=True` are
/// refused, torch leaving the order of their indices unspecified. A 0-d tensor is its own
/// sort (dimension 0 or −1, as torch wraps it).
fn sort(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    let dims = x.dims().to_vec();
    let at = Dim::wrap(a.int("dim")?, x.rank())?.view_axis();
    let descending = a.bool("descending")?;
    let stable = stable(a)?;
    let integer = matches!(x.values(), super::Values::I64(_));
    let x = if x.rank() == 0 { x.reshape(&[1])? } else { x };
    let (outer, n, inner) = around(&x, at);
    let v = x.to_f32();
    let mut values = vec![0f32; outer * n * inner];
    let mut indices = vec![0i64; outer * n * inner];
    for o in 0..outer {
        for q in 0..inner {
            let key = |i: usize| v[(o * n + i) * inner + q];
            let compare = |p: usize, r: usize| sort_order(key(p), key(r), descending);
            let mut order: Vec<usize> = (0..n).collect();
            // A stable sort: ties keep their input order.
            order.sort_by(|&p, &r| compare(p, r));
            if !stable && order.windows(2).any(|w| compare(w[0], w[1]).is_eq()) {
                return Err(
                    "a sort of tied values without stable=True: torch's order of their indices is unspecified"
                        .into(),
                );
            }
            for (j, &i) in order.iter().enumerate() {
                values[(o * n + j) * inner + q] = key(i);
                indices[(o * n + j) * inner + q] = i as i64;
            }
        }
    }
    let values = Tensor::f32(dims.clone(), values)?.cast(integer)?;
    Ok(vec![values, Tensor::i64(dims, indices)?])
}

/// `kthvalue`: the `k`-th smallest value along `dim` in torch's sort order (NaN above
/// every number) and its index; a value held by several entries is refused, torch's
/// selection leaving which of their indices it gives unspecified.
fn kthvalue(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    let at = Dim::wrap(a.int("dim")?, x.rank())?.view_axis();
    let keep = a.bool("keepdim")?;
    let integer = matches!(x.values(), super::Values::I64(_));
    let dims = if x.rank() == 0 {
        Vec::new()
    } else {
        reduced_dims(&x, at, keep)
    };
    let x = if x.rank() == 0 { x.reshape(&[1])? } else { x };
    let (outer, n, inner) = around(&x, at);
    let k = a.int("k")?;
    let kth = usize::try_from(k)
        .ok()
        .filter(|k| (1..=n).contains(k))
        .ok_or_else(|| format!("kthvalue's k = {k} is outside 1..={n}"))?
        - 1;
    let v = x.to_f32();
    let (mut values, mut indices) = (Vec::with_capacity(outer * inner), Vec::new());
    for o in 0..outer {
        for q in 0..inner {
            let key = |i: usize| v[(o * n + i) * inner + q];
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&p, &r| sort_order(key(p), key(r), false));
            let picked = order[kth];
            if (0..n).any(|i| i != picked && sort_order(key(i), key(picked), false).is_eq()) {
                return Err(
                    "kthvalue of a value several entries hold: torch's choice of index is unspecified"
                        .into(),
                );
            }
            values.push(key(picked));
            indices.push(picked as i64);
        }
    }
    let values = Tensor::f32(dims.clone(), values)?.cast(integer)?;
    Ok(vec![values, Tensor::i64(dims, indices)?])
}

/// `cummax`/`cummin` along `dim`, as torch's `cummax_cummin_helper` scans: entry `i`
/// takes the value at `i` when it is NaN, or when no NaN came before and it is at least
/// (`cummax`; at most, `cummin`) the running value; the index is where that value was
/// taken.
fn running_extreme(a: &Args<'_>, largest: bool) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    let dims = x.dims().to_vec();
    let at = Dim::wrap(a.int("dim")?, x.rank())?.view_axis();
    let integer = matches!(x.values(), super::Values::I64(_));
    let x = if x.rank() == 0 { x.reshape(&[1])? } else { x };
    let (outer, n, inner) = around(&x, at);
    let v = x.to_f32();
    let mut values = vec![0f32; v.len()];
    let mut indices = vec![0i64; v.len()];
    for o in 0..outer {
        for q in 0..inner {
            let place = |i: usize| (o * n + i) * inner + q;
            let (mut value, mut index) = (v[place(0)], 0usize);
            for i in 0..n {
                let c = v[place(i)];
                let takes = if largest { c >= value } else { c <= value };
                if c.is_nan() || (!value.is_nan() && takes) {
                    (value, index) = (c, i);
                }
                values[place(i)] = value;
                indices[place(i)] = index as i64;
            }
        }
    }
    let values = Tensor::f32(dims.clone(), values)?.cast(integer)?;
    Ok(vec![values, Tensor::i64(dims, indices)?])
}

/// `searchsorted` of a number (`.Scalar`) or of each entry of a tensor (`.Tensor`) in a
/// sequence searched row by row ([`search::rows`]), read through `sorter` when given:
/// torch's binary search ([`search::position`]), int64 (int32 with `out_int32`, the
/// recorded type).
fn searchsorted(a: &Args<'_>, tensor: bool) -> Result<Tensor, String> {
    let upper = search::upper(a.node)?;
    a.bool("out_int32")?;
    let x = a.tensor("sorted_sequence")?;
    let values = if tensor {
        a.tensor("self")?
    } else {
        if x.rank() != 1 {
            return Err(format!(
                "searchsorted of a number in a {}-D sequence (torch needs 1-D)",
                x.rank()
            ));
        }
        Tensor::f32(Vec::new(), vec![a.number("self")? as f32])?
    };
    let (rows, n, m) = search::rows(x.dims(), values.dims())?;
    let mut sequence = x.to_f32();
    if !matches!(a.node_arg("sorter"), None | Some(Argument::None)) {
        let sorter = a.tensor("sorter")?;
        let at = search::sorter_positions(x.dims(), sorter.dims(), &sorter.to_i64()?)?;
        sequence = at
            .iter()
            .enumerate()
            .map(|(k, &i)| sequence[k / n * n + i as usize])
            .collect();
    }
    let v = values.to_f32();
    let found = (0..rows * m)
        .map(|k| {
            let row = &sequence[k / m.max(1) * n..][..n];
            search::position(row, v[k], upper) as i64
        })
        .collect();
    Tensor::i64(values.dims().to_vec(), found)
}

/// `bucketize.Tensor`: each entry of `self` searched in the 1-D `boundaries` by torch's
/// binary search ([`search::position`]), with `right` the upper bound.
fn bucketize(a: &Args<'_>) -> Result<Tensor, String> {
    let upper = a.bool("right")?;
    a.bool("out_int32")?;
    let (x, edges) = (a.tensor("self")?, a.tensor("boundaries")?);
    if edges.rank() != 1 {
        return Err(format!(
            "bucketize in boundaries of sizes {:?} (torch needs 1-D)",
            edges.dims()
        ));
    }
    let edges = edges.to_f32();
    let found = x
        .to_f32()
        .iter()
        .map(|&v| search::position(&edges, v, upper) as i64)
        .collect();
    Tensor::i64(x.dims().to_vec(), found)
}

/// The vector norm of order `p` of `values` (`torch.linalg.vector_norm`), NaN through.
fn vector_norm(values: &[f32], p: f64) -> f32 {
    let magnitudes = values.iter().map(|v| f64::from(v.abs()));
    let norm = if values.iter().any(|v| v.is_nan()) {
        f64::NAN
    } else if p == f64::INFINITY {
        magnitudes.fold(0.0, f64::max)
    } else if p == f64::NEG_INFINITY {
        magnitudes.fold(f64::INFINITY, f64::min)
    } else if p == 0.0 {
        magnitudes.filter(|&m| m != 0.0).count() as f64
    } else {
        magnitudes.map(|m| m.powf(p)).sum::<f64>().powf(1.0 / p)
    };
    norm as f32
}

/// `renorm` as torch's kernel computes it: each slice along `dim` times `maxnorm / (norm +
/// 1e-7)` where its `p`-norm over the other dimensions exceeds `maxnorm` (in float32).
fn renorm(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    if matches!(x.values(), super::Values::I64(_)) || x.rank() < 2 {
        return Err("renorm of an integer tensor or of fewer than 2 dimensions".into());
    }
    let p = a.number("p")?;
    let maxnorm = a.number("maxnorm")? as f32;
    let at = axis(a.int("dim")?, x.rank())?;
    let (outer, n, inner) = around(&x, at);
    let mut v = x.to_f32();
    for i in 0..n {
        let places: Vec<usize> = (0..outer)
            .flat_map(|o| (0..inner).map(move |q| (o * n + i) * inner + q))
            .collect();
        let slice: Vec<f32> = places.iter().map(|&k| v[k]).collect();
        let norm = vector_norm(&slice, p);
        let factor = if norm > maxnorm {
            maxnorm / (norm + 1e-7)
        } else {
            1.0
        };
        for k in places {
            v[k] *= factor;
        }
    }
    Tensor::f32(x.dims().to_vec(), v)
}

/// The 1-D tensor `x` read at `index`, under sizes `dims`.
fn read_at(x: &Tensor, index: &[u64], dims: Vec<u64>) -> Result<Tensor, String> {
    if x.rank() != 1 {
        return Err(format!("a {}-D tensor where torch needs 1-D", x.rank()));
    }
    let v = x.to_f32();
    let values = index.iter().map(|&i| v[i as usize]).collect();
    Tensor::f32(dims, values)?.cast(matches!(x.values(), super::Values::I64(_)))
}

/// `cartesian_prod`: one tensor is itself; several are read at [`combine::product`]'s
/// indices, side by side.
fn cartesian_prod(a: &Args<'_>) -> Result<Tensor, String> {
    let tensors = a.tensors("tensors")?;
    if let [x] = tensors.as_slice() {
        return Ok(x.clone());
    }
    let sizes: Vec<u64> = tensors
        .iter()
        .map(|t| t.dims().first().copied().unwrap_or(1))
        .collect();
    let indices = combine::product(&sizes)?;
    let count = indices.first().map_or(0, |i| i.len() as u64);
    let columns = tensors
        .iter()
        .zip(&indices)
        .map(|(x, index)| read_at(x, index, vec![count, 1]))
        .collect::<Result<Vec<_>, _>>()?;
    Tensor::cat(&columns, 1)
}

/// An order statistic ([`order::plan`]: `median`, `nanmedian`, `quantile`,
/// `nanquantile`) along `dim` or over the flattened tensor; with `.dim` the medians also
/// give the index of their value: the first NaN's where a NaN makes `median` NaN (torch's
/// `median_impl` finds it first), else the one entry holding the value; a value held by
/// several entries is refused, torch leaving which of them it names unspecified.
fn order_statistic(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    if !order::of_tensor_q(a.node) {
        let (stat, along) = order::plan(a.node)?;
        return statistic(a, stat, along);
    }
    // A tensor `q`: one statistic per entry, stacked in front (torch's `quantile`).
    let q = a.tensor("q")?;
    if q.rank() > 1 || q.to_f32().is_empty() {
        return Err(format!(
            "quantile by a q of sizes {:?} (torch needs 0-d or 1-D, and the export at least one)",
            q.dims()
        ));
    }
    let (mut values, mut dims) = (Vec::new(), Vec::new());
    for &entry in &q.to_f32() {
        let (stat, along) = order::plan_at(a.node, Some(entry))?;
        let [one] = &statistic(a, stat, along)?[..] else {
            return Err("quantile gives one tensor".into());
        };
        dims = one.dims().to_vec();
        values.extend(one.to_f32());
    }
    let mut stacked = q.dims().to_vec();
    stacked.extend(dims);
    Ok(vec![Tensor::f32(stacked, values)?])
}

/// One order statistic `stat` of `self` along `along` ([`order_statistic`]).
fn statistic(
    a: &Args<'_>,
    stat: order::Quantile,
    along: order::Along,
) -> Result<Vec<Tensor>, String> {
    let s = a.tensor("self")?;
    let integer = matches!(s.values(), super::Values::I64(_));
    if integer && a.node.target.contains("quantile") {
        return Err("quantile of an integer tensor (torch needs float)".into());
    }
    let (x, at, dims) = match along.dim {
        Some(d) => {
            let at = Dim::wrap(d, s.rank())?.view_axis();
            if s.rank() == 0 {
                (s.reshape(&[1])?, 0, Vec::new())
            } else {
                (s.clone(), at, reduced_dims(&s, at, along.keep))
            }
        }
        None => {
            let dims = if along.keep {
                vec![1; s.rank()]
            } else {
                Vec::new()
            };
            (s.reshape(&[-1])?, 0, dims)
        }
    };
    let (outer, n, inner) = around(&x, at);
    if n == 0 {
        return Err("an order statistic of no values".into());
    }
    let v = x.to_f32();
    let (mut values, mut indices) = (Vec::new(), Vec::new());
    for o in 0..outer {
        for q in 0..inner {
            let key = |i: usize| v[(o * n + i) * inner + q];
            let mut sorted: Vec<f32> = (0..n).map(key).collect();
            sorted.sort_by(|&p, &r| sort_order(p, r, false));
            let value = stat.of_sorted(&sorted);
            values.push(value);
            if !stat.indexed {
                continue;
            }
            let same = |i: &usize| {
                let k = key(*i);
                k == value || (k.is_nan() && value.is_nan())
            };
            let holders: Vec<usize> = (0..n).filter(same).collect();
            let index = match holders[..] {
                [first, ..] if value.is_nan() && !stat.skip_nan => first,
                [only] => only,
                _ => {
                    return Err(
                        "a median held by several entries: torch's choice of their index is unspecified"
                            .into(),
                    )
                }
            };
            indices.push(index as i64);
        }
    }
    let values = Tensor::f32(dims.clone(), values)?.cast(integer)?;
    if stat.indexed {
        Ok(vec![values, Tensor::i64(dims, indices)?])
    } else {
        Ok(vec![values])
    }
}

/// `msort`: the values sorted ascending along the first dimension (NaN last), as
/// `sort(self, 0).values`.
fn msort(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    if x.rank() == 0 {
        return Ok(x);
    }
    let (outer, n, inner) = around(&x, 0);
    let v = x.to_f32();
    let mut y = vec![0f32; v.len()];
    for o in 0..outer {
        for q in 0..inner {
            let mut run: Vec<f32> = (0..n).map(|i| v[(o * n + i) * inner + q]).collect();
            run.sort_by(|&p, &r| sort_order(p, r, false));
            for (i, value) in run.into_iter().enumerate() {
                y[(o * n + i) * inner + q] = value;
            }
        }
    }
    Tensor::f32(x.dims().to_vec(), y)?.cast(matches!(x.values(), super::Values::I64(_)))
}

/// `roll`: entries shifted along `dims` (none: over the flattened tensor), wrapping.
fn roll(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let shifts = a.ints("shifts")?;
    let dims = match a.node_arg("dims") {
        None | Some(Argument::None) => Vec::new(),
        Some(_) => a.ints("dims")?,
    };
    if dims.is_empty() {
        let [shift] = shifts[..] else {
            return Err("roll of a flattened tensor by several shifts".into());
        };
        let flat = x.reshape(&[-1])?;
        let rolled = roll_axis(&flat, 0, shift)?;
        let d: Vec<i64> = x.dims().iter().map(|&s| s as i64).collect();
        return rolled.reshape(&d);
    }
    if dims.len() != shifts.len() {
        return Err("roll with as many shifts as dims expected".into());
    }
    let mut y = x.clone();
    for (&d, &s) in dims.iter().zip(&shifts) {
        y = roll_axis(&y, axis(d, x.rank())?, s)?;
    }
    Ok(y)
}

/// A complex-to-real `torch.fft` transform of a real tensor ([`fourier::real_transform`]),
/// computed in float64.
fn real_transform(op: &str, a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let passes = fourier::real_transform(a.node, op, x.dims())?;
    let dims: Vec<usize> = x.dims().iter().map(|&d| d as usize).collect();
    let values: Vec<f64> = x.to_f32().into_iter().map(f64::from).collect();
    let (dims, y) = fourier::apply(&passes, &dims, &values);
    Tensor::f32(
        dims.into_iter().map(|d| d as u64).collect(),
        y.into_iter().map(|v| v as f32).collect(),
    )
}

/// `fftshift`/`ifftshift`: rolls by [`fourier::shifts`].
fn fft_shift(op: &str, a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let mut y = x.clone();
    for (at, shift) in fourier::shifts(a.node, op, x.dims())? {
        y = roll_axis(&y, at, shift)?;
    }
    Ok(y)
}

fn roll_axis(x: &Tensor, at: usize, shift: i64) -> Result<Tensor, String> {
    let n = x.dims()[at] as i64;
    if n == 0 {
        return Ok(x.clone());
    }
    let picks: Vec<i64> = (0..n).map(|i| (i - shift).rem_euclid(n)).collect();
    x.index_axis(at, &Tensor::i64(vec![n as u64], picks)?)
}

/// `diff(x, n, dim, prepend, append)`: `x[1:] − x[:-1]` along `dim`, `n` times, after
/// joining `prepend` and `append` (bools: `!=`, as torch's logical xor).
/// `n = 0` is `self` itself, `prepend` and `append` unread (torch's `diff`).
fn diff(a: &Args<'_>) -> Result<Tensor, String> {
    let mut x = a.tensor("self")?;
    let at = axis(a.int("dim")?, x.rank())?;
    let times = a.int("n")?;
    if times < 0 {
        return Err(format!("diff with n = {times} (torch needs n ≥ 0)"));
    }
    if times == 0 {
        return Ok(x);
    }
    let mut parts = Vec::new();
    if a.is_given("prepend") {
        parts.push(a.tensor("prepend")?);
    }
    parts.push(x.clone());
    if a.is_given("append") {
        parts.push(a.tensor("append")?);
    }
    if parts.len() > 1 {
        x = Tensor::cat(&parts, at)?;
    }
    for _ in 0..times {
        let n = x.dims()[at] as i64;
        if n == 0 {
            break;
        }
        let later = x.slice(at, 1, n, 1)?;
        let earlier = x.slice(at, 0, n - 1, 1)?;
        x = Tensor::zip(&later, &earlier, |p, q| p - q, Some(i64::checked_sub))?;
    }
    Ok(x)
}

/// torch's `_log_add_exp_helper(x, y)`, in float64 as its CPU kernel accumulates:
/// `log1p(exp(min − max)) + max`, NaN propagated, `x` where both are the same infinity.
fn log_add_exp(x: f64, y: f64) -> f64 {
    let (low, high) = if y.is_nan() {
        (y, y)
    } else if y < x {
        (y, x)
    } else {
        (x, y)
    };
    if low != high || low.is_finite() {
        (low - high).exp().ln_1p() + high
    } else {
        x
    }
}

/// `logcumsumexp(self, dim)`: the running [`log_add_exp`] from −inf, in float64, each
/// result rounded to float32.
fn logcumsumexp(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let at = Dim::wrap(a.int("dim")?, x.rank())?.view_axis();
    let dims = x.dims().to_vec();
    let x = if x.rank() == 0 { x.reshape(&[1])? } else { x };
    let (outer, n, inner) = around(&x, at);
    let v = x.to_f32();
    let mut y = vec![0f32; v.len()];
    for o in 0..outer {
        for q in 0..inner {
            let mut running = f64::NEG_INFINITY;
            for i in 0..n {
                let k = (o * n + i) * inner + q;
                running = log_add_exp(f64::from(v[k]), running);
                y[k] = running as f32;
            }
        }
    }
    Tensor::f32(dims, y)
}

/// `trapezoid.dx`/`trapz.dx(y, dx, dim)`: torch's `do_trapezoid`, `(Σ y − (y₀ + yₙ₋₁)·0.5)·dx`
/// (the sum in float64, the rest in float32); no entries give zeros.
fn trapezoid(a: &Args<'_>) -> Result<Tensor, String> {
    let y = a.tensor("y")?;
    let at = axis(a.int("dim")?, y.rank())?;
    let dx = a.number("dx")? as f32;
    let n = y.dims()[at] as i64;
    let dims = reduced_dims(&y, at, false);
    if n == 0 {
        return Tensor::f32(dims.clone(), vec![0.0; element_count(&dims)? as usize]);
    }
    let total = y.reduce(&[at], false, Reduction::Sum)?;
    let ends = Tensor::zip(
        &y.select(at, 0)?,
        &y.select(at, n - 1)?,
        |p, q| (p + q) * 0.5,
        None,
    )?;
    Ok(Tensor::zip(&total, &ends, |s, e| s - e, None)?.map(|v| v * dx))
}

/// `cumulative_trapezoid.dx(y, dx, dim)`: torch's `do_cumulative_trapezoid`,
/// `cumsum(dx / 2 · (y[:-1] + y[1:]))`.
fn cumulative_trapezoid(a: &Args<'_>) -> Result<Tensor, String> {
    let y = a.tensor("y")?;
    let at = axis(a.int("dim")?, y.rank())?;
    let step = (a.number("dx")? / 2.0) as f32;
    let n = y.dims()[at] as i64;
    let left = y.slice(at, 0, (n - 1).max(0), 1)?;
    let right = y.slice(at, 1.min(n), n, 1)?;
    Tensor::zip(&left, &right, |p, q| step * (p + q), None)?.cumsum(at)
}

/// `gradient` at scalar spacings ([`gradient::plan`]), one tensor per dimension asked for.
fn gradients(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    if matches!(x.values(), super::Values::I64(_)) {
        return Err("gradient of an integer tensor".into());
    }
    let (directions, edge_order) = gradient::plan(a.node, x.dims())?;
    let mut out = Vec::with_capacity(directions.len());
    for gradient::Direction { dim, spacing } in directions {
        let n = x.dims()[dim] as i64;
        let h = spacing as f32;
        let edge = |at_end: bool| -> Result<Tensor, String> {
            let weights = gradient::edge_weights(edge_order, at_end);
            let start = if at_end { n - weights.len() as i64 } else { 0 };
            let mut sum: Option<Tensor> = None;
            for (k, &w) in weights.iter().enumerate() {
                let at = start + k as i64;
                let term = x.slice(dim, at, at + 1, 1)?.map(|v| w * v);
                sum = Some(match sum {
                    None => term,
                    Some(s) => Tensor::zip(&s, &term, |p, q| p + q, None)?,
                });
            }
            Ok(sum.ok_or("gradient without edge weights")?.map(|v| v / h))
        };
        let mut parts = vec![edge(false)?];
        if n > 2 {
            let later = x.slice(dim, 2, n, 1)?;
            let earlier = x.slice(dim, 0, n - 2, 1)?;
            parts.push(Tensor::zip(
                &later,
                &earlier,
                |p, q| (p - q) / h / 2.0,
                None,
            )?);
        }
        parts.push(edge(true)?);
        out.push(Tensor::cat(&parts, dim)?);
    }
    Ok(out)
}

/// `gradient` at sample points ([`gradient::stencil`]), one tensor per dimension asked
/// for: `a·x[:-2] + b·x[1:-1] + c·x[2:]` inside, the ends by the stencil's order.
fn gradients_at_points(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    if matches!(x.values(), super::Values::I64(_)) {
        return Err("gradient of an integer tensor".into());
    }
    let (dims, edge_order) = gradient::directions(a.node, x.dims())?;
    let points = a.tensors("spacing")?;
    if points.len() != dims.len() {
        return Err(format!(
            "gradient with {} spacings for {} dimensions",
            points.len(),
            dims.len()
        ));
    }
    let mut out = Vec::with_capacity(dims.len());
    for (dim, points) in dims.into_iter().zip(points) {
        let n = x.dims()[dim];
        if points.dims() != [n] {
            return Err(format!(
                "gradient at sample points of sizes {:?} along a dimension of {n} entries",
                points.dims()
            ));
        }
        let s = gradient::stencil(&points.to_f32(), edge_order);
        let n = n as i64;
        let entry = |k: i64, len: i64| x.slice(dim, k, k + len, 1);
        let along = |w: &[f32]| -> Result<Tensor, String> {
            let mut sizes = vec![1; x.rank() - dim];
            sizes[0] = w.len() as u64;
            Tensor::f32(sizes, w.to_vec())
        };
        // `Σ wₖ·x[from + k]` over the weights' tensors, summed in order.
        let weighted = |terms: [(Tensor, i64); 3], len: i64| -> Result<Tensor, String> {
            let mut sum: Option<Tensor> = None;
            for (w, from) in terms {
                let term = Tensor::zip(&w, &entry(from, len)?, |p, q| p * q, None)?;
                sum = Some(match sum {
                    None => term,
                    Some(acc) => Tensor::zip(&acc, &term, |p, q| p + q, None)?,
                });
            }
            sum.ok_or_else(|| "gradient without weights".to_owned())
        };
        let three = |w: [f32; 3], from: i64| -> Result<[(Tensor, i64); 3], String> {
            let scalar = |k: usize| Tensor::f32(Vec::new(), vec![w[k]]);
            Ok([
                (scalar(0)?, from),
                (scalar(1)?, from + 1),
                (scalar(2)?, from + 2),
            ])
        };
        let (first, last) = match s.ends {
            gradient::Ends::First { first, last } => (
                Tensor::zip(&entry(1, 1)?, &entry(0, 1)?, |p, q| (p - q) / first, None)?,
                Tensor::zip(
                    &entry(n - 1, 1)?,
                    &entry(n - 2, 1)?,
                    |p, q| (p - q) / last,
                    None,
                )?,
            ),
            gradient::Ends::Second { start, end } => (
                weighted(three(start, 0)?, 1)?,
                weighted(three(end, n - 3)?, 1)?,
            ),
        };
        let mut parts = vec![first];
        if n > 2 {
            let [wa, wb, wc] = &s.interior;
            parts.push(weighted(
                [(along(wa)?, 0), (along(wb)?, 1), (along(wc)?, 2)],
                n - 2,
            )?);
        }
        parts.push(last);
        out.push(Tensor::cat(&parts, dim)?);
    }
    Ok(out)
}

/// `triu`/`tril`: the entries on and above (below) diagonal `diagonal` of the last two
/// axes kept, the others 0.
fn triangle(a: &Args<'_>, upper: bool) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let diagonal = a.int("diagonal")?;
    let &[.., rows, cols] = x.dims() else {
        return Err("triu/tril of a tensor below rank 2".into());
    };
    let keep: Vec<i64> = (0..rows * cols)
        .map(|k| {
            let (i, j) = ((k / cols) as i64, (k % cols) as i64);
            i64::from(if upper {
                j - i >= diagonal
            } else {
                j - i <= diagonal
            })
        })
        .collect();
    let mask = Tensor::i64(vec![rows, cols], keep)?;
    Tensor::zip(
        &x,
        &mask,
        |v, m| if m != 0.0 { v } else { 0.0 },
        Some(|v, m| Some(if m != 0 { v } else { 0 })),
    )
}

/// `Tensor.unfold(dimension, size, step)`: windows along one axis, as a new last axis. A
/// 0-d tensor is unfolded along its one-entry 1-d view into torch's sizes, `[size]`.
fn unfold(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let dim = Dim::wrap(a.int("dimension")?, x.rank())?;
    let at = dim.view_axis();
    let x = if dim == Dim::OfScalar {
        x.reshape(&[1])?
    } else {
        x
    };
    let size = u64::try_from(a.int("size")?).map_err(|_| "a negative unfold size")?;
    let step = u64::try_from(a.int("step")?)
        .ok()
        .filter(|&s| s > 0)
        .ok_or("an unfold step below 1")?;
    let n = x.dims()[at];
    let count = n
        .checked_sub(size)
        .ok_or("an unfold window larger than its axis")?
        / step
        + 1;
    let mut windows = Vec::with_capacity(count as usize);
    for w in 0..count {
        let piece = x.slice(at, (w * step) as i64, (w * step + size) as i64, 1)?;
        // The window's axis moves last.
        let mut order: Vec<usize> = (0..x.rank()).filter(|&d| d != at).collect();
        order.push(at);
        let moved = piece.permute(&order)?;
        let mut lifted: Vec<i64> = moved.dims().iter().map(|&s| s as i64).collect();
        lifted.insert(at, 1);
        windows.push(moved.reshape(&lifted)?);
    }
    if windows.is_empty() {
        return Err("an unfold without windows".into());
    }
    let y = Tensor::cat(&windows, at)?;
    match dim {
        Dim::Axis(_) => Ok(y),
        Dim::OfScalar => y.reshape(&[size as i64]),
    }
}

/// `(x − mean) / sqrt(var + eps)` over `axes` (biased variance), per the other axes.
fn standardised(x: &Tensor, axes: &[usize], eps: f32) -> Result<Tensor, String> {
    let mean = x.reduce(axes, true, Reduction::Mean)?;
    let variance = x.reduce(axes, true, Reduction::Variance(0.0))?;
    let centred = Tensor::zip(x, &mean, |p, q| p - q, None)?;
    let scale = variance.map(|v| 1.0 / (v + eps).sqrt());
    Tensor::zip(&centred, &scale, |p, q| p * q, None)
}

/// An optional tensor argument.
fn optional(a: &Args<'_>, name: &str) -> Result<Option<Tensor>, String> {
    match a.node_arg(name) {
        None | Some(Argument::None) => Ok(None),
        Some(_) => a.tensor(name).map(Some),
    }
}

/// `y · weight + bias`, the affine tensors reshaped to `shape` first.
fn affine(
    y: Tensor,
    weight: Option<Tensor>,
    bias: Option<Tensor>,
    shape: &[i64],
) -> Result<Tensor, String> {
    let mut y = y;
    if let Some(w) = weight {
        y = Tensor::zip(&y, &w.reshape(shape)?, |p, q| p * q, None)?;
    }
    if let Some(b) = bias {
        y = Tensor::zip(&y, &b.reshape(shape)?, |p, q| p + q, None)?;
    }
    Ok(y)
}

/// The normalisations.
fn norm(op: &str, a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("input")?;
    // rms_norm's default eps (None) is read below; the others' is 1e-5 or required.
    let eps = a.number_or("eps", 1e-5)? as f32;
    match op {
        "layer_norm.default" | "rms_norm.default" | "native_layer_norm.default" => {
            let shape = a.ints("normalized_shape")?;
            let first = x
                .rank()
                .checked_sub(shape.len())
                .filter(|&f| {
                    x.dims()[f..]
                        .iter()
                        .zip(&shape)
                        .all(|(&d, &s)| d as i64 == s)
                })
                .ok_or_else(|| format!("normalized shape {shape:?} of a tensor {:?}", x.dims()))?;
            let axes: Vec<usize> = (first..x.rank()).collect();
            if op == "native_layer_norm.default" {
                // (output, mean, 1/std), the statistics with the normalised axes kept at 1.
                let mean = x.reduce(&axes, true, Reduction::Mean)?;
                let variance = x.reduce(&axes, true, Reduction::Variance(0.0))?;
                let rstd = variance.map(|v| 1.0 / (v + eps).sqrt());
                let y = standardised(&x, &axes, eps)?;
                let y = affine(y, optional(a, "weight")?, optional(a, "bias")?, &shape)?;
                return Ok(vec![y, mean, rstd]);
            }
            let y = if op == "layer_norm.default" {
                standardised(&x, &axes, eps)?
            } else {
                // torch's default eps for RMSNorm is the dtype's machine epsilon.
                let eps = match a.optional_number("eps")? {
                    Some(e) => e as f32,
                    None => f32::EPSILON,
                };
                let squares = x.map(|v| v * v);
                let mean = squares.reduce(&axes, true, Reduction::Mean)?;
                let scale = mean.map(|m| 1.0 / (m + eps).sqrt());
                Tensor::zip(&x, &scale, |p, q| p * q, None)?
            };
            let bias = if op == "layer_norm.default" {
                optional(a, "bias")?
            } else {
                None
            };
            Ok(vec![affine(y, optional(a, "weight")?, bias, &shape)?])
        }
        "group_norm.default" | "native_group_norm.default" => {
            let native = op == "native_group_norm.default";
            let groups = a.int(if native { "group" } else { "num_groups" })?;
            let groups = u64::try_from(groups).map_err(|_| "negative groups")?;
            let (n, c) = match x.dims() {
                [n, c, ..] if groups > 0 && c % groups == 0 => (*n, *c),
                _ => return Err(format!("group_norm of {:?} in {groups} groups", x.dims())),
            };
            let grouped = x.reshape(&[n as i64, groups as i64, -1])?;
            let y = standardised(&grouped, &[2], eps)?;
            let d: Vec<i64> = x.dims().iter().map(|&s| s as i64).collect();
            let mut per_channel = vec![1i64; x.rank()];
            per_channel[1] = c as i64;
            let y = affine(
                y.reshape(&d)?,
                optional(a, "weight")?,
                optional(a, "bias")?,
                &per_channel,
            )?;
            if !native {
                return Ok(vec![y]);
            }
            // (output, mean, 1/std), each statistic of sizes [N, group].
            let mean = grouped.reduce(&[2], false, Reduction::Mean)?;
            let variance = grouped.reduce(&[2], false, Reduction::Variance(0.0))?;
            Ok(vec![y, mean, variance.map(|v| 1.0 / (v + eps).sqrt())])
        }
        "instance_norm.default" => {
            if x.rank() < 3 {
                return Err("instance_norm of fewer than three axes".into());
            }
            let use_input_stats = a.bool("use_input_stats")?;
            let mut per_channel = vec![1i64; x.rank()];
            per_channel[1] = x.dims()[1] as i64;
            let y = if use_input_stats {
                let axes: Vec<usize> = (2..x.rank()).collect();
                standardised(&x, &axes, eps)?
            } else {
                running(&x, a, eps, &per_channel)?
            };
            Ok(vec![affine(
                y,
                optional(a, "weight")?,
                optional(a, "bias")?,
                &per_channel,
            )?])
        }
        _ => {
            // BatchNorm in eval mode: the running statistics.
            if x.rank() < 2 {
                return Err("BatchNorm of a constant with fewer than two axes".into());
            }
            let mut per_channel = vec![1i64; x.rank()];
            per_channel[1] = x.dims()[1] as i64;
            let y = inference(&x, a, eps, &per_channel)?;
            if op != "batch_norm.default" {
                // The saved mean and inverse std of eval mode are empty.
                return Ok(vec![
                    y,
                    Tensor::f32(vec![0], Vec::new())?,
                    Tensor::f32(vec![0], Vec::new())?,
                ]);
            }
            Ok(vec![y])
        }
    }
}

/// BatchNorm with running statistics as torch's kernel computes it: `x · α + β` with
/// `α = weight / sqrt(var + eps)` and `β = bias − mean · α` per channel.
fn inference(x: &Tensor, a: &Args<'_>, eps: f32, per_channel: &[i64]) -> Result<Tensor, String> {
    let missing = "BatchNorm of a constant in eval mode without running statistics";
    let mean = optional(a, "running_mean")?
        .ok_or(missing)?
        .reshape(per_channel)?;
    let var = optional(a, "running_var")?
        .ok_or(missing)?
        .reshape(per_channel)?;
    let mut alpha = var.map(|v| 1.0 / (v + eps).sqrt());
    if let Some(w) = optional(a, "weight")? {
        alpha = Tensor::zip(&alpha, &w.reshape(per_channel)?, |p, q| p * q, None)?;
    }
    let shift = Tensor::zip(&mean, &alpha, |p, q| -(p * q), None)?;
    let beta = match optional(a, "bias")? {
        Some(b) => Tensor::zip(&b.reshape(per_channel)?, &shift, |p, q| p + q, None)?,
        None => shift,
    };
    let scaled = Tensor::zip(x, &alpha, |p, q| p * q, None)?;
    Tensor::zip(&scaled, &beta, |p, q| p + q, None)
}

/// `(x − running_mean) / sqrt(running_var + eps)` per channel.
fn running(x: &Tensor, a: &Args<'_>, eps: f32, per_channel: &[i64]) -> Result<Tensor, String> {
    let missing = "BatchNorm of a constant in eval mode without running statistics";
    let mean = optional(a, "running_mean")?.ok_or(missing)?;
    let var = optional(a, "running_var")?.ok_or(missing)?;
    let centred = Tensor::zip(x, &mean.reshape(per_channel)?, |p, q| p - q, None)?;
    let scale = var.reshape(per_channel)?.map(|v| 1.0 / (v + eps).sqrt());
    Tensor::zip(&centred, &scale, |p, q| p * q, None)
}

/// `log_softmax` in float32.
fn log_softmax(a: &Args<'_>) -> Result<Tensor, String> {
    if a.dtype()?.is_some_and(|d| d != super::dtype::FLOAT32)
        || a.bool_or("half_to_float", false)?
    {
        return Err("a log_softmax to a dtype other than float32".into());
    }
    a.tensor("self")?
        .along_keeping_sizes(a.int("dim")?, |x, at| {
            let high = x.reduce(&[at], true, Reduction::Max)?;
            let shifted = Tensor::zip(x, &high, |p, q| p - q, None)?;
            let total = shifted
                .map(f32::exp)
                .reduce(&[at], true, Reduction::Sum)?
                .map(f32::ln);
            Tensor::zip(&shifted, &total, |p, q| p - q, None)
        })
}

/// The ops of this file, or `None` for another op.
/// `linalg_matrix_norm` and `linalg_norm` as [`crate::matrix_norm`] plans them, in
/// float32; of the vector norms `linalg_norm` may be, the 2-norm only (as
/// `linalg_vector_norm`'s evaluation).
fn norm_of_matrix(op: &str, a: &Args<'_>) -> Result<Tensor, String> {
    if a.dtype()?.is_some() {
        return Err("a norm computed in another dtype".into());
    }
    let x = a.tensor("self")?;
    let keep = a.bool("keepdim")?;
    let ord = match op {
        "linalg_matrix_norm.str_ord" | "linalg_norm.ord_str" => {
            Some(Order::named(&a.string("ord")?)?)
        }
        _ => a.optional_number("ord")?.map(Order::Number),
    };
    let plan = if op.starts_with("linalg_matrix_norm") {
        let ord = ord.ok_or("argument `ord` is missing")?;
        Norm::Matrix(MatrixNorm::plan(ord, &a.ints("dim")?, x.rank(), keep)?)
    } else {
        let dim = if a.is_given("dim") {
            Some(a.ints("dim")?)
        } else {
            None
        };
        Norm::plan(ord, dim.as_deref(), x.rank(), keep)?
    };
    match plan {
        Norm::Vector { ord: 2.0, dim } => {
            let mut axes = match dim {
                Some(d) => d
                    .iter()
                    .map(|&d| axis(d, x.rank()))
                    .collect::<Result<Vec<_>, _>>()?,
                None => (0..x.rank()).collect(),
            };
            axes.sort_unstable();
            axes.dedup();
            x.reduce(&axes, keep, Reduction::Norm)
        }
        Norm::Vector { ord, .. } => Err(format!(
            "a vector norm of order {ord} (the 2-norm only is evaluated on constants)"
        )),
        Norm::Matrix(MatrixNorm::Frobenius(axes)) => x.reduce(&axes, keep, Reduction::Norm),
        Norm::Matrix(MatrixNorm::Induced {
            summed,
            extreme,
            largest,
        }) => {
            let sums = x.map(f32::abs).reduce(&[summed], keep, Reduction::Sum)?;
            if sums.dims()[extreme] == 0 {
                // torch's reference gives zeros for the largest of nothing; amin refuses.
                if !largest {
                    return Err("the smallest of an empty dimension".into());
                }
                let dims = reduced_dims(&sums, extreme, keep);
                return Tensor::f32(dims.clone(), vec![0.0; element_count(&dims)? as usize]);
            }
            let how = if largest {
                Reduction::Max
            } else {
                Reduction::Min
            };
            sums.reduce(&[extreme], keep, how)
        }
        Norm::Matrix(MatrixNorm::Spectral {
            norm,
            dims: [rows_at, cols_at],
        }) => {
            let order: Vec<usize> = (0..x.rank())
                .filter(|&a| a != rows_at && a != cols_at)
                .chain([rows_at, cols_at])
                .collect();
            let moved = x.permute(&order)?;
            let (rows, cols) = linalg::matrix_sizes(op, moved.dims(), false)?;
            if rows * cols == 0 {
                return Err(format!("{op} of empty matrices"));
            }
            let values = moved
                .to_f32()
                .chunks(rows * cols)
                .map(|m| {
                    let m: Vec<f64> = m.iter().map(|&v| f64::from(v)).collect();
                    spectrum::spectral_norm(&mut Scalar, norm, &m, rows, cols).map(|v| v as f32)
                })
                .collect::<Result<Vec<f32>, String>>()?;
            let dims: Vec<u64> = x
                .dims()
                .iter()
                .enumerate()
                .filter_map(|(a, &d)| match a == rows_at || a == cols_at {
                    false => Some(d),
                    true => keep.then_some(1),
                })
                .collect();
            Tensor::f32(dims, values)
        }
    }
}

pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    let one = |t: Result<Tensor, String>| Some(t.map(|t| vec![t]));
    match op {
        "log_softmax.int" | "_log_softmax.default" => one(log_softmax(a)),
        "argmax.default" | "argmin.default" | "max.dim" | "min.dim" => Some(arg_extreme(op, a)),
        "topk.default" => Some(topk(a)),
        "kthvalue.default" => Some(kthvalue(a)),
        "searchsorted.Scalar" => one(searchsorted(a, false)),
        "searchsorted.Tensor" => one(searchsorted(a, true)),
        "bucketize.Tensor" => one(bucketize(a)),
        "renorm.default" => one(renorm(a)),
        "cartesian_prod.default" => one(cartesian_prod(a)),
        "cummax.default" | "cummin.default" => Some(running_extreme(a, op == "cummax.default")),
        "sort.default" | "sort.stable" => Some(sort(a)),
        "argsort.default" | "argsort.stable" => Some(sort(a).map(|mut sorted| sorted.split_off(1))),
        op if order::OPS.contains(&op) => Some(order_statistic(a)),
        "msort.default" => one(msort(a)),
        "roll.default" => one(roll(a)),
        op if fourier::REAL_TRANSFORMS.contains(&op) => one(real_transform(op, a)),
        op if fourier::SHIFTS.contains(&op) => one(fft_shift(op, a)),
        "diff.default" => one(diff(a)),
        "logcumsumexp.default" => one(logcumsumexp(a)),
        "trapezoid.dx" | "trapz.dx" => one(trapezoid(a)),
        "cumulative_trapezoid.dx" => one(cumulative_trapezoid(a)),
        op if gradient::OPS.contains(&op) => Some(gradients(a)),
        op if gradient::COORDINATE_OPS.contains(&op) => Some(gradients_at_points(a)),
        "triu.default" | "tril.default" => one(triangle(a, op == "triu.default")),
        "unfold.default" => one(unfold(a)),
        "layer_norm.default"
        | "native_layer_norm.default"
        | "rms_norm.default"
        | "group_norm.default"
        | "native_group_norm.default"
        | "instance_norm.default"
        | "_native_batch_norm_legit_no_training.default" => Some(norm(op, a)),
        "batch_norm.default" | "_native_batch_norm_legit.default" | "native_batch_norm.default" => {
            Some(match a.bool("training") {
                Ok(false) => norm(op, a),
                Ok(true) => Err("BatchNorm in training mode (batch statistics)".into()),
                Err(e) => Err(e),
            })
        }
        "linalg_matrix_norm.default"
        | "linalg_matrix_norm.str_ord"
        | "linalg_norm.default"
        | "linalg_norm.ord_str" => one(norm_of_matrix(op, a)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremes_take_the_first_index_and_nan_wins() {
        let x = Tensor::f32(vec![2, 3], vec![1., 3., 3., 2., f32::NAN, 5.]).unwrap();
        let (v, i) = extreme(&x, 1, true).unwrap();
        assert_eq!(i, [1, 1]);
        assert_eq!(v[0], 3.);
        assert!(v[1].is_nan());
        let (_, i) = extreme(&x, 0, false).unwrap();
        assert_eq!(i, [0, 1, 0]);
    }
}
