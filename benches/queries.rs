//! Query latency (criterion): `whereis`, `history` and `similar` as library calls on an
//! existing index, cycling through URLs spread over it.
//!
//! ```text
//! tidemark-bench --ingest --dir bench-100k          # 4 sweeps x 100k pages: 427k captures
//! TIDEMARK_BENCH_DB=bench-100k/bench.db cargo bench --bench queries
//! ```
//! (`tidemark-bench --queries --db DIR` prints the median and p99 over the same calls.)

use criterion::{criterion_group, criterion_main, Criterion};
use tidemark::config::Config;
use tidemark::index::Index;
use tidemark::query::history::history;
use tidemark::query::similar::{similar, Input, SimilarOptions};
use tidemark::query::whereis::{whereis, WhereisOptions};
use tidemark::query::{sample_urls, Searcher};

fn queries(c: &mut Criterion) {
    let Some(db) = std::env::var_os("TIDEMARK_BENCH_DB") else {
        eprintln!("SKIPPED: set TIDEMARK_BENCH_DB to an index (see benches/queries.rs)");
        return;
    };
    let config = Config::default();
    let index = Index::open_read_only(std::path::Path::new(&db), &config).expect("open the index");
    let s = Searcher::everything(&index).expect("searcher");
    let urls = sample_urls(&index, 1000).expect("sample URLs");
    let wopts = WhereisOptions {
        move_floor: config.query.move_floor,
        links: true,
    };
    let sopts = SimilarOptions {
        threshold: 0.5,
        containment: false,
        limit: 20,
    };
    let mut i = 0usize;
    let mut next = || {
        i = (i + 1) % urls.len();
        &urls[i]
    };
    c.bench_function("whereis", |b| {
        b.iter(|| whereis(&s, next(), wopts).expect("whereis"))
    });
    c.bench_function("history", |b| {
        b.iter(|| history(&s, next(), wopts, None).expect("history"))
    });
    let with_content: Vec<&String> = urls
        .iter()
        .filter(|u| {
            s.captures(u)
                .map(|c| c.iter().any(|c| c.info.doc.is_some()))
                .unwrap_or(false)
        })
        .collect();
    let mut j = 0usize;
    c.bench_function("similar", |b| {
        b.iter(|| {
            j = (j + 1) % with_content.len();
            similar(&s, &Input::Url(with_content[j].clone()), &sopts).expect("similar")
        })
    });
}

criterion_group!(benches, queries);
criterion_main!(benches);
