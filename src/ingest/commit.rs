//! Step (c), the commit: the records of a batch put into one RocksDB batch with their
//! files' resume points, written when the batch of records ends — or earlier, when a
//! record reads what the batch holds and the index does not yet. Every write is a whole
//! prefix of the records with the resume points that say so, so a killed ingest resumes
//! exactly; and the compactions an ingest settles before it returns.

use std::collections::BTreeSet;

use super::sequence::Content;
use super::{Capture, FastSet, Index, Prepared, Record, Result, Writer};
use crate::index::columns::captures::Captures;
use crate::index::columns::files::Files;
use crate::index::columns::sweeps::Sweeps;
use crate::index::columns::{Batch, Column};
use crate::index::postings;
use crate::index::IndexError;
use crate::ingest::FileError;
use crate::url::surt;

/// What the records committed since the last write put: one batch, and what later
/// records must not read from the index before it is written. Writing per batch, not
/// per record, halved the committing thread's write time (rd100k first sweep: 6.1 →
/// 3.5 s); what is left is RocksDB's memtable inserts, now on a thread of their own
/// ([`super::write`]).
#[derive(Default)]
pub(super) struct Pending {
    pub batch: Batch,
    /// What it holds that the index does not.
    pub holds: Holds,
    /// Files whose resume point it advances.
    files: BTreeSet<usize>,
}

/// What a batch not written yet holds that records may read.
#[derive(Default)]
pub(super) struct Holds {
    /// URLs (SURT keys) whose captures or latest capture it puts.
    urls: FastSet<String>,
    /// Payload digests it stores.
    pub payloads: FastSet<String>,
    /// Docs from this id on are in it (or in a later batch), not in the index.
    pub first_doc: u64,
}

impl Pending {
    /// Empty, for docs numbered from `first_doc` on.
    pub(super) fn new(first_doc: u64) -> Self {
        Pending {
            holds: Holds {
                first_doc,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

impl Holds {
    /// Notes that it puts `surt`'s captures.
    pub(super) fn url(&mut self, surt: &str) {
        if !self.urls.contains(surt) {
            self.urls.insert(surt.to_string());
        }
    }

    /// Whether it puts captures of `surt`.
    pub(super) fn has_url(&self, surt: &str) -> bool {
        self.urls.contains(surt)
    }

    /// Whether a record would read what this holds: its URL's earlier captures (with
    /// content: [`Writer::previous_and_remember`]), a doc of it by payload (its sketch),
    /// or for a revisit the digest or the capture it refers to.
    fn read_by(&self, key_surt: Option<&str>, cap: &Capture, content: Content) -> bool {
        let url = |k: &str| self.urls.contains(k);
        match content {
            Content::Nothing => false,
            Content::Payload(d) => d >= self.first_doc || key_surt.is_some_and(url),
            Content::Text { .. } => key_surt.is_some_and(url),
            Content::Revisit => {
                key_surt.is_some_and(url)
                    || cap
                        .payload_digest
                        .as_ref()
                        .is_some_and(|d| self.payloads.contains(d))
                    || matches!(&cap.refers_to, Some((Some(u), _)) if url(&surt(u)))
            }
        }
    }
}

/// Compactions at the end of an ingest: none is cut off at close and redone by the next
/// ingest (measured: ~0.7 s of CPU thrown away per later 100k-page sweep). Merges that
/// started during this ingest are waited for (with `ingest.threads` subcompactions, as
/// nothing else runs then).
///
/// Postings: the newest runs merged size-tiered ([`postings::settle`]), beside the
/// wait (key ranges merged on `threads` threads, over files of their own).
pub(super) fn settle_compactions(index: &Index, threads: usize) -> Result<()> {
    let (merged, waited) = std::thread::scope(|s| {
        let merge = s.spawn(|| postings::settle(index, threads));
        (merge.join(), index.wait_for_compactions())
    });
    merged.map_err(|_| IndexError::Invalid("the postings merge panicked".into()))??;
    waited?;
    Ok(())
}

/// The families the end of an ingest writes after its memtable flush (the templates and
/// the content resemblance of changed pages: [`super::templates::finish`]).
pub(super) const TEMPLATE_WRITES: [&str; 4] = [
    <crate::index::columns::templates::Templates as Column>::NAME,
    <crate::index::columns::template_values::TemplateValues as Column>::NAME,
    <crate::index::columns::sweep_pages::SweepPages as Column>::NAME,
    <Captures as Column>::NAME,
];

/// What the commit of the records keeps from one record to the next.
pub(super) struct Committing {
    /// The batch being committed: its new docs as the pair step left them.
    pub(super) planned: super::batch::Planned,
    /// Stored edges of docs met lately: which new edges the forest needs.
    pub(super) forest: super::forest::Forest,
    /// The waiting docs from `next_pair` on as committed (sketch, URL), kept while they
    /// fit in the sketch cache's budget, which the first stage does not use: the second
    /// then takes them without reading and decoding them again.
    pub(super) kept: super::waiting::Kept,
    /// Hosts whose `host_sweeps` entry for this sweep was written in this run.
    pub(super) hosts_seen: std::collections::HashSet<String>,
    /// Each host's sample of pages in this sweep, and its changed pages.
    pub(super) pages: super::templates::Pages,
    /// The sweep's links as committed, for its anchor bags, when this run writes all of
    /// them (the sweep had none before it) and they fit in [`super::bags::GATHER_BUDGET`].
    pub(super) bag_gather: Option<super::bags::Gathering>,
    /// The newest sweep of the index when later than this one (files added to an
    /// earlier sweep): its links may be referred to, and are copied before replaced.
    pub(super) last_sweep: Option<u32>,
}

/// The writes: what the committed records put, the writing thread, what a write holds
/// until it is done, the union-find changes not written yet.
pub(super) struct Writing {
    /// What the records committed since the last write put.
    pub(super) pending: Pending,
    /// The writing thread, the writes handed to it, and what the last one holds until
    /// it is written.
    pub(super) writes: super::write::Writes,
    pub(super) sent: u64,
    pub(super) in_writing: Option<Holds>,
    /// The union-find changes of the batches not written yet.
    pub(super) staged: crate::index::unionfind::Staged,
    /// The URLs of the writes done since the pair step of the batch being committed
    /// began, by write number ([`super::known::Latest`]).
    pub(super) recent_urls: std::collections::VecDeque<(u64, FastSet<String>)>,
}

impl Writing {
    /// Hands `batch`, which holds `holds`, to the writing thread (docs under `next_pair`
    /// are whole once it is written).
    fn send(&mut self, batch: Batch, holds: Holds, next_pair: u64) -> Result<()> {
        self.writes.send(batch, next_pair)?;
        self.sent += 1;
        self.staged.write = self.sent + 1;
        self.in_writing = Some(holds);
        Ok(())
    }

    /// Whether a capture of `key_surt` is in a write not done yet, or in one done since
    /// the pair step of the batch being committed began.
    pub(super) fn may_have_written(&self, key_surt: &str) -> bool {
        self.pending.holds.has_url(key_surt)
            || (self.in_writing.as_ref()).is_some_and(|h| h.has_url(key_surt))
            || self.recent_urls.iter().any(|(_, u)| u.contains(key_surt))
    }

    /// Waits until every batch handed over is written (the time waited added to
    /// `waited`); their overlays then go, their URLs stay suspect for the prefetched
    /// latest captures read before them.
    pub(super) fn wait_written(&mut self, waited: &mut f64) -> Result<()> {
        if self.in_writing.is_none() {
            return Ok(());
        }
        let t = std::time::Instant::now();
        self.writes.written.wait(self.sent)?;
        self.staged.written(self.sent);
        if let Some(h) = self.in_writing.take() {
            self.recent_urls.push_back((self.sent, h.urls));
        }
        *waited += t.elapsed().as_secs_f64();
        Ok(())
    }
}

impl Writer<'_> {
    pub(super) fn index_params_sketch(&self) -> crate::sketch::SketchParams {
        let p = self.index.params();
        crate::sketch::SketchParams {
            shingle_width: p.shingle_width,
            seed: p.seed,
            sample_target: p.sample_target,
        }
    }

    pub(super) fn skip(&mut self, reason: &str) {
        *self
            .sweep
            .counts
            .skipped
            .entry(reason.to_string())
            .or_default() += 1;
    }

    /// A capture skipped as bad, listed with its file and offset (the first ones).
    pub(super) fn bad_record(&mut self, file: usize, offset: u64, message: String) {
        if self.summary.bad_records.len() < super::summary::MAX_BAD_RECORDS {
            self.summary.bad_records.push(FileError {
                file: self.files[file].0.clone(),
                offset,
                message,
            });
        }
    }

    /// Commits one record: its capture (if it is one) and the file's resume point, into
    /// the pending batch.
    pub(super) fn record(
        &mut self,
        file: usize,
        rec: &Record,
        cap: &Capture,
        prepared: Option<Prepared>,
        content: Content,
    ) -> Result<()> {
        // Only captures have a URL key (not requests, warcinfo, metadata as warc-fields).
        let key_surt = rec
            .is_capture()
            .then(|| cap.url.as_deref().map(surt))
            .flatten();
        // What it reads must be in the index: the batch handed over and written first.
        let pending = !self.writing.pending.batch.is_empty()
            && self
                .writing
                .pending
                .holds
                .read_by(key_surt.as_deref(), cap, content);
        let writing = (self.writing.in_writing.as_ref())
            .is_some_and(|h| h.read_by(key_surt.as_deref(), cap, content));
        if pending {
            self.write_pending()?;
        }
        if pending || writing {
            self.wait_written()?;
        }
        self.clock = std::time::Instant::now();
        self.sweep.counts.records += 1;
        let record_no = self.files[file].2.records;
        let mut batch = std::mem::take(&mut self.writing.pending.batch);
        let stored = self.capture(
            &mut batch, file, record_no, rec, cap, key_surt, prepared, content,
        );
        self.writing.pending.batch = batch;
        stored?;
        super::lap(&mut self.clock, &mut self.summary.writer.captures_s);
        self.files[file].2.records += 1;
        self.writing.pending.files.insert(file);
        Ok(())
    }

    /// Hands the pending batch, with the resume points of its files, the sweep's counts
    /// and the doc counter, to the writing thread: one atomic write, made after the one
    /// before it is done.
    pub(super) fn write_pending(&mut self) -> Result<()> {
        let counters = self.index.counters();
        let mut next = Pending::new(counters.next_doc);
        next.batch = Batch::sized_like(&self.writing.pending.batch);
        let p = std::mem::replace(&mut self.writing.pending, next);
        if p.batch.is_empty() && p.files.is_empty() {
            return Ok(());
        }
        // Not handed over: the docs it numbered are not written, and the pending batch
        // that took its place starts at them again (the counter goes back there).
        let first = p.holds.first_doc;
        if let Err(e) = self.hand_over(p, &counters) {
            self.writing.pending = Pending::new(first);
            return Err(e);
        }
        if self.committing.forest.full() {
            // Its lists are read from the index once it forgets them: all written.
            self.wait_written()?;
            self.committing.forest.trim();
        }
        Ok(())
    }

    /// Hands the batch `p` over with the resume points of its files, the sweep's counts
    /// and the `counters`, once the write before it is done.
    fn hand_over(&mut self, mut p: Pending, counters: &crate::index::Counters) -> Result<()> {
        self.wait_written()?;
        for &f in &p.files {
            let (_, id, st) = &self.files[f];
            p.batch.put::<Files>(self.index, id, st);
        }
        // Both values keep their size whatever the number of files and records.
        p.batch
            .put::<Sweeps>(self.index, &self.sweep_id, &self.sweep);
        if counters.next_doc != p.holds.first_doc {
            self.index.meta().put_counters(&mut p.batch, counters);
        }
        // Docs under `next_pair` are whole once it is written (with edges on content the
        // newer ones wait for their pairs).
        self.writing.send(p.batch, p.holds, self.next_pair)
    }

    /// Waits until every batch handed over is written; their overlays then go.
    pub(super) fn wait_written(&mut self) -> Result<()> {
        self.writing
            .wait_written(&mut self.summary.writer.write_wait_s)
    }

    /// Forgets the pending batch (a record failed: its puts may be partial); the index
    /// keeps the last write, and so does the doc counter.
    pub(super) fn drop_pending(&mut self) {
        let first = match self.wait_written() {
            Ok(()) => self.writing.pending.holds.first_doc,
            Err(_) => self
                .writing
                .in_writing
                .as_ref()
                .map_or(self.writing.pending.holds.first_doc, |h| h.first_doc),
        };
        self.writing.pending = Pending::new(first);
        let counters = self.index.counters();
        self.index.set_counters(crate::index::Counters {
            next_doc: first,
            ..counters
        });
    }

    pub(super) fn file_end(&mut self, file: usize, error: Option<(u64, String)>) {
        let (name, _, st) = &mut self.files[file];
        st.complete = true;
        st.error = error.clone();
        if let Some((offset, message)) = error {
            self.summary.errors.push(FileError {
                file: name.clone(),
                offset,
                message,
            });
        }
        self.writing.pending.files.insert(file);
    }
}
