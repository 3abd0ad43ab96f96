//! `tidemark-bench`: throughput of the reading and sketching stages on generated sweeps,
//! next to `zcat` on the same files.
//!
//! ```text
//! tidemark-bench --dir bench-out --size 600MB        # generates the corpus once, then measures
//! tidemark-bench --dir bench-out --huge              # also: records of 1, 16 and 64 MB
//! ```
//! Figures are wall-clock seconds of whole passes over the files (best of `--repeat`),
//! MB = 10^6 bytes of uncompressed WARC.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// A line of the human-readable report: on stdout, or on stderr under `--json` (stdout
/// is then the JSON alone, for scripts).
macro_rules! say {
    ($json:expr, $($arg:tt)*) => {
        if $json {
            eprintln!($($arg)*)
        } else {
            println!($($arg)*)
        }
    };
}

mod content_bands;
mod map_reduce;

use clap::Parser;
use serde_json::json;
use tidemark::scan::{scan_files, ScanEvent, ScanOptions};
use tidemark::sketch::SketchParams;
use tidemark::synth::{generate, parse_size, warc, GenOptions};

// The same allocator as the `tidemark` binary, so in-process figures match it.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "tidemark-bench",
    about = "Measure read and read+canonicalize+sketch throughput against zcat"
)]
struct Args {
    /// Corpus directory; generated here when it holds no .warc.gz yet.
    #[arg(long, default_value = "bench-out")]
    dir: PathBuf,
    /// Uncompressed size of the generated sweep.
    #[arg(long, default_value = "600MB")]
    size: String,
    /// Passes per measurement; the best is reported.
    #[arg(long, default_value_t = 2)]
    repeat: usize,
    /// Also measure single huge records (1, 16, 64 MB) for linearity in record size.
    #[arg(long)]
    huge: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Measure ingest instead: generate --sweeps sweeps of --pages pages (if --dir holds
    /// none), ingest them one by one into a fresh index, and time each next to zcat.
    #[arg(long)]
    ingest: bool,
    /// Pages per sweep for --ingest.
    #[arg(long, default_value_t = 100_000)]
    pages: usize,
    /// Sweeps for --ingest.
    #[arg(long, default_value_t = 4)]
    sweeps: usize,
    /// For --ingest: generate sweeps of equal size (live pages held at --pages), as the
    /// cost-per-sweep target assumes.
    #[arg(long)]
    steady: bool,
    /// For --ingest: sweeps (from 2, comma-separated) in which every host changes its
    /// template, so that every page is a new doc resembling its predecessor (see
    /// `tidemark-gen --redesign`).
    #[arg(long, value_name = "N,N…", value_delimiter = ',')]
    redesign: Vec<usize>,
    /// For --ingest: ingest all sweeps this many times, each into a fresh index, and
    /// report the median time of each sweep.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Measure the map and merge stages of a distributed ingest instead, on the sweeps of
    /// --ingest: per sweep, `inspect` and `sketch` on one core and `ingest --sketches`
    /// of the shards; seconds per page of each stage (merge of new and known content
    /// apart), shard bytes per page, and the projected wall time of 100M- and 3B-page
    /// sweeps on 10, 100 and 1,000 Spark executors.
    #[arg(long)]
    map_reduce: bool,
    /// Measure query latency instead, on the index at --db: whereis, history and similar
    /// as library calls on --samples URLs spread over the index; median and p99.
    #[arg(long)]
    queries: bool,
    /// Index for --queries and --content-bands.
    #[arg(long, value_name = "DIR")]
    db: Option<PathBuf>,
    /// For --ingest: the tidemark configuration its ingests use (e.g. one with
    /// `cluster.resemblance = "full"` to measure edges on all shingles).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Check content resemblance on the index at --db against exact code: every changed
    /// URL's exact content Jaccard (all shingles of the pages in the index's own WARC
    /// files, each host's exact template per sweep left out) in the same band (≥ 0.9,
    /// 0.5–0.9, < 0.5) as the stored `content_resemblance_to_previous`; per transition.
    #[arg(long)]
    content_bands: bool,
    /// URLs sampled for --queries.
    #[arg(long, default_value_t = 2000)]
    samples: usize,
    /// Measure the per-file cost of ingest instead: for each N (comma-separated), one
    /// sweep of N one-record files given with --files-from; seconds and ms per file.
    #[arg(long, value_name = "N,N,…", value_delimiter = ',')]
    many_files: Vec<usize>,
}

fn warc_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(".warc.gz") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Best wall time of `repeat` runs of `f`.
fn best(repeat: usize, mut f: impl FnMut() -> u64) -> (f64, u64) {
    let mut best = f64::MAX;
    let mut out = 0;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        out = f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, out)
}

fn scan(files: &[PathBuf], threads: usize, read_only: bool) -> u64 {
    let opts = ScanOptions {
        threads,
        params: SketchParams::default(),
        record_cap: 16 << 20,
        // As an ingest reads them (`links.window`).
        anchor_window: 8,
        read_only,
        hold: 0,
    };
    let mut bytes = 0u64;
    scan_files(files, &opts, |ev| {
        if let ScanEvent::FileEnd {
            bytes: b, error, ..
        } = ev
        {
            assert!(error.is_none(), "damaged benchmark file: {error:?}");
            bytes += b;
        }
        true
    });
    bytes
}

fn zcat(files: &[PathBuf]) -> f64 {
    let t = Instant::now();
    for f in files {
        let st = Command::new("sh")
            .arg("-c")
            .arg(format!("zcat '{}' > /dev/null", f.display()))
            .status();
        assert!(
            st.is_ok_and(|s| s.success()),
            "zcat failed on {}",
            f.display()
        );
    }
    t.elapsed().as_secs_f64()
}

fn huge_records(dir: &Path) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    for mb in [1usize, 16, 64] {
        let path = dir.join(format!("huge-{mb}MB.warc.gz"));
        if !path.exists() {
            let mut body = Vec::with_capacity(mb << 20);
            body.extend_from_slice(b"<html><body><p>");
            let mut i = 0u64;
            while body.len() < (mb << 20) {
                body.extend_from_slice(format!("w{} ", (i * 2_654_435_761) % 50_000).as_bytes());
                i += 1;
            }
            let block = warc::http_response(200, &[("Content-Type", "text/html")], &body);
            let url = format!("http://example.com/{mb}");
            let rec = warc::response(&url, "2026-01-01T00:00:00Z", None, &block);
            std::fs::write(&path, warc::gzip_member(&rec, 6)).unwrap();
        }
        let files = vec![path];
        let (t, bytes) = best(3, || scan(&files, 1, false));
        rows.push(json!({"record_mb": mb, "seconds": t, "mb_per_s": bytes as f64 / 1e6 / t}));
    }
    rows
}

fn sweep_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.is_dir()
                        && p.file_name()
                            .unwrap()
                            .to_string_lossy()
                            .starts_with("sweep-")
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Median of a non-empty list.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One ingest of one sweep, as measured.
struct IngestRun {
    label: String,
    zcat: f64,
    secs: f64,
    warc_mb: f64,
    /// The index's bytes on disk after the sweep (`tidemark stats`).
    bytes: f64,
    summary: serde_json::Value,
}

/// The bytes on disk of the index at `db` (`tidemark stats --json`'s `bytes`).
fn index_bytes(exe: &Path, db: &Path) -> f64 {
    let st = Command::new(exe)
        .arg("--db")
        .arg(db)
        .args(["stats", "--json"])
        .output()
        .expect("run tidemark stats");
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap_or_default();
    v["bytes"].as_f64().unwrap_or(0.0)
}

/// Runs `tidemark --db DB ingest --sweep LABEL --json ARGS…`: its seconds and its JSON
/// summary, or `None` (said on stderr) when it failed.
fn timed_ingest(
    exe: &Path,
    db: &Path,
    label: &str,
    args: &[String],
) -> Option<(f64, serde_json::Value)> {
    let mut all: Vec<String> = vec!["--db".into(), db.display().to_string()];
    all.extend(["ingest", "--sweep", label, "--json"].map(String::from));
    all.extend(args.iter().cloned());
    map_reduce::run(exe, &all).map(|(secs, cpu, mut v)| {
        v["cpu_s"] = json!(cpu);
        (secs, v)
    })
}

/// One sweep of `n` one-record files per size: the cost per file must not grow with
/// the number of files (no per-file work proportional to the files before it).
fn bench_many_files(a: &Args) -> ExitCode {
    let exe = tidemark_exe();
    let body = b"<html><body><p>one record per file, the same page in each</p></body></html>";
    let block = warc::http_response(200, &[("Content-Type", "text/html")], body);
    let digest = tidemark::capture::sha1_base32(body);
    let mut rows = Vec::new();
    say!(
        a.json,
        "{:>8} {:>10} {:>12}",
        "files",
        "seconds",
        "ms per file"
    );
    for &n in &a.many_files {
        let dir = a.dir.join(format!("many-{n}"));
        let list = dir.join("files.txt");
        if !list.exists() {
            std::fs::create_dir_all(&dir).expect("create the files' directory");
            let mut names = String::new();
            for i in 0..n {
                let sub = dir.join(format!("{:03}", i / 1000));
                std::fs::create_dir_all(&sub).expect("create a subdirectory");
                let path = sub.join(format!("f{i:07}.warc.gz"));
                let url = format!("http://many.example/p{i}");
                let rec = warc::response(&url, "2026-01-01T00:00:00Z", Some(&digest), &block);
                std::fs::write(&path, warc::gzip_member(&rec, 1)).expect("write a file");
                names.push_str(&format!("{}\n", path.display()));
            }
            std::fs::write(&list, names).expect("write the list");
        }
        let db = dir.join("bench.db");
        let _ = std::fs::remove_dir_all(&db);
        let args = ["--files-from".into(), list.display().to_string()];
        let Some((secs, v)) = timed_ingest(&exe, &db, "many", &args) else {
            return ExitCode::from(1);
        };
        if v["captures"].as_u64() != Some(n as u64) {
            eprintln!("tidemark-bench: {n} files gave {} captures", v["captures"]);
            return ExitCode::from(1);
        }
        say!(
            a.json,
            "{n:>8} {secs:>10.2} {:>12.3}",
            1000.0 * secs / n as f64
        );
        rows.push(json!({"files": n, "seconds": secs, "ms_per_file": 1000.0 * secs / n as f64}));
        let _ = std::fs::remove_dir_all(&db);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows).unwrap());
    }
    ExitCode::SUCCESS
}

fn print_header(json: bool) {
    say!(
        json,
        "{:<10} {:>8} {:>8} {:>7} {:>8} {:>7} {:>8} {:>8} {:>7} {:>7} {:>9} {:>6}",
        "sweep",
        "captures",
        "new docs",
        "zcat s",
        "ingest s",
        "% zcat",
        "serial %",
        "pages/s",
        "cand/nd",
        "read/nd",
        "edges",
        "RSS MB"
    );
}

/// Cores the ingest rate is projected for.
const PROJECTED_CORES: [u32; 3] = [2, 16, 64];

/// Seconds of an ingest on `n` cores, from one measured on these 2: the committing
/// thread's serial work plus its waits for the pair step (which runs beside the commit
/// of the batch before, on every core: the waits shrink as 2/n), the batch writes'
/// CPU (a serial stage of their own, beside the commit), or all the CPU spread over n
/// cores, whichever is longest. Reading, decompressing and sketching are per record
/// and scale with n.
fn projection(serial: f64, pairs_wait: f64, write_cpu: f64, cpu: f64) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for n in PROJECTED_CORES {
        let n_f = n as f64;
        let t = (serial + 2.0 * pairs_wait / n_f)
            .max(write_cpu)
            .max(cpu / n_f);
        out.insert(n.to_string(), json!(t));
    }
    serde_json::Value::Object(out)
}

/// One sweep's line, and the writer's breakdown under it (seconds by stage).
fn print_row(json: bool, label: &str, v: &serde_json::Value, zcat: f64, secs: f64) {
    let new_docs = v["new_docs"].as_f64().unwrap_or(0.0).max(1.0);
    let w = &v["writer"];
    let f = |k: &str| w[k].as_f64().unwrap_or(0.0);
    say!(
        json,
        "{:<10} {:>8} {:>8} {:>7.2} {:>8.2} {:>6.0}% {:>7.0}% {:>8.0} {:>7.1} {:>7.1} {:>9} {:>6.0}",
        label,
        v["captures"].to_string(),
        v["new_docs"].to_string(),
        zcat,
        secs,
        100.0 * zcat / secs,
        100.0 * v["serial_s"].as_f64().unwrap_or(0.0) / secs,
        v["captures"].as_f64().unwrap_or(0.0) / secs,
        f("candidates") / new_docs,
        f("sketches_read") / new_docs,
        v["edges"].to_string(),
        v["peak_rss_mb"].as_f64().unwrap_or(0.0)
    );
    say!(
        json,
        "{:<10} writer s: wait {:.2}, (a) sequence {:.2}, (b) pairs: candidates {:.2}, estimate {:.2}, waited for {:.2}, (c) edges+unions {:.2}, captures {:.2}, waited for writes {:.2}, spill {:.2}, finish {:.2}; serial {:.2}; writes {:.2} (CPU {:.2}, a thread of their own); settled coarse / new doc {:.1}, sketch misses {}, edges stored {} ({} lists read), clusters found {}",
        "",
        f("wait_s"),
        f("sequence_s"),
        f("candidates_s"),
        f("estimate_s"),
        f("pairs_wait_s"),
        f("edges_unions_s"),
        f("captures_s"),
        f("write_wait_s"),
        f("spill_s"),
        f("finish_s"),
        v["serial_s"].as_f64().unwrap_or(0.0),
        f("write_s"),
        f("write_cpu_s"),
        f("settled_coarse") / new_docs,
        f("sketch_misses"),
        f("edges_stored"),
        f("edge_lists_read"),
        f("clusters_found")
    );
}

/// The `tidemark` binary beside this one (the one measured).
fn tidemark_exe() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("tidemark")))
        .expect("tidemark beside tidemark-bench")
}

/// The sweeps of --ingest and --map-reduce: generated into --dir unless it holds some.
fn ensure_sweeps(a: &Args) -> bool {
    if sweep_dirs(&a.dir).is_empty() {
        eprintln!(
            "generating {} {}sweeps of {} pages into {} …",
            a.sweeps,
            if a.steady { "steady " } else { "" },
            a.pages,
            a.dir.display()
        );
        let mut opts = GenOptions::for_size(a.dir.clone(), 13_000 * a.pages as u64, a.sweeps, 2026);
        opts.pages = a.pages;
        opts.steady = a.steady;
        opts.redesign = a.redesign.clone();
        if let Err(e) = generate(&opts, |l| eprintln!("  {l}")) {
            eprintln!("tidemark-bench: {e}");
            return false;
        }
    } else {
        eprintln!(
            "using the sweeps already in {} (--pages, --sweeps, --steady and --redesign apply only when it holds none)",
            a.dir.display()
        );
    }
    true
}

fn bench_ingest(a: &Args) -> ExitCode {
    if !ensure_sweeps(a) {
        return ExitCode::from(1);
    }
    let exe = tidemark_exe();
    let db = a.dir.join("bench.db");
    let dirs = sweep_dirs(&a.dir);
    let mut rounds: Vec<Vec<IngestRun>> = Vec::new();
    for round in 1..=a.rounds.max(1) {
        let _ = std::fs::remove_dir_all(&db);
        say!(
            a.json,
            "round {round} of {}, a fresh index at {}",
            a.rounds.max(1),
            db.display()
        );
        print_header(a.json);
        let mut runs = Vec::new();
        for dir in &dirs {
            let files = warc_files(dir);
            let t_zcat = zcat(&files);
            let label = dir.file_name().unwrap().to_string_lossy().to_string();
            let mut args: Vec<String> = Vec::new();
            if let Some(c) = &a.config {
                args.extend(["--config".into(), c.display().to_string()]);
            }
            args.extend(files.iter().map(|f| f.display().to_string()));
            let Some((secs, v)) = timed_ingest(&exe, &db, &label, &args) else {
                return ExitCode::from(1);
            };
            let warc_mb =
                v["mb_per_s"].as_f64().unwrap_or(0.0) * v["seconds"].as_f64().unwrap_or(0.0);
            print_row(a.json, &label, &v, t_zcat, secs);
            runs.push(IngestRun {
                label,
                zcat: t_zcat,
                secs,
                warc_mb,
                bytes: index_bytes(&exe, &db),
                summary: v,
            });
        }
        rounds.push(runs);
    }
    let st = Command::new(&exe)
        .arg("--db")
        .arg(&db)
        .args(["stats", "--json"])
        .output()
        .expect("run tidemark stats");
    let stats: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap_or_default();
    // Medians over rounds, per sweep: this machine's run-to-run noise (±20% on one
    // later sweep) is as large as the effects the targets are about.
    let mut rows = Vec::new();
    if rounds.len() > 1 {
        say!(a.json, "median of {} rounds", rounds.len());
        print_header(a.json);
    }
    for (i, first) in rounds[0].iter().enumerate() {
        let of = |f: &dyn Fn(&IngestRun) -> f64| median(rounds.iter().map(|r| f(&r[i])).collect());
        let (z, secs) = (of(&|r| r.zcat), of(&|r| r.secs));
        let rss_each: Vec<f64> = rounds
            .iter()
            .map(|r| r[i].summary["peak_rss_mb"].as_f64().unwrap_or(0.0))
            .collect();
        let rss_max = rss_each.iter().copied().fold(0.0, f64::max);
        let rss = median(rss_each);
        // The writer's breakdown, field by field, as medians too.
        let mut writer = serde_json::Map::new();
        if let Some(fields) = first.summary["writer"].as_object() {
            for k in fields.keys() {
                let m = of(&|r| r.summary["writer"][k].as_f64().unwrap_or(0.0));
                writer.insert(k.clone(), json!(m));
            }
        }
        let mut summary = first.summary.clone();
        summary["writer"] = serde_json::Value::Object(writer.clone());
        summary["peak_rss_mb"] = json!(rss);
        let serial = of(&|r| r.summary["serial_s"].as_f64().unwrap_or(0.0));
        let pairs = of(&|r| r.summary["pairs_s"].as_f64().unwrap_or(0.0));
        let pairs_wait = of(&|r| r.summary["writer"]["pairs_wait_s"].as_f64().unwrap_or(0.0));
        // The busier of the two threads of the RocksDB writes (encoding, applying).
        let write_cpu = of(&|r| {
            let w = &r.summary["writer"];
            let f = |k: &str| w[k].as_f64().unwrap_or(0.0);
            f("write_cpu_s").max(f("encode_cpu_s"))
        });
        let cpu = of(&|r| r.summary["cpu_s"].as_f64().unwrap_or(0.0));
        // What the sweep added to the index (each round's own growth), and the index.
        let added = median(
            (rounds.iter())
                .map(|r| r[i].bytes - if i == 0 { 0.0 } else { r[i - 1].bytes })
                .collect(),
        );
        let bytes = of(&|r| r.bytes);
        let new_docs = first.summary["new_docs"].as_f64().unwrap_or(0.0);
        summary["serial_s"] = json!(serial);
        if rounds.len() > 1 {
            print_row(a.json, &first.label, &summary, z, secs);
        }
        rows.push(json!({
            "sweep": first.label, "captures": first.summary["captures"],
            "new_docs": first.summary["new_docs"], "known_docs": first.summary["known_docs"],
            "warc_mb": first.warc_mb, "zcat_seconds": z, "ingest_seconds": secs,
            "ingest_seconds_each_round": rounds.iter().map(|r| r[i].secs).collect::<Vec<_>>(),
            "mb_per_s": first.warc_mb / secs, "share_of_zcat_rate": z / secs,
            "peak_rss_mb": rss, "peak_rss_mb_max": rss_max,
            "pages_per_s": first.summary["captures"].as_f64().unwrap_or(0.0) / secs,
            "edges": first.summary["edges"], "unions": first.summary["unions"],
            "serial_s": serial, "serial_share": serial / secs, "pairs_s": pairs, "cpu_s": cpu,
            "write_cpu_s": write_cpu,
            "index_bytes": bytes, "bytes_added": added,
            "bytes_added_per_new_doc": if new_docs > 0.0 { added / new_docs } else { 0.0 },
            "projected_seconds": projection(serial, pairs_wait, write_cpu, cpu),
            "writer": writer,
        }));
    }
    // The serial share and what more cores would make of each sweep ([`projection`]).
    say!(
        a.json,
        "{:<10} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9}",
        "sweep",
        "serial s",
        "write s",
        "pairs s",
        "CPU s",
        "2 cores",
        "16 cores",
        "64 cores"
    );
    for r in &rows {
        let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
        let p = |n: &str| r["projected_seconds"][n].as_f64().unwrap_or(0.0);
        say!(
            a.json,
            "{:<10} {:>8.2} {:>8.2} {:>8.2} {:>8.1} {:>8.1}s {:>8.1}s {:>8.1}s",
            r["sweep"].as_str().unwrap_or(""),
            f("serial_s"),
            f("write_cpu_s"),
            f("pairs_s"),
            f("cpu_s"),
            p("2"),
            p("16"),
            p("64")
        );
    }
    let mut targets = json!({});
    if rows.len() >= 3 {
        let secs = |r: &serde_json::Value| r["ingest_seconds"].as_f64().unwrap_or(0.0);
        let ratio = secs(&rows[rows.len() - 1]) / secs(&rows[1]);
        let share = |r: &serde_json::Value| r["share_of_zcat_rate"].as_f64().unwrap_or(0.0);
        let worst_share = rows[1..].iter().map(share).fold(f64::MAX, f64::min);
        let slowest = rows.iter().map(share).fold(f64::MAX, f64::min);
        say!(
            a.json,
            "last / second sweep: {ratio:.2} (target ≤ 1.2); slowest sweep at {:.0}% of the zcat rate (target ≥ 60%), slowest later one at {:.0}%",
            100.0 * slowest,
            100.0 * worst_share
        );
        let per_doc = |r: &serde_json::Value| r["bytes_added_per_new_doc"].as_f64().unwrap_or(0.0);
        let bytes_ratio = per_doc(&rows[rows.len() - 1]) / per_doc(&rows[1]);
        say!(
            a.json,
            "bytes added per new doc, last / second sweep: {bytes_ratio:.2} ({:.0} / {:.0})",
            per_doc(&rows[rows.len() - 1]),
            per_doc(&rows[1])
        );
        targets = json!({"last_over_second": ratio, "slowest_later_share_of_zcat_rate": worst_share,
            "slowest_share_of_zcat_rate": slowest,
            "last_over_second_bytes_per_new_doc": bytes_ratio});
    }
    say!(
        a.json,
        "index: {} docs, {} captures, {:.1} MB on disk, {:.0} bytes per doc",
        stats["docs"],
        stats["captures"],
        stats["bytes"].as_f64().unwrap_or(0.0) / 1e6,
        stats["bytes_per_doc"].as_f64().unwrap_or(0.0)
    );
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"rounds": rounds.len(), "sweeps": rows, "targets": targets, "stats": stats})
            )
            .unwrap()
        );
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let a = Args::parse();
    if a.ingest {
        return bench_ingest(&a);
    }
    if a.queries {
        return bench_queries(&a);
    }
    if a.map_reduce {
        return map_reduce::bench(&a);
    }
    if a.content_bands {
        return content_bands::bench(&a);
    }
    if !a.many_files.is_empty() {
        return bench_many_files(&a);
    }
    let mut files = warc_files(&a.dir);
    files.retain(|f| {
        !f.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("huge-")
    });
    if files.is_empty() {
        eprintln!("generating {} into {} …", a.size, a.dir.display());
        let Some(bytes) = parse_size(&a.size) else {
            eprintln!(
                "tidemark-bench: --size must look like 600MB or 2GB, not {:?}",
                a.size
            );
            return ExitCode::from(2);
        };
        let opts = GenOptions::for_size(a.dir.clone(), bytes, 1, 2026);
        if let Err(e) = generate(&opts, |l| eprintln!("  {l}")) {
            eprintln!("tidemark-bench: {e}");
            return ExitCode::from(1);
        }
        files = warc_files(&a.dir);
    }
    let compressed: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    eprintln!(
        "measuring {} files, {:.1} MB gzip …",
        files.len(),
        compressed as f64 / 1e6
    );
    let t_zcat = (0..a.repeat.max(1))
        .map(|_| zcat(&files))
        .fold(f64::MAX, f64::min);
    let (t_read, bytes) = best(a.repeat, || scan(&files, 1, true));
    let (t_one, _) = best(a.repeat, || scan(&files, 1, false));
    let (t_all, _) = best(a.repeat, || scan(&files, cores, false));
    let mb = bytes as f64 / 1e6;
    let huge = if a.huge {
        huge_records(&a.dir)
    } else {
        Vec::new()
    };
    let result = json!({
        "files": files.len(), "warc_mb": mb, "gzip_mb": compressed as f64 / 1e6, "cores": cores,
        "zcat": {"seconds": t_zcat, "mb_per_s": mb / t_zcat},
        "read_parse": {"seconds": t_read, "mb_per_s": mb / t_read},
        "read_canon_sketch_1_worker": {"seconds": t_one, "mb_per_s": mb / t_one, "vs_zcat": t_one / t_zcat},
        "read_canon_sketch_all_cores": {"seconds": t_all, "mb_per_s": mb / t_all, "vs_zcat": t_all / t_zcat, "workers": cores},
        "huge_records": huge,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&result).unwrap());
    } else {
        println!(
            "corpus: {} files, {:.1} MB WARC in {:.1} MB gzip; {} cores",
            files.len(),
            mb,
            compressed as f64 / 1e6,
            cores
        );
        println!(
            "{:<40} {:>8} {:>10} {:>9}",
            "stage", "seconds", "MB/s", "× zcat"
        );
        println!(
            "{:<40} {:>8.2} {:>10.1} {:>9.2}",
            "zcat FILE > /dev/null",
            t_zcat,
            mb / t_zcat,
            1.0
        );
        println!(
            "{:<40} {:>8.2} {:>10.1} {:>9.2}",
            "read + parse (1 reader)",
            t_read,
            mb / t_read,
            t_read / t_zcat
        );
        println!(
            "{:<40} {:>8.2} {:>10.1} {:>9.2}",
            "read + canonicalize + sketch, 1 worker",
            t_one,
            mb / t_one,
            t_one / t_zcat
        );
        println!(
            "{:<40} {:>8.2} {:>10.1} {:>9.2}",
            format!("read + canonicalize + sketch, {cores} workers"),
            t_all,
            mb / t_all,
            t_all / t_zcat
        );
        for h in &huge {
            println!(
                "one {:>3} MB record: {:.1} MB/s",
                h["record_mb"],
                h["mb_per_s"].as_f64().unwrap_or(0.0)
            );
        }
    }
    ExitCode::SUCCESS
}

/// Per-call latency of the queries on an existing index.
fn bench_queries(a: &Args) -> ExitCode {
    use tidemark::query::{history::history, similar, whereis, Searcher};
    let Some(db) = &a.db else {
        eprintln!("tidemark-bench --queries: give --db DIR (e.g. the index `--ingest` leaves in DIR/bench.db)");
        return ExitCode::from(2);
    };
    let config = tidemark::config::Config::default();
    let index = match tidemark::index::Index::open_read_only(db, &config) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("tidemark-bench: {e}");
            return ExitCode::from(2);
        }
    };
    let run = || -> Result<serde_json::Value, tidemark::index::IndexError> {
        let t = Instant::now();
        let s = Searcher::everything(&index)?;
        let open_ms = t.elapsed().as_secs_f64() * 1e3;
        let urls = tidemark::query::sample_urls(&index, a.samples)?;
        let wopts = whereis::WhereisOptions {
            move_floor: config.query.move_floor,
            links: true,
        };
        let sopts = similar::SimilarOptions {
            threshold: 0.5,
            containment: false,
            limit: 20,
        };
        // Warm the block cache once, as a long-running service would be.
        for u in &urls {
            whereis::whereis(&s, u, wopts)?;
        }
        let mut times: Vec<(&str, Vec<f64>)> = vec![
            ("whereis", Vec::new()),
            ("history", Vec::new()),
            ("similar", Vec::new()),
        ];
        let mut bytes = Vec::new();
        for u in &urls {
            let t = Instant::now();
            whereis::whereis(&s, u, wopts)?;
            times[0].1.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let h = history(&s, u, wopts, None)?;
            times[1].1.push(t.elapsed().as_secs_f64() * 1e3);
            if let Some(d) = h.captures.iter().rev().find_map(|c| c.doc) {
                let t = Instant::now();
                similar::similar(&s, &similar::Input::Url(u.clone()), &sopts)?;
                times[2].1.push(t.elapsed().as_secs_f64() * 1e3);
                if let Some(info) = index.doc(d)? {
                    bytes.push(info.bytes as f64);
                }
            }
        }
        bytes.sort_by(f64::total_cmp);
        let mut out = serde_json::Map::new();
        let captures: u64 = index
            .sweeps()
            .all(&tidemark::access::Reader::everything())?
            .iter()
            .map(|(_, s)| s.counts.captures)
            .sum();
        say!(
            a.json,
            "index: {captures} captures; {} URLs sampled",
            urls.len()
        );
        out.insert("captures".into(), json!(captures));
        out.insert("urls".into(), json!(urls.len()));
        out.insert("open_ms".into(), json!(open_ms));
        out.insert(
            "median_page_bytes".into(),
            json!(bytes.get(bytes.len() / 2).copied().unwrap_or(0.0)),
        );
        say!(
            a.json,
            "{:<8} {:>6} {:>10} {:>10} {:>10}",
            "query",
            "calls",
            "median ms",
            "p99 ms",
            "max ms"
        );
        for (name, mut t) in times {
            t.sort_by(f64::total_cmp);
            let q = |p: f64| t[((t.len() as f64 - 1.0) * p).round() as usize];
            say!(
                a.json,
                "{name:<8} {:>6} {:>10.3} {:>10.3} {:>10.3}",
                t.len(),
                q(0.5),
                q(0.99),
                q(1.0)
            );
            out.insert(
                name.into(),
                json!({"calls": t.len(), "median_ms": q(0.5), "p99_ms": q(0.99), "max_ms": q(1.0)}),
            );
        }
        Ok(serde_json::Value::Object(out))
    };
    match run() {
        Ok(v) => {
            if a.json {
                println!("{v}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tidemark-bench: {e}");
            ExitCode::from(1)
        }
    }
}
