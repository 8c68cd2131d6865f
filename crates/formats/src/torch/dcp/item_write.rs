//! Writing one stored item of a `.distcp` file: the `torch.save` zip DCP's default
//! (`torch_save`) format writes for every tensor chunk and every non-tensor value.
//!
//! A chunk is saved as one fresh C-contiguous tensor over its own storage (`data/0`), whose
//! bytes are streamed from a reader; a value is saved as its pickle alone. Offsets inside the
//! zip start at the item's first byte, as `torch.save` into a `BytesIO` gives them.

use std::io::{self, Read, Write};

use crate::torch::tensor;
use crate::torch::zip_write::TorchZipWriter;
use crate::torch::DType;
use ckpt_pickle::{self as pickle, Graph, NodeId};

use super::DcpError;

/// The archive folder `torch.save` uses for a file object without a name.
const PREFIX: &str = "archive";

/// `torch.save`'s default storage alignment.
const ALIGNMENT: u64 = 64;

/// `fresh_tensor` over storage `key`; `name` is the
/// entry, for errors.
pub fn fresh_tensor(
    graph: &mut Graph,
    dtype: DType,
    size: &[u64],
    key: &str,
    name: &str,
) -> Result<NodeId, DcpError> {
    tensor::fresh_tensor(graph, dtype, size, key).ok_or_else(|| DcpError::Layout {
        what: format!("`{name}`: its size overflows"),
    })
}

/// Writes a chunk of `dtype` and `size` whose `len` row-major, little-endian bytes `bytes`
/// yields; returns the item's length.
pub fn write_tensor<W: Write>(
    out: W,
    dtype: DType,
    size: &[u64],
    bytes: &mut dyn Read,
    len: u64,
    name: &str,
) -> Result<u64, DcpError> {
    let mut graph = Graph::new();
    let root = fresh_tensor(&mut graph, dtype, size, "0", name)?;
    let pickle = pickle::write(&graph, root)?;
    write_zip(out, &pickle, Some((bytes, len)))
}

/// Writes a value from its pickle; returns the item's length.
pub fn write_value<W: Write>(out: W, pickle: &[u8]) -> Result<u64, DcpError> {
    write_zip(out, pickle, None)
}

fn write_zip<W: Write>(
    out: W,
    pickle: &[u8],
    storage: Option<(&mut dyn Read, u64)>,
) -> Result<u64, DcpError> {
    let mut writer = TorchZipWriter::new(Counting { out, written: 0 }, PREFIX, ALIGNMENT);
    writer.add_bytes("data.pkl", pickle)?;
    writer.add_bytes(".format_version", b"1")?;
    writer.add_bytes(".storage_alignment", ALIGNMENT.to_string().as_bytes())?;
    writer.add_bytes("byteorder", b"little")?;
    if let Some((bytes, len)) = storage {
        writer.add_stream_hashed("data/0", &mut &mut *bytes, len)?;
    }
    writer.add_bytes("version", b"3\n")?;
    Ok(writer.finish()?.written)
}

/// A writer that counts what passes through it.
struct Counting<W> {
    out: W,
    written: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torch::dcp::item;
    use ckpt_pickle::Value;

    #[test]
    fn a_written_chunk_reads_back_through_the_item_reader() {
        let values: Vec<u8> = (0..24u8).collect();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"leading item bytes").unwrap();
        let start = 18;
        let len = write_tensor(
            &mut file,
            DType::Float32,
            &[2, 3],
            &mut values.as_slice(),
            24,
            "w",
        )
        .unwrap();
        let found = item::chunk_bytes(&file, start, len, DType::Float32, &[2, 3]).unwrap();
        assert_eq!(found.len, 24);
        let mut back = vec![0u8; 24];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut back, found.offset).unwrap();
        assert_eq!(back, values);
    }

    #[test]
    fn a_dtype_without_a_storage_class_is_written_untyped() {
        let mut file = tempfile::tempfile().unwrap();
        let values = [7u8; 8];
        let len =
            write_tensor(&mut file, DType::Complex32, &[2], &mut &values[..], 8, "z").unwrap();
        let found = item::chunk_bytes(&file, 0, len, DType::Complex32, &[2]).unwrap();
        assert_eq!(found.len, 8);
    }

    #[test]
    fn a_written_value_reads_back_as_its_pickle() {
        let mut graph = Graph::new();
        let root = graph.add(Value::Str("run".into()));
        let bytes = pickle::write(&graph, root).unwrap();
        let mut file = tempfile::tempfile().unwrap();
        let len = write_value(&mut file, &bytes).unwrap();
        let (graph, root) = item::value(&file, 0, len).unwrap();
        assert_eq!(graph.str(root), Some("run"));
    }

    #[test]
    fn a_short_source_is_an_error() {
        let mut file = tempfile::tempfile().unwrap();
        let short = [0u8; 4];
        let err = write_tensor(&mut file, DType::Int64, &[2], &mut &short[..], 16, "w");
        assert!(err.is_err());
    }
}
