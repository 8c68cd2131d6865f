//! Inlining: runs the top module's `forward` symbolically, following every submodule call
//! (`(conv1).forward(x, )`, `getattr(self, "0")`) through the module objects of `data.pkl`,
//! and records each `torch.*` / `ops.*` / `int(…)` call in program order. Parameters and
//! buffers become [`Operand::Stored`] with their fully-qualified names (`layer1.0.conv1.weight`).

use std::collections::HashMap;
use std::rc::Rc;

use ckpt_formats::torch::tensor::TensorRef;
use ckpt_pickle::{Constructor, NodeId, Value};

use super::archive::ScriptArchive;
use super::parse::{Expr, Method, Stmt};
use super::ScriptError;

/// The deepest chain of module calls followed (real models nest a dozen levels).
pub const MAX_CALL_DEPTH: usize = 128;
/// The most calls one program may record.
pub const MAX_CALLS: usize = 100_000;
/// The longest module path (`layer1.0.conv1`; real ones are a few dozen characters).
pub const MAX_PATH: usize = 512;
/// The deepest nesting of expressions, counted across module calls (each call adds one).
pub const MAX_EVAL_DEPTH: usize = 200;
/// The most statements run in all (a method calling itself twice must not run for ever).
pub const MAX_STEPS: usize = 1_000_000;

/// A value computed by a recorded call (or a graph input): an index into the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueId(pub usize);

/// An argument of a recorded call.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Value(ValueId),
    /// A parameter or buffer, by fully-qualified name.
    Stored(String),
    /// `CONSTANTS.c<i>`.
    Constant(usize),
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    None,
    List(Vec<Operand>),
}

/// One module call on the way to a recorded call, as messages show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The module's path from the top (`layer1.0.conv1`; empty for the top module).
    pub path: String,
    /// Its class without `__torch__.` and mangling (`torch.nn.modules.conv.Conv2d`).
    pub class: String,
    /// The code record and method running, and the line being run.
    pub file: String,
    pub method: String,
    pub line: usize,
}

/// A module method being run: which one, and where its caller called it. Every call it
/// records shares it, so a site costs one pointer whatever the depth.
#[derive(Debug, PartialEq)]
pub struct Scope {
    path: String,
    class: String,
    file: String,
    method: String,
    /// The calling scope and the line of the call in it.
    caller: Option<(Rc<Scope>, usize)>,
}

/// Where a call is: its scope and line.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    scope: Rc<Scope>,
    line: usize,
}

impl Site {
    /// The module calls leading here, outermost first, each with the line it is at; the
    /// last one is the call itself (never empty).
    pub fn frames(&self) -> Vec<Frame> {
        let mut frames = Vec::new();
        let mut at = Some((&self.scope, self.line));
        while let Some((scope, line)) = at {
            frames.push(Frame {
                path: scope.path.clone(),
                class: scope.class.clone(),
                file: scope.file.clone(),
                method: scope.method.clone(),
                line,
            });
            at = scope.caller.as_ref().map(|(s, l)| (s, *l));
        }
        frames.reverse();
        frames
    }
}

/// A recorded call: `op` as written (`torch._convolution`, `ops.prim.NumToTensor`, `int`).
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub op: String,
    pub args: Vec<Operand>,
    pub kwargs: Vec<(String, Operand)>,
    pub output: ValueId,
    pub site: Site,
}

/// The op name of the calls that take item `i` of `n` out of a list an op returned
/// (`x1, x2, = torch.chunk(x, 2, 1)`): arguments `[list, Int(i), Int(n)]`.
pub const LIST_UNPACK: &str = "ops.prim.ListUnpack";

/// The op name of the calls that read a value as a number (`annotate(number, x)` in traced
/// code, where torch converted a tensor to a scalar): arguments `[value]`.
pub const ANNOTATE_NUMBER: &str = "annotate(number)";

/// The op name of the calls of a scripted function (`_0 = __torch__.kornia.filters.canny.
/// _hysteresis_loop` then `_0(edges, kernels, )`: code `torch.jit.script` compiled, whose
/// loops and branches a trace keeps): arguments `[Str(function), operands…]`. The
/// conversion refuses its result where an output needs it.
pub const SCRIPTED_CALL: &str = "scripted function";

/// The scalar types of `annotate(T, value)` that convert a tensor to a number.
const SCALAR_TYPES: [&str; 3] = ["number", "int", "float"];

/// What the top `forward` returns.
#[derive(Clone, Debug, PartialEq)]
pub enum Returned {
    One(Operand),
    /// A tuple of values (`return (x, y)`), in order.
    Tuple(Vec<Operand>),
    /// A dict with string keys (`return {"out": x, "aux": y}`), in order.
    Dict(Vec<(String, Operand)>),
}

/// The flat program. Invariant: every [`ValueId`] an operand uses is an input or the
/// output of an earlier call, and every [`Operand::Stored`] name is a key of `tensors`.
#[derive(Debug)]
pub struct Inlined {
    pub inputs: Vec<ValueId>,
    /// The top `forward`'s parameter names (without `self`), one per input.
    pub params: Vec<String>,
    pub calls: Vec<Call>,
    pub output: Result<Returned, String>,
    pub tensors: HashMap<String, TensorRef>,
}

/// A module object of `data.pkl`.
#[derive(Clone, Debug)]
struct ModuleRef {
    node: NodeId,
    path: String,
    qualname: String,
}

/// What a name holds while a method runs.
#[derive(Clone, Debug)]
enum Local {
    Module(ModuleRef),
    Operand(Operand),
    Tuple(Vec<Local>),
    /// A dict literal with string keys, in order.
    Dict(Vec<(String, Local)>),
    /// A scripted function (`__torch__.kornia.filters.canny._hysteresis_loop`), by name.
    Function(String),
}

struct Inliner<'a> {
    archive: &'a mut ScriptArchive,
    calls: Vec<Call>,
    tensors: HashMap<String, TensorRef>,
    next_value: usize,
    /// The methods running, innermost last, each with the line it is at.
    stack: Vec<(Rc<Scope>, usize)>,
    /// Current expression nesting, bounded by [`MAX_EVAL_DEPTH`].
    depth: usize,
    /// Statements run so far, bounded by [`MAX_STEPS`].
    steps: usize,
}

/// Inlines the top module's `forward`.
pub fn inline(archive: &mut ScriptArchive) -> Result<Inlined, ScriptError> {
    let root = archive.ckpt.root;
    let top = module_ref(archive, root, String::new()).ok_or_else(|| {
        ScriptError::archive("`data.pkl` does not hold a TorchScript module object at its top")
    })?;
    let mut inliner = Inliner {
        archive,
        calls: Vec::new(),
        tensors: HashMap::new(),
        next_value: 0,
        stack: Vec::new(),
        depth: 0,
        steps: 0,
    };
    let class = inliner.archive.class(&top.qualname)?;
    let method = class
        .def()
        .method(&class.file, "forward")
        .ok_or_else(|| ScriptError::archive(format!("`{}` has no `forward`", top.qualname)))??
        .clone();
    let inputs: Vec<ValueId> = method.params.iter().map(|_| inliner.fresh()).collect();
    let args = inputs
        .iter()
        .map(|&v| Local::Operand(Operand::Value(v)))
        .collect();
    let result = inliner.run(&top, &class.file, &method, args)?;
    let output = returned(result);
    Ok(Inlined {
        inputs,
        params: method.params.clone(),
        calls: inliner.calls,
        output,
        tensors: inliner.tensors,
    })
}

/// What `forward`'s result is, when it is a value, or a flat tuple or dict of values.
fn returned(result: Local) -> Result<Returned, String> {
    let operand = |local: Local| match local {
        Local::Operand(op) => Ok(op),
        Local::Tuple(items) => Err(format!("a nested tuple of {} values", items.len())),
        Local::Dict(items) => Err(format!("a nested dict of {} values", items.len())),
        Local::Module(m) => Err(format!("the module `{}`", m.path)),
        Local::Function(f) => Err(format!("the scripted function `{f}`")),
    };
    match result {
        Local::Tuple(items) => Ok(Returned::Tuple(
            items.into_iter().map(operand).collect::<Result<_, _>>()?,
        )),
        Local::Dict(items) => Ok(Returned::Dict(
            items
                .into_iter()
                .map(|(k, v)| Ok((k, operand(v)?)))
                .collect::<Result<_, String>>()?,
        )),
        other => operand(other).map(Returned::One),
    }
}

/// The class of a `__torch__.*` module object, as `module.Name`.
fn module_ref(archive: &ScriptArchive, node: NodeId, path: String) -> Option<ModuleRef> {
    let graph = &archive.ckpt.graph;
    let Value::Object(object) = graph.get(node) else {
        return None;
    };
    let class = match object.constructor {
        Constructor::NewObj { class, .. } => class,
        _ => return None,
    };
    let global = graph.global(class)?;
    (global.module == "__torch__" || global.module.starts_with("__torch__.")).then(|| ModuleRef {
        node,
        path,
        qualname: format!("{}.{}", global.module, global.name),
    })
}

/// `__torch__.torch.nn.modules.conv.___torch_mangle_3.Conv2d` → `torch.nn.modules.conv.Conv2d`.
pub fn plain_class(qualname: &str) -> String {
    qualname
        .split('.')
        .filter(|p| *p != "__torch__" && !p.starts_with("___torch_mangle_"))
        .collect::<Vec<_>>()
        .join(".")
}

impl Inliner<'_> {
    fn fresh(&mut self) -> ValueId {
        self.next_value += 1;
        ValueId(self.next_value - 1)
    }

    fn error(&self, what: impl Into<String>) -> ScriptError {
        match self.stack.last() {
            Some((f, line)) => {
                let mut what = what.into();
                if !f.path.is_empty() {
                    what.push_str(&format!(" (in module `{}`, {})", f.path, f.class));
                }
                ScriptError::at(&f.file, *line, what)
            }
            None => ScriptError::archive(what),
        }
    }

    /// Runs `method` of `module` on `args`, returning what it returns.
    fn run(
        &mut self,
        module: &ModuleRef,
        file: &str,
        method: &Method,
        args: Vec<Local>,
    ) -> Result<Local, ScriptError> {
        if self.stack.len() >= MAX_CALL_DEPTH {
            return Err(self.error(format!("module calls nest deeper than {MAX_CALL_DEPTH}")));
        }
        if args.len() != method.params.len() {
            return Err(self.error(format!(
                "`{}` of {} takes {} arguments, {} given",
                method.name,
                plain_class(&module.qualname),
                method.params.len(),
                args.len()
            )));
        }
        let scope = Scope {
            path: module.path.clone(),
            class: plain_class(&module.qualname),
            file: file.to_owned(),
            method: method.name.clone(),
            caller: self.stack.last().map(|(s, line)| (s.clone(), *line)),
        };
        self.stack.push((Rc::new(scope), method.line));
        let mut env: HashMap<String, Local> = method.params.iter().cloned().zip(args).collect();
        env.insert("self".into(), Local::Module(module.clone()));
        let mut result = None;
        for stmt in &method.body {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                return Err(
                    self.error(format!("the program runs more than {MAX_STEPS} statements"))
                );
            }
            match stmt {
                Stmt::Assign {
                    targets,
                    value,
                    line,
                } => {
                    self.set_line(*line);
                    let result = self.eval(&env, value)?;
                    self.assign(&mut env, targets, result, value)?;
                }
                Stmt::Return { value, line } => {
                    self.set_line(*line);
                    result = Some(self.eval(&env, value)?);
                }
            }
        }
        self.stack.pop();
        // The parser guarantees a body ends with `return`.
        result.ok_or_else(|| ScriptError::at(file, method.line, "the method has no `return`"))
    }

    fn set_line(&mut self, line: usize) {
        if let Some((_, at)) = self.stack.last_mut() {
            *at = line;
        }
    }

    fn assign(
        &mut self,
        env: &mut HashMap<String, Local>,
        targets: &[String],
        value: Local,
        expr: &Expr,
    ) -> Result<(), ScriptError> {
        match (targets, value) {
            ([one], value) => {
                env.insert(one.clone(), value);
            }
            (many, Local::Tuple(items)) if many.len() == items.len() => {
                env.extend(many.iter().cloned().zip(items));
            }
            (many, Local::Tuple(items)) => {
                return Err(self.error(format!(
                    "unpacking {} values into {} names",
                    items.len(),
                    many.len()
                )))
            }
            (many, Local::Operand(list @ Operand::Value(_))) => {
                // A list an op returned (`chunk`, `split`, `unbind`): one call per item,
                // which the conversion checks against the list's length.
                for (i, name) in many.iter().enumerate() {
                    let item = self.record(
                        LIST_UNPACK.to_owned(),
                        vec![
                            list.clone(),
                            Operand::Int(i as i64),
                            Operand::Int(many.len() as i64),
                        ],
                        Vec::new(),
                    )?;
                    env.insert(name.clone(), item);
                }
            }
            (many, _) => {
                let source = match expr {
                    Expr::Call { func, .. } => func.dotted().map(|f| format!("`{f}`")),
                    _ => None,
                };
                return Err(self.error(format!(
                    "{} is unpacked into {} names, but it is not a tuple or a list an op returned",
                    source.unwrap_or_else(|| "a single value".into()),
                    many.len()
                )));
            }
        }
        Ok(())
    }

    fn eval(&mut self, env: &HashMap<String, Local>, expr: &Expr) -> Result<Local, ScriptError> {
        if self.depth >= MAX_EVAL_DEPTH {
            return Err(self.error(format!(
                "expressions and module calls nest deeper than {MAX_EVAL_DEPTH}"
            )));
        }
        self.depth += 1;
        let result = self.eval_inner(env, expr);
        self.depth -= 1;
        result
    }

    fn eval_inner(
        &mut self,
        env: &HashMap<String, Local>,
        expr: &Expr,
    ) -> Result<Local, ScriptError> {
        Ok(match expr {
            Expr::Name(n) => env
                .get(n)
                .cloned()
                .ok_or_else(|| self.error(format!("name `{n}` is used before it is assigned")))?,
            Expr::Int(i) => Local::Operand(Operand::Int(*i)),
            Expr::Float(f) => Local::Operand(Operand::Float(*f)),
            Expr::Str(s) => Local::Operand(Operand::Str(s.clone())),
            Expr::Bool(b) => Local::Operand(Operand::Bool(*b)),
            Expr::None => Local::Operand(Operand::None),
            Expr::List(items) => {
                let items = items
                    .iter()
                    .map(|e| self.eval_operand(env, e))
                    .collect::<Result<_, _>>()?;
                Local::Operand(Operand::List(items))
            }
            Expr::Tuple(items) => Local::Tuple(
                items
                    .iter()
                    .map(|e| self.eval(env, e))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Dict(entries) => Local::Dict(
                entries
                    .iter()
                    .map(|(k, v)| match k {
                        Expr::Str(key) => Ok((key.clone(), self.eval(env, v)?)),
                        _ => Err(self.error("a dict literal with a key that is not a string")),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Attr(base, name) => {
                if matches!(&**base, Expr::Name(b) if b == "CONSTANTS" && !env.contains_key(b)) {
                    let index = name
                        .strip_prefix('c')
                        .and_then(|i| i.parse::<usize>().ok())
                        .ok_or_else(|| {
                            self.error(format!("`CONSTANTS.{name}` is not a constant name"))
                        })?;
                    return Ok(Local::Operand(Operand::Constant(index)));
                }
                if let Some(function) = expr
                    .dotted()
                    .filter(|d| d.starts_with("__torch__.") && !env.contains_key("__torch__"))
                {
                    return Ok(Local::Function(function));
                }
                match self.eval(env, base)? {
                    Local::Module(m) => self.attribute(&m, name)?,
                    _ => {
                        return Err(self.error(format!("`.{name}` of a value that is not a module")))
                    }
                }
            }
            Expr::Index(..) => {
                return Err(self.error("indexing (`x[…]`) is not supported in traced code"))
            }
            Expr::Call { func, args, kwargs } => self.call(env, func, args, kwargs)?,
        })
    }

    fn eval_operand(
        &mut self,
        env: &HashMap<String, Local>,
        expr: &Expr,
    ) -> Result<Operand, ScriptError> {
        match self.eval(env, expr)? {
            Local::Operand(op) => Ok(op),
            Local::Module(m) => Err(self.error(format!("module `{}` is used as a value", m.path))),
            Local::Tuple(_) => Err(self.error("a tuple is used as an argument")),
            Local::Dict(_) => Err(self.error("a dict is used as an argument")),
            Local::Function(f) => {
                Err(self.error(format!("the scripted function `{f}` is used as a value")))
            }
        }
    }

    fn call(
        &mut self,
        env: &HashMap<String, Local>,
        func: &Expr,
        args: &[Expr],
        kwargs: &[(String, Expr)],
    ) -> Result<Local, ScriptError> {
        if let Expr::Attr(base, method) = func {
            if let Local::Module(m) = self.eval_receiver(env, base)? {
                if !kwargs.is_empty() {
                    return Err(self.error("keyword arguments to a module method"));
                }
                let values = args
                    .iter()
                    .map(|a| self.eval(env, a))
                    .collect::<Result<_, _>>()?;
                return self.call_method(&m, method, values);
            }
        }
        let name = func.dotted().ok_or_else(|| {
            self.error("a call of something that is not a name or a module method")
        })?;
        let function = match env.get(&name) {
            Some(Local::Function(function)) => Some(function.clone()),
            None if name.starts_with("__torch__.") && !env.contains_key("__torch__") => {
                Some(name.clone())
            }
            _ => None,
        };
        if let Some(function) = function {
            let mut operands = vec![Operand::Str(function)];
            for a in args {
                operands.push(self.eval_operand(env, a)?);
            }
            let kwargs = kwargs
                .iter()
                .map(|(k, e)| Ok((k.clone(), self.eval_operand(env, e)?)))
                .collect::<Result<_, ScriptError>>()?;
            return self.record(SCRIPTED_CALL.to_owned(), operands, kwargs);
        }
        match name.as_str() {
            "getattr" => {
                let (Some(Expr::Str(attr)), 2, true) = (args.get(1), args.len(), kwargs.is_empty())
                else {
                    return Err(self.error("`getattr` takes a module and a string"));
                };
                match self.eval(env, &args[0])? {
                    Local::Module(m) => self.attribute(&m, attr),
                    _ => Err(self.error("`getattr` of a value that is not a module")),
                }
            }
            "annotate" => match args {
                // A tensor read as a number (`annotate(number, stride)` of a 0-d tensor):
                // recorded, so the conversion can read a constant's value back.
                [Expr::Name(ty), value]
                    if kwargs.is_empty() && SCALAR_TYPES.contains(&ty.as_str()) =>
                {
                    match self.eval(env, value)? {
                        Local::Operand(op @ (Operand::Value(_) | Operand::Constant(_))) => {
                            self.record(ANNOTATE_NUMBER.to_owned(), vec![op], Vec::new())
                        }
                        other => Ok(other),
                    }
                }
                [_, value] if kwargs.is_empty() => self.eval(env, value),
                _ => Err(self.error("`annotate` takes a type and a value")),
            },
            _ if name.starts_with("torch.")
                || name.starts_with("ops.")
                || matches!(name.as_str(), "int" | "float" | "bool") =>
            {
                let args = args
                    .iter()
                    .map(|a| self.eval_operand(env, a))
                    .collect::<Result<_, _>>()?;
                let kwargs = kwargs
                    .iter()
                    .map(|(k, e)| Ok((k.clone(), self.eval_operand(env, e)?)))
                    .collect::<Result<_, ScriptError>>()?;
                self.record(name, args, kwargs)
            }
            _ => Err(self.error(format!(
                "call of `{name}` is not supported (not a torch op or module method)"
            ))),
        }
    }

    /// Records a call of `op` at the current line; its output as a local.
    fn record(
        &mut self,
        op: String,
        args: Vec<Operand>,
        kwargs: Vec<(String, Operand)>,
    ) -> Result<Local, ScriptError> {
        if self.calls.len() >= MAX_CALLS {
            return Err(self.error(format!("the program has more than {MAX_CALLS} calls")));
        }
        let Some((scope, line)) = self.stack.last() else {
            return Err(self.error("a call outside any method"));
        };
        let site = Site {
            scope: scope.clone(),
            line: *line,
        };
        let output = self.fresh();
        self.calls.push(Call {
            op,
            args,
            kwargs,
            output,
            site,
        });
        Ok(Local::Operand(Operand::Value(output)))
    }

    /// The receiver of `x.method(…)`: a module, or anything else (then not a method call).
    fn eval_receiver(
        &mut self,
        env: &HashMap<String, Local>,
        base: &Expr,
    ) -> Result<Local, ScriptError> {
        match base {
            Expr::Name(n) if !env.contains_key(n) => Ok(Local::Operand(Operand::None)),
            Expr::Attr(..)
                if base
                    .dotted()
                    .is_some_and(|d| !env.contains_key(d.split('.').next().unwrap_or(""))) =>
            {
                Ok(Local::Operand(Operand::None))
            }
            _ => self.eval(env, base),
        }
    }

    fn call_method(
        &mut self,
        module: &ModuleRef,
        method: &str,
        args: Vec<Local>,
    ) -> Result<Local, ScriptError> {
        let class = self.archive.class(&module.qualname)?;
        let Some(def) = class.def().method(&class.file, method) else {
            return Err(self.error(format!(
                "{} (module `{}`) has no method `{method}`",
                plain_class(&module.qualname),
                module.path
            )));
        };
        self.run(module, &class.file, def?, args)
    }

    /// Attribute `name` of `module`: a submodule, a parameter/buffer, or a scalar.
    fn attribute(&mut self, module: &ModuleRef, name: &str) -> Result<Local, ScriptError> {
        let graph = &self.archive.ckpt.graph;
        let state = match graph.get(module.node) {
            Value::Object(o) => o.state,
            _ => None,
        };
        let node = state.and_then(|s| graph.lookup(s, name)).ok_or_else(|| {
            self.error(format!(
                "module `{}` has no attribute `{name}` in `data.pkl`",
                module.path
            ))
        })?;
        let path = if module.path.is_empty() {
            name.to_owned()
        } else {
            format!("{}.{name}", module.path)
        };
        if path.len() > MAX_PATH {
            return Err(self.error(format!(
                "module path `{}…` is longer than {MAX_PATH} bytes",
                path.chars().take(64).collect::<String>()
            )));
        }
        if let Some(tensor) = self.archive.tensor_at(node) {
            self.tensors
                .entry(path.clone())
                .or_insert_with(|| tensor.clone());
            return Ok(Local::Operand(Operand::Stored(path)));
        }
        if let Some(m) = module_ref(self.archive, node, path.clone()) {
            return Ok(Local::Module(m));
        }
        Ok(Local::Operand(match self.archive.ckpt.graph.get(node) {
            Value::None => Operand::None,
            Value::Bool(b) => Operand::Bool(*b),
            Value::Int(i) => Operand::Int(*i),
            Value::Float(f) => Operand::Float(*f),
            Value::Str(s) => Operand::Str(s.clone()),
            other => {
                return Err(self.error(format!(
                    "attribute `{path}` is a {}, which traced code is not expected to read",
                    other.kind()
                )))
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn submodule_calls_are_inlined_with_their_sites() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/script/narrow_cnn.pt");
        let mut archive = ScriptArchive::open(&path).unwrap();
        let inlined = inline(&mut archive).unwrap();
        assert_eq!(inlined.inputs, [ValueId(0)]);
        let ops: Vec<&str> = inlined.calls.iter().map(|c| c.op.as_str()).collect();
        assert_eq!(
            ops,
            [
                "torch._convolution",
                "torch.batch_norm",
                "torch.relu_",
                "torch.max_pool2d",
                "torch._convolution",
                "torch.batch_norm",
                "torch.hardtanh_",
                "torch.adaptive_avg_pool2d",
                "torch.view",
                "torch.mul",
                "torch.dropout",
                "torch.linear",
            ]
        );
        let first = &inlined.calls[0];
        assert_eq!(first.args[0], Operand::Value(ValueId(0)));
        assert_eq!(first.args[1], Operand::Stored("features.0.0.weight".into()));
        assert_eq!(first.args[2], Operand::None);
        let frames = first.site.frames();
        let paths: Vec<&str> = frames.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["", "features", "features.0", "features.0.0"]);
        let here = frames.last().unwrap();
        assert_eq!(
            (here.file.as_str(), here.line, here.class.as_str()),
            (
                "code/__torch__/torch/nn/modules/conv.py",
                10,
                "torch.nn.modules.conv.Conv2d"
            )
        );
        let view = &inlined.calls[8];
        assert_eq!(
            view.args[1],
            Operand::List(vec![Operand::Int(2), Operand::Int(-1)])
        );
        assert_eq!(inlined.calls[9].args[1], Operand::Constant(0));
        assert_eq!(
            inlined.output,
            Ok(Returned::One(Operand::Value(inlined.calls[11].output)))
        );
        assert!(inlined.tensors.contains_key("features.3.running_var"));
        assert_eq!(inlined.tensors["head.1.weight"].shape, [10, 16]);
    }

    #[test]
    fn class_names_lose_mangling() {
        assert_eq!(
            plain_class("__torch__.torch.nn.modules.conv.___torch_mangle_3.Conv2d"),
            "torch.nn.modules.conv.Conv2d"
        );
        assert_eq!(plain_class("__torch__.UNet"), "UNet");
    }
}
