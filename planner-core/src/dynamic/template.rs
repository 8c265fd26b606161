//! One step's code at every length merged into one template: the token streams must be identical
//! except for integer literals, and each differing literal becomes a [`Fit`] expression of `n`.

use proc_macro2::{Delimiter, Group, Ident, Literal, TokenStream, TokenTree};

use super::fit::{fit, Fit};

/// Merges `streams[k]` (the code at length `ns[k]`; the last one is the code at the bound, whose
/// spans are kept) into one stream in which every integer literal that differs between lengths is
/// the expression of `n` that takes its value at every length. `Err` describes the first
/// difference that is not such a literal.
pub fn merge(streams: &[TokenStream], ns: &[usize], n: &Ident) -> Result<TokenStream, String> {
    let trees: Vec<Vec<TokenTree>> = streams.iter().map(|s| s.clone().into_iter().collect()).collect();
    let last = trees.last().ok_or("no lengths to merge")?;
    if let Some(k) = trees.iter().position(|t| t.len() != last.len()) {
        return Err(format!("its code has another structure at length {} than at {}", ns[k], ns[ns.len() - 1]));
    }
    let mut out = TokenStream::new();
    for j in 0..last.len() {
        let column: Vec<&TokenTree> = trees.iter().map(|t| &t[j]).collect();
        out.extend([merge_tree(&column, ns, n)?]);
    }
    Ok(out)
}

/// One token position across lengths.
fn merge_tree(column: &[&TokenTree], ns: &[usize], n: &Ident) -> Result<TokenTree, String> {
    let last = *column.last().ok_or("no lengths to merge")?;
    let differs = |k: usize| format!("`{}` at length {} but `{last}` at {}", column[k], ns[k], ns[ns.len() - 1]);
    match last {
        TokenTree::Group(g) => {
            let mut inner = Vec::with_capacity(column.len());
            for (k, t) in column.iter().enumerate() {
                match t {
                    TokenTree::Group(h) if h.delimiter() == g.delimiter() => inner.push(h.stream()),
                    _ => return Err(format!("its code differs between lengths: {}", differs(k))),
                }
            }
            let mut merged = Group::new(g.delimiter(), merge(&inner, ns, n)?);
            merged.set_span(g.span());
            Ok(TokenTree::Group(merged))
        }
        TokenTree::Literal(lit) => {
            let text = lit.to_string();
            if column.iter().all(|t| t.to_string() == text) {
                return Ok(last.clone());
            }
            literal(column, ns, n).map_err(|k| {
                format!("a value differs between lengths that is no integer expression of the length ({})", differs(k))
            })
        }
        _ => match column.iter().position(|t| t.to_string() != last.to_string()) {
            None => Ok(last.clone()),
            Some(k) => Err(format!("its code differs between lengths: {}", differs(k))),
        },
    }
}

/// An integer literal that varies with the length, as a parenthesised expression of `n`; `Err(k)`
/// names a length whose token is not an integer of the same type, or `Err(0)` when no [`Fit`]
/// matches every length.
fn literal(column: &[&TokenTree], ns: &[usize], n: &Ident) -> Result<TokenTree, usize> {
    let mut values = Vec::with_capacity(column.len());
    let mut suffix = None;
    for (k, t) in column.iter().enumerate() {
        let TokenTree::Literal(l) = t else { return Err(k) };
        let (v, s) = integer(l).ok_or(k)?;
        if suffix.get_or_insert(s.clone()) != &s {
            return Err(k);
        }
        values.push(v);
    }
    let f: Fit = fit(ns, &values).ok_or(0usize)?;
    if values.iter().any(|&v| v < 0) || !matches!(suffix.as_deref(), Some("usize" | "")) {
        return Err(0);
    }
    let e = f.to_tokens(n);
    let mut tokens = e.clone().into_iter();
    match (tokens.next(), tokens.next()) {
        (Some(single), None) => Ok(single),
        _ => Ok(TokenTree::Group(Group::new(Delimiter::Parenthesis, e))),
    }
}

/// The value and suffix of an integer literal (`12usize` -> (12, "usize")).
fn integer(l: &Literal) -> Option<(i64, String)> {
    let s = l.to_string();
    let digits = s.find(|c: char| !c.is_ascii_digit() && c != '_').unwrap_or(s.len());
    let (num, suffix) = s.split_at(digits);
    if num.is_empty() || !(suffix.is_empty() || suffix.starts_with(['u', 'i'])) {
        return None;
    }
    Some((num.replace('_', "").parse().ok()?, suffix.to_string()))
}

#[cfg(test)]
mod tests {
    use quote::{format_ident, quote};

    use super::*;

    #[test]
    fn integer_literals_that_vary_become_expressions_of_n() {
        let ns = [1, 2, 3];
        let streams: Vec<TokenStream> = ns
            .iter()
            .map(|&k| {
                let len = 40 * k;
                quote!(f(&[1usize, #len], 2.5f32))
            })
            .collect();
        let merged = merge(&streams, &ns, &format_ident!("n")).unwrap();
        assert_eq!(merged.to_string(), quote!(f(&[1usize, (40 * n)], 2.5f32)).to_string());
    }

    #[test]
    fn other_differences_are_errors() {
        let ns = [1, 2];
        let floats: Vec<TokenStream> = [1.0f32, 0.5].iter().map(|v| quote!(g(#v))).collect();
        let e = merge(&floats, &ns, &format_ident!("n")).unwrap_err();
        assert!(e.contains("no integer expression") && e.contains("1f32"), "{e}");
        let shapes = [quote!(a(1usize)), quote!(a(1usize, 2usize))];
        assert!(merge(&shapes, &ns, &format_ident!("n")).unwrap_err().contains("structure"));
    }
}
