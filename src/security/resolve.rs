//! Names as Python resolves them.
//!
//! An unpickler imports `module` and then walks `name` attribute by attribute
//! (`find_class('builtins', 'print.__self__.exec')`), and every module attribute is reachable
//! that way: `pathlib.os.system` is `os.system` because `pathlib` imports `os`. So a dotted path
//! is judged by every part of it that could name a module's attribute, not by its first
//! component alone:
//!
//! * a walk through an attribute in [`ESCAPE_ATTRIBUTES`], or through any other dunder after
//!   the first component of `name`, reaches interpreter internals (builtins, globals, every
//!   class) from any object: it is dangerous wherever it starts;
//! * a dangerous path ([`DANGEROUS`]) is matched against the whole path and against every
//!   tail of at least two components that starts with a public name (`torch.os.system` →
//!   `os.system`), since the tail may be a re-exported module. A tail that starts with a
//!   private name (`numpy.random._pickle`) is a package's own submodule, not a re-export.

use ckpt_pickle::Global;

use super::rules::{Rule, DANGEROUS};

/// Attributes that lead from any object to the interpreter's internals.
pub const ESCAPE_ATTRIBUTES: [&str; 7] = [
    "__self__",
    "__globals__",
    "__builtins__",
    "__class__",
    "__subclasses__",
    "__getattribute__",
    "__dict__",
];

/// Why a global is dangerous after resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// The walk passes through this dunder attribute.
    Escape(String),
    /// `rule` covers `path` (the whole global, or a re-exported tail of it).
    Rule { rule: &'static Rule, path: String },
}

/// The reason a walk through a dunder attribute is dangerous.
pub const ESCAPE_WHY: &str =
    "walks through a dunder attribute (__self__, __globals__, …), which reaches builtins and every module";

/// Resolves `global` (Python 2 module names already mapped); `None` when no part of it is
/// dangerous.
pub fn resolve(global: &Global) -> Option<Resolved> {
    if let Some(attr) = escape(global) {
        return Some(Resolved::Escape(attr.to_owned()));
    }
    let path = global.to_string();
    let parts: Vec<&str> = path.split('.').collect();
    (0..parts.len())
        .filter(|&i| i == 0 || (parts.len() - i >= 2 && !parts[i].starts_with('_')))
        .find_map(|i| {
            let tail = parts[i..].join(".");
            dangerous_rule(&tail).map(|rule| Resolved::Rule { rule, path: tail })
        })
}

/// The dunder attribute a global walks through, if any: one of [`ESCAPE_ATTRIBUTES`]
/// anywhere, or any dunder after the first component of `name`.
fn escape(global: &Global) -> Option<&str> {
    let is_dunder = |c: &str| c.len() > 4 && c.starts_with("__") && c.ends_with("__");
    let in_module = global.module.split('.').skip(1);
    let escape_in_module = in_module
        .into_iter()
        .find(|c| ESCAPE_ATTRIBUTES.contains(c));
    let walk = global
        .name
        .split('.')
        .enumerate()
        .find(|&(i, c)| ESCAPE_ATTRIBUTES.contains(&c) || (i > 0 && is_dunder(c)));
    escape_in_module.or(walk.map(|(_, c)| c))
}

/// The [`DANGEROUS`] rule that covers `path` (itself or a parent), if any.
pub fn dangerous_rule(path: &str) -> Option<&'static Rule> {
    DANGEROUS.iter().find(|r| {
        path.strip_prefix(r.path)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(module: &str, name: &str) -> Option<String> {
        match resolve(&Global::new(module, name).canonical())? {
            Resolved::Escape(attr) => Some(attr),
            Resolved::Rule { path, .. } => Some(path),
        }
    }

    #[test]
    fn re_exported_modules_resolve_to_the_module_they_name() {
        assert_eq!(
            resolved("pathlib", "os.system").as_deref(),
            Some("os.system")
        );
        assert_eq!(resolved("torch", "os.system").as_deref(), Some("os.system"));
        assert_eq!(resolved("torch.os", "system").as_deref(), Some("os.system"));
        assert_eq!(resolved("os", "system").as_deref(), Some("os.system"));
    }

    #[test]
    fn walks_through_dunders_are_escapes() {
        assert_eq!(
            resolved("builtins", "print.__self__.exec").as_deref(),
            Some("__self__")
        );
        assert_eq!(
            resolved("collections", "OrderedDict.__init__.__globals__").as_deref(),
            Some("__init__")
        );
        assert_eq!(
            resolved("torch", "Tensor.__reduce_ex__").as_deref(),
            Some("__reduce_ex__")
        );
        assert_eq!(
            resolved("__builtin__", "__dict__").as_deref(),
            Some("__dict__")
        );
    }

    #[test]
    fn ordinary_names_do_not_resolve_to_anything_dangerous() {
        for (m, n) in [
            ("torch._utils", "_rebuild_tensor_v2"),
            ("collections", "OrderedDict"),
            ("copyreg", "__newobj__"),
            ("__torch__.torch.nn.modules.conv", "Conv2d"),
            ("torch.jit", "trace"),
            ("sysconfig", "get_paths"),
            ("torch.nn.modules.module", "Module"),
            ("numpy.random._pickle", "__randomstate_ctor"),
        ] {
            assert_eq!(resolved(m, n), None, "{m}.{n}");
        }
    }
}
