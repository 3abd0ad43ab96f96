//! Every key and value decoder of the index on arbitrary bytes: the first byte picks the
//! column family, the second where the key ends; stored texts are also decompressed.
//! Invariants: no panic, no hang, no huge allocation from a damaged length; what
//! decodes encodes back to the same bytes.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::index_values(data));
