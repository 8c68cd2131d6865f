//! Reading a tensor's values as `f32`: the one place the ONNX exporter decodes weights.

use super::checkpoint::{Checkpoint, MappedBytes};
use super::contiguous::{increment, is_contiguous};
use super::dtype::DType;
use super::tensor::TensorRef;
use super::TorchError;

/// The byte order of a checkpoint's storages: zip files record it (`byteorder`, torch ≥ 2.1)
/// and default to little endian; legacy files are little endian in practice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

impl ByteOrder {
    /// The order `ckpt`'s storages use.
    pub fn of(ckpt: &Checkpoint) -> ByteOrder {
        match ckpt.zip.as_ref().and_then(|m| m.byteorder.as_deref()) {
            Some("big") => ByteOrder::Big,
            _ => ByteOrder::Little,
        }
    }
}

/// `tensor`'s values in row-major (C-contiguous) order, converted to `f32`.
///
/// Honours the view's storage offset and strides; reads only the storage bytes the view
/// spans. Supports float32, float16, bfloat16 and float64 (rounded to nearest).
pub fn read_f32(ckpt: &mut Checkpoint, tensor: &TensorRef) -> Result<Vec<f32>, TorchError> {
    check_float(tensor.dtype)?;
    if let Some(mapped) = map_tensor(ckpt, tensor)? {
        let values = mapped.values();
        mapped.release();
        return Ok(values);
    }
    read_values(ckpt, tensor, decode)
}

fn check_float(dtype: DType) -> Result<(), TorchError> {
    match dtype {
        DType::Float32 | DType::Float16 | DType::BFloat16 | DType::Float64 => Ok(()),
        other => Err(TorchError::Unsupported {
            what: format!("reading {} tensors as float32", other.name()),
        }),
    }
}

/// Integer `tensor`'s values ([`DType::is_integer`]: an index buffer) in row-major order,
/// exact.
pub fn read_i64(ckpt: &mut Checkpoint, tensor: &TensorRef) -> Result<Vec<i64>, TorchError> {
    if !tensor.dtype.is_integer() {
        return Err(TorchError::Unsupported {
            what: format!("reading {} tensors as integers", tensor.dtype.name()),
        });
    }
    read_values(ckpt, tensor, decode_integer)
}

/// A floating-point tensor whose bytes are in the mapped input file
/// ([`Checkpoint::map_storage`]): its values can be read, or its bytes borrowed, without
/// reading the file into memory.
#[derive(Clone, Debug)]
pub struct MappedTensor {
    /// From the view's first element to the end of its extent.
    bytes: MappedBytes,
    dtype: DType,
    order: ByteOrder,
    shape: Vec<u64>,
    strides: Vec<u64>,
    numel: usize,
}

/// `tensor` in the mapped input, if its storage is mapped ([`Checkpoint::map_storage`]) and
/// it is a float tensor [`read_f32`] reads; `None` otherwise (read it with [`read_f32`]).
pub fn map_tensor(
    ckpt: &Checkpoint,
    tensor: &TensorRef,
) -> Result<Option<MappedTensor>, TorchError> {
    check_float(tensor.dtype)?;
    let invalid = || TorchError::Invalid {
        what: format!(
            "tensor of shape {:?} does not fit storage `{}`",
            tensor.shape, tensor.storage.key
        ),
    };
    let numel = usize::try_from(tensor.numel()).map_err(|_| invalid())?;
    if numel == 0 {
        return Ok(None);
    }
    let size = tensor.dtype.element_size() as u64;
    let strides: Vec<u64> = tensor
        .stride
        .iter()
        .map(|&s| u64::try_from(s).map_err(|_| invalid()))
        .collect::<Result<_, _>>()?;
    let extent = tensor.extent().ok_or_else(invalid)?;
    let first = tensor.offset.checked_mul(size).ok_or_else(invalid)?;
    let span = (extent - tensor.offset)
        .checked_mul(size)
        .ok_or_else(invalid)?;
    let Some(storage) = ckpt.map_storage(&tensor.storage.key)? else {
        return Ok(None);
    };
    let bytes = storage.range(first, span).ok_or_else(invalid)?;
    Ok(Some(MappedTensor::new(
        bytes,
        tensor.dtype,
        ByteOrder::of(ckpt),
        tensor.shape.clone(),
        strides,
        numel,
    )))
}

impl MappedTensor {
    /// The view of `numel` elements of `shape` and `strides` (in elements) whose first
    /// element starts `bytes`. The caller has checked that `bytes` spans the view's extent
    /// and that `dtype` is a float type [`read_f32`] reads.
    pub fn new(
        bytes: MappedBytes,
        dtype: DType,
        order: ByteOrder,
        shape: Vec<u64>,
        strides: Vec<u64>,
        numel: usize,
    ) -> MappedTensor {
        MappedTensor {
            bytes,
            dtype,
            order,
            shape,
            strides,
            numel,
        }
    }

    /// Elements in the view.
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// The view's shape.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The values' bytes as they are, when they already are what ONNX stores: float32,
    /// little endian, row-major.
    pub fn f32_le(&self) -> Option<&[u8]> {
        let plain = self.dtype == DType::Float32
            && self.order == ByteOrder::Little
            && is_contiguous(&self.shape, &self.strides);
        plain.then(|| &self.bytes.bytes()[..self.numel * 4])
    }

    /// The values as float32 little-endian bytes in row-major order, written to `out`
    /// (cleared first): [`MappedTensor::f32_le`]'s bytes, or each element decoded.
    pub fn decode_le(&self, out: &mut Vec<u8>) {
        out.clear();
        if let Some(bytes) = self.f32_le() {
            out.extend_from_slice(bytes);
            return;
        }
        out.reserve(self.numel * 4);
        self.for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    }

    /// The values in row-major order.
    pub fn values(&self) -> Vec<f32> {
        if let Some(bytes) = self.f32_le() {
            return bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
        }
        let mut values = Vec::with_capacity(self.numel);
        self.for_each(|v| values.push(v));
        values
    }

    /// Calls `f` on every value in row-major order, decoded.
    fn for_each(&self, mut f: impl FnMut(f32)) {
        let bytes = self.bytes.bytes();
        let size = self.dtype.element_size();
        // Every position is below the view's extent, which `bytes` spans (`map_tensor`).
        let element = |index: u64| {
            let at = index as usize * size;
            decode(&bytes[at..at + size], self.dtype, self.order)
        };
        if is_contiguous(&self.shape, &self.strides) {
            (0..self.numel as u64).for_each(|i| f(element(i)));
        } else {
            let mut index = vec![0u64; self.shape.len()];
            for _ in 0..self.numel {
                let position: u64 = index.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
                f(element(position));
                increment(&mut index, &self.shape);
            }
        }
    }

    /// Rows `first..first + count` along the first axis, as a view of the same bytes.
    pub fn rows(&self, first: u64, count: u64) -> Option<MappedTensor> {
        let (&rows, _) = self.shape.split_first()?;
        let &stride = self.strides.first()?;
        if first.checked_add(count)? > rows || count == 0 {
            return None;
        }
        let mut shape = self.shape.clone();
        shape[0] = count;
        let size = self.dtype.element_size() as u64;
        // The narrowed view's extent, from its first element.
        let mut last = 0u64;
        for (&n, &s) in shape.iter().zip(&self.strides) {
            last = last.checked_add((n - 1).checked_mul(s)?)?;
        }
        let start = first.checked_mul(stride)?.checked_mul(size)?;
        let span = last.checked_add(1)?.checked_mul(size)?;
        Some(MappedTensor {
            bytes: self.bytes.range(start, span)?,
            dtype: self.dtype,
            order: self.order,
            numel: usize::try_from(shape.iter().product::<u64>()).ok()?,
            shape,
            strides: self.strides.clone(),
        })
    }

    /// Whether `self` and `other` are the same view of the same bytes.
    pub fn same(&self, other: &MappedTensor) -> bool {
        self.bytes.same(&other.bytes)
            && self.dtype == other.dtype
            && self.shape == other.shape
            && self.strides == other.strides
    }

    /// Unmaps the view's pages from this process ([`MappedBytes::release`]).
    pub fn release(&self) {
        self.bytes.release();
    }
}

/// `tensor`'s elements in row-major order, each decoded by `decode` from its bytes.
fn read_values<T>(
    ckpt: &mut Checkpoint,
    tensor: &TensorRef,
    decode: fn(&[u8], DType, ByteOrder) -> T,
) -> Result<Vec<T>, TorchError> {
    let order = ByteOrder::of(ckpt);
    let size = tensor.dtype.element_size() as u64;
    let numel = tensor.numel();
    if numel == 0 {
        return Ok(Vec::new());
    }
    let invalid = || TorchError::Invalid {
        what: format!(
            "tensor of shape {:?} does not fit storage `{}`",
            tensor.shape, tensor.storage.key
        ),
    };
    let extent = tensor.extent().ok_or_else(invalid)?;
    let first = tensor.offset;
    let bytes = ckpt.read_storage_range(
        &tensor.storage.key,
        first.checked_mul(size).ok_or_else(invalid)?,
        (extent - first).checked_mul(size).ok_or_else(invalid)?,
    )?;
    view_values(&bytes, tensor, order, decode).ok_or_else(invalid)
}

/// `tensor`'s elements in row-major order, decoded from `bytes`, which start at its first
/// element (`offset`) and hold its whole extent; `None` when they do not.
pub fn view_values<T>(
    bytes: &[u8],
    tensor: &TensorRef,
    order: ByteOrder,
    decode: fn(&[u8], DType, ByteOrder) -> T,
) -> Option<Vec<T>> {
    let size = tensor.dtype.element_size() as u64;
    let numel = tensor.numel();
    if numel == 0 {
        return Some(Vec::new());
    }
    let strides: Vec<u64> = tensor
        .stride
        .iter()
        .map(|&s| u64::try_from(s).ok())
        .collect::<Option<_>>()?;
    let span = tensor
        .extent()?
        .checked_sub(tensor.offset)?
        .checked_mul(size)?;
    if (bytes.len() as u64) < span {
        return None;
    }
    let mut values = Vec::with_capacity(usize::try_from(numel).ok()?);
    let element = |index: u64| -> T {
        // `index < extent - offset` and `bytes` holds that span, so the slice is in bounds.
        let at = (index * size) as usize;
        decode(&bytes[at..at + size as usize], tensor.dtype, order)
    };
    if is_contiguous(&tensor.shape, &strides) {
        values.extend((0..numel).map(element));
    } else {
        let mut index = vec![0u64; tensor.shape.len()];
        for _ in 0..numel {
            let position: u64 = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
            values.push(element(position));
            increment(&mut index, &tensor.shape);
        }
    }
    Some(values)
}

/// One element of integer `dtype` ([`DType::is_integer`]) from its `bytes` in `order`.
pub fn decode_integer(bytes: &[u8], dtype: DType, order: ByteOrder) -> i64 {
    let mut raw = [0u8; 8];
    raw[..bytes.len()].copy_from_slice(bytes);
    if order == ByteOrder::Big {
        raw[..bytes.len()].reverse();
    }
    match dtype {
        DType::Int32 => i64::from(i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
        DType::Int16 => i64::from(i16::from_le_bytes([raw[0], raw[1]])),
        DType::Int8 => i64::from(raw[0] as i8),
        DType::UInt8 | DType::Bool => i64::from(raw[0]),
        _ => i64::from_le_bytes(raw),
    }
}

/// One element of `dtype` (a float type, or an integer type whose values are then rounded
/// to the nearest `f32`, exact below 2^24) from its `bytes` in `order`, as `f32`.
pub fn decode(bytes: &[u8], dtype: DType, order: ByteOrder) -> f32 {
    let mut raw = [0u8; 8];
    raw[..bytes.len()].copy_from_slice(bytes);
    if order == ByteOrder::Big {
        raw[..bytes.len()].reverse();
    }
    match dtype {
        DType::Float32 => f32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]),
        DType::Float64 => f64::from_le_bytes(raw) as f32,
        DType::BFloat16 => f32::from_bits(u32::from(u16::from_le_bytes([raw[0], raw[1]])) << 16),
        DType::Int64 => i64::from_le_bytes(raw) as f32,
        DType::Int32 => i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as f32,
        _ => f16_to_f32(u16::from_le_bytes([raw[0], raw[1]])),
    }
}

/// IEEE binary16 → binary32, exact (every half value is a float).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let mant = u32::from(h & 0x3ff);
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m × 2^-24.
            return if sign != 0 { -(m as f32) } else { m as f32 } * f32::powi(2.0, -24);
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversion() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8001), -(2f32.powi(-24)));
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn decoding_honours_byte_order() {
        let le = 1.5f32.to_le_bytes();
        let be = 1.5f32.to_be_bytes();
        assert_eq!(decode(&le, DType::Float32, ByteOrder::Little), 1.5);
        assert_eq!(decode(&be, DType::Float32, ByteOrder::Big), 1.5);
        assert_eq!(
            decode(&[0xc0, 0x3f], DType::BFloat16, ByteOrder::Little),
            1.5
        );
    }

    #[test]
    fn integers_decode_exactly_with_their_sign() {
        let big = (1i64 << 53) + 1;
        assert_eq!(
            decode_integer(&big.to_le_bytes(), DType::Int64, ByteOrder::Little),
            big
        );
        assert_eq!(
            decode_integer(&big.to_be_bytes(), DType::Int64, ByteOrder::Big),
            big
        );
        assert_eq!(
            decode_integer(&(-3i32).to_le_bytes(), DType::Int32, ByteOrder::Little),
            -3
        );
        assert_eq!(decode_integer(&[0xff], DType::Int8, ByteOrder::Little), -1);
        assert_eq!(
            decode_integer(&[0xff], DType::UInt8, ByteOrder::Little),
            255
        );
    }
}
