//! Spark (PyPI's pyspark in `local[2]` mode). The map stage (`tools/spark/sketch_job.py`):
//! its shards equal a local `tidemark sketch`'s byte for byte, and committed with
//! `ingest --sketches` they give the index the WARC files give. The pairs
//! (`tools/spark/pairs_job.py`): committed with `ingest --pairs`, the index a local
//! ingest gives.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::server::python;
use common::{corpus, generate, sweep_files, tidemark, tidemark_ok};

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn java() -> bool {
    let ok = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "no java in CI: tools/pyenv.sh should have installed it"
        );
        eprintln!("SKIPPED: no java (tools/test.sh installs it as root)");
    }
    ok
}

#[test]
fn the_spark_job_writes_the_shards_a_local_sketch_writes_and_they_make_the_same_index() {
    let Some(py) = python() else { return };
    if !java() {
        return;
    }
    let gen = tempfile::tempdir().unwrap();
    generate(gen.path(), 300, 2, 31);
    let mut files: Vec<PathBuf> = Vec::new();
    for k in 1..=2 {
        files.extend(sweep_files(gen.path(), k));
    }
    // And real files, a damaged one among them.
    if let Some(dir) = corpus() {
        for name in [
            "pywb__iana.warc.gz",
            "ipwb__5mementos.warc",
            "bad/resiliparse__clipped.warc.gz",
        ] {
            files.push(dir.join(name));
        }
    }
    let work = tempfile::tempdir().unwrap();
    let (spark, local) = (work.path().join("spark"), work.path().join("local"));
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/spark/sketch_job.py");
    let mut cmd = Command::new(&py);
    cmd.arg(&job)
        .args([
            "--master",
            "local[2]",
            "--json",
            "--binary",
            env!("CARGO_BIN_EXE_tidemark"),
        ])
        .arg("--out")
        .arg(&spark)
        .args(&files);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let damaged = files.len() > 4;
    assert_eq!(
        out.status.code(),
        Some(if damaged { 1 } else { 0 }),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(report["files"], files.len());
    if damaged {
        assert!(
            stderr.contains("resiliparse__clipped.warc.gz: damaged at offset"),
            "{stderr}"
        );
    }
    // The same shards as one local run on two threads.
    let mut args = vec!["sketch".to_string(), "--out".into(), s(&local)];
    args.extend(files.iter().map(|f| s(f)));
    let l = tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(matches!(l.status.code(), Some(0 | 1)));
    let mut shards = Vec::new();
    for f in &files {
        let name = format!("{}.parquet", f.file_name().unwrap().to_string_lossy());
        let (a, b) = (spark.join(&name), local.join(&name));
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
            "{name}: the Spark job's shard differs from the local one"
        );
        shards.push(a);
    }
    // Committed, they make the index the WARC files make.
    let (from_shards, from_warcs) = (work.path().join("a"), work.path().join("b"));
    let ingest = |db: &Path, inputs: &[PathBuf], sketches: bool| {
        let mut args = vec![
            "--db".to_string(),
            s(db),
            "ingest".into(),
            "--sweep".into(),
            "all".into(),
        ];
        if sketches {
            args.push("--sketches".into());
        }
        args.extend(inputs.iter().map(|f| s(f)));
        let o = tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    ingest(&from_shards, &shards, true);
    ingest(&from_warcs, &files, false);
    for f in ["cdxj", "jsonl"] {
        let e = |db: &Path| tidemark_ok(&["--db", &s(db), "export", "--format", f]).stdout;
        assert!(e(&from_shards) == e(&from_warcs), "{f} exports differ");
    }
}

#[test]
fn the_spark_pairs_job_gives_the_index_a_local_ingest_gives() {
    let Some(py) = python() else { return };
    if !java() {
        return;
    }
    let gen = tempfile::tempdir().unwrap();
    common::generate_redesign(gen.path(), 400, 33);
    let mut sweeps: Vec<Vec<PathBuf>> = (1..=3).map(|k| sweep_files(gen.path(), k)).collect();
    // And real files, a damaged one among them, as a fourth sweep.
    if let Some(dir) = corpus() {
        sweeps.push(
            [
                "pywb__iana.warc.gz",
                "ipwb__5mementos.warc",
                "bad/resiliparse__clipped.warc.gz",
            ]
            .iter()
            .map(|n| dir.join(n))
            .collect(),
        );
    }
    let work = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = (1..=sweeps.len())
        .map(|k| work.path().join(format!("shards-{k}")))
        .collect();
    for (files, dir) in sweeps.iter().zip(&shards) {
        let mut args = vec!["sketch".to_string(), "--out".into(), s(dir)];
        args.extend(files.iter().map(|f| s(f)));
        let o = tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(matches!(o.status.code(), Some(0 | 1)));
    }
    let ingest = |db: &Path, k: usize, extra: &[String]| {
        let mut args = vec!["--db".to_string(), s(db), "ingest".into()];
        args.extend(["--sweep".into(), format!("sweep-{k}"), "--sketches".into()]);
        args.extend(extra.iter().cloned());
        args.push(s(&shards[k - 1]));
        let o = tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(
            o.status.code(),
            Some(if k == 4 { 1 } else { 0 }),
            "sweep {k}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let (local, spark) = (work.path().join("local"), work.path().join("spark"));
    for k in 1..=sweeps.len() {
        ingest(&local, k, &[]);
    }
    ingest(&spark, 1, &[]);
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/spark/pairs_job.py");
    for k in 2..=sweeps.len() {
        // Sweep 3 (the template change) committed first, its new docs waiting.
        if k == 3 {
            ingest(&spark, k, &["--pairs-later".into()]);
        }
        let out_dir = work.path().join(format!("pairs-{k}"));
        let out = Command::new(&py)
            .arg(&job)
            .args(["--master", "local[2]", "--json", "--binary"])
            .arg(env!("CARGO_BIN_EXE_tidemark"))
            .arg("--index")
            .arg(&spark)
            .arg("--shards")
            .arg(&shards[k - 1])
            .arg("--out")
            .arg(&out_dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "sweep {k}: {stderr}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
        assert!(report["docs"].as_u64().unwrap() > 0, "{report}");
        assert_eq!(
            report["parts"], 4,
            "two key ranges per Spark core: {report}"
        );
        ingest(&spark, k, &["--pairs".into(), s(&out_dir)]);
    }
    common::same_index(&local, &spark, "through the Spark pairs job");
}
