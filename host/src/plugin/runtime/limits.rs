//! The store's resource limiter: the manifest's memory cap, enforced as a trap.
//!
//! wasmtime's own `StoreLimits` with `trap_on_grow_failure(true)` reports a refused growth
//! as an untyped message, which could only be recognized by matching its text (Extism's
//! "oom" pitfall). [`PluginLimiter`] does the same job but fails with the typed
//! [`MemoryCapExceeded`], so the instance layer tells an out-of-memory trap from any other by
//! downcasting. Every refused growth traps, whatever the guest's language would otherwise do
//! with a failed `memory.grow` (C gets NULL from malloc and may limp on; a trap is uniform).
//!
//! The cap is on the **sum** of the store's linear memories: a component holds one core
//! instance per core module, each possibly with its own memory, and a cap per memory would
//! let a component of several modules take a multiple of its limit (and of what the host's
//! memory budget reserved for it).

use wasmtime::ResourceLimiter;

pub(crate) use crate::plugin::contract::outcome::MemoryCapExceeded;

/// The most table elements one table may grow to.
pub(crate) const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// A guest tried to grow a table past [`MAX_TABLE_ELEMENTS`] or its declared maximum.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("table growth to {desired} elements exceeds the limit of {limit}")]
pub(crate) struct TableCapExceeded {
    /// The number of elements asked for.
    pub desired: usize,
    /// The limit in force.
    pub limit: usize,
}

/// Caps the total of a store's linear memories at the manifest's `limits.memory`; every
/// refusal traps.
#[derive(Clone, Debug)]
pub struct PluginLimiter {
    memory_limit: usize,
    /// The sum of the store's linear memory sizes.
    memory: usize,
    /// The growth last allowed, taken back if the host then failed to provide it.
    last_growth: usize,
    peak_memory: usize,
}

impl PluginLimiter {
    /// A limiter allowing the store's linear memories at most `memory_limit` bytes together.
    pub fn new(memory_limit: u64) -> Self {
        Self {
            memory_limit: usize::try_from(memory_limit).unwrap_or(usize::MAX),
            memory: 0,
            last_growth: 0,
            peak_memory: 0,
        }
    }

    /// The largest total size the store's memories were allowed to grow to, in bytes.
    pub fn peak_memory(&self) -> usize {
        self.peak_memory
    }
}

impl ResourceLimiter for PluginLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        let total = self.memory.saturating_add(growth);
        if maximum.is_some_and(|m| desired > m) {
            let limit = maximum.unwrap_or(desired).min(self.memory_limit);
            return Err(MemoryCapExceeded { desired, limit }.into());
        }
        if total > self.memory_limit {
            return Err(MemoryCapExceeded { desired: total, limit: self.memory_limit }.into());
        }
        self.memory = total;
        self.last_growth = growth;
        self.peak_memory = self.peak_memory.max(total);
        Ok(true)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.memory = self.memory.saturating_sub(std::mem::take(&mut self.last_growth));
        // The host could not provide memory below the cap (e.g. the pooling allocator's
        // slot is smaller): still an out-of-memory condition for the guest.
        Err(error.context(MemoryCapExceeded { desired: 0, limit: self.memory_limit }))
    }

    fn table_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let limit = maximum.map_or(MAX_TABLE_ELEMENTS, |m| m.min(MAX_TABLE_ELEMENTS));
        if desired > limit {
            return Err(TableCapExceeded { desired, limit }.into());
        }
        Ok(true)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_past_the_cap_fails_with_a_typed_error() {
        let mut limiter = PluginLimiter::new(1 << 20);
        assert!(limiter.memory_growing(0, 65536, None).unwrap());
        assert_eq!(limiter.peak_memory(), 65536);
        let err = limiter.memory_growing(65536, 2 << 20, None).unwrap_err();
        assert_eq!(
            err.downcast_ref::<MemoryCapExceeded>(),
            Some(&MemoryCapExceeded { desired: 2 << 20, limit: 1 << 20 })
        );
        // A declared maximum below the cap is the effective limit.
        assert!(limiter.memory_growing(0, 3 * 65536, Some(2 * 65536)).unwrap_err().is::<MemoryCapExceeded>());
        let failed = limiter.memory_grow_failed(wasmtime::Error::msg("mmap failed")).unwrap_err();
        assert!(failed.is::<MemoryCapExceeded>());
        assert!(limiter.table_growing(0, MAX_TABLE_ELEMENTS + 1, None).unwrap_err().is::<TableCapExceeded>());
    }

    #[test]
    fn the_cap_is_on_the_sum_of_the_stores_memories() {
        let mut limiter = PluginLimiter::new(1 << 20);
        // Two modules' memories of 512 KiB each fit; one more page does not.
        assert!(limiter.memory_growing(0, 512 << 10, None).unwrap());
        assert!(limiter.memory_growing(0, 512 << 10, None).unwrap());
        assert_eq!(limiter.peak_memory(), 1 << 20);
        let err = limiter.memory_growing(0, 65536, None).unwrap_err();
        assert_eq!(
            err.downcast_ref::<MemoryCapExceeded>(),
            Some(&MemoryCapExceeded { desired: (1 << 20) + 65536, limit: 1 << 20 })
        );
        // A growth the host failed to provide is taken back.
        let mut limiter = PluginLimiter::new(1 << 20);
        assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
        assert!(limiter.memory_grow_failed(wasmtime::Error::msg("mmap failed")).is_err());
        assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
    }
}
