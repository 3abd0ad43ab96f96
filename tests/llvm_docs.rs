//! On real sweeps of a real site: the LLVM and Clang manuals of five releases
//! (`tools/llvm_sweeps.sh`, which `tools/test.sh` runs and names in
//! `TIDEMARK_LLVM_SWEEPS`). Content resemblance lands in the truth's band (the exact
//! Jaccard without the very common shingles) for at least 95% of the changed URLs of
//! every pair of sweeps; the report names the theme change; `history --diff` shows a
//! changed page's removed and added lines from the WARC records, through the command and
//! the JSON API, and its history's replay links answer with the archived bytes; the
//! change list of the theme change puts gone pages and rewrites first and folds the
//! template-only pages into one row; `related` lists pages of the same documentation
//! section.

mod common;

use std::path::PathBuf;

use common::server::{enc, Server};
use common::tidemark_ok;
use serde_json::Value;

/// The five sweeps ingested once, shared by the tests of this file.
fn index() -> Option<&'static PathBuf> {
    static DB: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DB.get_or_init(|| {
        let dir = common::llvm_sweeps()?;
        let db = tempfile::tempdir().unwrap().keep().join("db");
        common::ingest_llvm(&dir, &db);
        Some(db)
    })
    .as_ref()
}

#[test]
fn content_resemblance_lands_in_the_truths_band_on_every_pair_of_sweeps() {
    let Some(db) = index() else { return };
    let rows = common::content_bands(db);
    let mut pairs = 0;
    for r in rows.as_array().unwrap() {
        println!("{r}");
        if r["changed"].as_u64().unwrap() < 100 {
            continue;
        }
        pairs += 1;
        assert_eq!(r["missing"], 0, "{r}");
        assert!(r["content_agree"].as_f64().unwrap() >= 0.95, "{r}");
    }
    assert_eq!(pairs, 4, "the four pairs of consecutive sweeps: {rows}");
    // LLVM 16's new theme (s3 → s4) is said first, as a template change of llvm.org.
    let table =
        String::from_utf8(tidemark_ok(&["--db", db.to_str().unwrap(), "report"]).stdout).unwrap();
    assert!(
        table
            .lines()
            .take(4)
            .any(|l| l.starts_with("llvm.org changed its template between s3 and s4")),
        "{table}"
    );
}

#[test]
fn history_diff_shows_a_real_pages_lines_through_the_command_and_the_api() {
    let Some(db) = index() else { return };
    let url = "https://llvm.org/docs/GettingStarted.html";
    let d = db.to_str().unwrap();
    let cli: Value = serde_json::from_slice(
        &tidemark_ok(&["--db", d, "history", "--diff", "--json", url]).stdout,
    )
    .unwrap();
    let caps = cli["captures"].as_array().unwrap();
    assert_eq!(caps.len(), 5, "{cli}");
    let s2 = &caps[1];
    assert_eq!(s2["change"], "changed", "{s2}");
    let c = &s2["changes"];
    // LLVM 14's manual names the runtimes apart from the projects.
    assert!(
        c["lines_added"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains("-DLLVM_ENABLE_RUNTIMES")),
        "{c}"
    );
    assert!(c["words_removed"].as_u64().unwrap() > 10, "{c}");
    assert!(c["words_added"].as_u64().unwrap() > 10, "{c}");
    assert!(c["template_pages"].as_u64().unwrap() >= 4, "{c}");
    // The table prints them; the API answers the same JSON.
    let text =
        String::from_utf8(tidemark_ok(&["--db", d, "history", "--diff", url]).stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("    + ") && l.contains("-DLLVM_ENABLE_RUNTIMES")),
        "{text}"
    );
    let srv = Server::start(db, &[], &[]);
    assert_eq!(
        srv.json(&format!("/api/history?url={}&diff=1", enc(url))),
        cli
    );
    // Each history row of the page links to its archived capture, which answers 200
    // with the archived page.
    let (status, _, page) = srv.get(&format!("/?url={}", enc(url)));
    assert_eq!(status, 200);
    let page = String::from_utf8(page).unwrap();
    let links: Vec<String> = page
        .split("class=\"replay\" href=\"")
        .skip(1)
        .map(|s| {
            s.split('"')
                .next()
                .unwrap()
                .replace("&#x2f;", "/")
                .replace("&#47;", "/")
                .replace("&amp;", "&")
        })
        .collect();
    assert_eq!(links.len(), 5, "{page}");
    for l in links {
        let (status, _, body) = srv.get(&l);
        assert_eq!(status, 200, "{l}");
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains("Getting Started"), "{l}");
    }
}

/// `report --changes --from s3 --to s4` (LLVM 16's new theme): the pages that changed
/// only in template are one row for llvm.org, as many as the report counts; status
/// changes and rewrites come first; the release notes, rewritten, show words and links
/// added and removed read from the records; the CSV reads back as the same rows; the
/// HTML report carries the list in pages.
#[test]
fn the_change_list_of_the_theme_change_leads_with_status_changes_and_rewrites() {
    let Some(db) = index() else { return };
    let db = db.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["--db", db, "report", "--from", "s3", "--to", "s4"];
        args.extend(extra);
        tidemark_ok(&args).stdout
    };
    let list: Value = serde_json::from_slice(&run(&["--changes", "--format", "json"])).unwrap();
    let report: Value = serde_json::from_slice(&run(&["--format", "json"])).unwrap();
    let rows = list["rows"].as_array().unwrap();
    let theme = (report["transitions"][0]["template_changes"]
        .as_array()
        .unwrap()
        .iter())
    .find(|c| c["host"] == "llvm.org" && c["section"].is_null())
    .expect("llvm.org's template change");
    let folded: Vec<&Value> = (rows.iter())
        .filter(|r| r["kind"] == "template_only" && r["host"] == "llvm.org")
        .collect();
    assert_eq!(folded.len(), 1, "{folded:?}");
    assert!(folded[0]["section"].is_null(), "{}", folded[0]);
    assert_eq!(folded[0]["pages"], theme["pages_changed_only_in_template"]);
    assert!(folded[0]["pages"].as_u64().unwrap() > 500, "{}", folded[0]);
    // Status changes and rewrites first.
    let first = |r: &Value| {
        matches!(
            r["kind"].as_str(),
            Some("gone" | "new" | "redirected" | "status" | "rewritten")
        )
    };
    let leading = rows.iter().take_while(|r| first(r)).count();
    assert!(leading > 100, "{leading}");
    assert_eq!(rows.iter().filter(|r| first(r)).count(), leading);
    let notes = (rows.iter())
        .find(|r| r["url"] == "https://llvm.org/docs/ReleaseNotes.html")
        .expect("the release notes changed");
    assert_eq!(notes["kind"], "rewritten", "{notes}");
    for k in [
        "words_added",
        "words_removed",
        "links_added",
        "links_removed",
    ] {
        assert!(notes[k].as_u64().unwrap() > 0, "{k}: {notes}");
    }
    let csv_out = run(&["--changes", "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(csv_out.as_slice());
    let urls: Vec<String> = (reader.records())
        .map(|r| r.unwrap()[0].to_string())
        .collect();
    let want: Vec<&str> = rows.iter().map(|r| r["url"].as_str().unwrap()).collect();
    assert_eq!(urls, want);
    let html = String::from_utf8(run(&["--changes", "--format", "html"])).unwrap();
    assert!(
        html.contains("What changed from s3 to s4"),
        "no change list"
    );
    let pages = rows.len().div_ceil(50);
    assert!(pages > 1);
    assert!(
        html.contains(&format!("id=\"changes-{pages}\"")),
        "{pages} pages"
    );
    assert!(html.contains(&format!("href=\"#changes-{pages}\"")));
}

/// `cluster --urls` on a list of 1,000 URLs of the five sweeps (as a search engine's
/// result page, with a repeat, a URL never captured and one that is not a URL): its
/// groups are those `cluster URL` gives one by one (two URLs share a group exactly when
/// `/api/cluster?url=` names the same cluster for both), in the list's order, the first
/// URL of each the representative; `POST /api/cluster` answers the same, as text lines
/// or as JSON.
#[test]
fn a_result_list_clusters_as_its_urls_do_one_by_one() {
    let Some(db) = index() else { return };
    let d = db.to_str().unwrap();
    let out = String::from_utf8(tidemark_ok(&["--db", d, "export"]).stdout).unwrap();
    let mut urls: Vec<String> = Vec::new();
    for l in out.lines() {
        let v: Value = serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap();
        let u = v["url"].as_str().unwrap().to_string();
        if !urls.contains(&u) {
            urls.push(u);
        }
    }
    // A fixed shuffle: near-duplicates (neighbours in key order) spread over the list.
    let mut x: u64 = 7;
    for i in (1..urls.len()).rev() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        urls.swap(i, (x >> 33) as usize % (i + 1));
    }
    urls.truncate(997);
    urls.insert(10, "https://llvm.org/docs/never-captured.html".into());
    urls.insert(20, urls[3].clone());
    urls.insert(30, "http://".into());
    assert_eq!(urls.len(), 1000);
    let list = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(list.path(), urls.join("\n") + "\n").unwrap();
    let got: Value = serde_json::from_slice(
        &tidemark_ok(&[
            "--db",
            d,
            "cluster",
            "--urls",
            list.path().to_str().unwrap(),
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    assert_eq!(got["urls"], 1000);
    // One by one.
    let srv = Server::start(db, &[], &[]);
    let mut want: Vec<(usize, Option<u64>, Vec<String>)> = Vec::new();
    for (i, u) in urls.iter().enumerate() {
        let (status, _, body) = srv.get(&format!("/api/cluster?url={}&limit=1", enc(u)));
        let cluster = match status {
            200 => serde_json::from_slice::<Value>(&body).unwrap()["cluster"].as_u64(),
            _ => None,
        };
        let joins = want.iter().position(|(first, c, _)| match (cluster, c) {
            (Some(a), Some(b)) => a == *b,
            (None, None) => urls[*first] == *u,
            _ => false,
        });
        match joins {
            Some(g) => want[g].2.push(u.clone()),
            None => want.push((i, cluster, Vec::new())),
        }
    }
    let groups = got["groups"].as_array().unwrap();
    assert_eq!(groups.len(), want.len());
    let mut joined = 0;
    for (g, (first, cluster, others)) in groups.iter().zip(&want) {
        assert_eq!(g["at"].as_u64(), Some(*first as u64), "{g}");
        assert_eq!(g["url"].as_str(), Some(urls[*first].as_str()), "{g}");
        assert_eq!(g["cluster"].as_u64(), *cluster, "{g}");
        let listed: Vec<&str> = (g["others"].as_array().unwrap().iter())
            .map(|o| o["url"].as_str().unwrap())
            .collect();
        assert_eq!(listed, *others, "{g}");
        joined += others.len();
    }
    assert!(
        joined > 100,
        "a list of near-duplicates: {joined} URLs joined a group"
    );
    let reason = |i: usize| {
        let g = groups.iter().find(|g| g["at"] == i).unwrap();
        g["reason"].as_str().unwrap_or("").to_string()
    };
    assert!(reason(10).contains("never captured"), "{}", reason(10));
    assert!(reason(30).contains("not a URL"), "{}", reason(30));
    // The service answers the same, posted as lines or as JSON.
    let post = |ct: &str, body: String| {
        let (status, _, b) = common::server::request_with_body(
            ureq::post(&format!("{}/api/cluster", srv.base)).set("Content-Type", ct),
            body.as_bytes(),
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&b));
        serde_json::from_slice::<Value>(&b).unwrap()
    };
    assert_eq!(post("text/plain", urls.join("\n")), got);
    assert_eq!(
        post("application/json", serde_json::to_string(&urls).unwrap()),
        got
    );
    // Refused: nothing, and more URLs than serve.max_list_urls.
    let (status, _, _) = common::server::request_with_body(
        ureq::post(&format!("{}/api/cluster", srv.base)),
        b"\n# nothing\n",
    );
    assert_eq!(status, 400);
    let cfg = db.parent().unwrap().join("list-urls-10.toml");
    std::fs::write(&cfg, "[serve]\nmax_list_urls = 10\n").unwrap();
    let small = Server::start(db, &["--config", cfg.to_str().unwrap()], &[]);
    let (status, _, body) = common::server::request_with_body(
        ureq::post(&format!("{}/api/cluster", small.base)),
        urls[..11].join("\n").as_bytes(),
    );
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("serve.max_list_urls"));
}

/// `related` on 50 pages of the newest sweep (every k-th of its 2xx URLs): their top 10
/// share the page's documentation section (its directory) for at least 80% of the
/// pages listed. The figure is printed (the guide lists it).
#[test]
fn related_pages_share_their_documentation_section() {
    let Some(db) = index() else { return };
    let d = db.to_str().unwrap();
    let sweeps: Value =
        serde_json::from_slice(&tidemark_ok(&["--db", d, "sweeps", "--json"]).stdout).unwrap();
    let newest = sweeps.as_array().unwrap().last().unwrap()["label"]
        .as_str()
        .unwrap()
        .to_string();
    let out = tidemark_ok(&["--db", d, "export", "--format", "jsonl"]);
    let mut urls: Vec<String> = common::json_lines(&out)
        .iter()
        .filter(|r| r["status"] == "200")
        .filter(|r| r["fetch_time"].as_str().unwrap().starts_with("2025"))
        .map(|r| r["url"].as_str().unwrap().to_string())
        .collect();
    urls.sort();
    urls.dedup();
    let section = |u: &str| {
        u.rsplit_once('/')
            .map(|(d, _)| d.to_string())
            .unwrap_or_default()
    };
    let (mut listed, mut same, mut asked) = (0, 0, 0);
    for u in urls.iter().step_by(urls.len() / 50).take(50) {
        let out = common::tidemark(&["--db", d, "related", u, "--sweep", &newest, "--json"]);
        if !out.status.success() {
            continue;
        }
        asked += 1;
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        for p in r["pages"].as_array().unwrap().iter().take(10) {
            listed += 1;
            same += (section(p["url"].as_str().unwrap()) == section(u)) as usize;
        }
    }
    let share = same as f64 / listed.max(1) as f64;
    println!("related@10 on llvm-docs: {asked} pages asked, {listed} listed, {share:.3} in the page's section");
    assert!(asked >= 45, "{asked} of 50 pages have inbound links");
    assert!(share >= 0.8, "{share:.3}");
}
