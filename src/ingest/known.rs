//! One capture: its URL's key, its content — known by fingerprint or payload digest, a
//! revisit of a known capture, or new (`new_doc`) — and its resemblance to the URL's
//! previous capture.

use super::sequence::Content;

use super::{Capture, DocSketch, FastMap, Index, Prepared, Record, Result, Writer};
use crate::compact::{compare, CompactSketch};
use crate::index::codec::CaptureInfo;
use crate::index::columns::captures::{self, CaptureKey, Captures};
use crate::index::columns::doc_captures::DocCaptures;
use crate::index::columns::fingerprints::Fingerprints;
use crate::index::columns::host_sweeps::{First, HostSweeps};
use crate::index::columns::links::Links;
use crate::index::columns::payloads::Payloads;
use crate::index::columns::url_last::{self, Last, UrlLast};
use crate::index::columns::{Batch, Column};
use crate::index::sketch_cache::SketchCache;
use crate::url::{host_of_surt, resolve, surt};

/// The doc and sweep of a URL's previous capture with content, when its doc is another.
type Previous = Option<(u64, u32)>;

impl Writer<'_> {
    /// Stores one capture (`content`: what sequencing found it to be).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn capture(
        &mut self,
        batch: &mut Batch,
        file: usize,
        record_no: u64,
        rec: &Record,
        cap: &Capture,
        key_surt: Option<String>,
        mut prepared: Option<Prepared>,
        content: Content,
    ) -> Result<()> {
        // From a shard the sketch comes in stored form; from a WARC file as sampled.
        let stored = prepared.as_mut().and_then(|p| p.stored.take());
        let sketch = DocSketch::of(stored.as_ref(), cap.sketch.as_ref());
        if !rec.is_capture() {
            self.skip(rec.kind.as_str());
            return Ok(());
        }
        let (Some(url), Some(key_surt)) = (cap.url.clone(), key_surt) else {
            self.skip("no URL");
            return Ok(());
        };
        let Some(ts) = cap.timestamp.clone() else {
            self.skip("no date");
            // The date's own warning (a shard keeps the reader's warnings before it).
            let why = (cap.warnings.iter().rev())
                .find(|w| w.ends_with(crate::capture::NO_DATE))
                .cloned();
            self.bad_record(file, rec.offset, why.unwrap_or_default());
            return Ok(());
        };
        if self.sweep.date.is_empty() {
            self.sweep.date = ts.clone();
        }
        let file_no = self.files[file].2.file_no;
        let record = record_no.min(u32::MAX as u64) as u32;
        let host = host_of_surt(&key_surt);
        if !self.committing.hosts_seen.contains(host) {
            // The host's first capture in the sweep: a resumed run keeps an earlier run's.
            let hk = (host.to_string(), self.sweep_id);
            if self.index.host_sweeps().get(&hk)?.is_none() {
                let first = First {
                    file: file_no,
                    record,
                    timestamp: ts.clone(),
                    surt: key_surt.clone(),
                };
                batch.put::<HostSweeps>(self.index, &hk, &Some(first));
            }
            self.committing.hosts_seen.insert(host.to_string());
        }
        let status = cap.status;
        // The content, as sequencing found it (`sequence`): known by its payload digest
        // or its canonical text, new, or a revisit to resolve now.
        let mut doc: Option<u64> = None;
        let mut current = sketch;
        match content {
            Content::Nothing => {}
            Content::Payload(d) => {
                doc = Some(d);
                // Compared by the doc's own sketch, as when the payload was not read.
                current = None;
                self.sweep.counts.known_docs += 1;
            }
            Content::Text { fp, doc: d, new } => {
                if new {
                    self.new_doc(batch, cap, &ts, d, prepared)?;
                    batch.put::<Fingerprints>(self.index, &fp, &d);
                } else {
                    self.sweep.counts.known_docs += 1;
                }
                doc = Some(d);
                if let Some(dig) = &cap.payload_digest {
                    batch.put::<Payloads>(self.index, dig, &d);
                    self.writing.pending.holds.payloads.insert(dig.clone());
                }
            }
            Content::Revisit => {
                doc = self.resolve_revisit(cap)?;
                match doc {
                    Some(_) => {
                        self.sweep.counts.known_docs += 1;
                    }
                    None => self.skip("revisit of unknown content (stored without doc)"),
                }
            }
        }
        let (r_prev, previous) = match doc {
            Some(d) => self.previous_and_remember(batch, &key_surt, &ts, d, current)?,
            None => (None, None),
        };
        let info = CaptureInfo {
            url: url.clone(),
            sweep: self.sweep_id,
            kind: rec.kind.clone(),
            doc,
            status,
            mime: cap.mime.clone(),
            digest: cap.payload_digest.clone(),
            redirect: cap.redirect.as_ref().map(|l| resolve(&url, l)),
            // CDX convention: the file's name, resolved against an archive directory.
            file: std::path::Path::new(&self.files[file].0)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default(),
            offset: rec.offset,
            length: rec.length,
            r_prev,
            truncated: cap.truncated,
            // Same doc, same content; otherwise known once the sweep's templates are.
            cr_prev: r_prev.filter(|_| previous.is_none()),
        };
        let key = CaptureKey {
            surt: key_surt,
            timestamp: ts,
            sweep: self.sweep_id,
            file: file_no,
            record,
        };
        // The capture key once: `doc_captures` takes its tail.
        let ck = Captures::key(&key);
        batch.put_raw::<Captures>(self.index, &ck, &Captures::value(&info));
        self.writing.pending.holds.url(&key.surt);
        // What the page says of the pages it links (a page that answered).
        if status.is_none_or(|s| (200..300).contains(&s)) && !cap.links.is_empty() {
            use crate::index::columns::links::{key_of, origin_of, same_as};
            let lk = key_of(self.sweep_id, &key.surt);
            // Links an earlier sweep keeps (the page unchanged): a reference to them;
            // whole in a sweep later ones may refer to.
            let mut kept = cap.links_kept_in.filter(|s| *s < self.sweep_id);
            if let Some(last) = self.committing.last_sweep {
                let at = (self.sweep_id, last);
                let links = self.index.links();
                links.keep_for_later(batch, at, &key.surt, origin_of(&cap.links))?;
                kept = None;
            }
            match kept.zip(origin_of(&cap.links)) {
                Some((s, origin)) => batch.put_raw::<Links>(self.index, &lk, &same_as(s, origin)),
                None => batch.put_raw::<Links>(self.index, &lk, &cap.links),
            }
            if let Some(g) = &self.committing.bag_gather {
                g.add(&key.surt, &cap.links);
            }
        }
        if let Some(d) = doc {
            let host = host_of_surt(&key.surt);
            self.committing.pages.note(
                self.index,
                batch,
                self.sweep_id,
                host,
                &key.surt,
                &key.timestamp,
                d,
                previous,
                &ck,
                content == Content::Revisit,
            );
            let mut dk = Vec::with_capacity(8 + captures::TAIL);
            dk.extend_from_slice(&d.to_be_bytes());
            dk.extend_from_slice(&ck[ck.len() - captures::TAIL..]);
            batch.put_raw::<DocCaptures>(self.index, &dk, key.surt.as_bytes());
        }
        self.sweep.counts.captures += 1;
        Ok(())
    }

    pub(super) fn resolve_revisit(&self, cap: &Capture) -> Result<Option<u64>> {
        if let Some(dig) = &cap.payload_digest {
            if let Some(d) = self.index.payloads().get(dig)? {
                return Ok(Some(d));
            }
        }
        // By the capture it refers to.
        if let Some((Some(u), Some(date))) = &cap.refers_to {
            if let Some(ts) = crate::timestamp::Timestamp14::from_warc_date(date) {
                let mut prefix = captures::url_prefix(&surt(u));
                prefix.extend_from_slice(ts.as_str().as_bytes());
                let mut found = None;
                self.index.captures().scan_prefix_rows(
                    &crate::access::Reader::everything(),
                    &prefix,
                    |(_, _, c)| {
                        found = c.doc;
                        Ok(found.is_none())
                    },
                )?;
                if found.is_some() {
                    return Ok(found);
                }
            }
        }
        Ok(None)
    }

    /// Estimated resemblance to the latest earlier capture of the same URL with content,
    /// and that capture's doc and sweep when its doc is another; records this capture as
    /// the URL's latest. The common case (captures arrive in time order) is one point
    /// lookup in `url_last`; otherwise a reverse scan of `captures` finds the previous
    /// one.
    pub(super) fn previous_and_remember(
        &mut self,
        batch: &mut Batch,
        key_surt: &str,
        ts: &str,
        doc: u64,
        current: Option<DocSketch>,
    ) -> Result<(Option<f32>, Previous)> {
        // Raw keys and values here: this runs for every capture with content.
        let last = match self.prefetched_latest(key_surt) {
            Some(last) => last,
            None => self.index.url_last().get_raw(key_surt.as_bytes())?,
        };
        let previous = match &last {
            None => None,
            Some(l) if l.timestamp.as_str() < ts => Some((l.doc, l.sweep)),
            Some(_) => self.previous_capture(key_surt, ts)?,
        };
        let r = match previous {
            Some((p, _)) => self.resemblance(p, doc, current)?,
            None => None,
        };
        if last.as_ref().is_none_or(|l| l.timestamp.as_str() <= ts) {
            let mut now = [0u8; url_last::LEN];
            now[..14].copy_from_slice(&ts.as_bytes()[..14]);
            now[14..22].copy_from_slice(&doc.to_be_bytes());
            now[22..].copy_from_slice(&self.sweep_id.to_be_bytes());
            batch.put_raw::<UrlLast>(self.index, key_surt.as_bytes(), &now);
        }
        Ok((r, previous.filter(|(p, _)| *p != doc)))
    }

    /// `url_last` of `key_surt` as the pair step read it, unless a batch written since
    /// (or not yet) holds a capture of it.
    fn prefetched_latest(&self, key_surt: &str) -> Option<Option<Last>> {
        if self.writing.may_have_written(key_surt) {
            return None;
        }
        self.committing.planned.latest.by_url.get(key_surt).cloned()
    }

    pub(super) fn resemblance(
        &mut self,
        prev: u64,
        doc: u64,
        current: Option<DocSketch>,
    ) -> Result<Option<f32>> {
        if prev == doc {
            return Ok(Some(1.0));
        }
        // The current doc may be new in this very batch: use the sketch in hand (a new
        // doc's is kept already).
        let cur = match (self.kept_compact(doc), current) {
            (Some(c), _) => c.clone(),
            (None, Some(s)) => s.compact(),
            (None, None) => match self.index.sketch(doc)? {
                Some(s) => CompactSketch::of(&s),
                None => return Ok(None),
            },
        };
        // Compared as candidates are (equal to `estimate` of both sketches reduced),
        // the previous doc's sketch from the batch (a doc of it, or read for its pairs:
        // mostly the previous version of this page) or the writer's cache when it is
        // kept (read only: a pair step may be reading it), else read now.
        if let Some(p) = self.kept_compact(prev) {
            return Ok(compare(&cur, p, None).map(|e| e.resemblance as f32));
        }
        let e = self.index.sketches().estimates(&[prev], &cur, None, None)?;
        Ok(e.first().map(|(_, e)| e.resemblance as f32))
    }

    /// `doc`'s compact sketch if the writer has it: of the batch (its docs, the batch's
    /// before, or read for it) or in its cache.
    pub(super) fn kept_compact(&self, doc: u64) -> Option<&CompactSketch> {
        self.committing
            .planned
            .compact(doc)
            .or_else(|| self.lookups.sketch_cache.get(doc))
    }

    /// The doc and sweep of the latest capture with content before `ts` of a URL,
    /// among the 65 before it.
    fn previous_capture(&self, key_surt: &str, ts: &str) -> Result<Option<(u64, u32)>> {
        let prefix = captures::url_prefix(key_surt);
        let mut upper = prefix.clone();
        upper.extend_from_slice(ts.as_bytes());
        let (mut n, mut prev) = (0, None);
        self.index.captures().scan_range(
            &crate::access::Reader::everything(),
            &upper,
            &prefix,
            true,
            |_, (_, _, c)| {
                n += 1;
                prev = c.doc.map(|d| (d, c.sweep));
                Ok(prev.is_none() && n <= 64)
            },
        )?;
        Ok(prev)
    }
}

/// The latest capture (`url_last`) of each URL a batch captures, read in the pair step,
/// beside the commit of the batch before: one sorted batched lookup instead of a point
/// lookup per capture on the committing thread. A URL that a batch handed to the
/// writing thread since the pair step began (`from_write` on) also captures may have
/// changed since: the commit reads those again ([`Writer::prefetched_latest`]).
#[derive(Default)]
pub(super) struct Latest {
    by_url: FastMap<String, Option<Last>>,
    /// The first write that may not have been in the index when it was read.
    pub from_write: u64,
    /// While a sweep on content is read: the sketches its captures' resemblance to their
    /// previous captures compares, ascending (no pair step reads them then).
    pub compared: Vec<(u64, CompactSketch)>,
}

impl Latest {
    /// Reads the latest captures of `urls` (with each capture's doc, if known), with
    /// writes from `from_write` on suspect; with `compared_below`, the sketches of the
    /// docs under it that the commit compares (a capture's doc and its URL's latest one,
    /// where they differ), those the writer's `cache` does not keep.
    pub(super) fn read(
        index: &Index,
        urls: &[(String, Option<u64>)],
        from_write: u64,
        compared_below: Option<u64>,
        cache: &SketchCache,
    ) -> Result<Latest> {
        let surts: Vec<String> = urls.iter().map(|(u, _)| surt(u)).collect();
        let mut keys: Vec<&str> = surts.iter().map(String::as_str).collect();
        keys.sort_unstable();
        keys.dedup();
        let got = index.url_last().get_sorted_raw(&keys)?;
        let by_url: FastMap<String, Option<Last>> =
            keys.into_iter().map(str::to_string).zip(got).collect();
        let mut compared = Vec::new();
        if let Some(below) = compared_below {
            let mut docs: Vec<u64> = Vec::new();
            for (k, (_, doc)) in surts.iter().zip(urls) {
                let Some(Some(last)) = by_url.get(k) else {
                    continue;
                };
                if Some(last.doc) != *doc {
                    docs.extend(doc.iter().chain([&last.doc]).filter(|d| **d < below));
                }
            }
            docs.sort_unstable();
            docs.dedup();
            docs.retain(|d| cache.get(*d).is_none());
            compared = index.sketches().read_compact(&docs, Some(cache))?;
        }
        Ok(Latest {
            by_url,
            from_write,
            compared,
        })
    }
}
