//! Replication, the follower's side: `tidemark serve --follow URL` keeps a copy of a primary's
//! published snapshots and serves it with its own access rules.
//!
//! The primary (any `serve` with `serve.replication_token` set) answers two requests,
//! only to a client that presents the token (`Authorization: Bearer TOKEN`), since the
//! files hold every capture, excluded ones included:
//! - `GET /replication/snapshot`: the snapshot it serves, `{"snapshot", "files":
//!   [{"path", "size", "xxh3"}]}` (XXH3-128 of each file; those that never change are
//!   hashed once per server, the small ones at each listing);
//! - `GET /replication/file/{snapshot}/{path}`: one file of it, while that snapshot is
//!   the one served (then `404`: list again).
//!
//! The follower polls the listing every `serve.poll_ms`. A newer snapshot is built in
//! `DB/snapshots/NNNNNNNNNN.tmp`: each file it already holds in an older snapshot
//! (same path, size and checksum) is hard-linked, the others downloaded and checked
//! against their checksum before they count; then its `CHECKSUMS` is written and the
//! folder renamed into place ([`snapshots::install`]), where the server finds it as it
//! finds an ingest's. So the follower never serves a partial snapshot, and a follower
//! restarted mid-copy goes on from the files it had checked.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use serde::{Deserialize, Serialize};

use crate::backup::{files_of, hash_file, never_changes, Checksums, Entry, CHECKSUMS};
use crate::index::snapshots;

/// Bytes of a listing a follower reads at most, and the files it may name: a primary
/// (or anyone on the path to it) cannot make a follower hold more in memory.
const MAX_LISTING_BYTES: u64 = 64 << 20;
const MAX_LISTED_FILES: usize = 500_000;
/// The slowest copy a follower waits for: a file of `size` bytes may take 60 s plus
/// `size` at this rate (a primary that sends a byte a minute cannot stall it forever).
const MIN_BYTES_PER_SECOND: u64 = 256 << 10;
/// The longest wait between polls after failures (doubling from `serve.poll_ms`).
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The snapshot a primary serves, as a follower copies it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Listing {
    /// Its number.
    pub snapshot: u64,
    /// Its files, sorted by path.
    pub files: Vec<ListedFile>,
}

/// One file of a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ListedFile {
    /// Path inside the snapshot, `/`-separated.
    pub path: String,
    /// Bytes.
    pub size: u64,
    /// XXH3-128, 32 hex digits.
    pub xxh3: String,
}

/// The primary's checksums of the files that never change, by (path, size): a file
/// number is never reused within an index.
#[derive(Default)]
pub struct Hashes(Mutex<HashMap<(String, u64), u128>>);

/// A snapshot's files with their checksums.
pub(super) fn list(dir: &Path, number: u64, hashes: &Hashes) -> Result<Listing, String> {
    let mut files = Vec::new();
    for (path, size) in files_of(dir).map_err(|e| e.to_string())? {
        let key = (path.clone(), size);
        let known = never_changes(&path)
            .then(|| hashes.0.lock().ok()?.get(&key).copied())
            .flatten();
        let hash = match known {
            Some(h) => h,
            None => {
                let (h, _) = hash_file(&dir.join(&path), size, None).map_err(|e| e.to_string())?;
                if never_changes(&path) {
                    if let Ok(mut m) = hashes.0.lock() {
                        m.insert(key, h);
                    }
                }
                h
            }
        };
        files.push(ListedFile {
            path,
            size,
            xxh3: format!("{hash:032x}"),
        });
    }
    Ok(Listing {
        snapshot: number,
        files,
    })
}

/// What a follower reports to `/metrics`.
#[derive(Default)]
pub struct FollowerStatus {
    /// The newest snapshot the primary listed (0: none yet).
    pub primary_snapshot: Gauge,
    /// Since when the primary has had a snapshot this follower has not installed.
    pub behind_since: Mutex<Option<Instant>>,
    /// Failed polls and copies.
    pub errors: Counter,
    /// Bytes downloaded.
    pub bytes_copied: Counter,
}

impl FollowerStatus {
    /// Seconds the follower has been behind the primary (0 when it serves its newest).
    pub fn lag_seconds(&self) -> f64 {
        self.behind_since
            .lock()
            .ok()
            .and_then(|b| *b)
            .map_or(0.0, |t| t.elapsed().as_secs_f64())
    }
}

/// A follower: where it copies to, from whom, and what it remembers between polls.
pub struct Follower {
    /// The follower's folder.
    pub db: PathBuf,
    /// The primary's address.
    pub primary: String,
    /// `serve.replication_token`.
    pub token: String,
    /// How the copies are opened before they are installed.
    pub config: crate::config::Config,
    /// What `/metrics` tells.
    pub status: Arc<FollowerStatus>,
}

/// What a follower remembers between polls.
#[derive(Default)]
struct Memory {
    /// Files of the copy under way checked already (path → size, checksum): a failed
    /// poll does not read them all again at the next one.
    checked: HashMap<String, (u64, u128)>,
    /// A snapshot of the primary that did not open here (its number): not copied again.
    refused: Option<u64>,
}

/// Follows the primary into the folder until the process ends: polls its listing every
/// `every` (backing off to 30 s while polls fail) and installs each newer snapshot once
/// it is copied, checked and opens.
pub fn follow(f: Follower, every: Duration) {
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(10))
        .timeout_read(Duration::from_secs(60))
        // A primary's redirect is not followed: the follower asks only the primary.
        .redirects(0)
        .build();
    let primary = f.primary.trim_end_matches('/').to_string();
    let f = Follower { primary, ..f };
    let mut last_error = String::new();
    let mut memory = Memory::default();
    let mut failures = 0u32;
    loop {
        // A panic of a poll (a bug) is that poll's error, counted and tried again: the
        // thread ended by it would leave the follower serving its last copy for good,
        // with nothing said.
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            copy_newest(&agent, &f, &mut memory)
        }))
        .unwrap_or_else(|p| {
            memory = Memory::default();
            Err(format!(
                "the follower thread failed ({}); please report this",
                crate::scan::panic_message(p.as_ref())
            ))
        });
        match polled {
            Ok(Some(n)) => {
                last_error.clear();
                failures = 0;
                eprintln!("tidemark serve: copied snapshot {n} from {}", f.primary);
            }
            Ok(None) => {
                last_error.clear();
                failures = 0;
            }
            Err(e) => {
                f.status.errors.inc();
                failures = failures.saturating_add(1);
                // Said once, not at every poll while the primary is down.
                if e != last_error {
                    eprintln!(
                        "tidemark serve: following {}: {e} (trying again, every {} s at most)",
                        f.primary,
                        MAX_BACKOFF.as_secs()
                    );
                    last_error = e;
                }
            }
        }
        let wait = every
            .saturating_mul(1 << failures.min(16))
            .min(MAX_BACKOFF.max(every));
        std::thread::sleep(wait);
    }
}

/// A primary's answer as a follower shows it: the first 200 characters, escaped.
fn shown(text: &str) -> String {
    let cut: String = text.chars().take(200).collect();
    format!("{cut:?}")
}

fn fetch(
    agent: &ureq::Agent,
    url: &str,
    token: &str,
    timeout: Duration,
) -> Result<ureq::Response, String> {
    agent
        .get(url)
        .set("Authorization", &format!("Bearer {token}"))
        .timeout(timeout)
        .call()
        .map_err(|e| match e {
            ureq::Error::Status(404, _) if url.ends_with("/replication/snapshot") => format!(
                "{url}: 404: the primary serves no /replication/ (set its serve.replication_token; a follower serves none)"
            ),
            ureq::Error::Status(code, r) => {
                format!("{url}: {code} {}", shown(&r.into_string().unwrap_or_default()))
            }
            e => format!("{url}: {e}"),
        })
}

/// Bytes free for this user on the file system of `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes the one struct given, for a NUL-terminated path.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(c.as_ptr(), &mut st) == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
    }
}

/// How a file of the listing comes to be in the copy.
enum Source {
    /// Here from an earlier try, checked.
    Here,
    /// Hard-linked from an installed snapshot that holds it.
    Link(PathBuf),
    /// Downloaded.
    Download,
}

/// One poll: the primary's newest snapshot copied and installed if this follower lacks
/// it (its number), else nothing.
fn copy_newest(
    agent: &ureq::Agent,
    f: &Follower,
    memory: &mut Memory,
) -> Result<Option<u64>, String> {
    crate::scan::test_panic("follower", 0);
    let (db, primary, token, status) = (&f.db, f.primary.as_str(), f.token.as_str(), &f.status);
    let at = format!("{primary}/replication/snapshot");
    let reader = fetch(agent, &at, token, Duration::from_secs(60))?.into_reader();
    let listing: Listing = serde_json::from_reader(reader.take(MAX_LISTING_BYTES))
        .map_err(|e| format!("{at}: not a listing of at most {MAX_LISTING_BYTES} bytes: {e}"))?;
    if listing.files.len() > MAX_LISTED_FILES {
        return Err(format!(
            "{at}: {} files listed; a follower copies at most {MAX_LISTED_FILES}",
            listing.files.len()
        ));
    }
    status
        .primary_snapshot
        .set(i64::try_from(listing.snapshot).unwrap_or(i64::MAX));
    let local = snapshots::list(db);
    if let Some((newest, _)) = local.last().filter(|(n, _)| *n > listing.snapshot) {
        return Err(format!(
            "the primary serves snapshot {}, older than this follower's {newest}: a primary rebuilt or restored, or another index? This follower keeps serving {newest}; to follow it anew, start it on an empty folder",
            listing.snapshot
        ));
    }
    if memory.refused == Some(listing.snapshot) {
        return Err(format!(
            "snapshot {} of the primary does not open here (said before): upgrade this follower to the primary's tidemark",
            listing.snapshot
        ));
    }
    let behind = |b: bool| {
        if let Ok(mut since) = status.behind_since.lock() {
            match (b, since.is_some()) {
                (true, false) => *since = Some(Instant::now()),
                (false, _) => *since = None,
                _ => {}
            }
        }
    };
    if local.last().is_some_and(|(n, _)| *n >= listing.snapshot) {
        behind(false);
        return Ok(None);
    }
    behind(true);
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let dir = db.join(snapshots::SNAPSHOTS);
    crate::durable::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    let building = dir.join(format!("{:010}.tmp", listing.snapshot));
    // A copy left unfinished (by a restart, or for a snapshot the primary has since
    // replaced) keeps the files it had checked: it becomes this one.
    for e in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))?.flatten() {
        let p = e.path();
        if p != building && p.to_string_lossy().ends_with(".tmp") {
            if building.exists() {
                let _ = std::fs::remove_dir_all(&p);
            } else {
                std::fs::rename(&p, &building).map_err(|e| io(&p, e))?;
            }
        }
    }
    std::fs::create_dir_all(&building).map_err(|e| io(&building, e))?;
    // The files the installed snapshots hold, by (path, size, checksum).
    let mut held: HashMap<(String, u64, u128), PathBuf> = HashMap::new();
    for (_, snap) in &local {
        if let Ok(sums) = Checksums::read(snap) {
            for e in sums.files {
                let at = snap.join(&e.path);
                held.insert((e.path, e.size, e.hash), at);
            }
        }
    }
    // Where each file comes from; what must be downloaded fits on the disk.
    let mut plan = Vec::with_capacity(listing.files.len());
    let mut needed = 0u64;
    for f in &listing.files {
        let safe = !f.path.is_empty()
            && Path::new(&f.path)
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
            && f.path != CHECKSUMS
            && f.path != snapshots::LEASE
            && !f.path.ends_with(".partial");
        let hash = u128::from_str_radix(&f.xxh3, 16).ok().filter(|_| safe).ok_or_else(|| {
            format!("{primary}: the listing of snapshot {} names {} ({}): not a file a snapshot holds", listing.snapshot, shown(&f.path), shown(&f.xxh3))
        })?;
        let out = building.join(&f.path);
        let here = match memory.checked.get(&f.path) {
            Some(&(size, h)) => size == f.size && h == hash && out.is_file(),
            // Already here from an earlier try (by a follower since restarted).
            None => {
                std::fs::metadata(&out).is_ok_and(|m| m.len() == f.size)
                    && hash_file(&out, f.size, None).is_ok_and(|(h, _)| h == hash)
            }
        };
        let source = match (here, held.get(&(f.path.clone(), f.size, hash))) {
            (true, _) => Source::Here,
            (false, Some(at)) => Source::Link(at.clone()),
            (false, None) => {
                needed += f.size;
                Source::Download
            }
        };
        plan.push((f, hash, out, source));
    }
    if let Some(free) = free_bytes(&building) {
        // A margin for the file system's own blocks.
        if needed.saturating_add(needed / 64) > free {
            return Err(format!(
                "snapshot {} needs {needed} bytes more and {} has {free} free: not copied",
                listing.snapshot,
                building.display()
            ));
        }
    }
    let mut entries = Vec::with_capacity(listing.files.len());
    for (f, hash, out, source) in plan {
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        let linked = match &source {
            Source::Here => true,
            Source::Link(at) => {
                let _ = std::fs::remove_file(&out);
                std::fs::hard_link(at, &out).is_ok()
            }
            Source::Download => false,
        };
        if !linked {
            let _ = std::fs::remove_file(&out);
            download(agent, primary, token, &listing, f, hash, &out)?;
            status.bytes_copied.inc_by(f.size);
            // The tests' hook: a slow copy, to be killed half-way.
            if let Some(ms) = std::env::var("TIDEMARK_TEST_FOLLOW_FILE_DELAY_MS")
                .ok()
                .and_then(|v| v.parse().ok())
            {
                std::thread::sleep(Duration::from_millis(ms));
            }
        }
        memory.checked.insert(f.path.clone(), (f.size, hash));
        entries.push(Entry {
            path: f.path.clone(),
            size: f.size,
            hash,
            edge: 0,
        });
    }
    // Files of the unfinished copy that this snapshot does not have.
    let wanted: std::collections::HashSet<&str> =
        listing.files.iter().map(|f| f.path.as_str()).collect();
    for (p, _) in files_of(&building).map_err(|e| e.to_string())? {
        if !wanted.contains(p.as_str()) {
            let _ = std::fs::remove_file(building.join(&p));
        }
    }
    let sums = Checksums {
        snapshot: listing.snapshot,
        files: entries,
    };
    for d in [building.join(crate::index::postings::DIR), building.clone()] {
        if d.is_dir() {
            crate::durable::sync_dir(&d).map_err(|e| io(&d, e))?;
        }
    }
    // The copy holds the listed files and nothing else.
    let mut have = files_of(&building).map_err(|e| e.to_string())?;
    have.sort();
    let mut listed: Vec<(String, u64)> = (listing.files.iter())
        .map(|f| (f.path.clone(), f.size))
        .collect();
    listed.sort();
    if have != listed {
        memory.checked.clear();
        return Err(format!(
            "the copy of snapshot {} in {} is not the listing's files (changed while it was built?): copied again",
            listing.snapshot,
            building.display()
        ));
    }
    // Opened before it is served: a snapshot of another schema (a primary upgraded
    // before its followers) or a broken one is never installed.
    if let Err(e) = crate::index::Index::open_read_only(&building, &f.config) {
        memory.refused = Some(listing.snapshot);
        return Err(format!(
            "snapshot {} copied from the primary does not open here: {e}",
            listing.snapshot
        ));
    }
    let sums_path = building.join(CHECKSUMS);
    crate::durable::write_atomic(&sums_path, sums.text().as_bytes())
        .map_err(|e| io(&sums_path, e))?;
    snapshots::install(db, &building, listing.snapshot).map_err(|e| e.to_string())?;
    memory.checked.clear();
    behind(false);
    Ok(Some(listing.snapshot))
}

/// One file of the listing downloaded to `out`, checked against its size and checksum
/// (a file that does not match is not kept).
fn download(
    agent: &ureq::Agent,
    primary: &str,
    token: &str,
    listing: &Listing,
    f: &ListedFile,
    hash: u128,
    out: &Path,
) -> Result<(), String> {
    let url = format!("{primary}/replication/file/{}/{}", listing.snapshot, f.path);
    let timeout = Duration::from_secs(60 + f.size / MIN_BYTES_PER_SECOND);
    // One byte more than listed at most: a body that does not end is not written on.
    let mut body = fetch(agent, &url, token, timeout)?
        .into_reader()
        .take(f.size + 1);
    let mut partial = out.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let result = (|| {
        let mut w =
            std::fs::File::create(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
        let mut whole = xxhash_rust::xxh3::Xxh3::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut got = 0u64;
        loop {
            let n = body.read(&mut buf).map_err(|e| format!("{url}: {e}"))?;
            if n == 0 {
                break;
            }
            whole.update(&buf[..n]);
            w.write_all(&buf[..n])
                .map_err(|e| format!("{}: {e}", partial.display()))?;
            got += n as u64;
            if got > f.size {
                return Err(format!(
                    "{url}: more than the {} bytes listed: not kept",
                    f.size
                ));
            }
        }
        if got != f.size || whole.digest128() != hash {
            return Err(format!(
                "{url}: {got} bytes whose checksum is not the listing's ({} bytes, {}): not kept",
                f.size, f.xxh3
            ));
        }
        w.sync_all()
            .map_err(|e| format!("{}: {e}", partial.display()))?;
        std::fs::rename(&partial, out).map_err(|e| format!("{}: {e}", out.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}
