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
mod conn;
mod error;
mod gate;
pub mod links;
pub mod memento;
mod memory;
pub use memory::few_arenas;
mod metrics;
pub mod page;
mod params;
mod replay;
mod replica;
mod replication;
mod reports;
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
        description = "Lost and found, page histories, near-duplicates and change reports over a tidemark index (each `/api/` endpoint answers what the command of the same name prints with --json), and the capture index as pywb, Wayback CDX and Memento clients read it."
    ),
    paths(
        api::whereis,
        api::history,
        api::related,
        api::inlinks,
        api::similar,
        api::similar_post,
        api::cluster,
        api::cluster_post,
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
        memento::replay,
        page::lost_and_found,
        page::report_page,
        api::openapi,
        healthz,
        readyz,
        metrics_text,
        replication::listing,
        replication::file
    ),
    modifiers(&CommonAnswers)
)]
pub struct ApiDoc;

/// The answers any route may give besides its own: the limits of `[serve]` and a
/// service with no snapshot to read yet. (The access rules hide or list captures; only
/// replay answers 403, described with its route.)
struct CommonAnswers;

impl utoipa::Modify for CommonAnswers {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::ResponseBuilder;
        let answer = |d: &str| ResponseBuilder::new().description(d).build();
        for (path, item) in doc.paths.paths.iter_mut() {
            // What the service says of itself reads no index (`/readyz` does: the sweeps
            // a reader may be told of).
            let of_index = !matches!(path.as_str(), "/healthz" | "/api/openapi.json" | "/metrics")
                && !path.starts_with("/replication/");
            let post = item.post.is_some();
            for (op, with_body) in [
                (&mut item.get, false),
                (&mut item.post, post),
                (&mut item.head, false),
            ] {
                let Some(op) = op else { continue };
                let mut add = |status: &str, d: &str| {
                    op.responses
                        .responses
                        .entry(status.to_string())
                        .or_insert_with(|| answer(d).into());
                };
                add("408", "the answer took longer than `serve.request_timeout_s` from the request's arrival (`{\"code\": \"timeout\"}`; requests over `serve.max_concurrency` wait their turn within it; a client that has not sent its request head by then is disconnected without an answer)");
                if with_body {
                    add("413", "a request body over `serve.max_body_bytes`");
                }
                if of_index {
                    add("414", "a URL over `serve.max_url_chars`");
                    add("503", "no published snapshot yet (`{\"code\": \"unavailable\"}`), or the request's reading budget spent (`{\"code\": \"over_budget\"}`), or over the connection caps (`{\"code\": \"too_many_connections\"}`)");
                    add("500", "the server's fault: `{\"code\": \"internal\"}`");
                }
                add("503", "over `serve.max_connections` or `serve.max_connections_per_client` (`{\"code\": \"too_many_connections\"}`, `Retry-After: 1`; the request is not read)");
            }
        }
    }
}

/// Binds the listening socket, then serves until SIGINT or SIGTERM. `on_listen` is told
/// the bound address (with port 0, the one the system chose) before the first request.
pub async fn serve(opts: ServeOptions, on_listen: impl FnOnce(SocketAddr)) -> anyhow::Result<()> {
    gate::allow_descriptors(opts.config.serve.max_connections);
    let state = Arc::new(AppState::new(opts.db.clone(), opts.config.clone())?);
    let listener = tokio::net::TcpListener::bind(&opts.config.serve.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", opts.config.serve.listen))?;
    let addr = listener.local_addr()?;
    let follower = tokio::spawn(state::follow(state.clone()));
    if !opts.config.serve.follow.is_empty() {
        let f = replica::Follower {
            db: opts.db.clone(),
            primary: opts.config.serve.follow.clone(),
            token: opts.config.serve.replication_token.clone(),
            config: opts.config.clone(),
            status: state.follower.clone(),
        };
        let every = Duration::from_millis(opts.config.serve.poll_ms);
        eprintln!(
            "tidemark serve: following {} into {}",
            f.primary,
            f.db.display()
        );
        std::thread::Builder::new()
            .name("tidemark-follow".into())
            .spawn(move || replica::follow(f, every))?;
    }
    let metrics_server = match opts.config.serve.metrics_listen.as_str() {
        "" => None,
        at => {
            let l = tokio::net::TcpListener::bind(at).await.map_err(|e| {
                anyhow::anyhow!("cannot listen on {at} (serve.metrics_listen): {e}")
            })?;
            eprintln!("tidemark serve: /metrics on http://{}", l.local_addr()?);
            let only = Router::new()
                .route("/metrics", get(metrics_text))
                .with_state(state.clone());
            Some(tokio::spawn(async move { axum::serve(l, only).await }))
        }
    };
    on_listen(addr);
    let timeout = Duration::from_secs(opts.config.serve.request_timeout_s);
    let limits = &opts.config.serve;
    let gate = gate::Gate::new(
        limits.max_connections,
        limits.max_connections_per_client,
        state.trusted_proxies.clone(),
    );
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
        let ticket = match gate.admit(peer.ip()) {
            Ok(t) => t,
            Err(over) => {
                state.metrics.connection_refused();
                gate.refuse(stream, peer.ip(), over);
                continue;
            }
        };
        // A streamed answer goes out in several writes (head, chunks, the last chunk):
        // with Nagle's algorithm each small write after the first waited for the client's
        // delayed ACK, 40 ms, which made p90 40 ms at 2,000 requests/s.
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let shared = Arc::new(conn::Shared::default());
        let io = conn::WriteDeadline::new(stream, timeout, shared.clone());
        let service =
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                // hyper hands over a connection's next request once the answer before
                // it is written: this answer's write deadline starts afresh.
                shared.request();
                let shared = shared.clone();
                let answer = tower::ServiceExt::oneshot(app.clone(), req);
                async move {
                    let r = answer.await?;
                    Ok::<_, std::convert::Infallible>(r.map(|b| conn::Watched::new(b, shared)))
                }
            });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            // A client that has not sent its whole request head by then is cut off.
            .header_read_timeout(timeout)
            .serve_connection(hyper_util::rt::TokioIo::new(io), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(ticket);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {},
        _ = tokio::time::sleep(timeout) => eprintln!("tidemark serve: requests still under way after {}s were cut off", timeout.as_secs()),
    }
    follower.abort();
    if let Some(m) = metrics_server {
        m.abort();
    }
    eprintln!("tidemark serve: stopped");
    Ok(())
}

/// Every route, with the limits of `[serve]`.
pub fn router_for(db: PathBuf, config: Config) -> anyhow::Result<Router> {
    Ok(router(Arc::new(AppState::new(db, config)?)))
}

fn router(state: Arc<AppState>) -> Router {
    let limits = &state.config.serve;
    let body = limits.max_body_bytes;
    let mut routes = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz));
    if limits.metrics_listen.is_empty() {
        routes = routes.route("/metrics", get(metrics_public));
    }
    // A follower presents the token; it serves no copies itself (its snapshots hold
    // a CHECKSUMS file of their own, and one hop is what is tested).
    if !limits.replication_token.is_empty() && limits.follow.is_empty() {
        routes = routes.merge(replication::routes());
    }
    routes
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
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            deadline,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::count,
        ))
        .with_state(state)
}

/// The request's one clock: its deadline, `serve.request_timeout_s` from now, for every
/// wait and read of its work ([`AppState::deadline`]); past it, a 408 (what was under
/// way stops at its next index read).
async fn deadline(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let timeout_s = state.config.serve.request_timeout_s;
    let at = std::time::Instant::now() + Duration::from_secs(timeout_s);
    let answer = tokio::time::timeout_at(at.into(), next.run(req));
    match state::REQUEST_DEADLINE.scope(at, answer).await {
        Ok(r) => r,
        Err(_) => ApiError::timed_out(timeout_s).into_response(),
    }
}

/// The user the configured header names (`serve.acl_user_header`), for the request's
/// view of the index ([`crate::access`]): only from a trusted front end
/// (`serve.trusted_proxies`), and sent once; anyone else's header, or one sent twice, is
/// ignored.
async fn acl_user(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    // Sent once: a front end that adds its own after the client's would otherwise let
    // the client's count.
    let mut sent = req
        .headers()
        .get_all(state.config.serve.acl_user_header.as_str())
        .iter();
    let once = match (sent.next(), sent.next()) {
        (Some(v), None) => Some(v),
        _ => None,
    };
    let user = peer
        .filter(|ip| state.trusted_proxies.trusts(*ip))
        .and(once)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    state::REQUEST_USER.scope(user, next.run(req)).await
}

/// `/metrics` on the service's own address: the metrics while nothing is hidden; under
/// access rules or an embargo, a pointer to `serve.metrics_listen` (the snapshot's
/// sweeps and age, and an ingest's progress, are of the whole index).
async fn metrics_public(State(state): State<Arc<AppState>>) -> Response {
    if !state.policy().is_open() {
        return ApiError::not_found(
            "/metrics",
            "under access rules or an embargo, /metrics is served on serve.metrics_listen only (its figures are of the whole index)".into(),
        )
        .into_response();
    }
    metrics_text(State(state)).await
}

/// The metrics, in the OpenMetrics text format (Prometheus reads it).
#[utoipa::path(get, path = "/metrics", tag = "service",
    responses((status = 200, description = "OpenMetrics text: `tidemark_http_requests_total{route,status}`, `tidemark_http_request_duration_seconds{route}`, `tidemark_http_errors_total{route,code}`, `tidemark_worker_slot_wait_seconds`, `tidemark_connections_refused_total`, `tidemark_snapshot`, `tidemark_snapshot_sweeps`, `tidemark_snapshot_age_seconds`, `tidemark_view_cache_bytes`, `tidemark_report_cache_bytes`; while an ingest runs into the index, `tidemark_ingest_running`, `tidemark_ingest_step{step}`, `tidemark_ingest_records`, `tidemark_ingest_input_bytes`, `tidemark_ingest_input_total_bytes`, `tidemark_ingest_docs_paired`, `tidemark_ingest_docs_waiting`, `tidemark_ingest_seconds`. Served on `serve.metrics_listen` instead when that is set, and only there under access rules or an embargo (404 here)")))]
async fn metrics_text(State(state): State<Arc<AppState>>) -> Response {
    let snapshot =
        (state.current()).map(|s| (s.number, s.sweep_count(), s.published, s.cache_bytes()));
    let ingest = crate::ingest::progress_file::read(&state.db).filter(|p| p.running());
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state
            .metrics
            .render(snapshot, ingest.as_ref(), state.follower.lag_seconds()),
    )
        .into_response()
}

#[utoipa::path(get, path = "/healthz", tag = "service",
    responses((status = 200, description = "`ok`: the process answers (whether or not a snapshot is published)")))]
async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready when a published snapshot is open: says which sweep it serves.
#[utoipa::path(get, path = "/readyz", tag = "service",
    responses((status = 200, description = "`{ready: true, snapshot, sweeps, sweep, date}`: a published snapshot is open (the sweeps this user may be told of)"),
              (status = 503, description = "no published snapshot yet: an ingest publishes one when it completes (`{\"code\": \"unavailable\"}`)")))]
async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    // The sweeps this reader may be told of (an embargo may hide the newest), dated as
    // it may see them: a worker's work the first time a view asks.
    let answer = state
        .with_index(|s| {
            let shown = s.shown_sweeps()?;
            Ok(serde_json::json!({
                "ready": true,
                "snapshot": s.snapshot(),
                "sweeps": shown.len(),
                "sweep": shown.last().map(|(_, w)| w.label.clone()),
                "date": shown.last().map(|(_, w)| w.date.clone()),
            }))
        })
        .await;
    match answer {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
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

#[cfg(test)]
mod tests {
    use utoipa::OpenApi;

    /// Each `.route("PATH", get(..).post(..))` of the router's source files, with its
    /// methods.
    fn routes() -> Vec<(String, Vec<&'static str>)> {
        let files = [
            include_str!("mod.rs"),
            include_str!("api.rs"),
            include_str!("cdx.rs"),
            include_str!("memento.rs"),
            include_str!("page.rs"),
            include_str!("wayback.rs"),
            include_str!("replication.rs"),
        ];
        let mut out = Vec::new();
        for text in files {
            for (i, _) in text.match_indices(".route(\"") {
                let rest = &text[i + 8..];
                let path = &rest[..rest.find('"').unwrap()];
                if !path.starts_with('/') {
                    continue; // this test's own words
                }
                let call = &rest[..rest.find('\n').unwrap()];
                let methods = ["get", "post", "head"]
                    .into_iter()
                    .filter(|m| call.contains(&format!("{m}(")))
                    .collect();
                out.push((path.to_string(), methods));
            }
        }
        out
    }

    /// Whether the router's `route` (axum: `{name}`, a last `{*rest}` for the rest of
    /// the path) serves the OpenAPI path `described` (`{name}` a segment each).
    fn serves(route: &str, described: &str) -> bool {
        let (r, d): (Vec<&str>, Vec<&str>) =
            (route.split('/').collect(), described.split('/').collect());
        let param = |s: &str| s.starts_with('{') && s.ends_with('}');
        for (i, seg) in r.iter().enumerate() {
            if seg.starts_with("{*") {
                return d.len() > i && d[i..].iter().all(|s| param(s));
            }
            match d.get(i) {
                Some(x) if x == seg || (param(seg) && param(x)) => {}
                _ => return false,
            }
        }
        r.len() == d.len()
    }

    #[test]
    fn every_route_of_the_router_is_described() {
        let doc = serde_json::to_value(super::ApiDoc::openapi()).unwrap();
        let paths = doc["paths"].as_object().unwrap();
        let routes = routes();
        assert!(routes.len() >= 18, "{routes:?}");
        for (route, methods) in routes {
            assert!(!methods.is_empty(), "{route}: no method found");
            for m in methods {
                let found = paths
                    .iter()
                    .any(|(p, item)| serves(&route, p) && item[m].is_object());
                assert!(
                    found,
                    "{} {route} has no entry in the OpenAPI description",
                    m.to_uppercase()
                );
            }
        }
        // The matching can fail: a route of another shape is not described.
        assert!(!paths.keys().any(|p| serves("/api/nothing", p)));
        assert!(!serves("/timemap/link/{*url}", "/timemap/json/{url}"));
        assert!(serves(
            "/{collection}/{*rest}",
            "/{collection}/{timestamp}/{url}"
        ));
    }
}
