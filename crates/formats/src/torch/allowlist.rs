//! torch 2.13's `weights_only=True` allow-list (`torch/_weights_only_unpickler.py`,
//! `_get_allowed_globals`): the globals a default `torch.load` accepts.

use ckpt_pickle::Global;

/// The allow-list, as `module.name` after Python 2 names are mapped to Python 3.
pub const WEIGHTS_ONLY_GLOBALS: [&str; 144] = [
    "collections.OrderedDict",
    "collections.Counter",
    "torch.nn.parameter.Parameter",
    "torch.serialization._get_layout",
    "torch.Size",
    "torch.Tensor",
    "torch.device",
    "_codecs.encode",
    "builtins.bytearray",
    "builtins.set",
    "builtins.complex",
    "torch.float64",
    "torch.float32",
    "torch.float16",
    "torch.bfloat16",
    "torch.int64",
    "torch.int32",
    "torch.int16",
    "torch.int8",
    "torch.uint8",
    "torch.bool",
    "torch.complex128",
    "torch.complex64",
    "torch.complex32",
    "torch.qint8",
    "torch.qint32",
    "torch.quint8",
    "torch.quint4x2",
    "torch.quint2x4",
    "torch.float8_e5m2",
    "torch.float8_e4m3fn",
    "torch.float8_e5m2fnuz",
    "torch.float8_e4m3fnuz",
    "torch.float8_e8m0fnu",
    "torch.float4_e2m1fn_x2",
    "torch.bits8",
    "torch.bits16",
    "torch.bits1x8",
    "torch.bits2x4",
    "torch.bits4x2",
    "torch.uint1",
    "torch.uint2",
    "torch.uint3",
    "torch.uint4",
    "torch.uint5",
    "torch.uint6",
    "torch.uint7",
    "torch.uint16",
    "torch.uint32",
    "torch.uint64",
    "torch.int1",
    "torch.int2",
    "torch.int3",
    "torch.int4",
    "torch.int5",
    "torch.int6",
    "torch.int7",
    "torch.DoubleTensor",
    "torch.FloatTensor",
    "torch.HalfTensor",
    "torch.BFloat16Tensor",
    "torch.LongTensor",
    "torch.IntTensor",
    "torch.ShortTensor",
    "torch.CharTensor",
    "torch.ByteTensor",
    "torch.BoolTensor",
    "torch.cuda.DoubleTensor",
    "torch.cuda.FloatTensor",
    "torch.cuda.HalfTensor",
    "torch.cuda.BFloat16Tensor",
    "torch.cuda.LongTensor",
    "torch.cuda.IntTensor",
    "torch.cuda.ShortTensor",
    "torch.cuda.CharTensor",
    "torch.cuda.ByteTensor",
    "torch.cuda.BoolTensor",
    "torch.sparse.DoubleTensor",
    "torch.sparse.FloatTensor",
    "torch.sparse.HalfTensor",
    "torch.sparse.BFloat16Tensor",
    "torch.sparse.LongTensor",
    "torch.sparse.IntTensor",
    "torch.sparse.ShortTensor",
    "torch.sparse.CharTensor",
    "torch.sparse.ByteTensor",
    "torch.cuda.sparse.DoubleTensor",
    "torch.cuda.sparse.FloatTensor",
    "torch.cuda.sparse.HalfTensor",
    "torch.cuda.sparse.BFloat16Tensor",
    "torch.cuda.sparse.LongTensor",
    "torch.cuda.sparse.IntTensor",
    "torch.cuda.sparse.ShortTensor",
    "torch.cuda.sparse.CharTensor",
    "torch.cuda.sparse.ByteTensor",
    "torch.DoubleStorage",
    "torch.FloatStorage",
    "torch.HalfStorage",
    "torch.BFloat16Storage",
    "torch.LongStorage",
    "torch.IntStorage",
    "torch.ShortStorage",
    "torch.CharStorage",
    "torch.ByteStorage",
    "torch.BoolStorage",
    "torch.ComplexDoubleStorage",
    "torch.ComplexFloatStorage",
    "torch.QInt8Storage",
    "torch.QInt32Storage",
    "torch.QUInt8Storage",
    "torch.QUInt4x2Storage",
    "torch.QUInt2x4Storage",
    "torch.cuda.DoubleStorage",
    "torch.cuda.FloatStorage",
    "torch.cuda.HalfStorage",
    "torch.cuda.BFloat16Storage",
    "torch.cuda.LongStorage",
    "torch.cuda.IntStorage",
    "torch.cuda.ShortStorage",
    "torch.cuda.CharStorage",
    "torch.cuda.ByteStorage",
    "torch.cuda.BoolStorage",
    "torch.cuda.ComplexDoubleStorage",
    "torch.cuda.ComplexFloatStorage",
    "torch.storage.TypedStorage",
    "torch.storage.UntypedStorage",
    "torch.per_tensor_affine",
    "torch.per_tensor_symmetric",
    "torch.per_channel_affine",
    "torch.per_channel_symmetric",
    "torch.per_channel_affine_float_qparams",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_qtensor",
    "torch._utils._rebuild_sparse_tensor",
    "torch._utils._rebuild_meta_tensor_no_storage",
    "torch._utils._rebuild_nested_tensor",
    "torch._utils._rebuild_wrapper_subclass",
    "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor",
    "torch._tensor._rebuild_from_type_v2",
];

/// Modules refused even when allow-listed.
const BLOCKED_MODULES: [&str; 4] = ["sys", "os", "posix", "nt"];

/// Whether a default `torch.load` (weights_only) accepts this global.
pub fn is_allowed(global: &Global) -> bool {
    let canonical = global.canonical();
    if BLOCKED_MODULES.contains(&canonical.module.as_str()) {
        return false;
    }
    let full = canonical.to_string();
    WEIGHTS_ONLY_GLOBALS.contains(&full.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_list_matches_torch_2_13_size() {
        // torch 2.13's _get_allowed_globals() returns 144 names.
        assert_eq!(WEIGHTS_ONLY_GLOBALS.len(), 144);
    }

    #[test]
    fn python2_spellings_are_mapped() {
        assert!(is_allowed(&Global::new("__builtin__", "set")));
        assert!(is_allowed(&Global::new(
            "torch._utils",
            "_rebuild_tensor_v2"
        )));
        assert!(!is_allowed(&Global::new("argparse", "Namespace")));
        assert!(!is_allowed(&Global::new("posix", "system")));
        assert!(!is_allowed(&Global::new(
            "torch_npu.utils.storage",
            "_rebuild_npu_tensor"
        )));
    }
}
