//! Tensor element types and how torch names them on disk.

use std::fmt;

/// Every dtype torch saves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// `torch.float64`.
    Float64,
    /// `torch.float32`.
    Float32,
    /// `torch.float16`.
    Float16,
    /// `torch.bfloat16`.
    BFloat16,
    /// `torch.int64`.
    Int64,
    /// `torch.int32`.
    Int32,
    /// `torch.int16`.
    Int16,
    /// `torch.int8`.
    Int8,
    /// `torch.uint8`.
    UInt8,
    /// `torch.bool`.
    Bool,
    /// `torch.complex128`.
    Complex128,
    /// `torch.complex64`.
    Complex64,
    /// `torch.complex32`.
    Complex32,
    /// `torch.qint8`.
    QInt8,
    /// `torch.qint32`.
    QInt32,
    /// `torch.quint8`.
    QUInt8,
    /// `torch.quint4x2`.
    QUInt4x2,
    /// `torch.quint2x4`.
    QUInt2x4,
    /// `torch.float8_e5m2`.
    Float8E5M2,
    /// `torch.float8_e4m3fn`.
    Float8E4M3Fn,
    /// `torch.float8_e5m2fnuz`.
    Float8E5M2Fnuz,
    /// `torch.float8_e4m3fnuz`.
    Float8E4M3Fnuz,
    /// `torch.float8_e8m0fnu`.
    Float8E8M0Fnu,
    /// `torch.float4_e2m1fn_x2`.
    Float4E2M1FnX2,
    /// `torch.bits8`.
    Bits8,
    /// `torch.bits1x8`.
    Bits1x8,
    /// `torch.bits2x4`.
    Bits2x4,
    /// `torch.bits4x2`.
    Bits4x2,
    /// `torch.bits16`.
    Bits16,
    /// `torch.uint16`.
    UInt16,
    /// `torch.uint32`.
    UInt32,
    /// `torch.uint64`.
    UInt64,
}

use DType::*;

/// `(dtype, torch attribute name, element bytes, typed storage class (table A), TorchScript
/// storage class)`. Table A classes are what `torch.save` writes with `_rebuild_tensor_v2`;
/// dtypes without one are written as `UntypedStorage` + `_rebuild_tensor_v3`.
const TABLE: &[(DType, &str, usize, Option<&str>, &str)] = &[
    (
        Float64,
        "float64",
        8,
        Some("DoubleStorage"),
        "DoubleStorage",
    ),
    (Float32, "float32", 4, Some("FloatStorage"), "FloatStorage"),
    (Float16, "float16", 2, Some("HalfStorage"), "HalfStorage"),
    (
        BFloat16,
        "bfloat16",
        2,
        Some("BFloat16Storage"),
        "BFloat16Storage",
    ),
    (Int64, "int64", 8, Some("LongStorage"), "LongStorage"),
    (Int32, "int32", 4, Some("IntStorage"), "IntStorage"),
    (Int16, "int16", 2, Some("ShortStorage"), "ShortStorage"),
    (Int8, "int8", 1, Some("CharStorage"), "CharStorage"),
    (UInt8, "uint8", 1, Some("ByteStorage"), "ByteStorage"),
    (Bool, "bool", 1, Some("BoolStorage"), "BoolStorage"),
    (
        Complex128,
        "complex128",
        16,
        Some("ComplexDoubleStorage"),
        "ComplexDoubleStorage",
    ),
    (
        Complex64,
        "complex64",
        8,
        Some("ComplexFloatStorage"),
        "ComplexFloatStorage",
    ),
    (Complex32, "complex32", 4, None, "ComplexHalfStorage"),
    (QInt8, "qint8", 1, Some("QInt8Storage"), "QInt8Storage"),
    (QInt32, "qint32", 4, Some("QInt32Storage"), "QInt32Storage"),
    (QUInt8, "quint8", 1, Some("QUInt8Storage"), "QUInt8Storage"),
    (
        QUInt4x2,
        "quint4x2",
        1,
        Some("QUInt4x2Storage"),
        "QUInt4x2Storage",
    ),
    (
        QUInt2x4,
        "quint2x4",
        1,
        Some("QUInt2x4Storage"),
        "QUInt2x4Storage",
    ),
    (Float8E5M2, "float8_e5m2", 1, None, "Float8_e5m2Storage"),
    (
        Float8E4M3Fn,
        "float8_e4m3fn",
        1,
        None,
        "Float8_e4m3fnStorage",
    ),
    (
        Float8E5M2Fnuz,
        "float8_e5m2fnuz",
        1,
        None,
        "Float8_e5m2fnuzStorage",
    ),
    (
        Float8E4M3Fnuz,
        "float8_e4m3fnuz",
        1,
        None,
        "Float8_e4m3fnuzStorage",
    ),
    (
        Float8E8M0Fnu,
        "float8_e8m0fnu",
        1,
        None,
        "Float8_e8m0fnuStorage",
    ),
    (
        Float4E2M1FnX2,
        "float4_e2m1fn_x2",
        1,
        None,
        "Float4_e2m1fn_x2Storage",
    ),
    (Bits8, "bits8", 1, None, "Bits8Storage"),
    (Bits1x8, "bits1x8", 1, None, "Bits1x8Storage"),
    (Bits2x4, "bits2x4", 1, None, "Bits2x4Storage"),
    (Bits4x2, "bits4x2", 1, None, "Bits4x2Storage"),
    (Bits16, "bits16", 2, None, "Bits16Storage"),
    (UInt16, "uint16", 2, None, "UInt16Storage"),
    (UInt32, "uint32", 4, None, "UInt32Storage"),
    (UInt64, "uint64", 8, None, "UInt64Storage"),
];

/// Python aliases torch accepts for the same dtype objects (`torch.float` is `torch.float32`).
const ALIASES: &[(&str, DType)] = &[
    ("float", Float32),
    ("double", Float64),
    ("half", Float16),
    ("long", Int64),
    ("int", Int32),
    ("short", Int16),
    ("cfloat", Complex64),
    ("cdouble", Complex128),
    ("chalf", Complex32),
];

impl DType {
    fn row(
        self,
    ) -> &'static (
        DType,
        &'static str,
        usize,
        Option<&'static str>,
        &'static str,
    ) {
        // Every variant has exactly one row; the table test guards it.
        TABLE.iter().find(|row| row.0 == self).unwrap_or(&TABLE[0])
    }

    /// torch's attribute name: `float32`, `bfloat16`, `float8_e4m3fn`…
    pub fn name(self) -> &'static str {
        self.row().1
    }

    /// Bytes per element as stored (a packed type counts its packed byte).
    pub fn element_size(self) -> usize {
        self.row().2
    }

    /// The typed storage class `torch.save` writes, when this dtype has one (table A).
    pub fn storage_class(self) -> Option<&'static str> {
        self.row().3
    }

    /// Whether `torch.save` writes it with `_rebuild_tensor_v2` and a typed storage, the only
    /// form torch ≤ 2.1 and the legacy format can hold.
    pub fn is_legacy(self) -> bool {
        self.storage_class().is_some()
    }

    /// The plain integer types (and bool), whose values are exact as `i64`.
    /// Whether it is a (non-quantized) integer type or `bool`.
    pub fn is_integer(self) -> bool {
        matches!(self, Int64 | Int32 | Int16 | Int8 | UInt8 | Bool)
    }

    /// Whether torch's `is_floating_point` is true for it.
    pub fn is_floating_point(self) -> bool {
        matches!(
            self,
            Float64
                | Float32
                | Float16
                | BFloat16
                | Float8E5M2
                | Float8E4M3Fn
                | Float8E5M2Fnuz
                | Float8E4M3Fnuz
                | Float8E8M0Fnu
        )
    }

    /// The dtype a `torch.<name>` global names (`torch.float16`, `torch.half`).
    pub fn from_name(name: &str) -> Option<DType> {
        TABLE
            .iter()
            .find(|row| row.1 == name)
            .map(|row| row.0)
            .or_else(|| ALIASES.iter().find(|(a, _)| *a == name).map(|(_, d)| *d))
    }

    /// The dtype of a storage class name, in either the `torch.save` or the TorchScript
    /// spelling (`FloatStorage`, `Float8_e4m3fnStorage`). `None` for `UntypedStorage`.
    pub fn from_storage_class(name: &str) -> Option<DType> {
        TABLE
            .iter()
            .find(|row| row.3 == Some(name) || row.4 == name)
            .map(|row| row.0)
    }

    /// Every dtype, in table order.
    pub fn all() -> impl Iterator<Item = DType> {
        TABLE.iter().map(|row| row.0)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_one_row_per_dtype_and_names_round_trip() {
        for dtype in DType::all() {
            assert_eq!(TABLE.iter().filter(|r| r.0 == dtype).count(), 1);
            assert_eq!(DType::from_name(dtype.name()), Some(dtype));
        }
    }

    #[test]
    fn storage_classes_resolve_in_both_spellings() {
        assert_eq!(DType::from_storage_class("HalfStorage"), Some(Float16));
        assert_eq!(
            DType::from_storage_class("Float8_e4m3fnStorage"),
            Some(Float8E4M3Fn)
        );
        assert_eq!(DType::from_storage_class("UInt16Storage"), Some(UInt16));
        assert_eq!(DType::from_storage_class("UntypedStorage"), None);
    }

    #[test]
    fn new_dtypes_are_not_legacy() {
        assert!(BFloat16.is_legacy());
        assert!(!Float8E5M2.is_legacy());
        assert!(!UInt32.is_legacy());
        assert!(!Complex32.is_legacy());
    }

    #[test]
    fn aliases_resolve() {
        assert_eq!(DType::from_name("half"), Some(Float16));
        assert_eq!(DType::from_name("cfloat"), Some(Complex64));
    }
}
