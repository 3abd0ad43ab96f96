//! `sweep_pages`: sweep id u32 BE ‖ host SURT ‖ 0x00 ‖ URL hash u64 BE ‖ timestamp (14
//! ASCII digits) ‖ file number u32 BE ‖ record number u32 BE (the capture's, as in its
//! `captures` key: two records of one URL and second are two pages) → [`SweepPage`] (doc u64 BE ‖ flags u8 (1 previous, 2 computed, 4
//! revisit) ‖ content resemblance f32 BE, and with a previous capture: ‖ previous doc
//! u64 BE ‖ previous sweep u32 BE ‖ the capture's key). Two kinds of a
//! sweep's pages (2xx captures with text), so that the end of an ingest finds them
//! without reading every capture of the index:
//!
//! - the host's *sample*: each page whose URL hash was among the host's
//!   `template.sample_pages` lowest when it was captured (so the lowest of the whole
//!   sweep are all here: the first keys of the host's range), from which its template
//!   is learned ([`crate::template`]); pages that came by a revisit record are never in
//!   it (`flags` bit 4: what the sweep fetched shows the host's template now);
//! - the pages whose doc differs from their URL's previous capture's, with that doc and
//!   its sweep: their content resemblance to it is computed once the sweep's templates
//!   are known, and written into the capture (`flags` says it is).
//!
//! Written by ingest with the captures, and at its end. Read by ingest only.

use super::{Col, Column};
use crate::index::Result;

/// Marker of the `sweep_pages` column family.
pub struct SweepPages;

/// A key of `sweep_pages`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepPageKey {
    /// Sweep id.
    pub sweep: u32,
    /// Host SURT, through its `)`.
    pub host: String,
    /// Hash of the URL's SURT ([`url_hash`]).
    pub hash: u64,
    /// 14-digit timestamp of the capture.
    pub timestamp: String,
    /// The capture's file and record numbers (the end of its `captures` key).
    pub record: [u8; 8],
}

/// A page of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPage {
    /// Its doc.
    pub doc: u64,
    /// The doc and sweep of the URL's previous capture with content, when it is another
    /// doc.
    pub previous: Option<(u64, u32)>,
    /// The content resemblance to it, once computed (`Some(None)`: neither page holds
    /// anything but template).
    pub content_r: Option<Option<f32>>,
    /// The capture's key in `captures`, where its content resemblance is written (empty
    /// for a page of the sample alone: it has none).
    pub capture: Vec<u8>,
    /// Its content came by a revisit record: written for its previous capture only,
    /// never part of the host's sample (what the sweep fetched shows its template).
    pub revisit: bool,
}

pub use crate::template::url_hash;

/// Bytes of a key after the host's 0x00: hash, timestamp, file and record numbers.
const KEY_TAIL: usize = 8 + 14 + 8;
const FIXED: usize = 8 + 1 + 4 + 8 + 4;
/// Bytes of a page of the sample alone (no previous capture): doc, flags, resemblance.
const SAMPLE_ONLY: usize = 8 + 1 + 4;
const HAS_PREVIOUS: u8 = 1;
const COMPUTED: u8 = 2;
const REVISIT: u8 = 4;

impl Column for SweepPages {
    const NAME: &'static str = "sweep_pages";
    type Key = SweepPageKey;
    type Value = SweepPage;

    fn key(k: &SweepPageKey) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + k.host.len() + 1 + KEY_TAIL);
        out.extend_from_slice(&k.sweep.to_be_bytes());
        out.extend_from_slice(k.host.as_bytes());
        out.push(0);
        out.extend_from_slice(&k.hash.to_be_bytes());
        out.extend_from_slice(k.timestamp.as_bytes());
        out.extend_from_slice(&k.record);
        out
    }

    fn decode_key(b: &[u8]) -> std::result::Result<SweepPageKey, String> {
        let n = b.len();
        // Read from the end: hash, timestamp and record after the host's 0x00.
        let at = n.wrapping_sub(KEY_TAIL);
        if n < 4 + 1 + KEY_TAIL
            || b[at - 1] != 0
            || !b[at + 8..at + 22].iter().all(u8::is_ascii_digit)
        {
            return Err(format!(
                "not sweep ‖ host ‖ 0 ‖ hash ‖ timestamp ‖ record ({n} bytes)"
            ));
        }
        Ok(SweepPageKey {
            sweep: super::be_u32(&b[..4])?,
            host: String::from_utf8(b[4..at - 1].to_vec())
                .map_err(|_| "a host that is not UTF-8")?,
            hash: super::be_u64(&b[at..at + 8])?,
            timestamp: String::from_utf8(b[at + 8..at + 22].to_vec()).expect("digits"),
            record: b[at + 22..].try_into().expect("8 bytes"),
        })
    }

    fn value(v: &SweepPage) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED + v.capture.len());
        out.extend_from_slice(&v.doc.to_be_bytes());
        let flags = if v.previous.is_some() {
            HAS_PREVIOUS
        } else {
            0
        } | if v.content_r.is_some() { COMPUTED } else { 0 }
            | if v.revisit { REVISIT } else { 0 };
        out.push(flags);
        let r = v.content_r.flatten().unwrap_or(f32::NAN);
        out.extend_from_slice(&r.to_be_bytes());
        // A page of the sample alone ends here.
        if let Some((pd, ps)) = v.previous {
            out.extend_from_slice(&pd.to_be_bytes());
            out.extend_from_slice(&ps.to_be_bytes());
            out.extend_from_slice(&v.capture);
        }
        out
    }

    fn decode_value(b: &[u8]) -> std::result::Result<SweepPage, String> {
        let previous = b.get(8).is_some_and(|f| f & HAS_PREVIOUS != 0);
        let least = if previous {
            FIXED + 1 + super::captures::TAIL
        } else {
            SAMPLE_ONLY
        };
        if b.len() < least || b[8] & !(HAS_PREVIOUS | COMPUTED | REVISIT) != 0 {
            return Err(format!("not a sweep page ({} bytes)", b.len()));
        }
        let r = f32::from_be_bytes(b[9..13].try_into().expect("4 bytes"));
        Ok(SweepPage {
            doc: super::be_u64(&b[..8])?,
            previous: previous
                .then(|| Ok::<_, String>((super::be_u64(&b[13..21])?, super::be_u32(&b[21..25])?)))
                .transpose()?,
            content_r: (b[8] & COMPUTED != 0).then_some((!r.is_nan()).then_some(r)),
            // (Indexes written before kept a sample page's capture key too: unused.)
            capture: match previous {
                true => b[FIXED..].to_vec(),
                false => Vec::new(),
            },
            revisit: b[8] & REVISIT != 0,
        })
    }
}

impl Col<'_, SweepPages> {
    /// Every page of sweep `sweep` kept here, by host, then URL hash.
    pub fn of_sweep(
        &self,
        sweep: u32,
        each: impl FnMut(SweepPageKey, SweepPage) -> Result<bool>,
    ) -> Result<()> {
        self.scan_prefix(&sweep.to_be_bytes(), each)
    }
}
