//! Files written whole or not at all, and kept through a power cut: the bytes go to a
//! temporary file of a name no other writer uses (this process and a counter), which is
//! synced, renamed over the file, and its folder synced so the rename itself is on
//! disk. A failure at any step leaves the old file as it was and no temporary behind.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically and durably (see the module).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = Temp::beside(path);
    // A new file, never one already there under that name (nor a link's target).
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp.path())?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    tmp.commit(path)
}

/// Writes `bytes` to `path` whole (a reader sees the old file or the new one), but not
/// durably: for files that only say what is under way (an ingest's progress), where a
/// sync a second would cost more than losing the file in a power cut.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = Temp::beside(path);
    std::fs::write(tmp.path(), bytes)?;
    std::fs::rename(tmp.path(), path)?;
    std::mem::forget(tmp);
    Ok(())
}

/// Syncs a folder, so that the names created, renamed or removed in it are on disk. A
/// file system that cannot sync a folder (some network and FUSE mounts answer EINVAL)
/// is not an error: there is nothing more to do on it.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::File::open(dir)?.sync_all() {
        Err(e) if e.raw_os_error() == Some(22) => Ok(()),
        r => r,
    }
}

/// Creates `dir` and the folders above it that are missing, each named durably in its
/// parent (a new index must not vanish in a power cut after its first ingest ended).
pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut d = dir;
    while !d.as_os_str().is_empty() && !d.exists() {
        missing.push(d);
        match d.parent() {
            Some(p) => d = p,
            None => break,
        }
    }
    std::fs::create_dir_all(dir)?;
    for d in missing.iter().rev() {
        sync_dir(
            d.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        )?;
    }
    Ok(())
}

/// The temporary file of a write to `path` (for writers that stream into a file of
/// their own, then [`Temp::commit`] it): removed when dropped uncommitted.
pub struct Temp(PathBuf);

impl Temp {
    /// `DIR/.NAME.PID.N.R.tmp` beside `path`: unique to this process and call, and,
    /// by a random part, to this process among those of other machines writing to a
    /// shared folder (two attempts of one Spark task may have the same pid).
    pub fn beside(path: &Path) -> Temp {
        use std::hash::{BuildHasher, Hasher};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let r = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish() as u32;
        Temp(path.with_file_name(format!(".{name}.{}.{n}.{r:08x}.tmp", std::process::id())))
    }

    /// Where to write.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Renames the written (and synced) temporary over `path` and syncs the folder.
    pub fn commit(self, path: &Path) -> std::io::Result<()> {
        std::fs::rename(&self.0, path)?;
        std::mem::forget(self);
        sync_dir(
            path.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        )
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two, longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two, longer");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("plan.json")]);
        // A write that cannot finish (its target is a folder) keeps nothing of its own.
        std::fs::create_dir(dir.path().join("taken")).unwrap();
        std::fs::write(dir.path().join("taken/x"), b"").unwrap();
        assert!(write_atomic(&dir.path().join("taken"), b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
