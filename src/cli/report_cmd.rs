//! `tidemark report`: change over time, as a table, JSON, CSV or a self-contained HTML page.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use tidemark::access::Reader;
use tidemark::report::changes::{changes, ChangeList, ChangesOptions};
use tidemark::report::{report, thousands, HostRow, Report, ReportOptions, Transition};

use super::{Globals, EXIT_OK, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// First sweep (label); default: the first (with --changes: the sweep before --to).
    #[arg(long, value_name = "LABEL")]
    pub from: Option<String>,
    /// Last sweep (label); default: the last.
    #[arg(long, value_name = "LABEL")]
    pub to: Option<String>,
    /// Only the URLs of this host (scheme and `www.` do not matter).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// table: for a terminal; json: every figure (stable: same index, same bytes);
    /// csv: one row per pair of sweeps (with --changes: per row of the list); html: one
    /// self-contained page with SVG charts.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// List every URL changed between two sweeps (--from, default the sweep before
    /// --to; --to, default the last), most significant first: status before and after,
    /// content and full resemblance, title change, words and links added and removed
    /// (read from the WARC records), template-only changes folded per host or section.
    /// With --format html, the report's page with the list as a paged section.
    #[arg(long)]
    pub changes: bool,
    /// With --changes: rows skipped (of the ordered list).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "changes")]
    pub offset: usize,
    /// With --changes: rows listed at most (default: all; the records of every row
    /// listed are read, unless --no-records).
    #[arg(long, value_name = "N", requires = "changes")]
    pub limit: Option<usize>,
    /// With --changes: do not read the WARC records (no words or links; fast).
    #[arg(long, requires = "changes")]
    pub no_records: bool,
    /// With --changes: a folder where WARC files are found by name (repeatable; added
    /// to serve.archive_paths), when the path a file was ingested from no longer holds
    /// one.
    #[arg(long, value_name = "DIR", requires = "changes")]
    pub archive: Vec<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum Format {
    Table,
    Json,
    Csv,
    Html,
}

pub fn run(g: &Globals, a: ReportArgs) -> anyhow::Result<u8> {
    if let Some(h) = &a.host {
        if let Err(e) = tidemark::url::check(h) {
            eprintln!("tidemark report: --host: {e}");
            return Ok(EXIT_USAGE);
        }
    }
    let index = super::open_for_reading(g)?;
    // About 75,000 captures a second: a spinner on a terminal so long reports show life.
    let spinner = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_message("reading captures …");
        b.enable_steady_tick(std::time::Duration::from_millis(120));
        b
    });
    let mut opts =
        ReportOptions::from_config(&g.config, a.from.clone(), a.to.clone(), a.host.clone());
    let list = if a.changes {
        let archive = if a.no_records {
            None
        } else {
            let mut dirs = a.archive.clone();
            dirs.extend(g.config.serve.archive_paths.iter().cloned());
            Some(tidemark::query::diff::Archive::new(&index, &dirs)?)
        };
        let bar = spinner.clone();
        let list = changes(
            &index,
            &Reader::everything(),
            &ChangesOptions {
                report: opts.clone(),
                offset: a.offset,
                limit: a.limit,
                archive,
                progress: bar.map(|b| {
                    std::sync::Arc::new(move |done: u64, total: u64| {
                        if done == 0 {
                            b.set_message(format!("reading the records of {total} rows …"));
                        }
                    }) as std::sync::Arc<dyn Fn(u64, u64) + Send + Sync>
                }),
            },
        )?;
        if a.format != Format::Html {
            if let Some(b) = spinner {
                b.finish_and_clear();
            }
            let text = match a.format {
                Format::Json => serde_json::to_string_pretty(&list)? + "\n",
                Format::Csv => changes_csv(&list),
                _ => changes_table(&list),
            };
            return write_out(&a, &text);
        }
        // The report of the same two sweeps around it.
        (opts.from, opts.to) = (Some(list.from.clone()), Some(list.to.clone()));
        Some(list)
    } else {
        None
    };
    let r = report(&index, &Reader::everything(), &opts)?;
    if let Some(b) = spinner {
        b.finish_and_clear();
    }
    if let Some(list) = list {
        let text = tidemark::report::html::page_with_changes(&r, Some(&list));
        return write_out(&a, &text);
    }
    let text = match a.format {
        Format::Json => serde_json::to_string_pretty(&r)? + "\n",
        Format::Csv => csv(&r),
        Format::Table => table(&r),
        Format::Html => tidemark::report::html::page(&r),
    };
    write_out(&a, &text)
}

/// Writes `text` where `--out` says, else to standard output.
fn write_out(a: &ReportArgs, text: &str) -> anyhow::Result<u8> {
    match &a.out {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
        None => {
            let mut out = super::stdout();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(EXIT_OK)
}

/// The change list's columns, as CSV names them.
const CHANGE_COLUMNS: [&str; 22] = [
    "url",
    "kind",
    "score",
    "pages",
    "host",
    "section",
    "status_before",
    "status_after",
    "timestamp_before",
    "timestamp_after",
    "resemblance",
    "content_resemblance",
    "title_before",
    "title_after",
    "title_changed",
    "redirect_to",
    "moved_to",
    "words_added",
    "words_removed",
    "links_added",
    "links_removed",
    "unread",
];

fn changes_csv(l: &ChangeList) -> String {
    let mut s = CHANGE_COLUMNS.join(",") + "\n";
    let o = |v: Option<String>| v.map(|v| csv_field(&v)).unwrap_or_default();
    let n = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    for r in &l.rows {
        let fields = [
            csv_field(&r.url),
            r.kind.to_string(),
            r.score.to_string(),
            r.pages.to_string(),
            csv_field(&r.host),
            o(r.section.clone()),
            n(r.status_before.map(u64::from)),
            n(r.status_after.map(u64::from)),
            o(r.timestamp_before.clone()),
            o(r.timestamp_after.clone()),
            r.resemblance.map(|v| v.to_string()).unwrap_or_default(),
            r.content_resemblance
                .map(|v| v.to_string())
                .unwrap_or_default(),
            o(r.title_before.clone()),
            o(r.title_after.clone()),
            r.title_changed.to_string(),
            o(r.redirect_to.clone()),
            o(r.moved_to.clone()),
            n(r.words_added),
            n(r.words_removed),
            n(r.links_added),
            n(r.links_removed),
            o(r.unread.clone()),
        ];
        s.push_str(&fields.join(","));
        s.push('\n');
    }
    s
}

fn changes_table(l: &ChangeList) -> String {
    let shown = match (l.offset, l.rows.len() as u64) {
        (0, n) if n == l.rows_total => String::new(),
        (o, 0) => format!(" (none shown past row {o})"),
        (o, n) => format!(" (rows {}–{} shown)", o + 1, o + n),
    };
    let mut s = format!(
        "what changed from {} to {}: {} URLs ({} only in template, folded into rows per host or section); {} rows, most significant first{shown}\n{}\n\n",
        l.from,
        l.to,
        thousands(l.urls_changed),
        thousands(l.template_only),
        thousands(l.rows_total),
        l.score
    );
    s.push_str(&format!(
        "{:>6} {:<14} {:<11} {:>7} {:>5} {:>13} {:>9}  {}\n",
        "score", "kind", "HTTP status", "content", "full", "words -/+", "links -/+", "url"
    ));
    // Notes under a row start where its URL does.
    let indent = " ".repeat(6 + 1 + 14 + 1 + 11 + 1 + 7 + 1 + 5 + 1 + 13 + 1 + 9 + 2);
    let f = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
    let code = |v: Option<u16>| v.map(|v| v.to_string()).unwrap_or_else(|| "none".into());
    let pair = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => format!("-{x}/+{y}"),
        _ => "-".into(),
    };
    for r in &l.rows {
        let status = if r.kind == "template_only" {
            format!("{} pages", r.pages)
        } else {
            format!("{}->{}", code(r.status_before), code(r.status_after))
        };
        s.push_str(&format!(
            "{:>6.3} {:<14} {:<11} {:>7} {:>5} {:>13} {:>9}  {}\n",
            r.score,
            r.kind,
            status,
            f(r.content_resemblance),
            f(r.resemblance),
            pair(r.words_removed, r.words_added),
            pair(r.links_removed, r.links_added),
            r.url
        ));
        if r.title_changed {
            s.push_str(&format!(
                "{indent}title {:?} -> {:?}\n",
                r.title_before.as_deref().unwrap_or(""),
                r.title_after.as_deref().unwrap_or("")
            ));
        }
        if let Some(t) = &r.redirect_to {
            s.push_str(&format!("{indent}redirects to {t}\n"));
        }
        if let Some(t) = &r.moved_to {
            s.push_str(&format!("{indent}moved to {t}\n"));
        }
        if let Some(why) = &r.unread {
            s.push_str(&format!("{indent}(not read: {why})\n"));
        }
    }
    s
}

fn csv(r: &Report) -> String {
    let mut s = format!("from,to,{}\n", Transition::COLUMNS.join(","));
    for t in &r.transitions {
        let counts: Vec<String> = t.counts().iter().map(u64::to_string).collect();
        s.push_str(&format!(
            "{},{},{}\n",
            csv_field(&t.from),
            csv_field(&t.to),
            counts.join(",")
        ));
    }
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn table(r: &Report) -> String {
    let mut s = String::new();
    for line in tidemark::report::headlines(r) {
        s.push_str(&line);
        s.push('\n');
    }
    if !s.is_empty() {
        s.push('\n');
    }
    s.push_str(&format!(
        "{:<14} {:<15} {:>9} {:>9} {:>8} {:>8}\n",
        "sweep", "date", "live URLs", "docs", "births", "deaths"
    ));
    for w in &r.sweeps {
        s.push_str(&format!(
            "{:<14} {:<15} {:>9} {:>9} {:>8} {:>8}\n",
            w.label, w.date, w.urls, w.docs, w.births, w.deaths
        ));
    }
    s.push('\n');
    s.push_str(&format!(
        "{:<29} {:>9} {:>7} {:>7} {:>9} {:>6} {:>6} {:>10} {:>12} {:>12} {:>9}\n",
        "sweeps",
        "unchanged",
        ">=0.9",
        "0.5-0.9",
        "rewritten",
        "new",
        "gone",
        "redirected",
        "moves w/x",
        "by r/c/l",
        "mirrored"
    ));
    for t in &r.transitions {
        let c = t.counts();
        s.push_str(&format!(
            "{:<29} {:>9} {:>7} {:>7} {:>9} {:>6} {:>6} {:>10} {:>12} {:>12} {:>9}\n",
            format!("{} -> {}", t.from, t.to),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            format!("{}/{}", c[7], c[8]),
            format!("{}/{}/{}", c[9], c[10], c[11]),
            c[12]
        ));
    }
    s.push_str(&format!(
        "\n{:<29} {:>9} {:>7} {:>7} {:>9}   (the hosts' templates left out)\n",
        "by content", "unchanged", ">=0.9", "0.5-0.9", "rewritten"
    ));
    for t in &r.transitions {
        let c = &t.content;
        s.push_str(&format!(
            "{:<29} {:>9} {:>7} {:>7} {:>9}\n",
            format!("{} -> {}", t.from, t.to),
            c.unchanged,
            c.changed_minor,
            c.changed_major,
            c.rewritten
        ));
    }
    let l = &r.lifetimes.days;
    s.push_str(&format!(
        "\nlifetimes (days, first to last live capture): {} URLs; min {} / p25 {} / median {} / p75 {} / max {}; {} still live\n",
        l.count, l.min, l.p25, l.median, l.p75, l.max, r.lifetimes.still_live
    ));
    let c = &r.change_rate.per_day;
    s.push_str(&format!(
        "change rate (changes per day, Cho & Garcia-Molina, sweeps {} days apart): {} URLs; p25 {} / median {} / p75 {} / mean {}\n",
        r.change_rate.interval_days, c.count, c.p25, c.median, c.p75, c.mean
    ));
    let top = |hosts: &[HostRow], figure: &dyn Fn(&HostRow) -> String| {
        hosts
            .iter()
            .take(10)
            .map(|h| format!("{} {}", h.host, figure(h)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    s.push_str(&format!(
        "\nhosts by moves: {}\nhosts by change rate (median per day): {}",
        top(&r.hosts, &|h| h.moves.to_string()),
        top(&r.hosts_by_change_rate, &|h| h
            .change_rate_median
            .to_string())
    ));
    s.push('\n');
    s
}
