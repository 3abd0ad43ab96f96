//! Queries: what users come for. Each is a library call that the CLI command of the same
//! name prints, human-readable or as JSON.
//!
//! | question | call |
//! |---|---|
//! | where is this page now? (lost and found) | [`whereis::whereis`] |
//! | how did this URL change over time? | [`history::history`] |
//! | which pages resemble or contain this one? | [`similar::similar`] |
//! | which docs are near-duplicates of this URL's content? | [`cluster::cluster`] |
//!
//! A [`Searcher`] holds what repeated queries share (sweep dates, the over-cap posting
//! values); open it once and ask many questions.

pub mod captures;
pub mod cluster;
pub mod diff;
pub mod history;
pub mod inbound;
pub mod related;
pub mod similar;
pub mod summary;
pub mod whereis;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::access::Reader;
use crate::compact::{compare, CompactSketch};
use crate::index::codec::CaptureInfo;
use crate::index::postings::{Fresh, OverCap};
use crate::index::{Index, Result};
use crate::sketch::{Estimate, Sketch};
use crate::template::{content_estimate, holds_posting_key, union};
use crate::url::host_of_surt;
use crate::url::surt;

/// One capture of a URL, as stored.
#[derive(Debug, Clone)]
pub struct CaptureRow {
    /// SURT key.
    pub surt: String,
    /// 14-digit timestamp.
    pub timestamp: String,
    /// The stored capture.
    pub info: CaptureInfo,
    /// The file it was read from: its sweep id and its number in that sweep (`files`
    /// has its path; `info.file` is only its name, which files of two sweeps may share).
    pub file: (u32, u32),
}

impl CaptureRow {
    /// 2xx (or no HTTP status, e.g. a `resource` record).
    pub fn ok(&self) -> bool {
        self.info.status.is_none_or(|s| (200..300).contains(&s))
    }

    /// Bytes its texts hold on the heap (for caches that weigh what they keep).
    pub fn heap_bytes(&self) -> usize {
        let i = &self.info;
        let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        self.surt.len()
            + self.timestamp.len()
            + i.url.len()
            + i.file.len()
            + opt(&i.mime)
            + opt(&i.digest)
            + opt(&i.redirect)
    }

    /// A 3xx with a target.
    pub fn redirect(&self) -> Option<&str> {
        match self.info.status {
            Some(s) if (300..400).contains(&s) => self.info.redirect.as_deref(),
            _ => None,
        }
    }
}

/// Shared state for queries over one index.
pub struct Searcher<'a> {
    pub(crate) index: &'a Index,
    /// Sweep id → (label, date).
    pub(crate) sweeps: Arc<HashMap<u32, (String, String)>>,
    pub(crate) over_cap: Arc<OverCap>,
    /// Postings of docs an interrupted ingest did not store yet.
    pub(crate) fresh: Arc<Fresh>,
    /// Hosts' templates read so far: (host SURT, sweep id) → values.
    templates: Mutex<HashMap<(String, u32), Arc<[u32]>>>,
    /// Who reads: every capture read goes through it.
    reader: Reader,
}

/// What every [`Searcher`] over one unchanging index shares (its sweeps, the postings an
/// interrupted ingest left unwritten, over-cap lists already read): read once, so that a
/// server's requests start without reading them again.
#[derive(Clone)]
pub struct Prepared {
    sweeps: Arc<HashMap<u32, (String, String)>>,
    over_cap: Arc<OverCap>,
    fresh: Arc<Fresh>,
}

impl Prepared {
    /// Reads what the searchers of `index` share.
    pub fn load(index: &Index) -> Result<Prepared> {
        let sweeps = index
            .sweeps()
            .all(&Reader::everything())?
            .into_iter()
            .map(|(id, s)| (id, (s.label, s.date)))
            .collect();
        Ok(Prepared {
            sweeps: Arc::new(sweeps),
            over_cap: Arc::new(OverCap::default()),
            // Docs an interrupted ingest left waiting for their pairs have no postings.
            fresh: Arc::new(Fresh::load(
                index,
                index.unpaired().first()?.map(|(d, _)| d),
            )?),
        })
    }
}

impl<'a> Searcher<'a> {
    /// Prepares queries over `index` for a reader who sees everything (the commands).
    pub fn everything(index: &'a Index) -> Result<Searcher<'a>> {
        Ok(Searcher::with(
            index,
            &Prepared::load(index)?,
            Reader::everything(),
        ))
    }

    /// A searcher over `index` with what was prepared for it (the same index), for
    /// `reader`.
    pub fn with(index: &'a Index, p: &Prepared, reader: Reader) -> Searcher<'a> {
        Searcher {
            index,
            sweeps: p.sweeps.clone(),
            over_cap: p.over_cap.clone(),
            fresh: p.fresh.clone(),
            templates: Mutex::default(),
            reader,
        }
    }

    /// Who reads.
    pub fn reader(&self) -> &Reader {
        &self.reader
    }

    /// The index.
    pub fn index(&self) -> &Index {
        self.index
    }

    /// Label of a sweep id.
    pub fn sweep_label(&self, id: u32) -> String {
        self.sweeps
            .get(&id)
            .map(|(l, _)| l.clone())
            .unwrap_or_default()
    }

    /// Every capture of the URL (SURT-canonicalized), oldest first.
    pub fn captures(&self, url: &str) -> Result<Vec<CaptureRow>> {
        self.captures_of_surt(&surt(url))
    }

    /// Every capture under a SURT key, oldest first.
    pub fn captures_of_surt(&self, key: &str) -> Result<Vec<CaptureRow>> {
        let mut out = Vec::new();
        self.index
            .captures()
            .scan_url(&self.reader, key, |k, (s, ts, info)| {
                out.push(CaptureRow {
                    surt: s.to_string(),
                    timestamp: ts.to_string(),
                    info,
                    file: crate::index::columns::captures::file_of_key(k),
                });
                Ok(true)
            })?;
        Ok(out)
    }

    /// Every capture of a doc (any URL), oldest first.
    pub fn doc_captures(&self, doc: u64) -> Result<Vec<CaptureRow>> {
        let mut out: Vec<CaptureRow> = self
            .index
            .doc_captures()
            .captures_of(&self.reader, doc)?
            .into_iter()
            .map(|(k, info)| CaptureRow {
                file: (k.sweep, k.file),
                surt: k.surt,
                timestamp: k.timestamp,
                info,
            })
            .collect();
        out.sort_by(|a, b| a.timestamp.cmp(&b.timestamp).then(a.surt.cmp(&b.surt)));
        Ok(out)
    }

    /// Whether a sweep after `sweep` captured some URL of the SURT key's host that this
    /// reader may see. The `host_sweeps` family answers it for a reader who sees
    /// everything; under a view the host's captures are read until a visible one of a
    /// later sweep is found, so that a sweep the view hides (an embargo's) tells nothing.
    pub fn host_captured_after(&self, key: &str, sweep: u32) -> Result<bool> {
        let host = host_of_surt(key);
        let later: HashSet<u32> = (self.index.host_sweeps().of_host(host)?.into_iter())
            .filter(|s| *s > sweep)
            .collect();
        if later.is_empty() || !self.reader.filtered() {
            return Ok(!later.is_empty());
        }
        let mut found = false;
        captures::CaptureRange::of_key(host, captures::MatchType::Host, None, None).scan(
            self.index,
            &self.reader,
            false,
            |_, row| {
                found = later.contains(&row.info.sweep);
                Ok(!found)
            },
        )?;
        Ok(found)
    }

    /// The sweep labelled `label` (default: the newest): its id and label.
    pub fn sweep_by_label(&self, label: Option<&str>) -> Result<(u32, String)> {
        let mut ids: Vec<(u32, &String)> =
            self.sweeps.iter().map(|(id, (l, _))| (*id, l)).collect();
        ids.sort();
        let found = match label {
            Some(want) => ids.iter().find(|(_, l)| l.as_str() == want),
            None => ids.last(),
        };
        match (found, label) {
            (Some((i, l)), _) => Ok((*i, (*l).clone())),
            (None, Some(want)) => Err(crate::index::IndexError::NotFound(format!(
                "no sweep labelled {want:?}"
            ))),
            (None, None) => Err(crate::index::IndexError::NotFound(
                "the index has no sweep".into(),
            )),
        }
    }

    /// Whether this reader may know of the URL of SURT `key` as sweep `sweep` saw it:
    /// the sweep's last capture of it (the one its links were read from), or — a URL the
    /// sweep did not capture, which its pages only link — its rules let it see the key
    /// at the sweep's date.
    pub fn sees_in_sweep(&self, key: &str, sweep: u32) -> Result<bool> {
        if !self.reader.filtered() {
            return Ok(true);
        }
        let everyone = Reader::everything();
        let mut last: Option<String> = None;
        self.index
            .captures()
            .scan_url(&everyone, key, |_, (_, ts, info)| {
                if info.sweep == sweep {
                    last = Some(ts.to_string());
                }
                Ok(true)
            })?;
        if let Some(ts) = last {
            let seen = self.captures_of_surt(key)?;
            return Ok(seen
                .iter()
                .any(|c| c.info.sweep == sweep && c.timestamp == ts));
        }
        let date = self
            .sweeps
            .get(&sweep)
            .map(|(_, d)| d.as_str())
            .unwrap_or("");
        let ts = crate::timestamp::Timestamp14::new(date)
            .or_else(|| crate::timestamp::Timestamp14::from_warc_date(date));
        Ok(ts.is_some_and(|ts| self.reader.visible(key, ts.as_str())))
    }

    /// A doc's sketch.
    pub fn sketch(&self, doc: u64) -> Result<Option<Sketch>> {
        self.index.sketch(doc)
    }

    /// The template of the host of SURT key `key` in sweep `sweep` (its sample values,
    /// ascending, as [`crate::template`] compares them); empty when none was learned.
    /// Under access rules, as learnt from the pages the reader sees
    /// ([`crate::index::columns::captures::templates_seen`]). Read once per searcher: the pages a query
    /// compares share a few hosts and sweeps.
    pub fn template(&self, key: &str, sweep: u32) -> Result<Arc<[u32]>> {
        let at = (host_of_surt(key).to_string(), sweep);
        if let Some(t) = self.templates.lock().ok().and_then(|m| m.get(&at).cloned()) {
            return Ok(t);
        }
        let seen = crate::index::columns::captures::templates_seen::of_host(
            self.index,
            &self.reader,
            &at.0,
        )?;
        let values = crate::index::columns::captures::templates_seen::values(
            self.index, &seen, &at.0, sweep,
        )?;
        if let Ok(mut m) = self.templates.lock() {
            m.insert(at, values.clone());
        }
        Ok(values)
    }

    /// The one candidate search (as ingest and `similar` run it) from stored doc `doc`
    /// by its content posting values (those outside `template`): the docs found, each
    /// with the posting values it shares, and the heads of over-cap lists (sharing 0)
    /// when the doc is mostly boilerplate.
    pub fn content_candidates(&self, doc: u64, template: &[u32]) -> Result<Vec<(u32, u64)>> {
        let Some(posting) = self.index.posting_values(doc)? else {
            return Ok(Vec::new());
        };
        if posting.1.is_empty() {
            return Ok(Vec::new());
        }
        let found = crate::index::candidates::search(
            self.index,
            &self.fresh,
            &self.over_cap,
            &self.reader,
            content_posting(posting, template),
        )?;
        let mut out: Vec<(u32, u64)> = found.shared.iter().map(|c| (c.count, c.doc)).collect();
        if found.mostly_common() {
            out.extend(found.heads.iter().map(|h| (0, *h)));
        }
        Ok(out)
    }

    /// The sketches of `docs` (ascending), compact, as they are compared.
    pub fn compact_sketches(&self, docs: &[u64]) -> Result<Vec<(u64, CompactSketch)>> {
        self.index.sketches().read_compact(docs, None)
    }
}

/// A stored doc's posting level and values without those of its host's `template`: the
/// values the search by content follows (a template value leads to every page of the
/// site, not to this one's content). All of them when every value is template: a page
/// of chrome only is found by its chrome.
pub fn content_posting((level, values): (u8, Vec<u64>), template: &[u32]) -> (u8, Vec<u64>) {
    let content: Vec<u64> = values
        .iter()
        .copied()
        .filter(|v| !holds_posting_key(template, *v))
        .collect();
    if content.is_empty() {
        (level, values)
    } else {
        (level, content)
    }
}

/// Two pages compared as whereis and the report's move matching compare them: the
/// resemblance on all shingles, and on content (the templates of both pages' hosts in
/// their sweeps left out of both samples, [`crate::template::content_estimate`]); the
/// content resemblance is the full one when neither page has content outside them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resemblances {
    /// On all shingles.
    pub full: f64,
    /// Without both templates: what moves are decided on.
    pub content: f64,
}

/// `a` against `b` (compact sketches), with templates `ta` and `tb` (ascending values).
pub fn resemblances(a: &CompactSketch, ta: &[u32], b: &CompactSketch, tb: &[u32]) -> Resemblances {
    let full = compare(a, b, None).map_or(0.0, |e: Estimate| e.resemblance);
    let content = if ta.is_empty() && tb.is_empty() {
        full
    } else {
        content_estimate(a, b, &union(ta, tb)).map_or(full, |e| e.resemblance)
    };
    Resemblances { full, content }
}

/// Rounds a float for output (3 decimals), so JSON is stable and readable.
pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Up to `n` distinct URLs of the index spread evenly over its capture keys (every k-th
/// key), for benchmarks and spot checks (of everything). Deterministic.
pub fn sample_urls(index: &Index, n: usize) -> Result<Vec<String>> {
    let total = index.captures().estimated_count()?.max(1);
    let step = (total as usize / n.max(1)).max(1);
    let mut out: Vec<String> = Vec::with_capacity(n);
    let mut i = 0usize;
    index
        .captures()
        .scan_all(&Reader::everything(), |(_, _, c)| {
            i += 1;
            if !(i - 1).is_multiple_of(step) {
                return Ok(true);
            }
            if out.last() != Some(&c.url) {
                out.push(c.url);
            }
            Ok(out.len() < n)
        })?;
    Ok(out)
}
