//! `/metrics`: what an operator's Prometheus scrapes, in the OpenMetrics text format
//! (the `prometheus-client` crate's registry and encoder): requests and their latency
//! per route and status, the error codes answered, the waits for a worker slot, the
//! published snapshot being served, and an ingest running into the same index (from its
//! progress file, [`crate::ingest::progress_file`]). Routes are named by their pattern (`/api/history`,
//! `/{coll}/{*rest}`), never by the URL asked, so the series stay few whatever clients ask.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::ingest::progress_file::IngestProgress;

/// A request's route and its answer's status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteStatus {
    route: String,
    status: String,
}

/// A route.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Route {
    route: String,
}

/// An error answer's code (`ApiError::code`: `over_budget`, `timeout`, …) and route.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refusal {
    route: String,
    code: String,
}

/// The code of an error answer, put on the response by `ApiError` for [`count`].
#[derive(Clone, Copy, Debug)]
pub struct ErrorCode(pub &'static str);

/// Latency buckets in seconds: 1 ms to 30 s (a request's timeout is 30 s by default).
const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The service's metrics.
pub struct Metrics {
    registry: Registry,
    requests: Family<RouteStatus, Counter>,
    latency: Family<Route, Histogram>,
    errors: Family<Refusal, Counter>,
    slot_wait: Histogram,
    refused: Counter,
    snapshot: Gauge,
    sweeps: Gauge,
    snapshot_age: Gauge<f64, std::sync::atomic::AtomicU64>,
    view_cache: Gauge,
    report_cache: Gauge,
    ingest: IngestGauges,
    follower_lag: Gauge<f64, std::sync::atomic::AtomicU64>,
}

/// An ingest into the same index, from its progress file.
#[derive(Default)]
struct IngestGauges {
    running: Gauge,
    step: Family<Step, Gauge>,
    seconds: Gauge<f64, std::sync::atomic::AtomicU64>,
    records: Gauge,
    input_bytes: Gauge,
    input_total: Gauge,
    docs_paired: Gauge,
    docs_waiting: Gauge,
}

/// An ingest's step.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Step {
    step: String,
}

impl IngestGauges {
    fn register(&self, r: &mut Registry) {
        let mut add = |name: &str, help: &str, m: Gauge| r.register(name, help, m);
        add(
            "ingest_running",
            "1 while an ingest into this index runs (its progress file names a live process)",
            self.running.clone(),
        );
        add(
            "ingest_records",
            "Records the running ingest has committed",
            self.records.clone(),
        );
        add(
            "ingest_input_bytes",
            "Compressed input bytes the running ingest has consumed",
            self.input_bytes.clone(),
        );
        add(
            "ingest_input_total_bytes",
            "Compressed input bytes the running ingest will read",
            self.input_total.clone(),
        );
        add(
            "ingest_docs_paired",
            "New docs the running ingest has paired (edges on content, once its sweep is read)",
            self.docs_paired.clone(),
        );
        add(
            "ingest_docs_waiting",
            "New docs the running ingest pairs in all",
            self.docs_waiting.clone(),
        );
        r.register(
            "ingest_step",
            "The running ingest's step (reading, pairing, finishing): 1",
            self.step.clone(),
        );
        r.register(
            "ingest_seconds",
            "Seconds since the running ingest started",
            self.seconds.clone(),
        );
    }

    fn set(&self, p: Option<&IngestProgress>) {
        self.step.clear();
        let Some(p) = p else {
            for g in [
                &self.running,
                &self.records,
                &self.input_bytes,
                &self.input_total,
                &self.docs_paired,
                &self.docs_waiting,
            ] {
                g.set(0);
            }
            self.seconds.set(0.0);
            return;
        };
        let n = |v: u64| v.min(i64::MAX as u64) as i64;
        self.running.set(1);
        self.records.set(n(p.records.max(p.read)));
        self.input_bytes.set(n(p.input_bytes));
        self.input_total.set(n(p.input_total));
        self.docs_paired.set(n(p.docs_paired));
        self.docs_waiting.set(n(p.docs_waiting));
        let now = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        self.seconds.set((now - p.started).max(0.0));
        self.step
            .get_or_create(&Step {
                step: p.step.clone(),
            })
            .set(1);
    }
}

impl Metrics {
    /// The metrics, a follower's among them (`follower`: updated by the follower).
    pub fn new(follower: &super::replica::FollowerStatus) -> Metrics {
        let mut m = Metrics::default();
        let r = &mut m.registry;
        r.register(
            "follower_primary_snapshot",
            "As a follower (serve --follow): the newest snapshot the primary serves (0: none seen)",
            follower.primary_snapshot.clone(),
        );
        r.register(
            "follower_lag_seconds",
            "As a follower: seconds since the primary was first seen serving a snapshot this server has not installed (0: up to date)",
            m.follower_lag.clone(),
        );
        r.register(
            "follower_errors",
            "As a follower: polls or copies that failed (the primary down, a file that did not match its checksum)",
            follower.errors.clone(),
        );
        r.register(
            "follower_copied_bytes",
            "As a follower: bytes downloaded from the primary (files it already held are linked, not counted)",
            follower.bytes_copied.clone(),
        );
        m
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("tidemark");
        let requests = Family::<RouteStatus, Counter>::default();
        registry.register(
            "http_requests",
            "Requests answered, by route pattern and status",
            requests.clone(),
        );
        let latency = Family::<Route, Histogram>::new_with_constructor(|| {
            Histogram::new(LATENCY_BUCKETS.iter().copied())
        });
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's arrival to its answer's head, by route pattern",
            latency.clone(),
        );
        let errors = Family::<Refusal, Counter>::default();
        registry.register(
            "http_errors",
            "Error answers by code (over_budget, timeout, unavailable, bad_parameter, …) and route",
            errors.clone(),
        );
        let slot_wait = Histogram::new(LATENCY_BUCKETS.iter().copied());
        registry.register(
            "worker_slot_wait_seconds",
            "Time a request waited for a worker slot (serve.workers) before reading the index",
            slot_wait.clone(),
        );
        let refused = Counter::default();
        registry.register(
            "connections_refused",
            "Connections answered 503 too_many_connections (serve.max_connections, max_connections_per_client) without their request read",
            refused.clone(),
        );
        let snapshot = Gauge::default();
        registry.register(
            "snapshot",
            "Number of the published snapshot being served (0: none yet)",
            snapshot.clone(),
        );
        let sweeps = Gauge::default();
        registry.register(
            "snapshot_sweeps",
            "Sweeps in the snapshot being served",
            sweeps.clone(),
        );
        let snapshot_age = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        registry.register(
            "snapshot_age_seconds",
            "Seconds since the snapshot being served was published",
            snapshot_age.clone(),
        );
        let view_cache = Gauge::default();
        registry.register(
            "view_cache_bytes",
            "Bytes held by what readers under access rules learnt of the snapshot being served (as weighed; serve.view_cache_mb at most)",
            view_cache.clone(),
        );
        let report_cache = Gauge::default();
        registry.register(
            "report_cache_bytes",
            "Bytes held by the change reports and change lists built for the snapshot being served (as weighed; serve.report_cache_mb at most)",
            report_cache.clone(),
        );
        let ingest = IngestGauges::default();
        ingest.register(&mut registry);
        Metrics {
            ingest,
            registry,
            requests,
            latency,
            errors,
            slot_wait,
            refused,
            snapshot,
            sweeps,
            snapshot_age,
            view_cache,
            report_cache,
            follower_lag: Default::default(),
        }
    }
}

impl Metrics {
    /// Notes a wait for a worker slot.
    pub fn slot_waited(&self, d: Duration) {
        self.slot_wait.observe(d.as_secs_f64());
    }

    /// Notes a connection refused over the caps.
    pub fn connection_refused(&self) {
        self.refused.inc();
    }

    /// The text a scrape gets; `snapshot`: the one served (its number, sweeps and when
    /// it was published, the bytes its views learnt and its reports hold), if any; `ingest`: an ingest
    /// running into the index, if any.
    pub fn render(
        &self,
        snapshot: Option<(u64, usize, SystemTime, (u64, u64))>,
        ingest: Option<&IngestProgress>,
        follower_lag: f64,
    ) -> String {
        self.ingest.set(ingest);
        self.follower_lag.set(follower_lag);
        let (number, sweeps, age, (learnt, reports)) = match snapshot {
            Some((n, s, published, cached)) => {
                let age = SystemTime::now()
                    .duration_since(published)
                    .unwrap_or_default();
                (n as i64, s as i64, age.as_secs_f64(), cached)
            }
            None => (0, 0, 0.0, (0, 0)),
        };
        self.view_cache.set(learnt as i64);
        self.report_cache.set(reports as i64);
        self.snapshot.set(number);
        self.sweeps.set(sweeps);
        self.snapshot_age.set(age);
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Counts each request by its route pattern and status, and times it (outside every
/// other layer: a timeout's `408` and a refusal count too).
pub async fn count(State(m): State<Arc<Metrics>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let resp = next.run(req).await;
    let status = resp.status().as_u16().to_string();
    m.requests
        .get_or_create(&RouteStatus {
            route: route.clone(),
            status,
        })
        .inc();
    if let Some(ErrorCode(code)) = resp.extensions().get::<ErrorCode>() {
        m.errors
            .get_or_create(&Refusal {
                route: route.clone(),
                code: code.to_string(),
            })
            .inc();
    }
    m.latency
        .get_or_create(&Route { route })
        .observe(started.elapsed().as_secs_f64());
    resp
}
