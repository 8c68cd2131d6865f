//! The element types an exported graph's values may have: float32 activations, and the
//! int64/int32/bool tensors of token models (ids, attention masks, comparison results,
//! argmax indices). Each type is declared once here with its ONNX number and the number
//! torch.export's schema gives it.

use std::fmt;

use super::proto::tensor_proto::DataType;

/// The element type of a graph value or initializer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    Float32,
    Int64,
    Int32,
    Bool,
}

impl ElemType {
    const ALL: [ElemType; 4] = [
        ElemType::Float32,
        ElemType::Int64,
        ElemType::Int32,
        ElemType::Bool,
    ];

    /// The ONNX data type, torch.export's schema number and torch's name.
    fn facts(self) -> (DataType, i64, &'static str) {
        match self {
            ElemType::Float32 => (DataType::Float, 7, "float32"),
            ElemType::Int64 => (DataType::Int64, 5, "int64"),
            ElemType::Int32 => (DataType::Int32, 4, "int32"),
            ElemType::Bool => (DataType::Bool, 12, "bool"),
        }
    }

    /// The ONNX `TensorProto.DataType`.
    pub fn data_type(self) -> DataType {
        self.facts().0
    }

    /// The type torch.export's schema numbers `number` (`ScalarType`: 7 float32, 5 int64,
    /// 4 int32, 12 bool), or `None` for a type the export does not handle.
    pub fn from_export(number: i64) -> Option<ElemType> {
        Self::ALL.into_iter().find(|t| t.facts().1 == number)
    }

    /// torch's name (`int64`).
    pub fn name(self) -> &'static str {
        self.facts().2
    }

    /// Whether the type holds integers (not bool, not float).
    pub fn is_integer(self) -> bool {
        matches!(self, ElemType::Int64 | ElemType::Int32)
    }

    /// `value` as one little-endian element of this type; `None` when it is not exactly
    /// representable (a fraction for an integer type, anything but 0/1 for bool).
    pub fn encode(self, value: f64) -> Option<Vec<u8>> {
        let integral = value.fract() == 0.0;
        match self {
            ElemType::Float32 => Some((value as f32).to_le_bytes().to_vec()),
            ElemType::Int64 if integral && value.abs() < 9.0e15 => {
                Some((value as i64).to_le_bytes().to_vec())
            }
            ElemType::Int32 if integral && value.abs() <= f64::from(i32::MAX) => {
                Some((value as i32).to_le_bytes().to_vec())
            }
            ElemType::Bool if value == 0.0 || value == 1.0 => Some(vec![value as u8]),
            _ => None,
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The export schema's dtype number as a message fragment: `int64`, or `dtype 8` for one
/// the export does not handle.
pub fn export_name(number: i64) -> String {
    ElemType::from_export(number).map_or_else(|| format!("dtype {number}"), |t| t.to_string())
}

/// Why a tensor of torch.export dtype `number` is not exported (it is no [`ElemType`]): the
/// opset-11 or ATC fact in the way.
pub fn not_exported_because(number: i64) -> &'static str {
    match number {
        9..=11 => "opset 11 has no complex element type",
        13 => "opset 11 cannot cast to bfloat16 (ONNX's Cast gained it in opset 13)",
        29..=33 => "opset 11 has no float8 element types (ONNX added them in opset 19)",
        6 => "the graph computes in float32 and ATC chooses the precision it runs at (`--precision_mode`), so torch's float16 rounding would not be reproduced; export the float32 model",
        8 => "the graph computes in float32, which would not hold float64's precision",
        1..=3 | 28 | 34 | 35 => "ONNX's Cast leaves a value outside the integer type's range undefined, where torch wraps it",
        _ => "it is no tensor element type the export knows",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unexported_dtype_has_a_reason() {
        assert!(not_exported_because(10).contains("complex"));
        assert!(not_exported_because(13).contains("opset 13"));
        assert!(not_exported_because(1).contains("Cast"));
    }

    #[test]
    fn schema_numbers_map_to_onnx_types() {
        assert_eq!(ElemType::from_export(5), Some(ElemType::Int64));
        assert_eq!(ElemType::from_export(12), Some(ElemType::Bool));
        assert_eq!(ElemType::from_export(8), None);
        assert_eq!(ElemType::Bool.data_type(), DataType::Bool);
        assert_eq!(export_name(8), "dtype 8");
        assert_eq!(export_name(4), "int32");
    }

    #[test]
    fn scalars_encode_only_when_exact() {
        assert_eq!(
            ElemType::Int64.encode(-3.0),
            Some((-3i64).to_le_bytes().to_vec())
        );
        assert_eq!(ElemType::Int64.encode(0.5), None);
        assert_eq!(ElemType::Bool.encode(1.0), Some(vec![1]));
        assert_eq!(ElemType::Bool.encode(2.0), None);
        assert_eq!(
            ElemType::Float32.encode(f64::NEG_INFINITY).map(|b| b.len()),
            Some(4)
        );
    }
}
