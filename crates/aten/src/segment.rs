//! `segment_reduce` by constant `lengths` or `offsets` as torch's CPU kernel computes it
//! (`SegmentReduce.cpp`, `_segment_reduce_lengths_cpu_kernel1`): the data viewed as
//! `[outer, L, inner]` around `axis` (the last dimension of the lengths, whatever `axis`
//! says), each outer row cut into the segments its row of lengths (or offsets) gives, each
//! segment folded from `initial` (or the reduction's identity: −inf for max, +inf for min,
//! 0 for sum and mean, 1 for prod) in order, a NaN taken up by max and min; a mean is then
//! divided by the segment's length, an empty one without `initial` is NaN. The evaluator
//! computes it on numbers and the ONNX lowering writes the same segments as masks.

/// The reduction `segment_reduce` applies to each segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Max,
    Min,
    Sum,
    Mean,
    Prod,
}

impl Reduce {
    /// The reduction torch names `name` (`get_reduction_enum`).
    pub fn named(name: &str) -> Result<Reduce, String> {
        Ok(match name {
            "max" => Reduce::Max,
            "min" => Reduce::Min,
            "sum" => Reduce::Sum,
            "mean" => Reduce::Mean,
            "prod" => Reduce::Prod,
            other => return Err(format!("segment_reduce with reduction '{other}'")),
        })
    }

    /// The value each segment starts from: `initial`, or the reduction's identity.
    pub fn start(self, initial: Option<f64>) -> f32 {
        match (initial, self) {
            (Some(v), _) => v as f32,
            (None, Reduce::Max) => f32::NEG_INFINITY,
            (None, Reduce::Min) => f32::INFINITY,
            (None, Reduce::Sum | Reduce::Mean) => 0.0,
            (None, Reduce::Prod) => 1.0,
        }
    }

    /// One step of the fold: `acc` and entry `x` (max and min take a NaN entry up; a NaN
    /// accumulator stays, as `std::max` keeps its first operand when unordered).
    pub fn step(self, acc: f32, x: f32) -> f32 {
        match self {
            Reduce::Max if x.is_nan() => x,
            Reduce::Max => std_max(acc, x),
            Reduce::Min if x.is_nan() => x,
            Reduce::Min => std_min(acc, x),
            Reduce::Sum | Reduce::Mean => acc + x,
            Reduce::Prod => acc * x,
        }
    }

    /// The segment's result from its fold `acc` over `length` entries: a mean divided by
    /// the length (NaN stays NaN), an empty mean without `initial` NaN.
    pub fn finish(self, acc: f32, length: u64, has_initial: bool) -> f32 {
        match self {
            Reduce::Mean if length == 0 && !has_initial => f32::NAN,
            Reduce::Mean if length > 0 && !acc.is_nan() => acc / length as f32,
            _ => acc,
        }
    }
}

/// `std::max(a, b)`: `b` only when `a < b`.
fn std_max(a: f32, b: f32) -> f32 {
    if a < b {
        b
    } else {
        a
    }
}

/// `std::min(a, b)`: `b` only when `b < a`.
fn std_min(a: f32, b: f32) -> f32 {
    if b < a {
        b
    } else {
        a
    }
}

/// How the segments are given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Given {
    /// Each segment's length; segments follow one another from entry 0.
    Lengths,
    /// The `count + 1` boundaries: segment `s` is `offsets[s]..offsets[s + 1]`.
    Offsets,
}

/// The segments of every outer row: `bounds[row·count + s]` is segment `s` of `row`,
/// a range of entries along the reduced axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segments {
    pub rows: usize,
    pub count: usize,
    pub bounds: Vec<(u64, u64)>,
}

impl Segments {
    /// The segments `table` (of sizes `dims`: the data's sizes before `axis`, then the
    /// segments' entries) gives over dimension `axis` of data of sizes `data`. A segment
    /// of negative length or one reaching outside the axis is refused (torch's `unsafe`
    /// skips the check on the total, not what the kernel reads).
    pub fn new(
        given: Given,
        dims: &[u64],
        table: &[i64],
        data: &[u64],
        axis: usize,
    ) -> Result<Self, String> {
        let (&last, outer) = dims
            .split_last()
            .ok_or("segment_reduce with 0-d lengths (torch needs at least one dimension)")?;
        let length = match data.get(axis) {
            Some(&n) if data[..axis] == *outer => n,
            _ => {
                return Err(format!(
                    "segment_reduce of sizes {data:?} by lengths of sizes {dims:?} (torch needs the data's sizes before the axis)"
                ))
            }
        };
        let entries = usize::try_from(last).map_err(|e| e.to_string())?;
        let count = match given {
            Given::Lengths => entries,
            Given::Offsets => entries
                .checked_sub(1)
                .ok_or("segment_reduce with no offsets (torch needs at least one)")?,
        };
        let rows = usize::try_from(outer.iter().product::<u64>()).map_err(|e| e.to_string())?;
        if table.len() != rows * entries {
            return Err(format!(
                "segment_reduce: {} lengths for sizes {dims:?}",
                table.len()
            ));
        }
        let mut bounds = Vec::with_capacity(rows * count);
        for row in table.chunks(entries.max(1)).take(rows) {
            let mut end = match given {
                Given::Lengths => 0,
                Given::Offsets => row[0],
            };
            for s in 0..count {
                let start = end;
                end = match given {
                    Given::Lengths => start.saturating_add(row[s]),
                    Given::Offsets => row[s + 1],
                };
                let inside = 0 <= start && start <= end && end as u64 <= length;
                if !inside {
                    return Err(format!(
                        "segment_reduce: segment {s} runs over entries {start}..{end} of an axis of {length}"
                    ));
                }
                bounds.push((start as u64, end as u64));
            }
        }
        Ok(Segments {
            rows,
            count,
            bounds,
        })
    }

    /// Segment `s` of outer row `row`.
    pub fn bound(&self, row: usize, s: usize) -> (u64, u64) {
        self.bounds[row * self.count + s]
    }
}

/// The axis `segment_reduce` reduces: `axis` wrapped to the data's rank, which torch
/// needs to be the last dimension of the lengths (or offsets) of rank `table_rank`.
pub fn axis(axis: i64, data_rank: usize, table_rank: usize) -> Result<usize, String> {
    let rank = data_rank as i64;
    let wrapped = if axis < 0 { axis + rank } else { axis };
    if !(0..rank.max(1)).contains(&wrapped) {
        return Err(format!(
            "segment_reduce along dimension {axis} of a rank-{data_rank} tensor"
        ));
    }
    if wrapped + 1 != table_rank as i64 {
        return Err(format!(
            "segment_reduce along dimension {axis} with {table_rank}-D lengths (torch needs the axis to be their last dimension)"
        ));
    }
    Ok(wrapped as usize)
}

/// `segment_reduce` of `values` viewed `[outer, length, inner]` (`outer` the segments'
/// rows): `[outer, count, inner]`.
pub fn reduce(
    values: &[f32],
    segments: &Segments,
    inner: usize,
    how: Reduce,
    initial: Option<f64>,
) -> Vec<f32> {
    let length = values.len() / (segments.rows * inner).max(1);
    let mut out = Vec::with_capacity(segments.rows * segments.count * inner);
    for row in 0..segments.rows {
        for s in 0..segments.count {
            let (start, end) = segments.bound(row, s);
            for i in 0..inner {
                let acc = (start..end).fold(how.start(initial), |acc, j| {
                    how.step(acc, values[(row * length + j as usize) * inner + i])
                });
                out.push(how.finish(acc, end - start, initial.is_some()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_offsets_cut_the_axis_alike() {
        let by_lengths = Segments::new(Given::Lengths, &[4], &[0, 1, 2, 2], &[5], 0).unwrap();
        let by_offsets = Segments::new(Given::Offsets, &[5], &[0, 0, 1, 3, 5], &[5], 0).unwrap();
        assert_eq!(by_lengths, by_offsets);
        assert_eq!(by_lengths.bounds, [(0, 0), (0, 1), (1, 3), (3, 5)]);
        assert!(Segments::new(Given::Lengths, &[2], &[3, 3], &[5], 0).is_err());
        assert!(Segments::new(Given::Lengths, &[2], &[-1, 3], &[5], 0).is_err());
        assert!(Segments::new(Given::Lengths, &[3, 2], &[1; 6], &[2, 2], 1).is_err());
    }

    #[test]
    fn segments_fold_from_initial_and_an_empty_mean_is_nan() {
        let s = Segments::new(Given::Lengths, &[3], &[2, 0, 1], &[3], 0).unwrap();
        let x = [1.0, 3.0, 5.0];
        assert_eq!(reduce(&x, &s, 1, Reduce::Sum, Some(1.0)), [5.0, 1.0, 6.0]);
        assert_eq!(
            reduce(&x, &s, 1, Reduce::Max, None),
            [3.0, f32::NEG_INFINITY, 5.0]
        );
        let mean = reduce(&x, &s, 1, Reduce::Mean, None);
        assert_eq!((mean[0], mean[2]), (2.0, 5.0));
        assert!(mean[1].is_nan());
        assert_eq!(reduce(&x, &s, 1, Reduce::Mean, Some(2.0)), [3.0, 2.0, 7.0]);
        assert!(reduce(&[f32::NAN, 1.0, 0.0], &s, 1, Reduce::Min, None)[0].is_nan());
    }
}
