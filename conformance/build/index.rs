//! `INDEX.tsv`: one row per case (see the corpus README for the columns).

use std::path::Path;

/// The columns of one `INDEX.tsv` row that the harness uses.
pub struct Row {
    /// Case folder name, e.g. `test_abs`.
    pub case: String,
    /// Op types of the graph's nodes, joined by `+`.
    pub op: String,
    /// The element types of its inputs and outputs, joined by `,`.
    pub dtypes: String,
}

/// Reads the index, checking its header.
pub fn read(path: &Path) -> Result<Vec<Row>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty file")?.split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or(format!("no `{name}` column"));
    let (case, op, dtypes) = (col("case")?, col("op")?, col("dtypes")?);
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            match (f.get(case), f.get(op), f.get(dtypes)) {
                (Some(c), Some(o), Some(d)) => {
                    Ok(Row { case: c.to_string(), op: o.to_string(), dtypes: d.to_string() })
                }
                _ => Err(format!("short row: {l}")),
            }
        })
        .collect()
}
