//! Scanning many files on all cores with results in input order.
//!
//! One reader thread decompresses and frames records (gzip inflate runs at ~650 MB/s a
//! core, several times faster than analysis), batches them, and hands the batches to
//! `threads` workers over a crossbeam channel; the caller's thread receives the analyzed
//! batches and re-orders them, so what it sees is identical for 1 or N threads.
//! In-flight batches are bounded by tokens the caller returns, so memory stays bounded
//! whatever the input.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crossbeam_channel::{bounded, unbounded};

use crate::canon::Canon;
use crate::capture::{analyze_unless_known, Capture, Known, Scratch};
use crate::read::{ReadError, Record, RecordReader};
use crate::sketch::SketchParams;

/// One analyzed record; `record.block` is emptied after analysis.
#[derive(Debug)]
pub struct Scanned<P = ()> {
    /// The record (its block dropped after analysis).
    pub record: Record,
    /// Its analysis.
    pub capture: Capture,
    /// What the caller's `prepare` made of it on the worker (e.g. index lookups).
    pub prepared: Option<P>,
}

/// What the caller is told, in input order: `T` is what a worker made of one record
/// ([`Scanned`] when reading WARC files).
#[derive(Debug)]
pub enum ScanEvent<T = Scanned> {
    /// A file is about to be read.
    FileStart {
        /// Index in the input list.
        file: usize,
    },
    /// One record of `file`.
    Record {
        /// Index in the input list.
        file: usize,
        /// The record and its analysis.
        scanned: Box<T>,
    },
    /// The file was read to its end or to its first damage.
    FileEnd {
        /// Index in the input list.
        file: usize,
        /// Records delivered.
        records: u64,
        /// Decompressed bytes read.
        bytes: u64,
        /// Damage that stopped the reading, if any.
        error: Option<ReadError>,
    },
    /// A worker failed on a record of `file` (a bug: it panicked). Nothing of the file
    /// from that record on is delivered, and the scan stops: the caller ends with an
    /// error naming the file and the record's offset.
    Failed {
        /// Index in the input list.
        file: usize,
        /// Offset of the record in its file, where known.
        offset: Option<u64>,
        /// What the panic said.
        message: String,
    },
}

impl<T> ScanEvent<T> {
    /// The same event with its record's item turned into a `U`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> ScanEvent<U> {
        match self {
            ScanEvent::FileStart { file } => ScanEvent::FileStart { file },
            ScanEvent::Record { file, scanned } => ScanEvent::Record {
                file,
                scanned: Box::new(f(*scanned)),
            },
            ScanEvent::FileEnd {
                file,
                records,
                bytes,
                error,
            } => ScanEvent::FileEnd {
                file,
                records,
                bytes,
                error,
            },
            ScanEvent::Failed {
                file,
                offset,
                message,
            } => ScanEvent::Failed {
                file,
                offset,
                message,
            },
        }
    }
}

/// How to scan.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Worker threads for analysis (≥ 1).
    pub threads: usize,
    /// Sketch parameters.
    pub params: SketchParams,
    /// Record cap in bytes.
    pub record_cap: usize,
    /// Tokens either side of an anchor kept with each outgoing link (0: links not read).
    pub anchor_window: usize,
    /// Skip analysis (read and frame only) — for measuring the reader alone.
    pub read_only: bool,
    /// Records the caller holds before it acts on them (a batch of its own, as ingest
    /// commits): the workers may run that many more ahead, so that they keep working
    /// while the caller acts on one (0: the caller acts on each record).
    pub hold: usize,
}

/// Items of one file the reader hands to the workers, in order.
pub struct Batch<I> {
    /// Position in the reader's sequence of batches (0, 1, 2, …).
    pub seq: u64,
    /// Index of the file in the input list.
    pub file: usize,
    /// Its items.
    pub items: Vec<I>,
    /// Set on the last batch of a file: records in it, decompressed bytes, damage.
    pub end: Option<(u64, u64, Option<ReadError>)>,
    /// Set on the first batch of a file.
    pub start: bool,
    /// Set by a worker that failed on the item after the last of `items`: its offset,
    /// where known, and what the panic said.
    pub failed: Option<(Option<u64>, String)>,
}

/// Where an item sits in its file, for the error that names a record a worker failed on.
pub trait Located {
    /// The offset of the item's record in its file, where known.
    fn offset(&self) -> Option<u64>;
}

impl Located for Record {
    fn offset(&self) -> Option<u64> {
        Some(self.offset)
    }
}

/// What [`ScanEvent::Failed`] says, after the file's name: the same words from every
/// command that scans.
pub fn failed_on(offset: Option<u64>, message: &str) -> String {
    let at = offset.map_or("unknown".into(), |o| o.to_string());
    format!("offset {at}: tidemark failed on this record ({message}); please report this with the record")
}

/// What a panic said.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    (payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// Whether `TIDEMARK_TEST_PANIC_IN` names `stage` ([`test_panic`]).
pub(crate) fn test_panics_in(stage: &str) -> bool {
    static HOOK: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let hook = HOOK.get_or_init(|| std::env::var("TIDEMARK_TEST_PANIC_IN").ok());
    hook.as_deref() == Some(stage)
}

/// Panics in the stage named by `TIDEMARK_TEST_PANIC_IN` (the ingest's `commit`, at a
/// batch's start, and `commit-record`, among its records; `sequence`, on the
/// committing thread outside a commit; `batch-writing`, `anchor-bag`, `reader`; a
/// follower's `follower` poll), for the
/// tests of what a failing thread does; `after` calls of the stage pass first (unset in
/// normal use).
pub(crate) fn test_panic(stage: &str, after: u64) {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if test_panics_in(stage) && CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= after {
        panic!("test hook: panicking in the {stage} thread");
    }
}

const BATCH_RECORDS: usize = 64;
const BATCH_BYTES: usize = 4 << 20;

/// Scans `files` in order, calling `on_event` for every file and record in input order.
/// `on_event` returning false stops the scan early.
pub fn scan_files(
    files: &[PathBuf],
    opts: &ScanOptions,
    on_event: impl FnMut(ScanEvent<Scanned>) -> bool,
) {
    scan_files_with_skip(
        files,
        &[],
        opts,
        &Known::NOTHING,
        &|_, _| None::<()>,
        on_event,
    )
}

/// As [`scan_files`], dropping the first `skip[i]` records of file i unanalyzed (a resumed
/// ingest; `FileEnd.records` still counts every record of the file), not canonicalizing
/// responses whose payload digest `known` recognizes, and running `prepare` on each
/// analysis on the worker (work the caller would otherwise do on its own thread); it
/// also gets the canonical form, which is that record's when `text_fingerprint` is set.
pub fn scan_files_with_skip<P: Send>(
    files: &[PathBuf],
    skip: &[u64],
    opts: &ScanOptions,
    known: &Known<'_>,
    prepare: &(dyn Fn(&Capture, &Canon) -> Option<P> + Sync),
    on_event: impl FnMut(ScanEvent<Scanned<P>>) -> bool,
) {
    let cap = opts.record_cap;
    let read = |send: &mut dyn FnMut(Batch<Record>) -> bool| {
        read_files(files, skip, cap, send);
    };
    // Fails on a record of this target URL, for the test of what a failing worker does
    // (unset in normal use).
    let fail_on = std::env::var("TIDEMARK_TEST_FAIL_ON_URL").ok();
    let work = |scratch: &mut Scratch, mut record: Record| {
        if fail_on.is_some() && record.target_uri() == fail_on {
            panic!(
                "test hook: failing on {}",
                fail_on.as_deref().unwrap_or_default()
            );
        }
        scratch.anchor_window = opts.anchor_window;
        let capture = if opts.read_only {
            Capture::basic(&record)
        } else {
            analyze_unless_known(&record, &opts.params, opts.record_cap, scratch, known)
        };
        record.block = Vec::new();
        let prepared = prepare(&capture, scratch.canon());
        Scanned {
            record,
            capture,
            prepared,
        }
    };
    ordered_holding(opts.threads, opts.hold, read, &work, on_event)
}

/// Frames the records of `files` into batches, dropping the first `skip[i]` records of
/// file i; `send` returning false stops the reading.
fn read_files(
    files: &[PathBuf],
    skip: &[u64],
    cap: usize,
    send: &mut dyn FnMut(Batch<Record>) -> bool,
) {
    let mut seq = 0u64;
    for (fi, path) in files.iter().enumerate() {
        let reader = match RecordReader::open(path, cap) {
            Ok(r) => r,
            Err(e) => {
                let b = Batch {
                    seq,
                    file: fi,
                    items: Vec::new(),
                    end: Some((0, 0, Some(e))),
                    start: true,
                    failed: None,
                };
                seq += 1;
                if !send(b) {
                    return;
                }
                continue;
            }
        };
        let mut items = Vec::new();
        let mut bytes_in_batch = 0usize;
        let mut count = 0u64;
        let mut bytes = 0u64;
        let mut error = None;
        let mut start = true;
        let mut reader = reader;
        let mut at = 0u64;
        loop {
            // A panic while framing or inflating (a bug) ends the scan with an error
            // naming the file and where its last record ended, as a worker's does.
            let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                test_panic("reader", 150);
                reader.next()
            }));
            let r = match next {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(p) => {
                    let b = Batch {
                        seq,
                        file: fi,
                        items,
                        end: None,
                        start,
                        failed: Some((Some(at), format!("reading: {}", panic_message(p.as_ref())))),
                    };
                    send(b);
                    return;
                }
            };
            match r {
                Ok(rec) => {
                    at = rec.offset + rec.length;
                    count += 1;
                    if count <= skip.get(fi).copied().unwrap_or(0) {
                        continue;
                    }
                    bytes += record_bytes(&rec);
                    bytes_in_batch += rec.block.len();
                    items.push(rec);
                    if items.len() >= BATCH_RECORDS || bytes_in_batch >= BATCH_BYTES {
                        let b = Batch {
                            seq,
                            file: fi,
                            items: std::mem::take(&mut items),
                            end: None,
                            start,
                            failed: None,
                        };
                        start = false;
                        seq += 1;
                        bytes_in_batch = 0;
                        if !send(b) {
                            return;
                        }
                    }
                }
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let b = Batch {
            seq,
            file: fi,
            items,
            end: Some((count, bytes, error)),
            start,
            failed: None,
        };
        seq += 1;
        if !send(b) {
            return;
        }
    }
}

/// Decompressed bytes a record counts for (its declared length, or what was read).
pub fn record_bytes(rec: &Record) -> u64 {
    rec.declared_length.max(rec.block.len() as u64)
}

/// Batches in, results out in input order: `read` (on its own thread) makes numbered
/// batches of items, `threads` workers turn each item into a `T` with a scratch of
/// their own, and `on_event` (on the caller's thread) sees them in order, so what it
/// sees is identical for 1 or N threads. In-flight batches are bounded by tokens the
/// caller returns. `on_event` returning false stops everything early.
pub fn ordered<I: Send + Located, T: Send, S: Default>(
    threads: usize,
    read: impl FnOnce(&mut dyn FnMut(Batch<I>) -> bool) + Send,
    work: &(dyn Fn(&mut S, I) -> T + Sync),
    on_event: impl FnMut(ScanEvent<T>) -> bool,
) {
    ordered_holding(threads, 0, read, work, on_event)
}

/// [`ordered`] for a caller that holds `hold` items before it acts on them: that many
/// more may be in flight, so the workers fill the next hold while the caller works.
pub fn ordered_holding<I: Send + Located, T: Send, S: Default>(
    threads: usize,
    hold: usize,
    read: impl FnOnce(&mut dyn FnMut(Batch<I>) -> bool) + Send,
    work: &(dyn Fn(&mut S, I) -> T + Sync),
    mut on_event: impl FnMut(ScanEvent<T>) -> bool,
) {
    let threads = threads.max(1);
    let in_flight = 4 * threads + 2 + hold.div_ceil(BATCH_RECORDS);
    let (work_tx, work_rx) = bounded::<Batch<I>>(2 * threads);
    let (done_tx, done_rx) = unbounded::<Batch<T>>();
    let (token_tx, token_rx) = bounded::<()>(in_flight);
    for _ in 0..in_flight {
        token_tx.send(()).expect("token channel has room");
    }
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut send =
                |b: Batch<I>| -> bool { token_rx.recv().is_ok() && work_tx.send(b).is_ok() };
            read(&mut send);
        });
        for _ in 0..threads {
            let work_rx = work_rx.clone();
            let done_tx = done_tx.clone();
            s.spawn(move || {
                let mut scratch = S::default();
                for b in work_rx {
                    // A panic on an item (a bug) ends the scan with an error naming the
                    // record, where it would leave its batch undelivered and the caller
                    // waiting for it forever.
                    let mut items = Vec::with_capacity(b.items.len());
                    let mut failed = None;
                    for item in b.items {
                        let offset = item.offset();
                        let wrapped = std::panic::AssertUnwindSafe(|| work(&mut scratch, item));
                        match std::panic::catch_unwind(wrapped) {
                            Ok(t) => items.push(t),
                            Err(p) => {
                                failed = Some((offset, panic_message(p.as_ref())));
                                break;
                            }
                        }
                    }
                    // Or the reader failed after the batch's items.
                    let failed = failed.or(b.failed);
                    let stop = failed.is_some();
                    let done = Batch {
                        seq: b.seq,
                        file: b.file,
                        items,
                        end: if stop { None } else { b.end },
                        start: b.start,
                        failed,
                    };
                    if done_tx.send(done).is_err() || stop {
                        return;
                    }
                }
            });
        }
        drop(work_rx);
        drop(done_tx);
        // In-order delivery on the caller's thread.
        let mut pending: BTreeMap<u64, Batch<T>> = BTreeMap::new();
        let mut next = 0u64;
        let mut stopped = false;
        'outer: for d in &done_rx {
            pending.insert(d.seq, d);
            while let Some(d) = pending.remove(&next) {
                next += 1;
                let _ = token_tx.send(());
                if stopped {
                    continue;
                }
                if d.start && !on_event(ScanEvent::FileStart { file: d.file }) {
                    stopped = true;
                }
                for sc in d.items {
                    if !stopped
                        && !on_event(ScanEvent::Record {
                            file: d.file,
                            scanned: Box::new(sc),
                        })
                    {
                        stopped = true;
                    }
                }
                if let Some((offset, message)) = d.failed {
                    if !stopped {
                        on_event(ScanEvent::Failed {
                            file: d.file,
                            offset,
                            message,
                        });
                    }
                    break 'outer;
                }
                if let Some((records, bytes, error)) = d.end {
                    if !stopped
                        && !on_event(ScanEvent::FileEnd {
                            file: d.file,
                            records,
                            bytes,
                            error,
                        })
                    {
                        stopped = true;
                    }
                }
                if stopped {
                    break 'outer;
                }
            }
        }
        // Dropping the receivers ends the reader and the workers.
        drop(token_tx);
        drop(done_rx);
    });
}
