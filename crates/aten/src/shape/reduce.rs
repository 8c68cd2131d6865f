//! Reductions along named dimensions (`mean.dim`, `sum.dim_IntList`, `amax`, `amin`,
//! `var.dim`, `std.dim`), `argmax`/`argmin` and `topk`: never over the batch.

use super::{axis, Operands};

/// The per-sample shape of reduction `op`; `None` when `op` is not one.
pub(super) fn infer(o: &Operands<'_>, op: &str) -> Option<Result<Vec<u64>, String>> {
    Some(match op {
        "mean.dim" | "sum.dim_IntList" | "amax.default" | "amin.default" | "var.dim"
        | "std.dim" => (|| {
            let x = o.activation("self")?;
            let keep = o.args.bool("keepdim")?;
            let axes: Vec<usize> = match o.args.optional_ints("dim")? {
                None | Some([]) => {
                    return Err("a reduction over every dimension reduces the batch".into())
                }
                Some(d) => d
                    .iter()
                    .map(|&d| axis(d, x.len()))
                    .collect::<Result<_, _>>()?,
            };
            Ok(x.iter()
                .enumerate()
                .filter_map(|(i, &d)| match (axes.contains(&i), keep) {
                    (false, _) => Some(d),
                    (true, true) => Some(1),
                    (true, false) => None,
                })
                .collect())
        })(),
        "argmax.default" | "argmin.default" => (|| {
            let mut x = o.activation("self")?;
            let dim = o
                .args
                .optional_int("dim")?
                .ok_or("argmax/argmin over the whole tensor mixes the batch; give `dim`")?;
            let a = axis(dim, x.len())?;
            if o.args.bool("keepdim")? {
                x[a] = 1;
            } else {
                x.remove(a);
            }
            Ok(x)
        })(),
        // torch's `topk` (`TORCH_META_FUNC(topk)`): `k` of the dimension's entries, values
        // and indices both of these sizes.
        "topk.default" => (|| {
            let mut x = o.activation("self")?;
            let a = axis(o.args.int("dim")?, x.len())?;
            let k = o.args.int("k")?;
            x[a] = u64::try_from(k)
                .ok()
                .filter(|&k| k <= x[a])
                .ok_or_else(|| format!("topk of {k} from {} entries", x[a]))?;
            Ok(x)
        })(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{infer, tests::node_of, Dims};

    #[test]
    fn reductions_keep_or_drop_their_axes_and_refuse_the_batch() {
        let dims = |n: &str| (n == "x").then(|| Dims::PerSample(vec![3, 4, 5]));
        let mean = |rest: &str| {
            let n = node_of(
                "mean.dim",
                &format!(r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "x"}}}}}}{rest}"#),
            );
            infer(&n, "mean.dim", &dims)
        };
        let dim = r#", {"name": "dim", "arg": {"as_ints": [-1, 1]}}"#;
        assert_eq!(mean(dim), Ok(vec![4]));
        let keep = format!(r#"{dim}, {{"name": "keepdim", "arg": {{"as_bool": true}}}}"#);
        assert_eq!(mean(&keep), Ok(vec![1, 4, 1]));
        assert!(mean("").unwrap_err().contains("reduces the batch"));
    }

    #[test]
    fn topk_keeps_k_entries_of_its_dimension_never_the_batch() {
        let dims = |n: &str| (n == "x").then(|| Dims::PerSample(vec![3, 8]));
        let topk = |rest: &str| {
            let n = node_of(
                "topk.default",
                &format!(r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "x"}}}}}}{rest}"#),
            );
            infer(&n, "topk.default", &dims)
        };
        let k = |k: i64| format!(r#", {{"name": "k", "arg": {{"as_int": {k}}}}}"#);
        assert_eq!(topk(&k(5)), Ok(vec![3, 5]));
        let first = format!(r#"{}, {{"name": "dim", "arg": {{"as_int": 1}}}}"#, k(2));
        assert_eq!(topk(&first), Ok(vec![2, 8]));
        assert!(topk(&k(9)).unwrap_err().contains("topk of 9 from 8"));
        let batch = format!(r#"{}, {{"name": "dim", "arg": {{"as_int": 0}}}}"#, k(1));
        assert!(topk(&batch).unwrap_err().contains("the batch"));
    }
}
