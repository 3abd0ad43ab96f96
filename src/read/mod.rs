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
