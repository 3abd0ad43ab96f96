//! The lost-and-found page (`GET /?url=…`) and the change report per pair of sweeps
//! (`GET /report?from=&to=`): server-rendered HTML, no scripts, no fetches, readable on a
//! phone. The URL box is a GET form, so every answer has its own address.

use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

use super::error::ApiError;
use super::params::{ApiQuery, ReportQuery};
use super::state::{AppState, Request};
use crate::query::cluster::cluster;
use crate::query::history::history;
use crate::query::similar::{similar, Input, SimilarOptions};
use crate::query::whereis::{whereis, Status, WhereisOptions};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/", get(lost_and_found))
        .route("/report", get(report_page))
}

struct Step {
    kind: String,
    url: String,
    date: String,
    resemblance: String,
    content_resemblance: String,
}

struct Version {
    date: String,
    sweep: String,
    status: String,
    change: String,
    /// The archived capture: `/{collection}/{timestamp}id_/{url}`.
    replay: String,
    /// With a diff shown: what changed from the version before.
    changes: Option<crate::query::diff::Shown>,
    /// Why the change cannot be shown, or the plain word diff without lines.
    diff: Option<String>,
    /// Whether a diff with the version before can be asked for (a changed version).
    diffable: bool,
}

struct Like {
    url: String,
    date: String,
    resemblance: String,
    content_resemblance: String,
    containment: String,
}

struct MemberView {
    doc: u64,
    title: String,
    urls: Vec<String>,
}

struct ClusterView {
    id: u64,
    size: u64,
    members: Vec<MemberView>,
}

struct Answer {
    url: String,
    status: &'static str,
    newest_url: Option<String>,
    newest_date: Option<String>,
    evidence: Vec<Step>,
    margin: Option<String>,
    history: Vec<Version>,
    similar: Vec<Like>,
    cluster: Option<ClusterView>,
}

#[derive(Template)]
#[template(path = "lost_and_found.html")]
struct Page {
    query: String,
    sweeps: usize,
    newest_sweep: Option<String>,
    error: Option<String>,
    answer: Option<Answer>,
    pairs: Vec<(String, String)>,
}

/// `url=`, `diff=1`
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// The URL asked about (none: the empty form).
    url: Option<String>,
    /// `1`: each changed version shows what changed, read from the WARC records.
    diff: Option<String>,
}

fn r2(x: Option<f64>) -> String {
    x.map(|r| format!("{r:.2}")).unwrap_or_else(|| "-".into())
}

/// Everything the page shows about one URL, from the library's calls; with `archive`,
/// what changed in each changed version.
fn answer(
    served: &Request,
    url: &str,
    opts: WhereisOptions,
    archive: Option<crate::query::diff::Archive>,
    collection: &str,
) -> Result<Answer, ApiError> {
    let s = served.searcher();
    let w = whereis(&s, url, opts)?;
    let h = history(&s, url, opts, archive.as_ref())?;
    let replay = |ts: &str| format!("/{collection}/{ts}id_/{}", h.url);
    let latest = w.newest_url.clone().unwrap_or_else(|| url.to_string());
    let similar_pages = match similar(
        &s,
        &Input::Url(latest.clone()),
        &SimilarOptions {
            threshold: 0.5,
            containment: false,
            limit: 10,
        },
    ) {
        Ok(r) => r.results,
        Err(_) => Vec::new(),
    };
    let cl = cluster(&s, &latest, 20).ok().map(|c| ClusterView {
        id: c.cluster,
        size: c.size,
        members: c
            .members
            .into_iter()
            .map(|m| MemberView {
                doc: m.doc,
                title: m.title.unwrap_or_default(),
                urls: m.urls.into_iter().map(|u| u.url).collect(),
            })
            .collect(),
    });
    Ok(Answer {
        url: w.url.clone(),
        status: match w.status {
            Status::Alive => "alive",
            Status::Moved => "moved",
            Status::Gone => "gone",
            Status::Unknown => "unknown",
        },
        newest_url: w.newest_url,
        newest_date: w.newest_date,
        evidence: w
            .evidence
            .into_iter()
            .map(|e| Step {
                kind: e.kind.to_string(),
                url: e.url,
                date: e.date,
                resemblance: r2(e.resemblance),
                content_resemblance: r2(e.content_resemblance),
            })
            .collect(),
        margin: w.margin.map(|m| format!("{m:.2}")),
        history: h
            .captures
            .into_iter()
            .map(|v| {
                let moved = (v.moved_to.as_ref())
                    .map(|m| format!("moved to {m} (by {})", v.moved_by.join(", then ")));
                Version {
                    date: v.date,
                    sweep: v.sweep,
                    status: v
                        .status
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| "-".into()),
                    change: match (v.change, &v.redirect_to, &moved) {
                        (_, Some(t), _) => format!("redirect → {t}"),
                        ("changed", _, m) => format!(
                            "changed (resemblance {}{}){}",
                            r2(v.resemblance_to_previous),
                            v.content_resemblance_to_previous
                                .map(|c| format!(", content {}", r2(Some(c))))
                                .unwrap_or_default(),
                            m.as_ref().map(|m| format!("; {m}")).unwrap_or_default()
                        ),
                        (c, _, Some(m)) => format!("{c}; {m}"),
                        (c, _, None) => c.to_string(),
                    },
                    replay: replay(&v.timestamp),
                    diffable: v.change == "changed",
                    changes: v.changes,
                    diff: v.diff,
                }
            })
            .collect(),
        similar: similar_pages
            .into_iter()
            .map(|p| Like {
                url: p.url,
                date: p.date,
                resemblance: format!("{:.3}", p.resemblance),
                content_resemblance: format!("{:.3}", p.content_resemblance),
                containment: format!("{:.3}", p.containment),
            })
            .collect(),
        cluster: cl,
    })
}

#[utoipa::path(get, path = "/", tag = "pages", params(PageQuery),
    responses((status = 200, description = "the lost-and-found page (HTML): a URL form, then where the URL is now, its history (each version linked to its replay and, with `diff=1`, what changed), similar pages and its cluster"),
              (status = 400, description = "the same page, saying what is wrong with the URL")))]
pub(crate) async fn lost_and_found(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> Response {
    let query = q.url.unwrap_or_default().trim().to_string();
    let opts = WhereisOptions {
        move_floor: state.config.query.move_floor,
        links: true,
    };
    let max = state.config.serve.max_url_chars;
    let asked = query.clone();
    let diff = q.diff.as_deref() == Some("1");
    let dirs = state.config.serve.archive_paths.clone();
    let collection = state.config.serve.collection.clone();
    let result = state
        .with_index(move |s| {
            let sweeps: Vec<String> = (s.shown_sweeps()?.iter())
                .map(|(_, w)| w.label.clone())
                .collect();
            let (answer, error) = if asked.is_empty() {
                (None, None)
            } else if asked.chars().count() > max {
                (
                    None,
                    Some(format!("That URL is longer than {max} characters.")),
                )
            } else if let Err(e) = crate::url::check(&asked) {
                (None, Some(e))
            } else {
                let archive = diff.then(|| crate::query::diff::Archive {
                    files: s.files.clone(),
                    dirs,
                    served: true,
                });
                match answer(s, &asked, opts, archive, &collection) {
                    Ok(a) => (Some(a), None),
                    Err(e) => (None, Some(e.message)),
                }
            };
            Ok((sweeps, answer, error))
        })
        .await;
    let (sweeps, answer, error) = match result {
        Ok(r) => r,
        Err(e) => (Vec::new(), None, Some(e.message)),
    };
    let status = if error.is_some() && !query.is_empty() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let page = Page {
        query,
        sweeps: sweeps.len(),
        newest_sweep: sweeps.last().cloned(),
        error,
        answer,
        pairs: sweeps
            .windows(2)
            .map(|w| (w[0].clone(), w[1].clone()))
            .collect(),
    };
    match page.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => ApiError::internal(format!("page: {e}")).into_response(),
    }
}

/// The change report of a range of sweeps as the self-contained HTML page `tidemark
/// report --format html` writes.
#[utoipa::path(get, path = "/report", tag = "pages", params(ReportQuery),
    responses((status = 200, description = "the change report as `tidemark report --format html` writes it (HTML)"),
              (status = 400, description = "a bad from, to or host"),
              (status = 503, description = "the report is being built (once per snapshot, reader's view and range; one pass over the index): ask again in a moment (`{\"code\": \"unavailable\"}`)")))]
pub(crate) async fn report_page(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<ReportQuery>,
) -> Result<Html<String>, ApiError> {
    let opts = q.options(&state.config)?;
    let r = super::reports::report(&state, opts).await?;
    Ok(Html(crate::report::html::page(&r)))
}
