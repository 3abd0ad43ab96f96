//! `tidemark whereis`, `history`, `similar`, `cluster`: thin printers over [`tidemark::query`].

use std::io::Write;
use std::path::{Path, PathBuf};

use tidemark::query::history::history;
use tidemark::query::similar::{similar, Input, SimilarOptions};
use tidemark::query::whereis::{whereis, Status, WhereisOptions};
use tidemark::query::{
    cluster::{cluster, cluster_list},
    Searcher,
};

use super::{open_for_reading, stdout, Globals, EXIT_OK, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub struct UrlArgs {
    /// The URL (any form of it: scheme, `www.`, case and trailing slash do not matter).
    #[arg(value_name = "URL")]
    pub url: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// The URL (any form of it: scheme, `www.`, case and trailing slash do not matter).
    #[arg(value_name = "URL")]
    pub url: String,
    /// Show what changed in each changed version: the lines and words removed and
    /// added, read from the WARC records (where they were ingested from, or by name in
    /// --archive), with the lines of the site's template (on the pages beside it) folded
    /// away.
    #[arg(long)]
    pub diff: bool,
    /// A folder where WARC files are found by name (repeatable; added to
    /// serve.archive_paths), when the path a file was ingested from no longer holds one.
    #[arg(long, value_name = "DIR", requires = "diff")]
    pub archive: Vec<std::path::PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct SimilarArgs {
    /// A URL in the index (its latest content is compared).
    #[arg(
        value_name = "URL",
        required_unless_present_any = ["file", "doc"],
        conflicts_with_all = ["file", "doc"]
    )]
    pub url: Option<String>,
    /// Compare a doc of the index (e.g. an older version, from `history`).
    #[arg(long, value_name = "N", conflicts_with = "file")]
    pub doc: Option<u64>,
    /// Compare a file instead: an HTML or text document, or a WARC/ARC file (its first
    /// record with text). Need not be in the index.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Least resemblance (or containment, with --containment) to report.
    #[arg(long, value_name = "T", default_value_t = 0.5)]
    pub threshold: f64,
    /// Rank by containment of the input in each page: pages that contain it (quotes,
    /// excerpts, pages that grew around it).
    #[arg(long)]
    pub containment: bool,
    /// Most results.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ClusterArgs {
    /// The URL whose latest content's cluster to list.
    #[arg(
        value_name = "URL",
        required_unless_present = "urls",
        conflicts_with = "urls"
    )]
    pub url: Option<String>,
    /// A list of URLs (one a line, `-` for standard input; blank lines and lines
    /// starting with `#` skipped), as a search engine's result page: answered grouped
    /// into near-duplicate clusters in the list's order, the first URL of each group
    /// shown with the list's other URLs in the same cluster.
    #[arg(long, value_name = "FILE")]
    pub urls: Option<PathBuf>,
    /// Most members listed (the size is always the whole cluster's).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct InlinksArgs {
    /// The URL linked to (it need not have been captured).
    #[arg(value_name = "URL")]
    pub url: String,
    /// The sweep whose pages are read (its label); default the newest.
    #[arg(long, value_name = "LABEL")]
    pub sweep: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct RelatedArgs {
    /// The URL whose related pages are wanted (pages of the sweep must link it; it need
    /// not have been captured).
    #[arg(value_name = "URL")]
    pub url: String,
    /// The sweep whose links are read (its label); default the newest.
    #[arg(long, value_name = "LABEL")]
    pub sweep: Option<String>,
    /// Pages listed at most.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub limit: usize,
    /// Rank by the mean of the anchor resemblance and the content resemblance (both
    /// pages' captures in the sweep, their templates left out).
    #[arg(long)]
    pub with_content: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn check_url(cmd: &str, url: &str) -> Option<u8> {
    match tidemark::url::check(url) {
        Ok(()) => None,
        Err(e) => {
            eprintln!("tidemark {cmd}: {e}");
            Some(EXIT_USAGE)
        }
    }
}

fn where_opts(g: &Globals) -> WhereisOptions {
    WhereisOptions {
        move_floor: g.config.query.move_floor,
        links: true,
    }
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "-".into())
}

pub fn run_whereis(g: &Globals, a: UrlArgs) -> anyhow::Result<u8> {
    if let Some(code) = check_url("whereis", &a.url) {
        return Ok(code);
    }
    let index = open_for_reading(g)?;
    let s = Searcher::everything(&index)?;
    let w = whereis(&s, &a.url, where_opts(g))?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &w)?;
        writeln!(out)?;
        return Ok(EXIT_OK);
    }
    let status = match w.status {
        Status::Alive => "alive",
        Status::Moved => "moved",
        Status::Gone => "gone",
        Status::Unknown => "unknown (never captured)",
    };
    writeln!(out, "{}  {status}", w.url)?;
    if let Some(u) = &w.newest_url {
        let what = if w.status == Status::Gone {
            "last seen at"
        } else {
            "newest URL"
        };
        writeln!(out, "  {what}: {u}  ({})", opt(&w.newest_date))?;
    }
    for e in &w.evidence {
        let r = match (e.content_resemblance, e.resemblance) {
            (Some(c), Some(r)) => format!("  content {c:.2} (resemblance {r:.2})"),
            (None, Some(r)) => format!("  resemblance {r:.2}"),
            _ if !e.linking_pages.is_empty() => {
                format!("  linked instead by {}", e.linking_pages.join(", "))
            }
            _ => String::new(),
        };
        writeln!(out, "  {:<9} -> {}  {}{r}", e.kind, e.url, e.date)?;
    }
    if let Some(m) = w.margin {
        writeln!(out, "  margin over the runner-up: {m:.2}")?;
    }
    for alt in &w.alternatives {
        writeln!(
            out,
            "  also: {}  {}  content {:.2} (resemblance {:.2})",
            alt.url, alt.date, alt.content_resemblance, alt.resemblance
        )?;
    }
    Ok(EXIT_OK)
}

pub fn run_history(g: &Globals, a: HistoryArgs) -> anyhow::Result<u8> {
    if let Some(code) = check_url("history", &a.url) {
        return Ok(code);
    }
    let index = open_for_reading(g)?;
    let s = Searcher::everything(&index)?;
    let archive = if a.diff {
        let mut dirs = a.archive.clone();
        dirs.extend(g.config.serve.archive_paths.iter().cloned());
        Some(tidemark::query::diff::Archive::new(&index, &dirs)?)
    } else {
        None
    };
    let h = history(&s, &a.url, where_opts(g), archive.as_ref())?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &h)?;
        writeln!(out)?;
        return Ok(EXIT_OK);
    }
    if h.captures.is_empty() {
        writeln!(out, "{}: never captured", h.url)?;
        return Ok(EXIT_OK);
    }
    writeln!(out, "{}", h.url)?;
    writeln!(
        out,
        "{:<21} {:<12} {:>6} {:>8}  change",
        "date", "sweep", "status", "doc"
    )?;
    for v in &h.captures {
        let mut change = v.change.to_string();
        if v.change == "changed" {
            change = match (v.resemblance_to_previous, v.content_resemblance_to_previous) {
                (Some(r), Some(c)) => format!("changed (resemblance {r:.2}, content {c:.2})"),
                (Some(r), None) => format!("changed (resemblance {r:.2})"),
                _ => change,
            };
        }
        if let Some(t) = &v.redirect_to {
            change = format!("redirect -> {t}");
        }
        if let Some(m) = &v.moved_to {
            change = format!("{change}; moved to {m} (by {})", v.moved_by.join(", then "));
        }
        writeln!(
            out,
            "{:<21} {:<12} {:>6} {:>8}  {change}",
            v.date,
            v.sweep,
            opt(&v.status),
            opt(&v.doc)
        )?;
        if let Some(c) = &v.changes {
            writeln!(
                out,
                "    {} words removed, {} added; {} template lines folded",
                c.words_removed, c.words_added, c.template_lines_folded
            )?;
            for l in &c.lines {
                writeln!(out, "    {l}")?;
            }
            for l in &c.links_removed {
                writeln!(out, "    - link {l}")?;
            }
            for l in &c.links_added {
                writeln!(out, "    + link {l}")?;
            }
        } else if let Some(d) = &v.diff {
            writeln!(out, "    {d}")?;
        }
    }
    Ok(EXIT_OK)
}

pub fn run_similar(g: &Globals, a: SimilarArgs) -> anyhow::Result<u8> {
    if !(0.0..=1.0).contains(&a.threshold) {
        eprintln!(
            "tidemark similar: --threshold must be between 0 and 1, not {}",
            a.threshold
        );
        return Ok(EXIT_USAGE);
    }
    let input = match (&a.url, &a.file) {
        _ if a.doc.is_some() => Input::Doc(a.doc.expect("checked")),
        (Some(u), None) => {
            if let Some(code) = check_url("similar", u) {
                return Ok(code);
            }
            Input::Url(u.clone())
        }
        (None, Some(f)) => {
            if !f.is_file() {
                eprintln!("tidemark similar: no such file: {}", f.display());
                return Ok(EXIT_USAGE);
            }
            Input::File(f.clone())
        }
        _ => {
            eprintln!("tidemark similar: give a URL, --file PATH or --doc N");
            return Ok(EXIT_USAGE);
        }
    };
    let index = open_for_reading(g)?;
    let s = Searcher::everything(&index)?;
    let opts = SimilarOptions {
        threshold: a.threshold,
        containment: a.containment,
        limit: a.limit,
    };
    let r = similar(&s, &input, &opts)?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &r.results)?;
        writeln!(out)?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "{} ({} shingles): {} page{}",
        r.input,
        r.shingles,
        r.results.len(),
        if r.results.len() == 1 { "" } else { "s" }
    )?;
    writeln!(
        out,
        "{:>11} {:>8} {:>11} {:>8}  {:<21} url",
        "resemblance", "content", "containment", "doc", "date"
    )?;
    for p in &r.results {
        writeln!(
            out,
            "{:>11.3} {:>8.3} {:>11.3} {:>8}  {:<21} {}",
            p.resemblance, p.content_resemblance, p.containment, p.doc, p.date, p.url
        )?;
    }
    Ok(EXIT_OK)
}

pub fn run_cluster(g: &Globals, a: ClusterArgs) -> anyhow::Result<u8> {
    let Some(url) = &a.url else {
        let path = a.urls.as_deref().expect("clap: URL or --urls");
        return run_cluster_list(g, path, a.json);
    };
    if let Some(code) = check_url("cluster", url) {
        return Ok(code);
    }
    let index = open_for_reading(g)?;
    let s = Searcher::everything(&index)?;
    let c = cluster(&s, url, a.limit)?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &c)?;
        writeln!(out)?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "{}: doc {}, cluster {} of {} doc{}",
        c.url,
        c.doc,
        c.cluster,
        c.size,
        if c.size == 1 { "" } else { "s" }
    )?;
    for m in &c.members {
        let title = m.title.as_deref().unwrap_or("");
        writeln!(out, "  doc {}  {title}", m.doc)?;
        for u in &m.urls {
            writeln!(
                out,
                "    {}  {} .. {}  ({} capture{})",
                u.url,
                u.first,
                u.last,
                u.captures,
                if u.captures == 1 { "" } else { "s" }
            )?;
        }
    }
    if (c.members.len() as u64) < c.size {
        writeln!(
            out,
            "  … {} more (use --limit)",
            c.size - c.members.len() as u64
        )?;
    }
    Ok(EXIT_OK)
}

/// The URLs of a `--urls` list ([`tidemark::query::cluster::url_lines`]).
fn read_url_list(path: &Path) -> Result<Vec<String>, String> {
    let text = match path.as_os_str() == "-" {
        true => std::io::read_to_string(std::io::stdin()),
        false => std::fs::read_to_string(path),
    }
    .map_err(|e| format!("--urls {}: {e}", path.display()))?;
    Ok(tidemark::query::cluster::url_lines(&text))
}

fn run_cluster_list(g: &Globals, path: &Path, json: bool) -> anyhow::Result<u8> {
    let urls = match read_url_list(path) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("tidemark cluster: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let index = open_for_reading(g)?;
    let s = Searcher::everything(&index)?;
    let list = cluster_list(&s, &urls)?;
    let mut out = stdout();
    if json {
        serde_json::to_writer(&mut out, &list)?;
        writeln!(out)?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "{} URL{} in {} group{}",
        list.urls,
        if list.urls == 1 { "" } else { "s" },
        list.groups.len(),
        if list.groups.len() == 1 { "" } else { "s" }
    )?;
    for grp in &list.groups {
        match (grp.cluster, &grp.reason) {
            (Some(c), _) => writeln!(out, "{:>5}. {}  (cluster {c})", grp.at + 1, grp.url)?,
            (None, Some(why)) => writeln!(out, "{:>5}. {}  ({why})", grp.at + 1, grp.url)?,
            (None, None) => writeln!(out, "{:>5}. {}", grp.at + 1, grp.url)?,
        }
        for o in &grp.others {
            writeln!(out, "         also {}", o.url)?;
        }
    }
    Ok(EXIT_OK)
}

pub fn run_inlinks(g: &Globals, a: InlinksArgs) -> anyhow::Result<u8> {
    if let Some(code) = check_url("inlinks", &a.url) {
        return Ok(code);
    }
    let index = open_for_reading(g)?;
    let s = Searcher::everything(&index)?;
    let r = tidemark::query::inbound::inbound(&s, &a.url, a.sweep.as_deref())?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &r)?;
        writeln!(out)?;
        return Ok(EXIT_OK);
    }
    let n = r.linking_pages;
    writeln!(
        out,
        "{} in sweep {}: linked from {n} page{}",
        r.url,
        r.sweep,
        if n == 1 { "" } else { "s" }
    )?;
    for src in &r.sources {
        writeln!(out, "  {}", src.source)?;
        for w in &src.windows {
            writeln!(out, "    {} [{}] {}", w.before, w.anchor, w.after)?;
        }
    }
    Ok(EXIT_OK)
}

pub fn run_related(g: &Globals, a: RelatedArgs) -> anyhow::Result<u8> {
    if let Some(code) = check_url("related", &a.url) {
        return Ok(code);
    }
    let index = open_for_reading(g)?;
    let s = Searcher::everything(&index)?;
    let opts = tidemark::query::related::RelatedOptions {
        sweep: a.sweep,
        limit: a.limit,
        with_content: a.with_content,
    };
    let r = tidemark::query::related::related(&s, &a.url, &opts)?;
    let mut out = stdout();
    if a.json {
        serde_json::to_writer(&mut out, &r)?;
        writeln!(out)?;
        return Ok(EXIT_OK);
    }
    writeln!(
        out,
        "{} in sweep {}: linked from {} page{}, {} window words",
        r.url,
        r.sweep,
        r.linking_pages,
        if r.linking_pages == 1 { "" } else { "s" },
        r.window_words
    )?;
    for p in &r.pages {
        let content = p
            .content_resemblance
            .map(|c| format!("  content {c:.3}"))
            .unwrap_or_default();
        writeln!(out, "  {:.3}  {}{content}", p.score, p.url)?;
        if !p.shared_anchor_words.is_empty() {
            writeln!(out, "         anchors: {}", p.shared_anchor_words.join(" "))?;
        }
    }
    Ok(EXIT_OK)
}
