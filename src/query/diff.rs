//! What changed between two captures of a page, shown: the lines and words added and
//! removed, read from the WARC records themselves (no stored texts needed), with the
//! lines of the page's template folded away.
//!
//! A line is template when it stands on other pages of the same part of the site in
//! the same sweep: up to [`NEIGHBOURS`] pages captured beside it (the same directory of
//! its URL, else the same host), read from their records too. A sidebar, header or
//! footer is on them; the page's own text is not. Lines of either version's template
//! are left out of both before the diff, as content resemblance leaves the templates'
//! shingles out of both sketches.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde::Serialize;

use super::captures::{revisited, CaptureRange, MatchType};
use super::CaptureRow;
use crate::canon::{media_kind, visible_lines};
use crate::index::{Index, Result};
use crate::read::{parse_response, record_at, RecordKind};

/// Pages beside a capture whose lines tell its template.
pub const NEIGHBOURS: usize = 4;

/// Captures scanned at most to find a capture's neighbours.
const NEIGHBOUR_SCAN: usize = 4096;

/// The most bytes of a record read to show its text.
const RECORD_CAP: usize = 16 << 20;

/// Where the WARC files of an index are: the paths they were ingested from, else by
/// name in the archive folders (`--archive`, `serve.archive_paths`).
#[derive(Debug, Clone, Default)]
pub struct Archive {
    /// (sweep id, file number) → the path it was ingested from.
    pub files: HashMap<(u32, u32), PathBuf>,
    /// Folders where files are looked up by name when they are not there.
    pub dirs: Vec<PathBuf>,
}

impl Archive {
    /// The files of `index`, looked up also in `dirs`.
    pub fn new(index: &Index, dirs: &[PathBuf]) -> Result<Archive> {
        Ok(Archive {
            files: (index.files().names_by_number()?.into_iter())
                .map(|(k, name)| (k, PathBuf::from(name)))
                .collect(),
            dirs: dirs.to_vec(),
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
        row: &CaptureRow,
    ) -> std::result::Result<Vec<String>, String> {
        let source = if row.info.kind == RecordKind::Revisit {
            revisited(index, row)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!(
                        "the revisit of {} at {} repeats a record the index does not hold",
                        row.info.url, row.timestamp
                    )
                })?
        } else {
            row.clone()
        };
        let path = self.path(&source).ok_or_else(|| {
            format!(
                "the WARC file {} of the capture at {} is no longer where it was ingested from: name its folder with --archive (serve.archive_paths)",
                source.info.file, source.timestamp
            )
        })?;
        let rec = record_at(&path, source.info.offset, source.info.length, RECORD_CAP)
            .map_err(|e| format!("{}: offset {}: {e}", path.display(), source.info.offset))?;
        let (payload, mime, charset) = match parse_response(&rec.block, RECORD_CAP) {
            Some(r) => {
                let (mime, charset) = (r.mime(), r.charset());
                (r.payload, mime, charset)
            }
            None => (rec.block.clone(), rec.field_str("Content-Type"), None),
        };
        let kind = media_kind(mime.as_deref().or(source.info.mime.as_deref()), &payload);
        Ok(visible_lines(&payload, kind, charset.as_deref()))
    }
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
}

/// What changed from `old` to `new` (captures of one URL with text), read from their
/// records and their neighbours' (see the module's notes); the plain word diff of the
/// content lines beside it (`… [-removed-] {+added+} …`).
pub fn shown(
    index: &Index,
    archive: &Archive,
    old: &CaptureRow,
    new: &CaptureRow,
) -> std::result::Result<(Shown, String), String> {
    let (a, b) = (archive.lines(index, old)?, archive.lines(index, new)?);
    let mut template: HashSet<String> = HashSet::new();
    let mut pages = 0;
    for row in [old, new] {
        let (lines, n) = template_lines(index, archive, row)?;
        template.extend(lines);
        pages += n;
    }
    let (ca, cb): (Vec<&str>, Vec<&str>) = (
        a.iter()
            .filter(|l| !template.contains(*l))
            .map(|l| l.as_str())
            .collect(),
        b.iter()
            .filter(|l| !template.contains(*l))
            .map(|l| l.as_str())
            .collect(),
    );
    let mut out = Shown {
        template_pages: pages,
        ..Default::default()
    };
    let (sa, sb): (HashSet<&str>, HashSet<&str>) = (
        a.iter().map(|l| l.as_str()).collect(),
        b.iter().map(|l| l.as_str()).collect(),
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
    let words = word_diff(&ca.join("\n"), &cb.join("\n"));
    Ok((out, words))
}

/// The lines on at least half of (and at least one of) the pages beside `row` in its
/// sweep, and how many pages were read.
fn template_lines(
    index: &Index,
    archive: &Archive,
    row: &CaptureRow,
) -> std::result::Result<(HashSet<String>, usize), String> {
    let pages = neighbours(index, row).map_err(|e| e.to_string())?;
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut read = 0usize;
    for p in &pages {
        // A neighbour that cannot be read tells nothing; the page itself must be read.
        let Ok(lines) = archive.lines(index, p) else {
            continue;
        };
        read += 1;
        for l in lines.into_iter().collect::<HashSet<_>>() {
            *counts.entry(l).or_default() += 1;
        }
    }
    let need = read.div_ceil(2).max(1);
    Ok((
        counts
            .into_iter()
            .filter(|(_, c)| *c >= need)
            .map(|(l, _)| l)
            .collect(),
        read,
    ))
}

/// Up to [`NEIGHBOURS`] other URLs' captures with text in the sweep of `row`: in its
/// URL's directory first, then on its host (SURT order; at most [`NEIGHBOUR_SCAN`]
/// captures scanned for each).
fn neighbours(index: &Index, row: &CaptureRow) -> Result<Vec<CaptureRow>> {
    let key = row.surt.as_str();
    let host_end = key.find(')').map(|i| i + 1).unwrap_or(key.len());
    let dir_end = key[host_end..]
        .rfind('/')
        .map(|i| host_end + i + 1)
        .unwrap_or(key.len());
    let mut out: Vec<CaptureRow> = Vec::new();
    let mut seen: HashSet<String> = HashSet::from([row.surt.clone()]);
    for prefix in [&key[..dir_end], &key[..host_end]] {
        if out.len() >= NEIGHBOURS {
            break;
        }
        let mut scanned = 0;
        CaptureRange::of_key(prefix, MatchType::Prefix, None, None).scan(
            index,
            false,
            |_, r| {
                scanned += 1;
                if r.info.sweep == row.info.sweep
                    && r.ok()
                    && r.info.doc.is_some()
                    && r.info.kind != RecordKind::Revisit
                    && !seen.contains(&r.surt)
                {
                    seen.insert(r.surt.clone());
                    out.push(r);
                }
                Ok(out.len() < NEIGHBOURS && scanned < NEIGHBOUR_SCAN)
            },
        )?;
    }
    Ok(out)
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
