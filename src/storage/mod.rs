//! Storage: regions with sequence numbers (WAL, memtable; Parquet SSTs later).
//!
//! Owns every byte on disk except the catalog. May import `error` and
//! `types` only: never `sql`, `planner`, `exec`, `server` or `flow`. Writes
//! are reported to whoever subscribes through [`WriteListener`].

mod region;

pub use region::Region;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use arrow::datatypes::SchemaRef;

use crate::error::Result;

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

/// Sequence bounds of a scan (seed 001 fences).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqBounds {
    /// Exclusive lower bound: only rows with seq > after.
    pub after: Option<SeqNo>,
    /// Inclusive snapshot upper bound.
    pub upto: Option<SeqNo>,
}

/// Equality filter on one column, used for pruning and filtering.
#[derive(Debug, Clone)]
pub struct ColumnEq {
    pub column: usize,
    pub value: arrow::array::ArrayRef, // a one-element array
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
    pub seq: SeqBounds,
    /// Append a UInt64 `__rowid` column (identity for DELETE / UPDATE).
    pub with_rowid: bool,
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
}

/// Receives a notice after each acknowledged write. Storage does not know
/// who listens.
pub trait WriteListener: Send + Sync {
    fn on_write(&self, notice: &WriteNotice);
}

/// Storage options, from `[storage]` in the config.
#[derive(Debug, Clone)]
pub struct StorageConfig {
    /// fsync the WAL on every write batch.
    pub wal_fsync: bool,
    pub memtable_bytes_max: usize,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig { wal_fsync: true, memtable_bytes_max: 64 << 20 }
    }
}

/// All regions of this process.
pub struct StorageEngine {
    dir: PathBuf,
    config: StorageConfig,
    regions: RwLock<HashMap<RegionId, Arc<Region>>>,
    listeners: Arc<Mutex<Vec<Arc<dyn WriteListener>>>>,
}

impl StorageEngine {
    pub fn open(dir: &Path, config: StorageConfig) -> Result<StorageEngine> {
        std::fs::create_dir_all(dir)?;
        Ok(StorageEngine {
            dir: dir.to_path_buf(),
            config,
            regions: RwLock::new(HashMap::new()),
            listeners: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// Create (or reopen after restart) a region; replays what it has on disk.
    pub fn open_region(&self, id: RegionId, desc: RegionDescriptor) -> Result<Arc<Region>> {
        if let Some(r) = self.regions.read().unwrap().get(&id) {
            return Ok(r.clone());
        }
        let dir = self.dir.join(format!("region_{id:016x}"));
        let region = Arc::new(Region::open(id, desc, &dir, self.config.clone(), self.listeners.clone())?);
        self.regions.write().unwrap().insert(id, region.clone());
        Ok(region)
    }

    /// Drop a region and delete its files.
    pub fn drop_region(&self, id: RegionId) -> Result<()> {
        self.regions.write().unwrap().remove(&id);
        let dir = self.dir.join(format!("region_{id:016x}"));
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        Ok(())
    }

    pub fn region(&self, id: RegionId) -> Option<Arc<Region>> {
        self.regions.read().unwrap().get(&id).cloned()
    }

    pub fn subscribe(&self, listener: Arc<dyn WriteListener>) {
        self.listeners.lock().unwrap().push(listener);
    }
}
