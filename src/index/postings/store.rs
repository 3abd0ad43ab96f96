//! The stored postings: the runs in `DIR/postings/`, listed by its `MANIFEST`.
//!
//! The manifest names the runs, oldest first (their doc ranges follow each other), and
//! the *mark*: the first doc id whose postings are not stored (the end of the last run).
//! A change — a spilled run, runs merged — writes its new files, syncs them, then
//! replaces the manifest (written aside, synced, renamed): a kill leaves the old state or
//! the new one, and files no manifest names are removed at the next writable open.
//! Docs from the mark on are rebuilt from their sketches ([`super::Fresh::load`]), so
//! the write-ahead log holding those sketches is flushed before a spill.
//!
//! A [`Store`] never changes: a change makes a new one. Readers (the pair step, a
//! server's snapshot) keep the one they started with, whose files stay readable even
//! when a merge has unlinked them. A published snapshot hard-links the runs and copies
//! the manifest ([`Store::link_into`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::run::{self, io, Run, RunWriter};
use super::DIR;
use crate::index::{IndexError, Result};

/// The list of the runs, in [`DIR`].
const MANIFEST: &str = "MANIFEST";
const HEADER: &str = "tidemark postings 1";
/// Runs a lookup reads at most: past this the newest are merged at once.
const MAX_RUNS: usize = 12;

/// The runs of an index, as of one manifest.
#[derive(Debug, Default, Clone)]
pub struct Store {
    dir: PathBuf,
    runs: Vec<Arc<Run>>,
    mark: u64,
    /// Number of the next run file.
    next: u64,
}

fn damaged(path: &Path, line: usize, what: &str) -> IndexError {
    IndexError::Corruption {
        cf: DIR,
        comment: format!(
            "manifest {} is damaged at line {line}: {what}; rebuild the index (ingest its sweeps into a new --db)",
            path.display()
        ),
    }
}

/// Unlinks runs merged away (readers that mapped them keep reading them).
fn remove(gone: Vec<Arc<Run>>) {
    for r in gone {
        let _ = std::fs::remove_file(r.path());
    }
}

fn run_name(n: u64) -> String {
    format!("{n:010}.run")
}

/// A manifest's lines, read and checked.
struct Manifest {
    mark: u64,
    next: u64,
    runs: Vec<String>,
}

impl Manifest {
    /// The manifest of `dir` (`None`: it has none, no postings were stored).
    fn read(dir: &Path) -> Result<Option<Manifest>> {
        let path = dir.join(MANIFEST);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&path, e)),
        };
        let lines = text.lines().count();
        let body_len = text
            .rfind("crc ")
            .ok_or_else(|| damaged(&path, lines, "no checksum line"))?;
        let (body, crc_line) = text.split_at(body_len);
        let crc = crc_line
            .trim()
            .strip_prefix("crc ")
            .and_then(|c| u32::from_str_radix(c, 16).ok());
        if crc != Some(crc32fast::hash(body.as_bytes())) {
            return Err(damaged(&path, lines, "checksum mismatch"));
        }
        let mut m = Manifest {
            mark: 0,
            next: 1,
            runs: Vec::new(),
        };
        for (i, line) in body.lines().enumerate() {
            let f: Vec<&str> = line.split(' ').collect();
            match (i, f.as_slice()) {
                (0, _) if line == HEADER => {}
                (0, _) => return Err(damaged(&path, 1, "not a postings manifest of this version")),
                (_, ["mark", v]) => {
                    m.mark = v.parse().map_err(|_| damaged(&path, i + 1, "bad mark"))?
                }
                (_, ["next", v]) => {
                    m.next = v.parse().map_err(|_| damaged(&path, i + 1, "bad next"))?
                }
                (_, ["run", name]) if !name.contains('/') => m.runs.push(name.to_string()),
                _ => return Err(damaged(&path, i + 1, "unknown line")),
            }
        }
        Ok(Some(m))
    }
}

/// The mark of the postings in `dir` (the manifest alone: no run is opened).
pub fn mark_of(dir: &Path) -> Result<u64> {
    Ok(Manifest::read(dir)?.map_or(0, |m| m.mark))
}

impl Store {
    /// The runs in `dir` (none when it has no manifest). `writable`: this process owns
    /// the index, and removes files no manifest names (a killed spill's or merge's).
    pub fn open(dir: &Path, writable: bool) -> Result<Store> {
        // A reader may race a merge that replaces the manifest and unlinks the runs it
        // merged: read the manifest again then.
        let mut tries = 0;
        loop {
            match Store::open_once(dir) {
                Err(IndexError::NotFound(_)) if tries < 5 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(IndexError::NotFound(m)) => {
                    return Err(IndexError::Corruption {
                        cf: DIR,
                        comment: m,
                    })
                }
                Ok(store) => {
                    if writable {
                        store.remove_strays()?;
                    }
                    return Ok(store);
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn open_once(dir: &Path) -> Result<Store> {
        let Some(m) = Manifest::read(dir)? else {
            return Ok(Store {
                dir: dir.to_path_buf(),
                next: 1,
                ..Store::default()
            });
        };
        let path = dir.join(MANIFEST);
        let mut store = Store {
            dir: dir.to_path_buf(),
            mark: m.mark,
            next: m.next,
            runs: Vec::with_capacity(m.runs.len()),
        };
        for name in &m.runs {
            let file = dir.join(name);
            let r = match Run::open(&file) {
                Ok(r) => r,
                Err(e) if !file.exists() => return Err(IndexError::NotFound(e.to_string())),
                Err(e) => return Err(e),
            };
            store.runs.push(Arc::new(r));
        }
        // Runs hold docs in order: their ranges ascend and the mark ends them.
        let mut end = 0;
        for r in &store.runs {
            if r.docs().start < end {
                return Err(damaged(&path, 0, "runs whose doc ranges overlap"));
            }
            end = r.docs().end;
        }
        if end > store.mark {
            return Err(damaged(&path, 0, "a mark before the last run's end"));
        }
        Ok(store)
    }

    /// Removes files of `dir` that the manifest does not name.
    fn remove_strays(&self) -> Result<()> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Ok(());
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let named = name == MANIFEST || self.runs.iter().any(|r| r.path() == e.path());
            if !named {
                std::fs::remove_file(e.path()).map_err(|err| io(&e.path(), err))?;
            }
        }
        Ok(())
    }

    /// First doc id whose postings are not stored.
    pub fn mark(&self) -> u64 {
        self.mark
    }

    /// The runs, oldest first.
    pub fn runs(&self) -> &[Arc<Run>] {
        &self.runs
    }

    /// Bytes of the runs.
    pub fn bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.bytes()).sum()
    }

    /// Records stored.
    pub fn records(&self) -> u64 {
        self.runs.iter().map(|r| r.len() as u64).sum()
    }

    fn save(&self) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let mut body = format!("{HEADER}\nmark {}\nnext {}\n", self.mark, self.next);
        for r in &self.runs {
            let name = r.path().file_name().unwrap_or_default().to_string_lossy();
            body.push_str(&format!("run {name}\n"));
        }
        body.push_str(&format!("crc {:08x}\n", crc32fast::hash(body.as_bytes())));
        let path = self.dir.join(MANIFEST);
        crate::durable::write_atomic(&path, body.as_bytes()).map_err(|e| io(&path, e))
    }

    /// This store with one more run, of the docs from the mark to `end`, written by
    /// `fill` (about `expect` records; lists kept to `limit` bytes when runs merge, on
    /// `threads` threads); the manifest names it when this returns. No record: only the
    /// mark moves.
    pub fn with_run(
        &self,
        end: u64,
        expect: usize,
        (limit, threads): (usize, usize),
        fill: impl FnOnce(&mut RunWriter) -> Result<()>,
    ) -> Result<Store> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let mut next = self.clone();
        let path = self.dir.join(run_name(next.next));
        next.next += 1;
        let mut w = RunWriter::create(&path, expect, self.mark..end)?;
        fill(&mut w)?;
        if w.is_empty() {
            w.abandon();
        } else {
            next.runs.push(Arc::new(w.finish()?));
        }
        next.mark = end;
        let gone = next.merge_over(MAX_RUNS, false, (limit, threads))?;
        next.save()?;
        remove(gone);
        Ok(next)
    }

    /// This store without the runs that reach past `next_doc` (the index's next doc
    /// id), its mark the end of the runs kept: the repair of a mark that a power cut left
    /// ahead of the docs RocksDB kept (their postings are stale: new docs will take
    /// those ids). The docs from the new mark on are rebuilt from their sketches, as
    /// after any spill. The manifest names the result when this returns.
    pub fn truncated(&self, next_doc: u64) -> Result<Store> {
        let mut next = self.clone();
        let keep = next
            .runs
            .iter()
            .take_while(|r| r.docs().end <= next_doc)
            .count();
        let gone: Vec<Arc<Run>> = next.runs.split_off(keep);
        next.mark = next.runs.last().map_or(0, |r| r.docs().end);
        next.save()?;
        remove(gone);
        Ok(next)
    }

    /// Merges the newest runs while there are more than `max_runs`, or (`tiered`) while
    /// the one before the newest is at most twice the newest's size: size-tiered, so
    /// each record is rewritten O(log n) times. Lists are kept to `limit` bytes, merged
    /// on `threads` threads. Returns the runs merged away; does not save the manifest.
    fn merge_over(
        &mut self,
        max_runs: usize,
        tiered: bool,
        (limit, threads): (usize, usize),
    ) -> Result<Vec<Arc<Run>>> {
        let mut gone = Vec::new();
        while self.runs.len() >= 2 {
            let n = self.runs.len();
            let (a, b) = (self.runs[n - 2].clone(), self.runs[n - 1].clone());
            if n <= max_runs && !(tiered && a.len() <= 2 * b.len()) {
                break;
            }
            let path = self.dir.join(run_name(self.next));
            self.next += 1;
            let merged = run::merge(&[&a, &b], &path, limit, threads)?;
            self.runs.truncate(n - 2);
            self.runs.push(Arc::new(merged));
            gone.extend([a, b]);
        }
        Ok(gone)
    }

    /// This store with its newest runs merged size-tiered (see [`Store::merge_over`]),
    /// lists kept to `limit` bytes, on `threads` threads; the merged-away files removed.
    /// Returns the store and the bytes written.
    pub fn settled(&self, limit: usize, threads: usize) -> Result<(Store, u64)> {
        let mut next = self.clone();
        let gone = next.merge_over(MAX_RUNS, true, (limit, threads))?;
        if gone.is_empty() {
            return Ok((next, 0));
        }
        next.save()?;
        remove(gone);
        let written = next.runs.last().map_or(0, |r| r.bytes());
        Ok((next, written))
    }

    /// Hard-links the runs into `dir` and writes the manifest there (a snapshot's).
    pub fn link_into(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        for r in &self.runs {
            let to = dir.join(r.path().file_name().unwrap_or_default());
            // Linked (the runs never change); copied onto another file system.
            if std::fs::hard_link(r.path(), &to).is_err() {
                std::fs::copy(r.path(), &to).map_err(|e| io(&to, e))?;
            }
        }
        let copy = Store {
            dir: dir.to_path_buf(),
            ..self.clone()
        };
        copy.save()?;
        // The links' names, on disk before the snapshot that holds them is published.
        crate::durable::sync_dir(dir).map_err(|e| io(dir, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::postings::run::entry;

    fn store_with(dir: &Path, runs: &[(u64, &[u64])]) -> Store {
        let mut s = Store::open(dir, true).unwrap();
        for (end, keys) in runs {
            let first = s.mark();
            s = s
                .with_run(*end, keys.len(), (99, 2), |w| {
                    for k in *keys {
                        w.push(*k, &entry(first, 0, 1))?;
                    }
                    Ok(())
                })
                .unwrap();
        }
        s
    }

    #[test]
    fn runs_survive_reopening_and_merge_size_tiered() {
        let d = tempfile::tempdir().unwrap();
        let s = store_with(d.path(), &[(5, &[1, 2, 3, 4]), (7, &[]), (9, &[2, 8])]);
        assert_eq!((s.mark(), s.runs().len()), (9, 2));
        let again = Store::open(d.path(), true).unwrap();
        assert_eq!((again.mark(), again.records()), (9, 6));
        // 4 records then 2: the older is at most twice the newer, so they merge.
        let (merged, written) = again.settled(99, 2).unwrap();
        assert_eq!((merged.runs().len(), merged.records()), (1, 6));
        assert!(written > 0);
        let files = std::fs::read_dir(d.path()).unwrap().count();
        assert_eq!(files, 2, "the manifest and one run");
        assert_eq!(Store::open(d.path(), false).unwrap().records(), 6);
    }

    #[test]
    fn strays_go_and_a_damaged_manifest_is_named() {
        let d = tempfile::tempdir().unwrap();
        store_with(d.path(), &[(5, &[1, 2])]);
        std::fs::write(d.path().join("0000000077.tmp"), b"half a run").unwrap();
        Store::open(d.path(), false).unwrap();
        assert!(
            d.path().join("0000000077.tmp").exists(),
            "a reader removes nothing"
        );
        Store::open(d.path(), true).unwrap();
        assert!(!d.path().join("0000000077.tmp").exists());
        let m = d.path().join(MANIFEST);
        let text = std::fs::read_to_string(&m)
            .unwrap()
            .replace("mark 5", "mark 6");
        std::fs::write(&m, text).unwrap();
        let e = Store::open(d.path(), true).unwrap_err().to_string();
        assert!(e.contains("MANIFEST") && e.contains("checksum"), "{e}");
    }
}
