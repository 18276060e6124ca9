//! Last row per series (`ScanRequest::last_row`): for each primary key, the
//! visible row with the greatest time index, without reading history on
//! every query.
//!
//! A region keeps a cache of these rows at a sequence `C`. A read at a
//! later snapshot `U` brings it forward by scanning only the rows written
//! in `(C, U]` (sequence-bounded scan: memtable chunks and SSTs whose
//! sequence range ends at or before `C` are skipped whole, row groups by
//! their `__seq` statistics): a newer row of a series replaces the cached
//! one when its time is not older (an overwrite of the same identity is
//! newer by sequence, so it wins a tie; a late row loses). A delete may
//! remove the cached row, whose predecessor only history knows: a delete
//! published after `C` (`Inner::last_delete_seq`) rebuilds the cache by a
//! streaming scan of the region (memory: one batch plus one row per
//! series). TTL needs no bookkeeping: a series' cached row is its newest,
//! so when it has expired every row of the series has. Flush and
//! compaction do not change what is visible, so they leave the cache
//! valid; the cache is memory only, rebuilt on the first read after a
//! restart. The cache's bytes are pinned under the decoded-column budget
//! (`decoded_cache_bytes_max`, `column_cache.rs`): keeping it evicts decoded
//! columns, and a cache that does not fit is not kept. Reads the cache cannot serve (a time range, sequence bounds, a
//! transaction's own writes, an older snapshot) compute the answer the
//! same way from a streaming scan, without touching the cache.
//!
//! Imports what the region module does.

use std::collections::HashMap;

use arrow::array::Int64Array;
use arrow::compute::interleave_record_batch;
use arrow::datatypes::{Int64Type, SchemaRef};
use arrow::row::{RowConverter, SortField};

use super::*;
use crate::storage::version::FxBuild;

/// A cache above this many bytes is not kept (the answer is still
/// computed, by a streaming scan, on each read).
const CACHE_BYTES_MAX: usize = 64 << 20;

/// The newest-by-time row of each series seen so far, over batches of the
/// stored schema (user columns, then `__rowid`).
#[derive(Clone)]
pub(super) struct LastRows {
    schema: SchemaRef,
    /// One row per series, in first-seen order.
    batch: Option<RecordBatch>,
    index: HashMap<Box<[u8]>, usize, FxBuild>,
    times: Vec<i64>,
}

impl LastRows {
    pub(super) fn new(schema: SchemaRef) -> LastRows {
        LastRows { schema, batch: None, index: HashMap::default(), times: Vec::new() }
    }

    pub(super) fn bytes(&self) -> usize {
        self.batch.as_ref().map_or(0, |b| b.get_array_memory_size())
            + self.index.keys().map(|k| k.len() + 32).sum::<usize>()
            + self.times.len() * 8
    }

    /// Take the rows of `b` (stored schema) that are the newest of their
    /// series so far; a row at the same time as the kept one replaces it
    /// (later batches are newer versions).
    pub(super) fn add(&mut self, layout: &Layout, conv: &RowConverter, b: &RecordBatch) -> Result<()> {
        let n = b.num_rows();
        if n == 0 {
            return Ok(());
        }
        let ti = layout.time_index.expect("last row needs a time index");
        let t = time_values(b.column(ti))?;
        let t = t.as_primitive::<Int64Type>();
        let pk: Vec<ArrayRef> = layout.primary_key.iter().map(|&c| b.column(c).clone()).collect();
        let keys = if pk.is_empty() { None } else { Some(conv.convert_columns(&pk)?) };
        let old = self.times.len();
        // (source, row): source 0 is the kept batch, 1 is `b`.
        let mut picks: Vec<(usize, usize)> = (0..old).map(|i| (0, i)).collect();
        let mut changed = false;
        for i in 0..n {
            let ti = t.value(i);
            let k: &[u8] = keys.as_ref().map_or(&[][..], |k| k.row(i).data());
            match self.index.get(k) {
                Some(&j) => {
                    if ti >= self.times[j] {
                        self.times[j] = ti;
                        picks[j] = (1, i);
                        changed = true;
                    }
                }
                None => {
                    self.index.insert(k.into(), picks.len());
                    self.times.push(ti);
                    picks.push((1, i));
                    changed = true;
                }
            }
        }
        if !changed {
            return Ok(());
        }
        let b = b.clone().with_schema(self.schema.clone())?;
        let kept = self.batch.take().unwrap_or_else(|| RecordBatch::new_empty(self.schema.clone()));
        self.batch = Some(interleave_record_batch(&[&kept, &b], &picks)?);
        Ok(())
    }

    /// The kept rows, without those older than `cutoff` (TTL).
    fn rows(&self, layout: &Layout, cutoff: Option<i64>) -> Result<RecordBatch> {
        let Some(b) = &self.batch else { return Ok(RecordBatch::new_empty(self.schema.clone())) };
        let Some(cut) = cutoff else { return Ok(b.clone()) };
        let ti = layout.time_index.expect("last row needs a time index");
        let t = time_values(b.column(ti))?;
        let t: &Int64Array = t.as_primitive::<Int64Type>();
        let mask = BooleanBuffer::collect_bool(t.len(), |i| t.value(i) >= cut);
        crate::storage::version::filter(b, mask)
    }
}

/// A region's cache of last rows at a sequence.
pub(super) struct LastRowCache {
    seq: SeqNo,
    rows: LastRows,
    /// Its bytes under the engine's cache budget.
    _pin: crate::storage::column_cache::Pin,
}

impl Region {
    /// Keep `rows` as the cache at `seq` if they fit the budgets (the old
    /// cache's bytes are released first).
    fn keep_last_rows(&self, cache: &mut Option<LastRowCache>, seq: SeqNo, rows: LastRows) {
        *cache = None;
        let bytes = rows.bytes();
        if bytes > CACHE_BYTES_MAX {
            return;
        }
        *cache = self.shared.column_cache.pin(bytes).map(|pin| LastRowCache { seq, rows, _pin: pin });
    }

    fn pk_converter(&self) -> Result<RowConverter> {
        let fields = self.layout.primary_key.iter().map(|&c| SortField::new(self.layout.user.field(c).data_type().clone())).collect();
        Ok(RowConverter::new(fields)?)
    }

    /// Feed every visible row of `req` (all user columns and the row id)
    /// into `rows`.
    fn feed(&self, req: &ScanRequest, rows: &mut LastRows, conv: &RowConverter) -> Result<()> {
        let all = ScanRequest { projection: None, with_rowid: true, last_row: false, ..req.clone() };
        let mut scan = self.scan_stream(&all)?;
        while let Some(b) = scan.next_batch(self)? {
            rows.add(&self.layout, conv, &b)?;
        }
        Ok(())
    }

    /// Serve a `last_row` scan: the rows, projected as `req` asks, as a
    /// scan with them ready.
    pub(super) fn last_row_scan(&self, req: &ScanRequest) -> Result<RegionScan> {
        let rows = self.last_rows(req)?;
        let mut cols: Vec<usize> = req.projection.clone().unwrap_or_else(|| (0..self.layout.ncols).collect());
        if req.with_rowid {
            cols.push(self.layout.rowid());
        }
        let out = rows.project(&cols)?;
        let mut scan = RegionScan::empty(self.layout.project(&[]));
        if out.num_rows() > 0 {
            scan.ready.push_back(out);
        }
        Ok(scan)
    }

    /// The last row of each series visible to `req` (stored schema).
    fn last_rows(&self, req: &ScanRequest) -> Result<RecordBatch> {
        let conv = self.pk_converter()?;
        let cacheable = req.time_range.is_none() && req.seq == SeqBounds::default() && req.overlay.is_none() && self.desc.ttl_ms != Some(0);
        if !cacheable {
            let mut rows = LastRows::new(self.layout.stored.clone());
            self.feed(req, &mut rows, &conv)?;
            self.counters.last_row_scans.fetch_add(1, Ordering::Relaxed);
            return rows.rows(&self.layout, None);
        }
        let (last, last_delete) = {
            let inner = self.inner.lock();
            (inner.last_seq, inner.last_delete_seq)
        };
        let upto = match req.snapshot {
            Some(s) if s < last => s,
            _ => last,
        };
        let base = ScanRequest { filters: vec![], snapshot: Some(upto), ..req.clone() };
        // One reader brings the cache forward at a time; the others wait
        // for it rather than scanning too.
        let mut cache = self.last_rows.lock();
        match cache.as_ref() {
            Some(c) if c.seq == upto => {
                self.counters.last_row_hits.fetch_add(1, Ordering::Relaxed);
                return c.rows.rows(&self.layout, self.ttl_cutoff());
            }
            Some(c) if c.seq < upto && last_delete <= c.seq => {
                // Only the rows written since the cache's sequence.
                let mut rows = c.rows.clone();
                let delta = ScanRequest { seq: SeqBounds { after: Some(c.seq), ..SeqBounds::default() }, ..base };
                self.feed(&delta, &mut rows, &conv)?;
                self.counters.last_row_hits.fetch_add(1, Ordering::Relaxed);
                let out = rows.rows(&self.layout, self.ttl_cutoff())?;
                self.keep_last_rows(&mut cache, upto, rows);
                return Ok(out);
            }
            Some(c) if c.seq > upto => {
                // An older snapshot than the cache: computed, not kept.
                let mut rows = LastRows::new(self.layout.stored.clone());
                self.feed(&base, &mut rows, &conv)?;
                self.counters.last_row_scans.fetch_add(1, Ordering::Relaxed);
                return rows.rows(&self.layout, None);
            }
            _ => {}
        }
        let mut rows = LastRows::new(self.layout.stored.clone());
        self.feed(&base, &mut rows, &conv)?;
        self.counters.last_row_scans.fetch_add(1, Ordering::Relaxed);
        // The scan applied TTL as of now; later reads filter again.
        let out = rows.rows(&self.layout, None)?;
        self.keep_last_rows(&mut cache, upto, rows);
        Ok(out)
    }
}
