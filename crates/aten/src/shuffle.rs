//! `pixel_shuffle` and `pixel_unshuffle` as torch's reference decomposes them: the last
//! three dimensions `[C·r², H, W]` (resp. `[C, H·r, W·r]`) reshaped to five, permuted, and
//! reshaped back to three (`[C, H·r, W·r]`, resp. `[C·r², H, W]`); the leading dimensions
//! are untouched; `channel_shuffle` likewise splits dimension 1 into groups and swaps them.
//! The evaluator and the lowering both follow these plans.

/// How to rearrange the last three sizes `last` by factor `r` (`up`: `pixel_shuffle`).
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// The five sizes the last three are split into.
    pub split: [u64; 5],
    /// The permutation of those five.
    pub order: [usize; 5],
    /// The three sizes they are merged into.
    pub merged: [u64; 3],
}

/// The plan for `last` (`[C·r², H, W]` up, `[C, H·r, W·r]` down) and factor `r`, or why
/// torch refuses it.
pub fn plan(last: [u64; 3], r: i64, up: bool) -> Result<Plan, String> {
    let r = u64::try_from(r)
        .ok()
        .filter(|&r| r > 0)
        .ok_or_else(|| format!("a shuffle factor of {r}"))?;
    let [c, h, w] = last;
    if up {
        if c % (r * r) != 0 {
            return Err(format!(
                "pixel_shuffle of {c} channels by {r}: not divisible by {}",
                r * r
            ));
        }
        Ok(Plan {
            split: [c / (r * r), r, r, h, w],
            order: [0, 3, 1, 4, 2],
            merged: [c / (r * r), h * r, w * r],
        })
    } else {
        if h % r != 0 || w % r != 0 {
            return Err(format!("pixel_unshuffle of {h}×{w} by {r}: not divisible"));
        }
        Ok(Plan {
            split: [c, h / r, r, w / r, r],
            order: [0, 2, 4, 1, 3],
            merged: [c * r * r, h / r, w / r],
        })
    }
}

/// `channel_shuffle(self, groups)` of a tensor of sizes `dims` (torch's reference,
/// `torch._refs.nn.functional.channel_shuffle`): the channels (dimension 1) split into
/// `[groups, channels / groups]`, those two swapped, and merged back. The split, or why
/// torch refuses it.
pub fn channel_groups(dims: &[u64], groups: i64) -> Result<[u64; 2], String> {
    let &[_, channels, _, ..] = dims else {
        return Err(format!(
            "channel_shuffle of a rank-{} tensor (torch needs more than 2 dimensions)",
            dims.len()
        ));
    };
    let groups = u64::try_from(groups)
        .ok()
        .filter(|&g| g > 0 && channels.is_multiple_of(g))
        .ok_or_else(|| format!("channel_shuffle of {channels} channels into {groups} groups"))?;
    Ok([groups, channels / groups])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_move_channels_to_space_and_back() {
        let up = plan([8, 2, 3], 2, true).unwrap();
        assert_eq!(up.merged, [2, 4, 6]);
        let down = plan(up.merged, 2, false).unwrap();
        assert_eq!(down.merged, [8, 2, 3]);
        assert!(plan([6, 2, 3], 2, true).is_err());
        assert!(plan([2, 3, 4], 2, false).is_err());
        assert!(plan([4, 2, 2], 0, true).is_err());
    }

    #[test]
    fn channel_groups_split_the_channels_evenly() {
        assert_eq!(channel_groups(&[2, 6, 8, 8], 3), Ok([3, 2]));
        assert!(channel_groups(&[2, 6, 8], 4).is_err());
        assert!(channel_groups(&[2, 6], 2).is_err());
        assert!(channel_groups(&[2, 6, 8], 0).is_err());
    }
}
