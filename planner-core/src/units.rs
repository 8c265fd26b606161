//! Byte counts and plain counts as people write them, parsed once for every front end: `model!`
//! literals (`64 KiB`), `sramfit-build` strings and the CLI's flags (`--sram 64KiB`,
//! `--limit fold_bytes=64MiB`).

/// The units a byte count may carry, with their factor (no unit means bytes).
pub const BYTE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("bytes", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("kB", 1000),
    ("KB", 1000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
];

/// What is wrong with a written quantity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitError {
    /// Not a number (optionally with `_` separators) followed by an optional unit.
    Malformed,
    /// The unit is none of [`BYTE_UNITS`] (or a count was given a unit).
    UnknownUnit(String),
    /// The value does not fit in 64 bits.
    Overflow,
}

impl std::fmt::Display for UnitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitError::Malformed => write!(f, "expected a number such as `65536` or `64 KiB`"),
            UnitError::UnknownUnit(u) => write!(f, "unknown unit `{u}`; use {}", unit_list()),
            UnitError::Overflow => write!(f, "the value does not fit in 64 bits"),
        }
    }
}

/// `bytes, B, KiB, MiB, GiB, kB, MB or GB` for messages.
pub fn unit_list() -> String {
    let names: Vec<&str> = BYTE_UNITS.iter().map(|(u, _)| *u).filter(|u| *u != "KB").collect();
    let (last, rest) = names.split_last().expect("units exist");
    format!("{} or {last}", rest.join(", "))
}

/// The factor of `unit` (`""` is bytes).
pub fn byte_unit(unit: &str) -> Result<u64, UnitError> {
    match unit {
        "" => Ok(1),
        u => BYTE_UNITS.iter().find(|(name, _)| *name == u).map(|(_, f)| *f).ok_or(UnitError::UnknownUnit(u.into())),
    }
}

/// `n` units of `unit` in bytes.
pub fn bytes_of(n: u64, unit: &str) -> Result<u64, UnitError> {
    n.checked_mul(byte_unit(unit)?).ok_or(UnitError::Overflow)
}

/// `65536`, `64KiB`, `64 KiB`, `1_000 kB`, `2 GiB`: a byte count.
pub fn parse_bytes(text: &str) -> Result<u64, UnitError> {
    let (n, unit) = split(text)?;
    bytes_of(n, unit)
}

/// `100000` or `100_000`: a plain count (no unit).
pub fn parse_count(text: &str) -> Result<u64, UnitError> {
    match split(text)? {
        (n, "") => Ok(n),
        (_, unit) => Err(UnitError::UnknownUnit(unit.into())),
    }
}

/// The number and the (trimmed) unit after it.
fn split(text: &str) -> Result<(u64, &str), UnitError> {
    let text = text.trim();
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '_')).unwrap_or(text.len());
    let digits: String = text[..end].chars().filter(|&c| c != '_').collect();
    if digits.is_empty() {
        return Err(UnitError::Malformed);
    }
    let n = digits.parse::<u64>().map_err(|_| UnitError::Overflow)?;
    Ok((n, text[end..].trim()))
}

/// `bytes` rounded up to a whole number of the largest binary unit it reaches: `16 GiB`,
/// `513 MiB`, `2 KiB`, `100 B` (for suggesting a limit that is enough).
pub fn round_up_units(bytes: u64) -> String {
    match [(30, "GiB"), (20, "MiB"), (10, "KiB")].into_iter().find(|(shift, _)| bytes >> shift > 0) {
        Some((shift, unit)) => format!("{} {unit}", bytes.div_ceil(1 << shift)),
        None => format!("{bytes} B"),
    }
}

/// `64 KiB`-style rendering for messages.
pub fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        format!("{:.2} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_with_and_without_units() {
        assert_eq!(parse_bytes("65536"), Ok(65536));
        assert_eq!(parse_bytes("64KiB"), Ok(65536));
        assert_eq!(parse_bytes(" 64 KiB "), Ok(65536));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("2 GiB"), Ok(1 << 31));
        assert_eq!(parse_bytes("64kB"), Ok(64000));
        assert_eq!(parse_bytes("1_000 B"), Ok(1000));
        assert_eq!(parse_bytes("3 GB"), Ok(3_000_000_000));
    }

    #[test]
    fn bad_byte_counts() {
        assert_eq!(parse_bytes("lots"), Err(UnitError::Malformed));
        assert_eq!(parse_bytes(""), Err(UnitError::Malformed));
        assert_eq!(parse_bytes("12 parsecs"), Err(UnitError::UnknownUnit("parsecs".into())));
        assert_eq!(parse_bytes("99999999999999999999"), Err(UnitError::Overflow));
        assert_eq!(parse_bytes("17179869184 GiB"), Err(UnitError::Overflow));
        assert!(UnitError::UnknownUnit("x".into()).to_string().ends_with("MB or GB"));
    }

    #[test]
    fn counts_take_no_unit() {
        assert_eq!(parse_count("100_000"), Ok(100_000));
        assert_eq!(parse_count("7 KiB"), Err(UnitError::UnknownUnit("KiB".into())));
    }
}
