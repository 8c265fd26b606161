//! A counting global allocator proves that generated code never allocates (f32 and int8 models). It counts per thread:
//! the test harness's own threads allocate now and then while the test runs (seen: 2 to 4
//! allocations on another thread, which made a process-wide count flaky).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    /// Allocations made by this thread (const-initialised, no destructor: usable inside `alloc`).
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    ALLOCATIONS.with(|n| n.set(n.get() + 1));
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

sramfit::model! { mod resnet8 { path: "tests/models/resnet8.onnx" } }

#[test]
fn run_run_in_and_run_dyn_do_not_allocate() {
    let input = vec![0.5f32; 3 * 32 * 32];
    let input: &[f32; 3072] = input.as_slice().try_into().unwrap();
    let mut arena = Box::new(resnet8::Arena::new());
    let mut out = [0.0f32; 10];
    let before = ALLOCATIONS.with(Cell::get);
    resnet8::run(input, &mut out).unwrap();
    resnet8::run_in(&mut arena, input, &mut out).unwrap();
    resnet8::run_dyn(&[input], &mut [&mut out]).unwrap();
    resnet8::run_dyn_in(&mut arena, &[input], &mut [&mut out]).unwrap();
    let after = ALLOCATIONS.with(Cell::get);
    assert_eq!(after - before, 0, "generated code allocated {} times", after - before);
    assert!(out.iter().all(|v| v.is_finite()));
}

sramfit::model! { mod resnet8_int8 { path: "tests/models/quant/resnet8_qdq_s8.onnx" } }
sramfit::model! { mod conv_int8 { path: "tests/models/quant/ops/qop_conv3x3_s8.onnx" } }

#[test]
fn int8_models_do_not_allocate() {
    let input = vec![0.5f32; 3 * 32 * 32];
    let input: &[f32; 3072] = input.as_slice().try_into().unwrap();
    let mut arena = Box::new(resnet8_int8::Arena::new());
    let (mut out, mut y) = ([0.0f32; 10], [0i8; 6 * 8 * 8]);
    let before = ALLOCATIONS.with(Cell::get);
    resnet8_int8::run(input, &mut out).unwrap();
    resnet8_int8::run_in(&mut arena, input, &mut out).unwrap();
    conv_int8::run(&[5i8; 4 * 8 * 8], &mut y).unwrap();
    let after = ALLOCATIONS.with(Cell::get);
    assert_eq!(after - before, 0, "generated code allocated {} times", after - before);
    assert!(out.iter().all(|v| v.is_finite()));
}
