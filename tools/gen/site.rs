//! `tidemark-gen --site DIR=URL …`: a crawl sweep of a real site kept as files (a
//! documentation package, a static site's build): every `.html` file under DIR becomes
//! a `response` record for URL + its path, in one `.warc.gz` of one gzip member per
//! record. A page that is only a meta-refresh stub (a small page whose `<meta
//! http-equiv="refresh">` names a URL, as Sphinx writes for a moved page) is served as
//! `301 Moved Permanently` to that URL, as the web server of such a site answers.
//! Deterministic: the same files and date give the same bytes.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use regex::bytes::Regex;
use sha1::{Digest, Sha1};
use tidemark::synth::warc;

/// What a sweep holds.
#[derive(Debug, serde::Serialize)]
pub struct SiteSweep {
    /// The file written.
    pub file: PathBuf,
    /// Pages served `200 OK`.
    pub pages: usize,
    /// Pages served as redirects (meta-refresh stubs).
    pub redirects: usize,
    /// Bytes of the file.
    pub compressed_bytes: u64,
}

/// Pages smaller than this may be redirect stubs; larger ones are pages that refresh.
const STUB_MAX: usize = 4096;

/// Writes one sweep of `sites` (directory, URL prefix ending in `/`) dated `date`
/// (`YYYY-MM-DDTHH:MM:SSZ`) into `out`.
pub fn write_sweep(sites: &[(PathBuf, String)], date: &str, out: &Path) -> io::Result<SiteSweep> {
    let refresh = Regex::new(
        r#"(?i)<meta[^>]+http-equiv=["']?refresh["']?[^>]*content=["']?\s*\d+\s*;\s*url=([^"'>]+)"#,
    )
    .expect("a valid pattern");
    let mut pages = Vec::new();
    for (dir, prefix) in sites {
        if !dir.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("--site {}: not a directory", dir.display()),
            ));
        }
        let mut files = Vec::new();
        walk(dir, &mut files)?;
        for f in files {
            let rel = f.strip_prefix(dir).expect("under its root");
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            pages.push((format!("{prefix}{}", rel.join("/")), f));
        }
    }
    pages.sort();
    std::fs::create_dir_all(out)?;
    let stamp: String = date.chars().filter(char::is_ascii_digit).collect();
    let file = out.join(format!("site-{stamp}-00000.warc.gz"));
    let mut w = io::BufWriter::new(std::fs::File::create(&file)?);
    let http_date = chrono::DateTime::parse_from_rfc3339(date)
        .map(|d| d.format("%a, %d %b %Y %H:%M:%S GMT").to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("date {date}: {e}")))?;
    let info = "software: tidemark-gen --site\r\nformat: WARC File Format 1.1\r\n";
    w.write_all(&warc::gzip_member(
        &warc::record(
            &[
                ("WARC-Type", "warcinfo"),
                ("WARC-Date", date),
                ("Content-Type", "application/warc-fields"),
            ],
            info.as_bytes(),
        ),
        6,
    ))?;
    let (mut ok, mut redirects) = (0, 0);
    for (url, path) in &pages {
        let body = std::fs::read(path)?;
        let location = (body.len() < STUB_MAX)
            .then(|| refresh.captures(&body))
            .flatten()
            .map(|c| {
                let target = String::from_utf8_lossy(&c[1]).trim().to_string();
                tidemark::url::resolve(url, &target)
            });
        let mut headers = vec![("Date", http_date.as_str())];
        if let Some(l) = &location {
            headers.push(("Location", l.as_str()));
        }
        headers.push(("Content-Type", "text/html; charset=utf-8"));
        let status = if location.is_some() { 301 } else { 200 };
        let block = warc::http_response(status, &headers, &body);
        let digest = format!(
            "sha1:{}",
            data_encoding::BASE32.encode(&Sha1::digest(&body))
        );
        let record = warc::response(url, date, Some(&digest), &block);
        w.write_all(&warc::gzip_member(&record, 6))?;
        if location.is_some() {
            redirects += 1;
        } else {
            ok += 1;
        }
    }
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    let compressed_bytes = std::fs::metadata(&file)?.len();
    Ok(SiteSweep {
        file,
        pages: ok,
        redirects,
        compressed_bytes,
    })
}

/// Every `.html` file under `dir`, in no particular order (sorted by URL later).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let t = e.file_type()?;
        let p = e.path();
        if t.is_dir() {
            walk(&p, out)?;
        } else if (t.is_file() || t.is_symlink())
            && p.extension().is_some_and(|x| x == "html")
            && p.is_file()
        {
            out.push(p);
        }
    }
    Ok(())
}
