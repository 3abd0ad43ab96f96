//! `tidemark-gen`: writes deterministic synthetic crawl sweeps (`.warc.gz`) with ground
//! truth JSON beside each sweep. See `tidemark::synth` for the model.

mod site;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tidemark::synth::{generate, parse_size, GenOptions};

#[derive(Parser, Debug)]
#[command(
    name = "tidemark-gen",
    version,
    about = "Generate synthetic crawl sweeps (.warc.gz) with ground truth: edits, moves (301, 404, vanished), mirrors, deletions, creations, revisits",
    after_help = "Examples:\n  tidemark-gen --out demo --size 1MB --sweeps 3\n  tidemark-gen --out sweeps/s1 --start 2022-02-02 --site usr/share/doc/llvm-13-doc/html=https://llvm.org/docs/\n  tidemark-gen --out big --size 600MB --sweeps 4 --seed 7\n  tidemark-gen --out redesign --pages 100000 --sweeps 4 --steady --redesign 3"
)]
struct Args {
    /// Output directory (sweep-NN/ folders of .warc.gz and sweep-NN.truth.json files).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Uncompressed WARC bytes per sweep, e.g. 1MB, 500MB, 2GB (sets --pages and --hosts).
    #[arg(long, value_name = "SIZE", conflicts_with = "pages")]
    size: Option<String>,
    /// Live pages in the first sweep.
    #[arg(long, value_name = "N")]
    pages: Option<usize>,
    /// Number of sweeps.
    #[arg(long, default_value_t = 4)]
    sweeps: usize,
    /// Hosts (default: from the size).
    #[arg(long)]
    hosts: Option<usize>,
    /// Seed: the same seed and flags give byte-identical files.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Date of the first sweep.
    #[arg(long, default_value = "2026-01-01", value_name = "YYYY-MM-DD")]
    start: String,
    /// Days between sweeps.
    #[arg(long, default_value_t = 30)]
    interval_days: i64,
    /// Keep live pages at --pages in every sweep (new pages replace deleted ones): sweeps
    /// of equal size and change rate, about 80% of pages unchanged.
    #[arg(long)]
    steady: bool,
    /// Sweeps (numbered from 2, comma-separated) in which every host changes its template
    /// (head, header, footer, a navigation sidebar, a per-page version line) while most
    /// bodies stay: every page becomes a new doc resembling its predecessor (exact
    /// resemblances in the truth's edits of kind "template"), as after a site redesign.
    #[arg(long, value_name = "N,N…", value_delimiter = ',')]
    redesign: Vec<usize>,
    /// Sections per host: each is the first segment of its pages' paths and carries a
    /// navigation sidebar of its own on its pages only, as a documentation site's
    /// libraries and books do (a redesign gives each a new one). 0: none.
    #[arg(long, default_value_t = 0, value_name = "N")]
    sections: usize,
    /// Sweeps (numbered from 2, comma-separated) in which the first section of every host
    /// gets a new sidebar and nothing else changes: a section's own template change
    /// (needs --sections).
    #[arg(
        long,
        value_name = "N,N…",
        value_delimiter = ',',
        requires = "sections"
    )]
    section_redesign: Vec<usize>,
    /// Topics: every page belongs to one of N, is titled by two of its words and links
    /// six pages, mostly of its topic, with the target's title as anchor text; between
    /// sweeps 3% of pages are renamed and rewritten on their host (no redirect) while
    /// their linking pages follow them. The truth gives each URL's topic and marks these
    /// moves `"rewritten": true`. 0: none.
    #[arg(long, default_value_t = 0, value_name = "N")]
    topics: usize,
    /// A real site kept as files instead of a synthetic web: every .html file under DIR
    /// served at URL + its path (meta-refresh stubs as 301 redirects), one sweep dated
    /// --start (12:00 UTC) written to --out. Repeat for several hosts.
    #[arg(long, value_name = "DIR=URL", conflicts_with_all = ["size", "pages", "steady", "redesign", "sections", "section_redesign", "topics"])]
    site: Vec<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let Ok(start) = chrono::NaiveDate::parse_from_str(&a.start, "%Y-%m-%d") else {
        eprintln!(
            "tidemark-gen: --start must be YYYY-MM-DD, not {:?}",
            a.start
        );
        return ExitCode::from(2);
    };
    if !a.site.is_empty() {
        return site_sweep(&a, start);
    }
    let bytes = match &a.size {
        Some(s) => match parse_size(s) {
            Some(b) => b,
            None => {
                eprintln!("tidemark-gen: --size must look like 1MB, 500MB or 2GB, not {s:?}");
                return ExitCode::from(2);
            }
        },
        None => 13_000 * a.pages.unwrap_or(250) as u64,
    };
    let mut opts = GenOptions::for_size(a.out.clone(), bytes, a.sweeps.max(1), a.seed);
    if let Some(p) = a.pages {
        opts.pages = p.max(1);
    }
    if let Some(h) = a.hosts {
        opts.hosts = h.max(1);
    }
    opts.start = start;
    opts.interval_days = a.interval_days;
    opts.steady = a.steady;
    if let Some(n) = a.redesign.iter().find(|n| **n < 2 || **n > opts.sweeps) {
        eprintln!(
            "tidemark-gen: --redesign {n}: a redesign sweep is one of 2..={} (the first sweep has no template to change)",
            opts.sweeps
        );
        return ExitCode::from(2);
    }
    opts.redesign = a.redesign.clone();
    opts.sections = a.sections;
    if let Some(n) = a
        .section_redesign
        .iter()
        .find(|n| **n < 2 || **n > opts.sweeps)
    {
        eprintln!(
            "tidemark-gen: --section-redesign {n}: a redesign sweep is one of 2..={}",
            opts.sweeps
        );
        return ExitCode::from(2);
    }
    opts.section_redesign = a.section_redesign.clone();
    opts.topics = a.topics;
    if a.topics > 0 {
        opts.rates.renamed_rewritten = 0.03;
    }
    let quiet = a.json;
    match generate(&opts, |line| {
        if !quiet {
            eprintln!("{line}");
        }
    }) {
        Ok(g) => {
            if a.json {
                println!("{}", serde_json::to_string_pretty(&g).unwrap_or_default());
            } else {
                println!(
                    "wrote {} sweeps to {}: {:.1} MB of WARC ({:.1} MB gzip)",
                    g.sweeps.len(),
                    a.out.display(),
                    g.bytes as f64 / 1e6,
                    g.compressed_bytes as f64 / 1e6
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tidemark-gen: {e}");
            ExitCode::from(1)
        }
    }
}

/// `--site`: one sweep of real pages kept as files.
fn site_sweep(a: &Args, start: chrono::NaiveDate) -> ExitCode {
    let mut sites = Vec::new();
    for s in &a.site {
        match s.split_once('=') {
            Some((dir, url)) if url.starts_with("http://") || url.starts_with("https://") => {
                let url = if url.ends_with('/') {
                    url.to_string()
                } else {
                    format!("{url}/")
                };
                sites.push((PathBuf::from(dir), url));
            }
            _ => {
                eprintln!("tidemark-gen: --site must be DIR=URL (e.g. html=https://example.org/docs/), not {s:?}");
                return ExitCode::from(2);
            }
        }
    }
    let date = format!("{}T12:00:00Z", start.format("%Y-%m-%d"));
    match site::write_sweep(&sites, &date, &a.out) {
        Ok(s) => {
            if a.json {
                println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            } else {
                println!(
                    "wrote {}: {} pages and {} redirects dated {date} ({:.1} MB gzip)",
                    s.file.display(),
                    s.pages,
                    s.redirects,
                    s.compressed_bytes as f64 / 1e6
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tidemark-gen: {e}");
            ExitCode::from(1)
        }
    }
}
