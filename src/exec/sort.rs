//! `SortExecutor`: ORDER BY over the whole input, with PostgreSQL's quicksort
//! (`pg_qsort`) on the keys' row encoding, so tied rows come out as PostgreSQL
//! orders them. With a LIMIT (top-k) the input streams through a bounded heap of
//! candidates instead: every few thousand rows the candidates are cut back to the
//! best k, so memory and sort work follow k, not the input; ties keep input order
//! there, except that an input of at most 2k rows is sorted whole, as PostgreSQL
//! sorts it before its bounded heap would start.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow::compute::{lexsort_to_indices, SortColumn, SortOptions};
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};

use super::plan::SortKey;
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

/// Limits up to this many rows take the streaming top-k.
const TOP_K_MAX: usize = 100_000;

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

    /// The sort columns of `batch`: normalized keys, intervals by their
    /// comparison value.
    fn sort_columns(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        self.keys
            .iter()
            .map(|k| {
                let values = super::expr::comparable_form(k.expr.eval(batch, &self.ctx)?, k.expr.ty())?;
                Ok(super::keys::normalize_key(&values))
            })
            .collect()
    }

    /// The indices of the best `limit` rows of `keys` (all rows when None),
    /// ties by `pos`, the input order.
    fn best(&self, keys: &[ArrayRef], pos: &ArrayRef, limit: Option<usize>) -> Result<UInt32Array> {
        let mut cols: Vec<SortColumn> = keys
            .iter()
            .zip(&self.keys)
            .map(|(v, k)| SortColumn { values: v.clone(), options: Some(SortOptions { descending: k.desc, nulls_first: k.nulls_first }) })
            .collect();
        cols.push(SortColumn { values: pos.clone(), options: None });
        Ok(lexsort_to_indices(&cols, limit)?)
    }

    /// ORDER BY … LIMIT k: keep at most k rows (plus one chunk of input).
    fn top_k(&mut self, k: usize) -> Result<RecordBatch> {
        let schema = self.child.schema();
        // Candidates: rows, their sort keys (evaluated once: ORDER BY
        // random() must not change between cuts) and input positions.
        let mut rows: Vec<RecordBatch> = vec![];
        let mut keys: Vec<Vec<ArrayRef>> = vec![];
        let mut pos: Vec<ArrayRef> = vec![];
        let mut held = 0usize;
        let mut charged = 0usize;
        let mut seen = 0u64;
        let chunk = (2 * k).max(4096);
        let mut drained = false;
        let mut cut = false;
        while !drained {
            self.ctx.check()?;
            let r = self.child.next_batch(super::BATCH_ROWS)?;
            drained = r.is_drained;
            let b = r.into_dense()?;
            let n = b.num_rows();
            if n > 0 {
                keys.push(self.sort_columns(&b)?);
                pos.push(Arc::new(UInt64Array::from_iter_values(seen..seen + n as u64)));
                seen += n as u64;
                held += n;
                rows.push(b);
            }
            if held > k + chunk || (drained && held > 0) {
                let all = if rows.len() == 1 { rows[0].clone() } else { arrow::compute::concat_batches(&schema, &rows)? };
                // Charged at its largest: at most k + one chunk of rows.
                let bytes = super::memory::batch_bytes(&all);
                if bytes > charged {
                    self.ctx.charge(bytes - charged, "a top-k sort")?;
                    charged = bytes;
                }
                let all_keys: Vec<ArrayRef> = (0..self.keys.len())
                    .map(|j| arrow::compute::concat(&keys.iter().map(|ks| ks[j].as_ref()).collect::<Vec<_>>()))
                    .collect::<std::result::Result<_, _>>()?;
                if drained && !cut && all.num_rows() <= 2 * k {
                    // All of a small input: PostgreSQL sorts it whole before keeping k.
                    let mut order: Vec<usize> = (0..all.num_rows()).collect();
                    pg_sort_positions(&all_keys, &self.options(), &mut order)?;
                    order.truncate(k);
                    return super::take_batch(&all, &UInt32Array::from_iter_values(order.iter().map(|&i| i as u32)));
                }
                cut = true;
                let all_pos = arrow::compute::concat(&pos.iter().map(|p| p.as_ref()).collect::<Vec<_>>())?;
                let idx = self.best(&all_keys, &all_pos, Some(k))?;
                rows = vec![super::take_batch(&all, &idx)?];
                keys =
                    vec![all_keys.iter().map(|c| arrow::compute::take(c.as_ref(), &idx, None)).collect::<std::result::Result<_, _>>()?];
                pos = vec![arrow::compute::take(all_pos.as_ref(), &idx, None)?];
                held = idx.len();
            }
        }
        // The last cut sorted the survivors.
        Ok(rows.pop().unwrap_or_else(|| super::empty_batch(&schema)))
    }

    fn sort_all(&mut self) -> Result<RecordBatch> {
        if let (Some(k), false) = (self.limit, self.keys.is_empty()) {
            if k <= TOP_K_MAX {
                return self.top_k(k);
            }
        }
        let schema = self.child.schema();
        let batches = super::drain(&mut self.child, &self.ctx)?;
        let all = super::concat(&self.ctx, &schema, &batches)?;
        if all.num_rows() <= 1 || self.keys.is_empty() {
            return Ok(all);
        }
        // PostgreSQL orders intervals by their 30-day-month value, numerics by value.
        let cols = self.sort_columns(&all)?;
        let mut order: Vec<usize> = (0..all.num_rows()).collect();
        pg_sort_positions(&cols, &self.options(), &mut order)?;
        if let Some(k) = self.limit {
            order.truncate(k);
        }
        // The sorted copy of the rows.
        self.ctx.charge(super::memory::batch_bytes(&all) / all.num_rows() * order.len(), "a sort")?;
        super::take_batch(&all, &UInt32Array::from_iter_values(order.iter().map(|&i| i as u32)))
    }

    fn options(&self) -> Vec<SortOptions> {
        self.keys.iter().map(|k| SortOptions { descending: k.desc, nulls_first: k.nulls_first }).collect()
    }
}

/// Reorder `order` (row positions of `cols`) by the key columns as PostgreSQL's sort does:
/// its quicksort, from this order, so ties come out where PostgreSQL puts them.
pub(crate) fn pg_sort_positions(cols: &[ArrayRef], options: &[SortOptions], order: &mut [usize]) -> Result<()> {
    if cols.is_empty() || order.len() < 2 {
        return Ok(());
    }
    let fields = cols.iter().zip(options).map(|(c, o)| SortField::new_with_options(c.data_type().clone(), *o)).collect();
    match RowConverter::new(fields) {
        Ok(conv) => {
            let rows = conv.convert_columns(cols)?;
            super::pg_qsort::pg_qsort(order, |&a, &b| rows.row(a).cmp(&rows.row(b)));
        }
        Err(_) => {
            // A type without a row encoding: arrow's sort of the positions given.
            let idx = UInt32Array::from_iter_values(order.iter().map(|&i| i as u32));
            let taken: Vec<SortColumn> = cols
                .iter()
                .zip(options)
                .map(|(c, o)| Ok(SortColumn { values: arrow::compute::take(c.as_ref(), &idx, None)?, options: Some(*o) }))
                .collect::<Result<_>>()?;
            let sorted = lexsort_to_indices(&taken, None)?;
            let before = order.to_vec();
            for (slot, &j) in order.iter_mut().zip(sorted.values()) {
                *slot = before[j as usize];
            }
        }
    }
    Ok(())
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
