//! `tidemark-bench --map-reduce`: how far the split ingest scales. The map stage
//! (read, canonicalize, sketch: `tidemark sketch`) runs anywhere, one file per task;
//! the pairs (`tidemark pairs keys|join|estimate`, as `tools/spark/pairs_job.py` runs
//! them) run anywhere, one key or doc range per task; what stays on the index's machine
//! is the commit: the records (`ingest --pairs-later`) and the pairs read from the
//! job's files (`ingest --pairs`). Each is measured per page on this machine beside a
//! local `ingest --sketches` (which finds the pairs itself), checked to make the same
//! index, and projected to 100M- and 3B-page sweeps on 10, 100 and 1,000 executors of
//! one core.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use serde_json::json;

use super::{ensure_sweeps, sweep_dirs, tidemark_exe, warc_files, Args};

/// CPU seconds (user and system) of the children waited for so far.
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Runs `tidemark ARGS…`: wall seconds, CPU seconds and parsed JSON stdout (None when
/// it failed).
pub fn run(exe: &Path, args: &[String]) -> Option<(f64, f64, serde_json::Value)> {
    let (t, cpu) = (Instant::now(), children_cpu());
    let out = Command::new(exe).args(args).output().expect("run tidemark");
    let secs = t.elapsed().as_secs_f64();
    let cpu = children_cpu() - cpu;
    if !out.status.success() {
        eprintln!(
            "tidemark-bench: tidemark {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some((
        secs,
        cpu,
        serde_json::from_slice(&out.stdout).unwrap_or_default(),
    ))
}

fn strings(v: &[&str], files: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    out.extend(files.iter().map(|f| f.display().to_string()));
    out
}

/// Key and doc ranges of the pairs job (its tasks).
const TASKS: usize = 8;

/// The Python with pyspark the Spark measurement uses, if any: `TIDEMARK_PYTHON` (the
/// tests' environment, `tools/pyenv.sh`) or `python3`.
fn pyspark() -> Option<String> {
    let py = std::env::var("TIDEMARK_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args(["-c", "import pyspark"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

/// The same index: both exports and the sweeps.
fn same_index(exe: &Path, a: &Path, b: &Path) -> bool {
    let read = |db: &Path, args: &[&str]| {
        let mut all = vec!["--db".to_string(), db.display().to_string()];
        all.extend(args.iter().map(|s| s.to_string()));
        Command::new(exe).args(&all).output().map(|o| o.stdout).ok()
    };
    [
        &["export"][..],
        &["export", "--format", "jsonl"],
        &["sweeps", "--json"],
    ]
    .iter()
    .all(|args| read(a, args).is_some_and(|x| !x.is_empty() && Some(x) == read(b, args)))
}

/// The pairs of a sweep through the job's tasks, after its records went in with
/// `--pairs-later`: (seconds and CPU seconds of the tasks run one after another on one
/// thread each, prepare's seconds), or None when a step failed.
fn pairs_tasks(exe: &Path, db: &Path, shards: &Path, job: &Path) -> Option<(f64, f64, f64)> {
    let _ = std::fs::remove_dir_all(job);
    let n = TASKS.to_string();
    let (job_s, db_s, shards_s) = (
        job.display().to_string(),
        db.display().to_string(),
        shards.display().to_string(),
    );
    let prepare: Vec<String> = [
        "--db", &db_s, "pairs", "prepare", "--json", "--out", &job_s, "--parts", &n, "--ranges",
        &n, &shards_s,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (prepare_s, _, plan) = run(exe, &prepare)?;
    let ranges = plan["ranges"].as_array().map_or(0, |r| r.len());
    let (mut secs, mut cpu) = (0.0, 0.0);
    for (task, count) in [("keys", ranges), ("join", TASKS), ("estimate", ranges)] {
        for part in 0..count {
            let p = part.to_string();
            let args: Vec<String> = [
                "--threads",
                "1",
                "pairs",
                task,
                "--json",
                "--pairs",
                &job_s,
                "--part",
                &p,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let (s, c, _) = run(exe, &args)?;
            secs += s;
            cpu += c;
        }
    }
    Some((secs, cpu, prepare_s))
}

/// The serial part of an ingest run: its busiest one-thread step, the committing thread
/// (`serial_s`), the RocksDB writes' threads (`writer.write_cpu_s`,
/// `writer.encode_cpu_s`) or with `--pairs` the postings thread
/// (`writer.postings_cpu_s`). With enough cores on the index's machine
/// the rest (reading and decoding, pairs files, compactions) runs beside them.
fn serial(run: &serde_json::Value) -> f64 {
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let w = &run["writer"];
    f(&run["serial_s"])
        .max(f(&w["write_cpu_s"]))
        .max(f(&w["encode_cpu_s"]))
        .max(f(&w["postings_cpu_s"]))
}

/// Least squares of `t = a·x + b·y` over the points: (a, b); one rate for both when
/// the sweeps are too alike (or too small) to tell the two apart.
fn fit2(points: &[(f64, f64, f64)]) -> (f64, f64) {
    let (mut xx, mut xy, mut yy, mut xt, mut yt) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, y, t) in points {
        xx += x * x;
        xy += x * y;
        yy += y * y;
        xt += x * t;
        yt += y * t;
    }
    let det = xx * yy - xy * xy;
    let (a, b) = if det.abs() < 1e-9 {
        (-1.0, -1.0)
    } else {
        ((xt * yy - yt * xy) / det, (yt * xx - xt * xy) / det)
    };
    if a < 0.0 || b < 0.0 {
        let t: f64 = points.iter().map(|p| p.2).sum();
        let r = t / points.iter().map(|p| p.0 + p.1).sum::<f64>().max(1e-9);
        return (r, r);
    }
    (a, b)
}

fn human(secs: f64) -> String {
    if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 7200.0 {
        format!("{:.0} min", secs / 60.0)
    } else if secs < 3.0 * 86400.0 {
        format!("{:.1} h", secs / 3600.0)
    } else {
        format!("{:.1} days", secs / 86400.0)
    }
}

pub fn bench(a: &Args) -> ExitCode {
    if !ensure_sweeps(a) {
        return ExitCode::from(1);
    }
    let exe = tidemark_exe();
    let db = a.dir.join("map-reduce.db");
    let dist = a.dir.join("map-reduce-pairs.db");
    let shards_root = a.dir.join("shards");
    for d in [&db, &dist, &shards_root] {
        let _ = std::fs::remove_dir_all(d);
    }
    let python = pyspark();
    if python.is_none() {
        eprintln!("tidemark-bench: no Python with pyspark (TIDEMARK_PYTHON or python3): the Spark job is not timed");
    }
    say!(
        a.json,
        "{:<10} {:>8} {:>9} {:>12} {:>11} {:>10} {:>11} {:>9} {:>13} {:>12} {:>10}",
        "sweep",
        "pages",
        "new docs",
        "sketch µs/p",
        "shard B/p",
        "map/insp",
        "merge µs/p",
        "commit µs/p",
        "pairs CPU µs/nd",
        "Spark s",
        "commit/merge"
    );
    let mut rows = Vec::new();
    for dir in sweep_dirs(&a.dir) {
        let label = dir.file_name().unwrap().to_string_lossy().to_string();
        let files = warc_files(&dir);
        let out = shards_root.join(&label);
        // One worker each, as one Spark task: read + canonicalize + sketch alone, then
        // the same with the shard written. Rates per core are by CPU time: the reader
        // (gzip) and the caller (output) run beside the worker.
        let Some((inspect_s, inspect_cpu, _)) = run(
            &exe,
            &strings(
                &["--threads", "1", "inspect", "--summary", "--json"],
                &files,
            ),
        ) else {
            return ExitCode::from(1);
        };
        let sk_args = strings(
            &[
                "--threads",
                "1",
                "sketch",
                "--json",
                "--out",
                &out.display().to_string(),
            ],
            &files,
        );
        let Some((sketch_s, sketch_cpu, sk)) = run(&exe, &sk_args) else {
            return ExitCode::from(1);
        };
        let merge_args = vec![
            "--db".to_string(),
            db.display().to_string(),
            "ingest".into(),
            "--sweep".into(),
            label.clone(),
            "--json".into(),
            "--sketches".into(),
            out.display().to_string(),
        ];
        let Some((merge_s, _, m)) = run(&exe, &merge_args) else {
            return ExitCode::from(1);
        };
        // The same sweep split: its records committed, the pairs through the job's
        // tasks (one thread each, as one-core executors), then committed from its files.
        let dist_ingest = |extra: &[&str]| -> Vec<String> {
            let mut v = vec![
                "--db".to_string(),
                dist.display().to_string(),
                "ingest".into(),
                "--sweep".into(),
                label.clone(),
                "--json".into(),
                "--sketches".into(),
            ];
            v.extend(extra.iter().map(|s| s.to_string()));
            v.push(out.display().to_string());
            v
        };
        let Some((stage1_s, _, r1)) = run(&exe, &dist_ingest(&["--pairs-later"])) else {
            return ExitCode::from(1);
        };
        let job = a.dir.join("pairs-job").join(&label);
        let Some((tasks_s, tasks_cpu, prepare_s)) = pairs_tasks(&exe, &dist, &out, &job) else {
            return ExitCode::from(1);
        };
        // The Spark job on the same state (local[2]: two executors of one core), when
        // pyspark is there; its files are the tasks' (the tests check it).
        let spark_s = python.as_ref().and_then(|py| {
            let sj = a.dir.join("pairs-spark").join(&label);
            let _ = std::fs::remove_dir_all(&sj);
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/spark/pairs_job.py");
            let t = Instant::now();
            let o = Command::new(py)
                .arg(script)
                .args(["--master", "local[2]", "--json", "--binary"])
                .arg(&exe)
                .arg("--index")
                .arg(&dist)
                .arg("--shards")
                .arg(&out)
                .arg("--out")
                .arg(&sj)
                .args([
                    "--parts",
                    &TASKS.to_string(),
                    "--ranges",
                    &TASKS.to_string(),
                ])
                .output()
                .ok()?;
            if !o.status.success() {
                eprintln!(
                    "tidemark-bench: pairs_job.py failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                return None;
            }
            Some(t.elapsed().as_secs_f64())
        });
        let pairs_arg = job.display().to_string();
        let Some((commit_s, _, c)) = run(&exe, &dist_ingest(&["--pairs", &pairs_arg])) else {
            return ExitCode::from(1);
        };
        let pages = sk["records"].as_f64().unwrap_or(0.0).max(1.0);
        let new_docs = m["new_docs"].as_f64().unwrap_or(0.0);
        let shard_bytes = sk["shard_bytes"].as_f64().unwrap_or(0.0);
        let commit = stage1_s + commit_s;
        say!(
        a.json,
            "{:<10} {:>8} {:>9} {:>12.0} {:>11.0} {:>9.0}% {:>11.0} {:>9.0} {:>15.0} {:>12} {:>11.0}%",
            label,
            pages,
            new_docs,
            1e6 * sketch_cpu / pages,
            shard_bytes / pages,
            100.0 * inspect_cpu / sketch_cpu,
            1e6 * merge_s / pages,
            1e6 * commit / pages,
            1e6 * tasks_cpu / new_docs.max(1.0),
            spark_s.map_or("-".to_string(), |s| format!("{s:.1}")),
            100.0 * commit / merge_s
        );
        rows.push(json!({
            "sweep": label, "pages": pages, "new_docs": new_docs,
            "inspect_seconds": inspect_s, "sketch_seconds": sketch_s, "merge_seconds": merge_s,
            "inspect_cpu_seconds": inspect_cpu, "sketch_cpu_seconds": sketch_cpu,
            "shard_bytes": shard_bytes, "shard_bytes_per_page": shard_bytes / pages,
            "map_rate_per_core_share_of_inspect": inspect_cpu / sketch_cpu,
            "merge_writer": m["writer"],
            "records_commit_seconds": stage1_s, "pairs_commit_seconds": commit_s,
            "commit_seconds": commit, "prepare_seconds": prepare_s,
            "pairs_tasks_seconds": tasks_s, "pairs_tasks_cpu_seconds": tasks_cpu,
            "pairs_spark_local2_seconds": spark_s,
            "pairs_commit_writer": c["writer"],
            "merge_serial_seconds": serial(&m),
            "commit_serial_seconds": serial(&r1) + serial(&c),
        }));
    }
    if rows.is_empty() {
        eprintln!("tidemark-bench: no sweeps in {}", a.dir.display());
        return ExitCode::from(1);
    }
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap_or(0.0);
    let pages: f64 = rows.iter().map(|r| f(r, "pages")).sum();
    // A one-core executor's time a page: the map's CPU time.
    let map_per_page = rows.iter().map(|r| f(r, "sketch_cpu_seconds")).sum::<f64>() / pages;
    // Seconds split into new-doc pages and the rest, by least squares over sweeps.
    let fit = |k: &str| {
        let points: Vec<(f64, f64, f64)> = rows
            .iter()
            .map(|r| (f(r, "new_docs"), f(r, "pages") - f(r, "new_docs"), f(r, k)))
            .collect();
        fit2(&points)
    };
    let (merge_new, merge_known) = fit("merge_seconds");
    let (records_new, records_known) = fit("records_commit_seconds");
    let (pairs_commit_new, pairs_commit_known) = fit("pairs_commit_seconds");
    let (serial_new, serial_known) = fit("commit_serial_seconds");
    let new_total: f64 = rows.iter().map(|r| f(r, "new_docs")).sum::<f64>().max(1.0);
    // The pairs tasks' CPU is the new docs' (known content has no pairs).
    let pairs_per_new = rows
        .iter()
        .map(|r| f(r, "pairs_tasks_cpu_seconds"))
        .sum::<f64>()
        / new_total;
    let steady_new = {
        let later: Vec<&serde_json::Value> = rows[1..]
            .iter()
            .filter(|r| f(r, "new_docs") < 0.5 * f(r, "pages"))
            .collect();
        if later.is_empty() {
            0.1
        } else {
            later.iter().map(|r| f(r, "new_docs")).sum::<f64>()
                / later.iter().map(|r| f(r, "pages")).sum::<f64>()
        }
    };
    let same = same_index(&exe, &db, &dist);
    say!(
        a.json,
        "map: {:.0} µs a page on one core; pairs: {:.0} CPU-µs a new doc on one core; local merge (2 cores): {:.0} µs a new-doc page, {:.0} µs a known one; commit with the pairs from files (2 cores): records {:.0} / {:.0} µs, pairs {:.0} / {:.0} µs (new / known), {:.0}% of the local merge a new doc; its serial part (the busiest one-thread step of each commit: committing, encoding, writing or postings thread): {:.0} / {:.0} µs, {:.0}% of the local merge a new doc; steady sweeps {:.0}% new; same index as the local merge: {}",
        1e6 * map_per_page,
        1e6 * pairs_per_new,
        1e6 * merge_new,
        1e6 * merge_known,
        1e6 * records_new,
        1e6 * records_known,
        1e6 * pairs_commit_new,
        1e6 * pairs_commit_known,
        100.0 * (records_new + pairs_commit_new) / merge_new.max(1e-12),
        1e6 * serial_new,
        1e6 * serial_known,
        100.0 * serial_new / merge_new.max(1e-12),
        100.0 * steady_new,
        same
    );
    say!(a.json, "projected wall time: the map on E one-core executors beside the records' commit (the larger), then the pairs on the E executors, then their commit: with the commit as on these 2 cores, (with its serial part alone: an index machine with cores for the rest), [a local merge's, pipelined with the map]:");
    say!(
        a.json,
        "{:<8} {:<8} {:>10} {:>27} {:>27} {:>27}",
        "pages",
        "content",
        "commit",
        "E=10",
        "E=100",
        "E=1000"
    );
    let mut projection = Vec::new();
    for n in [1e8, 3e9] {
        for (what, share) in [("all new", 1.0), ("steady", steady_new)] {
            let per = |new: f64, known: f64| n * (share * new + (1.0 - share) * known);
            let (records, commit2) = (
                per(records_new, records_known),
                per(pairs_commit_new, pairs_commit_known),
            );
            let merge = per(merge_new, merge_known);
            let pairs = n * share * pairs_per_new;
            let es = [10.0, 100.0, 1000.0];
            let walls: Vec<f64> = es
                .iter()
                .map(|e| (n * map_per_page / e).max(records) + pairs / e + commit2)
                .collect();
            // The serial part split as the commit is (records, then pairs).
            let serial = per(serial_new, serial_known);
            let split = records / (records + commit2).max(1e-12);
            let walls_serial: Vec<f64> = es
                .iter()
                .map(|e| {
                    (n * map_per_page / e).max(serial * split) + pairs / e + serial * (1.0 - split)
                })
                .collect();
            let local: Vec<f64> = es
                .iter()
                .map(|e| (n * map_per_page / e).max(merge))
                .collect();
            let cell = |k: usize| {
                format!(
                    "{} ({}) [{}]",
                    human(walls[k]),
                    human(walls_serial[k]),
                    human(local[k])
                )
            };
            say!(
                a.json,
                "{:<8} {:<8} {:>10} {:>27} {:>27} {:>27}",
                format!("{:.0}M", n / 1e6),
                what,
                human(records + commit2),
                cell(0),
                cell(1),
                cell(2)
            );
            projection.push(json!({"pages": n, "content": what, "new_share": share,
                "commit_seconds": records + commit2, "records_commit_seconds": records,
                "pairs_commit_seconds": commit2, "pairs_cpu_seconds": pairs,
                "local_merge_seconds": merge,
                "map_seconds_per_executor_count": {"10": n * map_per_page / 10.0,
                "100": n * map_per_page / 100.0, "1000": n * map_per_page / 1000.0},
                "wall_seconds": {"10": walls[0], "100": walls[1], "1000": walls[2]},
                "commit_serial_seconds": serial,
                "wall_seconds_serial_commit": {"10": walls_serial[0], "100": walls_serial[1], "1000": walls_serial[2]},
                "wall_seconds_local_merge": {"10": local[0], "100": local[1], "1000": local[2]}}));
        }
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "sweeps": rows, "map_seconds_per_page_per_core": map_per_page,
                "merge_seconds_per_new_page": merge_new, "merge_seconds_per_known_page": merge_known,
                "records_commit_seconds_per_new_page": records_new,
                "records_commit_seconds_per_known_page": records_known,
                "pairs_commit_seconds_per_new_page": pairs_commit_new,
                "pairs_commit_seconds_per_known_page": pairs_commit_known,
                "pairs_cpu_seconds_per_new_doc": pairs_per_new,
                "commit_serial_seconds_per_new_page": serial_new,
                "commit_serial_seconds_per_known_page": serial_known,
                "commit_serial_share_of_local_merge_per_new_doc": serial_new / merge_new.max(1e-12),
                "commit_share_of_local_merge_per_new_doc": (records_new + pairs_commit_new) / merge_new.max(1e-12),
                "same_index": same,
                "steady_new_share": steady_new, "projection": projection,
            }))
            .unwrap()
        );
    }
    if same {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "tidemark-bench: the index committed from the pairs job differs from the local merge's"
        );
        ExitCode::from(1)
    }
}
