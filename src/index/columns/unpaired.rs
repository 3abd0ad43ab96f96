//! `unpaired`: doc id (u64 BE) → sweep id (u32 BE) ‖ the URL of the capture that created
//! it. With edges on content (`cluster.resemblance = "content"`) a sweep's new docs are
//! committed as they are read, with their sketches stored in full and no template; their
//! pairs wait until the whole sweep is in and its templates are learned. An entry says
//! the doc is still waiting: its sketch is not in its final form, it has no edges, unions
//! or postings. The entries are always the newest docs (a range up to the doc counter).
//!
//! Written by ingest (each new doc, on content) and deleted in the batch that stores the
//! doc's pairs. Read by ingest: a run killed before its pairs were stored finds them here
//! and finds the pairs first.

use super::{Col, Column};
use crate::index::Result;

/// Marker of the `unpaired` column family.
pub struct Unpaired;

/// A doc waiting for its pairs: its sweep, and the URL that created it (its host's
/// template is the one it is compared without).
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// The sweep that created it.
    pub sweep: u32,
    /// The URL of the capture that created it.
    pub url: String,
}

impl Column for Unpaired {
    const NAME: &'static str = "unpaired";
    type Key = u64;
    type Value = Waiting;

    fn key(k: &u64) -> Vec<u8> {
        k.to_be_bytes().to_vec()
    }

    fn decode_key(b: &[u8]) -> std::result::Result<u64, String> {
        super::be_u64(b)
    }

    fn value(v: &Waiting) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + v.url.len());
        out.extend_from_slice(&v.sweep.to_be_bytes());
        out.extend_from_slice(v.url.as_bytes());
        out
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Waiting, String> {
        if b.len() < 4 {
            return Err(format!("{} bytes where at least 4 were expected", b.len()));
        }
        let sweep = super::be_u32(&b[..4])?;
        let url = String::from_utf8(b[4..].to_vec()).map_err(|_| "a URL that is not UTF-8")?;
        Ok(Waiting { sweep, url })
    }
}

impl Col<'_, Unpaired> {
    /// The first doc waiting for its pairs, and its sweep.
    pub fn first(&self) -> Result<Option<(u64, u32)>> {
        let mut out = None;
        self.for_each(|d, w| {
            out = Some((d, w.sweep));
            Ok(false)
        })?;
        Ok(out)
    }

    /// Up to `n` docs waiting, from `from` on, in doc order.
    pub fn from(&self, from: u64, n: usize) -> Result<Vec<(u64, Waiting)>> {
        let mut out = Vec::new();
        self.scan_raw(&from.to_be_bytes(), None, false, |k, v| {
            let d = Unpaired::decode_key(k).map_err(|e| super::corrupt::<Unpaired>(k, e))?;
            let w = Unpaired::decode_value(v).map_err(|e| super::corrupt::<Unpaired>(k, e))?;
            out.push((d, w));
            Ok(out.len() < n)
        })?;
        Ok(out)
    }
}
