//! An analyst's change list (`report --changes`, `/api/changes`): every URL that changed
//! between two sweeps, most significant first, with what changed — its status before
//! and after, its resemblance on all its text and on its content, its title, and (read
//! from the WARC records of the rows shown) the words and links added and removed.
//!
//! A URL is compared by its last capture in each of the two sweeps, as the report
//! classes it: both 2xx with other text → `changed_minor`, `changed_major` or
//! `rewritten` by *content* resemblance (the hosts' templates left out), or
//! `template_only` when its content stayed (≥ `report.minor`) while its text did not;
//! 2xx then 3xx → `redirected`; 2xx then an error or no capture → `gone`; not 2xx then
//! 2xx → `new`; neither 2xx and another status (or target) → `status`. Between two
//! consecutive sweeps the counts of these kinds are the report's.
//!
//! Template-only changes are folded into one row per host, or per section where the
//! host as a whole did not change its template ([`super::sections`]).
//!
//! The order is [`SCORE`]'s, computed from the index alone, so that one page of the
//! list reads the records of its own rows only.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{dirs_of, host_name, sections, sweeps_in_range, ReportOptions, TemplateChange};
use crate::access::{Access, Reader as Who};
use crate::index::columns::captures::templates_seen;
use crate::index::{Index, IndexError, Result};
use crate::query::captures::{CaptureRange, MatchType};
use crate::query::diff::{source, Archive, Reader};
use crate::query::whereis::{whereis, Status, WhereisOptions};
use crate::query::{resemblances, round3, CaptureRow, Searcher};
use crate::sketch::estimate;
use crate::url::{host_of_surt, surt};

/// How rows are ordered, as the list states it.
pub const SCORE: &str = "score = 4 × (the status changed to or from 2xx — no capture is not 2xx — or from one 2xx code to another) + 2 × (gone or rewritten) + (1 − content resemblance; 1 where none was measured) + 0.5 × (the title changed, both versions with text); a folded template-only row: 1 − its pages' mean content resemblance. Highest first, then by URL.";

/// What to list.
#[derive(Clone)]
pub struct ChangesOptions {
    /// The two sweeps (`from`: default the sweep before `to`; `to`: default the last),
    /// the host and the bands, as the report's.
    pub report: ReportOptions,
    /// Rows of the ordered list skipped.
    pub offset: usize,
    /// Rows listed at most (none: all).
    pub limit: Option<usize>,
    /// Where the WARC files are: the words and links of the rows listed are read from
    /// their records; none: not read.
    pub archive: Option<Archive>,
    /// Told (rows read, rows to read) as the records are read: a progress bar.
    pub progress: Option<std::sync::Arc<dyn Fn(u64, u64) + Send + Sync>>,
}

/// One changed URL, or a host's or section's template-only changes folded.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChangeRow {
    /// The URL (as captured in the later sweep, else the earlier); for a folded row the
    /// host and section, `llvm.org/docs/`.
    pub url: String,
    /// `gone`, `redirected`, `new`, `status`, `rewritten`, `changed_major`,
    /// `changed_minor` or `template_only`.
    pub kind: &'static str,
    /// Significance ([`SCORE`]), 3 decimals.
    pub score: f64,
    /// URLs the row stands for: 1, or the template-only pages folded.
    pub pages: u64,
    /// Host.
    pub host: String,
    /// A folded row's section (a path prefix, as in the SURT keys); null for a host.
    pub section: Option<String>,
    /// HTTP status of the last capture in the earlier sweep (null: none, or none given).
    pub status_before: Option<u16>,
    /// The same in the later sweep.
    pub status_after: Option<u16>,
    /// The earlier capture (14 digits).
    pub timestamp_before: Option<String>,
    /// The later capture.
    pub timestamp_after: Option<String>,
    /// Resemblance of the two versions on all their text (both with text).
    pub resemblance: Option<f64>,
    /// The same with the hosts' templates left out.
    pub content_resemblance: Option<f64>,
    /// `<title>` of the earlier version.
    pub title_before: Option<String>,
    /// `<title>` of the later version.
    pub title_after: Option<String>,
    /// Both versions have text and their titles differ.
    pub title_changed: bool,
    /// Target of the later capture's redirect.
    pub redirect_to: Option<String>,
    /// For a page gone or redirected: its newest URL as `whereis` finds it (by its
    /// redirects and content moves), when it moved.
    pub moved_to: Option<String>,
    /// Words of the content lines added (read from the records; template lines left
    /// out). Null when not read: one side without text, a folded row, or `unread`.
    pub words_added: Option<u64>,
    /// Words of the content lines removed.
    pub words_removed: Option<u64>,
    /// Links (anchors' targets, absolute) the later version has and the earlier lacks,
    /// the template's left out.
    pub links_added: Option<u64>,
    /// Links the earlier version has and the later lacks.
    pub links_removed: Option<u64>,
    /// Why the records were not read, when they were to be.
    pub unread: Option<String>,
}

/// The list.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChangeList {
    /// Earlier sweep (label).
    pub from: String,
    /// Later sweep.
    pub to: String,
    /// How the rows are ordered ([`SCORE`]).
    pub score: &'static str,
    /// URLs that changed.
    pub urls_changed: u64,
    /// Of them, template-only changes (folded).
    pub template_only: u64,
    /// Rows of the whole list (template-only changes folded).
    pub rows_total: u64,
    /// Rows skipped before these.
    pub offset: u64,
    /// The rows, most significant first.
    pub rows: Vec<ChangeRow>,
}

/// A URL's last capture in each of the two sweeps.
#[derive(Default)]
struct Pair {
    before: Option<CaptureRow>,
    after: Option<CaptureRow>,
}

/// 2xx (or no status): the report's `Live`.
fn live(r: &Option<CaptureRow>) -> bool {
    r.as_ref().is_some_and(CaptureRow::ok)
}

/// A row, and the two captures whose records tell its words and links.
type Found = (ChangeRow, Option<(CaptureRow, CaptureRow)>);

fn is_3xx(r: &CaptureRow) -> bool {
    r.info.status.is_some_and(|s| (300..400).contains(&s))
}

/// Builds the list.
pub fn changes(index: &Index, who: &Who, opts: &ChangesOptions) -> Result<ChangeList> {
    page(index, who, &ordered(index, who, &opts.report)?, opts)
}

/// The whole list of two sweeps in its order, no record read: one pass over the index,
/// which [`page`] pages (the service keeps it per snapshot, view and range).
#[derive(Debug, Clone)]
pub struct Ordered {
    from: String,
    to: String,
    urls_changed: u64,
    template_only: u64,
    rows: Vec<Found>,
}

impl Ordered {
    /// Bytes it holds, about: each row's fixed part, its texts (as the length of its
    /// JSON: with the fields' names, more than their heap bytes) and its captures'.
    pub fn weight(&self) -> usize {
        let mut bytes = std::mem::size_of::<Ordered>() + self.from.len() + self.to.len();
        for (row, captures) in &self.rows {
            bytes += std::mem::size_of::<Found>();
            bytes += serde_json::to_vec(row).map_or(0, |j| j.len());
            if let Some((a, b)) = captures {
                bytes += a.heap_bytes() + b.heap_bytes();
            }
        }
        bytes
    }
}

/// The ordered list of `report`'s two sweeps (see [`changes`]).
pub fn ordered(index: &Index, who: &Who, report: &ReportOptions) -> Result<Ordered> {
    let s = Searcher::with(index, &crate::query::Prepared::load(index)?, who.clone());
    let opts = ChangesOptions {
        report: report.clone(),
        offset: 0,
        limit: None,
        archive: None,
        progress: None,
    };
    let (all, lo, hi) = sweeps_in_range(index, who, &opts.report)?;
    // Without --from: the sweep before --to.
    let lo = match opts.report.from {
        Some(_) => lo,
        None => hi.saturating_sub(1),
    };
    if lo >= hi {
        return Err(IndexError::Invalid(format!(
            "a change list compares two sweeps: {} is both (give --from an earlier sweep than --to; the index has {})",
            all[hi].1,
            match all.len() {
                1 => "one sweep".to_string(),
                n => format!("{n} sweeps"),
            }
        )));
    }
    let (a, b) = (all[lo].0, all[hi].0);
    // Consecutive sweeps: the resemblances the ingest stored, as the report reads them.
    let consecutive = hi == lo + 1;
    let host_filter = (opts.report.host.as_ref()).map(|h| host_of_surt(&surt(h)).to_string());
    let prefix = host_filter.clone().unwrap_or_default();
    let (minor, major) = (opts.report.minor, opts.report.major);

    let mut rows: Vec<Found> = Vec::new();
    // Template-only pages: (host, dirs) → their content resemblances.
    let mut only: BTreeMap<(String, String, String), Vec<f64>> = BTreeMap::new();
    // (host, dirs) → (template-only pages, URLs live in both), for sections.
    let mut dirs: BTreeMap<(String, String, String), (u64, u64)> = BTreeMap::new();
    let mut cur = Pair::default();
    let mut cur_surt = String::new();
    let mut finish = |key: &str, p: &mut Pair| -> Result<()> {
        let p = std::mem::take(p);
        let host = host_of_surt(key).to_string();
        if host_filter.as_ref().is_some_and(|h| *h != host) {
            return Ok(());
        }
        let both = live(&p.before) && live(&p.after);
        let Some((row, pair)) = classify(&s, key, &host, p, (a, b), consecutive, (minor, major))?
        else {
            return Ok(());
        };
        let d = dirs_of(&host, key);
        if both {
            dirs.entry(d.clone()).or_default().1 += 1;
        }
        match row.kind {
            "unchanged" => {}
            "template_only" => {
                dirs.entry(d.clone()).or_default().0 += 1;
                only.entry(d)
                    .or_default()
                    .push(row.content_resemblance.unwrap_or(1.0));
            }
            _ => rows.push((row, pair)),
        }
        Ok(())
    };
    CaptureRange::of_key(&prefix, MatchType::Prefix, None, None).scan(
        index,
        who,
        false,
        |_, r| {
            if r.surt != cur_surt {
                if !cur_surt.is_empty() {
                    finish(&cur_surt, &mut cur)?;
                }
                cur_surt = r.surt.clone();
            }
            if r.info.sweep == a {
                cur.before = Some(r);
            } else if r.info.sweep == b {
                cur.after = Some(r);
            }
            Ok(true)
        },
    )?;
    if !cur_surt.is_empty() {
        finish(&cur_surt, &mut cur)?;
    }
    let template_only: u64 = only.values().map(|v| v.len() as u64).sum();
    let urls_changed = rows.len() as u64 + template_only;
    rows.extend(
        folded(index, who, (a, b), &only, &dirs)?
            .into_iter()
            .map(|r| (r, None)),
    );
    rows.sort_by(|(x, _), (y, _)| {
        y.score
            .total_cmp(&x.score)
            .then_with(|| x.url.cmp(&y.url))
            .then_with(|| x.timestamp_after.cmp(&y.timestamp_after))
    });
    Ok(Ordered {
        from: all[lo].1.clone(),
        to: all[hi].1.clone(),
        urls_changed,
        template_only,
        rows,
    })
}

/// The rows of `list` that `opts` asks (offset, limit), with where a gone page moved and
/// what its records say (`opts.archive`).
pub fn page(index: &Index, who: &Who, list: &Ordered, opts: &ChangesOptions) -> Result<ChangeList> {
    let s = Searcher::with(index, &crate::query::Prepared::load(index)?, who.clone());
    let rows_total = list.rows.len() as u64;
    let mut page: Vec<Found> = (list.rows.iter())
        .skip(opts.offset)
        .take(opts.limit.unwrap_or(usize::MAX))
        .cloned()
        .collect();
    for (row, _) in page.iter_mut() {
        if matches!(row.kind, "gone" | "redirected") {
            let w = whereis(
                &s,
                &row.url,
                WhereisOptions {
                    move_floor: opts.report.move_floor,
                    links: false,
                },
            )?;
            if w.status == Status::Moved {
                row.moved_to = w.newest_url;
            }
        }
    }
    if let Some(archive) = &opts.archive {
        read_records(index, who, archive, &mut page, opts.progress.as_deref())?;
    }
    let rows = page.into_iter().map(|(r, _)| r).collect();
    Ok(ChangeList {
        from: list.from.clone(),
        to: list.to.clone(),
        score: SCORE,
        urls_changed: list.urls_changed,
        template_only: list.template_only,
        rows_total,
        offset: opts.offset as u64,
        rows,
    })
}

/// The row of one URL, from its last capture in each sweep (`unchanged` rows are
/// counted, not listed); none when it is in neither, or not 2xx in either with the same
/// status.
fn classify(
    s: &Searcher,
    key: &str,
    host: &str,
    p: Pair,
    (a, b): (u32, u32),
    consecutive: bool,
    (minor, major): (f64, f64),
) -> Result<Option<Found>> {
    let (before, after) = (&p.before, &p.after);
    let (lb, la) = (live(before), live(after));
    let status = |r: &Option<CaptureRow>| r.as_ref().and_then(|r| r.info.status);
    let url = (after.as_ref().or(before.as_ref()))
        .map(|r| r.info.url.clone())
        .unwrap_or_default();
    let title = |r: &Option<CaptureRow>| -> Result<Option<String>> {
        match r.as_ref().and_then(|r| r.info.doc.map(|d| (r, d))) {
            Some((r, d)) if s.reader().access_of(&r.surt, &r.timestamp) != Access::Block => {
                Ok(s.index.doc(d)?.and_then(|i| i.title))
            }
            _ => Ok(None),
        }
    };
    let mut row = ChangeRow {
        url,
        kind: "unchanged",
        score: 0.0,
        pages: 1,
        host: host_name(host),
        section: None,
        status_before: status(before),
        status_after: status(after),
        timestamp_before: before.as_ref().map(|r| r.timestamp.clone()),
        timestamp_after: after.as_ref().map(|r| r.timestamp.clone()),
        resemblance: None,
        content_resemblance: None,
        title_before: None,
        title_after: None,
        title_changed: false,
        redirect_to: after
            .as_ref()
            .and_then(|r| r.redirect().map(str::to_string)),
        moved_to: None,
        words_added: None,
        words_removed: None,
        links_added: None,
        links_removed: None,
        unread: None,
    };
    // The status as the score sees it: to or from 2xx, or from one 2xx code to another
    // (a change among errors, redirects and no capture is a `status` row of score 1).
    let status_changed = lb != la || (lb && la && status(before) != status(after));
    let other_status =
        |r: &Option<CaptureRow>| r.as_ref().map(|r| (r.info.status, r.info.redirect.clone()));
    match (lb, la) {
        (true, true) => {
            let (Some(x), Some(y)) = (before, after) else {
                return Ok(None);
            };
            let same = match (x.info.doc, y.info.doc) {
                (Some(d), Some(e)) => d == e,
                (None, None) => x.info.digest.is_some() && x.info.digest == y.info.digest,
                _ => false,
            };
            if same {
                row.resemblance = Some(1.0);
                return Ok(Some((row, None)));
            }
            let (r, cr, stored) = resemblance_of(s, key, x, y, (a, b), consecutive)?;
            row.resemblance = r.map(round3);
            row.content_resemblance = cr.map(round3);
            row.kind = match cr {
                Some(c) if c >= minor => {
                    if stored && r.is_some_and(|r| r < minor) {
                        "template_only"
                    } else {
                        "changed_minor"
                    }
                }
                Some(c) if c >= major => "changed_major",
                _ => "rewritten",
            };
            // Changed bytes without text to compare (an image, a PDF) are `rewritten`, as
            // the report counts them, with no resemblance.
        }
        (true, false) => {
            row.kind = if after.as_ref().is_some_and(is_3xx) {
                "redirected"
            } else {
                "gone"
            };
        }
        (false, true) => row.kind = "new",
        (false, false) => {
            if before.is_none() && after.is_none() {
                return Ok(None);
            }
            if other_status(before) == other_status(after) {
                return Ok(None);
            }
            row.kind = "status";
        }
    }
    let pair = match (before, after) {
        (Some(x), Some(y)) if lb && la && x.info.doc.is_some() && y.info.doc.is_some() => {
            Some((x.clone(), y.clone()))
        }
        _ => None,
    };
    row.title_before = title(before)?;
    row.title_after = title(after)?;
    // Both titles read: both versions with text, neither blocked.
    row.title_changed = lb
        && la
        && [before, after].iter().all(|r| {
            r.as_ref().is_some_and(|r| {
                r.info.doc.is_some() && s.reader().access_of(&r.surt, &r.timestamp) != Access::Block
            })
        })
        && row.title_before != row.title_after;
    let rewritten = matches!(row.kind, "gone" | "rewritten");
    row.score = round3(
        4.0 * f64::from(u8::from(status_changed))
            + 2.0 * f64::from(u8::from(rewritten))
            + (1.0 - row.content_resemblance.unwrap_or(0.0))
            + 0.5 * f64::from(u8::from(row.title_changed)),
    );
    Ok(Some((row, pair)))
}

/// Full and content resemblance of two versions with text, and whether both were
/// measured (the ingest's for consecutive sweeps, as the report reads them; else from
/// the sketches and the hosts' templates).
fn resemblance_of(
    s: &Searcher,
    key: &str,
    x: &CaptureRow,
    y: &CaptureRow,
    (a, b): (u32, u32),
    consecutive: bool,
) -> Result<(Option<f64>, Option<f64>, bool)> {
    let (Some(dx), Some(dy)) = (x.info.doc, y.info.doc) else {
        return Ok((None, None, false));
    };
    if consecutive {
        // As the report's tally: the ingest's figures, else the full estimate for both.
        let r = match y.info.r_prev {
            Some(r) => Some(f64::from(r)),
            None => match (s.sketch(dx)?, s.sketch(dy)?) {
                (Some(p), Some(q)) => Some(estimate(&p, &q).resemblance),
                _ => None,
            },
        };
        let cr = y.info.cr_prev.filter(|_| y.info.r_prev.is_some());
        return Ok((r, cr.map(f64::from).or(r), cr.is_some()));
    }
    let mut docs = [dx, dy];
    docs.sort_unstable();
    let sk = s.compact_sketches(&docs)?;
    let get = |d: u64| sk.iter().find(|(e, _)| *e == d).map(|(_, c)| c);
    let (Some(sx), Some(sy)) = (get(dx), get(dy)) else {
        return Ok((None, None, false));
    };
    let (tx, ty) = (s.template(key, a)?, s.template(key, b)?);
    let r = resemblances(sx, &tx, sy, &ty);
    Ok((Some(r.full), Some(r.content), true))
}

/// Template-only pages folded: one row per host whose template changed as the report
/// names it, else one per section of the host ([`sections`]) when it has two or more,
/// else one for the host.
fn folded(
    index: &Index,
    who: &Who,
    (a, b): (u32, u32),
    only: &BTreeMap<(String, String, String), Vec<f64>>,
    dirs: &BTreeMap<(String, String, String), (u64, u64)>,
) -> Result<Vec<ChangeRow>> {
    let mut by_host: BTreeMap<&str, Vec<(&(String, String, String), &(u64, u64))>> =
        BTreeMap::new();
    for (k, v) in dirs {
        by_host.entry(k.0.as_str()).or_default().push((k, v));
    }
    let mut out = Vec::new();
    for (host, hd) in by_host {
        let (pages, both) = hd.iter().fold((0, 0), |(p, q), (_, (o, n))| (p + o, q + n));
        if pages == 0 {
            continue;
        }
        let share = match (
            templates_seen::template(index, who, host, a)?,
            templates_seen::template(index, who, host, b)?,
        ) {
            (Some(x), Some(y)) => Some(crate::template::changed_share(&x, &y)),
            _ => None,
        };
        let whole = TemplateChange::of_host(host, share, pages, both);
        let secs = sections(&hd);
        let by_section = !whole.is_redesign() && secs.len() >= 2;
        // Content resemblances of the host's template-only pages, by section.
        let mut groups: BTreeMap<Option<String>, Vec<f64>> = BTreeMap::new();
        for (d, v) in only.range((host.to_string(), String::new(), String::new())..) {
            if d.0 != host {
                break;
            }
            let section = by_section.then(|| {
                secs.iter()
                    .find(|(s, _)| *s == d.1 || *s == d.2)
                    .map(|(s, _)| s.clone())
                    .unwrap_or_else(|| d.1.clone())
            });
            groups.entry(section).or_default().extend(v);
        }
        for (section, crs) in groups {
            let mean = crs.iter().sum::<f64>() / crs.len() as f64;
            out.push(ChangeRow {
                url: format!("{}{}", host_name(host), section.as_deref().unwrap_or("/")),
                kind: "template_only",
                score: round3(1.0 - mean),
                pages: crs.len() as u64,
                host: host_name(host),
                section,
                status_before: None,
                status_after: None,
                timestamp_before: None,
                timestamp_after: None,
                resemblance: None,
                content_resemblance: Some(round3(mean)),
                title_before: None,
                title_after: None,
                title_changed: false,
                redirect_to: None,
                moved_to: None,
                words_added: None,
                words_removed: None,
                links_added: None,
                links_removed: None,
                unread: None,
            });
        }
    }
    Ok(out)
}

/// Words and links added and removed of the rows whose two versions have text, read
/// from their records (a blocked capture's are not read); `progress` told of each row.
fn read_records(
    index: &Index,
    who: &Who,
    archive: &Archive,
    rows: &mut [Found],
    progress: Option<&(dyn Fn(u64, u64) + Send + Sync)>,
) -> Result<()> {
    let mut reader = Reader::new(index, archive, who.clone());
    let total = rows.len() as u64;
    for (i, (row, pair)) in rows.iter_mut().enumerate() {
        if let Some(p) = progress {
            p(i as u64, total);
        }
        let Some((x, y)) = pair else { continue };
        // A revisit's text is its original record's: both must be open to the reader.
        let blocked = [&*x, &*y].iter().any(|c| {
            who.access_of(&c.surt, &c.timestamp) == Access::Block
                || source(index, who, c)
                    .is_ok_and(|o| who.access_of(&o.surt, &o.timestamp) == Access::Block)
        });
        if blocked {
            row.unread = Some("a capture is blocked by the access rules".into());
            continue;
        }
        let shown = reader.shown(x, y);
        if let Some(e) = reader.budget_spent() {
            return Err(e);
        }
        match shown {
            Ok((shown, _)) => {
                row.words_added = Some(shown.words_added);
                row.words_removed = Some(shown.words_removed);
                row.links_added = Some(shown.links_added.len() as u64);
                row.links_removed = Some(shown.links_removed.len() as u64);
            }
            Err(why) => row.unread = Some(why),
        }
    }
    Ok(())
}
