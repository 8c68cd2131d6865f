//! Reading a node's arguments by schema name. torch.export leaves out arguments equal to
//! their defaults, so every accessor for an optional argument takes the schema's default.

use crate::aten::program::{Argument, Node};

/// A node's arguments. Errors are plain text; the caller adds where the node is.
pub struct Args<'a>(pub &'a Node);

impl<'a> Args<'a> {
    pub fn get(&self, name: &str) -> Option<&'a Argument> {
        self.0
            .inputs
            .iter()
            .find(|a| a.name == name)
            .map(|a| &a.arg)
    }

    fn wrong(name: &str, want: &str, got: &Argument) -> String {
        format!("argument `{name}` is {}, expected {want}", got.kind())
    }

    /// A required tensor argument's value name.
    pub fn tensor(&self, name: &str) -> Result<&'a str, String> {
        match self.get(name) {
            Some(Argument::Tensor(t)) => Ok(t),
            Some(other) => Err(Self::wrong(name, "a tensor", other)),
            None => Err(format!("argument `{name}` is missing")),
        }
    }

    /// An optional tensor argument (absent or `None` → `None`).
    pub fn optional_tensor(&self, name: &str) -> Result<Option<&'a str>, String> {
        match self.get(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Tensor(t)) => Ok(Some(t)),
            Some(other) => Err(Self::wrong(name, "a tensor or None", other)),
        }
    }

    /// A list of tensors (`cat`'s `tensors`).
    pub fn tensors(&self, name: &str) -> Result<&'a [String], String> {
        match self.get(name) {
            Some(Argument::Tensors(t)) => Ok(t),
            Some(other) => Err(Self::wrong(name, "a list of tensors", other)),
            None => Err(format!("argument `{name}` is missing")),
        }
    }

    /// A list of tensors and `None`s (`index.Tensor`'s `indices`; torch.export writes a
    /// list without `None` as a plain list of tensors).
    pub fn optional_tensors(&self, name: &str) -> Result<Vec<Option<&'a str>>, String> {
        match self.get(name) {
            Some(Argument::OptionalTensors(t)) => Ok(t.iter().map(Option::as_deref).collect()),
            Some(Argument::Tensors(t)) => Ok(t.iter().map(|t| Some(t.as_str())).collect()),
            Some(other) => Err(Self::wrong(name, "a list of tensors and Nones", other)),
            None => Err(format!("argument `{name}` is missing")),
        }
    }

    pub fn int_or(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Int(i)) => Ok(*i),
            Some(other) => Err(Self::wrong(name, "an int", other)),
        }
    }

    /// An optional int (absent or `None` → `None`).
    pub fn optional_int(&self, name: &str) -> Result<Option<i64>, String> {
        match self.get(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Int(i)) => Ok(Some(*i)),
            Some(other) => Err(Self::wrong(name, "an int or None", other)),
        }
    }

    pub fn float_or(&self, name: &str, default: f64) -> Result<f64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Float(f)) => Ok(*f),
            Some(Argument::Int(i)) => Ok(*i as f64),
            Some(other) => Err(Self::wrong(name, "a number", other)),
        }
    }

    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Bool(b)) => Ok(*b),
            Some(other) => Err(Self::wrong(name, "a bool", other)),
        }
    }

    /// An int list of `len` entries; a single entry is repeated (`stride=[2]` → `[2, 2]`),
    /// absent or empty means `default` (repeated the same way; an empty default stays
    /// empty, for the caller to refuse).
    pub fn ints_or(&self, name: &str, len: usize, default: &[i64]) -> Result<Vec<i64>, String> {
        let values = match self.get(name) {
            None | Some(Argument::None) => default.to_vec(),
            Some(Argument::Ints(v)) if v.is_empty() => default.to_vec(),
            Some(Argument::Ints(v)) => v.clone(),
            Some(Argument::Int(i)) => vec![*i],
            Some(other) => return Err(Self::wrong(name, "a list of ints", other)),
        };
        match values.as_slice() {
            [] => Ok(values),
            [one] => Ok(vec![*one; len]),
            v if v.len() == len => Ok(values),
            _ => Err(format!(
                "argument `{name}` has {} entries, expected {len}",
                values.len()
            )),
        }
    }

    /// An optional int list as written (absent or `None` → `None`; no repeat, no default).
    pub fn optional_ints(&self, name: &str) -> Result<Option<&'a [i64]>, String> {
        match self.get(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Ints(v)) => Ok(Some(v)),
            Some(other) => Err(Self::wrong(name, "a list of ints or None", other)),
        }
    }

    /// Like [`Args::ints_or`], for non-negative values.
    pub fn sizes_or(&self, name: &str, len: usize, default: &[i64]) -> Result<Vec<u64>, String> {
        self.ints_or(name, len, default)?
            .into_iter()
            .map(|v| {
                u64::try_from(v).map_err(|_| format!("argument `{name}` has a negative entry {v}"))
            })
            .collect()
    }

    /// An optional dtype (`as_scalar_type`; absent or `None` → `None`), as the export
    /// schema numbers it (7 is float32).
    pub fn optional_dtype(&self, name: &str) -> Result<Option<i64>, String> {
        match self.get(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::ScalarType(t)) => Ok(Some(*t)),
            Some(other) => Err(Self::wrong(name, "a dtype or None", other)),
        }
    }

    /// A required number (an int or a float) as `f64`.
    pub fn number(&self, name: &str) -> Result<f64, String> {
        match self.get(name) {
            Some(Argument::Int(i)) => Ok(*i as f64),
            Some(Argument::Float(f)) => Ok(*f),
            Some(other) => Err(Self::wrong(name, "a number", other)),
            None => Err(format!("argument `{name}` is missing")),
        }
    }

    /// An optional float list (`scale_factors`).
    pub fn optional_floats(&self, name: &str) -> Result<Option<&'a [f64]>, String> {
        match self.get(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Floats(v)) => Ok(Some(v)),
            Some(other) => Err(Self::wrong(name, "a list of floats or None", other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_repeats() {
        let node: Node = serde_json::from_str(
            r#"{"target": "t", "outputs": [], "inputs": [
                {"name": "stride", "arg": {"as_ints": [2]}},
                {"name": "padding", "arg": {"as_ints": [1, 0]}},
                {"name": "bias", "arg": {"as_none": true}},
                {"name": "eps", "arg": {"as_float": 0.001}}]}"#,
        )
        .unwrap();
        let args = Args(&node);
        assert_eq!(args.ints_or("stride", 2, &[1, 1]), Ok(vec![2, 2]));
        assert_eq!(args.ints_or("padding", 2, &[0, 0]), Ok(vec![1, 0]));
        assert_eq!(args.ints_or("dilation", 2, &[1]), Ok(vec![1, 1]));
        assert_eq!(args.ints_or("kernel_size", 2, &[]), Ok(vec![]));
        assert_eq!(args.optional_tensor("bias"), Ok(None));
        assert_eq!(args.float_or("eps", 1e-5), Ok(0.001));
        assert!(args.tensor("input").unwrap_err().contains("missing"));
        assert!(args.int_or("eps", 0).unwrap_err().contains("as_float"));
        assert_eq!(args.optional_ints("padding"), Ok(Some(&[1, 0][..])));
        assert_eq!(args.optional_ints("dilation"), Ok(None));
        assert!(args.optional_ints("eps").is_err());
    }
}
