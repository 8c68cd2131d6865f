//! Tensors computed from constants alone, folded at export time: the factories
//! (`arange`, `zeros`, `ones`, `full`, `scalar_tensor`), `lift_fresh_copy` of a lifted
//! constant, and element-wise arithmetic whose operands are all constants. A folded tensor
//! is written as an initializer where an op uses it (ATC gets no `Range`/`ConstantOfShape`).
//! A factory whose size involves the batch is refused: its values would have to follow it.

use crate::onnx::OnnxError;
use crate::torch::pt2::schema::{Argument, Node, SymInt};

use super::super::args::Args;
use super::super::lower::Lowering;
use super::{arg_error, reject_extra, OrShape};

/// The most elements a folded constant may have (2^24: every integer below it is exact in
/// float32, and a hostile program cannot make the export allocate without bound).
pub const MAX_FOLDED: u64 = 1 << 24;

/// The export schema's dtype numbers the folded values represent exactly enough: int32,
/// int64 and float32 (values are held as float32; integers up to [`MAX_FOLDED`] are exact).
const FOLDABLE_DTYPES: [(i64, &str); 3] = [(4, "int32"), (5, "int64"), (7, "float32")];

/// The arguments a factory takes besides its values, none of which changes them.
const PLACEMENT: [&str; 4] = ["dtype", "layout", "device", "pin_memory"];

/// A folded tensor: sizes and row-major values.
pub(super) type Folded = (Vec<u64>, Vec<f32>);

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
    if count > MAX_FOLDED as f64 {
        return Err(format!(
            "arange({start}, {end}, {step}) has more than {MAX_FOLDED} values"
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
    match dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) {
        Some(n) if n <= MAX_FOLDED => Ok(dims),
        _ => Err(arg_error(format!(
            "a constant of sizes {dims:?} has more than {MAX_FOLDED} elements"
        ))),
    }
}

/// numpy broadcasting of two constants' sizes, right-aligned.
fn broadcast(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let rank = a.len().max(b.len());
    let at = |s: &[u64], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |j| s[j]);
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

/// The row-major index into a tensor of `dims` (right-aligned into `out`) of output
/// element `flat`, with size-1 axes broadcast.
fn source_index(flat: u64, out: &[u64], dims: &[u64]) -> usize {
    let offset = out.len() - dims.len();
    let (mut rest, mut index, mut stride) = (flat, 0u64, 1u64);
    for (axis, &size) in out.iter().enumerate().rev() {
        let coordinate = rest % size;
        rest /= size;
        if let Some(&d) = axis.checked_sub(offset).map(|a| &dims[a]) {
            if d != 1 {
                index += coordinate * stride;
            }
            stride *= d;
        }
    }
    index as usize
}

/// `a op b` element-wise with numpy broadcasting, for `op` one of `Add`, `Sub`, `Mul`,
/// `Div`, `Pow`, `Max`, `Min`.
pub(super) fn fold_binary(op: &str, a: &Folded, b: &Folded) -> Result<Folded, String> {
    let dims = broadcast(&a.0, &b.0).ok_or_else(|| {
        format!(
            "constants of sizes {:?} and {:?} do not broadcast",
            a.0, b.0
        )
    })?;
    let count: u64 = dims.iter().product();
    let f: fn(f32, f32) -> f32 = match op {
        "Add" => |x, y| x + y,
        "Sub" => |x, y| x - y,
        "Mul" => |x, y| x * y,
        "Div" => |x, y| x / y,
        "Pow" => f32::powf,
        "Max" => f32::max,
        "Min" => f32::min,
        other => return Err(format!("{other} of constants is not folded")),
    };
    let values = (0..count)
        .map(|i| {
            let x = a.1[source_index(i, &dims, &a.0)];
            let y = b.1[source_index(i, &dims, &b.0)];
            f(x, y)
        })
        .collect();
    Ok((dims, values))
}

impl<'p> Lowering<'p, '_> {
    /// `arange.default` / `.start` / `.start_step`.
    pub(super) fn arange(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        let mut known = vec!["start", "end", "step"];
        known.extend(PLACEMENT);
        reject_extra(args, &known)?;
        check_dtype(args)?;
        let number = |name: &str, default: f64| match args.get(name) {
            None => Ok(default),
            Some(Argument::SymInt(_)) => Err(arg_error(format!(
                "arange's `{name}` is the batch size; a constant cannot follow the batch"
            ))),
            Some(_) => args.number(name).or_shape(),
        };
        let values = arange(
            number("start", 0.0)?,
            number("end", 0.0)?,
            number("step", 1.0)?,
        )
        .map_err(|e| arg_error(format!("{e} is not folded")))?;
        self.bind_folded(node, 0, vec![values.len() as u64], values)
    }

    /// `zeros`, `ones`, `full` (`fill`: `None` reads `fill_value`).
    pub(super) fn fill(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        fill: Option<f32>,
    ) -> Result<(), OnnxError> {
        let mut known = vec!["size", "fill_value"];
        known.extend(PLACEMENT);
        reject_extra(args, &known)?;
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
        if value == 0.0 && self.sized_by_the_batch(args) {
            return self.bind_batch_zeros(node);
        }
        let dims = sizes(args, "size")?;
        let count = dims.iter().product::<u64>() as usize;
        self.bind_folded(node, 0, dims, vec![value; count])
    }

    /// Whether a factory's size list is fixed sizes and the batch once (the batch's symbol,
    /// or its expression); any other symbolic size is left for [`sizes`] to refuse.
    fn sized_by_the_batch(&self, args: &Args<'_>) -> bool {
        let Some(Argument::SymInts(sizes)) = args.get("size") else {
            return false;
        };
        let mut batches = 0;
        for size in sizes {
            match size {
                SymInt::Int(n) if *n >= 0 => {}
                SymInt::Name(name) if self.is_batch_symbol(name) => batches += 1,
                expr @ SymInt::Expr(_) if self.batch.is(expr) => batches += 1,
                _ => return false,
            }
        }
        batches == 1
    }

    /// `scalar_tensor`: a 0-d constant.
    pub(super) fn scalar_tensor(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        let mut known = vec!["s"];
        known.extend(PLACEMENT);
        reject_extra(args, &known)?;
        check_dtype(args)?;
        let value = args.number("s").or_shape()? as f32;
        self.bind_folded(node, 0, vec![], vec![value])
    }

    /// An op that keeps a constant's values in order (`clone`, `detach`, `view`/`reshape`):
    /// the values under the sizes torch recorded for the output.
    pub(super) fn fold_relabel(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "memory_format", "size", "shape"])?;
        let (_, values) = self.constant_values(args.tensor("self").or_shape()?)?;
        let name = self.output_name(node, 0)?;
        let dims = self
            .graph
            .tensor_values
            .get(name)
            .and_then(|meta| {
                meta.sizes
                    .iter()
                    .map(|s| match s {
                        crate::torch::pt2::schema::SymInt::Int(d) => u64::try_from(*d).ok(),
                        _ => None,
                    })
                    .collect::<Option<Vec<u64>>>()
            })
            .ok_or_else(|| arg_error(format!("`{name}` has no fixed recorded sizes")))?;
        self.bind_folded(node, 0, dims, values)
    }

    /// `lift_fresh_copy` of a lifted constant (a tensor literal in `forward`): its values.
    pub(super) fn lift_fresh_copy(
        &mut self,
        node: &Node,
        args: &Args<'_>,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self"])?;
        let name = args.tensor("self").or_shape()?;
        let (dims, values) = self.constant_values(name)?;
        self.bind_folded(node, 0, dims, values)
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

    #[test]
    fn constants_fold_with_broadcasting() {
        let column = (vec![2, 1], vec![1.0, 2.0]);
        let row = (vec![3], vec![10.0, 20.0, 30.0]);
        assert_eq!(
            fold_binary("Mul", &column, &row),
            Ok((vec![2, 3], vec![10.0, 20.0, 30.0, 20.0, 40.0, 60.0]))
        );
        let scalar = (vec![], vec![2.0]);
        assert_eq!(
            fold_binary("Sub", &row, &scalar),
            Ok((vec![3], vec![8.0, 18.0, 28.0]))
        );
        assert!(fold_binary("Add", &row, &(vec![2], vec![0.0, 0.0])).is_err());
        assert!(fold_binary("Erf", &row, &scalar).is_err());
    }
}
