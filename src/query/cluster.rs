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

/// The cluster of the content of `url`'s latest capture with content; `limit` members at
/// most (the size is always the whole cluster's).
pub fn cluster(s: &Searcher, url: &str, limit: usize) -> Result<Cluster> {
    let caps = s.captures(url)?;
    let Some(last) = caps.iter().rev().find(|c| c.info.doc.is_some()) else {
        return Err(IndexError::NotFound(if caps.is_empty() {
            format!("{url} was never captured")
        } else {
            format!("{url} has no capture with text content, so no cluster")
        }));
    };
    let doc = last.info.doc.expect("found with a doc");
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
