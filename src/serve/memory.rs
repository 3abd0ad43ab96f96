//! The server's memory as the system sees it. The Rust side allocates with mimalloc (the
//! binary's allocator); RocksDB's C++ allocates with glibc's malloc, which gives each
//! thread that allocates at once an arena of its own (up to eight a core) and reuses
//! what one thread freed only in that thread's arena. Under a crowd of slow clients the
//! server runs a hundred threads or more, and freed memory piled up in their arenas:
//! over one run of `tools/budgets.py` on a million captures its resident size grew
//! from 2.4 GB to 6.9 GB while the report builds ran, after the crowd had gone; with
//! two arenas it stayed at 3.0–3.4 GB, and at 2.6 GB once the binary's mimalloc also
//! handed freed pages back within 10 ms (`tidemark serve` sets that) (2026-11-29).

/// Caps glibc's arenas at two (the server's threads share them): `tidemark serve` calls
/// it first, before any thread of its own or RocksDB's allocates.
pub fn few_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: sets one integer parameter of glibc's allocator; no memory is touched.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Hands the free memory of glibc's arenas back to the system: after a report's build
/// (one pass over the index), whose iterators and blocks are freed at once.
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: glibc walks its own free lists under its locks; nothing of ours is read.
    unsafe {
        libc::malloc_trim(0);
    }
}
