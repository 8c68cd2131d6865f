//! Protocol 0 numbers (`INT`, `LONG`, `GET`, `PUT`) as text, judged against what CPython's C
//! unpickler (`Modules/_pickle.c`, the one `torch.load` runs) accepts.
//!
//! Python's picklers write these arguments as canonical decimal only (`repr(int)`, plus a
//! trailing `L` for `LONG`, and `00`/`01` for booleans as `INT`). CPython reads far more:
//! `INT` with C `strtol(s, 0)` and then `int(s, 0)` (`0x1f`, `0o17`, `0b1`, `010` as octal 8,
//! `1_000`, surrounding whitespace, a sign, text after a NUL byte), `LONG` with `int(s, 0)`,
//! memo indices with `int(s, 10)` (leading zeros, underscores, whitespace). A reader that
//! parsed such text its own way would see another number, or another memo entry, than torch.
//! So every argument is classified: [`Text::Canonical`] is read, [`Text::Ambiguous`] is an
//! evasion (CPython accepts it, no pickler writes it), [`Text::Rejected`] fails as in CPython.

/// How one textual number argument reads.
#[derive(Debug, PartialEq, Eq)]
pub enum Text<'a> {
    /// Canonical decimal: an optional `-` and digits without leading zeros. The digits only.
    Canonical {
        /// Whether a `-` precedes the digits.
        negative: bool,
        /// The ASCII digits.
        digits: &'a [u8],
    },
    /// Not canonical, yet CPython accepts it.
    Ambiguous,
    /// CPython refuses it (and so the pickle fails under `torch.load` too).
    Rejected,
}

/// An `INT` argument (the line without its newline). `00` and `01` (booleans) are left to the
/// caller; they are canonical too.
pub fn int_text(line: &[u8]) -> Text<'_> {
    if let Some(text) = canonical(line, true) {
        return text;
    }
    let c = c_string(line);
    if strtol_accepts(&c) || pylong_accepts(&c, Base::Auto) {
        Text::Ambiguous
    } else {
        Text::Rejected
    }
}

/// A `LONG` argument (the line without its newline). The canonical form ends in `L` (Python 2
/// and 3 both write it); CPython also accepts the digits without it.
pub fn long_text(line: &[u8]) -> Text<'_> {
    let body = line.strip_suffix(b"L").unwrap_or(line);
    if let Some(text) = canonical(body, true) {
        return text;
    }
    if pylong_accepts(&c_string(body), Base::Auto) {
        Text::Ambiguous
    } else {
        Text::Rejected
    }
}

/// A `GET`/`PUT` memo index (the line without its newline). CPython reads it with
/// `int(s, 10)` and refuses a negative index.
pub fn index_text(line: &[u8]) -> Text<'_> {
    if let Some(text) = canonical(line, false) {
        return text;
    }
    let c = c_string(line);
    if pylong_accepts(&c, Base::Ten) && !is_negative_nonzero(&c) {
        Text::Ambiguous
    } else {
        Text::Rejected
    }
}

/// `-?(0|[1-9][0-9]*)` (no `-0`), the only form Python's picklers write.
fn canonical(text: &[u8], signed: bool) -> Option<Text<'_>> {
    let (negative, digits) = match text.strip_prefix(b"-") {
        Some(rest) if signed => (true, rest),
        Some(_) => return None,
        None => (false, text),
    };
    let ok = match digits {
        [] => false,
        [b'0'] => !negative,
        [first, ..] => *first != b'0' && digits.iter().all(u8::is_ascii_digit),
    };
    ok.then_some(Text::Canonical { negative, digits })
}

/// The line as C sees it: `_pickle` copies it with its newline and a NUL terminator, so C
/// string functions stop at the first NUL byte inside it.
fn c_string(line: &[u8]) -> Vec<u8> {
    let mut s: Vec<u8> = line.iter().copied().take_while(|&b| b != 0).collect();
    if s.len() == line.len() {
        s.push(b'\n');
    }
    s
}

/// C `isspace` in the C locale, which is also Python's `Py_ISSPACE` for ASCII.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Whether C `strtol(s, &end, 0)` converts all of `s` up to its final newline without
/// overflowing a 64-bit `long`, the test `load_int` applies first.
fn strtol_accepts(s: &[u8]) -> bool {
    let Some(newline) = s.iter().position(|&b| b == b'\n') else {
        return false;
    };
    if newline + 1 != s.len() {
        return false;
    }
    let mut i = s.iter().take_while(|&&b| is_space(b)).count();
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let hex_prefix = s.get(i) == Some(&b'0')
        && matches!(s.get(i + 1), Some(b'x' | b'X'))
        && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
    let radix = if hex_prefix {
        i += 2;
        16
    } else if s.get(i) == Some(&b'0') {
        8
    } else {
        10
    };
    let start = i;
    let mut value: i128 = 0;
    while let Some(d) = s.get(i).and_then(|&b| char::from(b).to_digit(radix)) {
        value = value.saturating_mul(i128::from(radix)) + i128::from(d);
        i += 1;
    }
    let value = if negative { -value } else { value };
    i > start && i == newline && i64::try_from(value).is_ok()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    /// `int(s, 0)`: a `0x`/`0o`/`0b` prefix picks the base, else decimal without leading zeros.
    Auto,
    /// `int(s, 10)`.
    Ten,
}

/// Whether CPython's `PyLong_FromString(s, NULL, base)` accepts `s` (whitespace around,
/// a sign, single underscores between digits and after a base prefix).
fn pylong_accepts(s: &[u8], base: Base) -> bool {
    let end = s.len() - s.iter().rev().take_while(|&&b| is_space(b)).count();
    let mut i = s.iter().take_while(|&&b| is_space(b)).count();
    if i >= end {
        return false;
    }
    if matches!(s[i], b'+' | b'-') {
        i += 1;
    }
    let body = &s[i.min(end)..end];
    let (radix, digits, zeros_only) = match (base, body) {
        (Base::Auto, [b'0', b'x' | b'X', rest @ ..]) => (16, strip_underscore(rest), false),
        (Base::Auto, [b'0', b'o' | b'O', rest @ ..]) => (8, strip_underscore(rest), false),
        (Base::Auto, [b'0', b'b' | b'B', rest @ ..]) => (2, strip_underscore(rest), false),
        (Base::Auto, [b'0', ..]) => (10, body, true),
        _ => (10, body, false),
    };
    digit_run(digits, radix) && (!zeros_only || digits.iter().all(|&b| b == b'0' || b == b'_'))
}

/// After a base prefix Python allows one underscore (`0x_1f`).
fn strip_underscore(rest: &[u8]) -> &[u8] {
    rest.strip_prefix(b"_").unwrap_or(rest)
}

/// At least one digit of `radix`, with single underscores only between digits.
fn digit_run(digits: &[u8], radix: u32) -> bool {
    !digits.is_empty()
        && digits
            .split(|&b| b == b'_')
            .all(|group| !group.is_empty() && group.iter().all(|&b| char::from(b).is_digit(radix)))
}

/// `-` followed by a number that is not zero: an index CPython refuses after parsing it.
fn is_negative_nonzero(s: &[u8]) -> bool {
    let t: Vec<u8> = s.iter().copied().filter(|&b| !is_space(b)).collect();
    t.first() == Some(&b'-') && t.iter().any(|&b| matches!(b, b'1'..=b'9'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_decimal_is_read() {
        for line in [&b"0"[..], b"7", b"-12", b"123456789012345678901234567890"] {
            assert!(matches!(int_text(line), Text::Canonical { .. }), "{line:?}");
        }
        assert!(matches!(
            long_text(b"-5L"),
            Text::Canonical { negative: true, .. }
        ));
        assert!(matches!(long_text(b"5"), Text::Canonical { .. }));
        assert!(matches!(index_text(b"41"), Text::Canonical { .. }));
    }

    #[test]
    fn int_forms_cpython_accepts_are_ambiguous() {
        // Each one loads under CPython 3.11's C unpickler (checked with pickle.loads).
        for line in [
            &b"0x10"[..],
            b"0X1f",
            b"0o17",
            b"0b101",
            b"010",
            b"1_000",
            b" 5",
            b"5 ",
            b"+5",
            b"-0",
            b"5\x00junk",
            b"0_0",
            b"0x_1f",
            b"99999999999999999999_9",
        ] {
            assert_eq!(int_text(line), Text::Ambiguous, "{line:?}");
        }
    }

    #[test]
    fn int_forms_cpython_refuses_are_rejected() {
        for line in [
            &b"1__0"[..],
            b"_1",
            b"1_",
            b"0x",
            b"abc",
            b" ",
            b"08",
            b"0_10",
            b"1.5",
        ] {
            assert_eq!(int_text(line), Text::Rejected, "{line:?}");
        }
    }

    #[test]
    fn long_forms_follow_int_base_zero() {
        assert_eq!(long_text(b"0x10L"), Text::Ambiguous);
        assert_eq!(long_text(b"1_0L"), Text::Ambiguous);
        assert_eq!(long_text(b" 10 "), Text::Ambiguous);
        // strtol is not tried for LONG: a leading zero is refused.
        assert_eq!(long_text(b"010L"), Text::Rejected);
        assert_eq!(long_text(b"L"), Text::Rejected);
    }

    #[test]
    fn memo_index_with_underscores_or_zeros_is_ambiguous() {
        assert_eq!(index_text(b"1_0"), Text::Ambiguous);
        assert_eq!(index_text(b"007"), Text::Ambiguous);
        assert_eq!(index_text(b"+3"), Text::Ambiguous);
        assert_eq!(index_text(b"3 "), Text::Ambiguous);
        assert_eq!(index_text(b"-0"), Text::Ambiguous);
        assert_eq!(index_text(b"-1"), Text::Rejected);
        assert_eq!(index_text(b"0x3"), Text::Rejected);
    }
}
