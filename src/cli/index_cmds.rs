//! `tidemark ingest`, `export`, `sweeps`, `stats`, `recluster`, `upgrade`.

use std::io::{IsTerminal, Write};

use serde_json::json;
use tidemark::export::{export, ExportFormat};
use tidemark::index::Index;
use tidemark::ingest::recluster::recluster;
use tidemark::ingest::{ingest, ingest_shards, IngestOptions};
use tidemark::query::summary::{stats, sweeps_json};

use super::{open_for_reading, stdout, Globals, EXIT_DAMAGE, EXIT_OK, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub struct IngestArgs {
    /// Label of the sweep (e.g. 2026-11); ingesting more files under the same label adds to it.
    #[arg(long, value_name = "LABEL")]
    pub sweep: String,
    /// Date of the sweep, YYYY-MM-DDTHH:MM:SSZ (default: the first capture's date).
    #[arg(long, value_name = "DATE")]
    pub date: Option<String>,
    /// The sweep's files, in the order they are committed (directories: their WARC and
    /// ARC files, recursively, sorted; with --sketches their .parquet shards).
    #[command(flatten)]
    pub inputs: super::inputs::Inputs,
    /// The inputs are shards made by `tidemark sketch` (one per WARC file, with the
    /// same sketch parameters as the index): commits them without reading the WARC files
    /// again, into the index those WARC files would make.
    #[arg(long)]
    pub sketches: bool,
    /// Commit the sweep's records but leave its new docs waiting for their pairs, for a
    /// pairs job (`tools/spark/pairs_job.py`) and `ingest --pairs`; the next ingest
    /// without it pairs them here instead. Queries meanwhile see the sweep's captures,
    /// its new docs not yet in clusters.
    #[arg(long, conflicts_with = "pairs")]
    pub pairs_later: bool,
    /// Take the new docs' pairs from a pairs job's folder (its --out) instead of finding
    /// them here: the same index. Pairs made for another index state (other parameters,
    /// sweeps before, inputs or waiting docs) are refused before they are used.
    #[arg(long, value_name = "DIR")]
    pub pairs: Option<std::path::PathBuf>,
    /// Print the summary as JSON: {"sweep","files","records","captures","new_docs","known_docs","edges","unions","skipped","errors","bad_records","waiting_docs"}: `bad_records` lists (the first 100) captures skipped because no date could be read, each {"file","offset","message"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// cdxj: `SURT timestamp {json}` lines (pywb/OutbackCDX fields plus doc and cluster);
    /// jsonl: one JSON object per capture, with Common Crawl column names added;
    /// parquet (with --out DIR): captures/sweep=LABEL/part-0.parquet per sweep (Common
    /// Crawl's column names and tidemark's), edges/part-0.parquet, clusters/part-0.parquet.
    #[arg(long, value_enum, default_value = "cdxj")]
    pub format: Format,
    /// Folder of a Parquet export (created if absent; its files are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// With --format parquet: print what was written as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only the captures of this sweep.
    #[arg(long, value_name = "LABEL")]
    pub sweep: Option<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Format {
    Cdxj,
    Jsonl,
    Parquet,
}

#[derive(clap::Args, Debug)]
pub struct JsonArg {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ReclusterArgs {
    /// New clustering threshold on resemblance (at least the edge floor of the index).
    #[arg(long, value_name = "T")]
    pub threshold: f64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn open(g: &Globals, create: bool) -> anyhow::Result<Index> {
    Ok(Index::open(&g.config.index.path, &g.config, create)?)
}

pub fn run_ingest(g: &Globals, a: IngestArgs) -> anyhow::Result<u8> {
    let resolved = if a.sketches {
        a.inputs.resolve_shards()
    } else {
        a.inputs.resolve()
    };
    let files = match resolved {
        Ok(f) => f,
        Err(e) => {
            eprintln!("tidemark ingest: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    if let Some(d) = &a.date {
        if tidemark::timestamp::Timestamp14::from_warc_date(d).is_none() {
            eprintln!("tidemark ingest: --date must look like 2026-11-01T00:00:00Z, not {d:?}");
            return Ok(EXIT_USAGE);
        }
    }
    let index = open(g, true)?;
    let opts = IngestOptions {
        sweep: a.sweep.clone(),
        date: a.date.clone(),
        threads: g.config.threads(),
        record_cap: g.config.ingest.record_cap,
        postings_buffer_mb: g.config.ingest.postings_buffer_mb,
        sketch_cache_mb: g.config.ingest.sketch_cache_mb,
        pair_partitions: g.config.ingest.pair_partitions,
        template: g.config.template,
        store_texts: g.config.index.store_texts,
        pairs: match (&a.pairs, a.pairs_later) {
            (Some(dir), _) => tidemark::ingest::PairsFrom::Files(dir.clone()),
            (None, true) => tidemark::ingest::PairsFrom::Later,
            (None, false) => tidemark::ingest::PairsFrom::Here,
        },
    };
    let bar = byte_bar(a.json);
    let started = std::time::Instant::now();
    let run = if a.sketches { ingest_shards } else { ingest };
    // For a server over the same index (`/metrics`); removed when the ingest ends.
    let mut progress_file =
        tidemark::ingest::progress_file::ProgressFile::new(index.path(), &a.sweep);
    // Written at once: a server tells of the ingest from its start, not from its first
    // committed batch (which may come late: the links of a sweep's first pages).
    progress_file.note(&tidemark::ingest::Progress {
        records: 0,
        read: 0,
        pairs: None,
        input_bytes: 0,
        input_total: files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum(),
        finishing: false,
    });
    let summary = run(&index, &files, &opts, |p: tidemark::ingest::Progress| {
        progress_file.note(&p);
        if let Some(b) = &bar {
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            match p.pairs {
                // Edges on content: the sweep's new docs paired once it is read.
                Some((done, total)) => {
                    if done == 0 {
                        b.set_style(
                            indicatif::ProgressStyle::with_template(
                                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} docs ETA {eta} {msg}",
                            )
                            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                        );
                        b.reset_eta();
                    }
                    b.set_length(total.max(1));
                    b.set_position(done);
                    b.set_message(format!(
                        "{} records in; the new docs' pairs (templates learned)",
                        p.read.max(p.records),
                    ));
                }
                None => {
                    b.set_length(p.input_total.max(1));
                    b.set_position(p.input_bytes);
                    b.set_message(format!(
                        "{} records, {:.0} records/s{}",
                        p.read.max(p.records),
                        p.read.max(p.records) as f64 / secs,
                        if p.finishing {
                            "; writing postings, compacting"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
    })?;
    drop(progress_file);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let secs = started.elapsed().as_secs_f64();
    for f in &summary.already_ingested {
        eprintln!("tidemark ingest: {f} is already ingested; nothing to do for it");
    }
    for e in &summary.errors {
        eprintln!(
            "tidemark ingest: {}: damaged at offset {}: {} (the records before it are indexed)",
            e.file, e.offset, e.message
        );
    }
    for e in &summary.bad_records {
        eprintln!(
            "tidemark ingest: {}: bad record at offset {}: {} (skipped)",
            e.file, e.offset, e.message
        );
    }
    let mut out = stdout();
    if a.json {
        /// The summary and how long it took.
        #[derive(serde::Serialize)]
        struct Report<'a> {
            #[serde(flatten)]
            summary: &'a tidemark::ingest::IngestSummary,
            seconds: f64,
            mb_per_s: f64,
            peak_rss_mb: Option<f64>,
        }
        let report = Report {
            summary: &summary,
            seconds: secs,
            mb_per_s: summary.bytes as f64 / 1e6 / secs.max(1e-9),
            peak_rss_mb: peak_rss_mb(),
        };
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "sweep {}: {} files, {} records, {} captures ({} new docs, {} known), {} edges, {} unions in {:.1} s ({:.1} MB/s)",
            summary.sweep,
            summary.files,
            summary.counts.records,
            summary.counts.captures,
            summary.counts.new_docs,
            summary.counts.known_docs,
            summary.counts.edges,
            summary.counts.unions,
            secs,
            summary.bytes as f64 / 1e6 / secs.max(1e-9)
        )?;
        if summary.waiting_docs > 0 {
            writeln!(
                out,
                "{} new docs wait for their pairs (a pairs job's `ingest --pairs`, or the next ingest)",
                summary.waiting_docs
            )?;
        }
        if !summary.counts.skipped.is_empty() {
            let s: Vec<String> = summary
                .counts
                .skipped
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            writeln!(out, "not captures: {}", s.join(", "))?;
        }
    }
    out.flush()?;
    Ok(if summary.errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_DAMAGE
    })
}

/// A progress bar over input bytes, on a terminal and without --json.
pub fn byte_bar(json: bool) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() || json {
        return None;
    }
    let b = indicatif::ProgressBar::new(1);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(b)
}

/// Peak resident memory of this process (Linux), for benchmarks.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

pub fn run_export(g: &Globals, a: ExportArgs) -> anyhow::Result<u8> {
    let index = open_for_reading(g)?;
    let sweep = match &a.sweep {
        Some(label) => match index
            .sweeps()
            .all(&tidemark::access::Reader::everything())?
            .into_iter()
            .find(|(_, s)| &s.label == label)
        {
            Some((id, _)) => Some(id),
            None => {
                eprintln!("tidemark export: no sweep labelled {label:?} (see `tidemark sweeps`)");
                return Ok(EXIT_USAGE);
            }
        },
        None => None,
    };
    let fmt = match (a.format, &a.out) {
        (Format::Cdxj, None) => ExportFormat::Cdxj,
        (Format::Jsonl, None) => ExportFormat::Jsonl,
        (Format::Parquet, Some(dir)) => {
            let started = std::time::Instant::now();
            let r = tidemark::export::parquet::export_parquet(&index, sweep, dir)?;
            let mut out = stdout();
            if a.json {
                let mut v = serde_json::to_value(&r)?;
                v["seconds"] = json!(started.elapsed().as_secs_f64());
                serde_json::to_writer_pretty(&mut out, &v)?;
                writeln!(out)?;
            } else {
                writeln!(
                    out,
                    "{} captures, {} edges, {} docs into {} files in {}",
                    r.captures,
                    r.edges,
                    r.docs,
                    r.files.len(),
                    dir.display()
                )?;
            }
            out.flush()?;
            return Ok(EXIT_OK);
        }
        (Format::Parquet, None) => {
            eprintln!("tidemark export: --format parquet writes files: give --out DIR");
            return Ok(EXIT_USAGE);
        }
        (_, Some(_)) => {
            eprintln!("tidemark export: --out is for --format parquet; cdxj and jsonl go to standard output");
            return Ok(EXIT_USAGE);
        }
    };
    let mut out = stdout();
    export(&index, fmt, sweep, &mut out)?;
    out.flush()?;
    Ok(EXIT_OK)
}

pub fn run_upgrade(g: &Globals, a: JsonArg) -> anyhow::Result<u8> {
    let db = &g.config.index.path;
    let u = tidemark::index::upgrade::upgrade(db, &g.config)?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &u)?;
        writeln!(out)?;
    } else if u.steps.is_empty() {
        writeln!(
            out,
            "the index at {} has schema version {}, this build's: nothing to do",
            db.display(),
            u.to
        )?;
    } else {
        writeln!(
            out,
            "upgraded the index at {} from schema version {} to {}:",
            db.display(),
            u.from,
            u.to
        )?;
        for s in &u.steps {
            writeln!(out, "  {s}")?;
        }
    }
    Ok(EXIT_OK)
}

pub fn run_sweeps(g: &Globals, a: JsonArg) -> anyhow::Result<u8> {
    let index = open_for_reading(g)?;
    let sweeps = index
        .sweeps()
        .all(&tidemark::access::Reader::everything())?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &sweeps_json(&index, &sweeps)?)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{:<14} {:<15} {:>6} {:>10} {:>10} {:>10}",
            "label", "date", "files", "captures", "new docs", "edges"
        )?;
        for (_, s) in &sweeps {
            writeln!(
                out,
                "{:<14} {:<15} {:>6} {:>10} {:>10} {:>10}",
                s.label, s.date, s.files, s.counts.captures, s.counts.new_docs, s.counts.edges
            )?;
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}

pub fn run_stats(g: &Globals, a: JsonArg) -> anyhow::Result<u8> {
    let index = open_for_reading(g)?;
    let s = stats(&index)?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &s)?;
        writeln!(out)?;
    } else {
        writeln!(out, "index {}", g.config.index.path.display())?;
        writeln!(
            out,
            "sweeps {}  captures {}  URLs {}  docs {}",
            s.sweeps, s.captures, s.urls, s.docs
        )?;
        writeln!(
            out,
            "clusters {} ({} of two or more docs) at threshold {}",
            s.clusters, s.multi_doc_clusters, s.threshold
        )?;
        let largest: Vec<String> = s
            .largest_clusters
            .iter()
            .map(|(c, n)| format!("{c}:{n}"))
            .collect();
        writeln!(out, "largest clusters (id:docs) {}", largest.join(" "))?;
        writeln!(
            out,
            "on disk {:.1} MB, {:.0} bytes per doc",
            s.bytes as f64 / 1e6,
            s.bytes_per_doc
        )?;
        for (n, b) in &s.column_families {
            writeln!(out, "  {:<14} {:>12} bytes", n, b)?;
        }
        if s.wal_bytes > 0 {
            writeln!(
                out,
                "  {:<14} {:>12} bytes (not yet flushed: the next ingest writes them)",
                "write-ahead log", s.wal_bytes
            )?;
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}

pub fn run_recluster(g: &Globals, a: ReclusterArgs) -> anyhow::Result<u8> {
    if !(0.0..=1.0).contains(&a.threshold) {
        eprintln!("tidemark recluster: --threshold must be between 0 and 1");
        return Ok(EXIT_USAGE);
    }
    let mut index = open(g, false)?;
    let (clusters, unions) = recluster(&mut index, a.threshold)?;
    let mut out = stdout();
    if a.json {
        writeln!(
            out,
            "{}",
            json!({"threshold": a.threshold, "clusters": clusters, "unions": unions})
        )?;
    } else {
        writeln!(
            out,
            "reclustered at {}: {} clusters of two or more docs ({} unions)",
            a.threshold, clusters, unions
        )?;
    }
    Ok(EXIT_OK)
}
