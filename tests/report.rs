//! `tidemark report` against the generator's ground truth, its formats, and the HTML
//! page in headless Chromium.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use common::{generate, ingest_generated, tidemark, tidemark_ok, truth};
use serde_json::Value;

const SWEEPS: usize = 4;

/// One corpus of 4 sweeps, ingested once for all tests of this file.
fn corpus() -> &'static (PathBuf, PathBuf) {
    static CORPUS: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        generate(&dir, 2000, SWEEPS, 515);
        let db = dir.join("db");
        ingest_generated(&dir, &db, SWEEPS, &[]);
        (dir, db)
    })
}

fn report_json(db: &Path, extra: &[&str]) -> (Value, Vec<u8>) {
    let mut args = vec!["--db", db.to_str().unwrap(), "report", "--format", "json"];
    args.extend_from_slice(extra);
    let out = tidemark_ok(&args);
    (serde_json::from_slice(&out.stdout).unwrap(), out.stdout)
}

/// Status of each URL in a sweep's truth.
fn statuses(t: &Value) -> HashMap<String, u64> {
    t["urls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["url"].as_str().unwrap().to_string(),
                u["status"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_count_matches_the_ground_truth() {
    let (dir, db) = corpus();
    let (r, bytes) = report_json(db, &[]);
    let (_, again) = report_json(db, &[]);
    assert_eq!(bytes, again, "same index, same bytes");
    let transitions = r["transitions"].as_array().unwrap();
    assert_eq!(transitions.len(), SWEEPS - 1);
    for k in 1..=SWEEPS {
        let live = statuses(&truth(dir, k))
            .values()
            .filter(|s| **s == 200)
            .count();
        assert_eq!(r["sweeps"][k - 1]["urls"], live, "live URLs of sweep {k}");
    }
    for k in 2..=SWEEPS {
        let t = truth(dir, k);
        let x = &transitions[k - 2];
        let u = &x["urls"];
        let moves = t["moves"].as_array().unwrap();
        let n = |f: &dyn Fn(&Value) -> bool| moves.iter().filter(|m| f(m)).count() as u64;
        let mirrors: u64 = t["mirror_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_array().unwrap().len() as u64 - 1)
            .sum();
        let deleted = t["deleted"].as_array().unwrap().len() as u64;
        let created = t["created"].as_array().unwrap().len() as u64;
        let expect = [
            ("unchanged", t["unchanged"].as_u64().unwrap()),
            ("redirected", n(&|m| m["old_status"] == 301)),
            ("gone", deleted + n(&|m| m["old_status"] != 301)),
            ("new", created + moves.len() as u64 + mirrors),
        ];
        for (field, want) in expect {
            assert_eq!(u[field], want, "sweep {k}: {field}");
        }
        assert_eq!(
            x["moves"]["within_host"],
            n(&|m| m["across_hosts"] == false),
            "sweep {k}: moves within host"
        );
        assert_eq!(
            x["moves"]["across_hosts"],
            n(&|m| m["across_hosts"] == true),
            "sweep {k}: moves across hosts"
        );
        // Edits by band: exact Jaccard from the generator; an edit within 0.05 of a band
        // boundary may land on either side (the estimator's tolerance).
        let edits = t["edits"].as_array().unwrap();
        let band = |r: f64| usize::from(r < 0.9) + usize::from(r < 0.5);
        let mut want = [0i64; 3];
        let mut slack = 0i64;
        for e in edits {
            let r = e["resemblance"].as_f64().unwrap();
            want[band(r)] += 1;
            if (r - 0.9).abs() < 0.05 || (r - 0.5).abs() < 0.05 {
                slack += 1;
            }
        }
        let got = [
            u["changed_minor"].as_i64().unwrap(),
            u["changed_major"].as_i64().unwrap(),
            u["rewritten"].as_i64().unwrap(),
        ];
        assert_eq!(
            got.iter().sum::<i64>(),
            edits.len() as i64,
            "sweep {k}: edits"
        );
        for b in 0..3 {
            assert!(
                (got[b] - want[b]).abs() <= slack,
                "sweep {k}: band {b}: {} vs exact {} (slack {slack})",
                got[b],
                want[b]
            );
        }
        // Every URL live before and captured live or redirected now is in exactly one of
        // unchanged / changed_* / rewritten / redirected.
        let (before, now) = (statuses(&truth(dir, k - 1)), statuses(&t));
        let both = before
            .iter()
            .filter(|(url, st)| **st == 200 && matches!(now.get(*url), Some(200) | Some(301)))
            .count() as u64;
        let parts: u64 = [
            "unchanged",
            "changed_minor",
            "changed_major",
            "rewritten",
            "redirected",
        ]
        .iter()
        .map(|f| u[*f].as_u64().unwrap())
        .sum();
        assert_eq!(parts, both, "sweep {k}: partition");
        println!(
            "sweep {k}: {} | moves {} | mirrored {} (new mirror groups {})",
            u,
            x["moves"],
            x["mirrored"],
            t["mirror_groups"].as_array().unwrap().len()
        );
    }
    assert!(r["lifetimes"]["days"]["count"].as_u64().unwrap() > 1000);
    assert!(r["change_rate"]["per_day"]["median"].as_f64().unwrap() >= 0.0);
    assert!(!r["hosts"].as_array().unwrap().is_empty());
}

#[test]
fn ranges_hosts_and_formats() {
    let (dir, db) = corpus();
    let (r, _) = report_json(db, &["--from", "sweep-2", "--to", "sweep-3"]);
    assert_eq!(r["sweeps"].as_array().unwrap().len(), 2);
    assert_eq!(r["transitions"].as_array().unwrap().len(), 1);
    // One host: its live URLs only.
    let t = truth(dir, 1);
    let first = t["urls"][0]["url"].as_str().unwrap();
    let host = first.split('/').nth(2).unwrap();
    let (r, _) = report_json(db, &["--host", host]);
    let want = t["urls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| {
            u["status"] == 200 && u["url"].as_str().unwrap().split('/').nth(2) == Some(host)
        })
        .count();
    assert_eq!(r["sweeps"][0]["urls"], want);
    let run = |args: &[&str]| {
        let mut a = vec!["--db", db.to_str().unwrap(), "report"];
        a.extend_from_slice(args);
        tidemark(&a)
    };
    let csv = run(&["--format", "csv"]);
    let text = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(text.lines().count(), SWEEPS, "header + one row per pair");
    assert!(text.starts_with("from,to,unchanged,"));
    // Every cell is the JSON report's number of the same transition and column.
    let (all, _) = report_json(db, &[]);
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    for (line, t) in text
        .lines()
        .skip(1)
        .zip(all["transitions"].as_array().unwrap())
    {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{line}");
        assert_eq!(cells[0], t["from"]);
        assert_eq!(cells[1], t["to"]);
        for (name, cell) in header.iter().zip(&cells).skip(2) {
            let want = match *name {
                "moves_within_host" => &t["moves"]["within_host"],
                "moves_across_hosts" => &t["moves"]["across_hosts"],
                "moves_by_redirect" => &t["moves"]["by_redirect"],
                "moves_by_content" => &t["moves"]["by_content"],
                "moves_by_links" => &t["moves"]["by_links"],
                "mirrored" => &t["mirrored"],
                n => &t["urls"][n],
            };
            assert_eq!(cell.parse::<u64>().ok(), want.as_u64(), "{name} in {line}");
        }
    }
    let table = run(&[]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("sweep-1 -> sweep-2"));
    let out = run(&["--from", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no sweep \"nope\""));
    let out = run(&["--format", "pdf"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn html_is_self_contained_and_renders_its_charts() {
    let (_, db) = corpus();
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let out = tidemark(&[
        "--db",
        db.to_str().unwrap(),
        "report",
        "--format",
        "html",
        "--out",
        html.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<svg").count(), 4, "four charts");
    for bad in ["<script", "src=", "href=", "@import", "url("] {
        assert!(!page.contains(bad), "not self-contained: {bad}");
    }
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    else {
        // CI installs it (tools/test.sh): there a missing browser is a failure.
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium is missing in CI (tools/test.sh installs it)"
        );
        eprintln!(
            "SKIPPED: Chromium is not installed (apt-get install chromium); tools/test.sh installs it"
        );
        return;
    };
    // Keep the screenshot as a test artifact, beside the build, not in git.
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let profile = dir.path().join("profile");
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", profile.display()),
            "--window-size=1500,1100",
            &format!("--screenshot={}", shot.display()),
            &format!("file://{}", html.display()),
        ])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(shot.exists(), "no screenshot: {log}");
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    // The charts are drawn: enough saturated (coloured) pixels in the screenshot, which
    // text and table borders (greys) never give.
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.line_size / info.width as usize;
    let mut coloured = 0usize;
    let mut colours = HashSet::new();
    for px in buf[..info.buffer_size()].chunks_exact(channels) {
        let (r, g, b) = (px[0] as i32, px[1] as i32, px[2] as i32);
        let sat = r.max(g).max(b) - r.min(g).min(b);
        if sat > 60 {
            coloured += 1;
            colours.insert((r / 32, g / 32, b / 32));
        }
    }
    let share = coloured as f64 / (info.width * info.height) as f64;
    println!(
        "screenshot {} ({}x{}): {:.1}% coloured pixels in {} colour classes",
        shot.display(),
        info.width,
        info.height,
        100.0 * share,
        colours.len()
    );
    assert!(
        share > 0.02,
        "charts not drawn: {:.3}% coloured",
        100.0 * share
    );
    assert!(
        colours.len() >= 6,
        "too few chart colours: {}",
        colours.len()
    );
}
