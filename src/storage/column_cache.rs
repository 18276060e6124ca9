//! The decoded-column cache: Arrow arrays of whole SST row-group columns,
//! kept after a read so hot data is not decompressed and decoded from
//! Parquet again, under a byte budget (`[storage] decoded_cache_bytes_max`;
//! 0 turns it off), least recently used out first. The same budget covers
//! the regions' last-row caches: they hold a [`Pin`] of their bytes, and
//! decoded columns are evicted to make room for it (a last-row cache that
//! does not fit beside the other pins is not kept).
//!
//! Keys name an SST by path and CRC (paths are not reused while the process
//! runs; the CRC guards anyway), a row group and a full-schema column. SSTs
//! are immutable, so an entry never goes stale; entries of deleted files
//! age out. Owns no file access: `sst.rs` fills and reads it. Imports only
//! arrow and parking_lot.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef};
use parking_lot::Mutex;

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ColumnKey {
    pub path: Arc<str>,
    pub crc: u32,
    pub row_group: usize,
    pub column: usize,
}

struct Entry {
    array: ArrayRef,
    bytes: usize,
    tick: u64,
}

#[derive(Default)]
struct State {
    map: HashMap<ColumnKey, Entry>,
    /// Recency order: tick → key.
    lru: BTreeMap<u64, ColumnKey>,
    tick: u64,
    bytes: usize,
    /// Bytes of pins (last-row caches), outside the LRU.
    pinned: usize,
}

/// Engine-wide counters of the cache.
#[derive(Debug, Clone, Copy, Default)]
pub struct ColumnCacheStats {
    pub bytes: u64,
    pub budget: u64,
    pub entries: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    /// Bytes pinned by last-row caches (within `budget` with `bytes`).
    pub pinned: u64,
}

pub struct ColumnCache {
    budget: usize,
    state: Mutex<State>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl ColumnCache {
    pub fn new(budget: usize) -> ColumnCache {
        ColumnCache {
            budget,
            state: Mutex::new(State::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    pub fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// Whether a read of about `bytes` decoded bytes may fill the cache: at
    /// most half the budget, so one large scan (a whole-table result
    /// streamed to a client) neither flushes the hot columns nor holds
    /// memory beyond its batches; it reads past the cache, taking the
    /// entries it finds.
    pub fn admits(&self, bytes: usize) -> bool {
        self.enabled() && bytes <= self.budget / 2
    }

    /// The arrays of every column in `columns` of one row group, or None
    /// (counted as a miss) unless all are cached.
    pub fn get_all(&self, base: &ColumnKey, columns: &[usize]) -> Option<Vec<ArrayRef>> {
        let mut st = self.state.lock();
        let mut out = Vec::with_capacity(columns.len());
        for &c in columns {
            let k = ColumnKey { column: c, ..base.clone() };
            match st.map.get(&k) {
                Some(e) => out.push(e.array.clone()),
                None => {
                    self.misses.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            }
        }
        // Touch them.
        for &c in columns {
            st.tick += 1;
            let tick = st.tick;
            let k = ColumnKey { column: c, ..base.clone() };
            let e = st.map.get_mut(&k).expect("present");
            let old = std::mem::replace(&mut e.tick, tick);
            st.lru.remove(&old);
            st.lru.insert(tick, k);
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(out)
    }

    /// Keep `array` under `key`, evicting the least recently used entries
    /// beyond the budget (an array larger than the budget is not kept).
    pub fn insert(&self, key: ColumnKey, array: ArrayRef) {
        let bytes = array.get_array_memory_size() + 64;
        if bytes > self.budget {
            return;
        }
        let mut st = self.state.lock();
        if bytes > self.budget.saturating_sub(st.pinned) {
            return;
        }
        st.tick += 1;
        let tick = st.tick;
        if let Some(old) = st.map.insert(key.clone(), Entry { array, bytes, tick }) {
            st.lru.remove(&old.tick);
            st.bytes -= old.bytes;
        }
        st.lru.insert(tick, key);
        st.bytes += bytes;
        self.evict(&mut st);
    }

    /// Evict least recently used columns until columns and pins fit.
    fn evict(&self, st: &mut State) {
        while st.bytes + st.pinned > self.budget {
            let Some((_, k)) = st.lru.pop_first() else { break };
            if let Some(e) = st.map.remove(&k) {
                st.bytes -= e.bytes;
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn stats(&self) -> ColumnCacheStats {
        let st = self.state.lock();
        ColumnCacheStats {
            bytes: st.bytes as u64,
            budget: self.budget as u64,
            entries: st.map.len() as u64,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            pinned: st.pinned as u64,
        }
    }

    /// Pin `bytes` of another cache under the budget, evicting decoded
    /// columns to make room; None when they do not fit beside the other
    /// pins (the caller then does not keep what it wanted to cache).
    pub fn pin(self: &Arc<Self>, bytes: usize) -> Option<Pin> {
        let mut st = self.state.lock();
        if st.pinned + bytes > self.budget {
            return None;
        }
        st.pinned += bytes;
        self.evict(&mut st);
        Some(Pin { cache: self.clone(), bytes })
    }
}

/// Bytes of a cache held under the decoded-column budget; released when
/// dropped.
pub struct Pin {
    cache: Arc<ColumnCache>,
    bytes: usize,
}

impl Drop for Pin {
    fn drop(&mut self) {
        self.cache.state.lock().pinned -= self.bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;

    fn key(rg: usize, column: usize) -> ColumnKey {
        ColumnKey { path: "f".into(), crc: 1, row_group: rg, column }
    }

    #[test]
    fn least_recently_used_goes_first_within_the_budget() {
        let a = || Arc::new(Int64Array::from_iter_values(0..1000)) as ArrayRef;
        let one = a().get_array_memory_size() + 64;
        let c = ColumnCache::new(one * 2);
        c.insert(key(0, 0), a());
        c.insert(key(1, 0), a());
        assert!(c.get_all(&key(0, 0), &[0]).is_some());
        c.insert(key(2, 0), a());
        // Row group 1 was the least recently used.
        assert!(c.get_all(&key(1, 0), &[0]).is_none());
        assert!(c.get_all(&key(0, 0), &[0]).is_some());
        assert!(c.get_all(&key(2, 0), &[0]).is_some());
        let s = c.stats();
        assert_eq!((s.entries, s.evictions, s.hits, s.misses), (2, 1, 3, 1));
        assert!(s.bytes <= s.budget);
        // All columns or nothing.
        assert!(c.get_all(&key(0, 0), &[0, 1]).is_none());
        // Off.
        let off = ColumnCache::new(0);
        off.insert(key(0, 0), a());
        assert_eq!(off.stats().entries, 0);
    }

    #[test]
    fn pins_share_the_budget_with_columns() {
        let a = || Arc::new(Int64Array::from_iter_values(0..1000)) as ArrayRef;
        let one = a().get_array_memory_size() + 64;
        let c = Arc::new(ColumnCache::new(one * 3));
        c.insert(key(0, 0), a());
        c.insert(key(1, 0), a());
        c.insert(key(2, 0), a());
        assert_eq!(c.stats().entries, 3);
        // A pin evicts the least recently used columns to fit.
        let p = c.pin(one + 1).expect("fits");
        let s = c.stats();
        assert_eq!((s.entries, s.pinned), (1, (one + 1) as u64));
        assert!(s.bytes + s.pinned <= s.budget);
        assert!(c.get_all(&key(2, 0), &[0]).is_some());
        // Pins never go over the budget; columns that do not fit beside
        // the pins are not kept.
        assert!(c.pin(one * 2).is_none());
        let q = c.pin(one).expect("fits");
        assert_eq!(c.stats().entries, 0);
        c.insert(key(3, 0), a());
        assert_eq!(c.stats().entries, 0);
        // Dropped pins give the room back.
        drop(p);
        drop(q);
        assert_eq!(c.stats().pinned, 0);
        c.insert(key(3, 0), a());
        assert_eq!(c.stats().entries, 1);
        // Off: nothing is pinned.
        assert!(Arc::new(ColumnCache::new(0)).pin(1).is_none());
    }
}
