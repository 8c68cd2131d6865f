//! Output name templates: `{stem}`, `{name}` and `{sha8}` expanded per input.

use std::fmt;

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    /// The input's file name without its checkpoint extension (see [`stem`]).
    Stem,
    /// The input's whole file name.
    Name,
    /// The first 8 hex digits of the input's SHA-256.
    Sha8,
}

/// A parsed name template. Invariant: it expands to a non-empty plain file name (no `/`, not
/// `.` or `..`) for every input, because literal text may hold no `/` and at least one
/// placeholder or text is present.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    source: String,
    parts: Vec<Part>,
}

/// Why a template is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    #[error("unknown placeholder `{{{0}}}` (use {{stem}}, {{name}} or {{sha8}})")]
    Unknown(String),
    #[error("unbalanced `{{` or `}}` in `{0}`")]
    Unbalanced(String),
    #[error("`{0}` must be a file name: no `/`, and not empty, `.` or `..`")]
    NotAFileName(String),
}

/// What a template is expanded with.
#[derive(Clone, Copy, Debug)]
pub struct Fields<'a> {
    /// The input's file name.
    pub name: &'a str,
    /// The input's SHA-256, hex.
    pub sha256: &'a str,
}

impl Template {
    pub fn parse(source: &str) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = source;
        while !rest.is_empty() {
            match (rest.find('{'), rest.find('}')) {
                (Some(open), close) if close.is_none_or(|c| c > open) => {
                    if open > 0 {
                        parts.push(Part::Text(rest[..open].to_owned()));
                    }
                    let after = &rest[open + 1..];
                    let end = after
                        .find('}')
                        .ok_or_else(|| TemplateError::Unbalanced(source.to_owned()))?;
                    let field = &after[..end];
                    parts.push(match field {
                        "stem" => Part::Stem,
                        "name" => Part::Name,
                        "sha8" => Part::Sha8,
                        _ if field.contains('{') => {
                            return Err(TemplateError::Unbalanced(source.to_owned()))
                        }
                        other => return Err(TemplateError::Unknown(other.to_owned())),
                    });
                    rest = &after[end + 1..];
                }
                (None, None) => {
                    parts.push(Part::Text(rest.to_owned()));
                    rest = "";
                }
                _ => return Err(TemplateError::Unbalanced(source.to_owned())),
            }
        }
        let literal = parts.iter().all(|p| matches!(p, Part::Text(_)));
        let text: String = parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        if text.contains('/') || (literal && matches!(text.as_str(), "" | "." | "..")) {
            return Err(TemplateError::NotAFileName(source.to_owned()));
        }
        Ok(Template {
            source: source.to_owned(),
            parts,
        })
    }

    /// Whether the expansion depends on the input's content.
    pub fn uses_hash(&self) -> bool {
        self.parts.contains(&Part::Sha8)
    }

    /// The output base name for one input.
    pub fn expand(&self, fields: Fields<'_>) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.as_str(),
                Part::Stem => stem(fields.name),
                Part::Name => fields.name,
                Part::Sha8 => fields.sha256.get(..8).unwrap_or(fields.sha256),
            })
            .collect()
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Compound extensions stripped whole by `{stem}`.
const COMPOUND: [&str; 2] = [".pth.tar", ".pt.tar"];

/// A file name without its checkpoint extension: `a.pth.tar` → `a`, `b.pth` → `b`,
/// `c.v2.ckpt` → `c.v2`, `noext` → `noext`, `.hidden` → `.hidden`.
pub fn stem(name: &str) -> &str {
    if let Some(base) = COMPOUND
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .filter(|b| !b.is_empty())
    {
        return base;
    }
    match name.rfind('.') {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn expand(template: &str, name: &str) -> String {
        Template::parse(template)
            .expect("template")
            .expand(Fields { name, sha256: SHA })
    }

    #[test]
    fn placeholders_expand() {
        assert_eq!(expand("{stem}-{sha8}", "resnet.pth.tar"), "resnet-01234567");
        assert_eq!(expand("{name}", "a.pth"), "a.pth");
        assert_eq!(expand("release_{stem}", "m.v2.ckpt"), "release_m.v2");
        assert_eq!(expand("fixed", "x.pt"), "fixed");
        assert!(Template::parse("{stem}-{sha8}").expect("t").uses_hash());
        assert!(!Template::parse("{stem}").expect("t").uses_hash());
    }

    #[test]
    fn stems() {
        assert_eq!(stem("a.pth.tar"), "a");
        assert_eq!(stem("a.pt"), "a");
        assert_eq!(stem("noext"), "noext");
        assert_eq!(stem(".hidden"), ".hidden");
        assert_eq!(stem(".pth.tar"), ".pth");
    }

    #[test]
    fn bad_templates_are_refused() {
        assert_eq!(
            Template::parse("{stem}-{hash}"),
            Err(TemplateError::Unknown("hash".into()))
        );
        assert!(matches!(
            Template::parse("{stem"),
            Err(TemplateError::Unbalanced(_))
        ));
        assert!(matches!(
            Template::parse("stem}"),
            Err(TemplateError::Unbalanced(_))
        ));
        assert!(matches!(
            Template::parse("{{stem}}"),
            Err(TemplateError::Unbalanced(_))
        ));
        assert!(matches!(
            Template::parse("sub/{stem}"),
            Err(TemplateError::NotAFileName(_))
        ));
        assert!(matches!(
            Template::parse(".."),
            Err(TemplateError::NotAFileName(_))
        ));
        assert!(matches!(
            Template::parse(""),
            Err(TemplateError::NotAFileName(_))
        ));
    }
}
