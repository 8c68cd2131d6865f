//! How FSDP2's `Shard(0)` placement splits a tensor over ranks: `torch.chunk` along dim 0.

use ckpt_formats::torch::dcp::metadata::ChunkBox;

/// The most ranks a sharded checkpoint may be written for: the reader's limit on chunks per
/// tensor ([`ckpt_formats::torch::dcp::tiling::MAX_CHUNKS`]).
pub const MAX_RANKS: u64 = ckpt_formats::torch::dcp::tiling::MAX_CHUNKS as u64;

/// The rows `[start, start + len)` of dim 0 that `rank` of `ranks` holds under `Shard(0)`:
/// `ceil(rows / ranks)` rows each, so the last ranks may hold fewer or none (`len == 0`).
pub fn rows(rows: u64, rank: u64, ranks: u64) -> (u64, u64) {
    let per_rank = rows.div_ceil(ranks.max(1));
    let start = rank.saturating_mul(per_rank).min(rows);
    (start, per_rank.min(rows - start))
}

/// The chunk `rank` of `ranks` stores of a tensor of `size`, or `None` when it stores nothing.
///
/// A tensor with at least one dimension is split by [`rows`]; ranks whose share is empty store
/// nothing. A 0-d tensor, and a tensor with no elements, is stored whole by rank 0 (replicated
/// state is saved once, as DCP's deduplication does).
pub fn chunk(size: &[u64], rank: u64, ranks: u64) -> Option<ChunkBox> {
    let whole = ChunkBox {
        offsets: vec![0; size.len()],
        sizes: size.to_vec(),
    };
    match size.first() {
        Some(&first) if size.iter().all(|&s| s > 0) => {
            let (start, len) = rows(first, rank, ranks);
            (len > 0).then(|| {
                let mut chunk = whole;
                chunk.offsets[0] = start;
                chunk.sizes[0] = len;
                chunk
            })
        }
        _ => (rank == 0).then_some(whole),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_torch_chunk() {
        // torch.chunk(torch.arange(5), 2) -> [3, 2]; over 4 ranks -> [2, 2, 1, 0].
        assert_eq!(rows(5, 0, 2), (0, 3));
        assert_eq!(rows(5, 1, 2), (3, 2));
        let four: Vec<_> = (0..4).map(|r| rows(5, r, 4)).collect();
        assert_eq!(four, vec![(0, 2), (2, 2), (4, 1), (5, 0)]);
        // 6 rows over 4 ranks: ceil = 2 -> [2, 2, 2, 0].
        assert_eq!(rows(6, 3, 4), (6, 0));
    }

    #[test]
    fn chunks_tile_the_tensor_and_skip_empty_ranks() {
        let size = [5, 3];
        let chunks: Vec<_> = (0..4).filter_map(|r| chunk(&size, r, 4)).collect();
        assert_eq!(chunks.len(), 3);
        assert!(ckpt_formats::torch::dcp::tiling::tile(&size, &chunks).is_ok());
        assert_eq!(chunks[2].offsets, vec![4, 0]);
        assert_eq!(chunks[2].sizes, vec![1, 3]);
    }

    #[test]
    fn scalars_and_empty_tensors_are_stored_whole_by_rank_zero() {
        for size in [vec![], vec![0, 4], vec![3, 0]] {
            let stored: Vec<_> = (0..3).filter_map(|r| chunk(&size, r, 3)).collect();
            assert_eq!(
                stored,
                vec![ChunkBox {
                    offsets: vec![0; size.len()],
                    sizes: size.clone()
                }]
            );
        }
    }
}
