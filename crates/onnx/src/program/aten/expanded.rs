//! Compound ops lowered as the ops torch computes them by ([`ckpt_aten::expand`]): each
//! node of the expansion goes through the dispatch as a node of the program would, so a
//! part on constants alone is folded and a step that cannot be exported is refused by its
//! own op, named in the refusal of the compound node.

use crate::OnnxError;
use ckpt_aten::expand;
use ckpt_aten::program::Node;

use super::super::lower::Lowering;
use super::arg_error;

impl<'p> Lowering<'p, '_> {
    /// Lowers `node`, one of [`expand::EXPANDED`].
    pub(super) fn expanded_node(&mut self, node: &Node) -> Result<(), OnnxError> {
        let index = self.at;
        let expansion = expand::expand(node, &|name| {
            self.expanded
                .get(name)
                .or_else(|| self.graph.tensor_values.get(name))
                .cloned()
        })
        .map_err(arg_error)?;
        self.expanded.extend(expansion.values);
        for step in &expansion.nodes {
            self.node(index, step).map_err(|e| {
                arg_error(format!(
                    "its step `{}` ({}) is not exported: {}",
                    step.label(),
                    step.target.trim_start_matches("torch.ops.aten."),
                    first_line(&e.to_string())
                ))
            })?;
        }
        Ok(())
    }
}

/// The first line of a refusal (the step's own location lines repeat the compound node's).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}
