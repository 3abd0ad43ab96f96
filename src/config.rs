//! Configuration: the documented defaults live in the repository's `config.toml`,
//! embedded here, so the file and the program cannot disagree.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::sketch::SketchParams;

/// The embedded default configuration file.
pub const DEFAULT_CONFIG: &str = include_str!("../config.toml");

/// All tunables.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Index location.
    pub index: IndexConfig,
    /// Shingles and sketches.
    pub sketch: SketchConfig,
    /// Edges and clusters.
    pub cluster: ClusterConfig,
    /// Hosts' templates.
    pub template: crate::template::TemplateParams,
    /// Reading and workers.
    pub ingest: IngestConfig,
    /// Outgoing links and their anchor windows.
    pub links: LinksConfig,
    /// Queries.
    pub query: QueryConfig,
    /// Reports.
    pub report: ReportConfig,
    /// The HTTP service.
    pub serve: ServeConfig,
}

/// `[serve]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// Address to listen on (`--listen`).
    pub listen: String,
    /// Address of `/metrics` when it is not to be on `listen` ("": on `listen`).
    pub metrics_listen: String,
    /// Collection name of the CDX and replay endpoints (`--collection`).
    pub collection: String,
    /// Folders where WARC files are looked up by name when the path stored at ingest no
    /// longer holds the file.
    pub archive_paths: Vec<PathBuf>,
    /// Requests handled at once; more wait for a slot.
    pub max_concurrency: usize,
    /// Requests reading the index at once; 0 = twice the cores.
    pub workers: usize,
    /// Seconds a request may take to be answered, and again to be written to its client.
    pub request_timeout_s: u64,
    /// Streamed answers that may wait at once for clients reading slower than the index
    /// is read (each keeps its thread, its place in the index and its buffers); one more
    /// is cut.
    pub max_slow_answers: usize,
    /// Connections held at once; one more is answered 503 and closed.
    pub max_connections: usize,
    /// Connections held at once from one client (an IPv4 address, an IPv6 /64); trusted
    /// proxies count only against `max_connections`.
    pub max_connections_per_client: usize,
    /// Bytes of a request body (a POSTed document for `/api/similar`).
    pub max_body_bytes: usize,
    /// Characters of a URL given as a parameter.
    pub max_url_chars: usize,
    /// Index entries one request may read (0: no count; the deadline still holds).
    pub max_scan_rows: u64,
    /// Megabytes what the access views learn of a snapshot (hosts' templates and docs
    /// as each view sees them) may hold in all; the least recently used go first.
    pub view_cache_mb: u64,
    /// Megabytes the change reports and change lists built for a snapshot may hold in
    /// all; the least recently asked go first (and are built again when asked).
    pub report_cache_mb: usize,
    /// `filter` parameters one CDX query may give.
    pub max_filters: usize,
    /// URLs of one list POSTed to `/api/cluster`.
    pub max_list_urls: usize,
    /// Bytes of one archived record read back for replay (held whole): a larger one is
    /// refused with a message, not served cut short.
    pub max_replay_bytes: usize,
    /// Milliseconds between looks for a newly published sweep.
    pub poll_ms: u64,
    /// Scheme, host and path prefix of absolute links (`https://archive.example.org`);
    /// empty: `http://` and the request's `Host` header.
    pub public_url: String,
    /// A primary's address whose published snapshots this server copies and serves
    /// (`serve --follow`); empty: it serves its own index.
    pub follow: String,
    /// The token a follower presents to copy this server's snapshots (and presents to
    /// its primary); empty: no replication. `TIDEMARK_REPLICATION_TOKEN` overrides it.
    pub replication_token: String,
    /// pywb `.aclj` files or folders of them (`serve --acl`), reloaded when they change.
    pub acl_paths: Vec<PathBuf>,
    /// Access of a URL no rule names: `allow`, `block` or `exclude`.
    pub default_access: String,
    /// Request header naming the user whose rules apply, set by a trusted front end.
    pub acl_user_header: String,
    /// Addresses or networks (CIDR) whose requests may name a user with
    /// `acl_user_header`; the header from anyone else is ignored.
    pub trusted_proxies: Vec<String>,
    /// Captures hidden or blocked by their date.
    pub embargo: EmbargoConfig,
}

/// `[serve.embargo]`: as pywb's `embargo:` (empty: unset).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbargoConfig {
    /// `exclude` (hidden) or `block` (listed, replay refused).
    pub access: String,
    /// Captures dated before this (4 to 14 digits).
    pub before: String,
    /// Captures dated after this.
    pub after: String,
    /// Captures newer than this span back from now (`1 year`, `6 months`).
    pub newer: String,
    /// Captures older than this span back from now.
    pub older: String,
}

impl ServeConfig {
    /// The embargo, parsed.
    pub fn embargo(&self) -> Result<crate::access::Embargo, String> {
        let e = &self.embargo;
        crate::access::Embargo::parse(&e.access, &e.before, &e.after, &e.newer, &e.older)
    }

    /// `trusted_proxies`, parsed.
    pub fn trusted_proxies(&self) -> Result<crate::access::TrustedProxies, String> {
        crate::access::TrustedProxies::parse(&self.trusted_proxies)
    }

    /// `default_access`, parsed (`None`: allow).
    pub fn default_access(&self) -> Result<Option<crate::access::Access>, String> {
        use crate::access::Access;
        match self.default_access.as_str() {
            "allow" | "" => Ok(None),
            "block" => Ok(Some(Access::Block)),
            "exclude" => Ok(Some(Access::Exclude)),
            o => Err(format!(
                "serve.default_access: {o:?}: expected allow, block or exclude"
            )),
        }
    }
}

/// `[report]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportConfig {
    /// Lower bound of resemblance for `changed_minor`.
    pub minor: f64,
    /// Lower bound of resemblance for `changed_major` (below: `rewritten`).
    pub major: f64,
    /// Hosts listed in each top list.
    pub top_hosts: usize,
}

/// `[links]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinksConfig {
    /// Tokens either side of an anchor kept with each link.
    pub window: u32,
    /// Links from a page's own host count in its anchor bag.
    pub own_host: bool,
    /// T of an anchor bag's sample: between T and 2T of its elements are kept.
    pub bag_sample: u32,
}

/// `[query]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryConfig {
    /// Least estimated resemblance for `whereis` to follow content to a new URL.
    pub move_floor: f64,
}

/// `[index]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// Directory of the RocksDB index.
    pub path: PathBuf,
    /// Block cache in MiB.
    pub block_cache_mb: usize,
    /// Memtable budget in MiB.
    pub write_buffer_mb: usize,
    /// Store each new doc's canonical text (zstd with a trained dictionary) for diffs.
    pub store_texts: bool,
}

/// `[sketch]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SketchConfig {
    /// Sketch scheme name (only `mod2-sizeclass-v1` so far).
    pub scheme: String,
    /// Tokens per shingle.
    pub shingle_width: u32,
    /// Hash and permutation seed.
    pub seed: u64,
    /// Sample target T.
    pub sample_target: u32,
}

/// `[cluster]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// Clustering threshold on resemblance.
    pub threshold: f64,
    /// Smallest resemblance or containment stored as an edge.
    pub edge_floor: f64,
    /// Postings longer than this are not expanded into candidates.
    pub common_shingle_cap: u32,
    /// Posting sample target P.
    pub posting_target: u32,
    /// What edges and clusters compare: `full` (all shingles) or `content` (without
    /// the templates of the docs' hosts, [`crate::template`]).
    #[serde(default)]
    pub resemblance: Resemblance,
}

/// What the pair step compares (`cluster.resemblance`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Resemblance {
    /// All shingles.
    #[default]
    Full,
    /// Without the shingles of the hosts' templates: candidates are not searched
    /// through template values, and edges are taken on content resemblance.
    Content,
}

/// `[ingest]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestConfig {
    /// Worker threads; 0 = all cores.
    pub threads: usize,
    /// Bytes of one record kept for analysis.
    pub record_cap: usize,
    /// MiB of postings of new docs held in memory before they are written.
    pub postings_buffer_mb: usize,
    /// MiB of sketches compared lately kept by the writer.
    pub sketch_cache_mb: usize,
    /// No longer used: edges on content once held a sweep's records in memory until its
    /// templates were learned (schema 13); a config file that sets it still loads.
    #[serde(default, skip_serializing)]
    pub hold_mb: Option<usize>,
    /// Key ranges of the pair step's join per batch; 0 = four per thread.
    pub pair_partitions: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config::parse(DEFAULT_CONFIG).expect("the embedded config.toml is valid")
    }
}

impl Config {
    /// Parses a configuration; keys missing from `text` keep their defaults.
    pub fn parse(text: &str) -> Result<Config, String> {
        let mut base: toml::Value = toml::from_str(DEFAULT_CONFIG).map_err(|e| e.to_string())?;
        let over: toml::Value = toml::from_str(text).map_err(|e| e.to_string())?;
        merge(&mut base, over);
        let cfg: Config = base
            .try_into()
            .map_err(|e: toml::de::Error| e.to_string())?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Reads a configuration file.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
        Config::parse(&text).map_err(|e| format!("invalid config {}: {e}", path.display()))
    }

    fn validate(&self) -> Result<(), String> {
        let s = &self.sketch;
        if s.scheme != crate::sketch::SKETCH_SCHEME {
            return Err(format!(
                "sketch.scheme {:?} is unknown; supported: {:?}",
                s.scheme,
                crate::sketch::SKETCH_SCHEME
            ));
        }
        if !(1..=64).contains(&s.shingle_width) {
            return Err(format!(
                "sketch.shingle_width must be 1..=64, not {}",
                s.shingle_width
            ));
        }
        if s.sample_target == 0 {
            return Err("sketch.sample_target must be at least 1".into());
        }
        if self.links.bag_sample == 0 {
            return Err("links.bag_sample must be at least 1".into());
        }
        if self.links.window > crate::links::MAX_WINDOW {
            return Err(format!(
                "links.window must be 0..=64, not {}",
                self.links.window
            ));
        }
        let c = &self.cluster;
        if !(0.0..=1.0).contains(&c.edge_floor)
            || !(0.0..=1.0).contains(&c.threshold)
            || c.threshold < c.edge_floor
        {
            return Err(format!(
                "cluster thresholds must satisfy 0 <= edge_floor ({}) <= threshold ({}) <= 1",
                c.edge_floor, c.threshold
            ));
        }
        let r = &self.report;
        if !(0.0..=1.0).contains(&r.major) || !(0.0..=1.0).contains(&r.minor) || r.major > r.minor {
            return Err(format!(
                "report bands must satisfy 0 <= major ({}) <= minor ({}) <= 1",
                r.major, r.minor
            ));
        }
        if !(0.0..=1.0).contains(&self.query.move_floor) {
            return Err(format!(
                "query.move_floor must be between 0 and 1, not {}",
                self.query.move_floor
            ));
        }
        if c.posting_target == 0 || c.common_shingle_cap == 0 {
            return Err(
                "cluster.posting_target and cluster.common_shingle_cap must be at least 1".into(),
            );
        }
        let v = &self.serve;
        if v.max_concurrency == 0
            || v.request_timeout_s == 0
            || v.max_slow_answers == 0
            || v.max_connections == 0
            || v.max_connections_per_client == 0
            || v.max_url_chars == 0
            || v.max_filters == 0
            || v.max_list_urls == 0
            || v.max_replay_bytes == 0
            || v.view_cache_mb == 0
            || v.report_cache_mb == 0
            || v.poll_ms == 0
        {
            return Err("serve.max_concurrency, request_timeout_s, max_slow_answers, max_connections, max_connections_per_client, max_url_chars, max_filters, max_list_urls, max_replay_bytes, view_cache_mb, report_cache_mb and poll_ms must be at least 1".into());
        }
        if v.view_cache_mb > 1 << 20 || v.report_cache_mb > 1 << 20 {
            return Err("serve.view_cache_mb and report_cache_mb are in megabytes: at most 1048576 (a terabyte)".into());
        }
        if v.collection.is_empty()
            || !v
                .collection
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "serve.collection must be letters, digits, '-' or '_', not {:?}",
                v.collection
            ));
        }
        let public = &v.public_url;
        if !public.is_empty()
            && (!(public.starts_with("http://") || public.starts_with("https://"))
                || public.contains(['?', '#', ' ']))
        {
            return Err(format!(
                "serve.public_url must be empty or an http:// or https:// URL without query, like \"https://archive.example.org\", not {public:?}"
            ));
        }
        v.embargo()?;
        v.default_access()?;
        v.trusted_proxies()?;
        if v.acl_user_header.is_empty()
            || axum::http::HeaderName::from_bytes(v.acl_user_header.as_bytes()).is_err()
        {
            return Err(format!(
                "serve.acl_user_header must be a header name, like \"X-Pywb-ACL-User\", not {:?}",
                v.acl_user_header
            ));
        }
        if self.ingest.record_cap < 1024 {
            return Err("ingest.record_cap must be at least 1024 bytes".into());
        }
        Ok(())
    }

    /// The sketch parameters.
    pub fn sketch_params(&self) -> SketchParams {
        SketchParams {
            shingle_width: self.sketch.shingle_width,
            seed: self.sketch.seed,
            sample_target: self.sketch.sample_target,
        }
    }

    /// `serve.workers`, 0 resolved to twice the number of cores.
    pub fn serve_workers(&self) -> usize {
        match self.serve.workers {
            0 => {
                2 * std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            }
            n => n,
        }
    }

    /// Worker threads, 0 resolved to the number of cores.
    pub fn threads(&self) -> usize {
        if self.ingest.threads == 0 {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        } else {
            self.ingest.threads
        }
    }
}

fn merge(base: &mut toml::Value, over: toml::Value) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_defaults_match_the_sketch_defaults() {
        let c = Config::default();
        assert_eq!(c.sketch_params(), SketchParams::default());
        assert_eq!(c.cluster.threshold, 0.5);
    }

    /// `ingest.hold_mb` (schema 13) is no longer used; files that set it still load.
    #[test]
    fn a_file_setting_the_old_hold_mb_loads() {
        let c = Config::parse("[ingest]\nhold_mb = 4096\n").unwrap();
        assert_eq!(c.ingest.hold_mb, Some(4096));
        assert_eq!(Config::default().ingest.hold_mb, None);
    }

    #[test]
    fn partial_files_merge_and_typos_are_errors() {
        let c = Config::parse("[cluster]\nthreshold = 0.7\n").unwrap();
        assert_eq!(c.cluster.threshold, 0.7);
        assert_eq!(c.sketch.shingle_width, 10);
        assert!(Config::parse("[cluster]\nthreshhold = 0.7\n")
            .unwrap_err()
            .contains("threshhold"));
        assert!(Config::parse("[sketch]\nshingle_width = 0\n").is_err());
    }
}
