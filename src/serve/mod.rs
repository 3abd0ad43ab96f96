//! `tidemark serve`: the index over HTTP, for the tools archivists already run.
//!
//! | path | what | module |
//! |---|---|---|
//! | `GET /{collection}?url=…` | pywb / OutbackCDX capture index (CDXJ, JSON, text, link) | [`cdx`] |
//! | `GET /{collection}/{timestamp}id_/{url}` | an archived payload, read from its WARC | [`memento`] |
//! | `GET /cdx/search/cdx`, `GET /wayback/available` | the Wayback Machine's CDX API | [`wayback`] |
//! | `GET /timemap/{link,json}/{url}`, `GET\|HEAD /timegate/{url}` | Memento (RFC 7089) | [`memento`] |
//! | `GET /api/…`, `/api/openapi.json` | tidemark's own JSON: the commands' `--json` | [`api`] |
//! | `GET /`, `GET /report` | the lost-and-found page, the change report | [`page`] |
//! | `GET /healthz`, `GET /readyz` | process up; index open and the sweep served | here |
//!
//! The server reads the newest *published* snapshot of the index (see
//! [`crate::index::snapshots`]): an ingest publishes one when it completes, and the server
//! switches to it between requests, so an answer comes from one whole sweep, never half
//! of one. Handlers hold no index logic: they parse parameters into the library's calls
//! ([`crate::query`], [`crate::report`]) and write what those return.

pub mod api;
pub mod cdx;
mod error;
pub mod links;
pub mod memento;
pub mod page;
mod params;
mod replay;
mod state;
mod stream;
pub mod wayback;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use crate::config::Config;
pub use error::ApiError;
pub(crate) use state::AppState;

/// What `tidemark serve` needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The index directory (its published snapshots are served).
    pub db: PathBuf,
    /// Configuration (`[serve]` for the limits, `[query]`, `[report]`).
    pub config: Config,
}

/// The OpenAPI description of the service: the JSON API (the commands' `--json`), the
/// capture index APIs (pywb/OutbackCDX, the Wayback Machine's) and Memento. Served at
/// `/api/openapi.json`; the guide's HTTP reference is generated from it.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "tidemark",
        description = "Lost and found, page histories, near-duplicates and change reports over a tidemark index (each `/api/` endpoint answers what the command of the same name prints with --json), and the capture index as pywb, OpenWayback, Wayback CDX and Memento clients read it."
    ),
    paths(
        api::whereis,
        api::history,
        api::similar,
        api::similar_post,
        api::cluster,
        api::report,
        api::changes,
        api::sweeps,
        api::stats,
        cdx::cdx,
        wayback::cdx,
        wayback::available,
        memento::timemap_link,
        memento::timemap_json,
        memento::timegate,
        memento::replay
    )
)]
pub struct ApiDoc;

/// Binds the listening socket, then serves until SIGINT or SIGTERM. `on_listen` is told
/// the bound address (with port 0, the one the system chose) before the first request.
pub async fn serve(opts: ServeOptions, on_listen: impl FnOnce(SocketAddr)) -> anyhow::Result<()> {
    let state = Arc::new(AppState::new(opts.db.clone(), opts.config.clone())?);
    let listener = tokio::net::TcpListener::bind(&opts.config.serve.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", opts.config.serve.listen))?;
    let addr = listener.local_addr()?;
    let follower = tokio::spawn(state::follow(state.clone()));
    on_listen(addr);
    let timeout = Duration::from_secs(opts.config.serve.request_timeout_s);
    let app = router(state.clone());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown_signal());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of file descriptors and the like: wait a little, go on.
                Err(e) => {
                    eprintln!("tidemark serve: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        // A streamed answer goes out in several writes (head, chunks, the last chunk):
        // with Nagle's algorithm each small write after the first waited for the client's
        // delayed ACK, 40 ms, which made p90 40 ms at 2,000 requests/s.
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service =
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                tower::ServiceExt::oneshot(app.clone(), req)
            });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            // A client that has not sent its whole request head by then is cut off.
            .header_read_timeout(timeout)
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {},
        _ = tokio::time::sleep(timeout) => eprintln!("tidemark serve: requests still under way after {}s were cut off", timeout.as_secs()),
    }
    follower.abort();
    eprintln!("tidemark serve: stopped");
    Ok(())
}

/// Every route, with the limits of `[serve]`.
pub fn router_for(db: PathBuf, config: Config) -> anyhow::Result<Router> {
    Ok(router(Arc::new(AppState::new(db, config)?)))
}

fn router(state: Arc<AppState>) -> Router {
    let limits = &state.config.serve;
    let timeout = Duration::from_secs(limits.request_timeout_s);
    let body = limits.max_body_bytes;
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(api::routes())
        .merge(wayback::routes())
        .merge(memento::routes())
        .merge(page::routes())
        .merge(cdx::routes())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(body))
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
            limits.max_concurrency,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            acl_user,
        ))
        .layer(axum::middleware::from_fn(log_request))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .with_state(state)
}

/// The user the configured header names (`serve.acl_user_header`), for the request's
/// view of the index ([`crate::access`]).
async fn acl_user(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let user = (req
        .headers()
        .get(state.config.serve.acl_user_header.as_str()))
    .and_then(|v| v.to_str().ok())
    .map(|v| v.trim().to_string())
    .filter(|v| !v.is_empty());
    state::REQUEST_USER.scope(user, next.run(req)).await
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready when a published snapshot is open: says which sweep it serves.
async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    match state.current() {
        Some(s) => {
            // The sweeps this reader may be told of (an embargo may hide the newest).
            let shown: Vec<_> = state::within(state.view(), || s.shown_sweeps().collect());
            Json(serde_json::json!({
                "ready": true,
                "snapshot": s.number,
                "sweeps": shown.len(),
                "sweep": shown.last().map(|(_, w)| w.label.clone()),
                "date": shown.last().map(|(_, w)| w.date.clone()),
            }))
            .into_response()
        }
        None => ApiError::unavailable(
            "no published sweep yet: an ingest publishes one when it completes".into(),
        )
        .into_response(),
    }
}

async fn not_found(req: Request) -> Response {
    ApiError::not_found(
        "route",
        format!(
            "no such endpoint: {} (see /api/openapi.json and the README)",
            req.uri().path()
        ),
    )
    .into_response()
}

/// One line per request on standard error: client, method, target, status, time.
async fn log_request(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let target = req.uri().to_string();
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_else(|| "-".into());
    let resp = next.run(req).await;
    eprintln!(
        "{peer} {method} {target} {} {:.1}ms",
        resp.status().as_u16(),
        started.elapsed().as_secs_f64() * 1e3
    );
    resp
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    eprintln!("tidemark serve: shutting down (requests under way finish)");
}
