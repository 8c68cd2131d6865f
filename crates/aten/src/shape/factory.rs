//! Factories (`arange`, `zeros`, `ones`, `full`, `scalar_tensor`): constants sized by their
//! arguments alone.

use super::{check, MAX_SAMPLE};
use crate::args::Args;
use crate::program::Node;

/// The sizes of a factory's output (a constant: no batch), from its arguments; `op` is the
/// overload (`arange.default`). Sizes that are the batch never reach here (the batch is
/// not an int argument), so every size is fixed.
pub fn factory(node: &Node, op: &str) -> Result<Vec<u64>, String> {
    let args = Args(node);
    let dims = match op {
        "arange.default" | "arange.start" | "arange.start_step" => {
            let start = if op == "arange.default" {
                0.0
            } else {
                args.number("start")?
            };
            let end = args.number("end")?;
            let step = if op == "arange.start_step" {
                args.number("step")?
            } else {
                1.0
            };
            let count = ((end - start) / step).ceil().max(0.0);
            if step == 0.0 || !(0.0..=MAX_SAMPLE as f64).contains(&count) {
                return Err(format!("arange({start}, {end}, {step}) is out of range"));
            }
            vec![count as u64]
        }
        "scalar_tensor.default" => vec![],
        _ => args
            .optional_ints("size")?
            .ok_or("argument `size` is missing")?
            .iter()
            .map(|&d| u64::try_from(d).map_err(|_| format!("size {d}")))
            .collect::<Result<_, _>>()?,
    };
    check(&dims)?;
    Ok(dims)
}

#[cfg(test)]
mod tests {
    use super::super::tests::node;
    use super::*;

    #[test]
    fn arange_counts_its_steps_and_full_reads_its_size() {
        let range = node(
            r#"{"name": "start", "arg": {"as_int": 1}}, {"name": "end", "arg": {"as_float": 2.0}}, {"name": "step", "arg": {"as_float": 0.25}}"#,
        );
        assert_eq!(factory(&range, "arange.start_step"), Ok(vec![4]));
        let zero_step = node(
            r#"{"name": "start", "arg": {"as_int": 1}}, {"name": "end", "arg": {"as_int": 2}}, {"name": "step", "arg": {"as_int": 0}}"#,
        );
        assert!(factory(&zero_step, "arange.start_step").is_err());
        let full = node(r#"{"name": "size", "arg": {"as_ints": [2, 3]}}"#);
        assert_eq!(factory(&full, "full.default"), Ok(vec![2, 3]));
        let negative = node(r#"{"name": "size", "arg": {"as_ints": [-2]}}"#);
        assert!(factory(&negative, "zeros.default").is_err());
    }
}
