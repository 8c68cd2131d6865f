//! Hand-built tar checkpoints and the fixture's facts, shared by the loader's tests and
//! the scanner's (which judge the same hostile layouts).

use std::collections::HashMap;
use std::io::Write;

use super::{members, parse, Member, TarCheckpoint, PICKLE, STORAGES, TENSORS};
use crate::torch::dtype::DType;
use crate::torch::tensor::{scan, Scan, TensorRef};
use crate::torch::TorchError;
use ckpt_pickle::{Graph, NodeId};

/// The name torch's writer gives a PAX extended header.
pub const PAX_HEADER_NAME: &str = super::PAX_HEADER_NAME;

pub fn fixture() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/tar_pre2017.pth"
    );
    std::fs::read(path).expect("fixture")
}

/// Writes `bytes` to a temporary file and parses it.
pub fn parse_bytes(bytes: &[u8]) -> Result<TarCheckpoint, TorchError> {
    let mut file = tempfile::tempfile().expect("temp file");
    file.write_all(bytes).expect("write");
    parse(&file, bytes.len() as u64)
}

/// A ustar header block with a valid checksum.
pub fn header(name: &str, size: u64, typeflag: u8) -> [u8; 512] {
    let mut block = [0u8; 512];
    block[..name.len()].copy_from_slice(name.as_bytes());
    block[100..107].copy_from_slice(b"0000644");
    block[108..115].copy_from_slice(b"0000000");
    block[116..123].copy_from_slice(b"0000000");
    block[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    block[136..147].copy_from_slice(b"00000000000");
    block[156] = typeflag;
    block[257..263].copy_from_slice(b"ustar\0");
    block[263..265].copy_from_slice(b"00");
    set_checksum(&mut block);
    block
}

pub fn set_checksum(block: &mut [u8]) {
    block[148..156].copy_from_slice(b"        ");
    let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
    block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

/// A tar of `(header name, typeflag, data)` members and the two closing zero blocks.
pub fn build_tar(members: &[(&str, u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, typeflag, data) in members {
        out.extend_from_slice(&header(name, data.len() as u64, *typeflag));
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

/// A PAX extended-header record.
pub fn pax(keyword: &str, value: &str) -> Vec<u8> {
    let body = format!(" {keyword}={value}\n");
    let mut len = body.len() + 1;
    while format!("{len}{body}").len() != len {
        len += 1;
    }
    format!("{len}{body}").into_bytes()
}

/// The data of the fixture's members, by name.
pub fn fixture_members() -> HashMap<&'static str, Vec<u8>> {
    let bytes = fixture();
    let mut file = tempfile::tempfile().expect("temp file");
    file.write_all(&bytes).expect("write");
    let found = members(&file, bytes.len() as u64).expect("members");
    let data = |m: Option<Member>| {
        let m = m.expect("member");
        bytes[m.offset as usize..(m.offset + m.size) as usize].to_vec()
    };
    HashMap::from([
        ("pickle", data(found.0[PICKLE])),
        ("tensors", data(found.0[TENSORS])),
        ("storages", data(found.0[STORAGES])),
    ])
}

pub fn tensor<'a>(graph: &Graph, root: NodeId, scan: &'a Scan, key: &str) -> &'a TensorRef {
    let node = graph.lookup(root, key).expect("key");
    scan.tensor_at(node).expect("tensor")
}

/// `(key, dtype, shape, stride, storage_offset, storage nbytes)`.
pub type Fact = (
    &'static str,
    DType,
    &'static [u64],
    &'static [i64],
    u64,
    u64,
);

/// Facts torch 2.13 reports for the fixture (`torch.load(..., weights_only=False)`).
pub const TORCH_FACTS: [Fact; 4] = [
    ("weight", DType::Float32, &[4, 3], &[3, 1], 0, 48),
    ("bias_view", DType::Float32, &[4], &[1], 2, 40),
    ("strided", DType::Float32, &[2, 2], &[1, 2], 6, 40),
    ("steps", DType::Int64, &[3], &[1], 0, 24),
];

pub fn check_fixture_facts(ckpt: &TarCheckpoint) {
    let scan = scan(&ckpt.graph, ckpt.root).expect("scan");
    assert_eq!(scan.tensors.len(), 4);
    let storages = scan.unique_storages();
    assert_eq!(storages.len(), 3);
    let total: u64 = storages.iter().map(|s| s.nbytes().expect("nbytes")).sum();
    assert_eq!(total, 112);
    for (key, dtype, shape, stride, offset, nbytes) in TORCH_FACTS {
        let t = tensor(&ckpt.graph, ckpt.root, &scan, key);
        assert_eq!(t.dtype, dtype, "{key}");
        assert_eq!(t.shape, shape, "{key}");
        assert_eq!(t.stride, stride, "{key}");
        assert_eq!(t.offset, offset, "{key}");
        assert_eq!(t.storage.nbytes(), Some(nbytes), "{key}");
        assert_eq!(t.storage.location, "cpu");
        assert_eq!(ckpt.records[&t.storage.key].nbytes, nbytes, "{key}");
    }
    let shared = |k| tensor(&ckpt.graph, ckpt.root, &scan, k).storage.key.clone();
    assert_eq!(shared("bias_view"), shared("strided"));
    assert_eq!(
        ckpt.graph
            .lookup(ckpt.root, "epoch")
            .map(|e| ckpt.graph.int(e)),
        Some(Some(3))
    );
}

/// A member to build: header name, typeflag, data.
pub type TarMember<'a> = (&'a str, u8, Vec<u8>);

/// `os.system("true")`, pickled.
pub const EVIL: &[u8] = b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R.";

/// A tar of the fixture's members with `pickle` replaced by `object` and `extra`
/// members (header name, typeflag, data) inserted before it.
pub fn with_members(extra: &[(&str, u8, Vec<u8>)], object: &[u8]) -> Vec<u8> {
    let m = fixture_members();
    let mut members = vec![("sys_info", b'0', b"\x80\x02}.".to_vec())];
    members.extend(extra.iter().cloned());
    members.extend([
        ("pickle", b'0', object.to_vec()),
        ("tensors", b'0', m["tensors"].clone()),
        ("storages", b'0', m["storages"].clone()),
    ]);
    build_tar(&members)
}

/// Where the `storages` member's data ends, rounded up to whole blocks.
pub fn storages_end(bytes: &[u8]) -> usize {
    let mut file = tempfile::tempfile().expect("temp file");
    file.write_all(bytes).expect("write");
    let found = members(&file, bytes.len() as u64).expect("members");
    let end = found.0[STORAGES].map(|s| (s.offset + s.size).div_ceil(512) * 512);
    end.expect("storages") as usize
}
