//! `SortExecutor`: ORDER BY over the whole input, with an optional top-k
//! limit handed to arrow's lexsort.

use arrow::array::RecordBatch;
use arrow::compute::{lexsort_to_indices, SortColumn, SortOptions};
use arrow::datatypes::SchemaRef;

use super::plan::SortKey;
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct SortExecutor {
    child: Box<dyn BatchExecutor>,
    keys: Vec<SortKey>,
    limit: Option<usize>,
    ctx: ExecCtx,
    output: Option<RecordBatch>,
    pos: usize,
}

impl SortExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, keys: Vec<SortKey>, limit: Option<usize>, ctx: ExecCtx) -> Self {
        SortExecutor { child, keys, limit, ctx, output: None, pos: 0 }
    }

    fn sort_all(&mut self) -> Result<RecordBatch> {
        let schema = self.child.schema();
        let batches = super::drain(&mut self.child, &self.ctx)?;
        let all = super::concat(&self.ctx, &schema, &batches)?;
        if all.num_rows() <= 1 || self.keys.is_empty() {
            return Ok(all);
        }
        let mut cols = Vec::with_capacity(self.keys.len());
        for k in &self.keys {
            let mut values = k.expr.eval(&all, &self.ctx)?;
            if k.expr.ty() == crate::types::SqlType::Interval {
                // PostgreSQL orders intervals by their 30-day-month value.
                values = super::functions::temporal::interval_cmp_keys(values.as_ref())?;
            }
            cols.push(SortColumn {
                values: super::keys::normalize_key(&values),
                options: Some(SortOptions { descending: k.desc, nulls_first: k.nulls_first }),
            });
        }
        let idx = lexsort_to_indices(&cols, self.limit)?;
        // The sorted copy of the rows.
        self.ctx.charge(super::memory::batch_bytes(&all) / all.num_rows() * idx.len(), "a sort")?;
        super::take_batch(&all, &idx)
    }
}

impl BatchExecutor for SortExecutor {
    fn schema(&self) -> SchemaRef {
        self.child.schema()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if self.output.is_none() {
            self.output = Some(self.sort_all()?);
        }
        Ok(super::next_slice(self.output.as_ref().unwrap(), &mut self.pos, max_rows))
    }
}

#[cfg(test)]
#[path = "sort_tests.rs"]
mod tests;
