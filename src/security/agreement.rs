//! The differential check between the scanner's view of a file and the loader's: the pickles
//! the loader reads must be pickles the scan judged, and every global the loader's object
//! graph names must be in the scan with the same verdict. The `scan_views` fuzz target runs
//! it on arbitrary bytes; a disagreement is a scanner bypass.

use std::fs::File;
use std::path::Path;

use ckpt_formats::torch::{open_file, Format};

use super::classify::{classify, AllowList, Class, Context};
use super::scan::{scan_open, FileScan};

/// Scans `file`, opens it with the checkpoint loader, and says where the two disagree.
/// `None` when they agree, or when the loader refuses the file (it then reads nothing).
pub fn disagreement(path: &Path, file: &File) -> Option<String> {
    let scan = scan_open(path, file, &AllowList::default());
    let ckpt = open_file(path, file.try_clone().ok()?).ok()?;
    let object_pickle = match ckpt.format {
        Format::Tar => "tar:pickle".to_owned(),
        Format::Legacy => "stream#4".to_owned(),
        Format::Zip | Format::TorchScript => match &ckpt.zip {
            Some(meta) => format!("{}/data.pkl", meta.prefix),
            None => return Some("a zip checkpoint without zip metadata".into()),
        },
    };
    if !scan.pickles.iter().any(|p| p.location == object_pickle) {
        return Some(format!(
            "the loader read a {} checkpoint's object pickle `{object_pickle}`, the scan did not (it read {:?})",
            ckpt.format.name(),
            locations(&scan)
        ));
    }
    let context = match ckpt.format {
        Format::TorchScript => Context::TorchScript,
        _ => Context::Checkpoint,
    };
    let none = AllowList::default();
    for global in &ckpt.scan.globals {
        let verdict = classify(global, context, &none);
        let path = global.canonical().to_string();
        let seen = scan
            .uses()
            .any(|u| u.path == path && u.verdict.class == verdict.class);
        if verdict.class != Class::Safe && !seen {
            return Some(format!(
                "the loader's graph names {} global `{path}`, the scan does not report it",
                verdict.class.name()
            ));
        }
    }
    None
}

fn locations(scan: &FileScan) -> Vec<&str> {
    scan.pickles.iter().map(|p| p.location.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name)
    }

    #[test]
    fn scan_and_loader_agree_on_every_container_kind() {
        for name in [
            "tar_pre2017.pth",
            "legacy_train_ckpt.pth",
            "zip_train_ckpt.pth",
            "zip_renamed_prefix.pth",
            "unsafe_timm.pth.tar",
            "ts_traced.pt",
            "hostile/tar_pax_size.tar",
            "hostile/zip_prefix_payload.pth",
            "hostile/legacy_sysinfo_payload.pth",
        ] {
            let path = fixture(name);
            let file = File::open(&path).expect("fixture");
            assert_eq!(disagreement(&path, &file), None, "{name}");
        }
    }
}
