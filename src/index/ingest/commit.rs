//! Step (c), the commit of one record and the resume point: every record is one atomic
//! batch that also advances its file's record count, so a killed ingest resumes
//! exactly; and the compactions an ingest settles before it returns.

use super::sequence::Content;
use super::{cf, Capture, Index, Prepared, Record, Result, Writer};
use crate::index::columns::files::Files;
use crate::index::columns::sweeps::Sweeps;
use crate::index::columns::Batch;
use crate::index::ingest::FileError;

/// Compactions at the end of an ingest: none is cut off at close and redone by the next
/// ingest (measured: ~0.7 s of CPU thrown away per later 100k-page sweep). Merges that
/// started during this ingest are waited for (with two subcompactions, as nothing else
/// runs then).
///
/// Postings: when this ingest spilled several sorted runs that together weigh at least
/// half of all postings stored before (a first sweep, a site redesign, a sweep larger
/// than the index so far), they are merged into one run now — the postings grow by half
/// or more at each such merge, so it rewrites each entry a bounded number of times.
/// Otherwise size-tiered compaction merges runs of similar size. Half, not all: a
/// redesign's runs weigh about what the index held before (rd100k sweep 3: a 2.4%
/// change in postings bytes tipped it), and when they were left unmerged the next sweep took
/// 11.2 s instead of 9.2 s with 260 MB more RSS, for the 3 s the merge costs here. Runs
/// spilled uncompressed (`transient`, a first sweep's) are always merged: the merge
/// writes them compressed.
pub(super) fn settle_compactions(
    index: &Index,
    postings_before: u64,
    spilled: (usize, u64),
    transient: usize,
) -> Result<()> {
    if (spilled.0 >= 2 && 2 * spilled.1 >= postings_before) || transient > 0 {
        index
            .db()
            .compact_range_cf(index.cf(cf::POSTINGS), None::<&[u8]>, None::<&[u8]>);
    }
    index
        .db()
        .wait_for_compact(&rocksdb::WaitForCompactOptions::default())?;
    Ok(())
}

/// Switches RocksDB's automatic compactions on or off (in this process).
pub(super) fn auto_compactions(index: &Index, on: bool) -> Result<()> {
    use std::sync::atomic::Ordering;
    // Each change rewrites RocksDB's OPTIONS file, with an fsync, per family: 0.1 s in
    // all, paid only when the setting changes (they are on at open).
    if index.compactions_paused.swap(!on, Ordering::SeqCst) == !on {
        return Ok(());
    }
    let off = if on { "false" } else { "true" };
    for name in cf::ALL {
        index
            .db()
            .set_options_cf(index.cf(name), &[("disable_auto_compactions", off)])?;
    }
    Ok(())
}

impl Writer<'_> {
    pub(super) fn index_params_sketch(&self) -> crate::sketch::SketchParams {
        let p = self.index.params();
        crate::sketch::SketchParams {
            shingle_width: p.shingle_width,
            seed: p.seed,
            sample_target: p.sample_target,
        }
    }

    pub(super) fn skip(&mut self, reason: &str) {
        *self
            .sweep
            .counts
            .skipped
            .entry(reason.to_string())
            .or_default() += 1;
    }

    /// Commits one record: its capture (if it is one) and the file's resume point.
    pub(super) fn record(
        &mut self,
        file: usize,
        rec: &Record,
        cap: &Capture,
        prepared: Option<Prepared>,
        content: Content,
    ) -> Result<()> {
        self.sweep.counts.records += 1;
        let mut batch = Batch::default();
        let record_no = self.files[file].2.records;
        self.clock = std::time::Instant::now();
        self.capture(&mut batch, file, record_no, rec, cap, prepared, content)?;
        super::lap(&mut self.clock, &mut self.summary.writer.captures_s);
        let (_, id, st) = &mut self.files[file];
        st.records += 1;
        // Both values keep their size whatever the number of files and records.
        batch.put::<Files>(self.index, id, st);
        batch.put::<Sweeps>(self.index, &self.sweep_id, &self.sweep);
        self.index.write(batch)?;
        super::lap(&mut self.clock, &mut self.summary.writer.write_s);
        Ok(())
    }

    pub(super) fn file_end(&mut self, file: usize, error: Option<(u64, String)>) -> Result<()> {
        let (name, id, st) = &mut self.files[file];
        st.complete = true;
        st.error = error.clone();
        if let Some((offset, message)) = error {
            self.summary.errors.push(FileError {
                file: name.clone(),
                offset,
                message,
            });
        }
        self.index.files().put_now(id, st)
    }
}
