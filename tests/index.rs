//! The index through the real binary on generated sweeps: incremental clusters equal a
//! from-scratch computation, thread count and crashes change nothing, damaged files
//! are reported and skipped, and clusters match the exact clustering of the documents.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use std::time::Duration;

use common::{generate, sweep_files, tidemark, truth};
use tidemark::canon::{canonicalize, Canon, MediaKind};
use tidemark::config::Config;
use tidemark::index::Index;
use tidemark::sketch::{estimate, shingles, SketchParams};
use tidemark::synth::exact_jaccard;

fn s(p: &Path) -> String {
    p.to_string_lossy().to_string()
}

fn ingest(db: &Path, label: &str, files: &[PathBuf], extra: &[&str]) -> std::process::Output {
    ingest_command(db, label, files, extra)
        .output()
        .expect("run tidemark")
}

/// The command [`ingest`] runs, to run with more (an environment variable).
fn ingest_command(
    db: &Path,
    label: &str,
    files: &[PathBuf],
    extra: &[&str],
) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"));
    command
        .arg("--db")
        .arg(db)
        .args(extra)
        .args(["ingest", "--sweep", label, "--json"])
        .args(files);
    command
}

/// An ingest that must succeed, and its `--json` summary.
fn ingest_summary(db: &Path, label: &str, files: &[PathBuf], extra: &[&str]) -> serde_json::Value {
    let out = ingest(db, label, files, extra);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn export(db: &Path) -> String {
    export_with(db, &[], &[])
}

fn export_jsonl(db: &Path) -> String {
    export_with(db, &[], &["--format", "jsonl"])
}

/// `tidemark --db DB GLOBAL… export ARGS…`.
fn export_with(db: &Path, global: &[&str], args: &[&str]) -> String {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    read_with(db, global, &all)
}

/// The output of command `args` (with `global` options) on `db`, which must succeed.
fn read_with(db: &Path, global: &[&str], args: &[&str]) -> String {
    let db = s(db);
    let mut all = vec!["--db", db.as_str()];
    all.extend_from_slice(global);
    all.extend_from_slice(args);
    let out = tidemark(&all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A configuration file `name` in `dir` holding `text`: as parsed, and the `--config`
/// arguments naming it.
fn config_file(dir: &Path, name: &str, text: &str) -> (Config, [String; 2]) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    (Config::parse(text).unwrap(), ["--config".into(), s(&path)])
}

/// A configuration with edges on all shingles, for the tests of that setting whatever
/// the default.
fn full_config(dir: &Path, extra: &str) -> (Config, [String; 2]) {
    let text = format!("[cluster]\nresemblance = \"full\"\n{extra}");
    config_file(dir, "full.toml", &text)
}

fn ingest_all(db: &Path, corpus: &Path, sweeps: usize, extra: &[&str]) {
    for k in 1..=sweeps {
        let out = ingest(db, &format!("sweep-{k}"), &sweep_files(corpus, k), extra);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// doc → cluster id, from export lines.
fn clusters_from_export(text: &str) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let json: serde_json::Value =
            serde_json::from_str(line.splitn(3, ' ').nth(2).unwrap()).unwrap();
        if let (Some(d), Some(c)) = (json["doc"].as_u64(), json["cluster"].as_u64()) {
            m.insert(d, c);
        }
    }
    m
}

/// Canonical partition: sorted list of sorted clusters.
fn partition(m: &BTreeMap<u64, u64>) -> Vec<Vec<u64>> {
    let mut by: HashMap<u64, Vec<u64>> = HashMap::new();
    for (d, c) in m {
        by.entry(*c).or_default().push(*d);
    }
    let mut v: Vec<Vec<u64>> = by
        .into_values()
        .map(|mut x| {
            x.sort();
            x
        })
        .collect();
    v.sort();
    v
}

fn union_find_partition(n: u64, pairs: &[(u64, u64)]) -> BTreeMap<u64, u64> {
    let mut parent: Vec<u64> = (0..=n).collect();
    fn root(p: &mut [u64], x: u64) -> u64 {
        let mut r = x;
        while p[r as usize] != r {
            r = p[r as usize];
        }
        let mut y = x;
        while p[y as usize] != r {
            let nx = p[y as usize];
            p[y as usize] = r;
            y = nx;
        }
        r
    }
    for &(a, b) in pairs {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            parent[hi as usize] = lo;
        }
    }
    (1..=n).map(|d| (d, root(&mut parent, d))).collect()
}

/// The docs of the index at `db`, and every pair of them whose estimated resemblance
/// over the stored sketches is at least `least`: (resemblance, doc, doc).
fn all_pairs(db: &Path, config: &Config, least: f64) -> (u64, Vec<(f64, u64, u64)>) {
    let index = Index::open(db, config, false).unwrap();
    let n = index.doc_count();
    let sketches: Vec<_> = (1..=n).map(|d| index.sketch(d).unwrap().unwrap()).collect();
    let mut pairs = Vec::new();
    for a in 0..sketches.len() {
        for b in a + 1..sketches.len() {
            let r = estimate(&sketches[a], &sketches[b]).resemblance;
            if r >= least {
                pairs.push((r, a as u64 + 1, b as u64 + 1));
            }
        }
    }
    (n, pairs)
}

/// Checks clusters `got` (doc → cluster) against the all-pairs oracle at `t`: the
/// components of the `scored` pairs (resemblance compared as stored, in f32) of the
/// index's `n` docs; returns the partition.
fn equals_all_pairs(
    got: &BTreeMap<u64, u64>,
    scored: &[(f64, u64, u64)],
    n: u64,
    t: f64,
) -> Vec<Vec<u64>> {
    let pairs: Vec<(u64, u64)> = scored
        .iter()
        .filter(|(r, _, _)| (*r as f32 as f64) >= t)
        .map(|(_, a, b)| (*a, *b))
        .collect();
    let oracle = union_find_partition(n, &pairs);
    let oracle_seen: BTreeMap<u64, u64> = got.keys().map(|d| (*d, oracle[d])).collect();
    assert_eq!(
        partition(got),
        partition(&oracle_seen),
        "clusters at {t}: not the all-pairs clusters ({} pairs)",
        pairs.len()
    );
    partition(got)
}

/// Runs `recluster` at each threshold and checks its clusters against the all-pairs
/// oracle over the stored sketches (an index on all shingles, `cfg` its `--config`
/// arguments); returns the partitions.
fn recluster_equals_all_pairs(
    db: &Path,
    config: &Config,
    cfg: &[&str],
    thresholds: &[f64],
) -> Vec<Vec<Vec<u64>>> {
    let (n, scored) = all_pairs(db, config, config.cluster.edge_floor);
    let mut out = Vec::new();
    for t in thresholds {
        let (db_s, t_s) = (s(db), t.to_string());
        let mut args = vec!["--db", db_s.as_str()];
        args.extend_from_slice(cfg);
        args.extend(["recluster", "--threshold", t_s.as_str()]);
        let o = tidemark(&args);
        assert_eq!(o.status.code(), Some(0), "recluster {t}");
        out.push(equals_all_pairs(
            &clusters_from_export(&export_with(db, cfg, &[])),
            &scored,
            n,
            *t,
        ));
    }
    out
}

#[test]
fn incremental_clusters_equal_all_pairs_and_recluster_and_any_thread_count() {
    let corpus = tempfile::tempdir().unwrap();
    let sweeps = 4;
    generate(corpus.path(), 300, sweeps, 21);
    let work = tempfile::tempdir().unwrap();
    // The oracle estimates on all shingles (clusters on content: their own test).
    let (config, full) = full_config(work.path(), "");
    let cfg: Vec<&str> = full.iter().map(|a| a.as_str()).collect();
    let (db1, db3) = (work.path().join("t1"), work.path().join("t3"));
    ingest_all(
        &db1,
        corpus.path(),
        sweeps,
        &[&["--threads", "1"], &cfg[..]].concat(),
    );
    ingest_all(
        &db3,
        corpus.path(),
        sweeps,
        &[&["--threads", "3"], &cfg[..]].concat(),
    );
    let e1 = export_with(&db1, &cfg, &[]);
    assert!(e1.lines().count() > 1000);
    assert_eq!(
        e1,
        export_with(&db3, &cfg, &[]),
        "1 thread and 3 threads must give the same index"
    );
    let jsonl = |db: &Path| export_with(db, &cfg, &["--format", "jsonl"]);
    assert_eq!(jsonl(&db1), jsonl(&db3));
    let incremental = clusters_from_export(&e1);

    // All pairs over the stored sketches, at the threshold, from scratch.
    let (n, pairs) = all_pairs(&db1, &config, config.cluster.threshold);
    let pairs: Vec<(u64, u64)> = pairs.iter().map(|(_, a, b)| (*a, *b)).collect();
    let oracle = union_find_partition(n, &pairs);
    let docs_with_captures: Vec<u64> = incremental.keys().copied().collect();
    let oracle_seen: BTreeMap<u64, u64> =
        docs_with_captures.iter().map(|d| (*d, oracle[d])).collect();
    assert_eq!(
        partition(&incremental),
        partition(&oracle_seen),
        "incremental merging lost or invented a pair"
    );
    println!(
        "{n} docs, {} pairs at >= 0.5, {} clusters",
        pairs.len(),
        partition(&incremental).len()
    );

    // recluster at the same threshold rebuilds the same clusters from the edges.
    let recluster = |t: &str| {
        let db = s(&db1);
        let mut args = vec!["--db", db.as_str()];
        args.extend_from_slice(&cfg);
        args.extend(["recluster", "--threshold", t]);
        tidemark(&args)
    };
    assert_eq!(recluster("0.5").status.code(), Some(0));
    assert_eq!(
        partition(&clusters_from_export(&export_with(&db1, &cfg, &[]))),
        partition(&incremental)
    );
    // And another threshold gives another, finer, partition without WARCs: the one all
    // pairs give at it, though only a spanning forest of the edges is stored.
    let finer = recluster_equals_all_pairs(&db1, &config, &cfg, &[0.7, 0.9]);
    assert!(finer[1].len() > partition(&incremental).len());
    let out = recluster("0.1");
    assert_eq!(
        out.status.code(),
        Some(2),
        "below the edge floor is refused"
    );
}

#[test]
fn killed_at_random_moments_and_resumed_equals_a_clean_run() {
    killed_and_resumed("full");
}

/// With edges on content a sweep is read and sequenced whole, its templates written, then
/// its batches committed: kills land in each phase.
#[test]
fn killed_at_random_moments_and_resumed_equals_a_clean_run_on_content() {
    killed_and_resumed("content");
}

fn killed_and_resumed(resemblance: &str) {
    let corpus = tempfile::tempdir().unwrap();
    let sweeps = 3;
    generate(corpus.path(), 600, sweeps, 33);
    let work = tempfile::tempdir().unwrap();
    let clean = work.path().join("clean");
    let base = format!("[cluster]\nresemblance = \"{resemblance}\"\n");
    let config = work.path().join("config.toml");
    std::fs::write(&config, &base).unwrap();
    // Even rounds write postings every few dozen new docs instead of once per sweep, so
    // kills also land between spills and inside them.
    let small_buffer = work.path().join("small-buffer.toml");
    std::fs::write(
        &small_buffer,
        format!("{base}[ingest]\npostings_buffer_mb = 1\n"),
    )
    .unwrap();
    let with = |db: &Path, args: &[&str]| {
        let mut all = vec!["--db".to_string(), s(db), "--config".into(), s(&config)];
        all.extend(args.iter().map(|a| a.to_string()));
        let out = tidemark(&all.iter().map(|a| a.as_str()).collect::<Vec<_>>());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // How long a clean ingest of each sweep takes: kills land inside that window.
    let mut window = Vec::new();
    for k in 1..=sweeps {
        let t = std::time::Instant::now();
        let out = ingest(
            &clean,
            &format!("sweep-{k}"),
            &sweep_files(corpus.path(), k),
            &["--config", &s(&config)],
        );
        assert_eq!(out.status.code(), Some(0));
        window.push(t.elapsed().as_millis().max(20) as usize);
    }
    let clean_export = with(&clean, &["export"]);
    let clean_jsonl = with(&clean, &["export", "--format", "jsonl"]);
    let clean_sweeps = with(&clean, &["sweeps", "--json"]);
    let clean_report = with(&clean, &["report", "--format", "json"]);
    let mut rng = tidemark::synth::Rng::new(99);
    let (mut kills, mut runs, mut round) = (0, 0, 0);
    while kills < 20 {
        round += 1;
        assert!(round <= 10, "no progress after {runs} runs");
        let crashy = work.path().join(format!("crashy-{round}"));
        for k in 1..=sweeps {
            loop {
                runs += 1;
                let mut args: Vec<String> = vec!["--db".into(), s(&crashy), "--config".into()];
                args.push(s(if round % 2 == 0 {
                    &small_buffer
                } else {
                    &config
                }));
                args.extend(["ingest".into(), "--sweep".into(), format!("sweep-{k}")]);
                args.extend(sweep_files(corpus.path(), k).iter().map(|f| s(f)));
                let delay = Duration::from_millis(rng.below(window[k - 1]) as u64);
                if common::run_or_kill(&args, delay) {
                    break;
                }
                kills += 1;
            }
        }
        assert_eq!(
            with(&crashy, &["export"]),
            clean_export,
            "round {round}: kill -9 and resume must give the clean run's index"
        );
        let jsonl = with(&crashy, &["export", "--format", "jsonl"]);
        assert_eq!(jsonl, clean_jsonl, "round {round}");
        assert_eq!(
            with(&crashy, &["sweeps", "--json"]),
            clean_sweeps,
            "round {round}: counters must not count anything twice"
        );
        assert_eq!(
            with(&crashy, &["report", "--format", "json"]),
            clean_report,
            "round {round}"
        );
    }
    println!("{resemblance}: {kills} kills in {runs} runs over {round} rounds; every round equals the clean run");
}

#[test]
fn a_damaged_file_mid_sweep_is_reported_and_the_rest_indexed() {
    let corpus = tempfile::tempdir().unwrap();
    generate(corpus.path(), 300, 1, 5);
    let files = sweep_files(corpus.path(), 1);
    let whole = std::fs::read(&files[0]).unwrap();
    // Split the sweep into three files at gzip member boundaries; damage the middle one.
    let members: Vec<usize> = (0..whole.len() - 1)
        .filter(|&i| whole[i] == 0x1f && whole[i + 1] == 0x8b && whole.get(i + 2) == Some(&8))
        .collect();
    let (a, b) = (members[members.len() / 3], members[2 * members.len() / 3]);
    let dir = tempfile::tempdir().unwrap();
    let f1 = dir.path().join("part-1.warc.gz");
    let f2 = dir.path().join("part-2.warc.gz");
    let f3 = dir.path().join("part-3.warc.gz");
    std::fs::write(&f1, &whole[..a]).unwrap();
    let cut = a + (b - a) / 2; // mid-member: truncated gzip
    std::fs::write(&f2, &whole[a..cut]).unwrap();
    std::fs::write(&f3, &whole[b..]).unwrap();
    let db = dir.path().join("db");
    let out = ingest(&db, "s1", &[f1.clone(), f2.clone(), f3.clone()], &[]);
    assert_eq!(out.status.code(), Some(1), "damage is exit 1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("part-2.warc.gz") && stderr.contains("offset"),
        "{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["errors"].as_array().unwrap().len(), 1);
    assert_eq!(summary["errors"][0]["file"].as_str().unwrap(), s(&f2));
    // Every capture of parts 1 and 3 is indexed, and part 2's up to the damage.
    let text = export(&db);
    let count = |name: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("\"filename\":\"{name}\"")))
            .count()
    };
    let t = truth(corpus.path(), 1);
    let total = t["captures"].as_u64().unwrap() as usize;
    assert!(count("part-1.warc.gz") > 50 && count("part-3.warc.gz") > 50);
    assert!(
        count("part-2.warc.gz") > 10,
        "the records before the damage are indexed"
    );
    assert!(count("part-1.warc.gz") + count("part-2.warc.gz") + count("part-3.warc.gz") < total);
    // Ingesting again: the files are done; nothing changes, and it says so.
    let again = ingest(&db, "s1", &[f1, f2, f3], &[]);
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already ingested"));
    assert_eq!(export(&db), text);
}

#[test]
fn an_index_of_other_parameters_is_refused_with_a_reason() {
    let corpus = tempfile::tempdir().unwrap();
    generate(corpus.path(), 40, 1, 2);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    assert_eq!(
        ingest(&db, "a", &sweep_files(corpus.path(), 1), &[])
            .status
            .code(),
        Some(0)
    );
    let cfg = dir.path().join("w8.toml");
    std::fs::write(&cfg, "[sketch]\nshingle_width = 8\n").unwrap();
    let out = tidemark(&["--db", &s(&db), "--config", &s(&cfg), "stats"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("shingle_width") && err.contains("10") && err.contains("8"),
        "{err}"
    );
    let out = tidemark(&["--db", &s(&dir.path().join("none")), "export"]);
    assert_eq!(out.status.code(), Some(2));
    let out = tidemark(&["--db", &s(&db), "stats", "--json"]);
    let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(st["docs"].as_u64().unwrap() > 30 && st["bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        st["wal_bytes"].as_u64(),
        Some(0),
        "an ingest flushes at its end"
    );
}

#[test]
fn stats_export_and_sweeps_read_while_another_process_holds_the_index() {
    let corpus = tempfile::tempdir().unwrap();
    generate(corpus.path(), 40, 1, 5);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    ingest_all(&db, corpus.path(), 1, &[]);
    let before = export(&db);
    let json = |cmd: &str| -> serde_json::Value {
        let out = tidemark(&["--db", &s(&db), cmd, "--json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (stats, sweeps) = (json("stats"), json("sweeps"));
    // An open writer holds RocksDB's lock: only a read-only open can succeed beside it,
    // and it reads what was there.
    let writer = Index::open(&db, &Config::default(), false).unwrap();
    assert_eq!(export(&db), before);
    assert_eq!(json("sweeps"), sweeps);
    let beside = json("stats");
    for k in [
        "docs",
        "captures",
        "urls",
        "clusters",
        "multi_doc_clusters",
        "largest_clusters",
        "sweeps",
    ] {
        assert_eq!(beside[k], stats[k], "stats {k}");
    }
    let out = ingest(&db, "b", &sweep_files(corpus.path(), 1), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("being written by another process"), "{err}");
    drop(writer);
}

/// A first sweep spills its postings as a run each time the buffer fills (the ingest
/// merges the runs size-tiered before it ends): spilled many times or once, the sweep
/// ends with the same postings, as small, and the same index.
#[test]
fn a_first_sweep_spilled_many_times_ends_as_compact_as_one_spilled_once() {
    let corpus = tempfile::tempdir().unwrap();
    generate(corpus.path(), 1500, 1, 21);
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.toml");
    std::fs::write(&small, "[ingest]\npostings_buffer_mb = 1\n").unwrap();
    let (many, once) = (dir.path().join("many"), dir.path().join("once"));
    let files = sweep_files(corpus.path(), 1);
    let spills = |j: serde_json::Value| j["writer"]["spill_s"].as_f64().unwrap();
    let small_buffer = ["--config", &s(&small)];
    assert!(spills(ingest_summary(&many, "s1", &files, &small_buffer)) > 0.0);
    assert_eq!(spills(ingest_summary(&once, "s1", &files, &[])), 0.0);
    let postings = |db: &Path| {
        let out = tidemark(&["--db", &s(db), "stats", "--json"]);
        let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        st["column_families"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c[0] == "postings")
            .unwrap()[1]
            .as_u64()
            .unwrap()
    };
    let (m, o) = (postings(&many), postings(&once));
    // Lists cut at cap + 1 in every run alike: the same records, within the tables.
    assert!(
        m.abs_diff(o) * 100 <= o,
        "postings of many spills {m} bytes, of one {o}"
    );
    assert_eq!(export_jsonl(&many), export_jsonl(&once));
}

/// Exact shingle set of every doc, from the WARC records the export points at.
fn exact_sets(db: &Path, corpus: &Path, sweeps: usize) -> BTreeMap<u64, Vec<u64>> {
    let text = export(db);
    let mut doc_of: HashMap<(String, String), u64> = HashMap::new();
    for line in text.lines() {
        let json: serde_json::Value =
            serde_json::from_str(line.splitn(3, ' ').nth(2).unwrap()).unwrap();
        if let Some(d) = json["doc"].as_u64() {
            doc_of.insert(
                (
                    json["filename"].as_str().unwrap().to_string(),
                    json["offset"].as_str().unwrap().to_string(),
                ),
                d,
            );
        }
    }
    let p = SketchParams::default();
    let mut canon = Canon::default();
    let mut sets = BTreeMap::new();
    for k in 1..=sweeps {
        for f in sweep_files(corpus, k) {
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            let (records, err) = tidemark::read::read_all(&f, 16 << 20);
            assert!(err.is_none());
            for r in records {
                let Some(&d) = doc_of.get(&(name.clone(), r.offset.to_string())) else {
                    continue;
                };
                if sets.contains_key(&d) || r.kind != tidemark::read::RecordKind::Response {
                    continue;
                }
                let resp = tidemark::read::parse_response(&r.block, 16 << 20).unwrap();
                canonicalize(&resp.payload, MediaKind::Html, None, &mut canon);
                let mut sh = Vec::new();
                shingles(canon.token_iter(), &p, &mut sh);
                sets.insert(d, sh);
            }
        }
    }
    sets
}

#[test]
fn clusters_match_the_exact_clustering() {
    let corpus = tempfile::tempdir().unwrap();
    let sweeps = 4;
    generate(corpus.path(), 400, sweeps, 77);
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db");
    ingest_all(&db, corpus.path(), sweeps, &[]);
    let ours = clusters_from_export(&export(&db));
    let sets = exact_sets(&db, corpus.path(), sweeps);
    assert_eq!(sets.len(), ours.len(), "every doc's text found");
    let docs: Vec<u64> = sets.keys().copied().collect();
    let mut pairs = Vec::new();
    for i in 0..docs.len() {
        for j in i + 1..docs.len() {
            if exact_jaccard(&sets[&docs[i]], &sets[&docs[j]]).0 >= 0.5 {
                pairs.push((docs[i], docs[j]));
            }
        }
    }
    let n = *docs.last().unwrap();
    let exact_all = union_find_partition(n, &pairs);
    let exact: BTreeMap<u64, u64> = docs.iter().map(|d| (*d, exact_all[d])).collect();
    // Pairwise precision and recall over same-cluster doc pairs.
    let same = |m: &BTreeMap<u64, u64>| -> std::collections::HashSet<(u64, u64)> {
        let mut by: HashMap<u64, Vec<u64>> = HashMap::new();
        for (d, c) in m {
            by.entry(*c).or_default().push(*d);
        }
        let mut out = std::collections::HashSet::new();
        for v in by.values() {
            for i in 0..v.len() {
                for j in i + 1..v.len() {
                    out.insert((v[i].min(v[j]), v[i].max(v[j])));
                }
            }
        }
        out
    };
    let (ps, es) = (same(&ours), same(&exact));
    let tp = ps.intersection(&es).count() as f64;
    let precision = if ps.is_empty() {
        1.0
    } else {
        tp / ps.len() as f64
    };
    let recall = if es.is_empty() {
        1.0
    } else {
        tp / es.len() as f64
    };
    let largest = |m: &BTreeMap<u64, u64>| partition(m).iter().map(|c| c.len()).max().unwrap_or(0);
    println!(
        "{} docs; same-cluster pairs: ours {}, exact {}; precision {precision:.4}, recall {recall:.4}; largest cluster ours {} exact {}",
        docs.len(),
        ps.len(),
        es.len(),
        largest(&ours),
        largest(&exact)
    );
    assert!(
        es.len() > 20,
        "the corpus must have near-duplicates to cluster"
    );
    assert!(precision >= 0.99 && recall >= 0.95);
    assert!(
        largest(&ours) <= largest(&exact) + 1,
        "boilerplate chained unrelated pages"
    );
}

fn write_warc(path: &Path, pages: &[(String, String)]) {
    use tidemark::synth::warc;
    let mut out = Vec::new();
    for (i, (url, html)) in pages.iter().enumerate() {
        let block = warc::http_response(200, &[("Content-Type", "text/html")], html.as_bytes());
        let date = format!("2026-05-01T00:{:02}:{:02}Z", i / 60, i % 60);
        out.extend(warc::gzip_member(
            &warc::response(url, &date, None, &block),
            1,
        ));
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn a_family_larger_than_the_common_shingle_cap_stays_one_cluster() {
    // 40 near-copies of one page (r ≈ 0.8 between any two) with a cap of 5: after the
    // first few copies every value of the page is over the cap.
    let mut rng = tidemark::synth::Rng::new(3);
    let base: Vec<String> = (0..900)
        .map(|_| format!("w{}", rng.below(20_000)))
        .collect();
    let mut pages = Vec::new();
    for i in 0..40 {
        let mut words = base.clone();
        for _ in 0..6 {
            let at = rng.below(words.len());
            words[at] = format!("x{}", rng.below(20_000));
        }
        pages.push((
            format!("http://family.example/{i}"),
            format!("<html><body><p>{}</p></body></html>", words.join(" ")),
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("family.warc.gz");
    write_warc(&warc, &pages);
    let cfg = dir.path().join("cap5.toml");
    // On all shingles: on content, 40 copies of one page on one host are its template.
    std::fs::write(
        &cfg,
        "[cluster]\ncommon_shingle_cap = 5\nresemblance = \"full\"\n",
    )
    .unwrap();
    let db = dir.path().join("db");
    let out = ingest(&db, "s", &[warc], &["--config", &s(&cfg)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text =
        String::from_utf8(tidemark(&["--db", &s(&db), "--config", &s(&cfg), "export"]).stdout)
            .unwrap();
    let clusters = partition(&clusters_from_export(&text));
    assert_eq!(clusters.len(), 1, "{clusters:?}");
    assert_eq!(clusters[0].len(), 40);
}

#[test]
fn each_capture_knows_its_resemblance_to_the_previous_version() {
    let corpus = tempfile::tempdir().unwrap();
    let sweeps = 3;
    generate(corpus.path(), 400, sweeps, 8);
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db");
    ingest_all(&db, corpus.path(), sweeps, &[]);
    let mut r_prev: HashMap<(String, String), f64> = HashMap::new();
    for line in export_jsonl(&db).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(r) = v["resemblance_to_previous"].as_f64() {
            r_prev.insert(
                (
                    v["url"].as_str().unwrap().to_string(),
                    v["fetch_time"].as_str().unwrap()[..8].to_string(),
                ),
                r,
            );
        }
    }
    let (mut checked, mut within, mut unchanged) = (0, 0, 0);
    for k in 2..=sweeps {
        let t = truth(corpus.path(), k);
        let day = t["date"].as_str().unwrap()[..10].replace('-', "");
        for e in t["edits"].as_array().unwrap() {
            if e["min_shingles"].as_u64().unwrap() < 500 {
                continue;
            }
            let got = r_prev[&(e["url"].as_str().unwrap().to_string(), day.clone())];
            checked += 1;
            if (got - e["resemblance"].as_f64().unwrap()).abs() <= 0.05 {
                within += 1;
            }
        }
        for u in t["urls"].as_array().unwrap() {
            if u["revisit"].as_bool().unwrap() {
                assert_eq!(
                    r_prev[&(u["url"].as_str().unwrap().to_string(), day.clone())],
                    1.0
                );
                unchanged += 1;
            }
        }
    }
    println!("{checked} edits: {within} within 0.05 of exact; {unchanged} revisits at 1.0");
    assert!(checked > 20 && within as f64 >= 0.95 * checked as f64);
}

/// A site redesign (every page a new doc resembling its predecessor, pages of a host in
/// template families) through the writer's sketch cache: the index is the same with the
/// cache off, tiny (evicting all the time) and at its default, and every stored edge's
/// resemblance is the estimate of the two stored sketches (the packed, cached and
/// decoded comparisons agree).
#[test]
fn redesign_sweeps_give_the_same_index_whatever_the_sketch_cache() {
    let corpus = tempfile::tempdir().unwrap();
    let out = common::tidemark_gen(&[
        "--out",
        corpus.path().to_str().unwrap(),
        "--pages",
        "400",
        "--sweeps",
        "3",
        "--redesign",
        "2",
        "--seed",
        "41",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let templates = truth(corpus.path(), 2)["edits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "template")
        .count();
    assert!(
        templates > 300,
        "a redesign changes most pages: {templates}"
    );
    let work = tempfile::tempdir().unwrap();
    let mut exports = Vec::new();
    let mut settled_coarse = Vec::new();
    let (mut found_edges, mut stored_edges) = (0u64, 0u64);
    let mut default_misses = 0;
    // On all shingles: the template families this test reads through are what content
    // leaves out.
    let (config, full) = full_config(work.path(), "");
    for (name, mb) in [("default", None), ("off", Some(0)), ("tiny", Some(1))] {
        let db = work.path().join(name);
        let mut extra = full.to_vec();
        let cfg = work.path().join(format!("{name}.toml"));
        if let Some(mb) = mb {
            std::fs::write(
                &cfg,
                format!("[cluster]\nresemblance = \"full\"\n[ingest]\nsketch_cache_mb = {mb}\n"),
            )
            .unwrap();
            extra = vec!["--config".to_string(), s(&cfg)];
        }
        let extra: Vec<&str> = extra.iter().map(|x| x.as_str()).collect();
        let mut writer = Vec::new();
        for k in 1..=3 {
            let summary = ingest_summary(
                &db,
                &format!("sweep-{k}"),
                &sweep_files(corpus.path(), k),
                &extra,
            );
            writer.push(summary["writer"].clone());
            if name == "tiny" {
                found_edges += summary["edges"].as_u64().unwrap();
                stored_edges += summary["writer"]["edges_stored"].as_u64().unwrap();
            }
        }
        // The redesign sweep: candidates settled on the coarse part of both sketches
        // whatever the cache; without a cache more sketches are read, but each stored
        // one at most once per batch (the pair step reads a batch's candidates together,
        // and its own docs' sketches are in memory).
        let w = &writer[1];
        let (read, settled, misses) = (
            w["sketches_read"].as_u64().unwrap(),
            w["settled_coarse"].as_u64().unwrap(),
            w["sketch_misses"].as_u64().unwrap(),
        );
        assert!(settled > 0 && settled < read, "{name}: {w}");
        match mb {
            Some(0) => assert!(misses >= default_misses && misses < read, "{name}: {w}"),
            None => {
                assert!(misses < read / 2, "{name}: {w}");
                default_misses = misses;
            }
            _ => {}
        }
        settled_coarse.push(settled);
        exports.push((
            name,
            export_with(&db, &extra, &[]),
            export_with(&db, &extra, &["--format", "jsonl"]),
        ));
    }
    assert!(
        settled_coarse.windows(2).all(|w| w[0] == w[1]),
        "settled the same whatever the cache: {settled_coarse:?}"
    );
    for (name, cdxj, jsonl) in &exports[1..] {
        assert!(*cdxj == exports[0].1, "cache {name}: another CDXJ export");
        assert!(*jsonl == exports[0].2, "cache {name}: another JSONL export");
    }
    let index = Index::open(&work.path().join("tiny"), &config, false).unwrap();
    let mut edges = 0;
    index
        .edges()
        .for_each(|hi, list| {
            assert!(
                list.windows(2).all(|w| w[0].0 < w[1].0),
                "doc {hi}: in doc order"
            );
            for (lo, e) in list {
                assert!(lo < hi, "edge {lo}-{hi}: under its newer doc");
                let (a, b) = (
                    index.sketch(lo).unwrap().unwrap(),
                    index.sketch(hi).unwrap().unwrap(),
                );
                let est = estimate(&a, &b);
                assert_eq!(e.resemblance, est.resemblance as f32, "edge {lo}-{hi}");
                assert_eq!(
                    e.contain_lo_in_hi, est.containment_a_in_b as f32,
                    "edge {lo}-{hi}"
                );
                assert_eq!(
                    e.contain_hi_in_lo, est.containment_b_in_a as f32,
                    "edge {lo}-{hi}"
                );
                edges += 1;
            }
            Ok(true)
        })
        .unwrap();
    // Template families make edges, of which the index stores a spanning forest (and
    // a few more): recluster at any threshold still gives the all-pairs clusters.
    assert_eq!(
        edges, stored_edges,
        "edges stored, as the ingests counted them"
    );
    assert!(
        found_edges > 1000,
        "template families make edges: {found_edges}"
    );
    assert!(
        stored_edges * 3 < found_edges,
        "a forest, not every pair: {stored_edges} of {found_edges}"
    );
    drop(index);
    let cfg: Vec<&str> = full.iter().map(|a| a.as_str()).collect();
    recluster_equals_all_pairs(
        &work.path().join("tiny"),
        &config,
        &cfg,
        &[0.4, 0.5, 0.6, 0.8],
    );
}

/// Everything a user can read of an index: both exports, the sweeps and the report of
/// every pair of consecutive sweeps.
fn answers(db: &Path, sweeps: usize) -> Vec<String> {
    let db = s(db);
    let text = |args: &[&str]| {
        let mut all = vec!["--db", db.as_str()];
        all.extend_from_slice(args);
        String::from_utf8(common::tidemark_ok(&all).stdout).unwrap()
    };
    let path = Path::new(&db);
    let mut out = vec![
        export(path),
        export_jsonl(path),
        text(&["sweeps", "--json"]),
    ];
    for k in 2..=sweeps {
        let (a, b) = (format!("sweep-{}", k - 1), format!("sweep-{k}"));
        out.push(text(&[
            "report", "--from", &a, "--to", &b, "--format", "json",
        ]));
    }
    out
}

#[test]
fn the_pair_step_gives_one_index_for_any_threads_partitions_and_buffer() {
    // A template change in sweep 3: template families, over-cap lists and many pairs
    // inside one batch, the pair step's hard cases.
    let corpus = tempfile::tempdir().unwrap();
    let sweeps = 3;
    common::generate_redesign(corpus.path(), 700, 28);
    let work = tempfile::tempdir().unwrap();
    // (threads, key ranges per batch, postings buffer MiB: 1 spills before many batches)
    let runs = [(1, 1, 512), (2, 4, 1), (8, 16, 512), (3, 0, 1)];
    let mut first: Option<Vec<String>> = None;
    for (threads, partitions, buffer) in runs {
        let name = format!("t{threads}-p{partitions}-b{buffer}");
        let config = work.path().join(format!("{name}.toml"));
        std::fs::write(
            &config,
            format!("[ingest]\npair_partitions = {partitions}\npostings_buffer_mb = {buffer}\n"),
        )
        .unwrap();
        let db = work.path().join(&name);
        let extra = ["--threads", &threads.to_string(), "--config", &s(&config)];
        for k in 1..=sweeps {
            let out = ingest(
                &db,
                &format!("sweep-{k}"),
                &sweep_files(corpus.path(), k),
                &extra,
            );
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            // The serial share is reported, and is part of the whole.
            let (serial, secs) = (
                v["serial_s"].as_f64().unwrap(),
                v["seconds"].as_f64().unwrap(),
            );
            assert!(
                serial > 0.0 && serial <= secs,
                "{name} sweep {k}: serial {serial} of {secs} s"
            );
            assert!(v["pairs_s"].as_f64().unwrap() >= 0.0);
            assert!(v["writer"]["batches"].as_u64().unwrap() >= 1);
            if k == 3 {
                assert!(
                    v["new_docs"].as_u64().unwrap() > 600,
                    "the redesign makes new docs"
                );
                assert!(
                    v["edges"].as_u64().unwrap() > 600,
                    "{name}: template families"
                );
            }
        }
        let got = answers(&db, sweeps);
        assert!(got[0].lines().count() > 1500);
        match &first {
            None => first = Some(got),
            Some(f) => {
                for (i, (a, b)) in f.iter().zip(&got).enumerate() {
                    assert!(
                        a == b,
                        "{name}: answer {i} differs from 1 thread, 1 key range"
                    );
                }
            }
        }
    }
}

#[test]
fn records_that_read_what_their_batch_wrote_see_it() {
    // Each later record reads what an earlier one wrote (a URL's latest capture, a doc
    // by payload, a revisit's target): in one batch, which the commit writes to RocksDB
    // only at the batch's end unless a record needs it sooner; and, with 200 other
    // records between, in the batch after, while that write may still be in the writing.
    for pad in [0, 200] {
        records_read_what_came_before(pad);
    }
}

fn records_read_what_came_before(pad: usize) {
    use tidemark::synth::warc;
    let mut rng = tidemark::synth::Rng::new(17);
    let words = |rng: &mut tidemark::synth::Rng| -> Vec<String> {
        (0..600)
            .map(|_| format!("w{}", rng.below(50_000)))
            .collect()
    };
    let page = |w: &[String]| format!("<html><body><p>{}</p></body></html>", w.join(" "));
    let (b_words, a_words) = (words(&mut rng), words(&mut rng));
    let mut a2_words = a_words.clone();
    for k in 0..6 {
        a2_words[k * 100] = format!("edit{k}");
    }
    let html = |w: &[String]| {
        warc::http_response(200, &[("Content-Type", "text/html")], page(w).as_bytes())
    };
    let (dig_b, dig_a, dig_a2) = (
        "sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
        "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "sha1:CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC",
    );
    let revisit = warc::record(
        &[
            ("WARC-Type", "revisit"),
            ("WARC-Date", "2026-05-01T00:00:04Z"),
            ("WARC-Target-URI", "http://batch.example/a"),
            ("WARC-Payload-Digest", dig_a),
            ("WARC-Refers-To-Target-URI", "http://batch.example/a"),
            ("WARC-Refers-To-Date", "2026-05-01T00:00:01Z"),
            (
                "WARC-Profile",
                "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
            ),
            ("Content-Type", "application/http; msgtype=response"),
        ],
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
    );
    let records = [
        warc::response(
            "http://batch.example/b",
            "2026-05-01T00:00:00Z",
            Some(dig_b),
            &html(&b_words),
        ),
        warc::response(
            "http://batch.example/a",
            "2026-05-01T00:00:01Z",
            Some(dig_a),
            &html(&a_words),
        ),
        // /b now serves /a's bytes: known by payload, a doc of this very batch.
        warc::response(
            "http://batch.example/b",
            "2026-05-01T00:00:02Z",
            Some(dig_a),
            &html(&a_words),
        ),
        // /a edited: its previous capture is in this batch.
        warc::response(
            "http://batch.example/a",
            "2026-05-01T00:00:03Z",
            Some(dig_a2),
            &html(&a2_words),
        ),
        revisit,
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batch.warc.gz");
    let mut bytes = Vec::new();
    let mut n = 0;
    for r in &records {
        bytes.extend(warc::gzip_member(r, 1));
        for _ in 0..pad {
            n += 1;
            let gone = warc::http_response(404, &[("Content-Type", "text/plain")], b"gone");
            let url = format!("http://pad.example/{n}");
            let filler = warc::response(&url, "2026-05-01T00:00:00Z", None, &gone);
            bytes.extend(warc::gzip_member(&filler, 1));
        }
    }
    std::fs::write(&path, bytes).unwrap();
    let db = dir.path().join("db");
    // Each write held back, so that a record read before its batch's write ends.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .env("TIDEMARK_TEST_WRITE_DELAY_MS", "100")
        .args([
            "--db",
            &s(&db),
            "ingest",
            "--sweep",
            "s",
            "--json",
            &s(&path),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["captures"], 5 + 5 * pad as u64, "{summary}");
    assert_eq!(summary["new_docs"], 3, "{summary}");
    let mut rows: Vec<(String, String, serde_json::Value)> = export_jsonl(&db)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["url"].as_str().unwrap().to_string(),
                v["fetch_time"].as_str().unwrap().to_string(),
                v,
            )
        })
        .collect();
    rows.retain(|r| !r.0.starts_with("http://pad.example/"));
    rows.sort_by(|x, y| (&x.1, &x.0).cmp(&(&y.1, &y.0)));
    let doc = |k: usize| rows[k].2["doc"].as_u64();
    let r_prev = |k: usize| rows[k].2["resemblance_to_previous"].as_f64();
    assert!(rows.iter().all(|r| r.2["doc"].is_u64()), "{rows:?}");
    // /b's second capture is /a's doc, compared with /b's first.
    assert_eq!(doc(2), doc(1));
    let r = r_prev(2).expect("/b compared with its previous capture");
    assert!(r < 0.2, "{r}");
    // /a's edit, compared with /a's first capture.
    let r = r_prev(3).expect("/a compared with its previous capture");
    assert!((0.5..1.0).contains(&r), "{r}");
    // The revisit is /a's first doc.
    assert_eq!(rows[4].2["type"], "revisit", "{:?}", rows[4]);
    assert_eq!(doc(4), doc(1));
}

/// Every pair of docs of the index at `db` (built with edges on content) whose content
/// resemblance reaches `least`: each doc's sample without the templates both name.
fn all_pairs_on_content(db: &Path, config: &Config, least: f64) -> (u64, Vec<(f64, u64, u64)>) {
    use tidemark::template::{estimate_without, union, without};
    let index = Index::open_read_only(db, config).unwrap();
    let n = index.doc_count();
    let docs: Vec<u64> = (1..=n).collect();
    let sketches = index.sketches().read_compact(&docs, None).unwrap();
    assert_eq!(sketches.len() as u64, n);
    let set = index.template_values().all().unwrap();
    assert!(
        !set.is_empty(),
        "no template learned: the oracle would test nothing"
    );
    let named = sketches.iter().filter(|(_, c)| c.template != 0).count();
    assert!(
        named * 2 > sketches.len(),
        "{named} of {n} docs name a template"
    );
    let mut pairs = Vec::new();
    for (i, (da, a)) in sketches.iter().enumerate() {
        for (db_, b) in &sketches[i + 1..] {
            let removed = union(set.get(a.template), set.get(b.template));
            let (sa, sb) = (without(a.values(), &removed), without(b.values(), &removed));
            // As the pair step orients it: the older doc first.
            if let Some(e) = estimate_without(&sa, a.level(), &sb, b.level()) {
                if e.resemblance >= least {
                    pairs.push((e.resemblance, *da, *db_));
                }
            }
        }
    }
    (n, pairs)
}

/// With edges on content each new doc is compared without its own sweep's template of
/// its host (learned from the whole sweep before its docs are committed), where the
/// host has one there: the first sweep's docs too, which no earlier sweep could give one.
fn own_sweeps_templates_named(db: &Path, config: &Config, corpus: &Path, jsonl: &str) {
    // Each doc's first sweep (of its captures' files) and the hosts it was captured on
    // there: one host names the doc's template (mirrors across hosts are left out).
    let mut first: BTreeMap<u64, (u32, std::collections::BTreeSet<String>)> = BTreeMap::new();
    for line in jsonl.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(doc) = row["doc"].as_u64() else {
            continue;
        };
        let surt = row["url_surtkey"].as_str().unwrap();
        let file = row["warc_filename"].as_str().unwrap();
        let sweep = (1..=3u32)
            .find(|k| {
                sweep_files(corpus, *k as usize)
                    .iter()
                    .any(|f| f.file_name().unwrap().to_str() == Some(file))
            })
            .unwrap();
        let host = surt[..=surt.find(')').unwrap()].to_string();
        let e = first.entry(doc).or_insert((sweep, Default::default()));
        if sweep < e.0 {
            *e = (sweep, Default::default());
        }
        if sweep == e.0 {
            e.1.insert(host);
        }
    }
    first.retain(|_, (_, hosts)| hosts.len() == 1);
    let index = Index::open_read_only(db, config).unwrap();
    let docs: Vec<u64> = first.keys().copied().collect();
    let sketches: HashMap<u64, u32> = index
        .sketches()
        .read_compact(&docs, None)
        .unwrap()
        .into_iter()
        .map(|(d, c)| (d, c.template))
        .collect();
    let mut named = [0usize; 4];
    for (doc, (sweep, hosts)) in &first {
        let host = hosts.first().unwrap();
        let own = index.templates().of_host(host).unwrap();
        if let Some((_, t)) = own.iter().find(|(s, _)| s == sweep) {
            assert_eq!(sketches[doc], t.id, "doc {doc} of {host} in sweep {sweep}");
            named[*sweep as usize] += 1;
        }
    }
    assert!(
        named[1..].iter().all(|n| *n > 100),
        "docs naming their sweep's template: {named:?}"
    );
}

/// With edges on content a sweep's new docs wait for their pairs until the sweep is
/// read and its templates learned (`unpaired`). A run stopped there leaves them waiting:
/// the same command pairs them, and so does a run of the next sweep (first, with the
/// stopped sweep's templates); the index is the one clean runs make.
#[test]
fn a_run_stopped_while_pairing_on_content_is_finished_by_the_next_run() {
    let corpus = tempfile::tempdir().unwrap();
    // Over two batches of new docs (1,024 each) in each sweep.
    generate(corpus.path(), 2500, 3, 53);
    let work = tempfile::tempdir().unwrap();
    let (config, args) = config_file(
        work.path(),
        "content.toml",
        "[cluster]\nresemblance = \"content\"\n",
    );
    let cfg: Vec<&str> = args.iter().map(|a| a.as_str()).collect();
    let clean = work.path().join("clean");
    ingest_all(&clean, corpus.path(), 3, &cfg);
    let stopped = work.path().join("stopped");
    let stop = |label: &str, sweep: usize, after: &str| {
        let out = ingest_command(&stopped, label, &sweep_files(corpus.path(), sweep), &cfg)
            .env("TIDEMARK_TEST_STOP_PAIRING_AFTER", after)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(
            err.contains(&format!("stopped after {after} batches of pairs")),
            "{err}"
        );
    };
    // The first doc waiting for its pairs, and its sweep.
    let waiting = || {
        let index = Index::open_read_only(&stopped, &config).unwrap();
        index.unpaired().first().unwrap()
    };
    // Sweep 1 stopped after one batch of pairs, then finished by the same command.
    stop("sweep-1", 1, "1");
    assert_eq!(waiting().map(|(d, s)| (d > 1000, s)), Some((true, 1)));
    let again = ingest_summary(&stopped, "sweep-1", &sweep_files(corpus.path(), 1), &cfg);
    assert_eq!(again["new_docs"], 0, "{again}");
    // Its waiting docs were paired.
    assert!(
        again["writer"]["candidates"].as_u64().unwrap() > 0,
        "{again}"
    );
    assert_eq!(waiting(), None);
    // Sweep 2 stopped before any pairs; sweep 3's run pairs them first.
    stop("sweep-2", 2, "0");
    assert_eq!(waiting().map(|(_, s)| s), Some(2));
    ingest_summary(&stopped, "sweep-3", &sweep_files(corpus.path(), 3), &cfg);
    for args in [&[][..], &["--format", "jsonl"][..]] {
        assert_eq!(
            export_with(&stopped, &cfg, args),
            export_with(&clean, &cfg, args),
            "export {args:?}"
        );
    }
    assert_eq!(
        read_with(&stopped, &cfg, &["sweeps", "--json"]),
        read_with(&clean, &cfg, &["sweeps", "--json"])
    );
}

#[test]
fn clusters_on_content_equal_all_pairs_on_content_and_recluster() {
    let corpus = tempfile::tempdir().unwrap();
    common::generate_redesign(corpus.path(), 600, 41);
    let work = tempfile::tempdir().unwrap();
    let (config, args) = config_file(
        work.path(),
        "content.toml",
        "[cluster]\nresemblance = \"content\"\n",
    );
    let cfg: Vec<&str> = args.iter().map(|a| a.as_str()).collect();
    let (db, full_db) = (work.path().join("content"), work.path().join("full"));
    ingest_all(&db, corpus.path(), 3, &cfg);
    let (full_cfg, full) = full_config(work.path(), "");
    let full: Vec<&str> = full.iter().map(|a| a.as_str()).collect();
    ingest_all(&full_db, corpus.path(), 3, &full);
    // The templates learned before the commit (content) are those the end of an ingest
    // learns (full): the same values for every host and sweep.
    let templates = |db: &Path, config: &Config| {
        let index = Index::open_read_only(db, config).unwrap();
        let mut out = Vec::new();
        index
            .templates()
            .scan_prefix(&[], |k, t| {
                out.push((k, t.sampled, t.values));
                Ok(true)
            })
            .unwrap();
        out
    };
    let learned = templates(&db, &config);
    assert!(learned.len() >= 3, "{} templates", learned.len());
    assert_eq!(learned, templates(&full_db, &full_cfg));
    let run = |args: &[&str]| {
        let mut all = vec!["--db", db.to_str().unwrap()];
        all.extend_from_slice(&cfg);
        all.extend_from_slice(args);
        String::from_utf8(common::tidemark_ok(&all).stdout).unwrap()
    };
    let check = |t: f64, scored: &[(f64, u64, u64)], n: u64| {
        equals_all_pairs(&clusters_from_export(&run(&["export"])), scored, n, t)
    };
    let (n, pairs) = all_pairs_on_content(&db, &config, config.cluster.edge_floor);
    let on_content = check(config.cluster.threshold, &pairs, n);
    own_sweeps_templates_named(
        &db,
        &config,
        corpus.path(),
        &run(&["export", "--format", "jsonl"]),
    );
    // recluster rebuilds finer partitions from the stored (content) edges.
    run(&["recluster", "--threshold", "0.8"]);
    let finer = check(0.8, &pairs, n);
    assert!(finer.len() >= on_content.len());
    // A page whose template changed under the same text stays in its predecessor's
    // cluster on content, not on all shingles (the redesign sweep: its new template is
    // a third of each page).
    let clustered = |p: &[Vec<u64>]| {
        p.iter()
            .filter(|c| c.len() > 1)
            .map(|c| c.len())
            .sum::<usize>()
    };
    let full = partition(&clusters_from_export(&export_with(&full_db, &full, &[])));
    assert!(
        clustered(&on_content) > clustered(&full),
        "docs in clusters: {} on content, {} on all shingles",
        clustered(&on_content),
        clustered(&full)
    );
}
