//! On-the-fly resemblance (the paper's second approach): sketch a document, count the
//! docs that share its posting values, estimate resemblance and containment from their
//! sketches, sort, threshold. Works for documents that were never ingested.

use std::path::Path;

use serde::Serialize;

use super::{resemblances, round3, CaptureRow, Searcher};
use crate::capture::{analyze, Scratch};
use crate::compact::{compare, CompactSketch};
use crate::index::candidates;
use crate::index::postings::posting_values;
use crate::index::{cf, IndexError, Result};
use crate::read::{Record, RecordReader};
use crate::sketch::{Sketch, SketchParams};
use crate::timestamp::Timestamp14;
use crate::url::surt;

/// A doc that resembles (or contains) the input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DocMatch {
    /// Doc id.
    pub doc: u64,
    /// Estimated resemblance to the input.
    pub resemblance: f64,
    /// Estimated containment of the input in the doc.
    pub containment: f64,
    /// Estimated containment of the doc in the input.
    pub contained: f64,
}

/// Docs whose estimated resemblance to `sketch` — or, with `by_containment`, containment
/// of `sketch` in them — reaches `floor`, best first (ties: lower doc id first).
/// `posting`: the posting level and values of the input (see [`candidates::search`]).
pub fn similar_docs(
    s: &Searcher,
    sketch: &Sketch,
    posting: (u8, Vec<u64>),
    floor: f64,
    by_containment: bool,
) -> Result<Vec<DocMatch>> {
    Ok(matches(s, sketch, posting, floor, by_containment)?
        .into_iter()
        .map(|(m, _)| m)
        .collect())
}

/// [`similar_docs`], each match with its doc's compact sketch (read once for both).
fn matches(
    s: &Searcher,
    sketch: &Sketch,
    posting: (u8, Vec<u64>),
    floor: f64,
    by_containment: bool,
) -> Result<Vec<(DocMatch, CompactSketch)>> {
    if sketch.values.is_empty() {
        return Ok(Vec::new());
    }
    let index = s.index;
    // Every candidate is compared (no estimate from the shared count first: a query
    // may ask below the edge floor).
    let cands =
        candidates::search(index, &s.fresh, &s.over_cap, &s.reader, posting)?.to_compare(|_| true);
    let mine = CompactSketch::of(sketch);
    let mut out = Vec::new();
    for (d, theirs) in index.sketches().read_compact(&cands, None)? {
        // The candidate as `a`: containment_a_in_b = candidate in input.
        let Some(e) = compare(&mine, &theirs, None) else {
            continue;
        };
        let m = DocMatch {
            doc: d,
            resemblance: e.resemblance,
            containment: e.containment_b_in_a,
            contained: e.containment_a_in_b,
        };
        let key = if by_containment {
            m.containment
        } else {
            m.resemblance
        };
        if key >= floor {
            out.push((m, theirs));
        }
    }
    out.sort_by(|(a, _), (b, _)| {
        let (ka, kb) = if by_containment {
            (a.containment, b.containment)
        } else {
            (a.resemblance, b.resemblance)
        };
        kb.total_cmp(&ka).then(a.doc.cmp(&b.doc))
    });
    Ok(out)
}

/// What to compare.
#[derive(Debug, Clone)]
pub enum Input {
    /// A URL in the index: the content of its latest capture with content.
    Url(String),
    /// A file: an HTML (or text) document, or a WARC/ARC file whose first response is used.
    File(std::path::PathBuf),
    /// A doc of the index (e.g. an older version of a page, from `history`).
    Doc(u64),
    /// A document's bytes (HTML, text, or a WARC/ARC file), named for messages.
    Bytes {
        /// What to call it in the answer (`input`).
        name: String,
        /// The bytes.
        bytes: Vec<u8>,
    },
}

/// Options of [`similar`].
#[derive(Debug, Clone)]
pub struct SimilarOptions {
    /// Smallest resemblance (or containment) reported.
    pub threshold: f64,
    /// Rank by containment of the input in the candidate (pages that contain it).
    pub containment: bool,
    /// Most results.
    pub limit: usize,
}

/// One similar page.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SimilarPage {
    /// URL carrying the doc.
    pub url: String,
    /// Its latest capture of that doc.
    pub date: String,
    /// Doc id.
    pub doc: u64,
    /// Estimated resemblance to the input.
    pub resemblance: f64,
    /// Estimated resemblance without the templates of both pages' hosts (in the sweeps
    /// of the input's capture and of this one; a file has none): the resemblance of
    /// their content. The same as `resemblance` where neither host has a template.
    pub content_resemblance: f64,
    /// Estimated containment of the input in it.
    pub containment: f64,
}

/// The answer of [`similar`].
#[derive(Debug, Clone, Serialize)]
pub struct Similar {
    /// The input: the URL, or the file's path.
    pub input: String,
    /// The input's doc, when it is in the index.
    pub doc: Option<u64>,
    /// Distinct shingles of the input.
    pub shingles: u32,
    /// Matching pages, best first.
    pub results: Vec<SimilarPage>,
}

/// Pages that resemble (or contain) the input, best first. A URL that was never
/// captured with content is an [`IndexError::Invalid`] naming it.
pub fn similar(s: &Searcher, input: &Input, opts: &SimilarOptions) -> Result<Similar> {
    // The input's template: its host's in the sweep of its capture (none for a file).
    let mut own_template: std::sync::Arc<[u32]> = std::sync::Arc::from([]);
    let (name, own_doc, sketch, exclude) = match input {
        Input::Url(u) => {
            let caps = s.captures(u)?;
            let Some(last) = caps.iter().rev().find(|c| c.info.doc.is_some()) else {
                return Err(IndexError::NotFound(if caps.is_empty() {
                    format!("{u} was never captured (nothing to compare; try --file)")
                } else {
                    format!("{u} has no capture with text content to compare")
                }));
            };
            let d = last.info.doc.expect("found with a doc");
            own_template = s.template(&last.surt, last.info.sweep)?;
            let Some(sk) = s.sketch(d)? else {
                return Err(IndexError::Corruption {
                    cf: cf::SKETCHES,
                    comment: format!("doc {d} has no sketch"),
                });
            };
            (u.clone(), Some(d), sk, Some(surt(u)))
        }
        Input::File(p) => {
            let sk = sketch_file(s, p)?;
            (p.display().to_string(), None, sk, None)
        }
        Input::Bytes { name, bytes } => {
            let sk = sketch_document(s, name, bytes)?;
            (name.clone(), None, sk, None)
        }
        Input::Doc(d) => {
            // A doc none of whose captures the reader may see is not there for them.
            let hidden = s.reader().filtered() && s.doc_captures(*d)?.is_empty();
            let Some(sk) = s.sketch(*d)?.filter(|_| !hidden) else {
                return Err(IndexError::NotFound(format!("no doc {d} in the index")));
            };
            if let Some(c) = s.doc_captures(*d)?.last() {
                own_template = s.template(&c.surt, c.info.sweep)?;
            }
            (format!("doc {d}"), Some(*d), sk, None)
        }
    };
    let posting = match own_doc {
        Some(d) => s.index.posting_values(d)?.unwrap_or_default(),
        None => posting_values(&sketch, s.index.params().posting_target),
    };
    let docs = matches(s, &sketch, posting, opts.threshold, opts.containment)?;
    let mine = CompactSketch::of(&sketch);
    let mut results = Vec::new();
    'docs: for (m, theirs) in docs {
        // Each URL of the doc once, with its latest capture of it.
        // (A boilerplate doc has tens of thousands of URLs: looked up, not searched.)
        let mut by_url: Vec<(String, CaptureRow)> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = Default::default();
        for c in s.doc_captures(m.doc)? {
            if exclude.as_deref() == Some(c.surt.as_str()) {
                continue;
            }
            match at.get(&c.surt) {
                Some(&i) => by_url[i].1 = c,
                None => {
                    at.insert(c.surt.clone(), by_url.len());
                    by_url.push((c.surt.clone(), c));
                }
            }
        }
        for (_, c) in by_url {
            if results.len() >= opts.limit {
                break 'docs;
            }
            let t = s.template(&c.surt, c.info.sweep)?;
            let content = resemblances(&mine, &own_template, &theirs, &t).content;
            results.push(SimilarPage {
                url: c.info.url.clone(),
                date: Timestamp14::iso_of(&c.timestamp),
                doc: m.doc,
                resemblance: round3(m.resemblance),
                content_resemblance: round3(content),
                containment: round3(m.containment),
            });
        }
    }
    Ok(Similar {
        input: name,
        doc: own_doc,
        shingles: sketch.shingles,
        results,
    })
}

/// Sketches a file with the index's parameters: a WARC/ARC file (its first response or
/// resource with text), or else the file's bytes as an HTML/text document.
pub fn sketch_file(s: &Searcher, path: &Path) -> Result<Sketch> {
    let bytes = std::fs::read(path)
        .map_err(|e| IndexError::Invalid(format!("cannot read {}: {e}", path.display())))?;
    sketch_document(s, &path.display().to_string(), &bytes)
}

/// Sketches a document's bytes (`name` for messages) as [`sketch_file`] does a file.
pub fn sketch_document(s: &Searcher, name: &str, bytes: &[u8]) -> Result<Sketch> {
    let p = s.index.params();
    let params = SketchParams {
        shingle_width: p.shingle_width,
        seed: p.seed,
        sample_target: p.sample_target,
    };
    let cap = 16 << 20;
    let mut scratch = Scratch::default();
    if looks_like_archive(bytes) {
        let reader = RecordReader::from_reader(Box::new(std::io::Cursor::new(bytes.to_vec())), cap)
            .map_err(|e| IndexError::Damaged(format!("{name}: damaged: {e}")))?;
        for r in reader {
            let rec = r.map_err(|e| IndexError::Damaged(format!("{name}: damaged: {e}")))?;
            let c = analyze(&rec, &params, cap, &mut scratch);
            if let Some(sk) = c.sketch.filter(|sk| !sk.values.is_empty()) {
                return Ok(sk);
            }
        }
        return Err(IndexError::Invalid(format!(
            "{name}: no record with text content to compare"
        )));
    }
    let rec = Record::document(bytes);
    let c = analyze(&rec, &params, cap, &mut scratch);
    match c.sketch {
        Some(sk) if !sk.values.is_empty() => Ok(sk),
        _ => Err(IndexError::Invalid(format!(
            "{name}: too little text to compare (fewer than {} words)",
            p.shingle_width
        ))),
    }
}

fn looks_like_archive(b: &[u8]) -> bool {
    b.starts_with(&[0x1f, 0x8b])
        || b.starts_with(b"WARC/")
        || b.starts_with(b"filedesc://")
        || b.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
        || b.starts_with(b"BZh")
}
