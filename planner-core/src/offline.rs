//! Offline plans: a plan computed ahead of time (`sramfit plan MODEL.onnx --search-long`), saved
//! beside the model as `MODEL.plan.json`, and reused by `model!` and `sramfit-build`.
//!
//! The idea is TensorFlow Lite Micro's offline planner and sqlx's offline mode: spend minutes once,
//! check the result into the repository, and let every build use it. A plan file is keyed by the
//! model file's SHA-256, the planner version and the SHA-256 of the planning [`Problem`] (which
//! changes with `inputs:` shapes or with a different lowering). A file with another key is *stale*:
//! it is ignored, the compiler plans as usual and says so in the module docs. A file whose key
//! matches is used as the plan, and [`crate::compile`] verifies it like any other plan before any
//! code is emitted, so a hand-edited or corrupted file can never produce unsafe code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::CompileError;
use crate::plan::{self, Algorithm, Plan};
use crate::problem::Problem;

/// Version of the plan file format.
pub const FORMAT: u32 = 1;

/// The planner version written into plan files: plans of other versions are stale.
pub const PLANNER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// One planned buffer of a [`PlanFile`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedBuffer {
    /// The buffer's name (its tensor, or `scratch@STEP`).
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// Byte offset in the arena.
    pub offset: u64,
}

/// The contents of `MODEL.plan.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanFile {
    /// [`FORMAT`] of the writer.
    pub format: u32,
    /// [`PLANNER_VERSION`] of the writer.
    pub planner_version: String,
    /// SHA-256 of the model file, lower-case hex (what `sha256sum MODEL.onnx` prints).
    pub model_sha256: String,
    /// SHA-256 of the planning problem (see [`problem_sha256`]).
    pub problem_sha256: String,
    /// The arena size: the highest `offset + size`.
    pub arena_bytes: u64,
    /// The problem's lower bound, for the reader's information.
    pub lower_bound_bytes: u64,
    /// The algorithm that found the plan.
    pub algorithm: Algorithm,
    /// Whether the plan is proven optimal.
    pub optimal: bool,
    /// The search budget the writer used, in work units.
    pub search_steps: u64,
    /// Every buffer of the problem, in problem order.
    pub buffers: Vec<PlannedBuffer>,
}

/// Where a program's plan came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanSource {
    /// Planned while compiling.
    Planner,
    /// Read from this plan file, which matched the model (and then passed verification).
    File(PathBuf),
    /// A plan file exists but belongs to something else; the compiler planned instead.
    Stale {
        /// The ignored file.
        file: PathBuf,
        /// Why it does not match.
        reason: String,
    },
}

impl PlanSource {
    /// The plan file that was read (used or stale): a build must be redone when it changes.
    pub fn file(&self) -> Option<&Path> {
        match self {
            PlanSource::Planner => None,
            PlanSource::File(file) | PlanSource::Stale { file, .. } => Some(file),
        }
    }
}

/// `dir/model.onnx` -> `dir/model.plan.json`.
pub fn plan_path(model: &Path) -> PathBuf {
    model.with_extension("plan.json")
}

/// SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// SHA-256 of a canonical text of the problem: every buffer's name, size, alignment and lifetime
/// spans, in order. Two problems with the same digest accept the same offsets.
pub fn problem_sha256(p: &Problem) -> String {
    let mut text = String::new();
    for b in &p.buffers {
        let _ = write!(text, "{}\t{}\t{}", b.name, b.size, b.align);
        for s in b.lifetime.spans() {
            let _ = write!(text, "\t{}..{}", s.first, s.last);
        }
        text.push('\n');
    }
    sha256_hex(text.as_bytes())
}

impl PlanFile {
    /// The plan file for `plan` of `problem`, compiled from a model file with these bytes.
    pub fn new(model_bytes: &[u8], problem: &Problem, plan: &Plan, search_steps: u64) -> Self {
        PlanFile {
            format: FORMAT,
            planner_version: PLANNER_VERSION.into(),
            model_sha256: sha256_hex(model_bytes),
            problem_sha256: problem_sha256(problem),
            arena_bytes: plan.arena_bytes,
            lower_bound_bytes: plan.lower_bound.bytes,
            algorithm: plan.algorithm,
            optimal: plan.optimal,
            search_steps,
            buffers: problem
                .buffers
                .iter()
                .zip(&plan.offsets)
                .map(|(b, &offset)| PlannedBuffer { name: b.name.clone(), size: b.size, offset })
                .collect(),
        }
    }

    /// Pretty JSON, ending with a newline (the file is meant to be committed and diffed).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a PlanFile always serialises");
        s.push('\n');
        s
    }

    /// Why this file does not belong to the model and problem, or `None` if it does.
    fn mismatch(&self, model_sha256: &str, problem: &Problem) -> Option<String> {
        if self.format != FORMAT || self.planner_version != PLANNER_VERSION {
            return Some(format!(
                "written by sramfit {} (plan format {}), this is {PLANNER_VERSION} (format {FORMAT})",
                self.planner_version, self.format
            ));
        }
        if self.model_sha256 != model_sha256 {
            return Some("the model file changed since the plan was written (its SHA-256 differs)".into());
        }
        if self.problem_sha256 != problem_sha256(problem) {
            return Some(
                "the planning problem differs (other `inputs:` shapes, or a model that lowers differently)".into(),
            );
        }
        None
    }

    /// The plan in this file, checked for consistency with `problem` (names, sizes, arena end).
    /// Overlaps and alignment are left to the verifier, which every plan goes through.
    fn to_plan(&self, problem: &Problem) -> Result<Plan, String> {
        if self.buffers.len() != problem.buffers.len() {
            return Err(format!("it lists {} buffers, the model has {}", self.buffers.len(), problem.buffers.len()));
        }
        for (f, b) in self.buffers.iter().zip(&problem.buffers) {
            if f.name != b.name || f.size != b.size {
                return Err(format!(
                    "buffer `{}` ({} bytes) is listed where the model has `{}` ({} bytes)",
                    f.name, f.size, b.name, b.size
                ));
            }
        }
        let end = self.buffers.iter().filter(|b| b.size > 0).map(|b| b.offset.saturating_add(b.size)).max();
        if end.unwrap_or(0) != self.arena_bytes {
            return Err(format!("`arena_bytes` is {} but the buffers end at {}", self.arena_bytes, end.unwrap_or(0)));
        }
        let lower_bound = plan::lower_bound(problem);
        Ok(Plan {
            offsets: self.buffers.iter().map(|b| b.offset).collect(),
            arena_bytes: self.arena_bytes,
            algorithm: self.algorithm,
            optimal: self.optimal || self.arena_bytes == lower_bound.bytes,
            lower_bound,
        })
    }
}

/// The plan for `problem`: from the plan file beside the model when one matches, else from the
/// planner. The caller must still verify the result (as [`crate::compile`] does for every plan).
///
/// A missing file means "plan now"; a file for another model or version is [`PlanSource::Stale`];
/// an unreadable or malformed file, or a matching one whose buffers do not fit the problem, is an
/// error naming the file, since silently ignoring it would hide a broken checked-in artifact.
pub fn plan_or_load(model_bytes: &[u8], file: &Path, problem: &Problem) -> Result<(Plan, PlanSource), CompileError> {
    let bad = |message: String| CompileError::PlanFile { path: file.to_owned(), message };
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((plan::plan(problem), PlanSource::Planner)),
        Err(e) => return Err(bad(e.to_string())),
    };
    let saved: PlanFile = serde_json::from_str(&text).map_err(|e| bad(format!("not a plan file: {e}")))?;
    match saved.mismatch(&sha256_hex(model_bytes), problem) {
        Some(reason) => Ok((plan::plan(problem), PlanSource::Stale { file: file.to_owned(), reason })),
        None => Ok((saved.to_plan(problem).map_err(bad)?, PlanSource::File(file.to_owned()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{Buffer, Lifetime};

    fn problem() -> Problem {
        let buf = |name: &str, size, first, last| Buffer {
            name: name.into(),
            size,
            align: 16,
            lifetime: Lifetime::new(first, last),
        };
        Problem { buffers: vec![buf("a", 64, 0, 1), buf("b", 32, 1, 2), buf("c", 64, 2, 3)] }
    }

    fn write(dir: &Path, file: &PlanFile) -> PathBuf {
        let path = dir.join("m.plan.json");
        std::fs::write(&path, file.to_json()).unwrap();
        path
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sramfit-offline-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn sha256_matches_the_standard_test_vector() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn plan_path_replaces_the_extension() {
        assert_eq!(plan_path(Path::new("models/kws.onnx")), Path::new("models/kws.plan.json"));
    }

    #[test]
    fn a_missing_file_means_planning_now() {
        let p = problem();
        let (plan, source) = plan_or_load(b"model", Path::new("/nonexistent/m.plan.json"), &p).unwrap();
        assert_eq!(source, PlanSource::Planner);
        assert_eq!(plan, plan::plan(&p));
    }

    #[test]
    fn a_matching_file_is_used_as_written() {
        let p = problem();
        // A deliberately different valid plan (no reuse at all), so using it is observable.
        let naive = plan::plan_using(&p, Algorithm::Naive, &plan::Options::default());
        let dir = temp_dir("match");
        let path = write(&dir, &PlanFile::new(b"model", &p, &naive, 0));
        let (plan, source) = plan_or_load(b"model", &path, &p).unwrap();
        assert_eq!(source, PlanSource::File(path));
        assert_eq!(plan.offsets, naive.offsets);
        assert_eq!(plan.arena_bytes, 160);
        assert!(plan.arena_bytes > plan::plan(&p).arena_bytes);
    }

    #[test]
    fn a_file_for_another_model_or_problem_is_stale() {
        let p = problem();
        let dir = temp_dir("stale");
        let path = write(&dir, &PlanFile::new(b"old model", &p, &plan::plan(&p), 0));
        let (_, source) = plan_or_load(b"new model", &path, &p).unwrap();
        assert!(matches!(&source, PlanSource::Stale { reason, .. } if reason.contains("model file changed")));

        let mut other = problem();
        other.buffers[1].size = 48;
        let (plan, source) = plan_or_load(b"old model", &path, &other).unwrap();
        assert!(matches!(&source, PlanSource::Stale { reason, .. } if reason.contains("planning problem differs")));
        assert_eq!(plan, plan::plan(&other));

        let mut old = PlanFile::new(b"m", &p, &plan::plan(&p), 0);
        old.planner_version = "0.0.1".into();
        let path = write(&dir, &old);
        let (_, source) = plan_or_load(b"m", &path, &p).unwrap();
        assert!(matches!(&source, PlanSource::Stale { reason, .. } if reason.contains("sramfit 0.0.1")));
    }

    #[test]
    fn malformed_or_inconsistent_files_are_errors_naming_the_file() {
        let p = problem();
        let dir = temp_dir("bad");
        let path = dir.join("m.plan.json");
        std::fs::write(&path, "{ not json").unwrap();
        let err = plan_or_load(b"m", &path, &p).unwrap_err();
        assert!(err.to_string().contains("m.plan.json") && err.to_string().contains("not a plan file"), "{err}");

        let mut file = PlanFile::new(b"m", &p, &plan::plan(&p), 0);
        file.arena_bytes += 16;
        let path = write(&dir, &file);
        let err = plan_or_load(b"m", &path, &p).unwrap_err().to_string();
        assert!(err.contains("`arena_bytes` is"), "{err}");

        let mut file = PlanFile::new(b"m", &p, &plan::plan(&p), 0);
        file.buffers.swap(0, 1);
        let path = write(&dir, &file);
        let err = plan_or_load(b"m", &path, &p).unwrap_err().to_string();
        assert!(err.contains("buffer `b` (32 bytes) is listed where the model has `a`"), "{err}");
    }
}
