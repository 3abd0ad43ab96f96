//! `tidemark recluster`: the clusters rebuilt at another threshold from the stored
//! edges, without reading a WARC file; the threshold recorded, a snapshot published.

use crate::index::{unionfind, Index, IndexError, Result};

/// Rebuilds clusters at `threshold` from stored edges and records it as the threshold
/// in force. Returns (clusters of ≥ 2 docs, unions).
pub fn recluster(index: &mut Index, threshold: f64) -> Result<(u64, u64)> {
    let floor = index.params().edge_floor;
    if threshold < floor {
        return Err(IndexError::Invalid(format!(
            "threshold {threshold} is below the edge floor {floor}: pairs under the floor were never stored; re-ingest with a lower cluster.edge_floor"
        )));
    }
    let r = unionfind::recluster(index, threshold)?;
    crate::index::snapshots::publish(index)?;
    Ok(r)
}
