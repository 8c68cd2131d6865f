//! Folding: a node that computes from parameters, buffers and constants alone (a layer
//! scale reshaped, a conv weight standardised, a bias table indexed) is evaluated once at
//! export ([`crate::torch::eval`]) and its outputs bound as `Bound::Folded` constants,
//! which the ops reading them write as initializers. The graph never computes them.

use std::collections::HashMap;

use crate::onnx::OnnxError;
use crate::torch::eval::{self, Tensor};
use crate::torch::pt2::schema::{Argument, Node, SymInt};

use super::lower::Lowering;

impl Lowering<'_, '_> {
    /// Evaluates `node` (aten op `op`) and binds its outputs when it is foldable: an op the
    /// evaluator knows, reading at least one tensor, every tensor a constant, no argument
    /// involving the batch (`class_token.expand(n, -1, -1)` is lowered instead, also when
    /// the batch was traced in as a number). Returns whether it folded; an evaluation error
    /// is an error, never a fallback.
    pub fn fold_constant(&mut self, node: &Node, op: &str) -> Result<bool, OnnxError> {
        if !eval::EVALUATED.contains(&op) {
            return Ok(false);
        }
        let mut names = Vec::new();
        for input in &node.inputs {
            if matches!(input.arg, Argument::SymInt(_) | Argument::SymInts(_)) {
                return Ok(false);
            }
            names.extend(input.arg.tensor_names());
        }
        if names.is_empty()
            || !names.iter().all(|name| self.is_constant(name))
            || self.expands_over_traced_batch(node, op)
        {
            return Ok(false);
        }
        let mut inputs: HashMap<&str, Tensor> = HashMap::with_capacity(names.len());
        for name in names {
            if !inputs.contains_key(name) {
                inputs.insert(name, self.constant_tensor(name)?);
            }
        }
        let outputs = eval::evaluate(node, &|name| inputs.get(name).cloned()).map_err(|what| {
            OnnxError::Shape {
                what: format!("evaluating it on constants: {what}"),
            }
        })?;
        if outputs.len() != node.outputs.len() {
            return Err(OnnxError::Shape {
                what: format!(
                    "the export evaluates {} outputs, torch recorded {}",
                    outputs.len(),
                    node.outputs.len()
                ),
            });
        }
        for (k, tensor) in outputs.into_iter().enumerate() {
            self.bind_folded(node, k, tensor)?;
        }
        Ok(true)
    }

    /// Whether `node` is an `expand` whose leading size is the batch of a program traced at
    /// a fixed batch (its sizes are numbers then, the traced batch size first).
    fn expands_over_traced_batch(&self, node: &Node, op: &str) -> bool {
        let leading = node.inputs.iter().find_map(|input| match &input.arg {
            Argument::Ints(sizes) if input.name == "size" => sizes.first().copied(),
            _ => None,
        });
        op == "expand.default" && leading.is_some_and(|n| self.batch.is(&SymInt::Int(n)))
    }
}
