//! Measuring memory: a counting global allocator (live heap bytes) and the process's resident
//! set size.
//!
//! A bench binary that measures memory installs the counter as its allocator:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: wink_benches::mem::CountingAlloc = wink_benches::mem::CountingAlloc::new();
//! ```
//!
//! [`CountingAlloc::live`] is then the number of heap bytes allocated and not yet freed, by
//! every thread (requested sizes, not the allocator's rounding or fragmentation). The delta
//! across a phase is what the phase kept; [`rss`] (from `/proc/self/statm`) is the
//! operating system's view, which also counts code, stacks, the allocator's slack and
//! memory not returned yet.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

/// The system allocator, counting live bytes and allocations.
#[derive(Debug)]
pub struct CountingAlloc {
    live: AtomicIsize,
    allocations: AtomicUsize,
}

impl CountingAlloc {
    /// A counter at zero.
    pub const fn new() -> Self {
        Self { live: AtomicIsize::new(0), allocations: AtomicUsize::new(0) }
    }

    /// Heap bytes allocated and not freed.
    pub fn live(&self) -> usize {
        usize::try_from(self.live.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// Allocations made so far.
    pub fn allocations(&self) -> usize {
        self.allocations.load(Ordering::Relaxed)
    }

    /// Counts `ptr`, an allocation of `size` bytes, unless it failed.
    fn counted(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        if !ptr.is_null() {
            self.live.fetch_add(size as isize, Ordering::Relaxed);
            self.allocations.fetch_add(1, Ordering::Relaxed);
        }
        ptr
    }
}

impl Default for CountingAlloc {
    fn default() -> Self {
        Self::new()
    }
}

#[allow(unsafe_code, reason = "a GlobalAlloc forwards to the system allocator and counts")]
// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds exactly as it does for `System`; the counters are plain atomics.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl).
        self.counted(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl).
        self.counted(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged (see the impl).
        unsafe { System.dealloc(ptr, layout) };
        self.live.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl).
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            self.live.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        }
        new
    }
}

/// The process's resident set size in bytes (`/proc/self/statm`), or 0 where unavailable.
pub fn rss() -> usize {
    statm_bytes(1)
}

/// The part of the resident set that is file-backed or shared memory (`/proc/self/statm`'s
/// `shared`: a compiled component's code, and linear memory pages still mapped from a
/// module's initial image), in bytes; the rest is the process's own anonymous memory.
pub fn rss_shared() -> usize {
    statm_bytes(2)
}

/// Field `index` of `/proc/self/statm`, in bytes (0 where unavailable).
fn statm_bytes(index: usize) -> usize {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else { return 0 };
    let pages: usize = statm.split_whitespace().nth(index).and_then(|p| p.parse().ok()).unwrap_or(0);
    // statm counts pages; the machines these benchmarks run on have 4 KiB pages.
    pages * 4096
}

/// Formats a byte count as `12.3 MiB`, `4.1 KiB` or `512 B`.
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{value:.0} {}", UNITS[0]) } else { format!("{value:.1} {}", UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_bytes() {
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(4300.0), "4.2 KiB");
        assert_eq!(human_bytes(3.5 * 1024.0 * 1024.0), "3.5 MiB");
    }

    #[test]
    fn rss_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(rss() > 0);
        }
    }
}
