//! Serialising a [`Model`]: the header and graph through prost, each initializer's bytes
//! streamed to the file from memory or the model's spill file (never a second in-memory
//! copy of the weights, see [`super::store`]), written
//! atomically (temp file in the target folder, fsync, rename). Models whose single file would
//! pass protobuf's 2 GiB message limit keep their large initializers in `<out>.data`
//! (ONNX external data, offsets aligned to 4096 for mmap).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::thread::{self, JoinHandle};

use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message;

use super::graph::{Initializer, Model};
use super::proto::{
    tensor_proto::DataLocation, ModelProto, OperatorSetIdProto, StringStringEntryProto, TensorProto,
};
use super::store::{Bytes, Deferred, WeightStore, DEFAULT_MEMORY_BUDGET};
use super::{OnnxError, Opset};
use ckpt_base::atomic_file::write_atomically;
use ckpt_formats::torch::save::start_writeback;

/// Protobuf refuses messages of 2 GiB or more.
pub const MAX_INLINE_BYTES: u64 = (1 << 31) - 1;
/// Initializers smaller than this stay inline even in an external-data model (onnx's default).
pub const EXTERNAL_MIN_BYTES: usize = 1024;
/// External data offsets are multiples of this ("SHOULD be multiples of 4096" for mmap).
pub const EXTERNAL_ALIGN: u64 = 4096;

/// Initializer bytes written between two requests to start writing the file back to disk.
const WRITEBACK_EVERY: u64 = 16 << 20;

/// `ModelProto` field numbers used when streaming.
const MODEL_GRAPH: u32 = 7;
const GRAPH_INITIALIZER: u32 = 5;
const TENSOR_RAW_DATA: u32 = 9;

/// How to lay the file out, and how many weight bytes to hold in memory until then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// A model whose single-file encoding would exceed this many bytes uses external data.
    pub max_inline_bytes: u64,
    /// Initializer bytes held in memory while the graph is built; the rest wait in an
    /// unnamed spill file in the output's folder.
    pub memory_budget: u64,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            max_inline_bytes: MAX_INLINE_BYTES,
            memory_budget: DEFAULT_MEMORY_BUDGET,
        }
    }
}

impl WriteOptions {
    /// The store a graph written to `out` keeps its weights in.
    pub fn store_for(&self, out: &Path) -> WeightStore {
        let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
        WeightStore::new(self.memory_budget, Some(dir.unwrap_or(Path::new("."))))
    }
}

/// What was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// Bytes in the `.onnx` file.
    pub bytes: u64,
    /// The external data file, when one was needed.
    pub external: Option<PathBuf>,
}

/// The model header for `opset`: one default-domain opset import and its IR version.
pub fn header(opset: Opset) -> ModelProto {
    ModelProto {
        ir_version: Some(opset.ir_version()),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(opset.version()),
        }],
        producer_name: Some("ckpt".to_owned()),
        producer_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        ..Default::default()
    }
}

/// Where an initializer's bytes go.
enum Placement {
    Inline,
    External { offset: u64 },
}

/// One initializer's `TensorProto` without its bytes, and where the bytes go.
struct Planned<'a> {
    init: &'a Initializer,
    meta: Vec<u8>,
    placement: Placement,
}

impl Planned<'_> {
    /// Encoded `TensorProto` length, bytes included when inline.
    fn tensor_len(&self) -> usize {
        match self.placement {
            Placement::Inline => {
                self.meta.len()
                    + length_delimited_len(TENSOR_RAW_DATA, self.init.bytes.len() as usize)
            }
            Placement::External { .. } => self.meta.len(),
        }
    }
}

fn length_delimited_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

fn tensor_meta(init: &Initializer, external: Option<(&str, u64)>) -> Vec<u8> {
    let mut tensor = TensorProto {
        dims: init.dims.iter().map(|&d| d as i64).collect(),
        data_type: Some(init.data_type as i32),
        name: Some(init.name.clone()),
        ..Default::default()
    };
    if let Some((location, offset)) = external {
        let entry = |key: &str, value: String| StringStringEntryProto {
            key: Some(key.to_owned()),
            value: Some(value),
        };
        tensor.external_data = vec![
            entry("location", location.to_owned()),
            entry("offset", offset.to_string()),
            entry("length", init.bytes.len().to_string()),
        ];
        tensor.set_data_location(DataLocation::External);
    }
    tensor.encode_to_vec()
}

/// Writes `model` to `path` (and `<path>.data` when external data is needed).
pub fn write(model: &Model, path: &Path, options: &WriteOptions) -> Result<Written, OnnxError> {
    let head_bytes = header(model.opset).encode_to_vec();
    let graph_bytes = model.graph.encode_to_vec();
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| OnnxError::Output {
            what: format!("{} is not a file path", path.display()),
        })?;
    let location = format!("{file_name}.data");

    let inline: Vec<Planned> = model
        .initializers
        .iter()
        .map(|init| Planned {
            init,
            meta: tensor_meta(init, None),
            placement: Placement::Inline,
        })
        .collect();
    let total = |planned: &[Planned]| -> u64 {
        let graph_len = graph_bytes.len()
            + planned
                .iter()
                .map(|p| length_delimited_len(GRAPH_INITIALIZER, p.tensor_len()))
                .sum::<usize>();
        (head_bytes.len() + length_delimited_len(MODEL_GRAPH, graph_len)) as u64
    };
    let (planned, external) = if total(&inline) <= options.max_inline_bytes {
        (inline, None)
    } else {
        let mut offset = 0u64;
        let planned = model
            .initializers
            .iter()
            .map(|init| {
                if init.bytes.len() < EXTERNAL_MIN_BYTES as u64 {
                    return Planned {
                        init,
                        meta: tensor_meta(init, None),
                        placement: Placement::Inline,
                    };
                }
                offset = offset.next_multiple_of(EXTERNAL_ALIGN);
                let at = offset;
                offset += init.bytes.len();
                Planned {
                    init,
                    meta: tensor_meta(init, Some((&location, at))),
                    placement: Placement::External { offset: at },
                }
            })
            .collect::<Vec<_>>();
        if total(&planned) > MAX_INLINE_BYTES {
            return Err(OnnxError::Output {
                what: "the graph is over 2 GiB even with its weights in external data".into(),
            });
        }
        (planned, Some(path.with_file_name(&location)))
    };

    if let Some(data_path) = &external {
        write_atomically(data_path, |file| {
            write_external(&planned, &model.store, file)
        })?;
    }
    let graph_len = graph_bytes.len()
        + planned
            .iter()
            .map(|p| length_delimited_len(GRAPH_INITIALIZER, p.tensor_len()))
            .sum::<usize>();
    write_atomically(path, |file| {
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut prefix = head_bytes.clone();
        encode_key(MODEL_GRAPH, WireType::LengthDelimited, &mut prefix);
        encode_varint(graph_len as u64, &mut prefix);
        out.write_all(&prefix)?;
        out.write_all(&graph_bytes)?;
        let inline = |p: &&Planned| matches!(p.placement, Placement::Inline);
        let mut bytes = Producer::new(planned.iter().filter(inline).map(|p| &p.init.bytes));
        let mut unsynced = 0u64;
        for p in &planned {
            let mut prefix = Vec::with_capacity(16 + p.meta.len());
            encode_key(GRAPH_INITIALIZER, WireType::LengthDelimited, &mut prefix);
            encode_varint(p.tensor_len() as u64, &mut prefix);
            prefix.extend_from_slice(&p.meta);
            if let Placement::Inline = p.placement {
                encode_key(TENSOR_RAW_DATA, WireType::LengthDelimited, &mut prefix);
                encode_varint(p.init.bytes.len(), &mut prefix);
                out.write_all(&prefix)?;
                bytes.write_next(&model.store, &mut out)?;
                unsynced += p.init.bytes.len();
                if unsynced >= WRITEBACK_EVERY {
                    // Start writing the pages to disk while the rest is computed, so that
                    // the fsync before the rename has little left to wait for.
                    out.flush()?;
                    start_writeback(out.get_ref());
                    unsynced = 0;
                }
            } else {
                out.write_all(&prefix)?;
            }
        }
        out.flush()
    })?;
    Ok(Written {
        bytes: total(&planned),
        external,
    })
}

fn write_external(
    planned: &[Planned],
    store: &WeightStore,
    file: &mut File,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut position = 0u64;
    let mut unsynced = 0u64;
    let external = |p: &&Planned| matches!(p.placement, Placement::External { .. });
    let mut bytes = Producer::new(planned.iter().filter(external).map(|p| &p.init.bytes));
    for p in planned {
        if let Placement::External { offset } = p.placement {
            let padding = usize::try_from(offset - position).unwrap_or(0);
            out.write_all(&vec![0u8; padding])?;
            bytes.write_next(store, &mut out)?;
            position = offset + p.init.bytes.len();
            unsynced += p.init.bytes.len();
            if unsynced >= WRITEBACK_EVERY {
                out.flush()?;
                start_writeback(out.get_ref());
                unsynced = 0;
            }
        }
    }
    out.flush()
}

/// Writes initializers' bytes in a given order. [`Deferred`] ones that must be computed
/// (folded, transposed, decoded) are computed on a helper thread one tensor ahead of the
/// writer, so that on two cores computing the next tensor overlaps writing this one; the
/// rest are written as they are (deferred ones straight from the mapped checkpoint).
/// At most three computed tensors exist at once: one being written, one waiting, one being
/// computed; their buffers are reused.
struct Producer<'a> {
    order: std::vec::IntoIter<&'a Bytes>,
    ready: Option<Receiver<Vec<u8>>>,
    recycle: Option<Sender<Vec<u8>>>,
    worker: Option<JoinHandle<()>>,
}

/// Whether `bytes` must be computed before they are written.
fn computed(bytes: &Bytes) -> Option<&Deferred> {
    match bytes {
        Bytes::Deferred(deferred) if deferred.borrowed().is_none() => Some(deferred),
        _ => None,
    }
}

impl<'a> Producer<'a> {
    /// A producer for `bytes`, to be written in this order by [`Producer::write_next`].
    fn new(bytes: impl Iterator<Item = &'a Bytes>) -> Producer<'a> {
        let order: Vec<&Bytes> = bytes.collect();
        let jobs: Vec<Deferred> = order.iter().filter_map(|b| computed(b).cloned()).collect();
        let mut producer = Producer {
            order: order.into_iter(),
            ready: None,
            recycle: None,
            worker: None,
        };
        if jobs.is_empty() {
            return producer;
        }
        let (send_ready, ready) = sync_channel::<Vec<u8>>(1);
        let (recycle, recycled) = channel::<Vec<u8>>();
        let worker = thread::Builder::new()
            .name("onnx-weights".into())
            .spawn(move || {
                for job in jobs {
                    let mut buffer = recycled.try_recv().unwrap_or_default();
                    job.produce(&mut buffer);
                    job.release();
                    if send_ready.send(buffer).is_err() {
                        return;
                    }
                }
            });
        // Without a thread, `write_next` computes each tensor itself.
        if let Ok(worker) = worker {
            producer.ready = Some(ready);
            producer.recycle = Some(recycle);
            producer.worker = Some(worker);
        }
        producer
    }

    /// Writes the next initializer's bytes to `out`.
    fn write_next(&mut self, store: &WeightStore, out: &mut impl Write) -> std::io::Result<()> {
        let bytes = self
            .order
            .next()
            .ok_or_else(|| std::io::Error::other("more initializers written than planned"))?;
        let (Some(_), Some(ready)) = (computed(bytes), &self.ready) else {
            return store.write_to(bytes, out);
        };
        let buffer = ready
            .recv()
            .map_err(|_| std::io::Error::other("the thread computing the weights stopped"))?;
        out.write_all(&buffer)?;
        if let Some(recycle) = &self.recycle {
            // The worker may have finished; the buffer is then simply dropped.
            let _ = recycle.send(buffer);
        }
        Ok(())
    }
}

impl Drop for Producer<'_> {
    fn drop(&mut self) {
        // Closing the channels stops a worker that is ahead of an interrupted write.
        self.ready = None;
        self.recycle = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}
