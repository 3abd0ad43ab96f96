//! A batch of records through the three steps: sequencing (a), the pair step (b) on
//! other threads while the batch before is committed (c), and what the commit leaves
//! for the next batch.

use std::sync::Arc;

use super::sequence::Content;
use super::{bases, known, lap, pairs, pairs_job, thread_cpu, DocSketch, Prepared, Stage, Writer};
use crate::compact::CompactSketch;
use crate::index::columns::sketches::{Sketches, StoredSketch};
use crate::index::columns::Column;
use crate::index::{IndexError, Result};
use crate::scan::Scanned;
use pairs::DocPairs;

/// Records committed together (the pair step's batch): at most this many, or the
/// records up to [`pairs::BATCH_NEW_DOCS`] new docs. Larger batches read each stored list and
/// sketch once for more docs (rd20k redesign sweep: 9.2 → 8.6 CPU-s from 1,024/256 to
/// these).
pub(super) const BATCH_RECORDS: usize = 4096;
/// Records of an ingest's first batch (the next ones double up to [`BATCH_RECORDS`]).
pub(super) const FIRST_BATCH: usize = 128;

/// What a batch holds, in input order: records, and the ends of files (a record is the
/// common case: not boxed).
#[allow(clippy::large_enum_variant)]
pub(super) enum Item {
    Record(usize, Scanned<Prepared>),
    /// A file read to its end or its first damage: `(file, bytes, damage)`.
    End(usize, u64, Option<(u64, String)>),
    /// Edges on content: a new doc committed while its sweep was read, waiting for its
    /// pairs (`unpaired`), with the URL that created it and its sketch as stored then.
    Waiting {
        doc: u64,
        url: String,
        stored: StoredSketch,
    },
}

/// The pair step between batches: what it takes from elsewhere (templates, a pairs job's
/// files), its buffers, the batch sequenced and paired waiting for its commit.
pub(super) struct PairStep {
    /// With edges on content: the templates new docs are compared without.
    pub(super) for_pairs: Option<Arc<super::templates::ForPairs>>,
    /// With `--pairs`: the pairs job's files, read a batch at a time by the pair step.
    pub(super) pair_files: Option<Arc<std::sync::Mutex<pairs_job::PairsFiles>>>,
    /// With `--pairs`: which of the sweep's docs the commit stored against a base.
    pub(super) against_bits: Option<Arc<bases::AgainstBits>>,
    /// The pair step's vectors, kept from one batch to the next.
    pub(super) pair_buffers: pairs::Buffers,
    /// Key ranges of the pair step.
    pub(super) partitions: usize,
    /// The batch sequenced and paired, waiting for its commit.
    pub(super) flight: Option<Flight>,
    /// The last committed batch's sketches: the batch after it was paired with them.
    pub(super) last_sketches: Option<Arc<BatchSketches>>,
}

/// What the pair step looks up besides the index — the postings of docs not stored yet,
/// the sketches compared lately — and what the batch being committed adds to them at
/// its end ([`Writer::settle`]): changed only between a commit and the next pair step.
pub(super) struct Lookups {
    /// Postings of docs not stored yet (read by a pair step while a batch is committed:
    /// changed only between, by [`Writer::settle`]).
    pub(super) fresh: Arc<crate::index::postings::Fresh>,
    /// Spill the fresh postings when they hold more than this many bytes.
    pub(super) fresh_budget: usize,
    /// With `--pairs`, while the waiting docs are paired: the thread that holds `fresh`
    /// and adds the committed docs' postings to it.
    pub(super) posting_adds: Option<super::posting_adds::PostingAdds>,
    /// Sketches compared lately (candidates come back); like `fresh`, changed only
    /// between a commit and the next pair step.
    pub(super) sketch_cache: Arc<crate::index::sketch_cache::SketchCache>,
    /// What the batch being committed adds to the postings buffer (doc, level, count,
    /// values) and to the sketch cache, at its end.
    pub(super) adds: Vec<(u64, u8, usize, Vec<u64>)>,
    pub(super) made: Vec<(u64, CompactSketch)>,
}

impl Lookups {
    /// Takes in what the committed batch `planned` leaves: its new docs' posting
    /// entries into the buffer (on `threads`), the sketches it compared or made kept.
    fn settle(&mut self, planned: Planned, threads: usize) -> Result<()> {
        let shared = || IndexError::Invalid("a pair step still holds the writer's state".into());
        match &self.posting_adds {
            Some(thread) => thread.add(std::mem::take(&mut self.adds))?,
            None => {
                let fresh = Arc::get_mut(&mut self.fresh).ok_or_else(shared)?;
                fresh.add_batch(&self.adds, threads);
                self.adds.clear();
            }
        }
        let cache = Arc::get_mut(&mut self.sketch_cache).ok_or_else(shared)?;
        for d in &planned.hits {
            cache.touch(*d);
        }
        cache.misses += planned.read.len() as u64;
        for (d, c) in planned.read {
            cache.insert(d, c);
        }
        for (d, c) in self.made.drain(..) {
            cache.insert(d, c);
        }
        Ok(())
    }
}

/// The sketches of a batch's new docs (numbered from `first`), as stored in full and
/// compact: read by the commit of the batch and by the pair step of the next one.
pub(super) struct BatchSketches {
    pub(super) first: u64,
    pub(super) stored: Vec<StoredSketch>,
    pub(super) compact: Vec<CompactSketch>,
    /// While a sweep on content is read: the stored sketches encoded (on every core),
    /// as the commit writes them (else empty).
    pub(super) encoded: Vec<Vec<u8>>,
}

impl BatchSketches {
    pub(super) fn get(&self, doc: u64) -> Option<usize> {
        let k = doc.checked_sub(self.first)? as usize;
        (k < self.compact.len()).then_some(k)
    }
}

/// A batch sequenced and paired, waiting for its commit.
pub(super) struct Flight {
    pub(super) items: Vec<Item>,
    pub(super) contents: Vec<Content>,
    pub(super) planned: Planned,
    /// A sequencing error at the record after the last one kept: returned once the
    /// records before it are committed.
    pub(super) failed: Option<IndexError>,
}

/// A batch sequenced (a), before its pair step.
pub(super) struct Sequenced {
    pub(super) items: Vec<Item>,
    pub(super) contents: Vec<Content>,
    /// A sequencing error at the record after the last one kept.
    pub(super) failed: Option<IndexError>,
    /// The id of its first new doc.
    pub(super) first: u64,
}

/// A batch's new docs between the pair step and their commit.
#[derive(Default)]
pub(super) struct Planned {
    /// The batch's new docs' sketches, and those of the batch before it (the pair step
    /// compared with them before they were stored).
    pub(super) sketches: Option<Arc<BatchSketches>>,
    pub(super) before: Option<Arc<BatchSketches>>,
    /// Per new doc: its pairs (until the commit takes them), with its sketch's stored
    /// value.
    pub(super) pairs: Vec<Option<DocPairs>>,
    /// Which of its docs are stored against a base: the next batch's pair step decides
    /// its own from these.
    pub(super) decided: Option<Arc<bases::Decided>>,
    /// Sketches read for the batch, ascending, and those the cache held.
    pub(super) read: Vec<(u64, CompactSketch)>,
    pub(super) hits: Vec<u64>,
    /// The latest captures of the batch's URLs, as the pair step read them.
    pub(super) latest: known::Latest,
}

impl Planned {
    /// New doc `d`'s sketches and its pairs, once; `next` is the id the index would
    /// give now.
    pub(super) fn take(
        &mut self,
        d: u64,
        next: u64,
    ) -> Result<(Arc<BatchSketches>, usize, DocPairs)> {
        let found = self.sketches.clone().and_then(|s| {
            let k = s.get(d)?;
            Some((s, k))
        });
        match found {
            Some((s, k)) if d == next => match self.pairs[k].take() {
                Some(p) => Ok((s, k, p)),
                None => Err(IndexError::Invalid(format!(
                    "doc {d} created twice in one batch"
                ))),
            },
            _ => Err(IndexError::Invalid(format!(
                "doc {d} was not sequenced in this batch (next id {next})"
            ))),
        }
    }

    /// A compact sketch the batch has: of its docs or the batch's before, or read for it.
    pub(super) fn compact(&self, doc: u64) -> Option<&CompactSketch> {
        for s in self.sketches.iter().chain(self.before.iter()) {
            if let Some(k) = s.get(doc) {
                return Some(&s.compact[k]);
            }
        }
        let k = self.read.binary_search_by_key(&doc, |(d, _)| *d).ok()?;
        Some(&self.read[k].1)
    }
}

impl Writer<'_> {
    /// Takes a full batch: (a) sequences it, then (b) finds its pairs on the worker
    /// threads while (c) the batch before it is committed on this one
    /// ([`Writer::pair_batch`]).
    pub(super) fn push_batch(&mut self, items: Vec<Item>) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let sequenced = self.sequence_batch(items);
        self.pair_batch(sequenced)
    }

    /// (a) Each record's content; new docs numbered after those of the batch before.
    fn sequence_batch(&mut self, items: Vec<Item>) -> Sequenced {
        crate::scan::test_panic("sequence", 1);
        self.clock = std::time::Instant::now();
        let cpu = thread_cpu();
        self.summary.writer.batches += 1;
        let first = self.sequencing.next_doc;
        let mut contents = Vec::with_capacity(items.len());
        let mut failed = None;
        let mut items = items;
        for (k, item) in items.iter().enumerate() {
            let Item::Record(_, sc) = item else {
                contents.push(Content::Nothing);
                continue;
            };
            let has_sketch = sc.capture.sketch.is_some()
                || sc.prepared.as_ref().is_some_and(|p| p.stored.is_some());
            let content =
                (self.sequencing).content(self.index, &sc.record, &sc.capture, has_sketch);
            match content {
                Ok(c) => contents.push(c),
                Err(e) => {
                    failed = Some(e);
                    items.truncate(k);
                    break;
                }
            }
        }
        // What the batch before added is in the index once it is committed: the overlay
        // keeps the last two batches'.
        self.sequencing.overlay = std::mem::take(&mut self.sequencing.overlay).next_batch();
        self.serial_cpu += thread_cpu() - cpu;
        lap(&mut self.clock, &mut self.summary.writer.sequence_s);
        Sequenced {
            items,
            contents,
            failed,
            first,
        }
    }

    /// (b) ∥ (c): the pair step of a sequenced batch, beside the commit of the batch
    /// before it; the batch then waits for its commit until the next one comes or the
    /// input ends ([`Writer::flush`]).
    pub(super) fn pair_batch(&mut self, sequenced: Sequenced) -> Result<()> {
        let Sequenced {
            items,
            contents,
            failed,
            first,
        } = sequenced;
        self.clock = std::time::Instant::now();
        // The new docs: records' (in the pair step's stage, and while a sweep on content
        // is read) or waiting ones.
        let news: Vec<(Option<DocSketch>, Option<&str>)> = items
            .iter()
            .zip(&contents)
            .filter_map(|(item, c)| match (item, c) {
                (Item::Record(_, sc), Content::Text { new: true, .. }) => {
                    let stored = sc.prepared.as_ref().and_then(|p| p.stored.as_ref());
                    let sketch = DocSketch::of(stored, sc.capture.sketch.as_ref());
                    Some((sketch, sc.capture.url.as_deref()))
                }
                (Item::Waiting { url, stored, .. }, _) => {
                    Some((Some(DocSketch::Stored(stored)), Some(url.as_str())))
                }
                _ => None,
            })
            .collect();
        // The new docs' sketches as stored, on every core.
        let target = self.index.params().posting_target;
        // On content: compared, now and later, without their host's template (while the
        // sweep is read they are stored without one, and wait: [`Stage::Waiting`]).
        let for_pairs = match self.stage {
            Stage::Waiting => None,
            Stage::WithRecord | Stage::Pairing => self.pair_step.for_pairs.as_deref(),
        };
        let waiting = self.stage == Stage::Waiting;
        // Only waiting docs (the second stage): stored in full by the first.
        let stored_in_full = items.iter().all(|i| !matches!(i, Item::Record(..)));
        let made = pairs::parallel(self.threads, &news, |(sketch, url)| {
            let sketch =
                sketch.ok_or_else(|| IndexError::Invalid("a new doc without a sketch".into()))?;
            let mut stored = sketch.stored(target);
            if let Some(t) = for_pairs {
                stored.template = t.of_url(*url);
            }
            let compact = stored.compact();
            let encoded = match waiting {
                true => Sketches::value(&stored),
                false => Vec::new(),
            };
            Ok((stored, (compact, encoded)))
        })?;
        drop(news);
        let (stored, rest): (Vec<StoredSketch>, Vec<(CompactSketch, Vec<u8>)>) =
            made.into_iter().unzip();
        let (compact, encoded) = rest.into_iter().unzip();
        let sketches = Arc::new(BatchSketches {
            first,
            stored,
            compact,
            encoded,
        });
        self.clock = std::time::Instant::now();
        // The postings buffer is spilled when both batches might not fit in it: never
        // while a batch is paired, whose pairs are found under one mark. Then the batch
        // before is committed first, alone.
        let posting_values =
            |s: &BatchSketches| s.stored.iter().map(|s| s.posting.len()).sum::<usize>();
        let values = posting_values(&sketches)
            + self
                .pair_step
                .flight
                .as_ref()
                .and_then(|f| f.planned.sketches.as_deref())
                .map_or(0, posting_values);
        if self.lookups.fresh.full(self.lookups.fresh_budget, values) {
            self.flush()?;
            self.clock = std::time::Instant::now();
            let cpu = thread_cpu();
            Arc::get_mut(&mut self.lookups.fresh)
                .ok_or_else(|| IndexError::Invalid("the postings buffer is shared".into()))?
                .spill(self.index, first, self.threads)?;
            lap(&mut self.clock, &mut self.summary.writer.spill_s);
            self.serial_cpu += thread_cpu() - cpu;
        }
        // The URLs whose latest capture the commit reads (with each capture's doc, when
        // sequencing knows it), and the first write that may land while the pair step
        // reads them.
        let urls: Vec<(String, Option<u64>)> = items
            .iter()
            .zip(&contents)
            .filter_map(|(item, c)| {
                let doc = match c {
                    Content::Payload(d) | Content::Text { doc: d, .. } => Some(*d),
                    Content::Revisit => None,
                    Content::Nothing => return None,
                };
                match item {
                    Item::Record(_, sc) if sc.record.is_capture() => {
                        Some((sc.capture.url.clone()?, doc))
                    }
                    _ => None,
                }
            })
            .collect();
        // While a sweep on content is read no pair step reads the sketches its captures'
        // resemblance to their previous ones compares: they are read here instead, those
        // of docs stored in their final form.
        let prefetch_below = (self.stage == Stage::Waiting).then_some(self.next_pair);
        let from_write = self.writing.sent;
        // (b) ∥ (c).
        let before = self
            .pair_step
            .flight
            .as_ref()
            .and_then(|f| f.planned.sketches.clone());
        let decided_before = self
            .pair_step
            .flight
            .as_ref()
            .and_then(|f| f.planned.decided.clone());
        let (index, over_cap) = (self.index, self.over_cap);
        let (fresh, cache) = (
            Arc::clone(&self.lookups.fresh),
            Arc::clone(&self.lookups.sketch_cache),
        );
        let written = Arc::clone(&self.writing.writes.written);
        let for_pairs = self.pair_step.for_pairs.clone();
        let settings = pairs::Settings {
            threads: self.threads,
            partitions: self.pair_step.partitions,
            cap: self.index.params().common_shingle_cap as usize,
            floor: self.index.params().edge_floor,
        };
        let mine = Arc::clone(&sketches);
        let (pair_files, bits) = (
            self.pair_step.pair_files.clone(),
            self.pair_step.against_bits.clone(),
        );
        let threads = self.threads;
        let mut buffers = std::mem::take(&mut self.pair_step.pair_buffers);
        let find = move || {
            // Owned here, so that they are released when the pair step returns.
            let (fresh, cache, before, mine, written) = (fresh, cache, before, mine, written);
            let decided_before = decided_before;
            let for_pairs = for_pairs;
            let docs: Vec<pairs::NewDoc> = before
                .iter()
                .flat_map(|b| b.stored.iter().zip(&b.compact))
                .chain(mine.stored.iter().zip(&mine.compact))
                .map(|(s, c)| pairs::NewDoc {
                    level: s.posting_level,
                    values: &s.posting,
                    compact: c,
                    stored: s,
                })
                .collect();
            let from = before.as_ref().map_or(0, |b| b.compact.len());
            let start = before.as_ref().map_or(mine.first, |b| b.first);
            let view = pairs::View {
                index,
                fresh: &fresh,
                over_cap,
                cache: &cache,
                readable: &|docs| written.wait_docs(docs),
                templates: for_pairs.as_ref().map(|t| &t.set),
                unsettled: None,
            };
            // While a sweep on content is read its new docs wait for their pairs.
            let found = match (waiting, &pair_files) {
                (true, _) => Ok(pairs::BatchPairs::default()),
                // A pairs job's: read, not found.
                (false, Some(files)) => {
                    pairs_job::batch_from_files(files, (mine.first, &mine.stored))
                }
                (false, None) => pairs::find(&view, start, &docs, from, settings, &mut buffers),
            };
            // Each doc's base, and its sketch encoded as stored.
            let decided = found.and_then(|mut found| {
                if waiting {
                    return Ok((found, None));
                }
                let clock = std::time::Instant::now();
                let held = |d: u64| -> Option<&CompactSketch> {
                    if let Some(b) = before.as_deref() {
                        if let Some(k) = b.get(d) {
                            return Some(&b.compact[k]);
                        }
                    }
                    match found.read.binary_search_by_key(&d, |(x, _)| *x) {
                        Ok(k) => Some(&found.read[k].1),
                        Err(_) => cache.get(d),
                    }
                };
                let mut docs = std::mem::take(&mut found.docs);
                let batch = bases::Batch {
                    first: mine.first,
                    stored: &mine.stored,
                    compact: &mine.compact,
                    before: decided_before.as_deref(),
                    bits: bits.as_deref(),
                    held: &held,
                    stored_in_full,
                };
                let readable = |d: u64| written.wait_docs(d);
                let decided = bases::decide(index, &mut docs, &batch, &readable, threads)?;
                found.docs = docs;
                found.estimate_s += clock.elapsed().as_secs_f64();
                Ok((found, Some(Arc::new(decided))))
            });
            (
                decided,
                known::Latest::read(index, &urls, from_write, prefetch_below, &cache),
                buffers,
            )
        };
        let ((found, latest, buffers), committed) = match self.pair_step.flight.take() {
            None => (find(), Ok(())),
            Some(f) => std::thread::scope(|s| {
                let pairing = s.spawn(find);
                let committed = self.commit(f);
                let t = std::time::Instant::now();
                let found = pairing.join().unwrap_or_else(|_| {
                    let e = IndexError::Invalid("the pair step panicked".into());
                    (Err(e.clone()), Err(e), pairs::Buffers::default())
                });
                self.summary.writer.pairs_wait_s += t.elapsed().as_secs_f64();
                (found, committed)
            }),
        };
        self.pair_step.pair_buffers = buffers;
        committed?;
        // What the committed batch leaves for the next ones, now that no pair step
        // reads the buffer and the cache.
        self.settle()?;
        let (found, decided) = found?;
        let mut latest = latest?;
        self.summary.writer.candidates_s += found.candidates_s;
        self.summary.writer.estimate_s += found.estimate_s;
        self.pair_step.flight = Some(Flight {
            items,
            contents,
            planned: Planned {
                sketches: Some(sketches),
                before: self.pair_step.last_sketches.take(),
                pairs: found.docs.into_iter().map(Some).collect(),
                decided,
                read: match found.read.is_empty() {
                    true => std::mem::take(&mut latest.compared),
                    false => found.read,
                },
                hits: found.hits,
                latest,
            },
            failed,
        });
        Ok(())
    }

    /// Commits the batch waiting for its commit, if any, and waits until it is written.
    pub(super) fn flush(&mut self) -> Result<()> {
        if let Some(f) = self.pair_step.flight.take() {
            self.commit(f)?;
            self.settle()?;
        }
        self.wait_written()
    }

    /// (c) The commit of a batch, in input order. What it adds to the postings buffer
    /// and the sketch cache waits for [`Writer::settle`]: a pair step may read them.
    pub(super) fn commit(&mut self, f: Flight) -> Result<()> {
        let cpu = thread_cpu();
        let r = super::or_failed("commit", || {
            crate::scan::test_panic("commit", 0);
            self.commit_records(f)
        });
        if r.is_err() {
            // A pair step beside it may wait for this batch's docs to be written: they
            // will not be.
            self.writing.writes.written.abandon_docs();
            self.drop_pending();
        }
        self.serial_cpu += thread_cpu() - cpu;
        r
    }

    pub(super) fn commit_records(&mut self, f: Flight) -> Result<()> {
        self.clock = std::time::Instant::now();
        self.committing.planned = f.planned;
        let from = self.committing.planned.latest.from_write;
        self.writing.recent_urls.retain(|(w, _)| *w >= from);
        for (item, content) in f.items.into_iter().zip(f.contents) {
            match item {
                Item::Record(file, sc) => {
                    crate::scan::test_panic("commit-record", 150);
                    self.record(file, &sc.record, &sc.capture, sc.prepared, content)?
                }
                Item::End(file, bytes, damage) => {
                    self.summary.bytes += bytes;
                    self.file_end(file, damage);
                }
                Item::Waiting { doc, .. } => self.waiting_doc(doc)?,
            }
        }
        self.write_pending()?;
        self.pair_step.last_sketches = self.committing.planned.sketches.clone();
        match f.failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The postings and sketches the committed batch leaves for the next ones: its new
    /// docs' posting entries into the buffer, the sketches it compared or made kept.
    pub(super) fn settle(&mut self) -> Result<()> {
        let (clock, cpu) = (std::time::Instant::now(), thread_cpu());
        let planned = std::mem::take(&mut self.committing.planned);
        self.lookups.settle(planned, self.threads)?;
        self.summary.writer.edges_unions_s += clock.elapsed().as_secs_f64();
        self.serial_cpu += thread_cpu() - cpu;
        Ok(())
    }
}
