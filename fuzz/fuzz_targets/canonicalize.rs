//! The canonicalizer on arbitrary payloads: the first byte picks the media kind and the
//! declared charset (including wrong and unknown ones), the rest is the payload.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tidemark::canon::{canonicalize, media_kind, Canon, MediaKind};

const CHARSETS: &[Option<&str>] = &[
    None,
    Some("utf-8"),
    Some("iso-8859-1"),
    Some("windows-1252"),
    Some("shift_jis"),
    Some("euc-jp"),
    Some("gb18030"),
    Some("utf-16le"),
    Some("utf-16be"),
    Some("koi8-r"),
    Some("x-no-such-charset"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, payload)) = data.split_first() else {
        return;
    };
    let kind = match sel % 3 {
        0 => MediaKind::Html,
        1 => MediaKind::Text,
        _ => media_kind(None, payload),
    };
    let charset = CHARSETS[(sel as usize / 3) % CHARSETS.len()];
    let mut out = Canon::default();
    canonicalize(payload, kind, charset, &mut out);
    let tokens = out.token_iter().count();
    assert!(tokens <= payload.len() + 1, "{tokens} tokens from {} bytes", payload.len());
});
