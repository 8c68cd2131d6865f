//! The scatter family on constants: `scatter` (of a source or a value), `scatter_add`,
//! `scatter_reduce`, `select_scatter`, `slice_scatter`, `diagonal_scatter`, `masked_scatter`, `index_add`,
//! `index_copy`, `index_fill`, `index_reduce` and `put`, each a
//! [`Plan`] of writes (built by [`crate::scatter`]) folded over `self` in torch's
//! order. The result has `self`'s element type; the source is brought to it as torch's
//! kernels require (`scatter` of a value: the value converted as `fill_` converts it).
//! `max_unpool2d`/`max_unpool3d` write `self` into zeros of the unpooled sizes the same way.
//! Their gathers `take` and `take_along_dim` read `self` at the positions the index
//! names.

use super::pointwise::truncated;
use super::tensor::{Tensor, Values};
use super::Args;
use crate::scatter::{self, Combine, Plan};

pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    let result = match op {
        "scatter.src"
        | "scatter.value"
        | "scatter.reduce"
        | "scatter.value_reduce"
        | "scatter_add.default"
        | "scatter_reduce.two" => scattered(op, a),
        "select_scatter.default" => (|| {
            let (x, src) = (a.tensor("self")?, a.tensor("src")?);
            let plan =
                scatter::select_scatter(x.dims(), src.dims(), a.int("dim")?, a.int("index")?)?;
            apply(&plan, &x, &src, Combine::Replace, true)
        })(),
        "diagonal_scatter.default" => (|| {
            let (x, src) = (a.tensor("self")?, a.tensor("src")?);
            let plan = scatter::diagonal_scatter(
                x.dims(),
                src.dims(),
                a.int("offset")?,
                a.int("dim1")?,
                a.int("dim2")?,
            )?;
            apply(&plan, &x, &src, Combine::Replace, true)
        })(),
        "slice_scatter.default" => (|| {
            let (x, src) = (a.tensor("self")?, a.tensor("src")?);
            let plan = scatter::slice_scatter(
                x.dims(),
                src.dims(),
                a.int("dim")?,
                a.optional_int("start")?,
                a.optional_int("end")?,
                a.int("step")?,
            )?;
            apply(&plan, &x, &src, Combine::Replace, true)
        })(),
        "masked_scatter.default" => (|| {
            let (x, mask, source) = (a.tensor("self")?, a.tensor("mask")?, a.tensor("source")?);
            let truth: Vec<bool> = mask.to_f32().iter().map(|&m| m != 0.0).collect();
            let plan = Plan::masked_scatter(x.dims(), mask.dims(), &truth, source.dims())?;
            apply(&plan, &x, &source, Combine::Replace, true)
        })(),
        "index_add.default"
        | "index_copy.default"
        | "index_reduce.default"
        | "index_fill.int_Scalar"
        | "index_fill.int_Tensor" => indexed(op, a),
        "put.default" => (|| {
            let (x, index, source) = (a.tensor("self")?, a.tensor("index")?, a.tensor("source")?);
            let plan = scatter::put(x.dims(), &index.to_i64()?, source.dims())?;
            let combine = if a.bool("accumulate")? {
                Combine::Sum
            } else {
                refuse_repeated(&plan)?;
                Combine::Replace
            };
            apply(&plan, &x, &source, combine, true)
        })(),
        "max_unpool2d.default" | "max_unpool3d.default" => (|| {
            let (x, indices) = (a.tensor("self")?, a.tensor("indices")?);
            let size: Vec<u64> = a
                .ints("output_size")?
                .iter()
                .map(|&d| u64::try_from(d).map_err(|_| format!("an output size of {d}")))
                .collect::<Result<_, _>>()?;
            let plan = scatter::max_unpool(x.dims(), &indices.to_i64()?, &size)?;
            if plan.repeated().is_some() {
                return Err(scatter::UNPOOL_REPEATED.into());
            }
            let mut dims = x.dims()[..x.rank() - size.len()].to_vec();
            dims.extend(&size);
            let zeros = Tensor::f32(dims, vec![0.0; plan.writes.len()])?;
            apply(&plan, &zeros, &x, Combine::Replace, true)
        })(),
        "take.default" | "take_along_dim.default" => (|| {
            let x = a.tensor("self")?;
            let positions = match (op, a.optional_int("dim")) {
                ("take.default", _) => scatter::taken(x.dims(), &a.tensor("index")?, false)?,
                (_, Ok(Some(dim))) => {
                    scatter::along_dim_positions(x.dims(), &a.tensor("indices")?, dim)?
                }
                _ => scatter::taken(x.dims(), &a.tensor("indices")?, true)?,
            };
            let at: Vec<usize> = positions
                .to_i64()?
                .into_iter()
                .map(|p| p as usize)
                .collect();
            Tensor::new(positions.dims().to_vec(), x.values().take(&at))
        })(),
        _ => return None,
    };
    Some(result.map(|t| vec![t]))
}

/// A plain write whose positions repeat one is refused (torch leaves it undefined).
fn refuse_repeated(plan: &Plan) -> Result<(), String> {
    match plan.repeated() {
        Some(_) => Err(format!(
            "an index that repeats a position: {}",
            scatter::REPEATED
        )),
        None => Ok(()),
    }
}

/// `index_add`, `index_copy`, `index_reduce` and `index_fill` by their index along `dim`.
fn indexed(op: &str, a: &Args<'_>) -> Result<Tensor, String> {
    let (x, index) = (a.tensor("self")?, a.tensor("index")?);
    let (dim, at) = (a.int("dim")?, index.to_i64()?);
    if index.rank() > 1 {
        return Err(format!(
            "an index of sizes {:?} (torch takes a 1-D one)",
            index.dims()
        ));
    }
    if op.starts_with("index_fill") {
        let plan = scatter::index_fill(x.dims(), dim, &at)?;
        let value = a.operand("value")?;
        if value.rank() != 0 {
            return Err(format!("index_fill by a value of sizes {:?}", value.dims()));
        }
        let n = plan.writes.iter().flatten().max().map_or(1, |&s| s + 1);
        let src = value.expand(&[n as u64])?;
        return apply(&plan, &x, &src, Combine::Replace, true);
    }
    let source = a.tensor("source")?;
    let plan = scatter::index_along(x.dims(), dim, &at, source.dims())?;
    match op {
        "index_copy.default" => {
            refuse_repeated(&plan)?;
            apply(&plan, &x, &source, Combine::Replace, true)
        }
        "index_add.default" => {
            let alpha = a.number("alpha")?;
            let scaled = match source.values() {
                Values::F32(v) => Tensor::f32(
                    source.dims().to_vec(),
                    v.iter().map(|&s| s * alpha as f32).collect(),
                )?,
                Values::I64(v) => Tensor::i64(
                    source.dims().to_vec(),
                    v.iter().map(|&s| s.wrapping_mul(alpha as i64)).collect(),
                )?,
            };
            let scaled = if alpha == 1.0 { source } else { scaled };
            apply(&plan, &x, &scaled, Combine::Sum, true)
        }
        _ => {
            let combine = scatter::index_reduce(&a.string("reduce")?)?;
            apply(&plan, &x, &source, combine, a.bool("include_self")?)
        }
    }
}

/// `scatter`, `scatter_add` and `scatter_reduce` by their index along `dim`.
fn scattered(op: &str, a: &Args<'_>) -> Result<Tensor, String> {
    let (x, index) = (a.tensor("self")?, a.tensor("index")?);
    let (src, combine, include_self) = match op {
        "scatter.value" => {
            let value = a.operand("value")?.expand(index.dims())?;
            (value, Combine::Replace, true)
        }
        "scatter.src" => (a.tensor("src")?, Combine::Replace, true),
        "scatter.reduce" => (
            a.tensor("src")?,
            Combine::of_scatter(&a.string("reduce")?)?,
            true,
        ),
        "scatter.value_reduce" => (
            a.operand("value")?.expand(index.dims())?,
            Combine::of_scatter(&a.string("reduce")?)?,
            true,
        ),
        "scatter_add.default" => (a.tensor("src")?, Combine::Sum, true),
        _ => (
            a.tensor("src")?,
            Combine::of_reduce(&a.string("reduce")?)?,
            a.bool("include_self")?,
        ),
    };
    let plan = Plan::scatter(
        x.dims(),
        a.int("dim")?,
        index.dims(),
        &index.to_i64()?,
        src.dims(),
    )?;
    if op == "scatter.src" && plan.repeated().is_some() {
        return Err(format!(
            "a scatter whose index repeats a position: {}",
            scatter::REPEATED
        ));
    }
    apply(&plan, &x, &src, combine, include_self)
}

/// `self` with `plan`'s writes of `src` folded in by `combine`, each position starting
/// from `self`'s entry (`include_self`) or from the combination's identity.
pub(super) fn apply(
    plan: &Plan,
    x: &Tensor,
    src: &Tensor,
    combine: Combine,
    include_self: bool,
) -> Result<Tensor, String> {
    let values = match x.values() {
        Values::I64(own) => {
            let src = truncated(src);
            Values::I64(fold(plan, own, &src, combine, include_self, &Integer)?)
        }
        Values::F32(own) => {
            let src = src.to_f32();
            Values::F32(fold(plan, own, &src, combine, include_self, &Float)?)
        }
    };
    Tensor::new(x.dims().to_vec(), values)
}

/// The arithmetic of one element type, as torch's scatter kernels compute it.
trait Arithmetic<T> {
    fn identity(&self, combine: Combine) -> T;
    fn combine(&self, combine: Combine, acc: T, v: T) -> T;
    /// The mean of `count` entries summing to `sum`.
    fn mean(&self, sum: T, count: usize) -> T;
}

struct Float;
struct Integer;

impl Arithmetic<f32> for Float {
    fn identity(&self, combine: Combine) -> f32 {
        combine.identity()
    }

    fn combine(&self, combine: Combine, acc: f32, v: f32) -> f32 {
        match combine {
            Combine::Replace => v,
            Combine::Sum | Combine::Mean => acc + v,
            Combine::Prod => acc * v,
            Combine::Amax if acc.is_nan() || v.is_nan() => f32::NAN,
            Combine::Amin if acc.is_nan() || v.is_nan() => f32::NAN,
            Combine::Amax => acc.max(v),
            Combine::Amin => acc.min(v),
        }
    }

    fn mean(&self, sum: f32, count: usize) -> f32 {
        sum / count as f32
    }
}

impl Arithmetic<i64> for Integer {
    fn identity(&self, combine: Combine) -> i64 {
        match combine {
            Combine::Amax => i64::MIN,
            Combine::Amin => i64::MAX,
            Combine::Prod => 1,
            _ => 0,
        }
    }

    fn combine(&self, combine: Combine, acc: i64, v: i64) -> i64 {
        match combine {
            Combine::Replace => v,
            Combine::Sum | Combine::Mean => acc.wrapping_add(v),
            Combine::Prod => acc.wrapping_mul(v),
            Combine::Amax => acc.max(v),
            Combine::Amin => acc.min(v),
        }
    }

    fn mean(&self, sum: i64, count: usize) -> i64 {
        sum.div_euclid(count as i64)
    }
}

fn fold<T: Copy>(
    plan: &Plan,
    own: &[T],
    src: &[T],
    combine: Combine,
    include_self: bool,
    arithmetic: &dyn Arithmetic<T>,
) -> Result<Vec<T>, String> {
    let mut out = own.to_vec();
    for ((slot, writes), &mine) in out.iter_mut().zip(&plan.writes).zip(own) {
        if writes.is_empty() {
            continue;
        }
        let mut acc = if include_self || combine == Combine::Replace {
            mine
        } else {
            arithmetic.identity(combine)
        };
        for &s in writes {
            let v = *src
                .get(s)
                .ok_or_else(|| format!("source entry {s} of {}", src.len()))?;
            acc = arithmetic.combine(combine, acc, v);
        }
        if combine == Combine::Mean {
            acc = arithmetic.mean(acc, writes.len() + usize::from(include_self));
        }
        *slot = acc;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_fold_in_order_from_self_or_the_identity() {
        let x = Tensor::f32(vec![3], vec![5.0, 6.0, 7.0]).unwrap();
        let src = Tensor::f32(vec![3], vec![-0.0, -0.0, 2.0]).unwrap();
        let plan = Plan::scatter(&[3], 0, &[3], &[0, 0, 2], &[3]).unwrap();
        let sum = apply(&plan, &x, &src, Combine::Sum, false).unwrap();
        // torch starts from +0.0: a sum of −0.0 is +0.0.
        assert_eq!(sum.to_f32(), vec![0.0, 6.0, 2.0]);
        assert!(sum.to_f32()[0].is_sign_positive());
        let mean = apply(&plan, &x, &src, Combine::Mean, true).unwrap();
        assert_eq!(mean.to_f32(), vec![5.0 / 3.0, 6.0, 4.5]);
    }

    #[test]
    fn integer_means_round_down() {
        let x = Tensor::i64(vec![3], vec![5, 6, 7]).unwrap();
        let src = Tensor::i64(vec![3], vec![-1, -2, 3]).unwrap();
        let plan = Plan::scatter(&[3], 0, &[3], &[0, 0, 2], &[3]).unwrap();
        let mean = apply(&plan, &x, &src, Combine::Mean, true).unwrap();
        assert_eq!(mean.to_i64(), Ok(vec![0, 6, 5]));
        let mean = apply(
            &plan,
            &x,
            &Tensor::i64(vec![3], vec![-1, -2, -3]).unwrap(),
            Combine::Mean,
            false,
        )
        .unwrap();
        assert_eq!(mean.to_i64(), Ok(vec![-2, 6, -3]));
    }

    #[test]
    fn extremes_keep_nan() {
        let x = Tensor::f32(vec![2], vec![1.0, f32::NAN]).unwrap();
        let src = Tensor::f32(vec![2], vec![f32::NAN, 3.0]).unwrap();
        let plan = Plan::scatter(&[2], 0, &[2], &[0, 1], &[2]).unwrap();
        let max = apply(&plan, &x, &src, Combine::Amax, true)
            .unwrap()
            .to_f32();
        assert!(max[0].is_nan() && max[1].is_nan());
    }
}
