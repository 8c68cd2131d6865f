//! Shape inference over aten programs: the sizes of each op's output, computed as torch
//! computes them from its inputs' sizes and its arguments, without building any value.
//!
//! Tensors are seen per sample ([`infer`], [`split::infer_pieces`], [`recurrent::states`]): an activation
//!   is the batch, then sizes this module sees ([`Dims::PerSample`]); a rule refuses what
//!   would move or mix the batch, so the TorchScript importer sizes each op it records and
//!   the lowering checks every shape it builds against the same rule (a disagreement is an
//!   error, never a wrong graph);
//!
//! Arguments are read by schema name with [`crate::args::Args`]; each op group's rules
//! sit in their own file (`window.rs`, `layout.rs`, `reduce.rs`, `elementwise.rs`, `nn.rs`,
//! `factory.rs`, `split.rs`, `recurrent.rs`). The evaluator and the `.pt2` lowering use
//! [`split`]'s piece sizes too, so a split is sized by one rule everywhere.

mod elementwise;
mod factory;
mod layout;
mod nn;
pub mod recurrent;
mod reduce;
pub mod split;
mod window;

use crate::args::Args;
use crate::program::{Argument, Node};

pub use factory::factory;
pub use layout::MOVED_BATCH_HINT;

/// The largest size of one dimension, and of an argument such as a stride or padding: with
/// every operand below it, the arithmetic here cannot overflow.
pub const MAX_DIM: u64 = 1 << 31;
/// The most elements one sample of an activation may have.
pub const MAX_SAMPLE: u64 = 1 << 40;

/// Checks a per-sample shape against [`MAX_DIM`] and [`MAX_SAMPLE`].
pub fn check(shape: &[u64]) -> Result<(), String> {
    let numel = shape.iter().try_fold(1u64, |n, &d| {
        (d <= MAX_DIM).then(|| n.checked_mul(d)).flatten()
    });
    match numel {
        Some(n) if n <= MAX_SAMPLE => Ok(()),
        _ => Err(format!(
            "per-sample shape {shape:?} is larger than this exporter handles (2^31 per dimension, 2^40 elements)"
        )),
    }
}

/// What a tensor argument is, shape-wise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dims {
    /// An activation: the batch, then these sizes.
    PerSample(Vec<u64>),
    /// A stored tensor (no batch): these sizes.
    Stored(Vec<u64>),
}

/// Each tensor value's shape, by value name (`None`: not known).
pub type DimsOf<'a> = &'a dyn Fn(&str) -> Option<Dims>;

/// A node's arguments with the shapes of its tensors: what every per-sample rule reads.
struct Operands<'a> {
    args: Args<'a>,
    dims: DimsOf<'a>,
}

impl<'a> Operands<'a> {
    fn new(node: &'a Node, dims: DimsOf<'a>) -> Self {
        Operands {
            args: Args(node),
            dims,
        }
    }

    /// The shape of tensor argument `name`.
    fn tensor(&self, name: &str) -> Result<Dims, String> {
        let t = self.args.tensor(name)?;
        (self.dims)(t).ok_or_else(|| format!("`{t}` has no known shape"))
    }

    /// The per-sample sizes of activation argument `name`.
    fn activation(&self, name: &str) -> Result<Vec<u64>, String> {
        match self.tensor(name)? {
            Dims::PerSample(s) => Ok(s),
            Dims::Stored(_) => Err(format!("argument `{name}` is a stored tensor, where an activation (with the batch) is expected")),
        }
    }

    /// The sizes of stored-tensor argument `name` (a parameter).
    fn stored(&self, name: &str) -> Result<Vec<u64>, String> {
        match self.tensor(name)? {
            Dims::Stored(s) => Ok(s),
            Dims::PerSample(_) => Err(format!(
                "argument `{name}` is computed, where a parameter is expected"
            )),
        }
    }

    /// An element-wise operand: a tensor's shape, or `None` for a number.
    fn operand(&self, name: &str) -> Result<Option<Dims>, String> {
        match self.args.get(name) {
            Some(Argument::Int(_) | Argument::Float(_)) => Ok(None),
            _ => self.tensor(name).map(Some),
        }
    }

    /// The per-sample shapes of list argument `name`, every one an activation.
    fn activations(&self, name: &str) -> Result<Vec<Vec<u64>>, String> {
        let Some(Argument::Tensors(names)) = self.args.get(name) else {
            return Err(format!("argument `{name}` is not a list of tensors"));
        };
        names
            .iter()
            .map(|n| match (self.dims)(n) {
                Some(Dims::PerSample(s)) => Ok(s),
                _ => Err(format!("`{n}` is not an activation")),
            })
            .collect()
    }

    /// A size list of `n` entries, each at most [`MAX_DIM`]; one entry is repeated; absent
    /// or empty gives the schema's default (repeated the same way).
    fn sizes(&self, name: &str, n: usize) -> Result<Vec<u64>, String> {
        self.checked_sizes(name, n, self.args.ints(name, n)?)
    }

    /// Like [`Operands::sizes`], with a default of the caller's where it is not torch's.
    fn sizes_or(&self, name: &str, n: usize, default: &[i64]) -> Result<Vec<u64>, String> {
        self.checked_sizes(name, n, self.args.ints_or(name, n, default)?)
    }

    fn checked_sizes(&self, name: &str, n: usize, values: Vec<i64>) -> Result<Vec<u64>, String> {
        if values.len() != n {
            return Err(format!(
                "argument `{name}` has {} entries, expected {n}",
                values.len()
            ));
        }
        values
            .into_iter()
            .map(|v| {
                u64::try_from(v)
                    .ok()
                    .filter(|&v| v <= MAX_DIM)
                    .ok_or_else(|| format!("argument `{name}` has an entry {v} out of range"))
            })
            .collect()
    }
}

/// A per-sample axis of full-rank axis `dim` (negative counts from the end); the batch,
/// axis 0, is refused.
fn axis(dim: i64, per_sample_rank: usize) -> Result<usize, String> {
    let rank = per_sample_rank as i64 + 1;
    let a = if dim < 0 { dim + rank } else { dim };
    match a {
        0 => Err(format!("it works along dimension {dim}, the batch")),
        a if (1..rank).contains(&a) => Ok(a as usize - 1),
        _ => Err(format!("dimension {dim} is out of range for rank {rank}")),
    }
}

/// numpy broadcasting, right-aligned; `b` may not have more dimensions than `a`.
fn broadcast(a: &[u64], b: &[u64]) -> Result<Vec<u64>, String> {
    if b.len() > a.len() {
        return Err(format!(
            "broadcasting {a:?} with {b:?} would reach across the batch"
        ));
    }
    let offset = a.len() - b.len();
    a.iter()
        .enumerate()
        .map(|(i, &x)| match i.checked_sub(offset).map(|j| b[j]) {
            None => Ok(x),
            Some(y) if y == x || y == 1 => Ok(x),
            Some(y) if x == 1 => Ok(y),
            Some(y) => Err(format!(
                "sizes {a:?} and {b:?} do not broadcast ({x} vs {y})"
            )),
        })
        .collect()
}

/// The per-sample shape of `node`'s output (`op`: `node.target` without
/// `torch.ops.aten.`). `dims` gives each tensor value's shape; view/reshape shapes are
/// computed by the caller. An op without a rule of its own (element-wise unary ops,
/// `hardtanh`, `contiguous`/`clone`/`detach`, dtype conversions) keeps its input's shape.
pub fn infer(node: &Node, op: &str, dims: DimsOf<'_>) -> Result<Vec<u64>, String> {
    let o = Operands::new(node, dims);
    elementwise::infer(&o, op)
        .or_else(|| window::infer(&o, op))
        .or_else(|| nn::infer(&o, node, op))
        .or_else(|| reduce::infer(&o, op))
        .or_else(|| layout::infer(&o, op))
        .unwrap_or_else(|| o.activation("self"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of op `t` with these JSON inputs.
    pub(super) fn node(inputs: &str) -> Node {
        node_of("t", inputs)
    }

    /// A node of `op` (its absent arguments read as the op's schema defaults).
    pub(super) fn node_of(op: &str, inputs: &str) -> Node {
        serde_json::from_str(&format!(
            r#"{{"target": "{op}", "outputs": [], "inputs": [{inputs}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn broadcasting_stays_per_sample() {
        assert_eq!(broadcast(&[4, 8, 8], &[4, 1, 1]), Ok(vec![4, 8, 8]));
        assert_eq!(broadcast(&[1, 8, 8], &[4, 8, 8]), Ok(vec![4, 8, 8]));
        assert!(broadcast(&[8], &[2, 8])
            .unwrap_err()
            .contains("across the batch"));
        assert!(axis(0, 3).unwrap_err().contains("the batch"));
        assert_eq!(axis(-1, 3), Ok(2));
    }

    #[test]
    fn size_lists_repeat_one_entry_and_refuse_out_of_range_ones() {
        let n = node(
            r#"{"name": "stride", "arg": {"as_ints": [2]}}, {"name": "padding", "arg": {"as_ints": [-1, 0]}}"#,
        );
        let none = |_: &str| None;
        let o = Operands::new(&n, &none);
        assert_eq!(o.sizes_or("stride", 2, &[1]), Ok(vec![2, 2]));
        assert_eq!(o.sizes_or("dilation", 3, &[1]), Ok(vec![1, 1, 1]));
        assert!(o
            .sizes_or("padding", 2, &[0])
            .unwrap_err()
            .contains("out of range"));
        assert!(o.sizes_or("stride", 2, &[]).is_ok());
        assert!(o
            .sizes_or("kernel_size", 2, &[])
            .unwrap_err()
            .contains("0 entries"));
    }
}
