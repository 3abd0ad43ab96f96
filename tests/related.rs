//! Links as evidence on generated sweeps with topics (`tidemark-gen --topics`): pages
//! link mostly within their topic with the target's title as anchor text, and some are
//! renamed and rewritten between sweeps while the pages that link them follow.
//!
//! - `related`: the top 10 of sampled pages share their topic (truth) for at least 80%
//!   of the pages listed, and more than content alone (`similar`) finds;
//! - `whereis`: renamed-and-rewritten pages (content resemblance under 0.5, no redirect)
//!   are found at their new URL for at least 90%, by `links` evidence naming the linking
//!   pages; no deleted or live page is called moved (at most 1%);
//! - `report` counts the moves by evidence, the links moves as many as the truth's;
//!   `history` names the evidence of the move;
//! - the service answers `/api/related` and `/api/inlinks` as the commands do, and under
//!   an access rule that hides a host lists none of its pages.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use common::server::{enc, Server};
use common::{ingest_generated, tidemark, tidemark_gen, tidemark_ok, truth};
use serde_json::Value;

const SWEEPS: usize = 3;

fn json(args: &[&str]) -> Value {
    serde_json::from_slice(&tidemark_ok(args).stdout).unwrap()
}

/// Three sweeps of 700 pages of 12 topics on 3 hosts, ingested.
fn setup(dir: &Path) -> std::path::PathBuf {
    let out = tidemark_gen(&[
        "--out",
        dir.to_str().unwrap(),
        "--pages",
        "700",
        "--hosts",
        "3",
        "--sweeps",
        &SWEEPS.to_string(),
        "--topics",
        "12",
        "--seed",
        "5",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let db = dir.join("db");
    ingest_generated(dir, &db, SWEEPS, &[]);
    db
}

/// The topic of every URL of the last sweep.
fn topics(dir: &Path) -> BTreeMap<String, u64> {
    let t = truth(dir, SWEEPS);
    (t["urls"].as_array().unwrap().iter())
        .filter_map(|u| Some((u["url"].as_str()?.to_string(), u["topic"].as_u64()?)))
        .collect()
}

/// Share of the listed URLs (at most 10 a page) in the page's topic.
fn precision(pages: &[(String, Vec<String>)], topic: &BTreeMap<String, u64>) -> (f64, usize) {
    let (mut same, mut listed) = (0usize, 0usize);
    for (u, got) in pages {
        for g in got.iter().filter(|g| *g != u).take(10) {
            listed += 1;
            same += (topic.get(g) == topic.get(u)) as usize;
        }
    }
    (same as f64 / listed.max(1) as f64, listed)
}

#[test]
fn related_pages_share_their_topic_and_renamed_pages_are_found_by_their_links() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let db = setup(dir);
    let d = db.to_str().unwrap();
    let topic = topics(dir);
    let urls: Vec<&String> = topic.keys().collect();
    let sample: Vec<&String> = urls.iter().step_by(urls.len() / 60).copied().collect();

    // Related by anchors, and by content alone.
    let mut by_anchors = Vec::new();
    let mut by_content = Vec::new();
    let mut shared_words = 0;
    for u in &sample {
        let out = tidemark(&["--db", d, "related", u, "--json"]);
        if out.status.success() {
            let r: Value = serde_json::from_slice(&out.stdout).unwrap();
            let pages = r["pages"].as_array().unwrap();
            shared_words += pages
                .iter()
                .filter(|p| !p["shared_anchor_words"].as_array().unwrap().is_empty())
                .count();
            by_anchors.push((
                u.to_string(),
                pages
                    .iter()
                    .map(|p| p["url"].as_str().unwrap().to_string())
                    .collect(),
            ));
        } else {
            // A page fewer than two pages link has no bag: said so (exit 1), and true.
            assert_eq!(
                out.status.code(),
                Some(1),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let inl = tidemark(&["--db", d, "inlinks", u, "--json"]);
            if inl.status.success() {
                let inl: Value = serde_json::from_slice(&inl.stdout).unwrap();
                assert_eq!(inl["linking_pages"], 1, "{u}: {inl}");
            } else {
                // Linked by no page: not found either.
                assert_eq!(inl.status.code(), Some(1));
            }
        }
        let similar = json(&[
            "--db",
            d,
            "similar",
            u,
            "--threshold",
            "0",
            "--limit",
            "11",
            "--json",
        ]);
        by_content.push((
            u.to_string(),
            (similar.as_array().unwrap().iter())
                .map(|m| m["url"].as_str().unwrap().to_string())
                .collect(),
        ));
    }
    let (anchors, listed) = precision(&by_anchors, &topic);
    let (content, _) = precision(&by_content, &topic);
    eprintln!(
        "related@10 by anchors {anchors:.3} ({listed} listed for {} of {} pages), by content alone {content:.3}",
        by_anchors.len(),
        sample.len()
    );
    assert!(
        by_anchors.len() * 10 >= sample.len() * 8,
        "{} of {}",
        by_anchors.len(),
        sample.len()
    );
    assert!(anchors >= 0.8, "related@10 by anchors {anchors:.3}");
    assert!(
        anchors > content,
        "by anchors {anchors:.3}, by content {content:.3}"
    );
    assert!(
        shared_words > listed / 2,
        "{shared_words} of {listed} with shared anchor words"
    );

    // Renamed and rewritten pages, followed through later moves.
    let truths: Vec<Value> = (1..=SWEEPS).map(|k| truth(dir, k)).collect();
    let mut next: HashMap<String, String> = HashMap::new();
    for t in &truths {
        for m in t["moves"].as_array().unwrap() {
            next.insert(
                m["from"].as_str().unwrap().into(),
                m["to"].as_str().unwrap().into(),
            );
        }
    }
    let last = |mut u: String| {
        for _ in 0..10 {
            match next.get(&u) {
                Some(n) => u = n.clone(),
                None => break,
            }
        }
        u
    };
    let renamed: Vec<&Value> = (truths.iter())
        .flat_map(|t| t["moves"].as_array().unwrap())
        .filter(|m| m["rewritten"] == true)
        .collect();
    assert!(
        renamed.len() >= 20,
        "{} renamed-and-rewritten moves",
        renamed.len()
    );
    let mut found = 0;
    let mut history_named = false;
    for m in &renamed {
        assert!(m["content_resemblance"].as_f64().unwrap() < 0.5, "{m}");
        let from = m["from"].as_str().unwrap();
        let w = json(&["--db", d, "whereis", from, "--json"]);
        if w["newest_url"].as_str() == Some(last(m["to"].as_str().unwrap().into()).as_str()) {
            found += 1;
            let step = &w["evidence"][0];
            assert_eq!(step["kind"], "links", "{w}");
            assert!(!step["linking_pages"].as_array().unwrap().is_empty(), "{w}");
            if !history_named {
                let h = json(&["--db", d, "history", from, "--json"]);
                let moved: Vec<&Value> = (h["captures"].as_array().unwrap().iter())
                    .filter(|c| !c["moved_to"].is_null())
                    .collect();
                assert_eq!(moved.len(), 1, "{h}");
                assert_eq!(moved[0]["moved_by"][0], "links", "{h}");
                history_named = true;
            }
        }
    }
    let share = found as f64 / renamed.len() as f64;
    eprintln!("renamed and rewritten found {found} of {}", renamed.len());
    assert!(share >= 0.9, "found {found} of {}", renamed.len());

    // No false moves: deleted pages, and live pages of the last sweep that never moved.
    let deleted: Vec<String> = (truths.iter())
        .flat_map(|t| t["deleted"].as_array().unwrap())
        .map(|g| g["url"].as_str().unwrap().to_string())
        .collect();
    let live: Vec<String> = (truths[SWEEPS - 1]["urls"].as_array().unwrap().iter())
        .filter(|u| u["status"] == 200)
        .map(|u| u["url"].as_str().unwrap().to_string())
        .filter(|u| !next.contains_key(u))
        .step_by(8)
        .collect();
    let mut false_moves = Vec::new();
    for u in deleted.iter().chain(&live) {
        let w = json(&["--db", d, "whereis", u, "--json"]);
        if w["status"] == "moved" {
            false_moves.push(w);
        }
    }
    let asked = deleted.len() + live.len();
    eprintln!(
        "false moves: {} of {asked} deleted or unchanged pages",
        false_moves.len()
    );
    assert!(
        false_moves.len() * 100 <= asked,
        "{} false moves of {asked}: {false_moves:?}",
        false_moves.len()
    );

    // The report counts the moves by evidence: by links as many as the truth's renamed
    // pages of each sweep (none of them has a redirect or its content to go by).
    let report = json(&["--db", d, "report", "--format", "json"]);
    for (i, t) in report["transitions"].as_array().unwrap().iter().enumerate() {
        let m = &t["moves"];
        let want = (truths[i + 1]["moves"].as_array().unwrap().iter())
            .filter(|m| m["rewritten"] == true)
            .count() as f64;
        let got = m["by_links"].as_f64().unwrap();
        assert!(
            got >= 0.9 * want && got <= want + 1.0,
            "{i}: {m} for {want}"
        );
        let kinds = m["by_redirect"].as_u64().unwrap()
            + m["by_content"].as_u64().unwrap()
            + m["by_links"].as_u64().unwrap();
        assert_eq!(
            kinds,
            m["within_host"].as_u64().unwrap() + m["across_hosts"].as_u64().unwrap(),
            "{m}"
        );
        assert!(
            m["by_redirect"].as_u64().unwrap() > 0 && m["by_content"].as_u64().unwrap() > 0,
            "{m}"
        );
    }

    // The service answers as the commands do; under a rule hiding a host, its pages are
    // not listed.
    let asked = &by_anchors[0].0;
    let cli = json(&["--db", d, "related", asked, "--json"]);
    let srv = Server::start(&db, &[], &[]);
    assert_eq!(srv.json(&format!("/api/related?url={}", enc(asked))), cli);
    let inl = json(&["--db", d, "inlinks", asked, "--json"]);
    assert_eq!(srv.json(&format!("/api/inlinks?url={}", enc(asked))), inl);
    let (status, _, _) = srv.get(&format!("/api/related?url={}&limit=0", enc(asked)));
    assert_eq!(status, 400);
    srv.stop();
    // A host of another page's related list, hidden: the page (none of whose linking
    // pages is on that host) lists none of the host's pages, nor any page the host
    // links; a page the host links is not found, as for a reader of nothing.
    let host = |x: &str| x.split('/').nth(2).unwrap_or("").to_string();
    let linkers = |u: &str| -> Vec<String> {
        let out = tidemark(&["--db", d, "inlinks", u, "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if v.is_null() {
            return Vec::new();
        }
        (v["sources"].as_array().unwrap().iter())
            .map(|x| x["source"].as_str().unwrap().to_string())
            .collect()
    };
    let surt_host = |h: &str| {
        let key = tidemark::url::surt(&format!("https://{h}/"));
        key.split(')').next().unwrap().to_string() + ")"
    };
    let (page, other) = by_anchors
        .iter()
        .find_map(|(u, got)| {
            let other = got.iter().map(|g| host(g)).find(|h| *h != host(u))?;
            let hidden = surt_host(&other);
            (!linkers(u).iter().any(|l| l.starts_with(&hidden))).then(|| (u.clone(), other))
        })
        .expect("a related page on another host, the page not linked from it");
    let hidden = surt_host(&other);
    let linked_from_hidden = by_anchors
        .iter()
        .map(|(u, _)| u.clone())
        .find(|u| host(u) != other && linkers(u).iter().any(|l| l.starts_with(&hidden)))
        .expect("a page the hidden host links");
    let acl = dir.join("rules.aclj");
    std::fs::write(&acl, format!("{hidden}/ - {{\"access\": \"exclude\"}}\n")).unwrap();
    let srv = Server::start(&db, &[], &["--acl", acl.to_str().unwrap()]);
    let ruled = srv.json(&format!("/api/related?url={}&limit=30", enc(&page)));
    let text = ruled.to_string();
    assert!(!text.contains(&other), "{other} in {text}");
    assert!(!ruled["pages"].as_array().unwrap().is_empty(), "{ruled}");
    for p in ruled["pages"].as_array().unwrap() {
        let from = linkers(p["url"].as_str().unwrap());
        assert!(
            !from.iter().any(|l| l.starts_with(&hidden)),
            "{p}: {from:?}"
        );
    }
    let (status, _, _) = srv.get(&format!("/api/related?url={}", enc(&linked_from_hidden)));
    assert_eq!(status, 404, "{linked_from_hidden}");
    let inl = srv.json(&format!("/api/inlinks?url={}", enc(&page)));
    assert!(!inl.to_string().contains(&other), "{inl}");
    srv.stop();
}
