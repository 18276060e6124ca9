//! The read path of a region: snapshots, row filters, source reads,
//! version merge and scans. Imports only what the region module does.

use super::*;
use crate::storage::sst::{decoded_estimate, scan_sst, SstScan};

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
    /// Only rows whose time index is one of these (the change log's
    /// lookup of earlier versions: an identity includes its time); every
    /// one lies in `time` when both are set.
    pub(super) times: Option<Arc<TimeSet>>,
}

/// A set of time index values asked about every row a read decodes (the
/// change log's lookup of earlier versions goes over whole SSTs for a few
/// changed identities): a bit filter of about 16 bits per member, small
/// enough to stay in the CPU cache, answers "no" for almost every row
/// before the hash set is asked.
pub(super) struct TimeSet {
    set: std::collections::HashSet<i64, crate::storage::version::FxBuild>,
    bits: Vec<u64>,
    shift: u32,
}

impl TimeSet {
    pub(super) fn new(set: std::collections::HashSet<i64, crate::storage::version::FxBuild>) -> TimeSet {
        let nbits = (set.len().max(1) * 16).next_power_of_two().clamp(1 << 12, 1 << 24);
        let shift = 64 - nbits.trailing_zeros();
        let mut bits = vec![0u64; nbits / 64];
        for &t in &set {
            let h = Self::slot(t, shift);
            bits[h >> 6] |= 1 << (h & 63);
        }
        TimeSet { set, bits, shift }
    }

    /// Fibonacci hashing: the top bits of t × 2^64/φ (regularly spaced
    /// times spread evenly).
    #[inline]
    fn slot(t: i64, shift: u32) -> usize {
        ((t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
    }

    #[inline]
    pub(super) fn contains(&self, t: i64) -> bool {
        let h = Self::slot(t, self.shift);
        (self.bits[h >> 6] >> (h & 63)) & 1 == 1 && self.set.contains(&t)
    }
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

pub(super) fn prune_eq(f: &RowFilter) -> Vec<(usize, Vec<PruneValue>)> {
    f.eq.iter().filter_map(|(c, v)| PruneValue::set_from_array(v).map(|p| (*c, p))).collect()
}

fn overlaps(a: (i64, i64), b: (i64, i64)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

impl Region {
    pub(super) fn snapshot(&self, after: Option<SeqNo>, upto: Option<SeqNo>, time: Option<(i64, i64)>, with_mem: bool) -> Snapshot {
        Self::snapshot_of(&self.inner.lock(), after, upto, time, with_mem)
    }

    /// [`Region::snapshot`] under a lock the caller holds.
    pub(super) fn snapshot_of(
        inner: &Inner,
        after: Option<SeqNo>,
        upto: Option<SeqNo>,
        time: Option<(i64, i64)>,
        with_mem: bool,
    ) -> Snapshot {
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
            flushed_seq: inner.flushed_through(),
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
            // Every member of `times` lies in `time` (which still prunes
            // files and row groups): the set alone decides.
            let time = f.time.filter(|_| f.times.is_none());
            if time.is_some() || f.ttl_cutoff.is_some() {
                let t = time_values(batch.column(pos(ti)))?;
                if let Some((lo, hi)) = time {
                    mask = and(mask, cmp::gt_eq(&t, &scalar_i64(lo))?)?;
                    mask = and(mask, cmp::lt(&t, &scalar_i64(hi))?)?;
                }
                if let Some(cut) = f.ttl_cutoff {
                    mask = and(mask, cmp::gt_eq(&t, &scalar_i64(cut))?)?;
                }
            }
            if let Some(set) = &f.times {
                let t = time_values(batch.column(pos(ti)))?;
                let t = t.as_primitive::<arrow::datatypes::Int64Type>();
                let v = t.values();
                let m = BooleanArray::from(arrow::buffer::BooleanBuffer::collect_bool(v.len(), |i| set.contains(v[i])));
                mask = and(mask, m)?;
            }
        }
        for (c, v) in &f.eq {
            let col = batch.column(pos(*c));
            let v = arrow::compute::cast(v, col.data_type())?;
            if v.len() > 1 {
                if let (Some(col), Some(vals)) = (col.as_string_opt::<i32>(), v.as_string_opt::<i32>()) {
                    mask = and(mask, utf8_in_list(col, vals))?;
                    continue;
                }
            }
            // One value, or an IN-list: any of them.
            let mut any: Option<BooleanArray> = None;
            for i in 0..v.len() {
                let m = cmp::eq(col, &Scalar::new(v.slice(i, 1)))?;
                any = Some(match any {
                    None => m,
                    Some(a) => arrow::compute::or(&a, &m)?,
                });
            }
            if let Some(any) = any {
                mask = and(mask, any)?;
            }
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
        for (i, (b, _)) in snap.mem.iter().enumerate() {
            keep_with(b.project(cols)?, if i >= snap.overlay_from { &unbounded } else { f }, &mut out)?;
        }
        if !out.is_empty() {
            sources.push(Source { batches: std::mem::take(&mut out) });
        }
        if with_ssts {
            let eq = prune_eq(f);
            let p = self.sst_predicate(f, &eq);
            for file in snap.files.iter() {
                if !file_may_match(&file.meta, &p) {
                    self.counters.ssts_pruned.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let Some(mut scan) = self.open_sst(file, cols, &p, true) else { continue };
                // Sequence bounds the whole file meets are not checked row by row.
                let (lo, hi) = file.meta.seq_range;
                let ff = RowFilter { seq_after: f.seq_after.filter(|&a| lo <= a), seq_upto: f.seq_upto.filter(|&u| hi > u), ..f.clone() };
                while let Some(b) = scan.next_batch()? {
                    keep_with(b, &ff, &mut out)?;
                }
                if !out.is_empty() {
                    sources.push(Source { batches: std::mem::take(&mut out) });
                }
            }
        }
        Ok(sources)
    }

    pub(super) fn key_cols(&self, batch: &RecordBatch, cols: &[usize]) -> Vec<ArrayRef> {
        self.layout.identity.iter().map(|c| batch.column(cols.iter().position(|x| x == c).expect("identity is read")).clone()).collect()
    }

    /// An SST's scan through the decoded-column cache (filling it when
    /// `fill`), counted in the region's statistics; None when pruning leaves
    /// it no row group.
    pub(super) fn open_sst(&self, file: &Arc<SstFile>, cols: &[usize], p: &SstPredicate<'_>, fill: bool) -> Option<SstScan> {
        let scan = self.seek_leading(self.cached_scan(scan_sst(file, cols, p), fill), p.eq);
        self.counters.row_groups_read.fetch_add(scan.read as u64, Ordering::Relaxed);
        self.counters.row_groups_pruned.fetch_add(scan.pruned as u64, Ordering::Relaxed);
        if scan.read == 0 {
            self.counters.ssts_pruned.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.counters.ssts_read.fetch_add(1, Ordering::Relaxed);
        Some(scan)
    }

    fn cached_scan(&self, scan: SstScan, fill: bool) -> SstScan {
        let scan = scan.with_cache(&self.shared.column_cache, &self.cache_counts).keep_text(&self.layout.primary_key);
        if fill {
            scan
        } else {
            scan.without_fill()
        }
    }

    /// Whether a scan of `cols` over `files` may fill the decoded-column
    /// cache: its row groups that may match take at most half the budget
    /// decoded (`ColumnCache::admits`).
    fn admits(&self, files: &[Arc<SstFile>], cols: &[usize], f: &RowFilter) -> bool {
        let eq = prune_eq(f);
        let p = self.sst_predicate(f, &eq);
        let bytes = files
            .iter()
            .filter(|x| file_may_match(&x.meta, &p))
            .map(|x| decoded_estimate(x, cols, &p, &self.layout.primary_key))
            .fold(0usize, usize::saturating_add);
        self.shared.column_cache.admits(bytes)
    }

    /// An equality on the first column of the SSTs' sort order (the first
    /// primary-key column) cuts whole row groups to its runs.
    fn seek_leading(&self, scan: SstScan, eq: &[(usize, Vec<PruneValue>)]) -> SstScan {
        match self.layout.sort.first().and_then(|l| eq.iter().find(|(c, _)| c == l)) {
            Some((c, v)) => scan.seek_leading(*c, v.clone()),
            None => scan,
        }
    }

    pub(super) fn sst_predicate<'a>(&self, f: &RowFilter, eq: &'a [(usize, Vec<PruneValue>)]) -> SstPredicate<'a> {
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

    /// Plan the read of an isolated SST (see [`Region::split_isolated`]):
    /// only the projected and filtered columns, `__op` when the file has
    /// tombstones, `__seq` when the bounds cut through it. None when no row
    /// group may match.
    pub(super) fn open_isolated(
        &self,
        file: &Arc<SstFile>,
        proj: &[usize],
        f: &RowFilter,
        with_rowid: bool,
        chunk: Option<(usize, usize)>,
        fill: bool,
        cmps: &[ColumnCmp],
    ) -> Result<Option<IsolatedRead>> {
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
            // from the metadata (of this part's chunk of row groups).
            let len = md.num_row_groups();
            let (lo, hi) = chunk.map_or((0, len), |(k, n)| (len * k / n, len * (k + 1) / n));
            let rows: i64 = (lo..hi).map(|i| md.row_group(i).num_rows()).sum();
            self.counters.ssts_read.fetch_add(1, Ordering::Relaxed);
            self.counters.row_groups_read.fetch_add((hi - lo) as u64, Ordering::Relaxed);
            return Ok(Some(IsolatedRead { scan: None, count_only: Some(rows as usize), cols, rf: None, opos: None, out_cols: vec![] }));
        }
        let eq = prune_eq(f);
        let p = SstPredicate { seq_after, seq_upto, time, ts_col: self.layout.time_index, eq: &eq, seq_col };
        // Its rows need no merge: comparisons may drop rows as they are read.
        let mut scan = self.seek_leading(self.cached_scan(scan_sst(file, &cols, &p), fill), &eq).with_cmps(cmps);
        if let Some((k, n)) = chunk {
            scan = scan.keep_chunk(k, n);
        }
        self.counters.row_groups_read.fetch_add(scan.read as u64, Ordering::Relaxed);
        self.counters.row_groups_pruned.fetch_add(scan.pruned as u64, Ordering::Relaxed);
        if scan.read == 0 {
            self.counters.ssts_pruned.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        self.counters.ssts_read.fetch_add(1, Ordering::Relaxed);
        let pos = |c: usize| cols.iter().position(|&x| x == c).unwrap();
        let rf = RowFilter { seq_after, seq_upto, time: None, ttl_cutoff: None, eq: f.eq.clone(), times: None };
        let opos = (!m.puts_only).then(|| pos(op_col));
        let mut out_cols: Vec<usize> = proj.iter().map(|&c| pos(c)).collect();
        if with_rowid {
            out_cols.push(pos(self.layout.rowid()));
        }
        Ok(Some(IsolatedRead { scan: Some(scan), count_only: None, cols, rf: Some(rf), opos, out_cols }))
    }

    /// The next visible, projected batch of an isolated SST read.
    fn next_isolated(&self, r: &mut IsolatedRead) -> Result<Option<RecordBatch>> {
        if let Some(rows) = r.count_only.take() {
            if rows == 0 {
                return Ok(None);
            }
            let b = RecordBatch::try_new_with_options(
                Arc::new(Schema::empty()),
                vec![],
                &RecordBatchOptions::new().with_row_count(Some(rows)),
            )?;
            return Ok(Some(b));
        }
        let Some(scan) = r.scan.as_mut() else { return Ok(None) };
        let rf = r.rf.as_ref().expect("a decoding read has its filter");
        while let Some(b) = scan.next_batch()? {
            let mut mask = self.row_mask(&b, &r.cols, rf)?;
            if let Some(o) = r.opos {
                mask = and(mask, BooleanArray::new(put_mask(b.column(o)), None))?;
            }
            let b = match mask {
                Some(m) => arrow::compute::filter_record_batch(&b, &m)?,
                None => b,
            };
            if b.num_rows() > 0 {
                return Ok(Some(b.project(&r.out_cols)?));
            }
        }
        r.scan = None;
        Ok(None)
    }

    /// The visible rows: newest version of each identity, deletes dropped.
    pub fn scan(&self, req: &ScanRequest) -> Result<Vec<RecordBatch>> {
        let mut scan = self.scan_stream(req)?;
        let mut out = Vec::new();
        while let Some(b) = scan.next_batch(self)? {
            out.push(b);
        }
        Ok(out)
    }

    /// [`Region::scan`] a batch at a time: the bounds are checked and the
    /// snapshot taken now; rows are read as [`RegionScan::next_batch`] asks.
    pub fn scan_stream(&self, req: &ScanRequest) -> Result<RegionScan> {
        if req.last_row && self.layout.time_index.is_some() {
            debug_assert!(req.part.is_none(), "a last-row scan is not split");
            return self.last_row_scan(req);
        }
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
                .filter(|e| {
                    self.layout.primary_key.contains(&e.column) && (1..=IN_LIST_MAX).contains(&e.value.len()) && e.value.null_count() == 0
                })
                .map(|e| (e.column, e.value.clone()))
                .collect(),
            times: None,
        };
        let mut cols: Vec<usize> = proj.clone();
        cols.extend(self.layout.identity.iter().copied());
        // The merge of overlapping sources follows the SST order.
        cols.extend(self.layout.sort.iter().copied());
        cols.extend(filter.eq.iter().map(|e| e.0));
        if filter.time.is_some() || filter.ttl_cutoff.is_some() {
            cols.extend(self.layout.time_index);
        }
        cols.extend([self.layout.rowid(), self.layout.seq(), self.layout.op()]);
        cols.sort_unstable();
        cols.dedup();
        let schema = self.layout.project(&cols);
        let opos = cols.iter().position(|&c| c == self.layout.op()).unwrap();
        let mut out_cols: Vec<usize> = proj.iter().map(|c| cols.iter().position(|x| x == c).unwrap()).collect();
        if req.with_rowid {
            out_cols.push(cols.iter().position(|&c| c == self.layout.rowid()).unwrap());
        }
        let mut scan = RegionScan {
            work: VecDeque::new(),
            isolated: None,
            merge: None,
            peak_merge_rows: 0,
            ready: VecDeque::new(),
            snap: Snapshot { mem: vec![], overlay_from: 0, files: Arc::new(vec![]), flushed_seq: 0, history_seq: 0, last_seq: 0 },
            proj,
            cols,
            schema,
            opos,
            out_cols,
            filter,
            merge_time: None,
            with_rowid: req.with_rowid,
            with_ssts: !memtable_only,
            fill: false,
            cmps: req.cmps.clone(),
        };
        if self.desc.ttl_ms == Some(0) {
            return Ok(scan);
        }
        // A part of a scan split between threads (see `ScanRequest::part`).
        let part = req.part.filter(|&(k, n)| k < n && n > 1);
        if !memtable_only {
            // The whole scan's columns the query needs (not the version
            // columns a merge adds), over every file it may read.
            let mut needed = scan.proj.clone();
            needed.extend(scan.filter.eq.iter().map(|e| e.0));
            needed.extend(self.layout.time_index.filter(|_| scan.filter.time.is_some()));
            needed.sort_unstable();
            needed.dedup();
            scan.fill = self.admits(&snap.files, &needed, &scan.filter);
            let (isolated, rest) = self.split_isolated(&snap, &scan.filter);
            scan.work.extend(isolated.into_iter().enumerate().map(|(i, f)| Work::Isolated(f, part.map(|(k, n)| ((k + i) % n, n)))));
            snap.files = Arc::new(rest);
        }
        // The merged sources of a part: its slice of the time range; without
        // one, the first part reads them all.
        match (part, scan.filter.time) {
            (Some((k, n)), Some((lo, hi))) if lo < hi => {
                let at = |j: usize| (lo as i128 + (hi as i128 - lo as i128) * j as i128 / n as i128) as i64;
                scan.merge_time = Some((at(k), at(k + 1)));
            }
            (Some((k, _)), _) if k > 0 => return Ok(scan),
            _ => {}
        }
        let merge_filter = scan.merge_filter();
        // The other sources, grouped by what may share identities (by their
        // time ranges), each group read and merged when the scan reaches it.
        let eq = prune_eq(&merge_filter);
        let p = self.sst_predicate(&merge_filter, &eq);
        let mut specs: Vec<(Option<(i64, i64)>, Spec)> = Vec::new();
        if !snap.mem.is_empty() {
            let untimed = snap.mem.iter().any(|(_, t)| t.is_none());
            let t = snap.mem.iter().filter_map(|(_, t)| *t).reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
            specs.push((if untimed { None } else { t }, Spec::Mem));
        }
        if !memtable_only {
            for f in snap.files.iter() {
                if file_may_match(&f.meta, &p) {
                    specs.push((f.meta.time_range, Spec::File(f.clone())));
                } else {
                    self.counters.ssts_pruned.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        scan.work.extend(self.spec_groups(specs).into_iter().map(Work::Group));
        scan.snap = snap;
        Ok(scan)
    }

    /// Group sources that may share identities: with last write wins the
    /// identity holds the time, so sources with disjoint time ranges never
    /// need a dedup against each other; otherwise one group.
    fn spec_groups(&self, mut specs: Vec<(Option<(i64, i64)>, Spec)>) -> Vec<Vec<Spec>> {
        let timed = self.desc.last_write_wins() && specs.iter().all(|s| s.0.is_some());
        if !timed || specs.len() <= 1 {
            return if specs.is_empty() { vec![] } else { vec![specs.into_iter().map(|s| s.1).collect()] };
        }
        specs.sort_by_key(|s| s.0.unwrap().0);
        let mut out: Vec<Vec<Spec>> = Vec::new();
        let mut end = i64::MIN;
        for (t, s) in specs {
            let (lo, hi) = t.unwrap();
            match out.last_mut() {
                Some(group) if lo <= end => group.push(s),
                _ => out.push(vec![s]),
            }
            end = end.max(hi);
        }
        out
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

/// Tag IN-lists longer than this are not used to prune (the filter above
/// still applies).
const IN_LIST_MAX: usize = 256;

/// Sources of one group of a lazy scan.
enum Spec {
    /// The memtable snapshot (with a transaction's own writes).
    Mem,
    File(Arc<SstFile>),
}

enum Work {
    /// An SST that shares no identity with the other sources: read a row
    /// group at a time.
    /// With the chunk `(k, n)` of its row groups a part reads.
    Isolated(Arc<SstFile>, Option<(usize, usize)>),
    /// Sources that may share identities: read together and merged.
    Group(Vec<Spec>),
}

/// An isolated SST being read.
pub(super) struct IsolatedRead {
    scan: Option<SstScan>,
    /// Nothing to decode: this many visible rows, as one zero-column batch.
    count_only: Option<usize>,
    cols: Vec<usize>,
    rf: Option<RowFilter>,
    opos: Option<usize>,
    out_cols: Vec<usize>,
}

/// A region scan in progress (see [`Region::scan_stream`]): work items are
/// read in turn, so memory holds one SST row group (isolated files) or one
/// group of overlapping sources, not the whole region.
pub struct RegionScan {
    work: VecDeque<Work>,
    isolated: Option<IsolatedRead>,
    merge: Option<super::merge::MergeRead>,
    /// Most rows a merge of this scan held at once (for tests).
    pub(in crate::storage) peak_merge_rows: usize,
    pub(super) ready: VecDeque<RecordBatch>,
    snap: Snapshot,
    proj: Vec<usize>,
    cols: Vec<usize>,
    schema: arrow::datatypes::SchemaRef,
    opos: usize,
    out_cols: Vec<usize>,
    filter: RowFilter,
    /// A part's time slice for the merged sources (see `ScanRequest::part`).
    merge_time: Option<(i64, i64)>,
    with_rowid: bool,
    with_ssts: bool,
    /// Whether the scan's SST reads fill the decoded-column cache.
    fill: bool,
    /// Comparisons isolated SST reads apply early (`ScanRequest::cmps`).
    cmps: Vec<ColumnCmp>,
}

impl RegionScan {
    /// A scan with nothing to read (rows go into `ready`).
    pub(super) fn empty(schema: arrow::datatypes::SchemaRef) -> RegionScan {
        RegionScan {
            work: VecDeque::new(),
            isolated: None,
            merge: None,
            peak_merge_rows: 0,
            ready: VecDeque::new(),
            snap: Snapshot { mem: vec![], overlay_from: 0, files: Arc::new(vec![]), flushed_seq: 0, history_seq: 0, last_seq: 0 },
            proj: vec![],
            cols: vec![],
            schema,
            opos: 0,
            out_cols: vec![],
            filter: RowFilter { seq_after: None, seq_upto: None, time: None, ttl_cutoff: None, eq: vec![], times: None },
            merge_time: None,
            with_rowid: false,
            with_ssts: false,
            fill: false,
            cmps: vec![],
        }
    }

    /// The row filter of merged sources: a part's time slice, if any.
    fn merge_filter(&self) -> RowFilter {
        RowFilter { time: self.merge_time.or(self.filter.time), ..self.filter.clone() }
    }

    /// The next batch of visible rows (projected, `__rowid` last when
    /// asked), or None at the end. `region` is the region scanned.
    pub fn next_batch(&mut self, region: &Region) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(b) = self.ready.pop_front() {
                return Ok(Some(b));
            }
            if let Some(r) = self.isolated.as_mut() {
                if let Some(b) = region.next_isolated(r)? {
                    return Ok(Some(b));
                }
                self.isolated = None;
            }
            if let Some(m) = self.merge.as_mut() {
                let next = region.next_merged(m)?;
                self.peak_merge_rows = self.peak_merge_rows.max(m.peak_rows);
                if let Some(b) = next {
                    return Ok(Some(b));
                }
                self.merge = None;
            }
            match self.work.pop_front() {
                None => return Ok(None),
                Some(Work::Isolated(file, chunk)) => {
                    self.isolated = region.open_isolated(&file, &self.proj, &self.filter, self.with_rowid, chunk, self.fill, &self.cmps)?
                }
                Some(Work::Group(group)) => {
                    let with_mem = group.iter().any(|s| matches!(s, Spec::Mem));
                    let files: Vec<Arc<SstFile>> = group
                        .into_iter()
                        .filter_map(|s| match s {
                            Spec::File(f) => Some(f),
                            Spec::Mem => None,
                        })
                        .filter(|_| self.with_ssts)
                        .collect();
                    let m = region.open_merge(
                        &self.snap,
                        with_mem,
                        files,
                        &self.cols,
                        &self.schema,
                        &self.merge_filter(),
                        self.opos,
                        &self.out_cols,
                        self.fill,
                    )?;
                    self.merge = Some(m);
                }
            }
        }
    }
}

/// `col IN (vals)` over a text column in one pass (NULL rows and NULL list
/// items match nothing). Rows come in runs of one series, so a row equal to
/// the one before reuses its answer: about one short comparison per row
/// instead of one per list item.
fn utf8_in_list(col: &arrow::array::StringArray, vals: &arrow::array::StringArray) -> BooleanArray {
    use arrow::array::Array;
    let items: Vec<&[u8]> = vals.iter().flatten().map(str::as_bytes).collect();
    let offsets = col.value_offsets();
    let data = col.value_data();
    let nulls = col.nulls();
    let mut prev: (&[u8], bool) = (&[], false);
    let mut have_prev = false;
    BooleanArray::from(arrow::buffer::BooleanBuffer::collect_bool(col.len(), |i| {
        if nulls.is_some_and(|n| n.is_null(i)) {
            return false;
        }
        let s = &data[offsets[i] as usize..offsets[i + 1] as usize];
        if have_prev && prev.0 == s {
            return prev.1;
        }
        let hit = items.iter().any(|v| *v == s);
        prev = (s, hit);
        have_prev = true;
        hit
    }))
}

#[cfg(test)]
mod in_list_tests {
    use arrow::array::{Array, StringArray};

    use super::utf8_in_list;

    /// Against the obvious per-row answer: runs, NULL rows, NULL items, a
    /// sliced column.
    #[test]
    fn utf8_in_list_matches_per_row_membership() {
        let rows: Vec<Option<&str>> =
            vec![Some("a"), Some("a"), None, Some("a"), Some("b"), Some("b"), Some("c"), None, None, Some(""), Some("c"), Some("a")];
        let col = StringArray::from(rows.clone());
        let vals = StringArray::from(vec![Some("a"), None, Some("c"), Some("zz")]);
        for (lo, len) in [(0, rows.len()), (1, 6), (3, 9), (5, 0)] {
            let got = utf8_in_list(&col.slice(lo, len), &vals);
            assert_eq!(got.len(), len);
            assert_eq!(got.null_count(), 0);
            for i in 0..len {
                let want = matches!(rows[lo + i], Some("a" | "c"));
                assert_eq!(got.value(i), want, "row {} of slice ({lo}, {len})", lo + i);
            }
        }
    }
}
