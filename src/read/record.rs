//! WARC (0.17–1.1) and ARC v1/v2 record framing over a decompressed stream.
//!
//! Why not the `warc` crate's readers: they need an exact CRLFCRLF after every block (real
//! files are off by a byte or two), allocate 1 MiB per record, report no offsets, and
//! know no ARC. Its nom header-block parser is used for the named fields; lines it does
//! not take (folded continuation lines, odd names) go through a lenient fallback.

use super::kind::RecordKind;
use std::io::Read;
use std::path::Path;

use super::input::{Compression, Decompressed};

/// One WARC named field, name as written, value trimmed.
pub type Field = (String, Vec<u8>);

/// One archive record: WARC header fields (or ARC header line) and the block, read up to
/// the configured cap.
#[derive(Debug, Clone)]
pub struct Record {
    /// Where the record starts: the compressed offset of its gzip member, or its byte
    /// offset in an uncompressed file (what CDX calls `offset`).
    pub offset: u64,
    /// The record's bytes from `offset` (CDX `length`): to the next record in a gzip
    /// file, to the end of its block in an uncompressed one (as pywb and IA count).
    pub length: u64,
    /// Offset of the record in the decompressed stream (differs from `offset` in gzip).
    pub stream_offset: u64,
    /// `WARC/1.0`, `WARC/0.17`, `ARC/1`, `ARC/2`.
    pub version: String,
    /// Record type (`WARC-Type`, lower-cased and trimmed; an ARC record is a
    /// `response`).
    pub kind: RecordKind,
    /// Named fields in file order (for ARC, synthesized from the header line).
    pub fields: Vec<Field>,
    /// Content-Length as declared.
    pub declared_length: u64,
    /// The block, at most `cap` bytes of it.
    pub block: Vec<u8>,
    /// The block was longer than the cap and was cut.
    pub over_cap: bool,
    /// The file ended before the declared length (tolerated on the last record, as
    /// other readers do; the record is delivered and flagged).
    pub short: bool,
    /// Deviations from the format that did not stop the reading (a missing separator, a
    /// missing Content-Length, a record not aligned to a gzip member…).
    pub warnings: Vec<String>,
    /// The `WARC-Date` of the file's last `warcinfo` record before this one (or its ARC
    /// `filedesc://` header's date): a capture's date when its own cannot be read.
    pub file_date: Option<String>,
}

impl Record {
    /// A bare document (an HTML or text file) as a `resource` record, so it can be
    /// analyzed like a captured page.
    pub fn document(bytes: &[u8]) -> Record {
        Record {
            offset: 0,
            length: bytes.len() as u64,
            stream_offset: 0,
            version: "WARC/1.1".into(),
            kind: RecordKind::Resource,
            fields: vec![
                ("WARC-Type".into(), b"resource".to_vec()),
                ("Content-Type".into(), b"text/html".to_vec()),
            ],
            declared_length: bytes.len() as u64,
            block: bytes.to_vec(),
            over_cap: false,
            short: false,
            warnings: Vec::new(),
            file_date: None,
        }
    }

    /// Whether the record is indexed as a capture of its URL: a record of a capture
    /// kind, or a `metadata` record that is not about another record (a crawler's
    /// manifest or log under its `metadata://` URL), as pywb's indexer keeps them: with
    /// a media type, not `application/warc-fields`, nor Heritrix 1's `text/anvl`. (The
    /// media type is what a shard keeps of it: the two paths decide alike.)
    pub fn is_capture(&self) -> bool {
        self.kind.is_capture()
            || (self.kind == RecordKind::Metadata
                && self.field_str("Content-Type").is_some_and(|t| {
                    let t = crate::read::http::media_type(&t);
                    !t.is_empty() && t != "application/warc-fields" && t != "text/anvl"
                }))
    }

    /// First value of a named field, case-insensitive.
    pub fn field(&self, name: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// A field as text (lossy), trimmed.
    pub fn field_str(&self, name: &str) -> Option<String> {
        self.field(name)
            .map(|v| String::from_utf8_lossy(v).trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// The target URI without the `<…>` some writers (wget ≤ 1.19) put around it.
    pub fn target_uri(&self) -> Option<String> {
        self.field_str("WARC-Target-URI").map(|u| {
            let u = u.trim();
            u.strip_prefix('<')
                .and_then(|s| s.strip_suffix('>'))
                .unwrap_or(u)
                .to_string()
        })
    }
}

/// Damage that stops the reading of one file. Everything before it was delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// Byte offset in the file (compressed offset for gzip files).
    pub offset: u64,
    /// What was found and what was expected.
    pub message: String,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.message)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Unknown,
    Warc,
    Arc { major: u8 },
}

const MAX_HEADER_BYTES: usize = 1 << 20;
const MAX_LINE: usize = 1 << 16;

/// Iterates over the records of one file. After an error it yields nothing more.
pub struct RecordReader {
    stream: PeekReader,
    /// Decompressed bytes consumed by the parser.
    pos: u64,
    cap: usize,
    format: Format,
    compression: Compression,
    done: bool,
    pending: Option<Record>,
    line: Vec<u8>,
    /// Warnings for the record being read.
    warnings: Vec<String>,
    warned_alignment: bool,
    /// The date of the last `warcinfo` (or ARC file header) read.
    file_date: Option<String>,
}

impl RecordReader {
    /// Opens a WARC or ARC file, plain or gzip; `cap` bounds the bytes kept per block.
    pub fn open(path: &Path, cap: usize) -> Result<Self, ReadError> {
        let (stream, compression) = Decompressed::open(path).map_err(|e| ReadError {
            offset: 0,
            message: e.to_string(),
        })?;
        Ok(Self::new(stream, compression, cap))
    }

    /// Reads from any byte source (tests, stdin).
    pub fn from_reader(r: Box<dyn Read + Send>, cap: usize) -> Result<Self, ReadError> {
        let (stream, compression) = Decompressed::from_reader(r, 0).map_err(|e| ReadError {
            offset: 0,
            message: e.to_string(),
        })?;
        Ok(Self::new(stream, compression, cap))
    }

    fn new(stream: Decompressed, compression: Compression, cap: usize) -> Self {
        RecordReader {
            stream: PeekReader::new(stream),
            pos: 0,
            cap,
            format: Format::Unknown,
            compression,
            done: false,
            pending: None,
            line: Vec::with_capacity(512),
            warnings: Vec::new(),
            warned_alignment: false,
            file_date: None,
        }
    }

    /// gzip or plain.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    fn file_offset(&mut self, pos: u64) -> u64 {
        match self.compression {
            Compression::None => pos,
            Compression::Gzip => self.stream.get_mut().member_of(pos).0,
        }
    }

    fn consume(&mut self, n: usize) {
        self.stream.consume(n);
        self.pos += n as u64;
    }

    /// An error at decompressed position `pos`, reported at its offset in the file (the
    /// compressed offset of its gzip member), as [`ReadError::offset`] promises.
    fn error_at(&mut self, pos: u64, message: String) -> ReadError {
        ReadError {
            offset: self.file_offset(pos),
            message,
        }
    }

    fn fill(&mut self) -> Result<&[u8], ReadError> {
        let pos = self.pos;
        if let Err(e) = self.stream.fill_buf() {
            return Err(self.error_at(pos, format!("read error: {e}")));
        }
        // Buffered now: no I/O, no error.
        Ok(self.stream.fill_buf().unwrap_or_default())
    }

    /// At least `n` bytes ahead (fewer only at the end of the stream).
    fn peek(&mut self, n: usize) -> Result<&[u8], ReadError> {
        let pos = self.pos;
        if let Err(e) = self.stream.peek(n) {
            return Err(self.error_at(pos, format!("read error: {e}")));
        }
        Ok(self.stream.peek(n).unwrap_or_default())
    }

    /// Damage below the record layer (gzip), if any, as a ReadError.
    fn input_damage(&mut self) -> Option<ReadError> {
        self.stream.get_mut().damage.take().map(|d| ReadError {
            offset: d.offset,
            message: d.message,
        })
    }

    /// Reads one line (up to LF, which is dropped with any CR) into `self.line`.
    /// Returns false at end of stream with nothing read.
    fn read_line(&mut self) -> Result<bool, ReadError> {
        self.line.clear();
        let start = self.pos;
        loop {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok(!self.line.is_empty());
            }
            let (take, found) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if self.line.len() + take > MAX_LINE {
                return Err(
                    self.error_at(start, format!("header line longer than {MAX_LINE} bytes"))
                );
            }
            let buf = self.stream.fill_buf().unwrap_or_default();
            self.line.extend_from_slice(&buf[..take]);
            self.consume(take);
            if found {
                while matches!(self.line.last(), Some(b'\n' | b'\r')) {
                    self.line.pop();
                }
                return Ok(true);
            }
        }
    }

    /// Skips CR/LF (and the odd NUL padding) between records; returns what was skipped
    /// (its first 8 bytes) and how much.
    fn skip_separators(&mut self) -> Result<(Vec<u8>, usize), ReadError> {
        let mut seen = Vec::new();
        let mut total = 0;
        loop {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok((seen, total));
            }
            let n = buf
                .iter()
                .take_while(|b| matches!(b, b'\r' | b'\n' | 0))
                .count();
            if n == 0 {
                return Ok((seen, total));
            }
            let keep = n.min(8 - seen.len().min(8));
            seen.extend_from_slice(&buf[..keep]);
            total += n;
            self.consume(n);
        }
    }

    /// Reads `len` block bytes, keeping at most `cap`. Returns (block, got).
    fn read_block(&mut self, len: u64) -> Result<(Vec<u8>, u64), ReadError> {
        let keep = len.min(self.cap as u64) as usize;
        let mut block = Vec::with_capacity(keep);
        let mut got = 0u64;
        while got < len {
            let buf = self.fill()?;
            if buf.is_empty() {
                break;
            }
            let n = (buf.len() as u64).min(len - got) as usize;
            if block.len() < keep {
                let k = n.min(keep - block.len());
                block.extend_from_slice(&buf[..k]);
            }
            self.consume(n);
            got += n as u64;
        }
        Ok((block, got))
    }

    fn next_record(&mut self) -> Result<Option<Record>, ReadError> {
        self.skip_separators()?;
        if self.fill()?.is_empty() {
            return Ok(None);
        }
        let start = self.pos;
        let offset = self.file_offset(start);
        self.warnings.clear();
        if self.compression == Compression::Gzip && !self.warned_alignment {
            let (member, aligned) = self.stream.get_mut().member_of(start);
            if !aligned {
                self.warned_alignment = true;
                self.warnings.push(format!(
                    "record at decompressed offset {start} starts inside the gzip member at offset {member}: \
                     the file is not compressed one member per record, so its record offsets are not addressable"
                ));
            }
        }
        if !self.read_line()? {
            return Ok(None);
        }
        let first = std::mem::take(&mut self.line);
        let result = if is_warc_magic(&first) {
            self.read_warc(&first, start, offset)
        } else if first.starts_with(b"filedesc://") && self.format == Format::Unknown {
            self.read_arc_filedesc(&first, start, offset)
        } else if let Format::Arc { major } = self.format {
            self.read_arc(&first, major, start, offset)
        } else if self.format == Format::Unknown && looks_like_arc_v1_line(&first) {
            // An ARC file without its filedesc header (cut from a larger file).
            self.format = Format::Arc { major: 1 };
            self.warnings.push(format!(
                "ARC file without a filedesc:// header at offset {offset}"
            ));
            self.read_arc(&first, 1, start, offset)
        } else {
            Err(ReadError {
                offset,
                message: format!(
                    "expected a WARC record header (WARC/1.x) or an ARC file header (filedesc://), found {}",
                    quote(&first)
                ),
            })
        };
        self.line = first;
        result.map(Some)
    }

    fn read_warc(&mut self, first: &[u8], start: u64, offset: u64) -> Result<Record, ReadError> {
        let version = String::from_utf8_lossy(first).trim().to_ascii_uppercase();
        if !matches!(&version[5..], "0.17" | "0.18" | "1.0" | "1.1") {
            return Err(ReadError {
                offset,
                message: format!(
                    "unsupported WARC version {version:?} (supported: WARC/0.17, 0.18, 1.0, 1.1)"
                ),
            });
        }
        if self.format == Format::Unknown {
            self.format = Format::Warc;
        }
        // Header block: up to the first empty line.
        let mut block = Vec::with_capacity(1024);
        block.extend_from_slice(first);
        block.extend_from_slice(b"\r\n");
        loop {
            if !self.read_line()? {
                return Err(ReadError {
                    offset,
                    message: "file ends inside a WARC header block".into(),
                });
            }
            if self.line.is_empty() {
                break;
            }
            if block.len() + self.line.len() > MAX_HEADER_BYTES {
                return Err(ReadError {
                    offset,
                    message: format!("WARC header block over {MAX_HEADER_BYTES} bytes"),
                });
            }
            block.extend_from_slice(&self.line);
            block.extend_from_slice(b"\r\n");
        }
        let fields = parse_fields(&block);
        let length_field = fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
            .map(|(_, v)| v);
        let declared_length = match length_field.filter(|v| !v.is_empty()) {
            None => {
                self.warnings.push(format!(
                    "record at offset {offset} has no Content-Length; taken as 0"
                ));
                0
            }
            Some(v) => std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or_else(|| ReadError {
                    offset,
                    message: format!("Content-Length is not a number: {}", quote(v)),
                })?,
        };
        let kind = fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("WARC-Type"))
            .map(|(_, v)| String::from_utf8_lossy(v).trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .map_or_else(
                || RecordKind::Other("(missing)".into()),
                |s| RecordKind::parse(&s),
            );
        self.finish(version, kind, fields, declared_length, start, offset)
    }

    fn finish(
        &mut self,
        version: String,
        kind: RecordKind,
        fields: Vec<Field>,
        declared_length: u64,
        start: u64,
        offset: u64,
    ) -> Result<Record, ReadError> {
        let (block, got) = self.read_block(declared_length)?;
        let block_end = self.pos;
        if let Some(d) = self.input_damage() {
            // A gzip member broke inside this record: the record is not delivered.
            return Err(ReadError {
                offset: d.offset,
                message: format!(
                    "{} (inside the record that starts at offset {offset})",
                    d.message
                ),
            });
        }
        let short = got < declared_length;
        let (mut sep, mut sep_len) = self.skip_separators()?;
        let arc = version.starts_with("ARC");
        let mut skipped_line = false;
        if sep_len == 0 && !short {
            // A declared length a little too short leaves the end of the block's last line
            // before the next record (other readers skip it too): skip that line, say so.
            let next = self.peek(16)?;
            let is_next_record = next.is_empty()
                || if arc {
                    has_known_scheme(next)
                } else {
                    next.len() >= 5 && is_warc_magic(next)
                };
            if !is_next_record {
                let at = self.pos;
                self.read_line()?;
                let skipped = self.pos - at;
                self.warnings.push(format!(
                    "record at offset {offset}: declared length {declared_length} is too short; skipped {skipped} bytes to the end of the line"
                ));
                (sep, sep_len) = self.skip_separators()?;
                skipped_line = true;
            }
        }
        let sep_ok = if arc {
            sep == b"\n" || sep == b"\r\n"
        } else {
            sep == b"\r\n\r\n" || sep == b"\n\n"
        };
        let at_end = self.fill()?.is_empty();
        if short {
            self.warnings.push(format!(
                "record at offset {offset} declares {declared_length} bytes but the file ends after {got}"
            ));
        } else if !sep_ok && !skipped_line && !(at_end && sep_len == 0 && arc) {
            self.warnings.push(format!(
                "record at offset {offset} is followed by {} instead of {}: its declared length may be off",
                if sep_len == 0 { "no separator".to_string() } else { quote(&sep) },
                if arc { "a newline" } else { "CRLF CRLF" }
            ));
        }
        // Peeking forces the move to the next gzip member, so the next record's member
        // offset (and so this record's compressed length) is known.
        let _ = self.fill()?;
        let length = if matches!(self.compression, Compression::None) {
            // As pywb's indexer and IA's CDX write it: a record of an uncompressed file
            // ends with its block, without the separator after it.
            block_end.saturating_sub(offset)
        } else if self.stream.get_mut().damage.is_some() || self.fill()?.is_empty() {
            self.stream
                .get_ref()
                .compressed_position()
                .saturating_sub(offset)
        } else {
            let next = self.pos;
            self.file_offset(next).saturating_sub(offset)
        };
        let mut rec = Record {
            offset,
            length,
            stream_offset: start,
            version,
            kind,
            fields,
            declared_length,
            over_cap: declared_length > self.cap as u64 && !short,
            block,
            short,
            warnings: std::mem::take(&mut self.warnings),
            file_date: None,
        };
        let about_file = match &rec.kind {
            RecordKind::Warcinfo => true,
            RecordKind::Other(k) => k == "arc_header",
            _ => false,
        };
        if about_file {
            // A date that cannot be read does not replace one that could.
            let date = rec.field_str("WARC-Date");
            if let Some(d) =
                date.filter(|d| crate::timestamp::Timestamp14::from_warc_date(d).is_some())
            {
                self.file_date = Some(d);
            }
        }
        rec.file_date = self.file_date.clone();
        Ok(rec)
    }

    fn read_arc_filedesc(
        &mut self,
        first: &[u8],
        start: u64,
        offset: u64,
    ) -> Result<Record, ReadError> {
        let parts = split_ws(first);
        let length = match parse_len(parts.last().copied(), offset) {
            Ok(l) => l,
            Err(_) => {
                // The version block is two lines and a blank one: find its end by lines.
                self.warnings.push(format!(
                    "ARC file header at offset {offset} has no valid length ({}); read up to its blank line",
                    quote(parts.last().copied().unwrap_or_default())
                ));
                let mut block_len = 0u64;
                let mut probe = self.peek(1 << 16)?.to_vec();
                probe.truncate(1 << 16);
                for line in probe.split_inclusive(|b| *b == b'\n') {
                    block_len += line.len() as u64;
                    if line.iter().all(|b| matches!(b, b'\r' | b'\n')) {
                        break;
                    }
                }
                block_len
            }
        };
        // The version line follows inside the block: "1 0 InternetArchive" or "2 0 …".
        let major = {
            let buf = self.peek(2)?;
            match buf.first() {
                Some(b'2') => 2,
                _ => 1,
            }
        };
        self.format = Format::Arc { major };
        let fields = vec![
            (
                "WARC-Target-URI".to_string(),
                parts.first().copied().unwrap_or_default().to_vec(),
            ),
            (
                "WARC-Date".to_string(),
                parts.get(2).copied().unwrap_or_default().to_vec(),
            ),
            (
                "Content-Type".to_string(),
                parts.get(3).copied().unwrap_or_default().to_vec(),
            ),
        ];
        self.finish(
            format!("ARC/{major}"),
            RecordKind::Other("arc_header".into()),
            fields,
            length,
            start,
            offset,
        )
    }

    fn read_arc(
        &mut self,
        first: &[u8],
        major: u8,
        start: u64,
        offset: u64,
    ) -> Result<Record, ReadError> {
        let parts = split_ws(first);
        // v1: URL IP DATE MIME LENGTH; v2: URL IP DATE MIME CODE CHECKSUM LOCATION OFFSET FILENAME LENGTH.
        // URLs may hold spaces, so fields are taken from the right.
        let tail = if major == 2 { 9 } else { 4 };
        let bad = || ReadError {
            offset,
            message: format!("invalid ARC v{major} record header line {}", quote(first)),
        };
        if parts.len() < tail + 1 {
            return Err(bad());
        }
        let n = parts.len();
        let length = match parse_len(Some(parts[n - 1]), offset) {
            Ok(l) => l,
            Err(_) => {
                self.warnings.push(format!(
                    "ARC record at offset {offset} has no valid length ({}); taken as 0",
                    quote(parts[n - 1])
                ));
                0
            }
        };
        let url = parts[..n - tail].join(&b' ');
        if !has_known_scheme(&url) {
            return Err(ReadError {
                offset,
                message: format!(
                    "ARC record header line does not start with a URL: {} (the previous record's length may be off)",
                    quote(first)
                ),
            });
        }
        let mut date = parts[n - tail + 1];
        if date.len() < 8 || !date.iter().all(u8::is_ascii_digit) {
            self.warnings.push(format!(
                "ARC record at offset {offset} has no valid date ({})",
                quote(date)
            ));
            date = b"";
        }
        let fields = vec![
            ("WARC-Target-URI".to_string(), url),
            ("WARC-IP-Address".to_string(), parts[n - tail].to_vec()),
            ("WARC-Date".to_string(), date.to_vec()),
            ("Content-Type".to_string(), parts[n - tail + 2].to_vec()),
        ];
        self.finish(
            format!("ARC/{major}"),
            RecordKind::Response,
            fields,
            length,
            start,
            offset,
        )
    }
}

impl Iterator for RecordReader {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(r) = self.pending.take() {
            return Some(Ok(r));
        }
        if self.done {
            return None;
        }
        match self.next_record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.done = true;
                self.input_damage().map(Err)
            }
            Err(e) => {
                self.done = true;
                // Gzip damage explains a framing error better than the framing error does.
                Some(Err(self.input_damage().unwrap_or(e)))
            }
        }
    }
}

fn is_warc_magic(line: &[u8]) -> bool {
    line.len() >= 5 && line[..5].eq_ignore_ascii_case(b"WARC/")
}

/// `URL IP DATE MIME LENGTH` with a 14-digit date and a numeric length.
fn looks_like_arc_v1_line(line: &[u8]) -> bool {
    let parts = split_ws(line);
    let n = parts.len();
    n >= 5
        && has_known_scheme(parts[0])
        && parts[n - 3].len() >= 12
        && parts[n - 3].iter().all(u8::is_ascii_digit)
        && parts[n - 1].iter().all(u8::is_ascii_digit)
}

/// ARC header lines start with a URL; a line that does not is misframed.
fn has_known_scheme(url: &[u8]) -> bool {
    const SCHEMES: &[&[u8]] = &[
        b"http:",
        b"https:",
        b"ftp:",
        b"dns:",
        b"filedesc:",
        b"file:",
        b"mailto:",
        b"rtsp:",
        b"mms:",
        b"whois:",
        b"gopher:",
        b"urn:",
        b"news:",
        b"nntp:",
        b"telnet:",
        b"wais:",
        b"prospero:",
    ];
    SCHEMES
        .iter()
        .any(|s| url.len() >= s.len() && url[..s.len()].eq_ignore_ascii_case(s))
}

fn split_ws(line: &[u8]) -> Vec<&[u8]> {
    line.split(|b| *b == b' ' || *b == b'\t')
        .filter(|p| !p.is_empty())
        .collect()
}

fn parse_len(v: Option<&[u8]>, offset: u64) -> Result<u64, ReadError> {
    v.and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| ReadError {
            offset,
            message: format!(
                "record length is not a number: {}",
                quote(v.unwrap_or_default())
            ),
        })
}

/// Named fields of a WARC header block (first line included). The `warc` crate's parser
/// takes well-formed blocks; folded lines and odd names fall back to a lenient reading.
fn parse_fields(block: &[u8]) -> Vec<Field> {
    if let Ok((rest, (_, fields, _))) = warc::parser::headers(block) {
        if rest.is_empty() {
            return fields
                .into_iter()
                .map(|(n, v)| (n.to_string(), trim(v).to_vec()))
                .collect();
        }
    }
    let mut out: Vec<Field> = Vec::new();
    for line in block.split(|b| *b == b'\n').skip(1) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        if matches!(line[0], b' ' | b'\t') {
            // Continuation of the previous field's value.
            if let Some((_, v)) = out.last_mut() {
                if !v.is_empty() {
                    v.push(b' ');
                }
                v.extend_from_slice(trim(line));
            }
            continue;
        }
        if let Some(i) = memchr::memchr(b':', line) {
            let name = String::from_utf8_lossy(trim(&line[..i])).to_string();
            out.push((name, trim(&line[i + 1..]).to_vec()));
        }
    }
    out
}

fn trim(v: &[u8]) -> &[u8] {
    let s = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let e = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map(|i| i + 1)
        .unwrap_or(s);
    &v[s..e.max(s)]
}

/// The first bytes of a line, printable, for error messages.
pub fn quote(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(60)];
    let s: String = cut.escape_ascii().to_string();
    if bytes.len() > 60 {
        format!("\"{s}…\"")
    } else {
        format!("\"{s}\"")
    }
}

/// Reads every record of a file; convenience for tools and tests.
pub fn read_all(path: &Path, cap: usize) -> (Vec<Record>, Option<ReadError>) {
    match RecordReader::open(path, cap) {
        Err(e) => (Vec::new(), Some(e)),
        Ok(reader) => {
            let mut out = Vec::new();
            for r in reader {
                match r {
                    Ok(r) => out.push(r),
                    Err(e) => return (out, Some(e)),
                }
            }
            (out, None)
        }
    }
}

/// A read buffer that can guarantee a look-ahead of several bytes (a `BufReader` only
/// promises one), so decisions about what comes next never depend on where a buffer
/// happens to end.
struct PeekReader {
    inner: Decompressed,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

impl PeekReader {
    const CAPACITY: usize = 256 * 1024;

    fn new(inner: Decompressed) -> Self {
        PeekReader {
            inner,
            buf: vec![0; Self::CAPACITY],
            start: 0,
            end: 0,
            eof: false,
        }
    }

    fn get_mut(&mut self) -> &mut Decompressed {
        &mut self.inner
    }

    fn get_ref(&self) -> &Decompressed {
        &self.inner
    }

    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.peek(1)
    }

    fn peek(&mut self, n: usize) -> std::io::Result<&[u8]> {
        while self.end - self.start < n && !self.eof {
            if self.start > 0 && (self.end == self.buf.len() || self.start == self.end) {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let grow = self.buf.len().max(n);
                self.buf.resize(self.buf.len() + grow, 0);
            }
            let got = self.inner.read(&mut self.buf[self.end..])?;
            if got == 0 {
                self.eof = true;
            }
            self.end += got;
        }
        Ok(&self.buf[self.start..self.end])
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }
}
