//! The files a pairs job passes between its steps and to `ingest --pairs` (Parquet, so
//! that Spark, DuckDB or pandas can read them too): a join task's shares per range of
//! waiting docs, and an estimate task's pairs of a range. Each names the plan it was
//! made for and its part in its metadata, and is written under a temporary name and
//! renamed when whole, so a retried task rewrites the same bytes and a reader never
//! sees half a file. A file that is not one of these, is truncated, or belongs to
//! another plan is refused, naming it.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float64Builder, UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

pub use super::pairs::Shares;
use super::pairs::{DocPairs, PairEstimate};
use crate::index::{IndexError, Result};
use crate::sketch::Estimate;

/// The version of these files' layout: files of another are refused.
pub const PAIRS_FORMAT: u32 = 2;

/// Metadata keys.
const FORMAT: &str = "tidemark.pairs_format";
const PLAN: &str = "tidemark.plan";
const KIND: &str = "tidemark.kind";
const PART: &str = "tidemark.part";
const DOCS: &str = "tidemark.docs";

/// A keys task's file: the posting keys in key range `part` of the waiting docs of doc
/// range `range`.
pub fn keys_path(dir: &Path, range: usize, part: usize) -> PathBuf {
    dir.join("keys")
        .join(format!("range-{range:05}.part-{part:05}.parquet"))
}

/// A waiting doc's posting keys in one key range, with what the join needs of it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DocKeys {
    /// The doc.
    pub doc: u64,
    /// Its posting level.
    pub level: u8,
    /// Its template's id (0: none).
    pub template: u32,
    /// The count its posting entries carry (its values outside its template).
    pub entry_count: u32,
    /// Its posting keys in the range, ascending.
    pub keys: Vec<u64>,
}

/// Writes a keys task's file for one key range (docs in doc order).
pub fn write_keys(path: &Path, stamp: &Stamp, docs: &[DocKeys]) -> Result<()> {
    let (mut doc, mut key, mut level, mut template, mut count) = (
        UInt64Builder::new(),
        UInt64Builder::new(),
        UInt8Builder::new(),
        UInt32Builder::new(),
        UInt32Builder::new(),
    );
    for d in docs {
        for k in &d.keys {
            doc.append_value(d.doc);
            key.append_value(*k);
            level.append_value(d.level);
            template.append_value(d.template);
            count.append_value(d.entry_count);
        }
    }
    let batch = table(
        path,
        &[
            ("doc", DataType::UInt64, false),
            ("key", DataType::UInt64, false),
            ("level", DataType::UInt8, false),
            ("template", DataType::UInt32, false),
            ("entry_count", DataType::UInt32, false),
        ],
        vec![
            Arc::new(doc.finish()),
            Arc::new(key.finish()),
            Arc::new(level.finish()),
            Arc::new(template.finish()),
            Arc::new(count.finish()),
        ],
    )?;
    write(path, batch, stamp)
}

/// Reads a keys task's file, appending its docs (in doc order) to `out`.
pub fn read_keys(path: &Path, stamp: &Stamp, out: &mut Vec<DocKeys>) -> Result<()> {
    for b in read(path, stamp)? {
        let (docs, keys) = (u64s(&b, "doc", path)?, u64s(&b, "key", path)?);
        let level = column(&b, "level", path)?
            .as_primitive_opt::<UInt8Type>()
            .ok_or_else(|| invalid(path, "column level is not UInt8"))?;
        let u = |name: &str| -> Result<Vec<u32>> {
            Ok(column(&b, name, path)?
                .as_primitive_opt::<UInt32Type>()
                .ok_or_else(|| invalid(path, format!("column {name} is not UInt32")))?
                .values()
                .to_vec())
        };
        let (template, count) = (u("template")?, u("entry_count")?);
        for k in 0..docs.len() {
            let d = docs[k];
            if d < stamp.docs.0 || d >= stamp.docs.1 {
                return Err(invalid(path, format!("doc {d} outside its range")));
            }
            match out.last_mut() {
                Some(last) if last.doc == d => {
                    if last.keys.last().is_some_and(|x| *x >= keys[k]) {
                        return Err(invalid(path, format!("doc {d}: keys out of order")));
                    }
                    last.keys.push(keys[k]);
                }
                Some(last) if last.doc > d => {
                    return Err(invalid(path, format!("doc {d} out of order")));
                }
                _ => out.push(DocKeys {
                    doc: d,
                    level: level.value(k),
                    template: template[k],
                    entry_count: count[k],
                    keys: vec![keys[k]],
                }),
            }
        }
    }
    Ok(())
}

/// A join task's file: what key range `part` found for the waiting docs of one range.
pub fn shares_path(dir: &Path, part: usize, range: usize) -> PathBuf {
    dir.join("shares")
        .join(format!("part-{part:05}.range-{range:05}.parquet"))
}

/// An estimate task's files: the docs of range `range` and their estimates.
pub fn pairs_paths(dir: &Path, range: usize) -> (PathBuf, PathBuf) {
    let d = dir.join("pairs");
    (
        d.join(format!("range-{range:05}.docs.parquet")),
        d.join(format!("range-{range:05}.estimates.parquet")),
    )
}

fn invalid(path: &Path, m: impl std::fmt::Display) -> IndexError {
    IndexError::Invalid(format!("{}: {m}", path.display()))
}

/// Which file of a plan: its kind, its part and the docs it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The plan's id.
    pub plan: String,
    /// "keys", "shares", "docs" or "estimates".
    pub kind: &'static str,
    /// The join task's key range, or the estimate task's doc range.
    pub part: usize,
    /// The waiting docs it covers, [from, to).
    pub docs: (u64, u64),
}

impl Stamp {
    fn meta(&self) -> Vec<KeyValue> {
        let kv = |k: &str, v: String| KeyValue::new(k.to_string(), v);
        vec![
            kv(FORMAT, PAIRS_FORMAT.to_string()),
            kv(PLAN, self.plan.clone()),
            kv(KIND, self.kind.to_string()),
            kv(PART, self.part.to_string()),
            kv(DOCS, format!("{}-{}", self.docs.0, self.docs.1)),
        ]
    }

    /// Refuses `meta` unless it is this stamp's.
    fn check(&self, path: &Path, meta: &HashMap<String, String>) -> Result<()> {
        let get = |k: &str| {
            meta.get(k).map(String::as_str).ok_or_else(|| {
                invalid(
                    path,
                    format!("not a tidemark pairs file: no {k} in its metadata"),
                )
            })
        };
        let format = get(FORMAT)?;
        if format != PAIRS_FORMAT.to_string() {
            return Err(invalid(
                path,
                format!("pairs format {format}; this tidemark reads format {PAIRS_FORMAT}: run the pairs job again with it"),
            ));
        }
        let plan = get(PLAN)?;
        if plan != self.plan {
            return Err(invalid(
                path,
                format!(
                    "made for plan {plan}, not for this one ({}): a file of another pairs job run",
                    self.plan
                ),
            ));
        }
        let (kind, part, docs) = (get(KIND)?, get(PART)?, get(DOCS)?);
        let want = format!("{}-{}", self.docs.0, self.docs.1);
        if kind != self.kind || part != self.part.to_string() || docs != want {
            return Err(invalid(
                path,
                format!(
                    "holds {kind} of part {part} (docs {docs}), where {} of part {} (docs {want}) belong",
                    self.kind, self.part
                ),
            ));
        }
        Ok(())
    }
}

fn write(path: &Path, batch: RecordBatch, stamp: &Stamp) -> Result<()> {
    let fail = |e: &dyn std::fmt::Display| invalid(path, format!("cannot write: {e}"));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
    }
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(1).expect("level 1 is valid"),
        ))
        .set_key_value_metadata(Some(stamp.meta()))
        .build();
    // Under a name of this attempt's own: two attempts of one task (a retry beside a
    // speculative copy, on this machine or another) never write one file.
    let tmp = crate::durable::Temp::beside(path);
    let file = File::create(tmp.path()).map_err(|e| fail(&e))?;
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| fail(&e))?;
    w.write(&batch).map_err(|e| fail(&e))?;
    let file = w.into_inner().map_err(|e| fail(&e))?;
    file.sync_all().map_err(|e| fail(&e))?;
    tmp.commit(path).map_err(|e| fail(&e))
}

/// Opens `path` as the file of `stamp`, refusing anything else by name.
fn open(path: &Path, stamp: &Stamp) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    if !path.is_file() {
        return Err(invalid(
            path,
            "missing: the pairs job did not finish (or the folder is not its --out)",
        ));
    }
    let file = File::open(path).map_err(|e| invalid(path, format!("cannot open: {e}")))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| {
        invalid(
            path,
            format!("not a readable Parquet file (truncated?): {e}"),
        )
    })?;
    stamp.check(path, &crate::shard::read::key_values(builder.metadata()))?;
    Ok(builder)
}

fn read(path: &Path, stamp: &Stamp) -> Result<Vec<RecordBatch>> {
    open(path, stamp)?
        .build()
        .map_err(|e| invalid(path, format!("unreadable: {e}")))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| invalid(path, format!("damaged: {e}")))
}

/// Checks that `path` is the file of `stamp` without reading its rows.
pub fn check(path: &Path, stamp: &Stamp) -> Result<()> {
    open(path, stamp).map(|_| ())
}

/// A record batch of `columns` named and typed by `fields` (name, type, nullable).
fn table(
    path: &Path,
    fields: &[(&str, DataType, bool)],
    columns: Vec<ArrayRef>,
) -> Result<RecordBatch> {
    let schema = Schema::new(
        fields
            .iter()
            .map(|(n, t, null)| Field::new(*n, t.clone(), *null))
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(Arc::new(schema), columns).map_err(|e| invalid(path, e))
}

fn column<'a>(b: &'a RecordBatch, name: &str, path: &Path) -> Result<&'a ArrayRef> {
    b.column_by_name(name)
        .ok_or_else(|| invalid(path, format!("no column {name}")))
}

fn u64s(b: &RecordBatch, name: &str, path: &Path) -> Result<Vec<u64>> {
    let c = column(b, name, path)?;
    let a = c
        .as_primitive_opt::<UInt64Type>()
        .ok_or_else(|| invalid(path, format!("column {name} is not UInt64")))?;
    if a.null_count() > 0 {
        return Err(invalid(path, format!("column {name} has nulls")));
    }
    Ok(a.values().to_vec())
}

/// Writes a join task's shares for one range of docs.
pub fn write_shares(path: &Path, stamp: &Stamp, s: &Shares) -> Result<()> {
    let (mut doc, mut kind, mut value) = (
        UInt64Builder::new(),
        UInt8Builder::new(),
        UInt64Builder::new(),
    );
    for (k, list) in [&s.shares, &s.heads, &s.overs].into_iter().enumerate() {
        for (d, v) in list {
            doc.append_value(*d);
            kind.append_value(k as u8);
            value.append_value(*v);
        }
    }
    let batch = table(
        path,
        &[
            ("doc", DataType::UInt64, false),
            ("kind", DataType::UInt8, false),
            ("value", DataType::UInt64, false),
        ],
        vec![
            Arc::new(doc.finish()),
            Arc::new(kind.finish()),
            Arc::new(value.finish()),
        ],
    )?;
    write(path, batch, stamp)
}

/// Reads a join task's shares for one range of docs.
pub fn read_shares(path: &Path, stamp: &Stamp) -> Result<Shares> {
    let mut out = Shares::default();
    for b in read(path, stamp)? {
        let (docs, values) = (u64s(&b, "doc", path)?, u64s(&b, "value", path)?);
        let kinds = column(&b, "kind", path)?
            .as_primitive_opt::<UInt8Type>()
            .ok_or_else(|| invalid(path, "column kind is not UInt8"))?;
        for ((d, k), v) in docs.iter().zip(kinds.values().iter()).zip(&values) {
            if *d < stamp.docs.0 || *d >= stamp.docs.1 {
                return Err(invalid(path, format!("doc {d} outside its range")));
            }
            match k {
                0 => out.shares.push((*d, *v)),
                1 => out.heads.push((*d, *v)),
                2 => out.overs.push((*d, *v)),
                _ => return Err(invalid(path, format!("unknown kind {k}"))),
            }
        }
    }
    Ok(out)
}

/// Writes an estimate task's pairs: `docs` are the range's docs from `stamp.docs.0` on.
pub fn write_pairs(paths: &(PathBuf, PathBuf), stamp: &Stamp, docs: &[DocPairs]) -> Result<()> {
    let (mut doc, mut examined, mut compared, mut entry_count, mut over) = (
        UInt64Builder::new(),
        UInt64Builder::new(),
        UInt64Builder::new(),
        UInt64Builder::new(),
        BinaryBuilder::new(),
    );
    let mut e_doc = UInt64Builder::new();
    let mut older = UInt64Builder::new();
    let (mut r, mut cab, mut cba) = (
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
    );
    let (mut common, mut union, mut base) = (
        UInt32Builder::new(),
        UInt32Builder::new(),
        UInt32Builder::new(),
    );
    let (mut fits, mut against) = (BooleanBuilder::new(), BooleanBuilder::new());
    let mut value = BinaryBuilder::new();
    for (k, p) in docs.iter().enumerate() {
        let d = stamp.docs.0 + k as u64;
        doc.append_value(d);
        examined.append_value(p.examined);
        compared.append_value(p.compared);
        entry_count.append_value(p.entry_count as u64);
        let mut bits = vec![0u8; p.over.len().div_ceil(8)];
        for (i, o) in p.over.iter().enumerate() {
            bits[i / 8] |= (*o as u8) << (i % 8);
        }
        // The bit count first: a doc's values are not in this file.
        let mut v = (p.over.len() as u32).to_le_bytes().to_vec();
        v.extend(bits);
        over.append_value(v);
        for e in &p.estimates {
            e_doc.append_value(d);
            older.append_value(e.doc);
            r.append_option(e.edge.map(|x| x.resemblance));
            cab.append_option(e.edge.map(|x| x.containment_a_in_b));
            cba.append_option(e.edge.map(|x| x.containment_b_in_a));
            common.append_option(e.edge.map(|x| x.common));
            union.append_option(e.edge.map(|x| x.union));
            base.append_option(e.base);
            fits.append_option(e.fits);
            against.append_option(e.against);
            value.append_option(e.value.as_deref());
        }
    }
    let (docs_stamp, est_stamp) = pairs_stamps(stamp);
    let u64s = DataType::UInt64;
    let batch = table(
        &paths.0,
        &[
            ("doc", u64s.clone(), false),
            ("examined", u64s.clone(), false),
            ("compared", u64s.clone(), false),
            ("entry_count", u64s.clone(), false),
            ("over", DataType::Binary, false),
        ],
        vec![
            Arc::new(doc.finish()),
            Arc::new(examined.finish()),
            Arc::new(compared.finish()),
            Arc::new(entry_count.finish()),
            Arc::new(over.finish()),
        ],
    )?;
    write(&paths.0, batch, &docs_stamp)?;
    let (f64s, u32s) = (DataType::Float64, DataType::UInt32);
    let batch = table(
        &paths.1,
        &[
            ("doc", u64s.clone(), false),
            ("older", u64s, false),
            ("resemblance", f64s.clone(), true),
            ("containment_older_in_doc", f64s.clone(), true),
            ("containment_doc_in_older", f64s, true),
            ("common", u32s.clone(), true),
            ("union", u32s.clone(), true),
            ("base_common", u32s, true),
            ("base_fits", DataType::Boolean, true),
            ("older_against_base", DataType::Boolean, true),
            ("stored_against_older", DataType::Binary, true),
        ],
        vec![
            Arc::new(e_doc.finish()),
            Arc::new(older.finish()),
            Arc::new(r.finish()),
            Arc::new(cab.finish()),
            Arc::new(cba.finish()),
            Arc::new(common.finish()),
            Arc::new(union.finish()),
            Arc::new(base.finish()),
            Arc::new(fits.finish()),
            Arc::new(against.finish()),
            Arc::new(value.finish()),
        ],
    )?;
    write(&paths.1, batch, &est_stamp)
}

/// The stamps of an estimate task's two files.
pub fn pairs_stamps(stamp: &Stamp) -> (Stamp, Stamp) {
    (
        Stamp {
            kind: "docs",
            ..stamp.clone()
        },
        Stamp {
            kind: "estimates",
            ..stamp.clone()
        },
    )
}

/// Reads an estimate task's pairs: every doc of the range, in order (`full` unset).
pub fn read_pairs(paths: &(PathBuf, PathBuf), stamp: &Stamp) -> Result<Vec<DocPairs>> {
    let (ds, es) = pairs_stamps(stamp);
    let n = (stamp.docs.1 - stamp.docs.0) as usize;
    let mut out: Vec<DocPairs> = Vec::with_capacity(n);
    let path = &paths.0;
    for b in read(path, &ds)? {
        let docs = u64s(&b, "doc", path)?;
        let (ex, cmp, ec) = (
            u64s(&b, "examined", path)?,
            u64s(&b, "compared", path)?,
            u64s(&b, "entry_count", path)?,
        );
        let over = column(&b, "over", path)?
            .as_binary_opt::<i32>()
            .ok_or_else(|| invalid(path, "column over is not Binary"))?;
        for (k, d) in docs.iter().enumerate() {
            if *d != stamp.docs.0 + out.len() as u64 {
                return Err(invalid(path, format!("doc {d} out of order")));
            }
            let v = over.value(k);
            let bits = v
                .get(..4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
                .filter(|n| v.len() == 4 + n.div_ceil(8))
                .ok_or_else(|| invalid(path, format!("doc {d}: a damaged over-cap bitmap")))?;
            out.push(DocPairs {
                over: (0..bits)
                    .map(|i| v[4 + i / 8] >> (i % 8) & 1 == 1)
                    .collect(),
                examined: ex[k],
                compared: cmp[k],
                entry_count: ec[k] as usize,
                ..Default::default()
            });
        }
    }
    if out.len() != n {
        return Err(invalid(
            path,
            format!("{} docs where the range has {n}", out.len()),
        ));
    }
    let path = &paths.1;
    for b in read(path, &es)? {
        let (docs, older) = (u64s(&b, "doc", path)?, u64s(&b, "older", path)?);
        let f = |name: &str| -> Result<arrow_array::PrimitiveArray<Float64Type>> {
            Ok(column(&b, name, path)?
                .as_primitive_opt::<Float64Type>()
                .ok_or_else(|| invalid(path, format!("column {name} is not Float64")))?
                .clone())
        };
        let u = |name: &str| -> Result<arrow_array::PrimitiveArray<UInt32Type>> {
            Ok(column(&b, name, path)?
                .as_primitive_opt::<UInt32Type>()
                .ok_or_else(|| invalid(path, format!("column {name} is not UInt32")))?
                .clone())
        };
        let (r, cab, cba) = (
            f("resemblance")?,
            f("containment_older_in_doc")?,
            f("containment_doc_in_older")?,
        );
        let (common, union, base) = (u("common")?, u("union")?, u("base_common")?);
        let boolean = |name: &str| -> Result<arrow_array::BooleanArray> {
            Ok(column(&b, name, path)?
                .as_boolean_opt()
                .ok_or_else(|| invalid(path, format!("column {name} is not Boolean")))?
                .clone())
        };
        let (fits, against) = (boolean("base_fits")?, boolean("older_against_base")?);
        let value = column(&b, "stored_against_older", path)?
            .as_binary_opt::<i32>()
            .ok_or_else(|| invalid(path, "column stored_against_older is not Binary"))?
            .clone();
        for k in 0..docs.len() {
            let d = docs[k];
            let slot = d
                .checked_sub(stamp.docs.0)
                .and_then(|i| out.get_mut(i as usize))
                .ok_or_else(|| invalid(path, format!("doc {d} outside its range")))?;
            let edge = (!r.is_null(k)).then(|| Estimate {
                resemblance: r.value(k),
                containment_a_in_b: cab.value(k),
                containment_b_in_a: cba.value(k),
                common: common.value(k),
                union: union.value(k),
            });
            slot.estimates.push(PairEstimate {
                doc: older[k],
                edge,
                base: (!base.is_null(k)).then(|| base.value(k)),
                fits: (!fits.is_null(k)).then(|| fits.value(k)),
                against: (!against.is_null(k)).then(|| against.value(k)),
                value: (!value.is_null(k)).then(|| value.value(k).to_vec()),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(kind: &'static str) -> Stamp {
        Stamp {
            plan: "abc".into(),
            kind,
            part: 1,
            docs: (10, 13),
        }
    }

    #[test]
    fn pairs_and_shares_come_back_as_written_and_others_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let docs = vec![
            DocPairs {
                over: vec![true, false, false, true, true, false, false, false, true],
                examined: 7,
                compared: 3,
                entry_count: 9,
                estimates: vec![
                    PairEstimate {
                        doc: 4,
                        edge: Some(Estimate::from_counts(5, 9, 11)),
                        base: Some(5),
                        fits: Some(true),
                        against: Some(true),
                        value: Some(vec![5, 1, 2]),
                    },
                    PairEstimate {
                        doc: 11,
                        edge: None,
                        base: None,
                        fits: None,
                        against: None,
                        value: None,
                    },
                ],
                ..Default::default()
            },
            DocPairs::default(),
            DocPairs {
                examined: 1,
                ..Default::default()
            },
        ];
        let paths = pairs_paths(dir.path(), 1);
        let s = stamp("pairs");
        write_pairs(&paths, &s, &docs).unwrap();
        let back = read_pairs(&paths, &s).unwrap();
        assert_eq!(format!("{back:?}"), format!("{docs:?}"));
        // Another plan's, another range's, a truncated file: refused by name.
        let other = Stamp {
            plan: "xyz".into(),
            ..s.clone()
        };
        let e = read_pairs(&paths, &other).unwrap_err().to_string();
        assert!(
            e.contains("range-00001.docs.parquet") && e.contains("another pairs job"),
            "{e}"
        );
        let e = read_pairs(
            &paths,
            &Stamp {
                part: 2,
                ..s.clone()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("part 1"), "{e}");
        let bytes = std::fs::read(&paths.1).unwrap();
        std::fs::write(&paths.1, &bytes[..bytes.len() / 2]).unwrap();
        let e = read_pairs(&paths, &s).unwrap_err().to_string();
        assert!(
            e.contains("estimates.parquet") && e.contains("truncated"),
            "{e}"
        );

        let sh = Shares {
            shares: vec![(10, 77), (12, 5)],
            heads: vec![(11, 3)],
            overs: vec![(10, 99), (10, 100)],
        };
        let p = shares_path(dir.path(), 0, 1);
        write_shares(&p, &stamp("shares"), &sh).unwrap();
        assert_eq!(read_shares(&p, &stamp("shares")).unwrap(), sh);
        assert!(check(&p, &stamp("shares")).is_ok());
        assert!(check(&shares_path(dir.path(), 5, 1), &stamp("shares")).is_err());
    }
}
