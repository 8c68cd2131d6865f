//! Reductions along named dimensions (`mean.dim`, `sum.dim_IntList`, `amax`, `amin`,
//! `var.dim`, `std.dim`) and `argmax`/`argmin`: never over the batch.

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
}
