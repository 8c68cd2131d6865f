//! Products of constants: `bmm`, `baddbmm`, `einsum`, `embedding` lookups and
//! `scaled_dot_product_attention` (its math form: scale, causal or given mask, softmax);
//! the matrix functions of [`crate::linalg`] (determinants, inverses, Cholesky
//! factors, powers, Vandermonde matrices), computed by its programs on numbers.

use super::tensor::{axis, broadcast, element_count, Reduction, Tensor, MAX_CONV_STEPS};
use super::Args;
use crate::linalg;
use crate::program::Argument;
use crate::series::Scalar;
use ckpt_formats::torch::dtype::DType;

/// `einsum` of explicit subscripts (`ij,jk->ik`; without `->`, the letters used once, in
/// alphabetical order); an ellipsis is refused.
fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor, String> {
    let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    if equation.contains("...") {
        return Err("an einsum with an ellipsis is not evaluated".into());
    }
    let (inputs, output) = match equation.split_once("->") {
        Some((i, o)) => (i.to_owned(), o.to_owned()),
        None => {
            let mut once: Vec<char> = equation
                .chars()
                .filter(|c| c.is_ascii_alphabetic())
                .filter(|c| equation.matches(*c).count() == 1)
                .collect();
            once.sort_unstable();
            (equation.clone(), once.into_iter().collect())
        }
    };
    let terms: Vec<Vec<char>> = inputs.split(',').map(|t| t.chars().collect()).collect();
    if terms.len() != operands.len() {
        return Err(format!(
            "einsum `{equation}` of {} operands",
            operands.len()
        ));
    }
    let mut letters: Vec<char> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    for (term, t) in terms.iter().zip(operands) {
        if term.len() != t.rank() {
            return Err(format!(
                "einsum term `{}` of a tensor {:?}",
                term.iter().collect::<String>(),
                t.dims()
            ));
        }
        for (&c, &d) in term.iter().zip(t.dims()) {
            match letters.iter().position(|&l| l == c) {
                Some(i) if sizes[i] == d || d == 1 => {}
                Some(i) if sizes[i] == 1 => sizes[i] = d,
                Some(_) => return Err(format!("einsum letter `{c}` of two sizes")),
                None => {
                    letters.push(c);
                    sizes.push(d);
                }
            }
        }
    }
    let out: Vec<usize> = output
        .chars()
        .map(|c| {
            letters
                .iter()
                .position(|&l| l == c)
                .ok_or_else(|| format!("einsum output letter `{c}` is not an input's"))
        })
        .collect::<Result<_, _>>()?;
    sizes
        .iter()
        .try_fold(1u64, |acc, &s| acc.checked_mul(s))
        .filter(|&s| s <= MAX_CONV_STEPS)
        .ok_or("an einsum too large to evaluate at export")?;
    let dims: Vec<u64> = out.iter().map(|&i| sizes[i]).collect();
    let mut y = vec![0f32; element_count(&dims)? as usize];
    let values: Vec<Vec<f32>> = operands.iter().map(Tensor::to_f32).collect();
    let positions: Vec<Vec<(usize, u64)>> = terms
        .iter()
        .zip(operands)
        .map(|(term, t)| {
            let strides = super::tensor::strides(t.dims());
            term.iter()
                .enumerate()
                .map(|(k, c)| {
                    let i = letters.iter().position(|l| l == c).unwrap_or(0);
                    (i, if t.dims()[k] == 1 { 0 } else { strides[k] })
                })
                .collect()
        })
        .collect();
    let out_strides = super::tensor::strides(&dims);
    let mut at = vec![0u64; letters.len()];
    let total: u64 = sizes.iter().product();
    for _ in 0..total {
        let mut product = 1.0f32;
        for (v, pos) in values.iter().zip(&positions) {
            let flat: u64 = pos.iter().map(|&(i, s)| at[i] * s).sum();
            product *= v[flat as usize];
        }
        let o: u64 = out.iter().zip(&out_strides).map(|(&i, s)| at[i] * s).sum();
        y[o as usize] += product;
        for i in (0..letters.len()).rev() {
            at[i] += 1;
            if at[i] < sizes[i] {
                break;
            }
            at[i] = 0;
        }
    }
    Tensor::f32(dims, y)
}

/// `softmax(q·kᵀ·scale + mask)·v`, torch's math attention.
fn attention(a: &Args<'_>) -> Result<Tensor, String> {
    if a.number("dropout_p")? != 0.0 {
        return Err("attention with dropout".into());
    }
    let (q, mut k, mut v) = (a.tensor("query")?, a.tensor("key")?, a.tensor("value")?);
    let (r, rk) = (q.rank(), k.rank());
    if r < 2 || rk < 2 || v.rank() < 2 {
        return Err("attention of tensors below rank 2".into());
    }
    if a.bool("enable_gqa")? && r >= 3 && rk >= 3 {
        let (hq, hk) = (q.dims()[r - 3], k.dims()[rk - 3]);
        if hk == 0 || hq % hk != 0 {
            return Err(format!("grouped attention of {hq} query heads by {hk}"));
        }
        let times = hq / hk;
        k = repeat_heads(&k, times)?;
        v = repeat_heads(&v, times)?;
    }
    let e = q.dims()[r - 1];
    let scale = match a.optional_number("scale")? {
        Some(s) => s as f32,
        None => 1.0 / (e as f32).sqrt(),
    };
    let order: Vec<usize> = (0..k.rank() - 2)
        .chain([k.rank() - 1, k.rank() - 2])
        .collect();
    let scores = Tensor::matmul(&q, &k.permute(&order)?)?;
    let mut scores = scores.map(|s| s * scale);
    let (l, s) = (q.dims()[r - 2], k.dims()[k.rank() - 2]);
    if a.bool("is_causal")? {
        let mask: Vec<f32> = (0..l)
            .flat_map(|i| (0..s).map(move |j| if j <= i { 0.0 } else { f32::NEG_INFINITY }))
            .collect();
        scores = Tensor::zip(&scores, &Tensor::f32(vec![l, s], mask)?, |p, q| p + q, None)?;
    }
    match a.node_arg("attn_mask") {
        None | Some(Argument::None) => {}
        Some(_) => {
            let mask = a.tensor("attn_mask")?;
            // A bool mask (held as 0/1 integers) keeps where true; a float one is added.
            let additive = match mask.values() {
                super::Values::I64(m) => Tensor::f32(
                    mask.dims().to_vec(),
                    m.iter()
                        .map(|&b| if b != 0 { 0.0 } else { f32::NEG_INFINITY })
                        .collect(),
                )?,
                super::Values::F32(_) => mask,
            };
            scores = Tensor::zip(&scores, &additive, |p, q| p + q, None)?;
        }
    }
    let at = scores.rank() - 1;
    let high = scores.reduce(&[at], true, Reduction::Max)?;
    let e = Tensor::zip(&scores, &high, |p, q| (p - q).exp(), None)?;
    let total = e.reduce(&[at], true, Reduction::Sum)?;
    let weights = Tensor::zip(&e, &total, |p, q| p / q, None)?;
    Tensor::matmul(&weights, &v)
}

/// Each head (axis −3) repeated `times` in place.
fn repeat_heads(x: &Tensor, times: u64) -> Result<Tensor, String> {
    let at = x.rank() - 3;
    let mut lifted: Vec<i64> = x.dims().iter().map(|&s| s as i64).collect();
    lifted.insert(at + 1, 1);
    let mut expanded = x.dims().to_vec();
    expanded.insert(at + 1, times);
    let mut merged: Vec<i64> = x.dims().iter().map(|&s| s as i64).collect();
    merged[at] *= times as i64;
    x.reshape(&lifted)?.expand(&expanded)?.reshape(&merged)
}

/// The float32 values of matrix argument `name` of `op`, with the sizes of its matrices
/// (square ones when `square`).
fn matrices(
    a: &Args<'_>,
    op: &str,
    name: &str,
    square: bool,
) -> Result<(Tensor, [usize; 2]), String> {
    let x = a.tensor(name)?;
    if matches!(x.values(), super::Values::I64(_)) {
        return Err(format!(
            "{op} of an integer tensor (torch takes floating ones)"
        ));
    }
    let (rows, cols) = linalg::matrix_sizes(op, x.dims(), square)?;
    Ok((x, [rows, cols]))
}

/// Function `f` of every matrix of `x` (`rows`×`cols` in its last two dimensions): one
/// tensor per [`linalg::Function::forms`], the matrix dimensions replaced by the form's.
fn matrix_function(
    x: &Tensor,
    [rows, cols]: [usize; 2],
    f: linalg::Function,
    options: linalg::Options,
) -> Result<Vec<Tensor>, String> {
    let values = x.to_f32();
    let lead = &x.dims()[..x.rank() - 2];
    let count = element_count(lead)? as usize;
    let forms = f.forms(rows, cols, options);
    let mut outputs: Vec<Vec<f64>> = vec![Vec::new(); forms.len()];
    let size = rows * cols;
    for b in 0..count {
        let m: Vec<f64> = values[b * size..(b + 1) * size]
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        // What of a singular matrix only torch's LAPACK rounding decides.
        let from_rounding = match f {
            linalg::Function::Slogdet | linalg::Function::Logdet => Some("log-determinant"),
            linalg::Function::Inverse | linalg::Function::InverseEx => Some("inverse"),
            linalg::Function::LuFactorEx => Some("`info`"),
            linalg::Function::Cond => Some("condition number"),
            // rcond 1e-15 inverts a zero singular value's rounding noise.
            linalg::Function::Pinverse => Some("pseudo-inverse"),
            _ => None,
        };
        let householder = matches!(f, linalg::Function::Geqrf | linalg::Function::Qr);
        if householder && m.iter().any(|v| !v.is_finite()) {
            return Err(format!(
                "matrix {b} has an infinite or NaN entry: torch's QR of it is what its LAPACK kernel's scaled norms make of those, which ckpt does not reproduce"
            ));
        }
        if let Some(what) = from_rounding {
            if linalg::singular_in_float32(&m, [rows, cols])? {
                return Err(format!(
                    "matrix {b} is singular to float32 precision: torch's {what} of it is its LAPACK kernel's rounding (or an error), which ckpt does not reproduce"
                ));
            }
        }
        let outs = linalg::apply(&mut Scalar, f, options, &m, [rows, cols])?;
        for (out, entries) in outputs.iter_mut().zip(outs) {
            out.extend(entries);
        }
    }
    forms
        .iter()
        .zip(outputs)
        .map(|(form, entries)| {
            let mut dims = lead.to_vec();
            dims.extend(form.dims.iter().map(|&d| d as u64));
            match form.dtype {
                DType::Float32 => Tensor::f32(dims, entries.iter().map(|&v| v as f32).collect()),
                _ => Tensor::i64(dims, entries.iter().map(|&v| v as i64).collect()),
            }
        })
        .collect()
}

/// `linalg_matrix_power(self, n)` by torch's steps ([`linalg::power_steps`]).
fn matrix_power(a: &Args<'_>, op: &str) -> Result<Tensor, String> {
    let (x, [order, _]) = matrices(a, op, "self", true)?;
    let power = a.int("n")?;
    if power == 0 {
        let values = x.to_f32();
        let identity: Vec<f32> = (0..values.len())
            .map(|at| {
                let k = at % (order * order).max(1);
                if k / order == k % order {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        return Tensor::f32(x.dims().to_vec(), identity);
    }
    let base = if power < 0 {
        matrix_function(
            &x,
            [order, order],
            linalg::Function::Inverse,
            linalg::Options::default(),
        )?
        .swap_remove(0)
    } else {
        x
    };
    let (mut z, mut result): (Tensor, Option<Tensor>) = (base.clone(), None);
    for step in linalg::power_steps(power) {
        match step {
            linalg::Step::Square => z = Tensor::matmul(&z, &z)?,
            linalg::Step::Multiply => {
                result = Some(match result {
                    Some(r) => Tensor::matmul(&r, &z)?,
                    None => z.clone(),
                })
            }
            linalg::Step::TimesBase => {
                let r = result.ok_or("a power step before its first product")?;
                result = Some(Tensor::matmul(&r, &base)?);
            }
        }
    }
    result.ok_or_else(|| "a matrix power with no product".into())
}

/// `linalg_vander(x, *, N)`: the columns of [`linalg::vander`] along a new last dimension.
fn vander(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("x")?;
    if x.rank() == 0 || matches!(x.values(), super::Values::I64(_)) {
        return Err("vander of a 0-d or integer tensor".into());
    }
    let columns = match a.optional_int("N")? {
        Some(n) => u64::try_from(n).map_err(|_| format!("vander with N = {n}"))?,
        None => x.dims()[x.rank() - 1],
    };
    let mut values = Vec::new();
    for v in x.to_f32() {
        let row = linalg::vander(&mut Scalar, &f64::from(v), columns)?;
        values.extend(row.iter().map(|&c| c as f32));
    }
    let mut dims = x.dims().to_vec();
    dims.push(columns);
    Tensor::f32(dims, values)
}

/// The ops of this file, or `None` for another op.
pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    if let Some((input, f)) = linalg::function(op) {
        return Some((|| {
            let (x, sizes) = matrices(a, op, input, f.square())?;
            let options = linalg::Options::read(f, &crate::args::Args(a.node))?;
            matrix_function(&x, sizes, f, options)
        })());
    }
    let result = match op {
        "linalg_matrix_power.default" | "matrix_power.default" => matrix_power(a, op),
        "linalg_vander.default" => vander(a),
        "bmm.default" => (|| {
            let (x, y) = (a.tensor("self")?, a.tensor("mat2")?);
            if x.rank() != 3 || y.rank() != 3 || x.dims()[0] != y.dims()[0] {
                return Err(format!("bmm of {:?} and {:?}", x.dims(), y.dims()));
            }
            Tensor::matmul(&x, &y)
        })(),
        "baddbmm.default" => (|| {
            let (x, y) = (a.tensor("batch1")?, a.tensor("batch2")?);
            if x.rank() != 3 || y.rank() != 3 {
                return Err(format!("baddbmm of {:?} and {:?}", x.dims(), y.dims()));
            }
            let (beta, alpha) = (a.number("beta")? as f32, a.number("alpha")? as f32);
            let product = Tensor::matmul(&x, &y)?.map(|p| p * alpha);
            let base = a.tensor("self")?;
            broadcast(&[base.dims(), product.dims()])?;
            if beta == 0.0 {
                // torch ignores `self` (NaN included) when beta is 0.
                let zero = base.map(|_| 0.0);
                return Tensor::zip(&zero, &product, |p, q| p + q, None);
            }
            Tensor::zip(&base.map(|b| b * beta), &product, |p, q| p + q, None)
        })(),
        "einsum.default" => (|| {
            let equation = match a.node_arg("equation") {
                Some(Argument::String(e)) => e.clone(),
                other => return Err(Args::wrong("equation", "a string", other)),
            };
            einsum(&equation, &a.tensors("tensors")?)
        })(),
        "embedding.default" => (|| {
            let table = a.tensor("weight")?;
            if table.rank() != 2 {
                return Err(format!("an embedding table of {:?}", table.dims()));
            }
            let ids = a.tensor("indices")?;
            if ids.to_i64()?.iter().any(|&i| i < 0) {
                return Err("a negative embedding index".into());
            }
            table.index_axis(axis(0, 2)?, &ids)
        })(),
        "scaled_dot_product_attention.default" => attention(a),
        _ => return None,
    };
    Some(result.map(|t| vec![t]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn einsum_contracts_and_transposes() {
        let x = Tensor::f32(vec![2, 3], vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let y = Tensor::f32(vec![3], vec![1., 0., 1.]).unwrap();
        assert_eq!(
            einsum("ij,j->i", &[x.clone(), y]).unwrap().to_f32(),
            [4., 10.]
        );
        let t = einsum("ij->ji", std::slice::from_ref(&x)).unwrap();
        assert_eq!(t.dims(), [3, 2]);
        assert_eq!(
            einsum(
                "ii",
                &[Tensor::f32(vec![2, 2], vec![1., 2., 3., 4.]).unwrap()]
            )
            .unwrap()
            .to_f32(),
            [5.]
        );
        assert!(einsum("...i->i", &[x]).is_err());
    }
}
