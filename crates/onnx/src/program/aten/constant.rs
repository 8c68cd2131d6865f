//! The factories sized by the batch (`arange(B)`, `zeros(B, …)`, `full(…)`, the `new_*`
//! ones): factories of numbers alone are folded at export time by the evaluator like
//! every op on constants alone ([`super::super::fold`]). A factory whose values are the
//! same for every sample is bound as such, at the element type torch recorded; any other
//! whose size involves the batch is refused: its values would have to follow it.

use crate::elem::ElemType;
use crate::OnnxError;
use ckpt_aten::eval::{element_count, Tensor};
use ckpt_aten::program::{Argument, Node, SymInt};

use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// A factory's `dtype`, when given, must be an element type the export handles
/// ([`ElemType::from_export`]); any other is refused with the opset-11 or ATC reason.
fn check_dtype(args: &Args<'_>) -> Result<(), OnnxError> {
    match args.optional_dtype("dtype").or_shape()? {
        Some(t) if ElemType::from_export(t).is_none() => Err(arg_error(format!(
            "a constant of {}: {}; only float32, int64, int32 and bool tensors are exported",
            crate::elem::export_name(t),
            crate::elem::not_exported_because(t)
        ))),
        _ => Ok(()),
    }
}

/// A factory's size list: fixed sizes only (a size that is the batch is refused).
fn sizes(args: &Args<'_>, name: &str) -> Result<Vec<u64>, OnnxError> {
    let sizes = match args.get(name) {
        Some(Argument::Ints(v)) => v.clone(),
        Some(Argument::SymInts(_)) => {
            return Err(arg_error(format!(
                "its size list `{name}` involves the batch; a constant cannot follow the batch, so give it the per-sample sizes only (`torch.zeros(3, 4, 4)` broadcasts over the batch)"
            )))
        }
        Some(other) => {
            return Err(arg_error(format!(
                "argument `{name}` is {}, expected fixed sizes",
                other.kind()
            )))
        }
        None => return Err(arg_error(format!("argument `{name}` is missing"))),
    };
    let dims = sizes
        .iter()
        .map(|&d| u64::try_from(d).map_err(|_| arg_error(format!("size list {sizes:?}"))))
        .collect::<Result<Vec<u64>, _>>()?;
    element_count(&dims).map_err(arg_error)?;
    Ok(dims)
}

impl<'p> Lowering<'p, '_> {
    /// `arange.default` / `.start` / `.start_step` sized by the batch: `arange(B)` as each
    /// sample's index. An `arange` of numbers alone is folded by the evaluator, exactly.
    pub(super) fn arange(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        check_dtype(args)?;
        if self.arange_of_batch(node, args)? {
            return Ok(());
        }
        let name = ["start", "end", "step"]
            .into_iter()
            .find(|name| matches!(args.get(name), Some(Argument::SymInt(_))))
            .unwrap_or("end");
        Err(arg_error(format!(
            "arange's `{name}` is the batch size; a constant cannot follow the batch (only `arange(B)` itself, as the batch's index in an indexing, is exported)"
        )))
    }

    /// `zeros`, `ones`, `full` (`fill`: `None` reads `fill_value`).
    pub(super) fn fill(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        fill: Option<f64>,
    ) -> Result<(), OnnxError> {
        check_dtype(args)?;
        let value = match fill {
            Some(v) => {
                if args.get("fill_value").is_some() {
                    return Err(arg_error("unexpected argument fill_value".into()));
                }
                v
            }
            None => args.number("fill_value").or_shape()?,
        };
        if let Some(dims) = self.one_sample_sizes(args) {
            // The same values for every sample (`zeros(n, h, w)`, an RNN's initial state).
            let tensor = self.filled(node, dims, value)?;
            return self.bind_uniform(node, 0, tensor);
        }
        let dims = sizes(args, "size")?;
        let tensor = self.filled(node, dims, value)?;
        self.bind_folded(node, 0, tensor)
    }

    /// A constant of sizes `dims` holding `value`, at the element type torch recorded for
    /// `node`'s result: an integer exactly (`full(…, 16777217)` stays itself, beyond
    /// float32's 2^24), else float32.
    pub(super) fn filled(
        &self,
        node: &Node,
        dims: Vec<u64>,
        value: f64,
    ) -> Result<Tensor, OnnxError> {
        let count = element_count(&dims).map_err(arg_error)? as usize;
        let tensor = match self.recorded_elem(self.output_name(node, 0)?)? {
            ElemType::Float32 => Tensor::f32(dims, vec![value as f32; count]),
            _ if value.fract() == 0.0 && value.abs() < 9.0e15 => {
                Tensor::i64(dims, vec![value as i64; count])
            }
            elem => return Err(arg_error(format!("a {elem} constant full of {value}"))),
        };
        tensor.map_err(arg_error)
    }

    /// A factory's sizes for one sample when its size list is fixed sizes and the batch
    /// (or a multiple of it) once, the batch counted as 1; any other symbolic size is left
    /// for [`sizes`] to refuse.
    fn one_sample_sizes(&self, args: &Args<'_>) -> Option<Vec<u64>> {
        let Some(Argument::SymInts(sizes)) = args.get("size") else {
            return None;
        };
        let mut batches = 0;
        let mut dims = Vec::with_capacity(sizes.len());
        for size in sizes {
            match size {
                SymInt::Int(n) if *n >= 0 => dims.push(*n as u64),
                // The batch, or a multiple of it (`zeros(layers, N·H, hidden)` in a
                // recurrent layer run over rows): the values are the same for every row.
                SymInt::Name(name) if self.batch_times(name).is_some() => {
                    batches += 1;
                    dims.push(1);
                }
                // In a trace's form, `Mul(Integer(48), batch)`.
                expr @ SymInt::Expr(_) if self.batch.factor(expr).is_some() => {
                    batches += 1;
                    dims.push(1);
                }
                _ => return None,
            }
        }
        (batches == 1 && element_count(&dims).is_ok()).then_some(dims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factory_sizes_are_fixed() {
        let node = |size: &str| -> Node {
            serde_json::from_str(&format!(
                r#"{{"target": "t", "outputs": [], "inputs": [{{"name": "size", "arg": {size}}}]}}"#
            ))
            .unwrap()
        };
        let fixed = node(r#"{"as_ints": [2, 3]}"#);
        assert_eq!(sizes(&Args(&fixed), "size").unwrap(), [2, 3]);
        let batch = node(r#"{"as_sym_ints": [{"as_name": "s"}, {"as_int": 3}]}"#);
        let err = sizes(&Args(&batch), "size").unwrap_err().to_string();
        assert!(err.contains("involves the batch"), "{err}");
        let huge = node(r#"{"as_ints": [65536, 65536]}"#);
        assert!(sizes(&Args(&huge), "size").is_err());
        let negative = node(r#"{"as_ints": [-1]}"#);
        assert!(sizes(&Args(&negative), "size").is_err());
    }
}
