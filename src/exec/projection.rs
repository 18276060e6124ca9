//! `ProjectionExecutor`: computes output columns from expressions.

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;

use super::expr::{cast_array, Expr};
use super::plan::{arrow_schema, PlanColumn};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct ProjectionExecutor {
    child: Box<dyn BatchExecutor>,
    exprs: Vec<Expr>,
    columns: Vec<PlanColumn>,
    schema: SchemaRef,
    ctx: ExecCtx,
}

impl ProjectionExecutor {
    pub fn new(child: Box<dyn BatchExecutor>, exprs: Vec<Expr>, columns: &[PlanColumn], ctx: ExecCtx) -> Self {
        ProjectionExecutor { child, exprs, columns: columns.to_vec(), schema: arrow_schema(columns), ctx }
    }
}

impl BatchExecutor for ProjectionExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        let r = self.child.next_batch(max_rows)?;
        let drained = r.is_drained;
        let batch = r.into_dense()?;
        let n = batch.num_rows();
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.exprs.len());
        for (e, c) in self.exprs.iter().zip(&self.columns) {
            let a = if n == 0 { arrow::array::new_empty_array(&c.ty.to_arrow()) } else { e.eval(&batch, &self.ctx)? };
            let a = if a.data_type() != &c.ty.to_arrow() { cast_array(&a, e.ty(), c.ty)? } else { a };
            cols.push(a);
        }
        let out = RecordBatch::try_new_with_options(self.schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(n)))?;
        Ok(BatchResult { batch: out, logical_rows: None, is_drained: drained })
    }
}

#[cfg(test)]
#[path = "projection_tests.rs"]
mod tests;
