//! `tidemark inspect` through the real binary: output format, exit codes, thread
//! independence, the record cap and gzip bombs.

mod common;

use common::{generate, json_lines, sweep_files, tidemark};
use tidemark::synth::warc;

fn gz(data: &[u8]) -> Vec<u8> {
    warc::gzip_member(data, 1)
}

fn response(url: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let block = warc::http_response(200, headers, body);
    warc::response(url, "2026-11-01T12:00:00Z", None, &block)
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    let out = tidemark(&["inspect"]);
    assert_eq!(out.status.code(), Some(2));
    let out = tidemark(&["inspect", "/no/such/file.warc.gz"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file: /no/such/file.warc.gz"));
    let out = tidemark(&["--threads", "0", "inspect", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let out = tidemark(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("inspect"));
    let cfg = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(cfg.path(), "[cluster]\nthreshhold = 0.7\n").unwrap();
    let out = tidemark(&["inspect", "--config", cfg.path().to_str().unwrap(), "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("threshhold"));
}

#[test]
fn json_records_then_a_summary_and_identical_for_1_and_n_threads() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 120, 2, 3);
    let mut files: Vec<String> = sweep_files(dir.path(), 1)
        .iter()
        .map(|p| p.to_string_lossy().to_string())
        .collect();
    files.extend(
        sweep_files(dir.path(), 2)
            .iter()
            .map(|p| p.to_string_lossy().to_string()),
    );
    let run = |threads: &str| {
        let mut args = vec!["--threads", threads, "inspect", "--json"];
        args.extend(files.iter().map(|s| s.as_str()));
        let out = tidemark(&args);
        assert_eq!(out.status.code(), Some(0));
        out.stdout
    };
    let one = run("1");
    assert_eq!(one, run("4"), "output must not depend on the thread count");
    let out = tidemark(&["inspect", "--json", &files[0]]);
    let lines = json_lines(&out);
    let rec = lines.iter().find(|l| l["type"] == "response").unwrap();
    for k in [
        "file", "offset", "type", "url", "date", "status", "tokens", "shingles", "sketch",
    ] {
        assert!(rec.get(k).is_some(), "missing {k}");
    }
    assert!(rec["date"].as_str().unwrap().len() == 14 && rec["tokens"].as_u64().unwrap() > 0);
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(
        summary["records"].as_u64().unwrap() as usize,
        lines.len() - 1
    );
    assert_eq!(summary["by_type"]["warcinfo"], 1);
    // Offsets are real gzip member offsets: each one starts a gzip member.
    let bytes = std::fs::read(&files[0]).unwrap();
    for l in &lines[..lines.len() - 1] {
        let o = l["offset"].as_u64().unwrap() as usize;
        assert_eq!(&bytes[o..o + 2], &[0x1f, 0x8b]);
    }
}

#[test]
fn records_over_the_cap_are_truncated_and_flagged_and_gzip_bombs_stop_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let mut big = b"<html><body><p>".to_vec();
    for i in 0..400_000 {
        big.extend_from_slice(format!("word{} ", i % 5000).as_bytes());
    }
    big.extend_from_slice(b"</p></body></html>");
    let bomb = gz(&vec![b'a'; 200 << 20]);
    let mut warc = gz(&response(
        "http://example.com/big",
        &[("Content-Type", "text/html")],
        &big,
    ));
    warc.extend(gz(&response(
        "http://example.com/bomb",
        &[("Content-Type", "text/plain"), ("Content-Encoding", "gzip")],
        &bomb,
    )));
    warc.extend(gz(&response(
        "http://example.com/small",
        &[("Content-Type", "text/html")],
        b"<p>hello world</p>",
    )));
    let path = dir.path().join("caps.warc.gz");
    std::fs::write(&path, &warc).unwrap();
    let cfg = dir.path().join("cap.toml");
    std::fs::write(&cfg, "[ingest]\nrecord_cap = 1048576\n").unwrap();
    let out = tidemark(&[
        "--config",
        cfg.to_str().unwrap(),
        "inspect",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["truncated"], true);
    assert!(
        lines[0]["tokens"].as_u64().unwrap() < 400_000
            && lines[0]["tokens"].as_u64().unwrap() > 50_000
    );
    assert_eq!(
        lines[1]["truncated"], true,
        "the 200 MB gzip payload must stop at the 1 MB cap"
    );
    assert!(lines[2].get("truncated").is_none());
    assert_eq!(lines[2]["tokens"], 2);
}

#[test]
fn a_broken_pipe_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 200, 1, 4);
    let f = sweep_files(dir.path(), 1)[0].to_string_lossy().to_string();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(["inspect", &f])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Damage found inside a gzip member (here a header line over the 64 KiB limit, in the
/// second member) is reported at the compressed offset of that member — where a reader
/// of the file can seek to it — not at a position in the decompressed stream.
#[test]
fn damage_in_a_gzip_file_is_reported_at_its_members_offset() {
    use tidemark::read::RecordReader;
    let first = gz(&response(
        "http://example.com/a",
        &[("Content-Type", "text/html")],
        b"<p>first</p>",
    ));
    let long = "x".repeat(70_000);
    let second = gz(&warc::record(
        &[("WARC-Type", "resource"), ("X-Long", &long)],
        b"body",
    ));
    let bytes = [first.clone(), second].concat();
    let items: Vec<_> = RecordReader::from_reader(Box::new(std::io::Cursor::new(bytes)), 1 << 20)
        .unwrap()
        .collect();
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(items[0].is_ok());
    let err = items[1].as_ref().unwrap_err();
    assert!(err.message.contains("header line longer"), "{err}");
    assert_eq!(err.offset, first.len() as u64, "{err}");
}
