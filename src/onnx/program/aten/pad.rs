//! Padding: `constant_pad_nd` (`F.pad` constant), `reflection_pad2d` and
//! `replication_pad2d` as ONNX `Pad` (modes constant, reflect, edge). torch lists pads from
//! the last axis backwards (`[left, right, top, bottom]`); padding the batch is refused.

use crate::aten::program::{Argument, Node};
use crate::onnx::graph::{Attr, Value};
use crate::onnx::OnnxError;

use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use crate::aten::args::Args;

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
            Some(other) => {
                return Err(arg_error(format!(
                    "pad with mode {other:?} is not exported (constant, reflect and replicate are)"
                )))
            }
        };
        self.pad(node, args, scope, mode)
    }

    /// `constant_pad_nd` / `pad` (`mode` constant, reading `pad` and `value`) or the 2-D
    /// reflection/replication pads (`mode` reflect or edge, reading `padding`, or `pad`
    /// for `pad`).
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
        // A pad of width zero everywhere (MONAI's 3-D replicate pad to a size the input
        // has already) leaves the tensor as it is, in every mode.
        if pad.iter().all(|&p| p == 0) {
            return self.bind(node, 0, x);
        }
        if mode != "constant" && (pad.len() != 4 || x.shape().len() != 3) {
            return Err(arg_error(format!(
                "a 2-D {mode} pad of {pad:?} on per-sample {:?}",
                x.shape()
            )));
        }
        // Negative entries crop (`F.pad(x, (-1, 1, -1, 1))`): Slices first, then the Pad.
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
        let grown: Vec<i64> = pad.iter().map(|&p| p.max(0)).collect();
        if grown.iter().all(|&p| p == 0) {
            return self.bind(node, 0, x);
        }
        let (pads, out) = onnx_pads(x.shape(), &grown).map_err(arg_error)?;
        let y = self.emit_pad(scope, &x, pads, out, mode, value);
        self.bind(node, 0, y)
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
}
