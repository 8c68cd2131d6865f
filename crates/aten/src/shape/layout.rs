//! Ops that move, pick, join or regroup dimensions: `cat`, `stack`, `flatten`, `slice`,
//! `narrow`, `index_select`, `permute`, `select`, `unsqueeze`, `squeeze`, `unflatten`,
//! `transpose`, and the scatter family, which keeps `self`'s sizes. The batch stays first:
//! an op that would move or cut it is refused.

use super::{axis, Operands, MAX_DIM};
use crate::program::Argument;

/// What to do when a transpose moves the batch: what an attention layer traced with
/// gradients on does (`nn.MultiheadAttention` moves the batch behind the tokens).
pub const MOVED_BATCH_HINT: &str = "if this is attention (nn.MultiheadAttention, nn.TransformerEncoderLayer), trace the model in eval mode under `torch.no_grad()` (torch then records its fused kernels, which are exported) or export it with torch.export";

/// The per-sample shape of layout op `op`; `None` when `op` is not one.
pub(super) fn infer(o: &Operands<'_>, op: &str) -> Option<Result<Vec<u64>, String>> {
    Some(match op {
        "stack.default" => stack(o),
        "cat.default" => cat(o),
        "flatten.using_ints" => flatten(o),
        "slice.Tensor" => slice(o),
        "narrow.default" => (|| {
            let mut x = o.activation("self")?;
            let a = axis(o.args.int("dim")?, x.len())?;
            let length = o.args.int("length")?;
            x[a] = u64::try_from(length)
                .ok()
                .filter(|&l| l <= x[a])
                .ok_or_else(|| format!("narrow to {length} of an axis of {}", x[a]))?;
            Ok(x)
        })(),
        "index_select.default" => (|| {
            let mut x = o.activation("self")?;
            let a = axis(o.args.int("dim")?, x.len())?;
            match o.tensor("index")? {
                super::Dims::Stored(d) if d.len() <= 1 => {
                    x[a] = d.first().copied().unwrap_or(1);
                    Ok(x)
                }
                other => Err(format!(
                    "index_select by {other:?}; only a constant 1-D index is exported"
                )),
            }
        })(),
        "permute.default" => permute(o),
        // torch's scatters write into a copy of `self` (`scatter_shape_check` and its
        // siblings refuse a source or index that does not fit it).
        "scatter.src"
        | "scatter.value"
        | "scatter_add.default"
        | "scatter_reduce.two"
        | "index_put.default"
        | "select_scatter.default"
        | "slice_scatter.default"
        | "masked_scatter.default" => o.activation("self"),
        "select.int" => (|| {
            let mut x = o.activation("self")?;
            let a = axis(o.args.int("dim")?, x.len())?;
            let index = o.args.int("index")?;
            let size = x[a] as i64;
            if !(-size..size).contains(&index) {
                return Err(format!(
                    "index {index} is out of range for a dimension of {size}"
                ));
            }
            x.remove(a);
            Ok(x)
        })(),
        "unsqueeze.default" => (|| {
            let mut x = o.activation("self")?;
            // The new dimension may go after every existing one.
            let a = axis(o.args.int("dim")?, x.len() + 1)
                .map_err(|e| format!("unsqueeze where {e}"))?;
            x.insert(a, 1);
            Ok(x)
        })(),
        "squeeze.dim" => (|| {
            let mut x = o.activation("self")?;
            let dim = match o.args.get("dim") {
                Some(Argument::Int(d)) => *d,
                _ => return Err("squeeze of other than one named dimension is not exported (it could drop the batch at batch 1); name the dimension".into()),
            };
            let a = axis(dim, x.len())?;
            // As torch: a dimension not of size 1 is kept.
            if x[a] == 1 {
                x.remove(a);
            }
            Ok(x)
        })(),
        "unflatten.int" => (|| {
            let mut x = o.activation("self")?;
            let a = axis(o.args.int("dim")?, x.len())?;
            let sizes = o
                .args
                .optional_ints("sizes")?
                .ok_or("argument `sizes` is missing")?;
            let parts = unflattened(x[a], sizes)?;
            x.splice(a..=a, parts);
            Ok(x)
        })(),
        "transpose.int" => (|| {
            let mut x = o.activation("self")?;
            // Attention traced with gradients on swaps the batch and the tokens.
            let hint = |e: String| format!("{e}; {MOVED_BATCH_HINT}");
            let a = axis(o.args.int_or("dim0", 0)?, x.len()).map_err(hint)?;
            let b = axis(o.args.int_or("dim1", 0)?, x.len()).map_err(hint)?;
            x.swap(a, b);
            Ok(x)
        })(),
        _ => return None,
    })
}

/// Activations of one shape stacked along a new dimension.
fn stack(o: &Operands<'_>) -> Result<Vec<u64>, String> {
    let shapes = o.activations("tensors")?;
    let first = shapes.first().ok_or("stack of no tensors")?;
    if shapes.iter().any(|s| s != first) {
        return Err(format!(
            "stack of per-sample shapes {shapes:?}, which differ"
        ));
    }
    // The new dimension may go after every existing one.
    let a = axis(o.args.int("dim")?, first.len() + 1).map_err(|e| format!("stacking where {e}"))?;
    let mut out = first.clone();
    out.insert(a, shapes.len() as u64);
    Ok(out)
}

/// Activations joined along an existing dimension, equal elsewhere.
fn cat(o: &Operands<'_>) -> Result<Vec<u64>, String> {
    let shapes = o.activations("tensors")?;
    let first = shapes.first().ok_or("cat of no tensors")?.clone();
    let a = axis(o.args.int("dim")?, first.len())?;
    let mut out = first.clone();
    out[a] = 0;
    for s in &shapes {
        let same_elsewhere = s.len() == first.len()
            && s.iter()
                .zip(&first)
                .enumerate()
                .all(|(i, (x, y))| i == a || x == y);
        if !same_elsewhere {
            return Err(format!(
                "cat of per-sample shapes {shapes:?} along axis {}",
                a + 1
            ));
        }
        out[a] += s[a];
    }
    Ok(out)
}

/// Dimensions `start_dim..=end_dim` merged into one, never from the batch.
fn flatten(o: &Operands<'_>) -> Result<Vec<u64>, String> {
    let x = o.activation("self")?;
    // `ravel` has neither dimension: it flattens them all.
    let start = axis(o.args.int_or("start_dim", 0)?, x.len())
        .map_err(|e| format!("flattening from {e}, which folds the batch into the features"))?;
    let end = axis(o.args.int_or("end_dim", -1)?, x.len())?;
    if end < start {
        return Err(format!("flatten from axis {} to {}", start + 1, end + 1));
    }
    let merged: u64 = x[start..=end].iter().product();
    Ok(x[..start]
        .iter()
        .copied()
        .chain([merged])
        .chain(x[end + 1..].iter().copied())
        .collect())
}

/// `x[start:end:step]` along `dim`, bounds clamped as Python clamps them; the whole batch
/// may be "sliced" (a no-op), a part of it not.
fn slice(o: &Operands<'_>) -> Result<Vec<u64>, String> {
    let x = o.activation("self")?;
    let dim = o.args.int("dim")?;
    let start = o.args.optional_int("start")?.unwrap_or(0);
    let end = o.args.optional_int("end")?.unwrap_or(i64::MAX);
    let step = o.args.int("step")?;
    if step < 1 {
        return Err(format!("slice step {step}"));
    }
    match axis(dim, x.len()) {
        Ok(a) => {
            let len = x[a] as i64;
            let clamp = |v: i64| if v < 0 { (v + len).max(0) } else { v.min(len) };
            let (s, e) = (clamp(start), clamp(end));
            let mut out = x.clone();
            out[a] = if e > s {
                ((e - s - 1) / step + 1) as u64
            } else {
                0
            };
            Ok(out)
        }
        Err(_) if start == 0 && end == i64::MAX && step == 1 => Ok(x),
        Err(e) => Err(format!("slicing [{start}:{end}:{step}]: {e}")),
    }
}

/// A permutation that keeps the batch first.
fn permute(o: &Operands<'_>) -> Result<Vec<u64>, String> {
    let x = o.activation("self")?;
    let order = o
        .args
        .optional_ints("dims")?
        .ok_or("argument `dims` is missing")?;
    let axes = order
        .iter()
        .skip(1)
        .map(|&d| axis(d, x.len()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut sorted = axes.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if order.len() != x.len() + 1 || sorted.len() != x.len() {
        return Err(format!(
            "permutation {order:?} does not keep the batch first or is not one of rank {}",
            x.len() + 1
        ));
    }
    Ok(axes.iter().map(|&a| x[a]).collect())
}

/// The sizes `unflatten` splits a dimension of `size` into (one may be `-1`).
fn unflattened(size: u64, sizes: &[i64]) -> Result<Vec<u64>, String> {
    let holes = sizes.iter().filter(|&&s| s == -1).count();
    let known = sizes
        .iter()
        .filter(|&&s| s != -1)
        .map(|&s| u64::try_from(s).ok().filter(|&s| s > 0 && s <= MAX_DIM))
        .try_fold(1u64, |n, s| s.and_then(|s| n.checked_mul(s)));
    let fill = match (holes, known) {
        (0, Some(k)) if k == size => 1,
        (1, Some(k)) if size.is_multiple_of(k) => size / k,
        _ => return Err(format!("unflatten of a dimension of {size} into {sizes:?}")),
    };
    Ok(sizes
        .iter()
        .map(|&s| if s == -1 { fill } else { s as u64 })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::{infer, tests::node, tests::node_of, Dims};

    #[test]
    fn dimensions_picked_added_dropped_and_split() {
        let dims = |n: &str| match n {
            "x" => Some(Dims::PerSample(vec![3, 1, 6])),
            _ => None,
        };
        let on = |input: &str, op: &str, rest: &str| {
            let x = format!(r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "{input}"}}}}}}"#);
            infer(&node(&format!("{x}, {rest}")), op, &dims)
        };
        let dim = |d: i64| format!(r#"{{"name": "dim", "arg": {{"as_int": {d}}}}}"#);
        let index = |i: i64| format!(r#", {{"name": "index", "arg": {{"as_int": {i}}}}}"#);
        // googlenet's x[:, 0], and x[:, -1].
        assert_eq!(on("x", "select.int", &(dim(1) + &index(0))), Ok(vec![1, 6]));
        assert_eq!(
            on("x", "select.int", &(dim(1) + &index(-1))),
            Ok(vec![1, 6])
        );
        assert!(on("x", "select.int", &(dim(1) + &index(3))).is_err());
        assert!(on("x", "select.int", &(dim(0) + &index(0)))
            .unwrap_err()
            .contains("the batch"));
        assert_eq!(on("x", "unsqueeze.default", &dim(1)), Ok(vec![1, 3, 1, 6]));
        assert_eq!(on("x", "unsqueeze.default", &dim(-1)), Ok(vec![3, 1, 6, 1]));
        assert!(on("x", "unsqueeze.default", &dim(0)).is_err());
        // A dimension not of size 1 is kept, as torch keeps it.
        assert_eq!(on("x", "squeeze.dim", &dim(2)), Ok(vec![3, 6]));
        assert_eq!(on("x", "squeeze.dim", &dim(1)), Ok(vec![3, 1, 6]));
        let sizes = r#"{"name": "sizes", "arg": {"as_ints": [2, -1]}}"#;
        assert_eq!(
            on("x", "unflatten.int", &format!("{}, {sizes}", dim(3))),
            Ok(vec![3, 1, 2, 3])
        );
        assert!(on("x", "unflatten.int", &format!("{}, {sizes}", dim(1))).is_err());
    }

    #[test]
    fn slices_and_permutations() {
        let dims = |n: &str| (n == "x").then(|| Dims::PerSample(vec![5, 4, 6]));
        let x = r#"{"name": "self", "arg": {"as_tensor": {"name": "x"}}}"#;
        let slice = |rest: &str| {
            let n = node_of("slice.Tensor", &format!("{x}, {rest}"));
            infer(&n, "slice.Tensor", &dims)
        };
        let every_other = r#"{"name": "dim", "arg": {"as_int": 1}}, {"name": "start", "arg": {"as_int": 1}}, {"name": "step", "arg": {"as_int": 2}}"#;
        // x[:, 1::2] of 5 → indices 1 and 3.
        assert_eq!(slice(every_other), Ok(vec![2, 4, 6]));
        let huge_step = r#"{"name": "dim", "arg": {"as_int": -1}}, {"name": "step", "arg": {"as_int": 9223372036854775807}}"#;
        assert_eq!(slice(huge_step), Ok(vec![5, 4, 1]));
        let batch_part =
            r#"{"name": "dim", "arg": {"as_int": 0}}, {"name": "end", "arg": {"as_int": 1}}"#;
        assert!(slice(batch_part).unwrap_err().contains("the batch"));
        let permute = |order: &str| {
            let dims_arg = format!(r#"{{"name": "dims", "arg": {{"as_ints": {order}}}}}"#);
            infer(&node(&format!("{x}, {dims_arg}")), "permute.default", &dims)
        };
        assert_eq!(permute("[0, 2, 3, 1]"), Ok(vec![4, 6, 5]));
        assert!(permute("[1, 0, 2, 3]").unwrap_err().contains("the batch"));
        assert!(permute("[0, 1, 1, 2]").is_err());
    }
}
