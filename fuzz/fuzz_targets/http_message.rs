//! An HTTP response block (status line, headers, chunked transfer coding, gzip/deflate/
//! brotli content codings, charsets) analyzed as ingest analyzes a `response` record:
//! parsing, decoding, canonicalizing and sketching. No panic, no hang, bounded output.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidemark::capture::{analyze, Scratch};
use tidemark::read::Record;
use tidemark::sketch::SketchParams;

fuzz_target!(|data: &[u8]| {
    let mut rec = Record::document(data);
    rec.kind = "response".into();
    rec.fields = vec![
        ("WARC-Type".into(), b"response".to_vec()),
        ("WARC-Target-URI".into(), b"http://example.com/a".to_vec()),
        ("WARC-Date".into(), b"2026-11-01T12:00:00Z".to_vec()),
        ("Content-Type".into(), b"application/http; msgtype=response".to_vec()),
    ];
    let params = SketchParams::default();
    let mut scratch = Scratch::default();
    let c = analyze(&rec, &params, 1 << 16, &mut scratch);
    assert!(c.payload_len <= 1 << 16 || c.truncated);
    if let Some(s) = &c.sketch {
        assert!(s.values.windows(2).all(|w| w[0] < w[1]), "sketch values not sorted");
    }
});
