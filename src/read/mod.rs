//! Reading: archive files (WARC 0.17–1.1, ARC v1/v2; plain or gzip) into records, and
//! the HTTP messages inside them.
//!
//! ```no_run
//! use tidemark::read::RecordReader;
//! for record in RecordReader::open("sweep.warc.gz".as_ref(), 16 << 20).unwrap() {
//!     match record {
//!         Ok(r) => println!("{} {} {:?}", r.offset, r.kind, r.target_uri()),
//!         Err(e) => eprintln!("damage {e}"),
//!     }
//! }
//! ```

pub mod http;
mod inflate;
pub mod input;
pub mod kind;
pub mod record;

pub use http::{parse_response, HttpResponse};
pub use input::{file_identity, Compression};
pub use kind::RecordKind;
pub use record::{read_all, ReadError, Record, RecordReader};

/// The record stored at `offset` of the WARC or ARC file at `path` (`length` bytes of it;
/// 0: to the file's end), read as the ingest read it, its block at most `cap` bytes.
pub fn record_at(
    path: &std::path::Path,
    offset: u64,
    length: u64,
    cap: usize,
) -> Result<Record, String> {
    let mut records =
        RecordReader::from_reader(open_at(path, offset, length)?, cap).map_err(|e| e.message)?;
    match records.next() {
        Some(Ok(r)) => Ok(r),
        Some(Err(e)) => Err(e.message),
        None => Err("no record there".into()),
    }
}

/// The stored bytes of the record at `offset` (`length` of them; 0: to the file's end).
pub fn open_at(
    path: &std::path::Path,
    offset: u64,
    length: u64,
) -> Result<Box<dyn std::io::Read + Send>, String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    f.seek(SeekFrom::Start(offset)).map_err(|e| e.to_string())?;
    Ok(if length > 0 {
        Box::new(f.take(length))
    } else {
        Box::new(f)
    })
}
