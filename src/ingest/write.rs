//! The batch writes, on threads of their own: the committing thread hands a batch of
//! records over and goes on with the next one while one thread encodes it (sorts it
//! into a RocksDB batch, writes its new keys' files) and another has RocksDB apply the
//! one before (its write-ahead log and memtables). Batches are applied one at a time,
//! in the order handed over, so the index always holds a whole prefix of the records
//! with the resume points that say so, as when the committing thread wrote them itself.
//!
//! What a write holds is readable before it is written only through the writer's
//! overlays ([`super::commit::Pending`], the union-find's `Staged`, the sequencing
//! overlay, the forest's lists, the batches' sketches); a reader that would need the
//! index itself waits for the write ([`Written::wait`], [`Written::wait_docs`]).

use std::sync::{Arc, Condvar, Mutex};

use crossbeam_channel::{bounded, Sender};

use super::{thread_cpu, Index, IndexError, Result};
use crate::index::columns::Batch;
use crate::index::Encoded;

/// How far the writes have come, shared with the pair step.
#[derive(Default)]
pub struct Written {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Writes done (numbered from 1 in the order handed over).
    writes: u64,
    /// Docs under this id are in the index.
    docs: u64,
    /// The committing thread dropped a batch it had not handed over (its commit
    /// failed): docs not in the index by now will not be.
    abandoned: bool,
    /// The first write that failed, and why: no write is done after it.
    error: Option<IndexError>,
    /// Seconds the writing thread spent writing, wall and CPU.
    busy_s: f64,
    cpu_s: f64,
    /// CPU seconds of the encoding thread.
    encode_cpu_s: f64,
}

impl Written {
    /// Waits until `done` says how the wait ends (`Some`), or a write fails.
    fn until(&self, done: impl Fn(&State) -> Option<Result<()>>) -> Result<()> {
        let mut st = self.state.lock().map_err(|_| poisoned())?;
        loop {
            if let Some(e) = &st.error {
                return Err(e.clone());
            }
            if let Some(r) = done(&st) {
                return r;
            }
            st = self.changed.wait(st).map_err(|_| poisoned())?;
        }
    }

    /// Waits until write `n` (and so every write before it) is in the index.
    pub fn wait(&self, n: u64) -> Result<()> {
        self.until(|st| (st.writes >= n).then_some(Ok(())))
    }

    /// Waits until every doc under `docs` is in the index; an error once the committing
    /// thread has dropped a batch of those docs ([`Written::abandon_docs`]).
    pub fn wait_docs(&self, docs: u64) -> Result<()> {
        self.until(|st| match (st.docs >= docs, st.abandoned) {
            (true, _) => Some(Ok(())),
            (false, true) => Some(Err(IndexError::Invalid(format!(
                "docs under {docs} were not written: their commit failed"
            )))),
            (false, false) => None,
        })
    }

    /// The committing thread failed on a batch and dropped it: a pair step waiting for
    /// its docs stops waiting (with an error) instead of waiting for ever.
    pub fn abandon_docs(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.abandoned = true;
        }
        self.changed.notify_all();
    }

    /// Seconds the writing thread spent writing: wall time and CPU.
    pub fn busy(&self) -> (f64, f64) {
        self.state
            .lock()
            .map(|st| (st.busy_s, st.cpu_s))
            .unwrap_or_default()
    }

    /// CPU seconds the encoding thread spent.
    pub fn encode_cpu(&self) -> f64 {
        self.state
            .lock()
            .map(|st| st.encode_cpu_s)
            .unwrap_or_default()
    }

    /// Whether a write failed.
    fn failed(&self) -> bool {
        self.state.lock().map_or(true, |st| st.error.is_some())
    }

    /// Records that a thread of the writes failed (a panic: `poisoned`), and wakes the
    /// waiters.
    fn fail(&self, e: IndexError) {
        if let Ok(mut st) = self.state.lock() {
            st.error.get_or_insert(e);
        }
        self.changed.notify_all();
    }
}

/// Runs the loop of a writing thread; a panic of it marks the writes failed, with the
/// panic's message, so that the committing thread does not wait for them and hears why.
fn guarded(shared: &Written, run: impl FnOnce()) {
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        shared.fail(super::thread_failed("batch-writing", p.as_ref()));
    }
}

fn poisoned() -> IndexError {
    IndexError::Invalid("the batch writer panicked".into())
}

/// The handle of the writing thread.
pub struct Writes {
    to_write: Sender<(Batch, u64)>,
    /// Shared with the thread and the pair step.
    pub written: Arc<Written>,
}

impl Writes {
    /// Starts the encoding and writing threads in `scope`, for an index holding the
    /// docs under `docs`. They end when the handle is dropped.
    pub fn start<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        index: &'scope Index,
        docs: u64,
    ) -> Writes {
        let written = Arc::new(Written::default());
        if let Ok(mut st) = written.state.lock() {
            st.docs = docs;
        }
        let (to_write, batches) = bounded::<(Batch, u64)>(1);
        let (to_apply, encoded) = bounded::<(Result<Encoded>, u64)>(1);
        let shared = Arc::clone(&written);
        scope.spawn(move || {
            guarded(&shared, || {
                for (batch, docs) in batches {
                    // After a failure nothing more is written (the index keeps a prefix);
                    // the batches are taken still, so the committing thread hears why
                    // from `Written`, not that the writer stopped.
                    if shared.failed() {
                        continue;
                    }
                    let cpu = thread_cpu();
                    let r = index.encode(batch);
                    if let Ok(mut st) = shared.state.lock() {
                        st.encode_cpu_s += thread_cpu() - cpu;
                    }
                    if to_apply.send((r, docs)).is_err() {
                        break;
                    }
                }
            })
        });
        let shared = Arc::clone(&written);
        // A pause before each write, for the tests that check that readers wait for
        // the write they need (unset in normal use).
        let delay = std::env::var("TIDEMARK_TEST_WRITE_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(std::time::Duration::from_millis);
        scope.spawn(move || {
            guarded(&shared, || {
                for (encoded, docs) in encoded {
                    if shared.failed() {
                        continue;
                    }
                    crate::scan::test_panic("batch-writing", 1);
                    if let Some(d) = delay {
                        std::thread::sleep(d);
                    }
                    let (clock, cpu) = (std::time::Instant::now(), thread_cpu());
                    let r = encoded.and_then(|e| index.apply(e));
                    let Ok(mut st) = shared.state.lock() else {
                        return;
                    };
                    st.busy_s += clock.elapsed().as_secs_f64();
                    st.cpu_s += thread_cpu() - cpu;
                    match r {
                        Ok(()) => {
                            st.writes += 1;
                            st.docs = docs;
                        }
                        Err(e) => {
                            st.error.get_or_insert(e);
                        }
                    }
                    drop(st);
                    shared.changed.notify_all();
                }
            })
        });
        Writes { to_write, written }
    }

    /// Hands `batch` over; with it, the docs under `docs` are in the index.
    pub fn send(&self, batch: Batch, docs: u64) -> Result<()> {
        self.to_write
            .send((batch, docs))
            .map_err(|_| IndexError::Invalid("the batch writer stopped".into()))
    }
}
