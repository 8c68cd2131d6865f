//! The losses and distances torch computes from its own functions but keeps whole in an
//! exported program, each as ATen's kernel or torch's decomposition defines it (cited per
//! op): `nll_loss` (and `nll_loss_nd`, `nll_loss2d`), `cross_entropy_loss`,
//! `multi_margin_loss`, `multilabel_margin_loss`, `cosine_embedding_loss`,
//! `triplet_margin_loss`, `pairwise_distance`, `cosine_similarity` and `dist`.
//!
//! Every operand is read in one frame: a static program's tensors whole (lifted, torch's
//! own dimensions), a dynamic batch's per sample (a dimension along the batch refused as
//! mixing samples). A class-index target picks one entry per position along the class
//! axis without a gather: a constant target's picks are a mask computed at export, an
//! activation's are `Equal` against the classes' numbers. A reduction over every entry
//! (`mean`, `sum`) is exported in static programs and refused under a dynamic batch.

use crate::elem::ElemType;
use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::decompose::{Fn, LossReduction};
use ckpt_aten::eval;
use ckpt_aten::program::Node;
use ckpt_aten::series::Algebra;

use super::super::emit;
use super::super::lower::Lowering;
use super::registry::aten_name;
use super::series::{Graph, Term};
use super::{arg_error, OrShape};

/// torch's `EPSILON` of `cosine_embedding_loss` (ATen's Loss.cpp), added to each squared
/// magnitude.
const COSINE_EMBEDDING_EPSILON: f32 = 1e-12;

/// A tensor operand in the frame of the activations a node read: an activation, or a
/// constant laid out to meet them.
enum Operand {
    Activation(Value),
    Constant(eval::Tensor),
}

/// A class-index target's picks in the frame of its input `[…, C, …]` (class axis
/// `axis`): `hit` (bool, the input's shape) is true at each position's target class,
/// unless the position is ignored; `weight` (float32, the input's shape with 1 along the
/// class axis) is the class weight of the pick, 0 where ignored; `kept` (bool, as
/// `weight`) where the position is not ignored. A constant target's sums of `weight`
/// and of `kept` over every position are known at export (`totals`).
struct Picks {
    hit: Term,
    weight: Term,
    kept: Term,
    totals: Option<(f64, f64)>,
}

impl Lowering<'_, '_> {
    /// Float32 tensor argument `name` in the current frame: an activation read lifted in a
    /// static program ([`Lowering::lifted_activation`]), or a constant (the leading 1 of a
    /// `[1, …]` constant dropped per sample; one with a size along a dynamic batch refused).
    fn loss_operand(&mut self, args: &Args<'_>, name: &str) -> Result<Operand, OnnxError> {
        let t = args.tensor(name).or_shape()?;
        if !self.is_constant(t) {
            let x = self.lifted_any_activation(t)?;
            let scope = format!("{t}.float");
            return Ok(Operand::Activation(emit::cast(
                &mut self.g,
                &scope,
                &x,
                ElemType::Float32,
            )));
        }
        let c = self.constant_tensor(t)?;
        Ok(Operand::Constant(c))
    }

    /// Torch dimension `dim` of a rank-`rank` tensor as an axis of the frame.
    fn loss_axis(&self, dim: i64, rank: usize) -> Result<usize, OnnxError> {
        frame_axis(self.is_lifted(), dim, rank)
    }

    /// The torch rank of a value `x` of the frame.
    fn torch_rank(&self, x: &Value) -> usize {
        x.shape().len() + usize::from(!self.is_lifted())
    }

    /// Binds `y` as output 0 of `node`, viewed as the sizes torch recorded (per sample
    /// under a dynamic batch).
    fn bind_loss(&mut self, node: &Node, scope: &str, y: Term) -> Result<(), OnnxError> {
        let Term::Value(y) = y else {
            return Err(arg_error(format!(
                "{} gives the same number everywhere, which is not an activation",
                aten_name(node)
            )));
        };
        let recorded = self.recorded_sizes(node, 0)?;
        let skip = usize::from(!self.is_lifted());
        let dims: Vec<u64> = recorded.iter().skip(skip).map(|s| s.count).collect();
        let y = if y.shape() == dims.as_slice() {
            y
        } else {
            self.g.reshape(scope, &y, &dims)?
        };
        self.bind(node, 0, y)
    }

    /// The class-index picks of `target` in input `x` of the frame, classes along `axis`
    /// (torch's class dimension `class_dim` of the input's `rank`): a constant target's
    /// computed at export, an activation's by `Equal` against the classes' numbers.
    #[allow(clippy::too_many_arguments)]
    fn picks(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        x: &Value,
        axis: usize,
        weight: Option<&eval::Tensor>,
        ignore: Option<i64>,
    ) -> Result<Picks, OnnxError> {
        let target_name = aten_name(node);
        let name = args.tensor("target").or_shape()?;
        let shape = x.shape().to_vec();
        let classes = shape[axis];
        let mut kept_shape = shape.clone();
        kept_shape[axis] = 1;
        let weights: Vec<f32> = match weight {
            Some(w) if w.dims().iter().product::<u64>() == classes => w.to_f32(),
            Some(w) => {
                return Err(arg_error(format!(
                    "{target_name}'s weight has sizes {:?} for {classes} classes",
                    w.dims()
                )))
            }
            None => vec![1.0; classes as usize],
        };
        if self.is_constant(name) {
            if !self.is_lifted() {
                return Err(arg_error(format!(
                    "{target_name}'s target is a constant with an entry per sample, which under a dynamic batch cannot follow the samples; export the program at a fixed batch (`--batch static`) or pass the target as an input"
                )));
            }
            let t = self.constant_tensor(name)?.to_i64().or_shape()?;
            let positions: u64 = kept_shape.iter().product();
            if t.len() as u64 != positions {
                return Err(arg_error(format!(
                    "{target_name}'s target has {} entries for an input of sizes {shape:?}",
                    t.len()
                )));
            }
            let ClassPicks { hit, picked, kept } = class_picks(&t, &shape, axis, &weights, ignore)
                .map_err(|e| arg_error(format!("{target_name}'s target {e}")))?;
            let totals = (picked.iter().sum(), kept.iter().sum());
            let g = &mut self.g;
            let hit = g.shared_constant(&format!("{scope}.hit"), shape, &hit, ElemType::Bool)?;
            let weight = g.shared_constant(
                &format!("{scope}.weight"),
                kept_shape.clone(),
                &picked,
                ElemType::Float32,
            )?;
            let kept =
                g.shared_constant(&format!("{scope}.kept"), kept_shape, &kept, ElemType::Bool)?;
            return Ok(Picks {
                hit: Term::Value(hit),
                weight: Term::Value(weight),
                kept: Term::Value(kept),
                totals: Some(totals),
            });
        }
        let t = self.lifted_any_activation(name)?;
        let t = emit::cast(&mut self.g, scope, &t, ElemType::Int64);
        let t = self.g.reshape(scope, &t, &kept_shape)?;
        let mut class_shape = vec![1; shape.len()];
        class_shape[axis] = classes;
        let numbers: Vec<f64> = (0..classes).map(|c| c as f64).collect();
        let g = &mut self.g;
        let numbers = g.shared_constant(
            &format!("{scope}.classes"),
            class_shape.clone(),
            &numbers,
            ElemType::Int64,
        )?;
        let hit = emit::typed(
            g,
            "Equal",
            scope,
            [t.name(), numbers.name()],
            &shape,
            ElemType::Bool,
        );
        let (hit, kept) = match ignore {
            Some(ignore) => {
                let ignore =
                    g.typed_scalar(&format!("{scope}.ignore"), ignore as f64, ElemType::Int64)?;
                let ignored = emit::typed(
                    g,
                    "Equal",
                    scope,
                    [t.name(), ignore.name()],
                    &kept_shape,
                    ElemType::Bool,
                );
                let kept = emit::typed(
                    g,
                    "Not",
                    scope,
                    [ignored.name()],
                    &kept_shape,
                    ElemType::Bool,
                );
                let hit = emit::typed(
                    g,
                    "And",
                    scope,
                    [hit.name(), kept.name()],
                    &shape,
                    ElemType::Bool,
                );
                (hit, Term::Value(kept))
            }
            None => (hit, Term::Number(1.0)),
        };
        let weights: Vec<f64> = weights.iter().map(|&w| f64::from(w)).collect();
        let table = g.shared_constant(
            &format!("{scope}.class_weight"),
            class_shape,
            &weights,
            ElemType::Float32,
        )?;
        let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
        let chosen = emit::typed(
            g,
            "Where",
            scope,
            [hit.name(), table.name(), zero.name()],
            &shape,
            ElemType::Float32,
        );
        let weight = g.reduce("ReduceSum", scope, &chosen, &[axis], true)?;
        Ok(Picks {
            hit: Term::Value(hit),
            weight: Term::Value(weight),
            kept,
            totals: None,
        })
    }

    /// Optional constant tensor argument `name` (a class weight), `None` when not given.
    fn constant_weight_arg(
        &mut self,
        args: &Args<'_>,
        name: &str,
    ) -> Result<Option<eval::Tensor>, OnnxError> {
        if !ckpt_aten::decompose::given(args.0, name) {
            return Ok(None);
        }
        let t = args.tensor(name).or_shape()?;
        if !self.is_constant(t) {
            return Err(arg_error(format!(
                "its `{name}` is computed by the model; it is exported as a constant (a buffer or parameter)"
            )));
        }
        self.constant_tensor(t).map(Some)
    }

    /// `nll_loss`, `nll_loss2d` and `nll_loss_nd` (ATen's `nll_loss_forward` kernels:
    /// `−weight[t]·x[t]` per position, 0 where the target is `ignore_index`; the mean
    /// divides the sum by the sum of the picked weights).
    pub(super) fn nll_loss(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let rank = self.torch_rank(&x);
        let axis = self.loss_axis(i64::from(rank >= 2), rank)?;
        let weight = self.constant_weight_arg(args, "weight")?;
        let ignore = Some(args.int("ignore_index").or_shape()?);
        let picks = self.picks(node, args, scope, &x, axis, weight.as_ref(), ignore)?;
        let how = LossReduction::of(node).or_shape()?;
        let y = self.nll(args, scope, &Term::Value(x), axis, &picks, how)?;
        self.bind_loss(node, scope, y)
    }

    /// The negative log-likelihood of log-probabilities `x` at `picks`, reduced as `how`
    /// (ATen's `nll_loss_forward`).
    fn nll(
        &mut self,
        args: &Args<'_>,
        scope: &str,
        x: &Term,
        axis: usize,
        picks: &Picks,
        how: LossReduction,
    ) -> Result<Term, OnnxError> {
        let lifted = self.is_lifted();
        let mut graph = Graph::new(&mut self.g, scope);
        let at = graph
            .apply(Fn::Where, &[&picks.hit, x, &Term::Number(0.0)])
            .or_shape()?;
        let at = reduce(&mut graph, "ReduceSum", &at, &[axis], true)?;
        let minus = graph.apply(Fn::Neg, &[&picks.weight]).or_shape()?;
        let loss = graph.apply(Fn::Mul, &[&at, &minus]).or_shape()?;
        Ok(match how {
            LossReduction::None => loss,
            LossReduction::Sum => every(&mut graph, args, &loss, lifted)?,
            LossReduction::Mean => {
                let sum = every(&mut graph, args, &loss, lifted)?;
                let total = match picks.totals {
                    Some((weight, _)) => Term::Number(weight),
                    None => every(&mut graph, args, &picks.weight, lifted)?,
                };
                graph.apply(Fn::Div, &[&sum, &total]).or_shape()?
            }
        })
    }

    /// `cross_entropy_loss` (ATen's `cross_entropy_loss_symint`): the log-softmax over
    /// the class dimension, then for class-index targets `nll_loss`, with
    /// `label_smoothing` mixed with the smoothed loss (`−Σ weight·log p` over the classes,
    /// 0 where ignored, its mean divided by the picked weights' sum, or the count of kept
    /// positions without a weight); for probability targets (the input's sizes) `−Σ
    /// weight·target·log p` over the classes, the target smoothed to `target·(1 − ε) +
    /// ε/C`, its mean divided by the number of positions.
    pub(super) fn cross_entropy_loss(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = aten_name(node);
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let rank = self.torch_rank(&x);
        let axis = self.loss_axis(i64::from(rank >= 2), rank)?;
        let classes = x.shape()[axis];
        let weight = self.constant_weight_arg(args, "weight")?;
        let ignore = Some(args.int("ignore_index").or_shape()?);
        let smoothing = args.float("label_smoothing").or_shape()?;
        let how = LossReduction::of(node).or_shape()?;
        let lifted = self.is_lifted();
        let log_p = log_softmax(&mut self.g, scope, &x, axis)?;
        let class_weight = match &weight {
            Some(w) => {
                let mut dims = vec![1; x.shape().len()];
                dims[axis] = classes;
                let values: Vec<f64> = w.to_f32().into_iter().map(f64::from).collect();
                if values.len() as u64 != classes {
                    return Err(arg_error(format!(
                        "{target}'s weight has sizes {:?} for {classes} classes",
                        w.dims()
                    )));
                }
                let w = self.g.shared_constant(
                    &format!("{scope}.class_weight"),
                    dims,
                    &values,
                    ElemType::Float32,
                )?;
                Term::Value(w)
            }
            None => Term::Number(1.0),
        };
        let target_name = args.tensor("target").or_shape()?;
        let recorded_target = self.recorded_name_sizes(target_name)?;
        let recorded_input = self.recorded_name_sizes(args.tensor("self").or_shape()?)?;
        let probabilities = recorded_target.len() == recorded_input.len()
            && recorded_target
                .iter()
                .zip(&recorded_input)
                .all(|(a, b)| a.count == b.count);
        if probabilities {
            let t = self.loss_operand(args, "target")?;
            let mut graph = Graph::new(&mut self.g, scope);
            let t = loss_term(&mut graph, lifted, target, &t, &x, "target")?;
            let t = if smoothing > 0.0 {
                let kept = graph
                    .apply(Fn::Mul, &[&t, &Term::Number(1.0 - smoothing)])
                    .or_shape()?;
                let spread = Term::Number(f64::from((smoothing / classes as f64) as f32));
                graph.apply(Fn::Add, &[&kept, &spread]).or_shape()?
            } else {
                t
            };
            let terms = graph
                .apply(Fn::Mul, &[&Term::Value(log_p), &t])
                .or_shape()?;
            let terms = graph.apply(Fn::Mul, &[&terms, &class_weight]).or_shape()?;
            let y = match how {
                LossReduction::None => reduce(&mut graph, "ReduceSum", &terms, &[axis], false)?,
                LossReduction::Sum => every(&mut graph, args, &terms, lifted)?,
                LossReduction::Mean => {
                    let sum = every(&mut graph, args, &terms, lifted)?;
                    let positions: u64 = recorded_input.iter().map(|s| s.count).product();
                    let positions = Term::Number((positions / classes.max(1)) as f64);
                    graph.apply(Fn::Div, &[&sum, &positions]).or_shape()?
                }
            };
            let y = graph.apply(Fn::Neg, &[&y]).or_shape()?;
            return self.bind_loss(node, scope, y);
        }
        let picks = self.picks(node, args, scope, &x, axis, weight.as_ref(), ignore)?;
        let log_p = Term::Value(log_p);
        let nll = self.nll(args, scope, &log_p, axis, &picks, how)?;
        let y = if smoothing > 0.0 {
            let mut graph = Graph::new(&mut self.g, scope);
            let weighted = graph.apply(Fn::Mul, &[&log_p, &class_weight]).or_shape()?;
            let smooth = reduce(&mut graph, "ReduceSum", &weighted, &[axis], true)?;
            let smooth = graph.apply(Fn::Neg, &[&smooth]).or_shape()?;
            let smooth = graph
                .apply(Fn::Where, &[&picks.kept, &smooth, &Term::Number(0.0)])
                .or_shape()?;
            let smooth = match how {
                LossReduction::None => smooth,
                LossReduction::Sum => every(&mut graph, args, &smooth, lifted)?,
                LossReduction::Mean => {
                    let sum = every(&mut graph, args, &smooth, lifted)?;
                    let by = match (picks.totals, &weight) {
                        (Some((weight, _)), Some(_)) => Term::Number(weight),
                        (Some((_, kept)), None) => Term::Number(kept),
                        (None, Some(_)) => every(&mut graph, args, &picks.weight, lifted)?,
                        (None, None) => {
                            let kept = graph.apply(Fn::Float, &[&picks.kept]).or_shape()?;
                            every(&mut graph, args, &kept, lifted)?
                        }
                    };
                    graph.apply(Fn::Div, &[&sum, &by]).or_shape()?
                }
            };
            let nll = graph
                .apply(Fn::Mul, &[&nll, &Term::Number(1.0 - smoothing)])
                .or_shape()?;
            let share = Term::Number(smoothing / classes as f64);
            let smooth = graph.apply(Fn::Mul, &[&smooth, &share]).or_shape()?;
            graph.apply(Fn::Add, &[&nll, &smooth]).or_shape()?
        } else {
            nll
        };
        self.bind_loss(node, scope, y)
    }

    /// `multi_margin_loss` (ATen's `multi_margin_loss_cpu_kernel`): per sample, the sum
    /// over the classes but the target of `z = margin − x[t] + x[d]` where `z > 0`
    /// (squared for `p = 2`, times `weight[t]`), over the number of classes; the input a
    /// vector or a matrix whose last dimension is the classes.
    pub(super) fn multi_margin_loss(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let p = args.float("p").or_shape()?;
        if p != 1.0 && p != 2.0 {
            return Err(arg_error(format!(
                "multi_margin_loss with p = {p}; torch supports only 1 and 2"
            )));
        }
        let margin = args.float("margin").or_shape()?;
        let rank = self.torch_rank(&x);
        vector_or_matrix("multi_margin_loss", rank)?;
        let axis = self.loss_axis(-1, rank.max(1))?;
        let classes = x.shape()[axis];
        let weight = self.constant_weight_arg(args, "weight")?;
        // No class is ignored: torch's kernel has no ignore_index.
        let picks = self.picks(node, args, scope, &x, axis, weight.as_ref(), None)?;
        let how = LossReduction::of(node).or_shape()?;
        let lifted = self.is_lifted();
        let mut graph = Graph::new(&mut self.g, scope);
        let x = Term::Value(x);
        let at = graph
            .apply(Fn::Where, &[&picks.hit, &x, &Term::Number(0.0)])
            .or_shape()?;
        let at = reduce(&mut graph, "ReduceSum", &at, &[axis], true)?;
        let z = graph.apply(Fn::Sub, &[&x, &at]).or_shape()?;
        let z = graph
            .apply(Fn::Add, &[&z, &Term::Number(margin)])
            .or_shape()?;
        let h = if p == 2.0 {
            graph.apply(Fn::Mul, &[&z, &z]).or_shape()?
        } else {
            z.clone()
        };
        let h = match weight {
            Some(_) => graph.apply(Fn::Mul, &[&h, &picks.weight]).or_shape()?,
            None => h,
        };
        let positive = graph
            .apply(Fn::Greater, &[&z, &Term::Number(0.0)])
            .or_shape()?;
        let other = graph.apply(Fn::Not, &[&picks.hit]).or_shape()?;
        let counted = graph.apply(Fn::And, &[&positive, &other]).or_shape()?;
        let h = graph
            .apply(Fn::Where, &[&counted, &h, &Term::Number(0.0)])
            .or_shape()?;
        let y = class_mean(&mut graph, args, &h, (&[axis], true), classes, how, lifted)?;
        self.bind_loss(node, scope, y)
    }

    /// `multilabel_margin_loss` (ATen's `multilabel_margin_loss_forward_out_frame`): per
    /// sample, for each target class `j` listed before the first negative entry (as often
    /// as it is listed), the sum over the non-target classes `d` of `1 − x[j] + x[d]`
    /// where positive, over the number of classes; the target a constant.
    pub(super) fn multilabel_margin_loss(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let rank = self.torch_rank(&x);
        vector_or_matrix("multilabel_margin_loss", rank)?;
        let how = LossReduction::of(node).or_shape()?;
        if rank <= 1 && how == LossReduction::None {
            return Err(arg_error(
                "multilabel_margin_loss of a vector with reduction='none': torch's kernel returns a 0-d tensor where torch.export records sizes [1], so no graph matches both; reduce with 'mean' or 'sum', or give the input a batch dimension".into(),
            ));
        }
        let name = args.tensor("target").or_shape()?;
        if !self.is_constant(name) || !self.is_lifted() {
            return Err(arg_error(
                "multilabel_margin_loss is exported with a constant target in a static program (its target lists per sample end at the first −1, which is read at export)".into(),
            ));
        }
        let t = self.constant_tensor(name)?.to_i64().or_shape()?;
        // The frame of a vector (or 0-d) input as one sample of its classes.
        let classes = x.shape().last().copied().unwrap_or(1);
        let samples = x.shape().iter().product::<u64>() / classes.max(1);
        if t.len() as u64 != samples * classes {
            return Err(arg_error(format!(
                "multilabel_margin_loss's target has {} entries for an input of sizes {:?}",
                t.len(),
                x.shape()
            )));
        }
        let factor = multilabel_factors(&t, classes as usize)
            .map_err(|e| arg_error(format!("multilabel_margin_loss's target {e}")))?;
        let counted: Vec<f64> = factor
            .iter()
            .map(|&f| f64::from(u8::from(f > 0.0)))
            .collect();
        let g = &mut self.g;
        let pairs = vec![samples, classes, classes];
        let x = g.reshape(scope, &x, &[samples, classes])?;
        let rows = g.reshape(scope, &x, &[samples, classes, 1])?;
        let columns = g.reshape(scope, &x, &[samples, 1, classes])?;
        let counted = g.shared_constant(
            &format!("{scope}.counted"),
            pairs.clone(),
            &counted,
            ElemType::Bool,
        )?;
        let factor =
            g.shared_constant(&format!("{scope}.times"), pairs, &factor, ElemType::Float32)?;
        let mut graph = Graph::new(g, scope);
        let z = graph
            .apply(Fn::Sub, &[&Term::Value(columns), &Term::Value(rows)])
            .or_shape()?;
        let z = graph.apply(Fn::Add, &[&z, &Term::Number(1.0)]).or_shape()?;
        let z = graph
            .apply(Fn::Where, &[&Term::Value(counted), &z, &Term::Number(0.0)])
            .or_shape()?;
        let positive = graph
            .apply(Fn::Greater, &[&z, &Term::Number(0.0)])
            .or_shape()?;
        let z = graph
            .apply(Fn::Where, &[&positive, &z, &Term::Number(0.0)])
            .or_shape()?;
        let z = graph
            .apply(Fn::Mul, &[&z, &Term::Value(factor)])
            .or_shape()?;
        let y = class_mean(&mut graph, args, &z, (&[1, 2], false), classes, how, true)?;
        self.bind_loss(node, scope, y)
    }

    /// `cosine_embedding_loss` (ATen's Loss.cpp): the cosine of `input1` and `input2` along
    /// their last dimension (each squared magnitude plus 1e-12), `1 − cos` where the
    /// target is 1, `max(cos − margin, 0)` where it is −1, 0 elsewhere.
    pub(super) fn cosine_embedding_loss(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = aten_name(node);
        let (x, operands) = self.loss_operands(args, &["input1", "input2", "target"])?;
        let rank = self.torch_rank(&x);
        let axis = self.loss_axis(-1, rank.max(1))?;
        let margin = args.float("margin").or_shape()?;
        let how = LossReduction::of(node).or_shape()?;
        let lifted = self.is_lifted();
        let mut graph = Graph::new(&mut self.g, scope);
        let [a, b, t] = [0, 1, 2].map(|k| {
            let name = ["input1", "input2", "target"][k];
            loss_term(&mut graph, lifted, target, &operands[k], &x, name)
        });
        let (a, b, t) = (a?, b?, t?);
        // A constant input is read on the activation's entries, so that its sums are
        // written per sample as the activation's are.
        let zero = zero_like(&mut graph, &x)?;
        let a = graph.apply(Fn::Add, &[&a, &zero]).or_shape()?;
        let b = graph.apply(Fn::Add, &[&b, &zero]).or_shape()?;
        let product = graph.apply(Fn::Mul, &[&a, &b]).or_shape()?;
        let product = reduce(&mut graph, "ReduceSum", &product, &[axis], false)?;
        let mut magnitude = |v: &Term| -> Result<Term, OnnxError> {
            let square = graph.apply(Fn::Mul, &[v, v]).or_shape()?;
            let sum = reduce(&mut graph, "ReduceSum", &square, &[axis], false)?;
            let eps = Term::Number(f64::from(COSINE_EMBEDDING_EPSILON));
            graph.apply(Fn::Add, &[&sum, &eps]).or_shape()
        };
        let (ma, mb) = (magnitude(&a)?, magnitude(&b)?);
        let denominator = graph.apply(Fn::Mul, &[&ma, &mb]).or_shape()?;
        let denominator = graph.apply(Fn::Sqrt, &[&denominator]).or_shape()?;
        let cos = graph.apply(Fn::Div, &[&product, &denominator]).or_shape()?;
        let pos = graph
            .apply(Fn::Sub, &[&Term::Number(1.0), &cos])
            .or_shape()?;
        let neg = graph
            .apply(Fn::Sub, &[&cos, &Term::Number(margin)])
            .or_shape()?;
        let neg = clamp_min_zero(&mut graph, &neg)?;
        let is_pos = graph
            .apply(Fn::Equal, &[&t, &Term::Number(1.0)])
            .or_shape()?;
        let is_neg = graph
            .apply(Fn::Equal, &[&t, &Term::Number(-1.0)])
            .or_shape()?;
        let zero = Term::Number(0.0);
        let pos = graph.apply(Fn::Where, &[&is_pos, &pos, &zero]).or_shape()?;
        let neg = graph.apply(Fn::Where, &[&is_neg, &neg, &zero]).or_shape()?;
        let y = graph.apply(Fn::Add, &[&pos, &neg]).or_shape()?;
        let y = reduced(&mut graph, args, &y, how, lifted)?;
        self.bind_loss(node, scope, y)
    }

    /// Tensor arguments `names` read in one frame: the first activation among them, and
    /// each as an [`Operand`].
    fn loss_operands(
        &mut self,
        args: &Args<'_>,
        names: &[&str],
    ) -> Result<(Value, Vec<Operand>), OnnxError> {
        let elementwise = names
            .iter()
            .map(|name| super::pointwise::operand(args, name))
            .collect::<Result<Vec<_>, _>>()?;
        self.lift_for_constants(&elementwise)?;
        let operands = names
            .iter()
            .map(|name| self.loss_operand(args, name))
            .collect::<Result<Vec<_>, _>>()?;
        let first = operands.iter().find_map(|o| match o {
            Operand::Activation(v) => Some(v.clone()),
            Operand::Constant(_) => None,
        });
        let first = first
            .ok_or_else(|| arg_error("of constants alone it is folded, not emitted".into()))?;
        Ok((first, operands))
    }

    /// `x1 − x2 + eps` of two operands of the frame, and the torch rank of their
    /// broadcast.
    fn difference(
        &mut self,
        target: &str,
        scope: &str,
        like: &Value,
        operands: [(&Operand, &str); 2],
        eps: f64,
    ) -> Result<Value, OnnxError> {
        let lifted = self.is_lifted();
        let mut graph = Graph::new(&mut self.g, scope);
        let a = loss_term(
            &mut graph,
            lifted,
            target,
            operands[0].0,
            like,
            operands[0].1,
        )?;
        let b = loss_term(
            &mut graph,
            lifted,
            target,
            operands[1].0,
            like,
            operands[1].1,
        )?;
        let d = graph.apply(Fn::Sub, &[&a, &b]).or_shape()?;
        // Of two constants, read on the activation's entries, so that the norm is
        // written per sample as the activation's is.
        let d = match operands.map(|(o, _)| matches!(o, Operand::Constant(_))) {
            [true, true] => {
                let zero = zero_like(&mut graph, like)?;
                graph.apply(Fn::Add, &[&d, &zero]).or_shape()?
            }
            _ => d,
        };
        match graph.apply(Fn::Add, &[&d, &Term::Number(eps)]).or_shape()? {
            Term::Value(v) => Ok(v),
            Term::Number(_) => Err(arg_error(format!("{target} of numbers alone"))),
        }
    }

    /// `pairwise_distance` (`torch._refs.nn.functional.pairwise_distance`): the `p`-norm
    /// of `x1 − x2 + eps` over the last dimension of their broadcast.
    pub(super) fn pairwise_distance(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = aten_name(node);
        let (x, operands) = self.loss_operands(args, &["x1", "x2"])?;
        let eps = args.float("eps").or_shape()?;
        let p = args.float("p").or_shape()?;
        let keep = args.bool("keepdim").or_shape()?;
        let d = self.difference(
            target,
            scope,
            &x,
            [(&operands[0], "x1"), (&operands[1], "x2")],
            eps,
        )?;
        let rank = self.torch_rank(&d);
        let axis = self.loss_axis(-1, rank.max(1))?;
        let y = self.norm_over(scope, &d, p, &[axis], keep)?;
        self.bind_loss(node, scope, Term::Value(y))
    }

    /// `dist` (`torch._decomp.decompositions.dist`: `norm(self − other, p)` over every
    /// entry of their broadcast), refused under a dynamic batch as mixing samples.
    pub(super) fn dist(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = aten_name(node);
        let (x, operands) = self.loss_operands(args, &["self", "other"])?;
        let p = args.float("p").or_shape()?;
        let d = self.difference(
            target,
            scope,
            &x,
            [(&operands[0], "self"), (&operands[1], "other")],
            0.0,
        )?;
        if !self.is_lifted() {
            return Err(arg_error(
                "dist takes the norm of every entry, the batch included, which mixes samples; export the program at a fixed batch (`--batch static`)".into(),
            ));
        }
        let axes: Vec<usize> = (0..d.shape().len()).collect();
        let y = self.norm_over(scope, &d, p, &axes, false)?;
        self.bind_loss(node, scope, Term::Value(y))
    }

    /// `triplet_margin_loss` (`torch._refs.nn.functional.triplet_margin_loss`):
    /// `max(margin + d(a, p) − d(a, n), 0)`, `d` the `pairwise_distance`, `d(a, n)` the
    /// smaller of it and `d(p, n)` with `swap` (NaN kept, as `torch.minimum`).
    pub(super) fn triplet_margin_loss(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = aten_name(node);
        let names = ["anchor", "positive", "negative"];
        let (x, operands) = self.loss_operands(args, &names)?;
        let eps = args.float("eps").or_shape()?;
        let p = args.float("p").or_shape()?;
        let margin = args.float("margin").or_shape()?;
        let swap = args.bool("swap").or_shape()?;
        let how = LossReduction::of(node).or_shape()?;
        let distance = |l: &mut Self, i: usize, j: usize| -> Result<Term, OnnxError> {
            let pair = [(&operands[i], names[i]), (&operands[j], names[j])];
            let d = l.difference(target, scope, &x, pair, eps)?;
            let rank = l.torch_rank(&d);
            let axis = l.loss_axis(-1, rank.max(1))?;
            l.norm_over(scope, &d, p, &[axis], false).map(Term::Value)
        };
        let positive = distance(self, 0, 1)?;
        let negative = distance(self, 0, 2)?;
        let swapped = match swap {
            true => Some(distance(self, 1, 2)?),
            false => None,
        };
        let lifted = self.is_lifted();
        let mut graph = Graph::new(&mut self.g, scope);
        let negative = match swapped {
            Some(s) => {
                let nan = graph.apply(Fn::IsNan, &[&s]).or_shape()?;
                let less = graph.apply(Fn::Less, &[&s, &negative]).or_shape()?;
                let pick = graph.apply(Fn::Or, &[&nan, &less]).or_shape()?;
                graph.apply(Fn::Where, &[&pick, &s, &negative]).or_shape()?
            }
            None => negative,
        };
        let y = graph
            .apply(Fn::Add, &[&positive, &Term::Number(margin)])
            .or_shape()?;
        let y = graph.apply(Fn::Sub, &[&y, &negative]).or_shape()?;
        let y = clamp_min_zero(&mut graph, &y)?;
        let y = reduced(&mut graph, args, &y, how, lifted)?;
        self.bind_loss(node, scope, y)
    }

    /// `cosine_similarity` (ATen's Distance.cpp): `Σ (x1 / max(‖x1‖, eps))·(x2 /
    /// max(‖x2‖, eps))` along `dim` of their broadcast, `‖·‖` the Euclidean norm.
    pub(super) fn cosine_similarity(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = aten_name(node);
        let (x, operands) = self.loss_operands(args, &["x1", "x2"])?;
        let eps = args.float("eps").or_shape()?;
        let dim = args.int("dim").or_shape()?;
        let lifted = self.is_lifted();
        let mut graph = Graph::new(&mut self.g, scope);
        let a = loss_term(&mut graph, lifted, target, &operands[0], &x, "x1")?;
        let b = loss_term(&mut graph, lifted, target, &operands[1], &x, "x2")?;
        // Both broadcast to one shape first, as torch's `expand_outplace`.
        let zero = zero_like(&mut graph, &x)?;
        let zero = graph.apply(Fn::Add, &[&zero, &a]).or_shape()?;
        let zero = graph.apply(Fn::Add, &[&zero, &b]).or_shape()?;
        let zero = graph.apply(Fn::Less, &[&zero, &zero]).or_shape()?;
        let zero = graph.apply(Fn::Float, &[&zero]).or_shape()?;
        let Term::Value(shape) = &zero else {
            return Err(arg_error(format!("{target} of numbers alone")));
        };
        let rank = shape.shape().len() + usize::from(!lifted);
        let axis = frame_axis(lifted, dim, rank.max(1))?;
        let mut unit = |v: &Term| -> Result<Term, OnnxError> {
            let v = graph.apply(Fn::Add, &[v, &zero]).or_shape()?;
            let square = graph.apply(Fn::Mul, &[&v, &v]).or_shape()?;
            let norm = reduce(&mut graph, "ReduceSum", &square, &[axis], true)?;
            let norm = graph.apply(Fn::Sqrt, &[&norm]).or_shape()?;
            let small = graph
                .apply(Fn::Less, &[&norm, &Term::Number(eps)])
                .or_shape()?;
            let norm = graph
                .apply(Fn::Where, &[&small, &Term::Number(eps), &norm])
                .or_shape()?;
            graph.apply(Fn::Div, &[&v, &norm]).or_shape()
        };
        let (a, b) = (unit(&a)?, unit(&b)?);
        let product = graph.apply(Fn::Mul, &[&a, &b]).or_shape()?;
        let y = reduce(&mut graph, "ReduceSum", &product, &[axis], false)?;
        self.bind_loss(node, scope, y)
    }
}

/// Torch dimension `dim` of a rank-`rank` tensor as an axis of the frame: its own when
/// `lifted`, else per sample (the batch refused as mixing samples).
fn frame_axis(lifted: bool, dim: i64, rank: usize) -> Result<usize, OnnxError> {
    if lifted {
        super::super::tensor::axis(dim, rank)
    } else {
        super::per_sample_axis(dim, rank)
    }
}

/// `operand` as a term of `graph`, which must meet activation `like` of the frame (see
/// [`framed_constant`]).
fn loss_term(
    graph: &mut Graph<'_>,
    lifted: bool,
    target: &str,
    operand: &Operand,
    like: &Value,
    name: &str,
) -> Result<Term, OnnxError> {
    let c = match operand {
        Operand::Activation(v) => return Ok(Term::Value(v.clone())),
        Operand::Constant(c) => c,
    };
    let c = framed_constant(lifted, target, c, like, name, graph.scope())?;
    super::decompose::shared(graph, &c, false).or_shape()
}

/// Constant `c` laid out to meet activation `like` of the frame: as it is in a static
/// program (`lifted`); under a dynamic batch without the leading 1 of a `[1, …]` constant
/// of the batched rank, and refused when it has a size along the batch.
fn framed_constant(
    lifted: bool,
    target: &str,
    c: &eval::Tensor,
    like: &Value,
    name: &str,
    scope: &str,
) -> Result<eval::Tensor, OnnxError> {
    let rows = like.shape().len();
    match c.dims() {
        _ if lifted => Ok(c.clone()),
        dims if dims.len() <= rows => Ok(c.clone()),
        [1, per_sample @ ..] if per_sample.len() == rows => {
            let dims: Vec<i64> = per_sample.iter().map(|&d| d as i64).collect();
            c.reshape(&dims).or_shape()
        }
        dims => Err(emit::constant_unbroadcast(target, scope, like, name, dims)),
    }
}

/// That a margin loss's input of rank `rank` is what torch takes, a vector or a matrix.
fn vector_or_matrix(op: &str, rank: usize) -> Result<(), OnnxError> {
    if rank > 2 {
        return Err(arg_error(format!(
            "{op} of a rank-{rank} input; torch takes a vector or a matrix"
        )));
    }
    Ok(())
}

/// A margin loss over classes: `h` summed over `axes` (the reduced axes kept when
/// `summed.1`) and divided by the number of `classes`, per sample; then reduced as `how`
/// says ([`reduced`]).
fn class_mean(
    graph: &mut Graph<'_>,
    args: &Args<'_>,
    h: &Term,
    summed: (&[usize], bool),
    classes: u64,
    how: LossReduction,
    lifted: bool,
) -> Result<Term, OnnxError> {
    let (axes, keep) = summed;
    let per_sample = reduce(graph, "ReduceSum", h, axes, keep)?;
    let per_sample = graph
        .apply(Fn::Div, &[&per_sample, &Term::Number(classes as f64)])
        .or_shape()?;
    reduced(graph, args, &per_sample, how, lifted)
}

/// `op` of `x` over `axes` (a number is its own reduction).
fn reduce(
    graph: &mut Graph<'_>,
    op: &'static str,
    x: &Term,
    axes: &[usize],
    keep: bool,
) -> Result<Term, OnnxError> {
    match x {
        Term::Value(v) if !v.shape().is_empty() => {
            let scope = graph.scope().to_owned();
            graph.g.reduce(op, &scope, v, axes, keep).map(Term::Value)
        }
        other => Ok(other.clone()),
    }
}

/// The sum of every entry of `x` (a static program's, `lifted`); under a dynamic batch it
/// is refused as mixing samples.
fn every(
    graph: &mut Graph<'_>,
    args: &Args<'_>,
    x: &Term,
    lifted: bool,
) -> Result<Term, OnnxError> {
    let Term::Value(v) = x else {
        return Ok(x.clone());
    };
    if !lifted {
        return Err(arg_error(format!(
            "{} sums every entry, the batch included, which mixes samples; use reduction='none' or export the program at a fixed batch (`--batch static`)",
            aten_name(args.0)
        )));
    }
    let axes: Vec<usize> = (0..v.shape().len()).collect();
    reduce(graph, "ReduceSum", x, &axes, false)
}

/// `x` reduced as torch's `apply_loss_reduction`: as it is, the mean or the sum of every
/// entry.
fn reduced(
    graph: &mut Graph<'_>,
    args: &Args<'_>,
    x: &Term,
    how: LossReduction,
    lifted: bool,
) -> Result<Term, OnnxError> {
    match how {
        LossReduction::None => Ok(x.clone()),
        LossReduction::Sum => every(graph, args, x, lifted),
        LossReduction::Mean => {
            let count = match x {
                Term::Value(v) => v.shape().iter().product::<u64>(),
                Term::Number(_) => 1,
            };
            let sum = every(graph, args, x, lifted)?;
            graph
                .apply(Fn::Div, &[&sum, &Term::Number(count as f64)])
                .or_shape()
        }
    }
}

/// 0 on every entry of activation `x` (`x < x` is false, NaN and infinities included).
fn zero_like(graph: &mut Graph<'_>, x: &Value) -> Result<Term, OnnxError> {
    let x = Term::Value(x.clone());
    let never = graph.apply(Fn::Less, &[&x, &x]).or_shape()?;
    graph.apply(Fn::Float, &[&never]).or_shape()
}

/// `clamp_min(x, 0)`: 0 where `x < 0`, NaN kept.
fn clamp_min_zero(graph: &mut Graph<'_>, x: &Term) -> Result<Term, OnnxError> {
    let zero = Term::Number(0.0);
    let below = graph.apply(Fn::Less, &[x, &zero]).or_shape()?;
    graph.apply(Fn::Where, &[&below, &zero, x]).or_shape()
}

/// `log_softmax(x)` along `axis`: `x − m − log Σ exp(x − m)`, `m` the maximum.
fn log_softmax(
    g: &mut crate::graph::GraphBuilder,
    scope: &str,
    x: &Value,
    axis: usize,
) -> Result<Value, OnnxError> {
    let most = g.reduce("ReduceMax", scope, x, &[axis], true)?;
    let centred = g.sub(scope, x, &most)?;
    let exp = g.unary("Exp", scope, &centred, vec![]);
    let sum = g.reduce("ReduceSum", scope, &exp, &[axis], true)?;
    let log = g.unary("Log", scope, &sum, vec![]);
    g.sub(scope, &centred, &log)
}

/// A constant class-index target's picks ([`Picks`]), as values laid out row-major.
#[derive(Debug, PartialEq)]
struct ClassPicks {
    /// 1 at each position's target class (the input's shape), unless ignored.
    hit: Vec<f64>,
    /// The class weight of each position's pick, 0 where ignored.
    picked: Vec<f64>,
    /// 1 where the position is not ignored.
    kept: Vec<f64>,
}

/// The picks of targets `t` (one per position: the input's sizes `shape` without the
/// class axis `axis`) among `weights.len()` classes weighted `weights`; a target equal
/// to `ignore`, when given, picks nothing. Refused, naming it, when a target is not a class.
fn class_picks(
    t: &[i64],
    shape: &[u64],
    axis: usize,
    weights: &[f32],
    ignore: Option<i64>,
) -> Result<ClassPicks, String> {
    let classes = shape.get(axis).copied().ok_or("has no class axis")?;
    let inner: u64 = shape[axis + 1..].iter().product();
    let mut picks = ClassPicks {
        hit: vec![0.0; shape.iter().product::<u64>() as usize],
        picked: vec![0.0; t.len()],
        kept: vec![0.0; t.len()],
    };
    for (p, &class) in t.iter().enumerate() {
        if Some(class) == ignore {
            continue;
        }
        let Some(w) = usize::try_from(class).ok().and_then(|c| weights.get(c)) else {
            return Err(format!("{class} is not one of its {classes} classes"));
        };
        let (outer, within) = (p as u64 / inner, p as u64 % inner);
        let at = ((outer * classes + class as u64) * inner + within) as usize;
        *picks
            .hit
            .get_mut(at)
            .ok_or("has more entries than the input's positions")? = 1.0;
        picks.picked[p] = f64::from(*w);
        picks.kept[p] = 1.0;
    }
    Ok(picks)
}

/// How many times `multilabel_margin_loss` adds the margin of target class `j` over class
/// `d`, for each sample `n` of rows `t` (`classes` entries each), at `(n·C + j)·C + d`: the
/// classes a row lists before its first negative entry, each as often as listed, over
/// the classes it does not list (ATen's `multilabel_margin_loss_forward_out_frame`).
fn multilabel_factors(t: &[i64], classes: usize) -> Result<Vec<f64>, String> {
    let c = classes.max(1);
    let mut factor = vec![0.0; t.len() * c];
    for (n, row) in t.chunks(c).enumerate() {
        let listed: Vec<usize> = row
            .iter()
            .take_while(|&&j| j >= 0)
            .map(|&j| usize::try_from(j).ok().filter(|&j| j < c))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("row {row:?} names a class outside 0..{c}"))?;
        for &j in &listed {
            for d in (0..c).filter(|d| !listed.contains(d)) {
                factor[(n * c + j) * c + d] += 1.0;
            }
        }
    }
    Ok(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_index_picks_its_class_along_the_class_axis_weighted() {
        // Input [2, 3, 2] (classes on axis 1), targets [2, 2].
        let picks = class_picks(
            &[2, 0, -100, 1],
            &[2, 3, 2],
            1,
            &[0.5, 1.0, 2.0],
            Some(-100),
        )
        .expect("targets are classes");
        let mut hit = vec![0.0; 12];
        for at in [4, 1, 9] {
            hit[at] = 1.0;
        }
        assert_eq!(picks.hit, hit);
        assert_eq!(picks.picked, vec![2.0, 0.5, 0.0, 1.0]);
        assert_eq!(picks.kept, vec![1.0, 1.0, 0.0, 1.0]);
    }

    #[test]
    fn a_target_outside_the_classes_is_refused_naming_it() {
        let e = class_picks(&[3], &[3], 0, &[1.0; 3], Some(-100)).unwrap_err();
        assert!(e.contains("3 is not one of its 3 classes"), "{e}");
    }

    #[test]
    fn multilabel_targets_end_at_the_first_negative_entry_and_repeat() {
        // Classes 1 and 1 again, then the end: class 1 over classes 0 and 2, twice.
        let factor = multilabel_factors(&[1, 1, -1], 3).expect("classes");
        let mut want = vec![0.0; 9];
        want[3] = 2.0;
        want[5] = 2.0;
        assert_eq!(factor, want);
        assert!(multilabel_factors(&[0, 3, -1], 3).is_err());
    }
}
