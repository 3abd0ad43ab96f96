//! RocksDB's compactions at the end of an ingest: waited for, paused in the families
//! whose last flushes would start one, and switched on again by the next ingest. The
//! ingest says when ([`crate::ingest`]); the properties read and options set are here.

use super::columns::{self as cf, L0_COMPACTION_TRIGGER};
use super::{Index, IndexError, Result};

/// Bytes under which a family's merge at the end of an ingest is cheaper than pausing it.
const SMALL_FAMILY: u64 = 4 << 20;

impl Index {
    /// Waits for the compactions under way and due (with as many subcompactions as the
    /// index was opened with, as nothing else runs then).
    pub fn wait_for_compactions(&self) -> Result<()> {
        Ok(self
            .db()
            .wait_for_compact(&rocksdb::WaitForCompactOptions::default())?)
    }

    /// Switches RocksDB's automatic compactions back on, in the families
    /// [`Index::pause_compactions`] switched off (they are on at open).
    pub fn resume_compactions(&self) -> Result<()> {
        let paused = std::mem::take(&mut *self.compactions_paused.lock().map_err(poisoned)?);
        for name in paused {
            self.db()
                .set_options_cf(self.cf(name), &[("disable_auto_compactions", "false")])?;
        }
        Ok(())
    }

    /// Switches automatic compactions off, before the end of an ingest flushes its last
    /// memtables, in the families where those flushes could start one: their level-0
    /// files would reach the trigger (counting one more flush in each of `written_after`,
    /// and `extra_flushes` in every family), or one is due already (every family while
    /// one runs). Each switch rewrites RocksDB's whole OPTIONS file with an fsync, ~7 ms
    /// of CPU a family: all of them were most of the committing thread's CPU in a small
    /// sweep (llvm-docs sweep 1: 0.12 s serial, 0.03 s with only those near the trigger),
    /// and most ingests end with few or none near it.
    pub fn pause_compactions(&self, written_after: &[&str], extra_flushes: u64) -> Result<()> {
        let db = self.db();
        let int = |cf: &'static str, p: &str| -> Result<u64> {
            Ok(db.property_int_value_cf(self.cf(cf), p)?.unwrap_or(0))
        };
        let running = db
            .property_int_value("rocksdb.num-running-compactions")?
            .unwrap_or(0)
            > 0;
        let mut paused = self.compactions_paused.lock().map_err(poisoned)?;
        for name in cf::ALL {
            if paused.contains(name) {
                continue;
            }
            // Level-0 files once the memtables are flushed: one per immutable memtable
            // and one for the active one, plus the flushes after the last writes.
            let written = written_after.contains(name) as u64;
            let pending = int(name, "rocksdb.num-immutable-mem-table")?
                + (int(name, "rocksdb.num-entries-active-mem-table")? > 0) as u64;
            let l0 = int(name, "rocksdb.num-files-at-level0")? + pending + written + extra_flushes;
            let due = int(name, "rocksdb.compaction-pending")? > 0;
            // A small family's merge takes less than its pause (a few ms of a background
            // thread): it is left to run now.
            let small = int(name, "rocksdb.total-sst-files-size")?
                + int(name, "rocksdb.cur-size-all-mem-tables")?
                < SMALL_FAMILY;
            let trigger = l0 >= L0_COMPACTION_TRIGGER && !small;
            if running || due || trigger {
                db.set_options_cf(self.cf(name), &[("disable_auto_compactions", "true")])?;
                paused.push(name);
            }
        }
        Ok(())
    }
}

fn poisoned<T>(_: T) -> IndexError {
    IndexError::Invalid("a thread panicked holding the paused compactions".into())
}
