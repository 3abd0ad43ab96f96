//! The one WARC writer of the generator, the tests and the benchmarks: an HTTP response
//! block, a WARC record around a block, a gzip member around a record. Readers of real
//! files are in [`crate::read`]; this writes only what tidemark's own tools need.

use std::io::Write;

use flate2::write::GzEncoder;

/// An HTTP/1.1 response: status line, `headers`, Content-Length, body.
pub fn http_response(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        301 => "Moved Permanently",
        404 => "Not Found",
        _ => "Status",
    };
    let mut http = format!("HTTP/1.1 {status} {reason}\r\n");
    for (k, v) in headers {
        http.push_str(&format!("{k}: {v}\r\n"));
    }
    http.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut block = http.into_bytes();
    block.extend_from_slice(body);
    block
}

/// A WARC/1.1 record: the named `fields` in order (WARC-Type and WARC-Date among
/// them), Content-Length of `block`, the block and the record's closing CRLF CRLF.
pub fn record(fields: &[(&str, &str)], block: &[u8]) -> Vec<u8> {
    let mut out = b"WARC/1.1\r\n".to_vec();
    for (k, v) in fields {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", block.len()).as_bytes());
    out.extend_from_slice(block);
    out.extend_from_slice(b"\r\n\r\n");
    out
}

/// A `response` record of an HTTP block for `url` at `date` (ISO 8601), with the payload
/// digest when given.
pub fn response(url: &str, date: &str, digest: Option<&str>, block: &[u8]) -> Vec<u8> {
    let mut fields = vec![
        ("WARC-Type", "response"),
        ("WARC-Date", date),
        ("WARC-Target-URI", url),
    ];
    if let Some(d) = digest {
        fields.push(("WARC-Payload-Digest", d));
    }
    fields.push(("Content-Type", "application/http; msgtype=response"));
    record(&fields, block)
}

/// One gzip member holding `bytes` (a record per member, as WARC files are written).
pub fn gzip_member(bytes: &[u8], level: u32) -> Vec<u8> {
    let mut enc = GzEncoder::new(
        Vec::with_capacity(bytes.len() / 3 + 64),
        flate2::Compression::new(level),
    );
    enc.write_all(bytes).expect("in-memory gzip");
    enc.finish().expect("in-memory gzip")
}
