//! A record's type: the eight of WARC 1.1 (`WARC-Type`), and any other as written.

use std::fmt;

/// A record's type, as the reader lower-cases and trims `WARC-Type` (an ARC record is a
/// `response`). Stored and printed as that text, so the index and the outputs hold the
/// same bytes as when it was a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKind {
    /// `warcinfo`: about the file that follows.
    Warcinfo,
    /// `response`: a server's full response (status, headers, payload).
    Response,
    /// `resource`: a payload without a protocol response (a file, a DNS answer).
    Resource,
    /// `request`: what the crawler sent.
    Request,
    /// `metadata`: about another record.
    Metadata,
    /// `revisit`: the same content as an earlier capture, by digest or by URL and date.
    Revisit,
    /// `conversion`: another record's payload converted (e.g. to another format).
    Conversion,
    /// `continuation`: the rest of a segmented record.
    Continuation,
    /// Any other type, lower-cased; `(missing)` when the field is absent or empty.
    Other(String),
}

impl RecordKind {
    /// The type named by `s` (already lower-cased and trimmed).
    pub fn parse(s: &str) -> RecordKind {
        match s {
            "warcinfo" => RecordKind::Warcinfo,
            "response" => RecordKind::Response,
            "resource" => RecordKind::Resource,
            "request" => RecordKind::Request,
            "metadata" => RecordKind::Metadata,
            "revisit" => RecordKind::Revisit,
            "conversion" => RecordKind::Conversion,
            "continuation" => RecordKind::Continuation,
            other => RecordKind::Other(other.to_string()),
        }
    }

    /// The type as written in `WARC-Type`.
    pub fn as_str(&self) -> &str {
        match self {
            RecordKind::Warcinfo => "warcinfo",
            RecordKind::Response => "response",
            RecordKind::Resource => "resource",
            RecordKind::Request => "request",
            RecordKind::Metadata => "metadata",
            RecordKind::Revisit => "revisit",
            RecordKind::Conversion => "conversion",
            RecordKind::Continuation => "continuation",
            RecordKind::Other(s) => s,
        }
    }

    /// Whether a record of this type is a capture of a URL by its type alone; whether a
    /// record is indexed as one is [`crate::read::Record::is_capture`]'s to say (a
    /// `metadata` record may be).
    pub fn is_capture(&self) -> bool {
        matches!(
            self,
            RecordKind::Response
                | RecordKind::Revisit
                | RecordKind::Resource
                | RecordKind::Conversion
        )
    }
}

/// The empty type (what a default capture held as a string).
impl Default for RecordKind {
    fn default() -> Self {
        RecordKind::Other(String::new())
    }
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for RecordKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for RecordKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(RecordKind::parse(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_as_written() {
        for s in [
            "warcinfo",
            "response",
            "resource",
            "request",
            "metadata",
            "revisit",
            "conversion",
            "continuation",
            "(missing)",
            "x-custom",
        ] {
            let k = RecordKind::parse(s);
            assert_eq!(k.as_str(), s);
            assert_eq!(k.to_string(), s);
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{s}\""));
            assert_eq!(serde_json::from_str::<RecordKind>(&json).unwrap(), k);
        }
        assert!(RecordKind::parse("revisit").is_capture());
        assert!(!RecordKind::parse("request").is_capture());
        assert!(!RecordKind::parse("x-custom").is_capture());
    }
}
