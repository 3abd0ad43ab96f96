//! The `tidemark` command line: a thin layer over the library.

mod cli;

use std::process::ExitCode;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

// mimalloc's own option setter (exported by the library the `mimalloc` crate links).
extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (v2 and v3 alike).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() -> ExitCode {
    // mimalloc hands pages that fall free back to the OS after 10 ms. An ingest frees a
    // batch of records at once and fills the next batch moments later, so the kernel
    // zeroed the same (huge) pages again and again: 7% of a first sweep's CPU
    // (`perf`: clear_page_erms under mi_page_free_list_extend). At one second it still
    // zeroed ~2 GiB in a redesign sweep (6% of its CPU, `MIMALLOC_SHOW_STATS`: purged
    // 2.0 GiB); at ten seconds the faults fall 253k -> 157k and the sweep takes 1.4 CPU-s
    // less (rd100k, 3 rounds), peak RSS 70 MB more. An idle `serve` still gives back.
    // SAFETY: sets one integer option; mimalloc reads options at any time, thread-safely.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 10_000) };
    cli::run()
}

/// For `serve`: freed pages back to the OS after mimalloc's own 10 ms. A server's
/// memory is held by what it keeps, not by batches filled again at once, and a report's
/// build frees its maps seconds before the next build: with ten seconds, the budgets
/// run (`tools/budgets.py`, a million captures) peaked at 3,062–3,132 MB, with 10 ms at
/// 2,610 MB (2026-11-29).
pub(crate) fn purge_freed_pages_soon() {
    // SAFETY: as in `main`.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
}
