//! Helpers shared by the integration tests: where the shared corpus is, and running the
//! real binaries.
#![allow(dead_code)]

pub mod server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `../shared/data/warcs` beside the clone (CI puts shared/ there).
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/warcs")
}

/// The corpus, or a loud skip when it is absent (never in CI, where shared/ is present).
pub fn corpus() -> Option<PathBuf> {
    let d = corpus_dir();
    if d.join("expected-counts.json").exists() {
        Some(d)
    } else {
        // CI clones shared/ beside the repository: there a missing corpus is a failure.
        assert!(
            std::env::var_os("CI").is_none(),
            "the shared WARC corpus is missing in CI (expected at {})",
            d.display()
        );
        eprintln!("SKIPPED: the shared WARC corpus is not at {}", d.display());
        None
    }
}

/// Runs the `tidemark` binary.
pub fn tidemark(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(args)
        .output()
        .expect("run tidemark")
}

/// Runs the `tidemark` binary and requires exit 0 (its stderr is the failure message).
pub fn tidemark_ok(args: &[&str]) -> Output {
    let out = tidemark(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "tidemark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the `tidemark-gen` binary.
pub fn tidemark_gen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tidemark-gen"))
        .args(args)
        .output()
        .expect("run tidemark-gen")
}

/// Lines of stdout parsed as JSON.
pub fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Runs the real generator: `pages` pages into `dir`, with `extra` options.
fn generate_with(dir: &Path, pages: usize, seed: u64, extra: &[&str]) {
    let (pages, seed) = (pages.to_string(), seed.to_string());
    let mut args = vec![
        "--out",
        dir.to_str().unwrap(),
        "--pages",
        &pages,
        "--seed",
        &seed,
    ];
    args.extend_from_slice(extra);
    let out = tidemark_gen(&args);
    assert!(
        out.status.success(),
        "tidemark-gen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Generates sweeps into `dir` with the real generator.
pub fn generate(dir: &Path, pages: usize, sweeps: usize, seed: u64) {
    generate_with(
        dir,
        pages,
        seed,
        &["--sweeps", &sweeps.to_string(), "--json"],
    );
}

/// Generates three steady sweeps of `pages` pages into `dir`, the third a site redesign
/// (every page a new doc resembling its predecessor: template families, over-cap lists).
pub fn generate_redesign(dir: &Path, pages: usize, seed: u64) {
    generate_with(
        dir,
        pages,
        seed,
        &["--sweeps", "3", "--steady", "--redesign", "3"],
    );
}

/// Generates three steady sweeps of `pages` pages into `dir` whose hosts have `sections`
/// sections each with a sidebar of its own: in sweep 2 every host's first section gets a
/// new sidebar (nothing else changes), sweep 3 is a site redesign.
pub fn generate_sections(dir: &Path, pages: usize, sections: usize, seed: u64) {
    let sections = sections.to_string();
    generate_with(
        dir,
        pages,
        seed,
        &[
            "--sweeps",
            "3",
            "--steady",
            "--sections",
            &sections,
            "--section-redesign",
            "2",
            "--redesign",
            "3",
        ],
    );
}

/// `tidemark-bench --content-bands --json` on the index `db`: per pair of sweeps, how
/// many changed URLs' stored content resemblance lands in the truth's band.
pub fn content_bands(db: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_tidemark-bench"))
        .args(["--content-bands", "--db", db.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tidemark-bench --content-bands: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The .warc.gz files of sweep `n` (1-based) in a generated directory, sorted.
pub fn sweep_files(dir: &Path, n: usize) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join(format!("sweep-{n:02}")))
        .expect("sweep dir")
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    v.sort();
    v
}

/// The ground truth of sweep `n`.
pub fn truth(dir: &Path, n: usize) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join(format!("sweep-{n:02}.truth.json"))).unwrap())
        .unwrap()
}

/// Ingests sweeps 1..=`sweeps` of a generated directory into `db` through the binary,
/// one `ingest` per sweep labelled `sweep-N`, with `extra` global options.
pub fn ingest_generated(dir: &Path, db: &Path, sweeps: usize, extra: &[&str]) {
    for k in 1..=sweeps {
        let mut args: Vec<String> = vec!["--db".into(), db.display().to_string()];
        args.extend(extra.iter().map(|x| x.to_string()));
        args.extend(["ingest".into(), "--sweep".into(), format!("sweep-{k}")]);
        args.extend(sweep_files(dir, k).iter().map(|f| f.display().to_string()));
        let out = tidemark(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
        assert_eq!(
            out.status.code(),
            Some(0),
            "ingest of sweep {k}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Starts `tidemark ARGS`, waits `delay`, and kills it (SIGKILL: no chance to clean up)
/// if it is still running: false when killed, true when it ended by itself (then it
/// must have succeeded).
pub fn run_or_kill(args: &[String], delay: std::time::Duration) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run tidemark");
    std::thread::sleep(delay);
    match child.try_wait().expect("child status") {
        Some(_) => {
            let out = child.wait_with_output().expect("child output");
            assert_eq!(
                out.status.code(),
                Some(0),
                "tidemark {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            true
        }
        None => {
            child.kill().expect("kill");
            child.wait().expect("reap");
            false
        }
    }
}

/// An export of the index at `db` in `format` (cdxj, jsonl).
pub fn export(db: &Path, format: &str) -> Vec<u8> {
    tidemark_ok(&[
        "--db",
        &db.display().to_string(),
        "export",
        "--format",
        format,
    ])
    .stdout
}

/// `sweeps --json` of the index at `db`.
pub fn sweeps(db: &Path) -> Vec<u8> {
    tidemark_ok(&["--db", &db.display().to_string(), "sweeps", "--json"]).stdout
}

/// Everything a user reads of an index: both exports, the sweeps' counts and the
/// change report.
pub fn same_index(a: &Path, b: &Path, what: &str) {
    same_index_with(a, b, what, &[]);
}

/// [`same_index`] with global options (e.g. `--config FILE`).
pub fn same_index_with(a: &Path, b: &Path, what: &str, global: &[&str]) {
    let read = |db: &Path, args: &[&str]| {
        let db = db.display().to_string();
        let mut all: Vec<&str> = global.to_vec();
        all.extend(["--db", &db]);
        all.extend(args);
        tidemark_ok(&all).stdout
    };
    for f in ["cdxj", "jsonl"] {
        let x = read(a, &["export", "--format", f]);
        assert!(!x.is_empty(), "{what}: empty {f} export");
        assert!(
            x == read(b, &["export", "--format", f]),
            "{what}: the {f} exports differ"
        );
    }
    assert_eq!(
        String::from_utf8(read(a, &["sweeps", "--json"])).unwrap(),
        String::from_utf8(read(b, &["sweeps", "--json"])).unwrap(),
        "{what}: the sweeps differ"
    );
    let report = ["report", "--format", "json"];
    assert!(
        read(a, &report) == read(b, &report),
        "{what}: the reports differ"
    );
}

/// The llvm-docs sweeps' folder (s1 … s5: the LLVM and Clang manuals of five releases,
/// `tools/llvm_sweeps.sh`, which `tools/test.sh` runs and names in
/// `TIDEMARK_LLVM_SWEEPS`), or a loud skip outside CI.
pub fn llvm_sweeps() -> Option<PathBuf> {
    match std::env::var("TIDEMARK_LLVM_SWEEPS") {
        Ok(d) if Path::new(&d).join("s5").is_dir() => Some(PathBuf::from(d)),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "TIDEMARK_LLVM_SWEEPS is not set in CI: tools/test.sh should have made the llvm-docs sweeps"
            );
            eprintln!("SKIPPED: TIDEMARK_LLVM_SWEEPS is not set (bash tools/test.sh makes the sweeps with tools/llvm_sweeps.sh)");
            None
        }
    }
}

/// The five llvm-docs sweeps of `dir` ingested one by one into `db`, as `tools/demo.sh`
/// does (sweeps `s1` … `s5`).
pub fn ingest_llvm(dir: &Path, db: &Path) {
    for i in 1..=5 {
        let sweep = dir.join(format!("s{i}"));
        tidemark_ok(&[
            "--db",
            db.to_str().unwrap(),
            "ingest",
            "--sweep",
            &format!("s{i}"),
            sweep.to_str().unwrap(),
        ]);
    }
}
