//! Replication, the primary's side: the snapshot it serves, listed with its files'
//! checksums, and each of its files, for followers that present
//! `serve.replication_token` (the follower's side, and what the two share, is
//! [`super::replica`]).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use std::io::Read;

use super::error::ApiError;
use super::replica::{list, Listing};
use super::state::AppState;
use crate::backup::files_of;

/// The replication routes (added when `serve.replication_token` is set).
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/replication/snapshot", get(listing))
        .route("/replication/file/{*rest}", get(file))
}

/// Whether the request presents the token: their XXH3-128 compared in constant time
/// (the time tells neither a matching prefix nor the token's length).
fn authorized(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let token = state.config.serve.replication_token.as_bytes();
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .as_bytes();
    let (a, b) = (
        xxhash_rust::xxh3::xxh3_128(given).to_le_bytes(),
        xxhash_rust::xxh3::xxh3_128(token).to_le_bytes(),
    );
    let same = a.iter().zip(&b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0;
    if token.is_empty() || !same {
        return Err(ApiError::unauthorized(
            "replication needs `Authorization: Bearer` with the primary's serve.replication_token"
                .into(),
        ));
    }
    Ok(())
}

/// The snapshot served, for a follower.
#[utoipa::path(get, path = "/replication/snapshot", tag = "service",
    responses(
        (status = 200, description = "The snapshot served and its files with their XXH3-128 (for `serve --follow`; only with `Authorization: Bearer` and `serve.replication_token`)", body = Listing),
        (status = 401, description = "no token, or not the primary's `serve.replication_token`")))]
async fn listing(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Err(e) = authorized(&state, &headers) {
        return e.into_response();
    }
    let Some(served) = state.current() else {
        return ApiError::unavailable("no published snapshot yet".into()).into_response();
    };
    let s = state.clone();
    // One listing at a time: the first of a large index hashes every file (longer than
    // a request may take); a follower's retries wait for it and find its checksums.
    let listed = tokio::task::spawn_blocking(move || {
        let _one = s.listing.lock().unwrap_or_else(|p| p.into_inner());
        list(served.path(), served.number, &s.hashes)
    });
    match listed.await {
        Ok(Ok(l)) => Json(l).into_response(),
        Ok(Err(e)) => ApiError::internal(e).into_response(),
        Err(_) => ApiError::internal("the listing failed".into()).into_response(),
    }
}

/// One file of the snapshot served.
#[utoipa::path(get, path = "/replication/file/{snapshot}/{path}", tag = "service",
    params(("snapshot" = u64, Path, description = "the listing's snapshot"),
           ("path" = String, Path, description = "a path of the listing")),
    responses(
        (status = 200, description = "the file's bytes", content_type = "application/octet-stream"),
        (status = 401, description = "no token, or not the primary's `serve.replication_token`"),
        (status = 404, description = "not a file of the snapshot served (a newer one is: list again)")))]
async fn file(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    if let Err(e) = authorized(&state, &headers) {
        return e.into_response();
    }
    // Read after the token: the path as sent (a listed path needs no escapes, so an
    // escaped one matches none).
    let rest = uri.path().strip_prefix("/replication/file/").unwrap_or("");
    let parsed = rest
        .split_once('/')
        .and_then(|(n, p)| Some((n.parse::<u64>().ok()?, p.to_string())));
    let Some((snapshot, path)) = parsed else {
        return ApiError::not_found("path", "expected /replication/file/N/PATH".into())
            .into_response();
    };
    let Some(served) = state.current().filter(|s| s.number == snapshot) else {
        return ApiError::not_found(
            "snapshot",
            format!("snapshot {snapshot} is not the one served: list again"),
        )
        .into_response();
    };
    let listed = files_of(served.path())
        .ok()
        .and_then(|f| f.into_iter().find(|(p, _)| *p == path));
    let Some((_, size)) = listed else {
        return ApiError::not_found(
            "path",
            format!("{path} is not a file of snapshot {snapshot}"),
        )
        .into_response();
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    // The snapshot stays held (`served`) until its file is read.
    tokio::task::spawn_blocking(move || {
        let mut f = match std::fs::File::open(served.path().join(&path)) {
            Ok(f) => f,
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        };
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match f.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    if tx
                        .blocking_send(Ok(Bytes::copy_from_slice(&buf[..n])))
                        .is_err()
                    {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        }
    });
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_LENGTH, size.to_string()),
        ],
        Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)),
    )
        .into_response()
}
