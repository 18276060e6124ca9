//! Time-window compaction: merges a window's SSTs into one file, dropping
//! versions no reader needs, tombstones and expired rows.

use super::*;

impl Region {
    /// Merge SSTs now: every time window with two or more files (or with
    /// old versions, tombstones or expired rows) becomes one file. Returns
    /// the number of input files merged.
    pub fn compact(&self) -> Result<usize> {
        self.compact_with(true)
    }

    /// Periodic work: flush over the thresholds, merge small files.
    pub(in crate::storage) fn background_work(&self) -> Result<()> {
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

    pub(super) fn compact_with(&self, force: bool) -> Result<usize> {
        let _c = self.compact_lock.lock();
        if self.closed.load(Ordering::SeqCst) {
            return Ok(0);
        }
        let cfg = &self.shared.tuning;
        // Files of bulk loads the manifest does not list yet wait for the
        // flush that lists them.
        let files: Vec<Arc<SstFile>> = {
            let inner = self.inner.lock();
            inner.files.iter().filter(|f| !inner.unmanifested.iter().any(|(_, u)| Arc::ptr_eq(f, u))).cloned().collect()
        };
        let cutoff = self.ttl_cutoff();
        let window_us = cfg.compaction_window_ms.max(1).saturating_mul(1000);
        let mut windows: BTreeMap<i64, Vec<Arc<SstFile>>> = BTreeMap::new();
        for f in files.iter() {
            let w = f.meta.time_range.map_or(0, |(min, _)| min.div_euclid(window_us));
            windows.entry(w).or_default().push(f.clone());
        }
        let mut merged = 0;
        // A merge reads its inputs whole: background merges take at most
        // `memtable_bytes_max` of decoded rows each (in time order), so
        // their memory is about a flush's, whatever the window holds.
        let budget = self.shared.config.memtable_bytes_max as u64;
        for (_, group) in windows {
            let expired = |f: &SstFile| cutoff.is_some_and(|c| f.meta.time_range.is_some_and(|(min, _)| min < c));
            if force {
                if group.len() >= 2 || group.iter().any(|f| !f.meta.distinct || expired(f)) {
                    self.merge(&group, cutoff)?;
                    merged += group.len();
                }
                continue;
            }
            let mut small: Vec<Arc<SstFile>> = group.into_iter().filter(|f| f.meta.bytes < cfg.compaction_file_bytes_max).collect();
            small.sort_by_key(|f| (f.meta.time_range.map(|r| r.0), f.meta.seq_range.0));
            let mut runs: Vec<Vec<Arc<SstFile>>> = vec![vec![]];
            let mut run_bytes = 0u64;
            for f in small {
                let b = f.meta.decoded_bytes();
                let run = runs.last_mut().expect("one run");
                if !run.is_empty() && run_bytes + b > budget {
                    runs.push(vec![f]);
                    run_bytes = b;
                } else {
                    run.push(f);
                    run_bytes += b;
                }
            }
            for pick in runs {
                if pick.len() >= cfg.compaction_files_min.max(2) {
                    self.merge(&pick, cutoff)?;
                    merged += pick.len();
                }
            }
        }
        Ok(merged)
    }

    /// Replace `inputs` by one file holding the versions still readable.
    pub(super) fn merge(&self, inputs: &[Arc<SstFile>], cutoff: Option<i64>) -> Result<()> {
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
}
