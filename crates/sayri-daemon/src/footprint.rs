//! Keeping the daemon small between requests (glibc's allocator; nothing happens elsewhere).
//!
//! * At start, [`limit_malloc_arenas`]: malloc keeps at most two arenas. By default every
//!   thread that allocates may get an arena of its own, and each keeps the memory freed in it.
//! * After every turn, [`release_freed_memory`]: memory freed during the turn (request bodies,
//!   command output, the model's stream) goes back to the kernel instead of staying resident.

/// Caps glibc's malloc arenas at two. Call before the async runtime starts its threads.
pub fn limit_malloc_arenas() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes allocator parameters; called before other threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Returns freed heap memory to the kernel (`malloc_trim(0)`). Takes well under a millisecond
/// for the daemon's heap; call it when a turn has ended.
pub fn release_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim walks the allocator's own free lists; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}
