//! Streamed answers: a producer on a blocking thread writes lines as it reads the index,
//! in chunks, so a match set of any size goes out without being held in memory. The
//! producer stops when the client goes away or the request's time is up.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
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
        if self.gone || self.buf.is_empty() {
            return !self.gone;
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        let sent = self.handle.block_on(async {
            tokio::time::timeout_at(self.deadline, self.tx.send(Ok(chunk))).await
        });
        self.gone = !matches!(sent, Ok(Ok(())));
        !self.gone
    }
}

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
    let deadline = Instant::now() + Duration::from_secs(state.config.serve.request_timeout_s);
    // The producer stops at its next index read once the client is gone (the body,
    // holding this, is dropped) or the time is up (the budget's deadline).
    let cancel = budget.canceller();
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut sink = Sink {
            tx: tx.clone(),
            buf: Vec::with_capacity(CHUNK),
            deadline,
            handle: handle.clone(),
            written: 0,
            gone: false,
        };
        // A panic (a damaged index the reader did not expect) is an error answer, or a
        // cut connection once bytes are out: never a short body that looks whole.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            budget.run(|| produce(&Request::new(&served, reader), &mut sink))
        }))
        .unwrap_or_else(|_| {
            Err(ApiError::internal(
                "the index could not be read here (see the server log)".into(),
            ))
        });
        match result {
            Ok(()) => {
                sink.flush();
            }
            Err(e) => {
                eprintln!("tidemark serve: {}", e.message);
                let _ = handle.block_on(tx.send(Err(e)));
            }
        }
    });
    // The first message decides the status: an error, a first chunk, or nothing at all.
    let first = match rx.recv().await {
        None => return ([(header::CONTENT_TYPE, content_type)], Body::empty()).into_response(),
        Some(Err(e)) => return e.into_response(),
        Some(Ok(b)) => b,
    };
    let rest = tokio_stream::wrappers::ReceiverStream::new(rx);
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
