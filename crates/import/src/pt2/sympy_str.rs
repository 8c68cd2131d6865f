//! Size expressions as torch before schema 8 (torch ≤ 2.5) wrote them, sympy's `str`
//! (`24*s0`, `s0 + 1`, `Max(2, s0)`), rewritten in sympy's `srepr`, which later schemas
//! write and the aten program reader parses (`Mul(Integer(24), Symbol('s0', integer=True,
//! positive=True))`). The rewrite changes the spelling only: operators become their sympy
//! heads (`a - b` is `Add(a, Mul(Integer(-1), b))`, `a/b` is `Mul(a, Pow(b, Integer(-1)))`,
//! `a//b` torch's `FloorDiv(a, b)`), calls keep their head; whether a head is understood is
//! for the reader to say.

/// `text` in sympy's `srepr`, or why it cannot be read.
pub fn to_srepr(text: &str) -> Result<String, String> {
    let mut parser = Infix { text, at: 0 };
    let out = parser.sum()?;
    parser.skip_spaces();
    if parser.at != text.len() {
        return Err(parser.fail("unexpected text"));
    }
    Ok(out)
}

/// A recursive-descent reader of sympy's `str` for integers, symbols, `+ - * / // **`,
/// parentheses and calls.
struct Infix<'t> {
    text: &'t str,
    at: usize,
}

/// How deep parentheses and calls may nest.
const MAX_DEPTH: usize = 64;

impl Infix<'_> {
    fn fail(&self, what: &str) -> String {
        format!("the size `{}`: {what} at character {}", self.text, self.at)
    }

    fn skip_spaces(&mut self) {
        while self.text[self.at..].starts_with(' ') {
            self.at += 1;
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_spaces();
        let found = self.text[self.at..].starts_with(token);
        if found {
            self.at += token.len();
        }
        found
    }

    fn depth_checked(&self, depth: usize) -> Result<usize, String> {
        if depth > MAX_DEPTH {
            return Err(self.fail("nested too deeply"));
        }
        Ok(depth + 1)
    }

    fn sum(&mut self) -> Result<String, String> {
        self.sum_at(0)
    }

    fn sum_at(&mut self, depth: usize) -> Result<String, String> {
        let depth = self.depth_checked(depth)?;
        let mut terms = vec![self.product(depth)?];
        loop {
            if self.eat("+") {
                terms.push(self.product(depth)?);
            } else if self.eat("-") {
                terms.push(negated(self.product(depth)?));
            } else {
                break;
            }
        }
        Ok(head("Add", terms))
    }

    fn product(&mut self, depth: usize) -> Result<String, String> {
        let mut factors = vec![self.power(depth)?];
        loop {
            if self.eat("**") {
                // `a**b` binds tighter than `*`; `power` already took one.
                return Err(self.fail("a power after a power"));
            } else if self.eat("//") {
                let divisor = self.power(depth)?;
                let dividend = head("Mul", std::mem::take(&mut factors));
                factors.push(format!("FloorDiv({dividend}, {divisor})"));
            } else if self.eat("*") {
                factors.push(self.power(depth)?);
            } else if self.eat("/") {
                let divisor = self.power(depth)?;
                factors.push(format!("Pow({divisor}, Integer(-1))"));
            } else {
                break;
            }
        }
        Ok(head("Mul", factors))
    }

    fn power(&mut self, depth: usize) -> Result<String, String> {
        let base = self.unary(depth)?;
        if self.eat("**") {
            let exponent = self.unary(depth)?;
            return Ok(format!("Pow({base}, {exponent})"));
        }
        Ok(base)
    }

    fn unary(&mut self, depth: usize) -> Result<String, String> {
        if self.eat("-") {
            return Ok(negated(self.unary(self.depth_checked(depth)?)?));
        }
        self.atom(depth)
    }

    fn atom(&mut self, depth: usize) -> Result<String, String> {
        if self.eat("(") {
            let inner = self.sum_at(depth)?;
            return match self.eat(")") {
                true => Ok(inner),
                false => Err(self.fail("expected `)`")),
            };
        }
        self.skip_spaces();
        let rest = &self.text[self.at..];
        let len = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        let word = &rest[..len];
        if word.is_empty() {
            return Err(self.fail("expected a number, a symbol or `(`"));
        }
        self.at += len;
        if word.bytes().all(|b| b.is_ascii_digit()) {
            let n: i64 = word.parse().map_err(|_| self.fail("integer too large"))?;
            return Ok(format!("Integer({n})"));
        }
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(self.fail("not a number or a name"));
        }
        if !self.eat("(") {
            return Ok(format!("Symbol('{word}', integer=True, positive=True)"));
        }
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.sum_at(depth)?);
                if self.eat(")") {
                    break;
                }
                if !self.eat(",") {
                    return Err(self.fail("expected `,` or `)`"));
                }
            }
        }
        Ok(format!("{word}({})", args.join(", ")))
    }
}

/// `Head(a, b, …)`, or the one item alone.
fn head(name: &str, mut items: Vec<String>) -> String {
    match items.len() {
        1 => items.remove(0),
        _ => format!("{name}({})", items.join(", ")),
    }
}

/// `-x`: a negative literal, or `Mul(Integer(-1), x)`.
fn negated(x: String) -> String {
    match x
        .strip_prefix("Integer(")
        .and_then(|n| n.strip_suffix(')'))
        .and_then(|n| n.parse::<i64>().ok())
        .and_then(i64::checked_neg)
    {
        Some(n) => format!("Integer({n})"),
        None => format!("Mul(Integer(-1), {x})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S0: &str = "Symbol('s0', integer=True, positive=True)";

    #[test]
    fn sizes_read_as_srepr() {
        assert_eq!(to_srepr("s0").unwrap(), S0);
        assert_eq!(to_srepr("7").unwrap(), "Integer(7)");
        assert_eq!(
            to_srepr("24*s0").unwrap(),
            format!("Mul(Integer(24), {S0})")
        );
        assert_eq!(
            to_srepr("s0 + 1").unwrap(),
            format!("Add({S0}, Integer(1))")
        );
        assert_eq!(
            to_srepr("s0 - 2").unwrap(),
            format!("Add({S0}, Integer(-2))")
        );
        assert_eq!(
            to_srepr("Max(2, 3*s0)").unwrap(),
            format!("Max(Integer(2), Mul(Integer(3), {S0}))")
        );
        assert_eq!(to_srepr("s0**2").unwrap(), format!("Pow({S0}, Integer(2))"));
        assert_eq!(
            to_srepr("(s0//2)").unwrap(),
            format!("FloorDiv({S0}, Integer(2))")
        );
    }

    #[test]
    fn sizes_read_by_the_aten_reader_after_the_rewrite() {
        use std::collections::HashMap;
        let text = to_srepr("4*s0 + 8").unwrap();
        let values = HashMap::from([("s0".to_owned(), 3)]);
        assert_eq!(ckpt_aten::sym::substitute(&text, &values).unwrap(), Ok(20));
    }

    #[test]
    fn malformed_text_is_refused() {
        for bad in ["", "s0 +", "(s0", "2x", "s0 ) ", "Max(1 2)", "s0**2**2"] {
            assert!(to_srepr(bad).is_err(), "{bad}");
        }
        let deep = "(".repeat(100) + "s0" + &")".repeat(100);
        assert!(to_srepr(&deep).unwrap_err().contains("nested too deeply"));
    }
}
