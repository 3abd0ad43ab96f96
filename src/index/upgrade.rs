//! Upgrades: an index written by an earlier release brought to this build's schema in
//! place, without reading its WARC files again (`tidemark upgrade`).
//!
//! Each release names the schema version it writes ([`RELEASES`]). A schema change after
//! a release comes with a [`Migration`] from the version before it, or is listed in
//! [`REBUILT`] with the families that need the WARC files again and why. A migration
//! must be idempotent and write the version it migrates to in its last batch (with its
//! last changes): an upgrade killed at any point leaves the old version, or a step done,
//! and running it again finishes it. `tests/upgrade.rs` opens an index of every release
//! kept in `tests/fixtures/` with this build, upgrades it, and compares its exports
//! with those of a fresh ingest of the same WARC files: a format change that forgets
//! its migration fails there.

use std::path::Path;

use serde::Serialize;

use super::{snapshots, Index, Result, SCHEMA_VERSION};
use crate::config::Config;

/// Releases, oldest first: (version, the schema version its indexes have).
pub const RELEASES: &[(&str, u32)] = &[("0.2.0", 16)];

/// One schema version to the next, in place.
struct Migration {
    /// The version it migrates from (to the next one).
    from: u32,
    /// What it changes, for the user.
    what: &'static str,
    /// The migration, idempotent; its last batch writes version `from + 1`.
    run: fn(&Index, &Config) -> Result<()>,
}

/// The migrations, by version.
const MIGRATIONS: &[Migration] = &[
    Migration {
        from: 16,
        what: "links: each page's outgoing links with their anchor windows are kept from the next sweep ingested on (the sweeps before keep none: their WARC files are not read again)",
        run: links_kept_from_the_next_sweep,
    },
    Migration {
        from: 17,
        what: "inbound, anchor_targets: each sweep's links by the page linked and its anchor texts naming several pages, built from its links (inlinks, related and whereis then read the linking pages instead of every link of the sweep)",
        run: links_by_target,
    },
];

/// 17 → 18: each sweep's `inbound` and `anchor_targets` entries from its `links` (one
/// scan and one batch a sweep, its old entries replaced), then the version.
fn links_by_target(index: &Index, _config: &Config) -> Result<()> {
    let mut ids = Vec::new();
    index.sweeps().for_each(|id, _| {
        ids.push(id);
        Ok(true)
    })?;
    for sweep in ids {
        if !index.links().any_in(&sweep.to_be_bytes())? {
            continue;
        }
        let mut linked = Some(crate::links::inbound::LinkedBy::default());
        index.links().each_link(sweep, |source, page| {
            let tokens = crate::links::Tokens::of(page.words);
            crate::links::inbound::LinkedBy::add_within_budget(&mut linked, source, page, &tokens);
            // Too many to hold: this sweep's are read by scans.
            Ok(linked.is_some())
        })?;
        super::columns::inbound::clear_sweep(index, sweep)?;
        if let Some(linked) = &linked {
            super::columns::inbound::write_sweep(index, sweep, linked)?;
        }
    }
    let mut b = super::Batch::default();
    b.put::<super::columns::meta::Meta>(
        index,
        &super::columns::meta::MetaKey::SchemaVersion,
        &18u32.to_be_bytes().to_vec(),
    );
    index.write(b)
}

/// 16 → 17: the `links` family (created, empty, when the index was opened for the
/// upgrade) and how links are kept, with the version, in one batch.
fn links_kept_from_the_next_sweep(index: &Index, config: &Config) -> Result<()> {
    let mut next = 1u32;
    index.sweeps().for_each(|id, _| {
        next = next.max(id + 1);
        Ok(true)
    })?;
    let mut b = super::Batch::default();
    index.meta().put_link_params(
        &mut b,
        &super::columns::meta::LinkParams {
            window: config.links.window,
            own_host: config.links.own_host,
            bag_sample: config.links.bag_sample,
            from_sweep: next,
        },
    );
    b.put::<super::columns::meta::Meta>(
        index,
        &super::columns::meta::MetaKey::SchemaVersion,
        &17u32.to_be_bytes().to_vec(),
    );
    index.write(b)
}

/// Schema changes after a release that no migration can make: (the version they made,
/// the families whose contents need the WARC files again, why). None yet.
const REBUILT: &[(u32, &str, &str)] = &[];

/// Whether [`upgrade`] brings an index of schema `found` to this build's.
pub fn can_upgrade(found: u32) -> bool {
    found < SCHEMA_VERSION
        && (found..SCHEMA_VERSION).all(|v| MIGRATIONS.iter().any(|m| m.from == v))
}

/// What a user with an index of schema `found` (at `path`) should do.
pub fn advice(found: u32, path: &Path) -> String {
    let (first, first_schema) = RELEASES[0];
    if found > SCHEMA_VERSION {
        return "it was written by a newer tidemark: use that one".into();
    }
    if can_upgrade(found) {
        return format!(
            "run `tidemark --db {} upgrade` to bring it to version {SCHEMA_VERSION} in place (no WARC file is read again)",
            path.display()
        );
    }
    if found < first_schema {
        return format!(
            "version {found} was written by a build before release {first} (schema {first_schema}), which no upgrade reads: ingest its WARC files into a new --db"
        );
    }
    let needs: Vec<String> = REBUILT
        .iter()
        .filter(|(v, _, _)| *v > found)
        .map(|(v, families, why)| format!("schema {v} changed {families}: {why}"))
        .collect();
    format!(
        "{}: ingest its WARC files into a new --db",
        if needs.is_empty() {
            "no upgrade reads it".to_string()
        } else {
            needs.join("; ")
        }
    )
}

/// What an upgrade did.
#[derive(Debug, Clone, Serialize)]
pub struct Upgraded {
    /// The schema version the index had.
    pub from: u32,
    /// The version it has now (this build's).
    pub to: u32,
    /// What each migration run changed, in order.
    pub steps: Vec<String>,
}

/// Brings the index at `path` to this build's schema, migration by migration, and
/// publishes it when anything changed. An index of this build's schema is left as it
/// is; one no migration reads is refused ([`super::IndexError::Version`], saying why).
pub fn upgrade(path: &Path, config: &Config) -> Result<Upgraded> {
    let index = Index::open_for_upgrade(path, config)?;
    let from = match index.meta().schema_version()? {
        Some(Ok(v)) => v,
        _ => return Err(super::IndexError::NotOurs(path.to_path_buf())),
    };
    let mut steps = Vec::new();
    for v in from..SCHEMA_VERSION {
        let Some(m) = MIGRATIONS.iter().find(|m| m.from == v) else {
            unreachable!("open_for_upgrade accepts only versions with every migration")
        };
        (m.run)(&index, config)?;
        steps.push(format!("{} → {}: {}", v, v + 1, m.what));
    }
    if !steps.is_empty() {
        drop(index);
        // Opened as any other writer now: its parameters and counters are checked.
        snapshots::publish(&Index::open(path, config, false)?)?;
    }
    Ok(Upgraded {
        from,
        to: SCHEMA_VERSION,
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::columns::meta::{Meta, MetaKey};
    use crate::index::Batch;

    /// An empty index whose meta says `version`.
    fn index_of_version(dir: &Path, version: u32) {
        let config = Config::default();
        let index = Index::open(dir, &config, true).unwrap();
        let mut b = Batch::default();
        b.put::<Meta>(
            &index,
            &MetaKey::SchemaVersion,
            &version.to_be_bytes().to_vec(),
        );
        index.write(b).unwrap();
    }

    #[test]
    fn an_index_of_this_schema_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        Index::open(dir.path(), &Config::default(), true).unwrap();
        let u = upgrade(dir.path(), &Config::default()).unwrap();
        assert_eq!((u.from, u.to), (SCHEMA_VERSION, SCHEMA_VERSION));
        assert!(u.steps.is_empty());
    }

    #[test]
    fn an_index_no_migration_reads_is_refused_saying_what_to_do() {
        let config = Config::default();
        let older = tempfile::tempdir().unwrap();
        index_of_version(older.path(), RELEASES[0].1 - 1);
        for e in [
            Index::open(older.path(), &config, false).err(),
            Index::open_read_only(older.path(), &config).err(),
            upgrade(older.path(), &config).err(),
        ] {
            let text = e.expect("refused").to_string();
            assert!(
                text.contains("before release 0.2.0") && text.contains("new --db"),
                "{text}"
            );
        }
        let newer = tempfile::tempdir().unwrap();
        index_of_version(newer.path(), SCHEMA_VERSION + 1);
        let text = upgrade(newer.path(), &config).unwrap_err().to_string();
        assert!(text.contains("newer tidemark"), "{text}");
    }

    #[test]
    fn every_earlier_release_is_upgraded_or_says_what_needs_the_warcs() {
        for w in RELEASES.windows(2) {
            assert!(w[0].1 <= w[1].1, "{:?}", w);
        }
        for (release, schema) in RELEASES {
            assert!(*schema <= SCHEMA_VERSION, "{release}");
            if *schema < SCHEMA_VERSION {
                assert!(
                    can_upgrade(*schema) || REBUILT.iter().any(|(v, _, _)| v > schema),
                    "release {release} (schema {schema}): add a Migration, or say in REBUILT what needs the WARC files"
                );
            }
        }
    }
}
