//! The near-duplicate cluster of a URL's content: its docs, each with its URLs and dates.

use serde::Serialize;

use super::Searcher;
use crate::index::{unionfind, IndexError, Result};
use crate::timestamp::Timestamp14;

/// One URL of a member doc.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemberUrl {
    /// URL.
    pub url: String,
    /// First capture of this doc at this URL.
    pub first: String,
    /// Last capture of this doc at this URL.
    pub last: String,
    /// Captures of this doc at this URL.
    pub captures: u64,
}

/// One member doc.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Member {
    /// Doc id.
    pub doc: u64,
    /// `<title>` of the doc.
    pub title: Option<String>,
    /// Where it was captured.
    pub urls: Vec<MemberUrl>,
}

/// The answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cluster {
    /// The URL asked about.
    pub url: String,
    /// The doc of its latest capture with content.
    pub doc: u64,
    /// Cluster id: its smallest doc id (under access rules, the doc an index of the
    /// captures the reader may see would name it by: `unionfind::visible_name`).
    pub cluster: u64,
    /// Number of docs.
    pub size: u64,
    /// Members, by doc id.
    pub members: Vec<Member>,
}

/// The doc of `url`'s latest capture with content (that the reader may see).
fn latest_doc(s: &Searcher, url: &str) -> Result<u64> {
    let caps = s.captures(url)?;
    match caps.iter().rev().find_map(|c| c.info.doc) {
        Some(doc) => Ok(doc),
        None => Err(IndexError::NotFound(if caps.is_empty() {
            format!("{url} was never captured")
        } else {
            format!("{url} has no capture with text content, so no cluster")
        })),
    }
}

/// The cluster of the content of `url`'s latest capture with content; `limit` members at
/// most (the size is always the whole cluster's).
pub fn cluster(s: &Searcher, url: &str, limit: usize) -> Result<Cluster> {
    let doc = latest_doc(s, url)?;
    let (mut cluster, mut size) = unionfind::cluster_of(s.index, doc)?;
    // Under access rules a doc with no capture the reader may see is neither listed nor
    // counted: every member is looked at (a request's budget bounds it).
    let filtered = s.reader().filtered();
    if filtered {
        size = 0;
    }
    let mut members = Vec::new();
    for d in unionfind::cluster_members(s.index, doc)? {
        if members.len() >= limit && !filtered {
            break;
        }
        let caps = s.doc_captures(d)?;
        // A title is the page's text: not told of a doc whose every capture is blocked.
        let open = !filtered
            || (caps.iter()).any(|c| {
                s.reader().access_of(&c.surt, &c.timestamp) != crate::access::Access::Block
            });
        if filtered {
            if caps.is_empty() {
                continue;
            }
            size += 1;
            if members.len() >= limit {
                continue;
            }
        }
        // (A boilerplate doc has tens of thousands of URLs: looked up, not searched.)
        let mut urls: Vec<MemberUrl> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = Default::default();
        for c in caps {
            let date = Timestamp14::iso_of(&c.timestamp);
            match at.get(&c.info.url) {
                Some(&i) => {
                    urls[i].last = date;
                    urls[i].captures += 1;
                }
                None => {
                    at.insert(c.info.url.clone(), urls.len());
                    urls.push(MemberUrl {
                        url: c.info.url.clone(),
                        first: date.clone(),
                        last: date,
                        captures: 1,
                    });
                }
            }
        }
        members.push(Member {
            doc: d,
            title: match open {
                true => s.index.doc(d)?.and_then(|i| i.title),
                false => None,
            },
            urls,
        });
    }
    if filtered {
        // Named as an index of the visible captures alone would name it.
        cluster = unionfind::visible_name(s.index, s.reader(), doc)?.unwrap_or(doc);
    }
    Ok(Cluster {
        url: url.to_string(),
        doc,
        cluster,
        size,
        members,
    })
}

/// One URL of a clustered list.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ListedUrl {
    /// The URL as listed.
    pub url: String,
    /// The doc of its latest capture with content (none for a repeat of a URL without).
    pub doc: Option<u64>,
}

/// One group of a clustered list: the first URL of the list in a cluster, and the
/// list's later URLs in the same one.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ListGroup {
    /// The group's representative: the first of its URLs in the list.
    pub url: String,
    /// Its place in the list (from 0).
    pub at: usize,
    /// The doc of its latest capture with content (none: see `reason`).
    pub doc: Option<u64>,
    /// The cluster, as `cluster URL` names it (none: the URL has no content in the
    /// index; it is a group of its own, with every repeat of it).
    pub cluster: Option<u64>,
    /// Why a URL has no cluster: never captured, no capture with text content, not a
    /// URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The list's later URLs in the same cluster, in the list's order.
    pub others: Vec<ListedUrl>,
}

/// A list of URLs (a search engine's result page) grouped into near-duplicate clusters.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClusteredList {
    /// URLs in the list.
    pub urls: usize,
    /// Groups in the order of their first URL.
    pub groups: Vec<ListGroup>,
}

/// The URLs of a list as users write them: one a line, blank lines and lines starting
/// with `#` skipped, each trimmed.
pub fn url_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Groups `urls` by the cluster of each one's latest content, in the list's order:
/// two URLs share a group exactly when [`cluster`] names the same cluster for both. A
/// URL the index has no content for (or that is not a URL) is a group of its own
/// (repeats of it join it), with the reason.
pub fn cluster_list(s: &Searcher, urls: &[String]) -> Result<ClusteredList> {
    use std::collections::HashMap;
    let filtered = s.reader().filtered();
    // Under access rules the visible name is looked for once per cluster.
    let mut names: HashMap<u64, u64> = HashMap::new();
    let mut group_of: HashMap<std::result::Result<u64, &str>, usize> = HashMap::new();
    let mut groups: Vec<ListGroup> = Vec::new();
    for (at, url) in urls.iter().enumerate() {
        let found = match crate::url::check(url) {
            Err(e) => Err(e),
            Ok(()) => match latest_doc(s, url) {
                Ok(doc) => Ok(doc),
                Err(IndexError::NotFound(why)) => Err(why),
                Err(e) => return Err(e),
            },
        };
        let (doc, key, cluster) = match found {
            Ok(doc) => {
                let root = unionfind::cluster_of(s.index, doc)?.0;
                let name = match (filtered, names.get(&root)) {
                    (false, _) => root,
                    (true, Some(&n)) => n,
                    (true, None) => {
                        let n = unionfind::visible_name(s.index, s.reader(), doc)?.unwrap_or(doc);
                        names.insert(root, n);
                        n
                    }
                };
                (Ok(doc), Ok(name), Some(name))
            }
            Err(why) => (Err(why), Err(url.as_str()), None),
        };
        match group_of.get(&key) {
            Some(&g) => groups[g].others.push(ListedUrl {
                url: url.clone(),
                doc: doc.as_ref().ok().copied(),
            }),
            None => {
                group_of.insert(key, groups.len());
                groups.push(ListGroup {
                    url: url.clone(),
                    at,
                    doc: doc.as_ref().ok().copied(),
                    cluster,
                    reason: doc.err(),
                    others: Vec::new(),
                });
            }
        }
    }
    Ok(ClusteredList {
        urls: urls.len(),
        groups,
    })
}
