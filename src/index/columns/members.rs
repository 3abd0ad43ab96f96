//! `members`: root doc id u64 BE ‖ member doc id u64 BE → nothing. The listing of every
//! cluster of two or more docs, by one prefix scan of its root.
//!
//! Written by ingest (unions move the smaller cluster's members) and `recluster`. Read
//! by `cluster`, the report and the service.

use super::{Col, Column};
use crate::index::Result;

/// Marker of the `members` column family.
pub struct Members;

impl Column for Members {
    const NAME: &'static str = "members";
    /// Root, member.
    type Key = (u64, u64);
    type Value = ();

    fn key(&(root, doc): &(u64, u64)) -> Vec<u8> {
        let mut k = Vec::with_capacity(16);
        k.extend_from_slice(&root.to_be_bytes());
        k.extend_from_slice(&doc.to_be_bytes());
        k
    }

    fn decode_key(b: &[u8]) -> std::result::Result<(u64, u64), String> {
        if b.len() != 16 {
            return Err(format!("{} bytes where 16 were expected", b.len()));
        }
        Ok((super::be_u64(&b[..8])?, super::be_u64(&b[8..])?))
    }

    fn value(_: &()) -> Vec<u8> {
        Vec::new()
    }

    fn decode_value(b: &[u8]) -> std::result::Result<(), String> {
        super::empty_value(b)
    }
}

impl Col<'_, Members> {
    /// Members of the cluster rooted at `root` (empty for a singleton), ascending.
    pub fn of_root(&self, root: u64) -> Result<Vec<u64>> {
        let mut out = Vec::new();
        self.scan_prefix(&root.to_be_bytes(), |(_, m), ()| {
            out.push(m);
            Ok(true)
        })?;
        Ok(out)
    }
}
