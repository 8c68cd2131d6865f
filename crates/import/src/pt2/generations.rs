//! The schema generations of torch.export's serialized program, mapped onto the one the
//! aten program reader (`ExportedProgram`) knows.
//!
//! Every torch since 2.1 writes the program as JSON in the schema of its own
//! `torch/_export/serde/schema.py`, versioned by `SCHEMA_VERSION`: `1` (torch 2.1), `2`
//! (2.2), `5.1` (2.3), `5.3` (2.4), `7.3` (2.5), `8.2` (2.6), `8.7` (2.7), `8.8` (2.8),
//! `8.14` (2.9), `8.15` (2.10), `8.17` (2.11), `8.20` (2.12 to 2.15). The minors of
//! schema 8 only add to the program's schema (argument kinds such as `as_int_lists`,
//! fields such as a node's `name`, element types), so they need no rewrite. This module
//! is the one place that knows they differ: [`read_program`] parses any known generation and
//! rewrites what an older one spells differently into today's spelling, so that neither the
//! program reader nor the lowering knows versions exist. Each rewrite is keyed on the old
//! spelling itself, which no later schema uses (torch changed some inside one major: the
//! optional-tensor spelling changed between 5.1 and 5.3):
//!
//! * JSON: Python's `json` writes unbounded ranges and special floats as the bare tokens
//!   `Infinity`, `-Infinity` and `NaN` (range constraints of 2.3–2.5); they are read as the
//!   strings later schemas write, and an unbounded range bound as absent;
//! * unions (schema 1 and 2): `dataclasses.asdict` wrote every member of every union, the
//!   unset ones `null`; every `null` member of every object is dropped, which keeps a
//!   union's one set member and, for other objects, means what absent means;
//! * tensor values (schema 1): `{"meta": TensorMeta}`; its `storage_offset` a plain integer;
//! * optional tensors (schema 1 to 5.1): `{"as_tensor": "name"}` rather than
//!   `{"as_tensor": {"name": "name"}}`;
//! * empty lists (schema 1 to 5.1): written `{"as_bools": []}` whatever their type (the
//!   serializer tested for booleans first), read as an empty list of integers, the type of
//!   the size and dimension lists they are in practice;
//! * size expressions (schema before 8): sympy's `str` (`24*s0`) rather than its `srepr`
//!   (`sympy_str`);
//! * graph signature (schema 1; 2 has today's specs): name maps (`inputs_to_parameters`, `inputs_to_buffers`,
//!   `user_inputs`, `user_outputs`, `buffers_to_mutate`) rather than input and output specs
//!   in graph order; the output pytree spec in `call_spec` rather than the module call graph.
//!
//! A schema major above the newest known is refused, naming the version found and the ones
//! known: its spelling cannot be guessed.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::sympy_str;
use ckpt_aten::program::ExportedProgram;

/// The schema majors this reader maps: 1 (torch 2.1) through 8 (torch 2.6 onward).
pub const KNOWN_MAJORS: std::ops::RangeInclusive<u64> = 1..=8;

/// A program's schema version, as the archive records it (`1`, `5.1`, `8.20`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaVersion {
    /// Bumped by torch on every breaking change.
    pub major: u64,
    /// Bumped on compatible changes; schema 1 had none.
    pub minor: Option<u64>,
}

impl fmt::Display for SchemaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.minor {
            Some(minor) => write!(f, "{}.{minor}", self.major),
            None => write!(f, "{}", self.major),
        }
    }
}

impl SchemaVersion {
    /// Parses a `version` record (`1`, `5.1`): what torch 2.1–2.7 wrote beside the program.
    pub fn parse(text: &str) -> Option<SchemaVersion> {
        let (major, minor) = match text.trim().split_once('.') {
            Some((major, minor)) => (major, Some(minor.parse().ok()?)),
            None => (text.trim(), None),
        };
        Some(SchemaVersion {
            major: major.parse().ok()?,
            minor,
        })
    }

    /// The program's own `schema_version`: an integer (schema 1) or `{"major", "minor"}`.
    fn of(program: &Value) -> Result<SchemaVersion, String> {
        let version = program
            .get("schema_version")
            .ok_or("no `schema_version`: not a torch.export program")?;
        let number = |v: Option<&Value>| v.and_then(Value::as_u64);
        match version {
            Value::Number(_) => {
                number(Some(version)).map(|major| SchemaVersion { major, minor: None })
            }
            Value::Object(parts) => number(parts.get("major")).map(|major| SchemaVersion {
                major,
                minor: number(parts.get("minor")),
            }),
            _ => None,
        }
        .ok_or_else(|| format!("`schema_version` {version} is not a version"))
    }

    fn check_known(self) -> Result<SchemaVersion, String> {
        if KNOWN_MAJORS.contains(&self.major) {
            return Ok(self);
        }
        Err(format!(
            "schema version {self} is not one this ckpt reads (it reads schema {} to {}.x, written by torch 2.1 to 2.15); a newer ckpt may",
            KNOWN_MAJORS.start(),
            KNOWN_MAJORS.end()
        ))
    }
}

/// Parses a serialized program of any known schema generation into the current program,
/// with its schema version. Errors say what is wrong, for a message naming the record.
pub fn read_program(bytes: &[u8]) -> Result<(ExportedProgram, SchemaVersion), String> {
    let text = python_literals(bytes);
    let mut value: Value = serde_json::from_slice(&text)
        .map_err(|e| format!("not a program this reader understands: {e}"))?;
    let version = SchemaVersion::of(&value)?.check_known()?;
    upgrade(&mut value, version)?;
    let program = ExportedProgram::deserialize(value)
        .map_err(|e| format!("not a program this reader understands: {e}"))?;
    Ok((program, version))
}

/// The bare tokens Python's `json` writes for special floats, quoted as later schemas write
/// them (strings are left alone). Borrows when there are none.
fn python_literals(bytes: &[u8]) -> Cow<'_, [u8]> {
    const TOKENS: [&[u8]; 3] = [b"-Infinity", b"Infinity", b"NaN"];
    let mut out: Option<Vec<u8>> = None;
    let (mut in_string, mut escaped) = (false, false);
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if byte == b'"' {
            in_string = true;
        } else if let Some(token) = TOKENS.iter().find(|t| bytes[at..].starts_with(t)) {
            let out = out.get_or_insert_with(|| bytes[..at].to_vec());
            out.push(b'"');
            out.extend_from_slice(token);
            out.push(b'"');
            at += token.len();
            continue;
        }
        if let Some(out) = out.as_mut() {
            out.push(byte);
        }
        at += 1;
    }
    match out {
        Some(out) => Cow::Owned(out),
        None => Cow::Borrowed(bytes),
    }
}

impl SchemaVersion {
    /// Whether this schema was written by `dataclasses.asdict`, every union in full
    /// (schema 1 and 2).
    fn full_unions(self) -> bool {
        self.major <= 2
    }

    /// Whether this schema wrote every empty list as `as_bools` (before 5.3).
    fn untyped_empty_lists(self) -> bool {
        self.major < 5 || (self.major == 5 && self.minor.unwrap_or(0) < 3)
    }

    /// Whether this schema wrote size expressions in sympy's `str` (before 8).
    fn infix_sizes(self) -> bool {
        self.major < 8
    }
}

/// Rewrites every older spelling (module docs) in place.
fn upgrade(program: &mut Value, version: SchemaVersion) -> Result<(), String> {
    walk(program, version, 0)?;
    if let Some(bounds) = program
        .get_mut("range_constraints")
        .and_then(Value::as_object_mut)
    {
        for bound in bounds.values_mut().filter_map(Value::as_object_mut) {
            for key in ["min_val", "max_val"] {
                if bound.get(key).is_some_and(|v| !v.is_i64()) {
                    bound.insert(key.to_owned(), Value::Null);
                }
            }
        }
    }
    if let Some(module) = program.get_mut("graph_module") {
        signature_from_maps(module)?;
        call_spec_into_call_graph(module);
    }
    Ok(())
}

/// How deep the program's JSON may nest (subgraphs inside higher-order ops add a few levels
/// each); deeper is refused rather than walked.
const MAX_DEPTH: usize = 256;

/// The spellings found anywhere in the tree: unions, tensor values, optional tensors,
/// empty lists, size expressions.
fn walk(value: &mut Value, version: SchemaVersion, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("nested more than {MAX_DEPTH} levels deep"));
    }
    match value {
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|v| walk(v, version, depth + 1)),
        Value::Object(object) => {
            if version.full_unions() {
                object.retain(|_, v| !v.is_null());
            }
            if version.untyped_empty_lists() && object.len() == 1 {
                if let Some(Value::Array(list)) = object.get("as_bools") {
                    if list.is_empty() {
                        object.clear();
                        object.insert("as_ints".into(), json!([]));
                    }
                }
            }
            if version.infix_sizes() {
                if let Some(Value::String(text)) = object.get_mut("expr_str") {
                    *text = sympy_str::to_srepr(text)?;
                }
            }
            if let Some(values) = object
                .get_mut("tensor_values")
                .and_then(Value::as_object_mut)
            {
                values.values_mut().for_each(unwrap_tensor_value);
            }
            if let Some(list) = object
                .get_mut("as_optional_tensors")
                .and_then(Value::as_array_mut)
            {
                list.iter_mut().for_each(name_optional_tensor);
            }
            object
                .values_mut()
                .try_for_each(|v| walk(v, version, depth + 1))
        }
        _ => Ok(()),
    }
}

/// Schema 1's `{"meta": TensorMeta}`, and its integer `storage_offset`.
fn unwrap_tensor_value(value: &mut Value) {
    if let Some(meta) = value.as_object_mut().and_then(|o| o.remove("meta")) {
        *value = meta;
    }
    if let Some(offset) = value.get_mut("storage_offset") {
        if offset.is_i64() {
            *offset = json!({ "as_int": offset });
        }
    }
}

/// An optional tensor spelled `{"as_tensor": "name"}` (schema 1 to 5.1).
fn name_optional_tensor(entry: &mut Value) {
    if let Some(tensor) = entry.get_mut("as_tensor") {
        if let Some(name) = tensor.as_str() {
            *tensor = json!({ "name": name });
        }
    }
}

/// The name of a graph input or output argument (`{"as_tensor": {"name": …}}`, or a symbolic
/// integer's `{"as_sym_int": {"as_name": …}}`).
fn argument_name(arg: &Value) -> Option<&str> {
    arg.pointer("/as_tensor/name")
        .or_else(|| arg.pointer("/as_sym_int/as_name"))
        .and_then(Value::as_str)
}

/// Schema 1's graph signature (name maps) as input and output specs in graph order.
fn signature_from_maps(module: &mut Value) -> Result<(), String> {
    let Some(signature) = module.get("signature") else {
        return Ok(());
    };
    if signature.get("input_specs").is_some() {
        return Ok(());
    }
    let map = |key: &str| signature.get(key).and_then(Value::as_object);
    let names = |key: &str| -> Vec<&str> {
        signature
            .get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let (parameters, buffers) = (map("inputs_to_parameters"), map("inputs_to_buffers"));
    let mutated = map("buffers_to_mutate");
    let (user_inputs, user_outputs) = (names("user_inputs"), names("user_outputs"));
    let loss = signature.pointer("/backward_signature/loss_output");
    let graph = module.get("graph").ok_or("no `graph` in `graph_module`")?;
    let arguments = |key: &str| -> Result<&Vec<Value>, String> {
        graph
            .get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("no graph `{key}` list"))
    };
    let mut input_specs = Vec::new();
    for arg in arguments("inputs")? {
        let name = argument_name(arg).unwrap_or_default();
        let tensor = json!({ "name": name });
        let fqn = |m: Option<&Map<String, Value>>| m.and_then(|m| m.get(name)).cloned();
        input_specs.push(if let Some(fqn) = fqn(parameters) {
            json!({"parameter": {"arg": tensor, "parameter_name": fqn}})
        } else if let Some(fqn) = fqn(buffers) {
            json!({"buffer": {"arg": tensor, "buffer_name": fqn, "persistent": true}})
        } else if user_inputs.contains(&name) {
            json!({"user_input": {"arg": arg}})
        } else {
            json!({"input absent from the graph signature": {"arg": tensor}})
        });
    }
    let mut output_specs = Vec::new();
    for arg in arguments("outputs")? {
        let name = argument_name(arg).unwrap_or_default();
        let tensor = json!({ "name": name });
        output_specs.push(if user_outputs.contains(&name) {
            json!({"user_output": {"arg": arg}})
        } else if let Some(fqn) = mutated.and_then(|m| m.get(name)) {
            json!({"buffer_mutation": {"arg": tensor, "buffer_name": fqn}})
        } else if loss.and_then(Value::as_str) == Some(name) {
            json!({"loss_output": {"arg": tensor}})
        } else {
            json!({"output absent from the graph signature": {"arg": tensor}})
        });
    }
    module["signature"] = json!({"input_specs": input_specs, "output_specs": output_specs});
    Ok(())
}

/// Schema 1's `call_spec` (the top module's pytree specs) as the module call graph's
/// top entry, where later schemas keep it, unless the call graph already has one.
fn call_spec_into_call_graph(module: &mut Value) {
    let Some(spec) = module.get("call_spec").filter(|s| s.is_object()).cloned() else {
        return;
    };
    let Some(graph) = module
        .as_object_mut()
        .map(|m| m.entry("module_call_graph").or_insert_with(|| json!([])))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let has_top = graph.iter().any(|entry| {
        entry.get("fqn").and_then(Value::as_str) == Some("")
            && entry.get("signature").is_some_and(|s| !s.is_null())
    });
    if !has_top {
        graph.retain(|entry| entry.get("fqn").and_then(Value::as_str) != Some(""));
        graph.insert(
            0,
            json!({"fqn": "", "signature": {
                "inputs": [], "outputs": [],
                "in_spec": spec.get("in_spec").cloned().unwrap_or_default(),
                "out_spec": spec.get("out_spec").cloned().unwrap_or_default(),
            }}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckpt_aten::program::{Argument, InputSpec, OutputSpec, SymInt};

    #[test]
    fn python_special_floats_become_strings_outside_strings_only() {
        let text = br#"{"a": Infinity, "b": [-Infinity, NaN], "c": "NaN Infinity \" NaN"}"#;
        let fixed = python_literals(text);
        let value: Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(value["a"], "Infinity");
        assert_eq!(value["b"], json!(["-Infinity", "NaN"]));
        assert_eq!(value["c"], "NaN Infinity \" NaN");
        assert!(matches!(python_literals(br#"{"a": 1}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn versions_are_read_from_either_spelling() {
        let of = |v: Value| SchemaVersion::of(&json!({ "schema_version": v }));
        assert_eq!(of(json!(1)).unwrap().to_string(), "1");
        assert_eq!(
            of(json!({"major": 8, "minor": 20})).unwrap().to_string(),
            "8.20"
        );
        assert!(of(json!("8")).is_err());
        assert_eq!(SchemaVersion::parse("5.1").unwrap().to_string(), "5.1");
        assert_eq!(SchemaVersion::parse(" 1\n").unwrap().to_string(), "1");
        assert_eq!(SchemaVersion::parse("x.1"), None);
    }

    #[test]
    fn a_future_major_is_refused_naming_the_versions_known() {
        let program = br#"{"schema_version": {"major": 9, "minor": 0}, "graph_module": {}}"#;
        let err = read_program(program).unwrap_err();
        assert!(err.contains("schema version 9.0"), "{err}");
        assert!(err.contains("schema 1 to 8.x"), "{err}");
    }

    /// A schema-1 program as torch 2.1 wrote it: full unions, `meta` wrappers, name-map
    /// signature, `call_spec`, an optional tensor by bare name.
    #[test]
    fn schema_1_reads_as_the_current_program() {
        let arg = |set: Value| {
            let mut all = json!({"as_none": null, "as_tensor": null, "as_int": null,
                                 "as_optional_tensors": null, "as_sym_int": null});
            all.as_object_mut()
                .unwrap()
                .extend(set.as_object().unwrap().clone());
            all
        };
        let program = json!({
            "schema_version": 1,
            "range_constraints": {"s0": {"min_val": 2, "max_val": 15}},
            "graph_module": {
                "graph": {
                    "inputs": [arg(json!({"as_tensor": {"name": "arg0_1"}})),
                               arg(json!({"as_tensor": {"name": "arg1_1"}}))],
                    "outputs": [arg(json!({"as_tensor": {"name": "index"}}))],
                    "nodes": [{
                        "target": "torch.ops.aten.index.Tensor",
                        "inputs": [
                            {"name": "self", "arg": arg(json!({"as_tensor": {"name": "arg1_1"}}))},
                            {"name": "indices", "arg": arg(json!({"as_optional_tensors": [
                                {"as_tensor": null, "as_none": []},
                                {"as_tensor": "arg0_1", "as_none": null}]}))}],
                        "outputs": [arg(json!({"as_tensor": {"name": "index"}}))],
                        "metadata": {}
                    }],
                    "tensor_values": {"index": {"meta": {
                        "dtype": 7, "sizes": [{"as_expr": null, "as_int": 2}],
                        "requires_grad": false, "device": {"type": "cpu", "index": null},
                        "strides": [{"as_expr": null, "as_int": 1}], "storage_offset": 0,
                        "layout": 7}}},
                    "sym_int_values": {}, "sym_bool_values": {}
                },
                "signature": {
                    "inputs_to_parameters": {"arg0_1": "L__self___w"},
                    "inputs_to_buffers": {}, "user_inputs": ["arg1_1"],
                    "user_outputs": ["index"], "buffers_to_mutate": {},
                    "backward_signature": null
                },
                "call_spec": {"in_spec": "[1, {}]", "out_spec": "[1, {\"type\": null}]"},
                "module_call_graph": []
            }
        });
        let (program, version) = read_program(program.to_string().as_bytes()).unwrap();
        assert_eq!(version.to_string(), "1");
        let module = &program.graph_module;
        assert_eq!(
            module.signature.input_specs,
            vec![
                InputSpec::Parameter {
                    arg: "arg0_1".into(),
                    fqn: "L__self___w".into()
                },
                InputSpec::UserInput(Argument::Tensor("arg1_1".into())),
            ]
        );
        assert_eq!(
            module.signature.output_specs,
            vec![OutputSpec::UserOutput(Argument::Tensor("index".into()))]
        );
        assert_eq!(module.out_spec(), Some("[1, {\"type\": null}]"));
        let node = &module.graph.nodes[0];
        assert_eq!(
            node.inputs[1].arg,
            Argument::OptionalTensors(vec![None, Some("arg0_1".into())])
        );
        let meta = &module.graph.tensor_values["index"];
        assert_eq!(meta.sizes, vec![SymInt::Int(2)]);
        assert_eq!(meta.storage_offset, SymInt::Int(0));
        assert_eq!(program.range_constraints["s0"].max_val, Some(15));
    }

    #[test]
    fn unbounded_ranges_read_as_absent() {
        let program = br#"{"schema_version": {"major": 5, "minor": 1},
            "range_constraints": {"s0": {"min_val": 2, "max_val": Infinity}},
            "graph_module": {"graph": {"inputs": [], "outputs": [], "nodes": []},
                             "signature": {"input_specs": [], "output_specs": []}}}"#;
        let (program, _) = read_program(program).unwrap();
        assert_eq!(program.range_constraints["s0"].min_val, Some(2));
        assert_eq!(program.range_constraints["s0"].max_val, None);
    }
}
