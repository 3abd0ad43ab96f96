//! `tidemark acl check URL --acl FILE…`: which access rule of pywb-format `.aclj` files
//! applies to a URL, for a user or for everyone.

use std::path::PathBuf;

use serde_json::json;
use tidemark::access::Acl;

use super::{EXIT_OK, EXIT_USAGE};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Which rule applies to URL: the exact rule, else the longest SURT prefix, else
    /// `*,`, preferring the user's rule (pywb's order); none: allow (this command does
    /// not read serve.default_access or the embargo).
    Check(CheckArgs),
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The URL (or, with --key, a SURT key as the rules write it).
    pub url: String,
    /// An `.aclj` file, or a folder of them (repeatable).
    #[arg(long, value_name = "FILE", required = true)]
    pub acl: Vec<PathBuf>,
    /// The user asking (as the configured user header would name it).
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// URL is a SURT key, not a URL.
    #[arg(long)]
    pub key: bool,
    /// One JSON object: access, key, and the rule (file, line, key, user) or null.
    #[arg(long)]
    pub json: bool,
}

pub fn run(c: Command) -> anyhow::Result<u8> {
    let Command::Check(a) = c;
    let acl = match Acl::load(&a.acl) {
        Ok(acl) => acl,
        Err(e) => {
            eprintln!("tidemark acl: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let key = if a.key {
        a.url.clone()
    } else {
        if let Err(e) = tidemark::url::check(&a.url) {
            eprintln!("tidemark acl: {}: {e}", a.url);
            return Ok(EXIT_USAGE);
        }
        tidemark::url::surt(&a.url)
    };
    let rule = acl.rule_for(&key, a.user.as_deref());
    let access = rule.map_or("allow", |r| r.access.name());
    if a.json {
        let rule = rule.map(|r| {
            json!({"key": r.key, "access": r.access.name(), "user": r.user, "url": r.url,
                   "file": r.file.display().to_string(), "line": r.line})
        });
        println!(
            "{}",
            json!({"url": a.url, "key": key, "user": a.user, "access": access, "rule": rule})
        );
    } else {
        match rule {
            Some(r) => println!(
                "{access}: {} {} at {}:{}{}",
                key,
                if r.key.ends_with(tidemark::access::EXACT) {
                    format!("matches the exact rule {}", r.key)
                } else {
                    format!("is under the rule {}", r.key)
                },
                r.file.display(),
                r.line,
                r.user
                    .as_ref()
                    .map(|u| format!(" (user {u})"))
                    .unwrap_or_default()
            ),
            None => println!(
                "allow: none of the {} rules matches {key} (the default)",
                acl.len()
            ),
        }
    }
    Ok(EXIT_OK)
}
