//! The query parameters the capture-index APIs share: parsed in order (`filter`
//! repeats), timestamps, pywb's and the Wayback Machine's filters, field lists, which
//! captures and in which order (`selection`), the collection named in a path and the
//! address absolute links start with. Used by the pywb/OutbackCDX endpoint (`cdx.rs`),
//! the Wayback CDX and availability APIs (`wayback.rs`) and Memento (`memento.rs`), so
//! that no endpoint module imports another.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use regex::Regex;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use utoipa::IntoParams;

use super::error::ApiError;
use super::state::{AppState, Request};
use crate::export::capture_fields;
use crate::index::unionfind::ClusterIds;
use crate::query::captures::{closest_each, seconds, CaptureRange, MatchType};
use crate::query::CaptureRow;
use crate::report::ReportOptions;
use crate::timestamp::Timestamp14;

/// Query parameters in order, repeated keys kept (`filter` repeats).
pub(crate) struct Params(Vec<(String, String)>);

impl Params {
    pub(crate) fn parse(raw: Option<String>) -> Params {
        Params(
            form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The last value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every parameter, in the order given.
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Every value of `name`.
    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The non-empty `filter` values, at most `max` (`serve.max_filters`): each is
    /// tried on every capture scanned.
    pub(crate) fn filters(&self, max: usize) -> Result<Vec<&str>, ApiError> {
        let all: Vec<&str> = self
            .all("filter")
            .into_iter()
            .filter(|f| !f.is_empty())
            .collect();
        if all.len() > max {
            return Err(ApiError::bad(
                "filter",
                format!(
                    "{} filters given; at most {max} (serve.max_filters)",
                    all.len()
                ),
            ));
        }
        Ok(all)
    }

    /// A URL parameter, checked against `serve.max_url_chars`.
    pub(crate) fn url(&self, name: &str, max: usize) -> Result<Option<String>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(u) if u.chars().count() > max => Err(ApiError::too_long(name, max)),
            Some(u) if u.trim().is_empty() => {
                Err(ApiError::bad(name, "is empty: expected a URL".into()))
            }
            Some(u) => Ok(Some(u.trim().to_string())),
        }
    }

    /// A 1–14 digit timestamp, padded down (`from`) or up (`to`); empty counts as absent.
    pub(crate) fn timestamp(&self, name: &str, upper: bool) -> Result<Option<String>, ApiError> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some(t) => Timestamp14::from_prefix(t, upper).map(|t| Some(t.into())).ok_or_else(|| {
                ApiError::bad(name, format!("{t:?} is not a timestamp: expected 1 to 14 digits (e.g. 2026 or 20261101120000)"))
            }),
        }
    }

    /// A whole number.
    pub(crate) fn number(&self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some(n) => n
                .trim()
                .parse::<i64>()
                .map(Some)
                .map_err(|_| ApiError::bad(name, format!("{n:?} is not a whole number"))),
        }
    }

    /// `matchType`, with the URL's wildcards read: (URL without them, match type).
    pub(crate) fn match_type(&self, url: &str) -> Result<(String, MatchType), ApiError> {
        let given = match self.get("matchType") {
            None | Some("") => None,
            Some(m) => Some(MatchType::parse(m).ok_or_else(|| {
                ApiError::bad(
                    "matchType",
                    format!("{m:?} is unknown: expected exact, prefix, host or domain"),
                )
            })?),
        };
        Ok(MatchType::from_wildcards(url, given))
    }
}

/// How a filter compares.
#[derive(Debug, Clone)]
enum Compare {
    Contains(String),
    Exact(String),
    Regex(Regex),
}

/// One `filter=`: a field, a comparison, maybe negated.
#[derive(Debug, Clone)]
pub(crate) struct Filter {
    field: String,
    negate: bool,
    compare: Compare,
}

impl Filter {
    /// pywb's syntax: `[!][=|~]field:value` — contains by default, `=` exact, `~` a
    /// regular expression matched from the start of the value.
    pub(crate) fn pywb(spec: &str) -> Result<Filter, ApiError> {
        let (negate, rest) = match spec.strip_prefix('!') {
            Some(r) => (true, r),
            None => (false, spec),
        };
        let (mode, rest) = match rest.chars().next() {
            Some(c @ ('=' | '~')) => (Some(c), &rest[1..]),
            _ => (None, rest),
        };
        let (field, value) = split_filter(spec, rest)?;
        let compare = match mode {
            Some('=') => Compare::Exact(value.to_string()),
            Some(_) => Compare::Regex(regex("filter", &format!("^(?:{value})"))?),
            None => Compare::Contains(value.to_string()),
        };
        Ok(Filter {
            field: field.to_string(),
            negate,
            compare,
        })
    }

    /// The Wayback Machine's syntax: `[!]field:regex`, the whole value matching.
    pub(crate) fn wayback(spec: &str) -> Result<Filter, ApiError> {
        let (negate, rest) = match spec.strip_prefix('!') {
            Some(r) => (true, r),
            None => (false, spec),
        };
        let (field, value) = split_filter(spec, rest)?;
        Ok(Filter {
            field: field.to_string(),
            negate,
            compare: Compare::Regex(regex("filter", &format!("^(?:{value})$"))?),
        })
    }

    /// The field it tests.
    pub(crate) fn field(&self) -> &str {
        &self.field
    }

    /// Whether a capture whose field has `value` passes.
    pub(crate) fn passes(&self, value: Option<&str>) -> bool {
        let v = value.unwrap_or("");
        let hit = match &self.compare {
            Compare::Contains(s) => v.contains(s.as_str()),
            Compare::Exact(s) => v == s,
            Compare::Regex(r) => r.is_match(v),
        };
        hit != self.negate
    }
}

fn split_filter<'a>(spec: &str, rest: &'a str) -> Result<(&'a str, &'a str), ApiError> {
    match rest.split_once(':') {
        Some((f, v)) if !f.is_empty() => Ok((f, v)),
        _ => Err(ApiError::bad(
            "filter",
            format!("{spec:?}: expected [!][=|~]field:value, e.g. filter=mime:html or filter=!=status:200"),
        )),
    }
}

pub(crate) fn regex(param: &str, re: &str) -> Result<Regex, ApiError> {
    regex::RegexBuilder::new(re)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            ApiError::bad(
                param,
                format!("the regular expression does not compile: {e}"),
            )
        })
}

/// A capture's fields by the names of pywb's CDXJ (and tidemark's own), as strings.
pub(crate) struct Fields {
    /// The capture.
    pub row: CaptureRow,
    /// Its doc's cluster.
    pub cluster: Option<u64>,
}

impl Fields {
    pub(crate) fn new(row: CaptureRow, clusters: &mut ClusterIds) -> Result<Fields, ApiError> {
        let cluster = row.info.doc.map(|d| clusters.of(d)).transpose()?;
        Ok(Fields { row, cluster })
    }

    /// The media type as pywb and IA's CDX write it: a revisit's is `warc/revisit` (pywb
    /// then looks up the original by digest), an unknown one `unk`.
    pub(crate) fn mime(&self) -> Option<String> {
        Some(crate::export::cdx_mime(&self.row.info))
    }

    /// One field as a string (None when the capture has no value for it).
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        let c = &self.row.info;
        match name {
            "urlkey" => Some(self.row.surt.clone()),
            "timestamp" => Some(self.row.timestamp.clone()),
            "url" | "original" => Some(c.url.clone()),
            "mime" | "mimetype" => self.mime(),
            "status" | "statuscode" => crate::export::cdx_status(c),
            "digest" => c.digest.as_deref().and_then(crate::export::cdx_digest),
            "length" => Some(c.length.to_string()),
            "offset" => Some(c.offset.to_string()),
            "filename" => Some(c.file.clone()),
            "redirect" => c.redirect.clone(),
            "doc" => c.doc.map(|d| d.to_string()),
            "cluster" => self.cluster.map(|d| d.to_string()),
            "resemblance_to_previous" => c.r_prev.map(|r| format!("{:.3}", r)),
            "content_resemblance_to_previous" => c.cr_prev.map(|r| format!("{:.3}", r)),
            "type" => Some(c.kind.to_string()),
            _ => None,
        }
    }

    /// The CDXJ object: export's fields, a revisit's media type as pywb expects it, and
    /// the resemblance to the previous capture.
    pub(crate) fn object(&self) -> Map<String, Value> {
        let mut m = capture_fields(&self.row.info, self.cluster);
        if let Some(mime) = self.mime() {
            m.insert("mime".into(), json!(mime));
        }
        if let Some(r) = self.row.info.r_prev {
            m.insert(
                "resemblance_to_previous".into(),
                json!(crate::query::round3(r as f64)),
            );
        }
        if let Some(r) = self.row.info.cr_prev {
            m.insert(
                "content_resemblance_to_previous".into(),
                json!(crate::query::round3(r as f64)),
            );
        }
        m
    }
}

/// Field names of `fl`/`fields`, checked.
pub(crate) fn field_list(
    params: &Params,
    default: &[&str],
    known: &[&str],
) -> Result<Vec<String>, ApiError> {
    let spec = params
        .get("fl")
        .or_else(|| params.get("fields"))
        .unwrap_or("");
    if spec.trim().is_empty() {
        return Ok(default.iter().map(|s| s.to_string()).collect());
    }
    let mut out = Vec::new();
    for f in spec.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        if !known.contains(&f) {
            return Err(ApiError::bad(
                "fl",
                format!("unknown field {f:?}; known: {}", known.join(", ")),
            ));
        }
        out.push(f.to_string());
    }
    Ok(out)
}

/// Fields of pywb's CDXJ and tidemark's own; the first nine are `output=text`'s default.
#[rustfmt::skip]
pub(crate) const PYWB_FIELDS: &[&str] = &[
    "urlkey", "timestamp", "url", "mime", "status", "digest", "length", "offset", "filename",
    "redirect", "doc", "cluster", "resemblance_to_previous", "type",
    "content_resemblance_to_previous",
];
pub(crate) const TEXT_DEFAULT: &[&str] = PYWB_FIELDS.split_at(9).0;

/// Which captures, in which order.
#[derive(Debug, Clone)]
pub(crate) enum Selection {
    /// A key range, forward or reversed.
    Range { range: CaptureRange, reverse: bool },
    /// One URL's captures nearest a timestamp first.
    Closest { url: String, closest: String },
    /// The captures of a key range, in key order, to be sorted nearest a timestamp
    /// first by the caller (pywb's `closest` on a prefix, host or domain).
    ClosestRange {
        range: CaptureRange,
        closest: String,
    },
}

impl Selection {
    /// Whether a key range is read backwards; None for captures nearest a time.
    pub(crate) fn reverse(&self) -> Option<bool> {
        match self {
            Selection::Range { reverse, .. } => Some(*reverse),
            Selection::Closest { .. } | Selection::ClosestRange { .. } => None,
        }
    }

    /// For captures of a key range nearest a time: the time, in seconds.
    pub(crate) fn closest_range(&self) -> Option<i64> {
        match self {
            Selection::ClosestRange { closest, .. } => Some(seconds(closest)),
            _ => None,
        }
    }

    /// Calls `each` with every selected capture until it returns false.
    pub(crate) fn scan(
        &self,
        served: &Request,
        mut each: impl FnMut(&[u8], CaptureRow) -> Result<bool, ApiError>,
    ) -> Result<(), ApiError> {
        let mut failure = None;
        match self {
            Selection::Range { range, .. } | Selection::ClosestRange { range, closest: _ } => {
                let reverse = matches!(self, Selection::Range { reverse: true, .. });
                range.scan(
                    served.index(),
                    &served.reader,
                    reverse,
                    |k, row| match each(k, row) {
                        Ok(go) => Ok(go),
                        Err(e) => {
                            failure = Some(e);
                            Ok(false)
                        }
                    },
                )?;
            }
            Selection::Closest { url, closest: ts } => {
                closest_each(served.index(), &served.reader, url, ts, |row| {
                    match each(&[], row) {
                        Ok(go) => Ok(go),
                        Err(e) => {
                            failure = Some(e);
                            Ok(false)
                        }
                    }
                })?;
            }
        }
        failure.map_or(Ok(()), Err)
    }
}

/// The URL (or `urlkey`), match type, time range and order of a CDX request.
///
/// `pywb`: read `closest` and `reverse` as pywb's CDX server does: a `closest` sorts
/// by nearness without `sort=closest` and is padded up (`2014` is the end of 2014,
/// `timestamp_to_sec`), and `reverse=1` (or `true`) is `sort=reverse`.
pub(crate) fn selection(
    params: &Params,
    max_url: usize,
    plain: bool,
    pywb: bool,
) -> Result<Selection, ApiError> {
    let fix = |e: ApiError| if plain { e.plain() } else { e };
    let url = params.url("url", max_url).map_err(fix)?;
    let key = params.url("urlkey", max_url).map_err(fix)?;
    let from = params.timestamp("from", false).map_err(fix)?;
    let to = params.timestamp("to", true).map_err(fix)?;
    let truthy =
        |v: &str| !["", "0", "false", "f", "off"].contains(&v.to_ascii_lowercase().as_str());
    let sort = match params.get("sort").unwrap_or("") {
        // pywb: closest wins over reverse.
        "" | "default" if pywb && params.get("closest").is_some_and(|c| !c.is_empty()) => "closest",
        "" | "default" if pywb && params.get("reverse").is_some_and(truthy) => "reverse",
        s => s,
    };
    let (target, mt) = match (&url, &key) {
        (Some(u), _) => {
            crate::url::check_key(u.trim_start_matches("*.").trim_end_matches('*'))
                .map_err(|e| fix(ApiError::bad("url", e)))?;
            params.match_type(u).map_err(fix)?
        }
        (None, Some(k)) => params.match_type(k).map_err(fix)?,
        (None, None) => {
            return Err(fix(ApiError::bad(
                "url",
                "missing: give url=URL (or urlkey=SURT)".into(),
            )))
        }
    };
    let capture_range = || {
        if url.is_some() {
            CaptureRange::new(&target, mt, from.clone(), to.clone())
        } else {
            CaptureRange::of_key(&target, mt, from.clone(), to.clone())
        }
    };
    let range = |reverse| Selection::Range {
        range: capture_range(),
        reverse,
    };
    match sort {
        "" | "default" => Ok(range(false)),
        "reverse" => Ok(range(true)),
        "closest" => {
            if (mt != MatchType::Exact || url.is_none()) && !pywb {
                return Err(fix(ApiError::bad(
                    "sort",
                    "closest works on one URL: give url= with matchType=exact".into(),
                )));
            }
            let closest = match params.get("closest") {
                // pywb sends an empty closest= when a replay names no date: the newest.
                None | Some("") => "99991231235959".to_string(),
                Some(t) => Timestamp14::from_prefix(t, pywb)
                    .map(String::from)
                    .ok_or_else(|| {
                        fix(ApiError::bad(
                            "closest",
                            format!("{t:?} is not a timestamp: expected 1 to 14 digits"),
                        ))
                    })?,
            };
            if mt != MatchType::Exact || url.is_none() {
                // pywb's remote index sends `sort=closest&closest=` for an undated
                // lookup: on a range its server then sorts nothing.
                if params.get("closest").is_none_or(str::is_empty) {
                    return Ok(range(false));
                }
                return Ok(Selection::ClosestRange {
                    range: capture_range(),
                    closest,
                });
            }
            Ok(Selection::Closest {
                url: target,
                closest,
            })
        }
        other => Err(fix(ApiError::bad(
            "sort",
            format!("{other:?} is unknown: expected reverse or closest"),
        ))),
    }
}

/// Checks the collection of the path.
pub(crate) fn check_collection(state: &AppState, coll: &str, plain: bool) -> Result<(), ApiError> {
    if coll == state.config.serve.collection {
        return Ok(());
    }
    let e = ApiError::not_found(
        "collection",
        format!(
            "unknown collection {coll:?}: this server serves {:?}",
            state.config.serve.collection
        ),
    );
    Err(if plain { e.plain() } else { e })
}

/// The address absolute links start with: `serve.public_url` when set (behind a TLS
/// proxy, or to not let the client choose it), else `http://` and the request's `Host`.
pub(crate) fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    let public = state.config.serve.public_url.trim_end_matches('/');
    if !public.is_empty() {
        return public.to_string();
    }
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// Query parameters parsed into `T`; a bad one is a JSON 400 naming it.
pub(crate) struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let q = parts.uri.query().unwrap_or("");
        serde_urlencoded_like(q).map(ApiQuery)
    }
}

fn serde_urlencoded_like<T: DeserializeOwned>(q: &str) -> Result<T, ApiError> {
    axum::extract::Query::<T>::try_from_uri(
        &format!("/?{q}")
            .parse()
            .map_err(|_| ApiError::bad("query", "the query string is not valid".into()))?,
    )
    .map(|axum::extract::Query(t)| t)
    .map_err(|e| {
        let text = e.body_text();
        // serde names the field between backticks: "missing field `url`".
        let param = text.split('`').nth(1).unwrap_or("query").to_string();
        ApiError::bad(
            &param,
            text.replace("Failed to deserialize query string: ", ""),
        )
    })
}

/// `from`, `to`, `host`
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ReportQuery {
    /// First sweep (label); default the first.
    from: Option<String>,
    /// Last sweep (label); default the last.
    to: Option<String>,
    /// Only the URLs of this host.
    host: Option<String>,
}

impl ReportQuery {
    /// The range and host of another query (`/api/changes`).
    pub(crate) fn new(from: Option<String>, to: Option<String>, host: Option<String>) -> Self {
        ReportQuery { from, to, host }
    }

    /// The report's options, the host checked.
    pub(crate) fn options(self, config: &crate::config::Config) -> Result<ReportOptions, ApiError> {
        if let Some(h) = &self.host {
            crate::url::check(h).map_err(|e| ApiError::bad("host", e))?;
        }
        Ok(ReportOptions::from_config(
            config, self.from, self.to, self.host,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pywb_filters_contain_match_exactly_or_by_regex_from_the_start_and_negate() {
        let f = |spec: &str, v: &str| Filter::pywb(spec).unwrap().passes(Some(v));
        assert!(f("mime:html", "text/html"));
        assert!(!f("!mime:html", "text/html"));
        assert!(f("=status:200", "200") && !f("=status:20", "200"));
        assert!(f("!=status:200", "404"));
        assert!(f("~url:https://", "https://a.org/") && !f("~url:a.org", "https://a.org/"));
        // A missing field is the empty value.
        assert!(Filter::pywb("!mime:html").unwrap().passes(None));
        for bad in ["mime", ":x", "!", "~url:(("] {
            let e = Filter::pywb(bad).unwrap_err();
            assert_eq!(e.parameter.as_deref(), Some("filter"), "{bad}");
        }
    }

    #[test]
    fn wayback_filters_match_the_whole_value() {
        let f = |spec: &str, v: &str| Filter::wayback(spec).unwrap().passes(Some(v));
        assert!(f("statuscode:2..", "200") && !f("statuscode:2.", "200"));
        assert!(f("!mimetype:warc/revisit", "text/html"));
        assert_eq!(
            Filter::wayback("statuscode:2..").unwrap().field(),
            "statuscode"
        );
    }

    #[test]
    fn field_lists_default_check_and_keep_their_order() {
        let p = |q: &str| Params::parse(Some(q.to_string()));
        let known = ["a", "b", "c"];
        assert_eq!(field_list(&p(""), &["a"], &known).unwrap(), ["a"]);
        assert_eq!(
            field_list(&p("fl=c,%20a"), &["a"], &known).unwrap(),
            ["c", "a"]
        );
        assert_eq!(field_list(&p("fields=b"), &["a"], &known).unwrap(), ["b"]);
        let e = field_list(&p("fl=a,z"), &["a"], &known).unwrap_err();
        assert!(e.message.contains("\"z\""), "{}", e.message);
    }

    #[test]
    fn params_keep_every_value_and_the_last_wins() {
        let p = Params::parse(Some("filter=a:1&url=x&filter=b:2&url=y&filter=".into()));
        assert_eq!(p.get("url"), Some("y"));
        assert_eq!(p.all("filter"), ["a:1", "b:2", ""]);
        assert_eq!(p.filters(2).unwrap(), ["a:1", "b:2"]);
        assert!(p.filters(1).is_err());
    }
}
