//! Padding: `constant_pad_nd` and `F.pad` in every mode, `reflection_pad2d` and
//! `replication_pad2d`, over any per-sample axes: constant and reflect as ONNX `Pad` after
//! Slices for the negative amounts, replicate as the Slice of the entries torch reads and an
//! `edge` Pad, circular as Concats of Slices. torch lists pads from the last axis backwards
//! (`[left, right, top, bottom]`); padding the batch is refused.

use crate::graph::{Attr, Value};
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node};

use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// ONNX `pads` (`[begin of every axis…, end of every axis…]`, the batch included) and the
/// per-sample output shape for torch's pad list `pad` on per-sample `shape`.
pub(super) fn onnx_pads(shape: &[u64], pad: &[i64]) -> Result<(Vec<i64>, Vec<u64>), String> {
    if !pad.len().is_multiple_of(2) || pad.len() / 2 > shape.len() {
        return Err(format!(
            "pad list {pad:?} for per-sample {shape:?}: it must be pairs for at most the per-sample axes (the batch is not padded)"
        ));
    }
    if pad.iter().any(|&p| p < 0) {
        return Err(format!(
            "pad list {pad:?} crops (negative entries are cropped before padding)"
        ));
    }
    let rank = shape.len();
    let mut begin = vec![0i64; rank + 1];
    let mut end = vec![0i64; rank + 1];
    for (k, pair) in pad.chunks(2).enumerate() {
        // Pair k pads per-sample axis rank − 1 − k, full axis rank − k.
        begin[rank - k] = pair[0];
        end[rank - k] = pair[1];
    }
    let out = shape
        .iter()
        .enumerate()
        .map(|(i, &d)| d + (begin[i + 1] + end[i + 1]) as u64)
        .collect();
    begin.extend(end);
    Ok((begin, out))
}

/// torch's pad list `pad` for a tensor of `per_sample_rank` axes after the batch, without
/// its last pair when that pair reaches the batch and pads it by nothing (MobileBERT's
/// `F.pad(x, [0, 0, 0, 1, 0, 0])` on a `[batch, seq, dim]` tensor): such a pad treats each
/// sample alike. A pair that does pad the batch stays, and is refused.
fn without_batch_pair(mut pad: Vec<i64>, per_sample_rank: usize) -> Vec<i64> {
    if pad.len() == 2 * (per_sample_rank + 1) && pad[pad.len() - 2..] == [0, 0] {
        pad.truncate(2 * per_sample_rank);
    }
    pad
}

/// What a replicate pad of an axis of `n` by `before` and `after` (negative: cropped)
/// reads and repeats: output `j` is input `clamp(j − before, 0, n − 1)` (torch's
/// `replication_pad*d`), so the inputs read are one run, whose first entry is repeated
/// `first` more times before it and whose last `last` more times after it.
#[derive(Debug, PartialEq, Eq)]
struct Replicated {
    read: std::ops::Range<u64>,
    first: u64,
    last: u64,
}

/// The run of an axis of `n` that a replicate pad by `before`/`after` reads; `None` when
/// the output is empty.
fn replicated(n: u64, before: i64, after: i64) -> Option<Replicated> {
    let out = u64::try_from(n as i64 + before + after)
        .ok()
        .filter(|&o| o > 0)?;
    let at = |j: u64| (j as i64 - before).clamp(0, n as i64 - 1) as u64;
    let (lo, hi) = (at(0), at(out - 1));
    let repeats = |v: u64| (0..out).filter(|&j| at(j) == v).count() as u64;
    Some(if lo == hi {
        Replicated {
            read: lo..lo + 1,
            first: 0,
            last: out - 1,
        }
    } else {
        Replicated {
            read: lo..hi + 1,
            first: repeats(lo) - 1,
            last: repeats(hi) - 1,
        }
    })
}

/// torch's reflect pad reads no entry twice: each amount must be below its axis' size.
fn reflect_fits(shape: &[u64], pad: &[i64]) -> Result<(), String> {
    for (k, pair) in pad.chunks(2).enumerate() {
        let n = shape[shape.len() - 1 - k] as i64;
        if pair[0] >= n || pair[1] >= n {
            return Err(format!(
                "a reflect pad of {pad:?} needs amounts below the size {n} of the axis it pads"
            ));
        }
    }
    Ok(())
}

impl<'p> Lowering<'p, '_> {
    /// `pad` (`F.pad`): its `mode` read, then as [`Lowering::pad`].
    pub(super) fn pad_by_mode(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let mode = match args.get("mode") {
            None => "constant",
            Some(Argument::String(m)) if m == "constant" => "constant",
            Some(Argument::String(m)) if m == "reflect" => "reflect",
            Some(Argument::String(m)) if m == "replicate" => "edge",
            Some(Argument::String(m)) if m == "circular" => "circular",
            Some(other) => {
                return Err(arg_error(format!(
                    "pad with mode {other:?} is not exported (constant, reflect, replicate and circular are)"
                )))
            }
        };
        self.pad(node, args, scope, mode)
    }

    /// `constant_pad_nd` / `pad` (`mode` constant, reading `pad` and `value`), the other
    /// modes of `pad` (reflect, edge, circular, reading `pad`) or the reflection/replication
    /// pads (reading `padding`).
    pub(super) fn pad(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        mode: &'static str,
    ) -> Result<(), OnnxError> {
        let (list, value) = if mode == "constant" {
            let value = match args.get("value") {
                None | Some(Argument::None) => 0.0,
                Some(_) => args.number("value").or_shape()? as f32,
            };
            ("pad", value)
        } else if args.get("pad").is_some() {
            if !matches!(args.get("value"), None | Some(Argument::None)) {
                return Err(arg_error(format!("a {mode} pad with a value")));
            }
            ("pad", 0.0)
        } else {
            ("padding", 0.0)
        };
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let pad = match args.get(list) {
            Some(Argument::Ints(pad)) => pad.clone(),
            Some(other) => {
                return Err(arg_error(format!(
                    "argument `{list}` is {}, expected a list of ints",
                    other.kind()
                )))
            }
            None => return Err(arg_error(format!("argument `{list}` is missing"))),
        };
        let pad = without_batch_pair(pad, x.shape().len());
        // A pad of width zero everywhere (MONAI's 3-D replicate pad to a size the input
        // has already) leaves the tensor as it is, in every mode.
        if pad.iter().all(|&p| p == 0) {
            return self.bind(node, 0, x);
        }
        if !pad.len().is_multiple_of(2) || pad.len() / 2 > x.shape().len() {
            return Err(arg_error(format!(
                "pad list {pad:?} for per-sample {:?}: it must be pairs for at most the per-sample axes (the batch is not padded)",
                x.shape()
            )));
        }
        let y = match mode {
            "edge" => self.replicate_pad(scope, x, &pad)?,
            "circular" => self.circular_pad(scope, x, &pad)?,
            _ => {
                let x = self.crop(scope, x, &pad)?;
                let grown: Vec<i64> = pad.iter().map(|&p| p.max(0)).collect();
                if grown.iter().all(|&p| p == 0) {
                    return self.bind(node, 0, x);
                }
                if mode == "reflect" {
                    reflect_fits(x.shape(), &grown).map_err(arg_error)?;
                }
                let (pads, out) = onnx_pads(x.shape(), &grown).map_err(arg_error)?;
                self.emit_pad(scope, &x, pads, out, mode, value)
            }
        };
        self.bind(node, 0, y)
    }

    /// The negative entries of torch's pad list `pad` applied: each crops its side of its
    /// axis (`F.pad(x, (-1, 1))` drops the first column), by Slices.
    fn crop(&mut self, scope: &str, x: Value, pad: &[i64]) -> Result<Value, OnnxError> {
        let mut x = x;
        for (k, pair) in pad.chunks(2).enumerate() {
            let Some(axis) = x.shape().len().checked_sub(k + 1) else {
                break;
            };
            let size = x.shape()[axis];
            let (cut_begin, cut_end) =
                (pair[0].min(0).unsigned_abs(), pair[1].min(0).unsigned_abs());
            if cut_begin + cut_end > 0 {
                let end = size
                    .checked_sub(cut_end)
                    .filter(|&e| e > cut_begin)
                    .ok_or_else(|| {
                        arg_error(format!("pad list {pad:?} crops all of an axis of {size}"))
                    })?;
                x = self.g.slice(scope, &x, axis, cut_begin..end)?;
            }
        }
        Ok(x)
    }

    /// A replicate pad as torch computes it (`replication_pad*d`: output `j` of an axis
    /// padded by `before` reads input `clamp(j − before, 0, n − 1)`, negative amounts
    /// included): per axis the Slice of the inputs read, then an `edge` Pad repeating its
    /// first and last entries.
    fn replicate_pad(&mut self, scope: &str, x: Value, pad: &[i64]) -> Result<Value, OnnxError> {
        let rank = x.shape().len();
        let mut pads = vec![0i64; 2 * (rank + 1)];
        let mut y = x;
        for (k, pair) in pad.chunks(2).enumerate() {
            let axis = rank - 1 - k;
            let n = y.shape()[axis];
            let Some(span) = replicated(n, pair[0], pair[1]) else {
                return Err(arg_error(format!(
                    "pad list {pad:?} leaves no entry of an axis of {n}"
                )));
            };
            if span.read.start > 0 || span.read.end < n {
                y = self.g.slice(scope, &y, axis, span.read.clone())?;
            }
            pads[axis + 1] = span.first as i64;
            pads[rank + 1 + axis + 1] = span.last as i64;
        }
        if pads.iter().all(|&p| p == 0) {
            return Ok(y);
        }
        let out: Vec<u64> = y
            .shape()
            .iter()
            .enumerate()
            .map(|(i, &d)| d + (pads[i + 1] + pads[rank + 2 + i]) as u64)
            .collect();
        Ok(self.emit_pad(scope, &y, pads, out, "edge", 0.0))
    }

    /// A circular pad as torch's `_pad_circular` computes it: the negative amounts crop
    /// first, then each axis (the last first) gets the end of the cropped axis before it
    /// and its start after it: a Concat of Slices.
    fn circular_pad(&mut self, scope: &str, x: Value, pad: &[i64]) -> Result<Value, OnnxError> {
        let mut y = self.crop(scope, x, pad)?;
        let rank = y.shape().len();
        for (k, pair) in pad.chunks(2).enumerate() {
            let axis = rank - 1 - k;
            let n = y.shape()[axis];
            let (before, after) = (pair[0].max(0) as u64, pair[1].max(0) as u64);
            if before > n || after > n {
                return Err(arg_error(format!(
                    "a circular pad of {pad:?} wraps more than the {n} entries of an axis"
                )));
            }
            let mut parts = Vec::with_capacity(3);
            if before > 0 {
                parts.push(self.g.slice(scope, &y, axis, n - before..n)?);
            }
            parts.push(y.clone());
            if after > 0 {
                parts.push(self.g.slice(scope, &y, axis, 0..after)?);
            }
            if parts.len() > 1 {
                let refs: Vec<&Value> = parts.iter().collect();
                y = self.g.concat(scope, &refs, axis)?;
            }
        }
        Ok(y)
    }

    /// `Pad`: pads and value as inputs from opset 11, attributes before.
    pub(super) fn emit_pad(
        &mut self,
        scope: &str,
        x: &Value,
        pads: Vec<i64>,
        out: Vec<u64>,
        mode: &'static str,
        value: f32,
    ) -> Value {
        let mut inputs = vec![x.name().to_owned()];
        let mut attrs = vec![("mode", Attr::Str(mode))];
        if self.g.opset().version() >= 11 {
            let pads = self.g.constant_i64(&format!("{scope}.pads"), &pads);
            inputs.push(pads.name().to_owned());
            if mode == "constant" {
                let v = self.g.constant_scalar(&format!("{scope}.pad_value"), value);
                inputs.push(v.name().to_owned());
            }
        } else {
            attrs.push(("pads", Attr::Ints(pads)));
            if mode == "constant" {
                attrs.push(("value", Attr::Float(value)));
            }
        }
        let mut outputs = self.g.node("Pad", scope, inputs, attrs, vec![out]);
        outputs.swap_remove(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_padding_the_batch_by_nothing_is_dropped() {
        // MobileBERT: F.pad(x, [0, 0, 0, 1, 0, 0]) on [batch, 15, 16].
        assert_eq!(without_batch_pair(vec![0, 0, 0, 1, 0, 0], 2), [0, 0, 0, 1]);
        // A pair that pads the batch stays (and is refused), as do shorter lists.
        assert_eq!(
            without_batch_pair(vec![0, 0, 0, 1, 1, 0], 2),
            [0, 0, 0, 1, 1, 0]
        );
        assert_eq!(without_batch_pair(vec![0, 0, 0, 0], 2), [0, 0, 0, 0]);
    }

    #[test]
    fn torch_pad_lists_become_onnx_pads() {
        // F.pad(x, (1, 2, 3, 4)) on [C, H, W]: W gets 1 + 2, H gets 3 + 4.
        let (pads, out) = onnx_pads(&[2, 5, 6], &[1, 2, 3, 4]).unwrap();
        assert_eq!(pads, [0, 0, 3, 1, 0, 0, 4, 2]);
        assert_eq!(out, [2, 12, 9]);
        assert!(onnx_pads(&[2], &[1, 1, 1, 1])
            .unwrap_err()
            .contains("batch"));
        assert!(onnx_pads(&[2, 3], &[1]).is_err());
        assert!(onnx_pads(&[2, 3], &[-1, 0]).unwrap_err().contains("crops"));
    }

    #[test]
    fn replicate_pads_read_what_torch_clamps_to() {
        let run = |read, first, last| Replicated { read, first, last };
        // (1, 2) on 4: x0 x0 x1 x2 x3 x3 x3.
        assert_eq!(replicated(4, 1, 2), Some(run(0..4, 1, 2)));
        // (−1, 2): x1 x2 x3 x3 x3.
        assert_eq!(replicated(4, -1, 2), Some(run(1..4, 0, 2)));
        // (−4, 5) crops all four, then repeats the last: x3 ×5, as torch does.
        assert_eq!(replicated(4, -4, 5), Some(run(3..4, 0, 4)));
        // (2, −4) on 4: x0 x0.
        assert_eq!(replicated(4, 2, -4), Some(run(0..1, 0, 1)));
        assert_eq!(replicated(4, -2, -2), None);
    }

    #[test]
    fn reflect_pads_stay_below_the_axis_size() {
        assert!(reflect_fits(&[3, 3], &[2, 2, 2, 2]).is_ok());
        assert!(reflect_fits(&[3, 3], &[0, 3])
            .unwrap_err()
            .contains("below"));
    }
}
