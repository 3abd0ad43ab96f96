//! The persisted union-find of clusters: `parents` (doc → parent, size, smallest member)
//! and `members` (root ‖ doc, the listing of every cluster of two or more docs). A doc
//! with no `parents` entry is a cluster of its own. Union is by size (ties to the
//! smaller root id); the smaller side's members move; the cluster id users see is the
//! smallest member, so it does not depend on the order of unions.

use std::collections::{BTreeSet, HashMap};

use super::columns::doc_captures::Met;
use super::columns::edges::Edges;
use super::columns::members::Members;
pub use super::columns::parents::Node;
use super::columns::parents::Parents;
use super::columns::{Batch, Col};
use super::{Index, Result};

/// The node of a doc as stored (a doc without one is a cluster of its own).
pub fn node(index: &Index, doc: u64) -> Result<Node> {
    match index.parents().get(&doc)? {
        Some(n) => Ok(n),
        None => Ok(Node {
            parent: doc,
            size: 1,
            min: doc,
        }),
    }
}

/// The root of a doc's cluster and the root's node.
pub fn find(index: &Index, doc: u64) -> Result<(u64, Node)> {
    root_by(doc, |x| node(index, x))
}

/// The root of `doc`'s cluster, nodes looked up by `node`.
fn root_by(doc: u64, node: impl Fn(u64) -> Result<Node>) -> Result<(u64, Node)> {
    let mut x = doc;
    for _ in 0..10_000 {
        let n = node(x)?;
        if n.parent == x {
            return Ok((x, n));
        }
        x = n.parent;
    }
    Err(super::columns::corrupt::<Parents>(
        &doc.to_be_bytes(),
        "its chain of parents does not end",
    ))
}

/// Cluster id (smallest member) and size of a doc's cluster.
pub fn cluster_of(index: &Index, doc: u64) -> Result<(u64, u64)> {
    let (_, n) = find(index, doc)?;
    Ok((n.min, n.size))
}

/// Every doc of a doc's cluster, ascending.
pub fn cluster_members(index: &Index, doc: u64) -> Result<Vec<u64>> {
    let (root, n) = find(index, doc)?;
    if n.size <= 1 {
        return Ok(vec![doc]);
    }
    let mut m = index.members().of_root(root)?;
    m.sort_unstable();
    Ok(m)
}

/// Union-find changes put into batches not written yet: the joins after them read
/// through them (an ingest writes one batch per batch of records, on a thread of its
/// own, so a batch may be in the writing while the next is made). Each change carries
/// the number of the write it goes with; [`Staged::written`] forgets those written.
#[derive(Default)]
pub struct Staged {
    /// The write the changes made now go with.
    pub write: u64,
    /// Nodes put (the latest of each).
    nodes: HashMap<u64, (Node, u64)>,
    /// Members put under a root.
    added: HashMap<u64, Vec<(u64, u64)>>,
    /// Roots whose members all moved to another root (a root never becomes one again,
    /// so this stays true once written).
    emptied: std::collections::HashSet<u64>,
    /// The latest node of each doc read or put in this ingest: a large cluster's root
    /// and its members are read for many joins (llvm-docs: a sixth of the committing
    /// thread's time was `parents` lookups). Every change of a node goes through
    /// [`Staged::put_node`], which keeps it current. Cleared when it holds
    /// [`READ_NODES`].
    read: std::cell::RefCell<HashMap<u64, Node>>,
}

/// The nodes [`Staged`] keeps read at most (~40 MB).
const READ_NODES: usize = 1 << 20;

impl Staged {
    /// Empty, its changes going with write `write`.
    pub fn for_write(write: u64) -> Self {
        Staged {
            write,
            ..Default::default()
        }
    }

    fn node(&self, index: &Index, doc: u64) -> Result<Node> {
        if let Some((n, _)) = self.nodes.get(&doc) {
            return Ok(*n);
        }
        if let Some(n) = self.read.borrow().get(&doc) {
            return Ok(*n);
        }
        let n = node(index, doc)?;
        self.remember(doc, n);
        Ok(n)
    }

    fn remember(&self, doc: u64, n: Node) {
        let mut read = self.read.borrow_mut();
        if read.len() >= READ_NODES {
            read.clear();
        }
        read.insert(doc, n);
    }

    fn find(&self, index: &Index, doc: u64) -> Result<(u64, Node)> {
        root_by(doc, |x| self.node(index, x))
    }

    /// The members of `root`: stored, then put.
    fn members(&self, index: &Index, root: u64) -> Result<Vec<u64>> {
        if self.emptied.contains(&root) {
            return Ok(Vec::new());
        }
        let mut m = index.members().of_root(root)?;
        if let Some(added) = self.added.get(&root) {
            m.extend(added.iter().map(|(d, _)| *d));
            // A write done but not yet forgotten ([`Staged::written`]) lists some twice.
            m.sort_unstable();
            m.dedup();
        }
        Ok(m)
    }

    fn put_node(&mut self, index: &Index, batch: &mut Batch, doc: u64, n: Node) {
        batch.put::<Parents>(index, &doc, &n);
        self.nodes.insert(doc, (n, self.write));
        self.remember(doc, n);
    }

    fn put_member(&mut self, index: &Index, batch: &mut Batch, root: u64, doc: u64) {
        batch.put::<Members>(index, &(root, doc), &());
        self.added.entry(root).or_default().push((doc, self.write));
    }

    /// Forgets the changes of writes up to `write`, now in the index.
    pub fn written(&mut self, write: u64) {
        self.nodes.retain(|_, (_, w)| *w > write);
        self.added.retain(|_, m| {
            m.retain(|(_, w)| *w > write);
            !m.is_empty()
        });
    }
}

/// Joins the new doc `x` (a singleton so far) to the clusters of `targets`, writing the
/// changes into `batch` (and `staged`, which holds what the batch changed before).
/// Returns the number of clusters merged into (unions).
pub fn join(
    index: &Index,
    staged: &mut Staged,
    batch: &mut Batch,
    x: u64,
    targets: &[u64],
) -> Result<u64> {
    if targets.is_empty() {
        return Ok(0);
    }
    let mut roots: Vec<(u64, Node)> = Vec::new();
    let mut seen = BTreeSet::new();
    for &t in targets {
        let (r, n) = staged.find(index, t)?;
        if seen.insert(r) {
            roots.push((r, n));
        }
    }
    // The largest cluster keeps its root; ties go to the smaller root id.
    roots.sort_by(|a, b| b.1.size.cmp(&a.1.size).then(a.0.cmp(&b.0)));
    let (root, root_node) = roots[0];
    let mut size = root_node.size + 1;
    let mut min = root_node.min.min(x);
    if root_node.size == 1 {
        staged.put_member(index, batch, root, root);
    }
    for &(q, qn) in &roots[1..] {
        if qn.size == 1 {
            staged.put_member(index, batch, root, q);
        } else {
            for m in staged.members(index, q)? {
                batch.delete::<Members>(index, &(q, m));
                staged.put_member(index, batch, root, m);
            }
            staged.added.remove(&q);
            staged.emptied.insert(q);
        }
        let moved = Node {
            parent: root,
            size: qn.size,
            min: qn.min,
        };
        staged.put_node(index, batch, q, moved);
        size += qn.size;
        min = min.min(qn.min);
    }
    staged.put_member(index, batch, root, x);
    let joined = Node {
        parent: root,
        size: 1,
        min: x,
    };
    staged.put_node(index, batch, x, joined);
    let grown = Node {
        parent: root,
        size,
        min,
    };
    staged.put_node(index, batch, root, grown);
    // Path compression for the docs just looked at.
    for &t in targets {
        if t != root && !roots.iter().any(|(r, _)| *r == t) {
            let n = staged.node(index, t)?;
            if n.parent != root {
                staged.put_node(index, batch, t, Node { parent: root, ..n });
            }
        }
    }
    Ok(roots.len() as u64)
}

/// Rebuilds `parents` and `members` from stored edges at `threshold` (the paper's
/// "repeating the final phase" with another policy). Returns (clusters of ≥ 2, unions).
/// Rebuilds the clusters at `threshold` from the stored edges and makes it the
/// threshold in force, safely against a kill or a power cut: the threshold is recorded
/// as under way (and the log synced) before the union-find is cleared, and cleared with
/// the threshold's change once the new union-find is written; an index found with one
/// under way is rebuilt again when next opened for writing (readers are refused until
/// then). Not one RocksDB write: the union-find of a 100-million-doc index is gigabytes
/// of batch. Returns (clusters of ≥ 2 docs, unions).
pub fn recluster(index: &Index, threshold: f64) -> Result<(u64, u64)> {
    let mut b = Batch::default();
    index.meta().put_recluster(&mut b, Some(threshold));
    index.write(b)?;
    index.db().flush_wal(true)?;
    let r = rebuild(index, threshold)?;
    let mut c = index.counters();
    c.threshold = threshold;
    let mut b = Batch::default();
    index.meta().put_counters(&mut b, &c);
    index.meta().put_recluster(&mut b, None);
    index.write(b)?;
    index.db().flush_wal(true)?;
    index.set_counters(c);
    Ok(r)
}

fn rebuild(index: &Index, threshold: f64) -> Result<(u64, u64)> {
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
    Col::<Edges>::new(index).for_each(|b, list| {
        for (a, e) in list {
            if (e.resemblance as f64) < threshold {
                continue;
            }
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
        Ok(true)
    })?;
    let mut clusters: HashMap<u64, Vec<u64>> = HashMap::new();
    let docs: Vec<u64> = parent.keys().copied().collect();
    for d in docs {
        let r = root(&mut parent, d);
        clusters.entry(r).or_default().push(d);
    }
    // Replace the old union-find.
    index.clear_union_find()?;
    if std::env::var("TIDEMARK_TEST_STOP_RECLUSTER").is_ok() {
        // A kill between the clearing and the new union-find (tests/faults.rs).
        std::process::abort();
    }
    let mut roots: Vec<u64> = clusters.keys().copied().collect();
    roots.sort_unstable();
    let mut batch = Batch::default();
    let mut n_clusters = 0;
    for r in roots {
        let mut m = clusters.remove(&r).unwrap_or_default();
        m.sort_unstable();
        if m.len() < 2 {
            continue;
        }
        n_clusters += 1;
        for &d in &m {
            let node = Node {
                parent: r,
                size: if d == r { m.len() as u64 } else { 1 },
                min: r,
            };
            batch.put::<Parents>(index, &d, &node);
            batch.put::<Members>(index, &(r, d), &());
        }
        if batch.len() > 100_000 {
            index.write(std::mem::take(&mut batch))?;
        }
    }
    index.write(batch)?;
    Ok((n_clusters, unions))
}

/// Cluster ids of docs, looked up once each (a CDX answer names many captures of the
/// same few docs).
pub struct ClusterIds<'a> {
    index: &'a Index,
    reader: crate::access::Reader,
    seen: HashMap<u64, u64>,
    /// Under a view: a root's smallest visible doc.
    roots: HashMap<u64, u64>,
}

impl<'a> ClusterIds<'a> {
    /// An empty cache over `index`, for `reader`.
    pub fn new(index: &'a Index, reader: crate::access::Reader) -> Self {
        ClusterIds {
            index,
            reader,
            seen: HashMap::new(),
            roots: HashMap::new(),
        }
    }

    /// The cluster id of `doc`: its cluster's smallest doc, or for a reader through a
    /// view ([`crate::access`]) the doc an index built without the hidden captures would
    /// name it by ([`visible_name`]): a hidden doc's number is not shown.
    pub fn of(&mut self, doc: u64) -> Result<u64> {
        if let Some(c) = self.seen.get(&doc) {
            return Ok(*c);
        }
        let (root, n) = find(self.index, doc)?;
        // (`doc` is seen: its capture is being shown.)
        let c = if n.size <= 1 || !self.reader.filtered() {
            n.min
        } else if let Some(c) = self.roots.get(&root) {
            *c
        } else {
            let c = visible_name(self.index, &self.reader, doc)?.unwrap_or(doc);
            self.roots.insert(root, c);
            c
        };
        self.seen.insert(doc, c);
        Ok(c)
    }
}

/// The name of `doc`'s cluster for `reader`: the member whose first capture the reader
/// may see was met first by the ingest (sweep, file, record), as docs are numbered in
/// the order their contents are first met, so an index built from the visible captures
/// alone names the cluster by this doc. None when the reader sees no member.
///
/// Members are walked by number, which is the order in which they were first met: the
/// walk ends at a member first met after the best visible capture so far, most often at
/// the first (the smallest doc's first capture is seen).
pub fn visible_name(
    index: &Index,
    reader: &crate::access::Reader,
    doc: u64,
) -> Result<Option<u64>> {
    let mut best: Option<(Met, u64)> = None;
    for m in cluster_members(index, doc)? {
        let (first, seen) = index.doc_captures().first_met(reader, m)?;
        if let (Some((b, _)), Some(f)) = (best, first) {
            if f >= b {
                break;
            }
        }
        if let Some(s) = seen {
            if best.is_none_or(|(b, _)| s < b) {
                best = Some((s, m));
            }
            if first == Some(s) {
                // Every later member was first met after this one.
                break;
            }
        }
    }
    Ok(best.map(|(_, m)| m))
}
