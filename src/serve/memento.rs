//! Memento (RFC 7089): TimeMaps, a TimeGate, and the mementos themselves.
//!
//! - `GET /timemap/link/{URL}` (`application/link-format`) and `/timemap/json/{URL}`:
//!   every capture of the URL, with `original`, `self` (with `from`/`until`),
//!   `timegate`, and `first memento`/`last memento` marked.
//! - `GET|HEAD /timegate/{URL}` with `Accept-Datetime` (RFC 1123; none: the newest):
//!   `302` to the closest memento, `Vary: accept-datetime`, a `Link` header naming the
//!   original, the TimeMap and the first and last mementos.
//! - `GET /{collection}/{TIMESTAMP}id_/{URL}`: the archived payload read from the WARC
//!   file at the stored offset (a revisit's from the record it revisits), with its
//!   archived status and headers, `Memento-Datetime` and `Link: <URL>; rel="original"`.
//!   Another timestamp redirects to the closest capture; a WARC file no longer found is
//!   a 404 that says which file.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path as FsPath;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;

use super::cdx::{base_url, check_collection};
use super::error::ApiError;
use super::state::{AppState, Served};
use crate::query::captures::{closest, revisited, CaptureRange, MatchType};
use crate::query::CaptureRow;
use crate::read::{parse_response, RecordReader};

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/timemap/link/{*url}", get(timemap_link))
        .route("/timemap/json/{*url}", get(timemap_json))
        .route("/timegate/{*url}", get(timegate).head(timegate))
        .route("/{collection}/{*rest}", get(replay))
}

/// RFC 1123 date of a 14-digit timestamp: `Sun, 01 Nov 2026 12:00:00 GMT`.
pub fn http_date(ts: &str) -> String {
    parse_ts(ts)
        .map(|t| t.format("%a, %d %b %Y %H:%M:%S GMT").to_string())
        .unwrap_or_default()
}

fn parse_ts(ts: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::NaiveDateTime::parse_from_str(ts, "%Y%m%d%H%M%S")
        .ok()
        .map(|t| t.and_utc())
}

/// The URL after a route's prefix, with the request's query: it is part of the archived
/// URL (`/timegate/http://example.com/a?b=1`). Clients that merge slashes send `http:/x`.
fn url_after(uri: &axum::http::Uri, prefix: &str, max: usize) -> Result<String, ApiError> {
    let path = uri.path();
    let mut url = path.get(prefix.len()..).unwrap_or("").to_string();
    if let Some(q) = uri.query() {
        url.push('?');
        url.push_str(q);
    }
    for scheme in ["http:/", "https:/"] {
        if url.starts_with(scheme) && !url.starts_with(&format!("{scheme}/")) {
            url.insert(scheme.len(), '/');
        }
    }
    if url.chars().count() > max {
        return Err(ApiError::too_long("url", max));
    }
    crate::url::check(&url).map_err(|e| ApiError::bad("url", e))?;
    Ok(url)
}

/// Every capture of one URL, oldest first, one per timestamp.
fn mementos(served: &Served, url: &str) -> Result<Vec<CaptureRow>, ApiError> {
    let mut rows: Vec<CaptureRow> = Vec::new();
    CaptureRange::new(url, MatchType::Exact, None, None).scan(&served.index, false, |_, r| {
        if rows.last().map(|l| &l.timestamp) != Some(&r.timestamp) {
            rows.push(r);
        }
        Ok(true)
    })?;
    Ok(rows)
}

struct Links {
    base: String,
    coll: String,
}

impl Links {
    fn memento(&self, r: &CaptureRow) -> String {
        format!(
            "{}/{}/{}id_/{}",
            self.base, self.coll, r.timestamp, r.info.url
        )
    }
    fn timegate(&self, url: &str) -> String {
        format!("{}/timegate/{url}", self.base)
    }
    fn timemap(&self, url: &str, kind: &str) -> String {
        format!("{}/timemap/{kind}/{url}", self.base)
    }
}

fn links(state: &AppState, headers: &HeaderMap) -> Links {
    Links {
        base: base_url(headers),
        coll: state.config.serve.collection.clone(),
    }
}

fn no_captures(url: &str) -> ApiError {
    ApiError::not_found("url", format!("{url} was never captured"))
}

/// The URL after `prefix`, the links of this server, and the URL's mementos (at least one).
async fn timemap(
    state: &Arc<AppState>,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    prefix: &str,
) -> Result<(String, Links, Vec<CaptureRow>), ApiError> {
    let url = url_after(uri, prefix, state.config.serve.max_url_chars)?;
    let l = links(state, headers);
    let u = url.clone();
    let rows = state.with_index(move |s| mementos(s, &u)).await?;
    if rows.is_empty() {
        return Err(no_captures(&url));
    }
    Ok((url, l, rows))
}

async fn timemap_link(
    State(state): State<Arc<AppState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (url, l, rows) = timemap(&state, &uri, &headers, "/timemap/link/").await?;
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    let mut out = format!(
        "<{url}>; rel=\"original\",\n<{}>; rel=\"self\"; type=\"application/link-format\"; from=\"{}\"; until=\"{}\",\n<{}>; rel=\"timegate\"",
        l.timemap(&url, "link"),
        http_date(&first.timestamp),
        http_date(&last.timestamp),
        l.timegate(&url)
    );
    for (i, r) in rows.iter().enumerate() {
        let rel = match (i == 0, i + 1 == rows.len()) {
            (true, true) => "first last memento",
            (true, false) => "first memento",
            (false, true) => "last memento",
            (false, false) => "memento",
        };
        out.push_str(&format!(
            ",\n<{}>; rel=\"{rel}\"; datetime=\"{}\"",
            l.memento(r),
            http_date(&r.timestamp)
        ));
    }
    out.push('\n');
    Ok(([(header::CONTENT_TYPE, "application/link-format")], out).into_response())
}

async fn timemap_json(
    State(state): State<Arc<AppState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (url, l, rows) = timemap(&state, &uri, &headers, "/timemap/json/").await?;
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    let entry = |r: &CaptureRow| json!({"datetime": crate::query::iso_date(&r.timestamp), "uri": l.memento(r)});
    let body = json!({
        "original_uri": url,
        "timegate_uri": l.timegate(&url),
        "timemap_uri": {"link_format": l.timemap(&url, "link"), "json_format": l.timemap(&url, "json")},
        "mementos": {
            "first": entry(first),
            "last": entry(last),
            "list": rows.iter().map(entry).collect::<Vec<_>>(),
        }
    });
    Ok(axum::Json(body).into_response())
}

async fn timegate(
    State(state): State<Arc<AppState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let url = url_after(&uri, "/timegate/", state.config.serve.max_url_chars)?;
    let wanted = match headers.get("accept-datetime") {
        None => "99991231235959".to_string(),
        Some(v) => {
            let s = v.to_str().unwrap_or("");
            chrono::DateTime::parse_from_rfc2822(s)
                .map(|t| {
                    t.with_timezone(&chrono::Utc)
                        .format("%Y%m%d%H%M%S")
                        .to_string()
                })
                .map_err(|_| {
                    ApiError::bad(
                        "Accept-Datetime",
                        format!(
                            "{s:?} is not an RFC 1123 date (e.g. Sun, 01 Nov 2026 12:00:00 GMT)"
                        ),
                    )
                })?
        }
    };
    let l = links(&state, &headers);
    let u = url.clone();
    let (rows, best) = state
        .with_index(move |s| {
            let rows = mementos(s, &u)?;
            let best = closest(&s.index, &u, &wanted, 1)?.into_iter().next();
            Ok((rows, best))
        })
        .await?;
    let (Some(first), Some(last), Some(best)) = (rows.first(), rows.last(), best) else {
        return Err(no_captures(&url));
    };
    let link = format!(
        "<{url}>; rel=\"original\", <{}>; rel=\"timemap\"; type=\"application/link-format\", <{}>; rel=\"first memento\"; datetime=\"{}\", <{}>; rel=\"last memento\"; datetime=\"{}\"",
        l.timemap(&url, "link"),
        l.memento(first),
        http_date(&first.timestamp),
        l.memento(last),
        http_date(&last.timestamp)
    );
    Ok(redirect(&l.memento(&best), &link))
}

fn redirect(location: &str, link: &str) -> Response {
    let mut r = StatusCode::FOUND.into_response();
    let h = r.headers_mut();
    if let Some(v) = url_header(location) {
        h.insert(header::LOCATION, v);
    }
    if let Some(v) = url_header(link) {
        h.insert(header::LINK, v);
    }
    h.insert(header::VARY, HeaderValue::from_static("accept-datetime"));
    r
}

/// A header value holding URLs (`Location`, `Link`): bytes a header cannot hold
/// (non-ASCII, controls) percent-encoded as in a URL, as browsers send them. Such a
/// value was dropped: a 302 without its `Location`.
fn url_header(v: &str) -> Option<HeaderValue> {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b >= 0x80 || (b < 0x20 && b != b'\t') || b == 0x7f {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    HeaderValue::from_str(&out).ok()
}

/// `/{collection}/{TIMESTAMP}[modifier]/{URL}`: the memento.
async fn replay(
    State(state): State<Arc<AppState>>,
    Path((coll, _)): Path<(String, String)>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    check_collection(&state, &coll, false)?;
    let prefix = format!("/{coll}/");
    let rest = uri.path().get(prefix.len()..).unwrap_or("");
    let (spec, _) = rest.split_once('/').unwrap_or((rest, ""));
    let digits: String = spec.chars().take_while(|c| c.is_ascii_digit()).collect();
    let modifier = &spec[digits.len()..];
    if digits.is_empty() || digits.len() > 14 || !(modifier.is_empty() || modifier.ends_with('_')) {
        return Err(ApiError::bad(
            "timestamp",
            format!("{spec:?}: expected /{coll}/TIMESTAMP/URL or /{coll}/TIMESTAMPid_/URL (1 to 14 digits)"),
        ));
    }
    let url = url_after(
        &uri,
        &format!("{prefix}{spec}/"),
        state.config.serve.max_url_chars,
    )?;
    let ts = crate::query::captures::pad_timestamp(&digits, false).unwrap_or_default();
    let l = links(&state, &headers);
    let st = state.clone();
    let u = url.clone();
    let found = state
        .with_index(move |s| {
            let Some(best) = closest(&s.index, &u, &ts, 1)?.into_iter().next() else {
                return Ok(None);
            };
            if best.timestamp != ts {
                return Ok(Some(Err(best)));
            }
            Ok(Some(Ok(load(&st, s, &best)?)))
        })
        .await?;
    let archived = match found {
        None => return Err(no_captures(&url)),
        Some(Err(other)) => {
            let link = format!(
                "<{url}>; rel=\"original\", <{}>; rel=\"timegate\"",
                l.timegate(&url)
            );
            return Ok(redirect(&l.memento(&other), &link));
        }
        Some(Ok(a)) => a,
    };
    // HEAD too: hyper sends the headers (Content-Length included) without the body.
    let mut resp = Response::new(Body::from(archived.payload));
    *resp.status_mut() = StatusCode::from_u16(archived.status).unwrap_or(StatusCode::OK);
    let h = resp.headers_mut();
    for (k, v) in &archived.headers {
        let lk = k.to_ascii_lowercase();
        // Framing and encodings are this server's: the payload is sent decoded and whole.
        if matches!(
            lk.as_str(),
            "transfer-encoding"
                | "content-length"
                | "content-encoding"
                | "connection"
                | "keep-alive"
        ) {
            continue;
        }
        // An archived Location may hold a non-ASCII URL.
        let val = match lk.as_str() {
            "location" | "content-location" => url_header(v),
            _ => HeaderValue::from_str(v).ok(),
        };
        if let (Ok(name), Some(val)) = (HeaderName::from_bytes(k.as_bytes()), val) {
            h.append(name, val);
        }
    }
    if let Ok(v) = HeaderValue::from_str(&http_date(&archived.timestamp)) {
        h.insert("memento-datetime", v);
    }
    if let Some(v) = url_header(&format!(
        "<{url}>; rel=\"original\", <{}>; rel=\"timegate\", <{}>; rel=\"timemap\"; type=\"application/link-format\"",
        l.timegate(&url),
        l.timemap(&url, "link")
    )) {
        h.insert(header::LINK, v);
    }
    Ok(resp)
}

/// A payload read back from its WARC file.
struct Archived {
    status: u16,
    headers: Vec<(String, String)>,
    payload: Vec<u8>,
    timestamp: String,
}

/// Bytes of one record read back for replay (the payload is held whole).
const REPLAY_CAP: usize = 256 << 20;

/// Reads a capture's payload; a revisit's from the capture it revisits.
fn load(state: &AppState, served: &Served, row: &CaptureRow) -> Result<Archived, ApiError> {
    let source = if row.info.kind == "revisit" {
        revisited(&served.index, row)?.ok_or_else(|| {
            ApiError::not_found(
                "url",
                format!(
                    "the capture of {} at {} is a revisit whose original record is not in the index",
                    row.info.url, row.timestamp
                ),
            )
        })?
    } else {
        row.clone()
    };
    let name = &source.info.file;
    let path = state.warc_path(served, &source).ok_or_else(|| {
        ApiError::not_found(
            "warc",
            format!("the WARC file {name} of this capture is no longer where it was ingested from; add its folder to serve.archive_paths"),
        )
    })?;
    let rec = read_record(&path, source.info.offset, source.info.length).map_err(|m| {
        ApiError::internal(format!(
            "{}: offset {}: {m}",
            path.display(),
            source.info.offset
        ))
    })?;
    let (status, headers, payload) = match parse_response(&rec.block, REPLAY_CAP) {
        Some(r) => (r.status, r.headers, r.payload),
        None => {
            let mime = rec
                .field_str("Content-Type")
                .unwrap_or_else(|| "application/octet-stream".into());
            (200, vec![("Content-Type".to_string(), mime)], rec.block)
        }
    };
    Ok(Archived {
        // A revisit answers with its own status line where it has one.
        status: row.info.status.unwrap_or(status),
        headers,
        payload,
        timestamp: row.timestamp.clone(),
    })
}

fn read_record(path: &FsPath, offset: u64, length: u64) -> Result<crate::read::Record, String> {
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    f.seek(SeekFrom::Start(offset)).map_err(|e| e.to_string())?;
    let reader: Box<dyn Read + Send> = if length > 0 {
        Box::new(f.take(length))
    } else {
        Box::new(f)
    };
    let mut records = RecordReader::from_reader(reader, REPLAY_CAP).map_err(|e| e.message)?;
    match records.next() {
        Some(Ok(r)) => Ok(r),
        Some(Err(e)) => Err(e.message),
        None => Err("no record there".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_to_a_non_ascii_url_keeps_its_location() {
        let r = redirect(
            "http://h/tidemark/20200101000000id_/http://a.example/café",
            "<http://a.example/café>; rel=\"original\"",
        );
        let loc = r.headers().get(header::LOCATION).expect("a Location");
        assert_eq!(
            loc,
            "http://h/tidemark/20200101000000id_/http://a.example/caf%C3%A9"
        );
        let link = r.headers().get(header::LINK).expect("a Link");
        assert_eq!(link, "<http://a.example/caf%C3%A9>; rel=\"original\"");
        assert_eq!(
            url_header("http://a/x?q=1&r=%20").unwrap(),
            "http://a/x?q=1&r=%20"
        );
    }
}
