//! `edges`: higher doc id u64 BE ‖ lower doc id u64 BE → [`EdgeInfo`] (estimated
//! resemblance and both containments, f32; bincode). Every pair of docs at or above the
//! edge floor in resemblance or containment, so that clusters can be rebuilt at another
//! threshold without the sketches (the paper's final phase, repeated). The newer doc
//! first: a new doc's edges are written together, after every earlier doc's, so they
//! land at the end of the memtable instead of at random places in it (schema 4 put
//! the older doc first: inserts into the memtable were 8% of a redesign sweep's CPU).
//!
//! Written by ingest (a new doc and its candidates). Read by `recluster`.

use super::Column;
use crate::index::codec::{decode, encode, EdgeInfo};

/// Marker of the `edges` column family.
pub struct Edges;

impl Column for Edges {
    const NAME: &'static str = "edges";
    /// (lower, higher) doc id.
    type Key = (u64, u64);
    type Value = EdgeInfo;

    fn key(&(lo, hi): &(u64, u64)) -> Vec<u8> {
        let mut k = Vec::with_capacity(16);
        k.extend_from_slice(&hi.to_be_bytes());
        k.extend_from_slice(&lo.to_be_bytes());
        k
    }

    fn decode_key(b: &[u8]) -> std::result::Result<(u64, u64), String> {
        if b.len() != 16 {
            return Err(format!("{} bytes where 16 were expected", b.len()));
        }
        Ok((super::be_u64(&b[8..])?, super::be_u64(&b[..8])?))
    }

    fn value(v: &EdgeInfo) -> Vec<u8> {
        encode(v)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<EdgeInfo, String> {
        decode(b)
    }
}
