//! SHA-256 for the manifest, with a way to hash two streams at once.
//!
//! The manifest records SHA-256 (hex) of every input and output: the field names, `{sha8}`
//! output names and resume all depend on it, so the algorithm is fixed. Single-stream speed is
//! the same from every well-kept implementation on a CPU with the SHA extensions (the `sha2`
//! crate, `ring` and OpenSSL all hash about 2 GB/s per core here): each block's 64 rounds are
//! one dependency chain, so a core's SHA unit waits on its own results. Two independent
//! streams interleaved keep it busier (the technique of the Linux kernel's
//! `sha256_ni_finup2x`, which fs-verity and dm-verity use): [`update_pair`] hashes an input
//! and the output being made from it together, about 1.4 × the bytes per second of two single
//! passes on the machine the benchmarks use. No well-kept crate offers two-stream SHA-256, so
//! that block function is written here on the CPU's intrinsics; a single stream uses `sha2`'s
//! block function, as do both streams, one after the other, without the SHA extensions (or
//! off x86-64). The digests are plain SHA-256 either way; the tests check them
//! against `sha2` for every split of the data.

use sha2::digest::generic_array::{typenum::U64, GenericArray};

const H0: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

type Block = [u8; 64];

/// A streaming SHA-256 (FIPS 180-4) hasher.
#[derive(Clone)]
pub struct Sha256 {
    state: [u32; 8],
    pending: Block,
    buffered: usize,
    /// Bytes hashed so far.
    len: u64,
}

impl Default for Sha256 {
    fn default() -> Self {
        Sha256::new()
    }
}

impl Sha256 {
    /// A hasher that has seen no bytes.
    pub fn new() -> Sha256 {
        Sha256 {
            state: H0,
            pending: [0; 64],
            buffered: 0,
            len: 0,
        }
    }

    /// Bytes hashed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Adds `data` to the stream.
    pub fn update(&mut self, data: &[u8]) {
        let rest = self.fill(data);
        if self.buffered != 0 {
            return;
        }
        let (blocks, tail) = as_blocks(rest);
        compress(&mut self.state, blocks);
        self.keep(tail);
    }

    /// The digest of everything added.
    pub fn finish(mut self) -> [u8; 32] {
        let bits = self.len.wrapping_mul(8);
        let mut tail = [0u8; 128];
        tail[..self.buffered].copy_from_slice(&self.pending[..self.buffered]);
        tail[self.buffered] = 0x80;
        let total = if self.buffered < 56 { 64 } else { 128 };
        tail[total - 8..total].copy_from_slice(&bits.to_be_bytes());
        let (blocks, _) = as_blocks(&tail[..total]);
        compress(&mut self.state, blocks);
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// The digest as lowercase hex, as the manifest records it.
    pub fn finish_hex(self) -> String {
        super::manifest::hex(&self.finish())
    }

    /// Completes a partly filled block from the front of `data`; returns what is left (all
    /// of `data` when nothing was pending).
    fn fill<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.buffered == 0 {
            return data;
        }
        let take = (64 - self.buffered).min(data.len());
        self.pending[self.buffered..self.buffered + take].copy_from_slice(&data[..take]);
        self.buffered += take;
        if self.buffered == 64 {
            let block = self.pending;
            compress(&mut self.state, std::slice::from_ref(&block));
            self.buffered = 0;
        }
        &data[take..]
    }

    /// Keeps a tail shorter than a block (only called with nothing pending).
    fn keep(&mut self, tail: &[u8]) {
        self.pending[..tail.len()].copy_from_slice(tail);
        self.buffered = tail.len();
    }
}

/// Adds `da` to `a` and `db` to `b`, hashing the whole blocks both have side by side: the
/// same digests as `a.update(da); b.update(db)`, in less time where the CPU allows.
pub fn update_pair(a: &mut Sha256, da: &[u8], b: &mut Sha256, db: &[u8]) {
    let ra = a.fill(da);
    let rb = b.fill(db);
    // Whatever filled only the pending block is done; both are now at block boundaries or
    // out of data.
    let (ba, ta) = if a.buffered == 0 {
        as_blocks(ra)
    } else {
        (&[][..], ra)
    };
    let (bb, tb) = if b.buffered == 0 {
        as_blocks(rb)
    } else {
        (&[][..], rb)
    };
    let n = ba.len().min(bb.len());
    compress_pair(&mut a.state, &ba[..n], &mut b.state, &bb[..n]);
    compress(&mut a.state, &ba[n..]);
    compress(&mut b.state, &bb[n..]);
    if a.buffered == 0 {
        a.keep(ta);
    }
    if b.buffered == 0 {
        b.keep(tb);
    }
}

/// `data` as whole blocks and the bytes after them.
fn as_blocks(data: &[u8]) -> (&[Block], &[u8]) {
    let (blocks, tail) = data.as_chunks::<64>();
    (blocks, tail)
}

/// The single-stream block function: `sha2`'s (on the SHA extensions where the CPU has them).
fn compress(state: &mut [u32; 8], blocks: &[Block]) {
    // SAFETY: `GenericArray<u8, U64>` is a `#[repr(transparent)]` wrapper of `[u8; 64]`, so a
    // slice of one is a slice of the other (the cast `sha2::compress256` itself makes back).
    let blocks = unsafe {
        std::slice::from_raw_parts(
            blocks.as_ptr().cast::<GenericArray<u8, U64>>(),
            blocks.len(),
        )
    };
    sha2::compress256(state, blocks);
}

fn compress_pair(sa: &mut [u32; 8], a: &[Block], sb: &mut [u32; 8], b: &[Block]) {
    #[cfg(target_arch = "x86_64")]
    if shani::available() && a.len() == b.len() {
        // SAFETY: the CPU has the instructions `shani::compress_pair` is compiled for.
        unsafe { shani::compress_pair(sa, a, sb, b) };
        return;
    }
    compress(sa, a);
    compress(sb, b);
}

/// The block function on the x86 SHA extensions for two streams interleaved (each stream's
/// instruction sequence is Intel's reference, as in the `sha2` crate).
#[cfg(target_arch = "x86_64")]
mod shani {
    use super::Block;
    use std::arch::x86_64::*;

    const K: [u32; 64] = [
        0x428a_2f98,
        0x7137_4491,
        0xb5c0_fbcf,
        0xe9b5_dba5,
        0x3956_c25b,
        0x59f1_11f1,
        0x923f_82a4,
        0xab1c_5ed5,
        0xd807_aa98,
        0x1283_5b01,
        0x2431_85be,
        0x550c_7dc3,
        0x72be_5d74,
        0x80de_b1fe,
        0x9bdc_06a7,
        0xc19b_f174,
        0xe49b_69c1,
        0xefbe_4786,
        0x0fc1_9dc6,
        0x240c_a1cc,
        0x2de9_2c6f,
        0x4a74_84aa,
        0x5cb0_a9dc,
        0x76f9_88da,
        0x983e_5152,
        0xa831_c66d,
        0xb003_27c8,
        0xbf59_7fc7,
        0xc6e0_0bf3,
        0xd5a7_9147,
        0x06ca_6351,
        0x1429_2967,
        0x27b7_0a85,
        0x2e1b_2138,
        0x4d2c_6dfc,
        0x5338_0d13,
        0x650a_7354,
        0x766a_0abb,
        0x81c2_c92e,
        0x9272_2c85,
        0xa2bf_e8a1,
        0xa81a_664b,
        0xc24b_8b70,
        0xc76c_51a3,
        0xd192_e819,
        0xd699_0624,
        0xf40e_3585,
        0x106a_a070,
        0x19a4_c116,
        0x1e37_6c08,
        0x2748_774c,
        0x34b0_bcb5,
        0x391c_0cb3,
        0x4ed8_aa4a,
        0x5b9c_ca4f,
        0x682e_6ff3,
        0x748f_82ee,
        0x78a5_636f,
        0x84c8_7814,
        0x8cc7_0208,
        0x90be_fffa,
        0xa450_6ceb,
        0xbef9_a3f7,
        0xc671_78f2,
    ];

    /// Whether this CPU has the SHA extensions and the SSE levels the code uses (std caches
    /// what it detects).
    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("sha")
            && std::arch::is_x86_feature_detected!("sse2")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("sse4.1")
    }

    #[inline(always)]
    unsafe fn schedule(v0: __m128i, v1: __m128i, v2: __m128i, v3: __m128i) -> __m128i {
        let t1 = _mm_sha256msg1_epu32(v0, v1);
        let t2 = _mm_alignr_epi8(v3, v2, 4);
        let t3 = _mm_add_epi32(t1, t2);
        _mm_sha256msg2_epu32(t3, v3)
    }

    #[inline(always)]
    unsafe fn rounds4(abef: &mut __m128i, cdgh: &mut __m128i, w: __m128i, i: usize) {
        // SAFETY (caller): `i < 16`, so the four words at `4 i` are inside `K`.
        let k = _mm_loadu_si128(K.as_ptr().add(i * 4).cast::<__m128i>());
        let t1 = _mm_add_epi32(w, k);
        *cdgh = _mm_sha256rnds2_epu32(*cdgh, *abef, t1);
        let t2 = _mm_shuffle_epi32(t1, 0x0E);
        *abef = _mm_sha256rnds2_epu32(*abef, *cdgh, t2);
    }

    #[inline(always)]
    unsafe fn load_state(state: &[u32; 8]) -> (__m128i, __m128i) {
        let p = state.as_ptr().cast::<__m128i>();
        let dcba = _mm_loadu_si128(p);
        let efgh = _mm_loadu_si128(p.add(1));
        let cdab = _mm_shuffle_epi32(dcba, 0xB1);
        let efgh = _mm_shuffle_epi32(efgh, 0x1B);
        (
            _mm_alignr_epi8(cdab, efgh, 8),
            _mm_blend_epi16(efgh, cdab, 0xF0),
        )
    }

    #[inline(always)]
    unsafe fn store_state(state: &mut [u32; 8], abef: __m128i, cdgh: __m128i) {
        let feba = _mm_shuffle_epi32(abef, 0x1B);
        let dchg = _mm_shuffle_epi32(cdgh, 0xB1);
        let dcba = _mm_blend_epi16(feba, dchg, 0xF0);
        let hgef = _mm_alignr_epi8(dchg, feba, 8);
        let p = state.as_mut_ptr().cast::<__m128i>();
        _mm_storeu_si128(p, dcba);
        _mm_storeu_si128(p.add(1), hgef);
    }

    #[inline(always)]
    unsafe fn load_words(block: &Block) -> [__m128i; 4] {
        let mask = _mm_set_epi64x(
            0x0C0D_0E0F_0809_0A0Bu64 as i64,
            0x0405_0607_0001_0203u64 as i64,
        );
        let p = block.as_ptr().cast::<__m128i>();
        [
            _mm_shuffle_epi8(_mm_loadu_si128(p), mask),
            _mm_shuffle_epi8(_mm_loadu_si128(p.add(1)), mask),
            _mm_shuffle_epi8(_mm_loadu_si128(p.add(2)), mask),
            _mm_shuffle_epi8(_mm_loadu_si128(p.add(3)), mask),
        ]
    }

    /// Two streams of as many blocks each, their rounds interleaved.
    ///
    /// # Safety
    /// The CPU must have the features [`available`] checks.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub unsafe fn compress_pair(sa: &mut [u32; 8], a: &[Block], sb: &mut [u32; 8], b: &[Block]) {
        let (mut abef_a, mut cdgh_a) = load_state(sa);
        let (mut abef_b, mut cdgh_b) = load_state(sb);
        for (block_a, block_b) in a.iter().zip(b) {
            let (abef_a0, cdgh_a0, abef_b0, cdgh_b0) = (abef_a, cdgh_a, abef_b, cdgh_b);
            let mut wa = load_words(block_a);
            let mut wb = load_words(block_b);
            for i in 0..4 {
                rounds4(&mut abef_a, &mut cdgh_a, wa[i], i);
                rounds4(&mut abef_b, &mut cdgh_b, wb[i], i);
            }
            for i in 4..16 {
                let next_a = schedule(wa[0], wa[1], wa[2], wa[3]);
                let next_b = schedule(wb[0], wb[1], wb[2], wb[3]);
                wa = [wa[1], wa[2], wa[3], next_a];
                wb = [wb[1], wb[2], wb[3], next_b];
                rounds4(&mut abef_a, &mut cdgh_a, next_a, i);
                rounds4(&mut abef_b, &mut cdgh_b, next_b, i);
            }
            abef_a = _mm_add_epi32(abef_a, abef_a0);
            cdgh_a = _mm_add_epi32(cdgh_a, cdgh_a0);
            abef_b = _mm_add_epi32(abef_b, abef_b0);
            cdgh_b = _mm_add_epi32(cdgh_b, cdgh_b0);
        }
        store_state(sa, abef_a, cdgh_a);
        store_state(sb, abef_b, cdgh_b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    fn reference(data: &[u8]) -> [u8; 32] {
        sha2::Sha256::digest(data).into()
    }

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
            .collect()
    }

    #[test]
    fn known_digests() {
        assert_eq!(
            Sha256::new().finish_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let mut h = Sha256::new();
        h.update(b"abc");
        assert_eq!(
            h.finish_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn every_length_and_split_matches_sha2() {
        for n in (0..300).chain([1000, 4095, 4096, 65_537]) {
            let data = bytes(n, 7);
            for split in [0, 1, 55, 56, 63, 64, 65, 127, n / 2, n] {
                let split = split.min(n);
                let mut h = Sha256::new();
                h.update(&data[..split]);
                h.update(&data[split..]);
                assert_eq!(h.len(), n as u64);
                assert_eq!(h.finish(), reference(&data), "n={n} split={split}");
            }
        }
    }

    #[test]
    fn pairs_give_the_digests_of_single_streams() {
        let a = bytes(200_003, 1);
        let b = bytes(150_011, 2);
        // Uneven pieces, so the two streams are out of block step most of the time.
        for (step_a, step_b) in [
            (1 << 20, 1 << 20),
            (64, 64),
            (100, 37),
            (4096, 1000),
            (3, 5000),
        ] {
            let (mut ha, mut hb) = (Sha256::new(), Sha256::new());
            let (mut ia, mut ib) = (0, 0);
            while ia < a.len() || ib < b.len() {
                let ea = (ia + step_a).min(a.len());
                let eb = (ib + step_b).min(b.len());
                update_pair(&mut ha, &a[ia..ea], &mut hb, &b[ib..eb]);
                (ia, ib) = (ea, eb);
            }
            assert_eq!(ha.finish(), reference(&a), "a {step_a}/{step_b}");
            assert_eq!(hb.finish(), reference(&b), "b {step_a}/{step_b}");
        }
    }

    #[test]
    fn the_block_slice_handed_to_sha2_holds_every_block() {
        let data = bytes(10_000, 3);
        let mut state = H0;
        let (blocks, _) = as_blocks(&data);
        for block in blocks {
            sha2::compress256(
                &mut state,
                std::slice::from_ref(GenericArray::from_slice(block)),
            );
        }
        let mut fast = H0;
        compress(&mut fast, blocks);
        assert_eq!(state, fast);
    }
}
