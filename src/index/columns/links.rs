//! `links`: sweep id u32 BE ‖ target SURT ‖ 0x00 ‖ source SURT → the anchor windows of
//! the source page's links to the target in that sweep (UTF-8; one window a line, each
//! `before \t anchor \t after`, tokens separated by one space; [`crate::links`]).
//!
//! Keyed by sweep and target: what the pages of one sweep say about a URL (its inbound
//! anchor windows, targets never fetched included) is one prefix scan, and a sweep's
//! targets come in key order, each with its windows together. Written by ingest with
//! each capture of an HTML page (a page captured twice in a sweep: its last capture's
//! windows); read by the link queries.

use super::{Col, Column};
use crate::index::Result;

/// Marker of the `links` column family.
pub struct Links;

/// A key of `links`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkKey {
    /// Sweep id.
    pub sweep: u32,
    /// SURT of the page linked to.
    pub target: String,
    /// SURT of the page that links.
    pub source: String,
}

/// The key bytes of (sweep, target, source).
pub fn key_of(sweep: u32, target: &str, source: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + target.len() + 1 + source.len());
    k.extend_from_slice(&sweep.to_be_bytes());
    k.extend_from_slice(target.as_bytes());
    k.push(0);
    k.extend_from_slice(source.as_bytes());
    k
}

/// The prefix of every key of `target` in `sweep`.
pub fn target_prefix(sweep: u32, target: &str) -> Vec<u8> {
    let mut k = key_of(sweep, target, "");
    k.truncate(4 + target.len() + 1);
    k
}

impl Column for Links {
    const NAME: &'static str = "links";
    type Key = LinkKey;
    type Value = String;

    fn key(k: &LinkKey) -> Vec<u8> {
        key_of(k.sweep, &k.target, &k.source)
    }

    fn decode_key(b: &[u8]) -> std::result::Result<LinkKey, String> {
        if b.len() < 5 {
            return Err(format!("{} bytes: not a sweep id and two SURTs", b.len()));
        }
        let sweep = super::be_u32(&b[..4])?;
        let rest = &b[4..];
        let zero = memchr::memchr(0, rest).ok_or("no 0x00 between target and source")?;
        let text = |s: &[u8]| String::from_utf8(s.to_vec()).map_err(|_| "a SURT that is not UTF-8");
        Ok(LinkKey {
            sweep,
            target: text(&rest[..zero])?,
            source: text(&rest[zero + 1..])?,
        })
    }

    fn value(v: &String) -> Vec<u8> {
        v.as_bytes().to_vec()
    }

    fn decode_value(b: &[u8]) -> std::result::Result<String, String> {
        String::from_utf8(b.to_vec()).map_err(|_| "anchor windows that are not UTF-8".into())
    }
}

impl Col<'_, Links> {
    /// The pages of sweep `sweep` that link `target`, with their windows, by source.
    pub fn inbound(&self, sweep: u32, target: &str) -> Result<Vec<(String, Vec<String>)>> {
        let prefix = target_prefix(sweep, target);
        let mut out = Vec::new();
        self.scan_prefix(&prefix, |k, v| {
            out.push((k.source, v.lines().map(str::to_string).collect()));
            Ok(true)
        })?;
        Ok(out)
    }
}
