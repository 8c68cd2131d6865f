//! Layers of `torch.nn` traced as one op: norms and dropout (the input's shape), fused
//! attention, recurrent layers ([`super::recurrent`]), linear maps, matrix products,
//! embeddings and grid sampling.

use super::{recurrent, Dims, Operands};
use crate::program::Node;

/// The per-sample shape of layer op `op`; `None` when `op` is not one.
pub(super) fn infer(o: &Operands<'_>, node: &Node, op: &str) -> Option<Result<Vec<u64>, String>> {
    Some(match op {
        "batch_norm.default"
        | "layer_norm.default"
        | "rms_norm.default"
        | "dropout.default"
        | "instance_norm.default"
        | "group_norm.default" => o.activation("input"),
        // torch names the in-place form's tensor `self`.
        "dropout_.default" => o.activation("self"),
        // One class axis appended; `num_classes=-1` sizes it by the largest index, a value.
        "one_hot.default" => (|| {
            let indices = o.activation("self")?;
            match o.args.int("num_classes")? {
                n if n > 0 => Ok(indices.into_iter().chain([n as u64]).collect()),
                -1 => Err("one_hot with num_classes=-1 takes its class count from the largest index, a value of the input; give num_classes".into()),
                n => Err(format!("one_hot with num_classes={n}")),
            }
        })(),
        "_transformer_encoder_layer_fwd.default" => o.activation("src"),
        // The attention output (the weights, its second output, are never exported).
        "_native_multi_head_attention.default" => o.activation("query"),
        "lstm.input" | "gru.input" | "rnn_tanh.input" | "rnn_relu.input" => {
            recurrent::output(o, node)
        }
        "linear.default" => (|| {
            let x = o.activation("input")?;
            let w = o.stored("weight")?;
            match (x.split_last(), w.first()) {
                (Some((_, rest)), Some(&out)) => Ok(rest.iter().copied().chain([out]).collect()),
                _ => Err(format!("linear of per-sample {x:?} by {w:?}")),
            }
        })(),
        "matmul.default" => matmul(o),
        // Each sample's image `[C, H, W]` read at its grid `[Ho, Wo, 2]`: `[C, Ho, Wo]`.
        "grid_sampler.default" | "grid_sampler_2d.default" => (|| {
            let x = o.activation("input")?;
            let grid = o.activation("grid")?;
            match (x.as_slice(), grid.as_slice()) {
                ([c, _, _], [ho, wo, 2]) => Ok(vec![*c, *ho, *wo]),
                _ => Err(format!(
                    "grid_sampler of per-sample {x:?} by a grid {grid:?}: only an image [C, H, W] by a grid [Ho, Wo, 2] (grid_sampler_2d) is sampled"
                )),
            }
        })(),
        // Attention over the last two axes: the query's tokens, the value's features.
        "scaled_dot_product_attention.default" => (|| {
            let q = o.activation("query")?;
            let v = o.activation("value")?;
            match (q.split_last(), v.last()) {
                (Some((_, rest)), Some(&features)) if q.len() == v.len() => {
                    Ok(rest.iter().copied().chain([features]).collect())
                }
                _ => Err(format!(
                    "attention of per-sample query {q:?} and value {v:?}"
                )),
            }
        })(),
        "embedding.default" => (|| {
            let ids = o.activation("indices")?;
            match o.stored("weight")?.as_slice() {
                [_, width] => Ok(ids.into_iter().chain([*width]).collect()),
                w => Err(format!("an embedding table of sizes {w:?}; it must be 2-D")),
            }
        })(),
        _ => return None,
    })
}

/// Two activations of one rank with the same leading sizes, or an activation times a
/// stored `[K, N]` matrix.
fn matmul(o: &Operands<'_>) -> Result<Vec<u64>, String> {
    let a = o.activation("self")?;
    let (b, broadcast) = match o.tensor("other")? {
        Dims::PerSample(b) => (b, false),
        Dims::Stored(b) => (b, true),
    };
    // A stored stack of matrices: its leading sizes, right-aligned with the activation's,
    // each 1 or the activation's own, and none on the batch but a 1 (as the lowering's
    // `batched_matmul` takes them).
    let fits = |rows: &[u64], lead: &[u64], k: u64| {
        let (rows_lead, b_lead) = (&rows[..rows.len() - 1], &lead[..lead.len() - 1]);
        lead.last() == Some(&k)
            && if broadcast {
                let beside = b_lead.len().saturating_sub(rows_lead.len());
                b_lead.len() <= rows_lead.len() + 1
                    && b_lead[..beside].iter().all(|&d| d == 1)
                    && b_lead[beside..]
                        .iter()
                        .zip(&rows_lead[rows_lead.len() + beside - b_lead.len()..])
                        .all(|(&d, &r)| d == 1 || d == r)
            } else {
                rows_lead == b_lead
            }
    };
    match (a.split_last(), b.split_last()) {
        (Some((&k, rows)), Some((&n, lead)))
            if !rows.is_empty() && !lead.is_empty() && fits(rows, lead, k) =>
        {
            Ok(rows.iter().copied().chain([n]).collect())
        }
        _ => Err(format!("matmul of per-sample {a:?} by {b:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{infer, tests::node, tests::node_of, Dims};

    #[test]
    fn matmul_takes_a_batched_pair_or_a_stored_matrix_or_stack_beside_the_batch() {
        let dims = |n: &str| match n {
            "a" => Some(Dims::PerSample(vec![4, 3, 5])),
            "b" => Some(Dims::PerSample(vec![4, 5, 2])),
            "w" => Some(Dims::Stored(vec![5, 7])),
            "w3" => Some(Dims::Stored(vec![4, 5, 7])),
            "w13" => Some(Dims::Stored(vec![1, 5, 7])),
            "w143" => Some(Dims::Stored(vec![1, 4, 5, 7])),
            "w2" => Some(Dims::Stored(vec![2, 5, 7])),
            "w243" => Some(Dims::Stored(vec![2, 4, 5, 7])),
            _ => None,
        };
        let mm = |other: &str| {
            let n = node(&format!(
                r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "a"}}}}}},
                   {{"name": "other", "arg": {{"as_tensor": {{"name": "{other}"}}}}}}"#
            ));
            infer(&n, "matmul.default", &dims)
        };
        assert_eq!(mm("b"), Ok(vec![4, 3, 2]));
        assert_eq!(mm("w"), Ok(vec![4, 3, 7]));
        assert_eq!(mm("w3"), Ok(vec![4, 3, 7]));
        assert_eq!(mm("w13"), Ok(vec![4, 3, 7]));
        assert_eq!(mm("w143"), Ok(vec![4, 3, 7]));
        assert!(mm("w2").is_err());
        assert!(mm("w243").is_err());
    }

    #[test]
    fn one_hot_appends_its_class_count_and_refuses_one_read_from_the_values() {
        let dims = |n: &str| (n == "ids").then(|| Dims::PerSample(vec![256, 2]));
        let one_hot = |classes: &str| {
            let n = node_of(
                "one_hot.default",
                &format!(
                    r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "ids"}}}}}}{classes}"#
                ),
            );
            infer(&n, "one_hot.default", &dims)
        };
        assert_eq!(
            one_hot(r#", {"name": "num_classes", "arg": {"as_int": 10240}}"#),
            Ok(vec![256, 2, 10240])
        );
        assert!(one_hot("").unwrap_err().contains("give num_classes"));
        assert!(one_hot(r#", {"name": "num_classes", "arg": {"as_int": 0}}"#).is_err());
    }
}
