//! State tables (seed 003, R-3.1 – ): the one gateway from streaming
//! operators to persistent state.
//!
//! A [`StateTable`] is a relational table of [`Row`]s keyed by some of its
//! columns (its primary key). Writes of the current epoch go to a mem table;
//! reads merge the mem table and the committed store, the mem table winning.
//! [`StateStore::commit`] writes the mem tables of every state table of a
//! dataflow, plus the dataflow's own records (source position, sink
//! outbox), as one atomic batch tagged with the epoch, and checks that the
//! epoch moves forward.
//!
//! Keys are `namespace | table id (u32 BE) | pk`, where the pk is encoded
//! order-preserving ([`encode_key`]): a range scan of the store follows the
//! SQL order of the key columns (NULL last). Rows are encoded with the same
//! self-describing encoding.
//!
//! The store sits behind [`StateKv`] (sled today, shared storage later), in
//! the style of storage's `MetaKv`. In front of it sits a [`StateCache`]
//! with a byte budget: committed rows of whole *groups* (a table's rows
//! sharing its first key columns: a join key's arrangement, an aggregation
//! group's value row), so an operator's repeated reads of a hot key cost a
//! hash lookup, not a store read. The cache holds committed state only (the
//! mem table is merged over it like over the store) and is updated after the
//! store accepted a commit. Imports only `types` and `error`.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::Result;
use crate::types::interval::Interval;
use crate::types::Value;

pub type Row = Vec<Value>;

/// An ordered key-value store with atomic, durable batches.
pub trait StateKv: Send + Sync {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Pairs with `lo <= key < hi` (no upper bound when `hi` is None), in
    /// key order.
    fn scan(&self, lo: &[u8], hi: Option<&[u8]>) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;
    /// The first `limit` pairs of [`StateKv::scan`] (the head of a range).
    fn scan_head(&self, lo: &[u8], hi: Option<&[u8]>, limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut v = self.scan(lo, hi)?;
        v.truncate(limit);
        Ok(v)
    }
    /// Apply all puts (`Some`) and deletes (`None`) atomically and durably.
    fn apply(&self, batch: Vec<(Vec<u8>, Option<Vec<u8>>)>) -> Result<()>;
}

/// [`StateKv`] on a sled database.
pub struct SledStateKv {
    db: sled::Db,
}

impl SledStateKv {
    pub fn open(path: &std::path::Path) -> Result<SledStateKv> {
        let db = crate::sled_open::open(&sled::Config::new().path(path))
            .map_err(|e| crate::err!(Storage, "cannot open the streaming state store {}", path.display()).with_detail(e.to_string()))?;
        Ok(SledStateKv { db })
    }
}

impl StateKv for SledStateKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?.map(|v| v.to_vec()))
    }
    fn scan(&self, lo: &[u8], hi: Option<&[u8]>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.scan_head(lo, hi, usize::MAX)
    }
    fn scan_head(&self, lo: &[u8], hi: Option<&[u8]>, limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let iter = match hi {
            Some(hi) => self.db.range(lo.to_vec()..hi.to_vec()),
            None => self.db.range(lo.to_vec()..),
        };
        let mut out = Vec::new();
        for kv in iter.take(limit) {
            let (k, v) = kv?;
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }
    fn apply(&self, batch: Vec<(Vec<u8>, Option<Vec<u8>>)>) -> Result<()> {
        let mut b = sled::Batch::default();
        for (k, v) in batch {
            match v {
                Some(v) => b.insert(k, v),
                None => b.remove(k),
            }
        }
        self.db.apply_batch(b)?;
        self.db.flush()?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Order-preserving encoding.

const T_BOOL: u8 = 0x01;
const T_INT: u8 = 0x02;
const T_FLOAT: u8 = 0x03;
const T_TEXT: u8 = 0x04;
const T_TIMESTAMP: u8 = 0x05;
const T_DATE: u8 = 0x06;
const T_INTERVAL: u8 = 0x07;
const T_TIME: u8 = 0x08;
const T_TIMETZ: u8 = 0x09;
/// NULL sorts after every value (PostgreSQL's default ASC NULLS LAST).
const T_NULL: u8 = 0x7F;

fn flip(i: i64) -> [u8; 8] {
    ((i as u64) ^ (1 << 63)).to_be_bytes()
}

fn unflip(b: &[u8]) -> i64 {
    (u64::from_be_bytes(b.try_into().expect("8 bytes")) ^ (1 << 63)) as i64
}

/// Append the encoding of one value: bytewise order of encodings is the
/// SQL order of values of one type (floats: -0 = 0, NaN above all;
/// intervals by their 30-day-month total, then their fields).
pub fn encode_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(T_NULL),
        Value::Bool(b) => {
            out.push(T_BOOL);
            out.push(*b as u8);
        }
        Value::Int(i) => {
            out.push(T_INT);
            out.extend_from_slice(&flip(*i));
        }
        Value::Float(f) => {
            out.push(T_FLOAT);
            let f = if *f == 0.0 {
                0.0
            } else if f.is_nan() {
                f64::NAN
            } else {
                *f
            };
            let bits = f.to_bits();
            let enc = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            out.extend_from_slice(&enc.to_be_bytes());
        }
        Value::Text(s) => {
            out.push(T_TEXT);
            for &b in s.as_bytes() {
                out.push(b);
                if b == 0 {
                    out.push(0xFF);
                }
            }
            out.extend_from_slice(&[0, 0]);
        }
        Value::Timestamp(t) => {
            out.push(T_TIMESTAMP);
            out.extend_from_slice(&flip(*t));
        }
        Value::Date(d) => {
            out.push(T_DATE);
            out.extend_from_slice(&flip(*d as i64));
        }
        Value::Time(t) => {
            out.push(T_TIME);
            out.extend_from_slice(&flip(*t));
        }
        Value::TimeTz(t) => {
            out.push(T_TIMETZ);
            out.extend_from_slice(&flip(*t));
        }
        Value::Interval(iv) => {
            out.push(T_INTERVAL);
            let total = (iv.months as i128 * 30 + iv.days as i128) * 86_400_000_000 + iv.micros as i128;
            out.extend_from_slice(&((total as u128) ^ (1 << 127)).to_be_bytes());
            out.extend_from_slice(&flip(iv.months as i64));
            out.extend_from_slice(&flip(iv.days as i64));
            out.extend_from_slice(&flip(iv.micros));
        }
    }
}

/// Decode one value at `*pos`, advancing it.
pub fn decode_value(b: &[u8], pos: &mut usize) -> Result<Value> {
    let bad = || crate::err!(Internal, "corrupt streaming state value");
    let tag = *b.get(*pos).ok_or_else(bad)?;
    *pos += 1;
    let mut take = |n: usize| -> Result<&[u8]> {
        let s = b.get(*pos..*pos + n).ok_or_else(bad)?;
        *pos += n;
        Ok(s)
    };
    Ok(match tag {
        T_NULL => Value::Null,
        T_BOOL => Value::Bool(take(1)?[0] != 0),
        T_INT => Value::Int(unflip(take(8)?)),
        T_TIMESTAMP => Value::Timestamp(unflip(take(8)?)),
        T_DATE => Value::Date(unflip(take(8)?) as i32),
        T_TIME => Value::Time(unflip(take(8)?)),
        T_TIMETZ => Value::TimeTz(unflip(take(8)?)),
        T_FLOAT => {
            let enc = u64::from_be_bytes(take(8)?.try_into().expect("8 bytes"));
            let bits = if enc >> 63 == 1 { enc & !(1 << 63) } else { !enc };
            Value::Float(f64::from_bits(bits))
        }
        T_INTERVAL => {
            take(16)?;
            let months = unflip(take(8)?) as i32;
            let days = unflip(take(8)?) as i32;
            let micros = unflip(take(8)?);
            Value::Interval(Interval { months, days, micros })
        }
        T_TEXT => {
            let mut s = Vec::new();
            loop {
                let c = *b.get(*pos).ok_or_else(bad)?;
                *pos += 1;
                if c == 0 {
                    let n = *b.get(*pos).ok_or_else(bad)?;
                    *pos += 1;
                    if n == 0 {
                        break;
                    }
                    s.push(0);
                } else {
                    s.push(c);
                }
            }
            Value::Text(String::from_utf8(s).map_err(|_| bad())?)
        }
        _ => return Err(bad()),
    })
}

/// The order-preserving encoding of a key (a sequence of values).
pub fn encode_key(values: &[Value], out: &mut Vec<u8>) {
    for v in values {
        encode_value(v, out);
    }
}

pub fn encode_row(row: &[Value]) -> Vec<u8> {
    let mut out = Vec::with_capacity(row.len() * 9);
    encode_key(row, &mut out);
    out
}

pub fn decode_row(b: &[u8]) -> Result<Row> {
    let mut pos = 0;
    let mut row = Vec::new();
    while pos < b.len() {
        row.push(decode_value(b, &mut pos)?);
    }
    Ok(row)
}

/// The smallest byte string greater than every string starting with `p`
/// (None when there is none: all 0xFF).
pub fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut e = p.to_vec();
    while let Some(last) = e.pop() {
        if last < 0xFF {
            e.push(last + 1);
            return Some(e);
        }
    }
    None
}

// ---------------------------------------------------------------------------
// The cache in front of the store.

/// Bytes a cached group costs beyond its keys and values (map entries,
/// LRU entry): an estimate, so the budget bounds memory roughly.
const GROUP_OVERHEAD_BYTES: usize = 96;
const ROW_OVERHEAD_BYTES: usize = 48;

/// Committed rows of whole groups of state tables, least recently used out
/// past a byte budget. One cache may serve many stores (all flows of a
/// process): its keys are full store keys (namespace, table, key).
pub struct StateCache {
    inner: Mutex<CacheInner>,
    budget_bytes: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Default)]
struct CacheInner {
    /// Group prefix → the group's committed rows (full key → value).
    groups: HashMap<Vec<u8>, CachedGroup>,
    /// Last use → group prefix (oldest first).
    lru: BTreeMap<u64, Vec<u8>>,
    tick: u64,
    bytes: usize,
}

struct CachedGroup {
    rows: BTreeMap<Vec<u8>, Vec<u8>>,
    bytes: usize,
    tick: u64,
}

/// Counters of a [`StateCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub bytes: u64,
    pub groups: u64,
    pub budget_bytes: u64,
}

fn row_cost(k: &[u8], v: &[u8]) -> usize {
    k.len() + v.len() + ROW_OVERHEAD_BYTES
}

impl StateCache {
    /// A cache of at most `budget_bytes` (0: nothing is cached).
    pub fn new(budget_bytes: usize) -> StateCache {
        StateCache {
            inner: Mutex::new(CacheInner::default()),
            budget_bytes: AtomicUsize::new(budget_bytes),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Change the budget (evicting down to it).
    pub fn set_budget(&self, budget_bytes: usize) {
        self.budget_bytes.store(budget_bytes, Ordering::Relaxed);
        let mut c = self.inner.lock();
        c.evict(budget_bytes);
    }

    pub fn stats(&self) -> CacheStats {
        let c = self.inner.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bytes: c.bytes as u64,
            groups: c.groups.len() as u64,
            budget_bytes: self.budget_bytes.load(Ordering::Relaxed) as u64,
        }
    }

    /// Run `f` over the cached rows of `group`, or return None (a miss).
    fn with_group<T>(&self, group: &[u8], f: impl FnOnce(&BTreeMap<Vec<u8>, Vec<u8>>) -> T) -> Option<T> {
        let mut c = self.inner.lock();
        c.tick += 1;
        let tick = c.tick;
        let Some(g) = c.groups.get_mut(group) else {
            drop(c);
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let old = std::mem::replace(&mut g.tick, tick);
        let r = f(&g.rows);
        c.lru.remove(&old);
        c.lru.insert(tick, group.to_vec());
        drop(c);
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(r)
    }

    /// Cache a group read whole from the store. A group larger than an
    /// eighth of the budget is not cached (it would push out everything
    /// else for one key).
    fn put_group(&self, group: Vec<u8>, rows: BTreeMap<Vec<u8>, Vec<u8>>) {
        let budget = self.budget_bytes.load(Ordering::Relaxed);
        let bytes = GROUP_OVERHEAD_BYTES + group.len() + rows.iter().map(|(k, v)| row_cost(k, v)).sum::<usize>();
        if bytes > budget / 8 {
            return;
        }
        let mut c = self.inner.lock();
        c.tick += 1;
        let tick = c.tick;
        if let Some(old) = c.groups.remove(&group) {
            c.lru.remove(&old.tick);
            c.bytes -= old.bytes;
        }
        c.lru.insert(tick, group.clone());
        c.bytes += bytes;
        c.groups.insert(group, CachedGroup { rows, bytes, tick });
        c.evict(budget);
    }

    /// Apply committed writes to the groups that are cached (others are
    /// read from the store when next needed).
    fn apply(&self, writes: &[(Vec<u8>, usize, Option<Vec<u8>>)]) {
        let budget = self.budget_bytes.load(Ordering::Relaxed);
        let mut c = self.inner.lock();
        if c.groups.is_empty() {
            return;
        }
        let mut grown = 0usize;
        let mut shrunk = 0usize;
        for (k, glen, v) in writes {
            if *glen == 0 {
                continue; // a table that is not cached
            }
            let Some(g) = c.groups.get_mut(&k[..*glen]) else { continue };
            let before = g.bytes;
            if let Some(old) = g.rows.remove(k) {
                g.bytes -= row_cost(k, &old);
            }
            if let Some(v) = v {
                g.bytes += row_cost(k, v);
                g.rows.insert(k.clone(), v.clone());
            }
            if g.bytes >= before {
                grown += g.bytes - before;
            } else {
                shrunk += before - g.bytes;
            }
        }
        c.bytes = c.bytes + grown - shrunk;
        c.evict(budget);
    }

    /// Forget every group whose key starts with `prefix` (a dropped
    /// namespace, or one whose commit failed half way).
    fn forget(&self, prefix: &[u8]) {
        let mut c = self.inner.lock();
        let gone: Vec<Vec<u8>> = c.groups.keys().filter(|k| k.starts_with(prefix)).cloned().collect();
        for k in gone {
            if let Some(g) = c.groups.remove(&k) {
                c.lru.remove(&g.tick);
                c.bytes -= g.bytes;
            }
        }
    }
}

impl CacheInner {
    fn evict(&mut self, budget: usize) {
        while self.bytes > budget {
            let Some((_, group)) = self.lru.pop_first() else { break };
            if let Some(g) = self.groups.remove(&group) {
                self.bytes -= g.bytes;
            }
        }
    }
}

/// A cache of no bytes (reads go to the store).
pub fn no_cache() -> Arc<StateCache> {
    Arc::new(StateCache::new(0))
}

/// The default budget of the state cache: 64 MiB.
pub const STATE_CACHE_BYTES_DEFAULT: usize = 64 << 20;

// ---------------------------------------------------------------------------
// The store and its tables.

/// The table id of a dataflow's own records (epoch, source position).
pub const META_TABLE: u32 = u32::MAX;
/// The table id of a dataflow's inbox: rows of instant sources logged when
/// written, deleted by the barrier of the epoch that consumed them.
pub const INBOX_TABLE: u32 = u32::MAX - 1;

/// One dataflow's namespace in a [`StateKv`], with its committed epoch.
pub struct StateStore {
    kv: Arc<dyn StateKv>,
    cache: Arc<StateCache>,
    namespace: Vec<u8>,
    epoch: u64,
    /// Inbox entries the next commit deletes (consumed by its epoch).
    consumed: Vec<Vec<u8>>,
}

impl StateStore {
    /// Open the namespace `name` (e.g. a flow's), reading its last
    /// committed epoch (0 when nothing was committed).
    pub fn open(kv: Arc<dyn StateKv>, name: &str) -> Result<StateStore> {
        Self::open_cached(kv, Arc::new(StateCache::new(STATE_CACHE_BYTES_DEFAULT)), name)
    }

    /// Open the namespace `name` with reads through `cache` (which may be
    /// shared with other namespaces of the same store).
    pub fn open_cached(kv: Arc<dyn StateKv>, cache: Arc<StateCache>, name: &str) -> Result<StateStore> {
        let namespace = Self::namespace_key(name);
        let mut s = StateStore { kv, cache, namespace, epoch: 0, consumed: Vec::new() };
        s.epoch = match s.kv.get(&s.meta_key(b"epoch"))? {
            Some(b) => u64::from_be_bytes(b.as_slice().try_into().map_err(|_| crate::err!(Internal, "corrupt epoch record"))?),
            None => 0,
        };
        Ok(s)
    }

    fn namespace_key(name: &str) -> Vec<u8> {
        let mut ns = b"s/".to_vec();
        ns.extend_from_slice(name.as_bytes());
        ns.push(0);
        ns
    }

    /// The last committed epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The cache this store reads through.
    pub fn cache(&self) -> &Arc<StateCache> {
        &self.cache
    }

    fn meta_key(&self, name: &[u8]) -> Vec<u8> {
        let mut k = self.namespace.clone();
        k.extend_from_slice(&META_TABLE.to_be_bytes());
        k.extend_from_slice(name);
        k
    }

    /// A state table of this namespace keyed by `pk` (column positions of
    /// its rows, in key order).
    pub fn table(&self, table_id: u32, pk: Vec<usize>) -> StateTable {
        let desc = vec![false; pk.len()];
        self.table_ordered(table_id, pk, desc)
    }

    /// A state table whose key columns sort descending where `desc` says
    /// (so a scan meets the largest value first: max's extreme state).
    pub fn table_ordered(&self, table_id: u32, pk: Vec<usize>, desc: Vec<bool>) -> StateTable {
        assert_eq!(pk.len(), desc.len(), "one order per key column");
        assert!(table_id < INBOX_TABLE, "table ids {INBOX_TABLE} and up hold the store's own records");
        let mut prefix = self.namespace.clone();
        prefix.extend_from_slice(&table_id.to_be_bytes());
        let group = Some(pk.len());
        StateTable {
            kv: self.kv.clone(),
            cache: self.cache.clone(),
            prefix,
            pk,
            desc,
            group,
            mem: BTreeMap::new(),
            hits: Default::default(),
            misses: Default::default(),
            sampled: (0, 0),
            expiry: None,
        }
    }

    /// The inbox key of the rows a write of `seq` put in `region`.
    pub fn inbox_key(name: &str, region: u64, seq: u64) -> Vec<u8> {
        let mut k = Self::namespace_key(name);
        k.extend_from_slice(&INBOX_TABLE.to_be_bytes());
        k.extend_from_slice(&region.to_be_bytes());
        k.extend_from_slice(&seq.to_be_bytes());
        k
    }

    /// The inbox: (region, seq, logged rows) in key order.
    pub fn inbox(&self) -> Result<Vec<(u64, u64, Vec<u8>)>> {
        let mut p = self.namespace.clone();
        p.extend_from_slice(&INBOX_TABLE.to_be_bytes());
        let bad = || crate::err!(Internal, "corrupt streaming inbox key");
        let mut out = Vec::new();
        for (k, v) in self.kv.scan(&p, prefix_end(&p).as_deref())? {
            let rest = k.get(p.len()..).filter(|r| r.len() == 16).ok_or_else(bad)?;
            let region = u64::from_be_bytes(rest[..8].try_into().map_err(|_| bad())?);
            let seq = u64::from_be_bytes(rest[8..].try_into().map_err(|_| bad())?);
            out.push((region, seq, v));
        }
        Ok(out)
    }

    /// Delete these inbox entries with the next commit.
    pub fn consume_inbox(&mut self, entries: impl IntoIterator<Item = (u64, u64)>) {
        let mut p = self.namespace.clone();
        p.extend_from_slice(&INBOX_TABLE.to_be_bytes());
        for (region, seq) in entries {
            let mut k = p.clone();
            k.extend_from_slice(&region.to_be_bytes());
            k.extend_from_slice(&seq.to_be_bytes());
            self.consumed.push(k);
        }
    }

    /// A committed record of the dataflow (e.g. its source position).
    pub fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.kv.get(&self.meta_key(name.as_bytes()))
    }

    /// Commit `epoch`: every table's mem table and the `meta` records
    /// (None deletes) in one atomic batch. The epoch must move forward.
    pub fn commit(&mut self, epoch: u64, tables: &mut [&mut StateTable], meta: Vec<(String, Option<Vec<u8>>)>) -> Result<()> {
        assert!(epoch > self.epoch, "epoch {epoch} does not move past the committed epoch {}", self.epoch);
        let mut writes: Vec<(Vec<u8>, usize, Option<Vec<u8>>)> = Vec::new();
        for t in tables.iter_mut() {
            assert!(Arc::ptr_eq(&t.kv, &self.kv), "a state table commits with its own store");
            writes.extend(std::mem::take(&mut t.mem).into_iter().map(|(k, (g, v))| (k, g, v)));
        }
        let mut batch: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::with_capacity(writes.len() + 3);
        batch.extend(writes.iter().map(|(k, _, v)| (k.clone(), v.clone())));
        batch.extend(std::mem::take(&mut self.consumed).into_iter().map(|k| (k, None)));
        for (name, v) in meta {
            batch.push((self.meta_key(name.as_bytes()), v));
        }
        batch.push((self.meta_key(b"epoch"), Some(epoch.to_be_bytes().to_vec())));
        if let Err(e) = self.kv.apply(batch) {
            // The store may or may not hold the batch: the cache must not
            // answer for this namespace from what it had.
            self.cache.forget(&self.namespace);
            return Err(e);
        }
        self.cache.apply(&writes);
        self.epoch = epoch;
        Ok(())
    }

    /// Delete everything of the namespace (the flow is dropped).
    pub fn destroy(kv: &dyn StateKv, cache: &StateCache, name: &str) -> Result<()> {
        let ns = Self::namespace_key(name);
        cache.forget(&ns);
        let hi = prefix_end(&ns);
        let keys = kv.scan(&ns, hi.as_deref())?;
        kv.apply(keys.into_iter().map(|(k, _)| (k, None)).collect())
    }
}

fn mem_bound(hi: &Option<Vec<u8>>) -> Bound<&Vec<u8>> {
    match hi {
        Some(h) => Bound::Excluded(h),
        None => Bound::Unbounded,
    }
}

/// A relational table of operator state: rows keyed by their pk columns.
pub struct StateTable {
    kv: Arc<dyn StateKv>,
    cache: Arc<StateCache>,
    prefix: Vec<u8>,
    pk: Vec<usize>,
    /// Key columns encoded descending (bytes inverted).
    desc: Vec<bool>,
    /// How many leading key columns make a cached group (None: reads go
    /// to the store).
    group: Option<usize>,
    /// This epoch's writes: full key → (length of its group prefix, 0 when
    /// the table is not cached; the row, None: deleted).
    mem: BTreeMap<Vec<u8>, (usize, Option<Vec<u8>>)>,
    /// Reads of this table the cache answered / sent to the store.
    hits: std::cell::Cell<u64>,
    misses: std::cell::Cell<u64>,
    /// Committed rows and bytes as of the last [`StateTable::sample_size`].
    sampled: (u64, u64),
    /// (key column holding a timestamp, width): a row expires once that
    /// timestamp plus the width is at or below the watermark.
    expiry: Option<(usize, i64)>,
}

impl StateTable {
    /// Add `d` to the multiplicity stored after the key `pk` (a row of
    /// `pk` plus one Int count); a count reaching zero deletes the row.
    pub fn add_count(&mut self, mut pk: Row, d: i64) -> Result<()> {
        let n = match self.get_row(&pk)? {
            Some(r) => match r.get(pk.len()) {
                Some(Value::Int(n)) => *n,
                _ => 0,
            },
            None => 0,
        } + d;
        if n == 0 {
            self.delete_row(&pk);
        } else {
            pk.push(Value::Int(n));
            self.insert_row(pk);
        }
        Ok(())
    }

    /// Cache this table's rows by groups of the first `cols` key columns
    /// (a join arrangement: by the join key).
    pub fn cached_by(mut self, cols: usize) -> StateTable {
        assert!(cols <= self.pk.len(), "a cache group is a prefix of the key");
        self.group = Some(cols);
        self
    }

    /// Let rows expire by key column `col` (a timestamp: a window's start
    /// with the window's `width`, or a row's time with 0).
    pub fn expire_by(mut self, col: usize, width: i64) -> StateTable {
        self.expiry = Some((col, width));
        self
    }

    /// Delete the rows that expired at `watermark` (microseconds): a scan
    /// of the table. Returns how many went.
    pub fn expire(&mut self, watermark: i64) -> Result<u64> {
        let Some((col, width)) = self.expiry else { return Ok(0) };
        let mut n = 0;
        for r in self.scan(&[], (Bound::Unbounded, Bound::Unbounded), None)? {
            if matches!(r.get(self.pk[col]), Some(Value::Timestamp(t)) if t.saturating_add(width) <= watermark) {
                self.delete_row(&r);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Read this table from the store only (a table read by the head of a
    /// range, whose groups may be large: min / max's extreme state).
    pub fn uncached(mut self) -> StateTable {
        self.group = None;
        self
    }

    /// The store key of `pk` and the length of its group prefix.
    fn key_and_group(&self, pk: &[Value]) -> (Vec<u8>, usize) {
        let mut k = self.prefix.clone();
        let mut glen = 0;
        for (i, v) in pk.iter().enumerate() {
            if Some(i) == self.group {
                glen = k.len();
            }
            self.encode_col(i, v, &mut k);
        }
        if Some(pk.len()) == self.group {
            glen = k.len();
        }
        (k, glen)
    }

    fn encode_col(&self, i: usize, v: &Value, out: &mut Vec<u8>) {
        let start = out.len();
        encode_value(v, out);
        if self.desc.get(i).copied().unwrap_or(false) {
            for b in &mut out[start..] {
                *b = !*b;
            }
        }
    }

    fn row_key(&self, row: &[Value]) -> (Vec<u8>, usize) {
        let pk: Vec<Value> = self.pk.iter().map(|&i| row[i].clone()).collect();
        self.key_and_group(&pk)
    }

    /// Count a read as a cache hit or a miss.
    fn counted<T>(&self, r: Option<T>) -> Option<T> {
        let c = if r.is_some() { &self.hits } else { &self.misses };
        c.set(c.get() + 1);
        r
    }

    /// Reads of this table the cache answered and those that went to the
    /// store (uncached tables count every read as a miss).
    pub fn cache_counters(&self) -> (u64, u64) {
        (self.hits.get(), self.misses.get())
    }

    /// Read a whole group from the store and cache it.
    fn load_group(&self, group: &[u8], point: bool) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
        let rows: BTreeMap<Vec<u8>, Vec<u8>> = if point {
            // The group is one full key: a point read.
            self.kv.get(group)?.map(|v| (group.to_vec(), v)).into_iter().collect()
        } else {
            self.kv.scan(group, prefix_end(group).as_deref())?.into_iter().collect()
        };
        self.cache.put_group(group.to_vec(), rows.clone());
        Ok(rows)
    }

    /// The row with primary key `pk` (mem table first).
    pub fn get_row(&self, pk: &[Value]) -> Result<Option<Row>> {
        let (k, glen) = self.key_and_group(pk);
        if let Some((_, v)) = self.mem.get(&k) {
            return v.as_deref().map(decode_row).transpose();
        }
        let bytes = if glen > 0 {
            let group = &k[..glen];
            match self.counted(self.cache.with_group(group, |rows| rows.get(&k).cloned())) {
                Some(v) => v,
                None => self.load_group(group, glen == k.len())?.remove(&k),
            }
        } else {
            self.counted::<()>(None);
            self.kv.get(&k)?
        };
        bytes.map(|b| decode_row(&b)).transpose()
    }

    pub fn insert_row(&mut self, row: Row) {
        let (k, g) = self.row_key(&row);
        self.mem.insert(k, (g, Some(encode_row(&row))));
    }

    pub fn delete_row(&mut self, row: &[Value]) {
        let (k, g) = self.row_key(row);
        self.mem.insert(k, (g, None));
    }

    /// Replace `old` by `new` (same primary key, or a move).
    pub fn update_row(&mut self, old: &[Value], new: Row) {
        let ((ko, go), (kn, gn)) = (self.row_key(old), self.row_key(&new));
        if ko != kn {
            self.mem.insert(ko, (go, None));
        }
        self.mem.insert(kn, (gn, Some(encode_row(&new))));
    }

    /// Rows whose key starts with the values `prefix` and whose next key
    /// column lies in `range` (given in that column's order: for a
    /// descending column the lower bound is the larger value), in key order; `limit` stops early (reading
    /// only the head of a range: the extreme of a group). A prefix that
    /// covers the table's cache group reads the group from the cache.
    pub fn scan(&self, prefix: &[Value], range: (Bound<&Value>, Bound<&Value>), limit: Option<usize>) -> Result<Vec<Row>> {
        let (base, glen) = self.key_and_group(prefix);
        let bound_key = |v: &Value| {
            let mut k = base.clone();
            self.encode_col(prefix.len(), v, &mut k);
            k
        };
        let lo = match range.0 {
            Bound::Unbounded => base.clone(),
            Bound::Included(v) => bound_key(v),
            Bound::Excluded(v) => prefix_end(&bound_key(v)).expect("a value key has an end"),
        };
        let hi = match range.1 {
            Bound::Unbounded => prefix_end(&base),
            Bound::Included(v) => prefix_end(&bound_key(v)),
            Bound::Excluded(v) => Some(bound_key(v)),
        };
        let limit = limit.unwrap_or(usize::MAX);
        let in_range = |k: &Vec<u8>| k.as_slice() >= lo.as_slice() && hi.as_ref().is_none_or(|h| k < h);
        let stored: Vec<(Vec<u8>, Vec<u8>)> = if glen > 0 && self.group.is_some_and(|g| prefix.len() >= g) {
            let group = &base[..glen];
            let pick = |rows: &BTreeMap<Vec<u8>, Vec<u8>>| -> Vec<(Vec<u8>, Vec<u8>)> {
                rows.range(lo.clone()..).take_while(|(k, _)| in_range(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
            };
            match self.counted(self.cache.with_group(group, pick)) {
                Some(v) => v,
                None => pick(&self.load_group(group, self.group == Some(self.pk.len()) && prefix.len() == self.pk.len())?),
            }
        } else {
            self.counted::<()>(None);
            if limit == usize::MAX {
                self.kv.scan(&lo, hi.as_deref())?
            } else {
                // Only the head: each write of this epoch in the range may
                // hide one stored row.
                let shadowed = self.mem.range::<Vec<u8>, _>((Bound::Included(&lo), mem_bound(&hi))).count();
                self.kv.scan_head(&lo, hi.as_deref(), limit.saturating_add(shadowed))?
            }
        };
        let mut out = Vec::new();
        let mem_hi = mem_bound(&hi).map(|h| h.clone());
        let mut mem = self.mem.range((Bound::Included(lo.clone()), mem_hi)).peekable();
        let mut stored = stored.into_iter().peekable();
        while out.len() < limit {
            // Merge by key; on a tie the mem table wins.
            let take_mem = match (mem.peek(), stored.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((mk, _)), Some((sk, _))) => {
                    if mk.as_slice() == sk.as_slice() {
                        stored.next();
                        true
                    } else {
                        mk.as_slice() < sk.as_slice()
                    }
                }
            };
            if take_mem {
                let (_, (_, v)) = mem.next().expect("peeked");
                if let Some(v) = v {
                    out.push(decode_row(v)?);
                }
            } else {
                let (_, v) = stored.next().expect("peeked");
                out.push(decode_row(&v)?);
            }
        }
        Ok(out)
    }

    /// Writes buffered in this epoch (rows and tombstones).
    pub fn mem_len(&self) -> usize {
        self.mem.len()
    }

    /// Drop this epoch's writes (the epoch is abandoned).
    pub fn discard(&mut self) {
        self.mem.clear();
    }

    /// Committed rows and their encoded bytes (keys and values): a scan
    /// of the whole table.
    pub fn stats(&self) -> Result<(u64, u64)> {
        let hi = prefix_end(&self.prefix);
        let kvs = self.kv.scan(&self.prefix, hi.as_deref())?;
        Ok((kvs.len() as u64, kvs.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum()))
    }

    /// Measure the committed rows and bytes now (a scan of the table);
    /// [`StateTable::sampled_size`] answers it until the next sample.
    pub fn sample_size(&mut self) -> Result<(u64, u64)> {
        self.sampled = self.stats()?;
        Ok(self.sampled)
    }

    pub fn sampled_size(&self) -> (u64, u64) {
        self.sampled
    }
}

#[cfg(test)]
#[path = "state_table_tests.rs"]
mod tests;
