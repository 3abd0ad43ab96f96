//! `fingerprints`: fingerprint of a canonical text (u128 BE) → its doc id (u64 BE).
//! Two captures with the same canonical text are one doc.
//!
//! Written by ingest (a new doc). Read by ingest's writer (is this text known?) and its
//! workers (which prepare only new text for the pair step). Point lookups, most of them misses
//! for new content: bloom filters.

use rocksdb::{BlockBasedOptions, Options};

use super::{Column, Tuning};

/// Marker of the `fingerprints` column family.
pub struct Fingerprints;

impl Column for Fingerprints {
    const NAME: &'static str = "fingerprints";
    type Key = u128;
    type Value = u64;

    fn key(k: &u128) -> Vec<u8> {
        k.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u128, String> {
        <[u8; 16]>::try_from(b)
            .map(u128::from_be_bytes)
            .map_err(|_| format!("{} bytes where 16 were expected", b.len()))
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
