//! The persisted union-find of clusters: `parents` (doc → parent, size, smallest member)
//! and `members` (root ‖ doc, the listing of every cluster of two or more docs). A doc
//! with no `parents` entry is a cluster of its own. Union is by size (ties to the
//! smaller root id); the smaller side's members move; the cluster id users see is the
//! smallest member, so it does not depend on the order of unions.

use std::collections::{BTreeSet, HashMap};

use rocksdb::WriteBatch;

use super::codec::{read_u64, u64_key};
use super::{cf, Index, Result};

/// A union-find node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    /// Parent (itself for a root).
    pub parent: u64,
    /// Size of the cluster (meaningful at roots).
    pub size: u64,
    /// Smallest doc id in the cluster (meaningful at roots).
    pub min: u64,
}

fn pack(n: &Node) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[..8].copy_from_slice(&n.parent.to_be_bytes());
    b[8..16].copy_from_slice(&n.size.to_be_bytes());
    b[16..].copy_from_slice(&n.min.to_be_bytes());
    b
}

/// A stored node; a value of another length is corruption of `parents` (naming the doc).
pub(crate) fn unpack(doc: u64, b: &[u8]) -> Result<Node> {
    if b.len() != 24 {
        return Err(super::IndexError::Corruption {
            cf: cf::PARENTS,
            comment: format!("the value of doc {doc} has {} bytes, not 24", b.len()),
        });
    }
    Ok(Node {
        parent: read_u64(&b[..8]),
        size: read_u64(&b[8..16]),
        min: read_u64(&b[16..24]),
    })
}

/// The node of a doc as stored (a doc without one is a cluster of its own).
pub fn node(index: &Index, doc: u64) -> Result<Node> {
    match index.db().get_cf(index.cf(cf::PARENTS), u64_key(doc))? {
        Some(v) => unpack(doc, &v),
        None => Ok(Node {
            parent: doc,
            size: 1,
            min: doc,
        }),
    }
}

/// A key in hexadecimal, for corruption messages.
pub(crate) fn hex(k: &[u8]) -> String {
    k.iter().map(|b| format!("{b:02x}")).collect()
}

/// The root of a doc's cluster and the root's node.
pub fn find(index: &Index, doc: u64) -> Result<(u64, Node)> {
    let mut x = doc;
    for _ in 0..10_000 {
        let n = node(index, x)?;
        if n.parent == x {
            return Ok((x, n));
        }
        x = n.parent;
    }
    Err(super::IndexError::Corruption {
        cf: cf::PARENTS,
        comment: format!("parent chain from doc {doc} does not end"),
    })
}

/// Cluster id (smallest member) and size of a doc's cluster.
pub fn cluster_of(index: &Index, doc: u64) -> Result<(u64, u64)> {
    let (_, n) = find(index, doc)?;
    Ok((n.min, n.size))
}

fn members_key(root: u64, doc: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&root.to_be_bytes());
    k[8..].copy_from_slice(&doc.to_be_bytes());
    k
}

/// Members of the cluster rooted at `root` (empty for a singleton).
pub fn members_of_root(index: &Index, root: u64) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    let prefix = root.to_be_bytes();
    for item in index.db().iterator_cf(
        index.cf(cf::MEMBERS),
        rocksdb::IteratorMode::From(&prefix, rocksdb::Direction::Forward),
    ) {
        let (k, _) = item?;
        if k.len() != 16 || k[..8] != prefix {
            break;
        }
        out.push(read_u64(&k[8..]));
    }
    Ok(out)
}

/// Every doc of a doc's cluster, ascending.
pub fn cluster_members(index: &Index, doc: u64) -> Result<Vec<u64>> {
    let (root, n) = find(index, doc)?;
    if n.size <= 1 {
        return Ok(vec![doc]);
    }
    let mut m = members_of_root(index, root)?;
    m.sort_unstable();
    Ok(m)
}

/// Joins the new doc `x` (a singleton so far) to the clusters of `targets`, writing the
/// changes into `batch`. Returns the number of clusters merged into (unions).
pub fn join(index: &Index, batch: &mut WriteBatch, x: u64, targets: &[u64]) -> Result<u64> {
    if targets.is_empty() {
        return Ok(0);
    }
    let mut roots: Vec<(u64, Node)> = Vec::new();
    let mut seen = BTreeSet::new();
    for &t in targets {
        let (r, n) = find(index, t)?;
        if seen.insert(r) {
            roots.push((r, n));
        }
    }
    // The largest cluster keeps its root; ties go to the smaller root id.
    roots.sort_by(|a, b| b.1.size.cmp(&a.1.size).then(a.0.cmp(&b.0)));
    let (root, root_node) = roots[0];
    let parents = index.cf(cf::PARENTS);
    let members = index.cf(cf::MEMBERS);
    let mut size = root_node.size + 1;
    let mut min = root_node.min.min(x);
    if root_node.size == 1 {
        batch.put_cf(members, members_key(root, root), []);
    }
    for &(q, qn) in &roots[1..] {
        if qn.size == 1 {
            batch.put_cf(members, members_key(root, q), []);
        } else {
            for m in members_of_root(index, q)? {
                batch.delete_cf(members, members_key(q, m));
                batch.put_cf(members, members_key(root, m), []);
            }
        }
        batch.put_cf(
            parents,
            u64_key(q),
            pack(&Node {
                parent: root,
                size: qn.size,
                min: qn.min,
            }),
        );
        size += qn.size;
        min = min.min(qn.min);
    }
    batch.put_cf(members, members_key(root, x), []);
    batch.put_cf(
        parents,
        u64_key(x),
        pack(&Node {
            parent: root,
            size: 1,
            min: x,
        }),
    );
    batch.put_cf(
        parents,
        u64_key(root),
        pack(&Node {
            parent: root,
            size,
            min,
        }),
    );
    // Path compression for the docs just looked at.
    for &t in targets {
        if t != root && !roots.iter().any(|(r, _)| *r == t) {
            let n = node(index, t)?;
            if n.parent != root {
                batch.put_cf(parents, u64_key(t), pack(&Node { parent: root, ..n }));
            }
        }
    }
    Ok(roots.len() as u64)
}

/// Rebuilds `parents` and `members` from stored edges at `threshold` (the paper's
/// "repeating the final phase" with another policy). Returns (clusters of ≥ 2, unions).
pub fn rebuild(index: &Index, threshold: f64) -> Result<(u64, u64)> {
    let db = index.db();
    // In-memory union-find over the docs that have edges at the threshold.
    let mut parent: HashMap<u64, u64> = HashMap::new();
    fn root(parent: &mut HashMap<u64, u64>, x: u64) -> u64 {
        let mut r = x;
        while let Some(&p) = parent.get(&r) {
            if p == r {
                break;
            }
            r = p;
        }
        let mut y = x;
        while y != r {
            let next = parent[&y];
            parent.insert(y, r);
            y = next;
        }
        r
    }
    let mut unions = 0u64;
    for item in db.iterator_cf(index.cf(cf::EDGES), rocksdb::IteratorMode::Start) {
        let (k, v) = item?;
        let e: super::codec::EdgeInfo =
            super::codec::decode(&v).map_err(|comment| super::IndexError::Corruption {
                cf: cf::EDGES,
                comment,
            })?;
        if (e.resemblance as f64) < threshold {
            continue;
        }
        if k.len() != 16 {
            return Err(super::IndexError::Corruption {
                cf: cf::EDGES,
                comment: format!("key {} has {} bytes, not 16", hex(&k), k.len()),
            });
        }
        let (a, b) = (read_u64(&k[..8]), read_u64(&k[8..16]));
        parent.entry(a).or_insert(a);
        parent.entry(b).or_insert(b);
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        if ra != rb {
            // Smaller id as root: deterministic and already the cluster id.
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            parent.insert(hi, lo);
            unions += 1;
        }
    }
    let mut clusters: HashMap<u64, Vec<u64>> = HashMap::new();
    let docs: Vec<u64> = parent.keys().copied().collect();
    for d in docs {
        let r = root(&mut parent, d);
        clusters.entry(r).or_default().push(d);
    }
    // Replace the old union-find.
    let (pcf, mcf) = (index.cf(cf::PARENTS), index.cf(cf::MEMBERS));
    let mut batch = WriteBatch::default();
    batch.delete_range_cf(pcf, &[0u8; 8][..], &[0xffu8; 9][..]);
    batch.delete_range_cf(mcf, &[0u8; 16][..], &[0xffu8; 17][..]);
    db.write(batch)?;
    let mut roots: Vec<u64> = clusters.keys().copied().collect();
    roots.sort_unstable();
    let mut batch = WriteBatch::default();
    let mut n_clusters = 0;
    for r in roots {
        let mut m = clusters.remove(&r).unwrap_or_default();
        m.sort_unstable();
        if m.len() < 2 {
            continue;
        }
        n_clusters += 1;
        for &d in &m {
            batch.put_cf(
                pcf,
                u64_key(d),
                pack(&Node {
                    parent: r,
                    size: if d == r { m.len() as u64 } else { 1 },
                    min: r,
                }),
            );
            batch.put_cf(mcf, members_key(r, d), []);
        }
        if batch.len() > 100_000 {
            db.write(std::mem::take(&mut batch))?;
        }
    }
    db.write(batch)?;
    Ok((n_clusters, unions))
}

/// Cluster ids of docs, looked up once each (a CDX answer names many captures of the
/// same few docs).
pub struct ClusterIds<'a> {
    index: &'a Index,
    seen: HashMap<u64, u64>,
}

impl<'a> ClusterIds<'a> {
    /// An empty cache over `index`.
    pub fn new(index: &'a Index) -> Self {
        ClusterIds {
            index,
            seen: HashMap::new(),
        }
    }

    /// The cluster id (its smallest doc) of `doc`.
    pub fn of(&mut self, doc: u64) -> Result<u64> {
        if let Some(c) = self.seen.get(&doc) {
            return Ok(*c);
        }
        let (c, _) = cluster_of(self.index, doc)?;
        self.seen.insert(doc, c);
        Ok(c)
    }
}
