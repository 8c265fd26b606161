//! Memory pools (`pools: { sram: 128 KiB, psram: 8 MiB in ".psram" }`): every arena buffer placed
//! in one of several named memories at build time, each planned and verified on its own.
//!
//! **The cost model.** A buffer's *heat* is the bytes the steps touching it move through it (every
//! step that runs code and reads it adds the bytes it reads, the step writing it the bytes it
//! writes, a step's scratch twice its size: written, then read), divided by its size: accesses per
//! byte. Buffers are taken hottest first, then smallest first, then in buffer order (so the
//! assignment is deterministic), and each pool but the last admits every buffer in that order for
//! which the live bytes of its buffers stay within the pool's size at every step; its buffers are
//! then planned by [`plan::plan`], and while that plan exceeds the pool, the buffer admitted last is
//! handed on. The next pool takes from what is left in the same order; the last pool takes the rest.
//! Planner buffers are the unit: a view, an in-place chain or an elided concatenation is already
//! one buffer, so no sharing ever crosses pools.
//!
//! **Verification.** Each pool's plan passes [`verify::verify`] on its own buffers against its own
//! size ([`verify_pools`]). The pools are also laid end to end (each at a 16-byte-aligned base,
//! [`Pool::base`]) into one combined [`Plan`] of the whole problem, which the pipeline verifies like
//! any single-arena plan, and the storage verifier holds for the whole program as before.

use std::cmp::Ordering;

use crate::error::CompileError;
use crate::ir::Graph;
use crate::liveness::{Liveness, Storage};
use crate::plan::{self, Plan};
use crate::problem::Problem;
use crate::verify;

/// One pool as the user declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSpec {
    /// Its name (a Rust identifier): the generated static is `POOL_<NAME>` and its size
    /// `POOL_<NAME>_BYTES`.
    pub name: String,
    /// Its size in bytes: the budget of its plan.
    pub bytes: u64,
    /// The linker section of its static (`#[link_section = ".psram"]`), if any.
    pub section: Option<String>,
}

impl PoolSpec {
    /// Parses the CLI's `NAME=SIZE[@SECTION]` (`sram=128KiB`, `psram=8MiB@.psram`); the size as
    /// [`crate::units::parse_bytes`] reads it.
    pub fn parse(text: &str) -> Result<PoolSpec, String> {
        let bad = || format!("`{text}` is not NAME=SIZE[@SECTION] (e.g. sram=128KiB, or psram=8MiB@.psram)");
        let (name, rest) = text.split_once('=').ok_or_else(bad)?;
        let (size, section) = match rest.split_once('@') {
            Some((size, section)) => (size, Some(section.to_string())),
            None => (rest, None),
        };
        let bytes = crate::units::parse_bytes(size).map_err(|e| format!("pool `{name}`: {e}"))?;
        Ok(PoolSpec { name: name.trim().to_string(), bytes, section })
    }
}

/// Checks a list of pools: at least two (one pool is the single arena: use `sram`), each name an
/// identifier given once, each size above zero, each section non-empty. The message names the
/// pool and the fix.
pub fn check_specs(specs: &[PoolSpec]) -> Result<(), String> {
    if specs.len() == 1 {
        return Err(format!(
            "one pool (`{}`) is the single arena: give its size as the `sram` budget instead, or declare a second pool",
            specs[0].name
        ));
    }
    for (i, s) in specs.iter().enumerate() {
        let ident = s.name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return Err(format!(
                "pool name `{}` is not an identifier (letters, digits, `_`): it names the pool's static",
                s.name
            ));
        }
        if crate::codegen::names::KEYWORDS.contains(&s.name.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "pool name `{}` is a Rust keyword or a name the module uses itself; choose another",
                s.name
            ));
        }
        if specs[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&s.name)) {
            return Err(format!(
                "pool `{}` is declared twice (names are compared ignoring case: they become `POOL_{}`); name each pool once",
                s.name,
                s.name.to_ascii_uppercase()
            ));
        }
        if s.bytes == 0 {
            return Err(format!(
                "pool `{}` has size zero; give the bytes of that memory, e.g. `{}: 128 KiB`",
                s.name, s.name
            ));
        }
        if s.section.as_deref().is_some_and(|sec| sec.trim().is_empty()) {
            return Err(format!(
                "pool `{}` has an empty section name; write `in \".psram\"` or leave the section out",
                s.name
            ));
        }
    }
    Ok(())
}

/// One planned pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    /// The pool as declared.
    pub spec: PoolSpec,
    /// Its buffers (indices into the whole problem), ascending.
    pub buffers: Vec<usize>,
    /// Its plan over [`Pool::buffers`] (`plan.offsets[j]` is buffer `buffers[j]`'s offset in the pool).
    pub plan: Plan,
    /// Where the pool starts in the combined plan (the pools end to end, each 16-byte aligned).
    pub base: u64,
}

impl Pool {
    /// The pool's own problem: its buffers, in [`Pool::buffers`] order.
    pub fn problem(&self, whole: &Problem) -> Problem {
        Problem { buffers: self.buffers.iter().map(|&b| whole.buffers[b].clone()).collect() }
    }

    /// The bytes its plan uses (what its static holds).
    pub fn bytes(&self) -> u64 {
        self.plan.arena_bytes
    }
}

/// The pools of a program and which pool each buffer is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pools {
    /// The pools, in declaration order.
    pub pools: Vec<Pool>,
    /// The pool of every buffer of the whole problem.
    pub pool_of: Vec<usize>,
}

impl Pools {
    /// Buffer `b`'s pool and its offset in that pool, from the combined plan's offset `combined`.
    pub fn locate(&self, b: usize, combined: u64) -> (usize, u64) {
        let k = self.pool_of[b];
        (k, combined - self.pools[k].base)
    }
}

/// Bytes read and written through each arena buffer by the steps that run code (the numerator of
/// the cost model, see the module docs).
pub fn access_bytes(graph: &Graph, live: &Liveness) -> Vec<u64> {
    let mut bytes = vec![0u64; live.problem.buffers.len()];
    let arena = |t: usize| match live.storage[t] {
        Storage::Arena(b) => Some(b),
        _ => None,
    };
    for (i, node) in graph.nodes.iter().enumerate() {
        if node.op.is_view() || live.elided[i] {
            continue;
        }
        for &t in node.inputs.iter().chain(std::iter::once(&node.output)) {
            if let Some(b) = arena(t) {
                bytes[b] += graph.tensors[t].bytes();
            }
        }
        if let Some(b) = live.scratch[i] {
            bytes[b] += 2 * live.problem.buffers[b].size;
        }
    }
    bytes
}

/// The buffers in the order pools take them: hottest (most accesses per byte) first, then
/// smallest, then by index. Empty buffers come first (they cost no byte anywhere).
pub fn by_heat(problem: &Problem, access: &[u64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..problem.buffers.len()).collect();
    let size = |b: usize| problem.buffers[b].size;
    order.sort_by(|&a, &b| {
        // access[a] / size(a) against access[b] / size(b), cross-multiplied; empty buffers hottest.
        let heat = match (size(a), size(b)) {
            (0, 0) => Ordering::Equal,
            (0, _) => Ordering::Less,
            (_, 0) => Ordering::Greater,
            (sa, sb) => (access[b] as u128 * sa as u128).cmp(&(access[a] as u128 * sb as u128)),
        };
        heat.then(size(a).cmp(&size(b))).then(a.cmp(&b))
    });
    order
}

/// Assigns every buffer of `problem` to a pool by the cost model (`access`: [`access_bytes`]),
/// plans every pool, and returns the combined plan with the pools. A last pool whose plan exceeds
/// its size is [`CompileError::PoolBudget`] naming it.
pub fn plan_pools(problem: &Problem, access: &[u64], specs: &[PoolSpec]) -> Result<(Plan, Pools), CompileError> {
    let steps = problem.buffers.iter().map(|b| b.lifetime.last() as usize + 1).max().unwrap_or(0);
    let mut left = by_heat(problem, access);
    let mut rank = vec![0; problem.buffers.len()];
    for (r, &b) in left.iter().enumerate() {
        rank[b] = r;
    }
    let mut pool_of = vec![0; problem.buffers.len()];
    let mut pools: Vec<Pool> = Vec::new();
    let mut base = 0;
    for (k, spec) in specs.iter().enumerate() {
        let last = k + 1 == specs.len();
        let mut taken = match last {
            true => std::mem::take(&mut left),
            false => {
                let (taken, rest) = admit(problem, &left, steps, spec.bytes);
                left = rest;
                taken
            }
        };
        let (buffers, pool_plan) = loop {
            let mut buffers = taken.clone();
            buffers.sort_unstable();
            let pool_plan = plan_subset(problem, &buffers);
            if last || pool_plan.arena_bytes <= spec.bytes {
                break (buffers, pool_plan);
            }
            // The live bytes admitted it but no plan found fits: hand the coldest admitted buffer on.
            let coldest = taken.pop().expect("an empty pool fits");
            left.insert(left.partition_point(|&b| rank[b] < rank[coldest]), coldest);
        };
        if pool_plan.arena_bytes > spec.bytes {
            return Err(overflow(problem, &pools, spec, &buffers, &pool_plan));
        }
        for &b in &buffers {
            pool_of[b] = k;
        }
        pools.push(Pool { spec: spec.clone(), buffers, plan: pool_plan, base });
        base += pools[k].bytes().next_multiple_of(16);
    }
    let mut offsets = vec![0; problem.buffers.len()];
    for pool in &pools {
        for (j, &b) in pool.buffers.iter().enumerate() {
            offsets[b] = pool.base + pool.plan.offsets[j];
        }
    }
    let arena_bytes = pools.last().map_or(0, |p| p.base + p.bytes());
    let combined = Plan {
        offsets,
        arena_bytes,
        algorithm: pools.first().map_or(plan::Algorithm::Naive, |p| p.plan.algorithm),
        optimal: false,
        lower_bound: plan::lower_bound(problem),
    };
    Ok((combined, Pools { pools, pool_of }))
}

/// Splits `order` into the buffers a pool of `bytes` admits (in order, each whose aligned size
/// keeps the pool's live bytes within `bytes` at every step of its life) and the rest (in order).
fn admit(problem: &Problem, order: &[usize], steps: usize, bytes: u64) -> (Vec<usize>, Vec<usize>) {
    let mut used = vec![0u64; steps];
    let (mut taken, mut rest) = (Vec::new(), Vec::new());
    for &b in order {
        let buf = &problem.buffers[b];
        let size = buf.size.next_multiple_of(buf.align.max(1));
        let steps_of = || buf.lifetime.spans().iter().flat_map(|s| s.first as usize..=s.last as usize);
        if steps_of().all(|s| used[s] + size <= bytes) {
            steps_of().for_each(|s| used[s] += size);
            taken.push(b);
        } else {
            rest.push(b);
        }
    }
    (taken, rest)
}

/// The plan of the buffers `subset` of `problem` on their own.
fn plan_subset(problem: &Problem, subset: &[usize]) -> Plan {
    plan::plan(&Problem { buffers: subset.iter().map(|&b| problem.buffers[b].clone()).collect() })
}

/// The error for pool `spec` (the last) overflowing with `taken` planned as `pool_plan`, after
/// the earlier `pools` were filled.
fn overflow(problem: &Problem, pools: &[Pool], spec: &PoolSpec, taken: &[usize], pool_plan: &Plan) -> CompileError {
    let needed = pool_plan.arena_bytes;
    let largest = taken.iter().map(|&b| &problem.buffers[b]).max_by_key(|b| b.size);
    let earlier: Vec<String> = pools
        .iter()
        .map(|p| {
            format!(
                "`{}` holds {} buffers in {} of its {} bytes",
                p.spec.name,
                p.buffers.len(),
                p.bytes(),
                p.spec.bytes
            )
        })
        .collect();
    let report = format!(
        "pool `{}` needs {needed} bytes for its {} buffers, but has {} bytes: {} bytes over (its lower bound is {} bytes{}); {}",
        spec.name,
        taken.len(),
        spec.bytes,
        needed - spec.bytes,
        pool_plan.lower_bound.bytes,
        largest.map_or(String::new(), |b| format!(", its largest buffer `{}` {} bytes", b.name, b.size)),
        if earlier.is_empty() { "no earlier pool".to_string() } else { earlier.join(", ") },
    );
    CompileError::PoolBudget { pool: spec.name.clone(), needed, budget: spec.bytes, report }
}

/// Verifies every pool's plan on its own buffers against its own size, and that the pools
/// partition the buffers; the message names the pool.
pub fn verify_pools(problem: &Problem, pools: &Pools) -> Result<(), String> {
    let mut seen = vec![false; problem.buffers.len()];
    for (k, pool) in pools.pools.iter().enumerate() {
        let own = pool.problem(problem);
        verify::verify(&own, &pool.plan.offsets, pool.plan.arena_bytes, &[])
            .map_err(|v| format!("pool `{}`: {}", pool.spec.name, v.describe(&own)))?;
        if pool.plan.arena_bytes > pool.spec.bytes {
            return Err(format!(
                "pool `{}` is planned at {} bytes, over its {} bytes",
                pool.spec.name, pool.plan.arena_bytes, pool.spec.bytes
            ));
        }
        for &b in &pool.buffers {
            if seen[b] || pools.pool_of[b] != k {
                return Err(format!(
                    "buffer `{}` is in pool `{}` and another",
                    problem.buffers[b].name, pool.spec.name
                ));
            }
            seen[b] = true;
        }
    }
    match seen.iter().position(|s| !s) {
        Some(b) => Err(format!("buffer `{}` is in no pool", problem.buffers[b].name)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{Buffer, Lifetime};

    fn buffer(name: &str, size: u64, first: u32, last: u32) -> Buffer {
        Buffer { name: name.into(), size, align: 16, lifetime: Lifetime::new(first, last) }
    }

    fn spec(name: &str, bytes: u64) -> PoolSpec {
        PoolSpec { name: name.into(), bytes, section: None }
    }

    /// `a` and `c` are hot (10 accesses per byte), `b` and `d` cold (1); `d` lives apart from the
    /// others.
    fn problem() -> (Problem, Vec<u64>) {
        let buffers = vec![buffer("a", 96, 0, 2), buffer("b", 960, 0, 2), buffer("c", 48, 1, 2), buffer("d", 32, 3, 4)];
        (Problem { buffers }, vec![960, 960, 480, 32])
    }

    #[test]
    fn hottest_then_smallest_first() {
        let (p, access) = problem();
        // c and a are equally hot, c is smaller; d and b are equally cold, d is smaller.
        assert_eq!(by_heat(&p, &access), [2, 0, 3, 1]);
        let (plan, pools) = plan_pools(&p, &access, &[spec("fast", 160), spec("slow", 4096)]).unwrap();
        // fast takes c and a (144 bytes live together), not b (over 160), and d, which lives apart.
        assert_eq!(pools.pool_of, [0, 1, 0, 0]);
        assert_eq!(pools.pools[0].buffers, [0, 2, 3]);
        assert_eq!((pools.pools[0].bytes(), pools.pools[1].bytes()), (144, 960));
        assert_eq!((pools.pools[1].base, plan.arena_bytes), (144, 144 + 960));
        verify_pools(&p, &pools).unwrap();
        verify::verify(&p, &plan.offsets, plan.arena_bytes, &[]).unwrap();
        assert_eq!(pools.locate(1, plan.offsets[1]), (1, 0));
    }

    #[test]
    fn deterministic() {
        let (p, access) = problem();
        let specs = [spec("fast", 100), spec("mid", 200), spec("slow", 4096)];
        let first = plan_pools(&p, &access, &specs).unwrap();
        for _ in 0..3 {
            assert_eq!(plan_pools(&p, &access, &specs).unwrap(), first);
        }
        // fast: c, d (a does not fit beside c); mid: a; slow: b.
        assert_eq!(first.1.pool_of, [1, 2, 0, 0]);
    }

    #[test]
    fn an_overflowing_last_pool_is_named() {
        let (p, access) = problem();
        let e = plan_pools(&p, &access, &[spec("fast", 160), spec("slow", 512)]).unwrap_err();
        let CompileError::PoolBudget { pool, needed, budget, report } = &e else { panic!("{e:?}") };
        assert_eq!((pool.as_str(), *needed, *budget), ("slow", 960, 512));
        assert!(
            report.contains("pool `slow` needs 960 bytes for its 1 buffers, but has 512 bytes: 448 bytes over"),
            "{report}"
        );
        assert!(report.contains("`fast` holds 3 buffers in 144 of its 160 bytes"), "{report}");
        assert!(e.to_string().contains("enlarge pool `slow` to at least 960 bytes"), "{e}");
    }

    #[test]
    fn specs_are_checked() {
        assert!(check_specs(&[spec("sram", 1), spec("psram", 2)]).is_ok());
        assert!(check_specs(&[spec("sram", 1)]).unwrap_err().contains("single arena"));
        assert!(check_specs(&[spec("sram", 1), spec("SRAM", 2)]).unwrap_err().contains("declared twice"));
        assert!(check_specs(&[spec("sram", 0), spec("psram", 2)]).unwrap_err().contains("size zero"));
        assert!(check_specs(&[spec("s-ram", 1), spec("psram", 2)]).unwrap_err().contains("not an identifier"));
        assert!(check_specs(&[spec("type", 1), spec("psram", 2)]).unwrap_err().contains("keyword"));
        let empty = PoolSpec { section: Some(" ".into()), ..spec("psram", 2) };
        assert!(check_specs(&[spec("sram", 1), empty]).unwrap_err().contains("empty section"));
    }

    #[test]
    fn command_line_pools() {
        assert_eq!(PoolSpec::parse("sram=128KiB"), Ok(spec("sram", 128 << 10)));
        let psram = PoolSpec::parse("psram=8MiB@.psram").unwrap();
        assert_eq!((psram.bytes, psram.section.as_deref()), (8 << 20, Some(".psram")));
        assert!(PoolSpec::parse("sram").unwrap_err().contains("NAME=SIZE"));
        assert!(PoolSpec::parse("sram=12parsecs").unwrap_err().contains("unknown unit"));
    }
}
