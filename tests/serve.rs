//! `tidemark serve` through the real binary on generated sweeps: the pywb/OutbackCDX and
//! Wayback CDX APIs against the export, Memento, the JSON API against the commands'
//! `--json`, errors and limits, following an ingest without ever mixing two sweeps, and
//! the real clients archivists run (pywb replaying through the index, cdx_toolkit paging).

mod common;

use std::collections::{BTreeMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::server::{enc, free_port, no_follow, python, python_json, request, Pywb, Server};
use common::{generate, ingest_generated, sweep_files, tidemark, tidemark_ok};
use serde_json::Value;

const SWEEPS: usize = 3;

/// Three generated sweeps of ~400 pages, ingested once, shared by the tests of this file.
fn corpus() -> &'static (PathBuf, PathBuf) {
    static CORPUS: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        generate(&dir, 400, SWEEPS, 4711);
        let db = dir.join("db");
        ingest_generated(&dir, &db, SWEEPS, &[]);
        (dir, db)
    })
}

/// The export of an index as (SURT, timestamp, fields) per capture, in key order.
fn export(db: &Path) -> Vec<(String, String, Value)> {
    let out = tidemark(&["--db", db.to_str().unwrap(), "export"]);
    assert!(out.status.success());
    cdxj(&String::from_utf8(out.stdout).unwrap())
}

/// CDXJ lines of an answer as (SURT, timestamp, fields).
fn cdxj(body: &str) -> Vec<(String, String, Value)> {
    body.lines()
        .map(|l| {
            let mut it = l.splitn(3, ' ');
            let (k, t, j) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
            (
                k.to_string(),
                t.to_string(),
                serde_json::from_str(j).unwrap(),
            )
        })
        .collect()
}

/// The fields a CDX line shares with the export line of the same capture.
fn same_capture(a: &(String, String, Value), b: &(String, String, Value)) -> bool {
    a.0 == b.0
        && a.1 == b.1
        && [
            "url", "status", "digest", "filename", "offset", "length", "doc", "cluster", "redirect",
        ]
        .iter()
        .all(|f| a.2[f] == b.2[f])
}

/// URLs spread over the export (every k-th distinct URL).
fn sample_urls(exp: &[(String, String, Value)], n: usize) -> Vec<String> {
    let mut seen = HashSet::new();
    let urls: Vec<String> = exp
        .iter()
        .filter(|(k, _, _)| seen.insert(k.clone()))
        .map(|(_, _, v)| v["url"].as_str().unwrap().to_string())
        .collect();
    let step = (urls.len() / n).max(1);
    urls.into_iter().step_by(step).take(n).collect()
}

fn coll() -> &'static str {
    "tidemark"
}

#[test]
fn health_readiness_request_log_and_clean_shutdown() {
    let (_, db) = corpus();
    let srv = Server::start(db, &[], &[]);
    assert_eq!(srv.text("/healthz"), "ok\n");
    let r = srv.json("/readyz");
    assert_eq!(r["ready"], true);
    assert_eq!(r["sweep"], "sweep-3");
    assert_eq!(r["sweeps"], 3);
    let (status, ct, body) = srv.get("/no/such/thing/here");
    assert_eq!(status, 404);
    assert!(ct.starts_with("application/json"), "{ct}");
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["type"], "invalid_request");
    std::thread::sleep(Duration::from_millis(100));
    let log = srv.log();
    assert!(log.contains("GET /healthz 200"), "{log}");
    assert!(log.contains("GET /no/such/thing/here 404"), "{log}");
    let status = srv.stop();
    assert!(
        status.success(),
        "SIGTERM should end it cleanly: {status:?}"
    );
}

#[test]
fn cdx_exact_queries_equal_the_export_in_every_output() {
    let (_, db) = corpus();
    let exp = export(db);
    let srv = Server::start(db, &[], &[]);
    for url in sample_urls(&exp, 25) {
        let key = tidemark::url::surt(&url);
        let want: Vec<_> = exp.iter().filter(|(k, _, _)| *k == key).cloned().collect();
        let body = srv.text(&format!("/{}?url={}", coll(), enc(&url)));
        let got = cdxj(&body);
        assert_eq!(got.len(), want.len(), "{url}: {body}");
        for (g, w) in got.iter().zip(&want) {
            assert!(same_capture(g, w), "{url}: {g:?} vs {w:?}");
            let revisit = w.2["type"] == "revisit";
            if revisit {
                assert_eq!(
                    g.2["mime"], "warc/revisit",
                    "pywb finds a revisit's payload by this"
                );
            } else {
                assert_eq!(g.2["mime"], w.2["mime"]);
            }
        }
        // The same captures as JSON lines, as text with chosen fields, as link-format.
        let json: Vec<Value> = srv
            .text(&format!("/{}?url={}&output=json", coll(), enc(&url)))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(json.len(), want.len());
        for (j, w) in json.iter().zip(&want) {
            assert_eq!(j["urlkey"], w.0.as_str());
            assert_eq!(j["timestamp"], w.1.as_str());
            assert_eq!(j["offset"], w.2["offset"]);
        }
        let text = srv.text(&format!(
            "/{}?url={}&output=text&fl=urlkey,timestamp,offset,filename",
            coll(),
            enc(&url)
        ));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), want.len());
        for (l, w) in lines.iter().zip(&want) {
            let expect = format!(
                "{} {} {} {}",
                w.0,
                w.1,
                w.2["offset"].as_str().unwrap(),
                w.2["filename"].as_str().unwrap()
            );
            assert_eq!(*l, expect);
        }
        let (status, ct, link) = srv.get(&format!("/{}?url={}&output=link", coll(), enc(&url)));
        assert_eq!(status, 200);
        assert_eq!(ct, "application/link-format");
        let link = String::from_utf8(link).unwrap();
        assert_eq!(
            link.matches("rel=\"memento\"").count(),
            want.len(),
            "{link}"
        );
    }
}

#[test]
fn cdx_match_types_time_ranges_sorts_limits_and_filters() {
    let (_, db) = corpus();
    let exp = export(db);
    let srv = Server::start(db, &[], &[]);
    let url = sample_urls(&exp, 5)[2].clone();
    let key = tidemark::url::surt(&url);
    let host_key = key[..=key.find(')').unwrap()].to_string();
    let host = tidemark::url::host(&url);
    let count = |f: &dyn Fn(&(String, String, Value)) -> bool| exp.iter().filter(|e| f(e)).count();

    // host: every URL of the host; prefix: `host/*`; domain: `*.host`.
    let by_host = count(&|e| e.0.starts_with(&host_key));
    assert!(by_host > 20, "a host with few captures: {by_host}");
    for q in [
        format!("url={}&matchType=host", enc(&url)),
        format!("url={}", enc(&format!("{host}/*"))),
        format!("url={}", enc(&format!("*.{host}"))),
    ] {
        let got = cdxj(&srv.text(&format!("/{}?{q}", coll())));
        assert_eq!(got.len(), by_host, "{q}");
        let want: Vec<_> = exp.iter().filter(|e| e.0.starts_with(&host_key)).collect();
        for (g, w) in got.iter().zip(want) {
            assert!(same_capture(g, w), "{q}");
        }
    }
    // A path prefix.
    let dir_key = key[..key.rfind('/').unwrap() + 1].to_string();
    let dir_url = format!("{}/*", &url[..url.rfind('/').unwrap()]);
    let got = cdxj(&srv.text(&format!("/{}?url={}", coll(), enc(&dir_url))));
    assert_eq!(
        got.len(),
        count(&|e| e.0.starts_with(&dir_key)),
        "{dir_url}"
    );

    // from/to: padded; sweeps are a month apart.
    let stamps: Vec<String> = exp
        .iter()
        .filter(|e| e.0.starts_with(&host_key))
        .map(|e| e.1.clone())
        .collect();
    let first_month = &stamps.iter().min().unwrap()[..6];
    let got = cdxj(&srv.text(&format!(
        "/{}?url={}&matchType=host&from={first_month}&to={first_month}",
        coll(),
        enc(&url)
    )));
    let want = stamps.iter().filter(|t| t.starts_with(first_month)).count();
    assert_eq!(got.len(), want);
    assert!(want > 0 && want < stamps.len());

    // reverse, limit.
    let fwd = cdxj(&srv.text(&format!("/{}?url={}&matchType=host", coll(), enc(&url))));
    let rev = cdxj(&srv.text(&format!(
        "/{}?url={}&matchType=host&sort=reverse",
        coll(),
        enc(&url)
    )));
    let mut r2 = rev.clone();
    r2.reverse();
    assert_eq!(
        fwd.iter().map(|e| (&e.0, &e.1)).collect::<Vec<_>>(),
        r2.iter().map(|e| (&e.0, &e.1)).collect::<Vec<_>>()
    );
    let lim = cdxj(&srv.text(&format!(
        "/{}?url={}&matchType=host&limit=7",
        coll(),
        enc(&url)
    )));
    assert_eq!(lim.len(), 7);
    assert_eq!(lim[..], fwd[..7]);

    // closest: nearest first; an empty closest= (pywb sends it) means the newest first.
    let mine: Vec<_> = exp.iter().filter(|e| e.0 == key).collect();
    assert!(mine.len() >= 2, "{url} has {} captures", mine.len());
    let target = &mine[0].1;
    let got = cdxj(&srv.text(&format!(
        "/{}?url={}&closest={target}&sort=closest&limit=1",
        coll(),
        enc(&url)
    )));
    assert_eq!(&got[0].1, target);
    let got = cdxj(&srv.text(&format!(
        "/{}?url={}&closest=&sort=closest",
        coll(),
        enc(&url)
    )));
    assert_eq!(got.len(), mine.len());
    assert_eq!(&got[0].1, &mine.last().unwrap().1);

    // Filters: pywb's syntax.
    let all = fwd.len();
    let html = cdxj(&srv.text(&format!(
        "/{}?url={}&matchType=host&filter=={}",
        coll(),
        enc(&url),
        enc("mime:text/html")
    )));
    assert_eq!(
        html.len(),
        fwd.iter().filter(|e| e.2["mime"] == "text/html").count()
    );
    let not200 = cdxj(&srv.text(&format!(
        "/{}?url={}&matchType=host&filter={}",
        coll(),
        enc(&url),
        enc("!=status:200")
    )));
    assert_eq!(
        not200.len(),
        fwd.iter().filter(|e| e.2["status"] != "200").count()
    );
    assert!(not200.len() < all);
    let https = cdxj(&srv.text(&format!(
        "/{}?url={}&matchType=host&filter={}&filter={}",
        coll(),
        enc(&url),
        enc("~url:https://"),
        enc("status:20")
    )));
    assert_eq!(
        https.len(),
        fwd.iter()
            .filter(|e| e.2["url"].as_str().unwrap().starts_with("https://")
                && e.2["status"].as_str().unwrap_or("").contains("20"))
            .count()
    );
    let revisits = cdxj(&srv.text(&format!(
        "/{}?url={}&matchType=host&filter={}",
        coll(),
        enc(&url),
        enc("mime:warc/revisit")
    )));
    let non_revisits = cdxj(&srv.text(&format!(
        "/{}?url={}&matchType=host&filter={}",
        coll(),
        enc(&url),
        enc("!mime:warc/revisit")
    )));
    assert_eq!(revisits.len() + non_revisits.len(), all);
    assert!(!revisits.is_empty(), "the generator writes revisits");

    // urlkey= instead of url=.
    let by_key = cdxj(&srv.text(&format!("/{}?urlkey={}", coll(), enc(&key))));
    assert_eq!(by_key.len(), mine.len());
}

#[test]
fn malformed_requests_get_4xx_naming_the_parameter() {
    let (_, db) = corpus();
    let cfg = db.parent().unwrap().join("small-limits.toml");
    std::fs::write(
        &cfg,
        "[serve]\nmax_url_chars = 300\nmax_body_bytes = 2000\n",
    )
    .unwrap();
    let srv = Server::start(db, &["--config", cfg.to_str().unwrap()], &[]);
    let long = format!("http://example.com/{}", "a".repeat(400));
    for (path, status, needle) in [
        (
            "/tidemark?url=example.com&matchType=fuzzy".to_string(),
            400,
            "matchType",
        ),
        (
            "/tidemark?url=example.com&from=2026-01".to_string(),
            400,
            "from",
        ),
        (
            "/tidemark?url=example.com&to=123456789012345".to_string(),
            400,
            "to",
        ),
        (
            "/tidemark?url=example.com&closest=x&sort=closest".to_string(),
            400,
            "closest",
        ),
        (
            format!("/tidemark?url=example.com&filter={}", enc("~url:(unclosed")),
            400,
            "filter",
        ),
        (
            "/tidemark?url=example.com&filter=nocolon".to_string(),
            400,
            "filter",
        ),
        (
            "/tidemark?url=example.com&output=xml".to_string(),
            400,
            "output",
        ),
        (
            "/tidemark?url=example.com&sort=sideways".to_string(),
            400,
            "sort",
        ),
        (
            "/tidemark?url=example.com&limit=many".to_string(),
            400,
            "limit",
        ),
        (
            "/tidemark?url=example.com&fl=urlkey,colour".to_string(),
            400,
            "fl",
        ),
        ("/tidemark".to_string(), 400, "url"),
        (format!("/tidemark?url={}", enc(&long)), 414, "url"),
        ("/elsewhere?url=example.com".to_string(), 404, "collection"),
        (
            format!(
                "/cdx/search/cdx?url=example.com&filter={}",
                enc("statuscode:[")
            ),
            400,
            "filter",
        ),
        (
            "/cdx/search/cdx?url=example.com&collapse=colour".to_string(),
            400,
            "collapse",
        ),
        (
            "/cdx/search/cdx?url=example.com&page=-1".to_string(),
            400,
            "page",
        ),
        ("/api/whereis".to_string(), 400, "url"),
        ("/api/whereis?url=not%20a%20url".to_string(), 400, "url"),
        (
            "/api/history?url=example.com&diff=maybe".to_string(),
            400,
            "diff",
        ),
        (
            "/api/similar?url=example.com&threshold=2".to_string(),
            400,
            "threshold",
        ),
        ("/api/similar".to_string(), 400, "url"),
        (
            "/api/cluster?url=http://never.example/x".to_string(),
            404,
            "never captured",
        ),
        (
            "/api/report?from=no-such-sweep".to_string(),
            400,
            "no-such-sweep",
        ),
        (
            "/api/changes?to=no-such-sweep".to_string(),
            400,
            "no-such-sweep",
        ),
        ("/api/changes?limit=5000".to_string(), 400, "limit"),
        (
            "/api/changes?from=sweep-3&to=sweep-3".to_string(),
            400,
            "two sweeps",
        ),
        ("/api/changes?records=2".to_string(), 400, "records"),
        (
            "/timegate/http://never.example/x".to_string(),
            404,
            "never captured",
        ),
        (
            "/tidemark/2026id_/http://never.example/x".to_string(),
            404,
            "never captured",
        ),
        (
            "/tidemark/x2026id_/http://example.com/".to_string(),
            400,
            "timestamp",
        ),
    ] {
        let (got, _, body) = srv.get(&path);
        let body = String::from_utf8_lossy(&body);
        assert_eq!(got, status, "{path}: {body}");
        assert!(body.contains(needle), "{path}: {body} should name {needle}");
    }
    // Accept-Datetime that is not a date.
    let (got, _, body) = request(
        ureq::get(&format!("{}/timegate/http://example.com/", srv.base))
            .set("Accept-Datetime", "yesterday"),
    );
    assert_eq!(got, 400);
    assert!(String::from_utf8_lossy(&body).contains("Accept-Datetime"));
    // A document over the body limit.
    let (got, _, _) =
        match ureq::post(&format!("{}/api/similar", srv.base)).send_bytes(&[b'a'; 5000]) {
            Ok(r) => (r.status(), (), ()),
            Err(ureq::Error::Status(c, _)) => (c, (), ()),
            Err(e) => panic!("{e}"),
        };
    assert_eq!(got, 413);
    // pywb's CDX endpoint answers errors in JSON whatever the output, as pywb does.
    let (got, ct, body) = srv.get("/tidemark?url=example.com&matchType=fuzzy&output=text");
    assert_eq!(got, 400);
    assert!(ct.starts_with("application/json"), "{ct}");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(v["message"].as_str().unwrap().contains("matchType"), "{v}");
}

#[test]
fn a_slow_client_is_cut_off_at_the_timeout() {
    let (_, db) = corpus();
    let cfg = db.parent().unwrap().join("short-timeout.toml");
    std::fs::write(&cfg, "[serve]\nrequest_timeout_s = 2\n").unwrap();
    let srv = Server::start(db, &["--config", cfg.to_str().unwrap()], &[]);
    let mut s = std::net::TcpStream::connect(&srv.addr).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(15),
        "the connection was held {took:?}"
    );
    // And the server still answers others.
    assert_eq!(srv.text("/healthz"), "ok\n");
}

/// A raw `GET /healthz` on a new connection: the whole answer, as text.
fn raw_healthz(addr: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    String::from_utf8_lossy(&buf).into_owned()
}

/// Idle connections held to the caps: one more is answered 503 at once (not left
/// hanging, not reset: the whole answer is read to its end), the server still answers once one lets go, and a trusted proxy
/// is held only to the overall cap.
#[test]
fn connections_over_the_caps_are_answered_503_and_closed() {
    let (_, db) = corpus();
    let dir = db.parent().unwrap();
    let held = |addr: &str, n: usize| -> Vec<std::net::TcpStream> {
        let conns: Vec<_> = (0..n)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // The server accepts them in the order they were made: given a moment, all are
        // held before the next one.
        std::thread::sleep(Duration::from_millis(300));
        conns
    };
    for (name, cfg, setting) in [
        (
            "per-client",
            "[serve]\ntrusted_proxies = []\nmax_connections = 10\nmax_connections_per_client = 2\n",
            "serve.max_connections_per_client",
        ),
        (
            "overall",
            "[serve]\nmax_connections = 2\nmax_connections_per_client = 10\n",
            "serve.max_connections",
        ),
    ] {
        let path = dir.join(format!("caps-{name}.toml"));
        std::fs::write(&path, cfg).unwrap();
        let srv = Server::start(db, &["--config", path.to_str().unwrap()], &[]);
        let mut conns = held(&srv.addr, 2);
        let started = Instant::now();
        let answer = raw_healthz(&srv.addr);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name}: the refusal took {:?}",
            started.elapsed()
        );
        assert!(answer.starts_with("HTTP/1.1 503"), "{name}: {answer}");
        assert!(answer.contains("too_many_connections"), "{name}: {answer}");
        assert!(answer.contains(setting), "{name}: {answer}");
        assert!(
            answer.to_ascii_lowercase().contains("retry-after: 1"),
            "{name}: {answer}"
        );
        // One lets go: the next connection is served.
        conns.pop();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let a = raw_healthz(&srv.addr);
            if a.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(Instant::now() < deadline, "{name}: never served again: {a}");
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(srv.log().contains(setting), "{name}: {}", srv.log());
    }
    // Loopback is a trusted proxy by default: many connections from it, one client cap.
    let path = dir.join("caps-trusted.toml");
    std::fs::write(
        &path,
        "[serve]\nmax_connections = 10\nmax_connections_per_client = 2\n",
    )
    .unwrap();
    let srv = Server::start(db, &["--config", path.to_str().unwrap()], &[]);
    let _conns = held(&srv.addr, 4);
    let answer = raw_healthz(&srv.addr);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// A request whose time runs out stops its work where it reads the index, and frees its
/// worker: a filter that matches nothing over a whole host (no byte ever written, so a
/// deadline checked only when sending never fired), with every index entry read slowed
/// by a test hook so that the scan would take seconds, and one worker.
#[test]
fn a_request_out_of_time_stops_its_scan_and_frees_its_worker() {
    let (_, db) = corpus();
    let exp = export(db);
    let url = exp[0].2["url"].as_str().unwrap().to_string();
    let host = url.split('/').nth(2).unwrap().to_string();
    let on_host = exp
        .iter()
        .filter(|(k, _, _)| k.starts_with(exp[0].0.split(')').next().unwrap()))
        .count();
    // 8 ms an entry: the whole host would take on_host × 4 ms, well over the timeout.
    assert!(on_host >= 300, "{on_host} captures on {host}");
    let cfg = db.parent().unwrap().join("one-worker-1s.toml");
    std::fs::write(&cfg, "[serve]\nrequest_timeout_s = 1\nworkers = 1\n").unwrap();
    let srv = Server::start_with_env(
        db,
        &["--config", cfg.to_str().unwrap()],
        &[],
        &[("TIDEMARK_TEST_SCAN_PAUSE_US", "8000")],
    );
    let slow = [
        format!(
            "/{}?url={}&matchType=host&filter=status:999",
            coll(),
            enc(&host)
        ),
        // (The report and the change list are built once per snapshot off the workers,
        // outside a request's budget: not here.)
    ];
    for path in slow {
        let started = Instant::now();
        let (status, _, body) = srv.get(&path);
        let took = started.elapsed();
        assert_ne!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        assert!(
            took < Duration::from_secs(2),
            "{path}: answered after {took:?}"
        );
        // The one worker is free again at once: an exact URL (a few entries) answers.
        let started = Instant::now();
        let (status, _, body) = srv.get(&format!("/{}?url={}", coll(), enc(&url)));
        let took = started.elapsed();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        assert!(
            took < Duration::from_millis(800),
            "after {path}, the next request waited {took:?} for the worker"
        );
    }
    let (status, _, body) = srv.get(&format!(
        "/{}?url={}&matchType=host&filter=status:999",
        coll(),
        enc(&host)
    ));
    assert!(
        status == 503 || status == 408,
        "{status} {}",
        String::from_utf8_lossy(&body)
    );
    // The change list is one pass over the index, built once per snapshot off the
    // workers: "being built" (503) within the timeout, a worker free meanwhile, then
    // every page from memory (a page still looks up where its gone pages went: a
    // shorter pause per entry here, 2 ms, so the build takes seconds and a page not).
    drop(srv);
    let srv = Server::start_with_env(
        db,
        &["--config", cfg.to_str().unwrap()],
        &[],
        &[("TIDEMARK_TEST_SCAN_PAUSE_US", "2000")],
    );
    let changes = "/api/changes?from=sweep-1&to=sweep-3&limit=20&records=0";
    let started = Instant::now();
    let (status, _, body) = srv.get(changes);
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("being built"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(2));
    let started = Instant::now();
    let (status, _, _) = srv.get(&format!("/{}?url={}", coll(), enc(&url)));
    assert_eq!(status, 200);
    assert!(started.elapsed() < Duration::from_millis(800));
    let first = loop {
        let (status, _, body) = srv.get(changes);
        if status == 200 {
            break serde_json::from_slice::<Value>(&body).unwrap();
        }
        // Still being built (a loaded machine may answer past the timeout: 408).
        assert!(
            status == 503 || status == 408,
            "{status}: {}",
            String::from_utf8_lossy(&body)
        );
        assert!(started.elapsed() < Duration::from_secs(120), "never built");
    };
    assert!(first["rows_total"].as_u64().unwrap() > 20);
    let started = Instant::now();
    let (status, _, body) = srv.get(&format!("{changes}&offset=20"));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "the next page took {:?}",
        started.elapsed()
    );
    let next: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(next["rows_total"], first["rows_total"]);
    assert_ne!(next["rows"][0], first["rows"][0]);
}

/// A request that waited for a `max_concurrency` slot has the time left of its one
/// clock, started when it arrived: its answer (408, or 503 over budget) comes a timeout
/// after it was sent, its index reads stop then and the worker is free at once; the 408
/// says what it is.
#[test]
fn a_request_that_waited_for_a_slot_stops_at_its_own_deadline() {
    let (_, db) = corpus();
    let exp = export(db);
    let url = exp[0].2["url"].as_str().unwrap().to_string();
    let host = url.split('/').nth(2).unwrap().to_string();
    // 25 ms an entry: a whole host (over 300 captures) takes over 7 s.
    let cfg = db.parent().unwrap().join("one-slot-3s.toml");
    std::fs::write(
        &cfg,
        "[serve]\nrequest_timeout_s = 3\nworkers = 1\nmax_concurrency = 1\n",
    )
    .unwrap();
    let srv = Server::start_with_env(
        db,
        &["--config", cfg.to_str().unwrap()],
        &[],
        &[("TIDEMARK_TEST_SCAN_PAUSE_US", "25000")],
    );
    let slow = format!(
        "/{}?url={}&matchType=host&filter=status:999",
        coll(),
        enc(&host)
    );
    let base = srv.base.clone();
    let get_slow = |after: Duration| {
        let (base, slow) = (base.clone(), slow.clone());
        std::thread::spawn(move || {
            std::thread::sleep(after);
            let started = Instant::now();
            let (status, _, body) = request(ureq::get(&format!("{base}{slow}")));
            (
                status,
                String::from_utf8_lossy(&body).into_owned(),
                started.elapsed(),
            )
        })
    };
    let t0 = Instant::now();
    // A holds the one slot and the one worker for its whole timeout; B waits for the
    // slot meanwhile, half a second after A.
    let a = get_slow(Duration::ZERO);
    let b = get_slow(Duration::from_millis(500));
    for (name, (status, body, took)) in [("A", a.join().unwrap()), ("B", b.join().unwrap())] {
        assert!(status == 503 || status == 408, "{name}: {status} {body}");
        assert!(
            took < Duration::from_millis(4000),
            "{name} answered after {took:?}"
        );
    }
    // B's work stopped at its answer (3.5 s after A was sent): the worker is free.
    let wait = Duration::from_millis(3700).saturating_sub(t0.elapsed());
    std::thread::sleep(wait);
    let started = Instant::now();
    let (status, _, body) = srv.get(&format!("/{}?url={}", coll(), enc(&url)));
    let took = started.elapsed();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert!(
        took < Duration::from_millis(1200),
        "the next request waited {took:?} for the worker"
    );
    // The 408 says what it is.
    let (status, _, body) = srv.get(&slow);
    let text = String::from_utf8_lossy(&body);
    if status == 408 {
        assert!(text.contains("\"code\":\"timeout\""), "{text}");
        assert!(text.contains("serve.request_timeout_s"), "{text}");
    } else {
        assert_eq!(status, 503, "{text}");
    }
}

/// `sort=closest` (read as two walks from the date, one each way) gives exactly the
/// order of sorting the URL's captures by distance, then timestamp, then key: for
/// dates at, between, before and after the captures of many URLs.
#[test]
fn closest_order_equals_sorting_the_whole_history() {
    let (_, db) = corpus();
    let exp = export(db);
    let srv = Server::start(db, &[], &[]);
    let secs = |ts: &str| {
        chrono::NaiveDateTime::parse_from_str(ts, "%Y%m%d%H%M%S")
            .unwrap()
            .and_utc()
            .timestamp()
    };
    let show = |t: i64| {
        chrono::DateTime::from_timestamp(t, 0)
            .unwrap()
            .format("%Y%m%d%H%M%S")
            .to_string()
    };
    let mut by_url: BTreeMap<&str, Vec<&(String, String, Value)>> = BTreeMap::new();
    for e in &exp {
        by_url.entry(e.0.as_str()).or_default().push(e);
    }
    let mut checked = 0;
    for mine in by_url.values().filter(|m| m.len() >= 2).step_by(7).take(40) {
        let url = mine[0].2["url"].as_str().unwrap();
        let stamps: Vec<i64> = mine.iter().map(|e| secs(&e.1)).collect();
        let mut targets = vec![stamps[0] - 86_400, stamps[stamps.len() - 1] + 86_400];
        for w in stamps.windows(2) {
            targets.extend([
                w[0],
                w[0] + 1,
                (w[0] + w[1]) / 2,
                (w[0] + w[1]) / 2 + 1,
                w[1] - 1,
            ]);
        }
        for t in targets {
            let target = show(t);
            let mut want: Vec<&(String, String, Value)> = mine.clone();
            want.sort_by_key(|e| ((secs(&e.1) - t).abs(), e.1.clone()));
            let got = cdxj(&srv.text(&format!(
                "/{}?url={}&closest={target}&sort=closest",
                coll(),
                enc(url)
            )));
            let key = |e: &(String, String, Value)| {
                (e.1.clone(), e.2["filename"].clone(), e.2["offset"].clone())
            };
            assert_eq!(
                got.iter().map(key).collect::<Vec<_>>(),
                want.iter().map(|e| key(e)).collect::<Vec<_>>(),
                "{url} closest={target}"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

/// With `serve.public_url` set, every absolute link starts with it, whatever `Host` the
/// client sends (behind a TLS proxy the client's `Host` and `http://` were wrong); a
/// value that is not an http(s) URL is refused at start.
#[test]
fn absolute_links_use_the_public_url() {
    let (_, db) = corpus();
    let exp = export(db);
    let url = exp[0].2["url"].as_str().unwrap().to_string();
    let dir = db.parent().unwrap();
    let cfg = dir.join("public-url.toml");
    std::fs::write(
        &cfg,
        "[serve]\npublic_url = \"https://archive.example.org/wb/\"\n",
    )
    .unwrap();
    let srv = Server::start(db, &["--config", cfg.to_str().unwrap()], &[]);
    let spoof = [("Host", "evil.example")];
    let public = "https://archive.example.org/wb/";
    let (status, hs, _) = no_follow(&format!("{}/timegate/{url}", srv.base), &spoof);
    assert_eq!(status, 302);
    let location = header(&hs, "location").unwrap();
    assert!(
        location.starts_with(&format!("{public}tidemark/")),
        "{location}"
    );
    let link = header(&hs, "link").unwrap();
    assert!(link.contains(&format!("<{public}timemap/link/")), "{link}");
    for path in [
        format!("/timemap/link/{url}"),
        format!("/timemap/json/{url}"),
        format!("/wayback/available?url={}", enc(&url)),
    ] {
        let (status, _, body) = no_follow(&format!("{}{path}", srv.base), &spoof);
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "{path}: {body}");
        assert!(body.contains(public), "{path}: {body}");
        assert!(
            !body.contains("evil.example") && !body.contains("http://127.0.0.1"),
            "{path}: {body}"
        );
    }
    let bad = dir.join("public-url-bad.toml");
    std::fs::write(&bad, "[serve]\npublic_url = \"archive.example.org\"\n").unwrap();
    let out = tidemark(&[
        "--db",
        db.to_str().unwrap(),
        "--config",
        bad.to_str().unwrap(),
        "serve",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("serve.public_url"));
}

/// Replay streams a payload stored as it is served, whatever `serve.max_replay_bytes`
/// says (nothing is held); a payload that must be decoded first (gzip, chunked) and is
/// larger than the cap once decoded is refused, naming the setting and the record, never
/// served cut short as a complete 200.
#[test]
fn replay_streams_plain_payloads_and_refuses_coded_ones_over_the_cap() {
    use tidemark::synth::warc;
    let dir = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let html: Vec<u8> = b"<p>a page that compresses well</p>\n".repeat(2000);
    let gz = warc::gzip_member(&html, 6);
    let mut chunked = Vec::new();
    for part in html.chunks(4096) {
        chunked.extend(format!("{:x}\r\n", part.len()).into_bytes());
        chunked.extend(part);
        chunked.extend(b"\r\n");
    }
    chunked.extend(b"0\r\n\r\n");
    let http = |headers: &[(&str, &str)], body: &[u8]| warc::http_response(200, headers, body);
    let records = [
        (
            "http://files.example/big.bin",
            http(&[("Content-Type", "application/octet-stream")], &big),
        ),
        (
            "http://files.example/page.html",
            http(
                &[("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
                &gz,
            ),
        ),
        ("http://files.example/chunked.html", {
            let mut b =
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
                    .to_vec();
            b.extend(&chunked);
            b
        }),
    ];
    let mut file = Vec::new();
    for (i, (url, block)) in records.iter().enumerate() {
        let date = format!("2026-01-01T00:00:0{i}Z");
        file.extend(warc::gzip_member(
            &warc::response(url, &date, None, block),
            6,
        ));
    }
    let warc_path = dir.path().join("files.warc.gz");
    std::fs::write(&warc_path, file).unwrap();
    let db = dir.path().join("db");
    let (db_s, warc_s) = (db.to_str().unwrap(), warc_path.to_str().unwrap());
    tidemark_ok(&["--db", db_s, "ingest", "--sweep", "s1", warc_s]);
    let cfg = dir.path().join("replay-cap.toml");
    std::fs::write(&cfg, "[serve]\nmax_replay_bytes = 10000\n").unwrap();
    let srv = Server::start(&db, &["--config", cfg.to_str().unwrap()], &[]);
    let path = |i: usize| format!("/{}/2026010100000{i}id_/{}", coll(), records[i].0);
    // 3 MB streamed through a 10 kB cap, byte for byte, with its length.
    let (status, hs, body) = no_follow(&format!("{}{}", srv.base, path(0)), &[]);
    assert_eq!(status, 200);
    assert_eq!(
        header(&hs, "content-length"),
        Some(big.len().to_string().as_str())
    );
    assert!(body == big, "{} bytes back of {}", body.len(), big.len());
    // 72 kB of HTML once decoded, over the 10 kB cap: refused, naming it.
    for i in [1, 2] {
        let (status, _, body) = srv.get(&path(i));
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, 507, "{}: {body}", path(i));
        assert!(
            body.contains("serve.max_replay_bytes") && body.contains("offset"),
            "{body}"
        );
    }
    // Under the default cap both are served decoded.
    let srv = Server::start(&db, &[], &[]);
    for i in [1, 2] {
        let (status, _, body) = srv.get(&path(i));
        assert_eq!((status, body.len()), (200, html.len()), "{}", path(i));
        assert!(body == html);
    }
}

/// Paging through a large answer reads each page from where it starts (learnt from
/// the page before), not by skipping every page before it: with at most 60 index
/// entries a request (`serve.max_scan_rows`), pages of 25 over a host of 300+ captures
/// all answer, and joined they are the whole answer; a page asked first, out of order,
/// still answers when the rows before it fit.
#[test]
fn pages_start_where_they_begin_not_after_skipping_the_ones_before() {
    let (_, db) = corpus();
    let exp = export(db);
    let url = exp[0].2["url"].as_str().unwrap();
    let host = url.split('/').nth(2).unwrap();
    let cfg = db.parent().unwrap().join("scan-rows-60.toml");
    std::fs::write(&cfg, "[serve]\nmax_scan_rows = 60\n").unwrap();
    let srv = Server::start(db, &["--config", cfg.to_str().unwrap()], &[]);
    let q = format!(
        "/cdx/search/cdx?url={}&fl=urlkey,timestamp&pageSize=25",
        enc(&format!("{host}/*"))
    );
    let mut got: Vec<String> = Vec::new();
    for p in 0..1000 {
        let (status, _, body) = srv.get(&format!("{q}&page={p}"));
        let body = String::from_utf8_lossy(&body).to_string();
        assert_eq!(status, 200, "page {p}: {body}");
        if body.is_empty() {
            break;
        }
        got.extend(body.lines().map(|l| l.to_string()));
    }
    let (_, _, all) = Server::start(db, &[], &[]).get(&q);
    let all: Vec<String> = String::from_utf8_lossy(&all)
        .lines()
        .map(|l| l.to_string())
        .collect();
    assert!(all.len() > 300, "{}", all.len());
    assert_eq!(got, all);
    // A filter gives other pages: learnt apart. Page 1 first reads 26-50 rows: fits.
    let f = format!("{q}&filter=!mimetype:none-has-this");
    let (status, _, _) = srv.get(&format!("{f}&page=1"));
    assert_eq!(status, 200);
    // Page 5 with nothing learnt before it must skip 125 rows: over the 60.
    let (status, _, body) = srv.get(&format!("{q}&filter=!statuscode:999&page=5"));
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));
}

/// More `filter`s than `serve.max_filters` are refused, naming the parameter.
#[test]
fn too_many_filters_are_refused() {
    let (_, db) = corpus();
    let srv = Server::start(db, &[], &[]);
    let exp = export(db);
    let url = exp[0].2["url"].as_str().unwrap();
    for (base, field) in [
        (format!("/{}?url={}", coll(), enc(url)), "status"),
        (format!("/cdx/search/cdx?url={}", enc(url)), "statuscode"),
    ] {
        let filters = |n: usize| -> String {
            (0..n)
                .map(|i| format!("&filter=!{field}:{}", 900 + i))
                .collect()
        };
        let (status, _, body) = srv.get(&format!("{base}{}", filters(17)));
        assert_eq!(status, 400, "{base}: {}", String::from_utf8_lossy(&body));
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("serve.max_filters"), "{text}");
        let (status, _, body) = srv.get(&format!("{base}{}", filters(16)));
        assert_eq!(status, 200, "{base}: {}", String::from_utf8_lossy(&body));
        assert!(!body.is_empty());
    }
}

#[test]
fn wayback_cdx_api_json_limits_collapse_resume_and_paging() {
    let (_, db) = corpus();
    let exp = export(db);
    let srv = Server::start(db, &[], &[]);
    let url = sample_urls(&exp, 5)[1].clone();
    let host = tidemark::url::host(&url);
    let key = tidemark::url::surt(&url);
    let host_key = key[..=key.find(')').unwrap()].to_string();
    let want: Vec<_> = exp.iter().filter(|e| e.0.starts_with(&host_key)).collect();

    let rows: Value = srv.json(&format!(
        "/cdx/search/cdx?url={}&output=json",
        enc(&format!("{host}/*"))
    ));
    let rows = rows.as_array().unwrap();
    assert_eq!(
        rows[0],
        serde_json::json!([
            "urlkey",
            "timestamp",
            "original",
            "mimetype",
            "statuscode",
            "digest",
            "length"
        ])
    );
    assert_eq!(rows.len() - 1, want.len());
    for (r, w) in rows[1..].iter().zip(&want) {
        assert_eq!(r[0], w.0.as_str());
        assert_eq!(r[1], w.1.as_str());
        assert_eq!(r[2], w.2["url"]);
        assert_eq!(r[6], w.2["length"]);
    }
    // Text, the last 3, one line per URL.
    let text = srv.text(&format!(
        "/cdx/search/cdx?url={}",
        enc(&format!("{host}/*"))
    ));
    assert_eq!(text.lines().count(), want.len());
    let last3 = srv.text(&format!(
        "/cdx/search/cdx?url={}&limit=-3&fl=urlkey,timestamp",
        enc(&format!("{host}/*"))
    ));
    let expect: Vec<String> = want[want.len() - 3..]
        .iter()
        .map(|w| format!("{} {}", w.0, w.1))
        .collect();
    assert_eq!(last3.lines().collect::<Vec<_>>(), expect);
    let collapsed = srv.text(&format!(
        "/cdx/search/cdx?url={}&collapse=urlkey&fl=urlkey",
        enc(&format!("{host}/*"))
    ));
    let distinct: Vec<&str> = {
        let mut v: Vec<&str> = want.iter().map(|w| w.0.as_str()).collect();
        v.dedup();
        v
    };
    assert_eq!(collapsed.lines().collect::<Vec<_>>(), distinct);
    let ok = srv.text(&format!(
        "/cdx/search/cdx?url={}&filter=statuscode:2..&filter={}&fl=statuscode",
        enc(&format!("{host}/*")),
        enc("!mimetype:warc/revisit")
    ));
    assert!(ok.lines().all(|l| l.starts_with('2')));
    assert_eq!(
        ok.lines().count(),
        want.iter()
            .filter(
                |w| w.2["status"].as_str().is_some_and(|s| s.starts_with('2'))
                    && w.2["type"] != "revisit"
            )
            .count()
    );

    // Resume keys: pages of 10, and of 300 (streamed in chunks of 256 rows, the last
    // held back for its key), joined are the whole answer; with no limit, no key.
    let all: Vec<String> = want.iter().map(|w| format!("{} {}", w.0, w.1)).collect();
    assert!(all.len() > 300, "{}", all.len());
    for (limit, pages) in [
        ("&limit=10", all.len().div_ceil(10)),
        ("&limit=300", 2),
        ("", 1),
    ] {
        let mut got: Vec<String> = Vec::new();
        let mut resume = String::new();
        let mut asked = 0;
        for _ in 0..1000 {
            asked += 1;
            let body = srv.text(&format!(
                "/cdx/search/cdx?url={}&fl=urlkey,timestamp{limit}&showResumeKey=true{}",
                enc(&format!("{host}/*")),
                if resume.is_empty() {
                    String::new()
                } else {
                    format!("&resumeKey={}", enc(&resume))
                }
            ));
            let (lines, key) = match body.split_once("\n\n") {
                Some((l, k)) => (l.to_string() + "\n", k.trim().to_string()),
                None => (body.clone(), String::new()),
            };
            got.extend(lines.lines().map(|l| l.to_string()));
            if key.is_empty() {
                break;
            }
            resume = key;
        }
        assert_eq!(got, all, "{limit}");
        assert!(
            asked == pages || asked == pages + 1,
            "{limit}: {asked} requests"
        );
    }
    // A limit over one streamed chunk (256 rows) is still the limit.
    let first300 = srv.text(&format!(
        "/cdx/search/cdx?url={}&fl=urlkey,timestamp&limit=300",
        enc(&format!("{host}/*"))
    ));
    assert_eq!(first300.lines().collect::<Vec<_>>(), all[..300].to_vec());
    // JSON: the key as the last row after an empty one.
    for n in [5, 300] {
        let j: Value = srv.json(&format!(
            "/cdx/search/cdx?url={}&output=json&limit={n}&showResumeKey=true&fl=urlkey,timestamp",
            enc(&format!("{host}/*"))
        ));
        let j = j.as_array().unwrap();
        assert_eq!(j.len(), 1 + n + 2);
        assert_eq!(j[n + 1], serde_json::json!([]));
        let rows: Vec<String> = j[1..=n]
            .iter()
            .map(|r| format!("{} {}", r[0].as_str().unwrap(), r[1].as_str().unwrap()))
            .collect();
        assert_eq!(rows, all[..n].to_vec());
    }

    // Pages: showNumPages, then each page; past the last, an empty body.
    let pages: usize = srv
        .text(&format!(
            "/cdx/search/cdx?url={}&showNumPages=true&pageSize=25",
            enc(&format!("{host}/*"))
        ))
        .trim()
        .parse()
        .unwrap();
    assert_eq!(pages, want.len().div_ceil(25));
    let mut paged = Vec::new();
    for p in 0..pages {
        let t = srv.text(&format!(
            "/cdx/search/cdx?url={}&fl=urlkey,timestamp&page={p}&pageSize=25",
            enc(&format!("{host}/*"))
        ));
        paged.extend(t.lines().map(|l| l.to_string()));
    }
    assert_eq!(paged, all);
    assert_eq!(
        srv.text(&format!(
            "/cdx/search/cdx?url={}&page={pages}&pageSize=25&output=json",
            enc(&format!("{host}/*"))
        )),
        ""
    );

    // Availability: the capture closest to a timestamp.
    let mine: Vec<_> = exp.iter().filter(|e| e.0 == key).collect();
    let a = srv.json(&format!(
        "/wayback/available?url={}&timestamp={}",
        enc(&url),
        mine[0].1
    ));
    let c = &a["archived_snapshots"]["closest"];
    assert_eq!(c["available"], true);
    assert_eq!(c["timestamp"], mine[0].1.as_str());
    assert!(c["url"].as_str().unwrap().ends_with(&format!(
        "{}id_/{}",
        mine[0].1,
        mine[0].2["url"].as_str().unwrap()
    )));
    let none = srv.json("/wayback/available?url=http://never.example/");
    assert_eq!(none["archived_snapshots"], serde_json::json!({}));
}

fn header<'a>(hs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    hs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The payload of the record at (file, offset) of a generated sweep, read with the
/// project's reader (pywb's test below reads it with warcio).
fn payload_at(dir: &Path, file: &str, offset: u64) -> (u16, Vec<u8>) {
    for k in 1..=SWEEPS {
        for f in sweep_files(dir, k) {
            if f.file_name().unwrap().to_string_lossy() == file {
                let (recs, _) = tidemark::read::read_all(&f, 64 << 20);
                let rec = recs
                    .into_iter()
                    .find(|r| r.offset == offset)
                    .expect("record at offset");
                let r =
                    tidemark::read::parse_response(&rec.block, 64 << 20).expect("HTTP response");
                return (r.status, r.payload);
            }
        }
    }
    panic!("{file} not found");
}

/// The capture a revisit's payload comes from: same URL and digest, not a revisit, the
/// latest up to it (computed from the export, not by the server).
fn original_of<'a>(
    exp: &'a [(String, String, Value)],
    e: &(String, String, Value),
) -> &'a (String, String, Value) {
    exp.iter()
        .filter(|o| {
            o.0 == e.0 && o.2["type"] != "revisit" && o.2["digest"] == e.2["digest"] && o.1 <= e.1
        })
        .last()
        .expect("the original of a revisit")
}

#[test]
fn memento_timemaps_timegate_and_archived_payloads() {
    let (dir, db) = corpus();
    let exp = export(db);
    let srv = Server::start(db, &[], &[]);
    let url = sample_urls(&exp, 5)[3].clone();
    let key = tidemark::url::surt(&url);
    let mine: Vec<_> = exp.iter().filter(|e| e.0 == key).collect();
    assert!(mine.len() >= 2);

    // TimeMap: original, self, timegate, and one memento per capture, first and last marked.
    let (status, ct, body) = srv.get(&format!("/timemap/link/{url}"));
    assert_eq!(status, 200);
    assert_eq!(ct, "application/link-format");
    let tm = String::from_utf8(body).unwrap();
    assert!(tm.contains(&format!("<{url}>; rel=\"original\"")));
    assert!(tm.contains("rel=\"self\"") && tm.contains("from=\"") && tm.contains("until=\""));
    assert!(tm.contains("rel=\"timegate\""));
    assert!(tm.contains("rel=\"first memento\"") && tm.contains("rel=\"last memento\""));
    assert_eq!(tm.matches("memento\"; datetime=").count(), mine.len());
    let tj = srv.json(&format!("/timemap/json/{url}"));
    assert_eq!(tj["mementos"]["list"].as_array().unwrap().len(), mine.len());

    // An independent link-format parser reads it (LinkHeader, PyPI).
    if let Some(py) = python() {
        let script = r#"
import sys, json, link_header
links = link_header.parse(sys.stdin.read().replace("\n", ""))
out = [{"href": l.href, "rel": dict(l.attr_pairs).get("rel"), "datetime": dict(l.attr_pairs).get("datetime")} for l in links.links]
print(json.dumps(out))
"#;
        let links: Vec<Value> = serde_json::from_value(python_json(&py, script, &tm)).unwrap();
        let mementos: Vec<&Value> = links
            .iter()
            .filter(|l| l["rel"].as_str().unwrap_or("").contains("memento"))
            .collect();
        assert_eq!(mementos.len(), mine.len());
        for (m, e) in mementos.iter().zip(&mine) {
            assert_eq!(
                m["href"],
                format!(
                    "{}/{}/{}id_/{}",
                    srv.base,
                    coll(),
                    e.1,
                    e.2["url"].as_str().unwrap()
                )
            );
            let dt = chrono::DateTime::parse_from_rfc2822(m["datetime"].as_str().unwrap()).unwrap();
            assert_eq!(dt.format("%Y%m%d%H%M%S").to_string(), e.1);
        }
        assert_eq!(links[0]["rel"], "original");
    }

    // TimeGate: 302 to the closest memento, Vary, Link; no Memento-Datetime on the 302.
    let first_date = chrono::NaiveDateTime::parse_from_str(&mine[0].1, "%Y%m%d%H%M%S")
        .unwrap()
        .and_utc();
    let asked = (first_date + chrono::Duration::hours(1))
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let (status, hs, _) = no_follow(
        &format!("{}/timegate/{url}", srv.base),
        &[("Accept-Datetime", &asked)],
    );
    assert_eq!(status, 302);
    let loc = header(&hs, "location").unwrap().to_string();
    assert_eq!(
        loc,
        format!(
            "{}/{}/{}id_/{}",
            srv.base,
            coll(),
            mine[0].1,
            mine[0].2["url"].as_str().unwrap()
        )
    );
    assert_eq!(header(&hs, "vary"), Some("accept-datetime"));
    let link = header(&hs, "link").unwrap();
    assert!(
        link.contains("rel=\"original\"")
            && link.contains("rel=\"timemap\"")
            && link.contains("rel=\"first memento\"")
            && link.contains("rel=\"last memento\""),
        "{link}"
    );
    assert!(header(&hs, "memento-datetime").is_none());
    // Without Accept-Datetime: the newest.
    let (_, hs, _) = no_follow(&format!("{}/timegate/{url}", srv.base), &[]);
    assert!(header(&hs, "location")
        .unwrap()
        .contains(&format!("/{}id_/", mine.last().unwrap().1)));

    // Following the TimeGate with a plain client ends at the archived payload.
    let (status, hs, body) = no_follow(&loc, &[]);
    let e = mine[0];
    let src = if e.2["type"] == "revisit" {
        original_of(&exp, e)
    } else {
        e
    };
    let (want_status, want_body) = payload_at(
        dir,
        src.2["filename"].as_str().unwrap(),
        src.2["offset"].as_str().unwrap().parse().unwrap(),
    );
    assert_eq!(status, want_status);
    assert_eq!(body, want_body);
    assert!(header(&hs, "memento-datetime").is_some());
    assert!(header(&hs, "link").unwrap().contains(&format!(
        "<{}>; rel=\"original\"",
        e.2["url"].as_str().unwrap()
    )));

    // Every capture of a sample replays byte for byte, revisits from their originals,
    // redirects with their status.
    let mut kinds = BTreeMap::new();
    for e in exp.iter().step_by(7).take(120) {
        let src = if e.2["type"] == "revisit" {
            original_of(&exp, e)
        } else {
            e
        };
        let (ws, wb) = payload_at(
            dir,
            src.2["filename"].as_str().unwrap(),
            src.2["offset"].as_str().unwrap().parse().unwrap(),
        );
        let (s, _, b) = no_follow(
            &format!(
                "{}/{}/{}id_/{}",
                srv.base,
                coll(),
                e.1,
                e.2["url"].as_str().unwrap()
            ),
            &[],
        );
        let kind = if e.2["type"] == "revisit" {
            "revisit"
        } else if ws / 100 == 3 {
            "redirect"
        } else {
            "plain"
        };
        *kinds.entry(kind).or_insert(0) += 1;
        assert_eq!(
            s,
            if kind == "revisit" {
                // Its own status (a CDX line gives a revisit none, as pywb's and IA's).
                payload_at(
                    dir,
                    e.2["filename"].as_str().unwrap(),
                    e.2["offset"].as_str().unwrap().parse().unwrap(),
                )
                .0
            } else {
                ws
            },
            "{e:?}"
        );
        assert_eq!(b, wb, "{e:?}");
    }
    assert!(
        kinds.len() == 3,
        "plain, revisit and redirect captures: {kinds:?}"
    );
    // Another timestamp redirects to the closest capture.
    let (s, hs, _) = no_follow(
        &format!("{}/{}/{}id_/{url}", srv.base, coll(), &mine[0].1[..8]),
        &[],
    );
    assert_eq!(s, 302);
    assert!(header(&hs, "location").unwrap().contains("id_/"));
}

#[test]
fn a_missing_warc_file_is_a_404_naming_it() {
    let (dir, _) = corpus();
    // An index of copies of sweep 1, then the copies removed.
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db");
    let mut files = Vec::new();
    for f in sweep_files(dir, 1) {
        let to = work.path().join(f.file_name().unwrap());
        std::fs::copy(&f, &to).unwrap();
        files.push(to);
    }
    // Given relative to the ingest's folder: the server runs elsewhere.
    let mut args = vec![
        "--db".to_string(),
        "db".into(),
        "ingest".into(),
        "--sweep".into(),
        "s1".into(),
    ];
    args.extend(
        files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().to_string()),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(&args)
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exp = export(&db);
    let srv = Server::start(&db, &[], &[]);
    let e = exp.iter().find(|e| e.2["type"] != "revisit").unwrap();
    let path = format!("/{}/{}id_/{}", coll(), e.1, e.2["url"].as_str().unwrap());
    let (s, _, _) = srv.get(&path);
    assert_eq!(s, 200, "read from the path it was ingested from");
    for f in &files {
        std::fs::remove_file(f).unwrap();
    }
    let (s, _, body) = srv.get(&path);
    assert_eq!(s, 404);
    assert!(String::from_utf8_lossy(&body).contains(e.2["filename"].as_str().unwrap()));
    // --archive points at where the files are now.
    drop(srv);
    let srv = Server::start(
        &db,
        &[],
        &["--archive", dir.join("sweep-01").to_str().unwrap()],
    );
    let (s, _, _) = srv.get(&path);
    assert_eq!(s, 200);
}

#[test]
fn replay_reads_each_capture_from_its_own_sweeps_file() {
    // Two sweeps whose files share a name (wget's --warc-file=crawl each run, a
    // part-00000.warc.gz per sweep folder): each capture's payload must come from its
    // own sweep's file, never from the other of that name.
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db");
    let sources = ["ipwb__5mementos.warc", "ipwb__salam-home.warc"];
    let mut files = Vec::new();
    for (label, src) in ["a", "b"].iter().zip(sources) {
        let folder = work.path().join(label);
        std::fs::create_dir(&folder).unwrap();
        let to = folder.join("part.warc");
        std::fs::copy(common::corpus_dir().join(src), &to).unwrap();
        let out = tidemark(&[
            "--db",
            db.to_str().unwrap(),
            "ingest",
            "--sweep",
            label,
            to.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        files.push(to);
    }
    // What each file holds, by (URL, timestamp): its status and payload.
    let mut expected: BTreeMap<(String, String), (u16, Vec<u8>)> = BTreeMap::new();
    for f in &files {
        let (recs, _) = tidemark::read::read_all(f, 64 << 20);
        for r in recs
            .iter()
            .filter(|r| r.kind == tidemark::read::RecordKind::Response)
        {
            let (Some(url), Some(date)) =
                (r.field_str("WARC-Target-URI"), r.field_str("WARC-Date"))
            else {
                continue;
            };
            let ts = String::from(tidemark::timestamp::Timestamp14::from_warc_date(&date).unwrap());
            if let Some(h) = tidemark::read::parse_response(&r.block, 64 << 20) {
                let before = expected.insert((url, ts), (h.status, h.payload));
                assert!(
                    before.is_none(),
                    "one capture per URL and time in these files"
                );
            }
        }
    }
    let exp = export(&db);
    let srv = Server::start(&db, &[], &[]);
    let mut checked = 0;
    for e in exp.iter().filter(|e| e.2["type"] != "revisit") {
        let url = e.2["url"].as_str().unwrap().to_string();
        let Some((status, payload)) = expected.get(&(url.clone(), e.1.clone())) else {
            continue;
        };
        let path = format!("/{}/{}id_/{}", coll(), e.1, url);
        let (s, _, body) = srv.get(&path);
        assert_eq!(s, *status, "{path}: {}", String::from_utf8_lossy(&body));
        assert!(
            body == *payload,
            "{path}: not the payload of its own sweep's file"
        );
        checked += 1;
    }
    assert!(checked >= 5, "captures of both files replayed: {checked}");
}

#[test]
fn the_json_api_answers_what_the_commands_print() {
    let (_, db) = corpus();
    let exp = export(db);
    let srv = Server::start(db, &[], &[]);
    let d = db.to_str().unwrap();
    let cli = |args: &[&str]| -> Value {
        let mut a = vec!["--db", d];
        a.extend_from_slice(args);
        let out = tidemark(&a);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for url in sample_urls(&exp, 8) {
        assert_eq!(
            srv.json(&format!("/api/whereis?url={}", enc(&url))),
            cli(&["whereis", &url, "--json"]),
            "{url}"
        );
        assert_eq!(
            srv.json(&format!("/api/history?url={}", enc(&url))),
            cli(&["history", &url, "--json"]),
            "{url}"
        );
        assert_eq!(
            srv.json(&format!("/api/history?url={}&diff=1", enc(&url))),
            cli(&["history", &url, "--diff", "--json"]),
            "{url}"
        );
        let (s, _, _) = srv.get(&format!("/api/similar?url={}&threshold=0.3", enc(&url)));
        if s == 200 {
            assert_eq!(
                srv.json(&format!("/api/similar?url={}&threshold=0.3", enc(&url))),
                cli(&["similar", &url, "--threshold", "0.3", "--json"])
            );
            assert_eq!(
                srv.json(&format!(
                    "/api/similar?url={}&threshold=0.3&containment=1&limit=3",
                    enc(&url)
                )),
                cli(&[
                    "similar",
                    &url,
                    "--threshold",
                    "0.3",
                    "--containment",
                    "--limit",
                    "3",
                    "--json"
                ])
            );
            assert_eq!(
                srv.json(&format!("/api/cluster?url={}", enc(&url))),
                cli(&["cluster", &url, "--json"])
            );
        }
    }
    assert_eq!(
        srv.json("/api/similar?doc=5"),
        cli(&["similar", "--doc", "5", "--json"])
    );
    // A POSTed document is compared as `similar --file` compares a file.
    let e = exp
        .iter()
        .find(|e| e.2["type"] != "revisit" && e.2["status"] == "200")
        .unwrap();
    let page = payload_at(
        &corpus().0,
        e.2["filename"].as_str().unwrap(),
        e.2["offset"].as_str().unwrap().parse().unwrap(),
    )
    .1;
    let file = db.parent().unwrap().join("posted.html");
    std::fs::write(&file, &page).unwrap();
    let (s, _, body) = request(
        ureq::post(&format!("{}/api/similar?threshold=0.3", srv.base))
            .set("Content-Type", "text/html"),
    );
    assert_eq!(s, 400, "an empty body: {}", String::from_utf8_lossy(&body));
    let posted = ureq::post(&format!("{}/api/similar?threshold=0.3", srv.base))
        .set("Content-Type", "text/html")
        .send_bytes(&page)
        .unwrap()
        .into_json::<Value>()
        .unwrap();
    assert_eq!(
        posted,
        cli(&[
            "similar",
            "--file",
            file.to_str().unwrap(),
            "--threshold",
            "0.3",
            "--json"
        ])
    );
    assert!(!posted.as_array().unwrap().is_empty());
    assert_eq!(
        srv.json("/api/report"),
        cli(&["report", "--format", "json"])
    );
    assert_eq!(
        srv.json("/api/report?from=sweep-2&to=sweep-3"),
        cli(&["report", "--from", "sweep-2", "--to", "sweep-3", "--format", "json"])
    );
    // The service names files, not the server's paths.
    let mut sweeps = cli(&["sweeps", "--json"]);
    for s in sweeps.as_array_mut().unwrap() {
        for f in s["files"].as_array_mut().unwrap() {
            let name = f.as_str().unwrap().rsplit('/').next().unwrap().to_string();
            *f = Value::from(name);
        }
    }
    assert_eq!(srv.json("/api/sweeps"), sweeps);
    assert_eq!(srv.json("/api/stats"), cli(&["stats", "--json"]));
    // The change list, a page of it: as the command prints that page.
    assert_eq!(
        srv.json("/api/changes?from=sweep-1&to=sweep-3&offset=3&limit=20"),
        cli(&[
            "report",
            "--changes",
            "--from",
            "sweep-1",
            "--to",
            "sweep-3",
            "--offset",
            "3",
            "--limit",
            "20",
            "--format",
            "json"
        ])
    );
    let page = srv.json("/api/changes");
    assert_eq!(
        (page["from"].as_str(), page["to"].as_str()),
        (Some("sweep-2"), Some("sweep-3"))
    );
    assert_eq!(
        page["rows"].as_array().unwrap().len(),
        50.min(page["rows_total"].as_u64().unwrap() as usize)
    );

    // The OpenAPI description names every endpoint and its parameters, and is the one
    // the repository keeps (docs/openapi.json, written by `tidemark reference`).
    let api = srv.json("/api/openapi.json");
    assert!(api["openapi"].as_str().unwrap().starts_with("3."));
    let kept: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json"))
            .unwrap(),
    )
    .unwrap();
    assert!(
        api == kept,
        "the served OpenAPI description differs from docs/openapi.json: run `bash tools/docs.sh`"
    );
    for (status, path) in [
        ("503", "/readyz"),
        ("403", "/{collection}/{timestamp}/{url}"),
        ("507", "/{collection}/{timestamp}/{url}"),
        ("408", "/"),
        ("413", "/api/similar"),
    ] {
        let method = if status == "413" { "post" } else { "get" };
        assert!(
            api["paths"][path][method]["responses"][status].is_object(),
            "{path} does not describe its {status} answer"
        );
    }
    for p in [
        "/api/whereis",
        "/api/history",
        "/api/similar",
        "/api/cluster",
        "/api/report",
        "/api/changes",
        "/api/sweeps",
        "/api/stats",
    ] {
        assert!(
            api["paths"][p]["get"].is_object(),
            "{p} missing from the OpenAPI description"
        );
    }
    assert!(api["paths"]["/api/similar"]["post"].is_object());
    // And the capture index and Memento endpoints, with their query parameters.
    for p in [
        "/{collection}",
        "/cdx/search/cdx",
        "/wayback/available",
        "/timemap/link/{url}",
        "/timemap/json/{url}",
        "/timegate/{url}",
        "/{collection}/{timestamp}/{url}",
    ] {
        assert!(
            api["paths"][p]["get"].is_object(),
            "{p} missing from the OpenAPI description"
        );
    }
    let names = |path: &str| -> Vec<String> {
        api["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    for p in [
        "url",
        "matchType",
        "from",
        "to",
        "filter",
        "output",
        "fl",
        "limit",
    ] {
        assert!(names("/{collection}").iter().any(|n| n == p), "{p}");
        assert!(names("/cdx/search/cdx").iter().any(|n| n == p), "{p}");
    }
    assert!(names("/timegate/{url}")
        .iter()
        .any(|n| n == "Accept-Datetime"));
    let params: Vec<&str> = api["paths"]["/api/history"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(params, ["url", "diff"]);
}

#[test]
fn serving_follows_an_ingest_and_never_mixes_two_sweeps() {
    let (dir, _) = corpus();
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db");
    ingest_generated(dir, &db, 1, &[]);
    let srv = Server::start(&db, &[], &[]);
    assert_eq!(srv.json("/readyz")["sweep"], "sweep-1");
    let exp1 = export(&db);
    let urls = sample_urls(&exp1, 20);
    let ask = |u: &str| -> (Value, String) {
        (
            srv.json(&format!("/api/whereis?url={}", enc(u))),
            srv.text(&format!(
                "/{}?url={}&matchType=host&fl=urlkey,timestamp,offset&output=text",
                coll(),
                enc(u)
            )),
        )
    };
    let before: Vec<_> = urls.iter().map(|u| ask(u)).collect();
    // The report is built once for the snapshot and answered from memory after.
    let report1 = srv.json("/api/report");
    assert_eq!(srv.json("/api/report"), report1);
    assert_eq!(
        report1["sweeps"].as_array().map(|s| s.len()),
        Some(1),
        "{report1}"
    );
    // Ingest sweep 2 while a client asks the same questions over and over.
    let mut args: Vec<String> = vec![
        "--db".into(),
        db.display().to_string(),
        "ingest".into(),
        "--sweep".into(),
        "sweep-2".into(),
    ];
    args.extend(sweep_files(dir, 2).iter().map(|f| f.display().to_string()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    let mut during = 0;
    // `/metrics` during the ingest: (rounds it told of a running ingest, the most
    // records it said were committed).
    let py = python();
    let mut told = (0, 0.0f64);
    let started = Instant::now();
    // How long the ingest ran (seen from here).
    let mut ran: Option<Duration> = None;
    loop {
        let running = child.try_wait().unwrap().is_none();
        if !running && ran.is_none() {
            ran = Some(started.elapsed());
        }
        if let (Some(py), true) = (&py, running) {
            let m = scrape(py, &srv.text("/metrics"));
            if sample(&m, "tidemark_ingest_running", &[]) == 1.0 {
                told.0 += 1;
                told.1 = told.1.max(sample(&m, "tidemark_ingest_records", &[]));
                let steps: f64 = ["reading", "pairing", "finishing"]
                    .iter()
                    .map(|st| sample(&m, "tidemark_ingest_step", &[("step", st)]))
                    .sum();
                assert_eq!(steps, 1.0, "one step at a time");
            }
        }
        for (i, u) in urls.iter().enumerate() {
            seen.push((i, ask(u)));
        }
        if running {
            during += 1;
        }
        if !running && srv.json("/readyz")["sweep"] == "sweep-2" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the server did not pick up sweep 2"
        );
    }
    assert!(child.wait().unwrap().success());
    let after: Vec<_> = urls.iter().map(|u| ask(u)).collect();
    // Each answer on its own: whereis and the CDX lines are two requests, and the server
    // may switch to sweep 2 between them.
    let mut mixed = 0;
    let mut changed = 0;
    for (i, got) in &seen {
        if got.0 != before[*i].0 && got.0 != after[*i].0 {
            mixed += 1;
        }
        if got.1 != before[*i].1 && got.1 != after[*i].1 {
            mixed += 1;
        }
    }
    for i in 0..urls.len() {
        if before[i] != after[i] {
            changed += 1;
        }
    }
    assert_eq!(
        mixed, 0,
        "answers that were neither sweep 1's nor sweep 2's"
    );
    assert!(
        changed > 0,
        "sweep 2 changed nothing the client asked about"
    );
    assert!(during > 0, "no request was answered while the ingest ran");
    if let Some(py) = &py {
        eprintln!(
            "/metrics told of the ingest in {} rounds, {} records at most",
            told.0, told.1
        );
        // The ingest writes its progress file as soon as it has opened the index: by
        // the second round (a round is 40 requests) it has (the first round's scrape may
        // come before it).
        if during >= 2 {
            assert!(
                told.0 > 0,
                "/metrics never told of the ingest ({during} rounds during it)"
            );
        }
        // Its progress is rewritten once a second: an ingest that ran longer has told
        // of records committed.
        if ran.is_some_and(|r| r > Duration::from_secs(3)) {
            assert!(told.1 > 0.0, "/metrics told of no record committed");
        }
        let m = scrape(py, &srv.text("/metrics"));
        assert_eq!(sample(&m, "tidemark_ingest_running", &[]), 0.0);
        assert_eq!(sample(&m, "tidemark_snapshot_sweeps", &[]), 2.0);
        assert!(
            !db.join("ingest-progress.json").exists(),
            "the progress file outlived its ingest"
        );
    }
    eprintln!(
        "{} rounds during the ingest, {} answers, {changed} of {} URLs changed",
        during,
        seen.len(),
        urls.len()
    );
    // The next snapshot's report is its own: the command's on the finished index.
    let report2 = srv.json("/api/report");
    let cli = tidemark(&["--db", db.to_str().unwrap(), "report", "--format", "json"]);
    assert_eq!(
        report2,
        serde_json::from_slice::<Value>(&cli.stdout).unwrap()
    );
    assert_ne!(report2, report1);
    // The answers after are the commands' on the finished index.
    let cli = tidemark(&["--db", db.to_str().unwrap(), "whereis", &urls[0], "--json"]);
    assert_eq!(
        after[0].0,
        serde_json::from_slice::<Value>(&cli.stdout).unwrap()
    );
}

/// `tidemark acl check` picks the rule pywb's own access checker picks, for every URL
/// and user of a table, from one `.aclj` file (sorted in reverse, as pywb's
/// `wb-manager acl` writes it and its binary search needs).
#[test]
fn acl_check_picks_the_rule_pywb_picks() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut rules = vec![
        r#"org, - {"access": "block"}"#,
        r#"com,example)/open/x### - {"access": "block"}"#,
        r#"com,example)/open - {"access": "allow"}"#,
        r#"com,example)/ - {"access": "exclude", "url": "http://example.com/"}"#,
        r#"com,example)/ - {"access": "allow", "user": "staff"}"#,
        r#"com,example)/news - {"access": "allow", "user": "staff"}"#,
        r#"com,example)/news/embargoed - {"access": "exclude", "user": "guest"}"#,
        r#"com,example,blog) - {"access": "block"}"#,
        r#"com,example,blog)/public - {"access": "allow_ignore_embargo"}"#,
        r#"net,plo2)/nack/fio-53.html### - {"access": "exclude"}"#,
    ];
    rules.sort();
    rules.reverse();
    let file = dir.path().join("rules.aclj");
    std::fs::write(&file, rules.join("\n") + "\n").unwrap();
    let urls = [
        "http://example.com/",
        "http://example.com/secret",
        "https://www.example.com/open",
        "https://www.example.com/open/x",
        "https://www.example.com/open/xy",
        "http://example.com/news/1",
        "http://example.com/news/embargoed/2",
        "http://blog.example.com/",
        "http://blog.example.com/public/a",
        "http://example.org/a",
        "http://wiki.org/",
        "http://plo2.net/nack/fio-53.html",
        "http://plo2.net/nack/fio-53.html?x=1",
        "http://other.net/",
    ];
    let users = ["", "staff", "guest"];
    let theirs = run_python(
        &py,
        "import sys\nfrom pywb.warcserver.access_checker import AccessChecker\nac = AccessChecker(sys.argv[1])\nfor u in sys.argv[2:]:\n    url, user = u.split(' ')\n    print(ac.find_access_rule(url, acl_user=user or None).get('access'))",
        &std::iter::once(file.to_str().unwrap().to_string())
            .chain(urls.iter().flat_map(|u| users.iter().map(move |w| format!("{u} {w}"))))
            .collect::<Vec<_>>()
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
        dir.path(),
    );
    let mut theirs = theirs.lines();
    let mut differ = Vec::new();
    for url in urls {
        for user in users {
            let mut args = vec![
                "acl",
                "check",
                url,
                "--acl",
                file.to_str().unwrap(),
                "--json",
            ];
            if !user.is_empty() {
                args.extend(["--user", user]);
            }
            let out = tidemark(&args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let want = theirs.next().unwrap();
            if v["access"] != want {
                differ.push(format!(
                    "{url} user {user:?}: tidemark {} pywb {want}",
                    v["access"]
                ));
            }
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
}

/// Runs a Python script of the test environment; its standard output.
fn run_python(py: &str, script: &str, args: &[&str], cwd: &Path) -> String {
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn pywb_replays_generated_pages_through_the_index() {
    let Some(py) = python() else { return };
    let (dir, db) = corpus();
    let exp = export(db);
    let srv = Server::start(db, &[], &[]);
    // A stock pywb: its index is tidemark, its archive the generated WARC folders.
    let work = tempfile::tempdir().unwrap();
    let archives: Vec<String> = (1..=SWEEPS)
        .map(|k| format!("    - {}/sweep-{k:02}/", dir.display()))
        .collect();
    std::fs::write(
        work.path().join("config.yaml"),
        format!(
            "collections:\n  tm:\n    index_paths: cdx+{}/{}\n    archive_paths:\n{}\n",
            srv.base,
            coll(),
            archives.join("\n")
        ),
    )
    .unwrap();
    let pywb = Pywb::start(&py, work.path());
    // Sampled captures of each kind; what pywb answers is compared, in Python with
    // warcio (pywb's own reader, independent of tidemark's), with the WARC's payload.
    let mut jobs = Vec::new();
    let mut kinds = BTreeMap::new();
    // Spread over the index: every 5th plain capture and revisit (15 of each), and every
    // redirect (they are rarer: 8 in this corpus).
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for e in exp.iter() {
        let src = if e.2["type"] == "revisit" {
            original_of(&exp, e)
        } else {
            e
        };
        let status: u16 = e.2["status"].as_str().unwrap_or("0").parse().unwrap_or(0);
        let kind = if e.2["type"] == "revisit" {
            "revisit"
        } else if status / 100 == 3 {
            "redirect"
        } else if status == 200 {
            "plain"
        } else {
            continue;
        };
        let k = seen.entry(kind).or_insert(0);
        *k += 1;
        if kind != "redirect" && *k % 5 != 0 {
            continue;
        }
        let n = kinds.entry(kind).or_insert(0);
        if *n >= 15 {
            continue;
        }
        *n += 1;
        let sweep = (1..=SWEEPS)
            .find(|k| {
                sweep_files(dir, *k).iter().any(|f| {
                    f.file_name().unwrap().to_string_lossy() == src.2["filename"].as_str().unwrap()
                })
            })
            .unwrap();
        jobs.push(serde_json::json!({
            "kind": kind,
            "fetch": format!("{}/tm/{}id_/{}", pywb.base, e.1, e.2["url"].as_str().unwrap()),
            "warc": dir.join(format!("sweep-{sweep:02}")).join(src.2["filename"].as_str().unwrap()),
            "offset": src.2["offset"].as_str().unwrap().parse::<u64>().unwrap(),
        }));
    }
    assert!(
        kinds.get("plain") == Some(&15)
            && kinds.get("revisit") == Some(&15)
            && kinds.get("redirect").is_some_and(|n| *n >= 5),
        "{kinds:?}"
    );
    let jobs_file = work.path().join("jobs.json");
    std::fs::write(&jobs_file, serde_json::to_vec(&jobs).unwrap()).unwrap();
    let script = r#"
import json, sys, urllib.request, urllib.error
from warcio.archiveiterator import ArchiveIterator
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k): return None
opener = urllib.request.build_opener(NoRedirect)
out = []
for job in json.load(open(sys.argv[1])):
    with open(job["warc"], "rb") as f:
        f.seek(job["offset"])
        rec = next(iter(ArchiveIterator(f)))
        want_status = int(rec.http_headers.get_statuscode())
        want = rec.content_stream().read()
    try:
        r = opener.open(job["fetch"], timeout=30)
        status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    out.append({"kind": job["kind"], "url": job["fetch"], "status": status, "want_status": want_status, "same": body == want, "len": len(body), "want_len": len(want)})
print(json.dumps(out))
"#;
    let out = run_python(&py, script, &[jobs_file.to_str().unwrap()], work.path());
    let results: Vec<Value> = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(results.len(), jobs.len());
    for r in &results {
        assert_eq!(
            r["same"],
            true,
            "pywb's bytes differ from the WARC payload: {r} (tidemark log: {})",
            srv.log()
        );
        if r["kind"] != "revisit" {
            assert_eq!(r["status"], r["want_status"], "{r}");
        }
    }
    // pywb asked tidemark, and read the WARCs itself (not tidemark's replay URLs).
    let log = srv.log();
    assert!(log.contains("sort=closest"), "{log}");
    assert!(
        !log.contains("id_/"),
        "pywb fetched payloads from tidemark instead of the WARC files"
    );
    drop(pywb);
    eprintln!("pywb replayed {:?} captures byte for byte", kinds);
}

#[test]
fn cdx_toolkit_pages_through_every_capture_of_a_host() {
    let Some(py) = python() else { return };
    let (_, db) = corpus();
    let exp = export(db);
    let srv = Server::start(db, &[], &[]);
    let url = sample_urls(&exp, 5)[4].clone();
    let key = tidemark::url::surt(&url);
    let host_key = key[..=key.find(')').unwrap()].to_string();
    let host = tidemark::url::host(&url);
    let want: Vec<_> = exp.iter().filter(|e| e.0.starts_with(&host_key)).collect();
    assert!(want.len() > 60, "too few captures to page: {}", want.len());
    let script = r#"
import json, sys, cdx_toolkit
cdx = cdx_toolkit.CDXFetcher(source=sys.argv[1])
for obj in cdx.iter(sys.argv[2], pageSize=25):
    print(json.dumps(dict(obj)))
"#;
    let out = run_python(
        &py,
        script,
        &[
            &format!("{}/cdx/search/cdx", srv.base),
            &format!("{host}/*"),
        ],
        Path::new("."),
    );
    let got: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g["urlkey"], w.0.as_str());
        assert_eq!(g["timestamp"], w.1.as_str());
        assert_eq!(g["url"], w.2["url"]);
        assert_eq!(
            g["status"].as_str(),
            Some(w.2["status"].as_str().unwrap_or("-"))
        );
        assert_eq!(
            g["digest"].as_str(),
            Some(w.2["digest"].as_str().unwrap_or("-"))
        );
        assert_eq!(g["length"], w.2["length"]);
        let mime = if w.2["type"] == "revisit" {
            Value::from("warc/revisit")
        } else {
            w.2["mime"].clone()
        };
        assert_eq!(g["mime"], mime);
    }
    // It paged: one request per page of 25 and one past the last.
    let pages = want.len().div_ceil(25);
    let log = srv.log();
    assert_eq!(
        log.matches("GET /cdx/search/cdx?").count(),
        pages + 1,
        "{log}"
    );
}

/// A WebDriver session on Debian's chromedriver and headless Chromium.
struct Browser {
    driver: std::process::Child,
    base: String,
    session: String,
}

impl Browser {
    fn start() -> Option<Browser> {
        let (Ok(chromium), Ok(driver)) = (which("chromium"), which("chromedriver")) else {
            assert!(
                std::env::var_os("CI").is_none(),
                "chromium and chromedriver are missing in CI (tools/test.sh installs them)"
            );
            eprintln!("SKIPPED: chromium or chromedriver is not installed (apt-get install chromium chromium-driver); tools/test.sh installs them");
            return None;
        };
        let port = free_port();
        let driver = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while ureq::get(&format!("{base}/status")).call().is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap().keep();
        let caps = serde_json::json!({"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--disable-dev-shm-usage", format!("--user-data-dir={}", profile.display())]
        }}}});
        let r: Value = ureq::post(&format!("{base}/session"))
            .send_json(caps)
            .unwrap()
            .into_json()
            .unwrap();
        let session = r["value"]["sessionId"].as_str().unwrap().to_string();
        Some(Browser {
            driver,
            base,
            session,
        })
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let resp = if method == "GET" {
            ureq::get(&url).call()
        } else {
            ureq::post(&url).send_json(body)
        };
        match resp {
            Ok(r) => r.into_json::<Value>().unwrap()["value"].clone(),
            Err(ureq::Error::Status(c, r)) => panic!(
                "WebDriver {path}: {c} {}",
                r.into_string().unwrap_or_default()
            ),
            Err(e) => panic!("WebDriver {path}: {e}"),
        }
    }

    fn element(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            "/element",
            serde_json::json!({"using": "css selector", "value": css}),
        );
        v.as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }

    fn screenshot(&self, name: &str) -> PathBuf {
        let data = self.call("GET", "/screenshot", Value::Null);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-artifacts");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, base64_decode(data.as_str().unwrap())).unwrap();
        p
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = ureq::delete(&format!("{}/session/{}", self.base, self.session)).call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn which(name: &str) -> Result<String, ()> {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .map_err(|_| ())?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if p.is_empty() {
        Err(())
    } else {
        Ok(p)
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    data_encoding::BASE64.decode(s.as_bytes()).unwrap()
}

#[test]
fn the_lost_and_found_page_finds_a_moved_page_in_a_real_browser() {
    let (dir, db) = corpus();
    let Some(b) = Browser::start() else { return };
    let srv = Server::start(db, &[], &[]);
    // A page the generator moved in the last sweep, and where tidemark says it is.
    let moved = common::truth(dir, SWEEPS)["moves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["old_status"] == 301 || m["old_status"].is_null())
        .cloned()
        .unwrap();
    let from = moved["from"].as_str().unwrap();
    let to = moved["to"].as_str().unwrap();
    let cli: Value = serde_json::from_slice(
        &tidemark(&["--db", db.to_str().unwrap(), "whereis", from, "--json"]).stdout,
    )
    .unwrap();
    assert_eq!(cli["newest_url"], to);

    // A phone's screen: the page must not scroll sideways.
    b.call(
        "POST",
        "/window/rect",
        serde_json::json!({"width": 390, "height": 844}),
    );
    b.call(
        "POST",
        "/url",
        serde_json::json!({"url": format!("{}/", srv.base)}),
    );
    let input = b.element("input[name=url]");
    b.call(
        "POST",
        &format!("/element/{input}/value"),
        serde_json::json!({"text": from}),
    );
    let button = b.element("button[type=submit]");
    b.call(
        "POST",
        &format!("/element/{button}/click"),
        serde_json::json!({}),
    );
    let started = Instant::now();
    let newest = loop {
        let found = b.call(
            "POST",
            "/elements",
            serde_json::json!({"using": "css selector", "value": "#newest-url"}),
        );
        if let Some(e) = found.as_array().unwrap().first() {
            let id = e
                .as_object()
                .unwrap()
                .values()
                .next()
                .unwrap()
                .as_str()
                .unwrap()
                .to_string();
            break b.call("GET", &format!("/element/{id}/text"), Value::Null);
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no answer on the page"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(newest, to);
    // The answer has its own address.
    let here = b.call("GET", "/url", Value::Null);
    assert!(here.as_str().unwrap().contains("/?url="), "{here}");
    let status = b.call("POST", "/execute/sync", serde_json::json!({"script": "return document.getElementById('status').textContent", "args": []}));
    assert_eq!(status, "moved");
    let shot = b.screenshot("lost-and-found-phone.png");
    assert!(std::fs::metadata(&shot).unwrap().len() > 5000);
    let overflow = b.call("POST", "/execute/sync", serde_json::json!({"script": "return document.documentElement.scrollWidth - window.innerWidth", "args": []}));
    assert!(
        overflow.as_i64().unwrap() <= 0,
        "the page scrolls sideways on a phone by {overflow} px (see {})",
        shot.display()
    );
    let scripts = b.call(
        "POST",
        "/execute/sync",
        serde_json::json!({"script": "return document.scripts.length", "args": []}),
    );
    assert_eq!(scripts, 0, "the page works without JavaScript");
    // A page edited in the last sweep: its history rows link to the archived captures,
    // and "what changed" shows the lines removed and added, read from the records.
    let edited = common::truth(dir, SWEEPS)["edits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "major")
        .cloned()
        .unwrap();
    let url = edited["url"].as_str().unwrap();
    b.call(
        "POST",
        "/url",
        serde_json::json!({"url": format!("{}/?url={}", srv.base, enc(url))}),
    );
    let js = |script: &str| {
        b.call(
            "POST",
            "/execute/sync",
            serde_json::json!({"script": script, "args": []}),
        )
    };
    let replays = js(
        "return Array.from(document.querySelectorAll('a.replay')).map(a => a.getAttribute('href'))",
    );
    let replays = replays.as_array().unwrap();
    assert_eq!(replays.len(), SWEEPS, "{replays:?}");
    for r in replays {
        let (status, _, body) = srv.get(r.as_str().unwrap());
        assert_eq!(status, 200, "{r}");
        assert!(!body.is_empty(), "{r}");
    }
    let link = js(
        "var a = document.querySelector('a.difflink'); return a ? a.getAttribute('href') : null",
    );
    assert!(
        link.as_str().is_some_and(|l| l.contains("diff=1")),
        "{link}"
    );
    b.call(
        "POST",
        "/url",
        serde_json::json!({"url": format!("{}{}", srv.base, link.as_str().unwrap())}),
    );
    let lines = js("return [document.querySelectorAll('.changes .del:not(.link)').length, document.querySelectorAll('.changes .ins:not(.link)').length, document.querySelectorAll('.changes .link').length]");
    let (del, ins) = (lines[0].as_u64().unwrap(), lines[1].as_u64().unwrap());
    assert!(del + ins > 0, "no lines shown removed or added: {lines}");
    let api: Value = srv.json(&format!("/api/history?url={}&diff=1", enc(url)));
    // The API's changes of every version: how many of `kind` (lines, links), both ways.
    let in_api = |kind: &str| -> u64 {
        (api["captures"].as_array().unwrap().iter())
            .filter(|c| c["changes"].is_object())
            .map(|c| {
                (c["changes"][format!("{kind}_removed")]
                    .as_array()
                    .unwrap()
                    .len()
                    + c["changes"][format!("{kind}_added")]
                        .as_array()
                        .unwrap()
                        .len()) as u64
            })
            .sum()
    };
    assert_eq!(
        in_api("lines"),
        del + ins,
        "the page shows the lines the API gives: {api}"
    );
    let links_in_api = in_api("links");
    assert_eq!(
        links_in_api,
        lines[2].as_u64().unwrap(),
        "the page shows the links the API gives: {api}"
    );
    b.screenshot("history-diff.png");
    // The change report page of a pair of sweeps renders too.
    b.call(
        "POST",
        "/window/rect",
        serde_json::json!({"width": 1200, "height": 900}),
    );
    b.call(
        "POST",
        "/url",
        serde_json::json!({"url": format!("{}/report?from=sweep-2&to=sweep-3", srv.base)}),
    );
    let svgs = b.call(
        "POST",
        "/execute/sync",
        serde_json::json!({"script": "return document.querySelectorAll('svg').length", "args": []}),
    );
    assert!(svgs.as_i64().unwrap() > 0);
    b.screenshot("report-sweep-2-3.png");
    eprintln!("screenshots in {}", shot.parent().unwrap().display());
}

/// Replay as pywb does it: the archived headers that would act on this server's origin
/// (cookies, HSTS, CSP) or describe the archived transfer (its Date, Link) come as
/// `X-Archive-Orig-*`; an archived redirect's Location leads to the memento of its
/// target (a path of this server: no public_url), and a redirect to its own URL in
/// another form (http to https) to that URL's page, not back to itself; the Memento
/// `Link` header names the URL as a link-format target.
#[test]
fn replay_sends_archived_headers_as_pywb_does_and_redirects_stay_in_the_archive() {
    use tidemark::synth::warc;
    let dir = tempfile::tempdir().unwrap();
    let (t0, t1) = ("2026-05-20T12:00:00Z", "2026-05-20T12:00:01Z");
    let url = "https://doc.example/book/ch18-01-what-is-oo.html";
    let old = "https://doc.example/book/ch17-01-what-is-oo.html";
    let http = "http://doc.example/book/ch18-01-what-is-oo.html";
    let page = warc::http_response(
        200,
        &[
            ("Content-Type", "text/html; charset=utf-8"),
            ("Set-Cookie", "session=abc; Path=/"),
            ("Strict-Transport-Security", "max-age=31536000"),
            ("Content-Security-Policy", "default-src 'self'"),
            ("Date", "Wed, 20 May 2026 12:00:01 GMT"),
            ("Link", "</style.css>; rel=preload"),
        ],
        b"<html><body><p>the page where the chapter is now</p></body></html>",
    );
    let moved = warc::http_response(301, &[("Location", "ch18-01-what-is-oo.html")], b"moved");
    let to_https = warc::http_response(301, &[("Location", url)], b"moved");
    let mut bytes = warc::response(http, t0, None, &to_https);
    bytes.extend(warc::response(url, t1, None, &page));
    bytes.extend(warc::response(old, t0, None, &moved));
    let file = dir.path().join("replay.warc");
    std::fs::write(&file, bytes).unwrap();
    let db = dir.path().join("db");
    let (d, f) = (db.to_str().unwrap(), file.to_str().unwrap());
    tidemark_ok(&["--db", d, "ingest", "--sweep", "s1", f]);
    let srv = Server::start(&db, &[], &[]);
    let get = |path: &str| no_follow(&format!("{}{path}", srv.base), &[]);

    let (status, hs, body) = get(&format!("/{}/20260520120001id_/{url}", coll()));
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("the chapter is now"));
    let h = |name: &str| header(&hs, name).map(str::to_string);
    assert_eq!(
        h("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    for (name, value) in [
        ("set-cookie", "session=abc; Path=/"),
        ("strict-transport-security", "max-age=31536000"),
        ("content-security-policy", "default-src 'self'"),
        ("date", "Wed, 20 May 2026 12:00:01 GMT"),
        ("link", "</style.css>; rel=preload"),
    ] {
        assert_eq!(
            h(&format!("x-archive-orig-{name}")).as_deref(),
            Some(value),
            "{hs:?}"
        );
        assert_ne!(
            h(name).as_deref(),
            Some(value),
            "{name} sent as itself: {hs:?}"
        );
    }
    let link = h("link").unwrap();
    let want = format!("<{url}>; rel=\"original\", <{}/timegate/{url}>", srv.base);
    assert!(link.starts_with(&want), "{link}");
    assert_eq!(
        h("memento-datetime").as_deref(),
        Some("Wed, 20 May 2026 12:00:01 GMT")
    );

    // The archived redirect leads to the memento of its target at the same time: the
    // capture of its URL key then is the http → https redirect, which leads on to the
    // page's own capture, which answers.
    let (status, hs, _) = get(&format!("/{}/20260520120000id_/{old}", coll()));
    assert_eq!(status, 301);
    let to = header(&hs, "location").unwrap().to_string();
    assert_eq!(to, format!("/{}/20260520120000id_/{url}", coll()));
    assert_eq!(
        header(&hs, "x-archive-orig-location"),
        Some("ch18-01-what-is-oo.html")
    );
    let (status, hs, _) = get(&to);
    assert_eq!(status, 301, "{hs:?}");
    let (status, _, body) = get(header(&hs, "location").unwrap());
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("the chapter is now"));

    // http → https of one page (one URL key): to the page's capture, not to itself.
    let (status, hs, _) = get(&format!("/{}/20260520120000id_/{http}", coll()));
    assert_eq!(status, 301);
    let want = format!("/{}/20260520120001id_/{url}", coll());
    assert_eq!(header(&hs, "location"), Some(want.as_str()), "{hs:?}");
}

/// `/metrics` read as Prometheus reads it (the `prometheus_client` package's OpenMetrics
/// parser): (name, labels, value) of every sample.
fn scrape(python: &str, text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
    let script = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        out.append([s.name, s.labels, s.value])
print(json.dumps(out))
"#;
    serde_json::from_value(python_json(python, script, text)).unwrap()
}

/// The value of the sample `name` whose labels include `with` (0 when there is none).
fn sample(
    samples: &[(String, BTreeMap<String, String>, f64)],
    name: &str,
    with: &[(&str, &str)],
) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && with
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.2)
        .sum()
}

#[test]
fn metrics_count_the_requests_made_as_prometheus_reads_them() {
    let Some(python) = common::server::python() else {
        return;
    };
    let (_, db) = corpus();
    let srv = Server::start(db, &[], &[]);
    for _ in 0..3 {
        srv.text("/healthz");
    }
    for _ in 0..2 {
        srv.json("/api/sweeps");
    }
    assert_eq!(srv.get("/api/history").0, 400);
    let (status, ct, body) = srv.get("/metrics");
    assert_eq!(status, 200);
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    let first = scrape(&python, &String::from_utf8(body).unwrap());
    let requests = "tidemark_http_requests_total";
    assert_eq!(
        sample(
            &first,
            requests,
            &[("route", "/healthz"), ("status", "200")]
        ),
        3.0
    );
    assert_eq!(
        sample(
            &first,
            requests,
            &[("route", "/api/sweeps"), ("status", "200")]
        ),
        2.0
    );
    assert_eq!(
        sample(
            &first,
            requests,
            &[("route", "/api/history"), ("status", "400")]
        ),
        1.0
    );
    let errors = "tidemark_http_errors_total";
    assert_eq!(
        sample(
            &first,
            errors,
            &[("route", "/api/history"), ("code", "bad_parameter")]
        ),
        1.0
    );
    let latency = "tidemark_http_request_duration_seconds_count";
    assert_eq!(sample(&first, latency, &[("route", "/api/sweeps")]), 2.0);
    // Each index read waited (if only a moment) for a worker slot.
    assert!(sample(&first, "tidemark_worker_slot_wait_seconds_count", &[]) >= 2.0);
    assert_eq!(sample(&first, "tidemark_snapshot_sweeps", &[]), 3.0);
    assert!(sample(&first, "tidemark_snapshot", &[]) >= 1.0);
    // They move as requests come.
    srv.json("/api/sweeps");
    let again = scrape(&python, &srv.text("/metrics"));
    assert_eq!(
        sample(
            &again,
            requests,
            &[("route", "/api/sweeps"), ("status", "200")]
        ),
        3.0
    );
    assert_eq!(
        sample(
            &again,
            requests,
            &[("route", "/metrics"), ("status", "200")]
        ),
        1.0
    );

    // With `serve.metrics_listen`, only there.
    let cfg = db.parent().unwrap().join("metrics-apart.toml");
    std::fs::write(&cfg, "[serve]\nmetrics_listen = \"127.0.0.1:0\"\n").unwrap();
    let apart = Server::start(db, &["--config", cfg.to_str().unwrap()], &[]);
    assert_eq!(apart.get("/metrics").0, 404);
    let log = apart.log();
    let at = log
        .lines()
        .find_map(|l| l.strip_prefix("tidemark serve: /metrics on "))
        .unwrap_or_else(|| panic!("no metrics address in the log:\n{log}"))
        .trim()
        .to_string();
    let (status, _, text) = common::server::request(ureq::get(&format!("{at}/metrics")));
    assert_eq!(status, 200);
    let there = scrape(&python, &String::from_utf8(text).unwrap());
    assert!(sample(&there, requests, &[("status", "404")]) >= 1.0);

    // Under an embargo (or rules) the whole index's figures stay off the public address.
    let cfg = db.parent().unwrap().join("metrics-embargo.toml");
    std::fs::write(&cfg, "[serve.embargo]\nafter = \"20000101000000\"\n").unwrap();
    let hiding = Server::start(db, &["--config", cfg.to_str().unwrap()], &[]);
    let (status, _, body) = hiding.get("/metrics");
    assert_eq!(status, 404);
    assert!(String::from_utf8_lossy(&body).contains("serve.metrics_listen"));
}

/// Under a load (8 clients at once, answers of every kind: found, refused by the scan
/// budget, bad parameters) and past the connection cap, `/metrics` counts exactly the
/// requests the clients saw answered, by route and status, and each refusal by its code.
#[test]
fn metrics_under_a_load_count_every_answer_the_clients_saw() {
    let Some(python) = common::server::python() else {
        return;
    };
    let (dir, db) = corpus();
    let exp = export(db);
    let url = exp[0].2["url"].as_str().unwrap().to_string();
    let host = url.split('/').nth(2).unwrap().to_string();
    let cfg = dir.join("metrics-load.toml");
    std::fs::write(
        &cfg,
        "[serve]\nmax_scan_rows = 60\ntrusted_proxies = []\nmax_connections_per_client = 12\n",
    )
    .unwrap();
    let srv = Server::start(db, &["--config", cfg.to_str().unwrap()], &[]);
    // (route pattern, query).
    let asks: Vec<(&str, String)> = vec![
        ("/api/sweeps", "/api/sweeps".into()),
        (
            "/cdx/search/cdx",
            format!("/cdx/search/cdx?url={}", enc(&url)),
        ),
        (
            "/cdx/search/cdx",
            format!(
                "/cdx/search/cdx?url={}&pageSize=25&page=5&filter=!statuscode:999",
                enc(&format!("{host}/*"))
            ),
        ),
        ("/api/history", "/api/history".into()),
        ("/api/whereis", format!("/api/whereis?url={}", enc(&url))),
    ];
    let seen: Vec<(String, u16, Option<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let (srv, asks) = (&srv, &asks);
                s.spawn(move || {
                    let mut seen = Vec::new();
                    for i in 0..25 {
                        let (route, q) = &asks[(t + i) % asks.len()];
                        let (status, _, body) = srv.get(q);
                        let code = serde_json::from_slice::<Value>(&body)
                            .ok()
                            .and_then(|v| v["code"].as_str().map(str::to_string));
                        seen.push((route.to_string(), status, code));
                    }
                    seen
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    // Every kind of answer came: the load was not all one status.
    let statuses: HashSet<u16> = seen
        .iter()
        .filter(|s| s.2.as_deref() != Some("too_many_connections"))
        .map(|s| s.1)
        .collect();
    assert!(
        statuses.contains(&200) && statuses.contains(&400) && statuses.contains(&503),
        "{statuses:?}"
    );
    // Past the per-client cap: 12 held, 3 more refused before their request is read
    // (once the load's connections are closed).
    std::thread::sleep(Duration::from_millis(300));
    let held: Vec<_> = (0..12)
        .map(|_| std::net::TcpStream::connect(&srv.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        let mut c = std::net::TcpStream::connect(&srv.addr).unwrap();
        let mut answer = String::new();
        let _ = c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        let _ = c.read_to_string(&mut answer);
        assert!(answer.contains("too_many_connections"), "{answer}");
    }
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    let m = scrape(&python, &srv.text("/metrics"));
    // A connection over the cap is refused before its request is read: counted apart,
    // by no route. The load's own connections meet the cap too: one a client has
    // closed counts until the server has seen it close, and on 2 busy cores the next
    // one may be accepted first.
    let over_cap = |c: &Option<String>| c.as_deref() == Some("too_many_connections");
    let refused = seen.iter().filter(|s| over_cap(&s.2)).count() as f64;
    eprintln!(
        "{} answers, {refused} refused at the connection cap",
        seen.len()
    );
    let mut want: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut codes: BTreeMap<(String, String), f64> = BTreeMap::new();
    for (route, status, code) in seen.iter().filter(|s| !over_cap(&s.2)) {
        *want.entry((route.clone(), status.to_string())).or_default() += 1.0;
        if let (Some(code), true) = (code, *status >= 400) {
            *codes.entry((route.clone(), code.clone())).or_default() += 1.0;
        }
    }
    for ((route, status), n) in &want {
        let got = sample(
            &m,
            "tidemark_http_requests_total",
            &[("route", route), ("status", status)],
        );
        assert_eq!(got, *n, "{route} {status}");
    }
    for ((route, code), n) in &codes {
        let got = sample(
            &m,
            "tidemark_http_errors_total",
            &[("route", route), ("code", code)],
        );
        assert_eq!(got, *n, "{route} {code}");
    }
    for route in [
        "/api/sweeps",
        "/cdx/search/cdx",
        "/api/history",
        "/api/whereis",
    ] {
        let n: f64 = want
            .iter()
            .filter(|((r, _), _)| r == route)
            .map(|(_, n)| n)
            .sum();
        let got = sample(
            &m,
            "tidemark_http_request_duration_seconds_count",
            &[("route", route)],
        );
        assert_eq!(got, n, "{route}: latency observations");
    }
    assert_eq!(
        sample(&m, "tidemark_connections_refused_total", &[]),
        refused + 3.0
    );
    // Each whereis and sweeps answer read the index in a worker slot, and its wait was
    // counted (CDX streams take theirs too).
    let reads = seen
        .iter()
        .filter(|s| (s.0 == "/api/sweeps" || s.0 == "/api/whereis") && s.1 == 200)
        .count() as f64;
    assert!(sample(&m, "tidemark_worker_slot_wait_seconds_count", &[]) >= reads);
}
