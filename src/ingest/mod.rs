//! Ingest: files of one sweep into the index.
//!
//! Records come from a [`RecordSource`] (WARC files read and sketched on all cores by
//! [`crate::scan`], or shards made by `tidemark sketch`) and are committed here, on
//! one thread, in input order, one atomic `WriteBatch` per batch of records that also
//! advances the files' resume points. Doc ids, edges and unions therefore do not depend
//! on the thread count, and a run killed at any moment and started again continues from
//! the last committed batch and ends with the index a clean run makes.
//!
//! Per capture: a known canonical text (fingerprint hit) or a revisit (payload digest)
//! costs a few point lookups; new content gets a doc id, its sketch and postings, its
//! candidates (the docs sharing posting values, lists longer than the common-shingle cap
//! skipped) and the estimate against each candidate that shares enough values; pairs at
//! or above the edge floor become edges, pairs at or above the threshold join clusters.
//!
//! Records are committed in batches, each in three steps: (a) [`sequence`]: what each
//! record's content is (a lookup or two: known by digest or text, a revisit, or a new
//! doc and its id), in input order; (b) [`pairs`]: the new docs' candidates, shared
//! counts and estimates, a pure function of the index as of the batch's start and the
//! batch, as a join on posting keys cut into key ranges that run on every core; (c) the
//! commit, on this thread, in input order: [`known`] stores each capture, [`new_doc`]
//! each new doc (its sketch against a base, edges, unions, postings), [`commit`] writes
//! the batch's records with their files' resume points, and settles the compactions at
//! the end. A batch's (b) runs while the batch before it is committed: it counts that
//! batch's new docs as earlier docs of its own (their postings and sketches are in
//! memory), and what a commit adds to the postings buffer and the sketch cache is added
//! only after both ([`Writer::settle`], the buffer's adds on every core). The pair step
//! also reads the latest capture of each of the batch's URLs ([`known::Latest`]). Each
//! batch's `WriteBatch` is written by a thread of its own ([`write`]) while the next
//! batch is committed; a record that reads what that write holds waits for it. Only (a)
//! and (c) are serial (`serial_s`). [`batch`] takes a batch through the three steps;
//! this file plans the files, feeds the batches and finishes the sweep.
//!
//! With edges on content (`cluster.resemblance = "content"`) a new doc is compared
//! without its host's template of its own sweep, which is a share of the whole sweep's
//! pages. So the sweep is committed in two stages ([`Stage`]): while it is read, every
//! record is committed as above except for its new docs' pairs (each new doc's sketch
//! stored in full, without a template, and noted in `unpaired`); once it is read, its
//! templates are learned from its committed pages ([`templates::learn_committed`]), and
//! the waiting docs go through (b) and (c) in doc order, batch by batch, each batch's
//! pairs committed with the deletion of its `unpaired` entries. The commit of the
//! records still runs beside the reading; a run killed in either stage resumes where it
//! stopped.

use std::path::PathBuf;
use std::sync::Arc;

pub mod bags;
mod bases;
mod batch;
mod commit;
mod forest;
mod known;
mod new_doc;
pub mod pair_files;
pub mod pairs;
pub mod pairs_job;
mod posting_adds;
pub mod progress_file;
pub mod recluster;
mod sequence;
mod source;
mod summary;
mod templates;
mod waiting;
mod write;

use crate::capture::Capture;
use crate::compact::CompactSketch;
use crate::index::codec::{Counts, FileState, SweepInfo};
use crate::index::columns::files::Files;
use crate::index::columns::sketches::StoredSketch;
use crate::index::columns::sweeps::Sweeps;
use crate::index::columns::Batch;
use crate::index::postings::{self, Fresh, OverCap};
use crate::index::sketch_cache::SketchCache;
use crate::index::snapshots;
use crate::index::texts::{self, TextEncoder};
use crate::index::{unionfind, Counters, Index, IndexError, Result};
use crate::read::Record;
use crate::scan::{ScanEvent, ScanOptions, Scanned};
pub use bags::BagCounts;
use batch::{Item, Planned, BATCH_RECORDS, FIRST_BATCH};
use commit::{settle_compactions, TEMPLATE_WRITES};
use pairs::BATCH_NEW_DOCS;
use sequence::Overlay;
pub use source::{Input, RecordSource, Shards, SourceContext, Warcs};
pub use summary::{FileError, IngestSummary, Progress, WriterTimes};
pub use templates::TemplateCounts;

/// Hash sets and maps of the committing thread (URLs, digests, fingerprints): aHash,
/// randomly seeded as std's SipHash is, several times faster on these keys.
type FastSet<T> = std::collections::HashSet<T, ahash::RandomState>;
type FastMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

/// What to ingest.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Sweep label.
    pub sweep: String,
    /// Sweep date (any WARC date form); default: the first capture's date.
    pub date: Option<String>,
    /// Worker threads.
    pub threads: usize,
    /// Record cap.
    pub record_cap: usize,
    /// Memory for postings not stored yet, in MiB.
    pub postings_buffer_mb: usize,
    /// Memory for sketches compared lately, in MiB.
    pub sketch_cache_mb: usize,
    /// Store new docs' canonical texts.
    pub store_texts: bool,
    /// Key ranges the pair step's join is cut into per batch (0: four per thread). Any
    /// number gives the same index.
    pub pair_partitions: usize,
    /// How hosts' templates are learned.
    pub template: crate::template::TemplateParams,
    /// Where the sweep's new docs' pairs come from.
    pub pairs: PairsFrom,
}

/// Where a sweep's new docs' pairs come from.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum PairsFrom {
    /// Found by this ingest, on every core.
    #[default]
    Here,
    /// Not yet (`ingest --pairs-later`): the sweep's records are committed and its new
    /// docs wait for their pairs (`unpaired`), for a pairs job
    /// ([`pairs_job`]) and `ingest --pairs`, or for the next ingest, which pairs them
    /// here first.
    Later,
    /// From the files of a pairs job ([`pairs_job`]), in this folder.
    Files(PathBuf),
}

/// What a worker prepares for the writer about new content.
#[derive(Default)]
pub struct Prepared {
    /// Its canonical text, compressed (with `store_texts`).
    text: Option<Vec<u8>>,
    /// Its sketch in stored form, when it came so (from a shard).
    stored: Option<StoredSketch>,
}

/// A capture's sketch as the writer gets it: sampled from the record by a worker, or
/// read from a shard in the form the index stores. Both give the same index: every
/// use goes through the stored form or the compact form made from it.
#[derive(Clone, Copy)]
enum DocSketch<'a> {
    Made(&'a crate::sketch::Sketch),
    Stored(&'a StoredSketch),
}

impl<'a> DocSketch<'a> {
    /// The record's sketch: in stored form when it came from a shard, else as sampled.
    fn of(
        stored: Option<&'a StoredSketch>,
        made: Option<&'a crate::sketch::Sketch>,
    ) -> Option<Self> {
        match (stored, made) {
            (Some(s), _) => Some(DocSketch::Stored(s)),
            (None, Some(s)) => Some(DocSketch::Made(s)),
            (None, None) => None,
        }
    }

    /// As the index stores it.
    fn stored(self, posting_target: u32) -> StoredSketch {
        match self {
            DocSketch::Made(s) => StoredSketch::new(s, postings::posting_level(s, posting_target)),
            DocSketch::Stored(s) => s.clone(),
        }
    }

    /// The form estimates compare.
    fn compact(self) -> CompactSketch {
        match self {
            DocSketch::Made(s) => CompactSketch::of(s),
            DocSketch::Stored(s) => s.compact(),
        }
    }
}

/// Where a new doc's pairs are committed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    /// With its record (edges on full resemblance).
    WithRecord,
    /// Edges on content, while the sweep is read: new docs are committed without pairs
    /// and wait in `unpaired`.
    Waiting,
    /// Edges on content, once the sweep is read and its templates learned: the waiting
    /// docs' pairs.
    Pairing,
}

/// The error a panic of one of the ingest's threads becomes: it names the stage and
/// what the panic said, and the ingest stops with it (a run started again resumes
/// from the last batch written) rather than taking the process down, or leaving the
/// other threads waiting for it.
pub(crate) fn thread_failed(stage: &str, panic: &(dyn std::any::Any + Send)) -> IndexError {
    IndexError::Failed(format!(
        "a {stage} thread failed ({}); please report this",
        crate::scan::panic_message(panic)
    ))
}

/// `f`, with a panic of it as [`thread_failed`]'s error.
pub(crate) fn or_failed<R>(stage: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(thread_failed(stage, p.as_ref())))
}

/// CPU seconds this thread has used: the serial steps' cost without the time the
/// thread waited for a core (on busy cores its wall time includes that).
fn thread_cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return 0.0;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Adds the time since `t` to `slot`, and restarts `t`.
fn lap(t: &mut std::time::Instant, slot: &mut f64) {
    let now = std::time::Instant::now();
    *slot += (now - *t).as_secs_f64();
    *t = now;
}

/// The committing thread's state: what the run is (its index, sweep, files, counts
/// and clocks) and, stage by stage, what each keeps from one batch to the next, in the
/// stage's own file ([`sequence::Sequencing`], [`batch::PairStep`], [`batch::Lookups`],
/// [`commit::Committing`], [`commit::Writing`]). Methods that join several stages (a
/// record's commit reads the pair step's plan, the lookups and the writes) stay here.
struct Writer<'a> {
    index: &'a Index,
    sweep_id: u32,
    sweep: SweepInfo,
    summary: IngestSummary,
    /// The sweep's counts when this run started.
    counts_before: Counts,
    /// Per input file: (name, identity, state with its number in the sweep).
    files: Vec<(String, [u8; 16], FileState)>,
    /// Over-cap posting values (boilerplate), shared with the workers' lookups.
    over_cap: &'a OverCap,
    /// When the current stage of the current record began (see [`WriterTimes`]).
    clock: std::time::Instant,
    /// Threads of the pair step and the postings buffer's adds.
    threads: usize,
    /// Where new docs get their pairs: with their records, or (edges on content) after
    /// the whole sweep is committed and its templates learned.
    stage: Stage,
    /// The next new doc whose pairs are committed (every doc below it has its pairs);
    /// on content the docs from it on wait in `unpaired`.
    next_pair: u64,
    /// How templates are learned.
    template: crate::template::TemplateParams,
    /// The templates learned from the whole sweep before its pairs: the end of the
    /// ingest, whose sample holds the same pages, takes them instead of learning again.
    learned_early: Option<templates::Learned>,
    /// CPU seconds of this thread in the serial steps ([`IngestSummary::serial_s`]).
    serial_cpu: f64,
    /// The sequencing of batches: the next doc id, the last batches' digests and texts.
    sequencing: sequence::Sequencing,
    /// The pair step between batches: what it takes from elsewhere, its buffers, the
    /// batch in flight.
    pair_step: batch::PairStep,
    /// What the pair step looks up besides the index: the fresh postings, the sketch
    /// cache, and what the batch being committed adds to them.
    lookups: batch::Lookups,
    /// What the commit of the records keeps from one record to the next.
    committing: commit::Committing,
    /// The writes: what the committed records put, the writing thread, what a write
    /// holds until it is done.
    writing: commit::Writing,
}

/// Ingests the WARC/ARC `files` into sweep `opts.sweep`.
pub fn ingest(
    index: &Index,
    files: &[PathBuf],
    opts: &IngestOptions,
    progress: impl FnMut(Progress),
) -> Result<IngestSummary> {
    run(index, &Warcs(files), opts, progress)
}

/// Ingests shards made by `tidemark sketch` ([`crate::shard`]) into sweep `opts.sweep`,
/// in the order given: the same index their WARC files make, with the same resume
/// points (a shard and its WARC file are one input). Shards of other parameters, or
/// without texts for an index that stores them, are refused before anything is written.
pub fn ingest_shards(
    index: &Index,
    shards: &[PathBuf],
    opts: &IngestOptions,
    progress: impl FnMut(Progress),
) -> Result<IngestSummary> {
    run(index, &Shards(shards), opts, progress)
}

/// Ingests the records of `source` into sweep `opts.sweep`.
pub fn run(
    index: &Index,
    source: &impl RecordSource,
    opts: &IngestOptions,
    progress: impl FnMut(Progress),
) -> Result<IngestSummary> {
    // Edges on content: a run stopped while it paired a sweep's new docs left them
    // waiting; a run of another sweep pairs them first, with that sweep's templates.
    if let Some((_, waiting)) = index.unpaired().first()? {
        let sweeps = index.sweeps().all(&crate::access::Reader::everything())?;
        let other = sweeps.iter().find(|(id, _)| *id == waiting);
        if let Some((_, s)) = other.filter(|(_, s)| s.label != opts.sweep) {
            let earlier = IngestOptions {
                sweep: s.label.clone(),
                date: None,
                pairs: PairsFrom::Here,
                ..opts.clone()
            };
            let quiet: fn(Progress) = |_| {};
            run(index, &Warcs(&[]), &earlier, quiet)?;
        }
    }
    // The sweep: resumed by label, or new.
    let sweeps = index.sweeps().all(&crate::access::Reader::everything())?;
    let (sweep_id, mut sweep) = match sweeps.iter().find(|(_, s)| s.label == opts.sweep) {
        Some((id, s)) => (*id, s.clone()),
        None => (
            sweeps.last().map(|(id, _)| id + 1).unwrap_or(1),
            SweepInfo {
                label: opts.sweep.clone(),
                ..Default::default()
            },
        ),
    };
    if let Some(d) = &opts.date {
        if sweep.date.is_empty() {
            sweep.date = crate::timestamp::Timestamp14::from_warc_date(d)
                .map(String::from)
                .unwrap_or_default();
        }
    }
    let mut summary = IngestSummary {
        sweep: opts.sweep.clone(),
        ..Default::default()
    };
    // Which files to read, and from which record.
    let mut todo: Vec<PathBuf> = Vec::new();
    let mut skips: Vec<u64> = Vec::new();
    let mut states = Vec::new();
    let mut input_total = 0u64;
    let mut sizes: Vec<u64> = Vec::new();
    let inputs = source.plan(index, opts)?;
    // Pairs from a pairs job: made for this index state and these inputs, or refused
    // before anything is written.
    let pairs_plan = match &opts.pairs {
        PairsFrom::Files(dir) => {
            let plan = pairs_job::Plan::load(dir)?;
            let begun = sweeps.iter().any(|(id, _)| *id == sweep_id);
            let ids: Vec<(String, [u8; 16])> = inputs
                .iter()
                .map(|i| (i.path.display().to_string(), i.id))
                .collect();
            plan.check_before(index, sweep_id, begun, &ids)?;
            // And every file of it there, whole and of this plan.
            Some(pairs_job::PairsFiles::open(dir, plan)?)
        }
        _ => None,
    };
    for Input {
        path,
        name,
        id,
        size,
    } in inputs
    {
        let state = index.files().get(&id)?;
        match state {
            Some(st) if st.complete => {
                summary.already_ingested.push(if st.sweep == sweep_id {
                    name
                } else {
                    let other = sweeps
                        .iter()
                        .find(|(i, _)| *i == st.sweep)
                        .map(|(_, s)| s.label.clone())
                        .unwrap_or_default();
                    format!("{name} (in sweep {other})")
                });
            }
            Some(st) if st.sweep != sweep_id => {
                let other = sweeps
                    .iter()
                    .find(|(i, _)| *i == st.sweep)
                    .map(|(_, s)| s.label.clone())
                    .unwrap_or_default();
                return Err(IndexError::Invalid(format!(
                    "{name} was partly ingested into sweep {other:?}; finish it with --sweep {other}"
                )));
            }
            Some(st) => {
                // Partly ingested: resumed after its last committed record, same number.
                skips.push(st.records);
                input_total += size;
                sizes.push(size);
                todo.push(path);
                states.push((name, id, st));
            }
            None => {
                if states.iter().any(|(_, other, _)| *other == id) {
                    // The same file given twice (under two names): read once.
                    continue;
                }
                // Numbered in the order given, once: the number is stored with the
                // file's state below, so a resumed run finds it by one lookup.
                let file_no = u32::try_from(sweep.files).map_err(|_| {
                    IndexError::Invalid(format!(
                        "sweep {:?} has {} files, the most a sweep can hold",
                        opts.sweep,
                        u32::MAX
                    ))
                })?;
                sweep.files += 1;
                skips.push(0);
                input_total += size;
                sizes.push(size);
                todo.push(path);
                states.push((
                    name.clone(),
                    id,
                    FileState {
                        sweep: sweep_id,
                        file_no,
                        name,
                        ..Default::default()
                    },
                ));
            }
        }
    }
    // The sweep record exists before any capture points at it (and only when there is
    // something to ingest), with the new files and their numbers, in one batch.
    if !todo.is_empty() {
        let mut batch = Batch::default();
        batch.put::<Sweeps>(index, &sweep_id, &sweep);
        for (_, id, st) in &states {
            batch.put::<Files>(index, id, st);
        }
        index.write(batch)?;
    }
    let plan = Plan {
        sweep_id,
        sweep,
        summary,
        todo,
        skips,
        states,
        input_total,
        sizes,
        pairs_plan,
    };
    // A panic on the committing thread (its commits' own are errors already): the
    // scope has joined the other threads, so every write handed over is done, and the
    // doc counter goes back to what the index holds, as when it is opened.
    let ingested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        std::thread::scope(|scope| ingest_files(index, source, opts, progress, scope, plan))
    }));
    ingested.unwrap_or_else(|p| {
        index.set_counters(index.meta().counters()?.unwrap_or_default());
        Err(thread_failed("committing", p.as_ref()))
    })
}

/// What [`run`] planned: the sweep, the files to read and from which record.
struct Plan {
    sweep_id: u32,
    sweep: SweepInfo,
    summary: IngestSummary,
    todo: Vec<PathBuf>,
    skips: Vec<u64>,
    states: Vec<(String, [u8; 16], FileState)>,
    input_total: u64,
    sizes: Vec<u64>,
    /// With `--pairs`: the pairs job's files, checked against the index.
    pairs_plan: Option<pairs_job::PairsFiles>,
}

fn ingest_files<'scope>(
    index: &'scope Index,
    source: &impl RecordSource,
    opts: &IngestOptions,
    mut progress: impl FnMut(Progress),
    scope: &'scope std::thread::Scope<'scope, '_>,
    planned: Plan,
) -> Result<IngestSummary> {
    let Plan {
        sweep_id,
        sweep,
        summary,
        todo,
        skips,
        states,
        input_total,
        sizes,
        pairs_plan,
    } = planned;
    let over_cap = OverCap::default();
    // Merges the previous ingest's last writes made due start now, beside this one (it
    // may have run in this process, on this same `Index`).
    index.resume_compactions()?;
    index.drop_new_keys_from(index.counters().next_doc)?;
    // With edges on content, the docs a killed run left waiting for their pairs (the
    // newest; all of this sweep: [`run`] pairs another sweep's first).
    let next_pair = match index.unpaired().first()? {
        Some((d, _)) => d,
        None => index.counters().next_doc,
    };
    let fresh_budget = opts.postings_buffer_mb << 20;
    let mut fresh = Fresh::load(index, Some(next_pair))?;
    fresh.size_for(fresh_budget);
    let fresh = Arc::new(fresh);
    // Initialized in this order (some start threads or read the index).
    let pages = templates::Pages::load(index, sweep_id, &opts.template)?;
    let for_pairs = match index.params().resemblance {
        crate::config::Resemblance::Content => {
            Some(Arc::new(templates::ForPairs::load(index, sweep_id)?))
        }
        crate::config::Resemblance::Full => None,
    };
    let writes = write::Writes::start(scope, index, next_pair);
    // Links by the page linked describe the sweep's pages as they were: a run that adds
    // to them drops them first (readers scan meanwhile), and builds them again at its end
    // or the next run does.
    if !todo.is_empty() {
        crate::index::columns::inbound::clear_sweep(index, sweep_id)?;
    }
    let bag_gather = match index.links().any_in(&sweep_id.to_be_bytes())? {
        false => Some(bags::Gathering::start(scope, bags::params_of(index)?)),
        true => None,
    };
    let last_sweep = (index
        .sweeps()
        .all(&crate::access::Reader::everything())?
        .last())
    .map(|(id, _)| *id)
    .filter(|id| *id > sweep_id);
    let mut w = Writer {
        index,
        over_cap: &over_cap,
        clock: std::time::Instant::now(),
        // New docs wait for their pairs while the sweep is read: on content (for its
        // templates), or when the pairs come from elsewhere.
        stage: match (index.params().resemblance, &opts.pairs) {
            (crate::config::Resemblance::Full, PairsFrom::Here) => Stage::WithRecord,
            _ => Stage::Waiting,
        },
        next_pair,
        template: opts.template,
        learned_early: None,
        serial_cpu: 0.0,
        threads: opts.threads.max(1),
        sweep_id,
        counts_before: sweep.counts.clone(),
        sweep,
        summary,
        files: states,
        sequencing: sequence::Sequencing {
            next_doc: index.counters().next_doc,
            overlay: Overlay::default(),
        },
        pair_step: batch::PairStep {
            for_pairs,
            pair_files: None,
            against_bits: None,
            pair_buffers: pairs::Buffers::default(),
            partitions: match opts.pair_partitions {
                0 => 4 * opts.threads.max(1),
                n => n,
            },
            flight: None,
            last_sketches: None,
        },
        lookups: batch::Lookups {
            fresh,
            fresh_budget,
            posting_adds: None,
            sketch_cache: Arc::new(SketchCache::new(opts.sketch_cache_mb << 20)),
            adds: Vec::new(),
            made: Vec::new(),
        },
        committing: commit::Committing {
            planned: Planned::default(),
            forest: forest::Forest::default(),
            kept: waiting::Kept::new(next_pair, opts.sketch_cache_mb << 20),
            hosts_seen: Default::default(),
            pages,
            bag_gather,
            last_sweep,
        },
        writing: commit::Writing {
            pending: commit::Pending::new(index.counters().next_doc),
            writes,
            sent: 0,
            in_writing: None,
            staged: unionfind::Staged::for_write(1),
            recent_urls: Default::default(),
        },
    };

    let scan_opts = ScanOptions {
        threads: opts.threads,
        params: w.index_params_sketch(),
        record_cap: opts.record_cap,
        anchor_window: index.link_params()?.window as usize,
        read_only: false,
        hold: BATCH_RECORDS,
    };
    let mut failure: Option<IndexError> = None;
    let mut done_bytes = 0u64;
    let mut clock = std::time::Instant::now();
    let mut file_base = 0u64;
    // Workers skip canonicalizing payloads the index already holds (same digest, same
    // content): the writer then takes the doc from `payloads`. Docs are never removed,
    // so what a worker saw is still there when the writer gets the record.
    let payloads = index.payloads();
    // (A read error counts as not known: the commit looks the digest up again.)
    let known = |digest: &str| payloads.get_raw(digest.as_bytes()).ok().flatten();
    // Workers read a page's links again only when the sweep before did not keep them
    // for the same URL and bytes: that sweep is written in full before this one starts
    // and not written while it runs, so what they find does not depend on timing.
    let links_col = index.links();
    let before = sweep_id.checked_sub(1).filter(|s| *s > 0);
    let kept_links = |source: &str, origin: u64| -> Option<(u32, Vec<u8>)> {
        links_col
            .kept_before(before?, source, origin)
            .ok()
            .flatten()
    };
    // Workers compress the canonical text of content not indexed yet, when texts are
    // stored.
    let fingerprints = index.fingerprints();
    let encoder = if opts.store_texts {
        Some(TextEncoder::new(index)?)
    } else {
        None
    };
    let is_new = |fp: u128| matches!(fingerprints.contains_raw(&fp.to_be_bytes()), Ok(false));
    let prepare_new = |text: &str| -> Prepared {
        Prepared {
            text: encoder.as_ref().map(|e| e.encode(text)),
            stored: None,
        }
    };
    // Records wait here until a batch is full, a file ends or the input does.
    let mut pending: Vec<Item> = Vec::new();
    let mut pending_new = 0usize;
    // The first batches are small, so that committing starts while the workers still
    // read (a sweep smaller than one full batch was read whole before its commit began:
    // llvm-docs sweeps of ~2,000 pages 30-70% slower); each is twice the one before.
    let mut limit = FIRST_BATCH;
    let mut read = 0u64;
    let mut on_event = |ev: ScanEvent<std::result::Result<Scanned<Prepared>, IndexError>>| {
        lap(&mut clock, &mut w.summary.writer.wait_s);
        let before = w.sweep.counts.records + read;
        let r = match ev {
            ScanEvent::FileStart { .. } => Ok(()),
            ScanEvent::Record { file, scanned } => match *scanned {
                Ok(sc) => {
                    read += 1;
                    done_bytes = file_base + sc.record.offset + sc.record.length;
                    // Likely new content: what the workers prepared something for.
                    pending_new += sc.prepared.is_some() as usize;
                    pending.push(Item::Record(file, sc));
                    if pending.len() >= limit || pending_new >= BATCH_NEW_DOCS {
                        pending_new = 0;
                        limit = (2 * limit).min(BATCH_RECORDS);
                        w.push_batch(std::mem::take(&mut pending))
                    } else {
                        Ok(())
                    }
                }
                // What came before the damage is committed first.
                Err(e) => w
                    .push_batch(std::mem::take(&mut pending))
                    .and_then(|()| w.flush())
                    .and(Err(e)),
            },
            // A bug, not damage: what came before is committed, the ingest ends with
            // this error, and the next run resumes at this record.
            ScanEvent::Failed {
                file,
                offset,
                message,
            } => w
                .push_batch(std::mem::take(&mut pending))
                .and_then(|()| w.flush())
                .and(Err(IndexError::Failed(format!(
                    "{}: {}; the records before it are indexed and the same command resumes here",
                    todo[file].display(),
                    crate::scan::failed_on(offset, &message),
                )))),
            ScanEvent::FileEnd {
                file, bytes, error, ..
            } => {
                file_base += sizes[file];
                pending.push(Item::End(file, bytes, error.map(|e| (e.offset, e.message))));
                Ok(())
            }
        };
        // Every 256 records read or committed.
        if (w.sweep.counts.records + read) / 256 != before / 256 {
            progress(Progress {
                records: w.sweep.counts.records - w.counts_before.records,
                read,
                input_bytes: done_bytes,
                input_total,
                pairs: None,
                finishing: false,
            });
        }
        clock = std::time::Instant::now();
        match r {
            Ok(()) => true,
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    };
    let context = SourceContext {
        threads: opts.threads,
        scan: &scan_opts,
        known: crate::capture::Known {
            doc: &known,
            links: &kept_links,
        },
        is_new: &is_new,
        prepare_new: &prepare_new,
    };
    source.read(&todo, &skips, &context, &mut on_event);
    if failure.is_none() {
        failure = w.push_batch(pending).and_then(|()| w.flush()).err();
    }
    // The sweep is committed but for its new docs' pairs: with `--pairs-later` they
    // wait (the run ends as one stopped here would); with `--pairs` they come from the
    // pairs job's files.
    let waiting_docs = index.counters().next_doc - w.next_pair;
    if failure.is_none()
        && w.stage == Stage::Waiting
        && opts.pairs == PairsFrom::Later
        && waiting_docs > 0
    {
        index.flush()?;
        (w.summary.writer.write_s, w.summary.writer.write_cpu_s) = w.writing.writes.written.busy();
        w.summary.writer.encode_cpu_s = w.writing.writes.written.encode_cpu();
        w.summary.waiting_docs = waiting_docs;
        w.summary.serial_s = w.serial_cpu;
        w.summary.files = todo.len() as u64;
        w.summary.counts = w.sweep.counts.since(&w.counts_before);
        return Ok(w.summary);
    }
    if let (None, Stage::Waiting, Some(files)) = (&failure, w.stage, pairs_plan) {
        failure = w.from_files(files).err();
        if failure.is_none() && w.pair_step.pair_files.is_some() {
            failure = w.start_posting_adds(scope, index).err();
        }
    }
    if failure.is_none() && w.stage == Stage::Waiting {
        let records = w.sweep.counts.records - w.counts_before.records;
        let mut report = |done: u64, total: u64| {
            progress(Progress {
                records,
                read,
                input_bytes: input_total,
                input_total,
                pairs: Some((done, total)),
                finishing: false,
            })
        };
        report(0, index.counters().next_doc - w.next_pair);
        failure = w.pair_waiting(report).err();
    }
    let finish = std::time::Instant::now();
    let finish_cpu = thread_cpu();
    if let Some(e) = failure {
        return Err(e);
    }
    progress(Progress {
        records: w.sweep.counts.records - w.counts_before.records,
        read,
        input_bytes: input_total,
        input_total,
        pairs: None,
        finishing: true,
    });
    // The last spill and the memtable flush add sorted runs and level-0 files; merges
    // they make due start with the next ingest, beside its reading and sketching, which
    // leave CPU to spare — not now, when this ingest would wait for them alone, or have
    // them cut off at close (measured at 100k pages: a merge of the newest posting runs,
    // or of `captures` and `doc_captures` once their fourth level-0 file lands, 1.5–4 s).
    index.pause_compactions(&TEMPLATE_WRITES, opts.store_texts as u64)?;
    // Three things left, none reading what another writes, side by side: the sweep's
    // templates (now that all its pages are in) and the content resemblance of its
    // changed pages, on every core a host at a time; the last spill of the postings; and
    // the memtables to disk (otherwise the next open replays the whole write-ahead log),
    // on RocksDB's threads. One after another they left a core idle for most of a
    // redesign sweep's last seconds (rd100k: 1.1–1.6 cores busy of 2).
    let next_doc = index.counters().next_doc;
    let (cache, threads, early) = (&w.lookups.sketch_cache, w.threads, w.learned_early.as_ref());
    // A run that read files, or one that ended a run stopped before its bags (with
    // `--pairs-later`, or killed).
    let build_bags = !todo.is_empty()
        || (index.links().any_in(&sweep_id.to_be_bytes())?
            && !(index.anchor_bags().any_in(&sweep_id.to_be_bytes())?
                && index.inbound().of_sweep_built(sweep_id)?));
    let gathered = w
        .committing
        .bag_gather
        .take()
        .and_then(|g| g.finish())
        .filter(|_| build_bags);
    let (learned, spilled, flushed, bags) = std::thread::scope(|s| {
        // Gathered as committed, or read from `links`, written in full by now: beside
        // the templates, which do not read it.
        let bags = s.spawn(|| match gathered {
            Some(g) => Some(bags::write_gathered(index, sweep_id, g)).transpose(),
            None => build_bags.then(|| bags::build(index, sweep_id)).transpose(),
        });
        let learn = s.spawn(|| {
            let t0 = std::time::Instant::now();
            let r = templates::finish(index, sweep_id, &opts.template, cache, threads, early);
            r.map(|mut t| {
                t.seconds = t0.elapsed().as_secs_f64();
                t
            })
        });
        let flush = s.spawn(|| index.flush());
        // With `--pairs` the postings thread spills (it was told the last doc); what it
        // leaves is empty then.
        if let Some(adds) = w.lookups.posting_adds.take() {
            match adds.finish() {
                Ok(done) => {
                    w.lookups.fresh = Arc::new(done.fresh);
                    w.summary.writer.postings_cpu_s += done.cpu_s;
                    w.summary.writer.spill_s += done.spill_s;
                }
                Err(e) => return (learn.join(), Err(e), flush.join(), bags.join()),
            }
        }
        let spilled = match Arc::get_mut(&mut w.lookups.fresh) {
            Some(fresh) => fresh.spill(index, next_doc, threads),
            None => Err(IndexError::Invalid("the postings buffer is shared".into())),
        };
        (learn.join(), spilled, flush.join(), bags.join())
    });
    // Templates are parallel work like the pair step's, not sequencing or the commit,
    // and on threads of their own: not in `serial_s` (they are in the CPU of the run).
    w.summary.templates =
        learned.map_err(|_| IndexError::Invalid("the template step panicked".into()))??;
    spilled?;
    if let Some(counts) =
        bags.map_err(|_| IndexError::Invalid("the anchor bag step panicked".into()))??
    {
        w.summary.anchor_bags = counts;
    }
    flushed.map_err(|_| IndexError::Invalid("the memtable flush panicked".into()))??;
    // What the templates wrote while the flush ran (a few MB).
    index.flush()?;
    if opts.store_texts {
        texts::train_if_ready(index)?;
        index.flush()?;
    }
    settle_compactions(index, opts.threads.max(1))?;
    // What this ingest completed becomes visible to servers as one whole state.
    if !todo.is_empty() || w.summary.templates.wrote || snapshots::list(index.path()).is_empty() {
        snapshots::publish(index)?;
    }
    (w.summary.writer.write_s, w.summary.writer.write_cpu_s) = w.writing.writes.written.busy();
    w.summary.writer.encode_cpu_s = w.writing.writes.written.encode_cpu();
    w.summary.writer.finish_s = finish.elapsed().as_secs_f64();
    w.serial_cpu += thread_cpu() - finish_cpu;
    w.summary.serial_s = w.serial_cpu;
    let t = &w.summary.writer;
    w.summary.pairs_s = t.candidates_s + t.estimate_s;
    w.summary.writer.sketch_misses = w.lookups.sketch_cache.misses;
    w.summary.writer.edge_lists_read = w.committing.forest.reads;
    w.summary.files = todo.len() as u64;
    w.summary.counts = w.sweep.counts.since(&w.counts_before);
    Ok(w.summary)
}
