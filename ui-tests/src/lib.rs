//! Diagnostics tests of `sramfit::model!` live in `tests/` (trybuild cases with `.stderr` snapshots).
