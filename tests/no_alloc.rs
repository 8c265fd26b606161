//! A counting global allocator proves that generated code never allocates. It counts only on the
//! thread that runs the model, while it runs: the test harness's own threads allocate at any time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread's allocations are counted (a `const` thread local: reading it never allocates).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if COUNTING.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
    }
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
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    resnet8::run(input, &mut out).unwrap();
    resnet8::run_in(&mut arena, input, &mut out).unwrap();
    resnet8::run_dyn(&[input], &mut [&mut out]).unwrap();
    resnet8::run_dyn_in(&mut arena, &[input], &mut [&mut out]).unwrap();
    COUNTING.with(|c| c.set(false));
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(after - before, 0, "generated code allocated {} times", after - before);
    assert!(out.iter().all(|v| v.is_finite()));
}
