//! `payloads`: payload digest (`sha1:BASE32`, as text) → the doc id of that payload's
//! content (u64 BE). Identical bytes are known content without canonicalizing them again,
//! and a revisit record finds its content by digest.
//!
//! Written by ingest (every capture with content and a digest). Read by the scan workers
//! (skip payloads already indexed) and the writer (their doc; revisits).

use rocksdb::{BlockBasedOptions, Options};

use super::{Column, Tuning};

/// Marker of the `payloads` column family.
pub struct Payloads;

impl Column for Payloads {
    const NAME: &'static str = "payloads";
    type Key = String;
    type Value = u64;

    fn key(k: &String) -> Vec<u8> {
        k.as_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<String, String> {
        String::from_utf8(b.to_vec()).map_err(|_| "a digest that is not UTF-8".into())
    }

    fn value(v: &u64) -> Vec<u8> {
        v.to_be_bytes().to_vec()
    }

    fn decode_value(b: &[u8]) -> std::result::Result<u64, String> {
        super::be_u64(b)
    }

    fn tune(o: &mut Options, t: &mut BlockBasedOptions, _cx: &Tuning) {
        super::point_lookups(o, t);
    }
}
