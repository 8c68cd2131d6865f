//! What the user says about a trace's inputs (`--input-shape`, a batch plan's
//! `input-shape`): per-sample sizes, fixed or named dynamic dimensions, and a dtype, in the
//! one syntax `NAME:DIMS[:DTYPE]` both read.

use std::collections::HashMap;
use std::str::FromStr;

use ckpt_formats::torch::dtype::DType;

use super::ScriptError;

/// An input's per-sample shape and dtype as the user gives it (`ids:128:int64`, or
/// `ids:seq<=512:int64` for a dynamic sequence length). `name` is the forward's parameter
/// it is for; a model with one input may leave it out. `dtype` defaults to the traced one,
/// else float32.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GivenInput {
    /// The forward's parameter it is for (optional for a model with one input).
    pub name: Option<String>,
    /// Per-sample sizes (without the batch).
    pub shape: Vec<GivenSize>,
    /// Element type (default: the traced one, else float32).
    pub dtype: Option<DType>,
}

/// One per-sample size of a [`GivenInput`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GivenSize {
    /// A fixed size, which a trace must have recorded.
    Fixed(u64),
    /// A dynamic dimension named `symbol` (inputs that share the name share the size), at
    /// most `max` when given. The trace is converted at two sizes of it and the two
    /// programs must lower to one graph but for what scales with it.
    Dynamic {
        /// The dimension's name, also the ONNX `dim_param`.
        symbol: String,
        /// Its largest size, when given (`seq<=512`).
        max: Option<u64>,
    },
}

impl GivenInput {
    /// An unnamed input of fixed `sizes` and the default dtype (`3,224,224`).
    pub fn fixed(sizes: &[u64]) -> GivenInput {
        GivenInput {
            name: None,
            shape: sizes.iter().map(|&n| GivenSize::Fixed(n)).collect(),
            dtype: None,
        }
    }

    /// The sizes when every one is fixed.
    pub fn fixed_sizes(&self) -> Option<Vec<u64>> {
        self.shape
            .iter()
            .map(|size| match size {
                GivenSize::Fixed(n) => Some(*n),
                GivenSize::Dynamic { .. } => None,
            })
            .collect()
    }

    /// The sizes with each dynamic dimension at its value in `values`.
    pub(super) fn at(&self, values: &HashMap<String, u64>) -> Result<Vec<u64>, ScriptError> {
        self.shape
            .iter()
            .map(|size| match size {
                GivenSize::Fixed(n) => Ok(*n),
                GivenSize::Dynamic { symbol, .. } => values.get(symbol).copied().ok_or_else(|| {
                    ScriptError::archive(format!("the dynamic dimension `{symbol}` has no size"))
                }),
            })
            .collect()
    }

    /// Whether these sizes describe a traced input's `recorded` ones: the same rank, and
    /// the same size wherever the size is fixed.
    pub(super) fn fits(&self, recorded: &[u64]) -> bool {
        self.shape.len() == recorded.len()
            && self
                .shape
                .iter()
                .zip(recorded)
                .all(|(size, &r)| match size {
                    GivenSize::Fixed(n) => *n == r,
                    GivenSize::Dynamic { .. } => true,
                })
    }
}

/// The per-sample image shape of a torchvision checkpoint's export when none is given
/// (ImageNet's).
pub const DEFAULT_IMAGE_SHAPE: [u64; 3] = [3, 224, 224];

/// The `C,H,W` a torchvision checkpoint's export takes from `given`: none (the default), or
/// one unnamed float32 input of three fixed sizes.
pub fn image_shape(given: &[GivenInput]) -> Result<[u64; 3], String> {
    match given {
        [] => Ok(DEFAULT_IMAGE_SHAPE),
        [one @ GivenInput {
            name: None,
            dtype: None | Some(DType::Float32),
            ..
        }] => one
            .fixed_sizes()
            .and_then(|sizes| <[u64; 3]>::try_from(sizes).ok())
            .ok_or_else(|| {
                "the input shape of a torchvision checkpoint is three fixed sizes C,H,W".into()
            }),
        _ => Err("a torchvision checkpoint takes one input shape C,H,W".into()),
    }
}

impl FromStr for GivenInput {
    type Err = String;

    /// `C,H,W`, or `NAME:DIMS[:DTYPE]` (`ids:128:int64`), or `DIMS:DTYPE`: a per-sample
    /// shape of positive sizes or dynamic ones (`seq<=512`), the input it is for, its torch
    /// dtype.
    fn from_str(text: &str) -> Result<GivenInput, String> {
        let dims = |part: &str| -> Option<Vec<GivenSize>> {
            part.split(',').map(|d| given_size(d.trim())).collect()
        };
        let dtype = |part: &str| {
            DType::from_name(part.trim()).ok_or_else(|| {
                format!("`{part}` in `{text}` is not a torch dtype (float32, int64, int32, bool)")
            })
        };
        let wrong = || {
            format!("`{text}` is not C,H,W or NAME:DIMS[:DTYPE] with positive sizes or dynamic ones (`seq<=512`)")
        };
        let parts: Vec<&str> = text.split(':').collect();
        let (name, shape, dtype) = match parts.as_slice() {
            [shape] => (None, dims(shape).ok_or_else(wrong)?, None),
            [shape, ty] if dims(shape).is_some() && DType::from_name(ty.trim()).is_some() => {
                (None, dims(shape).ok_or_else(wrong)?, Some(dtype(ty)?))
            }
            [name, shape] => (Some(name), dims(shape).ok_or_else(wrong)?, None),
            [name, shape, ty] => (Some(name), dims(shape).ok_or_else(wrong)?, Some(dtype(ty)?)),
            _ => return Err(wrong()),
        };
        if name.is_some_and(|n| n.trim().is_empty()) {
            return Err(wrong());
        }
        Ok(GivenInput {
            name: name.map(|n| n.trim().to_owned()),
            shape,
            dtype,
        })
    }
}

/// One size: a positive number, or a dynamic dimension `NAME` or `NAME<=MAX` (a name that
/// is not a number, and not `batch`, which is always dynamic).
fn given_size(text: &str) -> Option<GivenSize> {
    if let Ok(n) = text.parse::<u64>() {
        return (n > 0).then_some(GivenSize::Fixed(n));
    }
    let (symbol, max) = match text.split_once("<=") {
        Some((symbol, max)) => (symbol.trim(), Some(max.trim().parse::<u64>().ok()?)),
        None => (text, None),
    };
    let named = symbol
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && symbol
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    (named && symbol != "batch" && max != Some(0)).then(|| GivenSize::Dynamic {
        symbol: symbol.to_owned(),
        max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GivenInput, String> {
        text.parse()
    }

    #[test]
    fn input_shapes_name_the_input_and_its_dtype() {
        let given = |name: Option<&str>, shape: &[u64], dtype: Option<DType>| GivenInput {
            name: name.map(str::to_owned),
            dtype,
            ..GivenInput::fixed(shape)
        };
        assert_eq!(parse("3,224,224"), Ok(given(None, &[3, 224, 224], None)));
        assert_eq!(
            parse("ids:128:int64"),
            Ok(given(Some("ids"), &[128], Some(DType::Int64)))
        );
        assert_eq!(
            parse("mask:128:bool"),
            Ok(given(Some("mask"), &[128], Some(DType::Bool)))
        );
        assert_eq!(parse("x:3,8"), Ok(given(Some("x"), &[3, 8], None)));
        assert_eq!(parse("ids:128"), Ok(given(Some("ids"), &[128], None)));
        assert_eq!(
            parse("16:int32"),
            Ok(given(None, &[16], Some(DType::Int32)))
        );
        assert!(parse("ids:0:int64").is_err());
        assert!(parse("ids:8:words")
            .unwrap_err()
            .contains("not a torch dtype"));
        assert!(parse(":8").is_err());
    }

    #[test]
    fn a_torchvision_image_is_one_unnamed_fixed_c_h_w() {
        assert_eq!(image_shape(&[]), Ok(DEFAULT_IMAGE_SHAPE));
        assert_eq!(
            image_shape(&[GivenInput::fixed(&[1, 28, 28])]),
            Ok([1, 28, 28])
        );
        assert!(image_shape(&[parse("ids:128").unwrap()]).is_err());
        assert!(image_shape(&[GivenInput::fixed(&[3, 8])]).is_err());
        assert!(image_shape(&[parse("3,8,8:int64").unwrap()]).is_err());
    }

    #[test]
    fn a_named_size_is_a_dynamic_dimension_with_an_optional_maximum() {
        let seq = |max| GivenSize::Dynamic {
            symbol: "seq".into(),
            max,
        };
        assert_eq!(
            parse("ids:seq<=512:int64").map(|g| g.shape),
            Ok(vec![seq(Some(512))])
        );
        assert_eq!(
            parse("x:seq,768").map(|g| g.shape),
            Ok(vec![seq(None), GivenSize::Fixed(768)])
        );
        assert_eq!(parse("3,h<=224,224").map(|g| g.fixed_sizes()), Ok(None));
        assert!(image_shape(&[parse("3,h<=224,224").unwrap()]).is_err());
        for bad in [
            "ids:seq<=0",
            "ids:seq<=many",
            "ids:2seq",
            "ids:batch",
            "ids:s-q",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
