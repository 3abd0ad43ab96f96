//! `sweeps`: sweep id (u32 BE, from 1 in order of first ingest) → [`SweepInfo`] (label,
//! date, counts; bincode). A value of constant size: the files of a sweep are in
//! `files` (each with its number), not listed here, so rewriting it with every record
//! costs the same whatever the number of files.
//!
//! Written by ingest (created before any capture points at it; its counts with every
//! record's batch). Read by `sweeps`, `stats`, the report, the service and ingest (a
//! sweep is resumed by label).

use super::{Col, Column};
use crate::index::codec::{decode, encode, SweepInfo};
use crate::index::Result;

/// Marker of the `sweeps` column family.
pub struct Sweeps;

impl Column for Sweeps {
    const NAME: &'static str = "sweeps";
    type Key = u32;
    type Value = SweepInfo;

    fn key(k: &u32) -> Vec<u8> {
        k.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u32, String> {
        super::be_u32(b)
    }

    fn value(v: &SweepInfo) -> Vec<u8> {
        encode(v)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<SweepInfo, String> {
        decode(b)
    }
}

impl Col<'_, Sweeps> {
    /// Every sweep, by id, that reader `r` may be told of (a sweep dated under an
    /// embargo is not: [`crate::access::Reader::time_shown`]).
    pub fn all(&self, r: &crate::access::Reader) -> Result<Vec<(u32, SweepInfo)>> {
        let mut out = Vec::new();
        self.for_each(|id, s| {
            if r.time_shown(&s.date) {
                out.push((id, s));
            }
            Ok(true)
        })?;
        Ok(out)
    }
}
