//! Queries against the generator's ground truth: `whereis` finds every moved page's
//! newest URL, `history` reports edits with their resemblance, `similar` finds mirrors,
//! `cluster` lists a cluster; and the commands' JSON, unknown URLs and bad arguments.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{generate, ingest_generated, sweep_files, tidemark, tidemark_ok, truth};
use serde_json::Value;
use tidemark::config::Config;
use tidemark::index::Index;
use tidemark::query::history::history;
use tidemark::query::similar::{similar, Input, SimilarOptions};
use tidemark::query::whereis::{whereis, Status, WhereisOptions};
use tidemark::query::Searcher;
use tidemark::url::surt;

const SWEEPS: usize = 4;

/// One generated corpus of 4 sweeps, ingested once, shared by the tests of this file.
fn corpus() -> &'static (PathBuf, PathBuf) {
    static CORPUS: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        generate(&dir, 2500, SWEEPS, 4242);
        let db = dir.join("db");
        ingest_generated(&dir, &db, SWEEPS, &[]);
        (dir, db)
    })
}

fn opts() -> WhereisOptions {
    WhereisOptions {
        move_floor: Config::default().query.move_floor,
        links: true,
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Where each moved page should be after the last sweep: follow later moves of its new
/// URL; `None` when the page was deleted on the way.
fn expected_place(dir: &Path, from_sweep: usize, to: &str) -> Option<String> {
    let mut cur = to.to_string();
    for j in from_sweep + 1..=SWEEPS {
        let t = truth(dir, j);
        if let Some(m) = t["moves"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["from"] == cur.as_str())
        {
            cur = m["to"].as_str().unwrap().to_string();
        }
        if t["deleted"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["url"] == cur.as_str())
        {
            return None;
        }
    }
    Some(cur)
}

#[test]
fn whereis_finds_every_moved_page() {
    let (dir, db) = corpus();
    let index = Index::open_read_only(db, &Config::default()).unwrap();
    let searcher = Searcher::everything(&index).unwrap();
    let (mut total, mut right) = (0, 0);
    let mut wrong = Vec::new();
    let mut content_moves = (0, 0);
    let mut kinds: HashMap<String, (u32, u32)> = HashMap::new();
    for k in 2..=SWEEPS {
        for m in truth(dir, k)["moves"].as_array().unwrap() {
            let from = m["from"].as_str().unwrap();
            let to = m["to"].as_str().unwrap();
            let expected = expected_place(dir, k, to);
            let w = whereis(&searcher, from, opts()).unwrap();
            let ok = match &expected {
                Some(place) => {
                    w.status == Status::Moved
                        && w.newest_url.as_deref().map(surt) == Some(surt(place))
                }
                None => w.status == Status::Gone,
            };
            let kind = format!(
                "{}{}",
                match m["old_status"].as_u64() {
                    Some(301) => "301",
                    Some(404) => "404",
                    _ => "vanished",
                },
                if m["across_hosts"].as_bool().unwrap() {
                    " across hosts"
                } else {
                    " same host"
                }
            );
            let e = kinds.entry(kind).or_default();
            e.0 += 1;
            total += 1;
            if ok {
                right += 1;
                e.1 += 1;
            } else {
                wrong.push(format!(
                    "sweep {k}: {from} -> {to} (expected {expected:?}, r={}): got {:?} {:?} {:?}",
                    m["resemblance"], w.status, w.newest_url, w.evidence
                ));
            }
            // A move without a redirect must be carried by content evidence.
            if m["old_status"].as_u64() != Some(301) && expected.is_some() {
                content_moves.0 += 1;
                if w.evidence.iter().any(|e| e.kind == "content") {
                    content_moves.1 += 1;
                }
            }
        }
    }
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort();
    for (k, (n, ok)) in &kinds {
        println!("  {k:<24} {ok}/{n}");
    }
    println!(
        "whereis: {right}/{total} moves right ({:.2}%); content evidence on {}/{} moves without redirect",
        100.0 * right as f64 / total as f64,
        content_moves.1,
        content_moves.0
    );
    for w in wrong.iter().take(10) {
        println!("  WRONG {w}");
    }
    assert!(total >= 100, "too few moves to judge: {total}");
    assert!(
        right as f64 >= 0.99 * total as f64,
        "whereis right on {right}/{total} moves"
    );
    assert_eq!(content_moves.0, content_moves.1);
}

#[test]
fn pages_that_stay_are_alive_and_deleted_ones_are_gone() {
    let (dir, db) = corpus();
    let index = Index::open_read_only(db, &Config::default()).unwrap();
    let searcher = Searcher::everything(&index).unwrap();
    let last = truth(dir, SWEEPS);
    // URLs captured with 200 in the last sweep are alive.
    let mut alive = 0;
    for u in last["urls"].as_array().unwrap().iter().take(400) {
        if u["status"] != 200 {
            continue;
        }
        let w = whereis(&searcher, u["url"].as_str().unwrap(), opts()).unwrap();
        assert_eq!(w.status, Status::Alive, "{u}: {w:?}");
        alive += 1;
    }
    assert!(alive > 100);
    // Deleted pages (404 or no longer captured) whose content went nowhere are gone.
    let mut gone = 0;
    for k in 2..=SWEEPS {
        for d in truth(dir, k)["deleted"].as_array().unwrap() {
            let url = d["url"].as_str().unwrap();
            // Captured again later (re-created)? Then it is not gone.
            let later = (k..=SWEEPS).any(|j| {
                truth(dir, j)["urls"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|u| u["url"] == url && u["status"] == 200)
            });
            if later {
                continue;
            }
            let w = whereis(&searcher, url, opts()).unwrap();
            assert_eq!(w.status, Status::Gone, "{url}: {w:?}");
            gone += 1;
        }
    }
    assert!(gone > 10, "{gone}");
    // Never captured: unknown, not an error.
    let w = whereis(&searcher, "http://never-captured.example/nothing", opts()).unwrap();
    assert_eq!(w.status, Status::Unknown);
}

#[test]
fn history_reports_edits_with_their_resemblance() {
    let (dir, db) = corpus();
    let index = Index::open_read_only(db, &Config::default()).unwrap();
    let searcher = Searcher::everything(&index).unwrap();
    let (mut n, mut close, mut worst) = (0, 0, 0.0f64);
    for k in 2..=SWEEPS {
        for e in truth(dir, k)["edits"].as_array().unwrap() {
            let url = e["url"].as_str().unwrap();
            let h = history(&searcher, url, opts(), None).unwrap();
            let v = h
                .captures
                .iter()
                .find(|c| c.sweep == format!("sweep-{k}"))
                .unwrap_or_else(|| panic!("{url} has no capture in sweep {k}: {h:?}"));
            assert_eq!(v.change, "changed", "{url} in sweep {k}: {v:?}");
            if e["min_shingles"].as_u64().unwrap() < 500 {
                continue;
            }
            let exact = e["resemblance"].as_f64().unwrap();
            let est = v.resemblance_to_previous.expect("an estimate");
            n += 1;
            let err = (est - exact).abs();
            worst = worst.max(err);
            if err <= 0.05 {
                close += 1;
            }
        }
    }
    println!(
        "history: {close}/{n} edits of pages >= 500 shingles within 0.05 of the exact resemblance (worst {worst:.3})"
    );
    assert!(n >= 50, "too few edits: {n}");
    assert!(close as f64 >= 0.95 * n as f64);
}

#[test]
fn similar_finds_every_mirror() {
    let (dir, db) = corpus();
    let index = Index::open_read_only(db, &Config::default()).unwrap();
    let searcher = Searcher::everything(&index).unwrap();
    let mut groups = 0;
    let mut lowest = 1.0f64;
    for k in 1..=SWEEPS {
        for g in truth(dir, k)["mirror_groups"].as_array().unwrap() {
            let urls: Vec<&str> = g
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u.as_str().unwrap())
                .collect();
            // The original as it was in that sweep (it may have been edited since).
            let h = history(&searcher, urls[0], opts(), None).unwrap();
            let then = h
                .captures
                .iter()
                .find(|c| c.sweep == format!("sweep-{k}"))
                .and_then(|c| c.doc)
                .unwrap_or_else(|| panic!("{} has no content in sweep {k}", urls[0]));
            let r = similar(
                &searcher,
                &Input::Doc(then),
                &SimilarOptions {
                    // Mirrors carry the same body in another host's page chrome: small
                    // pages resemble their mirrors at 0.4-0.5 only.
                    threshold: 0.3,
                    containment: false,
                    limit: 1000,
                },
            )
            .unwrap();
            for m in &urls[1..] {
                if let Some(p) = r.results.iter().find(|p| surt(&p.url) == surt(m)) {
                    lowest = lowest.min(p.resemblance);
                }
                assert!(
                    r.results.iter().any(|p| surt(&p.url) == surt(m)),
                    "sweep {k}: mirror {m} of {} not found: {:?}",
                    urls[0],
                    r.results
                );
            }
            groups += 1;
        }
    }
    println!(
        "similar: every mirror of {groups} mirror groups found (lowest resemblance {lowest:.3})"
    );
    assert!(groups >= 10, "{groups}");
}

#[test]
fn commands_print_json_and_refuse_bad_arguments() {
    let (dir, db) = corpus();
    let t2 = truth(dir, 2);
    let m = &t2["moves"].as_array().unwrap()[0];
    let from = m["from"].as_str().unwrap();
    let db_arg = db.to_str().unwrap();
    let run = |args: &[&str]| tidemark(&[&["--db", db_arg], args].concat());
    // Exit 0 (else the command's stderr), then its JSON.
    let json_ok = |args: &[&str]| -> Value {
        serde_json::from_slice(&tidemark_ok(&[&["--db", db_arg], args].concat()).stdout).unwrap()
    };
    let out = run(&["whereis", from, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for f in [
        "url",
        "status",
        "newest_url",
        "newest_date",
        "evidence",
        "alternatives",
    ] {
        assert!(v.get(f).is_some(), "whereis --json lacks {f}: {v}");
    }
    assert_eq!(v["status"], "moved");
    let out = run(&["whereis", "https://nowhere.example/x", "--json"]);
    assert_eq!(out.status.code(), Some(0), "unknown is not an error");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "unknown");
    let out = run(&["history", from, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let caps = v["captures"].as_array().unwrap();
    assert!(!caps.is_empty());
    for f in [
        "date",
        "sweep",
        "status",
        "doc",
        "change",
        "resemblance_to_previous",
        "redirect_to",
        "moved_to",
    ] {
        assert!(caps[0].get(f).is_some(), "history --json lacks {f}");
    }
    let to = m["to"].as_str().unwrap();
    let v = json_ok(&["similar", to, "--json", "--threshold", "0.3"]);
    for p in v.as_array().unwrap() {
        for f in ["url", "date", "doc", "resemblance", "containment"] {
            assert!(p.get(f).is_some());
        }
    }
    let out = run(&["cluster", to, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["size"].as_u64().unwrap() >= 1);
    // A file never ingested: its own WARC record finds the page it came from.
    let f = &sweep_files(dir, 1)[0];
    let v = json_ok(&["similar", "--file", &s(f), "--json", "--threshold", "0.9"]);
    assert!(
        !v.as_array().unwrap().is_empty(),
        "the file's first page is in the index"
    );
    // Bad arguments: exit 2 with what was expected.
    let out = run(&["whereis", "not a url"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected http(s)://host/path"));
    let out = run(&["similar", to, "--threshold", "7"]);
    assert_eq!(out.status.code(), Some(2));
    let out = tidemark(&["--db", "/nonexistent/index", "whereis", from]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no tidemark index"));
    // A URL never captured, where the command needs its content: exit 1, said so.
    let out = run(&["cluster", "https://nowhere.example/x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("never captured"));
    // A URL in the query (login redirects, share links) is a URL, not a bad argument.
    let out = run(&[
        "whereis",
        "http://nowhere.example/login?next=http://b.example/",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("never captured"));
}

#[test]
fn stored_texts_are_the_canonical_texts_and_diffs_show_edits() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 300, 2, 77);
    let config = dir.path().join("texts.toml");
    std::fs::write(&config, "[index]\nstore_texts = true\n").unwrap();
    let db = dir.path().join("db");
    ingest_generated(dir.path(), &db, 2, &["--config", &s(&config)]);
    // Every stored text is the canonical text of a record that carries the doc.
    let index = Index::open_read_only(&db, &Config::default()).unwrap();
    let searcher = Searcher::everything(&index).unwrap();
    let reader = tidemark::index::texts::TextReader::new(&index).unwrap();
    let params = tidemark::sketch::SketchParams::default();
    let mut scratch = tidemark::capture::Scratch::default();
    let mut checked = 0;
    for f in sweep_files(dir.path(), 2) {
        for rec in tidemark::read::RecordReader::open(&f, 16 << 20).unwrap() {
            let rec = rec.unwrap();
            let cap = tidemark::capture::analyze(&rec, &params, 16 << 20, &mut scratch);
            let (Some(url), Some(ts), Some(_)) = (&cap.url, &cap.timestamp, cap.text_fingerprint)
            else {
                continue;
            };
            let caps = searcher.captures(url).unwrap();
            let Some(doc) = caps
                .iter()
                .find(|c| &c.timestamp == ts)
                .and_then(|c| c.info.doc)
            else {
                continue;
            };
            let stored = reader.text(&index, doc).unwrap().expect("text stored");
            assert_eq!(stored, scratch.canon().text, "{url}");
            checked += 1;
        }
    }
    assert!(checked > 200, "{checked}");
    // Edits show as word diffs; a text the index did not store is said so.
    let t = truth(dir.path(), 2);
    let mut diffs = 0;
    for e in t["edits"].as_array().unwrap() {
        let url = e["url"].as_str().unwrap();
        let out = tidemark(&["--db", &s(&db), "history", url, "--diff", "--json"]);
        assert_eq!(out.status.code(), Some(0));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let changed: Vec<&Value> = v["captures"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["change"] == "changed")
            .collect();
        assert_eq!(changed.len(), 1, "{url}: {v}");
        let d = changed[0]["diff"].as_str().expect("a diff");
        assert!(d.contains("[-") || d.contains("{+"), "{url}: {d}");
        diffs += 1;
    }
    assert!(diffs >= 10, "{diffs}");
    // An index built without texts shows the diff from its WARC records; where they are
    // not found, it says so and names --archive.
    let (cdir, cdb) = corpus();
    let edit = truth(cdir, 2)["edits"][0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let plain = Index::open_read_only(cdb, &Config::default()).unwrap();
    let archive = tidemark::query::diff::Archive::new(&plain, &[]).unwrap();
    let diff_of = |a: &tidemark::query::diff::Archive| {
        history(
            &Searcher::everything(&plain).unwrap(),
            &edit,
            opts(),
            Some(a),
        )
        .unwrap()
        .captures
        .iter()
        .find_map(|c| c.diff.clone())
        .expect("a changed version")
    };
    let d = diff_of(&archive);
    assert!(d.contains("[-") || d.contains("{+"), "{d}");
    let d = diff_of(&tidemark::query::diff::Archive::default());
    assert!(d.contains("--archive"), "{d}");
}

#[test]
fn word_diff_marks_removed_and_added_words() {
    use tidemark::query::history::word_diff;
    assert_eq!(word_diff("a b c d", "a x c d"), "… a [-b-] {+x+} c d …");
    assert_eq!(word_diff("a b", "a b c"), "… a b {+c+}");
    let long_old = (0..40)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let long_new = long_old.replace("w20", "changed");
    assert_eq!(
        word_diff(&long_old, &long_new),
        "… w14 w15 w16 w17 w18 w19 [-w20-] {+changed+} w21 w22 w23 w24 w25 w26 …"
    );
}
