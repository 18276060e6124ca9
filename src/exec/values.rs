//! `ValuesExecutor` (rows of expressions) and `MemoryExecutor` (batches
//! made at plan time, such as system tables).

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;

use super::expr::{cast_array, Expr};
use super::plan::{arrow_schema, PlanColumn};
use super::{BatchExecutor, BatchResult, ExecCtx};
use crate::error::Result;

pub struct ValuesExecutor {
    rows: Vec<Vec<Expr>>,
    columns: Vec<PlanColumn>,
    schema: SchemaRef,
    ctx: ExecCtx,
    done: bool,
}

impl ValuesExecutor {
    pub fn new(rows: Vec<Vec<Expr>>, columns: &[PlanColumn], ctx: ExecCtx) -> Self {
        ValuesExecutor { rows, columns: columns.to_vec(), schema: arrow_schema(columns), ctx, done: false }
    }
}

impl BatchExecutor for ValuesExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, _max_rows: usize) -> Result<BatchResult> {
        if self.done {
            return Ok(BatchResult { batch: super::empty_batch(&self.schema), logical_rows: None, is_drained: true });
        }
        self.done = true;
        // One-row, zero-column input for the expressions.
        let unit = RecordBatch::try_new_with_options(
            std::sync::Arc::new(arrow::datatypes::Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )?;
        let mut per_col: Vec<Vec<ArrayRef>> = vec![Vec::with_capacity(self.rows.len()); self.columns.len()];
        for row in &self.rows {
            for (i, e) in row.iter().enumerate() {
                let a = e.eval(&unit, &self.ctx)?;
                per_col[i].push(cast_array(&a, e.ty(), self.columns[i].ty)?);
            }
        }
        let cols: Vec<ArrayRef> = per_col
            .iter()
            .zip(&self.columns)
            .map(|(parts, c)| {
                if parts.is_empty() {
                    Ok(arrow::array::new_empty_array(&c.ty.to_arrow()))
                } else {
                    let refs: Vec<&dyn arrow::array::Array> = parts.iter().map(|a| a.as_ref()).collect();
                    Ok(arrow::compute::concat(&refs)?)
                }
            })
            .collect::<Result<_>>()?;
        let batch =
            RecordBatch::try_new_with_options(self.schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(self.rows.len())))?;
        Ok(BatchResult { batch, logical_rows: None, is_drained: true })
    }
}

pub struct MemoryExecutor {
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
}

impl MemoryExecutor {
    pub fn new(mut batches: Vec<RecordBatch>, columns: &[PlanColumn]) -> Self {
        batches.reverse();
        MemoryExecutor { batches, schema: arrow_schema(columns) }
    }
}

impl BatchExecutor for MemoryExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, _max_rows: usize) -> Result<BatchResult> {
        match self.batches.pop() {
            None => Ok(BatchResult { batch: super::empty_batch(&self.schema), logical_rows: None, is_drained: true }),
            Some(b) => {
                let batch = RecordBatch::try_new_with_options(
                    self.schema.clone(),
                    b.columns().to_vec(),
                    &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
                )?;
                Ok(BatchResult { batch, logical_rows: None, is_drained: self.batches.is_empty() })
            }
        }
    }
}

/// `generate_series(start, stop[, step])` over int8.
pub struct SeriesExecutor {
    args: Vec<Expr>,
    schema: SchemaRef,
    ctx: ExecCtx,
    next: Option<i64>,
    stop: i64,
    step: i64,
    started: bool,
}

impl SeriesExecutor {
    pub fn new(args: Vec<Expr>, columns: &[PlanColumn], ctx: ExecCtx) -> Self {
        SeriesExecutor { args, schema: arrow_schema(columns), ctx, next: None, stop: 0, step: 1, started: false }
    }

    fn start(&mut self) -> Result<()> {
        let unit = RecordBatch::try_new_with_options(
            std::sync::Arc::new(arrow::datatypes::Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )?;
        let mut v = Vec::new();
        for e in &self.args {
            let a = cast_array(&e.eval(&unit, &self.ctx)?, e.ty(), crate::types::SqlType::Int8)?;
            v.push(match crate::types::value_at(a.as_ref(), 0) {
                crate::types::Value::Int(i) => Some(i),
                _ => None,
            });
        }
        self.step = v.get(2).copied().flatten().unwrap_or(1);
        if self.step == 0 {
            crate::bail!(InvalidParameterValue, "step size cannot equal zero");
        }
        if let (Some(Some(a)), Some(Some(b))) = (v.first(), v.get(1)) {
            self.next = Some(*a);
            self.stop = *b;
        }
        Ok(())
    }
}

impl BatchExecutor for SeriesExecutor {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self, max_rows: usize) -> Result<BatchResult> {
        if !self.started {
            self.started = true;
            self.start()?;
        }
        let mut out = Vec::new();
        while let Some(v) = self.next {
            if (self.step > 0 && v > self.stop) || (self.step < 0 && v < self.stop) {
                self.next = None;
                break;
            }
            out.push(v);
            self.next = v.checked_add(self.step);
            if out.len() >= max_rows {
                break;
            }
        }
        let done = self.next.is_none_or(|v| (self.step > 0 && v > self.stop) || (self.step < 0 && v < self.stop));
        let arr: ArrayRef = std::sync::Arc::new(arrow::array::Int64Array::from(out));
        let batch = RecordBatch::try_new(self.schema.clone(), vec![arr])?;
        Ok(BatchResult { batch, logical_rows: None, is_drained: done })
    }
}

#[cfg(test)]
#[path = "values_tests.rs"]
mod tests;
