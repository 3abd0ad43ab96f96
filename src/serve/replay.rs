//! Archived payloads read back from their WARC files for replay.
//!
//! A payload stored as sent on the wire (no `Transfer-Encoding: chunked`, no
//! `Content-Encoding`: images, PDFs, video — the large ones) is streamed from the file
//! as it is read, whatever its size: nothing is held but a chunk. A payload that must be
//! decoded first (chunked, gzip, deflate, br: mostly HTML and text) is decoded whole in
//! memory, at most `serve.max_replay_bytes`; a larger one is refused with a message
//! naming the setting (507), never served cut short as a complete 200.

use crate::read::RecordKind;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::error::ApiError;
use super::state::{AppState, Request};
use crate::query::captures::revisited;
use crate::query::CaptureRow;
use crate::read::input::Decompressed;
use crate::read::{open_at, parse_response, record_at};

/// An archived payload: whole, or a reader of its bytes and their number.
pub(crate) enum Payload {
    Whole(Vec<u8>),
    Streamed {
        reader: Box<dyn Read + Send>,
        length: u64,
    },
}

/// A payload read back from its WARC file, with its archived status and headers.
pub(crate) struct Archived {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub payload: Payload,
    pub timestamp: String,
}

/// Reads a capture's payload; a revisit's from the capture it revisits.
pub(crate) fn load(
    state: &AppState,
    served: &Request,
    row: &CaptureRow,
) -> Result<Archived, ApiError> {
    let source = if row.info.kind == RecordKind::Revisit {
        revisited(served.index(), &served.reader, row)?.ok_or_else(|| {
            ApiError::not_found(
                "url",
                format!(
                    "the capture of {} at {} is a revisit whose original record is not in the index",
                    row.info.url, row.timestamp
                ),
            )
        })?
    } else {
        row.clone()
    };
    // A revisit repeats its original's bytes: a blocked original is not replayed
    // through it.
    if served.reader.access_of(&source.surt, &source.timestamp) == crate::access::Access::Block {
        return Err(ApiError::forbidden(format!(
            "the capture of {} at {} is not replayed here (an access rule or embargo blocks the record it repeats)",
            row.info.url, row.timestamp
        )));
    }
    let name = &source.info.file;
    let path = state.warc_path(served, &source).ok_or_else(|| {
        ApiError::not_found(
            "warc",
            format!("the WARC file {name} of this capture is no longer where it was ingested from; add its folder to serve.archive_paths"),
        )
    })?;
    let at = |m: String| {
        ApiError::internal(format!(
            "{}: offset {}: {m}",
            path.display(),
            source.info.offset
        ))
    };
    // A revisit answers with its own status line where it has one.
    let status_of = |archived: u16| row.info.status.unwrap_or(archived);
    if let Some((status, headers, reader, length)) =
        open_plain(&path, source.info.offset, source.info.length).map_err(at)?
    {
        return Ok(Archived {
            status: status_of(status),
            headers,
            payload: Payload::Streamed { reader, length },
            timestamp: row.timestamp.clone(),
        });
    }
    // Decoded whole: a record or payload over the cap is refused, naming it.
    let cap = state.config.serve.max_replay_bytes;
    let over = || {
        ApiError::too_large(format!(
            "the archived record of {} at {} ({}: offset {}) is larger than {cap} bytes once decoded, the most this server decodes for replay (serve.max_replay_bytes; payloads stored undecoded are streamed whatever their size); it is not served cut short",
            row.info.url,
            row.timestamp,
            path.display(),
            source.info.offset
        ))
    };
    let rec = record_at(&path, source.info.offset, source.info.length, cap).map_err(at)?;
    if rec.over_cap {
        return Err(over());
    }
    let (status, headers, payload) = match parse_response(&rec.block, cap) {
        Some(r) if r.over_cap => return Err(over()),
        Some(r) => (r.status, r.headers, r.payload),
        None => {
            let mime = rec
                .field_str("Content-Type")
                .unwrap_or_else(|| "application/octet-stream".into());
            (200, vec![("Content-Type".to_string(), mime)], rec.block)
        }
    };
    Ok(Archived {
        status: status_of(status),
        headers,
        payload: Payload::Whole(payload),
        timestamp: row.timestamp.clone(),
    })
}

/// Header bytes read before a payload is given to the whole-record path instead.
const MAX_HEAD: usize = 1 << 20;

type Opened = (u16, Vec<(String, String)>, Box<dyn Read + Send>, u64);

/// The WARC `response` or `resource` record at `offset` opened for streaming: its
/// archived status and headers and a reader positioned at its payload, when the payload
/// is stored as it is served (no chunked framing, no content coding). None: the record
/// is another kind (ARC, a coded payload, an odd header) and is read whole.
fn open_plain(path: &Path, offset: u64, length: u64) -> Result<Option<Opened>, String> {
    let source = open_at(path, offset, length)?;
    let (stream, _) = Decompressed::from_reader(source, 0).map_err(|e| e.to_string())?;
    let mut r = BufReader::with_capacity(64 * 1024, stream);
    let Some(warc) = read_head(&mut r)? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&warc);
    let mut lines = text.lines();
    if !lines.next().is_some_and(|l| l.starts_with("WARC/")) {
        return Ok(None);
    }
    let field = |name: &str| {
        text.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let Some(block_len) = field("Content-Length").and_then(|v| v.parse::<u64>().ok()) else {
        return Ok(None);
    };
    let kind = field("WARC-Type").unwrap_or_default();
    if kind == "resource" {
        let mime = field("Content-Type").unwrap_or_else(|| "application/octet-stream".into());
        let block: Box<dyn Read + Send> = Box::new(r.take(block_len));
        return Ok(Some((
            200,
            vec![("Content-Type".into(), mime)],
            block,
            block_len,
        )));
    }
    if kind != "response" {
        return Ok(None);
    }
    let mut block = r.take(block_len);
    let Some(head) = read_head(&mut block)? else {
        return Ok(None);
    };
    let Some(resp) = parse_response(&head, 0) else {
        return Ok(None);
    };
    let coded = resp
        .header("Transfer-Encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
        || resp
            .header("Content-Encoding")
            .is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "identity"));
    if coded {
        return Ok(None);
    }
    let length = block_len.saturating_sub(head.len() as u64);
    Ok(Some((resp.status, resp.headers, Box::new(block), length)))
}

/// Lines up to and including the first empty one (a WARC or HTTP head); None when none
/// comes within [`MAX_HEAD`] bytes.
fn read_head(r: &mut impl BufRead) -> Result<Option<Vec<u8>>, String> {
    let mut head = Vec::with_capacity(1024);
    loop {
        let start = head.len();
        let n = r
            .take((MAX_HEAD - start.min(MAX_HEAD)) as u64)
            .read_until(b'\n', &mut head)
            .map_err(|e| e.to_string())?;
        if n == 0 || !head.ends_with(b"\n") {
            return Ok(None);
        }
        let line = &head[start..];
        if line == b"\r\n" || line == b"\n" {
            return Ok(Some(head));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::warc;

    fn file_of(records: &[Vec<u8>]) -> (tempfile::TempDir, std::path::PathBuf, Vec<u64>) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.warc.gz");
        let mut bytes = Vec::new();
        let mut offsets = Vec::new();
        for r in records {
            offsets.push(bytes.len() as u64);
            bytes.extend(warc::gzip_member(r, 6));
        }
        std::fs::write(&p, bytes).unwrap();
        (dir, p, offsets)
    }

    #[test]
    fn plain_payloads_open_for_streaming_and_coded_ones_do_not() {
        let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let plain = warc::http_response(200, &[("Content-Type", "application/pdf")], &body);
        let gz = warc::gzip_member(b"<p>hello</p>", 6);
        let coded = warc::http_response(200, &[("Content-Encoding", "gzip")], &gz);
        let (_d, p, at) = file_of(&[
            warc::response(
                "http://a.example/x.pdf",
                "2026-01-01T00:00:00Z",
                None,
                &plain,
            ),
            warc::response("http://a.example/", "2026-01-01T00:00:01Z", None, &coded),
        ]);
        let (status, headers, mut r, length) = open_plain(&p, at[0], 0).unwrap().unwrap();
        assert_eq!(status, 200);
        assert!(headers
            .iter()
            .any(|(k, v)| k == "Content-Type" && v == "application/pdf"));
        assert_eq!(length, body.len() as u64);
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert_eq!(got, body);
        assert!(open_plain(&p, at[1], 0).unwrap().is_none());
    }
}
