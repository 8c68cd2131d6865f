//! `linspace`/`logspace` whose ends are 0-d tensors the program computes (the `Tensor_*`
//! and `Scalar_Tensor` overloads), by [`ckpt_aten::spaced`]'s rule: the step
//! `(end − start) / (steps − 1)` times a constant of each entry's offset, added to the
//! start for the first half and taken from the end for the rest (a `Where` by a constant
//! mask); `logspace` raises `base` to the points. Ends that are all constants are folded.

use crate::elem::ElemType;
use crate::graph::{Value, Weight};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::program::{Argument, Node};
use ckpt_aten::spaced;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor;
use super::{arg_error, OrShape};

/// One end of the range: a value the program computes or a number.
enum End {
    Computed(Value),
    Number(Weight),
}

impl End {
    fn operand(&self) -> Operand<'_> {
        match self {
            End::Computed(v) => Operand::Activation(v),
            End::Number(w) => Operand::Constant(w),
        }
    }
}

impl Lowering<'_, '_> {
    /// `linspace`/`logspace` (`log`) with a tensor end.
    pub(super) fn spaced(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        log: bool,
    ) -> Result<(), OnnxError> {
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        if elem != ElemType::Float32 {
            return Err(arg_error(format!(
                "points of {elem} (only float32 ones, torch's default, are exported)"
            )));
        }
        let steps = u64::try_from(args.int("steps").or_shape()?)
            .map_err(|_| arg_error("a negative step count".into()))?;
        if steps == 0 {
            return Err(arg_error(
                "no points: its result is an empty tensor, which ATC does not compile".into(),
            ));
        }
        let start = self.end(args, scope, "start")?;
        let points = match (steps, &start) {
            (1, End::Computed(start)) => start.clone(),
            (1, End::Number(_)) => {
                return Err(arg_error(
                    "one point, its number start: the result does not read the tensor end, so it is a constant with no activation to carry".into(),
                ))
            }
            _ => {
                let end = self.end(args, scope, "end")?;
                let g = &mut self.g;
                let diff = emit::binary(g, "Sub", scope, end.operand(), start.operand())?;
                let intervals = g.constant_scalar(&format!("{scope}.intervals"), (steps - 1) as f32);
                let step = emit::binary(
                    g,
                    "Div",
                    scope,
                    Operand::Activation(&diff),
                    Operand::Constant(&intervals),
                )?;
                let offsets: Vec<f32> = (0..steps)
                    .map(|i| spaced::offset(i, steps) as f32)
                    .collect();
                let offsets = g.folded(&format!("{scope}.offsets"), vec![steps], &offsets)?;
                let away = emit::binary(
                    g,
                    "Mul",
                    scope,
                    Operand::Activation(&step),
                    Operand::Constant(&offsets),
                )?;
                let low = emit::binary(g, "Add", scope, start.operand(), Operand::Activation(&away))?;
                let high = emit::binary(g, "Sub", scope, end.operand(), Operand::Activation(&away))?;
                let first: Vec<f64> = (0..steps)
                    .map(|i| f64::from(u8::from(spaced::from_start(i, steps))))
                    .collect();
                let first =
                    g.typed_constant(&format!("{scope}.first"), vec![steps], &first, ElemType::Bool)?;
                let inputs = vec![
                    first.name().to_owned(),
                    low.name().to_owned(),
                    high.name().to_owned(),
                ];
                let shape = low.shape().to_vec();
                emit::single(g.typed_node(
                    "Where",
                    scope,
                    inputs,
                    vec![],
                    vec![(shape, ElemType::Float32)],
                ))
            }
        };
        let y = if log {
            let base = self.g.constant_scalar(
                &format!("{scope}.base"),
                args.float("base").or_shape()? as f32,
            );
            emit::binary(
                &mut self.g,
                "Pow",
                scope,
                Operand::Constant(&base),
                Operand::Activation(&points),
            )?
        } else {
            points
        };
        self.bind(node, 0, y)
    }

    /// Argument `name` of a `linspace`/`logspace`: a 0-d float32 tensor the program
    /// computes (viewed as one entry, so that it broadcasts along the points), or a
    /// number.
    fn end(&mut self, args: &Args<'_>, scope: &str, name: &str) -> Result<End, OnnxError> {
        match args.get(name) {
            Some(Argument::Tensor(t)) => {
                let sizes = self.tensor(t)?.sizes();
                if !sizes.is_empty() {
                    return Err(arg_error(format!(
                        "argument `{name}` has sizes {}; torch takes a 0-d tensor",
                        tensor::show(&sizes)
                    )));
                }
                // Lifted, a 0-d tensor is its one-entry view.
                Ok(End::Computed(self.lifted_activation(t)?))
            }
            _ => {
                let number = args.float(name).or_shape()?;
                let weight = self
                    .g
                    .constant_scalar(&format!("{scope}.{name}"), number as f32);
                Ok(End::Number(weight))
            }
        }
    }
}
