//! Lost and found: a moved page's newest URL.
//!
//! From the URL's own captures: a latest capture that is a 3xx is followed (redirect
//! evidence, loops detected); a latest capture with content, still captured by the
//! latest sweep of its host, is where the page is (`alive`). When the URL went away (an
//! error status, or later sweeps of its host no longer capture it) the page's last
//! content is looked up on the fly (the docs sharing its content posting values, those
//! outside its host's template) and every URL that first appears after it and carries a
//! doc resembling it by content at or above the move floor is a candidate successor:
//! content resemblance leaves both pages' templates out, so a redesign that changed
//! every page's chrome neither hides a move nor does a shared template fake one. The
//! best by content resemblance (then the earliest) wins, and the search goes on from
//! there, since a page may move more than once. The move floor sits below
//! the clustering threshold because pages are often edited as they move.

use std::collections::HashSet;

use serde::Serialize;

use super::{content_posting, resemblances, round3, CaptureRow, Searcher};
use crate::compact::CompactSketch;
use crate::index::candidates;
use crate::index::columns::links::AnchorSpread;
use crate::index::Result;
use crate::links::OutLink;
use crate::timestamp::Timestamp14;

/// What became of a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The URL's own latest capture is its newest place.
    Alive,
    /// A newer URL carries its content.
    Moved,
    /// It ends in an error or stopped being captured, and no newer URL carries its content.
    Gone,
    /// Never captured.
    Unknown,
}

/// One step of evidence.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Evidence {
    /// `redirect`, `content`, `links` or `same-url`.
    pub kind: &'static str,
    /// The URL this step leads to.
    pub url: String,
    /// Date of the capture that shows it.
    pub date: String,
    /// Estimated resemblance on all shingles (content steps).
    pub resemblance: Option<f64>,
    /// Estimated resemblance without both pages' templates (content steps): what the
    /// step was chosen on.
    pub content_resemblance: Option<f64>,
    /// The pages that linked the old URL and now link this one (links steps).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linking_pages: Vec<String>,
}

/// A successor that lost to the one chosen.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Alternative {
    /// Candidate URL.
    pub url: String,
    /// Its first capture carrying the content.
    pub date: String,
    /// Estimated resemblance to the content that left, on all shingles.
    pub resemblance: f64,
    /// The same without both pages' templates (what candidates are ranked on).
    pub content_resemblance: f64,
}

/// The answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WhereIs {
    /// The URL asked about.
    pub url: String,
    /// What became of it.
    pub status: Status,
    /// Where its content is now (for `gone`: the last URL that carried it).
    pub newest_url: Option<String>,
    /// Latest capture of `newest_url`.
    pub newest_date: Option<String>,
    /// The steps from the URL to `newest_url`.
    pub evidence: Vec<Evidence>,
    /// Runners-up of the content steps.
    pub alternatives: Vec<Alternative>,
    /// How sure the content steps are: the chosen successor's content resemblance minus
    /// its runner-up's (or the move floor's, with no runner-up); the smallest over the steps.
    /// Absent when no content step was needed.
    pub margin: Option<f64>,
}

/// Options of [`whereis`].
#[derive(Debug, Clone, Copy)]
pub struct WhereisOptions {
    /// Least resemblance for a content move.
    pub move_floor: f64,
    /// Where the content leads nowhere, follow the links to the URL (two scans of a
    /// sweep's links a step: the change list, which asks for every gone page of a page
    /// of rows, goes without).
    pub links: bool,
}

/// Hops followed at most (redirects and moves together).
const MAX_HOPS: usize = 32;

/// Where the page at `url` is now.
pub fn whereis(s: &Searcher, url: &str, opts: WhereisOptions) -> Result<WhereIs> {
    let mut out = WhereIs {
        url: url.to_string(),
        status: Status::Unknown,
        newest_url: None,
        newest_date: None,
        evidence: Vec::new(),
        alternatives: Vec::new(),
        margin: None,
    };
    let mut visited: HashSet<String> = HashSet::new();
    let mut cur_url = url.to_string();
    let mut cur_caps = s.captures(url)?;
    if cur_caps.is_empty() {
        return Ok(out);
    }
    for _ in 0..MAX_HOPS {
        let key = cur_caps[0].surt.clone();
        if !visited.insert(key.clone()) {
            // A loop of redirects or moves: the page is where the loop was entered.
            break;
        }
        let last = cur_caps.last().expect("non-empty").clone();
        let last_content = cur_caps
            .iter()
            .rev()
            .find(|c| c.info.doc.is_some())
            .cloned();
        out.newest_url = Some(last.info.url.clone());
        out.newest_date = Some(Timestamp14::iso_of(&last.timestamp));
        if let Some(target) = last.redirect() {
            out.evidence.push(Evidence {
                kind: "redirect",
                url: target.to_string(),
                date: Timestamp14::iso_of(&last.timestamp),
                resemblance: None,
                content_resemblance: None,
                linking_pages: Vec::new(),
            });
            let next = s.captures(target)?;
            if next.is_empty() {
                // Redirected to a URL never captured: that is still its newest place.
                out.status = Status::Moved;
                out.newest_url = Some(target.to_string());
                return Ok(out);
            }
            cur_url = target.to_string();
            cur_caps = next;
            continue;
        }
        let vanished = vanished(s, &key, &last)?;
        if last.ok() && !vanished {
            out.status = if out.evidence.is_empty() {
                Status::Alive
            } else {
                out.evidence.push(Evidence {
                    kind: "same-url",
                    url: cur_url.clone(),
                    date: Timestamp14::iso_of(&last.timestamp),
                    resemblance: None,
                    content_resemblance: None,
                    linking_pages: Vec::new(),
                });
                Status::Moved
            };
            return Ok(out);
        }
        // The URL went away: where did its last content go?
        let Some(content) = last_content else {
            break;
        };
        match successor(s, &content, &visited, opts)? {
            Some((best, alts)) => {
                let runner_up = alts
                    .first()
                    .map_or(opts.move_floor, |a| a.content_resemblance);
                let margin = best.content_resemblance - runner_up;
                out.margin = Some(round3(out.margin.map_or(margin, |m: f64| m.min(margin))));
                out.evidence.push(Evidence {
                    kind: "content",
                    url: best.url.clone(),
                    date: best.date.clone(),
                    resemblance: Some(round3(best.resemblance)),
                    content_resemblance: Some(round3(best.content_resemblance)),
                    linking_pages: Vec::new(),
                });
                out.alternatives.extend(alts.into_iter().map(|mut a| {
                    a.resemblance = round3(a.resemblance);
                    a.content_resemblance = round3(a.content_resemblance);
                    a
                }));
                cur_caps = s.captures(&best.url)?;
                cur_url = best.url;
                if cur_caps.is_empty() {
                    break;
                }
            }
            // The content went nowhere: the pages that linked the URL may say where
            // it went (a page renamed and rewritten).
            None => {
                let followed = match opts.links {
                    true => follow_links(s, &content, &visited)?,
                    false => None,
                };
                if let Some((to, date, pages)) = followed {
                    out.evidence.push(Evidence {
                        kind: "links",
                        url: to.clone(),
                        date,
                        resemblance: None,
                        content_resemblance: None,
                        linking_pages: pages,
                    });
                    cur_caps = s.captures(&to)?;
                    cur_url = to;
                    if cur_caps.is_empty() {
                        break;
                    }
                    continue;
                }
                // Nowhere: the last URL that carried it, and when.
                out.newest_url = Some(content.info.url.clone());
                out.newest_date = Some(Timestamp14::iso_of(&content.timestamp));
                break;
            }
        }
    }
    out.status = Status::Gone;
    Ok(out)
}

/// Later sweeps of the URL's host captured other URLs (that the reader may see) but not
/// this one.
fn vanished(s: &Searcher, key: &str, last: &CaptureRow) -> Result<bool> {
    s.host_captured_after(key, last.info.sweep)
}

/// Where the pages that linked `content`'s URL in its last sweep point in the next
/// sweep of its host ([`links_successor`]), when that is a URL first captured after it,
/// with content: the URL, the date of its first such capture and the linking pages.
fn follow_links(
    s: &Searcher,
    content: &CaptureRow,
    visited: &HashSet<String>,
) -> Result<Option<(String, String, Vec<String>)>> {
    let (old, was) = (&content.surt, content.info.sweep);
    let host = crate::url::host_of_surt(old);
    let Some(next) = (s.index.host_sweeps().of_host(host)?.into_iter())
        .filter(|i| *i > was)
        .min()
    else {
        return Ok(None);
    };
    let inbound = s.index.links().inbound(was, old)?;
    let spread = s
        .index
        .links()
        .anchor_spread(was, &anchors_of(&[&inbound]))?;
    let Some((to, pages)) = links_successor(s, old, (was, next), inbound, &spread)? else {
        return Ok(None);
    };
    if visited.contains(&to) {
        return Ok(None);
    }
    let caps = s.captures_of_surt(&to)?;
    let Some(first) = caps.iter().find(|c| c.ok() && c.info.doc.is_some()) else {
        return Ok(None);
    };
    if caps[0].info.sweep <= was {
        return Ok(None);
    }
    Ok(Some((
        first.info.url.clone(),
        Timestamp14::iso_of(&first.timestamp),
        pages,
    )))
}

/// The anchor texts of the windows of `inbound` lists.
pub(crate) fn anchors_of(inbound: &[&crate::index::columns::links::Inbound]) -> HashSet<String> {
    (inbound.iter())
        .flat_map(|i| i.iter())
        .flat_map(|(_, windows)| windows.iter())
        .map(|w| OutLink::parts(w).1.to_string())
        .filter(|a| !a.is_empty())
        .collect()
}

/// Linking pages a links step reads at most (the first by SURT): each costs two reads.
const MAX_LINKING_PAGES: usize = 64;

/// The SURT that the pages linking `old` in sweep `was` (`inbound`) link instead in
/// sweep `next`: a URL of the same host that they did not link before, linked with the
/// same anchor text, by more than half of those pages that sweep `next` still has (a
/// page that still links `old` votes for nothing). With the pages that say so. A page
/// renamed and rewritten keeps what others say of it.
pub(crate) fn links_successor(
    s: &Searcher,
    old: &str,
    (was, next): (u32, u32),
    inbound: crate::index::columns::links::Inbound,
    spread: &AnchorSpread,
) -> Result<Option<(String, Vec<String>)>> {
    let host = crate::url::host_of_surt(old);
    let mut votes: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut still = 0usize;
    for (source, windows) in inbound.into_iter().take(MAX_LINKING_PAGES) {
        crate::index::budget::spend()?;
        // Only the links whose anchor text names this page: not "next" or "previous".
        let windows: Vec<&String> = (windows.iter())
            .filter(|w| spread.names_its_target(OutLink::parts(w).1))
            .collect();
        if windows.is_empty() {
            continue;
        }
        if !s.sees_in_sweep(&source, was)? || !s.sees_in_sweep(&source, next)? {
            continue;
        }
        let (Some(before), Some(after)) = (
            s.index.links().page(was, &source)?,
            s.index.links().page(next, &source)?,
        ) else {
            continue;
        };
        still += 1;
        if after.iter().any(|l| l.target == old) {
            continue;
        }
        for l in &after {
            if crate::url::host_of_surt(&l.target) != host
                || before
                    .binary_search_by(|b| b.target.as_str().cmp(&l.target))
                    .is_ok()
                || !l
                    .windows
                    .iter()
                    .any(|w| windows.iter().any(|o| same_link(o, w)))
            {
                continue;
            }
            votes
                .entry(l.target.clone())
                .or_default()
                .push(source.clone());
        }
    }
    // Most votes, then the first by SURT.
    let best = votes
        .into_iter()
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(&a.0)));
    Ok(best.filter(|(_, pages)| 2 * pages.len() > still))
}

/// Whether two anchor windows are one link: the same anchor text (windows of a list
/// or a table share most of their words with their neighbours' links).
fn same_link(a: &str, b: &str) -> bool {
    let (aa, ab) = (OutLink::parts(a).1, OutLink::parts(b).1);
    !aa.is_empty() && aa == ab
}

/// Candidate docs compared at most: those sharing the most content posting values.
const MAX_CANDIDATES: usize = 256;

/// The best URL that first appears after `content` left and carries a doc resembling it
/// by content (both pages' templates left out: a redesign neither hides a move nor does
/// a shared template fake one), found through the doc's content posting values.
fn successor(
    s: &Searcher,
    content: &CaptureRow,
    visited: &HashSet<String>,
    opts: WhereisOptions,
) -> Result<Option<(Alternative, Vec<Alternative>)>> {
    let doc = content.info.doc.expect("content capture");
    let Some(sketch) = s.sketch(doc)? else {
        return Ok(None);
    };
    let mine = CompactSketch::of(&sketch);
    let own = s.template(&content.surt, content.info.sweep)?;
    let posting = content_posting(s.index.posting_values(doc)?.unwrap_or_default(), &own);
    if posting.1.is_empty() {
        return Ok(None);
    }
    let cands = candidates::search(s.index, &s.fresh, &s.over_cap, &s.reader, posting)?;
    // The most sharing first (ties: lower doc), then the heads of over-cap lists.
    let mut shared = cands.shared.clone();
    shared.sort_unstable_by(|a, b| b.count.cmp(&a.count).then(a.doc.cmp(&b.doc)));
    let most: HashSet<u64> = shared.iter().take(MAX_CANDIDATES).map(|c| c.doc).collect();
    let docs: Vec<u64> = cands.to_compare(|c| most.contains(&c.doc));
    let mut found: Vec<(Alternative, u32)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for (m, theirs) in s.index.sketches().read_compact(&docs, None)? {
        for c in s.doc_captures(m)? {
            if visited.contains(&c.surt) || seen.contains(&c.surt) {
                continue;
            }
            // Only URLs that first appear after the content left its old one: a mirror
            // that was there all along is not where the page went.
            let first = s.captures_of_surt(&c.surt)?;
            let Some(f) = first.first() else { continue };
            if f.info.sweep <= content.info.sweep {
                continue;
            }
            let r = resemblances(&mine, &own, &theirs, &s.template(&c.surt, c.info.sweep)?);
            if r.content < opts.move_floor {
                continue;
            }
            seen.insert(c.surt.clone());
            found.push((
                Alternative {
                    url: c.info.url.clone(),
                    date: Timestamp14::iso_of(&c.timestamp),
                    resemblance: r.full,
                    content_resemblance: r.content,
                },
                c.info.sweep,
            ));
        }
    }
    // Best content resemblance; then the earliest to appear (the move, not a later
    // copy); then URL.
    found.sort_by(|(a, sa), (b, sb)| {
        b.content_resemblance
            .total_cmp(&a.content_resemblance)
            .then(sa.cmp(sb))
            .then(a.url.cmp(&b.url))
    });
    let mut it = found.into_iter().map(|(a, _)| a);
    Ok(it.next().map(|best| (best, it.take(4).collect())))
}
