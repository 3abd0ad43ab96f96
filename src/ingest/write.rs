//! The batch writes, on a thread of their own: the committing thread hands a batch of
//! records over and goes on with the next one while RocksDB appends this one to its
//! write-ahead log and memtables. One write at a time is in the writing (a batch is
//! handed over only when the one before is written), so the index always holds a whole
//! prefix of the records with the resume points that say so, as when the committing
//! thread wrote them itself.
//!
//! What a write holds is readable before it is written only through the writer's
//! overlays ([`super::commit::Pending`], the union-find's `Staged`, the sequencing
//! overlay, the forest's lists, the batches' sketches); a reader that would need the
//! index itself waits for the write ([`Written::wait`], [`Written::wait_docs`]).

use std::sync::{Arc, Condvar, Mutex};

use crossbeam_channel::{bounded, Sender};

use super::{thread_cpu, Index, IndexError, Result};
use crate::index::columns::Batch;

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
    /// The first write that failed, and why: no write is done after it.
    error: Option<IndexError>,
    /// Seconds the thread spent writing, wall and CPU.
    busy_s: f64,
    cpu_s: f64,
}

impl Written {
    fn until(&self, done: impl Fn(&State) -> bool) -> Result<()> {
        let mut st = self.state.lock().map_err(|_| poisoned())?;
        loop {
            if let Some(e) = &st.error {
                return Err(e.clone());
            }
            if done(&st) {
                return Ok(());
            }
            st = self.changed.wait(st).map_err(|_| poisoned())?;
        }
    }

    /// Waits until write `n` (and so every write before it) is in the index.
    pub fn wait(&self, n: u64) -> Result<()> {
        self.until(|st| st.writes >= n)
    }

    /// Waits until every doc under `docs` is in the index.
    pub fn wait_docs(&self, docs: u64) -> Result<()> {
        self.until(|st| st.docs >= docs)
    }

    /// Seconds the writing thread spent writing: wall time and CPU.
    pub fn busy(&self) -> (f64, f64) {
        self.state
            .lock()
            .map(|st| (st.busy_s, st.cpu_s))
            .unwrap_or_default()
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
    /// Starts the writing thread in `scope`, for an index holding the docs under `docs`.
    /// It ends when the handle is dropped.
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
        let shared = Arc::clone(&written);
        // A pause before each write, for the tests that check that readers wait for
        // the write they need (unset in normal use).
        let delay = std::env::var("TIDEMARK_TEST_WRITE_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(std::time::Duration::from_millis);
        scope.spawn(move || {
            // A panic here must not leave the committing thread waiting.
            struct Guard<'a>(&'a Written);
            impl Drop for Guard<'_> {
                fn drop(&mut self) {
                    if std::thread::panicking() {
                        if let Ok(mut st) = self.0.state.lock() {
                            st.error.get_or_insert_with(poisoned);
                        }
                        self.0.changed.notify_all();
                    }
                }
            }
            let _guard = Guard(&shared);
            for (batch, docs) in batches {
                if let Some(d) = delay {
                    std::thread::sleep(d);
                }
                let (clock, cpu) = (std::time::Instant::now(), thread_cpu());
                let r = index.write(batch);
                let Ok(mut st) = shared.state.lock() else {
                    return;
                };
                st.busy_s += clock.elapsed().as_secs_f64();
                st.cpu_s += thread_cpu() - cpu;
                match r {
                    Ok(()) if st.error.is_none() => {
                        st.writes += 1;
                        st.docs = docs;
                    }
                    Ok(()) => {}
                    Err(e) => {
                        st.error.get_or_insert(e);
                    }
                }
                drop(st);
                shared.changed.notify_all();
            }
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
