//! `SelectionExecutor`: evaluates a predicate over whole columns and narrows
//! the live rows; columns are not copied.

use arrow::array::{Array, UInt32Array};
use arrow::datatypes::SchemaRef;

use super::expr::Expr;
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct SelectionExecutor {
    child: Box<dyn BatchExecutor>,
    predicate: Expr,
    ctx: ExecCtx,
}

impl SelectionExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, predicate: Expr, ctx: ExecCtx) -> Self {
        SelectionExecutor { child, predicate, ctx }
    }
}

impl BatchExecutor for SelectionExecutor {
    fn schema(&self) -> SchemaRef {
        self.child.schema()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        let r = self.child.next_batch(max_rows)?;
        let drained = r.is_drained;
        // Evaluate on the dense live rows so no expression sees a dead row.
        let batch = r.into_dense()?;
        if batch.num_rows() == 0 {
            return Ok(BatchResult { batch, logical_rows: None, is_drained: drained });
        }
        let mask = self.predicate.eval(&batch, &self.ctx)?;
        let mask = mask.as_any().downcast_ref::<arrow::array::BooleanArray>().expect("predicate is boolean");
        // True and not null, a word at a time.
        let bits = match mask.nulls() {
            Some(nulls) => mask.values() & nulls.inner(),
            None => mask.values().clone(),
        };
        let logical_rows = if bits.count_set_bits() == batch.num_rows() {
            None
        } else {
            Some(UInt32Array::from_iter_values(bits.set_indices().map(|i| i as u32)))
        };
        Ok(BatchResult { batch, logical_rows, is_drained: drained })
    }
}

#[cfg(test)]
#[path = "selection_tests.rs"]
mod tests;
