//! The byte layer under the record reader: compression sniffed from the bytes (not the
//! file name), gzip member by member so every record knows the compressed offset of the
//! member it starts in, and a position counter on the decompressed stream.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::bufread::GzDecoder;

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
    Gzip {
        decoder: Option<GzDecoder<RawReader>>,
        /// The raw reader once the last member has ended (for the final position).
        trailing: Option<RawReader>,
    },
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
        let raw = BufReader::with_capacity(256 * 1024, Counting { inner: r, count: 0 });
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
        let (source, compression) = if head.starts_with(&GZIP_MAGIC) {
            (
                Source::Gzip {
                    decoder: Some(GzDecoder::new(raw)),
                    trailing: None,
                },
                Compression::Gzip,
            )
        } else {
            (Source::Plain(raw), Compression::None)
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
            Source::Gzip {
                decoder: Some(d), ..
            } => raw_position(d.get_ref()),
            Source::Gzip {
                trailing: Some(r), ..
            } => raw_position(r),
            Source::Gzip { .. } => self.compressed_len,
        }
    }

    fn read_gzip(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Source::Gzip { decoder, trailing } = &mut self.source else {
                unreachable!()
            };
            let Some(d) = decoder.as_mut() else {
                return Ok(0);
            };
            let member_start = self.members.back().map(|m| m.1).unwrap_or(0);
            match d.read(buf) {
                Ok(0) if buf.is_empty() => return Ok(0),
                Ok(0) => {
                    // Member finished: is another one next?
                    let mut raw = decoder.take().expect("decoder present").into_inner();
                    let at = raw_position(&raw);
                    let next = match raw.fill_buf() {
                        Ok(b) => b,
                        Err(e) => {
                            self.damage = Some(InputError {
                                offset: at,
                                message: format!("read error: {e}"),
                            });
                            return Ok(0);
                        }
                    };
                    if next.is_empty() {
                        *trailing = Some(raw);
                        return Ok(0);
                    }
                    // The buffer may end after the first magic byte: the decoder checks the rest.
                    if next[0] == GZIP_MAGIC[0] && (next.len() < 2 || next[1] == GZIP_MAGIC[1]) {
                        self.members.push_back((self.produced, at));
                        *decoder = Some(GzDecoder::new(raw));
                        continue;
                    }
                    // Padding of zeros or whitespace after the last member is harmless.
                    let mut rest = Vec::new();
                    let _ = (&mut raw).take(1 << 16).read_to_end(&mut rest);
                    if rest
                        .iter()
                        .all(|b| matches!(b, 0 | b'\r' | b'\n' | b' ' | b'\t'))
                        && rest.len() < 1 << 16
                    {
                        *trailing = Some(raw);
                        return Ok(0);
                    }
                    self.damage = Some(InputError {
                        offset: at,
                        message: format!(
                            "{} bytes after the gzip member that starts at offset {member_start} are not gzip (trailing garbage or a damaged member header)",
                            rest.len()
                        ),
                    });
                    *trailing = Some(raw);
                    return Ok(0);
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
