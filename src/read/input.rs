//! The byte layer under the record reader: compression sniffed from the bytes (not the
//! file name), gzip member by member so every record knows the compressed offset of the
//! member it starts in, and a position counter on the decompressed stream. Members are
//! decoded whole by libdeflate (`inflate.rs`) while they fit its buffers; a member that
//! does not (too large, damaged, truncated) and everything after it go through flate2's
//! streaming decoder, which names the damage.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::bufread::GzDecoder;

use super::inflate::{Member, MemberDecoder};

/// How a file's bytes are stored on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain bytes.
    None,
    /// gzip: one member per record (the WARC convention) or one member for the whole file.
    Gzip,
}

/// Counts the bytes read from the inner reader.
struct Counting<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

type RawReader = BufReader<Counting<Box<dyn Read + Send>>>;

fn raw_position(r: &RawReader) -> u64 {
    r.get_ref().count - r.buffer().len() as u64
}

/// What went wrong below the record layer.
#[derive(Debug)]
pub struct InputError {
    /// Byte offset in the file (compressed) where the damage was seen.
    pub offset: u64,
    /// What was wrong.
    pub message: String,
}

enum Source {
    Plain(RawReader),
    Whole(Box<Whole>),
    Gzip {
        decoder: Option<GzDecoder<RawReader>>,
        /// The raw reader once the last member has ended (for the final position).
        trailing: Option<RawReader>,
    },
}

/// gzip members decoded one whole member at a time.
struct Whole {
    inner: Box<dyn Read + Send>,
    inner_done: bool,
    /// Compressed bytes read ahead; `window[start..]` begins at file offset `offset`.
    window: Vec<u8>,
    start: usize,
    offset: u64,
    /// The member being served: `out[out_start..out_end]` not yet read.
    out: Vec<u8>,
    out_start: usize,
    out_end: usize,
    decoder: MemberDecoder,
    /// No member decoded yet (the first member's start is already in `members`).
    first: bool,
}

/// Compressed bytes a member is first tried with; doubled while it goes on past them.
const WINDOW: usize = 1 << 20;
/// Beyond these a member is streamed (flate2) instead.
const WINDOW_MAX: usize = 16 << 20;
/// Compressed bytes read at a time. What is left of the window moves to its front before
/// a read (less than [`WINDOW`]), so reads much larger than that keep the moving small.
const READ: usize = 4 << 20;
const OUT_MAX: usize = 64 << 20;

enum Next {
    /// A member is in `out`.
    Decoded,
    /// No bytes left.
    End,
    /// Hand the rest of the file to the streaming decoder.
    Stream,
}

impl Whole {
    /// Reads until `window[start..]` holds `want` bytes or the file ends.
    fn fill(&mut self, want: usize) -> io::Result<()> {
        if self.start > 0 {
            self.window.drain(..self.start);
            self.start = 0;
        }
        while self.window.len() < want && !self.inner_done {
            let len = self.window.len();
            self.window.resize(len.max(want).max(len + READ), 0);
            // The zeroed part is filled as far as reads go before what is left of it is
            // given back: a source that hands out a few bytes a read (a pipe, a test's
            // trickle) would otherwise have READ bytes zeroed for each of them.
            let mut got = len;
            while got < want && got < self.window.len() {
                match self.inner.read(&mut self.window[got..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.window.truncate(got);
                        return Err(e);
                    }
                    Ok(0) => {
                        self.inner_done = true;
                        break;
                    }
                    Ok(n) => got += n,
                }
            }
            self.window.truncate(got);
        }
        Ok(())
    }

    /// Decodes the next member into `out`, if libdeflate can take it whole.
    fn next(&mut self, members: &mut VecDeque<(u64, u64)>, produced: u64) -> io::Result<Next> {
        let mut want = WINDOW;
        loop {
            if self.window.len() - self.start < want {
                self.fill(want)?;
            }
            let avail = &self.window[self.start..];
            if avail.is_empty() {
                return Ok(Next::End);
            }
            if !avail.starts_with(&GZIP_MAGIC) {
                return Ok(Next::Stream);
            }
            match self.decoder.decode(avail, &mut self.out) {
                Member::Decoded {
                    consumed,
                    produced: n,
                } => {
                    if !self.first {
                        members.push_back((produced, self.offset));
                    }
                    self.first = false;
                    self.start += consumed;
                    self.offset += consumed as u64;
                    (self.out_start, self.out_end) = (0, n);
                    return Ok(Next::Decoded);
                }
                Member::OutputFull if self.out.len() < OUT_MAX => {
                    let grown = (self.out.len() * 2).min(OUT_MAX);
                    self.out.resize(grown, 0);
                }
                Member::NotDecoded if !self.inner_done && avail.len() < WINDOW_MAX => {
                    want = avail.len() * 2;
                }
                _ => return Ok(Next::Stream),
            }
        }
    }

    /// The undecoded rest of the file, as the streaming decoder's reader.
    fn into_raw(self) -> RawReader {
        let pending = self.window[self.start..].to_vec();
        let inner: Box<dyn Read + Send> = Box::new(io::Cursor::new(pending).chain(self.inner));
        BufReader::with_capacity(
            256 * 1024,
            Counting {
                inner,
                count: self.offset,
            },
        )
    }
}

/// The decompressed stream of one archive file, as a `Read` that remembers where every
/// gzip member began: (decompressed position, compressed offset), oldest first.
pub struct Decompressed {
    source: Source,
    /// Decompressed bytes produced so far.
    produced: u64,
    members: VecDeque<(u64, u64)>,
    /// First damage seen below the record layer; reading stops there.
    pub damage: Option<InputError>,
    compressed_len: u64,
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

impl Decompressed {
    /// Opens a file, sniffing its compression from the first bytes.
    pub fn open(path: &Path) -> io::Result<(Self, Compression)> {
        let file = File::open(path)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        Self::from_reader(Box::new(file), len)
    }

    /// Wraps any reader (tests, stdin).
    pub fn from_reader(
        mut r: Box<dyn Read + Send>,
        compressed_len: u64,
    ) -> io::Result<(Self, Compression)> {
        // Sniff the first bytes, however the source hands them out, then put them back.
        let mut first = Vec::with_capacity(4);
        while first.len() < 4 {
            let mut b = [0u8; 4];
            let n = r.read(&mut b[..4 - first.len()])?;
            if n == 0 {
                break;
            }
            first.extend_from_slice(&b[..n]);
        }
        let head = first.clone();
        let r: Box<dyn Read + Send> = Box::new(io::Cursor::new(first).chain(r));
        if head.starts_with(b"BZh") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bzip2-compressed file: not supported; decompress it first (bunzip2 -k FILE)",
            ));
        }
        if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "zstd-compressed WARC (.warc.zst): not supported yet; decompress it first (zstd -d FILE)",
            ));
        }
        let raw = |inner| BufReader::with_capacity(256 * 1024, Counting { inner, count: 0 });
        let (source, compression) = if !head.starts_with(&GZIP_MAGIC) {
            (Source::Plain(raw(r)), Compression::None)
        } else if let Some(decoder) = MemberDecoder::new() {
            let whole = Whole {
                inner: r,
                inner_done: false,
                window: Vec::new(),
                start: 0,
                offset: 0,
                out: vec![0; 1 << 20],
                out_start: 0,
                out_end: 0,
                decoder,
                first: true,
            };
            (Source::Whole(Box::new(whole)), Compression::Gzip)
        } else {
            let decoder = Some(GzDecoder::new(raw(r)));
            let trailing = None;
            (Source::Gzip { decoder, trailing }, Compression::Gzip)
        };
        let mut members = VecDeque::new();
        members.push_back((0, 0));
        Ok((
            Decompressed {
                source,
                produced: 0,
                members,
                damage: None,
                compressed_len,
            },
            compression,
        ))
    }

    /// Compressed offset of the member holding decompressed position `pos`, and whether
    /// `pos` is that member's first byte. Members before it are forgotten: positions are
    /// asked for in increasing order.
    pub fn member_of(&mut self, pos: u64) -> (u64, bool) {
        while self.members.len() > 1 && self.members[1].0 <= pos {
            self.members.pop_front();
        }
        let (start, offset) = self.members[0];
        (offset, start == pos)
    }

    /// Compressed bytes consumed so far (the file length once at the end).
    pub fn compressed_position(&self) -> u64 {
        match &self.source {
            Source::Plain(r) => raw_position(r),
            Source::Whole(w) => w.offset,
            Source::Gzip {
                decoder: Some(d), ..
            } => raw_position(d.get_ref()),
            Source::Gzip {
                trailing: Some(r), ..
            } => raw_position(r),
            Source::Gzip { .. } => self.compressed_len,
        }
    }

    /// The next whole member's bytes; the streaming decoder from the first member that
    /// is not decoded whole.
    fn read_whole(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Source::Whole(w) = &mut self.source else {
                return self.read_gzip(buf);
            };
            if w.out_start < w.out_end {
                let n = buf.len().min(w.out_end - w.out_start);
                buf[..n].copy_from_slice(&w.out[w.out_start..w.out_start + n]);
                w.out_start += n;
                self.produced += n as u64;
                return Ok(n);
            }
            if buf.is_empty() {
                return Ok(0);
            }
            match w.next(&mut self.members, self.produced) {
                Ok(Next::Decoded) => continue,
                Ok(Next::End) => return Ok(0),
                Ok(Next::Stream) => {}
                Err(e) => {
                    self.damage = Some(InputError {
                        offset: w.offset,
                        message: format!("read error: {e}"),
                    });
                    return Ok(0);
                }
            }
            let Source::Whole(w) = std::mem::replace(&mut self.source, Source::Plain(empty()))
            else {
                unreachable!()
            };
            let first = w.first;
            let raw = w.into_raw();
            if first {
                let decoder = Some(GzDecoder::new(raw));
                self.source = Source::Gzip {
                    decoder,
                    trailing: None,
                };
            } else if !self.after_member(raw) {
                return Ok(0);
            }
        }
    }

    fn read_gzip(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Source::Gzip { decoder, .. } = &mut self.source else {
                unreachable!()
            };
            let Some(d) = decoder.as_mut() else {
                return Ok(0);
            };
            let member_start = self.members.back().map(|m| m.1).unwrap_or(0);
            match d.read(buf) {
                Ok(0) if buf.is_empty() => return Ok(0),
                Ok(0) => {
                    let raw = decoder.take().expect("decoder present").into_inner();
                    if !self.after_member(raw) {
                        return Ok(0);
                    }
                }
                Ok(n) => {
                    self.produced += n as u64;
                    return Ok(n);
                }
                Err(e) => {
                    let at = raw_position(d.get_ref());
                    let what = if e.kind() == io::ErrorKind::UnexpectedEof {
                        "gzip stream ends in the middle of a member (file truncated)".to_string()
                    } else {
                        format!("corrupt gzip data: {e}")
                    };
                    self.damage = Some(InputError {
                        offset: member_start,
                        message: format!("{what}; member starts at offset {member_start}, damage seen by offset {at}"),
                    });
                    *decoder = None;
                    return Ok(0);
                }
            }
        }
    }

    /// A member has ended at `raw`'s position: the streaming decoder for the next one
    /// (true), or the end of the file, its harmless padding or the damage after it (false).
    fn after_member(&mut self, mut raw: RawReader) -> bool {
        let member_start = self.members.back().map(|m| m.1).unwrap_or(0);
        let at = raw_position(&raw);
        let (mut decoder, mut trailing) = (None, None);
        let next = match raw.fill_buf() {
            Ok(b) => Some(b),
            Err(e) => {
                self.damage = Some(InputError {
                    offset: at,
                    message: format!("read error: {e}"),
                });
                None
            }
        };
        match next {
            None => {}
            Some([]) => trailing = Some(raw),
            // The buffer may end after the first magic byte: the decoder checks the rest.
            Some(next)
                if next[0] == GZIP_MAGIC[0] && (next.len() < 2 || next[1] == GZIP_MAGIC[1]) =>
            {
                self.members.push_back((self.produced, at));
                decoder = Some(GzDecoder::new(raw));
            }
            Some(_) => {
                // Padding of zeros or whitespace after the last member is harmless.
                let mut rest = Vec::new();
                let _ = (&mut raw).take(1 << 16).read_to_end(&mut rest);
                let padding = rest
                    .iter()
                    .all(|b| matches!(b, 0 | b'\r' | b'\n' | b' ' | b'\t'))
                    && rest.len() < 1 << 16;
                if !padding {
                    self.damage = Some(InputError {
                        offset: at,
                        message: format!(
                            "{} bytes after the gzip member that starts at offset {member_start} are not gzip (trailing garbage or a damaged member header)",
                            rest.len()
                        ),
                    });
                }
                trailing = Some(raw);
            }
        }
        let more = decoder.is_some();
        self.source = Source::Gzip { decoder, trailing };
        more
    }
}

/// A reader with nothing in it (a placeholder while a source is taken apart).
fn empty() -> RawReader {
    let inner: Box<dyn Read + Send> = Box::new(io::empty());
    BufReader::with_capacity(0, Counting { inner, count: 0 })
}

impl Read for Decompressed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.damage.is_some() {
            return Ok(0);
        }
        match &mut self.source {
            Source::Plain(r) => {
                let n = r.read(buf)?;
                self.produced += n as u64;
                Ok(n)
            }
            Source::Whole(_) => self.read_whole(buf),
            Source::Gzip { .. } => self.read_gzip(buf),
        }
    }
}

/// Identity of an input file: xxh3-128 of its length, first and last MiB. Cheap for
/// multi-GB files and independent of the name or path it is given under.
pub fn file_identity(path: &std::path::Path) -> std::io::Result<[u8; 16]> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&len.to_be_bytes());
    let mut buf = vec![0u8; 1 << 20];
    let n = read_full(&mut f, &mut buf)?;
    h.update(&buf[..n]);
    if len > 2 << 20 {
        f.seek(SeekFrom::End(-(1 << 20)))?;
        let n = read_full(&mut f, &mut buf)?;
        h.update(&buf[..n]);
    } else if len > n as u64 {
        let mut rest = Vec::new();
        f.read_to_end(&mut rest)?;
        h.update(&rest);
    }
    Ok(h.digest128().to_be_bytes())
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut n = 0;
    while n < buf.len() {
        let k = f.read(&mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Bytes that do not compress (xorshift), so a member is larger than the window.
    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x9e3779b97f4a7c15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// Reads the whole stream, noting the member of each part's first byte.
    fn read(file: Vec<u8>, parts: &[&[u8]]) -> (Vec<u8>, Vec<(u64, bool)>, Option<InputError>) {
        let len = file.len() as u64;
        let (mut d, c) = Decompressed::from_reader(Box::new(io::Cursor::new(file)), len).unwrap();
        assert_eq!(c, Compression::Gzip);
        let mut all = Vec::new();
        d.read_to_end(&mut all).unwrap();
        let mut at = 0u64;
        let mut members = Vec::new();
        for p in parts {
            members.push(d.member_of(at));
            at += p.len() as u64;
        }
        (all, members, d.damage.take())
    }

    #[test]
    fn members_small_and_larger_than_the_buffers_keep_their_offsets() {
        let big = noise(3 << 20);
        let parts: [&[u8]; 4] = [b"first", &big, b"third", b""];
        let gz: Vec<Vec<u8>> = parts.iter().map(|p| gzip(p)).collect();
        let starts: Vec<u64> = gz
            .iter()
            .scan(0u64, |o, g| {
                let s = *o;
                *o += g.len() as u64;
                Some(s)
            })
            .collect();
        let (all, members, damage) = read(gz.concat(), &parts[..3]);
        assert!(damage.is_none());
        assert_eq!(all, parts.concat());
        assert_eq!(
            members,
            vec![(starts[0], true), (starts[1], true), (starts[2], true)]
        );
    }

    #[test]
    fn damage_inside_a_large_member_is_named_at_its_start() {
        let big = noise(2 << 20);
        let (a, b) = (gzip(b"first"), gzip(&big));
        let mut file = [a.clone(), b.clone()].concat();
        file.truncate(a.len() + b.len() / 2);
        let (all, _, damage) = read(file, &[]);
        assert_eq!(&all[..5], b"first");
        let damage = damage.expect("truncation seen");
        assert_eq!(damage.offset, a.len() as u64);
        assert!(
            damage.message.contains("file truncated"),
            "{}",
            damage.message
        );

        let mut file = [a.clone(), b"garbage after".to_vec()].concat();
        file.extend_from_slice(&gzip(b"never read"));
        let (all, _, damage) = read(file, &[]);
        assert_eq!(all, b"first");
        assert!(damage.unwrap().message.contains("are not gzip"));

        let (all, _, damage) = read([a, b"\r\n\0\0".to_vec()].concat(), &[]);
        assert_eq!(all, b"first");
        assert!(
            damage.is_none(),
            "padding after the last member is harmless"
        );
    }
}
