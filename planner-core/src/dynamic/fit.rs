//! Integer expressions of the run-time length `n`, found from the values they take at every length.
//!
//! A shape, a stride or an offset that depends on a dynamic dimension is, for the operators sramfit
//! lowers, `a * floor((n + c) / d) + b`: affine in `n` (`d = 1`), or affine in the output length
//! of a strided window (`floor((n + pad - kernel) / stride) + 1`, nested windows included, since
//! `floor(floor(x / s) / t) = floor(x / (s t))`); or quadratic in `n` (`a2 * n * n + a * n + b`:
//! the sizes of an attention matrix, sequence by sequence). [`fit`] finds such an expression from
//! the values at every length of the range and checks it at all of them: the check is the proof.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;

/// `a2 * n * n + a * floor((n + c) / d) + b`, with `d >= 1`, `0 <= c < d`, and `a2 = 0` unless
/// `d = 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fit {
    /// Coefficient of `n * n`.
    pub a2: i64,
    /// Slope.
    pub a: i64,
    /// Offset added to `n` before the division.
    pub c: i64,
    /// Divisor (1: affine in `n`).
    pub d: i64,
    /// Constant term.
    pub b: i64,
}

impl Fit {
    /// A constant.
    pub fn constant(b: i64) -> Fit {
        Fit { a2: 0, a: 0, c: 0, d: 1, b }
    }

    /// The value at length `n`.
    pub fn at(&self, n: usize) -> i64 {
        let n = n as i64;
        self.a2 * n * n + self.a * ((n + self.c).div_euclid(self.d)) + self.b
    }

    /// A `usize` expression of the variable `n` (itself a `usize`) with this value, without
    /// enclosing parentheses. It never underflows when the value is non-negative at `n` (checked
    /// by [`fit`] over the range): positive terms come first, and each subtrahend is at most the
    /// partial result it is taken from.
    pub fn to_tokens(&self, n: &Ident) -> TokenStream {
        let lit = |v: i64| Literal::u64_unsuffixed(v.unsigned_abs());
        let (c, d) = (lit(self.c), lit(self.d));
        let q = match (self.c, self.d) {
            (0, 1) => quote!(#n),
            (_, 1) => quote!((#n + #c)),
            (0, _) => quote!((#n / #d)),
            _ => quote!(((#n + #c) / #d)),
        };
        let scaled = |k: i64, t: TokenStream| {
            if k.abs() == 1 {
                t
            } else {
                let k = lit(k);
                quote!(#k * #t)
            }
        };
        let b = lit(self.b);
        let terms = [(self.a2, scaled(self.a2, quote!(#n * #n))), (self.a, scaled(self.a, q)), (self.b, quote!(#b))];
        let mut out: Option<TokenStream> = None;
        for (_, t) in terms.iter().filter(|(k, _)| *k > 0) {
            out = Some(match out {
                None => t.clone(),
                Some(o) => quote!(#o + #t),
            });
        }
        let mut out = out.unwrap_or_else(|| quote!(0));
        for (_, t) in terms.iter().filter(|(k, _)| *k < 0) {
            out = quote!(#out - #t);
        }
        out
    }
}

/// The simplest expression equal to `values[k]` at `ns[k]` for every `k` (`ns` increasing), if
/// there is one: a constant, then affine, then with the smallest divisor.
pub fn fit(ns: &[usize], values: &[i64]) -> Option<Fit> {
    let (&n0, &v0) = (ns.first()?, values.first()?);
    if values.iter().all(|&v| v == v0) {
        return Some(Fit::constant(v0));
    }
    let max_d = *ns.last()? as i64;
    for d in 1..=max_d {
        for c in 0..d {
            let q = |n: usize| (n as i64 + c).div_euclid(d);
            let Some(k) = ns.iter().position(|&n| q(n) != q(n0)) else { continue };
            let (dq, dv) = (q(ns[k]) - q(n0), values[k] - v0);
            if dv % dq != 0 {
                continue;
            }
            let a = dv / dq;
            let f = Fit { a2: 0, a, c, d, b: v0 - a * q(n0) };
            if checks(&f, ns, values) {
                return Some(f);
            }
        }
    }
    quadratic(ns, values)
}

/// `a2 * n * n + a * n + b` through the first three lengths, if integral and right at all.
fn quadratic(ns: &[usize], values: &[i64]) -> Option<Fit> {
    let (&[n0, n1, n2, ..], &[v0, v1, v2, ..]) = (ns, values) else { return None };
    let [n0, n1, n2] = [n0, n1, n2].map(|n| n as i64);
    // Divided differences.
    let (d01, d12) = ((v1 - v0) * (n2 - n1), (v2 - v1) * (n1 - n0));
    let den = (n1 - n0) * (n2 - n1) * (n2 - n0);
    if (d12 - d01) % den != 0 {
        return None;
    }
    let a2 = (d12 - d01) / den;
    let rest = |n: i64, v: i64| v - a2 * n * n;
    let (r0, r1) = (rest(n0, v0), rest(n1, v1));
    if (r1 - r0) % (n1 - n0) != 0 {
        return None;
    }
    let a = (r1 - r0) / (n1 - n0);
    let f = Fit { a2, a, c: 0, d: 1, b: r0 - a * n0 };
    checks(&f, ns, values).then_some(f)
}

fn checks(f: &Fit, ns: &[usize], values: &[i64]) -> bool {
    ns.iter().zip(values).all(|(&n, &v)| f.at(n) == v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(ns: &[usize], f: impl Fn(i64) -> i64) -> Vec<i64> {
        ns.iter().map(|&n| f(n as i64)).collect()
    }

    #[test]
    fn finds_affine_and_strided_window_lengths() {
        let ns: Vec<usize> = (1..=98).collect();
        assert_eq!(fit(&ns, &values(&ns, |n| 40 * n + 16)), Some(Fit { a2: 0, a: 40, c: 0, d: 1, b: 16 }));
        assert_eq!(fit(&ns, &values(&ns, |_| 7)), Some(Fit::constant(7)));
        // Two stride-2 windows: ceil(ceil(n / 2) / 2) = floor((n + 3) / 4), times 12 channels.
        let f = fit(&ns, &values(&ns, |n| 12 * (((n + 1) / 2 + 1) / 2))).unwrap();
        assert_eq!((f.a, f.d), (12, 4));
        assert!(ns.iter().all(|&n| f.at(n) == 12 * (((n as i64 + 1) / 2 + 1) / 2)));
    }

    #[test]
    fn finds_attention_matrix_sizes() {
        let ns: Vec<usize> = (2..=24).collect();
        let f = fit(&ns, &values(&ns, |n| 2 * n * n + 32 * n)).unwrap();
        assert_eq!((f.a2, f.a, f.b), (2, 32, 0));
    }

    #[test]
    fn refuses_what_is_not_of_the_form() {
        let ns: Vec<usize> = (1..=20).collect();
        assert_eq!(fit(&ns, &values(&ns, |n| n * n * n)), None);
        // 1/n as a float's bit pattern is no integer function of this kind either.
        assert_eq!(fit(&ns, &values(&ns, |n| (1.0f32 / n as f32).to_bits() as i64)), None);
    }

    #[test]
    fn tokens_evaluate_to_the_fitted_values() {
        let n = quote::format_ident!("n");
        let f = Fit { a2: 0, a: -3, c: 1, d: 2, b: 100 };
        assert_eq!(f.to_tokens(&n).to_string(), "100 - 3 * ((n + 1) / 2)");
        assert_eq!(Fit { a2: 2, a: 1, c: 0, d: 1, b: -2 }.to_tokens(&n).to_string(), "2 * n * n + n - 2");
    }
}
