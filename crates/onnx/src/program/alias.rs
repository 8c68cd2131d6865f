//! Writes into folded constants. A model that builds a table by filling a buffer through
//! views (`rel = torch.zeros(1, N, N, 3); rel[:, :, :, 2] = d`) is recorded by torch.export
//! as a factory, view ops (`select`, `slice`, …) and `copy_.default` into the view, which
//! changes the factory's tensor and every other view of it. When the tensor and the copied
//! values are constants, the export performs the write: each folded view remembers the
//! folded value it aliases and the view ops that lead there, the write lands in that base
//! tensor at the positions the view covers, and the base and every view of it are bound
//! anew. In-place ops folded on constants (`t.mul_(2)`) write the same way. A write into a
//! parameter or buffer, or of values computed from the input, is refused: the graph would
//! have to change state or compute the table per call.

use crate::OnnxError;
use ckpt_aten::alias::is_view;
use ckpt_aten::args::Args;
use ckpt_aten::eval::{self, element_count, Tensor, Values};
use ckpt_aten::program::{Argument, Node};

use super::lower::{Bound, Lowering};
use super::tensor::{show, Tensor as Activation};

/// The overload of an in-place copy (`dst.copy_(src)`, also what `dst[...] = src` records).
pub(super) const COPY: &str = "copy_.default";

/// A folded value that is a view of another folded value. Invariant: `base` is not itself
/// a view, and evaluating `ops` in order from `base` gives the view's value.
#[derive(Clone, Debug)]
pub(super) struct View {
    base: String,
    ops: Vec<Node>,
}

fn error(what: String) -> OnnxError {
    OnnxError::Shape { what }
}

/// The value a view op reads (its `self` argument).
fn viewed(node: &Node) -> Result<&str, OnnxError> {
    Args(node).tensor("self").map_err(error)
}

impl Lowering<'_, '_> {
    /// Records that `node` (aten op `op`), just folded, made `output` as a view of its
    /// input, when `op` is a view op and the input is a folded value.
    pub(super) fn record_view(&mut self, node: &Node, op: &str, output: &str) {
        if !is_view(op) {
            return;
        }
        let Ok(input) = viewed(node) else { return };
        if !matches!(self.values.get(input), Some(Bound::Folded { .. })) {
            return;
        }
        let mut view = self.views.get(input).cloned().unwrap_or_else(|| View {
            base: input.to_owned(),
            ops: Vec::new(),
        });
        view.ops.push(node.clone());
        self.views.insert(output.to_owned(), view);
    }

    /// Lowers `copy_.default(self, src)` of constants by writing `src` into the folded
    /// tensor `self` views (see [`Lowering::write_through`]).
    pub(super) fn copy_into_constant(&mut self, node: &Node) -> Result<(), OnnxError> {
        let args = Args(node);
        let destination = args.tensor("self").map_err(error)?;
        let source = args.tensor("src").map_err(error)?;
        if !self.is_constant(source) || !self.is_constant(destination) {
            return Err(error(
                "a copy into a tensor is exported only when both the tensor and the copied values are constants (a table filled at export)".into(),
            ));
        }
        if matches!(self.values.get(destination), Some(Bound::Uniform { .. })) {
            return Err(error(format!(
                "a copy into `{destination}`, which the export holds as the same for every sample, is not exported"
            )));
        }
        let values = self.constant_tensor(source)?;
        self.write_through(node, destination, values)
    }

    /// Lowers `copy_.default(self, src)` into an activation. `self` is the activation
    /// itself or a view of one through full views and step-1 slices (`attn[:, :, 1:, 1:] =
    /// y`, MViT with a class token): the tensor is rebuilt as the parts the slices leave out
    /// concatenated around `src` along each sliced dimension, and every name on the way
    /// (the tensor, each view, the node's output) is bound to its new value. Refused: other
    /// views (`select`, strided slices), and a write after which another view of the old
    /// tensor is still read (it would see the old values).
    pub(super) fn copy_into_activation(&mut self, node: &Node) -> Result<(), OnnxError> {
        let args = Args(node);
        let destination = args.tensor("self").map_err(error)?;
        let source = args.tensor("src").map_err(error)?;
        let written = self.tensor(destination)?;
        let values = self.tensor(source)?;
        if values.sizes() != written.sizes() {
            return Err(error(format!(
                "a copy of {} into `{destination}` {}: only a copy of the same sizes and batch layout is exported",
                show(&values.sizes()),
                show(&written.sizes())
            )));
        }
        // Up from the destination: each name with the number of slices below it, and the
        // slices (dimension, range) in order from the destination up.
        let mut names = vec![(destination.to_owned(), 0usize)];
        let mut slices: Vec<(usize, std::ops::Range<u64>)> = Vec::new();
        let mut current = written.clone();
        while let Some((producer, input)) = self.view_producer(&names[names.len() - 1].0) {
            let parent = self.tensor(input)?;
            if parent.value().name() != current.value().name() {
                let piece = step_one_slice(producer, &parent).ok_or_else(|| {
                    error(format!(
                        "a write into part of `{input}` through `{}` is not exported; only through slices of step 1",
                        producer.target
                    ))
                })?;
                slices.push(piece);
            }
            names.push((input.to_owned(), slices.len()));
            current = parent;
        }
        let at = self
            .graph
            .nodes
            .iter()
            .position(|n| std::ptr::eq(n, node))
            .unwrap_or(usize::MAX);
        let mut old: Vec<String> = Vec::new();
        for (name, _) in &names {
            old.push(self.tensor(name)?.value().name().to_owned());
        }
        let stale = self.values.iter().find(|(name, bound)| {
            matches!(bound, Bound::Activation(t) if old.iter().any(|o| o == t.value().name()))
                && !names.iter().any(|(n, _)| n == *name)
                && self.readers_of(name).iter().any(|&reader| reader > at)
        });
        if let Some((name, _)) = stale {
            return Err(error(format!(
                "`{name}` views the tensor this copy overwrites and is read after it; only a write whose views are not read again is exported"
            )));
        }
        // Level k is the value with k slices below it; level 0 is `src`.
        let scope = Self::scope(node);
        let mut levels = vec![values];
        for (k, (dim, range)) in slices.iter().enumerate() {
            let parent = names
                .iter()
                .find(|(_, level)| *level == k + 1)
                .map(|(name, _)| name.clone())
                .ok_or_else(|| error("a slice with no tensor above it".into()))?;
            let parent = self.tensor(&parent)?;
            let size = parent.sizes()[*dim].count;
            let mut parts = Vec::with_capacity(3);
            if range.start > 0 {
                parts.push(parent.sliced(&mut self.g, &scope, "copy_", *dim, 0..range.start)?);
            }
            parts.push(levels[k].clone());
            if range.end < size {
                parts.push(parent.sliced(&mut self.g, &scope, "copy_", *dim, range.end..size)?);
            }
            levels.push(Activation::concat(&mut self.g, &scope, &parts, *dim)?);
        }
        for (name, level) in names {
            self.values
                .insert(name, Bound::Activation(levels[level].clone()));
        }
        let output = self.output_name(node, 0)?.to_owned();
        self.values
            .insert(output, Bound::Activation(levels[0].clone()));
        Ok(())
    }

    /// After in-place op `node` (`mul_`, `add_`, `copy_`) folded on constants: writes
    /// `values` (broadcast to its sizes) into `destination`, its `self` argument. A folded
    /// destination or view of one is written in its base tensor, and the base, every view
    /// of it and the node's output are bound anew; a value the same for every sample (no
    /// views are tracked for those) is rebound whole; a parameter or buffer is refused.
    pub(super) fn write_through(
        &mut self,
        node: &Node,
        destination: &str,
        values: Tensor,
    ) -> Result<(), OnnxError> {
        let output = self.output_name(node, 0)?.to_owned();
        if matches!(self.values.get(destination), Some(Bound::Uniform { .. })) {
            let result = self
                .values
                .get(&output)
                .cloned()
                .ok_or_else(|| error(format!("`{output}` is rebound before it is computed")))?;
            self.values.insert(destination.to_owned(), result);
            return Ok(());
        }
        let view = self
            .views
            .get(destination)
            .cloned()
            .unwrap_or_else(|| View {
                base: destination.to_owned(),
                ops: Vec::new(),
            });
        let Some(Bound::Folded {
            tensor: base,
            label,
        }) = self.values.get(&view.base).cloned()
        else {
            return Err(error(format!(
                "it writes into `{}`, a parameter or buffer; only tensors the model builds from constants are written at export",
                view.base
            )));
        };
        let count = element_count(base.dims()).map_err(error)?;
        let positions = Tensor::i64(base.dims().to_vec(), (0..count as i64).collect())
            .and_then(|index| through(&view.ops, index))
            .map_err(error)?;
        let values = values
            .expand(positions.dims())
            .map_err(|e| format!("the written values: {e}"))
            .and_then(|values| write(&base, &positions, &values))
            .map_err(error)?;
        let label = format!("{label}.{}", node.label());
        self.values.insert(
            view.base.clone(),
            Bound::Folded {
                tensor: values.clone(),
                label: label.clone(),
            },
        );
        self.views.insert(output, view.clone());
        let aliases: Vec<(String, View)> = self
            .views
            .iter()
            .filter(|(_, v)| v.base == view.base)
            .map(|(name, v)| (name.clone(), v.clone()))
            .collect();
        for (name, alias) in aliases {
            let tensor = through(&alias.ops, values.clone()).map_err(error)?;
            let label = format!("{label}.{name}");
            self.values.insert(name, Bound::Folded { tensor, label });
        }
        Ok(())
    }
}

impl Lowering<'_, '_> {
    /// The view op that made value `name`, with its input, if a view op made it.
    fn view_producer(&self, name: &str) -> Option<(&Node, &str)> {
        let producer = self.graph.nodes.iter().find(|n| {
            n.outputs
                .first()
                .and_then(Argument::tensor_name)
                .is_some_and(|made| made == name)
        })?;
        let op = producer
            .target
            .strip_prefix("torch.ops.aten.")
            .unwrap_or(&producer.target);
        is_view(op)
            .then(|| viewed(producer).ok().map(|input| (producer, input)))
            .flatten()
    }
}

/// The dimension and range of `node` when it is a `slice.Tensor` of step 1 of `parent`
/// (negative and open bounds resolved), else `None`.
fn step_one_slice(node: &Node, parent: &Activation) -> Option<(usize, std::ops::Range<u64>)> {
    if !node.target.ends_with("slice.Tensor") {
        return None;
    }
    let args = Args(node);
    let rank = parent.rank() as i64;
    let dim = args.int("dim").ok()?;
    let dim = usize::try_from(if dim < 0 { dim + rank } else { dim }).ok()?;
    let size = parent.sizes().get(dim)?.count as i64;
    if args.int("step").ok()? != 1 {
        return None;
    }
    let clamp = |i: i64| (if i < 0 { i.saturating_add(size) } else { i }).clamp(0, size) as u64;
    let start = clamp(args.optional_int("start").ok()?.unwrap_or(0));
    let end = clamp(args.optional_int("end").ok()?.unwrap_or(i64::MAX));
    (start < end).then_some((dim, start..end))
}

/// `base` taken through view ops `ops` in order.
fn through(ops: &[Node], base: Tensor) -> Result<Tensor, String> {
    let mut current = base;
    for op in ops {
        let input = viewed(op).map_err(|e| e.to_string())?.to_owned();
        let outputs = eval::evaluate(op, &|name| (name == input).then(|| current.clone()))?;
        current = outputs
            .into_iter()
            .next()
            .ok_or_else(|| format!("`{}` gave no output", op.label()))?;
    }
    Ok(current)
}

/// `base` with `values[k]` written at flat position `positions[k]`, in `base`'s dtype.
fn write(base: &Tensor, positions: &Tensor, values: &Tensor) -> Result<Tensor, String> {
    let at = positions.to_i64()?;
    let index = |p: i64| usize::try_from(p).map_err(|_| format!("position {p} out of range"));
    let written = match base.values() {
        Values::F32(old) => {
            let mut new = old.clone();
            for (&p, v) in at.iter().zip(values.to_f32()) {
                *new.get_mut(index(p)?).ok_or("a position past the end")? = v;
            }
            Values::F32(new)
        }
        Values::I64(old) => {
            let mut new = old.clone();
            for (&p, v) in at.iter().zip(values.to_i64()?) {
                *new.get_mut(index(p)?).ok_or("a position past the end")? = v;
            }
            Values::I64(new)
        }
    };
    Tensor::new(base.dims().to_vec(), written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(target: &str, input: &str, extra: &str) -> Node {
        serde_json::from_str(&format!(
            r#"{{"target": "torch.ops.aten.{target}", "outputs": [{{"as_tensor": {{"name": "out"}}}}],
                "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "{input}"}}}}}}{extra}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_write_through_a_select_lands_in_the_base_at_the_selected_positions() {
        let base = Tensor::f32(vec![2, 3], vec![0.0; 6]).unwrap();
        let select = node(
            "select.int",
            "base",
            r#", {"name": "dim", "arg": {"as_int": 1}}, {"name": "index", "arg": {"as_int": 2}}"#,
        );
        let positions = through(
            &[select],
            Tensor::i64(vec![2, 3], (0..6).collect()).unwrap(),
        )
        .unwrap();
        assert_eq!(positions.to_i64().unwrap(), [2, 5]);
        let values = Tensor::f32(vec![1], vec![7.0])
            .unwrap()
            .expand(&[2])
            .unwrap();
        let written = write(&base, &positions, &values).unwrap();
        assert_eq!(written.to_f32(), [0.0, 0.0, 7.0, 0.0, 0.0, 7.0]);
    }

    #[test]
    fn an_integer_base_keeps_its_dtype_and_refuses_fractions() {
        let base = Tensor::i64(vec![3], vec![0; 3]).unwrap();
        let positions = Tensor::i64(vec![1], vec![1]).unwrap();
        let whole = Tensor::f32(vec![1], vec![4.0]).unwrap();
        let written = write(&base, &positions, &whole).unwrap();
        assert_eq!(written.values(), &Values::I64(vec![0, 4, 0]));
        let fraction = Tensor::f32(vec![1], vec![0.5]).unwrap();
        assert!(write(&base, &positions, &fraction).is_err());
    }
}
