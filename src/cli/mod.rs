//! Argument parsing and dispatch. Exit codes: 0 success; 1 input damage or a failed
//! operation (everything readable was still reported); 2 bad arguments or configuration.

mod acl_cmd;
mod backup_cmd;
mod demo;
mod index_cmds;
mod inputs;
mod inspect;
mod pairs_cmd;
mod query_cmds;
mod reference;
mod report_cmd;
mod serve_cmd;
mod sketch_cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use tidemark::config::Config;

/// Exit status when everything went well.
pub const EXIT_OK: u8 = 0;
/// Exit status when an input was damaged or an operation failed.
pub const EXIT_DAMAGE: u8 = 1;
/// Exit status for bad arguments or configuration.
pub const EXIT_USAGE: u8 = 2;

/// Exit codes of the query commands, shown in their `--help`.
const QUERY_EXIT_HELP: &str =
    "Exit status: 0 answered (also a URL never captured, for whereis and \
history); 1 a URL the command needs is not in the index, or a file given is damaged; 2 bad \
arguments (e.g. an unparseable URL) or configuration, or no index at --db, one of another \
schema or parameters, or a damaged index (the message names the column family and key).";

#[derive(Parser, Debug)]
#[command(
    name = "tidemark",
    version,
    about = "Incremental crawl-sweep indexer: near-duplicate clusters and page histories from WARC sweeps",
    long_about = "tidemark reads crawl sweeps (WARC/ARC files) into an embedded index of shingle \
sketches, dated URLs and near-duplicate clusters (Broder et al., Syntactic Clustering of the Web, 1997).",
    after_help = "Exit status: 0 success (also `whereis` of a URL never captured: status unknown); \
1 an input file was damaged (everything readable was still reported), an operation failed, or a \
queried URL is not in the index; 2 bad arguments (e.g. an unparseable URL) or configuration, or an \
index that is missing, of another schema or parameters, damaged, or being written by another process."
)]
pub struct Cli {
    /// Index directory (default: [index] path in the configuration).
    #[arg(long, global = true, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Configuration file; keys it leaves out keep the defaults of config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(long, global = true, value_name = "N")]
    pub threads: Option<usize>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print every record of WARC/ARC files: URL, date, type, status, token, shingle and
    /// sketch counts, and a summary by record type per file.
    Inspect(inspect::Args),
    /// Read the WARC/ARC files of one sweep into the index (incremental, resumable,
    /// the same result for any thread count); with --sketches, shards made by `sketch`.
    Ingest(index_cmds::IngestArgs),
    /// The map stage of a distributed ingest: read, canonicalize and sketch WARC/ARC
    /// files into one Parquet shard each (no index needed; deterministic), for
    /// `ingest --sketches` to commit.
    Sketch(sketch_cmd::Args),
    /// The pair step of a sweep in tasks, for a cluster (`tools/spark/pairs_job.py` runs
    /// them): `prepare` on the index's machine; `keys` per doc range, `join` per key
    /// range and `estimate` per doc range anywhere that reads the job's folder; then
    /// `ingest --pairs`.
    #[command(subcommand)]
    Pairs(pairs_cmd::Command),
    /// Print every capture in key order as CDXJ or JSON lines, or write captures, edges
    /// and clusters as Parquet files (--format parquet --out DIR).
    Export(index_cmds::ExportArgs),
    /// List the sweeps of the index.
    Sweeps(index_cmds::JsonArg),
    /// Docs, captures, URLs, clusters, largest clusters, size on disk per column family.
    Stats(index_cmds::JsonArg),
    /// Bring an index written by an earlier release to this build's schema in place
    /// (no WARC file read again; resumable), or say which families need the WARC files.
    Upgrade(index_cmds::JsonArg),
    /// Rebuild clusters from stored edges at another threshold, without reading WARCs.
    Recluster(index_cmds::ReclusterArgs),
    /// Where a page is now: alive, moved (to its newest URL, by redirects or by content),
    /// gone, or unknown; with the evidence and the runners-up.
    #[command(after_help = QUERY_EXIT_HELP)]
    Whereis(query_cmds::UrlArgs),
    /// Every capture of a URL in date order, with the change from the previous one
    /// (new, identical, changed with its resemblance, redirect, gone) and where its
    /// content went.
    #[command(after_help = QUERY_EXIT_HELP)]
    History(query_cmds::HistoryArgs),
    /// Pages that resemble a URL's content or a file (HTML, text or WARC), by sketch
    /// estimates; with --containment, pages that contain it.
    #[command(after_help = QUERY_EXIT_HELP)]
    Similar(query_cmds::SimilarArgs),
    /// The near-duplicate cluster of a URL's content: its docs, their URLs and dates.
    #[command(after_help = QUERY_EXIT_HELP)]
    Cluster(query_cmds::ClusterArgs),
    /// The pages that link a URL in a sweep (the newest by default), each with the anchor
    /// windows of its links: the anchor text and the words either side.
    #[command(after_help = QUERY_EXIT_HELP)]
    Inlinks(query_cmds::InlinksArgs),
    /// Pages related to a URL by what other pages say about them: the URLs whose bags of
    /// inbound anchor-window words resemble its own in a sweep, each with the anchor
    /// words they share; with --with-content, ranked with their content resemblance too.
    #[command(after_help = QUERY_EXIT_HELP)]
    Related(query_cmds::RelatedArgs),
    /// How pages changed, moved, lived and died across the sweeps: per pair of sweeps,
    /// lifetimes, change rates, top hosts; as a table, JSON, CSV or HTML with charts.
    Report(report_cmd::ReportArgs),
    /// Serve the index over HTTP: pywb/OutbackCDX and Wayback CDX APIs, Memento
    /// TimeMaps and TimeGate, archived payloads, tidemark's JSON API and a lost-and-found
    /// page. Follows ingests: each completed sweep is served without a restart.
    #[command(
        after_help = "Exit status: 0 after a clean shutdown (SIGINT, SIGTERM); 1 the address cannot be bound, or the index fails to open for another reason; 2 bad arguments or configuration (a bad --collection, a missing --archive folder, malformed access rules), or no index at --db, one of another schema or parameters, or a damaged one."
    )]
    Serve(serve_cmd::Args),
    /// Access rules in pywb's .aclj format: `acl check URL --acl FILE` says which rule
    /// applies (`serve --acl` applies them to every answer).
    #[command(subcommand)]
    Acl(acl_cmd::Command),
    /// Back up the index's newest published snapshot into a folder (consistent while an
    /// ingest runs; hard links where it can; a second backup copies only new files);
    /// with --verify, check every file of the backups against its checksum.
    Backup(backup_cmd::BackupArgs),
    /// Restore a backup (`backup --to DIR`) into a new index at --db, checking every
    /// file's checksum as it is copied; the restored index is published for `serve`.
    Restore(backup_cmd::RestoreArgs),
    /// Generate a small synthetic web of several sweeps (with ground truth) and read it:
    /// the embedded default run.
    Demo(demo::Args),
    /// Write the guide's generated reference pages (docs/src/reference): the command
    /// line from these definitions, the HTTP API from its OpenAPI description.
    #[command(hide = true)]
    Reference(reference::Args),
}

/// Resolved global settings.
pub struct Globals {
    pub config: Config,
}

pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let mut config = match &cli.config {
        Some(p) => match Config::load(p) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("tidemark: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => Config::default(),
    };
    if let Some(t) = cli.threads {
        if t == 0 {
            eprintln!("tidemark: --threads must be at least 1");
            return ExitCode::from(EXIT_USAGE);
        }
        config.ingest.threads = t;
    }
    if let Some(db) = &cli.db {
        config.index.path = db.clone();
    }
    let globals = Globals { config };
    let result = match cli.command {
        Command::Inspect(a) => inspect::run(&globals, a),
        Command::Ingest(a) => index_cmds::run_ingest(&globals, a),
        Command::Sketch(a) => sketch_cmd::run(&globals, a),
        Command::Pairs(c) => pairs_cmd::run(&globals, c),
        Command::Export(a) => index_cmds::run_export(&globals, a),
        Command::Sweeps(a) => index_cmds::run_sweeps(&globals, a),
        Command::Stats(a) => index_cmds::run_stats(&globals, a),
        Command::Recluster(a) => index_cmds::run_recluster(&globals, a),
        Command::Upgrade(a) => index_cmds::run_upgrade(&globals, a),
        Command::Whereis(a) => query_cmds::run_whereis(&globals, a),
        Command::History(a) => query_cmds::run_history(&globals, a),
        Command::Similar(a) => query_cmds::run_similar(&globals, a),
        Command::Cluster(a) => query_cmds::run_cluster(&globals, a),
        Command::Inlinks(a) => query_cmds::run_inlinks(&globals, a),
        Command::Related(a) => query_cmds::run_related(&globals, a),
        Command::Report(a) => report_cmd::run(&globals, a),
        Command::Serve(a) => serve_cmd::run(&globals, a),
        Command::Acl(c) => acl_cmd::run(c),
        Command::Backup(a) => backup_cmd::run_backup(&globals, a),
        Command::Restore(a) => backup_cmd::run_restore(&globals, a),
        Command::Demo(a) => demo::run(&globals, a),
        Command::Reference(a) => reference::run(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::from(EXIT_OK);
            }
            eprintln!("tidemark: {e:#}");
            // A missing index, one of another schema or parameters, a damaged one, one
            // another process writes, or an impossible request is a usage error (2);
            // anything else (damaged input, a failed operation) is 1.
            use tidemark::index::IndexError as E;
            match index_error(&e) {
                Some(
                    E::Missing(_)
                    | E::Version { .. }
                    | E::Params { .. }
                    | E::NotOurs(_)
                    | E::Busy(_)
                    | E::Corruption { .. }
                    | E::Invalid(_),
                ) => ExitCode::from(EXIT_USAGE),
                _ => ExitCode::from(EXIT_DAMAGE),
            }
        }
    }
}

/// The index error behind `e`, also when it travelled inside an I/O error (`export`
/// writes through `std::io::Write`).
fn index_error(e: &anyhow::Error) -> Option<&tidemark::index::IndexError> {
    e.chain().find_map(|c| {
        c.downcast_ref::<tidemark::index::IndexError>().or_else(|| {
            c.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<tidemark::index::IndexError>())
        })
    })
}

/// A closed pipe (`tidemark inspect … | head`) is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Opens the index for reading only: no lock (works while an ingest runs, many at once),
/// no background merges started and cut off at close.
pub fn open_for_reading(g: &Globals) -> anyhow::Result<tidemark::index::Index> {
    Ok(tidemark::index::Index::open_read_only(
        &g.config.index.path,
        &g.config,
    )?)
}

/// Standard output, buffered, for line-oriented output.
pub fn stdout() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock())
}

/// Writes one JSON value as a line.
pub fn json_line(out: &mut impl Write, v: &serde_json::Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, v)?;
    out.write_all(b"\n")
}
