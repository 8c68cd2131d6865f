//! Reading a node's arguments by schema name. torch.export leaves out arguments equal to
//! their defaults, so an argument the node leaves out is read as its default in the node's
//! schema row ([`crate::schema`], torch's own defaults); the `_or` readers take a
//! default of the caller's where that is deliberately not torch's.

use crate::program::{Argument, Node};
use crate::schema::{self, DefaultValue};

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

    /// Argument `name`'s default in the node's schema row (`None`: a required argument).
    fn default(&self, name: &str) -> Option<DefaultValue> {
        schema::lookup(&self.0.target).and_then(|s| s.default(name))
    }

    fn missing(name: &str) -> String {
        format!("argument `{name}` is missing")
    }

    /// An int argument, or its schema default.
    pub fn int(&self, name: &str) -> Result<i64, String> {
        match (self.get(name), self.default(name)) {
            (None, Some(DefaultValue::Int(i))) => Ok(i),
            (None, _) => Err(Self::missing(name)),
            (Some(Argument::Int(i)), _) => Ok(*i),
            (Some(other), _) => Err(Self::wrong(name, "an int", other)),
        }
    }

    /// A bool argument, or its schema default.
    pub fn bool(&self, name: &str) -> Result<bool, String> {
        match (self.get(name), self.default(name)) {
            (None, Some(DefaultValue::Bool(b))) => Ok(b),
            (None, _) => Err(Self::missing(name)),
            (Some(Argument::Bool(b)), _) => Ok(*b),
            (Some(other), _) => Err(Self::wrong(name, "a bool", other)),
        }
    }

    /// A number argument (an int or a float) as `f64`, or its schema default.
    pub fn float(&self, name: &str) -> Result<f64, String> {
        match (self.get(name), self.default(name)) {
            (None, Some(DefaultValue::Float(f))) => Ok(f),
            (None, Some(DefaultValue::Int(i))) => Ok(i as f64),
            (None, _) => Err(Self::missing(name)),
            (Some(Argument::Float(f)), _) => Ok(*f),
            (Some(Argument::Int(i)), _) => Ok(*i as f64),
            (Some(other), _) => Err(Self::wrong(name, "a number", other)),
        }
    }

    /// An int list of `len` entries, as [`Args::ints_or`] reads it with the schema default
    /// (torch's `int[2] dilation=1` is `[1]`, repeated); a required argument, or one whose
    /// default is `None`, defaults to empty, for the caller to refuse.
    pub fn ints(&self, name: &str, len: usize) -> Result<Vec<i64>, String> {
        match self.default(name) {
            Some(DefaultValue::Ints(default)) => self.ints_or(name, len, default),
            None | Some(DefaultValue::None) => self.ints_or(name, len, &[]),
            Some(other) => Err(format!(
                "argument `{name}` defaults to {other}, not a list of ints"
            )),
        }
    }

    /// Like [`Args::ints`], for non-negative values.
    pub fn sizes(&self, name: &str, len: usize) -> Result<Vec<u64>, String> {
        non_negative(name, self.ints(name, len)?)
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

    /// An int, `default` when absent: for a reading shared by ops of which some lack the
    /// argument (`t` read as `transpose`); an op that has it reads [`Args::int`].
    pub fn int_or(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Int(i)) => Ok(*i),
            Some(other) => Err(Self::wrong(name, "an int", other)),
        }
    }

    /// A number, `default` when absent: for a reading shared by ops of which some lack the
    /// argument (`mul` read as `add` with `alpha` 1); an op that has it reads [`Args::float`].
    pub fn float_or(&self, name: &str, default: f64) -> Result<f64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Float(f)) => Ok(*f),
            Some(Argument::Int(i)) => Ok(*i as f64),
            Some(other) => Err(Self::wrong(name, "a number", other)),
        }
    }

    /// A bool, `default` when absent: for a reading shared by ops of which some lack the
    /// argument (`sum.default` has no `keepdim`); an op that has it reads [`Args::bool`].
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.get(name) {
            None => Ok(default),
            Some(Argument::Bool(b)) => Ok(*b),
            Some(other) => Err(Self::wrong(name, "a bool", other)),
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
        non_negative(name, self.ints_or(name, len, default)?)
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

/// `values` of argument `name`, refused if one is negative.
fn non_negative(name: &str, values: Vec<i64>) -> Result<Vec<u64>, String> {
    values
        .into_iter()
        .map(|v| {
            u64::try_from(v).map_err(|_| format!("argument `{name}` has a negative entry {v}"))
        })
        .collect()
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
        assert_eq!(args.float("eps"), Ok(0.001));
        assert!(args.tensor("input").unwrap_err().contains("missing"));
        assert!(args.int_or("eps", 0).unwrap_err().contains("as_float"));
        assert_eq!(args.optional_ints("padding"), Ok(Some(&[1, 0][..])));
        assert_eq!(args.optional_ints("dilation"), Ok(None));
        assert!(args.optional_ints("eps").is_err());
    }

    #[test]
    fn an_absent_argument_is_its_schema_default() {
        let node: Node = serde_json::from_str(
            r#"{"target": "torch.ops.aten.max_pool3d.default", "outputs": [], "inputs": [
                {"name": "kernel_size", "arg": {"as_ints": [2]}},
                {"name": "padding", "arg": {"as_ints": []}}]}"#,
        )
        .unwrap();
        let args = Args(&node);
        assert_eq!(args.ints("kernel_size", 3), Ok(vec![2, 2, 2]));
        // torch's `int[3] dilation=1` and `padding=0`, repeated to the rank.
        assert_eq!(args.ints("dilation", 3), Ok(vec![1, 1, 1]));
        assert_eq!(args.sizes("padding", 3), Ok(vec![0, 0, 0]));
        // `stride=[]`: the caller reads an empty stride as the kernel.
        assert_eq!(args.ints("stride", 3), Ok(vec![]));
        assert_eq!(args.bool("ceil_mode"), Ok(false));
        assert!(args.int("self").unwrap_err().contains("missing"));
        assert!(args.bool("kernel_size").unwrap_err().contains("as_ints"));
        let softplus: Node =
            serde_json::from_str(r#"{"target": "softplus.default", "outputs": [], "inputs": []}"#)
                .unwrap();
        // `Scalar threshold=20`: an int default read as a number.
        assert_eq!(Args(&softplus).float("threshold"), Ok(20.0));
        assert!(Args(&softplus).int("beta").is_ok());
    }
}
