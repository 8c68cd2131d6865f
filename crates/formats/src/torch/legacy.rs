//! The legacy stream format (torch ≤ 1.5, or `_use_new_zipfile_serialization=False`):
//! five pickles (magic, protocol, sys_info, object, sorted key list), then for each key an
//! int64 little-endian element count and the storage's raw bytes.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use ckpt_pickle::{self as pickle, Graph, NodeId, Pickle, Value};

use super::tensor::{StorageKey, StorageRef};
use super::TorchError;

/// `torch.serialization.MAGIC_NUMBER`.
const MAGIC: u128 = 0x1950A86A20F9469CFC6C;
/// `torch.serialization.PROTOCOL_VERSION`.
const PROTOCOL_VERSION: i64 = 1001;

/// The pickled magic number as torch writes it (protocol 2): a file starting with these bytes
/// is a legacy stream.
pub const MAGIC_PICKLE: [u8; 15] = [
    0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e,
];

/// Where one storage sits in a legacy file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegacyRecord {
    /// Offset of the 8-byte element count.
    pub header_offset: u64,
    /// Elements, as the file's count field says.
    pub count: u64,
    /// Bytes after the count field.
    pub nbytes: u64,
}

/// A parsed legacy file: the object pickle and where each storage's bytes are.
#[derive(Debug)]
pub struct LegacyFile {
    pub object: Pickle,
    pub records: HashMap<StorageKey, LegacyRecord>,
}

/// Whether the first bytes are a pickled legacy magic number (any protocol).
pub fn is_legacy(head: &[u8]) -> bool {
    if head.starts_with(&MAGIC_PICKLE) {
        return true;
    }
    match pickle::read(head) {
        Ok(p) => magic_value(&p.graph, p.root),
        Err(_) => false,
    }
}

fn magic_value(graph: &Graph, root: NodeId) -> bool {
    match graph.get(root) {
        Value::BigInt(bytes) if bytes.len() <= 16 => {
            let mut buf = [0u8; 16];
            buf[..bytes.len()].copy_from_slice(bytes);
            u128::from_le_bytes(buf) == MAGIC
        }
        _ => false,
    }
}

/// Reads the five pickles from `head` (a prefix of the file; `Truncated` when it is too short)
/// and locates every storage in `file`.
pub fn parse(
    head: &[u8],
    file: &File,
    file_len: u64,
    storages: impl Fn(&Graph, NodeId) -> Result<Vec<StorageRef>, TorchError>,
) -> Result<LegacyFile, TorchError> {
    let bad = |what: &str| TorchError::Invalid {
        what: format!("legacy format: {what}"),
    };
    let magic = pickle::read(head)?;
    if !magic_value(&magic.graph, magic.root) {
        return Err(bad("wrong magic number"));
    }
    let mut pos = magic.consumed;
    let protocol = pickle::read(&head[pos..])?;
    if protocol.graph.int(protocol.root) != Some(PROTOCOL_VERSION) {
        return Err(bad("unsupported protocol version (expected 1001)"));
    }
    pos += protocol.consumed;
    let sys_info = pickle::read(&head[pos..])?;
    pos += sys_info.consumed;
    let object = pickle::read(&head[pos..])?;
    pos += object.consumed;
    let key_list = pickle::read(&head[pos..])?;
    pos += key_list.consumed;
    let keys = match key_list.graph.get(key_list.root) {
        Value::List(items) => items
            .iter()
            .map(|&k| key_list.graph.str(k).map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("storage key list holds a non-string"))?,
        _ => return Err(bad("storage key list is not a list")),
    };

    let element_sizes: HashMap<String, u64> = storages(&object.graph, object.root)?
        .into_iter()
        .map(|s| {
            let size = s.dtype.map_or(1, |d| d.element_size()) as u64;
            (s.key, size)
        })
        .collect();

    let mut records = HashMap::new();
    let mut offset = pos as u64;
    for key in &keys {
        let element_size = *element_sizes
            .get(key)
            .ok_or_else(|| bad(&format!("storage `{key}` is listed but never referenced")))?;
        let mut count_bytes = [0u8; 8];
        file.read_exact_at(&mut count_bytes, offset)
            .map_err(|_| bad(&format!("file ends before storage `{key}`")))?;
        let count = u64::from_le_bytes(count_bytes);
        let nbytes = count
            .checked_mul(element_size)
            .ok_or_else(|| bad(&format!("storage `{key}` size overflows")))?;
        let end = offset
            .checked_add(8)
            .and_then(|o| o.checked_add(nbytes))
            .filter(|&end| end <= file_len)
            .ok_or_else(|| {
                bad(&format!(
                    "storage `{key}` needs {nbytes} bytes but the file ends first (truncated?)"
                ))
            })?;
        if records
            .insert(
                key.clone(),
                LegacyRecord {
                    header_offset: offset,
                    count,
                    nbytes,
                },
            )
            .is_some()
        {
            return Err(bad(&format!("storage `{key}` is listed twice")));
        }
        offset = end;
    }
    Ok(LegacyFile { object, records })
}

/// The four pickles before the object pickle's end: magic, protocol version, sys_info, as
/// `torch.save(..., _use_new_zipfile_serialization=False)` writes them on a little-endian host.
pub fn preamble() -> Vec<u8> {
    let mut out = MAGIC_PICKLE.to_vec();
    // PROTO 2, BININT2 1001, STOP
    out.extend_from_slice(&[0x80, 0x02, 0x4d, 0xe9, 0x03, 0x2e]);
    out.extend_from_slice(&sys_info_pickle());
    out
}

/// `{'protocol_version': 1001, 'little_endian': True, 'type_sizes': {'short': 2, 'int': 4, 'long': 4}}`
fn sys_info_pickle() -> Vec<u8> {
    let mut g = Graph::new();
    let pair = |g: &mut Graph, k: &str, v: Value| {
        let k = g.add(Value::Str(k.into()));
        let v = g.add(v);
        (k, v)
    };
    let sizes = vec![
        pair(&mut g, "short", Value::Int(2)),
        pair(&mut g, "int", Value::Int(4)),
        pair(&mut g, "long", Value::Int(4)),
    ];
    let sizes = g.add(Value::Dict(sizes));
    let type_sizes = g.add(Value::Str("type_sizes".into()));
    let items = vec![
        pair(&mut g, "protocol_version", Value::Int(PROTOCOL_VERSION)),
        pair(&mut g, "little_endian", Value::Bool(true)),
        (type_sizes, sizes),
    ];
    let root = g.add(Value::Dict(items));
    // A fixed, tiny graph: the writer cannot fail on it.
    pickle::write(&g, root).unwrap_or_default()
}

/// The pickled, sorted key list that follows the object pickle.
pub fn key_list_pickle(keys: &[StorageKey]) -> Result<Vec<u8>, TorchError> {
    let mut g = Graph::new();
    let items = keys.iter().map(|k| g.add(Value::Str(k.clone()))).collect();
    let root = g.add(Value::List(items));
    Ok(pickle::write(&g, root)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_magic_pickle() {
        assert!(is_legacy(&MAGIC_PICKLE));
        assert!(!is_legacy(b"PK\x03\x04"));
        assert!(!is_legacy(b"\x80\x02K\x01."));
    }

    #[test]
    fn preamble_matches_torch_bytes() {
        // The first 21 bytes torch writes: magic pickle then protocol-version pickle.
        let p = preamble();
        assert_eq!(&p[..15], &MAGIC_PICKLE);
        assert_eq!(&p[15..21], &[0x80, 0x02, 0x4d, 0xe9, 0x03, 0x2e]);
        let info = pickle::read(&p[21..]).expect("sys_info");
        assert_eq!(
            info.graph
                .lookup(info.root, "protocol_version")
                .and_then(|v| info.graph.int(v)),
            Some(1001)
        );
    }
}
