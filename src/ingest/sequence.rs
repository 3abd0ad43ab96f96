//! Step (a) of a batch, sequencing: what each record's content is, in input order,
//! before anything of the batch is written — a doc known by its payload digest or its
//! canonical text, a new doc with the id it will get, a revisit to resolve, or nothing —
//! with the records sequenced but not yet committed (this batch's earlier ones, and the
//! batch before, committed while this one is paired) seen through an overlay of the
//! digests and texts they add. A lookup or two per record, on the committing thread; the commit
//! then follows these decisions, and the pair step works on the new docs.

use super::{Capture, FastMap, Index, Record, Result};
use crate::read::RecordKind;

/// A record's content, as the commit stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// No content to look at: not a capture, no URL or date, not 2xx, or no payload
    /// digest, text or revisit to find one by.
    Nothing,
    /// The exact bytes of an older doc (same payload digest).
    Payload(u64),
    /// A canonical text: of an older doc, or new (the id it gets).
    Text {
        /// Its fingerprint.
        fp: u128,
        /// Its doc.
        doc: u64,
        /// Whether the doc is created by this record.
        new: bool,
    },
    /// A revisit record whose digest was not looked up here: resolved at commit,
    /// against what the batch's earlier records have written by then.
    Revisit,
}

/// Whether `capture` stores the record as a capture (a capture kind, with a URL and a
/// date); the others are counted as skipped and have no content.
pub fn stored_as_capture(rec: &Record, cap: &Capture) -> bool {
    rec.is_capture() && cap.url.is_some() && cap.timestamp.is_some()
}

/// The sequencing of batches: the next doc id, the digests and texts of the last two
/// batches sequenced.
pub(super) struct Sequencing {
    /// The next batch's first doc id (the batch waiting for its commit has its ids).
    pub(super) next_doc: u64,
    /// The payload digests and texts of the last two batches sequenced.
    pub(super) overlay: Overlay,
}

/// What the records sequenced but not yet written add: payload digests and canonical
/// texts, of this batch, of the one before (committed while this one is paired) and of
/// the one before that (it may still be in the writing).
#[derive(Default)]
pub struct Overlay {
    newer: Added,
    older: Added,
    oldest: Added,
}

#[derive(Default)]
struct Added {
    payloads: FastMap<String, u64>,
    texts: FastMap<u128, u64>,
}

impl Overlay {
    /// For the next batch: each batch's additions move one step older; the oldest are
    /// in the index by the time the next batch is sequenced (a batch is handed to the
    /// writing thread when the one before it is written, at its commit's end).
    pub fn next_batch(self) -> Overlay {
        Overlay {
            newer: Added::default(),
            older: self.newer,
            oldest: self.older,
        }
    }

    fn payload(&self, digest: &str) -> Option<u64> {
        let g = |a: &Added| a.payloads.get(digest).copied();
        g(&self.newer)
            .or_else(|| g(&self.older))
            .or_else(|| g(&self.oldest))
    }

    fn text(&self, fp: u128) -> Option<u64> {
        let g = |a: &Added| a.texts.get(&fp).copied();
        g(&self.newer)
            .or_else(|| g(&self.older))
            .or_else(|| g(&self.oldest))
    }
}

impl Sequencing {
    /// The content of one record (`has_sketch`: a sketch came with it, made by a worker
    /// or read from a shard), a new doc numbered from `next_doc`, which it advances; what
    /// it adds kept in the overlay. A failed lookup changes nothing.
    pub(super) fn content(
        &mut self,
        index: &Index,
        rec: &Record,
        cap: &Capture,
        has_sketch: bool,
    ) -> Result<Content> {
        let (overlay, next_doc) = (&mut self.overlay, &mut self.next_doc);
        if !stored_as_capture(rec, cap) || cap.status.is_some_and(|s| !(200..300).contains(&s)) {
            return Ok(Content::Nothing);
        }
        // The digest decides here: identical bytes are one doc whatever the thread
        // count, and whether the record came from a WARC file or a shard. Whether a
        // worker found the digest depends on timing, but what it found is the answer
        // (digests are never removed nor remapped), so only a miss is looked up again
        // on this thread (0.3 s of a steady sweep's 2.3 serial seconds on rd100k).
        let by_payload = match &cap.payload_digest {
            Some(dig) if rec.kind != RecordKind::Revisit && !cap.truncated => {
                match cap.payload_doc.or_else(|| overlay.payload(dig)) {
                    Some(d) => Some(d),
                    None => index.payloads().get(dig)?,
                }
            }
            _ => None,
        };
        if let Some(d) = by_payload {
            return Ok(Content::Payload(d));
        }
        if let (Some(fp), true) = (cap.text_fingerprint, has_sketch) {
            let known = match overlay.text(fp) {
                Some(d) => Some(d),
                None => index.fingerprints().get(&fp)?,
            };
            let (doc, new) = match known {
                Some(d) => (d, false),
                None => {
                    let d = *next_doc;
                    *next_doc += 1;
                    overlay.newer.texts.insert(fp, d);
                    (d, true)
                }
            };
            // The commit stores the digest under this doc (a later record with these
            // bytes is this doc), whether or not it was looked up above.
            if let Some(dig) = &cap.payload_digest {
                overlay.newer.payloads.insert(dig.clone(), doc);
            }
            return Ok(Content::Text { fp, doc, new });
        }
        if rec.kind == RecordKind::Revisit {
            return Ok(Content::Revisit);
        }
        Ok(Content::Nothing)
    }
}
