//! `edges`: newer doc id u64 BE → its edges to older docs, one value per doc: entries of
//! [`ENTRY`] bytes, `[older doc u40 BE][resemblance f32 BE][containment of the older in
//! the newer f32 BE][containment of the newer in the older f32 BE]`, older doc ascending.
//! Enough of the pairs at or above the edge floor in resemblance that clusters can be
//! rebuilt at any threshold from the floor up without the sketches (the paper's final
//! phase, repeated): a maximum spanning forest of them by resemblance and the pairs the
//! writer could not prove redundant ([`crate::ingest`]'s `forest`). Until version
//! 7 every pair, also those at the floor in containment only; such indexes hold a
//! superset, which `recluster` reads alike.
//!
//! One value per new doc, written with it: one key per edge (schema 5) cost a memtable
//! insert each and 16 bytes of key beside 12 of value.
//!
//! Written by ingest (a new doc and its candidates). Read by `recluster` and by ingest
//! (the stored edges among a new doc's candidates).

use super::Column;
use crate::index::codec::EdgeInfo;
use crate::index::postings::MAX_DOCS;

/// Marker of the `edges` column family.
pub struct Edges;

/// Bytes of one edge in a doc's list.
pub const ENTRY: usize = 17;

impl Column for Edges {
    const NAME: &'static str = "edges";
    /// The newer doc of each edge.
    type Key = u64;
    /// (older doc, edge), older doc ascending; never empty.
    type Value = Vec<(u64, EdgeInfo)>;

    fn key(hi: &u64) -> Vec<u8> {
        hi.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u64, String> {
        super::be_u64(b)
    }

    fn value(list: &Vec<(u64, EdgeInfo)>) -> Vec<u8> {
        let mut out = Vec::with_capacity(ENTRY * list.len());
        for (lo, e) in list {
            debug_assert!(*lo < MAX_DOCS);
            out.extend_from_slice(&lo.to_be_bytes()[3..]);
            for f in [e.resemblance, e.contain_lo_in_hi, e.contain_hi_in_lo] {
                out.extend_from_slice(&f.to_be_bytes());
            }
        }
        out
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Vec<(u64, EdgeInfo)>, String> {
        if b.is_empty() || !b.len().is_multiple_of(ENTRY) {
            return Err(format!(
                "an edge list of {} bytes (a multiple of {ENTRY}, at least one)",
                b.len()
            ));
        }
        let f = |c: &[u8]| f32::from_be_bytes(c.try_into().expect("4 bytes"));
        Ok(b.chunks_exact(ENTRY)
            .map(|e| {
                let mut lo = [0u8; 8];
                lo[3..].copy_from_slice(&e[..5]);
                let edge = EdgeInfo {
                    resemblance: f(&e[5..9]),
                    contain_lo_in_hi: f(&e[9..13]),
                    contain_hi_in_lo: f(&e[13..17]),
                };
                (u64::from_be_bytes(lo), edge)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_list_roundtrips_and_a_misshapen_one_is_refused() {
        let list = vec![
            (
                3,
                EdgeInfo {
                    resemblance: 0.3125,
                    contain_lo_in_hi: 0.5,
                    contain_hi_in_lo: 0.25,
                },
            ),
            (
                MAX_DOCS - 1,
                EdgeInfo {
                    resemblance: 1.0,
                    contain_lo_in_hi: 1.0,
                    contain_hi_in_lo: 0.999_999,
                },
            ),
        ];
        let b = Edges::value(&list);
        assert_eq!(b.len(), 2 * ENTRY);
        assert_eq!(Edges::decode_value(&b).unwrap(), list);
        assert!(Edges::decode_value(&b[..ENTRY + 3]).is_err());
        assert!(Edges::decode_value(&[]).is_err());
    }
}
