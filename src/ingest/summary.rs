//! What an ingest reports: its summary (`ingest --json`), the timings of its steps, the
//! damage it met, and its progress.

use serde::Serialize;

use super::TemplateCounts;
use crate::index::codec::Counts;

/// A file's damage.
#[derive(Debug, Clone, Serialize)]
pub struct FileError {
    /// File name as given.
    pub file: String,
    /// Byte offset.
    pub offset: u64,
    /// What was wrong.
    pub message: String,
}

/// How many bad records a summary lists.
pub const MAX_BAD_RECORDS: usize = 100;

/// What one ingest did (printed at the end; `--json` adds timings).
#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestSummary {
    /// Sweep label.
    pub sweep: String,
    /// Files read in this run.
    pub files: u64,
    /// Files skipped because they were already ingested.
    pub already_ingested: Vec<String>,
    /// What this run counted (the sweep's counts in `sweeps` include earlier runs).
    #[serde(flatten)]
    pub counts: Counts,
    /// Damaged files.
    pub errors: Vec<FileError>,
    /// Captures skipped as bad (no date that can be read): the first
    /// [`MAX_BAD_RECORDS`] of them, each with its file and offset; `skipped` counts all.
    pub bad_records: Vec<FileError>,
    /// Decompressed bytes read.
    pub bytes: u64,
    /// CPU seconds the committing thread spent in the serial steps: sequencing and the
    /// commit (`writer`: sequence, captures, edges and unions, writes, spills, finish
    /// but its templates, learned a host a thread);
    /// CPU, not wall time, as on busy cores the thread also waits for one. The rest of
    /// an ingest runs on every core.
    pub serial_s: f64,
    /// Seconds of the pair step (`writer`: candidates and estimates), which runs on
    /// every core while the committing thread waits for it.
    pub pairs_s: f64,
    /// Where the writer's time went, and what new content cost it.
    pub writer: WriterTimes,
    /// The sweep's templates learned at the end, and content resemblances computed.
    pub templates: TemplateCounts,
    /// The sweep's anchor bags, built again when this run read files.
    pub anchor_bags: super::BagCounts,
    /// New docs left waiting for their pairs (`ingest --pairs-later`): a pairs job's
    /// `ingest --pairs`, or the next ingest, pairs them.
    pub waiting_docs: u64,
}

/// The committing thread's time by step and stage, in seconds, and the work behind the
/// pair step: the next bottleneck, visible without a profiler (`tidemark-bench --ingest`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct WriterTimes {
    /// Waiting for the workers' next record (reading, canonicalizing, sketching).
    pub wait_s: f64,
    /// (a) Sequencing: payload and text lookups, new docs numbered.
    pub sequence_s: f64,
    /// With edges on content (`cluster.resemblance = "content"`): the sweep's templates
    /// learned from all its pages, once its records are committed and before its new
    /// docs are paired.
    pub templates_s: f64,
    /// With edges on content: the sweep's second stage, from the end of its reading to
    /// its last pairs committed (its templates learned, its waiting docs paired; the
    /// steps' times above include it).
    pub pairing_s: f64,
    /// (b) The pair step's join: posting lists, stored, fresh and of the batch, counted
    /// (on every core; wall time).
    pub candidates_s: f64,
    /// (b) The pair step's sketch reads and estimates (on every core; wall time).
    pub estimate_s: f64,
    /// Waiting for a batch's pair step after the batch before it was committed (the two
    /// run side by side): what the pair step adds to the committing thread's time.
    pub pairs_wait_s: f64,
    /// (c) A new doc's sketch against its base, edges, unions and postings.
    pub edges_unions_s: f64,
    /// (c) The rest of a record: a revisit's lookups, the doc's facts, the capture, its
    /// history (`url_last`, resemblance to the previous capture).
    pub captures_s: f64,
    /// RocksDB writes of the records' batches (write-ahead log and memtables), on a
    /// thread of their own while the committing thread goes on: wall time, and CPU
    /// (a serial stage of its own).
    pub write_s: f64,
    /// See `write_s`.
    pub write_cpu_s: f64,
    /// CPU seconds of the thread that makes each batch ready for RocksDB before it is
    /// written (sorted by family and key, new keys' files written): a serial stage of its
    /// own, beside the writing thread.
    pub encode_cpu_s: f64,
    /// The committing thread waiting for a write: before it hands the next batch over,
    /// or when a record reads what the batch in the writing holds.
    pub write_wait_s: f64,
    /// Batches of records committed (each through the three steps).
    pub batches: u64,
    /// Postings written as sorted files when the buffer filled, during the run.
    pub spill_s: f64,
    /// With `--pairs`: CPU seconds of the thread that adds the committed docs' postings
    /// to the buffer and spills it (a serial stage of its own, beside the committing
    /// thread; without `--pairs` the adds are in `serial_s`).
    pub postings_cpu_s: f64,
    /// After the last record: the last spill, the memtable flush, settled compactions.
    pub finish_s: f64,
    /// Docs examined as candidates (sharing posting values, or heads of boilerplate
    /// lists), summed over new docs.
    pub candidates: u64,
    /// Candidates whose sketch was read and compared.
    pub sketches_read: u64,
    /// Of those, the ones settled by comparing the coarse quarter of both sketches (no
    /// edge possible); the others were compared whole.
    pub settled_coarse: u64,
    /// Sketches read from RocksDB, not found among those the writer kept
    /// (`ingest.sketch_cache_mb`) nor in the batch: the pair step reads each at most
    /// once per batch.
    pub sketch_misses: u64,
    /// Edges stored: of the pairs found at the floor, those the spanning forest of
    /// `recluster` may need ([`forest`]).
    pub edges_stored: u64,
    /// Edge lists of candidates read from RocksDB for that choice (not met in this run).
    pub edge_lists_read: u64,
    /// Older docs whose cluster the union-find looked up to join a new doc to (those of
    /// its kept edges at the threshold; a dropped edge's doc is in one of their clusters
    /// already).
    pub clusters_found: u64,
}

/// Progress, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Records committed so far in this run.
    pub records: u64,
    /// Records read so far in this run.
    pub read: u64,
    /// Edges on content: the sweep is read and committed, its templates learned, and
    /// its new docs' pairs found: (docs paired, docs waiting at the start).
    pub pairs: Option<(u64, u64)>,
    /// Compressed bytes of the input consumed so far (by record offsets).
    pub input_bytes: u64,
    /// Total compressed bytes of the input.
    pub input_total: u64,
    /// Every record is committed; the postings buffer is being written and compactions
    /// settled (seconds at most, but a bar standing still should say why).
    pub finishing: bool,
}
