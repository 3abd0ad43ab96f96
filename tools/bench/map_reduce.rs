//! `tidemark-bench --map-reduce`: how far the split ingest scales. The map stage
//! (read, canonicalize, sketch: `tidemark sketch`) runs anywhere, one file per task;
//! the merge (`ingest --sketches`) is serial. Measured per page on this machine, then
//! projected to 100M- and 3B-page sweeps on 10, 100 and 1,000 executors of one core.

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
    let shards_root = a.dir.join("shards");
    let _ = std::fs::remove_dir_all(&db);
    let _ = std::fs::remove_dir_all(&shards_root);
    println!(
        "{:<10} {:>8} {:>9} {:>16} {:>16} {:>10} {:>11} {:>9}",
        "sweep",
        "pages",
        "new docs",
        "inspect µs/p",
        "sketch µs/p",
        "shard B/p",
        "merge µs/p",
        "map/insp"
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
        let pages = sk["records"].as_f64().unwrap_or(0.0).max(1.0);
        let new_docs = m["new_docs"].as_f64().unwrap_or(0.0);
        let shard_bytes = sk["shard_bytes"].as_f64().unwrap_or(0.0);
        println!(
            "{:<10} {:>8} {:>9} {:>16.0} {:>16.0} {:>10.0} {:>11.0} {:>8.0}%",
            label,
            pages,
            new_docs,
            1e6 * inspect_cpu / pages,
            1e6 * sketch_cpu / pages,
            shard_bytes / pages,
            1e6 * merge_s / pages,
            100.0 * inspect_cpu / sketch_cpu
        );
        rows.push(json!({
            "sweep": label, "pages": pages, "new_docs": new_docs,
            "inspect_seconds": inspect_s, "sketch_seconds": sketch_s, "merge_seconds": merge_s,
            "inspect_cpu_seconds": inspect_cpu, "sketch_cpu_seconds": sketch_cpu,
            "shard_bytes": shard_bytes, "shard_bytes_per_page": shard_bytes / pages,
            "map_rate_per_core_share_of_inspect": inspect_cpu / sketch_cpu,
            "merge_writer": m["writer"],
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
    // Merge seconds split into new-doc pages and the rest, by least squares over sweeps.
    let points: Vec<(f64, f64, f64)> = rows
        .iter()
        .map(|r| {
            (
                f(r, "new_docs"),
                f(r, "pages") - f(r, "new_docs"),
                f(r, "merge_seconds"),
            )
        })
        .collect();
    let (merge_new, merge_known) = fit2(&points);
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
    println!(
        "map: {:.0} µs a page on one core; merge: {:.0} µs a new-doc page, {:.0} µs a known page (one machine, 2 cores); steady sweeps {:.0}% new",
        1e6 * map_per_page,
        1e6 * merge_new,
        1e6 * merge_known,
        100.0 * steady_new
    );
    println!("projected wall time (map on E one-core executors, merge on one machine, pipelined: the larger of the two):");
    println!(
        "{:<12} {:<10} {:>12} {:>12} {:>12} {:>12}",
        "pages", "content", "merge", "E=10", "E=100", "E=1000"
    );
    let mut projection = Vec::new();
    for n in [1e8, 3e9] {
        for (what, share) in [("all new", 1.0), ("steady", steady_new)] {
            let merge = n * (share * merge_new + (1.0 - share) * merge_known);
            let walls: Vec<f64> = [10.0, 100.0, 1000.0]
                .iter()
                .map(|e| (n * map_per_page / e).max(merge))
                .collect();
            println!(
                "{:<12} {:<10} {:>12} {:>12} {:>12} {:>12}",
                format!("{:.0}M", n / 1e6),
                what,
                human(merge),
                human(walls[0]),
                human(walls[1]),
                human(walls[2])
            );
            projection.push(json!({"pages": n, "content": what, "new_share": share,
                "merge_seconds": merge, "map_seconds_per_executor_count": {"10": n * map_per_page / 10.0,
                "100": n * map_per_page / 100.0, "1000": n * map_per_page / 1000.0},
                "wall_seconds": {"10": walls[0], "100": walls[1], "1000": walls[2]}}));
        }
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "sweeps": rows, "map_seconds_per_page_per_core": map_per_page,
                "merge_seconds_per_new_page": merge_new, "merge_seconds_per_known_page": merge_known,
                "steady_new_share": steady_new, "projection": projection,
            }))
            .unwrap()
        );
    }
    ExitCode::SUCCESS
}
