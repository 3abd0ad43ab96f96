//! Access rules and embargoes through the real service on generated sweeps: an index
//! with one URL of a redirect move and one of a content move excluded, one host
//! excluded (but for one user), one URL blocked and the last sweep under embargo is
//! asked about those URLs, their near-duplicates and their hosts on every endpoint in
//! every output format, and no answer may carry a byte that names what is hidden (the
//! same requests without the rules must name it, so the check can fail). Then: the
//! user header, the file reloaded, answers byte-identical where no rule applies, and
//! pywb 2.9.1 given the same `.aclj` hiding the same captures.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::server::{enc, no_follow, python, Pywb, Server};
use common::{generate, ingest_generated, tidemark_ok, truth};
use serde_json::Value;
use tidemark::timestamp::Timestamp14;
use tidemark::url::surt;

const COLL: &str = "tidemark";

/// One capture of the export.
#[derive(Debug, Clone)]
struct Cap {
    surt: String,
    ts: String,
    url: String,
    digest: Option<String>,
    doc: Option<u64>,
    /// The archived HTTP status.
    status: u16,
}

/// The corpus, its index, and what the rules hide.
struct Setup {
    dir: PathBuf,
    db: PathBuf,
    acl: PathBuf,
    config: PathBuf,
    caps: Vec<Cap>,
    /// Excluded: the target of a redirect move (an exact rule).
    redirect_to: String,
    redirect_from: String,
    /// Excluded: the target of a content move (a prefix rule).
    content_to: String,
    content_from: String,
    /// The excluded host, as a URL host and a SURT prefix.
    host: String,
    host_key: String,
    /// Listed, replay refused.
    blocked: String,
    /// Captures after this are under embargo.
    after: String,
}

impl Setup {
    fn hidden(&self, c: &Cap) -> bool {
        c.surt == surt(&self.redirect_to)
            || c.surt.starts_with(&surt(&self.content_to))
            || c.surt.starts_with(&self.host_key)
            || c.ts.as_str() > self.after.as_str()
    }

    /// What no answer of the rules' server may contain: the URLs and SURTs none of
    /// whose captures is visible, the digests and dates only hidden captures have, the
    /// excluded host's name.
    fn forbidden(&self) -> BTreeMap<String, &'static str> {
        let (hid, vis): (Vec<&Cap>, Vec<&Cap>) = self.caps.iter().partition(|c| self.hidden(c));
        let seen = |f: &dyn Fn(&Cap) -> Vec<String>| -> HashSet<String> {
            vis.iter().flat_map(|c| f(c)).collect()
        };
        let vis_urls = seen(&|c| vec![c.url.clone(), c.surt.clone()]);
        let vis_digests = seen(&|c| c.digest.clone().into_iter().collect());
        let vis_dates = seen(&|c| {
            vec![
                c.ts.clone(),
                Timestamp14::iso_of(&c.ts),
                Timestamp14::http_date_of(&c.ts),
            ]
        });
        let mut out = BTreeMap::new();
        for c in &hid {
            for (s, what) in [(&c.url, "url"), (&c.surt, "surt")] {
                // Only a whole token: a hidden URL that is a prefix of a visible one is
                // named by it (not the case in this corpus: paths end in .html).
                if !vis_urls.iter().any(|v| v.contains(s.as_str())) {
                    out.insert(s.clone(), what);
                }
            }
            if let Some(d) = c.digest.as_ref().filter(|d| !vis_digests.contains(*d)) {
                out.insert(d.clone(), "digest");
            }
            for d in [
                c.ts.clone(),
                Timestamp14::iso_of(&c.ts),
                Timestamp14::http_date_of(&c.ts),
            ] {
                if !vis_dates.contains(&d) {
                    out.insert(d, "date");
                }
            }
        }
        assert!(!vis_urls.iter().any(|u| u.contains(&self.host)));
        out.insert(self.host.clone(), "host");
        out
    }
}

fn setup() -> &'static Setup {
    static S: std::sync::OnceLock<Setup> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        generate(&dir, 300, 3, 7);
        let db = dir.join("db");
        ingest_generated(&dir, &db, 3, &[]);
        let out = tidemark_ok(&["--db", db.to_str().unwrap(), "export", "--format", "jsonl"]);
        let caps: Vec<Cap> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                Cap {
                    surt: v["url_surtkey"].as_str().unwrap().into(),
                    ts: v["fetch_time"].as_str().unwrap().into(),
                    url: v["url"].as_str().unwrap().into(),
                    digest: v["digest"].as_str().map(str::to_string),
                    doc: v["doc"].as_u64(),
                    status: v["fetch_status"].as_u64().unwrap_or(200) as u16,
                }
            })
            .collect();
        // The moves of sweep 2: one whose old URL redirects, one whose old URL went.
        let moves = truth(&dir, 2)["moves"].as_array().unwrap().clone();
        let host_of = |u: &str| u.split('/').nth(2).unwrap().to_string();
        let redirect = moves
            .iter()
            .find(|m| m["old_status"] == 301)
            .expect("a redirect move")
            .clone();
        let content = moves
            .iter()
            .find(|m| m["old_status"] != 301)
            .expect("a content move")
            .clone();
        let url = |m: &Value, k: &str| m[k].as_str().unwrap().to_string();
        let froms = [
            host_of(&url(&redirect, "from")),
            host_of(&url(&content, "from")),
        ];
        let tos = [
            host_of(&url(&redirect, "to")),
            host_of(&url(&content, "to")),
        ];
        // A host of neither move if there is one, else one the moved pages left from
        // neither (those stay visible: the question is what they say of the targets).
        let hosts: BTreeSet<String> = caps.iter().map(|c| host_of(&c.url)).collect();
        let host = (hosts.iter())
            .find(|h| !froms.contains(h) && !tos.contains(h))
            .or_else(|| hosts.iter().find(|h| !froms.contains(h)))
            .expect("a host the moves did not leave")
            .clone();
        let host_key = surt(&format!("http://{host}/"));
        let blocked = (caps.iter())
            .find(|c| c.doc.is_some() && !c.url.contains(&host) && c.ts.starts_with("20260101"))
            .unwrap()
            .url
            .clone();
        let sweeps: Value = serde_json::from_slice(
            &tidemark_ok(&["--db", db.to_str().unwrap(), "sweeps", "--json"]).stdout,
        )
        .unwrap();
        let d2 = sweeps[1]["date"].as_str().unwrap();
        let after = format!("{}235959", &d2[..8]);
        let s = Setup {
            acl: dir.join("rules.aclj"),
            config: dir.join("embargo.toml"),
            redirect_to: redirect["to"].as_str().unwrap().into(),
            redirect_from: redirect["from"].as_str().unwrap().into(),
            content_to: content["to"].as_str().unwrap().into(),
            content_from: content["from"].as_str().unwrap().into(),
            host_key: host_key.trim_end_matches('/').to_string() + "/",
            host,
            blocked,
            after: after.clone(),
            caps,
            dir,
            db,
        };
        // The embargo splits sweeps 2 and 3 (the generator's sweeps are minutes long).
        let ts3 = (s.caps.iter().map(|c| c.ts.as_str()))
            .filter(|t| *t > after.as_str())
            .min()
            .unwrap();
        assert!(ts3 >= sweeps[2]["date"].as_str().unwrap(), "{ts3}");
        write_rules(&s, &s.acl, true);
        std::fs::write(&s.config, format!("[serve.embargo]\nafter = \"{after}\"\n")).unwrap();
        s
    })
}

/// The rules (pywb's format) into `path`; with `host`, the host's two rules.
fn write_rules(s: &Setup, path: &Path, host: bool) {
    let mut rules = vec![
        format!("{}### - {{\"access\": \"exclude\"}}", surt(&s.redirect_to)),
        format!("{} - {{\"access\": \"block\"}}", surt(&s.blocked)),
        format!(
            "{} - {{\"access\": \"exclude\", \"url\": \"{}\"}}",
            surt(&s.content_to),
            s.content_to
        ),
    ];
    if host {
        rules.push(format!("{} - {{\"access\": \"exclude\"}}", s.host_key));
        rules.push(format!(
            "{} - {{\"access\": \"allow\", \"user\": \"staff\"}}",
            s.host_key
        ));
    }
    // pywb's files are sorted in reverse; tidemark reads them in any order.
    rules.sort();
    rules.reverse();
    // Written whole and renamed into place, as an ACL manager should.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, rules.join("\n") + "\n").unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// (status, headers, body) of `base` + `path`, redirects not followed.
fn get(base: &str, path: &str, headers: &[(&str, &str)]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    no_follow(&format!("{base}{path}"), headers)
}

/// Every request of the no-leak check: (path, the URL it asks about, if any). Replay
/// bodies are archived bytes, served as they were (a page may link anywhere): their
/// headers are checked, not their payloads.
fn requests(s: &Setup) -> Vec<(String, Option<String>, bool)> {
    let host_of = |u: &str| u.split('/').nth(2).unwrap().to_string();
    let t3 = truth(&s.dir, 3);
    let created3: Vec<String> = (t3["created"].as_array().unwrap().iter())
        .take(2)
        .map(|u| u.as_str().unwrap().to_string())
        .collect();
    let in_host: Vec<String> = (s.caps.iter())
        .filter(|c| c.url.contains(&s.host))
        .map(|c| c.url.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .take(2)
        .collect();
    // Near-duplicates: URLs sharing a doc with the moved content.
    let moved_docs: HashSet<u64> = (s.caps.iter())
        .filter(|c| c.url == s.content_to || c.url == s.redirect_to)
        .filter_map(|c| c.doc)
        .collect();
    let dupes: Vec<String> = (s.caps.iter())
        .filter(|c| c.doc.is_some_and(|d| moved_docs.contains(&d)))
        .map(|c| c.url.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut urls: Vec<String> = vec![
        s.redirect_from.clone(),
        s.redirect_to.clone(),
        s.content_from.clone(),
        s.content_to.clone(),
        s.blocked.clone(),
    ];
    urls.extend(in_host);
    urls.extend(created3);
    urls.extend(dupes);
    urls.sort();
    urls.dedup();
    let mut out: Vec<(String, Option<String>, bool)> = Vec::new();
    let mut ask = |p: String, u: Option<&str>| out.push((p, u.map(str::to_string), false));
    for u in &urls {
        let e = enc(u);
        let h = host_of(u);
        let domain = h.trim_start_matches("www.").to_string();
        for q in [
            format!("/{COLL}?url={e}"),
            format!("/{COLL}?url={e}&output=json"),
            format!("/{COLL}?url={e}&output=text"),
            format!("/{COLL}?url={e}&output=link"),
            format!("/{COLL}?url={e}&sort=closest&closest=20300101"),
            format!("/{COLL}?url={}&matchType=host", enc(&h)),
            format!("/{COLL}?url={}&matchType=domain&output=json", enc(&domain)),
            format!("/cdx/search/cdx?url={e}"),
            format!("/cdx/search/cdx?url={e}&output=json"),
            format!("/cdx/search/cdx?url={e}&fl=timestamp,original,digest,redirect"),
            format!("/cdx/search/cdx?url={}/*&showNumPages=true", enc(&h)),
            format!("/cdx/search/cdx?url={}/*&output=json&limit=-3", enc(&h)),
            format!(
                "/cdx/search/cdx?url={}&matchType=domain&showResumeKey=true&limit=7",
                enc(&domain)
            ),
            format!("/cdx/search/cdx?url={}/*&page=1&pageSize=5", enc(&h)),
            format!("/wayback/available?url={e}"),
            format!("/wayback/available?url={e}&timestamp=20300101"),
            format!("/timemap/link/{u}"),
            format!("/timemap/json/{u}"),
            format!("/timegate/{u}"),
            format!("/{COLL}/20300101id_/{u}"),
            format!("/api/whereis?url={e}"),
            format!("/api/history?url={e}&diff=1"),
            format!("/api/similar?url={e}&threshold=0.1"),
            format!("/api/cluster?url={e}"),
            format!("/api/related?url={e}"),
            format!("/api/inlinks?url={e}"),
            format!("/api/report?host={}", enc(&h)),
            format!("/api/changes?host={}&limit=200", enc(&h)),
            format!(
                "/api/changes?host={}&limit=1000&records=0&from=sweep-1",
                enc(&h)
            ),
            format!("/?url={e}"),
            format!("/report?host={}", enc(&h)),
        ] {
            ask(q, Some(u));
        }
    }
    // Every capture replayed (hidden: 404; blocked: 403).
    for c in &s.caps {
        if urls.contains(&c.url) {
            out.push((
                format!("/{COLL}/{}id_/{}", c.ts, c.url),
                Some(c.url.clone()),
                true,
            ));
        }
    }
    // The docs of hidden captures, asked by number.
    let docs: BTreeSet<u64> = (s.caps.iter())
        .filter(|c| s.hidden(c))
        .filter_map(|c| c.doc)
        .take(20)
        .collect();
    for d in docs {
        out.push((format!("/api/similar?doc={d}&threshold=0.1"), None, false));
    }
    for p in [
        "/api/report",
        "/api/changes?limit=200",
        "/api/changes?from=sweep-1&limit=200",
        "/api/changes?from=sweep-1&to=sweep-2&limit=1000&records=0",
        "/report",
        "/api/sweeps",
        "/api/stats",
        "/readyz",
        "/",
    ] {
        out.push((p.to_string(), None, false));
    }
    out
}

/// The forbidden strings each answer carries: (request, what, string).
fn leaks(
    base: &str,
    reqs: &[(String, Option<String>, bool)],
    forbidden: &BTreeMap<String, &'static str>,
    headers: &[(&str, &str)],
) -> Vec<(String, &'static str, String)> {
    let mut found = Vec::new();
    for (path, asked, replay) in reqs {
        let (status, hs, body) = get(base, path, headers);
        assert!(
            status < 500,
            "{path}: {status} {}",
            String::from_utf8_lossy(&body)
        );
        let mut text: String = hs.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
        if !replay {
            text.push_str(&String::from_utf8_lossy(&body));
        }
        // The URL asked is said back (`"url": …`): that names nothing the asker lacks.
        if let Some(u) = asked {
            text = text.replace(u.as_str(), "").replace(&enc(u), "");
        }
        for (s, what) in forbidden {
            if text.contains(s.as_str()) {
                found.push((path.clone(), *what, s.clone()));
            }
        }
    }
    found
}

#[test]
fn hidden_captures_exist_for_no_answer_and_the_check_would_see_them() {
    let s = setup();
    let forbidden = s.forbidden();
    let kinds: BTreeSet<&str> = forbidden.values().copied().collect();
    assert_eq!(
        kinds,
        ["date", "digest", "host", "surt", "url"]
            .into_iter()
            .collect(),
        "{forbidden:?}"
    );
    let reqs = requests(s);
    let db = s.db.to_str().unwrap();
    let open = Server::start(&s.db, &[], &[]);
    let before = leaks(&open.base, &reqs, &forbidden, &[]);
    drop(open);
    // Without the rules, every kind of hidden thing is named somewhere.
    let named: BTreeSet<&str> = before.iter().map(|l| l.1).collect();
    assert_eq!(named, kinds, "the check finds nothing to hide: {before:?}");
    let srv = Server::start(
        &s.db,
        &["--config", s.config.to_str().unwrap()],
        &["--acl", s.acl.to_str().unwrap()],
    );
    let after = leaks(&srv.base, &reqs, &forbidden, &[]);
    assert!(
        after.is_empty(),
        "{} answers name hidden captures, e.g. {:?} (of {} requests; {} leaks without the rules)",
        after.len(),
        &after[..after.len().min(8)],
        reqs.len(),
        before.len()
    );
    // A cluster counts only the docs it lists: the hidden ones neither.
    let mut shrunk = 0;
    for u in [&s.redirect_from, &s.content_from] {
        let (st, _, body) = get(&srv.base, &format!("/api/cluster?url={}", enc(u)), &[]);
        if st != 200 {
            continue;
        }
        let v: Value = serde_json::from_slice(&body).unwrap();
        let members = v["members"].as_array().unwrap().len() as u64;
        assert_eq!(v["size"].as_u64(), Some(members), "{v}");
        let open = tidemark_ok(&["--db", db, "cluster", u, "--json"]);
        let all: Value = serde_json::from_slice(&open.stdout).unwrap();
        shrunk += (all["size"].as_u64().unwrap() > members) as usize;
    }
    assert!(
        shrunk > 0,
        "no cluster of the moved pages held a hidden doc"
    );
    // Replay: hidden captures are 404, the blocked URL's 403, and it is still listed.
    for c in &s.caps {
        let path = format!("/{COLL}/{}id_/{}", c.ts, c.url);
        let (status, hs, _) = get(&srv.base, &path, &[]);
        let others: Vec<&Cap> = (s.caps.iter())
            .filter(|o| o.url == c.url && !s.hidden(o))
            .collect();
        let want = if !s.hidden(c) {
            if c.url == s.blocked {
                403
            } else {
                c.status
            }
        } else if others.is_empty() {
            404
        } else {
            // The date asked is a hint: the closest capture the reader may see.
            302
        };
        assert_eq!(status, want, "{path}");
        if s.hidden(c) && status == 302 {
            let to = hs.iter().find(|(k, _)| k == "location").unwrap().1.clone();
            assert!(
                others
                    .iter()
                    .any(|o| to.contains(&format!("/{}id_/", o.ts))),
                "{path} → {to}"
            );
        }
        if !s.hidden(c) && c.url != s.blocked {
            assert!(hs.iter().any(|(k, _)| k == "memento-datetime"), "{path}");
        }
    }
    let listed = get(&srv.base, &format!("/{COLL}?url={}", enc(&s.blocked)), &[]);
    assert_eq!(String::from_utf8_lossy(&listed.2).lines().count(), {
        (s.caps.iter())
            .filter(|c| c.url == s.blocked && !s.hidden(c))
            .count()
    });
}

#[test]
fn the_user_header_names_whose_rules_apply_and_changed_rules_apply_without_a_restart() {
    let s = setup();
    // A file of its own: the other tests read the shared one meanwhile.
    let own = tempfile::tempdir().unwrap();
    let acl = own.path().join("rules.aclj");
    write_rules(s, &acl, true);
    let srv = Server::start(
        &s.db,
        &["--config", s.config.to_str().unwrap()],
        &["--acl", acl.to_str().unwrap()],
    );
    let host_url = (s.caps.iter())
        .find(|c| c.url.contains(&s.host) && c.url != s.content_to && c.url != s.redirect_to)
        .unwrap()
        .url
        .clone();
    let rows = |url: &str, headers: &[(&str, &str)]| -> usize {
        let (st, _, body) = get(&srv.base, &format!("/{COLL}?url={}", enc(url)), headers);
        assert_eq!(st, 200);
        String::from_utf8_lossy(&body).lines().count()
    };
    let visible_to_staff = (s.caps.iter())
        .filter(|c| c.url == host_url && c.ts.as_str() <= s.after.as_str())
        .count();
    assert!(visible_to_staff > 0);
    assert_eq!(rows(&host_url, &[]), 0);
    assert_eq!(rows(&host_url, &[("X-Pywb-ACL-User", "guest")]), 0);
    assert_eq!(
        rows(&host_url, &[("X-Pywb-ACL-User", "staff")]),
        visible_to_staff,
        "the staff rule allows the host; the embargo still holds"
    );
    // Sent twice (a front end that appends its own after the client's), it names no
    // one; once, it does.
    let raw = |copies: usize| -> String {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(&srv.addr).unwrap();
        let users = "X-Pywb-ACL-User: staff\r\n".repeat(copies);
        let path = format!("/{COLL}?url={}", enc(&host_url));
        write!(
            c,
            "GET {path} HTTP/1.1\r\nHost: t\r\n{users}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        c.read_to_string(&mut answer).unwrap();
        answer
    };
    let key = surt(&host_url);
    assert!(raw(1).contains(&key));
    assert!(!raw(2).contains(&key), "a user header sent twice counted");
    // From an address not in serve.trusted_proxies the header changes nothing: every
    // answer is the one without it, byte for byte.
    let untrusted = own.path().join("untrusted.toml");
    let embargo = std::fs::read_to_string(&s.config).unwrap();
    std::fs::write(
        &untrusted,
        format!("[serve]\ntrusted_proxies = [\"10.0.0.1\", \"fd00::/8\"]\n\n{embargo}"),
    )
    .unwrap();
    let direct = Server::start(
        &s.db,
        &["--config", untrusted.to_str().unwrap()],
        &["--acl", acl.to_str().unwrap()],
    );
    for path in [
        format!("/{COLL}?url={}", enc(&host_url)),
        format!("/api/history?url={}", enc(&host_url)),
        format!("/api/whereis?url={}", enc(&host_url)),
        "/api/sweeps".to_string(),
    ] {
        let plain = get(&direct.base, &path, &[]);
        let as_staff = get(&direct.base, &path, &[("X-Pywb-ACL-User", "staff")]);
        assert_eq!((plain.0, &plain.2), (as_staff.0, &as_staff.2), "{path}");
    }
    drop(direct);
    // The host's rules removed from the file: its URLs are there for everyone.
    write_rules(s, &acl, false);
    let t = Instant::now();
    while rows(&host_url, &[]) != visible_to_staff {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the changed rules were not applied: {}",
            srv.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        srv.log().contains("now applying 3 access rules"),
        "{}",
        srv.log()
    );
    // A file that no longer reads keeps the rules in force, and the log says why.
    std::fs::write(&acl, "not a rule\n").unwrap();
    let t = Instant::now();
    while !srv.log().contains("were not reloaded") {
        assert!(t.elapsed() < Duration::from_secs(10), "{}", srv.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(srv.log().contains("line 1"), "{}", srv.log());
    assert_eq!(rows(&s.redirect_to, &[]), 0);
}

#[test]
fn where_no_rule_applies_the_answers_are_byte_identical() {
    let s = setup();
    // One public URL, so that the two servers' absolute links are the same.
    let own = tempfile::tempdir().unwrap();
    let config = own.path().join("public.toml");
    std::fs::write(&config, "[serve]\npublic_url = \"http://archive.test\"\n").unwrap();
    let c = ["--config", config.to_str().unwrap()];
    let open = Server::start(&s.db, &c, &[]);
    let ruled = Server::start(&s.db, &c, &["--acl", s.acl.to_str().unwrap()]);
    let urls: BTreeSet<&str> = (s.caps.iter())
        .filter(|c| {
            !c.url.contains(&s.host)
                && ![&s.redirect_to, &s.content_to, &s.blocked].contains(&&c.url)
        })
        .map(|c| c.url.as_str())
        .collect();
    let mut n = 0;
    for u in urls.iter().step_by(7) {
        for q in [
            format!("/{COLL}?url={}", enc(u)),
            format!("/{COLL}?url={}&output=json", enc(u)),
            format!("/cdx/search/cdx?url={}", enc(u)),
            format!("/timemap/link/{u}"),
        ] {
            let a = get(&open.base, &q, &[]);
            let b = get(&ruled.base, &q, &[]);
            assert_eq!((a.0, &a.2), (b.0, &b.2), "{q}");
            n += 1;
        }
    }
    assert!(n > 40, "{n}");
}

/// pywb 2.9.1 with a CDXJ index of the same captures and the same `.aclj` file hides
/// the same captures as tidemark.
#[test]
fn pywb_hides_what_tidemark_hides_with_the_same_rules() {
    let Some(py) = python() else { return };
    let s = setup();
    let work = tempfile::tempdir().unwrap();
    let index = work.path().join("index.cdxj");
    let out = tidemark_ok(&["--db", s.db.to_str().unwrap(), "export", "--format", "cdxj"]);
    std::fs::write(&index, &out.stdout).unwrap();
    std::fs::write(
        work.path().join("config.yaml"),
        format!(
            "collections:\n  tm:\n    index_paths: {}\n    acl_paths:\n      - {}\n",
            index.display(),
            s.acl.display()
        ),
    )
    .unwrap();
    let srv = Server::start(&s.db, &[], &["--acl", s.acl.to_str().unwrap()]);
    let pywb = Pywb::start(&py, work.path());
    let times = |base: &str, path: &str, user: Option<&str>| -> BTreeSet<String> {
        let hs: Vec<(&str, &str)> = user.map(|u| ("X-Pywb-ACL-User", u)).into_iter().collect();
        let (st, _, body) = get(base, path, &hs);
        assert_eq!(st, 200, "{base}{path}");
        (String::from_utf8_lossy(&body).lines())
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                format!(
                    "{} {}",
                    v["urlkey"].as_str().unwrap(),
                    v["timestamp"].as_str().unwrap()
                )
            })
            .collect()
    };
    let hosts: BTreeSet<String> = (s.caps.iter())
        .map(|c| c.url.split('/').nth(2).unwrap().to_string())
        .collect();
    let mut compared = 0;
    for h in &hosts {
        for user in [None, Some("staff")] {
            let q = format!("?url={}&matchType=host&output=json", enc(h));
            let ours = times(&srv.base, &format!("/{COLL}{q}"), user);
            let theirs = times(&pywb.base, &format!("/tm/cdx{q}"), user);
            assert_eq!(ours, theirs, "host {h}, user {user:?}");
            compared += ours.len();
        }
    }
    let all = s.caps.len();
    assert!(compared > all / 2, "{compared} of {all}");
    // And both hide something: the host for everyone but staff, the moves' targets.
    let hidden_here = (s.caps.iter())
        .filter(|c| c.surt.starts_with(&s.host_key) || c.url == s.redirect_to)
        .count();
    assert!(hidden_here > 0);
}

/// A host the rules exclude is not told of by the report's template changes (its stored
/// templates are the index's, not the reader's), in JSON or HTML; the other hosts'
/// changes are still named.
#[test]
fn the_report_names_no_template_change_of_an_excluded_host() {
    let dir = tempfile::tempdir().unwrap();
    common::generate_redesign(dir.path(), 400, 11);
    let db = dir.path().join("db");
    ingest_generated(dir.path(), &db, 3, &[]);
    let named = |srv: &Server| -> BTreeSet<String> {
        let (status, _, body) = get(&srv.base, "/api/report", &[]);
        assert_eq!(status, 200);
        let v: Value = serde_json::from_slice(&body).unwrap();
        (v["transitions"].as_array().unwrap().iter())
            .flat_map(|t| t["template_changes"].as_array().unwrap().clone())
            .map(|c| c["host"].as_str().unwrap().to_string())
            .collect()
    };
    let open = Server::start(&db, &[], &[]);
    let before = named(&open);
    drop(open);
    assert!(
        before.len() >= 2,
        "the redesign changes several hosts' templates: {before:?}"
    );
    let host = before.iter().next().unwrap().clone();
    let acl = dir.path().join("host.aclj");
    let key = surt(&format!("http://{host}/"));
    std::fs::write(
        &acl,
        format!(
            "{} - {{\"access\": \"exclude\"}}\n",
            key.trim_end_matches('/')
        ),
    )
    .unwrap();
    let srv = Server::start(&db, &[], &["--acl", acl.to_str().unwrap()]);
    let after = named(&srv);
    assert!(
        !after.contains(&host),
        "{host} excluded, still named: {after:?}"
    );
    assert_eq!(after.len(), before.len() - 1, "{before:?} → {after:?}");
    let (_, _, page) = get(&srv.base, "/report", &[]);
    assert!(
        !String::from_utf8_lossy(&page).contains(&host),
        "{host} in the HTML report"
    );
}

/// Under an embargo that hides the newest sweep, a page deleted in that sweep is what
/// the sweeps the reader may see say: alive, as an index without the hidden sweep would
/// answer (not gone: the hidden sweep's absence of it is not told). Without the embargo
/// the same page is gone, so the check can fail.
#[test]
fn whereis_under_an_embargo_reads_no_hidden_sweep() {
    let s = setup();
    let deleted: Vec<String> = (truth(&s.dir, 3)["deleted"].as_array().unwrap().iter())
        .map(|u| u["url"].as_str().unwrap().to_string())
        .filter(|u| !u.contains(&s.host))
        .take(5)
        .collect();
    assert!(!deleted.is_empty());
    let open = Server::start(&s.db, &[], &[]);
    let embargoed = Server::start(&s.db, &["--config", s.config.to_str().unwrap()], &[]);
    // The reference: an index of sweeps 1 and 2 alone.
    let two = s.dir.join("db-two-sweeps");
    if !two.exists() {
        ingest_generated(&s.dir, &two, 2, &[]);
    }
    let reference = Server::start(&two, &[], &[]);
    for u in &deleted {
        let ask = |srv: &Server| -> Value {
            let (st, _, body) = get(&srv.base, &format!("/api/whereis?url={}", enc(u)), &[]);
            assert_eq!(st, 200, "{u}: {}", String::from_utf8_lossy(&body));
            serde_json::from_slice(&body).unwrap()
        };
        assert_eq!(ask(&open)["status"], "gone", "{u}");
        let (seen, want) = (ask(&embargoed), ask(&reference));
        assert_eq!(seen["status"], want["status"], "{u}: {seen} against {want}");
        assert_ne!(seen["status"], "gone", "{u}: {seen}");
    }
}

/// A cluster is named by its smallest doc the reader may see: the CDX `cluster` field
/// never carries the number of a doc whose every capture is hidden (without the rules
/// some answers do, so the check can fail), and `/api/cluster` names its first member.
#[test]
fn a_cluster_is_named_by_a_doc_the_reader_may_see() {
    let s = setup();
    let hidden_docs: HashSet<u64> = (s.caps.iter())
        .filter(|c| s.hidden(c))
        .filter_map(|c| c.doc)
        .collect();
    let seen_docs: HashSet<u64> = (s.caps.iter())
        .filter(|c| !s.hidden(c))
        .filter_map(|c| c.doc)
        .collect();
    let only_hidden: HashSet<u64> = hidden_docs.difference(&seen_docs).copied().collect();
    let srv = Server::start(
        &s.db,
        &["--config", s.config.to_str().unwrap()],
        &["--acl", s.acl.to_str().unwrap()],
    );
    let open = Server::start(&s.db, &[], &[]);
    let hosts: BTreeSet<String> = (s.caps.iter())
        .map(|c| c.url.split('/').nth(2).unwrap().to_string())
        .collect();
    let clusters = |srv: &Server, host: &str| -> Vec<u64> {
        let q = format!(
            "/{COLL}?url={}&matchType=host&output=json&fl=cluster",
            enc(host)
        );
        let (st, _, body) = get(&srv.base, &q, &[]);
        assert!(st == 200 || st == 404, "{q}: {st}");
        String::from_utf8_lossy(&body)
            .lines()
            .filter_map(|l| {
                let v: Value = serde_json::from_str(l).ok()?;
                let c = &v["cluster"];
                c.as_u64()
                    .or_else(|| c.as_str().and_then(|c| c.parse().ok()))
            })
            .collect()
    };
    let mut named_hidden = 0;
    for h in &hosts {
        named_hidden += (clusters(&open, h).iter())
            .filter(|c| only_hidden.contains(c))
            .count();
        for c in clusters(&srv, h) {
            assert!(
                seen_docs.contains(&c),
                "{h}: cluster {c} is no doc the reader may see"
            );
        }
    }
    assert!(
        named_hidden > 0,
        "no cluster is named by a hidden doc without the rules"
    );
    for u in [&s.redirect_from, &s.content_from] {
        let (st, _, body) = get(&srv.base, &format!("/api/cluster?url={}", enc(u)), &[]);
        if st == 200 {
            let v: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(
                v["cluster"], v["members"][0]["doc"],
                "/api/cluster {u}: {v}"
            );
        }
    }
}

/// A blocked capture's text is not shown through `history`'s diff (replay refuses it;
/// without the rule the diff is there, so the check can fail).
#[test]
fn a_blocked_capture_s_text_is_not_shown_by_history_s_diff() {
    let s = setup();
    // A page edited in sweep 2, away from the excluded host, blocked by a rule of its own.
    let edited = (truth(&s.dir, 2)["edits"].as_array().unwrap().iter())
        .filter_map(|e| e["url"].as_str())
        .find(|u| !u.contains(&s.host))
        .expect("an edit")
        .to_string();
    let rules = s.dir.join("block-edited.aclj");
    std::fs::write(
        &rules,
        format!("{}### - {{\"access\": \"block\"}}\n", surt(&edited)),
    )
    .unwrap();
    let ask = |srv: &Server| -> Vec<Value> {
        let q = format!("/api/history?url={}&diff=1", enc(&edited));
        let (st, _, body) = get(&srv.base, &q, &[]);
        assert_eq!(st, 200, "{q}: {}", String::from_utf8_lossy(&body));
        let v: Value = serde_json::from_slice(&body).unwrap();
        (v["captures"].as_array().unwrap().iter())
            .filter(|x| x["change"] == "changed")
            .cloned()
            .collect()
    };
    let open = Server::start(&s.db, &[], &[]);
    let shown = ask(&open);
    assert!(
        shown.iter().any(|v| v["changes"].is_object()),
        "no diff of {edited} without the rule: {shown:?}"
    );
    let srv = Server::start(&s.db, &[], &["--acl", rules.to_str().unwrap()]);
    let hidden = ask(&srv);
    assert!(!hidden.is_empty());
    for v in hidden {
        assert!(v["changes"].is_null(), "{v}");
        assert_eq!(
            v["diff"], "(a capture is blocked by the access rules)",
            "{v}"
        );
    }
}

/// Under an embargo `before` the second sweep, the first visible capture of a URL does
/// not carry its resemblance to the hidden one before it (that would say the hidden
/// capture exists, and how alike it was); the captures after it do. Without the
/// embargo the same captures carry it, so the check can fail.
#[test]
fn no_resemblance_is_told_to_a_capture_the_reader_may_not_see() {
    let s = setup();
    let sweeps: Value = serde_json::from_slice(
        &tidemark_ok(&["--db", s.db.to_str().unwrap(), "sweeps", "--json"]).stdout,
    )
    .unwrap();
    let d2 = &sweeps[1]["date"].as_str().unwrap()[..8];
    let d3 = &sweeps[2]["date"].as_str().unwrap()[..8];
    let config = s.dir.join("embargo-before.toml");
    std::fs::write(&config, format!("[serve.embargo]\nbefore = \"{d2}\"\n")).unwrap();
    let open = Server::start(&s.db, &[], &[]);
    let srv = Server::start(&s.db, &["--config", config.to_str().unwrap()], &[]);
    let host = s.redirect_from.split('/').nth(2).unwrap().to_string();
    let rows = |srv: &Server| -> Vec<(String, Value)> {
        let q = format!(
            "/{COLL}?url={}&matchType=host&output=json&fl=timestamp,resemblance_to_previous",
            enc(&host)
        );
        let (st, _, body) = get(&srv.base, &q, &[]);
        assert_eq!(st, 200, "{q}");
        String::from_utf8_lossy(&body)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["timestamp"].as_str().unwrap().to_string(),
                    v["resemblance_to_previous"].clone(),
                )
            })
            .collect()
    };
    let told = |rows: &[(String, Value)], from: &str, to: &str| {
        (rows.iter())
            .filter(|(t, r)| t.as_str() >= from && t.as_str() < to && !r.is_null())
            .count()
    };
    let all = rows(&open);
    assert!(
        told(&all, d2, d3) > 0,
        "no capture of sweep 2 carries a resemblance"
    );
    let seen = rows(&srv);
    assert!(
        seen.iter().all(|(t, _)| t.as_str() >= d2),
        "a hidden capture was listed"
    );
    assert_eq!(told(&seen, d2, d3), 0, "sweep 2 told of sweep 1: {seen:?}");
    // Sweep 3's are told, but for revisits of content first captured in sweep 1 (their
    // content is a hidden record's: none for this reader).
    assert!(told(&seen, d3, "9") > 0, "sweep 3's were dropped too");
}
