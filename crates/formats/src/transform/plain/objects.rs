//! Python objects as plain data, read from the layout their classes pickle: a Namespace's
//! attribute dict, omegaconf's `_content`/`_val`, a path's parts, an enum member's value.

use ckpt_pickle::{Constructor, Global, Graph, NodeId, Object, Value};

/// The pathlib classes, by flavour: `true` for the Windows ones. Python ≥ 3.13 pickles them
/// from `pathlib._local`.
const PATH_CLASSES: [(&str, bool); 6] = [
    ("PosixPath", false),
    ("PurePosixPath", false),
    ("Path", false),
    ("PurePath", false),
    ("WindowsPath", true),
    ("PureWindowsPath", true),
];

/// Whether `global` is a pathlib class; `Some(true)` for the Windows flavour.
pub(super) fn path_flavour(global: &Global) -> Option<bool> {
    if global.module != "pathlib" && global.module != "pathlib._local" {
        return None;
    }
    PATH_CLASSES
        .iter()
        .find(|(name, _)| *name == global.name)
        .map(|&(_, windows)| windows)
}

/// The attribute dict of an object pickled as `__new__` plus `BUILD` of a dict (a Namespace;
/// `copyreg._reconstructor` is Python 2's spelling of the same): its pairs.
pub(super) fn attributes(graph: &Graph, object: &Object) -> Result<Value, String> {
    if !object.list_items.is_empty() || !object.dict_items.is_empty() {
        return Err("items were added to it".into());
    }
    if let Constructor::NewObj { args, .. } = object.constructor {
        if graph.tuple(args).is_none_or(|a| !a.is_empty()) {
            return Err("it was built with arguments".into());
        }
    }
    match object.state {
        None => Ok(Value::Dict(Vec::new())),
        Some(state) => match graph.get(state) {
            Value::Dict(pairs) => Ok(Value::Dict(pairs.clone())),
            _ => Err("its state is not an attribute dict".into()),
        },
    }
}

/// The `BUILD` state entry `name` of an object pickled as `__new__` plus a state dict.
fn state_entry(graph: &Graph, object: &Object, name: &str) -> Result<NodeId, String> {
    let state = object.state.ok_or("it has no state")?;
    graph
        .lookup(state, name)
        .ok_or_else(|| format!("its state has no `{name}`"))
}

/// What an omegaconf object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Omegaconf {
    /// `DictConfig`: a dict of nodes.
    Dict,
    /// `ListConfig`: a list of nodes.
    List,
    /// A value node (`AnyNode`, `StringNode`, `EnumNode`, …): one value.
    Node,
}

impl Omegaconf {
    pub(super) fn of(global: &Global) -> Option<Omegaconf> {
        if global.module != "omegaconf" && !global.module.starts_with("omegaconf.") {
            return None;
        }
        match global.name.as_str() {
            "DictConfig" => Some(Omegaconf::Dict),
            "ListConfig" => Some(Omegaconf::List),
            _ if global.module == "omegaconf.nodes" => Some(Omegaconf::Node),
            _ => None,
        }
    }
}

/// The plain value of an omegaconf object: a config's `_content` (a dict or list of nodes;
/// `None`; or a string, for a missing `???` or an interpolation `${…}` config), a node's
/// `_val`, as `OmegaConf.to_container` gives them without resolving interpolations.
/// Its `_metadata` and `_parent` are dropped.
pub(super) fn omegaconf(graph: &Graph, object: &Object, what: Omegaconf) -> Result<Value, String> {
    if !object.list_items.is_empty() || !object.dict_items.is_empty() {
        return Err("items were added to it".into());
    }
    let field = match what {
        Omegaconf::Node => "_val",
        Omegaconf::Dict | Omegaconf::List => "_content",
    };
    let content = state_entry(graph, object, field)?;
    let value = graph.get(content);
    match (what, value) {
        (Omegaconf::Node, _)
        | (_, Value::None | Value::Str(_))
        | (Omegaconf::Dict, Value::Dict(_))
        | (Omegaconf::List, Value::List(_)) => Ok(value.clone()),
        _ => Err(format!("its `_content` is a {}", value.kind())),
    }
}

/// The string of a pathlib object built from its parts, as `str(path)` gives it.
pub(super) fn path(graph: &Graph, args: NodeId, windows: bool) -> Result<Value, String> {
    let parts = graph
        .tuple(args)
        .ok_or("its arguments are not a tuple")?
        .iter()
        .map(|&p| graph.str(p))
        .collect::<Option<Vec<&str>>>()
        .ok_or("its parts are not all strings")?;
    Ok(Value::Str(join_path(&parts, windows)))
}

/// `str(PurePosixPath(*parts))` (or the Windows flavour): the parts joined, a later absolute
/// part restarting the path, empty and `.` segments and repeated separators dropped.
fn join_path(parts: &[&str], windows: bool) -> String {
    let sep = if windows { '\\' } else { '/' };
    let mut anchor = String::new();
    let mut segments: Vec<String> = Vec::new();
    for part in parts {
        let part = if windows {
            part.replace('/', "\\")
        } else {
            (*part).to_owned()
        };
        let (part_anchor, rest) = split_anchor(&part, windows);
        if !part_anchor.is_empty() {
            anchor = part_anchor;
            segments.clear();
        }
        segments.extend(
            rest.split(sep)
                .filter(|s| !s.is_empty() && *s != ".")
                .map(str::to_owned),
        );
    }
    let body = segments.join(&sep.to_string());
    match (anchor.is_empty(), body.is_empty()) {
        (true, true) => ".".to_owned(),
        (true, false) => body,
        (false, _) => anchor + &body,
    }
}

/// A path's anchor (`/`, POSIX's special `//`, `C:\`, `\`) and the rest.
fn split_anchor(part: &str, windows: bool) -> (String, &str) {
    if windows {
        let bytes = part.as_bytes();
        let drive = bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic();
        let (drive, rest) = if drive {
            (&part[..2], &part[2..])
        } else {
            ("", part)
        };
        let root = if rest.starts_with('\\') { "\\" } else { "" };
        (format!("{drive}{root}"), rest.trim_start_matches('\\'))
    } else if part.starts_with("//") && !part.starts_with("///") {
        ("//".to_owned(), &part[2..])
    } else if part.starts_with('/') {
        ("/".to_owned(), part.trim_start_matches('/'))
    } else {
        (String::new(), part)
    }
}

/// The value of an enum member, pickled as `Class(value)`: a call of a class (a CapWords
/// name, not a builtin) with one plain argument and nothing added after. `None` when the
/// object does not have that shape.
pub(super) fn enum_value(graph: &Graph, global: &Global, object: &Object) -> Option<Value> {
    let Constructor::Reduce { args, .. } = object.constructor else {
        return None;
    };
    let class_like = global
        .name
        .rsplit('.')
        .next()
        .and_then(|n| n.chars().next())
        .is_some_and(|c| c.is_ascii_uppercase());
    let builtin = matches!(global.canonical().module.as_str(), "builtins");
    if !class_like
        || builtin
        || !object.list_items.is_empty()
        || !object.dict_items.is_empty()
        || object.state.is_some()
    {
        return None;
    }
    match graph.tuple(args)? {
        [value] => match graph.get(*value) {
            plain @ (Value::Int(_)
            | Value::BigInt(_)
            | Value::Float(_)
            | Value::Str(_)
            | Value::Bool(_)) => Some(plain.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The string a `str` subclass holding one string (`torch.torch_version.TorchVersion`) is.
pub(super) fn string_argument(graph: &Graph, object: &Object) -> Result<Value, String> {
    let args = match object.constructor {
        Constructor::Reduce { args, .. } | Constructor::NewObj { args, .. } => args,
        Constructor::NewObjEx { .. } => return Err("it was built with keyword arguments".into()),
    };
    match graph.tuple(args) {
        Some(&[s]) if graph.str(s).is_some() && object.state.is_none() => Ok(graph.get(s).clone()),
        _ => Err("it is not built from one string".into()),
    }
}

/// The items of a `collections.defaultdict` (its default factory is dropped).
pub(super) fn defaultdict_items(object: &Object) -> Result<Value, String> {
    if !object.list_items.is_empty() || object.state.is_some() {
        return Err("it carries more than items".into());
    }
    Ok(Value::Dict(object.dict_items.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_as_pathlib_prints_them() {
        assert_eq!(join_path(&["/", "a", "b"], false), "/a/b");
        assert_eq!(join_path(&["a", "b"], false), "a/b");
        assert_eq!(join_path(&["a//b/", "./c"], false), "a/b/c");
        assert_eq!(join_path(&["a", "/etc", "x"], false), "/etc/x");
        assert_eq!(join_path(&["//net", "x"], false), "//net/x");
        assert_eq!(join_path(&[], false), ".");
        assert_eq!(join_path(&["C:\\", "a", "b"], true), "C:\\a\\b");
        assert_eq!(join_path(&["C:/Users/x"], true), "C:\\Users\\x");
        assert_eq!(join_path(&["a", "b"], true), "a\\b");
    }

    fn call(graph: &mut Graph, module: &str, name: &str, arg: Value) -> (Global, Object) {
        let global = Global::new(module, name);
        let callable = graph.add(Value::Global(global.clone()));
        let arg = graph.add(arg);
        let args = graph.add(Value::Tuple(vec![arg]));
        (global, Object::new(Constructor::Reduce { callable, args }))
    }

    #[test]
    fn an_enum_member_is_a_class_called_with_one_plain_value() {
        let mut graph = Graph::new();
        let (g, o) = call(&mut graph, "train", "Mode", Value::Int(2));
        assert_eq!(enum_value(&graph, &g, &o), Some(Value::Int(2)));
        let (g, o) = call(&mut graph, "train", "make_mode", Value::Int(2));
        assert_eq!(enum_value(&graph, &g, &o), None, "a function, not a class");
        let (g, o) = call(&mut graph, "builtins", "Exception", Value::Str("x".into()));
        assert_eq!(enum_value(&graph, &g, &o), None, "a builtin");
        let (g, o) = call(&mut graph, "datetime", "Date", Value::Bytes(vec![7, 1]));
        assert_eq!(enum_value(&graph, &g, &o), None, "bytes are no enum value");
    }
}
