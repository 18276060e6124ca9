//! Storage: an LSM per region (WAL, memtable, Parquet SSTs, sled manifest).
//!
//! Owns every byte on disk except the catalog. May import `error` and
//! `types` only: never `sql`, `planner`, `exec`, `server` or `flow`. Writes
//! are reported to whoever subscribes through [`WriteListener`].
//!
//! Write path, naming every fsync: encode the batch → WAL append → group
//! commit (one writer fsyncs, when `wal_fsync`, for every record appended
//! so far, outside the region lock) → memtable, in sequence order →
//! acknowledge → notify. See `region.rs` for the visibility invariant. Flush: freeze the
//! memtable, rotate the WAL → Parquet SST written to a temp object, fsync,
//! rename, fsync the directory → manifest compare-and-set in sled (sled
//! flush = fsync) → flushed sequence advances → old WAL segments deleted.
//! A crash anywhere recovers from the manifest plus WAL replay; files the
//! manifest does not name are garbage and removed at open.

mod codec;
mod column_cache;
/// The WAL's batch encoding (streaming flows log instant rows with it).
pub use codec::{decode_batch, encode_batch};
use column_cache::ColumnCache;
pub use column_cache::ColumnCacheStats;
mod memtable;
mod meta;
mod object;
mod region;
mod route;
mod sst;
mod txn;
mod version;
mod wal;

pub use meta::{FileMeta, Manifest, MetaKv, SledKv};
pub use object::{LocalStore, ObjectStore};
pub use region::{Region, RegionScan, RegionStats, RECOVERED_ANNEXES};
pub use route::route_rows;
pub use txn::{BulkWrite, OverlayFn, ReadView, RegionWrites, SnapshotSource, OVERLAY_SEQ, TEMP_ROWID_BASE};
pub use version::{OP_COLUMN, SEQ_COLUMN};
pub use wal::{LocalLog, LogStore, LogSync};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;

use crate::error::Result;

/// Name of the diff column of [`Region::changes`] (Int64, +1 / -1).
pub const DIFF_COLUMN: &str = "__diff";

/// A region's identity: table id in the high 32 bits, region number low.
pub type RegionId = u64;
/// A region write sequence; every write batch gets the next one.
pub type SeqNo = u64;

/// Name of the hidden row-id column a scan appends when asked.
pub const ROWID_COLUMN: &str = "__rowid";

pub fn region_id(table_id: u32, region_no: u32) -> RegionId {
    ((table_id as u64) << 32) | region_no as u64
}

/// What a region stores and how rows are identified.
#[derive(Debug, Clone)]
pub struct RegionDescriptor {
    pub table_name: String,
    /// User columns, in table order.
    pub schema: SchemaRef,
    /// Tag columns (indices into `schema`).
    pub primary_key: Vec<usize>,
    /// The time index column, if the table has one.
    pub time_index: Option<usize>,
    /// Keep duplicates of (primary key, time) instead of last write wins.
    pub append_mode: bool,
    /// Rows older than now - ttl are invisible; `Some(0)` = instant.
    pub ttl_ms: Option<i64>,
}

impl RegionDescriptor {
    /// Rows are deduplicated by (primary key, time index), last write wins.
    pub fn last_write_wins(&self) -> bool {
        self.time_index.is_some() && !self.append_mode
    }
}

/// How sequence bounds are served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SeqMode {
    /// Any range, across flushes (SSTs keep per-row sequences); fails with
    /// `SequenceRangeUnsupported` when compaction discarded needed versions.
    #[default]
    Exact,
    /// Seed 001's `memtable_only`: with a lower bound, only the memtable is
    /// read, and a bound below the flushed sequence is `IncrementalQueryStale`.
    MemtableOnly,
}

/// Sequence bounds of a scan (seed 001 fences).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqBounds {
    /// Exclusive lower bound: only rows with seq > after.
    pub after: Option<SeqNo>,
    /// Inclusive snapshot upper bound.
    pub upto: Option<SeqNo>,
    pub mode: SeqMode,
}

/// Equality filter on one column, used for pruning and filtering.
#[derive(Debug, Clone)]
pub struct ColumnEq {
    pub column: usize,
    pub value: arrow::array::ArrayRef, // a one-element array
}

/// A comparison of a column with a constant, `column op value`, that a
/// scan may evaluate while it reads SSTs whose rows need no merge, before
/// it materialises the other columns (rows are still filtered above). Only
/// on columns of the value's kind: `F64` on float8, `I64` on int2/4/8.
/// Floats compare as PostgreSQL orders them: NaN above every number and
/// equal to NaN, -0 equal to 0; NULL never matches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColumnCmp {
    pub column: usize,
    pub op: CmpOp,
    pub value: CmpValue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    LtEq,
    Gt,
    GtEq,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CmpValue {
    F64(f64),
    I64(i64),
}

/// A scan of one region.
#[derive(Debug, Clone, Default)]
pub struct ScanRequest {
    /// Columns to return (indices into the user schema); None = all.
    pub projection: Option<Vec<usize>>,
    /// Time range [start, end) in microseconds on the time index.
    pub time_range: Option<(i64, i64)>,
    /// Equality filters (may be used for pruning; rows still filtered above).
    pub filters: Vec<ColumnEq>,
    /// Comparisons storage may apply early (see [`ColumnCmp`]).
    pub cmps: Vec<ColumnCmp>,
    pub seq: SeqBounds,
    /// Append a UInt64 `__rowid` column (identity for DELETE / UPDATE).
    pub with_rowid: bool,
    /// A statement's snapshot of this region (see [`ReadView`]): rows
    /// published after it are not read.
    pub snapshot: Option<SeqNo>,
    /// The reading transaction's own uncommitted writes to this region.
    pub overlay: Option<Arc<RegionWrites>>,
    /// Only the last row (greatest time index) of each series (primary
    /// key), or a superset of those rows; ignored without a time index.
    /// For `DISTINCT ON (tags) … ORDER BY tags, time DESC`.
    pub last_row: bool,
    /// `(k, n)`: read only part `k` of `n` of the visible rows, so `n`
    /// threads each scan a part (not with `last_row`). The parts are
    /// disjoint and together are the whole scan: SSTs that share no
    /// identity with other sources are split by row groups (chunk
    /// `(k + i) % n` of the i-th such file); sources merged by identity are
    /// split by time (the k-th of `n` equal slices of `time_range`, as an
    /// identity holds its time), or all read by part 0 without a range.
    pub part: Option<(usize, usize)>,
}

/// What one acknowledged write did.
#[derive(Debug, Clone)]
pub struct WriteNotice {
    pub table_name: String,
    pub region_id: RegionId,
    /// Inclusive sequence range of the write.
    pub seq_range: (SeqNo, SeqNo),
    /// Min / max time index of the rows written, if the table has one.
    pub time_range: Option<(i64, i64)>,
    pub rows: usize,
    /// The rows put, for a table with `ttl = 'instant'` only (they are
    /// stored nowhere, so listeners get them here; flows transform them).
    /// May carry trailing internal columns after the table's.
    pub instant_rows: Vec<RecordBatch>,
}

/// Receives a notice after each acknowledged write. Storage does not know
/// who listens.
pub trait WriteListener: Send + Sync {
    fn on_write(&self, notice: &WriteNotice);
    /// A committed transaction block: one change over all its regions,
    /// delivered after it is visible. By default, each notice in turn.
    fn on_commit(&self, notices: &[WriteNotice]) {
        for n in notices {
            self.on_write(n);
        }
    }
}

/// Storage options, from `[storage]` in the config.
#[derive(Debug, Clone)]
pub struct StorageConfig {
    /// fsync the WAL on every write batch.
    pub wal_fsync: bool,
    /// A region's memtable is flushed when it holds more than this.
    pub memtable_bytes_max: usize,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig { wal_fsync: true, memtable_bytes_max: 64 << 20 }
    }
}

/// More `[storage]` options, kept apart from [`StorageConfig`] so that
/// existing struct literals of it still compile; pass them to
/// [`StorageEngine::open_tuned`].
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default)]
pub struct StorageTuning {
    /// All memtables together; above it the largest are flushed.
    pub global_memtable_bytes_max: usize,
    /// A region is flushed when its WAL holds more than this (instant-TTL
    /// tables keep no memtable but still log sequences).
    pub wal_bytes_max: u64,
    /// Rows per Parquet row group (the pruning granule).
    pub sst_row_group_rows_max: usize,
    /// Check each SST's CRC at open (reads every file once).
    pub sst_verify_crc: bool,
    /// Time window of time-window compaction.
    pub compaction_window_ms: i64,
    /// Files below this size are "small" and merged by background compaction.
    pub compaction_file_bytes_max: u64,
    /// Background compaction merges a window once it has this many small files.
    pub compaction_files_min: usize,
    /// Period of the background flush/compaction thread; 0 = no thread.
    pub background_interval_ms: u64,
    /// Bytes of decoded SST columns kept for later reads; 0 = none.
    pub decoded_cache_bytes_max: usize,
}

impl Default for StorageTuning {
    fn default() -> Self {
        StorageTuning {
            global_memtable_bytes_max: 512 << 20,
            wal_bytes_max: 256 << 20,
            sst_row_group_rows_max: 64 * 1024,
            sst_verify_crc: true,
            compaction_window_ms: 24 * 3600 * 1000,
            compaction_file_bytes_max: 32 << 20,
            compaction_files_min: 4,
            background_interval_ms: 1000,
            decoded_cache_bytes_max: 1 << 30,
        }
    }
}

/// What all regions of an engine share.
pub(crate) struct Shared {
    pub config: StorageConfig,
    pub tuning: StorageTuning,
    pub root: PathBuf,
    pub store: Arc<dyn ObjectStore>,
    pub meta: Arc<dyn MetaKv>,
    pub listeners: Mutex<Vec<Arc<dyn WriteListener>>>,
    /// Bytes in all memtables (including frozen ones not yet flushed).
    pub mem_used: AtomicUsize,
    /// Wakes the background thread; true = stop.
    pub wake: (Mutex<bool>, Condvar),
    /// Commit decisions of multi-region transactions.
    pub txns: txn::CommitLog,
    /// Decoded SST columns (`column_cache.rs`).
    pub column_cache: Arc<ColumnCache>,
    /// Held while a multi-region transaction is published (write) and while
    /// a snapshot is taken (read), so snapshots see it whole or not at all.
    pub gate: RwLock<()>,
}

impl Shared {
    fn kick(&self) {
        self.wake.1.notify_all();
    }
}

/// All regions of this process.
pub struct StorageEngine {
    shared: Arc<Shared>,
    regions: Arc<RwLock<HashMap<RegionId, Arc<Region>>>>,
    background: Option<std::thread::JoinHandle<()>>,
    stopped: Arc<AtomicBool>,
}

/// The name a dropped region's directory takes until its files are gone.
const DROPPED_SUFFIX: &str = ".dropped";

/// Remove what dropped regions left behind (`drop_region` could not remove
/// a directory while another thread still wrote into it).
fn sweep_dropped(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().ends_with(DROPPED_SUFFIX) {
            if let Err(err) = std::fs::remove_dir_all(e.path()) {
                tracing::warn!(path = %e.path().display(), error = %err, "cannot remove a dropped region's files");
            }
        }
    }
}

impl StorageEngine {
    pub fn open(dir: &Path, config: StorageConfig) -> Result<StorageEngine> {
        Self::open_tuned(dir, config, StorageTuning::default())
    }

    /// [`StorageEngine::open`] with the extra options.
    pub fn open_tuned(dir: &Path, config: StorageConfig, tuning: StorageTuning) -> Result<StorageEngine> {
        std::fs::create_dir_all(dir)?;
        let meta: Arc<dyn MetaKv> = Arc::new(SledKv::open(&dir.join("meta"))?);
        let store: Arc<dyn ObjectStore> = Arc::new(LocalStore::new(dir));
        Self::open_with(dir, config, tuning, store, meta)
    }

    /// Open with other implementations of the file and metadata seams.
    pub fn open_with(
        dir: &Path,
        config: StorageConfig,
        tuning: StorageTuning,
        store: Arc<dyn ObjectStore>,
        meta: Arc<dyn MetaKv>,
    ) -> Result<StorageEngine> {
        std::fs::create_dir_all(dir)?;
        sweep_dropped(dir);
        let interval = tuning.background_interval_ms;
        let txns = txn::CommitLog::open(&dir.join("txn"), config.wal_fsync)?;
        let shared = Arc::new(Shared {
            txns,
            column_cache: Arc::new(ColumnCache::new(tuning.decoded_cache_bytes_max)),
            gate: RwLock::new(()),
            config,
            tuning,
            root: dir.to_path_buf(),
            store,
            meta,
            listeners: Mutex::new(Vec::new()),
            mem_used: AtomicUsize::new(0),
            wake: (Mutex::new(false), Condvar::new()),
        });
        let regions: Arc<RwLock<HashMap<RegionId, Arc<Region>>>> = Arc::new(RwLock::new(HashMap::new()));
        let stopped = Arc::new(AtomicBool::new(false));
        let background = (interval > 0).then(|| {
            let (shared, regions, stopped) = (shared.clone(), regions.clone(), stopped.clone());
            std::thread::Builder::new()
                .name("weir-storage-bg".into())
                .spawn(move || background_supervisor(shared, regions, stopped, interval))
                .expect("spawn the storage background thread")
        });
        Ok(StorageEngine { shared, regions, background, stopped })
    }

    /// Create (or reopen after restart) a region; replays what it has on disk.
    pub fn open_region(&self, id: RegionId, desc: RegionDescriptor) -> Result<Arc<Region>> {
        if let Some(r) = self.regions.read().get(&id) {
            return Ok(r.clone());
        }
        let mut regions = self.regions.write();
        if let Some(r) = regions.get(&id) {
            return Ok(r.clone());
        }
        let region = Arc::new(Region::open(id, desc, self.shared.clone())?);
        regions.insert(id, region.clone());
        Ok(region)
    }

    /// Drop a region and delete its files and manifest.
    pub fn drop_region(&self, id: RegionId) -> Result<()> {
        let region = self.regions.write().remove(&id);
        if let Some(r) = region {
            r.close();
        }
        let dir = self.shared.root.join(region::region_dir_name(id));
        if dir.exists() {
            // Renamed away first (one atomic step): a flush or compaction of
            // the closed region still finishing on another thread cannot add
            // a file to a directory while it is being removed ("Directory
            // not empty"); it fails on the vanished path instead. What cannot
            // be removed now is swept at the next start.
            let trash = self.shared.root.join(format!("{}{DROPPED_SUFFIX}", region::region_dir_name(id)));
            if trash.exists() {
                std::fs::remove_dir_all(&trash)?;
            }
            std::fs::rename(&dir, &trash)?;
            if let Err(e) = std::fs::remove_dir_all(&trash) {
                tracing::warn!(region = id, error = %e, "cannot remove a dropped region's files yet; they go at the next start");
            }
        }
        let key = meta::manifest_key(id);
        if let Some(old) = self.shared.meta.get(&key)? {
            self.shared.meta.compare_and_set(&key, Some(&old), None)?;
        }
        Ok(())
    }

    /// The data directory of the regions (streaming state lives beside them).
    pub fn root(&self) -> &Path {
        &self.shared.root
    }

    pub fn region(&self, id: RegionId) -> Option<Arc<Region>> {
        self.regions.read().get(&id).cloned()
    }

    /// Every open region (for statistics views).
    pub fn regions(&self) -> Vec<Arc<Region>> {
        self.regions.read().values().cloned().collect()
    }

    pub fn subscribe(&self, listener: Arc<dyn WriteListener>) {
        self.shared.listeners.lock().push(listener);
    }

    /// The decoded-column cache's size, budget and counters.
    pub fn column_cache_stats(&self) -> ColumnCacheStats {
        self.shared.column_cache.stats()
    }

    /// Bytes held by all memtables.
    pub fn memtable_bytes(&self) -> usize {
        self.shared.mem_used.load(Ordering::Relaxed)
    }

    /// Flush memtables, largest first, until under the global budget.
    pub fn enforce_memtable_budget(&self) -> Result<()> {
        enforce_budget(&self.shared, &self.regions)
    }
}

impl Drop for StorageEngine {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        *self.shared.wake.0.lock() = true;
        self.shared.kick();
        if let Some(h) = self.background.take() {
            let _ = h.join();
        }
        for r in self.regions.read().values() {
            r.close();
        }
    }
}

/// [`enforce_budget`] with each region's flush contained as in [`contained`].
fn enforce_budget_contained(shared: &Shared, regions: &RwLock<HashMap<RegionId, Arc<Region>>>) -> Result<()> {
    enforce_budget_with(shared, regions, &|r: &Region| {
        contained(r, "flush", || r.flush());
        Ok(())
    })
}

fn enforce_budget(shared: &Shared, regions: &RwLock<HashMap<RegionId, Arc<Region>>>) -> Result<()> {
    enforce_budget_with(shared, regions, &|r: &Region| r.flush())
}

fn enforce_budget_with(
    shared: &Shared,
    regions: &RwLock<HashMap<RegionId, Arc<Region>>>,
    flush: &dyn Fn(&Region) -> Result<()>,
) -> Result<()> {
    let max = shared.tuning.global_memtable_bytes_max;
    if shared.mem_used.load(Ordering::Relaxed) <= max {
        return Ok(());
    }
    let mut all: Vec<Arc<Region>> = regions.read().values().cloned().collect();
    all.sort_by_key(|r| std::cmp::Reverse(r.memtable_bytes()));
    for r in all {
        if shared.mem_used.load(Ordering::Relaxed) <= max / 2 {
            break;
        }
        if r.memtable_bytes() > 0 {
            flush(&r)?;
        }
    }
    Ok(())
}

/// The text of a caught panic.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// Run one region's background step; a panic in it is logged and counted
/// in the region's `background_panics` (information_schema.region_statistics)
/// instead of ending the background thread.
fn contained(r: &Region, what: &str, f: impl FnOnce() -> Result<()>) {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(region = r.id, error = %e, "background {what} failed"),
        Err(p) => {
            r.count_background_panic();
            tracing::error!(region = r.id, panic = %panic_message(p.as_ref()), "background {what} panicked; the region carries on");
        }
    }
}

/// The background thread's body: the loop, restarted after any panic that
/// escapes a region's step (logged; locks do not poison, so the next pass
/// sees usable state).
fn background_supervisor(
    shared: Arc<Shared>,
    regions: Arc<RwLock<HashMap<RegionId, Arc<Region>>>>,
    stopped: Arc<AtomicBool>,
    interval_ms: u64,
) {
    loop {
        let (s, r, st) = (shared.clone(), regions.clone(), stopped.clone());
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| background_loop(s, r, st, interval_ms))) {
            Ok(()) => return,
            Err(p) => {
                tracing::error!(panic = %panic_message(p.as_ref()), "storage background thread panicked; restarting it");
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
            }
        }
    }
}

fn background_loop(shared: Arc<Shared>, regions: Arc<RwLock<HashMap<RegionId, Arc<Region>>>>, stopped: Arc<AtomicBool>, interval_ms: u64) {
    let period = std::time::Duration::from_millis(interval_ms);
    loop {
        {
            let mut g = shared.wake.0.lock();
            if *g {
                return;
            }
            shared.wake.1.wait_for(&mut g, period);
            if *g {
                return;
            }
        }
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        if let Err(e) = enforce_budget_contained(&shared, &regions) {
            tracing::warn!(error = %e, "background flush failed");
        }
        let all: Vec<Arc<Region>> = regions.read().values().cloned().collect();
        for r in all {
            if stopped.load(Ordering::SeqCst) {
                return;
            }
            contained(&r, "storage work", || r.background_work());
        }
    }
}
