//! Folding: a node that computes from parameters, buffers and constants alone (a layer
//! scale reshaped, a conv weight standardised, a bias table indexed) is evaluated once at
//! export ([`ckpt_aten::eval`]) and its outputs bound as `Bound::Folded` constants,
//! which the ops reading them write as initializers. The graph never computes them.

use std::collections::HashMap;

use crate::elem::ElemType;
use crate::OnnxError;
use ckpt_aten::eval::{self, Tensor};
use ckpt_aten::expand;
use ckpt_aten::program::{Argument, Node, SymInt};

use super::alias;
use super::batch::BatchDim;
use super::lower::Lowering;

impl Lowering<'_, '_> {
    /// `nan_to_num`'s absent `posinf`/`neginf` are the result dtype's largest values; the
    /// ported rule (`aten::decompose`) holds float32's, so another dtype is refused.
    fn check_float32_defaults(&self, node: &Node, op: &str) -> Result<(), OnnxError> {
        if op != "nan_to_num.default" {
            return Ok(());
        }
        let given = |name: &str| {
            node.inputs
                .iter()
                .any(|a| a.name == name && a.arg != Argument::None)
        };
        let float32 = matches!(
            self.recorded_elem(self.output_name(node, 0)?),
            Ok(ElemType::Float32)
        );
        if float32 || (given("posinf") && given("neginf")) {
            return Ok(());
        }
        Err(OnnxError::Shape {
            what: "nan_to_num of a constant other than float32 without posinf and neginf (their defaults are its dtype's largest values); give both".into(),
        })
    }

    /// Evaluates `node` (aten op `op`) and binds its outputs when it is foldable: an op the
    /// evaluator knows, every tensor it reads a constant or the same for every sample (a
    /// factory reads none; sized by the batch, its row lowers it) ([`Bound::Uniform`](super::lower)). A size argument may be the
    /// batch (`class_token.expand(n, -1, -1)`, `zeros(n, h, w)`; also the number a
    /// program traced at a fixed batch holds): the op is then evaluated for one sample and
    /// its outputs bound as the same for every sample, as they are whenever a uniform
    /// tensor is read. Returns whether it folded; an evaluation error is an error, never a
    /// fallback.
    pub fn fold_constant(&mut self, node: &Node, op: &str) -> Result<bool, OnnxError> {
        if op == alias::COPY {
            // A copy into an activation is lowered by its row.
            let constants = node
                .inputs
                .iter()
                .flat_map(|input| input.arg.tensor_names())
                .all(|name| self.is_constant(name));
            if constants {
                self.copy_into_constant(node)?;
            }
            return Ok(constants);
        }
        // A compound op's steps are folded one by one by its row.
        if !eval::is_evaluated(op) || expand::EXPANDED.contains(&op) {
            return Ok(false);
        }
        let mut names = Vec::new();
        for input in &node.inputs {
            names.extend(input.arg.tensor_names());
        }
        if !names.iter().all(|name| self.is_constant(name)) {
            return Ok(false);
        }
        // A size (`sym_size`) is not bound as a tensor; its row lowers it.
        let tensors_out = node
            .outputs
            .iter()
            .all(|o| matches!(o, Argument::Tensor(_) | Argument::Tensors(_)));
        if !tensors_out {
            return Ok(false);
        }
        let Some(one_sample) = self.for_samples(node, 1) else {
            return Ok(false);
        };
        // A factory (no tensor read) sized by the batch is its row's: `arange(B)` indexes
        // the samples, `zeros(B, …)` is one value for every sample.
        if names.is_empty() && one_sample.is_some() {
            return Ok(false);
        }
        let uniform =
            one_sample.is_some() || names.iter().any(|name| self.uniform_axis(name).is_some());
        let mut inputs: HashMap<&str, Tensor> = HashMap::with_capacity(names.len());
        for &name in &names {
            if !inputs.contains_key(name) {
                inputs.insert(name, self.constant_tensor(name)?);
            }
        }
        let for_one = one_sample.as_ref().unwrap_or(node);
        let evaluated = self.evaluate(for_one, op, &names, &inputs);
        let outputs = if uniform {
            match self.same_for_every_sample(node, op, &names, &inputs, evaluated)? {
                Some(outputs) => outputs,
                None => return Ok(false),
            }
        } else {
            evaluated?
        };
        let names = output_names(node)?;
        if outputs.len() != names.len() {
            return Err(OnnxError::Shape {
                what: format!(
                    "the export evaluates {} outputs, torch recorded {}",
                    outputs.len(),
                    names.len()
                ),
            });
        }
        for (name, tensor) in names.into_iter().zip(outputs) {
            if uniform {
                self.bind_uniform_as(node, name, tensor)?;
            } else {
                self.bind_folded_as(node, name, tensor)?;
                self.record_view(node, op, name);
            }
        }
        if let Some(changed) = in_place_target(node, op) {
            let result = self.constant_tensor(self.output_name(node, 0)?)?;
            self.write_through(node, changed, result)?;
        }
        Ok(true)
    }

    /// `node` (aten op `op`) evaluated on `inputs`, the values of the tensors it reads.
    fn evaluate(
        &self,
        node: &Node,
        op: &str,
        names: &[&str],
        inputs: &HashMap<&str, Tensor>,
    ) -> Result<Vec<Tensor>, OnnxError> {
        self.check_float32_defaults(node, op)?;
        let typed = self.as_logical_not(node, names);
        let node = typed.as_ref().unwrap_or(node);
        eval::evaluate(node, &|name| inputs.get(name).cloned()).map_err(|what| OnnxError::Shape {
            what: format!("evaluating it on constants: {what}"),
        })
    }

    /// The outputs of `node`, which reads values the same for every sample, for one sample,
    /// when they are the same for every sample (`None` when an output folds the batch into
    /// another dimension: its row lowers it). `for_one` is the node evaluated for one
    /// sample (an error when one sample cannot be evaluated: a traced program's literal
    /// index of sample 1). Derived, not listed: the node is evaluated again for several
    /// samples (the traced batch, or two), the uniform inputs repeated along their batch
    /// dimension and sizes that are the batch set to that count; every output must then be
    /// one slice repeated along its recorded batch dimension, equal to the one-sample
    /// result. An op that works along the batch (a running sum over the samples, a softmax
    /// across them) fails that and is refused as mixing samples.
    fn same_for_every_sample(
        &self,
        node: &Node,
        op: &str,
        names: &[&str],
        inputs: &HashMap<&str, Tensor>,
        for_one: Result<Vec<Tensor>, OnnxError>,
    ) -> Result<Option<Vec<Tensor>>, OnnxError> {
        let count = match self.batch {
            BatchDim::Traced(n) if n > 1 => n,
            _ => 2,
        };
        let Some(for_count) = self.for_samples(node, count) else {
            return for_one.map(Some);
        };
        let mut repeated = inputs.clone();
        for (name, tensor) in repeated.iter_mut() {
            if let Some(axis) = self.uniform_axis(name) {
                let mut dims = tensor.dims().to_vec();
                dims[axis] = count;
                *tensor = tensor
                    .expand(&dims)
                    .map_err(|what| OnnxError::Shape { what })?;
            }
        }
        let many = self.evaluate(for_count.as_ref().unwrap_or(node), op, names, &repeated);
        let (many, one) = match (many, for_one) {
            (Ok(many), one) => (many, one.ok()),
            (Err(OnnxError::Shape { what }), Ok(_)) => {
                return Err(OnnxError::Shape {
                    what: format!(
                        "{what}, for {count} samples (it evaluates for one), so it is not known to treat each sample alike"
                    ),
                })
            }
            (Err(e), _) => return Err(e),
        };
        let mut outputs = Vec::with_capacity(many.len());
        for (k, (name, tensor)) in output_names(node)?.into_iter().zip(many).enumerate() {
            let recorded = self.recorded_name_sizes(name)?;
            let mut batch_axes = (0..recorded.len()).filter(|&a| recorded[a].batch);
            let (Some(axis), None) = (batch_axes.next(), batch_axes.next()) else {
                return Ok(None);
            };
            // The batch folded into another dimension (`mask.expand(B, …).reshape(-1, …)`)
            // is not one value repeated for every sample.
            if tensor.rank() != recorded.len() || recorded[axis].count != 1 {
                return Ok(None);
            }
            let slice = |i: u64| {
                tensor
                    .slice(axis, i as i64, i as i64 + 1, 1)
                    .map_err(|what| OnnxError::Shape { what })
            };
            let first = slice(0)?;
            let mut same = one
                .as_ref()
                .and_then(|one| one.get(k))
                .is_none_or(|one| identical(one, &first));
            for i in 1..tensor.dims()[axis] {
                same &= identical(&slice(i)?, &first);
            }
            if !same {
                return Err(OnnxError::Shape {
                    what: format!(
                        "`{name}` is computed along dimension {axis}, which carries the batch, from values the same for every sample: it differs from sample to sample, which mixes samples"
                    ),
                });
            }
            if !self.fits_uniform(name, &first) {
                return Ok(None);
            }
            outputs.push(first);
        }
        Ok(Some(outputs))
    }

    /// `node` with every size argument that is the batch replaced by `count`, when one is
    /// (`Some(Some(node))`); `Some(None)` when no argument involves the batch; `None` when
    /// one involves it otherwise (a multiple of it, another symbol), which is not folded.
    fn for_samples(&self, node: &Node, count: u64) -> Option<Option<Node>> {
        let replaced = std::cell::Cell::new(false);
        let count = count as i64;
        // A symbolic size as a number for `count` samples.
        let sized = |size: &SymInt| -> Option<i64> {
            match size {
                SymInt::Name(name) if self.is_batch_symbol(name) => {
                    replaced.set(true);
                    Some(count)
                }
                SymInt::Expr(_) if self.batch.is(size) => {
                    replaced.set(true);
                    Some(count)
                }
                SymInt::Int(n) => Some(*n),
                _ => None,
            }
        };
        let mut copy = node.clone();
        for input in &mut copy.inputs {
            input.arg = match &input.arg {
                Argument::SymInt(size) => Argument::Int(sized(size)?),
                Argument::SymInts(sizes) => {
                    Argument::Ints(sizes.iter().map(sized).collect::<Option<Vec<i64>>>()?)
                }
                // A size list of numbers whose leading one is the batch a program was
                // traced at (`expand(3, -1, -1)` traced at batch 3).
                Argument::Ints(sizes)
                    if input.name == "size"
                        && node.target.ends_with("expand.default")
                        && sizes
                            .first()
                            .is_some_and(|&n| self.batch.is(&SymInt::Int(n))) =>
                {
                    let mut sizes = sizes.clone();
                    sizes[0] = count;
                    replaced.set(true);
                    Argument::Ints(sizes)
                }
                other => other.clone(),
            };
        }
        Some(replaced.get().then_some(copy))
    }

    /// `node` as `logical_not` when it is a `bitwise_not` of a bool tensor, which it is
    /// (the evaluator holds bools as 0/1 integers).
    fn as_logical_not(&self, node: &Node, names: &[&str]) -> Option<Node> {
        let of_bool = node.target.ends_with("bitwise_not.default")
            && names
                .first()
                .is_some_and(|name| self.recorded_elem(name).ok() == Some(ElemType::Bool));
        of_bool.then(|| Node {
            target: "torch.ops.aten.logical_not.default".into(),
            ..node.clone()
        })
    }
}

/// The tensor in-place op `op` (aten name ending in `_`: `mul_.Tensor`) changes: its
/// `self` argument.
fn in_place_target<'n>(node: &'n Node, op: &str) -> Option<&'n str> {
    let name = op.rsplit_once('.').map_or(op, |(head, _)| head);
    // `detach_` changes no value.
    if !name.ends_with('_') || name.ends_with("__") || name == "detach_" {
        return None;
    }
    match node.inputs.iter().find(|input| input.name == "self")?.arg {
        Argument::Tensor(ref changed) => Some(changed),
        _ => None,
    }
}

/// The names of `node`'s outputs: tensors, or one list of tensors (`meshgrid`, `unbind`).
fn output_names(node: &Node) -> Result<Vec<&str>, OnnxError> {
    match node.outputs.as_slice() {
        [Argument::Tensors(list)] => Ok(list.iter().map(String::as_str).collect()),
        outputs => outputs
            .iter()
            .map(|o| {
                o.tensor_name().ok_or_else(|| OnnxError::Shape {
                    what: "an output is not a tensor".into(),
                })
            })
            .collect(),
    }
}

/// Whether `a` and `b` hold the same sizes and bits (a NaN equals a NaN).
fn identical(a: &Tensor, b: &Tensor) -> bool {
    a.dims() == b.dims()
        && match (a.values(), b.values()) {
            (eval::Values::F32(x), eval::Values::F32(y)) => {
                x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
            }
            (x, y) => x == y,
        }
}
