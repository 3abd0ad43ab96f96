//! Every input the fuzzers (`fuzz/`, `bash tools/fuzz.sh`) found to crash, hang or
//! exhaust memory, kept in `tests/fuzz/TARGET/` and checked here with the targets' own
//! invariants, so a fixed finding stays fixed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

#[path = "../fuzz/checks.rs"]
mod checks;

/// The system allocator, remembering the largest single allocation: a damaged length
/// must not be believed (the fuzzer ran under a memory limit; a test process would
/// only reserve the memory, so it is checked here by size).
struct Largest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LARGEST.fetch_max(new, Ordering::Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Largest = Largest;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            (p.display().to_string(), std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no inputs in {}", dir.display());
    out
}

#[test]
fn reader_findings_stay_fixed() {
    for (name, data) in inputs("read_records") {
        eprintln!("{name}");
        checks::read_records(&data);
    }
}

#[test]
fn index_value_findings_stay_fixed() {
    for (name, data) in inputs("index_values") {
        LARGEST.store(0, Ordering::Relaxed);
        checks::index_values(&data);
        let largest = LARGEST.load(Ordering::Relaxed);
        assert!(
            largest < 64 << 20,
            "{name}: an allocation of {largest} bytes"
        );
    }
}
