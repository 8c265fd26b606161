//! Rust identifiers for graph inputs and outputs (the parameters of `run`).

use proc_macro2::{Ident, Span};

pub(crate) const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self",
    "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract",
    "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
    "arena", "base", "inputs", "outputs",
];

/// A snake_case identifier for `name`, distinct from every identifier in `taken` (then added to it).
pub fn unique_ident(name: &str, fallback: &str, taken: &mut Vec<String>) -> Ident {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
        .collect::<String>()
        .split('_')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    if s.is_empty() {
        s = fallback.to_string();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s = format!("{fallback}_{s}");
    }
    if KEYWORDS.contains(&s.as_str()) {
        s.push('_');
    }
    let mut candidate = s.clone();
    let mut n = 1;
    while taken.contains(&candidate) {
        candidate = format!("{s}_{n}");
        n += 1;
    }
    taken.push(candidate.clone());
    Ident::new(&candidate, Span::call_site())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_and_dedupes() {
        let mut taken = Vec::new();
        assert_eq!(unique_ident("input.1", "input", &mut taken).to_string(), "input_1");
        assert_eq!(unique_ident("Input:1", "input", &mut taken).to_string(), "input_1_1");
        assert_eq!(unique_ident("0", "input", &mut taken).to_string(), "input_0");
        assert_eq!(unique_ident("type", "input", &mut taken).to_string(), "type_");
        assert_eq!(unique_ident("..", "output", &mut taken).to_string(), "output");
    }
}
