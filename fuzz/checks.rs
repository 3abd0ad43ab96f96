//! What each fuzz target checks, shared by the targets (`fuzz_targets/`) and the
//! regression test of their findings (`tests/fuzz_regressions.rs`): the same input
//! runs the same checks in both.
#![allow(dead_code)]

use std::io::{Cursor, Write};

use tidemark::canon::{canonicalize as canon, media_kind, Canon, MediaKind};
use tidemark::capture::{analyze, Scratch};
use tidemark::index::columns::{self, captures::Captures, texts::Texts, Column};
use tidemark::read::{Compression, Record, RecordReader};
use tidemark::sketch::SketchParams;

/// The WARC/ARC reader on arbitrary bytes, plain or gzip (a first byte `Z` gzips the
/// rest in members of 512 bytes, so the record parser is reached through the
/// decompressor too). No panic, records in file order (in a gzip file, records sharing
/// a member share its offset: the reader warns that they are not aligned to members),
/// nothing after an error.
pub fn read_records(data: &[u8]) {
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
    let gzip = reader.compression() == Compression::Gzip;
    let mut last = None;
    let mut failed = false;
    for item in reader {
        assert!(!failed, "a record after an error");
        match item {
            Ok(r) => {
                assert!(r.block.len() <= 1 << 16, "block over the cap");
                if let Some(prev) = last {
                    let ok = r.offset > prev || (gzip && r.offset == prev);
                    assert!(ok, "offsets do not increase: {prev} then {}", r.offset);
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

/// An HTTP response block analyzed as ingest analyzes a `response` record: parsing,
/// transfer and content codings, charsets, canonicalizing, sketching.
pub fn http_message(data: &[u8]) {
    let mut rec = Record::document(data);
    rec.kind = tidemark::read::RecordKind::Response;
    rec.fields = vec![
        ("WARC-Type".into(), b"response".to_vec()),
        ("WARC-Target-URI".into(), b"http://example.com/a".to_vec()),
        ("WARC-Date".into(), b"2026-11-01T12:00:00Z".to_vec()),
        (
            "Content-Type".into(),
            b"application/http; msgtype=response".to_vec(),
        ),
    ];
    let mut scratch = Scratch::default();
    let c = analyze(&rec, &SketchParams::default(), 1 << 16, &mut scratch);
    assert!(c.payload_len <= 1 << 16 || c.truncated);
    if let Some(s) = &c.sketch {
        assert!(
            s.values.windows(2).all(|w| w[0] < w[1]),
            "sketch values not sorted"
        );
    }
}

const CHARSETS: &[Option<&str>] = &[
    None,
    Some("utf-8"),
    Some("iso-8859-1"),
    Some("windows-1252"),
    Some("shift_jis"),
    Some("euc-jp"),
    Some("gb18030"),
    Some("utf-16le"),
    Some("utf-16be"),
    Some("koi8-r"),
    Some("x-no-such-charset"),
];

/// The canonicalizer: the first byte picks the media kind and the declared charset.
pub fn canonicalize(data: &[u8]) {
    let Some((&sel, payload)) = data.split_first() else {
        return;
    };
    let kind = match sel % 3 {
        0 => MediaKind::Html,
        1 => MediaKind::Text,
        _ => media_kind(None, payload),
    };
    let charset = CHARSETS[(sel as usize / 3) % CHARSETS.len()];
    let mut out = Canon::default();
    canon(payload, kind, charset, &mut out);
    let tokens = out.token_iter().count();
    assert!(
        tokens <= payload.len() + 1,
        "{tokens} tokens from {} bytes",
        payload.len()
    );
}

/// Every key and value decoder of the index: the first byte picks the column family,
/// the second where the key ends. What decodes encodes back to the same bytes.
pub fn index_values(data: &[u8]) {
    let [sel, split, rest @ ..] = data else {
        return;
    };
    let name = columns::ALL[*sel as usize % columns::ALL.len()];
    let at = (*split as usize).min(rest.len());
    let (key, value) = rest.split_at(at);
    let _ = columns::check_entry(name, key, value);
    if let Ok(k) = Captures::decode_key(key) {
        assert_eq!(
            Captures::key(&k),
            key,
            "a capture key that does not encode back"
        );
    }
    if let Ok(t) = Texts::decode_value(value) {
        assert_eq!(Texts::value(&t), value);
        let _ = tidemark::index::texts::decode(&t, None);
    }
}
