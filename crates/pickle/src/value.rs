//! The value graph a pickle decodes to.
//!
//! Every value lives in one arena ([`Graph`]) and refers to its parts by [`NodeId`]. An object
//! the input pickle referenced twice (through its memo) is one node referenced twice, so the
//! writer can memoize it again and sharing survives a rewrite. Containers are mutable in place
//! because pickle builds them incrementally (`EMPTY_DICT`, `BINPUT`, later `SETITEMS`).

use std::fmt;

/// Index of a node in a [`Graph`]. Only valid for the graph that issued it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(u32);

impl NodeId {
    /// Position of the node in its graph's arena.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A module-qualified name (`GLOBAL`/`STACK_GLOBAL`). Never resolved or imported: it is data.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Global {
    /// The module, as the pickle spells it (`torch._utils`, `collections`, `__builtin__`).
    pub module: String,
    /// The name inside the module; may be dotted (`Foo.bar`), as protocol 4 allows.
    pub name: String,
}

impl Global {
    /// The global `module.name`.
    pub fn new(module: &str, name: &str) -> Self {
        Global {
            module: module.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The name with Python 2 module spellings mapped to Python 3 (`__builtin__` → `builtins`,
    /// `copy_reg` → `copyreg`), the way torch's weights-only unpickler compares them.
    pub fn canonical(&self) -> Global {
        let module = match self.module.as_str() {
            "__builtin__" => "builtins",
            "copy_reg" => "copyreg",
            other => other,
        };
        Global::new(module, &self.name)
    }

    /// Whether this is `module.name`, compared in [`canonical`](Self::canonical) spelling.
    pub fn is(&self, module: &str, name: &str) -> bool {
        let canonical = self.canonical();
        canonical.module == module && canonical.name == name
    }
}

impl fmt::Display for Global {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.module, self.name)
    }
}

/// How an [`Object`] node was constructed.
#[derive(Clone, Debug, PartialEq)]
pub enum Constructor {
    /// `callable(*args)`: `REDUCE`, and protocol 0's `INST`/`OBJ`.
    Reduce {
        /// What is called (usually a [`Value::Global`]).
        callable: NodeId,
        /// The argument tuple.
        args: NodeId,
    },
    /// `cls.__new__(cls, *args)`: `NEWOBJ`.
    NewObj {
        /// The class.
        class: NodeId,
        /// The argument tuple.
        args: NodeId,
    },
    /// `cls.__new__(cls, *args, **kwargs)`: `NEWOBJ_EX`.
    NewObjEx {
        /// The class.
        class: NodeId,
        /// The argument tuple.
        args: NodeId,
        /// The keyword-argument dict.
        kwargs: NodeId,
    },
}

/// An object built by calling something, plus what the pickle did to it afterwards.
///
/// Invariant: the writer replays the mutations in the order Python's pickler emits them
/// (`APPENDS`, then `SETITEMS`, then `BUILD`), which is the order every writer we know uses.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// How it was made.
    pub constructor: Constructor,
    /// Items appended to the object (a list subclass).
    pub list_items: Vec<NodeId>,
    /// Items set on the object (an `OrderedDict` and other dict subclasses).
    pub dict_items: Vec<(NodeId, NodeId)>,
    /// The `BUILD` state (`__setstate__` argument or `__dict__` update).
    pub state: Option<NodeId>,
}

impl Object {
    /// A freshly constructed object: no items, no state.
    pub fn new(constructor: Constructor) -> Self {
        Object {
            constructor,
            list_items: Vec::new(),
            dict_items: Vec::new(),
            state: None,
        }
    }
}

/// One pickled value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `None`.
    None,
    /// `True`/`False`.
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// An integer that does not fit `i64`: little-endian two's complement, as `LONG1` stores it.
    BigInt(Vec<u8>),
    /// A float (`BINFLOAT`, or protocol 0's text form).
    Float(f64),
    /// Text. Python 2 byte strings are decoded here (UTF-8, else latin-1), as torch loads them.
    Str(String),
    /// `bytes`.
    Bytes(Vec<u8>),
    /// `bytearray` (protocol 5 `BYTEARRAY8`).
    ByteArray(Vec<u8>),
    /// A tuple. Immutable: a cycle through it is refused when reading.
    Tuple(Vec<NodeId>),
    /// A list, in order.
    List(Vec<NodeId>),
    /// A dict, in insertion order.
    Dict(Vec<(NodeId, NodeId)>),
    /// A set, in pickle order.
    Set(Vec<NodeId>),
    /// A frozenset, in pickle order.
    FrozenSet(Vec<NodeId>),
    /// A name (`GLOBAL`/`STACK_GLOBAL`): data, never imported.
    Global(Global),
    /// The result of a call: see [`Object`].
    Object(Object),
    /// A persistent id: in torch files, the `('storage', type, key, location, numel)` tuple.
    PersistentId(NodeId),
}

impl Value {
    /// A short type name for reports (`dict`, `OrderedDict`-like objects are named by caller).
    pub fn kind(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::ByteArray(_) => "bytearray",
            Value::Tuple(_) => "tuple",
            Value::List(_) => "list",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
            Value::FrozenSet(_) => "frozenset",
            Value::Global(_) => "global",
            Value::Object(_) => "object",
            Value::PersistentId(_) => "persistent_id",
        }
    }

    /// The ids this value refers to directly, in pickle order.
    pub fn children(&self) -> Vec<NodeId> {
        match self {
            Value::Tuple(items)
            | Value::List(items)
            | Value::Set(items)
            | Value::FrozenSet(items) => items.clone(),
            Value::Dict(pairs) => pairs.iter().flat_map(|&(k, v)| [k, v]).collect(),
            Value::PersistentId(pid) => vec![*pid],
            Value::Object(object) => {
                let mut ids = match object.constructor {
                    Constructor::Reduce { callable, args } => vec![callable, args],
                    Constructor::NewObj { class, args } => vec![class, args],
                    Constructor::NewObjEx {
                        class,
                        args,
                        kwargs,
                    } => vec![class, args, kwargs],
                };
                ids.extend(object.list_items.iter().copied());
                ids.extend(object.dict_items.iter().flat_map(|&(k, v)| [k, v]));
                ids.extend(object.state);
                ids
            }
            _ => Vec::new(),
        }
    }
}

/// The arena holding every node of one pickle, and its root.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    nodes: Vec<Value>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Graph::default()
    }

    /// Adds a node and returns its id.
    pub fn add(&mut self, value: Value) -> NodeId {
        // The reader caps node counts far below u32::MAX; saturating keeps this total.
        let id = NodeId(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX));
        self.nodes.push(value);
        id
    }

    /// The value of node `id`. Panics if `id` is not from this graph.
    pub fn get(&self, id: NodeId) -> &Value {
        &self.nodes[id.index()]
    }

    /// The value of node `id`, to change in place. Panics if `id` is not from this graph.
    pub fn get_mut(&mut self, id: NodeId) -> &mut Value {
        &mut self.nodes[id.index()]
    }

    /// Replaces a node's value in place: every reference to `id` sees the new value.
    pub fn set(&mut self, id: NodeId, value: Value) {
        self.nodes[id.index()] = value;
    }

    /// How many nodes the arena holds (reachable or not).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Every node's value, in arena order.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.nodes.iter()
    }

    /// Appends every node of `other` to this graph, its ids shifted past this graph's nodes,
    /// and returns where `other_root` now is. Sharing and cycles inside `other` are kept.
    pub fn graft(&mut self, other: &Graph, other_root: NodeId) -> NodeId {
        let base = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        let shift = |id: NodeId| NodeId(id.0.saturating_add(base));
        let pairs = |items: &[(NodeId, NodeId)]| -> Vec<(NodeId, NodeId)> {
            items.iter().map(|&(k, v)| (shift(k), shift(v))).collect()
        };
        for value in &other.nodes {
            let moved = match value {
                Value::Tuple(items) => Value::Tuple(items.iter().map(|&i| shift(i)).collect()),
                Value::List(items) => Value::List(items.iter().map(|&i| shift(i)).collect()),
                Value::Set(items) => Value::Set(items.iter().map(|&i| shift(i)).collect()),
                Value::FrozenSet(items) => {
                    Value::FrozenSet(items.iter().map(|&i| shift(i)).collect())
                }
                Value::Dict(items) => Value::Dict(pairs(items)),
                Value::PersistentId(pid) => Value::PersistentId(shift(*pid)),
                Value::Object(object) => Value::Object(Object {
                    constructor: match object.constructor {
                        Constructor::Reduce { callable, args } => Constructor::Reduce {
                            callable: shift(callable),
                            args: shift(args),
                        },
                        Constructor::NewObj { class, args } => Constructor::NewObj {
                            class: shift(class),
                            args: shift(args),
                        },
                        Constructor::NewObjEx {
                            class,
                            args,
                            kwargs,
                        } => Constructor::NewObjEx {
                            class: shift(class),
                            args: shift(args),
                            kwargs: shift(kwargs),
                        },
                    },
                    list_items: object.list_items.iter().map(|&i| shift(i)).collect(),
                    dict_items: pairs(&object.dict_items),
                    state: object.state.map(shift),
                }),
                other => other.clone(),
            };
            self.nodes.push(moved);
        }
        shift(other_root)
    }

    /// Whether the arena holds no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The text of a `Str` node.
    pub fn str(&self, id: NodeId) -> Option<&str> {
        match self.get(id) {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The bytes a node holds: `bytes`, `bytearray`, or Python 3's protocol-2 spelling
    /// `_codecs.encode(text, 'latin1')` (every character below 256).
    pub fn bytes(&self, id: NodeId) -> Option<Vec<u8>> {
        match self.get(id) {
            Value::Bytes(b) | Value::ByteArray(b) => Some(b.clone()),
            Value::Object(object) => {
                let Constructor::Reduce { callable, args } = object.constructor else {
                    return None;
                };
                if !self.global(callable)?.is("_codecs", "encode") {
                    return None;
                }
                let args = self.tuple(args)?;
                let text = self.str(*args.first()?)?;
                text.chars()
                    .map(|c| u8::try_from(u32::from(c)).ok())
                    .collect()
            }
            _ => None,
        }
    }

    /// The value of an `Int` node.
    pub fn int(&self, id: NodeId) -> Option<i64> {
        match self.get(id) {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The items of a `Tuple` node.
    pub fn tuple(&self, id: NodeId) -> Option<&[NodeId]> {
        match self.get(id) {
            Value::Tuple(items) => Some(items),
            _ => None,
        }
    }

    /// The name of a `Global` node.
    pub fn global(&self, id: NodeId) -> Option<&Global> {
        match self.get(id) {
            Value::Global(g) => Some(g),
            _ => None,
        }
    }

    /// `(callable, args)` when `id` is an object built by `REDUCE` of a global.
    pub fn reduce_of_global(&self, id: NodeId) -> Option<(&Global, NodeId)> {
        match self.get(id) {
            Value::Object(Object {
                constructor: Constructor::Reduce { callable, args },
                ..
            }) => self.global(*callable).map(|g| (g, *args)),
            _ => None,
        }
    }

    /// The key/value pairs of a mapping node: a plain dict, or an object (such as an
    /// `OrderedDict`) that received `SETITEMS`.
    pub fn mapping(&self, id: NodeId) -> Option<&[(NodeId, NodeId)]> {
        match self.get(id) {
            Value::Dict(pairs) => Some(pairs),
            Value::Object(object) if is_mapping_object(self, object) => Some(&object.dict_items),
            _ => None,
        }
    }

    /// Mutable access to the pairs of a mapping node (see [`Graph::mapping`]).
    pub fn mapping_mut(&mut self, id: NodeId) -> Option<&mut Vec<(NodeId, NodeId)>> {
        let is_mapping = self.mapping(id).is_some();
        match self.get_mut(id) {
            Value::Dict(pairs) => Some(pairs),
            Value::Object(object) if is_mapping => Some(&mut object.dict_items),
            _ => None,
        }
    }

    /// The value stored under the string key `key` in a mapping node.
    pub fn lookup(&self, id: NodeId, key: &str) -> Option<NodeId> {
        self.mapping(id)?
            .iter()
            .find(|&&(k, _)| self.str(k) == Some(key))
            .map(|&(_, v)| v)
    }
}

impl Graph {
    /// Moves the items of mappings built the Python 2 way into [`Object::dict_items`], so
    /// every reader sees them where protocol-2 writers put them: `OrderedDict(pairs)` (Python
    /// 2's `OrderedDict.__reduce__` passes a list of `[key, value]` lists) and `Counter(d)`
    /// (a dict). The object then reads, and is written back, as `OrderedDict()` followed by
    /// `SETITEMS` of the same pairs in the same order: the same value to Python.
    ///
    /// Only `OrderedDict` and `Counter` objects with no items of their own and exactly
    /// one argument that is such a sequence or dict are changed; the argument node itself
    /// (which the memo may share) is left as it is.
    pub fn fold_mapping_constructors(&mut self) {
        for index in 0..self.nodes.len() {
            let Ok(id) = u32::try_from(index).map(NodeId) else {
                break;
            };
            let Value::Object(object) = self.get(id) else {
                continue;
            };
            let Constructor::Reduce { callable, args } = object.constructor else {
                continue;
            };
            let items_first = self
                .global(callable)
                .is_some_and(|g| ITEMS_FIRST_ARGUMENT.iter().any(|(m, n)| g.is(m, n)));
            if !items_first || !object.dict_items.is_empty() {
                continue;
            }
            let Some(pairs) = self.items_argument(args) else {
                continue;
            };
            let empty = self.add(Value::Tuple(Vec::new()));
            if let Value::Object(object) = self.get_mut(id) {
                object.constructor = Constructor::Reduce {
                    callable,
                    args: empty,
                };
                object.dict_items = pairs;
            }
        }
    }

    /// The pairs of `args` when it is `(items,)` with `items` a dict, or a list or tuple of
    /// two-element lists or tuples.
    fn items_argument(&self, args: NodeId) -> Option<Vec<(NodeId, NodeId)>> {
        let Value::Tuple(args) = self.get(args) else {
            return None;
        };
        let [items] = args.as_slice() else {
            return None;
        };
        match self.get(*items) {
            Value::Dict(pairs) => Some(pairs.clone()),
            Value::List(seq) | Value::Tuple(seq) => seq
                .iter()
                .map(|&pair| match self.get(pair) {
                    Value::List(kv) | Value::Tuple(kv) => match kv.as_slice() {
                        [k, v] => Some((*k, *v)),
                        _ => None,
                    },
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }
}

/// Mapping classes whose first constructor argument is their items (`OrderedDict(pairs)`,
/// `Counter(mapping)`), as Python 2 pickled them.
const ITEMS_FIRST_ARGUMENT: [(&str, &str); 2] =
    [("collections", "OrderedDict"), ("collections", "Counter")];

/// Mapping classes whose pickles carry their items in `SETITEMS`.
const MAPPING_CLASSES: [(&str, &str); 3] = [
    ("collections", "OrderedDict"),
    ("collections", "Counter"),
    ("collections", "defaultdict"),
];

fn is_mapping_object(graph: &Graph, object: &Object) -> bool {
    let class = match object.constructor {
        Constructor::Reduce { callable, .. } => callable,
        Constructor::NewObj { class, .. } | Constructor::NewObjEx { class, .. } => class,
    };
    match graph.global(class) {
        Some(g) => MAPPING_CLASSES.iter().any(|(m, n)| g.is(m, n)) || !object.dict_items.is_empty(),
        None => !object.dict_items.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_maps_python2_builtins() {
        assert_eq!(
            Global::new("__builtin__", "set").canonical(),
            Global::new("builtins", "set")
        );
        assert!(Global::new("copy_reg", "_reconstructor").is("copyreg", "_reconstructor"));
    }

    #[test]
    fn a_python2_ordered_dict_built_from_pairs_holds_its_items() {
        let mut graph = Graph::new();
        let class = graph.add(Value::Global(Global::new("collections", "OrderedDict")));
        let (a, b) = (
            graph.add(Value::Str("a".into())),
            graph.add(Value::Str("b".into())),
        );
        let (one, two) = (graph.add(Value::Int(1)), graph.add(Value::Int(2)));
        let first = graph.add(Value::List(vec![a, one]));
        let second = graph.add(Value::List(vec![b, two]));
        let pairs = graph.add(Value::List(vec![first, second]));
        let args = graph.add(Value::Tuple(vec![pairs]));
        let od = graph.add(Value::Object(Object::new(Constructor::Reduce {
            callable: class,
            args,
        })));
        assert_eq!(graph.lookup(od, "a"), None);
        graph.fold_mapping_constructors();
        assert_eq!(graph.mapping(od), Some(&[(a, one), (b, two)][..]));
        let Value::Object(object) = graph.get(od) else {
            panic!("still an object");
        };
        let Constructor::Reduce { args, .. } = object.constructor else {
            panic!("still a REDUCE");
        };
        assert_eq!(graph.get(args), &Value::Tuple(Vec::new()));
    }

    #[test]
    fn other_calls_and_odd_arguments_are_left_alone() {
        let mut graph = Graph::new();
        let class = graph.add(Value::Global(Global::new("builtins", "list")));
        let pair = graph.add(Value::List(vec![]));
        let items = graph.add(Value::List(vec![pair]));
        let args = graph.add(Value::Tuple(vec![items]));
        let call = graph.add(Value::Object(Object::new(Constructor::Reduce {
            callable: class,
            args,
        })));
        let od = graph.add(Value::Global(Global::new("collections", "OrderedDict")));
        let odd = graph.add(Value::Object(Object::new(Constructor::Reduce {
            callable: od,
            args,
        })));
        let before = graph.clone();
        graph.fold_mapping_constructors();
        assert_eq!(graph.get(call), before.get(call));
        assert_eq!(graph.get(odd), before.get(odd));
    }

    #[test]
    fn ordered_dict_object_is_a_mapping() {
        let mut graph = Graph::new();
        let class = graph.add(Value::Global(Global::new("collections", "OrderedDict")));
        let args = graph.add(Value::Tuple(vec![]));
        let key = graph.add(Value::Str("a".into()));
        let value = graph.add(Value::Int(1));
        let mut object = Object::new(Constructor::Reduce {
            callable: class,
            args,
        });
        object.dict_items.push((key, value));
        let od = graph.add(Value::Object(object));
        assert_eq!(graph.lookup(od, "a"), Some(value));
        assert_eq!(graph.lookup(od, "b"), None);
    }
}
