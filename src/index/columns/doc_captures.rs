//! `doc_captures`: doc id u64 BE ‖ the tail of a `captures` key (timestamp, sweep, file,
//! record) → the capture's SURT. Every capture of a doc, under any URL, by one prefix
//! scan; with the SURT the `captures` key is rebuilt and the capture read.
//!
//! Written by ingest (every capture with content). Read by `similar`, `cluster`,
//! `whereis` (where content went) and the report.

use super::captures::{CaptureKey, Captures, TAIL};
use super::{corrupt, Col, Column};
use crate::index::codec::CaptureInfo;
use crate::index::Result;

/// Marker of the `doc_captures` column family.
pub struct DocCaptures;

impl Column for DocCaptures {
    const NAME: &'static str = "doc_captures";
    /// The doc and the capture's key.
    type Key = (u64, CaptureKey);
    /// The SURT (also in the key: the value is what a scan needs).
    type Value = String;

    fn key((doc, c): &(u64, CaptureKey)) -> Vec<u8> {
        let ck = Captures::key(c);
        let mut out = Vec::with_capacity(8 + TAIL);
        out.extend_from_slice(&doc.to_be_bytes());
        out.extend_from_slice(&ck[ck.len() - TAIL..]);
        out
    }

    /// The SURT is not in these bytes: the decoded key has an empty one.
    fn decode_key(b: &[u8]) -> std::result::Result<(u64, CaptureKey), String> {
        if b.len() != 8 + TAIL {
            return Err(format!(
                "{} bytes where {} were expected",
                b.len(),
                8 + TAIL
            ));
        }
        let mut ck = vec![0u8];
        ck.extend_from_slice(&b[8..]);
        let c = Captures::decode_key(&ck)?;
        Ok((super::be_u64(&b[..8])?, c))
    }

    fn value(v: &String) -> Vec<u8> {
        v.as_bytes().to_vec()
    }

    fn decode_value(b: &[u8]) -> std::result::Result<String, String> {
        String::from_utf8(b.to_vec()).map_err(|_| "a SURT that is not UTF-8".into())
    }
}

impl Col<'_, DocCaptures> {
    /// Every capture of `doc` (any URL), in the order of their timestamps then keys.
    pub fn captures_of(&self, doc: u64) -> Result<Vec<(CaptureKey, CaptureInfo)>> {
        let prefix = doc.to_be_bytes();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        self.scan_raw(&prefix, None, false, |k, v| {
            if !k.starts_with(&prefix) {
                return Ok(false);
            }
            if k.len() != 8 + TAIL {
                return Err(corrupt::<DocCaptures>(
                    k,
                    format!("{} bytes, not {}", k.len(), 8 + TAIL),
                ));
            }
            // doc ‖ tail → SURT ‖ 0 ‖ tail.
            let mut ck = v.to_vec();
            ck.push(0);
            ck.extend_from_slice(&k[8..]);
            keys.push(ck);
            Ok(true)
        })?;
        Col::<Captures>::new(self.index).get_many(&keys)
    }
}
