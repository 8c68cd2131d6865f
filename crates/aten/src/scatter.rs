//! Where each entry of a scatter's result comes from (and where a gather by constant positions
//! reads: `take`, `take_along_dim`). torch's `scatter`, `scatter_add`, `index_add`, `index_copy`,
//! `index_fill`, `index_reduce`, `put`,
//! `scatter_reduce`, `index_put`, `select_scatter`, `slice_scatter` and `masked_scatter`
//! copy `self` and write entries of a source into it at positions their other arguments
//! fix. With those arguments constant, the writes are a [`Plan`]: for every entry of the
//! result, the entries of the source written there, in the order torch's CPU kernel writes
//! them (row-major over the index, the source or the mask). The evaluator folds a plan over
//! constants and the ONNX lowering writes it as reads of the source at constant positions,
//! so both compute the same rule.
//!
//! A plan is over flat (row-major) positions of tensors of known sizes. The lowering builds
//! it over one sample's sizes when the positions are the same for every sample.

use crate::dim::Dim;
use crate::eval::Tensor;

/// How the entries written to one position combine with each other and with `self`'s:
/// `scatter_reduce`'s `reduce` names (torch's `ReductionType`), and a plain write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// The written entry replaces `self`'s (`scatter`, `index_put`, the `*_scatter` views).
    Replace,
    /// `sum` (`scatter_add`, `index_put(accumulate=True)`).
    Sum,
    /// `prod`.
    Prod,
    /// `mean`: the sum divided by the number of entries summed (`self`'s counted when it
    /// is included), rounded down for integers (torch's `div_(count, "floor")`).
    Mean,
    /// `amax`: NaN when any entry is NaN (torch's kernel keeps a NaN source).
    Amax,
    /// `amin`: NaN when any entry is NaN.
    Amin,
}

impl Combine {
    /// `scatter_reduce`'s `reduce` argument.
    pub fn of_reduce(reduce: &str) -> Result<Combine, String> {
        match reduce {
            "sum" => Ok(Combine::Sum),
            "prod" => Ok(Combine::Prod),
            "mean" => Ok(Combine::Mean),
            "amax" => Ok(Combine::Amax),
            "amin" => Ok(Combine::Amin),
            other => Err(format!(
                "scatter_reduce's reduce `{other}` is none of sum, prod, mean, amax, amin"
            )),
        }
    }

    /// `scatter`'s deprecated `reduce` argument (`scatter.reduce`, `scatter.value_reduce`):
    /// `add` sums into `self`, `multiply` multiplies into it.
    pub fn of_scatter(reduce: &str) -> Result<Combine, String> {
        match reduce {
            "add" => Ok(Combine::Sum),
            "multiply" => Ok(Combine::Prod),
            other => Err(format!(
                "scatter's reduce `{other}` is neither add nor multiply"
            )),
        }
    }

    /// The float entry a position starts from when `self`'s is not included (torch's
    /// `scatter_reduce` with `include_self=False` first writes it there): 0 for a sum or
    /// mean (so a sum of −0.0 is +0.0, as torch's), 1 for a product, −∞/+∞ for the
    /// extremes.
    pub fn identity(self) -> f32 {
        match self {
            Combine::Replace | Combine::Sum | Combine::Mean => 0.0,
            Combine::Prod => 1.0,
            Combine::Amax => f32::NEG_INFINITY,
            Combine::Amin => f32::INFINITY,
        }
    }
}

/// Why a plain write (`scatter` of a source, `index_put` without `accumulate`) whose
/// positions repeat one is refused.
pub const REPEATED: &str = "torch documents the result of a repeated index as undefined (which of the entries written to one position is kept is not specified), so no graph can be said to match it";

/// Why `max_unpool` whose indices repeat a position is refused.
pub const UNPOOL_REPEATED: &str = "its indices send several entries to one position, and which of them torch's kernel keeps is not specified (it is not always the last), so no graph can be said to match it";

/// The writes of a scatter: for every flat position of the result (`self`'s sizes), the
/// flat positions of the source written there, in torch's order. Invariant: every source
/// position is below the source's element count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub writes: Vec<Vec<usize>>,
}

/// The most entries a plan's result or source may have (2^24, the evaluator's cap on a
/// tensor's elements, [`crate::eval::MAX_ELEMENTS`]).
const MAX_ENTRIES: u64 = 1 << 24;

fn count(dims: &[u64]) -> Result<usize, String> {
    let mut n: u64 = 1;
    for &d in dims {
        n = n
            .checked_mul(d)
            .filter(|&n| n <= MAX_ENTRIES)
            .ok_or_else(|| format!("sizes {dims:?} hold more than 2^24 entries"))?;
    }
    Ok(n as usize)
}

fn strides(dims: &[u64]) -> Vec<usize> {
    let mut strides = vec![1usize; dims.len()];
    for a in (0..dims.len().saturating_sub(1)).rev() {
        strides[a] = strides[a + 1] * dims[a + 1] as usize;
    }
    strides
}

/// The coordinates of flat position `flat` of a tensor of sizes `dims`.
fn coordinates(mut flat: usize, dims: &[u64]) -> Vec<usize> {
    let mut at = vec![0usize; dims.len()];
    for a in (0..dims.len()).rev() {
        let d = dims[a] as usize;
        at[a] = flat % d.max(1);
        flat /= d.max(1);
    }
    at
}

fn flat(at: &[usize], strides: &[usize]) -> usize {
    at.iter().zip(strides).map(|(c, s)| c * s).sum()
}

impl Plan {
    fn empty(self_dims: &[u64]) -> Result<Plan, String> {
        Ok(Plan {
            writes: vec![Vec::new(); count(self_dims)?],
        })
    }

    /// The most entries written to one position.
    pub fn most_writes(&self) -> usize {
        self.writes.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// A position written more than once, if any (its flat position).
    pub fn repeated(&self) -> Option<usize> {
        self.writes.iter().position(|w| w.len() > 1)
    }

    /// `scatter(self, dim, index, src)` (and `scatter_add`, `scatter_reduce`): index entry
    /// `index[i][j][k]` sends `src[i][j][k]` to `self[index[i][j][k]][j][k]` for `dim` 0,
    /// and so on (torch's `scatter_gather_dtype_check`/`scatter_shape_check`: the same rank
    /// for all three, `index` no larger than `src` anywhere nor than `self` off `dim`, every
    /// index entry in `0..self.size(dim)`; an empty index writes nothing).
    pub fn scatter(
        self_dims: &[u64],
        dim: i64,
        index_dims: &[u64],
        index: &[i64],
        src_dims: &[u64],
    ) -> Result<Plan, String> {
        let mut plan = Plan::empty(self_dims)?;
        let at = Dim::wrap(dim, self_dims.len())?.view_axis();
        if index.is_empty() {
            return Ok(plan);
        }
        // A 0-d tensor is its one-entry 1-d view here (torch's kernels see it so).
        let lift = |d: &[u64]| if d.is_empty() { vec![1] } else { d.to_vec() };
        let (sizes, index_sizes, src_sizes) = (lift(self_dims), lift(index_dims), lift(src_dims));
        let fits = index_sizes.len() == sizes.len()
            && src_sizes.len() == sizes.len()
            && (0..sizes.len())
                .all(|d| index_sizes[d] <= src_sizes[d] && (d == at || index_sizes[d] <= sizes[d]));
        if !fits || count(&index_sizes)? != index.len() {
            return Err(format!(
                "scatter into {self_dims:?} along {dim} by an index of {index_dims:?} from a source of {src_dims:?}: the index must have their rank and be no larger than the source, nor than self but along the dimension"
            ));
        }
        let (self_strides, src_strides) = (strides(&sizes), strides(&src_sizes));
        let size = sizes[at] as i64;
        for (k, &i) in index.iter().enumerate() {
            if !(0..size).contains(&i) {
                return Err(format!(
                    "scatter index {i} is out of range for dimension {at} of size {size}"
                ));
            }
            let mut coordinate = coordinates(k, &index_sizes);
            let source = flat(&coordinate, &src_strides);
            coordinate[at] = i as usize;
            plan.writes[flat(&coordinate, &self_strides)].push(source);
        }
        Ok(plan)
    }

    /// Writes to the positions `targets` lists of `self` (flat), of the source entries
    /// `sources` lists (the same count), in that order.
    pub fn of_pairs(self_dims: &[u64], targets: &[i64], sources: &[i64]) -> Result<Plan, String> {
        let mut plan = Plan::empty(self_dims)?;
        if targets.len() != sources.len() {
            return Err(format!(
                "{} positions written from {} source entries",
                targets.len(),
                sources.len()
            ));
        }
        for (&t, &s) in targets.iter().zip(sources) {
            let (Ok(t), Ok(s)) = (usize::try_from(t), usize::try_from(s)) else {
                return Err(format!("a write from {s} to {t}"));
            };
            let slot = plan
                .writes
                .get_mut(t)
                .ok_or_else(|| format!("position {t} is outside {self_dims:?}"))?;
            slot.push(s);
        }
        Ok(plan)
    }

    /// `masked_scatter(self, mask, source)`: the positions where `mask` (broadcast to
    /// `self`'s sizes, which it must not change) is true take `source`'s entries one after
    /// another in row-major order over the whole tensor (torch's `masked_scatter_`: the
    /// k-th true position gets the source's k-th entry; the source must hold at least as
    /// many entries as the mask has true positions).
    pub fn masked_scatter(
        self_dims: &[u64],
        mask_dims: &[u64],
        mask: &[bool],
        source_dims: &[u64],
    ) -> Result<Plan, String> {
        let mut plan = Plan::empty(self_dims)?;
        let offset = self_dims
            .len()
            .checked_sub(mask_dims.len())
            .ok_or_else(|| format!("a mask of {mask_dims:?} for {self_dims:?}"))?;
        let fits = mask_dims
            .iter()
            .zip(&self_dims[offset..])
            .all(|(&m, &s)| m == s || m == 1);
        if !fits || count(mask_dims)? != mask.len() {
            return Err(format!(
                "a mask of {mask_dims:?} does not broadcast to {self_dims:?}"
            ));
        }
        let mask_strides = strides(mask_dims);
        let available = count(source_dims)?;
        let mut next = 0usize;
        for (t, slot) in plan.writes.iter_mut().enumerate() {
            let at = coordinates(t, self_dims);
            let m: usize = at[offset..]
                .iter()
                .zip(mask_dims)
                .zip(&mask_strides)
                .map(|((&c, &d), &s)| if d == 1 { 0 } else { c * s })
                .sum();
            if mask[m] {
                if next >= available {
                    return Err(format!(
                        "masked_scatter's mask has more true entries than its source's {available}"
                    ));
                }
                slot.push(next);
                next += 1;
            }
        }
        Ok(plan)
    }
}

/// `max_unpool2d(self, indices, output_size)` and `max_unpool3d` (torch's `_max_unpoolnd`,
/// the CPU kernel's writes): `self` holds planes of its last `output_size.len()` dimensions
/// (one or two leading dimensions: channels, or batch and channels), and entry `s` of a plane
/// goes to the flat position `indices[s]` of the same plane of the result, whose planes have
/// the sizes `output_size`. `indices` has `self`'s element count (torch checks its sizes
/// match) and every entry is in `0..` the result's plane size (torch raises "Found an
/// invalid max index" otherwise). The result's sizes are the leading dimensions of `self`
/// followed by `output_size`; positions no entry is written to are 0.
pub fn max_unpool(self_dims: &[u64], indices: &[i64], output_size: &[u64]) -> Result<Plan, String> {
    let k = output_size.len();
    let lead = self_dims
        .len()
        .checked_sub(k)
        .filter(|l| (1..=2).contains(l))
        .ok_or_else(|| {
            format!(
                "max_unpool of {self_dims:?} to planes of {output_size:?}: torch takes {} or {} dimensions",
                k + 1,
                k + 2
            )
        })?;
    let mut out_dims = self_dims[..lead].to_vec();
    out_dims.extend_from_slice(output_size);
    let mut plan = Plan::empty(&out_dims)?;
    let in_plane = count(&self_dims[lead..])?;
    let out_plane = count(output_size)?;
    if count(self_dims)? != indices.len() {
        return Err(format!(
            "max_unpool of {self_dims:?} by {} indices: they must have self's sizes",
            indices.len()
        ));
    }
    for (s, &i) in indices.iter().enumerate() {
        let at = usize::try_from(i)
            .ok()
            .filter(|&i| i < out_plane)
            .ok_or_else(|| format!("max_unpool index {i} is outside a plane of {output_size:?}"))?;
        plan.writes[s / in_plane.max(1) * out_plane + at].push(s);
    }
    Ok(plan)
}

/// `index_add(self, dim, index, source)` (also `index_copy`, `index_reduce`, and
/// `index_fill` with a source of the slices it fills): entry `i` of `index` sends
/// `source.select(dim, i)` to `self.select(dim, index[i])`, in index order (torch's
/// `index_add_cpu_` adds slice after slice). `index` is 1-D or 0-d (one entry); `source`
/// has `self`'s rank (a 0-d one is its one-entry view, as torch's kernels see it), the
/// index's length along `dim` and `self`'s sizes elsewhere; every entry is in
/// `0..self.size(dim)` (torch raises "index out of range in self" otherwise).
pub fn index_along(
    self_dims: &[u64],
    dim: i64,
    index: &[i64],
    src_dims: &[u64],
) -> Result<Plan, String> {
    let mut plan = Plan::empty(self_dims)?;
    let at = Dim::wrap(dim, self_dims.len())?.view_axis();
    let lift = |d: &[u64]| if d.is_empty() { vec![1] } else { d.to_vec() };
    let (sizes, src_sizes) = (lift(self_dims), lift(src_dims));
    let fits = src_sizes.len() == sizes.len()
        && (0..sizes.len()).all(|d| {
            if d == at {
                src_sizes[d] == index.len() as u64
            } else {
                src_sizes[d] == sizes[d]
            }
        });
    if !fits {
        return Err(format!(
            "a source of {src_dims:?} written into {self_dims:?} along {dim} by {} indices: the source must have self's sizes but the index's length along the dimension",
            index.len()
        ));
    }
    let size = sizes[at] as i64;
    if let Some(i) = index.iter().find(|i| !(0..size).contains(*i)) {
        return Err(format!(
            "index {i} is out of range for dimension {at} of size {size}"
        ));
    }
    let self_strides = strides(&sizes);
    for source in 0..count(&src_sizes)? {
        let mut coordinate = coordinates(source, &src_sizes);
        coordinate[at] = index[coordinate[at]] as usize;
        plan.writes[flat(&coordinate, &self_strides)].push(source);
    }
    // Row-major over the source lists a position's writes in increasing `i`: index order.
    Ok(plan)
}

/// `index_fill(self, dim, index, value)`: the slices of `self` along `dim` that `index`
/// names (negative entries counted from the end, as torch's `index_fill_` wraps them),
/// each written once whatever the index repeats; the writes' source positions are
/// those of [`index_along`] over a source of the filled slices.
pub fn index_fill(self_dims: &[u64], dim: i64, index: &[i64]) -> Result<Plan, String> {
    let at = Dim::wrap(dim, self_dims.len())?.view_axis();
    let mut src_dims = if self_dims.is_empty() {
        vec![1]
    } else {
        self_dims.to_vec()
    };
    let size = src_dims[at] as i64;
    src_dims[at] = index.len() as u64;
    let wrapped: Vec<i64> = index
        .iter()
        .map(|&i| if (-size..0).contains(&i) { i + size } else { i })
        .collect();
    let mut plan = index_along(self_dims, dim, &wrapped, &src_dims)?;
    for w in &mut plan.writes {
        w.truncate(1);
    }
    Ok(plan)
}

/// The flat positions of a tensor of `numel` entries that `take`/`put`'s index names
/// (negative entries counted from the end, as torch's kernels wrap them; torch raises
/// "out of range" beyond).
pub fn flat_positions(numel: usize, index: &[i64]) -> Result<Vec<i64>, String> {
    let n = numel as i64;
    index
        .iter()
        .map(|&i| match i {
            i if (0..n).contains(&i) => Ok(i),
            i if (-n..0).contains(&i) => Ok(i + n),
            i => Err(format!(
                "index {i} is out of range for a tensor of {numel} entries"
            )),
        })
        .collect()
}

/// `put(self, index, source)`: source entry `k` (row-major) written to flat position
/// `index[k]` of `self` (torch's `put_`: the index and the source hold as many entries).
pub fn put(self_dims: &[u64], index: &[i64], src_dims: &[u64]) -> Result<Plan, String> {
    let numel = count(self_dims)?;
    if count(src_dims)? != index.len() {
        return Err(format!(
            "put of a source of {src_dims:?} by {} indices: they must hold as many entries",
            index.len()
        ));
    }
    let targets = flat_positions(numel, index)?;
    let sources: Vec<i64> = (0..targets.len() as i64).collect();
    Plan::of_pairs(self_dims, &targets, &sources)
}

/// `index_reduce`'s `reduce` argument: `prod`, `mean`, `amax` or `amin` (torch's
/// `index_reduce_` takes no `sum`; `index_add` is that).
pub fn index_reduce(reduce: &str) -> Result<Combine, String> {
    match reduce {
        "sum" => Err("index_reduce's reduce `sum` is not one torch takes (index_add is)".into()),
        other => Combine::of_reduce(other),
    }
}

/// `take_along_dim(self, indices, dim)`'s operands as torch's `take_along_dim` broadcasts
/// them before its `gather`: both to the broadcast of their sizes but along `dim`, where
/// each keeps its own size.
pub fn along_dim_broadcast(
    x: &Tensor,
    indices: &Tensor,
    dim: i64,
) -> Result<(Tensor, Tensor), String> {
    let (x_dims, i_dims) = along_dim_sizes(x.dims(), indices.dims(), dim)?;
    Ok((x.expand(&x_dims)?, indices.expand(&i_dims)?))
}

/// The sizes [`along_dim_broadcast`] brings `take_along_dim`'s operands of sizes `x` and
/// `indices` to (torch's `take_along_dim`: `self`'s sizes with the index's along `dim`,
/// broadcast with the index's; then `self`'s own size along `dim`).
pub fn along_dim_sizes(
    x: &[u64],
    indices: &[u64],
    dim: i64,
) -> Result<(Vec<u64>, Vec<u64>), String> {
    if x.len() != indices.len() {
        return Err(format!(
            "take_along_dim of {x:?} by indices of {indices:?}: they must have one rank"
        ));
    }
    let at = Dim::wrap(dim, x.len())?.view_axis();
    if x.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut with_index = x.to_vec();
    with_index[at] = indices[at];
    let i_dims = crate::eval::broadcast(&[&with_index, indices])?;
    let mut x_dims = i_dims.clone();
    x_dims[at] = x[at];
    Ok((x_dims, i_dims))
}

/// The flat positions of `self` (sizes `self_dims`) that `take(self, index)` reads, in
/// the index's sizes (flattened for `take_along_dim` without a `dim`, which torch computes
/// as `self.view(-1).gather(0, indices.view(-1))`).
pub fn taken(self_dims: &[u64], index: &Tensor, flatten: bool) -> Result<Tensor, String> {
    let at = flat_positions(count(self_dims)?, &index.to_i64()?)?;
    let dims = if flatten {
        vec![at.len() as u64]
    } else {
        index.dims().to_vec()
    };
    Tensor::i64(dims, at)
}

/// The flat positions of `self` (sizes `self_dims`) that `take_along_dim(self, indices,
/// dim)` reads, in the result's sizes: torch's `gather` of the operands as
/// [`along_dim_broadcast`] brings them.
pub fn along_dim_positions(
    self_dims: &[u64],
    indices: &Tensor,
    dim: i64,
) -> Result<Tensor, String> {
    let (positions, indices) = along_dim_broadcast(&positions(self_dims)?, indices, dim)?;
    crate::eval::gather(&positions, dim, &indices)
}

/// `0, 1, …` in a tensor of sizes `dims`: each entry its own flat position, so that a view
/// of it (a slice, a select, an indexing) lists the positions the view takes.
fn positions(dims: &[u64]) -> Result<Tensor, String> {
    let n = count(dims)? as i64;
    Tensor::i64(dims.to_vec(), (0..n).collect())
}

/// Writes of the source, whose sizes must be those of `view` (the positions of `self`
/// a view takes), to those positions one for one.
fn onto_view(self_dims: &[u64], view: &Tensor, src_dims: &[u64], op: &str) -> Result<Plan, String> {
    if view.dims() != src_dims {
        return Err(format!(
            "{op} of a source of {src_dims:?} into a view of {:?}",
            view.dims()
        ));
    }
    let targets = view.to_i64()?;
    let sources: Vec<i64> = (0..targets.len() as i64).collect();
    Plan::of_pairs(self_dims, &targets, &sources)
}

/// `select_scatter(self, src, dim, index)`: `src` written over `self.select(dim, index)`
/// (torch's `select_scatter`: `src` has that view's sizes; a negative index counts from
/// the end).
pub fn select_scatter(
    self_dims: &[u64],
    src_dims: &[u64],
    dim: i64,
    index: i64,
) -> Result<Plan, String> {
    let at = Dim::wrap(dim, self_dims.len())?.view_axis();
    let view = positions(self_dims)?.select(at, index)?;
    onto_view(self_dims, &view, src_dims, "select_scatter")
}

/// `diagonal_scatter(self, src, offset, dim1, dim2)`: `src` written over
/// `self.diagonal(offset, dim1, dim2)` (torch's `diagonal_scatter`: `src` has that view's
/// sizes, the diagonal last).
pub fn diagonal_scatter(
    self_dims: &[u64],
    src_dims: &[u64],
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> Result<Plan, String> {
    let view = crate::eval::diagonal(&positions(self_dims)?, offset, dim1, dim2)?;
    onto_view(self_dims, &view, src_dims, "diagonal_scatter")
}

/// `slice_scatter(self, src, dim, start, end, step)`: `src` written over
/// `self.slice(dim, start, end, step)`, its bounds clamped as `slice` clamps them
/// ([`slice_range`]).
pub fn slice_scatter(
    self_dims: &[u64],
    src_dims: &[u64],
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Plan, String> {
    let at = Dim::wrap(dim, self_dims.len())?.view_axis();
    let size = self_dims.get(at).copied().unwrap_or(1);
    let (start, end, step) = slice_range(size, start, end, step)?;
    let view = positions(self_dims)?.slice(at, start as i64, end as i64, step)?;
    onto_view(self_dims, &view, src_dims, "slice_scatter")
}

/// `index_put(self, indices, values)`: `values`, broadcast to the sizes of
/// `self[indices]`, written to the positions that indexing reads (torch's advanced
/// indexing by adjacent integer index tensors, broadcast together; negative entries count
/// from the end), in row-major order over them.
pub fn index_put(
    self_dims: &[u64],
    indices: &[Option<Tensor>],
    values_dims: &[u64],
) -> Result<Plan, String> {
    let view = crate::eval::index(&positions(self_dims)?, indices)?;
    let sources = positions(values_dims)?.expand(view.dims()).map_err(|_| {
        format!(
            "index_put's values of {values_dims:?} do not broadcast to the {:?} entries indexed",
            view.dims()
        )
    })?;
    Plan::of_pairs(self_dims, &view.to_i64()?, &sources.to_i64()?)
}

/// The positions `slice(dim, start, end, step)` of a tensor of sizes `dims` takes, as
/// torch clamps them (a negative bound counts from the end; both clamped to the axis, the
/// end no lower than the start): the range and the step.
pub fn slice_range(
    size: u64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<(u64, u64, u64), String> {
    let step = u64::try_from(step)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| format!("a slice step of {step}"))?;
    let size_i = size as i64;
    let clamp = |i: i64| (if i < 0 { i + size_i } else { i }).clamp(0, size_i) as u64;
    let start = clamp(start.unwrap_or(0));
    let end = clamp(end.unwrap_or(i64::MAX)).max(start);
    Ok((start, end, step))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_sends_each_source_entry_along_the_dimension_in_index_order() {
        // self 2×3, dim 1, index [[2, 0, 2]]: row 0's positions 2, 0, 2.
        let plan = Plan::scatter(&[2, 3], 1, &[1, 3], &[2, 0, 2], &[2, 3]).unwrap();
        assert_eq!(
            plan.writes,
            vec![vec![1], vec![], vec![0, 2], vec![], vec![], vec![]]
        );
        assert_eq!(plan.most_writes(), 2);
        assert_eq!(plan.repeated(), Some(2));
        // Negative dimensions count from the end.
        assert_eq!(
            Plan::scatter(&[2, 3], -1, &[1, 3], &[2, 0, 2], &[2, 3]),
            Ok(plan)
        );
    }

    #[test]
    fn scatter_refuses_indices_out_of_range_and_indices_larger_than_the_source() {
        assert!(Plan::scatter(&[3], 0, &[1], &[3], &[1]).is_err());
        assert!(Plan::scatter(&[3], 0, &[1], &[-1], &[1]).is_err());
        assert!(Plan::scatter(&[3], 0, &[2], &[0, 1], &[1]).is_err());
        assert_eq!(
            Plan::scatter(&[3], 0, &[0], &[], &[1])
                .unwrap()
                .most_writes(),
            0
        );
    }

    #[test]
    fn masked_scatter_takes_the_source_in_order_over_the_whole_tensor() {
        // A 2×2 self, a mask [[true], [false]] broadcast along the rows' entries... as
        // torch: a mask of [2] broadcast over rows.
        let plan = Plan::masked_scatter(&[2, 2], &[2], &[false, true], &[5]).unwrap();
        assert_eq!(plan.writes, vec![vec![], vec![0], vec![], vec![1]]);
        assert!(Plan::masked_scatter(&[2, 2], &[2], &[true, true], &[3]).is_err());
        assert!(Plan::masked_scatter(&[2], &[3], &[true, true, true], &[3]).is_err());
    }

    #[test]
    fn index_along_sends_slices_in_index_order() {
        // self 2×3, dim 1, index [2, 0, 2]: source column i goes to column index[i].
        let plan = index_along(&[2, 3], 1, &[2, 0, 2], &[2, 3]).unwrap();
        assert_eq!(
            plan.writes,
            vec![vec![1], vec![], vec![0, 2], vec![4], vec![], vec![3, 5]]
        );
        assert!(index_along(&[2, 3], 1, &[3], &[2, 1]).is_err());
        assert!(index_along(&[2, 3], 1, &[-1], &[2, 1]).is_err());
        assert!(index_along(&[2, 3], 1, &[0], &[2, 2]).is_err());
        // index_fill wraps negative entries and writes each position once.
        let fill = index_fill(&[2, 3], 1, &[-1, 2]).unwrap();
        assert_eq!(
            fill.writes,
            vec![vec![], vec![], vec![0], vec![], vec![], vec![2]]
        );
    }

    #[test]
    fn max_unpool_sends_each_entry_to_its_index_within_its_plane() {
        // Two planes of 2 entries unpooled to planes of 3: plane 1's entries land at 3 + i.
        let plan = max_unpool(&[2, 1, 2], &[2, 0, 1, 1], &[1, 3]).unwrap();
        assert_eq!(
            plan.writes,
            vec![vec![1], vec![], vec![0], vec![], vec![2, 3], vec![]]
        );
        assert_eq!(plan.repeated(), Some(4));
        assert!(max_unpool(&[2, 1, 2], &[3, 0, 1, 1], &[1, 3]).is_err());
        assert!(max_unpool(&[2, 1, 2], &[0, 0, 1], &[1, 3]).is_err());
        assert!(max_unpool(&[2], &[0, 0], &[1, 3]).is_err());
    }

    #[test]
    fn put_writes_flat_positions_from_the_end_too() {
        let plan = put(&[2, 2], &[-1, 0], &[2]).unwrap();
        assert_eq!(plan.writes, vec![vec![1], vec![], vec![], vec![0]]);
        assert!(put(&[2, 2], &[4], &[1]).is_err());
        assert!(put(&[2, 2], &[0], &[2]).is_err());
    }

    #[test]
    fn diagonal_scatter_writes_the_diagonal_at_its_offset() {
        // [2, 3] with offset 1: (0,1), (1,2) at 1 and 5.
        let plan = diagonal_scatter(&[2, 3], &[2], 1, 0, 1).unwrap();
        assert_eq!(
            plan.writes,
            vec![vec![], vec![0], vec![], vec![], vec![], vec![1]]
        );
        assert!(diagonal_scatter(&[2, 3], &[3], 1, 0, 1).is_err());
    }

    #[test]
    fn slices_clamp_as_torch() {
        assert_eq!(slice_range(4, Some(-1), Some(100), 2), Ok((3, 4, 2)));
        assert_eq!(slice_range(4, Some(-7), Some(2), 1), Ok((0, 2, 1)));
        assert_eq!(slice_range(4, Some(3), Some(1), 1), Ok((3, 3, 1)));
        assert!(slice_range(4, None, None, 0).is_err());
    }
}
