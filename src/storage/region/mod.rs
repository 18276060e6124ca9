//! One region: WAL + memtable + SSTs, sequences, fences, change log, TTL,
//! flush and compaction.
//!
//! Owns a region's write path, read path and file lifecycle. Imports only
//! `crate::error` (and arrow/parquet through sibling modules); never sql,
//! planner, exec, server or flow.
//!
//! Write path with group commit. Under the region lock a writer takes the
//! next sequence (`appended_seq + 1`) and row ids, appends its WAL record
//! without syncing and queues its memtable chunk in `pending`. With
//! `wal_fsync` it then waits: if no sync is running it becomes the leader,
//! takes the highest appended sequence as its target and fsyncs the WAL
//! *outside* the lock, while later writers append and wait on `synced`; then
//! it publishes, under the lock, every pending chunk up to the target. The
//! next waiter whose sequence is still unpublished leads the next sync. A
//! write is acknowledged (returns) only once published.
//!
//! Invariant: `pending` holds exactly the sequences `last_seq + 1 ..=
//! appended_seq`, in order; the memtables (plus SSTs) hold the rows of
//! every sequence `<= last_seq` and of none above it; with `wal_fsync`,
//! every record `<= last_seq` is fsynced. Publishing moves a prefix of
//! `pending` into the memtable in sequence order and raises `last_seq` in
//! the same critical section, so `last_seq` (what [`Region::last_seq`]
//! reports and scans use as a snapshot bound) never has a gap below it and
//! a reader never sees a row that a crash could take away. A failed fsync
//! poisons the region's write path: the unpublished writes fail (they may
//! or may not survive a crash, as with any write that returned an error)
//! and later writes fail until the region is reopened, because the kernel
//! may have dropped the dirty pages (retrying fsync could report success).
//!
//! Transactions (see `txn.rs`): a transaction's writes to a region are one
//! WAL record (`OP_TXN`) taking two sequences, its tombstones at the first
//! and its rows at the second, so its rows win over the rows it replaces.
//! A record of a multi-region transaction is *held* in `pending` after its
//! fsync until the commit log decides: publishing stops at a held record
//! (later writers wait behind it), and the decision either publishes it or
//! publishes it empty. Replay skips `OP_TXN` records whose transaction has
//! no commit record. A record may carry an annex (`OP_TXN_ANNEX`): opaque
//! bytes durable with its rows (a stream's progress with its output); the
//! annexes still in the WAL at open are handed out once (`take_annexes`),
//! and WAL holds (`hold_wal`) keep segments past flushes until the annexes'
//! owner has made them durable elsewhere. A bulk load's staged SST is held the same way at a
//! sequence of its own (no WAL record; the manifest's `staged` entry makes
//! it durable): published, it joins the file list and is `unmanifested`
//! until the next flush lists it, and `flushed_through` covers it.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard};

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch, RecordBatchOptions, Scalar, UInt64Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::kernels::cmp;
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};

use super::codec::{decode_batch, encode_batch};
use super::memtable::{Chunk, Memtable};
use super::meta::{manifest_key, FileMeta, Manifest, StagedLoad};
use super::sst::{file_may_match, open_sst, read_sst, write_sst, PruneValue, SstFile, SstPredicate};
use super::version::{
    concat_all, prune_versions, put_mask, sort_batches, time_bounds, time_values, with_version, KeyEncoder, Layout, OP_DELETE, OP_PUT,
};
use super::wal::{LocalLog, LogStore};
use super::{ColumnCmp, RegionDescriptor, RegionId, ScanRequest, SeqBounds, SeqMode, SeqNo, Shared, WriteNotice, DIFF_COLUMN};
use crate::error::Result;

/// WAL record op for a write that stores nothing (instant TTL).
const OP_EMPTY: u8 = 2;
/// WAL record op for a transaction's writes to this region:
/// `op | rowid_start u64 | txn_id u64 | deletes_len u64 | deletes | puts`.
/// Transaction 0 is committed by the record itself (single-region commit).
const OP_TXN: u8 = 3;
/// As `OP_TXN` with an annex (`RegionWrites::annex`):
/// `op | rowid_start u64 | txn_id u64 | deletes_len u64 | puts_len u64 |
/// deletes | puts | annex`.
const OP_TXN_ANNEX: u8 = 4;

/// The WAL hold a region places at open on the records whose annexes it
/// recovered (see [`Region::take_annexes`]).
pub const RECOVERED_ANNEXES: &str = "recovered annexes";

/// An appended write waiting to be published.
struct Pending {
    /// First sequence of the write (`seq - 1` for a transaction record).
    first: SeqNo,
    seq: SeqNo,
    chunks: Vec<Chunk>,
    /// Waiting for a commit decision: nothing at or after it is published.
    held: bool,
    /// A staged bulk-load SST (no WAL record, no memtable chunk): its rows
    /// are in the file, installed at publish (see `write.rs`).
    staged: Option<(u64, Arc<SstFile>)>,
}

/// The parts of an `OP_TXN` or `OP_TXN_ANNEX` payload: transaction id,
/// encoded tombstones, encoded rows, annex (empty for `OP_TXN`).
fn split_txn_payload(payload: &[u8]) -> Result<(u64, &[u8], &[u8], &[u8])> {
    let annexed = payload.first() == Some(&OP_TXN_ANNEX);
    let head = if annexed { 33 } else { 25 };
    if payload.len() < head {
        crate::bail!(Corrupt, "transaction wal record is too short");
    }
    let txn = u64::from_le_bytes(payload[9..17].try_into().unwrap());
    let del_len = u64::from_le_bytes(payload[17..25].try_into().unwrap()) as usize;
    let rest = &payload[head..];
    if del_len > rest.len() {
        crate::bail!(Corrupt, "transaction wal record has a bad length");
    }
    let (del, rest) = rest.split_at(del_len);
    if !annexed {
        return Ok((txn, del, rest, &[]));
    }
    let put_len = u64::from_le_bytes(payload[25..33].try_into().unwrap()) as usize;
    if put_len > rest.len() {
        crate::bail!(Corrupt, "transaction wal record has a bad length");
    }
    let (put, annex) = rest.split_at(put_len);
    Ok((txn, del, put, annex))
}

/// Memtable chunks of a transaction record at `seq`: tombstones at
/// `seq - 1`, rows (with row ids from `rowid_start`) at `seq`.
fn txn_chunks(layout: &Layout, del: &RecordBatch, put: &RecordBatch, rowid_start: u64, seq: SeqNo) -> Result<Vec<Chunk>> {
    let mut out = Vec::new();
    if del.num_rows() > 0 {
        out.push(Chunk::new(layout, with_version(layout, del.columns().to_vec(), seq - 1, OP_DELETE)?, seq - 1)?);
    }
    let n = put.num_rows() as u64;
    if n > 0 {
        let mut cols = put.columns().to_vec();
        cols.push(Arc::new(UInt64Array::from_iter_values(rowid_start..rowid_start + n)));
        out.push(Chunk::new(layout, with_version(layout, cols, seq, OP_PUT)?, seq)?);
    }
    Ok(out)
}

pub(super) fn region_dir_name(id: RegionId) -> String {
    format!("region_{id:016x}")
}

/// Observable state of a region (`information_schema.region_statistics`).
#[derive(Debug, Clone, Default)]
pub struct RegionStats {
    pub memtable_rows: usize,
    pub memtable_bytes: usize,
    /// Memtables frozen and being flushed.
    pub frozen_memtables: usize,
    pub sst_count: usize,
    pub sst_bytes: u64,
    pub sst_rows: u64,
    pub wal_bytes: u64,
    pub last_seq: SeqNo,
    pub flushed_seq: SeqNo,
    /// Exact reads need snapshots at or above this (see [`Region::hold_versions`]).
    pub history_seq: SeqNo,
    pub generation: u64,
    pub ssts_read: u64,
    pub ssts_pruned: u64,
    pub row_groups_read: u64,
    pub row_groups_pruned: u64,
    pub flushes: u64,
    pub compactions: u64,
    /// WAL fsyncs of writes (one may cover many writes: group commit).
    pub wal_syncs: u64,
    /// Panics caught in this region's background flush or compaction.
    pub background_panics: u64,
    /// Last-row-per-series reads answered from the cache (brought forward
    /// by the rows written since, if any).
    pub last_row_hits: u64,
    /// Last-row-per-series reads that scanned the region.
    pub last_row_scans: u64,
    /// SST row groups of this region read from the decoded-column cache.
    pub decoded_cache_hits: u64,
    /// SST row groups of this region decoded whole and put in the cache.
    pub decoded_cache_fills: u64,
    /// Bytes in the decoded-column cache (engine-wide, all regions).
    pub decoded_cache_bytes: u64,
}

#[derive(Default)]
struct Counters {
    ssts_read: AtomicU64,
    ssts_pruned: AtomicU64,
    row_groups_read: AtomicU64,
    row_groups_pruned: AtomicU64,
    flushes: AtomicU64,
    compactions: AtomicU64,
    wal_syncs: AtomicU64,
    background_panics: AtomicU64,
    last_row_hits: AtomicU64,
    last_row_scans: AtomicU64,
}

struct Inner {
    mem: Memtable,
    /// Frozen memtables whose flush has not committed yet, oldest first.
    frozen: Vec<Arc<Memtable>>,
    log: Box<dyn LogStore>,
    /// Highest published sequence: visible, and durable when the WAL syncs.
    last_seq: SeqNo,
    /// Highest sequence appended to the WAL (published or not).
    appended_seq: SeqNo,
    /// Appended, not yet published writes (`last_seq + 1 ..= appended_seq`)
    /// with their memtable chunks.
    pending: VecDeque<Pending>,
    /// Highest sequence known to be durable (every sequence when the WAL
    /// does not sync).
    synced_seq: SeqNo,
    /// A group-commit leader is syncing the WAL.
    syncing: bool,
    /// Set when a WAL sync failed: the write path is closed.
    wal_failed: Option<String>,
    next_rowid: u64,
    manifest: Arc<Manifest>,
    /// The exact bytes in the metadata store, for compare-and-set.
    manifest_bytes: Vec<u8>,
    files: Arc<Vec<Arc<SstFile>>>,
    /// Published files of committed bulk loads that the manifest does not
    /// list in `files` yet (with their transaction id); the next flush
    /// commits them and moves `flushed_seq` past them.
    unmanifested: Vec<(u64, Arc<SstFile>)>,
    /// Highest published sequence that deleted rows (0: none since open).
    last_delete_seq: SeqNo,
}

impl Inner {
    /// Every write up to this sequence is in SSTs: `flushed_seq`, or past
    /// it the newest published bulk-load file the manifest does not list
    /// yet (memtable-only reads must start at or after it).
    fn flushed_through(&self) -> SeqNo {
        self.unmanifested.iter().map(|(_, f)| f.meta.seq_range.1).fold(self.manifest.flushed_seq, SeqNo::max)
    }
}

/// A region: the unit of storage, sequencing and distribution.
pub struct Region {
    pub id: RegionId,
    pub desc: RegionDescriptor,
    layout: Layout,
    keys: KeyEncoder,
    shared: Arc<Shared>,
    inner: Mutex<Inner>,
    /// Signalled (with `inner`) when a group-commit sync ends.
    synced: Condvar,
    /// Serializes flushes.
    flush_lock: Mutex<()>,
    /// Serializes compactions.
    compact_lock: Mutex<()>,
    /// Serializes manifest edits (flush and compaction both commit).
    manifest_lock: Mutex<()>,
    holds: Mutex<BTreeMap<String, SeqNo>>,
    /// WAL holds: no segment with a record at or after the lowest is
    /// deleted ([`Region::hold_wal`]).
    wal_holds: Mutex<BTreeMap<String, SeqNo>>,
    /// Annexes found in the WAL at open, in sequence order, until taken.
    annexes: Mutex<Vec<(SeqNo, Vec<u8>)>>,
    next_file_id: AtomicU64,
    closed: AtomicBool,
    /// Writes refused while a statement rewrites the table (ALTER TABLE's
    /// copy), so none lands in regions about to be dropped.
    fenced: AtomicBool,
    counters: Counters,
    /// Last row per series at a sequence (see `lastrow.rs`).
    last_rows: Mutex<Option<lastrow::LastRowCache>>,
    /// Row groups read from / decoded into the decoded-column cache.
    cache_counts: Arc<[AtomicU64; 2]>,
}

impl Region {
    pub(super) fn open(id: RegionId, desc: RegionDescriptor, shared: Arc<Shared>) -> Result<Region> {
        let layout = Layout::new(&desc);
        let keys = KeyEncoder::new(&layout)?;
        let dir = shared.root.join(region_dir_name(id));
        let sst_prefix = format!("{}/sst/", region_dir_name(id));
        let key = manifest_key(id);
        let key_text = String::from_utf8_lossy(&key).into_owned();
        let (mut manifest, old_bytes) = match shared.meta.get(&key)? {
            Some(b) => (Manifest::decode(id, &b)?, Some(b)),
            None => {
                let wal_dir = dir.join("wal");
                let has_wal = std::fs::read_dir(&wal_dir)
                    .map(|rd| rd.flatten().any(|e| e.metadata().map(|m| m.len() > 0).unwrap_or(false)))
                    .unwrap_or(false);
                let has_sst = !shared.store.list(&sst_prefix)?.is_empty();
                if has_wal || has_sst {
                    return Err(crate::err!(Corrupt, "manifest {key_text} is missing")
                        .with_detail(format!("region directory {} holds data but the metadata store has no manifest", dir.display()))
                        .with_hint("restore the storage metadata directory from a backup"));
                }
                (Manifest { region_id: id, next_rowid: 1, next_file_id: 1, ..Default::default() }, None)
            }
        };
        // Bulk loads prepared before a crash: kept when their transaction
        // committed (installed below, then flushed into `files`), else gone.
        let mut installed: Vec<(u64, FileMeta)> = Vec::new();
        let mut staged_rowid = 0u64;
        for load in std::mem::take(&mut manifest.staged) {
            if shared.txns.committed_at_open(load.txn) {
                staged_rowid = staged_rowid.max(load.next_rowid);
                installed.extend(load.files.iter().map(|f| (load.txn, f.clone())));
                manifest.staged.push(load);
            } else {
                tracing::info!(region = id, txn = load.txn, files = load.files.len(), "removing the files of an uncommitted bulk load");
            }
        }
        manifest.generation += 1;
        manifest.version += 1;
        let bytes = manifest.encode();
        if !shared.meta.compare_and_set(&key, old_bytes.as_deref(), Some(&bytes))? {
            crate::bail!(Storage, "manifest {key_text} changed while opening the region");
        }
        let mut files = Vec::with_capacity(manifest.files.len());
        for fm in &manifest.files {
            files.push(Arc::new(open_sst(&shared.store, fm, shared.tuning.sst_verify_crc)?));
        }
        // Files the manifest does not name: a flush or compaction that crashed
        // before its commit.
        let named: HashSet<&str> = manifest.files.iter().chain(installed.iter().map(|(_, f)| f)).map(|f| f.path.as_str()).collect();
        for path in shared.store.list(&sst_prefix)? {
            if !named.contains(path.as_str()) {
                tracing::info!(path = %path, "removing unreferenced sst");
                shared.store.delete(&path)?;
            }
        }
        let mut log = LocalLog::open(&dir.join("wal"), shared.config.wal_fsync)?;
        let mut mem = Memtable::default();
        let mut last_seq = manifest.flushed_seq;
        let mut next_rowid = manifest.next_rowid.max(1).max(staged_rowid);
        let instant = desc.ttl_ms == Some(0);
        // Annexes of committed records, also in segments a WAL hold kept past
        // the flushed sequence (their rows are in SSTs: only the annex is read).
        let mut annexes: Vec<(SeqNo, Vec<u8>)> = Vec::new();
        let flushed_seq = manifest.flushed_seq;
        log.read_from(0, &mut |seq, payload| {
            if payload.len() < 9 {
                crate::bail!(Corrupt, "wal record {seq} of region {id} is too short");
            }
            let op = payload[0];
            if op == OP_TXN_ANNEX {
                let (txn, _, _, annex) = split_txn_payload(payload)?;
                if txn == 0 || shared.txns.committed_at_open(txn) {
                    annexes.push((seq, annex.to_vec()));
                }
            }
            if seq <= flushed_seq {
                return Ok(());
            }
            let rowid_start = u64::from_le_bytes(payload[1..9].try_into().unwrap());
            match op {
                OP_PUT => {
                    let user = decode_batch(&layout.user, &payload[9..])?;
                    let n = user.num_rows() as u64;
                    next_rowid = next_rowid.max(rowid_start + n);
                    if !instant && n > 0 {
                        let mut cols = user.columns().to_vec();
                        cols.push(Arc::new(UInt64Array::from_iter_values(rowid_start..rowid_start + n)));
                        mem.push(&layout, Chunk::new(&layout, with_version(&layout, cols, seq, OP_PUT)?, seq)?)?;
                    }
                }
                OP_DELETE => {
                    let stored = decode_batch(&layout.stored, &payload[9..])?;
                    if !instant && stored.num_rows() > 0 {
                        let full = with_version(&layout, stored.columns().to_vec(), seq, OP_DELETE)?;
                        mem.push(&layout, Chunk::new(&layout, full, seq)?)?;
                    }
                }
                OP_EMPTY => {}
                OP_TXN | OP_TXN_ANNEX => {
                    let (txn, del, put, _) = split_txn_payload(payload)?;
                    let del = decode_batch(&layout.stored, del)?;
                    let put = decode_batch(&layout.user, put)?;
                    let n = put.num_rows() as u64;
                    next_rowid = next_rowid.max(rowid_start + n);
                    if (txn == 0 || shared.txns.committed_at_open(txn)) && !instant {
                        for c in txn_chunks(&layout, &del, &put, rowid_start, seq)? {
                            mem.push(&layout, c)?;
                        }
                    }
                }
                other => crate::bail!(Corrupt, "wal record {seq} of region {id} has unknown op {other}"),
            }
            last_seq = seq;
            Ok(())
        })
        .map_err(|e| {
            let detail = e.message.clone();
            crate::err!(Corrupt, "cannot replay the wal of region {id}")
                .with_detail(detail)
                .with_hint(format!("the wal lives in {}", dir.join("wal").display()))
        })?;
        shared.mem_used.fetch_add(mem.bytes, Ordering::Relaxed);
        let mut unmanifested = Vec::with_capacity(installed.len());
        for (txn, fm) in &installed {
            let f = Arc::new(open_sst(&shared.store, fm, shared.tuning.sst_verify_crc)?);
            last_seq = last_seq.max(fm.seq_range.1);
            files.push(f.clone());
            unmanifested.push((*txn, f));
        }
        let next_file_id = manifest.next_file_id.max(1);
        let region = Region {
            id,
            desc,
            layout,
            keys,
            inner: Mutex::new(Inner {
                mem,
                frozen: Vec::new(),
                log: Box::new(log),
                last_seq,
                appended_seq: last_seq,
                pending: VecDeque::new(),
                synced_seq: last_seq,
                syncing: false,
                wal_failed: None,
                next_rowid,
                manifest: Arc::new(manifest),
                manifest_bytes: bytes,
                files: Arc::new(files),
                unmanifested,
                last_delete_seq: 0,
            }),
            shared,
            synced: Condvar::new(),
            flush_lock: Mutex::new(()),
            compact_lock: Mutex::new(()),
            manifest_lock: Mutex::new(()),
            holds: Mutex::new(BTreeMap::new()),
            // Recovered annexes keep their WAL until taken and released.
            wal_holds: Mutex::new(annexes.first().map(|(s, _)| (RECOVERED_ANNEXES.to_string(), *s)).into_iter().collect()),
            annexes: Mutex::new(annexes),
            next_file_id: AtomicU64::new(next_file_id),
            closed: AtomicBool::new(false),
            fenced: AtomicBool::new(false),
            counters: Counters::default(),
            last_rows: Mutex::new(None),
            cache_counts: Arc::new([AtomicU64::new(0), AtomicU64::new(0)]),
        };
        if !installed.is_empty() {
            tracing::info!(region = id, files = installed.len(), "installing the files of committed bulk loads");
            region.flush()?;
        }
        Ok(region)
    }

    /// Stop background work on this region (dropped or engine closing).
    pub(super) fn close(&self) {
        // Under the write lock: a write either got in before (and is part of
        // what the drop removes) or sees `closed` and fails; none is
        // acknowledged into a region that is gone.
        let inner = self.inner.lock();
        self.closed.store(true, Ordering::SeqCst);
        let bytes = inner.mem.bytes + inner.frozen.iter().map(|m| m.bytes).sum::<usize>();
        drop(inner);
        let _ = self.shared.mem_used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(bytes)));
    }

    /// Refuse further writes (40001) and wait until every write appended
    /// before is visible, so a scan started now sees all acknowledged rows.
    /// A statement that rewrites the table into new regions fences the old
    /// ones for its copy ([`Region::unfence_writes`] if it gives up).
    pub fn fence_writes(&self) -> Result<()> {
        let inner = self.inner.lock();
        self.fenced.store(true, Ordering::SeqCst);
        let target = inner.appended_seq;
        self.wait_synced(inner, target).map(drop)
    }

    pub fn unfence_writes(&self) {
        let _inner = self.inner.lock();
        self.fenced.store(false, Ordering::SeqCst);
    }

    /// Called with the write lock held by every write path: a failed WAL,
    /// a dropped region or a fenced one refuses the write.
    fn check_writable(&self, inner: &Inner) -> Result<()> {
        if let Some(e) = &inner.wal_failed {
            return Err(self.wal_failed_error(e));
        }
        if self.closed.load(Ordering::SeqCst) || self.fenced.load(Ordering::SeqCst) {
            return Err(crate::err!(
                SerializationFailure,
                "could not write to region {}: its table was rewritten or dropped by a concurrent statement",
                self.id
            )
            .with_hint("Retry the statement."));
        }
        Ok(())
    }

    /// The schema of rows with their row ids (user columns plus `__rowid`),
    /// as a scan with `with_rowid` returns them.
    pub fn stored_schema(&self) -> arrow::datatypes::SchemaRef {
        self.layout.stored.clone()
    }

    /// Latest acknowledged sequence: every write up to it is visible (and
    /// durable when the WAL syncs), none after it; a gap-free snapshot bound.
    pub fn last_seq(&self) -> SeqNo {
        self.inner.lock().last_seq
    }

    /// Rows in SSTs and the least and greatest time index over them (by
    /// the files' manifest entries): an estimate of how rows spread over
    /// time, for the executor's choices. No SST with a time range: None.
    pub fn sst_time_spread(&self) -> Option<(u64, (i64, i64))> {
        let inner = self.inner.lock();
        let mut rows = 0u64;
        let mut bounds: Option<(i64, i64)> = None;
        for f in inner.files.iter() {
            let (lo, hi) = f.meta.time_range?;
            rows += f.meta.rows;
            bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
        bounds.map(|b| (rows, b))
    }

    /// Bulk loads named in the manifest, published files it does not list
    /// yet, and the files it lists (for tests).
    #[cfg(test)]
    pub(in crate::storage) fn bulk_state(&self) -> (usize, usize, usize) {
        let inner = self.inner.lock();
        (inner.manifest.staged.len(), inner.unmanifested.len(), inner.manifest.files.len())
    }

    /// Every write up to this sequence is in SSTs.
    pub fn flushed_seq(&self) -> SeqNo {
        self.inner.lock().flushed_through()
    }

    pub(super) fn memtable_bytes(&self) -> usize {
        self.inner.lock().mem.bytes
    }

    fn ttl_cutoff(&self) -> Option<i64> {
        let ttl = self.desc.ttl_ms?;
        self.desc.time_index?;
        let now_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0);
        Some(now_us.saturating_sub(ttl.saturating_mul(1000)))
    }

    /// The oldest sequence some reader still needs versions at.
    fn horizon(&self) -> SeqNo {
        self.holds.lock().values().copied().min().unwrap_or(SeqNo::MAX)
    }

    /// Keep every version visible at snapshot `seq` and later (for exact
    /// scans and [`Region::changes`] from `seq`) until released; calling it
    /// again for the same holder moves the hold.
    pub fn hold_versions(&self, holder: &str, seq: SeqNo) -> Result<()> {
        let history = self.inner.lock().manifest.history_seq;
        if seq < history {
            return Err(crate::err!(SequenceRangeUnsupported, "versions at sequence {seq} of region {} are gone", self.id)
                .with_detail(format!("versions replaced at or before sequence {history} may have been compacted away"))
                .with_hint("hold from a full snapshot at the current sequence instead"));
        }
        self.holds.lock().insert(holder.to_string(), seq);
        Ok(())
    }

    /// Drop a hold placed by [`Region::hold_versions`].
    pub fn release_versions(&self, holder: &str) {
        self.holds.lock().remove(holder);
    }

    /// Keep the WAL records from `seq` on (with their annexes) past flushes
    /// until released: a writer whose annex is its progress holds them
    /// until that progress is durable elsewhere. Calling it again for the
    /// same holder keeps the lower sequence.
    pub fn hold_wal(&self, holder: &str, seq: SeqNo) {
        let mut h = self.wal_holds.lock();
        let e = h.entry(holder.to_string()).or_insert(seq);
        *e = (*e).min(seq);
    }

    /// Drop a hold placed by [`Region::hold_wal`] (the next flush deletes
    /// the segments it kept).
    pub fn release_wal(&self, holder: &str) {
        self.wal_holds.lock().remove(holder);
    }

    /// The WAL records from this sequence on are kept (`SeqNo::MAX`: none held).
    fn wal_floor(&self) -> SeqNo {
        self.wal_holds.lock().values().copied().min().unwrap_or(SeqNo::MAX)
    }

    /// The annexes of the committed records the WAL held at open (sequence,
    /// bytes), oldest first; once. They stay in the WAL, held under
    /// [`RECOVERED_ANNEXES`], until the taker releases that hold.
    pub fn take_annexes(&self) -> Vec<(SeqNo, Vec<u8>)> {
        std::mem::take(&mut *self.annexes.lock())
    }

    /// Sizes, sequences and read counters.
    /// Count a panic caught in this region's background work.
    pub(super) fn count_background_panic(&self) {
        self.counters.background_panics.fetch_add(1, Ordering::Relaxed);
    }

    pub fn stats(&self) -> RegionStats {
        let inner = self.inner.lock();
        let c = &self.counters;
        RegionStats {
            memtable_rows: inner.mem.rows + inner.frozen.iter().map(|m| m.rows).sum::<usize>(),
            memtable_bytes: inner.mem.bytes + inner.frozen.iter().map(|m| m.bytes).sum::<usize>(),
            frozen_memtables: inner.frozen.len(),
            sst_count: inner.files.len(),
            sst_bytes: inner.files.iter().map(|f| f.meta.bytes).sum(),
            sst_rows: inner.files.iter().map(|f| f.meta.rows).sum(),
            wal_bytes: inner.log.bytes(),
            last_seq: inner.last_seq,
            flushed_seq: inner.manifest.flushed_seq,
            history_seq: inner.manifest.history_seq,
            generation: inner.manifest.generation,
            ssts_read: c.ssts_read.load(Ordering::Relaxed),
            ssts_pruned: c.ssts_pruned.load(Ordering::Relaxed),
            row_groups_read: c.row_groups_read.load(Ordering::Relaxed),
            row_groups_pruned: c.row_groups_pruned.load(Ordering::Relaxed),
            flushes: c.flushes.load(Ordering::Relaxed),
            compactions: c.compactions.load(Ordering::Relaxed),
            wal_syncs: c.wal_syncs.load(Ordering::Relaxed),
            background_panics: c.background_panics.load(Ordering::Relaxed),
            last_row_hits: c.last_row_hits.load(Ordering::Relaxed),
            last_row_scans: c.last_row_scans.load(Ordering::Relaxed),
            decoded_cache_hits: self.cache_counts[0].load(Ordering::Relaxed),
            decoded_cache_fills: self.cache_counts[1].load(Ordering::Relaxed),
            decoded_cache_bytes: self.shared.column_cache.stats().bytes,
        }
    }
}

mod changes;
mod compact;
mod flush;
mod lastrow;
mod merge;
mod read;
pub use read::RegionScan;
mod write;

#[cfg(test)]
pub(super) mod tests;
