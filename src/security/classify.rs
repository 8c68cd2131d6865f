//! Classifying one pickle global as safe, unknown or dangerous, by allow-list.
//!
//! A global is compared by its full dotted path, `module.name` after Python 2 spellings are
//! mapped ([`Global::canonical`]: `__builtin__` → `builtins`, `copy_reg` → `copyreg`). A
//! dotted `name` (protocol 4 resolves `STACK_GLOBAL('torch', 'hub.load')` attribute by
//! attribute) therefore lands on the same path as the plain spelling.
//!
//! The order is fixed: a global that resolves to something dangerous ([`resolve`]) is
//! dangerous whatever list it is on; otherwise it is safe only when a safe list names it
//! exactly (torch's weights_only allow-list, the torch_npu names, TorchScript's own
//! `__torch__.*` inside a TorchScript archive, [`BENIGN`], the user's [`AllowList`]); every
//! other global is unknown.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ckpt_formats::torch::allowlist;
use ckpt_pickle::Global;

use super::resolve::{resolve, Resolved, ESCAPE_WHY};
use super::rules::{BENIGN, NUMPY_DTYPE_CLASSES, TORCH_NPU};

/// How a global is judged. Ordered: `Safe < Unknown < Dangerous`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// On a safe list (see the module docs).
    Safe,
    /// On no list: loading it needs `weights_only=False`, which imports it and may call it.
    Unknown,
    /// Resolves to a [`DANGEROUS`](super::rules::DANGEROUS) path or walks through a dunder
    /// attribute: importing or calling it can run commands or code, or touch files, processes
    /// or the network.
    Dangerous,
}

impl Class {
    /// `safe`, `unknown` or `dangerous`, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Class::Safe => "safe",
            Class::Unknown => "unknown",
            Class::Dangerous => "dangerous",
        }
    }
}

/// Where a pickle sits, which changes what is safe in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// A `torch.save` file, a legacy stream, a tar checkpoint, a plain pickle.
    Checkpoint,
    /// A pickle inside an archive `torch.load` hands to `torch.jit.load` (one with a
    /// `constants.pkl` record directly in its folder): that loader resolves `__torch__.*`
    /// classes against the archive's own code and the `torch.jit._pickle` helpers natively,
    /// without importing Python modules.
    TorchScript,
}

/// The verdict on one global, with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The class.
    pub class: Class,
    /// One line saying why, for reports.
    pub why: &'static str,
    /// For a dangerous global reached through a re-export or an attribute walk: what it
    /// resolves to (`os.system` for `pathlib.os.system`, `__self__` for a walk).
    pub resolves_to: Option<String>,
}

impl Verdict {
    fn new(class: Class, why: &'static str) -> Verdict {
        Verdict {
            class,
            why,
            resolves_to: None,
        }
    }
}

/// Names a user declares safe for one run (`--allow NAME`, `--allow-file FILE`): exact dotted
/// paths, or `module.*` for every name under `module`. They can make an unknown global safe,
/// never a dangerous one.
#[derive(Clone, Debug, Default)]
pub struct AllowList {
    exact: BTreeSet<String>,
    /// `module.` prefixes, from `module.*` entries.
    under: BTreeSet<String>,
}

/// Why an allow-list entry was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AllowError {
    #[error("--allow `{name}`: not a dotted Python name (`module.name`, or `module.*`)")]
    /// Not a dotted name.
    BadName {
        /// The entry.
        name: String,
    },
    #[error("--allow `{name}`: it resolves to a dangerous global, which no allow-list can pass")]
    /// The entry names a dangerous global.
    Dangerous {
        /// The entry.
        name: String,
    },
    #[error("--allow-file {}: {source}", path.display())]
    /// The allow file could not be read.
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    #[error("--allow-file {}, line {line}: {source}", path.display())]
    /// A line of the allow file is refused.
    Line {
        /// The file.
        path: PathBuf,
        /// The line number, from 1.
        line: usize,
        /// Why the line's entry was refused.
        source: Box<AllowError>,
    },
}

impl AllowList {
    /// Adds one entry (Python 2 module names mapped, like globals).
    pub fn add(&mut self, entry: &str) -> Result<(), AllowError> {
        let bad = || AllowError::BadName {
            name: entry.to_owned(),
        };
        let (body, wildcard) = match entry.strip_suffix(".*") {
            Some(module) => (module, true),
            None => (entry, false),
        };
        let valid = |c: &str| {
            c.chars()
                .next()
                .is_some_and(|f| f == '_' || f.is_alphabetic())
                && c.chars().all(|ch| ch == '_' || ch.is_alphanumeric())
        };
        if !body.split('.').all(valid) {
            return Err(bad());
        }
        if wildcard {
            let module = Global::new(body, "").canonical().module;
            self.under.insert(format!("{module}."));
            return Ok(());
        }
        let (module, name) = body.rsplit_once('.').ok_or_else(bad)?;
        let global = Global::new(module, name).canonical();
        if resolve(&global).is_some() {
            return Err(AllowError::Dangerous {
                name: entry.to_owned(),
            });
        }
        self.exact.insert(global.to_string());
        Ok(())
    }

    /// Adds every entry of `path`: one per line; blank lines and `#` comments are skipped.
    pub fn add_file(&mut self, path: &Path) -> Result<(), AllowError> {
        let text = std::fs::read_to_string(path).map_err(|source| AllowError::File {
            path: path.to_owned(),
            source,
        })?;
        for (i, line) in text.lines().enumerate() {
            let entry = line.split('#').next().unwrap_or("").trim();
            if entry.is_empty() {
                continue;
            }
            self.add(entry).map_err(|e| AllowError::Line {
                path: path.to_owned(),
                line: i + 1,
                source: Box::new(e),
            })?;
        }
        Ok(())
    }

    fn contains(&self, path: &str) -> bool {
        self.exact.contains(path) || self.under.iter().any(|p| path.starts_with(p.as_str()))
    }
}

/// The full dotted path of a global, Python 2 module names mapped.
pub fn dotted(global: &Global) -> String {
    global.canonical().to_string()
}

/// Classifies `global` found in a pickle in `context`, with `allowed` extending the safe
/// lists. Dangerous wins over every safe list.
pub fn classify(global: &Global, context: Context, allowed: &AllowList) -> Verdict {
    let canonical = global.canonical();
    match resolve(&canonical) {
        Some(Resolved::Escape(attr)) => {
            return Verdict {
                class: Class::Dangerous,
                why: ESCAPE_WHY,
                resolves_to: Some(attr),
            }
        }
        Some(Resolved::Rule { rule, path }) => {
            let whole = path == canonical.to_string();
            return Verdict {
                class: Class::Dangerous,
                why: rule.why,
                resolves_to: (!whole).then_some(path),
            };
        }
        None => {}
    }
    match safe_reason(&canonical, context, allowed) {
        Some(why) => Verdict::new(Class::Safe, why),
        None => Verdict::new(
            Class::Unknown,
            "on no allow-list: loading it needs weights_only=False, which imports it",
        ),
    }
}

/// The functions `torch.jit._pickle` defines, which TorchScript's pickles name (torch 2.13):
/// only these, never an attribute walk from the module (`__loader__.set_data`).
const TORCHSCRIPT_PICKLE_HELPERS: [&str; 6] = [
    "build_boollist",
    "build_doublelist",
    "build_intlist",
    "build_tensor_from_id",
    "build_tensorlist",
    "restore_type_tag",
];

/// Why `global` (canonical) is safe, or `None` when no safe list names it.
fn safe_reason(global: &Global, context: Context, allowed: &AllowList) -> Option<&'static str> {
    let path = global.to_string();
    if allowlist::is_allowed(global) {
        return Some("on torch's weights_only allow-list");
    }
    if TORCH_NPU.contains(&path.as_str()) {
        return Some("torch_npu tensor rebuild (a known Ascend name)");
    }
    let module = global.module.as_str();
    let archive_internal = module == "__torch__"
        || module.starts_with("__torch__.")
        || (module == "torch.jit._pickle"
            && TORCHSCRIPT_PICKLE_HELPERS.contains(&global.name.as_str()));
    if context == Context::TorchScript && archive_internal {
        return Some("TorchScript archive-internal name");
    }
    if let Some(rule) = BENIGN.iter().find(|r| r.path == path) {
        return Some(rule.why);
    }
    let dtype_class = path
        .strip_prefix(NUMPY_DTYPE_CLASSES)
        .is_some_and(|n| n.ends_with("DType") && !n.contains('.'));
    if dtype_class {
        return Some("a numpy dtype class (takes no arguments)");
    }
    allowed
        .contains(&path)
        .then_some("allowed for this run (--allow / --allow-file)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(module: &str, name: &str) -> Class {
        classify(
            &Global::new(module, name),
            Context::Checkpoint,
            &AllowList::default(),
        )
        .class
    }

    #[test]
    fn classic_payloads_are_dangerous() {
        for (m, n) in [
            ("os", "system"),
            ("posix", "system"),
            ("nt", "system"),
            ("subprocess", "Popen"),
            ("__builtin__", "eval"),
            ("builtins", "exec"),
            ("builtins", "getattr"),
            ("runpy", "_run_code"),
            ("torch", "load"),
            ("torch.hub", "load"),
            ("torch", "hub.load"),
            ("torch.jit", "load"),
            ("torch._C", "_load_for_lite_interpreter"),
            ("os.path", "join"),
            ("commands", "getoutput"),
            ("webbrowser", "open"),
            ("_io", "FileIO"),
            ("torch.fx.graph_module", "reduce_graph_module"),
        ] {
            assert_eq!(class(m, n), Class::Dangerous, "{m}.{n}");
        }
    }

    #[test]
    fn gadgets_from_the_scanner_advisories_are_dangerous() {
        for (m, n) in [
            ("idlelib.pyshell", "ModifiedInterpreter.runcode"),
            ("idlelib.calltip", "Calltip.fetch_tip"),
            ("idlelib.autocomplete", "AutoComplete.get_entity"),
            ("lib2to3.pgen2.pgen", "ParserGenerator.make_label"),
            ("doctest", "debug_script"),
            ("torch.utils.bottleneck.__main__", "run_cprofile"),
            ("torch._dynamo.guards", "GuardBuilder.get"),
            (
                "torch.fx.experimental.symbolic_shapes",
                "ShapeEnv.evaluate_guards_expression",
            ),
            ("torch.utils.data.datapipes.utils.decoder", "basichandlers"),
            ("_osx_support", "_read_output"),
            ("_aix_support", "_aix_bos_rte"),
            ("imaplib", "IMAP4_stream"),
            ("distutils.file_util", "write_file"),
            ("_xxsubinterpreters", "run_string"),
            ("mailcap", "findmatch"),
            ("numpy.lib._npyio_impl", "load"),
            ("_operator", "methodcaller"),
            ("pathlib", "os.system"),
            ("torch", "os.system"),
            ("builtins", "print.__self__.exec"),
        ] {
            assert_eq!(class(m, n), Class::Dangerous, "{m}.{n}");
        }
    }

    #[test]
    fn a_re_export_names_what_it_resolves_to() {
        let v = classify(
            &Global::new("pathlib", "os.system"),
            Context::Checkpoint,
            &AllowList::default(),
        );
        assert_eq!(v.resolves_to.as_deref(), Some("os.system"));
    }

    #[test]
    fn prefixes_match_whole_components_only() {
        assert_eq!(class("sysconfig", "get_paths"), Class::Unknown);
        assert_eq!(class("osx", "thing"), Class::Unknown);
        assert_eq!(class("torch.loader", "x"), Class::Unknown);
    }

    #[test]
    fn allow_lists_are_safe_and_everything_else_unknown() {
        assert_eq!(class("torch._utils", "_rebuild_tensor_v2"), Class::Safe);
        assert_eq!(class("__builtin__", "set"), Class::Safe);
        assert_eq!(
            class("torch_npu.utils.storage", "_rebuild_npu_tensor"),
            Class::Safe
        );
        assert_eq!(class("argparse", "Namespace"), Class::Safe);
        assert_eq!(class("numpy.core.multiarray", "_reconstruct"), Class::Safe);
        assert_eq!(class("numpy.dtypes", "Float32DType"), Class::Safe);
        assert_eq!(class("torch.nn.modules.conv", "Conv2d"), Class::Unknown);
        assert_eq!(class("collections", "OrderedDict.fromkeys"), Class::Unknown);
        assert_eq!(class("copy_reg", "_reconstructor"), Class::Unknown);
        assert_eq!(class("pathlib", "PosixPath"), Class::Safe);
        assert_eq!(class("pathlib", "Path"), Class::Unknown);
        assert_eq!(class("builtins", "int"), Class::Unknown);
    }

    #[test]
    fn torchscript_names_are_safe_only_in_torchscript() {
        let none = AllowList::default();
        let g = Global::new("__torch__.torch.nn.modules.conv", "Conv2d");
        assert_eq!(
            classify(&g, Context::Checkpoint, &none).class,
            Class::Unknown
        );
        assert_eq!(classify(&g, Context::TorchScript, &none).class, Class::Safe);
        let tag = Global::new("torch.jit._pickle", "restore_type_tag");
        assert_eq!(
            classify(&tag, Context::TorchScript, &none).class,
            Class::Safe
        );
        let evil = Global::new("os", "system");
        assert_eq!(
            classify(&evil, Context::TorchScript, &none).class,
            Class::Dangerous
        );
    }

    #[test]
    fn torchscript_pickle_helpers_are_safe_only_by_their_real_names() {
        let none = AllowList::default();
        for name in TORCHSCRIPT_PICKLE_HELPERS {
            let helper = Global::new("torch.jit._pickle", name);
            assert_eq!(
                classify(&helper, Context::TorchScript, &none).class,
                Class::Safe,
                "{name}"
            );
        }
        for name in [
            "__loader__.set_data",
            "__builtins__",
            "restore_type_tag.__globals__",
            "os.system",
            "build_intlist_x",
        ] {
            let walk = Global::new("torch.jit._pickle", name);
            for context in [Context::TorchScript, Context::Checkpoint] {
                assert_ne!(
                    classify(&walk, context, &none).class,
                    Class::Safe,
                    "{name} in {context:?}"
                );
            }
        }
        let dotted_module = Global::new("torch.jit._pickle.__loader__", "set_data");
        assert_ne!(
            classify(&dotted_module, Context::TorchScript, &none).class,
            Class::Safe
        );
    }

    #[test]
    fn user_allow_entries_pass_unknown_globals_but_never_dangerous_ones() {
        let mut allowed = AllowList::default();
        allowed.add("torch.nn.modules.conv.Conv2d").expect("valid");
        allowed.add("__main__.*").expect("valid");
        let verdict =
            |m: &str, n: &str| classify(&Global::new(m, n), Context::Checkpoint, &allowed).class;
        assert_eq!(verdict("torch.nn.modules.conv", "Conv2d"), Class::Safe);
        assert_eq!(verdict("__main__", "Net"), Class::Safe);
        assert_eq!(verdict("torch.nn.modules.conv", "Conv1d"), Class::Unknown);
        assert!(matches!(
            allowed.add("os.system"),
            Err(AllowError::Dangerous { .. })
        ));
        assert!(matches!(
            allowed.add("pathlib.os.system"),
            Err(AllowError::Dangerous { .. })
        ));
        assert!(matches!(
            allowed.add("Conv2d"),
            Err(AllowError::BadName { .. })
        ));
        assert!(matches!(
            allowed.add("a b.c"),
            Err(AllowError::BadName { .. })
        ));
    }
}
