//! The capture index API of pywb and OutbackCDX: `GET /{collection}?url=…`.
//!
//! Parameters (pywb's `cdxserver_api`): `url` (a trailing `*` asks for a prefix, a
//! leading `*.` for a domain) or `urlkey` (a SURT key), `matchType`
//! (`exact|prefix|host|domain`), `from`/`to` (1–14 digits, padded), `closest` (nearest
//! first, with or without `sort=closest`; an empty `closest=` means the newest),
//! `sort=reverse` or `reverse=1`, `limit` (0: none, but nothing nearest a time or in
//! reverse), `fl`/`fields`, repeatable `filter=[!][=|~]field:value` (contains; `=`
//! exact; `~` regex from the start of the value), `output` (`cdxj`, the default;
//! `json`, one object per line; `text`, the `fl` fields separated by spaces; `link`,
//! Memento link-format). No implicit limit: pywb sends none and filters itself. Errors
//! are JSON whatever the output, as pywb's.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};

use super::error::ApiError;
use super::params::{
    check_collection, field_list, selection, Fields, Filter, Params, PYWB_FIELDS, TEXT_DEFAULT,
};
use super::state::AppState;
use super::stream::{stream, Sink};
use crate::query::captures::seconds;

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/{collection}", get(cdx))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Output {
    Cdxj,
    Json,
    Text,
    Link,
}

/// The capture index as pywb and OutbackCDX serve it: every capture of the URLs asked
/// for, in key order, streamed.
#[utoipa::path(get, path = "/{collection}", tag = "capture index", operation_id = "pywb_cdx",
    params(
        ("collection" = String, Path, description = "The collection (`tidemark serve --collection`, default `tidemark`)."),
        ("url" = Option<String>, Query, description = "The URL; a trailing `*` means `matchType=prefix`, a leading `*.` `domain`."),
        ("urlkey" = Option<String>, Query, description = "A SURT key instead of `url`."),
        ("matchType" = Option<String>, Query, description = "`exact` (default), `prefix`, `host` or `domain`."),
        ("from" = Option<String>, Query, description = "Earliest timestamp: 1 to 14 digits, padded down (`2014` is `20140101000000`)."),
        ("to" = Option<String>, Query, description = "Latest timestamp: 1 to 14 digits, padded up (`2014` is `20141231235959`)."),
        ("closest" = Option<String>, Query, description = "The captures nearest this timestamp first (with or without `sort=closest`), padded up as pywb does; empty means the newest. On a prefix, host or domain: the nearest 10,000 that pass the filters."),
        ("sort" = Option<String>, Query, description = "`closest` or `reverse`."),
        ("reverse" = Option<String>, Query, description = "`1` or `true`: as `sort=reverse` (closest wins)."),
        ("limit" = Option<i64>, Query, description = "Most lines; none: no limit; 0: no limit, but none found with `closest` or `reverse`; negative: none found (as pywb)."),
        ("fl" = Option<String>, Query, description = "Fields, comma-separated (`fields` is the same)."),
        ("filter" = Option<Vec<String>>, Query, description = "Repeatable, pywb's syntax: `field:value` contains, `=field:value` equals, `~field:regex` matches from the start, `!` before any negates."),
        ("output" = Option<String>, Query, description = "`cdxj` (default, `text/x-cdxj`), `json` (an object a line, `text/x-ndjson`), `text` (the `fl` fields, `text/plain`) or `link` (the original URLs in link-format)."),
    ),
    responses((status = 200, description = "the captures, a line each, streamed"),
              (status = 400, description = "a bad parameter, named, in JSON whatever the output (as pywb)"),
              (status = 404, description = "an unknown collection")))]
async fn cdx(
    State(state): State<Arc<AppState>>,
    Path(coll): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    match cdx_answer(state, coll, raw).await {
        Ok(r) => r,
        // As pywb's: JSON whatever the output asked for.
        Err(e) => e.into_response(),
    }
}

async fn cdx_answer(
    state: Arc<AppState>,
    coll: String,
    raw: Option<String>,
) -> Result<Response, ApiError> {
    let params = Params::parse(raw);
    let output = match params.get("output").unwrap_or("cdxj") {
        "" | "cdxj" => Output::Cdxj,
        "json" => Output::Json,
        "text" => Output::Text,
        "link" => Output::Link,
        o => {
            return Err(ApiError::bad(
                "output",
                format!("{o:?} is unknown: expected cdxj, json, text or link"),
            ))
        }
    };
    // Errors in JSON, `{"message": …}` first, whatever the output: as pywb answers.
    check_collection(&state, &coll, false)?;
    let sel = selection(&params, state.config.serve.max_url_chars, false, true)?;
    // As pywb: 0 is no limit but finds nothing nearest a time or in reverse, and a
    // negative limit finds nothing.
    let dated = params.get("closest").is_some_and(|c| !c.is_empty());
    let reversed = sel.reverse() == Some(true);
    let sorted = reversed || (sel.reverse().is_none() && dated);
    let limit = match params.number("limit")? {
        Some(n) if n < 0 => 0,
        Some(0) if sorted => 0,
        Some(0) | None => u64::MAX,
        Some(n) => n as u64,
    };
    let fields = field_list(&params, TEXT_DEFAULT, PYWB_FIELDS)?;
    let explicit_fields = params
        .get("fl")
        .or_else(|| params.get("fields"))
        .is_some_and(|f| !f.trim().is_empty());
    let filters = params
        .filters(state.config.serve.max_filters)?
        .into_iter()
        .map(Filter::pywb)
        .collect::<Result<Vec<_>, _>>()?;
    let content_type = match output {
        // pywb's, without a charset.
        Output::Cdxj => "text/x-cdxj",
        Output::Json => "text/x-ndjson",
        Output::Text => "text/plain",
        Output::Link => "application/link-format",
    };
    let near = sel.closest_range();
    Ok(stream(&state, content_type, move |served, sink| {
        let mut clusters = served.cluster_ids();
        let n = std::cell::Cell::new(0u64);
        let passes =
            |f: &Fields| (filters.iter()).all(|flt| flt.passes(f.get(flt.field()).as_deref()));
        // Writes within the limit; false once the answer is done.
        let write = |sink: &mut Sink, f: Fields| -> bool {
            if n.get() >= limit {
                return false;
            }
            n.set(n.get() + 1);
            write_line(
                sink,
                &f,
                output,
                &fields,
                explicit_fields,
                n.get() == 1,
                &coll,
            )
        };
        let emit = |sink: &mut Sink, f: Fields| -> bool { !passes(&f) || write(sink, f) };
        // Captures of one URL at one second, in the order of pywb's sorted index lines
        // (bytewise), not the index's (file, record): so a limit keeps the same ones.
        let mut run: Vec<Fields> = Vec::new();
        let flush = |sink: &mut Sink, run: &mut Vec<Fields>| -> bool {
            if run.len() > 1 {
                run.sort_by_cached_key(pywb_line);
                if reversed {
                    run.reverse();
                }
            }
            run.drain(..).all(|f| emit(sink, f))
        };
        // A range nearest a time (pywb's `closest` on a prefix, host or domain): the
        // nearest that pass the filters, kept as they come, nearest first at the end.
        let keep = limit.min(CLOSEST_RANGE_MAX) as usize;
        let mut nearest: Vec<(i64, Fields)> = Vec::new();
        // Nearest first, then in pywb's line order (its line built for exact ties only).
        let by_nearness = |v: &mut Vec<(i64, Fields)>| {
            v.sort_by(|(da, a), (db, b)| {
                (da.cmp(db))
                    .then_with(|| a.row.surt.cmp(&b.row.surt))
                    .then_with(|| a.row.timestamp.cmp(&b.row.timestamp))
                    .then_with(|| pywb_line(a).cmp(&pywb_line(b)))
            });
            v.truncate(keep);
        };
        sel.scan(served, |_, row| {
            let f = Fields::new(row, &mut clusters)?;
            if let Some(at) = near {
                if keep > 0 && passes(&f) {
                    nearest.push(((seconds(&f.row.timestamp) - at).abs(), f));
                    if nearest.len() >= 2 * keep {
                        by_nearness(&mut nearest);
                    }
                }
                return Ok(true);
            }
            let same = |g: &Fields| g.row.surt == f.row.surt && g.row.timestamp == f.row.timestamp;
            if !run.first().is_none_or(same) && !flush(sink, &mut run) {
                return Ok(false);
            }
            run.push(f);
            Ok(true)
        })
        .map(|()| {
            flush(sink, &mut run);
            by_nearness(&mut nearest);
            // (They passed the filters as they came.)
            let _ = nearest.drain(..).all(|(_, f)| write(sink, f));
            // pywb's link-format: entries separated by `,\n`, the last ended by `\n`.
            if output == Output::Link && n.get() > 0 {
                sink.write(b"\n");
            }
        })
    })
    .await)
}

/// Most captures a `closest` on a key range keeps (pywb keeps its `limit`, 100,000 by
/// default): the answer's memory stays bounded.
const CLOSEST_RANGE_MAX: u64 = 10_000;

/// The JSON of a capture's line in an index pywb's indexer writes, which it sorts
/// bytewise (its fields, in its order and with its separators).
fn pywb_line(f: &Fields) -> String {
    let parts: Vec<String> = [
        "url", "mime", "status", "digest", "length", "offset", "filename",
    ]
    .iter()
    .filter_map(|k| Some(format!("\"{k}\": {}", Value::from(f.get(k)?))))
    .collect();
    format!("{{{}}}", parts.join(", "))
}

fn write_line(
    sink: &mut Sink,
    f: &Fields,
    output: Output,
    fields: &[String],
    explicit: bool,
    first: bool,
    coll: &str,
) -> bool {
    let line = match output {
        Output::Cdxj => {
            let mut obj = f.object();
            if explicit {
                obj.retain(|k, _| fields.iter().any(|x| x == k));
            }
            format!(
                "{} {} {}\n",
                f.row.surt,
                f.row.timestamp,
                Value::Object(obj)
            )
        }
        Output::Json => {
            let mut obj = Map::new();
            obj.insert("urlkey".into(), json!(f.row.surt));
            obj.insert("timestamp".into(), json!(f.row.timestamp));
            obj.extend(f.object());
            if explicit {
                obj.retain(|k, _| fields.iter().any(|x| x == k));
            }
            format!("{}\n", Value::Object(obj))
        }
        Output::Text => {
            let vals: Vec<String> = fields
                .iter()
                .map(|name| f.get(name).unwrap_or_else(|| "-".into()))
                .collect();
            format!("{}\n", vals.join(" "))
        }
        // As pywb's CDX server: the original URL (its TimeMaps name mementos).
        Output::Link => format!(
            "{}{}",
            if first { "" } else { ",\n" },
            super::links::link_value(&f.row.info.url, "memento", &f.row.timestamp, Some(coll))
        ),
    };
    sink.write(line.as_bytes())
}
