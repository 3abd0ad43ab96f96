//! Access rules against the index they stand for: for each case (a host excluded, a
//! prefix excluded, one URL excluded, an embargo after a date that hides the newest
//! sweep, one before a date that hides the oldest, a user's allow), a server over the
//! whole index with the rules must answer as a server without rules over an index
//! built from the same WARC records with the hidden captures taken out — byte for
//! byte, once doc numbers are mapped through each doc's URL and date.
//!
//! The reference is made without moving a byte: the WARC files are read as plain
//! (uncompressed) copies, and in the reference's copies every hidden capture's record
//! has its type changed to one tidemark does not index, of the same length
//! (`response`/`resource` → `warcinfo`, `revisit` → `request`), so every other record
//! keeps its offset. A sweep all of whose captures are hidden is not ingested.
//!
//! What may still differ is listed in [`ALLOWED`], each with why; the test fails on
//! any other difference, and on an allowed one that no longer occurs (the list must
//! then shrink). With `DIFFDUMP=DIR` set, each kind's differing answers are written
//! to `DIR/{first sweep}-{case}-{N}.a` (the index with rules) and `….b` (the reference),
//! as compared.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::server::{enc, Server};
use common::{generate_redesign, tidemark_ok, truth};
use serde_json::Value;
use tidemark::access::{Acl, Embargo, Policy, Reader};
use tidemark::url::surt;

const COLL: &str = "tidemark";

/// The same for llvm-docs (see what each is for in [`ALLOWED`]).
const LLVM_ALLOWED: &[(&str, &str, &str, &str)] = &[
    ("*", "/api/sweeps", "[].captures", "whole-index counts"),
    ("*", "/api/sweeps", "[].edges", "whole-index counts"),
    ("*", "/api/sweeps", "[].files", "no file listed under rules"),
];

/// Differences that stay, by case, endpoint (the path up to `?`) and what differs
/// (the start of the field's path), with why. The guide's Serving page says the same.
const ALLOWED: &[(&str, &str, &str, &str)] = &[
    (
        "*",
        "/api/sweeps",
        "[].captures",
        "a sweep's counts are of the whole index, as /api/stats' (they name no URL)",
    ),
    (
        "*",
        "/api/sweeps",
        "[].edges",
        "a sweep's counts are of the whole index, as /api/stats' (they name no URL)",
    ),
    (
        "*",
        "/api/sweeps",
        "[].files",
        "no file is listed to a reader under rules (a file may hold only hidden captures)",
    ),
];

/// One case: its rules (pywb's `.aclj`), embargo (`before`, `after`) and user.
struct Case {
    name: &'static str,
    rules: String,
    embargo: (String, String),
    user: Option<&'static str>,
}

/// Plain copies of the `.warc.gz` files of `sweep` (a folder) in `out`, sorted.
fn plain_copies(sweep: &Path, out: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(out).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(sweep)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let mut bytes = Vec::new();
            flate2::read::MultiGzDecoder::new(std::fs::File::open(f).unwrap())
                .read_to_end(&mut bytes)
                .unwrap();
            let name = f
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace(".warc.gz", ".warc");
            let to = out.join(name);
            std::fs::write(&to, bytes).unwrap();
            to
        })
        .collect()
}

/// Plain copies of `n` sweeps under `work`: for sweep k (from 1), `folder_label(k)` names
/// its folder and its label.
fn plain_sweeps(
    work: &Path,
    n: usize,
    folder_label: impl Fn(usize) -> (PathBuf, String),
) -> Vec<(String, Vec<PathBuf>)> {
    (1..=n)
        .map(|k| {
            let (folder, label) = folder_label(k);
            (
                label,
                plain_copies(&folder, &work.join(format!("plain-{k}"))),
            )
        })
        .collect()
}

/// The records of a plain WARC file: (start of its header, end of its header, type,
/// target URI, 14-digit date).
fn records(bytes: &[u8]) -> Vec<(usize, usize, String, String, String)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(end) = find(&bytes[at..], b"\r\n\r\n").map(|e| at + e) else {
            break;
        };
        let head = String::from_utf8_lossy(&bytes[at..end]).to_string();
        let field = |name: &str| -> String {
            head.lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case(name)
                        .then(|| v.trim().to_string())
                })
                .unwrap_or_default()
        };
        let len: usize = field("Content-Length").parse().unwrap();
        let date = tidemark::timestamp::Timestamp14::from_warc_date(&field("WARC-Date"))
            .map(|t| t.as_str().to_string())
            .unwrap_or_default();
        out.push((at, end, field("WARC-Type"), field("WARC-Target-URI"), date));
        at = end + 4 + len + 4;
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The same file with every hidden capture's record made one tidemark does not index;
/// how many captures it kept and hid.
fn without_hidden(bytes: &[u8], hidden: &dyn Fn(&str, &str) -> bool) -> (Vec<u8>, usize, usize) {
    let mut out = bytes.to_vec();
    let (mut kept, mut hid) = (0, 0);
    for (start, end, kind, uri, date) in records(bytes) {
        let to = match kind.as_str() {
            "response" | "resource" => "warcinfo",
            "revisit" => "request",
            _ => continue,
        };
        if !hidden(&uri, &date) {
            kept += 1;
            continue;
        }
        hid += 1;
        let head = &mut out[start..end];
        let from = format!("WARC-Type: {kind}");
        let at = find(head, from.as_bytes()).expect("the type line");
        let with = format!("WARC-Type: {to}");
        assert_eq!(from.len(), with.len());
        head[at..at + with.len()].copy_from_slice(with.as_bytes());
    }
    (out, kept, hid)
}

fn ingest(db: &Path, label: &str, files: &[PathBuf]) {
    let mut args: Vec<String> = vec![
        "--db".into(),
        db.display().to_string(),
        "ingest".into(),
        "--sweep".into(),
        label.into(),
    ];
    args.extend(files.iter().map(|f| f.display().to_string()));
    tidemark_ok(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
}

/// (URL, 14-digit date) → doc, of every capture with one.
fn docs_by_capture(db: &Path) -> HashMap<(String, String), u64> {
    let out = tidemark_ok(&["--db", db.to_str().unwrap(), "export", "--format", "jsonl"]);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            Some((
                (
                    v["url"].as_str()?.to_string(),
                    v["fetch_time"].as_str()?.to_string(),
                ),
                v["doc"].as_u64()?,
            ))
        })
        .collect()
}

/// `v` with the doc numbers of fields `doc` and `cluster` mapped through `map`.
fn map_docs(v: &mut Value, map: &HashMap<u64, u64>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "doc" || k == "cluster" {
                    let n = x
                        .as_u64()
                        .or_else(|| x.as_str().and_then(|s| s.parse().ok()));
                    if let Some(m) = n.and_then(|n| map.get(&n)) {
                        *x = match x {
                            Value::String(_) => Value::String(m.to_string()),
                            _ => Value::from(*m),
                        };
                    }
                } else if let Some(m) = x
                    .as_str()
                    .and_then(|t| t.strip_prefix("doc "))
                    .and_then(|n| n.parse().ok())
                    .and_then(|n: u64| map.get(&n))
                {
                    // A query by doc is named "doc N".
                    *x = Value::String(format!("doc {m}"));
                } else {
                    map_docs(x, map);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| map_docs(x, map)),
        _ => {}
    }
}

/// A body with doc numbers mapped: JSON, JSON lines, CDXJ lines, or text as it is.
fn normalized(body: &[u8], map: &HashMap<u64, u64>) -> String {
    let text = String::from_utf8_lossy(body).to_string();
    if is_html(&text) {
        return html_mapped(&text, map);
    }
    if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
        map_docs(&mut v, map);
        return serde_json::to_string_pretty(&v).unwrap();
    }
    text.lines()
        .map(|l| {
            // JSON lines, or `urlkey timestamp {json}`.
            let (head, json) = match l.find('{') {
                Some(i) => (&l[..i], &l[i..]),
                None => return l.to_string(),
            };
            match serde_json::from_str::<Value>(json) {
                Ok(mut v) => {
                    map_docs(&mut v, map);
                    format!("{head}{v}")
                }
                Err(_) => l.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_html(text: &str) -> bool {
    (text.as_bytes().get(..15)).is_some_and(|h| h.eq_ignore_ascii_case(b"<!doctype html>"))
}

/// A page with the doc numbers it shows mapped (a cluster's name and its members').
fn html_mapped(text: &str, map: &HashMap<u64, u64>) -> String {
    let mut out = text.to_string();
    for (before, after) in [("<h2>Cluster ", " ("), ("data-label=\"doc\">", "</td>")] {
        let mut done = String::new();
        let mut rest = out.as_str();
        while let Some(i) = rest.find(before) {
            let (head, tail) = rest.split_at(i + before.len());
            done.push_str(head);
            let end = tail.find(after).unwrap_or(0);
            let n = tail[..end].parse::<u64>().ok();
            match n.and_then(|n| map.get(&n)) {
                Some(m) => done.push_str(&m.to_string()),
                None => done.push_str(&tail[..end]),
            }
            rest = &tail[end..];
        }
        done.push_str(rest);
        out = done;
    }
    out
}

/// Status and body of a request, the body preceded by the headers that name captures
/// (`Location`, `Link`, `Memento-Datetime`).
fn get(base: &str, path: &str, headers: &[(&str, &str)]) -> (u16, Vec<u8>) {
    let (st, hs, body) = common::server::no_follow(&format!("{base}{path}"), headers);
    let mut out = Vec::new();
    for (k, v) in hs {
        if ["location", "link", "memento-datetime"].contains(&k.to_ascii_lowercase().as_str()) {
            out.extend(format!("{k}: {v}\n").into_bytes());
        }
    }
    if out.is_empty() {
        return (st, body);
    }
    out.extend(body);
    (st, out)
}

/// The requests asked of both servers.
fn requests(urls: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, u) in urls.iter().enumerate() {
        let e = enc(u);
        // Diffs read WARC records and compare texts: a quarter of the URLs.
        if i % 4 == 0 {
            out.push(format!("/api/history?url={e}&diff=1"));
            out.push(format!("/?url={e}&diff=1"));
        }
        for q in [
            format!("/{COLL}?url={e}&output=json"),
            format!("/{COLL}?url={e}"),
            format!("/cdx/search/cdx?url={e}&output=json"),
            format!("/wayback/available?url={e}"),
            format!("/timemap/link/{u}"),
            format!("/api/whereis?url={e}"),
            format!("/api/history?url={e}"),
            format!("/?url={e}"),
            format!("/api/similar?url={e}&threshold=0.3"),
            format!("/api/cluster?url={e}"),
            format!("/timegate/{u}"),
            format!("/{COLL}/20300101id_/{u}"),
            format!("/{COLL}/20000101id_/{u}"),
        ] {
            out.push(q);
        }
    }
    let hosts: BTreeSet<&str> = urls.iter().filter_map(|u| u.split('/').nth(2)).collect();
    for h in hosts {
        let e = enc(h);
        out.push(format!("/{COLL}?url={e}&matchType=host&output=json"));
        out.push(format!("/cdx/search/cdx?url={e}/*&showNumPages=true"));
        out.push(format!(
            "/cdx/search/cdx?url={e}/*&page=1&pageSize=5&output=json"
        ));
        out.push(format!("/api/report?host={e}"));
        out.push(format!("/report?host={e}"));
        out.push(format!("/api/changes?host={e}&limit=1000&records=0"));
    }
    out.extend([
        "/api/sweeps".to_string(),
        "/api/report".to_string(),
        "/report".to_string(),
        "/".to_string(),
        "/api/changes?limit=1000&records=0".to_string(),
        "/api/changes?from=sweep-1&to=sweep-3&limit=1000&records=0".to_string(),
    ]);
    out
}

/// What is asked of a corpus: its sweeps' plain files (label, files), the URL excluded
/// exactly (a moved page's target), a URL whose folder is excluded, and the URLs asked.
struct Corpus {
    sweeps: Vec<(String, Vec<PathBuf>)>,
    moved_to: String,
    in_prefix: String,
    sample: usize,
}

#[test]
fn every_endpoint_answers_as_an_index_without_the_hidden_captures() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("corpus");
    generate_redesign(&dir, 300, 41);
    let sweeps = plain_sweeps(work.path(), 3, |k| {
        (dir.join(format!("sweep-{k:02}")), format!("sweep-{k}"))
    });
    // The targets of sweep 2's moves: one excluded exactly, one's folder.
    let moves = truth(&dir, 2)["moves"].as_array().unwrap().clone();
    let corpus = Corpus {
        sweeps,
        moved_to: moves[0]["to"].as_str().unwrap().to_string(),
        in_prefix: moves[1]["to"].as_str().unwrap().to_string(),
        sample: usize::MAX,
    };
    let found = differences(&corpus, work.path());
    check(&found, ALLOWED);
}

/// The same on llvm-docs: the LLVM and Clang manuals of five releases (two hosts).
#[test]
fn every_endpoint_answers_so_on_llvm_docs_too() {
    let Some(dir) = common::llvm_sweeps() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let sweeps = plain_sweeps(work.path(), 5, |k| {
        (dir.join(format!("s{k}")), format!("s{k}"))
    });
    // A page first captured in the third sweep (where moved pages land) and one in the
    // second sweep's folders.
    let urls_of = |k: usize| -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for f in &sweeps[k].1 {
            for (_, _, kind, uri, _) in records(&std::fs::read(f).unwrap()) {
                if kind == "response" && uri.ends_with(".html") {
                    out.insert(uri);
                }
            }
        }
        out
    };
    let (first, second, third) = (urls_of(0), urls_of(1), urls_of(2));
    let moved_to = third
        .iter()
        .find(|u| !first.contains(*u) && !second.contains(*u))
        .expect("a page new in the third sweep")
        .clone();
    let in_prefix = second
        .iter()
        .filter(|u| first.contains(*u))
        .nth(first.len() / 3)
        .expect("a page of the second sweep")
        .clone();
    let corpus = Corpus {
        sweeps,
        moved_to,
        in_prefix,
        sample: 150,
    };
    let found = differences(&corpus, work.path());
    check(&found, LLVM_ALLOWED);
}

/// Per (case, endpoint, field): the requests whose answers differ.
type Found = BTreeMap<(String, String, String), Vec<String>>;

fn differences(corpus: &Corpus, work: &Path) -> Found {
    let whole = work.join("whole");
    for (label, files) in &corpus.sweeps {
        ingest(&whole, label, files);
    }
    let whole_docs = docs_by_capture(&whole);
    let all_urls: BTreeSet<String> = whole_docs.keys().map(|(u, _)| u.clone()).collect();
    // Every URL, or `sample` spread evenly, with the excluded ones.
    let step = (all_urls.len() / corpus.sample.max(1)).max(1);
    let mut urls: BTreeSet<String> = all_urls.iter().step_by(step).cloned().collect();
    urls.extend([corpus.moved_to.clone(), corpus.in_prefix.clone()]);
    let sweeps: Value = serde_json::from_slice(
        &tidemark_ok(&["--db", whole.to_str().unwrap(), "sweeps", "--json"]).stdout,
    )
    .unwrap();
    let n = corpus.sweeps.len();
    let date = |k: usize| sweeps[k]["date"].as_str().unwrap()[..8].to_string();
    let moved_to = corpus.moved_to.clone();
    let host_of = |u: &str| u.split('/').nth(2).unwrap().to_string();
    let hosts: BTreeSet<String> = all_urls.iter().map(|u| host_of(u)).collect();
    let host = (hosts.iter())
        .find(|h| **h != host_of(&moved_to))
        .unwrap_or_else(|| hosts.iter().next().unwrap())
        .clone();
    let host_key = surt(&format!("http://{host}/"));
    let prefix_key = surt(&format!(
        "{}/",
        corpus.in_prefix.rsplit_once('/').unwrap().0
    ));
    let cases = vec![
        Case {
            name: "a host excluded",
            rules: format!("{} - {{\"access\": \"exclude\"}}\n", host_key.trim_end_matches('/')),
            embargo: Default::default(),
            user: None,
        },
        Case {
            name: "a prefix excluded",
            rules: format!("{prefix_key} - {{\"access\": \"exclude\"}}\n"),
            embargo: Default::default(),
            user: None,
        },
        Case {
            name: "a moved page's target excluded",
            rules: format!("{}### - {{\"access\": \"exclude\"}}\n", surt(&moved_to)),
            embargo: Default::default(),
            user: None,
        },
        Case {
            name: "an embargo hiding the newest sweep",
            rules: String::new(),
            embargo: (String::new(), format!("{}235959", date(n - 2))),
            user: None,
        },
        Case {
            name: "an embargo hiding the oldest sweep",
            rules: String::new(),
            embargo: (date(1), String::new()),
            user: None,
        },
        Case {
            name: "a host allowed to one user",
            rules: format!(
                "{h} - {{\"access\": \"exclude\"}}\n{h} - {{\"access\": \"allow\", \"user\": \"staff\"}}\n",
                h = host_key.trim_end_matches('/')
            ),
            embargo: Default::default(),
            user: Some("staff"),
        },
    ];
    let reqs = requests(&urls);
    let mut found: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    for case in &cases {
        let at = work.join(case.name.replace(' ', "-").replace('\'', ""));
        std::fs::create_dir_all(&at).unwrap();
        let acl = at.join("rules.aclj");
        std::fs::write(&acl, &case.rules).unwrap();
        let config = at.join("config.toml");
        std::fs::write(
            &config,
            format!(
                "[serve.embargo]\nbefore = \"{}\"\nafter = \"{}\"\n",
                case.embargo.0, case.embargo.1
            ),
        )
        .unwrap();
        // Who sees what: the library's reader over the same policy.
        let policy = Arc::new(Policy {
            rules: Acl::load(&[acl.clone()]).unwrap(),
            default: None,
            embargo: Embargo::parse("exclude", &case.embargo.0, &case.embargo.1, "", "").unwrap(),
            generation: 1,
        });
        let reader = Reader::of(policy.view(case.user.map(String::from)));
        let hidden = |uri: &str, ts: &str| !reader.visible(&surt(uri), ts);
        // The reference: the same records, the hidden ones not indexed.
        let reference = at.join("reference");
        for (k, (label, files)) in corpus.sweeps.iter().enumerate() {
            let out = at.join(format!("ref-{}", k + 1));
            std::fs::create_dir_all(&out).unwrap();
            let mut copies = Vec::new();
            let mut kept_all = 0;
            for f in files {
                let (bytes, kept, _) = without_hidden(&std::fs::read(f).unwrap(), &hidden);
                kept_all += kept;
                let to = out.join(f.file_name().unwrap());
                std::fs::write(&to, bytes).unwrap();
                copies.push(to);
            }
            if kept_all > 0 {
                ingest(&reference, label, &copies);
            }
        }
        let ref_docs = docs_by_capture(&reference);
        // Whole index's doc → the reference's, through a capture both hold.
        let mut map: HashMap<u64, u64> = HashMap::new();
        for (cap, d) in &whole_docs {
            if let Some(r) = ref_docs.get(cap) {
                map.entry(*d).or_insert(*r);
            }
        }
        let identity: HashMap<u64, u64> = ref_docs.values().map(|d| (*d, *d)).collect();
        let tested = Server::start(
            &whole,
            &["--config", config.to_str().unwrap()],
            &["--acl", acl.to_str().unwrap()],
        );
        let plain_server = Server::start(&reference, &[], &[]);
        let headers: Vec<(&str, &str)> = match case.user {
            Some(u) => vec![("X-Pywb-ACL-User", u)],
            None => vec![],
        };
        // Similar by doc: the reference's number of the same doc, or one it has not
        // (a doc only hidden captures hold is not there for the reader either).
        let mut by_doc: Vec<(String, String)> =
            reqs.iter().map(|q| (q.clone(), q.clone())).collect();
        let asked: BTreeSet<u64> = (whole_docs.iter())
            .filter(|((u, _), _)| urls.contains(u))
            .map(|(_, d)| *d)
            .collect();
        for d in asked {
            let r = map.get(&d).copied().unwrap_or(1_000_000_000 + d);
            by_doc.push((
                format!("/api/similar?doc={d}&threshold=0.3"),
                format!("/api/similar?doc={r}&threshold=0.3"),
            ));
        }
        for (q, q_ref) in &by_doc {
            let (st_a, a) = get(&tested.base, q, &headers);
            let (st_b, b) = get(&plain_server.base, q_ref, &[]);
            // Absolute links name each server's own address; a doc not found is named.
            let unnamed = |t: String, asked: &str| match asked.split_once("doc=") {
                Some((_, n)) => {
                    let n = n.split('&').next().unwrap();
                    t.replace(&format!("no doc {n} "), "no doc N ")
                }
                None => t,
            };
            let (a, b) = (
                unnamed(normalized(&a, &map).replace(&tested.base, "BASE"), q),
                unnamed(
                    normalized(&b, &identity).replace(&plain_server.base, "BASE"),
                    q_ref,
                ),
            );
            if st_a != st_b || a != b {
                let endpoint = q.split('?').next().unwrap().to_string();
                let endpoint = if endpoint.starts_with("/timemap/") {
                    "/timemap/link".to_string()
                } else if q.starts_with("/api/similar?doc=") {
                    "/api/similar (by doc)".to_string()
                } else {
                    endpoint
                };
                let what = first_difference(&a, &b);
                if let Ok(dir) = std::env::var("DIFFDUMP") {
                    // Named by corpus, case and kind (the two tests run at once).
                    let n = format!(
                        "{dir}/{}-{}-{}",
                        corpus.sweeps[0].0,
                        case.name.replace([' ', '\''], "-"),
                        found.len()
                    );
                    std::fs::write(format!("{n}.a"), format!("{q}\n{a}")).ok();
                    std::fs::write(format!("{n}.b"), format!("{q_ref}\n{b}")).ok();
                }
                found
                    .entry((case.name.to_string(), endpoint, what))
                    .or_default()
                    .push(format!("{}: {q} ({st_a} against {st_b})", case.name));
            }
        }
    }
    found
}

/// Fails on a difference `allowed` does not list, and on a listed one not found.
fn check(found: &Found, allowed: &[(&str, &str, &str, &str)]) {
    let allows = |(c, e, w): &(String, String, String),
                  (ac, ae, aw, _): &(&str, &str, &str, &str)| {
        (*ac == "*" || ac == c) && (*ae == "*" || ae == e) && w.contains(aw)
    };
    let mut unexpected = Vec::new();
    for (key, cases) in found {
        if !allowed.iter().any(|a| allows(key, a)) {
            unexpected.push(format!(
                "{} [{}]: {} answers, e.g. {}",
                key.1,
                key.2,
                cases.len(),
                cases[0]
            ));
        }
    }
    for (key, cases) in found {
        eprintln!("{} {} [{}]: {} answers", key.0, key.1, key.2, cases.len());
    }
    let stale: Vec<_> = (allowed.iter())
        .filter(|a| !found.keys().any(|k| allows(k, a)))
        .collect();
    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "{} kinds of difference not allowed:\n{}\nallowed but not found: {stale:?}",
        unexpected.len(),
        unexpected.join("\n")
    );
}

/// The first field (a JSON key, or `status`/`line`) where two answers differ.
fn first_difference(a: &str, b: &str) -> String {
    if is_html(a) {
        return html_difference(a, b);
    }
    let (va, vb) = (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    );
    if let (Ok(va), Ok(vb)) = (va, vb) {
        return json_difference(&va, &vb, "");
    }
    for (la, lb) in a.lines().zip(b.lines()) {
        if la != lb {
            if let (Some(i), Some(j)) = (la.find('{'), lb.find('{')) {
                if let (Ok(x), Ok(y)) = (
                    serde_json::from_str::<Value>(&la[i..]),
                    serde_json::from_str::<Value>(&lb[j..]),
                ) {
                    return json_difference(&x, &y, "line");
                }
            }
            return "a line".into();
        }
    }
    "the number of lines".into()
}

/// Where two pages first differ: under which heading (`html: HEADING`, digits as `#`).
fn html_difference(a: &str, b: &str) -> String {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let i = (0..la.len().max(lb.len()))
        .find(|&i| la.get(i) != lb.get(i))
        .unwrap_or(0);
    let heading = la[..=i.min(la.len().saturating_sub(1))]
        .iter()
        .rev()
        .find_map(|l| {
            let at = l.find("<h2")?;
            let text = &l[at..];
            let text = &text[text.find('>')? + 1..text.find("</h2>")?];
            Some(
                text.chars()
                    .map(|c| if c.is_ascii_digit() { '#' } else { c })
                    .collect(),
            )
        })
        .unwrap_or_else(|| "(above the first heading)".to_string());
    format!("html: {heading}")
}

fn json_difference(a: &Value, b: &Value, at: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (p, q) = (x.get(k), y.get(k));
                if p != q {
                    return match (p, q) {
                        (Some(p), Some(q)) => json_difference(p, q, &format!("{at}.{k}")),
                        _ => format!("{at}.{k} present in one"),
                    };
                }
            }
            format!("{at} (object)")
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (p, q) in x.iter().zip(y) {
                if p != q {
                    return json_difference(p, q, &format!("{at}[]"));
                }
            }
            format!("{at} (array)")
        }
        (Value::Array(_), Value::Array(_)) => format!("{at} length"),
        _ => at.to_string(),
    }
}
