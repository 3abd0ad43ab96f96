//! Where an ingest's records come from: WARC/ARC files, read, canonicalized and sketched
//! on all cores by the scan ([`crate::scan`]), or shards made by `tidemark sketch`
//! ([`crate::shard`]), whose rows carry the sketches already. Both reach the commit in
//! input order as [`Scanned`] records, the same for a file and its shard, so either
//! gives the same index and the same resume points.

use std::path::PathBuf;

use super::{IngestOptions, Prepared};
use crate::canon::Canon;
use crate::capture::Capture;
use crate::index::{Index, IndexError, Result};
use crate::read::file_identity;
use crate::scan::{ordered_holding, scan_files_with_skip, ScanEvent, ScanOptions, Scanned};
use crate::shard::read::{read_shards, ShardRow};
use crate::shard::ShardError;

/// An input as planned: the file read, and the file it stands for.
pub struct Input {
    /// What is read (a WARC file, or a shard).
    pub path: PathBuf,
    /// The WARC file's absolute path, its identity and size.
    pub name: String,
    /// Its identity ([`file_identity`]): the key of its resume point.
    pub id: [u8; 16],
    /// Its size in bytes (for progress).
    pub size: u64,
}

/// What a source's workers may ask of the index while they read.
pub struct SourceContext<'a> {
    /// Worker threads.
    pub threads: usize,
    /// How the scan reads and sketches.
    pub scan: &'a ScanOptions,
    /// What the index holds already of a record's content and links (its record need
    /// not be read in full).
    pub known: crate::capture::Known<'a>,
    /// Whether a canonical text's fingerprint is not indexed yet.
    pub is_new: &'a (dyn Fn(u128) -> bool + Sync),
    /// What a worker prepares for new content (its text, compressed when stored).
    pub prepare_new: &'a (dyn Fn(&str) -> Prepared + Sync),
}

/// Records in input order, for one ingest.
pub trait RecordSource {
    /// The inputs with their identities; checked against the index before anything is
    /// written.
    fn plan(&self, index: &Index, opts: &IngestOptions) -> Result<Vec<Input>>;

    /// Reads the planned paths `todo`, each from its record `skips[i]` on, and calls
    /// `on_event` with each record and the end of each file, in input order, until it
    /// returns `false`.
    fn read(
        &self,
        todo: &[PathBuf],
        skips: &[u64],
        context: &SourceContext,
        on_event: &mut dyn FnMut(ScanEvent<Result<Scanned<Prepared>>>) -> bool,
    );
}

/// WARC/ARC files.
pub struct Warcs<'a>(pub &'a [PathBuf]);

/// Shards made by `tidemark sketch`, in the order given.
pub struct Shards<'a>(pub &'a [PathBuf]);

/// Whether a file starts as Parquet does (`PAR1`).
fn is_parquet(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|_| &magic == b"PAR1")
}

impl RecordSource for Warcs<'_> {
    fn plan(&self, _index: &Index, _opts: &IngestOptions) -> Result<Vec<Input>> {
        self.0
            .iter()
            .map(|path| {
                // Absolute, so that `serve` finds the file to replay its records from
                // wherever it runs (captures keep the bare file name, as CDX does).
                let name = std::path::absolute(path)
                    .unwrap_or_else(|_| path.clone())
                    .display()
                    .to_string();
                let id = file_identity(path)
                    .map_err(|e| IndexError::Invalid(format!("cannot read {name}: {e}")))?;
                if is_parquet(path) {
                    return Err(IndexError::Invalid(format!(
                        "{name} is a Parquet file: to commit shards made by `tidemark sketch`, give --sketches"
                    )));
                }
                let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                Ok(Input {
                    path: path.clone(),
                    name,
                    id,
                    size,
                })
            })
            .collect()
    }

    fn read(
        &self,
        todo: &[PathBuf],
        skips: &[u64],
        context: &SourceContext,
        on_event: &mut dyn FnMut(ScanEvent<Result<Scanned<Prepared>>>) -> bool,
    ) {
        // New content (a sketch, a fingerprint not indexed yet) gets its text prepared.
        let prepare = |cap: &Capture, canon: &Canon| -> Option<Prepared> {
            let fp = cap.text_fingerprint?;
            cap.sketch.as_ref()?;
            if !(context.is_new)(fp) {
                return None;
            }
            Some((context.prepare_new)(&canon.text))
        };
        scan_files_with_skip(todo, skips, context.scan, &context.known, &prepare, |ev| {
            on_event(ev.map(Ok))
        })
    }
}

impl RecordSource for Shards<'_> {
    /// Shards of other parameters, or without texts for an index that stores them, are
    /// refused here.
    fn plan(&self, index: &Index, opts: &IngestOptions) -> Result<Vec<Input>> {
        let want = crate::shard::ShardParams::of_index(
            index.params(),
            opts.record_cap,
            index.link_params()?.window,
        );
        self.0
            .iter()
            .map(|path| {
                let bad = |m: String| IndexError::Invalid(format!("{}: {m}", path.display()));
                let info = crate::shard::read::open(path)
                    .map_err(|e| IndexError::Invalid(e.to_string()))?;
                let diffs = info.params.diffs(&want);
                if !diffs.is_empty() {
                    return Err(bad(format!(
                        "made with other parameters: {}; sketch its WARC file again with the index's configuration",
                        diffs.join("; ")
                    )));
                }
                if opts.store_texts && !info.texts {
                    return Err(bad(
                        "made without canonical texts, and the index stores them (index.store_texts): sketch it again with that configuration".into(),
                    ));
                }
                Ok(Input {
                    path: path.clone(),
                    name: info.source,
                    id: info.identity,
                    size: info.source_bytes,
                })
            })
            .collect()
    }

    fn read(
        &self,
        todo: &[PathBuf],
        skips: &[u64],
        context: &SourceContext,
        on_event: &mut dyn FnMut(ScanEvent<Result<Scanned<Prepared>>>) -> bool,
    ) {
        // A row with content always carries its stored sketch to the commit.
        let work = |_: &mut (), row: std::result::Result<ShardRow, ShardError>| {
            let row = row.map_err(|e| IndexError::Invalid(e.to_string()))?;
            let mut prepared = None;
            if let (Some(fp), Some(stored)) = (row.capture.text_fingerprint, row.stored) {
                let text = row.text.as_deref().unwrap_or_default();
                let mut p = if (context.is_new)(fp) {
                    (context.prepare_new)(text)
                } else {
                    Prepared::default()
                };
                p.stored = Some(stored);
                prepared = Some(p);
            }
            Ok(Scanned {
                record: row.record,
                capture: row.capture,
                prepared,
            })
        };
        let read = |send: &mut dyn FnMut(_) -> bool| read_shards(todo, skips, send);
        ordered_holding(context.threads, context.scan.hold, read, &work, on_event)
    }
}
