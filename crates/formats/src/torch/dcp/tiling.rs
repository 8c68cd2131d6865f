//! Whether a tensor's chunks cover it exactly once.

use super::metadata::ChunkBox;

/// The most chunks one tensor may have: the overlap check compares every pair.
pub const MAX_CHUNKS: usize = 8192;

/// How a tensor's chunks fail to tile it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TilingProblem {
    #[error("chunk {chunk} has {got} dimensions, the tensor {want}")]
    Rank {
        chunk: usize,
        got: usize,
        want: usize,
    },
    #[error("chunk {chunk} (offsets {offsets:?}, sizes {sizes:?}) lies outside the tensor's size {size:?}")]
    OutOfBounds {
        chunk: usize,
        offsets: Vec<u64>,
        sizes: Vec<u64>,
        size: Vec<u64>,
    },
    #[error("chunks {a} and {b} overlap")]
    Overlap { a: usize, b: usize },
    #[error("the chunks leave {missing} of {numel} elements uncovered (a rank's file is missing from the metadata?)")]
    Missing { missing: u64, numel: u64 },
    #[error("{count} chunks, more than the {MAX_CHUNKS} one tensor may have")]
    TooMany { count: usize },
    #[error("the tensor's element count overflows")]
    Overflow,
}

/// The chunks that tile a tensor, after dropping exact duplicates (replicas).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// Indices into the chunk list, in order.
    pub kept: Vec<usize>,
    /// Chunks that repeat an earlier chunk exactly (a replicated tensor saved twice).
    pub replicas: usize,
}

/// Checks that `chunks` tile a tensor of `size` exactly: each inside it, none overlapping
/// another (exact repeats count as replicas and are dropped), and together covering every
/// element.
pub fn tile(size: &[u64], chunks: &[ChunkBox]) -> Result<Tiling, TilingProblem> {
    if chunks.len() > MAX_CHUNKS {
        return Err(TilingProblem::TooMany {
            count: chunks.len(),
        });
    }
    let numel = size
        .iter()
        .try_fold(1u64, |n, &s| n.checked_mul(s))
        .ok_or(TilingProblem::Overflow)?;
    let mut kept: Vec<usize> = Vec::new();
    let mut replicas = 0;
    let mut covered = 0u64;
    for (i, chunk) in chunks.iter().enumerate() {
        if chunk.offsets.len() != size.len() || chunk.sizes.len() != size.len() {
            return Err(TilingProblem::Rank {
                chunk: i,
                got: chunk.offsets.len().max(chunk.sizes.len()),
                want: size.len(),
            });
        }
        let inside = size
            .iter()
            .zip(chunk.offsets.iter().zip(&chunk.sizes))
            .all(|(&s, (&o, &n))| o.checked_add(n).is_some_and(|end| end <= s));
        if !inside {
            return Err(TilingProblem::OutOfBounds {
                chunk: i,
                offsets: chunk.offsets.clone(),
                sizes: chunk.sizes.clone(),
                size: size.to_vec(),
            });
        }
        if kept.iter().any(|&k| chunks[k] == *chunk) {
            replicas += 1;
            continue;
        }
        if let Some(&k) = kept.iter().find(|&&k| intersect(&chunks[k], chunk)) {
            return Err(TilingProblem::Overlap { a: k, b: i });
        }
        // Inside the tensor, so the product is at most `numel`.
        covered += chunk.numel().ok_or(TilingProblem::Overflow)?;
        kept.push(i);
    }
    if covered != numel {
        return Err(TilingProblem::Missing {
            missing: numel.saturating_sub(covered),
            numel,
        });
    }
    Ok(Tiling { kept, replicas })
}

/// Whether two boxes share an element (empty boxes share none).
fn intersect(a: &ChunkBox, b: &ChunkBox) -> bool {
    (0..a.offsets.len()).all(|d| {
        let (a0, a1) = (a.offsets[d], a.offsets[d] + a.sizes[d]);
        let (b0, b1) = (b.offsets[d], b.offsets[d] + b.sizes[d]);
        a0.max(b0) < a1.min(b1)
    }) && a.numel() != Some(0)
        && b.numel() != Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(offsets: &[u64], sizes: &[u64]) -> ChunkBox {
        ChunkBox {
            offsets: offsets.to_vec(),
            sizes: sizes.to_vec(),
        }
    }

    #[test]
    fn rows_columns_uneven_and_scalars_tile() {
        let rows = [chunk(&[0, 0], &[4, 5]), chunk(&[4, 0], &[3, 5])];
        assert_eq!(tile(&[7, 5], &rows).unwrap().kept, vec![0, 1]);
        let cols = [chunk(&[0, 3], &[7, 2]), chunk(&[0, 0], &[7, 3])];
        assert!(tile(&[7, 5], &cols).is_ok());
        assert!(tile(&[], &[chunk(&[], &[])]).is_ok());
        let replicated = [chunk(&[0], &[4]), chunk(&[0], &[4])];
        assert_eq!(tile(&[4], &replicated).unwrap().replicas, 1);
    }

    #[test]
    fn gaps_overlaps_and_strays_are_named() {
        let gap = [chunk(&[0, 0], &[4, 5])];
        assert_eq!(
            tile(&[7, 5], &gap),
            Err(TilingProblem::Missing {
                missing: 15,
                numel: 35
            })
        );
        let overlap = [chunk(&[0, 0], &[4, 5]), chunk(&[3, 0], &[4, 5])];
        assert_eq!(
            tile(&[7, 5], &overlap),
            Err(TilingProblem::Overlap { a: 0, b: 1 })
        );
        let outside = [chunk(&[0], &[u64::MAX])];
        assert!(matches!(
            tile(&[4], &outside),
            Err(TilingProblem::OutOfBounds { .. })
        ));
        let rank = [chunk(&[0], &[4])];
        assert!(matches!(
            tile(&[4, 1], &rank),
            Err(TilingProblem::Rank { .. })
        ));
        let huge = [chunk(&[0, 0], &[1 << 40, 1 << 40])];
        assert_eq!(
            tile(&[1 << 40, 1 << 40], &huge),
            Err(TilingProblem::Overflow)
        );
    }
}
