//! The index: RocksDB column families holding sweeps, files, fingerprints, docs,
//! sketches, postings, dated captures, edges and the union-find of clusters.
//!
//! The rest of the crate talks to [`Index`], never to RocksDB directly. The layout is
//! documented, versioned, in `schema/README.md`; [`Index::open`] refuses an index of
//! another schema version or built with other sketch parameters.

pub mod codec;
pub mod ingest;
pub mod postings;
pub mod query;
pub mod snapshots;
pub mod texts;
pub mod unionfind;

use std::path::{Path, PathBuf};

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, Options, DB,
};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::sketch::{estimate_sorted, Estimate, Sketch, SKETCH_SCHEME};
use codec::{decode, encode, read_u64, u64_key, DocInfo, SweepInfo};

/// Version of the on-disk layout this build reads and writes.
pub const SCHEMA_VERSION: u32 = 3;

/// Column family names.
pub mod cf {
    /// Schema version, parameters, counters.
    pub const META: &str = "meta";
    /// Sweep id → sweep info.
    pub const SWEEPS: &str = "sweeps";
    /// File identity → ingest progress.
    pub const FILES: &str = "files";
    /// Canonical-text fingerprint → doc id.
    pub const FINGERPRINTS: &str = "fingerprints";
    /// Payload digest → doc id.
    pub const PAYLOADS: &str = "payloads";
    /// Doc id → doc info.
    pub const DOCS: &str = "docs";
    /// Doc id → packed sketch.
    pub const SKETCHES: &str = "sketches";
    /// Sketch value → posting list (merge operator).
    pub const POSTINGS: &str = "postings";
    /// SURT ‖ 0 ‖ timestamp ‖ sweep ‖ file ‖ record → capture.
    pub const CAPTURES: &str = "captures";
    /// Doc id ‖ timestamp ‖ sweep ‖ file ‖ record → SURT.
    pub const DOC_CAPTURES: &str = "doc_captures";
    /// SURT → timestamp ‖ doc of the URL's latest capture with content.
    pub const URL_LAST: &str = "url_last";
    /// Doc id ‖ doc id → estimated resemblance and containments.
    pub const EDGES: &str = "edges";
    /// Doc id → union-find parent, size, smallest member.
    pub const PARENTS: &str = "parents";
    /// Root ‖ doc id → (cluster listing).
    pub const MEMBERS: &str = "members";
    /// Host SURT ‖ 0x00 ‖ sweep id → (which sweeps captured a host: "vanished" URLs).
    pub const HOST_SWEEPS: &str = "host_sweeps";
    /// Doc id → compressed canonical text (with `index.store_texts`).
    pub const TEXTS: &str = "texts";
    /// Every column family, in creation order.
    pub const ALL: &[&str] = &[
        META,
        SWEEPS,
        FILES,
        FINGERPRINTS,
        PAYLOADS,
        DOCS,
        SKETCHES,
        POSTINGS,
        CAPTURES,
        DOC_CAPTURES,
        URL_LAST,
        EDGES,
        PARENTS,
        MEMBERS,
        HOST_SWEEPS,
        TEXTS,
    ];
}

/// The parameters an index is built with; data made with other values cannot be mixed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexParams {
    /// Sketch scheme name.
    pub scheme: String,
    /// Tokens per shingle.
    pub shingle_width: u32,
    /// Hash seed.
    pub seed: u64,
    /// Sketch sample target T.
    pub sample_target: u32,
    /// Posting sample target: postings hold between P and 2P values per doc.
    pub posting_target: u32,
    /// Posting lists longer than this are boilerplate.
    pub common_shingle_cap: u32,
    /// Smallest resemblance or containment stored as an edge.
    pub edge_floor: f64,
}

impl IndexParams {
    /// From a configuration.
    pub fn from_config(c: &Config) -> IndexParams {
        IndexParams {
            scheme: SKETCH_SCHEME.to_string(),
            shingle_width: c.sketch.shingle_width,
            seed: c.sketch.seed,
            sample_target: c.sketch.sample_target,
            posting_target: c.cluster.posting_target,
            common_shingle_cap: c.cluster.common_shingle_cap,
            edge_floor: c.cluster.edge_floor,
        }
    }

    /// Names of the parameters that differ, with both values.
    pub fn differences(&self, other: &IndexParams) -> Vec<String> {
        let mut d = Vec::new();
        macro_rules! cmp {
            ($f:ident, $section:literal) => {
                if self.$f != other.$f {
                    d.push(format!(
                        "{}.{} is {:?} in the index but {:?} in the configuration",
                        $section,
                        stringify!($f),
                        self.$f,
                        other.$f
                    ));
                }
            };
        }
        cmp!(scheme, "sketch");
        cmp!(shingle_width, "sketch");
        cmp!(seed, "sketch");
        cmp!(sample_target, "sketch");
        cmp!(posting_target, "cluster");
        cmp!(common_shingle_cap, "cluster");
        cmp!(edge_floor, "cluster");
        d
    }
}

/// Counters kept in `meta`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Counters {
    /// Next doc id to assign (ids start at 1).
    pub next_doc: u64,
    /// Clustering threshold the union-find currently reflects.
    pub threshold: f64,
}

/// Errors opening or reading an index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// No index at the path (and not creating one).
    #[error("no tidemark index at {0} (create one with `tidemark ingest --db {0} …`)")]
    Missing(PathBuf),
    /// Another schema version.
    #[error("the index at {path} has schema version {found}; this tidemark reads version {SCHEMA_VERSION}: use the tidemark that built it, or ingest into a new --db")]
    Version {
        /// Index path.
        path: PathBuf,
        /// Version found.
        found: u32,
    },
    /// Built with other parameters.
    #[error("the index at {path} was built with other parameters: {}; use a configuration with the index's values, or ingest into a new --db", .diffs.join("; "))]
    Params {
        /// Index path.
        path: PathBuf,
        /// What differs.
        diffs: Vec<String>,
    },
    /// The directory is not a tidemark index.
    #[error("{0} is not a tidemark index (no schema version); point --db at a tidemark index or an empty directory")]
    NotOurs(PathBuf),
    /// Another process writes to the index (RocksDB's lock is held).
    #[error("the index at {0} is being written by another process (an ingest or recluster): wait for it to finish; stats, export and the queries can read it meanwhile")]
    Busy(PathBuf),
    /// Damaged data.
    #[error("data corruption in {cf}: {comment}")]
    Corruption {
        /// Column family.
        cf: &'static str,
        /// What was wrong.
        comment: String,
    },
    /// A request the index cannot honour.
    #[error("{0}")]
    Invalid(String),
    /// An input given to a query (a file, a posted document) is damaged.
    #[error("{0}")]
    Damaged(String),
    /// What a query needs is not in the index (e.g. a URL never captured).
    #[error("{0}")]
    NotFound(String),
    /// RocksDB failed.
    #[error("RocksDB: {0}")]
    Db(#[from] rocksdb::Error),
}

/// Result of index operations.
pub type Result<T> = std::result::Result<T, IndexError>;

/// An open index.
pub struct Index {
    db: DB,
    path: PathBuf,
    params: IndexParams,
    counters: std::sync::Mutex<Counters>,
    cache: Cache,
}

fn cf_options(name: &str, cache: &Cache, cap: usize) -> Options {
    let mut o = Options::default();
    let mut t = BlockBasedOptions::default();
    t.set_block_cache(cache);
    t.set_cache_index_and_filter_blocks(true);
    // Charged to the cache but held by the table readers: a lookup does not go through
    // the cache for them (measured: a tenth less CPU in a later 100k-page sweep, where
    // every new doc looks up ~75 posting values in every sorted run).
    t.set_pin_l0_filter_and_index_blocks_in_cache(true);
    t.set_pin_top_level_index_and_filter(true);
    if matches!(
        name,
        cf::POSTINGS
            | cf::FINGERPRINTS
            | cf::PAYLOADS
            | cf::SKETCHES
            | cf::DOCS
            | cf::PARENTS
            | cf::URL_LAST
    ) {
        // Point lookups, most of them misses for new content: full-key bloom filters, in
        // the SST files and in the memtable (a miss then costs no skip-list search).
        t.set_bloom_filter(10.0, false);
        o.set_memtable_whole_key_filtering(true);
        o.set_memtable_prefix_bloom_ratio(0.1);
        // A hash table in each data block: a point lookup finds its key without a
        // binary search over the block's restart points (sweep 5 of the steady 100k
        // corpus, three alternating pairs: 2.7 s less wall time at the median). A
        // partitioned index for postings and sketches was tried and cost 5 s more: each
        // probe then went through the block cache for its partition.
        t.set_data_block_index_type(rocksdb::DataBlockIndexType::BinaryAndHash);
        t.set_data_block_hash_ratio(0.75);
    }
    o.set_block_based_table_factory(&t);
    // Small and hot in upper levels, zstd where most of the data sits.
    o.set_compression_type(DBCompressionType::None);
    o.set_bottommost_compression_type(DBCompressionType::Zstd);
    o.set_level_compaction_dynamic_level_bytes(true);
    if name == cf::SKETCHES || name == cf::TEXTS {
        // Sketch values are uniform hashes and texts are zstd frames already: RocksDB's
        // zstd saved nothing and cost a recompression at each compaction.
        o.set_bottommost_compression_type(DBCompressionType::None);
    }
    if name == cf::POSTINGS {
        o.set_merge_operator_associative("tidemark-postings-v1", move |_k, existing, ops| {
            Some(codec::merge_postings(existing, &mut ops.iter(), cap))
        });
        // Written only by ingesting sorted files (see `postings`), never through the
        // memtable.
        o.set_write_buffer_size(4 << 20);
        // Keys are random 64-bit values, so under levelled compaction every level-0 file
        // overlaps the whole last level and each compaction rewrote all postings (13.6 s
        // of CPU in the fourth 100k-page sweep). Size-tiered ("universal") compaction
        // merges runs of similar size instead: each entry is rewritten O(log n) times.
        // Lists only grow, so there is no space amplification to chase.
        o.set_compaction_style(rocksdb::DBCompactionStyle::Universal);
        let mut u = rocksdb::UniversalCompactOptions::default();
        u.set_max_size_amplification_percent(1000);
        o.set_universal_compaction_options(&u);
        // Uncompressed: zstd was an eighth of compaction CPU, and universal compaction
        // compares run sizes, which only means something when spills (written
        // uncompressed by the writer) and compacted runs are measured alike.
        o.set_bottommost_compression_type(DBCompressionType::None);
    }
    o
}

impl Index {
    /// Opens (or with `create`, creates) the index at `path` for the configuration.
    pub fn open(path: &Path, config: &Config, create: bool) -> Result<Index> {
        Index::open_impl(path, config, create, false)
    }

    /// Opens the index for queries only: no lock is taken, so queries run while an
    /// ingest writes (they see the index as of the open), and many can run at once.
    pub fn open_read_only(path: &Path, config: &Config) -> Result<Index> {
        Index::open_impl(path, config, false, true)
    }

    fn open_impl(path: &Path, config: &Config, create: bool, read_only: bool) -> Result<Index> {
        let exists = path.join("CURRENT").exists();
        if !exists && !create {
            return Err(IndexError::Missing(path.to_path_buf()));
        }
        // Lock-free lookups: the scan workers and the writer hit the cache at once (an
        // LRU cache's shard mutexes were 5% of a later sweep's CPU).
        let cache = Cache::new_hyper_clock_cache(config.index.block_cache_mb << 20, 0);
        let params = IndexParams::from_config(config);
        let cap = params.common_shingle_cap as usize;
        let mut db_opts = Options::default();
        db_opts.create_if_missing(create);
        db_opts.create_missing_column_families(create);
        db_opts.set_max_background_jobs(2);
        // A merge that an ingest waits for at its end runs while nothing else does: split
        // it over both cores.
        db_opts.set_max_subcompactions(2);
        db_opts.set_max_open_files(512);
        // All memtables together stay under one budget, whatever the number of column
        // families: memory is bounded by configuration, not by the index.
        db_opts.set_db_write_buffer_size(config.index.write_buffer_mb << 20);
        // One writer thread: no concurrent memtable writes to coordinate.
        db_opts.set_allow_concurrent_memtable_write(false);
        let descriptors: Vec<ColumnFamilyDescriptor> = cf::ALL
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(*n, cf_options(n, &cache, cap)))
            .collect();
        if exists {
            let present = DB::list_cf(&Options::default(), path)?;
            if !present.iter().any(|c| c == cf::META) {
                return Err(IndexError::NotOurs(path.to_path_buf()));
            }
            if read_only {
                if let Some(missing) = cf::ALL.iter().find(|n| !present.iter().any(|c| c == *n)) {
                    return Err(IndexError::Invalid(format!(
                        "the index at {} has no column family {missing:?} (written by an older build); run an ingest on it with this build first, or ingest into a new --db",
                        path.display()
                    )));
                }
            }
        }
        let db = if read_only {
            DB::open_cf_descriptors_read_only(&db_opts, path, descriptors, false)?
        } else {
            DB::open_cf_descriptors(&db_opts, path, descriptors).map_err(|e| {
                if e.as_ref().contains("While lock file") {
                    IndexError::Busy(path.to_path_buf())
                } else {
                    IndexError::Db(e)
                }
            })?
        };
        let meta = db.cf_handle(cf::META).expect("meta column family");
        let version = db.get_cf(meta, b"schema_version")?;
        let index = Index {
            db,
            path: path.to_path_buf(),
            params: params.clone(),
            counters: Default::default(),
            cache: cache.clone(),
        };
        // A directory RocksDB created but that never got our meta (a first run killed
        // in between) is empty: initialize it. Anything else without a version is not ours.
        let empty = cf::ALL.iter().all(|n| {
            let mut ro = rocksdb::ReadOptions::default();
            ro.set_total_order_seek(true);
            index
                .db
                .iterator_cf_opt(index.cf(n), ro, rocksdb::IteratorMode::Start)
                .next()
                .is_none()
        });
        match version {
            None if exists && !(create && empty) => {
                return Err(IndexError::NotOurs(path.to_path_buf()))
            }
            None => {
                index.set_counters(Counters {
                    next_doc: 1,
                    threshold: config.cluster.threshold,
                });
                let meta = index.cf(cf::META);
                let mut b = rocksdb::WriteBatch::default();
                b.put_cf(meta, b"schema_version", SCHEMA_VERSION.to_be_bytes());
                b.put_cf(meta, b"params", encode(&params));
                b.put_cf(meta, b"counters", encode(&index.counters()));
                index.db.write(b)?;
            }
            Some(v) => {
                let found = u32::from_be_bytes(
                    v.as_slice()
                        .try_into()
                        .map_err(|_| IndexError::NotOurs(path.to_path_buf()))?,
                );
                if found != SCHEMA_VERSION {
                    return Err(IndexError::Version {
                        path: path.to_path_buf(),
                        found,
                    });
                }
                let stored: IndexParams = index
                    .get_value(cf::META, b"params")?
                    .ok_or(IndexError::NotOurs(path.to_path_buf()))?;
                let diffs = stored.differences(&params);
                if !diffs.is_empty() {
                    return Err(IndexError::Params {
                        path: path.to_path_buf(),
                        diffs,
                    });
                }
                index.set_counters(index.get_value(cf::META, b"counters")?.unwrap_or_default());
            }
        }
        Ok(index)
    }

    /// Where the index lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The parameters it was built with.
    pub fn params(&self) -> &IndexParams {
        &self.params
    }

    /// Counters (next doc id, current threshold).
    pub fn counters(&self) -> Counters {
        self.counters.lock().expect("counters lock").clone()
    }

    /// Options of the `postings` column family (for writing its files).
    pub(crate) fn postings_options(&self) -> Options {
        cf_options(
            cf::POSTINGS,
            &self.cache,
            self.params.common_shingle_cap as usize,
        )
    }

    pub(crate) fn cf(&self, name: &'static str) -> &ColumnFamily {
        self.db
            .cf_handle(name)
            .expect("column families are created at open")
    }

    pub(crate) fn db(&self) -> &DB {
        &self.db
    }

    pub(crate) fn get_value<T: serde::de::DeserializeOwned>(
        &self,
        cf_name: &'static str,
        key: &[u8],
    ) -> Result<Option<T>> {
        match self.db.get_cf(self.cf(cf_name), key)? {
            None => Ok(None),
            Some(v) => decode(&v)
                .map(Some)
                .map_err(|comment| IndexError::Corruption {
                    cf: cf_name,
                    comment,
                }),
        }
    }

    /// Number of docs.
    pub fn doc_count(&self) -> u64 {
        self.counters().next_doc.saturating_sub(1)
    }

    /// The sketch of a doc.
    pub fn sketch(&self, doc: u64) -> Result<Option<Sketch>> {
        match self.db.get_cf(self.cf(cf::SKETCHES), u64_key(doc))? {
            None => Ok(None),
            Some(v) => {
                codec::unpack_sketch(&v)
                    .map(Some)
                    .map_err(|comment| IndexError::Corruption {
                        cf: cf::SKETCHES,
                        comment,
                    })
            }
        }
    }

    /// Facts about a doc.
    pub fn doc(&self, doc: u64) -> Result<Option<DocInfo>> {
        self.get_value(cf::DOCS, &u64_key(doc))
    }

    /// Every sweep, by id.
    pub fn sweeps(&self) -> Result<Vec<(u32, SweepInfo)>> {
        let mut out = Vec::new();
        for item in self
            .db
            .iterator_cf(self.cf(cf::SWEEPS), rocksdb::IteratorMode::Start)
        {
            let (k, v) = item?;
            let id = u32::from_be_bytes(<[u8; 4]>::try_from(&k[..]).map_err(|_| {
                IndexError::Corruption {
                    cf: cf::SWEEPS,
                    comment: format!("key {} has {} bytes, not 4", unionfind::hex(&k), k.len()),
                }
            })?);
            let info: SweepInfo = decode(&v).map_err(|comment| IndexError::Corruption {
                cf: cf::SWEEPS,
                comment: format!("sweep {id}: {comment}"),
            })?;
            out.push((id, info));
        }
        Ok(out)
    }

    /// Bytes of SST files of each column family (call [`Index::flush`] first to count
    /// what is still in memtables).
    pub fn cf_sizes(&self) -> Vec<(&'static str, u64)> {
        cf::ALL.iter().map(|n| (*n, self.cf_size(n))).collect()
    }

    /// Bytes of write-ahead log files: writes not yet flushed to SST files (an ingest
    /// flushes at its end, so this is zero unless one was killed or is running).
    pub fn wal_size(&self) -> u64 {
        std::fs::read_dir(&self.path)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// Bytes of SST files of one column family.
    pub fn cf_size(&self, name: &'static str) -> u64 {
        self.db
            .property_int_value_cf(self.cf(name), "rocksdb.total-sst-files-size")
            .ok()
            .flatten()
            .unwrap_or(0)
    }

    /// Estimates of `sketch` against the stored sketch of each of `docs` (ascending), read
    /// in one batch and compared without unpacking: `(doc, estimate)` with the doc as `a`
    /// (so `containment_a_in_b` is the doc's containment in `sketch`). Docs without a
    /// stored sketch are left out.
    pub fn estimates(&self, docs: &[u64], sketch: &Sketch) -> Result<Vec<(u64, Estimate)>> {
        let keys: Vec<[u8; 8]> = docs.iter().map(|d| u64_key(*d)).collect();
        let scf = self.cf(cf::SKETCHES);
        let mut out = Vec::with_capacity(docs.len());
        for (d, res) in docs
            .iter()
            .zip(self.db.batched_multi_get_cf(scf, keys.iter(), true))
        {
            let Some(packed) = res? else { continue };
            let Some(level) = codec::packed_level(&packed) else {
                return Err(IndexError::Corruption {
                    cf: cf::SKETCHES,
                    comment: format!("bad sketch of doc {d}"),
                });
            };
            let level = level.max(sketch.level);
            out.push((
                *d,
                estimate_sorted(
                    codec::packed_values_at(&packed, level),
                    sketch.at_level(level),
                ),
            ));
        }
        Ok(out)
    }

    /// Every capture whose key starts with `prefix` (a SURT ‖ 0x00, optionally followed
    /// by a timestamp), in key order, with its key.
    pub(crate) fn captures_with_prefix(
        &self,
        prefix: &[u8],
    ) -> Result<Vec<(Box<[u8]>, codec::CaptureInfo)>> {
        let mut out = Vec::new();
        for item in self.db.iterator_cf(
            self.cf(cf::CAPTURES),
            rocksdb::IteratorMode::From(prefix, rocksdb::Direction::Forward),
        ) {
            let (k, v) = item?;
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k, decode_capture(&v)?));
        }
        Ok(out)
    }

    /// Calls `each` with every capture from the key `start` on (below `end`), or with
    /// `reverse` from the last key before `start` backwards (down to `end`), until it
    /// returns `Ok(false)`. The bound lets RocksDB stop at the range's end instead of
    /// positioning every sorted run past it.
    pub(crate) fn scan_captures(
        &self,
        start: &[u8],
        end: &[u8],
        reverse: bool,
        mut each: impl FnMut(&[u8], codec::CaptureInfo) -> Result<bool>,
    ) -> Result<()> {
        let mut ro = rocksdb::ReadOptions::default();
        let dir = if reverse {
            ro.set_iterate_lower_bound(end.to_vec());
            rocksdb::Direction::Reverse
        } else {
            ro.set_iterate_upper_bound(end.to_vec());
            rocksdb::Direction::Forward
        };
        for item in self.db.iterator_cf_opt(
            self.cf(cf::CAPTURES),
            ro,
            rocksdb::IteratorMode::From(start, dir),
        ) {
            let (k, v) = item?;
            if !each(&k, decode_capture(&v)?)? {
                break;
            }
        }
        Ok(())
    }

    /// Whether any doc's text is stored (`index.store_texts` at ingest): `history` can
    /// then show word-level diffs.
    pub fn has_texts(&self) -> bool {
        self.db
            .iterator_cf(self.cf(cf::TEXTS), rocksdb::IteratorMode::Start)
            .next()
            .is_some()
    }

    /// Flushes memtables to SST files (so sizes on disk are real).
    pub fn flush(&self) -> Result<()> {
        for n in cf::ALL {
            self.db.flush_cf(self.cf(n))?;
        }
        Ok(())
    }

    pub(crate) fn set_counters(&self, c: Counters) {
        *self.counters.lock().expect("counters lock") = c;
    }
}

/// Decodes a `captures` value; bad bytes are corruption of that column family.
pub(crate) fn decode_capture(v: &[u8]) -> Result<codec::CaptureInfo> {
    decode(v).map_err(|comment| IndexError::Corruption {
        cf: cf::CAPTURES,
        comment,
    })
}

/// Reads a doc id value (8 bytes BE).
pub(crate) fn doc_value(v: &[u8]) -> Option<u64> {
    (v.len() >= 8).then(|| read_u64(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index with one damaged value or key in `name`, written behind the writer's back.
    fn damaged(name: &'static str, key: &[u8], value: &[u8]) -> (tempfile::TempDir, Index) {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("db"), &Config::default(), true).unwrap();
        index.db().put_cf(index.cf(name), key, value).unwrap();
        (dir, index)
    }

    fn corruption_of<T: std::fmt::Debug>(r: Result<T>, want: &str) -> String {
        match r {
            Err(IndexError::Corruption { cf, comment }) => {
                assert_eq!(cf, want);
                comment
            }
            other => panic!("expected corruption of {want}, got {other:?}"),
        }
    }

    #[test]
    fn damaged_keys_and_values_are_corruption_errors_not_panics() {
        let (_d, i) = damaged(cf::SWEEPS, b"xy", b"");
        assert!(corruption_of(i.sweeps(), cf::SWEEPS).contains("key 7879"));
        let (_d, i) = damaged(cf::SWEEPS, &7u32.to_be_bytes(), &[1, 0xff]);
        assert!(corruption_of(i.sweeps(), cf::SWEEPS).contains("sweep 7"));
        for v in [&[][..], &[1, 2, 3][..], &[0; 23][..]] {
            let (_d, i) = damaged(cf::PARENTS, &5u64.to_be_bytes(), v);
            assert!(corruption_of(query::stats(&i), cf::PARENTS).contains("doc 5"));
            assert!(corruption_of(unionfind::node(&i, 5), cf::PARENTS).contains("doc 5"));
        }
        let (_d, i) = damaged(cf::PARENTS, b"abc", &[0; 24]);
        assert!(corruption_of(query::stats(&i), cf::PARENTS).contains("key 616263"));
        let edge = codec::encode(&codec::EdgeInfo {
            resemblance: 0.9,
            contain_lo_in_hi: 0.9,
            contain_hi_in_lo: 0.9,
        });
        let (_d, mut i) = damaged(cf::EDGES, b"short", &edge);
        assert!(corruption_of(query::recluster(&mut i, 0.5), cf::EDGES).contains("key 73686f7274"));
    }
}
