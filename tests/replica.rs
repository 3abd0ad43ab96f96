//! A read replica through the real binary: `tidemark serve --follow URL` copies a
//! primary's published snapshots (only with the primary's replication token), answers
//! every CDX, Memento and JSON query byte for byte as the primary does after each
//! publish, never from half a snapshot (a reader asks it all through the copy), and
//! comes back in the same state after a restart.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::server::{enc, request, Server};
use common::{generate, ingest_generated, sweep_files, tidemark_ok};

const TOKEN: &str = "a-long-secret-of-the-primary";

/// (status, content type, body) of each query.
type Answers = Vec<(u16, String, Vec<u8>)>;

/// GET without following redirects (a TimeGate answers one).
fn get(base: &str, q: &str) -> (u16, String, Vec<u8>) {
    let agent = ureq::AgentBuilder::new().redirects(0).build();
    request(agent.get(&format!("{base}{q}")))
}

fn answers(server: &Server, queries: &[String]) -> Answers {
    queries.iter().map(|q| get(&server.base, q)).collect()
}

/// Waits until `server` serves snapshot `n`.
fn wait_for_snapshot(server: &Server, n: u64, what: &str) -> Duration {
    let start = Instant::now();
    loop {
        let (status, _, body) = server.get("/readyz");
        if status == 200 {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            if v["snapshot"] == n {
                return start.elapsed();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} never served snapshot {n}; its log: {}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The queries asked of both servers: for some URLs of the index, pywb's CDX API
/// (exact, domain, JSON), the Wayback CDX API, Memento TimeMaps and TimeGate, replay,
/// and the JSON API; the sweeps, the stats and the report.
fn queries(db: &Path) -> Vec<String> {
    let export =
        String::from_utf8(tidemark_ok(&["--db", db.to_str().unwrap(), "export"]).stdout).unwrap();
    let mut out = vec![
        "/api/sweeps".to_string(),
        "/api/stats".into(),
        "/api/report".into(),
        "/api/changes".into(),
    ];
    for line in export.lines().step_by(97).take(8) {
        let v: serde_json::Value =
            serde_json::from_str(line.splitn(3, ' ').nth(2).unwrap()).unwrap();
        let url = v["url"].as_str().unwrap();
        let ts = line.split(' ').nth(1).unwrap();
        let host = url.split('/').nth(2).unwrap();
        let u = enc(url);
        out.extend([
            format!("/tidemark?url={u}"),
            format!(
                "/tidemark?url={}&matchType=domain&limit=50&output=json",
                enc(host)
            ),
            format!("/cdx/search/cdx?url={u}&output=json"),
            format!("/timemap/link/{url}"),
            format!("/timegate/{url}"),
            format!("/tidemark/{ts}id_/{url}"),
            format!("/api/whereis?url={u}"),
            format!("/api/history?url={u}"),
            format!("/api/similar?url={u}"),
            format!("/api/cluster?url={u}"),
        ]);
    }
    out
}

#[test]
fn a_follower_answers_as_its_primary_and_never_from_half_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let web = dir.path().join("web");
    generate(&web, 600, 3, 4242);
    let db = dir.path().join("primary");
    ingest_generated(&web, &db, 1, &[]);
    // Absolute links name the public address, not whichever server answered.
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[serve]\nreplication_token = \"{TOKEN}\"\npublic_url = \"https://archive.example.org\"\npoll_ms = 100\n"
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let primary = Server::start(&db, &["--config", cfg], &[]);

    // The files hold every capture: only a follower with the token reads them.
    let listing = format!("{}/replication/snapshot", primary.base);
    assert_eq!(primary.get("/replication/snapshot").0, 401);
    let wrong = request(ureq::get(&listing).set("Authorization", "Bearer not-the-token"));
    assert_eq!(wrong.0, 401);
    let right = request(ureq::get(&listing).set("Authorization", &format!("Bearer {TOKEN}")));
    assert_eq!(right.0, 200, "{}", String::from_utf8_lossy(&right.2));
    // Paths as sent (a client library would resolve `..` before sending).
    let raw = |path: &str, token: bool| -> String {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(&primary.addr).unwrap();
        let auth = match token {
            true => format!("Authorization: Bearer {TOKEN}\r\n"),
            false => String::new(),
        };
        write!(
            c,
            "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        let _ = c.read_to_string(&mut answer);
        answer
    };
    for path in [
        "/replication/file/1/../config.toml",
        "/replication/file/1/%2e%2e/config.toml",
        "/replication/file/1//etc/passwd",
        "/replication/file/1/CURRENT/..",
        "/replication/file/x/CURRENT",
    ] {
        let answer = raw(path, true);
        assert!(answer.starts_with("HTTP/1.1 404"), "{path}: {answer}");
        // Without the token, nothing is told: not even that the path is malformed.
        let answer = raw(path, false);
        assert!(answer.starts_with("HTTP/1.1 401"), "{path}: {answer}");
    }
    assert!(raw("/replication/file/1/CURRENT", true).starts_with("HTTP/1.1 200"));
    // A follower without the token is refused at start.
    let fdb = dir.path().join("follower");
    let no_token = common::tidemark(&[
        "--db",
        fdb.to_str().unwrap(),
        "serve",
        "--follow",
        &primary.base,
    ]);
    assert_eq!(no_token.status.code(), Some(2));

    let follower = Server::start(&fdb, &["--config", cfg], &["--follow", &primary.base]);
    wait_for_snapshot(&follower, 1, "the follower");
    // One follower a folder, and no ingest into it.
    let second = common::tidemark(&[
        "--db",
        fdb.to_str().unwrap(),
        "--config",
        cfg,
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--follow",
        &primary.base,
    ]);
    assert_eq!(second.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&second.stderr).contains("followed by another server"));
    let mut args = vec![
        "--db".to_string(),
        fdb.display().to_string(),
        "ingest".into(),
        "--sweep".into(),
        "s2".into(),
    ];
    args.extend(sweep_files(&web, 2).iter().map(|f| f.display().to_string()));
    let into = common::tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(into.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&into.stderr).contains("a follower's copy of a primary"),
        "{}",
        String::from_utf8_lossy(&into.stderr)
    );
    // A follower serves no copies of its own.
    assert_eq!(
        request(
            ureq::get(&format!("{}/replication/snapshot", follower.base))
                .set("Authorization", &format!("Bearer {TOKEN}"))
        )
        .0,
        404
    );
    let queries = queries(&db);
    let before = answers(&primary, &queries);
    assert!(before.iter().filter(|a| a.0 == 200).count() > queries.len() / 2);
    assert!(
        answers(&follower, &queries) == before,
        "sweep 1: the follower answers otherwise"
    );

    // A reader asks the follower all through the next copy.
    let stop = Arc::new(AtomicBool::new(false));
    let seen: Arc<Mutex<Vec<(usize, (u16, String, Vec<u8>))>>> = Default::default();
    let reader = {
        let (stop, seen, queries) = (stop.clone(), seen.clone(), queries.clone());
        let base = follower.base.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for (i, q) in queries.iter().enumerate() {
                    let a = get(&base, q);
                    seen.lock().unwrap().push((i, a));
                }
            }
        })
    };
    ingest_sweep(&web, &db, 2);
    wait_for_snapshot(&primary, 2, "the primary");
    let took = wait_for_snapshot(&follower, 2, "the follower");
    eprintln!("the follower served snapshot 2 {took:?} after the primary");
    // One more round of the reader on snapshot 2, then stop it.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    let after = answers(&primary, &queries);
    assert!(before != after, "sweep 2 changed nothing the queries see");
    assert!(
        answers(&follower, &queries) == after,
        "sweep 2: the follower answers otherwise"
    );
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    for (i, a) in seen.iter() {
        assert!(
            *a == before[*i] || *a == after[*i],
            "{}: the follower answered neither snapshot's answer during the copy: {} {}",
            queries[*i],
            a.0,
            String::from_utf8_lossy(&a.2)
        );
    }
    let metrics = follower.text("/metrics");
    assert!(
        metrics.contains("tidemark_follower_primary_snapshot 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("tidemark_follower_lag_seconds 0.0"),
        "{metrics}"
    );

    // Restarted, it serves what it copied, and follows on.
    follower.stop();
    let again = Server::start(&fdb, &["--config", cfg], &["--follow", &primary.base]);
    wait_for_snapshot(&again, 2, "the restarted follower");
    assert!(
        answers(&again, &queries) == after,
        "restarted: the follower answers otherwise"
    );
    drop(again);

    // Killed half-way through a copy (each file slowed down), it served the snapshot
    // before meanwhile; restarted, it finishes from the files it had checked.
    let slow = Server::start_with_env(
        &fdb,
        &["--config", cfg],
        &["--follow", &primary.base],
        &[("TIDEMARK_TEST_FOLLOW_FILE_DELAY_MS", "150")],
    );
    wait_for_snapshot(&slow, 2, "the slow follower");
    ingest_sweep(&web, &db, 3);
    wait_for_snapshot(&primary, 3, "the primary");
    let building = fdb.join("snapshots/0000000003.tmp");
    let start = Instant::now();
    while std::fs::read_dir(&building).map_or(0, |d| d.count()) < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no copy under way: {}",
            slow.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        answers(&slow, &queries) == after,
        "mid-copy: not the snapshot before"
    );
    drop(slow); // SIGKILL
    assert!(
        building.exists(),
        "the copy ended before the kill: nothing was shown"
    );
    let third = answers(&primary, &queries);
    let resumed = Server::start(&fdb, &["--config", cfg], &["--follow", &primary.base]);
    wait_for_snapshot(&resumed, 3, "the follower restarted mid-copy");
    assert!(
        answers(&resumed, &queries) == third,
        "resumed: the follower answers otherwise"
    );
    assert!(!building.exists());
    let copied: u64 = resumed
        .text("/metrics")
        .lines()
        .find_map(|l| l.strip_prefix("tidemark_follower_copied_bytes_total "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    let listed: u64 = serde_json::from_slice::<serde_json::Value>(
        &request(ureq::get(&listing).set("Authorization", &format!("Bearer {TOKEN}"))).2,
    )
    .unwrap()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["size"].as_u64().unwrap())
        .sum();
    assert!(
        copied < listed,
        "resumed: copied {copied} of {listed} bytes again"
    );
}

/// Ingests sweep `k` of the generated web into `db` as `sweep-k`.
fn ingest_sweep(web: &Path, db: &Path, k: usize) {
    let mut args = vec![
        "--db".to_string(),
        db.display().to_string(),
        "ingest".into(),
        "--sweep".into(),
        format!("sweep-{k}"),
    ];
    args.extend(sweep_files(web, k).iter().map(|f| f.display().to_string()));
    tidemark_ok(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
}

/// A primary that answers as told: (listing JSON, a file's body) — the body endless
/// when `None`.
fn fake_primary(listing: String, body: Option<Vec<u8>>) -> (String, Arc<AtomicBool>) {
    use std::io::{BufRead, BufReader, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let asked_file = Arc::new(AtomicBool::new(false));
    let asked = asked_file.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let mut first = String::new();
            let mut r = BufReader::new(c.try_clone().unwrap());
            if r.read_line(&mut first).is_err() {
                continue;
            }
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
            }
            if first.contains("/replication/snapshot") {
                let _ = write!(
                    c,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{listing}",
                    listing.len()
                );
                continue;
            }
            asked.store(true, Ordering::Relaxed);
            match &body {
                Some(b) => {
                    let _ = write!(
                        c,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        b.len()
                    );
                    let _ = c.write_all(b);
                }
                None => {
                    let _ = write!(
                        c,
                        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                    );
                    let chunk = vec![b'x'; 1 << 16];
                    // Until the follower hangs up (64 MB at most).
                    for _ in 0..1024 {
                        if write!(c, "{:x}\r\n", chunk.len()).is_err()
                            || c.write_all(&chunk).is_err()
                            || c.write_all(b"\r\n").is_err()
                        {
                            break;
                        }
                    }
                }
            }
        }
    });
    (base, asked_file)
}

/// A hostile or broken primary (or anyone on the path to it) cannot make a follower
/// write outside its folder, write more than a listed file's size, or install what does
/// not open: each is said in the log, counted in `/metrics`, and nothing is installed.
#[test]
fn a_follower_refuses_what_a_hostile_primary_sends() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("follower.toml");
    std::fs::write(
        &cfg,
        format!("[serve]\nreplication_token = \"{TOKEN}\"\npoll_ms = 50\n"),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    let hash_of = |b: &[u8]| format!("{:032x}", xxhash_rust::xxh3::xxh3_128(b));
    let until = |srv: &Server, what: &str, said: &str| {
        let start = Instant::now();
        while !srv.log().contains(said) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{what}: never said {said:?}; log: {}",
                srv.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // A path out of the folder.
    let (base, _) = fake_primary(
        format!(
            r#"{{"snapshot":1,"files":[{{"path":"../escaped","size":3,"xxh3":"{}"}}]}}"#,
            hash_of(b"abc")
        ),
        Some(b"abc".to_vec()),
    );
    let fdb = dir.path().join("f1");
    let f = Server::start(&fdb, &["--config", cfg], &["--follow", &base]);
    until(&f, "a path out", "not a file a snapshot holds");
    assert!(!dir.path().join("f1/snapshots/escaped").exists());
    assert!(!dir.path().join("escaped").exists());
    drop(f);
    // A body that does not end: cut one byte past the size listed, nothing kept.
    let (base, asked) = fake_primary(
        format!(
            r#"{{"snapshot":1,"files":[{{"path":"000009.sst","size":10,"xxh3":"{}"}}]}}"#,
            hash_of(b"0123456789")
        ),
        None,
    );
    let fdb = dir.path().join("f2");
    let f = Server::start(&fdb, &["--config", cfg], &["--follow", &base]);
    until(&f, "an endless body", "more than the 10 bytes listed");
    assert!(asked.load(Ordering::Relaxed));
    let building = fdb.join("snapshots/0000000001.tmp");
    let left: Vec<_> = std::fs::read_dir(&building)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    drop(f);
    // Files that check out but are no index: copied, never installed, not copied again.
    let (base, _) = fake_primary(
        format!(
            r#"{{"snapshot":1,"files":[{{"path":"CURRENT","size":10,"xxh3":"{}"}}]}}"#,
            hash_of(b"0123456789")
        ),
        Some(b"0123456789".to_vec()),
    );
    let fdb = dir.path().join("f3");
    let f = Server::start(&fdb, &["--config", cfg], &["--follow", &base]);
    until(&f, "no index", "does not open here");
    assert_eq!(f.get("/readyz").0, 503);
    assert!(!fdb.join("snapshots/0000000001").exists());
    let (errors, metrics) = follower_errors(&f);
    assert!(errors >= 1.0, "{metrics}");
    drop(f);
    // A poll that panics (a bug, made by a test hook): said, counted and tried again,
    // not a follower thread gone quiet while the server goes on.
    let fdb = dir.path().join("f4");
    let f = Server::start_with_env(
        &fdb,
        &["--config", cfg],
        &["--follow", &base],
        &[("TIDEMARK_TEST_PANIC_IN", "follower")],
    );
    until(
        &f,
        "a panicking poll",
        "the follower thread failed (test hook",
    );
    let start = Instant::now();
    loop {
        let (errors, metrics) = follower_errors(&f);
        if errors >= 2.0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the follower stopped polling after a panic: {metrics}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(f.get("/readyz").0, 503);
}

/// A follower's `tidemark_follower_errors_total`, and the metrics it was read from.
fn follower_errors(f: &Server) -> (f64, String) {
    let metrics = f.text("/metrics");
    let errors = metrics
        .lines()
        .find_map(|l| l.strip_prefix("tidemark_follower_errors_total "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    (errors, metrics)
}
