//! A dense row-major tensor of float32 or int64 values and the primitives the aten ops are
//! written in: strided views (every layout op), gathers (indexing), broadcast element-wise
//! maps and reductions over axes.

use super::pointwise::{nan_max, nan_min};
use crate::dim::Dim;

/// The most elements an evaluated tensor may have (2^24: a hostile program cannot make the
/// export allocate without bound, and every integer below it is exact in float32).
pub const MAX_ELEMENTS: u64 = 1 << 24;

/// A tensor's values in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    /// Integer tensors (index buffers), kept exact.
    I64(Vec<i64>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::I64(v) => v.len(),
        }
    }

    /// The values at flat positions `at`, in that order.
    pub(crate) fn take(&self, at: &[usize]) -> Values {
        match self {
            Values::F32(v) => Values::F32(at.iter().map(|&i| v[i]).collect()),
            Values::I64(v) => Values::I64(at.iter().map(|&i| v[i]).collect()),
        }
    }
}

/// A dense tensor. Invariant: the values number the product of the sizes, at most
/// [`MAX_ELEMENTS`].
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    dims: Vec<u64>,
    values: Values,
}

/// The most multiply-adds a convolution evaluated at export may take.
pub const MAX_CONV_STEPS: u64 = 1 << 30;

/// The elements of a tensor of sizes `dims`, if within [`MAX_ELEMENTS`].
pub fn element_count(dims: &[u64]) -> Result<u64, String> {
    match dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) {
        Some(n) if n <= MAX_ELEMENTS => Ok(n),
        _ => Err(format!(
            "a constant of sizes {dims:?} has more than {MAX_ELEMENTS} elements; the export folds smaller ones only"
        )),
    }
}

/// Row-major strides of `dims`.
pub fn strides(dims: &[u64]) -> Vec<u64> {
    let mut strides = vec![1u64; dims.len()];
    for axis in (0..dims.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * dims[axis + 1];
    }
    strides
}

/// `axis` (negative counts from the end) as an index below `rank`.
pub fn axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    usize::try_from(a)
        .ok()
        .filter(|&a| a < rank)
        .ok_or_else(|| format!("dimension {axis} is out of range for a rank-{rank} tensor"))
}

/// torch's views of `kron`'s operands (`KronImpl`): both padded in front with sizes of 1
/// to the wider rank, then `a` viewed with a 1 after each of its sizes and `b` with a 1
/// before each of its; their element-wise product, each adjacent pair of dimensions
/// merged, is the result. `one` is a size of 1.
pub fn kron_views<T: Copy>(a: &[T], b: &[T], one: T) -> (Vec<T>, Vec<T>) {
    let rank = a.len().max(b.len());
    let padded = |s: &[T]| -> Vec<T> {
        std::iter::repeat_n(one, rank - s.len())
            .chain(s.iter().copied())
            .collect()
    };
    (
        padded(a).into_iter().flat_map(|d| [d, one]).collect(),
        padded(b).into_iter().flat_map(|d| [one, d]).collect(),
    )
}

/// torch's `tensordot` as one matrix product (`at::tensordot`): `a` permuted to its free
/// dimensions then `dims_a`, `b` to `dims_b` then its free ones (free dimensions in
/// their order), each viewed as a matrix. The dimensions are wrapped as torch wraps
/// them; `dims_a[i]` contracts with `dims_b[i]`, and no dimension is listed twice.
pub fn tensordot_orders(
    rank_a: usize,
    rank_b: usize,
    dims_a: &[i64],
    dims_b: &[i64],
) -> Result<(Vec<usize>, Vec<usize>), String> {
    if dims_a.len() != dims_b.len() {
        return Err(format!(
            "tensordot contracts dimensions {dims_a:?} with {dims_b:?}: lists of one length are needed"
        ));
    }
    let wrap = |dims: &[i64], rank: usize| -> Result<Vec<usize>, String> {
        let wrapped = (dims.iter().map(|&d| axis(d, rank))).collect::<Result<Vec<_>, _>>()?;
        let mut sorted = wrapped.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != wrapped.len() {
            return Err(format!(
                "tensordot contracts dimensions {dims:?}, one twice"
            ));
        }
        Ok(wrapped)
    };
    let (ca, cb) = (wrap(dims_a, rank_a)?, wrap(dims_b, rank_b)?);
    let free = |rank: usize, contracted: &[usize]| -> Vec<usize> {
        (0..rank).filter(|d| !contracted.contains(d)).collect()
    };
    let mut order_a = free(rank_a, &ca);
    order_a.extend(&ca);
    let mut order_b = cb.clone();
    order_b.extend(free(rank_b, &cb));
    Ok((order_a, order_b))
}

/// numpy broadcasting of several sizes, right-aligned.
pub fn broadcast(all: &[&[u64]]) -> Result<Vec<u64>, String> {
    let rank = all.iter().map(|d| d.len()).max().unwrap_or(0);
    (0..rank)
        .map(|i| {
            all.iter().try_fold(1u64, |out, d| {
                let size = (i + d.len()).checked_sub(rank).map_or(1, |j| d[j]);
                match (out, size) {
                    (o, s) if o == s || s == 1 => Ok(o),
                    (1, s) => Ok(s),
                    _ => Err(format!("sizes {all:?} do not broadcast")),
                }
            })
        })
        .collect()
}

/// The flat positions of a strided view: output element `c` (row-major over `dims`) reads
/// position `offset + Σ c_i · strides_i`.
fn view_positions(dims: &[u64], strides: &[u64], offset: u64) -> Vec<usize> {
    let count: u64 = dims.iter().product();
    let mut coordinate = vec![0u64; dims.len()];
    let mut positions = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let at: u64 = offset
            + coordinate
                .iter()
                .zip(strides)
                .map(|(c, s)| c * s)
                .sum::<u64>();
        positions.push(at as usize);
        for axis in (0..dims.len()).rev() {
            coordinate[axis] += 1;
            if coordinate[axis] < dims[axis] {
                break;
            }
            coordinate[axis] = 0;
        }
    }
    positions
}

/// How a reduction combines the values along its axes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduction {
    Sum,
    Mean,
    Max,
    Min,
    /// The variance with this correction (1: unbiased).
    Variance(f64),
    /// The L2 norm.
    Norm,
    /// The product.
    Prod,
}

impl Tensor {
    /// A tensor of sizes `dims` holding `values`, which must number their product.
    pub fn new(dims: Vec<u64>, values: Values) -> Result<Tensor, String> {
        let count = element_count(&dims)?;
        if values.len() as u64 != count {
            return Err(format!(
                "{} values for sizes {dims:?} ({count} expected)",
                values.len()
            ));
        }
        Ok(Tensor { dims, values })
    }

    pub fn f32(dims: Vec<u64>, values: Vec<f32>) -> Result<Tensor, String> {
        Tensor::new(dims, Values::F32(values))
    }

    pub fn i64(dims: Vec<u64>, values: Vec<i64>) -> Result<Tensor, String> {
        Tensor::new(dims, Values::I64(values))
    }

    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    pub fn values(&self) -> &Values {
        &self.values
    }

    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The values as float32 (integers rounded to the nearest, exact below 2^24).
    pub fn to_f32(&self) -> Vec<f32> {
        match &self.values {
            Values::F32(v) => v.clone(),
            Values::I64(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }

    /// The values as int64; a float tensor must hold integers only.
    pub fn to_i64(&self) -> Result<Vec<i64>, String> {
        match &self.values {
            Values::I64(v) => Ok(v.clone()),
            Values::F32(v) => v
                .iter()
                .map(|&x| {
                    (x.fract() == 0.0 && x.abs() < 9.0e18)
                        .then_some(x as i64)
                        .ok_or_else(|| format!("{x} is not an integer"))
                })
                .collect(),
        }
    }

    /// This tensor with float32 values (`as_integer`: int64 values).
    pub fn cast(&self, as_integer: bool) -> Result<Tensor, String> {
        let values = if as_integer {
            Values::I64(self.to_i64()?)
        } else {
            Values::F32(self.to_f32())
        };
        Tensor::new(self.dims.clone(), values)
    }

    /// `f` of this tensor along torch dimension `dim` (see [`Dim`]), for an op whose result
    /// has its input's sizes: `f` of the tensor along the dimension's axis, or for a 0-d
    /// tensor `f` of its one-entry 1-d view along axis 0, made 0-d again (torch's kernels
    /// compute on that view).
    pub fn along_keeping_sizes(
        &self,
        dim: i64,
        f: impl FnOnce(&Tensor, usize) -> Result<Tensor, String>,
    ) -> Result<Tensor, String> {
        match Dim::wrap(dim, self.rank())? {
            Dim::Axis(a) => f(self, a),
            Dim::OfScalar => f(&self.reshape(&[1])?, 0)?.reshape(&[]),
        }
    }

    /// The same values under sizes `dims` (one may be `-1`, inferred).
    pub fn reshape(&self, dims: &[i64]) -> Result<Tensor, String> {
        let count = self.values.len() as u64;
        let known: u64 = dims
            .iter()
            .filter(|&&d| d >= 0)
            .map(|&d| d as u64)
            .product();
        let inferred = dims.iter().filter(|&&d| d == -1).count();
        let bad = || format!("sizes {:?} cannot be viewed as {dims:?}", self.dims);
        let out = dims
            .iter()
            .map(|&d| match d {
                -1 if inferred == 1 && known > 0 && count.is_multiple_of(known) => {
                    Ok(count / known)
                }
                d if d >= 0 => Ok(d as u64),
                _ => Err(bad()),
            })
            .collect::<Result<Vec<u64>, String>>()?;
        if out.iter().product::<u64>() != count {
            return Err(bad());
        }
        Tensor::new(out, self.values.clone())
    }

    /// A strided view of this tensor, copied.
    fn view(&self, dims: Vec<u64>, strides: &[u64], offset: u64) -> Result<Tensor, String> {
        element_count(&dims)?;
        let positions = view_positions(&dims, strides, offset);
        Tensor::new(dims, self.values.take(&positions))
    }

    /// Axes reordered: output axis `i` is input axis `order[i]`.
    pub fn permute(&self, order: &[usize]) -> Result<Tensor, String> {
        let mut seen = vec![false; self.rank()];
        for &a in order {
            match seen.get_mut(a) {
                Some(s) if !*s => *s = true,
                _ => {
                    return Err(format!(
                        "{order:?} is not a permutation of {} axes",
                        self.rank()
                    ))
                }
            }
        }
        if order.len() != self.rank() {
            return Err(format!(
                "{order:?} is not a permutation of {} axes",
                self.rank()
            ));
        }
        let strides = strides(&self.dims);
        let dims = order.iter().map(|&a| self.dims[a]).collect();
        let permuted: Vec<u64> = order.iter().map(|&a| strides[a]).collect();
        self.view(dims, &permuted, 0)
    }

    /// Entries `start, start + step, …` below `end` along `axis` (bounds clamped as torch).
    pub fn slice(&self, axis: usize, start: i64, end: i64, step: u64) -> Result<Tensor, String> {
        if step == 0 {
            return Err("a slice step of 0".into());
        }
        let size = self.dims[axis] as i64;
        let clamp = |i: i64| (if i < 0 { i + size } else { i }).clamp(0, size) as u64;
        let (start, end) = (clamp(start), clamp(end).max(clamp(start)));
        let mut dims = self.dims.clone();
        dims[axis] = (end - start).div_ceil(step);
        let mut strides = strides(&self.dims);
        let offset = start * strides[axis];
        strides[axis] *= step;
        self.view(dims, &strides, offset)
    }

    /// Entry `index` (negative counts from the end) of `axis`, which is removed.
    pub fn select(&self, axis: usize, index: i64) -> Result<Tensor, String> {
        let size = self.dims[axis] as i64;
        let i = if index < 0 { index + size } else { index };
        if !(0..size).contains(&i) {
            return Err(format!("index {index} is out of range for size {size}"));
        }
        let mut dims = self.dims.clone();
        let mut strides = strides(&self.dims);
        let offset = i as u64 * strides[axis];
        dims.remove(axis);
        strides.remove(axis);
        self.view(dims, &strides, offset)
    }

    /// Broadcast to sizes `dims` (a size-1 axis repeated, leading axes added).
    pub fn expand(&self, dims: &[u64]) -> Result<Tensor, String> {
        if self.dims == dims {
            return Ok(self.clone());
        }
        if broadcast(&[&self.dims, dims])? != dims {
            return Err(format!("sizes {:?} do not expand to {dims:?}", self.dims));
        }
        let own = strides(&self.dims);
        let offset = dims.len() - self.rank();
        let strides: Vec<u64> = (0..dims.len())
            .map(|i| match i.checked_sub(offset) {
                Some(j) if self.dims[j] != 1 => own[j],
                _ => 0,
            })
            .collect();
        self.view(dims.to_vec(), &strides, 0)
    }

    /// `one_hot(self, classes) @ table` without the one-hot tensor, which can be far larger
    /// than the product (2-D position tables of thousands of classes): for an index tensor
    /// of sizes `[…, N]` and a table `[…, classes, D]` (their leading sizes broadcast), the
    /// table's row `self[…, n]` at every `[…, n]`.
    pub fn one_hot_matmul(&self, classes: u64, table: &Tensor) -> Result<Tensor, String> {
        let Some((&n, batch)) = self.dims.split_last() else {
            return Err("one_hot of a 0-d index, multiplied by a table".into());
        };
        let w = table.rank();
        if w < 2 || table.dims[w - 2] != classes {
            return Err(format!(
                "a one-hot of {classes} classes times a table of sizes {:?}",
                table.dims
            ));
        }
        let d = table.dims[w - 1];
        let table_batch = &table.dims[..w - 2];
        let out_batch = broadcast(&[batch, table_batch])?;
        let mut dims = out_batch.clone();
        dims.extend([n, d]);
        element_count(&dims)?;
        let mut index_dims = out_batch.clone();
        index_dims.push(n);
        let index = self.expand(&index_dims)?.to_i64()?;
        let own = strides(table_batch);
        let offset = out_batch.len() - table_batch.len();
        let row_block = classes * d;
        let table_strides: Vec<u64> = (0..out_batch.len())
            .map(|i| match i.checked_sub(offset) {
                Some(j) if table_batch[j] != 1 => own[j] * row_block,
                _ => 0,
            })
            .collect();
        let values = table.to_f32();
        let mut out = Vec::with_capacity(element_count(&dims)? as usize);
        let mut coordinate = vec![0u64; out_batch.len()];
        for rows in index.chunks(n.max(1) as usize) {
            let base: u64 = coordinate
                .iter()
                .zip(&table_strides)
                .map(|(c, s)| c * s)
                .sum();
            for &class in rows {
                let class = u64::try_from(class)
                    .ok()
                    .filter(|&c| c < classes)
                    .ok_or_else(|| format!("one_hot class {class} of {classes}"))?;
                let start = (base + class * d) as usize;
                out.extend_from_slice(&values[start..start + d as usize]);
            }
            for axis in (0..coordinate.len()).rev() {
                coordinate[axis] += 1;
                if coordinate[axis] < out_batch[axis] {
                    break;
                }
                coordinate[axis] = 0;
            }
        }
        Tensor::f32(dims, out)
    }

    /// Entries of `axis` picked by `indices` (negative counts from the end), in order: the
    /// axis is replaced by the indices' sizes.
    pub fn index_axis(&self, axis: usize, indices: &Tensor) -> Result<Tensor, String> {
        let size = self.dims[axis] as i64;
        let picks = indices
            .to_i64()?
            .into_iter()
            .map(|i| {
                let j = if i < 0 { i + size } else { i };
                (0..size)
                    .contains(&j)
                    .then_some(j as u64)
                    .ok_or_else(|| format!("index {i} is out of range for size {size}"))
            })
            .collect::<Result<Vec<u64>, String>>()?;
        let outer: u64 = self.dims[..axis].iter().product();
        let inner: u64 = self.dims[axis + 1..].iter().product();
        let dims: Vec<u64> = self.dims[..axis]
            .iter()
            .chain(indices.dims())
            .chain(&self.dims[axis + 1..])
            .copied()
            .collect();
        element_count(&dims)?;
        let mut positions = Vec::with_capacity(dims.iter().product::<u64>() as usize);
        for o in 0..outer {
            for &p in &picks {
                let base = (o * self.dims[axis] + p) * inner;
                positions.extend((base..base + inner).map(|q| q as usize));
            }
        }
        Tensor::new(dims, self.values.take(&positions))
    }

    /// Tensors joined along `axis`; all sizes but that axis must agree.
    pub fn cat(parts: &[Tensor], axis: usize) -> Result<Tensor, String> {
        let first = parts.first().ok_or("cat of no tensors")?;
        let same = |t: &Tensor| {
            t.rank() == first.rank()
                && (0..first.rank()).all(|a| a == axis || t.dims[a] == first.dims[a])
        };
        if !parts.iter().all(same) {
            return Err("cat of tensors whose other sizes differ".into());
        }
        let integer = parts.iter().all(|t| matches!(t.values, Values::I64(_)));
        let parts = parts
            .iter()
            .map(|t| t.cast(integer))
            .collect::<Result<Vec<_>, _>>()?;
        let outer: u64 = first.dims[..axis].iter().product();
        let mut dims = first.dims.clone();
        dims[axis] = parts.iter().map(|t| t.dims[axis]).sum();
        element_count(&dims)?;
        let chunk = |t: &Tensor| (t.values.len() as u64 / outer.max(1)) as usize;
        let mut f = Vec::new();
        let mut i = Vec::new();
        for o in 0..outer as usize {
            for t in &parts {
                let n = chunk(t);
                match &t.values {
                    Values::F32(v) => f.extend_from_slice(&v[o * n..(o + 1) * n]),
                    Values::I64(v) => i.extend_from_slice(&v[o * n..(o + 1) * n]),
                }
            }
        }
        let values = if integer {
            Values::I64(i)
        } else {
            Values::F32(f)
        };
        Tensor::new(dims, values)
    }

    /// `f` of each value, as float32.
    pub fn map(&self, f: impl Fn(f32) -> f32) -> Tensor {
        let values = self.to_f32().into_iter().map(f).collect();
        Tensor {
            dims: self.dims.clone(),
            values: Values::F32(values),
        }
    }

    /// `f(a, b)` element-wise with numpy broadcasting; int64 when both are and `integer`
    /// gives the integer form, else float32.
    pub fn zip(
        a: &Tensor,
        b: &Tensor,
        float: impl Fn(f32, f32) -> f32,
        integer: Option<fn(i64, i64) -> Option<i64>>,
    ) -> Result<Tensor, String> {
        let dims = broadcast(&[&a.dims, &b.dims])?;
        let (a, b) = (a.expand(&dims)?, b.expand(&dims)?);
        if let (Values::I64(x), Values::I64(y), Some(f)) = (&a.values, &b.values, integer) {
            let values = x
                .iter()
                .zip(y)
                .map(|(&p, &q)| f(p, q).ok_or_else(|| format!("{p} and {q} overflow int64")))
                .collect::<Result<_, _>>()?;
            return Tensor::new(dims, Values::I64(values));
        }
        let values = a
            .to_f32()
            .into_iter()
            .zip(b.to_f32())
            .map(|(p, q)| float(p, q))
            .collect();
        Tensor::new(dims, Values::F32(values))
    }

    /// torch's `matmul` in float32: 1-D operands are promoted (and the added axis
    /// dropped again), leading sizes broadcast; at most [`MAX_CONV_STEPS`] multiply-adds.
    pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor, String> {
        if a.rank() == 0 || b.rank() == 0 {
            return Err("matmul of a 0-d tensor".into());
        }
        let a2 = if a.rank() == 1 {
            a.reshape(&[1, -1])?
        } else {
            a.clone()
        };
        let b2 = if b.rank() == 1 {
            b.reshape(&[-1, 1])?
        } else {
            b.clone()
        };
        let (ra, rb) = (a2.rank(), b2.rank());
        let (m, k) = (a2.dims[ra - 2], a2.dims[ra - 1]);
        let (k2, n) = (b2.dims[rb - 2], b2.dims[rb - 1]);
        if k != k2 {
            return Err(format!("matmul of sizes {:?} and {:?}", a.dims, b.dims));
        }
        let batch = broadcast(&[&a2.dims[..ra - 2], &b2.dims[..rb - 2]])?;
        let count: u64 = batch.iter().product();
        [count, m, n, k]
            .iter()
            .try_fold(1u64, |s, &d| s.checked_mul(d))
            .filter(|&s| s <= MAX_CONV_STEPS)
            .ok_or_else(|| {
                format!(
                    "matmul of sizes {:?} and {:?} is too large to evaluate",
                    a.dims, b.dims
                )
            })?;
        let mut dims = batch.clone();
        dims.extend([m, n]);
        element_count(&dims)?;
        let expand = |t: &Tensor, rows: u64, cols: u64| -> Result<Vec<f32>, String> {
            let mut full = batch.clone();
            full.extend([rows, cols]);
            Ok(t.expand(&full)?.to_f32())
        };
        let (x, y) = (expand(&a2, m, k)?, expand(&b2, k, n)?);
        let mut out = vec![0f32; (count * m * n) as usize];
        let (m, n, k) = (m as usize, n as usize, k as usize);
        for bi in 0..count as usize {
            let (xa, yb) = (&x[bi * m * k..][..m * k], &y[bi * k * n..][..k * n]);
            let o = &mut out[bi * m * n..][..m * n];
            for i in 0..m {
                for p in 0..k {
                    let v = xa[i * k + p];
                    for j in 0..n {
                        o[i * n + j] += v * yb[p * n + j];
                    }
                }
            }
        }
        let mut result = Tensor::f32(dims, out)?;
        if b.rank() == 1 {
            let d: Vec<i64> = result.dims[..result.rank() - 1]
                .iter()
                .map(|&v| v as i64)
                .collect();
            result = result.reshape(&d)?;
        }
        if a.rank() == 1 {
            let mut d: Vec<i64> = result.dims.iter().map(|&v| v as i64).collect();
            d.remove(d.len() - if b.rank() == 1 { 1 } else { 2 });
            result = result.reshape(&d)?;
        }
        Ok(result)
    }

    /// The running sum along `axis` (in range), int64 for an int64 tensor.
    pub fn cumsum(&self, axis: usize) -> Result<Tensor, String> {
        let outer: u64 = self.dims[..axis].iter().product();
        let (n, inner) = (
            self.dims[axis] as usize,
            self.dims[axis + 1..].iter().product::<u64>() as usize,
        );
        let values = match &self.values {
            Values::F32(v) => {
                let mut v = v.clone();
                running(&mut v, outer as usize, n, inner, |p, q| Some(p + q))?;
                Values::F32(v)
            }
            Values::I64(v) => {
                let mut v = v.clone();
                running(&mut v, outer as usize, n, inner, i64::checked_add)?;
                Values::I64(v)
            }
        };
        Tensor::new(self.dims.clone(), values)
    }

    /// The running product along `axis` (in range) as torch's CPU kernel computes it:
    /// float32 accumulated in float64 and rounded at each entry (`cumprod` accumulates in
    /// `acc_type`, double), int64 wrapping.
    pub fn cumprod(&self, axis: usize) -> Result<Tensor, String> {
        let outer = self.dims[..axis].iter().product::<u64>() as usize;
        let (n, inner) = (
            self.dims[axis] as usize,
            self.dims[axis + 1..].iter().product::<u64>() as usize,
        );
        let values = match &self.values {
            Values::F32(v) => {
                let mut wide: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
                running(&mut wide, outer, n, inner, |p, q| Some(p * q))?;
                Values::F32(wide.into_iter().map(|x| x as f32).collect())
            }
            Values::I64(v) => {
                let mut v = v.clone();
                running(&mut v, outer, n, inner, |p, q| Some(p.wrapping_mul(q)))?;
                Values::I64(v)
            }
        };
        Tensor::new(self.dims.clone(), values)
    }

    /// torch's `kron`: see [`kron_views`].
    pub fn kron(&self, other: &Tensor) -> Result<Tensor, String> {
        let (va, vb) = kron_views(&self.dims, other.dims(), 1);
        let as_i64 = |v: &[u64]| -> Vec<i64> { v.iter().map(|&d| d as i64).collect() };
        let product = Tensor::zip(
            &self.reshape(&as_i64(&va))?,
            &other.reshape(&as_i64(&vb))?,
            |p, q| p * q,
            Some(i64::checked_mul),
        )?;
        let merged: Vec<i64> = (product.dims().chunks(2))
            .map(|pair| pair.iter().product::<u64>() as i64)
            .collect();
        product.reshape(&merged)
    }

    /// torch's `tensordot` over `dims_self` and `dims_other`: see [`tensordot_orders`].
    pub fn tensordot(
        &self,
        other: &Tensor,
        dims_self: &[i64],
        dims_other: &[i64],
    ) -> Result<Tensor, String> {
        let (oa, ob) = tensordot_orders(self.rank(), other.rank(), dims_self, dims_other)?;
        let free_a = self.rank() - dims_self.len();
        let sizes = |t: &Tensor, order: &[usize]| -> Vec<u64> {
            order.iter().map(|&d| t.dims()[d]).collect()
        };
        let (sa, sb) = (sizes(self, &oa), sizes(other, &ob));
        if sa[free_a..] != sb[..dims_other.len()] {
            return Err(format!(
                "tensordot of sizes {:?} and {:?} contracts dimensions of other sizes (torch sums a dimension of size 1 first)",
                self.dims,
                other.dims()
            ));
        }
        let count = |s: &[u64]| s.iter().product::<u64>() as i64;
        let contracted = count(&sa[free_a..]);
        let a = self
            .permute(&oa)?
            .reshape(&[count(&sa[..free_a]), contracted])?;
        let b = other
            .permute(&ob)?
            .reshape(&[contracted, count(&sb[dims_other.len()..])])?;
        let out: Vec<i64> = (sa[..free_a].iter().chain(&sb[dims_other.len()..]))
            .map(|&d| d as i64)
            .collect();
        Tensor::matmul(&a, &b)?.reshape(&out)
    }

    /// torch's `outer` of two vectors: `self.reshape(n, 1) * vec2`, one multiplication
    /// per entry (integers wrapping as torch's do).
    pub fn outer(&self, vec2: &Tensor) -> Result<Tensor, String> {
        if self.rank() != 1 || vec2.rank() != 1 {
            return Err(format!(
                "outer of sizes {:?} and {:?}: both must be vectors",
                self.dims,
                vec2.dims()
            ));
        }
        Tensor::zip(
            &self.reshape(&[-1, 1])?,
            vec2,
            |p, q| p * q,
            Some(i64::checked_mul),
        )
    }

    /// `self · weightᵀ` over the last axis (`linear` without its bias): `self` is
    /// `[…, k]`, `weight` is `[m, k]`; the result is `[…, m]`, float32.
    pub fn linear(&self, weight: &Tensor) -> Result<Tensor, String> {
        let (Some(&k), [m, wk]) = (self.dims.last(), weight.dims()) else {
            return Err(format!(
                "linear of {:?} by a weight of {:?}",
                self.dims,
                weight.dims()
            ));
        };
        if k != *wk {
            return Err(format!(
                "linear of {:?} by a weight of {:?}",
                self.dims,
                weight.dims()
            ));
        }
        let (x, w) = (self.to_f32(), weight.to_f32());
        let (k, m) = (k as usize, *m as usize);
        let rows = x.len().checked_div(k).unwrap_or(0);
        let mut y = Vec::with_capacity(rows * m);
        for row in 0..rows {
            let xr = &x[row * k..(row + 1) * k];
            for j in 0..m {
                y.push(
                    xr.iter()
                        .zip(&w[j * k..(j + 1) * k])
                        .map(|(p, q)| p * q)
                        .sum(),
                );
            }
        }
        let mut dims = self.dims.clone();
        if let Some(last) = dims.last_mut() {
            *last = m as u64;
        }
        Tensor::f32(dims, y)
    }

    /// The exact int64 sum of an integer tensor over `axes` (distinct, in range), kept as
    /// size-1 axes when `keep`; an error when a sum overflows int64.
    pub fn sum_i64(&self, axes: &[usize], keep: bool) -> Result<Tensor, String> {
        let reduced: u64 = axes.iter().map(|&a| self.dims[a]).product();
        let kept: Vec<usize> = (0..self.rank()).filter(|a| !axes.contains(a)).collect();
        let order: Vec<usize> = kept.iter().chain(axes).copied().collect();
        let values = self.permute(&order)?.to_i64()?;
        let sums = values
            .chunks(reduced.max(1) as usize)
            .map(|run| {
                run.iter()
                    .try_fold(0i64, |s, &v| s.checked_add(v))
                    .ok_or("an int64 sum overflows")
            })
            .collect::<Result<Vec<i64>, _>>()?;
        let dims = (0..self.rank())
            .filter_map(|a| match (axes.contains(&a), keep) {
                (false, _) => Some(self.dims[a]),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        Tensor::i64(dims, sums)
    }

    /// `how` over `axes` (distinct, in range), kept as size-1 axes when `keep`.
    pub fn reduce(&self, axes: &[usize], keep: bool, how: Reduction) -> Result<Tensor, String> {
        let reduced: u64 = axes.iter().map(|&a| self.dims[a]).product();
        if let Reduction::Variance(c) = how {
            if reduced as f64 <= c {
                return Err(format!(
                    "a variance of {reduced} values with correction {c} divides by zero or less"
                ));
            }
        }
        // Move the reduced axes last, so each output entry reads one contiguous run.
        let kept: Vec<usize> = (0..self.rank()).filter(|a| !axes.contains(a)).collect();
        let order: Vec<usize> = kept.iter().chain(axes).copied().collect();
        let values = self.permute(&order)?.to_f32();
        let run = reduced.max(1) as usize;
        let out: Vec<f32> = values
            .chunks(run)
            .map(|r| {
                let n = r.len() as f64;
                let sum = || r.iter().map(|&x| f64::from(x)).sum::<f64>();
                let y = match how {
                    Reduction::Sum => sum(),
                    Reduction::Mean => sum() / n,
                    Reduction::Max => r
                        .iter()
                        .fold(f32::NEG_INFINITY, |m, &x| nan_max(m, x))
                        .into(),
                    Reduction::Min => r.iter().fold(f32::INFINITY, |m, &x| nan_min(m, x)).into(),
                    Reduction::Variance(c) => {
                        let mean = sum() / n;
                        let ss: f64 = r.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum();
                        ss / (n - c)
                    }
                    Reduction::Norm => r.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt(),
                    Reduction::Prod => r.iter().map(|&x| f64::from(x)).product(),
                };
                y as f32
            })
            .collect();
        let dims = (0..self.rank())
            .filter_map(|a| match (axes.contains(&a), keep) {
                (false, _) => Some(self.dims[a]),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        Tensor::f32(dims, out)
    }
}

/// Running `add` along the middle axis of `v` laid out as `[outer, n, inner]`.
fn running<T: Copy>(
    v: &mut [T],
    outer: usize,
    n: usize,
    inner: usize,
    add: impl Fn(T, T) -> Option<T>,
) -> Result<(), String> {
    for o in 0..outer {
        for i in 1..n {
            for j in 0..inner {
                let (prev, at) = ((o * n + i - 1) * inner + j, (o * n + i) * inner + j);
                v[at] = add(v[prev], v[at]).ok_or("a running sum overflows int64")?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_0d_tensor_is_computed_along_its_one_entry_view_and_stays_0d() {
        let x = Tensor::f32(vec![], vec![2.5]).unwrap();
        let seen = |v: &Tensor, at: usize| {
            assert_eq!((v.dims(), at), (&[1u64][..], 0));
            v.cumsum(at)
        };
        let y = x.along_keeping_sizes(-1, seen).unwrap();
        assert_eq!((y.dims(), y.to_f32()), (&[][..], vec![2.5]));
        assert!(x.along_keeping_sizes(1, |v, at| v.cumsum(at)).is_err());
    }

    #[test]
    fn cumprod_accumulates_floats_in_f64_and_wraps_int64() {
        // torch: 1e-30, then 1e-60 (0 in float32), then back to 1e-30 from the double.
        let x = Tensor::f32(vec![3], vec![1e-30, 1e-30, 1e30]).unwrap();
        assert_eq!(x.cumprod(0).unwrap().to_f32(), [1e-30, 0.0, 1e-30]);
        let x = Tensor::f32(vec![2, 2], vec![0.0, f32::INFINITY, 2.0, -3.0]).unwrap();
        let y = x.cumprod(1).unwrap().to_f32();
        assert!(y[0] == 0.0 && y[1].is_nan() && y[2..] == [2.0, -6.0]);
        let x = Tensor::i64(vec![2], vec![i64::MAX, 2]).unwrap();
        assert_eq!(x.cumprod(0).unwrap().to_i64().unwrap(), [i64::MAX, -2]);
    }

    #[test]
    fn matmul_broadcasts_and_promotes_vectors_as_torch() {
        let a = Tensor::f32(vec![2, 1, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        let b = Tensor::f32(vec![2, 3], vec![1.0, 0.0, 1.0, 0.0, 1.0, 1.0]).unwrap();
        let y = Tensor::matmul(&a, &b).unwrap();
        assert_eq!(y.dims(), [2, 1, 3]);
        assert_eq!(y.to_f32(), [1.0, 2.0, 3.0, 3.0, 4.0, 7.0]);
        let v = Tensor::f32(vec![2], vec![1.0, 1.0]).unwrap();
        let w = Tensor::matmul(&a, &v).unwrap();
        assert_eq!(w.dims(), [2, 1]);
        assert_eq!(w.to_f32(), [3.0, 7.0]);
        let u = Tensor::matmul(&v, &b).unwrap();
        assert_eq!(u.dims(), [3]);
        assert_eq!(u.to_f32(), [1.0, 1.0, 2.0]);
        assert!(Tensor::matmul(&b, &b).is_err());
    }

    #[test]
    fn a_one_hot_times_a_table_reads_its_rows() {
        // Two tables of 3 classes × 2; indices [1, 2, 3] over 2 positions.
        let table = Tensor::f32(vec![2, 3, 2], (0..12).map(|v| v as f32).collect()).unwrap();
        let index = Tensor::i64(vec![1, 2, 2], vec![2, 0, 1, 1]).unwrap();
        let got = index.one_hot_matmul(3, &table).unwrap();
        assert_eq!(got.dims(), [1, 2, 2, 2]);
        // Position k of table k: table 0 rows 2 and 0, table 1 rows 1 and 1.
        assert_eq!(got.to_f32(), [4.0, 5.0, 0.0, 1.0, 8.0, 9.0, 8.0, 9.0]);
        assert!(index.one_hot_matmul(2, &table).is_err());
        let outside = Tensor::i64(vec![1, 2, 2], vec![3, 0, 0, 0]).unwrap();
        assert!(outside.one_hot_matmul(3, &table).is_err());
    }

    fn range(dims: &[u64]) -> Tensor {
        let n: u64 = dims.iter().product();
        Tensor::f32(dims.to_vec(), (0..n).map(|i| i as f32).collect()).unwrap()
    }

    fn values(t: &Tensor) -> Vec<f32> {
        t.to_f32()
    }

    #[test]
    fn permute_and_reshape_follow_torch() {
        let t = range(&[2, 3]);
        let p = t.permute(&[1, 0]).unwrap();
        assert_eq!(p.dims(), [3, 2]);
        assert_eq!(values(&p), [0., 3., 1., 4., 2., 5.]);
        assert_eq!(t.reshape(&[3, -1]).unwrap().dims(), [3, 2]);
        assert!(t.reshape(&[4, -1]).is_err());
        assert!(t.permute(&[0, 0]).is_err());
    }

    #[test]
    fn slice_select_and_expand_are_views() {
        let t = range(&[3, 4]);
        assert_eq!(
            values(&t.slice(1, 1, 100, 2).unwrap()),
            [1., 3., 5., 7., 9., 11.]
        );
        assert_eq!(
            values(&t.slice(0, -1, i64::MAX, 1).unwrap()),
            [8., 9., 10., 11.]
        );
        assert_eq!(values(&t.select(0, -1).unwrap()), [8., 9., 10., 11.]);
        assert!(t.select(0, 3).is_err());
        let column = range(&[2, 1]);
        let e = column.expand(&[2, 2, 3]).unwrap();
        assert_eq!(values(&e), [0., 0., 0., 1., 1., 1., 0., 0., 0., 1., 1., 1.]);
        assert!(range(&[2]).expand(&[3]).is_err());
    }

    #[test]
    fn indexing_keeps_integers_exact_and_checks_bounds() {
        let table = range(&[3, 2]);
        let index = Tensor::i64(vec![2, 2], vec![2, 0, -1, 1]).unwrap();
        let picked = table.index_axis(0, &index).unwrap();
        assert_eq!(picked.dims(), [2, 2, 2]);
        assert_eq!(values(&picked), [4., 5., 0., 1., 4., 5., 2., 3.]);
        let out_of_range = Tensor::i64(vec![1], vec![3]).unwrap();
        assert!(table.index_axis(0, &out_of_range).is_err());
        let big = Tensor::i64(vec![1], vec![(1 << 40) + 1]).unwrap();
        let sum = Tensor::zip(&big, &big, |a, b| a + b, Some(i64::checked_add)).unwrap();
        assert_eq!(sum.values(), &Values::I64(vec![(1 << 41) + 2]));
    }

    #[test]
    fn cat_and_broadcast_arithmetic() {
        let a = range(&[2, 1]);
        let b = range(&[2, 2]);
        let c = Tensor::cat(&[a.clone(), b], 1).unwrap();
        assert_eq!(values(&c), [0., 0., 1., 1., 2., 3.]);
        let row = range(&[3]);
        let product = Tensor::zip(&a, &row, |x, y| x * y, None).unwrap();
        assert_eq!(product.dims(), [2, 3]);
        assert_eq!(values(&product), [0., 0., 0., 0., 1., 2.]);
        assert!(Tensor::zip(&range(&[2]), &row, |x, _| x, None).is_err());
    }

    #[test]
    fn reductions_match_torch() {
        let t = Tensor::f32(vec![2, 3], vec![1., 2., 3., 4., 6., 8.]).unwrap();
        let mean = t.reduce(&[1], true, Reduction::Mean).unwrap();
        assert_eq!((mean.dims(), values(&mean)), (&[2, 1][..], vec![2., 6.]));
        let var = t.reduce(&[1], false, Reduction::Variance(1.0)).unwrap();
        assert_eq!(values(&var), [1., 4.]);
        let max = t.reduce(&[0, 1], false, Reduction::Max).unwrap();
        assert_eq!((max.dims(), values(&max)), (&[][..], vec![8.]));
        let norm = Tensor::f32(vec![2], vec![3., 4.]).unwrap();
        assert_eq!(
            values(&norm.reduce(&[0], false, Reduction::Norm).unwrap()),
            [5.]
        );
        assert!(t.reduce(&[0], false, Reduction::Variance(2.0)).is_err());
    }

    #[test]
    fn sizes_beyond_the_cap_are_refused() {
        assert!(element_count(&[1 << 12, 1 << 12]).is_ok());
        let err = element_count(&[1 << 13, 1 << 12]).unwrap_err();
        assert!(err.contains("more than"), "{err}");
        assert!(element_count(&[u64::MAX, 2]).is_err());
        assert!(range(&[1]).expand(&[1 << 13, 1 << 12]).is_err());
    }
}
