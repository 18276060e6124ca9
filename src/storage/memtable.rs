//! The memtable of one region: full-schema chunks kept in write order.
//!
//! Owns the in-memory rows between flushes. Imports only `crate::error`,
//! sibling storage modules, arrow and parking_lot. Every chunk carries its sequence and time ranges so scans skip it
//! whole; small writes are coalesced so a scan touches few chunks. The
//! change log's lookup of earlier versions by time goes through an index of
//! the rows by time index value ([`Memtable::rows_at`]), built at its first
//! use, not on the write path.

use std::collections::HashMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Int64Type, UInt64Type};
use parking_lot::Mutex;

use super::version::{concat_all, time_bounds, time_values, FxBuild, Layout};
use super::SeqNo;
use crate::error::Result;

/// Chunks smaller than this are coalesced. Under 1000 rows, so a
/// 1000-row INSERT (TSBS's loader's statement) stays a chunk of its own
/// instead of being copied again into a coalesced one.
const SMALL_ROWS: usize = 512;
/// Coalesce once this many small chunks wait.
const SMALL_CHUNKS_MAX: usize = 32;

/// Rows of some writes, with their ranges.
#[derive(Clone)]
pub struct Chunk {
    pub batch: RecordBatch,
    pub seq_range: (SeqNo, SeqNo),
    pub time_range: Option<(i64, i64)>,
}

impl Chunk {
    pub fn new(layout: &Layout, batch: RecordBatch, seq: SeqNo) -> Result<Chunk> {
        let time_range = match layout.time_index {
            Some(ti) => time_bounds(batch.column(ti))?,
            None => None,
        };
        Ok(Chunk { batch, seq_range: (seq, seq), time_range })
    }

    /// Could hold rows with seq in (after, upto] and time in [lo, hi)?
    pub fn may_match(&self, after: Option<SeqNo>, upto: Option<SeqNo>, time: Option<(i64, i64)>) -> bool {
        if after.is_some_and(|a| self.seq_range.1 <= a) || upto.is_some_and(|u| self.seq_range.0 > u) {
            return false;
        }
        match (time, self.time_range) {
            (Some((lo, hi)), Some((min, max))) => min < hi && max >= lo,
            _ => true,
        }
    }
}

#[derive(Default)]
pub struct Memtable {
    chunks: Vec<Chunk>,
    small: Vec<Chunk>,
    pub rows: usize,
    pub bytes: usize,
    /// The rows of `chunks` by time; empty until [`Memtable::rows_at`]
    /// asks (plain writes and scans never pay for it).
    by_time: Mutex<TimeIndex>,
}

/// Rows of a memtable's large chunks by their time index value: a chained
/// hash index over row numbers counted across the chunks (`chunks` only
/// grows, so the numbers stay put). About 4 bytes per row plus a map entry
/// per distinct time; bounded by the memtable (`memtable_bytes_max`), and
/// not counted in its bytes: it lives only while some flow or stream reads
/// the change log of a region, and dies with the memtable.
#[derive(Default)]
struct TimeIndex {
    /// The first row number of each indexed chunk.
    starts: Vec<u32>,
    /// time → the last indexed row at that time.
    head: HashMap<i64, u32, FxBuild>,
    /// Row number → the previous row at its time (`NONE`: none).
    prev: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl TimeIndex {
    /// Index the chunks not indexed yet.
    fn extend(&mut self, chunks: &[Chunk], ti: usize) -> Result<()> {
        for c in &chunks[self.starts.len()..] {
            let first = self.prev.len() as u32;
            self.starts.push(first);
            let t = time_values(c.batch.column(ti))?;
            let t = t.as_primitive::<Int64Type>();
            for (i, v) in t.iter().enumerate() {
                let row = first + i as u32;
                // A NULL time matches no time (it cannot be asked for).
                let prev = match v {
                    Some(v) => self.head.insert(v, row).unwrap_or(NONE),
                    None => NONE,
                };
                self.prev.push(prev);
            }
        }
        Ok(())
    }

    /// (chunk, row in the chunk) of a row number.
    fn locate(&self, row: u32) -> (usize, u32) {
        let c = self.starts.partition_point(|&s| s <= row) - 1;
        (c, row - self.starts[c])
    }
}

impl Memtable {
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty() && self.small.is_empty()
    }

    /// Add a chunk; returns the change in bytes held.
    pub fn push(&mut self, layout: &Layout, chunk: Chunk) -> Result<isize> {
        let before = self.bytes as isize;
        self.rows += chunk.batch.num_rows();
        self.bytes += chunk.batch.get_array_memory_size();
        if chunk.batch.num_rows() >= SMALL_ROWS {
            self.chunks.push(chunk);
        } else {
            self.small.push(chunk);
            if self.small.len() >= SMALL_CHUNKS_MAX {
                let small = std::mem::take(&mut self.small);
                let batches: Vec<RecordBatch> = small.iter().map(|c| c.batch.clone()).collect();
                let batch = concat_all(&layout.full, &batches)?;
                let seq_range = (small[0].seq_range.0, small.last().unwrap().seq_range.1);
                let time_range = small.iter().filter_map(|c| c.time_range).reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
                let old: usize = batches.iter().map(|b| b.get_array_memory_size()).sum();
                self.bytes = self.bytes - old + batch.get_array_memory_size();
                self.chunks.push(Chunk { batch, seq_range, time_range });
            }
        }
        Ok(self.bytes as isize - before)
    }

    pub fn chunks(&self) -> impl Iterator<Item = &Chunk> {
        self.chunks.iter().chain(self.small.iter())
    }

    /// The rows at sequences up to `upto` whose time index value (column
    /// `ti`) is one of `times` (`contains` answers the same question):
    /// each chunk holding some, with their row numbers in ascending order.
    /// Large chunks are looked up per time in the index (extended with the
    /// chunks pushed since the last call); the few small chunks not yet
    /// coalesced are checked row by row.
    pub fn rows_at(
        &self,
        layout: &Layout,
        ti: usize,
        times: &[i64],
        contains: impl Fn(i64) -> bool,
        upto: SeqNo,
    ) -> Result<Vec<(RecordBatch, Vec<u32>)>> {
        let seq_col = layout.seq();
        let mut hits: Vec<Vec<u32>> = vec![Vec::new(); self.chunks.len()];
        if self.chunks.iter().any(|c| c.seq_range.0 <= upto) {
            let mut idx = self.by_time.lock();
            idx.extend(&self.chunks, ti)?;
            for t in times {
                let mut row = idx.head.get(t).copied().unwrap_or(NONE);
                while row != NONE {
                    let (c, r) = idx.locate(row);
                    hits[c].push(r);
                    row = idx.prev[row as usize];
                }
            }
        }
        let mut out = Vec::new();
        for (c, mut rows) in self.chunks.iter().zip(hits) {
            if rows.is_empty() || c.seq_range.0 > upto {
                continue;
            }
            if c.seq_range.1 > upto {
                let seq = c.batch.column(seq_col).as_primitive::<UInt64Type>().values();
                rows.retain(|&r| seq[r as usize] <= upto);
            }
            rows.sort_unstable();
            if !rows.is_empty() {
                out.push((c.batch.clone(), rows));
            }
        }
        for c in self.small.iter().filter(|c| c.seq_range.0 <= upto) {
            let t = time_values(c.batch.column(ti))?;
            let t = t.as_primitive::<Int64Type>();
            let seq = c.batch.column(seq_col).as_primitive::<UInt64Type>().values();
            let rows: Vec<u32> =
                (0..t.len()).filter(|&i| t.is_valid(i) && seq[i] <= upto && contains(t.value(i))).map(|i| i as u32).collect();
            if !rows.is_empty() {
                out.push((c.batch.clone(), rows));
            }
        }
        Ok(out)
    }
}
