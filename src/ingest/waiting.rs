//! Edges on content: the second stage of a sweep. Its records are committed while it is
//! read, its new docs waiting for their pairs (`unpaired`); then its templates are
//! learned from its committed pages and the waiting docs go through the pair step (b)
//! and the commit of their pairs (c) in doc order, a batch at a time, each batch's write
//! deleting its docs' `unpaired` entries. A run killed here resumes with the docs still
//! waiting, after learning the same templates from the same pages.

use std::sync::Arc;

use super::batch::{Item, Sequenced};
use super::pairs::{read_waiting_docs, BATCH_NEW_DOCS};
use super::sequence::Content;
use super::{templates, thread_cpu, Stage, Writer};
use crate::index::columns::sketches::StoredSketch;
use crate::index::{Index, IndexError, Result};

/// The waiting docs the first stage kept in memory, from the first one on.
pub(super) struct Kept {
    docs: std::collections::VecDeque<(u64, StoredSketch, String)>,
    /// The doc that would come next (docs are kept only as an unbroken run from the
    /// first waiting doc), and whether more may come.
    next: u64,
    open: bool,
    bytes: usize,
    budget: usize,
}

impl Kept {
    pub(super) fn new(first: u64, budget: usize) -> Kept {
        Kept {
            docs: Default::default(),
            next: first,
            open: true,
            bytes: 0,
            budget,
        }
    }

    /// Keeps waiting doc `d` if it continues the run and fits; else keeps no more.
    pub(super) fn keep(&mut self, d: u64, stored: &StoredSketch, url: &str) {
        let bytes = 96 + 4 * stored.low.len() + 8 * stored.posting.len() + url.len();
        if !self.open || d != self.next || self.bytes + bytes > self.budget {
            self.open = false;
            return;
        }
        self.docs.push_back((d, stored.clone(), url.to_string()));
        self.next = d + 1;
        self.bytes += bytes;
    }

    /// The doc after the kept run, if it begins at `from` (else `from`).
    fn end(&self, from: u64) -> u64 {
        match self.docs.front() {
            Some((d, _, _)) if *d == from => self.next,
            _ => from,
        }
    }

    /// Up to `n` kept docs from `from` on, if `from` is the first kept.
    fn take(&mut self, from: u64, n: usize) -> Vec<Item> {
        if self.docs.front().is_none_or(|(d, _, _)| *d != from) {
            return Vec::new();
        }
        let n = n.min(self.docs.len());
        let out: Vec<Item> = self
            .docs
            .drain(..n)
            .map(|(doc, stored, url)| Item::Waiting { doc, url, stored })
            .collect();
        out
    }
}

impl Writer<'_> {
    /// Learns the sweep's templates and commits the pairs of its waiting docs, calling
    /// `progress` with the docs paired so far and the docs waiting at the start.
    pub(super) fn pair_waiting(&mut self, mut progress: impl FnMut(u64, u64)) -> Result<()> {
        let clock = std::time::Instant::now();
        let r = self.learn_and_pair(&mut progress);
        self.summary.writer.pairing_s += clock.elapsed().as_secs_f64();
        r
    }

    fn learn_and_pair(&mut self, progress: &mut impl FnMut(u64, u64)) -> Result<()> {
        let (clock, cpu) = (std::time::Instant::now(), thread_cpu());
        // On content, the sweep's templates first (on all shingles the pairs need none:
        // the end of the ingest learns them, as when the sweep is paired as it is read).
        if self.index.params().resemblance == crate::config::Resemblance::Content {
            let (own, for_pairs) =
                templates::for_waiting(self.index, self.sweep_id, &self.template, self.threads)?;
            self.pair_step.for_pairs = Some(Arc::new(for_pairs));
            self.learned_early = Some(own);
        }
        self.summary.writer.templates_s += clock.elapsed().as_secs_f64();
        self.serial_cpu += thread_cpu() - cpu;
        self.stage = Stage::Pairing;
        // The batches committed so far paired nothing: none is an earlier batch of the
        // pair step's.
        self.pair_step.last_sketches = None;
        let (start, end) = (self.next_pair, self.index.counters().next_doc);
        let mut from = start;
        // For the tests of a run stopped here: the batches after which it stops (unset in
        // normal use).
        let stop_after: Option<usize> = std::env::var("TIDEMARK_TEST_STOP_PAIRING_AFTER")
            .ok()
            .and_then(|v| v.parse().ok());
        // The docs not kept in memory are read from the index ahead of the commit, on a
        // thread of their own: read on the committing thread they were an eighth of its
        // time (rd100k redesign sweep, pairs from a job's files: 1.1 of 9.1 CPU-s).
        let (index, threads) = (self.index, self.threads);
        let ahead_from = self.committing.kept.end(start);
        std::thread::scope(|s| {
            let (tx, rx) = crossbeam_channel::bounded::<Result<Vec<Item>>>(1);
            let (sweep_id, label) = (self.sweep_id, self.sweep.label.clone());
            s.spawn(move || {
                let mut at = ahead_from;
                while at < end {
                    let read = super::or_failed("waiting-docs reader", || {
                        waiting_items(index, at, end, threads, (sweep_id, &label))
                    });
                    let failed = read.is_err();
                    at += read.as_ref().map_or(0, |v| v.len() as u64);
                    if tx.send(read).is_err() || failed {
                        return;
                    }
                }
            });
            let mut batches = 0;
            while from < end {
                if stop_after == Some(batches) {
                    self.flush()?;
                    return Err(IndexError::Failed(format!(
                        "stopped after {batches} batches of pairs (TIDEMARK_TEST_STOP_PAIRING_AFTER)"
                    )));
                }
                batches += 1;
                let (clock, cpu) = (std::time::Instant::now(), thread_cpu());
                let mut batch = self.committing.kept.take(from, BATCH_NEW_DOCS);
                if batch.is_empty() {
                    batch = rx.recv().map_err(|_| {
                        IndexError::Invalid("the reader of the waiting docs stopped".into())
                    })??;
                }
                self.serial_cpu += thread_cpu() - cpu;
                self.summary.writer.sequence_s += clock.elapsed().as_secs_f64();
                let n = batch.len() as u64;
                self.pair_batch(Sequenced {
                    contents: vec![Content::Nothing; batch.len()],
                    items: batch,
                    failed: None,
                    first: from,
                })?;
                from += n;
                progress(from - start, end - start);
            }
            self.flush()?;
            match &self.lookups.posting_adds {
                Some(thread) => thread.end(end),
                None => Ok(()),
            }
        })
    }
}

/// The waiting docs from `from` on (below `end`), a batch of them, as items: each with
/// its URL and its sketch as the first stage stored it; all of sweep `sweep` (its id and
/// label).
fn waiting_items(
    index: &Index,
    from: u64,
    end: u64,
    threads: usize,
    sweep: (u32, &str),
) -> Result<Vec<Item>> {
    let docs = read_waiting_docs(index, from, end, threads)?;
    let mut items = Vec::with_capacity(docs.len());
    for (doc, id, stored, url) in docs {
        if id != sweep.0 {
            return Err(IndexError::Invalid(format!(
                "doc {doc} waits for its pairs in another sweep (id {id}) than {}",
                sweep.1
            )));
        }
        items.push(Item::Waiting { doc, url, stored });
    }
    Ok(items)
}
