//! A URL's history: every capture in date order, with the change from the previous one
//! and, when the page left, where its content went.

use serde::Serialize;

use super::whereis::{whereis, Status, WhereisOptions};
use super::{iso_date, round3, Searcher};
use crate::index::Result;

/// One capture and how it differs from the one before.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Version {
    /// Capture date.
    pub date: String,
    /// Sweep label.
    pub sweep: String,
    /// HTTP status (absent for records without one).
    pub status: Option<u16>,
    /// Doc id of the content (text captures).
    pub doc: Option<u64>,
    /// `new`, `identical`, `changed`, `redirect` or `gone`.
    pub change: &'static str,
    /// Estimated resemblance to the previous capture with content (`changed`, `identical`).
    pub resemblance_to_previous: Option<f64>,
    /// Target of a redirect.
    pub redirect_to: Option<String>,
    /// Where the content went, on the capture after which the URL stopped carrying it.
    pub moved_to: Option<String>,
}

/// The answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct History {
    /// The URL asked about.
    pub url: String,
    /// Its captures, oldest first (empty: never captured).
    pub captures: Vec<Version>,
}

/// Every capture of `url` in date order with its change.
pub fn history(s: &Searcher, url: &str, opts: WhereisOptions) -> Result<History> {
    let caps = s.captures(url)?;
    let mut out = Vec::with_capacity(caps.len());
    let mut prev_doc: Option<u64> = None;
    let mut prev_digest: Option<String> = None;
    let mut seen_content = false;
    for c in &caps {
        let i = &c.info;
        let (change, r) = if let Some(t) = c.redirect() {
            let _ = t;
            ("redirect", None)
        } else if !c.ok() {
            ("gone", None)
        } else if !seen_content {
            ("new", None)
        } else if let Some(d) = i.doc {
            if Some(d) == prev_doc {
                ("identical", Some(1.0))
            } else {
                ("changed", i.r_prev.map(|r| round3(r as f64)))
            }
        } else if i.digest.is_some() && i.digest == prev_digest {
            ("identical", None)
        } else {
            ("changed", None)
        };
        if c.ok() && c.redirect().is_none() {
            seen_content = true;
            if i.doc.is_some() {
                prev_doc = i.doc;
            }
            prev_digest = i.digest.clone();
        }
        out.push(Version {
            date: iso_date(&c.timestamp),
            sweep: s.sweep_label(i.sweep),
            status: i.status,
            doc: i.doc,
            change,
            resemblance_to_previous: r,
            redirect_to: c.redirect().map(str::to_string),
            moved_to: None,
        });
    }
    // Where it went: on the first capture after the last one with content, or on that
    // last one when the URL simply stopped being captured.
    if !caps.is_empty() {
        let w = whereis(s, url, opts)?;
        if w.status == Status::Moved {
            let last_ok = caps.iter().rposition(|c| c.ok() && c.redirect().is_none());
            let at = match last_ok {
                Some(k) if k + 1 < caps.len() => k + 1,
                Some(k) => k,
                None => 0,
            };
            out[at].moved_to = w.newest_url;
        }
    }
    Ok(History {
        url: url.to_string(),
        captures: out,
    })
}
