//! The WARC/ARC reader on arbitrary bytes, plain or gzip (seeds include .warc.gz files,
//! and the first byte may ask for the input to be gzipped in members first, so the
//! record parser is reached through the decompressor too). Invariants: no panic, no
//! hang, records in increasing offset order, nothing after an error.
#![no_main]

use std::io::{Cursor, Write};

use libfuzzer_sys::fuzz_target;
use tidemark::read::RecordReader;

fuzz_target!(|data: &[u8]| {
    let bytes = match data.split_first() {
        // Gzip the rest in members of up to 512 bytes (a damaged member boundary is then
        // inside the parser's view, as in real files).
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
                    assert!(r.offset > prev, "offsets do not increase: {prev} then {}", r.offset);
                }
                assert!(r.offset <= len, "offset {} past the end {len}", r.offset);
                last = Some(r.offset);
            }
            Err(e) => {
                assert!(e.offset <= len, "error offset {} past the end {len}", e.offset);
                failed = true;
            }
        }
    }
});
