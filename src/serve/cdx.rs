//! The capture index API of pywb and OutbackCDX: `GET /{collection}?url=…`.
//!
//! Parameters (pywb's `cdxserver_api`): `url` (a trailing `*` asks for a prefix, a
//! leading `*.` for a domain) or `urlkey` (a SURT key), `matchType`
//! (`exact|prefix|host|domain`), `from`/`to` (1–14 digits, padded), `closest` with
//! `sort=closest` (one URL, nearest first; an empty `closest=` means the newest),
//! `sort=reverse`, `limit`, `fl`/`fields`, repeatable `filter=[!][=|~]field:value`
//! (contains; `=` exact; `~` regex from the start of the value), `output` (`cdxj`, the
//! default; `json`, one object per line; `text`, the `fl` fields separated by spaces;
//! `link`, Memento link-format). No implicit limit: pywb sends none and filters itself.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};

use super::error::ApiError;
use super::params::{
    base_url, check_collection, field_list, selection, Fields, Filter, Params, PYWB_FIELDS,
    TEXT_DEFAULT,
};
use super::state::AppState;
use super::stream::{stream, Sink};

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
        ("closest" = Option<String>, Query, description = "With `sort=closest`: the captures of one URL nearest this timestamp first; empty means the newest."),
        ("sort" = Option<String>, Query, description = "`closest` or `reverse`."),
        ("limit" = Option<u64>, Query, description = "Most lines; none by default."),
        ("fl" = Option<String>, Query, description = "Fields, comma-separated (`fields` is the same)."),
        ("filter" = Option<Vec<String>>, Query, description = "Repeatable, pywb's syntax: `field:value` contains, `=field:value` equals, `~field:regex` matches from the start, `!` before any negates."),
        ("output" = Option<String>, Query, description = "`cdxj` (default), `json` (an object a line), `text` (the `fl` fields) or `link` (link-format)."),
    ),
    responses((status = 200, description = "the captures, a line each, streamed"),
              (status = 400, description = "a bad parameter, named"),
              (status = 404, description = "an unknown collection")))]
async fn cdx(
    State(state): State<Arc<AppState>>,
    Path(coll): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    match cdx_answer(state, coll, headers, raw).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn cdx_answer(
    state: Arc<AppState>,
    coll: String,
    headers: HeaderMap,
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
    let plain = output != Output::Json;
    check_collection(&state, &coll, plain)?;
    let fix = |e: ApiError| if plain { e.plain() } else { e };
    let sel = selection(&params, state.config.serve.max_url_chars, plain)?;
    let limit = match params.number("limit").map_err(fix)? {
        Some(n) if n < 0 => return Err(fix(ApiError::bad("limit", "must not be negative".into()))),
        Some(n) => n as u64,
        None => u64::MAX,
    };
    let fields = field_list(&params, TEXT_DEFAULT, PYWB_FIELDS).map_err(fix)?;
    let explicit_fields = params
        .get("fl")
        .or_else(|| params.get("fields"))
        .is_some_and(|f| !f.trim().is_empty());
    let filters = params
        .filters(state.config.serve.max_filters)
        .map_err(fix)?
        .into_iter()
        .map(Filter::pywb)
        .collect::<Result<Vec<_>, _>>()
        .map_err(fix)?;
    let base = base_url(&state, &headers);
    let content_type = match output {
        Output::Cdxj => "text/x-cdxj; charset=utf-8",
        Output::Json => "application/x-ndjson",
        Output::Text => "text/plain; charset=utf-8",
        Output::Link => "application/link-format",
    };
    Ok(stream(&state, content_type, move |served, sink| {
        let mut clusters = served.cluster_ids();
        let mut n = 0u64;
        sel.scan(served, |_, row| {
            if n >= limit {
                return Ok(false);
            }
            let f = Fields::new(row, &mut clusters)?;
            if !filters
                .iter()
                .all(|flt| flt.passes(f.get(flt.field()).as_deref()))
            {
                return Ok(true);
            }
            n += 1;
            Ok(write_line(
                sink,
                &f,
                output,
                &fields,
                explicit_fields,
                &base,
                &coll,
            ))
        })
        // Errors in the text outputs' own form, as before the answer started.
        .map_err(|e| if plain { e.plain() } else { e })
    })
    .await)
}

fn write_line(
    sink: &mut Sink,
    f: &Fields,
    output: Output,
    fields: &[String],
    explicit: bool,
    base: &str,
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
        Output::Link => format!(
            "{},\n",
            super::links::link_value(
                &format!("{base}/{coll}/{}id_/{}", f.row.timestamp, f.row.info.url),
                "memento",
                &f.row.timestamp,
                Some(coll)
            )
        ),
    };
    sink.write(line.as_bytes())
}
