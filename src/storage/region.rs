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
//! no commit record.

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
use super::meta::{manifest_key, Manifest};
use super::sst::{file_may_match, open_sst, read_sst, write_sst, PruneValue, SstFile, SstPredicate};
use super::version::{
    concat_all, newest_mask, prune_versions, put_mask, sort_batches, time_bounds, time_values, with_version, KeyEncoder, Keys, Layout,
    OP_DELETE, OP_PUT,
};
use super::wal::{LocalLog, LogStore};
use super::{RegionDescriptor, RegionId, ScanRequest, SeqMode, SeqNo, Shared, WriteNotice, DIFF_COLUMN};
use crate::error::Result;

/// WAL record op for a write that stores nothing (instant TTL).
const OP_EMPTY: u8 = 2;
/// WAL record op for a transaction's writes to this region:
/// `op | rowid_start u64 | txn_id u64 | deletes_len u64 | deletes | puts`.
/// Transaction 0 is committed by the record itself (single-region commit).
const OP_TXN: u8 = 3;

/// An appended write waiting to be published.
struct Pending {
    /// First sequence of the write (`seq - 1` for a transaction record).
    first: SeqNo,
    seq: SeqNo,
    chunks: Vec<Chunk>,
    /// Waiting for a commit decision: nothing at or after it is published.
    held: bool,
}

/// The parts of an `OP_TXN` payload: transaction id, encoded tombstones,
/// encoded rows.
fn split_txn_payload(payload: &[u8]) -> Result<(u64, &[u8], &[u8])> {
    if payload.len() < 25 {
        crate::bail!(Corrupt, "transaction wal record is too short");
    }
    let txn = u64::from_le_bytes(payload[9..17].try_into().unwrap());
    let del_len = u64::from_le_bytes(payload[17..25].try_into().unwrap()) as usize;
    let rest = &payload[25..];
    if del_len > rest.len() {
        crate::bail!(Corrupt, "transaction wal record has a bad length");
    }
    Ok((txn, &rest[..del_len], &rest[del_len..]))
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
}

/// What a read sees, taken under the lock in one step.
struct Snapshot {
    /// Memtable chunks with their time ranges.
    mem: Vec<(RecordBatch, Option<(i64, i64)>)>,
    /// `mem[overlay_from..]` are a transaction's own uncommitted writes:
    /// newer than everything, never cut by sequence bounds.
    overlay_from: usize,
    files: Arc<Vec<Arc<SstFile>>>,
    flushed_seq: SeqNo,
    history_seq: SeqNo,
    last_seq: SeqNo,
}

/// Rows read from one memtable or SST.
struct Source {
    batches: Vec<RecordBatch>,
    /// Time range the source may cover (None: unknown or no time index).
    time: Option<(i64, i64)>,
    /// No two rows share an identity.
    distinct: bool,
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
    next_file_id: AtomicU64,
    closed: AtomicBool,
    counters: Counters,
}

fn scalar_u64(v: u64) -> Scalar<UInt64Array> {
    Scalar::new(UInt64Array::from(vec![v]))
}

fn scalar_i64(v: i64) -> Scalar<Int64Array> {
    Scalar::new(Int64Array::from(vec![v]))
}

fn and(a: Option<BooleanArray>, b: BooleanArray) -> Result<Option<BooleanArray>> {
    Ok(Some(match a {
        None => b,
        Some(a) => arrow::compute::and(&a, &b)?,
    }))
}

/// Row filters of a read, on full-schema columns.
#[derive(Clone)]
struct RowFilter {
    seq_after: Option<SeqNo>,
    seq_upto: Option<SeqNo>,
    time: Option<(i64, i64)>,
    ttl_cutoff: Option<i64>,
    eq: Vec<(usize, ArrayRef)>,
}

/// The time range a read keeps, TTL included.
fn sst_time(f: &RowFilter) -> Option<(i64, i64)> {
    match (f.time, f.ttl_cutoff) {
        (Some((lo, hi)), Some(cut)) => Some((lo.max(cut), hi)),
        (Some(r), None) => Some(r),
        (None, Some(cut)) => Some((cut, i64::MAX)),
        (None, None) => None,
    }
}

fn prune_eq(f: &RowFilter) -> Vec<(usize, PruneValue)> {
    f.eq.iter().filter_map(|(c, v)| PruneValue::from_array(v).map(|p| (*c, p))).collect()
}

fn overlaps(a: (i64, i64), b: (i64, i64)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
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
        let named: HashSet<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
        for path in shared.store.list(&sst_prefix)? {
            if !named.contains(path.as_str()) {
                tracing::info!(path = %path, "removing unreferenced sst");
                shared.store.delete(&path)?;
            }
        }
        let mut log = LocalLog::open(&dir.join("wal"), shared.config.wal_fsync)?;
        let mut mem = Memtable::default();
        let mut last_seq = manifest.flushed_seq;
        let mut next_rowid = manifest.next_rowid.max(1);
        let instant = desc.ttl_ms == Some(0);
        log.read_from(manifest.flushed_seq + 1, &mut |seq, payload| {
            if payload.len() < 9 {
                crate::bail!(Corrupt, "wal record {seq} of region {id} is too short");
            }
            let op = payload[0];
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
                OP_TXN => {
                    let (txn, del, put) = split_txn_payload(payload)?;
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
        let next_file_id = manifest.next_file_id.max(1);
        Ok(Region {
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
            }),
            shared,
            synced: Condvar::new(),
            flush_lock: Mutex::new(()),
            compact_lock: Mutex::new(()),
            manifest_lock: Mutex::new(()),
            holds: Mutex::new(BTreeMap::new()),
            next_file_id: AtomicU64::new(next_file_id),
            closed: AtomicBool::new(false),
            counters: Counters::default(),
        })
    }

    /// Stop background work on this region (dropped or engine closing).
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let inner = self.inner.lock();
        let bytes = inner.mem.bytes + inner.frozen.iter().map(|m| m.bytes).sum::<usize>();
        drop(inner);
        let _ = self.shared.mem_used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(bytes)));
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

    /// Every write up to this sequence is in SSTs.
    pub fn flushed_seq(&self) -> SeqNo {
        self.inner.lock().manifest.flushed_seq
    }

    pub(super) fn memtable_bytes(&self) -> usize {
        self.inner.lock().mem.bytes
    }

    /// Insert rows (all user columns, table order). Returns the sequence.
    pub fn write(&self, batch: &RecordBatch) -> Result<SeqNo> {
        if batch.num_columns() != self.layout.ncols {
            crate::bail!(Internal, "write to region {} has {} columns, the table has {}", self.id, batch.num_columns(), self.layout.ncols);
        }
        let user = RecordBatch::try_new_with_options(
            self.layout.user.clone(),
            batch.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?;
        self.append(OP_PUT, &user)
    }

    /// Delete rows as returned by a scan with `with_rowid` (all user columns
    /// plus `__rowid`): a tombstone for each row's identity.
    pub fn delete(&self, rows: &RecordBatch) -> Result<SeqNo> {
        if rows.num_columns() != self.layout.ncols + 1 {
            crate::bail!(
                Internal,
                "delete from region {} has {} columns, expected all {} columns plus __rowid",
                self.id,
                rows.num_columns(),
                self.layout.ncols
            );
        }
        let stored = RecordBatch::try_new_with_options(
            self.layout.stored.clone(),
            rows.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(rows.num_rows())),
        )?;
        self.append(OP_DELETE, &stored)
    }

    fn append(&self, op: u8, batch: &RecordBatch) -> Result<SeqNo> {
        let n = batch.num_rows();
        let instant = self.desc.ttl_ms == Some(0);
        let mut payload = Vec::with_capacity(64 + batch.get_array_memory_size());
        payload.push(if instant { OP_EMPTY } else { op });
        payload.extend_from_slice(&[0u8; 8]);
        if !instant {
            encode_batch(batch, &mut payload)?;
        }
        let cfg = &self.shared.config;
        let tun = &self.shared.tuning;
        let (seq, flush_needed) = {
            let mut inner = self.inner.lock();
            if let Some(e) = &inner.wal_failed {
                return Err(self.wal_failed_error(e));
            }
            let seq = inner.appended_seq + 1;
            let rowid_start = inner.next_rowid;
            payload[1..9].copy_from_slice(&rowid_start.to_le_bytes());
            let chunk = if !instant && n > 0 {
                let mut cols = batch.columns().to_vec();
                if op == OP_PUT {
                    cols.push(Arc::new(UInt64Array::from_iter_values(rowid_start..rowid_start + n as u64)));
                }
                Some(Chunk::new(&self.layout, with_version(&self.layout, cols, seq, op)?, seq)?)
            } else {
                None
            };
            inner.log.append_unsynced(seq, &payload)?;
            inner.appended_seq = seq;
            if op == OP_PUT {
                inner.next_rowid += n as u64;
            }
            inner.pending.push_back(Pending { first: seq, seq, chunks: chunk.into_iter().collect(), held: false });
            if !self.shared.config.wal_fsync {
                inner.synced_seq = seq;
                self.publish(&mut inner, seq)?;
            }
            inner = self.wait_synced(inner, seq)?;
            (seq, inner.mem.bytes > cfg.memtable_bytes_max || inner.log.bytes() > tun.wal_bytes_max)
        };
        self.notify(seq, batch, n);
        self.flush_checks(flush_needed);
        Ok(seq)
    }

    /// Group commit: return once `seq` is published, leading a WAL sync when
    /// none is running (see the module header).
    fn wait_synced<'a>(&'a self, mut inner: MutexGuard<'a, Inner>, seq: SeqNo) -> Result<MutexGuard<'a, Inner>> {
        loop {
            if inner.last_seq >= seq {
                return Ok(inner);
            }
            if let Some(e) = &inner.wal_failed {
                return Err(self.wal_failed_error(e));
            }
            // Durable but behind a held transaction record: wait for its
            // decision.
            if inner.syncing || inner.synced_seq >= seq {
                self.synced.wait(&mut inner);
                continue;
            }
            inner = self.lead_sync(inner);
        }
    }

    /// Become the group-commit leader: fsync every appended record outside
    /// the lock, then publish what is durable.
    fn lead_sync<'a>(&'a self, mut inner: MutexGuard<'a, Inner>) -> MutexGuard<'a, Inner> {
        inner.syncing = true;
        let target = inner.appended_seq;
        let handle = inner.log.sync_handle();
        drop(inner);
        let synced = match &handle {
            Some(h) => h.sync(),
            None => Ok(()),
        };
        if handle.is_some() {
            self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
        }
        let mut inner = self.inner.lock();
        inner.syncing = false;
        let published = synced.and_then(|()| {
            inner.synced_seq = inner.synced_seq.max(target);
            self.publish(&mut inner, target)
        });
        if let Err(e) = published {
            tracing::error!(region = self.id, error = %e, "wal sync failed; writes to the region fail until it is reopened");
            inner.wal_failed = Some(e.to_string());
        }
        self.synced.notify_all();
        inner
    }

    /// Return once every record up to `seq` is durable (published or not).
    fn wait_durable<'a>(&'a self, mut inner: MutexGuard<'a, Inner>, seq: SeqNo) -> Result<MutexGuard<'a, Inner>> {
        loop {
            if inner.synced_seq >= seq {
                return Ok(inner);
            }
            if let Some(e) = &inner.wal_failed {
                return Err(self.wal_failed_error(e));
            }
            if inner.syncing {
                self.synced.wait(&mut inner);
                continue;
            }
            inner = self.lead_sync(inner);
        }
    }

    /// Write a transaction's part for this region as one WAL record.
    /// `txn == 0`: a single-region transaction, committed by the record and
    /// published on return. Otherwise the record is durable on return but
    /// held until [`Region::decide_txn`]. Returns the record's sequence.
    pub(super) fn append_txn(&self, txn: u64, w: &super::txn::RegionWrites) -> Result<SeqNo> {
        self.append_txn_with(txn, w, true)
    }

    /// As [`Region::append_txn`] for a held record (`txn != 0`) without
    /// waiting for its fsync: a bulk load appends many records and syncs
    /// once ([`Region::sync_through`]) before its commit record.
    pub(super) fn append_held_unsynced(&self, txn: u64, w: &super::txn::RegionWrites) -> Result<SeqNo> {
        debug_assert!(txn != 0);
        self.append_txn_with(txn, w, false)
    }

    /// Return once every record up to `seq` is durable.
    pub(super) fn sync_through(&self, seq: SeqNo) -> Result<()> {
        let inner = self.inner.lock();
        self.wait_durable(inner, seq).map(drop)
    }

    fn append_txn_with(&self, txn: u64, w: &super::txn::RegionWrites, wait_durable: bool) -> Result<SeqNo> {
        let del = concat_all(&self.layout.stored, &w.deletes)?;
        let puts: Vec<RecordBatch> =
            w.puts.iter().map(|b| b.project(&(0..self.layout.ncols).collect::<Vec<_>>())).collect::<std::result::Result<_, _>>()?;
        let put = concat_all(&self.layout.user, &puts)?;
        let put = RecordBatch::try_new_with_options(
            self.layout.user.clone(),
            put.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(put.num_rows())),
        )?;
        let del = RecordBatch::try_new_with_options(
            self.layout.stored.clone(),
            del.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(del.num_rows())),
        )?;
        let mut payload = Vec::with_capacity(64 + del.get_array_memory_size() + put.get_array_memory_size());
        payload.push(OP_TXN);
        payload.extend_from_slice(&[0u8; 8]);
        payload.extend_from_slice(&txn.to_le_bytes());
        payload.extend_from_slice(&[0u8; 8]);
        encode_batch(&del, &mut payload)?;
        let del_len = (payload.len() - 25) as u64;
        payload[17..25].copy_from_slice(&del_len.to_le_bytes());
        encode_batch(&put, &mut payload)?;
        let instant = self.desc.ttl_ms == Some(0);
        let mut inner = self.inner.lock();
        if let Some(e) = &inner.wal_failed {
            return Err(self.wal_failed_error(e));
        }
        let first = inner.appended_seq + 1;
        let seq = first + 1;
        let rowid_start = inner.next_rowid;
        payload[1..9].copy_from_slice(&rowid_start.to_le_bytes());
        let chunks = if instant { vec![] } else { txn_chunks(&self.layout, &del, &put, rowid_start, seq)? };
        inner.log.append_unsynced(seq, &payload)?;
        inner.appended_seq = seq;
        inner.next_rowid += put.num_rows() as u64;
        inner.pending.push_back(Pending { first, seq, chunks, held: txn != 0 });
        if txn == 0 {
            if !self.shared.config.wal_fsync {
                inner.synced_seq = seq;
                self.publish(&mut inner, seq)?;
            }
            let inner = self.wait_synced(inner, seq)?;
            drop(inner);
            self.after_write();
        } else {
            if !self.shared.config.wal_fsync {
                inner.synced_seq = seq;
            }
            if wait_durable {
                let inner = self.wait_durable(inner, seq)?;
                drop(inner);
            }
        }
        Ok(seq)
    }

    /// The commit decision for a held transaction record: publish its rows
    /// (`commit`) or publish it empty. Callers hold the engine's commit gate.
    pub(super) fn decide_txn(&self, seq: SeqNo, commit: bool) {
        let mut inner = self.inner.lock();
        if let Some(p) = inner.pending.iter_mut().find(|p| p.seq == seq) {
            p.held = false;
            if !commit {
                p.chunks.clear();
            }
        }
        let upto = inner.synced_seq;
        if let Err(e) = self.publish(&mut inner, upto) {
            tracing::error!(region = self.id, error = %e, "publishing a transaction failed; writes to the region fail until it is reopened");
            inner.wal_failed = Some(e.to_string());
        }
        self.synced.notify_all();
    }

    /// The notice of a published transaction record.
    pub(super) fn txn_notice(&self, w: &super::txn::RegionWrites, seq: SeqNo) -> WriteNotice {
        let time_range = self.desc.time_index.and_then(|ti| {
            w.puts.iter().filter_map(|b| time_bounds(b.column(ti)).ok().flatten()).reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
        });
        let rows = w.puts.iter().map(|b| b.num_rows()).sum::<usize>() + w.deletes.iter().map(|b| b.num_rows()).sum::<usize>();
        WriteNotice { table_name: self.desc.table_name.clone(), region_id: self.id, seq_range: (seq - 1, seq), time_range, rows }
    }

    /// Flush checks after a published transaction record (as after a
    /// plain write).
    fn after_write(&self) {
        let cfg = &self.shared.config;
        let tun = &self.shared.tuning;
        let flush_needed = {
            let inner = self.inner.lock();
            inner.mem.bytes > cfg.memtable_bytes_max || inner.log.bytes() > tun.wal_bytes_max
        };
        self.flush_checks(flush_needed);
    }

    /// Flush when this region is over its limits (`flush_needed`), else
    /// flush or kick the background worker when all memtables are over the
    /// global budget. The write is already durable and acknowledged; a
    /// failed flush is retried later.
    fn flush_checks(&self, flush_needed: bool) {
        let tun = &self.shared.tuning;
        if flush_needed {
            if let Err(e) = self.flush() {
                tracing::warn!(region = self.id, error = %e, "flush after write failed");
            }
        } else if self.shared.mem_used.load(Ordering::Relaxed) > tun.global_memtable_bytes_max {
            if tun.background_interval_ms > 0 {
                self.shared.kick();
            } else if let Err(e) = self.flush() {
                tracing::warn!(region = self.id, error = %e, "flush for the memtable budget failed");
            }
        }
    }

    /// After a multi-region commit: flush checks, as after a write.
    pub(super) fn after_commit(&self) {
        self.after_write();
    }

    /// Move the pending writes up to `upto` into the memtable, in sequence
    /// order, and make them visible.
    fn publish(&self, inner: &mut Inner, upto: SeqNo) -> Result<()> {
        while inner.pending.front().is_some_and(|p| p.seq <= upto && !p.held) {
            let p = inner.pending.pop_front().unwrap();
            let seq = p.seq;
            debug_assert_eq!(p.first, inner.last_seq + 1, "published sequences are dense");
            for chunk in p.chunks {
                let delta = inner.mem.push(&self.layout, chunk)?;
                if delta >= 0 {
                    self.shared.mem_used.fetch_add(delta as usize, Ordering::Relaxed);
                } else {
                    self.shared.mem_used.fetch_sub((-delta) as usize, Ordering::Relaxed);
                }
            }
            inner.last_seq = seq;
        }
        Ok(())
    }

    fn wal_failed_error(&self, cause: &str) -> crate::error::WeirError {
        crate::err!(Storage, "the wal of region {} could not be synced; writes fail until the region is reopened", self.id)
            .with_detail(cause.to_string())
            .with_hint("check the disk, then restart the server; writes acknowledged before the failure are safe")
    }

    fn notify(&self, seq: SeqNo, batch: &RecordBatch, rows: usize) {
        let time_range = self.desc.time_index.and_then(|ti| time_bounds(batch.column(ti)).ok().flatten());
        let notice = WriteNotice { table_name: self.desc.table_name.clone(), region_id: self.id, seq_range: (seq, seq), time_range, rows };
        let listeners = self.shared.listeners.lock().clone();
        for l in listeners {
            l.on_write(&notice);
        }
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

    fn snapshot(&self, after: Option<SeqNo>, upto: Option<SeqNo>, time: Option<(i64, i64)>, with_mem: bool) -> Snapshot {
        let inner = self.inner.lock();
        let mut mem = Vec::new();
        if with_mem {
            for m in inner.frozen.iter().map(|m| m.as_ref()).chain(std::iter::once(&inner.mem)) {
                mem.extend(m.chunks().filter(|c| c.may_match(after, upto, time)).map(|c| (c.batch.clone(), c.time_range)));
            }
        }
        Snapshot {
            overlay_from: mem.len(),
            mem,
            files: inner.files.clone(),
            flushed_seq: inner.manifest.flushed_seq,
            history_seq: inner.manifest.history_seq,
            last_seq: inner.last_seq,
        }
    }

    fn row_mask(&self, batch: &RecordBatch, cols: &[usize], f: &RowFilter) -> Result<Option<BooleanArray>> {
        let pos = |c: usize| cols.iter().position(|&x| x == c).expect("filter column is read");
        let mut mask = None;
        if f.seq_after.is_some() || f.seq_upto.is_some() {
            let seq = batch.column(pos(self.layout.seq()));
            if let Some(a) = f.seq_after {
                mask = and(mask, cmp::gt(seq, &scalar_u64(a))?)?;
            }
            if let Some(u) = f.seq_upto {
                mask = and(mask, cmp::lt_eq(seq, &scalar_u64(u))?)?;
            }
        }
        if let Some(ti) = self.layout.time_index {
            if f.time.is_some() || f.ttl_cutoff.is_some() {
                let t = time_values(batch.column(pos(ti)))?;
                if let Some((lo, hi)) = f.time {
                    mask = and(mask, cmp::gt_eq(&t, &scalar_i64(lo))?)?;
                    mask = and(mask, cmp::lt(&t, &scalar_i64(hi))?)?;
                }
                if let Some(cut) = f.ttl_cutoff {
                    mask = and(mask, cmp::gt_eq(&t, &scalar_i64(cut))?)?;
                }
            }
        }
        for (c, v) in &f.eq {
            let col = batch.column(pos(*c));
            let v = arrow::compute::cast(v, col.data_type())?;
            mask = and(mask, cmp::eq(col, &Scalar::new(v))?)?;
        }
        Ok(mask)
    }

    /// Read full-schema columns `cols` (ascending, including identity, seq,
    /// op and every filtered column) from the memtable and, when asked, the
    /// SSTs: the filtered rows of each source that has any.
    fn read(&self, snap: &Snapshot, cols: &[usize], f: &RowFilter, with_ssts: bool) -> Result<Vec<Source>> {
        let mut sources = Vec::new();
        let mut out = Vec::new();
        let unbounded = RowFilter { seq_after: None, seq_upto: None, ..f.clone() };
        let keep_with = |b: RecordBatch, f: &RowFilter, out: &mut Vec<RecordBatch>| -> Result<()> {
            let b = match self.row_mask(&b, cols, f)? {
                Some(m) => arrow::compute::filter_record_batch(&b, &m)?,
                None => b,
            };
            if b.num_rows() > 0 {
                out.push(b);
            }
            Ok(())
        };
        let keep = |b: RecordBatch, out: &mut Vec<RecordBatch>| keep_with(b, f, out);
        let mut mem_time: Option<(i64, i64)> = None;
        let mut mem_untimed = false;
        for (i, (b, t)) in snap.mem.iter().enumerate() {
            keep_with(b.project(cols)?, if i >= snap.overlay_from { &unbounded } else { f }, &mut out)?;
            match t {
                Some((lo, hi)) => mem_time = Some(mem_time.map_or((*lo, *hi), |(a, b)| (a.min(*lo), b.max(*hi)))),
                None => mem_untimed = true,
            }
        }
        if !out.is_empty() {
            let time = if mem_untimed { None } else { mem_time };
            sources.push(Source { batches: std::mem::take(&mut out), time, distinct: false });
        }
        if with_ssts {
            let eq = prune_eq(f);
            let p = self.sst_predicate(f, &eq);
            for file in snap.files.iter() {
                if !file_may_match(&file.meta, &p) {
                    self.counters.ssts_pruned.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let (batches, read, pruned) = read_sst(file, cols, &p)?;
                self.counters.row_groups_read.fetch_add(read as u64, Ordering::Relaxed);
                self.counters.row_groups_pruned.fetch_add(pruned as u64, Ordering::Relaxed);
                if read == 0 {
                    self.counters.ssts_pruned.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                self.counters.ssts_read.fetch_add(1, Ordering::Relaxed);
                for b in batches {
                    keep(b, &mut out)?;
                }
                if !out.is_empty() {
                    sources.push(Source { batches: std::mem::take(&mut out), time: file.meta.time_range, distinct: file.meta.distinct });
                }
            }
        }
        Ok(sources)
    }

    /// Split sources into groups that may share identities. With last write
    /// wins the identity holds the time, so sources with disjoint time
    /// ranges never need a dedup against each other; otherwise one group.
    fn components(&self, mut sources: Vec<Source>) -> Vec<Vec<Source>> {
        let timed = self.desc.last_write_wins() && sources.iter().all(|s| s.time.is_some());
        if !timed || sources.len() <= 1 {
            return if sources.is_empty() { vec![] } else { vec![sources] };
        }
        sources.sort_by_key(|s| s.time.unwrap().0);
        let mut out: Vec<Vec<Source>> = Vec::new();
        let mut end = i64::MIN;
        for s in sources {
            let (lo, hi) = s.time.unwrap();
            match out.last_mut() {
                Some(group) if lo <= end => group.push(s),
                _ => out.push(vec![s]),
            }
            end = end.max(hi);
        }
        out
    }

    fn key_cols(&self, batch: &RecordBatch, cols: &[usize]) -> Vec<ArrayRef> {
        self.layout.identity.iter().map(|c| batch.column(cols.iter().position(|x| x == c).expect("identity is read")).clone()).collect()
    }

    /// Newest version of each identity (tombstones included).
    fn newest(&self, batch: &RecordBatch, cols: &[usize]) -> Result<RecordBatch> {
        let keys = self.keys.encode(&self.key_cols(batch, cols))?;
        let seq = batch.column(cols.iter().position(|&c| c == self.layout.seq()).unwrap()).as_primitive::<UInt64Type>();
        super::version::filter(batch, newest_mask(&keys, seq))
    }

    /// The file and row-group pruning predicate of a row filter.
    fn sst_predicate<'a>(&self, f: &RowFilter, eq: &'a [(usize, PruneValue)]) -> SstPredicate<'a> {
        SstPredicate {
            seq_after: f.seq_after,
            seq_upto: f.seq_upto,
            time: sst_time(f),
            ts_col: self.layout.time_index,
            eq,
            seq_col: self.layout.seq(),
        }
    }

    /// SSTs of a snapshot that share no identity with any other source the
    /// read may touch and hold one version per identity: their visible rows
    /// need no dedup, so they are read alone with the fewest columns. Returns
    /// them and the other files.
    fn split_isolated(&self, snap: &Snapshot, f: &RowFilter) -> (Vec<Arc<SstFile>>, Vec<Arc<SstFile>>) {
        let eq = prune_eq(f);
        let p = self.sst_predicate(f, &eq);
        let live: Vec<&Arc<SstFile>> = snap.files.iter().filter(|x| file_may_match(&x.meta, &p)).collect();
        let nsources = live.len() + snap.mem.len();
        let lww = self.desc.last_write_wins();
        let (mut isolated, mut rest) = (Vec::new(), Vec::new());
        for file in snap.files.iter() {
            let is_live = live.iter().any(|l| Arc::ptr_eq(l, file));
            let alone = nsources == 1
                || (lww
                    && file.meta.time_range.is_some_and(|r| {
                        snap.mem.iter().all(|(_, t)| t.is_some_and(|t| !overlaps(r, t)))
                            && live.iter().all(|o| Arc::ptr_eq(o, file) || o.meta.time_range.is_some_and(|t| !overlaps(r, t)))
                    }));
            if is_live && file.meta.distinct && alone {
                isolated.push(file.clone());
            } else {
                rest.push(file.clone());
            }
        }
        (isolated, rest)
    }

    /// Visible rows of an isolated SST (see [`Region::split_isolated`]),
    /// projected: reads only the projected and filtered columns, `__op` when
    /// the file has tombstones, `__seq` when the bounds cut through it.
    fn read_isolated(&self, file: &SstFile, proj: &[usize], f: &RowFilter, with_rowid: bool, out: &mut Vec<RecordBatch>) -> Result<()> {
        let m = &file.meta;
        let seq_after = f.seq_after.filter(|&a| m.seq_range.0 <= a);
        let seq_upto = f.seq_upto.filter(|&u| m.seq_range.1 > u);
        let time = sst_time(f).filter(|&(lo, hi)| !m.time_range.is_some_and(|(a, b)| a >= lo && b < hi));
        let (seq_col, op_col) = (self.layout.seq(), self.layout.op());
        let mut cols: Vec<usize> = proj.to_vec();
        cols.extend(f.eq.iter().map(|e| e.0));
        if seq_after.is_some() || seq_upto.is_some() {
            cols.push(seq_col);
        }
        if !m.puts_only {
            cols.push(op_col);
        }
        if with_rowid {
            cols.push(self.layout.rowid());
        }
        if cols.is_empty() && time.is_some() {
            cols.extend(self.layout.time_index);
        }
        cols.sort_unstable();
        cols.dedup();
        let md = file.reader_meta.metadata();
        if cols.is_empty() {
            // Every row is visible and nothing needs decoding: row counts
            // from the metadata.
            self.counters.ssts_read.fetch_add(1, Ordering::Relaxed);
            self.counters.row_groups_read.fetch_add(md.num_row_groups() as u64, Ordering::Relaxed);
            if m.rows > 0 {
                out.push(RecordBatch::try_new_with_options(
                    Arc::new(Schema::empty()),
                    vec![],
                    &RecordBatchOptions::new().with_row_count(Some(m.rows as usize)),
                )?);
            }
            return Ok(());
        }
        let eq = prune_eq(f);
        let p = SstPredicate { seq_after, seq_upto, time, ts_col: self.layout.time_index, eq: &eq, seq_col };
        let (batches, read, pruned) = read_sst(file, &cols, &p)?;
        self.counters.row_groups_read.fetch_add(read as u64, Ordering::Relaxed);
        self.counters.row_groups_pruned.fetch_add(pruned as u64, Ordering::Relaxed);
        if read == 0 {
            self.counters.ssts_pruned.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        self.counters.ssts_read.fetch_add(1, Ordering::Relaxed);
        let pos = |c: usize| cols.iter().position(|&x| x == c).unwrap();
        let rf = RowFilter { seq_after, seq_upto, time: None, ttl_cutoff: None, eq: f.eq.clone() };
        let opos = (!m.puts_only).then(|| pos(op_col));
        let mut out_cols: Vec<usize> = proj.iter().map(|&c| pos(c)).collect();
        if with_rowid {
            out_cols.push(pos(self.layout.rowid()));
        }
        for b in batches {
            let mut mask = self.row_mask(&b, &cols, &rf)?;
            if let Some(o) = opos {
                mask = and(mask, BooleanArray::new(put_mask(b.column(o)), None))?;
            }
            let b = match mask {
                Some(m) => arrow::compute::filter_record_batch(&b, &m)?,
                None => b,
            };
            if b.num_rows() > 0 {
                out.push(b.project(&out_cols)?);
            }
        }
        Ok(())
    }

    /// The visible rows: newest version of each identity, deletes dropped.
    pub fn scan(&self, req: &ScanRequest) -> Result<Vec<RecordBatch>> {
        let mut b = req.seq;
        if let (Some(s), None, SeqMode::Exact) = (req.snapshot, b.upto, b.mode) {
            let (last, history) = {
                let inner = self.inner.lock();
                (inner.last_seq, inner.manifest.history_seq)
            };
            // Only a region that moved since the snapshot needs the bound.
            // Without a hold, a flush may have discarded the versions at the
            // snapshot: then the statement reads the latest ones.
            if s < last {
                if s >= history {
                    b.upto = Some(s);
                } else {
                    tracing::debug!(region = self.id, snapshot = s, history, "statement snapshot is older than the kept versions");
                }
            }
        }
        let memtable_only = b.mode == SeqMode::MemtableOnly && b.after.is_some();
        let mut snap = self.snapshot(b.after, b.upto, req.time_range, true);
        if let Some(w) = req.overlay.as_ref().filter(|_| !memtable_only) {
            snap.mem.extend(self.overlay_mem(w)?);
        }
        match b.mode {
            SeqMode::MemtableOnly => {
                if let Some(a) = b.after {
                    if a < snap.flushed_seq {
                        return Err(crate::err!(
                            IncrementalQueryStale,
                            "incremental query on region {} is stale: given sequence {a} is below the minimum readable sequence {}",
                            self.id,
                            snap.flushed_seq
                        )
                        .with_detail(format!("region_id={} given_seq={a} min_readable_seq={}", self.id, snap.flushed_seq))
                        .with_hint("run a full query, then continue incrementally from its sequence"));
                    }
                }
                if let Some(u) = b.upto {
                    if u < snap.flushed_seq {
                        return Err(crate::err!(SnapshotFenceStale, "snapshot sequence {u} of region {} is already flushed", self.id)
                            .with_detail(format!("region_id={} snapshot_seq={u} flushed_seq={}", self.id, snap.flushed_seq))
                            .with_hint("run the query again without the snapshot bound"));
                    }
                }
            }
            SeqMode::Exact => {
                if let Some(u) = b.upto {
                    if u < snap.history_seq {
                        return Err(self.range_unsupported(u, snap.history_seq));
                    }
                }
            }
        }
        let ncols = self.layout.ncols;
        let proj: Vec<usize> = req.projection.clone().unwrap_or_else(|| (0..ncols).collect());
        if let Some(&bad) = proj.iter().find(|&&c| c >= ncols) {
            crate::bail!(Internal, "projection column {bad} out of range for region {}", self.id);
        }
        let filter = RowFilter {
            seq_after: b.after,
            seq_upto: b.upto,
            time: req.time_range.filter(|_| self.layout.time_index.is_some()),
            ttl_cutoff: self.ttl_cutoff(),
            // Only tag equalities are safe before dedup: every version of an
            // identity shares its tags.
            eq: req
                .filters
                .iter()
                .filter(|e| self.layout.primary_key.contains(&e.column) && e.value.len() == 1)
                .map(|e| (e.column, e.value.clone()))
                .collect(),
        };
        let mut cols: Vec<usize> = proj.clone();
        cols.extend(self.layout.identity.iter().copied());
        cols.extend(filter.eq.iter().map(|e| e.0));
        if filter.time.is_some() || filter.ttl_cutoff.is_some() {
            cols.extend(self.layout.time_index);
        }
        cols.extend([self.layout.rowid(), self.layout.seq(), self.layout.op()]);
        cols.sort_unstable();
        cols.dedup();
        if self.desc.ttl_ms == Some(0) {
            return Ok(vec![]);
        }
        let mut out = Vec::new();
        if !memtable_only {
            let (isolated, rest) = self.split_isolated(&snap, &filter);
            for file in &isolated {
                self.read_isolated(file, &proj, &filter, req.with_rowid, &mut out)?;
            }
            if !isolated.is_empty() {
                snap.files = Arc::new(rest);
            }
        }
        let sources = self.read(&snap, &cols, &filter, !memtable_only)?;
        let schema = self.layout.project(&cols);
        let opos = cols.iter().position(|&c| c == self.layout.op()).unwrap();
        let mut out_cols: Vec<usize> = proj.iter().map(|c| cols.iter().position(|x| x == c).unwrap()).collect();
        if req.with_rowid {
            out_cols.push(cols.iter().position(|&c| c == self.layout.rowid()).unwrap());
        }
        for group in self.components(sources) {
            let distinct = group.len() == 1 && group[0].distinct;
            let batches: Vec<RecordBatch> = group.into_iter().flat_map(|s| s.batches).collect();
            if distinct {
                for b in batches {
                    let visible = super::version::filter(&b, put_mask(b.column(opos)))?;
                    if visible.num_rows() > 0 {
                        out.push(visible.project(&out_cols)?);
                    }
                }
                continue;
            }
            let all = concat_all(&schema, &batches)?;
            let visible = if distinct {
                super::version::filter(&all, put_mask(all.column(opos)))?
            } else {
                let newest = self.newest(&all, &cols)?;
                super::version::filter(&newest, put_mask(newest.column(opos)))?
            };
            if visible.num_rows() > 0 {
                out.push(visible.project(&out_cols)?);
            }
        }
        Ok(out)
    }

    /// A transaction's own writes as full-schema batches above every
    /// sequence: tombstones, then rows (later rows win ties).
    fn overlay_mem(&self, w: &super::txn::RegionWrites) -> Result<Vec<(RecordBatch, Option<(i64, i64)>)>> {
        let mut out = Vec::new();
        let time = |b: &RecordBatch| -> Result<Option<(i64, i64)>> {
            Ok(match self.layout.time_index {
                Some(ti) => time_bounds(b.column(ti))?,
                None => None,
            })
        };
        for (batches, seq, op) in [(&w.deletes, super::txn::OVERLAY_SEQ, OP_DELETE), (&w.puts, super::txn::OVERLAY_SEQ + 1, OP_PUT)] {
            for b in batches.iter().filter(|b| b.num_rows() > 0) {
                let full = with_version(&self.layout, b.columns().to_vec(), seq, op)?;
                let t = time(&full)?;
                out.push((full, t));
            }
        }
        Ok(out)
    }

    fn range_unsupported(&self, seq: SeqNo, history: SeqNo) -> crate::error::WeirError {
        crate::err!(SequenceRangeUnsupported, "sequence {seq} of region {} can no longer be read exactly", self.id)
            .with_detail(format!(
                "region_id={} given_seq={seq} history_seq={history}: versions replaced at or before {history} were discarded",
                self.id
            ))
            .with_hint("hold versions with hold_versions before reading old snapshots, or run a full query")
    }

    /// The change log of (after, upto]: every user column plus an Int64
    /// `__diff`, +1 for each row visible at `upto` but not at `after`, -1 for
    /// each row visible at `after` but not at `upto` (replaced or deleted).
    /// Retractions come first.
    pub fn changes(&self, after: SeqNo, upto: SeqNo) -> Result<RecordBatch> {
        let ncols = self.layout.ncols;
        let mut fields: Vec<Field> = self.layout.user.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new(DIFF_COLUMN, DataType::Int64, false));
        let out_schema = Arc::new(Schema::new(fields));
        let snap = self.snapshot(Some(after), Some(upto), None, true);
        if after < snap.history_seq {
            return Err(self.range_unsupported(after, snap.history_seq));
        }
        let upto = upto.min(snap.last_seq);
        if upto <= after || self.desc.ttl_ms == Some(0) {
            return Ok(RecordBatch::new_empty(out_schema));
        }
        let cols: Vec<usize> = (0..self.layout.full.fields().len()).collect();
        let schema = self.layout.full.clone();
        let f_new = RowFilter { seq_after: Some(after), seq_upto: Some(upto), time: None, ttl_cutoff: None, eq: vec![] };
        let batches: Vec<RecordBatch> = self.read(&snap, &cols, &f_new, true)?.into_iter().flat_map(|s| s.batches).collect();
        if batches.is_empty() {
            return Ok(RecordBatch::new_empty(out_schema));
        }
        let new = self.newest(&concat_all(&schema, &batches)?, &cols)?;
        // Earlier versions of the touched identities, as of `after`.
        let time = match self.layout.time_index {
            Some(ti) => time_bounds(new.column(ti))?.map(|(lo, hi)| (lo, hi.saturating_add(1))),
            None => None,
        };
        let old_snap = self.snapshot(None, Some(after), time, true);
        let f_old = RowFilter { seq_after: None, seq_upto: Some(after), time, ttl_cutoff: None, eq: vec![] };
        let old_batches: Vec<RecordBatch> = self.read(&old_snap, &cols, &f_old, true)?.into_iter().flat_map(|s| s.batches).collect();
        let new_keys = self.keys.encode(&self.key_cols(&new, &cols))?;
        let old = if old_batches.is_empty() {
            RecordBatch::new_empty(schema.clone())
        } else {
            let old_all = concat_all(&schema, &old_batches)?;
            let old_keys = self.keys.encode(&self.key_cols(&old_all, &cols))?;
            let touched = match (&new_keys, &old_keys) {
                (Keys::RowId(n), Keys::RowId(o)) => {
                    let set: HashSet<u64, super::version::FxBuild> = n.values().iter().copied().collect();
                    BooleanBuffer::collect_bool(o.len(), |i| set.contains(&o.value(i)))
                }
                (Keys::Rows(n), Keys::Rows(o)) => {
                    let set: HashSet<&[u8], super::version::FxBuild> = (0..n.num_rows()).map(|i| n.row(i).data()).collect();
                    BooleanBuffer::collect_bool(o.num_rows(), |i| set.contains(o.row(i).data()))
                }
                _ => unreachable!("one key encoder"),
            };
            let old_touched = super::version::filter(&old_all, touched)?;
            let newest_old = self.newest(&old_touched, &cols)?;
            super::version::filter(&newest_old, put_mask(newest_old.column(self.layout.op())))?
        };
        let plus = super::version::filter(&new, put_mask(new.column(self.layout.op())))?;
        let mut parts = Vec::new();
        for (b, diff) in [(old, -1i64), (plus, 1)] {
            if b.num_rows() == 0 {
                continue;
            }
            let mut c: Vec<ArrayRef> = b.columns()[..ncols].to_vec();
            c.push(Arc::new(Int64Array::from_value(diff, b.num_rows())));
            parts.push(RecordBatch::try_new(out_schema.clone(), c)?);
        }
        if parts.is_empty() {
            return Ok(RecordBatch::new_empty(out_schema));
        }
        concat_all(&out_schema, &parts)
    }

    /// Flush and compaction share this: sort by (key, time, seq), drop the
    /// versions no reader can see (and tombstones when `drop_deletes`), and
    /// write what is left as one SST. Returns the file (None when nothing
    /// is left) and the history horizon the pruning reached.
    fn write_sorted(&self, batches: Vec<RecordBatch>, drop_deletes: bool, cutoff: Option<i64>) -> Result<(Option<Arc<SstFile>>, SeqNo)> {
        if batches.is_empty() {
            return Ok((None, 0));
        }
        let sorted = sort_batches(&self.layout, &batches)?;
        drop(batches);
        let pruned = prune_versions(&self.layout, &self.keys, &sorted, self.horizon(), drop_deletes, cutoff)?;
        drop(sorted);
        if pruned.batch.num_rows() == 0 {
            return Ok((None, pruned.history_seq));
        }
        let file = write_sst(
            &self.shared.store,
            &self.layout,
            self.sst_path(),
            &pruned.batch,
            self.shared.tuning.sst_row_group_rows_max,
            pruned.distinct,
        )?;
        Ok((Some(Arc::new(file)), pruned.history_seq))
    }

    fn sst_path(&self) -> String {
        let id = self.next_file_id.fetch_add(1, Ordering::SeqCst);
        format!("{}/sst/{id:020}.parquet", region_dir_name(self.id))
    }

    /// Commit a manifest edit with compare-and-set; `edit` sees the current one.
    fn commit(&self, edit: impl FnOnce(&mut Manifest)) -> Result<(Arc<Manifest>, Vec<u8>)> {
        let (mut m, old) = {
            let inner = self.inner.lock();
            ((*inner.manifest).clone(), inner.manifest_bytes.clone())
        };
        edit(&mut m);
        m.version += 1;
        m.next_file_id = m.next_file_id.max(self.next_file_id.load(Ordering::SeqCst));
        let bytes = m.encode();
        if !self.shared.meta.compare_and_set(&manifest_key(self.id), Some(&old), Some(&bytes))? {
            crate::bail!(Storage, "manifest of region {} changed under a commit", self.id);
        }
        Ok((Arc::new(m), bytes))
    }

    /// Write the memtable to an SST, commit it in the manifest, truncate the WAL.
    pub fn flush(&self) -> Result<()> {
        let _f = self.flush_lock.lock();
        if self.closed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let (frozen, upto) = {
            let mut inner = self.inner.lock();
            if !inner.mem.is_empty() {
                let mem = std::mem::take(&mut inner.mem);
                inner.frozen.push(Arc::new(mem));
            }
            if inner.frozen.is_empty() && inner.last_seq == inner.manifest.flushed_seq {
                return Ok(());
            }
            // Unpublished writes stay in the WAL past the rotation: the new
            // segment starts after every appended record.
            let next = inner.appended_seq + 1;
            inner.log.rotate(next)?;
            (inner.frozen.clone(), inner.last_seq)
        };
        let batches: Vec<RecordBatch> = frozen.iter().flat_map(|m| m.chunks().map(|c| c.batch.clone())).collect();
        // Peak memory: the frozen memtable plus the sorted copy (and the
        // pruned one when versions go).
        let (new_file, history) = self.write_sorted(batches, false, None)?;
        let _m = self.manifest_lock.lock();
        let next_rowid = self.inner.lock().next_rowid;
        let (m, bytes) = self.commit(|m| {
            m.flushed_seq = upto;
            m.next_rowid = m.next_rowid.max(next_rowid);
            m.history_seq = m.history_seq.max(history);
            if let Some(f) = &new_file {
                m.files.push(f.meta.clone());
            }
        })?;
        let mut inner = self.inner.lock();
        inner.manifest = m;
        inner.manifest_bytes = bytes;
        if let Some(f) = new_file {
            let mut files = (*inner.files).clone();
            files.push(f);
            inner.files = Arc::new(files);
        }
        let freed: usize = frozen.iter().map(|m| m.bytes).sum();
        inner.frozen.retain(|m| !frozen.iter().any(|f| Arc::ptr_eq(f, m)));
        let _ = self.shared.mem_used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(freed)));
        if let Err(e) = inner.log.obsolete(upto) {
            tracing::warn!(region = self.id, error = %e, "cannot delete flushed wal segments");
        }
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Merge SSTs now: every time window with two or more files (or with
    /// old versions, tombstones or expired rows) becomes one file. Returns
    /// the number of input files merged.
    pub fn compact(&self) -> Result<usize> {
        self.compact_with(true)
    }

    /// Periodic work: flush over the thresholds, merge small files.
    pub(super) fn background_work(&self) -> Result<()> {
        if crate::failpoint::fire_once(&format!("storage_background_panic_region_{}", self.id)) {
            panic!("failpoint storage_background_panic");
        }
        let (cfg, tun) = (&self.shared.config, &self.shared.tuning);
        let (mem, wal) = {
            let inner = self.inner.lock();
            (inner.mem.bytes, inner.log.bytes())
        };
        if mem > cfg.memtable_bytes_max || wal > tun.wal_bytes_max {
            self.flush()?;
        }
        self.compact_with(false)?;
        Ok(())
    }

    fn compact_with(&self, force: bool) -> Result<usize> {
        let _c = self.compact_lock.lock();
        if self.closed.load(Ordering::SeqCst) {
            return Ok(0);
        }
        let cfg = &self.shared.tuning;
        let files = self.inner.lock().files.clone();
        let cutoff = self.ttl_cutoff();
        let window_us = cfg.compaction_window_ms.max(1).saturating_mul(1000);
        let mut windows: BTreeMap<i64, Vec<Arc<SstFile>>> = BTreeMap::new();
        for f in files.iter() {
            let w = f.meta.time_range.map_or(0, |(min, _)| min.div_euclid(window_us));
            windows.entry(w).or_default().push(f.clone());
        }
        let mut merged = 0;
        for (_, group) in windows {
            let expired = |f: &SstFile| cutoff.is_some_and(|c| f.meta.time_range.is_some_and(|(min, _)| min < c));
            let pick: Vec<Arc<SstFile>> =
                if force { group } else { group.into_iter().filter(|f| f.meta.bytes < cfg.compaction_file_bytes_max).collect() };
            let worth = if force {
                pick.len() >= 2 || pick.iter().any(|f| !f.meta.distinct || expired(f))
            } else {
                pick.len() >= cfg.compaction_files_min.max(2)
            };
            if worth {
                self.merge(&pick, cutoff)?;
                merged += pick.len();
            }
        }
        Ok(merged)
    }

    /// Replace `inputs` by one file holding the versions still readable.
    fn merge(&self, inputs: &[Arc<SstFile>], cutoff: Option<i64>) -> Result<()> {
        let cols: Vec<usize> = (0..self.layout.full.fields().len()).collect();
        let all_pred = SstPredicate { seq_after: None, seq_upto: None, time: None, ts_col: None, eq: &[], seq_col: self.layout.seq() };
        let mut batches = Vec::new();
        for f in inputs {
            batches.extend(read_sst(f, &cols, &all_pred)?.0);
        }
        // Tombstones may go only when no other file can hold what they delete.
        let span = inputs.iter().filter_map(|f| f.meta.time_range).reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        let others = self.inner.lock().files.clone();
        let overlapping = others.iter().any(|o| {
            !inputs.iter().any(|i| Arc::ptr_eq(i, o))
                && match (span, o.meta.time_range) {
                    (Some((lo, hi)), Some((min, max))) => min <= hi && max >= lo,
                    _ => true,
                }
        });
        let (new_file, history) = self.write_sorted(std::mem::take(&mut batches), !overlapping, cutoff)?;
        let _m = self.manifest_lock.lock();
        let gone: HashSet<&str> = inputs.iter().map(|f| f.meta.path.as_str()).collect();
        let (m, bytes) = self.commit(|m| {
            m.files.retain(|f| !gone.contains(f.path.as_str()));
            if let Some(f) = &new_file {
                m.files.push(f.meta.clone());
            }
            m.history_seq = m.history_seq.max(history);
        })?;
        let mut inner = self.inner.lock();
        inner.manifest = m;
        inner.manifest_bytes = bytes;
        let mut files: Vec<Arc<SstFile>> = inner.files.iter().filter(|f| !gone.contains(f.meta.path.as_str())).cloned().collect();
        files.extend(new_file);
        inner.files = Arc::new(files);
        drop(inner);
        for f in inputs {
            f.mark_obsolete();
        }
        self.counters.compactions.fetch_add(1, Ordering::Relaxed);
        Ok(())
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
        }
    }
}

#[cfg(test)]
#[path = "region_tests.rs"]
pub(super) mod tests;
