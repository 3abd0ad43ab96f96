//! Link-format (RFC 6690) as the Memento TimeMaps and the CDX API's `output=link` write
//! it, and the HTTP dates in it.

use crate::timestamp::Timestamp14;

/// A URL as the target of a link-format entry (RFC 6690, `<target>`): the bytes that
/// would end or break the entry (`<`, `>`, spaces, controls) percent-encoded; an
/// archived URL may hold them raw.
pub fn link_target(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.chars() {
        match c {
            '<' | '>' | ' ' | '"' => out.push_str(&format!("%{:02X}", c as u32)),
            c if c.is_ascii_control() => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// One memento of a link-format answer: `<uri>; rel="…"; datetime="…"` (and the
/// collection, in the CDX API's link output).
pub fn link_value(uri: &str, rel: &str, ts: &str, collection: Option<&str>) -> String {
    let mut v = format!(
        "<{}>; rel=\"{rel}\"; datetime=\"{}\"",
        link_target(uri),
        Timestamp14::http_date_of(ts)
    );
    if let Some(c) = collection {
        v.push_str(&format!("; collection=\"{c}\""));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits a link-format body into (target, parameters) per entry, as a client does:
    /// a target runs to its `>`, entries are separated by commas outside targets and
    /// quotes.
    fn parse_links(body: &str) -> Vec<(String, Vec<(String, String)>)> {
        let mut out = Vec::new();
        let mut rest = body.trim();
        while let Some(start) = rest.find('<') {
            let end = start + rest[start..].find('>').expect("a closed target");
            let target = rest[start + 1..end].to_string();
            rest = &rest[end + 1..];
            let mut params = Vec::new();
            let mut in_quote = false;
            let cut = rest
                .char_indices()
                .find(|(_, c)| {
                    if *c == '"' {
                        in_quote = !in_quote;
                    }
                    *c == ',' && !in_quote
                })
                .map_or(rest.len(), |(i, _)| i);
            for p in rest[..cut]
                .split(';')
                .map(str::trim)
                .filter(|p| !p.is_empty())
            {
                let (k, v) = p.split_once('=').expect("name=value");
                params.push((k.to_string(), v.trim_matches('"').to_string()));
            }
            out.push((target, params));
            rest = rest.get(cut + 1..).unwrap_or("");
        }
        out
    }

    #[test]
    fn link_format_entries_parse_back_whatever_the_url_holds() {
        let urls = [
            "http://a.example/plain",
            "http://a.example/q?x=1,2;y=\"z\"",
            "http://a.example/with space>and<angles",
            "http://a.example/café",
        ];
        let body: Vec<String> = urls
            .iter()
            .enumerate()
            .map(|(i, u)| link_value(u, "memento", &format!("2026010100000{i}"), Some("tm")))
            .collect();
        let parsed = parse_links(&body.join(",\n"));
        assert_eq!(parsed.len(), urls.len());
        for (i, (target, params)) in parsed.iter().enumerate() {
            assert!(!target.contains(['<', '>', ' ']), "{target}");
            assert_eq!(
                target
                    .replace("%20", " ")
                    .replace("%3E", ">")
                    .replace("%3C", "<")
                    .replace("%22", "\""),
                urls[i]
            );
            assert_eq!(params[0], ("rel".into(), "memento".into()));
            assert_eq!(params[1].1, format!("Thu, 01 Jan 2026 00:00:0{i} GMT"));
            assert_eq!(params[2], ("collection".into(), "tm".into()));
        }
    }
}
