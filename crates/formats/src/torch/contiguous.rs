//! Streaming a tensor's elements out of a checkpoint in row-major (C-contiguous) order,
//! little-endian, without decoding them: what a format that stores dense tensors
//! (safetensors) needs.
//!
//! Memory: a tensor that is already contiguous is copied in [`CHUNK`]-sized pieces, whatever
//! its size; a strided view buffers the storage range it spans (at most its storage) and
//! gathers its elements from it.

use std::io::{Read, Write};

use super::checkpoint::Checkpoint;
use super::dtype::DType;
use super::read_tensor::ByteOrder;
use super::tensor::TensorRef;
use super::TorchError;

/// Bytes moved per step. A multiple of every element size.
pub const CHUNK: usize = 4 << 20;

/// Writes `tensor`'s elements to `out` in row-major order, little-endian (a big-endian
/// checkpoint's elements are byte-swapped on the way), and returns the bytes written:
/// always `numel × element size`.
pub fn copy_contiguous(
    ckpt: &mut Checkpoint,
    tensor: &TensorRef,
    out: &mut dyn Write,
) -> Result<u64, TorchError> {
    let size = tensor.dtype.element_size() as u64;
    let invalid = || TorchError::Invalid {
        what: format!(
            "a {} tensor of shape {:?} does not fit storage `{}`",
            tensor.dtype, tensor.shape, tensor.storage.key
        ),
    };
    let total = tensor.numel().checked_mul(size).ok_or_else(invalid)?;
    if total == 0 {
        return Ok(0);
    }
    let swap = match ByteOrder::of(ckpt) {
        ByteOrder::Big => swap_unit(tensor.dtype),
        ByteOrder::Little => None,
    };
    let strides: Vec<u64> = tensor
        .stride
        .iter()
        .map(|&s| u64::try_from(s).map_err(|_| invalid()))
        .collect::<Result<_, _>>()?;
    let start = tensor.offset.checked_mul(size).ok_or_else(invalid)?;
    let key = tensor.storage.key.clone();
    if is_contiguous(&tensor.shape, &strides) {
        if start == 0 {
            // The common case, a tensor that starts its storage: one sequential read, which
            // also streams a deflated record instead of inflating it per chunk.
            ckpt.read_storage(&key, |input| {
                stream(&mut input.take(total), total, swap, out)
            })?;
        } else {
            let mut done = 0u64;
            while done < total {
                let n = (total - done).min(CHUNK as u64);
                let mut bytes = ckpt.read_storage_range(&key, start + done, n)?;
                swap_in_place(&mut bytes, swap);
                out.write_all(&bytes)?;
                done += n;
            }
        }
        return Ok(total);
    }
    let extent = tensor.extent().ok_or_else(invalid)?;
    let span = (extent - tensor.offset)
        .checked_mul(size)
        .ok_or_else(invalid)?;
    let source = ckpt.read_storage_range(&key, start, span)?;
    gather(&source, &tensor.shape, &strides, size as usize, swap, out)?;
    Ok(total)
}

/// Copies exactly `total` bytes (whole elements) from `input` to `out`, swapping if asked.
fn stream(
    input: &mut dyn Read,
    total: u64,
    swap: Option<usize>,
    out: &mut dyn Write,
) -> Result<(), TorchError> {
    let mut buffer = vec![0u8; CHUNK.min(usize::try_from(total).unwrap_or(CHUNK))];
    let mut done = 0u64;
    while done < total {
        let n = usize::try_from((total - done).min(buffer.len() as u64)).unwrap_or(buffer.len());
        input.read_exact(&mut buffer[..n])?;
        swap_in_place(&mut buffer[..n], swap);
        out.write_all(&buffer[..n])?;
        done += n as u64;
    }
    Ok(())
}

/// Writes the elements of a strided view of `source` (which starts at the view's first
/// element) in row-major order. Every position is inside `source` because `source` spans the
/// view's extent.
fn gather(
    source: &[u8],
    shape: &[u64],
    strides: &[u64],
    size: usize,
    swap: Option<usize>,
    out: &mut dyn Write,
) -> Result<(), TorchError> {
    let numel: u64 = shape.iter().product();
    let mut buffer = Vec::with_capacity(CHUNK);
    let mut index = vec![0u64; shape.len()];
    for _ in 0..numel {
        let element: u64 = index.iter().zip(strides).map(|(i, s)| i * s).sum();
        let at = usize::try_from(element)
            .unwrap_or(usize::MAX)
            .saturating_mul(size);
        let bytes = source
            .get(at..at.saturating_add(size))
            .ok_or_else(|| TorchError::Invalid {
                what: "a strided view runs past its storage".into(),
            })?;
        buffer.extend_from_slice(bytes);
        if buffer.len() >= CHUNK {
            swap_in_place(&mut buffer, swap);
            out.write_all(&buffer)?;
            buffer.clear();
        }
        increment(&mut index, shape);
    }
    swap_in_place(&mut buffer, swap);
    out.write_all(&buffer)?;
    Ok(())
}

/// The byte-swapping unit of a dtype: its element size, half of it for complex numbers (two
/// floats), none for single bytes.
fn swap_unit(dtype: DType) -> Option<usize> {
    let size = dtype.element_size();
    let unit = match dtype {
        DType::Complex32 | DType::Complex64 | DType::Complex128 => size / 2,
        _ => size,
    };
    (unit > 1).then_some(unit)
}

fn swap_in_place(bytes: &mut [u8], unit: Option<usize>) {
    if let Some(unit) = unit {
        for element in bytes.chunks_exact_mut(unit) {
            element.reverse();
        }
    }
}

/// Whether row-major strides describe `shape` densely (size-1 dimensions may have any stride).
pub fn is_contiguous(shape: &[u64], strides: &[u64]) -> bool {
    let mut expected = 1u64;
    for (&size, &stride) in shape.iter().zip(strides).rev() {
        if size != 1 && stride != expected {
            return false;
        }
        expected = expected.saturating_mul(size);
    }
    true
}

/// Advances a row-major multi-index by one.
pub fn increment(index: &mut [u64], shape: &[u64]) {
    for (i, &size) in index.iter_mut().zip(shape).rev() {
        *i += 1;
        if *i < size {
            return;
        }
        *i = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathers_a_transpose_in_row_major_order() {
        // A 2×3 matrix [[0,1,2],[3,4,5]] stored row-major; its transpose (3×2, strides 1,3).
        let source: Vec<u8> = (0u8..6).collect();
        let mut out = Vec::new();
        gather(&source, &[3, 2], &[1, 3], 1, None, &mut out).expect("gather");
        assert_eq!(out, [0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn swaps_by_element_and_complex_half() {
        assert_eq!(swap_unit(DType::Float32), Some(4));
        assert_eq!(swap_unit(DType::Complex64), Some(4));
        assert_eq!(swap_unit(DType::UInt8), None);
        let mut bytes = [1, 2, 3, 4, 5, 6, 7, 8];
        swap_in_place(&mut bytes, Some(4));
        assert_eq!(bytes, [4, 3, 2, 1, 8, 7, 6, 5]);
    }

    #[test]
    fn contiguity() {
        assert!(is_contiguous(&[2, 3], &[3, 1]));
        assert!(!is_contiguous(&[2, 3], &[1, 2]));
        assert!(is_contiguous(&[1, 3], &[7, 1]));
    }

    #[test]
    fn contiguity_and_row_major_walk() {
        assert!(is_contiguous(&[2, 3], &[3, 1]));
        assert!(!is_contiguous(&[2, 3], &[1, 2]));
        assert!(is_contiguous(&[1, 3], &[99, 1]));
        let mut index = vec![0, 2];
        increment(&mut index, &[2, 3]);
        assert_eq!(index, vec![1, 0]);
    }
}
