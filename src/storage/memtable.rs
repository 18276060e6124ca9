//! The memtable of one region: full-schema chunks kept in write order.
//!
//! Owns the in-memory rows between flushes. Imports only `crate::error` and
//! arrow. Every chunk carries its sequence and time ranges so scans skip it
//! whole; small writes are coalesced so a scan touches few chunks.

use arrow::array::RecordBatch;

use super::version::{concat_all, time_bounds, Layout};
use super::SeqNo;
use crate::error::Result;

/// Chunks smaller than this are coalesced; 1024 rows, a guess.
const SMALL_ROWS: usize = 1024;
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
}
