//! Access rules in pywb's `.aclj` format, read as they are, so an archive's existing
//! files work unchanged: one rule a line, `SURT - {"access": …, "user": …, "url": …}`,
//! `SURT###` for an exact URL, `*,` for every URL. `access` is `allow`, `block` (the
//! capture is listed, its replay refused), `exclude` (the capture does not exist for any
//! answer) or `allow_ignore_embargo`.
//!
//! Which rule applies is pywb's (2.9.1, `AccessChecker.find_access_rule`): among the
//! rules whose key is the URL's key with `###`, a prefix of the URL's key, or `*,`, the
//! greatest key in byte order — the exact rule, then the longest prefix, `*,` last; of
//! that key's rules, the one of the request's user, else the one without a user; a key
//! whose rules are all other users' is passed over for the next.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// What a rule does to a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Listed and replayed.
    Allow,
    /// Listed; replay refused (403).
    Block,
    /// As if never captured.
    Exclude,
    /// Allowed, embargoes notwithstanding.
    AllowIgnoreEmbargo,
}

impl Access {
    /// The name pywb gives it.
    pub fn name(self) -> &'static str {
        match self {
            Access::Allow => "allow",
            Access::Block => "block",
            Access::Exclude => "exclude",
            Access::AllowIgnoreEmbargo => "allow_ignore_embargo",
        }
    }
}

/// One rule, where it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The key as written (`com,example)/`, `com,example)/a###`, `*,`).
    pub key: String,
    /// What it does.
    pub access: Access,
    /// The user it is for, if any.
    pub user: Option<String>,
    /// The URL it was made from, if the file says.
    pub url: Option<String>,
    /// The file and line (1-based) it is on.
    pub file: PathBuf,
    /// See `file`.
    pub line: usize,
}

#[derive(Deserialize)]
struct RuleJson {
    access: Access,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    url: Option<String>,
}

/// The rules of some `.aclj` files.
#[derive(Debug, Clone, Default)]
pub struct Acl {
    /// Prefix rules (and `*,`) by key; a key's rules in file order. A lookup is a few
    /// ordered-map searches, not a walk over every rule: a scan asks once per URL.
    rules: BTreeMap<String, Vec<Rule>>,
    /// Exact rules by their key without `###`: one hash lookup.
    exact: HashMap<String, Vec<Rule>>,
    count: usize,
}

/// The suffix of an exact rule's key.
pub const EXACT: &str = "###";

impl Acl {
    /// Reads `.aclj` files (a folder: its `.aclj` files, by name). Blank lines and lines
    /// starting with `#` are skipped; any other line that is not a rule is an error
    /// naming the file and line.
    pub fn load(paths: &[PathBuf]) -> Result<Acl, String> {
        let mut rules = Vec::new();
        for f in files(paths)? {
            read_file(&f, &mut rules)?;
        }
        let count = rules.len();
        let mut by_key: BTreeMap<String, Vec<Rule>> = BTreeMap::new();
        let mut exact: HashMap<String, Vec<Rule>> = HashMap::new();
        for r in rules {
            match r.key.strip_suffix(EXACT) {
                Some(k) => exact.entry(k.to_string()).or_default().push(r),
                None => by_key.entry(r.key.clone()).or_default().push(r),
            }
        }
        Ok(Acl {
            rules: by_key,
            exact,
            count,
        })
    }

    /// Rules loaded.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no rule was loaded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether some rule excludes (for some user).
    pub fn excludes_some(&self) -> bool {
        (self.rules.values().chain(self.exact.values()))
            .flatten()
            .any(|r| r.access == Access::Exclude)
    }

    /// The rule that applies to a capture of SURT key `key` for `user` (none: the
    /// default applies).
    pub fn rule_for(&self, key: &str, user: Option<&str>) -> Option<&Rule> {
        if let Some(r) = self.exact.get(key).and_then(|r| pick(r, user)) {
            return Some(r);
        }
        self.prefix_rule_for(key, user)
    }

    /// The longest prefix rule of `key` for `user` (exact rules aside).
    fn prefix_rule_for(&self, key: &str, user: Option<&str>) -> Option<&Rule> {
        // The longest prefix: the greatest rule key at or below `bound` is the longest
        // prefix of `key` when it is a prefix at all; when it is not, no prefix of `key`
        // is longer than the part the two share, so the search goes on below that.
        let mut bound: &str = key;
        loop {
            use std::ops::Bound::{Included, Unbounded};
            let Some((k, rules)) = (self.rules)
                .range::<str, _>((Unbounded, Included(bound)))
                .next_back()
            else {
                break;
            };
            if k == "*," {
                break;
            }
            if key.starts_with(k.as_str()) {
                if let Some(r) = pick(rules, user) {
                    return Some(r);
                }
                // Only other users' rules here: the next shorter prefix.
                match k.char_indices().last() {
                    Some((i, _)) if i > 0 => bound = &key[..i],
                    _ => break,
                }
                continue;
            }
            let shared = k
                .bytes()
                .zip(key.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            let mut n = shared.min(bound.len());
            while !key.is_char_boundary(n) {
                n -= 1;
            }
            if n == 0 {
                break;
            }
            if n == bound.len() {
                // `k` < bound shares all of bound: impossible for a key not a prefix,
                // but step down rather than loop.
                n -= 1;
                while !key.is_char_boundary(n) {
                    n -= 1;
                }
                if n == 0 {
                    break;
                }
            }
            bound = &key[..n];
        }
        self.rules.get("*,").and_then(|r| pick(r, user))
    }

    /// Whether every capture whose SURT key starts with `prefix` is excluded for
    /// `user` by a rule (or by `default` where no rule applies): the rule for the
    /// prefix excludes, and no longer rule under it lets anything through.
    pub fn excludes_all_under(
        &self,
        prefix: &str,
        user: Option<&str>,
        default: Option<Access>,
    ) -> bool {
        self.all_under(prefix, user, default, |a| a == Access::Exclude)
    }

    /// Whether no capture whose SURT key starts with `prefix` (a host's) is excluded
    /// by these rules for `user`: neither the prefix rule over it (or the default) nor
    /// a rule under it excludes.
    pub fn excludes_nothing_under(
        &self,
        prefix: &str,
        user: Option<&str>,
        default: Option<Access>,
    ) -> bool {
        self.all_under(prefix, user, default, |a| a != Access::Exclude)
    }

    /// Whether `holds` holds of the access the prefix rule over `prefix` gives for
    /// `user` (else `default`; with neither, the URLs are allowed: `holds` of that is
    /// read as not of `exclude`) and of the access of every rule under it, exact or
    /// prefix (a key whose rules are all other users' leaves it to the rules over it).
    fn all_under(
        &self,
        prefix: &str,
        user: Option<&str>,
        default: Option<Access>,
        holds: impl Fn(Access) -> bool,
    ) -> bool {
        let under = |rules: &[Rule]| pick(rules, user).is_none_or(|r| holds(r.access));
        // The prefix rule over it: an exact rule on the prefix itself names one URL,
        // and is checked with the rules under it.
        let over = (self.prefix_rule_for(prefix, user).map(|r| r.access)).or(default);
        over.map_or(!holds(Access::Exclude), &holds)
            && (self.rules.range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            )))
            .take_while(|(k, _)| k.starts_with(prefix))
            .all(|(_, rules)| under(rules))
            && (self.exact.iter())
                .filter(|(k, _)| k.starts_with(prefix))
                .all(|(_, rules)| under(rules))
    }
}

/// Of one key's rules: the user's, else the one without a user.
fn pick<'r>(rules: &'r [Rule], user: Option<&str>) -> Option<&'r Rule> {
    (rules
        .iter()
        .find(|r| user.is_some() && r.user.as_deref() == user))
    .or_else(|| rules.iter().find(|r| r.user.is_none()))
}

/// The rule files of `paths`: each file as given, each folder's `.aclj` files by name.
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "aclj"))
                .collect();
            files.sort();
            out.extend(files);
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

fn read_file(path: &Path, rules: &mut Vec<Rule>) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("{}: line {}", path.display(), n + 1);
        let (key, rest) = line
            .split_once(' ')
            .ok_or_else(|| format!("{}: expected `SURT - {{\"access\": …}}`", at()))?;
        let json = rest
            .trim_start()
            .strip_prefix('-')
            .map(str::trim_start)
            .filter(|j| j.starts_with('{'))
            .ok_or_else(|| format!("{}: expected `-` and a JSON object after the key", at()))?;
        let r: RuleJson = serde_json::from_str(json).map_err(|e| {
            format!(
                "{}: {e} (access must be allow, block, exclude or allow_ignore_embargo)",
                at()
            )
        })?;
        rules.push(Rule {
            key: key.to_string(),
            access: r.access,
            user: r.user,
            url: r.url,
            file: path.to_path_buf(),
            line: n + 1,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(text: &str) -> Acl {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rules.aclj");
        std::fs::write(&p, text).unwrap();
        Acl::load(&[p]).unwrap()
    }

    fn access(a: &Acl, key: &str, user: Option<&str>) -> Option<&'static str> {
        a.rule_for(key, user).map(|r| r.access.name())
    }

    #[test]
    fn everything_under_a_prefix_is_excluded_only_when_no_rule_under_it_lets_through() {
        let a = acl(concat!(
            "com,example)/ - {\"access\": \"exclude\"}\n",
            "com,example)/open - {\"access\": \"allow\", \"user\": \"staff\"}\n",
            "org,wiki)/ - {\"access\": \"exclude\"}\n",
            "org,wiki)/a/b### - {\"access\": \"block\"}\n",
            "net,other)/ - {\"access\": \"exclude\"}\n",
            "net,other)/x - {\"access\": \"exclude\", \"user\": \"staff\"}\n",
        ));
        let all = |p: &str, user: Option<&str>, default: Option<Access>| {
            a.excludes_all_under(p, user, default)
        };
        // Staff's allow under it lets staff through, not others.
        assert!(all("com,example)/", None, None));
        assert!(!all("com,example)/", Some("staff"), None));
        // The host without its `/`: no rule covers it (only the default would).
        assert!(!all("com,example)", None, None));
        assert!(all("com,example)", None, Some(Access::Exclude)));
        // An exact rule that blocks (listed, not hidden) under the prefix.
        assert!(!all("org,wiki)/", None, None));
        assert!(all("org,wiki)/c", None, None));
        // Another user's exclusion under it changes nothing.
        assert!(all("net,other)/", None, None));
        assert!(all("net,other)/", Some("staff"), None));
        assert!(!all("io,free)/", None, None));
        // An exact rule on the prefix itself hides that one URL, not all under it.
        let home = acl("com,example)/### - {\"access\": \"exclude\"}\n");
        assert!(!home.excludes_all_under("com,example)/", None, None));
        assert!(home.excludes_all_under("com,example)/", None, Some(Access::Exclude)));
    }

    #[test]
    fn nothing_under_a_prefix_is_excluded_only_when_no_rule_over_or_under_it_excludes() {
        let a = acl(concat!(
            "com,example)/private - {\"access\": \"exclude\"}\n",
            "org,wiki)/a/b### - {\"access\": \"exclude\", \"user\": \"guest\"}\n",
            "org,wiki)/c - {\"access\": \"block\"}\n",
            "net,other)/ - {\"access\": \"exclude\"}\n",
            "net,other)/open - {\"access\": \"allow\"}\n",
        ));
        let none = |p: &str, user: Option<&str>, default: Option<Access>| {
            a.excludes_nothing_under(p, user, default)
        };
        // A prefix rule under the host excludes part of it.
        assert!(!none("com,example)", None, None));
        assert!(none("com,example)/public", None, None));
        // An exact rule for one user only; a block hides nothing.
        assert!(none("org,wiki)", None, None));
        assert!(!none("org,wiki)", Some("guest"), None));
        // The rule over it excludes (whatever allows under it); the longest prefix
        // over it allows; the default excludes.
        assert!(!none("net,other)/x", None, None));
        assert!(!none("net,other)", None, None));
        assert!(none("net,other)/open/x", None, None));
        assert!(!none("io,free)", None, Some(Access::Exclude)));
        assert!(none("io,free)", None, None));
        assert!(a.excludes_some());
        assert!(!acl("org,wiki)/c - {\"access\": \"block\"}\n").excludes_some());
    }

    #[test]
    fn the_exact_rule_then_the_longest_prefix_then_the_catch_all() {
        let a = acl(concat!(
            "*, - {\"access\": \"allow\"}\n",
            "com,example)/ - {\"access\": \"exclude\", \"url\": \"http://example.com/\"}\n",
            "com,example)/open - {\"access\": \"allow\"}\n",
            "com,example)/open/x### - {\"access\": \"block\"}\n",
            "# a comment\n\n",
            "org, - {\"access\": \"block\"}\n",
        ));
        assert_eq!(access(&a, "com,example)/secret", None), Some("exclude"));
        assert_eq!(access(&a, "com,example)/open/page", None), Some("allow"));
        assert_eq!(access(&a, "com,example)/open/x", None), Some("block"));
        assert_eq!(access(&a, "com,example)/open/xy", None), Some("allow"));
        assert_eq!(access(&a, "org,wiki)/", None), Some("block"));
        assert_eq!(access(&a, "net,other)/", None), Some("allow"));
        // The host without a path is not under `com,example)/`.
        assert_eq!(access(&a, "com,example)", None), Some("allow"));
        assert_eq!(a.rule_for("com,example)/a", None).unwrap().line, 2);
    }

    #[test]
    fn a_users_rule_first_else_the_rule_without_a_user() {
        let a = acl(concat!(
            "com,example)/ - {\"access\": \"exclude\"}\n",
            "com,example)/ - {\"access\": \"allow\", \"user\": \"staff\"}\n",
            "com,example)/news - {\"access\": \"allow\", \"user\": \"staff\"}\n",
        ));
        assert_eq!(access(&a, "com,example)/x", None), Some("exclude"));
        assert_eq!(access(&a, "com,example)/x", Some("staff")), Some("allow"));
        assert_eq!(access(&a, "com,example)/x", Some("guest")), Some("exclude"));
        // A key with only another user's rule is passed over.
        assert_eq!(access(&a, "com,example)/news/1", None), Some("exclude"));
        assert_eq!(
            access(&a, "com,example)/news/1", Some("staff")),
            Some("allow")
        );
        assert_eq!(access(&a, "org,other)/", None), None);
    }

    #[test]
    fn a_bad_line_is_an_error_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.aclj");
        std::fs::write(
            &p,
            "com,a)/ - {\"access\": \"allow\"}\ncom,b)/ - {\"access\": \"hide\"}\n",
        )
        .unwrap();
        let e = Acl::load(std::slice::from_ref(&p)).unwrap_err();
        assert!(e.contains("bad.aclj: line 2"), "{e}");
        std::fs::write(&p, "com,a)/\n").unwrap();
        assert!(Acl::load(std::slice::from_ref(&p))
            .unwrap_err()
            .contains("line 1"));
    }
}
