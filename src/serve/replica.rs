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

/// Follows the primary at `primary` into `db` until the process ends: polls its
/// listing every `every` and installs each newer snapshot once it is copied and checked.
pub fn follow(
    db: PathBuf,
    primary: String,
    token: String,
    every: Duration,
    status: Arc<FollowerStatus>,
) {
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(10))
        .timeout_read(Duration::from_secs(60))
        .build();
    let primary = primary.trim_end_matches('/').to_string();
    let mut last_error = String::new();
    loop {
        match copy_newest(&agent, &db, &primary, &token, &status) {
            Ok(Some(n)) => {
                last_error.clear();
                eprintln!("tidemark serve: copied snapshot {n} from {primary}");
            }
            Ok(None) => last_error.clear(),
            Err(e) => {
                status.errors.inc();
                // Said once, not at every poll while the primary is down.
                if e != last_error {
                    eprintln!("tidemark serve: following {primary}: {e} (trying again every poll)");
                    last_error = e;
                }
            }
        }
        std::thread::sleep(every);
    }
}

fn fetch(agent: &ureq::Agent, url: &str, token: &str) -> Result<ureq::Response, String> {
    agent
        .get(url)
        .set("Authorization", &format!("Bearer {token}"))
        .call()
        .map_err(|e| match e {
            ureq::Error::Status(code, r) => {
                format!("{url}: {code} {}", r.into_string().unwrap_or_default())
            }
            e => format!("{url}: {e}"),
        })
}

/// One poll: the primary's newest snapshot copied and installed if this follower lacks
/// it (its number), else nothing.
fn copy_newest(
    agent: &ureq::Agent,
    db: &Path,
    primary: &str,
    token: &str,
    status: &FollowerStatus,
) -> Result<Option<u64>, String> {
    let listing: Listing = fetch(agent, &format!("{primary}/replication/snapshot"), token)?
        .into_json()
        .map_err(|e| format!("{primary}/replication/snapshot: {e}"))?;
    status.primary_snapshot.set(listing.snapshot as i64);
    let local = snapshots::list(db);
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
    let mut entries = Vec::with_capacity(listing.files.len());
    for f in &listing.files {
        let safe = !f.path.is_empty()
            && Path::new(&f.path)
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
            && f.path != CHECKSUMS
            && f.path != snapshots::LEASE;
        let hash = u128::from_str_radix(&f.xxh3, 16).ok().filter(|_| safe).ok_or_else(|| {
            format!("{primary}: the listing of snapshot {} names {:?} ({:?}): not a file a snapshot holds", listing.snapshot, f.path, f.xxh3)
        })?;
        let out = building.join(&f.path);
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        // Already here from an earlier try, and checked then.
        let here = std::fs::metadata(&out).is_ok_and(|m| m.len() == f.size)
            && hash_file(&out, f.size, None).is_ok_and(|(h, _)| h == hash);
        if !here {
            let _ = std::fs::remove_file(&out);
            let linked = held
                .get(&(f.path.clone(), f.size, hash))
                .is_some_and(|at| std::fs::hard_link(at, &out).is_ok());
            if !linked {
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
        }
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
    let sums_path = building.join(CHECKSUMS);
    crate::durable::write_atomic(&sums_path, sums.text().as_bytes())
        .map_err(|e| io(&sums_path, e))?;
    snapshots::install(db, &building, listing.snapshot).map_err(|e| e.to_string())?;
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
    let mut body = fetch(agent, &url, token)?.into_reader();
    let partial = out.with_extension("partial");
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
