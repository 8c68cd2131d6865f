//! DeepSpeed ZeRO checkpoint folders, consolidated into one fp32 state dict as DeepSpeed's
//! `zero_to_fp32.py` does, streaming, without running any of their pickles.
//!
//! DeepSpeed's `save_checkpoint(save_dir, tag)` writes `save_dir/latest` (the tag's name) and
//! `save_dir/<tag>/` holding the model states (`mp_rank_00_model_states.pt` for ZeRO-1/2;
//! ZeRO-3 writes one per rank, `zero_pp_rank_<dp>_mp_rank_00_model_states.pt`) and one
//! `[bf16_]zero_pp_rank_<dp>_mp_rank_00_optim_states.pt` per data-parallel rank. Either folder
//! is recognised by those names ([`find`]); [`Names::list`] orders the files as DeepSpeed does,
//! the caller opens each through the security check, and [`layout::read`] reads where every
//! tensor's bytes are from their pickles. The consolidation pipeline
//! (`ckpt consolidate`, a layer below) writes the result.

pub mod layout;

use std::path::{Path, PathBuf};

use crate::torch::Checkpoint;

use super::DcpError;

/// The largest `latest` file read (it holds a tag such as `global_step1000`).
const MAX_LATEST_BYTES: u64 = 4096;

/// The tag folder of a DeepSpeed checkpoint: `dir` itself when it holds ZeRO checkpoint files,
/// or the folder its `latest` file names; `None` when `dir` is neither.
pub fn find(dir: &Path) -> Option<PathBuf> {
    if zero_file(dir).is_some() {
        return Some(dir.to_owned());
    }
    let latest = dir.join("latest");
    let small =
        std::fs::metadata(&latest).is_ok_and(|m| m.is_file() && m.len() <= MAX_LATEST_BYTES);
    let tag = std::fs::read_to_string(latest).ok().filter(|_| small)?;
    let tag = tag.trim();
    let plain = !tag.is_empty() && tag != "." && tag != ".." && !tag.contains(['/', '\\']);
    let tagged = dir.join(tag);
    (plain && zero_file(&tagged).is_some()).then_some(tagged)
}

/// Whether `dir` is a DeepSpeed checkpoint folder (see [`find`]).
pub fn is_deepspeed(dir: &Path) -> bool {
    dir.is_dir() && find(dir).is_some()
}

/// The first (by name) file in `dir` named as DeepSpeed names its ZeRO checkpoint files.
fn zero_file(dir: &Path) -> Option<String> {
    let mut names = zero_names(dir).ok()?;
    names.sort();
    names.into_iter().next()
}

/// The names of the ZeRO checkpoint files in `dir`.
fn zero_names(dir: &Path) -> std::io::Result<Vec<String>> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| is_model_name(name) || is_optim_name(name))
        .collect())
}

/// `mp_rank_00_model_states.pt`, `zero_pp_rank_0_mp_rank_00_model_states.pt`.
fn is_model_name(name: &str) -> bool {
    name.contains("mp_rank_") && name.ends_with("_model_states.pt")
}

/// `zero_pp_rank_1_mp_rank_00_optim_states.pt`, `bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt`.
fn is_optim_name(name: &str) -> bool {
    name.contains("mp_rank_") && name.ends_with("_optim_states.pt")
}

/// The files of a tag folder, in the order DeepSpeed reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// The tag folder.
    pub dir: PathBuf,
    /// Every `*_model_states.pt`, in natural order (rank 2 before rank 10).
    pub model: Vec<String>,
    /// Every `*_optim_states.pt`, in natural order: one per data-parallel rank.
    pub optim: Vec<String>,
}

impl Names {
    /// Lists the tag folder `dir`. Only the names are read: ZeRO files of another
    /// model-parallel rank than `00` (which `zero_to_fp32.py` does not merge either) and a
    /// folder with no model or no optimizer states are refused here.
    pub fn list(dir: &Path) -> Result<Names, DcpError> {
        let names = zero_names(dir).map_err(|e| DcpError::Request {
            what: format!("cannot list `{}`: {e}", dir.display()),
        })?;
        if let Some(other) = names.iter().find(|n| !n.contains("mp_rank_00_")) {
            return Err(DcpError::Unsupported {
                what: format!(
                    "`{other}`: a model-parallel DeepSpeed checkpoint (rank other than mp_rank_00)"
                ),
            });
        }
        let mut model: Vec<String> = names.iter().filter(|n| is_model_name(n)).cloned().collect();
        let mut optim: Vec<String> = names.into_iter().filter(|n| is_optim_name(n)).collect();
        model.sort_by_key(|n| natural_key(n));
        optim.sort_by_key(|n| natural_key(n));
        for (what, list) in [("*_model_states.pt", &model), ("*_optim_states.pt", &optim)] {
            if list.is_empty() {
                return Err(DcpError::DeepSpeed {
                    file: dir.display().to_string(),
                    what: format!("no {what} file (was the checkpoint saved completely?)"),
                });
            }
        }
        Ok(Names {
            dir: dir.to_owned(),
            model,
            optim,
        })
    }
}

/// One piece of a natural sort key: text, or a number.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Number(u128),
    Text(String),
}

/// The name split into text and numbers, so `rank_2` sorts before `rank_10` (as DeepSpeed's
/// `natural_keys` sorts).
fn natural_key(name: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        let digit = c.is_ascii_digit();
        let end = rest
            .find(|c: char| c.is_ascii_digit() != digit)
            .unwrap_or(rest.len());
        let (head, tail) = rest.split_at(end);
        parts.push(match head.parse() {
            Ok(n) if digit => Part::Number(n),
            _ => Part::Text(head.to_owned()),
        });
        rest = tail;
    }
    parts
}

/// A tag folder's files, each decoded by the checkpoint reader (structure only; no tensor
/// bytes read); the security layer's DeepSpeed check opens them, each through the security
/// check.
pub struct Folder {
    /// The tag folder.
    pub dir: PathBuf,
    /// The model states files, by name, in [`Names::model`] order.
    pub model: Vec<(String, Checkpoint)>,
    /// The optimizer states files, by name, in [`Names::optim`] order.
    pub optim: Vec<(String, Checkpoint)>,
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// The layout DeepSpeed 0.19 wrote on CPU for ZeRO-2 over 2 ranks.
    fn saved() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let tag = dir.path().join("step1");
        fs::create_dir(&tag).unwrap();
        for name in [
            "mp_rank_00_model_states.pt",
            "zero_pp_rank_0_mp_rank_00_optim_states.pt",
            "zero_pp_rank_1_mp_rank_00_optim_states.pt",
        ] {
            fs::write(tag.join(name), b"PK").unwrap();
        }
        fs::write(dir.path().join("latest"), "step1").unwrap();
        fs::write(dir.path().join("zero_to_fp32.py"), "").unwrap();
        dir
    }

    #[test]
    fn a_tag_folder_and_its_save_folder_are_found() {
        let dir = saved();
        let tag = dir.path().join("step1");
        assert_eq!(find(&tag), Some(tag.clone()));
        assert_eq!(find(dir.path()), Some(tag.clone()));
        let names = Names::list(&tag).unwrap();
        assert_eq!(names.model, ["mp_rank_00_model_states.pt"]);
        assert_eq!(names.optim.len(), 2);
    }

    #[test]
    fn other_folders_are_not_deepspeed() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("model.pt"), b"PK").unwrap();
        fs::write(dir.path().join("latest"), "../..").unwrap();
        assert!(!is_deepspeed(dir.path()));
    }

    #[test]
    fn ranks_sort_naturally() {
        let mut names = vec![
            "zero_pp_rank_10_mp_rank_00_optim_states.pt",
            "zero_pp_rank_2_mp_rank_00_optim_states.pt",
            "zero_pp_rank_0_mp_rank_00_optim_states.pt",
        ];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(
            names,
            [
                "zero_pp_rank_0_mp_rank_00_optim_states.pt",
                "zero_pp_rank_2_mp_rank_00_optim_states.pt",
                "zero_pp_rank_10_mp_rank_00_optim_states.pt",
            ]
        );
    }

    #[test]
    fn model_parallel_and_incomplete_folders_are_refused_by_name() {
        let dir = saved();
        let tag = dir.path().join("step1");
        fs::write(tag.join("mp_rank_01_model_states.pt"), b"PK").unwrap();
        let err = Names::list(&tag).unwrap_err().to_string();
        assert!(err.contains("model-parallel"), "{err}");
        fs::remove_file(tag.join("mp_rank_01_model_states.pt")).unwrap();
        fs::remove_file(tag.join("mp_rank_00_model_states.pt")).unwrap();
        let err = Names::list(&tag).unwrap_err().to_string();
        assert!(err.contains("no *_model_states.pt"), "{err}");
    }
}
