//! Flush: the memtable to a sorted, version-pruned SST, committed in the
//! manifest by compare-and-set, then the WAL truncated.

use super::*;

impl Region {
    /// Flush and compaction share this: sort by (key, time, seq), drop the
    /// versions no reader can see (and tombstones when `drop_deletes`), and
    /// write what is left as one SST. Returns the file (None when nothing
    /// is left) and the history horizon the pruning reached.
    pub(super) fn write_sorted(
        &self,
        batches: Vec<RecordBatch>,
        drop_deletes: bool,
        cutoff: Option<i64>,
    ) -> Result<(Option<Arc<SstFile>>, SeqNo)> {
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

    pub(super) fn sst_path(&self) -> String {
        let id = self.next_file_id.fetch_add(1, Ordering::SeqCst);
        format!("{}/sst/{id:020}.parquet", region_dir_name(self.id))
    }

    /// Commit a manifest edit with compare-and-set; `edit` sees the current one.
    pub(super) fn commit(&self, edit: impl FnOnce(&mut Manifest)) -> Result<(Arc<Manifest>, Vec<u8>)> {
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
        let (frozen, upto, loads) = {
            let mut inner = self.inner.lock();
            if !inner.mem.is_empty() {
                let mem = std::mem::take(&mut inner.mem);
                inner.frozen.push(Arc::new(mem));
            }
            if inner.frozen.is_empty() && inner.last_seq == inner.manifest.flushed_seq && inner.unmanifested.is_empty() {
                return Ok(());
            }
            // Unpublished writes stay in the WAL past the rotation: the new
            // segment starts after every appended record.
            let next = inner.appended_seq + 1;
            inner.log.rotate(next)?;
            // Published bulk-load files are at or below `last_seq`: this
            // commit lists them, so `flushed_seq` may pass them.
            (inner.frozen.clone(), inner.last_seq, inner.unmanifested.clone())
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
            for (_, f) in &loads {
                if !m.files.iter().any(|x| x.path == f.meta.path) {
                    m.files.push(f.meta.clone());
                }
            }
            // A load's files may be published over several decisions: only
            // the ones listed now leave its staged entry.
            for l in m.staged.iter_mut() {
                l.files.retain(|x| !loads.iter().any(|(_, f)| f.meta.path == x.path));
            }
            m.staged.retain(|l| !l.files.is_empty());
        })?;
        let mut inner = self.inner.lock();
        inner.manifest = m;
        inner.manifest_bytes = bytes;
        inner.unmanifested.retain(|(_, f)| !loads.iter().any(|(_, x)| Arc::ptr_eq(f, x)));
        if let Some(f) = new_file {
            let mut files = (*inner.files).clone();
            files.push(f);
            inner.files = Arc::new(files);
        }
        let freed: usize = frozen.iter().map(|m| m.bytes).sum();
        inner.frozen.retain(|m| !frozen.iter().any(|f| Arc::ptr_eq(f, m)));
        let _ = self.shared.mem_used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(freed)));
        // Held records stay (their annexes are someone's progress).
        let keep_from = self.wal_floor();
        if let Err(e) = inner.log.obsolete(upto.min(keep_from.saturating_sub(1))) {
            tracing::warn!(region = self.id, error = %e, "cannot delete flushed wal segments");
        }
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
