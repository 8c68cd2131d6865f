//! `lstm.input`, `gru.input`, `rnn_tanh.input` and `rnn_relu.input`: the output (per sample: sequence, directions × hidden)
//! and the final states, whose batch sits on their second axis.

use super::{Dims, DimsOf, Operands, MAX_DIM};
use crate::program::{Argument, Node};

/// The per-sample output of a recurrent layer; time-major input (`batch_first=False`) is
/// refused, as a trace cannot follow its batch.
pub(super) fn output(o: &Operands<'_>, node: &Node) -> Result<Vec<u64>, String> {
    let x = o.activation("input")?;
    if !o.args.bool("batch_first")? {
        return Err(
            "batch_first=False reads the sequence time-major, its batch second, which a trace cannot follow; use batch_first=True, or export the model with torch.export and a dynamic batch".into(),
        );
    }
    let [_, hidden] = states(node, o.dims)?;
    let directions = if o.args.bool("bidirectional")? { 2 } else { 1 };
    match x.as_slice() {
        &[seq, _] => Ok(vec![seq, directions * hidden]),
        _ => Err(format!(
            "a recurrent layer reads per-sample (sequence, features), got {x:?}"
        )),
    }
}

/// The sizes of an `lstm`/`gru`/`rnn_tanh`/`rnn_relu` node's final states other than the batch (which sits
/// between them): `[num_layers · directions, hidden]`, the hidden size read from the
/// first `weight_hh` (`[gates · hidden, hidden]`, the second of `params`).
pub fn states(node: &Node, dims: DimsOf<'_>) -> Result<[u64; 2], String> {
    let args = crate::args::Args(node);
    let layers = u64::try_from(args.int("num_layers")?)
        .ok()
        .filter(|l| (1..=MAX_DIM).contains(l))
        .ok_or("num_layers out of range")?;
    let directions = if args.bool("bidirectional")? { 2 } else { 1 };
    let Some(Argument::Tensors(params)) = args.get("params") else {
        return Err("argument `params` is not a list of weights".into());
    };
    match params.get(1).and_then(|w| dims(w)) {
        Some(Dims::Stored(w)) => match w.as_slice() {
            &[_, hidden] if hidden <= MAX_DIM => Ok([layers * directions, hidden]),
            _ => Err(format!(
                "the recurrent weight {w:?} is not [gates · hidden, hidden]"
            )),
        },
        _ => Err("the second of `params` is not a stored recurrent weight".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{infer, tests::node};
    use super::*;

    #[test]
    fn recurrent_outputs_follow_the_layers_directions_and_hidden_size() {
        let dims = |n: &str| match n {
            "x" => Some(Dims::PerSample(vec![7, 4])),
            "w_ih" => Some(Dims::Stored(vec![20, 4])),
            "w_hh" => Some(Dims::Stored(vec![20, 5])),
            _ => None,
        };
        let lstm = |flags: &str| {
            node(&format!(
                r#"{{"name": "input", "arg": {{"as_tensor": {{"name": "x"}}}}}},
                   {{"name": "params", "arg": {{"as_tensors": [{{"name": "w_ih"}}, {{"name": "w_hh"}}]}}}},
                   {{"name": "num_layers", "arg": {{"as_int": 3}}}}, {flags}"#
            ))
        };
        let both = lstm(
            r#"{"name": "bidirectional", "arg": {"as_bool": true}}, {"name": "batch_first", "arg": {"as_bool": true}}"#,
        );
        assert_eq!(infer(&both, "lstm.input", &dims), Ok(vec![7, 10]));
        assert_eq!(states(&both, &dims), Ok([6, 5]));
        let time_major = lstm(r#"{"name": "batch_first", "arg": {"as_bool": false}}"#);
        let err = infer(&time_major, "lstm.input", &dims).unwrap_err();
        assert!(err.contains("batch_first=True"), "{err}");
    }
}
