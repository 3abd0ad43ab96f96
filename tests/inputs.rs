//! The files a command reads: directories (their WARC/ARC files, recursively, sorted)
//! and `--files-from` lists (a crawl of tens of thousands of files does not fit on a
//! command line) give the same index and the same output as the files named one by one.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{generate, sweep_files, tidemark};

fn run(args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// Runs tidemark with `args` followed by the paths of `files`.
fn run_on(args: &[&str], files: &[std::path::PathBuf]) -> std::process::Output {
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.extend(files.iter().map(|f| f.display().to_string()));
    run(&all.iter().map(|x| x.as_str()).collect::<Vec<_>>(), None)
}

fn export(db: &Path) -> Vec<u8> {
    let out = tidemark(&["--db", db.to_str().unwrap(), "export", "--format", "jsonl"]);
    assert!(out.status.success());
    out.stdout
}

#[test]
fn directories_and_file_lists_give_the_index_the_files_give() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 300, 2, 99);
    // The sweep's files in a nested layout, with a file that is not an archive beside.
    let nested = dir.path().join("nested");
    let files1 = sweep_files(dir.path(), 1);
    for (i, f) in files1.iter().enumerate() {
        let sub = nested.join(format!("part-{}", i % 2));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::copy(f, sub.join(f.file_name().unwrap())).unwrap();
    }
    std::fs::write(nested.join("README.txt"), "not a WARC").unwrap();
    let mut sorted: Vec<_> = walkdir(&nested);
    sorted.sort();

    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let s = |p: &Path| p.display().to_string();
    // A: the directory, then sweep 2 as a list on standard input.
    let out = run(
        &["--db", &s(&a), "ingest", "--sweep", "one", &s(&nested)],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: String = sweep_files(dir.path(), 2)
        .iter()
        .map(|f| format!("{}\n", f.display()))
        .collect();
    let out = run(
        &[
            "--db",
            &s(&a),
            "ingest",
            "--sweep",
            "two",
            "--files-from",
            "-",
        ],
        Some(&list),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // B: the same files named one by one.
    let args = ["--db", &s(&b), "ingest", "--sweep", "one"];
    let out = run_on(&args, &sorted);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let args = ["--db", &s(&b), "ingest", "--sweep", "two"];
    let out = run_on(&args, &sweep_files(dir.path(), 2));
    assert!(out.status.success());
    let (ea, eb) = (export(&a), export(&b));
    assert!(!ea.is_empty());
    assert_eq!(
        ea, eb,
        "a directory and a list give the index the files give"
    );

    // inspect: a directory and a list file print what the files print.
    let listfile = dir.path().join("list.txt");
    std::fs::write(
        &listfile,
        sorted
            .iter()
            .map(|f| format!("{}\n", f.display()))
            .collect::<String>(),
    )
    .unwrap();
    let by_dir = run(&["inspect", "--summary", "--json", &s(&nested)], None);
    let by_list = run(
        &[
            "inspect",
            "--summary",
            "--json",
            "--files-from",
            &s(&listfile),
        ],
        None,
    );
    let by_files = run_on(&["inspect", "--summary", "--json"], &sorted);
    assert!(by_files.status.success());
    assert_eq!(by_dir.stdout, by_files.stdout);
    assert_eq!(by_list.stdout, by_files.stdout);
}

#[test]
fn missing_paths_and_empty_directories_are_usage_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let db = dir.path().join("db");
    let s = |p: &Path| p.display().to_string();
    let out = run(
        &["--db", &s(&db), "ingest", "--sweep", "x", &s(&empty)],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains(&format!("{} is a directory without WARC", empty.display())));
    let out = run(
        &[
            "--db",
            &s(&db),
            "ingest",
            "--sweep",
            "x",
            "--files-from",
            "-",
        ],
        Some("/no/such.warc.gz\n"),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file: /no/such.warc.gz"));
    let out = run(&["inspect", "--files-from", "/no/such/list"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--files-from /no/such/list"));
    let out = run(&["inspect", "--files-from", "-"], Some("\n\n"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no input files"));
    assert!(
        !db.join("CURRENT").exists(),
        "nothing was created for a refused command"
    );
}

fn walkdir(d: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else if p.to_string_lossy().ends_with(".warc.gz") {
            out.push(p);
        }
    }
    out
}

#[test]
fn similar_on_a_damaged_file_exits_1_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 60, 1, 5);
    let db = dir.path().join("db");
    let files = sweep_files(dir.path(), 1);
    let s = |p: &Path| p.display().to_string();
    let args = ["--db", &s(&db), "ingest", "--sweep", "one"];
    assert!(run_on(&args, &files).status.success());
    // The first gzip member cut in half: damaged before any record is read.
    let bytes = std::fs::read(&files[0]).unwrap();
    let cut = dir.path().join("cut.warc.gz");
    std::fs::write(&cut, &bytes[..200]).unwrap();
    let out = run(&["--db", &s(&db), "similar", "--file", &s(&cut)], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "damaged input is exit 1: {err}");
    assert!(
        err.contains("cut.warc.gz") && err.contains("damaged") && err.contains("offset"),
        "{err}"
    );
    // The offset named is the damaged record's: the first, at 0.
    let offset: Option<u64> = err
        .split("offset ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok());
    assert_eq!(offset, Some(0), "{err}");
}

/// A sweep of more than 65,535 files (a Common Crawl month has 80,000–100,000): every
/// file keeps its captures. All hold the same URL at the same second, so their capture
/// keys differ only by the file's number — a 16-bit number would wrap and files 65,536
/// apart would overwrite each other.
#[test]
fn a_sweep_of_more_than_65535_files_keeps_every_capture() {
    use tidemark::synth::warc;
    const N: usize = 65_540;
    let dir = tempfile::tempdir().unwrap();
    let body =
        b"<html><body><p>the same page captured in every file of the sweep</p></body></html>";
    let block = warc::http_response(200, &[("Content-Type", "text/html")], body);
    let digest = tidemark::capture::sha1_base32(body);
    let rec = warc::response(
        "http://many.example/",
        "2026-01-01T00:00:00Z",
        Some(&digest),
        &block,
    );
    let mut list = String::new();
    for i in 0..N {
        let sub = dir.path().join(format!("{:03}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir(&sub).unwrap();
        }
        let path = sub.join(format!("f{i:06}.warc"));
        // Each file its own bytes (a file is known by its content, not its name).
        let mut bytes = rec.clone();
        bytes.extend_from_slice(&warc::record(
            &[
                ("WARC-Type", "metadata"),
                ("WARC-Date", "2026-01-01T00:00:00Z"),
            ],
            format!("file {i}").as_bytes(),
        ));
        std::fs::write(&path, bytes).unwrap();
        list.push_str(&format!("{}\n", path.display()));
    }
    let list_path = dir.path().join("files.txt");
    std::fs::write(&list_path, list).unwrap();
    let db = dir.path().join("db");
    let out = tidemark(&[
        "--db",
        db.to_str().unwrap(),
        "ingest",
        "--sweep",
        "big",
        "--json",
        "--files-from",
        list_path.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = export(&db);
    let n = lines
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert_eq!(n, N, "captures kept of {N} files");
    let sweeps = tidemark(&["--db", db.to_str().unwrap(), "sweeps", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&sweeps.stdout).unwrap();
    assert_eq!(v[0]["files"].as_array().map(|f| f.len()), Some(N));
}

/// A WARC record: its header fields (besides version and length) and block.
fn warc_record(fields: &[(&str, &str)], block: &str) -> String {
    let mut r = String::from("WARC/1.0\r\n");
    for (k, v) in fields {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str(&format!(
        "Content-Length: {}\r\n\r\n{block}\r\n\r\n",
        block.len()
    ));
    r
}

fn response(url: &str, date: &str, http_date: Option<&str>) -> String {
    let date_line = http_date.map_or(String::new(), |d| format!("Date: {d}\r\n"));
    let block = format!(
        "HTTP/1.1 200 OK\r\n{date_line}Content-Type: text/plain\r\n\r\nthe page at {url}\n"
    );
    let fields = [
        ("WARC-Type", "response"),
        ("WARC-Target-URI", url),
        ("WARC-Date", date),
        ("Content-Type", "application/http; msgtype=response"),
    ];
    warc_record(&fields, &block)
}

#[test]
fn a_date_that_cannot_be_read_falls_back_to_http_then_warcinfo_else_a_bad_record() {
    let dir = tempfile::tempdir().unwrap();
    // ClueWeb09's invalid date (day 294): the HTTP Date stands in; without one, nothing.
    let clueweb = "2008-10-294T05:21:46-0700";
    let first = response(
        "http://a.example/",
        clueweb,
        Some("Wed, 29 Oct 2008 12:21:40 GMT"),
    );
    let second = response("http://b.example/", clueweb, None);
    let a = dir.path().join("a.warc");
    std::fs::write(&a, format!("{first}{second}")).unwrap();
    let bad_offset = first.len();
    // With a warcinfo record before it, its date stands in.
    let info = warc_record(
        &[
            ("WARC-Type", "warcinfo"),
            ("WARC-Date", "2008-10-30T01:02:03Z"),
            ("Content-Type", "application/warc-fields"),
        ],
        "software: test\r\n",
    );
    let b = dir.path().join("b.warc");
    std::fs::write(
        &b,
        format!(
            "{info}{}",
            response("http://c.example/", "2008-13-01", None)
        ),
    )
    .unwrap();
    let db = dir.path().join("db");
    let out = run_on(
        &[
            "--db",
            db.to_str().unwrap(),
            "ingest",
            "--sweep",
            "s",
            "--json",
        ],
        &[a.clone(), b],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["skipped"]["no date"], 1, "{summary}");
    let bad = &summary["bad_records"];
    assert_eq!(bad.as_array().unwrap().len(), 1, "{summary}");
    assert_eq!(bad[0]["file"], a.display().to_string());
    assert_eq!(bad[0]["offset"], bad_offset);
    assert!(
        bad[0]["message"].as_str().unwrap().contains(clueweb),
        "{bad}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("a.warc: bad record at offset {bad_offset}")),
        "{stderr}"
    );
    let dates: std::collections::BTreeMap<String, String> = export(&db)
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (s("url"), s("fetch_time"))
        })
        .collect();
    let want = [
        ("http://a.example/", "20081029122140"),
        ("http://c.example/", "20081030010203"),
    ];
    let want: std::collections::BTreeMap<String, String> = want
        .iter()
        .map(|(u, t)| (u.to_string(), t.to_string()))
        .collect();
    assert_eq!(dates, want);
}
