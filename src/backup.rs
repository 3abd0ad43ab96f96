//! Backups of an index: copies of its newest published snapshot, taken while an ingest
//! runs, checked file by file, restored into a new index.
//!
//! A backup folder holds the backups taken into it, numbered in the order they were
//! taken (not by snapshot: a restored or rebuilt index numbers its snapshots from 1):
//!
//! ```text
//! DIR/0000000007/           backup 7: the files of a published snapshot (RocksDB's SST
//!                           files, MANIFEST, CURRENT, OPTIONS; postings/)
//! DIR/0000000007/CHECKSUMS  the snapshot's number, every file's size and XXH3-128,
//!                           written last: a backup without it is not complete
//! DIR/0000000008.tmp        a backup under way (or killed: removed by the next one)
//! DIR/BACKUP.lock           one backup into the folder at a time (restore and verify
//!                           hold it shared, so that no pruning backup removes theirs)
//! ```
//!
//! A published snapshot never changes and is held (its lease) while it is copied, so a
//! backup is consistent whatever an ingest does meanwhile. The files that never change
//! once written (SST files, posting runs) are hard-linked from the snapshot where the
//! backup is on the same file system (`copy` turns that off), and from an earlier backup
//! in the same folder when that one holds the same file: a second backup copies only the
//! files written since. "The same file" is the same name and size and the same first
//! and last 64 KiB, which hold an SST file's unique id and properties and a run's
//! checksum; RocksDB never reuses a file number within an index.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

use crate::config::Config;
use crate::index::{snapshots, Index, IndexError};

/// The list of a backup's files, written last.
pub const CHECKSUMS: &str = "CHECKSUMS";
const HEADER: &str = "tidemark backup 1";
const LOCK: &str = "BACKUP.lock";
/// Bytes read at each end of a file to tell it is the one an earlier backup holds.
const EDGE: u64 = 64 << 10;

/// What can go wrong with a backup or a restore.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// A file that could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The index has not published a snapshot yet.
    #[error("{} has no published snapshot to back up (each completed ingest publishes one)", .0.display())]
    NoSnapshot(PathBuf),
    /// Another backup holds the folder's lock.
    #[error("{}: another backup into this folder is under way", .0.display())]
    Busy(PathBuf),
    /// The folder holds no complete backup.
    #[error("no complete backup in {} (a backup is complete once its CHECKSUMS file is written)", .0.display())]
    NoBackup(PathBuf),
    /// A restore would write over something.
    #[error("{} exists and is not empty: restore into a new folder", .0.display())]
    NotEmpty(PathBuf),
    /// A backup asked for by number that the folder does not hold.
    #[error("{0}")]
    Unknown(String),
    /// A backup whose files are not those its checksums name.
    #[error("{0}")]
    Damaged(String),
    /// The index could not be opened or published.
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// A backup's or a restore's result.
pub type Result<T> = std::result::Result<T, BackupError>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One file of a backup, as its checksums list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Path inside the backup, `/`-separated.
    pub(crate) path: String,
    pub(crate) size: u64,
    /// XXH3-128 of the whole file.
    pub(crate) hash: u128,
    /// XXH3-128 of its first and last [`EDGE`] bytes.
    pub(crate) edge: u128,
}

/// A backup's checksums file.
pub(crate) struct Checksums {
    pub(crate) snapshot: u64,
    pub(crate) files: Vec<Entry>,
}

impl Checksums {
    pub(crate) fn text(&self) -> String {
        let mut body = format!("{HEADER}\nsnapshot {}\n", self.snapshot);
        for e in &self.files {
            body.push_str(&format!(
                "file {:032x} {:032x} {} {}\n",
                e.hash, e.edge, e.size, e.path
            ));
        }
        let crc = crc32fast::hash(body.as_bytes());
        body + &format!("crc {crc:08x}\n")
    }

    pub(crate) fn read(backup: &Path) -> Result<Checksums> {
        let path = backup.join(CHECKSUMS);
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        let bad =
            |what: &str| BackupError::Damaged(format!("{}: damaged ({what})", path.display()));
        let at = text.rfind("crc ").ok_or_else(|| bad("no checksum line"))?;
        let (body, crc) = text.split_at(at);
        let crc = u32::from_str_radix(crc.trim_start_matches("crc ").trim(), 16)
            .map_err(|_| bad("unreadable checksum line"))?;
        if crc != crc32fast::hash(body.as_bytes()) {
            return Err(bad("its own checksum differs"));
        }
        let mut lines = body.lines();
        if lines.next() != Some(HEADER) {
            return Err(bad("not a tidemark backup of this version"));
        }
        let snapshot = lines
            .next()
            .and_then(|l| l.strip_prefix("snapshot "))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad("no snapshot line"))?;
        let mut files = Vec::new();
        for (k, line) in lines.enumerate() {
            let f: Vec<&str> = line.splitn(5, ' ').collect();
            let entry = match f.as_slice() {
                ["file", hash, edge, size, path] => (|| {
                    Some(Entry {
                        hash: u128::from_str_radix(hash, 16).ok()?,
                        edge: u128::from_str_radix(edge, 16).ok()?,
                        size: size.parse().ok()?,
                        path: path.to_string(),
                    })
                })(),
                _ => None,
            };
            let entry = entry
                .filter(|e| inside(&e.path))
                .ok_or_else(|| bad(&format!("line {}", k + 3)))?;
            files.push(entry);
        }
        Ok(Checksums { snapshot, files })
    }
}

/// Whether `rel` names a file inside a backup: relative, no `..`, not its checksums.
pub(crate) fn inside(rel: &str) -> bool {
    !rel.is_empty()
        && rel != CHECKSUMS
        && rel != snapshots::LEASE
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Whether `name` is a backup's folder (`NNNNNNNNNN`) or one under way (`.tmp`).
fn numbered(name: &str) -> Option<(u64, bool)> {
    let (digits, tmp) = match name.strip_suffix(".tmp") {
        Some(d) => (d, true),
        None => (name, false),
    };
    (digits.len() == 10 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| (digits.parse().ok(), tmp))
        .and_then(|(n, tmp)| Some((n?, tmp)))
}

/// The lock of a backup folder: exclusive for a backup, shared for a restore or a check.
fn lock(dir: &Path, exclusive: bool) -> Result<File> {
    let path = dir.join(LOCK);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    let taken = if exclusive {
        f.try_lock().map_err(|e| match e {
            std::fs::TryLockError::WouldBlock => BackupError::Busy(dir.to_path_buf()),
            std::fs::TryLockError::Error(e) => io(&path)(e),
        })
    } else {
        f.lock_shared().map_err(io(&path))
    };
    taken.map(|_| f)
}

/// The complete backups in `dir`, oldest first: (backup number, folder).
pub fn list(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let (n, tmp) = numbered(e.file_name().to_str()?)?;
            (!tmp && e.path().join(CHECKSUMS).exists()).then(|| (n, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// How a backup is taken.
#[derive(Debug, Clone, Default)]
pub struct BackupOptions {
    /// Copy every file, even where a hard link to the snapshot's would do (a backup on
    /// the index's own disk that must not share its files' blocks).
    pub copy: bool,
    /// After the backup, remove all but the newest `keep` backups of the folder.
    pub keep: Option<usize>,
}

/// Files and bytes.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Count {
    /// Files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl Count {
    fn add(&mut self, bytes: u64) {
        self.files += 1;
        self.bytes += bytes;
    }
}

/// What a backup did.
#[derive(Debug, Clone, Serialize)]
pub struct BackupSummary {
    /// The backup's folder.
    pub backup: PathBuf,
    /// Its number in the folder (the order backups were taken).
    pub number: u64,
    /// The published snapshot it holds.
    pub snapshot: u64,
    /// All its files.
    pub total: Count,
    /// Bytes copied from the snapshot.
    pub copied: Count,
    /// Files hard-linked to the snapshot's (same file system, files that never change).
    pub linked: Count,
    /// Files hard-linked to an earlier backup's copy of them (nothing read but their ends).
    pub reused: Count,
    /// The folder's newest backup already held this snapshot: nothing was done.
    pub already: bool,
    /// Older backups removed by `keep` (their numbers).
    pub removed: Vec<u64>,
}

/// Backs up the newest published snapshot of the index at `db` into the folder `to`
/// (created if absent). `progress(done, total)` in bytes.
pub fn backup(
    db: &Path,
    to: &Path,
    opts: &BackupOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<BackupSummary> {
    if to.join(CHECKSUMS).exists() {
        return Err(BackupError::Damaged(format!(
            "{} is one backup: back up into the folder that holds it",
            to.display()
        )));
    }
    crate::durable::create_dir_all(to).map_err(io(to))?;
    let _lock = lock(to, true)?;
    // Leftovers of a backup killed on the way, and of a removal cut short.
    let mut last = 0;
    for e in std::fs::read_dir(to).map_err(io(to))?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some((n, tmp)) = numbered(&name) else {
            continue;
        };
        if tmp || !e.path().join(CHECKSUMS).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        } else {
            last = last.max(n);
        }
    }
    if !db.join("CURRENT").exists() {
        return Err(IndexError::Missing(db.to_path_buf()).into());
    }
    let lease = snapshots::hold_newest(db).ok_or_else(|| BackupError::NoSnapshot(db.into()))?;
    let files = files_of(&lease.path)?;
    let total_bytes: u64 = files.iter().map(|(_, size)| size).sum();
    let number = last + 1;
    let dest = to.join(format!("{number:010}"));
    let mut summary = BackupSummary {
        backup: dest.clone(),
        number,
        snapshot: lease.number,
        total: Count::default(),
        copied: Count::default(),
        linked: Count::default(),
        reused: Count::default(),
        already: false,
        removed: Vec::new(),
    };
    // The newest backup holds this very snapshot (its number and its files).
    let newest = list(to)
        .pop()
        .and_then(|(n, b)| Some((n, Checksums::read(&b).ok()?, b)));
    let same = newest.filter(|(_, held, _)| {
        held.snapshot == lease.number
            && held.files.len() == files.len()
            && held
                .files
                .iter()
                .zip(&files)
                .all(|(e, (p, s))| e.path == *p && e.size == *s)
    });
    if let Some((n, held, b)) = same {
        summary.number = n;
        summary.backup = b;
        summary.already = true;
        summary.total = Count {
            files: held.files.len() as u64,
            bytes: total_bytes,
        };
        drop(lease);
        summary.removed = prune(to, opts.keep);
        return Ok(summary);
    }
    // What earlier backups hold, newest first: a file is taken from the newest that has it.
    let mut earlier: HashMap<(String, u64), (Entry, PathBuf)> = HashMap::new();
    for (_, b) in list(to).into_iter().rev() {
        let Ok(sums) = Checksums::read(&b) else {
            continue;
        };
        for e in sums.files {
            let at = b.join(&e.path);
            earlier.entry((e.path.clone(), e.size)).or_insert((e, at));
        }
    }
    let building = to.join(format!("{number:010}.tmp"));
    std::fs::create_dir_all(&building).map_err(io(&building))?;
    let mut entries = Vec::with_capacity(files.len());
    let mut done = 0u64;
    for (rel, size) in &files {
        let from = lease.path.join(rel);
        let out = building.join(rel);
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let lasting = never_changes(rel);
        let mut entry = None;
        if lasting {
            if let Some((e, at)) = earlier.get(&(rel.clone(), *size)) {
                // With --copy, never the index's own file (an earlier linked backup).
                let shares_index = opts.copy && same_file(at, &from);
                if !shares_index
                    && edge_hash(&from, *size)? == e.edge
                    && std::fs::hard_link(at, &out).is_ok()
                {
                    summary.reused.add(*size);
                    entry = Some(e.clone());
                }
            }
            if entry.is_none() && !opts.copy && std::fs::hard_link(&from, &out).is_ok() {
                let (hash, edge) = hash_file(&from, *size, None)?;
                summary.linked.add(*size);
                entry = Some(Entry {
                    path: rel.clone(),
                    size: *size,
                    hash,
                    edge,
                });
            }
        }
        let entry = match entry {
            Some(e) => e,
            None => {
                let (hash, edge) = hash_file(&from, *size, Some(&out))?;
                summary.copied.add(*size);
                Entry {
                    path: rel.clone(),
                    size: *size,
                    hash,
                    edge,
                }
            }
        };
        entries.push(entry);
        done += size;
        progress(done, total_bytes);
    }
    summary.total = Count {
        files: entries.len() as u64,
        bytes: total_bytes,
    };
    let sums = Checksums {
        snapshot: lease.number,
        files: entries,
    };
    sync_folders(&building)?;
    let sums_path = building.join(CHECKSUMS);
    crate::durable::write_atomic(&sums_path, sums.text().as_bytes()).map_err(io(&sums_path))?;
    std::fs::rename(&building, &dest).map_err(io(&dest))?;
    crate::durable::sync_dir(to).map_err(io(to))?;
    drop(lease);
    summary.removed = prune(to, opts.keep);
    Ok(summary)
}

/// Removes all but the newest `keep` backups of `to`: their numbers. A backup that
/// cannot be removed is said, not an error: the backup just taken is whole.
fn prune(to: &Path, keep: Option<usize>) -> Vec<u64> {
    let Some(keep) = keep else {
        return Vec::new();
    };
    let all = list(to);
    let extra = all.len().saturating_sub(keep.max(1));
    let mut removed = Vec::new();
    for (n, old) in all.into_iter().take(extra) {
        // Its checksums go first: a removal cut short leaves no complete backup behind,
        // and the next backup removes the rest.
        let _ = std::fs::remove_file(old.join(CHECKSUMS));
        match std::fs::remove_dir_all(&old) {
            Ok(()) => removed.push(n),
            Err(e) => eprintln!(
                "tidemark backup: --keep: cannot remove {}: {e} (the next backup tries again)",
                old.display()
            ),
        }
    }
    removed
}

/// Syncs `dir` and the folders in it, so that the names made in them are on disk.
fn sync_folders(dir: &Path) -> Result<()> {
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).map_err(io(&d))?.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(e.path());
            }
        }
        crate::durable::sync_dir(&d).map_err(io(&d))?;
    }
    Ok(())
}

/// Whether two paths are one file (hard links to one inode).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// RocksDB's table and blob files and the posting runs: written once, never changed.
pub(crate) fn never_changes(rel: &str) -> bool {
    [".sst", ".blob", ".run"].iter().any(|x| rel.ends_with(x))
}

/// A snapshot's files, sorted: (path inside it, size). Its lease file is not one.
pub(crate) fn files_of(snapshot: &Path) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    let mut dirs = vec![(snapshot.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = dirs.pop() {
        for e in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let e = e.map_err(io(&dir))?;
            let name = e.file_name().to_string_lossy().to_string();
            let rel = format!("{prefix}{name}");
            let meta = e.metadata().map_err(io(&e.path()))?;
            if meta.is_dir() {
                dirs.push((e.path(), format!("{rel}/")));
            } else if rel != snapshots::LEASE {
                out.push((rel, meta.len()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// XXH3-128 of the first and last [`EDGE`] bytes of a file of `size` bytes.
fn edge_hash(path: &Path, size: u64) -> Result<u128> {
    let mut f = File::open(path).map_err(io(path))?;
    let head = size.min(EDGE);
    let mut buf = vec![0u8; head as usize];
    f.read_exact(&mut buf).map_err(io(path))?;
    let tail_from = size.saturating_sub(EDGE).max(head);
    f.seek(SeekFrom::Start(tail_from)).map_err(io(path))?;
    let mut tail = Vec::with_capacity((size - tail_from) as usize);
    f.read_to_end(&mut tail).map_err(io(path))?;
    buf.extend_from_slice(&tail);
    buf.extend_from_slice(&size.to_le_bytes());
    Ok(xxh3_128(&buf))
}

/// Reads a file of `size` bytes whole: its XXH3-128 and edge hash; with `copy_to`,
/// writes it there as well (a new file, synced).
pub(crate) fn hash_file(path: &Path, size: u64, copy_to: Option<&Path>) -> Result<(u128, u128)> {
    let mut f = File::open(path).map_err(io(path))?;
    let mut out = match copy_to {
        Some(to) => Some(
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(to)
                .map_err(io(to))?,
        ),
        None => None,
    };
    let mut whole = Xxh3::new();
    let mut head = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut read = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        whole.update(chunk);
        if let (Some(o), Some(to)) = (out.as_mut(), copy_to) {
            o.write_all(chunk).map_err(io(to))?;
        }
        // The edges as edge_hash reads them: the head, then the bytes past both the
        // head and size - EDGE.
        let start = read;
        let end = read + n as u64;
        if start < EDGE.min(size) {
            let to = end.min(EDGE.min(size));
            head.extend_from_slice(&chunk[..(to - start) as usize]);
        }
        let tail_from = size.saturating_sub(EDGE).max(EDGE.min(size));
        if end > tail_from {
            let from = tail_from.max(start);
            tail.extend_from_slice(&chunk[(from - start) as usize..]);
        }
        read = end;
    }
    if read != size {
        return Err(BackupError::Damaged(format!(
            "{}: {read} bytes, not the {size} listed (did it change while it was read?)",
            path.display()
        )));
    }
    if let (Some(o), Some(to)) = (out, copy_to) {
        o.sync_all().map_err(io(to))?;
    }
    head.extend_from_slice(&tail);
    head.extend_from_slice(&size.to_le_bytes());
    Ok((whole.digest128(), xxh3_128(&head)))
}

/// What a check of one backup found.
#[derive(Debug, Clone, Serialize)]
pub struct Verified {
    /// The backup's folder.
    pub backup: PathBuf,
    /// Its number in the folder.
    pub number: u64,
    /// The snapshot it holds.
    pub snapshot: u64,
    /// Its files.
    pub total: Count,
    /// Each file that is missing, of another size, or whose bytes differ from their
    /// checksum; empty when the backup is whole.
    pub problems: Vec<String>,
}

/// Checks every file of the backups in `dir` (or only that of snapshot `only`) against
/// its checksum. A file that several backups share (hard links) is read once.
/// `progress(done, total)` in bytes.
pub fn verify(
    dir: &Path,
    only: Option<u64>,
    mut progress: impl FnMut(u64, u64),
) -> Result<Vec<Verified>> {
    use std::os::unix::fs::MetadataExt;
    let _lock = folder_lock(dir)?;
    let mut read = Vec::new();
    for (n, b) in chosen(dir, only)? {
        let sums = Checksums::read(&b);
        read.push((n, b, sums));
    }
    let mut out = Vec::new();
    // A numbered folder without its checksums: a backup whose CHECKSUMS was lost.
    if only.is_none() && !dir.join(CHECKSUMS).exists() {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some((n, false)) = numbered(&name) {
                if !e.path().join(CHECKSUMS).exists() {
                    out.push(Verified {
                        backup: e.path(),
                        number: n,
                        snapshot: 0,
                        total: Count::default(),
                        problems: vec![format!(
                            "{}: no CHECKSUMS: not a complete backup (its files cannot be checked)",
                            e.path().display()
                        )],
                    });
                }
            }
        }
    }
    let total: u64 = read
        .iter()
        .filter_map(|(_, _, s)| s.as_ref().ok())
        .flat_map(|s| s.files.iter().map(|e| e.size))
        .sum();
    let mut seen: HashMap<(u64, u64), u128> = HashMap::new();
    let mut done = 0u64;
    for (number, backup, sums) in read {
        let mut v = Verified {
            backup: backup.clone(),
            number,
            snapshot: sums.as_ref().map_or(0, |s| s.snapshot),
            total: Count::default(),
            problems: Vec::new(),
        };
        let sums = match sums {
            Ok(s) => s,
            Err(e) => {
                v.problems.push(e.to_string());
                out.push(v);
                continue;
            }
        };
        for e in &sums.files {
            let path = backup.join(&e.path);
            v.total.add(e.size);
            done += e.size;
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(err) => {
                    v.problems.push(format!("{}: {err}", path.display()));
                    continue;
                }
            };
            if meta.len() != e.size {
                v.problems.push(format!(
                    "{}: {} bytes, the checksums list {}",
                    path.display(),
                    meta.len(),
                    e.size
                ));
                continue;
            }
            let hash = match seen.get(&(meta.dev(), meta.ino())) {
                Some(h) => *h,
                None => match hash_file(&path, e.size, None) {
                    Ok((h, _)) => {
                        seen.insert((meta.dev(), meta.ino()), h);
                        h
                    }
                    Err(err) => {
                        v.problems.push(err.to_string());
                        continue;
                    }
                },
            };
            if hash != e.hash {
                v.problems.push(format!(
                    "{}: its bytes differ from its checksum (XXH3-128 {hash:032x}, listed {:032x})",
                    path.display(),
                    e.hash
                ));
            }
            progress(done, total);
        }
        out.push(v);
    }
    Ok(out)
}

/// The backups `dir` names: itself when it is one backup, else those it holds (only
/// that of snapshot `only` when given).
fn chosen(dir: &Path, only: Option<u64>) -> Result<Vec<(u64, PathBuf)>> {
    if dir.join(CHECKSUMS).exists() {
        if only.is_some() {
            return Err(BackupError::Unknown(format!(
                "{} is one backup: --backup picks one in the folder that holds backups",
                dir.display()
            )));
        }
        let n = dir
            .file_name()
            .and_then(|n| numbered(n.to_str()?))
            .map_or(0, |(n, _)| n);
        return Ok(vec![(n, dir.to_path_buf())]);
    }
    if !dir.is_dir() {
        return Err(BackupError::Unknown(format!(
            "{}: no such folder of backups",
            dir.display()
        )));
    }
    let all: Vec<(u64, PathBuf)> = list(dir)
        .into_iter()
        .filter(|(n, _)| only.is_none_or(|o| o == *n))
        .collect();
    if all.is_empty() {
        return Err(match only {
            Some(n) => BackupError::Unknown(format!(
                "{} holds no complete backup {n} (those it holds: {})",
                dir.display(),
                list(dir)
                    .iter()
                    .map(|(n, _)| n.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            None => BackupError::NoBackup(dir.to_path_buf()),
        });
    }
    Ok(all)
}

/// The shared lock of the folder of backups `dir` names (itself, or the folder that
/// holds it when it is one backup), so that no pruning backup removes what is read.
fn folder_lock(dir: &Path) -> Result<Option<File>> {
    let folder = if dir.join(CHECKSUMS).exists() {
        dir.parent().unwrap_or(Path::new("."))
    } else {
        dir
    };
    if !folder.join(LOCK).exists() {
        return Ok(None);
    }
    lock(folder, false).map(Some)
}

/// What a restore did.
#[derive(Debug, Clone, Serialize)]
pub struct Restored {
    /// The backup restored.
    pub backup: PathBuf,
    /// The snapshot it held.
    pub snapshot: u64,
    /// The new index.
    pub db: PathBuf,
    /// The files copied.
    pub total: Count,
}

/// Restores the newest backup in `from` (or that of snapshot `only`; or `from` itself
/// when it is one backup) into a new index at `db`, checking every file as it is copied,
/// and publishes it so that `serve` reads it at once. A damaged backup leaves no index.
pub fn restore(
    from: &Path,
    only: Option<u64>,
    db: &Path,
    config: &Config,
    mut progress: impl FnMut(u64, u64),
) -> Result<Restored> {
    let empty_dir = match std::fs::read_dir(db) {
        Ok(mut d) => {
            if d.next().is_some() {
                return Err(BackupError::NotEmpty(db.to_path_buf()));
            }
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(_) if db.exists() => return Err(BackupError::NotEmpty(db.to_path_buf())),
        Err(e) => return Err(io(db)(e)),
    };
    let _lock = folder_lock(from)?;
    let (_, backup) = chosen(from, only)?
        .pop()
        .ok_or_else(|| BackupError::NoBackup(from.to_path_buf()))?;
    let sums = Checksums::read(&backup)?;
    let snapshot = sums.snapshot;
    let total: u64 = sums.files.iter().map(|e| e.size).sum();
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".restoring");
    let building = db.with_file_name(name);
    if building.exists() {
        std::fs::remove_dir_all(&building).map_err(io(&building))?;
    }
    let copied = (|| {
        let mut done = 0u64;
        for e in &sums.files {
            let (from, to) = (backup.join(&e.path), building.join(&e.path));
            if let Some(parent) = to.parent() {
                crate::durable::create_dir_all(parent).map_err(io(parent))?;
            }
            let size = std::fs::metadata(&from).map_err(io(&from))?.len();
            if size != e.size {
                return Err(BackupError::Damaged(format!(
                    "{}: {size} bytes, the checksums list {}: the backup is damaged",
                    from.display(),
                    e.size
                )));
            }
            let (hash, _) = hash_file(&from, e.size, Some(&to))?;
            if hash != e.hash {
                return Err(BackupError::Damaged(format!(
                    "{}: its bytes differ from its checksum: the backup is damaged (restore another with --backup N)",
                    from.display()
                )));
            }
            done += e.size;
            progress(done, total);
        }
        // Opened and published here, before it takes its name: a restore that fails
        // (another schema, other parameters) or is killed leaves no index at `db`.
        let index = Index::open(&building, config, false)?;
        snapshots::publish(&index)?;
        drop(index);
        sync_folders(&building)
    })();
    if let Err(e) = copied {
        let _ = std::fs::remove_dir_all(&building);
        return Err(e);
    }
    if empty_dir {
        std::fs::remove_dir(db).map_err(io(db))?;
    }
    std::fs::rename(&building, db).map_err(io(db))?;
    let parent = match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    crate::durable::sync_dir(parent).map_err(io(parent))?;
    Ok(Restored {
        backup,
        snapshot,
        db: db.to_path_buf(),
        total: Count {
            files: sums.files.len() as u64,
            bytes: total,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_that_name_a_file_outside_the_backup_are_refused() {
        for path in ["../x.sst", "/etc/passwd", "a/../../b", "CHECKSUMS", ""] {
            let dir = tempfile::tempdir().unwrap();
            let sums = Checksums {
                snapshot: 1,
                files: vec![Entry {
                    path: path.into(),
                    size: 1,
                    hash: 2,
                    edge: 3,
                }],
            };
            std::fs::write(dir.path().join(CHECKSUMS), sums.text()).unwrap();
            let e = Checksums::read(dir.path()).err();
            assert!(
                matches!(e, Some(BackupError::Damaged(_))),
                "{path:?}: {e:?}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = Checksums {
            snapshot: 4,
            files: vec![Entry {
                path: "postings/0000000001.run".into(),
                size: 1,
                hash: 2,
                edge: 3,
            }],
        };
        std::fs::write(dir.path().join(CHECKSUMS), ok.text()).unwrap();
        assert_eq!(Checksums::read(dir.path()).unwrap().snapshot, 4);
    }
}
