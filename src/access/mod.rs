//! Who may see what. An archive publishes under access rules (pywb's `.aclj` files:
//! [`rules`]) and embargoes ([`embargo`]); a [`Policy`] holds both, and each request of
//! the service reads the index as a [`Reader`]: a [`View`] of it, for the request's
//! user, at the request's time.
//!
//! The reader is a capability, passed to every read of captures (the `captures` and
//! `doc_captures` families, and through them the CDX APIs, TimeMaps, the TimeGate,
//! replay, `whereis`, `history`, `similar`, `cluster`, the report and its change list)
//! and of sweeps: there is no default, so a read that forgets it does not compile. A
//! hidden capture does not exist for any answer built on those reads. The commands, the
//! ingest and the exports read as [`Reader::everything`], said where they do.

pub mod embargo;
pub mod proxies;
pub mod rules;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub use embargo::Embargo;
pub use proxies::TrustedProxies;
pub use rules::{Access, Acl, Rule, EXACT};

/// The rules, the default and the embargo one server applies.
#[derive(Debug, Default)]
pub struct Policy {
    /// The `.aclj` rules.
    pub rules: Acl,
    /// The access of a URL no rule names (`serve.default_access`).
    pub default: Option<Access>,
    /// Captures hidden or blocked by their date.
    pub embargo: Embargo,
    /// Counts the rule sets loaded, so that what was learnt under one (page starts of
    /// a query) is not used under another.
    pub generation: u64,
}

impl Policy {
    /// Nothing hidden, nothing blocked: requests read without a view (and pay nothing).
    pub fn is_open(&self) -> bool {
        self.rules.is_empty()
            && matches!(self.default, None | Some(Access::Allow))
            && self.embargo.is_empty()
    }

    /// The view of `user` now; none when the policy hides nothing.
    pub fn view(self: &Arc<Self>, user: Option<String>) -> Option<View> {
        if self.is_open() {
            return None;
        }
        Some(View {
            bounds: self.embargo.bounds(chrono::Utc::now()),
            policy: self.clone(),
            user,
        })
    }
}

/// What one reader may see: a policy, for a user, at a time.
#[derive(Debug, Clone)]
pub struct View {
    policy: Arc<Policy>,
    user: Option<String>,
    bounds: embargo::Bounds,
}

impl View {
    /// The access a rule gives to URLs of SURT key `key` (the embargo aside).
    pub fn rule_access(&self, key: &str) -> Access {
        (self.policy.rules.rule_for(key, self.user.as_deref()))
            .map(|r| r.access)
            .or(self.policy.default)
            .unwrap_or(Access::Allow)
    }

    /// The access to the capture of `key` at `ts` (14 digits), as pywb decides it: the
    /// rule's, unless the capture is under embargo and the rule neither excludes it
    /// already nor ignores embargoes; `allow_ignore_embargo` is then `allow`.
    pub fn access(&self, key: &str, ts: &str) -> Access {
        combine(self.rule_access(key), &self.bounds, ts)
    }

    /// Names the policy and user: answers learnt under one view (where a query's pages
    /// start) are kept apart from another's.
    fn scope(&self) -> String {
        format!(
            "acl {} user {:?} embargo {:?}",
            self.policy.generation,
            self.user.as_deref().unwrap_or(""),
            self.bounds
        )
    }
}

fn combine(rule: Access, bounds: &embargo::Bounds, ts: &str) -> Access {
    let access = match rule {
        Access::Exclude | Access::AllowIgnoreEmbargo => rule,
        _ => match bounds.access_of(ts) {
            Some(a) if a != Access::Allow => a,
            _ => rule,
        },
    };
    match access {
        Access::AllowIgnoreEmbargo => Access::Allow,
        a => a,
    }
}

/// How one reader reads the index: everything (the commands, the ingest, the collection
/// counts of `/api/stats`), or through a [`View`]. Cheap to clone; one per request.
#[derive(Debug, Clone)]
pub struct Reader(Option<Arc<Viewing>>);

#[derive(Debug)]
struct Viewing {
    view: View,
    /// The last key asked and its rule's access (a scan reads a URL's captures
    /// together).
    last: Mutex<(String, Option<Access>)>,
    /// What this view learnt of the index (shared by its readers of one snapshot).
    kept: Arc<Kept>,
    /// [`Reader::rules_may_hide`], once asked.
    rules_hide: std::sync::OnceLock<bool>,
}

/// A host's templates as a view is told of them, where they differ from those stored:
/// by sweep, the values (`None`: the host has no template there for this view).
pub type TemplatesSeen = HashMap<u32, Option<Arc<[u32]>>>;

/// What a view learns of one snapshot of the index and keeps while it is served,
/// shared by the view's readers ([`Reader::keeping`]): hosts' templates learnt from
/// the pages it shows ([`crate::index::columns::captures::templates_seen`]) and whether
/// it sees a doc, in the snapshot's [`Learnt`] under this view's number.
#[derive(Debug)]
pub struct Kept {
    /// This view's number in `learnt` (unique in the process).
    id: u64,
    learnt: Arc<Learnt>,
    /// The least doc from which on the view sees none (docs are numbered as first met:
    /// an embargo on the newest captures hides the newest docs), once worked out
    /// ([`Kept::hidden_from`]).
    hidden_from: Mutex<Option<u64>>,
}

/// What the views of one snapshot learn, bounded in bytes together: the least
/// recently used out first; one build of an entry at a time (a second reader asking
/// for it meanwhile waits for the first's).
pub struct Learnt {
    templates: moka::sync::Cache<(u64, String), Arc<TemplatesSeen>, ahash::RandomState>,
    docs: moka::sync::Cache<(u64, u64), bool, ahash::RandomState>,
}

impl std::fmt::Debug for Learnt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Learnt")
            .field("templates", &self.templates.entry_count())
            .field("docs", &self.docs.entry_count())
            .finish()
    }
}

/// Bytes a cache entry costs besides its key and value (the cache's own node, its
/// place in the recency lists and the frequency sketch; measured by
/// `learnt_entries_cost_what_they_weigh`).
const ENTRY_COST: u32 = 200;

impl Learnt {
    /// Caches holding `bytes` at most in all (a tenth for docs seen, the rest for
    /// templates).
    pub fn new(bytes: u64) -> Learnt {
        let docs = bytes / 10;
        Learnt {
            templates: moka::sync::Cache::builder()
                .max_capacity(bytes - docs)
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .weigher(|k: &(u64, String), v: &Arc<TemplatesSeen>| {
                    let values: usize = v
                        .values()
                        .map(|t| t.as_ref().map_or(0, |t| 16 + 4 * t.len()))
                        .sum();
                    let bytes = k.1.len() + 32 * v.len() + values;
                    ENTRY_COST.saturating_add(u32::try_from(bytes).unwrap_or(u32::MAX))
                })
                .build_with_hasher(ahash::RandomState::new()),
            docs: moka::sync::Cache::builder()
                .max_capacity(docs)
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .weigher(|_: &(u64, u64), _: &bool| ENTRY_COST + 24)
                .build_with_hasher(ahash::RandomState::new()),
        }
    }

    /// Bytes held (as weighed; evictions under way may not be counted yet).
    pub fn weight(&self) -> u64 {
        self.templates.weighted_size() + self.docs.weighted_size()
    }
}

/// The views' numbers in [`Learnt`] caches.
static NEXT_VIEW: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Bytes learnt by readers outside the server (the commands), all of them together.
const LEARNT_ELSEWHERE: u64 = 16 << 20;

impl Default for Kept {
    /// What a reader outside the server keeps: its own number in one cache the
    /// process shares.
    fn default() -> Kept {
        static SHARED: std::sync::LazyLock<Arc<Learnt>> =
            std::sync::LazyLock::new(|| Arc::new(Learnt::new(LEARNT_ELSEWHERE)));
        Kept::new(SHARED.clone())
    }
}

impl Kept {
    /// A view's, keeping what it learns in `learnt` (its snapshot's).
    pub fn new(learnt: Arc<Learnt>) -> Kept {
        Kept {
            id: NEXT_VIEW.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            learnt,
            hidden_from: Default::default(),
        }
    }

    /// The templates of `host`: kept, or made by `learn` (once: a reader asking
    /// meanwhile waits for it) and kept.
    pub fn templates_of<E: Clone + Send + Sync + 'static>(
        &self,
        host: &str,
        learn: impl FnOnce() -> Result<Arc<TemplatesSeen>, E>,
    ) -> Result<Arc<TemplatesSeen>, E> {
        (self.learnt.templates)
            .try_get_with((self.id, host.to_string()), learn)
            .map_err(|e| (*e).clone())
    }

    /// The least doc from which on the view sees none, when worked out.
    pub fn hidden_from_known(&self) -> Option<u64> {
        *self.hidden_from.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The least doc from which on the view sees none: kept, or worked out by `find`
    /// (once: a reader asking meanwhile waits for it) and kept.
    pub fn hidden_from<E>(&self, find: impl FnOnce() -> Result<u64, E>) -> Result<u64, E> {
        let mut kept = self.hidden_from.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = *kept {
            return Ok(b);
        }
        let b = find()?;
        *kept = Some(b);
        Ok(b)
    }

    /// Whether the view sees doc `doc`, if known.
    pub fn doc_seen(&self, doc: u64) -> Option<bool> {
        self.learnt.docs.get(&(self.id, doc))
    }

    /// Keeps whether the view sees doc `doc`.
    pub fn keep_doc_seen(&self, doc: u64, seen: bool) {
        self.learnt.docs.insert((self.id, doc), seen);
    }
}

impl Reader {
    /// A reader who sees everything: the commands' and the ingest's.
    pub fn everything() -> Reader {
        Reader(None)
    }

    /// A reader through `view`, or one who sees everything when there is none (an open
    /// policy makes none: [`Policy::view`]).
    pub fn of(view: Option<View>) -> Reader {
        Reader(view.map(|view| {
            Arc::new(Viewing {
                view,
                last: Mutex::new((String::new(), None)),
                kept: Arc::default(),
                rules_hide: Default::default(),
            })
        }))
    }

    /// The same reader keeping what it learns in `kept` (one per snapshot and view,
    /// [`Reader::scoped`] names the view), so the view's next readers find it.
    pub fn keeping(self, kept: Arc<Kept>) -> Reader {
        match self.0 {
            None => self,
            Some(v) => Reader(Some(Arc::new(Viewing {
                view: v.view.clone(),
                last: Mutex::new((String::new(), None)),
                kept,
                rules_hide: Default::default(),
            }))),
        }
    }

    /// What this reader's view keeps (a reader who sees everything keeps nothing:
    /// a fresh, empty one).
    pub fn kept(&self) -> Arc<Kept> {
        match &self.0 {
            Some(v) => v.kept.clone(),
            None => Arc::default(),
        }
    }

    /// Whether some capture may be hidden from this reader.
    pub fn filtered(&self) -> bool {
        self.0.is_some()
    }

    /// The access this reader has to the capture of `key` at `ts`.
    pub fn access_of(&self, key: &str, ts: &str) -> Access {
        let Some(v) = &self.0 else {
            return Access::Allow;
        };
        let mut last = v.last.lock().unwrap_or_else(|e| e.into_inner());
        let rule = match last.1 {
            Some(r) if last.0 == key => r,
            _ => {
                let r = v.view.rule_access(key);
                last.0.clear();
                last.0.push_str(key);
                last.1 = Some(r);
                r
            }
        };
        combine(rule, &v.view.bounds, ts)
    }

    /// Whether this reader may know of the capture of `key` at `ts` (`block`ed captures
    /// are listed; their replay is refused).
    pub fn visible(&self, key: &str, ts: &str) -> bool {
        self.access_of(key, ts) != Access::Exclude
    }

    /// Whether a rule (or the default access) hides the captures of SURT key `key`,
    /// whatever their date.
    pub fn rule_hides(&self, key: &str) -> bool {
        (self.0.as_ref()).is_some_and(|v| v.view.rule_access(key) == Access::Exclude)
    }

    /// Whether every capture whose SURT key starts with `prefix` (a host's) is hidden
    /// from this reader by its rules, whatever its date.
    pub fn hides_all_under(&self, prefix: &str) -> bool {
        self.0.as_ref().is_some_and(|v| {
            let p = &v.view.policy;
            p.rules
                .excludes_all_under(prefix, v.view.user.as_deref(), p.default)
        })
    }

    /// Whether some capture whose SURT key starts with `prefix` (a host's) may be hidden
    /// from this reader: a rule excludes one, or an embargo hides some dates.
    pub fn may_hide_under(&self, prefix: &str) -> bool {
        self.0.as_ref().is_some_and(|v| {
            let p = &v.view.policy;
            v.view.bounds.hides_some()
                || !(p.rules).excludes_nothing_under(prefix, v.view.user.as_deref(), p.default)
        })
    }

    /// Whether a rule may hide a capture of another URL from this reader (some rule
    /// excludes, or the default does): a revisit's original, for one. Worked out once
    /// per reader.
    pub fn rules_may_hide(&self) -> bool {
        self.0.as_ref().is_some_and(|v| {
            *v.rules_hide.get_or_init(|| {
                let p = &v.view.policy;
                p.default == Some(Access::Exclude) || p.rules.excludes_some()
            })
        })
    }

    /// Whether an embargo hides captures of some dates from this reader.
    pub fn dates_may_hide(&self) -> bool {
        (self.0.as_ref()).is_some_and(|v| v.view.bounds.hides_some())
    }

    /// Whether this reader may be told of the URL at all: false when a rule excludes it
    /// (a redirect's target, for one).
    pub fn url_shown(&self, url: &str) -> bool {
        match &self.0 {
            None => true,
            Some(v) => v.view.rule_access(&crate::url::surt(url)) != Access::Exclude,
        }
    }

    /// Whether this reader may be told of something dated `ts` (a sweep): false when the
    /// embargo excludes that date.
    pub fn time_shown(&self, ts: &str) -> bool {
        match &self.0 {
            None => true,
            Some(v) => v.view.bounds.access_of(ts) != Some(Access::Exclude),
        }
    }

    /// `key` for this reader: the same string for one who sees everything; else named
    /// by the policy and user, so what was learnt under one view (where a query's pages
    /// start) is not used under another.
    pub fn scoped(&self, key: &str) -> String {
        match &self.0 {
            None => key.to_string(),
            Some(v) => format!("{} {key}", v.view.scope()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(rules: &str, embargo: Embargo) -> Arc<Policy> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.aclj");
        std::fs::write(&p, rules).unwrap();
        Arc::new(Policy {
            rules: Acl::load(&[p]).unwrap(),
            default: None,
            embargo,
            generation: 1,
        })
    }

    #[test]
    fn embargoes_apply_unless_the_rule_excludes_or_ignores_them() {
        let e = Embargo::parse("exclude", "", "20200101", "", "").unwrap();
        let p = policy(
            concat!(
                "com,a)/ - {\"access\": \"block\"}\n",
                "com,b)/ - {\"access\": \"allow_ignore_embargo\"}\n",
            ),
            e,
        );
        let v = p.view(None).unwrap();
        assert_eq!(v.access("com,a)/x", "20190101000000"), Access::Block);
        assert_eq!(v.access("com,a)/x", "20210101000000"), Access::Exclude);
        assert_eq!(v.access("com,b)/x", "20210101000000"), Access::Allow);
        assert_eq!(v.access("com,c)/x", "20200101000000"), Access::Allow);
        assert_eq!(v.access("com,c)/x", "20200101000001"), Access::Exclude);
        // Through a reader: what it may see; without a view, everything.
        let everyone = Reader::everything();
        assert!(everyone.visible("com,c)/x", "20210101000000"));
        let r = Reader::of(Some(v));
        assert!(!r.visible("com,c)/x", "20210101000000"));
        assert!(r.visible("com,a)/x", "20190101000000"));
        assert!(!r.time_shown("20210101000000"));
        assert!(r.filtered() && !everyone.filtered());
    }

    #[test]
    fn exact_rules_alone_make_a_view() {
        let p = policy(
            "com,a)/x### - {\"access\": \"exclude\"}\n",
            Embargo::default(),
        );
        assert!(!p.is_open());
        let r = Reader::of(p.view(None));
        assert!(!r.visible("com,a)/x", "20200101000000"));
        assert!(r.visible("com,a)/xy", "20200101000000"));
    }

    #[test]
    fn an_open_policy_makes_no_view() {
        let p = Arc::new(Policy::default());
        assert!(p.view(Some("staff".into())).is_none());
    }

    fn values(n: usize) -> Arc<TemplatesSeen> {
        Arc::new(HashMap::from([
            (1, Some(Arc::from(vec![7u32; n]))),
            (2, None),
        ]))
    }

    #[test]
    fn learnt_stays_within_its_bytes_and_keeps_the_recent() {
        let learnt = Arc::new(Learnt::new(1 << 20));
        let kept = Kept::new(learnt.clone());
        let other = Kept::new(learnt.clone());
        for h in 0..20_000 {
            let host = format!("org,example{h})");
            let t = kept
                .templates_of(&host, || Ok::<_, ()>(values(40)))
                .unwrap();
            assert_eq!(t.len(), 2);
            kept.keep_doc_seen(h, h % 2 == 0);
        }
        learnt.templates.run_pending_tasks();
        learnt.docs.run_pending_tasks();
        let weight = learnt.weight();
        assert!(weight <= 1 << 20, "{weight} bytes weighed");
        assert!(
            weight > 1 << 19,
            "{weight} bytes weighed: the cache is not used"
        );
        // The last host learnt is kept; the first went; another view learns its own.
        let again = kept.templates_of("org,example19999)", || Err("learnt again"));
        assert_eq!(again.unwrap().len(), 2);
        let first = kept.templates_of("org,example0)", || Err("learnt again"));
        assert_eq!(first.unwrap_err(), "learnt again");
        let others = other.templates_of("org,example19999)", || Err("learnt again"));
        assert_eq!(others.unwrap_err(), "learnt again");
        assert_eq!(kept.doc_seen(19_998), Some(true));
        assert_eq!(kept.doc_seen(19_999), Some(false));
        assert_eq!(kept.doc_seen(0), None);
        assert_eq!(other.doc_seen(19_998), None);
    }

    #[test]
    fn readers_asking_together_wait_for_one_learning() {
        let kept = Arc::new(Kept::new(Arc::new(Learnt::new(1 << 20))));
        let learnt = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (kept, learnt) = (kept.clone(), learnt.clone());
                std::thread::spawn(move || {
                    let t = kept.templates_of("org,example)", || {
                        learnt.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(100));
                        Ok::<_, ()>(values(3))
                    });
                    let b = kept.hidden_from(|| {
                        learnt.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(100));
                        Ok::<_, ()>(42)
                    });
                    (t.unwrap().len(), b.unwrap())
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), (2, 42));
        }
        assert_eq!(learnt.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    /// What an entry of docs seen costs in memory, beside what it is weighed:
    /// `cargo test --release --lib learnt_entries_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn learnt_entries_cost_what_they_weigh() {
        fn rss() -> u64 {
            let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
            let pages: u64 = statm.split(' ').nth(1).unwrap().parse().unwrap();
            pages * 4096
        }
        let kept = Kept::new(Arc::new(Learnt::new(1 << 30)));
        let n = 1_000_000;
        let before = rss();
        for d in 0..n {
            kept.keep_doc_seen(d, true);
        }
        kept.learnt.docs.run_pending_tasks();
        let cost = (rss() - before) / n;
        println!("{cost} bytes a doc entry (weighed {})", ENTRY_COST + 24);
        assert!(cost <= u64::from(ENTRY_COST + 24));
    }
}
