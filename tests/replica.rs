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
    let outside = request(
        ureq::get(&format!(
            "{}/replication/file/1/../config.toml",
            primary.base
        ))
        .set("Authorization", &format!("Bearer {TOKEN}")),
    );
    assert_ne!(outside.0, 200);
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
