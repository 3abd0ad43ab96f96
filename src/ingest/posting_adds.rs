//! The committed docs' posting entries into the postings buffer, on a thread of their
//! own when the pairs come from a pairs job's files (`ingest --pairs`). The local pair
//! step reads the buffer while a batch is committed, so there the adds wait for the end
//! of each batch on the committing thread ([`super::Writer::settle`]); pairs read from
//! files read nothing of it, and the adds and spills were the largest part of the
//! committing thread's time left (rd100k template change: ~0.4 s of adds and ~0.6 s of
//! spill in 2.1 CPU-s). The thread also spills: when the buffer fills, and after the
//! last batch, each time once every doc under the new mark is written.

use std::sync::Arc;

use crossbeam_channel::{bounded, Receiver, Sender};

use super::write::Written;
use super::{thread_cpu, Index, IndexError, Result};
use crate::index::postings::{AddLog, Fresh};

/// A doc's posting entries: doc, level, posting values it counts, values listed.
pub(super) type Add = (u64, u8, usize, Vec<u64>);

enum Msg {
    /// A committed batch's adds, in doc order.
    Batch(Vec<Add>),
    /// Every doc under this id is committed: spill up to it.
    End(u64),
}

/// What the thread leaves: the buffer (empty after the last spill), its CPU seconds and
/// those of the spills before the last.
pub(super) struct Done {
    pub fresh: Fresh,
    pub cpu_s: f64,
    pub spill_s: f64,
}

/// The handle of the thread.
pub(super) struct PostingAdds {
    to: Sender<Msg>,
    done: Receiver<Result<Done>>,
}

impl PostingAdds {
    /// Starts the thread in `scope` with `fresh`, whose entries it keeps as they come
    /// ([`AddLog`]), spilled (sorted on `threads` threads) before they would pass
    /// `budget` bytes; the thread leaves `fresh` emptied, its mark moved.
    pub(super) fn start<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        index: &'scope Index,
        fresh: Fresh,
        (budget, threads): (usize, usize),
        written: Arc<Written>,
    ) -> PostingAdds {
        // Two batches in flight at most: the committing thread goes on meanwhile.
        let (to, from) = bounded::<Msg>(2);
        let (send_done, done) = bounded(1);
        scope.spawn(move || {
            let cpu = thread_cpu();
            let mut spill_s = 0.0;
            // Nothing reads the entries before they are stored: kept as they come.
            let mut fresh = AddLog::new(fresh);
            let spill = |fresh: &mut AddLog, mark: u64| -> Result<()> {
                // The run claims the docs under `mark`: all must be written first.
                written.wait_docs(mark)?;
                fresh.spill(index, mark, threads)
            };
            let run = || -> Result<()> {
                for msg in &from {
                    match msg {
                        Msg::Batch(adds) => {
                            let values = adds.iter().map(|a| a.3.len()).sum();
                            if let Some(first) = adds.first().map(|a| a.0) {
                                if fresh.full(budget, values) {
                                    let t = std::time::Instant::now();
                                    spill(&mut fresh, first)?;
                                    spill_s += t.elapsed().as_secs_f64();
                                }
                            }
                            fresh.add_batch(&adds);
                        }
                        Msg::End(mark) => spill(&mut fresh, mark)?,
                    }
                }
                Ok(())
            };
            let r = super::or_failed("postings", run);
            let _ = send_done.send(r.map(|()| Done {
                fresh: fresh.into_fresh(),
                cpu_s: thread_cpu() - cpu,
                spill_s,
            }));
        });
        PostingAdds { to, done }
    }

    /// Hands over a committed batch's adds.
    pub(super) fn add(&self, adds: Vec<Add>) -> Result<()> {
        self.to.send(Msg::Batch(adds)).map_err(|_| self.failure())
    }

    /// Every doc under `mark` is committed: the buffer is spilled up to it (the thread
    /// does it while the end of the ingest goes on).
    pub(super) fn end(&self, mark: u64) -> Result<()> {
        self.to.send(Msg::End(mark)).map_err(|_| self.failure())
    }

    /// Why the thread stopped taking batches (it sent its result as it ended).
    fn failure(&self) -> IndexError {
        match self.done.recv() {
            Ok(Err(e)) => e,
            _ => stopped(),
        }
    }

    /// Waits for the thread to finish what it was handed: its buffer and times.
    pub(super) fn finish(self) -> Result<Done> {
        drop(self.to);
        self.done.recv().map_err(|_| stopped())?
    }
}

fn stopped() -> IndexError {
    IndexError::Invalid("the postings thread stopped".into())
}
