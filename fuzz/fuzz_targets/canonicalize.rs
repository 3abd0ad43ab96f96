//! The canonicalizer on arbitrary payloads: the first byte picks the media kind and the
//! declared charset (including wrong and unknown ones), the rest is the payload.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::canonicalize(data));
