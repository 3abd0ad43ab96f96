//! A URL's history: every capture in date order, with the change from the previous one
//! and, when the page left, where its content went.

use serde::Serialize;

pub use super::diff::word_diff;
use super::diff::{source, Archive, Reader, Shown};
use super::whereis::{whereis, Status, WhereisOptions};
use super::{round3, Searcher};
use crate::access::Access;
use crate::index::texts::TextReader;
use crate::index::Result;
use crate::timestamp::Timestamp14;

/// One capture and how it differs from the one before.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Version {
    /// Capture date.
    pub date: String,
    /// The same as 14 digits, as in memento and CDX URLs.
    pub timestamp: String,
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
    /// The same with the templates of the URL's host in both sweeps left out
    /// ([`crate::template`]): how much the page's own content changed.
    pub content_resemblance_to_previous: Option<f64>,
    /// Target of a redirect.
    pub redirect_to: Option<String>,
    /// Where the content went, on the capture after which the URL stopped carrying it.
    pub moved_to: Option<String>,
    /// The evidence of each step to `moved_to`, in order: `redirect`, `content` or
    /// `links` (`whereis` gives the steps).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved_by: Vec<&'static str>,
    /// With `diff`: the word-level changes from the previous version with content, as
    /// `… context [-removed words-] {+added words+} context …` (git's plain word diff):
    /// of the stored canonical texts where the index keeps them (`index.store_texts`),
    /// else of the records' lines with the template's left out; or, in parentheses, why
    /// they cannot be shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// With `diff`: the lines and words removed and added, read from the WARC records,
    /// template lines folded away ([`super::diff`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Shown>,
}

/// The answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct History {
    /// The URL asked about.
    pub url: String,
    /// Its captures, oldest first (empty: never captured).
    pub captures: Vec<Version>,
}

/// Every capture of `url` in date order with its change; with `diff` (where its WARC
/// files are), what changed in each `changed` version, read from the records.
pub fn history(
    s: &Searcher,
    url: &str,
    opts: WhereisOptions,
    diff: Option<&Archive>,
) -> Result<History> {
    let texts = match diff {
        Some(_) if s.index.has_texts() => Some(TextReader::new(s.index)?),
        _ => None,
    };
    let mut reader = diff.map(|a| Reader::new(s.index, a, s.reader().clone()));
    let caps = s.captures(url)?;
    let mut out = Vec::with_capacity(caps.len());
    let mut prev_row: Option<&super::CaptureRow> = None;
    let mut prev_doc: Option<u64> = None;
    let mut prev_digest: Option<String> = None;
    let mut seen_content = false;
    for c in &caps {
        let i = &c.info;
        // A 3xx is a redirect whether or not its target may be named (access rules).
        let (change, r, cr) = if i.status.is_some_and(|st| (300..400).contains(&st)) {
            ("redirect", None, None)
        } else if !c.ok() {
            ("gone", None, None)
        } else if !seen_content {
            ("new", None, None)
        } else if let Some(d) = i.doc {
            if Some(d) == prev_doc {
                ("identical", Some(1.0), Some(1.0))
            } else {
                let r3 = |r: Option<f32>| r.map(|r| round3(r as f64));
                ("changed", r3(i.r_prev), r3(i.cr_prev))
            }
        } else if i.digest.is_some() && i.digest == prev_digest {
            ("identical", None, None)
        } else {
            ("changed", None, None)
        };
        let (mut words, mut changes) = (None, None);
        // A blocked capture's text is not shown (nor a revisit's blocked original's).
        let blocked = |row: &super::CaptureRow| {
            let who = s.reader();
            who.access_of(&row.surt, &row.timestamp) == Access::Block
                || source(s.index, who, row)
                    .is_ok_and(|o| who.access_of(&o.surt, &o.timestamp) == Access::Block)
        };
        let shown = (reader.as_ref(), change, prev_row, i.doc);
        if let (Some(_), "changed", Some(old), Some(_)) = shown {
            if blocked(old) || blocked(c) {
                words = Some("(a capture is blocked by the access rules)".to_string());
            }
        }
        if let (Some(reader), "changed", Some(old), Some(new), None) =
            (reader.as_mut(), change, prev_row, i.doc, &words)
        {
            match reader.shown(old, c) {
                Ok((shown, w)) => (words, changes) = (Some(w), Some(shown)),
                Err(why) => words = Some(format!("({why})")),
            }
            if let Some(e) = reader.budget_spent() {
                return Err(e);
            }
            // Where the index keeps texts (`index.store_texts`), the word diff is of
            // them, as before, whether or not the records can be read.
            if let (Some(t), Some(od)) = (&texts, old.info.doc) {
                if let (Some(a), Some(b)) = (t.text(s.index, od)?, t.text(s.index, new)?) {
                    words = Some(word_diff(&a, &b));
                }
            }
        }
        if c.ok() && c.redirect().is_none() {
            seen_content = true;
            if i.doc.is_some() {
                prev_doc = i.doc;
                prev_row = Some(c);
            }
            prev_digest = i.digest.clone();
        }
        out.push(Version {
            date: Timestamp14::iso_of(&c.timestamp),
            timestamp: c.timestamp.clone(),
            sweep: s.sweep_label(i.sweep),
            status: i.status,
            doc: i.doc,
            change,
            resemblance_to_previous: r,
            content_resemblance_to_previous: cr,
            redirect_to: c.redirect().map(str::to_string),
            moved_to: None,
            moved_by: Vec::new(),
            diff: words,
            changes,
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
            out[at].moved_by = (w.evidence.iter())
                .map(|e| e.kind)
                .filter(|k| *k != "same-url")
                .collect();
        }
    }
    Ok(History {
        url: url.to_string(),
        captures: out,
    })
}
