//! Streamed answers: a producer on a blocking thread writes lines as it reads the index,
//! in chunks, so a match set of any size goes out without being held in memory. The
//! producer stops when the client goes away or the request's time is up.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::error::ApiError;
use super::state::{AppState, Request};

const CHUNK: usize = 32 * 1024;

/// Where a producer writes.
pub struct Sink {
    tx: mpsc::Sender<Result<Bytes, ApiError>>,
    buf: Vec<u8>,
    deadline: Instant,
    handle: tokio::runtime::Handle,
    /// Bytes written so far.
    pub written: u64,
    gone: bool,
    /// The worker slot while reading the index; given back while waiting for a client
    /// that reads slower than the index is read, and taken again before reading on.
    permit: Option<OwnedSemaphorePermit>,
    workers: Arc<Semaphore>,
    slow_answers: Arc<Semaphore>,
}

impl Sink {
    /// Appends bytes; false once the client is gone or the time is up (stop producing).
    pub fn write(&mut self, b: &[u8]) -> bool {
        self.buf.extend_from_slice(b);
        self.written += b.len() as u64;
        if self.buf.len() >= CHUNK {
            return self.flush();
        }
        !self.gone
    }

    /// Sends what is buffered.
    pub fn flush(&mut self) -> bool {
        self.send(true)
    }

    /// Sends what is buffered; `more`: the producer reads on after it (so it takes a
    /// worker back once the chunk is taken), else the answer is whole once it is queued.
    fn send(&mut self, more: bool) -> bool {
        if self.gone || self.buf.is_empty() {
            return !self.gone;
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        let full = match self.tx.try_send(Ok(chunk)) {
            Ok(()) => return true,
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.gone = true;
                return false;
            }
            Err(mpsc::error::TrySendError::Full(chunk)) => chunk,
        };
        // A client slower than the index: wait for it without holding a worker.
        self.permit = None;
        let deadline = self.deadline;
        let sent = wait_for_client(&self.handle, &self.tx, full, deadline, &self.slow_answers);
        if sent && more {
            let workers = self.workers.clone();
            self.permit = self
                .handle
                .block_on(tokio::time::timeout_at(deadline, workers.acquire_owned()))
                .ok()
                .and_then(|p| p.ok());
            self.gone = self.permit.is_none();
        } else {
            self.gone = !sent;
        }
        !self.gone
    }
}

/// Sends `item` to a client slower than the index (its channel is full), the worker
/// given back before: a thousand clients reading a byte a second must not keep the
/// others from the index. A short wait is everyone's (a client across the world); a
/// longer one only while fewer than `serve.max_slow_answers` wait already, else the
/// answer is cut (false), as it is when the client left or `deadline` passed.
pub(super) fn wait_for_client<T>(
    handle: &tokio::runtime::Handle,
    tx: &mpsc::Sender<T>,
    item: T,
    deadline: Instant,
    slow_answers: &Arc<Semaphore>,
) -> bool {
    let quick = Instant::now() + SHORT_WAIT;
    let sent = handle.block_on(async {
        match tokio::time::timeout_at(quick.min(deadline), tx.reserve()).await {
            Ok(Ok(slot)) => {
                slot.send(item);
                Ok(())
            }
            Ok(Err(_)) => Err(None),
            Err(_) => Err(Some(item)),
        }
    });
    match sent {
        Ok(()) => true,
        Err(None) => false,
        Err(Some(item)) => match slow_answers.clone().try_acquire_owned() {
            Ok(_waiting) => matches!(
                handle.block_on(tokio::time::timeout_at(deadline, tx.send(item))),
                Ok(Ok(()))
            ),
            Err(_) => false,
        },
    }
}

/// How long a streamed answer waits for its client before it counts as a slow answer
/// (`serve.max_slow_answers`).
const SHORT_WAIT: Duration = Duration::from_millis(250);

/// Runs `produce` over the snapshot served now on a blocking thread and streams what it
/// writes as a `content_type` body. An error before the first chunk is the answer's
/// status; after it, the connection is cut (the client sees a truncated body, not a
/// complete-looking one).
pub async fn stream(
    state: &Arc<AppState>,
    content_type: &'static str,
    produce: impl FnOnce(&Request, &mut Sink) -> Result<(), ApiError> + Send + 'static,
) -> Response {
    let budget = state.budget();
    let reader = state.reader();
    let permit = match state.permit().await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let Some(served) = state.current() else {
        return ApiError::unavailable(
            "no published sweep yet: an ingest publishes one when it completes".into(),
        )
        .into_response();
    };
    let (tx, mut rx) = mpsc::channel::<Result<Bytes, ApiError>>(8);
    let deadline = Instant::from_std(state.deadline());
    // The producer stops at its next index read once the client is gone (the body,
    // holding this, is dropped) or the time is up (the budget's deadline).
    let cancel = budget.canceller();
    let handle = tokio::runtime::Handle::current();
    let (workers, slow_answers) = (state.workers.clone(), state.slow_answers.clone());
    // Set once the producer wrote the whole answer (not stopped by the clock).
    let done = Arc::new(AtomicBool::new(false));
    let done_w = done.clone();
    tokio::task::spawn_blocking(move || {
        let request = Request::new(&served, reader, &permit);
        let mut sink = Sink {
            tx: tx.clone(),
            buf: Vec::with_capacity(CHUNK),
            deadline,
            handle: handle.clone(),
            written: 0,
            gone: false,
            permit: Some(permit),
            workers,
            slow_answers,
        };
        // A panic (a damaged index the reader did not expect) is an error answer, or a
        // cut connection once bytes are out: never a short body that looks whole.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            budget.run(|| produce(&request, &mut sink))
        }))
        .unwrap_or_else(|_| {
            Err(ApiError::internal(
                "the index could not be read here (see the server log)".into(),
            ))
        });
        match result {
            Ok(()) => {
                if sink.send(false) {
                    done_w.store(true, Ordering::Release);
                }
            }
            Err(e) => {
                eprintln!("tidemark serve: {}", e.message);
                // Before the first chunk the channel is empty: the error is the answer.
                // After it, no wait for a client (nor a worker held): the answer not
                // marked done ends in a cut connection anyway.
                sink.permit = None;
                let _ = tx.try_send(Err(e));
            }
        }
    });
    // The first message decides the status: an error, a first chunk, or nothing at all.
    let first = match rx.recv().await {
        None if done.load(Ordering::Acquire) => {
            return ([(header::CONTENT_TYPE, content_type)], Body::empty()).into_response()
        }
        None => {
            return ApiError::unavailable(
                "the answer could not be made (see the server log)".into(),
            )
            .into_response()
        }
        Some(Err(e)) => return e.into_response(),
        Some(Ok(b)) => b,
    };
    let rest = tokio_stream::wrappers::ReceiverStream::new(rx);
    // An answer whose time ran out while its client read ends in an error: the
    // connection is cut, and the client cannot take the lines it got for the whole.
    let end = tokio_stream::StreamExt::filter_map(tokio_stream::once(()), move |()| {
        (!done.load(Ordering::Acquire)).then(|| {
            Err(ApiError::unavailable(
                "the answer was not read within serve.request_timeout_s".into(),
            ))
        })
    });
    let rest = tokio_stream::StreamExt::chain(rest, end);
    // The body holds the canceller: a client that leaves mid-answer stops the producer
    // even while it finds nothing to send.
    let body = tokio_stream::StreamExt::map(
        tokio_stream::StreamExt::chain(tokio_stream::once(Ok(first)), rest),
        move |r: Result<Bytes, ApiError>| {
            let _held = &cancel;
            r.map_err(|e| std::io::Error::other(e.message))
        },
    );
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(body),
    )
        .into_response()
}
