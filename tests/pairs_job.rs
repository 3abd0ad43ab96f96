//! The pair step in tasks (`tidemark pairs prepare|join|estimate`, as
//! `tools/spark/pairs_job.py` runs them on a cluster) and `ingest --pairs`: the index a
//! local ingest makes, on both resemblance settings and for any number of key and doc
//! ranges; pairs made for another index state, other inputs or another plan refused by
//! name before anything is written; a killed or stopped `ingest --pairs` resumes to the
//! same index.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::{
    export, generate_redesign, same_index, same_index_with, sweep_files, sweeps, tidemark,
    tidemark_ok,
};

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn run(args: &[String]) -> Output {
    tidemark(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn ok(args: &[String]) -> Output {
    tidemark_ok(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A test's work: the generated sweeps, their shards, a configuration.
struct Work {
    dir: tempfile::TempDir,
    corpus: tempfile::TempDir,
    config: PathBuf,
}

impl Work {
    fn new(pages: usize, seed: u64, config: &str) -> Work {
        let corpus = tempfile::tempdir().unwrap();
        generate_redesign(corpus.path(), pages, seed);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, config).unwrap();
        let w = Work {
            dir,
            corpus,
            config: path,
        };
        for k in 1..=3 {
            let mut args = w.global(None);
            args.extend(["sketch".into(), "--out".into(), s(&w.shards(k))]);
            args.extend(sweep_files(w.corpus.path(), k).iter().map(|f| s(f)));
            ok(&args);
        }
        w
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn shards(&self, k: usize) -> PathBuf {
        self.path(&format!("shards-{k}"))
    }

    fn global(&self, db: Option<&Path>) -> Vec<String> {
        let mut v = vec!["--config".to_string(), s(&self.config)];
        if let Some(db) = db {
            v.extend(["--db".into(), s(db)]);
        }
        v
    }

    /// `ingest --sweep sweep-K --sketches SHARDS [extra]`.
    fn ingest(&self, db: &Path, k: usize, inputs: &[PathBuf], extra: &[String]) -> Output {
        let mut args = self.global(Some(db));
        args.extend(["ingest".into(), "--sweep".into(), format!("sweep-{k}")]);
        args.push("--sketches".into());
        args.extend(extra.iter().cloned());
        args.extend(inputs.iter().map(|f| s(f)));
        run(&args)
    }

    /// [`Work::ingest`], which must succeed.
    fn ingest_ok(&self, db: &Path, k: usize, extra: &[String]) -> Output {
        let out = self.ingest(db, k, &[self.shards(k)], extra);
        assert_eq!(
            out.status.code(),
            Some(0),
            "sweep {k}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The pairs job of sweep `k`'s shards on `db`, its tasks run one by one.
    fn job(&self, db: &Path, k: usize, out: &Path, parts: usize, ranges: usize) {
        let mut args = self.global(Some(db));
        args.extend(["pairs".into(), "prepare".into(), "--out".into(), s(out)]);
        args.extend(["--parts".into(), parts.to_string()]);
        args.extend(["--ranges".into(), ranges.to_string(), "--json".into()]);
        args.push(s(&self.shards(k)));
        let plan: serde_json::Value = serde_json::from_slice(&ok(&args).stdout).unwrap();
        let ranges = plan["ranges"].as_array().unwrap().len();
        for (task, n) in [("keys", ranges), ("join", parts), ("estimate", ranges)] {
            for part in 0..n {
                let mut args = self.global(None);
                args.extend(["pairs".into(), task.into(), "--pairs".into(), s(out)]);
                args.extend(["--part".into(), part.to_string()]);
                ok(&args);
            }
        }
    }
}

fn pairs_from(dir: &Path) -> Vec<String> {
    vec!["--pairs".into(), s(dir)]
}

#[test]
fn pairs_from_tasks_make_the_index_a_local_ingest_makes_on_both_settings() {
    for resemblance in ["full", "content"] {
        let w = Work::new(
            600,
            61,
            &format!("[cluster]\nresemblance = \"{resemblance}\"\n"),
        );
        let (local, tasks) = (w.path("local"), w.path("tasks"));
        for k in 1..=3 {
            w.ingest_ok(&local, k, &[]);
        }
        // Sweep 1 here; sweep 2 through a job made straight from the index (1 key range,
        // 1 doc range); sweep 3, the template change, committed first with
        // --pairs-later, then through a job of 4 key ranges and 3 doc ranges.
        w.ingest_ok(&tasks, 1, &[]);
        let job2 = w.path("job-2");
        w.job(&tasks, 2, &job2, 1, 1);
        let mut args = vec!["--json".to_string()];
        args.extend(pairs_from(&job2));
        let out = w.ingest_ok(&tasks, 2, &args);
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            summary["writer"]["candidates_s"], 0.0,
            "{resemblance}: the pairs were found here, not read"
        );
        let out = w.ingest_ok(&tasks, 3, &["--pairs-later".into(), "--json".into()]);
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(summary["waiting_docs"].as_u64().unwrap() > 500, "{summary}");
        let job3 = w.path("job-3");
        w.job(&tasks, 3, &job3, 4, 3);
        w.ingest_ok(&tasks, 3, &pairs_from(&job3));
        same_index_with(&local, &tasks, resemblance, &["--config", &s(&w.config)]);
    }
}

#[test]
fn pairs_for_another_index_state_other_inputs_or_damaged_are_refused_naming_them() {
    let w = Work::new(300, 62, "");
    let db = w.path("db");
    w.ingest_ok(&db, 1, &[]);
    let job = w.path("job");
    w.job(&db, 2, &job, 2, 2);
    let before = (export(&db, "jsonl"), sweeps(&db));
    let refused = |db: &Path, k: usize, inputs: &[PathBuf], job: &Path, says: &[&str]| {
        let out = w.ingest(db, k, inputs, &pairs_from(job));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{says:?}: {err}");
        for s in says {
            assert!(err.contains(s), "{s:?} not in: {err}");
        }
    };
    // Another sweep before it.
    let other = w.path("other");
    w.ingest_ok(&other, 1, &[]);
    w.ingest_ok(&other, 3, &[]);
    let other_before = export(&other, "jsonl");
    refused(
        &other,
        2,
        &[w.shards(2)],
        &job,
        &["another index state", "sweep-3"],
    );
    assert!(export(&other, "jsonl") == other_before);
    // Other parameters.
    let floor = w.path("floor.toml");
    std::fs::write(&floor, "[cluster]\nedge_floor = 0.4\n").unwrap();
    let params = w.path("params");
    let mut args = vec!["--config".to_string(), s(&floor), "--db".into(), s(&params)];
    args.extend([
        "ingest".into(),
        "--sweep".into(),
        "sweep-1".into(),
        "--sketches".into(),
    ]);
    args.push(s(&w.shards(1)));
    ok(&args);
    let mut args = vec!["--config".to_string(), s(&floor), "--db".into(), s(&params)];
    args.extend([
        "ingest".into(),
        "--sweep".into(),
        "sweep-2".into(),
        "--sketches".into(),
    ]);
    args.extend([s(&w.shards(2)), "--pairs".into(), s(&job)]);
    let out = run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("parameters") && err.contains("edge_floor"),
        "{err}"
    );
    // Other inputs: a shard the plan does not hold, or one it holds left out.
    let three: Vec<PathBuf> = std::fs::read_dir(w.shards(3))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    refused(
        &db,
        2,
        &three[..1],
        &job,
        &[&s(&three[0]), "not one of the inputs"],
    );
    // (A plan of sweeps 2 and 3's shards as one sweep, given sweep 2's alone.)
    let both = w.path("both");
    let mut args = w.global(Some(&db));
    args.extend(["pairs".into(), "prepare".into(), "--out".into(), s(&both)]);
    args.extend([s(&w.shards(2)), s(&w.shards(3))]);
    ok(&args);
    refused(&db, 2, &[w.shards(2)], &both, &["was made from", "too"]);
    // A truncated pairs file, another job's file in its place, an edited plan.
    let copy = |to: &Path| {
        std::fs::create_dir_all(to.join("pairs")).unwrap();
        for d in ["pairs"] {
            for e in std::fs::read_dir(job.join(d)).unwrap() {
                let e = e.unwrap().path();
                std::fs::copy(&e, to.join(d).join(e.file_name().unwrap())).unwrap();
            }
        }
        std::fs::copy(job.join("plan.json"), to.join("plan.json")).unwrap();
    };
    let bad = w.path("truncated");
    copy(&bad);
    let f = bad.join("pairs/range-00001.estimates.parquet");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() - 9]).unwrap();
    refused(
        &db,
        2,
        &[w.shards(2)],
        &bad,
        &["range-00001.estimates.parquet", "truncated"],
    );
    let foreign = w.path("foreign");
    copy(&foreign);
    std::fs::copy(
        foreign.join("pairs/range-00000.docs.parquet"),
        foreign.join("pairs/range-00001.docs.parquet"),
    )
    .unwrap();
    refused(
        &db,
        2,
        &[w.shards(2)],
        &foreign,
        &["range-00001.docs.parquet", "part 0"],
    );
    let edited = w.path("edited");
    copy(&edited);
    let plan = std::fs::read_to_string(edited.join("plan.json")).unwrap();
    std::fs::write(
        edited.join("plan.json"),
        plan.replace("\"parts\": 2", "\"parts\": 3"),
    )
    .unwrap();
    refused(&db, 2, &[w.shards(2)], &edited, &["plan.json", "digest"]);
    refused(
        &db,
        2,
        &[w.shards(2)],
        &w.path("nowhere"),
        &["plan.json", "cannot read"],
    );
    // Nothing was written by any of them; the job's own pairs then go in.
    assert!(
        (export(&db, "jsonl"), sweeps(&db)) == before,
        "a refused ingest wrote"
    );
    w.ingest_ok(&db, 2, &pairs_from(&job));
    let local = w.path("local");
    for k in 1..=2 {
        w.ingest_ok(&local, k, &[]);
    }
    same_index(&local, &db, "after the refusals");
}

#[test]
fn a_stopped_or_killed_ingest_with_pairs_resumes_to_the_same_index() {
    // 2,500 pages: the template change's new docs take three batches of pairs.
    let w = Work::new(2500, 63, "");
    let (clean, crashy) = (w.path("clean"), w.path("crashy"));
    for k in 1..=3 {
        w.ingest_ok(&clean, k, &[]);
    }
    for k in 1..=2 {
        w.ingest_ok(&crashy, k, &[]);
    }
    let job = w.path("job");
    w.ingest_ok(&crashy, 3, &["--pairs-later".into()]);
    w.job(&crashy, 3, &job, 3, 2);
    // Stopped after its first batch of pairs: the next run takes the rest.
    let mut args = w.global(Some(&crashy));
    args.extend([
        "ingest".into(),
        "--sweep".into(),
        "sweep-3".into(),
        "--sketches".into(),
    ]);
    args.extend([s(&w.shards(3)), "--pairs".into(), s(&job)]);
    let t = std::time::Instant::now();
    let out = tidemark_env(&args, ("TIDEMARK_TEST_STOP_PAIRING_AFTER", "1"));
    assert_ne!(out.status.code(), Some(0), "did not stop");
    // Then killed at random moments until one run ends by itself: moments up to twice
    // that run's time (its start and a batch), as the ingest kill test measures its
    // window. A fixed 400 ms was shorter than the run that commits the last batch on a
    // busy machine (~0.45 s here), and then no run could finish.
    let window = (2 * t.elapsed().as_millis() as usize).max(400);
    let mut rng = tidemark::synth::Rng::new(9);
    let (mut kills, mut runs) = (0, 0);
    loop {
        runs += 1;
        assert!(
            runs < 60,
            "no progress in {runs} runs ({kills} kills, {window} ms)"
        );
        let delay = Duration::from_millis(rng.below(window) as u64);
        if common::run_or_kill(&args, delay) {
            break;
        }
        kills += 1;
    }
    println!("{kills} kills in {runs} runs");
    same_index(&clean, &crashy, "stopped, killed and resumed");
}

fn tidemark_env(args: &[String], (k, v): (&str, &str)) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(args)
        .env(k, v)
        .output()
        .unwrap()
}
