//! Tokens of the Python subset TorchScript's printer writes (`code/__torch__/**.py`).
//!
//! Indentation becomes [`Tok::Indent`] / [`Tok::Dedent`], logical lines end with
//! [`Tok::Newline`], and newlines inside brackets are joined, as in Python. The input is
//! hostile: token count, identifier and string lengths, and bracket/indent nesting are
//! bounded, and every error names the line.

use super::ScriptError;

/// The most tokens one code record may hold (resnet152's largest record has a few thousand).
pub const MAX_TOKENS: usize = 1_000_000;
/// The longest identifier (mangled qualified names are far shorter).
pub const MAX_IDENT: usize = 1024;
/// The longest string literal.
pub const MAX_STRING: usize = 64 * 1024;
/// The deepest bracket or indentation nesting.
pub const MAX_NESTING: usize = 200;

/// One token.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Name(String),
    Int(i64),
    Float(f64),
    Str(String),
    /// Punctuation and operators: `( ) [ ] { } , : . = -> - + * / % < > ==` and the like.
    Op(&'static str),
    Newline,
    Indent,
    Dedent,
    Eof,
}

impl Tok {
    /// The token as a message shows it.
    pub fn show(&self) -> String {
        match self {
            Tok::Name(n) => format!("`{n}`"),
            Tok::Int(i) => format!("`{i}`"),
            Tok::Float(f) => format!("`{f:?}`"),
            Tok::Str(s) => format!("{s:?}"),
            Tok::Op(o) => format!("`{o}`"),
            Tok::Newline => "end of line".into(),
            Tok::Indent => "an indent".into(),
            Tok::Dedent => "a dedent".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// A token and the 1-based line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

/// Operators, longest first so that `->` wins over `-`.
const OPS: [&str; 27] = [
    "->", "==", "!=", "<=", ">=", "**", "//", "(", ")", "[", "]", "{", "}", ",", ":", ".", "=",
    "-", "+", "*", "/", "%", "<", ">", "@", "&", "|",
];

/// Splits `source` (the record `file`) into tokens, ending with [`Tok::Eof`].
pub fn tokenize(file: &str, source: &str) -> Result<Vec<Token>, ScriptError> {
    Lexer {
        file,
        chars: source.chars().collect(),
        pos: 0,
        line: 1,
        out: Vec::new(),
        indents: vec![0],
        brackets: 0,
    }
    .run()
}

struct Lexer<'f> {
    file: &'f str,
    chars: Vec<char>,
    pos: usize,
    line: usize,
    out: Vec<Token>,
    /// Indentation widths of the open blocks; `indents[0]` is 0.
    indents: Vec<usize>,
    /// Open brackets: newlines inside them are not line ends.
    brackets: usize,
}

impl Lexer<'_> {
    fn error(&self, what: impl Into<String>) -> ScriptError {
        ScriptError::at(self.file, self.line, what)
    }

    fn push(&mut self, tok: Tok) -> Result<(), ScriptError> {
        if self.out.len() >= MAX_TOKENS {
            return Err(self.error(format!("more than {MAX_TOKENS} tokens in one record")));
        }
        self.out.push(Token {
            tok,
            line: self.line,
        });
        Ok(())
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn run(mut self) -> Result<Vec<Token>, ScriptError> {
        let mut at_line_start = true;
        while self.pos < self.chars.len() {
            if at_line_start && self.brackets == 0 {
                at_line_start = false;
                if self.indentation()? {
                    at_line_start = true;
                    continue;
                }
            }
            let Some(c) = self.peek(0) else { break };
            match c {
                '\n' => {
                    self.pos += 1;
                    if self.brackets == 0 {
                        self.push(Tok::Newline)?;
                        at_line_start = true;
                    }
                    self.line += 1;
                }
                ' ' | '\t' | '\r' => self.pos += 1,
                '#' => self.skip_comment(),
                '\\' if self.peek(1) == Some('\n') => {
                    self.pos += 2;
                    self.line += 1;
                }
                '"' | '\'' => {
                    let s = self.string(c)?;
                    self.push(Tok::Str(s))?;
                }
                c if c.is_ascii_digit()
                    || (c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit())) =>
                {
                    let t = self.number()?;
                    self.push(t)?;
                }
                c if c == '_' || c.is_ascii_alphabetic() => {
                    let start = self.pos;
                    while self
                        .peek(0)
                        .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                    {
                        self.pos += 1;
                        if self.pos - start > MAX_IDENT {
                            return Err(self.error(format!(
                                "an identifier longer than {MAX_IDENT} characters"
                            )));
                        }
                    }
                    let name: String = self.chars[start..self.pos].iter().collect();
                    self.push(Tok::Name(name))?;
                }
                _ => {
                    let op = OPS
                        .iter()
                        .find(|op| op.chars().enumerate().all(|(i, o)| self.peek(i) == Some(o)))
                        .copied()
                        .ok_or_else(|| self.error(format!("unexpected character {c:?}")))?;
                    self.pos += op.chars().count();
                    match op {
                        "(" | "[" | "{" => {
                            self.brackets += 1;
                            if self.brackets > MAX_NESTING {
                                return Err(
                                    self.error(format!("brackets nest deeper than {MAX_NESTING}"))
                                );
                            }
                        }
                        ")" | "]" | "}" => {
                            self.brackets = self
                                .brackets
                                .checked_sub(1)
                                .ok_or_else(|| self.error(format!("unbalanced `{op}`")))?;
                        }
                        _ => {}
                    }
                    self.push(Tok::Op(op))?;
                }
            }
        }
        if self.brackets > 0 {
            return Err(self.error("a bracket is never closed"));
        }
        if self.out.last().is_some_and(|t| t.tok != Tok::Newline) {
            self.push(Tok::Newline)?;
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.push(Tok::Dedent)?;
        }
        self.push(Tok::Eof)?;
        Ok(self.out)
    }

    fn skip_comment(&mut self) {
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.pos += 1;
        }
    }

    /// Measures the indentation of the line starting at `pos` and emits indents/dedents.
    /// Returns true when the line is blank or a comment (nothing emitted, `pos` at its end).
    fn indentation(&mut self) -> Result<bool, ScriptError> {
        let mut width = 0;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' => width += 1,
                '\t' => width = (width / 8 + 1) * 8,
                _ => break,
            }
            self.pos += 1;
        }
        match self.peek(0) {
            None => return Ok(true),
            Some('\n') => {
                self.pos += 1;
                self.line += 1;
                return Ok(true);
            }
            Some('#') => {
                self.skip_comment();
                if self.peek(0) == Some('\n') {
                    self.pos += 1;
                    self.line += 1;
                }
                return Ok(true);
            }
            Some('\r') if self.peek(1) == Some('\n') => {
                self.pos += 2;
                self.line += 1;
                return Ok(true);
            }
            _ => {}
        }
        let current = *self.indents.last().unwrap_or(&0);
        if width > current {
            if self.indents.len() > MAX_NESTING {
                return Err(self.error(format!("blocks nest deeper than {MAX_NESTING}")));
            }
            self.indents.push(width);
            self.push(Tok::Indent)?;
        } else {
            while width < *self.indents.last().unwrap_or(&0) {
                self.indents.pop();
                self.push(Tok::Dedent)?;
            }
            if width != *self.indents.last().unwrap_or(&0) {
                return Err(self.error("inconsistent indentation"));
            }
        }
        Ok(false)
    }

    fn string(&mut self, quote: char) -> Result<String, ScriptError> {
        if self.peek(1) == Some(quote) && self.peek(2) == Some(quote) {
            return Err(self.error("triple-quoted strings are not part of traced code"));
        }
        self.pos += 1;
        let mut s = String::new();
        loop {
            let c = self
                .peek(0)
                .ok_or_else(|| self.error("a string is never closed"))?;
            self.pos += 1;
            match c {
                c if c == quote => return Ok(s),
                '\n' => return Err(self.error("a string runs past the end of its line")),
                '\\' => {
                    let e = self
                        .peek(0)
                        .ok_or_else(|| self.error("a string is never closed"))?;
                    self.pos += 1;
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        '\\' | '\'' | '"' => e,
                        'x' => self.hex_escape(2)?,
                        'u' => self.hex_escape(4)?,
                        _ => return Err(self.error(format!("unknown string escape `\\{e}`"))),
                    });
                }
                c => s.push(c),
            }
            if s.len() > MAX_STRING {
                return Err(self.error(format!("a string longer than {MAX_STRING} bytes")));
            }
        }
    }

    fn hex_escape(&mut self, digits: usize) -> Result<char, ScriptError> {
        let text: String = (0..digits).filter_map(|i| self.peek(i)).collect();
        self.pos += digits;
        u32::from_str_radix(&text, 16)
            .ok()
            .filter(|_| text.len() == digits)
            .and_then(char::from_u32)
            .ok_or_else(|| self.error(format!("bad escape `{text}` in a string")))
    }

    /// `12`, `9223372036854775807`, `2.`, `0.10000000000000001`, `1.0000000000000001e-05`.
    fn number(&mut self) -> Result<Tok, ScriptError> {
        let start = self.pos;
        let digits = |lexer: &mut Self| {
            while lexer.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                lexer.pos += 1;
            }
        };
        digits(self);
        let mut float = false;
        if self.peek(0) == Some('.') {
            float = true;
            self.pos += 1;
            digits(self);
        }
        if matches!(self.peek(0), Some('e' | 'E')) {
            float = true;
            self.pos += 1;
            if matches!(self.peek(0), Some('+' | '-')) {
                self.pos += 1;
            }
            digits(self);
        }
        if self.pos - start > MAX_IDENT {
            return Err(self.error("a number literal is too long"));
        }
        if self
            .peek(0)
            .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        {
            return Err(self.error(
                "a number runs into a name (hex, suffixes and `_` separators are not read)",
            ));
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        if float {
            text.parse::<f64>()
                .map(Tok::Float)
                .map_err(|_| self.error(format!("bad float literal `{text}`")))
        } else {
            text.parse::<i64>().map(Tok::Int).map_err(|_| {
                self.error(format!("integer literal `{text}` does not fit in 64 bits"))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(source: &str) -> Vec<Tok> {
        tokenize("t.py", source)
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn numbers_strings_and_operators() {
        assert_eq!(
            toks("x = f(1.0000000000000001e-05, 2., 9223372036854775807, \"a\\\"b\", 'c')"),
            vec![
                Tok::Name("x".into()),
                Tok::Op("="),
                Tok::Name("f".into()),
                Tok::Op("("),
                Tok::Float(1e-5),
                Tok::Op(","),
                Tok::Float(2.0),
                Tok::Op(","),
                Tok::Int(i64::MAX),
                Tok::Op(","),
                Tok::Str("a\"b".into()),
                Tok::Op(","),
                Tok::Str("c".into()),
                Tok::Op(")"),
                Tok::Newline,
                Tok::Eof,
            ]
        );
        assert_eq!(toks("a -> b")[1], Tok::Op("->"));
    }

    #[test]
    fn indentation_and_bracketed_newlines() {
        let t = toks(
            "class A(Module):\n  def f(self,\n    x):\n    return x\n\n  # c\nclass B:\n  y = 1\n",
        );
        let kinds: Vec<&Tok> = t
            .iter()
            .filter(|t| matches!(t, Tok::Indent | Tok::Dedent))
            .collect();
        assert_eq!(
            kinds,
            [
                &Tok::Indent,
                &Tok::Indent,
                &Tok::Dedent,
                &Tok::Dedent,
                &Tok::Indent,
                &Tok::Dedent
            ]
        );
        assert!(!t.windows(2).any(|w| w == [Tok::Op(","), Tok::Newline]));
    }

    #[test]
    fn errors_name_the_line() {
        let err = tokenize("t.py", "a = 1\nb = $\n").unwrap_err().to_string();
        assert!(
            err.contains("t.py") && err.contains("line 2") && err.contains("'$'"),
            "{err}"
        );
        let err = tokenize("t.py", "a = 99999999999999999999\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("64 bits"), "{err}");
        let err = tokenize("t.py", "a = (\n").unwrap_err().to_string();
        assert!(err.contains("never closed"), "{err}");
        let long = format!("{} = 1", "a".repeat(MAX_IDENT + 1));
        assert!(tokenize("t.py", &long)
            .unwrap_err()
            .to_string()
            .contains("identifier"));
        let deep = format!("x = {}", "(".repeat(MAX_NESTING + 1));
        assert!(tokenize("t.py", &deep)
            .unwrap_err()
            .to_string()
            .contains("nest deeper"));
        let err = tokenize("t.py", "if x:\n    a = 1\n  b = 2\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 3") && err.contains("indentation"),
            "{err}"
        );
    }
}
