//! `links`: sweep id u32 BE ‖ source SURT → the page's outgoing links in that sweep: the
//! words of their anchor windows once, and each target SURT with its windows as ranges of
//! those words ([`crate::links::PageLinks`]; format byte 2, bincode). Values of format 1
//! (a list of [`crate::links::OutLink`], windows as text) are read as they are.
//!
//! One entry a page: the commit adds one put per HTML capture, whatever its number of
//! links (keyed by target, a page's hundred links were a hundred puts on the committing
//! thread: 70% more ingest time on a generated sweep of 100,000 pages). What the pages of
//! a sweep say about one URL is read by a scan of the sweep's pages. Written by ingest
//! with each 2xx capture of an HTML page (a page captured twice in a sweep: its last
//! capture's links); read by `inlinks`.

use super::{Col, Column};
use crate::index::Result;
use serde::Deserialize;

use crate::links::{
    OutLink, PageLink, PageLinks, PageLinksRef, Tokens, MAX_ANCHOR_TOKENS, MAX_WINDOW,
    MAX_WINDOWS_PER_TARGET,
};

/// Marker of the `links` column family.
pub struct Links;

/// A key of `links`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkKey {
    /// Sweep id.
    pub sweep: u32,
    /// SURT of the page that links.
    pub source: String,
}

/// The key bytes of (sweep, source).
pub fn key_of(sweep: u32, source: &str) -> Vec<u8> {
    super::sweep_surt_key(sweep, source)
}

/// The value bytes of a page's links.
pub fn value_of(links: &PageLinks) -> Vec<u8> {
    encode_page_links(links)
}

/// A page's links from their stored bytes: the layout of [`PageLinks`] (format byte
/// [`PAGE_LINKS_FORMAT`]), or the first one, windows as text ([`TEXT_LINKS_FORMAT`], a
/// list of [`OutLink`]: written by builds of schema 17 before 2026-11-29), read as it
/// is. `each` gets the links borrowed where the layout allows. A value whose windows
/// point past its words, or are wider, more or longer than any page's, is refused: a
/// window of a few bytes names any run of the words, so a damaged or crafted value could
/// otherwise make gigabytes of window text or bag words.
pub fn with_page_links<R>(
    bytes: &[u8],
    each: impl FnOnce(&PageLinksRef<'_>) -> R,
) -> std::result::Result<R, String> {
    match bytes.first() {
        Some(&PAGE_LINKS_FORMAT) => {
            let links: PageLinksRef<'_> =
                crate::index::codec::decode_borrowed_as(PAGE_LINKS_FORMAT, bytes)?;
            check(&links)?;
            Ok(each(&links))
        }
        Some(&TEXT_LINKS_FORMAT) => {
            #[derive(Deserialize)]
            struct Text<'a> {
                #[serde(borrow)]
                target: &'a str,
                #[serde(borrow)]
                windows: Vec<&'a str>,
            }
            let old: Vec<Text<'_>> = crate::index::codec::decode_borrowed(bytes)?;
            let texts: Vec<(&str, Vec<&str>)> =
                old.into_iter().map(|t| (t.target, t.windows)).collect();
            let links = PageLinks::from_texts(&texts);
            Ok(each(&links.as_ref()))
        }
        Some(v) => Err(format!(
            "links format {v}, this build reads {PAGE_LINKS_FORMAT} and {TEXT_LINKS_FORMAT}"
        )),
        None => Err("empty value".into()),
    }
}

/// The stored bytes of a page's links.
pub fn encode_page_links(links: &PageLinks) -> Vec<u8> {
    crate::index::codec::encode_as(PAGE_LINKS_FORMAT, links)
}

/// A page's links, owned, from their stored bytes (either layout).
pub fn decode_page_links(bytes: &[u8]) -> std::result::Result<PageLinks, String> {
    with_page_links(bytes, |l| PageLinks {
        words: l.words.to_string(),
        links: (l.links.iter())
            .map(|k| PageLink {
                target: k.target.to_string(),
                windows: k.windows.clone(),
            })
            .collect(),
    })
}

/// Format byte of [`PageLinks`] values.
pub const PAGE_LINKS_FORMAT: u8 = 2;
/// Format byte of the first layout's values (windows as text).
pub const TEXT_LINKS_FORMAT: u8 = 1;

/// Whether `links` could have been made from a page: at most [`crate::canon::MAX_LINKS`]
/// links, [`MAX_WINDOWS_PER_TARGET`] windows a target, windows no wider than the widest
/// [`MAX_WINDOW`] allows and within the words.
fn check(links: &PageLinksRef<'_>) -> std::result::Result<(), String> {
    let n = if links.words.is_empty() {
        0
    } else {
        memchr::memchr_iter(b' ', links.words.as_bytes()).count() + 1
    };
    if links.links.len() > crate::canon::MAX_LINKS {
        return Err(format!("{} links, more than a page's", links.links.len()));
    }
    for l in &links.links {
        if l.windows.len() > MAX_WINDOWS_PER_TARGET {
            return Err(format!("{} windows of one target", l.windows.len()));
        }
        for w in &l.windows {
            let [b, a, f] = w.ranges();
            let wide = w.before > MAX_WINDOW
                || w.after > MAX_WINDOW
                || w.anchor as usize > MAX_ANCHOR_TOKENS;
            if wide || [b, a, f].iter().any(|r| !r.is_empty() && r.end > n) {
                return Err(format!("a window {w:?} not within its {n} words"));
            }
        }
    }
    Ok(())
}

impl Column for Links {
    const NAME: &'static str = "links";
    type Key = LinkKey;
    type Value = Vec<OutLink>;

    fn key(k: &LinkKey) -> Vec<u8> {
        key_of(k.sweep, &k.source)
    }

    fn decode_key(b: &[u8]) -> std::result::Result<LinkKey, String> {
        let (sweep, source) = super::decode_sweep_surt_key(b)?;
        Ok(LinkKey { sweep, source })
    }

    fn value(v: &Vec<OutLink>) -> Vec<u8> {
        let texts: Vec<(&str, Vec<&str>)> = (v.iter())
            .map(|l| {
                (
                    l.target.as_str(),
                    l.windows.iter().map(|w| w.as_str()).collect(),
                )
            })
            .collect();
        value_of(&PageLinks::from_texts(&texts))
    }

    fn decode_value(b: &[u8]) -> std::result::Result<Vec<OutLink>, String> {
        with_page_links(b, |l| l.to_out_links())
    }

    fn tune(o: &mut rocksdb::Options, _t: &mut rocksdb::BlockBasedOptions, _cx: &super::Tuning) {
        // zstd's fastest level: a sweep's links are as many bytes as all else it adds,
        // written once, read by scans.
        o.set_compression_options(-14, 1, 0, 0);
        o.set_bottommost_compression_options(-14, 1, 0, 0, true);
    }
}

/// The pages that link one target, each with its links' windows, by source.
pub type Inbound = Vec<(String, Vec<String>)>;

impl Col<'_, Links> {
    /// The pages of sweep `sweep` that link `target`, with their windows, by source.
    pub fn inbound(&self, sweep: u32, target: &str) -> Result<Inbound> {
        let mut many = self.inbound_many(sweep, &[target])?;
        Ok(many.pop().unwrap_or_default())
    }

    /// Every page of sweep `sweep` with its links, borrowed (no string is copied), in
    /// key order, until `each` returns `Ok(false)`.
    pub fn each_link(
        &self,
        sweep: u32,
        mut each: impl FnMut(&str, &PageLinksRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        let prefix = sweep.to_be_bytes();
        self.scan_raw(&prefix, None, false, |k, v| {
            if !k.starts_with(&prefix) {
                return Ok(false);
            }
            let source = std::str::from_utf8(&k[4..])
                .map_err(|_| super::corrupt::<Links>(k, "a SURT that is not UTF-8"))?;
            with_page_links(v, |links| each(source, links))
                .map_err(|e| super::corrupt::<Links>(k, e))?
        })
    }

    /// [`Self::inbound`] of each of `targets`, in their order, in one scan of the sweep.
    pub fn inbound_many(&self, sweep: u32, targets: &[&str]) -> Result<Vec<Inbound>> {
        let at: std::collections::HashMap<&str, usize> =
            targets.iter().enumerate().map(|(i, t)| (*t, i)).collect();
        let mut out = vec![Inbound::new(); targets.len()];
        if targets.is_empty() {
            return Ok(out);
        }
        self.each_link(sweep, |source, page| {
            let mut tokens: Option<Tokens<'_>> = None;
            for l in &page.links {
                if let Some(i) = at.get(l.target) {
                    let tokens = tokens.get_or_insert_with(|| Tokens::of(page.words));
                    let windows = l.windows.iter().map(|w| w.text(tokens)).collect();
                    out[*i].push((source.to_string(), windows));
                }
            }
            Ok(true)
        })?;
        Ok(out)
    }

    /// How many targets each of the anchor texts `anchors` names in sweep `sweep` (one
    /// scan; only those anchors are counted).
    pub fn anchor_spread(
        &self,
        sweep: u32,
        anchors: &std::collections::HashSet<String>,
    ) -> Result<AnchorSpread> {
        let mut spread = AnchorSpread::default();
        if anchors.is_empty() {
            return Ok(spread);
        }
        self.each_link(sweep, |_, page| {
            let tokens = Tokens::of(page.words);
            for l in &page.links {
                for w in &l.windows {
                    let anchor = tokens.span(w.ranges()[1].clone());
                    if anchors.contains(anchor) {
                        spread.note(anchor, l.target);
                    }
                }
            }
            Ok(true)
        })?;
        Ok(spread)
    }
}

/// How many targets each anchor text of a sweep names, up to [`AnchorSpread::MAX`]: an
/// anchor text that names many ("next", "previous", "index", "here") places a link in a
/// sequence or a site's navigation; one that names one or two names its target.
#[derive(Debug, Default)]
pub struct AnchorSpread(std::collections::HashMap<String, Vec<String>>);

impl AnchorSpread {
    /// Targets counted per anchor text at most.
    pub const MAX: usize = 4;

    fn note(&mut self, anchor: &str, target: &str) {
        if anchor.is_empty() {
            return;
        }
        let t = match self.0.get_mut(anchor) {
            Some(t) => t,
            None => self.0.entry(anchor.to_string()).or_default(),
        };
        if t.len() < Self::MAX && !t.iter().any(|x| x == target) {
            t.push(target.to_string());
        }
    }

    /// The targets the anchor text names (at most [`Self::MAX`]).
    pub fn targets(&self, anchor: &str) -> usize {
        self.0.get(anchor).map_or(0, |t| t.len())
    }
}
