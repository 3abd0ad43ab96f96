//! `tidemark report`: change over time, as a table, JSON, CSV or a self-contained HTML page.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use tidemark::report::{report, HostRow, Report, ReportOptions, Transition};

use super::{Globals, EXIT_OK, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// First sweep (label); default: the first.
    #[arg(long, value_name = "LABEL")]
    pub from: Option<String>,
    /// Last sweep (label); default: the last.
    #[arg(long, value_name = "LABEL")]
    pub to: Option<String>,
    /// Only the URLs of this host (scheme and `www.` do not matter).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// table: for a terminal; json: every figure (stable: same index, same bytes);
    /// csv: one row per pair of sweeps; html: one self-contained page with SVG charts.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
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
    let r = report(
        &index,
        &ReportOptions::from_config(&g.config, a.from.clone(), a.to.clone(), a.host.clone()),
    )?;
    if let Some(b) = spinner {
        b.finish_and_clear();
    }
    let text = match a.format {
        Format::Json => serde_json::to_string_pretty(&r)? + "\n",
        Format::Csv => csv(&r),
        Format::Table => table(&r),
        Format::Html => tidemark::report::html::page(&r),
    };
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
        "{:<29} {:>9} {:>7} {:>7} {:>9} {:>6} {:>6} {:>10} {:>12} {:>9}\n",
        "sweeps",
        "unchanged",
        ">=0.9",
        "0.5-0.9",
        "rewritten",
        "new",
        "gone",
        "redirected",
        "moves w/x",
        "mirrored"
    ));
    for t in &r.transitions {
        let c = t.counts();
        s.push_str(&format!(
            "{:<29} {:>9} {:>7} {:>7} {:>9} {:>6} {:>6} {:>10} {:>12} {:>9}\n",
            format!("{} -> {}", t.from, t.to),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            format!("{}/{}", c[7], c[8]),
            c[9]
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
