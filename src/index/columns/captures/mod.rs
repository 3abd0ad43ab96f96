//! `captures`: every capture, keyed so that one URL's captures are adjacent and in time
//! order: SURT ‖ 0x00 ‖ timestamp (14 ASCII digits) ‖ sweep u32 BE ‖ file number u32 BE
//! ‖ record number u32 BE → [`CaptureInfo`] (URL, sweep, record type, doc, status,
//! mime, digest, redirect, WARC file name, offset, length, resemblance to the previous
//! capture; bincode). The last three numbers make the key unique: two records of one URL
//! and second in one sweep are two captures. The fixed 26-byte tail is read from the
//! end, so a key decodes whatever its SURT holds.
//!
//! Written by ingest (every capture). Read by `whereis`, `history`, the report, `stats`,
//! `export`, the CDX, Wayback and Memento endpoints of the service (prefix and range
//! scans) and ingest (the previous capture of a URL, a revisit's original). Scans yield
//! only the captures the reader may see ([`crate::access`]), their content resemblances
//! measured without templates learnt from hidden pages ([`templates_seen`]).

pub mod templates_seen;

use super::{corrupt, Col, Column};
use crate::access::Reader;
use crate::index::codec::{decode, encode, CaptureInfo};
use crate::index::Result;

/// Marker of the `captures` column family.
pub struct Captures;

/// Bytes after the SURT's 0x00: timestamp, sweep, file, record.
pub const TAIL: usize = 14 + 4 + 4 + 4;

/// A key of `captures`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureKey {
    /// SURT of the URL.
    pub surt: String,
    /// 14-digit timestamp.
    pub timestamp: String,
    /// Sweep id.
    pub sweep: u32,
    /// The file's number in its sweep.
    pub file: u32,
    /// The record's number in its file.
    pub record: u32,
}

impl Column for Captures {
    const NAME: &'static str = "captures";
    type Key = CaptureKey;
    type Value = CaptureInfo;

    fn key(k: &CaptureKey) -> Vec<u8> {
        let mut out = Vec::with_capacity(k.surt.len() + 1 + TAIL);
        out.extend_from_slice(k.surt.as_bytes());
        out.push(0);
        out.extend_from_slice(k.timestamp.as_bytes());
        out.extend_from_slice(&k.sweep.to_be_bytes());
        out.extend_from_slice(&k.file.to_be_bytes());
        out.extend_from_slice(&k.record.to_be_bytes());
        out
    }

    fn decode_key(b: &[u8]) -> std::result::Result<CaptureKey, String> {
        let (surt, ts) = split(b)?;
        let n = b.len();
        let num = |at: usize| u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        Ok(CaptureKey {
            surt: surt.to_string(),
            timestamp: ts.to_string(),
            sweep: num(n - 12),
            file: num(n - 8),
            record: num(n - 4),
        })
    }

    fn value(v: &CaptureInfo) -> Vec<u8> {
        encode(v)
    }

    fn decode_value(b: &[u8]) -> std::result::Result<CaptureInfo, String> {
        decode(b)
    }
}

/// The file a capture key names: its sweep id and the file's number in that sweep
/// (`files` has its path). Two sweeps' files may share a name; these never do.
pub fn file_of_key(k: &[u8]) -> (u32, u32) {
    let num = |from: Option<usize>| {
        from.and_then(|a| k.get(a..a + 4))
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_be_bytes)
    };
    (num(k.len().checked_sub(12)), num(k.len().checked_sub(8)))
}

/// The SURT and timestamp of a key, borrowed.
pub fn split(b: &[u8]) -> std::result::Result<(&str, &str), String> {
    let n = b.len();
    if n < TAIL + 1 || b[n - TAIL - 1] != 0 {
        return Err(format!("not SURT ‖ 0 ‖ {TAIL} bytes ({n} bytes)"));
    }
    let surt = std::str::from_utf8(&b[..n - TAIL - 1]).map_err(|_| "a SURT that is not UTF-8")?;
    let ts = std::str::from_utf8(&b[n - TAIL..n - 12])
        .ok()
        .filter(|t| t.bytes().all(|c| c.is_ascii_digit()))
        .ok_or("a timestamp that is not 14 digits")?;
    Ok((surt, ts))
}

/// The key prefix of every capture of a SURT: SURT ‖ 0x00.
pub fn url_prefix(surt: &str) -> Vec<u8> {
    let mut p = Vec::with_capacity(surt.len() + 1 + 14);
    p.extend_from_slice(surt.as_bytes());
    p.push(0);
    p
}

/// One capture as a scan yields it: SURT and timestamp (borrowed from the key) and the
/// value.
pub type Row<'k> = (&'k str, &'k str, CaptureInfo);

impl Col<'_, Captures> {
    /// Calls `each` with every capture whose key starts with `prefix`, in key order.
    pub fn scan_prefix_rows(
        &self,
        r: &Reader,
        prefix: &[u8],
        mut each: impl FnMut(Row<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_raw(prefix, None, false, |k, v| {
            if !k.starts_with(prefix) {
                return Ok(false);
            }
            match seen(self, r, k, v)? {
                Some(r) => each(r),
                None => Ok(true),
            }
        })
    }

    /// Every capture of a SURT, oldest first, with its key bytes ([`file_of_key`]).
    pub fn scan_url(
        &self,
        r: &Reader,
        surt: &str,
        mut each: impl FnMut(&[u8], Row<'_>) -> Result<bool>,
    ) -> Result<()> {
        let prefix = url_prefix(surt);
        self.scan_raw(&prefix, None, false, |k, v| {
            if !k.starts_with(&prefix) {
                return Ok(false);
            }
            match seen(self, r, k, v)? {
                Some(r) => each(k, r),
                None => Ok(true),
            }
        })
    }

    /// Every capture from the key `start` on (below `end`), or with `reverse` from the
    /// last key before `start` backwards (down to `end`), with its key bytes, until
    /// `each` returns false.
    pub fn scan_range(
        &self,
        r: &Reader,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        mut each: impl FnMut(&[u8], Row<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_raw(start, Some(end), reverse, |k, v| {
            match seen(self, r, k, v)? {
                Some(r) => each(k, r),
                None => Ok(true),
            }
        })
    }

    /// Every capture in key order.
    pub fn scan_all(
        &self,
        r: &Reader,
        mut each: impl FnMut(Row<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_raw(&[], None, false, |k, v| match seen(self, r, k, v)? {
            Some(r) => each(r),
            None => Ok(true),
        })
    }

    /// The first capture of sweep `sweep` under key prefix `prefix` (a host SURT) that
    /// reader `r` may see, in the sweep's input order: its file and record numbers and
    /// timestamp. Reads the keys under the prefix, not their values.
    pub fn first_seen_in_sweep(
        &self,
        r: &Reader,
        prefix: &str,
        sweep: u32,
    ) -> Result<Option<(u32, u32, String)>> {
        let mut best: Option<(u32, u32, String)> = None;
        self.scan_raw(prefix.as_bytes(), None, false, |k, _| {
            if !k.starts_with(prefix.as_bytes()) {
                return Ok(false);
            }
            let (s, t) = split(k).map_err(|e| corrupt::<Captures>(k, e))?;
            let (sw, file) = file_of_key(k);
            let record = u32::from_be_bytes(k[k.len() - 4..].try_into().expect("4 bytes"));
            let earlier = best.as_ref().is_none_or(|b| (file, record) < (b.0, b.1));
            if sw == sweep && earlier && r.visible(s, t) {
                best = Some((file, record, t.to_string()));
            }
            Ok(true)
        })?;
        Ok(best)
    }

    /// Every key in key order (the values are not decoded).
    pub fn scan_keys(
        &self,
        r: &Reader,
        mut each: impl FnMut(&str, &str) -> Result<bool>,
    ) -> Result<()> {
        self.scan_raw(&[], None, false, |k, _| {
            let (s, t) = split(k).map_err(|e| corrupt::<Captures>(k, e))?;
            if !r.visible(s, t) {
                return Ok(true);
            }
            each(s, t)
        })
    }

    /// The captures at the given keys, in the order given (`None`: absent), read in one
    /// batch.
    pub fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<CaptureInfo>>> {
        let db = self.index.db();
        let mut out = Vec::with_capacity(keys.len());
        for (k, v) in keys
            .iter()
            .zip(db.batched_multi_get_cf(self.handle(), keys.iter(), false))
        {
            out.push(match v? {
                Some(v) => Some(Captures::decode_value(&v).map_err(|e| corrupt::<Captures>(k, e))?),
                None => None,
            });
        }
        Ok(out)
    }

    /// An estimate of the number of captures (RocksDB's, from its files' properties).
    pub fn estimated_count(&self) -> Result<u64> {
        Ok(self
            .index
            .db()
            .property_int_value_cf(self.handle(), "rocksdb.estimate-num-keys")?
            .unwrap_or(0))
    }
}

/// A capture as reader `r` may see it: none when it is hidden;
/// a redirect to a URL the reader may not be told of is not named. Every read of this
/// family in answers goes through here.
pub(crate) fn seen<'k>(
    col: &Col<'_, Captures>,
    r: &Reader,
    k: &'k [u8],
    v: &[u8],
) -> Result<Option<Row<'k>>> {
    let (s, t) = split(k).map_err(|e| corrupt::<Captures>(k, e))?;
    if !r.visible(s, t) {
        return Ok(None);
    }
    let mut info = Captures::decode_value(v).map_err(|e| corrupt::<Captures>(k, e))?;
    unname_hidden_redirect(r, &mut info);
    // The resemblances to the previous capture were measured against the capture
    // before with content: when this reader may not see it, or sees no content there
    // (a revisit of a hidden original), they are not told (they would say that it
    // exists, and how alike). The content resemblance left out the host's templates;
    // where those learnt from the pages the reader sees differ, it is measured again.
    // The walk back is needed when that capture may be hidden: by an embargo, or by a
    // rule (its original, of another URL); or to measure again.
    let measured = info.r_prev.is_some() || info.cr_prev.is_some();
    let host = crate::url::host_of_surt(s);
    let templates = match r.filtered() && measured {
        true => templates_seen::of_host(col.index, r, host)?,
        false => Default::default(),
    };
    if r.filtered()
        && measured
        && (!templates.is_empty() || r.rules_may_hide() || r.dates_may_hide())
    {
        match previous_seen(col, r, s, k)? {
            None => {
                info.r_prev = None;
                info.cr_prev = None;
            }
            // Another doc (the same one is 1.0 either way), whose content resemblance
            // (or none: all template) the templates of either sweep changed.
            Some((sweep, doc))
                if info.r_prev.is_some()
                    && info.doc.is_some_and(|d| d != doc)
                    && (templates.contains_key(&info.sweep) || templates.contains_key(&sweep)) =>
            {
                let removed = crate::template::union(
                    &templates_seen::values(col.index, &templates, host, sweep)?,
                    &templates_seen::values(col.index, &templates, host, info.sweep)?,
                );
                info.cr_prev = match info.doc {
                    Some(d) => content_resemblance(col.index, doc, d, &removed)?,
                    None => None,
                };
            }
            Some(_) => {}
        }
    }
    // A revisit's content is the record it repeats: when the reader may see no earlier
    // capture of that content that is not a revisit, it has none for them (as an index
    // without the hidden records could not resolve it).
    if r.filtered() && info.kind == crate::read::RecordKind::Revisit {
        if let Some(doc) = info.doc {
            if !super::original_seen(col.index, r, doc, t)? {
                info.doc = None;
                info.r_prev = None;
                info.cr_prev = None;
            }
        }
    }
    Ok(Some((s, t, info)))
}

/// The capture before key `k` that its stored resemblances were measured against (the
/// latest earlier capture of SURT `s` with content), as reader `r` sees it: its sweep
/// and doc, or none when `r` may not see it or sees no content there (a revisit whose
/// original it may not see).
fn previous_seen(
    col: &Col<'_, Captures>,
    r: &Reader,
    s: &str,
    k: &[u8],
) -> Result<Option<(u32, u64)>> {
    let prefix = url_prefix(s);
    // (A reverse walk starts at the key itself: skipped.)
    for item in col.iter_raw(k, Some(&prefix), true) {
        let (pk, pv) = item?;
        if *pk == *k {
            continue;
        }
        let info = Captures::decode_value(&pv).map_err(|e| corrupt::<Captures>(&pk, e))?;
        if let Some(doc) = info.doc {
            let (ps, pt) = split(&pk).map_err(|e| corrupt::<Captures>(&pk, e))?;
            let seen = r.visible(ps, pt)
                && (info.kind != crate::read::RecordKind::Revisit
                    || super::original_seen(col.index, r, doc, pt)?);
            return Ok(seen.then_some((info.sweep, doc)));
        }
    }
    Ok(None)
}

/// The content resemblance of docs `a` and `b` with `removed` (template values) left
/// out of both, as ingest measures it.
fn content_resemblance(
    index: &crate::index::Index,
    a: u64,
    b: u64,
    removed: &[u32],
) -> Result<Option<f32>> {
    let mut docs = [a, b];
    docs.sort_unstable();
    let sketches = index.sketches().read_compact(&docs, None)?;
    let found = |d: u64| sketches.iter().find(|(x, _)| *x == d).map(|(_, s)| s);
    Ok(match (found(a), found(b)) {
        (Some(x), Some(y)) => {
            crate::template::content_estimate(x, y, removed).map(|e| e.resemblance as f32)
        }
        _ => None,
    })
}

/// Drops a redirect's target when reader `r` may not be told of it.
pub(crate) fn unname_hidden_redirect(r: &Reader, info: &mut CaptureInfo) {
    if (info.redirect.as_deref()).is_some_and(|to| !r.url_shown(to)) {
        info.redirect = None;
    }
}
