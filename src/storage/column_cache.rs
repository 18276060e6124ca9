//! The decoded-column cache: Arrow arrays of whole SST row-group columns,
//! kept after a read so hot data is not decompressed and decoded from
//! Parquet again, under a byte budget (`[storage] decoded_cache_bytes_max`;
//! 0 turns it off), least recently used out first.
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
        st.tick += 1;
        let tick = st.tick;
        if let Some(old) = st.map.insert(key.clone(), Entry { array, bytes, tick }) {
            st.lru.remove(&old.tick);
            st.bytes -= old.bytes;
        }
        st.lru.insert(tick, key);
        st.bytes += bytes;
        while st.bytes > self.budget {
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
        }
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
}
