//! The memory cap of one plugin instance. wasmtime's stock `StoreLimits` caps each linear
//! memory and each table on its own, so a component of several core modules (each with its
//! memory and tables) could hold several times its `memoryMiB`. This limiter counts every
//! memory and every table of the store against one budget: what the instance holds in all.

use wasmtime::ResourceLimiter;

/// What one table element is counted as: a pointer-sized reference.
pub const TABLE_ELEMENT_BYTES: usize = std::mem::size_of::<usize>();

/// The instance would grow past its cap; the growth traps and the call is a memory fault.
#[derive(Debug, thiserror::Error)]
#[error("growing a {what} would take the instance to {wanted} bytes, past its cap of {cap} bytes")]
pub struct OverCap {
    /// "memory" or "table".
    pub what: &'static str,
    /// What the instance would hold after the growth.
    pub wanted: usize,
    /// The cap.
    pub cap: usize,
}

/// Grows a store's memories and tables within one byte budget.
#[derive(Debug)]
pub struct InstanceLimiter {
    cap: usize,
    used: usize,
}

impl InstanceLimiter {
    /// A budget of `cap` bytes for all the store's memories and tables together.
    pub fn new(cap: usize) -> Self {
        Self { cap, used: 0 }
    }

    fn grow(&mut self, what: &'static str, more: usize) -> wasmtime::Result<bool> {
        let wanted = self.used.saturating_add(more);
        if wanted > self.cap {
            return Err(OverCap {
                what,
                wanted,
                cap: self.cap,
            }
            .into());
        }
        self.used = wanted;
        Ok(true)
    }

    /// Bytes granted so far (what the tests check).
    #[cfg(test)]
    pub fn used(&self) -> usize {
        self.used
    }
}

impl ResourceLimiter for InstanceLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow("memory", desired.saturating_sub(current))
    }

    // A growth that failed after it was granted stays counted; the failure traps, and the
    // trapped instance (with its count) is thrown away.
    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let more = desired.saturating_sub(current);
        self.grow("table", more.saturating_mul(TABLE_ELEMENT_BYTES))
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn every_memory_and_table_counts_against_one_cap() {
        let mut limiter = InstanceLimiter::new(16 * MIB);
        // Two memories of 6 MiB each fit; a third does not, though each alone would.
        assert!(limiter.memory_growing(0, 6 * MIB, None).unwrap());
        assert!(limiter.memory_growing(0, 6 * MIB, None).unwrap());
        let over = limiter.memory_growing(0, 6 * MIB, None).unwrap_err();
        assert!(over.downcast_ref::<OverCap>().is_some(), "{over:#}");
        // Growing one of them counts only the growth.
        assert!(limiter.memory_growing(6 * MIB, 9 * MIB, None).unwrap());
        assert_eq!(limiter.used(), 15 * MIB);
        // Tables take from the same budget.
        let elements = MIB / TABLE_ELEMENT_BYTES;
        assert!(limiter.table_growing(0, elements / 2, None).is_ok());
        assert!(limiter
            .table_growing(elements / 2, 2 * elements, None)
            .is_err());
        assert_eq!(limiter.used(), 15 * MIB + MIB / 2);
    }

    #[test]
    fn absurd_sizes_saturate_instead_of_overflowing() {
        let mut limiter = InstanceLimiter::new(MIB);
        assert!(limiter.memory_growing(0, usize::MAX, None).is_err());
        assert!(limiter.table_growing(0, usize::MAX, None).is_err());
        assert!(limiter.memory_growing(usize::MAX, 0, None).unwrap());
    }
}
