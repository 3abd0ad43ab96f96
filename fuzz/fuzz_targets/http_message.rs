//! An HTTP response block (status line, headers, chunked transfer coding, gzip/deflate/
//! brotli content codings, charsets) analyzed as ingest analyzes a `response` record:
//! parsing, decoding, canonicalizing and sketching. No panic, no hang, bounded output.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::http_message(data));
