//! Tensors whose batch is not their first dimension: torch's decomposed multi-head
//! attention transposes its `(N, L, E)` input to `(L, N, E)`, folds the batch into the
//! heads (`(L, N·H, d)`) and into the tokens (`(L·N, E)`) and back. ONNX for ATC must keep
//! the batch first and never compute with it, so such a tensor is held lazily: an ONNX
//! value that keeps the batch first, plus how torch's axes are laid onto its axes.
//!
//! Invariants of a [`Laid`]: `axes[i]` lists the full-tensor ONNX axes (0 = the batch) that
//! make up torch axis `i`, major to minor; every ONNX axis of size other than 1 (and the
//! batch) appears in exactly one list; an ONNX axis of size 1 may appear in none (a
//! squeezed or selected axis). Permuting, unsqueezing and squeezing only change `axes`;
//! select, view and linear emit Slice/Reshape/MatMul on the value. The tensor becomes a
//! plain activation again ([`Laid::canonical`]) as soon as the batch alone is its first
//! axis, through at most one Transpose and one Reshape with constant shapes.

use crate::onnx::graph::{GraphBuilder, Value};
use crate::onnx::OnnxError;

/// One torch size in terms of the batch: `count`, times the batch when `batch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub count: u64,
    pub batch: bool,
}

impl Size {
    pub const ONE: Size = Size {
        count: 1,
        batch: false,
    };

    pub fn fixed(count: u64) -> Size {
        Size {
            count,
            batch: false,
        }
    }

    fn times(self, other: Size) -> Option<Size> {
        (!(self.batch && other.batch)).then_some(Size {
            count: self.count.checked_mul(other.count)?,
            batch: self.batch || other.batch,
        })
    }

    /// Whether `self` is a factor of `whole` (the batch only where `whole` has it).
    fn divides(self, whole: Size) -> bool {
        self.count != 0 && whole.count.is_multiple_of(self.count) && (whole.batch || !self.batch)
    }
}

/// A tensor whose torch axes are laid onto a batch-first ONNX value (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Laid {
    value: Value,
    axes: Vec<Vec<usize>>,
}

fn error(what: String) -> OnnxError {
    OnnxError::Shape { what }
}

impl Laid {
    /// A batch-first activation, axis for axis.
    pub fn of(value: Value) -> Laid {
        let axes = (0..=value.shape().len()).map(|a| vec![a]).collect();
        Laid { value, axes }
    }

    pub fn rank(&self) -> usize {
        self.axes.len()
    }

    fn onnx_size(&self, axis: usize) -> Size {
        match axis {
            0 => Size {
                count: 1,
                batch: true,
            },
            a => Size::fixed(self.value.shape()[a - 1]),
        }
    }

    /// Torch's sizes of this tensor.
    pub fn sizes(&self) -> Vec<Size> {
        self.axes
            .iter()
            .map(|group| {
                group.iter().fold(Size::ONE, |acc, &a| {
                    // Each ONNX axis appears once, so the batch is multiplied in at most once.
                    acc.times(self.onnx_size(a)).unwrap_or(acc)
                })
            })
            .collect()
    }

    /// A torch axis `dim` (negative from the end) of a rank-`rank` tensor, as an index.
    pub fn axis(dim: i64, rank: usize) -> Result<usize, OnnxError> {
        let r = rank as i64;
        let a = if dim < 0 { dim + r } else { dim };
        if (0..r).contains(&a) {
            Ok(a as usize)
        } else {
            Err(error(format!(
                "dimension {dim} is out of range for a rank-{rank} tensor"
            )))
        }
    }

    /// torch's `permute(order)`.
    pub fn permuted(self, order: &[usize]) -> Result<Laid, OnnxError> {
        let mut seen = order.to_vec();
        seen.sort_unstable();
        if seen != (0..self.rank()).collect::<Vec<_>>() {
            return Err(error(format!(
                "{order:?} is not a permutation of {} dimensions",
                self.rank()
            )));
        }
        let axes = order.iter().map(|&i| self.axes[i].clone()).collect();
        Ok(Laid { axes, ..self })
    }

    /// torch's `unsqueeze(at)`, `at` in `0..=rank`.
    pub fn unsqueezed(mut self, at: usize) -> Result<Laid, OnnxError> {
        if at > self.rank() {
            return Err(error(format!(
                "unsqueeze at {at} of a rank-{} tensor",
                self.rank()
            )));
        }
        self.axes.insert(at, Vec::new());
        Ok(self)
    }

    /// torch's `squeeze(at)`: a size-1 axis is dropped, any other kept.
    pub fn squeezed(mut self, at: usize) -> Laid {
        if self.sizes().get(at) == Some(&Size::ONE) {
            self.axes.remove(at);
        }
        self
    }

    /// torch's `select(at, index)`: a Slice of the one ONNX axis behind torch axis `at`,
    /// which must not hold the batch; that axis is then left out.
    pub fn selected(
        mut self,
        g: &mut GraphBuilder,
        scope: &str,
        at: usize,
        index: i64,
    ) -> Result<Laid, OnnxError> {
        let &[onnx] = self.axes[at].as_slice() else {
            return Err(error(format!(
                "select on dimension {at}, which is {} here; only a dimension that is one axis of the ONNX tensor is exported",
                if self.axes[at].contains(&0) { "or holds the batch" } else { "several or no axes" }
            )));
        };
        if onnx == 0 {
            return Err(error(format!(
                "select on dimension {at}, the batch; only ops that treat each sample alike are exported"
            )));
        }
        let size = self.value.shape()[onnx - 1] as i64;
        let i = if index < 0 { index + size } else { index };
        if !(0..size).contains(&i) {
            return Err(error(format!(
                "index {index} is out of range for size {size}"
            )));
        }
        self.value = g.slice(scope, &self.value, onnx - 1, i as u64..i as u64 + 1)?;
        self.axes.remove(at);
        Ok(self)
    }

    /// torch's `view`/`reshape` to `target`: the elements keep their order, so the ONNX
    /// axes, read in torch order, are regrouped; an ONNX axis that a target size cuts is
    /// split first (a Reshape). The batch axis is never split.
    pub fn viewed(
        mut self,
        g: &mut GraphBuilder,
        scope: &str,
        target: &[Size],
    ) -> Result<Laid, OnnxError> {
        let fail = |laid: &Laid| {
            error(format!(
                "a view of {} to {} that does not keep the batch whole",
                show(&laid.sizes()),
                show(target)
            ))
        };
        let mut seq: Vec<usize> = self
            .axes
            .concat()
            .into_iter()
            .filter(|&a| self.onnx_size(a) != Size::ONE)
            .collect();
        let mut groups: Vec<Vec<usize>> = Vec::with_capacity(target.len());
        let mut next = 0;
        for &want in target {
            let mut group = Vec::new();
            let mut have = Size::ONE;
            while have != want {
                let Some(&a) = seq.get(next) else {
                    return Err(fail(&self));
                };
                let size = self.onnx_size(a);
                match have.times(size).filter(|s| s.divides(want)) {
                    Some(grown) => {
                        group.push(a);
                        have = grown;
                        next += 1;
                    }
                    None => {
                        let lead = want.count / have.count.max(1);
                        let cuts = !size.batch
                            && have.batch == want.batch
                            && have.divides(want)
                            && lead > 1
                            && size.count.is_multiple_of(lead);
                        if !cuts {
                            return Err(fail(&self));
                        }
                        self.split_axis(g, scope, a, lead)?;
                        let shift = |x: &mut usize| {
                            if *x > a {
                                *x += 1
                            }
                        };
                        seq.iter_mut().for_each(shift);
                        groups.iter_mut().flatten().for_each(shift);
                        group.iter_mut().for_each(shift);
                        seq.insert(next + 1, a + 1);
                    }
                }
            }
            groups.push(group);
        }
        if next != seq.len() {
            return Err(fail(&self));
        }
        self.axes = groups;
        Ok(self)
    }

    /// Splits ONNX axis `axis` (not the batch) into `(lead, size / lead)`.
    fn split_axis(
        &mut self,
        g: &mut GraphBuilder,
        scope: &str,
        axis: usize,
        lead: u64,
    ) -> Result<(), OnnxError> {
        let mut shape = self.value.shape().to_vec();
        let size = shape[axis - 1];
        shape.splice(axis - 1..axis, [lead, size / lead]);
        self.value = g.reshape(scope, &self.value, &shape)?;
        for a in self.axes.iter_mut().flatten() {
            if *a > axis {
                *a += 1;
            }
        }
        Ok(())
    }

    /// The value with torch's last axis as its last ONNX axis (a Transpose and Reshape
    /// when it is spread over several), for ops on the last axis (linear). The batch must
    /// not be in the last axis.
    pub fn last_axis_last(mut self, g: &mut GraphBuilder, scope: &str) -> Result<Laid, OnnxError> {
        let Some(last) = self.axes.last().cloned() else {
            return Err(error("a scalar has no last axis".into()));
        };
        let onnx_rank = self.value.shape().len() + 1;
        if last.contains(&0) {
            return Err(error(
                "its last dimension holds the batch; only ops that treat each sample alike are exported".into(),
            ));
        }
        if last.len() == 1 && last[0] == onnx_rank - 1 {
            return Ok(self);
        }
        let rest: Vec<usize> = (1..onnx_rank).filter(|a| !last.contains(a)).collect();
        let perm: Vec<usize> = rest.iter().chain(&last).map(|a| a - 1).collect();
        let moved = g.transpose(scope, &self.value, &perm)?;
        let mut shape: Vec<u64> = rest.iter().map(|&a| self.value.shape()[a - 1]).collect();
        shape.push(last.iter().map(|&a| self.value.shape()[a - 1]).product());
        self.value = g.reshape(scope, &moved, &shape)?;
        // Old ONNX axis `rest[i]` is now axis i + 1; the last group is the new last axis.
        let renumber = |a: usize| rest.iter().position(|&r| r == a).map_or(a, |i| i + 1);
        let count = self.axes.len();
        for (i, group) in self.axes.iter_mut().enumerate() {
            *group = if i + 1 == count {
                vec![rest.len() + 1]
            } else {
                group.iter().map(|&a| renumber(a)).collect()
            };
        }
        Ok(self)
    }

    /// The ONNX value behind this tensor (for ops that keep the layout, like a MatMul over
    /// the last axis after [`Laid::last_axis_last`]).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The same layout over `value`, whose last axis replaces the current last one.
    pub fn with_last(self, value: Value) -> Result<Laid, OnnxError> {
        let same_lead = value.shape().len() == self.value.shape().len()
            && value.shape().split_last().map(|(_, r)| r)
                == self.value.shape().split_last().map(|(_, r)| r);
        if !same_lead {
            return Err(error(format!(
                "{:?} does not replace the last axis of {:?}",
                value.shape(),
                self.value.shape()
            )));
        }
        Ok(Laid { value, ..self })
    }

    /// The batch-first activation this tensor is, when the batch alone is its first axis.
    pub fn canonical(&self, g: &mut GraphBuilder, scope: &str) -> Result<Option<Value>, OnnxError> {
        if self.axes.first().map(Vec::as_slice) != Some(&[0]) {
            return Ok(None);
        }
        let onnx_rank = self.value.shape().len() + 1;
        let used: Vec<usize> = self.axes[1..].concat();
        let unused = (1..onnx_rank).filter(|a| !used.contains(a));
        let perm: Vec<usize> = used.iter().copied().chain(unused).map(|a| a - 1).collect();
        let mut value = self.value.clone();
        if perm.iter().enumerate().any(|(i, &p)| i != p) {
            value = g.transpose(scope, &value, &perm)?;
        }
        let shape: Vec<u64> = self.sizes()[1..].iter().map(|s| s.count).collect();
        if value.shape() != shape {
            value = g.reshape(scope, &value, &shape)?;
        }
        Ok(Some(value))
    }
}

/// Sizes with the batch as `N`: `[10, 4·N, 16]`.
pub fn show(sizes: &[Size]) -> String {
    let items: Vec<String> = sizes
        .iter()
        .map(|s| match (s.count, s.batch) {
            (1, true) => "N".to_owned(),
            (c, true) => format!("{c}·N"),
            (c, false) => c.to_string(),
        })
        .collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::{Batch, Opset};

    fn n(count: u64) -> Size {
        Size { count, batch: true }
    }

    fn f(count: u64) -> Size {
        Size::fixed(count)
    }

    /// torch's multi-head attention on `(N, 10, 64)` with 4 heads, as torch.export writes
    /// it: the batch moves, folds into the heads and into the tokens, and comes back.
    #[test]
    fn decomposed_attention_layouts() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![10, 64]).unwrap();
        let t = Laid::of(x).permuted(&[1, 0, 2]).unwrap();
        assert_eq!(t.sizes(), [f(10), n(1), f(64)]);
        assert!(t.canonical(&mut g, "s").unwrap().is_none());
        let u = t.viewed(&mut g, "s", &[f(10), n(1), f(4), f(16)]).unwrap();
        let u = u.unsqueezed(0).unwrap().permuted(&[3, 1, 2, 0, 4]).unwrap();
        assert_eq!(u.sizes(), [f(4), f(10), n(1), f(1), f(16)]);
        let u = u.squeezed(3);
        let q = u.selected(&mut g, "s", 0, 1).unwrap();
        assert_eq!(q.sizes(), [f(10), n(1), f(16)]);
        let heads = q.viewed(&mut g, "s", &[f(10), n(2), f(8)]).unwrap();
        let heads = heads.permuted(&[1, 0, 2]).unwrap();
        let heads = heads
            .viewed(&mut g, "s", &[n(1), f(2), f(10), f(8)])
            .unwrap();
        let v = heads.canonical(&mut g, "s").unwrap().unwrap();
        assert_eq!(v.shape(), [2, 10, 8]);

        // (N, H, L, d) → (L, N, H, d) → (L·N, E) → linear → (L, N, E) → (N, L, E).
        let a = g.input("a", vec![2, 10, 8]).unwrap();
        let p = Laid::of(a).permuted(&[2, 0, 1, 3]).unwrap();
        let r = p.viewed(&mut g, "s", &[n(10), f(16)]).unwrap();
        let r = r.last_axis_last(&mut g, "s").unwrap();
        assert_eq!(r.value().shape(), [10, 16]);
        let back = r.viewed(&mut g, "s", &[f(10), n(1), f(16)]).unwrap();
        let back = back.permuted(&[1, 0, 2]).unwrap();
        assert_eq!(
            back.canonical(&mut g, "s").unwrap().unwrap().shape(),
            [10, 16]
        );
    }

    #[test]
    fn the_batch_is_never_split_or_selected() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![6]).unwrap();
        let err = Laid::of(x.clone())
            .viewed(&mut g, "s", &[f(2), n(3)])
            .unwrap_err();
        assert!(err.to_string().contains("batch whole"), "{err}");
        assert!(Laid::of(x).selected(&mut g, "s", 0, 0).is_err());
    }
}
