//! numpy values as plain data: arrays → tensors (their bytes become new storages), scalars →
//! Python numbers, dtypes → their names. Read from the pickle's own layout
//! (`_reconstruct(ndarray, (0,), b'b')` + `BUILD (version, shape, dtype, fortran, bytes)`;
//! `scalar(dtype, bytes)`; `dtype(code, False, True)` + `BUILD (version, byteorder, …)`), as
//! numpy 1.x (`numpy.core.multiarray`) and 2.x (`numpy._core.multiarray`) write it.

use half::f16;

use crate::torch::DType;
use ckpt_pickle::{Constructor, Global, Graph, NodeId, Object, Value};

/// What a numpy global builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NumpyCall {
    /// `multiarray._reconstruct`: an array.
    Array,
    /// `multiarray.scalar`: a scalar.
    Scalar,
    /// `numpy.dtype`: a dtype.
    Dtype,
}

/// The modules numpy pickles `_reconstruct` and `scalar` from: 1.x, then 2.x.
const MULTIARRAY: [&str; 2] = ["numpy.core.multiarray", "numpy._core.multiarray"];

impl NumpyCall {
    pub(super) fn of(global: &Global) -> Option<NumpyCall> {
        let in_multiarray = MULTIARRAY.contains(&global.module.as_str());
        match global.name.as_str() {
            "_reconstruct" if in_multiarray => Some(NumpyCall::Array),
            "scalar" if in_multiarray => Some(NumpyCall::Scalar),
            "dtype" if global.module == "numpy" => Some(NumpyCall::Dtype),
            _ => None,
        }
    }
}

/// A numpy element type: its kind character (`b i u f c U S`…), bytes per element and byte
/// order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Element {
    kind: char,
    size: usize,
    big_endian: bool,
}

impl Element {
    /// The torch dtype holding the same values, when there is one.
    fn torch(self) -> Option<DType> {
        Some(match (self.kind, self.size) {
            ('b', 1) => DType::Bool,
            ('i', 1) => DType::Int8,
            ('i', 2) => DType::Int16,
            ('i', 4) => DType::Int32,
            ('i', 8) => DType::Int64,
            ('u', 1) => DType::UInt8,
            ('u', 2) => DType::UInt16,
            ('u', 4) => DType::UInt32,
            ('u', 8) => DType::UInt64,
            ('f', 2) => DType::Float16,
            ('f', 4) => DType::Float32,
            ('f', 8) => DType::Float64,
            ('c', 8) => DType::Complex64,
            ('c', 16) => DType::Complex128,
            _ => return None,
        })
    }

    /// numpy's name for it (`str(np.dtype(...))` for the numeric kinds).
    fn name(self) -> Option<String> {
        let bits = self.size * 8;
        Some(match self.kind {
            'b' if self.size == 1 => "bool".to_owned(),
            'i' => format!("int{bits}"),
            'u' => format!("uint{bits}"),
            'f' => format!("float{bits}"),
            'c' => format!("complex{bits}"),
            _ => return None,
        })
    }

    /// `bytes` with every element (each half of a complex) in little-endian order.
    fn little_endian(self, mut bytes: Vec<u8>) -> Vec<u8> {
        let unit = if self.kind == 'c' {
            self.size / 2
        } else if self.kind == 'U' {
            4
        } else {
            self.size
        };
        if self.big_endian && unit > 1 {
            for chunk in bytes.chunks_exact_mut(unit) {
                chunk.reverse();
            }
        }
        bytes
    }
}

/// The `(args, state)` of an object built by `REDUCE`, with no items appended or set.
fn reduce_parts(object: &Object) -> Option<(NodeId, Option<NodeId>)> {
    match object.constructor {
        Constructor::Reduce { args, .. }
            if object.list_items.is_empty() && object.dict_items.is_empty() =>
        {
            Some((args, object.state))
        }
        _ => None,
    }
}

/// The element type a `numpy.dtype(code, False, True)` object (with its `BUILD` state) names.
fn element(graph: &Graph, node: NodeId) -> Result<Element, String> {
    let Value::Object(object) = graph.get(node) else {
        return Err("its dtype is not a numpy.dtype object".into());
    };
    let is_dtype = match object.constructor {
        Constructor::Reduce { callable, .. } => graph
            .global(callable)
            .is_some_and(|g| NumpyCall::of(g) == Some(NumpyCall::Dtype)),
        _ => false,
    };
    let (args, state) = reduce_parts(object)
        .filter(|_| is_dtype)
        .ok_or("its dtype is not a numpy.dtype object")?;
    let code = graph
        .tuple(args)
        .and_then(|a| a.first())
        .and_then(|&c| graph.str(c))
        .ok_or("its dtype has no type code")?;
    // The byte order is the state's second field ('<', '>', '|' or '='); a code may also
    // carry it as a prefix.
    let order = state
        .and_then(|s| graph.tuple(s))
        .and_then(|items| items.get(1))
        .and_then(|&o| graph.str(o));
    let (prefix, code) = match code.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (Some(c), &code[1..]),
        _ => (None, code),
    };
    let mut chars = code.chars();
    let kind = chars.next().ok_or("its dtype has an empty type code")?;
    let size: usize = chars
        .as_str()
        .parse()
        .map_err(|_| format!("its dtype `{code}` is not a plain numeric or text type"))?;
    let size = if kind == 'U' { size * 4 } else { size };
    let big_endian = prefix == Some('>') || order == Some(">");
    Ok(Element {
        kind,
        size,
        big_endian,
    })
}

/// The name a standalone `numpy.dtype` object becomes (`float32`).
pub(super) fn dtype_name(graph: &Graph, node: NodeId) -> Result<Value, String> {
    let element = element(graph, node)?;
    element.name().map(Value::Str).ok_or_else(|| {
        format!(
            "the numpy dtype of kind `{}` has no plain name",
            element.kind
        )
    })
}

/// An array's element type, shape (row-major) and bytes (row-major, little-endian).
pub(super) struct Array {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub bytes: Vec<u8>,
}

/// Reads the array an `_reconstruct(numpy.ndarray, (0,), b'b')` object builds from its state
/// `(version, shape, dtype, is_fortran, raw bytes)` (or the same without `version`).
pub(super) fn array(graph: &Graph, object: &Object) -> Result<Array, String> {
    let (args, state) = reduce_parts(object).ok_or("its layout is not numpy's")?;
    let class = graph
        .tuple(args)
        .and_then(|a| a.first())
        .and_then(|&c| graph.global(c));
    match class {
        Some(g) if g.is("numpy", "ndarray") => {}
        Some(g) => return Err(format!("it is a `{g}`, a numpy.ndarray subclass")),
        None => return Err("its class is not named".into()),
    }
    let items = state
        .and_then(|s| graph.tuple(s))
        .ok_or("it has no array state")?;
    let fields = match items.len() {
        5 => &items[1..],
        4 => items,
        n => return Err(format!("its state has {n} fields, not 4 or 5")),
    };
    let shape = graph
        .tuple(fields[0])
        .ok_or("its shape is not a tuple")?
        .iter()
        .map(|&d| graph.int(d).and_then(|d| u64::try_from(d).ok()))
        .collect::<Option<Vec<u64>>>()
        .ok_or("its shape holds a non-integer")?;
    let element = element(graph, fields[1])?;
    let dtype = element.torch().ok_or_else(|| {
        format!(
            "its elements (numpy kind `{}`, {} bytes) have no torch dtype",
            element.kind, element.size
        )
    })?;
    let fortran = matches!(graph.get(fields[2]), Value::Bool(true));
    let raw = graph
        .bytes(fields[3])
        .ok_or("its data is not raw bytes (an object array)")?;
    let numel = shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or("its shape overflows")?;
    let expected = numel.checked_mul(element.size as u64);
    if expected != Some(raw.len() as u64) {
        return Err(format!(
            "it holds {} bytes, not the {} its shape and dtype need",
            raw.len(),
            expected.map_or("(overflowing)".to_owned(), |n| n.to_string())
        ));
    }
    let bytes = element.little_endian(raw);
    let bytes = if fortran && shape.len() > 1 {
        to_row_major(&bytes, &shape, element.size)
    } else {
        bytes
    };
    Ok(Array {
        dtype,
        shape,
        bytes,
    })
}

/// Reorders column-major (Fortran) elements into row-major order.
fn to_row_major(bytes: &[u8], shape: &[u64], size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let numel = bytes.len() / size.max(1);
    let mut index = vec![0u64; shape.len()];
    for _ in 0..numel {
        // The column-major offset of the row-major index `index`.
        let mut offset = 0u64;
        let mut stride = 1u64;
        for (&i, &d) in index.iter().zip(shape) {
            offset += i * stride;
            stride *= d;
        }
        let start = offset as usize * size;
        out.extend_from_slice(&bytes[start..start + size]);
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

/// The Python value `scalar(dtype, bytes).item()` gives: bool, int, float, complex, str or
/// bytes. A complex becomes `builtins.complex(real, imag)` (on torch's allow-list), built from
/// new nodes of `graph`.
pub(super) fn scalar(graph: &mut Graph, object: &Object) -> Result<Value, String> {
    let (args, state) = reduce_parts(object).ok_or("its layout is not numpy's")?;
    if state.is_some() {
        return Err("it carries a state numpy scalars do not have".into());
    }
    let (dtype, data) = match graph.tuple(args) {
        Some(&[dtype, data]) => (dtype, data),
        _ => return Err("its arguments are not (dtype, bytes)".into()),
    };
    let element = element(graph, dtype)?;
    let raw = graph.bytes(data).ok_or("its data is not raw bytes")?;
    if raw.len() != element.size {
        return Err(format!(
            "it holds {} bytes, not the {} of its dtype",
            raw.len(),
            element.size
        ));
    }
    let le = element.little_endian(raw);
    let word = |n: usize| -> [u8; 8] {
        let mut w = [0u8; 8];
        w[..n].copy_from_slice(&le[..n]);
        w
    };
    let signed = |n: usize| -> i64 {
        let shift = 64 - 8 * n as u32;
        (i64::from_le_bytes(word(n)) << shift) >> shift
    };
    Ok(match (element.kind, element.size) {
        ('b', 1) => Value::Bool(le[0] != 0),
        ('i', n @ (1 | 2 | 4 | 8)) => Value::Int(signed(n)),
        ('u', n @ (1 | 2 | 4 | 8)) => {
            let value = u64::from_le_bytes(word(n));
            match i64::try_from(value) {
                Ok(v) => Value::Int(v),
                // LONG1's form: little-endian two's complement, a zero byte keeps it positive.
                Err(_) => Value::BigInt(le.iter().copied().chain([0]).collect()),
            }
        }
        ('f', 2 | 4 | 8) => Value::Float(float(&le)),
        ('c', 8 | 16) => {
            let (re, im) = le.split_at(element.size / 2);
            let parts = vec![
                graph.add(Value::Float(float(re))),
                graph.add(Value::Float(float(im))),
            ];
            let args = graph.add(Value::Tuple(parts));
            let callable = graph.add(Value::Global(Global::new("builtins", "complex")));
            Value::Object(Object::new(Constructor::Reduce { callable, args }))
        }
        ('U', _) => {
            let text: Option<String> = le
                .chunks_exact(4)
                .map(|c| char::from_u32(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect();
            let text = text.ok_or("its text is not valid UTF-32")?;
            Value::Str(text.trim_end_matches('\0').to_owned())
        }
        ('S', _) => {
            let end = le.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            Value::Bytes(le[..end].to_vec())
        }
        (kind, size) => {
            return Err(format!(
                "numpy scalars of kind `{kind}` ({size} bytes) have no plain Python value"
            ))
        }
    })
}

/// A little-endian float of 2, 4 or 8 bytes, exactly as `float(x)` gives it.
fn float(le: &[u8]) -> f64 {
    match *le {
        [a, b] => f16::from_le_bytes([a, b]).to_f64(),
        [a, b, c, d] => f64::from(f32::from_le_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => f64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_major_elements_are_reordered_row_major() {
        // np.asfortranarray(np.arange(6).reshape(2, 3)) stores 0 3 1 4 2 5.
        let column_major = [0u8, 3, 1, 4, 2, 5];
        assert_eq!(to_row_major(&column_major, &[2, 3], 1), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn big_endian_elements_are_swapped_per_element_and_complex_half() {
        let int = Element {
            kind: 'i',
            size: 4,
            big_endian: true,
        };
        assert_eq!(int.little_endian(vec![0, 0, 0, 1]), [1, 0, 0, 0]);
        let complex = Element {
            kind: 'c',
            size: 8,
            big_endian: true,
        };
        assert_eq!(
            complex.little_endian(vec![1, 2, 3, 4, 5, 6, 7, 8]),
            [4, 3, 2, 1, 8, 7, 6, 5]
        );
    }

    #[test]
    fn element_names_follow_numpy() {
        let e = |kind, size| Element {
            kind,
            size,
            big_endian: false,
        };
        assert_eq!(e('f', 4).name().as_deref(), Some("float32"));
        assert_eq!(e('b', 1).name().as_deref(), Some("bool"));
        assert_eq!(e('c', 16).name().as_deref(), Some("complex128"));
        assert_eq!(e('u', 2).torch(), Some(DType::UInt16));
        assert_eq!(e('f', 16).torch(), None, "longdouble has no torch dtype");
    }
}
