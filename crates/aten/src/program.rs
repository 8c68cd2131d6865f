//! The parts of `models/model.json` (torch.export's serialized `ExportedProgram`, schema in
//! `torch/_export/serde/schema.py`) that an importer needs. Unknown fields are ignored;
//! argument and spec kinds this reader does not know are kept as [`Argument::Other`] /
//! [`InputSpec::Other`] so that only a graph that actually uses one fails, naming it.

use std::collections::HashMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// The program: its graph, its signature and the ranges of its symbols.
#[derive(Clone, Debug, Deserialize)]
pub struct ExportedProgram {
    pub graph_module: GraphModule,
    /// Symbol name (`s77`) → its declared range.
    #[serde(default)]
    pub range_constraints: HashMap<String, RangeConstraint>,
    #[serde(default)]
    pub torch_version: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RangeConstraint {
    #[serde(default)]
    pub min_val: Option<i64>,
    #[serde(default)]
    pub max_val: Option<i64>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct GraphModule {
    pub graph: Graph,
    pub signature: Signature,
    /// The calling convention of the top module (fqn `""`) and of preserved submodules.
    #[serde(default)]
    pub module_call_graph: Vec<ModuleCallEntry>,
}

impl GraphModule {
    /// The top module's output pytree spec (`[1, {"type": "builtins.dict", …}]`), when
    /// the archive records one: how the flat graph outputs were returned (a tensor, a
    /// tuple, a dict and its keys).
    pub fn out_spec(&self) -> Option<&str> {
        self.module_call_graph
            .iter()
            .find(|entry| entry.fqn.is_empty())
            .and_then(|entry| entry.signature.as_ref())
            .map(|signature| signature.out_spec.as_str())
    }
}

/// One entry of the module call graph.
#[derive(Clone, Debug, Deserialize)]
pub struct ModuleCallEntry {
    pub fqn: String,
    #[serde(default)]
    pub signature: Option<ModuleCallSignature>,
}

/// The part of a module's calling convention the export reads.
#[derive(Clone, Debug, Deserialize)]
pub struct ModuleCallSignature {
    /// The output pytree spec, serialized by `torch.utils._pytree.treespec_dumps`.
    #[serde(default)]
    pub out_spec: String,
}

/// The aten graph. `nodes` are in topological order (torch.export writes them so).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Graph {
    pub inputs: Vec<Argument>,
    pub outputs: Vec<Argument>,
    pub nodes: Vec<Node>,
    /// Every tensor value's metadata (dtype, sizes with symbols), by value name.
    #[serde(default)]
    pub tensor_values: HashMap<String, TensorMeta>,
    /// Every symbolic integer value (`sym_size_int_1`), by name.
    #[serde(default)]
    pub sym_int_values: HashMap<String, SymInt>,
}

/// One call: `target` is the op's qualified name (`torch.ops.aten.conv2d.default`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Node {
    pub target: String,
    pub inputs: Vec<NamedArgument>,
    pub outputs: Vec<Argument>,
    /// `stack_trace`, `nn_module_stack`, `torch_fn`, … (strings in torch 2.13).
    #[serde(default)]
    pub metadata: HashMap<String, Value>,
    /// Absent in older schemas; the first output's name is used then.
    #[serde(default)]
    pub name: Option<String>,
}

impl Node {
    /// The node's name, else its first output's, else `?`.
    pub fn label(&self) -> &str {
        self.name
            .as_deref()
            .or_else(|| self.outputs.first().and_then(Argument::tensor_name))
            .unwrap_or("?")
    }

    /// A string metadata entry (`stack_trace`, `nn_module_stack`).
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).and_then(Value::as_str)
    }
}

/// An argument of a call, by schema name (`input`, `weight`, `stride`, …).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct NamedArgument {
    pub name: String,
    pub arg: Argument,
}

/// A call argument or a graph input/output. Defaults omitted by the exporter are absent
/// from the node's inputs altogether.
#[derive(Clone, Debug, PartialEq)]
pub enum Argument {
    None,
    Tensor(String),
    Tensors(Vec<String>),
    /// A list of tensors or `None`s (`index.Tensor`'s `indices`).
    OptionalTensors(Vec<Option<String>>),
    Int(i64),
    Ints(Vec<i64>),
    Float(f64),
    Floats(Vec<f64>),
    Bool(bool),
    Bools(Vec<bool>),
    String(String),
    SymInt(SymInt),
    SymInts(Vec<SymInt>),
    /// The name of a symbolic float another node computes (`item()` of a 0-d tensor).
    SymFloat(String),
    /// A dtype (`as_scalar_type`): the export schema's number (7 is float32, 5 int64).
    ScalarType(i64),
    /// A subgraph (`as_graph`): the body of a higher-order op (`wrap_with_autocast`).
    Graph(Box<Graph>),
    /// A kind this reader does not interpret (`as_scalar_type`, `as_device`, …).
    Other(String),
}

impl Argument {
    pub fn tensor_name(&self) -> Option<&str> {
        match self {
            Argument::Tensor(name) => Some(name),
            _ => None,
        }
    }

    /// The tensor values this argument names (a list's in order, `None`s left out).
    pub fn tensor_names(&self) -> Vec<&str> {
        match self {
            Argument::Tensor(name) => vec![name],
            Argument::Tensors(names) => names.iter().map(String::as_str).collect(),
            Argument::OptionalTensors(names) => {
                names.iter().flatten().map(String::as_str).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The JSON kind, for messages (`as_ints`).
    pub fn kind(&self) -> &str {
        match self {
            Argument::None => "as_none",
            Argument::Tensor(_) => "as_tensor",
            Argument::Tensors(_) => "as_tensors",
            Argument::OptionalTensors(_) => "as_optional_tensors",
            Argument::Int(_) => "as_int",
            Argument::Ints(_) => "as_ints",
            Argument::Float(_) => "as_float",
            Argument::Floats(_) => "as_floats",
            Argument::Bool(_) => "as_bool",
            Argument::Bools(_) => "as_bools",
            Argument::String(_) => "as_string",
            Argument::SymInt(_) => "as_sym_int",
            Argument::SymInts(_) => "as_sym_ints",
            Argument::SymFloat(_) => "as_sym_float",
            Argument::ScalarType(_) => "as_scalar_type",
            Argument::Graph(_) => "as_graph",
            Argument::Other(kind) => kind,
        }
    }
}

/// A possibly symbolic integer: a literal, a sympy expression (`Symbol('s77', …)`) with its
/// hint, or (in call arguments) the name of a symbolic value computed by another node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SymInt {
    Int(i64),
    Expr(String),
    Name(String),
}

/// `s77` from `Symbol('s77', positive=True, integer=True)`; other expressions as they are.
pub fn symbol_name(expr: &str) -> &str {
    expr.strip_prefix("Symbol('")
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or(expr)
}

/// A tensor's metadata: the export schema's dtype number, sizes, strides, storage offset.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct TensorMeta {
    pub dtype: i64,
    pub sizes: Vec<SymInt>,
    #[serde(default)]
    pub strides: Vec<SymInt>,
    #[serde(default = "zero")]
    pub storage_offset: SymInt,
}

fn zero() -> SymInt {
    SymInt::Int(0)
}

#[derive(Clone, Debug, Deserialize)]
pub struct Signature {
    pub input_specs: Vec<InputSpec>,
    #[serde(default)]
    pub output_specs: Vec<OutputSpec>,
}

/// What a graph input stands for.
#[derive(Clone, Debug, PartialEq)]
pub enum InputSpec {
    /// A parameter: graph input `arg` holds state-dict entry `fqn`.
    Parameter { arg: String, fqn: String },
    /// A buffer (persistent or not).
    Buffer { arg: String, fqn: String },
    /// A lifted tensor constant (stored under `data/constants/`).
    TensorConstant { arg: String, fqn: String },
    /// An input the caller passes.
    UserInput(Argument),
    /// `custom_obj`, `token`, `constant_input`, …: refused if present.
    Other(String),
}

/// What a graph output stands for.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputSpec {
    UserOutput(Argument),
    /// `buffer_mutation`, `loss_output`, …: refused if present.
    Other(String),
}

/// The single `(key, value)` of a one-key JSON object (the schema's union encoding).
fn union(value: &Value) -> Result<(&str, &Value), String> {
    match value
        .as_object()
        .map(Map::iter)
        .map(|mut it| (it.next(), it.next()))
    {
        Some((Some((key, inner)), None)) => Ok((key.as_str(), inner)),
        _ => Err(format!("expected a one-key object, got {}", short(value))),
    }
}

/// A JSON value abbreviated for messages.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

fn int(value: &Value) -> Result<i64, String> {
    value
        .as_i64()
        .ok_or_else(|| format!("expected an integer, got {}", short(value)))
}

/// A float, which the serializer writes as a number or as `"Infinity"`, `"-Infinity"`, `"NaN"`.
fn float(value: &Value) -> Result<f64, String> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "Infinity" | "inf" => Some(f64::INFINITY),
            "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
            "NaN" | "nan" => Some(f64::NAN),
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| format!("expected a float, got {}", short(value)))
}

fn list<T>(value: &Value, item: impl Fn(&Value) -> Result<T, String>) -> Result<Vec<T>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("expected a list, got {}", short(value)))?
        .iter()
        .map(item)
        .collect()
}

fn string(value: &Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("expected a string, got {}", short(value)))
}

/// `{"name": "x"}` → `x`.
fn named(value: &Value) -> Result<String, String> {
    value
        .get("name")
        .map(string)
        .unwrap_or_else(|| Err(format!("expected {{\"name\": …}}, got {}", short(value))))
}

fn field<'a>(value: &'a Value, key: &str) -> Result<&'a Value, String> {
    value
        .get(key)
        .ok_or_else(|| format!("missing `{key}` in {}", short(value)))
}

fn parse_sym_int(value: &Value) -> Result<SymInt, String> {
    let (kind, inner) = union(value)?;
    match kind {
        "as_int" => int(inner).map(SymInt::Int),
        "as_expr" => string(field(inner, "expr_str")?).map(SymInt::Expr),
        "as_name" => string(inner).map(SymInt::Name),
        other => Err(format!("unknown symbolic integer kind `{other}`")),
    }
}

/// One entry of `as_optional_tensors`: `{"as_none": …}` or `{"as_tensor": {"name": …}}`.
fn optional_tensor(value: &Value) -> Result<Option<String>, String> {
    match union(value)? {
        ("as_none", _) => Ok(None),
        ("as_tensor", inner) => named(inner).map(Some),
        (other, _) => Err(format!("unknown optional tensor kind `{other}`")),
    }
}

fn parse_argument(value: &Value) -> Result<Argument, String> {
    let (kind, inner) = union(value)?;
    Ok(match kind {
        "as_none" => Argument::None,
        "as_tensor" => Argument::Tensor(named(inner)?),
        "as_tensors" => Argument::Tensors(list(inner, named)?),
        "as_optional_tensors" => Argument::OptionalTensors(list(inner, optional_tensor)?),
        "as_int" => Argument::Int(int(inner)?),
        "as_ints" => Argument::Ints(list(inner, int)?),
        "as_float" => Argument::Float(float(inner)?),
        "as_floats" => Argument::Floats(list(inner, float)?),
        "as_bool" => Argument::Bool(
            inner
                .as_bool()
                .ok_or_else(|| format!("expected a bool, got {}", short(inner)))?,
        ),
        "as_bools" => Argument::Bools(list(inner, |v| {
            v.as_bool()
                .ok_or_else(|| format!("expected a bool, got {}", short(v)))
        })?),
        "as_string" => Argument::String(string(inner)?),
        "as_sym_int" => Argument::SymInt(parse_sym_int(inner)?),
        "as_sym_ints" => Argument::SymInts(list(inner, parse_sym_int)?),
        "as_sym_float" => match union(inner)? {
            ("as_float", v) => Argument::Float(float(v)?),
            ("as_name", v) => Argument::SymFloat(string(v)?),
            _ => Argument::Other(kind.to_owned()),
        },
        "as_scalar_type" => Argument::ScalarType(int(inner)?),
        "as_graph" => Argument::Graph(Box::new(
            Graph::deserialize(field(inner, "graph")?).map_err(|e| e.to_string())?,
        )),
        other => Argument::Other(other.to_owned()),
    })
}

fn parse_input_spec(value: &Value) -> Result<InputSpec, String> {
    let (kind, inner) = union(value)?;
    let arg = || named(field(inner, "arg")?);
    let fqn = |key: &str| string(field(inner, key)?);
    Ok(match kind {
        "parameter" => InputSpec::Parameter {
            arg: arg()?,
            fqn: fqn("parameter_name")?,
        },
        "buffer" => InputSpec::Buffer {
            arg: arg()?,
            fqn: fqn("buffer_name")?,
        },
        "tensor_constant" => InputSpec::TensorConstant {
            arg: arg()?,
            fqn: fqn("tensor_constant_name")?,
        },
        "user_input" => InputSpec::UserInput(parse_argument(field(inner, "arg")?)?),
        other => InputSpec::Other(other.to_owned()),
    })
}

fn parse_output_spec(value: &Value) -> Result<OutputSpec, String> {
    let (kind, inner) = union(value)?;
    Ok(match kind {
        "user_output" => OutputSpec::UserOutput(parse_argument(field(inner, "arg")?)?),
        other => OutputSpec::Other(other.to_owned()),
    })
}

/// `Deserialize` through a JSON value and one of the parsers above.
macro_rules! via_value {
    ($ty:ty, $parse:ident) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = Value::deserialize(deserializer)?;
                $parse(&value).map_err(D::Error::custom)
            }
        }
    };
}

via_value!(Argument, parse_argument);
via_value!(SymInt, parse_sym_int);
via_value!(InputSpec, parse_input_spec);
via_value!(OutputSpec, parse_output_spec);

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(json: &str) -> Argument {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn arguments_of_every_kind_we_read() {
        assert_eq!(
            arg(r#"{"as_tensor": {"name": "x"}}"#),
            Argument::Tensor("x".into())
        );
        assert_eq!(arg(r#"{"as_ints": [1, 2]}"#), Argument::Ints(vec![1, 2]));
        assert_eq!(
            arg(r#"{"as_float": "-Infinity"}"#),
            Argument::Float(f64::NEG_INFINITY)
        );
        assert_eq!(arg(r#"{"as_none": true}"#), Argument::None);
        assert_eq!(
            arg(r#"{"as_optional_tensors": [{"as_none": true}, {"as_tensor": {"name": "i"}}]}"#),
            Argument::OptionalTensors(vec![None, Some("i".into())])
        );
        assert_eq!(
            arg(r#"{"as_sym_ints": [{"as_name": "s"}, {"as_int": -1}]}"#),
            Argument::SymInts(vec![SymInt::Name("s".into()), SymInt::Int(-1)])
        );
        assert_eq!(
            arg(r#"{"as_device": {"type": "cpu"}}"#),
            Argument::Other("as_device".into())
        );
        assert_eq!(arg(r#"{"as_scalar_type": 7}"#), Argument::ScalarType(7));
        assert!(serde_json::from_str::<Argument>(r#"{"as_int": "x"}"#).is_err());
        assert!(serde_json::from_str::<Argument>(r#"{"as_int": 1, "as_none": 1}"#).is_err());
    }

    #[test]
    fn input_specs_and_symbols() {
        let spec: InputSpec = serde_json::from_str(
            r#"{"buffer": {"arg": {"name": "b_m"}, "buffer_name": "bn.running_mean", "persistent": true}}"#,
        )
        .unwrap();
        assert_eq!(
            spec,
            InputSpec::Buffer {
                arg: "b_m".into(),
                fqn: "bn.running_mean".into()
            }
        );
        let spec: InputSpec =
            serde_json::from_str(r#"{"custom_obj": {"arg": {"name": "o"}}}"#).unwrap();
        assert_eq!(spec, InputSpec::Other("custom_obj".into()));
        let sym: SymInt = serde_json::from_str(
            r#"{"as_expr": {"expr_str": "Symbol('s77', positive=True, integer=True)", "hint": {"as_int": 2}}}"#,
        )
        .unwrap();
        assert_eq!(
            sym,
            SymInt::Expr("Symbol('s77', positive=True, integer=True)".into())
        );
    }
}
