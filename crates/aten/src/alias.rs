//! Which values of a program share memory, for the in-place ops a program keeps.
//!
//! torch.export functionalizes a program, but a region under `torch.no_grad()` keeps its
//! in-place ops (`y = x.detach(); y.relu_()`, or `F.embedding` with `max_norm`, whose
//! `embedding_renorm_` rescales rows of the table the lookup then reads by its first name).
//! Such an op changes every value that shares memory with its `self`: the tensor a view
//! was taken of, and every other view of that tensor. Values are bound by name here, so
//! after an in-place op each name that sees the change and is read afterwards must see the
//! result: a view that is the whole tensor unchanged (`detach`, `alias`) is bound to it
//! too, and a view that would see the change only in part or rearranged (a slice, a
//! transpose) is refused, naming both values.
//!
//! The view ops are torch's: each has a `*_copy` overload ([`schema::COPIES`]), plus the
//! reshapes that return a view when they can.

use std::collections::HashMap;

use super::program::{Argument, Graph};
use super::schema;

/// Views that are not in [`schema::COPIES`]: reshapes return a view of a contiguous
/// tensor (every tensor a program reads is one), and `_unsafe_view` always does.
const RESHAPES: &[&str] = &[
    "reshape.default",
    "_unsafe_view.default",
    "_reshape_alias.default",
    "view_as.default",
    "flatten.using_ints",
    "unflatten.int",
    "expand_as.default",
    "as_strided.default",
    "numpy_T.default",
];

/// Views that are the whole tensor, unchanged: a change to either is the same change to
/// the other.
const WHOLE: &[&str] = &["detach.default", "alias.default"];

/// Views that hold every element of their `self` in the same row-major order, only sized
/// differently: a value written through one is written into `self` reshaped back.
const REORDERLESS: &[&str] = &[
    "view.default",
    "reshape.default",
    "_unsafe_view.default",
    "_reshape_alias.default",
    "view_as.default",
    "flatten.using_ints",
    "unflatten.int",
    "unsqueeze.default",
    "squeeze.default",
    "squeeze.dim",
    "squeeze.dims",
];

/// Whether view `op` only resizes its `self` (every element, the same row-major order).
pub fn is_reshape(op: &str) -> bool {
    REORDERLESS.contains(&op)
}

/// Whether aten overload `op` (`slice.Tensor`) returns a view of its `self`, so that a
/// change to either reaches the other.
pub fn is_view(op: &str) -> bool {
    RESHAPES.contains(&op) || schema::COPIES.iter().any(|(_, view)| *view == op)
}

/// The aliasing of one program's values.
#[derive(Debug, Default)]
pub struct Aliases {
    /// Each view's output: the value it views, and whether it is the whole of it.
    viewed: HashMap<String, (String, bool)>,
    /// The index of the last node that reads each value (`usize::MAX`: a graph output).
    last_read: HashMap<String, usize>,
}

impl Aliases {
    /// The views and readers of `graph`.
    pub fn of(graph: &Graph) -> Self {
        let mut aliases = Aliases::default();
        for (index, node) in graph.nodes.iter().enumerate() {
            for input in &node.inputs {
                for name in input.arg.tensor_names() {
                    aliases.last_read.insert(name.to_owned(), index);
                }
            }
            let op = node
                .target
                .strip_prefix("torch.ops.aten.")
                .unwrap_or(&node.target);
            let is_view = is_view(op);
            let Some(Argument::Tensor(base)) = node
                .inputs
                .iter()
                .find(|a| a.name == "self")
                .map(|a| &a.arg)
            else {
                continue;
            };
            if !is_view {
                continue;
            }
            let whole = WHOLE.contains(&op);
            for output in &node.outputs {
                for name in output.tensor_names() {
                    aliases
                        .viewed
                        .insert(name.to_owned(), (base.clone(), whole));
                }
            }
        }
        for output in &graph.outputs {
            for name in output.tensor_names() {
                aliases.last_read.insert(name.to_owned(), usize::MAX);
            }
        }
        aliases
    }

    /// The tensor `name` is a view of, through any chain of views (`name` itself if it is
    /// no view).
    fn base<'a>(&'a self, mut name: &'a str) -> &'a str {
        while let Some((of, _)) = self.viewed.get(name) {
            name = of;
        }
        name
    }

    /// The first value of `name`'s chain of whole views (`detach`, `alias`).
    fn whole<'a>(&'a self, mut name: &'a str) -> &'a str {
        while let Some((of, true)) = self.viewed.get(name) {
            name = of;
        }
        name
    }

    /// After an in-place op at node `at` changed `changed`: the other names read after
    /// `at` that hold the same whole tensor, to be bound to the result. A name that shares
    /// memory with `changed` only in part or rearranged and is read after `at` is an error
    /// (plain text naming both).
    pub fn changed_with(&self, changed: &str, at: usize) -> Result<Vec<String>, String> {
        let base = self.base(changed);
        let whole = self.whole(changed);
        let mut same = Vec::new();
        let sharing = std::iter::once(base).chain(
            self.viewed
                .keys()
                .map(String::as_str)
                .filter(|name| self.base(name) == base),
        );
        for name in sharing {
            let read_later = self.last_read.get(name).is_some_and(|&last| last > at);
            if name == changed || !read_later {
                continue;
            }
            if self.whole(name) != whole {
                return Err(format!(
                    "it changes `{changed}` in place, and `{name}`, which shares its memory as a view, is read afterwards and would see the change only in part or rearranged; in-place changes are exported where every later reader sees the whole tensor"
                ));
            }
            same.push(name.to_owned());
        }
        same.sort();
        Ok(same)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(nodes: &[(&str, &str, &str)], outputs: &[&str]) -> Graph {
        let nodes: Vec<String> = nodes
            .iter()
            .map(|(target, input, output)| {
                format!(
                    r#"{{"target": "torch.ops.aten.{target}", "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "{input}"}}}}}}], "outputs": [{{"as_tensor": {{"name": "{output}"}}}}]}}"#
                )
            })
            .collect();
        let outputs: Vec<String> = outputs
            .iter()
            .map(|o| format!(r#"{{"as_tensor": {{"name": "{o}"}}}}"#))
            .collect();
        serde_json::from_str(&format!(
            r#"{{"inputs": [], "outputs": [{}], "nodes": [{}], "tensor_values": {{}}}}"#,
            outputs.join(", "),
            nodes.join(", ")
        ))
        .unwrap()
    }

    /// `y = x.detach(); y.relu_(); x * 2`: `x` is read after the change and is the
    /// whole of `y`, so it sees the result.
    #[test]
    fn a_whole_view_read_later_sees_the_change() {
        let g = graph(
            &[
                ("detach.default", "x", "y"),
                ("relu_.default", "y", "r"),
                ("mul.Tensor", "x", "m"),
            ],
            &["m"],
        );
        assert_eq!(Aliases::of(&g).changed_with("y", 1).unwrap(), ["x"]);
    }

    /// A name read only before the change needs nothing; a copy shares no memory.
    #[test]
    fn names_read_before_or_copied_are_left() {
        let g = graph(
            &[
                ("detach_copy.default", "x", "c"),
                ("relu_.default", "c", "r"),
                ("mul.Tensor", "x", "m"),
            ],
            &["m", "r"],
        );
        assert!(Aliases::of(&g).changed_with("c", 1).unwrap().is_empty());
    }

    /// A slice of the changed tensor read afterwards would see part of the change.
    #[test]
    fn a_partial_view_read_later_is_refused() {
        let g = graph(
            &[
                ("slice.Tensor", "x", "s"),
                ("relu_.default", "x", "r"),
                ("mul.Tensor", "s", "m"),
            ],
            &["m"],
        );
        let err = Aliases::of(&g).changed_with("x", 1).unwrap_err();
        assert!(err.contains("`s`") && err.contains("in part"), "{err}");
    }
}
