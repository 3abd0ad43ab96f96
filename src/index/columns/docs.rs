//! `docs`: doc id (u64 BE) → [`DocInfo`] (shingles, tokens, bytes, creation date,
//! title; bincode). Written once, when the doc is created; a later capture of the same
//! content writes nothing here (its dates are in `doc_captures`).
//!
//! Written by ingest (a new doc). Read by the queries (`cluster`, `history`, `similar`),
//! the report and the service.

use rocksdb::{BlockBasedOptions, Options};

use super::{Column, Tuning};
use crate::index::codec::{decode, encode, DocInfo};

/// Marker of the `docs` column family.
pub struct Docs;

impl Column for Docs {
    const NAME: &'static str = "docs";
    type Key = u64;
    type Value = DocInfo;

    fn key(k: &u64) -> Vec<u8> {
        k.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u64, String> {
        super::be_u64(b)
    }

    fn value(v: &DocInfo) -> Vec<u8> {
        encode(v)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<DocInfo, String> {
        decode(b)
    }

    fn tune(o: &mut Options, t: &mut BlockBasedOptions, _cx: &Tuning) {
        super::point_lookups(o, t);
    }
}
