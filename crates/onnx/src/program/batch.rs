//! The batch dimension of an exported program, and sizes in terms of it.
//!
//! The program's user input fixes what "the batch" is: its first size, either a symbol
//! (`Dim("batch")` was declared; torch writes `Symbol('s77', …)`) or a literal (no dynamic
//! batch was declared: the example's batch size was traced in). With a symbol, an
//! activation's sizes may carry the batch on any one dimension, times a constant
//! (`Mul(Integer(4), Symbol('s77', …))`); with a literal it must stay the first size. Every
//! other size must be a literal. The exported graph's batch is a named `dim_param` either
//! way.

use std::fmt;

use ckpt_aten::program::{symbol_name, SymInt};

use super::tensor::Size;

/// The most elements one sample of an activation may have (2^40): far beyond any real
/// model, and small enough that shape arithmetic on per-sample sizes never overflows.
pub const MAX_SAMPLE_ELEMENTS: u64 = 1 << 40;

/// What the batch is in the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchDim {
    /// A declared dynamic dimension: the sympy expression torch wrote for it.
    Symbol(String),
    /// No dynamic batch declared: the example's batch size.
    Traced(u64),
    /// No batch (`--batch static`): every size is the literal the program records, and
    /// no dimension is the batch.
    Static,
}

impl fmt::Display for BatchDim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchDim::Symbol(expr) => write!(f, "the dynamic dimension {}", symbol_name(expr)),
            BatchDim::Traced(n) => write!(f, "the traced batch size {n}"),
            BatchDim::Static => write!(f, "no batch (every size static)"),
        }
    }
}

impl BatchDim {
    /// The batch of an input whose sizes are `sizes`.
    pub fn of_input(sizes: &[SymInt]) -> Result<BatchDim, String> {
        match sizes.first() {
            Some(SymInt::Expr(expr)) => Ok(BatchDim::Symbol(expr.clone())),
            Some(SymInt::Int(n)) if *n > 0 => Ok(BatchDim::Traced(*n as u64)),
            Some(other) => Err(format!("its first size {other:?} is not a batch size")),
            None => Err("it is a scalar, with no batch dimension".into()),
        }
    }

    /// The constant `k` when a size is this batch times `k` (`Mul(Integer(4), Symbol('s77',
    /// …))` is 4·N; the batch itself is 1·N); `None` for any other size, and for every size
    /// at a traced batch (where `8` could be 4·N or 8) and in a static program (no batch).
    pub fn factor(&self, size: &SymInt) -> Option<u64> {
        match self {
            BatchDim::Symbol(batch) => batch_factor(batch, size),
            BatchDim::Traced(_) | BatchDim::Static => None,
        }
    }

    /// Whether a size is this batch.
    pub fn is(&self, size: &SymInt) -> bool {
        match (self, size) {
            (BatchDim::Symbol(want), SymInt::Expr(got)) => want == got,
            (BatchDim::Traced(want), SymInt::Int(got)) => *got >= 0 && *got as u64 == *want,
            _ => false,
        }
    }

    /// The per-sample shape of a tensor of `sizes`: its first size must be the batch and
    /// every other size a literal (with [`BatchDim::Static`], every size is a literal and
    /// the whole shape is returned). The error says which rule was broken.
    pub fn per_sample(&self, sizes: &[SymInt]) -> Result<Vec<u64>, String> {
        if *self == BatchDim::Static {
            return static_shape(sizes);
        }
        let Some((first, rest)) = sizes.split_first() else {
            return Err(format!(
                "it is a scalar, but {self} must stay its first dimension"
            ));
        };
        if !self.is(first) {
            return Err(format!(
                "its sizes {} do not keep {self} as the first dimension, so the graph only works at one batch size",
                show(sizes)
            ));
        }
        let shape = rest
            .iter()
            .map(|s| match s {
                SymInt::Int(n) if *n >= 0 => Ok(*n as u64),
                _ => Err(format!(
                    "its sizes {} have a dynamic dimension other than the batch; ATC needs every other dimension fixed",
                    show(sizes)
                )),
            })
            .collect::<Result<Vec<u64>, String>>()?;
        let elements = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
        match elements {
            Some(n) if n <= MAX_SAMPLE_ELEMENTS => Ok(shape),
            _ => Err(format!(
                "its sizes {} exceed {MAX_SAMPLE_ELEMENTS} elements per sample",
                show(sizes)
            )),
        }
    }
}

impl BatchDim {
    /// Sizes in terms of the batch, for tensors whose batch may be on any dimension or
    /// folded into one (`Mul(Integer(4), Symbol('s77', …))` is 4·N). Only a declared
    /// dynamic batch can be followed there: at a traced batch, `8` could be 4·N or 8, so
    /// there the batch must stay alone on the first dimension.
    pub fn sizes(&self, sizes: &[SymInt]) -> Result<Vec<Size>, String> {
        let batch = match self {
            BatchDim::Symbol(batch) => batch,
            BatchDim::Static => {
                return Ok(static_shape(sizes)?.into_iter().map(Size::fixed).collect())
            }
            BatchDim::Traced(_) => {
                let rest = self.per_sample(sizes).map_err(|e| {
                    format!("{e}; to move or fold the batch, declare the batch dynamic when exporting (`dynamic_shapes` with `Dim(\"batch\")`)")
                })?;
                return Ok(std::iter::once(Size::batch(1))
                    .chain(rest.into_iter().map(Size::fixed))
                    .collect());
            }
        };
        let parsed = sizes
            .iter()
            .map(|s| match s {
                SymInt::Int(n) if *n >= 0 => Some(Size::fixed(*n as u64)),
                _ => batch_factor(batch, s).map(Size::batch),
            })
            .collect::<Option<Vec<Size>>>()
            .ok_or_else(|| {
                format!(
                    "its sizes {} are not the batch times constants",
                    show(sizes)
                )
            })?;
        let elements = parsed.iter().try_fold(1u64, |n, s| n.checked_mul(s.count));
        match elements {
            Some(n) if n <= MAX_SAMPLE_ELEMENTS => Ok(parsed),
            _ => Err(format!(
                "its sizes {} exceed {MAX_SAMPLE_ELEMENTS} elements per sample",
                show(sizes)
            )),
        }
    }
}

/// The constant `k` when `size` is the symbol `batch` times `k`, in sympy's form.
fn batch_factor(batch: &str, size: &SymInt) -> Option<u64> {
    match size {
        SymInt::Expr(e) if e == batch => Some(1),
        SymInt::Expr(e) => e
            .strip_prefix("Mul(Integer(")
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(|rest| rest.split_once("), "))
            .filter(|(_, sym)| *sym == batch)
            .and_then(|(count, _)| count.parse().ok())
            .filter(|&count| count > 0),
        _ => None,
    }
}

/// The sizes of a tensor of a static program: literals, with at most
/// [`MAX_SAMPLE_ELEMENTS`] elements in all.
fn static_shape(sizes: &[SymInt]) -> Result<Vec<u64>, String> {
    let shape = sizes
        .iter()
        .map(|s| match s {
            SymInt::Int(n) if *n >= 0 => Ok(*n as u64),
            _ => Err(format!(
                "its sizes {} have a dynamic dimension, which a static export (`--batch static`) cannot fix; export the program without `dynamic_shapes`, or use `--batch dynamic`",
                show(sizes)
            )),
        })
        .collect::<Result<Vec<u64>, String>>()?;
    match shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) {
        Some(n) if n <= MAX_SAMPLE_ELEMENTS => Ok(shape),
        _ => Err(format!(
            "its sizes {} exceed {MAX_SAMPLE_ELEMENTS} elements",
            show(sizes)
        )),
    }
}

/// Sizes as torch prints them: `[s77, 3, 224, 224]`.
pub fn show(sizes: &[SymInt]) -> String {
    let items: Vec<String> = sizes
        .iter()
        .map(|s| match s {
            SymInt::Int(n) => n.to_string(),
            SymInt::Expr(e) => symbol_name(e).to_owned(),
            SymInt::Name(n) => n.clone(),
        })
        .collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "Symbol('s77', positive=True, integer=True)";

    #[test]
    fn symbolic_and_traced_batches() {
        let dynamic = BatchDim::of_input(&[SymInt::Expr(S.into()), SymInt::Int(3)]).unwrap();
        assert_eq!(dynamic, BatchDim::Symbol(S.into()));
        assert_eq!(
            dynamic.per_sample(&[SymInt::Expr(S.into()), SymInt::Int(8), SymInt::Int(4)]),
            Ok(vec![8, 4])
        );
        let err = dynamic
            .per_sample(&[SymInt::Int(2), SymInt::Int(8)])
            .unwrap_err();
        assert!(
            err.contains("[2, 8] do not keep the dynamic dimension s77"),
            "{err}"
        );
        let other = SymInt::Expr("2*s77".into());
        assert!(dynamic
            .per_sample(&[SymInt::Expr(S.into()), other])
            .is_err());

        let traced = BatchDim::of_input(&[SymInt::Int(2), SymInt::Int(3)]).unwrap();
        assert_eq!(traced, BatchDim::Traced(2));
        assert_eq!(
            traced.per_sample(&[SymInt::Int(2), SymInt::Int(5)]),
            Ok(vec![5])
        );
        assert!(traced
            .per_sample(&[SymInt::Int(4), SymInt::Int(5)])
            .is_err());
        assert!(traced.per_sample(&[]).is_err());
        assert!(BatchDim::of_input(&[]).is_err());
        let folded = SymInt::Expr(format!("Mul(Integer(4), {S})"));
        assert_eq!(dynamic.factor(&folded), Some(4));
        assert_eq!(dynamic.factor(&SymInt::Expr(S.into())), Some(1));
        assert_eq!(dynamic.factor(&SymInt::Int(4)), None);
        assert_eq!(
            dynamic.factor(&SymInt::Expr(format!("Mul(Integer(0), {S})"))),
            None
        );
        assert_eq!(traced.factor(&SymInt::Int(2)), None);
        assert_eq!(
            dynamic.sizes(&[SymInt::Int(10), folded, SymInt::Expr(S.into())]),
            Ok(vec![Size::fixed(10), Size::batch(4), Size::batch(1)])
        );
        assert!(dynamic.sizes(&[SymInt::Expr("Mul(2, s)".into())]).is_err());
        assert!(traced
            .sizes(&[SymInt::Int(3), SymInt::Int(2)])
            .unwrap_err()
            .contains("dynamic_shapes"));
        assert_eq!(
            traced.sizes(&[SymInt::Int(2), SymInt::Int(5)]),
            Ok(vec![Size::batch(1), Size::fixed(5)])
        );
        let huge = [SymInt::Int(2), SymInt::Int(1 << 30), SymInt::Int(1 << 30)];
        assert!(traced.per_sample(&huge).unwrap_err().contains("exceed"));
    }
}
