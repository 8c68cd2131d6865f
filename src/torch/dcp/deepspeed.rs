//! Recognising DeepSpeed ZeRO checkpoint folders, which ckpt does not read yet, so that a
//! command given one says so (and what to do) instead of "no `.metadata`".
//!
//! DeepSpeed's `save_checkpoint(save_dir, tag)` writes `save_dir/latest` (the tag's name) and
//! `save_dir/<tag>/` holding `mp_rank_<mp>_model_states.pt` (ZeRO-1/2; ZeRO-3 prefixes it
//! with `zero_pp_rank_<dp>_`) and one `*_optim_states.pt` per data-parallel rank. Either
//! folder is recognised by those names; nothing is read but the folder listing and `latest`.

use std::path::Path;

use super::DcpError;

/// The largest `latest` file read (it holds a tag such as `global_step1000`).
const MAX_LATEST_BYTES: u64 = 4096;

/// `Err(DcpError::DeepSpeed)` when `dir` is a DeepSpeed checkpoint folder (a tag folder, or
/// the save folder whose `latest` names one); `Ok` for anything else, which the caller then
/// reads as it would.
pub fn refuse(dir: &Path) -> Result<(), DcpError> {
    let found = zero_file(dir).or_else(|| {
        let latest = dir.join("latest");
        let small =
            std::fs::metadata(&latest).is_ok_and(|m| m.is_file() && m.len() <= MAX_LATEST_BYTES);
        let tag = std::fs::read_to_string(latest).ok().filter(|_| small)?;
        let tag = tag.trim();
        let plain = !tag.is_empty() && tag != "." && tag != ".." && !tag.contains(['/', '\\']);
        plain
            .then(|| zero_file(&dir.join(tag)))
            .flatten()
            .map(|f| format!("{tag}/{f}"))
    });
    match found {
        Some(file) => Err(DcpError::DeepSpeed { file }),
        None => Ok(()),
    }
}

/// The first (by name) file in `dir` named as DeepSpeed names its ZeRO checkpoint files.
fn zero_file(dir: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| is_zero_name(name))
        .collect();
    names.sort();
    names.into_iter().next()
}

/// `mp_rank_00_model_states.pt`, `zero_pp_rank_0_mp_rank_00_model_states.pt`,
/// `bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt`, …
fn is_zero_name(name: &str) -> bool {
    name.contains("mp_rank_")
        && (name.ends_with("_model_states.pt") || name.ends_with("_optim_states.pt"))
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
    fn a_deepspeed_tag_folder_and_its_save_folder_are_named() {
        let dir = saved();
        let err = refuse(&dir.path().join("step1")).unwrap_err().to_string();
        assert!(
            err.contains("mp_rank_00_model_states.pt") && err.contains("zero_to_fp32.py"),
            "{err}"
        );
        let err = refuse(dir.path()).unwrap_err().to_string();
        assert!(err.contains("step1/mp_rank_00_model_states.pt"), "{err}");
    }

    #[test]
    fn other_folders_are_left_to_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("model.pt"), b"PK").unwrap();
        fs::write(dir.path().join("latest"), "../..").unwrap();
        assert!(refuse(dir.path()).is_ok());
    }
}
