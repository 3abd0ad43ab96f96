//! What every request shares: the snapshot being served, the limits, where WARC files are.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::Semaphore;

use super::error::ApiError;
use crate::access::{Acl, Kept, Learnt, Policy, Reader};
use crate::config::Config;
use crate::index::budget::Budget;
use crate::index::codec::SweepInfo;
use crate::index::columns::sweeps::shown;
use crate::index::snapshots::{self, Lease};
use crate::index::unionfind::ClusterIds;
use crate::index::{Index, IndexError};
use crate::query::{CaptureRow, Prepared, Searcher};

/// Views whose sweeps and learning a snapshot keeps (each small; their learning is
/// weighed in `Learnt`).
const VIEWS_KEPT: u64 = 64;

/// A cache of [`VIEWS_KEPT`] views, the least recently used out first (a new view is
/// always let in: a view refused would learn again on every request).
fn views_kept<V: Clone + Send + Sync + 'static>() -> moka::sync::Cache<String, V> {
    moka::sync::Cache::builder()
        .max_capacity(VIEWS_KEPT)
        .eviction_policy(moka::policy::EvictionPolicy::lru())
        .build()
}

/// One published snapshot, open read-only. Requests hold it (an `Arc`) from their start
/// to their end, so a request sees one snapshot however long it streams.
pub struct Served {
    /// The snapshot's number.
    pub number: u64,
    /// When it was published (its folder's time).
    pub published: std::time::SystemTime,
    /// The index as published: read through a [`Request`], which only a worker slot
    /// makes ([`Request::new`]), or by a report's build ([`Served::index_for_build`]).
    index: Index,
    /// Its sweeps, by id (as a reader who sees everything sees them).
    sweeps: Arc<Vec<(u32, SweepInfo)>>,
    /// The sweeps as each view's readers see them ([`Served::shown_sweeps`]).
    shown: moka::sync::Cache<String, Arc<Vec<(u32, SweepInfo)>>>,
    /// What each view learnt of this snapshot ([`Served::keeping`]), in `learnt`.
    kept: moka::sync::Cache<String, Arc<Kept>>,
    /// What the views learnt, `serve.view_cache_mb` at most in all.
    learnt: Arc<Learnt>,
    /// (sweep id, file number) → the path the file was ingested from.
    pub files: HashMap<(u32, u32), PathBuf>,
    /// What every query over this snapshot shares, read once.
    prepared: Prepared,
    /// `/api/stats` of this snapshot, made by the first request that asks (a scan of
    /// every family: the same answer for every request until the next snapshot).
    pub stats: std::sync::OnceLock<serde_json::Value>,
    /// Where the pages of Wayback CDX queries begin, learnt as they are read: per query
    /// (its parameters but `page`), the first capture key of pages 1, 2, … so far. A
    /// client paging through a large answer reads each page from its start instead of
    /// skipping all the pages before it.
    pub pages: std::sync::Mutex<PageStarts>,
    /// Its change reports, by view and range ([`super::reports`]).
    pub reports: Reports,
    _lease: Lease,
}

impl Served {
    /// The snapshot's folder.
    pub fn path(&self) -> &std::path::Path {
        &self._lease.path
    }

    /// The sweeps `reader` may be told of, dated as it may see them
    /// ([`crate::index::columns::sweeps::shown`]): all of them to a reader who sees
    /// everything (read at open); to a reader under rules, worked out by the first
    /// request of its view (the hosts' first captures, one pass over `host_sweeps`)
    /// and kept for the snapshot's life.
    pub fn shown_sweeps(&self, reader: &Reader) -> Result<Arc<Vec<(u32, SweepInfo)>>, IndexError> {
        if !reader.filtered() {
            return Ok(self.sweeps.clone());
        }
        // Once per snapshot and view (a request asking meanwhile waits for it), whatever
        // the request that asks first may spend: past its deadline it is still kept.
        let shown = || {
            crate::index::budget::Budget::unbounded().run(|| {
                let firsts = self.index.host_sweeps().firsts()?;
                shown(&self.index, &self.sweeps, reader, &firsts).map(Arc::new)
            })
        };
        (self.shown.try_get_with(reader.scoped("sweeps"), shown)).map_err(|e| (*e).clone())
    }

    /// `reader`, keeping what it learns of this snapshot with the others of its view
    /// (hosts' templates learnt from the pages it sees, the docs it sees): learnt once
    /// per snapshot and view, `serve.view_cache_mb` at most for all views.
    pub fn keeping(&self, reader: Reader) -> Reader {
        if !reader.filtered() {
            return reader;
        }
        let kept = (self.kept).get_with(reader.scoped("kept"), || {
            Arc::new(Kept::new(self.learnt.clone()))
        });
        reader.keeping(kept)
    }

    /// Bytes held by what the views learnt of this snapshot and by its reports and
    /// change lists (as weighed).
    pub fn cache_bytes(&self) -> (u64, u64) {
        (self.learnt.weight(), self.reports.bytes() as u64)
    }

    /// How many sweeps it holds.
    pub fn sweep_count(&self) -> usize {
        self.sweeps.len()
    }

    /// The index, for a report's build: once per snapshot and view, one build at a
    /// time for the whole server, on a thread of its own outside the workers
    /// ([`super::reports`]). Requests read it through [`Request::index`].
    pub fn index_for_build(&self) -> &Index {
        &self.index
    }

    fn open(lease: Lease, config: &Config) -> Result<Served, IndexError> {
        let index = Index::open_read_only(&lease.path, config)?;
        // Every sweep: each request's reader filters them ([`Request::shown_sweeps`]).
        let sweeps = Arc::new(index.sweeps().all(&Reader::everything())?);
        let files = (index.files().names_by_number()?.into_iter())
            .map(|(k, name)| (k, PathBuf::from(name)))
            .collect();
        let prepared = Prepared::load(&index)?;
        // The postings' runs are opened (and their checksums checked) here, before the
        // snapshot is served, not by the first request that looks a posting up.
        index.postings_store()?;
        let published = std::fs::metadata(&lease.path)
            .and_then(|m| m.modified())
            .unwrap_or_else(|_| std::time::SystemTime::now());
        Ok(Served {
            number: lease.number,
            published,
            index,
            sweeps,
            // Views come and go with the hour (an embargo's bounds): the last used few
            // are kept.
            shown: views_kept(),
            kept: views_kept(),
            learnt: Arc::new(Learnt::new(config.serve.view_cache_mb << 20)),
            files,
            prepared,
            stats: std::sync::OnceLock::new(),
            pages: Default::default(),
            reports: Default::default(),
            _lease: lease,
        })
    }
}

/// The change reports and change lists of one snapshot, by view and range: each being
/// built (`None`) or built (its answer). Filled and read by [`super::reports`].
#[derive(Default)]
pub struct Reports {
    pub(super) slots: std::sync::Mutex<ReportSlots>,
}

/// The builds of one snapshot: each being built or built, with what a built one weighs
/// and when it was last asked for (the least recently asked go first past
/// `serve.report_cache_mb`).
#[derive(Default)]
pub(super) struct ReportSlots {
    pub(super) by_key: HashMap<String, ReportEntry>,
    /// Bytes the built ones weigh.
    pub(super) bytes: usize,
    /// Asks so far (the clock of `used`).
    pub(super) asked: u64,
}

/// One build in [`ReportSlots`].
pub(super) struct ReportEntry {
    pub(super) slot: ReportSlot,
    /// Bytes once built.
    pub(super) weight: Option<usize>,
    /// The ask that last found it.
    pub(super) used: u64,
}

/// What a whole-index pass built: a report, or the ordered change list of two sweeps.
#[derive(Clone)]
pub(super) enum Built {
    Report(Arc<crate::report::Report>),
    Changes(Arc<crate::report::changes::Ordered>),
}

/// One build's answer, when it is built.
pub(super) type ReportSlot = tokio::sync::watch::Receiver<Option<Result<Built, ApiError>>>;

/// Where the pages of Wayback CDX queries begin ([`Served::pages`]), bounded in bytes:
/// past [`PageStarts::MAX_BYTES`] everything is forgotten at once (it is relearnt), so
/// no sequence of queries (`pageSize=1` over a whole host) grows it without end.
#[derive(Debug, Default)]
pub struct PageStarts {
    starts: HashMap<String, Vec<Vec<u8>>>,
    bytes: usize,
}

impl PageStarts {
    /// Bytes of keys held at most.
    pub const MAX_BYTES: usize = 16 << 20;

    /// The first capture keys of pages 1 … `page` of query `key` known so far.
    pub fn known(&self, key: &str, page: usize) -> Vec<Vec<u8>> {
        (self.starts.get(key))
            .map(|v| v.iter().take(page).cloned().collect())
            .unwrap_or_default()
    }

    /// Adds the starts `found` after the `known` ones of query `key` (nothing when
    /// another request added some meanwhile).
    pub fn add(&mut self, key: &str, known: usize, found: Vec<Vec<u8>>) {
        let cost = |k: &Vec<u8>| k.len() + 24;
        let adding: usize = found.iter().map(cost).sum::<usize>() + key.len() + 48;
        if self.bytes + adding > Self::MAX_BYTES {
            self.starts.clear();
            self.bytes = 0;
        }
        if !self.starts.contains_key(key) {
            if known > 0 {
                return;
            }
            self.bytes += key.len() + 48;
        }
        let starts = self.starts.entry(key.to_string()).or_default();
        if starts.len() != known {
            return;
        }
        for k in found {
            if self.bytes + cost(&k) > Self::MAX_BYTES {
                break;
            }
            self.bytes += cost(&k);
            starts.push(k);
        }
    }
}

/// One request's work over a snapshot: the snapshot (its fields through `Deref`) and who
/// reads it. Every read of captures takes the reader; there is no other way to a
/// searcher.
pub struct Request<'a> {
    served: &'a Served,
    /// The request's reader: its user's view, or everything when the policy is open.
    pub reader: Reader,
}

impl std::ops::Deref for Request<'_> {
    type Target = Served;
    fn deref(&self) -> &Served {
        self.served
    }
}

impl<'a> Request<'a> {
    /// The work of a request by `reader` over `served`, under the worker slot `_worker`
    /// (`serve.workers`): the only way to the index for a request, so that no request
    /// reads it without one. (A streamed answer gives its slot back only while it waits
    /// for its client, between reads: [`super::stream`].)
    pub fn new(
        served: &'a Served,
        reader: Reader,
        _worker: &tokio::sync::OwnedSemaphorePermit,
    ) -> Request<'a> {
        let reader = served.keeping(reader);
        Request { served, reader }
    }

    /// The index.
    pub fn index(&self) -> &'a Index {
        &self.served.index
    }

    /// The number of the snapshot it reads.
    pub fn snapshot(&self) -> u64 {
        self.served.number
    }

    /// The snapshot's sweeps the reader may be told of ([`Served::shown_sweeps`]).
    pub fn shown_sweeps(&self) -> Result<Arc<Vec<(u32, SweepInfo)>>, IndexError> {
        self.served.shown_sweeps(&self.reader)
    }

    /// A searcher over the snapshot, for the reader.
    pub fn searcher(&self) -> Searcher<'a> {
        Searcher::with(
            &self.served.index,
            &self.served.prepared,
            self.reader.clone(),
        )
    }

    /// Cluster ids as the reader may be told them.
    pub fn cluster_ids(&self) -> ClusterIds<'a> {
        ClusterIds::new(&self.served.index, self.reader.clone())
    }
}

/// The server's state.
pub struct AppState {
    /// The index directory.
    pub db: PathBuf,
    /// Configuration.
    pub config: Config,
    current: RwLock<Option<Arc<Served>>>,
    /// Index work under way at once (`serve.workers`): more waits its turn, in order.
    pub(super) workers: Arc<Semaphore>,
    /// Streamed answers waiting for their slow clients (`serve.max_slow_answers`).
    pub(super) slow_answers: Arc<Semaphore>,
    /// The access rules and embargo applied now; a request takes it once, at its start.
    policy: RwLock<Arc<Policy>>,
    /// What the rule files were when last read (path, modified, length).
    acl_stamp: std::sync::Mutex<Vec<(PathBuf, Option<std::time::SystemTime>, u64)>>,
    /// Who may name a user (`serve.trusted_proxies`).
    pub trusted_proxies: crate::access::TrustedProxies,
    /// What `/metrics` tells.
    pub metrics: Arc<super::metrics::Metrics>,
    /// The checksums of the files a follower copies, as this server lists them.
    pub hashes: super::replica::Hashes,
    /// How far this server, as a follower, is behind its primary.
    pub follower: Arc<super::replica::FollowerStatus>,
    /// One replication listing at a time (`replication::listing`).
    pub listing: std::sync::Mutex<()>,
    /// A follower's hold of its folder (`FOLLOWER.lock`): one follower a folder.
    _follower_lock: Option<std::fs::File>,
}

tokio::task_local! {
    /// The user the request's user header names (`serve.acl_user_header`).
    pub static REQUEST_USER: Option<String>;
    /// When the request's time is up: `serve.request_timeout_s` after the service was
    /// handed it (`super::deadline`). Every clock of its work is this one.
    pub static REQUEST_DEADLINE: std::time::Instant;
}

/// Holds `db/FOLLOWER.lock` for a follower (created at its first start: from then on
/// no ingest writes there), or says which process holds it.
fn hold_as_follower(db: &std::path::Path) -> anyhow::Result<std::fs::File> {
    let path = db.join(snapshots::FOLLOWER);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(IndexError::Invalid(format!(
            "{} is followed by another server already (it holds {}): one follower a folder",
            db.display(),
            path.display()
        ))
        .into()),
        Err(std::fs::TryLockError::Error(e)) => {
            anyhow::bail!("cannot lock {}: {e}", path.display())
        }
    }
}

impl AppState {
    /// Opens the newest published snapshot of `db`. An index with none (built before
    /// snapshots existed) is published now, unless an ingest holds it: then the server
    /// starts unready and picks up the snapshot that ingest publishes.
    pub fn new(db: PathBuf, config: Config) -> anyhow::Result<AppState> {
        let following = !config.serve.follow.is_empty();
        if following {
            // A follower's folder holds only the snapshots it copied: never an index
            // of its own, which it would otherwise serve.
            if db.join("CURRENT").exists() {
                return Err(IndexError::Invalid(format!(
                    "{} is an index: a follower (serve --follow) keeps its copies in a folder of its own",
                    db.display()
                ))
                .into());
            }
            crate::durable::create_dir_all(&db)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", db.display()))?;
        }
        let follower_lock = match following {
            true => Some(hold_as_follower(&db)?),
            false => None,
        };
        if !following && !db.join("CURRENT").exists() {
            return Err(IndexError::Missing(db).into());
        }
        if !following && snapshots::list(&db).is_empty() {
            match Index::open(&db, &config, false) {
                Ok(index) => {
                    snapshots::publish(&index)?;
                }
                Err(IndexError::Busy(_)) => eprintln!(
                    "tidemark serve: {} has no published sweep and an ingest is writing it; serving starts when that ingest completes",
                    db.display()
                ),
                Err(e) => return Err(e.into()),
            }
        }
        let workers = Arc::new(Semaphore::new(config.serve_workers()));
        let acl_stamp = acl_stamp(&config.serve.acl_paths);
        let policy = load_policy(&config, 1).map_err(|e| anyhow::anyhow!(e))?;
        if !policy.rules.is_empty() {
            eprintln!(
                "tidemark serve: applying {} access rules from {}",
                policy.rules.len(),
                show_paths(&config.serve.acl_paths)
            );
        }
        let trusted_proxies = config
            .serve
            .trusted_proxies()
            .map_err(|e| anyhow::anyhow!(e))?;
        let slow_answers = Arc::new(Semaphore::new(config.serve.max_slow_answers));
        let follower = Arc::new(super::replica::FollowerStatus::default());
        let state = AppState {
            trusted_proxies,
            db,
            config,
            current: RwLock::new(None),
            workers,
            slow_answers,
            policy: RwLock::new(Arc::new(policy)),
            acl_stamp: std::sync::Mutex::new(acl_stamp),
            metrics: Arc::new(super::metrics::Metrics::new(&follower)),
            hashes: Default::default(),
            follower,
            listing: Default::default(),
            _follower_lock: follower_lock,
        };
        state.refresh()?;
        Ok(state)
    }

    /// The policy applied now.
    pub fn policy(&self) -> Arc<Policy> {
        self.policy
            .read()
            .map(|p| p.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// The reader of the request being served: its user's view (the user from the
    /// request's header, from a trusted proxy), at the request's time.
    pub fn reader(&self) -> Reader {
        let user = REQUEST_USER.try_with(|u| u.clone()).unwrap_or(None);
        Reader::of(self.policy().view(user))
    }

    /// Reads the rule files again if they changed since they were read. A file that no
    /// longer reads keeps the rules in force, and says why.
    fn reload_acl(&self) {
        let paths = &self.config.serve.acl_paths;
        if paths.is_empty() {
            return;
        }
        let stamp = acl_stamp(paths);
        {
            let Ok(mut old) = self.acl_stamp.lock() else {
                return;
            };
            if *old == stamp {
                return;
            }
            *old = stamp;
        }
        let generation = self.policy().generation + 1;
        match load_policy(&self.config, generation) {
            Ok(p) => {
                eprintln!(
                    "tidemark serve: now applying {} access rules from {}",
                    p.rules.len(),
                    show_paths(paths)
                );
                if let Ok(mut cur) = self.policy.write() {
                    *cur = Arc::new(p);
                }
            }
            Err(e) => eprintln!(
                "tidemark serve: the access rules were not reloaded, the previous ones still apply: {e}"
            ),
        }
    }

    /// The snapshot served now.
    pub fn current(&self) -> Option<Arc<Served>> {
        self.current.read().map(|c| c.clone()).unwrap_or(None)
    }

    /// Opens the newest snapshot if it is newer than the one served. True when it
    /// switched.
    fn refresh(&self) -> Result<bool, IndexError> {
        let have = self.current().map(|s| s.number);
        let newest = snapshots::list(&self.db).last().map(|(n, _)| *n);
        if newest.is_none() || newest == have {
            return Ok(false);
        }
        let Some(lease) = snapshots::hold_newest(&self.db) else {
            return Ok(false);
        };
        if Some(lease.number) <= have {
            return Ok(false);
        }
        let served = Arc::new(Served::open(lease, &self.config)?);
        if let Ok(mut c) = self.current.write() {
            *c = Some(served);
        }
        Ok(true)
    }

    /// Runs `f` on a blocking thread over the snapshot served now, once one of the
    /// `serve.workers` slots is free, within the request's budget: the slot is held by
    /// the work itself, and the work stops at its next index read once the request's
    /// time is up or nobody awaits it (a timed-out or abandoned request no longer holds
    /// a worker while its scan runs on).
    pub async fn with_index<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Request) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        self.with_snapshot(None, f).await
    }

    /// [`AppState::with_index`] over `served` (an answer begun on it) or, without, the
    /// snapshot served now.
    pub async fn with_snapshot<T: Send + 'static>(
        self: &Arc<Self>,
        served: Option<Arc<Served>>,
        f: impl FnOnce(&Request) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let budget = self.budget();
        let reader = self.reader();
        let cancel = budget.canceller();
        let waited = std::time::Instant::now();
        let permit = self.permit().await?;
        self.metrics.slot_waited(waited.elapsed());
        let served = served.or_else(|| self.current()).ok_or_else(|| {
            ApiError::unavailable(
                "no published sweep yet: an ingest publishes one when it completes".into(),
            )
        })?;
        let answer = tokio::task::spawn_blocking(move || {
            budget.run(|| f(&Request::new(&served, reader, &permit)))
        })
        .await
        .map_err(|e| ApiError::internal(format!("request failed: {e}")))?;
        cancel.disarm();
        answer
    }

    /// When the request under way must be answered: its deadline, set when the service
    /// was handed it (outside a request, `serve.request_timeout_s` from now). The 408,
    /// the index reads' budget, a streamed answer's writes and a report's wait all end
    /// there, whatever the request waited for before (a `max_concurrency` slot, a worker).
    pub fn deadline(&self) -> std::time::Instant {
        REQUEST_DEADLINE.try_with(|d| *d).unwrap_or_else(|_| {
            std::time::Instant::now() + Duration::from_secs(self.config.serve.request_timeout_s)
        })
    }

    /// The budget of the request under way: until its [`AppState::deadline`], at most
    /// `serve.max_scan_rows` entries.
    pub fn budget(&self) -> Budget {
        Budget::new(
            self.deadline(),
            "serve.request_timeout_s",
            self.config.serve.max_scan_rows,
        )
    }

    /// A worker slot, held until the work (a streaming producer too) finishes.
    pub async fn permit(self: &Arc<Self>) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
        self.workers
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::unavailable("shutting down".into()))
    }

    /// Where the WARC file a capture was read from is now: the path it was ingested
    /// from, found by the capture's sweep and file number (two sweeps' files may share
    /// a name: wget's `--warc-file=crawl`, `part-00000.warc.gz` per sweep folder), else
    /// the first `serve.archive_paths` folder that has a file of its name.
    pub fn warc_path(&self, served: &Served, row: &CaptureRow) -> Option<PathBuf> {
        crate::query::diff::locate(&served.files, &self.config.serve.archive_paths, row)
    }
}

/// The policy of `[serve]`: its rule files, default access and embargo.
fn load_policy(config: &Config, generation: u64) -> Result<Policy, String> {
    let s = &config.serve;
    Ok(Policy {
        rules: Acl::load(&s.acl_paths)?,
        default: s.default_access()?,
        embargo: s.embargo()?,
        generation,
    })
}

/// Each rule file's path, modification time and length (a folder's `.aclj` files; a
/// folder that cannot be listed as itself, so that its change is seen).
fn acl_stamp(paths: &[PathBuf]) -> Vec<(PathBuf, Option<std::time::SystemTime>, u64)> {
    crate::access::rules::files(paths)
        .unwrap_or_else(|_| paths.to_vec())
        .into_iter()
        .map(|f| {
            let m = std::fs::metadata(&f).ok();
            let modified = m.as_ref().and_then(|m| m.modified().ok());
            let len = m.map_or(0, |m| m.len());
            (f, modified, len)
        })
        .collect()
}

fn show_paths(paths: &[PathBuf]) -> String {
    let v: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    v.join(", ")
}

/// Looks for a newly published snapshot, and for changed access rules, every
/// `serve.poll_ms`, and switches to them.
pub async fn follow(state: Arc<AppState>) {
    let every = Duration::from_millis(state.config.serve.poll_ms);
    loop {
        tokio::time::sleep(every).await;
        let s = state.clone();
        match tokio::task::spawn_blocking(move || {
            s.reload_acl();
            s.refresh()
        })
        .await
        {
            Ok(Ok(true)) => {
                if let Some(c) = state.current() {
                    eprintln!(
                        "tidemark serve: now serving snapshot {} ({} sweeps, newest {})",
                        c.number,
                        c.sweeps.len(),
                        c.sweeps
                            .last()
                            .map(|(_, s)| s.label.as_str())
                            .unwrap_or("-")
                    );
                }
            }
            Ok(Ok(false)) => {}
            Ok(Err(e)) => eprintln!("tidemark serve: cannot open the newest snapshot: {e}"),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PageStarts;

    #[test]
    fn page_starts_stay_within_their_bytes() {
        let mut p = PageStarts::default();
        let key = vec![7u8; 1000];
        // pageSize=1 over a huge host: a start per row, query after query.
        for q in 0..100 {
            let found: Vec<Vec<u8>> = (0..1000).map(|_| key.clone()).collect();
            p.add(&format!("query {q}"), 0, found);
            assert!(p.bytes <= PageStarts::MAX_BYTES, "{}", p.bytes);
        }
        // What is held is found again, from the page asked.
        p.add("again", 0, vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(p.known("again", 1), vec![b"a".to_vec()]);
        // Starts added after another request's are not added twice.
        p.add("again", 1, vec![b"x".to_vec()]);
        assert_eq!(p.known("again", 9).len(), 2);
    }
}
