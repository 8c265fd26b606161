//! A counting global allocator proves that generated code never allocates. This file holds a single
//! test, so no other test thread allocates while it counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
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
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    resnet8::run(input, &mut out).unwrap();
    resnet8::run_in(&mut arena, input, &mut out).unwrap();
    resnet8::run_dyn(&[input], &mut [&mut out]).unwrap();
    resnet8::run_dyn_in(&mut arena, &[input], &mut [&mut out]).unwrap();
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(after - before, 0, "generated code allocated {} times", after - before);
    assert!(out.iter().all(|v| v.is_finite()));
}
