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
use ckpt_aten::alias::{is_reshape, is_view};
use ckpt_aten::args::Args;
use ckpt_aten::eval::{self, element_count, Tensor, Values};
use ckpt_aten::program::{Argument, Node};

use super::lower::{Bound, Lowering};
use super::tensor::{show, Size, Tensor as Activation};

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

    /// Lowers `copy_.default(self, src)` into an activation (`attn[:, :, 1:, 1:] = y`,
    /// MViT with a class token): `src` must have the sizes and batch layout of `self`,
    /// which is written as [`Lowering::write_into_activation`] writes.
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
        self.write_into_activation(node, destination, values)
    }

    /// Whether an in-place change of `name` by the node at `at` is a write into an
    /// activation ([`Lowering::write_into_activation`]): `name` is an activation made from
    /// another by view ops of which at least one is a slice or a select (`y[:, 0]`,
    /// `y[:, 2:4]`), and a value on the way up is read after `at`.
    pub(super) fn writes_into_activation(&self, name: &str, at: usize) -> bool {
        if !matches!(self.values.get(name), Some(Bound::Activation(_))) {
            return false;
        }
        let mut current = name;
        let mut parted = false;
        let mut read_later = false;
        while let Some((producer, input)) = self.view_producer(current) {
            parted |= producer.target.ends_with("slice.Tensor")
                || producer.target.ends_with("select.int");
            read_later |= self.readers_of(input).iter().any(|&reader| reader > at);
            current = input;
        }
        parted && read_later && matches!(self.values.get(current), Some(Bound::Activation(_)))
    }

    /// Writes `values` (of `destination`'s sizes and batch layout: the result of in-place
    /// op `node`, or the values a copy copies) into `destination`, the activation itself
    /// or a view of one through full views, reshapes, step-1 slices and selects: the tensor is
    /// rebuilt as the parts the slices and selects leave out concatenated around the
    /// values along each such dimension (and reshaped back through reshapes), and every
    /// name on the way (the tensor, each view, the node's output) is bound to its new
    /// value. Refused: other views (strided slices, transposes, expands), and a write
    /// after which another view of the old tensor is still read (it would see the old
    /// values).
    pub(super) fn write_into_activation(
        &mut self,
        node: &Node,
        destination: &str,
        values: Activation,
    ) -> Result<(), OnnxError> {
        let written = self.tensor(destination)?;
        // Up from the destination: each name with the number of parts below it, and the
        // parts in order from the destination up.
        let mut names = vec![(destination.to_owned(), 0usize)];
        let mut parts: Vec<Part> = Vec::new();
        let mut current = written.clone();
        while let Some((producer, input)) = self.view_producer(&names[names.len() - 1].0) {
            let parent = self.tensor(input)?;
            if parent.value().name() != current.value().name() {
                let part = Part::of(producer, &parent).ok_or_else(|| {
                    error(format!(
                        "a write into part of `{input}` through `{}` is not exported; only through slices of step 1, selects and reshapes",
                        producer.target
                    ))
                })?;
                parts.push(part);
            }
            names.push((input.to_owned(), parts.len()));
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
                "`{name}` views the tensor this write changes and is read after it; only a write whose views are not read again is exported"
            )));
        }
        // Level k is the value with k parts below it; level 0 is the written values.
        let scope = Self::scope(node);
        let mut levels = vec![values];
        for (k, part) in parts.iter().enumerate() {
            let parent = names
                .iter()
                .find(|(_, level)| *level == k + 1)
                .map(|(name, _)| name.clone())
                .ok_or_else(|| error("a view with no tensor above it".into()))?;
            let parent = self.tensor(&parent)?;
            let (dim, range, selected) = match part {
                Part::Reshaped => {
                    let back = levels[k]
                        .clone()
                        .reshaped(&mut self.g, &scope, &parent.sizes())?;
                    levels.push(back);
                    continue;
                }
                Part::Range {
                    dim,
                    range,
                    selected,
                } => (*dim, range.clone(), *selected),
            };
            let size = parent.sizes()[dim].count;
            let mut inner = levels[k].clone();
            if selected {
                let mut sizes = inner.sizes();
                sizes.insert(dim, Size::fixed(1));
                inner = inner.reshaped(&mut self.g, &scope, &sizes)?;
            }
            let mut pieces = Vec::with_capacity(3);
            if range.start > 0 {
                pieces.push(parent.sliced(&mut self.g, &scope, "copy_", dim, 0..range.start)?);
            }
            pieces.push(inner);
            if range.end < size {
                pieces.push(parent.sliced(&mut self.g, &scope, "copy_", dim, range.end..size)?);
            }
            // A slice keeping the whole dimension (`out[:, …]`) changes nothing around it.
            let level = match <[Activation; 1]>::try_from(pieces) {
                Ok([whole]) => whole,
                Err(pieces) => Activation::concat(&mut self.g, &scope, &pieces, dim)?,
            };
            levels.push(level);
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

/// What a view takes of its tensor, for a write through it.
enum Part {
    /// Along one dimension, the range a step-1 slice keeps, or the one entry a select
    /// keeps (`selected`: without the dimension).
    Range {
        dim: usize,
        range: std::ops::Range<u64>,
        selected: bool,
    },
    /// Every element, in the same order, sized differently (a reshape).
    Reshaped,
}

impl Part {
    /// The part view op `node` takes of `parent`, when it is a step-1 slice, a select or a
    /// reshape.
    fn of(node: &Node, parent: &Activation) -> Option<Part> {
        let op = node
            .target
            .strip_prefix("torch.ops.aten.")
            .unwrap_or(&node.target);
        if is_reshape(op) {
            return Some(Part::Reshaped);
        }
        let args = Args(node);
        let rank = parent.rank() as i64;
        let dim = args.int("dim").ok()?;
        let dim = usize::try_from(if dim < 0 { dim + rank } else { dim }).ok()?;
        let size = parent.sizes().get(dim)?.count as i64;
        if node.target.ends_with("select.int") {
            let index = args.int("index").ok()?;
            let index = if index < 0 { index + size } else { index };
            let start = u64::try_from(index).ok().filter(|&i| (i as i64) < size)?;
            return Some(Part::Range {
                dim,
                range: start..start + 1,
                selected: true,
            });
        }
        if !node.target.ends_with("slice.Tensor") || args.int("step").ok()? != 1 {
            return None;
        }
        let start = args.optional_int("start").ok()?.unwrap_or(0);
        let end = args.optional_int("end").ok()?.unwrap_or(i64::MAX);
        if parent.sizes().get(dim)?.batch {
            // Along the batch only the whole of it (`out[:, …]`), which keeps every sample.
            return (start == 0 && end == i64::MAX).then_some(Part::Range {
                dim,
                range: 0..size as u64,
                selected: false,
            });
        }
        let clamp = |i: i64| (if i < 0 { i.saturating_add(size) } else { i }).clamp(0, size) as u64;
        let (start, end) = (clamp(start), clamp(end));
        (start < end).then_some(Part::Range {
            dim,
            range: start..end,
            selected: false,
        })
    }
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
