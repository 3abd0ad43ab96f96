//! The sweep generator: deterministic bytes, WARCs that read cleanly, and ground truth
//! that agrees with what the files hold (checked through the reader and the sketches).

mod common;

use std::collections::HashMap;

use common::{generate, json_lines, sweep_files, tidemark, truth};
use tidemark::scan::{scan_files, ScanEvent, ScanOptions};
use tidemark::sketch::{estimate, Sketch, SketchParams};

fn read_tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().to_string_lossy().to_string(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    generate(a.path(), 60, 3, 5);
    generate(b.path(), 60, 3, 5);
    generate(c.path(), 60, 3, 6);
    let (ta, tb, tc) = (
        read_tree(a.path()),
        read_tree(b.path()),
        read_tree(c.path()),
    );
    assert_eq!(
        ta.len(),
        6,
        "3 sweeps of one WARC file and a truth file each: {:?}",
        ta.iter().map(|t| &t.0).collect::<Vec<_>>()
    );
    assert!(ta == tb, "the same seed must give identical files");
    assert!(ta.iter().zip(&tc).any(|(x, y)| x.1 != y.1));
}

struct Seen {
    status: u16,
    kind: tidemark::read::RecordKind,
    redirect: Option<String>,
    sketch: Option<Sketch>,
}

fn scan_sweep(files: &[std::path::PathBuf]) -> HashMap<String, Seen> {
    let opts = ScanOptions {
        threads: 2,
        params: SketchParams::default(),
        record_cap: 16 << 20,
        anchor_window: 0,
        read_only: false,
        hold: 0,
    };
    let mut map = HashMap::new();
    scan_files(files, &opts, |ev| {
        match ev {
            ScanEvent::Record { scanned, .. } => {
                let c = scanned.capture;
                if let (Some(url), Some(status)) = (c.url.clone(), c.status) {
                    map.insert(
                        url,
                        Seen {
                            status,
                            kind: c.kind.clone(),
                            redirect: c.redirect.clone(),
                            sketch: c.sketch.clone(),
                        },
                    );
                }
            }
            ScanEvent::FileEnd { error, .. } => assert!(error.is_none(), "{error:?}"),
            _ => {}
        }
        true
    });
    map
}

#[test]
fn truth_agrees_with_the_warcs() {
    let dir = tempfile::tempdir().unwrap();
    let sweeps = 4;
    generate(dir.path(), 400, sweeps, 11);
    let mut seen: Vec<HashMap<String, Seen>> = Vec::new();
    let (mut checked, mut within) = (0, 0);
    let (mut moves, mut redirects) = (0, 0);
    for s in 1..=sweeps {
        let t = truth(dir.path(), s);
        let files = sweep_files(dir.path(), s);
        // Through the binary: every file reads to its end, one capture per truth URL.
        let mut args = vec!["inspect".to_string(), "--json".into(), "--summary".into()];
        args.extend(files.iter().map(|f| f.to_string_lossy().to_string()));
        let out = tidemark(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(0));
        let (mut responses, mut revisits) = (0, 0);
        for l in json_lines(&out) {
            responses += l["summary"]["by_type"]["response"].as_u64().unwrap_or(0);
            revisits += l["summary"]["by_type"]["revisit"].as_u64().unwrap_or(0);
        }
        assert_eq!(responses + revisits, t["captures"].as_u64().unwrap());
        assert_eq!(revisits, t["revisits"].as_u64().unwrap());
        let map = scan_sweep(&files);
        for u in t["urls"].as_array().unwrap() {
            let url = u["url"].as_str().unwrap();
            let got = map
                .get(url)
                .unwrap_or_else(|| panic!("{url} not in sweep {s}"));
            assert_eq!(got.status as u64, u["status"].as_u64().unwrap(), "{url}");
            assert_eq!(
                got.kind == tidemark::read::RecordKind::Revisit,
                u["revisit"].as_bool().unwrap(),
                "{url}"
            );
        }
        for m in t["moves"].as_array().unwrap() {
            moves += 1;
            let (from, to) = (m["from"].as_str().unwrap(), m["to"].as_str().unwrap());
            assert_eq!(map[to].status, 200);
            match m["old_status"].as_u64() {
                Some(301) => {
                    redirects += 1;
                    assert_eq!(map[from].redirect.as_deref(), Some(to));
                }
                Some(404) => assert_eq!(map[from].status, 404),
                _ => assert!(!map.contains_key(from), "{from} vanished but is captured"),
            }
        }
        // Edits: estimated against the truth's exact resemblance.
        if s > 1 {
            let prev = |url: &str| {
                (0..s - 1)
                    .rev()
                    .find_map(|i| seen[i].get(url).and_then(|x| x.sketch.as_ref()))
            };
            for e in t["edits"].as_array().unwrap() {
                let url = e["url"].as_str().unwrap();
                if e["min_shingles"].as_u64().unwrap() < 500 {
                    continue;
                }
                let (a, b) = (
                    prev(url).expect("earlier version"),
                    map[url].sketch.as_ref().unwrap(),
                );
                let err = (estimate(a, b).resemblance - e["resemblance"].as_f64().unwrap()).abs();
                checked += 1;
                if err <= 0.05 {
                    within += 1;
                }
            }
        }
        seen.push(map);
    }
    println!("{checked} edits of >= 500 shingles: {within} estimated within 0.05; {moves} moves ({redirects} with 301)");
    assert!(moves > 5 && redirects > 0 && checked > 20);
    assert!(within as f64 >= 0.95 * checked as f64);
}

#[test]
fn steady_sweeps_hold_the_live_pages_and_default_sweeps_grow() {
    let live = |steady: bool| -> Vec<u64> {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--out",
            dir.path().to_str().unwrap(),
            "--pages",
            "300",
            "--sweeps",
            "4",
            "--seed",
            "11",
            "--json",
        ];
        if steady {
            args.push("--steady");
        }
        let out = common::tidemark_gen(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let g: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        g["sweeps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let t: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(s["truth"].as_str().unwrap()).unwrap())
                        .unwrap();
                t["live_pages"].as_u64().unwrap()
            })
            .collect()
    };
    let steady = live(true);
    println!("live pages per sweep, steady: {steady:?}");
    assert!(steady.iter().all(|n| *n == 300), "{steady:?}");
    let growing = live(false);
    println!("live pages per sweep, default: {growing:?}");
    assert!(growing[3] > growing[0] + 10, "{growing:?}");
}

/// `tidemark-gen --site`: a site kept as files becomes a sweep that reads back as the
/// pages it holds (a refresh stub as a 301 to its target), twice the same bytes; two
/// such sweeps ingest into an index that finds the renamed page by its content.
#[test]
fn a_site_of_files_becomes_a_sweep_and_a_renamed_page_is_found() {
    let text = |n: usize, words: &str| {
        let body: Vec<String> = (0..n)
            .map(|i| format!("{words} {i} of the manual"))
            .collect();
        format!(
            "<html><head><title>{words}</title></head><body><p>{}</p></body></html>",
            body.join(". ")
        )
    };
    let root = tempfile::tempdir().unwrap();
    let (v1, v2) = (root.path().join("v1"), root.path().join("v2"));
    for (dir, guide_name) in [(&v1, "Guide.html"), (&v2, "guide/Getting.html")] {
        let guide = dir.join("html").join(guide_name);
        std::fs::create_dir_all(guide.parent().unwrap()).unwrap();
        std::fs::write(&guide, text(80, "getting started with the compiler")).unwrap();
        std::fs::write(dir.join("html/index.html"), text(40, "index")).unwrap();
    }
    std::fs::write(
        v2.join("html/Old.html"),
        r#"<html><head><meta http-equiv="refresh" content="0; url=guide/Getting.html"></head></html>"#,
    )
    .unwrap();
    let out = root.path().join("sweeps");
    let gen = |n: &str, dir: &std::path::Path, date: &str| {
        let site = format!(
            "{}=https://docs.example.org/docs",
            dir.join("html").display()
        );
        let o = common::tidemark_gen(&[
            "--out",
            out.join(n).to_str().unwrap(),
            "--start",
            date,
            "--site",
            &site,
            "--json",
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let s1 = gen("s1", &v1, "2024-01-10");
    let s2 = gen("s2", &v2, "2024-07-10");
    assert_eq!(
        (s1["pages"].as_u64(), s1["redirects"].as_u64()),
        (Some(2), Some(0))
    );
    assert_eq!(
        (s2["pages"].as_u64(), s2["redirects"].as_u64()),
        (Some(2), Some(1))
    );
    let again = gen("s2-again", &v2, "2024-07-10");
    let bytes = |v: &serde_json::Value| std::fs::read(v["file"].as_str().unwrap()).unwrap();
    assert_eq!(
        bytes(&s2),
        bytes(&again),
        "the same files give the same bytes"
    );

    // What the reader makes of it: the pages at their URLs, the stub a redirect.
    let seen = scan_sweep(&[s2["file"].as_str().unwrap().into()]);
    let stub = &seen["https://docs.example.org/docs/Old.html"];
    assert_eq!(stub.status, 301);
    assert_eq!(
        stub.redirect.as_deref(),
        Some("https://docs.example.org/docs/guide/Getting.html")
    );
    assert_eq!(
        seen["https://docs.example.org/docs/guide/Getting.html"].status,
        200
    );

    let db = root.path().join("db");
    for n in ["s1", "s2"] {
        let d = out.join(n);
        common::tidemark_ok(&[
            "--db",
            db.to_str().unwrap(),
            "ingest",
            "--sweep",
            n,
            d.to_str().unwrap(),
        ]);
    }
    let w = common::tidemark_ok(&[
        "--db",
        db.to_str().unwrap(),
        "whereis",
        "https://docs.example.org/docs/Guide.html",
        "--json",
    ]);
    let w: serde_json::Value = serde_json::from_slice(&w.stdout).unwrap();
    assert_eq!(w["status"], "moved", "{w}");
    assert_eq!(
        w["newest_url"],
        "https://docs.example.org/docs/guide/Getting.html"
    );
}
