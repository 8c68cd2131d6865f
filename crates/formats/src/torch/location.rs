//! Storage location tags (`cpu`, `cuda:3`, `npu:0`) and `map_location`-style rules.

use std::fmt;
use std::str::FromStr;

/// A device tag as torch writes it into a storage's persistent id.
///
/// Invariant: `device` is one of `DEVICE_TYPES`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    device: String,
    index: Option<u32>,
}

impl Location {
    /// `cpu`.
    pub fn cpu() -> Self {
        Location {
            device: "cpu".into(),
            index: None,
        }
    }

    /// The device type: `cpu`, `cuda`, `npu`, …
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The device index (`1` in `cuda:1`), if the tag has one.
    pub fn index(&self) -> Option<u32> {
        self.index
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}:{}", self.device, i),
            None => f.write_str(&self.device),
        }
    }
}

/// The device types torch's `torch.device` parses (c10's `parse_type`), plus `npu`, the name
/// torch_npu gives the `privateuseone` backend. A location tag names one of these, optionally
/// with `:INDEX`.
pub const DEVICE_TYPES: &[&str] = &[
    "cpu",
    "cuda",
    "npu",
    "xpu",
    "mps",
    "meta",
    "hpu",
    "xla",
    "mtia",
    "maia",
    "ipu",
    "hip",
    "ve",
    "fpga",
    "lazy",
    "vulkan",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "privateuseone",
];

#[derive(Debug, thiserror::Error, PartialEq)]
#[error(
    "`{0}` is not a torch device: expected TYPE or TYPE:INDEX, e.g. `cpu`, `cuda:0`, `npu:1`; TYPE is one of {types}",
    types = DEVICE_TYPES.join(", ")
)]
pub struct BadLocation(pub String);

fn valid_device(device: &str) -> bool {
    DEVICE_TYPES.contains(&device)
}

impl FromStr for Location {
    type Err = BadLocation;

    fn from_str(s: &str) -> Result<Self, BadLocation> {
        let bad = || BadLocation(s.to_owned());
        let (device, index) = match s.split_once(':') {
            Some((device, index)) => (device, Some(index.parse::<u32>().map_err(|_| bad())?)),
            None => (s, None),
        };
        if !valid_device(device) {
            return Err(bad());
        }
        Ok(Location {
            device: device.to_owned(),
            index,
        })
    }
}

/// The left side of a `--map FROM=TO` rule: an exact tag, or `device:*` for every index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocationPattern {
    /// Exactly this tag (`cuda:0`; `cuda` matches only an index-less `cuda`).
    Exact(Location),
    /// Every tag of this device type, with or without an index (`cuda:*`).
    AnyIndex(String),
}

impl LocationPattern {
    /// Whether a storage tagged `location` is matched.
    pub fn matches(&self, location: &Location) -> bool {
        match self {
            LocationPattern::Exact(exact) => exact == location,
            LocationPattern::AnyIndex(device) => device == location.device(),
        }
    }
}

impl FromStr for LocationPattern {
    type Err = BadLocation;

    fn from_str(s: &str) -> Result<Self, BadLocation> {
        match s.strip_suffix(":*") {
            Some(device) if valid_device(device) => Ok(LocationPattern::AnyIndex(device.into())),
            Some(_) => Err(BadLocation(s.to_owned())),
            None => s.parse().map(LocationPattern::Exact),
        }
    }
}

/// How to relocate storages: every storage to one device, or rules tried in order
/// (the first matching rule applies; unmatched tags stay as they are).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocationMap {
    /// Every storage to this location (`--to`).
    All(Location),
    /// `(from, to)` rules in order (`--map`).
    Rules(Vec<(LocationPattern, Location)>),
}

impl LocationMap {
    /// Parses `FROM=TO`.
    pub fn parse_rule(s: &str) -> Result<(LocationPattern, Location), BadLocation> {
        let (from, to) = s.split_once('=').ok_or_else(|| BadLocation(s.to_owned()))?;
        Ok((from.parse()?, to.parse()?))
    }

    /// Whether `location` is one this map rewrites (or would, were it not already the
    /// target): every location for [`LocationMap::All`], those a rule's left side matches.
    pub fn matches(&self, location: &Location) -> bool {
        match self {
            LocationMap::All(_) => true,
            LocationMap::Rules(rules) => rules.iter().any(|(from, _)| from.matches(location)),
        }
    }

    /// The new tag for `location`, or `None` when it stays.
    pub fn apply(&self, location: &Location) -> Option<Location> {
        let target = match self {
            LocationMap::All(to) => Some(to),
            LocationMap::Rules(rules) => rules
                .iter()
                .find(|(from, _)| from.matches(location))
                .map(|(_, to)| to),
        };
        target.filter(|to| *to != location).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(s: &str) -> Location {
        s.parse().expect("valid location")
    }

    #[test]
    fn parses_and_prints_tags() {
        assert_eq!(loc("cuda:3").to_string(), "cuda:3");
        assert_eq!(loc("cpu").index(), None);
        assert_eq!(loc("npu:0").device(), "npu");
        assert!("cuda:x".parse::<Location>().is_err());
        assert!("".parse::<Location>().is_err());
        assert!("CUDA:0".parse::<Location>().is_err());
        assert_eq!(loc("privateuseone:2").device(), "privateuseone");
        assert_eq!(loc("mps").to_string(), "mps");
    }

    #[test]
    fn device_types_torch_does_not_know_are_refused() {
        for typo in ["gpu", "foo", "cuda?", "cuda0", "cuda:", "cpu:-1"] {
            let err = typo.parse::<Location>().expect_err(typo);
            assert!(err.to_string().contains("not a torch device"), "{err}");
        }
        assert!(LocationMap::parse_rule("gpu:*=cpu").is_err());
        assert!(LocationMap::parse_rule("cuda:*=gpu").is_err());
    }

    #[test]
    fn a_map_matches_only_locations_its_rules_name() {
        let map = LocationMap::Rules(vec![LocationMap::parse_rule("cuda:1=cpu").expect("rule")]);
        assert!(map.matches(&loc("cuda:1")));
        assert!(!map.matches(&loc("cuda:0")));
        assert!(LocationMap::All(Location::cpu()).matches(&Location::cpu()));
    }

    #[test]
    fn wildcard_rule_matches_every_index() {
        let map = LocationMap::Rules(vec![LocationMap::parse_rule("cuda:*=cpu").expect("rule")]);
        assert_eq!(map.apply(&loc("cuda:7")), Some(Location::cpu()));
        assert_eq!(map.apply(&loc("cuda")), Some(Location::cpu()));
        assert_eq!(map.apply(&loc("npu:0")), None);
    }

    #[test]
    fn first_matching_rule_wins_and_identity_is_no_change() {
        let map = LocationMap::Rules(vec![
            LocationMap::parse_rule("cuda:1=cuda:0").expect("rule"),
            LocationMap::parse_rule("cuda:*=cpu").expect("rule"),
        ]);
        assert_eq!(map.apply(&loc("cuda:1")), Some(loc("cuda:0")));
        assert_eq!(map.apply(&loc("cuda:2")), Some(Location::cpu()));
        assert_eq!(
            LocationMap::All(Location::cpu()).apply(&Location::cpu()),
            None
        );
    }
}
