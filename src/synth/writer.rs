//! The sweep's WARC files as they are written: one gzip member per record, a new file
//! past the size limit.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{warc, Rng};
use crate::capture::sha1_base32;

/// Writes one sweep's WARC files, one gzip member per record.
pub(super) struct SweepWriter {
    dir: PathBuf,
    label: String,
    date: String,
    max_bytes: u64,
    rng: Rng,
    file: Option<(BufWriter<File>, PathBuf)>,
    files: Vec<PathBuf>,
    in_file: u64,
    bytes: u64,
    compressed: u64,
}

impl SweepWriter {
    pub(super) fn new(
        dir: &Path,
        label: &str,
        date: &str,
        max_bytes: u64,
        seed: u64,
    ) -> std::io::Result<Self> {
        Ok(SweepWriter {
            dir: dir.to_path_buf(),
            label: label.to_string(),
            date: date.to_string(),
            max_bytes,
            rng: Rng::new(seed),
            file: None,
            files: Vec::new(),
            in_file: 0,
            bytes: 0,
            compressed: 0,
        })
    }

    pub(super) fn uuid(&mut self) -> String {
        let a = self.rng.next_u64();
        let b = self.rng.next_u64();
        format!(
            "<urn:uuid:{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}>",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            (b >> 48) & 0x3fff | 0x8000,
            b & 0xffff_ffff_ffff
        )
    }

    pub(super) fn open_if_needed(&mut self) -> std::io::Result<()> {
        if self.file.is_some() && self.in_file < self.max_bytes {
            return Ok(());
        }
        if let Some((mut w, _)) = self.file.take() {
            w.flush()?;
        }
        let name = format!(
            "tidemark-gen-{}-{:05}.warc.gz",
            self.label,
            self.files.len()
        );
        let path = self.dir.join(name);
        let f = BufWriter::with_capacity(1 << 20, File::create(&path)?);
        self.files.push(path.clone());
        self.file = Some((f, path));
        self.in_file = 0;
        let info = format!(
            "software: tidemark-gen {}\r\nformat: WARC File Format 1.1\r\nisPartOf: tidemark synthetic sweep {}\r\n",
            env!("CARGO_PKG_VERSION"),
            self.label
        );
        let date = self.date.clone();
        let id = self.uuid();
        let fname = self
            .files
            .last()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let rec = warc::record(
            &[
                ("WARC-Type", "warcinfo"),
                ("WARC-Record-ID", &id),
                ("WARC-Date", &date),
                ("WARC-Filename", &fname),
                ("Content-Type", "application/warc-fields"),
            ],
            info.as_bytes(),
        );
        self.write_record(&rec)
    }

    pub(super) fn write_record(&mut self, rec: &[u8]) -> std::io::Result<()> {
        let (w, _) = self.file.as_mut().expect("file open");
        let gz = warc::gzip_member(rec, 6);
        w.write_all(&gz)?;
        let n = rec.len() as u64;
        self.in_file += n;
        self.bytes += n;
        self.compressed += gz.len() as u64;
        Ok(())
    }

    pub(super) fn response(
        &mut self,
        url: &str,
        ts: &str,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<()> {
        self.open_if_needed()?;
        let block = warc::http_response(status, headers, body);
        let id = self.uuid();
        let digest = sha1_base32(body);
        let rec = warc::record(
            &[
                ("WARC-Type", "response"),
                ("WARC-Record-ID", &id),
                ("WARC-Date", ts),
                ("WARC-Target-URI", url),
                ("WARC-Payload-Digest", &digest),
                ("Content-Type", "application/http; msgtype=response"),
            ],
            &block,
        );
        self.write_record(&rec)
    }

    pub(super) fn revisit(
        &mut self,
        url: &str,
        ts: &str,
        body: &str,
        refers_url: &str,
        refers_date: &str,
    ) -> std::io::Result<()> {
        self.open_if_needed()?;
        // Headers only, as a revisit carries them (the payload is the record it repeats).
        let mut http = warc::http_response(
            200,
            &[("Content-Type", "text/html; charset=utf-8")],
            body.as_bytes(),
        );
        http.truncate(http.len() - body.len());
        let id = self.uuid();
        let digest = sha1_base32(body.as_bytes());
        let rec = warc::record(
            &[
                ("WARC-Type", "revisit"),
                ("WARC-Record-ID", &id),
                ("WARC-Date", ts),
                ("WARC-Target-URI", url),
                (
                    "WARC-Profile",
                    "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
                ),
                ("WARC-Refers-To-Target-URI", refers_url),
                ("WARC-Refers-To-Date", refers_date),
                ("WARC-Payload-Digest", &digest),
                ("WARC-Truncated", "length"),
                ("Content-Type", "application/http; msgtype=response"),
            ],
            &http,
        );
        self.write_record(&rec)
    }

    pub(super) fn finish(mut self) -> std::io::Result<(Vec<PathBuf>, u64, u64)> {
        if let Some((mut w, _)) = self.file.take() {
            w.flush()?;
        }
        Ok((self.files, self.bytes, self.compressed))
    }
}
