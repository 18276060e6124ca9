//! The read path of a region: snapshots, row filters, source reads,
//! version merge and scans. Imports only what the region module does.

use super::*;

/// What a read sees, taken under the lock in one step.
pub(super) struct Snapshot {
    /// Memtable chunks with their time ranges.
    pub(super) mem: Vec<(RecordBatch, Option<(i64, i64)>)>,
    /// `mem[overlay_from..]` are a transaction's own uncommitted writes:
    /// newer than everything, never cut by sequence bounds.
    pub(super) overlay_from: usize,
    pub(super) files: Arc<Vec<Arc<SstFile>>>,
    pub(super) flushed_seq: SeqNo,
    pub(super) history_seq: SeqNo,
    pub(super) last_seq: SeqNo,
}

/// Rows read from one memtable or SST.
pub(super) struct Source {
    pub(super) batches: Vec<RecordBatch>,
    /// Time range the source may cover (None: unknown or no time index).
    pub(super) time: Option<(i64, i64)>,
    /// No two rows share an identity.
    pub(super) distinct: bool,
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
pub(super) struct RowFilter {
    pub(super) seq_after: Option<SeqNo>,
    pub(super) seq_upto: Option<SeqNo>,
    pub(super) time: Option<(i64, i64)>,
    pub(super) ttl_cutoff: Option<i64>,
    pub(super) eq: Vec<(usize, ArrayRef)>,
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
    pub(super) fn snapshot(&self, after: Option<SeqNo>, upto: Option<SeqNo>, time: Option<(i64, i64)>, with_mem: bool) -> Snapshot {
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

    pub(super) fn row_mask(&self, batch: &RecordBatch, cols: &[usize], f: &RowFilter) -> Result<Option<BooleanArray>> {
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
    pub(super) fn read(&self, snap: &Snapshot, cols: &[usize], f: &RowFilter, with_ssts: bool) -> Result<Vec<Source>> {
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
    pub(super) fn components(&self, mut sources: Vec<Source>) -> Vec<Vec<Source>> {
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

    pub(super) fn key_cols(&self, batch: &RecordBatch, cols: &[usize]) -> Vec<ArrayRef> {
        self.layout.identity.iter().map(|c| batch.column(cols.iter().position(|x| x == c).expect("identity is read")).clone()).collect()
    }

    /// Newest version of each identity (tombstones included).
    pub(super) fn newest(&self, batch: &RecordBatch, cols: &[usize]) -> Result<RecordBatch> {
        let keys = self.keys.encode(&self.key_cols(batch, cols))?;
        let seq = batch.column(cols.iter().position(|&c| c == self.layout.seq()).unwrap()).as_primitive::<UInt64Type>();
        crate::storage::version::filter(batch, newest_mask(&keys, seq))
    }

    /// The file and row-group pruning predicate of a row filter.
    pub(super) fn sst_predicate<'a>(&self, f: &RowFilter, eq: &'a [(usize, PruneValue)]) -> SstPredicate<'a> {
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
    pub(super) fn split_isolated(&self, snap: &Snapshot, f: &RowFilter) -> (Vec<Arc<SstFile>>, Vec<Arc<SstFile>>) {
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
    pub(super) fn read_isolated(
        &self,
        file: &SstFile,
        proj: &[usize],
        f: &RowFilter,
        with_rowid: bool,
        out: &mut Vec<RecordBatch>,
    ) -> Result<()> {
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
                    let visible = crate::storage::version::filter(&b, put_mask(b.column(opos)))?;
                    if visible.num_rows() > 0 {
                        out.push(visible.project(&out_cols)?);
                    }
                }
                continue;
            }
            let all = concat_all(&schema, &batches)?;
            let visible = if distinct {
                crate::storage::version::filter(&all, put_mask(all.column(opos)))?
            } else {
                let newest = self.newest(&all, &cols)?;
                crate::storage::version::filter(&newest, put_mask(newest.column(opos)))?
            };
            if visible.num_rows() > 0 {
                out.push(visible.project(&out_cols)?);
            }
        }
        Ok(out)
    }

    /// A transaction's own writes as full-schema batches above every
    /// sequence: tombstones, then rows (later rows win ties).
    pub(super) fn overlay_mem(&self, w: &crate::storage::txn::RegionWrites) -> Result<Vec<(RecordBatch, Option<(i64, i64)>)>> {
        let mut out = Vec::new();
        let time = |b: &RecordBatch| -> Result<Option<(i64, i64)>> {
            Ok(match self.layout.time_index {
                Some(ti) => time_bounds(b.column(ti))?,
                None => None,
            })
        };
        for (batches, seq, op) in
            [(&w.deletes, crate::storage::txn::OVERLAY_SEQ, OP_DELETE), (&w.puts, crate::storage::txn::OVERLAY_SEQ + 1, OP_PUT)]
        {
            for b in batches.iter().filter(|b| b.num_rows() > 0) {
                let full = with_version(&self.layout, b.columns().to_vec(), seq, op)?;
                let t = time(&full)?;
                out.push((full, t));
            }
        }
        Ok(out)
    }

    pub(super) fn range_unsupported(&self, seq: SeqNo, history: SeqNo) -> crate::error::WeirError {
        crate::err!(SequenceRangeUnsupported, "sequence {seq} of region {} can no longer be read exactly", self.id)
            .with_detail(format!(
                "region_id={} given_seq={seq} history_seq={history}: versions replaced at or before {history} were discarded",
                self.id
            ))
            .with_hint("hold versions with hold_versions before reading old snapshots, or run a full query")
    }
}
