//! `LimitExecutor`: OFFSET then LIMIT; stops pulling once satisfied.

use arrow::array::UInt32Array;
use arrow::datatypes::SchemaRef;

use super::{BatchExecutor, BatchResult};
use crate::error::Result;

pub struct LimitExecutor {
    child: Box<dyn BatchExecutor>,
    remaining: Option<usize>,
    to_skip: usize,
}

impl LimitExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, limit: Option<usize>, offset: usize) -> Self {
        LimitExecutor { child, remaining: limit, to_skip: offset }
    }
}

impl BatchExecutor for LimitExecutor {
    fn schema(&self) -> SchemaRef {
        self.child.schema()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if self.remaining == Some(0) {
            return Ok(BatchResult { batch: super::empty_batch(&self.child.schema()), logical_rows: None, is_drained: true });
        }
        let r = self.child.next_batch(max_rows)?;
        let drained = r.is_drained;
        let live: Vec<u32> = match &r.logical_rows {
            Some(l) => l.values().to_vec(),
            None => (0..r.batch.num_rows() as u32).collect(),
        };
        let skip = self.to_skip.min(live.len());
        self.to_skip -= skip;
        let mut keep = &live[skip..];
        if let Some(rem) = self.remaining.as_mut() {
            if keep.len() > *rem {
                keep = &keep[..*rem];
            }
            *rem -= keep.len();
        }
        let done = drained || self.remaining == Some(0);
        Ok(BatchResult { batch: r.batch, logical_rows: Some(UInt32Array::from(keep.to_vec())), is_drained: done })
    }
}

#[cfg(test)]
#[path = "limit_tests.rs"]
mod tests;
