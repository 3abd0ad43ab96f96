//! The Wayback Machine's CDX API (`GET /cdx/search/cdx`) and its availability API
//! (`GET /wayback/available`), as the Internet Archive documents them.
//!
//! `url`, `matchType`, `from`, `to`, `output=json` (an array of arrays, the first row
//! the field names), `fl`, `filter=[!]field:regex` (the whole value), `collapse=field[:N]`
//! (drops a line whose field, or its first N characters, equals the previous line's),
//! `limit=N` (the first N) and `limit=-N` (the last N), `showResumeKey=true` and
//! `resumeKey=` (after a blank line in text, as the last row in JSON), `page`,
//! `pageSize` (captures per page; default 3,000 — one of the Archive's blocks holds
//! about that many) and `showNumPages=true`. A page past the last is an empty body.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::error::ApiError;
use super::params::{base_url, field_list, selection, Fields, Filter, Params, Selection};
use super::state::AppState;
use super::stream::stream;
use crate::timestamp::Timestamp14;

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/cdx/search/cdx", get(cdx))
        .route("/wayback/available", get(available))
}

/// Fields by the Archive's names and tidemark's; the first seven are the default.
#[rustfmt::skip]
const KNOWN: &[&str] = &[
    "urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length",
    "offset", "filename", "redirect", "doc", "cluster", "resemblance_to_previous",
    "content_resemblance_to_previous",
];
const FIELDS: &[&str] = KNOWN.split_at(7).0;
/// Captures per page unless `pageSize` says otherwise.
const PAGE_SIZE: u64 = 3000;

/// The Wayback Machine's CDX API, as the Internet Archive documents it.
#[utoipa::path(get, path = "/cdx/search/cdx", tag = "capture index", operation_id = "wayback_cdx",
    params(
        ("url" = String, Query, description = "The URL; a trailing `*` means `matchType=prefix`, a leading `*.` `domain`."),
        ("matchType" = Option<String>, Query, description = "`exact` (default), `prefix`, `host` or `domain`."),
        ("from" = Option<String>, Query, description = "Earliest timestamp, 1 to 14 digits (padded down)."),
        ("to" = Option<String>, Query, description = "Latest timestamp, 1 to 14 digits (padded up)."),
        ("output" = Option<String>, Query, description = "`json` (an array of arrays, the first the field names) or text (default)."),
        ("fl" = Option<String>, Query, description = "Fields, comma-separated: `urlkey`, `timestamp`, `original`, `mimetype`, `statuscode`, `digest`, `length` (the default), `offset`, `filename`, `redirect`, `doc`, `cluster`, `resemblance_to_previous`, `content_resemblance_to_previous`."),
        ("filter" = Option<Vec<String>>, Query, description = "Repeatable: `[!]field:regex`, matched against the whole value."),
        ("collapse" = Option<String>, Query, description = "`field[:N]`: adjacent lines equal in the field (or its first N characters) collapse to the first."),
        ("limit" = Option<i64>, Query, description = "`N`: the first N lines; `-N`: the last N."),
        ("showResumeKey" = Option<bool>, Query, description = "`true`: a key to resume from after the last line."),
        ("resumeKey" = Option<String>, Query, description = "Resume after the line whose key this is."),
        ("page" = Option<u64>, Query, description = "Page number, from 0."),
        ("pageSize" = Option<u64>, Query, description = "Captures per page; 3,000 by default."),
        ("showNumPages" = Option<bool>, Query, description = "`true`: only the number of pages."),
    ),
    responses((status = 200, description = "the captures, streamed; a page past the last is empty"),
              (status = 400, description = "a bad parameter, named")))]
async fn cdx(State(state): State<Arc<AppState>>, RawQuery(raw): RawQuery) -> Response {
    match answer(state, raw).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn answer(state: Arc<AppState>, raw: Option<String>) -> Result<Response, ApiError> {
    let params = Params::parse(raw);
    let json_out = match params.get("output").unwrap_or("") {
        "" | "text" => false,
        "json" => true,
        o => {
            return Err(ApiError::bad(
                "output",
                format!("{o:?} is unknown: expected json (or nothing, for text)"),
            )
            .plain())
        }
    };
    let fix = |e: ApiError| if json_out { e } else { e.plain() };
    let mut sel = selection(&params, state.config.serve.max_url_chars, !json_out, false)?;
    let fields = field_list(&params, FIELDS, KNOWN).map_err(fix)?;
    let filters = params
        .filters(state.config.serve.max_filters)
        .map_err(fix)?
        .into_iter()
        .map(Filter::wayback)
        .collect::<Result<Vec<_>, _>>()
        .map_err(fix)?;
    for f in &filters {
        if !KNOWN.contains(&f.field()) {
            return Err(fix(ApiError::bad(
                "filter",
                format!("unknown field {:?}; known: {}", f.field(), KNOWN.join(", ")),
            )));
        }
    }
    let collapse = params
        .all("collapse")
        .into_iter()
        .filter(|c| !c.is_empty())
        .map(|c| {
            let (field, n) = match c.split_once(':') {
                Some((f, n)) => (
                    f,
                    Some(n.parse::<usize>().map_err(|_| {
                        fix(ApiError::bad(
                            "collapse",
                            format!("{c:?}: expected field or field:N"),
                        ))
                    })?),
                ),
                None => (c, None),
            };
            if !KNOWN.contains(&field) {
                return Err(fix(ApiError::bad(
                    "collapse",
                    format!("unknown field {field:?}"),
                )));
            }
            Ok((field.to_string(), n))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let limit = params.number("limit").map_err(fix)?;
    let page_size = match params.number("pageSize").map_err(fix)? {
        Some(n) if n < 1 => {
            return Err(fix(ApiError::bad("pageSize", "must be at least 1".into())))
        }
        Some(n) => n as u64,
        None => PAGE_SIZE,
    };
    let page = match params.number("page").map_err(fix)? {
        Some(n) if n < 0 => return Err(fix(ApiError::bad("page", "must not be negative".into()))),
        other => other.map(|n| n as u64),
    };
    let show_resume = params.get("showResumeKey") == Some("true");
    if let Some(k) = params.get("resumeKey").filter(|k| !k.is_empty()) {
        let key = data_encoding::BASE64URL_NOPAD
            .decode(k.as_bytes())
            .map_err(|_| {
                fix(ApiError::bad(
                    "resumeKey",
                    "not a key this server gave".into(),
                ))
            })?;
        if let Selection::Range {
            range,
            reverse: false,
        } = sel
        {
            sel = Selection::Range {
                range: range.after(&key),
                reverse: false,
            };
        }
    }
    // The last N: read backwards, keep N, write them forwards.
    let tail = limit.filter(|n| *n < 0).map(|n| n.unsigned_abs());
    if tail.is_some() {
        if let Selection::Range { range, .. } = sel {
            sel = Selection::Range {
                range,
                reverse: true,
            };
        }
    }
    let head = limit.filter(|n| *n >= 0).map(|n| n as u64);
    let count_only = params.get("showNumPages") == Some("true");
    // Pages of a forward key range without collapse can start where an earlier request
    // found them (collapsing carries state across a page's start).
    let page_key = match (&sel, page) {
        (Selection::Range { reverse: false, .. }, Some(_))
            if collapse.is_empty() && !count_only =>
        {
            let mut all: Vec<(&str, &str)> = params.pairs().filter(|(k, _)| *k != "page").collect();
            all.sort();
            Some(format!("{all:?}"))
        }
        _ => None,
    };
    let content_type = if json_out {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    Ok(stream(&state, content_type, move |served, sink| {
        // Pages differ from one reader's view to another's (access rules).
        let page_key = page_key.map(|k| served.reader.scoped(&k));
        let mut clusters = served.cluster_ids();
        let (skip, take) = match page {
            Some(p) => (
                p.saturating_mul(page_size),
                page_size.min(head.unwrap_or(u64::MAX)),
            ),
            None => (0, head.unwrap_or(u64::MAX)),
        };
        // The nearest page start known for this query, and the ones found now.
        let known: Vec<Vec<u8>> = match (&page_key, page) {
            (Some(k), Some(p)) => (served.pages.lock().ok())
                .map(|m| m.known(k, p as usize))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let mut found: Vec<Vec<u8>> = Vec::new();
        let mut matched = 0u64;
        let sel = match (known.last(), sel) {
            (Some(start), Selection::Range { range, reverse }) => {
                matched = known.len() as u64 * page_size;
                Selection::Range {
                    range: range.from_key(start),
                    reverse,
                }
            }
            (_, sel) => sel,
        };
        let mut kept: VecDeque<(Vec<u8>, Fields)> = VecDeque::new();
        let mut last: Option<Vec<Option<String>>> = None;
        let mut more = false;
        let mut taken = 0u64;
        let mut rows: Vec<(Vec<u8>, Fields)> = Vec::new();
        sel.scan(served, |key, row| {
            let f = Fields::new(row, &mut clusters)?;
            if !filters
                .iter()
                .all(|flt| flt.passes(f.get(flt.field()).as_deref()))
            {
                return Ok(true);
            }
            if !collapse.is_empty() {
                let sig: Vec<Option<String>> = collapse
                    .iter()
                    .map(|(field, n)| {
                        f.get(field).map(|v| match n {
                            Some(n) => v.chars().take(*n).collect(),
                            None => v,
                        })
                    })
                    .collect();
                if last.as_ref() == Some(&sig) {
                    return Ok(true);
                }
                last = Some(sig);
            }
            matched += 1;
            // The first row of a page not known yet: remember where it starts.
            let before = matched - 1;
            if page_key.is_some()
                && before > 0
                && before % page_size == 0
                && before / page_size == (known.len() + found.len() + 1) as u64
            {
                found.push(key.to_vec());
            }
            if count_only {
                return Ok(true);
            }
            if let Some(n) = tail {
                // Read backwards: the first N met are the last N; the scan ends there.
                if (kept.len() as u64) < n {
                    kept.push_front((key.to_vec(), f));
                }
                return Ok((kept.len() as u64) < n);
            }
            if matched <= skip {
                return Ok(true);
            }
            // Rows taken so far, not those still held: held ones go out every 256.
            if taken >= take {
                more = true;
                return Ok(false);
            }
            taken += 1;
            rows.push((key.to_vec(), f));
            // Stream as we go; a resume key follows the last row, so that one is held
            // back (all rows were, before: a whole host in memory).
            if rows.len() >= 256 {
                let last = if show_resume { rows.pop() } else { None };
                let out = render(&rows, &fields, json_out, sink.written > 0);
                rows.clear();
                rows.extend(last);
                return Ok(sink.write(out.as_bytes()));
            }
            Ok(true)
        })
        .map_err(|e| if json_out { e } else { e.plain() })?;
        if let (Some(k), false) = (&page_key, found.is_empty()) {
            if let Ok(mut m) = served.pages.lock() {
                m.add(k, known.len(), found);
            }
        }
        if count_only {
            let pages = matched.div_ceil(page_size);
            sink.write(format!("{pages}\n").as_bytes());
            return Ok(());
        }
        if tail.is_some() {
            rows = kept.into_iter().collect();
        }
        if page.is_some() && rows.is_empty() && sink.written == 0 {
            // Past the last page (or no match at all): an empty body, as the Archive
            // answers, which is how its clients know to stop paging.
            return Ok(());
        }
        let mut out = render(&rows, &fields, json_out, sink.written > 0);
        if json_out {
            if sink.written == 0 && rows.is_empty() {
                out = "[]".to_string();
            } else if show_resume && more {
                if let Some((k, _)) = rows.last() {
                    out.push_str(&format!(
                        ",\n[],\n[{}]",
                        json!(data_encoding::BASE64URL_NOPAD.encode(k))
                    ));
                }
            }
            out.push_str("]\n");
        } else if show_resume && more {
            if let Some((k, _)) = rows.last() {
                out.push_str(&format!("\n{}\n", data_encoding::BASE64URL_NOPAD.encode(k)));
            }
        }
        sink.write(out.as_bytes());
        Ok(())
    })
    .await)
}

/// Lines of text output, or JSON rows (the header row first, when nothing was written
/// yet; `[` opens the array and the caller closes it).
fn render(
    rows: &[(Vec<u8>, Fields)],
    fields: &[String],
    json_out: bool,
    continued: bool,
) -> String {
    let mut out = String::new();
    if json_out {
        if !continued {
            out.push('[');
            out.push_str(&json!(fields).to_string());
        }
        for (_, f) in rows {
            let vals: Vec<Value> = fields
                .iter()
                .map(|n| json!(f.get(n).unwrap_or_else(|| "-".into())))
                .collect();
            out.push_str(",\n");
            out.push_str(&Value::Array(vals).to_string());
        }
    } else {
        for (_, f) in rows {
            let vals: Vec<String> = fields
                .iter()
                .map(|n| f.get(n).unwrap_or_else(|| "-".into()))
                .collect();
            out.push_str(&vals.join(" "));
            out.push('\n');
        }
    }
    out
}

/// `/wayback/available?url=&timestamp=`: the capture closest to the timestamp (the
/// newest without one), in the Archive's JSON shape.
#[utoipa::path(get, path = "/wayback/available", tag = "capture index",
    params(
        ("url" = String, Query, description = "The URL."),
        ("timestamp" = Option<String>, Query, description = "1 to 14 digits; the newest capture without one."),
    ),
    responses((status = 200, description = "`{url, archived_snapshots: {closest: {available, status, timestamp, url}}}` (`archived_snapshots` empty when none)"),
              (status = 400, description = "a bad parameter, named")))]
async fn available(
    State(state): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let params = Params::parse(raw);
    let max = state.config.serve.max_url_chars;
    let url = params
        .url("url", max)?
        .ok_or_else(|| ApiError::bad("url", "missing: give url=URL".into()))?;
    crate::url::check(&url).map_err(|e| ApiError::bad("url", e))?;
    let ts = match params.get("timestamp") {
        None | Some("") => "99991231235959".to_string(),
        Some(t) => Timestamp14::from_prefix(t, false)
            .map(String::from)
            .ok_or_else(|| {
                ApiError::bad(
                    "timestamp",
                    format!("{t:?} is not a timestamp: expected 1 to 14 digits"),
                )
            })?,
    };
    let prefix = format!(
        "{}/{}",
        base_url(&state, &headers),
        state.config.serve.collection
    );
    let req_url = url.clone();
    let best = state
        .with_index(move |served| {
            let mut best = None;
            crate::query::captures::closest_each(served.index(), &served.reader, &url, &ts, |r| {
                let found = r.ok() || r.redirect().is_some();
                if found {
                    best = Some(r);
                }
                Ok(!found)
            })?;
            Ok(best)
        })
        .await?;
    Ok(Json(match best {
        None => json!({"url": req_url, "archived_snapshots": {}}),
        Some(r) => json!({
            "url": req_url,
            "archived_snapshots": {"closest": {
                "status": r.info.status.map(|s| s.to_string()).unwrap_or_else(|| "200".into()),
                "available": true,
                "url": format!("{prefix}/{}id_/{}", r.timestamp, r.info.url),
                "timestamp": r.timestamp,
            }}
        }),
    }))
}
