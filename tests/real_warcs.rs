//! Every real WARC/ARC file of the shared corpus, read through the real binary:
//! record counts by type as an independent reader (warcio 1.8.1) counted them, and a
//! clear error (file, offset, no panic) for every damaged file.

mod common;

use std::collections::BTreeMap;

use common::{corpus, json_lines, tidemark};

/// warcio's type names → ours: trimmed, lower-cased, '' is "(missing)".
fn normalize(by_type: &serde_json::Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (k, v) in by_type.as_object().unwrap() {
        let k = k.trim().to_lowercase();
        let k = if k.is_empty() {
            "(missing)".to_string()
        } else {
            k
        };
        *out.entry(k).or_default() += v.as_u64().unwrap();
    }
    out
}

#[test]
fn every_readable_file_matches_the_independent_counts() {
    let Some(dir) = corpus() else { return };
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("expected-counts.json")).unwrap()).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n != "MANIFEST.md" && n != "expected-counts.json" && n != "bad")
        .collect();
    files.sort();
    assert!(
        files.len() >= 100,
        "corpus looks incomplete: {} files",
        files.len()
    );
    let paths: Vec<String> = files
        .iter()
        .map(|f| dir.join(f).to_string_lossy().to_string())
        .collect();
    let mut args = vec!["inspect", "--json", "--summary"];
    args.extend(paths.iter().map(|s| s.as_str()));
    let out = tidemark(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summaries = json_lines(&out);
    assert_eq!(summaries.len(), files.len());
    let mut mismatches = Vec::new();
    for (name, s) in files.iter().zip(&summaries) {
        let s = &s["summary"];
        assert!(s["file"].as_str().unwrap().ends_with(name.as_str()));
        let want = normalize(&expected[name]["by_type"]);
        let got: BTreeMap<String, u64> = s["by_type"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        let total: u64 = got.values().sum();
        assert_eq!(s["records"].as_u64().unwrap(), total);
        if want != got {
            mismatches.push(format!("{name}: expected {want:?}, got {got:?}"));
        }
        assert!(
            s["errors"].as_array().unwrap().is_empty(),
            "{name}: {}",
            s["errors"]
        );
    }
    assert!(
        mismatches.is_empty(),
        "record counts differ:\n{}",
        mismatches.join("\n")
    );
    println!(
        "{} files: record counts by type equal warcio's",
        files.len()
    );
}

/// Files in bad/ that are not damaged for tidemark, with the reason. Each must still
/// produce warnings that name an offset; all others must fail with an error.
const READABLE_BAD: &[(&str, &str)] = &[
    ("gowarc__skip-non-open.warc.gz", "a valid WARC compressed as one gzip stream: whole-file gzip is read (warcio refuses it by policy); a warning says record offsets are not addressable"),
    ("warcio__example-bad-non-chunked.warc.gz", "one gzip stream for the whole file: read, with the not-addressable warning"),
    ("warcio__example-bad.warc.gz.bad", "one gzip stream for the whole file: read, with the not-addressable warning"),
    ("warcio__example-wrong-chunks.warc.gz", "gzip members not aligned to records, but the decompressed stream frames exactly: read, with warnings"),
    ("iipc-webarchivecommons__link-extraction-test.warc", "records lack their CRLFCRLF separators, but every Content-Length frames its record exactly: read, with a warning per record"),
    ("cc-iawebcommons__IAH-20080430204825-00000-blackbook-truncated.arc", "ARC records lack their newline separators, but every length frames exactly: read, with warnings"),
    ("jwat__invalid-warcfile-lonely-revisit.warc", "a header-only revisit without Content-Length: read as an empty record with a warning (warcio crashes on it rather than rejecting it)"),
];

#[test]
fn every_damaged_file_gives_a_clear_error_and_no_panic() {
    let Some(dir) = corpus() else { return };
    let bad = dir.join("bad");
    let mut names: Vec<String> = std::fs::read_dir(&bad)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert!(names.len() >= 15);
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("expected-counts.json")).unwrap()).unwrap();
    for name in &names {
        let path = bad.join(name);
        let out = tidemark(&["inspect", "--json", path.to_str().unwrap()]);
        let code = out.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "{name}: exit {code:?} (a panic exits 101): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = json_lines(&out);
        let summary = &lines.last().expect("a summary line")["summary"];
        let records: Vec<_> = lines
            .iter()
            .filter(|l| l.get("summary").is_none())
            .collect();
        assert_eq!(records.len() as u64, summary["records"].as_u64().unwrap());
        let errors = summary["errors"].as_array().unwrap();
        if let Some((_, why)) = READABLE_BAD.iter().find(|(n, _)| n == name) {
            assert_eq!(code, Some(0), "{name}");
            let warnings = summary["warnings"].as_array().unwrap();
            assert!(
                !warnings.is_empty() && warnings.iter().all(|w| w["offset"].is_u64()),
                "{name} ({why}) gives no warning"
            );
            println!("{name}: read with {} warnings ({why})", warnings.len());
            continue;
        }
        assert_eq!(code, Some(1), "{name} was not reported as damaged");
        assert_eq!(errors.len(), 1, "{name}");
        let e = &errors[0];
        assert!(e["offset"].is_u64() && !e["message"].as_str().unwrap().is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(name.as_str()) && stderr.contains(&format!("offset {}", e["offset"])),
            "{name}: the error must name the file and offset: {stderr}"
        );
        // The good records before the damage are delivered: at least as many as the
        // independent reader delivered before it gave up, except where it delivered a
        // damaged record itself.
        let before = expected[format!("bad/{name}")]["records"]
            .as_u64()
            .unwrap_or(0);
        let damaged_record_delivered_by_warcio = [
            "resiliparse__clipped.warc.gz",
            "jwat__invalid-warcfile-fields-invalidformat.warc",
        ];
        if !damaged_record_delivered_by_warcio.contains(&name.as_str()) {
            assert!(
                records.len() as u64 >= before,
                "{name}: {} records delivered, warcio had {before}",
                records.len()
            );
        }
        println!("{name}: error at offset {}: {}", e["offset"], e["message"]);
    }
}

#[test]
fn arc_and_warc_twins_agree() {
    // aut's example ARC and WARC hold the same crawl: the same URLs with the same
    // statuses and the same canonical token counts.
    let Some(dir) = corpus() else { return };
    let run = |f: &str| {
        let out = tidemark(&["inspect", "--json", dir.join(f).to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0));
        let mut v: Vec<(String, u64, u64)> = json_lines(&out)
            .into_iter()
            .filter(|l| l["type"] == "response" && l["status"].is_u64())
            .map(|l| {
                (
                    l["url"].as_str().unwrap().to_string(),
                    l["status"].as_u64().unwrap(),
                    l["tokens"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        v.sort();
        v
    };
    let arc = run("aut__example.arc.gz");
    let warc = run("aut__example.warc.gz");
    // 299 responses, of which 261 are HTTP and the rest dns: look-ups (status 200, as
    // pywb's indexer gives them), as the MANIFEST says.
    assert_eq!(arc.len(), 299);
    let http = arc.iter().filter(|(u, _, _)| u.starts_with("http")).count();
    assert_eq!(http, 261);
    assert_eq!(arc, warc);
}

/// Hands out at most `n` bytes per read: every buffer boundary lands everywhere.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    n: usize,
}

impl std::io::Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.n.min(buf.len()).min(self.data.len() - self.at);
        buf[..k].copy_from_slice(&self.data[self.at..self.at + k]);
        self.at += k;
        Ok(k)
    }
}

#[test]
fn reading_does_not_depend_on_where_reads_end() {
    use tidemark::read::RecordReader;
    let Some(dir) = corpus() else { return };
    let names = [
        "pywb__example.warc.gz",
        "warciojs__example-bad-length.warc",
        "ipwb__HTTP204.warc",
        "aut__example.arc.gz",
        "jwat__valid-warcfile-fields-continuation.warc",
        "pywb__bad.arc",
        "bad/warcio__example-wrong-chunks.warc.gz",
        "bad/gowarc__corrupted-mid-record.warc.gz.open",
    ];
    let summary = |r: RecordReader| -> Vec<String> {
        r.map(|x| match x {
            Ok(r) => format!(
                "{} {} {} {} {:?} {}",
                r.offset,
                r.length,
                r.kind,
                r.block.len(),
                r.target_uri(),
                r.warnings.len()
            ),
            Err(e) => format!("error {e}"),
        })
        .collect()
    };
    for name in names {
        let data = std::fs::read(dir.join(name)).unwrap();
        let whole = summary(RecordReader::open(&dir.join(name), 16 << 20).unwrap());
        for n in [1, 2, 7, 4093] {
            let r = RecordReader::from_reader(
                Box::new(Trickle {
                    data: data.clone(),
                    at: 0,
                    n,
                }),
                16 << 20,
            )
            .unwrap();
            assert_eq!(summary(r), whole, "{name} read {n} bytes at a time");
        }
    }
}
