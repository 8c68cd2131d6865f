//! Ops returning a list of tensors (`split`, `split_with_sizes`, `chunk`, `unbind`,
//! `tensor_split`, their `unsafe_*` forms, `hsplit`/`vsplit`/`dsplit`): how each divides one
//! dimension ([`pieces_of`], [`split_dim`]) and the sizes of its pieces ([`piece_sizes`]),
//! as torch sizes them. The TorchScript importer, the evaluator and the lowering all size
//! pieces here.

use super::{axis, Dims, DimsOf, MAX_DIM};
use crate::args::Args;
use crate::program::{Argument, Node};

/// The most pieces one split may make (each becomes an ONNX output).
pub const MAX_PIECES: u64 = 4096;

/// How a splitting op divides one dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pieces<'a> {
    /// `split.Tensor`: pieces of this size, the last one possibly smaller.
    Size(i64),
    /// `split_with_sizes`: exactly these sizes.
    Sizes(&'a [i64]),
    /// `chunk`: this many pieces at most, each of the rounded-up share.
    Chunks(i64),
    /// `unbind`: pieces of 1 (the dimension is then dropped).
    Each,
    /// `tensor_split.indices`: cut before each of these indices.
    Indices(&'a [i64]),
    /// `tensor_split.sections`: this many pieces, the first `size % n` one longer
    /// (`torch._refs.tensor_split`).
    Sections(i64),
}

/// The sizes of the pieces a dimension of `size` is split into, as torch splits it. Empty
/// pieces (which ONNX `Split` cannot express at every opset) are refused.
pub fn piece_sizes(size: u64, how: Pieces<'_>) -> Result<Vec<u64>, String> {
    if size == 0 {
        return Err("splitting an empty dimension".into());
    }
    let even = |piece: u64| -> Result<Vec<u64>, String> {
        let count = size.div_ceil(piece);
        if count > MAX_PIECES {
            return Err(format!(
                "splitting size {size} into {count} pieces (at most {MAX_PIECES} are exported)"
            ));
        }
        Ok((0..count).map(|i| piece.min(size - i * piece)).collect())
    };
    match how {
        Pieces::Size(piece) => match u64::try_from(piece) {
            Ok(piece) if piece > 0 => even(piece),
            _ => Err(format!("split size {piece} is not positive")),
        },
        Pieces::Chunks(chunks) => match u64::try_from(chunks) {
            Ok(chunks) if chunks > 0 => even(size.div_ceil(chunks)),
            _ => Err(format!("chunk count {chunks} is not positive")),
        },
        Pieces::Each => even(1),
        Pieces::Sections(n) => match u64::try_from(n) {
            Ok(n) if n > 0 && n <= MAX_PIECES => Ok((0..n)
                .map(|i| size / n + u64::from(i < size % n))
                .collect::<Vec<_>>())
            .and_then(|sizes| {
                if sizes.contains(&0) {
                    Err(format!("{n} sections of size {size} make an empty piece"))
                } else {
                    Ok(sizes)
                }
            }),
            _ => Err(format!("section count {n} is not in 1..={MAX_PIECES}")),
        },
        Pieces::Indices(cuts) => {
            let mut sizes = Vec::with_capacity(cuts.len() + 1);
            let mut start = 0u64;
            for &cut in cuts.iter().chain(std::iter::once(&(size as i64))) {
                let at = if cut < 0 { cut + size as i64 } else { cut };
                let at = u64::try_from(at).unwrap_or(0).min(size);
                match at.checked_sub(start) {
                    Some(piece) if piece > 0 => sizes.push(piece),
                    _ => {
                        return Err(format!(
                            "tensor_split at {cuts:?} of size {size} makes an empty piece, which ATC does not compile"
                        ))
                    }
                }
                start = at;
            }
            Ok(sizes)
        }
        Pieces::Sizes(sizes) => {
            let sizes = sizes
                .iter()
                .map(|&s| u64::try_from(s).ok().filter(|&s| s <= MAX_DIM))
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| format!("split sizes {sizes:?} are not all sizes"))?;
            if sizes.contains(&0) {
                return Err(format!(
                    "split sizes {sizes:?} make an empty piece (a size of 0), which ATC does not compile"
                ));
            }
            if sizes.iter().sum::<u64>() != size {
                return Err(format!(
                    "split sizes {sizes:?} do not add up to the dimension's {size}"
                ));
            }
            Ok(sizes)
        }
    }
}

/// How `node` (`split.Tensor`, `split_with_sizes.default`, `chunk.default`, `unbind.int`,
/// `tensor_split`, their `unsafe_*` forms, `hsplit`/`vsplit`/`dsplit`) splits, and the
/// argument names it reads; `None` for any other op. The `unsafe_*` forms differ from
/// their safe ones only in aliasing, and `hsplit`/`vsplit`/`dsplit` are `tensor_split`
/// along a fixed dimension ([`split_dim`]), as `torch._refs` defines them.
pub fn pieces_of<'n>(node: &'n Node, op: &str) -> Option<Result<Pieces<'n>, String>> {
    let args = Args(node);
    Some(match op {
        "split.Tensor" | "unsafe_split.Tensor" => args.int("split_size").map(Pieces::Size),
        "split_with_sizes.default" | "unsafe_split_with_sizes.default" => {
            match args.optional_ints("split_sizes") {
                Ok(Some(sizes)) => Ok(Pieces::Sizes(sizes)),
                Ok(None) => Err("argument `split_sizes` is missing".into()),
                Err(e) => Err(e),
            }
        }
        "chunk.default" | "unsafe_chunk.default" => args.int("chunks").map(Pieces::Chunks),
        "unbind.int" => Ok(Pieces::Each),
        "tensor_split.sections" => args.int("sections").map(Pieces::Sections),
        "hsplit.int" | "vsplit.int" | "dsplit.int" => args.int("sections").map(Pieces::Sections),
        "tensor_split.indices" | "hsplit.array" | "vsplit.array" | "dsplit.array" => {
            match args.optional_ints("indices") {
                Ok(Some(cuts)) => Ok(Pieces::Indices(cuts)),
                Ok(None) => Err("argument `indices` is missing".into()),
                Err(e) => Err(e),
            }
        }
        _ => return None,
    })
}

/// `tensor_split.tensor_indices_or_sections` whose tensor (sizes `dims`, entries
/// `values`) is a constant, as the overload torch's `tensor_split` reads it as: a 0-d
/// tensor is the number of sections (`tensor_split.sections`), a 1-D one the indices to
/// cut before (`tensor_split.indices`).
pub fn by_constant(node: &Node, dims: &[u64], values: &[i64]) -> Result<Node, String> {
    let (target, name, arg) = match (dims, values) {
        ([], [sections]) => ("sections", "sections", Argument::Int(*sections)),
        ([_], _) => ("indices", "indices", Argument::Ints(values.to_vec())),
        _ => {
            return Err(format!(
            "its `tensor_indices_or_sections` has {} dimensions; torch takes a 0-d or 1-D tensor",
            dims.len()
        ))
        }
    };
    let mut split = node.clone();
    split.target = format!("torch.ops.aten.tensor_split.{target}");
    for input in &mut split.inputs {
        if input.name == "tensor_indices_or_sections" {
            input.name = name.to_owned();
            input.arg = arg.clone();
        }
    }
    Ok(split)
}

/// The dimension splitting op `op` (see [`pieces_of`]) of a rank-`rank` tensor splits:
/// `hsplit` the second (the first of a 1-D tensor), `vsplit` the first, `dsplit` the
/// third (`torch._refs.hsplit`, …), every other op its `dim` argument.
pub fn split_dim(node: &Node, op: &str, rank: usize) -> Result<i64, String> {
    Ok(match op.split('.').next() {
        Some("hsplit") => i64::from(rank > 1),
        Some("vsplit") => 0,
        Some("dsplit") => 2,
        _ => Args(node).int("dim")?,
    })
}

/// The per-sample shapes of the pieces a splitting op (see [`pieces_of`]) returns.
pub fn infer_pieces(node: &Node, op: &str, dims: DimsOf<'_>) -> Result<Vec<Vec<u64>>, String> {
    let how = pieces_of(node, op).ok_or_else(|| format!("`{op}` is not a splitting op"))??;
    let args = Args(node);
    let x = match args.get("self") {
        Some(Argument::Tensor(t)) => match dims(t) {
            Some(Dims::PerSample(s)) => s,
            _ => return Err(format!("`{t}` is not a computed tensor")),
        },
        _ => return Err("argument `self` is not a tensor".into()),
    };
    let a = axis(split_dim(node, op, x.len() + 1)?, x.len())?;
    Ok(piece_sizes(x[a], how)?
        .into_iter()
        .map(|size| {
            let mut shape = x.clone();
            if how == Pieces::Each {
                shape.remove(a);
            } else {
                shape[a] = size;
            }
            shape
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::tests::node;
    use super::*;

    #[test]
    fn pieces_split_as_torch_splits() {
        assert_eq!(piece_sizes(5, Pieces::Size(2)), Ok(vec![2, 2, 1]));
        assert_eq!(piece_sizes(4, Pieces::Size(9)), Ok(vec![4]));
        // chunk(5, 3): pieces of ceil(5/3) = 2 → 2, 2, 1; chunk(6, 4): 2, 2, 2 (3 pieces).
        assert_eq!(piece_sizes(5, Pieces::Chunks(3)), Ok(vec![2, 2, 1]));
        assert_eq!(piece_sizes(6, Pieces::Chunks(4)), Ok(vec![2, 2, 2]));
        assert_eq!(piece_sizes(3, Pieces::Each), Ok(vec![1, 1, 1]));
        assert_eq!(piece_sizes(4, Pieces::Sizes(&[1, 3])), Ok(vec![1, 3]));
        assert!(piece_sizes(4, Pieces::Sizes(&[1, 2])).is_err());
        assert!(piece_sizes(4, Pieces::Sizes(&[0, 4])).is_err());
        assert!(piece_sizes(4, Pieces::Chunks(0)).is_err());
        assert!(piece_sizes(4, Pieces::Size(-1)).is_err());
        assert!(piece_sizes(0, Pieces::Size(1)).is_err());
        let dims = |n: &str| (n == "x").then(|| Dims::PerSample(vec![6, 4, 4]));
        let x = r#"{"name": "self", "arg": {"as_tensor": {"name": "x"}}}"#;
        let chunk = node(&format!(
            r#"{x}, {{"name": "chunks", "arg": {{"as_int": 2}}}}, {{"name": "dim", "arg": {{"as_int": 1}}}}"#
        ));
        assert_eq!(
            infer_pieces(&chunk, "chunk.default", &dims),
            Ok(vec![vec![3, 4, 4], vec![3, 4, 4]])
        );
        let unbind = node(&format!(
            r#"{x}, {{"name": "dim", "arg": {{"as_int": -1}}}}"#
        ));
        assert_eq!(
            infer_pieces(&unbind, "unbind.int", &dims),
            Ok(vec![vec![6, 4]; 4])
        );
        // hsplit, vsplit and dsplit have no `dim`: each splits a fixed axis of the full rank.
        let sections = node(&format!(
            r#"{x}, {{"name": "sections", "arg": {{"as_int": 2}}}}"#
        ));
        assert_eq!(
            infer_pieces(&sections, "hsplit.int", &dims),
            Ok(vec![vec![3, 4, 4]; 2])
        );
        assert_eq!(
            infer_pieces(&sections, "dsplit.int", &dims),
            Ok(vec![vec![6, 2, 4]; 2])
        );
        assert!(infer_pieces(&sections, "vsplit.int", &dims)
            .unwrap_err()
            .contains("the batch"));
        let batch = node(&format!(
            r#"{x}, {{"name": "dim", "arg": {{"as_int": 0}}}}"#
        ));
        assert!(infer_pieces(&batch, "unbind.int", &dims)
            .unwrap_err()
            .contains("the batch"));
    }
}
