//! `doc_captures`: doc id u64 BE ‖ the tail of a `captures` key (timestamp, sweep, file,
//! record) → the capture's SURT. Every capture of a doc, under any URL, by one prefix
//! scan; with the SURT the `captures` key is rebuilt and the capture read.
//!
//! Written by ingest (every capture with content). Read by `similar`, `cluster`,
//! `whereis` (where content went) and the report; only the captures the reader given
//! may see ([`crate::access::Reader`]).

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

/// Where an ingest met a capture: its sweep, file and record numbers.
pub type Met = (u32, u32, u32);

impl Col<'_, DocCaptures> {
    /// Where `doc` was first captured, and where first in what `r` may see with its
    /// content (a revisit of an original hidden from them carries none: see
    /// [`Self::captures_of`]), each as (sweep, file, record): the order in which an
    /// ingest met them, so the order in which it numbered docs.
    pub fn first_met(
        &self,
        r: &crate::access::Reader,
        doc: u64,
    ) -> Result<(Option<Met>, Option<Met>)> {
        let prefix = doc.to_be_bytes();
        let mut any: Option<Met> = None;
        let mut visible: Vec<(Met, Vec<u8>, String)> = Vec::new();
        self.scan_raw(&prefix, None, false, |k, v| {
            if !k.starts_with(&prefix) {
                return Ok(false);
            }
            let (_, c) = DocCaptures::decode_key(k).map_err(|e| corrupt::<DocCaptures>(k, e))?;
            let at = (c.sweep, c.file, c.record);
            any = Some(any.map_or(at, |a| a.min(at)));
            let surt = DocCaptures::decode_value(v).map_err(|e| corrupt::<DocCaptures>(k, e))?;
            if r.visible(&surt, &c.timestamp) {
                let mut ck = surt.into_bytes();
                ck.push(0);
                ck.extend_from_slice(&k[8..]);
                visible.push((at, ck, c.timestamp));
            }
            Ok(true)
        })?;
        visible.sort_unstable();
        let col = Col::<Captures>::new(self.index);
        for (at, ck, ts) in visible {
            let Some(info) = col.get_many(std::slice::from_ref(&ck))?.pop().flatten() else {
                continue;
            };
            if info.kind != crate::read::RecordKind::Revisit
                || super::original_seen(self.index, r, doc, &ts)?
            {
                return Ok((any, Some(at)));
            }
        }
        Ok((any, None))
    }

    /// Every capture of `doc` (any URL), in key order. An entry whose capture is not in
    /// `captures` is corruption of this family (every capture with content has both).
    pub fn captures_of(
        &self,
        r: &crate::access::Reader,
        doc: u64,
    ) -> Result<Vec<(CaptureKey, CaptureInfo)>> {
        let prefix = doc.to_be_bytes();
        let mut keys: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        self.scan_raw(&prefix, None, false, |k, v| {
            if !k.starts_with(&prefix) {
                return Ok(false);
            }
            let (_, c) = DocCaptures::decode_key(k).map_err(|e| corrupt::<DocCaptures>(k, e))?;
            let surt = DocCaptures::decode_value(v).map_err(|e| corrupt::<DocCaptures>(k, e))?;
            // What the reader may not see is not looked up.
            if !r.visible(&surt, &c.timestamp) {
                return Ok(true);
            }
            // doc ‖ tail → SURT ‖ 0 ‖ tail.
            let mut ck = surt.into_bytes();
            ck.push(0);
            ck.extend_from_slice(&k[8..]);
            keys.push((k.to_vec(), ck));
            Ok(true)
        })?;
        let cks: Vec<Vec<u8>> = keys.iter().map(|(_, ck)| ck.clone()).collect();
        let found = Col::<Captures>::new(self.index).get_many(&cks)?;
        let mut out = Vec::with_capacity(keys.len());
        for ((k, ck), info) in keys.iter().zip(found) {
            match info {
                Some(mut info) => {
                    // A revisit whose original the reader may not see carries no
                    // content for them (see `captures::seen`).
                    if r.filtered() && info.kind == crate::read::RecordKind::Revisit {
                        let (_, ts) =
                            super::captures::split(ck).map_err(|e| corrupt::<DocCaptures>(k, e))?;
                        if !super::original_seen(self.index, r, doc, ts)? {
                            continue;
                        }
                    }
                    super::captures::unname_hidden_redirect(r, &mut info);
                    out.push((
                        Captures::decode_key(ck).map_err(|e| corrupt::<DocCaptures>(k, e))?,
                        info,
                    ))
                }
                None => {
                    return Err(corrupt::<DocCaptures>(
                        k,
                        format!("its capture {} is not in captures", super::show_key(ck)),
                    ))
                }
            }
        }
        Ok(out)
    }
}
