//! Symbolic sizes as torch.export writes them (sympy's `srepr`: `Symbol('s27', positive=True,
//! integer=True)`, `Mul(Integer(32), Symbol('s27', …))`), and substituting values for some
//! of their symbols.
//!
//! Only what sizes of tensors are made of is understood: integers, symbols, sums and
//! products. A substitution must leave a literal or a constant times one remaining symbol
//! (`4·N`), the form the ONNX lowering follows; anything else is refused with the
//! expression named.

use std::collections::HashMap;

/// A parsed size expression.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expr {
    Integer(i64),
    /// A symbol's name (`s27`) and its full text, kept to write it back unchanged.
    Symbol {
        name: String,
        text: String,
    },
    Mul(Vec<Expr>),
    Add(Vec<Expr>),
    /// A power with a literal exponent (`Pow(Symbol('s27', …), Integer(2))`, a stride).
    Pow(Box<Expr>, u32),
    /// `Max`/`Min` (`true` for `Max`): known only once every argument is a literal.
    Extremum(bool, Vec<Expr>),
}

/// An expression after substitution: `constant + coefficient·symbol`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Linear {
    constant: i64,
    /// The coefficient and full text of the one remaining symbol, if any.
    term: Option<(i64, String)>,
}

/// The value of `text` with `values` substituted for their symbols, as the text torch
/// would have written for it: `Ok(Ok(n))` when it became a literal, `Ok(Err(text))` for a
/// constant times one remaining symbol (`Mul(Integer(4), Symbol('s77', …))`). Text naming
/// none of the symbols is returned unchanged without being parsed.
pub fn substitute(
    text: &str,
    values: &HashMap<String, i64>,
) -> Result<Result<i64, String>, String> {
    if !values
        .keys()
        .any(|name| text.contains(&format!("'{name}'")))
    {
        return Ok(Err(text.to_owned()));
    }
    let expr = Parser { text, at: 0 }.expression()?;
    let linear = evaluate(&expr, values).ok_or_else(|| {
        format!("the size `{text}` is not a sum of a constant and a multiple of one symbol")
    })?;
    Ok(match linear.term {
        None => Ok(linear.constant),
        Some((1, symbol)) if linear.constant == 0 => Err(symbol),
        Some((k, symbol)) if linear.constant == 0 => Err(format!("Mul(Integer({k}), {symbol})")),
        Some((k, symbol)) => Err(format!(
            "Add(Integer({}), Mul(Integer({k}), {symbol}))",
            linear.constant
        )),
    })
}

/// The names of the symbols `text` mentions (`s27`), in order of appearance.
pub fn symbols(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("Symbol('") {
        let tail = &rest[at + "Symbol('".len()..];
        let Some(end) = tail.find('\'') else { break };
        let name = tail[..end].to_owned();
        if !found.contains(&name) {
            found.push(name);
        }
        rest = &tail[end..];
    }
    found
}

fn evaluate(expr: &Expr, values: &HashMap<String, i64>) -> Option<Linear> {
    match expr {
        Expr::Integer(n) => Some(Linear {
            constant: *n,
            term: None,
        }),
        Expr::Symbol { name, text } => Some(match values.get(name) {
            Some(&v) => Linear {
                constant: v,
                term: None,
            },
            None => Linear {
                constant: 0,
                term: Some((1, text.clone())),
            },
        }),
        Expr::Add(items) => items.iter().try_fold(
            Linear {
                constant: 0,
                term: None,
            },
            |sum, item| {
                let item = evaluate(item, values)?;
                let term = match (sum.term, item.term) {
                    (None, t) | (t, None) => t,
                    (Some((a, s)), Some((b, t))) if s == t => Some((a.checked_add(b)?, s)),
                    _ => return None,
                };
                Some(Linear {
                    constant: sum.constant.checked_add(item.constant)?,
                    term,
                })
            },
        ),
        Expr::Extremum(is_max, items) => {
            let literals = items
                .iter()
                .map(|item| match evaluate(item, values)? {
                    Linear {
                        constant,
                        term: None,
                    } => Some(constant),
                    _ => None,
                })
                .collect::<Option<Vec<i64>>>()?;
            let pick = if *is_max {
                literals.into_iter().max()
            } else {
                literals.into_iter().min()
            };
            pick.map(|constant| Linear {
                constant,
                term: None,
            })
        }
        Expr::Pow(base, k) => evaluate(&Expr::Mul(vec![(**base).clone(); *k as usize]), values),
        Expr::Mul(items) => items.iter().try_fold(
            Linear {
                constant: 1,
                term: None,
            },
            |product, item| {
                let item = evaluate(item, values)?;
                match (&product.term, &item.term) {
                    (None, None) => Some(Linear {
                        constant: product.constant.checked_mul(item.constant)?,
                        term: None,
                    }),
                    (Some((k, s)), None) if product.constant == 0 => Some(Linear {
                        constant: 0,
                        term: Some((k.checked_mul(item.constant)?, s.clone())),
                    }),
                    (None, Some((k, s))) if item.constant == 0 => Some(Linear {
                        constant: 0,
                        term: Some((k.checked_mul(product.constant)?, s.clone())),
                    }),
                    _ => None,
                }
            },
        ),
    }
}

/// A recursive-descent reader of sympy's `srepr` for the heads sizes use.
struct Parser<'t> {
    text: &'t str,
    at: usize,
}

impl Parser<'_> {
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
        if self.text[self.at..].starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn head(&mut self) -> &str {
        self.skip_spaces();
        let start = self.at;
        let len = self.text[start..]
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(self.text.len() - start);
        self.at += len;
        &self.text[start..start + len]
    }

    /// One or more comma-separated expressions (a call's arguments).
    fn arguments(&mut self) -> Result<Vec<Expr>, String> {
        let mut items = vec![self.expression()?];
        while self.eat(",") {
            items.push(self.expression()?);
        }
        Ok(items)
    }

    fn expression(&mut self) -> Result<Expr, String> {
        self.skip_spaces();
        let start = self.at;
        let head = self.head().to_owned();
        if !self.eat("(") {
            return Err(self.fail("expected `(`"));
        }
        let expr = match head.as_str() {
            "Integer" => {
                let digits_start = self.at;
                let len = self.text[digits_start..]
                    .find(|c: char| !c.is_ascii_digit() && c != '-')
                    .unwrap_or(0);
                self.at += len;
                let n = self.text[digits_start..digits_start + len]
                    .parse()
                    .map_err(|_| self.fail("expected an integer"))?;
                Expr::Integer(n)
            }
            "Symbol" => {
                if !self.eat("'") {
                    return Err(self.fail("expected a quoted name"));
                }
                let len = self.text[self.at..]
                    .find('\'')
                    .ok_or_else(|| self.fail("unterminated name"))?;
                let name = self.text[self.at..self.at + len].to_owned();
                self.at += len + 1;
                // Keyword assumptions (`positive=True`) up to the closing parenthesis.
                let close = self.text[self.at..]
                    .find(')')
                    .ok_or_else(|| self.fail("expected `)`"))?;
                self.at += close;
                Expr::Symbol {
                    name,
                    text: String::new(),
                }
            }
            "Pow" => {
                let base = self.expression()?;
                if !self.eat(",") {
                    return Err(self.fail("expected `,`"));
                }
                match self.expression()? {
                    Expr::Integer(k) if (0..=64).contains(&k) => {
                        Expr::Pow(Box::new(base), k as u32)
                    }
                    _ => return Err(self.fail("expected a small literal exponent")),
                }
            }
            "Max" | "Min" => Expr::Extremum(head == "Max", self.arguments()?),
            "Mul" | "Add" => {
                let items = self.arguments()?;
                if head == "Mul" {
                    Expr::Mul(items)
                } else {
                    Expr::Add(items)
                }
            }
            other => return Err(self.fail(&format!("`{other}` is not a size operation"))),
        };
        if !self.eat(")") {
            return Err(self.fail("expected `)`"));
        }
        Ok(match expr {
            Expr::Symbol { name, .. } => Expr::Symbol {
                name,
                text: self.text[start..self.at].trim_start().to_owned(),
            },
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEQ: &str = "Symbol('s27', positive=True, integer=True)";
    const BATCH: &str = "Symbol('s77', positive=True, integer=True)";

    fn seq(v: i64) -> HashMap<String, i64> {
        HashMap::from([("s27".to_owned(), v)])
    }

    #[test]
    fn a_substituted_symbol_becomes_a_literal() {
        assert_eq!(substitute(SEQ, &seq(7)), Ok(Ok(7)));
        let scaled = format!("Mul(Integer(32), {SEQ})");
        assert_eq!(substitute(&scaled, &seq(7)), Ok(Ok(224)));
        let shifted = format!("Add(Integer(-2), {SEQ})");
        assert_eq!(substitute(&shifted, &seq(7)), Ok(Ok(5)));
    }

    #[test]
    fn the_remaining_symbol_keeps_its_text() {
        assert_eq!(substitute(BATCH, &seq(7)), Ok(Err(BATCH.to_owned())));
        let product = format!("Mul({BATCH}, {SEQ})");
        assert_eq!(
            substitute(&product, &seq(7)),
            Ok(Err(format!("Mul(Integer(7), {BATCH})")))
        );
        let twice = format!("Mul(Integer(2), {SEQ}, {BATCH})");
        assert_eq!(
            substitute(&twice, &seq(3)),
            Ok(Err(format!("Mul(Integer(6), {BATCH})")))
        );
    }

    #[test]
    fn products_of_two_remaining_symbols_and_unknown_heads_are_refused() {
        let other = "Symbol('s1', positive=True, integer=True)";
        let product = format!("Mul({BATCH}, {other}, {SEQ})");
        assert!(substitute(&product, &seq(3)).is_err());
        let floor = format!("FloorDiv({SEQ}, Integer(2))");
        assert!(substitute(&floor, &seq(4))
            .unwrap_err()
            .contains("FloorDiv"));
    }

    #[test]
    fn powers_of_a_substituted_symbol_are_literals() {
        let square = format!("Pow({SEQ}, Integer(2))");
        assert_eq!(substitute(&square, &seq(7)), Ok(Ok(49)));
        let batch_square = format!("Pow({BATCH}, Integer(2))");
        assert!(substitute(&format!("Mul({batch_square}, {SEQ})"), &seq(7)).is_err());
    }

    #[test]
    fn max_and_min_of_literals_are_literals() {
        let clamped = format!("Mul(Integer(4), Max(Integer(1), Add({SEQ}, Integer(-2))))");
        assert_eq!(substitute(&clamped, &seq(7)), Ok(Ok(20)));
        assert!(substitute(&format!("Min({BATCH}, {SEQ})"), &seq(7)).is_err());
    }

    #[test]
    fn symbols_are_listed_once_in_order() {
        let text = format!("Add(Mul({BATCH}, {SEQ}), {SEQ})");
        assert_eq!(symbols(&text), vec!["s77", "s27"]);
    }
}
