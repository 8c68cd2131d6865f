//! A parser for the code `torch.jit.trace` + `torch.jit.save` writes: classes with
//! declarations and `forward*` methods whose bodies are straight-line assignments and one
//! `return`. A method only scripting writes (a parameter with a default value, `if`,
//! loops, …: a scripted model, or a `@torch.jit.export` method beside a traced `forward`)
//! is kept as [`ScriptedMethod`], its body skipped: a call of it is refused with the error
//! naming the file and line, so a scripted archive is never half-read, and a traced model
//! carrying exported methods it does not call converts.

use super::token::{tokenize, Tok, Token, MAX_NESTING};
use super::ScriptError;

/// One code record: its classes.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// Classes in the order written.
    pub classes: Vec<ClassDef>,
}

/// `class Name(Base):` with its methods. Declarations (`__parameters__`, typed attributes,
/// `__annotations__[…]`) are checked for syntax and dropped: the module objects in
/// `data.pkl` say what each module holds.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassDef {
    /// The name.
    pub name: String,
    /// Its methods (`forward`, helpers).
    pub methods: Vec<Method>,
    /// Its methods only scripting writes, not parsed.
    pub scripted: Vec<ScriptedMethod>,
}

impl ClassDef {
    /// Method `name` (`None` if the class has none): parsed, or, for a method only
    /// scripting writes, its refusal at its line of `file`.
    pub fn method(&self, file: &str, name: &str) -> Option<Result<&Method, ScriptError>> {
        if let Some(method) = self.methods.iter().find(|m| m.name == name) {
            return Some(Ok(method));
        }
        let scripted = self.scripted.iter().find(|m| m.name == name)?;
        Some(Err(ScriptError::at(
            file,
            scripted.line,
            scripted.why.clone(),
        )))
    }
}

/// A method traced code could not have written, with the first reason why: a call of it
/// is refused with `why` at `line`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedMethod {
    /// The name.
    pub name: String,
    /// The line of what only scripting writes.
    pub line: usize,
    /// What it is (`` `if`: scripted control flow is not supported; … ``).
    pub why: String,
}

/// `def name(self: …, a: T, …) -> T:` and its body.
#[derive(Clone, Debug, PartialEq)]
pub struct Method {
    /// The name.
    pub name: String,
    /// The line of its `def`.
    pub line: usize,
    /// Parameter names after `self`.
    pub params: Vec<String>,
    /// Its statements.
    pub body: Vec<Stmt>,
}

/// A statement. Invariant: a method body holds assignments and ends with one `Return`.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `a = e` or `a, b = e`.
    Assign {
        /// The names assigned.
        targets: Vec<String>,
        /// The value.
        value: Expr,
        /// Its line.
        line: usize,
    },
    /// `return e`.
    Return {
        /// The value.
        value: Expr,
        /// Its line.
        line: usize,
    },
}

/// The value of a float TorchScript prints as a name: `inf` and `nan` (the names its
/// language defines for them, as Python's `math` does); `None` for any other name.
fn float_name(name: &str) -> Option<f64> {
    match name {
        "inf" => Some(f64::INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    }
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A name.
    Name(String),
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A string literal.
    Str(String),
    /// `True` or `False`.
    Bool(bool),
    /// `None`.
    None,
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `(a, b)`.
    Tuple(Vec<Expr>),
    /// `{key: value, …}` (a traced model returning a dict).
    Dict(Vec<(Expr, Expr)>),
    /// `e.name`
    Attr(Box<Expr>, String),
    /// `e[i]` (types such as `Optional[bool]`, `List[int]`).
    Index(Box<Expr>, Box<Expr>),
    /// `f(args, name=value)`.
    Call {
        /// What is called.
        func: Box<Expr>,
        /// Positional arguments.
        args: Vec<Expr>,
        /// Keyword arguments, in order.
        kwargs: Vec<(String, Expr)>,
    },
}

impl Expr {
    /// A dotted name (`torch.relu`, `ops.prim.NumToTensor`) as text, if it is one.
    pub fn dotted(&self) -> Option<String> {
        match self {
            Expr::Name(n) => Some(n.clone()),
            Expr::Attr(base, name) => base.dotted().map(|b| format!("{b}.{name}")),
            _ => None,
        }
    }
}

/// A call's positional and keyword arguments.
type CallArgs = (Vec<Expr>, Vec<(String, Expr)>);

/// Statement keywords only scripted code (or no TorchScript printer at all) writes.
const SCRIPTED: [&str; 18] = [
    "if", "elif", "else", "for", "while", "with", "try", "except", "finally", "raise", "assert",
    "break", "continue", "pass", "del", "global", "lambda", "yield",
];

/// Parses the code record `file`.
pub fn parse(file: &str, source: &str) -> Result<Source, ScriptError> {
    let tokens = tokenize(file, source)?;
    let mut p = Parser {
        file,
        tokens,
        pos: 0,
        depth: 0,
        scripting: false,
    };
    let mut classes = Vec::new();
    loop {
        match p.peek() {
            Tok::Eof => break,
            Tok::Newline => p.pos += 1,
            Tok::Name(n) if n == "class" => classes.push(p.class()?),
            // A scripted function beside the classes (`@torch.jit.script` code a traced
            // model calls): not run here, so its body is skipped, loops and all; the
            // conversion refuses a call of it whose result an output reads.
            Tok::Name(n) if n == "def" => p.skip_block()?,
            other => {
                let what = format!("expected a class definition, found {}", other.show());
                return Err(p.error(what));
            }
        }
    }
    Ok(Source { classes })
}

struct Parser<'f> {
    file: &'f str,
    tokens: Vec<Token>,
    /// Index into `tokens`; never past the final `Eof`.
    pos: usize,
    /// Expression nesting, bounded by [`MAX_NESTING`].
    depth: usize,
    /// Set with the error a method returns when what it met only scripting writes.
    scripting: bool,
}

impl Parser<'_> {
    fn token(&self) -> &Token {
        // `tokenize` always ends with `Eof`, and `bump` never moves past it.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn peek(&self) -> &Tok {
        &self.token().tok
    }

    fn line(&self) -> usize {
        self.token().line
    }

    fn bump(&mut self) -> Tok {
        let tok = self.peek().clone();
        if tok != Tok::Eof {
            self.pos += 1;
        }
        tok
    }

    fn error(&self, what: impl Into<String>) -> ScriptError {
        ScriptError::at(self.file, self.line(), what)
    }

    fn at_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        let here = self.at_op(op);
        if here {
            self.pos += 1;
        }
        here
    }

    fn expect_op(&mut self, op: &str) -> Result<(), ScriptError> {
        if self.eat_op(op) {
            Ok(())
        } else {
            let what = format!("expected `{op}`, found {}", self.peek().show());
            Err(self.error(what))
        }
    }

    fn expect(&mut self, want: Tok) -> Result<(), ScriptError> {
        if *self.peek() == want {
            self.bump();
            Ok(())
        } else {
            let what = format!("expected {}, found {}", want.show(), self.peek().show());
            Err(self.error(what))
        }
    }

    fn name(&mut self) -> Result<String, ScriptError> {
        match self.peek().clone() {
            Tok::Name(n) => {
                self.bump();
                Ok(n)
            }
            other => Err(self.error(format!("expected a name, found {}", other.show()))),
        }
    }

    fn is_keyword(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == word)
    }

    /// Skips a block statement: its header up to the end of the line, then its indented
    /// body.
    fn skip_block(&mut self) -> Result<(), ScriptError> {
        while !matches!(self.peek(), Tok::Newline | Tok::Eof) {
            self.bump();
        }
        self.expect(Tok::Newline)?;
        self.expect(Tok::Indent)?;
        let mut open = 1usize;
        while open > 0 {
            match self.bump() {
                Tok::Indent => open += 1,
                Tok::Dedent => open -= 1,
                Tok::Eof => return Err(self.error("a function body does not end")),
                _ => {}
            }
        }
        Ok(())
    }

    fn class(&mut self) -> Result<ClassDef, ScriptError> {
        self.bump();
        let name = self.name()?;
        if self.eat_op("(") {
            if !self.at_op(")") {
                self.expr()?;
            }
            self.expect_op(")")?;
        }
        self.expect_op(":")?;
        self.expect(Tok::Newline)?;
        self.expect(Tok::Indent)?;
        let mut methods = Vec::new();
        let mut scripted = Vec::new();
        while *self.peek() != Tok::Dedent && *self.peek() != Tok::Eof {
            if !self.is_keyword("def") {
                self.declaration()?;
                continue;
            }
            let start = self.pos;
            match self.method() {
                Ok(method) => methods.push(method),
                Err(ScriptError::At { line, what, .. }) if std::mem::take(&mut self.scripting) => {
                    self.pos = start + 1;
                    let name = self.name()?;
                    self.pos = start;
                    self.skip_block()?;
                    scripted.push(ScriptedMethod {
                        name,
                        line,
                        why: what,
                    });
                }
                Err(e) => return Err(e),
            }
        }
        self.expect(Tok::Dedent)?;
        Ok(ClassDef {
            name,
            methods,
            scripted,
        })
    }

    /// `x : T`, `x : Final[int] = 4`, `__parameters__ = [...]`, `__annotations__["0"] = T`:
    /// checked, dropped.
    fn declaration(&mut self) -> Result<(), ScriptError> {
        self.refuse_scripted()?;
        self.expr()?;
        if self.eat_op(":") {
            self.expr()?;
            if self.eat_op("=") {
                self.expr()?;
            }
        } else if self.eat_op("=") {
            self.expr()?;
        } else {
            let what = format!(
                "expected a declaration (`name : type` or `name = value`) in a class body, found {}",
                self.peek().show()
            );
            return Err(self.error(what));
        }
        self.expect(Tok::Newline)
    }

    fn method(&mut self) -> Result<Method, ScriptError> {
        let line = self.line();
        self.bump();
        let name = self.name()?;
        self.expect_op("(")?;
        let mut params = Vec::new();
        let mut first = true;
        while !self.at_op(")") {
            let param = self.name()?;
            if self.eat_op(":") {
                self.expr()?;
            }
            if self.eat_op("=") {
                self.scripting = true;
                return Err(self.error(format!(
                    "parameter `{param}` has a default value, which traced code does not write"
                )));
            }
            if first {
                if param != "self" {
                    return Err(self.error(format!("method `{name}` does not take `self` first")));
                }
            } else {
                params.push(param);
            }
            first = false;
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        if self.eat_op("->") {
            self.expr()?;
        }
        self.expect_op(":")?;
        self.expect(Tok::Newline)?;
        self.expect(Tok::Indent)?;
        let mut body = Vec::new();
        while *self.peek() != Tok::Dedent && *self.peek() != Tok::Eof {
            let stmt = self.statement()?;
            if let Some(Stmt::Return { line, .. }) = body.last() {
                return Err(ScriptError::at(
                    self.file,
                    *line,
                    "statements after `return` (control flow from scripting?) are not supported",
                ));
            }
            body.push(stmt);
        }
        self.expect(Tok::Dedent)?;
        if !matches!(body.last(), Some(Stmt::Return { .. })) {
            return Err(ScriptError::at(
                self.file,
                line,
                format!("method `{name}` does not end with `return`"),
            ));
        }
        Ok(Method {
            name,
            line,
            params,
            body,
        })
    }

    fn refuse_scripted(&mut self) -> Result<(), ScriptError> {
        match self.peek() {
            Tok::Name(n) if SCRIPTED.contains(&n.as_str()) => {
                let what = format!(
                    "`{n}`: scripted control flow is not supported; export a `torch.jit.trace` of the model (tracing records the path taken)"
                );
                Err(self.scripted(what))
            }
            Tok::Name(n) if n == "import" || n == "from" || n == "def" || n == "class" => {
                Err(self.error(format!("`{n}` is not expected here")))
            }
            _ => Ok(()),
        }
    }

    /// The error at the current token that what it met only scripting writes.
    fn scripted(&mut self, what: String) -> ScriptError {
        self.scripting = true;
        self.error(what)
    }

    fn statement(&mut self) -> Result<Stmt, ScriptError> {
        self.refuse_scripted()?;
        let line = self.line();
        if self.is_keyword("return") {
            self.bump();
            let value = self.tuple_or_expr()?;
            self.expect(Tok::Newline)?;
            return Ok(Stmt::Return { value, line });
        }
        let lhs = self.tuple_or_expr()?;
        if !self.eat_op("=") {
            // A trace assigns every call's result; a statement of a call alone is scripted
            // code (`ops.prim.RaiseException(…)` where a scripted method raises).
            let raises = matches!(&lhs, Expr::Call { func, .. }
                if func.dotted().as_deref() == Some("ops.prim.RaiseException"));
            let what = if raises {
                "the code raises an exception here (`ops.prim.RaiseException`), as scripted code does where torch itself cannot run the model (a parametrization under `torch.jit`, an assertion); torch would raise it too".to_owned()
            } else {
                format!(
                    "expected `=` after an expression, found {} (only assignments and `return` are read)",
                    self.peek().show()
                )
            };
            return Err(self.scripted(what));
        }
        let targets = match lhs {
            Expr::Name(n) => vec![n],
            Expr::Tuple(items) => items
                .into_iter()
                .map(|e| match e {
                    Expr::Name(n) => Ok(n),
                    _ => Err(ScriptError::at(
                        self.file,
                        line,
                        "only names can be unpacked into",
                    )),
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(self.error("only names can be assigned to")),
        };
        let value = self.tuple_or_expr()?;
        self.expect(Tok::Newline)?;
        Ok(Stmt::Assign {
            targets,
            value,
            line,
        })
    }

    /// `a, b` (a tuple without brackets) or a single expression.
    fn tuple_or_expr(&mut self) -> Result<Expr, ScriptError> {
        let first = self.expr()?;
        if !self.at_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.at_op("=") || *self.peek() == Tok::Newline {
                break;
            }
            items.push(self.expr()?);
        }
        Ok(Expr::Tuple(items))
    }

    fn expr(&mut self) -> Result<Expr, ScriptError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error(format!("expressions nest deeper than {MAX_NESTING}")));
        }
        let result = self.unary();
        self.depth -= 1;
        result
    }

    /// A postfix expression, or a negated number literal (`-inf` and `-nan` included, as
    /// TorchScript prints a negative infinite or NaN float). Binary operators are refused:
    /// the tracer prints every op as a `torch.*` call.
    fn unary(&mut self) -> Result<Expr, ScriptError> {
        let e = if self.eat_op("-") {
            match self.bump() {
                Tok::Int(i) => Expr::Int(-i),
                Tok::Float(f) => Expr::Float(-f),
                Tok::Name(n) if float_name(&n).is_some() => {
                    Expr::Float(-float_name(&n).unwrap_or(f64::NAN))
                }
                other => {
                    return Err(self.error(format!(
                        "unary `-` applied to {}: only negative number literals are read",
                        other.show()
                    )))
                }
            }
        } else {
            self.postfix()?
        };
        match self.peek() {
            Tok::Op(op) if !matches!(*op, ")" | "]" | "}" | "," | ":" | "=" | "->") => Err(self
                .error(format!(
                    "operator `{op}` is not part of traced code (scripted code?)"
                ))),
            Tok::Name(n)
                if matches!(
                    n.as_str(),
                    "if" | "and" | "or" | "not" | "is" | "in" | "for"
                ) =>
            {
                Err(self.error(format!(
                    "`{n}` in an expression is scripted code, which is not supported"
                )))
            }
            _ => Ok(e),
        }
    }

    fn postfix(&mut self) -> Result<Expr, ScriptError> {
        let mut e = self.atom()?;
        loop {
            if self.eat_op(".") {
                let name = self.name()?;
                e = Expr::Attr(Box::new(e), name);
            } else if self.eat_op("(") {
                let (args, kwargs) = self.call_args()?;
                e = Expr::Call {
                    func: Box::new(e),
                    args,
                    kwargs,
                };
            } else if self.eat_op("[") {
                let index = self.tuple_or_expr()?;
                self.expect_op("]")?;
                e = Expr::Index(Box::new(e), Box::new(index));
            } else {
                return Ok(e);
            }
        }
    }

    fn call_args(&mut self) -> Result<CallArgs, ScriptError> {
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        while !self.at_op(")") {
            let is_kwarg = matches!(self.peek(), Tok::Name(_))
                && matches!(
                    self.tokens.get(self.pos + 1),
                    Some(Token {
                        tok: Tok::Op("="),
                        ..
                    })
                );
            if is_kwarg {
                let name = self.name()?;
                self.expect_op("=")?;
                kwargs.push((name, self.expr()?));
            } else if !kwargs.is_empty() {
                return Err(self.error("a positional argument after a keyword argument"));
            } else {
                args.push(self.expr()?);
            }
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op(")")?;
        Ok((args, kwargs))
    }

    fn items(&mut self, close: &str) -> Result<(Vec<Expr>, bool), ScriptError> {
        let mut items = Vec::new();
        let mut trailing_comma = false;
        while !self.at_op(close) {
            items.push(self.expr()?);
            trailing_comma = self.eat_op(",");
            if !trailing_comma {
                break;
            }
        }
        self.expect_op(close)?;
        Ok((items, trailing_comma))
    }

    /// The `key: value` entries of a dict literal, after its `{`, through its `}`.
    fn entries(&mut self) -> Result<Vec<(Expr, Expr)>, ScriptError> {
        let mut entries = Vec::new();
        while !self.at_op("}") {
            let key = self.expr()?;
            self.expect_op(":")?;
            entries.push((key, self.expr()?));
            if !self.eat_op(",") {
                break;
            }
        }
        self.expect_op("}")?;
        Ok(entries)
    }

    fn atom(&mut self) -> Result<Expr, ScriptError> {
        let line = self.line();
        Ok(match self.bump() {
            Tok::Name(n) => match n.as_str() {
                "None" => Expr::None,
                "True" => Expr::Bool(true),
                "False" => Expr::Bool(false),
                _ if float_name(&n).is_some() => Expr::Float(float_name(&n).unwrap_or(f64::NAN)),
                _ if SCRIPTED.contains(&n.as_str()) || n == "return" => {
                    return Err(ScriptError::at(
                        self.file,
                        line,
                        format!("`{n}` is not expected in an expression"),
                    ))
                }
                _ => Expr::Name(n),
            },
            Tok::Int(i) => Expr::Int(i),
            Tok::Float(f) => Expr::Float(f),
            Tok::Str(s) => Expr::Str(s),
            Tok::Op("[") => Expr::List(self.items("]")?.0),
            Tok::Op("(") => {
                let (mut items, trailing_comma) = self.items(")")?;
                if items.len() == 1 && !trailing_comma {
                    items.swap_remove(0)
                } else {
                    Expr::Tuple(items)
                }
            }
            Tok::Op("{") => Expr::Dict(self.entries()?),
            other => {
                return Err(ScriptError::at(
                    self.file,
                    line,
                    format!("expected an expression, found {}", other.show()),
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONV: &str = r#"class Conv2d(Module):
  __parameters__ = ["weight", ]
  __buffers__ = []
  weight : Tensor
  training : bool
  in_features : Final[int] = 4
  _is_full_backward_hook : Optional[bool]
  __annotations__["0"] = __torch__.torch.nn.modules.conv.Conv2d
  def forward(self: __torch__.torch.nn.modules.conv.Conv2d,
    x: Tensor) -> Tensor:
    weight = self.weight
    _0, _1 = (getattr(self, "0")).forward1(x, )
    input = torch._convolution(x, weight, None, [2, 2], [-3, 3], [1, 1], False, [0, 0], 1, False, False, True, True)
    y = torch.batch_norm(input, weight, None, None, None, False, 0.10000000000000001, 1.0000000000000001e-05, True)
    z = torch.max_pool2d(y, [2, 2], annotate(List[int], []), [0, 0], [1, 1], True, alpha=CONSTANTS.c0)
    return (z, _1)
"#;

    #[test]
    fn parses_a_traced_module() {
        let source = parse("conv.py", CONV).unwrap();
        let [class] = source.classes.as_slice() else {
            panic!()
        };
        assert_eq!(class.name, "Conv2d");
        let [method] = class.methods.as_slice() else {
            panic!()
        };
        assert_eq!(
            (method.name.as_str(), method.params.as_slice(), method.line),
            ("forward", &["x".to_string()][..], 9)
        );
        assert_eq!(method.body.len(), 6);
        let Stmt::Assign {
            targets,
            value,
            line,
        } = &method.body[1]
        else {
            panic!()
        };
        assert_eq!(
            (targets.as_slice(), *line),
            (&["_0".to_string(), "_1".to_string()][..], 12)
        );
        let Expr::Call { func, args, .. } = value else {
            panic!()
        };
        assert!(matches!(&**func, Expr::Attr(_, m) if m == "forward1"));
        assert_eq!(args, &[Expr::Name("x".into())]);
        let Stmt::Assign {
            value: Expr::Call { func, args, .. },
            ..
        } = &method.body[2]
        else {
            panic!()
        };
        assert_eq!(func.dotted().as_deref(), Some("torch._convolution"));
        assert_eq!(args[4], Expr::List(vec![Expr::Int(-3), Expr::Int(3)]));
        assert_eq!(args[2], Expr::None);
        let Stmt::Assign {
            value: Expr::Call { args, .. },
            ..
        } = &method.body[3]
        else {
            panic!()
        };
        assert_eq!(args[7], Expr::Float(1e-5));
        let Stmt::Assign {
            value: Expr::Call { kwargs, .. },
            ..
        } = &method.body[4]
        else {
            panic!()
        };
        assert_eq!(kwargs[0].1.dotted().as_deref(), Some("CONSTANTS.c0"));
        assert!(
            matches!(&method.body[5], Stmt::Return { value: Expr::Tuple(t), line: 16 } if t.len() == 2)
        );
    }

    #[test]
    fn inf_and_nan_are_the_floats_torchscript_prints_them_for() {
        let src = "class A(Module):\n  def forward(self: A,\n    x: Tensor) -> Tensor:\n    return torch.f(x, inf, -inf, nan)\n";
        let source = parse("a.py", src).unwrap();
        let Stmt::Return {
            value: Expr::Call { args, .. },
            ..
        } = &source.classes[0].methods[0].body[0]
        else {
            panic!()
        };
        assert_eq!(args[1], Expr::Float(f64::INFINITY));
        assert_eq!(args[2], Expr::Float(f64::NEG_INFINITY));
        assert!(matches!(args[3], Expr::Float(f) if f.is_nan()));
    }

    #[test]
    fn dict_returns_parse_in_order() {
        let src = "class A(Module):\n  def forward(self: A,\n    x: Tensor) -> Dict[str, Tensor]:\n    return {\"out\": x, \"aux\": torch.relu(x)}\n";
        let source = parse("a.py", src).unwrap();
        let Stmt::Return {
            value: Expr::Dict(entries),
            ..
        } = &source.classes[0].methods[0].body[0]
        else {
            panic!()
        };
        let keys: Vec<&Expr> = entries.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, [&Expr::Str("out".into()), &Expr::Str("aux".into())]);
        assert!(parse("a.py", &src.replace(": x,", " x,")).is_err());
    }

    #[test]
    fn infinities_and_nan_read_as_the_floats_torchscript_prints() {
        let src = "class A(Module):\n  def forward(self: A,\n    x: Tensor) -> Tensor:\n    return torch.f(x, -inf, inf, nan, -nan, -x)\n";
        let err = parse("a.py", src).unwrap_err().to_string();
        assert!(err.contains("unary `-` applied to `x`"), "{err}");
        let source = parse("a.py", &src.replace(", -x)", ")")).unwrap();
        let Stmt::Return {
            value: Expr::Call { args, .. },
            ..
        } = &source.classes[0].methods[0].body[0]
        else {
            panic!()
        };
        let floats: Vec<f64> = args[1..]
            .iter()
            .map(|a| match a {
                Expr::Float(f) => *f,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(floats[..2], [f64::NEG_INFINITY, f64::INFINITY]);
        assert!(floats[2].is_nan() && floats[3].is_nan());
    }

    /// A `@torch.jit.export` method beside a traced `forward` (torchaudio's wav2vec2
    /// `extract_features`) is kept unparsed; `forward` parses.
    #[test]
    fn an_exported_scripted_method_beside_a_traced_forward_is_kept_unparsed() {
        let src = "class A(Module):\n  w : int\n  def extract(self: A,\n    x: Tensor,\n    n: Optional[int]=None) -> Tensor:\n    for i in range(4):\n      x = x\n    return x\n  def forward(self: A,\n    x: Tensor) -> Tensor:\n    return x\n";
        let source = parse("a.py", src).unwrap();
        let class = &source.classes[0];
        assert_eq!(class.methods.len(), 1);
        assert!(class.method("a.py", "forward").unwrap().is_ok());
        let err = class
            .method("a.py", "extract")
            .unwrap()
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "`a.py` line 5: parameter `n` has a default value, which traced code does not write"
        );
        assert!(class.method("a.py", "other").is_none());
    }

    #[test]
    fn a_scripted_function_beside_the_classes_is_skipped_loops_and_all() {
        let src = "def halve(x: Tensor) -> Tensor:\n  while bool(x):\n    x = x\n  return x\nclass A(Module):\n  def forward(self: A,\n    x: Tensor) -> Tensor:\n    return x\ndef other(y: Tensor) -> Tensor:\n  return y\n";
        let source = parse("code/__torch__/a.py", src).unwrap();
        assert_eq!(source.classes.len(), 1);
        assert_eq!(source.classes[0].methods[0].name, "forward");
        assert!(parse("a.py", "def halve(x: Tensor) -> Tensor:\n").is_err());
    }

    #[test]
    fn scripted_code_is_refused_with_its_line_where_it_is_called() {
        let src = "class A(Module):\n  def forward(self: A,\n    x: Tensor) -> Tensor:\n    if bool(x):\n      y = x\n    return x\n";
        let source = parse("code/__torch__/a.py", src).unwrap();
        let class = &source.classes[0];
        assert!(class.methods.is_empty());
        let err = class
            .method("code/__torch__/a.py", "forward")
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "`code/__torch__/a.py` line 4: `if`: scripted control flow is not supported"
            ),
            "{err}"
        );
        let src = "class A(Module):\n  def forward(self: A,\n    x: Tensor) -> Tensor:\n    y = x + 1\n    return y\n";
        let err = parse("a.py", src).unwrap_err().to_string();
        assert!(
            err.contains("line 4") && err.contains("operator `+`"),
            "{err}"
        );
        let src =
            "class A(Module):\n  def forward(self: A,\n    x: Tensor) -> Tensor:\n    y = x\n";
        assert!(parse("a.py", src)
            .unwrap_err()
            .to_string()
            .contains("does not end with `return`"));
        let src = "class A(Module):\n  def forward(self: A, x: Tensor) -> Tensor:\n    return x\n    y = x\n";
        assert!(parse("a.py", src)
            .unwrap_err()
            .to_string()
            .contains("line 3: statements after `return`"));
        assert!(parse("a.py", "x = 1\n")
            .unwrap_err()
            .to_string()
            .contains("line 1: expected a class"));
    }

    #[test]
    fn truncated_or_corrupted_code_is_an_error_not_a_panic() {
        for end in 0..CONV.len() {
            let _ = parse("conv.py", &CONV[..end]);
        }
        let bytes = CONV.as_bytes();
        for (i, junk) in (0..bytes.len()).step_by(7).zip(
            [b'(', b']', b'\n', b' ', b'"', b'-', b'9', b':']
                .iter()
                .cycle(),
        ) {
            let mut mutated = bytes.to_vec();
            mutated[i] = *junk;
            if let Ok(text) = std::str::from_utf8(&mutated) {
                let _ = parse("conv.py", text);
            }
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let nested = |n: usize| {
            format!(
                "class A(Module):\n  def forward(self: A, x: Tensor) -> Tensor:\n    return {}x{}\n",
                "f(".repeat(n),
                ")".repeat(n)
            )
        };
        assert!(parse("a.py", &nested(150)).is_ok());
        let err = parse("a.py", &nested(MAX_NESTING + 1))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nest deeper"), "{err}");
    }
}
