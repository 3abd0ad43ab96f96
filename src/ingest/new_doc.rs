//! Step (c) for a new doc: its id, facts and text; its sketch (stored against the older
//! doc it shares most values with), edges (from the estimates of the pair step,
//! [`super::pairs`]), unions and postings — with its record, or on content once its
//! sweep's templates are learned.

use super::{forest, unionfind, Capture, Counters, Prepared, Result, Stage, Writer};
use crate::index::codec::{DocInfo, EdgeInfo};
use crate::index::columns::docs::Docs;
use crate::index::columns::edges::Edges;
use crate::index::columns::sketches::Sketches;
use crate::index::columns::texts::Texts;
use crate::index::columns::unpaired::{Unpaired, Waiting};
use crate::index::columns::{Batch, Column};
use crate::index::postings::MAX_DOCS;
use crate::index::IndexError;

impl Writer<'_> {
    /// New doc `d` (the next id, as sequencing numbered it): its facts and text; then,
    /// unless it waits for its sweep's templates ([`Stage::Waiting`]: its sketch stored
    /// in full, no template, and an `unpaired` entry), its pairs ([`Writer::doc_pairs`]).
    pub(super) fn new_doc(
        &mut self,
        batch: &mut Batch,
        cap: &Capture,
        ts: &str,
        d: u64,
        prepared: Option<Prepared>,
    ) -> Result<()> {
        let counters = self.index.counters();
        if d >= MAX_DOCS {
            return Err(IndexError::Invalid(format!(
                "the index holds {MAX_DOCS} docs, the most its postings can name; ingest into a new --db"
            )));
        }
        let sketches = self.committing.planned.sketches.clone();
        let found = sketches.filter(|_| d == counters.next_doc);
        let Some((sketches, k)) = found.and_then(|s| s.get(d).map(|k| (s, k))) else {
            return Err(IndexError::Invalid(format!(
                "doc {d} was not sequenced in this batch (next id {})",
                counters.next_doc
            )));
        };
        // Stored with the pending batch ([`Writer::write_pending`]).
        self.index.set_counters(Counters {
            next_doc: d + 1,
            ..counters
        });
        let stored = &sketches.stored[k];
        let info = DocInfo {
            shingles: stored.shingles,
            tokens: cap.tokens,
            bytes: cap.payload_len,
            created: ts.to_string(),
            title: cap.title.clone(),
        };
        batch.put::<Docs>(self.index, &d, &info);
        if let Some(text) = prepared.and_then(|p| p.text) {
            batch.put_raw::<Texts>(self.index, &Texts::key(&d), &text);
        }
        self.sweep.counts.new_docs += 1;
        match self.stage {
            Stage::Waiting => {
                // Encoded by the pair step's threads; a new key (written as a file).
                let key = Sketches::key(&d);
                match sketches.encoded.get(k) {
                    Some(value) => batch.put_new_raw::<Sketches>(self.index, &key, value),
                    None => {
                        let value = Sketches::value(stored);
                        batch.put_new_raw::<Sketches>(self.index, &key, &value)
                    }
                }
                let waiting = Waiting {
                    sweep: self.sweep_id,
                    url: cap.url.clone().unwrap_or_default(),
                };
                batch.put::<Unpaired>(self.index, &d, &waiting);
                self.committing.kept.keep(d, stored, &waiting.url);
                Ok(())
            }
            Stage::WithRecord | Stage::Pairing => self.doc_pairs(batch, d, false),
        }
    }

    /// Edges on content, once the sweep's templates are learned: the pairs of doc `d`,
    /// committed while its sweep was read, and no longer waiting.
    pub(super) fn waiting_doc(&mut self, d: u64) -> Result<()> {
        self.clock = std::time::Instant::now();
        let mut batch = std::mem::take(&mut self.writing.pending.batch);
        let done = self.doc_pairs(&mut batch, d, true);
        batch.delete::<Unpaired>(self.index, &d);
        self.writing.pending.batch = batch;
        done
    }

    /// New doc `d`'s sketch (as the pair step encoded it) and its edges, unions and
    /// postings, from the estimates of the pair step ([`super::pairs`]), in doc order.
    /// A `waiting` doc's sketch is stored already as it stays when it has no base and no
    /// template (stored in full by the first stage): not written again.
    fn doc_pairs(&mut self, batch: &mut Batch, d: u64, waiting: bool) -> Result<()> {
        use super::lap;
        let (sketches, k, mut pairs) = self.committing.planned.take(d, self.next_pair)?;
        self.next_pair = d + 1;
        let (stored, mut compact) = (&sketches.stored[k], sketches.compact[k].clone());
        let as_stored = waiting && !pairs.against && stored.template == 0;
        let put = |batch: &mut Batch, value: Option<Vec<u8>>| match value {
            _ if as_stored => {}
            Some(v) => batch.put_raw::<Sketches>(self.index, &Sketches::key(&d), &v),
            None => batch.put::<Sketches>(self.index, &d, stored),
        };
        if stored.low.is_empty() && stored.posting.is_empty() {
            put(batch, pairs.value.take());
            return Ok(());
        }
        lap(&mut self.clock, &mut self.summary.writer.captures_s);
        let p = self.index.params().clone();
        let threshold = self.index.counters().threshold;
        let times = &mut self.summary.writer;
        times.candidates += pairs.examined;
        times.sketches_read += pairs.compared;
        times.settled_coarse += pairs.compared - pairs.estimates.len() as u64;
        // Its sketch as stored, in full or against the base the pair step chose
        // ([`super::bases`]).
        put(batch, pairs.value.take());
        compact.against = pairs.against;
        // Later docs of its host are compared with it first (kept when the batch ends).
        self.lookups.made.push((d, compact));
        // The doc's edges to older docs, in doc order: one value.
        let floor = p.edge_floor;
        let mut edges = Vec::new();
        let mut targets = Vec::new();
        for (b, e) in (pairs.estimates.iter()).filter_map(|e| Some((&e.doc, e.edge?))) {
            let (r, c_b_in_d, c_d_in_b) =
                (e.resemblance, e.containment_a_in_b, e.containment_b_in_a);
            if r >= floor || c_b_in_d >= floor || c_d_in_b >= floor {
                let edge = EdgeInfo {
                    resemblance: r as f32,
                    contain_lo_in_hi: c_b_in_d as f32,
                    contain_hi_in_lo: c_d_in_b as f32,
                };
                edges.push((*b, edge));
                if r >= threshold {
                    targets.push((*b, edge.resemblance));
                }
            }
        }
        self.sweep.counts.edges += edges.len() as u64;
        let kept = self.committing.forest.keep(self.index, d, &edges, floor)?;
        if !kept.is_empty() {
            self.summary.writer.edges_stored += kept.len() as u64;
            batch.put::<Edges>(self.index, &d, &kept);
        }
        // An edge the forest dropped joins what heavier kept and stored edges join
        // already: its doc's cluster is a kept target's, no need to find it (an edited
        // page resembles each of its earlier versions; this was a find each).
        targets.retain(|(b, w)| {
            kept.binary_search_by_key(b, |(k, _)| *k).is_ok() || !forest::joined_at(*w, threshold)
        });
        let targets: Vec<u64> = targets.into_iter().map(|(b, _)| b).collect();
        self.summary.writer.clusters_found += targets.len() as u64;
        let unions = unionfind::join(self.index, &mut self.writing.staged, batch, d, &targets)?;
        self.sweep.counts.unions += unions;
        // Values whose lists are over the cap take no more entries (lookups would stop
        // before them anyway): same index, less to store. Added to the postings buffer
        // when the batch ends.
        let values = stored
            .posting
            .iter()
            .zip(&pairs.over)
            .filter(|(_, o)| !**o)
            .map(|(v, _)| *v)
            .collect();
        self.lookups
            .adds
            .push((d, stored.posting_level, pairs.entry_count, values));
        lap(&mut self.clock, &mut self.summary.writer.edges_unions_s);
        Ok(())
    }
}
