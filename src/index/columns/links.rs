//! `links`: sweep id u32 BE ‖ source SURT → the page's outgoing links in that sweep, each
//! target SURT with its anchor windows ([`crate::links::OutLink`] list, sorted by target;
//! codec: format byte, bincode). A window is `before \t anchor \t after`, tokens
//! separated by one space.
//!
//! One entry a page: the commit adds one put per HTML capture, whatever its number of
//! links (keyed by target, a page's hundred links were a hundred puts on the committing
//! thread: 70% more ingest time on a generated sweep of 100,000 pages). What the pages of
//! a sweep say about one URL is read by a scan of the sweep's pages. Written by ingest
//! with each 2xx capture of an HTML page (a page captured twice in a sweep: its last
//! capture's links); read by `inlinks`.

use super::{Col, Column};
use crate::index::codec::{decode, encode};
use crate::index::Result;
use crate::links::OutLink;

/// Marker of the `links` column family.
pub struct Links;

/// A key of `links`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkKey {
    /// Sweep id.
    pub sweep: u32,
    /// SURT of the page that links.
    pub source: String,
}

/// The key bytes of (sweep, source).
pub fn key_of(sweep: u32, source: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + source.len());
    k.extend_from_slice(&sweep.to_be_bytes());
    k.extend_from_slice(source.as_bytes());
    k
}

/// The value bytes of a page's links.
pub fn value_of(links: &[OutLink]) -> Vec<u8> {
    encode(&links)
}

impl Column for Links {
    const NAME: &'static str = "links";
    type Key = LinkKey;
    type Value = Vec<OutLink>;

    fn key(k: &LinkKey) -> Vec<u8> {
        key_of(k.sweep, &k.source)
    }

    fn decode_key(b: &[u8]) -> std::result::Result<LinkKey, String> {
        if b.len() < 4 {
            return Err(format!("{} bytes: not a sweep id and a SURT", b.len()));
        }
        Ok(LinkKey {
            sweep: super::be_u32(&b[..4])?,
            source: String::from_utf8(b[4..].to_vec()).map_err(|_| "a SURT that is not UTF-8")?,
        })
    }

    fn value(v: &Vec<OutLink>) -> Vec<u8> {
        value_of(v)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Vec<OutLink>, String> {
        decode(b)
    }
}

/// The pages that link one target, each with its links' windows, by source.
pub type Inbound = Vec<(String, Vec<String>)>;

impl Col<'_, Links> {
    /// The pages of sweep `sweep` that link `target`, with their windows, by source.
    pub fn inbound(&self, sweep: u32, target: &str) -> Result<Inbound> {
        let mut many = self.inbound_many(sweep, &[target])?;
        Ok(many.pop().unwrap_or_default())
    }

    /// [`Self::inbound`] of each of `targets`, in their order, in one scan of the sweep.
    pub fn inbound_many(&self, sweep: u32, targets: &[&str]) -> Result<Vec<Inbound>> {
        let at: std::collections::HashMap<&str, usize> =
            targets.iter().enumerate().map(|(i, t)| (*t, i)).collect();
        let mut out = vec![Inbound::new(); targets.len()];
        if targets.is_empty() {
            return Ok(out);
        }
        self.scan_prefix(&sweep.to_be_bytes(), |k, links| {
            for l in links {
                if let Some(i) = at.get(l.target.as_str()) {
                    out[*i].push((k.source.clone(), l.windows));
                }
            }
            Ok(true)
        })?;
        Ok(out)
    }
}
