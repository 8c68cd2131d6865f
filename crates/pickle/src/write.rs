//! A protocol 2 pickle writer that torch's `weights_only=True` loader accepts.
//!
//! It emits only the opcodes that loader allows (`PROTO`, `GLOBAL`, `REDUCE`, `NEWOBJ`,
//! `BUILD`, `BINPERSID`, marks and tuples, empty containers with `APPENDS`/`SETITEMS`,
//! `BININT*`, `LONG1`, `BINFLOAT`, `BINUNICODE`, `BINGET`/`BINPUT` and their long forms),
//! plus `LONG4` for integers over 255 bytes. Values with no protocol 2 opcode of their own use
//! the spellings Python 3's pickler uses (`_codecs.encode` for bytes, `__builtin__.set`), and the
//! only globals written are those of the graph itself and those spellings.
//!
//! Every node that is not a plain number is memoized when first written and fetched with
//! `BINGET` afterwards, so a node shared in the graph is shared after loading.

use std::collections::{HashMap, HashSet};

use super::opcode as op;
use super::read::minimal_twos_complement;
use super::value::{Constructor, Graph, NodeId, Object, Value};
use super::{PickleError, MAX_DEPTH};

/// Items per `APPENDS`/`SETITEMS` batch, as Python's pickler does.
const BATCH: usize = 1000;

/// Serializes the value at `root` as a protocol 2 pickle.
pub fn write(graph: &Graph, root: NodeId) -> Result<Vec<u8>, PickleError> {
    let mut writer = Writer {
        graph,
        out: Vec::with_capacity(4096),
        memo: HashMap::new(),
        in_progress: HashSet::new(),
    };
    writer.out.extend_from_slice(&[op::PROTO, 2]);
    writer.node(root, 0)?;
    writer.out.push(op::STOP);
    Ok(writer.out)
}

struct Writer<'g> {
    graph: &'g Graph,
    out: Vec<u8>,
    memo: HashMap<NodeId, u32>,
    /// Immutable nodes (tuples, object constructors) being written: meeting one again means a
    /// cycle protocol 2 cannot express without the memo tricks Python uses, so it is refused.
    in_progress: HashSet<NodeId>,
}

impl Writer<'_> {
    fn node(&mut self, id: NodeId, depth: usize) -> Result<(), PickleError> {
        if depth > MAX_DEPTH {
            return Err(PickleError::TooDeep { limit: MAX_DEPTH });
        }
        if let Some(&index) = self.memo.get(&id) {
            self.get(index);
            return Ok(());
        }
        if !self.in_progress.insert(id) {
            return Err(PickleError::Cycle);
        }
        let depth = depth + 1;
        match self.graph.get(id) {
            Value::None => self.out.push(op::NONE),
            Value::Bool(true) => self.out.push(op::NEWTRUE),
            Value::Bool(false) => self.out.push(op::NEWFALSE),
            Value::Int(v) => self.int(*v),
            Value::BigInt(bytes) => self.long(bytes),
            Value::Float(v) => {
                self.out.push(op::BINFLOAT);
                self.out.extend_from_slice(&v.to_be_bytes());
            }
            Value::Str(s) => {
                self.unicode(s);
                self.put(id);
            }
            Value::Bytes(bytes) => {
                self.global("_codecs", "encode");
                self.unicode(&latin1(bytes));
                self.unicode("latin1");
                self.out.extend_from_slice(&[op::TUPLE2, op::REDUCE]);
                self.put(id);
            }
            Value::ByteArray(bytes) => {
                self.global("__builtin__", "bytearray");
                self.unicode(&latin1(bytes));
                self.unicode("latin-1");
                self.out.extend_from_slice(&[op::TUPLE2, op::REDUCE]);
                self.put(id);
            }
            Value::Tuple(items) => {
                match items.len() {
                    0 => self.out.push(op::EMPTY_TUPLE),
                    n @ 1..=3 => {
                        for &item in items {
                            self.node(item, depth)?;
                        }
                        let opcode = [op::TUPLE1, op::TUPLE2, op::TUPLE3][n - 1];
                        self.out.push(opcode);
                    }
                    _ => {
                        self.out.push(op::MARK);
                        for &item in items {
                            self.node(item, depth)?;
                        }
                        self.out.push(op::TUPLE);
                    }
                }
                if !items.is_empty() {
                    self.put(id);
                }
            }
            Value::List(items) => {
                self.out.push(op::EMPTY_LIST);
                self.put(id);
                self.appends(items, depth)?;
            }
            Value::Dict(pairs) => {
                self.out.push(op::EMPTY_DICT);
                self.put(id);
                self.setitems(pairs, depth)?;
            }
            Value::Set(items) | Value::FrozenSet(items) => {
                let class = if matches!(self.graph.get(id), Value::Set(_)) {
                    "set"
                } else {
                    "frozenset"
                };
                self.global("__builtin__", class);
                self.out.push(op::EMPTY_LIST);
                self.appends(items, depth)?;
                self.out.extend_from_slice(&[op::TUPLE1, op::REDUCE]);
                self.put(id);
            }
            Value::Global(g) => {
                self.global(&g.module, &g.name);
                self.put(id);
            }
            Value::Object(object) => self.object(id, object, depth)?,
            Value::PersistentId(pid) => {
                self.node(*pid, depth)?;
                self.out.push(op::BINPERSID);
            }
        }
        self.in_progress.remove(&id);
        Ok(())
    }

    fn object(&mut self, id: NodeId, object: &Object, depth: usize) -> Result<(), PickleError> {
        match object.constructor {
            Constructor::Reduce { callable, args } => {
                self.node(callable, depth)?;
                self.node(args, depth)?;
                self.out.push(op::REDUCE);
            }
            Constructor::NewObj { class, args } => {
                self.node(class, depth)?;
                self.node(args, depth)?;
                self.out.push(op::NEWOBJ);
            }
            Constructor::NewObjEx {
                class,
                args,
                kwargs,
            } => {
                // Protocol 2 has no NEWOBJ_EX; Python's pickler uses copyreg.__newobj_ex__.
                self.global("copyreg", "__newobj_ex__");
                self.node(class, depth)?;
                self.node(args, depth)?;
                self.node(kwargs, depth)?;
                self.out.extend_from_slice(&[op::TUPLE3, op::REDUCE]);
            }
        }
        // Mutations follow the memo entry, so they may refer back to the object itself.
        self.put(id);
        self.in_progress.remove(&id);
        self.appends(&object.list_items, depth)?;
        self.setitems(&object.dict_items, depth)?;
        if let Some(state) = object.state {
            self.node(state, depth)?;
            self.out.push(op::BUILD);
        }
        Ok(())
    }

    fn appends(&mut self, items: &[NodeId], depth: usize) -> Result<(), PickleError> {
        for batch in items.chunks(BATCH) {
            self.out.push(op::MARK);
            for &item in batch {
                self.node(item, depth)?;
            }
            self.out.push(op::APPENDS);
        }
        Ok(())
    }

    fn setitems(&mut self, pairs: &[(NodeId, NodeId)], depth: usize) -> Result<(), PickleError> {
        for batch in pairs.chunks(BATCH) {
            self.out.push(op::MARK);
            for &(key, value) in batch {
                self.node(key, depth)?;
                self.node(value, depth)?;
            }
            self.out.push(op::SETITEMS);
        }
        Ok(())
    }

    fn int(&mut self, v: i64) {
        if let Ok(small) = u8::try_from(v) {
            self.out.extend_from_slice(&[op::BININT1, small]);
        } else if let Ok(medium) = u16::try_from(v) {
            self.out.push(op::BININT2);
            self.out.extend_from_slice(&medium.to_le_bytes());
        } else if let Ok(word) = i32::try_from(v) {
            self.out.push(op::BININT);
            self.out.extend_from_slice(&word.to_le_bytes());
        } else {
            self.long(&minimal_twos_complement(v.to_le_bytes().to_vec()));
        }
    }

    fn long(&mut self, bytes: &[u8]) {
        match u8::try_from(bytes.len()) {
            Ok(n) => self.out.extend_from_slice(&[op::LONG1, n]),
            Err(_) => {
                self.out.push(op::LONG4);
                let n = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
                self.out.extend_from_slice(&n.to_le_bytes());
            }
        }
        self.out.extend_from_slice(bytes);
    }

    fn unicode(&mut self, s: &str) {
        self.out.push(op::BINUNICODE);
        let n = u32::try_from(s.len()).unwrap_or(u32::MAX);
        self.out.extend_from_slice(&n.to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
    }

    fn global(&mut self, module: &str, name: &str) {
        self.out.push(op::GLOBAL);
        self.out.extend_from_slice(module.as_bytes());
        self.out.push(b'\n');
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b'\n');
    }

    fn put(&mut self, id: NodeId) {
        let index = u32::try_from(self.memo.len()).unwrap_or(u32::MAX);
        self.memo.insert(id, index);
        match u8::try_from(index) {
            Ok(small) => self.out.extend_from_slice(&[op::BINPUT, small]),
            Err(_) => {
                self.out.push(op::LONG_BINPUT);
                self.out.extend_from_slice(&index.to_le_bytes());
            }
        }
    }

    fn get(&mut self, index: u32) {
        match u8::try_from(index) {
            Ok(small) => self.out.extend_from_slice(&[op::BINGET, small]),
            Err(_) => {
                self.out.push(op::LONG_BINGET);
                self.out.extend_from_slice(&index.to_le_bytes());
            }
        }
    }
}

/// Bytes as the latin-1 text Python 3's protocol 2 pickler writes for them.
fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::read;
    use crate::value::Global;

    /// Opcodes torch 2.13's weights-only unpickler accepts.
    const WEIGHTS_ONLY_OPCODES: &[u8] = &[
        op::PROTO,
        op::STOP,
        op::GLOBAL,
        op::REDUCE,
        op::NEWOBJ,
        op::BUILD,
        op::BINPERSID,
        op::MARK,
        op::TUPLE,
        op::TUPLE1,
        op::TUPLE2,
        op::TUPLE3,
        op::EMPTY_TUPLE,
        op::EMPTY_LIST,
        op::EMPTY_DICT,
        op::APPEND,
        op::APPENDS,
        op::SETITEM,
        op::SETITEMS,
        op::NONE,
        op::NEWTRUE,
        op::NEWFALSE,
        op::BININT,
        op::BININT1,
        op::BININT2,
        op::LONG1,
        op::BINFLOAT,
        op::BINUNICODE,
        op::BINGET,
        op::LONG_BINGET,
        op::BINPUT,
        op::LONG_BINPUT,
    ];

    fn sample_graph() -> (Graph, NodeId) {
        let mut g = Graph::new();
        let od_class = g.add(Value::Global(Global::new("collections", "OrderedDict")));
        let empty = g.add(Value::Tuple(vec![]));
        let key = g.add(Value::Str("w".into()));
        let shared = g.add(Value::List(vec![]));
        let mut od = Object::new(Constructor::Reduce {
            callable: od_class,
            args: empty,
        });
        od.dict_items.push((key, shared));
        let od = g.add(Value::Object(od));
        let big = g.add(Value::Int(1 << 40));
        let neg = g.add(Value::Int(-5));
        let float = g.add(Value::Float(0.1));
        let bytes = g.add(Value::Bytes(vec![0, 255, 10]));
        let set = g.add(Value::Set(vec![big]));
        let items = vec![od, shared, shared, big, neg, float, bytes, set];
        let root = g.add(Value::List(items));
        (g, root)
    }

    #[test]
    fn round_trip_preserves_values_and_sharing() {
        let (g, root) = sample_graph();
        let bytes = write(&g, root).expect("write");
        let back = read(&bytes).expect("read back");
        let Value::List(items) = back.graph.get(back.root) else {
            panic!("list")
        };
        assert_eq!(items[1], items[2], "shared list stays shared");
        assert_eq!(back.graph.lookup(items[0], "w"), Some(items[1]));
        assert_eq!(back.graph.int(items[3]), Some(1 << 40));
        assert_eq!(back.graph.int(items[4]), Some(-5));
        assert_eq!(back.graph.get(items[5]), &Value::Float(0.1));
        // Reading and writing again is a fixed point.
        let once = write(&back.graph, back.root).expect("rewrite");
        let again = read(&once).expect("read again");
        assert_eq!(
            write(&again.graph, again.root).expect("rewrite again"),
            once
        );
    }

    #[test]
    fn output_uses_only_weights_only_opcodes() {
        let (g, root) = sample_graph();
        let bytes = write(&g, root).expect("write");
        // Walk the opcode stream using the reader's knowledge of argument sizes.
        let mut pos = 0;
        while pos < bytes.len() {
            let opcode = bytes[pos];
            assert!(
                WEIGHTS_ONLY_OPCODES.contains(&opcode),
                "opcode {} not accepted by weights_only",
                op::name(opcode)
            );
            pos += 1 + argument_len(&bytes[pos..]);
        }
    }

    fn argument_len(at: &[u8]) -> usize {
        match at[0] {
            op::PROTO | op::BININT1 | op::BINGET | op::BINPUT => 1,
            op::BININT2 => 2,
            op::BININT | op::LONG_BINGET | op::LONG_BINPUT => 4,
            op::BINFLOAT => 8,
            op::LONG1 => 1 + usize::from(at[1]),
            op::BINUNICODE => 4 + u32::from_le_bytes([at[1], at[2], at[3], at[4]]) as usize,
            op::GLOBAL => {
                let first = at[1..].iter().position(|&b| b == b'\n').unwrap_or(0) + 1;
                let second = at[1 + first..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .unwrap_or(0)
                    + 1;
                first + second
            }
            _ => 0,
        }
    }

    #[test]
    fn self_referencing_list_round_trips() {
        let mut g = Graph::new();
        let list = g.add(Value::List(vec![]));
        if let Value::List(items) = g.get_mut(list) {
            items.push(list);
        }
        let bytes = write(&g, list).expect("write");
        let back = read(&bytes).expect("read");
        let Value::List(items) = back.graph.get(back.root) else {
            panic!("list")
        };
        assert_eq!(items[0], back.root);
    }

    #[test]
    fn cyclic_tuple_is_refused() {
        let mut g = Graph::new();
        let tuple = g.add(Value::Tuple(vec![]));
        g.set(tuple, Value::Tuple(vec![tuple]));
        assert!(matches!(write(&g, tuple), Err(PickleError::Cycle)));
    }

    #[test]
    fn excessive_depth_is_refused_not_overflowed() {
        let mut g = Graph::new();
        let mut inner = g.add(Value::None);
        for _ in 0..(MAX_DEPTH + 10) {
            inner = g.add(Value::List(vec![inner]));
        }
        assert!(matches!(write(&g, inner), Err(PickleError::TooDeep { .. })));
    }
}
