//! A non-executing pickle reader: opcodes in, a [`Graph`] out.
//!
//! It runs the pickle machine's stack and memo, but where Python would import a module or call
//! a function it records a node instead (`Global`, `Object`). Every length field is checked
//! against the bytes that remain before anything is allocated, and the [`Limits`] bound memo
//! entries, node counts, integer sizes and the mark stack.

use std::collections::HashMap;

use super::number::{self, Text};
use super::opcode as op;
use super::value::{Constructor, Global, Graph, NodeId, Object, Value};
use super::PickleError;

/// Bounds on what one pickle may build. Exceeding one is an error, never an allocation.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Nodes in the graph (every opcode that builds a value adds at most one).
    pub max_nodes: usize,
    /// Memo entries (`BINPUT`, `MEMOIZE`, …).
    pub max_memo: usize,
    /// Bytes of one arbitrary-size integer (`LONG1`, `LONG4`, protocol 0 `LONG`).
    pub max_long_bytes: usize,
    /// Nesting of `MARK`s.
    pub max_marks: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_nodes: 20_000_000,
            max_memo: 20_000_000,
            max_long_bytes: 4096,
            max_marks: 10_000,
        }
    }
}

/// A decoded pickle: its graph, the root value, and how many input bytes it used.
#[derive(Debug)]
pub struct Pickle {
    /// Every decoded value.
    pub graph: Graph,
    /// The value `STOP` returned.
    pub root: NodeId,
    /// Bytes consumed, including `STOP`. Legacy torch files concatenate several pickles.
    pub consumed: usize,
}

/// Reads one pickle from the start of `bytes` with default limits.
pub fn read(bytes: &[u8]) -> Result<Pickle, PickleError> {
    read_with_limits(bytes, Limits::default())
}

/// Reads one pickle from the start of `bytes`.
pub fn read_with_limits(bytes: &[u8], limits: Limits) -> Result<Pickle, PickleError> {
    let mut machine = Machine::new(bytes, limits);
    let root = machine.run()?;
    Ok(Pickle {
        graph: machine.graph,
        root,
        consumed: machine.pos,
    })
}

/// What [`read_lenient`] recovered from a pickle, whether or not it could be read to `STOP`.
#[derive(Debug)]
pub struct Partial {
    /// Every node built before the pickle ended or failed.
    pub graph: Graph,
    /// Every `Global` node (`GLOBAL`, `STACK_GLOBAL`, `INST`) in creation order, including
    /// those no longer reachable from the root (popped, or left on the stack).
    pub globals: Vec<NodeId>,
    /// Bytes consumed through `STOP`, or the error that stopped the reader.
    pub end: Result<usize, PickleError>,
}

/// Reads one pickle like [`read_with_limits`], but keeps what was built before an error:
/// a scanner must see the globals a broken pickle names before the point where it breaks
/// (Python's unpickler would already have imported and called them).
pub fn read_lenient(bytes: &[u8], limits: Limits) -> Partial {
    let mut machine = Machine::new(bytes, limits);
    let end = machine.run().map(|_| machine.pos);
    Partial {
        graph: machine.graph,
        globals: machine.globals,
        end,
    }
}

struct Machine<'a> {
    input: &'a [u8],
    pos: usize,
    opcode_pos: usize,
    opcode: u8,
    graph: Graph,
    stack: Vec<NodeId>,
    marks: Vec<usize>,
    memo: HashMap<u64, NodeId>,
    limits: Limits,
    /// Ids of the `Global` nodes built so far.
    globals: Vec<NodeId>,
    /// Where the current `FRAME` ends, while the reader is inside one.
    frame_end: Option<usize>,
    /// Extension codes registered by `copyreg.add_extension` calls earlier in this pickle.
    extensions: HashMap<u64, Global>,
}

impl<'a> Machine<'a> {
    fn new(input: &'a [u8], limits: Limits) -> Self {
        Machine {
            input,
            pos: 0,
            opcode_pos: 0,
            opcode: 0,
            graph: Graph::new(),
            stack: Vec::new(),
            marks: Vec::new(),
            memo: HashMap::new(),
            limits,
            globals: Vec::new(),
            frame_end: None,
            extensions: HashMap::new(),
        }
    }

    /// Runs opcodes to `STOP`. Frames: CPython's C unpickler (the one `torch.load` runs)
    /// requires a frame's bytes to exist, then reads on without looking at frame boundaries
    /// — except that, from a stream, an argument that runs past the frame's end is read from
    /// *after* the buffered frame, dropping its rest. Python's picklers never let an opcode
    /// straddle a frame's end, start a frame inside another, or end a pickle before its
    /// frame: each of those is [`PickleError::Ambiguous`].
    fn run(&mut self) -> Result<NodeId, PickleError> {
        loop {
            if self.frame_end.is_some_and(|end| self.pos >= end) {
                self.frame_end = None;
            }
            let frame = self.frame_end;
            self.opcode_pos = self.pos;
            self.opcode = self.take_u8()?;
            let stop = self.step()?;
            if let Some(end) = frame {
                if self.pos > end {
                    return Err(self.ambiguous(format!(
                        "runs {} bytes past the end of its FRAME (CPython reads those bytes from after the frame, not these)",
                        self.pos - end
                    )));
                }
                if stop.is_some() && self.pos < end {
                    return Err(self.ambiguous(format!(
                        "STOP {} bytes before the end of its FRAME (what follows depends on how the file is buffered)",
                        end - self.pos
                    )));
                }
            }
            if let Some(root) = stop {
                return Ok(root);
            }
        }
    }

    /// Runs one opcode; `Some(root)` at `STOP`.
    fn step(&mut self) -> Result<Option<NodeId>, PickleError> {
        match self.opcode {
                op::STOP => return self.pop().map(Some),
                op::PROTO => {
                    let version = self.take_u8()?;
                    if version > 5 {
                        return Err(self.malformed(format!("unsupported protocol {version}")));
                    }
                }
                op::FRAME => {
                    let n = u64::from_le_bytes(self.take_array()?);
                    if self.frame_end.is_some() {
                        return Err(
                            self.ambiguous("a FRAME starts inside the previous frame".into())
                        );
                    }
                    // CPython reads the whole frame before running any of it.
                    let n = usize::try_from(n).map_err(|_| self.truncated())?;
                    let start = self.pos;
                    self.take(n)?;
                    self.pos = start;
                    self.frame_end = Some(start + n);
                }
                op::MARK => {
                    if self.marks.len() >= self.limits.max_marks {
                        return Err(self.limit("nested marks", self.limits.max_marks));
                    }
                    self.marks.push(self.stack.len());
                }
                op::POP => {
                    // Like Python: popping an empty segment discards the innermost mark.
                    let floor = self.marks.last().copied().unwrap_or(0);
                    if self.stack.len() > floor {
                        self.pop()?;
                    } else {
                        self.pop_mark()?;
                    }
                }
                op::POP_MARK => {
                    self.pop_mark()?;
                }
                op::DUP => {
                    let top = self.top()?;
                    self.stack.push(top);
                }
                // Scalars.
                op::NONE => self.push(Value::None)?,
                op::NEWTRUE => self.push(Value::Bool(true))?,
                op::NEWFALSE => self.push(Value::Bool(false))?,
                op::BININT => {
                    let v = i32::from_le_bytes(self.take_array()?);
                    self.push(Value::Int(v.into()))?;
                }
                op::BININT1 => {
                    let v = self.take_u8()?;
                    self.push(Value::Int(v.into()))?;
                }
                op::BININT2 => {
                    let v = u16::from_le_bytes(self.take_array()?);
                    self.push(Value::Int(v.into()))?;
                }
                op::LONG1 => {
                    let n = usize::from(self.take_u8()?);
                    self.push_long(n)?;
                }
                op::LONG4 => {
                    let n = i32::from_le_bytes(self.take_array()?);
                    let n = usize::try_from(n)
                        .map_err(|_| self.malformed("negative LONG4 length".into()))?;
                    self.push_long(n)?;
                }
                op::INT => {
                    let line = self.take_line()?;
                    let value = match line {
                        b"01" => Value::Bool(true),
                        b"00" => Value::Bool(false),
                        _ => {
                            let text = number::int_text(line);
                            self.decimal_int(line, text)?
                        }
                    };
                    self.push(value)?;
                }
                op::LONG => {
                    let line = self.take_line()?;
                    let text = number::long_text(line);
                    let value = self.decimal_int(line, text)?;
                    self.push(value)?;
                }
                op::BINFLOAT => {
                    let v = f64::from_be_bytes(self.take_array()?);
                    self.push(Value::Float(v))?;
                }
                op::FLOAT => {
                    let line = self.take_line()?;
                    let v = std::str::from_utf8(line)
                        .ok()
                        .and_then(|s| s.trim().parse::<f64>().ok())
                        .ok_or_else(|| self.malformed("FLOAT is not a number".into()))?;
                    self.push(Value::Float(v))?;
                }
                // Text and bytes.
                op::BINUNICODE => {
                    let n = self.take_len_u32()?;
                    let s = self.take_utf8(n)?;
                    self.push(Value::Str(s))?;
                }
                op::SHORT_BINUNICODE => {
                    let n = usize::from(self.take_u8()?);
                    let s = self.take_utf8(n)?;
                    self.push(Value::Str(s))?;
                }
                op::BINUNICODE8 => {
                    let n = self.take_len_u64()?;
                    let s = self.take_utf8(n)?;
                    self.push(Value::Str(s))?;
                }
                op::UNICODE => {
                    let line = self.take_line()?;
                    let s = decode_raw_unicode_escape(line)
                        .ok_or_else(|| self.malformed("bad raw-unicode-escape text".into()))?;
                    self.push(Value::Str(s))?;
                }
                op::SHORT_BINSTRING => {
                    let n = usize::from(self.take_u8()?);
                    let s = python2_str(self.take(n)?);
                    self.push(Value::Str(s))?;
                }
                op::BINSTRING => {
                    let n = i32::from_le_bytes(self.take_array()?);
                    let n = usize::try_from(n)
                        .map_err(|_| self.malformed("negative BINSTRING length".into()))?;
                    let s = python2_str(self.take(n)?);
                    self.push(Value::Str(s))?;
                }
                op::STRING => {
                    let line = self.take_line()?;
                    let raw = unquote_python2_string(line)
                        .ok_or_else(|| self.malformed("bad quoted STRING".into()))?;
                    self.push(Value::Str(python2_str(&raw)))?;
                }
                op::SHORT_BINBYTES => {
                    let n = usize::from(self.take_u8()?);
                    let b = self.take(n)?.to_vec();
                    self.push(Value::Bytes(b))?;
                }
                op::BINBYTES => {
                    let n = self.take_len_u32()?;
                    let b = self.take(n)?.to_vec();
                    self.push(Value::Bytes(b))?;
                }
                op::BINBYTES8 => {
                    let n = self.take_len_u64()?;
                    let b = self.take(n)?.to_vec();
                    self.push(Value::Bytes(b))?;
                }
                op::BYTEARRAY8 => {
                    let n = self.take_len_u64()?;
                    let b = self.take(n)?.to_vec();
                    self.push(Value::ByteArray(b))?;
                }
                // Containers.
                op::EMPTY_TUPLE => self.push(Value::Tuple(Vec::new()))?,
                op::TUPLE => {
                    let items = self.pop_mark()?;
                    self.push(Value::Tuple(items))?;
                }
                op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                    let n = usize::from(self.opcode - op::TUPLE1 + 1);
                    let items = self.pop_n(n)?;
                    self.push(Value::Tuple(items))?;
                }
                op::EMPTY_LIST => self.push(Value::List(Vec::new()))?,
                op::LIST => {
                    let items = self.pop_mark()?;
                    self.push(Value::List(items))?;
                }
                op::EMPTY_DICT => self.push(Value::Dict(Vec::new()))?,
                op::DICT => {
                    let items = self.pop_mark()?;
                    let pairs = self.pairs(items)?;
                    self.push(Value::Dict(pairs))?;
                }
                op::EMPTY_SET => self.push(Value::Set(Vec::new()))?,
                op::FROZENSET => {
                    let items = self.pop_mark()?;
                    self.push(Value::FrozenSet(items))?;
                }
                op::APPEND => {
                    let item = self.pop()?;
                    let target = self.top()?;
                    self.extend_list(target, vec![item])?;
                }
                op::APPENDS => {
                    let items = self.pop_mark()?;
                    let target = self.top()?;
                    self.extend_list(target, items)?;
                }
                op::SETITEM => {
                    let value = self.pop()?;
                    let key = self.pop()?;
                    let target = self.top()?;
                    self.extend_dict(target, vec![(key, value)])?;
                }
                op::SETITEMS => {
                    let items = self.pop_mark()?;
                    let pairs = self.pairs(items)?;
                    let target = self.top()?;
                    self.extend_dict(target, pairs)?;
                }
                op::ADDITEMS => {
                    let items = self.pop_mark()?;
                    let target = self.top()?;
                    if !items.is_empty() {
                        match self.graph.get_mut(target) {
                            Value::Set(set) => set.extend(items),
                            other => {
                                let kind = other.kind();
                                return Err(self.mutation(kind, "calls its `add`"));
                            }
                        }
                    }
                }
                // Memo.
                op::BINPUT => {
                    let i = self.take_u8()?;
                    self.memo_put(i.into())?;
                }
                op::LONG_BINPUT => {
                    let i = u32::from_le_bytes(self.take_array()?);
                    self.memo_put(i.into())?;
                }
                op::PUT => {
                    let line = self.take_line()?;
                    let i = self.memo_index(line)?;
                    self.memo_put(i)?;
                }
                op::MEMOIZE => {
                    let i = self.memo.len() as u64;
                    self.memo_put(i)?;
                }
                op::BINGET => {
                    let i = self.take_u8()?;
                    self.memo_get(i.into())?;
                }
                op::LONG_BINGET => {
                    let i = u32::from_le_bytes(self.take_array()?);
                    self.memo_get(i.into())?;
                }
                op::GET => {
                    let line = self.take_line()?;
                    let i = self.memo_index(line)?;
                    self.memo_get(i)?;
                }
                // Names and objects: recorded, never resolved.
                op::GLOBAL => {
                    let module = self.take_ascii_line()?;
                    let name = self.take_ascii_line()?;
                    self.push(Value::Global(Global { module, name }))?;
                }
                op::STACK_GLOBAL => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (Some(module), Some(name)) = (self.graph.str(module), self.graph.str(name))
                    else {
                        return Err(self.malformed("STACK_GLOBAL needs two strings".into()));
                    };
                    let newline = module.contains('\n') || name.contains('\n');
                    let global = Global::new(module, name);
                    self.push(Value::Global(global))?;
                    // No importable name holds a newline, and the writer's GLOBAL is
                    // newline-delimited: one would let a rewrite inject opcodes. The name is
                    // recorded first, as CPython would already look it up.
                    if newline {
                        return Err(self.ambiguous("STACK_GLOBAL name contains a newline".into()));
                    }
                }
                op::REDUCE => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    self.note_extension(callable, args);
                    self.push_object(Constructor::Reduce { callable, args })?;
                }
                op::NEWOBJ => {
                    let args = self.pop()?;
                    let class = self.pop()?;
                    self.push_object(Constructor::NewObj { class, args })?;
                }
                op::NEWOBJ_EX => {
                    let kwargs = self.pop()?;
                    let args = self.pop()?;
                    let class = self.pop()?;
                    self.push_object(Constructor::NewObjEx {
                        class,
                        args,
                        kwargs,
                    })?;
                }
                op::INST => {
                    let module = self.take_ascii_line()?;
                    let name = self.take_ascii_line()?;
                    let items = self.pop_mark()?;
                    let callable = self.add(Value::Global(Global { module, name }))?;
                    let args = self.add(Value::Tuple(items))?;
                    self.push_object(Constructor::Reduce { callable, args })?;
                }
                op::OBJ => {
                    let mut items = self.pop_mark()?.into_iter();
                    let callable = items
                        .next()
                        .ok_or_else(|| self.malformed("OBJ without a class".into()))?;
                    let args = self.add(Value::Tuple(items.collect()))?;
                    self.push_object(Constructor::Reduce { callable, args })?;
                }
                op::BUILD => {
                    let state = self.pop()?;
                    let target = self.top()?;
                    match self.graph.get_mut(target) {
                        Value::Object(object) if object.state.is_none() => {
                            object.state = Some(state)
                        }
                        Value::Object(_) => {
                            return Err(self.ambiguous(
                                "second BUILD on one object (CPython applies both states: a first one can install a __setstate__ the second calls)".into(),
                            ))
                        }
                        Value::Global(_) => {
                            return Err(self.ambiguous(
                                "BUILD on a global (CPython calls the class's __setstate__ or sets attributes on the class or module: monkey-patching)".into(),
                            ))
                        }
                        other => {
                            let kind = other.kind();
                            return Err(self.ambiguous(format!(
                                "BUILD on a {kind} (pickles only BUILD objects they constructed)"
                            )));
                        }
                    }
                }
                op::BINPERSID => {
                    let pid = self.pop()?;
                    self.push(Value::PersistentId(pid))?;
                }
                op::PERSID => {
                    let line = self.take_ascii_line()?;
                    let pid = self.add(Value::Str(line))?;
                    self.push(Value::PersistentId(pid))?;
                }
                op::EXT1 | op::EXT2 | op::EXT4 => {
                    let code = match self.opcode {
                        op::EXT1 => u64::from(self.take_u8()?),
                        op::EXT2 => u64::from(u16::from_le_bytes(self.take_array()?)),
                        _ => u64::from(u32::from_le_bytes(self.take_array()?)),
                    };
                    if code == 0 {
                        return Err(self.malformed("extension code 0".into()));
                    }
                    // Record the name an earlier `copyreg.add_extension` in this pickle
                    // registered, so a scan reports it; any other code resolves to whatever
                    // the running process registered.
                    if let Some(global) = self.extensions.get(&code).cloned() {
                        self.push(Value::Global(global))?;
                    }
                    return Err(self.ambiguous(format!(
                        "copyreg extension code {code} (CPython resolves it at load time to whatever global is registered under it; no checkpoint uses them)"
                    )));
                }
                op::READONLY_BUFFER => {
                    return Err(self.ambiguous(
                        "READONLY_BUFFER without out-of-band buffers (CPython turns the top value into a memoryview; no pickler writes it in-band)".into(),
                    ))
                }
                op::NEXT_BUFFER => {
                    return Err(self.unsupported("out-of-band buffers are not part of a file"))
                }
                other => {
                    return Err(PickleError::UnknownOpcode {
                        opcode: other,
                        offset: self.opcode_pos,
                    })
                }
            }
        Ok(None)
    }

    /// Remembers `copyreg.add_extension(module, name, code)` called with literal arguments.
    fn note_extension(&mut self, callable: NodeId, args: NodeId) {
        let registers = self
            .graph
            .global(callable)
            .is_some_and(|g| g.is("copyreg", "add_extension"));
        let Some(&[module, name, code]) = self.graph.tuple(args) else {
            return;
        };
        if !registers {
            return;
        }
        let (Some(module), Some(name), Some(code)) = (
            self.graph.str(module),
            self.graph.str(name),
            self.graph.int(code).and_then(|c| u64::try_from(c).ok()),
        ) else {
            return;
        };
        let global = Global::new(module, name);
        self.extensions.insert(code, global);
    }

    // --- input ---

    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        let input = self.input;
        let end = self.pos.checked_add(n).filter(|&end| end <= input.len());
        match end {
            Some(end) => {
                let slice = &input[self.pos..end];
                self.pos = end;
                Ok(slice)
            }
            None => Err(self.truncated()),
        }
    }

    fn take_u8(&mut self) -> Result<u8, PickleError> {
        Ok(self.take(1)?[0])
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], PickleError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn take_len_u32(&mut self) -> Result<usize, PickleError> {
        let n = u32::from_le_bytes(self.take_array()?);
        usize::try_from(n).map_err(|_| self.truncated())
    }

    fn take_len_u64(&mut self) -> Result<usize, PickleError> {
        let n = u64::from_le_bytes(self.take_array()?);
        usize::try_from(n).map_err(|_| self.truncated())
    }

    /// A newline-terminated line without its newline (protocol 0 arguments).
    fn take_line(&mut self) -> Result<&'a [u8], PickleError> {
        let rest = &self.input[self.pos..];
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| self.truncated())?;
        let line = &rest[..n];
        self.pos += n + 1;
        Ok(line)
    }

    fn take_ascii_line(&mut self) -> Result<String, PickleError> {
        let line = self.take_line()?;
        match std::str::from_utf8(line) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(self.malformed("name is not text".into())),
        }
    }

    fn take_utf8(&mut self, n: usize) -> Result<String, PickleError> {
        let bytes = self.take(n)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(self.malformed("string is not valid UTF-8".into())),
        }
    }

    // --- values ---

    fn add(&mut self, value: Value) -> Result<NodeId, PickleError> {
        if self.graph.len() >= self.limits.max_nodes {
            return Err(self.limit("values", self.limits.max_nodes));
        }
        let is_global = matches!(value, Value::Global(_));
        let id = self.graph.add(value);
        if is_global {
            self.globals.push(id);
        }
        Ok(id)
    }

    fn push(&mut self, value: Value) -> Result<(), PickleError> {
        let id = self.add(value)?;
        self.stack.push(id);
        Ok(())
    }

    fn push_object(&mut self, constructor: Constructor) -> Result<(), PickleError> {
        self.push(Value::Object(Object::new(constructor)))
    }

    fn push_long(&mut self, n: usize) -> Result<(), PickleError> {
        if n > self.limits.max_long_bytes {
            return Err(self.limit("bytes in one integer", self.limits.max_long_bytes));
        }
        let bytes = self.take(n)?;
        let value = long_value(bytes);
        self.push(value)
    }

    /// An `INT`/`LONG` argument: canonical decimal is read, anything else CPython accepts is
    /// ambiguous, the rest fails as in CPython.
    fn decimal_int(&self, line: &[u8], text: Text<'_>) -> Result<Value, PickleError> {
        if line.len() > self.limits.max_long_bytes * 3 {
            return Err(self.limit("bytes in one integer", self.limits.max_long_bytes));
        }
        let (negative, digits) = self.canonical(line, text)?;
        let value = decimal_to_value(negative, digits)
            .ok_or_else(|| self.malformed("integer is not decimal".into()))?;
        // The digit count only bounds the work; the value itself obeys the same byte limit as
        // LONG1/LONG4, so whatever is read can be written back and read again.
        match &value {
            Value::BigInt(bytes) if bytes.len() > self.limits.max_long_bytes => {
                Err(self.limit("bytes in one integer", self.limits.max_long_bytes))
            }
            _ => Ok(value),
        }
    }

    /// A `GET`/`PUT` index, judged like [`Self::decimal_int`] (CPython reads `int(s, 10)`).
    fn memo_index(&self, line: &[u8]) -> Result<u64, PickleError> {
        let (_, digits) = self.canonical(line, number::index_text(line))?;
        std::str::from_utf8(digits)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| self.malformed("memo index is out of range".into()))
    }

    /// The sign and digits of canonical number text; the error for any other.
    fn canonical<'t>(&self, line: &[u8], text: Text<'t>) -> Result<(bool, &'t [u8]), PickleError> {
        let shown = String::from_utf8_lossy(line);
        match text {
            Text::Canonical { negative, digits } => Ok((negative, digits)),
            Text::Ambiguous => Err(self.ambiguous(format!(
                "`{}` is not canonical decimal, yet CPython reads it as a number (Python's int() rules: base prefixes, underscores, whitespace)",
                shown.escape_debug()
            ))),
            Text::Rejected => Err(self.malformed(format!(
                "`{}` is not a number CPython reads",
                shown.escape_debug()
            ))),
        }
    }

    fn pop(&mut self) -> Result<NodeId, PickleError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.malformed("stack underflow".into()));
        }
        self.stack
            .pop()
            .ok_or_else(|| self.malformed("stack underflow".into()))
    }

    fn top(&self) -> Result<NodeId, PickleError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match self.stack.last() {
            Some(&id) if self.stack.len() > floor => Ok(id),
            _ => Err(self.malformed("stack underflow".into())),
        }
    }

    fn pop_n(&mut self, n: usize) -> Result<Vec<NodeId>, PickleError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() < floor + n {
            return Err(self.malformed("stack underflow".into()));
        }
        Ok(self.stack.split_off(self.stack.len() - n))
    }

    fn pop_mark(&mut self) -> Result<Vec<NodeId>, PickleError> {
        let mark = self
            .marks
            .pop()
            .ok_or_else(|| self.malformed("no MARK to pop to".into()))?;
        Ok(self.stack.split_off(mark.min(self.stack.len())))
    }

    fn pairs(&self, items: Vec<NodeId>) -> Result<Vec<(NodeId, NodeId)>, PickleError> {
        if !items.len().is_multiple_of(2) {
            return Err(self.malformed("odd number of items for a dict".into()));
        }
        Ok(items.chunks_exact(2).map(|kv| (kv[0], kv[1])).collect())
    }

    /// `APPEND(S)`: CPython does nothing for no items, and otherwise calls the target's
    /// `extend` or `append` — on a class or module, or a value pickles never append to, that
    /// is a call the pickle did not construct.
    fn extend_list(&mut self, target: NodeId, items: Vec<NodeId>) -> Result<(), PickleError> {
        if items.is_empty() {
            return Ok(());
        }
        match self.graph.get_mut(target) {
            Value::List(list) => list.extend(items),
            Value::Object(object) => object.list_items.extend(items),
            other => {
                let kind = other.kind();
                return Err(self.mutation(kind, "calls its `extend` or `append`"));
            }
        }
        Ok(())
    }

    fn extend_dict(
        &mut self,
        target: NodeId,
        pairs: Vec<(NodeId, NodeId)>,
    ) -> Result<(), PickleError> {
        if pairs.is_empty() {
            return Ok(());
        }
        match self.graph.get_mut(target) {
            Value::Dict(dict) => dict.extend(pairs),
            Value::Object(object) => object.dict_items.extend(pairs),
            other => {
                let kind = other.kind();
                return Err(self.mutation(kind, "calls its `__setitem__`"));
            }
        }
        Ok(())
    }

    fn memo_put(&mut self, index: u64) -> Result<(), PickleError> {
        let top = self.top()?;
        if self.memo.len() >= self.limits.max_memo && !self.memo.contains_key(&index) {
            return Err(self.limit("memo entries", self.limits.max_memo));
        }
        self.memo.insert(index, top);
        Ok(())
    }

    fn memo_get(&mut self, index: u64) -> Result<(), PickleError> {
        let id = *self
            .memo
            .get(&index)
            .ok_or_else(|| self.malformed(format!("memo entry {index} was never stored")))?;
        self.stack.push(id);
        Ok(())
    }

    // --- errors ---

    fn truncated(&self) -> PickleError {
        PickleError::Truncated {
            offset: self.opcode_pos,
            opcode: op::name(self.opcode),
        }
    }

    fn malformed(&self, problem: String) -> PickleError {
        PickleError::Malformed {
            offset: self.opcode_pos,
            opcode: op::name(self.opcode),
            problem,
        }
    }

    fn ambiguous(&self, why: String) -> PickleError {
        PickleError::Ambiguous {
            offset: self.opcode_pos,
            opcode: op::name(self.opcode),
            why,
        }
    }

    /// Items added to a value pickles never add items to.
    fn mutation(&self, kind: &str, what: &str) -> PickleError {
        let why = if kind == "global" {
            format!(
                "adds items to a global: CPython {what} on the class or module (monkey-patching)"
            )
        } else {
            format!("adds items to a {kind}: CPython {what}, which no pickler relies on")
        };
        self.ambiguous(why)
    }

    fn unsupported(&self, why: &'static str) -> PickleError {
        PickleError::Unsupported {
            offset: self.opcode_pos,
            opcode: op::name(self.opcode),
            why,
        }
    }

    fn limit(&self, what: &'static str, limit: usize) -> PickleError {
        PickleError::Limit {
            offset: self.opcode_pos,
            what,
            limit,
        }
    }
}

/// `LONG1`/`LONG4` payload: little-endian two's complement. Small values become `Int`.
fn long_value(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Int(0);
    }
    if bytes.len() <= 8 {
        let negative = bytes[bytes.len() - 1] & 0x80 != 0;
        let mut buf = if negative { [0xffu8; 8] } else { [0u8; 8] };
        buf[..bytes.len()].copy_from_slice(bytes);
        return Value::Int(i64::from_le_bytes(buf));
    }
    Value::BigInt(bytes.to_vec())
}

/// The value of canonical decimal digits (with a sign), of any size.
fn decimal_to_value(negative: bool, body: &[u8]) -> Option<Value> {
    let body = std::str::from_utf8(body).ok()?;
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Ok(v) = body.parse::<i64>() {
        return Some(Value::Int(if negative { -v } else { v }));
    }
    // Magnitude as little-endian base-256 digits.
    let mut magnitude: Vec<u8> = vec![0];
    for digit in body.bytes() {
        let mut carry = u32::from(digit - b'0');
        for byte in magnitude.iter_mut() {
            let v = u32::from(*byte) * 10 + carry;
            *byte = (v & 0xff) as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            magnitude.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    magnitude.push(0); // room for the sign bit
    if negative {
        let mut carry = 1u16;
        for byte in magnitude.iter_mut() {
            let v = u16::from(!*byte) + carry;
            *byte = (v & 0xff) as u8;
            carry = v >> 8;
        }
    }
    Some(long_value(&minimal_twos_complement(magnitude)))
}

/// Drops redundant sign-extension bytes from little-endian two's complement.
pub(crate) fn minimal_twos_complement(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.len() > 1 {
        let last = bytes[bytes.len() - 1];
        let prev_sign = bytes[bytes.len() - 2] & 0x80;
        if (last == 0 && prev_sign == 0) || (last == 0xff && prev_sign != 0) {
            bytes.pop();
        } else {
            break;
        }
    }
    bytes
}

/// A Python 2 `str` as torch loads it: UTF-8 when it is valid, latin-1 otherwise.
fn python2_str(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// The body of a protocol 0 `STRING` argument: a quoted Python 2 literal with escapes.
fn unquote_python2_string(line: &[u8]) -> Option<Vec<u8>> {
    let quote = *line.first()?;
    if (quote != b'\'' && quote != b'"') || line.len() < 2 || line[line.len() - 1] != quote {
        return None;
    }
    let body = &line[1..line.len() - 1];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let e = *body.get(i)?;
        i += 1;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'\\' | b'\'' | b'"' => out.push(e),
            b'\n' => {}
            b'x' => {
                let hex = std::str::from_utf8(body.get(i..i + 2)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match body.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

/// Protocol 0 `UNICODE` text: latin-1 bytes with `\uXXXX` and `\UXXXXXXXX` escapes.
fn decode_raw_unicode_escape(line: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b == b'\\' && matches!(line.get(i + 1), Some(b'u') | Some(b'U')) {
            let width = if line[i + 1] == b'u' { 4 } else { 8 };
            let hex = std::str::from_utf8(line.get(i + 2..i + 2 + width)?).ok()?;
            out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
            i += 2 + width;
        } else {
            out.push(char::from(b));
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(bytes: &[u8]) -> (Graph, NodeId) {
        let p = read(bytes).expect("valid pickle");
        (p.graph, p.root)
    }

    fn ambiguous(bytes: &[u8]) -> String {
        match read(bytes) {
            Err(e @ PickleError::Ambiguous { .. }) => e.to_string(),
            other => panic!("expected an ambiguous pickle, got {other:?}"),
        }
    }

    /// `FRAME` of `body`, as Python's framer writes it.
    fn frame(body: &[u8]) -> Vec<u8> {
        let mut out = vec![op::FRAME];
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn binbytes_straddling_a_frame_end_is_ambiguous() {
        // The frame ends after 3 of BINBYTES's 5 payload bytes. CPython reads the rest from
        // after the frame when loading from a stream (BytesIO, as torch reads data.pkl).
        let mut bytes = b"\x80\x04".to_vec();
        bytes.extend(frame(b"B\x05\x00\x00\x00abc"));
        bytes.extend_from_slice(b"de.");
        assert!(ambiguous(&bytes).contains("past the end of its FRAME"));
    }

    #[test]
    fn length_field_straddling_a_frame_end_is_ambiguous() {
        let mut bytes = b"\x80\x04".to_vec();
        bytes.extend(frame(b"B\x03\x00"));
        bytes.extend_from_slice(b"\x00\x00abc.");
        ambiguous(&bytes);
    }

    #[test]
    fn binbytes_length_straddling_a_frame_end_cannot_hide_a_payload() {
        // Issue 26: read contiguously, BINBYTES's length is 8 and swallows the payload up to a
        // STOP (clean); CPython, loading from a file with a frame larger than its peek buffer,
        // takes all four length bytes from after the frame (length 0) and runs os.system.
        let mut body = b"N0".repeat(5000);
        body.extend_from_slice(b"B\x08\x00");
        let mut bytes = b"\x80\x04".to_vec();
        bytes.extend(frame(&body));
        bytes.extend_from_slice(b"\x00\x00\x00\x000\x8c\x0aabc.xyzabc0");
        bytes.extend_from_slice(b"\x8c\x02os\x8c\x06system\x93\x8c\x02id\x85R.");
        ambiguous(&bytes);
    }

    #[test]
    fn frame_past_the_end_of_the_input_is_truncated() {
        // CPython reads the whole frame before running it, so it fails here (as torch does),
        // even though the opcodes inside would read to STOP.
        let mut bytes = b"\x80\x04\x95".to_vec();
        bytes.extend_from_slice(&100u64.to_le_bytes());
        bytes.extend_from_slice(b"K\x01.");
        assert!(matches!(read(&bytes), Err(PickleError::Truncated { .. })));
    }

    #[test]
    fn frame_inside_a_frame_is_ambiguous() {
        let mut inner = frame(b"K\x01.");
        inner.insert(0, op::NONE);
        inner.insert(1, op::POP);
        let mut bytes = b"\x80\x04".to_vec();
        bytes.extend(frame(&inner));
        assert!(ambiguous(&bytes).contains("inside the previous frame"));
    }

    #[test]
    fn stop_before_its_frame_ends_is_ambiguous() {
        let mut bytes = b"\x80\x04".to_vec();
        bytes.extend(frame(b"K\x01.K\x02."));
        ambiguous(&bytes);
    }

    #[test]
    fn consecutive_frames_and_unframed_opcodes_read() {
        // Python's framer: frames back to back, a large BINBYTES outside any frame.
        let mut bytes = b"\x80\x04".to_vec();
        bytes.extend(frame(b"]\x94(K\x01"));
        bytes.extend_from_slice(b"C\x02ab");
        bytes.extend(frame(b"K\x02e."));
        let (g, r) = root(&bytes);
        let Value::List(items) = g.get(r) else {
            panic!("list")
        };
        assert_eq!(items.len(), 3);
    }

    #[test]
    fn non_canonical_int_text_is_ambiguous() {
        for text in [&b"0x10"[..], b"1_000", b"010", b" 12 ", b"+1", b"5\x00x"] {
            let mut bytes = b"I".to_vec();
            bytes.extend_from_slice(text);
            bytes.extend_from_slice(b"\n.");
            ambiguous(&bytes);
        }
    }

    #[test]
    fn int_text_cpython_refuses_is_malformed() {
        assert!(matches!(
            read(b"I1__0\n."),
            Err(PickleError::Malformed { .. })
        ));
        assert!(matches!(
            read(b"I0_10\n."),
            Err(PickleError::Malformed { .. })
        ));
    }

    #[test]
    fn non_canonical_long_text_is_ambiguous() {
        ambiguous(b"L0x10L\n.");
        ambiguous(b"L1_0L\n.");
        let (g, r) = root(b"L-12L\n.");
        assert_eq!(g.int(r), Some(-12));
    }

    #[test]
    fn memo_index_with_underscores_is_ambiguous() {
        // CPython reads `1_0` as memo 10: a reader taking 1 or refusing would differ.
        ambiguous(b"Np1_0\n0g1_0\n.");
        ambiguous(b"Np007\n.");
        let (g, r) = root(b"Np10\n0g10\n.");
        assert_eq!(g.get(r), &Value::None);
    }

    #[test]
    fn build_on_a_global_is_ambiguous() {
        // CPython would set attributes on os.path (monkey-patching) or call a __setstate__.
        let partial = read_lenient(b"cos\npath\n}b.", Limits::default());
        assert!(matches!(partial.end, Err(PickleError::Ambiguous { .. })));
        assert_eq!(partial.globals.len(), 1);
    }

    #[test]
    fn second_build_on_one_object_is_ambiguous() {
        let bytes = b"\x80\x02ccollections\nOrderedDict\n)R}bNb.";
        assert!(ambiguous(bytes).contains("second BUILD"));
    }

    #[test]
    fn build_on_a_plain_value_is_ambiguous() {
        ambiguous(b"\x80\x02]Nb.");
    }

    #[test]
    fn extension_codes_are_ambiguous() {
        for bytes in [
            &b"\x80\x02\x82\x01."[..],
            b"\x80\x02\x83\x01\x02.",
            b"\x80\x02\x84\x01\x00\x00\x00.",
        ] {
            assert!(ambiguous(bytes).contains("copyreg extension code"));
        }
        assert!(matches!(
            read(b"\x80\x02\x82\x00."),
            Err(PickleError::Malformed { .. })
        ));
    }

    #[test]
    fn extension_registered_earlier_reports_its_global() {
        // copyreg.add_extension('os', 'system', 7), then EXT1 7: CPython resolves os.system.
        let bytes = b"\x80\x02ccopyreg\nadd_extension\nX\x02\x00\x00\x00osX\x06\x00\x00\x00systemK\x07\x87R0\x82\x07N\x85R.";
        let partial = read_lenient(bytes, Limits::default());
        assert!(matches!(partial.end, Err(PickleError::Ambiguous { .. })));
        let names: Vec<String> = partial
            .globals
            .iter()
            .filter_map(|&id| partial.graph.global(id))
            .map(|g| format!("{}.{}", g.module, g.name))
            .collect();
        assert_eq!(names, ["copyreg.add_extension", "os.system"]);
    }

    #[test]
    fn readonly_buffer_is_ambiguous_and_next_buffer_unsupported() {
        ambiguous(b"\x80\x05C\x01a\x98.");
        assert!(matches!(
            read(b"\x80\x05\x97."),
            Err(PickleError::Unsupported { .. })
        ));
    }

    #[test]
    fn items_added_to_a_global_are_ambiguous() {
        assert!(ambiguous(b"cos\nenviron\nVLD_PRELOAD\nVx\ns.").contains("monkey-patching"));
        ambiguous(b"cbuiltins\nlist\n(K\x01e.");
    }

    #[test]
    fn empty_batches_are_no_ops_on_any_target() {
        // CPython returns before looking at the target when a batch is empty.
        let (g, r) = root(b"K\x05(e(u.");
        assert_eq!(g.int(r), Some(5));
    }

    #[test]
    fn batch_target_must_lie_above_the_outer_mark() {
        // CPython: "unexpected MARK found".
        assert!(read(b"]((K\x01e1.").is_err());
    }

    #[test]
    fn stack_global_name_with_a_newline_is_reported_then_refused() {
        let partial = read_lenient(
            b"\x80\x04\x8c\x02os\x8c\x07sys\ntem\x93.",
            Limits::default(),
        );
        assert!(matches!(partial.end, Err(PickleError::Ambiguous { .. })));
        assert_eq!(partial.globals.len(), 1);
    }

    #[test]
    fn reads_protocol2_dict_of_scalars() {
        // pickle.dumps({'a': 1, 'b': 2.5, 'c': None, 'd': True}, protocol=2)
        let bytes = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01K\x01X\x01\x00\x00\x00bq\x02G@\x04\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00cq\x03NX\x01\x00\x00\x00dq\x04\x88u.";
        let (g, r) = root(bytes);
        assert_eq!(g.lookup(r, "a").and_then(|v| g.int(v)), Some(1));
        assert_eq!(
            g.lookup(r, "b").map(|v| g.get(v).clone()),
            Some(Value::Float(2.5))
        );
        assert_eq!(
            g.lookup(r, "c").map(|v| g.get(v).clone()),
            Some(Value::None)
        );
        assert_eq!(
            g.lookup(r, "d").map(|v| g.get(v).clone()),
            Some(Value::Bool(true))
        );
    }

    #[test]
    fn memo_references_share_one_node() {
        // x = [1]; pickle.dumps([x, x], protocol=2)
        let bytes = b"\x80\x02]q\x00(]q\x01K\x01ah\x01e.";
        let (g, r) = root(bytes);
        let Value::List(items) = g.get(r) else {
            panic!("list")
        };
        assert_eq!(items[0], items[1]);
    }

    #[test]
    fn reads_protocol0_text_forms() {
        // pickle.dumps({'k': [1, 'x', 2.5, 10**30]}, protocol=0)
        let bytes =
            b"(dp0\nVk\np1\n(lp2\nI1\naVx\np3\naF2.5\naL1000000000000000000000000000000L\nas.";
        let (g, r) = root(bytes);
        let list = g.lookup(r, "k").expect("key k");
        let Value::List(items) = g.get(list) else {
            panic!("list")
        };
        assert_eq!(g.int(items[0]), Some(1));
        assert_eq!(g.str(items[1]), Some("x"));
        assert_eq!(g.get(items[2]), &Value::Float(2.5));
        let Value::BigInt(bytes) = g.get(items[3]) else {
            panic!("bigint")
        };
        // 10**30 little-endian
        let expected: Vec<u8> = {
            let mut v = 10u128.pow(30).to_le_bytes().to_vec();
            v = minimal_twos_complement(v);
            v
        };
        assert_eq!(bytes, &expected);
    }

    #[test]
    fn reads_protocol4_stack_global_and_frames() {
        // pickle.dumps(collections.OrderedDict(a=1), protocol=4)
        let bytes = b"\x80\x04\x95%\x00\x00\x00\x00\x00\x00\x00\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94\x8c\x01a\x94K\x01s.";
        let (g, r) = root(bytes);
        let (global, _) = g.reduce_of_global(r).expect("reduce");
        assert_eq!(global, &Global::new("collections", "OrderedDict"));
        assert_eq!(g.lookup(r, "a").and_then(|v| g.int(v)), Some(1));
    }

    #[test]
    fn python2_byte_strings_decode_as_latin1_when_not_utf8() {
        // SHORT_BINSTRING 'caf\xe9'
        let bytes = b"\x80\x02U\x04caf\xe9.";
        let (g, r) = root(bytes);
        assert_eq!(g.str(r), Some("café"));
    }

    #[test]
    fn negative_long1_is_an_int() {
        let bytes = b"\x80\x02\x8a\x02\x00\xff.";
        let (g, r) = root(bytes);
        assert_eq!(g.int(r), Some(-256));
    }

    #[test]
    fn truncated_input_is_an_error() {
        let bytes = b"\x80\x02X\x10\x00\x00\x00abc";
        assert!(matches!(read(bytes), Err(PickleError::Truncated { .. })));
    }

    #[test]
    fn unknown_memo_entry_is_an_error() {
        assert!(matches!(
            read(b"\x80\x02h\x05."),
            Err(PickleError::Malformed { .. })
        ));
    }

    #[test]
    fn huge_declared_lengths_do_not_allocate() {
        assert!(read(b"\x80\x02X\xff\xff\xff\xff").is_err());
        assert!(read(b"\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\xff").is_err());
        assert!(read(b"\x80\x02\x8b\xff\xff\xff\x7f").is_err());
    }

    #[test]
    fn memo_limit_is_enforced() {
        let mut bytes = b"\x80\x02N".to_vec();
        for i in 0..20u32 {
            bytes.push(op::LONG_BINPUT);
            bytes.extend_from_slice(&i.to_le_bytes());
        }
        bytes.push(op::STOP);
        let limits = Limits {
            max_memo: 10,
            ..Limits::default()
        };
        assert!(matches!(
            read_with_limits(&bytes, limits),
            Err(PickleError::Limit { .. })
        ));
    }

    #[test]
    fn reports_bytes_consumed_for_concatenated_pickles() {
        let bytes = b"\x80\x02K\x01.\x80\x02K\x02.";
        let first = read(bytes).expect("first");
        assert_eq!(first.consumed, 5);
        let second = read(&bytes[first.consumed..]).expect("second");
        assert_eq!(second.graph.int(second.root), Some(2));
    }
}
