//! The WARC/ARC reader on arbitrary bytes, plain or gzip (seeds include .warc.gz files,
//! and the first byte may ask for the input to be gzipped in members first, so the
//! record parser is reached through the decompressor too). Invariants: no panic, no
//! hang, records in increasing offset order, nothing after an error.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::read_records(data));
