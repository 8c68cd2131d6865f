//! The ONNX graph's interface as `check` needs it: each graph input's name, batch dimension
//! and per-sample shape, and the output names in graph order.

use std::collections::HashSet;
use std::path::Path;

use prost::Message;

use super::CheckError;
use ckpt_onnx::proto::{
    tensor_proto::DataType, tensor_shape_proto::dimension::Value as Dim, type_proto, ModelProto,
    ValueInfoProto,
};
use ckpt_onnx::Batch;

/// One graph input: float32, `[batch, per_sample…]` with every per-sample size fixed.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// The input's name.
    pub name: String,
    /// How its batch dimension is declared.
    pub batch: Batch,
    /// The sizes after the batch.
    pub per_sample: Vec<usize>,
}

/// The inputs (initializers listed as inputs excluded) and outputs, in graph order; neither
/// list is empty.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    /// The graph inputs.
    pub inputs: Vec<Input>,
    /// The output names.
    pub outputs: Vec<String>,
}

impl Signature {
    /// Reads the graph interface of the ONNX file at `path` (external data is not read).
    pub fn read(path: &Path) -> Result<Signature, CheckError> {
        let bytes = std::fs::read(path).map_err(|e| CheckError::new(path, e))?;
        let model = ModelProto::decode(bytes.as_slice())
            .map_err(|e| CheckError::new(path, format!("not an ONNX model: {e}")))?;
        Signature::of(&model).map_err(|e| CheckError::new(path, e))
    }

    /// The interface of a decoded model, or what makes it uncheckable.
    pub fn of(model: &ModelProto) -> Result<Signature, String> {
        let graph = model.graph.as_ref().ok_or("the model has no graph")?;
        let initializers: HashSet<&str> = graph
            .initializer
            .iter()
            .filter_map(|t| t.name.as_deref())
            .collect();
        let inputs = graph
            .input
            .iter()
            .filter(|i| !initializers.contains(i.name.as_deref().unwrap_or("")))
            .map(input)
            .collect::<Result<Vec<_>, _>>()?;
        let outputs: Vec<String> = graph
            .output
            .iter()
            .map(|o| o.name.clone().unwrap_or_default())
            .collect();
        if inputs.is_empty() {
            return Err("the graph has no input to feed".to_owned());
        }
        if outputs.is_empty() {
            return Err("the graph has no output".to_owned());
        }
        Ok(Signature { inputs, outputs })
    }

    /// Refuses a batch size an input with a fixed batch dimension cannot take.
    pub fn accept_batches(&self, batches: &[u64], path: &Path) -> Result<(), CheckError> {
        for input in &self.inputs {
            if let Batch::Fixed(n) = input.batch {
                if let Some(b) = batches.iter().find(|&&b| b != n) {
                    return Err(CheckError::new(
                        path,
                        format!(
                            "input `{}` has a fixed batch of {n}, so batch {b} cannot be \
                             checked: pass --batches {n}, or export with a dynamic batch",
                            input.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A graph input as [`Input`], or why it cannot be fed random float32 samples.
fn input(info: &ValueInfoProto) -> Result<Input, String> {
    let name = info.name.clone().unwrap_or_default();
    let Some(type_proto::Value::TensorType(tensor)) =
        info.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        return Err(format!("input `{name}` is not a tensor"));
    };
    if tensor.elem_type != Some(DataType::Float as i32) {
        return Err(format!(
            "input `{name}` is not float32 (ONNX element type {:?}); only float32 inputs can be \
             checked",
            tensor.elem_type
        ));
    }
    let dims = tensor
        .shape
        .as_ref()
        .map(|s| s.dim.as_slice())
        .unwrap_or_default();
    let Some((first, rest)) = dims.split_first() else {
        return Err(format!(
            "input `{name}` has no batch dimension (its shape is unknown or a scalar)"
        ));
    };
    let batch = match &first.value {
        Some(Dim::DimParam(p)) if !p.is_empty() => Batch::Dynamic(p.clone()),
        Some(Dim::DimValue(n)) if *n > 0 => Batch::Fixed(*n as u64),
        other => {
            return Err(format!(
                "input `{name}`: the first dimension must be the batch (a symbol or a size), \
                 not {other:?}"
            ))
        }
    };
    let per_sample = rest
        .iter()
        .map(|d| match d.value {
            Some(Dim::DimValue(n)) if n > 0 => usize::try_from(n).ok(),
            _ => None,
        })
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| {
            format!("input `{name}`: every dimension after the batch must be a fixed size")
        })?;
    Ok(Input {
        name,
        batch,
        per_sample,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckpt_onnx::proto::{tensor_shape_proto, GraphProto, TensorShapeProto, TypeProto};

    fn value(name: &str, elem: DataType, dims: Vec<Option<Dim>>) -> ValueInfoProto {
        ValueInfoProto {
            name: Some(name.to_owned()),
            r#type: Some(TypeProto {
                value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                    elem_type: Some(elem as i32),
                    shape: Some(TensorShapeProto {
                        dim: dims
                            .into_iter()
                            .map(|value| tensor_shape_proto::Dimension {
                                value,
                                ..Default::default()
                            })
                            .collect(),
                    }),
                })),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn model(inputs: Vec<ValueInfoProto>, outputs: &[&str]) -> ModelProto {
        ModelProto {
            graph: Some(GraphProto {
                input: inputs,
                output: outputs
                    .iter()
                    .map(|o| value(o, DataType::Float, vec![]))
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn batch_chw(name: &str, first: Dim) -> ValueInfoProto {
        let fixed = |n| Some(Dim::DimValue(n));
        value(
            name,
            DataType::Float,
            vec![Some(first), fixed(3), fixed(4), fixed(5)],
        )
    }

    #[test]
    fn reads_several_inputs_and_outputs_in_order() {
        let m = model(
            vec![
                batch_chw("image", Dim::DimParam("batch".into())),
                batch_chw("mask", Dim::DimParam("batch".into())),
            ],
            &["logits", "boxes"],
        );
        let s = Signature::of(&m).unwrap();
        assert_eq!(s.outputs, ["logits", "boxes"]);
        assert_eq!(s.inputs.len(), 2);
        assert_eq!(s.inputs[1].name, "mask");
        assert_eq!(s.inputs[1].per_sample, [3, 4, 5]);
        assert_eq!(s.inputs[1].batch, Batch::Dynamic("batch".into()));
    }

    #[test]
    fn a_fixed_batch_accepts_only_its_size() {
        let m = model(vec![batch_chw("input", Dim::DimValue(2))], &["output"]);
        let s = Signature::of(&m).unwrap();
        let path = Path::new("m.onnx");
        assert!(s.accept_batches(&[2], path).is_ok());
        let e = s.accept_batches(&[2, 3], path).unwrap_err();
        assert!(e.message.contains("fixed batch of 2"), "{e}");
        assert!(e.message.contains("--batches 2"), "{e}");
    }

    #[test]
    fn uncheckable_inputs_are_refused_by_name() {
        let ids = value(
            "ids",
            DataType::Int64,
            vec![Some(Dim::DimParam("batch".into()))],
        );
        let e = Signature::of(&model(vec![ids], &["o"])).unwrap_err();
        assert!(e.contains("`ids` is not float32"), "{e}");
        let free = value(
            "x",
            DataType::Float,
            vec![
                Some(Dim::DimParam("batch".into())),
                Some(Dim::DimParam("len".into())),
            ],
        );
        let e = Signature::of(&model(vec![free], &["o"])).unwrap_err();
        assert!(e.contains("`x`: every dimension after the batch"), "{e}");
        let e = Signature::of(&model(vec![], &["o"])).unwrap_err();
        assert!(e.contains("no input"), "{e}");
    }
}
