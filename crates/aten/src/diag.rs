//! `diag_embed` as torch's reference computes it (`torch._refs.diag_embed`), one plan for
//! the evaluator and the lowering: the last dimension is padded with `|offset|` zeros
//! (before it for a positive offset, after it otherwise), a size-1 dimension is inserted
//! at `dim1` and the last dimension moved to `dim2`, and a `where` with the diagonal mask
//! keeps the element at (`i`, `j`) of (`dim1`, `dim2`) when `j − i == offset`, zero
//! elsewhere (so a NaN or an infinity off the diagonal becomes zero, as in torch).
//!
//! `diagonal` (and `diag` of a 2-D tensor, `linalg_diagonal`, `trace`'s sum) as torch's
//! view computes it (`torch._refs.diagonal`: a strided view of the same storage): the two
//! dimensions moved last and merged, so that element (`i`, `j`) sits at `i·cols + j`, and
//! the diagonal read from its first element with a step of `cols + 1` ([`Diagonal`]).

/// How `diag_embed(self, offset, dim1, dim2)` of a rank-`rank` input is computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiagEmbed {
    /// Zeros before the last dimension's entries.
    pub pad_before: u64,
    /// Zeros after them.
    pub pad_after: u64,
    /// The diagonal's dimensions in the result, `dim1 < dim2`.
    pub dim1: usize,
    pub dim2: usize,
    /// The size of both (the last dimension with its padding).
    pub size: u64,
    /// The offset once `dim1 < dim2` (torch negates it when it swaps them).
    pub offset: i64,
}

impl DiagEmbed {
    /// The plan for an input of rank `rank` whose last size is `last`.
    pub fn plan(rank: usize, last: u64, offset: i64, dim1: i64, dim2: i64) -> Result<Self, String> {
        if rank == 0 {
            return Err("diag_embed of a 0-d tensor (torch needs at least 1-D)".into());
        }
        let out_rank = rank + 1;
        let canonical = |d: i64| -> Result<usize, String> {
            let r = out_rank as i64;
            let a = if d < 0 { d + r } else { d };
            if (0..r).contains(&a) {
                Ok(a as usize)
            } else {
                Err(format!(
                    "diag_embed dimension {d} is out of range for a rank-{out_rank} result"
                ))
            }
        };
        let (mut a, mut b, mut offset) = (canonical(dim1)?, canonical(dim2)?, offset);
        if a > b {
            std::mem::swap(&mut a, &mut b);
            offset = -offset;
        }
        if a == b {
            return Err(format!(
                "diag_embed dimensions cannot be identical ({a}, {b})"
            ));
        }
        let pad = offset.unsigned_abs();
        let size = last.checked_add(pad).ok_or("diag_embed offset overflows")?;
        Ok(DiagEmbed {
            pad_before: if offset > 0 { pad } else { 0 },
            pad_after: if offset < 0 { pad } else { 0 },
            dim1: a,
            dim2: b,
            size,
            offset,
        })
    }

    /// The order of the padded input's dimensions with a size-1 dimension appended (index
    /// `rank`): a permutation that puts that one at `dim1` and the last one at `dim2`
    /// (torch's `unsqueeze(dim1).movedim(-1, dim2)`), for an input of rank `rank`.
    pub fn order(&self, rank: usize) -> Vec<usize> {
        // After unsqueeze(dim1): the input's dims with the new one (`rank`) at dim1.
        let mut dims: Vec<usize> = (0..rank).collect();
        dims.insert(self.dim1, rank);
        // movedim(-1, dim2): the last of those (the input's last dim) to dim2.
        let last = dims.pop().unwrap_or(0);
        dims.insert(self.dim2, last);
        dims
    }

    /// Whether element (`i`, `j`) of (`dim1`, `dim2`) is on the diagonal.
    pub fn kept(&self, i: u64, j: u64) -> bool {
        j as i64 - i as i64 == self.offset
    }

    /// The diagonal mask as 0/1, row-major over (`dim1`, `dim2`).
    pub fn mask(&self) -> Vec<bool> {
        (0..self.size)
            .flat_map(|i| (0..self.size).map(move |j| (i, j)))
            .map(|(i, j)| self.kept(i, j))
            .collect()
    }
}

/// How `diagonal(self, offset, dim1, dim2)` of a tensor of sizes `sizes` is read: permute
/// by `order` (the other dimensions in order, then `dim1`, then `dim2`), merge the last two
/// dimensions (`rows`·`cols` entries), and take `len` entries from `start`, `step` apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagonal {
    pub order: Vec<usize>,
    pub dim1: usize,
    pub dim2: usize,
    pub rows: u64,
    pub cols: u64,
    pub start: u64,
    pub step: u64,
    /// The diagonal's length (0 when the offset passes the matrix: an empty result).
    pub len: u64,
}

impl Diagonal {
    /// The plan for sizes `sizes` (torch's rule: distinct dimensions, negative ones counted
    /// from the end; a positive offset above the main diagonal, a negative one below).
    pub fn plan(sizes: &[u64], offset: i64, dim1: i64, dim2: i64) -> Result<Self, String> {
        let rank = sizes.len();
        let canonical = |d: i64| -> Result<usize, String> {
            let r = rank as i64;
            let a = if d < 0 { d + r } else { d };
            if (0..r).contains(&a) {
                Ok(a as usize)
            } else {
                Err(format!(
                    "diagonal dimension {d} is out of range for a rank-{rank} tensor"
                ))
            }
        };
        let (dim1, dim2) = (canonical(dim1)?, canonical(dim2)?);
        if dim1 == dim2 {
            return Err(format!(
                "diagonal dimensions cannot be identical ({dim1}, {dim2})"
            ));
        }
        let (rows, cols) = (sizes[dim1], sizes[dim2]);
        let (row0, col0) = (offset.min(0).unsigned_abs(), offset.max(0).unsigned_abs());
        let len = rows.saturating_sub(row0).min(cols.saturating_sub(col0));
        let mut order: Vec<usize> = (0..rank).filter(|&d| d != dim1 && d != dim2).collect();
        order.extend([dim1, dim2]);
        Ok(Diagonal {
            order,
            dim1,
            dim2,
            rows,
            cols,
            start: if len == 0 { 0 } else { row0 * cols + col0 },
            step: cols + 1,
            len,
        })
    }

    /// The end (exclusive) of the merged dimension's range read.
    pub fn end(&self) -> u64 {
        if self.len == 0 {
            self.start
        } else {
            self.start + (self.len - 1) * self.step + 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diagonal_reads_every_cols_plus_one_entry_from_its_offset() {
        // [3, 5] with offset 1: (0,1), (1,2), (2,3) at 1, 7, 13.
        let p = Diagonal::plan(&[3, 5], 1, 0, 1).unwrap();
        assert_eq!((p.start, p.step, p.len, p.end()), (1, 6, 3, 14));
        // offset -2 of [5, 3]: (2,0), (3,1), (4,2).
        let p = Diagonal::plan(&[5, 3], -2, 0, 1).unwrap();
        assert_eq!((p.start, p.step, p.len), (6, 4, 3));
        // An offset past the matrix: empty.
        assert_eq!(Diagonal::plan(&[3, 5], 5, 0, 1).unwrap().len, 0);
        // Swapped dimensions read (dim1, dim2) as (rows, cols); the rest keep their order.
        let p = Diagonal::plan(&[2, 3, 4], 0, -1, 0).unwrap();
        assert_eq!(
            (p.order.clone(), p.rows, p.cols, p.len),
            (vec![1, 2, 0], 4, 2, 2)
        );
        assert!(Diagonal::plan(&[2, 3], 0, 1, -1).is_err());
        assert!(Diagonal::plan(&[2, 3], 0, 0, 2).is_err());
    }

    #[test]
    fn offsets_pad_the_last_dimension_and_swapped_dims_negate_them() {
        let p = DiagEmbed::plan(2, 3, 1, -2, -1).unwrap();
        assert_eq!(
            (p.pad_before, p.pad_after, p.dim1, p.dim2, p.size),
            (1, 0, 1, 2, 4)
        );
        assert!(p.kept(0, 1) && !p.kept(1, 1));
        let swapped = DiagEmbed::plan(2, 3, 1, -1, -2).unwrap();
        assert_eq!(
            (swapped.pad_before, swapped.pad_after, swapped.offset),
            (0, 1, -1)
        );
        assert!(DiagEmbed::plan(2, 3, 0, 1, -2).is_err());
        assert!(DiagEmbed::plan(0, 1, 0, 0, 1).is_err());
    }

    #[test]
    fn the_order_puts_the_new_dimension_at_dim1_and_the_last_at_dim2() {
        // [5, 3] -> unsqueeze(1) -> [5, 1, 3] -> movedim(-1, 2): [5, 1, 3].
        assert_eq!(
            DiagEmbed::plan(2, 3, 0, -2, -1).unwrap().order(2),
            vec![0, 2, 1]
        );
        // dims (0, 1) of a [5, 5] input: [new, last, 0].
        assert_eq!(
            DiagEmbed::plan(2, 5, 2, 0, 1).unwrap().order(2),
            vec![2, 1, 0]
        );
    }
}
