//! What changed between two captures of a page, shown: the lines, words and links added
//! and removed, read from the WARC records themselves (no stored texts needed), with the
//! lines and links of the page's template folded away.
//!
//! A line (or a link) is template when it stands on other pages of the same part of the
//! site in the same sweep: up to [`NEIGHBOURS`] pages captured beside it (the same
//! directory of its URL, else the same host), read from their records too. A sidebar,
//! header or footer is on them; the page's own text is not. Lines of either version's
//! template are left out of both before the diff, as content resemblance leaves the
//! templates' shingles out of both sketches.
//!
//! A [`Reader`] keeps the pages it read and the neighbours it found, so that the many
//! diffs of one history or one change list read each record once.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::captures::{revisited, CaptureRange, MatchType};
use super::CaptureRow;
use crate::access::{self, Access};
use crate::canon::{media_kind, visible};
use crate::index::{Index, IndexError, Result};
use crate::read::{parse_response, record_at, RecordKind};

/// Pages beside a capture whose lines tell its template.
pub const NEIGHBOURS: usize = 4;

/// Captures scanned at most to find a capture's neighbours.
const NEIGHBOUR_SCAN: usize = 4096;

/// The most bytes of a record read to show its text.
const RECORD_CAP: usize = 16 << 20;

/// Pages a [`Reader`] keeps; past this it forgets them all and starts again.
const PAGES_KEPT: usize = 4096;

/// Where the WARC files of an index are: the paths they were ingested from, else by
/// name in the archive folders (`--archive`, `serve.archive_paths`).
#[derive(Debug, Clone, Default)]
pub struct Archive {
    /// (sweep id, file number) → the path it was ingested from.
    pub files: HashMap<(u32, u32), PathBuf>,
    /// Folders where files are looked up by name when they are not there.
    pub dirs: Vec<PathBuf>,
    /// Its answers go to the service's clients: a record that cannot be read is named
    /// by its file's name, not by the path on the server.
    pub served: bool,
}

/// A capture as a reader sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageText {
    /// Its text in lines ([`crate::canon::visible_lines`]).
    pub lines: Vec<String>,
    /// The targets of its links: absolute http(s) URLs, fragments dropped, distinct,
    /// sorted.
    pub links: Vec<String>,
}

impl Archive {
    /// The files of `index`, looked up also in `dirs`.
    pub fn new(index: &Index, dirs: &[PathBuf]) -> Result<Archive> {
        Ok(Archive {
            files: (index.files().names_by_number()?.into_iter())
                .map(|(k, name)| (k, PathBuf::from(name)))
                .collect(),
            dirs: dirs.to_vec(),
            served: false,
        })
    }

    /// The path of the file a capture was read from, if it is found.
    pub fn path(&self, row: &CaptureRow) -> Option<PathBuf> {
        locate(&self.files, &self.dirs, row)
    }

    /// The lines a reader sees of a capture (a revisit's from the record it repeats), or
    /// why they cannot be read.
    pub fn lines(
        &self,
        index: &Index,
        who: &access::Reader,
        row: &CaptureRow,
    ) -> std::result::Result<Vec<String>, String> {
        Ok(self.page(&source(index, who, row)?)?.lines)
    }

    /// The lines and links of the record of `row` (not a revisit: see [`source`]).
    fn page(&self, row: &CaptureRow) -> std::result::Result<PageText, String> {
        let path = self.path(row).ok_or_else(|| {
            format!(
                "the WARC file {} of the capture at {} is no longer where it was ingested from: name its folder with --archive (serve.archive_paths)",
                row.info.file, row.timestamp
            )
        })?;
        let rec =
            record_at(&path, row.info.offset, row.info.length, RECORD_CAP).map_err(
                |e| match self.served {
                    true => format!(
                        "{}: offset {}: the record cannot be read",
                        row.info.file, row.info.offset
                    ),
                    false => format!("{}: offset {}: {e}", path.display(), row.info.offset),
                },
            )?;
        let (payload, mime, charset) = match parse_response(&rec.block, RECORD_CAP) {
            Some(r) => {
                let (mime, charset) = (r.mime(), r.charset());
                (r.payload, mime, charset)
            }
            None => (rec.block.clone(), rec.field_str("Content-Type"), None),
        };
        let kind = media_kind(mime.as_deref().or(row.info.mime.as_deref()), &payload);
        let seen = visible(&payload, kind, charset.as_deref());
        Ok(PageText {
            links: absolute_links(&row.info.url, seen.base.as_deref(), &seen.hrefs),
            lines: seen.lines,
        })
    }
}

/// The capture whose record holds the text of `row`: itself, or the record a revisit
/// repeats.
pub fn source(
    index: &Index,
    who: &access::Reader,
    row: &CaptureRow,
) -> std::result::Result<CaptureRow, String> {
    if row.info.kind != RecordKind::Revisit {
        return Ok(row.clone());
    }
    revisited(index, who, row)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "the revisit of {} at {} repeats a record the index does not hold",
                row.info.url, row.timestamp
            )
        })
}

/// `hrefs` of a page at `url` as absolute http(s) URLs without fragments (resolved
/// against the page's `<base>` if it has one), distinct and sorted.
pub fn absolute_links(url: &str, base: Option<&str>, hrefs: &[String]) -> Vec<String> {
    let Ok(page) = url::Url::parse(url) else {
        return Vec::new();
    };
    let base = base.and_then(|b| page.join(b).ok()).unwrap_or(page);
    let out: BTreeSet<String> = hrefs
        .iter()
        .filter_map(|h| base.join(h).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(|mut u| {
            u.set_fragment(None);
            u.to_string()
        })
        .collect();
    out.into_iter().collect()
}

/// The path of the file a capture was read from: where it was ingested from (`files`, by
/// sweep and file number), else by its name in one of `dirs`.
pub fn locate(
    files: &HashMap<(u32, u32), PathBuf>,
    dirs: &[PathBuf],
    row: &CaptureRow,
) -> Option<PathBuf> {
    if let Some(p) = files.get(&row.file).filter(|p| p.is_file()) {
        return Some(p.clone());
    }
    let name = &row.info.file;
    if name.is_empty() || name.contains('/') || name.contains("..") {
        return None;
    }
    dirs.iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// How a capture differs from the one before, shown.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Shown {
    /// Lines of the earlier version that the later one lacks (template lines left out).
    pub lines_removed: Vec<String>,
    /// Lines of the later version that the earlier one lacks (likewise).
    pub lines_added: Vec<String>,
    /// Both, in the order of the page: each line `- removed` or `+ added`.
    pub lines: Vec<String>,
    /// Words of the removed lines.
    pub words_removed: u64,
    /// Words of the added lines.
    pub words_added: u64,
    /// Template lines that changed (removed or added), folded away: the chrome's change.
    pub template_lines_folded: u64,
    /// Neighbouring pages read to tell the template (of both versions' sweeps).
    pub template_pages: usize,
    /// Targets of the earlier version's links that the later one lacks (absolute URLs;
    /// the template's links left out, as its lines are).
    pub links_removed: Vec<String>,
    /// Targets of the later version's links that the earlier one lacks (likewise).
    pub links_added: Vec<String>,
}

/// Reads captures' pages and tells what changed between two of them, keeping what it
/// read: one reader for one history, one change list or one request.
pub struct Reader<'a> {
    index: &'a Index,
    archive: &'a Archive,
    /// Who reads (what it may see of the captures beside one).
    who: access::Reader,
    /// (sweep, file, offset) of a record → its page.
    pages: HashMap<(u32, u32, u64), Arc<PageText>>,
    /// (directory key prefix, sweep) → up to `NEIGHBOURS + 1` captures beside it.
    near: HashMap<(String, u32), Arc<Vec<CaptureRow>>>,
    /// The request's budget ran out ([`crate::index::budget`]): the caller stops.
    spent: Option<IndexError>,
}

/// A template: the lines and links on half the pages beside a capture, and how many of
/// them were read.
struct Template {
    lines: HashSet<String>,
    links: HashSet<String>,
    pages: usize,
}

impl<'a> Reader<'a> {
    /// A reader of the records of `index` where `archive` finds them, for `who`.
    pub fn new(index: &'a Index, archive: &'a Archive, who: access::Reader) -> Reader<'a> {
        Reader {
            index,
            archive,
            who,
            pages: HashMap::new(),
            near: HashMap::new(),
            spent: None,
        }
    }

    /// Why the reader stopped when the request's budget ran out (its time, its rows, or
    /// its client gone): the caller answers that error, not the rows read so far.
    pub fn budget_spent(&mut self) -> Option<IndexError> {
        self.spent.take()
    }

    /// Counts one record against the request's budget; an error once it is spent.
    fn spend(&mut self) -> std::result::Result<(), String> {
        if let Err(e) = crate::index::budget::spend() {
            let why = e.to_string();
            self.spent = Some(e);
            return Err(why);
        }
        Ok(())
    }

    /// What a reader sees of a capture (a revisit's from the record it repeats), or why
    /// it cannot be read.
    pub fn page(&mut self, row: &CaptureRow) -> std::result::Result<Arc<PageText>, String> {
        let src = source(self.index, &self.who, row)?;
        let key = (src.file.0, src.file.1, src.info.offset);
        if let Some(p) = self.pages.get(&key) {
            return Ok(p.clone());
        }
        self.spend()?;
        let page = Arc::new(self.archive.page(&src)?);
        if self.pages.len() >= PAGES_KEPT {
            self.pages.clear();
        }
        self.pages.insert(key, page.clone());
        Ok(page)
    }

    /// What changed from `old` to `new` (captures of one URL with text), read from their
    /// records and their neighbours' (see the module's notes); the plain word diff of
    /// the content lines beside it (`… [-removed-] {+added+} …`).
    pub fn shown(
        &mut self,
        old: &CaptureRow,
        new: &CaptureRow,
    ) -> std::result::Result<(Shown, String), String> {
        let (a, b) = (self.page(old)?, self.page(new)?);
        let (mut lines, mut links) = (HashSet::new(), HashSet::new());
        let mut pages = 0;
        for row in [old, new] {
            let t = self.template(row)?;
            lines.extend(t.lines);
            links.extend(t.links);
            pages += t.pages;
        }
        let mut out = diff_lines(&a.lines, &b.lines, &lines);
        out.template_pages = pages;
        let content = |p: &PageText| -> BTreeSet<String> {
            (p.links.iter())
                .filter(|l| !links.contains(*l))
                .cloned()
                .collect()
        };
        let (la, lb) = (content(&a), content(&b));
        out.links_removed = la.difference(&lb).cloned().collect();
        out.links_added = lb.difference(&la).cloned().collect();
        let content_lines = |p: &PageText| -> String {
            (p.lines.iter())
                .filter(|l| !lines.contains(*l))
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        };
        let words = word_diff(&content_lines(&a), &content_lines(&b));
        Ok((out, words))
    }

    /// The lines and links on at least half of (and at least one of) the pages beside
    /// `row` in its sweep.
    fn template(&mut self, row: &CaptureRow) -> std::result::Result<Template, String> {
        let near = match self.neighbours(row) {
            Ok(n) => n,
            Err(e) => {
                let why = e.to_string();
                if matches!(e, IndexError::OverBudget(_)) {
                    self.spent = Some(e);
                }
                return Err(why);
            }
        };
        let (mut lines, mut links): (HashMap<String, usize>, HashMap<String, usize>) =
            Default::default();
        let mut read = 0usize;
        for p in near.iter().filter(|p| p.surt != row.surt).take(NEIGHBOURS) {
            // A neighbour that cannot be read tells nothing; the page itself must be read.
            let Ok(page) = self.page(p) else {
                continue;
            };
            read += 1;
            for l in page.lines.iter().collect::<HashSet<_>>() {
                *lines.entry(l.clone()).or_default() += 1;
            }
            for l in &page.links {
                *links.entry(l.clone()).or_default() += 1;
            }
        }
        let need = read.div_ceil(2).max(1);
        let common = |m: HashMap<String, usize>| -> HashSet<String> {
            m.into_iter()
                .filter(|(_, c)| *c >= need)
                .map(|(l, _)| l)
                .collect()
        };
        Ok(Template {
            lines: common(lines),
            links: common(links),
            pages: read,
        })
    }

    /// Up to `NEIGHBOURS + 1` URLs' captures with text in the sweep of `row`, in its
    /// URL's directory first, then on its host (SURT order; at most [`NEIGHBOUR_SCAN`]
    /// captures scanned for each): those of the other URLs are its neighbours.
    fn neighbours(&mut self, row: &CaptureRow) -> Result<Arc<Vec<CaptureRow>>> {
        let key = row.surt.as_str();
        let host_end = key.find(')').map(|i| i + 1).unwrap_or(key.len());
        let dir_end = key[host_end..]
            .rfind('/')
            .map(|i| host_end + i + 1)
            .unwrap_or(key.len());
        let at = (key[..dir_end].to_string(), row.info.sweep);
        if let Some(n) = self.near.get(&at) {
            return Ok(n.clone());
        }
        let want = NEIGHBOURS + 1;
        let mut out: Vec<CaptureRow> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for prefix in [&key[..dir_end], &key[..host_end]] {
            if out.len() >= want {
                break;
            }
            let mut scanned = 0;
            CaptureRange::of_key(prefix, MatchType::Prefix, None, None).scan(
                self.index,
                &self.who,
                false,
                |_, r| {
                    scanned += 1;
                    // A blocked capture's text is not shown, nor does it shape another's.
                    if r.info.sweep == row.info.sweep
                        && self.who.access_of(&r.surt, &r.timestamp) != Access::Block
                        && r.ok()
                        && r.info.doc.is_some()
                        && r.info.kind != RecordKind::Revisit
                        && !seen.contains(&r.surt)
                    {
                        seen.insert(r.surt.clone());
                        out.push(r);
                    }
                    Ok(out.len() < want && scanned < NEIGHBOUR_SCAN)
                },
            )?;
        }
        let out = Arc::new(out);
        self.near.insert(at, out.clone());
        Ok(out)
    }
}

/// The lines of `a` and `b` outside `template`, diffed (patience, in page order), and the
/// template lines that changed, counted.
fn diff_lines(a: &[String], b: &[String], template: &HashSet<String>) -> Shown {
    let content = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|l| !template.contains(*l))
            .cloned()
            .collect()
    };
    let (ca, cb) = (content(a), content(b));
    let (ca, cb): (Vec<&str>, Vec<&str>) = (
        ca.iter().map(String::as_str).collect(),
        cb.iter().map(String::as_str).collect(),
    );
    let mut out = Shown::default();
    let (sa, sb): (HashSet<&str>, HashSet<&str>) = (
        a.iter().map(String::as_str).collect(),
        b.iter().map(String::as_str).collect(),
    );
    out.template_lines_folded = (a
        .iter()
        .filter(|l| template.contains(*l) && !sb.contains(l.as_str())))
    .chain(
        b.iter()
            .filter(|l| template.contains(*l) && !sa.contains(l.as_str())),
    )
    .count() as u64;
    let d = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Patience)
        .timeout(std::time::Duration::from_millis(500))
        .diff_slices(&ca, &cb);
    for ch in d.iter_all_changes() {
        let line = ch.value().to_string();
        let words = line.split_whitespace().count() as u64;
        match ch.tag() {
            similar::ChangeTag::Delete => {
                out.words_removed += words;
                out.lines.push(format!("- {line}"));
                out.lines_removed.push(line);
            }
            similar::ChangeTag::Insert => {
                out.words_added += words;
                out.lines.push(format!("+ {line}"));
                out.lines_added.push(line);
            }
            similar::ChangeTag::Equal => {}
        }
    }
    out
}

/// Words of unchanged context kept around each change.
const CONTEXT_WORDS: usize = 6;

/// A plain word diff (`[-old-]{+new+}`) of two canonical texts, unchanged runs cut to a
/// few words of context.
pub fn word_diff(old: &str, new: &str) -> String {
    use ::similar::{Algorithm, ChangeTag, TextDiff};
    let d = TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(std::time::Duration::from_millis(500))
        .diff_words(old, new);
    // Runs of (tag, words).
    let mut runs: Vec<(ChangeTag, Vec<&str>)> = Vec::new();
    for ch in d.iter_all_changes() {
        let w = ch.value();
        if w.trim().is_empty() {
            continue;
        }
        match runs.last_mut() {
            Some((t, v)) if *t == ch.tag() => v.push(w),
            _ => runs.push((ch.tag(), vec![w])),
        }
    }
    // Adjacent deletions and insertions become one `[-…-] {+…+}` pair.
    let mut merged: Vec<(ChangeTag, Vec<&str>, Vec<&str>)> = Vec::new();
    for (tag, words) in runs {
        match (tag, merged.last_mut()) {
            (ChangeTag::Equal, _) => merged.push((tag, words, Vec::new())),
            (ChangeTag::Delete, Some((ChangeTag::Delete, d, _))) => d.extend(words),
            (ChangeTag::Insert, Some((ChangeTag::Delete, _, i))) => i.extend(words),
            (ChangeTag::Delete, _) => merged.push((ChangeTag::Delete, words, Vec::new())),
            (ChangeTag::Insert, _) => merged.push((ChangeTag::Delete, Vec::new(), words)),
        }
    }
    let mut out: Vec<String> = Vec::new();
    let n = merged.len();
    for (i, (tag, words, inserted)) in merged.iter().enumerate() {
        match tag {
            ChangeTag::Equal => {
                let (first, last) = (i == 0, i + 1 == n);
                if words.len() <= 2 * CONTEXT_WORDS && !first && !last {
                    out.push(words.join(" "));
                } else {
                    if !first {
                        out.push(words[..CONTEXT_WORDS.min(words.len())].join(" "));
                    }
                    if words.len() > CONTEXT_WORDS || first || last {
                        out.push("…".into());
                    }
                    if !last {
                        let k = words.len().saturating_sub(CONTEXT_WORDS);
                        out.push(words[k..].join(" "));
                    }
                }
            }
            _ => {
                if !words.is_empty() {
                    out.push(format!("[-{}-]", words.join(" ")));
                }
                if !inserted.is_empty() {
                    out.push(format!("{{+{}+}}", inserted.join(" ")));
                }
            }
        }
    }
    out.retain(|s| !s.is_empty());
    out.dedup_by(|a, b| a == "…" && b == "…");
    out.join(" ")
}
