//! The index: RocksDB column families holding sweeps, files, fingerprints, docs,
//! sketches, postings, dated captures, edges and the union-find of clusters.
//!
//! The rest of the crate talks to [`Index`] and the typed handles of its column families
//! ([`columns`], one file per family); RocksDB is named only inside this module. The
//! layout is documented, versioned, in `schema/README.md`; [`Index::open`] refuses an
//! index of another schema version or built with other sketch parameters.

pub mod budget;
pub mod candidates;
pub mod codec;
pub mod columns;
mod compactions;
pub mod postings;
pub mod sketch_cache;
pub mod snapshots;
pub mod texts;
pub mod unionfind;
pub mod upgrade;

use std::path::{Path, PathBuf};

use rocksdb::{Cache, ColumnFamily, ColumnFamilyDescriptor, Options, DB};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::sketch::{Sketch, SKETCH_SCHEME};
use codec::DocInfo;
use columns::{Batch, Col, Column, Tuning};

/// Version of the on-disk layout this build reads and writes. 18: each sweep's links by
/// the page linked (`inbound`) and its anchor texts naming several pages
/// (`anchor_targets`); 17: pages' links and anchor bags; 14: with edges on content
/// a sweep's new docs are committed as read and paired after its templates (`unpaired`);
/// 16: a `sweep_pages` key ends with its capture's file and record; 15: SURT keys as
/// Python's `surt` (pywb's) writes them; 14: a sweep committed in two stages; 13: with
/// edges on content
/// a sweep's new docs name its own templates, and revisits are no template sample; 12:
/// edges on content resemblance; 11: hosts' templates per
/// sweep and content resemblance to the previous capture; 10: postings in runs of
/// their own beside RocksDB (`postings/`); 9: sketches stored
/// against a like older doc's; 8: posting keys of 48
/// bits; 7: packed sketches Rice-coded; 6: a doc's edges one value; 5: compact sketch
/// values (each version's reasons in `schema/README.md`).
pub const SCHEMA_VERSION: u32 = 18;

/// Column family names (the marker types in [`columns`] hold them).
pub mod cf {
    pub use super::columns::ALL;
    use super::columns::*;
    use super::Column;
    /// `meta`.
    pub const META: &str = meta::Meta::NAME;
    /// `sweeps`.
    pub const SWEEPS: &str = sweeps::Sweeps::NAME;
    /// `files`.
    pub const FILES: &str = files::Files::NAME;
    /// `fingerprints`.
    pub const FINGERPRINTS: &str = fingerprints::Fingerprints::NAME;
    /// `payloads`.
    pub const PAYLOADS: &str = payloads::Payloads::NAME;
    /// `docs`.
    pub const DOCS: &str = docs::Docs::NAME;
    /// `sketches`.
    pub const SKETCHES: &str = sketches::Sketches::NAME;
    /// `captures`.
    pub const CAPTURES: &str = captures::Captures::NAME;
    /// `doc_captures`.
    pub const DOC_CAPTURES: &str = doc_captures::DocCaptures::NAME;
    /// `url_last`.
    pub const URL_LAST: &str = url_last::UrlLast::NAME;
    /// `edges`.
    pub const EDGES: &str = edges::Edges::NAME;
    /// `parents`.
    pub const PARENTS: &str = parents::Parents::NAME;
    /// `members`.
    pub const MEMBERS: &str = members::Members::NAME;
    /// `host_sweeps`.
    pub const HOST_SWEEPS: &str = host_sweeps::HostSweeps::NAME;
    /// `templates`.
    pub const TEMPLATES: &str = templates::Templates::NAME;
    /// `template_values`.
    pub const TEMPLATE_VALUES: &str = template_values::TemplateValues::NAME;
    /// `sweep_pages`.
    pub const SWEEP_PAGES: &str = sweep_pages::SweepPages::NAME;
    /// `texts`.
    pub const TEXTS: &str = texts::Texts::NAME;
    /// `unpaired`.
    pub const UNPAIRED: &str = unpaired::Unpaired::NAME;
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
    /// What edges compare: all shingles or content.
    pub resemblance: crate::config::Resemblance,
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
            resemblance: c.cluster.resemblance,
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
        cmp!(resemblance, "cluster");
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
#[derive(Debug, Clone, thiserror::Error)]
pub enum IndexError {
    /// No index at the path (and not creating one).
    #[error("no tidemark index at {0} (create one with `tidemark ingest --db {0} …`)")]
    Missing(PathBuf),
    /// Another schema version.
    #[error("the index at {} has schema version {found}; this tidemark reads version {SCHEMA_VERSION}: {}", path.display(), upgrade::advice(*found, path))]
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
    /// The device holding the index is full.
    #[error("no space left on the device holding the index ({0}): free some space and run the same command again; an ingest continues from its last committed batch of records")]
    NoSpace(String),
    /// tidemark itself failed on an input (a bug: a worker panicked on a record).
    #[error("{0}")]
    Failed(String),
    /// A read stopped by its budget ([`budget`]): its deadline, its rows or its cancel.
    #[error("{0}")]
    OverBudget(String),
    /// RocksDB failed.
    #[error("RocksDB: {0}")]
    Db(rocksdb::Error),
}

impl From<rocksdb::Error> for IndexError {
    fn from(e: rocksdb::Error) -> Self {
        let text = e.to_string();
        if e.kind() == rocksdb::ErrorKind::Corruption {
            // Damage below the values: a checksum that does not match, a file cut short.
            return IndexError::Corruption {
                cf: "the index's files",
                comment: text,
            };
        }
        if text.contains("No space left on device") {
            // RocksDB repeats itself: keep its first sentence (which file, which write).
            let first = text.split(": IO error").next().unwrap_or(&text);
            IndexError::NoSpace(first.trim_start_matches("IO error: ").to_string())
        } else {
            IndexError::Db(e)
        }
    }
}

/// Result of index operations.
pub type Result<T> = std::result::Result<T, IndexError>;

/// An open index.
pub struct Index {
    db: DB,
    path: PathBuf,
    params: IndexParams,
    /// How templates are learnt (`[template]`): under access rules a host's templates
    /// are learnt again from the pages a reader may see ([`columns::captures::templates_seen`]).
    template: crate::template::TemplateParams,
    counters: std::sync::Mutex<Counters>,
    /// The families whose automatic compactions are off in this process (the end of an
    /// ingest turns some off; they are on at open).
    pub(crate) compactions_paused: std::sync::Mutex<Vec<&'static str>>,
    /// The stored postings (files beside RocksDB's, [`postings::store`]), once opened.
    postings: std::sync::Mutex<Option<std::sync::Arc<postings::store::Store>>>,
    read_only: bool,
    /// The options of the files of puts at new keys ([`Index::write`]), by family.
    new_key_options: Vec<(&'static str, Options)>,
    /// Files of puts at new keys written so far by this process (their names).
    new_key_files: std::sync::atomic::AtomicU64,
    /// The options of the families whose sweeps are written whole ([`Index::replace_sorted`]).
    sorted_options: Vec<(&'static str, Options)>,
}

/// Whether the RocksDB database at `path` with `families` holds no key at all, looked
/// at read-only (a database that is not ours is never changed).
fn holds_nothing(path: &Path, families: &[String]) -> Result<bool> {
    let db = DB::open_cf_for_read_only(&Options::default(), path, families, false)?;
    Ok(families.iter().all(|n| {
        db.cf_handle(n).is_none_or(|h| {
            db.iterator_cf(h, rocksdb::IteratorMode::Start)
                .next()
                .is_none()
        })
    }))
}

/// The families whose puts at new keys are written as files: keyed by doc id
/// (big-endian), so a new doc's key is above every stored one.
const NEW_KEY_FAMILIES: [&str; 1] = [<columns::sketches::Sketches as Column>::NAME];

/// Families a sweep's entries are written to whole, as one sorted file
/// ([`Index::replace_sorted`]).
const SORTED_FAMILIES: [&str; 2] = [
    <columns::inbound::InboundLinks as Column>::NAME,
    <columns::anchor_targets::AnchorTargets as Column>::NAME,
];

/// Where those files are made, in the index's folder, before RocksDB takes them.
const NEW_KEY_DIR: &str = "new-keys";

/// A batch ready to be applied ([`Index::encode`]): files of puts at new keys, and the
/// rest as one RocksDB batch. Files not applied are removed when it is dropped.
pub struct Encoded {
    files: Vec<(&'static str, PathBuf)>,
    batch: rocksdb::WriteBatch,
}

impl Drop for Encoded {
    fn drop(&mut self) {
        for (_, file) in &self.files {
            let _ = std::fs::remove_file(file);
        }
    }
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

    /// Opens the index for writing also when its schema is an earlier one that
    /// [`upgrade::upgrade`] migrates from (then nothing but the migrations may read it).
    pub(crate) fn open_for_upgrade(path: &Path, config: &Config) -> Result<Index> {
        Index::open_checked(path, config, false, false, Some(upgrade::can_upgrade))
    }

    fn open_impl(path: &Path, config: &Config, create: bool, read_only: bool) -> Result<Index> {
        Index::open_checked(path, config, create, read_only, None)
    }

    /// [`Index::open_impl`], accepting an index of another schema version when
    /// `upgrading` says so (as it is: no parameters, counters or repairs read; the
    /// families of this schema it lacks created, empty, for the migrations to fill).
    fn open_checked(
        path: &Path,
        config: &Config,
        create: bool,
        read_only: bool,
        upgrading: Option<fn(u32) -> bool>,
    ) -> Result<Index> {
        let other_version = upgrading.unwrap_or(|_| false);
        let create_families = create || (upgrading.is_some() && !read_only);
        let exists = path.join("CURRENT").exists();
        if !read_only && path.join(snapshots::FOLLOWER).exists() {
            return Err(IndexError::Invalid(format!(
                "{} is a follower's copy of a primary (serve --follow): ingest into the primary, whose snapshots the follower copies",
                path.display()
            )));
        }
        if !exists && !create {
            return Err(IndexError::Missing(path.to_path_buf()));
        }
        if create && !read_only {
            crate::durable::create_dir_all(path).map_err(|e| {
                IndexError::Invalid(format!("cannot create {}: {e}", path.display()))
            })?;
        }
        // Lock-free lookups: the scan workers and the writer hit the cache at once (an
        // LRU cache's shard mutexes were 5% of a later sweep's CPU).
        let cache = Cache::new_hyper_clock_cache(config.index.block_cache_mb << 20, 0);
        let params = IndexParams::from_config(config);
        let mut db_opts = Options::default();
        db_opts.create_if_missing(create);
        db_opts.create_missing_column_families(create_families);
        // Flushes and compactions on as many threads as the ingest's workers (at least
        // two, as on these 2-core machines): on an index machine with cores to spare the
        // commit's compactions keep up beside its one-thread steps. A merge that an
        // ingest waits for at its end runs while nothing else does: split as widely.
        let jobs = config.threads().max(2);
        db_opts.set_max_background_jobs(jobs as i32);
        db_opts.set_max_subcompactions(jobs as u32);
        db_opts.set_max_open_files(512);
        // All memtables together stay under one budget, whatever the number of column
        // families: memory is bounded by configuration, not by the index.
        db_opts.set_db_write_buffer_size(config.index.write_buffer_mb << 20);
        // One writer thread: no concurrent memtable writes to coordinate.
        db_opts.set_allow_concurrent_memtable_write(false);
        let tuning = Tuning {
            cache: cache.clone(),
        };
        let mut names: Vec<&str> = cf::ALL.to_vec();
        // A family of this schema the index lacks (one of an earlier schema): opened
        // without it, so that the version check below says what to do.
        let mut lacking: Option<&str> = None;
        let mut present_names: Vec<String> = Vec::new();
        if exists {
            let present = DB::list_cf(&Options::default(), path)?;
            if !create_families {
                lacking = cf::ALL
                    .iter()
                    .copied()
                    .find(|n| !present.iter().any(|c| c == n));
                names.retain(|n| present.iter().any(|c| c == n));
            }
            present_names = present;
        }
        let mut descriptors: Vec<ColumnFamilyDescriptor> = names
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(*n, columns::options(n, &tuning)))
            .collect();
        if exists {
            let present = &present_names;
            // Families of older schemas (schema 9's `postings`): opened as they are, so
            // that the version check below names the version.
            if present.iter().any(|c| c == cf::META) {
                for c in present
                    .iter()
                    .filter(|c| *c != "default" && !cf::ALL.contains(&c.as_str()))
                {
                    descriptors.push(ColumnFamilyDescriptor::new(c, Options::default()));
                }
            }
            // RocksDB creates a new database's families one by one after its `default`
            // one: a first ingest killed in between leaves some of ours, or none. That
            // directory is taken up again below when it holds nothing at all.
            let only_ours = present
                .iter()
                .all(|c| c == "default" || cf::ALL.contains(&c.as_str()));
            let ours = present.iter().any(|c| c == cf::META)
                || (create && only_ours && holds_nothing(path, &present)?);
            if !ours {
                return Err(IndexError::NotOurs(path.to_path_buf()));
            }
        }
        let db = if read_only {
            DB::open_cf_descriptors_read_only(&db_opts, path, descriptors, false)?
        } else {
            DB::open_cf_descriptors(&db_opts, path, descriptors).map_err(|e| {
                if e.as_ref().contains("While lock file") {
                    IndexError::Busy(path.to_path_buf())
                } else {
                    IndexError::from(e)
                }
            })?
        };
        // The family's own options (its files as its flushes would make them).
        let new_key_options = NEW_KEY_FAMILIES
            .iter()
            .map(|name| (*name, columns::options(name, &tuning)))
            .collect();
        let sorted_options = SORTED_FAMILIES
            .iter()
            .map(|name| (*name, columns::options(name, &tuning)))
            .collect();
        if !read_only {
            // Files a killed write left before RocksDB took them.
            let _ = std::fs::remove_dir_all(path.join(NEW_KEY_DIR));
        }
        let index = Index {
            db,
            path: path.to_path_buf(),
            params: params.clone(),
            template: config.template,
            counters: Default::default(),
            compactions_paused: Default::default(),
            postings: Default::default(),
            new_key_options,
            new_key_files: Default::default(),
            sorted_options,
            read_only,
        };
        let version = index.meta().schema_version()?;
        // A directory RocksDB created but that never got our meta (a first run killed
        // in between) is empty: initialize it. Anything else without a version is not ours.
        let empty = cf::ALL.iter().all(|n| index.family_is_empty(n));
        match version {
            None if exists && !(create && empty) => {
                return Err(IndexError::NotOurs(path.to_path_buf()))
            }
            None => {
                let c = Counters {
                    next_doc: 1,
                    threshold: config.cluster.threshold,
                };
                let links = columns::meta::LinkParams {
                    window: config.links.window,
                    own_host: config.links.own_host,
                    bag_sample: config.links.bag_sample,
                    from_sweep: 1,
                };
                index.write(columns::meta::initial(
                    &index,
                    SCHEMA_VERSION,
                    &params,
                    &links,
                    &c,
                ))?;
                index.set_counters(c);
            }
            Some(Err(_)) => return Err(IndexError::NotOurs(path.to_path_buf())),
            Some(Ok(found)) => {
                if found != SCHEMA_VERSION && other_version(found) {
                    return Ok(index);
                }
                if found != SCHEMA_VERSION {
                    return Err(IndexError::Version {
                        path: path.to_path_buf(),
                        found,
                    });
                }
                if let Some(cf) = lacking {
                    return Err(IndexError::Corruption {
                        cf,
                        comment: format!(
                            "the index at {} has schema version {found} but no column family {cf:?}",
                            path.display()
                        ),
                    });
                }
                let stored = index
                    .meta()
                    .params()?
                    .ok_or(IndexError::NotOurs(path.to_path_buf()))?;
                let mut diffs = stored.differences(&params);
                let links = index
                    .meta()
                    .link_params()?
                    .ok_or_else(|| IndexError::Corruption {
                        cf: "meta",
                        comment: "no link parameters in an index of this schema".into(),
                    })?;
                if links.window != config.links.window {
                    diffs.push(format!(
                        "links.window is {} in the index but {} in the configuration",
                        links.window, config.links.window
                    ));
                }
                if links.own_host != config.links.own_host {
                    diffs.push(format!(
                        "links.own_host is {} in the index but {} in the configuration",
                        links.own_host, config.links.own_host
                    ));
                }
                if links.bag_sample != config.links.bag_sample {
                    diffs.push(format!(
                        "links.bag_sample is {} in the index but {} in the configuration",
                        links.bag_sample, config.links.bag_sample
                    ));
                }
                if !diffs.is_empty() {
                    return Err(IndexError::Params {
                        path: path.to_path_buf(),
                        diffs,
                    });
                }
                index.set_counters(index.meta().counters()?.unwrap_or_default());
                // A writer repairs a postings mark past the docs now, before anything
                // rebuilds the fresh lists from it.
                let next_doc = index.counters().next_doc;
                if !read_only && index.postings_mark()? > next_doc {
                    index.postings_store()?;
                }
                if let Some(t) = index.meta().recluster_pending()? {
                    if read_only {
                        return Err(IndexError::Failed(format!(
                            "a `recluster` at {t} was interrupted in {}: its clusters are \
                             incomplete; run `tidemark recluster --threshold {t}` (or any \
                             command that writes the index) to finish it",
                            path.display()
                        )));
                    }
                    eprintln!(
                        "tidemark: a `recluster` at {t} was interrupted: rebuilding the \
                         clusters at {t} first"
                    );
                    unionfind::recluster(&index, t)?;
                }
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

    /// How templates are learnt (the configuration's `[template]`).
    pub fn template_params(&self) -> &crate::template::TemplateParams {
        &self.template
    }

    /// Counters (next doc id, current threshold).
    pub fn counters(&self) -> Counters {
        self.counters.lock().expect("counters lock").clone()
    }

    pub(crate) fn cf(&self, name: &'static str) -> &ColumnFamily {
        self.db
            .cf_handle(name)
            .expect("column families are created at open")
    }

    /// A copy of the index as it is now at `to` (which must not exist): a RocksDB
    /// checkpoint (hard links to the immutable SST files, a copy of the small manifest)
    /// and links to the postings runs (copies onto another file system).
    pub fn checkpoint(&self, to: &Path) -> Result<()> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)?.create_checkpoint(to)?;
        self.postings_store()?.link_into(&to.join(postings::DIR))
    }

    pub(crate) fn db(&self) -> &DB {
        &self.db
    }

    fn family_is_empty(&self, name: &'static str) -> bool {
        let Some(handle) = self.db.cf_handle(name) else {
            return true;
        };
        let mut ro = rocksdb::ReadOptions::default();
        ro.set_total_order_seek(true);
        self.db
            .iterator_cf_opt(handle, ro, rocksdb::IteratorMode::Start)
            .next()
            .is_none()
    }

    /// Applies a batch of writes to several families: its puts at new keys
    /// ([`Batch::put_new_raw`]) first, each family's as one sorted file that RocksDB
    /// takes in whole (no log, no memtable: a sweep's new sketches were a third of the
    /// writing thread's CPU, rd100k first sweep with `--pairs-later`: 1.65 → 1.2 s
    /// without them); then the rest at once, with the resume points and counters that
    /// say those keys are written. A write killed between the two leaves keys above
    /// the stored counter, which the next ingest drops first
    /// ([`Index::drop_new_keys_from`]). [`Index::encode`] then [`Index::apply`], which
    /// an ingest runs on two threads.
    pub fn write(&self, batch: Batch) -> Result<()> {
        self.apply(self.encode(batch)?)
    }

    /// A batch made ready to apply: its files of puts at new keys written, the rest
    /// sorted into one RocksDB batch. Nothing in the index changes.
    pub fn encode(&self, batch: Batch) -> Result<Encoded> {
        let mut out = Encoded {
            files: Vec::new(),
            batch: rocksdb::WriteBatch::default(),
        };
        let mut fallback = Vec::new();
        for (family, puts, ascending) in batch.new_puts() {
            let options = self.new_key_options.iter().find(|(f, _)| *f == family);
            match options {
                Some((_, o)) if ascending => {
                    let file = self.sorted_file(family, o, &puts)?;
                    out.files.push((family, file));
                }
                _ => fallback.push((family, puts)),
            }
        }
        out.batch = batch.sorted(self);
        for (family, puts) in fallback {
            for (k, v) in puts {
                out.batch.put_cf(self.cf(family), k, v);
            }
        }
        Ok(out)
    }

    /// Applies an encoded batch ([`Index::encode`]): RocksDB takes its files, then its
    /// batch. Its files' own paths go when it is dropped (RocksDB links what it takes).
    pub fn apply(&self, mut encoded: Encoded) -> Result<()> {
        for (family, file) in &encoded.files {
            let mut io = rocksdb::IngestExternalFileOptions::default();
            io.set_move_files(true);
            (self.db).ingest_external_file_cf_opts(self.cf(family), &io, vec![file])?;
        }
        self.db.write(std::mem::take(&mut encoded.batch))?;
        Ok(())
    }

    /// Writes `puts` (ascending keys) of `family` as one sorted file in the index's
    /// folder, for RocksDB to take (moved into the database, below every level it
    /// overlaps none of).
    fn sorted_file(
        &self,
        family: &'static str,
        o: &Options,
        puts: &[(&[u8], &[u8])],
    ) -> Result<PathBuf> {
        let file = self.new_file_path(family)?;
        let mut w = rocksdb::SstFileWriter::create(o);
        let written = (|| {
            w.open(&file)?;
            for (k, v) in puts {
                w.put(k, v)?;
            }
            w.finish()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&file);
            return Err(e.into());
        }
        Ok(file)
    }

    /// A path for a new sorted file of `family`, unique in this process, in the index's
    /// folder (removed at the next open if RocksDB has not taken it).
    fn new_file_path(&self, family: &str) -> Result<PathBuf> {
        let dir = self.path.join(NEW_KEY_DIR);
        std::fs::create_dir_all(&dir)
            .map_err(|e| IndexError::Invalid(format!("{}: {e}", dir.display())))?;
        let n = (self.new_key_files).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(dir.join(format!("{family}-{n}.sst")))
    }

    /// Replaces the keys of `family` from `from` (up to `to`) by the puts `fill` makes, in
    /// ascending key order: a range deletion, then one sorted file RocksDB takes whole (no
    /// log, no memtable, no compaction to come: a generated sweep's million linked URLs
    /// written through a batch took seconds and 56 MB). Killed between the two, the range
    /// is empty.
    pub(crate) fn replace_sorted(
        &self,
        family: &'static str,
        (from, to): (&[u8], &[u8]),
        fill: impl FnOnce(&mut dyn FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        let Some((_, o)) = self.sorted_options.iter().find(|(f, _)| *f == family) else {
            return Err(IndexError::Invalid(format!(
                "{family} is not written whole"
            )));
        };
        self.db.delete_range_cf(self.cf(family), from, to)?;
        let file = self.new_file_path(family)?;
        let mut w = rocksdb::SstFileWriter::create(o);
        let mut puts = 0u64;
        let written = (|| {
            w.open(&file)?;
            fill(&mut |k, v| {
                puts += 1;
                Ok(w.put(k, v)?)
            })?;
            if puts > 0 {
                w.finish()?;
                let mut io = rocksdb::IngestExternalFileOptions::default();
                io.set_move_files(true);
                (self.db).ingest_external_file_cf_opts(self.cf(family), &io, vec![&file])?;
            }
            Ok(())
        })();
        let _ = std::fs::remove_file(&file);
        written
    }

    /// Drops the keys of new docs from `next_doc` on that a killed write left in the
    /// families written as files ([`Index::write`]): the counter it did not store says
    /// they are not in the index, and the docs that get those ids write them again.
    pub(crate) fn drop_new_keys_from(&self, next_doc: u64) -> Result<()> {
        for (family, _) in &self.new_key_options {
            let from = next_doc.to_be_bytes();
            let mut it = self.db.raw_iterator_cf(self.cf(family));
            it.seek(from);
            if it.valid() {
                self.db
                    .delete_range_cf(self.cf(family), from, u64::MAX.to_be_bytes())?;
            }
            it.status()?;
        }
        Ok(())
    }

    /// `meta`: schema version, parameters, counters, the texts' dictionary.
    pub fn meta(&self) -> Col<'_, columns::meta::Meta> {
        Col::new(self)
    }

    /// `sweeps`: sweep id → label, date, counts.
    pub fn sweeps(&self) -> Col<'_, columns::sweeps::Sweeps> {
        Col::new(self)
    }

    /// `files`: file identity → its sweep, number, name and resume point.
    pub fn files(&self) -> Col<'_, columns::files::Files> {
        Col::new(self)
    }

    /// `fingerprints`: canonical-text fingerprint → doc id.
    pub fn fingerprints(&self) -> Col<'_, columns::fingerprints::Fingerprints> {
        Col::new(self)
    }

    /// `payloads`: payload digest → doc id.
    pub fn payloads(&self) -> Col<'_, columns::payloads::Payloads> {
        Col::new(self)
    }

    /// `docs`: doc id → doc facts.
    pub fn docs(&self) -> Col<'_, columns::docs::Docs> {
        Col::new(self)
    }

    /// `sketches`: doc id → packed sketch.
    pub fn sketches(&self) -> Col<'_, columns::sketches::Sketches> {
        Col::new(self)
    }

    /// The stored postings as they are now (opened at first use): the runs and mark.
    pub fn postings_store(&self) -> Result<std::sync::Arc<postings::store::Store>> {
        let mut s = self
            .postings
            .lock()
            .map_err(|_| IndexError::Invalid("postings lock".into()))?;
        if let Some(s) = &*s {
            return Ok(s.clone());
        }
        let dir = self.path.join(postings::DIR);
        let mut store = postings::store::Store::open(&dir, !self.read_only)?;
        // The mark never passes the docs the index holds; a power cut between a spill
        // and the sync of RocksDB's log could once leave it so.
        let next_doc = self.counters().next_doc;
        if store.mark() > next_doc {
            if self.read_only {
                return Err(IndexError::Corruption {
                    cf: postings::DIR,
                    comment: format!(
                        "the postings' mark ({}) is past the index's next doc ({next_doc}): \
                         a write was lost; any command that writes the index (`tidemark \
                         ingest`, `tidemark recluster`) repairs it",
                        store.mark()
                    ),
                });
            }
            eprintln!(
                "tidemark: the postings' mark ({}) was past the index's next doc ({next_doc}) \
                 (a write lost in a power cut): the runs past it are dropped, their docs' \
                 postings rebuilt from the sketches",
                store.mark()
            );
            store = store.truncated(next_doc)?;
        }
        let store = std::sync::Arc::new(store);
        *s = Some(store.clone());
        Ok(store)
    }

    /// First doc id whose postings are not stored (read from the manifest when the runs
    /// are not open: queries that never look postings up do not open them).
    pub fn postings_mark(&self) -> Result<u64> {
        if let Some(s) = self.postings.lock().ok().and_then(|s| s.clone()) {
            return Ok(s.mark());
        }
        postings::store::mark_of(&self.path.join(postings::DIR))
    }

    /// Makes `store` the postings (after a spill or merge wrote its manifest).
    pub(crate) fn set_postings_store(&self, store: postings::store::Store) {
        if let Ok(mut s) = self.postings.lock() {
            *s = Some(std::sync::Arc::new(store));
        }
    }

    /// `captures`: SURT ‖ timestamp ‖ sweep ‖ file ‖ record → capture.
    pub fn captures(&self) -> Col<'_, columns::captures::Captures> {
        Col::new(self)
    }

    /// `doc_captures`: doc ‖ capture key tail → SURT.
    pub fn doc_captures(&self) -> Col<'_, columns::doc_captures::DocCaptures> {
        Col::new(self)
    }

    /// `templates`: host ‖ sweep → the host's template in that sweep.
    pub fn templates(&self) -> Col<'_, columns::templates::Templates> {
        Col::new(self)
    }

    /// `template_values`: template id → its values.
    pub fn template_values(&self) -> Col<'_, columns::template_values::TemplateValues> {
        Col::new(self)
    }

    /// `sweep_pages`: sweep ‖ host ‖ URL hash ‖ timestamp ‖ file ‖ record → a sampled or
    /// changed page.
    pub fn sweep_pages(&self) -> Col<'_, columns::sweep_pages::SweepPages> {
        Col::new(self)
    }

    /// `url_last`: SURT → latest capture with content.
    pub fn url_last(&self) -> Col<'_, columns::url_last::UrlLast> {
        Col::new(self)
    }

    /// `links`.
    pub fn links(&self) -> Col<'_, columns::links::Links> {
        Col::new(self)
    }

    /// `anchor_bags`.
    pub fn anchor_bags(&self) -> Col<'_, columns::anchor_bags::AnchorBags> {
        Col::new(self)
    }

    /// `inbound`.
    pub fn inbound(&self) -> Col<'_, columns::inbound::InboundLinks> {
        Col::new(self)
    }

    /// `anchor_targets`.
    pub fn anchor_targets(&self) -> Col<'_, columns::anchor_targets::AnchorTargets> {
        Col::new(self)
    }

    /// How the index keeps links (an index of this schema always has them).
    pub fn link_params(&self) -> Result<columns::meta::LinkParams> {
        self.meta()
            .link_params()?
            .ok_or_else(|| IndexError::Corruption {
                cf: "meta",
                comment: "no link parameters in an index of this schema".into(),
            })
    }

    /// `edges`: newer doc → its edges (older doc, resemblance and containments).
    pub fn edges(&self) -> Col<'_, columns::edges::Edges> {
        Col::new(self)
    }

    /// `parents`: doc id → union-find node.
    pub fn parents(&self) -> Col<'_, columns::parents::Parents> {
        Col::new(self)
    }

    /// `members`: root ‖ member → (cluster listings).
    pub fn members(&self) -> Col<'_, columns::members::Members> {
        Col::new(self)
    }

    /// `host_sweeps`: host ‖ sweep → (which sweeps captured a host).
    pub fn host_sweeps(&self) -> Col<'_, columns::host_sweeps::HostSweeps> {
        Col::new(self)
    }

    /// `texts`: doc id → compressed canonical text.
    pub fn texts(&self) -> Col<'_, columns::texts::Texts> {
        Col::new(self)
    }

    /// `unpaired`: doc id → its sweep and URL, while its pairs wait for the sweep's
    /// templates.
    pub fn unpaired(&self) -> Col<'_, columns::unpaired::Unpaired> {
        Col::new(self)
    }

    /// Number of docs.
    pub fn doc_count(&self) -> u64 {
        self.counters().next_doc.saturating_sub(1)
    }

    /// The sketch of a doc, its values reduced as every estimate compares them
    /// ([`Sketch::reduced`]).
    pub fn sketch(&self, doc: u64) -> Result<Option<Sketch>> {
        Ok(self.sketches().whole(doc)?.map(|s| s.sketch()))
    }

    /// A doc's posting level and posting values (as the keys of its lists), as
    /// the candidate search takes them.
    pub fn posting_values(&self, doc: u64) -> Result<Option<(u8, Vec<u64>)>> {
        Ok(self
            .sketches()
            .whole(doc)?
            .map(|s| (s.posting_level, s.posting)))
    }

    /// Facts about a doc.
    pub fn doc(&self, doc: u64) -> Result<Option<DocInfo>> {
        self.docs().get(&doc)
    }

    /// Bytes of SST files of each column family (call [`Index::flush`] first to count
    /// what is still in memtables).
    pub fn cf_sizes(&self) -> Vec<(&'static str, u64)> {
        let mut sizes: Vec<(&'static str, u64)> =
            cf::ALL.iter().map(|n| (*n, self.cf_size(n))).collect();
        // The postings' runs, where the family of that name was (schema 9).
        let at = cf::ALL
            .iter()
            .position(|n| *n == cf::SKETCHES)
            .map_or(0, |p| p + 1);
        let runs = self.postings_store().map_or(0, |s| s.bytes());
        sizes.insert(at, (postings::DIR, runs));
        sizes
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

    /// Whether any doc's text is stored (`index.store_texts` at ingest): `history` can
    /// then show word-level diffs.
    pub fn has_texts(&self) -> bool {
        !self.texts().is_empty()
    }

    /// Empties `parents` and `members` (before `recluster` writes them again).
    pub(crate) fn clear_union_find(&self) -> Result<()> {
        let mut b = rocksdb::WriteBatch::default();
        b.delete_range_cf(self.cf(cf::PARENTS), &[0u8; 8][..], &[0xffu8; 9][..]);
        b.delete_range_cf(self.cf(cf::MEMBERS), &[0u8; 16][..], &[0xffu8; 17][..]);
        self.db.write(b)?;
        Ok(())
    }

    /// Flushes memtables to SST files (so sizes on disk are real).
    pub fn flush(&self) -> Result<()> {
        // One request for all families: RocksDB flushes them side by side.
        let cfs: Vec<&ColumnFamily> = cf::ALL.iter().map(|n| self.cf(n)).collect();
        self.db
            .flush_cfs_opt(&cfs, &rocksdb::FlushOptions::default())?;
        Ok(())
    }

    pub(crate) fn set_counters(&self, c: Counters) {
        *self.counters.lock().expect("counters lock") = c;
    }
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

    /// Puts at new keys are written as files RocksDB takes (readable as any put, the
    /// rest of the batch with them), out of order they go through the batch, and what
    /// a killed write leaves above the doc counter is dropped before the next ingest.
    #[test]
    fn puts_at_new_keys_are_written_and_leftovers_dropped() {
        use columns::sketches::Sketches;
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(&dir.path().join("db"), &Config::default(), true).unwrap();
        let raw = |d: u64| -> Option<Vec<u8>> {
            (index.db().get_cf(index.cf(cf::SKETCHES), d.to_be_bytes())).unwrap()
        };
        let mut b = Batch::default();
        for d in [3u64, 4, 9] {
            b.put_new_raw::<Sketches>(&index, &Sketches::key(&d), &[d as u8; 3]);
        }
        b.put_raw::<columns::docs::Docs>(&index, &8u64.to_be_bytes(), b"x");
        index.write(b).unwrap();
        assert_eq!(raw(9), Some(vec![9; 3]));
        assert_eq!(raw(4), Some(vec![4; 3]));
        assert!(!dir
            .path()
            .join("db")
            .join(NEW_KEY_DIR)
            .read_dir()
            .unwrap()
            .any(|_| true));
        // Not ascending: through the batch, the same values.
        let mut b = Batch::default();
        for d in [12u64, 11] {
            b.put_new_raw::<Sketches>(&index, &Sketches::key(&d), &[d as u8; 2]);
        }
        index.write(b).unwrap();
        assert_eq!(raw(11), Some(vec![11; 2]));
        // Docs 0..5 are in the index (the counter says so): 9, 11 and 12 were left.
        index.drop_new_keys_from(5).unwrap();
        assert_eq!(raw(4), Some(vec![4; 3]));
        assert_eq!((raw(9), raw(11), raw(12)), (None, None, None));
    }

    #[test]
    fn damaged_keys_and_values_are_corruption_errors_not_panics() {
        let (_d, i) = damaged(cf::SWEEPS, b"xy", b"");
        assert!(corruption_of(
            i.sweeps().all(&crate::access::Reader::everything()),
            cf::SWEEPS
        )
        .contains("key \"xy\""));
        let (_d, i) = damaged(cf::SWEEPS, &7u32.to_be_bytes(), &[1, 0xff]);
        assert!(corruption_of(
            i.sweeps().all(&crate::access::Reader::everything()),
            cf::SWEEPS
        )
        .contains("key 00000007"));
        for v in [&[][..], &[1, 2, 3][..], &[0; 23][..]] {
            let (_d, i) = damaged(cf::PARENTS, &5u64.to_be_bytes(), v);
            let key5 = "key 0000000000000005";
            assert!(corruption_of(crate::query::summary::stats(&i), cf::PARENTS).contains(key5));
            assert!(corruption_of(unionfind::node(&i, 5), cf::PARENTS).contains(key5));
        }
        let (_d, i) = damaged(cf::PARENTS, &[1, 2, 3], &[0; 24]);
        assert!(corruption_of(crate::query::summary::stats(&i), cf::PARENTS).contains("key 010203"));
        let edge = [0u8; columns::edges::ENTRY];
        let (_d, mut i) = damaged(cf::EDGES, b"short", &edge);
        assert!(
            corruption_of(crate::ingest::recluster::recluster(&mut i, 0.5), cf::EDGES)
                .contains("key \"short\"")
        );
        let (_d, mut i) = damaged(cf::EDGES, &9u64.to_be_bytes(), &edge[..16]);
        assert!(
            corruption_of(crate::ingest::recluster::recluster(&mut i, 0.5), cf::EDGES)
                .contains("key 0000000000000009")
        );
    }
}
