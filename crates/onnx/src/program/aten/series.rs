//! The series algebra over an ONNX graph ([`ckpt_aten::series`]): each function of an
//! element-wise program is one float32 node (a predicate a bool one) on the input's
//! layout, numbers are folded at export and written as scalar initializers (one per
//! distinct value); and the lowering of torch's special functions
//! ([`ckpt_aten::special`]) through it.

use std::collections::HashMap;

use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::decompose::Fn;
use ckpt_aten::program::Node;
use ckpt_aten::series::{self, Algebra};
use ckpt_aten::special;

use super::super::emit;
use super::super::lower::Lowering;
use super::registry::aten_name;
use super::{arg_error, OrShape};

/// A program's value in the graph: an activation (or a constant every sample shares), or
/// a number.
#[derive(Clone)]
pub(super) enum Term {
    Value(Value),
    Number(f64),
}

/// A graph being written, element-wise: each node's per-sample shape is its operands'
/// broadcast (numpy's rules, right-aligned).
pub(super) struct Graph<'g> {
    pub g: &'g mut GraphBuilder,
    scope: &'g str,
    /// The scalar initializer of each float32 number written so far, by its bits.
    scalars: HashMap<u32, String>,
}

impl<'g> Graph<'g> {
    pub fn new(g: &'g mut GraphBuilder, scope: &'g str) -> Self {
        Graph {
            g,
            scope,
            scalars: HashMap::new(),
        }
    }

    /// The scope the graph's nodes are named in.
    pub fn scope(&self) -> &str {
        self.scope
    }

    fn scalar(&mut self, c: f64) -> String {
        let c = c as f32;
        let (g, scope) = (&mut *self.g, self.scope);
        self.scalars
            .entry(c.to_bits())
            .or_insert_with(|| {
                g.constant_scalar(&format!("{scope}.scalar"), c)
                    .name()
                    .to_owned()
            })
            .clone()
    }
}

impl Algebra for Graph<'_> {
    type V = Term;

    fn number(&mut self, c: f64) -> Term {
        Term::Number(c)
    }

    fn apply(&mut self, f: Fn, operands: &[&Term]) -> series::Result<Term> {
        let numbers: Option<Vec<f64>> = operands
            .iter()
            .map(|t| match t {
                Term::Number(v) => Some(*v),
                Term::Value(_) => None,
            })
            .collect();
        if let Some(numbers) = numbers {
            return Ok(Term::Number(f.apply(&numbers)?));
        }
        // A condition known at export chooses its operand, and a truth known at export
        // decides a conjunction or a disjunction, or leaves it to the other operand (a
        // bool in the graph: ONNX's `And` and `Or` take no number).
        match (f, operands) {
            (Fn::Where, [Term::Number(c), a, b]) => {
                return Ok(if *c != 0.0 {
                    (*a).clone()
                } else {
                    (*b).clone()
                })
            }
            (Fn::And | Fn::Or, [Term::Number(c), other] | [other, Term::Number(c)]) => {
                let decides = (*c != 0.0) == (f == Fn::Or);
                return Ok(if decides {
                    Term::Number(f64::from(u8::from(*c != 0.0)))
                } else {
                    (*other).clone()
                });
            }
            _ => {}
        }
        let shapes: Vec<&[u64]> = operands
            .iter()
            .filter_map(|t| match t {
                Term::Value(v) => Some(v.shape()),
                Term::Number(_) => None,
            })
            .collect();
        let shape = ckpt_aten::eval::broadcast(&shapes)?;
        // A bool operand is a predicate's result; a number beside it is never one.
        let inputs: Vec<String> = operands
            .iter()
            .map(|t| match t {
                Term::Value(v) => v.name().to_owned(),
                Term::Number(c) => self.scalar(*c),
            })
            .collect();
        let y = match (f, operands) {
            (Fn::Float, [Term::Value(b)]) => emit::cast(self.g, self.scope, b, ElemType::Float32),
            (Fn::Float, _) => return Err("a cast of no value".into()),
            _ => {
                // A `Where` has its operands' type (bools for a conjunction).
                let chosen = match (f, operands) {
                    (Fn::Where, [_, a, b]) => [a, b].into_iter().find_map(|t| match t {
                        Term::Value(v) => Some(v.elem()),
                        Term::Number(_) => None,
                    }),
                    _ => None,
                };
                let elem = match chosen {
                    Some(elem) => elem,
                    None if f.is_predicate() => ElemType::Bool,
                    None => ElemType::Float32,
                };
                emit::single(self.g.typed_node(
                    f.onnx(),
                    self.scope,
                    inputs,
                    vec![],
                    vec![(shape, elem)],
                ))
            }
        };
        Ok(Term::Value(y))
    }

    fn float32(&mut self, v: &Term) -> Term {
        match v {
            Term::Number(c) => Term::Number(f64::from(*c as f32)),
            value => value.clone(),
        }
    }

    /// A float32 initializer holding `table`, gathered at `index` cast to int64 (a lookup
    /// in a constant table, which ATC accepts).
    fn lookup(&mut self, index: &Term, table: &[f64]) -> series::Result<Term> {
        let index = match index {
            Term::Number(i) => return series::Scalar.lookup(i, table).map(Term::Number),
            Term::Value(v) => v,
        };
        let values: Vec<f32> = table.iter().map(|&v| v as f32).collect();
        let table = self
            .g
            .folded(
                &format!("{}.table", self.scope),
                vec![values.len() as u64],
                &values,
            )
            .map_err(|e| e.to_string())?;
        let positions = emit::cast(self.g, self.scope, index, ElemType::Int64);
        let y = emit::single(self.g.typed_node(
            "Gather",
            self.scope,
            vec![table.name().to_owned(), positions.name().to_owned()],
            vec![("axis", Attr::Int(0))],
            vec![(index.shape().to_vec(), ElemType::Float32)],
        ));
        Ok(Term::Value(y))
    }
}

impl Lowering<'_, '_> {
    /// A special function ([`special::SPECIAL`]) of its float32 tensor argument: the
    /// program of torch's kernel, one node per function, on the input's layout.
    pub(super) fn special(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = ckpt_aten::schema::canonical(aten_name(node));
        let Some(row) = special::special(target) else {
            return Err(arg_error(format!("{target} is not a special function")));
        };
        let x = self.tensor(args.tensor(row.input).or_shape()?)?;
        let elem = x.value().elem();
        let recorded = self.recorded_elem(self.output_name(node, 0)?)?;
        if elem != ElemType::Float32 || recorded != ElemType::Float32 {
            return Err(arg_error(format!(
                "{target} of a {elem} tensor giving {recorded} is not exported (float32 only: its program is torch's float kernel, {})",
                row.port
            )));
        }
        let mut graph = Graph::new(&mut self.g, scope);
        let y = row
            .build(&mut graph, node, &Term::Value(x.value().clone()))
            .or_shape()?;
        let Term::Value(y) = y else {
            return Err(arg_error(format!(
                "{target} gives the same number everywhere, which is not an activation"
            )));
        };
        self.bind_tensor(node, 0, x.with_value(y)?)
    }
}
