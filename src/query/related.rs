//! Related pages from what other pages say about them (Haveliwala, Gionis and Indyk,
//! *Scalable Techniques for Clustering the Web*, 2000): the URLs whose bags of inbound
//! anchor-window words ([`crate::links`], `anchor_bags`) resemble the asked URL's in
//! the same sweep, best first, each with the anchor words the two share; optionally
//! ranked with their content resemblance too.
//!
//! A sweep's bags are compared one by one with the asked one (a scan of the sweep's
//! bags, a few hundred bytes each): no postings, measured fast enough on documentation
//! sweeps of thousands of pages; see `docs/src/limitations.md`.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{resemblances, round3, Searcher};
use crate::compact::CompactSketch;
use crate::index::{IndexError, Result};
use crate::links::{bag_resemblance, OutLink};
use crate::url::surt;

/// Options of [`related`].
#[derive(Debug, Clone, Default)]
pub struct RelatedOptions {
    /// The sweep read (default: the newest).
    pub sweep: Option<String>,
    /// Pages listed at most.
    pub limit: usize,
    /// Rank by the mean of anchor and content resemblance.
    pub with_content: bool,
}

/// One related page.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RelatedPage {
    /// Its URL (as captured, or from its SURT when the sweep only linked it).
    pub url: String,
    /// Its SURT.
    pub surt: String,
    /// What the list is ranked on: the anchor resemblance, or with content the mean of
    /// both.
    pub score: f64,
    /// Estimated resemblance of the two bags of inbound anchor-window words.
    pub resemblance: f64,
    /// Estimated content resemblance of the two pages in the sweep (with content only;
    /// 0 when either has no capture with content there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_resemblance: Option<f64>,
    /// Pages that link it in the sweep.
    pub linking_pages: u32,
    /// Words of anchor texts that both URLs' inbound links use, most used first.
    pub shared_anchor_words: Vec<String>,
}

/// The answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Related {
    /// The URL asked about.
    pub url: String,
    /// Its SURT.
    pub surt: String,
    /// The sweep read.
    pub sweep: String,
    /// Pages that link it in the sweep.
    pub linking_pages: u32,
    /// Words in its inbound windows (each occurrence).
    pub window_words: u32,
    /// The related pages, best first.
    pub pages: Vec<RelatedPage>,
}

/// Candidates given their content resemblance, per page asked for, with content.
const CONTENT_POOL: usize = 5;
/// Shared anchor words listed per page.
const SHARED_WORDS: usize = 8;

/// The pages related to `url` by their inbound anchor windows in a sweep. Under access
/// rules, pages the reader may not see in that sweep are not listed, nor any page (the
/// asked one included) that a page it may not see links: a bag counts what every
/// linking page says.
pub fn related(s: &Searcher, url: &str, opts: &RelatedOptions) -> Result<Related> {
    let (id, label) = s.sweep_by_label(opts.sweep.as_deref())?;
    let key = surt(url);
    let limit = opts.limit.max(1);
    let none = || {
        IndexError::NotFound(format!(
            "fewer than {} pages of sweep {label} link {url} (nothing to compare; `tidemark inlinks` lists what links a URL)",
            crate::ingest::bags::MIN_LINKING_PAGES
        ))
    };
    let mine = match s.index.anchor_bags().of(id, &key)? {
        Some(b) if s.sees_in_sweep(&key, id)? => b,
        _ => return Err(none()),
    };
    // Every bag of the sweep against it: (resemblance, target, linking pages).
    let mut found: Vec<(f64, String, u32)> = Vec::new();
    s.index.anchor_bags().of_sweep(id, |k, bag| {
        if k.target != key {
            let e = bag_resemblance((mine.level, &mine.values), (bag.level, &bag.values));
            if e.common > 0 {
                found.push((e.resemblance, k.target, bag.sources));
            }
        }
        Ok(true)
    })?;
    found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    // More candidates than asked for when some may be dropped: ranked again with
    // content, or left out under access rules.
    let pool = if opts.with_content || s.reader().filtered() {
        limit.saturating_mul(CONTENT_POOL)
    } else {
        limit
    };
    let mut pages: Vec<RelatedPage> = Vec::new();
    let own = if opts.with_content {
        page_in(s, &key, id)?
    } else {
        None
    };
    for (r, target, sources) in found {
        if pages.len() >= pool {
            break;
        }
        if !s.sees_in_sweep(&target, id)? {
            continue;
        }
        let content_resemblance = match (&own, opts.with_content) {
            (_, false) => None,
            (None, true) => Some(0.0),
            (Some(a), true) => Some(match page_in(s, &target, id)? {
                Some(b) => resemblances(&a.0, &a.1, &b.0, &b.1).content,
                None => 0.0,
            }),
        };
        let score = content_resemblance.map_or(r, |c| (r + c) / 2.0);
        pages.push(RelatedPage {
            url: url_in(s, &target, id)?,
            surt: target,
            score,
            resemblance: r,
            content_resemblance,
            linking_pages: sources,
            shared_anchor_words: Vec::new(),
        });
    }
    // Under access rules a bag one of whose linking pages the reader may not see says
    // what that page says: the URL asked is not found, such a page is not listed.
    let hidden = shared_words(s, id, &key, &mut pages)?;
    if hidden[0] {
        return Err(none());
    }
    let mut kept = hidden[1..].iter();
    pages.retain(|_| !kept.next().copied().unwrap_or(true));
    pages.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.surt.cmp(&b.surt)));
    pages.truncate(limit);
    for p in &mut pages {
        p.score = round3(p.score);
        p.resemblance = round3(p.resemblance);
        p.content_resemblance = p.content_resemblance.map(round3);
    }
    Ok(Related {
        url: url.to_string(),
        surt: key,
        sweep: label,
        linking_pages: mine.sources,
        window_words: mine.elements,
        pages,
    })
}

/// The compact sketch and template of the URL's last capture with content in sweep `id`.
fn page_in(
    s: &Searcher,
    key: &str,
    id: u32,
) -> Result<Option<(CompactSketch, std::sync::Arc<[u32]>)>> {
    let caps = s.captures_of_surt(key)?;
    let Some(c) = caps
        .iter()
        .rev()
        .find(|c| c.info.sweep == id && c.info.doc.is_some())
    else {
        return Ok(None);
    };
    let doc = c.info.doc.expect("found with a doc");
    let Some(sk) = s.sketch(doc)? else {
        return Ok(None);
    };
    Ok(Some((CompactSketch::of(&sk), s.template(key, id)?)))
}

/// The URL of SURT `key` as sweep `id` captured it, or as written from its SURT.
fn url_in(s: &Searcher, key: &str, id: u32) -> Result<String> {
    let caps = s.captures_of_surt(key)?;
    let c = caps
        .iter()
        .rev()
        .find(|c| c.info.sweep == id)
        .or(caps.last());
    Ok(match c {
        Some(c) => c.info.url.clone(),
        None => url_of_surt(key),
    })
}

/// `org,example)/a?b` → `http://example.org/a?b` (a URL no capture spells).
pub fn url_of_surt(key: &str) -> String {
    let (host, rest) = key.split_once(')').unwrap_or((key, ""));
    let (host, port) = match host.split_once(':') {
        Some((h, p)) => (h, format!(":{p}")),
        None => (host, String::new()),
    };
    let mut parts: Vec<&str> = host.split(',').collect();
    parts.reverse();
    format!("http://{}{port}{}", parts.join("."), rest)
}

/// Fills each page's shared anchor words: the anchor texts of links to the asked URL
/// and to each listed page, from pages the reader may see ([`inbound_many`]). Returns,
/// for the asked URL then each page, whether a page the reader may not see links it.
///
/// [`inbound_many`]: crate::index::columns::Col::inbound_many
fn shared_words(s: &Searcher, id: u32, key: &str, pages: &mut [RelatedPage]) -> Result<Vec<bool>> {
    if pages.is_empty() && !s.reader().filtered() {
        return Ok(vec![false]);
    }
    let wanted: Vec<&str> = std::iter::once(key)
        .chain(pages.iter().map(|p| p.surt.as_str()))
        .collect();
    let inbound = s.index.links().inbound_many(id, &wanted)?;
    let mut words: Vec<BTreeMap<String, u32>> = vec![BTreeMap::new(); wanted.len()];
    let mut hidden = vec![false; wanted.len()];
    let mut visible: HashMap<String, bool> = HashMap::new();
    for (i, sources) in inbound.iter().enumerate() {
        for (source, windows) in sources {
            let seen = match visible.get(source) {
                Some(v) => *v,
                None => {
                    let v = s.sees_in_sweep(source, id)?;
                    visible.insert(source.to_string(), v);
                    v
                }
            };
            if !seen {
                hidden[i] = true;
                continue;
            }
            for w in windows {
                let anchor = OutLink::parts(w).1;
                for word in anchor.split(' ').filter(|w| !w.is_empty()) {
                    *words[i].entry(word.to_string()).or_default() += 1;
                }
            }
        }
    }
    for (n, p) in pages.iter_mut().enumerate() {
        let (a, b) = (&words[0], &words[n + 1]);
        let mut shared: Vec<(u32, &String)> = a
            .iter()
            .filter_map(|(w, ca)| b.get(w).map(|cb| ((*ca).min(*cb), w)))
            .collect();
        shared.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(y.1)));
        p.shared_anchor_words = shared
            .into_iter()
            .take(SHARED_WORDS)
            .map(|(_, w)| w.clone())
            .collect();
    }
    Ok(hidden)
}
