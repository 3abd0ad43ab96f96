//! `links`: sweep id u32 BE ‖ source SURT → the page's outgoing links in that sweep: the
//! words of their anchor windows once, and each target SURT with its windows as ranges of
//! those words ([`crate::links::PageLinks`]; format byte 3, bincode, then the links'
//! origin), or, for a page whose URL and bytes the sweep before already had, a reference
//! to the sweep that keeps its links (format byte 4). Values of formats 1 (a list of
//! [`crate::links::OutLink`], windows as text) and 2 (format 3 without its origin) are
//! read as they are.
//!
//! One entry a page: the commit adds one put per HTML capture, whatever its number of
//! links (keyed by target, a page's hundred links were a hundred puts on the committing
//! thread: 70% more ingest time on a generated sweep of 100,000 pages). What the pages of
//! a sweep say about one URL is read from the pages `inbound` names (the links turned
//! around once the sweep is in), or by a scan of the sweep's pages. Written by ingest
//! with each 2xx capture of an HTML page (a page captured twice in a sweep: its last
//! capture's links); read by `inlinks`.
//!
//! A page unchanged since the sweep before (same URL, same payload digest: the links'
//! *origin*) says what it said then: its links are kept once, the later sweeps holding
//! a 13-byte reference ([`same_as`]) to the sweep whose value holds them (never to
//! another reference), which the workers find with one lookup instead of reading the
//! page again. Readers resolve references here ([`Col::each_link`], [`Col::page`]); an
//! ingest that adds files to a sweep that later sweeps refer to copies the links they
//! refer to into them before it replaces them ([`Col::keep_for_later`]).

use super::{Col, Column};
use crate::index::Result;
use serde::Deserialize;

use crate::links::inbound::{MAX_TARGETS, MIN_TARGETS};
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
        Some(&ORIGIN_LINKS_FORMAT) if bytes.len() > ORIGIN_BYTES => {
            let body = &bytes[..bytes.len() - ORIGIN_BYTES];
            let links: PageLinksRef<'_> =
                crate::index::codec::decode_borrowed_whole_as(ORIGIN_LINKS_FORMAT, body)?;
            check(&links)?;
            Ok(each(&links))
        }
        Some(&PAGE_LINKS_FORMAT) => {
            let links: PageLinksRef<'_> =
                crate::index::codec::decode_borrowed_as(PAGE_LINKS_FORMAT, bytes)?;
            check(&links)?;
            Ok(each(&links))
        }
        Some(&SAME_AS_FORMAT) => Err(match same_as_of(bytes) {
            Some((sweep, _)) => format!("a reference to sweep {sweep}'s links, read unresolved"),
            None => format!("a reference of {} bytes", bytes.len()),
        }),
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
            "links format {v}, this build reads {TEXT_LINKS_FORMAT} to {SAME_AS_FORMAT}"
        )),
        None => Err("empty value".into()),
    }
}

/// The stored bytes of a page's links read from a page of origin `origin`
/// ([`origin`]).
pub fn encode_page_links(links: &PageLinks, origin: u64) -> Vec<u8> {
    let mut out = crate::index::codec::encode_as(ORIGIN_LINKS_FORMAT, links);
    out.extend_from_slice(&origin.to_be_bytes());
    out
}

/// Version of the reading of links from a page (canonical tokens, `out_links`): part of
/// every origin, so that links a later build would read otherwise are never taken for
/// its own. Raise it with any change to what a page's links are.
pub const LINKS_READING: u64 = 1;

/// The origin of a page's links: a hash of everything they are read from — the page's
/// URL, the charset its HTTP header names (which decides how its bytes decode), its
/// payload as decoded (transfer and content codings undone) and [`LINKS_READING`]. The
/// same origin, the same links.
pub fn origin(url: &str, header_charset: Option<&str>, payload: &[u8]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::with_seed(LINKS_READING);
    h.update(url.as_bytes());
    h.update(&[0]);
    h.update(header_charset.unwrap_or_default().as_bytes());
    h.update(&[0]);
    h.update(&(payload.len() as u64).to_le_bytes());
    h.update(payload);
    h.digest()
}

/// The origin a stored value names: its own (format 3) or the one of the links it
/// refers to (format 4); none for the older formats.
pub fn origin_of(bytes: &[u8]) -> Option<u64> {
    match bytes.first()? {
        &ORIGIN_LINKS_FORMAT if bytes.len() > ORIGIN_BYTES => {
            let tail: [u8; ORIGIN_BYTES] = bytes[bytes.len() - ORIGIN_BYTES..].try_into().ok()?;
            Some(u64::from_be_bytes(tail))
        }
        &SAME_AS_FORMAT => same_as_of(bytes).map(|(_, o)| o),
        _ => None,
    }
}

/// The value that says "the links sweep `sweep` keeps for this page, of origin
/// `origin`": `[4][sweep u32 BE][origin u64 BE]`.
pub fn same_as(sweep: u32, origin: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(SAME_AS_BYTES);
    out.push(SAME_AS_FORMAT);
    out.extend_from_slice(&sweep.to_be_bytes());
    out.extend_from_slice(&origin.to_be_bytes());
    out
}

/// The sweep and origin a reference ([`same_as`]) names; none for a value of links.
pub fn same_as_of(bytes: &[u8]) -> Option<(u32, u64)> {
    if bytes.len() != SAME_AS_BYTES || bytes[0] != SAME_AS_FORMAT {
        return None;
    }
    let sweep = u32::from_be_bytes(bytes[1..5].try_into().ok()?);
    let origin = u64::from_be_bytes(bytes[5..].try_into().ok()?);
    Some((sweep, origin))
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

/// Format byte of [`PageLinks`] values with their origin (8 bytes BE after the body).
pub const ORIGIN_LINKS_FORMAT: u8 = 3;
/// Format byte of a reference to another sweep's value ([`same_as`]).
pub const SAME_AS_FORMAT: u8 = 4;
/// Format byte of [`PageLinks`] values without their origin (written by builds of
/// 2026-11-29 before references; read as they are).
pub const PAGE_LINKS_FORMAT: u8 = 2;
const ORIGIN_BYTES: usize = 8;
const SAME_AS_BYTES: usize = 13;
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
        // No origin known (format 2): a value no later sweep refers to.
        crate::index::codec::encode_as(PAGE_LINKS_FORMAT, &PageLinks::from_texts(&texts))
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
    /// key order, until `each` returns `Ok(false)`. A reference is read where it points.
    pub fn each_link(
        &self,
        sweep: u32,
        mut each: impl FnMut(&str, &PageLinksRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        let prefix = sweep.to_be_bytes();
        // The sweep's own blocks are read once, not cached; the lookups its references
        // make are (uncached, each would inflate a block again: ten times slower).
        // No SURT holds byte 0xff (UTF-8 never does): the end of the sweep's keys.
        let mut end = prefix.to_vec();
        end.push(0xff);
        self.scan_raw_once(&prefix, &end, |k, v| {
            let source = std::str::from_utf8(&k[4..])
                .map_err(|_| super::corrupt::<Links>(k, "a SURT that is not UTF-8"))?;
            let v = self.resolved(k, source, v)?;
            with_page_links(&v, |links| each(source, links))
                .map_err(|e| super::corrupt::<Links>(k, e))?
        })
    }

    /// The links of page `source` in sweep `sweep` (a reference read where it points).
    pub fn page(&self, sweep: u32, source: &str) -> Result<Option<Vec<OutLink>>> {
        let k = key_of(sweep, source);
        let Some(v) = self.index.db().get_pinned_cf(self.handle(), &k)? else {
            return Ok(None);
        };
        let v = self.resolved(&k, source, &v)?;
        with_page_links(&v, |l| l.to_out_links())
            .map(Some)
            .map_err(|e| super::corrupt::<Links>(&k, e))
    }

    /// Every page of every sweep with its links, owned, in key order (references read
    /// where they point), until `each` returns `Ok(false)`.
    pub fn each_page(
        &self,
        mut each: impl FnMut(LinkKey, Vec<OutLink>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_raw(&[], None, false, |k, v| {
            let (sweep, source) =
                super::decode_sweep_surt_key(k).map_err(|e| super::corrupt::<Links>(k, e))?;
            let v = self.resolved(k, &source, v)?;
            let links = with_page_links(&v, |l| l.to_out_links())
                .map_err(|e| super::corrupt::<Links>(k, e))?;
            each(LinkKey { sweep, source }, links)
        })
    }

    /// The links of origin `origin` that sweep `sweep` keeps for page `source` (itself
    /// or by a reference): the sweep whose value holds them, and that value.
    pub(crate) fn kept_before(
        &self,
        sweep: u32,
        source: &str,
        origin: u64,
    ) -> Result<Option<(u32, Vec<u8>)>> {
        let k = key_of(sweep, source);
        let Some(v) = self.index.db().get_pinned_cf(self.handle(), &k)? else {
            return Ok(None);
        };
        if origin_of(&v) != Some(origin) {
            return Ok(None);
        }
        let held = same_as_of(&v).map_or(sweep, |(s, _)| s);
        Ok(Some((held, self.resolved(&k, source, &v)?.into_owned())))
    }

    /// The sweep whose value holds the links of page `source` in sweep `sweep`: that
    /// sweep itself, or the earlier one its reference names; none without links there.
    pub fn kept_in(&self, sweep: u32, source: &str) -> Result<Option<u32>> {
        let v = self
            .index
            .db()
            .get_pinned_cf(self.handle(), key_of(sweep, source))?;
        Ok(v.map(|v| same_as_of(&v).map_or(sweep, |(s, _)| s)))
    }

    /// Value `v` of key `k` (page `source`) as links: itself, or the value its reference
    /// points to — links of the same origin, not another reference.
    fn resolved<'v>(
        &self,
        k: &[u8],
        source: &str,
        v: &'v [u8],
    ) -> Result<std::borrow::Cow<'v, [u8]>> {
        let Some((sweep, origin)) = same_as_of(v) else {
            return Ok(std::borrow::Cow::Borrowed(v));
        };
        let held = self
            .index
            .db()
            .get_pinned_cf(self.handle(), key_of(sweep, source))?;
        match held {
            Some(v) if same_as_of(&v).is_none() && origin_of(&v) == Some(origin) => {
                Ok(std::borrow::Cow::Owned(v.to_vec()))
            }
            Some(_) => Err(super::corrupt::<Links>(
                k,
                format!("refers to sweep {sweep}'s links of the page, which are another page's"),
            )),
            None => Err(super::corrupt::<Links>(
                k,
                format!("refers to sweep {sweep}'s links of the page, which that sweep lacks"),
            )),
        }
    }

    /// Before sweep `sweep`'s links of page `source` are replaced by links of origin
    /// `origin` (an ingest adding files to a sweep that later sweeps may refer to; the new
    /// value is whole, never a reference): each later sweep's reference to them becomes a
    /// copy of them, added to `batch` — unless the new links are of the same origin, the
    /// same links. Reads the sweep's value first, then the later ones', so that a batch
    /// being written meanwhile is seen whole or not at all. Stops at the first later
    /// sweep without a value for the page: values are never removed, and a sweep refers
    /// only to what the sweep before it held (itself or by its reference), so none after
    /// that one refers to these.
    pub(crate) fn keep_for_later(
        &self,
        batch: &mut super::Batch,
        (sweep, last_sweep): (u32, u32),
        source: &str,
        origin: Option<u64>,
    ) -> Result<()> {
        let Some(now) = self
            .index
            .db()
            .get_pinned_cf(self.handle(), key_of(sweep, source))?
        else {
            return Ok(());
        };
        if same_as_of(&now).is_some() || (origin.is_some() && origin_of(&now) == origin) {
            return Ok(());
        }
        for later in sweep.saturating_add(1)..=last_sweep {
            let lk = key_of(later, source);
            let Some(v) = self.index.db().get_pinned_cf(self.handle(), &lk)? else {
                break;
            };
            if same_as_of(&v).is_some_and(|(s, _)| s == sweep) {
                batch.put_raw::<Links>(self.index, &lk, &now);
            }
        }
        Ok(())
    }

    /// [`Self::inbound`] of each of `targets`, in their order: from the pages `inbound`
    /// names, or in one scan of the sweep when its entries are not built (or for more
    /// targets than [`INBOUND_LOOKUPS`]: one scan reads each page once).
    pub fn inbound_many(&self, sweep: u32, targets: &[&str]) -> Result<Vec<Inbound>> {
        let mut out = vec![Inbound::new(); targets.len()];
        if targets.is_empty() {
            return Ok(out);
        }
        let by_target = self.index.inbound();
        // Targets `inbound` does not know, for one scan.
        let mut unknown: Vec<usize> = (0..targets.len()).collect();
        if targets.len() <= INBOUND_LOOKUPS && by_target.of_sweep_built(sweep)? {
            unknown.clear();
            // Each linking page read once, in SURT order (each target's list is then in
            // the scan's order), with the targets it links.
            let mut pages: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
            for (i, target) in targets.iter().enumerate() {
                match by_target.of_built(sweep, target)? {
                    Some(sources) => {
                        for s in sources {
                            pages.entry(s).or_default().push(i);
                        }
                    }
                    None => unknown.push(i),
                }
            }
            // More pages than a scan would cost: the scan reads each once.
            if pages.len() > INBOUND_PAGE_READS {
                unknown = (0..targets.len()).collect();
                pages.clear();
            }
            for (source, wanted) in pages {
                let k = key_of(sweep, &source);
                let Some(v) = self.index.db().get_pinned_cf(self.handle(), &k)? else {
                    continue;
                };
                let v = self.resolved(&k, &source, &v)?;
                with_page_links(&v, |page| {
                    let tokens = Tokens::of(page.words);
                    for l in &page.links {
                        for i in wanted.iter().filter(|i| targets[**i] == l.target) {
                            let windows = l.windows.iter().map(|w| w.text(&tokens)).collect();
                            out[*i].push((source.clone(), windows));
                        }
                    }
                })
                .map_err(|e| super::corrupt::<Links>(&k, e))?;
            }
            if unknown.is_empty() {
                return Ok(out);
            }
        }
        let mut at: std::collections::HashMap<&str, Vec<usize>> = Default::default();
        for i in unknown {
            at.entry(targets[i]).or_default().push(i);
        }
        self.each_link(sweep, |source, page| {
            let mut tokens: Option<Tokens<'_>> = None;
            for l in &page.links {
                for i in at.get(l.target).into_iter().flatten() {
                    let tokens = tokens.get_or_insert_with(|| Tokens::of(page.words));
                    let windows = l.windows.iter().map(|w| w.text(tokens)).collect();
                    out[*i].push((source.to_string(), windows));
                }
            }
            Ok(true)
        })?;
        Ok(out)
    }

    /// How many targets each of the anchor texts `anchors` names in sweep `sweep`: from
    /// `anchor_targets` when the sweep's entries are built, else in one scan (only those
    /// anchors are counted).
    pub fn anchor_spread(
        &self,
        sweep: u32,
        anchors: &std::collections::HashSet<String>,
    ) -> Result<AnchorSpread> {
        let mut spread = AnchorSpread::default();
        if anchors.is_empty() {
            return Ok(spread);
        }
        if self.index.inbound().of_sweep_built(sweep)? {
            for a in anchors {
                if let Some(n) = self.index.anchor_targets().of(sweep, a)? {
                    spread.0.insert(a.clone(), n as usize);
                }
            }
            return Ok(spread);
        }
        let mut named: std::collections::HashMap<&str, Vec<String>> = Default::default();
        self.each_link(sweep, |_, page| {
            let tokens = Tokens::of(page.words);
            for l in &page.links {
                for w in &l.windows {
                    let anchor = tokens.span(w.ranges()[1].clone());
                    let Some(a) = anchors.get(anchor) else {
                        continue;
                    };
                    let t = named.entry(a.as_str()).or_default();
                    if t.len() < MAX_TARGETS && !t.iter().any(|x| x == l.target) {
                        t.push(l.target.to_string());
                    }
                }
            }
            Ok(true)
        })?;
        for (a, t) in named {
            if t.len() >= MIN_TARGETS {
                spread.0.insert(a.to_string(), t.len());
            }
        }
        Ok(spread)
    }
}

/// Targets [`Col::inbound_many`] reads through `inbound` at most; more are read by a
/// scan of the sweep's links.
pub const INBOUND_LOOKUPS: usize = 256;

/// Linking pages [`Col::inbound_many`] reads one by one at most (each a lookup and a
/// decode of the page's links); more are read by a scan, which reads each page once.
pub const INBOUND_PAGE_READS: usize = 4096;

/// The anchor texts of a sweep that name at least [`MIN_TARGETS`] URLs, with how many
/// (at most [`MAX_TARGETS`]): "next", "previous", "index", "here" place a link in a
/// sequence or a site's navigation; one that names one or two names its target.
#[derive(Debug, Default, PartialEq)]
pub struct AnchorSpread(std::collections::HashMap<String, usize>);

impl AnchorSpread {
    /// Whether the anchor text names the page it links: it names fewer than
    /// [`MIN_TARGETS`] URLs in the sweep (a page's title may be the anchor of a few
    /// pages' links: versions, translations).
    pub fn names_its_target(&self, anchor: &str) -> bool {
        !self.0.contains_key(anchor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::columns::Batch;
    use crate::index::Index;
    use crate::links::{PageLink, Window};

    fn page(target: &str) -> PageLinks {
        PageLinks {
            words: "see the manual".into(),
            links: vec![PageLink {
                target: target.into(),
                windows: vec![Window {
                    at: 0,
                    before: 2,
                    anchor: 1,
                    skip: 0,
                    after: 0,
                }],
            }],
        }
    }

    /// A reference reads as the links it names; one whose sweep lacks the page's value,
    /// or holds another origin's, is a corruption error, never another page's links.
    #[test]
    fn references_read_as_the_links_they_name_or_fail() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path(), &crate::config::Config::default(), true).unwrap();
        let (a, b) = ("org,example)/a", "org,example)/b");
        let mut batch = Batch::default();
        batch.put_raw::<Links>(&index, &key_of(1, a), &encode_page_links(&page("t1"), 11));
        batch.put_raw::<Links>(&index, &key_of(1, b), &encode_page_links(&page("t2"), 22));
        batch.put_raw::<Links>(&index, &key_of(2, a), &same_as(1, 11));
        index.write(batch).unwrap();
        let links = index.links();
        assert_eq!(links.kept_in(2, a).unwrap(), Some(1));
        let got = links.page(2, a).unwrap().unwrap();
        assert_eq!(got, links.page(1, a).unwrap().unwrap());
        assert_eq!(got[0].target, "t1");
        let mut seen = Vec::new();
        links
            .each_link(2, |s, l| {
                seen.push((s.to_string(), l.links[0].target.to_string()));
                Ok(true)
            })
            .unwrap();
        assert_eq!(seen, [(a.to_string(), "t1".to_string())]);
        // What a worker finds for the same origin, and for another.
        assert_eq!(
            links.kept_before(2, a, 11).unwrap().map(|(s, _)| s),
            Some(1)
        );
        assert!(links.kept_before(2, a, 12).unwrap().is_none());
        assert!(links.kept_before(1, b, 11).unwrap().is_none());
        // Damaged: a reference to another origin, and to a sweep without the page.
        let mut batch = Batch::default();
        batch.put_raw::<Links>(&index, &key_of(2, b), &same_as(1, 99));
        batch.put_raw::<Links>(&index, &key_of(3, a), &same_as(5, 11));
        index.write(batch).unwrap();
        let e = links.page(2, b).unwrap_err().to_string();
        assert!(e.contains("links") && e.contains("another page's"), "{e}");
        let e = links.page(3, a).unwrap_err().to_string();
        assert!(e.contains("that sweep lacks"), "{e}");
        assert!(links.each_link(2, |_, _| Ok(true)).is_err());
        // Read unresolved (a generic reader), a reference is refused, not misread.
        assert!(with_page_links(&same_as(1, 11), |_| ()).is_err());
        assert_eq!(origin_of(&same_as(1, 11)), Some(11));
        assert_eq!(origin_of(&encode_page_links(&page("t"), 7)), Some(7));
    }

    /// What the pages of a sweep say about a URL reads the same through `inbound` and
    /// `anchor_targets` as by a scan of the sweep's links: the linking pages and their
    /// windows for every target (references resolved), and which anchors name several
    /// URLs; a URL no page links has none either way.
    #[test]
    fn inbound_entries_answer_as_the_scan_does() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path(), &crate::config::Config::default(), true).unwrap();
        let mut batch = Batch::default();
        let mut targets = std::collections::BTreeSet::new();
        for case in 0..240u64 {
            let host = ["example.org", "other.net", "third.com"][(case % 3) as usize];
            let url = format!("http://{host}/d/page{}.html", case % 97);
            let source = crate::url::surt(&url);
            let links = crate::links::random_page_links(case, &url);
            targets.extend(links.links.iter().map(|l| l.target.clone()));
            batch.put_raw::<Links>(
                &index,
                &key_of(1, &source),
                &encode_page_links(&links, case),
            );
            // Sweep 2 keeps every other page's links by a reference to sweep 1's.
            if case % 2 == 0 {
                batch.put_raw::<Links>(&index, &key_of(2, &source), &same_as(1, case));
            }
        }
        index.write(batch).unwrap();
        targets.insert("org,example)/linked-by-no-page".into());
        let targets: Vec<&str> = targets
            .iter()
            .map(|t| t.as_str())
            .take(INBOUND_LOOKUPS)
            .collect();
        let answers = |sweep: u32| {
            let inbound = index.links().inbound_many(sweep, &targets).unwrap();
            let anchors = crate::query::whereis::anchors_of(&inbound.iter().collect::<Vec<_>>());
            let spread = index.links().anchor_spread(sweep, &anchors).unwrap();
            (inbound, spread)
        };
        for sweep in [1, 2] {
            assert!(!index.inbound().of_sweep_built(sweep).unwrap());
            let scanned = answers(sweep);
            let mut linked = crate::links::inbound::LinkedBy::default();
            index
                .links()
                .each_link(sweep, |source, page| {
                    linked.add(source, page, &Tokens::of(page.words));
                    Ok(true)
                })
                .unwrap();
            super::super::inbound::write_sweep(&index, sweep, &linked).unwrap();
            assert!(index.inbound().of_sweep_built(sweep).unwrap());
            let read = answers(sweep);
            assert_eq!(read, scanned, "sweep {sweep}");
            assert!(scanned.0.iter().filter(|i| i.len() > 2).count() > 5);
            assert!(scanned.0.last().unwrap().is_empty());
            assert_ne!(scanned.1, AnchorSpread::default());
        }
    }
}
