//! Matches what a TorchScript `forward` returned to the ONNX graph's outputs:
//! - a tensor: the graph must have exactly one output;
//! - a tuple or list (nested ones flattened depth-first): tensor `i` is ONNX output `i`, and
//!   the counts must agree (multi-output exports number tuple outputs in this order);
//! - a dict with string keys: the value under key `k` is the ONNX output named `k`, and the
//!   key set must be the output name set (multi-output exports name dict outputs by key).
//!
//! Anything else (`None`, numbers, strings, tensors inside a dict inside a tuple…) is an error.

use tch::IValue;

use super::torch_run::to_array;
use super::Array;

/// The tensors of `returned`, one per name of `names` (the ONNX outputs) and in that order.
pub fn match_outputs(returned: IValue, names: &[String]) -> Result<Vec<Array>, String> {
    match returned {
        IValue::GenericDict(entries) => by_key(entries, names),
        other => {
            let mut tensors = Vec::new();
            flatten(other, &mut tensors)?;
            if tensors.len() != names.len() {
                return Err(format!(
                    "the model returns {} tensor(s) but the ONNX graph has {} output(s) ({})",
                    tensors.len(),
                    names.len(),
                    names.join(", ")
                ));
            }
            Ok(tensors)
        }
    }
}

/// Appends the tensors of a tensor, or of a tuple or list of them (nested), in order.
fn flatten(value: IValue, out: &mut Vec<Array>) -> Result<(), String> {
    match value {
        IValue::Tensor(t) => out.push(to_array(&t)?),
        IValue::TensorList(ts) => {
            for t in ts {
                out.push(to_array(&t)?);
            }
        }
        IValue::Tuple(items) | IValue::GenericList(items) => {
            for item in items {
                flatten(item, out)?;
            }
        }
        other => {
            return Err(format!(
                "the model returns {} where a tensor, tuple or list of tensors, or dict of \
                 tensors was expected",
                describe(&other)
            ))
        }
    }
    Ok(())
}

/// The dict's tensors ordered by `names`, every key naming an output and every output a key.
fn by_key(entries: Vec<(IValue, IValue)>, names: &[String]) -> Result<Vec<Array>, String> {
    let mut keyed = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let IValue::String(key) = key else {
            return Err(format!(
                "the model returns a dict keyed by {}; only string keys can be matched to \
                 ONNX output names",
                describe(&key)
            ));
        };
        let IValue::Tensor(tensor) = value else {
            return Err(format!(
                "the model's output `{key}` is {}, not a tensor",
                describe(&value)
            ));
        };
        keyed.push((key, tensor));
    }
    let keys: Vec<&str> = keyed.iter().map(|(k, _)| k.as_str()).collect();
    let missing: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| !keys.contains(n))
        .collect();
    let extra: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| !names.iter().any(|n| n == k))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        return Err(format!(
            "the model returns a dict whose keys ({}) are not the ONNX output names ({}): \
             missing {:?}, not in the graph {:?}",
            keys.join(", "),
            names.join(", "),
            missing,
            extra
        ));
    }
    names
        .iter()
        .map(|name| {
            let (_, tensor) = keyed
                .iter()
                .find(|(k, _)| k == name)
                .ok_or_else(|| format!("the model's dict has no key `{name}`"))?;
            to_array(tensor)
        })
        .collect()
}

/// What kind of value this is, for errors.
fn describe(value: &IValue) -> &'static str {
    match value {
        IValue::None => "None",
        IValue::Tensor(_) => "a tensor",
        IValue::Double(_) => "a float",
        IValue::Int(_) => "an int",
        IValue::Bool(_) => "a bool",
        IValue::Tuple(_) => "a tuple",
        IValue::IntList(_) | IValue::DoubleList(_) | IValue::BoolList(_) => "a list of numbers",
        IValue::String(_) => "a string",
        IValue::StringList(_) => "a list of strings",
        IValue::TensorList(_) | IValue::GenericList(_) => "a list",
        IValue::GenericDict(_) => "a dict",
        IValue::Object(_) => "an object",
        IValue::Device(_) => "a device",
        // `IValue` is non-exhaustive: kinds added by later tch versions.
        _ => "a value of another kind",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Tensor;

    fn t(values: &[f32]) -> IValue {
        IValue::Tensor(Tensor::from_slice(values))
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_tensor_matches_the_single_output() {
        let got = match_outputs(t(&[1.0, 2.0]), &names(&["output"])).unwrap();
        assert_eq!(got[0].data, [1.0, 2.0]);
        let e = match_outputs(t(&[1.0]), &names(&["a", "b"])).unwrap_err();
        assert!(
            e.contains("returns 1 tensor(s) but the ONNX graph has 2"),
            "{e}"
        );
    }

    #[test]
    fn nested_tuples_are_matched_in_order() {
        let value = IValue::Tuple(vec![t(&[1.0]), IValue::Tuple(vec![t(&[2.0]), t(&[3.0])])]);
        let got = match_outputs(value, &names(&["output_0", "output_1", "output_2"])).unwrap();
        let firsts: Vec<f32> = got.iter().map(|a| a.data[0]).collect();
        assert_eq!(firsts, [1.0, 2.0, 3.0]);
    }

    #[test]
    fn dict_values_are_matched_by_key() {
        let dict = |keys: &[&str]| {
            IValue::GenericDict(
                keys.iter()
                    .enumerate()
                    .map(|(i, k)| (IValue::String(k.to_string()), t(&[i as f32])))
                    .collect(),
            )
        };
        let got = match_outputs(dict(&["boxes", "logits"]), &names(&["logits", "boxes"])).unwrap();
        assert_eq!(got[0].data, [1.0]);
        assert_eq!(got[1].data, [0.0]);
        let e =
            match_outputs(dict(&["boxes", "scores"]), &names(&["logits", "boxes"])).unwrap_err();
        assert!(
            e.contains("missing [\"logits\"]") && e.contains("[\"scores\"]"),
            "{e}"
        );
    }

    #[test]
    fn other_values_are_refused() {
        let e = match_outputs(
            IValue::Tuple(vec![t(&[1.0]), IValue::None]),
            &names(&["a", "b"]),
        )
        .unwrap_err();
        assert!(e.contains("returns None"), "{e}");
    }
}
