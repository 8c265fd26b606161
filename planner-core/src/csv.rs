//! MiniMalloc's CSV instance format.
//!
//! Header `id,lower,upper,size` in any order, optionally `alignment`; other columns are ignored
//! (an ignored `gaps` column only makes lifetimes longer, so plans stay safe). A buffer is live on
//! the half-open step interval `[lower, upper)`, i.e. on the inclusive span `[lower, upper - 1]`.

use std::fmt;
use std::io::{self, Write};

use crate::problem::{Buffer, Lifetime, Problem};

/// A malformed instance: the 1-based line and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvError {
    /// 1-based line number (the header is line 1).
    pub line: usize,
    /// What is wrong, naming the row's id when it is known.
    pub message: String,
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for CsvError {}

/// Parses an instance. Buffer `i` is the `i`-th data row; its name is the row's `id`.
pub fn read_problem(text: &str) -> Result<Problem, CsvError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty());
    let Some((header_line, header)) = lines.next() else {
        return Err(CsvError { line: 1, message: "empty file: expected a header `id,lower,upper,size`".into() });
    };
    let names: Vec<String> = header.split(',').map(|c| c.trim().to_ascii_lowercase()).collect();
    let err = |line: usize, message: String| CsvError { line, message };
    let column = |name: &str| names.iter().position(|c| c == name);
    let mut cols = [0usize; 4];
    for (slot, name) in cols.iter_mut().zip(["id", "lower", "upper", "size"]) {
        *slot = column(name).ok_or_else(|| err(header_line, format!("missing column `{name}` in the header")))?;
    }
    let [id_col, lower_col, upper_col, size_col] = cols;
    let align_col = column("alignment");
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut ids: Vec<(String, usize)> = Vec::new();
    for (line, row) in lines {
        let fields: Vec<&str> = row.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return Err(err(line, format!("expected {} fields, found {}", names.len(), fields.len())));
        }
        let id = fields[id_col];
        if id.is_empty() {
            return Err(err(line, "empty id".into()));
        }
        let number = |col: usize| -> Result<u64, CsvError> {
            let (name, value) = (&names[col], fields[col]);
            if value.starts_with('-') && value[1..].parse::<u64>().is_ok() {
                return Err(err(line, format!("id `{id}`: `{name}` is negative ({value})")));
            }
            value.parse::<u64>().map_err(|_| err(line, format!("id `{id}`: `{name}` is not a number: `{value}`")))
        };
        let (lower, upper, size) = (number(lower_col)?, number(upper_col)?, number(size_col)?);
        if upper <= lower {
            return Err(err(line, format!("id `{id}`: upper ({upper}) must be greater than lower ({lower})")));
        }
        if upper - 1 > u64::from(u32::MAX) {
            return Err(err(line, format!("id `{id}`: upper ({upper}) is beyond step {}", u64::from(u32::MAX) + 1)));
        }
        let align = match align_col {
            Some(col) => number(col)?,
            None => 1,
        };
        if !align.is_power_of_two() {
            return Err(err(line, format!("id `{id}`: alignment {align} is not a power of two")));
        }
        ids.push((id.to_string(), line));
        buffers.push(Buffer {
            name: id.to_string(),
            size,
            align,
            lifetime: Lifetime::new(lower as u32, (upper - 1) as u32),
        });
    }
    ids.sort();
    if let Some(w) = ids.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(err(w[1].1, format!("duplicate id `{}` (first on line {})", w[1].0, w[0].1)));
    }
    Ok(Problem { buffers })
}

/// Writes `id,offset` rows (with that header), one per buffer in id order of the problem.
pub fn write_offsets(p: &Problem, offsets: &[u64], out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "id,offset")?;
    for (b, offset) in p.buffers.iter().zip(offsets) {
        writeln!(out, "{},{offset}", b.name)?;
    }
    Ok(())
}
