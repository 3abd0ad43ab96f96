//! Who may see what. An archive publishes under access rules (pywb's `.aclj` files:
//! [`rules`]) and embargoes ([`embargo`]); a [`Policy`] holds both, and each request of
//! the service reads the index through a [`View`] of it: for the request's user, at the
//! request's time.
//!
//! The view is installed on the thread that runs the request's work (as its
//! [`Budget`](crate::index::budget::Budget) is) and applied where captures are read —
//! the `captures` and `doc_captures` families — so a hidden capture does not exist for
//! any answer built on those reads: the CDX APIs, TimeMaps, the TimeGate, replay,
//! `whereis`, `history`, `similar`, `cluster`, the report and its change list. The
//! commands run without a view and see everything.

pub mod embargo;
pub mod proxies;
pub mod rules;

use std::cell::RefCell;
use std::sync::Arc;

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

    /// Runs `f` with this view applied to every capture read on this thread.
    pub fn run<T>(self, f: impl FnOnce() -> T) -> T {
        let _restore = Restore(ACTIVE.with(|a| {
            a.borrow_mut().replace(Active {
                view: self,
                last_key: String::new(),
                last: None,
            })
        }));
        f()
    }

    /// Names the policy and user: answers learnt under one view (where a query's pages
    /// start) are kept apart from another's.
    fn scope(&self) -> String {
        format!(
            "acl {} user {:?}",
            self.policy.generation,
            self.user.as_deref().unwrap_or("")
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

struct Active {
    view: View,
    /// The last key asked and its rule's access (a scan reads a URL's captures
    /// together); the key's buffer is reused.
    last_key: String,
    last: Option<Access>,
}

struct Restore(Option<Active>);

impl Drop for Restore {
    fn drop(&mut self) {
        ACTIVE.with(|a| *a.borrow_mut() = self.0.take());
    }
}

thread_local! {
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
}

/// The access this thread's reader has to the capture of `key` at `ts`: `allow` with no
/// view.
pub fn access_of(key: &str, ts: &str) -> Access {
    ACTIVE.with(|a| {
        let mut a = a.borrow_mut();
        let Some(a) = a.as_mut() else {
            return Access::Allow;
        };
        let rule = match a.last {
            Some(r) if a.last_key == key => r,
            _ => {
                let r = a.view.rule_access(key);
                a.last_key.clear();
                a.last_key.push_str(key);
                a.last = Some(r);
                r
            }
        };
        combine(rule, &a.view.bounds, ts)
    })
}

/// Whether this thread's reader may know of the capture of `key` at `ts` (`block`ed
/// captures are listed; their replay is refused).
pub fn visible(key: &str, ts: &str) -> bool {
    access_of(key, ts) != Access::Exclude
}

/// Whether this thread's reader may be told of the URL at all: false when a rule
/// excludes it (a redirect's target, for one).
pub fn url_shown(url: &str) -> bool {
    ACTIVE.with(|a| match a.borrow().as_ref() {
        None => true,
        Some(a) => a.view.rule_access(&crate::url::surt(url)) != Access::Exclude,
    })
}

/// Whether this thread's reader may be told of something dated `ts` (a sweep): false
/// when the embargo excludes that date.
pub fn time_shown(ts: &str) -> bool {
    ACTIVE.with(|a| match a.borrow().as_ref() {
        None => true,
        Some(a) => a.view.bounds.access_of(ts) != Some(Access::Exclude),
    })
}

/// Whether a view applies on this thread.
pub fn active() -> bool {
    ACTIVE.with(|a| a.borrow().is_some())
}

/// `key` for this thread's view: the same string with no view.
pub fn scoped(key: &str) -> String {
    ACTIVE.with(|a| match a.borrow().as_ref() {
        None => key.to_string(),
        Some(a) => format!("{} {key}", a.view.scope()),
    })
}

/// Runs `f` without this thread's view (what every reader shares, as the index's
/// counts in `/api/stats`).
pub fn unfiltered<T>(f: impl FnOnce() -> T) -> T {
    let _restore = Restore(ACTIVE.with(|a| a.borrow_mut().take()));
    f()
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
        // Installed on the thread: reads see it; without it, everything.
        assert!(visible("com,c)/x", "20210101000000"));
        v.run(|| {
            assert!(!visible("com,c)/x", "20210101000000"));
            assert!(visible("com,a)/x", "20190101000000"));
            assert!(!time_shown("20210101000000"));
            unfiltered(|| assert!(visible("com,c)/x", "20210101000000")));
            assert!(!visible("com,c)/x", "20210101000000"));
        });
        assert!(visible("com,c)/x", "20210101000000"));
    }

    #[test]
    fn exact_rules_alone_make_a_view() {
        let p = policy(
            "com,a)/x### - {\"access\": \"exclude\"}\n",
            Embargo::default(),
        );
        assert!(!p.is_open());
        p.view(None).unwrap().run(|| {
            assert!(!visible("com,a)/x", "20200101000000"));
            assert!(visible("com,a)/xy", "20200101000000"));
        });
    }

    #[test]
    fn an_open_policy_makes_no_view() {
        let p = Arc::new(Policy::default());
        assert!(p.view(Some("staff".into())).is_none());
    }
}
