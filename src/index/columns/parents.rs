//! `parents`: doc id u64 BE → its union-find node: parent, size and smallest member
//! (three u64 BE, 24 bytes; size and smallest member are meaningful at roots). A doc
//! without an entry is a cluster of its own.
//!
//! Written by ingest (unions, with the new doc's batch) and `recluster` (rebuilt whole).
//! Read by every cluster id shown (`cluster`, `export`, `stats`, the service, the
//! report).

use rocksdb::{BlockBasedOptions, Options};

use super::{Column, Tuning};

/// Marker of the `parents` column family.
pub struct Parents;

/// A union-find node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    /// Parent (itself for a root).
    pub parent: u64,
    /// Size of the cluster (meaningful at roots).
    pub size: u64,
    /// Smallest doc id in the cluster (meaningful at roots).
    pub min: u64,
}

impl Column for Parents {
    const NAME: &'static str = "parents";
    type Key = u64;
    type Value = Node;

    fn key(k: &u64) -> Vec<u8> {
        k.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u64, String> {
        super::be_u64(b)
    }

    fn value(n: &Node) -> Vec<u8> {
        let mut b = Vec::with_capacity(24);
        b.extend_from_slice(&n.parent.to_be_bytes());
        b.extend_from_slice(&n.size.to_be_bytes());
        b.extend_from_slice(&n.min.to_be_bytes());
        b
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Node, String> {
        if b.len() != 24 {
            return Err(format!("{} bytes where 24 were expected", b.len()));
        }
        Ok(Node {
            parent: super::be_u64(&b[..8])?,
            size: super::be_u64(&b[8..16])?,
            min: super::be_u64(&b[16..])?,
        })
    }

    fn tune(o: &mut Options, t: &mut BlockBasedOptions, _cx: &Tuning) {
        super::point_lookups(o, t);
    }
}
