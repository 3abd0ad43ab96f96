//! tidemark: an incremental crawl-sweep indexer after Broder, Glassman, Manasse and
//! Zweig, *Syntactic Clustering of the Web* (1997).
//!
//! The data flow, one module per stage:
//!
//! | stage | module | main types |
//! |---|---|---|
//! | reading WARC/ARC files | [`read`] | [`read::RecordReader`], [`read::Record`], [`read::HttpResponse`] |
//! | canonical form | [`canon`] | [`canon::Canon`], [`canon::MediaKind`] |
//! | shingles, sketches, estimators | [`sketch`] | [`sketch::Sketch`], [`sketch::SketchParams`], [`sketch::estimate`] |
//! | per-record analysis | [`capture`] | [`capture::Capture`], [`capture::analyze`] |
//! | per-file scanning on all cores | [`scan`] | [`scan::scan_files`] |
//! | sketch shards (the map stage, as Parquet) | [`shard`] | [`shard::write::sketch_files`], [`shard::read::read_shards`] |
//! | URL keys (SURT) | [`url`] | [`url::surt`] |
//! | ingest: sequencing, the pair step, the commit | [`ingest`] | [`ingest::ingest`], [`ingest::RecordSource`] |
//! | the index: column families, postings, clusters, export | [`index`] | [`index::Index`], [`index::unionfind`] |
//! | queries: whereis, history, similar, cluster | [`query`] | [`query::Searcher`], [`query::whereis::whereis`] |
//! | change-over-time reports | [`report`] | [`report::report`], [`report::Report`] |
//! | the HTTP service (CDX, Memento, JSON API, lost-and-found page) | [`serve`] | [`serve::serve`] |
//! | backups of the published index, and restore | [`backup`] | [`backup::backup`], [`backup::restore`] |
//! | configuration | [`config`] | [`config::Config`] |
//! | synthetic sweeps with ground truth | [`synth`] | [`synth::GenOptions`] |
//!
//! Everything before the database is pure: the same bytes and parameters give the same
//! captures, fingerprints and sketches on any machine and thread count.
#![warn(missing_docs)]

pub mod access;
pub mod backup;
pub mod canon;
pub mod capture;
pub mod compact;
pub mod config;
pub mod durable;
pub mod export;
pub mod index;
pub mod ingest;
pub mod links;
pub mod packed;
pub mod query;
pub mod read;
pub mod report;
pub mod scan;
pub mod serve;
pub mod shard;
pub mod sketch;
pub mod synth;
pub mod template;
pub mod timestamp;
pub mod url;
