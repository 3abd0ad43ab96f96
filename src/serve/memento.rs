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

use std::io::Read;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;

use super::error::ApiError;
use super::links::{link_target, link_value};
use super::params::{base_url, check_collection};
use super::replay::{load, Payload};
use super::state::{AppState, Request};
use super::stream::stream;
use crate::access::Access;
use crate::query::captures::{closest, CaptureRange, MatchType};
use crate::query::CaptureRow;
use crate::timestamp::Timestamp14;

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/timemap/link/{*url}", get(timemap_link))
        .route("/timemap/json/{*url}", get(timemap_json))
        .route("/timegate/{*url}", get(timegate).head(timegate))
        .route("/{collection}/{*rest}", get(replay))
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

/// The first and the last memento of one URL (one per timestamp: the first capture of
/// a second), by three seeks, not by reading its history.
fn ends(served: &Request, url: &str) -> Result<Option<(CaptureRow, CaptureRow)>, ApiError> {
    let one = |range: CaptureRange, reverse: bool| -> Result<Option<CaptureRow>, ApiError> {
        let mut found = None;
        range.scan(served.index(), &served.reader, reverse, |_, r| {
            found = Some(r);
            Ok(false)
        })?;
        Ok(found)
    };
    let all = CaptureRange::new(url, MatchType::Exact, None, None);
    let (Some(first), Some(newest)) = (one(all.clone(), false)?, one(all, true)?) else {
        return Ok(None);
    };
    let of_second = CaptureRange::new(url, MatchType::Exact, Some(newest.timestamp.clone()), None);
    let last = one(of_second, false)?.unwrap_or(newest);
    Ok(Some((first, last)))
}

/// Calls `each` with every memento of one URL, oldest first, one per timestamp, until
/// it returns false.
fn each_memento(
    served: &Request,
    url: &str,
    mut each: impl FnMut(&CaptureRow) -> bool,
) -> Result<(), ApiError> {
    let mut last_ts = String::new();
    CaptureRange::new(url, MatchType::Exact, None, None).scan(
        served.index(),
        &served.reader,
        false,
        |_, r| {
            if r.timestamp == last_ts {
                return Ok(true);
            }
            last_ts = r.timestamp.clone();
            Ok(each(&r))
        },
    )?;
    Ok(())
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
        base: base_url(state, headers),
        coll: state.config.serve.collection.clone(),
    }
}

fn no_captures(url: &str) -> ApiError {
    ApiError::not_found("url", format!("{url} was never captured"))
}

/// A TimeMap streamed from the index (a URL's history is never held in memory): `head`
/// and `tail` around the mementos, each written by `entry` (with whether it is the
/// first and the last), `sep` between two.
async fn timemap(
    state: &Arc<AppState>,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    kind: &'static str,
    content_type: &'static str,
) -> Result<Response, ApiError> {
    let url = url_after(
        uri,
        &format!("/timemap/{kind}/"),
        state.config.serve.max_url_chars,
    )?;
    let l = links(state, headers);
    Ok(stream(state, content_type, move |served, sink| {
        let Some((first, last)) = ends(served, &url)? else {
            return Err(no_captures(&url));
        };
        let json = kind == "json";
        let entry = |r: &CaptureRow| -> String {
            if json {
                json!({"datetime": Timestamp14::iso_of(&r.timestamp), "uri": l.memento(r)})
                    .to_string()
            } else {
                let rel = match (r.timestamp == first.timestamp, r.timestamp == last.timestamp) {
                    (true, true) => "first last memento",
                    (true, false) => "first memento",
                    (false, true) => "last memento",
                    (false, false) => "memento",
                };
                format!(",\n{}", link_value(&l.memento(r), rel, &r.timestamp, None))
            }
        };
        let (head, tail) = if json {
            (
                format!(
                    "{{\"mementos\":{{\"first\":{},\"last\":{},\"list\":[",
                    entry(&first),
                    entry(&last)
                ),
                format!(
                    "]}},\"original_uri\":{},\"timegate_uri\":{},\"timemap_uri\":{}}}",
                    json!(url),
                    json!(l.timegate(&url)),
                    json!({"json_format": l.timemap(&url, "json"), "link_format": l.timemap(&url, "link")})
                ),
            )
        } else {
            (
                format!(
                    "<{}>; rel=\"original\",\n<{}>; rel=\"self\"; type=\"application/link-format\"; from=\"{}\"; until=\"{}\",\n<{}>; rel=\"timegate\"",
                    link_target(&url),
                    link_target(&l.timemap(&url, "link")),
                    Timestamp14::http_date_of(&first.timestamp),
                    Timestamp14::http_date_of(&last.timestamp),
                    link_target(&l.timegate(&url))
                ),
                "\n".to_string(),
            )
        };
        let mut open = sink.write(head.as_bytes());
        let mut n = 0u64;
        each_memento(served, &url, |r| {
            if json && n > 0 {
                open = sink.write(b",");
            }
            n += 1;
            open = open && sink.write(entry(r).as_bytes());
            open
        })?;
        sink.write(tail.as_bytes());
        Ok(())
    })
    .await)
}

/// The Memento TimeMap of a URL in link-format (RFC 7089): the original, the TimeGate
/// and every memento with its datetime, streamed.
#[utoipa::path(get, path = "/timemap/link/{url}", tag = "memento",
    params(("url" = String, Path, description = "The original URL, as it is (not encoded).")),
    responses((status = 200, description = "application/link-format"),
              (status = 404, description = "a URL never captured")))]
async fn timemap_link(
    State(state): State<Arc<AppState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    timemap(&state, &uri, &headers, "link", "application/link-format").await
}

/// The TimeMap as JSON: `{original_uri, timegate_uri, timemap_uri, mementos: {first,
/// last, list: [{datetime, uri}]}}`.
#[utoipa::path(get, path = "/timemap/json/{url}", tag = "memento",
    params(("url" = String, Path, description = "The original URL, as it is (not encoded).")),
    responses((status = 200, description = "the TimeMap"),
              (status = 404, description = "a URL never captured")))]
async fn timemap_json(
    State(state): State<Arc<AppState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    timemap(&state, &uri, &headers, "json", "application/json").await
}

/// The Memento TimeGate: a redirect to the memento closest to `Accept-Datetime` (the
/// newest without one), with the `Link` header of RFC 7089. HEAD answers the same.
#[utoipa::path(method(get, head), path = "/timegate/{url}", tag = "memento",
    params(("url" = String, Path, description = "The original URL, as it is (not encoded)."),
        ("Accept-Datetime" = Option<String>, Header, description = "An HTTP date (RFC 1123); the newest memento without one.")),
    responses((status = 302, description = "to the closest memento; `Vary: accept-datetime`"),
              (status = 400, description = "an Accept-Datetime that is not an HTTP date"),
              (status = 404, description = "a URL never captured")))]
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
    let (ends, best) = state
        .with_index(move |s| {
            let ends = ends(s, &u)?;
            let best = closest(s.index(), &s.reader, &u, &wanted, 1)?
                .into_iter()
                .next();
            Ok((ends, best))
        })
        .await?;
    let (Some((first, last)), Some(best)) = (ends, best) else {
        return Err(no_captures(&url));
    };
    let (first, last) = (&first, &last);
    let link = format!(
        "<{}>; rel=\"original\", <{}>; rel=\"timemap\"; type=\"application/link-format\", <{}>; rel=\"first memento\"; datetime=\"{}\", <{}>; rel=\"last memento\"; datetime=\"{}\"",
        link_target(&url),
        link_target(&l.timemap(&url, "link")),
        link_target(&l.memento(first)),
        Timestamp14::http_date_of(&first.timestamp),
        link_target(&l.memento(last)),
        Timestamp14::http_date_of(&last.timestamp)
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
#[utoipa::path(get, path = "/{collection}/{timestamp}/{url}", tag = "memento",
    params(("collection" = String, Path, description = "The collection (`tidemark serve --collection`, default `tidemark`)."),
        ("timestamp" = String, Path, description = "1 to 14 digits, then optionally a modifier ending in `_` as pywb writes them (`id_`, `mp_`, `im_`, `js_`, …): each one gives the payload as archived, never rewritten."),
        ("url" = String, Path, description = "The original URL, as it is (not encoded).")),
    responses((status = 200, description = "the archived status and payload, with `Memento-Datetime` and a `Link` to the original, the TimeGate and the TimeMap; of the archived headers, `Content-Type`, `Content-Disposition` and `Content-Language` as themselves, every other as `X-Archive-Orig-{name}` (as pywb sends them)"),
              (status = 302, description = "another timestamp: to the closest capture"),
              (status = 301, description = "an archived redirect (any 3xx, as archived): its `Location` is the memento of its target at the same timestamp, so following it stays in the archive"),
              (status = 400, description = "a timestamp that is not 1 to 14 digits with an optional modifier"),
              (status = 403, description = "an access rule (`serve.acl_paths`) or embargo blocks its replay for this user: `{\"code\": \"blocked\"}`"),
              (status = 404, description = "not captured, or its WARC file is not found (named)"),
              (status = 507, description = "the archived record is larger than the server reads for replay (`serve.max_replay_bytes`, named): never served cut short")))]
async fn replay(
    State(state): State<Arc<AppState>>,
    Path(parts): Path<(String, String)>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let coll = parts.0;
    check_collection(&state, &coll, false)?;
    let prefix = format!("/{coll}/");
    let rest = uri.path().get(prefix.len()..).unwrap_or("");
    let (spec, _) = rest.split_once('/').unwrap_or((rest, ""));
    let digits: String = spec.chars().take_while(|c| c.is_ascii_digit()).collect();
    let modifier = &spec[digits.len()..];
    if digits.is_empty() || digits.len() > 14 || !(modifier.is_empty() || modifier.ends_with('_')) {
        return Err(ApiError::bad(
            "timestamp",
            format!("{spec:?}: expected /{coll}/TIMESTAMP/URL or /{coll}/TIMESTAMPid_/URL (1 to 14 digits, then optionally a modifier ending in _)"),
        ));
    }
    let url = url_after(
        &uri,
        &format!("{prefix}{spec}/"),
        state.config.serve.max_url_chars,
    )?;
    let ts = Timestamp14::from_prefix(&digits, false)
        .map(String::from)
        .unwrap_or_default();
    let l = links(&state, &headers);
    let st = state.clone();
    let u = url.clone();
    let found = state
        .with_index(move |s| {
            let Some(best) = closest(s.index(), &s.reader, &u, &ts, 1)?.into_iter().next() else {
                return Ok(None);
            };
            if best.timestamp != ts {
                return Ok(Some(Err(best)));
            }
            if s.reader.access_of(&best.surt, &best.timestamp) == Access::Block {
                return Err(ApiError::forbidden(format!(
                    "the capture of {} at {} is not replayed here (an access rule or embargo blocks it)",
                    best.info.url, best.timestamp
                )));
            }
            let mut archived = load(&st, s, &best)?;
            // The archived payload is served as it was; a redirect's Location to a URL
            // the reader may not be told of is not (a link in a page still is).
            archived.headers.retain(|(k, v)| {
                !(k.eq_ignore_ascii_case("location") || k.eq_ignore_ascii_case("content-location"))
                    || s.reader.url_shown(&crate::url::resolve(&best.info.url, v))
            });
            let location = (archived.headers.iter())
                .find(|(k, _)| k.eq_ignore_ascii_case("location"))
                .map(|(_, v)| crate::url::resolve(&best.info.url, v));
            let moved_to = match location {
                Some(target) => memento_of_target(s.index(), &s.reader, &best, &target)?,
                None => None,
            };
            Ok(Some(Ok((archived, moved_to))))
        })
        .await?;
    let archived = match found {
        None => return Err(no_captures(&url)),
        Some(Err(other)) => {
            let link = format!(
                "<{}>; rel=\"original\", <{}>; rel=\"timegate\"",
                link_target(&url),
                link_target(&l.timegate(&url))
            );
            return Ok(redirect(&l.memento(&other), &link));
        }
        Some(Ok(a)) => a,
    };
    let (archived, moved_to) = archived;
    // Where an archived redirect leads, as a path of this service unless
    // `serve.public_url` names it: a client's Host header must not make the link.
    let location = moved_to.map(|(ts, target)| {
        let base = match state.config.serve.public_url.is_empty() {
            true => "",
            false => l.base.as_str(),
        };
        format!("{base}/{}/{ts}id_/{target}", l.coll)
    });
    // HEAD too: hyper sends the headers (Content-Length included) without the body.
    let mut resp = match archived.payload {
        Payload::Whole(bytes) => Response::new(Body::from(bytes)),
        Payload::Streamed { reader, length } => {
            let mut r = Response::new(streamed(&state, reader).await?);
            r.headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
            r
        }
    };
    *resp.status_mut() = StatusCode::from_u16(archived.status).unwrap_or(StatusCode::OK);
    let h = resp.headers_mut();
    for (name, val) in replayed_headers(&archived.headers, location.as_deref()) {
        h.append(name, val);
    }
    if let Ok(v) = HeaderValue::from_str(&Timestamp14::http_date_of(&archived.timestamp)) {
        h.insert("memento-datetime", v);
    }
    if let Some(v) = url_header(&format!(
        "<{}>; rel=\"original\", <{}>; rel=\"timegate\", <{}>; rel=\"timemap\"; type=\"application/link-format\"",
        link_target(&url),
        link_target(&l.timegate(&url)),
        link_target(&l.timemap(&url, "link"))
    )) {
        h.insert(header::LINK, v);
    }
    Ok(resp)
}

/// The headers a memento is sent with, from its archived ones, as pywb replays them: the
/// few that describe the payload are sent as themselves; an archived redirect's
/// `Location` is `location`, the memento it leads to ([`memento_of_target`]; none: the
/// archived value is only told, as `X-Archive-Orig-Location`); every other one, which
/// would act on this server's origin or describe the archived transfer (`Set-Cookie`,
/// `Strict-Transport-Security`, `Content-Security-Policy`, `Date`, `Link`, caching,
/// framing), is sent as `X-Archive-Orig-{name}`.
fn replayed_headers(
    archived: &[(String, String)],
    location: Option<&str>,
) -> Vec<(HeaderName, HeaderValue)> {
    const AS_THEMSELVES: [&str; 3] = ["content-type", "content-disposition", "content-language"];
    let mut out = Vec::new();
    for (k, v) in archived {
        let lk = k.to_ascii_lowercase();
        if AS_THEMSELVES.contains(&lk.as_str()) {
            if let (Ok(name), Ok(val)) = (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                out.push((name, val));
            }
            continue;
        }
        if lk == "location" {
            if let Some(val) = location.and_then(url_header) {
                out.push((header::LOCATION, val));
            }
        }
        let orig = HeaderName::from_bytes(format!("x-archive-orig-{lk}").as_bytes());
        let val = match lk.as_str() {
            "location" | "content-location" => url_header(v),
            _ => HeaderValue::from_str(v).ok(),
        };
        if let (Ok(name), Some(val)) = (orig, val) {
            out.push((name, val));
        }
    }
    out
}

/// The memento an archived redirect of `best` to `target` leads to: `target` at the
/// same time (the closest capture of it answers), unless `target` is `best`'s own URL
/// in another form (http to https, `www.`, case: one SURT key), which would lead back
/// to this redirect: then the closest capture of that URL that is not a redirect, or
/// none.
fn memento_of_target(
    index: &crate::index::Index,
    reader: &crate::access::Reader,
    best: &CaptureRow,
    target: &str,
) -> Result<Option<(String, String)>, ApiError> {
    if crate::url::surt(target) != best.surt {
        return Ok(Some((best.timestamp.clone(), target.to_string())));
    }
    let mut found = None;
    crate::query::captures::closest_each(index, reader, target, &best.timestamp, |r| {
        if r.info.status.is_some_and(|c| (300..400).contains(&c)) {
            return Ok(true);
        }
        found = Some((r.timestamp.clone(), r.info.url.clone()));
        Ok(false)
    })?;
    Ok(found)
}

/// A payload read from its WARC file chunk by chunk on a blocking thread as the client
/// takes it, until `serve.request_timeout_s` (then the connection is cut: with its
/// Content-Length the client sees a short body, not a complete one). The thread holds one
/// of the `serve.workers` slots while it reads the file; waiting for a client slower than
/// the file, it gives the slot back (one of `serve.max_slow_answers` instead), and takes
/// one again before reading on.
async fn streamed(
    state: &Arc<AppState>,
    mut reader: Box<dyn Read + Send>,
) -> Result<Body, ApiError> {
    use tokio::sync::mpsc::error::TrySendError;
    let permit = state.permit().await?;
    let (workers, slow_answers) = (state.workers.clone(), state.slow_answers.clone());
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    let deadline = tokio::time::Instant::from_std(state.deadline());
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut permit = Some(permit);
        loop {
            let mut buf = vec![0u8; 64 * 1024];
            let item = match reader.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    buf.truncate(n);
                    Ok(buf)
                }
                Err(e) => Err(e),
            };
            let failed = item.is_err();
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            let full = match tx.try_send(item) {
                Ok(()) if !failed => continue,
                Err(TrySendError::Full(item)) if !failed => item,
                _ => return,
            };
            // A client slower than the file: wait for it without the worker.
            drop(permit.take());
            let sent = super::stream::wait_for_client(&handle, &tx, full, deadline, &slow_answers);
            let again = sent.then(|| {
                handle.block_on(tokio::time::timeout_at(
                    deadline,
                    workers.clone().acquire_owned(),
                ))
            });
            match again {
                Some(Ok(Ok(p))) => permit = Some(p),
                _ => return,
            }
        }
    });
    Ok(Body::from_stream(
        tokio_stream::wrappers::ReceiverStream::new(rx),
    ))
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
