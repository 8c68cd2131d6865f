//! A torch dimension argument wrapped as c10's `maybe_wrap_dim(dim, rank,
//! wrap_scalar=true)` does: negative counts from the end, and a 0-d tensor has a
//! dimension 0, which −1 also names. The evaluator and the ONNX lowering both read
//! dimensions through it, so a 0-d tensor is never indexed at an axis it lacks.

/// A wrapped torch dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// Axis `a` of a tensor of rank ≥ 1; invariant: `a < rank`.
    Axis(usize),
    /// Dimension 0 (or −1) of a 0-d tensor. torch's kernels compute along it on the
    /// tensor's one-entry 1-d view ([`Dim::view_axis`]): a softmax of one value, a
    /// running sum of one value, a window of the one value.
    OfScalar,
}

impl Dim {
    /// Torch dimension `dim` of a rank-`rank` tensor; outside `[-rank, rank)` (`[-1, 0]`
    /// for a 0-d tensor) it is refused, as torch raises `IndexError`.
    pub fn wrap(dim: i64, rank: usize) -> Result<Dim, String> {
        let r = rank.max(1) as i64;
        let a = if dim < 0 { dim + r } else { dim };
        if !(0..r).contains(&a) {
            return Err(format!(
                "dimension {dim} is out of range for a rank-{rank} tensor"
            ));
        }
        Ok(if rank == 0 {
            Dim::OfScalar
        } else {
            Dim::Axis(a as usize)
        })
    }

    /// The axis in the tensor torch's kernel computes on: the tensor's own, or 0 in a 0-d
    /// tensor's one-entry 1-d view.
    pub fn view_axis(self) -> usize {
        match self {
            Dim::Axis(a) => a,
            Dim::OfScalar => 0,
        }
    }

    /// The axes a reduction over this dimension reduces: its axis, or none of a 0-d
    /// tensor (the reduction of its one entry is that entry, torch's result).
    pub fn reduced_axes(self) -> Vec<usize> {
        match self {
            Dim::Axis(a) => vec![a],
            Dim::OfScalar => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Dim;

    #[test]
    fn a_0d_tensor_has_dimensions_0_and_minus_1_only() {
        assert_eq!(Dim::wrap(0, 0), Ok(Dim::OfScalar));
        assert_eq!(Dim::wrap(-1, 0), Ok(Dim::OfScalar));
        assert!(Dim::wrap(1, 0).is_err());
        assert!(Dim::wrap(-2, 0).is_err());
    }

    #[test]
    fn a_negative_dimension_counts_from_the_end() {
        assert_eq!(Dim::wrap(-1, 3), Ok(Dim::Axis(2)));
        assert_eq!(Dim::wrap(0, 3), Ok(Dim::Axis(0)));
        assert!(Dim::wrap(3, 3).is_err());
        assert!(Dim::wrap(-4, 3).is_err());
    }
}
