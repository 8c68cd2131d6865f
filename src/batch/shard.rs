//! Splitting a batch across machines: `--shard I/N` takes the inputs whose key hashes to `I`
//! modulo `N`. The key is the input's path relative to the plan's folder, so every machine of
//! a job array (same plan, same tree) computes the same partition, each input lands in
//! exactly one shard, and adding inputs does not move existing ones between shards.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// Shard `index` of `count`. Invariant: `index < count` (so `count ≥ 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u32,
    count: u32,
}

impl Shard {
    /// Shard `index` of `count`; an error unless `index < count`. Shards are numbered from
    /// 0, and the error says so with the range and what to pass from a job array numbered
    /// from 1 (Slurm's `--array=1-N`), the usual way to get this wrong.
    pub fn new(index: u32, count: u32) -> Result<Shard, String> {
        if count == 0 {
            Err(format!(
                "shard {index}/0: N is how many shards there are, at least 1"
            ))
        } else if index < count {
            Ok(Shard { index, count })
        } else {
            let last = count - 1;
            Err(format!(
                "shard {index}/{count}: shards are numbered from 0, so I is 0 to {last} for N = {count}; \
                 from a Slurm array numbered from 1 pass --shard $((SLURM_ARRAY_TASK_ID - 1))/{count} \
                 (or number the array from 0: --array=0-{last})"
            ))
        }
    }

    /// Which shard, from 0.
    pub fn index(self) -> u32 {
        self.index
    }

    /// How many shards.
    pub fn count(self) -> u32 {
        self.count
    }

    /// The shard `key` belongs to, out of `count`.
    pub fn of(key: &str, count: u32) -> u32 {
        let digest = Sha256::digest(key.as_bytes());
        let mut head = [0u8; 8];
        head.copy_from_slice(&digest[..8]);
        (u64::from_be_bytes(head) % u64::from(count)) as u32
    }

    /// Whether the input with this key is this shard's.
    pub fn contains(self, key: &str) -> bool {
        Shard::of(key, self.count) == self.index
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N`, for example `0/3`.
    fn from_str(text: &str) -> Result<Shard, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not I/N (for example 0/3)"))?;
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{text}` is not I/N with whole numbers"))
        };
        Shard::new(number(index)?, number(count)?)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_validates() {
        assert_eq!("1/3".parse::<Shard>(), Shard::new(1, 3));
        assert!("3/3".parse::<Shard>().is_err());
        assert!("0/0".parse::<Shard>().is_err());
        assert!("-1/3".parse::<Shard>().is_err());
        assert!("1".parse::<Shard>().is_err());
        assert_eq!(Shard::new(2, 5).expect("shard").to_string(), "2/5");
    }

    #[test]
    fn an_index_past_the_last_shard_says_they_count_from_zero_and_how_to_pass_slurm_ids() {
        let error = "2/2"
            .parse::<Shard>()
            .expect_err("2/2 is past the last shard");
        assert!(
            error.contains("numbered from 0, so I is 0 to 1 for N = 2"),
            "{error}"
        );
        assert!(error.contains("$((SLURM_ARRAY_TASK_ID - 1))/2"), "{error}");
        let error = "0/0".parse::<Shard>().expect_err("no shards");
        assert!(error.contains("at least 1"), "{error}");
    }

    #[test]
    fn every_key_lands_in_exactly_one_shard() {
        let keys: Vec<String> = (0..300)
            .map(|i| format!("ckpts/run{i}/model.pth"))
            .collect();
        let shards: Vec<Shard> = (0..3).map(|i| Shard::new(i, 3).expect("shard")).collect();
        let mut sizes = [0usize; 3];
        for key in &keys {
            let owners: Vec<&Shard> = shards.iter().filter(|s| s.contains(key)).collect();
            assert_eq!(owners.len(), 1, "{key}");
            sizes[owners[0].index() as usize] += 1;
        }
        assert!(sizes.iter().all(|&n| n > 60), "unbalanced: {sizes:?}");
        let whole = Shard::new(0, 1).expect("shard");
        assert!(keys.iter().all(|k| whole.contains(k)));
    }
}
