//! What the pages of a sweep say about a URL: the pages that link it, each with the
//! anchor windows of its links ([`crate::links`]), read from the `links` family.

use serde::Serialize;

use super::Searcher;
use crate::index::Result;
use crate::links::OutLink;
use crate::url::surt;

/// Linking pages listed at most (a page every page of a site links has as many).
pub const MAX_SOURCES: usize = 1000;

/// One anchor window.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Window {
    /// The words before the anchor.
    pub before: String,
    /// The anchor text.
    pub anchor: String,
    /// The words after it.
    pub after: String,
}

/// A page that links the URL.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Source {
    /// SURT of the linking page.
    pub source: String,
    /// Its links' windows, in page order.
    pub windows: Vec<Window>,
}

/// The answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Inbound {
    /// The URL asked about.
    pub url: String,
    /// Its SURT.
    pub surt: String,
    /// The sweep read.
    pub sweep: String,
    /// How many pages link it in that sweep.
    pub linking_pages: usize,
    /// The pages that link it in that sweep, by SURT (the first [`MAX_SOURCES`]).
    pub sources: Vec<Source>,
}

/// The pages that link `url` in the sweep labelled `sweep` (default: the newest), with
/// their anchor windows. Under access rules a linking page the reader may not see in
/// that sweep is not told of, and a URL it may not see there is not found.
pub fn inbound(s: &Searcher, url: &str, sweep: Option<&str>) -> Result<Inbound> {
    let (id, label) = s.sweep_by_label(sweep)?;
    let key = surt(url);
    let none =
        || crate::index::IndexError::NotFound(format!("no page of sweep {label} links {url}"));
    // A URL the reader may not see in that sweep: as if no page linked it.
    if !s.sees_in_sweep(&key, id)? {
        return Err(none());
    }
    let mut sources = Vec::new();
    for (source, windows) in s.index.links().inbound(id, &key)? {
        if !s.sees_in_sweep(&source, id)? {
            continue;
        }
        sources.push(Source {
            source,
            windows: windows
                .iter()
                .map(|w| {
                    let (before, anchor, after) = OutLink::parts(w);
                    Window {
                        before: before.into(),
                        anchor: anchor.into(),
                        after: after.into(),
                    }
                })
                .collect(),
        });
    }
    if sources.is_empty() {
        return Err(none());
    }
    let total = sources.len();
    sources.truncate(MAX_SOURCES);
    Ok(Inbound {
        url: url.to_string(),
        surt: key,
        sweep: label,
        linking_pages: total,
        sources,
    })
}
