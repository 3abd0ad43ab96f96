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
use super::state::{AppState, Built, ReportSlot as Slot, Reports, Served};
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
        deadline,
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
        deadline,
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

/// Builds kept per snapshot at most; past this, built ones are forgotten (they are
/// built again when asked), and a request that would start one more build while this
/// many are under way is refused.
const MAX_REPORTS: usize = 64;

/// One build at a time, for the whole server: a build reads the whole index.
static BUILDING: Mutex<()> = Mutex::new(());

impl Reports {
    /// What `build` builds for `reader` over `served` (kept under `key`, scoped to the
    /// reader's view), built now or before, or 503 when it is not ready by `deadline`.
    async fn get(
        served: &Arc<Served>,
        reader: Reader,
        key: String,
        deadline: Instant,
        build: impl FnOnce(&Index, &Reader) -> Result<Built, IndexError> + Send + 'static,
    ) -> Result<Built, ApiError> {
        let key = reader.scoped(&key);
        let reader = served.keeping(reader);
        let mut rx = served.reports.slot(&key, || {
            let (tx, rx) = watch::channel(None);
            let served = served.clone();
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
                let _ = tx.send(Some(answer));
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
        if let Some(s) = slots.get(key) {
            return Ok(s.clone());
        }
        if slots.len() >= MAX_REPORTS {
            slots.retain(|_, s| s.borrow().is_none());
            if slots.len() >= MAX_REPORTS {
                return Err(ApiError::unavailable(format!(
                    "{MAX_REPORTS} reports are being built: ask again in a moment"
                )));
            }
        }
        let s = start();
        slots.insert(key.to_string(), s.clone());
        Ok(s)
    }
}
