//! Links read and kept: each HTML page's outgoing links, resolved against its URL (or
//! its `<base href>`), SURT-keyed, with their anchor windows, stored per sweep in the
//! `links` family; a page whose bytes the index already holds (read by its payload
//! digest, not canonicalized for its text) still tells its links in the new sweep; a page
//! that did not answer 2xx tells none; the same links whatever the thread count, and
//! from sketch shards.

mod common;

use std::path::{Path, PathBuf};

use common::tidemark_ok;
use tidemark::config::Config;
use tidemark::index::Index;
use tidemark::synth::warc::{http_response, response};
use tidemark::url::surt;

const HTML: &[(&str, &str)] = &[("Content-Type", "text/html; charset=utf-8")];

fn page(status: u16, body: &str) -> Vec<u8> {
    http_response(status, HTML, body.as_bytes())
}

/// A WARC file of (url, date, status, body).
fn warc(path: &Path, pages: &[(&str, &str, u16, String)]) -> PathBuf {
    let mut out = Vec::new();
    for (url, date, status, body) in pages {
        // With its payload digest, as crawlers write it: a page of known bytes is then
        // not read again for its content (nor for its links, when the sweep before kept
        // them for the same URL).
        let digest = tidemark::capture::sha1_base32(body.as_bytes());
        out.extend(response(url, date, Some(&digest), &page(*status, body)));
    }
    std::fs::write(path, out).unwrap();
    path.to_path_buf()
}

/// `tidemark --db DB ingest --sweep LABEL FILE`.
fn ingest_into(db: &Path, label: &str, file: &Path) {
    let (db, file) = (db.to_str().unwrap(), file.to_str().unwrap());
    tidemark_ok(&["--db", db, "ingest", "--sweep", label, file]);
}

fn a_page(extra: &str) -> String {
    format!(
        r##"<html><head><title>A</title></head><body><h1>The manual</h1>
        <p>read the chapter on <a href="b.html#s1">compiling with optimizations</a> before
        you start, and see <a href="/c.html">the C page</a>.</p>
        <p><a href="#top">top</a> <a href="mailto:x@example.org">write</a> {extra}</p>
        </body></html>"##
    )
}

fn b_page(target: &str) -> String {
    format!(
        r#"<html><head><base href="http://example.org/docs/"></head><body>
        <p>Back to the <a href="{target}">manual's first page</a> for more.</p></body></html>"#
    )
}

/// Every entry of `links`: (sweep, target, source, windows).
fn all_links(db: &Path) -> Vec<(u32, String, String, String)> {
    let index = Index::open_read_only(db, &Config::default()).unwrap();
    let mut out = Vec::new();
    index
        .links()
        .each_page(|k, links| {
            for l in links {
                out.push((k.sweep, l.target, k.source.clone(), l.windows.join("\n")));
            }
            Ok(true)
        })
        .unwrap();
    out.sort();
    out
}

#[test]
fn links_are_kept_per_sweep_with_their_anchor_windows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = "http://example.org/docs/a.html";
    let b = "http://example.org/docs/b.html";
    let s1 = warc(
        &d.join("s1.warc"),
        &[
            (a, "2026-01-01T00:00:00Z", 200, a_page("")),
            (b, "2026-01-01T00:00:01Z", 200, b_page("a.html")),
            (
                "http://example.org/docs/missing.html",
                "2026-01-01T00:00:02Z",
                404,
                b_page("a.html"),
            ),
        ],
    );
    // Sweep 2: a.html the same bytes; b.html links the manual's new name.
    let s2 = warc(
        &d.join("s2.warc"),
        &[
            (a, "2026-02-01T00:00:00Z", 200, a_page("")),
            (b, "2026-02-01T00:00:01Z", 200, b_page("start.html")),
        ],
    );
    let ingest = |db: &Path, threads: &str| {
        for (label, f) in [("s1", &s1), ("s2", &s2)] {
            tidemark_ok(&[
                "--threads",
                threads,
                "--db",
                db.to_str().unwrap(),
                "ingest",
                "--sweep",
                label,
                f.to_str().unwrap(),
            ]);
        }
    };
    let db = d.join("db");
    ingest(&db, "2");
    let got = all_links(&db);
    let (sa, sb) = (surt(a), surt(b));
    let want = vec![
        (
            1,
            surt("http://example.org/c.html"),
            sa.clone(),
            "compiling with optimizations before you start and see\tthe c page\ttop write".to_string(),
        ),
        (
            1,
            sa.clone(),
            sb.clone(),
            "back to the\tmanual s first page\tfor more"
                .to_string(),
        ),
        (
            1,
            sb.clone(),
            sa.clone(),
            "a the manual read the chapter on\tcompiling with optimizations\tbefore you start and see the c page"
                .to_string(),
        ),
        (
            2,
            surt("http://example.org/c.html"),
            sa.clone(),
            "compiling with optimizations before you start and see\tthe c page\ttop write".to_string(),
        ),
        (
            2,
            sb.clone(),
            sa.clone(),
            "a the manual read the chapter on\tcompiling with optimizations\tbefore you start and see the c page"
                .to_string(),
        ),
        (
            2,
            surt("http://example.org/docs/start.html"),
            sb.clone(),
            "back to the\tmanual s first page\tfor more"
                .to_string(),
        ),
    ];
    let mut want = want;
    want.sort();
    assert_eq!(got, want);
    // a.html unchanged (same URL, same bytes): sweep 2 refers to sweep 1's links.
    let kept_in = |db: &Path, sweep: u32, page: &str| {
        let index = Index::open_read_only(db, &Config::default()).unwrap();
        let got = index.links().kept_in(sweep, &surt(page)).unwrap();
        got
    };
    assert_eq!(kept_in(&db, 2, a), Some(1));
    assert_eq!(kept_in(&db, 2, b), Some(2));
    // The same with one thread.
    let one = d.join("db1");
    ingest(&one, "1");
    assert_eq!(all_links(&one), got);
    // The same from sketch shards (the map stage run apart: `sketch`, `ingest --sketches`).
    let shards = d.join("shards");
    let from_shards = d.join("db-shards");
    for (label, f) in [("s1", &s1), ("s2", &s2)] {
        let out = shards.join(label);
        tidemark_ok(&[
            "sketch",
            "--out",
            out.to_str().unwrap(),
            f.to_str().unwrap(),
        ]);
        tidemark_ok(&[
            "--db",
            from_shards.to_str().unwrap(),
            "ingest",
            "--sweep",
            label,
            "--sketches",
            out.to_str().unwrap(),
        ]);
    }
    assert_eq!(all_links(&from_shards), got);
    // Files added to sweep 1 after sweep 2: a.html again, rewritten. Sweep 1 keeps its
    // last capture's links; sweep 2, which referred to the links it replaced, keeps them.
    let s1b = warc(
        &d.join("s1b.warc"),
        &[(a, "2026-01-01T00:00:09Z", 200, b_page("later.html"))],
    );
    ingest_into(&db, "s1", &s1b);
    let mut later: Vec<_> = (got.iter().cloned())
        .filter(|(sweep, _, source, _)| *sweep == 2 || *source != sa)
        .collect();
    later.push((
        1,
        surt("http://example.org/docs/later.html"),
        sa.clone(),
        "back to the\tmanual s first page\tfor more".to_string(),
    ));
    later.sort();
    assert_eq!(all_links(&db), later);
    assert_eq!(kept_in(&db, 2, a), Some(2));
    // The same bytes under another charset decode otherwise: read again, not referred to.
    let body = a_page("");
    let latin1 = http_response(
        200,
        &[("Content-Type", "text/html; charset=iso-8859-1")],
        body.as_bytes(),
    );
    let digest = tidemark::capture::sha1_base32(body.as_bytes());
    let s2c = d.join("s2c.warc");
    std::fs::write(
        &s2c,
        response(a, "2026-02-01T00:00:00Z", Some(&digest), &latin1),
    )
    .unwrap();
    let other = d.join("db-charset");
    for (label, f) in [("s1", &s1), ("s2", &s2c)] {
        let f = f.to_str().unwrap();
        tidemark_ok(&[
            "--db",
            other.to_str().unwrap(),
            "ingest",
            "--sweep",
            label,
            f,
        ]);
    }
    assert_eq!(kept_in(&other, 2, a), Some(2));
    // Another window is another index format.
    let cfg = d.join("window4.toml");
    std::fs::write(&cfg, "[links]\nwindow = 4\n").unwrap();
    let out = common::tidemark(&[
        "--config",
        cfg.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "stats",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("links.window is 8 in the index but 4"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every anchor bag of an index: (sweep, target) → (elements, sources, level, values).
fn all_bags(db: &Path) -> Vec<(u32, String, u32, u32, u8, Vec<u32>)> {
    let index = Index::open_read_only(db, &Config::default()).unwrap();
    let mut out = Vec::new();
    index
        .anchor_bags()
        .for_each(|k, b| {
            out.push((k.sweep, k.target, b.elements, b.sources, b.level, b.values));
            Ok(true)
        })
        .unwrap();
    out
}

/// Anchor bags: each URL linked by two pages or more has a bag that counts every word of
/// the windows of the links to it (each occurrence) from the pages that link it; the same bags with one thread or
/// two, and when built holding a few pairs at a time (the memory bound's shares); with
/// `links.own_host = false`, only the links from other hosts count.
#[test]
fn anchor_bags_count_every_inbound_window_word() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let gen = d.join("gen");
    let out = common::tidemark_gen(&[
        "--out",
        gen.to_str().unwrap(),
        "--pages",
        "150",
        "--hosts",
        "3",
        "--sweeps",
        "2",
        "--topics",
        "4",
        "--seed",
        "9",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let db = d.join("db");
    common::ingest_generated(&gen, &db, 2, &[]);
    let bags = all_bags(&db);
    // What the links say: per (sweep, target), window words and linking pages.
    let mut want: std::collections::BTreeMap<(u32, String), (u32, u32)> = Default::default();
    let mut cross: std::collections::BTreeMap<(u32, String), (u32, u32)> = Default::default();
    let host = |s: &str| s.split(')').next().unwrap().to_string();
    for (sweep, target, source, windows) in all_links(&db) {
        let words = windows
            .split(['\n', '\t', ' '])
            .filter(|w| !w.is_empty())
            .count() as u32;
        let e = want.entry((sweep, target.clone())).or_default();
        e.0 += words;
        e.1 += 1;
        if host(&source) != host(&target) {
            let e = cross.entry((sweep, target)).or_default();
            e.0 += words;
            e.1 += 1;
        }
    }
    // A URL linked by one page has no bag.
    want.retain(|_, (w, p)| *w > 0 && *p >= 2);
    cross.retain(|_, (w, p)| *w > 0 && *p >= 2);
    let got: std::collections::BTreeMap<(u32, String), (u32, u32)> = bags
        .iter()
        .map(|b| ((b.0, b.1.clone()), (b.2, b.3)))
        .collect();
    assert_eq!(got, want);
    assert!(bags.len() > 500, "{} bags", bags.len());
    assert!(bags
        .iter()
        .all(|b| !b.5.is_empty() && b.5.windows(2).all(|v| v[0] < v[1])));
    // One thread.
    let one = d.join("db1");
    common::ingest_generated(&gen, &one, 2, &["--threads", "1"]);
    assert_eq!(all_bags(&one), bags);
    // Built again in shares of at most 500 pairs.
    {
        let index = Index::open(&one, &Config::default(), false).unwrap();
        let c = tidemark::ingest::bags::build_with_cap(&index, 2, 500).unwrap();
        assert!(c.passes > 3, "{c:?}");
    }
    assert_eq!(all_bags(&one), bags);
    // Links from the target's own host left out.
    let cfg = d.join("cross.toml");
    std::fs::write(&cfg, "[links]\nown_host = false\n").unwrap();
    let cross_db = d.join("db-cross");
    common::ingest_generated(&gen, &cross_db, 2, &["--config", cfg.to_str().unwrap()]);
    let index = Index::open_read_only(&cross_db, &Config::load(&cfg).unwrap()).unwrap();
    let mut got: std::collections::BTreeMap<(u32, String), (u32, u32)> = Default::default();
    index
        .anchor_bags()
        .for_each(|k, b| {
            got.insert((k.sweep, k.target), (b.elements, b.sources));
            Ok(true)
        })
        .unwrap();
    assert_eq!(got, cross);
    assert!(!cross.is_empty() && cross.len() < want.len());
}

/// The bags an ingest gathers as it commits are the ones a scan of the sweep's links
/// builds: a page captured twice in a sweep counts by its last capture's links (what
/// `links` keeps), and a sweep an ingest adds files to has the bags of all its pages.
#[test]
fn bags_count_a_page_by_its_last_capture_and_a_sweep_added_to_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let linker = |links: &[(&str, &str)]| {
        let a: Vec<String> = links
            .iter()
            .map(|(href, text)| format!(r#"<p>see <a href="{href}">{text}</a> here</p>"#))
            .collect();
        format!("<html><body>{}</body></html>", a.join("\n"))
    };
    let u = |p: &str| format!("http://example.org/{p}");
    let (p1, p2, p3, p4) = (u("p1.html"), u("p2.html"), u("p3.html"), u("p4.html"));
    let first = warc(
        &d.join("one.warc"),
        &[
            (
                &p1,
                "2026-01-01T00:00:00Z",
                200,
                linker(&[("t1.html", "alpha beta"), ("t2.html", "two")]),
            ),
            (
                &p2,
                "2026-01-01T00:00:01Z",
                200,
                linker(&[("t1.html", "gamma")]),
            ),
            (
                &p3,
                "2026-01-01T00:00:02Z",
                200,
                linker(&[("t2.html", "second")]),
            ),
            // p1 again: it no longer links t1.
            (
                &p1,
                "2026-01-01T00:00:03Z",
                200,
                linker(&[("t2.html", "two again")]),
            ),
        ],
    );
    let more = warc(
        &d.join("two.warc"),
        &[(
            &p4,
            "2026-01-01T00:00:04Z",
            200,
            linker(&[("t1.html", "delta")]),
        )],
    );
    let db = d.join("db");
    let ingest = |f: &Path| {
        tidemark_ok(&[
            "--db",
            db.to_str().unwrap(),
            "ingest",
            "--sweep",
            "s1",
            f.to_str().unwrap(),
        ])
    };
    let bags_then_scanned = || {
        let gathered = all_bags(&db);
        let index = Index::open(&db, &Config::default(), false).unwrap();
        tidemark::ingest::bags::build(&index, 1).unwrap();
        drop(index);
        (gathered, all_bags(&db))
    };
    ingest(&first);
    let (gathered, scanned) = bags_then_scanned();
    assert_eq!(gathered, scanned);
    let sources: Vec<(String, u32)> = gathered.iter().map(|b| (b.1.clone(), b.3)).collect();
    // t1 is linked by p2 alone now: no bag; t2 by p1 (last capture) and p3.
    assert_eq!(sources, [(surt(&u("t2.html")), 2)]);
    ingest(&more);
    let (gathered, scanned) = bags_then_scanned();
    assert_eq!(gathered, scanned);
    let sources: Vec<(String, u32)> = gathered.iter().map(|b| (b.1.clone(), b.3)).collect();
    assert_eq!(
        sources,
        [(surt(&u("t1.html")), 2), (surt(&u("t2.html")), 2)]
    );
    // The pages linking each, as the sweep holds them now (by the page linked, built
    // again for the sweep added to).
    let linking = |target: &str| {
        let out = tidemark_ok(&[
            "--db",
            db.to_str().unwrap(),
            "inlinks",
            "--json",
            &u(target),
        ]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["sources"].as_array().unwrap().iter())
            .map(|s| s["source"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(linking("t1.html"), [surt(&p2), surt(&p4)]);
    assert_eq!(linking("t2.html"), [surt(&p1), surt(&p3)]);
    let index = Index::open_read_only(&db, &Config::default()).unwrap();
    assert!(index.inbound().of_sweep_built(1).unwrap());
    assert_eq!(
        index.inbound().of(1, &surt(&u("t1.html"))).unwrap(),
        Some(vec![surt(&p2), surt(&p4)])
    );
}
