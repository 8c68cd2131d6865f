//! Element-wise ops: arithmetic on an activation and a number, a parameter or another
//! activation of the same rank, and the broadcasting ops on masks and integer tensors.

use super::{broadcast, Dims, Operands};
use crate::program::Argument;

/// The per-sample shape of element-wise op `op`; `None` when `op` is not one.
pub(super) fn infer(o: &Operands<'_>, op: &str) -> Option<Result<Vec<u64>, String>> {
    if let Some(operands) = masked(op) {
        return Some(masked_shape(o, operands));
    }
    Some(match op {
        "add.Tensor" | "add_.Tensor" | "sub.Tensor" | "mul.Tensor" | "mul_.Tensor"
        | "div.Tensor" | "maximum.default" | "minimum.default" | "rsub.Scalar"
        | "remainder.Tensor" => (|| elementwise(o.operand("self")?, o.operand("other")?))(),
        // `clamp(self, min, max)` by tensors (timm's clippable linears clamp by 0-d
        // buffers): the broadcast of `self` with each bound given.
        "clamp.Tensor" | "clamp_.Tensor" => (|| {
            let mut sizes = o.activation("self")?;
            for bound in ["min", "max"] {
                if !matches!(o.args.get(bound), None | Some(Argument::None)) {
                    sizes = elementwise(Some(Dims::PerSample(sizes)), o.operand(bound)?)?;
                }
            }
            Ok(sizes)
        })(),
        "addcmul.default" | "addcdiv.default" => (|| {
            let term = elementwise(o.operand("tensor1")?, o.operand("tensor2")?)?;
            elementwise(o.operand("self")?, Some(Dims::PerSample(term)))
        })(),
        // `self.copy_(src)`: `self` keeps its sizes, `src` is broadcast into them.
        "copy_.default" => (|| {
            let into = o.activation("self")?;
            let sizes = elementwise(Some(Dims::PerSample(into.clone())), o.operand("src")?)?;
            if sizes == into {
                Ok(into)
            } else {
                Err(format!(
                    "copy_ into per-sample sizes {into:?} from a value that broadcasts to {sizes:?}"
                ))
            }
        })(),
        _ => return None,
    })
}

/// The operands of the broadcasting ops on masks and integer tensors (comparisons,
/// logical ops, `where`, `masked_fill`), by schema name.
fn masked(op: &str) -> Option<&'static [&'static str]> {
    match op.split('.').next()? {
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "logical_and" | "logical_or" | "__and__"
        | "__or__" => Some(&["self", "other"]),
        "where" => Some(&["condition", "self", "other"]),
        "masked_fill" => Some(&["self", "mask", "value"]),
        _ => None,
    }
}

/// The broadcast of a masked op's `operands`: activations of one rank, numbers, and stored
/// tensors of ones only.
fn masked_shape(o: &Operands<'_>, operands: &[&str]) -> Result<Vec<u64>, String> {
    let mut shapes = Vec::with_capacity(operands.len());
    for &name in operands {
        match o.args.get(name) {
            Some(Argument::Int(_) | Argument::Float(_) | Argument::Bool(_)) => {}
            _ => match o.tensor(name)? {
                Dims::PerSample(s) => shapes.push(s),
                Dims::Stored(s) if s.iter().all(|&d| d == 1) => {}
                Dims::Stored(s) => {
                    return Err(format!(
                        "argument `{name}` is a stored tensor of sizes {s:?}; only computed tensors and numbers are exported here"
                    ))
                }
            },
        }
    }
    let first = shapes
        .first()
        .ok_or("an op on constants alone is not exported")?;
    shapes.iter().try_fold(first.clone(), |acc, s| {
        if s.len() == acc.len() {
            broadcast(&acc, s)
        } else {
            Err(format!("operands of per-sample shapes {shapes:?}"))
        }
    })
}

/// The per-sample shape of an element-wise op on two operands (`None`: a number).
fn elementwise(a: Option<Dims>, b: Option<Dims>) -> Result<Vec<u64>, String> {
    match (a, b) {
        (Some(Dims::PerSample(a)), Some(Dims::PerSample(b))) if a.len() == b.len() => {
            broadcast(&a, &b)
        }
        (Some(Dims::PerSample(a)), Some(Dims::PerSample(b))) => Err(format!(
            "element-wise op of per-sample ranks {} and {}",
            a.len(),
            b.len()
        )),
        (Some(Dims::PerSample(a)), Some(Dims::Stored(c)))
        | (Some(Dims::Stored(c)), Some(Dims::PerSample(a))) => {
            // A leading 1 of a full-rank parameter (a position embedding) is
            // broadcast along the batch.
            let c = match c.split_first() {
                Some((1, rest)) if c.len() == a.len() + 1 => rest,
                _ => &c,
            };
            broadcast(&a, c)
        }
        (Some(Dims::PerSample(a)), None) | (None, Some(Dims::PerSample(a))) => Ok(a),
        _ => Err("an element-wise op on constants alone is not exported".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_rank_parameter_with_a_leading_one_broadcasts_along_the_batch() {
        let x = Some(Dims::PerSample(vec![4, 8]));
        assert_eq!(
            elementwise(x.clone(), Some(Dims::Stored(vec![1, 4, 8]))),
            Ok(vec![4, 8])
        );
        assert_eq!(elementwise(x.clone(), None), Ok(vec![4, 8]));
        assert!(elementwise(x, Some(Dims::PerSample(vec![8]))).is_err());
        assert!(elementwise(Some(Dims::Stored(vec![2])), None).is_err());
    }

    #[test]
    fn copy_keeps_the_destinations_sizes_and_refuses_a_source_that_would_grow_it() {
        let dims = |n: &str| match n {
            "x" => Some(Dims::PerSample(vec![2, 49, 8])),
            "row" => Some(Dims::PerSample(vec![1, 49, 8])),
            "wide" => Some(Dims::PerSample(vec![2, 49, 16])),
            "bias" => Some(Dims::Stored(vec![8])),
            _ => None,
        };
        let copy = |src: &str| {
            let n = super::super::tests::node(&format!(
                r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "x"}}}}}},
                   {{"name": "src", "arg": {{"as_tensor": {{"name": "{src}"}}}}}}"#
            ));
            super::super::infer(&n, "copy_.default", &dims)
        };
        assert_eq!(copy("row"), Ok(vec![2, 49, 8]));
        assert_eq!(copy("bias"), Ok(vec![2, 49, 8]));
        assert!(copy("wide").is_err());
    }

    #[test]
    fn clamp_by_tensors_broadcasts_self_with_each_bound_given() {
        let dims = |n: &str| match n {
            "x" => Some(Dims::PerSample(vec![4, 8])),
            "low" => Some(Dims::Stored(Vec::new())),
            "high" => Some(Dims::Stored(vec![8])),
            "wide" => Some(Dims::Stored(vec![3, 8])),
            _ => None,
        };
        let clamp = |max: &str| {
            let n = super::super::tests::node_of(
                "clamp.Tensor",
                &format!(
                    r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "x"}}}}}},
                       {{"name": "min", "arg": {{"as_tensor": {{"name": "low"}}}}}},
                       {{"name": "max", "arg": {max}}}"#
                ),
            );
            super::super::infer(&n, "clamp.Tensor", &dims)
        };
        assert_eq!(clamp(r#"{"as_none": true}"#), Ok(vec![4, 8]));
        assert_eq!(clamp(r#"{"as_tensor": {"name": "high"}}"#), Ok(vec![4, 8]));
        assert!(clamp(r#"{"as_tensor": {"name": "wide"}}"#).is_err());
    }

    #[test]
    fn masks_broadcast_with_numbers_and_stored_ones() {
        let dims = |n: &str| match n {
            "m" => Some(Dims::PerSample(vec![1, 6])),
            "x" => Some(Dims::PerSample(vec![3, 6])),
            "one" => Some(Dims::Stored(vec![1])),
            "table" => Some(Dims::Stored(vec![6])),
            _ => None,
        };
        let fill = |value: &str| {
            let n = super::super::tests::node(&format!(
                r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "x"}}}}}},
                   {{"name": "mask", "arg": {{"as_tensor": {{"name": "m"}}}}}},
                   {{"name": "value", "arg": {value}}}"#
            ));
            super::super::infer(&n, "masked_fill.Scalar", &dims)
        };
        assert_eq!(fill(r#"{"as_float": 0.5}"#), Ok(vec![3, 6]));
        assert_eq!(fill(r#"{"as_tensor": {"name": "one"}}"#), Ok(vec![3, 6]));
        assert!(fill(r#"{"as_tensor": {"name": "table"}}"#).is_err());
    }
}
