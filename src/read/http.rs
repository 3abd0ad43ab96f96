//! The HTTP message inside a `response` (or `revisit`) block: status line, headers,
//! de-chunking and content decoding of the payload, each bounded by the record cap.

use std::io::Read;

/// A parsed HTTP response head and its decoded payload.
#[derive(Debug, Clone, Default)]
pub struct HttpResponse {
    /// Status code (0 when the status line has none).
    pub status: u16,
    /// Header fields in order, names as written.
    pub headers: Vec<(String, String)>,
    /// The entity body as the server meant it: de-chunked, content-decoded.
    pub payload: Vec<u8>,
    /// Notes on what could not be undone (bad chunking, unknown encoding…); the payload
    /// is then the raw bytes.
    pub warnings: Vec<String>,
    /// The decoded payload was cut at the cap.
    pub over_cap: bool,
}

impl HttpResponse {
    /// First header value by name, case-insensitive.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The media type without parameters, lower-cased.
    pub fn mime(&self) -> Option<String> {
        self.header("Content-Type").map(media_type)
    }

    /// The `charset` parameter of Content-Type.
    pub fn charset(&self) -> Option<String> {
        self.header("Content-Type").and_then(charset_param)
    }
}

/// `text/html; charset=UTF-8` → `text/html`.
pub fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// `text/html; charset="utf-8"` → `utf-8`.
pub fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        if k.trim().eq_ignore_ascii_case("charset") {
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'').trim();
            (!v.is_empty()).then(|| v.to_ascii_lowercase())
        } else {
            None
        }
    })
}

/// Does this block look like an HTTP response message?
pub fn is_http_response(block: &[u8]) -> bool {
    block.starts_with(b"HTTP/") || block.starts_with(b"HTTPX/") || block.starts_with(b"http/")
}

/// A header of the HTTP head at the start of a block (`Date`), without parsing the
/// rest: the first line is the status line, the head ends at its blank line.
pub fn head_field(block: &[u8], name: &str) -> Option<String> {
    if !is_http_response(block) {
        return None;
    }
    let head = &block[..block.len().min(1 << 16)];
    head.split(|b| *b == b'\n')
        .skip(1)
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            let colon = l.iter().position(|b| *b == b':')?;
            let (n, v) = (&l[..colon], &l[colon + 1..]);
            n.eq_ignore_ascii_case(name.as_bytes())
                .then(|| String::from_utf8_lossy(v).trim().to_string())
        })
}

/// Parses a response message. Returns None when the block holds no HTTP status line.
pub fn parse_response(block: &[u8], cap: usize) -> Option<HttpResponse> {
    if !is_http_response(block) {
        return None;
    }
    let head_end = find_head_end(block);
    let (head, body) = match head_end {
        Some((h, b)) => (&block[..h], &block[b..]),
        None => (block, &block[block.len()..]),
    };
    let mut lines = head
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let status_line = lines.next()?;
    let status = String::from_utf8_lossy(status_line)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.get(..3.min(s.len())).and_then(|s| s.parse::<u16>().ok()))
        .unwrap_or(0);
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in lines {
        if line.is_empty() {
            continue;
        }
        if matches!(line[0], b' ' | b'\t') {
            if let Some((_, v)) = headers.last_mut() {
                v.push(' ');
                v.push_str(String::from_utf8_lossy(line).trim());
            }
            continue;
        }
        if let Some(i) = memchr::memchr(b':', line) {
            headers.push((
                String::from_utf8_lossy(&line[..i]).trim().to_string(),
                String::from_utf8_lossy(&line[i + 1..]).trim().to_string(),
            ));
        }
    }
    let mut resp = HttpResponse {
        status,
        headers,
        ..Default::default()
    };
    let chunked = resp
        .header("Transfer-Encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let mut payload = if chunked {
        match dechunk(body) {
            Some(p) => p,
            None => {
                resp.warnings
                    .push("invalid chunked encoding; payload kept as stored".into());
                body.to_vec()
            }
        }
    } else {
        body.to_vec()
    };
    if let Some(enc) = resp
        .header("Content-Encoding")
        .map(|e| e.trim().to_ascii_lowercase())
    {
        if !enc.is_empty() && enc != "identity" && !payload.is_empty() {
            match decode_content(&enc, &payload, cap) {
                Ok((decoded, cut)) => {
                    payload = decoded;
                    resp.over_cap |= cut;
                }
                Err(e) => resp.warnings.push(format!(
                    "Content-Encoding {enc}: {e}; payload kept as stored"
                )),
            }
        }
    }
    resp.payload = payload;
    Some(resp)
}

/// (end of head, start of body): the first empty line.
fn find_head_end(block: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'\n', &block[i..]) {
        let nl = i + p;
        let next = nl + 1;
        if block[next..].starts_with(b"\r\n") {
            return Some((nl, next + 2));
        }
        if block[next..].starts_with(b"\n") {
            return Some((nl, next + 1));
        }
        i = next;
    }
    None
}

/// Undoes `Transfer-Encoding: chunked`; None when the framing is broken before any
/// final chunk. Trailers after the last chunk are ignored.
pub fn dechunk(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    loop {
        let nl = i + memchr::memchr(b'\n', &body[i..])?;
        let line = &body[i..nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let hex = line.split(|b| *b == b';').next()?;
        let hex = std::str::from_utf8(hex).ok()?.trim();
        let size = usize::from_str_radix(hex, 16).ok()?;
        i = nl + 1;
        if size == 0 {
            return Some(out);
        }
        let end = i.checked_add(size)?;
        if end > body.len() {
            // Cut off inside a chunk: keep what is there.
            out.extend_from_slice(&body[i..]);
            return Some(out);
        }
        out.extend_from_slice(&body[i..end]);
        i = end;
        if body[i..].starts_with(b"\r\n") {
            i += 2;
        } else if body[i..].starts_with(b"\n") {
            i += 1;
        }
        if i >= body.len() {
            return Some(out);
        }
    }
}

/// Decodes gzip / deflate / br content, keeping at most `cap` bytes (a gzip bomb stops
/// at the cap). Returns (bytes, cut at cap).
pub fn decode_content(encoding: &str, data: &[u8], cap: usize) -> Result<(Vec<u8>, bool), String> {
    let mut out = Vec::new();
    let limit = cap as u64 + 1;
    let res = match encoding {
        "gzip" | "x-gzip" => flate2::read::MultiGzDecoder::new(data)
            .take(limit)
            .read_to_end(&mut out),
        "deflate" => {
            // Servers send zlib-wrapped or raw deflate under this name.
            let r = flate2::read::ZlibDecoder::new(data)
                .take(limit)
                .read_to_end(&mut out);
            if r.is_err() {
                out.clear();
                flate2::read::DeflateDecoder::new(data)
                    .take(limit)
                    .read_to_end(&mut out)
            } else {
                r
            }
        }
        "br" => brotli_decompressor::Decompressor::new(data, 4096)
            .take(limit)
            .read_to_end(&mut out),
        other => return Err(format!("unknown content coding {other:?}")),
    };
    match res {
        Ok(_) => {
            let cut = out.len() > cap;
            out.truncate(cap);
            Ok((out, cut))
        }
        // A truncated stream still gives its beginning; keep it if there is any.
        Err(_) if !out.is_empty() => {
            out.truncate(cap);
            Ok((out, false))
        }
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dechunks_with_extensions_and_trailers() {
        let body = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nTrailer: x\r\n\r\n";
        assert_eq!(dechunk(body).unwrap(), b"Wikipedia");
        assert!(dechunk(b"zz\r\nabc").is_none());
    }

    #[test]
    fn parses_status_without_reason_and_charset() {
        let r = parse_response(b"HTTP/1.1 302\r\nLocation: /x\r\nContent-Type: text/html; charset=\"ISO-8859-1\"\r\n\r\nhi", 100)
            .unwrap();
        assert_eq!(r.status, 302);
        assert_eq!(r.header("location"), Some("/x"));
        assert_eq!(r.charset().as_deref(), Some("iso-8859-1"));
        assert_eq!(r.payload, b"hi");
    }

    #[test]
    fn gzip_bomb_stops_at_cap() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![0u8; 10 << 20]).unwrap();
        let bomb = enc.finish().unwrap();
        let (out, cut) = decode_content("gzip", &bomb, 1 << 16).unwrap();
        assert_eq!(out.len(), 1 << 16);
        assert!(cut);
    }
}
