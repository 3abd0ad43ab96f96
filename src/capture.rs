//! From a record to a capture: the HTTP status and headers, the payload digest, the
//! canonical text, its fingerprint and its sketch. This is the per-record work that runs
//! on every core; everything here is a pure function of the record and the parameters.

use crate::index::columns::links;
use crate::read::RecordKind;
use sha1::{Digest, Sha1};

use crate::canon::{self, Canon, MediaKind};
use crate::read::{http, Record};
use crate::sketch::{self, Sketch, SketchParams};
use crate::timestamp::Timestamp14;

/// What the index and `inspect` need of one record.
#[derive(Debug, Clone)]
pub struct Capture {
    /// Record type.
    pub kind: RecordKind,
    /// Target URL.
    pub url: Option<String>,
    /// 14-digit timestamp (`20261101120000`), from WARC-Date or the ARC date.
    pub timestamp: Option<String>,
    /// HTTP status, when the block is an HTTP response.
    pub status: Option<u16>,
    /// Media type of the payload, lower-case without parameters.
    pub mime: Option<String>,
    /// `Location` of a 3xx response.
    pub redirect: Option<String>,
    /// Payload digest, `sha1:BASE32` (from WARC-Payload-Digest, or computed).
    pub payload_digest: Option<String>,
    /// For a revisit: the URL and date of the capture it repeats.
    pub refers_to: Option<(Option<String>, Option<String>)>,
    /// How the payload was canonicalized (`Other` when it was not).
    pub media: MediaKind,
    /// Number of canonical tokens.
    pub tokens: u32,
    /// 128-bit fingerprint of the canonical text (None when not sketched).
    pub text_fingerprint: Option<u128>,
    /// The sketch (None when not sketched).
    pub sketch: Option<Sketch>,
    /// `<title>`.
    pub title: Option<String>,
    /// Byte length of the decoded payload.
    pub payload_len: u64,
    /// The block or payload was cut at the record cap: sketched on its first part.
    pub truncated: bool,
    /// Things that could not be undone (bad chunking, unknown content coding).
    pub warnings: Vec<String>,
    /// The page's outgoing links with their anchor windows (HTML pages, when
    /// [`Scratch::anchor_window`] is set), encoded as the `links` family keeps them
    /// ([`crate::index::columns::links::encode_page_links`]; empty: none): on the worker, not the
    /// committing thread.
    pub links: Vec<u8>,
    /// The sweep that keeps `links` already: this page, the same URL and bytes, was in the
    /// sweep before (`links` are then what that sweep keeps, read, not made again).
    pub links_kept_in: Option<u32>,
    /// The doc the index held for the payload digest when a worker read the record
    /// (the record was then not canonicalized or sketched). Digests are never removed
    /// nor remapped, so the commit takes it as read, not with a lookup of its own.
    pub payload_doc: Option<u64>,
}

/// Reusable buffers for [`analyze`], one per worker.
#[derive(Default)]
pub struct Scratch {
    canon: Canon,
    shingles: Vec<u64>,
    /// Tokens either side of an anchor kept with each outgoing link (`links.window`);
    /// 0: links are not read.
    pub anchor_window: usize,
}

impl Scratch {
    /// The canonical form of the last record analyzed.
    pub fn canon(&self) -> &Canon {
        &self.canon
    }

    /// The shingles of the last record sketched (sorted, distinct: the whole set its
    /// sketch samples).
    pub fn shingles(&self) -> &[u64] {
        &self.shingles
    }
}

impl Capture {
    /// What a record says without analysis of its block: kind, URL, date, digest.
    pub fn basic(rec: &Record) -> Capture {
        let (timestamp, warning) = capture_date(rec);
        Capture {
            kind: rec.kind.clone(),
            url: rec.target_uri(),
            timestamp: timestamp.map(String::from),
            status: None,
            mime: None,
            redirect: None,
            payload_digest: rec
                .field_str("WARC-Payload-Digest")
                .map(|d| normalize_digest(&d)),
            refers_to: None,
            media: MediaKind::Other,
            tokens: 0,
            text_fingerprint: None,
            sketch: None,
            title: None,
            payload_len: rec.block.len() as u64,
            truncated: rec.over_cap,
            warnings: warning.into_iter().collect(),
            links: Vec::new(),
            links_kept_in: None,
            payload_doc: None,
        }
    }
}

/// How the warning of a capture without a date ends.
pub const NO_DATE: &str = "nor an HTTP or warcinfo date";

/// A record's date: its `WARC-Date` (or ARC date); when that cannot be read, the HTTP
/// `Date` of its response, else the date of the file's `warcinfo` record (or ARC
/// header); else none (the record is then counted as bad, not given invented digits).
/// The warning says which was used, and why.
fn capture_date(rec: &Record) -> (Option<Timestamp14>, Option<String>) {
    let written = rec.field_str("WARC-Date");
    if let Some(t) = written.as_deref().and_then(Timestamp14::from_warc_date) {
        return (Some(t), None);
    }
    let what = match &written {
        Some(d) => format!("its date {d:?} is not a date"),
        None => "it has no date".to_string(),
    };
    let http = http::head_field(&rec.block, "Date");
    if let Some(t) = http.as_deref().and_then(Timestamp14::from_http_date) {
        let warning = format!(
            "record at offset {}: {what}; its HTTP Date used",
            rec.offset
        );
        return (Some(t), Some(warning));
    }
    if let Some(t) = rec
        .file_date
        .as_deref()
        .and_then(Timestamp14::from_warc_date)
    {
        let warning = format!(
            "record at offset {}: {what}; its file's date (its warcinfo record's, or ARC header's) used",
            rec.offset
        );
        return (Some(t), Some(warning));
    }
    (
        None,
        Some(format!(
            "record at offset {}: {what}, {NO_DATE}",
            rec.offset
        )),
    )
}

/// What a worker may ask of the index before it reads a record's content.
#[derive(Clone, Copy)]
pub struct Known<'a> {
    /// The doc of a payload digest indexed already (its record need not be sketched).
    pub doc: &'a (dyn Fn(&str) -> Option<u64> + Sync),
    /// The links the sweep before kept for a page (by SURT) when they were read from
    /// the same URL and bytes (their origin, [`crate::index::columns::links::origin`]):
    /// the sweep whose value holds them, and that value.
    pub links: &'a (dyn Fn(&str, u64) -> Option<(u32, Vec<u8>)> + Sync),
}

fn no_doc(_: &str) -> Option<u64> {
    None
}

fn no_links(_: &str, _: u64) -> Option<(u32, Vec<u8>)> {
    None
}

impl Known<'static> {
    /// Nothing known: every record read in full.
    pub const NOTHING: Known<'static> = Known {
        doc: &no_doc,
        links: &no_links,
    };
}

/// Analyzes one record. Records that are not captures get only their URL and date.
pub fn analyze(rec: &Record, params: &SketchParams, cap: usize, scratch: &mut Scratch) -> Capture {
    analyze_unless_known(rec, params, cap, scratch, &Known::NOTHING)
}

/// As [`analyze`], but a response whose `WARC-Payload-Digest` `known` recognizes is not
/// canonicalized or sketched: identical bytes have the content already indexed
/// (`payload_doc` is set; status, type and redirect are still read), and their links
/// are read again only when the sweep before did not keep them for the same URL.
pub fn analyze_unless_known(
    rec: &Record,
    params: &SketchParams,
    cap: usize,
    scratch: &mut Scratch,
    known: &Known<'_>,
) -> Capture {
    let mut cap_ = Capture::basic(rec);
    if !rec.is_capture() {
        return cap_;
    }
    if rec.kind == RecordKind::Revisit {
        cap_.refers_to = Some((
            rec.field_str("WARC-Refers-To-Target-URI"),
            rec.field_str("WARC-Refers-To-Date"),
        ));
    }
    let declared_type = rec
        .field_str("Content-Type")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let is_http = declared_type.starts_with("application/http")
        || (rec.version.starts_with("ARC") && http::is_http_response(&rec.block))
        || (declared_type.is_empty() && http::is_http_response(&rec.block));
    let (payload, mime, charset): (std::borrow::Cow<[u8]>, Option<String>, Option<String>) =
        if is_http {
            match http::parse_response(&rec.block, cap) {
                Some(resp) => {
                    cap_.status = Some(resp.status);
                    if (300..400).contains(&resp.status) {
                        cap_.redirect = resp.header("Location").map(str::to_string);
                    }
                    cap_.truncated |= resp.over_cap;
                    cap_.warnings.extend(resp.warnings.iter().cloned());
                    let mime = resp.mime();
                    let charset = resp.charset();
                    (std::borrow::Cow::Owned(resp.payload), mime, charset)
                }
                None => (std::borrow::Cow::Borrowed(&rec.block[..]), None, None),
            }
        } else {
            let mime = Some(http::media_type(&declared_type)).filter(|m| !m.is_empty());
            (
                std::borrow::Cow::Borrowed(&rec.block[..]),
                mime,
                http::charset_param(&declared_type),
            )
        };
    // As pywb's indexer (warcio) reads a record that is not a response or revisit of
    // an http(s) URL (`dns:`, `urn:`, `metadata://`, a resource): no HTTP message, so
    // its media type is the record's own and a response's status is 200. Its content
    // is still read as found.
    let http_url =
        (cap_.url.as_deref()).is_some_and(|u| u.starts_with("http:") || u.starts_with("https:"));
    let http_url = http_url && matches!(rec.kind, RecordKind::Response | RecordKind::Revisit);
    // A response of an http(s) URL whose block is a blank line (an ARC record of length
    // 1): warcio reads no headers and an empty payload, with the status 200.
    let blank = http_url && rec.block.iter().all(u8::is_ascii_whitespace);
    let payload = if blank {
        std::borrow::Cow::Borrowed(&rec.block[..0])
    } else {
        payload
    };
    let content_mime = mime.clone();
    if !http_url || blank {
        cap_.status = (rec.kind == RecordKind::Response).then_some(200);
        cap_.redirect = None;
    }
    // An ARC record's media type is its header line's, as pywb's indexer reads it
    // (`html` where the HTTP header says `text/html`: the crawler wrote it so).
    let arc = rec.version.starts_with("ARC");
    let mime = if http_url && !blank && !arc {
        mime
    } else {
        Some(http::media_type(&declared_type)).filter(|m| !m.is_empty())
    };
    cap_.payload_len = payload.len() as u64;
    if rec.kind != RecordKind::Revisit {
        if let Some(d) = &cap_.payload_digest {
            cap_.payload_doc = (known.doc)(d);
        }
    }
    if cap_.payload_digest.is_none() && rec.kind != RecordKind::Revisit {
        cap_.payload_digest = Some(sha1_base32(&payload));
    }
    // A revisit's block holds headers only: its content is the record it refers to.
    if rec.kind == RecordKind::Revisit {
        cap_.mime = mime;
        return cap_;
    }
    if cap_.payload_doc.is_some() && !cap_.truncated {
        // Known content: only its links are read (they are this sweep's evidence), unless
        // the sweep before kept them for the same URL, charset and bytes.
        if scratch.anchor_window > 0
            && canon::media_kind(content_mime.as_deref(), &payload) == MediaKind::Html
        {
            let kept = cap_.url.as_deref().and_then(|u| {
                let origin = links::origin(u, charset.as_deref(), &payload);
                (known.links)(&crate::url::surt(u), origin)
            });
            if let Some((sweep, bytes)) = kept {
                cap_.links = bytes;
                cap_.links_kept_in = Some(sweep);
                cap_.mime = mime;
                return cap_;
            }
            canon::canonicalize(
                &payload,
                MediaKind::Html,
                charset.as_deref(),
                &mut scratch.canon,
            );
            read_links(&mut cap_, scratch, charset.as_deref(), &payload);
        }
        cap_.mime = mime;
        return cap_;
    }
    cap_.media = canon::media_kind(content_mime.as_deref(), &payload);
    cap_.mime = mime;
    if cap_.media == MediaKind::Other {
        return cap_;
    }
    canon::canonicalize(&payload, cap_.media, charset.as_deref(), &mut scratch.canon);
    if scratch.anchor_window > 0 && cap_.media == MediaKind::Html {
        read_links(&mut cap_, scratch, charset.as_deref(), &payload);
    }
    cap_.tokens = scratch.canon.tokens;
    cap_.title = scratch.canon.title.clone();
    cap_.text_fingerprint = Some(sketch::text_fingerprint(&scratch.canon.text, params.seed));
    let sk = Sketch::of_tokens(scratch.canon.token_iter(), params, &mut scratch.shingles);
    cap_.sketch = Some(sk);
    cap_
}

/// The links of the page just canonicalized into `scratch` (from `payload`, decoded
/// with the header's `charset`).
fn read_links(cap: &mut Capture, scratch: &Scratch, charset: Option<&str>, payload: &[u8]) {
    if let Some(url) = &cap.url {
        let out = crate::links::out_links(&scratch.canon, url, scratch.anchor_window);
        if !out.is_empty() {
            cap.links = links::encode_page_links(&out, links::origin(url, charset, payload));
        }
    }
}

/// `sha1:BASE32` of bytes.
pub fn sha1_base32(bytes: &[u8]) -> String {
    let d = Sha1::digest(bytes);
    format!("sha1:{}", data_encoding::BASE32.encode(&d))
}

/// Digests as written vary (`sha1:…`, `SHA1:…`, hex): upper-case the label's value for
/// base32, keep others.
pub fn normalize_digest(d: &str) -> String {
    match d.split_once(':') {
        Some((alg, v)) => format!("{}:{}", alg.to_ascii_lowercase(), v.trim()),
        None => d.trim().to_string(),
    }
}
