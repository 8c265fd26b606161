//! Every bad input to `model!` is a clear compile error pointing at the argument responsible
//! (compile-fail cases with `.stderr` snapshots), and budgets at the boundary compile.

#[test]
fn ui() {
    // trybuild compiles the cases from a crate it generates under target/; model paths in the
    // cases are relative to this crate, which `model!` learns from SRAMFIT_MANIFEST_DIR.
    std::env::set_var("SRAMFIT_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR"));
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/fail/*.rs");
    t.pass("tests/pass/*.rs");
}
