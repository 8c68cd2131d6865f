//! `diag_embed` as torch's reference computes it (`torch._refs.diag_embed`), one plan for
//! the evaluator and the lowering: the last dimension is padded with `|offset|` zeros
//! (before it for a positive offset, after it otherwise), a size-1 dimension is inserted
//! at `dim1` and the last dimension moved to `dim2`, and a `where` with the diagonal mask
//! keeps the element at (`i`, `j`) of (`dim1`, `dim2`) when `j − i == offset`, zero
//! elsewhere (so a NaN or an infinity off the diagonal becomes zero, as in torch).

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

#[cfg(test)]
mod tests {
    use super::*;

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
