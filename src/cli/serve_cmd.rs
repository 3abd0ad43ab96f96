//! `tidemark serve`: the index over HTTP until SIGINT or SIGTERM.

use std::io::Write;
use std::path::PathBuf;

use tidemark::serve::{serve, ServeOptions};

use super::{Globals, EXIT_OK, EXIT_USAGE};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on (port 0: any free port; the address bound is printed).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Collection name of the CDX endpoint (/{collection}?url=…) and of the memento URLs
    /// (/{collection}/{timestamp}id_/{url}).
    #[arg(long, value_name = "NAME")]
    pub collection: Option<String>,
    /// A folder where WARC files are found by name (repeatable), when the path a file
    /// was ingested from no longer holds one.
    #[arg(long, value_name = "DIR")]
    pub archive: Vec<PathBuf>,
    /// Access rules: a pywb `.aclj` file or a folder of them (repeatable; added to
    /// serve.acl_paths). Reloaded when they change; a bad line is an error naming it.
    #[arg(long, value_name = "FILE")]
    pub acl: Vec<PathBuf>,
    /// Follow a primary (its address, e.g. http://10.0.0.5:8080): copy each snapshot it
    /// publishes into --db (a folder of its own, not an index), check every file, and
    /// serve it under this server's access rules. Needs the primary's
    /// serve.replication_token (or TIDEMARK_REPLICATION_TOKEN).
    #[arg(long, value_name = "URL")]
    pub follow: Option<String>,
    /// Print the address as one JSON line, {"listen": "127.0.0.1:PORT"}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(g: &Globals, a: Args) -> anyhow::Result<u8> {
    crate::purge_freed_pages_soon();
    tidemark::serve::few_arenas();
    let mut config = g.config.clone();
    if let Some(l) = a.listen {
        config.serve.listen = l;
    }
    if let Some(c) = a.collection {
        if c.is_empty()
            || !c
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            eprintln!(
                "tidemark serve: --collection must be letters, digits, '-' or '_', not {c:?}"
            );
            return Ok(EXIT_USAGE);
        }
        config.serve.collection = c;
    }
    for d in &a.archive {
        if !d.is_dir() {
            eprintln!("tidemark serve: --archive {}: no such folder", d.display());
            return Ok(EXIT_USAGE);
        }
    }
    if let Some(url) = a.follow {
        config.serve.follow = url;
    }
    if let Ok(token) = std::env::var("TIDEMARK_REPLICATION_TOKEN") {
        config.serve.replication_token = token;
    }
    let follow = &config.serve.follow;
    if !follow.is_empty() {
        let authority = follow
            .strip_prefix("http://")
            .map(|r| r.split('/').next().unwrap_or(""));
        if authority.is_some_and(|a| a.contains('@')) {
            eprintln!(
                "tidemark serve: --follow takes no user:password@ (it would be logged): the follower presents serve.replication_token"
            );
            return Ok(EXIT_USAGE);
        }
        if !(follow.starts_with("http://") && follow.len() > 7) {
            eprintln!(
                "tidemark serve: --follow must be the primary's http:// address, like http://10.0.0.5:8080, not {follow:?}"
            );
            return Ok(EXIT_USAGE);
        }
        if config.serve.replication_token.is_empty() {
            eprintln!(
                "tidemark serve: --follow needs the primary's serve.replication_token (or TIDEMARK_REPLICATION_TOKEN)"
            );
            return Ok(EXIT_USAGE);
        }
    }
    config.serve.archive_paths.splice(0..0, a.archive);
    config.serve.acl_paths.extend(a.acl);
    if let Err(e) = tidemark::access::Acl::load(&config.serve.acl_paths) {
        eprintln!("tidemark serve: access rules: {e}");
        return Ok(EXIT_USAGE);
    }
    let opts = ServeOptions {
        db: config.index.path.clone(),
        config,
    };
    let json = a.json;
    let collection = opts.config.serve.collection.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tidemark-serve")
        // Blocking threads (a request's index reads, a streamed answer's making) end
        // after a second idle, not tokio's ten: each keeps a heap of the allocator's,
        // and a crowd of slow clients raised a hundred of them (budgets: 2.65-3.09 GB
        // at most in four runs before, 2.55-2.56 GB in two after; 2026-11-29).
        .thread_keep_alive(std::time::Duration::from_secs(1))
        .build()?;
    runtime.block_on(serve(opts, move |addr| {
        let mut out = std::io::stdout().lock();
        if json {
            let _ = writeln!(out, "{}", serde_json::json!({ "listen": addr.to_string() }));
        } else {
            let _ = writeln!(
                out,
                "tidemark serve: listening on http://{addr}/ (CDX at /{collection}?url=…, lost and found at /)"
            );
        }
        let _ = out.flush();
    }))?;
    Ok(EXIT_OK)
}
