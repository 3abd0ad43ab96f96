//! Every input the fuzzers (`fuzz/`, `bash tools/fuzz.sh`) found to crash, hang or
//! exhaust memory, kept in `tests/fuzz/TARGET/` and checked here with the targets' own
//! invariants, so a fixed finding stays fixed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Cursor, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use tidemark::index::columns::{self, captures::Captures, texts::Texts, Column};
use tidemark::read::RecordReader;

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

/// As `fuzz/fuzz_targets/read_records.rs`.
fn read_records(data: &[u8]) {
    let bytes = match data.split_first() {
        Some((b'Z', rest)) => {
            let mut out = Vec::new();
            for chunk in rest.chunks(512) {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(chunk).unwrap();
                out.extend(e.finish().unwrap());
            }
            out
        }
        _ => data.to_vec(),
    };
    let len = bytes.len() as u64;
    let Ok(reader) = RecordReader::from_reader(Box::new(Cursor::new(bytes)), 1 << 16) else {
        return;
    };
    let mut last = None;
    let mut failed = false;
    for item in reader {
        assert!(!failed, "a record after an error");
        match item {
            Ok(r) => {
                assert!(r.block.len() <= 1 << 16, "block over the cap");
                if let Some(prev) = last {
                    assert!(
                        r.offset > prev,
                        "offsets do not increase: {prev} then {}",
                        r.offset
                    );
                }
                assert!(r.offset <= len, "offset {} past the end {len}", r.offset);
                last = Some(r.offset);
            }
            Err(e) => {
                assert!(
                    e.offset <= len,
                    "error offset {} past the end {len}",
                    e.offset
                );
                failed = true;
            }
        }
    }
}

/// As `fuzz/fuzz_targets/index_values.rs`.
fn index_values(data: &[u8]) {
    let [sel, split, rest @ ..] = data else {
        return;
    };
    let name = columns::ALL[*sel as usize % columns::ALL.len()];
    let at = (*split as usize).min(rest.len());
    let (key, value) = rest.split_at(at);
    let _ = columns::check_entry(name, key, value);
    if let Ok(k) = Captures::decode_key(key) {
        assert_eq!(Captures::key(&k), key);
    }
    if let Ok(t) = Texts::decode_value(value) {
        assert_eq!(Texts::value(&t), value);
        let _ = tidemark::index::texts::decode(&t, None);
    }
}

#[test]
fn reader_findings_stay_fixed() {
    for (name, data) in inputs("read_records") {
        eprintln!("{name}");
        read_records(&data);
    }
}

#[test]
fn index_value_findings_stay_fixed() {
    for (name, data) in inputs("index_values") {
        LARGEST.store(0, Ordering::Relaxed);
        index_values(&data);
        let largest = LARGEST.load(Ordering::Relaxed);
        assert!(
            largest < 64 << 20,
            "{name}: an allocation of {largest} bytes"
        );
    }
}
