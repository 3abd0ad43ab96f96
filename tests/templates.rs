//! Hosts' templates and content resemblance, against the generator's ground truth: a
//! redesign sweep (every host's template changes, most bodies stay) must read as a
//! template change, not as every page rewritten.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{
    generate_redesign, generate_sections, ingest_generated, sweep_files, tidemark_ok, truth,
};
use serde_json::Value;

/// Three steady sweeps of 3,000 pages, the third a redesign, ingested once.
fn corpus() -> &'static (PathBuf, PathBuf) {
    static CORPUS: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        generate_redesign(&dir, 3000, 30);
        let db = dir.join("db");
        ingest_generated(&dir, &db, 3, &[]);
        (dir, db)
    })
}

/// Three steady sweeps of 3,000 pages on hosts of ten sections, each with a sidebar of
/// its own on a tenth of the host's pages: in sweep 2 each host's first section gets a
/// new sidebar, sweep 3 is a redesign of everything.
fn sections_corpus() -> &'static (PathBuf, PathBuf) {
    static CORPUS: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        generate_sections(&dir, 3000, 10, 31);
        let db = dir.join("db");
        ingest_generated(&dir, &db, 3, &[]);
        (dir, db)
    })
}

/// The share of a sweep's edited URLs whose stored content resemblance lands in the
/// band of the truth's (the exact Jaccard without the hosts' very common shingles), and
/// how many were judged.
fn content_band_agreement(dir: &Path, db: &Path, k: usize) -> (f64, usize) {
    let by_url = rows(db);
    let date = |k: usize| truth(dir, k)["date"].as_str().unwrap()[..10].replace('-', "");
    let (from, to) = (date(k), if k < 3 { date(k + 1) } else { "9".into() });
    let (mut n, mut same) = (0, 0);
    for e in truth(dir, k)["edits"].as_array().unwrap() {
        let url = e["url"].as_str().unwrap();
        let (_, row) = by_url[url]
            .iter()
            .filter(|(ts, _)| ts[..8] >= *from && ts[..8] < *to)
            .max_by_key(|(ts, _)| ts.clone())
            .unwrap_or_else(|| panic!("{url} not captured in sweep {k}"));
        let content = row["content_resemblance_to_previous"]
            .as_f64()
            .unwrap_or_else(|| panic!("{url}: no content resemblance in {row}"));
        n += 1;
        same += (band(content) == band(e["content_resemblance"].as_f64().unwrap())) as usize;
    }
    (same as f64 / n.max(1) as f64, n)
}

/// A section's own sidebar is template for its pages: when it changes (sweep 2) they
/// change only in template, and after a redesign (sweep 3) the pages' content is what
/// the truth says; the report names the sections and the hosts.
#[test]
fn a_sections_sidebar_is_template_and_its_change_is_named() {
    let (dir, db) = sections_corpus();
    for k in [2, 3] {
        let (share, n) = content_band_agreement(dir, db, k);
        println!("sections, sweep {k}: {n} edited URLs, content band as the truth for {share:.4}");
        assert!(n > 100, "sweep {k}: {n} edits");
        assert!(
            share >= 0.95,
            "sweep {k}: {share:.4} of {n} in the truth's content band"
        );
    }
    let r: Value = serde_json::from_slice(
        &tidemark_ok(&["--db", &s(db), "report", "--format", "json"]).stdout,
    )
    .unwrap();
    let named = |t: &Value| -> Vec<(String, Option<String>)> {
        t["template_changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                // As the report names them (`TemplateChange::is_redesign`).
                let only = c["pages_changed_only_in_template"].as_u64().unwrap();
                let both = c["pages_in_both"].as_u64().unwrap();
                let share = c["template_changed_share"].as_f64().unwrap_or(0.0);
                (c["section"].is_string() || share >= 0.2) && only >= 10 && only * 10 >= both
            })
            .map(|c| {
                (
                    c["host"].as_str().unwrap().to_string(),
                    c["section"].as_str().map(str::to_string),
                )
            })
            .collect()
    };
    // The truth's section changes: the sections (first path segment) of sweep 2's
    // template edits, by host.
    let mut want: std::collections::BTreeSet<(String, Option<String>)> = Default::default();
    for e in truth(dir, 2)["edits"].as_array().unwrap() {
        if e["kind"] == "template" {
            let url = e["url"].as_str().unwrap();
            let mut parts = url.split('/').skip(2);
            let host = parts.next().unwrap().trim_start_matches("www.").to_string();
            want.insert((host, Some(format!("/{}/", parts.next().unwrap()))));
        }
    }
    let hosts: std::collections::BTreeSet<String> = want.iter().map(|(h, _)| h.clone()).collect();
    assert!(hosts.len() >= 4, "{want:?}");
    let got: std::collections::BTreeSet<(String, Option<String>)> = named(&r["transitions"][0])
        .into_iter()
        .map(|(h, s)| (h.trim_start_matches("www.").to_string(), s))
        .collect();
    assert_eq!(
        got, want,
        "sweep 2's template changes: the first section of each host"
    );
    let got3: std::collections::BTreeSet<(String, Option<String>)> = named(&r["transitions"][1])
        .into_iter()
        .map(|(h, s)| (h.trim_start_matches("www.").to_string(), s))
        .collect();
    let want3: std::collections::BTreeSet<(String, Option<String>)> =
        hosts.iter().map(|h| (h.clone(), None)).collect();
    assert_eq!(got3, want3, "sweep 3's template changes: every host, whole");
    // The HTML report's first screen: these sentences, then the pairs by content, the
    // pairs by all their text below.
    let html =
        String::from_utf8(tidemark_ok(&["--db", &s(db), "report", "--format", "html"]).stdout)
            .unwrap();
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {html}"))
    };
    assert!(at("changed its template") < at("<h2>Pairs of sweeps by content</h2>"));
    assert!(at("<h2>Pairs of sweeps by content</h2>") < at("<svg"));
    assert!(at("<svg") < at("<h2>Pairs of sweeps by all their text</h2>"));
    // The table says so first, naming the section.
    let table = String::from_utf8(tidemark_ok(&["--db", &s(db), "report"]).stdout).unwrap();
    let first = table.lines().next().unwrap();
    assert!(
        want.iter()
            .any(|(host, section)| first.starts_with(&format!(
                "{host}{} changed its template between sweep-1 and sweep-2",
                section.as_deref().unwrap()
            ))),
        "{table}"
    );
}

/// `history --diff` reads what changed from the WARC records: a page whose section's
/// sidebar changed shows no content lines, the sidebar's lines folded away as template;
/// a page edited in place shows its changed paragraphs and nothing of the sidebar.
#[test]
fn history_diff_shows_content_lines_and_folds_the_template() {
    let (dir, db) = sections_corpus();
    let t2 = truth(dir, 2);
    let edits = t2["edits"].as_array().unwrap();
    let history = |url: &str| -> Value {
        serde_json::from_slice(
            &tidemark_ok(&["--db", &s(db), "history", "--diff", "--json", url]).stdout,
        )
        .unwrap()
    };
    let second = |h: &Value| -> Value {
        let caps = h["captures"].as_array().unwrap();
        caps.iter()
            .find(|c| c["sweep"] == "sweep-2")
            .cloned()
            .unwrap_or_else(|| panic!("no sweep-2 capture: {h}"))
    };
    // Template only: the first section's pages in sweep 2, bodies unchanged.
    let mut folded = 0;
    for e in edits.iter().filter(|e| e["kind"] == "template").take(5) {
        let v = second(&history(e["url"].as_str().unwrap()));
        let c = &v["changes"];
        assert_eq!(v["change"], "changed", "{v}");
        assert_eq!(c["lines_removed"].as_array().unwrap().len(), 0, "{v}");
        assert_eq!(c["lines_added"].as_array().unwrap().len(), 0, "{v}");
        assert!(c["template_pages"].as_u64().unwrap() >= 4, "{v}");
        folded += c["template_lines_folded"].as_u64().unwrap();
    }
    assert!(folded >= 5 * 10, "the sidebars' lines folded: {folded}");
    // Edited in place: some words removed or added, in a few lines; no sidebar line.
    let mut shown = 0;
    for e in edits
        .iter()
        .filter(|e| e["kind"] == "minor" || e["kind"] == "major")
        .take(5)
    {
        let url = e["url"].as_str().unwrap();
        let v = second(&history(url));
        let c = &v["changes"];
        let (removed, added) = (
            c["lines_removed"].as_array().unwrap(),
            c["lines_added"].as_array().unwrap(),
        );
        assert!(!removed.is_empty() || !added.is_empty(), "{url}: {v}");
        assert!(
            c["words_removed"].as_u64().unwrap() + c["words_added"].as_u64().unwrap() > 0,
            "{v}"
        );
        assert!(
            removed.len() + added.len() <= 20,
            "{url}: a few paragraphs: {v}"
        );
        assert!(
            v["diff"].as_str().unwrap().contains("{+")
                || v["diff"].as_str().unwrap().contains("[-"),
            "{v}"
        );
        shown += 1;
    }
    assert_eq!(shown, 5);
    // The table prints the lines.
    let url = edits.iter().find(|e| e["kind"] == "major").unwrap()["url"]
        .as_str()
        .unwrap();
    let text =
        String::from_utf8(tidemark_ok(&["--db", &s(db), "history", "--diff", url]).stdout).unwrap();
    assert!(text.contains("template lines folded"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("    - ") || l.starts_with("    + ")),
        "{text}"
    );
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn export_jsonl(db: &Path) -> Vec<u8> {
    tidemark_ok(&["--db", &s(db), "export", "--format", "jsonl"]).stdout
}

/// ≥ 0.9, 0.5–0.9, < 0.5 (the report's bands).
fn band(r: f64) -> u8 {
    if r >= 0.9 {
        2
    } else if r >= 0.5 {
        1
    } else {
        0
    }
}

/// Each URL's captures in the export: (fetch time, row).
fn rows(db: &Path) -> HashMap<String, Vec<(String, Value)>> {
    let mut by_url: HashMap<String, Vec<(String, Value)>> = HashMap::new();
    for line in String::from_utf8(export_jsonl(db)).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let url = v["url"].as_str().unwrap().to_string();
        let t = v["fetch_time"].as_str().unwrap().to_string();
        by_url.entry(url).or_default().push((t, v));
    }
    by_url
}

/// A sweep's edits that changed only in template by the truth's exact measures: content
/// resemblance at least 0.9, full below.
fn template_only_edits(truth: &Value) -> Vec<&Value> {
    truth["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["content_resemblance"].as_f64().unwrap() >= 0.9
                && e["resemblance"].as_f64().unwrap() < 0.9
        })
        .collect()
}

#[test]
fn content_resemblance_lands_in_the_exact_content_band() {
    let (dir, db) = corpus();
    let by_url = rows(db);
    let date = |k: usize| truth(dir, k)["date"].as_str().unwrap()[..10].replace('-', "");
    for k in 2..=3 {
        let (from, to) = (date(k), if k < 3 { date(k + 1) } else { "9".into() });
        let t = truth(dir, k);
        // Edited URLs; in the content band of the exact content Jaccard; whose exact
        // content band is above their full one, and of those, whose estimate is too.
        let (mut n, mut same, mut higher, mut found_higher) = (0, 0, 0, 0);
        for e in t["edits"].as_array().unwrap() {
            let url = e["url"].as_str().unwrap();
            // The URL's capture in sweep k.
            let Some((_, row)) = by_url[url]
                .iter()
                .filter(|(ts, _)| ts[..8] >= *from && ts[..8] < *to)
                .max_by_key(|(ts, _)| ts.clone())
            else {
                panic!("{url} not captured in sweep {k}");
            };
            let full = row["resemblance_to_previous"].as_f64().unwrap();
            let content = row["content_resemblance_to_previous"]
                .as_f64()
                .unwrap_or_else(|| panic!("{url}: no content resemblance in {row}"));
            assert!((0.0..=1.0).contains(&content));
            let exact = e["content_resemblance"].as_f64().unwrap();
            n += 1;
            same += (band(content) == band(exact)) as usize;
            if band(exact) > band(e["resemblance"].as_f64().unwrap()) {
                higher += 1;
                found_higher += (band(content) > band(full)) as usize;
            }
        }
        let share = same as f64 / n as f64;
        println!("sweep {k}: {n} edited URLs, content band as exact for {share:.4}");
        assert!(n > 100, "sweep {k}: {n} edits");
        assert!(
            share >= 0.98,
            "sweep {k}: {same} of {n} in the exact content band"
        );
        if k == 3 {
            // The redesign: most pages' content changed less than their text, and the
            // estimates say so where the exact measures do.
            assert!(
                higher > n / 2,
                "{higher} of {n} rank higher by exact content"
            );
            assert!(
                found_higher * 100 >= higher * 97,
                "{found_higher} of {higher} rank higher by estimated content"
            );
        }
    }
}

#[test]
fn the_report_names_the_redesign() {
    let (dir, db) = corpus();
    let r: Value = serde_json::from_slice(
        &tidemark_ok(&["--db", &s(db), "report", "--format", "json"]).stdout,
    )
    .unwrap();
    let t = r["transitions"].as_array().unwrap();
    let redesigns = |t: &Value| -> Vec<Value> {
        t["template_changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["template_changed_share"].as_f64().unwrap_or(0.0) >= 0.5)
            .cloned()
            .collect()
    };
    assert!(
        redesigns(&t[0]).is_empty(),
        "no redesign in sweep 2: {}",
        t[0]
    );
    let hosts = redesigns(&t[1]);
    let truth_hosts: std::collections::HashSet<String> = truth(dir, 3)["urls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            u["url"]
                .as_str()
                .unwrap()
                .split('/')
                .nth(2)
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        hosts.len(),
        truth_hosts.len(),
        "every host redesigned: {hosts:?}"
    );
    let only: u64 = hosts
        .iter()
        .map(|c| c["pages_changed_only_in_template"].as_u64().unwrap())
        .sum();
    // The truth's: edited pages whose exact content resemblance is at least 0.9 and
    // whose full one is below.
    let expected = template_only_edits(&truth(dir, 3)).len() as u64;
    assert!(expected > 1000, "{expected}");
    assert!(
        only.abs_diff(expected) * 20 <= expected,
        "{only} pages changed only in template, {expected} by the exact measures"
    );
    // By content the redesign is mostly small changes; in full, not.
    let (content, urls) = (&t[1]["content"], &t[1]["urls"]);
    assert!(content["changed_minor"].as_u64() > urls["changed_minor"].as_u64());
    assert!(content["changed_minor"].as_u64().unwrap() > content["rewritten"].as_u64().unwrap());
    // And says so in words, first.
    let table = String::from_utf8(tidemark_ok(&["--db", &s(db), "report"]).stdout).unwrap();
    assert!(
        table
            .lines()
            .next()
            .unwrap()
            .contains("changed its template between sweep-2 and sweep-3"),
        "{table}"
    );
    let html =
        String::from_utf8(tidemark_ok(&["--db", &s(db), "report", "--format", "html"]).stdout)
            .unwrap();
    let news = html
        .find("changed its template")
        .expect("the HTML report says it");
    assert!(news < html.find("<h2>").unwrap(), "before the first table");
}

/// Moves across the redesign are decided on content (both hosts' templates left out),
/// so a moved page resembles its old self as it did before the chrome changed. At a
/// move floor of 0.7 the resemblance on all shingles found 19 of this corpus's 58 content
/// moves into the redesign sweep (the chrome changed under them); on content whereis
/// finds 56, and the report matches the truth's move count. A shared template fakes no
/// move: deleted pages stay gone.
#[test]
fn moves_across_the_redesign_are_found_on_content() {
    let (dir, db) = corpus();
    let strict = dir.join("move-floor-0.7.toml");
    std::fs::write(&strict, "[query]\nmove_floor = 0.7\n").unwrap();
    let whereis = |config: &Path, url: &str| -> Value {
        let out = tidemark_ok(&[
            "--config",
            &s(config),
            "--db",
            &s(db),
            "whereis",
            "--json",
            url,
        ]);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let t3 = truth(dir, 3);
    let moves: Vec<&Value> = t3["moves"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["old_status"].as_u64() != Some(301))
        .collect();
    assert!(moves.len() > 40, "{}", moves.len());
    let found = moves
        .iter()
        .filter(|m| {
            let w = whereis(&strict, m["from"].as_str().unwrap());
            let to = m["to"].as_str().unwrap().trim_end_matches('/');
            w["newest_url"].as_str().map(|u| u.trim_end_matches('/')) == Some(to)
                && w["evidence"][0]["content_resemblance"].as_f64().unwrap() >= 0.7
        })
        .count();
    assert!(
        found * 10 >= moves.len() * 9,
        "{found} of {} content moves found at move floor 0.7",
        moves.len()
    );
    // The report's move matching on content: the truth's moves, within and across hosts.
    let r: Value = serde_json::from_slice(
        &tidemark_ok(&[
            "--config",
            &s(&strict),
            "--db",
            &s(db),
            "report",
            "--format",
            "json",
        ])
        .stdout,
    )
    .unwrap();
    let m = &r["transitions"][1]["moves"];
    let got = m["within_host"].as_u64().unwrap() + m["across_hosts"].as_u64().unwrap();
    let all = t3["moves"].as_array().unwrap();
    let across = all.iter().filter(|m| m["across_hosts"] == true).count() as u64;
    let want = all.len() as u64;
    assert!(
        got <= want && got * 20 >= want * 19,
        "report: {m} moves; the truth: {want}"
    );
    assert!(
        m["across_hosts"].as_u64().unwrap().abs_diff(across) <= 2,
        "{m}"
    );
    // Deleted pages of the redesign sweep: their template-mates are no successor.
    let default = dir.join("default.toml");
    std::fs::write(&default, "").unwrap();
    let deleted = t3["deleted"].as_array().unwrap();
    let gone = deleted
        .iter()
        .filter(|d| whereis(&default, d["url"].as_str().unwrap())["status"] == "gone")
        .count();
    assert!(
        gone * 20 >= deleted.len() * 19,
        "{gone} of {} deleted pages gone",
        deleted.len()
    );
}

/// `similar` shows content resemblance beside the full one: a page the redesign changed
/// only in its chrome resembles its old version by content as `history` says (the same
/// templates left out), above its resemblance on all shingles.
#[test]
fn similar_shows_content_resemblance_beside_the_full_one() {
    let (dir, db) = corpus();
    let t3 = truth(dir, 3);
    let pages: Vec<&str> = template_only_edits(&t3)
        .into_iter()
        .map(|e| e["url"].as_str().unwrap())
        .take(10)
        .collect();
    assert_eq!(pages.len(), 10);
    for url in pages {
        let h: Value = serde_json::from_slice(
            &tidemark_ok(&["--db", &s(db), "history", "--json", url]).stdout,
        )
        .unwrap();
        let caps = h["captures"].as_array().unwrap();
        let (old, new) = (&caps[caps.len() - 2], &caps[caps.len() - 1]);
        let r: Value = serde_json::from_slice(
            &tidemark_ok(&[
                "--db",
                &s(db),
                "similar",
                "--doc",
                &old["doc"].to_string(),
                "--threshold",
                "0.3",
                "--limit",
                "1000",
                "--json",
            ])
            .stdout,
        )
        .unwrap();
        let row = r
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["doc"] == new["doc"])
            .unwrap_or_else(|| panic!("{url}'s new version not similar to its old: {r}"));
        let (full, content) = (
            row["resemblance"].as_f64().unwrap(),
            row["content_resemblance"].as_f64().unwrap(),
        );
        assert!(content >= 0.9 && full < content, "{url}: {row}");
        assert_eq!(
            row["content_resemblance"], new["content_resemblance_to_previous"],
            "{url}: similar and history"
        );
    }
}

/// The exact check that `tidemark-bench --content-bands` makes on real corpora (llvm-docs
/// in the README), here where the generator's truth can check it in turn: from the
/// index's own WARC files it finds exactly the truth's edited URLs (every page's exact
/// shingles, each host's exact template), and the stored content resemblance lands in
/// the band of its exact content Jaccard for at least 98% of them on every transition.
#[test]
fn the_exact_content_band_check_agrees_with_the_truth_and_the_index() {
    let (dir, db) = corpus();
    let rows = common::content_bands(db);
    let mut changed: HashMap<String, u64> = HashMap::new();
    for r in rows.as_array().unwrap() {
        *changed.entry(r["to"].as_str().unwrap().into()).or_default() +=
            r["changed"].as_u64().unwrap();
        assert_eq!(r["missing"], 0, "{r}");
        assert!(r["content_agree"].as_f64().unwrap() >= 0.98, "{r}");
    }
    for k in [2, 3] {
        let edits = truth(dir, k)["edits"].as_array().unwrap().len() as u64;
        assert_eq!(changed[&format!("sweep-{k}")], edits, "{rows}");
    }
}

/// Sweep 3's file cut in two at the gzip member `1/part` of the way in, written to `out`.
fn split_sweep_3(dir: &Path, out: &Path, part: usize) -> (PathBuf, PathBuf) {
    let files = sweep_files(dir, 3);
    assert_eq!(files.len(), 1);
    let whole = std::fs::read(&files[0]).unwrap();
    let members: Vec<usize> = (0..whole.len() - 2)
        .filter(|&i| whole[i] == 0x1f && whole[i + 1] == 0x8b && whole[i + 2] == 8)
        .collect();
    let cut = members[members.len() / part];
    let (a, b) = (out.join("a.warc.gz"), out.join("b.warc.gz"));
    std::fs::write(&a, &whole[..cut]).unwrap();
    std::fs::write(&b, &whole[cut..]).unwrap();
    (a, b)
}

#[test]
fn a_sweep_ingested_in_two_runs_equals_one() {
    let (dir, db) = corpus();
    // Sweep 3's file cut in two at a gzip member boundary, ingested by two runs into the
    // same sweep: the templates learned after the first half are learned again after
    // the second, and the content resemblances made with them are made again.
    let work = tempfile::tempdir().unwrap();
    let (a, b) = split_sweep_3(dir, work.path(), 2);
    let two = work.path().join("two");
    let one = work.path().join("one");
    for db in [&two, &one] {
        for k in 1..=2 {
            let mut args = vec!["--db".to_string(), s(db), "ingest".into(), "--sweep".into()];
            args.push(format!("sweep-{k}"));
            args.extend(sweep_files(dir, k).iter().map(|f| s(f)));
            tidemark_ok(&args.iter().map(|x| x.as_str()).collect::<Vec<_>>());
        }
    }
    tidemark_ok(&["--db", &s(&two), "ingest", "--sweep", "sweep-3", &s(&a)]);
    tidemark_ok(&["--db", &s(&two), "ingest", "--sweep", "sweep-3", &s(&b)]);
    tidemark_ok(&[
        "--db",
        &s(&one),
        "ingest",
        "--sweep",
        "sweep-3",
        &s(&a),
        &s(&b),
    ]);
    assert_eq!(export_jsonl(&two), export_jsonl(&one));
    let report = |db: &Path| tidemark_ok(&["--db", &s(db), "report", "--format", "json"]).stdout;
    assert_eq!(report(&two), report(&one));
    // And the one-run index is the corpus's own (the same records, in two files).
    let first: Vec<Value> = String::from_utf8(export_jsonl(&one))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    let corpus: Vec<Value> = String::from_utf8(export_jsonl(db))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    let content = |v: &[Value]| -> Vec<Option<f64>> {
        v.iter()
            .map(|r| r["content_resemblance_to_previous"].as_f64())
            .collect()
    };
    assert_eq!(content(&first), content(&corpus));
}

/// On content, a sweep ingested in two runs: the second learns the sweep's templates
/// from all its pages, the first run's docs keep the edges they were given, and every
/// page's content resemblance is the one a single run gives (`schema/README.md`,
/// version 13).
#[test]
fn a_sweep_ingested_in_two_runs_on_content_has_one_runs_content_resemblances() {
    let (dir, _) = corpus();
    let work = tempfile::tempdir().unwrap();
    let (a, b) = split_sweep_3(dir, work.path(), 3);
    let toml = work.path().join("content.toml");
    std::fs::write(&toml, "[cluster]\nresemblance = \"content\"\n").unwrap();
    let run = |db: &Path, args: &[String]| {
        let mut all = vec!["--db".to_string(), s(db), "--config".into(), s(&toml)];
        all.extend(args.iter().cloned());
        tidemark_ok(&all.iter().map(|x| x.as_str()).collect::<Vec<_>>()).stdout
    };
    let (two, one) = (work.path().join("two"), work.path().join("one"));
    for db in [&two, &one] {
        for k in 1..=2 {
            let mut args = vec!["ingest".to_string(), "--sweep".into(), format!("sweep-{k}")];
            args.extend(sweep_files(dir, k).iter().map(|f| s(f)));
            run(db, &args);
        }
    }
    let sweep3 = |files: &[&PathBuf]| {
        let mut args = vec!["ingest".to_string(), "--sweep".into(), "sweep-3".into()];
        args.extend(files.iter().map(|f| s(f)));
        args
    };
    run(&two, &sweep3(&[&a]));
    run(&two, &sweep3(&[&b]));
    run(&one, &sweep3(&[&a, &b]));
    let content = |db: &Path| -> Vec<(String, String, Option<f64>)> {
        String::from_utf8(run(
            db,
            &["export".into(), "--format".into(), "jsonl".into()],
        ))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            (
                r["url"].as_str().unwrap().to_string(),
                r["fetch_time"].as_str().unwrap().to_string(),
                r["content_resemblance_to_previous"].as_f64(),
            )
        })
        .collect()
    };
    let (got, want) = (content(&two), content(&one));
    assert_eq!(got.len(), want.len());
    assert!(want.iter().filter(|r| r.2.is_some()).count() > 1000);
    assert_eq!(got, want);
}

/// The score of a change-list row as the list documents it (`report::changes::SCORE`).
fn documented_score(r: &Value) -> f64 {
    let f = |k: &str| r[k].as_f64();
    let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
    if r["kind"] == "template_only" {
        return round3(1.0 - f("content_resemblance").unwrap());
    }
    // 2xx (or no status) in a sweep, and the code.
    let ok = |status: &str, ts: &str| {
        r[ts].is_string() && r[status].as_u64().is_none_or(|s| (200..300).contains(&s))
    };
    let (a, b) = (
        ok("status_before", "timestamp_before"),
        ok("status_after", "timestamp_after"),
    );
    let status = a != b || (a && b && r["status_before"] != r["status_after"]);
    let rewritten = r["kind"] == "gone" || r["kind"] == "rewritten";
    round3(
        4.0 * status as u8 as f64
            + 2.0 * rewritten as u8 as f64
            + (1.0 - f("content_resemblance").unwrap_or(0.0))
            + 0.5 * (r["title_changed"] == true) as u8 as f64,
    )
}

/// `report --changes` between two consecutive sweeps: its kinds count as the report's
/// classes, the rows are in the order of the documented score, the sections' sidebar
/// changes are folded into one row per section, the words of the changed pages are
/// read from the records, the CSV is the same list, and a page of it is a slice.
#[test]
fn the_change_list_counts_as_the_report_orders_by_its_score_and_folds_sections() {
    let (_, db) = sections_corpus();
    let json = |args: &[&str]| -> Value {
        let mut all = vec!["--db", db.to_str().unwrap(), "report"];
        all.extend(args);
        serde_json::from_slice(&tidemark_ok(&all).stdout).unwrap()
    };
    let range = ["--from", "sweep-1", "--to", "sweep-2"];
    let list = json(&[&["--changes", "--format", "json"][..], &range[..]].concat());
    let report = json(&[&["--format", "json"][..], &range[..]].concat());
    let t = &report["transitions"][0];
    let rows = list["rows"].as_array().unwrap();
    let pages = |kind: &str| -> u64 {
        (rows.iter())
            .filter(|r| r["kind"] == kind)
            .map(|r| r["pages"].as_u64().unwrap())
            .sum()
    };
    let n = |v: &Value| v.as_u64().unwrap();
    assert_eq!(pages("gone"), n(&t["urls"]["gone"]));
    assert_eq!(pages("new"), n(&t["urls"]["new"]));
    assert_eq!(pages("redirected"), n(&t["urls"]["redirected"]));
    assert_eq!(pages("rewritten"), n(&t["content"]["rewritten"]));
    assert_eq!(pages("changed_major"), n(&t["content"]["changed_major"]));
    assert_eq!(
        pages("changed_minor") + pages("template_only"),
        n(&t["content"]["changed_minor"])
    );
    assert_eq!(pages("template_only"), n(&list["template_only"]));
    assert!(pages("template_only") > 100, "{}", list["template_only"]);
    // The documented score, highest first, then by URL.
    for r in rows {
        assert_eq!(r["score"].as_f64().unwrap(), documented_score(r), "{r}");
    }
    for w in rows.windows(2) {
        let (a, b) = (
            w[0]["score"].as_f64().unwrap(),
            w[1]["score"].as_f64().unwrap(),
        );
        assert!(
            a > b || (a == b && w[0]["url"].as_str() <= w[1]["url"].as_str()),
            "out of order: {} then {}",
            w[0],
            w[1]
        );
    }
    // Each section the report names has one folded row with its pages.
    let mut named = 0;
    for c in t["template_changes"].as_array().unwrap() {
        let only = n(&c["pages_changed_only_in_template"]);
        if !c["section"].is_string() || only < 10 || only * 10 < n(&c["pages_in_both"]) {
            continue;
        }
        named += 1;
        let folded: Vec<&Value> = (rows.iter())
            .filter(|r| {
                r["kind"] == "template_only"
                    && r["host"] == c["host"]
                    && r["section"] == c["section"]
            })
            .collect();
        assert_eq!(folded.len(), 1, "{c}");
        assert_eq!(n(&folded[0]["pages"]), only, "{c}");
    }
    assert!(named >= 4, "{}", t["template_changes"]);
    // The words of the content changes, read from the records.
    let edited: Vec<&Value> = (rows.iter())
        .filter(|r| {
            matches!(
                r["kind"].as_str(),
                Some("changed_minor" | "changed_major" | "rewritten")
            )
        })
        .collect();
    assert!(edited.len() > 20, "{}", edited.len());
    let mut with_words = 0;
    for r in &edited {
        assert!(r["unread"].is_null(), "{r}");
        let words = n(&r["words_added"]) + n(&r["words_removed"]);
        // A page just under the minor bound may have changed only where its sidebar
        // meets its text: its lines show no content change.
        assert!(words > 0 || r["kind"] != "rewritten", "{r}");
        with_words += (words > 0) as usize;
    }
    assert!(
        with_words * 10 >= edited.len() * 9,
        "{with_words} of {}",
        edited.len()
    );
    // The CSV is the same list, as a CSV reader reads it.
    let csv_out = tidemark_ok(
        &[
            &[
                "--db",
                db.to_str().unwrap(),
                "report",
                "--changes",
                "--format",
                "csv",
            ][..],
            &range[..],
        ]
        .concat(),
    )
    .stdout;
    let mut reader = csv::Reader::from_reader(csv_out.as_slice());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(&header[..3], ["url", "kind", "score"]);
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), rows.len());
    for (rec, r) in records.iter().zip(rows) {
        assert_eq!(rec.len(), header.len());
        assert_eq!(&rec[0], r["url"].as_str().unwrap());
        assert_eq!(&rec[1], r["kind"].as_str().unwrap());
        let col = |name: &str| &rec[header.iter().position(|h| h == name).unwrap()];
        assert_eq!(
            col("words_added"),
            r["words_added"]
                .as_u64()
                .map(|w| w.to_string())
                .unwrap_or_default()
        );
    }
    // A page of the list is its slice.
    let page = json(
        &[
            &[
                "--changes",
                "--format",
                "json",
                "--offset",
                "7",
                "--limit",
                "9",
            ][..],
            &range[..],
        ]
        .concat(),
    );
    assert_eq!(page["rows"].as_array().unwrap()[..], rows[7..16]);
    assert_eq!(page["rows_total"], list["rows_total"]);
}
