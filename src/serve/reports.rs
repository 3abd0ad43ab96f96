//! The change report and the change list of a served snapshot, computed once per
//! reader's view and range and kept with the snapshot: `/api/report`, `/report` and
//! `/api/changes` answer from memory after the first request (a change list's page reads
//! only its own rows' records). Each is one pass over every capture (minutes on a
//! hundred-million-capture index), so it is built on a thread of its own, one build at
//! a time, without the request's row budget; a request waits for it until its
//! `serve.request_timeout_s`, then answers 503 (ask again: the build goes on).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::watch;

use super::error::ApiError;
use super::state::{
    AppState, Built, ReportEntry, ReportSlot as Slot, ReportSlots, Reports, Served,
};
use crate::access::Reader;
use crate::index::budget::Budget;
use crate::index::{Index, IndexError};
use crate::report::changes::{ordered, Ordered};
use crate::report::{report as build, Report, ReportOptions};

/// The change report of `opts` for this request's reader over the snapshot served now:
/// built once per snapshot, view and range.
pub async fn report(state: &Arc<AppState>, opts: ReportOptions) -> Result<Arc<Report>, ApiError> {
    let (served, deadline) = now(state)?;
    let key = format!("report {:?} {:?} {:?}", opts.from, opts.to, opts.host);
    let built = Reports::get(
        &served,
        state.reader(),
        key,
        (deadline, state.config.serve.report_cache_mb << 20),
        move |index, reader| Ok(Built::Report(Arc::new(build(index, reader, &opts)?))),
    );
    match built.await? {
        Built::Report(r) => Ok(r),
        Built::Changes(_) => Err(ApiError::internal(
            "a report's slot held a change list (a bug)".into(),
        )),
    }
}

/// The whole change list of `opts`' two sweeps in its order, for this request's reader,
/// and the snapshot it was built from (its pages are read there): built once per
/// snapshot, view and range, like the report.
pub async fn changes(
    state: &Arc<AppState>,
    opts: ReportOptions,
) -> Result<(Arc<Served>, Arc<Ordered>), ApiError> {
    let (served, deadline) = now(state)?;
    let key = format!("changes {:?} {:?} {:?}", opts.from, opts.to, opts.host);
    let built = Reports::get(
        &served,
        state.reader(),
        key,
        (deadline, state.config.serve.report_cache_mb << 20),
        move |index, reader| Ok(Built::Changes(Arc::new(ordered(index, reader, &opts)?))),
    );
    match built.await? {
        Built::Changes(c) => Ok((served, c)),
        Built::Report(_) => Err(ApiError::internal(
            "a change list's slot held a report (a bug)".into(),
        )),
    }
}

/// The snapshot served now and the request's deadline.
fn now(state: &Arc<AppState>) -> Result<(Arc<Served>, Instant), ApiError> {
    let served = state.current().ok_or_else(|| {
        ApiError::unavailable(
            "no published sweep yet: an ingest publishes one when it completes".into(),
        )
    })?;
    // Before the request's own timeout, by a tenth of it and at least a second (a busy
    // machine may take that long to answer), so the answer is "being built" (503), not
    // the timeout's bare 408.
    let timeout = std::time::Duration::from_secs(state.config.serve.request_timeout_s);
    let margin = (timeout / 10).max(std::time::Duration::from_secs(1));
    let deadline = state.deadline();
    Ok((served, deadline.checked_sub(margin).unwrap_or(deadline)))
}

/// Builds kept per snapshot at most (and `serve.report_cache_mb` of them); past this,
/// the least recently asked built ones are forgotten (they are built again when asked),
/// and a request that would start one more build while this many are under way is
/// refused.
const MAX_REPORTS: usize = 64;

/// One build at a time, for the whole server: a build reads the whole index.
static BUILDING: Mutex<()> = Mutex::new(());

impl Reports {
    /// What `build` builds for `reader` over `served` (kept under `key`, scoped to the
    /// reader's view, with the others built within `cap` bytes), built now or before, or
    /// 503 when it is not ready by `deadline`.
    async fn get(
        served: &Arc<Served>,
        reader: Reader,
        key: String,
        (deadline, cap): (Instant, usize),
        build: impl FnOnce(&Index, &Reader) -> Result<Built, IndexError> + Send + 'static,
    ) -> Result<Built, ApiError> {
        let key = reader.scoped(&key);
        let reader = served.keeping(reader);
        let mut rx = served.reports.slot(&key, || {
            let (tx, rx) = watch::channel(None);
            let served = served.clone();
            let key = key.clone();
            std::thread::spawn(move || {
                let _one = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
                let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    Budget::unbounded().run(|| build(served.index_for_build(), &reader))
                }));
                super::memory::give_back();
                let answer = match built {
                    Ok(Ok(r)) => Ok(r),
                    Ok(Err(e)) => Err(ApiError::from(e)),
                    Err(_) => Err(ApiError::internal(
                        "the report could not be built (see the server log)".into(),
                    )),
                };
                // An error is not kept (the next request builds again); nor is a build
                // whose weighing failed.
                let weight = match &answer {
                    Ok(b) => {
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.weight())).ok()
                    }
                    Err(_) => None,
                };
                let _ = tx.send(Some(answer));
                served.reports.built(&key, weight, cap);
            });
            rx
        })?;
        let wait = rx.wait_for(|v| v.is_some());
        let answer = match tokio::time::timeout_at(deadline.into(), wait).await {
            Ok(Ok(v)) => v.clone().expect("waited for an answer"),
            Ok(Err(_)) => Err(ApiError::internal("the report's build stopped".into())),
            Err(_) => Err(ApiError::unavailable(
                "the report of these sweeps is being built (one pass over the index, once \
                 per snapshot): ask again in a moment"
                    .into(),
            )),
        };
        answer
    }

    /// The slot of `key`, started by `start` when there is none.
    fn slot(&self, key: &str, start: impl FnOnce() -> Slot) -> Result<Slot, ApiError> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.asked += 1;
        let asked = slots.asked;
        if let Some(s) = slots.by_key.get_mut(key) {
            s.used = asked;
            return Ok(s.slot.clone());
        }
        if slots.by_key.len() >= MAX_REPORTS {
            let building = (slots.by_key.values())
                .filter(|s| s.weight.is_none())
                .count();
            if building >= MAX_REPORTS {
                return Err(ApiError::unavailable(format!(
                    "{MAX_REPORTS} reports are being built: ask again in a moment"
                )));
            }
            // The least recently asked built one makes room.
            forget_least_used(&mut slots, |_| true);
        }
        let slot = start();
        let entry = ReportEntry {
            slot: slot.clone(),
            weight: None,
            used: asked,
        };
        slots.by_key.insert(key.to_string(), entry);
        Ok(slot)
    }

    /// Notes that `key`'s build is done and weighs `weight` bytes (`None`: it failed, and
    /// is forgotten). The others built are forgotten, the least recently asked first,
    /// until those kept weigh `cap` at most, or this one alone is left (one over `cap` is
    /// kept, alone: built again on every request, a list of a million changes would
    /// hold the one build of the server for minutes each time).
    fn built(&self, key: &str, weight: Option<usize>, cap: usize) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let Some(weight) = weight else {
            slots.by_key.remove(key);
            return;
        };
        let Some(s) = slots.by_key.get_mut(key) else {
            return;
        };
        s.weight = Some(weight);
        slots.bytes += weight;
        while slots.bytes > cap && forget_least_used(&mut slots, |k| k != key) {}
    }

    /// Bytes the built reports and change lists weigh.
    pub fn bytes(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }
}

/// Forgets the least recently asked built entry whose key `may` allows; false when
/// there was none.
fn forget_least_used(slots: &mut ReportSlots, may: impl Fn(&str) -> bool) -> bool {
    let least = (slots.by_key.iter())
        .filter(|(k, s)| s.weight.is_some() && may(k))
        .min_by_key(|(_, s)| s.used)
        .map(|(k, _)| k.clone());
    let Some(k) = least else {
        return false;
    };
    if let Some(s) = slots.by_key.remove(&k) {
        slots.bytes -= s.weight.unwrap_or(0);
    }
    true
}

impl Built {
    /// Bytes it holds, about: a report's JSON length (each text with its field's name:
    /// more than its heap bytes), a change list's [`crate::report::changes::Ordered::weight`].
    fn weight(&self) -> usize {
        let mut count = Count(0);
        match self {
            Built::Report(r) => {
                let _ = serde_json::to_writer(&mut count, r.as_ref());
            }
            Built::Changes(c) => count.0 += c.weight(),
        }
        count.0 + std::mem::size_of::<Built>()
    }
}

/// A writer that counts the bytes written to it.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> Slot {
        watch::channel(None).1
    }

    #[test]
    fn built_ones_past_the_bytes_go_least_recently_asked_first() {
        let r = Reports::default();
        for k in ["a", "b", "c"] {
            r.slot(k, start).unwrap();
            r.built(k, Some(40), 100);
        }
        // Three of 40 bytes within 100: "a", asked least recently, went.
        assert_eq!(r.bytes(), 80);
        let kept = |r: &Reports| {
            let slots = r.slots.lock().unwrap();
            let mut k: Vec<String> = slots.by_key.keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(kept(&r), ["b", "c"]);
        // "b" asked again: "c" goes for "d".
        r.slot("b", start).unwrap();
        r.slot("d", start).unwrap();
        r.built("d", Some(40), 100);
        assert_eq!(kept(&r), ["b", "d"]);
        // One over the bytes is kept alone (not built again for each request).
        r.slot("huge", start).unwrap();
        r.built("huge", Some(500), 100);
        assert_eq!(kept(&r), ["huge"]);
        assert_eq!(r.bytes(), 500);
        // Builds under way are never forgotten; a failed one is.
        r.slot("e", start).unwrap();
        r.slot("f", start).unwrap();
        r.slot("g", start).unwrap();
        r.built("f", Some(100), 100);
        assert_eq!(kept(&r), ["e", "f", "g"]);
        assert_eq!(r.bytes(), 100);
        r.built("g", None, 100);
        assert_eq!(kept(&r), ["e", "f"]);
        assert_eq!(r.bytes(), 100);
    }
}
