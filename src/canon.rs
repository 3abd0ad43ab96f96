//! Canonical form: a payload (HTML or plain text, any charset) to the lower-cased token
//! stream that shingles are taken from.
//!
//! HTML is not parsed into a tree: one pass over the bytes skips tags, comments,
//! `<script>` and `<style>`, decodes entities, keeps `alt` text, and cuts runs of letters
//! and digits into tokens. A tag is a token boundary. Han, kana and Hangul characters,
//! written without spaces, are one token each so that CJK pages shingle as finely as
//! European ones. The token stream is written as one `String`, tokens separated by one
//! space: its 128-bit hash identifies lexically equal documents.

use std::borrow::Cow;

use encoding_rs::Encoding;

/// What kind of payload, for canonicalization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    /// text/html, application/xhtml+xml, or sniffed as HTML.
    Html,
    /// text/plain.
    Text,
    /// Anything else: captured, not sketched.
    Other,
}

/// Decides the media kind from the declared type, sniffing when it says nothing useful.
pub fn media_kind(mime: Option<&str>, payload: &[u8]) -> MediaKind {
    match mime.map(|m| m.trim().to_ascii_lowercase()) {
        Some(m) if m == "text/html" || m == "application/xhtml+xml" => MediaKind::Html,
        Some(m) if m == "text/plain" => MediaKind::Text,
        Some(m)
            if !(m.is_empty()
                || m == "application/octet-stream"
                || m == "unk"
                || m == "no-type"
                || m == "unknown") =>
        {
            MediaKind::Other
        }
        _ => {
            let head = &payload[..payload.len().min(512)];
            let start = head
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .unwrap_or(head.len());
            let head = &head[start..];
            if starts_with_ci(head, b"<!doctype html") || starts_with_ci(head, b"<html") {
                MediaKind::Html
            } else {
                MediaKind::Other
            }
        }
    }
}

/// The canonical form of one payload.
#[derive(Debug, Clone, Default)]
pub struct Canon {
    /// Tokens, lower-cased, separated by one space.
    pub text: String,
    /// Number of tokens.
    pub tokens: u32,
    /// Byte offset in `text` just past each token (so tokens are found without a scan).
    pub ends: Vec<u32>,
    /// `<title>` text, whitespace-collapsed, at most 200 characters.
    pub title: Option<String>,
    /// Name of the charset the payload was decoded from.
    pub charset: &'static str,
    /// The page's `<a href>` links in order, at most [`MAX_LINKS`], hrefs as written.
    pub links: Vec<RawLink>,
    /// The first `<base href>`, as written.
    pub base: Option<String>,
}

/// Links read from one page at most (a link farm's thousands add nothing a reader of
/// its anchors would use).
pub const MAX_LINKS: usize = 1000;

/// One `<a href>` of a page, where its anchor text lies among the page's tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLink {
    /// `href`, entities decoded.
    pub href: String,
    /// The first token of the anchor text.
    pub start: u32,
    /// Just past its last token (the anchor ends at `</a>`, the next `<a`, or the page's
    /// end).
    pub end: u32,
}

impl Canon {
    /// Empties it for reuse, keeping the allocation.
    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
        self.tokens = 0;
        self.title = None;
        self.charset = "UTF-8";
        self.links.clear();
        self.base = None;
    }

    /// The tokens, in order.
    pub fn token_iter(&self) -> impl Iterator<Item = &str> {
        let text = self.text.as_str();
        let mut start = 0usize;
        self.ends.iter().map(move |&e| {
            let t = &text[start..e as usize];
            start = e as usize + 1;
            t
        })
    }
}

/// Canonicalizes `payload` into `out` (cleared first).
pub fn canonicalize(payload: &[u8], kind: MediaKind, http_charset: Option<&str>, out: &mut Canon) {
    out.clear();
    if kind == MediaKind::Other {
        return;
    }
    let enc = choose_encoding(payload, kind, http_charset);
    out.charset = enc.name();
    let text: Cow<str> =
        if enc == encoding_rs::UTF_8 || (enc.is_ascii_compatible() && payload.is_ascii()) {
            let body = payload.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(payload);
            // Valid UTF-8 (nearly every page) is borrowed as it is, checked with SIMD:
            // std's check was 3% of a redesign sweep's CPU (`perf`: Utf8Chunks).
            match simdutf8::basic::from_utf8(body) {
                Ok(text) => Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(body),
            }
        } else {
            enc.decode_with_bom_removal(payload).0
        };
    let mut sink = TokenSink {
        out: &mut out.text,
        ends: &mut out.ends,
        in_token: false,
    };
    match kind {
        MediaKind::Html => {
            let mut links = Links {
                found: &mut out.links,
                base: &mut out.base,
                open: false,
            };
            out.title = scan_html(&text, &mut sink, &mut links);
            links.close(sink.ends.len() as u32);
        }
        MediaKind::Text => sink.feed(&text),
        MediaKind::Other => {}
    }
    sink.boundary();
    out.tokens = out.ends.len() as u32;
}

/// The text a reader sees, in lines: tags dropped (`<script>`, `<style>` with their
/// contents), entities decoded, `alt` text kept, case kept, white space folded, a line
/// broken at each block element (paragraphs, list items, headings, table rows, `<br>`…).
/// For showing what changed between two versions; the canonical form stays the tokens.
/// It walks the markup as `scan_html` does, apart from it: that one is the ingest's
/// innermost loop and feeds tokens, this one keeps text and lines.
pub fn visible_lines(payload: &[u8], kind: MediaKind, http_charset: Option<&str>) -> Vec<String> {
    visible(payload, kind, http_charset).lines
}

/// What a reader sees of a page: its lines ([`visible_lines`]) and the targets of its
/// links.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Visible {
    /// The text in lines.
    pub lines: Vec<String>,
    /// The `href` of each `<a>` and `<area>`, entities decoded, as written (relative
    /// ones too), in page order.
    pub hrefs: Vec<String>,
    /// The `href` of the first `<base>`, if any: what relative links resolve against.
    pub base: Option<String>,
}

/// The lines and links of a page; see [`visible_lines`].
pub fn visible(payload: &[u8], kind: MediaKind, http_charset: Option<&str>) -> Visible {
    let mut seen = Visible::default();
    if kind == MediaKind::Other {
        return seen;
    }
    let enc = choose_encoding(payload, kind, http_charset);
    let text = enc.decode_with_bom_removal(payload).0;
    let mut lines = Lines::default();
    if kind == MediaKind::Text {
        for l in text.lines() {
            lines.push_str(l);
            lines.end_line();
        }
        seen.lines = lines.done();
        return seen;
    }
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let Some(p) = memchr::memchr2(b'<', b'&', &b[i..]) else {
            lines.push_str(&text[i..]);
            break;
        };
        let j = i + p;
        lines.push_str(&text[i..j]);
        if b[j] == b'&' {
            let (c, used) = decode_entity(&b[j..]);
            match c {
                Some(c) => lines.push_char(c),
                None => lines.push_char('&'),
            }
            i = j + used.max(1);
            continue;
        }
        let next = b.get(j + 1).copied().unwrap_or(0);
        if next == b'!' || next == b'?' {
            i = if b[j..].starts_with(b"<!--") {
                memchr::memmem::find(&b[j + 4..], b"-->")
                    .map(|e| j + 4 + e + 3)
                    .unwrap_or(b.len())
            } else {
                skip_to_gt(b, j)
            };
            continue;
        }
        let closing = next == b'/';
        let name_start = if closing { j + 2 } else { j + 1 };
        let mut k = name_start;
        while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'-' || b[k] == b':') {
            k += 1;
        }
        if k == name_start || !b[name_start].is_ascii_alphabetic() {
            lines.push_char('<');
            i = j + 1;
            continue;
        }
        let name = text[name_start..k].to_ascii_lowercase();
        let end = tag_end(b, k);
        if !closing && matches!(name.as_str(), "script" | "style" | "title") {
            i = skip_raw_text(b, end, name.as_bytes());
            continue;
        }
        if !closing && matches!(name.as_str(), "a" | "area" | "base") {
            let attrs_end = if b.get(end.wrapping_sub(1)) == Some(&b'>') {
                end - 1
            } else {
                end
            };
            if let Some(href) = attribute(&text[k..attrs_end.max(k)], "href") {
                let href = decode_entities(href.trim());
                if name == "base" {
                    seen.base.get_or_insert(href);
                } else if !href.is_empty() {
                    seen.hrefs.push(href);
                }
            }
        }
        if BLOCK_TAGS.contains(&name.as_str()) {
            lines.end_line();
        } else if !closing && matches!(name.as_str(), "img" | "area" | "input") {
            let attrs_end = if b.get(end.wrapping_sub(1)) == Some(&b'>') {
                end - 1
            } else {
                end
            };
            if let Some(alt) = attribute(&text[k..attrs_end.max(k)], "alt") {
                lines.push_char(' ');
                lines.push_str(&alt);
                lines.push_char(' ');
            }
        }
        i = end;
    }
    seen.lines = lines.done();
    seen
}

/// Elements that begin or end a line of [`visible_lines`].
const BLOCK_TAGS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "caption",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

/// Lines being built: white space folded, empty lines dropped.
#[derive(Default)]
struct Lines {
    out: Vec<String>,
    line: String,
}

impl Lines {
    fn push_char(&mut self, c: char) {
        if c.is_whitespace() {
            if !self.line.is_empty() && !self.line.ends_with(' ') {
                self.line.push(' ');
            }
        } else {
            self.line.push(c);
        }
    }

    fn push_str(&mut self, s: &str) {
        for c in s.chars() {
            self.push_char(c);
        }
    }

    fn end_line(&mut self) {
        let l = self.line.trim_end();
        if !l.is_empty() {
            self.out.push(l.to_string());
        }
        self.line.clear();
    }

    fn done(mut self) -> Vec<String> {
        self.end_line();
        self.out
    }
}

fn choose_encoding(
    payload: &[u8],
    kind: MediaKind,
    http_charset: Option<&str>,
) -> &'static Encoding {
    if let Some((enc, _)) = Encoding::for_bom(payload) {
        return enc;
    }
    if let Some(enc) = http_charset.and_then(|c| Encoding::for_label(c.trim().as_bytes())) {
        return enc;
    }
    if kind == MediaKind::Html {
        if let Some(enc) = sniff_meta_charset(&payload[..payload.len().min(4096)]) {
            // WHATWG: a <meta> that claims UTF-16 in an ASCII-readable file means UTF-8.
            if enc == encoding_rs::UTF_16LE || enc == encoding_rs::UTF_16BE {
                return encoding_rs::UTF_8;
            }
            if enc == encoding_rs::X_USER_DEFINED {
                return encoding_rs::WINDOWS_1252;
            }
            return enc;
        }
    }
    encoding_rs::UTF_8
}

/// `<meta charset="x">` or `<meta http-equiv=… content="…; charset=x">` in the head.
fn sniff_meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let mut i = 0;
    while let Some(p) = find_ci(&head[i..], b"charset") {
        let mut j = i + p + 7;
        while j < head.len() && head[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < head.len() && head[j] == b'=' {
            j += 1;
            while j < head.len()
                && (head[j].is_ascii_whitespace() || head[j] == b'"' || head[j] == b'\'')
            {
                j += 1;
            }
            let s = j;
            while j < head.len()
                && (head[j].is_ascii_alphanumeric() || matches!(head[j], b'-' | b'_' | b'.' | b':'))
            {
                j += 1;
            }
            if let Some(enc) = Encoding::for_label(&head[s..j]) {
                return Some(enc);
            }
        }
        i = i + p + 7;
    }
    None
}

fn starts_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[..needle.len()].eq_ignore_ascii_case(needle)
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut i = 0;
    while let Some(p) = memchr::memchr2(first, first.to_ascii_uppercase(), &hay[i..]) {
        let at = i + p;
        if starts_with_ci(&hay[at..], needle) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// ASCII byte → its lower-case form if it is a letter or digit, else 0.
static ASCII_TOKEN: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if c.is_ascii_digit() || c.is_ascii_lowercase() {
            c
        } else if c.is_ascii_uppercase() {
            c + 32
        } else {
            0
        };
        b += 1;
    }
    t
};

/// Writes tokens into the canonical string, recording where each ends.
struct TokenSink<'a> {
    out: &'a mut String,
    ends: &'a mut Vec<u32>,
    in_token: bool,
}

impl TokenSink<'_> {
    #[inline]
    fn start_token(&mut self) {
        if !self.in_token {
            if !self.out.is_empty() {
                self.out.push(' ');
            }
            self.in_token = true;
        }
    }

    #[inline]
    fn boundary(&mut self) {
        if self.in_token {
            self.ends.push(self.out.len() as u32);
            self.in_token = false;
        }
    }

    /// Tokens of `s` (continuing the token the last feed ended in, if any).
    fn feed(&mut self, s: &str) {
        let bytes = s.as_bytes();
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi2")
        {
            let mut i = 0;
            while i < bytes.len() {
                let to = (i + 64).min(bytes.len());
                // SAFETY: the CPU has AVX-512 BW and VBMI2 (checked just above).
                i = if unsafe { self.feed_ascii_avx512(&bytes[i..to]) } {
                    to
                } else {
                    // Not all ASCII: these bytes as characters, then chunks again.
                    self.feed_scalar(s, i, to)
                };
            }
            return;
        }
        self.feed_scalar(s, 0, bytes.len());
    }

    /// [`TokenSink::feed`] of the characters of `s` starting in `from..to` (the last one
    /// may end past `to`); returns where the next character starts.
    fn feed_scalar(&mut self, s: &str, from: usize, to: usize) -> usize {
        let bytes = s.as_bytes();
        let mut i = from;
        while i < to {
            let b = bytes[i];
            if b < 0x80 {
                if ASCII_TOKEN[b as usize] != 0 {
                    // A run of ASCII letters and digits: copied whole, then lower-cased.
                    let start = i;
                    while i < bytes.len() && bytes[i] < 0x80 && ASCII_TOKEN[bytes[i] as usize] != 0
                    {
                        i += 1;
                    }
                    self.start_token();
                    let at = self.out.len();
                    self.out.push_str(&s[start..i]);
                    self.out[at..].make_ascii_lowercase();
                } else {
                    self.boundary();
                    i += 1;
                }
            } else {
                let c = s[i..]
                    .chars()
                    .next()
                    .expect("valid UTF-8 at a char boundary");
                self.feed_char(c);
                i += c.len_utf8();
            }
        }
        i
    }

    /// [`TokenSink::feed`] of `chunk` (at most 64 bytes) when it is all ASCII; `false`
    /// (nothing fed) when not. Which bytes are letters or digits is one mask; the
    /// tokens, lower-cased, with one space before each, leave in one compress and one
    /// store; only each token's end is a step of its own. Text is most of what an
    /// ingest canonicalizes and its byte loop was the scan's largest cost (rd100k
    /// redesign sweep, perf: `feed` 5.8% of the ingest's CPU, its copies 1.5% more).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw,avx512vbmi2")]
    unsafe fn feed_ascii_avx512(&mut self, chunk: &[u8]) -> bool {
        use std::arch::x86_64::*;
        let n = chunk.len();
        debug_assert!((1..=64).contains(&n));
        let live: u64 = if n >= 64 { !0 } else { (1u64 << n) - 1 };
        // SAFETY: a masked load reads (and may fault on) only the `n` bytes of `chunk`.
        let v = unsafe { _mm512_maskz_loadu_epi8(live, chunk.as_ptr() as *const i8) };
        if _mm512_movepi8_mask(v) & live != 0 {
            return false;
        }
        let within = |x: __m512i, lo: u8, hi: u8| {
            _mm512_cmpge_epu8_mask(x, _mm512_set1_epi8(lo as i8))
                & _mm512_cmple_epu8_mask(x, _mm512_set1_epi8(hi as i8))
        };
        // Upper-case letters take the 0x20 bit; lower-case ones and digits have it.
        let folded = _mm512_or_si512(v, _mm512_set1_epi8(0x20));
        let token = (within(folded, b'a', b'z') | within(v, b'0', b'9')) & live;
        // Tokens lower-cased, every other byte a space (only kept before a token).
        let bytes = _mm512_mask_blend_epi8(token, _mm512_set1_epi8(b' ' as i8), folded);
        let carried = self.in_token as u64;
        if carried == 1 && token & 1 == 0 {
            self.boundary();
        }
        // Tokens starting here; a space goes before each, but the text's first.
        let starts = token & !((token << 1) | carried);
        let mut keep = token | (starts >> 1);
        if starts & 1 != 0 && !self.out.is_empty() {
            self.out.push(' ');
        }
        if self.out.is_empty() {
            keep &= !((starts & starts.wrapping_neg()) >> 1);
        }
        let packed = _mm512_maskz_compress_epi8(keep, bytes);
        let kept = keep.count_ones() as usize;
        // SAFETY: the bytes added are letters, digits and spaces (ASCII), so the text
        // stays UTF-8; the 64-byte store lands in capacity reserved for it, and the
        // length takes only the `kept` bytes of it that are the chunk's.
        let base = unsafe {
            let text = self.out.as_mut_vec();
            text.reserve(64);
            let base = text.len();
            _mm512_storeu_si512(text.as_mut_ptr().add(base) as *mut __m512i, packed);
            text.set_len(base + kept);
            base
        };
        // Tokens ending inside the chunk (one ending at its last byte may go on).
        let mut ends = token & !(token >> 1) & (live >> 1);
        while ends != 0 {
            let q = ends.trailing_zeros();
            let through = u64::MAX >> (63 - q);
            self.ends
                .push((base + (keep & through).count_ones() as usize) as u32);
            ends &= ends - 1;
        }
        self.in_token = token >> (n - 1) & 1 == 1;
        true
    }

    fn feed_char(&mut self, c: char) {
        if c.is_ascii() {
            let t = ASCII_TOKEN[c as usize];
            if t != 0 {
                self.start_token();
                self.out.push(t as char);
            } else {
                self.boundary();
            }
        } else if is_cjk(c) {
            self.boundary();
            self.start_token();
            self.out.push(c);
            self.boundary();
        } else if c.is_alphanumeric() {
            self.start_token();
            for l in c.to_lowercase() {
                self.out.push(l);
            }
        } else {
            self.boundary();
        }
    }
}

/// Scripts written without spaces between words: one token per character.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x2FA1F) // CJK extensions B–F, supplement
}

/// The links of a page as [`scan_html`] meets them.
struct Links<'a> {
    found: &'a mut Vec<RawLink>,
    base: &'a mut Option<String>,
    /// The last link's anchor has not ended yet.
    open: bool,
}

impl Links<'_> {
    /// Ends the open anchor at token `at`.
    fn close(&mut self, at: u32) {
        if self.open {
            if let Some(l) = self.found.last_mut() {
                l.end = at;
            }
            self.open = false;
        }
    }
}

/// One pass over HTML text; returns the title.
fn scan_html(html: &str, sink: &mut TokenSink, links: &mut Links) -> Option<String> {
    let b = html.as_bytes();
    let mut i = 0;
    let mut title_start: Option<usize> = None;
    let mut title: Option<String> = None;
    while i < b.len() {
        let Some(p) = memchr::memchr2(b'<', b'&', &b[i..]) else {
            sink.feed(&html[i..]);
            break;
        };
        let j = i + p;
        sink.feed(&html[i..j]);
        if b[j] == b'&' {
            let (c, used) = decode_entity(&b[j..]);
            match c {
                Some(c) => sink.feed_char(c),
                None => sink.boundary(),
            }
            i = j + used;
            continue;
        }
        // b[j] == '<'
        let next = b.get(j + 1).copied().unwrap_or(0);
        if next == b'!' {
            if b[j..].starts_with(b"<!--") {
                i = match memchr::memmem::find(&b[j + 4..], b"-->") {
                    Some(e) => j + 4 + e + 3,
                    None => b.len(),
                };
            } else {
                i = skip_to_gt(b, j);
            }
            sink.boundary();
            continue;
        }
        if next == b'?' {
            i = skip_to_gt(b, j);
            sink.boundary();
            continue;
        }
        let closing = next == b'/';
        let name_start = if closing { j + 2 } else { j + 1 };
        let mut k = name_start;
        while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'-' || b[k] == b':') {
            k += 1;
        }
        if k == name_start || !b[name_start].is_ascii_alphabetic() {
            // A lone '<' is text (and not part of a word).
            sink.boundary();
            i = j + 1;
            continue;
        }
        let name = &b[name_start..k];
        let end = tag_end(b, k);
        sink.boundary();
        if !closing && (name.eq_ignore_ascii_case(b"script") || name.eq_ignore_ascii_case(b"style"))
        {
            i = skip_raw_text(b, end, name);
            continue;
        }
        if name.eq_ignore_ascii_case(b"a") {
            let at = sink.ends.len() as u32;
            links.close(at);
            if !closing && links.found.len() < MAX_LINKS {
                if let Some(href) = attribute(attrs_of(html, k, end), "href") {
                    links.found.push(RawLink {
                        href: decode_entities(href.trim()),
                        start: at,
                        end: at,
                    });
                    links.open = true;
                }
            }
        } else if name.eq_ignore_ascii_case(b"base") {
            if !closing && links.base.is_none() {
                *links.base =
                    attribute(attrs_of(html, k, end), "href").map(|h| decode_entities(h.trim()));
            }
        } else if name.eq_ignore_ascii_case(b"title") {
            if closing {
                if let (Some(s), None) = (title_start, &title) {
                    title = Some(clean_title(&html[s..j]));
                }
            } else if title_start.is_none() {
                title_start = Some(end.min(b.len()));
            }
        } else if !closing
            && (name.eq_ignore_ascii_case(b"img")
                || name.eq_ignore_ascii_case(b"area")
                || name.eq_ignore_ascii_case(b"input"))
        {
            let attrs_end = if b.get(end.wrapping_sub(1)) == Some(&b'>') {
                end - 1
            } else {
                end
            };
            if let Some(alt) = attribute(&html[k..attrs_end.max(k)], "alt") {
                feed_with_entities(&alt, sink);
                sink.boundary();
            }
        }
        i = end;
    }
    title
}

/// The attributes of the tag whose name ends at `k` and that ends just before `end`.
fn attrs_of(html: &str, k: usize, end: usize) -> &str {
    let b = html.as_bytes();
    let attrs_end = match b.get(end.wrapping_sub(1)) == Some(&b'>') {
        true => end - 1,
        false => end,
    };
    &html[k..attrs_end.max(k)]
}

/// Index just past the '>' that ends the tag whose name ends at `k`; quotes respected.
fn tag_end(b: &[u8], mut k: usize) -> usize {
    while k < b.len() {
        match memchr::memchr3(b'>', b'"', b'\'', &b[k..]) {
            None => return b.len(),
            Some(p) => {
                let at = k + p;
                match b[at] {
                    b'>' => return at + 1,
                    q => {
                        // Only a quote that opens an attribute value (after '=') is a quote.
                        let mut back = at;
                        while back > 0 && b[back - 1].is_ascii_whitespace() {
                            back -= 1;
                        }
                        if back > 0 && b[back - 1] == b'=' {
                            match memchr::memchr(q, &b[at + 1..]) {
                                Some(e) => k = at + 1 + e + 1,
                                None => return b.len(),
                            }
                        } else {
                            k = at + 1;
                        }
                    }
                }
            }
        }
    }
    b.len()
}

fn skip_to_gt(b: &[u8], j: usize) -> usize {
    memchr::memchr(b'>', &b[j..])
        .map(|p| j + p + 1)
        .unwrap_or(b.len())
}

/// After `<script …>` or `<style …>`: index past the matching end tag.
fn skip_raw_text(b: &[u8], mut i: usize, name: &[u8]) -> usize {
    while let Some(p) = memchr::memmem::find(&b[i..], b"</") {
        let at = i + p + 2;
        if starts_with_ci(&b[at..], name) {
            return skip_to_gt(b, at);
        }
        i = at;
    }
    b.len()
}

/// Value of one attribute in a tag's attribute text.
fn attribute(attrs: &str, name: &str) -> Option<String> {
    let b = attrs.as_bytes();
    let mut i = 0;
    while let Some(p) = find_ci(&b[i..], name.as_bytes()) {
        let at = i + p;
        let before_ok =
            at == 0 || b[at - 1].is_ascii_whitespace() || b[at - 1] == b'"' || b[at - 1] == b'\'';
        let mut j = at + name.len();
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if before_ok && j < b.len() && b[j] == b'=' {
            j += 1;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < b.len() && (b[j] == b'"' || b[j] == b'\'') {
                let q = b[j];
                let e = memchr::memchr(q, &b[j + 1..])
                    .map(|e| j + 1 + e)
                    .unwrap_or(b.len());
                return Some(attrs[j + 1..e].to_string());
            }
            let e = b[j..]
                .iter()
                .position(|c| c.is_ascii_whitespace() || *c == b'/')
                .map(|e| j + e)
                .unwrap_or(b.len());
            return Some(attrs[j..e].to_string());
        }
        i = at + name.len();
    }
    None
}

fn feed_with_entities(s: &str, sink: &mut TokenSink) {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'&', &b[i..]) {
        let j = i + p;
        sink.feed(&s[i..j]);
        let (c, used) = decode_entity(&b[j..]);
        match c {
            Some(c) => sink.feed_char(c),
            None => sink.boundary(),
        }
        i = j + used;
    }
    sink.feed(&s[i..]);
}

/// `s` with its character references decoded (an unknown one kept as it is).
fn decode_entities(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'&', &b[i..]) {
        let j = i + p;
        out.push_str(&s[i..j]);
        let (c, used) = decode_entity(&b[j..]);
        match c {
            Some(c) => {
                out.push(c);
                i = j + used.max(1);
            }
            None => {
                out.push('&');
                i = j + 1;
            }
        }
    }
    out.push_str(&s[i..]);
    out
}

fn clean_title(raw: &str) -> String {
    let mut s = String::new();
    let mut decoded = String::new();
    let b = raw.as_bytes();
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'&', &b[i..]) {
        let j = i + p;
        decoded.push_str(&raw[i..j]);
        let (c, used) = decode_entity(&b[j..]);
        decoded.push(c.unwrap_or(' '));
        i = j + used;
    }
    decoded.push_str(&raw[i..]);
    for w in decoded.split_whitespace() {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(w);
        if s.chars().count() > 200 {
            return s.chars().take(200).collect();
        }
    }
    s
}

/// Decodes the entity at the start of `b` (which begins with '&'). Returns the character
/// (None for an unknown entity or a lone '&') and how many bytes were used.
fn decode_entity(b: &[u8]) -> (Option<char>, usize) {
    debug_assert_eq!(b[0], b'&');
    if b.get(1) == Some(&b'#') {
        let (hex, start) = match b.get(2) {
            Some(b'x' | b'X') => (true, 3),
            _ => (false, 2),
        };
        let mut k = start;
        while k < b.len()
            && k - start < 8
            && (if hex {
                b[k].is_ascii_hexdigit()
            } else {
                b[k].is_ascii_digit()
            })
        {
            k += 1;
        }
        if k == start {
            return (None, 1);
        }
        let digits = std::str::from_utf8(&b[start..k]).unwrap_or("0");
        let n = u32::from_str_radix(digits, if hex { 16 } else { 10 }).unwrap_or(0xFFFD);
        let used = if b.get(k) == Some(&b';') { k + 1 } else { k };
        // Windows-1252 numeric references in the 0x80–0x9F range, as browsers read them.
        let c = match n {
            0x80..=0x9F => encoding_rs::WINDOWS_1252
                .decode_without_bom_handling(&[n as u8])
                .0
                .chars()
                .next(),
            _ => char::from_u32(n),
        };
        return (c.or(Some('\u{FFFD}')), used);
    }
    let mut k = 1;
    while k < b.len() && k < 12 && b[k].is_ascii_alphanumeric() {
        k += 1;
    }
    if k == 1 {
        return (None, 1);
    }
    let name = &b[1..k];
    match named_entity(name) {
        Some(c) => (Some(c), if b.get(k) == Some(&b';') { k + 1 } else { k }),
        // Unknown: the '&' is a separator, the name is read as text.
        None => (None, 1),
    }
}

/// The named entities that occur in real pages often enough to matter for tokens
/// (letters), plus the common separators.
fn named_entity(name: &[u8]) -> Option<char> {
    const TABLE: &[(&str, char)] = &[
        ("amp", '&'),
        ("lt", '<'),
        ("gt", '>'),
        ("quot", '"'),
        ("apos", '\''),
        ("nbsp", ' '),
        ("copy", '©'),
        ("reg", '®'),
        ("trade", '™'),
        ("hellip", '…'),
        ("mdash", '—'),
        ("ndash", '–'),
        ("lsquo", '‘'),
        ("rsquo", '’'),
        ("ldquo", '“'),
        ("rdquo", '”'),
        ("laquo", '«'),
        ("raquo", '»'),
        ("middot", '·'),
        ("bull", '•'),
        ("euro", '€'),
        ("pound", '£'),
        ("yen", '¥'),
        ("cent", '¢'),
        ("sect", '§'),
        ("para", '¶'),
        ("deg", '°'),
        ("times", '×'),
        ("divide", '÷'),
        ("shy", '\u{AD}'),
        ("zwnj", '\u{200C}'),
        ("zwj", '\u{200D}'),
        ("ensp", ' '),
        ("emsp", ' '),
        ("thinsp", ' '),
        ("iexcl", '¡'),
        ("iquest", '¿'),
        ("ordf", 'ª'),
        ("ordm", 'º'),
        ("sup1", '¹'),
        ("sup2", '²'),
        ("sup3", '³'),
        ("frac12", '½'),
        ("frac14", '¼'),
        ("frac34", '¾'),
        ("micro", 'µ'),
        ("Agrave", 'À'),
        ("Aacute", 'Á'),
        ("Acirc", 'Â'),
        ("Atilde", 'Ã'),
        ("Auml", 'Ä'),
        ("Aring", 'Å'),
        ("AElig", 'Æ'),
        ("Ccedil", 'Ç'),
        ("Egrave", 'È'),
        ("Eacute", 'É'),
        ("Ecirc", 'Ê'),
        ("Euml", 'Ë'),
        ("Igrave", 'Ì'),
        ("Iacute", 'Í'),
        ("Icirc", 'Î'),
        ("Iuml", 'Ï'),
        ("ETH", 'Ð'),
        ("Ntilde", 'Ñ'),
        ("Ograve", 'Ò'),
        ("Oacute", 'Ó'),
        ("Ocirc", 'Ô'),
        ("Otilde", 'Õ'),
        ("Ouml", 'Ö'),
        ("Oslash", 'Ø'),
        ("Ugrave", 'Ù'),
        ("Uacute", 'Ú'),
        ("Ucirc", 'Û'),
        ("Uuml", 'Ü'),
        ("Yacute", 'Ý'),
        ("THORN", 'Þ'),
        ("szlig", 'ß'),
        ("agrave", 'à'),
        ("aacute", 'á'),
        ("acirc", 'â'),
        ("atilde", 'ã'),
        ("auml", 'ä'),
        ("aring", 'å'),
        ("aelig", 'æ'),
        ("ccedil", 'ç'),
        ("egrave", 'è'),
        ("eacute", 'é'),
        ("ecirc", 'ê'),
        ("euml", 'ë'),
        ("igrave", 'ì'),
        ("iacute", 'í'),
        ("icirc", 'î'),
        ("iuml", 'ï'),
        ("eth", 'ð'),
        ("ntilde", 'ñ'),
        ("ograve", 'ò'),
        ("oacute", 'ó'),
        ("ocirc", 'ô'),
        ("otilde", 'õ'),
        ("ouml", 'ö'),
        ("oslash", 'ø'),
        ("ugrave", 'ù'),
        ("uacute", 'ú'),
        ("ucirc", 'û'),
        ("uuml", 'ü'),
        ("yacute", 'ý'),
        ("thorn", 'þ'),
        ("yuml", 'ÿ'),
        ("OElig", 'Œ'),
        ("oelig", 'œ'),
        ("Scaron", 'Š'),
        ("scaron", 'š'),
        ("Yuml", 'Ÿ'),
        ("fnof", 'ƒ'),
        ("alpha", 'α'),
        ("beta", 'β'),
        ("gamma", 'γ'),
        ("delta", 'δ'),
        ("pi", 'π'),
        ("mu", 'μ'),
        ("omega", 'ω'),
        ("sigma", 'σ'),
        ("lambda", 'λ'),
        ("theta", 'θ'),
    ];
    let name = std::str::from_utf8(name).ok()?;
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(html: &str) -> Canon {
        let mut c = Canon::default();
        canonicalize(html.as_bytes(), MediaKind::Html, None, &mut c);
        c
    }

    #[test]
    fn drops_markup_keeps_text_and_alt() {
        let c = canon(
            "<html><head><title>A &amp; B</title><style>p{x:1}</style><script>var a='<b>';</script></head>\
             <body><!-- hidden --><p class=\"a>b\">Hello,&nbsp;World&#33; Caf&eacute;</p>\
             <img src=x alt=\"Red Kite\"><p>2026</p></body></html>",
        );
        assert_eq!(c.text, "a b hello world café red kite 2026");
        assert_eq!(c.tokens, 8);
        assert_eq!(c.title.as_deref(), Some("A & B"));
    }

    #[test]
    fn tags_are_boundaries_and_case_folds() {
        assert_eq!(canon("<p>ONE</p><p>Two</p>ÉTÉ").text, "one two été");
        assert_eq!(canon("a < b and c <3 d").text, "a b and c 3 d");
    }

    #[test]
    fn cjk_is_one_token_per_character() {
        assert_eq!(canon("<p>日本語 text</p>").text, "日 本 語 text");
    }

    #[test]
    fn charset_from_meta_and_header() {
        let mut c = Canon::default();
        let latin1 = b"<meta charset=\"iso-8859-1\"><p>caf\xe9</p>";
        canonicalize(latin1, MediaKind::Html, None, &mut c);
        assert_eq!(c.text, "caf\u{e9}");
        let cp1251 = b"<p>\xcf\xf0\xe8\xe2\xe5\xf2</p>";
        canonicalize(cp1251, MediaKind::Html, Some("windows-1251"), &mut c);
        assert_eq!(c.text, "привет");
    }

    #[test]
    fn blocks_tokenize_as_characters_do() {
        // Random text of letters, digits, separators and a few non-ASCII characters,
        // fed in random pieces: by 64-byte chunks where the CPU can, and by characters.
        let alphabet: Vec<char> = "aZ9 .-_\n\tqQ0<>éÉ日ß"
            .chars()
            .chain(('a'..='z').chain('A'..='Z').chain('0'..='9'))
            .collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            state = crate::sketch::fmix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
            (state % n as u64) as usize
        };
        for round in 0..400 {
            let len = next(300);
            // Some texts all ASCII (the block path throughout), some with rare others.
            let rare = if round % 2 == 0 { 0 } else { 40 };
            let text: String = (0..len)
                .map(|_| {
                    let c = alphabet[next(alphabet.len())];
                    if !c.is_ascii() && next(100) >= rare {
                        'x'
                    } else {
                        c
                    }
                })
                .collect();
            let (mut a, mut b) = ((String::new(), Vec::new()), (String::new(), Vec::new()));
            let mut blocks = TokenSink {
                out: &mut a.0,
                ends: &mut a.1,
                in_token: false,
            };
            let mut at = 0;
            while at < text.len() {
                let mut to = (at + 1 + next(80)).min(text.len());
                while !text.is_char_boundary(to) {
                    to += 1;
                }
                blocks.feed(&text[at..to]);
                at = to;
            }
            blocks.boundary();
            let mut chars = TokenSink {
                out: &mut b.0,
                ends: &mut b.1,
                in_token: false,
            };
            chars.feed_scalar(&text, 0, text.len());
            chars.boundary();
            assert_eq!(a, b, "{text:?}");
        }
    }

    #[test]
    fn sniffs_html_without_type() {
        assert_eq!(media_kind(None, b"  <!DOCTYPE html><p>x"), MediaKind::Html);
        assert_eq!(media_kind(Some("image/png"), b"<html>"), MediaKind::Other);
    }

    #[test]
    fn visible_lines_keep_case_and_break_at_blocks() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\n<h1>Big  Title</h1><p>One &amp; <b>two</b>\n three.<br>Four</p><ul><li>a</li><li><img alt=\"logo\" src=x></li></ul><script>x()</script></body></html>";
        assert_eq!(
            visible_lines(html.as_bytes(), MediaKind::Html, None),
            vec!["Big Title", "One & two three.", "Four", "a", "logo"]
        );
        assert_eq!(
            visible_lines(b"x  y\n\nz\n", MediaKind::Text, None),
            vec!["x y", "z"]
        );
    }

    #[test]
    fn visible_keeps_the_links_of_anchors_and_the_base() {
        let html = "<base href='/docs/'><a href=\"a.html?x=1&amp;y=2\">A</a> <A HREF=b.html>B</A><area href=\"#top\"><a name=x>no</a><a href=\"\">empty</a><script>'<a href=no>'</script>";
        let v = visible(html.as_bytes(), MediaKind::Html, None);
        assert_eq!(v.hrefs, vec!["a.html?x=1&y=2", "b.html", "#top"]);
        assert_eq!(v.base.as_deref(), Some("/docs/"));
        assert_eq!(v.lines, vec!["A Bnoempty"]);
    }
}
