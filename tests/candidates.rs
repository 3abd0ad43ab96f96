//! One candidate search for ingest, `similar` and the report's move matching: on a
//! family of near-identical pages larger than the common-shingle cap (every posting
//! list of its template is boilerplate), the three must agree — ingest joins the
//! family into one cluster through the heads of the over-cap lists, `similar` finds the
//! family from any member, and the report finds the member that moved, also when its
//! edit keeps it out of the cluster. A search of its own in any of them (no cap, no
//! heads) makes this test fail.

mod common;

use std::path::Path;

use common::tidemark;
use tidemark::synth::warc;

const FAMILY: usize = 24;

/// A page of the family: the shared template and 60 words of its own.
fn page(i: usize, edited: bool) -> String {
    let template: Vec<String> = (0..300).map(|w| format!("tmpl{}", w * 7 % 997)).collect();
    let own: Vec<String> = (0..60).map(|w| format!("own{i}x{w}")).collect();
    let words = if edited {
        // Moved with a new frame: most of the template cut, its own words kept and a few
        // added. Still recognisable by its content (above the move floor, both templates
        // left out), no longer a near-duplicate (below the clustering threshold).
        let fresh: Vec<String> = (0..20).map(|w| format!("new{w}")).collect();
        format!(
            "{} {} {}",
            template[..120].join(" "),
            own.join(" "),
            fresh.join(" ")
        )
    } else {
        format!("{} {}", template.join(" "), own.join(" "))
    };
    format!("<html><head><title>page {i}</title></head><body><p>{words}</p></body></html>")
}

fn write_sweep(path: &Path, date: &str, pages: &[(String, String)]) {
    let mut out = Vec::new();
    for (url, html) in pages {
        let block = warc::http_response(200, &[("Content-Type", "text/html")], html.as_bytes());
        out.extend(warc::gzip_member(
            &warc::response(url, date, None, &block),
            1,
        ));
    }
    std::fs::write(path, out).unwrap();
}

fn run(db: &Path, cfg: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec![
        "--db",
        db.to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = tidemark(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

#[test]
fn ingest_similar_and_the_report_agree_on_a_family_larger_than_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("small-cap.toml");
    // A cap of 8: the family's template values are shared by 24 docs, over it. On all
    // shingles: on content the family's template is learned and left out, and what is
    // tested here is the search through the over-cap lists of a shared template.
    std::fs::write(
        &cfg,
        "[cluster]\ncommon_shingle_cap = 8\nresemblance = \"full\"\n",
    )
    .unwrap();
    let url = |i: usize| format!("http://fam.example/p{i}.html");
    let one: Vec<(String, String)> = (0..FAMILY).map(|i| (url(i), page(i, false))).collect();
    // Sweep 2: page 3 moved to a new URL and was rewritten in part.
    let mut two: Vec<(String, String)> = (0..FAMILY)
        .filter(|i| *i != 3)
        .map(|i| (url(i), page(i, false)))
        .collect();
    two.push(("http://fam.example/moved/p3.html".into(), page(3, true)));
    let (s1, s2) = (dir.path().join("s1.warc.gz"), dir.path().join("s2.warc.gz"));
    write_sweep(&s1, "2026-01-01T00:00:00Z", &one);
    write_sweep(&s2, "2026-02-01T00:00:00Z", &two);
    let db = dir.path().join("db");
    run(
        &db,
        &cfg,
        &["ingest", "--sweep", "one", s1.to_str().unwrap()],
    );
    run(
        &db,
        &cfg,
        &["ingest", "--sweep", "two", s2.to_str().unwrap()],
    );

    // Ingest: the family is one cluster (members after the cap joined through heads).
    let c = run(&db, &cfg, &["cluster", &url(FAMILY - 1), "--json"]);
    assert_eq!(c["size"].as_u64(), Some(FAMILY as u64), "{c}");
    // similar: every member finds the family (at the clustering threshold).
    for i in [0, 8, FAMILY - 1] {
        let r = run(
            &db,
            &cfg,
            &["similar", &url(i), "--threshold", "0.5", "--json"],
        );
        let found = r.as_array().map(|a| a.len()).unwrap_or(0);
        assert!(found >= 1, "similar from member {i} found nothing: {r}");
    }
    // The moved page: not in the cluster any more, but found by the report's move
    // matching (content resemblance above the move floor) and by `similar` at that floor.
    let moved = "http://fam.example/moved/p3.html";
    let m = run(&db, &cfg, &["cluster", moved, "--json"]);
    assert_eq!(
        m["size"].as_u64(),
        Some(1),
        "the rewritten page stays apart: {m}"
    );
    let r = run(
        &db,
        &cfg,
        &["similar", moved, "--threshold", "0.3", "--json"],
    );
    let urls: Vec<&str> = r
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["url"].as_str())
        .collect();
    assert!(
        urls.contains(&url(3).as_str()),
        "similar misses its old version: {r}"
    );
    let rep = run(&db, &cfg, &["report", "--format", "json"]);
    let moves = &rep["transitions"][0]["moves"];
    assert_eq!(moves["within_host"].as_u64(), Some(1), "{moves}");
}
