//! The write path of a region: WAL append with group commit, publish into
//! the memtable, transaction records, write notices and flush triggers.

use super::*;

impl Region {
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

    pub(super) fn append(&self, op: u8, batch: &RecordBatch) -> Result<SeqNo> {
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
            self.check_writable(&inner)?;
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
            inner.pending.push_back(Pending { first: seq, seq, chunks: chunk.into_iter().collect(), held: false, staged: None });
            if !self.shared.config.wal_fsync {
                inner.synced_seq = seq;
                self.publish(&mut inner, seq)?;
            }
            inner = self.wait_synced(inner, seq)?;
            (seq, inner.mem.bytes > cfg.memtable_bytes_max || inner.log.bytes() > tun.wal_bytes_max)
        };
        self.notify(seq, batch, n, op == OP_PUT);
        self.flush_checks(flush_needed);
        Ok(seq)
    }

    /// Group commit: return once `seq` is published, leading a WAL sync when
    /// none is running (see the module header).
    pub(super) fn wait_synced<'a>(&'a self, mut inner: MutexGuard<'a, Inner>, seq: SeqNo) -> Result<MutexGuard<'a, Inner>> {
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
    pub(super) fn lead_sync<'a>(&'a self, mut inner: MutexGuard<'a, Inner>) -> MutexGuard<'a, Inner> {
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
    pub(super) fn wait_durable<'a>(&'a self, mut inner: MutexGuard<'a, Inner>, seq: SeqNo) -> Result<MutexGuard<'a, Inner>> {
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
    pub(in crate::storage) fn append_txn(&self, txn: u64, w: &crate::storage::txn::RegionWrites) -> Result<SeqNo> {
        self.append_txn_with(txn, w, true)
    }

    /// As [`Region::append_txn`] for a held record (`txn != 0`) without
    /// waiting for its fsync: a bulk load appends many records and syncs
    /// once ([`Region::sync_through`]) before its commit record.
    pub(in crate::storage) fn append_held_unsynced(&self, txn: u64, w: &crate::storage::txn::RegionWrites) -> Result<SeqNo> {
        debug_assert!(txn != 0);
        self.append_txn_with(txn, w, false)
    }

    /// Return once every record up to `seq` is durable.
    pub(in crate::storage) fn sync_through(&self, seq: SeqNo) -> Result<()> {
        let inner = self.inner.lock();
        self.wait_durable(inner, seq).map(drop)
    }

    fn append_txn_with(&self, txn: u64, w: &crate::storage::txn::RegionWrites, wait_durable: bool) -> Result<SeqNo> {
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
        let annexed = !w.annex.is_empty();
        let mut payload = Vec::with_capacity(64 + del.get_array_memory_size() + put.get_array_memory_size() + w.annex.len());
        payload.push(if annexed { OP_TXN_ANNEX } else { OP_TXN });
        payload.extend_from_slice(&[0u8; 8]);
        payload.extend_from_slice(&txn.to_le_bytes());
        payload.extend_from_slice(&[0u8; 8]);
        let head = if annexed { 33 } else { 25 };
        if annexed {
            payload.extend_from_slice(&[0u8; 8]);
        }
        encode_batch(&del, &mut payload)?;
        let del_len = (payload.len() - head) as u64;
        payload[17..25].copy_from_slice(&del_len.to_le_bytes());
        encode_batch(&put, &mut payload)?;
        if annexed {
            let put_len = (payload.len() - head) as u64 - del_len;
            payload[25..33].copy_from_slice(&put_len.to_le_bytes());
            payload.extend_from_slice(&w.annex);
        }
        let instant = self.desc.ttl_ms == Some(0);
        let mut inner = self.inner.lock();
        self.check_writable(&inner)?;
        let first = inner.appended_seq + 1;
        let seq = first + 1;
        let rowid_start = inner.next_rowid;
        payload[1..9].copy_from_slice(&rowid_start.to_le_bytes());
        let chunks = if instant { vec![] } else { txn_chunks(&self.layout, &del, &put, rowid_start, seq)? };
        inner.log.append_unsynced(seq, &payload)?;
        inner.appended_seq = seq;
        inner.next_rowid += put.num_rows() as u64;
        inner.pending.push_back(Pending { first, seq, chunks, held: txn != 0, staged: None });
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

    /// Cut a bulk load's buffered rows at a time boundary before they are
    /// staged: the rows at the buffer's latest time are taken out of `rows`
    /// and returned, to go into the next staged file. With time-ordered
    /// input (a tick's rows arriving together) consecutive staged files
    /// then have disjoint time ranges, so a scan merges them one at a time
    /// instead of as one group of overlapping sources. Nothing is taken when
    /// every row has that time, or the table has no last-write-wins time
    /// identity (scans do not group its files by time).
    pub(in crate::storage) fn split_last_tick(&self, rows: &mut Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        let Some(ti) = self.layout.time_index.filter(|_| self.desc.last_write_wins()) else { return Ok(vec![]) };
        let mut bounds = Vec::with_capacity(rows.len());
        for b in rows.iter() {
            bounds.push(time_bounds(b.column(ti))?);
        }
        let Some(last) = bounds.iter().flatten().map(|b| b.1).max() else { return Ok(vec![]) };
        if bounds.iter().all(|b| b.is_some_and(|(lo, _)| lo == last)) {
            return Ok(vec![]);
        }
        let mut carry = Vec::new();
        for (b, t) in rows.iter_mut().zip(&bounds) {
            if t.is_none_or(|(_, hi)| hi < last) {
                continue;
            }
            // Filtered copies, so the buffer's byte count is what they hold.
            // (A null time is not the last one: it stays.)
            let at_last = cmp::eq(&time_values(b.column(ti))?, &Int64Array::new_scalar(last))?;
            let at_last = if at_last.null_count() > 0 { arrow::compute::prep_null_mask_filter(&at_last) } else { at_last };
            carry.push(arrow::compute::filter_record_batch(b, &at_last)?);
            *b = arrow::compute::filter_record_batch(b, &arrow::compute::not(&at_last)?)?;
        }
        rows.retain(|b| b.num_rows() > 0);
        Ok(carry)
    }

    /// Reserve the sequence and row ids of `rows` rows of bulk load `txn`
    /// to be staged as one SST ([`Region::write_staged`]): held like a
    /// transaction record (later writers wait behind it) but with no WAL
    /// record and no memtable chunk. Until a file is attached the sequence
    /// is empty, so a decision (or a failed write) publishes nothing.
    /// Returns the sequence and the first row id.
    pub(in crate::storage) fn reserve_staged(&self, rows: u64) -> Result<(SeqNo, u64)> {
        let mut inner = self.inner.lock();
        self.check_writable(&inner)?;
        let seq = inner.appended_seq + 1;
        let rowid_start = inner.next_rowid;
        inner.appended_seq = seq;
        inner.next_rowid += rows;
        if !self.shared.config.wal_fsync {
            inner.synced_seq = seq;
        }
        inner.pending.push_back(Pending { first: seq, seq, chunks: vec![], held: true, staged: None });
        Ok((seq, rowid_start))
    }

    /// Write `rows` (user columns plus a temporary `__rowid`, as
    /// [`crate::storage::txn::RegionWrites::puts`]) of bulk load `txn` as
    /// one SST at the sequence and row ids [`Region::reserve_staged`] gave
    /// them, and attach it to that held sequence. The file is not in the
    /// manifest: the load names it there before its commit point
    /// ([`Region::prepare_staged`]), and a commit publishes it into the
    /// file list. Safe on another thread than the load's (the load waits
    /// for it before any decision). Returns the file (None: no rows).
    pub(in crate::storage) fn write_staged(
        &self,
        txn: u64,
        seq: SeqNo,
        rowid_start: u64,
        rows: &[RecordBatch],
    ) -> Result<Option<FileMeta>> {
        debug_assert!(txn != 0);
        let mut full = Vec::with_capacity(rows.len());
        let mut next = rowid_start;
        for b in rows {
            let k = b.num_rows() as u64;
            let mut cols = b.columns()[..self.layout.ncols].to_vec();
            cols.push(Arc::new(UInt64Array::from_iter_values(next..next + k)));
            full.push(with_version(&self.layout, cols, seq, OP_PUT)?);
            next += k;
        }
        // Sorted, and versions within the load pruned as a flush would.
        let (file, _) = self.write_sorted(full, false, None)?;
        let Some(file) = file else { return Ok(None) };
        let meta = file.meta.clone();
        let mut inner = self.inner.lock();
        match inner.pending.iter_mut().find(|p| p.seq == seq && p.held) {
            Some(p) => p.staged = Some((txn, file)),
            None => file.mark_obsolete(),
        }
        Ok(Some(meta))
    }

    /// Name a bulk load's staged files in the manifest (durably, before
    /// the load's commit record): after a crash, open installs them when
    /// the transaction committed and deletes them otherwise.
    pub(in crate::storage) fn prepare_staged(&self, txn: u64, files: &[FileMeta]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let _m = self.manifest_lock.lock();
        let next_rowid = self.inner.lock().next_rowid;
        let (m, bytes) = self.commit(|m| m.staged.push(StagedLoad { txn, next_rowid, files: files.to_vec() }))?;
        let mut inner = self.inner.lock();
        inner.manifest = m;
        inner.manifest_bytes = bytes;
        Ok(())
    }

    /// Forget a prepared load that did not commit (its files are deleted
    /// when the decision publishes it empty). Failing, open does it.
    pub(in crate::storage) fn unprepare_staged(&self, txn: u64) -> Result<()> {
        let _m = self.manifest_lock.lock();
        if !self.inner.lock().manifest.staged.iter().any(|l| l.txn == txn) {
            return Ok(());
        }
        let (m, bytes) = self.commit(|m| m.staged.retain(|l| l.txn != txn))?;
        let mut inner = self.inner.lock();
        inner.manifest = m;
        inner.manifest_bytes = bytes;
        Ok(())
    }

    /// The commit decision for a held transaction record: publish its rows
    /// (`commit`) or publish it empty. Callers hold the engine's commit gate.
    pub(in crate::storage) fn decide_txn(&self, seq: SeqNo, commit: bool) {
        let mut inner = self.inner.lock();
        if let Some(p) = inner.pending.iter_mut().find(|p| p.seq == seq) {
            p.held = false;
            if !commit {
                p.chunks.clear();
                if let Some((_, f)) = p.staged.take() {
                    f.mark_obsolete();
                }
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
    pub(in crate::storage) fn txn_notice(&self, w: &crate::storage::txn::RegionWrites, seq: SeqNo) -> WriteNotice {
        let time_range = self.desc.time_index.and_then(|ti| {
            w.puts.iter().filter_map(|b| time_bounds(b.column(ti)).ok().flatten()).reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
        });
        let rows = w.puts.iter().map(|b| b.num_rows()).sum::<usize>() + w.deletes.iter().map(|b| b.num_rows()).sum::<usize>();
        let instant_rows = if self.desc.ttl_ms == Some(0) { w.puts.clone() } else { vec![] };
        WriteNotice {
            table_name: self.desc.table_name.clone(),
            region_id: self.id,
            seq_range: (seq - 1, seq),
            time_range,
            rows,
            instant_rows,
        }
    }

    /// Flush checks after a published transaction record (as after a
    /// plain write).
    pub(super) fn after_write(&self) {
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
    pub(super) fn flush_checks(&self, flush_needed: bool) {
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
    pub(in crate::storage) fn after_commit(&self) {
        self.after_write();
    }

    /// Move the pending writes up to `upto` into the memtable, in sequence
    /// order, and make them visible.
    pub(super) fn publish(&self, inner: &mut Inner, upto: SeqNo) -> Result<()> {
        while inner.pending.front().is_some_and(|p| p.seq <= upto && !p.held) {
            let p = inner.pending.pop_front().unwrap();
            let seq = p.seq;
            debug_assert_eq!(p.first, inner.last_seq + 1, "published sequences are dense");
            if let Some((txn, f)) = p.staged {
                let mut files = (*inner.files).clone();
                files.push(f.clone());
                inner.files = Arc::new(files);
                inner.unmanifested.push((txn, f));
            }
            for chunk in p.chunks {
                let op = chunk.batch.column(self.layout.op()).as_primitive::<arrow::datatypes::UInt8Type>();
                if op.values().iter().any(|&o| o == OP_DELETE) {
                    inner.last_delete_seq = seq;
                }
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

    pub(super) fn wal_failed_error(&self, cause: &str) -> crate::error::WeirError {
        crate::err!(Storage, "the wal of region {} could not be synced; writes fail until the region is reopened", self.id)
            .with_detail(cause.to_string())
            .with_hint("check the disk, then restart the server; writes acknowledged before the failure are safe")
    }

    pub(super) fn notify(&self, seq: SeqNo, batch: &RecordBatch, rows: usize, put: bool) {
        let time_range = self.desc.time_index.and_then(|ti| time_bounds(batch.column(ti)).ok().flatten());
        let instant_rows = if put && self.desc.ttl_ms == Some(0) { vec![batch.clone()] } else { vec![] };
        let notice = WriteNotice {
            table_name: self.desc.table_name.clone(),
            region_id: self.id,
            seq_range: (seq, seq),
            time_range,
            rows,
            instant_rows,
        };
        let listeners = self.shared.listeners.lock().clone();
        for l in listeners {
            l.on_write(&notice);
        }
    }
}
