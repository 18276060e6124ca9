//! Transactions in storage: a session's buffered writes to one region
//! ([`RegionWrites`]), the read view that lays them over a snapshot
//! ([`ReadView`]), the commit log that makes a multi-region commit one
//! decision ([`CommitLog`]) and [`StorageEngine::commit`].
//!
//! Imports only `crate::error` and storage's siblings; never sql, planner,
//! exec, server or flow.
//!
//! Commit protocol. One region: the transaction's part is one WAL record
//! that commits itself (transaction id 0). Several regions, in region-id
//! order: (1) append each part as one `OP_TXN` record carrying the
//! transaction id and fsync it — the records are *held*, not visible;
//! (2) append `commit <id>` to the commit log and **fsync** it: the commit
//! point; (3) under the commit gate, publish every held record, so a
//! statement snapshot (taken under the same gate) sees all or none of them;
//! (4) notify listeners once, with every region's notice. A failure before
//! (2) publishes the records empty. Recovery replays an `OP_TXN` record only
//! when its transaction is 0 or has a commit record.
//!
//! Transaction ids are never reused, across restarts too: at open the log
//! gets a `reserve <hi>` record and ids are handed out below `hi`, so an
//! id whose records were written but never committed cannot come back. The
//! commit log is small (17 bytes a multi-region commit) and not truncated.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};

use arrow::array::RecordBatch;

use super::meta::FileMeta;
use super::wal::{LocalLog, LogStore};
use super::{Region, RegionId, SeqNo, Shared, StorageEngine, WriteNotice};
use crate::error::Result;

/// Sequence of a transaction's own tombstones in its reads; its rows are at
/// `OVERLAY_SEQ + 1`. Above every real sequence.
pub const OVERLAY_SEQ: SeqNo = 1 << 62;
/// Row ids of a transaction's own rows before commit (real ones are given
/// by the region at commit).
pub const TEMP_ROWID_BASE: u64 = 1 << 63;

const REC_COMMIT: u8 = 1;
const REC_RESERVE: u8 = 2;
/// Ids reserved per `reserve` record.
const RESERVE_IDS: u64 = 1 << 32;

/// A transaction's writes to one region, not yet committed.
#[derive(Debug, Clone, Default)]
pub struct RegionWrites {
    /// Tombstones of committed rows: all user columns plus `__rowid`.
    pub deletes: Vec<RecordBatch>,
    /// New rows: all user columns plus a temporary `__rowid`
    /// (`>= TEMP_ROWID_BASE`), in write order.
    pub puts: Vec<RecordBatch>,
    /// Opaque bytes made durable in the same WAL record as the rows (empty:
    /// none): a writer's own progress, committed with its output. Storage
    /// only keeps them: [`Region::take_annexes`] hands the ones a crash
    /// left in the WAL back at open (see [`Region::hold_wal`]).
    pub annex: Vec<u8>,
}

impl RegionWrites {
    pub fn is_empty(&self) -> bool {
        self.annex.is_empty() && self.deletes.iter().all(|b| b.num_rows() == 0) && self.puts.iter().all(|b| b.num_rows() == 0)
    }
}

/// The commit log: commit decisions of multi-region transactions.
pub(crate) struct CommitLog {
    log: Mutex<CommitLogInner>,
    /// Transactions with a commit record when the engine opened.
    committed: HashSet<u64>,
}

struct CommitLogInner {
    log: LocalLog,
    next_seq: u64,
    next_txn: u64,
    reserved_hi: u64,
    failed: Option<String>,
}

impl CommitLog {
    pub(crate) fn open(dir: &Path, fsync: bool) -> Result<CommitLog> {
        let mut log = LocalLog::open(dir, fsync)?;
        let mut committed = HashSet::new();
        let mut hi = 0u64;
        log.read_from(0, &mut |_, payload| {
            if payload.len() != 9 {
                crate::bail!(Corrupt, "commit log record has {} bytes, expected 9", payload.len());
            }
            let v = u64::from_le_bytes(payload[1..9].try_into().unwrap());
            match payload[0] {
                REC_COMMIT => {
                    committed.insert(v);
                    hi = hi.max(v);
                }
                REC_RESERVE => hi = hi.max(v),
                k => crate::bail!(Corrupt, "commit log record of unknown kind {k}"),
            }
            Ok(())
        })?;
        let next_seq = log.last_seq().unwrap_or(0) + 1;
        let mut inner = CommitLogInner { log, next_seq, next_txn: hi + 1, reserved_hi: hi, failed: None };
        inner.reserve()?;
        Ok(CommitLog { log: Mutex::new(inner), committed })
    }

    /// Whether `txn` had committed when the engine opened (for replay).
    pub(crate) fn committed_at_open(&self, txn: u64) -> bool {
        self.committed.contains(&txn)
    }

    fn next_id(&self) -> Result<u64> {
        let mut g = self.log.lock();
        if g.next_txn >= g.reserved_hi {
            g.reserve()?;
        }
        let id = g.next_txn;
        g.next_txn += 1;
        Ok(id)
    }

    /// The commit point: `commit <txn>` is durable on return.
    fn log_commit(&self, txn: u64) -> Result<()> {
        let mut g = self.log.lock();
        g.append(REC_COMMIT, txn)
    }
}

impl CommitLogInner {
    fn reserve(&mut self) -> Result<()> {
        let hi = self.next_txn + RESERVE_IDS;
        self.append(REC_RESERVE, hi)?;
        self.reserved_hi = hi;
        Ok(())
    }

    fn append(&mut self, kind: u8, v: u64) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(
                crate::err!(Storage, "the commit log could not be written; commits fail until the server restarts").with_detail(e.clone())
            );
        }
        let mut rec = [0u8; 9];
        rec[0] = kind;
        rec[1..].copy_from_slice(&v.to_le_bytes());
        let seq = self.next_seq;
        match self.log.append(seq, &rec) {
            Ok(()) => {
                self.next_seq += 1;
                Ok(())
            }
            Err(e) => {
                // As for a region's WAL: after a failed fsync nothing later
                // can be trusted to be durable.
                self.failed = Some(e.to_string());
                Err(e)
            }
        }
    }
}

/// Test hook: `WEIR_TEST_COMMIT_PAUSE=<point>:<ms>` sleeps at a commit step
/// (`prepared`: records durable, no commit record; `logged`: commit record
/// durable, records not yet published) so a crash test can kill the
/// process there.
fn pause_at(point: &str) {
    static PAUSE: OnceLock<Option<(String, u64)>> = OnceLock::new();
    let p = PAUSE.get_or_init(|| {
        let v = std::env::var("WEIR_TEST_COMMIT_PAUSE").ok()?;
        let (name, ms) = v.split_once(':')?;
        Some((name.to_string(), ms.parse().ok()?))
    });
    if let Some((name, ms)) = p {
        if name == point {
            std::thread::sleep(std::time::Duration::from_millis(*ms));
        }
    }
}

/// Where a read view takes its snapshot from.
#[derive(Clone)]
pub struct SnapshotSource {
    shared: Arc<Shared>,
    regions: Arc<RwLock<HashMap<RegionId, Arc<Region>>>>,
}

impl SnapshotSource {
    /// The last published sequence of every region, taken under the commit
    /// gate: a multi-region commit is in it whole or not at all.
    pub fn take(&self) -> Arc<HashMap<RegionId, SeqNo>> {
        let regions: Vec<Arc<Region>> = self.regions.read().values().cloned().collect();
        let _g = self.shared.gate.read();
        Arc::new(regions.iter().map(|r| (r.id, r.last_seq())).collect())
    }

    /// Keep the versions at `snap` of every region in it until released.
    pub fn hold(&self, holder: &str, snap: &HashMap<RegionId, SeqNo>) -> Result<()> {
        let regions: Vec<Arc<Region>> = self.regions.read().values().cloned().collect();
        for r in regions {
            if let Some(&s) = snap.get(&r.id) {
                r.hold_versions(holder, s)?;
            }
        }
        Ok(())
    }

    pub fn release(&self, holder: &str) {
        let regions: Vec<Arc<Region>> = self.regions.read().values().cloned().collect();
        for r in regions {
            r.release_versions(holder);
        }
    }
}

impl std::fmt::Debug for SnapshotSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SnapshotSource")
    }
}

/// The transaction's own writes per region, produced when a statement
/// first scans (a statement that only inserts never builds them).
pub type OverlayFn = Box<dyn Fn() -> HashMap<RegionId, Arc<RegionWrites>> + Send + Sync>;

/// What one statement reads: a snapshot of every region (taken at the
/// first scan unless given) and the transaction's own writes over it (also
/// taken at the first scan, so a statement never reads its own writes).
#[derive(Default)]
pub struct ReadView {
    source: Option<SnapshotSource>,
    snapshot: OnceLock<Arc<HashMap<RegionId, SeqNo>>>,
    overlay_fn: Option<OverlayFn>,
    overlay: OnceLock<HashMap<RegionId, Arc<RegionWrites>>>,
}

impl std::fmt::Debug for ReadView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadView").field("snapshot", &self.snapshot).field("overlay", &self.overlay).finish()
    }
}

impl ReadView {
    /// A view whose snapshot is taken from `source` at the first scan, or
    /// is `fixed` (a REPEATABLE READ block's); `overlay` gives the
    /// transaction's writes (None outside a block).
    pub fn new(source: SnapshotSource, fixed: Option<Arc<HashMap<RegionId, SeqNo>>>, overlay: Option<OverlayFn>) -> ReadView {
        let snapshot = OnceLock::new();
        if let Some(f) = fixed {
            let _ = snapshot.set(f);
        }
        ReadView { source: Some(source), snapshot, overlay_fn: overlay, overlay: OnceLock::new() }
    }

    /// Bound a scan of `region` by the view: its snapshot sequence and the
    /// transaction's writes to it.
    pub fn apply(&self, region: RegionId, req: &mut super::ScanRequest) {
        if let Some(src) = &self.source {
            let snap = self.snapshot.get_or_init(|| src.take());
            // A region created after the snapshot has nothing older.
            req.snapshot = Some(snap.get(&region).copied().unwrap_or(0));
        }
        if let Some(f) = &self.overlay_fn {
            req.overlay = self.overlay.get_or_init(f).get(&region).cloned();
        }
    }
}

impl StorageEngine {
    /// The snapshot source of this engine (for read views).
    pub fn snapshot_source(&self) -> SnapshotSource {
        SnapshotSource { shared: self.shared.clone(), regions: self.regions.clone() }
    }

    /// Commit a transaction's writes: every region's part or none, durable
    /// when `wal_fsync` is on (see the module header).
    pub fn commit(&self, parts: Vec<(Arc<Region>, RegionWrites)>) -> Result<()> {
        let mut parts: Vec<(Arc<Region>, RegionWrites)> = parts.into_iter().filter(|(_, w)| !w.is_empty()).collect();
        parts.sort_by_key(|(r, _)| r.id);
        let notices: Vec<WriteNotice>;
        match parts.len() {
            0 => return Ok(()),
            1 => {
                let (r, w) = &parts[0];
                let seq = r.append_txn(0, w)?;
                notices = vec![r.txn_notice(w, seq)];
            }
            _ => {
                let txn = self.shared.txns.next_id()?;
                let mut held: Vec<SeqNo> = Vec::with_capacity(parts.len());
                let mut failed = None;
                for (r, w) in &parts {
                    match r.append_txn(txn, w) {
                        Ok(seq) => held.push(seq),
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                if failed.is_none() {
                    pause_at("prepared");
                    if let Err(e) = self.shared.txns.log_commit(txn) {
                        failed = Some(e);
                    }
                }
                if failed.is_none() {
                    pause_at("logged");
                }
                {
                    let _g = self.shared.gate.write();
                    for ((r, _), &seq) in parts.iter().zip(&held) {
                        r.decide_txn(seq, failed.is_none());
                    }
                }
                if let Some(e) = failed {
                    return Err(e);
                }
                notices = parts.iter().zip(&held).map(|((r, w), &seq)| r.txn_notice(w, seq)).collect();
                for (r, _) in &parts {
                    r.after_commit();
                }
            }
        }
        let listeners = self.shared.listeners.lock().clone();
        for l in listeners {
            l.on_commit(&notices);
        }
        Ok(())
    }
}

/// A bulk load (COPY outside a transaction block) written as it is parsed,
/// one transaction whatever its size. The first rows (up to half of
/// `memtable_bytes_max`) are held `OP_TXN` records, appended without
/// waiting for their fsync, their rows in memory until the commit. Past
/// that the rows are buffered per region and, whenever the buffers pass
/// half of `memtable_bytes_max`, the largest is written as a sorted SST
/// at a held sequence of its own ([`Region::reserve_staged`],
/// [`Region::write_staged`]: no WAL record, not in the manifest), so memory
/// stays bounded by the buffers, not the load. A file is sorted, encoded
/// and written on a thread of its own while the load goes on parsing and
/// buffering (one file at a time: the next waits for it, so memory is the
/// buffers plus one file being written). Every decision first waits for
/// that thread. [`BulkWrite::commit`]: (1) stage what is buffered, sync every
/// region's WAL; (2) name each region's staged files in its manifest with
/// the transaction id (sled, **fsync**); (3) the commit record (the commit
/// point, **fsync**); (4) publish every record and file under the commit
/// gate: readers see all of the load or none of it; (5) flush the regions
/// that got files, which lists them in the manifest proper. Recovery
/// replays the records and installs the named files only with the commit
/// record; otherwise the files are deleted. Dropped or aborted, records and
/// files are published empty. While a load holds sequences in a region,
/// other writers of that region wait behind them (as behind any held
/// record).
pub struct BulkWrite {
    shared: Arc<Shared>,
    txn: u64,
    /// Held records and staged files, in append order.
    held: Vec<(Arc<Region>, SeqNo)>,
    notices: Vec<WriteNotice>,
    /// Bytes of rows held in memory as records.
    held_bytes: usize,
    /// Rows waiting to be staged, per region, with their bytes.
    buffers: Vec<(Arc<Region>, Vec<RecordBatch>, usize)>,
    buffered_bytes: usize,
    /// Staged files per region (named in the manifests before the commit).
    staged: Vec<(Arc<Region>, Vec<FileMeta>)>,
    /// The file being written on its own thread.
    writing: Option<std::thread::JoinHandle<Result<(Arc<Region>, Option<FileMeta>)>>>,
    done: bool,
}

impl std::fmt::Debug for BulkWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkWrite")
            .field("txn", &self.txn)
            .field("records", &self.held.len())
            .field("staged_files", &self.staged_files())
            .finish()
    }
}

impl StorageEngine {
    /// Start a bulk load (see [`BulkWrite`]).
    pub fn begin_bulk(&self) -> Result<BulkWrite> {
        let txn = self.shared.txns.next_id()?;
        Ok(BulkWrite {
            shared: self.shared.clone(),
            txn,
            held: Vec::new(),
            notices: Vec::new(),
            held_bytes: 0,
            buffers: Vec::new(),
            buffered_bytes: 0,
            staged: Vec::new(),
            writing: None,
            done: false,
        })
    }
}

impl BulkWrite {
    /// Append rows (all user columns plus a temporary `__rowid`, as
    /// [`RegionWrites::puts`]) to `region`: a held record while the load's
    /// rows in memory are few, else buffered to be staged as an SST.
    pub fn append(&mut self, region: &Arc<Region>, rows: RecordBatch) -> Result<()> {
        if rows.num_rows() == 0 {
            return Ok(());
        }
        let bytes = rows.get_array_memory_size();
        let limit = self.shared.config.memtable_bytes_max / 2;
        let instant = region.desc.ttl_ms == Some(0);
        if instant || (self.buffers.is_empty() && self.held_bytes + bytes <= limit) {
            self.held_bytes += bytes;
            let w = RegionWrites { puts: vec![rows], ..Default::default() };
            let seq = region.append_held_unsynced(self.txn, &w)?;
            self.held.push((region.clone(), seq));
            self.notices.push(region.txn_notice(&w, seq));
            return Ok(());
        }
        match self.buffers.iter_mut().find(|(r, _, _)| r.id == region.id) {
            Some((_, b, n)) => {
                b.push(rows);
                *n += bytes;
            }
            None => self.buffers.push((region.clone(), vec![rows], bytes)),
        }
        self.buffered_bytes += bytes;
        while self.buffered_bytes > limit {
            let largest = (0..self.buffers.len()).max_by_key(|&i| self.buffers[i].2).expect("buffers hold the bytes");
            self.stage(largest, true)?;
        }
        Ok(())
    }

    /// Write region buffer `i` as one staged SST. With `cut`, the rows at
    /// its latest time stay buffered for the next file
    /// ([`Region::split_last_tick`]), so the load's files do not overlap.
    fn stage(&mut self, i: usize, cut: bool) -> Result<()> {
        let (region, mut rows, bytes) = self.buffers.swap_remove(i);
        self.buffered_bytes -= bytes;
        if cut {
            let carry = region.split_last_tick(&mut rows)?;
            if !carry.is_empty() {
                let n: usize = carry.iter().map(|b| b.get_array_memory_size()).sum();
                self.buffered_bytes += n;
                self.buffers.push((region.clone(), carry, n));
            }
        }
        let n = rows.iter().map(|b| b.num_rows() as u64).sum::<u64>();
        if n == 0 {
            return Ok(());
        }
        let (seq, rowid_start) = region.reserve_staged(n)?;
        self.held.push((region.clone(), seq));
        let w = RegionWrites { puts: rows, ..Default::default() };
        let mut notice = region.txn_notice(&w, seq);
        notice.seq_range = (seq, seq);
        self.notices.push(notice);
        let rows = w.puts;
        // One file at a time: the previous one is done before the next
        // starts (and its error ends the load here).
        self.settle()?;
        let txn = self.txn;
        let job = move || -> Result<(Arc<Region>, Option<FileMeta>)> {
            let meta = region.write_staged(txn, seq, rowid_start, &rows)?;
            Ok((region, meta))
        };
        let handle = std::thread::Builder::new()
            .name("weir-bulk-stage".into())
            .spawn(job)
            .map_err(|e| crate::err!(Internal, "cannot start a thread to write a bulk load's file: {e}"))?;
        self.writing = Some(handle);
        Ok(())
    }

    /// Wait for the file being written, if any, and record it.
    pub fn settle(&mut self) -> Result<()> {
        let Some(h) = self.writing.take() else { return Ok(()) };
        let (region, meta) = h.join().map_err(|_| crate::err!(Internal, "writing a bulk load's file panicked"))??;
        if let Some(meta) = meta {
            match self.staged.iter_mut().find(|(r, _)| r.id == region.id) {
                Some((_, files)) => files.push(meta),
                None => self.staged.push((region, vec![meta])),
            }
        }
        Ok(())
    }

    /// Held records and staged files so far.
    pub fn records(&self) -> usize {
        self.held.len()
    }

    /// Files staged so far.
    pub fn staged_files(&self) -> usize {
        self.staged.iter().map(|(_, f)| f.len()).sum()
    }

    /// Make the whole load durable and visible at once.
    pub fn commit(mut self) -> Result<()> {
        while !self.buffers.is_empty() {
            self.stage(self.buffers.len() - 1, false)?;
        }
        self.settle()?;
        self.done = true;
        if self.held.is_empty() {
            return Ok(());
        }
        let mut last: Vec<(Arc<Region>, SeqNo)> = Vec::new();
        for (r, seq) in &self.held {
            match last.iter_mut().find(|(x, _)| x.id == r.id) {
                Some(e) => e.1 = e.1.max(*seq),
                None => last.push((r.clone(), *seq)),
            }
        }
        let mut failed = last.iter().map(|(r, seq)| r.sync_through(*seq)).find_map(|r| r.err());
        let mut prepared: Vec<&Arc<Region>> = Vec::new();
        if failed.is_none() {
            for (r, files) in &self.staged {
                if let Err(e) = r.prepare_staged(self.txn, files) {
                    failed = Some(e);
                    break;
                }
                prepared.push(r);
            }
        }
        if failed.is_none() {
            pause_at("prepared");
            if let Err(e) = self.shared.txns.log_commit(self.txn) {
                failed = Some(e);
            }
        }
        if failed.is_none() {
            pause_at("logged");
        }
        self.decide(failed.is_none());
        if let Some(e) = failed {
            for r in prepared {
                if let Err(u) = r.unprepare_staged(self.txn) {
                    tracing::warn!(region = r.id, error = %u, "cannot unname the files of a failed bulk load; the next open deletes them");
                }
            }
            return Err(e);
        }
        // List the published files in the manifests now (a crash before
        // that installs them again at open).
        for (r, _) in &self.staged {
            if let Err(e) = r.flush() {
                tracing::warn!(region = r.id, error = %e, "flush after a bulk load failed; retried later");
            }
        }
        for (r, _) in &last {
            r.after_commit();
        }
        let listeners = self.shared.listeners.lock().clone();
        for l in listeners {
            l.on_commit(&self.notices);
        }
        Ok(())
    }

    /// Drop the load: its records and files are published empty.
    pub fn abort(mut self) {
        self.done = true;
        self.discard();
    }

    /// Publish every record and file empty, once the file being written
    /// (whose sequence is held) is attached or has failed.
    fn discard(&mut self) {
        if let Some(h) = self.writing.take() {
            let _ = h.join();
        }
        self.decide(false);
    }

    fn decide(&self, commit: bool) {
        let _g = self.shared.gate.write();
        for (r, seq) in &self.held {
            r.decide_txn(*seq, commit);
        }
    }
}

impl Drop for BulkWrite {
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            self.discard();
        }
    }
}

#[cfg(test)]
#[path = "txn_tests.rs"]
mod tests;
