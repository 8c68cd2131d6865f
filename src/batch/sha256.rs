//! SHA-256 for the manifest, counting the bytes it has seen.
//!
//! The manifest records SHA-256 (hex) of every input and output: the field names, `{sha8}`
//! output names and resume all depend on it, so the algorithm is fixed. The hashing is the
//! `sha2` crate's (it uses the CPU's SHA extensions where there are some); this wrapper adds
//! the byte count the fused writer checks against the file's size.

use sha2::{Digest, Sha256 as Hasher};

/// A streaming SHA-256 hasher that counts its bytes.
#[derive(Clone, Default)]
pub struct Sha256 {
    hasher: Hasher,
    /// Bytes hashed so far.
    len: u64,
}

impl Sha256 {
    /// A hasher that has seen no bytes.
    pub fn new() -> Sha256 {
        Sha256::default()
    }

    /// Bytes hashed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Adds `data` to the stream.
    pub fn update(&mut self, data: &[u8]) {
        self.hasher.update(data);
        self.len = self.len.wrapping_add(data.len() as u64);
    }

    /// The digest of everything added.
    pub fn finish(self) -> [u8; 32] {
        self.hasher.finalize().into()
    }

    /// The digest as lowercase hex, as the manifest records it.
    pub fn finish_hex(self) -> String {
        super::manifest::hex(&self.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_and_counts_match_one_pass_over_the_bytes() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut split = Sha256::new();
        split.update(&data[..333]);
        split.update(&data[333..]);
        assert_eq!(split.len(), 1000);
        let whole: [u8; 32] = Hasher::digest(&data).into();
        assert_eq!(split.finish(), whole);
        let empty = Sha256::new().finish_hex();
        assert_eq!(
            empty,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
