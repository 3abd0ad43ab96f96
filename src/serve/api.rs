//! tidemark's own JSON API: each endpoint answers exactly what the command of the same
//! name prints with `--json`, from the same library call. The OpenAPI description at
//! `/api/openapi.json` is generated from these handlers by utoipa.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, OpenApi};

use super::error::ApiError;
use super::params::{ApiQuery, ReportQuery};
use super::state::AppState;
use crate::query::cluster::{cluster as cluster_of, cluster_list};
use crate::query::diff::Archive;
use crate::query::history::history as history_of;
use crate::query::inbound::inbound as inbound_of;
use crate::query::related::{related as related_of, RelatedOptions};
use crate::query::similar::{similar as similar_to, Input, SimilarOptions};
use crate::query::summary::{stats as index_stats, sweeps_json};
use crate::query::whereis::{whereis as whereis_of, WhereisOptions};
use crate::report::changes::{page, ChangesOptions};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/whereis", get(whereis))
        .route("/api/history", get(history))
        .route("/api/related", get(related))
        .route("/api/inlinks", get(inlinks))
        .route("/api/similar", get(similar).post(similar_post))
        .route("/api/cluster", get(cluster).post(cluster_post))
        .route("/api/report", get(report))
        .route("/api/changes", get(changes))
        .route("/api/sweeps", get(sweeps))
        .route("/api/stats", get(stats))
        .route("/api/openapi.json", get(openapi))
}

#[utoipa::path(get, path = "/api/openapi.json",
    responses((status = 200, description = "this description (OpenAPI 3.1); `docs/openapi.json` in the repository is the same")))]
pub(crate) async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(super::ApiDoc::openapi())
}

fn flag(v: &Option<String>, name: &str) -> Result<bool, ApiError> {
    match v.as_deref() {
        None | Some("") | Some("0") | Some("false") => Ok(false),
        Some("1") | Some("true") => Ok(true),
        Some(o) => Err(ApiError::bad(
            name,
            format!("{o:?}: expected 1 or 0 (true or false)"),
        )),
    }
}

fn checked_url(state: &AppState, url: &str) -> Result<String, ApiError> {
    let max = state.config.serve.max_url_chars;
    if url.chars().count() > max {
        return Err(ApiError::too_long("url", max));
    }
    crate::url::check(url).map_err(|e| ApiError::bad("url", e))?;
    Ok(url.trim().to_string())
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Json<Value>, ApiError> {
    serde_json::to_value(v)
        .map(Json)
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// `url=`
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct UrlQuery {
    /// The URL (scheme, `www.`, case and trailing slash do not matter).
    url: String,
}

/// Where a page is now: alive, moved (its newest URL), gone or unknown, with evidence.
#[utoipa::path(get, path = "/api/whereis", params(UrlQuery),
    responses((status = 200, description = "as `tidemark whereis URL --json`: {url, status, newest_url, newest_date, evidence, alternatives, margin}"),
              (status = 400, description = "a bad or missing url")))]
async fn whereis(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<UrlQuery>,
) -> Result<Json<Value>, ApiError> {
    let url = checked_url(&state, &q.url)?;
    let opts = WhereisOptions {
        move_floor: state.config.query.move_floor,
        links: true,
    };
    state
        .with_index(move |s| to_json(&whereis_of(&s.searcher(), &url, opts)?))
        .await
}

/// `url=`, `sweep=`, `limit=`, `with_content=1`
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct RelatedQuery {
    /// The URL (pages of the sweep must link it).
    url: String,
    /// The sweep's label (default: the newest).
    sweep: Option<String>,
    /// Pages listed at most (default 10, at most 100).
    limit: Option<usize>,
    /// `1`: rank by the mean of anchor and content resemblance.
    with_content: Option<String>,
}

/// Pages related to a URL by their inbound anchor windows: the URLs whose bags of
/// anchor-window words resemble its own in a sweep, with the anchor words they share.
/// Under access rules, pages the reader may not see in that sweep are not listed.
#[utoipa::path(get, path = "/api/related", params(RelatedQuery),
    responses((status = 200, description = "as `tidemark related URL --json`: {url, surt, sweep, linking_pages, window_words, pages}"),
              (status = 400, description = "a bad or missing url, limit or with_content"),
              (status = 404, description = "no page of the sweep links the URL, or no such sweep")))]
async fn related(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<RelatedQuery>,
) -> Result<Json<Value>, ApiError> {
    let url = checked_url(&state, &q.url)?;
    let limit = q.limit.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::bad(
            "limit",
            format!("{limit}: expected 1 to 100"),
        ));
    }
    let with_content = flag(&q.with_content, "with_content")?;
    state
        .with_index(move |s| {
            let opts = RelatedOptions {
                sweep: Some(shown_sweep(s, q.sweep.as_deref())?),
                limit,
                with_content,
            };
            to_json(&related_of(&s.searcher(), &url, &opts)?)
        })
        .await
}

/// `url=`, `sweep=`
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct InlinksQuery {
    /// The URL linked to (it need not have been captured).
    url: String,
    /// The sweep's label (default: the newest).
    sweep: Option<String>,
}

/// The pages that link a URL in a sweep, each with the anchor windows of its links.
/// Under access rules, linking pages the reader may not see in that sweep are left out,
/// and a URL it may not see there is not found.
#[utoipa::path(get, path = "/api/inlinks", params(InlinksQuery),
    responses((status = 200, description = "as `tidemark inlinks URL --json`: {url, surt, sweep, sources}"),
              (status = 400, description = "a bad or missing url"),
              (status = 404, description = "no such sweep, or a URL the access rules hide in it")))]
async fn inlinks(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<InlinksQuery>,
) -> Result<Json<Value>, ApiError> {
    let url = checked_url(&state, &q.url)?;
    state
        .with_index(move |s| {
            let sweep = shown_sweep(s, q.sweep.as_deref())?;
            to_json(&inbound_of(&s.searcher(), &url, Some(&sweep))?)
        })
        .await
}

/// The label of the sweep asked for (default: the newest) among those the reader may
/// see: a sweep its rules hide (an embargo's) is not named, nor told apart from one
/// that does not exist.
fn shown_sweep(s: &super::state::Request, asked: Option<&str>) -> Result<String, ApiError> {
    let shown = s.shown_sweeps()?;
    let found = match asked {
        Some(want) => shown.iter().find(|(_, w)| w.label == want),
        None => shown.iter().max_by_key(|(id, _)| *id),
    };
    match (found, asked) {
        (Some((_, w)), _) => Ok(w.label.clone()),
        (None, Some(want)) => Err(ApiError::not_found(
            "sweep",
            format!("no sweep labelled {want:?}"),
        )),
        (None, None) => Err(ApiError::not_found(
            "sweep",
            "the index has no sweep".into(),
        )),
    }
}

/// `url=`, `diff=1`
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct HistoryQuery {
    /// The URL.
    url: String,
    /// `1`: what changed in each changed version, read from the WARC records (lines and
    /// words removed and added, template lines folded away).
    diff: Option<String>,
}

/// Every capture of a URL in date order, with the change from the previous one.
#[utoipa::path(get, path = "/api/history", params(HistoryQuery),
    responses((status = 200, description = "as `tidemark history URL --json` (with `diff=1`, as with --diff)"),
              (status = 400, description = "a bad or missing url, or a bad diff")))]
async fn history(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<HistoryQuery>,
) -> Result<Json<Value>, ApiError> {
    let url = checked_url(&state, &q.url)?;
    let diff = flag(&q.diff, "diff")?;
    let opts = WhereisOptions {
        move_floor: state.config.query.move_floor,
        links: true,
    };
    let dirs = state.config.serve.archive_paths.clone();
    state
        .with_index(move |s| {
            let archive = diff.then(|| Archive {
                files: s.files.clone(),
                dirs,
                served: true,
            });
            to_json(&history_of(&s.searcher(), &url, opts, archive.as_ref())?)
        })
        .await
}

/// `url=` or `doc=`, `threshold`, `containment`, `limit`
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SimilarQuery {
    /// A URL of the index (its latest content).
    url: Option<String>,
    /// A doc of the index.
    doc: Option<u64>,
    /// Least resemblance (or containment); default 0.5.
    threshold: Option<f64>,
    /// `1`: rank by containment of the input in each page.
    containment: Option<String>,
    /// Most results; default 20.
    limit: Option<usize>,
}

fn similar_options(q: &SimilarQuery) -> Result<SimilarOptions, ApiError> {
    let threshold = q.threshold.unwrap_or(0.5);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(ApiError::bad(
            "threshold",
            format!("{threshold} is not between 0 and 1"),
        ));
    }
    Ok(SimilarOptions {
        threshold,
        containment: flag(&q.containment, "containment")?,
        limit: q.limit.unwrap_or(20),
    })
}

async fn run_similar(
    state: &Arc<AppState>,
    input: Input,
    opts: SimilarOptions,
) -> Result<Json<Value>, ApiError> {
    state
        .with_index(move |s| to_json(&similar_to(&s.searcher(), &input, &opts)?.results))
        .await
}

/// Pages resembling a URL's content or a doc, best first.
#[utoipa::path(get, path = "/api/similar", params(SimilarQuery),
    responses((status = 200, description = "as `tidemark similar --json`: [{url, date, doc, resemblance, content_resemblance, containment}]"),
              (status = 400, description = "neither url nor doc, or a bad parameter"),
              (status = 404, description = "a URL never captured with content")))]
async fn similar(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<SimilarQuery>,
) -> Result<Json<Value>, ApiError> {
    let opts = similar_options(&q)?;
    let input = match (&q.url, q.doc) {
        (Some(u), None) => Input::Url(checked_url(&state, u)?),
        (None, Some(d)) => Input::Doc(d),
        _ => {
            return Err(ApiError::bad(
                "url",
                "give url=URL or doc=N (or POST a document)".into(),
            ))
        }
    };
    run_similar(&state, input, opts).await
}

/// Pages resembling a POSTed document (HTML, text, or a WARC/ARC file: its first record
/// with text), best first.
#[utoipa::path(post, path = "/api/similar", params(SimilarQuery),
    request_body(content = String, description = "the document", content_type = "text/html"),
    responses((status = 200, description = "as `tidemark similar --file PATH --json`"),
              (status = 400, description = "too little text, or a bad parameter"),
              (status = 413, description = "a document over serve.max_body_bytes")))]
async fn similar_post(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<SimilarQuery>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let opts = similar_options(&q)?;
    if body.is_empty() {
        return Err(ApiError::bad(
            "body",
            "empty: POST the document to compare".into(),
        ));
    }
    let input = Input::Bytes {
        name: "the posted document".into(),
        bytes: body.to_vec(),
    };
    run_similar(&state, input, opts).await
}

/// `url=`, `limit`
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ClusterQuery {
    /// The URL whose latest content's cluster to list.
    url: String,
    /// Most members listed; default 100.
    limit: Option<usize>,
}

/// The near-duplicate cluster of a URL's latest content.
#[utoipa::path(get, path = "/api/cluster", params(ClusterQuery),
    responses((status = 200, description = "as `tidemark cluster URL --json`: {url, doc, cluster, size, members}"),
              (status = 404, description = "a URL never captured with content")))]
async fn cluster(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<ClusterQuery>,
) -> Result<Json<Value>, ApiError> {
    let url = checked_url(&state, &q.url)?;
    let limit = q.limit.unwrap_or(100);
    state
        .with_index(move |s| to_json(&cluster_of(&s.searcher(), &url, limit)?))
        .await
}

/// A list of URLs (a search engine's result page) grouped into near-duplicate clusters.
#[utoipa::path(post, path = "/api/cluster",
    request_body(content = String, description = "the URLs: one a line (text/plain), or a JSON array of strings, or {\"urls\": [...]} (application/json)", content_type = "text/plain"),
    responses((status = 200, description = "as `tidemark cluster --urls FILE --json`: {urls, groups: [{url, at, doc, cluster, reason, others: [{url, doc}]}]}, groups in the order of their first URL; a URL without content in the index is a group of its own with the reason"),
              (status = 400, description = "no URL, a body that is not a list of URLs, or more than serve.max_list_urls"),
              (status = 413, description = "a body over serve.max_body_bytes")))]
async fn cluster_post(
    State(state): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let urls = url_list(&headers, &body)?;
    let limits = &state.config.serve;
    if urls.is_empty() {
        return Err(ApiError::bad(
            "body",
            "no URL: POST the URLs, one a line".into(),
        ));
    }
    if urls.len() > limits.max_list_urls {
        return Err(ApiError::bad(
            "body",
            format!(
                "{} URLs; at most {} (serve.max_list_urls)",
                urls.len(),
                limits.max_list_urls
            ),
        ));
    }
    if let Some(i) = urls
        .iter()
        .position(|u| u.chars().count() > limits.max_url_chars)
    {
        return Err(ApiError::bad(
            "body",
            format!(
                "URL {} of the list: longer than {} characters (serve.max_url_chars)",
                i + 1,
                limits.max_url_chars
            ),
        ));
    }
    state
        .with_index(move |s| to_json(&cluster_list(&s.searcher(), &urls)?))
        .await
}

/// The URLs of a POSTed list: a JSON array or `{"urls": [...]}` when the body is
/// declared JSON, else one a line (blank lines and `#` comments skipped).
fn url_list(headers: &axum::http::HeaderMap, body: &[u8]) -> Result<Vec<String>, ApiError> {
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    let text =
        std::str::from_utf8(body).map_err(|e| ApiError::bad("body", format!("not UTF-8: {e}")))?;
    if !json {
        return Ok(crate::query::cluster::url_lines(text));
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Listed {
        Bare(Vec<String>),
        Wrapped { urls: Vec<String> },
    }
    match serde_json::from_str::<Listed>(text) {
        Ok(Listed::Bare(u) | Listed::Wrapped { urls: u }) => {
            Ok(u.into_iter().map(|u| u.trim().to_string()).collect())
        }
        Err(e) => Err(ApiError::bad(
            "body",
            format!("not a JSON list of URLs (an array of strings, or {{\"urls\": [...]}}): {e}"),
        )),
    }
}

/// How pages changed, moved, lived and died across the sweeps.
#[utoipa::path(get, path = "/api/report", params(ReportQuery),
    responses((status = 200, description = "as `tidemark report --format json`"),
              (status = 400, description = "an unknown sweep or a bad host"),
              (status = 503, description = "the report is being built (once per snapshot, reader's view and range; one pass over the index): ask again in a moment (`{\"code\": \"unavailable\"}`)")))]
async fn report(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<ReportQuery>,
) -> Result<Json<Value>, ApiError> {
    let opts = q.options(&state.config)?;
    let r = super::reports::report(&state, opts).await?;
    to_json(&*r)
}

/// `from`, `to`, `host`, `offset`, `limit`, `records`
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ChangesQuery {
    /// Earlier sweep (label); default the sweep before `to`.
    from: Option<String>,
    /// Later sweep (label); default the last.
    to: Option<String>,
    /// Only the URLs of this host.
    host: Option<String>,
    /// Rows of the ordered list skipped; default 0.
    offset: Option<usize>,
    /// Rows listed at most; default 50, at most 1000 (200 when the records are read).
    limit: Option<usize>,
    /// `0`: do not read the WARC records (no words or links); default 1.
    records: Option<String>,
}

/// Most rows one `/api/changes` request lists, and lists reading their records.
const MAX_CHANGE_ROWS: usize = 1000;
const MAX_CHANGE_ROWS_READ: usize = 200;

/// Every URL changed between two sweeps, most significant first (a page of them).
#[utoipa::path(get, path = "/api/changes", params(ChangesQuery),
    responses((status = 200, description = "as `tidemark report --changes --format json` with --offset and --limit: {from, to, score, urls_changed, template_only, rows_total, offset, rows}"),
              (status = 400, description = "an unknown sweep, the same sweep twice, a bad host, or a limit over 200 (1000 with records=0)"),
              (status = 503, description = "the list of these sweeps is being built (one pass over the index, once per snapshot, view and range, like the report): ask again in a moment")))]
async fn changes(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<ChangesQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = q.limit.unwrap_or(50);
    let records = q.records.is_none() || flag(&q.records, "records")?;
    let most = if records {
        MAX_CHANGE_ROWS_READ
    } else {
        MAX_CHANGE_ROWS
    };
    if limit == 0 || limit > most {
        return Err(ApiError::bad(
            "limit",
            format!("{limit}: give 1 to {most} rows ({MAX_CHANGE_ROWS} with records=0)"),
        ));
    }
    let offset = q.offset.unwrap_or(0);
    let report = ReportQuery::new(q.from, q.to, q.host).options(&state.config)?;
    let dirs = state.config.serve.archive_paths.clone();
    let (served, list) = super::reports::changes(&state, report.clone()).await?;
    state
        .with_snapshot(Some(served), move |s| {
            let opts = ChangesOptions {
                report,
                offset,
                limit: Some(limit),
                archive: records.then(|| Archive {
                    files: s.files.clone(),
                    dirs,
                    served: true,
                }),
                progress: None,
            };
            to_json(&page(s.index(), &s.reader, &list, &opts)?)
        })
        .await
}

/// The sweeps of the index.
#[utoipa::path(get, path = "/api/sweeps",
    responses((status = 200, description = "as `tidemark sweeps --json`, its files by name (not by path; none to a reader under access rules)")))]
async fn sweeps(State(state): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
    state
        .with_index(|s| {
            let mut v = sweeps_json(s.index(), &s.shown_sweeps()?)?;
            // Files by name, not by the server's paths; none to a reader under rules (a
            // file may hold only hidden captures: a crawl of an excluded host).
            for sweep in v.as_array_mut().into_iter().flatten() {
                if let Some(files) = sweep.get_mut("files").and_then(|f| f.as_array_mut()) {
                    if s.reader.filtered() {
                        files.clear();
                    }
                    for f in files.iter_mut() {
                        let name = f.as_str().unwrap_or_default();
                        let base = name.rsplit('/').next().unwrap_or(name).to_string();
                        *f = base.into();
                    }
                }
            }
            Ok(Json(v))
        })
        .await
}

/// Docs, captures, URLs, clusters and bytes on disk.
#[utoipa::path(get, path = "/api/stats",
    responses((status = 200, description = "as `tidemark stats --json` (of the whole index); a reader under access rules is told no `largest_clusters` and only the sweeps it may see")))]
async fn stats(State(state): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
    state
        .with_index(|s| {
            // Of the whole index, whoever asks first: counts name no URL (README,
            // "Access control").
            let all = match s.stats.get() {
                Some(v) => v.clone(),
                None => {
                    let Json(v) = to_json(&index_stats(s.index())?)?;
                    s.stats.get_or_init(|| v).clone()
                }
            };
            // But a reader under rules is told no cluster (its id may be a hidden doc,
            // its size count hidden ones) and only the sweeps it may see.
            let mut v = all;
            if s.reader.filtered() {
                if let Some(o) = v.as_object_mut() {
                    o.remove("largest_clusters");
                    o.insert("sweeps".into(), s.shown_sweeps()?.len().into());
                }
            }
            Ok(Json(v))
        })
        .await
}
