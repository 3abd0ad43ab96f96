//! `export --format parquet`, read by DuckDB (the real engine, from the test's Python
//! environment): the counts an analyst gets in SQL equal `stats`, `sweeps` and
//! `cluster`.

mod common;

use std::path::Path;
use std::process::Command;

use common::server::python;
use common::{generate, ingest_generated, tidemark, tidemark_ok};

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Answers of DuckDB over the export, as JSON.
const QUERIES: &str = r#"
import duckdb, json, sys
d = sys.argv[1]
c = duckdb.connect()
caps = f"read_parquet('{d}/captures/*/*.parquet', hive_partitioning = true)"
clusters = f"'{d}/clusters/part-0.parquet'"
edges = f"'{d}/edges/part-0.parquet'"
q = lambda sql: c.sql(sql).fetchall()
out = {
    "per_sweep": dict(q(f"select sweep, count(*) from {caps} group by sweep")),
    "captures": q(f"select count(*) from {caps}")[0][0],
    "urls": q(f"select count(distinct url_surtkey) from {caps}")[0][0],
    "docs": q(f"select count(*) from {clusters}")[0][0],
    "clusters": q(f"select count(distinct cluster) from {clusters}")[0][0],
    "multi_doc_clusters": q(f"select count(*) from (select cluster from {clusters} group by cluster having count(*) > 1)")[0][0],
    "largest": q(f"select cluster, count(*) n from {clusters} group by cluster order by n desc, cluster limit 10"),
    "captures_per_cluster": dict(q(f"select cluster, count(*) from {caps} where cluster is not null group by cluster")),
    # A capture's cluster is its doc's.
    "disagreeing": q(f"select count(*) from {caps} c join {clusters} k using (doc) where c.cluster <> k.cluster")[0][0],
    "pruned": q(f"select count(*) from {caps} where sweep = 'sweep-2'")[0][0],
    "fetch_time_type": q(f"select typeof(fetch_time) from {caps} limit 1")[0][0],
    "first_fetch": q(f"select min(fetch_time)::varchar from {caps}")[0][0],
    "edges": q(f"select count(*), count(*) filter (where doc_a >= doc_b), min(greatest(resemblance, containment)) from {edges}")[0],
    "a_url": q(f"select url from {caps} where cluster = (select cluster from {clusters} group by cluster order by count(*) desc, cluster limit 1) limit 1")[0][0],
}
out["per_sweep"] = {k: v for k, v in out["per_sweep"].items()}
out["captures_per_cluster"] = {str(k): v for k, v in out["captures_per_cluster"].items()}
print(json.dumps(out, default=str))
"#;

#[test]
fn duckdb_counts_over_the_parquet_export_equal_stats_sweeps_and_cluster() {
    let Some(py) = python() else { return };
    let corpus = tempfile::tempdir().unwrap();
    generate(corpus.path(), 400, 3, 12);
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db");
    ingest_generated(corpus.path(), &db, 3, &[]);
    let dir = work.path().join("parquet");
    let out = tidemark_ok(&[
        "--db",
        &s(&db),
        "export",
        "--format",
        "parquet",
        "--out",
        &s(&dir),
        "--json",
    ]);
    let written: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(written["files"].as_array().unwrap().len(), 5, "{written}");
    for k in 1..=3 {
        assert!(dir
            .join(format!("captures/sweep=sweep-{k}/part-0.parquet"))
            .exists());
    }
    let script = work.path().join("queries.py");
    std::fs::write(&script, QUERIES).unwrap();
    let run = Command::new(&py).arg(&script).arg(&dir).output().unwrap();
    assert!(
        run.status.success(),
        "duckdb: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let stats: serde_json::Value =
        serde_json::from_slice(&tidemark_ok(&["--db", &s(&db), "stats", "--json"]).stdout).unwrap();
    let sweeps: serde_json::Value =
        serde_json::from_slice(&tidemark_ok(&["--db", &s(&db), "sweeps", "--json"]).stdout)
            .unwrap();
    for sw in sweeps.as_array().unwrap() {
        let label = sw["label"].as_str().unwrap();
        assert_eq!(
            got["per_sweep"][label], sw["captures"],
            "captures of sweep {label}"
        );
    }
    assert_eq!(
        got["pruned"], sweeps[1]["captures"],
        "a query pruned to one sweep"
    );
    for k in ["captures", "urls", "docs", "clusters", "multi_doc_clusters"] {
        assert_eq!(
            got[k], stats[k],
            "{k}: DuckDB {} vs stats {}",
            got[k], stats[k]
        );
    }
    assert_eq!(
        got["largest"], stats["largest_clusters"],
        "the largest clusters"
    );
    assert_eq!(got["disagreeing"], 0);
    assert!(
        got["fetch_time_type"]
            .as_str()
            .unwrap()
            .starts_with("TIMESTAMP"),
        "{}",
        got["fetch_time_type"]
    );
    assert!(
        got["first_fetch"]
            .as_str()
            .unwrap()
            .starts_with("2026-01-01"),
        "{}",
        got["first_fetch"]
    );
    let edges = got["edges"].as_array().unwrap();
    assert!(edges[0].as_u64().unwrap() > 0, "no edges exported");
    assert_eq!(edges[1], 0, "doc_a < doc_b on every edge");
    assert!(
        edges[2].as_f64().unwrap() >= 0.3 - 1e-6,
        "every edge is at the floor"
    );
    // Captures per cluster equal what `tidemark cluster` lists for the largest one.
    let url = got["a_url"].as_str().unwrap();
    let cl = tidemark(&["--db", &s(&db), "cluster", "--json", url]);
    assert_eq!(
        cl.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&cl.stderr)
    );
    let cl: serde_json::Value = serde_json::from_slice(&cl.stdout).unwrap();
    let listed: u64 = cl["members"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["urls"].as_array().unwrap().iter())
        .map(|u| u["captures"].as_u64().unwrap())
        .sum();
    let id = cl["cluster"].to_string();
    assert_eq!(
        got["captures_per_cluster"][&id].as_u64(),
        Some(listed),
        "captures of cluster {id}"
    );
    // Parquet needs a folder; other formats refuse one.
    let no_dir = tidemark(&["--db", &s(&db), "export", "--format", "parquet"]);
    assert_eq!(no_dir.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_dir.stderr).contains("--out DIR"));
}
