//! The factories (`arange`, `zeros`, `ones`, `full`, `scalar_tensor`), folded at export
//! time like every op on constants alone ([`super::super::fold`]): written as an
//! initializer where an op uses them (ATC gets no `Range`/`ConstantOfShape`). A factory
//! whose size involves the batch is refused: its values would have to follow it.

use crate::aten::eval::{element_count, Tensor, MAX_ELEMENTS};
use crate::aten::program::{Argument, Node, SymInt};
use crate::onnx::OnnxError;

use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use crate::aten::args::Args;

/// The export schema's dtype numbers a factory may make: int32, int64 and float32 (its
/// values are exact integers below [`MAX_ELEMENTS`]).
const FOLDABLE_DTYPES: [(i64, &str); 4] =
    [(4, "int32"), (5, "int64"), (7, "float32"), (12, "bool")];

fn check_dtype(args: &Args<'_>) -> Result<(), OnnxError> {
    match args.optional_dtype("dtype").or_shape()? {
        None => Ok(()),
        Some(t) if FOLDABLE_DTYPES.iter().any(|(n, _)| *n == t) => Ok(()),
        Some(t) => Err(arg_error(format!(
            "a constant of export dtype {t} is not folded; only {} are",
            FOLDABLE_DTYPES
                .iter()
                .map(|(_, name)| *name)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `arange`'s values, as torch computes them: `start + i·step` for `i` below
/// `⌈(end − start) / step⌉`.
pub(super) fn arange(start: f64, end: f64, step: f64) -> Result<Vec<f32>, String> {
    if step == 0.0 || !(start.is_finite() && end.is_finite() && step.is_finite()) {
        return Err(format!("arange({start}, {end}, {step})"));
    }
    let count = ((end - start) / step).ceil().max(0.0);
    if count > MAX_ELEMENTS as f64 {
        return Err(format!(
            "arange({start}, {end}, {step}) has more than {MAX_ELEMENTS} values"
        ));
    }
    Ok((0..count as u64)
        .map(|i| (start + i as f64 * step) as f32)
        .collect())
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

/// A float32 constant of sizes `dims`.
fn folded(dims: Vec<u64>, values: Vec<f32>) -> Result<Tensor, OnnxError> {
    Tensor::f32(dims, values).map_err(arg_error)
}

impl<'p> Lowering<'p, '_> {
    /// `arange.default` / `.start` / `.start_step`.
    pub(super) fn arange(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        check_dtype(args)?;
        if self.arange_of_batch(node, args)? {
            return Ok(());
        }
        let number = |name: &str, default: f64| {
            match args.get(name) {
            None => Ok(default),
            Some(Argument::SymInt(_)) => Err(arg_error(format!(
                "arange's `{name}` is the batch size; a constant cannot follow the batch (only `arange(B)` itself, as the batch's index in an indexing, is exported)"
            ))),
            Some(_) => args.number(name).or_shape(),
        }
        };
        let values = arange(
            number("start", 0.0)?,
            number("end", 0.0)?,
            number("step", 1.0)?,
        )
        .map_err(|e| arg_error(format!("{e} is not folded")))?;
        self.bind_folded(node, 0, folded(vec![values.len() as u64], values)?)
    }

    /// `zeros`, `ones`, `full` (`fill`: `None` reads `fill_value`).
    pub(super) fn fill(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        fill: Option<f32>,
    ) -> Result<(), OnnxError> {
        check_dtype(args)?;
        let value = match fill {
            Some(v) => {
                if args.get("fill_value").is_some() {
                    return Err(arg_error("unexpected argument fill_value".into()));
                }
                v
            }
            None => args.number("fill_value").or_shape()? as f32,
        };
        if let Some(dims) = self.one_sample_sizes(args) {
            // The same values for every sample (`zeros(n, h, w)`, an RNN's initial state).
            let count = dims.iter().product::<u64>() as usize;
            return self.bind_uniform(node, 0, folded(dims, vec![value; count])?);
        }
        let dims = sizes(args, "size")?;
        let count = dims.iter().product::<u64>() as usize;
        self.bind_folded(node, 0, folded(dims, vec![value; count])?)
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
                expr @ SymInt::Expr(_) if self.batch.is(expr) => {
                    batches += 1;
                    dims.push(1);
                }
                _ => return None,
            }
        }
        (batches == 1 && element_count(&dims).is_ok()).then_some(dims)
    }

    /// `scalar_tensor`: a 0-d constant.
    pub(super) fn scalar_tensor(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        check_dtype(args)?;
        let value = args.number("s").or_shape()? as f32;
        self.bind_folded(node, 0, folded(vec![], vec![value])?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arange_counts_as_torch() {
        assert_eq!(arange(0.0, 4.0, 1.0), Ok(vec![0.0, 1.0, 2.0, 3.0]));
        assert_eq!(arange(1.0, 2.0, 0.25), Ok(vec![1.0, 1.25, 1.5, 1.75]));
        assert_eq!(arange(3.0, 0.0, -1.5), Ok(vec![3.0, 1.5]));
        assert_eq!(arange(2.0, 1.0, 1.0), Ok(vec![]));
        assert!(arange(0.0, 1.0, 0.0).is_err());
        assert!(arange(0.0, 1e12, 1.0).unwrap_err().contains("more than"));
    }

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
