//! Diagnostics tests of `sramfit::model!` live in `tests/`.
