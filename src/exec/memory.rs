//! The per-query memory budget (`query_memory_bytes_max`).
//!
//! Every large allocation of a query is charged here *before* it happens:
//! buffered inputs (sorts, windows, set operations, hash-join build sides,
//! collected results), hash-aggregation groups and states, and function
//! outputs (`repeat`, `lpad`, `||`, `string_agg`). Charges that back state
//! kept until the query ends (`charge`) stay charged; the budget is one per
//! statement and goes away with it, which releases everything. Transient
//! allocations (`check_alloc`) are only checked against what is left.
//!
//! Exceeding the budget answers 53200 (`out of memory`); a single value past
//! PostgreSQL's 1 GB limit answers 54000 (`requested length too large`), as
//! PostgreSQL does. Imports only `error` (and arrow).

use std::sync::atomic::{AtomicUsize, Ordering};

use arrow::array::{Array, RecordBatch};

use crate::error::{ErrorKind, Result, WeirError};

/// The largest text value, in bytes: PostgreSQL's `MaxAllocSize`
/// (1 GB - 1) less the 4-byte varlena header.
pub const MAX_VALUE_BYTES: usize = (1 << 30) - 1 - 4;

/// `query_memory_bytes_max`'s default: 1 GiB.
pub const QUERY_MEMORY_BYTES_DEFAULT: usize = 1 << 30;

/// A query's memory budget: a limit and what its operators hold.
#[derive(Debug)]
pub struct MemoryBudget {
    limit_bytes: usize,
    used_bytes: AtomicUsize,
}

impl MemoryBudget {
    pub fn new(limit_bytes: usize) -> MemoryBudget {
        MemoryBudget { limit_bytes, used_bytes: AtomicUsize::new(0) }
    }

    /// The budget's size in bytes.
    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }

    /// Bytes charged so far.
    pub fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Relaxed)
    }

    /// Charge `bytes` that stay allocated until the query ends; 53200 when
    /// they do not fit (nothing is charged then).
    pub fn charge(&self, bytes: usize, what: &str) -> Result<()> {
        let mut used = self.used_bytes.load(Ordering::Relaxed);
        loop {
            let next = used.checked_add(bytes).filter(|n| *n <= self.limit_bytes).ok_or_else(|| self.exhausted(bytes, used, what))?;
            match self.used_bytes.compare_exchange_weak(used, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Ok(()),
                Err(now) => used = now,
            }
        }
    }

    /// Check that a transient allocation of `bytes` fits in what is left,
    /// without keeping it charged.
    pub fn check_alloc(&self, bytes: usize, what: &str) -> Result<()> {
        let used = self.used_bytes();
        if used.checked_add(bytes).is_none_or(|n| n > self.limit_bytes) {
            return Err(self.exhausted(bytes, used, what));
        }
        Ok(())
    }

    /// Give back bytes charged earlier (state freed before the query ends).
    pub fn release(&self, bytes: usize) {
        let _ = self.used_bytes.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| Some(u.saturating_sub(bytes)));
    }

    fn exhausted(&self, bytes: usize, used: usize, what: &str) -> WeirError {
        WeirError::new(ErrorKind::OutOfMemory, "out of memory")
            .with_detail(format!(
                "Failed on request of size {bytes} for {what}: the query holds {used} of its {} bytes (query_memory_bytes_max).",
                self.limit_bytes
            ))
            .with_hint("Raise query_memory_bytes_max in the [execution] section of weir.toml, or make the query hold less.")
    }
}

/// 54000 when one value of `bytes` would exceed PostgreSQL's 1 GB limit.
pub fn check_value_bytes(bytes: usize) -> Result<()> {
    if bytes > MAX_VALUE_BYTES {
        return Err(WeirError::new(ErrorKind::ProgramLimitExceeded, "requested length too large"));
    }
    Ok(())
}

/// `a * b` bytes of one value (a count times a unit), checked for 54000.
pub fn value_bytes(count: i64, unit: usize) -> Result<usize> {
    let n = usize::try_from(count.max(0)).unwrap_or(usize::MAX).checked_mul(unit).unwrap_or(usize::MAX);
    check_value_bytes(n)?;
    Ok(n)
}

/// Bytes of an array's visible rows (a slice counts its rows, not the
/// buffers it shares with the array it was cut from).
pub fn array_bytes(a: &dyn Array) -> usize {
    a.to_data().get_slice_memory_size().unwrap_or_else(|_| a.get_array_memory_size())
}

/// Bytes of a batch's visible rows.
pub fn batch_bytes(b: &RecordBatch) -> usize {
    b.columns().iter().map(|c| array_bytes(c.as_ref())).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_up_to_the_limit_then_53200() {
        let b = MemoryBudget::new(100);
        b.charge(60, "a sort").unwrap();
        b.check_alloc(40, "repeat()").unwrap();
        let e = b.charge(41, "a sort").unwrap_err();
        assert_eq!(e.sqlstate(), "53200");
        assert_eq!(e.message, "out of memory");
        assert!(e.detail.unwrap().contains("of its 100 bytes"));
        assert_eq!(b.used_bytes(), 60, "a refused charge takes nothing");
        b.release(60);
        b.charge(100, "a sort").unwrap();
        assert_eq!(b.check_alloc(usize::MAX, "x").unwrap_err().sqlstate(), "53200");
    }

    #[test]
    fn one_value_past_1gb_is_54000() {
        assert!(check_value_bytes(MAX_VALUE_BYTES).is_ok());
        assert_eq!(check_value_bytes(MAX_VALUE_BYTES + 1).unwrap_err().sqlstate(), "54000");
        assert_eq!(value_bytes(10_000_000_000_000, 1).unwrap_err().message, "requested length too large");
        assert_eq!(value_bytes(i64::MAX, 4).unwrap_err().sqlstate(), "54000");
        assert_eq!(value_bytes(-5, 3).unwrap(), 0);
    }
}
